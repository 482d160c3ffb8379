"""A Claude Code transcript that grew is read on from the previous read's mark (`stores.claude.resume`): the steps
before the mark and the ones read on from it must be the steps of a read from the first line, at every point
the file could have been read before it grew, on the real and hand-made stores in every serialization the
reader contract knows. A mark that does not match the file (another file, rewritten bytes, a shorter file, a
damaged mark) reads from the start; so does the off switch. In the index, a grown session read on from its mark
gives the index a build from nothing gives. The control: a mark taken where the walker still held a call
waiting for its result loses it, and the comparison catches that."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from segue.listing import reader_for
from segue.model import ReadStats
from segue.search import index as I
from segue.stores import resume_mark
from segue.stores.base import Env
from segue.stores.claude.steps import MAX_EVICTED, StepWalker
from tests import store_changes
from tests.test_reader_contract import STORES, _tree
from tests.test_search import copy_stores, service
from tests.test_search_build import dump

RESUMING = [(rts[0], n) for n, (rts, _) in STORES.items() if rts in (("claude",), ("codex",))]
VARIANTS = ("", "spaced", "sort_keys", "reversed", "crlf", "bom", "blank_lines", "torn")


@pytest.fixture(autouse=True)
def _every_size(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(resume_mark, "MIN_SIZE", 0)  # the fixtures are small: give every transcript a mark


def _line_ends(data: bytes, most: int = 10) -> list[int]:
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A][:-1]
    step = max(1, len(ends) // most)
    return ends[::step]


def _hashes(steps: Any) -> list[bytes]:
    return [I._hash(s) for s in steps]


def _compare(runtime: str, home: Path, environ: dict[str, str], most: int = 10) -> tuple[int, int]:
    """Every transcript under `home` cut at (`most`) line ends, read, grown back in place and read on:
    (compared, how many of them went on from a mark)."""
    reader = reader_for(runtime, Env(home=home, environ=environ))
    compared = went_on = 0
    for src in reader.sources():
        for session in reader.summarize(src):
            path = session.store_path
            if path.endswith(".zst"):  # (compressed rollouts are read from the start)
                assert reader.search_steps_from(session, ReadStats(), None) is None
                continue
            data = Path(path).read_bytes()
            want = _hashes(reader.search_steps(session, ReadStats()))
            for cut in _line_ends(data, most):
                with open(path, "r+b") as f:  # the file as it was at the first read: the same inode
                    f.truncate(cut)
                first = reader.search_steps_from(session, ReadStats(), None)
                assert first is not None and first.start == 0
                before = _hashes(first)
                with open(path, "ab") as f:
                    f.write(data[cut:])
                again = reader.search_steps_from(session, ReadStats(), first.mark)
                assert again is not None
                got = before[:again.start] + _hashes(again)
                assert got == want, (path, cut, again.start)
                compared += 1
                went_on += again.start > 0 or (first.mark is not None and not before)
            assert Path(path).read_bytes() == data
    return compared, went_on


@pytest.mark.parametrize("variant", VARIANTS, ids=[v or "as_written" for v in VARIANTS])
@pytest.mark.parametrize(("runtime", "name"), RESUMING, ids=[n for _rt, n in RESUMING])
def test_a_read_on_from_the_mark_gives_the_steps_of_a_read_from_the_start(
        runtime: str, name: str, variant: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    store = _tree(name, variant, tmp_path_factory)
    root = tmp_path / "store"
    shutil.copytree(store.root, root, symlinks=True)  # (the built tree is shared by other tests)
    environ = {k: str(root / v) for k, v in store.environ.items()}
    compared, went_on = _compare(runtime, root / store.home, environ)
    assert compared > 0 and went_on > 0, (compared, went_on)


def test_the_control_a_mark_taken_while_a_call_waits_loses_it(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    store = _tree("real-claude", "", tmp_path_factory)
    root = tmp_path / "store"
    shutil.copytree(store.root, root, symlinks=True)
    environ = {k: str(root / v) for k, v in store.environ.items()}
    monkeypatch.setattr(StepWalker, "quiet", lambda self: True)
    monkeypatch.setattr(StepWalker, "restore", _restore_anyway)
    with pytest.raises(AssertionError):
        _compare("claude", root / store.home, environ)


def _restore_anyway(self: StepWalker, state: tuple[Any, ...]) -> bool:
    _sub, _fast, _lean, self.lines, self.recognised, self.bad_inputs, self.requests, seen = state
    self.seen.extend(seen)
    self.seen_set.update(self.seen)
    return True


# -- marks that do not match -------------------------------------------------------------------------------------

@pytest.fixture
def grown(tmp_path: Path) -> tuple[Any, Any, Path, bytes, bytes, Path]:
    """(reader, session, path, the mark of the first read, the transcript's bytes, the stores' root)."""
    environ = copy_stores(tmp_path)
    path = store_changes.claude_transcript(tmp_path)
    reader = reader_for("claude", Env(home=tmp_path / "emptyhome", environ=environ))
    session = next(s for src in reader.sources() if src.path == str(path) for s in reader.summarize(src))
    first = reader.search_steps_from(session, ReadStats(), None)
    assert first is not None
    list(first)
    assert first.mark is not None
    return reader, session, path, first.mark, path.read_bytes(), tmp_path


def _start(reader: Any, session: Any, mark: bytes | None) -> int:
    again = reader.search_steps_from(session, ReadStats(), mark)
    assert again is not None
    list(again)
    return again.start


def test_a_matching_mark_goes_on(grown: Any) -> None:
    reader, session, _path, mark, _data, root = grown
    store_changes.append_claude_reply(root, "Grown.")
    assert _start(reader, session, mark) > 0


@pytest.mark.parametrize("change", ["replaced", "rewritten", "shorter", "head", "damaged mark"])
def test_a_mark_that_does_not_match_reads_from_the_start(grown: Any, change: str) -> None:
    reader, session, path, mark, data, _root = grown
    if change == "replaced":  # the same bytes under the name, another inode (made while the old one exists)
        new = path.with_name(path.name + ".new")
        new.write_bytes(data)
        os.replace(new, path)
    elif change == "rewritten":  # a byte just before the mark's offset
        offset = _offset(mark)
        with open(path, "r+b") as f:
            f.seek(offset - 2)
            f.write(b" " if data[offset - 2:offset - 1] != b" " else b"\t")
    elif change == "shorter":
        with open(path, "r+b") as f:
            f.truncate(_offset(mark) - 1)
    elif change == "head":
        with open(path, "r+b") as f:
            f.write(b"[" if data[:1] != b"[" else b"{")
    else:
        mark = mark[: len(mark) // 2]
    assert _start(reader, session, mark) == 0


def _offset(mark: bytes) -> int:
    import marshal

    return int(marshal.loads(mark)[4])


def test_a_mark_past_the_steps_the_index_holds_is_not_taken(grown: Any) -> None:
    from segue.search import engine

    reader, session, _path, mark, _data, root = grown
    store_changes.append_claude_reply(root, "Grown.")
    taken = engine._steps(reader.env, session, ReadStats(), mark, held=10_000)
    past = engine._steps(reader.env, session, ReadStats(), mark, held=0)
    assert taken.start > 0 and past.start == 0
    assert _hashes(past) == _hashes(reader.search_steps(session, ReadStats()))
    taken.close()


def test_off_the_read_is_not_resumable(grown: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    reader, session, _path, _mark, _data, _root = grown
    off = reader_for("claude", Env(home=reader.env.home, environ={**reader.env.environ, "SEGUE_SEARCH_RESUME": "0"}))
    assert off.search_steps_from(session, ReadStats(), None) is None
    slow = reader_for("claude", Env(home=reader.env.home, environ={**reader.env.environ, "SEGUE_FAST_PATHS": "0"}))
    assert slow.search_steps_from(session, ReadStats(), None) is None


# -- in the index ------------------------------------------------------------------------------------------------

def _reply(root: Path, text: str, n: int) -> None:
    store_changes.append_claude_reply(root, text, n)


def _codex_turn(root: Path, text: str, n: int) -> None:
    """Append a turn to the Codex fixture's newest rollout, as Codex appends one (its event form)."""
    path = sorted((root / "codex").rglob("rollout-*.jsonl"))[-1]
    ts = json.loads(path.read_bytes().splitlines()[-1])["timestamp"]
    events = [{"type": "task_started", "turn_id": f"turn-resume-{n}"},
              {"type": "user_message", "message": f"Request {n}: move it.", "images": []},
              {"type": "agent_message", "message": text},
              {"type": "task_complete", "turn_id": f"turn-resume-{n}", "last_agent_message": text}]
    with open(path, "a") as f:
        for p in events:
            f.write(json.dumps({"timestamp": ts, "type": "event_msg", "payload": p}, separators=(",", ":")) + "\n")


GROW = {"claude": _reply, "codex": _codex_turn}


def _starts(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The step each read of this process went on from (0: from the start), as they happen."""
    starts: list[int] = []
    real = resume_mark.going_on

    def spied(*args: Any) -> Any:
        out = real(*args)
        starts.append(out[1])
        return out

    monkeypatch.setattr(resume_mark, "going_on", spied)
    return starts


@pytest.mark.parametrize("runtime", sorted(GROW))
@pytest.mark.parametrize("patch", ["1", "0"])
def test_grown_sessions_read_on_index_what_a_build_from_nothing_does(tmp_path: Path, patch: str, runtime: str,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", patch)
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env_a, env_b = copy_stores(a), copy_stores(b)
    starts = _starts(monkeypatch)
    service(a, env_a).search("files")
    grow = GROW[runtime]
    for n in range(3):
        grow(a, f"Step {n}: the quokka moved.", n)
        service(a, env_a).search("quokka")
    for n in range(3):
        grow(b, f"Step {n}: the quokka moved.", n)
    service(b, env_b).search("quokka")
    assert max(starts) > 0  # the grown transcript was read on from its mark
    assert _without_keys(a) == _without_keys(b)
    assert service(a, env_a).search("quokka").to_json()["total"] == 1


def _without_keys(root: Path) -> Any:
    """The index's rows, rooted, without the sessions' keys (they hash the files' times, which differ here)."""
    got = json.loads(json.dumps(dump(root)).replace(str(root), "<root>"))
    got["sessions"] = [row[:9] + row[10:] for row in got["sessions"]]
    return got


def test_the_index_keeps_marks_only_where_nothing_was_learned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                              ) -> None:
    import sqlite3

    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    environ = copy_stores(tmp_path)
    service(tmp_path, environ).search("files")
    con = sqlite3.connect(tmp_path / "segue" / "cache" / I.FILE_NAME)
    try:
        rows = con.execute("SELECT runtime, learned_at, mark IS NOT NULL FROM sessions").fetchall()
    finally:
        con.close()
    assert any(rt == "claude" and has for rt, _l, has in rows)
    assert not any(learned is not None and has for _rt, learned, has in rows)
    assert os.environ.get("SEGUE_SEARCH_RESUME", "1") != "0"


# -- the walker's own note of its last quiet point -------------------------------------------------------------

def _user(n: int) -> bytes:
    return json.dumps({"type": "user", "uuid": f"u-{n}", "message": {"role": "user", "content": f"Request {n}"}}
                      ).encode() + b"\n"


def _assistant(n: int) -> bytes:
    return json.dumps({"type": "assistant", "uuid": f"a-{n}", "message": {
        "id": f"m-{n}", "role": "assistant", "content": [{"type": "text", "text": f"Reply {n}"}]}}).encode() + b"\n"


@pytest.mark.parametrize("fast", [True, False])
@pytest.mark.parametrize("after", [0, 5, 3000, 70_000])
def test_the_noted_state_is_the_state_at_the_last_quiet_point(fast: bool, after: int) -> None:
    """Past the duplicate window's 2,048 uuids, with `after` replies (each a uuid, none quiet) after the last
    request: `quiet_state()` is what `state()` gave there, or None once more left the window than it keeps."""
    lines = [_assistant(n) for n in range(3000)] + [_user(1)] + [_assistant(n) for n in range(3000, 3000 + after)]
    walker = StepWalker(is_sub=False, fast=fast, lean=True)
    stats = ReadStats()
    then = None
    for raw in lines:
        list(walker.line(raw, False, stats))
        if walker.quiet():
            walker.note_quiet()
            then = walker.state()
    assert then is not None and len(then[-1]) == 2048
    got = walker.quiet_state()
    if after > MAX_EVICTED:  # (every reply after the request pushed one out of the full window)
        assert got is None
    else:
        assert got == then
    assert walker.requests == 1


def _codex_forgetting(what: str) -> Any:
    from segue.stores.codex.steps import StepBuilder

    real = StepBuilder.restore

    def restore(self: StepBuilder, state: Any) -> bool:
        ok = real(self, state)
        if ok and what == "last message":
            self.last_message = None
        elif ok and what == "previous step":
            self.prev = None
        elif ok and what == "settled calls":
            self.done = set()
        return ok

    return restore


def _reordered_codex(root: Path, how: str) -> Path:
    """The real Codex store with its first rollout rewritten in an order Codex may also write: `call after its
    end` (a command's function_call after its completed item: the settled call ids must hold it back),
    `request twice` (the request as an item and again as an event: the previous step must hold it back)."""
    from tests.test_reader_contract import REAL

    home = root / "home"
    shutil.copytree(REAL / "codex" / "home", home, symlinks=True)
    path = sorted(home.rglob("rollout-*.jsonl"))[0]
    lines = path.read_bytes().splitlines(keepends=True)
    recs = [json.loads(ln) for ln in lines]
    if how == "call after its end":
        call = next(i for i, r in enumerate(recs) if r["payload"].get("type") == "function_call")
        end = next(i for i, r in enumerate(recs) if r["payload"].get("type") == "item_completed"
                   and r["payload"]["item"].get("type") == "CommandExecution")
        lines.insert(end, lines.pop(call))
    else:
        item = next(i for i, r in enumerate(recs) if r["payload"].get("type") == "item_completed"
                    and r["payload"]["item"].get("type") == "UserMessage")
        text = recs[item]["payload"]["item"]["content"][0]["text"]
        event = {"timestamp": recs[item]["timestamp"], "type": "event_msg",
                 "payload": {"type": "user_message", "message": text, "images": []}}
        lines.insert(item + 1, json.dumps(event, separators=(",", ":")).encode() + b"\n")
    path.write_bytes(b"".join(lines))
    return home


REORDERED = ("call after its end", "request twice")


@pytest.mark.parametrize("how", REORDERED)
def test_codex_reordered_forms_read_on_give_the_steps_of_a_read_from_the_start(how: str, tmp_path: Path) -> None:
    compared, went_on = _compare("codex", _reordered_codex(tmp_path, how), {}, most=1000)
    assert compared > 0 and went_on > 0


@pytest.mark.parametrize("what", ["waiting call", "last message", "previous step", "settled calls"])
def test_the_controls_a_codex_builder_that_forgets_is_caught(what: str, tmp_path: Path,
                                                             tmp_path_factory: pytest.TempPathFactory,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Each part of the Codex builder's state matters on some store: leaving it out gives other steps."""
    from segue.stores.codex.steps import StepBuilder

    if what == "waiting call":
        monkeypatch.setattr(StepBuilder, "quiet", lambda self: True)
    else:
        monkeypatch.setattr(StepBuilder, "restore", _codex_forgetting(what))
    caught = []
    for name in ("real-codex", "hand-codex", "generated-codex", "tooljson-codex", *REORDERED):
        root = tmp_path / name
        if name in REORDERED:
            home, environ, most = _reordered_codex(root, name), {}, 1000
        else:
            store = _tree(name, "", tmp_path_factory)
            shutil.copytree(store.root, root, symlinks=True)
            home, environ, most = root / store.home, {k: str(root / v) for k, v in store.environ.items()}, 10
        try:
            _compare("codex", home, environ, most)
        except AssertionError:
            caught.append(name)
    assert caught, what


# -- a big transcript, in the workers and in this process --------------------------------------------------------

def _fill(root: Path, mb: float, walrus: str = "walrus") -> Path:
    """Grow the Claude fixture's "one" transcript past `mb` MB with turns (a request and a reply each), one of
    them naming a walrus (or saying `walrus`)."""
    path = store_changes.claude_transcript(root)
    recs = [json.loads(ln) for ln in path.read_text().splitlines()]
    ask = next(r for r in recs if r.get("type") == "user" and isinstance(r["message"].get("content"), str)
               and not r.get("isMeta"))
    say = next(r for r in reversed(recs) if r.get("type") == "assistant"
               and r["message"]["content"][0].get("type") == "text")
    out, size, n = [], path.stat().st_size, 0
    while size < mb * 1e6:
        word = walrus if n == 1000 else "filler"
        ask = {**ask, "uuid": f"10000000-0000-4000-8000-{n:012d}", "message": {**ask["message"],
               "content": f"Turn {n}: go on"}}
        say = {**say, "uuid": f"20000000-0000-4000-8000-{n:012d}", "message": {
            **say["message"], "id": f"msg_fill_{n}",
            "content": [{"type": "text", "text": f"Reply {n}: the {word} said " + "words " * 300}]}}
        for r in (ask, say):
            line = json.dumps(r, separators=(",", ":")) + "\n"
            out.append(line)
            size += len(line)
        n += 1
    with open(path, "a") as f:
        f.write("".join(out))
    return path


@pytest.mark.parametrize("workers", ["2", "0"])
@pytest.mark.parametrize("resume_on", [True, False])
def test_a_big_grown_transcript_is_read_on_from_its_mark(tmp_path: Path, workers: str, resume_on: bool,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """What shows that the read went on from the mark: a word changed in place (same length, same inode) in
    the middle of the file, outside the bytes the mark checks, is not seen, while the appended reply is. With
    SEGUE_SEARCH_RESUME=0 (the control) the whole file is read again and the change is found."""
    monkeypatch.setattr(resume_mark, "MIN_SIZE", 4 * 1024 * 1024)  # (the workers run with the real one)
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", workers)
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "1" if workers == "0" else "0")  # (the patch reads serially)
    from segue.search import workers as W

    calls: list[int] = []
    real_run = W.run

    def counted(tasks: Any, *args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real_run(tasks, *args, **kw)

    monkeypatch.setattr(W, "run", counted)
    environ = copy_stores(tmp_path)
    if not resume_on:
        environ["SEGUE_SEARCH_RESUME"] = "0"
    path = _fill(tmp_path, 4.5)
    assert service(tmp_path, environ).search("walrus").to_json()["total"] == 1
    data = path.read_bytes()
    at = data.index(b"the walrus said")
    assert 8192 < at < len(data) - 8192
    with open(path, "r+b") as f:
        f.seek(at + 4)
        f.write(b"wombat")
    _reply(tmp_path, "At last the quokka spoke.", 99_999)
    svc = service(tmp_path, environ)
    assert svc.search("quokka").to_json()["total"] == 1
    assert svc.search("wombat").to_json()["total"] == (0 if resume_on else 1)
    assert len(calls) == (2 if workers == "2" else 0)  # the build and the refresh, in the workers


@pytest.mark.parametrize("workers", ["2", "0"])
def test_a_value_learned_after_the_mark_is_redacted_before_it(tmp_path: Path, workers: str,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A read on from the mark that finds a value (`password=…`) the steps before the mark show bare: those rows
    are written again with it too (in this process from the index's rows; the workers, which hold only the rows
    after the mark, read the session from its start)."""
    from tests.test_search_learned import BARE, TEACH, VALUE

    monkeypatch.setattr(resume_mark, "MIN_SIZE", 4 * 1024 * 1024)
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", workers)
    monkeypatch.setenv("SEGUE_SEARCH_PATCH", "1" if workers == "0" else "0")
    environ = copy_stores(tmp_path)
    _fill(tmp_path, 4.5, walrus=BARE)
    assert service(tmp_path, environ).search(VALUE).to_json()["total"] == 1  # nothing taught it yet
    con = sqlite3.connect(tmp_path / "segue" / "cache" / I.FILE_NAME)
    try:
        assert con.execute("SELECT count(*) FROM sessions WHERE mark IS NOT NULL").fetchone()[0] == 1
    finally:
        con.close()
    _reply(tmp_path, TEACH, 99_998)
    svc = service(tmp_path, environ)
    assert svc.search(VALUE).to_json()["total"] == 0
    near = svc.search("zebrafish").to_json()
    assert near["total"] == 1 and "[REDACTED:" in near["results"][0]["snippet"], near
    assert not any(VALUE in text for _rowid, text, _k, _c in dump(tmp_path)["docs"])


def test_a_read_on_from_the_mark_leaves_the_stores_as_they_were(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Read-only: no byte, file or time under the stores changes while a grown transcript is read on from its
    mark; the snapshot sees a touched time and a new `-shm` file (the controls)."""
    from tests.test_search_patch import _snapshot

    monkeypatch.setattr(resume_mark, "MIN_SIZE", 4 * 1024 * 1024)
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    starts = _starts(monkeypatch)
    environ = copy_stores(tmp_path)
    path = _fill(tmp_path, 4.5)
    service(tmp_path, environ).search("walrus")
    _reply(tmp_path, "At last the quokka spoke.", 99_997)
    stores = [tmp_path / rt for rt in ("claude", "codex", "opencode", "cline", "gemini") if (tmp_path / rt).exists()]
    before = [_snapshot(d) for d in stores]
    starts.clear()
    assert service(tmp_path, environ).search("quokka").to_json()["total"] == 1
    assert max(starts) > 0  # it went on from the mark
    assert [_snapshot(d) for d in stores] == before
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1))
    assert [_snapshot(d) for d in stores] != before
    (path.parent / "x.jsonl-shm").write_bytes(b"")
    assert set().union(*(_snapshot(d) for d in stores)) != set().union(*before)
