"""The search side of segue.probe: what discovery looked at, packed for a CLI query to replay (segue.search.fast).
Set SEGUE_SEARCH_PROBE=0 to never use one.

A query replays every observation on every run, so the form is chosen for the replay: the paths that were
stat'ed and found (following symlinks) and the directories that were listed are byte strings grouped by
directory (a prefix and its NUL-joined names: a third of the bytes to read), with one digest of all their
signatures. A stat that gave the same answer as a directory's listing signature (the same call, `os.stat(path)`)
is kept once. The replay is one `os.stat` per path in a comprehension and one digest to compare; the rest (an
lstat, a stat that failed with its errno, a symlink read, a realpath, a small file's content) is replayed one by
one as segue.replay does. Every observation of the recording is still made: which ones are necessary is the
recording's business (an appended transcript changes only its own stat: tests/test_search_fast.py proves the
next query searches it); this form only makes each one cheaper to check.
"""

from __future__ import annotations

import marshal
import operator
import os

from segue.replay import (
    _STAT,
    READ_MAX,
    _dir_sig,
    _link_sig,
    _read_sig,
    _real_sig,
    _stat_sig,
    blake2b,
    env_digest,
)
from segue.replay import unchanged as unchanged

TYPE_CHECKING = False  # not typing's: a CLI query imports only the replay half (os, marshal, blake2b)
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

    from segue.probe import Recording

# and, through __getattr__ on first use, Recording and recording
__all__ = ["READ_MAX", "_STAT", "enabled", "env_digest", "fresh", "pack", "unchanged"]

TAG = "segue-search-probe/3"  # a probe of another form (an older Segue's) is not fresh: the full path records anew


def __getattr__(name: str) -> Any:
    if name in ("Recording", "recording"):  # the recording half: only the full path records
        from segue import probe

        return getattr(probe, name)
    raise AttributeError(name)


# replay._sig as one C call (the same tuple: tests/test_search_fast.py), not a Python frame per path
_SIG = operator.attrgetter("st_mode", "st_ino", "st_size", "st_mtime_ns")


def enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_PROBE", "1") != "0"


def _sigs_digest(sigs: list[tuple[int, ...]]) -> bytes:
    # marshal version 2 has no back-references: the same values give the same bytes, whatever their identity
    return blake2b(marshal.dumps(sigs, 2), digest_size=16).digest()


def pack(rec: Recording, home: str, environ: Mapping[str, str]) -> bytes | None:
    """The recording in the replay's form (None when unusable, as Recording.dump)."""
    if not rec.usable:
        return None
    found: dict[str, tuple[int, ...]] = {}
    stats, dirs = [], []
    for (path, follow), sig in rec.stats.items():
        if follow and isinstance(sig, tuple):
            if found.setdefault(path, sig) != sig:
                return None  # two answers for one path: no replay can ever match both
        else:
            stats.append(((path, follow), sig))
    for path, sig in rec.dirs.items():
        if isinstance(sig, tuple):
            if found.setdefault(path, sig) != sig:
                return None
        else:
            dirs.append((path, sig))
    groups: dict[bytes, list[bytes]] = {}  # by directory: a path is its directory's prefix + its name
    for p in sorted(found):
        b = os.fsencode(p)
        cut = b.rfind(b"/") + 1
        if b"\0" in b:
            return None
        groups.setdefault(b[:cut], []).append(b[cut:])
    packed = [(prefix, b"\0".join(names)) for prefix, names in groups.items()]
    paths = _paths(packed)
    names = sorted(rec.names)
    return marshal.dumps((TAG, env_digest(home, environ, names), names, packed, len(paths),
                          _sigs_digest([found[os.fsdecode(p)] for p in paths]), sorted(stats), sorted(dirs),
                          sorted(rec.links.items()), sorted(rec.real.items()), sorted(rec.reads.items())))


def _paths(packed: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [prefix + name for prefix, names in packed for name in names.split(b"\0")]


def fresh(blob: bytes, home: str, environ: Mapping[str, str]) -> bool:
    """Would the recorded pass see exactly the same now? Every observation is made again and compared; a blob
    of any other form or damaged is never fresh."""
    try:
        tag, digest, names, packed, count, sigs, stats, dirs, links, real, reads = marshal.loads(blob)
        if tag != TAG or env_digest(home, environ, names) != digest:
            return False
        paths = _paths(packed)
    except (ValueError, EOFError, TypeError, AttributeError):
        return False
    if len(paths) != count:
        return False
    try:
        now = list(map(_SIG, map(_STAT, paths)))  # the recording's own signature, one stat per path
    except (OSError, ValueError, TypeError):
        return False  # a path that was there is gone (or unreadable): changed
    if _sigs_digest(now) != sigs:
        return False
    try:
        return (all(_stat_sig(path, follow) == sig for (path, follow), sig in stats)
                and all(_dir_sig(path) == sig for path, sig in dirs)
                and all(_link_sig(path) == sig for path, sig in links)
                and all(_real_sig(path) == sig for path, sig in real)
                and all(_read_sig(path) == sig for path, sig in reads))
    except (ValueError, TypeError):
        return False
