"""Worker processes for a large search-index build: every core reads and redacts sessions, the one writer (the
process holding `search.lock`) only writes what they send back.

Each worker is `python -m segue.search.workers`, a fresh interpreter of this Segue (never a fork: the language
server has threads, and `python -m segue` has no `__main__` guard multiprocessing could use). It gets the
readers' `Env` and the environment the Redactor takes its exact values from, then sessions in batches of
BATCH: a list of `(pos, Session, stored hashes)` in, lists of `(pos, Prepared)` out (segue.search.build: the
same computation the serial build streams into SQLite). Batched because every message costs both processes a
wake-up, a pickle and a few system calls: one per session was most of the writer's time outside SQLite.
Messages are length-prefixed pickles between this process and its own child over pipes; nothing else reads or
writes them.

At most `IN_FLIGHT` sessions wait per worker, and at most BACKLOG answers (BACKLOG_CHARS of text) wait for the
writer, so memory stays bounded by the sessions being worked on (a worker sends what it has answered once that
holds ANSWER_CHARS of text, without waiting for the rest of its batch). A worker is fed from the thread that
reads its answers, so the writer's own work never leaves it idle. A
worker that fails on a session answers None for it, a worker that dies answers None for what it held, and the
writer indexes those sessions itself, serially: the result never depends on a worker having worked.

SEGUE_SEARCH_WORKERS=N sets how many (default: the cores this process may use, at most MAX_WORKERS); 0 or 1 is
the serial build.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any

MAX_WORKERS = 4
BATCH = 8  # sessions per message to a worker
IN_FLIGHT = 4 * BATCH  # sessions a worker holds at most: the next batches are there when it finishes one
ANSWER_CHARS = 1_000_000  # a worker's answers are sent once they hold this much text, even mid-batch
BACKLOG = 32 * BATCH  # answers the caller has not taken yet, at most (then the workers wait for it)
BACKLOG_CHARS = 8_000_000  # and the text they hold
_LEN = struct.Struct("<Q")

# (position, Session, stored hashes, the mark its read may go on from or None); sent BATCH to a message
Task = tuple[int, Any, bytes, bytes | None]
PEAKS_MB: list[float] = []  # each finished worker's peak memory (Linux), for the benchmark
CPU_S: list[float] = []  # each finished worker's CPU seconds, user + system (Linux), for the benchmark


def count(environ: Mapping[str, str] | None = None) -> int:
    env = os.environ if environ is None else environ
    value = env.get("SEGUE_SEARCH_WORKERS", "").strip()
    if value:
        try:
            return max(0, min(int(value), 64))
        except ValueError:
            return 0
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        cores = os.cpu_count() or 1
    return min(cores, MAX_WORKERS)


def _send(f: IO[bytes], obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    f.write(_LEN.pack(len(data)) + data)
    f.flush()


def _recv(f: IO[bytes]) -> Any:
    head = f.read(_LEN.size)
    if len(head) < _LEN.size:
        raise EOFError
    n = _LEN.unpack(head)[0]
    data = f.read(n)
    if len(data) < n:
        raise EOFError
    return pickle.loads(data)  # our own child's answer over our own pipe: trusted


class _Worker:
    """A worker process, started (and sent its init) at once; `attach` starts reading its answers."""

    def __init__(self, wid: int, init: Any) -> None:
        import segue

        env = dict(os.environ)
        root = str(Path(segue.__file__).resolve().parent.parent)
        env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        self.wid = wid
        self.init = init
        self.held: set[int] = set()
        self.alive = True
        self.proc = subprocess.Popen([sys.executable, "-m", "segue.search.workers"], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=env, close_fds=True)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.stdout = self.proc.stdin, self.proc.stdout
        with contextlib.suppress(OSError, ValueError):  # died at once: its reader meets the end, reports it
            _send(self.stdin, init)

    def attach(self, on_answers: Callable[[_Worker, list[tuple[int, Any]]], None],
               on_end: Callable[[_Worker], None]) -> None:
        self._thread = threading.Thread(target=self._read, args=(on_answers, on_end), daemon=True)
        self._thread.start()

    def _read(self, on_answers: Callable[[_Worker, list[tuple[int, Any]]], None],
              on_end: Callable[[_Worker], None]) -> None:
        try:
            while True:
                on_answers(self, _recv(self.stdout))  # a list of (pos, Prepared or None)
        except Exception:  # EOF, a broken pipe, an unreadable answer: this worker is done
            on_end(self)

    def send(self, batch: list[Task]) -> bool:
        try:
            _send(self.stdin, batch)
        except (OSError, ValueError):
            return False
        self.held.update(t[0] for t in batch)
        return True

    def peak_mb(self) -> float | None:
        """The worker's own peak memory (VmHWM; its ru_maxrss would include this process's, from the fork)."""
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except (OSError, ValueError, IndexError):
            pass
        return None

    def cpu_s(self) -> float | None:
        """The worker's own CPU time so far (utime + stime of /proc/PID/stat)."""
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None

    def stop(self, kill: bool = False) -> None:
        if not kill:
            peak = self.peak_mb()
            if peak is not None:
                PEAKS_MB.append(peak)
            cpu = self.cpu_s()
            if cpu is not None:
                CPU_S.append(cpu)
        try:
            if kill:
                self.proc.kill()
            self.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=None if not kill else 10)
        except subprocess.TimeoutExpired:  # pragma: no cover
            self.proc.kill()
            self.proc.wait()
        self.stdout.close()


class Pool:
    """Workers started ahead of the build that will use them (`run(..., pool=)`): a first build's discovery
    and listing (~0.1 s on the 8,000-session home) then overlap the workers' own start (an interpreter and
    the readers' imports, ~0.1 s). `close` stops those no build took; a pool is used once."""

    def __init__(self, n: int, env: Any, environ: Mapping[str, str], cache_dir: str | None = None) -> None:
        self.init = (env, dict(environ), cache_dir)
        self.workers: list[_Worker] = []
        for wid in range(n):
            try:
                self.workers.append(_Worker(wid, self.init))
            except OSError:
                break

    def take(self, init: Any, n: int) -> list[_Worker]:
        """Up to n of the started workers, when they were started for this `init`; the others are stopped."""
        taken = self.workers[:n] if init == self.init else []
        self.workers = self.workers[len(taken):]
        self.close()
        return taken

    def close(self) -> None:
        workers, self.workers = self.workers, []
        for w in workers:
            w.stop(kill=True)

    def __enter__(self) -> Pool:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def _chars(prepared: Any) -> int:
    if prepared is None:
        return 0
    n = prepared.chars  # counted once, by `build.prepare` (each answer is weighed twice here, and written)
    return n if n is not None else sum(len(r[1]) for r in prepared.rows)


_DEAD = object()  # a worker's end, in the results queue
_FAILED = object()  # `tasks` raised (the error is in `failed`): wakes the caller


def run(tasks: Iterable[Task], env: Any, environ: Mapping[str, str], n: int, cache_dir: str | None = None,
        pool: Pool | None = None) -> Iterator[tuple[int, Any]]:
    """(pos, Prepared) for every task, in the order they finish; (pos, None) for a session no worker could
    do (the caller indexes it itself). Closing the iterator early stops the workers at once. `cache_dir`:
    Segue's private cache, whose kept redaction patterns (segue.recache) the workers load instead of
    compiling them each (~30 ms apiece). `pool`: workers started ahead for these arguments (`Pool`), taken
    first; the rest are started here.

    `tasks` is drawn from the workers' reader threads as well as from this one (under a lock), so it must not
    touch anything this thread uses meanwhile (the caller's SQLite connection). A worker gets its next batch as
    soon as its answers arrive, not once the caller has written them: the caller's writing (FTS5 inserts) would
    otherwise leave the workers waiting. The answers not yet taken are bounded by BACKLOG sessions and
    BACKLOG_CHARS of text; past that, the workers wait for the caller."""
    results: queue.Queue[tuple[_Worker | None, Any, Any]] = queue.Queue()
    init = (env, dict(environ), cache_dir)
    workers: list[_Worker] = []
    lock = threading.Lock()
    pending = iter(tasks)
    exhausted = False
    backlog = 0  # answers in `results`, not yet taken
    backlog_chars = 0
    failed: list[BaseException] = []

    def feed(w: _Worker) -> None:  # under `lock`
        nonlocal exhausted, backlog
        while (w.alive and not exhausted and len(w.held) + BATCH <= IN_FLIGHT and backlog < BACKLOG
               and backlog_chars < BACKLOG_CHARS):
            try:
                batch = list(itertools.islice(pending, BATCH))
            except BaseException as e:  # `tasks` failed, maybe in a reader thread: the caller's error
                exhausted = True
                failed.append(e)
                results.put((None, _FAILED, None))
                return
            if len(batch) < BATCH:
                exhausted = True
            if not batch:
                return
            if not w.send(batch):
                w.alive = False
                for task in batch:  # never sent: the caller does them
                    backlog += 1
                    results.put((None, task[0], None))
                return

    def on_answers(w: _Worker, answers: list[tuple[int, Any]]) -> None:
        nonlocal backlog, backlog_chars
        with lock:
            for pos, prepared in answers:
                w.held.discard(pos)
                backlog += 1
                backlog_chars += _chars(prepared)
                results.put((w, pos, prepared))
            feed(w)

    def on_end(w: _Worker) -> None:
        results.put((w, _DEAD, None))

    try:
        workers.extend(pool.take(init, n) if pool is not None else ())
        for wid in range(len(workers), n):
            try:
                workers.append(_Worker(wid, init))
            except OSError:
                break
        for w in workers:
            w.attach(on_answers, on_end)
        with lock:
            for w in workers:
                feed(w)
        while True:
            if failed:
                raise failed[0]
            with lock:
                if not backlog and not any(w.held for w in workers):
                    if exhausted or not any(w.alive for w in workers):
                        break
                    for w in workers:
                        feed(w)
                    continue
            w_, pos, prepared = results.get()
            if pos is _FAILED:
                continue
            if pos is _DEAD:  # the worker died: what it still held is done serially
                assert w_ is not None
                with lock:
                    w_.alive = False
                    lost = sorted(w_.held)
                    w_.held.clear()
                    for other in workers:
                        feed(other)
                for p in lost:
                    yield p, None
                continue
            with lock:
                backlog -= 1
                backlog_chars -= _chars(prepared)
                for w in workers:
                    feed(w)
            yield pos, prepared
        for task in pending:  # no worker left
            yield task[0], None
    finally:
        with lock:
            done = all(not w.held for w in workers)
            exhausted = True  # no reader thread sends more
        for w in workers:
            w.stop(kill=not done)


def _worker_main() -> int:
    """The child: read the init message, then answer tasks until stdin closes."""
    out = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)  # anything printed by accident goes to stderr, not into the answers
    inp = sys.stdin.buffer
    env, environ, cache_dir = _recv(inp)
    if cache_dir:
        from segue import recache

        recache.use(cache_dir)

    from segue.redact import Redactor
    from segue.search.build import Distinct, distinct_enabled
    from segue.stores.opencode import shared_connections

    redactor = Redactor(environ=environ)
    distinct = Distinct(redactor) if distinct_enabled() else None
    tasks: queue.Queue[list[Task] | None] = queue.Queue()

    def read_tasks() -> None:  # always drained, so the writer never blocks on a full pipe while we answer
        try:
            while True:
                tasks.put(_recv(inp))
        except Exception:
            tasks.put(None)

    threading.Thread(target=read_tasks, daemon=True).start()
    with shared_connections():
        while True:
            batch = tasks.get()
            if batch is None:
                break
            answers: list[tuple[int, Any]] = []
            chars = 0
            for pos, s, old, mark in batch:
                result = _one(s, old, mark, env, redactor, distinct)
                answers.append((pos, result))
                chars += _chars(result)
                if chars >= ANSWER_CHARS:  # a few big sessions: sent now, not held for the rest of the batch
                    _send(out, answers)
                    answers, chars = [], 0
            if answers:
                _send(out, answers)
    if cache_dir:
        recache.save()  # what this worker compiled that was not kept yet (merged with the others' saves)
    out.close()
    return 0


def _one(s: Any, old: bytes, mark: bytes | None, env: Any, redactor: Any, distinct: Any) -> Any:
    """One session's Prepared, or None when it failed (the writer does it itself and meets the error there).
    `mark`: where its read may go on from (index._index_session's conditions hold); read from the start
    when the mark is not taken, or when what was read on from it taught the redaction a value."""
    from segue.model import ReadStats
    from segue.search import engine
    from segue.search.build import NeedsWholeRead, prepare

    def prepared(steps: Any) -> Any:
        # one memory of found values per session, as the serial build has
        if distinct is not None:  # each distinct text redacted once (build.Distinct: the same result)
            one = distinct.session()
            return prepare(s, old, steps, one.redact, text_of=one.text_of, memory=one.memory)
        scoped = redactor.scoped()

        def redact(text: str, cap: int) -> str:
            return scoped.excerpt(text, cap)[0]

        return prepare(s, old, steps, redact, memory=scoped)

    try:
        try:
            return prepared(engine._steps(env, s, ReadStats(), mark, len(old) // 8))
        except NeedsWholeRead:
            return prepared(engine._steps(env, s, ReadStats()))
    except Exception:
        return None


if __name__ == "__main__":
    raise SystemExit(_worker_main())
