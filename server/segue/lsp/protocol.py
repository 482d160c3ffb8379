"""Segue's custom JSON-RPC methods, the one wire contract: every method with its params and its result, the
notification, the error codes and reasons, the runtimes' ids, names and icons, the plan-reason texts.

The extension's `vscode-extension/src/protocol.generated.ts` is generated from this module
(`python -m segue.lsp.typescript --out vscode-extension/src/protocol.generated.ts`); tests/test_wire_contract.py
fails when the two differ, when the server registers a method the contract lacks (or the other way round)
and when a real reply has other keys than its declared result. No I/O here, and nothing heavy to import.

Params and results are plain JSON objects with the CLI's snake_case keys (no camelCase renaming, no field
omitted, null for unknown). Params are validated strictly: wrong types, unknown keys and bad values get
-32602 with a message naming the field. `workDoneToken` (LSP's own camelCase key) may accompany any request;
long scans then report progress, and window/workDoneProgress/cancel on that token cancels the request like
$/cancelRequest.

initializationOptions: {segueHome?: str (the state directory: tokens, briefs, cache; `segue --home` wins,
then this, then $SEGUE_HOME), watch?: bool (false: no sessionsChanged notifications, no polling)}.
The poll interval of the watch is $SEGUE_WATCH_INTERVAL seconds (default 1.0).

Errors: -32700 unparsable body (id null), -32600 bad envelope (id not a string or integer, no jsonrpc 2.0,
a request after shutdown), -32601 unknown method, -32602 bad params (the message names the field,
data.reason "invalid_params"), -32800 cancelled (data.reason "cancelled" when the work itself stopped), and
Segue's own codes (`ERRORS`), each with data.reason equal to its key (plus details such as data.candidates).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal, NewType, TypedDict

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from segue.limits import CLAIM_TAIL, SEARCH_LIMIT
from segue.resume import REASON_TEXTS
from segue.stores import REGISTRY, RUNTIMES

LIST_SESSIONS = "segue/listSessions"
BRIEF = "segue/brief"
PLAN_RESUME = "segue/planResume"
EMIT_TOKEN = "segue/emitToken"
CLAIM_TOKEN = "segue/claimToken"
TOKEN_STATUS = "segue/tokenStatus"
TRACE = "segue/trace"
SEARCH = "segue/search"
RESUME_COMMAND = "segue/resumeCommand"
REVOKE_TOKEN = "segue/revokeToken"
LOCATIONS = "segue/locations"
DEMO = "segue/demo"
RUNTIME_CLIS = "segue/runtimes"
SESSIONS_CHANGED = "segue/sessionsChanged"

# ---------------------------------------------------------------------------------------------------------
# Closed sets of values. A NewType names a set kept elsewhere (the registry, resume's reasons); a Literal is
# the set itself. tests/test_wire_contract.py checks each Literal against the core's own tuple.

Runtime = NewType("Runtime", str)  # an id of `segue.stores.REGISTRY`
PlanReason = NewType("PlanReason", str)  # a key of PLAN_REASONS
ErrorReason = NewType("ErrorReason", str)  # a reason of ERRORS or PROTOCOL_ERRORS

RUNTIME_NAMES: dict[str, str] = {d.id: d.name for d in REGISTRY}
RUNTIME_ICONS: dict[str, str] = {d.id: d.icon for d in REGISTRY}  # codicon names
PLAN_REASONS: dict[str, str] = dict(REASON_TEXTS)  # why a plan reopens natively or starts anew, as said

PlanMode = Literal["native", "new_session"]
Shell = Literal["posix", "powershell"]
ResumeBlocker = Literal["subagent", "not_in_store", "cli_cannot_reopen", "no_directory"]  # model.RESUME_BLOCKERS
StepKind = Literal["request", "message", "command", "edit", "tool", "subagent"]  # model.STEP_KINDS
SearchWhere = Literal["request", "message", "command", "file"]  # search.query.WHERE
SearchIn = Literal["requests", "messages", "commands", "files"]  # what `in` takes (singular forms too)
RefusalReason = Literal["missing_directory", "missing_cli", "bad_target"]  # resume.PlanRefused reasons

# ---------------------------------------------------------------------------------------------------------
# Error codes (JSON-RPC server range -32099..-32000; -32001/-32002 are taken by the base protocol).


@dataclass(frozen=True)
class ErrorCode:
    reason: str  # data.reason of the error reply
    code: int
    meaning: str


ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode("unknown_session", -32010, "no session matches the ref (data.ref)"),
    ErrorCode("ambiguous_session", -32011, "the ref matches several sessions (data.candidates)"),
    ErrorCode("malformed", -32020, "a handoff token of the wrong shape"),
    ErrorCode("unknown", -32021, "a handoff token not in the registry"),
    ErrorCode("expired", -32022, "a handoff token past its lifetime"),
    ErrorCode("claimed", -32023, "a handoff token already claimed"),
    ErrorCode("revoked", -32024, "a handoff token revoked"),
    ErrorCode("missing_directory", -32030, "the session's directory is gone or unknown (data.cwd)"),
    ErrorCode("missing_cli", -32031, "the runtime's CLI is not on PATH (data.runtime, data.install)"),
    ErrorCode("bad_target", -32032, "the plan cannot be carried out there"),
    ErrorCode("unsafe_directory", -32041, "Segue's state directory is not private"),
    ErrorCode("permission_denied", -32042, "permission denied in Segue's state directory"),
    ErrorCode("internal", -32050, "a bug: see the server log"),
    ErrorCode("search_unavailable", -32060, "this Python's SQLite has no full-text search (FTS5)"),
)
INVALID_PARAMS = -32602
# JSON-RPC's own codes that carry a data.reason too (the extension tells them apart the same way)
PROTOCOL_ERRORS: tuple[ErrorCode, ...] = (
    ErrorCode("invalid_params", INVALID_PARAMS, "bad params; the message names the field"),
    ErrorCode("cancelled", -32800, "the request was cancelled"),
)
ERROR_CODES: dict[str, int] = {e.reason: e.code for e in ERRORS}  # Segue's own codes, by reason
CLOSED_SETS: dict[Any, tuple[str, ...]] = {
    Runtime: RUNTIMES, PlanReason: tuple(REASON_TEXTS), ErrorReason: tuple(e.reason for e in PROTOCOL_ERRORS + ERRORS)}
MAX_REF = 400
MAX_PATH = 4096

# ---------------------------------------------------------------------------------------------------------
# Params. A field's `wire` metadata is its JSON key when that is a Python keyword (`from`); `wire_type` what
# the wire accepts when the parsed attribute is narrower (one runtime or a list of them) or its values are
# checked after parsing (`shell`). A field with a default may be left out.


@attrs.define
class ListSessionsParams:
    runtime: list[str] | None = attrs.field(default=None, metadata={"wire_type": Runtime | list[Runtime] | None})
    dir: str | None = None
    include_subagents: bool = False
    limit: int | None = None
    offset: int = 0


@attrs.define
class RefParams:
    ref: str


@attrs.define
class PlanResumeParams:
    ref: str
    runtime: str | None = attrs.field(default=None, metadata={"wire_type": Runtime | None})
    new: bool = False
    cwd: str | None = None
    # False: a new-session plan names the brief it would write, and nothing is written (the editor shows the
    # plan so, and asks again with True once the person confirms: a declined launch leaves no brief behind)
    write: bool = True


@attrs.define
class EmitTokenParams:
    ref: str
    from_: str = attrs.field(default="editor", metadata={"wire": "from"})


@attrs.define
class ClaimTokenParams:
    token: str
    as_: str = attrs.field(default="editor", metadata={"wire": "as"})
    tail: int = CLAIM_TAIL.default


@attrs.define
class SearchParams:
    query: str
    runtime: list[str] | None = attrs.field(default=None, metadata={"wire_type": Runtime | list[Runtime] | None})
    dir: str | None = None
    since: str | None = None
    in_: list[str] | None = attrs.field(default=None, metadata={"wire": "in", "wire_type": list[SearchIn] | None})
    limit: int = SEARCH_LIMIT.default


@attrs.define
class ResumeCommandParams:
    ref: str
    runtime: str | None = attrs.field(default=None, metadata={"wire_type": Runtime | None})
    new: bool = False
    cwd: str | None = None
    shell: str = attrs.field(default="posix", metadata={"wire_type": Shell})


@attrs.define
class RevokeTokenParams:
    ref: str
    surface: str = "editor"


@attrs.define
class NoParams:
    pass


class InitializationOptions(TypedDict, total=False):
    segueHome: str | None
    watch: bool


# ---------------------------------------------------------------------------------------------------------
# Results: exactly the keys the server sends (every key always present; `total=False` marks the only
# optional ones). Times are ISO 8601 UTC with milliseconds and `Z`. `Annotated` text is the field's doc.


class SessionRef(TypedDict):
    runtime: Runtime
    id: str


class TitledRef(TypedDict):
    """A session named in a reply; its title is the session's, else its first request (null: neither known)."""

    runtime: Runtime
    id: str
    title: str | None


class HandedOff(TypedDict):
    """A live, unclaimed handoff token exists for the session."""

    surface: str
    since: str | None
    expires_at: str | None


class Session(TypedDict):
    """One session, as `segue list --json` prints it (`model.Session.to_json`)."""

    runtime: Runtime
    id: str
    title: str | None
    first_request: str | None
    cwd: str | None
    branch: str | None
    started_at: str | None
    updated_at: str | None
    model: str | None
    parent_id: str | None
    resumable: bool
    resume_blocker: ResumeBlocker | None
    live: bool
    handed_off: HandedOff | None
    continues: SessionRef | None
    subagent_count: int
    store_path: str
    problems: list[str]


class ListSessionsResult(TypedDict):
    sessions: list[Session]
    skipped: int
    skipped_reasons: list[str]
    total: int
    next_offset: int | None


class FactsSession(TypedDict):
    runtime: Runtime
    id: str
    title: str | None
    cwd: str | None
    branch: str | None
    model: str | None
    started_at: str | None
    updated_at: str | None


class FileChange(TypedDict):
    path: str
    added: int | None
    removed: int | None


class CommandRun(TypedDict):
    command: str
    exit_code: int | None
    status: Annotated[str | None, "failed, rejected, interrupted or running, when the exit code is unknown"]


class StepText(TypedDict):
    kind: StepKind
    text: str


class Facts(TypedDict):
    """What a brief is written from, as `segue brief --json` prints it (`brief.Facts.to_json`)."""

    session: FactsSession
    first_request: str | None
    latest_request: str | None
    last_agent_message: str | None
    files_changed: list[FileChange]
    commands: list[CommandRun]
    steps: list[StepText]
    redactions: int
    truncated_steps: int
    damaged_lines: int
    from_kept_facts: bool
    kept_at: str | None
    omitted_commands: int
    omitted_files: int
    problems: list[str]


class BriefResult(TypedDict):
    uri: Annotated[str, "segue-brief:/RUNTIME/ID.md"]
    markdown: str
    facts: Facts


class Plan(TypedDict):
    """A resume plan, as `segue resume --dry-run` prints it. Nothing runs until the person confirms."""

    mode: PlanMode
    reason: PlanReason
    runtime: Runtime
    argv: list[str]
    cwd: str
    brief_path: str | None
    session: TitledRef
    handed_off: HandedOff | None
    live: Annotated[bool, "another process has the session open: confirm with a warning"]


class _PlanRefusal(TypedDict):
    refused: RefusalReason
    message: str


class PlanRefusal(_PlanRefusal, total=False):
    """A claim's plan that cannot be carried out, with the refusal's details."""

    cwd: str | None
    runtime: Runtime
    install: str
    install_command: str


class EmitTokenResult(TypedDict):
    token: str
    expires_at: str
    brief_path: str
    session: TitledRef


class ClaimedSession(TypedDict):
    runtime: Runtime
    id: str
    title: str | None
    cwd: str | None


class ClaimTokenResult(TypedDict):
    """As `segue handoff claim --json` prints it."""

    session: ClaimedSession
    source_surface: str | None
    claimed_as: str
    active_task: str | None
    tail: list[StepText]
    brief_path: str | None
    plan: Plan | PlanRefusal


class TokenStatus(TypedDict):
    """A token still within its lifetime (never the token itself)."""

    session: TitledRef
    surface: str
    issued_at: str | None
    expires_at: str | None
    seconds_left: Annotated[float, "at the time of the reply"]
    claimed: bool
    claimed_as: str | None


class TokenStatusResult(TypedDict):
    tokens: list[TokenStatus]


class TraceLink(TypedDict):
    """One session of the chain; `found` false: a session a marker names that Segue cannot find (no store it
    reads holds it, and no brief of it was kept), so its title and time are null."""

    runtime: Runtime
    id: str
    title: str | None
    started_at: str | None
    continues: SessionRef | None
    found: bool


class TraceResult(TypedDict):
    chain: list[TraceLink]


class SearchResult(TypedDict):
    runtime: Runtime
    id: str
    title: str | None
    cwd: str | None
    updated_at: str | None
    where: SearchWhere
    snippet: Annotated[str, "the match between « and »"]
    step: int
    parent_id: str | None
    parent_title: Annotated[str | None, "a subagent's parent, named as the listing names it (null: not known)"]
    exit_code: int | None


class SearchResults(TypedDict):
    results: list[SearchResult]
    total: int


class ResumeCommandResult(TypedDict):
    command: str
    shell: Shell
    plan: Plan


class RevokeTokenResult(TypedDict):
    revoked: int
    session: TitledRef


class Location(TypedDict):
    runtime: Runtime
    path: str
    exists: bool
    how_to_override: str | None
    sessions: Annotated[int, "top-level sessions listed from this place; a runtime's places add up to its sessions"]


class LocationsResult(TypedDict):
    locations: list[Location]


class DemoResult(TypedDict):
    markdown: str


class RuntimeCli(TypedDict):
    """A runtime's CLI, as a plan would look for it on this machine's PATH."""

    runtime: Runtime
    cli: str
    installed: bool
    install: Annotated[str, "how to install it, a sentence (\"install Cline: npm install -g cline\")"]


class RuntimesResult(TypedDict):
    runtimes: list[RuntimeCli]


class SessionsChangedParams(TypedDict):
    runtimes: list[Runtime]


class _ErrorData(TypedDict):
    reason: ErrorReason


class ErrorData(_ErrorData, total=False):
    """`data` of an error reply: the reason, plus the details some reasons carry."""

    ref: str
    candidates: list[str]
    cwd: str | None
    runtime: Runtime
    install: str
    install_command: str


# ---------------------------------------------------------------------------------------------------------
# The methods


@dataclass(frozen=True)
class Method:
    name: str
    params: type
    result: Any
    doc: str


METHODS: tuple[Method, ...] = (
    Method(LIST_SESSIONS, ListSessionsParams, ListSessionsResult,
           "Sessions as `segue list --json`. A page: `limit` and `offset` count top-level sessions (each followed by "
           "its subagents with include_subagents); `total` is how many top-level sessions match the filters, "
           "`next_offset` the offset of the next page (null on the last one). No params: every session."),
    Method(BRIEF, RefParams, BriefResult, "The brief of a session: its Markdown and the facts it is written from."),
    Method(PLAN_RESUME, PlanResumeParams, Plan,
           "The plan of `segue resume`; nothing is launched. A new session's brief is written unless `write` is"
           " false."),
    Method(EMIT_TOKEN, EmitTokenParams, EmitTokenResult, "A single-use handoff token for the session."),
    Method(CLAIM_TOKEN, ClaimTokenParams, ClaimTokenResult, "Claims a handoff token: `segue handoff claim --json`."),
    Method(TOKEN_STATUS, NoParams, TokenStatusResult, "Tokens still within their lifetime (never a token)."),
    Method(TRACE, RefParams, TraceResult, "The sessions a task went through, as `segue trace --json`."),
    Method(SEARCH, SearchParams, SearchResults,
           "As `segue search --json`; an unsearchable query is -32602."),
    Method(RESUME_COMMAND, ResumeCommandParams, ResumeCommandResult,
           "The command of `segue resume --print` and its plan (a runtime CLI missing here is no error: the line "
           "may be pasted on another machine)."),
    Method(REVOKE_TOKEN, RevokeTokenParams, RevokeTokenResult,
           "Revokes the live, unclaimed tokens that surface emitted for the session."),
    Method(LOCATIONS, NoParams, LocationsResult, "Where the stores were looked for."),
    Method(RUNTIME_CLIS, NoParams, RuntimesResult,
           "Each runtime's CLI and whether it is on PATH where the server runs (a plan needs it to launch)."),
    Method(DEMO, NoParams, DemoResult,
           "The bundled sample store listed and one session briefed, as `segue demo` prints them (read from a "
           "temporary copy)."),
)
# server -> client
NOTIFICATIONS: tuple[Method, ...] = (
    Method(SESSIONS_CHANGED, SessionsChangedParams, None, "A watched store gained sessions or activity."),
)
BY_NAME: dict[str, Method] = {m.name: m for m in METHODS}


class InvalidParams(ValueError):
    """Bad params; the message names the field."""


def _exact(t: type) -> Any:
    def hook(value: Any, _: type) -> Any:
        if type(value) is not t:  # bool is not an int, an int is not a str
            raise TypeError(f"expected {t.__name__}, got {type(value).__name__}")
        return value

    return hook


def _converter() -> cattrs.Converter:
    conv = cattrs.Converter(forbid_extra_keys=True)
    for t in (str, int, bool):
        conv.register_structure_hook(t, _exact(t))
    for m in METHODS:  # params whose wire keys are Python keywords (from, as, in)
        renames = {f.name: f.metadata["wire"] for f in attrs.fields(m.params) if "wire" in f.metadata}
        if renames:
            conv.register_structure_hook(m.params, make_dict_structure_fn(
                m.params, conv, _cattrs_forbid_extra_keys=True,
                **{k: override(rename=v) for k, v in renames.items()}))
    return conv


_CONV = _converter()
_PROTOCOL_KEYS = ("workDoneToken", "partialResultToken")


def parse(raw: Any, cls: type[Any]) -> tuple[Any, Any]:
    """(params object, workDoneToken or None); raises InvalidParams naming the field."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise InvalidParams("params must be a JSON object")
    raw = dict(raw)
    token = raw.pop("workDoneToken", None)
    raw.pop("partialResultToken", None)
    if cls in (ListSessionsParams, SearchParams) and isinstance(raw.get("runtime"), str):
        raw["runtime"] = [raw["runtime"]]
    try:
        obj = _CONV.structure(raw, cls)
    except cattrs.BaseValidationError as exc:
        msgs = cattrs.transform_error(exc, path="params")
        # paths use attribute names: params.from_ is the wire's params.from (an unknown key stays as sent)
        raise InvalidParams("; ".join(re.sub(r"@ params\.(from|as|in)_\b", r"@ params.\1", m) for m in msgs)) from None
    except (TypeError, ValueError, KeyError) as exc:
        raise InvalidParams(f"invalid params: {exc}") from None
    _check_values(obj)
    if token is not None and (isinstance(token, bool) or not isinstance(token, (str, int))):
        raise InvalidParams("invalid value @ params.workDoneToken: expected a string or integer")
    return obj, token


def _check_values(p: Any) -> None:
    for name in ("ref", "token"):
        v = getattr(p, name, None)
        if v is not None and (not v.strip() or len(v) > MAX_REF or "\x00" in v):
            raise InvalidParams(f"invalid value @ params.{name}: must be a non-empty string of at most "
                                f"{MAX_REF} characters")
    for name in ("dir", "cwd"):
        v = getattr(p, name, None)
        if v is not None and (not v or len(v) > MAX_PATH or "\x00" in v):
            raise InvalidParams(f"invalid value @ params.{name}: must be a path")
    if isinstance(p, ListSessionsParams):
        for r in p.runtime or []:
            if r not in RUNTIMES:
                raise InvalidParams(f"invalid value @ params.runtime: {r!r} is not one of {', '.join(RUNTIMES)}")
        if p.limit is not None and p.limit <= 0:
            raise InvalidParams("invalid value @ params.limit: must be a positive integer")
        if p.offset < 0:
            raise InvalidParams("invalid value @ params.offset: must be a non-negative integer")
    if isinstance(p, SearchParams):
        _check_search(p)
    if isinstance(p, PlanResumeParams) and p.runtime is not None and p.runtime not in RUNTIMES:
        raise InvalidParams(f"invalid value @ params.runtime: {p.runtime!r} is not one of {', '.join(RUNTIMES)}")
    if isinstance(p, ResumeCommandParams):
        if p.runtime is not None and p.runtime not in RUNTIMES:
            raise InvalidParams(f"invalid value @ params.runtime: {p.runtime!r} is not one of {', '.join(RUNTIMES)}")
        if p.shell not in ("posix", "powershell"):
            raise InvalidParams(f"invalid value @ params.shell: {p.shell!r} is not posix or powershell")
    if isinstance(p, RevokeTokenParams) and not re.fullmatch(r"[a-z][a-z0-9-]{0,31}", p.surface):
        raise InvalidParams("invalid value @ params.surface: a surface such as editor or terminal")
    if isinstance(p, ClaimTokenParams) and not CLAIM_TAIL.allows(p.tail):
        raise InvalidParams(f"invalid value @ params.tail: must be {CLAIM_TAIL.describe()}")
    for name in ("from_", "as_"):
        v = getattr(p, name, None)
        if v is not None and not re.fullmatch(r"[a-z][a-z0-9-]{0,31}", v):
            raise InvalidParams(f"invalid value @ params.{name.rstrip('_')}: a surface such as editor or terminal")


def _check_search(p: SearchParams) -> None:
    for r in p.runtime or []:
        if r not in RUNTIMES:
            raise InvalidParams(f"invalid value @ params.runtime: {r!r} is not one of {', '.join(RUNTIMES)}")
    if not SEARCH_LIMIT.allows(p.limit):
        raise InvalidParams(f"invalid value @ params.limit: must be {SEARCH_LIMIT.describe()}")
    if p.since is not None and (not p.since.strip() or len(p.since) > 64):
        raise InvalidParams("invalid value @ params.since: a date such as 2026-11-30 or an age such as 7d")


def brief_uri(runtime: str, session_id: str) -> str:
    from urllib.parse import quote

    return f"segue-brief:/{runtime}/{quote(session_id, safe='')}.md"
