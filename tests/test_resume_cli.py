"""`segue resume` for a person (in process): what a dry run shows, what a declined launch leaves behind, and how
the plan reads. Found by a new user's trial."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from segue import cli
from segue.resume import Plan
from tests.test_list_cli import Tty
from tests.test_listing import DirReader, dir_reader  # noqa: F401  (the fixture)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dir_reader: type[DirReader]) -> Path:  # noqa: F811
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    session = {"id": "s1", "t": 1000, "q": "fix the login", "cwd": str(tmp_path / "work")}
    (store / "a.json").write_text(json.dumps(session))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CODEX_HOME", "OPENCODE_DATA_DIR", "CLINE_DIR", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME", "SEGUE_HOME"):
        monkeypatch.delenv(var, raising=False)
    (tmp_path / "bin").mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "bin"))  # no runtime CLI installed
    return tmp_path


def install_cli(home: Path, name: str = "claude") -> Path:
    p = home / "bin" / name
    p.write_text("#!/bin/sh\nexit 0\n")
    p.chmod(0o755)
    return p


def run(home: Path, monkeypatch: pytest.MonkeyPatch, *argv: str, stdin: str | None = None) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    monkeypatch.setattr("sys.stdin", Tty(stdin) if stdin is not None else io.StringIO())
    code = cli.main(["--home", str(home / "state"), *argv])
    return code, out.getvalue(), err.getvalue()


def briefs(home: Path) -> list[str]:
    d = home / "state" / "handoffs"
    return sorted(os.listdir(d)) if d.is_dir() else []


def test_a_dry_run_shows_the_plan_when_the_cli_is_not_installed(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, err = run(home, monkeypatch, "resume", "claude:s1", "--dry-run")
    plan = json.loads(out)
    assert code == 0 and (plan["mode"], plan["argv"]) == ("native", ["claude", "--resume", "s1"])
    assert "claude command is not installed or not on PATH" in err and "would fail" in err
    # control: with the CLI on PATH the plan names it and nothing is noted
    exe = install_cli(home)
    code, out, err = run(home, monkeypatch, "resume", "claude:s1", "--dry-run")
    assert code == 0 and json.loads(out)["argv"][0] == str(exe) and err == ""
    # launching without it is still refused
    code, _, err = run(home, monkeypatch, "resume", "claude:s1", "--yes", "--in", "codex")
    assert code == 1 and "codex command is not installed" in err and briefs(home) == []


def test_a_dry_run_names_the_brief_it_would_write_and_writes_none(home: Path, monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    install_cli(home)
    code, out, _ = run(home, monkeypatch, "resume", "claude:s1", "--new", "--dry-run")
    plan = json.loads(out)
    assert code == 0 and plan["mode"] == "new_session"
    path = Path(plan["brief_path"])
    assert path.parent == home / "state" / "handoffs" and path.name.startswith("claude-s1-") and path.suffix == ".md"
    assert str(path) in plan["argv"][-1] and not path.exists() and briefs(home) == []
    # control: a command to paste elsewhere needs its brief, so --print writes it
    code, out, _ = run(home, monkeypatch, "resume", "claude:s1", "--new", "--print")
    assert code == 0 and len(briefs(home)) == 1 and briefs(home)[0] in out


def test_a_declined_launch_leaves_no_brief(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_cli(home)
    launched: list[Plan] = []
    monkeypatch.setattr("segue.resume.exec_plan", launched.append)
    code, _, err = run(home, monkeypatch, "resume", "claude:s1", "--new", stdin="n\n")
    assert code == 1 and "not launched" in err and "brief:" in err
    assert briefs(home) == [] and launched == []
    code, _, err = run(home, monkeypatch, "resume", "claude:s1", "--new")  # no terminal to ask on
    assert code == 1 and "--yes" in err and briefs(home) == []
    # control: an accepted launch keeps the brief the new session is told to read
    code, _, _ = run(home, monkeypatch, "resume", "claude:s1", "--new", stdin="y\n")
    assert len(launched) == 1 and launched[0].brief_path is not None
    assert briefs(home) == [Path(launched[0].brief_path).name]


def test_a_session_without_a_title_is_named_by_its_first_request(home: Path, monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    # Gemini CLI records no title: every view names the session as the list table does
    install_cli(home)
    store = home / "home" / "store"
    (store / "b.json").write_text(json.dumps({"id": "s2", "t": 900, "cwd": str(home / "work")}))  # no request either
    code, _, err = run(home, monkeypatch, "resume", "claude:s1", "--new", stdin="n\n")
    assert code == 1 and "session:   claude:s1  fix the login" in err
    code, _, err = run(home, monkeypatch, "resume", "claude:s2", "--new", stdin="n\n")
    assert code == 1 and "session:   claude:s2  (untitled)" in err  # control: nothing to name it by
    code, out, _ = run(home, monkeypatch, "resume", "claude:s1", "--dry-run")
    assert json.loads(out)["session"]["title"] == "fix the login"
    code, out, _ = run(home, monkeypatch, "trace", "claude:s1")
    assert code == 0 and out.rstrip().endswith("fix the login")
    code, out, _ = run(home, monkeypatch, "trace", "claude:s1", "--json")
    assert json.loads(out)[0]["title"] == "fix the login"
    code, token, _ = run(home, monkeypatch, "handoff", "emit", "claude:s1")
    code, out, _ = run(home, monkeypatch, "handoff", "status")
    assert code == 0 and "claude:s1  fix the login  from terminal" in out
    code, out, _ = run(home, monkeypatch, "handoff", "claim", token.strip())
    assert code == 0 and out.splitlines()[0] == "Claimed claude:s1  fix the login"


def test_trace_says_when_a_linked_session_is_not_found_and_aligns_its_columns(home: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    store = home / "home" / "store"
    (store / "c.json").write_text(json.dumps({"id": "s3", "t": 1100, "cwd": str(home / "work"),
                                              "q": "Read the brief\n[segue-handoff v1 from=codex:gone-session-id]"}))
    (store / "d.json").write_text(json.dumps({"id": "s4-a-longer-id", "t": 1200, "cwd": str(home / "work"),
                                              "q": "Go on\n[segue-handoff v1 from=claude:s3]"}))
    code, out, _ = run(home, monkeypatch, "trace", "claude:s3")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0].startswith("   codex:gone-session-id  ") and "not found" in lines[0]
    assert "not found" not in lines[1] + lines[2]  # control: the sessions Segue has are named
    assert lines[1].startswith("-> claude:s3 ") and lines[2].startswith("-> claude:s4-a-longer-id ")
    # every column starts where the one above it does (these sessions recorded no start time: "-")
    titles = [line.index(t) for line, t in zip(lines, ("(not found", "Read the brief", "Go on"), strict=True)]
    times = [line.index("  -  ") for line in lines]
    assert len(set(titles)) == 1 and len(set(times)) == 1
    code, out, _ = run(home, monkeypatch, "trace", "claude:s3", "--json")
    assert [(c["id"], c["found"]) for c in json.loads(out)] == [
        ("gone-session-id", False), ("s3", True), ("s4-a-longer-id", True)]


def test_the_plan_says_why_in_words_not_reason_codes(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from segue.resume import REASON_TEXTS

    install_cli(home)
    install_cli(home, "codex")
    for flags, head, reason in ((["--new"], "Plan: a new Claude Code session from a brief", "requested"),
                                (["--in", "codex"], "Plan: a new Codex CLI session from a brief", "other_runtime"),
                                ([], "Plan: reopen it in Claude Code", "native")):
        code, _, err = run(home, monkeypatch, "resume", "claude:s1", *flags, stdin="n\n")
        assert code == 1 and err.startswith(head + "\n") and f"  why:       {REASON_TEXTS[reason]}\n" in err
        assert reason + ":" not in err and "native:" not in err


def test_a_live_session_is_warned_about_in_the_plan(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from segue.listing import Listing, scan

    install_cli(home)
    install_cli(home, "codex")

    def live_scan(*a: object, **k: object) -> Listing:  # a runtime process holds claude:s1 open
        listing = scan(*a, **k)
        for s in listing.sessions:
            s.live = True
        return listing

    monkeypatch.setattr("segue.service.scan", live_scan)
    code, out, _ = run(home, monkeypatch, "resume", "claude:s1", "--dry-run")
    assert code == 0 and json.loads(out)["live"] is True
    launched: list[Plan] = []
    monkeypatch.setattr("segue.resume.exec_plan", launched.append)
    code, out, err = run(home, monkeypatch, "resume", "claude:s1", stdin="y\n")  # 'y' is not enough for a live one
    assert code == 1 and launched == [] and "WARNING: another process has this session open (live)" in err
    assert "open in another process. Type 'yes' to launch anyway" in out
    code, _, err = run(home, monkeypatch, "resume", "claude:s1", stdin="yes\n")
    assert len(launched) == 1 and launched[0].live
    code, out, err = run(home, monkeypatch, "resume", "claude:s1", "--in", "codex", stdin="n\n")
    assert code == 1 and "WARNING: another process still has this session open" in err and "Launch? [y/N]" in out
