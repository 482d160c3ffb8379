"""A search refresh discovers, lists and compares only the runtimes that moved: the kept probe's groups (one
per runtime's discovery) say which runtimes would see something else now, and each runtime's digest is kept
beside the whole one. What it indexes is what a whole refresh indexes, row for row, on copies of the stores the
real runtimes wrote, change after change; an index without the groups or the runtimes' digests, or a change in
every runtime, takes the whole pass; SEGUE_SEARCH_REDISCOVER=0 and SEGUE_SEARCH_SCOPED=0 switch the two halves
off. And a CLI search replays a probe it found stale only once."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from hashlib import blake2b
from pathlib import Path
from typing import Any

import pytest

from segue.search import index as I
from segue.search import probe
from segue.search.index import FILE_NAME, SearchIndex
from segue.stores import RUNTIMES
from tests import store_changes
from tests.test_search import copy_stores, service
from tests.test_search_build import _grow_claude, dump
from tests.test_search_sources import _count_discovery

QUERIES = ("files", "zebrafish", '"run the tests"', "hello", "renamed", "exit")


def _new_project(root: Path) -> None:
    store_changes.new_project(root)
    for f in (root / "claude").rglob("-tmp-another-project/*.jsonl"):
        os.utime(f, ns=(1_800_000_000_000_000_000,) * 2)  # the same in both copies: keys hash it


def _claude_and_codex(root: Path) -> None:
    _grow_claude(root)
    store_changes.remove_rollout(root)


CHANGES: dict[str, tuple[Callable[[Path], None], list[str]]] = {
    "a Claude transcript grew": (_grow_claude, ["claude"]),
    "a Codex rollout went away": (store_changes.remove_rollout, ["codex"]),
    "OpenCode sessions renamed": (lambda root: store_changes.rename_opencode_sessions(root, bump_time=True),
                                  ["opencode"]),
    "Claude and Codex": (_claude_and_codex, ["claude", "codex"]),
    "the Cline store went away": (lambda root: shutil.rmtree(root / "cline"), ["cline"]),
}


def _rooted(root: Path, value: Any) -> Any:
    return json.loads(json.dumps(value).replace(str(root), "<root>"))


def _spy_scopes(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    scopes: list[Any] = []
    real = SearchIndex.refresh

    def spied(self: SearchIndex, *args: Any, **kw: Any) -> Any:
        scope = kw.get("scope")
        scopes.append(None if scope is None else sorted(scope))
        return real(self, *args, **kw)

    monkeypatch.setattr(SearchIndex, "refresh", spied)
    return scopes


def _changed_then_searched(root: Path, environ: dict[str, str], *changes: Callable[[Path], None]) -> Any:
    service(root, environ).search("files")  # the build
    out = []
    for change in changes:
        change(root)
        svc = service(root, environ)
        found = {q: svc.search(q, limit=100).to_json() for q in QUERIES}  # the first one refreshes
        out.append(_rooted(root, [found, dump(root)]))
    return out[0] if len(out) == 1 else out


def _whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "0")  # (the patch of moved transcripts: tests/test_search_patch.py)
    monkeypatch.setenv("SEGUE_SEARCH_SCOPED", "0")
    monkeypatch.setenv("SEGUE_SEARCH_REDISCOVER", "0")


def _scoped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "0")
    monkeypatch.setenv("SEGUE_SEARCH_SCOPED", "1")
    monkeypatch.setenv("SEGUE_SEARCH_REDISCOVER", "1")


def _fresh(root: Path, environ: dict[str, str]) -> bool:
    """Does the kept probe hold now (what the next query's quick check replays)?"""
    probe.forget_marks()
    idx = SearchIndex(root / "segue" / "cache")
    try:
        return idx.probe_matches(str(root / "emptyhome"), environ)
    finally:
        idx.close()


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b, copy_stores(a), copy_stores(b)


@pytest.mark.parametrize("case", list(CHANGES))
def test_a_scoped_refresh_indexes_what_a_whole_refresh_indexes(two: Any, monkeypatch: pytest.MonkeyPatch,
                                                               case: str) -> None:
    a, b, env_a, env_b = two
    change, moved = CHANGES[case]
    scopes = _spy_scopes(monkeypatch)
    _whole(monkeypatch)
    whole = _changed_then_searched(a, env_a, change)
    assert scopes == [None, None]
    _scoped(monkeypatch)
    calls = _count_discovery(monkeypatch, env_b)
    scoped = _changed_then_searched(b, env_b, change)
    assert scopes[2:] == [None, moved]  # the build is whole (no digests yet), the refresh only what moved
    # discovered at the build, then only the runtimes that moved (the listing takes the check's sources)
    assert calls == {rt: 1 + (rt in moved) for rt in RUNTIMES}
    assert scoped == whole
    assert _fresh(b, env_b)  # the probe kept after the partial pass holds every runtime's observations
    index = whole[1]
    assert index["sessions"] and index["docs"]
    assert {row[1] for row in index["sessions"]} >= set(RUNTIMES) - {"cline"}


def test_change_after_change_the_partial_passes_index_what_whole_ones_do(two: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What a partial pass kept (the seeded groups of the runtimes it did not discover) watches those runtimes:
    a later change in one of them is found."""
    a, b, env_a, env_b = two
    changes = (_grow_claude, store_changes.remove_rollout,
               lambda root: store_changes.rename_opencode_sessions(root, bump_time=True),
               lambda root: shutil.rmtree(root / "cline"), _new_project)
    _whole(monkeypatch)
    whole = _changed_then_searched(a, env_a, *changes)
    _scoped(monkeypatch)
    scopes = _spy_scopes(monkeypatch)
    calls = _count_discovery(monkeypatch, env_b)
    partial = _changed_then_searched(b, env_b, *changes)
    assert scopes == [None, ["claude"], ["codex"], ["opencode"], ["cline"], ["claude"]]
    assert calls == {"claude": 3, "codex": 2, "opencode": 2, "cline": 2, "gemini": 1}
    assert partial == whole
    assert whole[0][0]["zebrafish"]["total"] == 1 and whole[-1][0]["zebrafish"]["total"] == 2
    assert _fresh(b, env_b)
    store_changes.append_claude_reply(b, "Once more.")  # the control: a change the kept probe sees
    assert not _fresh(b, env_b)


def test_a_kept_probe_without_its_groups_takes_the_whole_discovery(two: Any,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    _whole(monkeypatch)
    whole = _changed_then_searched(a, env_a, _grow_claude)
    _scoped(monkeypatch)
    calls = _count_discovery(monkeypatch, env_b)

    def groups_gone(root: Path) -> None:
        con = sqlite3.connect(root / "segue" / "cache" / FILE_NAME)
        with con:
            assert con.execute("UPDATE probe SET groups = NULL").rowcount == 1
        con.close()
        _grow_claude(root)

    assert _changed_then_searched(b, env_b, groups_gone) == whole
    assert calls == {rt: 2 for rt in RUNTIMES}
    assert _fresh(b, env_b)


def test_the_control_a_scope_that_misses_the_changed_runtime_leaves_it_behind(
        two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The comparison above can fail: a refresh scoped to a runtime that did not move misses the change."""
    a, b, env_a, env_b = two
    whole = _changed_then_searched(a, env_a, _grow_claude)
    monkeypatch.setenv("SEGUE_SEARCH_REDISCOVER", "0")
    monkeypatch.setattr(SearchIndex, "changed_runtimes", lambda self, by_runtime: ["gemini"])
    wrong = _changed_then_searched(b, env_b, _grow_claude)
    assert wrong != whole
    assert whole[0]["zebrafish"]["total"] == 1 and wrong[0]["zebrafish"]["total"] == 0


def test_an_index_without_the_runtimes_digests_takes_the_whole_refresh_and_keeps_them(
        two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    whole = _changed_then_searched(a, env_a, _grow_claude)
    scopes = _spy_scopes(monkeypatch)
    calls = _count_discovery(monkeypatch, env_b)

    def older(root: Path) -> None:  # as an index written before the runtimes' digests were kept
        con = sqlite3.connect(root / "segue" / "cache" / FILE_NAME)
        with con:
            assert con.execute("DELETE FROM meta WHERE key LIKE 'sources:%'").rowcount == len(RUNTIMES)
        con.close()
        _grow_claude(root)

    assert _changed_then_searched(b, env_b, older) == whole
    assert scopes == [None, None]
    assert calls == {rt: 2 for rt in RUNTIMES}  # (a probe's groups without their digests: discovered whole)
    con = sqlite3.connect(b / "segue" / "cache" / FILE_NAME)
    kept = dict(con.execute("SELECT key, value FROM meta WHERE key LIKE 'sources:%'"))
    con.close()
    assert sorted(kept) == sorted(f"sources:{rt}" for rt in RUNTIMES)

    store_changes.remove_rollout(b)  # and the next refresh is scoped again
    service(b, env_b).search("files")
    assert scopes[-1] == ["codex"]


def test_a_change_in_every_runtime_is_a_whole_refresh(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b, _env_a, env_b = two
    scopes = _spy_scopes(monkeypatch)
    service(b, env_b).search("files")
    idx = SearchIndex(b / "segue" / "cache")
    stored = dict(idx.connection().execute("SELECT key, value FROM meta WHERE key LIKE 'sources:%'"))
    every = {k.split(":", 1)[1]: "0" * 32 for k in stored}
    one = {k.split(":", 1)[1]: (v if k != "sources:codex" else "0" * 32) for k, v in stored.items()}
    assert idx.changed_runtimes(every) is None  # every runtime: the whole refresh
    assert idx.changed_runtimes({k.split(":", 1)[1]: v for k, v in stored.items()}) is None  # none
    assert idx.changed_runtimes(one) == ["codex"]
    assert idx.changed_runtimes({**one, "newcomer": "0" * 32}) is None  # a runtime it has no digest of
    idx.close()
    assert scopes == [None]


def test_the_digests_in_one_pass_are_each_runtime_s_own() -> None:
    sources = {("codex", "/r/2"): "(1, 2)", ("claude", "/p/b"): "(3,)", ("claude", "/p/a"): "(4,)",
               ("opencode", "/db"): "(5, 6)"}

    def reference(items: dict[tuple[str, str], str]) -> str:  # one runtime's: every source's line, sorted
        h = blake2b(digest_size=16)
        for (rt, p), fp in sorted(items.items()):
            h.update(f"{rt}\0{p}\0{fp}\n".encode())
        return h.hexdigest()

    whole, per = I.digests(sources, ("claude", "codex", "opencode", "cline"))
    assert whole == I.sources_digest(sources) == I.combined(per)
    assert whole == I.digests(sources, ())[0]  # listing a runtime without a source or not: the same
    for rt in ("claude", "codex", "opencode", "cline"):
        assert per[rt] == reference({k: v for k, v in sources.items() if k[0] == rt})
    assert per["cline"] == reference({}) == I.EMPTY_DIGEST  # a runtime without a source has a digest too
    assert I.combined({**per, "codex": reference({})}) != whole
    assert I.combined({**per, "claude": per["codex"], "codex": per["claude"]}) != whole  # each its runtime's
    assert per["claude"] != I.digests({**sources, ("claude", "/p/c"): "(7,)"}, ())[1]["claude"]
    assert per["codex"] == I.digests({**sources, ("claude", "/p/c"): "(7,)"}, ())[1]["codex"]


# -- a probe found stale is replayed once per process ------------------------------------------------------------

@pytest.fixture
def cli_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    from tests.test_search_fast import root

    return root.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]


def _count_replays(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    n = [0]
    real = probe.Replay.when_fresh

    def counted(self: probe.Replay, *args: Any, **kw: Any) -> Any:
        n[0] += 1
        return real(self, *args, **kw)

    monkeypatch.setattr(probe.Replay, "when_fresh", counted)
    return n


@pytest.mark.parametrize("marks", ["1", "0"])
def test_a_cli_search_after_a_change_replays_the_stale_probe_once(
        cli_root: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], marks: str) -> None:
    from segue.entry import main

    monkeypatch.setenv("SEGUE_ALONGSIDE", "0")
    monkeypatch.setenv("SEGUE_SEARCH_STALE_MARKS", marks)
    probe.forget_marks()
    assert main(["search", "files", "--json"]) == 0  # builds the index
    capsys.readouterr()
    replays = _count_replays(monkeypatch)
    assert main(["search", "zebrafish", "--json"]) == 1  # fresh: the quick answer, one replay
    assert replays == [1]
    store_changes.append_claude_reply(cli_root, "Now the zebrafish can count.")
    capsys.readouterr()
    replays[0] = 0
    assert main(["search", "zebrafish", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert [r["runtime"] for r in out["results"]] == ["claude"]
    # the quick answer, the CLI's own try and the service's check: with the marks only the first replays
    assert replays == ([1] if marks == "1" else [3])
    replays[0] = 0
    assert main(["search", "zebrafish", "--json"]) == 0  # the probe stored since replays (and is fresh)
    assert replays == [1]
    probe.forget_marks()


def test_storing_a_probe_forgets_every_mark(tmp_path: Path) -> None:
    """A long-lived server may store the very probe it found stale (the stores went back): it replays it again."""
    probe.mark_stale(b"a probe")
    assert probe.known_stale(b"a probe") and not probe.known_stale(b"another")
    (tmp_path / "cache").mkdir(mode=0o700)
    idx = SearchIndex(tmp_path / "cache")
    idx.connection()
    with idx.write_lock():
        idx.store_probe("digest", b"a probe")
    idx.close()
    assert not probe.known_stale(b"a probe")
