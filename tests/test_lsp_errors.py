"""The language server's errors end to end: Segue's own error codes with data.reason, -32602 naming the
field, unknown methods, hostile values, and a burst of 200 malformed requests that must all be answered."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from segue.lsp import protocol as P
from tests.test_lsp_harness import SERVER, Stores, call, init_params, keep_plain_json, present_runtimes

STORES = Stores("errors")
BARE_ENV = dict(STORES.env, PATH="/usr/bin:/bin")  # no runtime CLI anywhere
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp-errors") / "segue-home"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=STORES.env))
async def client(lsp_client: LanguageClient, home: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(home, watch=False))
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=BARE_ENV))
async def bare(lsp_client: LanguageClient, home: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(home.parent / "bare-home", watch=False))
    yield
    await lsp_client.shutdown_session()


async def error(client: LanguageClient, method: str, params: Any = None) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as info:
        await call(client, method, params)
    return info.value


def one(rt: str | None = None) -> dict[str, Any]:
    return next(s for s in STORES.sessions(rt) if s["scenario"] == "one")


def ref(s: dict[str, Any]) -> str:
    return f"{s['runtime']}:{s['id']}"


def shared_prefix() -> str:
    """`runtime:prefix` matching at least two sessions of one runtime."""
    for rt in present_runtimes():
        ids = [s["id"] for s in STORES.sessions(rt)]
        for a in ids:
            for b in ids:
                if a != b and a[0] == b[0]:
                    n = next(i for i, (x, y) in enumerate(zip(a + "\0", b + "\1", strict=False)) if x != y)
                    return f"{rt}:{a[:n]}"
    raise AssertionError("no two fixture sessions share an id prefix")


async def test_unknown_and_ambiguous_sessions_have_their_own_codes(client: LanguageClient) -> None:
    for method in (P.BRIEF, P.PLAN_RESUME, P.TRACE, P.EMIT_TOKEN):
        e = await error(client, method, {"ref": "codex:no-such-session"})
        assert (e.code, e.data["reason"], e.data["ref"]) == (-32010, "unknown_session", "codex:no-such-session")
        assert "no session matches" in e.message
    e = await error(client, P.BRIEF, {"ref": shared_prefix()})
    assert (e.code, e.data["reason"]) == (-32011, "ambiguous_session")
    assert len(e.data["candidates"]) >= 2 and all(c.startswith(shared_prefix()) for c in e.data["candidates"])


async def test_token_errors_have_their_own_codes(client: LanguageClient, home: Path) -> None:
    e = await error(client, P.CLAIM_TOKEN, {"token": "not-a-token", "as": "editor"})
    assert (e.code, e.data["reason"]) == (-32020, "malformed")
    e = await error(client, P.CLAIM_TOKEN, {"token": "h_" + "A" * 32, "as": "editor"})
    assert (e.code, e.data["reason"]) == (-32021, "unknown")
    s = one()
    first = (await call(client, P.EMIT_TOKEN, {"ref": ref(s), "from": "editor"}))["token"]
    second = (await call(client, P.EMIT_TOKEN, {"ref": ref(s), "from": "editor"}))["token"]
    e = await error(client, P.CLAIM_TOKEN, {"token": first, "as": "terminal"})
    assert (e.code, e.data["reason"]) == (-32024, "revoked")
    # age the live token in Segue's own registry (never a runtime's store) so it is past its lifetime
    reg_path = home / "handoff_tokens.json"
    reg = json.loads(reg_path.read_text())
    entry = reg["tokens"][hashlib.sha256(second.encode()).hexdigest()]
    entry["issued_at"], entry["expires_at"] = time.time() - 400, time.time() - 100
    reg_path.write_text(json.dumps(reg))
    e = await error(client, P.CLAIM_TOKEN, {"token": second, "as": "terminal"})
    assert (e.code, e.data["reason"]) == (-32022, "expired")
    third = (await call(client, P.EMIT_TOKEN, {"ref": ref(s)}))["token"]
    assert (await call(client, P.CLAIM_TOKEN, {"token": third}))["claimed_as"] == "editor"
    e = await error(client, P.CLAIM_TOKEN, {"token": third, "as": "editor"})
    assert (e.code, e.data["reason"]) == (-32023, "claimed")


async def test_missing_directory_and_missing_cli(client: LanguageClient, bare: LanguageClient,
                                                 home: Path) -> None:
    gone = str(home.parent / "gone")
    e = await error(client, P.PLAN_RESUME, {"ref": ref(one()), "cwd": gone})
    assert (e.code, e.data["reason"], e.data["cwd"]) == (-32030, "missing_directory", gone)
    for rt in present_runtimes():
        e = await error(bare, P.PLAN_RESUME, {"ref": ref(one(rt))})
        assert (e.code, e.data["reason"], e.data["runtime"]) == (-32031, "missing_cli", rt)
        assert e.data["install"] and rt in e.message


BAD_PARAMS: list[tuple[str, Any, str]] = [
    (P.LIST_SESSIONS, {"limit": "5"}, "limit"),
    (P.LIST_SESSIONS, {"limit": True}, "limit"),
    (P.LIST_SESSIONS, {"limit": 2.5}, "limit"),
    (P.LIST_SESSIONS, {"limit": 0}, "limit"),
    (P.LIST_SESSIONS, {"limit": -3}, "limit"),
    (P.LIST_SESSIONS, {"runtime": "vim"}, "runtime"),
    (P.LIST_SESSIONS, {"runtime": 3}, "runtime"),
    (P.LIST_SESSIONS, {"runtime": ["codex", None]}, "runtime"),
    (P.LIST_SESSIONS, {"include_subagents": "yes"}, "include_subagents"),
    (P.LIST_SESSIONS, {"dir": 7}, "dir"),
    (P.LIST_SESSIONS, {"dir": "/tmp\x00/x"}, "dir"),
    (P.LIST_SESSIONS, {"lmit": 5}, "lmit"),
    (P.LIST_SESSIONS, {"workDoneToken": {"a": 1}}, "workDoneToken"),
    (P.LIST_SESSIONS, [1, 2], "params"),
    (P.LIST_SESSIONS, "all", "params"),
    (P.BRIEF, {}, "ref"),
    (P.BRIEF, {"ref": None}, "ref"),
    (P.BRIEF, {"ref": 12}, "ref"),
    (P.BRIEF, {"ref": ""}, "ref"),
    (P.BRIEF, {"ref": "   "}, "ref"),
    (P.BRIEF, {"ref": "x" * 401}, "ref"),
    (P.BRIEF, {"ref": "codex:\x00"}, "ref"),
    (P.BRIEF, {"ref": ["codex:a"]}, "ref"),
    (P.PLAN_RESUME, {"ref": "codex:a", "runtime": "emacs"}, "runtime"),
    (P.PLAN_RESUME, {"ref": "codex:a", "new": 1}, "new"),
    (P.PLAN_RESUME, {"ref": "codex:a", "cwd": ""}, "cwd"),
    (P.PLAN_RESUME, {"ref": "codex:a", "cwd": "/" + "a" * 5000}, "cwd"),
    (P.EMIT_TOKEN, {"ref": "codex:a", "from": "Editor Window"}, "from"),
    (P.EMIT_TOKEN, {"ref": "codex:a", "from": 1}, "from"),
    (P.EMIT_TOKEN, {"ref": "codex:a", "from_": "editor"}, "from_"),
    (P.CLAIM_TOKEN, {}, "token"),
    (P.CLAIM_TOKEN, {"token": "h_x", "as": "-rf"}, "as"),
    (P.CLAIM_TOKEN, {"token": "h_x", "tail": -1}, "tail"),
    (P.CLAIM_TOKEN, {"token": "h_x", "tail": 10**6}, "tail"),
    (P.TRACE, {"ref": {"id": "x"}}, "ref"),
    (P.TOKEN_STATUS, {"x": 1}, "x"),
]


@pytest.mark.parametrize(("method", "params", "field"), BAD_PARAMS,
                         ids=[f"{m.split('/')[1]}-{i}" for i, (m, _, _) in enumerate(BAD_PARAMS)])
async def test_bad_params_get_32602_naming_the_field(client: LanguageClient, method: str, params: Any,
                                                     field: str) -> None:
    e = await error(client, method, params)
    assert (e.code, e.data["reason"]) == (-32602, "invalid_params"), e.message
    assert field in e.message, e.message
    assert "Traceback" not in e.message and "/segue/" not in e.message


async def test_unknown_methods_and_notifications(client: LanguageClient) -> None:
    e = await error(client, "segue/launch", {"ref": "x"})
    assert e.code == -32601
    client.protocol.notify("segue/nothingHere", {"a": 1})
    client.protocol.notify(P.BRIEF, {"ref": "codex:x"})  # a request sent as a notification: ignored
    client.protocol.notify("$/cancelRequest", types.CancelParams(id="never-sent"))
    assert (await call(client, P.LIST_SESSIONS, {"limit": 1}))["sessions"]


HOSTILE_REFS = ["../../../../etc/passwd", "claude:../../x", "--help", "-rf", "\u202etxt.exe", "\x1b[31mred",
                "codex:" + "9" * 390, "cline:%00", "opencode:*", "claude:?", "'; DROP TABLE session; --",
                "\ud7ff\ue000", "\ud800x", "🙂" * 50, "codex:01a2270c-bfde-7243-a03e-d1e3dec4d9d4\n"]


def malformed_requests() -> list[tuple[str, Any]]:
    """200 requests that must each get an answer: wrong types, missing fields, hostile values, unknown
    methods. Some hostile values are valid params; they get an ordinary answer (mostly unknown_session)."""
    out: list[tuple[str, Any]] = [(m, p) for m, p, _ in BAD_PARAMS]
    junk: list[Any] = [None, 0, -1, 1.5, True, "", "x" * 10_000, [], {}, [[[[]]]], {"a": {"b": {"c": None}}},
                       {"jsonrpc": "2.0", "id": 1, "error": 5}, float(2**70)]
    methods = [P.LIST_SESSIONS, P.BRIEF, P.PLAN_RESUME, P.EMIT_TOKEN, P.CLAIM_TOKEN, P.TRACE]
    keys = {P.LIST_SESSIONS: "limit", P.BRIEF: "ref", P.PLAN_RESUME: "cwd", P.EMIT_TOKEN: "from",
            P.CLAIM_TOKEN: "token", P.TRACE: "ref"}
    for m in methods:
        for j in junk:
            out.append((m, {keys[m]: j}))
    for r in HOSTILE_REFS:
        out += [(P.BRIEF, {"ref": r}), (P.TRACE, {"ref": r}), (P.PLAN_RESUME, {"ref": r, "cwd": "/etc/passwd"})]
    out += [(P.CLAIM_TOKEN, {"token": t}) for t in ("h_" + "A" * 198, "h_../../etc", "h_\u0000", "H_" + "a" * 32)]
    out += [(P.LIST_SESSIONS, {"dir": d}) for d in ("/proc/self", "~", "..", "/" * 4000, "C:\\Windows")]
    i = 0
    while len(out) < 200:
        out.append((f"segue/unknown{i}", {"i": i}) if i % 2 else (f"$/custom{i}", None))
        i += 1
    return out[:200]


async def test_a_burst_of_200_malformed_requests_is_answered_in_full(client: LanguageClient) -> None:
    reqs = malformed_requests()
    assert len(reqs) == 200
    answers = await asyncio.wait_for(asyncio.gather(
        *(client.protocol.send_request_async(m, p) for m, p in reqs), return_exceptions=True), 60)
    codes: dict[int, int] = {}
    for (m, p), a in zip(reqs, answers, strict=True):
        if isinstance(a, JsonRpcException):
            codes[a.code] = codes.get(a.code, 0) + 1
            assert a.code in (-32601, -32602, *P.ERROR_CODES.values()), (m, p, a.code, a.message)
            assert a.code != P.ERROR_CODES["internal"], (m, p, a.message)
            assert "Traceback" not in a.message and not (a.data or {}).get("traceback")
        else:
            assert isinstance(a, dict), (m, p, a)  # a hostile but well-typed value: an ordinary answer
    assert codes.get(-32602, 0) >= 100 and codes.get(-32601, 0) >= 10 and codes.get(-32010, 0) >= 10
    assert (await call(client, P.LIST_SESSIONS, {}))["sessions"], "the server must keep serving"
    assert os.path.isdir(STORES.root)
