"""The search side of segue.probe: what discovery looked at, packed for a CLI query to replay (segue.search.fast).
Set SEGUE_SEARCH_PROBE=0 to never use one.

A query replays every observation on every run, so the form is chosen for the replay: the paths that were
stat'ed and found (following symlinks) and the directories that were listed are byte strings grouped by
directory (a prefix and its NUL-joined names: a third of the bytes to read), with one digest of the signatures
of each of CHUNKS consecutive slices of them (so a forked child can replay some while this process goes on:
`Replay`). A stat that gave the same answer as a directory's listing signature (the same call, `os.stat(path)`)
is kept once. The replay is one `os.stat` per path in a comprehension and one digest to compare per slice; the
rest (an lstat, a stat that failed with its errno, a symlink read, a realpath, a small file's content) is
replayed one by one as segue.replay does. Every observation of the recording is still made: which ones are
necessary is the recording's business (an appended transcript changes only its own stat:
tests/test_search_fast.py proves the next query searches it); this form only makes each one cheaper to check.
"""

from __future__ import annotations

import marshal
import operator
import os
import sys

from segue import alongside
from segue.replay import (
    _STAT,
    READ_MAX,
    _same,
    blake2b,
    env_digest,
)
from segue.replay import unchanged as unchanged

TYPE_CHECKING = False  # not typing's: a CLI query imports only the replay half (os, marshal, blake2b)
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any, TypeVar

    from segue.probe import Recording

    T = TypeVar("T")

# and, through __getattr__ on first use, Recording and recording
__all__ = ["READ_MAX", "_STAT", "enabled", "env_digest", "fresh", "pack", "unchanged"]

TAG = "segue-search-probe/4"  # a probe of another form (an older Segue's) is not fresh: the full path records anew


def __getattr__(name: str) -> Any:
    if name in ("Recording", "recording"):  # the recording half: only the full path records
        from segue import probe

        return getattr(probe, name)
    raise AttributeError(name)


# replay._sig as one C call (the same tuple: tests/test_search_fast.py), not a Python frame per path
_SIG = operator.attrgetter("st_mode", "st_ino", "st_size", "st_mtime_ns")


def enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_PROBE", "1") != "0"


# Probes this process has replayed and found stale: a CLI search asks up to three times (the quick answer, the
# CLI's own try, the service's freshness check) and the answer cannot turn fresh in between, so the later asks
# take the full path at once. A mark can only ever send a caller down that (correct) path; storing a probe forgets
# every mark (a long-lived server may store the very same probe again). SEGUE_SEARCH_STALE_MARKS=0: none kept.
_STALE: set[bytes] = set()


def known_stale(blob: bytes) -> bool:
    return blob in _STALE


def mark_stale(blob: bytes) -> None:
    if os.environ.get("SEGUE_SEARCH_STALE_MARKS", "1") != "0":
        _STALE.add(blob)


def forget_marks() -> None:
    _STALE.clear()


def _sigs_digest(sigs: list[tuple[int, ...]]) -> bytes:
    # marshal version 2 has no back-references: the same values give the same bytes, whatever their identity
    return blake2b(marshal.dumps(sigs, 2), digest_size=16).digest()


def pack(rec: Recording, home: str, environ: Mapping[str, str]) -> bytes | None:
    """The recording in the replay's form (None when unusable, as Recording.dump)."""
    merged = rec.merged() if rec.usable else None  # (every group's observations: one per runtime's discovery)
    if merged is None:
        return None
    rec_stats, rec_dirs, rec_links, rec_real, rec_reads = merged
    found: dict[str, tuple[int, ...]] = {}
    stats, dirs = [], []
    for (path, follow), sig in rec_stats.items():
        if follow and isinstance(sig, tuple):
            if found.setdefault(path, sig) != sig:
                return None  # two answers for one path: no replay can ever match both
        else:
            stats.append(((path, follow), sig))
    for path, sig in rec_dirs.items():
        if isinstance(sig, tuple):
            if found.setdefault(path, sig) != sig:
                return None
        else:
            dirs.append((path, sig))
    # by directory: a path is its directory's prefix + its name; each group's signatures in the same order, so
    # that the paths' order (group after group, as `_paths` reads them back) needs no lookup per path
    groups: dict[bytes, tuple[list[bytes], list[tuple[int, ...]]]] = {}
    enc, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()  # (os.fsencode's, without a call)
    for p, sig in sorted(found.items()):
        b = p.encode(enc, errors)
        cut = b.rfind(b"/") + 1
        if b"\0" in b:
            return None
        group = groups.get(b[:cut])
        if group is None:
            group = groups[b[:cut]] = ([], [])
        group[0].append(b[cut:])
        group[1].append(sig)
    packed = [(prefix, b"\0".join(names)) for prefix, (names, _sigs) in groups.items()]
    sigs = [sig for _names, group_sigs in groups.values() for sig in group_sigs]
    names = sorted(rec.names)
    digests = tuple(_sigs_digest(sigs[_cut(len(sigs), i):_cut(len(sigs), i + 1)]) for i in range(CHUNKS))
    return marshal.dumps((TAG, env_digest(home, environ, names), names, packed, len(sigs), digests,
                          sorted(stats), sorted(dirs),
                          sorted(rec_links.items()), sorted(rec_real.items()), sorted(rec_reads.items())))


def _paths(packed: list[tuple[bytes, bytes]]) -> list[bytes]:
    return [prefix + name for prefix, names in packed for name in names.split(b"\0")]


CHUNKS = 8  # the slices of the stat'ed paths, a digest each


def _cut(n: int, i: int) -> int:
    return n * i // CHUNKS


def fresh(blob: bytes, home: str, environ: Mapping[str, str]) -> bool:
    """Would the recorded pass see exactly the same now? Every observation is made again and compared; a blob
    of any other form or damaged is never fresh."""
    r = Replay.load(blob, home, environ)
    return r is not None and r.fresh()


class Replay:
    """A probe decoded for its replay (None from `load`: another form, damaged, or another environment)."""

    __slots__ = ("_digests", "_rest", "paths")

    def __init__(self, paths: list[bytes], digests: tuple[bytes, ...], rest: tuple[Any, ...]) -> None:
        self.paths, self._digests, self._rest = paths, digests, rest

    @classmethod
    def load(cls, blob: bytes, home: str, environ: Mapping[str, str]) -> Replay | None:
        try:
            tag, digest, names, packed, count, digests, stats, dirs, links, real, reads = marshal.loads(blob)
            if tag != TAG or env_digest(home, environ, names) != digest:
                return None
            paths = _paths(packed)
            if (len(paths) != count or not isinstance(digests, tuple) or len(digests) != CHUNKS
                    or not all(isinstance(d, bytes) for d in digests)):
                return None
        except (ValueError, EOFError, TypeError, AttributeError):
            return None
        return cls(paths, digests, (stats, dirs, links, real, reads))

    def fresh(self, child: int = 0) -> bool:
        """Every observation made again: the last `child` slices of the paths by a forked child meanwhile
        (segue.alongside; here after the others where it cannot fork), the rest here."""
        return self.when_fresh(child, lambda: True) is True

    def when_fresh(self, child: int, work: Callable[[], T]) -> T | None:
        """work() run here after this process's share of the replay, while a forked child replays the last
        `child` slices; its result when every observation holds, else None."""
        wait = self.start(child)
        try:
            res = work() if self.mine(child if wait is not None else 0) else None
        finally:
            theirs = wait() if wait is not None else True
        return res if theirs else None

    def start(self, child: int) -> Callable[[], bool] | None:
        """The last `child` slices (and, with every slice, the other observations) begun in a forked child; its
        wait, or None (nothing started: then `mine(0)` is the whole replay)."""
        if not 0 < child <= CHUNKS:
            return None
        return alongside.start(lambda: self.same(CHUNKS - child, CHUNKS) and (child < CHUNKS or self.others()))

    def mine(self, child: int) -> bool:
        """What a child given `child` slices (started) leaves to this process."""
        return self.same(0, CHUNKS - child) and (child == CHUNKS or self.others())

    def same(self, lo: int, hi: int) -> bool:
        """Do the paths of slices lo..hi-1 give their recorded signatures (one stat each)?"""
        n = len(self.paths)
        for i in range(lo, hi):
            try:  # the recording's own signature, one stat per path
                now = list(map(_SIG, map(_STAT, self.paths[_cut(n, i):_cut(n, i + 1)])))
            except (OSError, ValueError, TypeError):
                return False  # a path that was there is gone (or unreadable): changed
            if _sigs_digest(now) != self._digests[i]:
                return False
        return True

    def others(self) -> bool:
        """The observations that are not a plain stat: lstats, failed stats, listings, links, realpaths, reads."""
        try:
            return _same(*self._rest)
        except (ValueError, TypeError):
            return False
