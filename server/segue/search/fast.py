"""The CLI's quick answer: query the index as it is when nothing discovery would see has changed.

A whole `segue search` process on a warm index should cost the query, not a pass of every reader over its
stores. The last full freshness check (engine.ensure_fresh) recorded what discovery looked at
(segue.search.probe); when every observation still holds, the index is exactly as fresh as that check found
it, and the answer comes from the index without importing the service, the listing or a reader. Anything
else (no index, another version, a probe that no longer matches, a different environment) returns None and
the caller takes the full path, which catches up and records a new probe.
"""

from __future__ import annotations

import os
import sqlite3
import stat

from segue import alongside
from segue.search import probe
from segue.search import query as Q
from segue.search import redaction as R
from segue.search.engine import MAX_LIMIT, SearchResults, answer
from segue.search.index import FILE_NAME, SearchIndex

TYPE_CHECKING = False  # not typing's, nor pathlib (~4 ms of a CLI query): paths here are str
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from pathlib import Path

# The cost model that shares the freshness check with a child (measured on 8,000 and 32,000 sessions, CLI):
# a stat and its signature ~4 µs, a matching step ranked ~2 µs beside a fixed ~3 ms, a fork and its exit ~1.5 ms.
# Below SPLIT_MIN_PATHS stat'ed paths the check is too short to share.
STAT_MS = 0.004
QUERY_MS_PER_ROW = 0.002
QUERY_MS_FIXED = 3.0
QUERY_ROWS_MAX = 20_000
FORK_MS = 1.5
SPLIT_MIN_PATHS = 1000


def try_answer(state_root: Path | str, text: str, runtimes: Sequence[str] | None = None, directory: str | None = None,
               since: float | None = None, where: Sequence[str] | None = None, limit: int | None = 20
               ) -> SearchResults | None:
    """Results from a fresh index, or None (then ask the service). Raises QueryError as the service would."""
    parsed = Q.parse(text)
    if where is not None:
        where = Q.parse_where(list(where))
    if limit is not None and not 0 < limit <= MAX_LIMIT:
        raise Q.QueryError(f"the limit must be between 1 and {MAX_LIMIT}")
    cache = os.path.join(state_root, "cache")
    if not (_private(state_root) and _private(cache) and os.path.isfile(os.path.join(cache, FILE_NAME))):
        return None  # the service checks (and explains) the state directory
    idx = SearchIndex(cache)
    try:
        if idx.existing() is None:
            return None
        environ = dict(os.environ)  # what Env.from_os() gives the readers, and Redactor() the redaction
        blob = idx.probe_blob()
        if blob is None or probe.known_stale(blob):
            return None
        replay = probe.Replay.load(blob, path_str(os.path.expanduser("~")), environ)
        if replay is None:
            return None
        if runtimes and not all(idx.has_runtime(r) for r in runtimes):
            return None  # only the registry (the full path) says whether an id names a runtime at all
        digest = R.reader_digest(idx.meta("redact_env"), idx.meta("salt"), environ)
        # the freshness check and the query side by side: a forked child replays some of the stats meanwhile;
        # an answer is kept only if every observation proved the index fresh
        child = _child_share(len(replay.paths), lambda: _query_ms(idx, parsed.fts()))
        res = replay.when_fresh(
            child, lambda: answer(idx, parsed, where, runtimes, directory, since, limit, _redactor, digest))
        if res is None:  # (an answer is never None: an observation differed)
            probe.mark_stale(blob)
        return res
    except sqlite3.Error:
        return None
    finally:
        idx.close()


def _query_ms(idx: SearchIndex, match: str) -> float:
    """About what ranking this query costs here, from how many steps it matches (counted up to QUERY_ROWS_MAX)."""
    row = idx.connection().execute("SELECT count(*) FROM (SELECT 1 FROM docs WHERE docs MATCH ? LIMIT ?)",
                                   (match, QUERY_ROWS_MAX)).fetchone()
    return QUERY_MS_FIXED + (row[0] if row else 0) * QUERY_MS_PER_ROW


def _child_share(paths: int, estimate: Callable[[], float]) -> int:
    """How many of the probe's slices a child should replay so that both processes finish about together:
    this one has the query (`estimate()` ms, asked only when a child could help) and its own slices, the child
    the rest and the fork. 0: no child."""
    if not alongside.enabled() or paths < SPLIT_MIN_PATHS:
        return 0
    query_ms = estimate()
    per = paths * STAT_MS / probe.CHUNKS
    best, share = query_ms + probe.CHUNKS * per, 0
    for k in range(1, probe.CHUNKS + 1):
        wall = max(query_ms + (probe.CHUNKS - k) * per, k * per + FORK_MS)
        if wall < best:
            best, share = wall, k
    return share


def path_str(path: str) -> str:
    """str(Path(path)) without importing pathlib for the usual spelling: an absolute path without empty or '.'
    components or a trailing slash is already what Path makes of it (anything else asks pathlib)."""
    if _plain(path):
        return path
    from pathlib import Path

    return str(Path(path))


def _plain(path: str) -> bool:
    if path == "/":
        return True
    return (path.startswith("/") and not path.endswith(("/", "/.")) and "//" not in path and "/./" not in path
            and "\0" not in path)


def _private(path: Path | str) -> bool:
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _redactor() -> object:
    from segue.redact import Redactor

    return Redactor(environ=None)  # as the CLI's Service builds it
