"""Issue 12: a secret typed in a session's first request never reaches a listing surface: `segue list` (table
and --json), `segue trace`, `segue/listSessions` (the Sessions tree), kept facts; and the listing cache stores
only redacted text. Also the redactor-level half of "output cut to its tail before redaction"."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segue import cli, index
from segue.model import Session
from segue.paths import StateDir
from segue.redact import WITHHELD, Redactor, redact_summary, redact_text
from segue.service import Service
from tests.test_store_claude import SID, Log

PASSWORD = "Qv7-Hunter#2026"
TOKEN = "acme_live_" + "Zt4Kq9Wm2Xp7Rv3Nb8Lc5Hd1"
PROMPT = f"log in to staging as admin, my password is {PASSWORD} and the API token is {TOKEN}"


@pytest.fixture()
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "home" / ".claude"
    Log().user(PROMPT).text("done").write(root / "projects" / "-home-me-src-proj" / f"{SID}.jsonl")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(root))
    for var in ("CODEX_HOME", "XDG_DATA_HOME", "XDG_CONFIG_HOME", "CLINE_DIR"):
        monkeypatch.delenv(var, raising=False)
    return root


def _no_secret(out: str) -> None:
    assert PASSWORD not in out and TOKEN not in out
    assert "[REDACTED:" in out


def test_listing_surfaces_never_show_a_secret_from_the_first_request(store: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    # list twice: cold (summarised now) and warm (from the cache)
    for argv in (["list"], ["list", "--json"], ["list"], ["list", "--json"], ["trace", f"claude:{SID}"],
                 ["trace", f"claude:{SID}", "--json"]):
        code = cli.main(argv)
        out = capsys.readouterr().out
        assert code == 0, argv
        assert PASSWORD not in out and TOKEN not in out, argv
        assert "log in to staging" in out or argv[0] == "trace" or argv == ["list"], argv
    cli.main(["list", "--json"])
    mine = [r for r in json.loads(capsys.readouterr().out) if r["id"] == SID]
    assert mine and "[REDACTED:" in (mine[0]["first_request"] or "")
    # what the language server returns for segue/listSessions, which the Sessions tree is drawn from
    result = Service(StateDir.resolve(None)).list_sessions()
    assert [s for s in result["sessions"] if s["id"] == SID]
    _no_secret(json.dumps(result))


def test_the_listing_cache_stores_redacted_text(store: Path, _segue_home: Path) -> None:
    Service(StateDir.resolve(None)).list_sessions()
    files = [p for p in _segue_home.rglob("*") if p.is_file()]
    blob = b"".join(p.read_bytes() for p in files)
    assert files and PASSWORD.encode() not in blob and TOKEN.encode() not in blob
    assert b"log in to staging" in blob or any(p.suffix == ".bin" for p in files)


def test_redact_summary_redacts_title_and_first_request_and_shares_found_values() -> None:
    s = Session(runtime="claude", id="x", store_path="/p", title=f"retry with {PASSWORD}",
                first_request=f"password: {PASSWORD}")
    redact_summary(s)
    assert PASSWORD not in (s.title or "") and PASSWORD not in (s.first_request or "")
    assert redact_summary(Session(runtime="claude", id="y", store_path="/p")).title is None
    assert redact_text(None) is None and redact_text("") == ""
    assert redact_text("fix the parser in src/app.py") == "fix the parser in src/app.py"


def test_redact_summary_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: Redactor, text: str) -> list[tuple[int, int, str]]:
        raise RuntimeError("no")
    monkeypatch.setattr(Redactor, "_spans", boom)
    s = redact_summary(Session(runtime="claude", id="x", store_path="/p", title="t", first_request="q"))
    assert s.title == WITHHELD and s.first_request == WITHHELD
    assert redact_text("q") == WITHHELD


def test_index_schema_was_bumped_so_old_unredacted_summaries_are_dropped() -> None:
    assert index.SCHEMA >= 2


def test_tail_excerpt_redacts_before_cutting() -> None:
    # a secret that a cut to the tail would halve must not leave its second half behind
    r = Redactor(environ={})
    secret = "ghp_" + "R8tX2mK9pL4vQ7wE1zY6uB3nC5aD0fG2hJ4k"
    text = "x" * 5000 + f" export GITHUB_TOKEN={secret}\n" + "y" * 30
    for limit in range(20, 80):
        out, _, _ = r.excerpt(text, limit, "tail")
        assert secret[-12:] not in out and len(out) <= limit


def test_segue_handoff_markers_survive_listing_redaction() -> None:
    marker = "[segue-handoff v1 from=opencode:ses_dd8efb976ffec6myh5MdH16VY0]"
    s = redact_summary(Session(runtime="claude", id="x", store_path="/p",
                               first_request=f"password: {PASSWORD}\nRead the brief.\n{marker}"))
    assert s.first_request is not None and s.first_request.endswith(marker) and PASSWORD not in s.first_request


def test_the_language_server_never_sends_a_secret_from_the_first_request(store: Path, tmp_path: Path) -> None:
    # the real server over stdio, as the editor runs it: every byte it writes for segue/listSessions (and the
    # session's trace) is checked, cold and warm (from the listing cache)
    import os
    import sys

    from tests.test_lsp_harness import RawPeer

    env = {k: v for k, v in os.environ.items() if not k.startswith(("CODEX_", "OPENCODE_", "CLINE_", "XDG_"))}
    env["PYTHONPATH"] = str(Path(__file__).resolve().parent.parent / "server") + os.pathsep + env.get("PYTHONPATH", "")
    peer = RawPeer(env, [sys.executable, "-m", "segue", "serve", "--stdio"])
    try:
        peer.send({"jsonrpc": "2.0", "id": "init", "method": "initialize",
                   "params": {"processId": None, "capabilities": {},
                              "initializationOptions": {"segueHome": str(tmp_path / "lsp-home"), "watch": False}}})
        peer.replies({"init"})
        peer.send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        for i in ("cold", "warm"):
            peer.send({"jsonrpc": "2.0", "id": i, "method": "segue/listSessions", "params": {}})
            sessions = peer.replies({i}, timeout=60)[i]["result"]["sessions"]
            mine = [s for s in sessions if s["id"] == SID]
            assert mine and "[REDACTED:" in (mine[0]["first_request"] or ""), i
    finally:
        peer.kill()
    assert PASSWORD.encode() not in peer.raw and TOKEN.encode() not in peer.raw
    assert b"log in to staging" in peer.raw  # the first request is shown, redacted
