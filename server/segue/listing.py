"""Discovery across the four readers, the listing cache, ordering, filters and session references.

The cache (`cache/listing.bin` in Segue's state directory) maps each source (a session file or a
database) to its fingerprint (size and mtime of the file and its side files) and the sessions read from
it. A warm listing stats every source and re-reads only those whose fingerprint changed. A cold listing of
many sources reads them in parallel worker processes (the CLI; a long-lived server stays single-process).
"""

from __future__ import annotations

import contextlib
import importlib
import marshal
import os
import secrets
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from segue.model import RUNTIMES, Session
from segue.paths import StateDir
from segue.stores.base import Env, Location, Reader, Source

CACHE_VERSION = 5  # 5: titles and first requests are stored redacted (issue 12)
_READERS = {
    "claude": ("segue.stores.claude", "ClaudeReader"),
    "codex": ("segue.stores.codex", "CodexReader"),
    "opencode": ("segue.stores.opencode", "OpencodeReader"),
    "cline": ("segue.stores.cline", "ClineReader"),
}


def reader_for(runtime: str, env: Env) -> Reader:
    module, cls = _READERS[runtime]
    return getattr(importlib.import_module(module), cls)(env)


@dataclass
class Skipped:
    runtime: str
    path: str
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "path": self.path, "reason": self.reason}


@dataclass
class Listing:
    """Every session found (top-level and subagents, de-duplicated) plus what could not be read."""

    sessions: list[Session]
    skipped: list[Skipped] = field(default_factory=list)
    locations: dict[str, list[Location]] = field(default_factory=dict)

    def ordered(self, *, runtimes: Sequence[str] | None = None, directory: str | None = None,
                include_subagents: bool = False, limit: int | None = None) -> list[Session]:
        """Newest first; subagents (with `include_subagents`) right after their parent, recursively.
        `limit` counts top-level sessions. Orphan subagents (parent not found) count as top level."""
        pool = [s for s in self.sessions if not runtimes or s.runtime in runtimes]
        by_key = {(s.runtime, s.id): s for s in pool}
        children: dict[tuple[str, str], list[Session]] = {}
        tops: list[Session] = []
        for s in pool:
            parent = (s.runtime, s.parent_id) if s.parent_id else None
            if parent and parent in by_key:
                children.setdefault(parent, []).append(s)
            elif not s.parent_id or include_subagents:
                tops.append(s)
        if directory is not None:
            tops = [s for s in tops if cwd_within(s.cwd, directory)]
        tops.sort(key=lambda s: (s.sort_time, s.id), reverse=True)
        if limit is not None:
            tops = tops[:limit]
        out: list[Session] = []

        def emit(s: Session, seen: set[tuple[str, str]]) -> None:
            key = (s.runtime, s.id)
            if key in seen:  # a cycle in hostile data must not loop forever
                return
            seen.add(key)
            out.append(s)
            if include_subagents:
                for c in sorted(children.get(key, []), key=lambda c: (c.started_at or 0.0, c.id)):
                    emit(c, seen)

        seen: set[tuple[str, str]] = set()
        for s in tops:
            emit(s, seen)
        return out


def cwd_within(cwd: str | None, directory: str) -> bool:
    if not cwd:
        return False
    base = os.path.normpath(os.path.abspath(os.path.expanduser(directory)))
    forms = {os.path.normpath(cwd)}
    with contextlib.suppress(OSError):
        forms.add(os.path.realpath(cwd))
    bases = {base}
    with contextlib.suppress(OSError):
        bases.add(os.path.realpath(base))
    for c in forms:
        for b in bases:
            if c == b or c.startswith(b.rstrip(os.sep) + os.sep):
                return True
    return False


class ListingCache:
    """`cache/listing.bin`: {source key: [fingerprint, sessions, error]} in `marshal` form.

    marshal (stdlib) loads thousands of sessions several times faster than JSON; its format is tied to the
    Python version, which is part of the cache's version key, and the file lives in Segue's private state
    directory. Sessions stay Session objects in memory (a long-lived language server reuses them) and are
    converted only when read from or written to disk.
    """

    def __init__(self, state: StateDir | None) -> None:
        self.state = state
        self.entries: dict[str, list[Any]] = {}
        self.dirty = False
        if state is not None:
            self._load()

    @property
    def path(self) -> Path | None:
        return self.state.cache / "listing.bin" if self.state else None

    def _load(self) -> None:
        p = self.path
        if p is None:
            return
        try:
            with open(p, "rb") as f:
                data = marshal.loads(f.read())
        except Exception:  # no cache, or a damaged one: a cold listing rebuilds it
            return
        if isinstance(data, dict) and data.get("version") == _VERSION and isinstance(data.get("sources"), dict):
            self.entries = data["sources"]

    def get(self, src: Source) -> tuple[list[Session], str | None] | None:
        e = self.entries.get(f"{src.runtime}\0{src.path}")
        if e is None or e[0] != src.fingerprint:
            return None
        sessions = e[1]
        if sessions and not isinstance(sessions[0], Session):
            try:
                sessions = e[1] = [Session.from_cache(d) for d in sessions]
            except Exception:
                return None
        return sessions, e[2]

    def put(self, src: Source, sessions: list[Session], error: str | None) -> None:
        for s in sessions:
            s.prime()
        self.entries[f"{src.runtime}\0{src.path}"] = [src.fingerprint, sessions, error]
        self.dirty = True

    def prune(self, runtimes: Iterable[str], seen: set[str]) -> None:
        scanned = tuple(f"{r}\0" for r in runtimes)
        for k in [k for k in self.entries if k.startswith(scanned) and k not in seen]:
            del self.entries[k]
            self.dirty = True

    def save(self) -> None:
        if not self.dirty or self.state is None:
            return
        try:
            out = {k: [e[0], [x.to_cache() if isinstance(x, Session) else x for x in e[1]], e[2]]
                   for k, e in self.entries.items()}
            data = marshal.dumps({"version": _VERSION, "sources": out})
            cache_dir = self.state.private(self.state.cache)
            tmp = cache_dir / f".listing.{os.getpid()}.{secrets.token_hex(4)}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, cache_dir / "listing.bin")
            self.dirty = False
        except (OSError, ValueError):
            pass  # the cache is an optimisation; a read-only or full disk must not fail a listing


_VERSION = (CACHE_VERSION, sys.version_info[0], sys.version_info[1])


PARALLEL_MIN = 200  # uncached sources before a cold listing is worth worker processes


def scan(env: Env, state: StateDir | None, runtimes: Sequence[str] | None = None,
         cache: ListingCache | None = None, cancelled: Any = None, parallel: bool = False) -> Listing:
    """Read every source of the chosen runtimes, using and refreshing the cache."""
    runtimes = [r for r in (runtimes or RUNTIMES) if r in _READERS]
    cache = cache if cache is not None else ListingCache(state)
    found: dict[tuple[str, str], Session] = {}
    skipped: list[Skipped] = []
    locations: dict[str, list[Location]] = {}
    seen_keys: set[str] = set()
    readers: dict[str, Reader] = {}
    pending: dict[str, list[Source]] = {}
    for runtime in runtimes:
        try:
            reader = readers[runtime] = reader_for(runtime, env)
            locations[runtime] = reader.locations()
            sources = list(reader.sources())
        except Exception as e:  # a reader bug or an unreadable root must not hide other runtimes
            skipped.append(Skipped(runtime, "", f"could not look for sessions: {type(e).__name__}: {e}"))
            continue
        for src in sources:
            seen_keys.add(f"{src.runtime}\0{src.path}")
            entry = cache.get(src)
            if entry is None:
                pending.setdefault(runtime, []).append(src)
                continue
            sessions, error = entry
            if error:
                skipped.append(Skipped(runtime, src.path, error))
            for s in sessions:
                _keep(found, s)
    for src, sessions, error in _summarize_all(readers, pending, env, cancelled, parallel):
        cache.put(src, sessions, error)
        if error:
            skipped.append(Skipped(src.runtime, src.path, error))
        for s in sessions:
            _keep(found, s)
    for runtime, reader in readers.items():
        with contextlib.suppress(Exception):  # live is a hint; a failure here must not fail the listing
            reader.refresh_live([s for (rt, _), s in found.items() if rt == runtime])
    cache.prune(runtimes, seen_keys)
    cache.save()
    listing = Listing(sessions=list(found.values()), skipped=skipped, locations=locations)
    _count_subagents(listing.sessions)
    return listing


def _summarize(reader: Reader, src: Source) -> tuple[list[Session], str | None]:
    try:
        sessions = reader.summarize(src)
    except Exception as e:
        return [], f"{type(e).__name__}: {e}"
    # issue 12 (redaction): titles and first requests are shown by every listing surface; redact them once,
    # here, so that the cache keeps only redacted text. Imported lazily: a warm listing never needs it.
    from segue.redact import redact_summary

    return [redact_summary(s) for s in sessions], None


def _summarize_all(readers: dict[str, Reader], pending: dict[str, list[Source]], env: Env, cancelled: Any,
                   parallel: bool) -> Iterable[tuple[Source, list[Session], str | None]]:
    total = sum(len(v) for v in pending.values())
    workers = min(4, os.cpu_count() or 1)
    if parallel and total >= PARALLEL_MIN and workers > 1 and sys.platform == "linux":
        try:
            yield from _summarize_parallel(pending, env, workers)
            return
        except (OSError, RuntimeError, ImportError):
            pass  # no worker processes here: fall back to reading in this process
    for runtime, sources in pending.items():
        for src in sources:
            if cancelled is not None and cancelled():
                raise Cancelled()
            sessions, error = _summarize(readers[runtime], src)
            yield src, sessions, error


def _summarize_parallel(pending: dict[str, list[Source]], env: Env, workers: int
                        ) -> Iterable[tuple[Source, list[Session], str | None]]:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    chunks = []
    for runtime, sources in pending.items():
        per = max(1, -(-len(sources) // workers))
        chunks += [(runtime, env, sources[i:i + per]) for i in range(0, len(sources), per)]
    # fork: workers inherit the imported readers, so they start in milliseconds. Only the CLI asks for this;
    # it has no other threads, which is what makes fork safe.
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        for results in pool.map(_summarize_chunk, chunks):
            yield from results


def _summarize_chunk(args: tuple[str, Env, list[Source]]) -> list[tuple[Source, list[Session], str | None]]:
    runtime, env, sources = args
    reader = reader_for(runtime, env)
    return [(src, *_summarize(reader, src)) for src in sources]


class Cancelled(Exception):
    """The caller gave up (a cancelled language-server request)."""


def _keep(found: dict[tuple[str, str], Session], s: Session) -> None:
    key = (s.runtime, s.id)
    old = found.get(key)
    if old is None:
        found[key] = s
        return
    rank_new = (int(s.locator.get("priority", 0)), s.sort_time)
    rank_old = (int(old.locator.get("priority", 0)), old.sort_time)
    if rank_new > rank_old:
        found[key] = s


def _count_subagents(sessions: list[Session]) -> None:
    counts: dict[tuple[str, str], int] = {}
    for s in sessions:
        if s.parent_id:
            counts[(s.runtime, s.parent_id)] = counts.get((s.runtime, s.parent_id), 0) + 1
    for s in sessions:
        s.subagent_count = counts.get((s.runtime, s.id), 0)


# ---------------------------------------------------------------------------------------------------------
# References: `runtime:id`, `runtime:prefix`, or an unambiguous id prefix.


class SessionNotFound(Exception):
    def __init__(self, ref: str) -> None:
        super().__init__(f"no session matches {ref!r}; run `segue list` to see session ids")
        self.ref = ref


class AmbiguousSession(Exception):
    def __init__(self, ref: str, candidates: list[Session]) -> None:
        names = ", ".join(s.ref for s in candidates[:8])
        more = f" and {len(candidates) - 8} more" if len(candidates) > 8 else ""
        super().__init__(f"{ref!r} matches {len(candidates)} sessions ({names}{more}); give more of the id "
                         "or prefix it with the runtime, e.g. codex:<id>")
        self.ref = ref
        self.candidates = candidates


def parse_ref(ref: str) -> tuple[str | None, str]:
    ref = ref.strip()
    if ":" in ref:
        head, _, tail = ref.partition(":")
        if head in RUNTIMES:
            return head, tail
    return None, ref


def resolve(sessions: Iterable[Session], ref: str) -> Session:
    runtime, needle = parse_ref(ref)
    if not needle:
        raise SessionNotFound(ref)
    pool = [s for s in sessions if runtime is None or s.runtime == runtime]
    exact = [s for s in pool if s.id == needle]
    if len(exact) == 1:
        return exact[0]
    matches = exact or [s for s in pool if s.id.startswith(needle)]
    if not matches:
        raise SessionNotFound(ref)
    if len(matches) > 1:
        raise AmbiguousSession(ref, sorted(matches, key=lambda s: s.sort_time, reverse=True))
    return matches[0]
