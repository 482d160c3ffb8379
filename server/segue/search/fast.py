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

from segue.search import alongside, probe
from segue.search import query as Q
from segue.search import redaction as R
from segue.search.engine import MAX_LIMIT, SearchResults, answer
from segue.search.index import FILE_NAME, SearchIndex

TYPE_CHECKING = False  # not typing's, nor pathlib (~4 ms of a CLI query): paths here are str
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

# From how many matching steps a query's ranking costs about what a fork saves (a 1,000-step query ranks in
# ~5-10 ms on the 8,000-session corpus; the fork and the child's exit cost ~2-5 ms of wall)
ALONGSIDE_MIN_STEPS = 500


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
        home = path_str(os.path.expanduser("~"))
        blob = idx.probe_blob()
        if blob is None:
            return None
        if runtimes and not all(idx.has_runtime(r) for r in runtimes):
            return None  # only the registry (the full path) says whether an id names a runtime at all
        digest = R.reader_digest(idx.meta("redact_env"), idx.meta("salt"), environ)

        def fresh() -> bool:
            return probe.fresh(blob, home, environ)

        wait = alongside.start(fresh) if _long_query(idx, parsed.fts()) else None
        if wait is None:
            if not fresh():
                return None
            return answer(idx, parsed, where, runtimes, directory, since, limit, _redactor, digest)
        try:  # the query beside the check: its answer is kept only if the index proves fresh
            res = answer(idx, parsed, where, runtimes, directory, since, limit, _redactor, digest)
        finally:
            ok = wait()
        return res if ok else None
    except sqlite3.Error:
        return None
    finally:
        idx.close()


def _long_query(idx: SearchIndex, match: str) -> bool:
    """Does the query match enough steps for its ranking to take about as long as the freshness check (then the
    two run side by side: segue.search.alongside)? Counted only up to that many."""
    if not alongside.enabled():
        return False
    row = idx.connection().execute("SELECT count(*) FROM (SELECT 1 FROM docs WHERE docs MATCH ? LIMIT ?)",
                                   (match, ALONGSIDE_MIN_STEPS)).fetchone()
    return row is not None and row[0] >= ALONGSIDE_MIN_STEPS


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
