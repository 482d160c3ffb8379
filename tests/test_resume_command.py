"""`segue resume REF --print`: a command line that works when pasted into a fresh terminal.

Quoting is checked by running the printed line in real shells (sh, dash, bash; pwsh when installed) against
a fake runtime CLI on PATH that records its argv and working directory: the recording must equal the plan.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from segue import resume
from segue.model import Session
from segue.stores import RUNTIMES
from tests.test_cli_real import Stores

HOSTILE = ["plain", "a b", "it's", "$HOME", "`id`", "$(id)", "semi;colon", "back\\slash", 'dq"uote',
           "new\nline", "tab\tx", "*glob?", "~tilde", "-leading", "‘curly’", "&amp", "#hash", "", "é ü 漢"]


def plan_for(cwd: str, argv: list[str], runtime: str = "claude") -> resume.Plan:
    return resume.Plan(mode="native", reason="native", runtime=runtime, argv=[f"/abs/bin/{runtime}", *argv],
                       cwd=cwd, brief_path=None, session=Session(runtime=runtime, id="ID", store_path="/s"))


def recorder(bindir: Path, name: str, out: Path) -> None:
    """A fake runtime CLI: writes cwd then its argv (NUL-separated) to `out`."""
    bindir.mkdir(parents=True, exist_ok=True)
    p = bindir / name
    p.write_text(f"#!/bin/sh\n{{ pwd -P; printf '%s\\0' \"$@\"; }} > '{out}'\n")
    p.chmod(0o755)


def read_record(out: Path) -> tuple[str, list[str]]:
    raw = out.read_text()
    cwd, rest = raw.split("\n", 1)
    return cwd, rest.split("\0")[:-1]


POSIX_SHELLS = [s for s in ("sh", "dash", "bash") if shutil.which(s)]


@pytest.mark.parametrize("shell", POSIX_SHELLS)
def test_posix_line_runs_the_plan_exactly_in_a_fresh_shell(shell: str, tmp_path: Path) -> None:
    d = tmp_path / "work dir 'q' $x"
    d.mkdir()
    out = tmp_path / "rec"
    recorder(tmp_path / "bin", "claude", out)
    plan = plan_for(str(d), ["--resume", *HOSTILE])
    line = resume.command_line(plan, "posix")
    assert line.startswith("cd ") and " && claude --resume " in line
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run([shell, "-c", line], env=env, cwd="/", check=True, timeout=30)
    cwd, argv = read_record(out)
    assert cwd == os.path.realpath(d)
    assert argv == ["--resume", *HOSTILE]


def test_posix_line_with_a_leading_dash_cannot_become_an_option(tmp_path: Path) -> None:
    # cwd is absolute (from the plan), so `cd` never sees an option; words are quoted, never re-split
    assert resume.posix_quote("-x") == "-x" and resume.posix_quote("a b") == "'a b'"
    assert resume.posix_quote("it's") == "'it'\\''s'"
    assert resume.posix_quote("") == "''"


def test_a_failed_cd_runs_nothing(tmp_path: Path) -> None:
    out = tmp_path / "rec"
    recorder(tmp_path / "bin", "codex", out)
    line = resume.command_line(plan_for(str(tmp_path / "gone"), ["resume", "ID"], "codex"), "posix")
    p = subprocess.run(["sh", "-c", line], env={"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}, capture_output=True,
                       timeout=30)
    assert p.returncode != 0 and not out.exists()


def test_powershell_quoting() -> None:
    q = resume.powershell_quote
    assert q("claude") == "claude" and q("--resume") == "'--resume'" and q("abc-123") == "abc-123"
    assert q("it's") == "'it''s'"
    assert q("‘x’") == "'‘‘x’’'"  # PowerShell ends a single-quoted string on curly quotes too
    assert q("$env:HOME") == "'$env:HOME'" and q("@a") == "'@a'" and q("a,b") == "'a,b'" and q("") == "''"
    line = resume.command_line(plan_for("C:\\Users\\o'b\\w", ["--resume", "ID"]), "powershell")
    assert line == "Set-Location -LiteralPath 'C:\\Users\\o''b\\w'; if ($?) { claude '--resume' ID }"
    quoted_cmd = resume.command_line(plan_for("/w", ["x"], runtime="claude"), "powershell")
    assert "{ claude x }" in quoted_cmd


@pytest.mark.skipif(shutil.which("pwsh") is None, reason="PowerShell (pwsh) is not installed here")
def test_powershell_line_runs_the_plan_exactly(tmp_path: Path) -> None:  # pragma: no cover - needs pwsh
    d = tmp_path / "work dir 'q' $x"
    d.mkdir()
    out = tmp_path / "rec"
    recorder(tmp_path / "bin", "claude", out)
    args = ["--resume", *[a for a in HOSTILE if '"' not in a and a]]  # Windows PowerShell 5.1 mangles " in args
    line = resume.command_line(plan_for(str(d), args), "powershell")
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin", "HOME": str(tmp_path)}
    subprocess.run(["pwsh", "-NoProfile", "-NonInteractive", "-Command", line], env=env, check=True, timeout=60)
    assert read_record(out) == (os.path.realpath(d), args)


def test_unknown_shell_and_nul_are_refused() -> None:
    with pytest.raises(ValueError):
        resume.command_line(plan_for("/w", ["x"]), "fish")
    with pytest.raises(resume.PlanRefused):
        resume.command_line(plan_for("/w", ["a\x00b"]), "posix")


def test_command_line_never_carries_bypass_flags() -> None:
    with pytest.raises(AssertionError):
        resume.command_line(plan_for("/w", ["--dangerously-skip-permissions"]), "posix")


# -- the CLI on the real-runtime fixture stores ----------------------------------------------------------------

@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return Stores(tmp_path_factory.mktemp("stores"))


@pytest.mark.parametrize("rt", RUNTIMES)
def test_cli_print_pasted_into_a_fresh_terminal_runs_the_dry_run_plan(stores: Stores, rt: str, tmp_path: Path
                                                                     ) -> None:
    for exp in stores.sessions(rt):
        ref = f"{rt}:{exp['id']}"
        line = stores.run("resume", ref, "--print").stdout
        assert line.endswith("\n") and line.count("\n") == line.rstrip("\n").count("\n") + 1
        plan = stores.json("resume", ref, "--dry-run")
        out = tmp_path / f"rec-{exp['id']}"
        bindir = tmp_path / f"bin-{exp['id']}"
        recorder(bindir, rt, out)
        # a fresh terminal: another shell, another directory, only the runtime's CLI on PATH
        subprocess.run(["sh", "-c", line], env={"PATH": f"{bindir}:/usr/bin:/bin", "HOME": str(tmp_path)},
                       cwd="/", check=True, timeout=30)
        cwd, argv = read_record(out)
        assert cwd == os.path.realpath(plan["cwd"])
        if exp["parent_id"]:  # a new session from a brief written now: same prompt, its own brief file
            assert argv[:-1] == plan["argv"][1:-1]
            assert argv[-1].endswith(f"[segue-handoff v1 from={rt}:{exp['id']}]")
            brief = argv[-1].split("Read the handoff brief at ", 1)[1].split(" (a Markdown file", 1)[0]
            assert Path(brief).is_file()
        else:
            assert argv == plan["argv"][1:]
            assert exp["id"] in argv


def test_cli_print_for_powershell_and_usage_errors(stores: Stores) -> None:
    top = stores.sessions("codex", top_level_only=True)[0]
    line = stores.run("resume", f"codex:{top['id']}", "--print", "--shell", "powershell").stdout.strip()
    assert line.startswith("Set-Location -LiteralPath '") and line.endswith(f"{{ codex resume {top['id']} }}")
    for bad in (["--shell", "posix"], ["--print", "--dry-run"], ["--print", "--yes"], ["--print", "--shell", "fish"]):
        p = stores.run("resume", f"codex:{top['id']}", *bad, check=False)
        assert p.returncode == 2, bad


def test_cli_print_works_without_the_runtime_installed_here(stores: Stores) -> None:
    # the line may be pasted on another machine: a CLI missing here is no refusal for --print
    top = stores.sessions("codex", top_level_only=True)[0]
    env = dict(stores.env, PATH="/usr/bin:/bin")
    p = subprocess.run([sys.executable, "-m", "segue", "resume", f"codex:{top['id']}", "--print"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip().endswith(f"&& codex resume {top['id']}")
    dry = subprocess.run([sys.executable, "-m", "segue", "resume", f"codex:{top['id']}", "--dry-run"], env=env,
                         capture_output=True, text=True, timeout=60)
    assert dry.returncode == 0 and "would fail" in dry.stderr  # the plan is shown; launching it here would fail


def test_cli_print_refuses_a_missing_directory(stores: Stores, tmp_path: Path) -> None:
    top = stores.sessions("codex", top_level_only=True)[0]
    p = stores.run("resume", f"codex:{top['id']}", "--print", "--cwd", str(tmp_path / "gone"), check=False)
    assert p.returncode == 1 and "does not exist" in p.stderr and not p.stdout


def test_json_is_unaffected(stores: Stores) -> None:
    top = stores.sessions("codex", top_level_only=True)[0]
    assert json.loads(stores.run("resume", f"codex:{top['id']}", "--dry-run").stdout)["mode"] == "native"
