"""The language server: Segue's service over custom JSON-RPC methods on stdio (pygls 2).

Handlers are thin: parse params (`protocol.parse`), call `Service` in a worker thread (one slow store never
blocks other requests), map domain errors to Segue's error codes. stdout is the JSON-RPC channel: logs go
to stderr, and `serve` points file descriptor 1 at stderr so nothing else can print there.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pygls.lsp.server import LanguageServer

from segue import __version__
from segue.errors import INVALID_PARAMS, classify
from segue.lsp import protocol as P
from segue.lsp.rpc import PARSE_ERROR, REQUEST_PARAMS, REQUESTS, ExpectedErrors, SegueProtocol
from segue.lsp.watch import Watcher
from segue.paths import StateDir
from segue.results import Json
from segue.service import Service
from segue.stores import RUNTIMES

log = logging.getLogger("segue.lsp")


class SegueServer(LanguageServer):
    def __init__(self) -> None:
        super().__init__("segue", __version__, protocol_cls=SegueProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.None_)
        self.cli_home: str | None = None  # `segue --home DIR serve` wins over initializationOptions
        self.home_override: str | None = None
        self.watch = True
        self.service: Service | None = None
        self.watcher: Watcher | None = None
        self.event_loop: asyncio.AbstractEventLoop | None = None
        self.exit_code = 0  # stdin closing without `exit` (the editor went away) is not an error
        self._service_lock = threading.Lock()

    def report_server_error(self, error: Exception, source: Any) -> None:
        if source is JsonRpcException:  # only the read loop reports this way: the body was not JSON
            self.protocol.reply_error(None, PARSE_ERROR, f"parse error: {type(error).__name__}")  # type: ignore[attr-defined]
            return
        # never pop up "Error in server" in the editor: a request's error is in its reply (mapped failures are
        # logged where they happen), anything else is logged here
        level = logging.DEBUG if isinstance(error, JsonRpcException) else logging.WARNING
        log.log(level, "server error (%s): %s", getattr(source, "__name__", source), type(error).__name__)

    def svc(self) -> Service:
        with self._service_lock:  # handlers run in several threads at once
            if self.service is None:
                self.service = Service(StateDir.resolve(self.cli_home or self.home_override))
            return self.service


server = SegueServer()


def _rpc_error(e: BaseException) -> JsonRpcException:
    from segue.listing import Cancelled

    if isinstance(e, P.InvalidParams):
        return JsonRpcException(message=str(e), code=P.INVALID_PARAMS, data={"reason": "invalid_params"})
    if isinstance(e, Cancelled):
        return JsonRpcRequestCancelled(message="the request was cancelled", data={"reason": "cancelled"})
    c = classify(e)
    if c is not None:
        reason, message, data = c
        code = P.INVALID_PARAMS if reason == INVALID_PARAMS else P.ERROR_CODES.get(reason, P.ERROR_CODES["internal"])
        return JsonRpcException(message=message, code=code, data={"reason": reason, **data})
    log.error("request failed", exc_info=(type(e), e, e.__traceback__))
    return JsonRpcException(message=f"Segue could not complete the request ({type(e).__name__}); see the server log",
                            code=P.ERROR_CODES["internal"], data={"reason": "internal"})


def request(method: str, params_cls: type[Any]) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Register a custom request: params parsed strictly, the work run in a thread, errors mapped."""
    REQUESTS.add(method)
    REQUEST_PARAMS[method] = params_cls

    def register(work: Callable[..., Any]) -> Callable[..., Any]:
        async def handler(ls: SegueServer, raw: Any) -> Any:
            try:
                params, progress_token = P.parse(_plain(raw), params_cls)
            except P.InvalidParams as e:
                raise _rpc_error(e) from None
            cancelled = threading.Event()
            progress = _Progress(ls, progress_token, method, cancelled) if progress_token is not None else None
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
    """Work-done progress on a token the client offered in the request; cancelling it cancels the work."""

    def __init__(self, ls: SegueServer, token: Any, title: str, cancelled: threading.Event) -> None:
        self.ls, self.token, self.title, self.cancelled = ls, token, title, cancelled
        self.loop = asyncio.get_running_loop()
        self.ended = False  # a scan this request waited on may report after the reply (another thread's)

    def begin(self) -> None:
        wdp = self.ls.work_done_progress
        wdp.begin(self.token, types.WorkDoneProgressBegin(title="Segue", message=self.title, cancellable=True,
                                                          percentage=0))
        fut = wdp.tokens.get(self.token)
        if fut is not None:  # window/workDoneProgress/cancel cancels this future
            fut.add_done_callback(lambda f: self.cancelled.set() if f.cancelled() else None)

    def report(self, message: str, percentage: int) -> None:  # called from a worker or the watcher's thread
        self.loop.call_soon_threadsafe(self._report, types.WorkDoneProgressReport(message=message,
                                                                                  percentage=percentage))

    def _report(self, value: types.WorkDoneProgressReport) -> None:  # on the loop, so ordered with end()
        if not self.ended:
            self.ls.work_done_progress.report(self.token, value)

    def end(self) -> None:
        self.ended = True
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd())
        self.ls.work_done_progress.tokens.pop(self.token, None)  # pygls never forgets client tokens


def per_percent(report: Callable[[str, int], None]) -> Callable[[int, int], None]:
    """The index build's per-session count as reports a client sees once per percent (8,000 sessions would be
    8,000 `$/progress` messages for the event loop to write while the build runs)."""
    last = -1

    def indexing(done: int, total: int) -> None:
        nonlocal last
        pct = 100 * done // total if total else 100
        if total and pct != last:
            last = pct
            report(f"indexing sessions for search {done}/{total}", pct)

    return indexing


# ---------------------------------------------------------------------------------------------------------
# Methods


@request(P.LIST_SESSIONS, P.ListSessionsParams)
def list_sessions(ls: SegueServer, p: P.ListSessionsParams, cancelled: Callable[[], bool],
                  progress: _Progress | None) -> Json:
    svc = ls.svc()
    report = None
    read: list[str] = []
    runtimes = [r for r in RUNTIMES if not p.runtime or r in p.runtime]
    if progress:  # a scan says how far it is: runtime by runtime, sessions read
        totals: dict[str, int] = {}
        dones: dict[str, int] = {}

        def report(runtime: str, sessions: int, done: int, total: int) -> None:
            read.append(runtime)
            if runtime not in runtimes:
                return
            totals[runtime], dones[runtime] = total, done
            # a scan opens with every runtime's count of what it will read, then reads them side by side: the
            # share of all sources read only grows
            if (done == 0 and total) or (done != total and done % 50):
                return
            whole = sum(totals.values())
            progress.report(f"reading {runtime} sessions: {sessions} read, {done}/{total} sources",
                            100 * sum(dones.values()) // whole if whole else 100)
    # pages come from the service's decorated view, kept current by the store watcher
    page = svc.page(runtimes=p.runtime, directory=p.dir, include_subagents=p.include_subagents,
                    limit=p.limit, offset=p.offset, cancelled=cancelled, progress=report)
    if progress and not read:  # nothing had to be read: say what the index holds, runtime by runtime
        counts = Counter(s.runtime for s in page.sessions)
        for i, rt in enumerate(runtimes):
            progress.report(f"{rt}: {counts.get(rt, 0)} sessions listed", 100 * (i + 1) // len(runtimes))
    return page.to_json()


@request(P.BRIEF, P.RefParams)
def brief(ls: SegueServer, p: P.RefParams, cancelled: Callable[[], bool], progress: _Progress | None) -> Json:
    b = ls.svc().brief(p.ref, cancelled)
    return {"uri": P.brief_uri(b.session.runtime, b.session.id), **b.to_json()}


@request(P.PLAN_RESUME, P.PlanResumeParams)
def plan_resume(ls: SegueServer, p: P.PlanResumeParams, cancelled: Callable[[], bool],
                progress: _Progress | None) -> Json:
    return ls.svc().plan_resume(p.ref, runtime=p.runtime, new=p.new, cwd=p.cwd, write=p.write,
                                cancelled=cancelled).to_json()


@request(P.EMIT_TOKEN, P.EmitTokenParams)
def emit_token(ls: SegueServer, p: P.EmitTokenParams, cancelled: Callable[[], bool],
               progress: _Progress | None) -> Json:
    return ls.svc().emit(p.ref, p.from_, cancelled).to_json()


@request(P.CLAIM_TOKEN, P.ClaimTokenParams)
def claim_token(ls: SegueServer, p: P.ClaimTokenParams, cancelled: Callable[[], bool],
                progress: _Progress | None) -> Json:
    return ls.svc().claim(p.token, p.as_, tail=p.tail).to_json()


@request(P.TOKEN_STATUS, P.NoParams)
def token_status(ls: SegueServer, p: P.NoParams, cancelled: Callable[[], bool],
                 progress: _Progress | None) -> Json:
    return {"tokens": [t.to_json() for t in ls.svc().token_status()]}


@request(P.TRACE, P.RefParams)
def trace(ls: SegueServer, p: P.RefParams, cancelled: Callable[[], bool], progress: _Progress | None) -> Json:
    return {"chain": ls.svc().trace(p.ref, cancelled).to_json()}


@request(P.SEARCH, P.SearchParams)
def search(ls: SegueServer, p: P.SearchParams, cancelled: Callable[[], bool], progress: _Progress | None) -> Json:
    """Answered from the search index; while the index fills, work-done progress counts the sessions.
    An unsearchable query is -32602 and a SQLite without FTS5 search_unavailable (their reasons)."""
    import time

    from segue.search.query import parse_since

    indexing = per_percent(progress.report) if progress is not None else None
    return ls.svc().search(p.query, runtimes=p.runtime, directory=p.dir, since=parse_since(p.since, time.time()),
                           where=p.in_, limit=p.limit, progress=indexing, cancelled=cancelled,
                           notice=lambda msg: log.warning("%s", msg)).to_json()


@request(P.RESUME_COMMAND, P.ResumeCommandParams)
def resume_command(ls: SegueServer, p: P.ResumeCommandParams, cancelled: Callable[[], bool],
                   progress: _Progress | None) -> Json:
    return ls.svc().resume_command(p.ref, runtime=p.runtime, new=p.new, cwd=p.cwd, shell=p.shell,
                                   cancelled=cancelled).to_json()


@request(P.REVOKE_TOKEN, P.RevokeTokenParams)
def revoke_token(ls: SegueServer, p: P.RevokeTokenParams, cancelled: Callable[[], bool],
                 progress: _Progress | None) -> Json:
    return ls.svc().revoke(p.ref, p.surface, cancelled).to_json()


@request(P.LOCATIONS, P.NoParams)
def locations(ls: SegueServer, p: P.NoParams, cancelled: Callable[[], bool], progress: _Progress | None) -> Json:
    svc = ls.svc()
    locs = [loc.to_json() for loc in svc.locations(cancelled)]
    listed = svc.page(include_subagents=False, cancelled=cancelled).sessions  # the decorated view: cached
    counts = location_counts(locs, [(s.runtime, s.store_path) for s in listed])
    return {"locations": [{**loc, "sessions": n} for loc, n in zip(locs, counts, strict=True)]}


def location_counts(locs: list[Json], sessions: list[tuple[str, str]]) -> list[int]:
    """How many (top-level) listed sessions each place holds: a session counts where its source is, the deepest
    place of its runtime holding it; one under none of them (a kept brief's, a moved source) counts at the
    runtime's first place that exists, so a runtime's places add up to its sessions."""
    counts = [0] * len(locs)
    by_runtime: dict[str, list[int]] = {}
    for i, loc in enumerate(locs):
        by_runtime.setdefault(loc["runtime"], []).append(i)
    for runtime, source in sessions:
        mine = by_runtime.get(runtime)
        if not mine:
            continue
        src = os.path.normpath(source)
        holding = [i for i in mine if _within(src, os.path.normpath(locs[i]["path"]))]
        if holding:
            counts[max(holding, key=lambda i: len(locs[i]["path"]))] += 1
        else:
            counts[next((i for i in mine if locs[i]["exists"]), mine[0])] += 1
    return counts


def _within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@request(P.RUNTIME_CLIS, P.NoParams)
def runtime_clis(ls: SegueServer, p: P.NoParams, cancelled: Callable[[], bool], progress: _Progress | None) -> Json:
    from segue.resume import PlanRefused, locate_cli
    from segue.stores import descriptor

    out = []
    for rt in RUNTIMES:
        d = descriptor(rt)
        try:
            installed = bool(locate_cli(rt))
        except PlanRefused:
            installed = False
        out.append({"runtime": rt, "cli": d.cli, "installed": installed, "install": d.install_hint})
    return {"runtimes": out}


@request(P.DEMO, P.NoParams)
def demo(ls: SegueServer, p: P.NoParams, cancelled: Callable[[], bool], progress: _Progress | None) -> Json:
    from segue.lsp.sample import demo_markdown

    return {"markdown": demo_markdown()}


@server.feature(types.INITIALIZE)
def on_initialize(ls: SegueServer, params: types.InitializeParams) -> None:
    opts = _plain(params.initialization_options)
    if not isinstance(opts, dict):
        return
    home = opts.get("segueHome")
    if isinstance(home, str) and home and "\x00" not in home:
        with ls._service_lock:
            ls.home_override = home
            ls.service = None
    if opts.get("watch") is False:
        ls.watch = False


REUSE_WITHIN = 3.0


@server.feature(types.INITIALIZED)
def on_initialized(ls: SegueServer, params: types.InitializedParams) -> None:
    ls.event_loop = asyncio.get_running_loop()
    if not ls.watch or ls.watcher is not None:
        return
    svc = ls.svc()
    ls.watcher = Watcher(svc, notify=lambda runtimes: _notify_changed(ls, runtimes), interval=watch_interval())
    # With a watcher rescanning on every change it sees, a listing a few seconds old is current enough:
    # requests then answer from memory instead of statting every source again.
    svc.reuse_within = REUSE_WITHIN
    ls.watcher.start()


def watch_interval() -> float:
    try:
        v = float(os.environ.get("SEGUE_WATCH_INTERVAL", "1.0"))
    except ValueError:
        return 1.0
    return min(max(v, 0.05), 60.0) if v == v else 1.0  # NaN -> default


def _notify_changed(ls: SegueServer, runtimes: list[str]) -> None:
    loop = ls.event_loop
    if loop is None or loop.is_closed():
        return
    loop.call_soon_threadsafe(ls.protocol.notify, P.SESSIONS_CHANGED, {"runtimes": runtimes})


@server.feature(types.SHUTDOWN)
def on_shutdown(ls: SegueServer, params: Any) -> None:
    if ls.watcher:
        ls.watcher.stop()


@server.feature(types.EXIT)
def on_exit(ls: SegueServer, params: Any) -> None:
    # pygls raises SystemExit(1 without a prior shutdown) but start_io swallows it; serve returns this instead
    ls.exit_code = 0 if ls.protocol._shutdown else 1


def serve(home: str | None = None, argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="segue serve")
    p.add_argument("--stdio", action="store_true", help="accepted; stdio is the only transport")
    p.parse_known_args(argv or [])
    level = os.environ.get("SEGUE_LOG_LEVEL", "WARNING").upper()
    logging.basicConfig(stream=sys.stderr, level=level if isinstance(logging.getLevelName(level), int) else "WARNING",
                        format="segue-lsp %(levelname)s %(name)s: %(message)s")
    logging.getLogger("pygls.protocol.json_rpc").addFilter(ExpectedErrors())
    rpc_out = _claim_stdout()
    if home:
        server.cli_home = home
    server.start_io(sys.stdin.buffer, rpc_out)
    return server.exit_code


def _claim_stdout() -> Any:
    """Keep a private handle on the real stdout for JSON-RPC and point fd 1 (print, C code, child processes)
    at stderr, so a stray write cannot corrupt the channel."""
    sys.stdout.flush()
    fd = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return os.fdopen(fd, "wb")
