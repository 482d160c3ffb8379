"""The patch path's shortcut for discovery (Patch._refound, Reader.refingerprint, replay.moved_files): a changed
runtime whose probe group shows only regular files that grew or moved in place is not discovered again; its
reader names the sources those files fingerprint. Every patched listing must be byte for byte the full path's
(SEGUE_WARM=0), the shortcut must be taken where it is meant to and refused on every other change (new, removed,
renamed or replaced files, directories, a title index appearing), and SEGUE_WARM_REFOUND=0 switches it off."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from segue import patch, replay
from segue.listing import reader_for
from segue.stores.base import Env
from tests import store_changes
from tests.test_warm import full, quick
from tests.test_warm import root as root  # the fixture, shared
from tests.test_warm_patch import (
    ARGSETS,
    codex_append,
    kept_all,
    new_claude_session,
    new_subagent,
    opencode_child,
    reference,
    subagent_gone,
)
from tests.test_warm_patch import spy as spy  # the fixture, shared


@pytest.fixture
def refound(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, bool]]]:
    """(runtime, whether the shortcut answered) of each runtime a patch read again."""
    calls: list[tuple[str, bool]] = []
    real = patch._Patch._refound

    def spy_refound(self: Any, runtime: str, *a: Any) -> Any:
        got = real(self, runtime, *a)
        calls.append((runtime, got is not None))
        return got

    monkeypatch.setattr(patch._Patch, "_refound", spy_refound)
    yield calls


def _subagent(root: Path) -> Path:
    return next((root / "claude").rglob("agent-*.jsonl"))


def subagent_append(root: Path) -> None:
    p = _subagent(root)
    recs = [json.loads(ln) for ln in p.read_text().splitlines()]
    last = dict(recs[-1])
    last["uuid"] = "00000000-0000-4000-8000-0000000000a1"
    with open(p, "a") as f:
        f.write(json.dumps(last, separators=(",", ":")) + "\n")


def claude_later(root: Path) -> None:
    """A turn appended a day later (the listing's update time moves)."""
    p = store_changes.append_claude_reply(root, "a day later")
    lines = p.read_text().splitlines()
    last = json.loads(lines[-1])
    last["timestamp"] = "2033-05-18T03:33:20.000Z"
    p.write_text("\n".join([*lines[:-1], json.dumps(last, separators=(",", ":"))]) + "\n")


def subagent_meta(root: Path) -> None:
    meta = _subagent(root).with_name(_subagent(root).stem + ".meta.json")
    data = json.loads(meta.read_text())
    data["description"] = "described again"
    meta.write_text(json.dumps(data))


def claude_and_codex(root: Path) -> None:
    store_changes.append_claude_reply(root, "both at once")
    codex_append(root)


def claude_replaced(root: Path) -> None:
    """The transcript rewritten through a new file renamed over it (another inode; the directory changes)."""
    p = store_changes.append_claude_reply(root, "replaced")
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_bytes(p.read_bytes())
    os.replace(tmp, p)


def claude_dir_renamed(root: Path) -> None:
    p = store_changes.claude_transcript(root)
    p.parent.rename(p.parent.with_name(p.parent.name + "-renamed"))


def codex_title_index(root: Path) -> None:
    """A title index appearing (what every Codex source's fingerprint holds) with a rollout grown."""
    codex_append(root)
    (root / "codex" / "home" / ".codex" / "session_index.jsonl").write_text("")


def gemini_append(root: Path) -> None:
    """A main session file and a subagent's grow by a copy of their last record."""
    chats = sorted((root / "gemini").rglob("chats"))
    files = [f for c in chats for f in sorted(c.rglob("*.jsonl"))]
    for f in (files[0], next(f for f in files if f.parent.name != "chats")):
        lines = f.read_text().splitlines()
        with open(f, "a") as w:
            w.write(lines[-1] + "\n")


def opencode_wal_appears(root: Path) -> None:
    """Rows move and a -wal appears beside the database (an empty one: what SQLite reads as no frames)."""
    store_changes.rename_opencode_sessions(root, bump_time=True)
    db = next((root / "opencode").rglob("opencode*.db"))
    Path(str(db) + "-wal").write_bytes(b"")


TAKEN: list[Callable[[Path], None]] = [
    lambda r: store_changes.append_claude_reply(r, "grown in place"), claude_later, subagent_append,
    subagent_meta, codex_append, claude_and_codex, gemini_append]
TAKEN_IDS = ["claude_append", "claude_later", "subagent_append", "subagent_meta", "codex_append", "claude_and_codex",
             "gemini_append"]
REFUSED: list[Callable[[Path], None]] = [
    new_claude_session, new_subagent, subagent_gone, store_changes.remove_rollout, store_changes.new_project,
    claude_replaced, claude_dir_renamed, codex_title_index, opencode_wal_appears, store_changes.cline_session,
    store_changes.gemini_project_root, lambda r: store_changes.rename_opencode_sessions(r, bump_time=True),
    opencode_child]
REFUSED_IDS = ["claude_new", "new_subagent", "subagent_gone", "removed_rollout", "new_project", "replaced",
               "dir_renamed", "codex_title_index", "opencode_wal", "cline_dir", "gemini_project_root",
               "opencode_rows_journal", "opencode_child_journal"]  # (a rollback journal came and went: the folder)


def _check(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None], refound: list[tuple[str, bool]],
           taken: bool) -> None:
    runs = 0
    for argv in ARGSETS:
        spy.clear()
        refound.clear()
        got = quick(monkeypatch, argv)
        ref = reference(root, monkeypatch, argv)
        assert got is not None and spy in ([0], []), (argv, spy)
        assert got == ref, argv
        assert all(t is taken for _r, t in refound), (argv, refound)
        runs += len(refound)
        spy.clear()
        assert quick(monkeypatch, argv) == ref and spy == [], argv  # the new entry answers warm as it is
    assert runs  # (some patch read a changed runtime again)


@pytest.mark.parametrize("change", TAKEN, ids=TAKEN_IDS)
def test_files_grown_in_place_are_not_discovered_again(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                       spy: list[int | None], refound: list[tuple[str, bool]],
                                                       change: Callable[[Path], None]) -> None:
    kept_all(monkeypatch)
    change(root)
    _check(root, monkeypatch, spy, refound, taken=True)


@pytest.mark.parametrize("change", REFUSED, ids=REFUSED_IDS)
def test_any_other_change_is_discovered_again(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None],
                                              refound: list[tuple[str, bool]], change: Callable[[Path], None]
                                              ) -> None:
    kept_all(monkeypatch)
    change(root)
    _check(root, monkeypatch, spy, refound, taken=False)


def test_a_growing_wal_is_not_discovered_again(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None],
                                              refound: list[tuple[str, bool]]) -> None:
    """OpenCode running: its database in WAL mode, the -wal there all along and written to (the folder as it was)."""
    import sqlite3

    db = next((root / "opencode").rglob("opencode*.db"))
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("UPDATE session SET title = title || ' (1)'")
        con.commit()
        kept_all(monkeypatch)
        con.execute("UPDATE session SET title = title || ' (2)', time_updated = time_updated + 1000")
        con.commit()
        _check(root, monkeypatch, spy, refound, taken=True)
        con.execute("UPDATE session SET title = title || ' (3)'")
        con.commit()
        _check(root, monkeypatch, spy, refound, taken=True)
    finally:
        con.close()


def test_the_new_probe_notices_the_next_change(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None],
                                               refound: list[tuple[str, bool]]) -> None:
    """After a shortcut the probe holds the files' new stats: a second growth, a new file, a second growth again."""
    kept_all(monkeypatch)
    for change, taken in ((lambda r: store_changes.append_claude_reply(r, "first"), True),
                          (lambda r: store_changes.append_claude_reply(r, "second"), True),
                          (new_claude_session, False), (subagent_append, True), (codex_append, True)):
        change(root)
        _check(root, monkeypatch, spy, refound, taken)


def test_the_switch_turns_it_off(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None],
                                 refound: list[tuple[str, bool]]) -> None:
    monkeypatch.setenv("SEGUE_WARM_REFOUND", "0")
    kept_all(monkeypatch)
    store_changes.append_claude_reply(root, "switched off")
    _check(root, monkeypatch, spy, refound, taken=False)


@pytest.mark.parametrize("runtime,change", [("claude", claude_later)])  # (codex_append leaves the listing as it is)
def test_a_wrong_hook_is_caught(root: Path, monkeypatch: pytest.MonkeyPatch, spy: list[int | None], runtime: str,
                                change: Callable[[Path], None]) -> None:
    """The control: a hook that names no moved source keeps the old summary, and the comparison sees it."""
    kept_all(monkeypatch)
    change(root)
    monkeypatch.setattr(type(reader_for(runtime, Env.from_os())), "refingerprint",
                        lambda self, moved, known: [os.stat(p) for p in moved] and [])
    got = quick(monkeypatch, ["list", "--json"])
    assert spy == [0] and got is not None
    assert got != reference(root, monkeypatch, ["list", "--json"])


def test_a_hook_that_leaves_a_moved_file_unwatched_is_refused(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                              spy: list[int | None]) -> None:
    """A moved file the hook did not stat would be missing from the new probe: the full path answers."""
    from segue.stores.claude.discovery import Discovery

    kept_all(monkeypatch)
    claude_later(root)
    monkeypatch.setattr(Discovery, "refingerprint", lambda self, moved, known: [])
    got = quick(monkeypatch, ["list", "--json"])
    assert spy == [None] and got is None
    assert full(monkeypatch, ["list", "--json"]) == reference(root, monkeypatch, ["list", "--json"])


# -- the hook and the replay, against discovery ------------------------------------------------------------------

def _discovered(runtime: str) -> dict[str, Any]:
    return {s.path: s for s in reader_for(runtime, Env.from_os()).sources()}


@pytest.mark.parametrize("runtime,change", [("claude", lambda r: store_changes.append_claude_reply(r, "x")),
                                            ("claude", subagent_append), ("claude", subagent_meta),
                                            ("claude", claude_and_codex), ("codex", codex_append),
                                            ("codex", claude_and_codex), ("gemini", gemini_append)])
def test_refingerprint_is_what_discovery_finds(root: Path, runtime: str, change: Callable[[Path], None]) -> None:
    from segue import probe

    with probe.recording() as rec:
        before = _discovered(runtime)
    parts = [sorted(d.items()) for d in rec.merged()]  # type: ignore[union-attr]
    change(root)
    moved = replay.moved_files(parts)
    assert moved
    got = reader_for(runtime, Env.from_os()).refingerprint(moved, set(before))
    now = _discovered(runtime)
    assert set(now) == set(before)
    assert got is not None and {s.path: s for s in got} == {p: s for p, s in now.items() if s != before[p]}


def test_moved_files_is_only_growth_in_place(tmp_path: Path) -> None:
    from segue import probe

    d = tmp_path / "d"
    d.mkdir()
    (d / "a").write_text("a")
    (d / "b").write_text("b")

    def observed() -> Any:
        with probe.recording() as rec:
            for e in os.scandir(d):
                os.stat(e.path)
            os.path.exists(d / "c")
        return [sorted(x.items()) for x in rec.merged()]  # type: ignore[union-attr]

    parts = observed()
    assert replay.moved_files(parts) == set()
    with open(d / "a", "a") as f:
        f.write("more")
    assert replay.moved_files(parts) == {str(d / "a")}
    for undo in ((lambda: (d / "c").write_text("c")), (lambda: os.chmod(d / "b", 0o600)),
                 (lambda: os.replace(d / "b", d / "a"))):
        parts = observed()
        undo()
        assert replay.moved_files(parts) is None


def test_the_full_path_is_untouched(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """(No shortcut outside a patch: a full listing after a growth is the reference's.)"""
    kept_all(monkeypatch, (["list", "--json"],))
    store_changes.append_claude_reply(root, "full")
    monkeypatch.setenv("SEGUE_WARM", "0")
    assert full(monkeypatch, ["list", "--json"]) == reference(root, monkeypatch, ["list", "--json"])


@pytest.mark.parametrize("runtime", ["opencode", "cline"])
def test_refingerprint_of_a_growing_wal_is_what_discovery_finds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                runtime: str) -> None:
    """A database in WAL mode, held open by its writer (the -wal there all along): each commit moves the -wal in
    place, and the hook's source is discovery's (Cline's first database fingerprints its sessions folder too)."""
    import shutil
    import sqlite3

    from segue import probe

    fixtures = Path(__file__).parent / "fixtures" / "real"
    home = tmp_path / "home"
    shutil.copytree(fixtures / runtime / "live-capture" / "home", home)
    for k in list(os.environ):
        if k.startswith(("CLINE_", "OPENCODE_", "XDG_")):
            monkeypatch.delenv(k)
    monkeypatch.setenv("HOME", str(home))
    db = next(p for p in home.rglob("*.db") if p.name in ("opencode.db", "sessions.db"))
    table = "session" if runtime == "opencode" else "sessions"
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute(f"CREATE TABLE IF NOT EXISTS segue_test_{table} (n INTEGER)")
        con.commit()
        for n in range(3):
            with probe.recording() as rec:
                before = _discovered(runtime)
            parts = [sorted(d.items()) for d in rec.merged()]  # type: ignore[union-attr]
            con.execute(f"INSERT INTO segue_test_{table} VALUES (?)", (n,))
            con.commit()
            moved = replay.moved_files(parts)
            assert moved and str(db) + "-wal" in moved
            got = reader_for(runtime, Env.from_os()).refingerprint(moved, set(before))
            now = _discovered(runtime)
            assert set(now) == set(before)
            changed = {p: s for p, s in now.items() if s != before[p]}
            assert changed and got is not None and {s.path: s for s in got} == changed
    finally:
        con.close()
    # the control: with the writer gone, SQLite folds the -wal in and removes it (the folder changes)
    assert replay.moved_files(parts) is None
