"""The search index built by worker processes (segue.search.workers) is the serial build's, row for row: on
copies of the stores the real runtimes wrote, first build and incremental update alike, and when the workers
cannot work at all (every session falls back to the writer)."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from segue.search import index as I
from segue.search import workers
from segue.search.index import FILE_NAME
from tests import store_changes
from tests.test_search import SECRET, copy_stores, service

QUERIES = ('"write what happened"', "files", "notes.md", '"database password"', "nonexistent-dir", "Sup3rS3cret")


def dump(root: Path) -> dict[str, Any]:  # redacted_by is salted per index: only whether it is known
    con = sqlite3.connect(root / "segue" / "cache" / FILE_NAME)
    try:
        return {
            "sessions": con.execute("SELECT sid, runtime, id, parent_id, title, label, cwd, updated_at, store_path, "
                                    "key, hex(hashes), redacted_by != '', source FROM sessions ORDER BY sid"
                                    ).fetchall(),
            "docs": con.execute("SELECT rowid, text, kind, code FROM docs ORDER BY rowid").fetchall(),
        }
    finally:
        con.close()


def results(svc: Any) -> dict[str, Any]:
    return {q: (svc.search(q, limit=100).to_json()) for q in QUERIES}


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    """The same stores twice (two roots; every path inside is rooted the same way below each)."""
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)  # the fixtures hold a few sessions: use the workers anyway
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b, copy_stores(a), copy_stores(b)


def build(root: Path, environ: dict[str, str], monkeypatch: pytest.MonkeyPatch, n: int) -> dict[str, Any]:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", str(n))
    svc = service(root, environ)
    res = results(svc)
    out = dump(root)
    text = json.dumps(out).replace(str(root), "<root>")
    return {"index": json.loads(text), "results": json.loads(json.dumps(res).replace(str(root), "<root>"))}


def test_workers_build_the_serial_index_row_for_row(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    calls: list[int] = []
    real_run = workers.run

    def counted(tasks: Any, env: Any, environ: Any, n: int, cache_dir: str | None = None, **kw: Any) -> Any:
        calls.append(n)
        return real_run(tasks, env, environ, n, cache_dir, **kw)

    monkeypatch.setattr(workers, "run", counted)
    parallel = build(b, env_b, monkeypatch, 2)
    assert calls == [2]  # the workers did build it
    # keys hash the store files' mtimes, which copytree keeps: equal
    assert parallel == serial
    assert serial["index"]["docs"] and serial["results"]['"write what happened"']["total"] > 0
    raw = b"".join(p.read_bytes() for p in (b / "segue" / "cache").glob(FILE_NAME + "*"))
    assert raw and SECRET.encode() not in raw  # redacted in the workers as in the writer


@pytest.mark.parametrize("n", [0, 2])
def test_a_first_build_keeps_where_the_listing_found_each_session(two: Any, monkeypatch: pytest.MonkeyPatch,
                                                                   n: int) -> None:
    """A new session's source goes in with its row (serial and parallel): it is what the listing's provenance
    says, the source a patch later finds the session by (`from_source`)."""
    a, _b, env_a, _ = two
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", str(n))
    svc = service(a, env_a)
    svc.search("files", limit=5)
    origins = svc.raw_listing().origins
    con = sqlite3.connect(a / "segue" / "cache" / FILE_NAME)
    try:
        rows = con.execute("SELECT runtime, id, source FROM sessions").fetchall()
    finally:
        con.close()
    assert rows and {rt for rt, _, _ in rows} >= {"claude", "codex", "opencode", "cline"}
    assert all(src is not None for _, _, src in rows)  # (the fixtures' sessions each come from one source)
    assert {(rt, i): src for rt, i, src in rows} == {k: origins.get(k) for k in ((rt, i) for rt, i, _ in rows)}


@pytest.mark.parametrize("batch", [1, 3])
def test_any_batch_size_builds_the_serial_index(two: Any, monkeypatch: pytest.MonkeyPatch, batch: int) -> None:
    """Sessions go to the workers BATCH to a message (the last batch short, the answers as they come): the index is
    the serial one whatever the batch."""
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    monkeypatch.setattr(workers, "BATCH", batch)
    monkeypatch.setattr(workers, "IN_FLIGHT", 2 * batch)
    sent: list[int] = []
    real_send = workers._Worker.send

    def send(self: Any, tasks: Any) -> bool:
        sent.append(len(tasks))
        return real_send(self, tasks)

    monkeypatch.setattr(workers._Worker, "send", send)
    assert build(b, env_b, monkeypatch, 2) == serial
    assert sent and max(sent) == batch and sum(sent) == len(serial["index"]["sessions"])


def _grow_claude(root: Path) -> None:
    path = store_changes.append_claude_reply(root, "Now the zebrafish can count.")
    os.utime(path, ns=(1_800_000_000_000_000_000,) * 2)  # the same in both copies: keys hash it


def test_an_incremental_update_by_the_workers_keeps_what_was_there(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    build(a, env_a, monkeypatch, 0)
    build(b, env_b, monkeypatch, 2)
    for root in (a, b):
        _grow_claude(root)
        next((root / "codex").rglob("rollout-*.jsonl")).unlink()
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "2")
    res = service(b, env_b).search("zebrafish")
    st = res.refreshed
    assert st is not None and st.indexed == 1 and st.steps_written == 1 and st.steps_kept >= 6 and st.removed == 1
    assert build(b, env_b, monkeypatch, 2) == build(a, env_a, monkeypatch, 0)


def test_workers_that_cannot_start_leave_the_build_to_the_writer(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    monkeypatch.setattr(workers.sys, "executable", "/bin/false")  # each worker exits at once
    outcomes: list[Any] = []
    real_run = workers.run

    def watched(tasks: Any, env: Any, environ: Any, n: int, cache_dir: str | None = None, **kw: Any) -> Any:
        for pos, prepared in real_run(tasks, env, environ, n, cache_dir, **kw):
            outcomes.append(prepared)
            yield pos, prepared

    monkeypatch.setattr(workers, "run", watched)
    assert build(b, env_b, monkeypatch, 2) == serial
    assert outcomes and all(p is None for p in outcomes)


def test_the_worker_count(monkeypatch: pytest.MonkeyPatch) -> None:
    assert workers.count({"SEGUE_SEARCH_WORKERS": "0"}) == 0
    assert workers.count({"SEGUE_SEARCH_WORKERS": "3"}) == 3
    assert workers.count({"SEGUE_SEARCH_WORKERS": "many"}) == 0  # unreadable: the serial build
    assert 1 <= workers.count({}) <= workers.MAX_WORKERS


def test_a_cancelled_parallel_build_stops_its_workers_and_keeps_what_was_written(
        two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from segue.search import Cancelled

    a, _b, env_a, _env_b = two
    started: list[Any] = []

    class Recorded(workers._Worker):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            started.append(self)

    monkeypatch.setattr(workers, "_Worker", Recorded)
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "2")
    svc = service(a, env_a)
    seen: list[int] = []
    with pytest.raises(Cancelled):
        svc.search("files", progress=lambda n, total: seen.append(n), cancelled=lambda: len(seen) >= 3)
    assert len(started) == 2 and all(w.proc.returncode is not None for w in started)  # none left running
    con = sqlite3.connect(a / "segue" / "cache" / FILE_NAME)
    written = con.execute("SELECT count(*) FROM sessions").fetchone()[0]
    con.close()
    assert written == 3  # whole sessions, committed; the rest is indexed next time
    res = service(a, env_a).search("files")
    assert res.total > 0 and res.refreshed is not None and res.refreshed.indexed > 0


def test_workers_keep_the_redaction_patterns_they_compiled(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers load and save the state directory's kept patterns (segue.recache): with this process's own
    use/save turned off, the kept file can only be theirs. Control: without a cache directory they keep none."""
    from segue import recache

    a, b, env_a, env_b = two
    monkeypatch.setattr(recache, "use", lambda _dir: None)
    monkeypatch.setattr(recache, "save", lambda: None)
    build(a, env_a, monkeypatch, 2)
    assert list((a / "segue" / "cache").glob("redact-re-*")), "the workers kept no pattern"
    real_run = workers.run
    monkeypatch.setattr(workers, "run", lambda tasks, env, environ, n, cache_dir=None, **kw:
                        real_run(tasks, env, environ, n, None, **kw))
    build(b, env_b, monkeypatch, 2)
    assert not list((b / "segue" / "cache").glob("redact-re-*"))


def test_workers_start_only_for_work_worth_their_start(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`_work_ms`: a fixed cost per session plus its own file's size; a database's sessions count no size."""
    from segue.model import Session

    big, db = tmp_path / "big.jsonl", tmp_path / "store.db"
    big.write_bytes(b"x" * 2_000_000)
    db.write_bytes(b"x" * 50_000_000)
    own = [(Session(runtime="claude", id="a", store_path=str(big)), "k")]
    shared = [(Session(runtime="opencode", id=str(i), store_path=str(db)), "k") for i in range(3)]
    counts = {str(big): 1, str(db): 3}
    assert I._work_ms(own, counts) == pytest.approx(I.WORK_MS_PER_SESSION + 2 * I.WORK_MS_PER_MB)
    assert I._work_ms(shared, counts) == pytest.approx(3 * I.WORK_MS_PER_SESSION)
    missing = [(Session(runtime="claude", id="m", store_path=str(tmp_path / "gone.jsonl")), "k")]
    assert I._work_ms(missing, {}) == pytest.approx(I.WORK_MS_PER_SESSION)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 5.0)
    assert I._work_ms(own * 100, counts) < 5.0 + I.WORK_MS_PER_SESSION + 2 * I.WORK_MS_PER_MB  # stops counting
