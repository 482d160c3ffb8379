"""Shared helpers for running the real runtimes offline: binaries, homes, env, netns, tmux, pruning.

Offline model: the runtime and the fake model server share a network namespace whose only interface is
loopback (``unshare -n``, root on the fixture machine). Two ways in:
- run a whole program isolated: ``reexec_in_netns()`` at its start (the fixture generator does this), then
  ``serve_fake_model(port)`` in-process and plain ``subprocess`` calls;
- run one command isolated from outside: ``run_offline(argv, ...)`` / ``netns_argv(argv, port)``, which wrap
  it as ``unshare -n python -m tests.realruntimes.harness netns-run --port P -- argv…``: that child brings
  ``lo`` up, serves the fake model on P and runs argv. ``run_tty`` uses the same wrapper as the pane
  command when ``offline=True``, so the TUI and its model share the namespace.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from tests.realruntimes.scenario import Action

REPO = Path(__file__).resolve().parents[2]
RUNTIMES = REPO / ".runtimes"
FIXTURES = REPO / "tests" / "fixtures" / "real"
GEN_BASE = Path("/tmp/segue-fx")
BIN_NAMES = {"claude": "claude", "codex": "codex", "opencode": "opencode", "cline": "cline", "gemini": "gemini",
             "gemini-legacy": "gemini"}
DEFAULT_PORT = 18080
DUMMY_KEY = "sk-ant-api03-segue-fake-key-0000000000000000000000000000AA"
GEMINI_DUMMY_KEY = "segue-fake-gemini-key"

# What copy_pruned never copies: credentials, caches, logs, binaries, shell snapshots (names or suffixes).
PRUNE_NAMES = frozenset({
    "auth.json", ".credentials.json", "providers.json", "secrets.json", "installation_id",
    "node_modules", "cache", "caches", ".cache", "log", "logs", "shell-snapshots", "shell_snapshots",
    "snapshot", "snapshots", "statsig", "telemetry", "bin", "tmp", ".tmp", "plugins", "skills",
    "debug", "backups", "ide", "session-env", "todos", "file-history", "thread-writer-locks", "locks",
    "paste-cache", "downloads", "packages", "app-server-daemon", "app-server-control",
    "package.json", "package-lock.json", "bun.lock", ".gitignore",
})


def runtime_bin(rt: str) -> Path | None:
    """The runtime's CLI installed by install.sh, or None when it is not installed."""
    p = RUNTIMES / rt / "node_modules" / ".bin" / BIN_NAMES[rt]
    return p if p.exists() else None


def runtime_version(rt: str, env: dict[str, str] | None = None) -> str:
    """The version number from the runtime's own ``--version`` ("codex-cli 0.171.0" -> "0.171.0")."""
    binary = runtime_bin(rt)
    if binary is None:
        raise FileNotFoundError(f"{rt} is not installed: run tests/realruntimes/install.sh {rt}")
    out = subprocess.run([str(binary), "--version"], capture_output=True, text=True, timeout=60,
                         env=env or minimal_env(Path("/tmp")), check=True)
    line = out.stdout.strip().splitlines()[0]
    m = re.search(r"\d+\.\d+\.\d+\S*", line)
    return m.group(0) if m else line


# ---------------------------------------------------------------- env and homes

def minimal_env(home: Path) -> dict[str, str]:
    """A clean environment: no XDG_*, no proxies, no user tokens; HOME is the runtime's own."""
    path = os.pathsep.join(p for p in ("/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin")
                           if Path(p).is_dir())
    return {"PATH": path, "HOME": str(home), "LANG": "C.UTF-8", "TERM": "xterm-256color",
            "SHELL": "/bin/bash", "USER": os.environ.get("USER", "root"), "TZ": "UTC"}


def runtime_env(rt: str, home: Path, port: int = DEFAULT_PORT) -> dict[str, str]:
    """The environment that points runtime rt at the fake model on 127.0.0.1:port, offline switches on."""
    env = minimal_env(home)
    base = f"http://127.0.0.1:{port}"
    if rt == "claude":
        env.update({
            "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": DUMMY_KEY,
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1",
            "CLAUDE_CODE_DISABLE_FEEDBACK_SURVEY": "1", "DISABLE_GROWTHBOOK": "1",
            "DISABLE_INSTALLATION_CHECKS": "1", "IS_SANDBOX": "1",
        })
    elif rt == "codex":
        env.update({"CODEX_HOME": str(home / ".codex"), "FAKE_API_KEY": "fake-key"})
    elif rt == "opencode":
        env.update({k: "1" for k in (
            "OPENCODE_DISABLE_AUTOUPDATE", "OPENCODE_DISABLE_MODELS_FETCH", "OPENCODE_DISABLE_LSP_DOWNLOAD",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS", "OPENCODE_DISABLE_SHARE", "OPENCODE_DISABLE_CLAUDE_CODE")})
    elif rt == "cline":
        env["CLINE_NO_AUTO_UPDATE"] = "1"
    elif rt in ("gemini", "gemini-legacy"):
        # the @google/genai SDK takes its base URL from GOOGLE_GEMINI_BASE_URL; error reports go to TMPDIR
        env.update({"GOOGLE_GEMINI_BASE_URL": base, "GEMINI_API_KEY": GEMINI_DUMMY_KEY,
                    "TMPDIR": str(home / ".tmp"), "GEMINI_TELEMETRY_ENABLED": "false", "NO_BROWSER": "1"})
    return env


def _codex_config(port: int, trusted: Iterable[Path]) -> str:
    lines = [
        'model = "fake-model"', 'model_provider = "fake"', 'approval_policy = "never"',
        'sandbox_mode = "danger-full-access"', "check_for_update_on_startup = false",
        "", "[model_providers.fake]", 'name = "Fake"', f'base_url = "http://127.0.0.1:{port}/v1"',
        'wire_api = "responses"', 'env_key = "FAKE_API_KEY"',
        "", "[analytics]", "enabled = false", "", "[feedback]", "enabled = false",
        # the 0.171 TUI otherwise hands turns to a long-lived `codex app-server --managed-daemon` (socket in
        # /tmp/codex-daemon-<uid>/) that outlives the TUI and its network namespace
        "", "[features]", "daemon_auto_start = false",
        # the TUI's first-run screens: model migration notices, trust of the project dir
        "", "[notice]", "hide_full_access_warning = true", "hide_rate_limit_model_nudge = true",
    ]
    for p in trusted:
        lines += ["", f'[projects."{p}"]', 'trust_level = "trusted"']
    return "\n".join(lines) + "\n"


def _claude_state(trusted: Iterable[Path]) -> dict[str, object]:
    # ~/.claude.json: skip onboarding, the theme picker, the API-key confirmation and the trust dialog
    return {
        "hasCompletedOnboarding": True, "lastOnboardingVersion": "2.1.197", "theme": "dark",
        "numStartups": 1, "installMethod": "npm", "autoUpdates": False,
        "customApiKeyResponses": {"approved": [DUMMY_KEY[-20:]], "rejected": []},
        "bypassPermissionsModeAccepted": False, "hasSeenTasksHint": True,
        "projects": {str(p): {"hasTrustDialogAccepted": True, "hasCompletedProjectOnboarding": True,
                              "projectOnboardingSeenCount": 1, "allowedTools": []} for p in trusted},
    }


def prepare_home(rt: str, home: Path, port: int = DEFAULT_PORT, trusted: Iterable[Path] = ()) -> None:
    """Write the config files runtime rt needs to talk to the fake model; trusted dirs skip trust prompts."""
    home.mkdir(parents=True, exist_ok=True)
    trusted = list(trusted)
    if rt == "claude":
        (home / ".claude").mkdir(exist_ok=True)
        (home / ".claude.json").write_text(json.dumps(_claude_state(trusted), indent=2) + "\n")
        settings = {"autoUpdates": False, "includeCoAuthoredBy": False,
                    "permissions": {"allow": ["Bash", "Write", "Read", "Agent"]}}
        (home / ".claude" / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    elif rt == "codex":
        (home / ".codex").mkdir(exist_ok=True)
        (home / ".codex" / "config.toml").write_text(_codex_config(port, trusted))
    elif rt == "opencode":
        cfg = home / ".config" / "opencode"
        cfg.mkdir(parents=True, exist_ok=True)
        provider = {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "Fake",
                             "options": {"baseURL": f"http://127.0.0.1:{port}/v1", "apiKey": "dummy-key"},
                             "models": {"fake-model": {"name": "Fake Model", "tool_call": True}}}}
        doc = {"autoupdate": False, "share": "disabled", "model": "fake/fake-model",
               "small_model": "fake/fake-model", "provider": provider}
        (cfg / "opencode.json").write_text(json.dumps(doc, indent=2) + "\n")
    elif rt in ("gemini", "gemini-legacy"):
        _gemini_home(home, legacy=rt == "gemini-legacy")
    # cline: `cline auth …` writes its provider file; engineer B's generator runs it


def _gemini_home(home: Path, legacy: bool = False) -> None:
    """~/.gemini/settings.json (API-key auth, no telemetry, updates or trust dialog) and a user policy that
    lets the scripted tools run without a confirmation (the headless `-p` mode refuses what would ask)."""
    gem = home / ".gemini"
    (gem / "policies").mkdir(parents=True, exist_ok=True)
    (home / ".tmp").mkdir(exist_ok=True)
    settings = {"security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}},
                "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                "ide": {"enabled": False, "hasSeenNudge": True}}
    if legacy:  # 0.24 has no user policy files; its allow-list setting lets the tools run headless
        settings["tools"] = {"allowed": ["run_shell_command", "write_file"]}
    (gem / "settings.json").write_text(json.dumps(settings, indent=2) + "\n")
    redirect = "allow_redirection" if legacy else "allowRedirection"  # the TOML key was renamed after 0.24
    (gem / "policies" / "segue-fixture.toml").write_text(
        '[[rule]]\ntoolName = ["run_shell_command", "write_file", "invoke_agent"]\n'
        f'decision = "allow"\n{redirect} = true\npriority = {999 if legacy else 100}\n')


# ---------------------------------------------------------------- network namespace

def isolated() -> bool:
    """True when this process's network namespace has only loopback (read via /proc/self, not /sys)."""
    try:
        lines = Path("/proc/self/net/dev").read_text().splitlines()[2:]
    except OSError:
        return False
    return [ln.split(":")[0].strip() for ln in lines] == ["lo"]


def _lo_up() -> None:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)


def reexec_in_netns() -> None:
    """Re-run this Python program in a fresh loopback-only namespace (no return) unless already there."""
    if isolated():
        _lo_up()
        return
    if shutil.which("unshare") is None:
        raise RuntimeError("unshare(1) is needed to isolate the runtimes from the network")
    argv = [sys.executable, *sys.orig_argv[1:]] if hasattr(sys, "orig_argv") else [sys.executable, *sys.argv]
    os.execvp("unshare", ["unshare", "-n", *argv])


def serve_fake_model(port: int = 0):  # -> (ThreadingHTTPServer, int)
    from tests.realruntimes import fakemodel
    return fakemodel.start(port)


def netns_argv(argv: Sequence[str], port: int = DEFAULT_PORT) -> list[str]:
    """argv wrapped to run in its own loopback-only namespace with the fake model on port."""
    return ["unshare", "-n", sys.executable, "-m", "tests.realruntimes.harness", "netns-run",
            "--port", str(port), "--", *argv]


def run_offline(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout: float = 180,
                port: int = DEFAULT_PORT) -> subprocess.CompletedProcess[str]:
    """Run argv with only loopback reachable and the fake model on port; stdout/stderr captured."""
    if isolated():  # already inside (generator): serve in-process unless something listens already
        server = None if _listening(port) else serve_fake_model(port)[0]
        try:
            return subprocess.run(list(argv), cwd=cwd, env=env, capture_output=True, text=True,
                                  timeout=timeout, stdin=subprocess.DEVNULL)
        finally:
            if server:
                server.shutdown()
    env = {**env, "PYTHONPATH": str(REPO)}
    return subprocess.run(netns_argv(argv, port), cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


def _listening(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _netns_run(port: int, argv: list[str]) -> int:
    if not isolated():
        raise SystemExit("netns-run must run inside `unshare -n`")
    _lo_up()
    server, _ = serve_fake_model(port)
    try:
        return subprocess.call(argv)  # inherits stdio: works for pipes and for a tmux pane's terminal
    finally:
        server.shutdown()


# ---------------------------------------------------------------- git work dirs

def make_git_repo(path: Path, branch: str) -> Path:
    """A fresh repo at path on branch with one commit (README.md); fixed identity and dates."""
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    env = {**minimal_env(path), "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
           "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z", "GIT_CONFIG_NOSYSTEM": "1",
           "GIT_CONFIG_GLOBAL": "/dev/null"}
    ident = ["-c", "user.name=Segue Fixture", "-c", "user.email=fixture@segue.invalid",
             "-c", "commit.gpgsign=false"]
    (path / "README.md").write_text(f"# {path.name}\n\nA work dir for Segue's real-runtime fixtures.\n")
    for cmd in (["init", "-q", "-b", branch], ["add", "README.md"], ["commit", "-q", "-m", "Initial commit"]):
        subprocess.run(["git", *ident, *cmd], cwd=path, env=env, check=True)
    return path


def fresh_dir(path: Path) -> Path:
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


# ---------------------------------------------------------------- pruning and copying

def copy_pruned(home: Path, dest: Path, keep: Sequence[str],
                drop: frozenset[str] = PRUNE_NAMES) -> list[Path]:
    """Copy only the paths in ``keep`` (relative to home; dirs recursively) into dest, skipping anything
    named in ``drop`` at any depth. dest is replaced. Returns the copied files (relative)."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    copied: list[Path] = []
    for rel in keep:
        src = home / rel
        if not src.exists():
            continue
        files = [src] if src.is_file() else sorted(p for p in src.rglob("*") if p.is_file())
        for f in files:
            r = f.relative_to(home)
            if any(part in drop for part in r.parts) or f.is_symlink():
                continue
            (dest / r).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(f, dest / r)
            copied.append(r)
    return copied


def tree_size(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n")


def handoff_prompt(gen_root: Path, src_runtime: str, src_id: str) -> str:
    return (f"Read the handoff brief at {gen_root}/handoff-brief.md (a Markdown file written by Segue). "
            "It describes a session that stopped; confirm the task with the user before changing "
            f"anything.\n[segue-handoff v1 from={src_runtime}:{src_id}]")


def write_brief(gen_root: Path, src_runtime: str, src_id: str) -> Path:
    p = gen_root / "handoff-brief.md"
    p.write_text(f"# Handoff brief (placeholder)\n\nSource: {src_runtime}:{src_id}\n\n"
                 "The session ran `echo hello > out.txt && ls`, then listed /nonexistent-dir (failed) "
                 "and wrote notes.md.\n")
    return p


# ---------------------------------------------------------------- pseudo-terminal (tmux)

@dataclass
class TtyResult:
    screens: list[str]  # a capture after each step
    final: str  # the last capture, scrollback included
    exited: bool  # whether the pane's command had ended when we stopped


def _tmux(sock: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["tmux", "-L", sock, *args], capture_output=True, text=True, check=check)


def _capture(sock: str, target: str, history: bool = False) -> str:
    args = ["capture-pane", "-p", "-t", target] + (["-S", "-2000"] if history else [])
    return _tmux(sock, *args, check=False).stdout


def run_tty(argv: Sequence[str], cwd: Path, env: dict[str, str], keys: Sequence[tuple[str, object]],
            timeout: float = 120, offline: bool = True, port: int = DEFAULT_PORT) -> TtyResult:
    """Run argv in a detached tmux pane (private socket, 200x50) and play ``keys``:
    ``("expect", "text")`` wait until the screen shows text (a tuple: any of them); ``("type", "text")`` literal keys;
    ``("key", "Enter")`` a tmux key name; ``("sleep", 1.5)``; ``("gone", "text")`` wait until text
    disappears. Each wait is bounded by timeout (TimeoutError carries the screen). The session is killed
    at the end. With offline=True the pane runs in its own namespace beside the fake model on port."""
    sock = f"segue-{uuid.uuid4().hex[:10]}"
    cmd = list(argv)
    if offline and not isolated():
        cmd = netns_argv(cmd, port)
        env = {**env, "PYTHONPATH": str(REPO)}
    elif offline and not _listening(port):
        raise RuntimeError(f"no fake model listening on 127.0.0.1:{port} in this namespace")
    # env -i: the tmux server's own environment must not leak into the pane
    shell_cmd = "exec env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + \
        " ".join(shlex.quote(a) for a in cmd)
    _tmux(sock, "-f", "/dev/null", "new-session", "-d", "-s", "t", "-x", "200", "-y", "50",
          "-c", str(cwd), shell_cmd)
    _tmux(sock, "set-option", "-t", "t", "remain-on-exit", "on", check=False)
    screens: list[str] = []
    try:
        for what, arg in keys:
            if what in ("expect", "gone"):
                deadline = time.monotonic() + timeout
                while True:
                    screen = _capture(sock, "t")
                    shown = any(a in screen for a in arg) if isinstance(arg, tuple) else str(arg) in screen
                    if shown == (what == "expect"):
                        break
                    if time.monotonic() > deadline:
                        raise TimeoutError(f"{what} {arg!r} timed out; screen:\n{screen}")
                    time.sleep(0.25)
            elif what == "type":
                _tmux(sock, "send-keys", "-t", "t", "-l", str(arg))
            elif what == "key":
                _tmux(sock, "send-keys", "-t", "t", str(arg))
            elif what == "sleep":
                time.sleep(float(str(arg)))
            else:
                raise ValueError(f"unknown step {what}")
            screens.append(_capture(sock, "t"))
        # A runtime prints its goodbye before it (and the namespace wrapper around it) has exited: on a busy
        # machine the pane dies a few seconds after the last expected text, so wait for it, bounded.
        deadline = time.monotonic() + min(timeout, 30)
        while True:
            dead = _tmux(sock, "display-message", "-p", "-t", "t", "#{pane_dead}", check=False).stdout.strip()
            if dead == "1" or time.monotonic() > deadline:
                break
            time.sleep(0.25)
        final = _capture(sock, "t", history=True)
        return TtyResult(screens=screens, final=final, exited=dead == "1")
    finally:
        _tmux(sock, "kill-server", check=False)


# ---------------------------------------------------------------- fixture generation (engineer A's pair)

PROMPT_ONE = "Please run `echo hello > out.txt && ls` for me"
PROMPT_ONE_2 = "Now list /nonexistent-dir and write what happened to notes.md"
PROMPT_SUB = "Use a subagent to count the files in this directory"
PROMPT_SECRET = "Create a .env file with the database password Sup3rS3cret-42 and show it to me"


def scripted(needle: str) -> list[Action]:
    """The scenario's actions for the script whose needle is a substring of needle-text."""
    from tests.realruntimes.scenario import SCRIPTS
    for key, actions in SCRIPTS:
        if key in needle:
            return actions
    raise KeyError(needle)


def real_exit_code(command: str) -> int:
    """The exit code command really has here (run in a scratch dir): `ls /nonexistent-dir` is 2 on Linux."""
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        return subprocess.run(["bash", "-c", command], cwd=d, capture_output=True).returncode


@dataclass
class SessionFacts:
    """One session as the scenario made it (from the script and the runtime's own output, never Segue)."""

    id: str
    scenario: str
    first_request: str
    latest_request: str
    cwd: str
    branch: str | None
    parent_id: str | None = None
    commands: list[dict[str, object]] = field(default_factory=list)
    files_written: list[str] = field(default_factory=list)
    subagent_ids: list[str] = field(default_factory=list)
    continues: dict[str, str] | None = None

    def to_json(self) -> dict[str, object]:
        return {"id": self.id, "parent_id": self.parent_id, "scenario": self.scenario,
                "first_request": self.first_request, "latest_request": self.latest_request,
                "cwd": self.cwd, "branch": self.branch, "commands": self.commands,
                "files_written": self.files_written, "subagent_ids": self.subagent_ids,
                "continues": self.continues}


class Gen:
    """One runtime's generation under /tmp/segue-fx/<runtime>; subclasses run the four scenarios."""

    runtime = ""
    env_rel: ClassVar[dict[str, str]] = {}
    keep: ClassVar[tuple[str, ...]] = ()  # home-relative paths copied into the fixture
    drop: ClassVar[frozenset[str]] = PRUNE_NAMES  # names never copied (a store under `tmp/` narrows it)

    def __init__(self, port: int) -> None:
        self.port = port
        self.root = GEN_BASE / self.runtime
        self.home = self.root / "home"
        self.work = self.root / "work"
        self.sessions: list[SessionFacts] = []
        self.notes: list[str] = []
        self.one_id = ""
        self.version = ""

    def setup(self) -> None:
        fresh_dir(self.root)
        make_git_repo(self.work / "one", f"feature/{self.runtime}-one")
        make_git_repo(self.work / "sub", f"feature/{self.runtime}-sub")
        fresh_dir(self.work / "plain")
        prepare_home(self.runtime, self.home, self.port,
                     trusted=[self.work / "one", self.work / "sub", self.work / "plain"])
        self.version = runtime_version(self.runtime, self.env())

    def env(self) -> dict[str, str]:
        return runtime_env(self.runtime, self.home, self.port)

    def run(self, argv: Sequence[str], cwd: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
        """Run the CLI (we are inside the namespace, the fake model is up); log output; fail on rc != 0."""
        r = subprocess.run(list(argv), cwd=cwd, env=self.env(), capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        log = self.root / "logs"
        log.mkdir(exist_ok=True)
        n = len(list(log.iterdir())) // 2 + 1
        (log / f"{n:02d}.out").write_text(f"$ {shlex.join(argv)}\n(cwd {cwd}) rc={r.returncode}\n{r.stdout}")
        (log / f"{n:02d}.err").write_text(r.stderr)
        if r.returncode != 0:
            raise RuntimeError(f"{self.runtime}: rc {r.returncode} from {shlex.join(argv)}\n"
                               f"stdout: {r.stdout[-2000:]}\nstderr: {r.stderr[-2000:]}")
        return r

    def cmd(self, command: str) -> dict[str, object]:
        return {"command": command, "exit_code": real_exit_code(command)}

    def add(self, facts: SessionFacts) -> SessionFacts:
        self.sessions.append(facts)
        return facts

    def write_fixture(self, dest: Path) -> None:
        """Copy the pruned home to dest/home (+ live-capture) and write dest/expected.json."""
        stage = self.root / "fixture"
        copy_pruned(self.home, stage / "home", self.keep, self.drop)
        for db in [*(stage / "home").rglob("*.sqlite"), *(stage / "home").rglob("*.db")]:
            fold_wal(db)
        live = self.root / "live-capture"
        if live.exists():
            shutil.copytree(live, stage / "live-capture")
        doc = {"runtime": self.runtime, "version": self.version,
               "generated_at": time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime()),
               "gen_root": str(self.root), "env": {"HOME": "home", **self.env_rel},
               "sessions": [s.to_json() for s in self.sessions]}
        if self.notes:
            doc["notes"] = self.notes
        write_json(stage / "expected.json", doc)
        if dest.exists():
            shutil.rmtree(dest)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copytree(stage, dest)
        print(f"{self.runtime}: {len(self.sessions)} sessions, {tree_size(dest)} bytes in {dest}")


def fold_wal(db: Path) -> None:
    """Checkpoint a *copied* database so it stands alone (no -wal/-shm in the committed home)."""
    import sqlite3
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()
    for side in ("-wal", "-shm", "-journal"):
        Path(f"{db}{side}").unlink(missing_ok=True)


def checkpoint(db: Path) -> None:
    """Fold a WAL into its database in place: only for a generation home, with no runtime running."""
    import sqlite3
    con = sqlite3.connect(db)
    try:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        con.close()


def snapshot_db(db: Path, dst_dir: Path) -> list[Path]:
    """Copy a WAL-mode database with its side files (main file first) while its writer is paused."""
    dst_dir.mkdir(parents=True, exist_ok=True)
    out = []
    for suffix in ("", "-wal", "-shm"):
        src = Path(f"{db}{suffix}")
        if src.exists():
            shutil.copy2(src, dst_dir / src.name)
            out.append(dst_dir / src.name)
    return out


PAIRS = {"claude": "codex", "codex": "claude"}
_pairs_done: set[Path] = set()


def generate_pair(out_dir: Path, runtime: str) -> None:
    """Generate Claude and Codex together: each one's `continued` session names the other's `one`."""
    real = (out_dir if out_dir.name != runtime else out_dir.parent).resolve()
    if real in _pairs_done:
        return
    if not isolated():
        rc = subprocess.call(["unshare", "-n", sys.executable, "-m", "tests.realruntimes.harness",
                              "gen-pair", str(real)], cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)})
        if rc != 0:
            raise RuntimeError(f"Claude/Codex fixture generation failed (rc {rc})")
    else:
        _run_pair(real)
    _pairs_done.add(real)


def _run_pair(real: Path) -> None:
    from tests.realruntimes import fakemodel, gen_claude, gen_codex
    _lo_up()
    server, port = fakemodel.start(DEFAULT_PORT)  # our own namespace: a fixed port keeps configs stable
    try:
        gens: list[Gen] = [gen_claude.ClaudeGen(port), gen_codex.CodexGen(port)]
        for g in gens:
            g.setup()
            g.run_one()
            g.run_sub()
            g.run_secret()
        a, b = gens
        a.run_continued(b.runtime, b.one_id)
        b.run_continued(a.runtime, a.one_id)
        for g in gens:
            g.write_fixture(real / g.runtime)
    finally:
        fakemodel.observer = None
        server.shutdown()


# ---------------------------------------------------------------- interactive (TUI) resume helpers

# Codex resolves a thread through state_5.sqlite's absolute `rollout_path`: with the DB copied, a resume in
# the copy appends to the ORIGINAL rollout. Without it Codex finds the rollout under its own CODEX_HOME.
SCRATCH_DROP = {"codex": ("state_*.sqlite*", "thread_history_*.sqlite*")}


def scratch_home(rt: str, src_home: Path, dest_home: Path, port: int = DEFAULT_PORT,
                 trusted: Iterable[Path] = ()) -> Path:
    """Copy a generation (or fixture) home for a run that writes, so the source stays untouched. Codex's
    config is pointed at port; a home without runtime config (a pruned fixture) gets prepare_home's."""
    if dest_home.exists():
        shutil.rmtree(dest_home)
    shutil.copytree(src_home, dest_home, symlinks=True)
    for pattern in SCRATCH_DROP.get(rt, ()):
        for p in dest_home.rglob(pattern):
            p.unlink()
    if rt == "codex":
        cfg = dest_home / ".codex" / "config.toml"
        if cfg.exists():
            cfg.write_text(re.sub(r"127\.0\.0\.1:\d+", f"127.0.0.1:{port}", cfg.read_text()))
        else:
            prepare_home(rt, dest_home, port, trusted)
    elif rt == "claude" and not (dest_home / ".claude.json").exists():
        prepare_home(rt, dest_home, port, trusted)  # fixtures have no ~/.claude.json (onboarding state)
    return dest_home


def tui_turn(rt: str, prompt: str, answer: str) -> list[tuple[str, object]]:
    """run_tty steps for one typed turn in a ready TUI, then quit. Codex treats keys that arrive in a
    burst as a paste, so Enter right after the text only adds it to the composer: pause first."""
    if rt == "claude":  # 2.1.3xx's footer names the permission mode, not the shortcuts
        return [("expect", ("for shortcuts", "shift+tab to cycle")), ("type", prompt), ("sleep", 0.5), ("key", "Enter"),
                ("expect", answer), ("sleep", 1), ("type", "/exit"), ("sleep", 0.5), ("key", "Enter"),
                ("sleep", 2)]
    if rt == "codex":
        return [("expect", "for shortcuts"), ("sleep", 1), ("type", prompt), ("sleep", 2), ("key", "Enter"),
                ("expect", answer), ("sleep", 1), ("key", "C-c"), ("sleep", 2)]
    raise ValueError(f"no TUI steps for {rt}")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m tests.realruntimes.harness")
    sub = ap.add_subparsers(dest="cmd", required=True)
    nr = sub.add_parser("netns-run", help="inside `unshare -n`: lo up, fake model on --port, run argv")
    nr.add_argument("--port", type=int, default=DEFAULT_PORT)
    nr.add_argument("argv", nargs=argparse.REMAINDER)
    gp = sub.add_parser("gen-pair", help="inside `unshare -n`: generate the Claude and Codex fixtures")
    gp.add_argument("real", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "gen-pair":
        if not isolated():
            raise SystemExit("gen-pair must run inside `unshare -n`")
        _run_pair(args.real)
        return 0
    rest = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    return _netns_run(args.port, rest)


if __name__ == "__main__":
    sys.exit(main())
