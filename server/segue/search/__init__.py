"""Full-text search over every session: what was asked, said, run and changed (see `index` and `query`)."""

from __future__ import annotations

from segue.search.index import Cancelled, SearchUnavailable
from segue.search.query import QueryError

__all__ = ["Cancelled", "QueryError", "SearchUnavailable"]
