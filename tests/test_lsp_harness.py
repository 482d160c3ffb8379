"""Helpers for the language-server suites (no tests here): fixture stores, the server's environment, a
client that keeps replies as plain JSON, the CLI run on the same store, and a raw stdio JSON-RPC peer.

pytest-lsp fixes a server's environment when the fixture is defined and starts the server before `tmp_path`
exists, so the stores are copied at import into a module-level temp dir; each test passes its own state
directory through `initializationOptions.segueHome`.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage

from segue.stores import RUNTIMES
from tests.conftest import REAL, make_session_dirs

SERVER = [sys.executable, "-m", "segue", "serve", "--stdio"]
SECRET = "Sup3rS3cret-42"  # the secret scenario's password (see test_cli_real)


def present_runtimes() -> list[str]:
    return [rt for rt in RUNTIMES if (REAL / rt / "expected.json").is_file()]


class Stores:
    """Copies of the real-runtime fixture stores and the environment that points Segue at them."""

    def __init__(self, name: str, runtimes: list[str] | None = None) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=f"segue-lsp-{name}-"))
        atexit.register(shutil.rmtree, self.root, True)
        self.expected: dict[str, dict[str, Any]] = {}
        env = {k: v for k, v in os.environ.items()
               if not k.startswith(("CLAUDE_", "CODEX_", "OPENCODE_", "CLINE_", "XDG_", "SEGUE_"))}
        (self.root / "emptyhome").mkdir()
        env["HOME"] = str(self.root / "emptyhome")  # nothing of the real user's stores can leak in
        env["SEGUE_HOME"] = str(self.root / "env-segue-home")  # initializationOptions must win over this
        for rt in present_runtimes() if runtimes is None else runtimes:
            exp = json.loads((REAL / rt / "expected.json").read_text(encoding="utf-8"))
            self.expected[rt] = exp
            shutil.copytree(REAL / rt / "home", self.root / rt / "home", symlinks=True)
            for var, rel in exp["env"].items():
                if var != "HOME":
                    env[var] = str(self.root / rt / rel)
            make_session_dirs(exp)
        self.launches = self.root / "launches.log"
        bindir = self.root / "bin"
        bindir.mkdir()
        for rt in RUNTIMES:  # stand-ins so plans find a CLI; they record it if anything ever runs them
            p = bindir / rt
            p.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{self.launches}'\n")
            p.chmod(0o755)
        env["PATH"] = f"{bindir}{os.pathsep}{env.get('PATH', '')}"
        self.env = env

    def sessions(self, rt: str | None = None, top_level_only: bool = False) -> list[dict[str, Any]]:
        return [dict(s, runtime=r) for r, exp in self.expected.items() if rt in (None, r)
                for s in exp["sessions"] if not (top_level_only and s["parent_id"])]

    def cli(self, home: Path, *args: str, input: str | None = None, check: bool = True
            ) -> subprocess.CompletedProcess[str]:
        p = subprocess.run([sys.executable, "-m", "segue", *args], env=dict(self.env, SEGUE_HOME=str(home)),
                           capture_output=True, text=True, input=input, timeout=120)
        if check and p.returncode != 0:
            raise AssertionError(f"segue {' '.join(args)} exited {p.returncode}\n{p.stderr}")
        return p

    def cli_json(self, home: Path, *args: str) -> Any:
        return json.loads(self.cli(home, *args).stdout)


def init_params(home: Path, **extra: Any) -> types.InitializeParams:
    return types.InitializeParams(
        capabilities=types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True)),
        initialization_options={"segueHome": str(home), **extra})


def keep_plain_json(client: Any) -> None:
    """pygls turns untyped results and notification params into namedtuples (renaming keys such as `from`);
    the editor sees plain JSON, so the test client keeps it plain too."""
    conv = client.protocol._converter
    conv.register_structure_hook(JsonRPCResponseMessage, lambda obj, cls: cls(**obj))
    conv.register_structure_hook(JsonRPCNotification, lambda obj, cls: cls(**obj))


async def call(client: Any, method: str, params: Any = None) -> Any:
    """One custom request through a pytest-lsp client, as plain JSON, failing after a minute."""
    import asyncio

    return await asyncio.wait_for(client.protocol.send_request_async(method, params), 60)


def server_pid(client: Any) -> int:
    return client._server.pid  # the asyncio subprocess pytest-lsp started


def cpu_detail(pid: int) -> tuple[float, float, int]:
    """user and system CPU seconds and major page faults of a process (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick, int(fields[9])


def cpu_seconds(pid: int) -> float:
    """utime + stime of a process."""
    user, system, _faults = cpu_detail(pid)
    return user + system


def tree_snapshot(root: Path) -> dict[str, tuple[int, int] | None]:
    out: dict[str, tuple[int, int] | None] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for d in dirnames:
            out[os.path.join(dirpath, d)] = None
        for f in filenames:
            st = os.lstat(os.path.join(dirpath, f))
            out[os.path.join(dirpath, f)] = (st.st_size, st.st_mtime_ns)
    return out


# ---------------------------------------------------------------------------------------------------------
# A raw JSON-RPC peer over pipes: for envelopes no LSP client can send, and for checking stdout byte by byte.


def frame(body: bytes | str | Any) -> bytes:
    if not isinstance(body, (bytes, str)):
        body = json.dumps(body)
    if isinstance(body, str):
        body = body.encode()
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


class RawPeer:
    def __init__(self, env: dict[str, str], argv: list[str] | None = None) -> None:
        self.proc = subprocess.Popen(argv or SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.raw = bytearray()  # every byte the server wrote to stdout
        self._pos = 0

    def send(self, body: Any) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(frame(body))
        self.proc.stdin.flush()

    def send_bytes(self, data: bytes) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _fill(self, deadline: float) -> bool:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            return False
        chunk = os.read(self.proc.stdout.fileno(), 1 << 16)
        if not chunk:
            raise EOFError("the server closed stdout")
        self.raw += chunk
        return True

    def next_message(self, timeout: float = 10.0) -> dict[str, Any]:
        """The next framed message; raises if stdout holds anything but `Content-Length` frames."""
        deadline = time.monotonic() + timeout
        while True:
            msg = parse_frame(self.raw, self._pos)
            if msg is not None:
                obj, self._pos = msg
                return obj
            if not self._fill(deadline):
                raise TimeoutError(f"no message within {timeout}s; unread: {bytes(self.raw[self._pos:])[:200]!r}")

    def replies(self, ids: set[Any], timeout: float = 30.0) -> dict[Any, dict[str, Any]]:
        """Read until every id in `ids` has a reply; other messages (notifications, id-null errors) are kept
        under the key ("other", n)."""
        out: dict[Any, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        n = 0
        while not ids <= set(out):
            m = self.next_message(max(0.1, deadline - time.monotonic()))
            key = m["id"] if "id" in m and m["id"] is not None and "method" not in m else ("other", n)
            assert key not in out, f"two replies for id {key!r}"
            out[key] = m
            n += 1
        return out

    def finish(self, timeout: float = 20.0) -> tuple[int, bytes]:
        """Close stdin, read stdout to the end, return (exit code, stderr)."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):
            self.proc.stdin.close()
        deadline = time.monotonic() + timeout
        try:
            while self._fill(deadline):
                pass
        except EOFError:
            pass
        code = self.proc.wait(max(0.1, deadline - time.monotonic()))
        err = self.proc.stderr.read() if self.proc.stderr else b""
        return code, err

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def parse_frame(buf: bytearray, pos: int) -> tuple[dict[str, Any], int] | None:
    """(message, next position) if a whole frame starts at `pos`; None if more bytes are needed. Anything
    that is not a frame is an assertion error: stdout must carry nothing else."""
    end = buf.find(b"\r\n\r\n", pos)
    if end < 0:
        assert buf[pos:pos + 16] == b"Content-Length: "[:len(buf) - pos], f"junk on stdout: {bytes(buf[pos:])!r}"
        return None
    headers = bytes(buf[pos:end]).split(b"\r\n")
    length = None
    for h in headers:
        name, _, value = h.partition(b": ")
        assert name in (b"Content-Length", b"Content-Type"), f"junk on stdout: {h!r}"
        if name == b"Content-Length":
            length = int(value)
    assert length is not None, f"a frame without Content-Length: {headers!r}"
    if len(buf) < end + 4 + length:
        return None
    return json.loads(bytes(buf[end + 4:end + 4 + length])), end + 4 + length


def all_frames(buf: bytearray) -> list[dict[str, Any]]:
    out, pos = [], 0
    while pos < len(buf):
        msg = parse_frame(buf, pos)
        assert msg is not None, f"stdout ends inside a frame: {bytes(buf[pos:])[:200]!r}"
        obj, pos = msg
        out.append(obj)
    return out
