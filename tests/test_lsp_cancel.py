"""Cancelling a long listing stops its work, and a long listing never blocks other requests.

The store is a Claude Code project with many transcripts (hard links to one real transcript: no disk cost,
but every one is its own source to summarize on a cold scan), so a cold listing takes seconds."""

from __future__ import annotations

import asyncio
import os
import re
import time
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcRequestCancelled
from pytest_lsp import ClientServerConfig, LanguageClient

from segue.lsp import protocol as P
from tests.test_lsp_harness import SERVER, Stores, cpu_seconds, init_params, keep_plain_json, server_pid

COPIES = 15_000
STORES = Stores("cancel", runtimes=["claude"])
_project = STORES.root / "claude" / "home" / ".claude" / "projects" / "-tmp-big"
_project.mkdir()
_src = next((STORES.root / "claude" / "home").rglob("618653cc-*.jsonl"))
for i in range(COPIES):
    os.link(_src, _project / f"00000000-0000-4000-8000-{i:012d}.jsonl")


@pytest_lsp.fixture(config=ClientServerConfig(server_command=SERVER, server_env=STORES.env))
async def client(lsp_client: LanguageClient, tmp_path: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(tmp_path / "segue-home", watch=False))  # no scan of its own
    yield
    await lsp_client.shutdown_session()


async def busy_cpu(pid: int, seconds: float) -> float:
    c0 = cpu_seconds(pid)
    await asyncio.sleep(seconds)
    return cpu_seconds(pid) - c0


@pytest.mark.slow
async def test_cancel_request_stops_the_scan_and_others_are_not_blocked(client: LanguageClient) -> None:
    pid = server_pid(client)
    listing = asyncio.ensure_future(client.protocol.send_request_async(P.LIST_SESSIONS, {}, msg_id="big-1"))
    await asyncio.sleep(0.3)
    t0 = time.monotonic()
    status = await asyncio.wait_for(client.protocol.send_request_async(P.TOKEN_STATUS, {}), 10)
    other = time.monotonic() - t0
    assert status == {"tokens": []}
    assert not listing.done(), "the cold listing finished too soon to test cancelling it: raise COPIES"
    # On a loaded machine the server may get little CPU in any half second: watch it for up to 5 s.
    working, watched = 0.0, 0.0
    while working <= 0.05 and watched < 5.0 and not listing.done():
        working += await busy_cpu(pid, 0.5)
        watched += 0.5
    assert working > 0.05, f"the scan should be using CPU ({working:.2f}s in {watched:.1f}s)"
    assert not listing.done(), "the cold listing finished too soon to test cancelling it: raise COPIES"
    client.protocol.notify(types.CANCEL_REQUEST, types.CancelParams(id="big-1"))
    with pytest.raises(JsonRpcRequestCancelled):
        await asyncio.wait_for(listing, 10)
    await asyncio.sleep(0.3)  # the worker stops at its next source
    after = await busy_cpu(pid, 1.5)
    print(f"another request answered in {other:.2f}s during the scan; "
          f"CPU while scanning {working:.2f}s/{watched:.1f}s, after cancel {after:.2f}s/1.5s")
    assert other < 2.0, "a request that needs no listing waited for one"
    assert after < 0.15, f"the cancelled scan kept working ({after:.2f}s CPU in 1.5s)"
    # the service lock came free with the cancel: another listing (of a store this env does not have) is quick
    t0 = time.monotonic()
    got = await asyncio.wait_for(client.protocol.send_request_async(P.LIST_SESSIONS, {"runtime": "codex"}), 10)
    assert got["sessions"] == [] and time.monotonic() - t0 < 2.0


@pytest.mark.slow
async def test_cancelling_the_progress_token_cancels_the_listing(client: LanguageClient) -> None:
    client.progress_reports.setdefault("scan-1", [])
    listing = asyncio.ensure_future(client.protocol.send_request_async(
        P.LIST_SESSIONS, {"workDoneToken": "scan-1"}))
    for _ in range(50):
        if client.progress_reports["scan-1"]:
            break
        await asyncio.sleep(0.05)
    begin = client.progress_reports["scan-1"][0]
    assert isinstance(begin, types.WorkDoneProgressBegin) and begin.cancellable
    await asyncio.sleep(0.3)
    for _ in range(100):  # the scan's reports: sources read, as a share of all it will read that only grows
        reports = [v for v in client.progress_reports["scan-1"] if isinstance(v, types.WorkDoneProgressReport)]
        if len(reports) >= 3:
            break
        await asyncio.sleep(0.05)
    assert len(reports) >= 3
    assert all(re.fullmatch(r"reading \w+ sessions: \d+ read, \d+/\d+ sources", r.message or "") for r in reports)
    assert any(r.message.startswith("reading claude sessions: ") for r in reports)
    shares = [r.percentage for r in reports]
    assert shares == sorted(shares) and shares[-1] < 100, shares
    assert not listing.done()
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token="scan-1"))
    with pytest.raises(JsonRpcException) as info:
        await asyncio.wait_for(listing, 10)
    assert info.value.code == -32800 and info.value.data == {"reason": "cancelled"}
    await asyncio.sleep(0.2)
    assert isinstance(client.progress_reports["scan-1"][-1], types.WorkDoneProgressEnd)
