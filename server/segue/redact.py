"""Secret redaction for text quoted from agent transcripts (security.md §1).

Three layers, applied together and merged: (a) exact values this process knows (secret-looking
environment variables, tokens it minted) in plain, base64 and percent-encoded form; (b) vendor
prefixes (tier 1, unconditional); (c) structure and context (tier 2) and generic assignments
that must also pass an entropy test (tier 3). Transcripts leak short human passwords in prose
and on command lines, so tier 2 is anchored on keywords rather than on entropy (§1.5b).

Every rule has lower-case keyword pre-filters, bounded quantifiers and, where it can start
anywhere, a look-behind anchor: Python's ``re`` backtracks, and agent stores hold minified lines
of hundreds of KB. Long texts are scanned in overlapping windows so that a keyword in one
window does not make a rule scan the whole text.

Most of what a brief quotes (thousands of commands, paths, titles) holds no keyword, so the cost
per call matters as much as throughput. One trie regex over the lower-cased text finds which
keywords occur, or that none does and the call returns; a rule then runs only if one of its
keywords occurs and its gate (a cheap regex every match contains) opens; a rule whose regex sre
cannot skip through (no literal first) is tried only where a match can start. sre skips to a
literal first character in about a nanosecond but spends ~50 ns at each candidate of a
charset-first pattern, which is what most of the choices below come from. Pre-filters only skip
work: tests/test_redact_prefilter.py checks them against every rule run by finditer.
"""

from __future__ import annotations

import base64
import bisect
import functools
import logging
import math
import os
import re
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

log = logging.getLogger(__name__)

MARKER_RE = re.compile(r"\[REDACTED:[a-z0-9-]{1,64}\]")
WITHHELD = "[withheld: redaction failed]"
HANDOFF_TOKEN_RE = re.compile(r"(?<![A-Za-z0-9])h_[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")
# the same matches with the literal first: sre then skips straight to each "h_" (~10x faster scans)
_HANDOFF_SCAN_RE = re.compile(r"h_(?<![A-Za-z0-9]h_)[A-Za-z0-9_-]{32}(?![A-Za-z0-9_-])")

_ENV_NAME_RE = re.compile(r"KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL", re.I)
_MIN_EXACT = 8
_WINDOW, _OVERLAP = 8192, 1024  # long texts: windows overlapping by more than any bounded match
_CONTEXT = 8192  # excerpt(): context redacted beyond the cut

# ---------------------------------------------------------------------------------------------
# value filters


def shannon(s: str) -> float:
    """Shannon entropy in bits per character."""
    if not s:
        return 0.0
    n = len(s)
    return -sum(c / n * math.log2(c / n) for c in Counter(s).values())


# Words that stand in for a secret in docs, code and prompts (compared lower-cased, quotes stripped).
_STOPWORDS = frozenset(
    {
        "password", "passwd", "passwort", "pass", "pwd", "pw", "passphrase", "secret", "secrets", "token",
        "tokens", "key", "apikey", "api_key", "example", "examples", "placeholder", "sample", "dummy",
        "redacted", "masked", "hidden", "omitted", "removed", "none", "null", "nil", "undefined", "true", "false",
        "yes", "no", "on", "off", "empty", "blank", "default", "required", "optional", "enabled", "disabled",
        "string", "str", "int", "integer", "bool", "boolean", "bytes", "object", "any", "value", "values", "env",
        "variable", "type", "bearer", "basic", "digest", "test", "testing", "foo", "bar", "baz", "user",
        "username", "login", "admin_password", "your_password", "yourpassword", "mypassword", "my_password",
        "secret_value", "your_token", "your_api_key", "your-api-key", "api-key", "access_token", "client_secret",
        "new_password", "old_password", "confirm_password", "hunter2_example", "todo", "tbd", "fixme", "unknown",
        "sensitive", "provided", "api-token", "apitoken", "sso-key", "negotiate", "ntlm", "hmac", "oauth",
        "bot", "set", "unset", "see", "below", "above", "same", "here", "there", "this", "that",
        "auth"
    }
)
_PLACEHOLDER_RE = re.compile(
    r"""^(?:
        <[^<>\n]{0,80}>                      # <password>, <your token>
      | \$\{[^{}\n]{0,80}\}                  # ${PASSWORD}
      | \$\{\{[^\n]{0,80}\}\}                # ${{ secrets.X }}
      | \{\{[^\n]{0,80}\}\}                  # {{ .Values.x }}
      | \$[A-Za-z_][A-Za-z0-9_]{0,60}        # $PASSWORD
      | \$[A-Z_{(][^\s]{0,200}                # $GITHUB_URL/$X, ${A}:${B}: shell expressions
      | \$\([^\n]{0,200}\)?                  # $(cat file)
      | \$\d                                 # $1
      | %[A-Za-z_][A-Za-z0-9_]{0,60}%        # %PASSWORD%
      | %\([A-Za-z_]\w{0,40}\)s              # %(password)s
      | [*•·.#_-]{3,}                        # ***, ..., ###
      | (.)\1{2,}                            # xxxx, 0000, yyy
      | \[REDACTED:[^\]]{0,64}\]
    )$""",
    re.X,
)
_X_RUN_RE = re.compile(r"[xX]{6,}|[*#•]{4,}|\.\.\.|…")
# words that mark a value as made up, in context rules only (vendor tokens may contain them)
_MADE_UP_RE = re.compile(r"(?i)fake|dummy|placeholder|your[_-]|<your|replace[_-]?me|change[_-]?this")
_CODE_RE = re.compile(
    r"""^(?:[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+[,;)]*       # var.db_password, os.environ
      | (?:self|this|os|process|var|local|locals|config|settings|env|data|args|opts|options|params|props
         |ctx|context|secrets|vars|values|inputs|steps|needs|req|request|cfg|conf)\.[\w.]+[,;)]*
      | [A-Za-z_][A-Za-z0-9_.]*\s*[(\[].*                                 # getenv("X"), env["X"]
      | [a-z]+(?:_[a-z0-9]+)+ | [a-z]+(?:[A-Z][a-z0-9]+)+                # snake_case, camelCase names
    )$""",
    re.X,
)
_EXAMPLE_CONTEXT_RE = re.compile(r"(?i)\b(?:e\.g\.|eg\.|example|for instance|such as|placeholder|default)")


def _unquote(v: str) -> str:
    return v.strip("\"'`<>[](){}")


def is_placeholder(value: str) -> bool:
    """True for values that stand in for a secret rather than being one."""
    v = value.strip()
    if not v or _PLACEHOLDER_RE.match(v):
        return True
    core = _unquote(v)
    if not core or core.lower() in _STOPWORDS or _PLACEHOLDER_RE.match(core):
        return True
    if _X_RUN_RE.search(core) or _MADE_UP_RE.search(core):
        return True
    return not re.search(r"[A-Za-z0-9]", core)


# ---------------------------------------------------------------------------------------------
# rules

Check = Callable[[str, "re.Match[str]", str], bool]  # (value, match, text) -> keep the match?


@dataclass(frozen=True)
class Starts:
    """Where a rule's matches can begin: at an occurrence of one of ``words`` in the lower-cased text,
    or at most ``reach`` characters of ``over`` (None: any) before one. For regexes with no literal to
    skip to (``\\b``, a look-behind or (?i) first) sre tries every position; matching only here, in
    order and never inside the previous match, finds the same matches as finditer. No ``words``: the
    rule's keywords."""

    words: tuple[str, ...] = ()
    over: str | None = ""
    reach: int = 0


_AT_KEYWORD = Starts()


@dataclass(frozen=True)
class Rule:
    id: str
    tier: int
    regex: re.Pattern[str]
    keywords: tuple[str, ...] = ()  # lower-case; the rule runs only if one occurs
    check: Check | None = None
    whole_text: bool = False  # multi-line blocks: scanned over the whole text, not in windows
    # keyed rules: find the keyword first, then match from the start of the identifier holding it;
    # far cheaper than trying the rule at every identifier of a long line
    anchor: re.Pattern[str] | None = None
    # rules that are not one regex (key blocks: BEGIN paired with the next END in linear time)
    finder: Callable[[str], list[tuple[int, int, str]]] | None = None
    # a cheap regex (literal first) that any match must contain: lets a rule whose regex sre cannot
    # skip through be left out of windows that hold a keyword but not the shape; written in lower
    # case with (?i), it is searched in the lower-cased window (case-insensitive sre is slow)
    gate: re.Pattern[str] | None = None
    starts: Starts | None = None


def _tier1_ok(value: str, m: re.Match[str], text: str) -> bool:
    return not _X_RUN_RE.search(value)


def _context_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Tier 2 keyword contexts: any real-looking value, placeholders excepted."""
    if is_placeholder(value):
        return False
    if _unquote(value).lower() == "changeme":
        line = text[text.rfind("\n", 0, m.start()) + 1 : text.find("\n", m.end()) % (len(text) + 1)]
        return not _EXAMPLE_CONTEXT_RE.search(line)
    return True


def _url_ok(value: str, m: re.Match[str], text: str) -> bool:
    """URL user:pass@: even "password" is redacted (over-redaction is cheap); templates are not."""
    return not _PLACEHOLDER_RE.match(value)


_CURL_BEFORE_RE = re.compile(r"\bcurl\b(?:[^\n|;&\\]|\\\n?){0,500}\Z")


def _curl_ok(value: str, m: re.Match[str], text: str) -> bool:
    """-u user:pass counts only on a curl command line (line continuations allowed)."""
    before = text[max(0, m.start() - 500) : m.start()]
    return bool(_CURL_BEFORE_RE.search(before)) and _context_ok(value, m, text)


def _slack_ok(value: str, m: re.Match[str], text: str) -> bool:
    last = value.rsplit("-", 1)[-1]
    return _tier1_ok(value, m, text) and len(last) >= 10 and any(c.isdigit() for c in last)


def _quoted(value: str) -> bool:
    return len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'`"


def _password_ok(value: str, m: re.Match[str], text: str) -> bool:
    """A value after a password keyword: prose and code need more care than a flag."""
    if not _context_ok(value, m, text):
        return False
    core = _unquote(value).rstrip(",;.:")
    sep = m.groupdict().get("sep") or ""
    if len(core) < 4:
        return False
    if _quoted(value):
        return True
    if "==" in sep or "!=" in sep:
        return False  # comparing with a variable, not a literal
    if _CODE_RE.match(core):
        return False
    if core.isalpha():
        # a bare word after only a space is prose ("password must be"); after ':' '=' or "is" it
        # may be a human password ("my password is sunshine")
        return bool(sep.strip()) and core.lower() not in _STOPWORDS
    return True


def _prose_ok(value: str, m: re.Match[str], text: str) -> bool:
    """keyword, space, value: passwords may be bare, other secrets must be quoted (secrete "x";)."""
    key = m.group("k")
    if key.lower() in ("mot de passe", "пароль") or _names_secret(key, _PW_KEY_WORDS, False):
        return _password_ok(value, m, text)
    return _quoted(value) and _names_secret(key, _SECRET_KEY_WORDS, True) and _secret_ok(value, m, text)


def _secret_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Config keys naming a token, key, secret or credential: short values count (§1.5b) but
    letters-only values are names, not secrets (gitleaks generic-api-key does the same)."""
    if not _context_ok(value, m, text):
        return False
    sep = m.groupdict().get("sep") or ""
    if ("==" in sep or "!=" in sep) and not _quoted(value):
        return False
    core = _unquote(value).rstrip(",;:")
    if len(core) < 6 or re.fullmatch(r"[A-Za-z_.\-]+", core) or _CODE_RE.match(core):
        return False
    return not re.fullmatch(r"\d{1,12}", core)  # counts, ports, ids


def _generic_ok(value: str, m: re.Match[str], text: str) -> bool:
    return _secret_ok(value, m, text) and shannon(_unquote(value)) >= 3.5


# Key names are split into words (snake, kebab, dotted, camelCase) and judged by those words, so
# that "apiKey" and "DB_PASSWORD" count while "keyPressed", "otpauth" and "passwordField" do not.
_PW_KEY_WORDS = frozenset({
    "password", "passwd", "passwort", "passphrase", "passcode", "pass", "pwd", "pw", "pword", "contraseña",
    "contrasena", "senha", "wachtwoord"
})
_SECRET_KEY_WORDS = frozenset({
    "secret", "secrets", "secrete", "token", "tokens", "credential", "credentials", "creds", "auth", "apikey"
})
_KEY_QUALIFIERS = frozenset(
    {
        "api", "access", "secret", "private", "auth", "client", "master", "encryption", "signing", "session",
        "account", "app", "service", "admin", "root", "license", "webhook", "shared", "hmac", "jwt", "ssh",
        "deploy", "consumer", "storage", "subscription", "sas", "sig", "signature", "encrypt", "decrypt", "crypt",
        "x"
    }
)
_NOT_SECRET_LAST = frozenset(
    {
        "id", "ids", "name", "names", "length", "len", "size", "min", "max", "count", "type", "types", "field",
        "fields", "file", "files", "path", "dir", "url", "uri", "endpoint", "env", "var", "variable", "hint",
        "prompt", "label", "policy", "format", "mode", "expiry", "expires", "expiration", "ttl", "timeout",
        "header", "prefix", "suffix", "pattern", "regex", "version", "enabled", "required", "strength", "reset",
        "placeholder", "manager", "store", "vault", "input", "box", "source", "class", "validator", "validation",
        "rule", "rules", "match", "confirm", "confirmation", "changed", "visible", "visibility", "toggle", "icon",
        "error", "errors", "message", "text", "description", "help", "title", "event", "handler", "callback",
        "ref", "refs", "schema", "item", "items", "list", "budget", "limit", "limits", "usage", "cost", "costs",
        "counter", "index"
    }
)
_NOT_SECRET_KEYS_RE = re.compile(
    r"(?i)(?:^|[_.\-])(?:access(?:ibility|or)|random[_.-]?access|author|authentication-results|withcredentials"
    r"|jsonwebtoken|keyvaulttostoresecrets|usersecretsid|keying|keyboard|keyword)$"
)
_NOT_SECRET_KEY_PAIRS = frozenset(
    {
        "bucket", "foreign", "hot", "idx", "natural", "primary", "pub", "public", "schema", "sequence",
        "partition", "sort", "cache", "row", "index", "map", "csrf", "xsrf", "next", "page", "continuation",
        "cancellation"
    }
)


def key_words(key: str) -> list[str]:
    """'DB_PASSWORD' -> ['db', 'password']; 'apiKeyValue' -> ['api', 'key', 'value']."""
    parts = re.split(r"[_.\-\s\[\]]+|(?<=[a-z0-9])(?=[A-Z])", key.strip("\"'`$@"))
    return [p.lower() for p in parts if p]


@functools.lru_cache(maxsize=4096)  # the same keys recur on every line of a JSONL store
def _names_secret(key: str, family: frozenset[str], qualified_key: bool, last_key: bool = False) -> bool:
    words = key_words(key)
    if not words or _NOT_SECRET_KEYS_RE.search(key) or words[-1] in _NOT_SECRET_LAST:
        return False
    for i, w in enumerate(words):
        prev = words[i - 1] if i else ""
        if w in family and prev not in _NOT_SECRET_KEY_PAIRS:
            return True
        if qualified_key and w == "key" and prev in _KEY_QUALIFIERS:
            return True
        if last_key and w == "key" and 0 < i == len(words) - 1 and prev not in _NOT_SECRET_KEY_PAIRS:
            return True  # HEROKU_KEY, loki_key; a bare "key" is too common to count
    return False


def _keyed(check: Check, family: frozenset[str], qualified_key: bool, last_key: bool = False) -> Check:
    """Wrap a value check with the key-name test (group "k")."""

    def run(value: str, m: re.Match[str], text: str) -> bool:
        key = m.groupdict().get("k") or ""
        return _names_secret(key, family, qualified_key, last_key) and check(value, m, text)

    return run


# value shapes: quoted (may hold spaces) or a bare run
_QV = r"""(?:"[^"\n]{1,200}"|'[^'\n]{1,200}'|`[^`\n]{1,200}`)"""
_BARE = r"""[^\s'"`]{1,200}"""
_VAL = rf"(?P<s>{_QV}|{_BARE})"
# a key: an identifier of up to ~70 characters; which words make it a secret's name is decided in
# Python (key_words), where it is cheaper and clearer than in a regex
_KW_ANY = r"(?:pass|pwd|pw|secret|token|key|cred|auth|contrase|senha|wachtwoord)"
_KEY = r"(?=[\w.-]{0,70}?" + _KW_ANY + r")[\w.-]{1,70}"
_AKEY = r"[\w.-]{1,70}"  # in anchored rules the keyword was found first
_SP = r"[ \t]{0,16}"  # bounded: two unbounded runs of blanks in a row backtrack quadratically
_SP1 = r"[ \t]{1,16}"
# assignment operators of configs and code; "(" only directly before a quote (secret("x"))
_SEP = _SP + r"(?::=|=>|->|[!=]==?|::?=|\?=|[:=]|\((?=[\"'`]))" + _SP + r"@?"
_TYPE = r"(?:" + _SP1 + r"(?:string|String|str|bytes|const|final|char\*?|\[\]byte))?"
_PW_KEYWORDS = ("pass", "pwd", "pw", "contrase", "senha", "wachtwoord", "mot de passe", "пароль")
_PW_ANCHOR = re.compile(r"(?i)pass|pwd|pw|contrase|senha|wachtwoord|mot de passe|пароль")
_SECRET_ANCHOR = re.compile(r"(?i)secret|token|cred|auth|key|pass|pwd|pw")


def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    return re.compile(pattern, flags)


_I = re.I
_OPEN_KEY = r"-----BEGIN[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----"

RULES: tuple[Rule, ...] = (
    # --- tier 1: vendor prefixes and key blocks -------------------------------------------
    # BEGIN … END, and a BEGIN whose END is cut off (8 KiB after it go); see _key_blocks
    Rule("private-key", 1, _r(_OPEN_KEY), ("private key",), whole_text=True, finder=lambda t: _key_blocks(t)),
    Rule("putty-private-key", 1, _r(r"PuTTY-User-Key-File-\d+:[\s\S]{0,8192}?Private-MAC: ?[0-9a-fA-F]+"),
         ("putty-user-key-file",), whole_text=True),
    Rule("aws-access-key-id", 1, _r(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),
         ("a3t", "akia", "asia", "abia", "acca"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("github-token", 1, _r(r"\b(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,255}\b"),
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("github-fine-grained-pat", 1, _r(r"\bgithub_pat_\w{82}\b"), ("github_pat_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("gitlab-token", 1,
         _r(r"\b(?:glpat|gldt|glft|glsoat|glrt|glptt|glcbt|glimt|glagent|gloas|glffct)-[0-9A-Za-z_.-]{20,300}"),
         ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glptt-", "glcbt-", "glimt-", "glagent-", "gloas-",
          "glffct-"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("gitlab-rrt", 1, _r(r"\bGR1348941[\w-]{20,50}"), ("gr1348941",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("slack-token", 1, _r(r"(?i)\bxox[abposre]-(?:\d+-)+[0-9a-z-]{6,300}"), ("xox",), _slack_ok,
         starts=_AT_KEYWORD),
    Rule("slack-config-token", 1, _r(r"(?i)\bxoxe(?:\.xox[bp])?-\d-[A-Z0-9]{100,400}"), ("xoxe",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("slack-app-token", 1, _r(r"(?i)\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), ("xapp-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("slack-webhook", 1,
         _r(r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}"),
         ("hooks.slack.com",), _tier1_ok),
    Rule("stripe-key", 1, _r(r"\b(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,255}\b"), ("sk_", "rk_"), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("openai-key", 1,
         _r(r"\bsk-(?:(?:proj|svcacct|admin|service)-[A-Za-z0-9_-]{1,300}|[A-Za-z0-9]{1,300})T3BlbkFJ[A-Za-z0-9_-]{1,300}"),
         ("t3blbkfj",), _tier1_ok),
    Rule("anthropic-key", 1, _r(r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{20,300}"), ("sk-ant-",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("openrouter-key", 1, _r(r"\bsk-or-v1-[0-9a-f]{64}\b"), ("sk-or-v1-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("huggingface-token", 1, _r(r"\b(?:hf_|api_org_)[A-Za-z0-9]{34}\b"), ("hf_", "api_org_"), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("gcp-api-key", 1, _r(r"\bAIza[\w-]{35}(?![\w-])"), ("aiza",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("npm-token", 1, _r(r"(?i)\bnpm_[a-z0-9]{36}\b"), ("npm_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("pypi-token", 1, _r(r"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w-]{50,1000}"), ("pypi-age",),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("sendgrid-key", 1, _r(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"), ("sg.",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("supabase-key", 1, _r(r"\b(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{31})\b"), ("sbp_", "sb_secret_"),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("azure-ad-client-secret", 1,
         _r(r"(?:^|[\\'\"`\s>=:(,)])(?P<s>[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'\"`\s<),])", re.M),
         ("q~",), _tier1_ok),
    Rule("twilio-api-key", 1, _r(r"\bSK[0-9a-fA-F]{32}\b"), ("sk",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("aws-bedrock-api-key", 1,
         _r(r"\bABSK[A-Za-z0-9+/]{109,269}={0,2}|\bbedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%-]{0,2000}"),
         ("absk", "bedrock-api-key-"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("xai-api-key", 1, _r(r"\bxai-[A-Za-z0-9_-]{70,120}"), ("xai-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("groq-api-key", 1, _r(r"\bgsk_[A-Za-z0-9]{52}\b"), ("gsk_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("perplexity-api-key", 1, _r(r"\bpplx-[A-Za-z0-9]{48}\b"), ("pplx-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("digitalocean-token", 1, _r(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), ("do_v1_", "dop_v1_", "doo_v1_", "dor_v1_"),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("databricks-api-token", 1, _r(r"\bdapi[a-f0-9]{32}(?:-\d)?\b"), ("dapi",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("shopify-token", 1, _r(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), ("shp",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("hashicorp-tf-api-token", 1, _r(r"(?i)\b[a-z0-9]{14}\.(?-i:atlasv1)\.[a-z0-9_=-]{60,70}"), ("atlasv1",),
         _tier1_ok),
    Rule("vault-token", 1, _r(r"\bhv[sb]\.[\w-]{90,300}"), ("hvs.", "hvb."), _tier1_ok, starts=_AT_KEYWORD),
    Rule("age-secret-key", 1, _r(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"), ("age-secret-key-",),
         starts=_AT_KEYWORD),
    Rule("1password-service-account-token", 1, _r(r"\bops_eyJ[A-Za-z0-9+/]{250,5000}={0,3}"), ("ops_eyj",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("1password-secret-key", 1,
         _r(r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b"),
         ("a3-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("heroku-api-key-v2", 1, _r(r"\bHRKU-AA[0-9A-Za-z_-]{58}"), ("hrku-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("sentry-token", 1, _r(r"\bsntry[us]_[A-Za-z0-9+/=_]{40,2000}"), ("sntry",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("linear-api-key", 1, _r(r"\blin_api_[A-Za-z0-9]{40}\b"), ("lin_api_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("notion-api-token", 1, _r(r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b"), ("ntn_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("grafana-token", 1,
         _r(r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,400}={0,3}|\beyJrIjoi[A-Za-z0-9]{70,400}={0,3}"),
         ("glsa_", "glc_", "eyjrijoi"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("postman-api-token", 1, _r(r"(?i)\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"), ("pmak-",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("segue-handoff-token", 1, _HANDOFF_SCAN_RE, ("h_",)),
    # --- tier 2: structure and context ----------------------------------------------------
    Rule("jwt", 2, _r(r"\bey[A-Za-z0-9]{17,2000}\.ey[A-Za-z0-9/\\_-]{17,8000}\.?(?:[A-Za-z0-9/\\_-]{10,2000}={0,2})?"),
         (".ey",), starts=Starts(("ey",))),
    Rule("url-credentials", 2,
         _r(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://[^\s:/@\"'<>]{0,100}:(?P<s>[^\s@/\"'<>]{1,200})@"), ("://",),
         _url_ok, gate=_r(r"://[^\s:/@\"'<>]{0,100}:[^\s@/\"'<>]{1,200}@"),
         starts=Starts(("://",), "abcdefghijklmnopqrstuvwxyz0123456789+.-", 21)),
    Rule("curl-user", 2,
         _r(r"(?<!\S)(?:-u|--user)[ =]{1,4}['\"]?[^\s:'\"$]{0,100}['\"]?:['\"]?"
            r"(?P<s>(?![\[$'\"<]|\{\{)[^\s'\"]{3,200})"), ("curl",), _curl_ok,
         anchor=re.compile(r"(?<!\S)-(?:u|-user)")),
    Rule("auth-header", 2,
         _r(r"(?i)\b(?:proxy-)?authorization[\"']?" + _SP + r"[:=]" + _SP + r"[\"']?"
            r"(?:(?:bearer|basic|token|bot|digest|api-?token"
            r"|apikey|key|sso-key|negotiate|ntlm|hmac|oauth)" + _SP1 + r")?(?P<s>[A-Za-z0-9._~+/=:@!#$%^&*-]{6,4000})"),
         ("authorization",), _context_ok, starts=Starts(("proxy-authorization", "authorization"))),
    Rule("cookie-header", 2,
         _r(r"(?i)\b(?:set-)?cookie[\"']?" + _SP + r"[:=]" + _SP + r"[\"']?(?P<s>[^\s\"'<>;][^\n\"'<>]{5,4000})"),
         ("cookie",),
         _context_ok, starts=Starts(("set-cookie", "cookie"))),
    Rule("api-key-header", 2,
         _r(r"(?i)\b(?:x-api-key|x-auth-token|x-access-token|api-key|x-goog-api-key|private-token|x-functions-key"
            r"|ocp-apim-subscription-key)[\"']?" + _SP + r"[:=]" + _SP + r"[\"']?(?P<s>[A-Za-z0-9._~+/=-]{8,4000})"),
         ("api-key", "auth-token", "access-token", "private-token", "functions-key", "subscription-key"),
         _context_ok, starts=Starts(("x-api-key", "x-auth-token", "x-access-token", "api-key", "x-goog-api-key",
                                     "private-token", "x-functions-key", "ocp-apim-subscription-key"))),
    Rule("npmrc-auth", 2, _r(r"_auth(?:Token)?" + _SP + r"=" + _SP + r"(?P<s>[^\s'\"]{1,1000})"), ("_auth",),
         _context_ok),
    Rule("azure-storage-key", 2, _r(r"(?i)AccountKey=(?P<s>[A-Za-z0-9+/=]{86,88})"), ("accountkey",),
         starts=_AT_KEYWORD),
    Rule("telegram-bot-token", 2, _r(r"(?<![\w:])[0-9]{5,16}:A[A-Za-z0-9_-]{34}\b"), (":a",),
         starts=Starts((":a",), "0123456789", 16)),
    Rule("discord-bot-token", 2, _r(r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,38}\b"),
         gate=_r(r"(?i)\.[a-z\d_-]{6}\.")),
    Rule("aws-secret-access-key", 2,
         _r(r"(?i:(?:secret|access|key|token)(?:[ \t\w.-]{0,20})[\s'\"]{0,3})(?:=|>|:{1,3}=|\|\||:|=>|\?=|,)"
            r"[`'\"\s=]{0,5}(?P<s>[A-Za-z0-9/+=]{40})(?:\\?['\"`]|[\s;]|\\[nr]|$)", re.M),
         ("secret", "access", "key", "token"), _context_ok, gate=_r(r"(?i)[=>:|,][`'\"\s=]{0,5}[a-z0-9/+=]{40}"),
         starts=Starts(("secret", "access", "key", "token"))),
    Rule("env-assignment", 2,
         _r(r"(?<![A-Za-z0-9_])[A-Z0-9_]{0,50}(?:API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET|TOKEN|PASSW(?:OR)?D|_PWD"
            r"|CREDENTIALS?|AUTH)[A-Z0-9_]{0,50}=(['\"]?)(?P<s>[^\s'\"]{6,1000})\1"),
         ("key", "secret", "token", "passw", "pwd", "credential", "auth"), _context_ok,
         gate=_r(r"(?:KEY|SECRET|TOKEN|PASSW|_PWD|CREDENTIAL|AUTH)[A-Z0-9_]{0,50}=")),
    Rule("url-secret-param", 2,
         _r(r"(?i)[?&](?:access_token|refresh_token|id_token|client_secret|api_?key|token|sig|signature"
            r"|x-amz-signature|x-amz-credential|x-goog-signature|code|password|passwd|pwd|secret|key|auth"
            r"|private_token|sessionid|session)=(?P<s>[^&#\s\"'<>]{6,2000})"),
         check=_context_ok, gate=_r(r"(?i)\?[a-z_-]{3,16}=|&[a-z_-]{3,16}="), starts=Starts(("?", "&"))),
    Rule("otpauth-secret", 2,
         _r(r"(?i)otpauth://[^\s?]{1,300}\?(?:[^\s#]{0,500}?&)?secret=(?P<s>[A-Z2-7=]{6,256})"), ("otpauth",),
         starts=_AT_KEYWORD),
    Rule("netrc-password", 2,
         _r(r"(?i)\bmachine" + _SP1 + r"\S{1,200}\s+login\s+\S{1,200}\s+password" + _SP1 + r"(?P<s>\S{1,200})"),
         ("machine",),
         _context_ok, starts=_AT_KEYWORD),
    Rule("cli-password-flag", 2,
         _r(r"(?i)-(?<![\w-]-)-?(?:password|passwd|pass|pwd|token|api[-_]?key|apikey|secret|auth-token|access-token"
            r"|client-secret|secret-key|access-key)(?:=|" + _SP1 + r")(?P<s>(?!-)" + _QV + "|(?!-)" + _BARE + ")"),
         ("pass", "pwd", "token", "key", "secret"), _context_ok),
    Rule("mysql-password", 2,
         _r(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]{0,300}?[ \t]-p"
            r"(?P<s>" + _QV + r"|[^\s'\"-][^\s'\"]{0,200})"), ("mysql", "mariadb"), _context_ok, starts=_AT_KEYWORD),
    Rule("sshpass-password", 2, _r(r"\bsshpass" + _SP1 + r"-p" + _SP + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("sshpass",),
         _context_ok, starts=_AT_KEYWORD),
    Rule("redis-cli-password", 2,
         _r(r"\bredis-cli\b[^\n|;&]{0,300}?[ \t]-a" + _SP1 + r"(?P<s>" + _QV + "|" + _BARE + ")"), ("redis-cli",),
         _context_ok, starts=_AT_KEYWORD),
    Rule("sql-password", 2,
         _r(r"(?i)\b(?:identified" + _SP1 + r"(?:with" + _SP1 + r"\S{1,60}" + _SP1 + r")?by|password)" + _SP
            + r"(?:=" + _SP + r")?(?:password" + _SP + r")?"
            r"\(?" + _SP + r"(?P<s>'[^'\n]{1,200}'|\"[^\"\n]{1,200}\")"), ("identified", "password"), _context_ok,
         gate=_r(r"(?i)(?:by|password)" + _SP + "(?:=" + _SP + ")?(?:password" + _SP + r")?\(?" + _SP + "['\"]"),
         starts=_AT_KEYWORD),
    Rule("connection-string-password", 2,
         _r(r"(?i)(?:^|[;\s\"'?&])(?:password|pwd)" + _SP + "=" + _SP + "(?P<s>" + _QV + r"|[^;\s\"'&]{1,200})",
            re.M), ("password", "pwd"), _context_ok, gate=_r(r"(?i)p(?:assword|wd)" + _SP + "="),
         starts=Starts(("password", "pwd"), None, 1)),
    Rule("password-assignment", 2,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r")(?:\[\d{0,4}\])?[\"'`]?(?P<sep>" + _SEP + ")" + _VAL),
         _PW_KEYWORDS, _keyed(_password_ok, _PW_KEY_WORDS, False), anchor=_PW_ANCHOR),
    Rule("password-prose", 2,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r"|mot de passe|пароль)(?P<sep>" + _SP1 +
            r"(?:(?:is|was|will be|=|:|->)" + _SP + ":?" + _SP + ")?)(?P<s>(?!-)" + _QV + "|(?![-(<])" + _BARE + ")"),
         (*_PW_KEYWORDS, "secret", "token", "key"), _prose_ok, anchor=_SECRET_ANCHOR),
    Rule("password-compare", 2,
         _r(r"(?P<s>\"[^\"\n]{4,200}\"|'[^'\n]{4,200}')" + _SP + "[!=]==?" + _SP + "(?P<k>" + _KEY + r")\b", _I),
         (*_PW_KEYWORDS, "secret", "key", "token"), _keyed(_context_ok, _PW_KEY_WORDS | _SECRET_KEY_WORDS, True),
         gate=_r("[\"'][ \t]{0,16}[!=]=")),
    Rule("secret-assignment", 2,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r")(?:\[\d{0,4}\])?[\"'`]?" + _TYPE + "(?P<sep>" + _SEP + ")" + _VAL),
         ("secret", "token", "credential", "creds", "auth", "key"), _keyed(_secret_ok, _SECRET_KEY_WORDS, True),
         anchor=_SECRET_ANCHOR),
    Rule("xml-secret-element", 2,
         _r(r"(?i)<(?P<k>" + _KEY + r")>[ \t\r\n]{0,200}(?P<s>[^<\s][^<\n]{0,500}?)[ \t\r\n]{0,200}</(?P=k)>"),
         ("pass", "pwd", "secret", "token", "key", "credential", "auth"),
         _keyed(_secret_ok, _PW_KEY_WORDS | _SECRET_KEY_WORDS, True)),
    Rule("keyed-call-argument", 2,
         _r(r"(?i)\(" + _SP + r"[\"'](?P<k>" + _KEY + r")[\"']" + _SP + "," + _SP + "(?P<s>" + _QV + ")"),
         ("pass", "pwd", "secret", "token", "key", "credential", "creds", "auth"),
         _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True)),
    # --- tier 3: generic assignment, entropy-gated ---------------------------------------
    Rule("generic-assignment", 3,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r")[\"'`]?" + _TYPE + _SP + "(?::=|=>|=|:)" + _SP + r"[\"'`]?"
            r"(?P<s>[^\s\"'`,;]{8,1000})"),
         ("key", "secret", "token", "auth", "credential", "creds", "passw"),
         _keyed(_generic_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True), anchor=_SECRET_ANCHOR),
)


# ---------------------------------------------------------------------------------------------
# pre-filters: one regex pass over the lower-cased text finds which keywords occur, so most
# short texts (titles, commands, paths) cost one search instead of a hundred substring tests


def _trie(words: list[str]) -> str:
    """A regex for any of ``words`` with shared prefixes factored out (sre tries alternatives one
    by one, so a flat alternation of ~100 words costs several times more per position)."""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    alts = []
    for head, tails in sorted(heads.items()):
        rest = [t for t in tails if t]
        sub = _trie(rest) if rest else ""
        if sub and len(rest) < len(tails):  # a word ends here and longer ones go on
            sub = f"(?:{sub})?"
        alts.append(re.escape(head) + sub)
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# case-insensitive anchors are scanned in the lower-cased text; those that are a list of words are
# cut down to the words a window holds (same order, so the same hits): one or two words share a
# literal prefix, which sre skips to, where eight words make it try every position
_LOWER_ANCHORS = {r.anchor: re.compile(r.anchor.pattern.replace("(?i)", "")) for r in RULES
                  if r.anchor is not None and r.anchor.flags & re.I}
_ANCHOR_WORDS = {a: tuple(low.pattern.split("|")) for a, low in _LOWER_ANCHORS.items()
                 if re.fullmatch(r"[\w ]+(?:\|[\w ]+)*", low.pattern)}
_KEYWORDS = sorted({k for rule in RULES for k in rule.keywords} | {w for ws in _ANCHOR_WORDS.values() for w in ws})
_KEYWORD_RE = re.compile(_trie(_KEYWORDS))
# sre spends ~50 ns at each position that could start a charset-first pattern like the one above, but
# skips to a literal first character in ~1 ns: past a few hundred characters one trie per first
# character (~26 calls) is cheaper than one trie for all
_SPLIT_AT = 400
_KEYWORD_GROUPS = tuple(re.compile(_trie([k for k in _KEYWORDS if k[0] == c]))
                        for c in sorted({k[0] for k in _KEYWORDS}))
# findall() reports non-overlapping matches: a keyword inside a match, or one that starts inside
# a match and runs past its end, is not reported, so derive the first and look the second up
_INNER = {k: tuple(o for o in _KEYWORDS if o != k and o in k) for k in _KEYWORDS}
_STRADDLING = {
    k: tuple(o for o in _KEYWORDS if any(len(o) > len(k) - i and o.startswith(k[i:]) for i in range(len(k))))
    for k in _KEYWORDS
}
_KEYWORD_RULES = {k: frozenset(i for i, r in enumerate(RULES) if k in r.keywords and not r.whole_text)
                  for k in _KEYWORDS}
_WHOLE_RULES = tuple(r for r in RULES if r.whole_text)
_GATED = frozenset(i for i, r in enumerate(RULES) if not r.keywords and r.gate is not None and not r.whole_text)


def _branches(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (sre scans a charset-first alternation at every position,
    but skips straight to a literal first character: so each branch is searched on its own)."""
    out, depth, cur, esc, in_class = [], 0, "", False, False
    for c in pattern:
        if esc:
            esc = False
        elif c == "\\":
            esc = True
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and depth == 0:
            out.append(cur)
            cur = ""
            continue
        cur += c
    return [*out, cur]


# rule index -> (the gate's branches, search them in the lower-cased text?); flags are read once here
# (RegexFlag arithmetic costs more than a short search)
_GATES = {i: (tuple(map(re.compile, _branches(r.gate.pattern.replace("(?i)", "")))), bool(r.gate.flags & re.I))
          for i, r in enumerate(RULES) if r.gate is not None}


# rules with a gate and no keyword (their gates are (?i)): one search in the lower-cased text tells
# whether any of them can match
_GATED_RE = re.compile("|".join(b.pattern for i in sorted(_GATED) for b in _GATES[i][0])) if _GATED else None


def _gate_open(i: int, text: str, low: str) -> bool:
    branches, on_low = _GATES[i]
    return any(b.search(low if on_low else text) for b in branches)


def _has_keyword(low: str) -> bool:
    if len(low) < _SPLIT_AT:
        return _KEYWORD_RE.search(low) is not None
    return any(p.search(low) for p in _KEYWORD_GROUPS)


def _keywords_in(low: str) -> set[str]:
    """Every keyword that occurs in ``low``."""
    if len(low) < _SPLIT_AT:
        found = set(_KEYWORD_RE.findall(low))
    else:  # a keyword hides only keywords of its own group; the fix-ups below cover both cases
        found = {k for p in _KEYWORD_GROUPS for k in p.findall(low)}
    if not found:
        return found
    present = set(found)
    for k in found:
        present.update(_INNER[k])
    for o in {o for k in found for o in _STRADDLING[k]} - present:
        if o in low:
            present.add(o)
    return present


def _scan(chunk: str, offset: int, low: str) -> list[tuple[int, int, str]]:
    """Spans of the windowed rules in one window (``low`` is the window lower-cased)."""
    picked = set(_GATED)
    present = _keywords_in(low)
    for k in present:
        picked |= _KEYWORD_RULES[k]
    found: list[tuple[int, int, str]] = []
    cache: dict[re.Pattern[str], list[int]] = {}
    for i in sorted(picked):  # table order: it names merged spans
        if i not in _GATES or _gate_open(i, chunk, low):
            found += _run(RULES[i], chunk, offset, low, cache, present)
    return found


def _occurrences(word: str, low: str) -> Iterable[int]:
    """Every start of ``word`` in ``low``, overlapping ones too (str.find skips like sre on a literal)."""
    i = low.find(word)
    while i >= 0:
        yield i
        i = low.find(word, i + 1)


def _word_hits(words: tuple[str, ...], low: str, present: set[str]) -> list[int]:
    """Starts of the matches of the alternation ``words`` in ``low`` (leftmost, earlier word first,
    non-overlapping), from one literal search per word that occurs: sre skips straight to a literal
    but tries every position for words that start differently."""
    hits = sorted((a, i, len(w)) for i, w in enumerate(words) if w in present for a in _occurrences(w, low))
    out, end = [], 0
    for a, _, n in hits:
        if a >= end:  # what the alternation does: at each position the first word, never inside a match
            out.append(a)
            end = a + n
    return out


# sre's (?i) matches these to i and s, str.lower() keeps them (or, for U+0130, turns it into two characters)
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def _lower(text: str) -> str:
    """Lower-cased as (?i) sees it, offsets kept: a keyword or start found here is one sre can match."""
    low = text.lower()
    if len(low) != len(text) or "\u0131" in low or "\u017f" in low:
        low = text.translate(_FOLD).lower()
    return low


def _start_positions(st: Starts, words: tuple[str, ...], low: str) -> list[int]:
    """Where matches can begin (see Starts), in order."""
    out: set[int] = set()
    for w in words:
        for i in _occurrences(w, low):
            if st.reach:
                seg = low[max(0, i - st.reach) : i]
                back = len(seg) if st.over is None else len(seg) - len(seg.rstrip(st.over))
                out.update(range(i - back, i + 1))
            else:
                out.add(i)
    return sorted(out)


def _value_span(m: re.Match[str]) -> tuple[int, int]:
    """The span to replace: group "s" without its surrounding quotes and trailing , ; else the match."""
    if "s" in m.re.groupindex and m.start("s") >= 0:
        a, b = m.span("s")
        v = m.group("s")
        if _quoted(v):
            return a + 1, b - 1
        while b > a + 1 and m.string[b - 1] in ",;":
            b -= 1
        return a, b
    return m.span()


# ---------------------------------------------------------------------------------------------
# exact values


def _encodings(value: str) -> set[str]:
    """The value plus the forms it takes when base64- or percent-encoded inside something larger."""
    forms = {value}
    raw = value.encode()
    for pad in range(3):  # base64 at each alignment; drop characters that mix in neighbouring bytes
        enc = base64.b64encode(b"\0" * pad + raw).decode().rstrip("=")
        lead = (pad * 4 + 2) // 3 if pad else 0
        tail = 1 if (pad + len(raw)) % 3 else 0
        core = enc[lead : len(enc) - tail]
        if len(core) >= _MIN_EXACT:
            forms.add(core)
            forms.add(core.replace("+", "-").replace("/", "_"))
    for q in (urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)):
        forms.add(q)
    return {f for f in forms if len(f) >= _MIN_EXACT}


def _env_values(environ: Mapping[str, str]) -> list[str]:
    return [v for k, v in environ.items() if _ENV_NAME_RE.search(k) and len(v) >= _MIN_EXACT]


# ---------------------------------------------------------------------------------------------


class Redactor:
    """Replaces secrets with ``[REDACTED:<rule-id>]``; see the module docstring."""

    def __init__(self, exact_values: Iterable[str] = (), environ: Mapping[str, str] | None = None) -> None:
        env = dict(os.environ if environ is None else environ)  # read once: an agent cannot export it away
        self._exact: set[str] = set()
        self._exact_re: re.Pattern[str] | None = None
        for v in [*exact_values, *_env_values(env)]:
            self._add(v)
        self._compile_exact()

    def add_exact(self, value: str) -> None:
        """Also redact this value (e.g. a token this process minted) and its encodings."""
        if self._add(value):
            self._compile_exact()

    def _add(self, value: str) -> bool:
        if len(value) < _MIN_EXACT:
            return False
        new = _encodings(value) - self._exact
        self._exact |= new
        return bool(new)

    def _compile_exact(self) -> None:
        if self._exact:
            alts = sorted(self._exact, key=lambda s: (-len(s), s))  # longest first
            self._exact_re = re.compile("|".join(map(re.escape, alts)))

    # -- public --------------------------------------------------------------------------

    def redact(self, text: str) -> tuple[str, int]:
        """(text with secrets replaced by markers, number replaced). Idempotent."""
        total = 0
        for _ in range(3):  # a marker can expose a new match ("Token [REDACTED]"): run to a fixed point
            spans = self._spans(text)
            if not spans:
                break
            text, total = _apply(text, spans), total + len(spans)
        return text, total

    def excerpt(self, text: str, limit: int, keep: Literal["head", "tail"] = "head") -> tuple[str, int, bool]:
        """Redact a window around the part that survives a cut to ``limit`` characters, then cut.

        The window holds at least 8 KiB beyond the cut (more if redaction shrank it) and reaches over
        any private-key block that starts in it, so a secret straddling the cut is seen whole.
        Fails closed: on any error the block is withheld and only the exception type is logged.
        """
        truncated = len(text) > limit
        try:
            return self._excerpt(text, limit, keep, truncated)
        except Exception as exc:  # fail closed, never echo the text
            log.warning("redaction failed: %s", type(exc).__name__)
            return WITHHELD, 0, truncated

    # -- internals -----------------------------------------------------------------------

    def _excerpt(self, text: str, limit: int, keep: str, truncated: bool) -> tuple[str, int, bool]:
        limit = max(0, limit)
        if not truncated:  # the common case: the whole text is the window and nothing is cut
            spans = self._spans(text)
            if not spans:
                return text, 0, False
            red = _apply(text, spans)
            if len(red) <= limit:
                return red, min(sum(1 for _ in MARKER_RE.finditer(red)), len(spans)), False
        context = _CONTEXT
        for attempt in range(4):
            if keep == "head":
                lo, hi = 0, min(len(text), limit + context)
                hi = _extend_over_key_blocks(text, lo, hi)
            else:
                lo, hi = max(0, len(text) - limit - context), len(text)
                lo = _extend_back_over_key_block(text, lo, hi)
            window = text[lo:hi]
            spans = self._spans(window)
            if keep == "tail" and lo > 0:
                spans = _merge([*spans, *_orphan_key_tail(window)])
            red = _apply(window, spans)
            # The _OVERLAP characters at the window's cut side may hold the part of a secret that a
            # rule could not see whole. Redaction can shorten the text and pull them into the kept
            # part: then widen the window, and in the end keep less rather than leak.
            if keep == "head":
                safe = len(red) if hi >= len(text) else _map_offset(spans, len(window) - _OVERLAP)
            else:
                safe = len(red) if lo <= 0 else len(red) - _map_offset(spans, _OVERLAP)
            whole = hi >= len(text) if keep == "head" else lo <= 0
            if safe >= limit or whole or attempt == 3:
                keep_n = min(limit, safe)
                out = _cut_head(red, keep_n) if keep == "head" else _cut_tail(red, keep_n)
                break
            context *= 4
        kept = sum(1 for _ in MARKER_RE.finditer(out)) if spans else 0
        return out, min(kept, len(spans)), truncated

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if self._exact_re is not None and any(v in text for v in self._exact):  # `in` is cheaper than sre
            found += [(*m.span(), "known-secret") for m in self._exact_re.finditer(text)]
        low = _lower(text)
        # else no rule can match: most titles, commands and paths stop here
        if _has_keyword(low) or (_GATED_RE is not None and _GATED_RE.search(low)):
            if "-----BEGIN" in text or "PuTTY-User-Key-File" in text:
                for rule in _WHOLE_RULES:
                    if any(k in low for k in rule.keywords):
                        found += _run(rule, text, 0)
            if len(text) <= 2 * _WINDOW:
                found += _scan(text, 0, low)
            else:
                for start, chunk in _windows(text):
                    found += _scan(chunk, start, low[start : start + len(chunk)])
        if not found:
            return found
        if "[REDACTED:" in text:
            protected = [m.span() for m in MARKER_RE.finditer(text)]
            found = [s for s in found if not any(s[0] < pe and ps < s[1] for ps, pe in protected)]
        return _merge(found)


_IDENT_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"


def _identifier_starts(anchor: re.Pattern[str], text: str, low: str | None,
                       present: set[str] | None = None) -> list[int]:
    """Start of each identifier that holds an anchor keyword, in order, without repeats
    (``present``: the keywords ``low`` holds, if known)."""
    pat = _LOWER_ANCHORS.get(anchor)
    words = _ANCHOR_WORDS.get(anchor)
    hits: Iterable[int]
    if pat is None or low is None or len(low) != len(text):
        hits = (m.start() for m in anchor.finditer(text))
    elif words is not None and present is not None:
        hits = _word_hits(words, low, present)
    else:
        hits = (m.start() for m in pat.finditer(low))
    out: list[int] = []
    last = -1
    for start in hits:
        floor = max(0, start - 70, last)
        start = floor + len(text[floor:start].rstrip(_IDENT_CHARS))  # back to the identifier's start
        if start != last:
            out.append(start)
            last = start
    return out



def _anchored(rule: Rule, text: str, starts: list[int]) -> Iterable[re.Match[str]]:
    done = -1
    for start in starts:
        if start < done:
            continue
        m = rule.regex.match(text, start)
        if m is not None:
            done = m.end()
            yield m


def _key_blocks(text: str) -> list[tuple[int, int, str]]:
    """Every private-key block, each BEGIN paired with the first END after it (linear time: a lazy
    regex would rescan up to the search limit from every BEGIN)."""
    ends = list(_END_KEY_RE.finditer(text))
    starts = [e.start() for e in ends]
    out: list[tuple[int, int, str]] = []
    covered = 0
    for b in _BEGIN_KEY_RE.finditer(text):
        if b.start() < covered:
            continue
        i = bisect.bisect_left(starts, b.end())
        if i < len(ends) and ends[i].start() - b.end() <= _KEY_SEARCH:
            span = (b.start(), ends[i].end(), "private-key")
        else:  # END cut off: take every following line that looks like key material
            body = _KEY_BODY_RE.match(text, b.end())
            first = _FIRST_LINE_RE.match(text, b.end())  # at least the line after BEGIN, whatever it holds
            span = (b.start(), max(body.end() if body else b.end(), first.end() if first else b.end()),
                    "private-key-open")
        out.append(span)
        covered = span[1]
    return out


def _run(rule: Rule, text: str, offset: int, low: str | None = None,
         cache: dict[re.Pattern[str], list[int]] | None = None,
         present: set[str] | None = None) -> list[tuple[int, int, str]]:
    """Spans of one rule in ``text`` (a window at ``offset``); ``cache`` shares anchor scans."""
    if rule.finder is not None:
        return [(a + offset, b + offset, rid) for a, b, rid in rule.finder(text)]
    matches: Iterable[re.Match[str]]
    if rule.anchor is not None:
        cache = {} if cache is None else cache
        if rule.anchor not in cache:
            cache[rule.anchor] = _identifier_starts(rule.anchor, text, low, present)
        matches = _anchored(rule, text, cache[rule.anchor])
    elif rule.starts is not None:
        low = low if low is not None and len(low) == len(text) else _lower(text)
        matches = _anchored(rule, text, _start_positions(rule.starts, rule.starts.words or rule.keywords, low))
    else:
        matches = rule.regex.finditer(text)
    out = []
    for m in matches:
        a, b = _value_span(m)
        if b <= a:
            continue
        raw = m.group("s") if "s" in m.re.groupindex and m.start("s") >= 0 else m.group(0)
        if rule.check is not None and not rule.check(raw, m, text):
            continue
        out.append((a + offset, b + offset, rule.id))
    return out


def _windows(text: str) -> Iterable[tuple[int, str]]:
    if len(text) <= 2 * _WINDOW:
        yield 0, text
        return
    step = _WINDOW - _OVERLAP
    for start in range(0, len(text), step):
        yield start, text[start : start + _WINDOW]
        if start + _WINDOW >= len(text):
            break


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Union of overlapping spans; the first rule (by position, then table order) names it."""
    out: list[tuple[int, int, str]] = []
    for a, b, rid in sorted(spans, key=lambda s: (s[0], -s[1])):
        if out and a < out[-1][1]:
            pa, pb, prid = out[-1]
            out[-1] = (pa, max(pb, b), prid)
        else:
            out.append((a, b, rid))
    return out


def _apply(text: str, spans: list[tuple[int, int, str]]) -> str:
    parts, pos = [], 0
    for a, b, rid in spans:
        parts += [text[pos:a], f"[REDACTED:{rid}]"]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


def _map_offset(spans: list[tuple[int, int, str]], off: int) -> int:
    """Where offset ``off`` of the original lands in the redacted text (start of a marker if inside one)."""
    shift = 0
    for a, b, rid in spans:
        if a >= off:
            break
        marker = len(rid) + 11
        if b > off:
            return a + shift
        shift += marker - (b - a)
    return off + shift


_BEGIN_KEY_RE = re.compile(_OPEN_KEY)
_END_KEY_RE = re.compile(r"-----END[ A-Z0-9_-]{0,100}PRIVATE KEY(?: BLOCK)?-----")
_KEY_SEARCH = 65536
# lines of a key block: base64 (16+ chars, the last line and PGP's "=crc" may be shorter), armour
# headers ("Proc-Type: ..."), blank lines; line breaks raw or JSON-escaped
_FIRST_LINE_RE = re.compile(r"(?:\\r|\\n|[\r\n \t]){0,8}(?:(?!\\n|\\r)[^\r\n]){0,4096}")
_KEY_BODY_RE = re.compile(
    r"(?:(?:\\r|\\n|[\r\n \t])+(?:[A-Za-z0-9+/]{16,200}={0,2}|[A-Za-z0-9+/]{1,15}={0,2}(?=\\n|\\r|[\r\n]|$)"
    r"|[A-Za-z][\w-]{0,40}: [^\n\\]{0,200}))*"
)


def _extend_over_key_blocks(text: str, lo: int, hi: int) -> int:
    """Move ``hi`` past the END line of any private-key block that begins before it."""
    while True:
        last = None
        for m in _BEGIN_KEY_RE.finditer(text, max(lo, 0), hi):
            last = m
        if last is None:
            return hi
        end = _END_KEY_RE.search(text, last.end(), min(len(text), last.end() + _KEY_SEARCH))
        new_hi = min(len(text), (end.end() if end else last.end() + _KEY_SEARCH) + _OVERLAP)
        if new_hi <= hi:
            return hi
        hi = new_hi


def _extend_back_over_key_block(text: str, lo: int, hi: int) -> int:
    """Move ``lo`` back to the BEGIN line of a private-key block the window starts inside."""
    end = _END_KEY_RE.search(text, lo, hi)
    if end is None:
        return lo
    begin = _BEGIN_KEY_RE.search(text, lo, end.start())
    if begin is not None:
        return lo
    back = max(0, lo - _KEY_SEARCH)
    # only BEGIN lines before lo: one after it opens another block (moving lo forward dropped text)
    starts = [m.start() for m in _BEGIN_KEY_RE.finditer(text, back, lo + 200) if m.start() <= lo]
    return starts[-1] if starts else lo


def _orphan_key_tail(window: str) -> list[tuple[int, int, str]]:
    """A window that starts inside a key block whose BEGIN was not found: redact up to its END."""
    end = _END_KEY_RE.search(window)
    if end is None or _BEGIN_KEY_RE.search(window, 0, end.start()):
        return []
    return [(0, end.end(), "private-key")]


def _straddling_marker(red: str, cut: int) -> re.Match[str] | None:
    """The marker that the cut position falls inside, if any (markers are at most ~75 chars)."""
    for m in MARKER_RE.finditer(red, max(0, cut - 80), cut + 80):
        if m.start() < cut < m.end():
            return m
    return None


def _cut_head(red: str, limit: int) -> str:
    m = _straddling_marker(red, limit)
    return red[: m.start() if m else limit]  # never leave half a marker


def _cut_tail(red: str, limit: int) -> str:
    cut = max(0, len(red) - limit)
    m = _straddling_marker(red, cut)
    return red[m.end() if m else cut :]
