"""Compact sessions (segue.compact): a cold one-shot `segue list` whose workers' sessions are held compact prints
byte for byte what the reference (SEGUE_LIST_COMPACT=0: Session objects) prints, for every argument set, on the
real runtimes' stores and on generated ones; the warm and patched listings that follow a compact cold one are the
full path's too. A compact session that left out one decoration is caught (the negative control)."""

from __future__ import annotations

import os
import shutil
import types
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from segue import cli, compact, index, listing
from segue.listing import revive_all
from tests import store_changes
from tests.test_warm import full, quick
from tests.test_warm import root as root  # the fixture, shared
from tests.test_warm_patch import check_patched, new_subagent, opencode_rows, several
from tests.test_warm_patch import spy as spy  # the fixture, shared

ARGSETS = (["list", "--json"], ["list", "--json", "--all"], ["list"], ["list", "--all", "--limit", "0"],
           ["list", "--json", "--limit", "2"], ["list", "--json", "--all", "--limit", "3"],
           ["list", "--json", "--dir", "/tmp"], ["list", "--json", "--dir", "/"])
NOW = 1_800_000_000.0  # one clock for both sides (a table prints ages)


SPILLED: list[int] = []  # per compact_all call of the `made` fixture: how many of its sessions' rows were spilled


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """Workers for every cold listing (the fixtures hold a few sources), and how many compact sessions each
    listing made."""
    monkeypatch.setattr(listing, "PARALLEL_MIN", 1)
    counts: list[int] = []
    real = compact.compact_all
    SPILLED.clear()

    def counted(blob: bytes, spill: compact.Spill | None = None) -> list[compact.Compact]:
        out = real(blob, spill)
        counts[-1] += len(out)
        SPILLED.append(sum(1 for c in out if type(c._data) is int))
        return out

    monkeypatch.setattr(listing, "compact_all", counted)
    yield counts


def cold(root: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str], made: list[int], on: bool,
         keep: bool = False) -> tuple[int, bytes, str]:
    """A cold listing (a fresh state directory), compact or the reference, on a fixed clock."""
    shutil.rmtree(root / "segue", ignore_errors=True)
    made.append(0)
    with monkeypatch.context() as m:
        if not keep:  # (what is kept is answered later on the real clock)
            m.setattr(cli, "time", types.SimpleNamespace(time=lambda: NOW, monotonic=cli.time.monotonic))
        if not on:
            m.setenv("SEGUE_LIST_COMPACT", "0")
        got = full(monkeypatch, argv, keep=keep)
    assert (made[-1] > 0) == on, (argv, made)  # the side asked for ran
    return got


def _both_sides(home: Path, monkeypatch: pytest.MonkeyPatch, made: list[int]) -> int:
    compared = 0
    for argv in ARGSETS:
        ref = cold(home, monkeypatch, argv, made, on=False)
        SPILLED.clear()
        got = cold(home, monkeypatch, argv, made, on=True)
        assert got == ref, argv
        assert sum(SPILLED) == made[-1], argv  # every compact row came back from the spill file
        compared += len(ref[1])
    return compared


def test_compact_prints_what_sessions_print_on_real_stores(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                            made: list[int]) -> None:
    store_changes.new_project(root)  # a second Claude project
    assert _both_sides(root, monkeypatch, made) > 1000


@pytest.mark.parametrize("seed", [2, 7])
def test_compact_prints_what_sessions_print_on_generated_stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 made: list[int], seed: int) -> None:
    from bench.generate import generate

    generate(tmp_path / "corpus", n=24, seed=seed, big_mb=0.05, big_count=1, log=lambda _m: None)
    for k in list(os.environ):
        if k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_", "XDG_", "SEGUE_", "GEMINI_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(tmp_path / "corpus" / "home"))
    monkeypatch.setenv("SEGUE_HOME", str(tmp_path / "segue"))
    assert _both_sides(tmp_path, monkeypatch, made) > 10_000


def test_a_compact_session_missing_a_decoration_is_caught(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                          made: list[int]) -> None:
    """The negative control: subagent counts left out of what is laid over the revived session."""
    argv = ["list", "--json", "--all"]
    ref = cold(root, monkeypatch, argv, made, on=False)
    assert b'"subagent_count": 1' in ref[1]
    monkeypatch.setattr(compact, "_DECORATED", tuple(n for n in compact._DECORATED if n != "subagent_count"))
    assert cold(root, monkeypatch, argv, made, on=True) != ref


@pytest.mark.parametrize("argv", [["list", "--json"], ["list", "--json", "--all"], ["list"],
                                  ["list", "--json", "--dir", "/tmp"]], ids=["json", "all", "table", "dir"])
@pytest.mark.parametrize("change", [new_subagent, opencode_rows, several], ids=["new_subagent", "opencode", "several"])
def test_the_warm_and_patched_listings_after_a_compact_cold_one(
        root: Path, monkeypatch: pytest.MonkeyPatch, made: list[int], spy: list[int | None], change: Any,
        argv: list[str]) -> None:
    """An argument set kept by a compact cold listing (its patch table built from compact sessions), answered
    warm, then patched after a change: the full path's output every time (check_patched's reference)."""
    first = cold(root, monkeypatch, argv, made, on=True, keep=True)
    assert quick(monkeypatch, argv) == first
    change(root)
    check_patched(root, monkeypatch, spy, (argv,))


def test_a_compact_session_reads_as_its_session(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every field a compact session gives (kept in slots or read from its row) is its Session's; released, only
    its slots (and a first request that may link) can be read."""
    from segue.index import encode_sessions
    from segue.paths import StateDir
    from segue.stores.base import Env

    env = Env.from_os()
    sessions = listing.scan(env, StateDir(root / "segue"), None).sessions
    assert len(sessions) >= 10 and any(s.parent_id for s in sessions)
    sessions[1].__dict__["extra"] = 1  # its fields differ from the first's: a dict row (the slots from its Session)
    blob = encode_sessions(sessions)
    assert isinstance(index.rows_of(blob)[1][1], dict)
    ref = revive_all(blob)
    got = compact.compact_all(blob)
    fields = [*ref[0].to_json(), "locator", "branch_is_current", "sort_time", "ref"]
    linkable = 0
    for s, c in zip(ref, got, strict=True):
        assert all(getattr(c, f) == getattr(s, f) for f in fields)
        assert c.to_json() == s.to_json() and c.to_cache() == s.to_cache()
        assert c.listing_rank == (int(s.locator.get("priority", 0)), s.sort_time) == compact.rank_of(s)
        c.subagent_count, c.live = 7, True
        assert c.to_json()["subagent_count"] == 7 and c.to_json()["live"] is True
        c.release()
        assert c.id == s.id and c.cwd == s.cwd
        if c.linkable:
            linkable += 1
            assert c.first_request == s.first_request
        else:
            assert "[segue-handoff" not in (s.first_request or "")
            with pytest.raises(RuntimeError):
                _ = c.title
    assert linkable >= 1  # the "continued" scenario's marker
    with pytest.raises(AttributeError):
        _ = got[0].no_such_field
    assert not compact.enabled({"SEGUE_LIST_COMPACT": "0"}) and not compact.enabled({"SEGUE_FAST_PATHS": "off"})
    assert compact.enabled({})


def test_a_search_build_from_compact_sessions_is_the_reference_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                    made: list[int]) -> None:
    """The CLI's search build (one-shot: its listing compact, read field by field, and pickled to the search
    workers) writes the index, row for row, and answers, that a listing of Session objects gives."""
    from segue.search import index as search_index
    from tests.test_search import copy_stores, service
    from tests.test_search_build import build

    monkeypatch.setattr(search_index, "PARALLEL_MIN", 1)
    monkeypatch.setattr(search_index, "PARALLEL_WORK_MS", 0.0)
    got: dict[bool, Any] = {}
    for on in (False, True):
        root = tmp_path / str(on)
        root.mkdir()
        environ = copy_stores(root)
        if not on:
            environ["SEGUE_LIST_COMPACT"] = "0"
        made.append(0)
        real = service

        def one_shot(r: Path, e: dict[str, str], _real: Any = real) -> Any:
            svc = _real(r, e)
            svc.one_shot = svc.parallel = True
            return svc

        monkeypatch.setattr("tests.test_search_build.service", one_shot)
        got[on] = build(root, environ, monkeypatch, 2)
        assert (made[-1] > 0) == on
    assert got[True] == got[False]
    assert got[True]["index"]["docs"] and got[True]["results"]['"write what happened"']["total"] > 0


# -- the rows' spill file ------------------------------------------------------------------------------------------

def test_spilled_rows_read_back_whole_across_the_buffer_and_a_failed_write(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """Rows put in a Spill come back byte for byte: from the file, from the buffer, and across both after a write
    that failed midway (the rest then stays in memory, nothing is lost). The file is private and has no name."""
    import random

    monkeypatch.setattr(compact.Spill, "BUFFER", 1000)
    rng = random.Random(3)
    rows = [bytes(rng.randrange(256) for _ in range(rng.randint(0, 700))) for _ in range(300)]
    sp = compact.Spill.open(tmp_path)
    assert sp is not None and os.listdir(tmp_path) == []  # unnamed
    assert os.stat(sp._fd).st_mode & 0o777 == 0o600
    named = compact.Spill(compact.Spill._named(tmp_path))  # where the file system has no unnamed files
    assert os.listdir(tmp_path) == [] and os.stat(named._fd).st_mode & 0o777 == 0o600
    fd = named._fd
    del named
    with pytest.raises(OSError):  # closed with its spill
        os.fstat(fd)
    refs = [sp.put(r) for r in rows[:150]]
    writes = 0
    real_write = os.write

    def failing(fd: int, data: Any) -> int:  # half of one write goes through, then the disk is full
        nonlocal writes
        writes += 1
        if writes == 1:
            return real_write(fd, bytes(data)[: len(data) // 2])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(compact.os, "write", failing)
    refs += [sp.put(r) for r in rows[150:]]
    monkeypatch.setattr(compact.os, "write", real_write)  # (os itself: put back at once)
    assert writes >= 2 and sp._stuck and sp._written > 0
    for r, ref in zip(rows, refs, strict=True):
        assert sp.get(ref >> 32, ref & 0xFFFFFFFF) == r
    # the row that straddles the file and the buffer
    assert any((ref >> 32) < sp._written < (ref >> 32) + (ref & 0xFFFFFFFF) for ref in refs)


def test_a_spill_is_off_without_a_directory_or_when_switched_off(tmp_path: Path) -> None:
    assert compact.Spill.open(None) is None
    assert compact.Spill.open(tmp_path, {"SEGUE_LIST_SPILL": "0"}) is None
    assert compact.Spill.open(tmp_path / "missing") is None  # no directory there: rows stay in memory
    assert compact.Spill.open(tmp_path, {}) is not None


def test_spilled_compact_sessions_read_and_pickle_as_their_sessions(root: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Compact sessions whose rows are in a spill give every field, JSON and cache form their Sessions give, also
    once pickled (a search build's workers get them: the row travels, not the spill), and released they refuse
    their row as before."""
    import pickle

    from segue.index import encode_sessions
    from segue.paths import StateDir
    from segue.stores.base import Env

    monkeypatch.setattr(compact.Spill, "BUFFER", 2048)  # most rows in the file, the last in the buffer
    sessions = listing.scan(Env.from_os(), StateDir(root / "segue"), None).sessions
    blob = encode_sessions(sessions)
    ref = revive_all(blob)
    spill = compact.Spill.open(root)
    assert spill is not None
    got = compact.compact_all(blob, spill)
    assert all(type(c._data) is int for c in got) and spill._written > 0 and spill._buf
    fields = [*ref[0].to_json(), "locator", "branch_is_current", "sort_time", "ref"]
    for s, c in zip(ref, got, strict=True):
        for one in (c, pickle.loads(pickle.dumps(c))):
            assert all(getattr(one, f) == getattr(s, f) for f in fields)
            assert one.to_json() == s.to_json() and one.to_cache() == s.to_cache()
        c.release()
        if not c.linkable:
            with pytest.raises(RuntimeError):
                _ = c.title
