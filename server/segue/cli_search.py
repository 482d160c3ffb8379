"""`segue search`: the terminal side of search (the work is `Service.search`).

Exit 0 with results, 1 when nothing matched (said on stderr) or search cannot run here, 2 on a usage error
(a query with nothing to search for, a bad --since or --in).
"""

from __future__ import annotations

import os
import sys
import time

from segue.quote import clean, mark_invisible

TYPE_CHECKING = False  # not typing's: a quick answer imports neither typing nor the table (segue.model)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable
    from typing import Any

    from segue.service import Service


def _one_line(text: str, width: int) -> str:
    from segue.table import one_line

    return one_line(text, width)


def cmd_search(args: argparse.Namespace, service: Callable[[argparse.Namespace], Service],
               nothing_found: Callable[[Service, Any], str] | None = None) -> int:
    """`nothing_found(service, runtimes)`: where Segue looked, when the stores hold no session (the CLI's)."""
    from segue.search import QueryError, SearchUnavailable
    from segue.search.query import parse_since

    if args.forget:
        if args.query:
            return _usage("--forget takes no query")
        found = service(args).forget_search()
        print("segue: search index deleted" if found else "segue: there was no search index to delete",
              file=sys.stderr)
        return 0
    text = " ".join(args.query)
    if not text.strip():
        return _usage("give something to search for, e.g. segue search \"fix the migration\"")
    now = time.time()
    progress = _Progress() if sys.stderr.isatty() else None
    try:
        since = parse_since(args.since, now)
        res = _quick(args, text, since)  # a fresh index answers without the service (segue.search.fast)
        if res is None:
            res = service(args).search(text, runtimes=args.runtime, directory=args.dir, since=since,
                                       where=args.where, limit=args.limit, progress=progress, notice=_notice)
    except QueryError as e:
        return _usage(str(e))
    except SearchUnavailable as e:
        print(f"segue: {e}", file=sys.stderr)
        return 1
    finally:
        if progress is not None:
            progress.done()
    if nothing_found is not None and not res.results and _no_sessions(args):  # say where Segue looked, as list
        print(nothing_found(service(args), args.runtime), file=sys.stderr)
    return _show(args, res, text, now)


def _no_sessions(args: Any) -> bool:
    """Does the index, just refreshed, hold no session (of the runtimes asked for)? One lookup per runtime."""
    from segue.search.index import SearchIndex

    idx = SearchIndex(os.path.join(state_root(args.home), "cache"))
    try:
        con = idx.existing()
        if con is None:
            return False  # (no index to ask: the service has explained why)
        if args.runtime:
            return not any(idx.has_runtime(r) for r in args.runtime)
        return con.execute("SELECT 1 FROM sessions LIMIT 1").fetchone() is None  # (not the registry's import)
    except Exception:  # a hint only: a damaged index is the next search's to rebuild
        return False
    finally:
        idx.close()


def _every_id(args: Any, results: list[Any]) -> list[str]:
    """The id of every session the index holds (what a reference is resolved among), so the ids shown are
    unambiguous; the results' own when the index cannot say."""
    from segue.search.index import SearchIndex

    idx = SearchIndex(os.path.join(state_root(args.home), "cache"))
    try:
        con = idx.existing()
        if con is not None:  # (only ids that begin as a result's do can lengthen its abbreviation)
            from segue.table import SHORT_ID

            heads = sorted({r.id[:SHORT_ID] for r in results})
            marks = ",".join("?" * len(heads))
            return [row[0] for row in con.execute(
                f"SELECT id FROM sessions WHERE substr(id, 1, {SHORT_ID}) IN ({marks})", heads)]
    except Exception:  # (a hint only: longer ids are still right)
        pass
    finally:
        idx.close()
    return [r.id for r in results]


def _show(args: Any, res: Any, text: str, now: float) -> int:
    from segue.search.engine import MARK_END, MARK_START

    if args.json:
        import json

        indent = 2 if sys.stdout.isatty() else None
        sys.stdout.write(json.dumps(res.to_json(), ensure_ascii=False, indent=indent) + "\n")
    elif res.results:
        bold = sys.stdout.isatty() and not os.environ.get("NO_COLOR")
        marks = ("\x1b[1;4m", "\x1b[0m") if bold else ("«", "»")
        from segue.table import short_ids, terminal_width

        ids = short_ids(_every_id(args, res.results), [r.id for r in res.results] + [r.parent_id for r in res.results
                                                                                   if r.parent_id])
        print(render_results(res.results, now, MARK_START, MARK_END, marks, ids, terminal_width()))
    if not res.results:
        print(f"segue: no session matches {_one_line(text, 80)!s}", file=sys.stderr)
        return 1
    if res.total > len(res.results) and not args.json:
        print(f"segue: {res.total - len(res.results)} more matching session(s); use --limit to see more",
              file=sys.stderr)
    return 0


_FLAGS = {"--json": "json"}
_VALUES = {"--runtime": "runtime", "--dir": "dir", "--since": "since", "--in": "where", "--limit": "limit"}
_LISTS = ("runtime", "where")


def quick_main(argv: list[str]) -> int | None:
    """`segue [--home DIR] search WORDS… [options]` answered from a fresh index (segue.search.fast) before the CLI
    and its parser are imported; None (nothing printed) for anything else, an index that is not fresh, or an
    argument the full parser should judge (it then explains the usage error)."""
    args = _parse_quick(argv)
    if args is None:
        return None
    text = " ".join(args.query)
    if not text.strip():
        return None
    from segue.search import QueryError
    from segue.search.query import parse_since

    now = time.time()
    try:
        since = parse_since(args.since, now)
        res = _quick(args, text, since)
    except QueryError:
        return None
    except Exception:  # the full path meets it again and reports it as the CLI does
        return None
    if res is None or (not res.results and _no_sessions(args)):
        return None  # (no session at all: the full path says where Segue looked)
    try:
        return _show(args, res, text, now)
    except BrokenPipeError:
        return 0


def _parse_quick(argv: list[str]) -> Any:
    """What build_parser's `search` gives, for the plain forms only: options spelled out (`--x v` or `--x=v`),
    the words in one run; anything else (help, --forget, an unknown or abbreviated option, a word starting with
    '-', a bad count or runtime) is None, left to argparse."""
    from types import SimpleNamespace

    from segue.limits import SEARCH_LIMIT

    ns = SimpleNamespace(home=None, query=[], runtime=None, dir=None, since=None, where=None,
                         limit=SEARCH_LIMIT.default, json=False, forget=False)
    rest = list(argv)
    if rest[:1] == ["--home"] and len(rest) > 1:
        ns.home, rest = rest[1], rest[2:]
    elif rest[:1] and rest[0].startswith("--home="):
        ns.home, rest = rest[0][7:], rest[1:]
    if rest[:1] != ["search"]:
        return None
    runs, last_word = 0, False
    i = 1
    while i < len(rest):
        a = rest[i]
        name, eq, value = a.partition("=")
        if a in _FLAGS:
            setattr(ns, _FLAGS[a], True)
            i += 1
            last_word = False
            continue
        if name in _VALUES:
            if not eq:
                if i + 1 >= len(rest) or rest[i + 1].startswith("-"):
                    return None
                value = rest[i + 1]
                i += 1
            i += 1
            key = _VALUES[name]
            if key in _LISTS:
                setattr(ns, key, [*(getattr(ns, key) or []), value])
            else:
                setattr(ns, key, value)
            last_word = False
            continue
        if a.startswith("-"):
            return None
        if not last_word:
            runs += 1
        last_word = True
        ns.query.append(a)
        i += 1
    if runs > 1:
        return None
    # a --runtime is answered quickly only when the index holds sessions of it (segue.search.fast): an unknown
    # id is the registry's to refuse, and the registry imports every reader
    if isinstance(ns.limit, str):
        try:
            ns.limit = int(ns.limit)
        except ValueError:
            return None
        if not SEARCH_LIMIT.allows(ns.limit):
            return None
    return ns


def _quick(args: Any, text: str, since: float | None) -> Any:
    from segue.search.fast import try_answer

    return try_answer(state_root(args.home), text, runtimes=args.runtime, directory=args.dir, since=since,
                      where=args.where, limit=args.limit)


def state_root(home: str | None) -> str:
    """str(StateDir.resolve(home).root), as the service resolves it, without pathlib for a plain --home or
    SEGUE_HOME (`Path(x).expanduser().absolute()`: '~' expanded, made absolute, nothing else normalised).
    SEGUE_SEARCH_PATHS=0 always asks StateDir."""
    from segue.search.fast import _plain

    raw = home or os.environ.get("SEGUE_HOME") or None
    if raw is not None and os.environ.get("SEGUE_SEARCH_PATHS", "1") != "0":
        if raw.startswith("~"):
            raw = os.path.expanduser(raw)
        if not raw.startswith("~"):
            full = raw if os.path.isabs(raw) else os.path.join(os.getcwd(), raw)
            if _plain(full):
                return full
    from segue.paths import StateDir

    return str(StateDir.resolve(home).root)


def _usage(msg: str) -> int:
    print(f"segue search: {msg}", file=sys.stderr)
    return 2


def _notice(msg: str) -> None:
    print(f"segue: {msg}", file=sys.stderr)


class _Progress:
    """Sessions indexed so far, on one line of a terminal's stderr; silent for quick catch-ups."""

    def __init__(self) -> None:
        self.t0 = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __call__(self, done: int, total: int) -> None:
        t = time.monotonic()
        if total < 50 or t - self.t0 < 0.5 or (t - self.last < 0.1 and done < total):
            return
        self.last = t
        self.shown = True
        sys.stderr.write(f"\rsegue: indexing sessions for search {done}/{total}")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\n")
            sys.stderr.flush()


def _snippet_line(snippet: str, start: str, end: str, marks: tuple[str, str], width: int) -> str:
    """The snippet with only our own marks turned into escapes: every piece between them is cleaned again."""
    from segue.table import cells, fit

    out = ""
    used = 0
    for i, part in enumerate(snippet.replace(end, start).split(start)):
        piece = mark_invisible(clean(part)).replace("\n", " ").replace("\t", " ")
        if used + cells(piece) > width:
            piece = fit(piece, max(0, width - used - 1)) + "…"
        used += cells(piece)
        out += marks[0] + piece + marks[1] if i % 2 and piece else piece
        if used >= width:
            break
    return out


def render_results(results: list[Any], now: float, start: str, end: str, marks: tuple[str, str],
                   ids: dict[str, str] | None = None, width: int | None = None) -> str:
    """Each matching session's row, then its best snippet. `ids`: the ids to show (whole when not given);
    `width`: the terminal's columns, which rows and snippets then fit (None: the columns' own caps)."""
    from segue.table import age, cells, home_relative, one_line_tail, pad

    shown = ids or {}
    rows = [("ID", "RUNTIME", "AGE", "TITLE", "DIRECTORY")]
    snippets = []
    for r in results:
        title = _one_line(r.label or r.title or "(untitled)", 60)
        if r.parent_id:  # named as the list names it, else by its id as the table shows it
            parent = (_one_line(r.parent_label, 30) if r.parent_label
                      else shown.get(r.parent_id) or _one_line(r.parent_id, 16))
            title = "↳ " + _one_line(r.label or r.title or "(untitled)", 40) + f" (subagent of {parent})"
        rows.append((shown.get(r.id, r.id), r.runtime, age(r.updated_at, now), title,
                     one_line_tail(home_relative(r.cwd), 48)))
        snippets.append(f"{r.where} {r.step}: ")
    widths = [max(cells(row[i]) for row in rows) for i in range(5)]
    if width is not None:  # the directory gives way first (to 16 cells, cut at its head), then the title (to 20)
        over = sum(widths) + 8 - width
        for col, least in ((4, 16), (3, 20)):
            take = min(max(0, over), max(0, widths[col] - least))
            widths[col] -= take
            over -= take
    lines = []
    for i, row in enumerate(rows):
        title = _one_line(row[3], widths[3]) if cells(row[3]) > widths[3] else row[3]
        cols = [*(pad(row[j], widths[j]) for j in range(3)), pad(title, widths[3]), one_line_tail(row[4], widths[4])]
        lines.append("  ".join(cols).rstrip())
        if i:
            lead = snippets[i - 1]
            room = 160 if width is None else max(20, width - 4 - cells(lead))
            lines.append("    " + lead + _snippet_line(results[i - 1].snippet, start, end, marks, room))
    return "\n".join(lines)
