"""How the build's workers are fed (segue.search.workers.run): a worker gets its next batch when its answers
arrive, not when the writer has written them; the answers the writer has not taken yet stay bounded; an error of
the task iterator, drawn from a worker's thread, reaches the writer. On copies of the real runtimes' stores."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from segue.search import workers
from tests.test_search_build import build, two  # noqa: F401  (the fixture)

PAUSE_S = 10.0  # how long the slow writer waits at its first answer, at most


class SlowWriter:
    """Wraps workers.run: at the first answer the writer stops until `enough` sessions were sent to the workers
    (or PAUSE_S passed), counting what was sent meanwhile."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, enough: int | None, settle_s: float = 0.0) -> None:
        self.sent = 0
        self.sent_in_pause: int | None = None
        self.enough = enough
        self.settle_s = settle_s
        self._more = threading.Condition()
        real_send = workers._Worker.send
        real_run = workers.run

        def send(w: Any, batch: Any) -> bool:
            ok = real_send(w, batch)
            with self._more:
                self.sent += len(batch) if ok else 0
                self._more.notify_all()
            return ok

        def run(tasks: Any, env: Any, environ: Any, n: int, cache_dir: str | None = None, **kw: Any) -> Any:
            first = True
            for answer in real_run(tasks, env, environ, n, cache_dir, **kw):
                if first:
                    first = False
                    self._pause()
                yield answer

        monkeypatch.setattr(workers._Worker, "send", send)
        monkeypatch.setattr(workers, "run", run)

    def _pause(self) -> None:
        end = time.monotonic() + PAUSE_S
        with self._more:
            while (self.enough is None or self.sent < self.enough) and time.monotonic() < end:
                if self.enough is None and self.settle_s:
                    before = self.sent
                    self._more.wait(self.settle_s)
                    if self.sent == before:
                        break
                else:
                    self._more.wait(0.05)
            self.sent_in_pause = self.sent


def small_batches(monkeypatch: pytest.MonkeyPatch, backlog: int, backlog_chars: int = 10**9) -> None:
    monkeypatch.setattr(workers, "BATCH", 1)
    monkeypatch.setattr(workers, "IN_FLIGHT", 1)
    monkeypatch.setattr(workers, "BACKLOG", backlog)
    monkeypatch.setattr(workers, "BACKLOG_CHARS", backlog_chars)


def test_the_workers_are_fed_while_the_writer_is_busy(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """With one session held per worker, two workers hold two; while the writer sits on its first answer they
    must still be given more. A writer that feeds only after it has written leaves them at three."""
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    sessions = len(serial["index"]["sessions"])
    assert sessions >= 8
    small_batches(monkeypatch, backlog=10**6)
    slow = SlowWriter(monkeypatch, enough=6)
    assert build(b, env_b, monkeypatch, 2) == serial
    assert slow.sent_in_pause is not None and slow.sent_in_pause >= 6
    assert slow.sent == sessions


@pytest.mark.parametrize("backlog", [2, 10**6])
def test_the_answers_waiting_for_the_writer_are_bounded(two: Any, monkeypatch: pytest.MonkeyPatch,  # noqa: F811
                                                        backlog: int) -> None:
    """BACKLOG answers at most wait for the writer; then the workers wait too (each still finishes what it holds).
    The control: the same pause with a large backlog lets them run on."""
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    sessions = len(serial["index"]["sessions"])
    small_batches(monkeypatch, backlog=backlog)
    slow = SlowWriter(monkeypatch, enough=None, settle_s=1.5)
    assert build(b, env_b, monkeypatch, 2) == serial
    assert slow.sent == sessions and slow.sent_in_pause is not None
    # taken (1) + waiting (BACKLOG, and one more per worker whose answer came as the last one was counted) +
    # held by the two workers (IN_FLIGHT each)
    bound = 1 + 2 + 2 + 2
    if backlog == 2:
        assert slow.sent_in_pause <= bound
    else:
        assert slow.sent_in_pause > bound


def test_the_text_waiting_for_the_writer_is_bounded(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    a, b, env_a, env_b = two
    serial = build(a, env_a, monkeypatch, 0)
    small_batches(monkeypatch, backlog=10**6, backlog_chars=1)
    slow = SlowWriter(monkeypatch, enough=None, settle_s=1.5)
    assert build(b, env_b, monkeypatch, 2) == serial
    # an answer with text waiting stops the feeding (the other test's control runs on to the end)
    assert slow.sent_in_pause is not None and slow.sent_in_pause < len(serial["index"]["sessions"])


def test_an_error_of_the_tasks_reaches_the_writer(two: Any, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: F811
    """The tasks are drawn from the workers' reader threads too: what the iterator raises there is raised to the
    writer (the build fails as it would serially), not taken for a dead worker."""
    _a, b, _env_a, env_b = two
    small_batches(monkeypatch, backlog=10**6)
    real_run = workers.run
    raised: list[BaseException] = []

    def failing(tasks: Any, env: Any, environ: Any, n: int, cache_dir: str | None = None, **kw: Any) -> Any:
        def bad() -> Any:
            for i, t in enumerate(tasks):
                if i == 4:
                    raise RuntimeError("the task list broke")
                yield t

        try:
            yield from real_run(bad(), env, environ, n, cache_dir, **kw)
        except BaseException as e:
            raised.append(e)
            raise

    monkeypatch.setattr(workers, "run", failing)
    with pytest.raises(RuntimeError, match="the task list broke"):
        build(b, env_b, monkeypatch, 2)
    assert [str(e) for e in raised] == ["the task list broke"]
