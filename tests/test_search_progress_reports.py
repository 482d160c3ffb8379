"""What a client sees of the search index's build: one work-done report per percent, not one per session."""

from __future__ import annotations

from segue.lsp.server import per_percent


def test_a_build_of_many_sessions_reports_each_percent_once() -> None:
    sent: list[tuple[str, int]] = []
    indexing = per_percent(lambda msg, pct: sent.append((msg, pct)))
    for n in range(8000):
        indexing(n, 8000)
    indexing(8000, 8000)  # the build's closing call
    assert [pct for _, pct in sent] == list(range(101))
    assert sent[0] == ("indexing sessions for search 0/8000", 0)
    assert sent[-1] == ("indexing sessions for search 8000/8000", 100)


def test_a_small_build_reports_every_session_and_an_empty_one_nothing() -> None:
    sent: list[int] = []
    indexing = per_percent(lambda msg, pct: sent.append(pct))
    for n in range(4):
        indexing(n, 4)
    indexing(4, 4)
    assert sent == [0, 25, 50, 75, 100]
    nothing: list[int] = []
    empty = per_percent(lambda msg, pct: nothing.append(pct))
    empty(0, 0)
    assert nothing == []
