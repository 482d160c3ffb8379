"""Listing mechanics independent of any runtime's format: order, nesting, filters, references, cache."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from segue import index, listing
from segue.listing import AmbiguousSession, Listing, SessionNotFound, cwd_within, resolve, scan
from segue.model import ReadStats, Session, Step, iso, parse_time
from segue.paths import StateDir
from segue.stores.base import Env, Location, Reader, Source, fingerprint
from tests.conftest import use_reader


def S(rt: str, sid: str, t: float, parent: str | None = None, cwd: str = "/w/a") -> Session:
    return Session(runtime=rt, id=sid, store_path=f"/s/{sid}", updated_at=t, started_at=t - 10, parent_id=parent,
                   cwd=cwd)


def test_iso_has_milliseconds_and_z() -> None:
    assert iso(0.5) == "1970-01-01T00:00:00.500Z"
    assert iso(parse_time("2026-11-29T10:00:09.987Z")) == "2026-11-29T10:00:09.987Z"
    assert parse_time(1795946532453) == pytest.approx(1795946532.453)
    assert parse_time("garbage") is None and parse_time(None) is None and parse_time(True) is None


def test_newest_first_with_subagents_after_their_parent() -> None:
    ls = Listing(sessions=[S("claude", "old", 100), S("codex", "new", 300), S("codex", "kid2", 310, "new"),
                           S("codex", "kid1", 305, "new"), S("codex", "grandkid", 306, "kid1"),
                           S("claude", "mid", 200)])
    assert [s.id for s in ls.ordered()] == ["new", "mid", "old"]
    assert [s.id for s in ls.ordered(include_subagents=True)] == ["new", "kid1", "grandkid", "kid2", "mid", "old"]
    assert [s.id for s in ls.ordered(limit=2, include_subagents=True)] == ["new", "kid1", "grandkid", "kid2", "mid"]
    assert [s.id for s in ls.ordered(runtimes=["claude"])] == ["mid", "old"]


def test_orphan_subagents_show_only_with_all_and_cycles_terminate() -> None:
    ls = Listing(sessions=[S("codex", "a", 1, "b"), S("codex", "b", 2, "a"), S("codex", "orphan", 3, "gone")])
    assert [s.id for s in ls.ordered()] == []
    assert [s.id for s in ls.ordered(include_subagents=True)] == ["orphan"]


def test_dir_filter_is_path_or_below(tmp_path: Path) -> None:
    (tmp_path / "proj" / "sub").mkdir(parents=True)
    (tmp_path / "project2").mkdir()
    assert cwd_within(str(tmp_path / "proj"), str(tmp_path / "proj"))
    assert cwd_within(str(tmp_path / "proj" / "sub"), str(tmp_path / "proj"))
    assert not cwd_within(str(tmp_path / "project2"), str(tmp_path / "proj"))
    assert not cwd_within(None, str(tmp_path))
    link = tmp_path / "link"
    os.symlink(tmp_path / "proj", link)
    assert cwd_within(str(tmp_path / "proj" / "sub"), str(link))


def test_references() -> None:
    pool = [S("claude", "abc123", 1), S("codex", "abd999", 2), S("codex", "zzz", 3)]
    assert resolve(pool, "claude:abc123").id == "abc123"
    assert resolve(pool, "abc").id == "abc123"
    assert resolve(pool, "codex:ab").id == "abd999"
    with pytest.raises(AmbiguousSession) as e:
        resolve(pool, "ab")
    assert "claude:abc123" in str(e.value) and "codex:abd999" in str(e.value)
    with pytest.raises(SessionNotFound):
        resolve(pool, "nope")
    with pytest.raises(SessionNotFound):
        resolve(pool, "opencode:abc")
    with pytest.raises(SessionNotFound):
        resolve(pool, "")


# ---------------------------------------------------------------------------------------------------------
# The cache, with a minimal reader over a directory of tiny JSON files (a test double of the interface)

class DirReader(Reader):
    runtime = "claude"
    reads: ClassVar[list[str]] = []

    def locations(self) -> list[Location]:
        root = self.env.home / "store"
        return [Location(str(root), root.is_dir())]

    def sources(self) -> Iterator[Source]:
        root = self.env.home / "store"
        if root.is_dir():
            for p in sorted(root.iterdir()):
                yield Source(self.runtime, str(p), fingerprint(p))

    def summarize(self, source: Source) -> list[Session]:
        DirReader.reads.append(source.path)
        data = json.loads(Path(source.path).read_text())
        return [Session(runtime="claude", id=data["id"], store_path=source.path, updated_at=data["t"],
                        first_request=data.get("q"), cwd=data.get("cwd"), parent_id=data.get("parent"),
                        title=data.get("title"), problems=list(data.get("problems", [])),
                        resumable=not data.get("parent"), resume_blocker="subagent" if data.get("parent") else None,
                        locator={"priority": data.get("prio", 0)})]

    def steps(self, session: Session, stats: ReadStats) -> Iterator[Step]:
        yield Step("request", session.first_request or "")


@pytest.fixture
def dir_reader(monkeypatch: pytest.MonkeyPatch) -> type[DirReader]:
    use_reader(monkeypatch, "claude", DirReader)
    DirReader.reads = []
    return DirReader


def test_cache_rereads_only_changed_sources(tmp_path: Path, dir_reader: type[DirReader]) -> None:
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(5):
        (store / f"{i}.json").write_text(json.dumps({"id": f"s{i}", "t": i}))
    env = Env(home=tmp_path / "home")
    state = StateDir(tmp_path / "state")
    first = scan(env, state, ["claude"])
    assert len(first.sessions) == 5 and len(dir_reader.reads) == 5
    dir_reader.reads.clear()
    again = scan(env, state, ["claude"])
    assert dir_reader.reads == [] and {s.id for s in again.sessions} == {f"s{i}" for i in range(5)}
    (store / "3.json").write_text(json.dumps({"id": "s3", "t": 33, "q": "changed"}))
    (store / "9.json").write_text(json.dumps({"id": "s9", "t": 9}))
    (store / "0.json").unlink()
    third = scan(env, state, ["claude"])
    assert sorted(dir_reader.reads) == [str(store / "3.json"), str(store / "9.json")]
    by_id = {s.id: s for s in third.sessions}
    assert "s0" not in by_id and by_id["s3"].first_request == "changed"
    assert stat_mode(state.cache) == 0o700 and stat_mode(state.cache / "index.sqlite") == 0o600


def test_a_session_without_a_directory_is_listed_as_not_resumable(tmp_path: Path, dir_reader: type[DirReader]
                                                                   ) -> None:
    # `segue resume` refuses a session with no recorded directory: the listing says so (found by a new user's trial)
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    (store / "a.json").write_text(json.dumps({"id": "nodir", "t": 1}))
    (store / "b.json").write_text(json.dumps({"id": "withdir", "t": 2, "cwd": str(tmp_path / "gone")}))
    (store / "c.json").write_text(json.dumps({"id": "kid", "t": 3, "parent": "withdir"}))
    by_id = {s.id: s for s in scan(Env(home=tmp_path / "home"), StateDir(tmp_path / "state"), ["claude"]).sessions}
    assert (by_id["nodir"].resumable, by_id["nodir"].resume_blocker) == (False, "no_directory")
    assert by_id["nodir"].to_json()["resume_blocker"] == "no_directory"
    # control: a recorded directory (even one deleted since: resume checks that itself) stays resumable, and a
    # reader's own blocker is kept
    assert (by_id["withdir"].resumable, by_id["withdir"].resume_blocker) == (True, None)
    assert (by_id["kid"].resumable, by_id["kid"].resume_blocker) == (False, "subagent")


def stat_mode(p: Path) -> int:
    return os.stat(p).st_mode & 0o777


def test_damaged_source_is_skipped_with_reason_and_others_list(tmp_path: Path, dir_reader: type[DirReader]) -> None:
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    (store / "good.json").write_text(json.dumps({"id": "ok", "t": 1}))
    (store / "bad.json").write_text("{truncated")
    out = scan(Env(home=tmp_path / "home"), StateDir(tmp_path / "state"), ["claude"])
    assert [s.id for s in out.sessions] == ["ok"]
    assert len(out.skipped) == 1 and out.skipped[0].path.endswith("bad.json")
    assert "JSONDecodeError" in out.skipped[0].reason


def test_duplicates_keep_the_higher_priority_source(tmp_path: Path, dir_reader: type[DirReader]) -> None:
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    (store / "a.json").write_text(json.dumps({"id": "dup", "t": 5, "q": "archived", "prio": 0}))
    (store / "b.json").write_text(json.dumps({"id": "dup", "t": 1, "q": "live", "prio": 1}))
    out = scan(Env(home=tmp_path / "home"), None, ["claude"])
    assert [(s.id, s.first_request) for s in out.sessions] == [("dup", "live")]


def test_damaged_cache_is_rebuilt(tmp_path: Path, dir_reader: type[DirReader]) -> None:
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    (store / "a.json").write_text(json.dumps({"id": "a", "t": 5}))
    state = StateDir(tmp_path / "state")
    scan(Env(home=tmp_path / "home"), state, ["claude"])
    for name in ("index.sqlite-wal", "index.sqlite-shm"):
        (state.cache / name).unlink(missing_ok=True)
    (state.cache / "index.sqlite").write_text("garbage")
    out = scan(Env(home=tmp_path / "home"), state, ["claude"])
    assert [s.id for s in out.sessions] == ["a"]
    with sqlite3.connect(state.cache / "index.sqlite") as db:
        assert db.execute("SELECT value FROM meta WHERE key='version'").fetchone()[0] == index.version(state.cache)
        (blob,) = db.execute("SELECT sessions FROM sources").fetchone()
    assert [d["id"] for d in index.sessions_of(blob)] == ["a"]


def test_parallel_cold_listing_matches_serial(tmp_path: Path, dir_reader: type[DirReader],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(30):
        (store / f"{i}.json").write_text(json.dumps({"id": f"s{i}", "t": i, "q": f"ask {i}"}))
    (store / "bad.json").write_text("{")
    monkeypatch.setattr(listing, "PARALLEL_MIN", 5)
    env = Env(home=tmp_path / "home")
    serial = scan(env, StateDir(tmp_path / "a"), ["claude"])
    par = scan(env, StateDir(tmp_path / "b"), ["claude"], parallel=True)
    assert sorted((s.id, s.first_request) for s in par.sessions) == sorted(
        (s.id, s.first_request) for s in serial.sessions)
    assert [k.path for k in par.skipped] == [k.path for k in serial.skipped]
    assert dir_reader.reads.count(str(store / "0.json")) == 1  # only the serial run read in this process


def test_parallel_scan_hands_big_sources_out_first_and_keeps_source_order(
        tmp_path: Path, dir_reader: type[DirReader], monkeypatch: pytest.MonkeyPatch) -> None:
    """Big sources (databases) are worker tasks of their own, started first; results are still taken in source
    order, so which of two equal-ranked copies of a session wins, and the whole listing, match a serial scan."""
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(40):
        (store / f"{i:02d}.json").write_text(json.dumps({"id": f"s{i % 30}", "t": i % 30, "q": f"ask {i}"}))
    (store / "99-big.json").write_text(json.dumps({"id": "big", "t": 50, "q": "x" * 3000}))
    (store / "bad.json").write_text("{")
    monkeypatch.setattr(listing, "PARALLEL_MIN", 5)
    monkeypatch.setattr(listing, "CHUNK", 7)
    monkeypatch.setattr(listing, "BIG_SOURCE", 2000)
    submitted: list[list[str]] = []
    import concurrent.futures

    real_submit = concurrent.futures.ProcessPoolExecutor.submit

    def submit(self: concurrent.futures.ProcessPoolExecutor, fn: object, runtime: str, sources: list[Source]
               ) -> concurrent.futures.Future[object]:
        submitted.append([os.path.basename(s.path) for s in sources])
        return real_submit(self, fn, runtime, sources)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", submit)
    env = Env(home=tmp_path / "home")
    serial = scan(env, StateDir(tmp_path / "a"), ["claude"])
    par = scan(env, StateDir(tmp_path / "b"), ["claude"], parallel=True)
    assert submitted[0] == ["99-big.json"] and all(len(t) <= 7 for t in submitted)
    assert sorted(n for t in submitted for n in t) == sorted(p.name for p in store.iterdir())
    assert [s.to_json() for s in par.sessions] == [s.to_json() for s in serial.sessions]
    assert [s.locator for s in par.sessions] == [s.locator for s in serial.sessions]
    assert [(k.path, k.reason) for k in par.skipped] == [(k.path, k.reason) for k in serial.skipped]
    # what the workers sent is what the index holds: a warm scan revives the same sessions
    warm = scan(env, StateDir(tmp_path / "b"), ["claude"])
    assert [s.to_json() for s in warm.sessions] == [s.to_json() for s in serial.sessions]


def test_parallel_scan_without_worker_processes_reads_in_this_process(
        tmp_path: Path, dir_reader: type[DirReader], monkeypatch: pytest.MonkeyPatch) -> None:
    """No worker processes to be had (submit fails), or a worker dies mid-scan: every source is still read
    once, in this process, and the listing is the serial one."""
    import concurrent.futures
    from concurrent.futures.process import BrokenProcessPool

    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(30):
        (store / f"{i:02d}.json").write_text(json.dumps({"id": f"s{i}", "t": i, "q": f"ask {i}"}))
    monkeypatch.setattr(listing, "PARALLEL_MIN", 5)
    monkeypatch.setattr(listing, "CHUNK", 4)
    env = Env(home=tmp_path / "home")
    serial = scan(env, StateDir(tmp_path / "a"), ["claude"])
    calls = {"n": 0}
    real_submit = concurrent.futures.ProcessPoolExecutor.submit

    def dying(self: concurrent.futures.ProcessPoolExecutor, fn: object, *args: object) -> object:
        calls["n"] += 1
        if calls["n"] > 3:  # the first tasks reach a worker, then the pool is broken
            raise BrokenProcessPool("a worker died")
        return real_submit(self, fn, *args)

    monkeypatch.setattr(concurrent.futures.ProcessPoolExecutor, "submit", dying)
    dir_reader.reads = []
    par = scan(env, StateDir(tmp_path / "b"), ["claude"], parallel=True)
    assert calls["n"] == 4
    assert [s.to_json() for s in par.sessions] == [s.to_json() for s in serial.sessions]
    assert len(dir_reader.reads) == 30 - 3 * 4  # read here: the tasks no worker got (workers read the rest)


def _index_keys(state: StateDir) -> list[str]:
    if not index.path_of(state).exists():
        return []
    with sqlite3.connect(index.path_of(state)) as db:
        return [k for (k,) in db.execute("SELECT key FROM sources ORDER BY key")]


def test_parallel_scan_writes_the_index_all_at_once_or_not_at_all(
        tmp_path: Path, dir_reader: type[DirReader], monkeypatch: pytest.MonkeyPatch) -> None:
    """The workers' rows go into one open write transaction as they arrive (this process encodes none of
    them again): a scan that fails midway leaves the index as it was; a busy index (another writer holds it)
    costs the scan no wait for the stream and loses nothing of its listing; a scan that ends commits every
    row, and the rows revive as the same listing."""
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)

    def write(lo: int, hi: int) -> None:
        for i in range(lo, hi):
            (store / f"{i:02d}.json").write_text(json.dumps({"id": f"s{i}", "t": i, "q": f"ask {i}"}))

    write(0, 40)
    monkeypatch.setattr(listing, "PARALLEL_MIN", 5)
    monkeypatch.setattr(listing, "CHUNK", 2)
    env = Env(home=tmp_path / "home")
    state = StateDir(tmp_path / "state")
    scan(env, state, ["claude"])
    committed = _index_keys(state)
    assert len(committed) == 40
    write(40, 50)
    seen = {"n": 0}

    def failing(runtime: str, sessions: int, done: int, total: int) -> None:
        seen["n"] = done
        if done == 7:
            raise RuntimeError("the caller went away")

    with pytest.raises(RuntimeError):
        scan(env, state, ["claude"], parallel=True, progress=failing)
    assert seen["n"] == 7 and _index_keys(state) == committed  # nothing of the failed scan
    blocker = sqlite3.connect(index.path_of(state), isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    monkeypatch.setattr(index, "BUSY_MS", 50)
    try:
        held = scan(env, state, ["claude"], parallel=True)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert len(held.sessions) == 50 and _index_keys(state) == committed
    encoded = {"n": 0}
    real = index.encode_sessions

    def counting(sessions: list[Session]) -> bytes:  # counts in this process only (workers have their own)
        encoded["n"] += 1
        return real(sessions)

    monkeypatch.setattr(index, "encode_sessions", counting)
    full = scan(env, state, ["claude"], parallel=True)
    assert len(_index_keys(state)) == 50 and encoded["n"] == 0
    warm = scan(env, state, ["claude"])
    assert [s.to_json() for s in warm.sessions] == [s.to_json() for s in full.sessions]


def test_a_transcript_that_could_not_be_read_is_titled_by_its_problem(tmp_path: Path, dir_reader: type[DirReader]
                                                                      ) -> None:
    # it listed as "(untitled)", its problem only in --json (a new user's trial)
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    (store / "a.json").write_text(json.dumps({"id": "broken", "t": 1, "problems": ["empty file"]}))
    (store / "b.json").write_text(json.dumps({"id": "damaged", "t": 2, "q": "fix it", "problems": ["2 damaged lines"]}))
    (store / "c.json").write_text(json.dumps({"id": "quiet", "t": 3}))
    by_id = {s.id: s for s in scan(Env(home=tmp_path / "home"), StateDir(tmp_path / "state"), ["claude"]).sessions}
    assert by_id["broken"].title == "(unreadable: empty file)"
    # controls: a session with a request keeps it as its name; one with no problem stays untitled
    assert (by_id["damaged"].title, by_id["quiet"].title) == (None, None)


def test_a_session_started_from_a_brief_is_titled_by_what_it_continues(tmp_path: Path, dir_reader: type[DirReader]
                                                                       ) -> None:
    from segue.brief import write_brief
    from segue.resume import first_prompt

    state = StateDir(tmp_path / "state")
    source = Session(runtime="codex", id="0199aaaa-bbbb-7ccc", store_path="/s", title="Fix the login redirect")
    brief = write_brief(state, source, "# Segue handoff brief: `Fix the login redirect`\n\nWritten by Segue…\n")
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    sessions = {
        "fromfile": {"q": first_prompt(str(brief), source)},
        "runtimecut": {"q": first_prompt(str(brief), source), "title": first_prompt(str(brief), source)[:50] + "…"},
        "nofile": {"q": first_prompt(str(tmp_path / "gone" / "handoffs" / brief.name), source)},
        # a prompt naming a file that is not the marker's session's brief is not read
        "elsewhere": {"q": first_prompt(str(tmp_path / "notes.md"), source)},
        "owntitle": {"q": first_prompt(str(brief), source), "title": "Redirect loop, part two"},
        "plain": {"q": "Fix the login redirect again"},
        "typed": {"q": "Fix the login redirect again\n[segue-handoff v1 from=codex:0199aaaa-bbbb-7ccc]"},
    }
    (tmp_path / "notes.md").write_text("# Segue handoff brief: `not this one`\n")
    for i, (sid, d) in enumerate(sessions.items()):
        (store / f"{i}.json").write_text(json.dumps({"id": sid, "t": i, **d}))
    by_id = {s.id: s for s in scan(Env(home=tmp_path / "home"), state, ["claude"]).sessions}
    assert by_id["fromfile"].title == "↪ Fix the login redirect"
    assert by_id["runtimecut"].title == "↪ Fix the login redirect"  # a runtime's cut of the prompt is no title
    # (the id's first group, as the table's ids begin, not a cut inside the next one)
    assert by_id["nofile"].title == by_id["elsewhere"].title == "↪ continues Codex CLI session 0199aaaa"
    # controls: a title of the session's own, and a session that continues nothing, keep theirs
    assert by_id["owntitle"].title == "Redirect loop, part two"
    assert (by_id["plain"].title, by_id["plain"].first_request) == (None, "Fix the login redirect again")
    assert by_id["typed"].title is None  # a marker typed after one's own words: the words name the session


def test_what_a_continued_session_is_titled_by_when_its_source_is_long_redacted_or_untitled(
        tmp_path: Path, dir_reader: type[DirReader]) -> None:
    from segue.brief import write_brief
    from segue.lineage import id_head
    from segue.quote import inline
    from segue.resume import first_prompt

    state = StateDir(tmp_path / "state")
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    long = "x" * 110 + " [REDACTED:password-prose] and more"  # the brief's 120-character cut ends in its marker
    sources = {
        "long": (Session(runtime="codex", id="0199aaaa-1111-7ccc", store_path="/s", title=long), long),
        "redacted": (Session(runtime="codex", id="0199aaaa-2222-7ccc", store_path="/s"),
                     "Use [REDACTED:password-prose] for the db"),
        # neither title nor request: the brief is headed by the id
        "bare": (Session(runtime="codex", id="0199aaaa-3333-7ccc-8ddd-9eeeeeeeeeee", store_path="/s"), None),
    }
    for i, (name, (source, heading)) in enumerate(sources.items()):
        text = heading or source.id
        brief = write_brief(state, source, f"# Segue handoff brief: {inline(text, 120)}\n\nWritten by Segue…\n")
        (store / f"{i}.json").write_text(json.dumps({"id": name, "t": i, "q": first_prompt(str(brief), source)}))
    by_id = {s.id: s for s in scan(Env(home=tmp_path / "home"), state, ["claude"]).sessions}
    assert by_id["long"].title == "↪ " + "x" * 110 + "…"  # no "[REDACTE…" left by the cut
    assert by_id["redacted"].title == "↪ Use [REDACTED:password-prose] for the db"
    assert by_id["bare"].title == "↪ continues Codex CLI session 0199aaaa"
    # an id's head: a UUID's first group, a Cline id's time, else 8 characters, a short id whole
    assert [id_head(i) for i in ("01a2270c-bfde-7243-a03e-d1e3dec4d9d4", "1795951786001_mu000",
                                 "ses_dd8ef25a5ffeT7EEa533neH8a2", "a3808aebe501ee320", "short-1")] == [
        "01a2270c", "1795951786001", "ses_dd8e", "a3808aeb", "short-1"]
