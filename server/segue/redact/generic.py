"""Rules that judge a token by its shape, not by a vendor's table (issue 12): a short prefix and a random body
(``acme_live_8fK2…``), a long random run with no prefix, and base64 runs that decode to key material or to
anything the other rules match. One scan finds runs of 16+ alphanumerics (sre skips through text without
them quickly); each is widened to the token around it and judged in Python.

Judging a body "random": 16+ characters, digits with letters or both cases, Shannon entropy over a limit,
and not words (CamelCase or snake_case made of long alphabetic pieces), not a UUID, not a placeholder.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import itertools
import operator
import re
from collections.abc import Callable, Iterator

from segue import recache
from segue.redact.checks import _MADE_UP_RE, _X_RUN_RE, shannon
from segue.redact.common import FAST_PATHS
from segue.redact.lazy import LazyPattern

Span = tuple[int, int, str]

# 16 token characters: base64url bodies (dckr_pat_…, sq0atp-…) often hold no 16 alphanumerics in a row
_RUN16 = LazyPattern(r"[A-Za-z0-9_-]{16}")
_DIGIT_RE = recache.compile(r"\d")
_ALNUM16_RE = recache.compile(r"[A-Za-z0-9]{16}")
# a token with no 16 alphanumerics in a row is judged only if a digit follows an upper-case letter closely (random
# base64url bodies almost always have one; branch names, pod names and kebab-case words do not); SHAPE_GATE is what
# any judged token holds (one more branch costs every call ~0.2 µs, so only this order)
_UPPER_DIGIT = r"[A-Z][A-Za-z0-9_-]{0,15}[0-9]"
_UPPER_DIGIT_RE = recache.compile(_UPPER_DIGIT)
SHAPE_GATE = r"[A-Za-z0-9]{16}|" + _UPPER_DIGIT
# "=" ends a token (key=value) except as base64 padding, which is taken after the run
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.~+/-")
_MAX_TOKEN = 2000
_UUID_RE = LazyPattern(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
_HEX_RE = LazyPattern(r"[0-9a-f]+|[0-9A-F]+")
_PIECES_RE = LazyPattern(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|[0-9]+")
_PREFIX_PART_RE = LazyPattern(r"[A-Za-z][A-Za-z0-9]{0,15}")
_SUB_PART_RE = LazyPattern(r"[A-Za-z0-9]{1,12}")
# prefixes of ids, digests and names that are random but not secret (API object ids, hashes, build ids)
_ID_PREFIXES = frozenset({
    "msg", "toolu", "req", "request", "call", "chatcmpl", "run", "thread", "asst", "batch", "evt", "event", "cus",
    "sub", "file", "ftjob", "vs", "org", "user", "id", "uuid", "sha", "sha1", "sha224", "sha256", "sha384",
    "sha512", "md5", "blake2b", "etag", "commit", "build", "trace", "span", "session", "conv", "resp", "item",
    "step", "job", "task", "node", "pod", "img", "image", "ch", "pi", "pm", "price", "prod", "inv", "in", "txn",
    "acct", "ord", "att", "doc", "chunk", "sess", "ctx", "op", "obj", "res", "ref", "rev", "snap",
    "ses", "prt", "per", "pty", "wrk", "tok", "seti", "src", "card", "ba", "py", "po", "tr", "si", "cs", "pk",
    "ii", "il", "test", "tests", "example", "sample", "dummy", "fake", "foo", "bar", "baz", "qux", "xxx", "abc",
})
_DIGEST_BEFORE_RE = LazyPattern(r"(?i)(?:sha\d{0,3}|md5|integrity|digest|hash|checksum|etag|crc\d*|nonce|salt)"
                               r"[\"']?\s{0,3}[:=,(]?\s{0,3}[\"']?\Z")


_SUCCESSOR = bytes(range(1, 256)) + b"\0"


def _alphabet(body: str) -> bool:
    """"abcdef…", "0123456789…": a character set written out, not a random draw."""
    if body.isascii() and len(body) > 1:  # the same count without a Python step per character
        raw = body.encode("ascii")
        # a zero byte where the next character is this one's successor (ASCII: 127's successor is no character)
        diff = int.from_bytes(raw[1:], "big") ^ int.from_bytes(raw[:-1].translate(_SUCCESSOR), "big")
        steps = diff.to_bytes(len(raw) - 1, "big").count(0)
    else:
        steps = sum(ord(b) - ord(a) == 1 for a, b in itertools.pairwise(body))
    return steps >= len(body) // 2


def random_body(body: str, min_len: int = 16) -> bool:
    """Does ``body`` look like the random part of a credential?"""
    body = body.rstrip("=")
    if len(body) < min_len or _alphabet(body) or _X_RUN_RE.search(body) or _MADE_UP_RE.search(body):
        return False  # (_MADE_UP_RE holds "example")
    if _UUID_RE.fullmatch(body):
        return False
    digit, upper, lower = _kinds(body)
    if not ((digit and (upper or lower)) or (upper and lower)):
        return False
    alnum = _alnum_only(body)
    if _HEX_RE.fullmatch(alnum):
        return len(alnum) >= 24 and shannon(alnum) >= 3.0  # shorter hex: instance, commit and object ids
    if shannon(body) < (3.3 if len(body) < 24 else 3.6):
        return False
    return not _wordy(body)


def _kinds(body: str) -> tuple[bool, bool, bool]:
    """Does ``body`` hold a digit, an upper-case, a lower-case character? (tested once per distinct character)"""
    chars = set(body)
    return any(c.isdigit() for c in chars), any(c.isupper() for c in chars), any(c.islower() for c in chars)


def _alnum_only(body: str) -> str:
    """``body`` without its characters that are not alphanumeric."""
    drop = [c for c in set(body) if not c.isalnum()]
    return body.translate(dict.fromkeys(map(ord, drop))) if drop else body


_CONSONANTS_RE = LazyPattern(r"[b-df-hj-np-tv-xz]{5,}", re.I)


def _wordy(body: str) -> bool:
    """CamelCase or snake_case words, version strings, host names: long alphabetic pieces that read like
    words (random lower-case runs have long consonant clusters, words rarely do)."""
    pieces = _PIECES_RE.findall(body)
    if not pieces:
        return True
    alpha = [p for p in pieces if not p.isdigit()]
    if not alpha:
        return False
    mean = sum(map(len, alpha)) / len(alpha)
    if mean < 3.6 and len(pieces) > 3:
        return False
    if len(pieces) - len(alpha) >= 3 and len(pieces) >= 7:
        return False  # letters broken by digits again and again: T5O7BYYJW40E7…, hcgm0ylc4azv5kb…
    return len(_CONSONANTS_RE.findall(body)) < 2


# prefix words that say the token is a credential: after one of them a shorter random body (12+) or a UUID
# body counts (rzp_live_…, access-production-<uuid>, api-<uuid>); ids carry none of these words
_SECRET_PREFIX_WORDS = frozenset({
    "live", "prod", "production", "sandbox", "sbox", "secret", "sk", "rk", "pat", "api", "apikey", "key", "token",
    "tkn", "auth", "access", "private", "priv", "pw", "pwd", "pass", "cred", "uat", "oat", "bot",
})


def _named_secret_prefix(parts: list[str]) -> bool:
    return any(p.lower() in _SECRET_PREFIX_WORDS for p in parts)


_SEP_RE = LazyPattern(r"[_.-]")


def _prefixed(seg: str) -> bool:
    """prefix[_.-]sub[_.-]sub[_.-]body with a short alphanumeric prefix, up to two sub-prefixes."""
    seps = [m.start() for m in itertools.islice(_SEP_RE.finditer(seg), 3)]  # the first three, not all
    for k, cut in enumerate(seps):
        parts = re.split(r"[_.-]", seg[:cut])
        if len(parts) != k + 1 or not _PREFIX_PART_RE.fullmatch(parts[0]):
            return False
        if parts[0].lower() in _ID_PREFIXES:
            return False
        if any(not _SUB_PART_RE.fullmatch(p) for p in parts[1:]):
            return False
        if parts[0].lower() == "pk" and k and parts[1].lower() in ("live", "test"):
            return False  # Stripe's publishable keys are public
        body = seg[cut + 1 :]
        if random_body(body):
            return True
        if _named_secret_prefix(parts) and (random_body(body, 12) or _UUID_RE.fullmatch(body)):
            return True
        if k and parts[-1].lower() == "test" and random_body(body, 12):
            return True  # vendor_test_<short random>: a test-mode key (rzp_test_…), as its live twin
    return False


# an upper-case prefix glued to a hex body (EZAK3f…, ATTA9c…): the prefix lowers the run's entropy below
# _bare's limit, so the body is judged as the hex run it is
_GLUED_HEX_RE = LazyPattern(r"([A-Z][A-Za-z]{1,7})([0-9a-f]{32,}|[0-9A-F]{32,})")


def _glued_hex(seg: str) -> bool:
    m = _GLUED_HEX_RE.fullmatch(seg)
    if m is None or m.group(1).lower() in _ID_PREFIXES or m.group(1).lower().startswith(("sha", "md")):
        return False
    body = m.group(2)
    return any(c.isdigit() for c in body) and any(c.isalpha() for c in body) and shannon(body) >= 3.3


# lower-case bech32 (hrp "1" data): addresses and public keys (age1…, bc1…, npub1…); secret ones name it (nsec1…)
_BECH32_PUBLIC_RE = recache.compile(
    r"(?!nsec|[a-z]{0,16}(?:sec|priv))[a-z]{1,16}1[qpzry9x8gf2tvdw0s3jn54khce6mua7l]{38,}")


def _bare(seg: str) -> bool:
    """A long random run with no prefix: alphanumerics only (base64 and paths have + / =), not all hex."""
    if re.split(r"[_.-]", seg, maxsplit=1)[0].lower() in _ID_PREFIXES or _BECH32_PUBLIC_RE.fullmatch(seg):
        return False
    core = seg.replace("-", "").replace("_", "")
    if not 32 <= len(seg) <= 200 or not core.isalnum() or _HEX_RE.fullmatch(core):
        return False
    if _glued_hex(seg):
        return True
    # 32 random alphanumerics average ~4.5 bits a character (and often fall below 4.3); longer runs more
    return random_body(seg, 32) and shannon(seg) >= (4.0 if len(seg) < 40 else 4.3) and not _decodes_to_text(seg)


def _decodes_to_text(run: str) -> bool:
    raw = _b64decode(run)
    if raw is None or len(raw) < 12:
        return False
    printable = sum(32 <= b < 127 or b in (9, 10, 13) for b in raw)
    return printable >= 0.95 * len(raw)


def _b64decode(run: str) -> bytes | None:
    s = run.rstrip("=")
    if len(s) % 4 == 1:
        return None
    s += "=" * (-len(s) % 4)
    try:
        if "-" in s or "_" in s:
            return base64.urlsafe_b64decode(s)
        return base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return None


_JWK_PRIVATE_RE = LazyPattern(r'"(?:d|p|q|dp|dq|qi|k)"\s*:\s*"[A-Za-z0-9_-]{16,}')
_PEM_RE = LazyPattern(r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY")
_B64_RUN_RE = LazyPattern(r"[A-Za-z0-9+/_-]{32,}={0,2}")

# the other rules, run on decoded text (set by the index module, which imports this one)
decoded_scan: Callable[[str], bool] | None = None


def _encoded_secret(run: str) -> bool:
    """A base64 run of 32+ characters that decodes to a PEM header, private JWK fields or a secret."""
    raw = _b64decode(run)
    if raw is None:
        return False
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    if _PEM_RE.search(text) or ('"kty"' in text and _JWK_PRIVATE_RE.search(text)):
        return True
    return decoded_scan is not None and decoded_scan(text)


# (signatures too: a detached PGP or SSH signature is public, made to be published beside what it signs)
_PUBLIC_BLOCK_RE = LazyPattern(r"-----BEGIN (?:[A-Z0-9 ]{0,40}PUBLIC KEY(?: BLOCK)?|CERTIFICATE(?: REQUEST)?"
                              r"|(?:PGP |SSH )?SIGNATURE)-----"
                              r"[\s\S]{0,65536}?(?:-----END [A-Z0-9 ]{0,60}-----|\Z)")
_PUBLIC_NAME_RE = LazyPattern(r"(?i)(?:public|publishable)[_-]?(?:key|token)?[\"']?\s{0,3}[:=]{1,2}\s{0,3}[\"']?\Z|"
                             r"public[A-Z]?\w{0,20}[\"']?\s{0,3}[:=]{1,2}\s{0,3}[\"']?\Z")
_SSH_PUBLIC_BEFORE_RE = LazyPattern(r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d{3}"
                                   r"|sk-(?:ssh|ecdsa)-[\w@.-]{1,40})(?:-cert-v01@openssh\.com)?[ \t]{1,4}\Z")
# a long random path segment is a secret where the URL is a hook or an API, not a document or image id
_SECRET_PATH_RE = LazyPattern(r"(?i)hook|token|key|secret|bot|/api|services|trigger")


# the 16-token-character scan: sre tries the charset-first _RUN16 at every position (~15 ns a character, the
# most of what clean text costs here); the same matches come from the text mapped to a two-letter alphabet
# (_RUN16's characters, ASCII alphanumerics, "_" and "-", to "a", the rest to " ") and bytes.find
_ALNUM_TO_A = bytes(0x61 if (chr(i).isascii() and chr(i).isalnum()) or chr(i) in "_-" else 0x20 for i in range(256))
_A16 = b"a" * 16
FAST_RUNS = True  # False: _RUN16.finditer itself (the reference; tests/test_redact_equivalence.py compares)


def _run16_starts(text: str) -> Iterator[int]:
    """The starts of _RUN16.finditer(text)'s matches, in order: in each maximal run of its characters that
    holds 16, its start and every 16 characters after it while 16 remain."""
    if not FAST_RUNS:
        yield from (m.start() for m in _RUN16.finditer(text))
        return
    mapped = text.encode("ascii", "replace").translate(_ALNUM_TO_A)  # one byte per character, offsets kept
    p = mapped.find(_A16)
    while p >= 0:
        end = mapped.find(b" ", p + 16)
        end = len(mapped) if end < 0 else end
        yield from range(p, end - 15, 16)
        p = mapped.find(_A16, end)


# SHAPE_GATE searched without sre: its first branch is 16 alphanumerics in a row (bytes.find on the text mapped to
# "a" and " "), its second an upper-case letter, up to 15 of [A-Za-z0-9_-], a digit: searched in the text mapped
# to classes (U, l, D, "_", " "), where the literal "U" first lets sre skip to the few upper-case letters. The
# charset-first gate is tried at every alphanumeric (~30 ns a character, more than the rest of a clean short text)
_ALNUM_ONLY = bytes(0x61 if chr(i).isascii() and chr(i).isalnum() else 0x20 for i in range(256))
_CLASSES = bytes(0x55 if 65 <= i <= 90 else 0x6C if 97 <= i <= 122 else 0x44 if 48 <= i <= 57
                 else 0x5F if i in (0x2D, 0x5F) else 0x20 for i in range(256))
_UPPER_DIGIT_CLASSES: list[re.Pattern[bytes]] = []  # rb"U[UlD_]{0,15}D", compiled on first use


def shape_gate_open(text: str) -> bool:
    """As ``re.search(SHAPE_GATE, text) is not None`` (tests/test_redact_fastpaths.py)."""
    raw = text.encode("ascii", "replace")  # one byte per character (non-ASCII is "?", in no class of the gate)
    if raw.translate(_ALNUM_ONLY).find(_A16) >= 0:
        return True
    rx = _UPPER_DIGIT_CLASSES[0] if _UPPER_DIGIT_CLASSES else _upper_digit_classes()
    return rx.search(raw.translate(_CLASSES)) is not None


def _upper_digit_classes() -> re.Pattern[bytes]:
    _UPPER_DIGIT_CLASSES.append(re.compile(rb"U[UlD_]{0,15}D"))
    return _UPPER_DIGIT_CLASSES[0]


def shaped_tokens(text: str) -> list[Span]:
    """Spans of prefixed random tokens, bare random runs and base64-encoded secrets in ``text``."""
    out: list[Span] = []
    covered = 0
    public = ([m.span() for m in _PUBLIC_BLOCK_RE.finditer(text)]
              if "-----BEGIN " in text and ("PUBLIC" in text or "CERTIFICATE" in text or "SIGNATURE" in text) else [])
    n = len(text)
    for start in _run16_starts(text):
        if start < covered:
            continue
        a = start
        lo = max(0, a - _MAX_TOKEN)
        while a > lo and text[a - 1] in _TOKEN_CHARS:
            a -= 1
        b = start + 16
        hi = min(n, b + _MAX_TOKEN)
        while b < hi and text[b] in _TOKEN_CHARS:
            b += 1
        for _ in range(2):  # base64 padding
            if b < n and text[b] == "=":
                b += 1
        covered = b
        tok = text[a:b]
        if (tok.islower() or tok.isupper()) and _DIGIT_RE.search(tok) is None:
            continue  # snake_case and CONSTANT names: a random body has digits or both cases
        if _ALNUM16_RE.search(tok) is None and (tok.islower() or tok.isupper() or _UPPER_DIGIT_RE.search(tok) is None):
            continue  # pieces of 15 or fewer joined by - or _: UUIDs, pod names, NAME_H1 constants, unless base64url
        url = text.startswith("//", a) and text[a - 1 : a] == ":"
        while a < b and text[a] in "_.~+/-":
            a += 1
        if public and _inside(public, a):
            continue
        if text.startswith("AAAA", a) and _SSH_PUBLIC_BEFORE_RE.search(text, max(0, a - 60), a):
            continue  # an OpenSSH public key (ssh-ed25519 AAAAC3…)
        if _PUBLIC_NAME_RE.search(text, max(0, a - 40), a):
            continue
        span = _judge(text, a, b, url)
        if span is not None and not (_NODE_ID_RE.fullmatch(text, a, b) or _named_id(text, a)):
            out.append(span)
    return out


# GitHub's GraphQL node ids (PR_kwDOA5…, U_kgDOB…): a type prefix and base64 of msgpack, public
_NODE_ID_RE = LazyPattern(r"[A-Z]{1,5}_k[wg][A-Z][A-Za-z0-9_-]{4,200}")
# (quotes JSON-escaped too: a tool's result is often JSON inside a JSON string; or the token is an item of a list)
_KEY_BEFORE_RE = LazyPattern(r"(?P<k>[A-Za-z_][\w.-]{0,60})\\?[\"']?[ \t]{0,3}[:=][ \t]{0,3}"
                             r"(?:\[(?:[ \t]{0,3}\\?\"[\w.:-]{1,100}\\?\"[ \t]{0,3},)*[ \t]{0,3})?\\?[\"']?\Z")


def _named_id(text: str, a: int) -> bool:
    """The token is the value of a key naming an id, digest or cursor ("node_id": …, cache_key=…)."""
    from segue.redact.checks import id_key  # checks imports nothing from here

    j = a
    while j > 0 and a - j < 4 and text[j - 1] in "\"'\\ \t":
        j -= 1
    if j == 0 or text[j - 1] not in ":=[,":
        return False  # no key or list right before: the search below is the costly part
    if text[j - 1] in ":=":  # key: value, key=value: the key read backwards, no search
        k = j - 1
        while k > 0 and j - 1 - k < 4 and text[k - 1] in "\"'\\ \t":
            k -= 1
        end = k
        while k > 0 and end - k < 61 and (text[k - 1].isalnum() or text[k - 1] in "_.-"):
            k -= 1
        return end > k and id_key(text[k:end])
    m = _KEY_BEFORE_RE.search(text, max(0, a - 300), a)
    return m is not None and id_key(m.group("k"))


def _inside(blocks: list[tuple[int, int]], a: int) -> bool:
    """Is ``a`` inside one of ``blocks`` (finditer's spans: sorted, none overlapping)? As
    ``any(pa <= a < pb for pa, pb in blocks)``, without walking all of them for every token."""
    i = bisect.bisect_right(blocks, a, key=_FIRST) - 1
    return i >= 0 and a < blocks[i][1]


_FIRST = operator.itemgetter(0)


def _path_secret(seg: str, run: str) -> bool:
    """A random path segment of 20-31 characters in a hook or API URL (longer ones are _bare's)."""
    return (len(seg) < 32 and seg.isalnum() and _SECRET_PATH_RE.search(run) is not None and random_body(seg, 20)
            and shannon(seg) >= 3.9 and not _HEX_RE.fullmatch(seg))


# a file's name: a segment that ends in a common extension (report-<hash>.pdf, main.<hash>.js, a Segue brief's
# <runtime>-<id>-<time>Z.md, which the agent told to read it must see); key files (.pem, .key) are not here
_FILE_NAME_RE = LazyPattern(
    r"(?i)[^/]+\.(?:md|markdown|txt|rst|json|jsonl|ndjson|ya?ml|toml|ini|cfg|conf|log|csv|tsv|html?|xml|svg|css|"
    r"scss|less|[cm]?js|jsx|tsx?|map|py|pyc|rb|go|rs|java|kt|swift|php|c|h|cc|cpp|hpp|cs|sh|bash|zsh|ps1|sql|"
    r"db|sqlite|png|jpe?g|gif|webp|ico|pdf|docx?|xlsx?|pptx?|zip|gz|tgz|tar|bz2|xz|zst|whl|jar|wasm|lock|bin)")


# a cache's key in a CI log ("Cache restored from key: Linux-npm-<hash of the lock file>"): a digest, not a secret
_CACHE_KEY_BEFORE_RE = LazyPattern(r"(?i)cache\b[^\n]{0,40}?\bkeys?[\"']?[ \t]{0,3}[:=]?[ \t]{0,3}[\"']?\Z")
# a Kubernetes pod of a ReplicaSet: <name>-<pod-template-hash>-<5>, both drawn from the API server's alphabet
# (written without vowels, and often as any lower-case alphanumerics)
_POD_NAME_RE = LazyPattern(r"[a-z][a-z0-9-]{0,200}-[a-z0-9]{6,10}-[a-z0-9]{5}")
# GitHub Actions' cache keys by convention: the runner's OS, words, a digest of the lock files
# (Linux-pip-<sha256>, node-cache-Linux-x64-npm-<sha256>, v2-deps-Windows-<sha1>)
_OS_CACHE_KEY_RE = LazyPattern(r"(?:[A-Za-z0-9_.]+-)*(?:Linux|Windows|macOS|Darwin|ubuntu[\w.]*)(?:-[A-Za-z0-9_.]+)*?"
                               r"-[0-9a-f]{32,128}")
# and any words-then-digest key where a cache is spoken of before it (key: deps-<sha256> under actions/cache)
_DIGEST_KEY_RE = LazyPattern(r"(?:[A-Za-z0-9_.]+-)+[0-9a-f]{32,128}")
_CACHE_NEAR_RE = LazyPattern(r"(?i)cache|hashfiles|restore-keys")


_FS_HEAD_RE = LazyPattern(r"(?:[a-z][a-z0-9_-]{1,30}|\.[\w-]{1,30}|[A-Z][a-z]{2,20})/")


def _judge(text: str, a: int, b: int, url: bool) -> Span | None:
    while b > a and text[b - 1] in ".-_~":  # end of a sentence, not of the token
        b -= 1
    run = text[a:b]
    if _DIGEST_BEFORE_RE.search(text, max(0, a - 24), a) or _CACHE_KEY_BEFORE_RE.search(text, max(0, a - 60), a):
        return None
    if _POD_NAME_RE.fullmatch(run) or _OS_CACHE_KEY_RE.fullmatch(run):
        return None
    if _DIGEST_KEY_RE.fullmatch(run) and _CACHE_NEAR_RE.search(text, max(0, a - 400), a):
        return None
    if len(run) >= 32 and "." not in run and _B64_RUN_RE.fullmatch(run) and _encoded_secret(run):
        return a, b, "encoded-secret"
    # path segments and base64 runs: judge each piece between slashes; a random piece of a base64 run
    # (it has + or = and no dot) takes the rest of the run with it. In an absolute file path (/tmp/…, ~/…: a plain
    # directory name first) a prefixed random piece is a temporary or build directory (mktemp's secret-XXXX,
    # pip-build-env-…, upload_…), not a token
    fs_path = not url and text[a - 1 : a] == "/" and _FS_HEAD_RE.match(run) is not None
    pos = a
    for seg in run.split("/"):
        end = pos + len(seg)
        if "." in seg and _FILE_NAME_RE.fullmatch(seg):
            pos = end + 1
            continue
        bare_ok = seg == run or (url and _SECRET_PATH_RE.search(run) is not None)
        bare_ok = bare_ok and text[max(0, a - 7) : a] != "base64,"
        path_ok = url and seg != run and _path_secret(seg, run)
        if len(seg) >= 18 and ((not fs_path and _prefixed(seg)) or (bare_ok and _bare(seg)) or path_ok):
            if "/" in run and "." not in run and ("+" in run or run.endswith("=")):
                return pos, b, "prefixed-token"
            return pos, end, "prefixed-token"
        pos = end + 1
    return None


# quoted high-entropy literals assigned to any key (issue 12, item 5): only inside an assignment or a
# JSON/YAML pair, never in free text; ids, hashes, digests, paths, names and versions are left alone
# one scan per quote character (literal first: sre skips to it; a [\"'`] class first costs several times more)
_QUOTED_RES = tuple(LazyPattern(q + r"(?P<s>[A-Za-z0-9+/=_.~-]{16,400})" + q) for q in "\"'`")
_ASSIGN_BEFORE_RE = LazyPattern(
    r"(?:^|[\s{,(\[;])(?:(?:const|let|var|final|static|private|public|readonly|export)\s+)?[\"']?"
    r"(?P<k>[A-Za-z_$@][\w.$-]{0,60})[\"']?\]?(?:\s{0,4}:\s{0,4}[A-Za-z_][\w.\[\]]{0,30})?"
    r"[ \t]{0,16}(?P<op>:=|=>|:|=)[ \t]{0,16}(?:[bBrRuU]{1,2}|@)?\Z")
_LITERAL_NOT_SECRET = frozenset({
    "hash", "hashes", "sha", "sha1", "sha256", "sha384", "sha512", "md5", "digest", "checksum", "integrity",
    "etag", "commit", "rev", "revision", "tag", "image", "guid", "uuid", "oid", "sum", "fingerprint",
    "kid", "alg", "algorithm", "charset", "alphabet", "chars", "characters", "encoding", "locale", "font",
    "color", "colour", "style", "class", "selector", "mime", "content", "host", "hostname", "domain",
    "email", "user", "username", "owner", "author", "repo", "repository", "branch", "module", "package",
    "sku", "slug", "code", "lang", "language", "model", "region", "zone", "bucket", "table", "database", "db",
    "public", "publickey", "pubkey", "cert", "certificate", "nonce", "salt", "iv", "seed_hash",
})


def quoted_literals(text: str) -> list[Span]:
    """Spans of quoted random literals that are the value of an assignment or a key in JSON/YAML."""
    from segue.redact.checks import _NOT_SECRET_LAST, id_key, key_words  # checks imports nothing from here

    out: list[Span] = []
    matches = [m for rx in _QUOTED_RES if rx.pattern[0] in text for m in rx.finditer(text)]
    for m in sorted(matches, key=lambda m: m.start()):
        a, b = m.span("s")
        value = m.group("s")
        before = _ASSIGN_BEFORE_RE.search(text, max(0, m.start() - 100), m.start())
        if before is None:
            continue
        op_at = before.start("op")
        if before.group("op") == "=" and op_at > 0 and text[op_at - 1] in "=!<>":
            continue  # a comparison
        words = key_words(before.group("k"))
        if not words or words[-1] in _NOT_SECRET_LAST or words[-1] in _LITERAL_NOT_SECRET or id_key(before.group("k")):
            continue
        if any(w in ("public", "publishable", "example", "sample", "test", "dummy", "fake") for w in words):
            continue
        core = value.strip("=")
        if "_" in value and value.split("_", 1)[0].lower() in _ID_PREFIXES:
            continue  # an object's id by its prefix ("customer": "cus_…", "balance_transaction": "txn_…")
        if value.count("/") > 1 or value.startswith(("/", ".", "~")) or _UUID_RE.search(value):
            continue  # a path
        if _HEX_RE.fullmatch(core) or re.fullmatch(r"[\d.]+|v?\d+(?:\.\d+)+[\w.+-]*", value):
            continue  # a hash or digest, a version
        if not random_body(core, 16) or shannon(core) < 3.7 or _decodes_to_text(core):
            continue
        out.append((a, b, "quoted-literal"))
    return out


# tokens the 16-alphanumeric scan cannot see: a body of 12-15 characters after a prefix that names a
# credential (rzp_live_…), or a UUID body after one (access-production-<uuid>, api-<uuid>)
_TOKEN_STR = "".join(sorted(_TOKEN_CHARS - {"+", "/", "~"}))
_SHORT_BODY_RE = LazyPattern(r"[A-Za-z0-9]{12,15}(?![A-Za-z0-9_.~+/=-])")
SHORT_MARKS = ("live_", "live-", "prod_", "prod-", "sbox_", "sandbox_", "secret_", "secret-", "sk_", "sk-", "rk_",
               "pat_", "tkn_", "oat_", "_test_", "-test-")
_UUID_TAIL_RE = LazyPattern(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?![A-Za-z0-9_.~+/=-])")
_HEX8 = frozenset("0123456789abcdefABCDEF")


def _token_start(text: str, i: int) -> int:
    """Where the token holding position ``i`` begins (prefix parts joined by _ . -)."""
    lo = max(0, i - 60)
    seg = text[lo:i]
    return i - (len(seg) - len(seg.rstrip(_TOKEN_STR)))


def short_prefixed(text: str) -> list[Span]:
    low = text.lower()
    out: list[Span] = []
    for mark in SHORT_MARKS:
        i = low.find(mark)
        while i >= 0:
            m = _SHORT_BODY_RE.match(text, i + len(mark))
            if m is not None:
                a = _token_start(text, i)
                while a < i and text[a] in "_.-":
                    a += 1
                if _prefixed(text[a : m.end()]):
                    out.append((a, m.end(), "prefixed-token"))
            i = low.find(mark, i + 1)
    return sorted(set(out))


def prefixed_uuids(text: str) -> list[Span]:
    out: list[Span] = []
    for m in _UUID_TAIL_RE.finditer(text):
        u = m.start() - 8
        if u < 2 or not all(c in _HEX8 for c in text[u : m.start()]) or text[u - 1] not in "_.-":
            continue
        a = _token_start(text, u)
        while a < u and text[a] in "_.-":
            a += 1
        if a < u - 1 and _prefixed(text[a : m.end()]):
            out.append((a, m.end(), "prefixed-token"))
    return out


# the secret's name is found with str.find (a literal scan), then what comes before it is checked
_AS_PW_WORDS = ("passw", "passphrase", "pw", "secret", "token", "api")
_AS_BEFORE_RE = LazyPattern(r"[ \t](?:as|is|for)[ \t]{1,16}(?:(?:the|my|your|our)[ \t]{1,16})?\Z")
_AS_WORD_RE = LazyPattern(r"(?:password|passwd|passphrase|pw|pwd|secret|token|api[ _-]?key)(?![a-z])")
_USE_RE = LazyPattern(r"use", re.I)  # as _VALUE_BEFORE_RE sees it (re.I)
_VALUE_BEFORE_RE = LazyPattern(r"(?:\"(?P<d>[^\"\n]{4,200})\"|'(?P<q>[^'\n]{4,200})'|(?<![\w-])use[ \t]{1,16}"
                              r"(?P<b>[^\s\"'`]{4,200}))[ \t]{1,16}\Z", re.I)


def _finds(low: str, word: str) -> list[int]:
    out, i = [], low.find(word)
    while i >= 0:
        out.append(i)
        i = low.find(word, i + 1)
    return out


def prose_as(text: str) -> list[Span]:
    """'"X" as the password', 'use X as my token': a quoted value, or a bare one after "use", that is not a
    plain word or a name in code."""
    from segue.redact.checks import _CODE_RE, _STOPWORDS, is_placeholder

    out: list[Span] = []
    if FAST_PATHS and '"' not in text and "'" not in text and _USE_RE.search(text) is None:
        return out  # _VALUE_BEFORE_RE finds a value only after a quote or a "use"
    low = text.lower()
    hits = sorted({i for w in _AS_PW_WORDS for i in _finds(low, w)})
    for i in hits:
        if (i and low[i - 1].isalpha()) or not _AS_WORD_RE.match(low, i):
            continue
        before = _AS_BEFORE_RE.search(low, max(0, i - 40), i)
        if before is None:
            continue
        v = _VALUE_BEFORE_RE.search(text, max(0, before.start() - 230), before.start() + 1)
        if v is None:
            continue
        g = "d" if v.group("d") is not None else "q" if v.group("q") is not None else "b"
        value = v.group(g)
        if is_placeholder(value) or value.lower() in _STOPWORDS or _CODE_RE.match(value):
            continue
        if re.fullmatch(r"[A-Za-z]+(?: [A-Za-z]+)*", value) or (g != "b" and " " in value.strip()):
            continue  # words, a sentence in quotes
        out.append((*v.span(g), "password-prose"))
    return out


_K8S_SECRET_RE = LazyPattern(r"(?im)^[ \t]{0,40}kind:[ \t]{0,16}[\"']?secret[\"']?[ \t]*$")
_K8S_DATA_RE = LazyPattern(r"(?m)^(?P<ind>[ \t]{0,40})(?:data|stringData):[ \t]*\n")
_K8S_ITEM_RE = LazyPattern(r"(?P<ind>[ \t]{1,40})[\w.-]{1,253}:[ \t]{1,16}(?P<s>[\"']?[^\s\"'#][^\n\"']{0,8000})")


def k8s_secret_values(text: str) -> list[Span]:
    """Values under data:/stringData: in a manifest of kind Secret (one YAML document)."""
    out: list[Span] = []
    for kind in _K8S_SECRET_RE.finditer(text):
        doc_lo = text.rfind("\n---", 0, kind.start()) + 1
        doc_hi = text.find("\n---", kind.end())
        doc_hi = len(text) if doc_hi < 0 else doc_hi
        for block in _K8S_DATA_RE.finditer(text, doc_lo, doc_hi):
            pos, indent = block.end(), len(block.group("ind"))
            while pos < doc_hi:
                m = _K8S_ITEM_RE.match(text, pos)
                if m is None or len(m.group("ind")) <= indent:
                    break
                v = m.group("s").strip("\"'")
                if v and not v.startswith(("{{", "${", "<")):
                    a = m.start("s") + (1 if m.group("s")[0] in "\"'" else 0)
                    out.append((a, a + len(v.rstrip()), "k8s-secret-data"))
                nl = text.find("\n", m.end())
                pos = doc_hi if nl < 0 else nl + 1
    return out


# a command that prints a secret, then its output: one random token on the next line ($ cat config/master.key,
# $ acme config get token, $ kubectl create token ci, PS> Get-Secret x -AsPlainText)
_OUTPUT_LINE = r"[ \t]{1,4}(?P<cmd>[^\n]{1,300})\r?\n[ \t]{0,8}(?P<s>[^\s]{16,4000})[ \t]*(?=\r?\n|\Z)"
_PROMPT_RES = (("$", recache.compile(r"\$" + _OUTPUT_LINE)),
               ("PS", recache.compile(r"PS(?: [^\n>]{1,200})?>" + _OUTPUT_LINE)))
_ARG_SPLIT_RE = recache.compile(r"[\s/\\=:'\"|<>()]+")
# (and key generators whose output is the key: wg genkey, wg genpsk)
_PRINTS_SECRET_WORDS = frozenset({"key", "apikey", "secret", "secrets", "token", "tokens", "credential", "credentials",
                                  "creds", "pgpass", "netrc", "passphrase", "pat", "genkey", "genpsk", "privatekey"})
# a command that prints a public key or reads from one (wg pubkey < privatekey, cat id_ed25519.pub)
_PUBLIC_CMD_RE = recache.compile(r"(?i)pubkey|\.pub\b|public")


# commands whose output is a freshly drawn secret (docs say: generate the key with openssl rand -hex 32)
_GENERATES_SECRET_RE = recache.compile(r"\bopenssl[ \t]+rand\b|\bpwgen\b|/dev/u?random\b|\bgenerate_key\b"
                                       r"|\bgen\.secret\b|\brails[ \t]+secret\b|\bkey:generate\b")


def _names_secret_arg(cmd: str) -> bool:
    from segue.redact.checks import key_words, pw_word  # checks imports nothing from here

    if _PUBLIC_CMD_RE.search(cmd):
        return False
    if _GENERATES_SECRET_RE.search(cmd):
        return True
    for piece in _ARG_SPLIT_RE.split(cmd):
        words = key_words(piece)
        if words and words[-1] in ("pub", "public", "id", "name", "names", "list", "ls", "type", "length"):
            continue
        if any(w in _PRINTS_SECRET_WORDS or pw_word(w) for w in words):
            return True
    return False


def command_output(text: str) -> list[Span]:
    out: list[Span] = []
    for lit, rx in _PROMPT_RES:
        i = text.find(lit)
        while i >= 0:  # a prompt starts its line: str.find, then one match there (a "$" inside a line costs nothing)
            line_start = text.rfind("\n", 0, i) + 1
            m = None if text[line_start:i].strip(" \t") else rx.match(text, i)
            i = text.find(lit, i + 1)
            if m is None:
                continue
            value = m.group("s")
            core = re.sub(r"[-_.+/=~]", "", value)
            hex_ok = _HEX_RE.fullmatch(core) is not None and len(core) >= 32
            if _UUID_RE.fullmatch(value) or not (random_body(core, 16) or hex_ok):
                continue
            if _names_secret_arg(m.group("cmd")):
                out.append((*m.span("s"), "command-output"))
    return out


_JSON_CMD_RE = LazyPattern(r"[\"'](?:command|cmd)[\"'][ \t]{0,8}:[ \t]{0,8}\"(?P<cmd>(?:[^\"\\\n]|\\.){1,300})\"")
_JSON_OUT_RE = LazyPattern(r"[\"'](?:output|stdout|result|content)[\"'][ \t]{0,8}:[ \t]{0,8}\"[ \t]{0,4}"
                           r"(?P<s>[^\s\"\\]{16,4000})(?:(?:\\r)?\\n)?[ \t]{0,4}\"")


def tool_json_outputs(text: str) -> list[Span]:
    """A tool call's command and its output in one JSON object: the output is one random token and the command
    names a secret or draws one (as command_output judges a prompt's command and the line after it)."""
    out: list[Span] = []
    for c in _JSON_CMD_RE.finditer(text):
        if not _names_secret_arg(c.group("cmd")):
            continue
        lo, hi = max(0, c.start() - 600), min(len(text), c.end() + 600)
        for m in _JSON_OUT_RE.finditer(text, lo, hi):
            between = text[min(m.end(), c.end()) : max(m.start(), c.start())]
            if "{" in between or "}" in between:
                continue  # not the same object
            value = m.group("s")
            core = re.sub(r"[-_.+/=~]", "", value)
            hex_ok = _HEX_RE.fullmatch(core) is not None and len(core) >= 32
            if not _UUID_RE.fullmatch(value) and (random_body(core, 16) or hex_ok):
                out.append((*m.span("s"), "command-output"))
    return out


# a named prefix and a body of short groups joined by dashes (sk-<vendor>-k3d9fqa-v72mxpe-…): no run of 16
# alphanumerics for shaped_tokens to find; the groups together must look random and most hold a digit
_GROUP_WORDS = ("sk", "key", "api", "apikey", "token", "tkn", "secret", "pat", "live", "prod", "access", "auth", "priv")
GROUP_MARKS = tuple(w + "-" for w in _GROUP_WORDS)
_GROUPS_RE = recache.compile(r"(?:[A-Za-z0-9]{1,16}-){0,2}?(?P<body>[A-Za-z0-9]{3,12}(?:-[A-Za-z0-9]{3,12}){2,15})"
                        r"(?![\w.-])")


def grouped_tokens(text: str) -> list[Span]:
    low = text.lower()
    out: list[Span] = []
    for mark in GROUP_MARKS:
        i = low.find(mark)
        while i >= 0:
            if i == 0 or not (text[i - 1].isalnum() or text[i - 1] in "_."):
                m = _GROUPS_RE.match(text, i + len(mark))
                if m is not None:
                    groups = m.group("body").split("-")
                    body = "".join(groups)
                    digits = sum(any(c.isdigit() for c in g) and any(c.isalpha() for c in g) for g in groups)
                    if (digits * 2 >= len(groups) and random_body(body, 16) and shannon(body) >= 3.5
                            and not _UUID_RE.fullmatch(m.group("body"))
                            and not _POD_NAME_RE.fullmatch(text, i, m.end())):
                        out.append((i, m.end(), "prefixed-token"))
            i = low.find(mark, i + 1)
    return sorted(set(out))


# "<value> is my wandb api key", "<value> — that's the token": a value that looks random, then a copula, at most three
# words, then a secret's name. Found from the name (str.find), the words before it read right to left
_NAMED_AFTER_WORDS = ("key", "token", "secret", "pass")
_NAMED_AFTER_NAME_RE = LazyPattern(r"(?:key|token|secret|password|passwd|passphrase)s?(?![\w-])")
_NAMED_AFTER_COPULAS = frozenset({"is", "was", "—", "–", "-", "are", "that's", "thats", "it's"})
_NAMED_AFTER_MARKS = (" is ", " was ", " are ", "—", "–", " - ", "'s ")
_NAMED_AFTER_MARK_RE = LazyPattern("|".join(map(re.escape, _NAMED_AFTER_MARKS)))
_NAMED_AFTER_FILLERS = frozenset({"the", "my", "your", "our", "a", "an", "new", "that's", "is", "it's"})


def value_named_after(text: str) -> list[Span]:
    out: list[Span] = []
    low = text.lower()
    if not any(c in low for c in _NAMED_AFTER_MARKS):
        return out  # no copula anywhere (the loop below would find none near a name)
    for i in sorted(i for w in _NAMED_AFTER_WORDS for i in _finds(low, w)):
        if not i or low[i - 1] not in " \t\n" or not _NAMED_AFTER_NAME_RE.match(low, i):
            continue  # a word of prose, not part of an identifier (secret_key_…)
        lo = max(0, i - 200)
        if (_NAMED_AFTER_MARK_RE.search(low, max(lo, i - 48), i) is None
                or _RUN16.search(text, max(lo, i - 160), i) is None):
            continue  # no copula near, or no run of a token's characters before: the split below is the costly part
        words = text[lo:i].split()
        for j in range(1, min(6, len(words))):  # words[-j] the copula, words[-j-1] the value
            if words[-j].lower() not in _NAMED_AFTER_COPULAS:
                continue
            between = [w.lower() for w in words[len(words) - j + 1 :]]
            if sum(w not in _NAMED_AFTER_FILLERS for w in between) > 3:
                break
            value = words[-j - 1].strip("\"'`.,;:()")
            core = value.rstrip("=")
            hex_ok = _HEX_RE.fullmatch(core) is not None and len(core) >= 32
            if len(value) >= 20 and (random_body(value, 20) or hex_ok):
                at = text.rfind(value, lo, i)
                if at >= 0 and not (at and text[at - 1] in _TOKEN_CHARS):
                    out.append((at, at + len(value), "password-prose"))
            break
    return out


# a secret one level down, under its name: Terraform state and outputs ("db_password": {"sensitive": true, "value": …})
_OBJ_VALUE_RE = LazyPattern(r"[\"']value[\"'][ \t]{0,16}:[ \t]{0,16}(?:\"[^\"\n]{1,4000}\"|'[^'\n]{1,4000}')")
_OBJ_OPEN_RE = LazyPattern(r"[\"'](?P<k>[\w.-]{1,70})[\"'][ \t]{0,16}:[ \t]{0,16}\{[^{}]{0,300}\Z")
_OBJ_PAIR_RE = LazyPattern(r"[\"'](?P<k>[\w.-]{1,70})[\"'][ \t]{0,16}:[ \t]{0,16}\{[^{}]{0,300}?[\"']value[\"']"
                           r"[ \t]{0,16}:[ \t]{0,16}(?P<s>\"[^\"\n]{1,4000}\"|'[^'\n]{1,4000}')")


# the object's own name for its value, before or after it: {"name": "/prod/app/SECRET_KEY_BASE", "type": "SecureString",
# "value": …} (an SSM parameter in Terraform state), {"value": …, "key": "DB_PASSWORD"}
_OBJ_NAME_RE = LazyPattern(r"[\"'](?:name|key|Name|Key)[\"'][ \t]{0,16}:[ \t]{0,16}[\"'](?P<k>[^\"'\n]{1,200})[\"']")
_OBJ_VALUE_AT_RE = LazyPattern(r"[\"']value[\"'][ \t]{0,16}:[ \t]{0,16}(?P<s>\"[^\"\n]{1,4000}\"|'[^'\n]{1,4000}')")


def _named_in_object(text: str, i: int) -> list[Span]:
    from segue.redact.checks import _PW_KEY_WORDS, _SECRET_KEY_WORDS, _names_secret, _secret_ok

    lo = text.rfind("{", max(0, i - 600), i)
    hi = text.find("}", i, i + 4600)
    if lo < 0 or hi < 0 or "}" in text[lo:i] or "{" in text[i:hi]:
        return []  # not inside one flat object
    v = _OBJ_VALUE_AT_RE.match(text, i)
    if v is None:
        return []
    for n in _OBJ_NAME_RE.finditer(text, lo, hi):
        key = n.group("k").rstrip("/").rsplit("/", 1)[-1]  # a parameter's path: its last part names it
        if _names_secret(key, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, True) and _secret_ok(v.group("s"), v, text):
            return [(v.start("s") + 1, v.end("s") - 1, "keyed-object-value")]
    return []


def keyed_object_values(text: str) -> list[Span]:
    from segue.redact.checks import _PW_KEY_WORDS, _SECRET_KEY_WORDS, _names_secret, _secret_ok

    out: list[Span] = []
    for quote in "\"'":
        i = text.find(quote + "value" + quote)
        while i >= 0:
            if _OBJ_VALUE_RE.match(text, i):
                o = _OBJ_OPEN_RE.search(text, max(0, i - 400), i)
                m = _OBJ_PAIR_RE.match(text, o.start()) if o is not None else None
                if (m is not None and m.start("s") > i
                        and _names_secret(m.group("k"), _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, True)
                        and _secret_ok(m.group("s"), m, text)):
                    out.append((m.start("s") + 1, m.end("s") - 1, "keyed-object-value"))
                else:
                    out += _named_in_object(text, i)
            i = text.find(quote + "value" + quote, i + 1)
    return out


# a REPL echoing an expression that names a secret: >>> os.environ["DB_PASSWORD"] then 'value' (Python, IPython's
# In [n]: … Out[n]:), > process.env.DB_PASSWORD then 'value' (node)
_REPL_RE = LazyPattern(r"(?m)^(?:>>>|>|In \[\d{1,5}\]:)[ \t]{1,4}"
                       r"(?P<cmd>[^\n=]{1,300})\r?\n(?:Out\[\d{1,5}\]:[ \t])?[ \t]{0,4}"
                       r"[bB]?(?P<s>'[^'\n]{4,400}'|\"[^\"\n]{4,400}\")[ \t]*$")


def repl_echoes(text: str) -> list[Span]:
    from segue.redact.checks import _STOPWORDS, _context_ok

    out: list[Span] = []
    for m in _REPL_RE.finditer(text):
        core = m.group("s")[1:-1]
        if (" " not in core.strip() and core.lower() not in _STOPWORDS and _names_secret_arg(m.group("cmd"))
                and _context_ok(m.group("s"), m, text)):
            out.append((m.start("s") + 1, m.end("s") - 1, "repl-echo"))
    return out


# a wallet's recovery phrase (BIP-39): 12 to 24 short lower-case words after a word that names it (mnemonic, seed
# phrase, kurtarma ifadesi, 助记词); not Hardhat's and the test vectors' public stand-ins (test test … junk, abandon
# abandon … about: a word or two repeated)
SEED_WORDS = ("mnemonic", "seed", "phrase", "recovery", "bip39", "bip-39", "wallet", "助记词", "ifade", "tohum",
              "kelime", "cümle", "anımsatıcı", "frase", "palabras", "mnémonique")
# (words apart by blanks, a comma or a line break: a phrase copied from a wallet's grid)
_SEED_RUN_RE = LazyPattern(r"(?<![A-Za-z'-])[a-z]{3,8}(?:(?:[ \t]{1,2}|,[ \t]{0,2}|\r?\n[ \t]{0,8})[a-z]{3,8}){11,23}"
                           r"(?![A-Za-z'-])")
# words no BIP-39 list holds (a sentence of short words is not a phrase)
_SEED_NOT_WORDS = frozenset({"the", "and", "for", "with", "are", "was", "not", "but", "from", "your", "its", "has",
                             "had", "his", "her", "who", "been", "were", "which", "when", "what", "their", "than",
                             "into", "should", "would", "could", "does", "using", "words", "phrase", "seed"})


def seed_phrases(text: str) -> list[Span]:
    low = text.lower()
    out: list[Span] = []
    seen = -1
    for i in sorted(i for w in SEED_WORDS for i in _finds(low, w)):
        if i < seen:
            continue
        m = _SEED_RUN_RE.search(text, i, min(len(text), i + 400))
        if m is None or m.start() - i > 160:
            continue
        words = m.group().split()
        if len(set(words)) <= len(words) // 2 or sum(w in _SEED_NOT_WORDS for w in words) > 1:
            continue  # a word repeated (stand-ins), or a sentence
        out.append((m.start(), m.end(), "seed-phrase"))
        seen = m.end()
    return out
