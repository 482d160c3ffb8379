"""The search patch (segue.search.patch): after transcripts grew in place, only their sessions are indexed again,
without a discovery or a listing. On copies of the stores the real runtimes wrote, change after change, the index
it leaves is the whole refresh's row for row (SEGUE_SEARCH_PATCH=0), the answers are the same, and the probe it
keeps holds; every change it cannot prove (a new file, a replaced one, a database, kept fingerprints that do not
give the kept digest, a session the listing found twice) takes the refresh as before. Controls: a patch that
writes nothing, or that keeps a wrong probe, is caught."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from segue.search import patch
from segue.search.engine import current_sources
from segue.search.index import FILE_NAME, SearchIndex, digests
from segue.stores import RUNTIMES
from segue.stores.base import Env
from tests import store_changes
from tests.test_search import copy_stores, service
from tests.test_search_build import _grow_claude, dump
from tests.test_search_scoped import _fresh, _new_project, _rooted
from tests.test_search_sources import _count_discovery

QUERIES = ("files", "zebrafish", "axolotl", "quokka", '"run the tests"', "hello", "renamed", "exit")
STAMP = (1_800_000_000_000_000_000,) * 2  # the same mtime in both copies: keys hash it


def _codex_rollout(root: Path) -> Path:
    return sorted((root / "codex").rglob("rollout-*.jsonl"))[0]


def _grow_codex(root: Path) -> None:
    """An agent message appended to a rollout as Codex appends one (a response item and its event)."""
    path = _codex_rollout(root)
    last = json.loads(path.read_text().splitlines()[-1])
    ts = last.get("timestamp", "2026-11-29T11:24:39.000Z")
    recs = [{"timestamp": ts, "type": "response_item",
             "payload": {"type": "message", "role": "assistant",
                         "content": [{"type": "output_text", "text": "The axolotl regrew its test suite."}]}},
            {"timestamp": ts, "type": "event_msg",
             "payload": {"type": "agent_message", "message": "The axolotl regrew its test suite."}}]
    with open(path, "a") as f:
        for r in recs:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
    os.utime(path, ns=STAMP)


def _gemini_session(root: Path) -> Path:
    return sorted((root / "gemini").rglob("session-*.jsonl"))[0]


def _grow_gemini(root: Path) -> None:
    """A reply and its lastUpdated appended as Gemini CLI appends them."""
    path = _gemini_session(root)
    with open(path, "a") as f:
        f.write(json.dumps({"id": "00000000-0000-4000-8000-00000000feed", "timestamp": "2026-12-01T22:30:00.000Z",
                            "type": "gemini", "content": "The quokka counted every file twice.", "thoughts": [],
                            "model": "gemini-3.8-flash"}) + "\n")
        f.write(json.dumps({"$set": {"lastUpdated": "2026-12-01T22:30:00.000Z"}}) + "\n")
    os.utime(path, ns=STAMP)


def _grow_claude_twice(root: Path) -> None:
    """Two more replies, each a record of its own (its own uuid and message id, chained to the one before)."""
    path = store_changes.claude_transcript(root)
    last = next(json.loads(ln) for ln in reversed(path.read_text().splitlines())
                if json.loads(ln).get("type") == "assistant")
    with open(path, "a") as f:
        for n, text in enumerate(("The zebrafish can count.", "And it counts backwards."), start=1):
            rec = json.loads(json.dumps(last))
            rec["message"]["content"] = [{"type": "text", "text": text}]
            rec["message"]["id"] = f"msg_backwards_{n}"
            rec["parentUuid"], rec["uuid"] = last["uuid"], f"00000000-0000-4000-8000-0000000000b{n}"
            f.write(json.dumps(rec, separators=(",", ":")) + "\n")
            last = rec
    os.utime(path, ns=STAMP)


def _claude_codex_gemini(root: Path) -> None:
    _grow_claude(root)
    _grow_codex(root)
    _grow_gemini(root)


def _shrink_claude(root: Path) -> None:
    """The transcript cut back in place (same inode): moved, and read again whole."""
    path = store_changes.claude_transcript(root)
    lines = path.read_bytes().splitlines(keepends=True)
    with open(path, "r+b") as f:
        f.truncate(sum(len(ln) for ln in lines[:-2]))
    os.utime(path, ns=STAMP)


def _replace_claude(root: Path) -> None:
    """The transcript written anew under its name (another inode): not moved in place."""
    path = store_changes.claude_transcript(root)
    data = path.read_bytes()
    path.unlink()
    path.write_bytes(data + b"\n")
    os.utime(path, ns=STAMP)


def _touch_claude(root: Path) -> None:
    """Only the mtime moved: the same sessions, keyed again."""
    os.utime(store_changes.claude_transcript(root), ns=STAMP)


# change -> whether the patch takes it
CHANGES: dict[str, tuple[Callable[[Path], None], bool]] = {
    "a Claude transcript grew": (_grow_claude, True),
    "a Codex rollout grew": (_grow_codex, True),
    "a Gemini session grew": (_grow_gemini, True),
    "three runtimes grew at once": (_claude_codex_gemini, True),
    "a Claude transcript grew twice over": (_grow_claude_twice, True),
    "a Claude transcript was cut back": (_shrink_claude, True),
    "a Claude transcript was only touched": (_touch_claude, True),
    "a Claude transcript was replaced": (_replace_claude, False),
    "a new Claude project": (_new_project, False),
    "a Codex rollout went away": (store_changes.remove_rollout, False),
    "OpenCode sessions renamed": (lambda root: store_changes.rename_opencode_sessions(root, bump_time=True), False),
    "a Claude transcript grew and OpenCode sessions were renamed": (
        lambda root: (_grow_claude(root), store_changes.rename_opencode_sessions(root, bump_time=True)), False),
}


def test_the_database_runtimes_are_the_readers_with_an_incremental_read(tmp_path: Path) -> None:
    """The patch refuses a `database` runtime's change before replaying the rest: the flag must name exactly
    the readers whose listing reads rows incrementally (which the patch cannot stand in for)."""
    from segue.listing import reader_for
    from segue.stores import descriptor

    env = Env(home=tmp_path, environ={})
    flagged = {rt for rt in RUNTIMES if descriptor(rt).database}
    assert flagged == {rt for rt in RUNTIMES if getattr(reader_for(rt, env), "summarize_delta", None) is not None}
    assert flagged  # (the control: OpenCode and Cline have one)


@pytest.fixture
def two(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path, dict[str, str], dict[str, str]]:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    return a, b, copy_stores(a), copy_stores(b)


def _spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each patch attempt answered (True) or handed over to the refresh (False)."""
    taken: list[bool] = []
    real = patch.refresh

    def spied(*a: Any, **kw: Any) -> Any:
        out = real(*a, **kw)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(patch, "refresh", spied)
    return taken


def _searched(root: Path, environ: dict[str, str], *changes: Callable[[Path], None]) -> list[Any]:
    service(root, environ).search("files")  # the build
    out = []
    for change in changes:
        change(root)
        svc = service(root, environ)
        found = {q: svc.search(q, limit=100).to_json() for q in QUERIES}  # the first one refreshes
        out.append(_rooted(root, [found, dump(root), _kept(root, environ)]))
    return out


def _kept(root: Path, environ: dict[str, str]) -> Any:
    """What the patch relies on, as the index keeps it: every source's fingerprint, each session's source, the
    sessions found twice; and whether the kept digests (which hash absolute paths) are those of the sources
    discovery sees now."""
    con = sqlite3.connect(root / "segue" / "cache" / FILE_NAME)
    try:
        kept = dict(con.execute("SELECT key, value FROM meta WHERE key LIKE 'sources%'"))
        whole, by_runtime = digests(current_sources(Env(home=root / "emptyhome", environ=environ)), RUNTIMES)
        now = {"sources": whole, **{f"sources:{rt}": d for rt, d in by_runtime.items()}}
        # (fingerprints hold times a copy does not share, such as a database's: the digests check them)
        return {"sources": con.execute("SELECT runtime, path FROM sources ORDER BY 1, 2").fetchall(),
                "origins": con.execute("SELECT runtime, id, source FROM sessions ORDER BY 1, 2").fetchall(),
                "twice": con.execute("SELECT runtime, id FROM twice ORDER BY 1, 2").fetchall(),
                "digests": {k: kept.get(k) == v for k, v in now.items()}}
    finally:
        con.close()


def _whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "0")


def _patching(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "1")


@pytest.mark.parametrize("case", list(CHANGES))
def test_the_patch_indexes_what_the_whole_refresh_indexes(two: Any, monkeypatch: pytest.MonkeyPatch,
                                                          case: str) -> None:
    a, b, env_a, env_b = two
    change, takes = CHANGES[case]
    _whole(monkeypatch)
    whole = _searched(a, env_a, change)
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    calls = _count_discovery(monkeypatch, env_b)
    patched = _searched(b, env_b, change)
    assert taken == [takes]
    if takes:  # discovered at the build and by `_kept` only: the patch asks the readers' hook, never `sources()`
        assert calls == {rt: 2 for rt in RUNTIMES}
    assert patched == whole
    assert _fresh(b, env_b)  # the probe it kept holds every runtime's observations
    index = whole[0][1]
    assert index["sessions"] and index["docs"]
    kept = whole[0][2]
    assert kept["sources"] and all(src for _rt, _id, src in kept["origins"]) and all(kept["digests"].values())


def test_the_words_appended_are_found_in_every_file_runtime(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b, _env_a, env_b = two
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    service(b, env_b).search("files")
    _claude_codex_gemini(b)
    svc = service(b, env_b)
    hits = {q: {(r.runtime, r.where) for r in svc.search(q).results} for q in ("zebrafish", "axolotl", "quokka")}
    assert taken == [True]
    assert hits == {"zebrafish": {("claude", "message")}, "axolotl": {("codex", "message")},
                    "quokka": {("gemini", "message")}}


def test_change_after_change_the_patches_index_what_whole_refreshes_do(two: Any,
                                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """What a patch kept (the probe, the fingerprints, the digests) serves the next change, patched or not."""
    a, b, env_a, env_b = two
    changes = (_grow_claude, _grow_codex, _new_project, _grow_gemini, _shrink_claude,
               lambda root: store_changes.rename_opencode_sessions(root, bump_time=True), _grow_claude_twice)
    _whole(monkeypatch)
    whole = _searched(a, env_a, *changes)
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    patched = _searched(b, env_b, *changes)
    assert taken == [True, True, False, True, True, False, True]
    assert patched == whole
    assert _fresh(b, env_b)
    store_changes.append_claude_reply(b, "Once more.")  # the control: a change the kept probe sees
    assert not _fresh(b, env_b)


def test_kept_fingerprints_that_do_not_give_the_kept_digest_take_the_refresh(two: Any,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    _whole(monkeypatch)
    whole = _searched(a, env_a, _grow_claude)
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    service(b, env_b).search("files")
    con = sqlite3.connect(b / "segue" / "cache" / FILE_NAME)
    con.execute("UPDATE sources SET fingerprint = fingerprint || ' ' WHERE runtime = 'claude'")
    con.commit()
    con.close()
    _grow_claude(b)
    svc = service(b, env_b)
    found = {q: svc.search(q, limit=100).to_json() for q in QUERIES}
    assert taken == [False]
    assert _rooted(b, [found, dump(b), _kept(b, env_b)]) == whole[0]  # the refresh wrote them again


def _archive_copy(root: Path) -> str:
    """The first rollout also under archived_sessions/ (as an archive made while a copy stayed): one session
    in two sources."""
    path = _codex_rollout(root)
    codex_home = next(p for p in path.parents if p.name == ".codex")
    (codex_home / "archived_sessions").mkdir(exist_ok=True)
    (codex_home / "archived_sessions" / path.name).write_bytes(path.read_bytes())
    return path.name


def test_the_listing_notes_a_session_found_in_two_sources(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b, _env_a, env_b = two
    name = _archive_copy(b)
    listing = service(b, env_b).raw_listing()
    twice = [k for k in listing.twice if k[0] == "codex"]
    assert len(twice) == 1 and twice[0][1] in name
    s = next(s for s in listing.sessions if (s.runtime, s.id) == twice[0])
    assert listing.origins[twice[0]].endswith(name)
    assert all(listing.origins[(x.runtime, x.id)] for x in listing.sessions)
    assert s.store_path in {listing.origins[twice[0]]}  # the winner's source is where it is shown from


def test_a_session_found_in_two_sources_takes_the_refresh(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    _whole(monkeypatch)
    for root in (a,):
        _archive_copy(root)
    whole = _searched(a, env_a, _grow_codex)
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    _archive_copy(b)
    patched = _searched(b, env_b, _grow_codex)
    assert taken == [False]  # the grown rollout's session is also the archived one's
    assert patched == whole
    assert [k[0] for k in patched[0][2]["twice"]] == ["codex"]


def test_sessions_noted_twice_are_forgotten_by_the_refresh_that_no_longer_finds_them(
        two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b, _env_a, env_b = two
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    service(b, env_b).search("files")
    con = sqlite3.connect(b / "segue" / "cache" / FILE_NAME)
    con.executemany("INSERT INTO twice SELECT runtime, id FROM sessions WHERE runtime = ?", [("claude",)])
    con.commit()
    con.close()
    _grow_claude(b)
    assert service(b, env_b).search("zebrafish").total == 1
    _grow_claude_twice(b)
    assert service(b, env_b).search("backwards").total == 1
    assert taken == [False, True]  # refused while noted; the refresh wrote what it found (none twice)
    assert _kept(b, env_b)["twice"] == []


def test_the_control_a_patch_that_writes_nothing_is_caught(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b, env_a, env_b = two
    _whole(monkeypatch)
    whole = _searched(a, env_a, _grow_claude)
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    service(b, env_b).search("files")  # the build, as it is
    real = patch._index

    def writing_nothing(*a: Any) -> Any:
        monkeypatch.setattr(SearchIndex, "_index_session", lambda *a, **kw: None)
        return real(*a)

    monkeypatch.setattr(patch, "_index", writing_nothing)
    _grow_claude(b)
    svc = service(b, env_b)
    found = {q: svc.search(q, limit=100).to_json() for q in QUERIES}
    assert taken == [True]
    assert _rooted(b, [found, dump(b), _kept(b, env_b)]) != whole[0]
    assert found["zebrafish"]["total"] == 0 and whole[0][0]["zebrafish"]["total"] == 1


def test_the_control_a_probe_kept_without_the_moved_stats_is_caught(two: Any,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The new probe must hold the moved files as they are now: seeded with their old stats, it is stale at once."""
    _a, b, _env_a, env_b = two
    _patching(monkeypatch)
    from segue.probe import Recording

    real_seed = Recording.seed
    monkeypatch.setattr(Recording, "seed", lambda self, g, parts, fresh: real_seed(self, g, parts, set()))
    taken = _spy(monkeypatch)
    service(b, env_b).search("files")
    _grow_claude(b)
    service(b, env_b).search("zebrafish")
    assert taken == [True]
    assert not _fresh(b, env_b)
    monkeypatch.undo()


def test_off_the_refresh_answers(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _a, b, _env_a, env_b = two
    _whole(monkeypatch)
    called: list[int] = []
    monkeypatch.setattr(patch, "_refresh", lambda *a: called.append(1))
    service(b, env_b).search("files")
    _grow_claude(b)
    assert service(b, env_b).search("zebrafish").total == 1
    assert called == []


def _snapshot(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for p in sorted(root.rglob("*")):
        st = p.lstat()
        out[str(p)] = (st.st_mode, st.st_size, st.st_mtime_ns, p.read_bytes() if p.is_file() else None)
    return out


def test_a_patched_refresh_leaves_the_stores_as_they_were(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-only: no byte, file or time under the stores changes; the snapshot sees a touched time (control)."""
    _a, b, _env_a, env_b = two
    _patching(monkeypatch)
    taken = _spy(monkeypatch)
    service(b, env_b).search("files")
    _claude_codex_gemini(b)
    stores = [b / rt for rt in RUNTIMES]
    before = [_snapshot(d) for d in stores]
    assert service(b, env_b).search("quokka").total == 1
    assert taken == [True]
    assert [_snapshot(d) for d in stores] == before
    os.utime(_gemini_session(b), ns=(STAMP[0] + 1,) * 2)
    assert [_snapshot(d) for d in stores] != before

