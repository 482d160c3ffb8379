"""`segue resume` for real: plans launched under a pseudo-terminal against the real runtime CLIs, offline.

Each runtime first writes a fresh session into one scratch HOME (non-interactively, as the fixture
generators do), so nothing committed is touched. Then `segue resume REF --yes` runs in a tmux pane inside a
loopback-only network namespace beside the fake model, and a turn is typed. Checked:
- the process Segue exec'd (the pane's own child: Segue replaced itself) is exactly the `--dry-run` argv, in
  the plan's directory, without Segue's variables;
- a native resume appends the typed turn to the same session id, and no session appears;
- a new session from a brief gets a first prompt naming the brief and carrying the marker, and
  `segue list --json` and `segue trace` link it to its source.
Store facts are read straight from each runtime's files here, never through Segue's readers.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.realruntimes import harness as h
from tests.realruntimes import harness_chat as hc

pytestmark = [pytest.mark.slow, pytest.mark.realruntime]

from segue.stores import RUNTIMES  # noqa: E402  (the registry: every runtime Segue reads)

SERVER = h.REPO / "server"
NETGUARD = h.REPO / "tests" / "netguard"
SOURCE_PROMPT = "Summarise the plan for the {rt} resume test"  # the fake model answers "OK."
TYPED_PROMPT = "Say OK to the segue {rt} resume test"
BRIEF_ANSWER = "I read the brief. Shall I continue with the task it describes?"  # scenario.py "handoff brief"

# The interactive forms each CLI was seen to accept under a terminal (kept apart from resume.py on purpose).
NATIVE_ARGS = {"claude": ["--resume", "{id}"], "codex": ["resume", "{id}"], "opencode": ["--session", "{id}"],
               "cline": ["--auto-approve", "false", "--id", "{id}"], "gemini": ["--resume", "{id}"]}
NEW_ARGS = {"claude": [], "codex": [], "opencode": ["--prompt"],
            # without --tui, Cline runs a prompt argument headless and exits (checked on 3.0.65)
            "cline": ["--auto-approve", "false", "--tui"],
            "gemini": ["--prompt-interactive"]}  # -p would be one-shot (checked on 0.61.0)
# what a TUI shows once it takes input, any of them (Claude Code 2.1.3xx's footer names the permission mode instead)
READY = {"claude": ("for shortcuts", "shift+tab to cycle"), "codex": ("for shortcuts",),
         "opencode": ("ctrl+p commands",), "cline": ("Ask anything",), "gemini": ("Type your message",)}
# seconds a TUI shows its input box before it takes keys (keys typed earlier are lost): Cline's hub is still
# loading the session, Gemini CLI's resumed history is still being drawn
SETTLE = {"cline": 3.0, "gemini": 6.0}
# the command that quits a TUI, typed and entered; the others quit on Ctrl+C
QUIT = {"claude": "/exit", "gemini": "/quit"}


def marker(rt: str, sid: str) -> str:
    return f"[segue-handoff v1 from={rt}:{sid}]"


def require(rt: str) -> Path:
    """The runtime's CLI; a missing one fails the test (CI installs every one)."""
    binary = h.runtime_bin(rt)
    if binary is None:
        pytest.fail(f"{rt} is not installed: run tests/realruntimes/install.sh {rt}")
    missing = [t for t in ("tmux", "unshare", "git") if shutil.which(t) is None]
    if os.geteuid() != 0 or missing:
        pytest.fail(f"real-runtime tests need root, tmux, unshare and git (missing: {missing or 'root'})")
    return binary


# ---------------------------------------------------------------- the stores, read directly

def _jsonl(path: Path) -> list[dict[str, Any]]:
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue  # a line being written right now
    return out


class Store:
    """One runtime's sessions in the scratch HOME: ids of top-level sessions and their (role, text) turns."""

    def __init__(self, rt: str, home: Path) -> None:
        self.rt, self.home = rt, home

    def ids(self) -> set[str]:
        ids: set[str] = getattr(self, f"_ids_{self.rt}")()
        return ids

    def turns(self, sid: str) -> list[tuple[str, str]]:
        try:
            turns: list[tuple[str, str]] = getattr(self, f"_turns_{self.rt}")(sid)
            return turns
        except (OSError, ValueError, KeyError):
            return []  # not written yet, or mid-write

    def _ids_claude(self) -> set[str]:
        return {p.stem for p in (self.home / ".claude" / "projects").glob("*/*.jsonl")}

    def _ids_codex(self) -> set[str]:
        return {p.stem[-36:] for p in (self.home / ".codex" / "sessions").rglob("rollout-*.jsonl")}

    def _ids_opencode(self) -> set[str]:
        return {r[0] for r in self._oc("SELECT id FROM session WHERE parent_id IS NULL")}

    def _ids_cline(self) -> set[str]:
        d = self.home / ".cline" / "data" / "sessions"
        return {p.name for p in d.iterdir() if p.is_dir()} if d.is_dir() else set()

    def _turns_claude(self, sid: str) -> list[tuple[str, str]]:
        (path,) = (self.home / ".claude" / "projects").glob(f"*/{sid}.jsonl")
        out = []
        for r in _jsonl(path):
            if r.get("sessionId", sid) != sid:  # file-history-snapshot records carry none
                raise ValueError(f"{path} has a record of session {r.get('sessionId')}")
            content = (r.get("message") or {}).get("content")
            if r.get("type") == "user" and isinstance(content, str) and not content.startswith("<"):
                out.append(("user", content))  # typed prompts; "<local-command…>" records are /exit
            elif r.get("type") == "assistant" and isinstance(content, list):
                out += [("assistant", b["text"]) for b in content if b.get("type") == "text"]
        return out

    def _turns_codex(self, sid: str) -> list[tuple[str, str]]:
        (path,) = (self.home / ".codex" / "sessions").rglob(f"rollout-*-{sid}.jsonl")
        out = []
        for r in _jsonl(path):
            item = (r.get("payload") or {}).get("item") or {}
            if r["payload"].get("type") == "item_completed" and item.get("type") in ("UserMessage", "AgentMessage"):
                role = "user" if item["type"] == "UserMessage" else "assistant"
                out.append((role, "".join(c.get("text", "") for c in item["content"])))
        return out

    def _oc(self, sql: str) -> list[tuple[Any, ...]]:
        db = self.home / ".local" / "share" / "opencode" / "opencode.db"
        return hc.wal_rows(db, sql) if db.exists() else []  # read from a copy: never touch the live DB

    def _turns_opencode(self, sid: str) -> list[tuple[str, str]]:
        rows = self._oc("SELECT m.data, p.data FROM part p JOIN message m ON m.id = p.message_id "
                        f"WHERE p.session_id = '{sid}' ORDER BY m.time_created, p.time_created, p.id")
        out = []
        for m, p in rows:
            part = json.loads(p)
            if part.get("type") == "text" and part.get("text"):
                out.append((json.loads(m)["role"], part["text"]))
        return out

    def _turns_cline(self, sid: str) -> list[tuple[str, str]]:
        doc = json.loads((self.home / ".cline" / "data" / "sessions" / sid / f"{sid}.messages.json").read_text())
        return [(m["role"], b["text"]) for m in doc["messages"] for b in m.get("content", [])
                if b.get("type") == "text"]

    def _gemini_files(self) -> dict[Path, list[dict[str, Any]]]:
        """Top-level session files (subagents live one level down) with their records. A resume in another
        minute adds a startup-only twin with the same sessionId: ids are sets, turns take the fullest file."""
        return {p: _jsonl(p) for p in (self.home / ".gemini" / "tmp").glob("*/chats/session-*.jsonl")}

    def _ids_gemini(self) -> set[str]:
        return {recs[0]["sessionId"] for recs in self._gemini_files().values() if recs and "sessionId" in recs[0]}

    def _turns_gemini(self, sid: str) -> list[tuple[str, str]]:
        best: list[tuple[str, str]] = []
        for recs in self._gemini_files().values():
            if not recs or recs[0].get("sessionId") != sid:
                continue
            msgs: dict[str, dict[str, Any]] = {}  # a re-appended message keeps its first place (JS Map.set)
            for r in recs[1:]:
                if isinstance((r.get("$set") or {}).get("messages"), list):
                    msgs = {m["id"]: m for m in r["$set"]["messages"]}
                elif "$rewindTo" in r:
                    keys = list(msgs)
                    cut = keys.index(r["$rewindTo"]) if r["$rewindTo"] in msgs else 0
                    msgs = {k: msgs[k] for k in keys[:cut]}
                elif r.get("type") in ("user", "gemini") and "id" in r:
                    msgs[r["id"]] = r
            turns = []
            for m in msgs.values():
                c = m.get("content")
                text = c if isinstance(c, str) else "".join(
                    p.get("text", "") for p in c if isinstance(p, dict)) if isinstance(c, list) else ""
                if m["type"] == "user" and text and not text.startswith(("<session_context>", "<hook_context>")):
                    turns.append(("user", text))
                elif m["type"] == "gemini" and text:
                    turns.append(("assistant", text))
            best = max(best, turns, key=len)
        return best


def unwrap(text: str) -> str:
    """The prompt as typed: OpenCode's run quotes argv words, Cline wraps user text in <user_input>."""
    m = re.fullmatch(r'<user_input[^>]*>(.*)</user_input>', text, re.S)
    text = m.group(1) if m else text
    return text[1:-1] if len(text) > 1 and text[0] == text[-1] == '"' else text


# ---------------------------------------------------------------- the scratch HOME and Segue

@dataclass
class Source:
    rt: str
    id: str
    cwd: Path
    prompt: str


@dataclass
class Scratch:
    root: Path
    home: Path = field(init=False)
    state: Path = field(init=False)
    env: dict[str, str] = field(init=False)
    sources: dict[str, Source] = field(default_factory=dict)
    stopped_hubs: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.home, self.state = self.root / "home", self.root / "segue-state"
        works = [self.work(rt) for rt in RUNTIMES]
        env: dict[str, str] = {}
        for rt in RUNTIMES:
            h.prepare_home(rt, self.home, trusted=works)
            env.update(h.runtime_env(rt, self.home))
        bins = [str(b.parent) for rt in RUNTIMES if (b := h.runtime_bin(rt)) is not None]
        env["PATH"] = os.pathsep.join([*bins, env["PATH"]])
        env["SEGUE_HOME"] = str(self.state)
        # Segue in the pane: its sources, and the loopback-only guard on its own sockets too
        env["PYTHONPATH"] = os.pathsep.join([str(h.REPO), str(SERVER), str(NETGUARD)])
        self.env = env

    def work(self, rt: str) -> Path:
        return self.root / "work" / rt

    def store(self, rt: str) -> Store:
        return Store(rt, self.home)

    def segue(self, *args: str) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([sys.executable, "-m", "segue", *args], env=self.env, cwd=self.root,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, f"segue {shlex.join(args)} exited {p.returncode}\n{p.stderr}"
        return p

    def dry_run(self, *args: str) -> dict[str, Any]:
        plan: dict[str, Any] = json.loads(self.segue("resume", *args, "--dry-run").stdout)
        return plan

    def offline(self, argv: list[str], cwd: Path, timeout: float = 180) -> str:
        r = h.run_offline(argv, cwd, self.env, timeout=timeout)
        assert r.returncode == 0, f"{shlex.join(argv)}: rc {r.returncode}\n{r.stdout[-1500:]}\n{r.stderr[-1500:]}"
        return r.stdout

    def stop_cline_hub(self, wait: float = 5.0) -> None:
        """Cline leaves a hub daemon behind (spawned after the CLI exits): stop exactly the pid its lock
        file names, once its argv shows it is the one started from this scratch root."""
        lock = self.home / ".cline" / "data" / "locks" / "hub" / "production.json"
        deadline = time.monotonic() + wait
        while True:
            try:
                pid = int(json.loads(lock.read_text())["pid"])
            except (OSError, ValueError, KeyError):
                pid = 0
            if pid and pid not in self.stopped_hubs and hc.stop_pid(pid, f"--cline-hub-daemon --cwd {self.root}/"):
                self.stopped_hubs.append(pid)
                return
            if time.monotonic() > deadline:
                return
            time.sleep(0.25)

    def source(self, rt: str) -> Source:
        """A fresh session of rt, written by the real CLI non-interactively (once per module)."""
        if rt in self.sources:
            return self.sources[rt]
        binary = str(require(rt))
        cwd = h.make_git_repo(self.work(rt), f"feature/{rt}-resume")
        prompt = SOURCE_PROMPT.format(rt=rt)
        before = self.store(rt).ids()
        sid: str = getattr(self, f"_first_session_{rt}")(binary, prompt, cwd, before)
        assert self.store(rt).ids() - before == {sid}
        assert [unwrap(t) for role, t in self.store(rt).turns(sid) if role == "user"] == [prompt]
        self.sources[rt] = Source(rt, sid, cwd, prompt)
        return self.sources[rt]


    # each runtime's first session, run non-interactively: (binary, prompt, cwd, ids before) -> its id

    def _first_session_claude(self, binary: str, prompt: str, cwd: Path, before: set[str]) -> str:
        out = self.offline([binary, "-p", prompt, "--model", "fake-model", "--output-format", "json"], cwd)
        sid: str = json.loads(out)["session_id"]
        return sid

    def _first_session_codex(self, binary: str, prompt: str, cwd: Path, before: set[str]) -> str:
        out = self.offline([binary, "exec", "--json", "--skip-git-repo-check", prompt], cwd)
        (sid,) = [e["thread_id"] for e in events(out) if e.get("type") == "thread.started"]
        return str(sid)

    def _first_session_opencode(self, binary: str, prompt: str, cwd: Path, before: set[str]) -> str:
        out = self.offline([binary, "run", "--format", "json", prompt], cwd)
        (sid,) = {e["sessionID"] for e in events(out) if "sessionID" in e}
        return str(sid)

    def _first_session_cline(self, binary: str, prompt: str, cwd: Path, before: set[str]) -> str:
        try:
            self.offline([binary, "auth", "-p", "openai-compatible", "-k", "dummy-key", "-m", "fake-model",
                          "-b", f"http://127.0.0.1:{h.DEFAULT_PORT}/v1"], cwd)  # starts no hub
            self.offline([binary, "--json", prompt], cwd)  # prints no session id: the new directory
        finally:
            self.stop_cline_hub()
        (sid,) = self.store("cline").ids() - before
        return sid

    def _first_session_gemini(self, binary: str, prompt: str, cwd: Path, before: set[str]) -> str:
        out = self.offline([binary, "-p", prompt, "--output-format", "json"], cwd)
        sid: str = json.loads(out[out.index("{"):])["session_id"]  # after any warnings it logs first
        return sid


def events(stdout: str) -> list[dict[str, Any]]:
    """The JSON events a CLI printed one per line (other lines are its logging)."""
    return [json.loads(line) for line in stdout.splitlines() if line.startswith("{")]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Scratch]:
    s = Scratch(tmp_path_factory.mktemp("resume-real"))
    yield s
    s.stop_cline_hub(wait=0)


# ---------------------------------------------------------------- a pane in its own namespace

@dataclass
class Launched:
    pid: int
    cmdline: list[str]
    cwd: str
    env_keys: set[str]


class Pane:
    """argv in a detached 200x50 tmux pane, inside `unshare -n` beside the fake model (harness netns-run).
    A shell in the pane records netns-run's exit status (the argv's own) in a file: tmux 3.3 does not
    always report #{pane_dead_status}. Process tree: shell -> netns-run -> argv (or what argv exec'd)."""

    def __init__(self, argv: list[str], cwd: Path, env: dict[str, str], tmp: Path) -> None:
        self.sock = f"segue-rr-{uuid.uuid4().hex[:10]}"
        self.status_file = tmp / f"{self.sock}.status"
        conf = tmp / "tmux.conf"
        conf.write_text("set -g remain-on-exit on\nset -g history-limit 5000\n")  # keep a quick exit visible
        record = f'"$@"; echo $? > {shlex.quote(str(self.status_file))}'
        shell = "exec env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + \
            shlex.join(["sh", "-c", record, "sh", *h.netns_argv(argv)])
        self._tmux("-f", str(conf), "new-session", "-d", "-s", "t", "-x", "200", "-y", "50", "-c", str(cwd), shell)
        self.pid = int(self._display("#{pane_pid}"))

    def _tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["tmux", "-L", self.sock, *args], capture_output=True, text=True, check=check)

    def _display(self, fmt: str) -> str:
        return self._tmux("display-message", "-p", "-t", "t", fmt, check=False).stdout.strip()

    def screen(self, history: bool = False) -> str:
        return self._tmux("capture-pane", "-p", "-t", "t", *(["-S", "-5000"] if history else []),
                          check=False).stdout

    def type(self, text: str) -> None:
        self._tmux("send-keys", "-t", "t", "-l", text)

    def key(self, name: str) -> None:
        self._tmux("send-keys", "-t", "t", name)

    def dead(self) -> bool:
        return self._display("#{pane_dead}") == "1"

    def status(self) -> str:
        try:
            return self.status_file.read_text().strip()
        except OSError:
            return "none recorded"

    def wait(self, cond: Callable[[], bool], what: str, timeout: float = 90) -> None:
        deadline = time.monotonic() + timeout
        while not cond():
            if self.dead() or time.monotonic() > deadline:
                state = "the pane exited" if self.dead() else f"timed out after {timeout}s"
                raise AssertionError(f"{state} waiting for {what}; screen:\n{self.screen(history=True)[-4000:]}")
            time.sleep(0.25)

    def launched(self) -> Launched:
        (netns,) = _children(self.pid)
        kids = _children(netns)
        assert len(kids) == 1, f"expected one child of netns-run ({netns}), found {kids}"
        proc = Path(f"/proc/{kids[0]}")
        env = proc.joinpath("environ").read_bytes().split(b"\0")
        return Launched(pid=kids[0], cmdline=proc.joinpath("cmdline").read_bytes().decode().split("\0")[:-1],
                        cwd=os.readlink(proc / "cwd"),
                        env_keys={e.split(b"=", 1)[0].decode() for e in env if b"=" in e})

    def close(self) -> None:
        """Stop what the pane still runs (a TUI may outlive the hang-up), then the tmux server."""
        if not self.dead():
            for netns in _children(self.pid):
                for pid in _children(netns):
                    hc.stop_pid(pid, str(h.REPO))  # Segue or the runtime it became: both live under REPO
        self._tmux("kill-server", check=False)


def _children(pid: int) -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _ppid(p) == pid]


def _ppid(proc: Path) -> int:
    try:
        return int(proc.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
    except (OSError, IndexError, ValueError):
        return -1


def quit_tui(rt: str, pane: Pane) -> str:
    """Quit the TUI as a person would; returns the pane's exit status. A Ctrl+C that lands while a turn
    is still finishing only interrupts it (Codex), so quit again until the pane exits."""
    for _ in range(3):
        if rt in QUIT:
            pane.type(QUIT[rt])
            time.sleep(0.5)
            pane.key("Enter")
        else:
            if rt == "cline" and "ClinePass" in pane.screen():
                pane.key("Escape")  # a promotion box Cline 3.0.65 shows over a new session (Enter opens a URL)
                time.sleep(0.5)
            pane.key("C-c")
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if pane.dead():
                return pane.status()
            time.sleep(0.25)
    raise AssertionError(f"the {rt} TUI did not quit; screen:\n{pane.screen()[-3000:]}")


def run_segue_in_pane(s: Scratch, rt: str, args: list[str], play: Callable[[Pane, Launched], None],
                      tmp: Path) -> tuple[Launched, str]:
    """`segue resume ARGS --yes` in a pane started in the scratch root (not the session's directory):
    wait for the runtime's TUI, note what Segue exec'd, play the turn, quit. Returns (launched, exit status)."""
    pane = Pane([sys.executable, "-m", "segue", "resume", *args, "--yes"], s.root, s.env, tmp)
    try:
        pane.wait(lambda: any(marker in pane.screen() for marker in READY[rt]), f"the {rt} TUI")
        launched = pane.launched()
        play(pane, launched)
        return launched, quit_tui(rt, pane)
    finally:
        pane.close()
        if rt == "cline":
            s.stop_cline_hub()


def check_exec(launched: Launched, plan: dict[str, Any], s: Scratch) -> None:
    """Segue replaced itself with exactly the dry-run argv, in the plan's directory, without SEGUE_*."""
    argv = plan["argv"]
    head = launched.cmdline[: len(launched.cmdline) - len(argv)]
    assert launched.cmdline[-len(argv):] == argv, (launched.cmdline, argv)
    assert head in ([], ["node"]), launched.cmdline  # Codex's launcher is `#!/usr/bin/env node`
    assert os.path.realpath(launched.cwd) == os.path.realpath(plan["cwd"])
    assert not {k for k in launched.env_keys if k.startswith("SEGUE_")}, launched.env_keys
    assert "SEGUE_HOME" in s.env and "HOME" in launched.env_keys


# ---------------------------------------------------------------- the tests

@pytest.mark.parametrize("rt", RUNTIMES)
def test_native_resume_runs_the_dry_run_argv_and_appends_to_the_same_session(
        rt: str, scratch: Scratch, tmp_path: Path) -> None:
    src = scratch.source(rt)
    store = scratch.store(rt)
    plan = scratch.dry_run(f"{rt}:{src.id}")
    binary = str(h.runtime_bin(rt))
    assert (plan["mode"], plan["reason"], plan["brief_path"]) == ("native", "native", None)
    assert plan["argv"] == [binary, *(a.format(id=src.id) for a in NATIVE_ARGS[rt])]
    assert os.path.realpath(plan["cwd"]) == os.path.realpath(src.cwd)

    ids_before, turns_before = store.ids(), store.turns(src.id)
    typed = TYPED_PROMPT.format(rt=rt)
    want = [("user", typed), ("assistant", "OK.")]

    def play(pane: Pane, launched: Launched) -> None:
        time.sleep(SETTLE.get(rt, 0))
        pane.type(typed)
        time.sleep(2 if rt == "codex" else 0.7)  # Codex takes keys and Enter in one burst as a paste
        pane.key("Enter")
        pane.wait(lambda: [(r, unwrap(t)) for r, t in store.turns(src.id)[-2:]] == want,
                  f"the typed turn in {rt}:{src.id}")

    launched, status = run_segue_in_pane(scratch, rt, [f"{rt}:{src.id}"], play, tmp_path)
    check_exec(launched, plan, scratch)
    assert status == "0", f"{rt} exited with status {status}"
    turns = store.turns(src.id)
    assert turns[: len(turns_before)] == turns_before  # appended; the earlier turns untouched
    assert [(r, unwrap(t)) for r, t in turns[len(turns_before):]] == want
    assert store.ids() == ids_before  # the same session, no new one
    # Segue's reader on what the TUI wrote: the typed turn is the session's latest request
    facts = json.loads(scratch.segue("brief", f"{rt}:{src.id}", "--json").stdout)
    assert (facts["first_request"], facts["latest_request"], facts["last_agent_message"]) == (src.prompt, typed, "OK.")


@pytest.mark.parametrize("rt", RUNTIMES)
def test_new_session_from_a_brief_carries_the_marker_and_is_traced(rt: str, scratch: Scratch, tmp_path: Path) -> None:
    src = scratch.source(rt)
    new = launch_new_session(scratch, src, rt, ["--new"], tmp_path)
    assert new.continues == {"runtime": rt, "id": src.id}
    chain = json.loads(scratch.segue("trace", f"{rt}:{new.id}", "--json").stdout)
    assert [(c["runtime"], c["id"]) for c in chain] == [(rt, src.id), (rt, new.id)]
    assert chain[1]["continues"] == {"runtime": rt, "id": src.id}
    text = scratch.segue("trace", f"{rt}:{src.id}").stdout  # from the source, forwards, as people read it
    assert text.index(src.id) < text.index(new.id)


@pytest.mark.parametrize(("source", "target"), [("claude", "codex"), ("codex", "claude"), ("claude", "gemini")])
def test_handoff_across_runtimes_is_traced(source: str, target: str, scratch: Scratch, tmp_path: Path) -> None:
    require(target)
    src = scratch.source(source)
    new = launch_new_session(scratch, src, target, ["--in", target], tmp_path)
    chain = json.loads(scratch.segue("trace", f"{target}:{new.id}", "--json").stdout)
    assert [(c["runtime"], c["id"]) for c in chain][:2] == [(source, src.id), (target, new.id)]
    events = [json.loads(line) for line in (scratch.state / "events.jsonl").read_text().splitlines()]
    assert {"source_harness": source, "source_session_id": src.id} in [
        e["handoff"] for e in events if e["session"] == {"runtime": target, "id": new.id}]


@dataclass
class NewSession:
    id: str
    continues: dict[str, str] | None  # as `segue list --json` shows it


def launch_new_session(s: Scratch, src: Source, target: str, flags: list[str], tmp: Path) -> NewSession:
    """Dry-run, then `segue resume … --yes` for a new session in target: check the exec, the stored first
    prompt, the brief it names, and what `segue list --json` says the new session continues."""
    ref = f"{src.rt}:{src.id}"
    plan = s.dry_run(ref, *flags)
    assert plan["mode"] == "new_session" and plan["runtime"] == target
    assert plan["argv"][:-1] == [str(h.runtime_bin(target)), *NEW_ARGS[target]]
    prompt = plan["argv"][-1]
    assert plan["brief_path"] in prompt and prompt.splitlines()[-1] == marker(src.rt, src.id)
    store = s.store(target)
    before = store.ids()

    def fresh() -> list[str]:
        return sorted(store.ids() - before)

    def answered() -> bool:
        new = fresh()
        return len(new) == 1 and any(r == "assistant" and t == BRIEF_ANSWER for r, t in store.turns(new[0]))

    def play(pane: Pane, launched: Launched) -> None:
        pane.wait(answered, f"the new {target} session to answer its first prompt")

    launched, status = run_segue_in_pane(s, target, [ref, *flags], play, tmp)
    assert status == "0", f"{target} exited with status {status}"
    (new_id,) = fresh()
    first = unwrap(next(t for r, t in store.turns(new_id) if r == "user"))
    assert first == launched.cmdline[-1]  # the runtime stored the prompt Segue gave it, unchanged
    brief = Path(re.search(r"Read the handoff brief at (\S+\.md) ", first).group(1))  # type: ignore[union-attr]
    assert first.splitlines()[-1] == marker(src.rt, src.id)
    # the exec'd argv is the dry run's but for the brief's path: the dry run names the brief it would write
    # then (and writes none), the launch writes its own
    assert brief.parent == s.state / "handoffs" == Path(plan["brief_path"]).parent
    check_exec(launched, dict(plan, argv=[*plan["argv"][:-1], prompt.replace(plan["brief_path"], str(brief))]), s)
    assert brief.stat().st_mode & 0o777 == 0o600
    assert src.prompt in brief.read_text() and src.id in brief.read_text()
    listed = json.loads(s.segue("list", "--json", "--runtime", target).stdout)
    (entry,) = [e for e in listed if e["id"] == new_id]
    return NewSession(id=new_id, continues=entry["continues"])
