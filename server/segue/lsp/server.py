"""The language server: Segue's service over custom JSON-RPC methods on stdio (pygls 2).

Handlers are thin: parse params (`protocol.parse`), call `Service` in a worker thread (one slow store never
blocks other requests), map domain errors to Segue's error codes. stdout is the JSON-RPC channel: logs go
to stderr and nothing else may print.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
from collections.abc import Callable
from typing import Any

import attrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol

from segue import __version__
from segue.errors import classify
from segue.lsp import protocol as P
from segue.lsp.watch import Watcher
from segue.paths import StateDir
from segue.service import Service

log = logging.getLogger("segue.lsp")


@attrs.define
class RequestEnvelope:  # params stay plain JSON; handlers validate them and answer -32602 themselves
    id: int | str
    method: str
    params: Any = None
    jsonrpc: str = "2.0"


@attrs.define
class NotificationEnvelope:
    method: str
    params: Any = None
    jsonrpc: str = "2.0"


REQUESTS: set[str] = set()


class SegueProtocol(LanguageServerProtocol):
    def get_message_type(self, method: str) -> Any:
        if method in REQUESTS:
            return RequestEnvelope
        return super().get_message_type(method)


class SegueServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("segue", __version__, protocol_cls=SegueProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.None_)
        self.home_override: str | None = None
        self.service: Service | None = None
        self.watcher: Watcher | None = None

    def report_server_error(self, error: Exception, source: Any) -> None:
        # never pop up "Error in server" in the editor; requests already carry their errors
        log.warning("server error (%s): %s", getattr(source, "__name__", source), type(error).__name__)

    def svc(self) -> Service:
        if self.service is None:
            self.service = Service(StateDir.resolve(self.home_override))
        return self.service


server = SegueServer()


def _rpc_error(e: BaseException) -> JsonRpcException:
    if isinstance(e, P.InvalidParams):
        return JsonRpcException(message=str(e), code=P.INVALID_PARAMS, data={"reason": "invalid_params"})
    c = classify(e)
    if c is not None:
        reason, message, data = c
        return JsonRpcException(message=message, code=P.ERROR_CODES.get(reason, P.ERROR_CODES["internal"]),
                                data={"reason": reason, **data})
    log.exception("request failed")
    return JsonRpcException(message=f"Segue could not complete the request ({type(e).__name__}); see the server log",
                            code=P.ERROR_CODES["internal"], data={"reason": "internal"})


def request(method: str, params_cls: type[Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a custom request: params parsed strictly, the work run in a thread, errors mapped."""
    REQUESTS.add(method)

    def register(work: Callable[..., Any]) -> Callable[..., Any]:
        async def handler(ls: SegueServer, raw: Any) -> Any:
            try:
                params, progress_token = P.parse(_plain(raw), params_cls)
            except P.InvalidParams as e:
                raise _rpc_error(e) from None
            cancelled = threading.Event()
            progress = _Progress(ls, progress_token, method) if progress_token is not None else None
            try:
                if progress:
                    progress.begin()
                return await asyncio.to_thread(work, ls, params, cancelled.is_set, progress)
            except asyncio.CancelledError:
                cancelled.set()  # the worker checks this between sources and stops
                raise
            except JsonRpcException:
                raise
            except Exception as e:
                raise _rpc_error(e) from None
            finally:
                if progress:
                    progress.end()

        server.feature(method)(handler)
        return work

    return register


def _plain(raw: Any) -> Any:
    """Envelope params are plain JSON already; tolerate pygls' namedtuple form defensively."""
    if hasattr(raw, "_asdict"):
        return {k: _plain(v) for k, v in raw._asdict().items()}
    if isinstance(raw, list):
        return [_plain(v) for v in raw]
    return raw


class _Progress:
    """Work-done progress on a token the client offered in the request."""

    def __init__(self, ls: SegueServer, token: Any, title: str) -> None:
        self.ls, self.token, self.title = ls, token, title
        self.loop = asyncio.get_running_loop()

    def begin(self) -> None:
        self.ls.work_done_progress.begin(self.token, types.WorkDoneProgressBegin(title="Segue", message=self.title,
                                                                                  cancellable=True, percentage=0))

    def report(self, message: str, percentage: int) -> None:  # called from the worker thread
        self.loop.call_soon_threadsafe(self.ls.work_done_progress.report, self.token,
                                       types.WorkDoneProgressReport(message=message, percentage=percentage))

    def end(self) -> None:
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd())


# ---------------------------------------------------------------------------------------------------------
# Methods


@request(P.LIST_SESSIONS, P.ListSessionsParams)
def list_sessions(ls: SegueServer, p: P.ListSessionsParams, cancelled: Callable[[], bool],
                  progress: _Progress | None) -> dict[str, Any]:
    svc = ls.svc()
    if progress:
        progress.report("reading session stores", 10)
    return svc.list_sessions(runtimes=p.runtime, directory=p.dir, include_subagents=p.include_subagents,
                             limit=p.limit, cancelled=cancelled)


@request(P.BRIEF, P.RefParams)
def brief(ls: SegueServer, p: P.RefParams, cancelled: Callable[[], bool], progress: _Progress | None
          ) -> dict[str, Any]:
    out = ls.svc().brief(p.ref)
    s = out["session"]
    return {"uri": P.brief_uri(s.runtime, s.id), "markdown": out["markdown"], "facts": out["facts"].to_json()}


@request(P.PLAN_RESUME, P.PlanResumeParams)
def plan_resume(ls: SegueServer, p: P.PlanResumeParams, cancelled: Callable[[], bool],
                progress: _Progress | None) -> dict[str, Any]:
    return ls.svc().plan_resume(p.ref, runtime=p.runtime, new=p.new, cwd=p.cwd).to_json()


@request(P.EMIT_TOKEN, P.EmitTokenParams)
def emit_token(ls: SegueServer, p: P.EmitTokenParams, cancelled: Callable[[], bool],
               progress: _Progress | None) -> dict[str, Any]:
    return ls.svc().emit(p.ref, p.from_)


@request(P.CLAIM_TOKEN, P.ClaimTokenParams)
def claim_token(ls: SegueServer, p: P.ClaimTokenParams, cancelled: Callable[[], bool],
                progress: _Progress | None) -> dict[str, Any]:
    return ls.svc().claim(p.token, p.as_, tail=p.tail)


@request(P.TOKEN_STATUS, P.NoParams)
def token_status(ls: SegueServer, p: P.NoParams, cancelled: Callable[[], bool],
                 progress: _Progress | None) -> dict[str, Any]:
    return {"tokens": ls.svc().token_status()}


@request(P.TRACE, P.RefParams)
def trace(ls: SegueServer, p: P.RefParams, cancelled: Callable[[], bool], progress: _Progress | None
          ) -> dict[str, Any]:
    return {"chain": ls.svc().trace(p.ref)}


@server.feature(types.INITIALIZE)
def on_initialize(ls: SegueServer, params: types.InitializeParams) -> None:
    opts = params.initialization_options
    home = None
    if isinstance(opts, dict):
        home = opts.get("segueHome")
    elif opts is not None and hasattr(opts, "segueHome"):
        home = opts.segueHome
    if isinstance(home, str) and home:
        ls.home_override = home
        ls.service = None


@server.feature(types.INITIALIZED)
def on_initialized(ls: SegueServer, params: types.InitializedParams) -> None:
    interval = float(os.environ.get("SEGUE_WATCH_INTERVAL", "1.0"))
    ls.watcher = Watcher(ls.svc(), notify=lambda runtimes: _notify_changed(ls, runtimes), interval=interval)
    ls.watcher.start()


def _notify_changed(ls: SegueServer, runtimes: list[str]) -> None:
    loop = ls.loop
    loop.call_soon_threadsafe(ls.protocol.notify, P.SESSIONS_CHANGED, {"runtimes": runtimes})


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: SegueServer, params: Any) -> None:
    if ls.watcher:
        ls.watcher.stop()


def serve(home: str | None = None, argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="segue serve")
    p.add_argument("--stdio", action="store_true", help="accepted; stdio is the only transport")
    p.parse_known_args(argv or [])
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("SEGUE_LOG_LEVEL", "WARNING").upper(),
                        format="segue-lsp %(levelname)s %(name)s: %(message)s")
    if home:
        server.home_override = home
    server.start_io()
    return 0
