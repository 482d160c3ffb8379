"""Request limits: each default and bound is written here once. `Service` enforces them; the CLI builds its
options from them and the language server's params carry the same defaults (a test checks they agree).

Out of range is a usage error on both surfaces (CLI exit 2, JSON-RPC -32602): nothing is silently clamped.
"""

from __future__ import annotations

from segue.errors import InvalidArgument
from segue.record import record


@record(frozen=True)
class Bound:
    """The values a count accepts."""

    name: str  # the parameter as both surfaces spell it (`--tail` / `params.tail`)
    low: int
    high: int | None = None  # None: no upper bound

    def allows(self, value: int) -> bool:
        return self.low <= value and (self.high is None or value <= self.high)

    def describe(self) -> str:
        if self.high is None:
            return "a positive number" if self.low == 1 else f"a number of at least {self.low}"
        return f"between {self.low} and {self.high}"

    def check(self, value: int) -> int:
        """The value when allowed, else InvalidArgument (a usage error)."""
        if isinstance(value, bool) or not isinstance(value, int) or not self.allows(value):
            raise InvalidArgument(f"{self.name} must be {self.describe()}", data={"field": self.name})
        return value


@record(frozen=True)
class Param(Bound):
    """A count with the default both surfaces use when it is not given."""

    default: int = 0


CLAIM_TAIL = Param("tail", low=0, high=200, default=20)  # steps of recent activity a claim shows
SEARCH_LIMIT = Param("limit", low=1, high=1000, default=20)  # sessions a search returns
PAGE_LIMIT = Bound("limit", low=1)  # top-level sessions per listing page; not given (None) = all
PAGE_OFFSET = Param("offset", low=0, default=0)
