"""The ranking rule, pinned on a small constructed index: SQLite ranks, cuts and counts (SearchIndex.ranked), and
the page it gives is the one the rule gives when every matching session is ranked in Python."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from segue.model import Session, Step
from segue.paths import StateDir
from segue.search import engine
from segue.search import query as Q
from segue.search.index import SearchIndex

DAY = 86400.0
NOW = time.time()


def build(tmp_path: Path, sessions: list[tuple[str, float, list[str]]]) -> SearchIndex:
    """sessions: (id, age in days, request texts)."""
    state = StateDir(tmp_path / "s")
    idx = SearchIndex(state.private(state.cache))
    by_id = {sid: texts for sid, _age, texts in sessions}
    listed = [Session(runtime="claude", id=sid, store_path=str(tmp_path / sid), updated_at=NOW - age * DAY)
              for sid, age, _texts in sessions]

    def steps(s: Session, _st: Any) -> Any:
        for t in by_id[s.id]:
            yield Step(kind="request", text=t)

    with idx.write_lock():
        idx.refresh(listed, steps, lambda t, cap: t[:cap], {})
    return idx


def ids(idx: SearchIndex, text: str, limit: int | None = 20) -> list[str]:
    res = engine.answer(idx, Q.parse(text), None, None, None, None, limit, lambda: None, "")
    return [r.id for r in res.results]


FILLER = " ".join(f"word{i}" for i in range(60))


def test_a_relevant_recent_hit_ranks_above_an_old_weak_one(tmp_path: Path) -> None:
    idx = build(tmp_path, [
        ("old-weak", 400.0, [f"migration {FILLER}"]),  # one mention in a long step, a year old
        ("new-strong", 0.0, ["migration migration failed"]),  # short and dense, today
        ("none", 0.0, ["nothing here"]),
    ])
    assert ids(idx, "migration") == ["new-strong", "old-weak"]


def test_recency_breaks_equal_relevance_and_outweighs_a_small_gap(tmp_path: Path) -> None:
    idx = build(tmp_path, [
        ("a-old", 90.0, ["fix the parser"]),
        ("b-new", 1.0, ["fix the parser"]),
        ("c-mid", 20.0, ["fix the parser"]),
    ])
    assert ids(idx, "parser") == ["b-new", "c-mid", "a-old"]


def test_a_session_counts_its_best_step_once(tmp_path: Path) -> None:
    idx = build(tmp_path, [
        ("many", 5.0, [f"cargo {FILLER}"] * 6),  # six weak steps do not add up
        ("one", 5.0, ["cargo build cargo"]),
    ])
    res = engine.answer(idx, Q.parse("cargo"), None, None, None, None, 20, lambda: None, "")
    assert [r.id for r in res.results] == ["one", "many"] and res.total == 2
    assert res.results[0].step == 1


def test_a_phrase_needs_its_words_in_order_and_words_do_not(tmp_path: Path) -> None:
    idx = build(tmp_path, [
        ("phrase", 3.0, ["we fixed the parser today"]),
        ("apart", 0.0, ["the tokenizer feeds a parser"]),
        ("reversed", 0.0, ["parser, the new one"]),
    ])
    assert ids(idx, '"the parser"') == ["phrase"]
    assert set(ids(idx, "parser the")) == {"phrase", "apart", "reversed"}
    assert ids(idx, '"THE Parser"') == ["phrase"]  # case-insensitive


@pytest.mark.parametrize("limit", [1, 2, 5, None])
def test_the_page_and_total_are_those_of_ranking_every_match(tmp_path: Path, limit: int | None) -> None:
    sessions = [(f"s{i:02d}", (i * 7) % 50 + 0.5, [("error " * (1 + i % 4)) + FILLER[: 20 * (i % 5)]])
                for i in range(24)] + [("miss", 0.0, ["fine"])]
    idx = build(tmp_path, sessions)
    match = Q.parse("error").fts()
    every = idx.hits(match)

    def rank(h: Any) -> tuple[float, float]:  # the rule, written out as Python
        age = max(0.0, NOW - (h.updated_at or 0.0)) / DAY
        return (h.score * (1.0 + 0.5 ** (age / engine.HALF_LIFE_DAYS)), -(h.updated_at or 0.0))

    every.sort(key=rank)
    page, total = idx.ranked(match, NOW, engine.HALF_LIFE_DAYS, limit=limit)
    want = every if limit is None else every[:limit]
    assert [(h.id, h.rowid) for h in page] == [(h.id, h.rowid) for h in want]
    assert total == len(every) == 24
    since, _ = idx.ranked(match, NOW, engine.HALF_LIFE_DAYS, since=NOW - 10 * DAY)
    assert since and all(h.updated_at >= NOW - 10 * DAY for h in since)
    assert [h.id for h in since] == [h.id for h in every if h.updated_at >= NOW - 10 * DAY]


def test_a_session_with_many_strong_steps_does_not_crowd_out_the_next(tmp_path: Path) -> None:
    # SQLite sorts steps and the page is cut from them: one session's 40 best steps must not hide the second
    idx = build(tmp_path, [("many", 0.0, ["deploy deploy deploy"] * 40), ("next", 30.0, [f"deploy {FILLER}"]),
                           ("third", 60.0, [f"deploy {FILLER} {FILLER}"])])
    res = engine.answer(idx, Q.parse("deploy"), None, None, None, None, 2, lambda: None, "")
    assert [r.id for r in res.results] == ["many", "next"] and res.total == 3
    assert [h.id for h in idx.ranked(Q.parse("deploy").fts(), NOW, 14.0, limit=3)[0]] == ["many", "next", "third"]


def test_a_bounded_ranking_gives_the_page_of_ranking_every_match(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """SearchIndex._bounded skips the bm25 of sessions too old to reach the page: the page and total must be
    exactly those of ranking every matching step (SEGUE_SEARCH_PRUNE=0), and the bound must really be used."""
    import random

    from segue.search import index as I

    rng = random.Random(7)
    words = ["test", "cargo", "build", "parser", "error", "deploy", "fix", "the"]
    sessions = []
    for i in range(300):
        age = rng.choice([-20.0, 0.0, 0.5, 3.0]) if i % 10 == 0 else rng.uniform(0.0, 500.0)
        texts = []
        for _ in range(rng.randint(1, 6)):
            n = rng.choice([1, 2, 3, 8, 30, 120])
            texts.append(" ".join(rng.choice(words) if rng.random() < 0.3 else f"w{rng.randint(0, 999)}"
                                  for _ in range(n)))
        sessions.append((f"s{i:03d}", age, texts))
    idx = build(tmp_path, sessions)
    monkeypatch.setattr(I, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(I, "PRUNE_SAMPLE_STEPS", 2)
    monkeypatch.setattr(I, "PRUNE_SAMPLE_ROWS", 40)
    used: list[int] = []
    real = I.SearchIndex._bounded

    def spy(self: Any, *a: Any, **k: Any) -> Any:
        got = real(self, *a, **k)
        used.append(got is not None)
        return got

    monkeypatch.setattr(I.SearchIndex, "_bounded", spy)
    queries = ["test", "the", "cargo build", '"fix the"', "te*", "parser error", "w1*"]
    for text in queries:
        phrases = [t.fts() for t in Q.parse(text).terms]
        match = Q.parse(text).fts()
        for limit in (1, 3, 10, 50):
            for kw in ({}, {"since": NOW - 100 * DAY}, {"where": ["request"]}, {"runtimes": ["claude"]}):
                monkeypatch.delenv("SEGUE_SEARCH_PRUNE", raising=False)
                page, total = idx.ranked(match, NOW, engine.HALF_LIFE_DAYS, limit=limit, phrases=phrases, **kw)
                monkeypatch.setenv("SEGUE_SEARCH_PRUNE", "0")
                want, want_total = idx.ranked(match, NOW, engine.HALF_LIFE_DAYS, limit=limit, phrases=phrases, **kw)
                assert [(h.sid, h.rowid, h.score) for h in page] == [(h.sid, h.rowid, h.score) for h in want], (
                    text, limit, kw)
                assert total == want_total, (text, limit, kw)
    assert sum(used) >= 20 and not all(used)  # the bound decided many pages; others fell back to ranking all
    monkeypatch.setenv("SEGUE_SEARCH_PRUNE", "0")
    n = len(used)
    idx.ranked(Q.parse("test").fts(), NOW, engine.HALF_LIFE_DAYS, limit=3, phrases=['"test"'])
    assert len(used) == n  # switched off: never tried


def test_only_single_words_are_bounded_and_the_engine_gives_the_same_page(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from segue.search import index as I

    assert engine._bounding(Q.parse('"the parser"')) is None and engine._bounding(Q.parse("foo-bar")) is None
    assert engine._bounding(Q.parse("cargo te*")) is None  # several words: never bounded by the engine
    assert engine._bounding(Q.parse("te*")) == ['"te" *'] and engine._bounding(Q.parse("cargo")) == ['"cargo"']
    idx = build(tmp_path, [(f"s{i}", i * 3.0, [f"deploy {FILLER[: 7 * (i % 9)]}"]) for i in range(40)])
    monkeypatch.setattr(I, "PRUNE_MIN_ROWS", 1)
    pages = []
    for switch in ("1", "0"):
        monkeypatch.setenv("SEGUE_SEARCH_PRUNE", switch)
        res = engine.answer(idx, Q.parse("deploy"), None, None, None, None, 5, lambda: None, "")
        pages.append(([(r.id, r.step, r.snippet) for r in res.results], res.total))
    assert pages[0] == pages[1] and pages[0][1] == 40 and len(pages[0][0]) == 5


def test_a_kind_filter_on_the_rowid_or_the_content_table_gives_the_same_pages(tmp_path: Path,
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`--in` tested on the rowid's kind code (SEGUE_SEARCH_KIND_ROWID) or read from docs_content
    (SEGUE_SEARCH_KIND_JOIN) keeps exactly the steps FTS5's own column keeps: same pages and totals, bounded or
    not, with the other filters; every rowid carries its row's kind; and it really filters (negative control)."""
    import random

    from segue.search import index as I

    rng = random.Random(3)
    words = ["test", "cargo", "build", "the", "parser"]
    kinds = ["request", "message", "command", "edit"]
    state = StateDir(tmp_path / "s")
    idx = SearchIndex(state.private(state.cache))
    plan = {f"s{i:03d}": (rng.uniform(0.0, 300.0), [(rng.choice(kinds), " ".join(
        rng.choice(words) if rng.random() < 0.4 else f"w{rng.randint(0, 99)}" for _ in range(rng.randint(1, 20))))
        for _ in range(rng.randint(1, 8))]) for i in range(200)}
    listed = [Session(runtime=rng.choice(["claude", "codex"]), id=sid, store_path=str(tmp_path / sid),
                      updated_at=NOW - age * DAY) for sid, (age, _steps) in plan.items()]

    def steps(s: Session, _st: Any) -> Any:
        for kind, text in plan[s.id][1]:
            yield Step(kind=kind, text=text, exit_code=0 if kind == "command" else None)

    with idx.write_lock():
        idx.refresh(listed, steps, lambda t, cap: t[:cap], {})
    con = idx.connection()
    assert I._kind_filter(con, ["command"])[3]  # the rowid's code is the default
    codes = con.execute("SELECT rowid & 3, kind FROM docs").fetchall()
    assert {k for _c, k in codes} == set(I.KIND_CODE) and all(I.KIND_CODE[k] == c for c, k in codes)
    monkeypatch.setenv("SEGUE_SEARCH_KIND_ROWID", "0")
    assert I._kind_filter(con, ["command"])[0]  # then the join
    monkeypatch.delenv("SEGUE_SEARCH_KIND_ROWID")
    modes = [{}, {"SEGUE_SEARCH_KIND_ROWID": "0"}, {"SEGUE_SEARCH_KIND_ROWID": "0", "SEGUE_SEARCH_KIND_JOIN": "0"}]
    monkeypatch.setattr(I, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(I, "PRUNE_SAMPLE_ROWS", 30)
    for text in ["test", "the", "cargo build", '"the parser"', "w1*"]:
        parsed = Q.parse(text)
        for where in (["command"], ["request", "message"], ["message"], ["file", "command"]):
            for kw in ({}, {"since": NOW - 100 * DAY}, {"runtimes": ["codex"]}):
                for limit in (3, 20, None):
                    got = []
                    for mode in modes:
                        for name in ("SEGUE_SEARCH_KIND_ROWID", "SEGUE_SEARCH_KIND_JOIN"):
                            monkeypatch.setenv(name, mode.get(name, "1"))
                        res = engine.answer(idx, parsed, tuple(where), kw.get("runtimes"), None, kw.get("since"),
                                            limit, lambda: None, "")
                        got.append(([(r.id, r.step, r.where, r.snippet) for r in res.results], res.total))
                    assert got[0] == got[1] == got[2], (text, where, kw, limit)
                    assert all(w in where for _i, _s, w, _t in got[0][0])
    monkeypatch.delenv("SEGUE_SEARCH_KIND_JOIN")
    monkeypatch.delenv("SEGUE_SEARCH_KIND_ROWID")
    every = engine.answer(idx, Q.parse("test"), None, None, None, None, None, lambda: None, "")
    cmds = engine.answer(idx, Q.parse("test"), ("command",), None, None, None, None, lambda: None, "")
    assert 0 < cmds.total < every.total  # the filter drops sessions whose matches are all of other kinds
    assert {r.where for r in every.results} > {"command"}


def test_the_recency_table_is_sessions_own_and_gives_the_same_pages(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`recency` (kept by triggers) holds every session's (sid, updated_at) through inserts, updates and removals,
    and ranking through it (SEGUE_SEARCH_RECENCY) gives the pages and totals of joining `sessions` itself, bounded
    or not, with the filters; a stale row would change them (negative control)."""
    import random

    from segue.search import index as I

    rng = random.Random(5)
    words = ["test", "cargo", "build", "the", "parser"]
    kinds = ["request", "message", "command", "edit"]
    state = StateDir(tmp_path / "s")
    idx = SearchIndex(state.private(state.cache))
    plan = {f"s{i:03d}": (rng.uniform(-30.0, 300.0), [(rng.choice(kinds), " ".join(
        rng.choice(words) if rng.random() < 0.4 else f"w{rng.randint(0, 99)}" for _ in range(rng.randint(1, 20))))
        for _ in range(rng.randint(1, 8))]) for i in range(200)}

    def steps(s: Session, _st: Any) -> Any:
        for kind, text in plan[s.id][1]:
            yield Step(kind=kind, text=text, exit_code=0 if kind == "command" else None)

    def listed(ids: list[str], shift: float) -> list[Session]:
        return [Session(runtime="claude" if i % 2 else "codex", id=sid, store_path=str(tmp_path / sid),
                        updated_at=None if i % 37 == 0 else NOW - (plan[sid][0] + (shift if i % 3 == 0 else 0)) * DAY)
                for i, sid in enumerate(ids)]

    ids = sorted(plan)
    con = idx.connection()
    for sessions in (listed(ids[:150], 0.0), listed(ids[20:], 40.0)):  # then 20 gone, 50 new, a third moved
        with idx.write_lock():
            idx.refresh(sessions, steps, lambda t, cap: t[:cap], {})
        assert (con.execute("SELECT sid, updated_at FROM recency ORDER BY sid").fetchall()
                == con.execute("SELECT sid, updated_at FROM sessions ORDER BY sid").fetchall())
    monkeypatch.setattr(I, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(I, "PRUNE_SAMPLE_ROWS", 30)

    def pages() -> list[Any]:
        out = []
        for text in ["test", "the", "cargo build", "w1*"]:
            for where in (None, ("command",)):
                for since in (None, NOW - 100 * DAY):
                    for limit in (3, 20, None):
                        res = engine.answer(idx, Q.parse(text), where, None, None, since, limit, lambda: None, "")
                        out.append(([(r.id, r.step, r.snippet) for r in res.results], res.total))
        return out

    got = []
    for switch in ("1", "0"):
        monkeypatch.setenv("SEGUE_SEARCH_RECENCY", switch)
        got.append(pages())
    assert got[0] == got[1]
    monkeypatch.delenv("SEGUE_SEARCH_RECENCY")
    con.execute("UPDATE recency SET updated_at = ? WHERE sid % 5 = 0", (NOW + 400 * DAY,))  # stale on purpose
    assert pages() != got[1]


def test_a_directory_filter_in_sqlite_gives_the_pages_of_filtering_every_match(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`--dir` as `s.cwd IN (directories cwd_within keeps)` (SEGUE_SEARCH_DIR_SQL) ranks only the sessions kept:
    same pages and totals as ranking every match and filtering in Python, bounded or not, with the other filters,
    symlinks and look-alike prefixes included; and it really filters (negative control)."""
    import random

    from segue.search import index as I

    real = tmp_path / "real" / "proj"
    real.mkdir(parents=True)
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "link").symlink_to(real)  # a session in src/link lies within real/proj through the link
    base = str(tmp_path / "src")
    cwds = [None, "", base, f"{base}/a", f"{base}/a/b", f"{base}x", f"{base}x/a", str(real), "/elsewhere",
            f"{base}/link", str(tmp_path)]
    rng = random.Random(5)
    words = ["test", "cargo", "build", "the", "parser"]
    state = StateDir(tmp_path / "s")
    idx = SearchIndex(state.private(state.cache))

    def cwd_of(i: int) -> str | None:  # many distinct directories: most sessions have one of their own
        c = rng.choice(cwds)
        return f"{c}/p{i}" if c and rng.random() < 0.6 else c

    plan = {f"s{i:03d}": (rng.uniform(0.0, 300.0), cwd_of(i), [(rng.choice(["request", "command"]), " ".join(
        rng.choice(words) if rng.random() < 0.4 else f"w{rng.randint(0, 99)}" for _ in range(rng.randint(1, 20))))
        for _ in range(rng.randint(1, 6))]) for i in range(200)}
    listed = [Session(runtime=rng.choice(["claude", "codex"]), id=sid, store_path=str(tmp_path / sid),
                      updated_at=NOW - age * DAY, cwd=cwd) for sid, (age, cwd, _steps) in plan.items()]

    def steps(s: Session, _st: Any) -> Any:
        for kind, text in plan[s.id][2]:
            yield Step(kind=kind, text=text, exit_code=0 if kind == "command" else None)

    with idx.write_lock():
        idx.refresh(listed, steps, lambda t, cap: t[:cap], {})
    monkeypatch.setattr(I, "PRUNE_MIN_ROWS", 1)
    monkeypatch.setattr(I, "PRUNE_SAMPLE_ROWS", 30)
    passed: list[int] = []
    real_within = I.SearchIndex._within_cwds

    def spy(con: Any, within: Any, match: str) -> Any:
        got = real_within(con, within, match)
        passed.append(-1 if got is None else len(got))
        return got

    monkeypatch.setattr(I.SearchIndex, "_within_cwds", staticmethod(spy))
    statements: list[str] = []
    idx.connection().set_trace_callback(statements.append)
    for text in ["test", "the", "cargo build", '"the parser"', "w1*"]:
        parsed = Q.parse(text)
        for directory in (base, base + "/", f"{base}/a", str(real), "/nowhere", str(tmp_path)):
            for kw in ({}, {"since": NOW - 100 * DAY}, {"runtimes": ["codex"]}, {"where": ("command",)}):
                for limit in (3, 20, None):
                    got = []
                    for switch in ("1", "0"):
                        monkeypatch.setenv("SEGUE_SEARCH_DIR_SQL", switch)
                        res = engine.answer(idx, parsed, kw.get("where"), kw.get("runtimes"), directory,
                                            kw.get("since"), limit, lambda: None, "")
                        got.append(([(r.id, r.step, r.where, r.snippet, r.cwd) for r in res.results], res.total))
                    assert got[0] == got[1], (text, directory, kw, limit)
    assert passed and min(passed) >= 0  # the SQL filter was used, never the fallback
    idx.connection().set_trace_callback(None)
    assert any("DISTINCT s.cwd FROM docs" in q for q in statements)  # the directories of the matching sessions
    assert any("DISTINCT cwd FROM sessions" in q for q in statements)  # and of every session (many matches)
    monkeypatch.delenv("SEGUE_SEARCH_DIR_SQL")
    every = engine.answer(idx, Q.parse("test"), None, None, None, None, None, lambda: None, "")
    within = engine.answer(idx, Q.parse("test"), None, None, base, None, None, lambda: None, "")
    shown = {r.cwd for r in within.results}
    assert 0 < within.total < every.total  # the filter drops sessions elsewhere
    assert all((c and c.startswith(f"{base}/")) or c == base for c in shown) and f"{base}/a/b" in shown
    linked = {r.cwd for r in engine.answer(idx, Q.parse("test"), None, None, str(real), None, None, lambda: None,
                                           "").results}
    assert {str(real), f"{base}/link"} <= linked  # through the symlink
    assert all(c and (c.startswith(f"{base}/link") or c.startswith(str(real))) for c in linked)
    monkeypatch.setattr(I, "CWDS_MAX", 2)  # too many directories to pass: filtered in Python, the same page
    again = engine.answer(idx, Q.parse("test"), None, None, base, None, None, lambda: None, "")
    assert passed[-1] == -1 and [(r.id, r.step) for r in again.results] == [(r.id, r.step) for r in within.results]


def test_python_s_best_step_per_session_is_sqlite_s_sort(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """index._best_steps (one pass, each session's best step, sessions ranked in Python) gives exactly what SQLite's
    ORDER BY of every step gives, keeping each session's first (SEGUE_SEARCH_GROUP=0): ties of score inside a
    session (repeated texts), of key between sessions (copies of one session, of one age), sessions without a time."""
    import random

    from segue.search import index as I

    rng = random.Random(11)
    words = ["test", "cargo", "build", "the", "fix"]
    sessions = []
    for i in range(160):
        texts = [" ".join(rng.choice(words) if rng.random() < 0.4 else f"w{rng.randint(0, 50)}"
                          for _ in range(rng.choice([1, 2, 5, 20]))) for _ in range(rng.randint(1, 5))]
        texts += texts[: rng.randint(0, 2)]  # the same step again: equal bm25 in one session
        age = rng.choice([0.0, 1.0, 30.0, -5.0]) if i % 4 == 0 else rng.uniform(0.0, 300.0)
        sessions.append((f"s{i:03d}", age, texts))
        if i % 7 == 0:
            sessions.append((f"c{i:03d}", age, list(texts)))  # a copy: the same key, the sid decides
    idx = build(tmp_path, sessions)
    con = idx.connection()
    con.execute("UPDATE sessions SET updated_at = NULL WHERE id LIKE 's01%'")
    I._math(con)
    src = "FROM docs CROSS JOIN sessions s ON s.sid = docs.rowid >> 24 WHERE docs MATCH ?"
    inner = f"SELECT docs.rowid AS rid, bm25(docs) AS score, s.updated_at AS u {src}"
    hl = engine.HALF_LIFE_DAYS
    differs = {"first in rowid order": False, "last on a tie": False}
    for text in ("test", "the", "cargo", "fix build", "w1*", "test the"):
        match = Q.parse(text).fts()
        order = con.execute(f"WITH d AS MATERIALIZED ({inner}) SELECT rid, score, {I._KEY} FROM d ORDER BY {I._KEY}, "
                            "-coalesce(u, 0.0), rid >> 24, score, rid", [match, NOW, hl, NOW, hl]).fetchall()
        firsts: dict[int, tuple[int, int, float, float]] = {}
        for rid, score, k in order:
            firsts.setdefault(rid >> 24, (rid >> 24, rid, score, k))
        want = list(firsts.values())
        rows = con.execute(inner, [match]).fetchall()
        for limit in (1, 2, 5, 20, None):
            got, total = I._best_steps(rows, NOW, hl, limit)
            assert got == want[:limit], (text, limit)
            assert total == len(want), text
            got, total = I._best_steps(reversed(rows), NOW, hl, limit)  # any order of the steps
            assert got == want[:limit] and total == len(want), (text, limit)
        none_scored = [(rid, None if rid % 3 == 0 else score, u) for rid, score, u in rows]
        assert I._best_steps(none_scored, NOW, hl, None)[1] == len(want)  # counted, never ranked
        # negative controls: what a careless pass would give differs on these rows
        seen: dict[int, tuple[int, float]] = {}
        for rid, score, _u in rows:
            seen.setdefault(rid >> 24, (rid, score))
        differs["first in rowid order"] |= any(seen[s][0] != r for s, r, _sc, _k in want)
        last: dict[int, tuple[int, float]] = {}
        for rid, score, _u in rows:
            if rid >> 24 not in last or score <= last[rid >> 24][1]:
                last[rid >> 24] = (rid, score)
        differs["last on a tie"] |= any(last[s][0] != r for s, r, _sc, _k in want)
    assert all(differs.values()), differs
    # and through ranked(): the same pages with the Python pass on and off (the bound used, filtered or not)
    monkeypatch.setattr(I, "PRUNE_MIN_ROWS", 1)
    grouped: list[bool] = []
    real = I._best_steps
    monkeypatch.setattr(I, "_best_steps", lambda *a, **k: grouped.append(True) or real(*a, **k))
    for text in ("test", "the", "cargo"):
        for limit in (1, 3, 10):
            for kw in ({}, {"where": ["request"]}):
                pages = []
                for switch in ("1", "0"):
                    monkeypatch.setenv("SEGUE_SEARCH_GROUP", switch)
                    page, total = idx.ranked(Q.parse(text).fts(), NOW, hl, limit=limit,
                                             phrases=[t.fts() for t in Q.parse(text).terms], **kw)
                    pages.append(([(h.sid, h.rowid, h.score) for h in page], total))
                assert pages[0] == pages[1], (text, limit, kw)
    assert grouped  # the Python pass was used (and only with the switch on)
    n = len(grouped)
    monkeypatch.setenv("SEGUE_SEARCH_GROUP", "0")
    idx.ranked(Q.parse("test").fts(), NOW, hl, limit=3, phrases=['"test"'])
    assert len(grouped) == n
