"""The patch table a full `segue list` keeps (segue.patch.table_of), built with one entry per session (the
memory of a cold listing's end), must be the table the plain algorithm builds (every candidate of a session in a
list, `_winner` over it), on varied listings: the same session in several sources with higher, lower and equal
ranks, subagents, filters, kept sessions no source holds. Compared as loaded tables (marshal's reference flags
may differ where an object has fewer holders)."""

from __future__ import annotations

import marshal
import random
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from segue import patch
from segue.listing import Listing, _count_subagents, _keep
from segue.model import Session

RUNTIMES = ("claude", "codex", "opencode")


def reference_table(args: Any, svc: Any, printed: list[Any], items: list[tuple[int, int]] | None,
                    kept_list: list[Session], pick: Any = patch._winner) -> Any:
    """segue.patch.table_of as main had it (every candidate kept in a list), with the kept sessions given."""
    from segue.lineage import find_marker

    if not printed or (items is not None and len(items) != len(printed)):
        return None
    runtimes = tuple(args.runtime) if args.runtime else None
    scanned = sorted(r for r in ("claude", "cline", "codex", "gemini", "opencode") if not runtimes or r in runtimes)
    by_key: dict[tuple[str, str], tuple[Any, Any]] = {}
    for i, s in enumerate(printed):
        k = (s.runtime, s.id)
        if k in by_key:
            return None
        by_key[k] = (s, items[i] if items is not None else i)
    sources: dict[str, tuple[Any, ...]] = {}
    metas: list[tuple[Any, ...]] = []
    owner: set[tuple[str, str]] = set()
    cands: dict[tuple[str, str], list[tuple[Any, str, Any]]] = {}
    for key, e in svc._cache.entries.items():
        if key.partition("\0")[0] not in scanned:
            continue
        if not isinstance(e[1], list) or e[2]:
            return None
        keys, ranks = [], []
        for s in e[1]:
            k = (s.runtime, s.id)
            keys.append(k)
            ranks.append(patch._rank(s))
            cands.setdefault(k, []).append((patch._rank(s), key, s))
        sources[key] = (e[0], patch._digest(e[3]), keys, ranks)
    for k, found in cands.items():
        best = pick(found)
        if best is None:
            return None
        owner.add(k)
        shown, slot = by_key.get(k, (best[2], None))
        metas.append(patch._meta_of(shown, slot, best[1]))
    kept: list[tuple[str, str]] = []
    for s in kept_list:
        k = (s.runtime, s.id)
        if s.runtime not in scanned:
            continue
        kept.append(k)
        if k not in owner:
            shown, slot = by_key.get(k, (s, None))
            metas.append(patch._meta_of(shown, slot, None))
            owner.add(k)
    if not set(by_key) <= owner:
        return None
    args_t = (runtimes, args.dir, bool(args.all))
    order = patch._order([patch._Meta(m) for m in metas], args_t)
    if order is None or [(m.runtime, m.id) for m in order] != [(s.runtime, s.id) for s in printed]:
        return None
    links = []
    for key, e in svc._cache.entries.items():
        if key.partition("\0")[0] in scanned:
            for s in e[1]:
                c = find_marker(s.first_request)
                if c and (c.runtime, c.id) != (s.runtime, s.id):
                    links.append((s.runtime, s.id, c.runtime, c.id))
    kind = "bytes" if items is not None else "rows"
    split: dict[str, dict[str, Any]] = {r: {} for r in scanned}  # each runtime's sources apart, as a patch reads them
    for k, v in sources.items():
        split[k.partition("\0")[0]][k] = v
    # as values (marshal's round trip: tuples and lists as the table's reader gives them)
    return marshal.loads(marshal.dumps((patch.TABLE_FORMAT, kind, args_t, scanned, split, metas, kept, links)))


def _session(rng: random.Random, runtime: str, sid: str, parent: str | None, ties: bool) -> Session:
    # ties: every copy of a session has the same time (its rank then ties when the priorities do), and sessions
    # have distinct times (the order has no tie)
    t = 1e9 + sum(map(ord, runtime + sid)) * 1000.0 if ties else rng.uniform(1e9, 2e9)
    marker = f"[segue-handoff v1 from=codex:c{rng.randrange(9)}] go on" if rng.random() < 0.1 else "hello"
    return Session(runtime=runtime, id=sid, store_path=f"/s/{sid}", parent_id=parent, updated_at=t,
                   started_at=t - 1, cwd=rng.choice(["/tmp/a", "/tmp/b", "/home/x", None]), first_request=marker,
                   locator={"priority": rng.randrange(3)})


def _case(seed: int) -> tuple[Any, Any, list[Session], list[tuple[int, int]] | None, list[Session]]:
    rng = random.Random(seed)
    ties = seed % 3 == 0
    entries: dict[str, list[Any]] = {}
    found: dict[tuple[str, str], Session] = {}
    for n in range(rng.randrange(1, 14)):
        runtime = rng.choice(RUNTIMES)
        sessions = []
        for _ in range(rng.randrange(0, 4)):
            sid = f"s{rng.randrange(12)}"  # a small pool: the same session in several sources
            parent = f"s{rng.randrange(12)}" if rng.random() < 0.25 else None
            sessions.append(_session(rng, runtime, sid, parent if parent != sid else None, ties))
        entries[f"{runtime}\0/src/{n}"] = [((n, 1.0),), sessions, None, None if rng.random() < 0.7 else {"k": n}]
        for s in sessions:
            _keep(found, s)
    listing = Listing(sessions=list(found.values()))
    _count_subagents(listing.sessions)
    args = SimpleNamespace(limit=None, json=True, runtime=rng.choice([None, ["claude", "codex"]]),
                           dir=rng.choice([None, None, "/tmp"]), all=rng.random() < 0.5)
    printed = listing.ordered(runtimes=args.runtime, directory=args.dir, include_subagents=args.all)
    items = [(100 * i, 7) for i in range(len(printed))] if rng.random() < 0.7 else None
    kept = [_session(rng, rng.choice(RUNTIMES), f"k{rng.randrange(3)}", None, ties) for _ in range(rng.randrange(3))]
    svc = SimpleNamespace(_cache=SimpleNamespace(entries=entries), state=SimpleNamespace(cache=Path("/nonexistent")))
    return args, svc, printed, items, kept


def _loaded(pieces: Any) -> Any:
    """The table table_of writes, as values (segue.patch.load_table, the reader a patch uses): its sources are
    one marshalled dict per runtime, decoded here, because marshal's bytes for equal values may differ in how it
    notes shared references."""
    if pieces is None:
        return None
    t = list(patch.load_table(b"".join(pieces)))
    t[4] = {r: marshal.loads(v) for r, v in t[4].items()}
    return tuple(t)


def _table(monkeypatch: pytest.MonkeyPatch, args: Any, svc: Any, printed: list[Session],
           items: list[tuple[int, int]] | None, kept: list[Session]) -> Any:
    import segue.kept

    monkeypatch.setattr(patch.os.path, "isdir", lambda p: bool(kept))
    monkeypatch.setattr(segue.kept, "kept_sessions", lambda state: [(s, 0.0) for s in kept])
    return patch.table_of(args, svc, printed, items)


def test_the_table_is_the_plain_algorithms(monkeypatch: pytest.MonkeyPatch) -> None:
    made = refused = 0
    for seed in range(400):
        args, svc, printed, items, kept = _case(seed)
        got = _table(monkeypatch, args, svc, printed, items, kept)
        assert _loaded(got) == reference_table(args, svc, printed, items, kept), seed
        made += got is not None
        refused += got is None
    assert made > 50 and refused > 20  # both outcomes were exercised


def test_a_wrong_winner_is_noticed(monkeypatch: pytest.MonkeyPatch) -> None:
    """The negative control: a reference that keeps the lower-ranked candidate disagrees on some listing."""
    def lowest(found: list[Any]) -> Any:
        return min(found, key=lambda c: c[0])

    differ = 0
    for seed in range(200):
        args, svc, printed, items, kept = _case(seed)
        got = _loaded(_table(monkeypatch, args, svc, printed, items, kept))
        differ += got != reference_table(args, svc, printed, items, kept, pick=lowest)
    assert differ > 0


def test_the_rows_go_in_chunks_and_other_formats_are_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows past a chunk are in later frames (read back whole); a table of format 2 (one marshalled tuple), one
    cut short or of another format number is a ValueError (the patch refuses it: the full path keeps a new one)."""
    monkeypatch.setattr(patch, "_META_CHUNK", 2)
    seen = 0
    for seed in range(60):
        args, svc, printed, items, kept = _case(seed)
        got = _table(monkeypatch, args, svc, printed, items, kept)
        if got is None:
            continue
        data = b"".join(got)
        ref = reference_table(args, svc, printed, items, kept)
        assert _loaded([data]) == ref, seed
        seen += len(ref[5]) > 2
        old = marshal.dumps((2, *ref[1:]))
        for bad in (old, data[:-1], data[:3], b""):
            with pytest.raises(ValueError):
                patch.load_table(bad)
    assert seen > 5
    other = list(patch._frames("bytes", (None, None, False), ["claude"], [{}], [], [], []))
    other[1] = marshal.dumps((patch.TABLE_FORMAT + 1, "bytes", (None, None, False), ["claude"], [], []))
    other[0] = len(other[1]).to_bytes(4, "little")
    with pytest.raises(ValueError):
        patch.load_table(b"".join(other))
    assert patch.load_table(b"".join(patch._frames("bytes", (None, None, False), ["claude"], [{}], [], [], [])))
