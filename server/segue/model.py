"""Runtime-neutral data: sessions, transcript steps and brief facts.

No I/O here. Every reader in `segue.stores` produces these objects, and every surface (CLI, language
server, extension) sees them through `to_json`, so there is exactly one JSON shape.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Literal

from segue.timefmt import iso as iso
from segue.timefmt import parse_time as parse_time

# Why a session cannot be reopened by its own runtime's CLI (null when it can). no_directory: none was
# recorded, and Segue launches a runtime only in a directory (`segue resume --cwd DIR` chooses one).
RESUME_BLOCKERS = ("subagent", "not_in_store", "cli_cannot_reopen", "no_directory")

# What a terminal names a session by when neither its title nor its first request is known (as the list table)
UNTITLED = "(untitled)"

StepKind = Literal["request", "message", "command", "edit", "tool", "subagent"]
STEP_KINDS: tuple[str, ...] = ("request", "message", "command", "edit", "tool", "subagent")


@dataclass
class Continues:
    """The session another one was started from, found via the handoff marker in its first prompt."""

    runtime: str
    id: str

    def to_json(self) -> dict[str, Any]:
        return {"runtime": self.runtime, "id": self.id}


class SessionKeys:
    """What a session and a cold listing's compact row of one (segue.compact) both answer from their fields."""

    __slots__ = ()
    runtime: str
    id: str
    started_at: float | None
    updated_at: float | None

    @property
    def ref(self) -> str:
        return f"{self.runtime}:{self.id}"

    @property
    def sort_time(self) -> float:
        return self.updated_at or self.started_at or 0.0


@dataclass
class Session(SessionKeys):
    """One resumable (or once-resumable) session as listing sees it.

    Times are epoch seconds internally; `to_json` renders the contract's ISO form.
    """

    runtime: str
    id: str
    store_path: str
    title: str | None = None
    first_request: str | None = None
    cwd: str | None = None
    branch: str | None = None
    started_at: float | None = None
    updated_at: float | None = None
    model: str | None = None
    parent_id: str | None = None
    resumable: bool = True
    resume_blocker: str | None = None
    live: bool = False
    problems: list[str] = field(default_factory=list)
    # True when the runtime recorded no branch and `branch` is the directory's checkout read from `.git/HEAD`
    # (what it is on now, not necessarily what the session worked on).
    branch_is_current: bool = False
    # Filled by services, not by readers:
    continues: Continues | None = None
    handed_off: dict[str, Any] | None = None
    subagent_count: int = 0
    # Reader-private locator (e.g. a DB row's source, a messages path); not part of the JSON contract.
    locator: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str | None:
        """What names the session to a person: its title, else its first request (a runtime such as Gemini
        CLI records no title); None when neither is known. A reference to a session carries this as its title."""
        return self.title or self.first_request

    @property
    def display_title(self) -> str:
        """`label` for a terminal, with the list table's placeholder."""
        return self.label or UNTITLED

    def to_json(self) -> dict[str, Any]:
        return {
            "runtime": self.runtime,
            "id": self.id,
            "title": self.title,
            "first_request": self.first_request,
            "cwd": self.cwd,
            "branch": self.branch or None,
            "started_at": self._iso("started_at"),
            "updated_at": self._iso("updated_at"),
            "model": self.model,
            "parent_id": self.parent_id,
            "resumable": self.resumable,
            "resume_blocker": self.resume_blocker,
            "live": self.live,
            "handed_off": self.handed_off,
            "continues": self.continues.to_json() if self.continues else None,
            "subagent_count": self.subagent_count,
            "store_path": self.store_path,
            "problems": list(self.problems),
        }

    def _iso(self, name: str) -> str | None:
        """ISO form of a time field, memoised in the instance (and so in the listing cache): formatting
        thousands of timestamps is a visible share of a warm listing."""
        ts = self.__dict__[name]
        memo = self.__dict__.get("_iso_" + name)
        if memo is not None and memo[0] == ts:
            return memo[1]
        text = iso(ts)
        self.__dict__["_iso_" + name] = (ts, text)
        return text

    def prime(self) -> None:
        self._iso("started_at")
        self._iso("updated_at")

    # The listing cache stores sessions in this lossless form (times stay numeric). Both directions are on
    # the hot path of every listing (thousands of sessions), hence plain dict work instead of asdict().
    def to_cache(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["continues"] = self.continues.to_json() if self.continues else None
        d["handed_off"] = None
        d["subagent_count"] = 0
        return d

    @classmethod
    def from_cache(cls, d: dict[str, Any]) -> Session:
        s = object.__new__(cls)
        s.runtime = d.get("runtime", "")  # set first: the instance dict stays key-sharing (a third the size)
        s.__dict__.update(_DEFAULTS)
        s.__dict__.update(d)
        s.problems = list(s.problems)
        cont = d.get("continues")
        s.continues = Continues(**cont) if cont else None
        return s

    def copy(self) -> Session:
        """A shallow copy for per-request decoration (handed_off, continues, counts)."""
        s = object.__new__(Session)
        s.runtime = self.runtime  # set first: the instance dict stays key-sharing (a third the size)
        s.__dict__.update(self.__dict__)
        s.problems = list(self.problems)
        return s


_DEFAULTS: dict[str, Any] = {
    f.name: (f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default)  # type: ignore[misc]
    for f in dataclasses.fields(Session) if f.default is not dataclasses.MISSING
    or f.default_factory is not dataclasses.MISSING
}


@dataclass
class Step:
    """One piece of transcript activity, in order, as a brief needs it.

    kind: request (the user's own words), message (agent text), command (a shell command: `text` is the
    command, `exit_code` its code, None when unknown), edit (a file change: `path`, line counts when the
    store has them), tool (any other tool call, `text` = "name: short input"), subagent (a spawned agent:
    `text` its task, `ref` the child session id when known).
    Readers leave out reasoning, file reads and injected context.
    """

    kind: StepKind
    text: str = ""
    at: float | None = None
    exit_code: int | None = None
    path: str | None = None
    added: int | None = None
    removed: int | None = None
    ref: str | None = None
    output: str | None = None  # the end of a command's output (at most `stores.text.OUTPUT_KEEP` characters)
    # For a command whose exit code is unknown, what is known instead (None: nothing beyond `exit_code`):
    # "failed" (it ran and failed), "rejected" (it never ran: refused by the user, a rule or a hook),
    # "interrupted" (killed), "running" (sent to the background).
    status: str | None = None


@dataclass
class ReadStats:
    """Counters a reader fills while streaming a transcript."""

    damaged_lines: int = 0
    bytes_read: int = 0
    problems: list[str] = field(default_factory=list)
    unrecognised_lines: int = 0  # valid JSON, but not a record of the runtime (reported in `problems`)


@dataclass
class FileChange:
    path: str
    added: int | None = None
    removed: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "added": self.added, "removed": self.removed}


@dataclass
class CommandRun:
    command: str
    exit_code: int | None
    status: str | None = None  # Step.status: failed / rejected / interrupted / running, when the code is unknown

    def to_json(self) -> dict[str, Any]:
        return {"command": self.command, "exit_code": self.exit_code, "status": self.status}
