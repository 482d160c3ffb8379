"""Resume plans: reopen a session natively, or start a new session from its brief, in any runtime.

A plan is computed first and shown; launching is a separate, confirmed step (CLI) or the editor's job (the
language server never launches). Commands are argv lists run without a shell. Segue never adds
approval-bypass flags. How each runtime reopens and starts a session is its descriptor's (`segue.stores`).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
from dataclasses import dataclass
from typing import Any

from segue.errors import SegueError
from segue.lineage import marker
from segue.model import Session
from segue.stores import UnknownRuntime, descriptor

# Why a plan reopens natively or starts a new session, and how it is said (the CLI's plan, the extension).
REASON_TEXTS = {
    "native": "the session reopens in its own runtime",
    "requested": "a new session was requested",
    "other_runtime": "another runtime continues from the brief",
    "subagent": "a subagent cannot be reopened; a new session starts from the brief",
    "not_in_store": "the runtime's CLI cannot find this session; a new session starts from the brief",
    "not_resumable": "this session cannot be reopened; a new session starts from the brief",
    "cwd_override": "a different directory was chosen; a new session starts from the brief",
}
REASONS = tuple(REASON_TEXTS)
# Flags that would skip the runtime's approvals; a plan must never contain them.
BYPASS_FLAGS = frozenset({
    "--dangerously-skip-permissions", "--allow-dangerously-skip-permissions", "bypassPermissions",
    "--dangerously-bypass-approvals-and-sandbox", "--yolo", "--full-auto", "--approve-for-me",
    "danger-full-access", "--auto", "-y",
})


class PlanRefused(SegueError):
    """A plan that cannot be carried out; `reason` is missing_directory, missing_cli or bad_target."""

    def __init__(self, reason: str, message: str, **data: Any) -> None:
        super().__init__(message, reason=reason, data=data)


@dataclass
class Plan:
    mode: str  # native | new_session
    reason: str
    runtime: str
    argv: list[str]
    cwd: str
    brief_path: str | None
    session: Session
    handed_off: dict[str, Any] | None = None
    live: bool = False  # another process holds the session open (a runtime still running it)

    def to_json(self) -> dict[str, Any]:
        return {"mode": self.mode, "reason": self.reason, "runtime": self.runtime, "argv": list(self.argv),
                "cwd": self.cwd, "brief_path": self.brief_path,
                "session": {"runtime": self.session.runtime, "id": self.session.id,
                            "title": self.session.label},
                "handed_off": self.handed_off, "live": self.live}

    @property
    def live_warning(self) -> str | None:
        """What a person must read before launching a plan for a session another process has open."""
        if not self.live:
            return None
        if self.mode == "native":
            return ("another process has this session open (live): reopening it now runs two agents on one "
                    "session; finish or close the other one first")
        return "another process still has this session open (live): the new session starts from the brief as it is now"


def first_prompt(brief_path: str, source: Session) -> str:
    """The new session's first prompt: names the brief by path (never inlines it), ends with the marker."""
    return (f"Read the handoff brief at {brief_path} (a Markdown file written by Segue). It describes a session "
            "that stopped; confirm the task with the user before changing anything.\n"
            f"{marker(source.runtime, source.id)}")


def native_argv(runtime: str, session_id: str) -> list[str]:
    if session_id.startswith("-"):
        raise PlanRefused("bad_target", f"refusing a session id that starts with '-': {session_id!r}")
    return descriptor(runtime).native_argv(session_id)


def new_session_argv(runtime: str, prompt: str) -> list[str]:
    if prompt.startswith("-"):
        raise PlanRefused("bad_target", "refusing a prompt that starts with '-'")
    return descriptor(runtime).new_session_argv(prompt)


def choose(session: Session, *, target: str | None, new: bool, cwd: str | None, in_store: bool
           ) -> tuple[str, str]:
    """(mode, reason) for a session and the person's request."""
    target = target or session.runtime
    try:
        spec = descriptor(target)
    except UnknownRuntime as e:
        raise PlanRefused("bad_target", str(e)) from None
    if target != session.runtime:
        return "new_session", "other_runtime"
    if new:
        return "new_session", "requested"
    if session.parent_id or session.resume_blocker == "subagent":
        return "new_session", "subagent"
    if not in_store or session.resume_blocker == "not_in_store":
        return "new_session", "not_in_store"
    # (no_directory: a directory chosen with --cwd lets the session reopen as any other)
    if ((not session.resumable and session.resume_blocker != "no_directory")
            or session.resume_blocker == "cli_cannot_reopen"):
        return "new_session", "not_resumable"
    if cwd is not None and spec.cwd_bound and not _same_dir(cwd, session.cwd):
        return "new_session", "cwd_override"
    return "native", "native"


def _same_dir(a: str, b: str | None) -> bool:
    if not b:
        return False
    return os.path.realpath(os.path.expanduser(a)) == os.path.realpath(b)


def check_directory(cwd: str | None, session: Session, overridden: bool) -> str:
    if not cwd:
        raise PlanRefused("missing_directory",
                          f"{session.ref} has no recorded directory; choose one with --cwd DIR", cwd=None)
    path = os.path.abspath(os.path.expanduser(cwd))
    if not os.path.isdir(path):
        if overridden:  # the person's choice, which Segue never saw exist
            what = "is not a directory" if os.path.exists(path) else "does not exist"
            raise PlanRefused("missing_directory", f"the directory {path} {what}", cwd=path)
        raise PlanRefused("missing_directory", f"the session's directory {path} no longer exists; use --cwd DIR to "
                                               "continue it somewhere else on purpose", cwd=path)
    return path


def locate_cli(runtime: str, path: str | None = None) -> str:
    spec = descriptor(runtime)
    exe = shutil.which(spec.cli, path=path)
    if exe is None:
        raise PlanRefused("missing_cli", f"the {spec.cli} command is not installed or not on PATH; "
                                         f"{spec.install_hint}", runtime=runtime,
                          install=spec.install_hint, install_command=spec.install)
    return exe


def assert_no_bypass(argv: list[str]) -> None:
    args = argv[1:]
    bad = [a for a in args if a in BYPASS_FLAGS or a.startswith("--dangerously")]
    bad += [f"{a} {b}" for a, b in itertools.pairwise(args) if a == "--auto-approve" and b != "false"]
    if bad:
        raise AssertionError(f"a plan must never carry approval-bypass flags: {bad}")


def launch_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The child's environment: ours minus Segue's own variables; nothing added."""
    env = dict(os.environ if environ is None else environ)
    for k in [k for k in env if k.startswith("SEGUE_")]:
        del env[k]
    return env


def exec_plan(plan: Plan) -> None:  # pragma: no cover - replaces the process; covered by real-runtime tests
    """Replace this process with the runtime, in the plan's directory: the runtime owns the terminal."""
    assert_no_bypass(plan.argv)
    os.chdir(plan.cwd)
    os.execve(plan.argv[0], plan.argv, launch_env())


# -- a command line to paste into another terminal (`segue resume --print`, "Copy resume command") ----------
SHELLS = ("posix", "powershell")
_POSIX_SAFE = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")
# PowerShell: a bare word must not start with a sigil (-, @, $, …) nor hold a quote, brace, comma or ;
_PWSH_SAFE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./-]*")
# PowerShell closes a single-quoted string on any of these, so each is doubled inside one
_PWSH_QUOTES = "'\u2018\u2019\u201a\u201b"


def posix_quote(word: str) -> str:
    """A word for sh, bash, zsh, dash: bare when safe, else single-quoted ('\\'' for a quote)."""
    if _POSIX_SAFE.fullmatch(word):
        return word
    return "'" + word.replace("'", "'\\''") + "'"


def powershell_quote(word: str) -> str:
    """A word for PowerShell (5.1 and 7): a verbatim single-quoted string, every quote character doubled."""
    return word if _PWSH_SAFE.fullmatch(word) else _pwsh_literal(word)


def command_line(plan: Plan, shell: str = "posix") -> str:
    """`cd DIR && RUNTIME ARGS…` for the plan, quoted for `shell`. The runtime is named, not its absolute path
    here, so the line also works on another machine where the CLI is elsewhere on PATH. No shell expansion
    can happen inside: every word that is not plainly safe is single-quoted."""
    if shell not in SHELLS:
        raise ValueError(f"shell must be one of {', '.join(SHELLS)}")
    argv = [descriptor(plan.runtime).cli, *plan.argv[1:]]
    assert_no_bypass(argv)
    if "\x00" in plan.cwd or any("\x00" in a for a in argv):
        raise PlanRefused("bad_target", "a NUL character cannot be passed on a command line")
    if shell == "posix":
        return f"cd {posix_quote(plan.cwd)} && {' '.join(posix_quote(a) for a in argv)}"
    words = [powershell_quote(a) for a in argv]
    call = ("& " if words[0].startswith("'") else "") + " ".join(words)
    # `&&` needs PowerShell 7; `if ($?)` also works in Windows PowerShell 5.1
    return f"Set-Location -LiteralPath {_pwsh_literal(plan.cwd)}; if ($?) {{ {call} }}"


def _pwsh_literal(word: str) -> str:
    return "'" + "".join(c + c if c in _PWSH_QUOTES else c for c in word) + "'"
