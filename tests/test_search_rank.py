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
