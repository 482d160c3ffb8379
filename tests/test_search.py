"""Search in the service: query parsing, what is indexed (and what never is), redaction, the index's life cycle
(incremental updates, rebuilds, permissions, forgetting) on copies of the stores the real runtimes wrote."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest

from segue.model import Step
from segue.paths import StateDir
from segue.search import QueryError
from segue.search import query as Q
from segue.search.index import FILE_NAME, SearchIndex
from segue.service import Service
from segue.stores import RUNTIMES
from segue.stores.base import Env
from tests.conftest import real_environ, real_fixture

SECRET = "Sup3rS3cret-42"


def copy_stores(root: Path) -> dict[str, str]:
    for rt in RUNTIMES:
        d, _ = real_fixture(rt)
        shutil.copytree(d / "home", root / rt / "home", symlinks=True)
    return real_environ(base=root)


def service(root: Path, environ: dict[str, str]) -> Service:
    (root / "emptyhome").mkdir(exist_ok=True)
    return Service(StateDir(root / "segue"), env=Env(home=root / "emptyhome", environ=environ), environ={})


@pytest.fixture
def stores(tmp_path: Path) -> tuple[Service, Path, dict[str, str]]:
    environ = copy_stores(tmp_path)
    return service(tmp_path, environ), tmp_path, environ


def expected() -> dict[str, list[dict[str, Any]]]:
    return {rt: real_fixture(rt)[1]["sessions"] for rt in RUNTIMES}


def keys(res: Any) -> set[tuple[str, str]]:
    return {(r.runtime, r.id) for r in res.results}


# -- query parsing ----------------------------------------------------------------------------------------------

def test_words_phrases_and_prefixes_become_quoted_fts_strings() -> None:
    q = Q.parse('fix "the migration" alemb*')
    assert q.fts() == '"fix" "the migration" "alemb" *'
    assert Q.parse("AND OR NOT NEAR(a b)").fts() == '"AND" "OR" "NOT" "NEAR(a" "b)"'
    assert Q.parse('say "it').fts() == '"say" "it"'  # unbalanced quote: a phrase to the end
    assert Q.parse('col:val -x ^y').fts() == '"col:val" "-x" "^y"'


@pytest.mark.parametrize("text", ["*", "", "   ", '""', "&& || ;", "\x00\x01\x1b", "\udcff\udcfe"])
def test_a_query_with_nothing_to_search_for_is_a_usage_error(text: str) -> None:
    with pytest.raises(QueryError, match="nothing to search for"):
        Q.parse(text)


def test_an_overlong_query_is_a_usage_error() -> None:
    with pytest.raises(QueryError, match="at most"):
        Q.parse("word " * 2000)
    with pytest.raises(QueryError, match="words"):
        Q.parse(" ".join(f"w{i}" for i in range(40)))


def test_where_and_since_are_checked() -> None:
    assert Q.parse_where(["requests", "command,files"]) == ("request", "command", "file")
    with pytest.raises(QueryError):
        Q.parse_where(["reasoning"])
    assert Q.parse_since("7d", 1000000.0) == 1000000.0 - 7 * 86400
    assert Q.parse_since("2026-11-30", 0) == 1795996800.0
    for bad in ("yesterday", "12", "7x", ""):
        with pytest.raises(QueryError):
            Q.parse_since(bad, 0)


# -- what search finds ------------------------------------------------------------------------------------------

def test_a_request_a_command_and_a_message_each_find_their_sessions_in_every_runtime(stores: Any) -> None:
    svc, _, _ = stores
    exp = expected()
    for rt in RUNTIMES:
        one = next(s for s in exp[rt] if s["scenario"] == "one")
        # a phrase from the user's request
        res = svc.search('"write what happened"', runtimes=[rt], where=["requests"])
        assert (rt, one["id"]) in keys(res) and res.results[0].where == "request"
        # a command, with its exit code
        failing = next(c for c in one["commands"] if c["exit_code"] == 2)
        res = svc.search(f'"{failing["command"]}"', runtimes=[rt], where=["commands"])
        hit = next(r for r in res.results if r.id == one["id"])
        assert hit.exit_code == 2 and hit.snippet.endswith("[exit 2]")
        # the agent's message
        res = svc.search('"directory does not exist"', runtimes=[rt], where=["messages"])
        assert (rt, one["id"]) in keys(res)
        assert all(r.where == "message" for r in res.results)


def test_a_hit_in_a_subagent_names_its_parent(stores: Any) -> None:
    from segue.cli_search import render_results
    from segue.search.engine import MARK_END, MARK_START

    svc, _, _ = stores
    listed = {(s.runtime, s.id): s for s in svc.scan().sessions}
    subs = 0
    for rt, sessions in expected().items():
        for sub in (s for s in sessions if s["parent_id"]):
            res = svc.search('"see the output above"', runtimes=[rt])
            hit = next(r for r in res.results if r.id == sub["id"])
            assert hit.parent_id == sub["parent_id"]
            # named as the list names the parent, not by its raw id
            parent = listed[rt, sub["parent_id"]]
            assert parent.label and hit.parent_label == parent.label
            row = render_results([hit], 0.0, MARK_START, MARK_END, ("«", "»"), {hit.id: hit.id[:8]})
            assert f"(subagent of {parent.label[:12]}" in row and sub["parent_id"] not in row, row
            subs += 1
    assert subs >= len(RUNTIMES)
    # a parent the index holds no label for is named by its id as the table shows it (8 characters at least)
    hit.parent_label = None
    row = render_results([hit], 0.0, MARK_START, MARK_END, ("«", "»"), {hit.id: "a", hit.parent_id: "b1234567"})
    assert "(subagent of b1234567)" in row


def test_a_hit_is_titled_as_the_list_names_its_session(stores: Any) -> None:
    """Gemini CLI records no title: a hit's JSON title is its first request, redacted, as the list shows it."""
    svc, _, _ = stores
    listed = {(s.runtime, s.id): s for s in svc.scan().sessions}
    res = svc.search('"database password"', where=["requests"], limit=50)
    untitled = [r for r in res.results if listed[r.runtime, r.id].title is None]
    assert {r.runtime for r in untitled} >= {"gemini"}  # the case in point is met
    for r in res.results:
        s = listed[r.runtime, r.id]
        assert s.label and r.to_json()["title"] == r.label == s.label, (r.runtime, r.to_json()["title"], s.label)


def test_changed_files_are_found_by_path(stores: Any) -> None:
    svc, _, _ = stores
    res = svc.search("notes.md", where=["files"])
    assert {r.runtime for r in res.results} == set(RUNTIMES)
    assert all(r.where == "file" and r.snippet.endswith("\x02notes.md\x03") for r in res.results)


def test_no_secret_comes_back_and_the_index_never_holds_it(stores: Any) -> None:
    svc, root, _ = stores
    res = svc.search('"database password"', where=["requests"], limit=50)
    assert {r.runtime for r in res.results} == set(RUNTIMES)
    blob = json.dumps([r.to_json() for r in res.results])
    assert SECRET not in blob and "[REDACTED:" in blob
    assert svc.search("Sup3rS3cret").total == 0
    assert svc.search("DB_PASSWORD", where=["commands"]).total == len(RUNTIMES)  # each one's secret session
    raw = b"".join(p.read_bytes() for p in (root / "segue" / "cache").glob(FILE_NAME + "*"))
    assert raw and SECRET.encode() not in raw
    # negative control: the secret is in the stores, so the test would see a leak
    assert any(SECRET.encode() in p.read_bytes() for p in root.rglob("*") if p.is_file())


def test_redaction_markers_are_not_words(stores: Any) -> None:
    svc, _, _ = stores
    assert svc.search("prose").total == 0  # [REDACTED:password-prose] must not be found as "prose"
    assert svc.search("assignment").total == 0  # nor [REDACTED:env-assignment] (in commands) as "assignment"


def test_a_snippet_shows_a_secret_as_the_brief_and_the_listing_do(stores: Any) -> None:
    import re

    svc, _, _ = stores
    res = svc.search("DB_PASSWORD", where=["commands"])
    assert {r.runtime for r in res.results} == set(RUNTIMES)
    for r in res.results:
        markers = re.findall(r"\[REDACTED[^\]]*\]", r.snippet)
        brief = svc.brief(f"{r.runtime}:{r.id}").markdown
        assert markers and all(m.startswith("[REDACTED:") and m in brief for m in markers), (r.runtime, r.snippet)
    # the request's marker is the one its listing title shows
    req = svc.search('"database password"', where=["requests"], runtimes=["claude"]).results[0]
    title = next(s.title for s in svc.scan().sessions if s.id == req.id)
    assert re.findall(r"\[REDACTED:[^\]]*\]", req.snippet) == re.findall(r"\[REDACTED:[^\]]*\]", title or "")


def test_a_shade_character_of_a_session_is_no_marker() -> None:
    from segue.search.index import hide_markers, shown_markers

    text = "progress ░░░ done; password [REDACTED:password-prose] and [REDACTED:aws-access-key]"
    hidden = hide_markers(text)
    assert "REDACTED" not in hidden and "password-prose" not in hidden
    assert shown_markers(hidden) == text


def test_reasoning_tool_output_and_file_contents_are_not_searched(stores: Any) -> None:
    svc, _, _ = stores
    # `ls` printed "README.md out.txt"; the Claude transcript holds it only as tool output
    assert svc.search('"README.md out.txt"').total == 0
    assert svc.search("README.md", where=["requests", "messages", "commands"]).total == 0


def test_filters_and_ranking(stores: Any) -> None:
    svc, _, _ = stores
    all_hits = svc.search("files", limit=100)
    assert all_hits.total == len(all_hits.results) > 4
    times = [r.updated_at for r in all_hits.results]
    assert times  # ties in relevance fall back to recency
    only = svc.search("files", runtimes=["codex", "cline"], limit=100)
    assert {r.runtime for r in only.results} == {"codex", "cline"}
    cwd = next(s for s in expected()["claude"] if s["scenario"] == "sub")["cwd"]
    d = svc.search("files", directory=cwd, limit=100)
    assert d.results and all(r.cwd == cwd for r in d.results)
    assert svc.search("files", since=4102444800.0).total == 0  # 2100
    limited = svc.search("files", limit=2)
    assert len(limited.results) == 2 and limited.total == all_hits.total


@pytest.mark.parametrize("text", ['"unbalanced', "NEAR(", "a OR", "-", "col:x", "'", "(", ")", "x" * 999,
                                  "a\x00b", "\u202efiles", "files\udcff", "🙂 files", "^files"])
def test_hostile_queries_search_as_text_or_are_usage_errors(stores: Any, text: str) -> None:
    svc, _, _ = stores
    words = any(ch.isalnum() for ch in text)
    if not words:
        with pytest.raises(QueryError):
            svc.search(text)
        return
    res = svc.search(text)
    assert res.total == len(res.results)
    if "files" in text:
        assert res.total > 0  # searched as the word it holds


# -- the index's life cycle -------------------------------------------------------------------------------------

def test_the_index_is_private(stores: Any) -> None:
    svc, root, _ = stores
    svc.search("files")
    cache = root / "segue" / "cache"
    assert stat.S_IMODE(os.stat(cache).st_mode) == 0o700
    files = list(cache.glob("search*"))
    assert any(p.name == FILE_NAME for p in files)
    for p in files:
        assert stat.S_IMODE(os.stat(p).st_mode) == 0o600, p


def test_a_warm_query_reads_no_transcript(stores: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    svc, _, _ = stores
    assert svc.search("files").refreshed is not None
    from segue.search import engine

    def boom(*a: Any) -> Any:
        raise AssertionError("a fresh index read a transcript")

    monkeypatch.setattr(engine, "_steps", boom)
    assert svc.search("files").refreshed is None
    fresh = service(svc.state.root.parent, dict(svc.env.environ))  # another process, same index
    assert fresh.search("files").refreshed is None


def test_a_grown_transcript_is_indexed_from_where_it_was(stores: Any) -> None:
    svc, root, _ = stores
    assert svc.search("zebrafish").total == 0
    exp = next(s for s in expected()["claude"] if s["scenario"] == "one")
    path = next((root / "claude").rglob(f"{exp['id']}.jsonl"))
    lines = path.read_text().splitlines()
    recs = [json.loads(ln) for ln in lines]
    msg = next(r for r in reversed(recs) if r.get("type") == "assistant"
               and r["message"]["content"][0].get("type") == "text")
    msg["message"]["content"] = [{"type": "text", "text": "Now the zebrafish can count."}]
    msg["message"]["id"] = "msg_zebrafish"
    msg["parentUuid"], msg["uuid"] = msg["uuid"], "00000000-0000-4000-8000-000000000001"
    msg["timestamp"] = "2026-11-30T10:00:00.000Z"
    user = msg
    with open(path, "a") as f:
        f.write(json.dumps(user, separators=(",", ":")) + "\n")  # compact, as Claude Code writes
    res = svc.search("zebrafish")
    st = res.refreshed
    assert st is not None and st.indexed == 1
    assert st.steps_written == 1 and st.steps_kept >= 6  # only the new step was redacted and written
    assert keys(res) == {("claude", exp["id"])} and res.results[0].where == "message"
    # a rewritten head (and a shrunk file) re-indexes the session whole
    path.write_text("\n".join(lines).replace("Please run", "Kindly run") + "\n")
    res = svc.search("zebrafish")
    assert res.total == 0 and res.refreshed is not None and res.refreshed.steps_kept == 0
    assert keys(svc.search('"kindly run"')) == {("claude", exp["id"])}


def test_a_removed_session_leaves_the_index(stores: Any) -> None:
    svc, root, _ = stores
    exp = next(s for s in expected()["codex"] if s["scenario"] == "one")
    assert ("codex", exp["id"]) in keys(svc.search("nonexistent-dir"))
    next((root / "codex").rglob(f"*{exp['id']}.jsonl")).unlink()
    res = svc.search("nonexistent-dir")
    assert ("codex", exp["id"]) not in keys(res) and res.refreshed is not None and res.refreshed.removed >= 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "old_version", "empty"])
def test_a_damaged_or_older_index_is_rebuilt_with_a_message(stores: Any, damage: str) -> None:
    svc, root, environ = stores
    want = svc.search("nonexistent-dir").total
    svc.__dict__["_search_state"].index.close()
    path = root / "segue" / "cache" / FILE_NAME
    if damage == "garbage":
        path.write_bytes(b"this is not a database" * 100)
    elif damage == "truncated":
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 3])
    elif damage == "old_version":
        con = sqlite3.connect(path)
        con.execute("UPDATE meta SET value = '0/0.0' WHERE key = 'built_by'")
        con.commit()
        con.close()
    else:
        path.write_bytes(b"")
    notes: list[str] = []
    fresh = service(root, environ)
    assert fresh.search("nonexistent-dir", notice=notes.append).total == want
    assert any("rebuilding" in n for n in notes)


def test_forget_drops_the_index(stores: Any) -> None:
    svc, root, _ = stores
    svc.search("files")
    assert svc.forget_search() is True
    assert not list((root / "segue" / "cache").glob("search*"))
    assert svc.forget_search() is False
    assert svc.search("files").total > 0  # and search builds it again


def test_a_step_a_reader_cannot_finish_keeps_what_was_read(tmp_path: Path) -> None:
    idx = SearchIndex(StateDir(tmp_path / "s").private(StateDir(tmp_path / "s").cache))
    from segue.model import Session

    s = Session(runtime="claude", id="x", store_path=str(tmp_path / "none"), title="t", updated_at=1.0)

    def steps(_s: Any, _st: Any) -> Any:
        yield Step(kind="request", text="alpha \ud800 beta")  # a lone surrogate: SQLite cannot store it
        yield Step(kind="tool", text="grep: secret tool input")
        yield Step(kind="command", text="make test", exit_code=1)
        raise FileNotFoundError

    with idx.write_lock():
        st = idx.refresh([s], steps, lambda t, cap: t[:cap], {})
    assert st.steps_written == 2
    assert [h.id for h in idx.hits('"alpha"')] == ["x"] and not idx.hits('"grep"')


def test_a_session_that_fails_midway_is_written_whole_or_not_at_all(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    idx = SearchIndex(state.private(state.cache))
    from segue.model import Session

    s = Session(runtime="codex", id="y", store_path=str(tmp_path / "none"), updated_at=1.0)

    def broken(_s: Any, _st: Any) -> Any:
        yield Step(kind="request", text="gamma ray")
        raise RuntimeError("disk on fire")

    with idx.write_lock(), pytest.raises(RuntimeError):
        idx.refresh([s], broken, lambda t, cap: t, {})
    assert not idx.hits('"gamma"')  # the half-read session left nothing behind

    def good(_s: Any, _st: Any) -> Any:
        yield Step(kind="request", text="gamma ray")

    with idx.write_lock():
        idx.refresh([s], good, lambda t, cap: t, {})
    con = idx.connection()
    assert con.execute("SELECT count(*) FROM docs").fetchone()[0] == 1


def test_two_processes_building_at_once_agree(stores: Any) -> None:
    """Two services on one state directory (separate index handles, so separate flocks: as two processes)."""
    import threading

    _, root, environ = stores
    out: list[Any] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            out.append(service(root, environ).search("nonexistent-dir").total)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=one) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors and out == [len(RUNTIMES)] * 3  # each runtime's `one` session
    con = sqlite3.connect(root / "segue" / "cache" / FILE_NAME)
    assert con.execute("SELECT count(*) FROM sessions").fetchone()[0] == \
        con.execute("SELECT count(DISTINCT runtime || ':' || id) FROM sessions").fetchone()[0]
    con.close()


def test_the_sources_are_taken_once_unless_another_writer_held_the_lock(stores: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A build takes the stores' sources once (before the listing); one that had to wait for another writer takes
    them again, and finds the index that writer built fresh. Negative control: the counts differ by path."""
    import threading

    from segue.search import engine

    svc, root, environ = stores
    passes: list[str] = []
    real = engine._sources

    def counted(*a: Any, **kw: Any) -> Any:
        passes.append(threading.current_thread().name)
        return real(*a, **kw)

    monkeypatch.setattr(engine, "_sources", counted)
    first = svc.search("files")
    assert first.refreshed is not None and passes == [threading.current_thread().name]  # no second pass

    holder, waiter = service(root, environ), service(root, environ)
    hidx = engine.index_for(holder)
    engine.index_for(waiter).connection()
    with hidx.write_lock():  # stale as after a store's change: no probe, another digest of the sources
        hidx.connection().execute("DELETE FROM probe")
        hidx.connection().execute("UPDATE meta SET value = 'stale' WHERE key = 'sources'")
    waiting = threading.Event()
    out: list[Any] = []
    passes.clear()
    with hidx.write_lock():
        t = threading.Thread(target=lambda: out.append(waiter.search("files", notice=lambda _m: waiting.set())),
                             name="waiter")
        t.start()
        assert waiting.wait(60)  # it found the index stale and waits for the lock
        assert holder.search("files").refreshed is not None  # the holder builds meanwhile
    t.join(60)
    assert out and out[0].refreshed is None  # looked again and found it fresh: nothing built twice
    assert passes.count("waiter") == 2
    assert {(r.runtime, r.id) for r in out[0].results} == keys(first)


def test_a_cancelled_query_stops_inside_sqlite_and_the_next_one_answers(stores: Any,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from segue.listing import Cancelled
    from segue.search import engine

    svc, _, _ = stores
    want = svc.search("files", limit=50)
    assert want.results
    ranked = SearchIndex.ranked
    ran: list[int] = []
    monkeypatch.setattr(SearchIndex, "ranked", lambda self, *a, **k: ran.append(1) or ranked(self, *a, **k))
    with pytest.raises(Cancelled):  # given up while it waited for the query before it: never runs
        svc.search("files", cancelled=lambda: True)
    assert not ran

    asked: list[bool] = []

    def cancelled() -> bool:  # given up mid-query: from the progress handler's third call on
        asked.append(True)
        return len(asked) > 3

    monkeypatch.setattr(engine, "INTERRUPT_EVERY", 1)
    with pytest.raises(Cancelled):
        svc.search("files", limit=50, cancelled=cancelled)
    assert ran and 3 < len(asked) < 10  # stopped where it was asked, not at the end
    con = engine.index_for(svc).connection()
    assert not con.in_transaction
    n = len(asked)
    assert con.execute("SELECT count(*) FROM docs WHERE docs MATCH 'files'").fetchone()[0] > 0
    assert len(asked) == n  # the handler went with the query
    got = svc.search("files", limit=50, cancelled=lambda: False)  # the connection answers as before
    assert [r.to_json() for r in got.results] == [r.to_json() for r in want.results] and got.total == want.total


@pytest.mark.parametrize("name", ["claude-2.1.332", "claude-2.1.337"])
def test_claude_2_1_3xx_stores_are_searched(tmp_path: Path, name: str) -> None:
    """The stores Claude Code 2.1.332 and 2.1.337 wrote (api-request records, ~57 KB prompt snapshots; 2.1.337's
    api-request-route records and toolLimits keys): each one's request, command, agent message and changed file
    are found, each where it is, and the secret its session wrote is not."""
    d, exp = real_fixture(name)
    shutil.copytree(d / "home", tmp_path / name / "home", symlinks=True)
    svc = service(tmp_path, real_environ((name,), base=tmp_path))
    one = next(s["id"] for s in exp["sessions"] if s["scenario"] == "one")
    for query, where in (('"write what happened"', "request"), ("nonexistent-dir", "command"),
                         ('"The directory does not exist"', "message"), ("notes.md", "file")):
        res = svc.search(query, where=[where])
        assert keys(res) == {("claude", one)}, (query, where)
        assert all(r.where == where for r in res.results)
    assert svc.search("Sup3rS3cret").results == []
