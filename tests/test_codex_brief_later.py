"""Codex briefs read command items' outputs late (`Reader.brief_steps`, `StepBuilder(recent=…)`): an
`item_completed` `CommandExecution` is decoded without its `aggregated_output`, and only the outputs of the
last steps are decoded, when the iteration ends. The brief must be the reference's (fast paths off), and
the steps the same in every field, outputs included on the last steps, on every Codex store and
serialization the reader contract knows and on a rollout built to exercise the deferral (outputs of every
size and script, escapes, invalid UTF-8, `Output:` headers, trailing blanks, more commands than a brief
shows).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from segue.brief import MAX_STEPS, build_facts
from segue.listing import reader_for
from segue.model import ReadStats, Step
from segue.redact import Redactor
from segue.stores.base import Env
from segue.stores.codex import fast
from tests.test_reader_contract import STORES, _tree

VARIANTS = ("", "spaced", "sort_keys", "reversed", "crlf", "bom", "blank_lines", "torn")
CODEX_STORES = [n for n, (rts, _) in STORES.items() if rts == ("codex",)]


def _reader(home: Path, fast_on: bool, environ: dict[str, str] | None = None) -> Any:
    return reader_for("codex", Env(home=home, environ={**(environ or {}),
                                                       "SEGUE_FAST_PATHS": "1" if fast_on else "0"}))


def _sessions(reader: Any) -> list[Any]:
    return [s for src in reader.sources() for s in reader.summarize(src)]


def _briefs(home: Path, fast_on: bool, late: bool, environ: dict[str, str] | None = None) -> dict[str, Any]:
    reader = _reader(home, fast_on, environ)
    out: dict[str, Any] = {}
    for s in _sessions(reader):
        stats = ReadStats()
        steps = reader.brief_steps(s, stats, MAX_STEPS) if late else reader.steps(s, stats)
        out[s.id] = build_facts(s, steps, stats, Redactor(environ={})).to_json()
    return out


def _steps(home: Path, late: bool, environ: dict[str, str] | None = None
           ) -> dict[str, tuple[list[Step], ReadStats]]:
    reader = _reader(home, True, environ)
    out = {}
    for s in _sessions(reader):
        stats = ReadStats()
        it = reader.brief_steps(s, stats, MAX_STEPS) if late else reader.steps(s, stats)
        out[s.id] = (list(it), stats)
    return out


def _same_steps(home: Path, environ: dict[str, str] | None = None) -> None:
    """Late outputs: every step equal to the plain read's but for the output of steps before the last
    MAX_STEPS, which nobody reads; the last MAX_STEPS equal in full; the same stats."""
    want, got = _steps(home, False, environ), _steps(home, True, environ)
    assert want and want.keys() == got.keys()
    for sid, (w, ws) in want.items():
        g, gs = got[sid]
        assert len(g) == len(w), sid
        cut = max(0, len(w) - MAX_STEPS)
        assert g[cut:] == w[cut:], sid
        strip = [dataclasses.replace(st, output=None) for st in w[:cut]]
        assert [dataclasses.replace(st, output=None) for st in g[:cut]] == strip, sid
        assert (gs.damaged_lines, gs.problems, gs.bytes_read) == (ws.damaged_lines, ws.problems, ws.bytes_read)


@pytest.fixture
def count_later(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    seen = {"later": 0}
    real = fast.command_item_later

    def counting(raw: bytes, at: int) -> Any:
        r = real(raw, at)
        seen["later"] += r is not None
        return r

    from segue.stores.codex import steps

    monkeypatch.setattr(steps, "command_item_later", counting)
    return seen


@pytest.mark.parametrize("variant", VARIANTS, ids=[v or "as_written" for v in VARIANTS])
@pytest.mark.parametrize("name", CODEX_STORES)
def test_late_outputs_give_the_reference_brief(name: str, variant: str,
                                               tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _tree(name, variant, tmp_path_factory)
    home = store.root / store.home
    environ = {k: str(store.root / v) for k, v in store.environ.items()}  # (the hand-made store's CODEX_HOME)
    want = _briefs(home, fast_on=False, late=False, environ=environ)
    assert want  # sessions were found: something is compared
    assert _briefs(home, fast_on=True, late=True, environ=environ) == want
    assert _briefs(home, fast_on=False, late=True, environ=environ) == want  # fast paths off, nothing late
    _same_steps(home, environ)


# ---------------------------------------------------------------------------------------------------------
# A rollout that exercises the deferral


def _line(ts: str, kind: str, payload: dict[str, Any]) -> bytes:
    return json.dumps({"timestamp": ts, "type": kind, "payload": payload}, separators=(",", ":"),
                      ensure_ascii=False).encode() + b"\n"


OUTPUTS = [
    "x" * 10,  # short: decoded with its line
    "line of output\n" * 200,
    "Chunk ID: 1\nProcess exited with code 0\nOutput:\n" + "after the header\n" * 300,
    "ünïcödé ✓ 漢字 " * 300 + "\n\n   \n",  # non-ASCII, trailing blanks
    "emoji 😀 and \"quotes\" and \\back\\slashes\\ " * 200,
    "tail only\n" * 5000,  # longer than what a brief keeps
    "\tcontrol \x01 chars \x1f\n" * 300,
    "   \n" * 600,  # blanks only: no output
]


def _rollout(commands: int, bad_utf8: bool = False) -> bytes:
    out = [_line("2026-01-01T00:00:00.000Z", "session_meta", {"id": "019a0000-0000-7000-8000-000000000001",
                                                              "cwd": "/w", "cli_version": "0.171.0"}),
           _line("2026-01-01T00:00:00.000Z", "event_msg", {"type": "user_message", "message": "do it"})]
    for i in range(commands):
        ts = f"2026-01-01T00:{i // 60 % 60:02d}:{i % 60:02d}.{i % 1000:03d}Z"
        cid = f"call_{i}"
        text = OUTPUTS[i % len(OUTPUTS)] + f"\nend of {i}"
        out.append(_line(ts, "response_item", {"type": "function_call", "name": "exec_command", "call_id": cid,
                                               "arguments": json.dumps({"cmd": f"make step{i}"})}))
        item = {"type": "CommandExecution", "id": cid, "command": ["/bin/bash", "-lc", f"make step{i}"],
                "cwd": "/w", "status": "completed", "aggregated_output": text, "exit_code": i % 3}
        line = _line(ts, "event_msg", {"type": "item_completed", "thread_id": "t", "turn_id": "u", "item": item})
        if bad_utf8 and i % 5 == 1:
            line = line.replace(b"line of output", b"line \xff of output", 1)
        out.append(line)
        out.append(_line(ts, "response_item", {"type": "function_call_output", "call_id": cid, "output": text}))
        if i % 7 == 3:
            out.append(_line(ts, "event_msg", {"type": "agent_message", "message": f"note {i}"}))
    out.append(_line("2026-01-01T01:00:00.000Z", "event_msg", {"type": "task_complete",
                                                               "last_agent_message": "done"}))
    return b"".join(out)


def _home(tmp: Path, data: bytes) -> Path:
    d = tmp / "home/.codex/sessions/2026/01/01"
    d.mkdir(parents=True)
    (d / "rollout-2026-01-01T00-00-00-019a0000-0000-7000-8000-000000000001.jsonl").write_bytes(data)
    return tmp / "home"


@pytest.mark.parametrize("commands", [3, MAX_STEPS - 1, 100])
@pytest.mark.parametrize("bad_utf8", [False, True])
def test_late_outputs_on_every_kind_of_output(tmp_path: Path, commands: int, bad_utf8: bool,
                                              count_later: dict[str, int]) -> None:
    home = _home(tmp_path, _rollout(commands, bad_utf8))
    want = _briefs(home, fast_on=False, late=False)
    count_later["later"] = 0
    assert _briefs(home, fast_on=True, late=True) == want
    assert count_later["later"] > 0, "no command item was read late: nothing was compared"
    assert any(st["text"].count("\n") > 2 for f in want.values() for st in f["steps"])  # outputs are shown
    _same_steps(home)


def test_a_changed_late_output_changes_the_brief(tmp_path: Path) -> None:
    """Negative control: an output among the last steps, changed in its command item only, is seen."""
    data = _rollout(40)
    home = _home(tmp_path / "a", data)
    want = _briefs(home, fast_on=True, late=True)
    i = data.index(b"end of 39", data.rindex(b'"aggregated_output":"'))  # the end: what a brief shows
    changed = _home(tmp_path / "b", data[:i] + b"CHANGED " + data[i:])
    assert _briefs(changed, fast_on=True, late=True) != want


def test_the_later_output_decodes_as_the_line_would(tmp_path: Path) -> None:
    """`LaterOutput.text` on its own string equals the string decoded with its whole line, replacements of
    invalid UTF-8 included; a copy that does not hold the mark where expected is refused."""
    from segue.stores.codex.records import decode_records

    for text in OUTPUTS:
        rec = {"type": "item_completed", "item": {"type": "CommandExecution", "id": "c",
                                                  "aggregated_output": text + "x" * 1100, "exit_code": 0}}
        for raw in (_line("2026-01-01T00:00:00.000Z", "event_msg", rec),
                    _line("2026-01-01T00:00:00.000Z", "event_msg", rec).replace(b"x" * 10, b"x\xfex", 1)):
            whole = decode_records(raw)[0][0]["payload"]["item"]["aggregated_output"]
            obj = fast.command_item_later(raw, raw.index(b'"item":'))
            if '"' in text:  # escaped quotes this dense: decoded with the line (a walk would cost more)
                assert obj is None
                continue
            assert obj is not None
            later = obj["payload"]["item"]["aggregated_output"]
            assert isinstance(later, fast.LaterOutput) and later.text() == whole
    both = _line("t", "event_msg", {"type": "item_completed", "item": {
        "type": "CommandExecution", "aggregated_output": "y" * 2000, "aggregatedOutput": "z"}})
    assert fast.command_item_later(both, 0) is None


def test_late_outputs_with_the_stdlib_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              count_later: dict[str, int]) -> None:
    """Without orjson (lines decoded as text by the stdlib): the same brief."""
    from segue.stores import base
    from segue.stores.codex import records

    monkeypatch.setattr(base, "_fast_loads", None)
    monkeypatch.setattr(records, "FAST_JSON", False)
    home = _home(tmp_path, _rollout(50, bad_utf8=True))
    want = _briefs(home, fast_on=False, late=False)
    assert _briefs(home, fast_on=True, late=True) == want
    assert count_later["later"] > 0
    _same_steps(home)


def test_a_lone_output_is_what_the_scan_for_a_second_record_says() -> None:
    """`_alone` (a short walk to the output string's end) decides as `_skip`'s scan of the whole line, on
    outputs of every kind, alone, followed by other members, or with a second record run in (#24425)."""
    import random

    from segue.stores.codex.fast import _CALL_ID_AT_RE, _ENVELOPE_RE, _SKIP, _alone, _skip

    rng = random.Random(11)
    pieces = ["text ", "\n", '"', "\\", "{", "}", '{"timestamp"', "\\\\", "é", "\r\n", "  "]
    second = _line("2026-01-01T00:00:01.000Z", "event_msg", {"type": "agent_message", "message": "hi"})
    checked = alone = 0
    for _ in range(3000):
        out = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 30)))
        payload: dict[str, Any] = {"type": "function_call_output", "call_id": "call_1", "output": out}
        if rng.random() < 0.2:
            payload["extra"] = {"k": "v"}  # the output is not the last member
        bare = rng.random() < 0.3
        rec = payload if bare else {"timestamp": "2026-01-01T00:00:00.000Z", "type": "response_item",
                                    "payload": payload}
        raw = json.dumps(rec, separators=(",", ":"), ensure_ascii=rng.random() < 0.5).encode() + b"\n"
        if rng.random() < 0.3:
            raw = raw[:rng.randint(len(raw) // 2, len(raw) - 1)] + second  # a cut record, the next run in
        if rng.random() < 0.2:
            raw = raw.replace(b"\n", b"\r\n")
        at = raw.find(b'"call_id"')
        m = _CALL_ID_AT_RE.match(raw, at) if at >= 0 else None
        if m is None:
            continue
        if not bare:
            env = _ENVELOPE_RE.match(raw)
            assert env is not None
        got = _alone(raw, at, m, bare)
        assert got == (_skip(raw, at, bare) is _SKIP), raw
        checked += 1
        alone += got
    assert checked > 2000 and 0 < alone < checked


def test_lines_held_for_later_stay_short() -> None:
    """Memory: the last steps' undecoded outputs are held with their lines, so only lines shorter than
    CUT_MIN are held (a longer one is read from its ends at once); the brief is the same either way."""
    from segue.stores.codex.fast import CUT_MIN
    from segue.stores.codex.steps import StepBuilder

    data = _rollout(60).replace(b"tail only", b"tail only " * 40)  # some outputs of hundreds of KiB
    b = StepBuilder("/w", recent=MAX_STEPS)
    stats = ReadStats()
    held = 0
    for raw in data.splitlines(keepends=True):
        list(b.feed_raw(raw, True, stats))
        assert b.later is not None
        held = max(held, len(b.later))
        assert all(len(later.raw) < CUT_MIN for _, later, _ in b.later)
    assert held == MAX_STEPS
    assert max(len(ln) for ln in data.splitlines()) > 10 * CUT_MIN
