"""Segue's custom JSON-RPC methods: params, results, error codes. The extension mirrors this module.

Params and results are plain JSON objects with the CLI's snake_case keys (no camelCase renaming, no field
omitted, null for unknown). Params are validated strictly: wrong types, unknown keys and bad values get
-32602 with a message naming the field.

Methods (client -> server):
  segue/listSessions {runtime?: str | str[], dir?: str, include_subagents?: bool, limit?: int, offset?: int}
      -> {sessions: Session[], skipped: int, skipped_reasons: str[], total: int, next_offset: int | null}
      (sessions as `segue list --json`). A page: `limit` and `offset` count top-level sessions (each followed
      by its subagents with include_subagents); `total` is how many top-level sessions match the filters,
      `next_offset` the offset of the next page (null on the last one). No params: every session, as before.
  segue/brief        {ref: str} -> {uri: "segue-brief:/RUNTIME/ID.md", markdown: str, facts: {...}}
  segue/planResume   {ref: str, runtime?: str, new?: bool, cwd?: str} -> the plan of `segue resume --dry-run`
  segue/emitToken    {ref: str, from: str} -> {token, expires_at, brief_path, session}
  segue/claimToken   {token: str, as: str} -> the JSON of `segue handoff claim --json`
  segue/tokenStatus  {} -> {tokens: [...]}  (never a token)
  segue/trace        {ref: str} -> {chain: [...]}  (as `segue trace --json`)
  segue/search       {query: str, runtime?: str | str[], dir?: str, since?: str, in?: str[], limit?: int}
      -> {results: [...], total: int}  (as `segue search --json`; an unsearchable query is -32602)
  segue/resumeCommand {ref: str, runtime?: str, new?: bool, cwd?: str, shell?: "posix" | "powershell"}
      -> {command: str, shell: str, plan: Plan}  (command as `segue resume --print`; a runtime CLI missing
         here is no error: the line may be pasted on another machine)
  segue/revokeToken  {ref: str, surface?: str} -> {revoked: int, session: {runtime, id, title}}  (the live,
      unclaimed tokens that surface (default "editor") emitted for the session)
  segue/locations    {} -> {locations: [{runtime, path, exists, how_to_override}]}  (where stores were looked for)
  segue/demo         {} -> {markdown: str}  (the bundled sample store listed and one session briefed, as
      `segue demo` prints them; read from a temporary copy)
Notification (server -> client):
  segue/sessionsChanged {runtimes: str[]}
`workDoneToken` (LSP's own camelCase key) may accompany any request; long scans then report progress, and
window/workDoneProgress/cancel on that token cancels the request like $/cancelRequest.

initializationOptions: {segueHome?: str (the state directory: tokens, briefs, cache; `segue --home` wins,
then this, then $SEGUE_HOME), watch?: bool (false: no sessionsChanged notifications, no polling)}.
The poll interval of the watch is $SEGUE_WATCH_INTERVAL seconds (default 1.0).

Errors: -32700 unparsable body (id null), -32600 bad envelope (id not a string or integer, no jsonrpc 2.0,
a request after shutdown), -32601 unknown method, -32602 bad params (the message names the field,
data.reason "invalid_params"), -32800 cancelled (data.reason "cancelled" when the work itself stopped), and
Segue's own codes below, each with data.reason equal to its key (plus details such as data.candidates).
"""

from __future__ import annotations

import re
from typing import Any

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, override

from segue.stores import RUNTIMES

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
SESSIONS_CHANGED = "segue/sessionsChanged"

# Error codes (JSON-RPC server range -32099..-32000; -32001/-32002 are taken by the base protocol).
# Every Segue error carries data.reason.
INVALID_PARAMS = -32602
ERROR_CODES: dict[str, int] = {
    "unknown_session": -32010,
    "ambiguous_session": -32011,
    "malformed": -32020,  # token of the wrong shape
    "unknown": -32021,  # token not in the registry
    "expired": -32022,
    "claimed": -32023,
    "revoked": -32024,
    "missing_directory": -32030,
    "missing_cli": -32031,
    "bad_target": -32032,
    "store_unreadable": -32040,
    "unsafe_directory": -32041,
    "permission_denied": -32042,
    "internal": -32050,
    "search_unavailable": -32060,  # this Python's SQLite has no full-text search (FTS5)
}
MAX_REF = 400
MAX_PATH = 4096


@attrs.define
class ListSessionsParams:
    runtime: list[str] | None = None
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
    runtime: str | None = None
    new: bool = False
    cwd: str | None = None


@attrs.define
class EmitTokenParams:
    ref: str
    from_: str = "editor"


@attrs.define
class ClaimTokenParams:
    token: str
    as_: str = "editor"
    tail: int = 20


@attrs.define
class SearchParams:
    query: str
    runtime: list[str] | None = None
    dir: str | None = None
    since: str | None = None
    in_: list[str] | None = None
    limit: int = 20


@attrs.define
class ResumeCommandParams:
    ref: str
    runtime: str | None = None
    new: bool = False
    cwd: str | None = None
    shell: str = "posix"


@attrs.define
class RevokeTokenParams:
    ref: str
    surface: str = "editor"


@attrs.define
class NoParams:
    pass


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
    for cls, renames in ((EmitTokenParams, {"from_": "from"}), (ClaimTokenParams, {"as_": "as"}),
                         (SearchParams, {"in_": "in"})):
        conv.register_structure_hook(cls, make_dict_structure_fn(
            cls, conv, _cattrs_forbid_extra_keys=True, **{k: override(rename=v) for k, v in renames.items()}))
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
    if isinstance(p, ClaimTokenParams) and not 0 <= p.tail <= 200:
        raise InvalidParams("invalid value @ params.tail: must be between 0 and 200")
    for name in ("from_", "as_"):
        v = getattr(p, name, None)
        if v is not None and not re.fullmatch(r"[a-z][a-z0-9-]{0,31}", v):
            raise InvalidParams(f"invalid value @ params.{name.rstrip('_')}: a surface such as editor or terminal")


def _check_search(p: SearchParams) -> None:
    for r in p.runtime or []:
        if r not in RUNTIMES:
            raise InvalidParams(f"invalid value @ params.runtime: {r!r} is not one of {', '.join(RUNTIMES)}")
    if not 0 < p.limit <= 1000:
        raise InvalidParams("invalid value @ params.limit: must be between 1 and 1000")
    if p.since is not None and (not p.since.strip() or len(p.since) > 64):
        raise InvalidParams("invalid value @ params.since: a date such as 2026-11-30 or an age such as 7d")


def brief_uri(runtime: str, session_id: str) -> str:
    from urllib.parse import quote

    return f"segue-brief:/{runtime}/{quote(session_id, safe='')}.md"
