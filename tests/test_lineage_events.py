"""events.jsonl: one `session.handoff` event per linked session, even when processes list at the same time."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
from pathlib import Path
from typing import Any

from segue.lineage import link, marker, record_events
from segue.model import Session
from segue.paths import StateDir


def linked() -> list[Session]:
    s = Session(runtime="codex", id="child", store_path="/c", first_request="Read\n" + marker("claude", "parent"))
    return link([s])


def _recorder(root: str, barrier: Any) -> None:
    barrier.wait()
    record_events(StateDir(Path(root)), linked(), 1_800_000_000.0)


def test_event_shape_and_no_duplicates(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    assert record_events(state, linked(), 1_800_000_000.0) == 1
    assert record_events(state, linked(), 1_800_000_001.0) == 0
    lines = state.events.read_text().splitlines()
    assert [json.loads(x) for x in lines] == [{
        "event": "session.handoff", "handoff": {"source_harness": "claude", "source_session_id": "parent"},
        "session": {"runtime": "codex", "id": "child"}, "fidelity": "observed", "at": "2027-01-15T08:00:00.000Z"}]
    assert oct(os.stat(state.events).st_mode & 0o777) == "0o600"


def test_concurrent_listings_record_a_link_once(tmp_path: Path) -> None:
    root = tmp_path / "s"
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(12)
    procs = [ctx.Process(target=_recorder, args=(str(root), barrier)) for _ in range(12)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=30)
    assert len((root / "events.jsonl").read_text().splitlines()) == 1
