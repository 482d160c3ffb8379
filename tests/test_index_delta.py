"""The incremental read of database stores (OpenCode `opencode.db`, Cline `sessions.db`) equals a full re-read.

A listing with fast paths on reads a changed database against the index's previous summaries and per-row
keys (`summarize_delta`); the reference (`SEGUE_FAST_PATHS=0`, every change a whole `summarize`) must give the
very same sessions after varied changes: activity as each runtime writes it, a part appended with no time
moved, a new session, a deleted one, a changed title, a first request removed, a parent's branch changed under
its subagent, a prompt cleared (the first request then comes from the messages file).
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from segue.listing import Listing, scan
from segue.paths import StateDir
from segue.stores.base import Env
from segue.stores.cline import ClineReader
from segue.stores.opencode import OpencodeReader

REAL = Path(__file__).parent / "fixtures" / "real"


def _home(tmp_path: Path, kind: str) -> Path:
    if kind == "generated":
        from bench.generate import generate

        generate(tmp_path / "corpus", n=30, seed=5, big_mb=0.05, big_count=0, log=lambda _m: None)
        return tmp_path / "corpus" / "home"
    home = tmp_path / "home"
    shutil.copytree(REAL / kind / "home", home, symlinks=True)
    return home


def _shape(listing: Listing) -> tuple[dict[tuple[str, str], dict[str, Any]], list[tuple[str, str, str]],
                                     list[dict[str, Any]]]:
    sessions = {(s.runtime, s.id): {k: v for k, v in s.to_cache().items() if not k.startswith("_")}
                for s in listing.sessions}
    skipped = sorted((k.runtime, k.path, k.reason) for k in listing.skipped)
    ordered = [s.to_json() for s in listing.ordered(include_subagents=True)]
    return sessions, skipped, ordered


class Spy:
    """Counts what the incremental reads re-read (the test must see the incremental path taken)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[tuple[str, int, int, bool]] = []
        for cls in (OpencodeReader, ClineReader):
            real = cls.summarize_delta

            def spy(reader: Any, src: Any, previous: Any, state: Any, _real: Any = real) -> Any:
                sessions, fresh, new_state = _real(reader, src, previous, state)
                self.calls.append((src.kind, len(sessions), len(fresh), previous is not None))
                return sessions, fresh, new_state

            monkeypatch.setattr(cls, "summarize_delta", spy)

    def incremental(self, kind: str) -> list[tuple[int, int]]:
        return [(n, f) for k, n, f, had in self.calls if k.startswith(kind) and had]


# --------------------------------------------------------------------------------------------- changes


def _opencode_db(home: Path) -> Path:
    return home / ".local" / "share" / "opencode" / "opencode.db"


def _cline_db(home: Path) -> Path:
    return home / ".cline" / "data" / "db" / "sessions.db"


def _change_opencode(db: Path, step: int) -> bool:
    con = sqlite3.connect(db)
    try:
        ids = [r[0] for r in con.execute("SELECT id FROM session WHERE parent_id IS NULL ORDER BY id")]
        kids = [r[0] for r in con.execute("SELECT id FROM session WHERE parent_id IS NOT NULL ORDER BY id")]
        ms = 1_900_000_000_000 + step
        if step == 0:  # activity as OpenCode writes it: a user message and its part, the row's time moved
            sid = ids[0]
            con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (f"msg_t{step}", sid, ms, ms, json.dumps(
                {"role": "user", "time": {"created": ms}, "agent": "build"})))
            con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (f"prt_t{step}", f"msg_t{step}", sid, ms, ms,
                                                                  json.dumps({"type": "text", "text": "More."})))
            con.execute("UPDATE session SET time_updated = ? WHERE id = ?", (ms, sid))
        elif step == 1:  # a part appended to the first user message, no time moved anywhere: a new first text
            sid = (kids or ids)[-1]
            mid = con.execute("SELECT id FROM message WHERE session_id = ? ORDER BY time_created, id LIMIT 1",
                              (sid,)).fetchone()[0]
            con.execute("DELETE FROM part WHERE message_id = ?", (mid,))
            con.execute("UPDATE message SET data = json_set(data, '$.role', 'user') WHERE id = ?", (mid,))
            con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (f"prt_a{step}", mid, sid, 1, 1, json.dumps(
                {"type": "text", "text": "A first request written late."})))
        elif step == 2:  # a new session with one request
            row = con.execute("SELECT * FROM session WHERE id = ?", (ids[0],)).fetchone()
            cols = [r[1] for r in con.execute("PRAGMA table_info(session)")]
            new = dict(zip(cols, row, strict=True))
            new.update(id="ses_0000000000zzNEWSESSIONxyz", slug="new", title="A brand new session",
                       time_created=ms, time_updated=ms, parent_id=None)
            con.execute(f"INSERT INTO session ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                        [new[c] for c in cols])
            con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (f"msg_n{step}", new["id"], ms, ms, json.dumps(
                {"role": "user", "time": {"created": ms}})))
            con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (f"prt_n{step}", f"msg_n{step}", new["id"], ms,
                                                                  ms, json.dumps({"type": "text", "text": "New."})))
        elif step == 3:  # a session deleted (its messages and parts with it)
            sid = ids[1] if len(ids) > 1 else ids[0]
            con.execute("DELETE FROM part WHERE session_id = ?", (sid,))
            con.execute("DELETE FROM message WHERE session_id = ?", (sid,))
            con.execute("DELETE FROM session WHERE id = ?", (sid,))
        elif step == 4:  # a title changed, time_updated left as it was
            con.execute("UPDATE session SET title = 'Renamed by hand' WHERE id = ?", (ids[-1],))
        elif step == 5:  # every text part of a session's messages gone: no first request any more
            sid = ids[-1]
            con.execute("DELETE FROM part WHERE session_id = ? AND data LIKE '%\"text\"%'", (sid,))
        con.commit()
        changed = con.total_changes > 0
    finally:
        con.close()
    for side in ("-wal", "-shm"):
        assert not Path(f"{db}{side}").exists()  # the writer checkpointed and removed them, as OpenCode does
    return changed


def _change_cline(db: Path, step: int) -> bool:
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT session_id, messages_path FROM sessions WHERE is_subagent = 0 "
                           "ORDER BY session_id").fetchall()
        subs = con.execute("SELECT session_id, parent_session_id FROM sessions WHERE is_subagent = 1 "
                           "ORDER BY session_id").fetchall()
        when = f"2027-01-0{1 + step}T00:00:00.000Z"
        if step == 0:  # a turn as Cline writes it: the messages document rewritten, the row's times moved
            sid, mpath = rows[0]
            if mpath and Path(mpath).is_file():
                doc = json.loads(Path(mpath).read_text(encoding="utf-8"))
                doc.setdefault("messages", []).append({"role": "user", "content": [
                    {"type": "text", "text": "Also lint."}]})
                doc["updated_at"] = when
                Path(mpath).write_text(json.dumps(doc, indent=2), encoding="utf-8")
            con.execute("UPDATE sessions SET updated_at = ?, ended_at = ? WHERE session_id = ?", (when, when, sid))
        elif step == 1:  # a new session row
            cols = [r[1] for r in con.execute("PRAGMA table_info(sessions)")]
            row = dict(zip(cols, con.execute("SELECT * FROM sessions WHERE session_id = ?",
                                             (rows[0][0],)).fetchone(), strict=True))
            row.update(session_id="1799999999999_newss", prompt="A new task from the test", started_at=when,
                       updated_at=when, messages_path=None)
            con.execute(f"INSERT INTO sessions ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                        [row[c] for c in cols])
        elif step == 2:  # a row deleted
            con.execute("DELETE FROM sessions WHERE session_id = ?", (rows[1][0],))
        elif step == 3:  # a title changed in the metadata, no time moved
            con.execute("UPDATE sessions SET metadata_json = json_set(coalesce(metadata_json, '{}'), '$.title', "
                        "'Renamed by hand') WHERE session_id = ?", (rows[-1][0],))
        elif step == 4:  # a parent's recorded branch changed: its subagent inherits it
            if not subs:
                return False
            con.execute("UPDATE sessions SET metadata_json = json_set(coalesce(metadata_json, '{}'), "
                        "'$.git.branch', 'renamed-branch') WHERE session_id = ?", (subs[0][1],))
        elif step == 5:  # the prompt cleared: the first request comes from the messages file now
            con.execute("UPDATE sessions SET prompt = NULL WHERE session_id = ?", (rows[-2][0],))
        elif step == 6:  # that messages file's first request rewritten, its row left alone (another row moves)
            sid = rows[-2][0]  # the last one is the new session of step 1, which has no messages file
            reader = ClineReader(Env(home=db.parents[3]))  # <home>/.cline/data/db/sessions.db
            path = next((s.store_path for src in reader.sources() if src.kind == "sdk-db"
                         for s in reader.summarize(src) if s.id == sid), None)
            if path is None or not Path(path).is_file():
                return False
            doc = json.loads(Path(path).read_text(encoding="utf-8"))
            doc["messages"] = [{"role": "user", "content": [{"type": "text", "text": "Rewritten first ask."}]}]
            Path(path).write_text(json.dumps(doc, indent=2), encoding="utf-8")
            con.execute("UPDATE sessions SET updated_at = ? WHERE session_id = ?", (when, rows[0][0]))
        con.commit()
        changed = con.total_changes > 0
    finally:
        con.close()
    return changed


# ----------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("kind", ["generated", "opencode", "cline"])
def test_incremental_database_reads_equal_a_full_reread(tmp_path: Path, kind: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path, kind)
    runtimes = ["opencode", "cline"]
    fast = Env(home=home, environ={})
    ref = Env(home=home, environ={"SEGUE_FAST_PATHS": "0"})
    spy = Spy(monkeypatch)
    state = StateDir(tmp_path / "state")
    scan(fast, state, runtimes)  # the index the incremental reads start from
    changers = []
    if _opencode_db(home).exists():
        changers.append(("db", lambda step: _change_opencode(_opencode_db(home), step)))
    if _cline_db(home).exists():
        changers.append(("sdk-db", lambda step: _change_cline(_cline_db(home), step)))
    assert changers, "no database store in this home"
    for step in range(7):
        changed = [src_kind for src_kind, change in changers if change(step)]
        spy.calls.clear()
        got = scan(fast, state, runtimes)  # a new process's view: the index on disk
        want = scan(ref, StateDir(tmp_path / f"ref{step}"), runtimes)
        assert _shape(got) == _shape(want), f"step {step}"
        for src_kind in changed:
            reads = spy.incremental(src_kind)
            assert reads, f"step {step}: the {src_kind} source was not read incrementally"
            if kind == "generated":  # many sessions, a few changed: the rest came from the index
                assert all(fresh < total for total, fresh in reads), (step, reads)
    assert scan(fast, state, runtimes).sessions  # nothing changed: served from the index


def test_incremental_read_without_a_base_equals_the_reference(tmp_path: Path) -> None:
    """A cold fast listing (no base: every row read, keys recorded) equals the reference listing."""
    home = _home(tmp_path, "generated")
    got = scan(Env(home=home, environ={}), StateDir(tmp_path / "a"), ["opencode", "cline"])
    want = scan(Env(home=home, environ={"SEGUE_FAST_PATHS": "0"}), StateDir(tmp_path / "b"), ["opencode", "cline"])
    assert _shape(got) == _shape(want)
    assert len(got.sessions) > 40


def test_a_changed_database_is_reread_whole_when_fast_paths_are_off(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path, "generated")
    spy = Spy(monkeypatch)
    env = Env(home=home, environ={"SEGUE_FAST_PATHS": "0"})
    state = StateDir(tmp_path / "state")
    scan(env, state, ["opencode", "cline"])
    _change_opencode(_opencode_db(home), 4)
    scan(env, state, ["opencode", "cline"])
    assert spy.calls == []  # the reference never takes the incremental path


@pytest.mark.parametrize("kind", ["generated", "opencode"])
def test_cold_incremental_read_reuses_the_key_scan_and_equals_summarize(tmp_path: Path, kind: str,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """With no base, `summarize_delta` takes the message counts from its key scan and joins by rowid: the
    same sessions as `summarize` (the per-session count query and the id join), on the generated and the real
    store; the key path must really have run."""
    from segue.stores.opencode import reader as oc

    home = _home(tmp_path, kind)
    r = OpencodeReader(Env(home=home, environ={}))
    ran = []
    real_v1 = oc._summarize_v1

    def spy(*a: Any, **kw: Any) -> Any:
        ran.append(kw.get("msg_keys", a[5] if len(a) > 5 else None) is not None)
        return real_v1(*a, **kw)

    monkeypatch.setattr(oc, "_summarize_v1", spy)
    dbs = [s for s in r.sources() if s.kind == "db"]
    assert dbs
    for src in dbs:
        fast, _fresh, _state = r.summarize_delta(src, None, None)
        ref = r.summarize(src)
        assert [s.to_cache() for s in fast] == [s.to_cache() for s in ref]
        assert fast and any(s.first_request for s in fast)
    assert ran[0] is True and ran[1] is False  # the key path, then the reference path


# ------------------------------------------------- OpenCode: the rows added since the last read, not the indexes


def _grow_opencode(db: Path, step: str, n: int = 0) -> dict[str, Any]:
    """One change to an OpenCode database, as `step` names it (n: the change's number, for unique ids);
    returns what the test needs to check it did."""
    con = sqlite3.connect(db)
    try:
        sids = [r[0] for r in con.execute("SELECT id FROM session ORDER BY id")]
        late = 1 + max(r[0] for r in con.execute("SELECT max(time_created) FROM message"))
        info: dict[str, Any] = {}

        def message(mid: str, sid: str, text: str) -> None:
            con.execute("INSERT INTO message VALUES (?,?,?,?,?)", (mid, sid, late, late, json.dumps(
                {"role": "user", "time": {"created": late}})))
            con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", (f"prt_{mid}", mid, sid, late, late,
                                                                  json.dumps({"type": "text", "text": text})))

        if step == "append":  # a later request in a session whose row is left alone (as OpenCode's children)
            message(f"msg_zz_append{n}", sids[-1], "And one more thing.")
        elif step == "new session":
            row = con.execute("SELECT * FROM session WHERE id = ?", (sids[0],)).fetchone()
            cols = [r[1] for r in con.execute("PRAGMA table_info(session)")]
            new = dict(zip(cols, row, strict=True))
            new.update(id="ses_zzzzzzzzzzzzGROWNxyz", slug="grown", title="Grown here", time_created=late,
                       time_updated=late, parent_id=None)
            con.execute(f"INSERT INTO session ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                        [new[c] for c in cols])
            message("msg_zz_new", new["id"], "A request in a new session.")
        elif step == "top reused":  # the newest message deleted, then one added elsewhere: it takes that rowid
            top, top_sid = con.execute("SELECT rowid, session_id FROM message ORDER BY rowid DESC LIMIT 1").fetchone()
            con.execute("DELETE FROM message WHERE rowid = ?", (top,))
            other = next(s for s in sids if s != top_sid)
            con.execute("INSERT INTO message VALUES (?,?,?,?,?)", ("msg_zz_reuse", other, late, late, json.dumps(
                {"role": "assistant", "time": {"created": late}, "modelID": "reused-model"})))
            info["reused"] = con.execute("SELECT rowid FROM message WHERE id = 'msg_zz_reuse'").fetchone()[0] == top
        elif step == "one for one":  # a part deleted and another added: as many rows as before
            victim = con.execute("SELECT rowid FROM part ORDER BY rowid LIMIT 1 OFFSET 3").fetchone()[0]
            con.execute("DELETE FROM part WHERE rowid = ?", (victim,))
            mid = con.execute("SELECT id, session_id FROM message ORDER BY rowid LIMIT 1").fetchone()
            con.execute("INSERT INTO part VALUES (?,?,?,?,?,?)", ("prt_zz_one", mid[0], mid[1], late, late,
                                                                  json.dumps({"type": "text", "text": "Swapped."})))
        elif step == "session deleted":
            sid = sids[len(sids) // 2]
            for table in ("part", "message"):
                con.execute(f"DELETE FROM {table} WHERE session_id = ?", (sid,))
            con.execute("DELETE FROM session WHERE id = ?", (sid,))
        con.commit()
    finally:
        con.close()
    return info


GROW_STEPS = [("append", True), ("new session", True), ("top reused", False), ("append", True),
              ("one for one", False), ("session deleted", False), ("append", True)]


def _grown_spy(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    from segue.stores.opencode import reader as oc

    taken: list[bool] = []
    real = oc._grown

    def spy(*a: Any) -> Any:
        out = real(*a)
        taken.append(out is not None)
        return out

    monkeypatch.setattr(oc, "_grown", spy)
    return taken


@pytest.mark.parametrize("kind", ["generated", "opencode"])
def test_opencode_figures_from_added_rows_equal_the_index_scans(tmp_path: Path, kind: str,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """After rows were only added, the per-session figures come from the previous read plus the added rows
    (`_grown`, no scan of the message and part indexes); after a deletion, or a deletion hidden by an added row
    at the deleted top's rowid, they come from the scans. Either way the listing is the reference's, and the
    one of the scans alone (`WATERMARKS = False`)."""
    from segue.stores.opencode import reader as oc

    home = _home(tmp_path, kind)
    db = _opencode_db(home)
    fast = Env(home=home, environ={})
    ref = Env(home=home, environ={"SEGUE_FAST_PATHS": "0"})
    state, scans = StateDir(tmp_path / "state"), StateDir(tmp_path / "scans")
    scan(fast, state, ["opencode"])
    monkeypatch.setattr(oc, "WATERMARKS", False)
    scan(fast, scans, ["opencode"])
    monkeypatch.setattr(oc, "WATERMARKS", True)
    taken = _grown_spy(monkeypatch)
    for i, (step, expect_taken) in enumerate(GROW_STEPS):
        info = _grow_opencode(db, step, i)
        if step == "top reused":
            assert info["reused"], "SQLite gave the added row another rowid: the case is not exercised"
        taken.clear()
        got = scan(fast, state, ["opencode"])
        assert taken == [expect_taken], (step, taken)
        monkeypatch.setattr(oc, "WATERMARKS", False)
        by_scans = scan(fast, scans, ["opencode"])
        monkeypatch.setattr(oc, "WATERMARKS", True)
        want = scan(ref, StateDir(tmp_path / f"ref{i}"), ["opencode"])
        assert _shape(got) == _shape(want), step
        assert _shape(by_scans) == _shape(want), step


def test_opencode_added_rows_control_without_the_top_row_check(tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: trusting the count alone, a deleted newest message whose rowid an added message took
    goes unseen, and the listing differs from the reference."""
    from segue.stores.opencode import reader as oc

    home = _home(tmp_path, "generated")
    fast = Env(home=home, environ={})
    state = StateDir(tmp_path / "state")
    scan(fast, state, ["opencode"])
    monkeypatch.setattr(oc, "_top_in_place", lambda *_a: True)
    taken = _grown_spy(monkeypatch)
    assert _grow_opencode(_opencode_db(home), "top reused")["reused"]
    got = scan(fast, state, ["opencode"])
    assert taken == [True]
    want = scan(Env(home=home, environ={"SEGUE_FAST_PATHS": "0"}), StateDir(tmp_path / "ref"), ["opencode"])
    assert _shape(got) != _shape(want)
