"""The service owns decisions both surfaces share: one listing method (`Service.page`), one wording of
skipped sources, one set of limits, one error base class. Typed results give the JSON of `--json` and the
language server."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from segue import cli, entry, errors, limits
from segue.errors import InvalidArgument, SegueError, classify
from segue.listing import AmbiguousSession, SessionNotFound
from segue.lsp import protocol as P
from segue.model import Session
from segue.paths import StateDir, UnsafeDirectory
from segue.results import ListingPage, PlanRefusal, Trace, TraceLink, skipped_reason
from segue.resume import PlanRefused
from segue.search import QueryError, SearchUnavailable
from segue.service import Service
from segue.stores.base import Env
from segue.tokens import TokenError
from tests.test_listing import DirReader, dir_reader  # noqa: F401  (the fixture)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dir_reader: type[DirReader]) -> Path:  # noqa: F811
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(6):
        (store / f"{i}.json").write_text(json.dumps({"id": f"s{i}", "t": 1000 + i, "q": f"ask {i}"}))
    (store / "broken.json").write_text("{not json")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CODEX_HOME", "OPENCODE_DATA_DIR", "CLINE_DIR", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("segue.listing.RUNTIMES", ("claude",))  # only the test's runtime is scanned
    return tmp_path


def _cli(home: Path, monkeypatch: pytest.MonkeyPatch, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    code = cli.main(["--home", str(home / "state"), *argv])
    return code, out.getvalue(), err.getvalue()


def _svc(home: Path) -> Service:
    return Service(StateDir(home / "state"), env=Env(home=home / "home"))


def test_the_cli_lists_what_the_servers_page_holds(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    code, out, _ = _cli(home, monkeypatch, "list", "--json", "--limit", "4")
    page = _svc(home).page(limit=4)
    assert code == 0 and json.loads(out) == page.sessions_json() == page.to_json()["sessions"]
    assert [s["id"] for s in json.loads(out)] == ["s5", "s4", "s3", "s2"]
    assert (page.total, page.next_offset) == (6, 4)


def test_skipped_sources_read_the_same_on_both_surfaces(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    page = _svc(home).page()
    assert len(page.skipped) == 1 and page.to_json()["skipped"] == 1
    assert page.to_json()["skipped_reasons"] == page.skipped_reasons == [skipped_reason(page.skipped[0])]
    line = page.skipped_reasons[0]
    assert line.startswith("claude: ") and "broken.json" in line
    _, _, err = _cli(home, monkeypatch, "list", "--limit", "0")
    assert f"segue: skipped 1 unreadable item(s):\n  {line}\n" in err


def test_nothing_listed_says_where_segue_looked_and_a_filter_says_it_filtered(
        home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _, out, err = _cli(home, monkeypatch, "list", "--dir", "/nowhere")
    assert out == "" and "No sessions match these filters." in err
    for p in (home / "home" / "store").iterdir():
        p.unlink()
    _, out, err = _cli(home, monkeypatch, "list")
    assert out == "" and "No sessions found. Segue looked in:" in err and str(home / "home" / "store") in err


def test_a_page_validates_its_counts(home: Path) -> None:
    svc = _svc(home)
    for bad in ({"limit": 0}, {"offset": -1}, {"limit": True}):
        with pytest.raises(InvalidArgument):
            svc.page(**bad)  # type: ignore[arg-type]
    assert svc.page(limit=2, offset=5).sessions_json() == [svc.page().sessions_json()[-1]]


def test_the_limits_are_the_protocols_and_the_search_engines() -> None:
    from segue.search import engine

    assert P.ClaimTokenParams(token="h_x").tail == limits.CLAIM_TAIL.default
    assert P.SearchParams(query="x").limit == limits.SEARCH_LIMIT.default == engine.DEFAULT_LIMIT
    assert limits.SEARCH_LIMIT.high == engine.MAX_LIMIT
    for bound, cls, base in ((limits.CLAIM_TAIL, P.ClaimTokenParams, {"token": "h_x"}),
                             (limits.SEARCH_LIMIT, P.SearchParams, {"query": "x"})):
        assert bound.high is not None
        for value in (bound.low - 1, bound.low, bound.high, bound.high + 1):
            ok = bound.allows(value)
            if ok:
                P.parse({**base, bound.name: value}, cls)
            else:
                with pytest.raises(P.InvalidParams):
                    P.parse({**base, bound.name: value}, cls)
                with pytest.raises(InvalidArgument):
                    bound.check(value)


@pytest.mark.parametrize("argv", [["handoff", "claim", "h_x", "--tail", "201"],
                                  ["handoff", "claim", "h_x", "--tail", "-1"],
                                  ["search", "x", "--limit", "1001"], ["search", "x", "--limit", "0"],
                                  ["list", "--limit", "-1"]])
def test_an_out_of_range_count_is_a_usage_error_on_the_cli(tmp_path: Path, argv: list[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["--home", str(tmp_path / "state"), *argv])
    assert e.value.code == 2


@pytest.mark.parametrize("argv", [["handoff", "emit", "claude:s5", "--from", ""],
                                  ["handoff", "emit", "claude:s5", "--from", "Terminal"],
                                  ["handoff", "emit", "claude:s5", "--from", "a b"],
                                  ["handoff", "claim", "h_x", "--as", ""],
                                  ["handoff", "claim", "h_x", "--as", "Bad Surface"]])
def test_a_malformed_surface_is_a_usage_error_not_a_traceback(tmp_path: Path, argv: list[str],
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["--home", str(tmp_path / "state"), *argv])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert "must be a short lowercase word" in err and "Traceback" not in err


def test_a_bad_tail_does_not_use_the_token_up(home: Path) -> None:
    svc = _svc(home)
    token = svc.emit("claude:s5", "terminal").token
    with pytest.raises(InvalidArgument) as e:
        svc.claim(token, "editor", tail=limits.CLAIM_TAIL.high + 1)  # type: ignore[operator]
    assert classify(e.value) == ("invalid_params", "tail must be between 0 and 200", {"field": "tail"})
    claim = svc.claim(token, "editor", tail=1)
    assert claim.session.id == "s5" and [t.to_json() for t in claim.tail] == [{"kind": "request", "text": "ask 5"}]
    j = claim.to_json()
    assert list(j) == ["session", "source_surface", "claimed_as", "active_task", "tail", "brief_path", "plan"]
    if isinstance(claim.plan, PlanRefusal):  # no claude CLI here: the claim still succeeds
        assert j["plan"]["refused"] == claim.plan.reason and j["plan"]["message"] == claim.plan.message


def _session(sid: str) -> Session:
    return Session(runtime="claude", id=sid, store_path="/x")


@pytest.mark.parametrize("error,reason,data", [
    (SessionNotFound("codex:nope"), "unknown_session", {"ref": "codex:nope"}),
    (AmbiguousSession("ab", [_session(f"ab{i}") for i in range(25)]), "ambiguous_session",
     {"candidates": [f"claude:ab{i}" for i in range(20)]}),
    (TokenError("expired"), "expired", {}),
    (PlanRefused("missing_cli", "no claude here", runtime="claude"), "missing_cli", {"runtime": "claude"}),
    (UnsafeDirectory("/tmp/x is a symlink"), "unsafe_directory", {}),
    (QueryError("nothing to search for"), "invalid_params", {}),
    (SearchUnavailable("no FTS5"), "search_unavailable", {}),
    (cli.Refused("not launched"), "refused", {}),
    (cli.Usage("--shell goes with --print"), "invalid_params", {}),
])
def test_every_domain_error_is_a_segue_error_with_its_reason_and_data(error: Exception, reason: str,
                                                                      data: dict) -> None:
    assert isinstance(error, SegueError)
    assert classify(error) == (reason, str(error), data)
    assert errors.describe(error) == str(error)


def test_anything_else_is_not_classified_and_a_permission_error_is() -> None:
    assert classify(KeyError("x")) is None and classify(ValueError("x")) is None
    assert classify(PermissionError("no"))[0] == "permission_denied"  # type: ignore[index]


def test_a_reason_the_server_maps_is_one_it_has_a_code_for() -> None:
    """The reasons domain errors carry are the wire's (a typo would turn into "internal")."""
    reasons = {"unknown_session", "ambiguous_session", "expired", "missing_cli", "unsafe_directory",
               "search_unavailable", "permission_denied", "malformed", "unknown", "claimed", "revoked",
               "missing_directory", "bad_target"}
    assert reasons <= set(P.ERROR_CODES)
    assert set(TokenError.messages) <= set(P.ERROR_CODES)


def test_results_give_the_json_of_the_cli() -> None:
    link = TraceLink("claude", "a", None, None, None, False)
    assert Trace([link]).to_json() == [{"runtime": "claude", "id": "a", "title": None, "started_at": None,
                                        "continues": None, "found": False}]
    page = ListingPage(sessions=[], skipped=[], total=0, next_offset=None, listed=0)
    assert page.to_json() == {"sessions": [], "skipped": 0, "skipped_reasons": [], "total": 0, "next_offset": None}


def test_serve_goes_through_the_entry_point(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
                                            ) -> None:
    assert cli.main(["serve"]) == 2 and "python -m segue serve" in capsys.readouterr().err
    seen: list[str | None] = []
    import segue.lsp.server

    monkeypatch.setattr(segue.lsp.server, "serve", lambda home=None: seen.append(home) or 7)
    assert entry.main(["--home", "/some/where", "serve", "--stdio"]) == 7 and seen == ["/some/where"]


@pytest.mark.parametrize("keep_on", [False, True])
def test_a_quick_answer_runs_without_the_cyclic_collector_and_the_full_path_with_it(
        monkeypatch: pytest.MonkeyPatch, keep_on: bool) -> None:
    """entry._quick turns the cyclic GC off for the quick answer only (SEGUE_QUICK_GC=1 keeps it on): a refused
    quick answer hands the full path a collector as it was, and so does one that raised."""
    import gc

    import segue.cli
    import segue.cli_search
    import segue.warm

    if keep_on:
        monkeypatch.setenv("SEGUE_QUICK_GC", "1")
    else:
        monkeypatch.delenv("SEGUE_QUICK_GC", raising=False)
    seen: list[tuple[str, bool]] = []

    def refused(args: list[str]) -> None:
        seen.append(("quick", gc.isenabled()))
        return None

    monkeypatch.setattr(segue.warm, "answer", refused)
    monkeypatch.setattr(segue.cli_search, "quick_main", lambda args: seen.append(("query", gc.isenabled())) or 0)
    monkeypatch.setattr(segue.cli, "main", lambda args, serve=None: seen.append(("full", gc.isenabled())) or 0)
    assert gc.isenabled()
    assert entry.main(["list", "--json"]) == 0
    assert entry.main(["search", "cargo"]) == 0
    assert seen == [("quick", keep_on), ("full", True), ("query", keep_on)]
    assert gc.isenabled()

    def boom(args: list[str]) -> None:
        raise RuntimeError("a bug in a quick answer")

    monkeypatch.setattr(segue.warm, "answer", boom)
    with pytest.raises(RuntimeError):
        entry.main(["list"])
    assert gc.isenabled()


def test_serve_freezes_what_its_imports_built_and_leaves_the_collector_on(monkeypatch: pytest.MonkeyPatch) -> None:
    import gc

    import segue.lsp.server

    during: list[bool] = []
    monkeypatch.setattr(segue.lsp.server, "serve", lambda home=None: during.append(gc.isenabled()) or 0)
    gc.unfreeze()
    try:
        assert gc.get_freeze_count() == 0
        assert entry.main(["serve"]) == 0
        assert gc.get_freeze_count() > 0  # the objects the imports made are out of later collections
        assert during == [True] and gc.isenabled()
    finally:
        gc.unfreeze()
