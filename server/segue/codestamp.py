"""A stamp of this Segue's own code, for the caches that keep what its readers made of the stores (the session
index, the search index): they are rebuilt when it changes, so an upgrade's reader fixes reach the sessions
whose files did not change (`__version__` does not move between commits).

The stamp is of the modules' contents, not their times, so two installs of the same code (the CLI's and the
editor's bundled server, sharing one state directory) agree. Reading every module costs ~10 ms, so the state
directory keeps the last stamp beside the modules' stat signatures (`cache/code-stamp`), and a process whose
modules' signatures match it takes that stamp (~1 ms)."""

from __future__ import annotations

import contextlib
import os

_ROOT = os.path.dirname(os.path.abspath(__file__))
FILE_NAME = "code-stamp"
_memo: dict[str, str] = {}


def _modules() -> list[str]:
    out: list[str] = []
    for top, dirs, files in os.walk(_ROOT):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        out += [os.path.join(top, n) for n in sorted(files) if n.endswith(".py")]
    return out


def _signatures(paths: list[str]) -> str:
    """Every module's path, size, time and inode, one line each (compared as text: no digest to import)."""
    out = []
    for p in paths:
        try:
            st = os.stat(p)
            out.append(f"{p}\0{st.st_size}\0{st.st_mtime_ns}\0{st.st_ino}")
        except OSError:
            out.append(f"{p}\0-")
    return "\n".join(out)


def _contents(paths: list[str]) -> str:
    try:  # hashlib's blake2b without hashlib loading OpenSSL (~4 MB and ~4 ms), as segue.replay takes it
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - a Python built without it
        from hashlib import blake2b

    h = blake2b(digest_size=8)
    for p in paths:
        try:
            with open(p, "rb") as f:
                data = f.read()
        except OSError:  # unreadable: its name alone (a stamp never fails)
            data = b""
        rel = os.path.relpath(p, _ROOT).replace(os.sep, "/")
        h.update(f"{rel}\0{len(data)}\0".encode())
        h.update(data)
    return h.hexdigest()


def stamp(cache_dir: str | os.PathLike[str] | None = None) -> str:
    """The digest of every module of the package (relative path and bytes), once per process; `cache_dir` (the
    state directory's `cache/`, private) keeps it for the next process with the same modules."""
    if "stamp" in _memo:
        return _memo["stamp"]
    paths = _modules()
    sig = _signatures(paths)
    kept = os.path.join(os.fspath(cache_dir), FILE_NAME) if cache_dir is not None else None
    if kept is not None:
        try:
            with open(kept, encoding="utf-8", errors="surrogateescape") as f:
                old_stamp, old_sig = f.read().split("\n", 1)
            if old_sig == sig and len(old_stamp) == 16:
                _memo["stamp"] = old_stamp
                return old_stamp
        except (OSError, ValueError):  # none kept yet, or not ours: computed below
            pass
    value = _contents(paths)
    _memo["stamp"] = value
    if kept is not None:
        tmp = f"{kept}.{os.getpid()}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as f:
                f.write(f"{value}\n{sig}")
            os.replace(tmp, kept)
        except OSError:  # a read-only or full state directory: computed again next time
            with contextlib.suppress(OSError):
                os.unlink(tmp)
    return value
