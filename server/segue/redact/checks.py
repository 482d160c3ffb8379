"""Value and key checks: entropy, placeholders, stopwords, which key names name a secret. A rule's
``check`` decides on a candidate match; nothing here finds candidates."""

from __future__ import annotations

import functools
import math
import re
from collections import Counter
from collections.abc import Callable

from segue import recache

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
        "auth", "mysecretpassword", "changeme", "change_me", "change-me"
    }
)
_PLACEHOLDER_RE = recache.compile(
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
      | \[[A-Za-z][A-Za-z _-]{2,30}\]         # [hidden], [masked], [your token]
      | \*{1,3}[A-Za-z][A-Za-z _-]{2,30}\*{1,3} # **REDACTED**, *hidden*
      | \((?:sensitive(?:[ ]value)?|known[ ]after[ ]apply|masked|hidden|redacted|secret)\)
                                             # Terraform's plan and state markers
      | (?:op|vault|ref\+[a-z0-9]{1,20}|sm|gcpsm|akv|keyvault|azurekeyvault|doppler|infisical|bws|secretsmanager)://\S{0,300}
                                             # secret managers' references (op://vault/item/field)
      | arn:aws:(?:secretsmanager|ssm):\S{0,300}
    )$""",
    re.X,
)
_X_RUN_RE = recache.compile(r"[xX]{6,}|[*•]{3,}|#{4,}|\.\.\.|…")  # (sk-***, ghp_****…: masked)
# what a bare word after "the password is" says about a password rather than being one ("the password is wrong",
# "… is stored in 1Password", "la contraseña es incorrecta"); also function words a flag's value never is (--password
# via the CLI)
_STATE_WORDS = frozenset({
    "wrong", "incorrect", "invalid", "correct", "right", "expired", "expiring", "needed", "missing", "weak", "strong",
    "short", "long", "too", "not", "also", "still", "now", "being", "stored", "saved", "kept", "changed", "reset",
    "rotated", "generated", "encrypted", "hashed", "managed", "shared", "sent", "in", "at", "from", "under",
    "inside", "the", "a", "an", "my", "your", "our", "their", "his", "her", "its", "different", "mandatory",
    "forgotten", "lost", "locked", "valid", "accepted", "rejected", "visible", "printed", "logged", "configured",
    "defined", "available", "unavailable", "good", "bad", "fine", "ok", "okay", "secure", "insecure", "compromised",
    "leaked", "exposed", "case", "via", "through", "only", "never", "always", "already", "then", "just", "what",
    "falsch", "richtig", "ungültig", "abgelaufen", "zu", "nicht", "leer", "korrekt", "gespeichert", "geändert",
    "incorrecta", "incorrecto", "correcta", "correcto", "inválida", "invalida", "válida", "valida", "demasiado",
    "muy", "vacía", "vacia", "obligatoria", "requerida", "débil", "debil", "segura", "caducada", "expirada", "la",
    "el", "una", "un", "incorrecte", "faux", "fausse", "invalide", "trop", "vide", "obligatoire", "expiré", "expirée",
    "le", "une", "incorreta", "incorreto", "errada", "errado", "muito", "vazia", "obrigatória", "o", "uma", "um",
    "sbagliata", "errata", "scaduta", "troppo", "vuota",
    # pointers to where it is, in Italian and Portuguese ("la password è quella del file .env", "a senha: veja o cofre")
    "quella", "quello", "questa", "stessa", "stesso", "solita", "vedi", "veja", "ver", "consulte", "nel", "nella",
    "mesma", "mesmo", "na", "no", "salvata", "memorizzata", "salva", "armazenada", "guardada", "definida", "nuova",
    "nova", "cambiata", "alterada", "generata", "gerada",
    # and what it is like ("la password è lunga almeno 16 caratteri")
    "lunga", "lungo", "corta", "corto", "longa", "curta", "debole", "fraca", "semplice", "simples", "complessa",
    "complexa", "facile", "fácil", "difficile", "difícil", "vecchia", "antiga", "temporanea", "temporária",
    "provisória", "uguale", "igual", "diversa", "diferente", "obbligatoria", "necessaria", "necessária", "richiesta",
    "cifrata", "criptografada",
})
# a secret's name made of plain words (db-password, github_token): what --secret=… names, not a value
_SECRET_NAME_RE = recache.compile(
    r"[a-z]+(?:[-_][a-z]+)*[-_](?:password|passwd|pass|pwd|secret|token|key|credentials?)(?:[-_][a-z]+)*"
    r"|(?:password|passwd|secret|token|key|credentials?)[-_][a-z]+(?:[-_][a-z]+)*")
# words that mark a value as made up, in context rules only (vendor tokens may contain them)
_MADE_UP_RE = recache.compile(r"(?i)fake|dummy|placeholder|your[_-]|<your|replace[_-]?me|change[_-]?this|example")
# and phrases a stand-in value is written in (change-me-to-a-long-random-string, insert-secret-here, test_key_123):
# judged on values a context rule found, not on every random-looking run (generic.random_body), where it would cost
_PLACEHOLDER_PHRASE_RE = recache.compile(
    r"(?i)replace[_-]?(?:with|this)|change[_-]me|[_-]changeme|changeme[_-]|(?<![a-z])insert[_-]"
    r"|(?<![a-z])(?:goes|go|put|paste|enter|fill)[_-](?:here|your|in|me)(?![a-z])|fill[_-]?me[_-]?in|[_-]here$|not[_-](?:a[_-])?real|^generate[_-]"
    r"|^(?:my|some|the|test|mock|sample)[_-](?:api[_-]|access[_-]|secret[_-])?(?:key|secret|token|password|pass)(?:[_-]?\d{1,4})?$"
    r"|^sample[_-]|[_-]sample$|(?:^|[._-])x{4,}(?:$|[._-])")
_CODE_RE = recache.compile(
    r"""^(?:[A-Za-z_][A-Za-z_]*(?:\.[A-Za-z_][A-Za-z_]*)+[,;)]*       # var.db_password, os.environ
      | (?:self|this|os|process|var|local|locals|config|settings|env|data|args|opts|options|params|props
         |ctx|context|secrets|vars|values|inputs|steps|needs|req|request|cfg|conf)\.[\w.]+[,;)]*
      | [A-Za-z_][A-Za-z0-9_.]*\s*[(\[].*                                 # getenv("X"), env["X"]
      | [a-z]+(?:_[a-z0-9]+)+ | [a-z]{2,}(?:[A-Z][a-z]{2,}\d?)+            # snake_case, camelCase names
    )$""",
    re.X,
)


def _unquote(v: str) -> str:
    return v.strip("\"'`<>[](){}")


def is_placeholder(value: str) -> bool:
    """True for values that stand in for a secret rather than being one."""
    # the same values recur through a transcript (one secret, many lines): short ones are remembered
    return _placeholder_cached(value) if len(value) <= 200 else _placeholder(value)


def _placeholder(value: str) -> bool:
    v = value.strip()
    if not v or _PLACEHOLDER_RE.match(v):
        return True
    if v[:1] in "\"'`" and _PLACEHOLDER_RE.match(v.rstrip(",;").strip("\"'`").strip()):
        return True  # '<db-password>', "{{ env.PW }}": the brackets are what marks it
    core = _unquote(v.rstrip(",;")).rstrip(",;")
    if not core or core.lower() in _STOPWORDS or _PLACEHOLDER_RE.match(core):
        return True
    if _X_RUN_RE.search(core) or _MADE_UP_RE.search(core) or core.endswith(("EXAMPLE", "EXAMPLEKEY")):
        return True  # (…EXAMPLE, …EXAMPLEKEY: AWS's documented example keys)
    if ("-" in core or "_" in core or "." in core) and _PLACEHOLDER_PHRASE_RE.search(core):
        return True  # (every phrase there has a separator: tested only then, it costs every value otherwise)
    return not re.search(r"[A-Za-z0-9]", core)


_placeholder_cached = functools.lru_cache(maxsize=4096)(_placeholder)



Check = Callable[[str, "re.Match[str]", str], bool]  # (value, match, text) -> keep the match?


def _tier1_ok(value: str, m: re.Match[str], text: str) -> bool:
    return not _X_RUN_RE.search(value)


def _aws_ok(value: str, m: re.Match[str], text: str) -> bool:
    """AWS's own documented examples (AKIAIOSFODNN7EXAMPLE, wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY) end in EXAMPLE
    or EXAMPLEKEY; a real key's random body does not spell it."""
    core = _unquote(value)
    return (_tier1_ok(value, m, text) and not core.endswith(("EXAMPLE", "EXAMPLEKEY")) and not _MADE_UP_RE.search(core)
            and not _PLACEHOLDER_PHRASE_RE.search(core))


def _aws_pair_ok(value: str, m: re.Match[str], text: str) -> bool:
    """The 40 characters after a key id: a random body (not a word run, not AWS's documented example)."""
    from segue.redact.generic import random_body  # generic imports this module

    return _aws_ok(value, m, text) and random_body(value, 12)


def _aws_secret_ok(value: str, m: re.Match[str], text: str) -> bool:
    """40 characters after a secret/key word: base64 (both cases), not 40 hex (a SHA-1, a GPG fingerprint)."""
    return _context_ok(value, m, text) and re.fullmatch(r"[0-9a-f]{40}|[0-9A-F]{40}", value) is None


def id_key(key: str) -> bool:
    """A key that names an identifier, digest or cursor (node_id, etag, cache_key, nextPageToken), not a secret."""
    words = key_words(key)
    while len(words) > 1 and words[-1].isdigit():
        words.pop()  # x-amz-id-2
    if not words or "secret" in words or (("access" in words or words[0] == "private") and "key" in words):
        # a secret's id (Vault's secret_id), an access key's id (the pair's other half), a private key's id beside it
        return False
    if words[-1] in _ID_LAST_WORDS or (words[-1].endswith("id") and words[-1][:-2] in _ID_OF):
        return True  # (x-amzn-requestid, traceid: the words glued)
    return len(words) > 1 and words[-1] in ("key", "token") and (
        words[-2] in _NOT_SECRET_KEY_PAIRS or words[-2] in _NOT_SECRET_KEY_ONLY)


_ID_OF = frozenset({"request", "trace", "span", "message", "correlation", "event", "run", "object", "node", "item",
                    "user", "account", "org", "project", "thread", "conversation", "upload", "build", "job", "task",
                    "commit", "revision", "version", "device", "installation", "tenant", "subscription", "deployment"})
_ID_LAST_WORDS = frozenset({"id", "ids", "cursor", "etag", "digest", "sha", "hash", "checksum", "fingerprint",
                            "revision", "rev", "commit", "sum", "uuid", "guid", "uid", "ulid", "cid", "handle",
                            "iterator", "traceparent", "tracestate", "trace", "span", "correlation", "jti", "state",
                            "nonce", "next", "prev", "previous", "challenge", "marker", "kid", "x5t", "thumbprint",
                            "ref", "hashid", "after", "before"})  # (after/before: cursors, starting_after)


def _cli_flag_ok(value: str, m: re.Match[str], text: str) -> bool:
    """--password VALUE: any value but a function word (--password via the CLI is insecure) or a secret's name
    (--secret=db-password: gcloud names the secret, it does not give it)."""
    core = _unquote(value).rstrip(",;.")
    low = core.lower()
    return low not in _STATE_WORDS and not _SECRET_NAME_RE.fullmatch(low) and _context_ok(value, m, text)


# a path of plain names (secret/myapp/db, kv/prod/api): what a secret is stored under
_WORD_PATH_RE = recache.compile(r"[A-Za-z][\w.-]{0,60}(?:/[A-Za-z][\w.-]{0,60}){1,12}/?")
# an absolute or home path whose first piece is a plain name (/run/user/1000/bus, ~/.ssh/id_ed25519,
# /var/lib/docker/…): where a secret is kept, or a socket; a random base64 value rarely starts so
_FS_PATH_RE = recache.compile(
    r"(?:~|\.{1,2})?/(?:[a-z][a-z0-9_-]{1,30}|\.[\w-]{1,30}|[A-Z][a-z]{2,20})(?:/[^\s/]{0,200}){0,40}")


_SUCCESSOR = bytes(range(1, 256)) + b"\0"


def _sequence(core: str) -> bool:
    """0123456789abcdef0123…, abcdefgh…: a run of successive characters written out (12+), not a draw."""
    body = core.replace("-", "").replace("_", "")
    if len(body) < 12 or not body.isascii():
        return False
    raw = body.encode("ascii")  # steps counted without a Python step per character (as generic._alphabet)
    diff = int.from_bytes(raw[1:], "big") ^ int.from_bytes(raw[:-1].translate(_SUCCESSOR), "big")
    return diff.to_bytes(len(raw) - 1, "big").count(0) >= 0.85 * (len(raw) - 1)


def _fs_path(core: str) -> bool:
    return _FS_PATH_RE.fullmatch(core) is not None


# a "quoted value" that is really the text between a closing and the next opening quote: ") or ",
# "] = data[", ": null, " (the key was quoted, the value is not)
_BETWEEN_QUOTES_RE = recache.compile(r"^[\s]*[)\]}:,;=+]|^\s*(?:or|and|\|\||&&|\?\?|\+)\s")
# an opening bracket or operator at the end counts only in code-like glue (spaces, brackets): a value that
# merely ends in "=" or "+" is base64 padding or a password ('otter-2030=')
_BETWEEN_END_RE = recache.compile(r"[(\[{=,+:][\s]*$")


def _between_quotes(value: str) -> bool:
    if not _quoted(value):
        return False
    inner = value[1:-1]
    if _BETWEEN_QUOTES_RE.search(inner):
        return True
    return _BETWEEN_END_RE.search(inner) is not None and re.search(r"[\s()\[\]{}\"'`]", inner) is not None


# a flag's value that names where the secret is, not the secret: docker build --secret id=npm,src=~/.npmrc
_SECRET_SPEC_RE = recache.compile(
    r"(?i)[\"']?(?:id|src|source|env|type|target|file|name|mode)=[^,\s]{0,200}(?:,|[\"']?$)")


def _context_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Tier 2 keyword contexts: any real-looking value, placeholders excepted."""
    return not (is_placeholder(value) or _between_quotes(value) or _SECRET_SPEC_RE.match(value))


def _same_as_user(value: str, m: re.Match[str], text: str) -> bool:
    """user:password where the password is the user's name (postgres:postgres, admin:admin, guest:guest): a
    service's documented default, what docs and local setups show, not a secret chosen by anyone."""
    end = m.start("s")
    if text[end - 1 : end] in ("'", '"'):
        end -= 1
    if text[end - 1 : end] != ":":
        return False
    start = end - 1 - len(value)  # the user, read backwards: exactly as long as the value, then a boundary
    return (start >= 0 and text[start : end - 1].lower() == value.lower()
            and (start == 0 or text[start - 1] in " \t\n/@\"'="))


def _auth_header_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Authorization: … value, not a call that stands for one (Basic base64(user:password))."""
    return _context_ok(value, m, text) and text[m.end() : m.end() + 1] != "("


def _url_ok(value: str, m: re.Match[str], text: str) -> bool:
    """URL user:pass@: any value but a template or a stand-in word (user:password@host, USER:PASSWORD@HOST
    are how docs spell the shape; a real password is rarely the word itself)."""
    return not _same_as_user(value, m, text) and not is_placeholder(value)


_CURL_BEFORE_RE = recache.compile(r"\b(?:curl|https?|xh)\b(?:[^\n|;&\\]|\\\n?){0,500}\Z")


def _curl_ok(value: str, m: re.Match[str], text: str) -> bool:
    """-u user:pass counts only on a curl command line (line continuations allowed)."""
    before = text[max(0, m.start() - 500) : m.start()]
    return bool(_CURL_BEFORE_RE.search(before)) and _context_ok(value, m, text) and not _same_as_user(value, m, text)


def _random_token(value: str, min_len: int = 16) -> bool:
    from segue.redact.generic import random_body  # generic imports this module

    return random_body(re.sub(r"[-_.+/=~]", "", value), min_len)


def _random_tail(core: str) -> bool:
    """The last piece of a snake_case or letters-only value looks random (16+ characters)."""
    from segue.redact.generic import random_body  # generic imports this module

    tail = re.split(r"[_.-]", core)[-1]
    return len(tail) >= 16 and random_body(tail, 16) and shannon(tail) >= 3.5


def _curl_token_ok(value: str, m: re.Match[str], text: str) -> bool:
    """curl -u TOKEN: — the user is a key (Stripe, Mailgun style): only when it looks random."""
    return _curl_ok(value, m, text) and (_random_token(value) or re.fullmatch(r"[0-9a-f]{32,64}", value) is not None)


def _url_token_ok(value: str, m: re.Match[str], text: str) -> bool:
    """https://TOKEN@host (a token as the user, no password), or (_url_slash_ok) a password holding "/" (rule
    url-credentials stops at "/"): only values that look random."""
    return _random_token(value) and not _PLACEHOLDER_RE.match(value)


def _url_slash_ok(value: str, m: re.Match[str], text: str) -> bool:
    return "/" in value and not value.startswith("/") and _url_token_ok(value, m, text)


def _scaleway_ok(value: str, m: re.Match[str], text: str) -> bool:
    """SCW + 17: digits and letters mixed (SCWABCDEFGHIJKLMNOPQ, SCWXXXXXXXXXXXXXXXXX are the docs' examples)."""
    body = value[3:]
    return _tier1_ok(value, m, text) and sum(c.isdigit() for c in body) >= 2 and sum(c.isalpha() for c in body) >= 2


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
    if _CODE_RE.match(core) or _CODE_RE.match(value.strip()):  # config['password'] (the bare run ends at "[")
        return False
    if _fs_path(core) and key_words(m.groupdict().get("k") or "") == ["pwd"]:
        return False  # PWD=/home/dev/app: the shell's working directory
    if core.isalpha():
        # a bare word after only a space is prose ("password must be"); after ':' '=' or "is" it
        # may be a human password ("my password is sunshine"), unless it is a word about the password
        return bool(sep.strip()) and core.lower() not in _STOPWORDS and core.lower() not in _STATE_WORDS
    # password secret/myapp/db (vault kv get -field=password PATH): after a space only, a path is not a value
    return bool(sep.strip()) or not _WORD_PATH_RE.fullmatch(core)


def _prose_ok(value: str, m: re.Match[str], text: str) -> bool:
    """keyword, space, value: passwords may be bare, other secrets must be quoted (secrete "x";)."""
    key = m.group("k")
    if key.lower() in ("mot de passe", "пароль") or _names_secret(key, _PW_KEY_WORDS, False):
        return _password_ok(value, m, text)
    if key.lower() == "key":  # "my api key is …": the qualifier is the word before, in prose
        before = text[max(0, m.start() - 20) : m.start()].rstrip().rsplit(None, 1)
        key = (before[-1] if before else "") + "_key"
        if key[:-4].lower() in _PROVIDER_WORDS:
            key = "api_key"  # "my openai key is …"
    # bare after "my token is", "key:": only a value that looks random (a word or a name is prose). Tested
    # first: it rejects most prose ("token counter") at the cost of a length test, and every test here is pure
    from segue.redact.generic import random_body  # generic imports this module

    if not _quoted(value) and not random_body(_unquote(value).rstrip(",;.:!?)"), 12):
        return False
    return _names_secret(key, _SECRET_KEY_WORDS, True) and _secret_ok(value, m, text)


# words and spaces (a message: "token_expired": "Your session has expired, sign in again"), not a token
_SENTENCE_RE = recache.compile(r"[A-Za-z][A-Za-z'’,.!?()-]*(?:[ \t]+[A-Za-z][A-Za-z'’,.!?()-]*)+[.!?]?")


def _message(core: str, m: re.Match[str]) -> bool:
    """A sentence under a key that names a state of a secret, not the secret (token_expired, secret_hint)."""
    words = key_words(m.groupdict().get("k") or "")
    return bool(words) and words[-1] not in _SECRET_LAST_WORDS and _SENTENCE_RE.fullmatch(core) is not None


def _secret_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Config keys naming a token, key, secret or credential: short values count (§1.5b) but
    letters-only values are names, not secrets (gitleaks generic-api-key does the same)."""
    if not _context_ok(value, m, text):
        return False
    sep = m.groupdict().get("sep") or ""
    if ("==" in sep or "!=" in sep) and not _quoted(value):
        return False
    if value.startswith(":") and "s" in m.re.groupindex and text[m.start("s") - 1 : m.start("s")] == ":":
        return False  # a scope operator (auth::Token, test_auth.py::test_x), not key: value
    core = _unquote(value).rstrip(",;:")
    if len(core) < 6 or _message(core, m) or _fs_path(core) or _sequence(core):
        return False
    if re.fullmatch(r"[A-Za-z_.\-]+", core) or _CODE_RE.match(core):
        return _random_tail(core)  # a name or code, unless its last piece is random (pk_b9f6…, MKXedHsyaUbZYChO)
    # counts, ports, ids; and file positions after a file name ("token.ts:382:26" in a stack trace)
    return not re.fullmatch(r"\d{1,12}|\d{1,7}(?::\d{1,7}){1,2}", core)


def _generic_ok(value: str, m: re.Match[str], text: str) -> bool:
    return _secret_ok(value, m, text) and shannon(_unquote(value)) >= 3.5


# Key names are split into words (snake, kebab, dotted, camelCase) and judged by those words, so
# that "apiKey" and "DB_PASSWORD" count while "keyPressed", "otpauth" and "passwordField" do not.
_PW_KEY_WORDS = frozenset({
    "password", "passwd", "passwort", "passphrase", "passcode", "pass", "pwd", "pw", "pword", "contraseña",
    "contrasena", "senha", "wachtwoord", "passe", "kennwort", "hasło", "haslo", "lösenord", "losenord",
    "salasana", "passord", "psk", "пароль", "пароля", "şifre", "şifrem", "şifresi", "parola", "parolası", "mdp",
    "पासवर्ड"
})
_SECRET_KEY_WORDS = frozenset({
    "secret", "secrets", "secrete", "token", "tokens", "credential", "credentials", "creds", "auth", "apikey"
})
# a provider's name before "key" in prose ("my openai key is …", "the azure key is …"): that provider's credential
_PROVIDER_WORDS = frozenset({
    "openai", "azure", "anthropic", "google", "gcp", "aws", "stripe", "github", "gitlab",
    "slack", "twilio", "sendgrid", "mailgun", "datadog", "huggingface", "hf", "mistral", "cohere", "groq",
    "openrouter", "perplexity", "replicate", "pinecone", "supabase", "firebase", "vercel", "netlify",
    "cloudflare", "heroku", "algolia", "deepseek", "xai", "grok", "elevenlabs", "fireworks", "together",
    "voyage", "tavily", "serpapi", "linear", "notion", "shopify", "paypal", "braintree", "plaid", "sentry",
    "newrelic", "okta", "auth0", "airtable", "postmark", "resend", "brevo", "mailchimp", "zendesk", "hubspot",
})
_SECRET_LAST_WORDS = frozenset({"key", "secret", "token", "credential", "credentials", "creds", "apikey", "password",
                                "passphrase", "pass", "pwd", "auth"})
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
        "counter", "index", "hash", "sha1", "sha256", "sha512", "md5", "digest", "fingerprint", "checksum"
    }
)
_NOT_SECRET_KEYS_RE = recache.compile(
    r"(?i)(?:^|[_.\-])(?:access(?:ibility|or)|random[_.-]?access|author|authentication-results|withcredentials"
    r"|jsonwebtoken|keyvaulttostoresecrets|usersecretsid|keying|keyboard|keyword)$"
)
_NOT_SECRET_KEY_PAIRS = frozenset(
    {
        "bucket", "foreign", "hot", "idx", "natural", "primary", "pub", "public", "schema", "sequence",
        "partition", "sort", "cache", "row", "index", "map", "csrf", "xsrf", "next", "page", "continuation",
        "cancellation", "idempotency", "dedup", "dedupe", "deduplication", "routing", "shard", "object", "composite",
        # (and cursors' names: offset_token, syncToken, skipToken)
        "unique", "request", "offset", "scroll", "sync", "resume", "paging", "pagination", "skip", "delta"
    }
)


# before "key" only: a GPG key (Docker images' GPG_KEY) is a fingerprint, a sandbox or object key a path or name;
# GPG_PASSPHRASE and SANDBOX_SECRET stay secrets
_NOT_SECRET_KEY_ONLY = frozenset({"gpg", "pgp", "publishable", "sandbox", "object"})
_MADE_UP_KEY_WORDS = frozenset({"mock", "mocked", "fake", "dummy", "example", "sample", "placeholder", "stub"})


# password key words by shape: abbreviated, misspelt, plural or glued to a prefix (PSWD, PASWRD, passworsd,
# passwords, MYSQLPASS, adminPwd), but not the English words that hold "pass" or "pw"
_PW_SHAPE_RE = recache.compile(
    r"(?:p(?:a?s{1,3})?[ao]?w(?:[aeiou]?r?[aeiou]?[rst]?)?[dt]s?|pass(?:es)?|pswd?s?|passcodes?"
    r"|passphrases?|pword)")
_PW_DENY = frozenset({
    "bypass", "bypasses", "compass", "compasses", "surpass", "trespass", "overpass", "underpass", "encompass",
    "upward", "upwards", "passes", "byepass", "impass", "kompass", "passport", "passive", "passage",
    "askpass", "sshaskpass", "oldpwd",  # a program that asks for a password; the shell's previous directory
})


# glued to a prefix only in the unmistakable forms (MYSQLPASS, dbpasswd, rootpwd; not LPWORD, upward)
_PW_GLUED_RE = recache.compile(r"[a-z0-9]{2,16}(?:pass(?:wo?r?d|wd)?s?|pa?swr?d|pwd)")


def pw_word(w: str) -> bool:
    """Is this key word a password's name? ('pswd', 'mysqlpass', 'passworsd' yes; 'bypass', 'passive' no)"""
    if w in _PW_DENY:
        return False
    return _PW_SHAPE_RE.fullmatch(w) is not None or _PW_GLUED_RE.fullmatch(w) is not None


def key_words(key: str) -> list[str]:
    """'DB_PASSWORD' -> ['db', 'password']; 'apiKeyValue' -> ['api', 'key', 'value']."""
    parts = re.split(r"[_.\-\s\[\]]+|(?<=[a-z0-9])(?=[A-Z])", key.strip("\"'`$@"))
    return [p.lower() for p in parts if p]


@functools.lru_cache(maxsize=4096)  # the same keys recur on every line of a JSONL store
def _names_secret(key: str, family: frozenset[str], qualified_key: bool, last_key: bool = False) -> bool:
    words = key_words(key)
    if not words or _NOT_SECRET_KEYS_RE.search(key) or words[-1] in _NOT_SECRET_LAST:
        return False
    if any(w in _MADE_UP_KEY_WORDS for w in words):
        return False  # mock_token, FAKE_API_KEY, example_password: named as made up
    if words[0] == "cache" and words[-1] == "key":
        return False  # a cache's key (actions/cache's cache-primary-key, cache-matched-key): a digest of lock files
    for i, w in enumerate(words):
        prev = words[i - 1] if i else ""
        if (w in family or ("password" in family and pw_word(w))) and prev not in _NOT_SECRET_KEY_PAIRS:
            return True
        if qualified_key and w == "key" and prev in _KEY_QUALIFIERS:
            return True
        if (last_key and w == "key" and 0 < i == len(words) - 1 and prev not in _NOT_SECRET_KEY_PAIRS
                and prev not in _NOT_SECRET_KEY_ONLY):
            return True  # HEROKU_KEY, loki_key; a bare "key" is too common to count
    return False


def _keyed(check: Check, family: frozenset[str], qualified_key: bool, last_key: bool = False) -> Check:
    """Wrap a value check with the key-name test (group "k")."""

    def run(value: str, m: re.Match[str], text: str) -> bool:
        key = m.groupdict().get("k") or ""
        return _names_secret(key, family, qualified_key, last_key) and check(value, m, text)

    return run



_FLAG_NOT_SECRET_LAST = frozenset({"stdin", "fd", "helper", "command", "cmd", "arn", "issuer", "audience", "scope",
                                    "lifetime", "role", "cache", "location", "kind", "threshold", "output", "out"})


def _secret_flag_ok(value: str, m: re.Match[str], text: str) -> bool:
    """--any-flag-naming-a-secret VALUE: the flag names a secret (not --token-file, --password-stdin)."""
    words = key_words(m.group("k"))
    if not words or (words[-1] in _NOT_SECRET_LAST and not (words[-1] == "id" and "secret" in words)):
        return False
    if words[-1] in _FLAG_NOT_SECRET_LAST or _NOT_SECRET_KEYS_RE.search(m.group("k")):
        return False
    core = _unquote(value)
    if core.startswith(("/", "./", "~/")) or re.fullmatch(r"\d{1,12}|[a-z]+(?:-[a-z]+)*", core):
        return False  # a path, a count, a plain word (--token-type bearer)
    return len(core) >= 4 and _context_ok(value, m, text)


def _named_value_ok(value: str, m: re.Match[str], text: str) -> bool:
    """A value named by a key found in its own place (<password>…</password>, variable "db_password" { default = … }):
    a password may be anything (words joined by dashes too), other secrets must look like one (_secret_ok)."""
    key = m.group("k")
    if _names_secret(key, _PW_KEY_WORDS, False):
        core = _unquote(value).strip()
        return len(core) >= 4 and _context_ok(value, m, text) and core.lower() not in _STOPWORDS and " " not in core
    return _names_secret(key, _PW_KEY_WORDS | _SECRET_KEY_WORDS, True) and _secret_ok(value, m, text)


def _base64_text_ok(value: str, m: re.Match[str], text: str) -> bool:
    """echo X | base64 -d: X decodes to one credential-like word (a password or token: no blanks, not a plain
    word or number, not a JSON/XML document). Decoded prose ("hello world"), JWT headers and configs are not
    secrets by being encoded; a secret inside them is found by the decoding rescan like anywhere else."""
    from segue.redact.generic import _b64decode  # generic imports this module

    raw = _b64decode(value)
    if raw is None:
        return False
    word = raw.decode("latin-1").strip()
    if len(word) < 6 or any(not 32 < ord(c) < 127 for c in word):
        return False
    if word[0] in "{[<\"'" or re.fullmatch(r"[A-Za-z]+|[A-Za-z]+[ _-][A-Za-z]+|[\d.:/-]+", word):
        return False
    return _context_ok(value, m, text)


def _auth_pair_ok(value: str, m: re.Match[str], text: str) -> bool:
    """auth('user', 'X'): X is a password unless it is a placeholder or a word the code names (not a scheme)."""
    core = _unquote(value)
    if _NOT_SECRET_KEYS_RE.search(m.group("k")) or " " in core.strip() or core.lower() in _STOPWORDS:
        return False
    if core.startswith("/") or "://" in core or re.fullmatch(r"[a-z]+(?:[-_.][a-z0-9]+)*", core):
        return False  # a path, a URL, a region or a slug: auth('GET', '/api/v1'), credentials("aws", "us-east-1")
    return _context_ok(value, m, text)


def _pgpass_ok(value: str, m: re.Match[str], text: str) -> bool:
    """host:port:db:user:password: the host is * or a name or address (a letter or a dot), not a time (10:30:…)."""
    host = m.group("h")
    return (host == "*" or re.search(r"[A-Za-z.]", host) is not None) and _context_ok(value, m, text)


def _random_value_ok(value: str, m: re.Match[str], text: str) -> bool:
    """A value named only by its place (a tool's positional argument, "ma clé … est X"): quoted and not a plain
    word, or one that looks random."""
    from segue.redact.generic import random_body  # generic imports this module

    core = _unquote(value).rstrip(",;.:!?)")
    if not _context_ok(value, m, text) or len(core) < 8:
        return False
    return random_body(core, 12) or (_quoted(value) and not core.isalpha() and " " not in core)


def _cjk_value_ok(value: str, m: re.Match[str], text: str) -> bool:
    """パスワードは X: the ASCII run after the keyword, with a digit or symbol (a bare English word is prose); after a
    key's or token's name (密钥是 X) one that looks random."""
    core = value.rstrip("。、」』.,;:!?)\"'")
    if m.group("k") not in ("パスワード", "暗証番号", "密码", "密碼", "口令", "비밀번호", "패스워드", "비번", "암호"):
        return m.group("np") is None and _random_value_ok(core, m, text)  # a key's name needs its particle
    return len(core) >= 4 and not core.isalpha() and _context_ok(core, m, text) and core.lower() not in _STOPWORDS


# words between a key's name and its value that say the value is something else (the key's id, its file, a commit)
_KEY_MID_NOT_RE = recache.compile(r"(?i)(?<![^\W_])(?:id|ids|commit|sha\d*|hash|digest|fingerprint|checksum|name|file"
                                  r"|path|url|prefix|version|count|length|public|publishable|expir\w*|format|type)(?![^\W_])")


# "the key secret …", "the key I use to encrypt the backups …": words after "key" that say it is a secret one
_KEY_USE_RE = recache.compile(
    r"(?i)\s*(?:secret|\S*(?:\s+\S+){0,5}?\s+(?:to\s+)?(?:en|de)?crypt|\S*(?:\s+\S+){0,5}?\s+sign)")


def _key_prose_ok(value: str, m: re.Match[str], text: str) -> bool:
    """"the <qualifier> key …: X", "el token de … es X": English "key" counts after a word that qualifies it (api,
    master, encryption, a provider's name) or before "secret"; the words between name no id, file or commit; X looks
    random."""
    key, mid = m.group("k").lower(), m.group("mid")
    if _KEY_MID_NOT_RE.search(mid):
        return False
    # the word before (Client-Schlüssel, page-token, RAILS_MASTER_KEY: the word joined to it)
    before = re.findall(r"[^\W_]+", text[max(0, m.start() - 30) : m.start()])
    prev = before[-1].lower() if before else ""
    if prev in _NOT_SECRET_KEY_PAIRS or prev in _NOT_SECRET_KEY_ONLY or prev in ("public", "ssh", "host"):
        return False
    qualified = prev in _KEY_QUALIFIERS or prev in _PROVIDER_WORDS or prev in ("aes", "api", "hmac", "fernet")
    if key == "key" and not (qualified or _KEY_USE_RE.match(mid)):
        return False
    if m.group("kf") is None:  # English names: prose only ("token": "…" is the assignment rules'), a random value
        if text[m.start() - 1 : m.start()] in ("\"", "'", "`") or mid[:1] in ("\"", "'", "`"):
            return False
        if text[m.start() - 1 : m.start()] in ("_", "-", ".") and text[m.end("mid") : m.start("s")].strip() in ":=":
            return False  # HEROKU_KEY = …, app.secret: …: code and config, the assignment rules' to name
        line_start = text.rfind("\n", 0, m.start()) + 1
        if _KEY_MID_NOT_RE.search(text, max(line_start, m.start() - 40), m.start()):
            return False  # "the commit that rotated the token: <sha>", "the public key: …"
        from segue.redact.generic import random_body  # generic imports this module

        core = _unquote(value).rstrip(",;.:!?)")
        return _context_ok(value, m, text) and len(core) >= 8 and random_body(core, 12)
    return _random_value_ok(value, m, text)


# what comes before "password to X" when it says the password was set to X: a verb, then at most two words
_SET_VERB_BEFORE_RE = recache.compile(
    r"(?i)\b(?:chang|reset|set|updat|rotat|switch)\w{0,4}(?:[ \t]{1,16}[\w.@-]{1,30}){0,2}[ \t]{1,16}\Z")


def _set_to_ok(value: str, m: re.Match[str], text: str) -> bool:
    """"I changed the password to X", "reset the admin password to X": the verb is looked for before the keyword
    (the rule matches from the keyword, so sre tries it only there)."""
    return (_SET_VERB_BEFORE_RE.search(text, max(0, m.start() - 80), m.start()) is not None
            and _prose_value_ok(value, m, text))


def _twilio_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Client(sid, 'hex32'): a generic Client( counts only with an AC… account SID or twilio in the text."""
    call = m.group(0)
    return _context_ok(value, m, text) and ("twilio" in call.lower() or "AC" in call or "twilio" in text.lower())


# the first of the well-known accounts Hardhat and Anvil print at start (0xac0974…): documented, public
_DEV_CHAIN_KEYS = ("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80",)


def _hardhat_ok(value: str, m: re.Match[str], text: str) -> bool:
    """accounts: ["0x…"]: a private key unless it is a local dev chain's documented one, or a run of one digit."""
    core = value.lower().removeprefix("0x")
    return core not in _DEV_CHAIN_KEYS and len(set(core)) > 4 and _context_ok(value, m, text)


def _cloudflare_ok(value: str, m: re.Match[str], text: str) -> bool:
    """key = <37 hex>: Cloudflare's Global API Key where Cloudflare (or its X-Auth-Key header, CF_ names) is named."""
    near = text[max(0, m.start() - 300) : m.end() + 100].lower()
    return ("cloudflare" in near or "x-auth-key" in near or "cf_" in near) and _context_ok(value, m, text)


# "here's the password, X": the comma form only after a determiner (not code's f(pw, salt))
_COMMA_BEFORE_RE = recache.compile(r"(?i)\b(?:the|my|our|your|new|its)[ \t]{1,16}(?:[\w-]{1,20}[ \t]{1,16})?\Z")


def _prose_comma_ok(value: str, m: re.Match[str], text: str) -> bool:
    """"the password's X", "here's the password, X": a password in prose, not code."""
    if m.group("p") == "," and _COMMA_BEFORE_RE.search(text, max(0, m.start() - 40), m.start()) is None:
        return False
    core = _unquote(value).rstrip(",;.:!?")
    return not _CODE_RE.match(core) and _prose_value_ok(value, m, text)


_DIRECTIVE_LINE_RE = recache.compile(r"(?m)^[ \t]{0,16}[a-z_]{2,40}[ \t]{1,16}\S[^\n]{0,300}$")


def _directive_ok(value: str, m: re.Match[str], text: str) -> bool:
    """remote_password X alone on its line: a config of directives (another such line) and a password's name."""
    if not _names_secret(m.group("k"), _PW_KEY_WORDS, False) and m.group("k").lower() != "masterauth":
        return False
    core = value.lower()
    if core in _STOPWORDS or core in _STATE_WORDS or _fs_path(value) or not _context_ok(value, m, text):
        return False
    others = [d for d in _DIRECTIVE_LINE_RE.finditer(text) if not d.start() <= m.start() < d.end()]
    return bool(others)


def _totp_ok(value: str, m: re.Match[str], text: str) -> bool:
    """JBSW Y3DP EHPK 3PXP: base32 with digits among the letters (a row of words in capitals is not one)."""
    core = value.replace(" ", "").replace("\t", "")
    return any(c.isdigit() for c in core) and len(set(core)) >= 8 and _context_ok(core, m, text)


# the word before a value with no copula that makes it the password's object, not its value ("senha do Wi-Fi")
_PW_PREPOSITIONS = frozenset({"de", "do", "da", "dos", "das", "del", "di", "della", "dello", "du", "des", "von", "vom",
                              "der", "für", "for", "of", "от", "для", "dla", "van", "voor", "för", "på", "untuk",
                              "của", "cho", "için"})


def _intl_prose_ok(value: str, m: re.Match[str], text: str) -> bool:
    """"пароль от сервера X", "senha do banco: X": right after a preposition the word is what the password is for."""
    before = text[m.start() : m.start("s")].split()
    if len(before) > 1 and before[-1].lower() in _PW_PREPOSITIONS:
        return False
    return _prose_value_ok(value, m, text)


def _htpasswd_ok(value: str, m: re.Match[str], text: str) -> bool:
    """htpasswd takes the password on the command line only with -b."""
    return "b" in m.group("f") and _context_ok(value, m, text)


def _prose_value_ok(value: str, m: re.Match[str], text: str) -> bool:
    """"the password for X is VALUE": a quoted value, or one with a digit or symbol."""
    core = _unquote(value).rstrip(",;.:!?")
    if len(core) < 4 or not _context_ok(value, m, text) or core.lower() in _STOPWORDS:
        return False
    return _quoted(value) or not core.isalpha()


_URL_SECRET_LAST = frozenset({"key", "token", "secret", "signature", "sig", "credential", "credentials", "password",
                              "passwd", "pwd", "pw", "pass", "auth", "apikey"})


def _url_param_ok(value: str, m: re.Match[str], text: str) -> bool:
    """?anyKey=… &x_token=…: the last word of the name is a secret's name, the value is not a plain word."""
    words = key_words(m.group("k"))
    if not words or (words[-1] not in _URL_SECRET_LAST and not pw_word(words[-1])):
        return False
    if words[-1] in ("key", "auth") and len(words) == 1 and not re.search(r"\d", value):
        return False
    if id_key(m.group("k")):
        return False  # page_token=…, cache_key=…
    return _secret_ok(value, m, text)


# last words of environment names that hold where or how a secret is used, not the secret (SSH_AUTH_SOCK,
# AUTH_PROVIDER, GIT_ASKPASS_MAIN, TOKEN_ENDPOINT)
_ENV_NOT_SECRET_LAST = frozenset({"sock", "socket", "directory", "provider", "main", "node", "helper", "program",
                                  "command", "cmd", "host", "port", "server", "region", "user", "username", "email",
                                  "scope", "scopes", "algorithm", "alg", "seconds", "backend", "method", "issuer",
                                  "audience", "days", "hours", "minutes", "ms", "home", "location", "store",
                                  "plugin", "profile", "realm", "domain", "style"})
_ENV_SECRET_WORDS = frozenset({"pat", "accesskey", "privatekey", "secretkey", "apitoken", "authtoken"})


def _env_ok(value: str, m: re.Match[str], text: str) -> bool:
    """NAME=value in an env file or `env` output: the name's words name a secret (not XAUTHORITY, AUTHOR_EMAIL,
    SSH_AUTH_SOCK, NEXT_PUBLIC_…), and the value is not a path, a bracketed stand-in or a made-up phrase."""
    words = key_words(m.group("k"))
    if not words or words[-1] in _ENV_NOT_SECRET_LAST or {"public", "publishable"} & set(words):
        return False
    if not (_names_secret(m.group("k"), _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True)
            or _ENV_SECRET_WORDS & set(words)):
        return False
    core = _unquote(value)
    if value[:1] in "<[{" or _fs_path(core) or _sequence(core):
        return False  # API_TOKEN=<insert token> (the run stops at the blank), paths, 0123456789abcdef…
    return _context_ok(value, m, text)


def _conn_ok(value: str, m: re.Match[str], text: str) -> bool:
    """Password=… in a connection string: not a code expression (os.environ.get(…), None, null)."""
    core = _unquote(value).rstrip(",;")
    return _context_ok(value, m, text) and not _CODE_RE.match(core) and not _fs_path(core)


# CREATE/ALTER USER|ROLE|LOGIN, a database link (CONNECT TO x IDENTIFIED BY), GRANT … IDENTIFIED BY (old MySQL)
_SQL_USER_BEFORE_RE = recache.compile(r"(?i)\b(?:(?:create|alter)\s+(?:(?:public|shared|database)\s+){0,2}"
                                 r"(?:user|role|login|link)|grant|connect\s+to)\b[^;\n]{0,300}\Z")


def _sql_user_ok(value: str, m: re.Match[str], text: str) -> bool:
    """IDENTIFIED BY value, bare: only in a statement that sets a password (prose says "identified by")."""
    return bool(_SQL_USER_BEFORE_RE.search(text, max(0, m.start() - 300), m.start())) and _context_ok(value, m, text)


def _auth_param_ok(value: str, m: re.Match[str], text: str) -> bool:
    """signature=/response=/credential= only inside an Authorization header line."""
    line_start = text.rfind("\n", 0, m.start()) + 1
    return "authorization" in text[max(line_start, m.start() - 600) : m.start()].lower() and _context_ok(value, m, text)


def _bearer_ok(value: str, m: re.Match[str], text: str) -> bool:
    from segue.redact.generic import random_body  # generic imports this module

    core = value.rstrip(".,;")
    return _context_ok(core, m, text) and random_body(core.replace(".", "").replace("-", "").replace("_", ""), 16)
