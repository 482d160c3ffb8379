"""Full-text search over every session: what was asked, said, run and changed (see `index` and `query`)."""

from __future__ import annotations

from segue.search.index import SearchUnavailable
from segue.search.query import QueryError

TYPE_CHECKING = False  # not typing's: a CLI query imports this package
if TYPE_CHECKING:
    from typing import Any

__all__ = ["Cancelled", "QueryError", "SearchUnavailable"]


def __getattr__(name: str) -> Any:
    if name == "Cancelled":  # the listing's: imported only when asked for (the query path never needs it)
        from segue.listing import Cancelled

        return Cancelled
    raise AttributeError(name)
