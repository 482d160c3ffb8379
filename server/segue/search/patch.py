"""A search refresh that costs what changed: the sessions of a few moved transcript files indexed again without
discovering, listing or comparing anything else.

The kept probe's groups (one per runtime's discovery, segue.probe) are replayed; when the only difference in
each changed runtime is that some regular files grew or moved in place (`replay.moved_files`), that runtime's
reader names the sources those files belong to (`Reader.refingerprint`, the listing patch's hook), and each such
source is summarised and its sessions indexed again, as a refresh would after listing them. The new probe is the
kept one with those files' stats taken again, and each changed runtime's digest is the kept fingerprints with the
moved ones replaced (the index keeps every source's fingerprint: `SearchIndex.source_rows`).

It is taken only where it provably gives what the whole refresh gives; anything else returns None and the caller
refreshes as before: another environment, a change outside the runtimes' discovery, a directory listing, link or
read file that changed, a reader without the hook, a database store (its sessions share one file: their own
incremental read is the listing's), a source whose sessions are not exactly the ones the index kept from it, a
session the last listing found in two sources, a source that could not be read, kept fingerprints that do not
give the kept digest. SEGUE_SEARCH_PATCH=0 switches it off (tests/test_search_patch.py compares the two).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from segue.search import probe
from segue.search.index import RefreshStats, SearchIndex, _key, combined, digests

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from segue.model import ReadStats, Session

Indexing = Callable[[], "tuple[Callable[[Session, ReadStats], Any], Callable[[str, int], str], str]"]


def enabled() -> bool:
    return os.environ.get("SEGUE_SEARCH_PATCH", "1") != "0"


class _Refused(Exception):
    pass


def refresh(env: Any, idx: SearchIndex, indexing: Indexing) -> RefreshStats | None:
    """Index the moved sources' sessions and keep the new probe; None (nothing written) when this route cannot
    prove its answer. Caller holds `idx.write_lock()`. `indexing()` gives (steps_of, redact, redacted_by) as
    the whole refresh uses them."""
    if not (enabled() and probe.enabled()):
        return None
    try:
        return _refresh(env, idx, indexing)
    except _Refused:
        return None


def _refresh(env: Any, idx: SearchIndex, indexing: Indexing) -> RefreshStats:
    from segue import replay
    from segue.stores import RUNTIMES, descriptor

    kept = idx.probe_groups()
    if kept is None:
        raise _Refused()
    blob, stored = kept
    if set(stored) != set(RUNTIMES):
        raise _Refused()
    parsed = replay.groups_of(blob)
    if parsed is None:
        raise _Refused()
    home = str(env.home)
    digest, names, groups = parsed
    # the database stores' few observations first: a change there is refused before the rest is replayed
    databases = {rt for rt in RUNTIMES if descriptor(rt).database}
    first = replay.changed_in((digest, names, [g for g in groups if g[0] in databases]), home, env.environ, True)
    if first is None or first:
        raise _Refused()
    changed = replay.changed_in((digest, names, [g for g in groups if g[0] not in databases]), home, env.environ)
    if not changed or not changed <= set(RUNTIMES):
        raise _Refused()  # (None: another environment; a group that is no runtime's: the whole pass decides)
    parts_of = {g: parts for g, *parts in groups}
    moved: dict[str, set[str]] = {}
    for rt in sorted(changed):
        files = replay.moved_files(parts_of[rt]) if rt in parts_of else None
        if not files:
            raise _Refused()
        moved[rt] = files
    rows = {rt: idx.source_rows(rt) for rt in moved}
    for rt, table in rows.items():  # the kept fingerprints are the ones the kept digest was made of
        if digests({(rt, p): fp for p, fp in table.items()}, [rt])[1][rt] != stored[rt]:
            raise _Refused()
    found, packed, groups_blob = _refound(env, moved, rows, names, parts_of)
    return _index(env, idx, indexing, found, rows, stored, packed, groups_blob)


def _refound(env: Any, moved: Mapping[str, set[str]], rows: Mapping[str, Mapping[str, str]], names: list[str],
             parts_of: Mapping[str, Any]) -> tuple[dict[str, list[Any]], bytes, bytes]:
    """Each changed runtime's moved sources (by its reader's hook, observed), and the new probe and its groups:
    the kept observations, with the moved files' stats as the hook took them."""
    from segue.listing import reader_for
    from segue.stores.base import Env

    for rt in moved:
        reader_for(rt, env)  # the reader's modules imported outside the recording (imports open files)
    found: dict[str, list[Any]] = {}
    with probe.recording() as rec:
        rec.names.update(names)
        for g, parts in parts_of.items():
            if g not in moved:
                rec.seed(g, parts, set())
        seen = Env(home=env.home, environ=rec.env(env.environ))
        for rt, files in moved.items():
            left_out = rec.seed(rt, parts_of[rt], files)
            rec.select(rt)
            got = reader_for(rt, seen).refingerprint(files, set(rows[rt]))
            rec.select("")
            if got is None:
                raise _Refused()
            stats = rec._groups[rt][0]
            if not all(k in stats for k in left_out):
                raise _Refused()  # a moved file the hook did not stat again: the new probe would not watch it
            found[rt] = got
    home = str(env.home)
    packed = probe.pack(rec, home, env.environ) if rec.usable else None
    groups_blob = rec.dump_groups(home, env.environ) if packed is not None else None
    if packed is None or groups_blob is None:
        raise _Refused()
    return found, packed, groups_blob


def _index(env: Any, idx: SearchIndex, indexing: Indexing, found: Mapping[str, list[Any]],
           rows: Mapping[str, Mapping[str, str]], stored: Mapping[str, str], packed: bytes, groups_blob: bytes
           ) -> RefreshStats:
    from segue import listing
    from segue.stores.text import fast_paths

    fast = fast_paths(env)
    todo: list[tuple[Any, str]] = []
    new_rows: dict[str, dict[str, str]] = {}
    for rt, sources in found.items():
        reader = listing.reader_for(rt, env)
        if getattr(reader, "summarize_delta", None) is not None:
            raise _Refused()  # a database: its sessions share the file, and its delta read needs the listing's state
        table = rows[rt]
        seen: set[str] = set()
        for src in sources:
            fp = repr(src.fingerprint)
            old_fp = table.get(src.path)
            if old_fp is None or src.path in seen:
                raise _Refused()  # (the hook names only sources the last discovery yielded, each once)
            seen.add(src.path)
            if old_fp == fp:
                continue
            sessions, error, _state = listing._summarize(reader, src, fast)
            if error:
                raise _Refused()  # a skipped source: the whole refresh drops its sessions and says why
            kept = idx.from_source(rt, src.path)
            if {s.id for s in sessions} != set(kept) or len(sessions) != len(kept) \
                    or any(s.runtime != rt or s.store_path != kept[s.id] for s in sessions):
                raise _Refused()  # a session gained, lost or moved: the listing's de-duplication decides
            if idx.found_twice(rt, kept):
                raise _Refused()  # another source yields it too: which one wins is the listing's ranking
            for s in sessions:
                todo.append((s, _key(s, idx.sharing(rt, s.store_path) > 1)))
            new_rows.setdefault(rt, {})[src.path] = fp
    by_runtime = dict(stored)
    for rt, changed in new_rows.items():
        table = {**rows[rt], **changed}
        by_runtime[rt] = digests({(rt, p): fp for p, fp in table.items()}, [rt])[1][rt]
    todo.sort(key=lambda t: t[0].sort_time, reverse=True)  # (the whole refresh's order: newest first)
    steps_of, redact, redacted_by = indexing()
    stats = idx.patch(todo, steps_of, redact, redacted_by, new_rows, by_runtime)
    idx.store_probe(combined(by_runtime), packed, groups_blob)
    return stats
