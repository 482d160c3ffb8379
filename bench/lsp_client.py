"""A minimal JSON-RPC client for `segue serve` over stdio (Content-Length framing), enough to time requests.

A reader thread collects the server's messages; requests the server sends to us (progress creation,
capability registration) are answered with a null result so the server never waits on the benchmark.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import IO, Any

from bench.proc import status_kb


class LspError(Exception):
    pass


class Client:
    def __init__(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> None:
        self.t_start = time.perf_counter()
        self.p = subprocess.Popen(list(argv), env=dict(env), cwd=cwd, stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self._next = 0
        self._replies: queue.Queue[dict[str, Any]] = queue.Queue()
        self.notifications: list[str] = []
        self._lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    @property
    def pid(self) -> int:
        return self.p.pid

    def _write(self, obj: dict[str, Any]) -> None:
        body = json.dumps(obj).encode("utf-8")
        assert self.p.stdin is not None
        with self._lock:
            self.p.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.p.stdin.flush()

    def _read(self) -> None:
        f: IO[bytes] | None = self.p.stdout
        assert f is not None
        try:
            while True:
                length = None
                while True:
                    line = f.readline()
                    if not line:
                        return
                    line = line.strip()
                    if not line:
                        break
                    k, _, v = line.partition(b":")
                    if k.lower() == b"content-length":
                        length = int(v)
                if length is None:
                    continue
                msg = json.loads(f.read(length))
                if "method" in msg and "id" in msg:  # a request from the server
                    self._write({"jsonrpc": "2.0", "id": msg["id"], "result": None})
                elif "method" in msg:
                    self.notifications.append(msg["method"])
                else:
                    self._replies.put(msg)
        finally:
            self._replies.put({"id": None, "closed": True})

    def notify(self, method: str, params: Any) -> None:
        self._write({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, method: str, params: Any, timeout: float = 600) -> tuple[Any, float]:
        """(result, seconds from sending to the reply)."""
        self._next += 1
        rid = self._next
        t0 = time.perf_counter()
        self._write({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        deadline = t0 + timeout
        while True:
            left = deadline - time.perf_counter()
            if left <= 0:
                raise LspError(f"{method}: no reply in {timeout} s")
            msg = self._replies.get(timeout=left)
            if msg.get("closed"):
                raise LspError(f"{method}: the server closed its output")
            if msg.get("id") != rid:
                continue
            elapsed = time.perf_counter() - t0
            if "error" in msg:
                raise LspError(f"{method}: {msg['error']}")
            return msg.get("result"), elapsed

    def initialize(self, segue_home: str) -> Any:
        result, _ = self.request("initialize", {"processId": None, "rootUri": None, "capabilities": {},
                                                "initializationOptions": {"segueHome": segue_home}})
        self.notify("initialized", {})
        return result

    def peak_rss_mb(self) -> float | None:
        kb = status_kb(self.p.pid, "VmHWM")
        return kb * 1024 / 1e6 if kb is not None else None

    def close(self) -> None:
        try:
            self.request("shutdown", None, timeout=30)
            self.notify("exit", None)
            self.p.wait(timeout=30)
        except Exception:
            self.p.kill()
            self.p.wait()
