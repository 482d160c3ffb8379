"""What a person types into `segue search`, turned into an FTS5 query that can only mean "these words".

Words match as words in any order (all of them, anywhere in one step of a session); `"quoted phrases"` as
phrases; a word ending in `*` as a prefix. Everything else is text: FTS5 operators (AND, OR, NOT, NEAR,
`-`, `^`, `:`, parentheses) are never passed through, because every term goes to SQLite as a quoted string,
which FTS5 only tokenizes. Unbalanced quotes open a phrase that runs to the end; control characters and
invalid UTF-8 count as spaces; a query with nothing to search for, or too long to mean anything, is a usage
error (`QueryError`), never a traceback.
"""

from __future__ import annotations

import re

from segue.errors import InvalidArgument
from segue.record import record

MAX_QUERY = 1000  # characters: longer is not a search phrase but a pasted document
MAX_TERMS = 32

WHERE: tuple[str, ...] = ("request", "message", "command", "file")
_WHERE_ALIASES = {"requests": "request", "request": "request", "messages": "message", "message": "message",
                  "commands": "command", "command": "command", "files": "file", "file": "file"}

_TERM_RE = re.compile(r'"([^"]*)"?|([^\s"]+)')
# Code points that cannot be part of a word: C0/C1 controls, lone surrogates (invalid UTF-8 in argv arrives as
# surrogate escapes), and the replacement character.
_JUNK_RE = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffd]")
_JUNK_SURROGATE_RE = re.compile("[\ud800-\udfff]")


class QueryError(InvalidArgument, ValueError):
    """The query cannot be searched; the message says why (CLI exit 2, JSON-RPC -32602)."""


@record(frozen=True)
class Term:
    text: str
    phrase: bool = False  # typed in quotes
    prefix: bool = False  # typed with a trailing `*`

    def fts(self) -> str:
        quoted = '"' + self.text.replace('"', '""') + '"'
        return quoted + " *" if self.prefix else quoted


@record(frozen=True)
class Query:
    terms: tuple[Term, ...]

    def fts(self) -> str:
        """The MATCH expression: every term must occur (implicit AND)."""
        return " ".join(t.fts() for t in self.terms)

    def words(self) -> list[str]:
        return [t.text for t in self.terms]


def _has_word(s: str) -> bool:
    # unicode61 keeps letters, digits and private-use characters; everything else separates tokens
    return any(ch.isalnum() or 0xE000 <= ord(ch) <= 0xF8FF for ch in s)


def parse(text: str) -> Query:
    if not isinstance(text, str):
        raise QueryError("the query must be text")
    if len(text) > MAX_QUERY:
        raise QueryError(f"the query is {len(text)} characters long; at most {MAX_QUERY} are searched "
                         "(search for a phrase from the session, not the whole text)")
    from segue.quote import clean

    # the indexed text went through clean() (no terminal escapes or control characters): so does the query
    cleaned = _JUNK_RE.sub(" ", clean(_JUNK_SURROGATE_RE.sub(" ", text)))
    terms: list[Term] = []
    for m in _TERM_RE.finditer(cleaned):
        quoted, word = m.group(1), m.group(2)
        if quoted is not None:
            phrase = " ".join(quoted.split())
            if _has_word(phrase):
                terms.append(Term(phrase, phrase=True))
            continue
        prefix = word.endswith("*")
        core = word.rstrip("*")
        if _has_word(core):
            # a prefix applies to the last token of the word only when that token is at the very end
            terms.append(Term(core, prefix=prefix and core[-1:].isalnum()))
    if not terms:
        raise QueryError("nothing to search for: the query holds no letters or digits")
    if len(terms) > MAX_TERMS:
        raise QueryError(f"the query has {len(terms)} words; at most {MAX_TERMS} are searched")
    return Query(tuple(dict.fromkeys(terms)))


def parse_where(values: list[str] | None) -> tuple[str, ...] | None:
    """`--in requests|messages|commands|files` (repeatable; singular forms accepted) -> step kinds."""
    if not values:
        return None
    out: list[str] = []
    for v in values:
        for part in v.split(","):
            key = _WHERE_ALIASES.get(part.strip().lower())
            if key is None:
                raise QueryError(f"--in {part.strip()!r}: choose from requests, messages, commands, files")
            if key not in out:
                out.append(key)
    return tuple(out)


_RELATIVE_RE = re.compile(r"(\d{1,6})\s*([smhdw])")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(value: str | None, now: float) -> float | None:
    """`--since`: an ISO 8601 date or time (UTC unless it says otherwise), or an age such as 90m, 12h, 7d, 2w."""
    if value is None:
        return None
    v = value.strip().lower()
    m = _RELATIVE_RE.fullmatch(v)
    if m:
        return now - int(m.group(1)) * _UNIT[m.group(2)]
    from segue.timefmt import parse_time

    t = parse_time(value.strip()) if value.strip() and not value.strip().isdigit() else None
    if t is None:
        raise QueryError(f"--since {value!r}: give a date such as 2026-11-30, a time such as 2026-11-30T14:00Z, "
                         "or an age such as 12h or 7d")
    return t
