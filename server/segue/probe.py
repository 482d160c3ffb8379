"""What the readers' discovery looked at, so a later process can tell cheaply that nothing it saw changed.

Shared by the CLI's quick answers: a search query (segue.search.fast) and a warm listing (segue.warm).

`Reader.sources()` is stat-only by contract: it lists directories, stats files and reads environment variables
(through `Env`). While a full pass runs, `recording()` notes every one of those observations: each `os.stat` /
`os.lstat` (path, follow flag, result), each directory listed by `os.scandir` / `os.listdir` (its mtime and
inode: an entry added, removed or renamed changes them), each `os.readlink`, and each environment variable
looked up. A later process re-makes exactly these observations (`unchanged()`, about 1-2 µs per path) and, when
every one gives the same answer, knows that the same pass would yield the same sources with the same
fingerprints, without importing a reader.

A small regular file opened for reading (Gemini's `.project_root`: which project a folder is) is noted by a
digest of its content, re-read and compared the same way. A positive match only: a pass that did anything
else the recorder cannot replay (opened a file to write, or one over READ_MAX, listed the whole environment)
records an unusable probe, and any difference at all sends the caller back to the full pass.
Each user has its own switch (SEGUE_SEARCH_PROBE=0, SEGUE_WARM=0).

A recording can start paused (`recording(paused=True)`): then only what runs inside `observe()` is noted, so a
full listing records its discovery and live checks while the summaries it reads in between (which open files
whole) neither spoil the probe nor cost anything to observe. `observe()` is a no-op when nothing records.

`observe(group)` notes into a named group (the listing: one per runtime's discovery, one per runtime's live
checks, "" for the rest): `dump()` is every group merged, `dump_groups()` keeps them apart, so a later replay
can tell which runtime changed (segue.patch re-reads only that one).
"""

from __future__ import annotations

import builtins
import contextlib
import marshal
import os
import threading
from collections.abc import Iterator, Mapping

from segue.replay import (  # noqa: F401 - the replay half, re-exported
    _STAT,
    READ_MAX,
    _dir_sig,
    _link_sig,
    _read_sig,
    _sig,
    env_digest,
    unchanged,
)

TYPE_CHECKING = False  # not typing's: a CLI query's --dir imports this module (segue.within)
if TYPE_CHECKING:
    from typing import Any

_LOCK = threading.Lock()  # one recording at a time: the patches are process-wide
_ACTIVE: list[Recording] = []  # the recording under way (at most one), for observe()


class _Env(Mapping[str, str]):
    """An environment mapping that notes every name looked up (a full listing makes the probe unusable)."""

    def __init__(self, base: Mapping[str, str], rec: Recording) -> None:
        self._base, self._rec = base, rec

    def __getitem__(self, name: str) -> str:
        self._rec.names.add(name)
        return self._base[name]

    def get(self, name: str, default: Any = None) -> Any:  # type: ignore[override]
        self._rec.names.add(name)
        return self._base.get(name, default)

    def __contains__(self, name: object) -> bool:
        if isinstance(name, str):
            self._rec.names.add(name)
        return name in self._base

    def __iter__(self) -> Iterator[str]:
        self._rec.usable = False
        return iter(self._base)

    def __len__(self) -> int:
        self._rec.usable = False
        return len(self._base)


class Recording:
    def __init__(self) -> None:
        self.stats: dict[tuple[str, bool], Any] = {}
        self.dirs: dict[str, Any] = {}
        self.links: dict[str, Any] = {}
        self.real: dict[str, Any] = {}  # os.path.realpath results (its own lstat of every ancestor is not kept)
        self.reads: dict[str, Any] = {}  # small files opened for reading: their content's digest
        self.group = ""
        self._groups: dict[str, tuple[dict[Any, Any], ...]] = {"": (self.stats, self.dirs, self.links, self.real,
                                                                     self.reads)}
        self.quiet = False
        self.owner = 0
        self.names: set[str] = set()
        self.usable = True

    def env(self, base: Mapping[str, str]) -> Mapping[str, str]:
        return _Env(base, self)

    def select(self, group: str) -> str:
        """Note what follows into `group` (created empty); returns the group selected before."""
        prev = self.group
        sets = self._groups.get(group)
        if sets is None:
            sets = self._groups[group] = ({}, {}, {}, {}, {})
        self.stats, self.dirs, self.links, self.real, self.reads = sets  # type: ignore[assignment]
        self.group = group
        return prev

    def seed(self, group: str, parts: Any, fresh: set[str]) -> list[Any]:
        """Start `group` with a kept probe group's observations (sorted item lists), leaving out the stats of
        the `fresh` paths: the next stat of one of those is noted as it is then (the others keep what was seen
        before, which a replay has just found unchanged). Returns the stat keys left out."""
        prev = self.select(group)
        stats, dirs, links, real, reads = parts
        self.stats.update((k, v) for k, v in stats if k[0] not in fresh)
        out = [k for k, _v in stats if k[0] in fresh]
        self.dirs.update(dirs)
        self.links.update(links)
        self.real.update(real)
        self.reads.update(reads)
        self.select(prev)
        return out

    def merged(self) -> tuple[dict[Any, Any], ...] | None:
        """Every group's observations in one (None when two groups saw one path differently: it changed
        during the pass)."""
        out: tuple[dict[Any, Any], ...] = ({}, {}, {}, {}, {})
        for sets in self._groups.values():
            for into, part in zip(out, sets, strict=True):
                for k, v in part.items():
                    if into.setdefault(k, v) != v:
                        return None
        return out

    def dump_groups(self, home: str, environ: Mapping[str, str]) -> bytes | None:
        """The probe as bytes with its groups apart (None when unusable); read by replay.changed_groups."""
        if not self.usable:
            return None
        groups = sorted((g, *(sorted(d.items()) for d in sets)) for g, sets in self._groups.items())
        # marshal's version 2 (no references): the same values, without its note of every object written (a
        # cold listing makes this blob at its peak: 8,000 sessions' stats, ~1 MB of notes)
        return marshal.dumps((env_digest(home, environ, sorted(self.names)), sorted(self.names), groups), 2)

    def dump(self, home: str, environ: Mapping[str, str]) -> bytes | None:
        """The probe as bytes (None when unusable): the observations and the environment they depend on."""
        merged = self.merged() if self.usable else None
        if merged is None:
            return None
        stats, dirs, links, real, reads = merged
        return marshal.dumps((env_digest(home, environ, sorted(self.names)), sorted(self.names),
                              sorted(stats.items()), sorted(dirs.items()), sorted(links.items()),
                              sorted(real.items()), sorted(reads.items())))


@contextlib.contextmanager
def recording(paused: bool = False) -> Iterator[Recording]:
    """Patch os.stat/lstat/scandir/listdir/readlink (and make any open() spoil the probe) for one pass;
    `paused`: observe only inside `observe()`."""
    rec = Recording()
    with _LOCK:
        saved = (os.stat, os.lstat, os.scandir, os.listdir, os.readlink, os.open, builtins.open, os.path.realpath)
        real_stat, real_lstat, real_scandir, real_listdir, real_readlink, real_osopen, real_open, real_rp = saved
        owner = rec.owner = threading.get_ident()

        def passing() -> bool:
            # other threads (a language server's) go straight through: only this pass is observed, and none of
            # its observations can be hidden by another thread's call
            return rec.quiet or threading.get_ident() != owner

        def key(path: Any) -> str | None:
            if isinstance(path, int) or path is None:  # a descriptor: nothing a later process can re-stat
                rec.usable = False
                return None
            return os.fsdecode(os.fspath(path))

        get_ident = threading.get_ident

        def stat_noting(path: Any, *a: Any, dir_fd: Any = None, follow_symlinks: bool = True) -> Any:
            if rec.quiet or get_ident() != owner:  # passing(), inlined: every stat of a discovery comes here
                return real_stat(path, *a, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
            if type(path) is str and not a and dir_fd is None:
                k: str | None = path  # (what key() gives a str)
            else:
                k = None if a or dir_fd is not None else key(path)
            if k is None:
                rec.usable = False
                return real_stat(path, *a, dir_fd=dir_fd, follow_symlinks=follow_symlinks)
            stats = rec.stats  # (the observed group's: `observe` swaps them)
            try:
                st = real_stat(path, follow_symlinks=follow_symlinks)
            except OSError as e:
                stats.setdefault((k, follow_symlinks), e.errno)
                raise
            stats.setdefault((k, follow_symlinks), _sig(st))
            return st

        def lstat_noting(path: Any, *a: Any, **kw: Any) -> Any:
            if passing():
                return real_lstat(path, *a, **kw)
            if a or kw:
                rec.usable = False
                return real_lstat(path, *a, **kw)
            return stat_noting(path, follow_symlinks=False)

        def note_dir(path: Any) -> None:
            if passing():
                return
            k = "." if path is None else key(path)
            if k is not None and k not in rec.dirs:
                rec.dirs[k] = _dir_sig(k)  # before listing: a change during it shows as a difference later

        def scandir_noting(path: Any = None) -> Any:
            note_dir(path)
            return real_scandir(path) if path is not None else real_scandir()

        def listdir_noting(path: Any = None) -> Any:
            note_dir(path)
            return real_listdir(path) if path is not None else real_listdir()

        def realpath_noting(path: Any, *a: Any, **kw: Any) -> Any:
            if passing():
                return real_rp(path, *a, **kw)
            k = None if a or kw else key(path)
            prev, rec.quiet = rec.quiet, True  # the resolved path is what the caller sees, not /tmp's mtime
            try:
                res = real_rp(path, *a, **kw)
            except BaseException:
                rec.usable = False
                raise
            finally:
                rec.quiet = prev
            if k is None:
                rec.usable = False
            else:
                rec.real.setdefault(k, os.fsdecode(res))
            return res

        def readlink_noting(path: Any, *a: Any, **kw: Any) -> Any:
            if passing():
                return real_readlink(path, *a, **kw)
            k = None if a or kw else key(path)
            if k is None:
                rec.usable = False
            else:
                rec.links.setdefault(k, _link_sig(k))
            return real_readlink(path, *a, **kw)

        def osopen_spoiling(*a: Any, **kw: Any) -> Any:
            if not passing():
                rec.usable = False
            return real_osopen(*a, **kw)

        def open_noting(file: Any, mode: str = "r", *a: Any, **kw: Any) -> Any:
            if not passing():
                k = key(file) if isinstance(mode, str) and set(mode) <= set("rbt") and not kw.get("opener") else None
                if k is None:
                    rec.usable = False
                else:
                    rec.quiet = True  # the digest's own read is not an observation
                    try:
                        sig = rec.reads.setdefault(k, _read_sig(k))
                    finally:
                        rec.quiet = False  # (only reached while observing)
                    if sig is None:
                        rec.usable = False
            return real_open(file, mode, *a, **kw)

        os.stat, os.lstat, os.scandir, os.listdir = stat_noting, lstat_noting, scandir_noting, listdir_noting  # type: ignore[assignment]
        os.readlink, os.open, builtins.open = readlink_noting, osopen_spoiling, open_noting  # type: ignore[assignment]
        os.path.realpath = realpath_noting  # type: ignore[assignment]
        try:
            _canary(rec)
            rec.quiet = paused
            _ACTIVE.append(rec)
            yield rec
        finally:
            _ACTIVE.clear()
            (os.stat, os.lstat, os.scandir, os.listdir, os.readlink, os.open, builtins.open,  # type: ignore[assignment]
             os.path.realpath) = saved


def active() -> bool:
    """A recording is under way (a caller may then skip a memo that would hide an observation)."""
    return bool(_ACTIVE)


@contextlib.contextmanager
def observe(group: str = "") -> Iterator[None]:
    """Note what runs inside this block in the paused recording under way (if any, on its own thread), into
    `group`."""
    rec = _ACTIVE[0] if _ACTIVE else None
    if rec is None or not rec.quiet or threading.get_ident() != rec.owner:
        yield
        return
    prev = rec.select(group)
    rec.quiet = False
    try:
        yield
    finally:
        rec.quiet = True
        rec.select(prev)


def _canary(rec: Recording) -> None:
    """The probe is only as good as the patches: this Python's pathlib and os.path must go through them (3.10's
    pathlib bound os.stat at import, for one). Checked on a path no reader looks at; its entries are dropped."""
    probe = os.path.join(os.path.dirname(os.path.abspath(__file__)), ".segue-probe-canary-never-exists")
    from pathlib import Path

    Path(probe).exists()
    Path(probe).is_dir()
    os.path.lexists(probe + "l")
    ok = (probe, True) in rec.stats and (probe + "l", False) in rec.stats
    here = os.path.dirname(os.path.abspath(__file__))
    list(Path(here).iterdir())
    ok = ok and here in rec.dirs
    rec.stats.pop((probe, True), None)
    rec.stats.pop((probe + "l", False), None)
    rec.dirs.pop(here, None)
    if not ok:
        rec.usable = False
