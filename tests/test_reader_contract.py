"""The reader contract (CONTRIBUTING: reader design): records are JSON, not a byte layout.

Every store below is read as written, with its fast paths off (the reference), and then as a copy rewritten
in each serialization a writer or tool may produce, with fast paths on and off. Sessions (the listing's
facts), steps, commands, files changed and requests must be the same every time.

Stores: every real fixture (tests/fixtures/real/*/home), the hand-made generations of the reader tests
(Claude Code C1/C2/C3, Codex, Cline), tool-output-heavy Claude Code and Codex transcripts from
bench/gen/tooljson.py (JSON inside strings, long lines), and a small store from bench/generate.py (all
runtimes; slow).
Variants are applied to JSONL lines and whole JSON documents; in SQLite databases, to the JSON held in text
cells (serialization variants only: CRLF, BOM, blank lines and torn lines are file-level forms).
`.zst` rollouts are left as they are.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from segue.listing import reader_for
from segue.model import ReadStats
from segue.stores import RUNTIMES
from segue.stores.base import Env
from tests.conftest import REAL, REAL_VERSIONS

VARIANTS = ("compact", "spaced", "indent", "reversed", "sort_keys", "crlf", "bom", "blank_lines", "torn")
SERIAL = {"compact", "spaced", "indent", "reversed", "sort_keys"}  # the ones that re-encode each record

# ---------------------------------------------------------------------------------------------------------
# Rewriting a store


def _reverse(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _reverse(v[k]) for k in reversed(list(v))}
    if isinstance(v, list):
        return [_reverse(x) for x in v]
    return v


def _dumps(obj: Any, variant: str, *, one_line: bool) -> str:
    if variant == "spaced":
        return json.dumps(obj)  # default separators (", ", ": ") and \\u escapes
    if variant == "indent":
        text = json.dumps(obj, indent=2, ensure_ascii=False)
        return text.replace("\n", " ") if one_line else text  # newlines only between tokens
    if variant == "reversed":
        return json.dumps(_reverse(obj), separators=(",", ":"), ensure_ascii=False)
    if variant == "sort_keys":
        return json.dumps(obj, separators=(",", ":"), ensure_ascii=False, sort_keys=True)
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


def _encode(text: str, obj: Any, variant: str, one_line: bool) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: only \\u escapes can carry them
        return json.dumps(obj).encode("ascii")


def rewrite_jsonl(data: bytes, variant: str) -> bytes:
    lines = data.split(b"\n")
    ends_open = bool(lines and lines[-1])
    if not ends_open:
        lines = lines[:-1]
    out: list[bytes] = []
    for ln in lines:
        if variant in SERIAL and ln.strip():
            try:
                obj = json.loads(ln)
            except ValueError:
                out.append(ln)  # damage stays damage
                continue
            out.append(_encode(_dumps(obj, variant, one_line=True), obj, variant, True))
        else:
            out.append(ln)
    if variant == "crlf":
        body = b"".join(ln + b"\r\n" for ln in out)
    elif variant == "blank_lines":
        body = b"".join(ln + (b"\n\n" if i % 2 else b"\n   \n") for i, ln in enumerate(out))
    else:
        body = b"".join(ln + b"\n" for ln in out)
    if ends_open:
        body = body[:-2] if variant == "crlf" else body[:-1]  # a file that ended mid-line still does
    if variant == "bom":
        body = b"\xef\xbb\xbf" + body
    if variant == "torn" and out and not ends_open:
        last = out[-1]
        body += last[: max(1, len(last) // 2)]  # a live writer's half-written next record
    return body


def rewrite_json(data: bytes, variant: str) -> bytes:
    try:
        obj = json.loads(data)
    except ValueError:
        return data
    if variant in SERIAL:
        return _encode(_dumps(obj, variant, one_line=False), obj, variant, False) + b"\n"
    if variant == "crlf":
        return json.dumps(obj, indent=2, ensure_ascii=False).replace("\n", "\r\n").encode("utf-8") + b"\r\n"
    if variant == "bom":
        return b"\xef\xbb\xbf" + data
    if variant == "blank_lines":
        return b"\n\n" + data.strip() + b"\n\n"
    return data  # a torn document is damage, not a serialization: left whole


def rewrite_sqlite(path: Path, variant: str) -> None:
    if variant not in SERIAL:
        return
    con = sqlite3.connect(path)
    try:
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        for t in tables:
            cols = [r[1] for r in con.execute(f'PRAGMA table_info("{t}")')]
            for c in cols:
                rows = con.execute(f'SELECT rowid, "{c}" FROM "{t}" WHERE typeof("{c}")=\'text\' '
                                   f'AND substr(ltrim("{c}"), 1, 1) IN (\'{{\', \'[\')').fetchall()
                for rowid, text in rows:
                    try:
                        obj = json.loads(text)
                    except ValueError:
                        continue
                    new = _dumps(obj, variant, one_line=False)
                    con.execute(f'UPDATE "{t}" SET "{c}"=? WHERE rowid=?', (new, rowid))
        con.commit()
    except sqlite3.DatabaseError:
        pass  # WITHOUT ROWID tables or a locked copy: the rows stay as written
    finally:
        con.close()


def rewrite_tree(root: Path, variant: str) -> None:
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            if p.is_symlink() or name.endswith(("-wal", "-shm", ".zst")):
                continue
            st = p.stat()
            head = p.read_bytes()[:16]
            if head.startswith(b"SQLite format 3"):
                if not (p.with_name(name + "-wal")).exists():
                    rewrite_sqlite(p, variant)
            elif name.endswith(".jsonl"):
                p.write_bytes(rewrite_jsonl(p.read_bytes(), variant))
            elif name.endswith(".json"):
                p.write_bytes(rewrite_json(p.read_bytes(), variant))
            else:
                continue
            os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))  # times a reader may fall back on stay


def test_rewrites_are_what_they_say() -> None:
    line = b'{"type":"user","message":{"role":"user","content":"caf\xc3\xa9"}}\n'
    assert rewrite_jsonl(line, "spaced") == b'{"type": "user", "message": {"role": "user", "content": "caf\\u00e9"}}\n'
    assert rewrite_jsonl(line, "reversed").startswith(b'{"message":{"content":"caf\xc3\xa9","role":"user"}')
    assert rewrite_jsonl(line, "sort_keys").startswith(b'{"message":{"content"')
    assert rewrite_jsonl(line, "crlf") == line[:-1] + b"\r\n"
    assert rewrite_jsonl(line, "bom") == b"\xef\xbb\xbf" + line
    assert rewrite_jsonl(line + line, "blank_lines").count(b"\n") == 4
    torn = rewrite_jsonl(line, "torn")
    assert torn.startswith(line) and not torn.endswith(b"\n") and len(torn) > len(line)
    assert b"\n" not in rewrite_jsonl(line, "indent")[:-1] and b"  " in rewrite_jsonl(line, "indent")


# ---------------------------------------------------------------------------------------------------------
# Stores


@dataclasses.dataclass
class Store:
    root: Path  # copied and rewritten whole
    home: str  # relative to root
    environ: dict[str, str]  # values relative to root


def _pinned(store: Store) -> Store:
    """Hand-made stores are built anew for every variant: give their files one fixed mtime, which readers
    may fall back on for times."""
    for p in sorted((store.root / store.home).rglob("*")):
        if p.is_file() and not p.is_symlink():
            os.utime(p, (1_795_000_000, 1_795_000_000))
    return store


def _real(rt: str, root: Path = REAL) -> Callable[[Path], Store]:
    def build(tmp: Path) -> Store:
        exp = json.loads((root / rt / "expected.json").read_text())
        shutil.copytree(root / rt / "home", tmp / "home", symlinks=True)
        env = exp.get("env", {})
        return Store(tmp, env.get("HOME", "home"), {k: v for k, v in env.items() if k != "HOME"})
    return build


def _claude_hand(gen: str) -> Callable[[Path], Store]:
    def build(tmp: Path) -> Store:
        from tests import test_store_claude as tc

        _env, root = tc.claude_home(tmp)
        if gen == "C3":
            tc.c3_session(root)
        else:
            _c1_c2(tc, root, gen)
        return _pinned(Store(tmp, "home", {"CLAUDE_CONFIG_DIR": str(root.relative_to(tmp))}))
    return build


def _c1_c2(tc: Any, root: Path, gen: str) -> None:
    d = tc.proj(root)
    log = tc.Log(version="1.0.51" if gen == "C1" else "2.0.20")
    log.rec({"type": "summary", "summary": "Refactor parser", "leafUuid": f"u0003-{tc.SID[:8]}"})
    log.user("<command-message>init is analyzing your codebase…</command-message>\n"
             "<command-name>/init</command-name>\n<command-args>focus on parser</command-args>")
    log.user("Refactor the parser\n\nthoroughly")
    log.tool("toolu_task", "Task", {"description": "Find callers", "prompt": "Find all callers of parse()"})
    if gen == "C1":
        log.user("Find all callers of parse()", sidechain=True)
        log.tool("toolu_sb", "Bash", {"command": "grep -rn parse ."}, mid="msg_side2", sidechain=True)
        log.result("toolu_sb", "Exit code 2\ngrep: bad", is_error=True, sidechain=True)
    log.result("toolu_task", [{"type": "text", "text": "3 callers"}], {"agentId": "a0c2", "totalTokens": 9})
    log.bash("toolu_b1", "make test", out="ok\nall passed", mid="m_b1")
    log.tool("toolu_b2", "Bash", {"command": "sleep 999"}, mid="m_b2")
    log.result("toolu_b2", "Command timed out after 2m 0.0s", is_error=True)
    log.tool("toolu_b3", "Bash", {"command": "rm -rf build"}, mid="m_b3")
    log.result("toolu_b3", "The user doesn't want to proceed with this tool use. The tool use was rejected.",
               is_error=True)
    log.tool("toolu_w", "Write", {"file_path": f"{tc.CWD}/notes.md", "content": "a\nb\n"}, mid="m_w")
    log.result("toolu_w", "ok", {"type": "create", "filePath": f"{tc.CWD}/notes.md", "structuredPatch": []})
    log.text("Done. Summary: 3 callers, «naïve» ✓", mid="msg_end")
    log.write(d / f"{tc.SID}.jsonl")
    if gen == "C2":
        sub = tc.Log(agent_id="a0c2", sidechain=True)
        sub.user("Find all callers of parse()")
        sub.bash("toolu_s1", "grep -rn parse .", out="a.py:1", mid="ms1")
        sub.text("3 callers", mid="ms2")
        sub.write(d / "agent-a0c2.jsonl")


def _codex_hand(tmp: Path) -> Store:
    from tests import test_store_codex as tx

    (tmp / "home").mkdir()
    tx.build_store_for_read_only(tmp / "home")  # writes $CODEX_HOME = home/codex
    return _pinned(Store(tmp, "home", {"CODEX_HOME": "home/codex"}))


def _cline_hand(tmp: Path) -> Store:
    from tests import test_store_cline as tl

    home = tmp / "home"
    d = tl.write_session(tl.data_dir(home) / "sessions", tl.SID, tl.sdk_transcript())
    agent = "agent_1795946100000_x1y2z3"
    (d / f"{agent}.messages.json").write_text(json.dumps(tl.messages_doc(
        f"{tl.SID}__{agent}", [tl.user("Count the files here with `ls | wc -l` and report the number.")],
        agent="subagent", parent=tl.SID)))
    root = tl.vscode_root(home)
    (root / "state").mkdir(parents=True)
    (root / "state" / "taskHistory.json").write_text(json.dumps(
        [{"id": "1733000000000", "ts": 1733000900000, "task": "Run the tests", "cwdOnTaskInitialization": "/w/t"}]))
    tl.legacy_task(root, "1733000000000", api=tl.legacy_api_transcript("/w/t"), ui=[])
    return _pinned(Store(tmp, "home", {}))


def _generated(tmp: Path) -> Store:
    import contextlib
    import io

    from bench.generate import generate

    with contextlib.redirect_stderr(io.StringIO()):
        generate(tmp / "gen", n=10, seed=7, big_mb=0.4, big_count=4)
    shutil.move(str(tmp / "gen" / "home"), str(tmp / "home"))
    return Store(tmp, "home", {})


def _tooljson(tmp: Path) -> Store:
    """Tool-output-heavy transcripts (bench/gen/tooljson.py): outputs that are JSON inside strings, so nearly
    every quote is escaped and some twice, lines of hundreds of KiB that the fast paths cut or skip."""
    from bench.gen.tooljson import generate

    generate(tmp / "tj", mb=1.5, seed=3)
    shutil.move(str(tmp / "tj" / "home"), str(tmp / "home"))
    return Store(tmp, "home", {})


STORES: dict[str, tuple[tuple[str, ...], Callable[[Path], Store]]] = {
    **{f"real-{rt}": ((rt,), _real(rt)) for rt in RUNTIMES},
    "real-claude-2.1.332": (("claude",), _real("claude-2.1.332", REAL_VERSIONS)),
    "real-claude-2.1.337": (("claude",), _real("claude-2.1.337", REAL_VERSIONS)),
    "hand-claude-C1": (("claude",), _claude_hand("C1")),
    "hand-claude-C2": (("claude",), _claude_hand("C2")),
    "hand-claude-C3": (("claude",), _claude_hand("C3")),
    "hand-codex": (("codex",), _codex_hand),
    "hand-cline": (("cline",), _cline_hand),
    "tooljson-claude": (("claude",), _tooljson),
    "tooljson-codex": (("codex",), _tooljson),
    # one generated tree, checked per runtime (so one runtime's known failure hides no other's)
    **{f"generated-{rt}": ((rt,), _generated) for rt in RUNTIMES},
}

# ---------------------------------------------------------------------------------------------------------
# What must not change


def observe(store: Store, runtimes: tuple[str, ...], fast: bool) -> dict[str, Any]:
    root = store.root
    env = Env(home=root / store.home,
              environ={**{k: str(root / v) for k, v in store.environ.items()},
                       "SEGUE_FAST_PATHS": "1" if fast else "0"})
    out: dict[str, Any] = {}
    for rt in runtimes:
        reader = reader_for(rt, env)
        for src in reader.sources():
            try:
                sessions = reader.summarize(src)
            except OSError as e:
                out[f"{rt}:skipped:{os.path.relpath(src.path, root)}"] = str(e).replace(str(root), "<root>")
                continue
            for s in sessions:
                j = s.to_json()
                j["store_path"] = os.path.relpath(s.store_path, root)
                stats = ReadStats()
                steps = list(reader.steps(s, stats))
                key = f"{rt}:{s.id}:{j['store_path']}"
                out[key] = {
                    "session": j,
                    "requests": [st.text for st in steps if st.kind == "request"],
                    "commands": [(st.text, st.exit_code, st.status) for st in steps if st.kind == "command"],
                    "files": [(st.path, st.added, st.removed) for st in steps if st.kind == "edit"],
                    "steps": [dataclasses.asdict(st) for st in steps],
                    "damaged_lines": stats.damaged_lines,
                    "problems": stats.problems,
                }
    return out


_BASE: dict[str, dict[str, Any]] = {}
_TREES: dict[tuple[Any, str], Store] = {}


def _tree(name: str, variant: str, factory: pytest.TempPathFactory) -> Store:
    """The store rewritten in `variant` ("" for as written), built once per builder and variant."""
    _runtimes, build = STORES[name]
    if (build, variant) not in _TREES:
        store = build(factory.mktemp(f"{name}-{variant or 'orig'}"))
        if variant:
            rewrite_tree(store.root / store.home, variant)
        _TREES[(build, variant)] = store
    return _TREES[(build, variant)]


def _baseline(name: str, factory: pytest.TempPathFactory) -> dict[str, Any]:
    if name not in _BASE:
        _BASE[name] = observe(_tree(name, "", factory), STORES[name][0], fast=False)
        assert _BASE[name], f"{name}: nothing listed"
    return _BASE[name]


def _diff(want: dict[str, Any], got: dict[str, Any]) -> str:
    if set(want) != set(got):
        return f"sessions differ: missing {sorted(set(want) - set(got))}, extra {sorted(set(got) - set(want))}"
    for k in want:
        for part in ("session", "requests", "commands", "files", "steps", "damaged_lines", "problems"):
            if want[k][part] != got[k][part] if isinstance(want[k], dict) else want[k] != got[k]:
                a = want[k][part] if isinstance(want[k], dict) else want[k]
                b = got[k][part] if isinstance(got[k], dict) else got[k]
                return f"{k} {part}:\n  want {str(a)[:1500]}\n  got  {str(b)[:1500]}"
    return ""


# Known failures of readers not yet fixed (issue 11). strict: a fix makes the test fail until the mark goes.
XFAIL: dict[tuple[str, str], str] = {}


def _params() -> list[Any]:
    out = []
    for name in STORES:
        for variant in VARIANTS:
            for fast in (True, False):
                marks = []
                if name.startswith("generated"):
                    marks.append(pytest.mark.slow)
                reason = XFAIL.get((name, variant)) or XFAIL.get((name, "*"))
                if reason:
                    marks.append(pytest.mark.xfail(strict=True, reason=reason))
                out.append(pytest.param(name, variant, fast, marks=marks,
                                        id=f"{name}-{variant}-{'fast' if fast else 'reference'}"))
    return out


@pytest.mark.parametrize(("name", "variant", "fast"), _params())
def test_same_sessions_and_steps_whatever_the_serialization(name: str, variant: str, fast: bool,
                                                            tmp_path_factory: pytest.TempPathFactory) -> None:
    want = _baseline(name, tmp_path_factory)
    runtimes, _ = STORES[name]
    got = observe(_tree(name, variant, tmp_path_factory), runtimes, fast)
    problem = _diff(want, got)
    if problem:  # the difference says it all; no traceback (pytest's rendering of one can crash on 3.11)
        pytest.fail(problem, pytrace=False)


@pytest.mark.parametrize("name", [n if not n.startswith("generated") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in STORES])
def test_fast_and_reference_agree_on_the_store_as_written(name: str, tmp_path_factory: pytest.TempPathFactory
                                                          ) -> None:
    runtimes, _ = STORES[name]
    store = _tree(name, "", tmp_path_factory)
    want = _baseline(name, tmp_path_factory)
    assert any(v.get("steps") for v in want.values() if isinstance(v, dict)), f"{name}: no steps at all"
    problem = _diff(want, observe(store, runtimes, fast=True))
    if problem:
        pytest.fail(problem, pytrace=False)


def test_the_contract_catches_a_difference(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Negative control: a rewritten store whose commands really differ is caught."""
    want = _baseline("hand-claude-C3", tmp_path_factory)
    store = _claude_hand("C3")(tmp_path_factory.mktemp("control"))
    for p in (store.root / store.home).rglob("*.jsonl"):
        p.write_bytes(p.read_bytes().replace(b"ls /nonexistent-dir", b"ls /another-dir"))
    assert "commands" in _diff(want, observe(store, ("claude",), fast=True))


@pytest.mark.parametrize("name", [n if not n.startswith("generated") else pytest.param(n, marks=pytest.mark.slow)
                                  for n in STORES if "gemini" in STORES[n][0]])
@pytest.mark.parametrize("variant", VARIANTS)
def test_gemini_whole_read_is_the_line_by_line_read(name: str, variant: str, tmp_path_factory: pytest.TempPathFactory,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """Gemini CLI's small files are read in one call and split in memory: every serialization gives the
    same sessions and steps as iterating each file line by line (WHOLE_READ off), with fast paths on and off."""
    from segue.stores.gemini import reader as gemini_reader

    store = _tree(name, variant, tmp_path_factory)
    runtimes, _ = STORES[name]
    whole = [observe(store, runtimes, fast) for fast in (True, False)]
    monkeypatch.setattr(gemini_reader, "WHOLE_READ", -1)
    iterated = [observe(store, runtimes, fast) for fast in (True, False)]
    for a, b in zip(whole, iterated, strict=True):
        problem = _diff(a, b)
        if problem:
            pytest.fail(problem, pytrace=False)
