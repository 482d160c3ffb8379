"""Language-server methods the editor surface added: resumeCommand (as `segue resume --print`),
revokeToken (the editor withdraws a token it emitted), locations (where stores were looked for) and demo
(the bundled sample as Markdown). Over stdio with pytest-lsp, on copies of the real-runtime fixture stores."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from segue.lsp import protocol as P
from segue.stores import RUNTIMES
from tests.test_lsp_harness import SERVER, Stores, call, init_params, keep_plain_json

STORES = Stores("editor")
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp-editor") / "segue-home"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=STORES.env))
async def client(lsp_client: LanguageClient, home: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(home, watch=False))
    yield
    await lsp_client.shutdown_session()


def top(rt: str) -> dict[str, Any]:
    return STORES.sessions(rt, top_level_only=True)[0]


async def test_resume_command_is_the_cli_print_line_and_runs_in_a_shell(client: LanguageClient, home: Path,
                                                                       tmp_path: Path) -> None:
    for rt in STORES.expected:
        ref = f"{rt}:{top(rt)['id']}"
        for shell in ("posix", "powershell"):
            got = await call(client, P.RESUME_COMMAND, {"ref": ref, "shell": shell})
            assert set(got) == {"command", "shell", "plan"} and got["shell"] == shell
            assert got["command"] == STORES.cli(home, "resume", ref, "--print", "--shell", shell).stdout.rstrip("\n")
            assert got["plan"] == await call(client, P.PLAN_RESUME, {"ref": ref})
        got = await call(client, P.RESUME_COMMAND, {"ref": ref})
        assert got["shell"] == "posix"
        # pasted into a fresh shell it runs the runtime with the plan's argv, in the plan's directory
        rec = tmp_path / f"rec-{rt}"
        bindir = tmp_path / f"bin-{rt}"
        bindir.mkdir()
        (bindir / rt).write_text(f"#!/bin/sh\n{{ pwd -P; printf '%s\\0' \"$@\"; }} > '{rec}'\n")
        (bindir / rt).chmod(0o755)
        subprocess.run(["sh", "-c", got["command"]], env={"PATH": f"{bindir}:/usr/bin:/bin"}, cwd="/", check=True,
                       timeout=30)
        cwd, rest = rec.read_text().split("\n", 1)
        assert cwd == os.path.realpath(got["plan"]["cwd"])
        assert rest.split("\0")[:-1] == got["plan"]["argv"][1:]


async def test_resume_command_in_another_runtime_names_the_brief(client: LanguageClient) -> None:
    rt, other = "codex", "claude"
    got = await call(client, P.RESUME_COMMAND, {"ref": f"{rt}:{top(rt)['id']}", "runtime": other, "new": True})
    assert got["plan"]["mode"] == "new_session" and got["command"].split(" && ", 1)[1].startswith("claude '")
    assert got["plan"]["brief_path"] in got["command"] and Path(got["plan"]["brief_path"]).is_file()


async def test_resume_command_bad_params(client: LanguageClient) -> None:
    ref = f"codex:{top('codex')['id']}"
    for bad in ({"ref": ref, "shell": "fish"}, {"ref": ref, "shell": 1}, {"ref": ref, "runtime": "emacs"},
                {"ref": ref, "extra": True}, {}):
        with pytest.raises(JsonRpcException) as e:
            await call(client, P.RESUME_COMMAND, bad)
        assert e.value.code == P.INVALID_PARAMS, bad
    with pytest.raises(JsonRpcException) as e:
        await call(client, P.RESUME_COMMAND, {"ref": "codex:no-such-session"})
    assert e.value.code == P.ERROR_CODES["unknown_session"]


async def test_revoke_token_withdraws_only_this_surfaces_live_tokens(client: LanguageClient, home: Path) -> None:
    a, b = f"codex:{top('codex')['id']}", f"claude:{top('claude')['id']}"
    token = (await call(client, P.EMIT_TOKEN, {"ref": a, "from": "editor"}))["token"]
    cli_token = STORES.cli(home, "handoff", "emit", b, "--from", "terminal").stdout.strip()
    listed = {f"{s['runtime']}:{s['id']}": s for s in (await call(client, P.LIST_SESSIONS, {}))["sessions"]}
    assert listed[a]["handed_off"] and listed[b]["handed_off"]
    # the editor cannot withdraw what the terminal emitted
    assert (await call(client, P.REVOKE_TOKEN, {"ref": b}))["revoked"] == 0
    got = await call(client, P.REVOKE_TOKEN, {"ref": a})
    assert got["revoked"] == 1 and got["session"]["id"] == top("codex")["id"]
    assert (await call(client, P.REVOKE_TOKEN, {"ref": a}))["revoked"] == 0  # nothing left to revoke
    listed = {f"{s['runtime']}:{s['id']}": s for s in (await call(client, P.LIST_SESSIONS, {}))["sessions"]}
    assert listed[a]["handed_off"] is None and listed[b]["handed_off"]
    with pytest.raises(JsonRpcException) as e:
        await call(client, P.CLAIM_TOKEN, {"token": token, "as": "terminal"})
    assert e.value.data["reason"] == "revoked"
    status = (await call(client, P.TOKEN_STATUS, {}))["tokens"]
    assert [t["session"]["id"] for t in status] == [top("claude")["id"]]  # the revoked token is gone
    assert (await call(client, P.CLAIM_TOKEN, {"token": cli_token, "as": "editor"}))["session"]["id"] == \
        top("claude")["id"]
    with pytest.raises(JsonRpcException) as e:
        await call(client, P.REVOKE_TOKEN, {"ref": a, "surface": "Not A Surface"})
    assert e.value.code == P.INVALID_PARAMS


async def test_locations_name_every_runtimes_store(client: LanguageClient) -> None:
    locs = (await call(client, P.LOCATIONS, {}))["locations"]
    assert {loc["runtime"] for loc in locs} == set(RUNTIMES)
    for loc in locs:
        assert set(loc) == {"runtime", "path", "exists", "how_to_override", "sessions"}
        assert isinstance(loc["exists"], bool) and loc["path"]
        assert isinstance(loc["sessions"], int) and (loc["exists"] or loc["sessions"] == 0)
    # the fixture stores this server reads are among the places, and found
    assert any(loc["exists"] and loc["path"].startswith(str(STORES.root)) for loc in locs)
    # each runtime's places count its listed (top-level) sessions, as the listing does
    listed = (await call(client, P.LIST_SESSIONS, {}))["sessions"]
    for rt in RUNTIMES:
        assert sum(loc["sessions"] for loc in locs if loc["runtime"] == rt) == \
            sum(1 for s in listed if s["runtime"] == rt and not s["parent_id"]), rt
    assert any(loc["sessions"] > 0 for loc in locs)


async def test_demo_is_the_bundled_sample_as_markdown(client: LanguageClient, home: Path) -> None:
    md = (await call(client, P.DEMO, {}))["markdown"]
    assert md.startswith("# Segue sample (not your sessions)")
    assert "RUNTIME" in md and "## The brief of one sample session" in md
    assert "Sup3rS3cret-42" not in md.split("## The brief", 1)[1]  # the brief part is redacted


async def test_runtimes_say_which_clis_are_installed(client: LanguageClient) -> None:
    got = (await call(client, P.RUNTIME_CLIS, {}))["runtimes"]
    assert [r["runtime"] for r in got] == list(RUNTIMES)
    for r in got:
        assert set(r) == {"runtime", "cli", "installed", "install"} and r["install"]
    # as a plan finds them: the harness's PATH has no cline, so a plan in it is refused as missing_cli
    cline = next(r for r in got if r["runtime"] == "cline")
    if not cline["installed"]:
        with pytest.raises(JsonRpcException) as e:
            await call(client, P.PLAN_RESUME, {"ref": f"claude:{top('claude')['id']}", "runtime": "cline"})
        assert e.value.data["reason"] == "missing_cli"
