"""The JSON-RPC layer under Segue's handlers: every request gets exactly one answer.

pygls drops some messages without a reply: a body that is not JSON, an envelope it cannot structure (an id
that is an object, params of the wrong shape for a standard LSP method, a nested object that happens to
carry a `jsonrpc` key), a `jsonrpc` other than "2.0", requests after `shutdown`. A client then waits until
its own timeout. `SegueProtocol` validates the envelope first and answers what it can: -32700 (id null) for
unparsable bodies, -32600 for a bad envelope, -32602 when a standard method's params do not fit its type.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import threading
from typing import Any

import attrs
import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, LanguageServerProtocol
from pygls.protocol.json_rpc import JsonRPCResponseMessage

try:
    from orjson import dumps as _fast_dumps
except ImportError:  # pragma: no cover - the bundled server may ship without it; json.dumps is the reference
    _fast_dumps = None

from segue.heap import give_back

log = logging.getLogger("segue.lsp")
GIVE_BACK_AT = 4 << 20  # a reply this large (bytes) leaves megabytes of freed heap behind
_WRITES: set[Any] = set()  # pending asynchronous writes, kept referenced until done
_STREAM_LOCK = threading.RLock()  # one message at a time on the stream

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@attrs.define
class RequestEnvelope:  # params stay plain JSON; handlers validate them and answer -32602 themselves
    id: int | str
    method: str
    params: Any = None
    jsonrpc: str = "2.0"


REQUESTS: set[str] = set()  # Segue's custom request methods, filled by `server.request`
REQUEST_PARAMS: dict[str, type] = {}  # each custom request's params class (the wire contract test reads it)


def valid_id(v: Any) -> bool:
    return (isinstance(v, int) and not isinstance(v, bool)) or isinstance(v, str)


def _fields(cls: type | None) -> set[str]:
    return {f.name for f in attrs.fields(cls)} if cls is not None and attrs.has(cls) else set()


class SegueProtocol(LanguageServerProtocol):
    def get_message_type(self, method: str) -> Any:
        if method in REQUESTS:
            return RequestEnvelope
        return super().get_message_type(method)

    def _send_data(self, data: Any) -> None:
        # A large plain-JSON result (a whole listing: megabytes) is encoded by orjson when it is installed;
        # anything orjson refuses (a lone surrogate, a huge int, an attrs object) takes pygls' own path.
        if (_fast_dumps is not None and type(data) is JsonRPCResponseMessage and type(data.result) is dict
                and self.writer is not None and self._include_headers):
            try:
                body = _fast_dumps({"id": data.id, "jsonrpc": data.jsonrpc, "result": data.result})
            except TypeError:
                body = None
            if body is not None:
                head = (f"Content-Length: {len(body)}\r\n"
                        f"Content-Type: {self.CONTENT_TYPE}; charset={self.CHARSET}\r\n\r\n").encode("ascii")
                if isinstance(self.writer, StdoutWriter):
                    # a stream: the header and the body go out one after the other, so the body (a whole
                    # listing: 22 MB at 32,000 sessions) is never copied into one more buffer first. Every send
                    # runs on the event loop's thread (handlers' results and notifications are handed to it);
                    # the lock keeps the two writes one message even if a send ever came from another thread.
                    with _STREAM_LOCK:
                        self.writer.write(head)
                        self.writer.write(body)
                    res = None
                else:  # a message-framed writer (a websocket) takes the message whole
                    res = self.writer.write(head + body)
                if inspect.isawaitable(res):
                    task = asyncio.ensure_future(res)
                    _WRITES.add(task)
                    task.add_done_callback(_WRITES.discard)
                size = len(body)
                del head, body, res
                if size >= GIVE_BACK_AT:
                    give_back()  # the body is freed now: return its pages (glibc keeps them otherwise)
                return
        with _STREAM_LOCK:
            super()._send_data(data)

    def _serialize_message(self, data: Any) -> Any:
        # Segue's own results are plain JSON already: json.dumps writes them as they are instead of cattrs
        # walking every value of a multi-megabyte listing first (a nested attrs object still comes back here)
        if type(data) is JsonRPCResponseMessage and type(data.result) is dict:
            return {"id": data.id, "jsonrpc": data.jsonrpc, "result": data.result}
        return super()._serialize_message(data)

    def structure_message(self, data: dict[str, Any]) -> Any:
        # json.loads calls this for every object, nested ones included: keep them all plain and structure only
        # the envelope, in handle_message, where a bad one can still be answered
        return data

    def handle_message(self, message: Any) -> None:
        try:
            self._dispatch(message)
        except Exception:  # nothing a client sends may stop the read loop
            log.exception("could not handle a message")

    def reply_error(self, msg_id: Any, code: int, message: str) -> None:
        self._send_data({"jsonrpc": "2.0", "id": msg_id, "error": {"code": code, "message": message}})

    def _dispatch(self, raw: Any) -> None:
        if not isinstance(raw, dict):
            self.reply_error(None, INVALID_REQUEST, "a JSON-RPC message must be a JSON object")
            return
        has_method, has_id = "method" in raw, "id" in raw
        msg_id, method = raw.get("id"), raw.get("method")
        if not has_method:  # a response to one of our requests (or junk): nothing to answer
            if raw.get("jsonrpc") == "2.0" and valid_id(msg_id):
                super().handle_message(super().structure_message(raw))
            else:
                log.warning("ignoring a message with neither a method nor a valid id")
            return
        if has_id and not valid_id(msg_id):
            self.reply_error(None, INVALID_REQUEST, "the request id must be a string or an integer")
            return
        if raw.get("jsonrpc") != "2.0" or not isinstance(method, str):
            if has_id:
                self.reply_error(msg_id, INVALID_REQUEST,
                                 'a request needs "jsonrpc": "2.0" and a string "method"')
            else:
                log.warning("ignoring a notification without jsonrpc 2.0 or a string method")
            return
        if has_id and self._shutdown and method != types.EXIT:
            self.reply_error(msg_id, INVALID_REQUEST, "the server is shutting down; only exit is accepted")
            return
        typed = self.get_message_type(method)
        if has_id:
            if typed is not None and "id" not in _fields(typed):
                self.reply_error(msg_id, INVALID_REQUEST, f"{method} is a notification; send it without an id")
                return
            cls = typed or JsonRPCRequestMessage
        else:
            if typed is not None and "id" in _fields(typed):
                log.warning("ignoring %s sent as a notification: it is a request", method[:100])
                return
            cls = typed or JsonRPCNotification
        body = {k: raw[k] for k in ("jsonrpc", "id", "method", "params") if k in raw}
        if cls in (JsonRPCRequestMessage, JsonRPCNotification):
            body.setdefault("params", None)
        try:
            message = self._converter.structure(body, cls)
        except Exception as e:
            if has_id:
                self.reply_error(msg_id, INVALID_PARAMS, f"invalid params for {method[:100]}: {_describe(e)}")
            else:
                log.warning("ignoring %s: its params do not fit (%s)", method[:100], type(e).__name__)
            return
        super().handle_message(message)


def _describe(e: Exception) -> str:
    if isinstance(e, cattrs.BaseValidationError):
        return "; ".join(cattrs.transform_error(e, path="$"))[:1000]
    return type(e).__name__


class ExpectedErrors(logging.Filter):
    """pygls logs every error reply with a traceback; Segue's own (bad params, unknown session, ...) are
    answers, not faults, so they stay out of the log. Unexpected failures are logged by the handler."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not isinstance(exc, JsonRpcException)
