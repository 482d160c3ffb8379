"""Which redaction a session's indexed text went through, so a query can tell whether redacting it again could
change anything without building a Redactor (importing and compiling the rules costs a CLI query ~60 ms).

Text is redacted before it is stored, by the process that indexed it. A process that shows a snippet redacts
it again because it may know secrets the indexing one did not: the Redactor's exact values are the secret-named
environment variables of the process (segue.redact: `_env_values`). The rules themselves are the same code.
So each session row carries `redacted_by`: a salted digest of (the redaction code, those exact values). A
query whose own digest is the same would apply the very redaction the text already went through, and skips
the second pass; any other digest, or '' (unknown, mixed), redacts again as before.

The query side must compute its digest without importing segue.redact. The indexing side therefore stores,
next to the rule code's digest, how the Redactor picks exact values (the name pattern and minimum length), and
only after checking that its own Redactor's exact values are exactly what that recipe gives (`_encodings` of
each value): a positive match, or '' and no shortcut. SEGUE_SEARCH_REDACT_ONCE=0 turns the shortcut off.
"""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Mapping

from segue import __version__

TYPE_CHECKING = False  # not typing's: a CLI query imports this module
if TYPE_CHECKING:
    from typing import Any

try:  # hashlib's own blake2b, without hashlib loading OpenSSL (~4 ms of a CLI query)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b


def enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_REDACT_ONCE", "1") != "0"


def rules_digest() -> str | None:
    """The redaction code as this process would run it (every module of segue.redact, and the Python)."""
    # os.path, not pathlib (~4 ms of a CLI query): Path(__file__).resolve().parent.parent / "redact"
    d = os.path.join(os.path.dirname(os.path.dirname(os.path.realpath(__file__))), "redact")
    h = blake2b(digest_size=16)
    h.update(f"{sys.version}\0{__version__}\0".encode())
    try:
        names = sorted(n for n in os.listdir(d) if _py_suffix(n))
        if not names:
            return None
        for n in names:
            with open(os.path.join(d, n), "rb") as f:
                h.update(n.encode() + b"\0" + f.read() + b"\0")
    except OSError:
        return None
    return h.hexdigest()


def _py_suffix(name: str) -> bool:
    """Path(name).suffix == ".py" for a file name."""
    dot = name.rfind(".")
    return dot > 0 and name[dot:] == ".py"


def _digest(salt: str, recipe: dict[str, Any], environ: Mapping[str, str]) -> str:
    pat = re.compile(recipe["pattern"], recipe["flags"])
    values = sorted({v for k, v in environ.items() if pat.search(k) and len(v) >= recipe["min"]})
    h = blake2b(key=bytes.fromhex(salt), digest_size=16)
    h.update(json.dumps([recipe, values], sort_keys=True).encode("utf-8", "surrogatepass"))
    return h.hexdigest()


def writer_digest(redactor: Any, environ: Mapping[str, str] | None, salt: str | None) -> tuple[str, str | None]:
    """(redacted_by for text this redactor redacts, the recipe as JSON to store) or ('', None) when unsure."""
    if not salt or not enabled():
        return "", None
    try:
        from segue.redact import core
        from segue.redact.common import _ENV_NAME_RE, _MIN_EXACT

        env = dict(os.environ if environ is None else environ)
        recipe = {"rules": rules_digest(), "pattern": _ENV_NAME_RE.pattern, "flags": int(_ENV_NAME_RE.flags),
                  "min": int(_MIN_EXACT)}
        if recipe["rules"] is None:
            return "", None
        pat = re.compile(recipe["pattern"], recipe["flags"])
        values = {v for k, v in env.items() if pat.search(k) and len(v) >= recipe["min"]}
        expected: set[str] = set()
        for v in values:
            expected |= core._encodings(v)
        if set(redactor._exact) != expected:
            return "", None  # exact values from elsewhere (minted tokens): a query redacts again
        return _digest(salt, recipe, env), json.dumps(recipe, sort_keys=True)
    except Exception:  # the redactor's internals moved: redact twice, as before
        return "", None


def reader_digest(recipe_json: str | None, salt: str | None, environ: Mapping[str, str]) -> str | None:
    """This process's digest, by the stored recipe, when the redaction code is still the one it describes."""
    if not recipe_json or not salt or not enabled():
        return None
    try:
        recipe = json.loads(recipe_json)
        if recipe.get("rules") != rules_digest():
            return None
        return _digest(salt, recipe, environ)
    except (ValueError, TypeError, KeyError, re.error):
        return None
