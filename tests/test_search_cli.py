"""`segue search` as a separate process on stores written by the four real runtimes: output shapes, exit codes,
hostile queries (as argv bytes, invalid UTF-8 included), terminal safety, --forget, and read-only stores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_cli_real import RUNTIMES, Stores, snapshot

SECRET = "Sup3rS3cret-42"


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Stores:
    return Stores(tmp_path_factory.mktemp("search-stores"))


def run(stores: Stores, *args: str | bytes) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "segue", "search", *args], env=stores.env, capture_output=True,
                          timeout=120)


def test_json_shape_and_every_runtime_found_by_request_command_and_message(stores: Stores) -> None:
    for query, where in (('"write what happened"', "requests"), ("ls /nonexistent-dir", "commands"),
                         ('"directory does not exist"', "messages")):
        p = run(stores, query, "--in", where, "--json")
        assert p.returncode == 0, p.stderr
        out = json.loads(p.stdout)
        assert set(out) == {"results", "total"} and out["total"] == len(out["results"])
        want = {(rt, s["id"]) for rt in RUNTIMES for s in stores.expected[rt]["sessions"] if s["scenario"] == "one"}
        assert want <= {(r["runtime"], r["id"]) for r in out["results"]}, query
        for r in out["results"]:
            assert set(r) == {"runtime", "id", "title", "cwd", "updated_at", "where", "snippet", "step",
                              "parent_id", "parent_title", "exit_code"}
            assert r["updated_at"].endswith("Z") and len(r["updated_at"]) == 24
            assert "«" in r["snippet"] and r["where"] == where.rstrip("s")
            assert isinstance(r["step"], int) and r["step"] >= 1


def test_the_table_marks_the_match_and_names_the_parent_of_a_subagent(stores: Stores) -> None:
    p = run(stores, '"see the output above"')
    assert p.returncode == 0
    text = p.stdout.decode()
    assert text.splitlines()[0].split() == ["ID", "RUNTIME", "AGE", "TITLE", "DIRECTORY"]
    assert "«see the output above»" in text
    assert text.count("(subagent of ") == len(RUNTIMES)
    # the JSON names the parent as the listing does (the editor's quick pick shows it)
    got = json.loads(run(stores, '"see the output above"', "--json").stdout)["results"]
    listed = {(x["runtime"], x["id"]): x for x in stores.json("list", "--json", "--all")}
    subs = [r for r in got if r["parent_id"]]
    assert len(subs) == len(RUNTIMES)
    for r in subs:
        parent = listed[(r["runtime"], r["parent_id"])]
        assert r["parent_title"] and r["parent_title"] == (parent["title"] or parent["first_request"])


def test_no_secret_next_to_the_phrase(stores: Stores) -> None:
    for args in (('"database password"', "--json"), ('"database password"',), ("password", "--limit", "50")):
        p = run(stores, *args)
        assert p.returncode == 0 and SECRET.encode() not in p.stdout + p.stderr
    assert run(stores, SECRET).returncode == 1


def test_nothing_matched_is_exit_1_and_says_so(stores: Stores) -> None:
    p = run(stores, "xylophone")
    assert p.returncode == 1 and b"no session matches" in p.stderr and not p.stdout
    assert b"No sessions found" not in p.stderr  # the stores hold sessions: only the query found none
    p = run(stores, "xylophone", "--json")
    assert p.returncode == 1 and json.loads(p.stdout) == {"results": [], "total": 0}


def test_no_sessions_at_all_says_where_segue_looked(stores: Stores, tmp_path: Path) -> None:
    env = {k: v for k, v in stores.env.items() if k not in {var for rt in RUNTIMES
                                                              for var in stores.expected[rt]["env"]}}
    env.update(HOME=str(tmp_path / "home"), SEGUE_HOME=str(tmp_path / "state"))
    (tmp_path / "home").mkdir()
    for args in (("files",), ("files", "--json"), ("files", "--runtime", "codex")):
        p = subprocess.run([sys.executable, "-m", "segue", "search", *args], env=env, capture_output=True,
                           timeout=120)
        err = p.stderr.decode()
        assert p.returncode == 1 and "no session matches files" in err, err
        assert "No sessions found. Segue looked in:" in err and "segue demo" in err, err
        looked = {line.split()[0] for line in err.splitlines() if line.startswith("  ")}
        assert looked == ({"codex"} if "--runtime" in args else set(RUNTIMES)), err
    # sessions of another runtime only: the runtime asked for holds none
    p = run(stores, "files", "--runtime", "codex")
    assert p.returncode == 0 and b"No sessions found" not in p.stderr


@pytest.mark.parametrize("args", [(), ("*",), ('"',), ("",), ("x" * 10_000,), ("--since", "soon", "files"),
                                  ("--in", "reasoning", "files"), ("--limit", "0", "files"), ("--forget", "files"),
                                  ("--runtime", "emacs", "files")])
def test_usage_errors_exit_2_without_a_traceback(stores: Stores, args: tuple[str, ...]) -> None:
    p = run(stores, *args)
    assert p.returncode == 2, p.stderr
    assert b"Traceback" not in p.stderr and p.stderr.strip()


@pytest.mark.parametrize("query", [b"files\xff\xfe", b"\xc3(files", b"AND OR NOT files", b"files NEAR(",
                                   b"'files", b'"files', b"files\x1b[31m", b"\x07files\x08", b"fi*", b"files -",
                                   "files \u202e\u2066".encode()])
def test_hostile_queries_are_searched_as_text(stores: Stores, query: bytes) -> None:
    p = run(stores, query)
    operators_as_words = b"AND" in query or b"NEAR" in query  # searched as the words they are: not in any session
    assert p.returncode == (1 if operators_as_words else 0), p.stderr
    assert b"Traceback" not in p.stderr


def test_output_holds_no_raw_control_or_bidi_characters(stores: Stores) -> None:
    for q in ("files", "ls", "notes.md", "count"):
        out = run(stores, q, "--limit", "100").stdout.decode()
        assert not any(ord(c) < 32 and c != "\n" for c in out)
        assert not any(c in out for c in "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\x9b")


def test_filters(stores: Stores) -> None:
    out = json.loads(run(stores, "files", "--runtime", "codex", "--runtime", "cline", "--json",
                         "--limit", "100").stdout)
    assert out["results"] and {r["runtime"] for r in out["results"]} == {"codex", "cline"}
    cwd = next(s for s in stores.expected["opencode"]["sessions"] if s["scenario"] == "sub")["cwd"]
    out = json.loads(run(stores, "files", "--dir", cwd, "--json").stdout)
    assert out["results"] and all(r["cwd"] == cwd for r in out["results"])
    assert run(stores, "files", "--since", "2100-01-01").returncode == 1
    assert run(stores, "files", "--since", "36500d").returncode == 0
    out = json.loads(run(stores, "files", "--limit", "1", "--json").stdout)
    assert len(out["results"]) == 1 and out["total"] > 1


def test_search_leaves_the_stores_untouched(stores: Stores) -> None:
    roots = [stores.root / rt / "home" for rt in RUNTIMES]
    before = {str(r): snapshot(r) for r in roots}
    run(stores, "--forget")
    for q in ("files", '"database password"', "ls", "notes.md"):
        run(stores, q, "--json")
    assert {str(r): snapshot(r) for r in roots} == before
    victim = next(p for p, v in before[str(roots[1])].items() if v is not None)  # negative control
    os.utime(victim, ns=(1, 1))
    assert snapshot(roots[1]) != before[str(roots[1])]


def test_forget_deletes_the_index_and_list_never_needs_it(stores: Stores) -> None:
    assert run(stores, "files").returncode == 0
    cache = Path(stores.env["SEGUE_HOME"]) / "cache"
    assert (cache / "search.sqlite").exists()
    p = run(stores, "--forget")
    assert p.returncode == 0 and b"deleted" in p.stderr
    assert not list(cache.glob("search*"))
    listed: Any = json.loads(stores.run("list", "--json").stdout)
    assert listed and not list(cache.glob("search*"))  # listing builds no search index
