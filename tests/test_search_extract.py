"""The search-only extraction (`Reader.search_steps`, e.g. stores/opencode/search.py) gives the search index
exactly what the reference `Reader.steps()` gives it: per session the same steps in `kind`, `text`, `exit_code`
and `path` (all the index hashes and stores), on every store of the reader contract (real fixtures, hand-made
generations, tool-output-heavy and generated corpora) in every serialisation variant (spaces, indent, key
orders, CRLF, BOM, blank lines, a torn last line); and the index built either way is the same row for row.
SEGUE_FAST_PATHS=0 turns the extraction off."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from segue.listing import reader_for
from segue.model import ReadStats
from segue.stores.base import Env
from tests.test_reader_contract import STORES, VARIANTS, Store, _tree
from tests.test_search import copy_stores, service
from tests.test_search_build import dump


def _env(store: Store, fast: bool) -> Env:
    root = store.root
    return Env(home=root / store.home, environ={**{k: str(root / v) for k, v in store.environ.items()},
                                                "SEGUE_FAST_PATHS": "1" if fast else "0"})


def indexed(store: Store, runtimes: tuple[str, ...], extract: bool) -> dict[str, Any]:
    """Per session: what the index takes of its steps, from the extraction or from the reference."""
    env = _env(store, fast=extract)
    out: dict[str, Any] = {}
    for rt in runtimes:
        reader = reader_for(rt, env)
        for src in reader.sources():
            try:
                sessions = reader.summarize(src)
            except OSError:
                continue
            for s in sessions:
                it = reader.search_steps(s, ReadStats()) if extract else reader.steps(s, ReadStats())
                key = f"{rt}:{s.id}:{os.path.relpath(s.store_path, store.root)}"
                out[key] = [(st.kind, st.text, st.exit_code, st.path) for st in it]
    return out


_REF: dict[str, dict[str, Any]] = {}


def _reference(name: str, factory: pytest.TempPathFactory) -> dict[str, Any]:
    if name not in _REF:
        _REF[name] = indexed(_tree(name, "", factory), STORES[name][0], extract=False)
        assert any(_REF[name].values()), f"{name}: no steps at all"
    return _REF[name]


def _first_difference(want: dict[str, Any], got: dict[str, Any]) -> str:
    if set(want) != set(got):
        return f"sessions differ: missing {sorted(set(want) - set(got))}, extra {sorted(set(got) - set(want))}"
    for k in want:
        if want[k] != got[k]:
            for i, (a, b) in enumerate(zip(want[k], got[k], strict=False)):
                if a != b:
                    return f"{k} step {i}:\n  want {str(a)[:800]}\n  got  {str(b)[:800]}"
            return f"{k}: {len(want[k])} steps wanted, {len(got[k])} got"
    return ""


def _params() -> list[Any]:
    return [pytest.param(name, variant, id=f"{name}-{variant or 'as-written'}",
                         marks=[pytest.mark.slow] if name.startswith("generated") else [])
            for name in STORES for variant in ("", *VARIANTS)]


@pytest.mark.parametrize(("name", "variant"), _params())
def test_extraction_gives_the_index_what_steps_gives(name: str, variant: str,
                                                     tmp_path_factory: pytest.TempPathFactory) -> None:
    want = _reference(name, tmp_path_factory)
    got = indexed(_tree(name, variant, tmp_path_factory), STORES[name][0], extract=True)
    problem = _first_difference(want, got)
    if problem:
        pytest.fail(problem, pytrace=False)


def test_the_comparison_catches_a_difference(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Negative control: a store whose command really differs is caught by the same comparison."""
    want = _reference("real-opencode", tmp_path_factory)
    store = _tree("real-opencode", "", tmp_path_factory)
    import shutil
    import sqlite3

    other = tmp_path_factory.mktemp("control")
    shutil.copytree(store.root / store.home, other / store.home, symlinks=True)
    changed = 0
    for p in (other / store.home).rglob("*.db"):
        con = sqlite3.connect(p)
        changed += con.execute("UPDATE part SET data = replace(data, 'nonexistent-dir', 'another-dir')").rowcount
        con.commit()
        con.close()
    assert changed
    got = indexed(Store(other, store.home, store.environ), ("opencode",), extract=True)
    assert "another-dir" in _first_difference(
        {k.replace(str(other), str(store.root)): v for k, v in want.items()}, got)


def test_the_extraction_is_used_and_switched_off_by_fast_paths_0(tmp_path_factory: pytest.TempPathFactory,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenCode's database sessions never reach steps() while fast paths are on; with SEGUE_FAST_PATHS=0 they
    all do."""
    from segue.stores.opencode.reader import OpencodeReader

    store = _tree("real-opencode", "", tmp_path_factory)
    calls: list[str] = []
    real = OpencodeReader.steps

    def counted(self: Any, s: Any, stats: ReadStats) -> Any:
        calls.append(s.id)
        return real(self, s, stats)

    monkeypatch.setattr(OpencodeReader, "steps", counted)
    fast = indexed(store, ("opencode",), extract=True)
    db = [k for k in fast if k.endswith(".db")]
    assert db and not calls
    calls.clear()
    env = _env(store, fast=False)
    reader = reader_for("opencode", env)
    for src in reader.sources():
        for s in reader.summarize(src):
            list(reader.search_steps(s, ReadStats()))
    assert len(calls) >= len(db)


def test_index_built_from_the_extraction_is_the_reference_index_row_for_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The whole build (serial), once with the extraction and once with SEGUE_FAST_PATHS=0 (steps()): every
    row of `sessions` and `docs` equal (hashes included)."""
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    built = []
    for name, fast in (("a", "1"), ("b", "0")):
        root = tmp_path / name
        root.mkdir()
        environ = {**copy_stores(root), "SEGUE_FAST_PATHS": fast}
        svc = service(root, environ)
        assert svc.search('"write what happened"', limit=100).total > 0
        built.append(json.loads(json.dumps(dump(root)).replace(str(root), "<root>")))
    assert built[0]["docs"] and built[0] == built[1]


CLINE_STORES = [n for n, (rts, _) in STORES.items() if "cline" in rts]


@pytest.mark.parametrize(("name", "variant"), [
    pytest.param(n, v, id=f"{n}-{v or 'as-written'}", marks=[pytest.mark.slow] if n.startswith("generated") else [])
    for n in CLINE_STORES for v in ("", *VARIANTS)])
def test_cline_element_by_element_gives_what_the_stream_gives(name: str, variant: str, monkeypatch: pytest.MonkeyPatch,
                                                              tmp_path_factory: pytest.TempPathFactory) -> None:
    """Cline's indented transcripts read one element at a time (what bigger transcripts get), every
    transcript forced onto that path; torn and damaged ones hand over to the stream mid-way."""
    from segue.stores.cline import search as cs

    want = _reference(name, tmp_path_factory)
    monkeypatch.setattr(cs, "WHOLE_MAX", 0)
    used: list[str] = []
    real = cs.indented_messages

    def counted(path: str) -> Any:
        got = real(path)
        if got is not None:
            used.append(path)
        return got

    monkeypatch.setattr(cs, "indented_messages", counted)
    got = indexed(_tree(name, variant, tmp_path_factory), STORES[name][0], extract=True)
    problem = _first_difference(want, got)
    if problem:
        pytest.fail(problem, pytrace=False)
    if variant in ("", "crlf", "bom", "blank_lines", "torn") and name.startswith("real"):
        assert used  # the element path did read them (indented as Cline writes)


def test_cline_damage_mid_transcript_hands_over_to_the_stream(tmp_path: Path) -> None:
    """An element that is not JSON, one with invalid UTF-8 and a torn end: the elements before come from the
    element path, the rest from the stream, and the whole is the stream's."""
    from segue.stores.cline import search as cs
    from segue.stores.jsonstream import JsonStream

    msgs = [{"role": "user", "content": [{"type": "text", "text": f"m{i} \u00e9"}], "ts": i} for i in range(6)]
    text = json.dumps({"version": 1, "messages": msgs, "after": 1}, indent=2, ensure_ascii=False).encode()
    cases = {
        "clean": text,
        "damaged": text.replace(b'"m2 ', b'"m2 \x01bad', 1).replace(b'"ts": 2', b'"ts": 2,,', 1),
        "bad-utf8": text.replace("m3 \u00e9".encode(), b"m3 \xff", 1),
        "torn": text[: text.index(b'"m4')],
    }
    for label, data in cases.items():
        p = tmp_path / f"{label}.messages.json"
        p.write_bytes(data)
        with open(p, "rb") as f:
            want = list(JsonStream(f).array_at("messages"))
        got = cs.indented_messages(str(p))
        assert got is not None, label
        assert list(got) == want, label
    assert want and len(want) < len(msgs)  # the torn one ends early


@pytest.mark.parametrize("keep", [0, 700])
def test_gemini_partly_kept_records_give_the_same_steps(keep: int, monkeypatch: pytest.MonkeyPatch,
                                                        tmp_path_factory: pytest.TempPathFactory) -> None:
    """Gemini's extraction keeps decoded records up to a byte budget and decodes the rest again: with none
    kept and with only some kept, the steps are still the reference's."""
    from segue.stores.gemini import reader as gr

    monkeypatch.setattr(gr, "KEEP_DECODED", keep)
    for variant in ("", "reversed", "torn"):
        want = _reference("real-gemini", tmp_path_factory)
        got = indexed(_tree("real-gemini", variant, tmp_path_factory), ("gemini",), extract=True)
        problem = _first_difference(want, got)
        if problem:
            pytest.fail(f"{variant}: {problem}", pytrace=False)


def test_opencode_ties_in_time_and_id_keep_the_references_order(tmp_path: Path) -> None:
    """Messages written in the same millisecond and parts without an id (NULL, which a text primary key allows)
    are ordered as the reference's index walks order them (their rowids), so the joined query gives the same
    steps; control: the same rows without the ties give their own, different, steps."""
    from tests.test_store_opencode import SID, Db, bash, data_dir, reader, text

    def build(home: Path, ties: bool) -> list[Any]:
        db = Db(data_dir(home) / "opencode.db")
        db.session(SID, title="ties")
        t = db.tick()
        for i, word in enumerate(("alpha", "beta", "gamma")):
            mid = f"msg_{t:012x}{i:04d}tie"
            db.con.execute("INSERT INTO message VALUES (?,?,?,?,?)",
                           (mid, SID, t if ties else t + i, t, json.dumps({"role": "user" if i == 0 else "assistant",
                                                                         "time": {"created": t}})))
            parts = [text(f"{word} one"), bash(f"echo {word}"), text(f"{word} two")]
            for j, part in enumerate(reversed(parts) if ties else parts):
                pid = None if ties else f"prt_{t:012x}{i:02d}{j:02d}"
                db.con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (pid, mid, SID, t, t, json.dumps(part)))
        db.close()
        r = reader(home)
        (session,) = [s for src in r.sources() for s in r.summarize(src)]
        want = [(s.kind, s.text, s.exit_code, s.path) for s in r.steps(session, ReadStats())]
        got = [(s.kind, s.text, s.exit_code, s.path) for s in r.search_steps(session, ReadStats())]
        assert want and got == want
        return got

    assert build(tmp_path / "ties", True) != build(tmp_path / "plain", False)
