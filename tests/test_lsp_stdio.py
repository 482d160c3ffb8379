"""`segue serve` over plain pipes, byte by byte: stdout carries nothing but framed JSON-RPC, envelopes no
LSP client would send are answered, and shutdown/exit end the process with the LSP exit codes."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from tests.test_lsp_harness import RawPeer, Stores, all_frames

STORES = Stores("stdio", runtimes=["codex"])
CODEX_ONE = next(s for s in STORES.sessions("codex") if s["scenario"] == "one")


def initialize(peer: RawPeer, home: Path, **opts: Any) -> dict[str, Any]:
    peer.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
               "params": {"processId": None, "capabilities": {},
                          "initializationOptions": {"segueHome": str(home), "watch": False, **opts}}})
    reply = peer.replies({"init"})["init"]
    peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    return reply


def req(i: Any, method: str, params: Any = None, **extra: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": i, "method": method, "params": params, **extra}


# (message sent, id the reply must carry, expected error code or None for a result)
ENVELOPES: list[tuple[Any, Any, int | None]] = [
    (b"{not json", None, -32700),
    (b"\xff\xfe{\x00", None, -32700),
    (b"[" * 100_000 + b"]" * 100_000, None, -32700),  # too deep to decode
    (b"[1, 2]", None, -32600),
    (b'"a string"', None, -32600),
    ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "segue/brief", "params": {"ref": "x"}}, None, -32600),
    ({"jsonrpc": "2.0", "id": True, "method": "segue/brief", "params": {"ref": "x"}}, None, -32600),
    ({"jsonrpc": "2.0", "id": 1.5, "method": "segue/brief", "params": {"ref": "x"}}, None, -32600),
    ({"jsonrpc": "2.0", "id": None, "method": "segue/brief", "params": {"ref": "x"}}, None, -32600),
    ({"jsonrpc": "1.0", "id": "v1", "method": "segue/brief", "params": {"ref": "x"}}, "v1", -32600),
    ({"id": "no-version", "method": "segue/brief", "params": {"ref": "x"}}, "no-version", -32600),
    ({"jsonrpc": "2.0", "id": "m5", "method": 5}, "m5", -32600),
    (req("hover", "textDocument/hover", {"bogus": 1}), "hover", -32602),
    (req("init-again", "initialize", "not an object"), "init-again", -32602),
    (req("exit-as-request", "exit"), "exit-as-request", -32600),
    (req("nested", "segue/brief", {"ref": {"jsonrpc": "2.0", "id": 1, "error": 5}}), "nested", -32602),
    (req("with-error", "segue/brief", {"ref": "codex:zzz"}, error={"code": 1}), "with-error", -32010),
    (req("nul-method", "segue/\u0000brief", {}), "nul-method", -32601),
    (req(10**30, "segue/listSessions", {"limit": 1}), 10**30, None),
    (req("null-params", "segue/listSessions", None), "null-params", None),
    (req("no-params", "segue/tokenStatus", None), "no-params", None),
]


def test_stdout_is_only_frames_and_every_envelope_is_answered(tmp_path: Path) -> None:
    peer = RawPeer(STORES.env, [sys.executable, "-m", "segue", "serve", "--stdio"])
    try:
        init = initialize(peer, tmp_path / "home")
        assert init["result"]["serverInfo"]["name"] == "segue"
        # fd 1 of the server is its stderr: a stray print cannot reach the JSON-RPC channel
        fd1 = os.readlink(f"/proc/{peer.proc.pid}/fd/1")
        assert fd1 == os.readlink(f"/proc/{peer.proc.pid}/fd/2"), fd1
        for body, _, _ in ENVELOPES:
            peer.send(body)
        peer.send(req("last", "segue/brief", {"ref": f"codex:{CODEX_ONE['id']}"}))
        want_ids = {i for _, i, _ in ENVELOPES if i is not None} | {"last"}
        got = peer.replies(want_ids, timeout=60)
        for _body, i, code in ENVELOPES:
            if i is None:
                continue
            reply = got[i]
            if code is None:
                assert "result" in reply and "error" not in reply, reply
            else:
                assert reply["error"]["code"] == code, (i, reply)
        assert got["last"]["result"]["facts"]["first_request"] == CODEX_ONE["first_request"]
        nulls = sorted(m["error"]["code"] for k, m in got.items() if isinstance(k, tuple) and "error" in m)
        assert nulls == sorted(c for _, i, c in ENVELOPES if i is None), "one id-null error per unanswerable body"
        peer.send(req("bye", "shutdown"))
        assert peer.replies({"bye"})["bye"]["result"] is None
        peer.send(req("late", "segue/tokenStatus", {}))
        assert peer.replies({"late"})["late"]["error"]["code"] == -32600  # after shutdown: InvalidRequest
        peer.send({"jsonrpc": "2.0", "method": "exit"})
        code, err = peer.finish()
        assert code == 0, err.decode(errors="replace")
        all_frames(peer.raw)  # raises on a single stray byte
        assert b"Traceback" not in err or b"JSONDecodeError" in err or b"RecursionError" in err
    finally:
        peer.kill()


def test_exit_without_shutdown_is_code_1_and_eof_ends_the_server(tmp_path: Path) -> None:
    console_script = [sys.executable, "-c", "from segue.entry import main; raise SystemExit(main())", "serve"]
    peer = RawPeer(STORES.env, console_script)
    try:
        initialize(peer, tmp_path / "home")
        peer.send({"jsonrpc": "2.0", "method": "exit"})
        code, _ = peer.finish()
        assert code == 1
        all_frames(peer.raw)
    finally:
        peer.kill()
    peer = RawPeer(STORES.env)
    try:
        initialize(peer, tmp_path / "home")
        code, _ = peer.finish()  # the editor went away: stdin closes
        assert code == 0
    finally:
        peer.kill()


def test_cli_home_beats_initialization_options(tmp_path: Path) -> None:
    """`segue --home DIR serve` wins over initializationOptions.segueHome (which wins over $SEGUE_HOME:
    test_lsp checks that one)."""
    cli_home, init_home = tmp_path / "cli-home", tmp_path / "init-home"
    peer = RawPeer(dict(STORES.env, SEGUE_HOME=str(tmp_path / "env-home")),
                   [sys.executable, "-m", "segue", "--home", str(cli_home), "serve"])
    try:
        initialize(peer, init_home)
        peer.send(req("emit", "segue/emitToken", {"ref": f"codex:{CODEX_ONE['id']}", "from": "editor"}))
        assert peer.replies({"emit"})["emit"]["result"]["token"].startswith("h_")
    finally:
        peer.kill()
    assert (cli_home / "handoff_tokens.json").is_file()
    assert not init_home.exists() and not (tmp_path / "env-home").exists()


def test_an_unusable_state_directory_is_an_error_not_a_crash(tmp_path: Path) -> None:
    not_a_dir = tmp_path / "state-file"
    not_a_dir.write_text("x")
    peer = RawPeer(STORES.env)
    try:
        initialize(peer, not_a_dir)
        peer.send(req("list", "segue/listSessions", {}))
        peer.send(req("emit", "segue/emitToken", {"ref": f"codex:{CODEX_ONE['id']}"}))
        peer.send(req("status", "segue/tokenStatus", {}))
        got = peer.replies({"list", "emit", "status"})
        for i in ("list", "emit"):
            assert got[i]["error"]["code"] == -32041 and got[i]["error"]["data"]["reason"] == "unsafe_directory"
        assert got["status"]["result"] == {"tokens": []}  # the server keeps serving
        assert not_a_dir.read_text() == "x"
    finally:
        peer.kill()
