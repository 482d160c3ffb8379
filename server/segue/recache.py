"""The redactor's compiled patterns kept between processes: a patched listing (segue.patch) redacts a few dozen
summaries, and compiling the ~100 patterns they reach costs more than the redaction (~15 ms of sre's parser and
code generator in pure Python).

`use(cache_dir)` loads `redact-re-<version digest>` (one file per Python version and sre format): for each
(pattern, flags) the arguments `re._compiler.compile` hands to `_sre.compile` (flags, code, groups, group
index). A pattern found there is built by `_sre.compile` directly (which validates the code); any other is
compiled by `re.compile` (the reference), and its arguments, computed by re's own steps, are kept only when
`_sre.compile` of them gives a pattern equal to the reference's (`Pattern.__eq__` compares flags and code);
`save()` writes them (atomically, mode 0600, in Segue's private state directory). A patched listing, a full
one that keeps its answer (warm.Keeper) and every other one-shot CLI command (cli._service: a brief, a resume, a
handoff, a trace) use it, so the first patch after a full listing compiles nothing the
listing compiled. Only the redactor's fixed patterns come here: the exact-value patterns built from secrets are
`re.compile`d (redact/core.py). A cold listing's worker processes inherit `use()` and save what they compiled
after each task (segue.listing). Without `use()` (or with
SEGUE_RE_CACHE=0, or a Python whose re module lacks these internals) every compile is `re.compile`.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

try:
    import _sre
    from re import _compiler, _parser  # type: ignore[attr-defined]
except ImportError:  # pragma: no cover - Python 3.10 names them sre_compile / sre_parse: no cache there
    _sre = None  # type: ignore[assignment]

FORMAT = 1
MAX_ENTRIES = 4096  # (the redactor has a few hundred patterns: a bigger file is not ours, started afresh)
_table: dict[tuple[str, int], Any] | None = None  # None: no cache in use
_new: dict[tuple[str, int], Any] = {}
_path: list[str] = []


def enabled() -> bool:
    v = os.environ.get("SEGUE_RE_CACHE", "1")
    return v.strip().lower() not in ("0", "off", "false", "no")


def _version() -> str:
    from segue.replay import blake2b

    tag = repr((FORMAT, sys.version, sys.maxunicode, getattr(_sre, "MAGIC", None), getattr(_sre, "CODESIZE", None)))
    return blake2b(tag.encode(), digest_size=8).hexdigest()


def _load(path: str) -> dict[tuple[str, int], Any]:
    try:
        with open(path, "rb") as f:
            table = marshal.loads(f.read())
    except (OSError, ValueError, EOFError, TypeError):
        table = {}
    return table if isinstance(table, dict) and len(table) <= MAX_ENTRIES else {}


def use(cache_dir: str) -> None:
    """Answer compiles from the kept patterns in `cache_dir` (an existing directory) from now on."""
    global _table
    if _sre is None or not enabled():
        return
    path = f"{cache_dir}/redact-re-{_version()}"
    if _table is not None and _path == [path]:
        return
    _new.clear()  # (another state directory: what was compiled for the last one stays there)
    _path[:] = [path]
    _table = _load(path)


def compile(pattern: str, flags: int = 0) -> re.Pattern[str]:
    table = _table
    if table is None:
        return re.compile(pattern, flags)
    key = (pattern, int(flags))  # (a RegexFlag is an int marshal cannot keep)
    args = table.get(key)
    if args is not None:
        try:
            return _sre.compile(pattern, *args)  # type: ignore[no-any-return]
        except Exception:  # damaged: compiled again below, and kept afresh
            table.pop(key, None)
    compiled = re.compile(pattern, flags)
    found = _args(pattern, flags)
    if found is not None and len(table) + len(_new) < MAX_ENTRIES:
        try:
            same = _sre.compile(pattern, *found) == compiled
        except Exception:
            same = False
        if same:
            _new[key] = found
    return compiled


def _args(pattern: str, flags: int) -> tuple[Any, ...] | None:
    """What re._compiler.compile passes to _sre.compile after the pattern (its own steps, in its order)."""
    try:
        p = _parser.parse(pattern, flags)
        code = [int(c) for c in _compiler._code(p, flags)]  # (sre's named opcodes are ints marshal cannot keep)
        groupindex = dict(p.state.groupdict)
        indexgroup: list[str | None] = [None] * p.state.groups
        for k, i in groupindex.items():
            indexgroup[i] = k
        return (int(flags | p.state.flags), code, p.state.groups - 1, groupindex, tuple(indexgroup))
    except Exception:
        return None


def save() -> None:
    """Write the patterns compiled since `use()` beside the kept ones (nothing when none are new), and beside
    what other processes wrote meanwhile (a cold listing's workers each save theirs, the listing after them)."""
    if _table is None or not _new or not _path:
        return
    path = _path[0]
    merged = _load(path)
    merged.update(_table)
    merged.update(_new)
    _table.update(_new)
    _new.clear()
    if len(merged) > MAX_ENTRIES:
        merged = _table
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as w:
            w.write(marshal.dumps(merged))
        os.replace(tmp, path)
    except Exception:  # a cache: the next process compiles again
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def reset() -> None:
    """Back to plain re.compile (tests)."""
    global _table
    _table = None
    _new.clear()
    _path.clear()
