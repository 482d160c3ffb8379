"""The `segue` command end to end on stores written by the four real runtimes.

Facts come from each fixture's expected.json (what the scripted scenario made the agent do), never from
Segue's own output. Every command runs as a separate process, as a person would run it.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from segue.redact import redact_text
from segue.stores import RUNTIMES
from tests.conftest import REAL, make_session_dirs, real_fixture


class Stores:
    """The four fixture stores copied under one tmp dir, and the environment that points Segue at them."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.expected: dict[str, dict[str, Any]] = {}
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_",
                                                                       "XDG_"))}
        (root / "emptyhome").mkdir()
        env["HOME"] = str(root / "emptyhome")
        env["SEGUE_HOME"] = str(root / "segue-home")
        for rt in RUNTIMES:
            d, exp = real_fixture(rt)
            self.expected[rt] = exp
            shutil.copytree(d / "home", root / rt / "home", symlinks=True)
            for var, rel in exp["env"].items():
                if var != "HOME":
                    env[var] = str(root / rt / rel)
        bindir = root / "bin"
        bindir.mkdir()
        for rt in RUNTIMES:  # stand-ins so plans find a CLI; they are never launched here
            p = bindir / rt
            p.write_text("#!/bin/sh\nexit 0\n")
            p.chmod(0o755)
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        self.env = env
        for exp in self.expected.values():
            make_session_dirs(exp)

    def run(self, *args: str, input: str | None = None, check: bool = True) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([sys.executable, "-m", "segue", *args], env=self.env, capture_output=True, text=True,
                           input=input, timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"segue {' '.join(args)} exited {p.returncode}\n{p.stderr}")
        return p

    def json(self, *args: str) -> Any:
        return json.loads(self.run(*args).stdout)

    def sessions(self, rt: str | None = None, top_level_only: bool = False) -> list[dict[str, Any]]:
        out = []
        for r, exp in self.expected.items():
            if rt and r != rt:
                continue
            out += [dict(s, runtime=r) for s in exp["sessions"] if not (top_level_only and s["parent_id"])]
        return out


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return Stores(tmp_path_factory.mktemp("stores"))


def snapshot(root: Path) -> dict[str, tuple[str, int] | None]:
    """Every path under a tree with its content hash and mtime (directories: None)."""
    out: dict[str, tuple[str, int] | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.join(dirpath, d)] = None
        for f in filenames:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            h = hashlib.sha256(Path(p).read_bytes()).hexdigest() if os.path.isfile(p) else "special"
            out[p] = (h, st.st_mtime_ns)
    return out


def test_list_json_reports_every_top_level_session(stores: Stores) -> None:
    listed = stores.json("list", "--json")
    by_key = {(s["runtime"], s["id"]): s for s in listed}
    for exp in stores.sessions(top_level_only=True):
        s = by_key.get((exp["runtime"], exp["id"]))
        assert s is not None, f"{exp['runtime']}:{exp['id']} ({exp['scenario']}) not listed"
        # listings show the first request redacted (issue 12): a password typed in it is not printed
        assert s["first_request"] == redact_text(exp["first_request"])
        assert s["cwd"] == exp["cwd"]
        assert s["branch"] == exp["branch"]
        assert s["parent_id"] is None and s["resumable"] is True and s["resume_blocker"] is None
        want = exp["continues"]
        assert s["continues"] == (want and {"runtime": want["runtime"], "id": want["id"]})
    assert not any(s["parent_id"] for s in listed), "subagents must only show with --all"
    times = [s["updated_at"] for s in listed]
    assert times == sorted(times, reverse=True)
    keys = set(listed[0])
    for s in listed:
        assert set(s) == keys  # one shape, no field omitted
        for t in ("started_at", "updated_at"):
            assert s[t] is None or (s[t].endswith("Z") and len(s[t]) == 24)


def test_list_all_nests_subagents_right_after_their_parent(stores: Stores) -> None:
    listed = stores.json("list", "--json", "--all")
    order = [(s["runtime"], s["id"]) for s in listed]
    subs = [s for s in stores.sessions() if s["parent_id"]]
    assert subs, "the fixtures should hold subagent sessions"
    for sub in subs:
        key = (sub["runtime"], sub["id"])
        assert key in order, f"subagent {key} not listed with --all"
        row = listed[order.index(key)]
        assert row["parent_id"] == sub["parent_id"] and row["resume_blocker"] == "subagent"
        parent_at = order.index((sub["runtime"], sub["parent_id"]))
        between = listed[parent_at + 1:order.index(key)]
        assert all(b["parent_id"] for b in between), "only the parent's subagents may stand between"
    parents = {(s["runtime"], s["parent_id"]) for s in subs}
    for s in listed:
        if (s["runtime"], s["id"]) in parents:
            assert s["subagent_count"] >= 1


def test_the_table_shows_ids_a_person_can_type(stores: Stores) -> None:
    """The table's ID column: each id cut to its shortest unambiguous prefix (8 characters at least), which the
    other commands take; the same table again from the warm entry (the kept rows hold the ids shown)."""
    listed = {(s["runtime"], s["id"]) for s in stores.json("list", "--json", "--all")}
    first = stores.run("list", "--all").stdout
    lines = first.splitlines()
    assert lines[0].split()[:3] == ["ID", "RUNTIME", "AGE"]
    shown = [(line.split()[1], line.split()[0]) for line in lines[1:]]
    assert len(shown) == len(listed)
    whole: dict[str, str] = {}
    for rt, short in shown:
        # unambiguous among every listed session (an id that begins another is shown whole: it matches exactly)
        matches = [k for k in listed if k[1] == short] or [k for k in listed if k[1].startswith(short)]
        assert len(matches) == 1 and matches[0][0] == rt, short
        assert len(short) >= min(8, len(matches[0][1])) and len(short) < 36
        whole[short] = matches[0][1]
    for _rt, short in shown[:: max(1, len(shown) // 4)]:  # what other commands take
        assert whole[short] in stores.run("brief", short, "--stdout").stdout
    assert stores.run("list", "--all").stdout == first  # warm: the kept rows, rendered again
    # one directory's sessions: their ids are still unambiguous among all (not only among the rows shown), from
    # the full path and from the warm entry alike
    listed_json = stores.json("list", "--json")
    for s in listed_json:
        near = [o for o in listed_json if o["id"][:8] == s["id"][:8] and o is not s]
        if near and s["cwd"] and all(o["cwd"] != s["cwd"] for o in near):
            break
    else:
        pytest.fail("the fixtures should hold two sessions whose ids begin alike, in two directories")
    for _ in range(2):
        rows = [line.split()[0] for line in stores.run("list", "--dir", s["cwd"]).stdout.splitlines()[1:]]
        assert any(s["id"].startswith(r) for r in rows)
        assert all(len([o for o in listed if o[1].startswith(r)]) == 1 for r in rows), rows


@pytest.mark.parametrize("rt", RUNTIMES)
def test_filters(stores: Stores, rt: str) -> None:
    only = stores.json("list", "--json", "--runtime", rt)
    assert only and {s["runtime"] for s in only} == {rt}
    one_dir = next(s["cwd"] for s in stores.sessions(rt, top_level_only=True))
    in_dir = stores.json("list", "--json", "--dir", one_dir)
    assert in_dir and all(s["cwd"] == one_dir or s["cwd"].startswith(one_dir + "/") for s in in_dir)
    assert len(stores.json("list", "--json", "--limit", "1")) == 1


@pytest.mark.parametrize("rt", RUNTIMES)
def test_brief_facts_match_the_scenario(stores: Stores, rt: str) -> None:
    for exp in stores.sessions(rt):
        facts = stores.json("brief", f"{rt}:{exp['id']}", "--json")
        assert unredacted(facts["first_request"]) == masked(exp["first_request"])
        assert unredacted(facts["latest_request"]) == masked(exp["latest_request"])
        got = [(unredacted(c["command"]), c["exit_code"]) for c in facts["commands"]]
        for c in exp["commands"]:
            assert (masked(c["command"]), c["exit_code"]) in got, f"{rt}:{exp['id']} missing command {c}"
        changed = {f["path"] for f in facts["files_changed"]}
        for f in exp["files_written"]:
            assert f in changed, f"{rt}:{exp['id']} missing changed file {f}"
        assert len(facts["steps"]) <= 30


SECRET = "Sup3rS3cret-42"  # the secret scenario's password: briefs must show a redaction marker instead


def unredacted(text: str | None) -> str | None:
    return None if text is None else re.sub(r"\[REDACTED:[a-z0-9-]+\]", "<secret>", text)


def masked(text: str | None) -> str | None:
    # a redacted value runs to the next quote or space (the literal `\n` after it goes too)
    return None if text is None else re.sub(re.escape(SECRET) + r"[^\s'\"]*", "<secret>", text)


@pytest.mark.parametrize("rt", RUNTIMES)
def test_failing_command_exit_code_reaches_the_markdown(stores: Stores, rt: str) -> None:
    one = next(s for s in stores.sessions(rt) if s["scenario"] == "one")
    md = stores.run("brief", f"{rt}:{one['id']}", "--stdout").stdout
    assert "- exit 2: `ls /nonexistent-dir`" in md
    assert one["first_request"].replace("`", "") in md.replace("`", "")


@pytest.mark.parametrize("rt", RUNTIMES)
def test_secret_session_brief_is_redacted(stores: Stores, rt: str) -> None:
    sec = next(s for s in stores.sessions(rt) if s["scenario"] == "secret")
    md = stores.run("brief", f"{rt}:{sec['id']}", "--stdout").stdout
    assert SECRET not in md
    assert "[REDACTED:" in md
    facts = stores.json("brief", f"{rt}:{sec['id']}", "--json")
    assert facts["redactions"] >= 1 and "Sup3rS3cret-42" not in json.dumps(facts)


def test_brief_file_is_written_privately_and_printed(stores: Stores) -> None:
    exp = stores.sessions("codex", top_level_only=True)[0]
    path = Path(stores.run("brief", f"codex:{exp['id']}").stdout.strip())
    again = Path(stores.run("export", f"codex:{exp['id']}").stdout.strip())
    assert path != again and path.is_file() and again.is_file()
    assert path.parent == Path(stores.env["SEGUE_HOME"]) / "handoffs"
    assert oct(path.stat().st_mode & 0o777) == "0o600" and oct(path.parent.stat().st_mode & 0o777) == "0o700"


@pytest.mark.parametrize("rt", RUNTIMES)
def test_resume_dry_run_plans(stores: Stores, rt: str) -> None:
    for exp in stores.sessions(rt):
        plan = stores.json("resume", f"{rt}:{exp['id']}", "--dry-run")
        assert set(plan) >= {"mode", "reason", "runtime", "argv", "cwd", "brief_path"}
        if exp["parent_id"]:
            assert (plan["mode"], plan["reason"]) == ("new_session", "subagent")
            # the brief it would write, named in the prompt; a dry run writes none
            assert str(plan["brief_path"]) in plan["argv"][-1] and not Path(plan["brief_path"]).exists()
            assert plan["argv"][-1].endswith(f"[segue-handoff v1 from={rt}:{exp['id']}]")
        else:
            assert (plan["mode"], plan["reason"]) == ("native", "native")
            assert plan["brief_path"] is None and exp["id"] in plan["argv"]
            assert plan["cwd"] == exp["cwd"]
        assert Path(plan["argv"][0]).name == rt
    other = next(r for r in RUNTIMES if r != rt)
    top = stores.sessions(rt, top_level_only=True)[0]
    plan = stores.json("resume", f"{rt}:{top['id']}", "--in", other, "--dry-run")
    assert (plan["mode"], plan["reason"], plan["runtime"]) == ("new_session", "other_runtime", other)
    brief = Path(plan["brief_path"])
    assert not brief.exists() and str(brief) in plan["argv"][-1]
    assert brief.parent == Path(stores.env["SEGUE_HOME"]) / "handoffs"
    written = Path(stores.run("brief", f"{rt}:{top['id']}").stdout.strip())
    assert written.read_text() not in " ".join(plan["argv"])  # by path, never inlined


def test_resume_refusals(stores: Stores, tmp_path: Path) -> None:
    top = stores.sessions("codex", top_level_only=True)[0]
    p = stores.run("resume", f"codex:{top['id']}", check=False)  # no terminal, no --yes
    assert p.returncode == 1 and "--yes" in p.stderr
    p = stores.run("resume", "nosuchsession", "--dry-run", check=False)
    assert p.returncode == 1 and "no session matches" in p.stderr
    p = stores.run("resume", f"codex:{top['id']}", "--cwd", str(tmp_path / "gone"), "--dry-run", check=False)
    assert p.returncode == 1 and "does not exist" in p.stderr
    env = dict(stores.env, PATH="/usr/bin:/bin")
    p = subprocess.run([sys.executable, "-m", "segue", "resume", f"codex:{top['id']}", "--yes"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 1 and "npm install -g @openai/codex" in p.stderr
    # a dry run still shows the plan, and says launching it would fail
    p = subprocess.run([sys.executable, "-m", "segue", "resume", f"codex:{top['id']}", "--dry-run"], env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and json.loads(p.stdout)["argv"][0] == "codex"
    assert "would fail" in p.stderr and "npm install -g @openai/codex" in p.stderr
    p = stores.run("resume", "--bogus-flag", check=False)
    assert p.returncode == 2


def test_handoff_emit_in_one_process_claim_in_another(stores: Stores) -> None:
    exp = next(s for s in stores.sessions("claude") if s["scenario"] == "one")
    token = stores.run("handoff", "emit", f"claude:{exp['id']}", "--from", "terminal").stdout.strip()
    assert token.startswith("h_") and len(token) == 34
    listed = {s["id"]: s for s in stores.json("list", "--json")}
    assert listed[exp["id"]]["handed_off"]["surface"] == "terminal"
    status = stores.run("handoff", "status", "--json").stdout
    assert token not in status and exp["id"] in status
    out = json.loads(stores.run("handoff", "claim", "--as", "editor", "--json", input=token + "\n").stdout)
    assert out["session"]["id"] == exp["id"] and out["source_surface"] == "terminal"
    assert out["claimed_as"] == "editor"
    assert out["active_task"] == exp["latest_request"]
    assert out["tail"] and out["tail"][-1]["kind"] in ("message", "command", "edit", "tool")
    assert Path(out["brief_path"]).is_file() and out["plan"]["mode"] == "native"
    again = stores.run("handoff", "claim", token, "--json", check=False)
    assert again.returncode == 1 and "already claimed" in again.stderr
    registry = (Path(stores.env["SEGUE_HOME"]) / "handoff_tokens.json").read_text()
    assert token not in registry and token not in Path(out["brief_path"]).read_text()
    assert stores.json("list", "--json")[0]["handed_off"] is None or all(
        s["handed_off"] is None for s in stores.json("list", "--json") if s["id"] == exp["id"])


def test_claim_errors_are_distinct(stores: Stores) -> None:
    bad = stores.run("handoff", "claim", "not-a-token", check=False)
    unknown = stores.run("handoff", "claim", "h_" + "A" * 32, check=False)
    assert bad.returncode == unknown.returncode == 1
    assert "not a Segue handoff token" in bad.stderr and "no such handoff token" in unknown.stderr


def test_trace_links_sessions_across_runtimes(stores: Stores) -> None:
    for rt in RUNTIMES:
        cont = next(s for s in stores.sessions(rt) if s["scenario"] == "continued")
        src = cont["continues"]
        chain = stores.json("trace", f"{rt}:{cont['id']}", "--json")
        keys = [(c["runtime"], c["id"]) for c in chain]
        assert keys.index((src["runtime"], src["id"])) < keys.index((rt, cont["id"]))
        back = stores.json("trace", f"{src['runtime']}:{src['id']}", "--json")
        assert (rt, cont["id"]) in [(c["runtime"], c["id"]) for c in back]
    events = (Path(stores.env["SEGUE_HOME"]) / "events.jsonl").read_text().splitlines()
    linked = [json.loads(e) for e in events]
    assert all(e["event"] == "session.handoff" and e["fidelity"] == "observed" for e in linked)
    assert len({(e["session"]["runtime"], e["session"]["id"]) for e in linked}) == len(linked) >= len(RUNTIMES)


def test_every_command_leaves_the_stores_untouched(stores: Stores, tmp_path: Path) -> None:
    roots = [stores.root / rt / "home" for rt in RUNTIMES]
    before = {str(r): snapshot(r) for r in roots}
    top = stores.sessions("opencode", top_level_only=True)[0]
    stores.run("list", "--json", "--all")
    for rt in RUNTIMES:
        for exp in stores.sessions(rt):
            stores.run("brief", f"{rt}:{exp['id']}", "--json")
    stores.run("resume", f"opencode:{top['id']}", "--dry-run")
    token = stores.run("handoff", "emit", f"opencode:{top['id']}").stdout.strip()
    stores.run("handoff", "claim", token, "--json")
    stores.run("trace", f"opencode:{top['id']}")
    after = {str(r): snapshot(r) for r in roots}
    assert after == before
    # negative control: the same check notices a single touched file
    victim = next(p for p, v in before[str(roots[0])].items() if v is not None)
    os.utime(victim, ns=(1, 1))
    assert snapshot(roots[0]) != before[str(roots[0])]


def test_nothing_found_says_where_it_looked(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_",
                                                                   "XDG_"))}
    env.update(HOME=str(tmp_path), SEGUE_HOME=str(tmp_path / "s"))
    p = subprocess.run([sys.executable, "-m", "segue", "list"], env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0
    assert str(tmp_path / ".claude") in p.stderr and str(tmp_path / ".codex") in p.stderr
    assert "CODEX_HOME" in p.stderr and "segue demo" in p.stderr
    assert REAL.is_dir()
