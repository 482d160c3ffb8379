"""What `Service` returns: typed results, each with `to_json()` giving exactly the JSON the CLI's `--json`
prints and the language server replies with (the server wraps a list in an object: `{"tokens": [...]}`).

Facts (`brief.Facts`), plans (`resume.Plan`) and search results (`search.engine.SearchResults`) live with
the code that builds them; everything else a service method returns is here.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from segue.listing import Skipped
from segue.model import Session

if TYPE_CHECKING:
    from segue.brief import Facts
    from segue.resume import Plan

Json = dict[str, Any]


def skipped_reason(k: Skipped) -> str:
    """How a source that could not be read is named, on every surface."""
    return f"{k.runtime}: {k.path}: {k.reason}" if k.path else f"{k.runtime}: {k.reason}"


def skipped_reasons(skipped: Sequence[Skipped]) -> list[str]:
    return [skipped_reason(k) for k in skipped]


@dataclass(frozen=True)
class SessionRef:
    """A session named in a reply: `{runtime, id, title}`; the title is the session's, else its first request."""

    runtime: str
    id: str
    title: str | None

    @classmethod
    def of(cls, s: Session) -> SessionRef:
        return cls(s.runtime, s.id, s.label)

    def to_json(self) -> Json:
        return {"runtime": self.runtime, "id": self.id, "title": self.title}


@dataclass
class ListingPage:
    """A page of the listing: top-level sessions (each with its subagents when asked for) from `offset`.
    `total` counts the top-level sessions that match the filters, `next_offset` is the next page's offset
    (None on the last); `listed` counts the sessions the chosen stores hold before the other filters (0: the
    stores hold none, so "nothing found" says where Segue looked)."""

    sessions: list[Session]
    skipped: list[Skipped]
    total: int
    next_offset: int | None
    listed: int
    # a session's JSON; the language server's view hands in its memo so a warm page encodes nothing again
    session_json: Callable[[Session], Json] = field(default=Session.to_json, repr=False, compare=False)
    # the ids of every session the page was cut from (what a reference is resolved among): the table's
    # abbreviations are unambiguous among them
    every_id: Callable[[], Iterable[str]] = field(default=lambda: (), repr=False, compare=False)

    @property
    def skipped_reasons(self) -> list[str]:
        return skipped_reasons(self.skipped)

    def sessions_json(self) -> list[Json]:
        """The sessions as `segue list --json` prints them."""
        return [self.session_json(s) for s in self.sessions]

    def to_json(self) -> Json:
        return {"sessions": self.sessions_json(), "skipped": len(self.skipped),
                "skipped_reasons": self.skipped_reasons, "total": self.total, "next_offset": self.next_offset}


@dataclass
class Brief:
    """A session's brief: its facts and the Markdown rendered from them (not written anywhere)."""

    session: Session
    facts: Facts
    markdown: str

    def to_json(self) -> Json:
        """The body of segue/brief's reply (the server adds the editor's `uri`); `--json` prints `facts`."""
        return {"markdown": self.markdown, "facts": self.facts.to_json()}


@dataclass
class ResumeCommand:
    """A plan as one line to paste into a terminal (`cd DIR && claude --resume ID`)."""

    command: str
    shell: str
    plan: Plan

    def to_json(self) -> Json:
        return {"command": self.command, "shell": self.shell, "plan": self.plan.to_json()}


@dataclass
class Emitted:
    """A handoff token just emitted, with the brief written for it."""

    token: str
    expires_at: str | None
    brief_path: str
    session: SessionRef

    def to_json(self) -> Json:
        return {"token": self.token, "expires_at": self.expires_at, "brief_path": self.brief_path,
                "session": self.session.to_json()}


@dataclass(frozen=True)
class ClaimedSession:
    runtime: str
    id: str
    title: str | None  # the brief's redacted title, else its first request
    cwd: str | None

    def to_json(self) -> Json:
        return {"runtime": self.runtime, "id": self.id, "title": self.title, "cwd": self.cwd}


@dataclass(frozen=True)
class TailStep:
    kind: str
    text: str  # redacted, invisible characters marked

    def to_json(self) -> Json:
        return {"kind": self.kind, "text": self.text}


@dataclass
class PlanRefusal:
    """Why the claimed session cannot be resumed here (a claim still succeeds)."""

    reason: str
    message: str
    data: Json = field(default_factory=dict)

    def to_json(self) -> Json:
        return {"refused": self.reason, "message": self.message, **self.data}


@dataclass
class Claim:
    """A claimed token: the session, where it came from, what it was doing, and how to resume it."""

    session: ClaimedSession
    source_surface: str | None
    claimed_as: str
    active_task: str | None
    tail: list[TailStep]
    brief_path: str | None
    plan: Plan | PlanRefusal

    def to_json(self) -> Json:
        return {"session": self.session.to_json(), "source_surface": self.source_surface,
                "claimed_as": self.claimed_as, "active_task": self.active_task,
                "tail": [t.to_json() for t in self.tail], "brief_path": self.brief_path,
                "plan": self.plan.to_json()}


@dataclass
class TokenStatus:
    """A token within its lifetime (never the token itself)."""

    session: SessionRef
    surface: str | None
    issued_at: str | None
    expires_at: str | None
    seconds_left: float
    claimed: bool
    claimed_as: str | None

    def to_json(self) -> Json:
        return {"session": self.session.to_json(), "surface": self.surface, "issued_at": self.issued_at,
                "expires_at": self.expires_at, "seconds_left": self.seconds_left, "claimed": self.claimed,
                "claimed_as": self.claimed_as}


@dataclass
class Revoked:
    revoked: int  # live, unclaimed tokens revoked
    session: SessionRef

    def to_json(self) -> Json:
        return {"revoked": self.revoked, "session": self.session.to_json()}


@dataclass(frozen=True)
class StoreLocation:
    """A place a runtime's store was looked for."""

    runtime: str
    path: str
    exists: bool
    how_to_override: str | None

    def to_json(self) -> Json:
        return {"runtime": self.runtime, "path": self.path, "exists": self.exists,
                "how_to_override": self.how_to_override}


@dataclass(frozen=True)
class TraceLink:
    """One session of a task's chain; an ancestor Segue cannot find is `found` False, with null title and time."""

    runtime: str
    id: str
    title: str | None
    started_at: str | None
    continues: Json | None  # the session it continues, as `Continues.to_json()` encodes it
    found: bool

    def to_json(self) -> Json:
        return {"runtime": self.runtime, "id": self.id, "title": self.title, "started_at": self.started_at,
                "continues": self.continues, "found": self.found}


@dataclass
class Trace:
    """The sessions a task went through, oldest first."""

    links: list[TraceLink]

    def to_json(self) -> list[Json]:
        """`segue trace --json`'s array (segue/trace wraps it: `{"chain": [...]}`)."""
        return [link.to_json() for link in self.links]
