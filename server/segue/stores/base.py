"""The interface every runtime reader implements, and the read-only I/O helpers they share.

A reader turns one runtime's own store into `Session`s (cheaply: heads and tails) and, for briefs, into a
stream of `Step`s. Readers never write anything inside a store: no temp files, no locks, no SQLite
`-wal`/`-shm` side files (see `open_sqlite_readonly`).
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segue.model import ReadStats, Session, Step

try:  # orjson decodes 2-3x faster; the stdlib stays the reference (and the fallback on anything orjson refuses)
    from orjson import loads as _fast_loads
except ImportError:  # pragma: no cover - the editor's bundled server ships pure-Python wheels only
    _fast_loads = None
FAST_JSON = _fast_loads is not None  # readers choose their shortcuts by what decoding costs

HEAD_BYTES = 32 * 1024
TAIL_BYTES = 32 * 1024
MAX_TEXT = 8 * 1024  # cap on any single text a summary keeps (titles, first requests)


@dataclass(frozen=True)
class Env:
    """Where to look: HOME and the environment variables that relocate stores.

    Readers take this instead of reading `os.environ`, so tests point them anywhere.
    """

    home: Path
    environ: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def from_os(cls) -> Env:
        return cls(home=Path(os.path.expanduser("~")), environ=dict(os.environ))

    def get(self, name: str) -> str | None:
        v = self.environ.get(name)
        return v if v else None

    def path(self, name: str) -> Path | None:
        v = self.get(name)
        return Path(v).expanduser().absolute() if v else None


@dataclass(frozen=True)
class Source:
    """A unit the listing cache tracks: one file (or DB) that yields one or more sessions.

    `fingerprint` changes whenever the content may have changed (size and mtime of the file and of any
    side file such as a SQLite `-wal`).
    """

    runtime: str
    path: str
    fingerprint: tuple[Any, ...]
    kind: str = ""


@dataclass(frozen=True)
class Location:
    """A place a reader looked for a store (for the "nothing found" message)."""

    path: str
    exists: bool
    how_to_override: str = ""


class Continued:
    """Steps of a transcript from step `start` on: the ones before are the same as the read that left the mark
    gave (0: read from the beginning). Once iterated to the end, `mark` is where a later read of the same file,
    grown, may go on from (None: nowhere; a read that failed or stopped early leaves none)."""

    __slots__ = ("closer", "mark", "start", "steps")

    def __init__(self, steps: Iterator[Step], start: int) -> None:
        self.steps = steps
        self.start = start
        self.mark: bytes | None = None
        self.closer: Callable[[], None] | None = None  # what an unread one holds open (its file)

    def close(self) -> None:
        """Let go of it unread (or half read)."""
        close = getattr(self.steps, "close", None)
        if close is not None:
            close()
        if self.closer is not None:
            self.closer()

    def __iter__(self) -> Iterator[Step]:
        return self.steps


class Reader(ABC):
    """One runtime's store. Subclasses live one per module in `segue.stores`."""

    runtime: str = ""

    def __init__(self, env: Env) -> None:
        self.env = env

    @abstractmethod
    def locations(self) -> list[Location]:
        """Every directory or file this reader looks in, whether or not it exists."""

    @abstractmethod
    def sources(self) -> Iterator[Source]:
        """Cheap discovery: stat only, no parsing. Each source yields sessions via `summarize`."""

    def refingerprint(self, moved: set[str], known: set[str]) -> list[Source] | None:
        """The sources `sources()` would yield now whose fingerprint holds one of the `moved` paths, when
        nothing the last discovery observed changed but those regular files' sizes and mtimes (in place: same
        inode; every directory listing, link and read file as it was; `known`: the paths of the sources it
        yielded). segue.patch uses it instead of discovering again. A reader overrides it only where its
        `sources()` decides which sources exist, their paths and kinds without reading a file's size or mtime
        (those go into fingerprints alone). None (the default): discover again."""
        return None

    @abstractmethod
    def summarize(self, source: Source) -> list[Session]:
        """Read one source's sessions from heads and tails (never whole transcripts).

        Problems reading one session go into its `problems`; an unreadable source may raise, and the
        listing records it as skipped with the reason.
        """

    @abstractmethod
    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """Stream a session's activity in order, for briefs. Memory must not grow with the session:
        parse line by line, skip records the brief does not use before decoding them where possible,
        count damaged records in `stats.damaged_lines`."""

    def brief_steps(self, session: Session, stats: ReadStats, recent: int) -> Iterator[Step]:
        """The steps as a brief reads them: the same sequence as `steps()`, except that a command's `output`
        is only guaranteed on the last `recent` steps, and only once the iteration has ended (a reader may
        decode those outputs last). Default: `steps()`. tests/test_codex_brief_later.py proves the briefs
        equal."""
        return self.steps(session, stats)

    def search_steps_from(self, session: Session, stats: ReadStats, mark: bytes | None) -> Continued | None:
        """`search_steps` read on from where an earlier read stopped (`mark`, what that read's `Continued.mark`
        gave), or None where the reader cannot (default). tests/test_search_resume.py proves that the steps
        before `start` and the ones it yields are `search_steps`'."""
        return None

    def search_steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        """The steps as the search index needs them: the same sequence as `steps()` in `kind`, `text`,
        `exit_code` and `path` (what the index hashes and stores); anything else (output, times, line counts,
        refs, status) may be left out. A reader overrides this with a cheaper extraction only while its fast
        paths are on (SEGUE_FAST_PATHS=0: always `steps()`, the reference); tests/test_search_extract.py
        proves the two equal."""
        return self.steps(session, stats)

    def refresh_live(self, sessions: list[Session]) -> None:
        """Re-decide `live` on sessions that may come from the listing cache: a process can exit without
        changing the store. Default: a session marked live stays live only while `locator["pid"]` (when
        the reader recorded one) is alive. Readers with their own live markers override this."""
        for s in sessions:
            if s.live and "pid" in s.locator:
                s.live = pid_alive(s.locator["pid"])

    def exists(self, session: Session) -> bool:
        """Is the session still in its store (for resume: `not_in_store`)."""
        return os.path.exists(session.store_path)


# ---------------------------------------------------------------------------------------------------------
# Read-only file helpers


def fingerprint(*paths: str | os.PathLike[str]) -> tuple[Any, ...]:
    out: list[Any] = []
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            out.append(None)
            continue
        out.append((st.st_size, st.st_mtime_ns))
    return tuple(out)


def read_head_tail(path: str | os.PathLike[str], head: int = HEAD_BYTES, tail: int = TAIL_BYTES
                   ) -> tuple[bytes, bytes, int]:
    """Return (head bytes, tail bytes, file size). When the file is small, tail is b"" and head is all."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size <= head + tail:
            return f.read(), b"", size
        h = f.read(head)
        f.seek(size - tail)
        return h, f.read(), size


def complete_lines(chunk: bytes, *, from_start: bool) -> list[bytes]:
    """Split a head or tail chunk into whole lines: a head drops its cut last line, a tail its cut first."""
    lines = chunk.split(b"\n")
    # a head keeps its lines up to the last newline; a tail drops its first (cut) line
    lines = (lines[:-1] if not chunk.endswith(b"\n") else lines) if from_start else lines[1:]
    return [ln for ln in lines if ln.strip()]


def loads(line: bytes | str) -> Any | None:
    """Decode one JSON record; None for damage (invalid JSON or UTF-8).

    orjson first; whatever it refuses (lone surrogates, NaN, a BOM) goes to `json.loads`, so a record decodes
    as the stdlib decodes it (one known difference: orjson gives integers past 64 bits as floats)."""
    if _fast_loads is not None:
        try:
            return _fast_loads(line)
        except (ValueError, TypeError):
            pass
    try:
        return json.loads(line)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return None


def iter_jsonl(path: str | os.PathLike[str], stats: ReadStats, *, skip: tuple[bytes, ...] = (),
               max_line: int = 64 * 1024 * 1024) -> Iterator[dict[str, Any]]:
    """Stream JSON objects from a JSONL file.

    `skip`: byte substrings that mark records the caller does not need; such lines are dropped before
    decoding (the cheap path for huge tool outputs). Damaged lines are counted; a cut last line (a live
    writer) is dropped silently. Lines longer than `max_line` are skipped and counted.
    """
    with open(path, "rb") as f:
        for raw in f:
            stats.bytes_read += len(raw)
            if not raw.endswith(b"\n"):
                # last line without newline: maybe still being written
                obj = loads(raw) if raw.strip() else None
                if isinstance(obj, dict):
                    yield obj
                return
            if len(raw) > max_line:
                stats.damaged_lines += 1
                continue
            if skip and any(s in raw for s in skip):
                continue
            if not raw.strip():
                continue
            obj = loads(raw)
            if isinstance(obj, dict):
                yield obj
            else:
                stats.damaged_lines += 1


def read_json_file(path: str | os.PathLike[str], max_bytes: int = 256 * 1024 * 1024) -> Any:
    """Load a whole JSON file (Cline and OpenCode legacy stores keep single-document files)."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size > max_bytes:
            raise ValueError(f"{size} bytes is over the {max_bytes}-byte cap for a single JSON document")
        return json.loads(f.read())


def pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------------
# SQLite helpers live in `stores/sqlite.py`; these names stay importable from here.

from segue.stores.sqlite import IN_MEMORY_MAX as IN_MEMORY_MAX  # noqa: E402
from segue.stores.sqlite import SqliteUnavailable as SqliteUnavailable  # noqa: E402
from segue.stores.sqlite import open_sqlite_readonly as open_sqlite_readonly  # noqa: E402
from segue.stores.sqlite import sqlite_fingerprint as sqlite_fingerprint  # noqa: E402
from segue.stores.sqlite import wal_writer_live as wal_writer_live  # noqa: E402
