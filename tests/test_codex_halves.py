"""A big Codex rollout's brief read in two processes (`stores.codex.halves`): the steps and stats must be the
one-pass read's (`Reader.steps(recent=…)`), whatever the split and the child's start: on the real and hand-made
stores in every serialization the reader contract knows, and on rollouts built so that the state at the split
is hard to reach (a call open across it, a turn that began long before, messages held without events, damaged
and oversized lines, a cut last line). Each case checks that the child's half was taken somewhere (the fast
path ran) and refused somewhere else (the fallback ran); a builder key that leaves state out is caught (the
control), and a child that fails or cannot fork leaves the one-pass read.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from segue import alongside
from segue.brief import MAX_STEPS, build_facts
from segue.listing import reader_for
from segue.model import ReadStats, Step
from segue.redact import Redactor
from segue.stores.base import Env
from segue.stores.codex import halves, records
from segue.stores.codex.steps import StepBuilder
from tests.test_codex_brief_later import OUTPUTS, _line
from tests.test_reader_contract import STORES, _tree

CODEX_STORES = [n for n, (rts, _) in STORES.items() if rts == ("codex",)]
VARIANTS = ("", "spaced", "sort_keys", "reversed", "crlf", "bom", "blank_lines", "torn")
R = MAX_STEPS


@pytest.fixture(autouse=True)
def _forks() -> None:
    if not (alongside.enabled() and alongside.sys.platform == "linux"):
        pytest.skip("segue.alongside forks on Linux only")  # (the CI runs Linux: this never skips there)


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many splits took the child's half and how many read on themselves."""
    counts = {"taken": 0, "refused": 0}
    real = halves.agrees

    def counting(got: Any, b: StepBuilder) -> bool:
        ok = real(got, b)
        counts["taken" if ok else "refused"] += 1
        return ok

    monkeypatch.setattr(halves, "agrees", counting)
    return counts


def _line_starts(path: str) -> list[int]:
    data = Path(path).read_bytes()
    out, at = [], 0
    for line in data.splitlines(keepends=True):
        out.append(at)
        at += len(line)
    return out


def _splits(path: str, most: int = 24) -> Iterator[tuple[int, int]]:
    """(child's start, split) pairs over the file: splits spread over its lines, the child starting at the split
    (no warm-up: a fresh builder's state), 1, 3 and 12 lines before, and where `plan` puts it."""
    starts = _line_starts(path)
    if len(starts) < 3:
        return
    step = max(1, len(starts) // most)
    size = os.path.getsize(path)
    for j in range(1, len(starts), step):
        for back in (0, 1, 3, 12):
            if j - back >= 0:
                yield starts[j - back], starts[j]
        t = halves.turn_start(path, starts[j], 0)
        if t is not None and t < starts[j]:
            yield t, starts[j]
    old = halves.SPLIT_MIN, halves.WARM
    try:
        halves.SPLIT_MIN, halves.WARM = 0, max(64, size // 8)
        p = halves.plan(path, size)
    finally:
        halves.SPLIT_MIN, halves.WARM = old
    if p is not None:
        yield p


def _key(steps: list[Step]) -> list[Step]:
    """What a brief reads: every field, outputs on the last R steps only."""
    cut = max(0, len(steps) - R)
    return [dataclasses.replace(s, output=None) for s in steps[:cut]] + steps[cut:]


def _one_pass(reader: Any, session: Any) -> tuple[list[Step], tuple[Any, ...]]:
    stats = ReadStats()
    steps = list(reader.steps(session, stats, recent=R))
    return _key(steps), (stats.damaged_lines, stats.problems, stats.bytes_read)


def _two(path: str, cwd: str | None, plan: tuple[int, int], monkeypatch: pytest.MonkeyPatch
         ) -> tuple[list[Step], tuple[Any, ...]]:
    monkeypatch.setattr(halves, "plan", lambda _p, _s: plan)
    stats = ReadStats()
    it = halves.steps(path, cwd, stats, R)
    assert it is not None, "no child started"
    steps = list(it)
    return _key(steps), (stats.damaged_lines, stats.problems, stats.bytes_read)


def _check_file(home: Path, monkeypatch: pytest.MonkeyPatch, most: int = 24, environ: dict[str, str] | None = None
                ) -> int:
    """Every split of every rollout under `home` against the one-pass read; returns how many were compared."""
    reader = reader_for("codex", Env(home=home, environ=environ or {}))
    compared = 0
    for src in reader.sources():
        if src.path.endswith(".zst"):
            continue
        for session in reader.summarize(src):
            want = _one_pass(reader, session)
            for plan in _splits(src.path, most):
                with monkeypatch.context() as m:
                    got = _two(src.path, session.cwd, plan, m)
                assert got == want, (src.path, plan)
                compared += 1
    return compared


@pytest.mark.parametrize("variant", VARIANTS, ids=[v or "as_written" for v in VARIANTS])
@pytest.mark.parametrize("name", CODEX_STORES)
def test_two_halves_read_the_stores_as_one_pass(name: str, variant: str, seen: dict[str, int],
                                                monkeypatch: pytest.MonkeyPatch,
                                                tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _tree(name, variant, tmp_path_factory)
    environ = {k: str(store.root / v) for k, v in store.environ.items()}
    assert _check_file(store.root / store.home, monkeypatch, most=12, environ=environ) > 0
    assert seen["taken"] > 0, "the child's half was never taken: the fast path was not compared"


# ---------------------------------------------------------------------------------------------------------
# Rollouts built to make the split hard


def _turn(t: int, commands: int, *, events: bool = True, open_call: bool = False, cwd: str = "/w") -> list[bytes]:
    ts = f"2026-01-01T{t // 60 % 24:02d}:{t % 60:02d}:00.000Z"
    out = [_line(ts, "turn_context", {"turn_id": f"turn{t}", "cwd": f"{cwd}/{t % 3}"})]
    if events:
        out.append(_line(ts, "event_msg", {"type": "user_message", "message": f"request {t}"}))
        if t % 3 == 2:  # the same request twice in a row: the second is dropped (the last step is compared)
            out.append(_line(ts, "event_msg", {"type": "user_message", "message": f"request {t}"}))
    else:
        out.append(_line(ts, "response_item", {"type": "message", "role": "user",
                                               "content": [{"type": "input_text", "text": f"request {t}"}]}))
    for i in range(commands):
        cid = f"call_{t}_{i}"
        text = OUTPUTS[(t + i) % len(OUTPUTS)] + f"\nend of {t}.{i}"
        cmd = f"make step{i}" if i % 4 else f"cat > out{t}.txt <<'EOF'\nline\nEOF"
        out.append(_line(ts, "response_item", {"type": "function_call", "name": "exec_command", "call_id": cid,
                                               "arguments": json.dumps({"cmd": cmd})}))
        item = {"type": "CommandExecution", "id": cid, "command": ["/bin/bash", "-lc", cmd], "cwd": "/w",
                "status": "completed", "aggregated_output": text, "exit_code": (t + i) % 3}
        if events:
            out.append(_line(ts, "event_msg", {"type": "item_completed", "thread_id": "t", "turn_id": "u",
                                               "item": item}))
        out.append(_line(ts, "response_item", {"type": "function_call_output", "call_id": cid, "output": text}))
        if i % 3 == 1:
            msg = f"note {t}.{i}"
            if events:
                out.append(_line(ts, "event_msg", {"type": "agent_message", "message": msg}))
            out.append(_line(ts, "response_item", {"type": "message", "role": "assistant",
                                                   "content": [{"type": "output_text", "text": msg}]}))
    if open_call:  # a call whose output never comes: settled by the next turn's start (or the file's end)
        out.append(_line(ts, "response_item", {"type": "function_call", "name": "exec_command",
                                               "call_id": f"open_{t}", "arguments": '{"cmd": "sleep 99"}'}))
    if t % 3 == 0 and events:  # the turn's last message, repeated by task_complete: dropped there
        out.append(_line(ts, "event_msg", {"type": "agent_message", "message": f"done {t}"}))
    if t % 2 == 0 or not events:
        out.append(_line(ts, "event_msg", {"type": "task_complete", "last_agent_message": f"done {t}"}))
    return out


def _write(tmp: Path, lines: list[bytes]) -> Path:
    meta = _line("2026-01-01T00:00:00.000Z", "session_meta", {"id": "019a0000-0000-7000-8000-000000000009",
                                                              "cwd": "/w", "cli_version": "0.171.0"})
    d = tmp / "home/.codex/sessions/2026/01/01"
    d.mkdir(parents=True)
    (d / "rollout-2026-01-01T00-00-00-019a0000-0000-7000-8000-000000000009.jsonl").write_bytes(
        meta + b"".join(lines))
    return tmp / "home"


def _many_turns(**kw: Any) -> list[bytes]:
    return [ln for t in range(12) for ln in _turn(t, 2 + t % 5, open_call=t % 4 == 1, **kw)]


def _late_duplicates() -> list[bytes]:
    """One long turn in which a command's end is recorded again much later (an `exec_command_end` for a call
    settled long before): the one-pass read ignores it (its id is settled), a child that never saw the call
    would not."""
    lines = _turn(0, 60)
    ends = [_line("2026-01-01T00:00:00.000Z", "event_msg", {
        "type": "exec_command_end", "call_id": f"call_0_{i}", "command": ["/bin/bash", "-lc", f"again {i}"],
        "exit_code": 7, "aggregated_output": "again"}) for i in range(0, 60, 6)]
    for k, end in enumerate(ends):
        lines.insert(min(len(lines), 40 + k * 25), end)
    return lines


CASES: dict[str, Any] = {
    "late duplicates in one long turn": _late_duplicates,
    "many turns": lambda: _many_turns(),
    "no events (messages held)": lambda: _many_turns(events=False),
    "one long turn": lambda: _turn(0, 60, open_call=True),
    "damaged lines": lambda: [ln if i % 17 != 5 else ln[: len(ln) // 2] + b"\n"
                              for i, ln in enumerate(_many_turns())],
    "cut last line": lambda: [*_many_turns(), _turn(99, 1)[0][:-20]],
    "run-together records": lambda: [ln if i % 23 != 7 else ln[:-1] + ln for i, ln in enumerate(_many_turns())],
}


@pytest.mark.parametrize("context", [True, False], ids=["turn context", "no turn context"])
@pytest.mark.parametrize("case", list(CASES))
def test_two_halves_read_hard_rollouts_as_one_pass(case: str, context: bool, tmp_path: Path,
                                                   seen: dict[str, int], monkeypatch: pytest.MonkeyPatch) -> None:
    if not context:  # the child does not look back for its turn's context: it starts with the session's cwd
        monkeypatch.setattr(halves, "CONTEXT_BACK", 0)
    home = _write(tmp_path, CASES[case]())
    assert _check_file(home, monkeypatch, most=80) > 20
    assert seen["taken"] > 0, "the child's half was never taken"
    assert seen["refused"] > 0, "no split was refused: the fallback was not compared"


def test_oversized_lines_around_the_split(tmp_path: Path, seen: dict[str, int],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines over MAX_LINE (read as their first 64 KiB) before, at and after the split."""
    monkeypatch.setattr(records, "MAX_LINE", 6000)
    lines = _many_turns()
    for i in range(5, len(lines), 9):
        lines[i] = lines[i][:-1] + b" " * 7000 + b"\n"
    home = _write(tmp_path, lines)
    assert _check_file(home, monkeypatch) > 20
    assert seen["taken"] > 0


def test_the_brief_is_the_one_pass_brief(tmp_path: Path, seen: dict[str, int],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """Through the reader (`brief_steps` takes the split for a file over SPLIT_MIN): the same brief."""
    home = _write(tmp_path, _many_turns() * 3)
    env = Env(home=home, environ={})
    reader = reader_for("codex", env)
    session = next(s for src in reader.sources() for s in reader.summarize(src))
    stats = ReadStats()
    want = build_facts(session, reader.steps(session, stats, recent=R), stats, Redactor(environ={})).to_json()
    monkeypatch.setattr(halves, "SPLIT_MIN", 0)
    monkeypatch.setattr(halves, "WARM", 4096)
    stats = ReadStats()
    got = build_facts(session, reader.brief_steps(session, stats, R), stats, Redactor(environ={})).to_json()
    assert seen["taken"] == 1
    assert got == want
    off = reader_for("codex", Env(home=home, environ={"SEGUE_FAST_PATHS": "0"}))
    stats = ReadStats()
    assert build_facts(session, off.brief_steps(session, stats, R), stats, Redactor(environ={})).to_json() == want
    assert seen["taken"] == 1, "fast paths off: no split"


def test_a_key_that_leaves_state_out_is_caught(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Control: with a builder key that says nothing, a child's half is taken where the state differed, and
    the comparison above sees it."""
    home = _write(tmp_path, [ln for t in range(4) for ln in _turn(t, 2, open_call=True)])
    monkeypatch.setattr(StepBuilder, "state_key", lambda self: ())
    with pytest.raises(AssertionError):
        _check_file(home, monkeypatch, most=1000)  # every split: one between an open call and its turn's end


def test_settled_ids_the_second_half_asks_about_are_compared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    """Control: taking the child's half without comparing the settled call ids it asked about gives steps the
    one-pass read does not."""
    home = _write(tmp_path, _late_duplicates())
    real = halves.agrees
    monkeypatch.setattr(halves, "agrees", lambda got, b: real((*got[:2], [], *got[3:]), b) if got else False)
    with pytest.raises(AssertionError):
        _check_file(home, monkeypatch)


def test_a_failed_or_unstarted_child_leaves_one_pass(tmp_path: Path, seen: dict[str, int],
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    home = _write(tmp_path, _many_turns())
    reader = reader_for("codex", Env(home=home, environ={}))
    session = next(s for src in reader.sources() for s in reader.summarize(src))
    want = _one_pass(reader, session)
    path = session.store_path
    plan = next(iter(_splits(path)))

    def boom(*_a: Any) -> Any:
        raise RuntimeError("child failed")

    with monkeypatch.context() as m:
        m.setattr(halves, "_second_half", boom)
        assert _two(path, session.cwd, plan, m) == want
    with monkeypatch.context() as m:
        m.setattr(halves, "_second_half", lambda *_a: os.kill(os.getpid(), 9))
        assert _two(path, session.cwd, plan, m) == want
    assert seen["taken"] == 0 and seen["refused"] == 2
    monkeypatch.setenv("SEGUE_ALONGSIDE", "0")
    monkeypatch.setattr(halves, "plan", lambda _p, _s: plan)
    assert halves.steps(path, session.cwd, ReadStats(), R) is None  # no fork: the reader reads in one pass


def test_a_consumer_that_stops_early_reaps_the_child(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _write(tmp_path, _many_turns())
    path = str(next((home / ".codex/sessions").rglob("*.jsonl")))
    plan = next(iter(_splits(path)))
    monkeypatch.setattr(halves, "plan", lambda _p, _s: plan)
    it = halves.steps(path, "/w", ReadStats(), R)
    assert it is not None
    next(iter(it))
    it.close()  # type: ignore[attr-defined]
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # no child left to reap


def test_turn_start_finds_the_last_turn_context_line(tmp_path: Path) -> None:
    lines = _many_turns()
    home = _write(tmp_path, lines)
    path = str(next((home / ".codex/sessions").rglob("*.jsonl")))
    starts = _line_starts(path)
    data = Path(path).read_bytes()
    turns = [s for s in starts if data.startswith(b'{"timestamp":"', s) and b'"type":"turn_context"' in
             data[s:s + 96]]
    assert len(turns) == 12
    for before in (starts[-1], turns[5] + 1, turns[5], turns[0] + 1):
        want = max((t for t in turns if t < before), default=None)
        assert halves.turn_start(path, before, 0) == want
    assert halves.turn_start(path, turns[5], turns[4] + 1) is None
    # a turn_context deep in a record is not the line's type
    quoted = _line("2026-01-01T00:00:00.000Z", "response_item", {"type": "function_call_output",
                                                                "call_id": "c" * 100,
                                                                "output": {"type": "turn_context"}})
    other = _write(tmp_path / "q", [quoted] * 3)
    p2 = str(next((other / ".codex/sessions").rglob("*.jsonl")))
    assert halves.turn_start(p2, os.path.getsize(p2), 0) is None


def test_a_child_whose_state_differs_is_stopped_not_waited_for(tmp_path: Path, seen: dict[str, int],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """The child notes its key's digest at the split; a parent whose digest differs ends the child and reads
    on alone at once (here the child would take a minute to finish its half)."""
    import time

    home = _write(tmp_path, _many_turns())
    reader = reader_for("codex", Env(home=home, environ={}))
    session = next(s for src in reader.sources() for s in reader.summarize(src))
    want = _one_pass(reader, session)

    def slow(*args: Any) -> Any:
        args[-1](b"x" * alongside.NOTE)  # not any builder's digest
        time.sleep(60)
        return None

    monkeypatch.setattr(halves, "_second_half", slow)
    t0 = time.monotonic()
    assert _two(session.store_path, session.cwd, next(iter(_splits(session.store_path))), monkeypatch) == want
    assert time.monotonic() - t0 < 30
    assert seen == {"taken": 0, "refused": 1}
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # killed and reaped


def test_a_noted_child_sends_its_note_then_its_result() -> None:
    child = alongside.start_noted(lambda note: (note(b"n" * alongside.NOTE), 41 + 1)[1])
    assert child is not None
    assert child.note() == b"n" * alongside.NOTE
    assert child.result() == 42
    failed = alongside.start_noted(lambda note: 1 / 0)
    assert failed is not None
    assert failed.note() is None and failed.result() is None
    bad = alongside.start_noted(lambda note: note(b"short"))
    assert bad is not None
    assert bad.note() is None
    bad.stop()


def test_dropped_repeats_across_the_split(tmp_path: Path, seen: dict[str, int],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """A request repeated in the next line, a message repeated by task_complete: every split, so one falls
    between each pair. (A child that starts between a pair has seen no event yet, so the events flag of the
    state already differs; the last step and the last message are compared too, for stores that differ.)"""
    home = _write(tmp_path, [ln for t in (0, 2, 3, 5) for ln in _turn(t, 1)])
    assert _check_file(home, monkeypatch, most=1000) > 20
    assert seen["taken"] > 0 and seen["refused"] > 0


def _snapshot(root: Path) -> dict[str, Any]:
    """Every entry under `root`: its kind, mode, size, mtime and bytes (the store as a runtime would see it)."""
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, p.read_bytes() if p.is_file() else None)
    return out


def test_a_brief_in_two_halves_leaves_the_store_as_it_was(tmp_path: Path, seen: dict[str, int],
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-only: no byte, file or time under the store changes while both processes read it; the snapshot
    sees a touched time and a new file (the controls)."""
    home = _write(tmp_path, _many_turns() * 2)
    before = _snapshot(home)
    monkeypatch.setattr(halves, "SPLIT_MIN", 0)
    monkeypatch.setattr(halves, "WARM", 4096)
    reader = reader_for("codex", Env(home=home, environ={}))
    session = next(s for src in reader.sources() for s in reader.summarize(src))
    assert list(reader.brief_steps(session, ReadStats(), R))
    assert seen["taken"] == 1
    assert _snapshot(home) == before
    rollout = Path(session.store_path)
    os.utime(rollout, ns=(rollout.stat().st_atime_ns, rollout.stat().st_mtime_ns + 1))
    assert _snapshot(home) != before
    (rollout.parent / "x.jsonl-shm").write_bytes(b"")
    assert set(_snapshot(home)) != set(before)
