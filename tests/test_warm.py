"""The warm listing (segue.warm): a `segue list` whose stores and Segue-side inputs are unchanged is answered with
the full path's own output, byte for byte; every change the listing could show (a store file, a database row, a
directory, an environment variable, a token, a kept brief, a lineage event, a checkout's branch, Segue's code, the
clock passing a token's expiry, a live session) sends it back to the full path, whose output it then equals again.
On copies of the stores the real runtimes wrote."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from segue import cli, warm
from segue.paths import StateDir
from segue.tokens import Registry
from tests import store_changes
from tests.conftest import record_forks
from tests.store_changes import claude_transcript as _claude_transcript
from tests.store_changes import cline_session as _cline_session
from tests.store_changes import gemini_project_root as _gemini_project_root
from tests.store_changes import new_file_in_project as _new_file_in_project
from tests.store_changes import new_project as _new_project
from tests.store_changes import remove_rollout as _remove_rollout
from tests.test_cli_real import Stores
from tests.test_search import copy_stores, expected

ARGSETS = (["list", "--json"], ["list", "--json", "--all"], ["list", "--json", "--runtime", "claude"],
           ["list", "--json", "--runtime=codex", "--runtime", "opencode", "--all"], ["list", "--json", "--limit", "2"],
           ["list"], ["list", "--all", "--limit", "0"], ["list", "--limit=3"])


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stores copied under tmp_path, this process's environment pointing at them (as a shell's would), and
    SEGUE_HOME at a state directory of the test."""
    environ = copy_stores(tmp_path)
    for k in list(os.environ):
        if k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_", "XDG_", "SEGUE_", "GEMINI_")) or re.search(
                "KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL", k, re.I):
            monkeypatch.delenv(k)
    (tmp_path / "emptyhome").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "emptyhome"))
    monkeypatch.setenv("SEGUE_HOME", str(tmp_path / "segue"))
    for k, v in environ.items():
        monkeypatch.setenv(k, v)
    return tmp_path


Output = tuple[int, bytes, str]


def _captured(monkeypatch: pytest.MonkeyPatch, call: Callable[[], int | None]) -> tuple[int | None, bytes, str]:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", errors="strict", write_through=True)
    err = io.StringIO()
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "stderr", err)
        rc = call()
        out.flush()
    return rc, raw.getvalue(), err.getvalue()


def full(monkeypatch: pytest.MonkeyPatch, argv: list[str], keep: bool = True) -> Output:
    """The CLI's full path (keeping its output for next time unless `keep` is False: SEGUE_WARM=0)."""
    with monkeypatch.context() as m:
        if not keep:
            m.setenv("SEGUE_WARM", "0")
        rc, out, err = _captured(monkeypatch, lambda: cli.main(argv))
    assert rc is not None
    return rc, out, err


def quick(monkeypatch: pytest.MonkeyPatch, argv: list[str]) -> Output | None:
    rc, out, err = _captured(monkeypatch, lambda: warm.answer(argv))
    if rc is None:
        assert not out and not err  # a refused quick answer printed nothing
        return None
    return rc, out, err


def test_an_unchanged_listing_is_answered_byte_for_byte_for_every_argument_set(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for argv in ARGSETS:
        assert quick(monkeypatch, argv) is None  # nothing kept yet
        ref = full(monkeypatch, argv, keep=False)
        assert quick(monkeypatch, argv) is None  # SEGUE_WARM=0 keeps nothing
        assert full(monkeypatch, argv) == ref
        got = quick(monkeypatch, argv)
        assert got == ref, argv
    listed = json.loads(full(monkeypatch, ["list", "--json", "--all"], keep=False)[1])
    assert len(listed) >= 10 and {s["runtime"] for s in listed} >= {"claude", "codex", "opencode", "cline"}
    other = ["list", "--json", "--runtime", "cline"]  # never listed this way: nothing to answer with
    assert quick(monkeypatch, other) is None


def test_it_can_be_switched_off_and_answers_only_plain_list_arguments(
        root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["list", "--json"]
    full(monkeypatch, argv)
    assert quick(monkeypatch, argv) is not None
    monkeypatch.setenv("SEGUE_WARM", "0")
    assert quick(monkeypatch, argv) is None
    monkeypatch.delenv("SEGUE_WARM")
    for odd in (["list", "--js"], ["list", "--json", "-h"], ["brief", "x"], ["list", "--json", "--bogus"]):
        assert warm.split(odd) is None, odd
    assert warm.split(["--home", "/x", "list", "--json"]) == ("/x", ["list", "--json"])
    assert warm.state_root(None) == str(StateDir.resolve(None).root)
    assert warm.state_root("a/./b//c/") == str(StateDir.resolve("a/./b//c/").root)


# -- every kind of change ---------------------------------------------------------------------------------------


def _opencode_row(root: Path) -> None:
    store_changes.rename_opencode_sessions(root, bump_time=True)


def _grow(root: Path) -> None:
    p = _claude_transcript(root)
    recs = [json.loads(ln) for ln in p.read_text().splitlines() if ln.strip()]
    user = next(r for r in recs if r.get("type") == "user" and isinstance(r["message"].get("content"), str))
    user = {**user, "uuid": "00000000-0000-4000-8000-0000000000aa", "timestamp": "2030-01-01T00:00:00.000Z"}
    user["message"] = {**user["message"], "content": "and now the warm listing must show this"}
    with open(p, "a") as f:
        f.write(json.dumps(user, separators=(",", ":")) + "\n")


def _touch(root: Path) -> None:
    p = _claude_transcript(root)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 5_000_000_000))


def _relocate_codex(root: Path) -> None:
    home = os.environ["CODEX_HOME"]
    shutil.copytree(home, home + "-moved", symlinks=True)
    next(Path(home + "-moved").rglob("rollout-*.jsonl")).unlink()
    os.environ["CODEX_HOME"] = home + "-moved"  # restored by the test's monkeypatch


def _new_variable(root: Path) -> None:
    os.environ["XDG_DATA_HOME"] = str(root / "elsewhere")  # restored by the test's monkeypatch


def _token(root: Path) -> None:
    listed = json.loads(subprocess_free_list(root))
    s = listed[0]
    Registry(StateDir(root / "segue")).emit(runtime=s["runtime"], session_id=s["id"], surface="terminal",
                                            cwd=s["cwd"], title=s["title"], brief_path=str(root / "b.md"))


def _kept_brief(root: Path) -> None:
    from segue.kept import keep
    from segue.model import Session

    gone = Session(runtime="claude", id="00000000-0000-4000-8000-0000000000ee", store_path="/nowhere.jsonl",
                   title="a session that left its store", cwd="/tmp", started_at=1.0e9, updated_at=1.0e9)
    keep(StateDir(root / "segue"), gone, {}, 1.5e9)


def _lineage_events_gone(root: Path) -> None:
    (root / "segue" / "events.jsonl").unlink(missing_ok=True)
    (root / "segue" / "events.jsonl").write_text("")


def _code(root: Path) -> None:
    p = Path(warm.__file__)
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1))  # Segue itself changed (restored by the test)


def _cwd(root: Path) -> None:
    os.chdir(root)


def subprocess_free_list(root: Path) -> str:
    from segue.service import Service

    svc = Service(StateDir(root / "segue"))
    return json.dumps(svc.list_sessions()["sessions"])


CHANGES = [_grow, _touch, _new_file_in_project, _new_project, _remove_rollout, _opencode_row, _cline_session,
           _gemini_project_root, _relocate_codex, _new_variable, _token, _kept_brief, _lineage_events_gone, _code,
           _cwd]


@pytest.fixture(params=["one-process", "two-processes"])
def replayed_in(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The probe's stats replayed here alone (SEGUE_ALONGSIDE=0), or half of each group's by a forked child
    (segue.alongside, from the first stat). Returns [the mode (True: two), then whether each child started]."""
    from segue import replay

    started = record_forks(monkeypatch)
    started.insert(0, request.param == "two-processes")  # (the spy appends after it)
    if started[0]:
        monkeypatch.setattr(replay, "SPLIT_MIN", 0)
    else:
        monkeypatch.setenv("SEGUE_ALONGSIDE", "0")
    return started


@pytest.mark.parametrize("patching", [False, True], ids=["patch-off", "patch-on"])
@pytest.mark.parametrize("change", CHANGES, ids=[c.__name__.strip("_") for c in CHANGES])
def test_after_any_change_the_answer_is_the_full_path_s(root: Path, monkeypatch: pytest.MonkeyPatch,
                                                        change: Callable[[Path], None], patching: bool,
                                                        replayed_in: list[bool]) -> None:
    """With the patch path off (SEGUE_WARM_PATCH=0) a change is never answered from the kept output; with it on
    (segue.patch, tests/test_warm_patch.py) an answer may come, and is then the full path's byte for byte.
    Whether the probe is replayed in one process or two."""
    if not patching:
        monkeypatch.setenv("SEGUE_WARM_PATCH", "0")
    code = Path(warm.__file__).stat()
    monkeypatch.chdir(root / "emptyhome")
    for k in ("CODEX_HOME", "XDG_DATA_HOME"):  # noted, so a change's own setting is undone
        if k in os.environ:
            monkeypatch.setenv(k, os.environ[k])
        else:
            monkeypatch.delenv(k, raising=False)
    argsets = (["list", "--json", "--all"], ["list"], ["list", "--json", "--dir", "."])
    for argv in argsets:
        full(monkeypatch, argv)
        assert quick(monkeypatch, argv) is not None, argv  # the control: unchanged, answered
    try:
        change(root)
        for argv in argsets:
            ref = full(monkeypatch, argv, keep=False)
            got = quick(monkeypatch, argv)
            assert got is None or got == ref, argv  # never a stale answer
            if not patching and (change is not _cwd or argv[-1] == "."):
                assert got is None, argv  # (a listing that looks the same may answer; these all differ)
            assert full(monkeypatch, argv) == ref
            assert quick(monkeypatch, argv) == ref, argv  # kept again, answered again
    finally:
        os.utime(warm.__file__, ns=(code.st_atime_ns, code.st_mtime_ns))
    children = replayed_in[1:]
    assert children and all(children) if replayed_in[0] else not any(children)


def test_a_checkout_s_branch_is_re_checked(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """OpenCode stores no branch: the listing reads the session's checkout, so the answer depends on .git/HEAD."""
    repo = root / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/first\n")
    db = next((root / "opencode").rglob("opencode*.db"))
    con = sqlite3.connect(db)
    con.execute("UPDATE session SET directory = ?", (str(repo),))
    con.commit()
    con.close()
    argv = ["list", "--json", "--runtime", "opencode"]
    before = full(monkeypatch, argv)
    assert b'"branch": "first"' in before[1]
    assert quick(monkeypatch, argv) == before
    (repo / ".git" / "HEAD").write_text("ref: refs/heads/other\n")
    ref = full(monkeypatch, argv, keep=False)
    assert b'"branch": "other"' in ref[1]
    assert quick(monkeypatch, argv) is None
    assert full(monkeypatch, argv) == ref and quick(monkeypatch, argv) == ref


def test_a_directory_filter_follows_its_symlinks(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--dir` compares resolved paths: a symlink changing its target changes the listing, and the answer."""
    listed = json.loads(full(monkeypatch, ["list", "--json"], keep=False)[1])
    cwd = Path(next(s["cwd"] for s in listed if s["cwd"]))
    (root / "elsewhere").mkdir()
    link = root / "link"
    link.symlink_to(cwd)
    argv = ["list", "--json", "--dir", str(link)]
    before = full(monkeypatch, argv)
    assert json.loads(before[1]) and quick(monkeypatch, argv) == before
    link.unlink()
    link.symlink_to(root / "elsewhere")
    ref = full(monkeypatch, argv, keep=False)
    assert json.loads(ref[1]) == []
    assert quick(monkeypatch, argv) is None
    assert full(monkeypatch, argv) == ref and quick(monkeypatch, argv) == ref


def test_the_clock_passing_a_token_s_expiry_ends_the_answer(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _token(root)
    argv = ["list", "--json"]
    before = full(monkeypatch, argv)
    assert b'"handed_off": {' in before[1]
    assert quick(monkeypatch, argv) == before
    later = warm.time.time() + 3600
    monkeypatch.setattr(warm.time, "time", lambda: later)
    assert quick(monkeypatch, argv) is None


def test_a_live_session_is_never_answered_warm(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    exp = next(s for s in expected()["claude"] if s["scenario"] == "one")
    claude_root = Path(os.environ["CLAUDE_CONFIG_DIR"])
    (claude_root / "sessions").mkdir(exist_ok=True)
    (claude_root / "sessions" / f"{os.getpid()}.json").write_text(json.dumps({"pid": os.getpid(),
                                                                             "sessionId": exp["id"]}))
    argv = ["list", "--json"]
    out = full(monkeypatch, argv)
    assert b'"live": true' in out[1]
    assert quick(monkeypatch, argv) is None  # liveness is a process Segue cannot re-check without the reader
    (claude_root / "sessions" / f"{os.getpid()}.json").unlink()
    assert quick(monkeypatch, argv) is None


def test_the_entry_point_answers_without_importing_the_cli_or_a_reader(tmp_path: Path) -> None:
    stores = Stores(tmp_path)
    env = {**stores.env}
    env.pop("SEGUE_WARM", None)
    code = ("import sys; from segue.entry import main; rc = main(sys.argv[1:]); sys.stdout.flush(); "
            "print(sorted(m for m in sys.modules if m.startswith('segue')), file=sys.stderr); raise SystemExit(rc)")

    def run() -> subprocess.CompletedProcess[bytes]:
        return subprocess.run([sys.executable, "-c", code, "list", "--json"], env=env, capture_output=True,
                              timeout=120)

    first, second = run(), run()
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout and json.loads(first.stdout)
    assert "segue.cli" in first.stderr.decode()
    mods = second.stderr.decode().strip().splitlines()[-1]
    assert "segue.cli" not in mods and "segue.service" not in mods and "segue.stores" not in mods, mods
    off = subprocess.run([sys.executable, "-c", code, "list", "--json"], env={**env, "SEGUE_WARM": "0"},
                         capture_output=True, timeout=120)
    assert off.stdout == first.stdout and "segue.cli" in off.stderr.decode()


def test_a_recording_paused_observes_only_inside_observe(tmp_path: Path) -> None:
    from segue import probe

    (tmp_path / "seen").write_text("x")
    (tmp_path / "unseen").write_text("x" * (probe.READ_MAX + 10))
    with probe.recording(paused=True) as rec:
        with open(tmp_path / "unseen") as f:  # a summary's read while paused: neither noted nor spoiling
            f.read()
        os.stat(tmp_path / "unseen")
        with probe.observe():
            os.stat(tmp_path / "seen")
        assert probe.active()
    assert not probe.active()
    assert (str(tmp_path / "seen"), True) in rec.stats and (str(tmp_path / "unseen"), True) not in rec.stats
    blob = rec.dump("/home", {})
    assert blob is not None and probe.unchanged(blob, "/home", {})
    (tmp_path / "seen").write_text("xy")
    assert not probe.unchanged(blob, "/home", {})
    with probe.observe():  # no recording: a no-op
        os.stat(tmp_path / "seen")


def test_a_broken_pipe_keeps_nothing_and_leaves_no_file(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Closed(io.BytesIO):
        def write(self, b: Any) -> int:
            if self.tell() > 10:
                raise BrokenPipeError()
            return super().write(b)

    argv = ["list", "--json"]
    out = io.TextIOWrapper(Closed(), encoding="utf-8", write_through=True)
    with monkeypatch.context() as m:
        m.setattr(sys, "stdout", out)
        m.setattr(sys, "stderr", io.StringIO())
        assert cli.main(argv) == 0  # a reader that went away is no failure
    warm_dir = root / "segue" / "cache" / "warm"
    assert not [p for p in warm_dir.iterdir() if p.name.endswith(".tmp")]
    assert quick(monkeypatch, argv) is None  # a cut output is never kept
    ref = full(monkeypatch, argv)
    assert quick(monkeypatch, argv) == ref


@pytest.mark.parametrize("damage", ["truncated", "garbage", "empty", "trailer"])
def test_a_damaged_entry_is_never_trusted_and_the_full_path_answers(
        root: Path, monkeypatch: pytest.MonkeyPatch, damage: str) -> None:
    argv = ["list", "--json"]
    ref = full(monkeypatch, argv)
    assert quick(monkeypatch, argv) == ref  # the control: the kept entry answers
    entries = list((root / "segue" / "cache" / warm.SUBDIR).iterdir())
    assert len(entries) == 1
    data = entries[0].read_bytes()
    entries[0].write_bytes({"truncated": data[: len(data) // 2], "garbage": bytes(range(256)) * 4, "empty": b"",
                            "trailer": data[:-8] + (len(data)).to_bytes(8, "little")}[damage])
    assert quick(monkeypatch, argv) is None  # refused, printing nothing
    assert full(monkeypatch, argv) == ref  # and the full path answers as before, keeping a good entry again
    assert quick(monkeypatch, argv) == ref


def test_a_replay_in_two_processes_finds_every_changed_group(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """replay.changed_in with half of each group's stats replayed by a forked child: the same changed groups as
    one process finds, for a change in any position of any group (the child's half included)."""
    import random

    from segue import probe, replay

    files = [tmp_path / f"f{i:02}" for i in range(30)]
    for f in files:
        f.write_text("x")
    groups = {"claude": files[:12], "codex": files[12:13], "gemini": files[13:]}
    with probe.recording(paused=True) as rec:
        for g, fs in groups.items():
            with probe.observe(g):
                for f in fs:
                    os.stat(f)
    blob = rec.dump_groups(str(tmp_path), os.environ)
    assert blob is not None
    found = replay.groups_of(blob)

    def changed(split: bool, stop: bool = False) -> set[str] | None:
        with monkeypatch.context() as m:
            m.setattr(replay, "SPLIT_MIN", 0 if split else 10**9)
            return replay.changed_in(found, str(tmp_path), os.environ, stop=stop)

    assert changed(True) == changed(False) == set()  # the control
    rnd = random.Random(7)
    for f in files[::3] + files[-1:] + rnd.sample(files, 3):
        before = f.stat()
        f.write_text("xy")
        want = {g for g, fs in groups.items() if f in fs}
        assert changed(False) == want
        assert changed(True) == want, f.name  # whichever process replays its stat
        assert changed(True, stop=True) == want
        f.write_text("x")
        os.utime(f, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert changed(True) == set()
