"""Replaying a probe (segue.probe): re-make every recorded observation and compare. Kept apart from the
recording so a CLI quick answer (segue.warm, segue.search.fast) imports only os, marshal and blake2b."""

from __future__ import annotations

import builtins
import marshal
import os

from segue import alongside

TYPE_CHECKING = False  # not typing's: importing typing costs a quick answer several milliseconds
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

try:  # hashlib's own blake2b, without hashlib loading OpenSSL (~4 ms of a CLI query)
    from _blake2 import blake2b
except ImportError:  # pragma: no cover - a Python built without it
    from hashlib import blake2b

# the real functions, bound before any recording patches the os module
_STAT, _READLINK, _REALPATH = os.stat, os.readlink, os.path.realpath


def _sig(st: os.stat_result) -> tuple[int, ...]:
    # what the readers' fingerprints hold (size, mtime), plus what makes it another file; not the ctime, which a
    # restore with the old mtime changes too (and the full path's fingerprints would call that unchanged)
    return (st.st_mode, st.st_ino, st.st_size, st.st_mtime_ns)


def _stat_sig(path: str, follow: bool) -> Any:
    try:
        return _sig(_STAT(path, follow_symlinks=follow))
    except OSError as e:
        return e.errno


def _dir_sig(path: str) -> Any:
    return _stat_sig(path, True)


def _real_sig(path: str) -> Any:
    try:
        return _REALPATH(path)
    except (OSError, ValueError):
        return None


READ_MAX = 64 * 1024  # a file discovery reads whole to decide something (bigger: the probe is unusable)
_OPEN = builtins.open  # bound before any recording patches it


def _read_sig(path: str) -> Any:
    """A digest of a small file's content (None: larger than READ_MAX), or the errno that opening it gave."""
    try:
        with _OPEN(path, "rb") as f:
            data = f.read(READ_MAX + 1)
    except OSError as e:
        return e.errno
    if len(data) > READ_MAX:
        return None
    return blake2b(data, digest_size=16).hexdigest()


def _link_sig(path: str) -> Any:
    try:
        return _READLINK(path)
    except OSError as e:
        return e.errno


def env_digest(home: str, environ: Mapping[str, str], names: list[str]) -> str:
    h = blake2b(digest_size=16)
    h.update(os.fsencode(home) + b"\0")
    for n in names:
        v = environ.get(n)
        h.update(n.encode("utf-8", "surrogatepass") + b"=" +
                 (b"\1" + v.encode("utf-8", "surrogatepass") if v is not None else b"\0") + b"\0")
    return h.hexdigest()


def _same(stats: Any, dirs: Any, links: Any, real: Any, reads: Any) -> bool:
    for (path, follow), sig in stats:
        if _stat_sig(path, follow) != sig:
            return False
    for path, sig in dirs:
        if _dir_sig(path) != sig:
            return False
    return (all(_link_sig(path) == sig for path, sig in links)
            and all(_real_sig(path) == sig for path, sig in real)
            and all(_read_sig(path) == sig for path, sig in reads))


def moved_files(parts: Any) -> set[str] | None:
    """The regular files whose size or mtime moved in place (same mode, same inode) among one probe group's
    observations (`groups_of`' parts); None when anything else would be seen otherwise now: a path appeared,
    went, was replaced or changed type, a directory's listing, a link, a resolved path or a read file's content.
    What segue.patch needs to keep a runtime's sources without discovering them again."""
    stats, dirs, links, real, reads = parts
    for path, sig in dirs:  # first: a listing that changed (a file added or gone) is the usual refusal
        if _dir_sig(path) != sig:
            return None
    out: set[str] = set()
    for (path, follow), sig in stats:
        now = _stat_sig(path, follow)
        if now != sig:
            if type(sig) is not tuple or type(now) is not tuple or sig[:2] != now[:2] \
                    or (sig[0] & 0o170000) != 0o100000:  # (S_ISREG, without importing stat)
                return None
            out.add(path)
    if not (all(_link_sig(path) == sig for path, sig in links)
            and all(_real_sig(path) == sig for path, sig in real)
            and all(_read_sig(path) == sig for path, sig in reads)):
        return None
    return out


def groups_of(blob: bytes) -> Any:
    """(env digest, names, [(group, stats, dirs, links, real, reads)…]) of a `Recording.dump_groups()` blob;
    None when damaged."""
    try:
        digest, names, groups = marshal.loads(blob)
        return digest, names, [(g, *parts) for g, *parts in groups]
    except (ValueError, EOFError, TypeError):
        return None


def changed_groups(blob: bytes, home: str, environ: Mapping[str, str], stop: bool = False) -> set[str] | None:
    """The groups of a `Recording.dump_groups()` probe that would see something else now (empty: none); None
    when the environment differs or the blob is damaged. `stop`: at the first changed group."""
    return changed_in(groups_of(blob), home, environ, stop)


# From how many plain stats a replay shares them with a forked child (segue.alongside): a fork costs ~1-2 ms
SPLIT_MIN = 2000


def changed_in(found: Any, home: str, environ: Mapping[str, str], stop: bool = False) -> set[str] | None:
    """changed_groups of a probe parsed already (`groups_of`: None for a damaged one). A large probe's stats
    are shared with a forked child, half of every group's each: a group changed when either half did. `stop`:
    each process stops at its first changed group (then the answer holds one or two of them)."""
    if found is None:
        return None
    digest, names, groups = found
    try:
        if env_digest(home, environ, names) != digest:
            return None
        wait = None
        if sum(len(parts[0]) for _g, *parts in groups) >= SPLIT_MIN:
            wait = alongside.start_value(lambda: _changed(groups, stop, 2))
        try:
            out = _changed(groups, stop, 0 if wait is None else 1)
        finally:
            theirs = wait() if wait is not None else set()
        if not isinstance(theirs, set):
            return None  # the child failed: nothing is known of its half
        return out | theirs
    except (ValueError, TypeError):
        return None


def _changed(groups: Any, stop: bool, part: int) -> set[str]:
    """The groups whose observations differ now. part 0: all of them; 1: the first half of each group's stats
    and every other observation; 2: the second half of each group's stats (what a child replays)."""
    out: set[str] = set()
    for g, stats, dirs, links, real, reads in groups:
        half = len(stats) // 2
        if part == 2:
            same = _same(stats[half:], (), (), (), ())
        else:
            same = _same(stats[:half] if part == 1 else stats, dirs, links, real, reads)
        if not same:
            out.add(g)
            if stop:
                break
    return out


def unchanged(blob: bytes, home: str, environ: Mapping[str, str]) -> bool:
    """Would the recorded pass see exactly the same now (same environment, every path the same)?"""
    try:
        digest, names, stats, dirs, links, real, reads = marshal.loads(blob)
    except (ValueError, EOFError, TypeError):
        return False
    if env_digest(home, environ, names) != digest:
        return False
    return _same(stats, dirs, links, real, reads)
