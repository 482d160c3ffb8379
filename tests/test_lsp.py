"""The language server end to end over stdio (pytest-lsp) on stores written by the real runtimes.

Every method is driven against the fixture stores and checked two ways: against the facts the scenarios
made the agents produce (expected.json) and against the CLI run on the same stores and state directory
(the two surfaces must agree). Error codes, bad params and hostile values are covered in test_lsp_errors.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from segue.lsp import protocol as P
from segue.redact import redact_text
from tests.conftest import real_fixture
from tests.test_lsp_harness import (
    RUNTIMES,
    SECRET,
    SERVER,
    Stores,
    call,
    init_params,
    keep_plain_json,
    present_runtimes,
    tree_snapshot,
)

STORES = Stores("main")
# One server for the module (start-up is most of a test's cost); tests that stop it live elsewhere.
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The state directory the server was given (initializationOptions.segueHome); the CLI gets the same."""
    return tmp_path_factory.mktemp("lsp") / "segue-home"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=STORES.env))
async def client(lsp_client: LanguageClient, home: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(home))
    yield
    await lsp_client.shutdown_session()


def written_at(markdown: str) -> str:
    return re.sub(r"Written by Segue at \S+", "Written by Segue at <time>", markdown)


@pytest.mark.parametrize("rt", RUNTIMES)
async def test_the_real_runtime_fixture_is_present(rt: str) -> None:
    _, exp = real_fixture(rt)  # fails, naming the generator, while a fixture has not landed
    assert exp["runtime"] == rt and exp["sessions"]


async def test_list_sessions_agrees_with_segue_list_json(client: LanguageClient, home: Path) -> None:
    rts = present_runtimes()
    a_cwd = STORES.sessions(rts[0], top_level_only=True)[0]["cwd"]
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({}, []),
        ({"include_subagents": True}, ["--all"]),
        ({"limit": 2}, ["--limit", "2"]),
        ({"dir": a_cwd}, ["--dir", a_cwd]),
        ({"runtime": rts[-1]}, ["--runtime", rts[-1]]),
        ({"runtime": rts[:2], "include_subagents": True}, [a for r in rts[:2] for a in ("--runtime", r)] + ["--all"]),
    ]
    for params, argv in cases:
        got = await call(client, P.LIST_SESSIONS, params)
        assert set(got) >= {"sessions", "skipped"} and isinstance(got["skipped"], int)
        assert got["sessions"] == STORES.cli_json(home, "list", "--json", *argv), f"params {params}"
    listed = (await call(client, P.LIST_SESSIONS, {}))["sessions"]
    by_key = {(s["runtime"], s["id"]): s for s in listed}
    for exp in STORES.sessions(top_level_only=True):
        s = by_key.get((exp["runtime"], exp["id"]))
        assert s is not None, f"{exp['runtime']}:{exp['id']} ({exp['scenario']}) not listed"
        # listings show the first request redacted (issue 12)
        want = (redact_text(exp["first_request"]), exp["cwd"], exp["branch"])
        assert (s["first_request"], s["cwd"], s["branch"]) == want
    keys = set(listed[0])
    assert all(set(s) == keys for s in listed)  # one shape, every key present
    assert {"runtime", "id", "title", "first_request", "cwd", "branch", "started_at", "updated_at",
            "parent_id", "resumable", "live", "handed_off"} <= keys


async def test_list_sessions_reports_progress_on_an_offered_token(client: LanguageClient) -> None:
    client.progress_reports.setdefault("list-1", [])  # the client's own token, as an editor would offer
    got = await call(client, P.LIST_SESSIONS, {"workDoneToken": "list-1"})
    assert got["sessions"]
    await asyncio.sleep(0.2)  # $/progress end is written right after the reply
    kinds = [type(v).__name__ for v in client.progress_reports["list-1"]]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    reports = [v for v in client.progress_reports["list-1"] if type(v).__name__ == "WorkDoneProgressReport"]
    assert len(reports) >= len(RUNTIMES) and [r.percentage for r in reports] == sorted(r.percentage for r in reports)


@pytest.mark.parametrize("rt", RUNTIMES)
async def test_brief_matches_the_scenario_and_the_cli(client: LanguageClient, home: Path, rt: str) -> None:
    real_fixture(rt)
    for exp in STORES.sessions(rt):
        ref = f"{rt}:{exp['id']}"
        got = await call(client, P.BRIEF, {"ref": ref})
        assert set(got) == {"uri", "markdown", "facts"}
        assert got["uri"] == f"segue-brief:/{rt}/{exp['id']}.md"
        facts = got["facts"]
        assert facts["session"]["id"] == exp["id"] and facts["session"]["cwd"] == exp["cwd"]
        cmds = {(c["command"], c["exit_code"]) for c in facts["commands"]}
        changed = {f["path"] for f in facts["files_changed"]}
        if exp["scenario"] != "secret":  # the secret one is redacted: test_cli_real checks its exact form
            assert facts["first_request"] == exp["first_request"]
            assert all((c["command"], c["exit_code"]) in cmds for c in exp["commands"]), cmds
        assert set(exp["files_written"]) <= changed
        assert SECRET not in got["markdown"] and SECRET not in json.dumps(facts)
        if exp["scenario"] == "one":
            assert "- exit 2: `ls /nonexistent-dir`" in got["markdown"]
        if exp["scenario"] in ("one", "secret"):  # one CLI round trip per kind keeps the suite fast
            assert facts == STORES.cli_json(home, "brief", ref, "--json")
            assert written_at(got["markdown"]) == written_at(STORES.cli(home, "brief", ref, "--stdout").stdout)


@pytest.mark.parametrize("rt", RUNTIMES)
async def test_plan_resume_matches_resume_dry_run_and_launches_nothing(client: LanguageClient, home: Path,
                                                                       rt: str) -> None:
    real_fixture(rt)
    for exp in STORES.sessions(rt):
        ref = f"{rt}:{exp['id']}"
        plan = await call(client, P.PLAN_RESUME, {"ref": ref})
        cli = STORES.cli_json(home, "resume", ref, "--dry-run")
        if exp["parent_id"]:
            assert (plan["mode"], plan["reason"]) == ("new_session", "subagent")
            assert Path(plan["brief_path"]).is_file() and plan["brief_path"] != cli["brief_path"]
            assert plan["argv"][-1].replace(plan["brief_path"], "<brief>") == \
                cli["argv"][-1].replace(cli["brief_path"], "<brief>")
            plan, cli = _without_brief(plan), _without_brief(cli)
        else:
            assert (plan["mode"], plan["reason"], plan["cwd"]) == ("native", "native", exp["cwd"])
            assert exp["id"] in plan["argv"] and plan["brief_path"] is None
        assert plan == cli
        assert Path(plan["argv"][0]).name == rt
    top = STORES.sessions(rt, top_level_only=True)[0]
    other = next(r for r in RUNTIMES if r != rt)
    plan = await call(client, P.PLAN_RESUME, {"ref": f"{rt}:{top['id']}", "runtime": other})
    assert (plan["mode"], plan["reason"], plan["runtime"]) == ("new_session", "other_runtime", other)
    assert plan["brief_path"] in plan["argv"][-1] and Path(plan["argv"][0]).name == other
    elsewhere = str(STORES.root / "emptyhome")
    plan = await call(client, P.PLAN_RESUME, {"ref": f"{rt}:{top['id']}", "new": True, "cwd": elsewhere})
    assert (plan["mode"], plan["reason"], plan["cwd"]) == ("new_session", "requested", elsewhere)
    assert not STORES.launches.exists(), "the server must never launch a runtime"


async def test_plan_resume_without_write_names_the_brief_and_writes_none(client: LanguageClient, home: Path) -> None:
    """The editor shows a plan made with write false and asks again with write true once confirmed, so a
    declined new session leaves no brief in handoffs/ (as `segue resume` writes it only when launching)."""
    rt = present_runtimes()[0]
    top = STORES.sessions(rt, top_level_only=True)[0]
    other = next(r for r in RUNTIMES if r != rt)
    ref = f"{rt}:{top['id']}"
    handoffs = home / "handoffs"
    before = set(handoffs.iterdir()) if handoffs.is_dir() else set()
    shown = await call(client, P.PLAN_RESUME, {"ref": ref, "runtime": other, "write": False})
    assert shown["mode"] == "new_session" and shown["brief_path"] in shown["argv"][-1]
    assert Path(shown["brief_path"]).parent == handoffs and not Path(shown["brief_path"]).exists()
    assert (set(handoffs.iterdir()) if handoffs.is_dir() else set()) == before
    launched = await call(client, P.PLAN_RESUME, {"ref": ref, "runtime": other, "write": True})
    assert Path(launched["brief_path"]).is_file() and set(handoffs.iterdir()) - before == {Path(launched["brief_path"])}
    assert _without_brief(launched) == _without_brief(shown)
    native = await call(client, P.PLAN_RESUME, {"ref": ref, "write": False})
    assert native["mode"] == "native" and native["brief_path"] is None


def _without_brief(plan: dict[str, Any]) -> dict[str, Any]:
    return dict(plan, brief_path=None, argv=plan["argv"][:-1])


async def test_tokens_are_shared_with_the_cli(client: LanguageClient, home: Path) -> None:
    rts = present_runtimes()
    one = next(s for s in STORES.sessions(rts[0]) if s["scenario"] == "one")
    emitted = await call(client, P.EMIT_TOKEN, {"ref": f"{rts[0]}:{one['id']}", "from": "editor"})
    token = emitted["token"]
    assert token.startswith("h_") and len(token) == 34 and emitted["expires_at"].endswith("Z")
    assert (home / "handoff_tokens.json").is_file(), "initializationOptions.segueHome chooses the state dir"
    assert not Path(STORES.env["SEGUE_HOME"]).exists(), "SEGUE_HOME must lose to initializationOptions"
    assert token not in (home / "handoff_tokens.json").read_text()
    listed = {s["id"]: s for s in (await call(client, P.LIST_SESSIONS, {}))["sessions"]}
    assert listed[one["id"]]["handed_off"]["surface"] == "editor"
    status = await call(client, P.TOKEN_STATUS, {})
    assert token not in json.dumps(status) and status["tokens"][0]["session"]["id"] == one["id"]
    # the terminal claims what the editor emitted ...
    claimed = json.loads(STORES.cli(home, "handoff", "claim", "--as", "terminal", "--json", input=token + "\n").stdout)
    assert claimed["source_surface"] == "editor" and claimed["session"]["id"] == one["id"]
    with pytest.raises(JsonRpcException) as err:
        await call(client, P.CLAIM_TOKEN, {"token": token, "as": "editor"})
    assert (err.value.code, err.value.data["reason"]) == (P.ERROR_CODES["claimed"], "claimed")
    # ... and the editor claims what the terminal emitted, with the CLI's JSON shape
    other = next(s for s in STORES.sessions(rts[-1]) if s["scenario"] == "one")
    token2 = STORES.cli(home, "handoff", "emit", f"{rts[-1]}:{other['id']}", "--from", "terminal").stdout.strip()
    got = await call(client, P.CLAIM_TOKEN, {"token": token2, "as": "editor"})
    assert set(got) == set(claimed)
    assert (got["source_surface"], got["claimed_as"], got["session"]["id"]) == ("terminal", "editor", other["id"])
    assert got["active_task"] == other["latest_request"] and got["plan"]["mode"] == "native"
    assert got["tail"] and Path(got["brief_path"]).is_file()


@pytest.mark.parametrize("rt", RUNTIMES)
async def test_trace_agrees_with_the_cli(client: LanguageClient, home: Path, rt: str) -> None:
    real_fixture(rt)
    cont = next(s for s in STORES.sessions(rt) if s["scenario"] == "continued")
    src = cont["continues"]
    got = await call(client, P.TRACE, {"ref": f"{rt}:{cont['id']}"})
    keys = [(c["runtime"], c["id"]) for c in got["chain"]]
    assert keys.index((src["runtime"], src["id"])) < keys.index((rt, cont["id"]))
    assert got["chain"] == STORES.cli_json(home, "trace", f"{rt}:{cont['id']}", "--json")


async def test_concurrent_requests_all_answer_as_they_would_alone(client: LanguageClient) -> None:
    refs = [f"{s['runtime']}:{s['id']}" for s in STORES.sessions()]
    reqs: list[tuple[str, dict[str, Any]]] = [(P.LIST_SESSIONS, {"include_subagents": True})]
    reqs += [(P.BRIEF, {"ref": r}) for r in refs] + [(P.TRACE, {"ref": r}) for r in refs]
    reqs += [(P.TOKEN_STATUS, {})] * 5 + [(P.LIST_SESSIONS, {"limit": 1})] * 5
    together = await asyncio.gather(*(call(client, m, p) for m, p in reqs))
    alone = [await call(client, m, p) for m, p in reqs]
    for (m, _), a, b in zip(reqs, together, alone, strict=True):
        if m == P.BRIEF:  # the Markdown carries the time it was written
            a, b = dict(a, markdown=written_at(a["markdown"])), dict(b, markdown=written_at(b["markdown"]))
        if m == P.TOKEN_STATUS:  # and a live token's seconds_left ticks down
            a, b = ([dict(t, seconds_left=None) for t in x["tokens"]] for x in (a, b))
        assert a == b, m


async def test_the_listing_cache_stays_warm_between_requests(client: LanguageClient, home: Path) -> None:
    first = await call(client, P.LIST_SESSIONS, {"include_subagents": True})
    cache = home / "cache" / "index.sqlite"
    assert cache.is_file()
    with contextlib.closing(sqlite3.connect(cache)) as db:
        runtimes = {r for (r,) in db.execute("SELECT DISTINCT runtime FROM sources")}
        changes = db.execute("SELECT count(*), total(rowid) FROM sources").fetchone()
    assert runtimes == set(STORES.expected)  # every store's sources are indexed
    again = await call(client, P.LIST_SESSIONS, {"include_subagents": True})
    assert again == first
    with contextlib.closing(sqlite3.connect(cache)) as db:  # a warm listing re-read nothing, wrote nothing
        assert db.execute("SELECT count(*), total(rowid) FROM sources").fetchone() == changes


async def test_requests_never_touch_the_stores(client: LanguageClient) -> None:
    roots = [STORES.root / rt / "home" for rt in STORES.expected]
    before = [tree_snapshot(r) for r in roots]
    for s in STORES.sessions():
        ref = f"{s['runtime']}:{s['id']}"
        await call(client, P.BRIEF, {"ref": ref})
        await call(client, P.PLAN_RESUME, {"ref": ref})
        await call(client, P.TRACE, {"ref": ref})
    await call(client, P.LIST_SESSIONS, {"include_subagents": True})
    assert [tree_snapshot(r) for r in roots] == before
