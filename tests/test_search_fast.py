"""The CLI's quick answer (segue.search.fast): a fresh index answers without the service or a reader, every change
discovery could see sends the query back to the full path, and the snippets are the same either way (a secret
only the querying process knows is still redacted). On copies of the stores the real runtimes wrote."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from segue import alongside
from segue.paths import StateDir
from segue.search import engine, fast, probe
from segue.service import Service
from tests import store_changes
from tests.conftest import record_forks
from tests.store_changes import claude_transcript as _claude_transcript
from tests.store_changes import cline_session as _cline_session
from tests.store_changes import gemini_project_root as _gemini_project_root
from tests.store_changes import new_file_in_project as _new_file_in_project
from tests.store_changes import new_project as _new_project
from tests.store_changes import remove_rollout as _remove_rollout
from tests.test_cli_real import Stores
from tests.test_search import copy_stores

QUERIES = ("files", '"run the tests"', "hello", "exit", "migration", "codex", "nonexistent-word-q")


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Stores copied under tmp_path, and this process's environment pointing at them, as a shell's would."""
    environ = copy_stores(tmp_path)
    for k in list(os.environ):
        if k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_", "XDG_", "SEGUE_")) or re.search(
                "KEY|SECRET|TOKEN|PASSWORD|PASSWD|CREDENTIAL", k, re.I):
            monkeypatch.delenv(k)
    (tmp_path / "emptyhome").mkdir()
    monkeypatch.setenv("HOME", str(tmp_path / "emptyhome"))
    for k, v in environ.items():
        monkeypatch.setenv(k, v)
    return tmp_path


@pytest.fixture(params=["serial", "half", "all"])
def mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """The quick path with its whole freshness check here before the query (serial), or with a forked child
    replaying half of the probe's stats (half) or all of them (all) beside it (segue.alongside). Returns
    [the mode (True: a child), then whether each quick answer's child started]."""
    forked = record_forks(monkeypatch)
    if request.param == "serial":
        monkeypatch.setenv("SEGUE_ALONGSIDE", "0")
    else:
        share = probe.CHUNKS // 2 if request.param == "half" else probe.CHUNKS
        monkeypatch.setattr(fast, "_child_share", lambda paths, ms: share)
    forked.insert(0, request.param != "serial")  # (the spy appends after it)
    return forked


def _forked_as_asked(forked: list[bool]) -> None:
    if forked[0]:
        assert len(forked) > 1 and all(forked[1:]), "no child replayed the stats"
    else:
        assert not any(forked[1:])


def cli_service(root: Path) -> Service:
    return Service(StateDir(root / "segue"))  # as the CLI builds it: Env and redaction from os.environ


def quick(root: Path, text: str, **kw: Any) -> Any:
    return fast.try_answer(root / "segue", text, **kw)


def shown(res: Any) -> list[dict[str, Any]]:
    return [r.to_json() for r in res.results]


def test_a_fresh_index_answers_without_a_reader_and_gives_the_service_s_results(
        root: Path, monkeypatch: pytest.MonkeyPatch, mode: list[bool]) -> None:
    assert quick(root, "files") is None  # no index yet
    svc = cli_service(root)
    assert svc.search("files").refreshed is not None
    slow = {q: svc.search(q, limit=50) for q in QUERIES}
    assert any(r.total for r in slow.values())
    filters = ({"runtimes": ["claude"]}, {"where": ["commands"]}, {"limit": 1}, {"since": 0.0})
    slow_filtered = [svc.search("files", **kw) for kw in filters]

    def boom(*a: Any, **k: Any) -> Any:
        raise AssertionError("the quick path asked a reader or built a Redactor")

    monkeypatch.setattr(engine, "_sources", boom)
    monkeypatch.setattr(fast, "_redactor", boom)  # same environment as the build: redacted once is enough
    for q in QUERIES:
        res = quick(root, q, limit=50)
        assert res is not None, q
        assert shown(res) == shown(slow[q]) and res.total == slow[q].total, q
    for kw, want in zip(filters, slow_filtered, strict=True):
        assert shown(quick(root, "files", **kw)) == shown(want), kw
    # a runtime the index holds no session of is the registry's to judge: the full path answers
    assert quick(root, "files", runtimes=["vim"]) is None
    assert quick(root, "files", runtimes=["claude", "vim"]) is None
    _forked_as_asked(mode)


def _opencode_row(root: Path) -> None:
    store_changes.rename_opencode_sessions(root)


def _grow(root: Path) -> None:
    with open(_claude_transcript(root), "a") as f:
        f.write("\n")


def _touch_codex_dir(root: Path) -> None:
    d = next((root / "codex").rglob("rollout-*.jsonl")).parent
    os.utime(d, ns=(0, 1_000_000_000))


def _relocate_codex(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = os.environ["CODEX_HOME"]
    shutil.copytree(home, home + "-moved", symlinks=True)
    monkeypatch.setenv("CODEX_HOME", home + "-moved")


def _new_variable(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(root / "elsewhere"))


@pytest.mark.parametrize("change", [_grow, _new_file_in_project, _new_project, _remove_rollout, _touch_codex_dir,
                                    _opencode_row, _cline_session, _gemini_project_root, _relocate_codex,
                                    _new_variable])
def test_any_change_discovery_could_see_sends_the_query_to_the_service(
        root: Path, monkeypatch: pytest.MonkeyPatch, change: Any, mode: list[bool]) -> None:
    svc = cli_service(root)
    svc.search("files")
    assert quick(root, "files") is not None  # the control: unchanged stores answer quickly
    if change in (_relocate_codex, _new_variable):
        change(root, monkeypatch)
    else:
        change(root)
    assert quick(root, "files") is None
    cli_service(root).search("files")  # the full path catches up and records what it saw now
    assert quick(root, "files") is not None
    _forked_as_asked(mode)


def test_a_grown_transcript_s_new_words_are_found_by_the_next_cli_query(tmp_path: Path) -> None:
    stores = Stores(tmp_path)

    def search(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "segue", "search", *args, "--json"], env=stores.env,
                              capture_output=True, text=True, timeout=120)

    assert search("zebrafish").returncode == 1  # builds the index
    assert search("zebrafish").returncode == 1  # the quick path: nothing changed
    exp = next(s for s in stores.expected["claude"]["sessions"] if s["scenario"] == "one")
    store_changes.append_claude_reply(tmp_path, "Now the zebrafish can count.")
    p = search("zebrafish")
    assert p.returncode == 0, p.stderr
    assert [(r["runtime"], r["id"]) for r in json.loads(p.stdout)["results"]] == [("claude", exp["id"])]


def test_a_secret_only_the_querying_process_knows_is_redacted(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_service(root).search("files")
    res = quick(root, "files", limit=50)
    assert res is not None and res.results
    words = sorted({w for r in res.results for w in re.findall(r"[A-Za-z][A-Za-z0-9]{7,}", r.snippet)})
    assert words, "no long word in the snippets to stand in for a secret"
    secret = words[0]
    monkeypatch.setenv("DEPLOY_TOKEN", secret)  # now an exact secret of this process, unknown to the build
    res = quick(root, "files", limit=50)
    assert res is not None and res.results
    text = json.dumps([r.to_json() for r in res.results])
    assert secret not in text and "[REDACTED" in text


def test_the_quick_paths_can_be_switched_off(root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cli_service(root).search("files")
    built: list[int] = []
    real = fast._redactor
    monkeypatch.setattr(fast, "_redactor", lambda: built.append(1) or real())
    monkeypatch.setenv("SEGUE_SEARCH_REDACT_ONCE", "0")
    assert quick(root, "files") is not None and built  # redacted again, as before
    monkeypatch.setenv("SEGUE_SEARCH_PROBE", "0")
    assert quick(root, "files") is None


def test_a_recording_counts_only_what_it_can_replay(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    with probe.recording() as rec:
        os.listdir(tmp_path / "d")
        Path(tmp_path / "d" / "f").stat()
        os.path.realpath(tmp_path / "d")
    blob = rec.dump("/home", {})
    assert blob is not None and probe.unchanged(blob, "/home", {})
    assert not probe.unchanged(blob, "/elsewhere", {})
    (tmp_path / "d" / "f").write_text("xy")
    assert not probe.unchanged(blob, "/home", {})
    with probe.recording() as rec, open(tmp_path / "d" / "f") as f:  # a small file read: its content's digest
        f.read()
    blob = rec.dump("/home", {})
    assert blob is not None and probe.unchanged(blob, "/home", {})
    st = (tmp_path / "d" / "f").stat()
    (tmp_path / "d" / "f").write_text("yz")  # same size, same mtime: only the content tells
    os.utime(tmp_path / "d" / "f", ns=(st.st_atime_ns, st.st_mtime_ns))
    assert not probe.unchanged(blob, "/home", {})
    (tmp_path / "d" / "big").write_bytes(b"x" * (probe.READ_MAX + 1))
    with probe.recording() as rec, open(tmp_path / "d" / "big", "rb") as f:  # too big to keep a digest of
        f.read(1)
    assert rec.dump("/home", {}) is None
    with probe.recording() as rec, open(tmp_path / "d" / "w", "w") as f:  # a write is nothing to replay
        f.write("x")
    assert rec.dump("/home", {}) is None
    with probe.recording() as rec:
        dict(rec.env({"A": "1"}))  # the whole environment
    assert rec.dump("/home", {}) is None
    assert os.stat is probe._STAT and open is not None  # every patch undone


def test_the_packed_probe_replays_every_observation(tmp_path: Path) -> None:
    """probe.pack / probe.fresh (what a CLI query replays): the same observations as Recording.dump, one stat per
    path; each kind of change a reader could see makes it stale, and an unchanged store stays fresh. `o` is a
    directory nobody lists, so a change there shows only in its own entries' observations."""
    d, o = tmp_path / "d", tmp_path / "o"

    def record() -> bytes:
        for x in (d, o):
            shutil.rmtree(x, ignore_errors=True)
            x.mkdir()
        (d / "a.jsonl").write_text("x\n")
        (d / "b.jsonl").write_text("y\n")
        (o / "c.json").write_text("{}")
        os.symlink(d / "a.jsonl", o / "link")
        with probe.recording() as rec:
            os.listdir(d)
            d.is_dir()  # the same stat as the listing's signature: kept once
            (d / "a.jsonl").stat()
            (d / "b.jsonl").stat()
            (o / "c.json").stat()
            (o / "gone.json").exists()  # a stat that fails: its errno is replayed
            os.lstat(o / "link")
            os.readlink(o / "link")
        blob = probe.pack(rec, "/home", {})
        assert blob is not None and rec.dump("/home", {}) is not None
        assert probe.fresh(blob, "/home", {}) and not probe.fresh(blob, "/elsewhere", {})
        assert not probe.fresh(rec.dump("/home", {}) or b"", "/home", {})  # another form: never fresh
        return blob

    def same_size_new_mtime() -> None:
        st = (d / "b.jsonl").stat()
        os.utime(d / "b.jsonl", ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))

    changes = [lambda: (d / "a.jsonl").write_text("x\nmore\n"),  # appended
               lambda: (o / "c.json").write_text('{"a": 1}'), same_size_new_mtime,
               lambda: (d / "b.jsonl").unlink(), lambda: (d / "new.jsonl").write_text("z\n"),
               lambda: (o / "gone.json").write_text("{}"),
               lambda: (os.unlink(o / "link"), os.symlink(d / "b.jsonl", o / "link"))]
    for change in changes:
        blob = record()
        assert probe.fresh(blob, "/home", {})  # the control
        change()
        assert not probe.fresh(blob, "/home", {}), change
        replay = probe.Replay.load(blob, "/home", {})
        assert replay is not None
        for child in range(probe.CHUNKS + 1):  # whichever process replays the changed path's slice
            assert not replay.fresh(child), (change, child)
    import marshal

    for damaged in (b"garbage", b"", marshal.dumps(42), marshal.dumps((probe.TAG,)),
                    marshal.dumps((probe.TAG, "d", [], 1, 1, b"", [], [], [], [], [])),  # right tag, wrong shapes
                    blob[: len(blob) // 2]):
        assert not probe.fresh(damaged, "/home", {})
    with probe.recording() as rec:  # two answers for one path (changed between them): can never be fresh
        os.stat(d)
        (d / "e").write_text("")
        os.listdir(d)
    assert probe.pack(rec, "/home", {}) is None


def test_a_recording_observes_its_own_thread_only(tmp_path: Path) -> None:
    import threading

    (tmp_path / "mine").write_text("x")
    (tmp_path / "theirs").write_text("x")
    with probe.recording() as rec:
        t = threading.Thread(target=lambda: (os.stat(tmp_path / "theirs"), open(tmp_path / "theirs").close()))
        t.start()
        t.join()
        os.stat(tmp_path / "mine")
    assert (str(tmp_path / "mine"), True) in rec.stats
    assert (str(tmp_path / "theirs"), True) not in rec.stats
    assert rec.dump("/home", {}) is not None  # another thread's open() does not spoil this pass


def test_the_entry_point_answers_a_fresh_query_without_the_cli_s_parser(tmp_path: Path) -> None:
    """`segue search` on a fresh index runs neither argparse nor segue.cli, and prints what the full path prints."""
    stores = Stores(tmp_path)
    code = ("import sys; from segue.entry import main; rc = main(sys.argv[1:]); sys.stdout.flush(); "
            "print(sorted(m for m in sys.modules if m.startswith('segue') or m in ('argparse', 'pathlib')), "
            "file=sys.stderr); "
            "raise SystemExit(rc)")

    def run(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", code, *args], env={**stores.env, **env}, capture_output=True,
                              text=True, timeout=120)

    assert run("search", "files").returncode in (0, 1)  # builds the index
    for args in (["search", "files", "--json"], ["search", "--limit", "2", "files"], ["search", "files"],
                 ["search", "--runtime=claude", "--json", '"run the tests"'], ["search", "nonexistent-word-q"],
                 ["search", "files", "--in", "commands", "--since", "2000-01-01", "--json"]):
        quick, full = run(*args), run(*args, SEGUE_SEARCH_PROBE="0")
        mods = quick.stderr.strip().splitlines()[-1]
        assert "segue.cli'" not in mods and "argparse" not in mods, (args, mods)
        assert "'segue.stores'" not in mods, (args, mods)  # no reader, not even the registry for --runtime
        if "--json" in args and quick.returncode == 0:  # the table only for a table (or a message)
            assert "'segue.table'" not in mods, (args, mods)
        assert "'pathlib'" not in mods, (args, mods)  # (~4 ms: segue.search.fast spells paths as str)
        assert "segue.cli'" in full.stderr and "'pathlib'" in full.stderr
        assert (quick.returncode, quick.stdout) == (full.returncode, full.stdout), args
        assert quick.stderr.splitlines()[:-1] == full.stderr.splitlines()[:-1], args
    unknown = run("search", "files", "--runtime", "vim")  # the registry refuses it, as argparse's usage error
    assert unknown.returncode == 2 and "invalid choice: 'vim'" in unknown.stderr


def test_the_quick_parser_leaves_every_unusual_form_to_argparse() -> None:
    from segue.cli_search import _parse_quick

    for argv in (["search", "a", "--json", "b"], ["search", "--js", "a"], ["search", "-h"], ["search", "--forget"],
                 ["search", "a", "--limit", "0"], ["search", "a", "--limit", "x"],
                 ["search", "--", "a"], ["search", "-a"], ["list", "a"], ["search", "a", "--limit"]):
        assert _parse_quick(argv) is None, argv
    ns = _parse_quick(["--home", "/h", "search", "--runtime", "claude", "fix", "it", "--in=commands", "--limit=3"])
    assert ns is not None and (ns.home, ns.query, ns.runtime, ns.where, ns.limit, ns.json) == (
        "/h", ["fix", "it"], ["claude"], ["commands"], 3, False)


PATHS = ["/a/b", "/", "/a b/%?#/ü", "/x//y", "//x/y", "/a/./b", "/a/b/", "/a/..", "/a/b/.", "/a/\udcff", "rel/x", "./x",
         "~", "~/s", "~//s", "~/./s/", "..", "a/../b", "/.", "///x"]


def test_the_quick_path_spells_its_paths_as_pathlib_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """str paths instead of pathlib (segue.search.fast, cli_search.state_root, index.file_uri): the same spelling,
    or pathlib itself for anything unusual."""
    from segue.cli_search import state_root
    from segue.search.fast import _plain, path_str
    from segue.search.index import file_uri

    for p in PATHS:
        assert path_str(p) == str(Path(p)), p
        if Path(p).is_absolute():
            assert file_uri(Path(p)) == Path(p).as_uri(), p
            if _plain(p):
                assert file_uri(p) == Path(p).as_uri(), p
        else:
            with pytest.raises(ValueError):
                file_uri(p)
    assert not _plain("/x//y") and file_uri("/x//y") != Path("/x//y").as_uri()  # what _plain keeps from the str
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "cwd").mkdir()
    monkeypatch.chdir(tmp_path / "cwd")
    for switch in ("1", "0"):
        monkeypatch.setenv("SEGUE_SEARCH_PATHS", switch)
        for home in [None, "", *PATHS]:
            for env in (None, "/st/home", "~/st", "rel/st"):
                if env is None:
                    monkeypatch.delenv("SEGUE_HOME", raising=False)
                else:
                    monkeypatch.setenv("SEGUE_HOME", env)
                if home is None and env is None:
                    continue  # platformdirs: the same call either way
                assert state_root(home) == str(StateDir.resolve(home).root), (home, env, switch)
    monkeypatch.setenv("SEGUE_SEARCH_PATHS", "1")
    for p in ("~nosuchuser-segue/x", "~nosuchuser-segue"):
        with pytest.raises(RuntimeError):
            StateDir.resolve(p)
        with pytest.raises(RuntimeError):  # left to pathlib, which refuses it
            state_root(p)


def test_the_redaction_rules_digest_is_pathlib_s(monkeypatch: pytest.MonkeyPatch) -> None:
    from segue import __version__
    from segue.search import redaction

    def reference() -> str | None:
        d = Path(redaction.__file__).resolve().parent.parent / "redact"
        h = redaction.blake2b(digest_size=16)
        h.update(f"{sys.version}\0{__version__}\0".encode())
        names = sorted(p.name for p in d.iterdir() if p.suffix == ".py")
        for n in names:
            h.update(n.encode() + b"\0" + (d / n).read_bytes() + b"\0")
        return h.hexdigest()

    assert redaction.rules_digest() == reference()
    for n in ("a.py", ".py", "..py", "a.b.py", "a.pyc", "py", "a.py.txt", ".a.py", "a .py", "a.PY"):
        assert redaction._py_suffix(n) == (Path(n).suffix == ".py"), n
    monkeypatch.setattr(redaction, "__version__", __version__ + "x")  # negative control: the comparison can fail
    assert redaction.rules_digest() != reference()


def test_the_replay_s_signature_is_the_recording_s(tmp_path: Path) -> None:
    """search.probe._SIG (one C call) is replay._sig: the digest of a packed probe is over these tuples."""
    from segue.replay import _sig

    (tmp_path / "f").write_text("x" * 10)
    (tmp_path / "d").mkdir()
    os.symlink(tmp_path / "f", tmp_path / "l")
    os.utime(tmp_path / "f", ns=(1, 1_234_567_891_234_567_891))
    for p in (tmp_path / "f", tmp_path / "d", tmp_path / "l", tmp_path):
        for follow in (True, False):
            st = os.stat(p, follow_symlinks=follow)
            assert probe._SIG(st) == _sig(st) and type(probe._SIG(st)) is tuple, (p, follow)
            assert probe._sigs_digest([probe._SIG(st)]) == probe._sigs_digest([_sig(st)])
    a, b = os.stat(tmp_path / "f"), os.stat(tmp_path / "d")
    assert probe._sigs_digest([probe._SIG(a)]) != probe._sigs_digest([_sig(b)])  # negative control


def test_a_check_beside_the_query_gives_its_verdict_and_any_failure_is_a_no(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def run(check: Any) -> bool:
        wait = alongside.start(check)
        assert wait is not None
        return wait()

    children = Path(f"/proc/self/task/{os.getpid()}/children")
    before = children.read_text() if children.exists() else None
    parent = os.getpid()
    assert run(lambda: os.getpid() != parent) is True  # it ran in another process
    assert run(lambda: False) is False
    assert run(lambda: 1) is False  # only True is a yes

    def boom() -> bool:
        raise OSError("gone")

    assert run(boom) is False
    assert run(lambda: os.kill(os.getpid(), 9)) is False  # died without a word
    assert run(lambda: sys.exit(0)) is False  # SystemExit in the child is a no too
    if before is not None:
        assert children.read_text() == before  # every child reaped


def test_no_child_where_a_fork_is_not_safe_or_possible(monkeypatch: pytest.MonkeyPatch) -> None:
    import _thread
    import threading

    assert alongside.start(lambda: True) is not None  # the control
    monkeypatch.setenv("SEGUE_ALONGSIDE", "0")
    assert alongside.start(lambda: True) is None
    monkeypatch.delenv("SEGUE_ALONGSIDE")

    release = _thread.allocate_lock()
    release.acquire()
    t = threading.Thread(target=release.acquire)
    t.start()
    try:
        assert alongside.start(lambda: True) is None  # another thread could hold a lock the child needs
    finally:
        release.release()
        t.join()

    def refused() -> int:
        raise OSError("fork refused")

    monkeypatch.setattr(os, "fork", refused)
    assert alongside.start(lambda: True) is None


def test_a_change_in_any_slice_is_seen_whichever_process_replays_it(tmp_path: Path) -> None:
    """probe.Replay: the paths in CHUNKS slices with a digest each; this process replays the first ones and a
    forked child the last `child` ones. A file changed in any slice makes the replay stale, for every share."""
    files = [tmp_path / f"{i:03}.jsonl" for i in range(40)]
    for f in files:
        f.write_text("x\n")

    def record() -> probe.Replay:
        with probe.recording() as rec:
            for f in files:
                f.stat()
        blob = probe.pack(rec, "/home", {})
        assert blob is not None
        replay = probe.Replay.load(blob, "/home", {})
        assert replay is not None and len(replay.paths) == len(files)
        return replay

    for f in files[::7] + files[-1:]:
        replay = record()
        for child in range(probe.CHUNKS + 1):
            assert replay.fresh(child), child  # the control
        where = next(i for i in range(probe.CHUNKS)
                     if os.fsencode(f) in replay.paths[probe._cut(40, i):probe._cut(40, i + 1)])
        f.write_text("x\ny\n")
        for child in range(probe.CHUNKS + 1):
            assert not replay.fresh(child), (f.name, child)
            mine = probe.CHUNKS - child
            assert replay.same(0, mine) == (where >= mine)  # this process sees it only in its own slices


def test_the_stores_stay_as_they_were_when_a_child_replays_the_probes(root: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """The quick search and the warm listing with a forked child replaying the stats (every share the search
    uses, each group's half for the listing): no byte, name or time of any store changes, `-shm` included."""
    from segue import cli, replay, warm
    from tests.test_cli_real import snapshot

    forked = record_forks(monkeypatch)
    stores = [root / rt for rt in ("claude", "codex", "opencode", "cline", "gemini") if (root / rt).exists()]
    assert stores
    cli_service(root).search("files")
    monkeypatch.setenv("SEGUE_HOME", str(root / "segue"))
    monkeypatch.setattr(sys, "stdout", io.StringIO())
    assert cli.main(["list", "--json"]) == 0  # kept for the warm answer
    before = {str(s): snapshot(s) for s in stores}
    monkeypatch.setattr(replay, "SPLIT_MIN", 0)
    for share in (1, probe.CHUNKS // 2, probe.CHUNKS):
        monkeypatch.setattr(fast, "_child_share", lambda paths, ms, share=share: share)
        assert quick(root, "files") is not None
        assert warm.answer(["list", "--json"]) == 0
    assert forked and all(forked)
    assert {str(s): snapshot(s) for s in stores} == before
    victim = next(p for p in (root / "claude").rglob("*.jsonl"))
    with open(victim, "a") as f:  # the control: the snapshot sees a store that changed
        f.write("\n")
    assert {str(s): snapshot(s) for s in stores} != before
