"""Briefs of big, tool-output-heavy transcripts: the readers' fast paths (skips and cut decodes of long
lines, on by default) give the same brief as the reference path (`SEGUE_FAST_PATHS=0`), whatever the
serialization, for Claude Code and Codex, with orjson and with the stdlib decoder's settings (where escaped
strings are cut rather than decoded whole). The store is bench/gen/tooljson.py's: tool outputs that are JSON
inside strings (nearly every quote escaped, some twice), lines of hundreds of KiB, beside ordinary turns.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from segue.brief import build_facts
from segue.listing import reader_for
from segue.model import ReadStats
from segue.redact import Redactor
from segue.stores import jsoncut
from segue.stores.base import Env
from tests.test_reader_contract import STORES, _tree

VARIANTS = ("", "spaced", "indent", "reversed", "sort_keys", "crlf", "bom", "blank_lines", "torn")


def briefs(home: Path, runtime: str, fast: bool) -> dict[str, Any]:
    """session id -> the brief's facts as `segue brief --json` prints them (timestamps of the run aside)."""
    env = Env(home=home, environ={"SEGUE_FAST_PATHS": "1" if fast else "0"})
    reader = reader_for(runtime, env)
    out: dict[str, Any] = {}
    for src in reader.sources():
        for s in reader.summarize(src):
            stats = ReadStats()
            facts = build_facts(s, reader.steps(s, stats), stats, Redactor(environ={}))
            out[s.id] = facts.to_json()
    assert out, f"no {runtime} session in {home}"
    return out


@pytest.fixture
def count_cuts(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """How many long lines were decoded from a cut copy (a positive control: the fast path did cut)."""
    seen = {"cut": 0}
    real = jsoncut.cut_strings

    def counting(*a: Any, **k: Any) -> bytes | None:
        r = real(*a, **k)
        seen["cut"] += r is not None
        return r

    from segue.stores.claude import triage
    from segue.stores.codex import fast

    monkeypatch.setattr(triage, "cut_strings", counting)
    monkeypatch.setattr(fast, "cut_strings", counting)
    return seen


@pytest.mark.parametrize("variant", VARIANTS, ids=[v or "as_written" for v in VARIANTS])
@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_fast_paths_give_the_reference_brief(runtime: str, variant: str,
                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _tree(f"tooljson-{runtime}", variant, tmp_path_factory)
    home = store.root / store.home
    want = briefs(home, runtime, fast=False)
    assert any(f["commands"] for f in want.values())
    assert briefs(home, runtime, fast=True) == want


@pytest.mark.parametrize("runtime", ["claude", "codex"])
def test_the_stdlib_settings_cut_escaped_json_and_give_the_same_brief(
        runtime: str, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
        count_cuts: dict[str, int]) -> None:
    """Without orjson the cut copies are worth walking escaped quotes for (CUT_QUOTES 4096), up to a density
    of them; here every escaped string is walked and cut (DENSE_QUOTES off): the walk must find the true ends
    of strings full of `\\"` and `\\\\\\"`, or the brief would differ."""
    monkeypatch.setattr(jsoncut, "FAST_JSON", False)
    monkeypatch.setattr(jsoncut, "CUT_QUOTES", 4096)
    monkeypatch.setattr(jsoncut, "DENSE_QUOTES", 1 << 20)
    for variant in ("", "reversed"):
        store = _tree(f"tooljson-{runtime}", variant, tmp_path_factory)
        home = store.root / store.home
        want = briefs(home, runtime, fast=False)
        count_cuts["cut"] = 0
        assert briefs(home, runtime, fast=True) == want
        if not variant:
            assert count_cuts["cut"] > 0, "the fast path never cut a line: nothing was compared"


def test_a_different_transcript_gives_a_different_brief(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Negative control: the comparison sees a changed exit code."""
    store = _tree("tooljson-codex", "", tmp_path_factory)
    home = store.root / store.home
    want = briefs(home, "codex", fast=False)
    copy = tmp_path_factory.mktemp("changed")
    import shutil

    shutil.copytree(home, copy / "home", symlinks=True)
    for p in (copy / "home").rglob("*.jsonl"):
        data = p.read_bytes()
        p.write_bytes(data.replace(b'"exit_code":0', b'"exit_code":3'))
    got = briefs(copy / "home", "codex", fast=True)
    assert got != want


def test_the_store_is_the_tool_output_heavy_shape(tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _tree("tooljson-codex", "", tmp_path_factory)
    data = b"".join(p.read_bytes() for p in (store.root / store.home).rglob("*.jsonl"))
    assert data.count(b'\\"') > 0.9 * data.count(b'"')  # nearly every quote escaped
    assert b'\\\\\\"' in data  # and some twice
    assert max(len(ln) for ln in data.split(b"\n")) > 100_000  # long lines


assert "tooljson-claude" in STORES and "tooljson-codex" in STORES


@pytest.mark.parametrize("shape", ["plain", "torn_decodable", "torn", "oversized_middle", "oversized_last",
                                   "empty", "one_line_open", "crlf_blank"])
def test_step_lines_reads_what_iter_raw_lines_reads(shape: str, tmp_path: Path) -> None:
    """The brief's line loop (`step_lines`) is `iter_raw_lines` with a tighter common case: the same lines,
    flags and byte counts on every shape a rollout can end in."""
    from segue.stores.codex.records import MAX_LINE, iter_raw_lines, step_lines

    rec = b'{"timestamp":"2026-01-01T00:00:00.000Z","type":"event_msg","payload":{"type":"task_started"}}'
    big = b'{"type":"response_item","payload":{"type":"function_call_output","output":"' + b"x" * MAX_LINE + b'"}}'
    data = {"plain": rec + b"\n" + rec + b"\n", "torn_decodable": rec + b"\n" + rec,
            "torn": rec + b"\n" + rec[:40], "oversized_middle": rec + b"\n" + big + b"\n" + rec + b"\n",
            "oversized_last": rec + b"\n" + big, "empty": b"", "one_line_open": rec,
            "crlf_blank": rec + b"\r\n\r\n  \n" + rec + b"\r\n"}[shape]
    p = tmp_path / "r.jsonl"
    p.write_bytes(data)
    got_stats, want_stats = ReadStats(), ReadStats()
    with open(p, "rb") as f:
        want = list(iter_raw_lines(f, want_stats))
    with open(p, "rb") as f:
        got = list(step_lines(f, got_stats, lambda raw, whole, _st: [(raw, whole)]))
    assert got == want
    assert got_stats.bytes_read == want_stats.bytes_read == len(data)


def test_gemini_output_and_exit_lookups_match_their_regexes() -> None:
    """Gemini CLI's command outputs are read by `str.find` where a regex walked every character: the same
    results as the regexes (kept as the reference) on texts built from every fragment they look for."""
    import random

    from segue.stores.gemini import reader as g

    parts = ["Output: ", "Output:", "\n", "\nError: ", "\nExit Code: ", "Exit Code: ", "7", "-1", " ", "x",
             "\nSignal: ", "Signal: 9", "\nBackground PIDs: ", "\nProcess Group PGID: ", "\r\n", "é"]
    rng = random.Random(5)
    for _ in range(4000):
        text = "".join(rng.choice(parts) for _ in range(rng.randint(0, 14)))
        m = g._OUTPUT.search(text)
        assert g._output_section(text) == (m.group(1) if m else None), repr(text)
        for rx, lit in ((g._EXIT, "Exit Code: "), (g._SIGNAL, "Signal: ")):
            want, got = rx.search(text), g._line_search(rx, lit, text)
            assert (got.span() if got else None) == (want.span() if want else None), repr(text)
