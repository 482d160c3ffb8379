"""The patch path of the warm listing (segue.patch): after a change in some runtimes' stores, the kept `segue list`
is patched (only those runtimes read again, the other sessions' printed bytes reused) and must be byte for byte
what the full path prints (SEGUE_WARM=0, with an index of its own) for every kind of change, several at once
included; a patch that cannot prove its answer leaves it to the full path. On copies of the real runtimes' stores."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from segue import patch, warm
from tests import store_changes
from tests.test_search import expected
from tests.test_warm import Output, full, quick
from tests.test_warm import root as root  # the fixture, shared

ARGSETS = (["list", "--json"], ["list", "--json", "--all"], ["list"], ["list", "--all", "--limit", "0"],
           ["list", "--json", "--runtime", "claude", "--runtime", "opencode"], ["list", "--json", "--dir", "/tmp"])


@pytest.fixture
def spy(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int | None]]:
    """What each patch attempt returned (None: refused, the full path answers)."""
    calls: list[int | None] = []
    real = patch.answer

    def answer(*a: Any) -> int | None:
        rc = real(*a)
        calls.append(rc)
        return rc

    monkeypatch.setattr(patch, "answer", answer)
    yield calls


def reference(root: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Output:
    """The full path with SEGUE_WARM=0 on a state directory of its own (the same kept briefs and tokens, no index,
    no kept answers): nothing the patch wrote can make it agree."""
    ref_home = root / "segue-ref"
    shutil.rmtree(ref_home, ignore_errors=True)
    shutil.copytree(root / "segue", ref_home, symlinks=True,
                    ignore=lambda d, names: [n for n in names if n.startswith("index.sqlite") or n == warm.SUBDIR])
    with monkeypatch.context() as m:
        m.setenv("SEGUE_HOME", str(ref_home))
        return full(monkeypatch, argv, keep=False)


def kept_all(monkeypatch: pytest.MonkeyPatch, argsets: tuple[list[str], ...] = ARGSETS) -> None:
    for argv in argsets:
        ref = full(monkeypatch, argv)
        assert quick(monkeypatch, argv) == ref, argv  # the control: kept and answered warm


def check_patched(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None],
                  argsets: tuple[list[str], ...] = ARGSETS, must_patch: bool = True) -> None:
    for argv in argsets:
        spy.clear()
        got = quick(monkeypatch, argv)
        ref = reference(root, monkeypatch, argv)
        if must_patch:  # the patch path answered (or, for a listing the change is not in, the warm answer)
            assert spy in ([0], []) and got is not None, (argv, spy)
        assert got is None or got == ref, argv
        spy.clear()
        again = quick(monkeypatch, argv)  # the patched entry answers warm as it is
        if got is not None:
            assert again == ref and spy == [], argv
        else:
            assert full(monkeypatch, argv) == ref


def test_an_appended_claude_transcript_is_patched(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                  spy: list[int | None]) -> None:
    kept_all(monkeypatch)
    store_changes.append_claude_reply(root, "patched reply")
    check_patched(root, monkeypatch, spy)


# -- changes -------------------------------------------------------------------------------------------------------

def _claude_file(root: Path, scenario: str) -> tuple[Path, str]:
    exp = next(s for s in expected()["claude"] if s["scenario"] == scenario)
    return next((root / "claude").rglob(f"{exp['id']}.jsonl")), exp["id"]


def clone_claude(root: Path, scenario: str, new_id: str) -> Path:
    """A new Claude Code session: a copy of a scenario's transcript under another session id."""
    path, old = _claude_file(root, scenario)
    dest = path.with_name(f"{new_id}.jsonl")
    dest.write_text(path.read_text().replace(old, new_id))
    return dest


def new_claude_session(root: Path) -> None:
    clone_claude(root, "one", "00000000-0000-4000-8000-00000000c0de")


def continued_session(root: Path) -> None:
    """A new session whose first prompt carries the handoff marker: it links (`continues`) and is recorded."""
    clone_claude(root, "continued", "00000000-0000-4000-8000-00000000c0d1")


def new_subagent(root: Path) -> None:
    """A second subagent of the "sub" session, in a file of its own: the parent's count moves (kept bytes)."""
    sub = next((root / "claude").rglob("agent-*.jsonl"))
    old = sub.stem[len("agent-"):]
    new = "a0000000000000001"
    (sub.parent / f"agent-{new}.jsonl").write_text(sub.read_text().replace(old, new))
    meta = sub.with_name(f"agent-{old}.meta.json")
    if meta.exists():
        (sub.parent / f"agent-{new}.meta.json").write_text(meta.read_text().replace(old, new))


def subagent_gone(root: Path) -> None:
    for p in (root / "claude").rglob("agent-*"):
        p.unlink()


def codex_append(root: Path) -> None:
    from segue.model import iso

    p = next((root / "codex").rglob("rollout-*.jsonl"))
    with open(p, "a") as f:
        f.write(json.dumps({"timestamp": iso(2.0e9), "type": "event_msg",
                            "payload": {"type": "user_message", "message": "and one more thing"}}) + "\n")


def opencode_rows(root: Path) -> None:
    store_changes.rename_opencode_sessions(root, bump_time=True)


def opencode_renamed(root: Path) -> None:
    store_changes.rename_opencode_sessions(root)


def opencode_child(root: Path) -> None:
    """A new OpenCode child session row under an existing parent (the parent's subagent count moves)."""
    db = next((root / "opencode").rglob("opencode*.db"))
    con = sqlite3.connect(db)
    con.row_factory = sqlite3.Row
    row = dict(con.execute("SELECT * FROM session WHERE parent_id IS NOT NULL").fetchone())
    old = row["id"]
    row["id"] = "ses_0000000000000000000000child"
    row["time_updated"] = row["time_updated"] + 5000
    con.execute(f"INSERT INTO session ({','.join(row)}) VALUES ({','.join('?' * len(row))})", list(row.values()))
    for table in ("message", "part"):
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({table})")]
        for r in con.execute(f"SELECT * FROM {table} WHERE session_id = ?", (old,)).fetchall():
            d = dict(r)
            d["id"] = d["id"] + "x"
            d["session_id"] = row["id"]
            if "message_id" in d:
                d["message_id"] = d["message_id"] + "x"
            con.execute(f"INSERT INTO {table} ({','.join(cols)}) VALUES ({','.join('?' * len(cols))})",
                        [d[c] for c in cols])
    con.commit()
    con.close()
    for side in ("-wal", "-shm"):
        Path(str(db) + side).unlink(missing_ok=True)


def several(root: Path) -> None:
    """Three runtimes at once: a Claude transcript grows, OpenCode rows move, a Codex rollout goes."""
    store_changes.append_claude_reply(root, "several at once")
    opencode_rows(root)
    store_changes.remove_rollout(root)
    new_subagent(root)


PATCHED: list[Callable[[Path], None]] = [
    lambda r: store_changes.append_claude_reply(r, "patched reply"), new_claude_session, continued_session,
    store_changes.new_project, new_subagent, subagent_gone, store_changes.remove_rollout, codex_append,
    opencode_rows, opencode_renamed, opencode_child, store_changes.cline_session, several]
NAMES = ["claude_append", "claude_new", "continued", "new_project", "new_subagent", "subagent_gone",
         "removed_rollout", "codex_append", "opencode_rows", "opencode_renamed", "opencode_child", "cline_dir",
         "several"]


@pytest.mark.parametrize("change", PATCHED, ids=NAMES)
def test_a_change_is_patched_byte_for_byte(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None],
                                           change: Callable[[Path], None]) -> None:
    kept_all(monkeypatch)
    change(root)
    check_patched(root, monkeypatch, spy)


def test_changes_one_after_another_are_patched_each_time(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                         spy: list[int | None]) -> None:
    kept_all(monkeypatch)
    for change in (new_subagent, opencode_rows, subagent_gone, codex_append, continued_session):
        change(root)
        check_patched(root, monkeypatch, spy)


def test_a_wrong_patch_is_caught(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None]) -> None:
    """The negative control: a patch that forgets to count subagents again (or to order again) prints something
    else than the full path, and these tests see it."""
    argsets = (["list", "--json"], ["list"])
    kept_all(monkeypatch, argsets)
    new_subagent(root)
    with monkeypatch.context() as m:
        m.setattr(patch._Patch, "_recount", lambda self, pool, changed: None)
        for argv in argsets:
            got = quick(monkeypatch, argv)
            assert spy[-1] == 0 and got is not None and got != reference(root, monkeypatch, argv), argv
    warm.forget(str(root / "segue"))
    kept_all(monkeypatch, argsets)
    store_changes.append_claude_reply(root, "moves it to the top")
    with monkeypatch.context() as m:
        real = patch._order
        m.setattr(patch, "_order", lambda metas, args_t: (real(metas, args_t) or [])[::-1])  # oldest first
        got = quick(monkeypatch, ["list", "--json"])
        assert got is not None and got != reference(root, monkeypatch, ["list", "--json"])


def test_a_session_going_live_is_left_to_the_full_path(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                       spy: list[int | None]) -> None:
    kept_all(monkeypatch)
    exp = next(s for s in expected()["claude"] if s["scenario"] == "one")
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    (claude_root / "sessions").mkdir(exist_ok=True)
    (claude_root / "sessions" / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(),
                                                                             "sessionId": exp["id"]}))
    for argv in ARGSETS:
        spy.clear()
        assert quick(monkeypatch, argv) is None, argv  # the live checks changed: never patched
        assert spy in ([None], []), argv
        ref = reference(root, monkeypatch, argv)
        assert full(monkeypatch, argv) == ref
    assert b'"live": true' in reference(root, monkeypatch, ["list", "--json"])[1]


def test_refusals_print_nothing_and_the_full_path_answers(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                          spy: list[int | None]) -> None:
    """A patch that cannot prove its answer (a damaged table; the same session in two files; the switch off)."""
    argv = ["list", "--json"]
    kept_all(monkeypatch, (argv,))
    store_changes.new_file_in_project(root)  # a copy of a transcript: the same session id in two sources
    spy.clear()
    got = quick(monkeypatch, argv)
    assert got is None or got == reference(root, monkeypatch, argv)
    assert full(monkeypatch, argv) == reference(root, monkeypatch, argv)
    warm.forget(str(root / "segue"))
    kept_all(monkeypatch, (argv,))
    entry = next((root / "segue" / "cache" / warm.SUBDIR).iterdir())
    data = bytearray(entry.read_bytes())
    head_len = int.from_bytes(data[-8:], "little")
    found = warm._read_entry(str(entry))
    assert found is not None
    span = found[0][6]
    found[1].close()
    assert span is not None
    data[span[0]:span[0] + span[1]] = bytes(span[1])  # the table zeroed, the header intact
    assert len(data) - 8 - head_len > span[0]
    entry.write_bytes(bytes(data))
    store_changes.append_claude_reply(root, "after the damage")
    spy.clear()
    assert quick(monkeypatch, argv) is None and spy == [None]
    ref = reference(root, monkeypatch, argv)
    assert full(monkeypatch, argv) == ref
    store_changes.append_claude_reply(root, "and with the switch off")
    monkeypatch.setenv("SEGUE_WARM_PATCH", "0")
    spy.clear()
    assert quick(monkeypatch, argv) is None and spy == []
    monkeypatch.delenv("SEGUE_WARM_PATCH")
    spy.clear()
    assert quick(monkeypatch, argv) == reference(root, monkeypatch, argv) and spy == [0]


def test_gemini_and_a_moved_project_root(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None]) -> None:
    kept_all(monkeypatch)
    store_changes.gemini_project_root(root)
    check_patched(root, monkeypatch, spy, must_patch=False)


def test_the_patched_entry_is_crash_safe(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None]) -> None:
    """A patch writes its entry beside the old one and renames it over: a crash before the rename leaves the old
    entry (refused as changed, patched again), never a half-written one; no temporary file stays behind."""
    argv = ["list", "--json"]
    kept_all(monkeypatch, (argv,))
    store_changes.append_claude_reply(root, "crash")
    real_replace = os.replace

    def crash(a: Any, b: Any) -> None:
        raise OSError("crashed before the rename")

    with monkeypatch.context() as m:
        m.setattr(os, "replace", crash)
        got = quick(monkeypatch, argv)
    ref = reference(root, monkeypatch, argv)
    assert got == ref
    assert not [p for p in (root / "segue" / "cache" / warm.SUBDIR).iterdir() if p.name.endswith(".tmp")]
    assert os.replace is real_replace
    spy.clear()
    assert quick(monkeypatch, argv) == ref and spy == [0]  # patched again from the old entry
    spy.clear()
    assert quick(monkeypatch, argv) == ref and spy == []


# -- the shortcuts of the patch, against their references ---------------------------------------------------------

def _metas(seed: int) -> list[patch._Meta]:
    """Varied ordering facts: parents, subagents of a parent gone, two runtimes sharing ids, equal times."""
    import random

    rnd = random.Random(seed)
    out: list[patch._Meta] = []
    ids = [f"s{i:03d}" for i in range(60)] + ['q"uote', "back\\slash", "ünï", "tab\there"]
    for sid in ids:
        runtime = rnd.choice(("claude", "codex", "opencode"))
        parent = rnd.choice([None, None, None, "", rnd.choice(ids), "gone"])
        t = float(rnd.randrange(40))  # few distinct times: ties of time, broken by the id
        out.append(patch._Meta((runtime, sid, parent, t, rnd.choice([None, t - 1]), "/w", 0, None, "k")))
    for m in rnd.sample(out, 3):  # the same id in another runtime, at another time or (a tie) the same one
        t = m.sort_time if rnd.random() < 0.1 else 50.0 + rnd.randrange(9)
        out.append(patch._Meta(("cline", m.id, None, t, None, "/w", 0, None, "k")))
    return out


@pytest.mark.parametrize("runtimes", [None, ("claude",), ("codex", "opencode")])
def test_the_quick_order_is_listing_groups(monkeypatch: pytest.MonkeyPatch, runtimes: Any) -> None:
    """patch._order without subagents or a directory (one sort of the top-level sessions) against Listing.groups
    (SEGUE_FAST_PATHS=0 makes _order use it), on varied tables; the negative control: top-level subagents differ."""
    args_t = (runtimes, None, False)
    ordered = 0
    for seed in range(40):
        metas = _metas(seed)
        got = patch._order(metas, args_t)
        with monkeypatch.context() as m:
            m.setenv("SEGUE_FAST_PATHS", "0")
            ref = patch._order(metas, args_t)
        assert (got is None) == (ref is None)
        if got is not None:
            ordered += 1
            assert [(x.runtime, x.id) for x in got] == [(x.runtime, x.id) for x in ref]  # type: ignore[union-attr]
    assert ordered >= 20  # (most tables have no tie: the orders themselves are compared)
    seed = next(s for s in range(40) if patch._order(_metas(s), args_t) is not None)
    wrong = [m for m in _metas(seed) if not runtimes or m.runtime in runtimes]
    wrong.sort(key=patch._TOP_KEY, reverse=True)  # subagents counted as top-level sessions
    with monkeypatch.context() as m:
        m.setenv("SEGUE_FAST_PATHS", "0")
        ref = patch._order(_metas(seed), args_t)
    assert ref is not None and [x.id for x in wrong] != [x.id for x in ref]


def test_a_shared_key_is_left_to_listing_groups() -> None:
    metas = _metas(3)
    metas.append(patch._Meta(metas[0].row()))
    assert patch._tops(metas, None) is None


@pytest.mark.parametrize("value", ["claude", "0f3a-11", 'q"uote', "back\\slash", "ünï", "tab\there", "\x7f", ""])
def test_the_head_of_a_kept_item_is_json_dumps_spelling(value: str) -> None:
    ref = json.dumps({"runtime": "claude", "id": value}, ensure_ascii=False)[:-1].encode() + b", "
    assert patch._head("claude", value, "utf-8", "strict") == ref
    assert patch._head("claude", value + "x", "utf-8", "strict") != ref  # (the control)


@pytest.mark.parametrize("runtime", ["claude", 'o"dd', "ünï"])
def test_a_kept_item_is_checked_in_pieces_as_whole(runtime: str) -> None:
    """_kept_item with the runtimes' heads kept across items (the prefix and the id compared apart) accepts and
    refuses exactly what it does comparing `_head` whole, on ids JSON writes plainly and ones it escapes; the
    negative control: the item of another id is refused both ways."""
    ids = ["0f3a-11", 'q"uote', "back\\slash", "ünï", "tab\there", "\x7f", "", "x" * 40]
    items = [json.dumps({"runtime": runtime, "id": sid, "subagent_count": 0}, ensure_ascii=False).encode()
             for sid in ids]
    body = b"[" + b",".join(items) + b"]"
    p = object.__new__(patch._Patch)
    p.old_body = body
    heads: dict[str, bytes] = {}
    start = 1
    for sid, item in zip(ids, items, strict=True):
        for shown in (sid, sid + "y"):
            m = patch._Meta((runtime, shown, None, 1.0, None, None, 0, (start, len(item)), "k"))
            outcomes = []
            for h in (None, heads):
                try:
                    outcomes.append(p._kept_item(m, "utf-8", "strict", h))
                except patch._Refused:
                    outcomes.append("refused")
            assert outcomes[0] == outcomes[1], (sid, shown)
            assert (outcomes[0] == "refused") == (shown != sid), (sid, shown)
        start += len(item) + 1
    assert set(heads) == ({runtime} if patch._plain(runtime) else set())


def test_kept_items_are_copied_only_from_their_own_slots() -> None:
    """_render of kept items (the in-place check of plain ids, `_kept_item` for the rest) gives back the body it
    was cut from, in order, with runs copied whole and a moved count put right; the negative controls: two
    sessions' slots swapped, or a slot off by one byte, are refused (a plain id and an escaped one alike)."""
    ids = ["a1", "b2", 'q"3', "c4", "ünï5", "d6"]
    items = [json.dumps({"runtime": "claude", "id": sid, "subagent_count": 0, "n": i}, ensure_ascii=False).encode()
             for i, sid in enumerate(ids)]
    body = b"[" + b",".join(items) + b"]\n"
    slots, at = [], 1
    for item in items:
        slots.append((at, len(item)))
        at += len(item) + 1

    def render(order_ids: list[int], slot_of: Any = None, count: dict[int, int] | None = None) -> bytes:
        p = object.__new__(patch._Patch)
        p.old_body, p.kind, p.rows = body, "bytes", None
        metas = []
        for i in order_ids:
            m = patch._Meta(("claude", ids[i], None, 1.0, None, None, 0, (slot_of or slots)[i], "k"))
            m.count = (count or {}).get(i, 0)
            metas.append(m)
        return b"".join(p._render(metas)[0])

    assert render(list(range(6))) == body
    assert render([5, 0, 1, 2]) == b"[" + b",".join([items[5], *items[:3]]) + b"]\n"
    assert render([0, 1], count={1: 3}) == b"[" + items[0] + b"," + items[1].replace(
        b'"subagent_count": 0', b'"subagent_count": 3') + b"]\n"
    for a, b in ((0, 1), (2, 3), (3, 4)):
        swapped = list(slots)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        with pytest.raises(patch._Refused):
            render(list(range(6)), swapped)
    for i in (1, 2, 4):
        off = list(slots)
        off[i] = (off[i][0] + 1, off[i][1])
        with pytest.raises(patch._Refused):
            render(list(range(6)), off)


def _probe_reference(old_groups: Any, scanned: list[str], rec: Any, home: str) -> bytes:
    """patch._Patch._probe as it was before kept groups were passed through as they are: every group to dicts
    and sorted again (the reference the quick merge must equal byte for byte)."""
    import marshal

    from segue import replay

    _d, names, groups = old_groups
    merged: dict[str, list[dict[Any, Any]]] = {}
    for g, *parts in groups:
        merged[g] = [dict(p) for p in parts]
    for g, sets in rec._groups.items():
        if g in scanned:
            merged[g] = [dict(d) for d in sets]
        elif any(sets):
            into = merged.setdefault(g, [{}, {}, {}, {}, {}])
            for d, part in zip(into, sets, strict=True):
                d.update(part)
    all_names = sorted(set(names) | rec.names)
    out = sorted((g, *(sorted(d.items()) for d in sets)) for g, sets in merged.items())
    return marshal.dumps((replay.env_digest(home, os.environ, all_names), all_names, out))


def test_the_probe_merge_is_the_plain_one(tmp_path: Path) -> None:
    """The patched entry's probe (kept groups passed through, the groups seen now merged or replaced) against
    the reference merge, on random recordings; the negative control: a merge that keeps a replaced runtime's
    old observations differs."""
    import marshal
    import random

    from segue import probe, replay

    files = [tmp_path / f"f{i}" for i in range(40)]
    for f in files:
        f.write_text("x")
    groups_all = ["", "claude", "codex", "claude/live", "opencode"]
    controls = 0
    for seed in range(30):
        rnd = random.Random(seed)

        def record(rnd: random.Random = rnd) -> Any:
            with probe.recording(paused=True) as rec:
                for g in rnd.sample(groups_all, rnd.randrange(1, 5)):
                    with probe.observe(g):
                        for f in rnd.sample(files, rnd.randrange(1, 12)):
                            os.stat(f)
                        if rnd.random() < 0.5:
                            os.listdir(tmp_path)
                        if rnd.random() < 0.3:
                            os.environ.get(f"SEGUE_T{rnd.randrange(3)}")
            return rec

        old = record()
        blob = old.dump_groups(str(tmp_path), os.environ)
        assert blob is not None
        old_groups = replay.groups_of(blob)
        for f in rnd.sample(files, 5):
            f.write_text("y" * rnd.randrange(1, 9))
        now = record()
        scanned = ["claude", "codex", "opencode"]
        p = object.__new__(patch._Patch)
        p.old_groups, p.scanned = old_groups, scanned
        got = p._probe(now, str(tmp_path))
        ref = _probe_reference(old_groups, scanned, now, str(tmp_path))
        assert got is not None and marshal.loads(got) == marshal.loads(ref), seed  # (marshal's ref flags differ)
        p.scanned = []  # the control: the runtimes read again merged into, not replaced
        wrong = p._probe(now, str(tmp_path))
        controls += wrong is not None and marshal.loads(wrong) != marshal.loads(ref)
    assert controls >= 10
