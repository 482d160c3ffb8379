"""`segue/search` over stdio on stores written by the real runtimes: the same objects as `segue search --json`,
work-done progress while the index fills, strict params, hostile queries, and no secret in a reply."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from segue.lsp import protocol as P
from tests.test_lsp_harness import RUNTIMES, SECRET, SERVER, Stores, call, init_params, keep_plain_json, tree_snapshot

STORES = Stores("search")
pytestmark = pytest.mark.asyncio(loop_scope="module")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp-search") / "segue-home"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=STORES.env))
async def client(lsp_client: LanguageClient, home: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(home, watch=False))
    yield
    await lsp_client.shutdown_session()


async def test_progress_is_reported_while_the_index_fills(client: LanguageClient) -> None:
    before = {str(r): tree_snapshot(r) for r in (STORES.root / rt / "home" for rt in RUNTIMES)}
    client.progress_reports.setdefault("search-1", [])
    got = await call(client, P.SEARCH, {"query": "files", "workDoneToken": "search-1"})
    assert got["total"] > 0
    await asyncio.sleep(0.2)
    reports = client.progress_reports["search-1"]
    kinds = [type(v).__name__ for v in reports]
    assert kinds[0] == "WorkDoneProgressBegin" and kinds[-1] == "WorkDoneProgressEnd"
    msgs = [v.message for v in reports if type(v).__name__ == "WorkDoneProgressReport"]
    assert any(m and m.startswith("indexing sessions for search") for m in msgs)
    after = {str(r): tree_snapshot(r) for r in (STORES.root / rt / "home" for rt in RUNTIMES)}
    assert after == before  # read-only on the stores


@pytest.mark.parametrize("params,argv", [
    ({"query": '"write what happened"', "in": ["requests"]}, ['"write what happened"', "--in", "requests"]),
    ({"query": "ls /nonexistent-dir", "in": ["commands"]}, ["ls /nonexistent-dir", "--in", "commands"]),
    ({"query": '"directory does not exist"'}, ['"directory does not exist"']),
    ({"query": "files", "runtime": "codex", "limit": 3}, ["files", "--runtime", "codex", "--limit", "3"]),
    ({"query": '"see the output above"', "since": "36500d"}, ['"see the output above"', "--since", "36500d"]),
])
async def test_search_agrees_with_the_cli(client: LanguageClient, home: Path, params: dict[str, Any],
                                          argv: list[str]) -> None:
    got = await call(client, P.SEARCH, params)
    assert got == STORES.cli_json(home, "search", "--json", *argv)


async def test_every_runtime_is_found_by_request_command_and_message(client: LanguageClient) -> None:
    for query in ('"write what happened"', "nonexistent-dir", '"directory does not exist"'):
        got = await call(client, P.SEARCH, {"query": query, "limit": 100})
        assert {r["runtime"] for r in got["results"]} == set(RUNTIMES), query


async def test_no_secret_in_a_reply(client: LanguageClient) -> None:
    got = await call(client, P.SEARCH, {"query": '"database password"', "in": ["requests", "commands"],
                                        "limit": 100})
    assert got["results"] and SECRET not in json.dumps(got)


@pytest.mark.parametrize("params", [{}, {"query": 3}, {"query": "*"}, {"query": "x" * 10_000},
                                    {"query": "files", "limit": 0}, {"query": "files", "runtime": "emacs"},
                                    {"query": "files", "in": ["reasoning"]}, {"query": "files", "since": "later"},
                                    {"query": "files", "bogus": 1}])
async def test_bad_params_are_invalid_params(client: LanguageClient, params: dict[str, Any]) -> None:
    with pytest.raises(JsonRpcException) as e:
        await call(client, P.SEARCH, params)
    assert e.value.code == P.INVALID_PARAMS


@pytest.mark.parametrize("query", ['"unbalanced files', "files AND", "NEAR(files", "files\u0000\u001b[2J",
                                   "files\udcff", "col:files"])
async def test_hostile_queries_are_text(client: LanguageClient, query: str) -> None:
    got = await call(client, P.SEARCH, {"query": query})
    assert set(got) == {"results", "total"}
