"""`segue`: the terminal surface. Thin over `segue.service`; heavy modules load only when a command needs them.

Exit codes: 0 done, 1 refused or failed (a clear message on stderr), 2 usage error. A count outside what the
service accepts (`segue.limits`: `--tail`, search's `--limit`) is a usage error, as it is for the language
server; nothing is clamped. `serve` is the entry point's (`segue.entry`): this module never imports the
language server.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from segue import __version__
from segue.errors import INVALID_PARAMS, InvalidArgument, SegueError, classify
from segue.limits import CLAIM_TAIL, PAGE_LIMIT, SEARCH_LIMIT, Bound
from segue.stores import REGISTRY, RUNTIMES

if TYPE_CHECKING:
    from segue.results import ListingPage, StoreLocation
    from segue.resume import Plan
    from segue.service import Service
    from segue.stores.base import Env

# `segue serve`, handed in by the entry point: (state directory or None) -> exit code
Serve = Callable[[str | None], int]


class Refused(SegueError):
    """Exit 1 with this message."""

    reason = "refused"


class Usage(InvalidArgument):
    """Exit 2 with this message (a combination of options argparse cannot express)."""


class _Parser(argparse.ArgumentParser):
    """argparse's parser (every subcommand's too); `dash_hint`: its positional words may start with '-' only
    after `--`, and an error says so (`segue search -- -hello`)."""

    dash_hint = False

    def error(self, message: str) -> NoReturn:
        if self.dash_hint:
            import re
            import shlex

            # `-hello` reads as -h with "ello"; `-x`, `--bogus` as options nobody defined
            bundled = re.search(r"argument (-\w)\S*: ignored explicit argument '(.*)'$", message)
            unknown = message.partition("unrecognized arguments: ")[2].split()
            word = bundled[1] + bundled[2] if bundled else next((w for w in unknown if w.startswith("-")), None)
            if word:
                message += (f" (to search for a word that starts with '-', put it after --: "
                            f"{self.prog} -- {shlex.quote(word)})")
        super().error(message)


def _usage_of(p: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """A subcommand's parser, remembered in the parsed arguments: its usage is what a usage error shows."""
    p.set_defaults(usage_of=p)
    return p


def build_parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="segue",
        description="Pick an AI coding session up where it stopped: " + ", ".join(d.name for d in REGISTRY) + ".")
    p.add_argument("--version", action="version", version=f"segue {__version__}")
    p.add_argument("--home", metavar="DIR", help="Segue's state directory (default: $SEGUE_HOME, else the "
                                                  "platform's state dir)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    ls = _usage_of(sub.add_parser("list", help="list resumable sessions, newest first"))
    ls.add_argument("--runtime", action="append", choices=RUNTIMES, help="only this runtime (repeatable)")
    ls.add_argument("--dir", metavar="PATH", help="only sessions whose directory is PATH or below it")
    ls.add_argument("--all", action="store_true", help="include subagent sessions, under their parent")
    ls.add_argument("--limit", type=_count, metavar="N",
                    help="at most N top-level sessions; 0 = all (default: a screenful on a terminal, all with --json "
                         "or when piped)")
    ls.add_argument("--json", action="store_true", help="print a JSON array")

    for name in ("brief", "export"):
        b = _usage_of(sub.add_parser(name, help="write a Markdown handoff brief of a session" +
                                     (" (alias of brief)" if name == "export" else "")))
        b.add_argument("ref", help="runtime:id or an unambiguous id prefix")
        g = b.add_mutually_exclusive_group()
        g.add_argument("--stdout", action="store_true", help="print the Markdown instead of writing a file")
        g.add_argument("--json", action="store_true", help="print the structured facts instead")

    r = _usage_of(sub.add_parser("resume", help="reopen a session, or start a new one from its brief"))
    r.add_argument("ref")
    r.add_argument("--in", dest="target", choices=RUNTIMES, help="continue in this runtime")
    r.add_argument("--new", action="store_true", help="start a new session from the brief")
    r.add_argument("--cwd", metavar="DIR", help="run in DIR instead of the session's directory")
    r.add_argument("--yes", action="store_true", help="launch without asking")
    r.add_argument("--dry-run", action="store_true", help="print the plan as JSON and launch nothing")
    r.add_argument("--print", dest="print_command", action="store_true",
                   help="print a command line to paste into any terminal (cd DIR && RUNTIME …); launch nothing")
    r.add_argument("--shell", choices=("posix", "powershell"),
                   help="quote --print for this shell (default: powershell on Windows, else posix)")

    h = _usage_of(sub.add_parser("handoff", help="hand a session to another surface with a single-use token"))
    hs = h.add_subparsers(dest="handoff_command", metavar="ACTION")
    e = _usage_of(hs.add_parser("emit", help="emit a token for a session (prints only the token)"))
    e.add_argument("ref", nargs="?")
    e.add_argument("--session", dest="session_ref", metavar="REF")
    e.add_argument("--from", dest="surface", default="terminal", type=_surface, help="this surface: terminal or editor")
    c = _usage_of(hs.add_parser("claim", help="claim a token (prompted without echo when omitted)"))
    c.add_argument("token", nargs="?")
    c.add_argument("--as", dest="surface", default="terminal", type=_surface, help="this surface: terminal or editor")
    c.add_argument("--json", action="store_true")
    c.add_argument("--tail", type=_within(CLAIM_TAIL), default=CLAIM_TAIL.default, metavar="N",
                   help=f"steps of recent activity, {CLAIM_TAIL.describe()} (default {CLAIM_TAIL.default})")
    st = _usage_of(hs.add_parser("status", help="list live tokens (never prints a token)"))
    st.add_argument("--json", action="store_true")

    se = _usage_of(sub.add_parser("search", help="find sessions by what was asked, said, run and changed"))
    if isinstance(se, _Parser):  # (subparsers are of their parent's class)
        se.dash_hint = True
    se.add_argument("query", nargs="*", help='words (all must match, any order), "quoted phrases", prefix*')
    se.add_argument("--runtime", action="append", choices=RUNTIMES, help="only this runtime (repeatable)")
    se.add_argument("--dir", metavar="PATH", help="only sessions whose directory is PATH or below it")
    se.add_argument("--since", metavar="DATE", help="only sessions active since DATE (2026-11-30) or an age (7d)")
    se.add_argument("--in", dest="where", action="append", metavar="WHERE",
                    help="only in requests, messages, commands or files (repeatable)")
    se.add_argument("--limit", type=_within(SEARCH_LIMIT), default=SEARCH_LIMIT.default, metavar="N",
                    help=f"at most N sessions, {SEARCH_LIMIT.describe()} (default {SEARCH_LIMIT.default})")
    se.add_argument("--json", action="store_true", help='print {"results": [...], "total": N}')
    se.add_argument("--forget", action="store_true", help="delete the search index (it holds session text)")

    t = _usage_of(sub.add_parser("trace", help="the chain of sessions a task went through, across runtimes"))
    t.add_argument("ref")
    t.add_argument("--json", action="store_true")

    sv = _usage_of(sub.add_parser("serve", help="run the language server on stdio (for the editor extension)"))
    sv.add_argument("--stdio", action="store_true", help="accepted and ignored: stdio is the only transport")

    _usage_of(sub.add_parser("demo", help="list and brief a bundled sample store written by the real runtimes"))
    return p


def _surface(v: str) -> str:
    """--from / --as: the registry's rule, checked while parsing (a usage error, not a traceback)."""
    from segue.tokens import SURFACE_SHAPE, SURFACES  # only when given: the list path never imports tokens
    if not SURFACE_SHAPE.match(v):
        raise argparse.ArgumentTypeError(f"must be a short lowercase word such as {' or '.join(SURFACES)}")
    return v


def _number(v: str) -> int:
    try:
        return int(v)
    except ValueError:
        raise argparse.ArgumentTypeError("must be a number") from None


def _within(bound: Bound) -> Callable[[str], int]:
    """An option type for a service count: out of range is argparse's usage error (exit 2)."""

    def parse(v: str) -> int:
        n = _number(v)
        if not bound.allows(n):
            raise argparse.ArgumentTypeError(f"must be {bound.describe()}")
        return n

    return parse


def _count(v: str) -> int:
    """`list --limit`: 0 is all, else a page of the service's bound."""
    n = _number(v)
    if n != 0 and not PAGE_LIMIT.allows(n):
        raise argparse.ArgumentTypeError(f"must be 0 (all) or {PAGE_LIMIT.describe()}")
    return n


def main(argv: Sequence[str] | None = None, serve: Serve | None = None) -> int:
    """The CLI; `serve` runs the language server (the entry point passes it, so this module never imports
    the language-server package)."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args, extra = parser.parse_known_args(argv)
    usage_of: argparse.ArgumentParser = getattr(args, "usage_of", parser)  # the innermost subcommand's
    if extra:  # (parse_args would report them with the top-level usage)
        usage_of.error(f"unrecognized arguments: {' '.join(extra)}")
    args.raw_argv = argv  # what a warm listing is kept under (segue.warm)
    if args.command is None:
        parser.print_help()
        return 2
    if args.command == "handoff" and args.handoff_command is None:
        usage_of.error("choose an action: emit, claim or status")
    if args.command == "serve":
        if serve is None:
            print("segue: `serve` runs through the segue command (`segue serve` or `python -m segue serve`)",
                  file=sys.stderr)
            return 2
        return serve(args.home)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as e:  # domain errors carry a message meant for people
        c = classify(e)
        if c is None:
            raise
        reason, msg, _ = c
        if reason == INVALID_PARAMS:  # a usage error: the subcommand's usage, as argparse shows its own
            sys.stderr.write(usage_of.format_usage())
            print(f"{usage_of.prog}: error: {msg}", file=sys.stderr)
            return 2
        print(f"segue: {msg}", file=sys.stderr)
        return 1
    finally:
        recache = sys.modules.get("segue.recache")
        if recache is not None:
            with contextlib.suppress(Exception):  # a cache: never the command's outcome
                recache.save()  # the patterns this command compiled, when it used the kept ones (else no-op)


def _service(args: argparse.Namespace, env: Env | None = None, redacts: bool = True) -> Service:
    from segue.paths import StateDir
    from segue.service import Service

    svc = Service(StateDir.resolve(args.home), env=env)
    svc.parallel = True  # one-shot and single-threaded: a cold listing may use worker processes
    svc.one_shot = True
    if redacts:  # before the listing redacts anything (saved when the command ends: `main`)
        svc.use_kept_patterns()
    return svc


def _dispatch(args: argparse.Namespace) -> int:
    cmd = args.command
    if cmd == "list":
        return cmd_list(args)
    if cmd in ("brief", "export"):
        return cmd_brief(args)
    if cmd == "resume":
        return cmd_resume(args)
    if cmd == "handoff":
        if args.handoff_command == "emit":
            return cmd_emit(args)
        if args.handoff_command == "claim":
            return cmd_claim(args)
        if args.handoff_command == "status":
            return cmd_status(args)
        return 2
    if cmd == "trace":
        return cmd_trace(args)
    if cmd == "search":
        from segue.cli_search import cmd_search

        return cmd_search(args, _service, nothing_found)
    if cmd == "demo":
        from segue.demo import run_demo

        return run_demo()
    return 2


def _dump(obj: Any) -> None:
    """Indented for a person at a terminal; compact (and several times faster to encode) for programs."""
    indent = 2 if sys.stdout.isatty() else None
    sys.stdout.write(json.dumps(obj, ensure_ascii=False, indent=indent) + "\n")


# -- list -----------------------------------------------------------------------------------------------------

def cmd_list(args: argparse.Namespace) -> int:
    """The listing; kept for a warm answer next time (segue.warm) unless switched off or the arguments are
    of another form. The output is built whole, then printed: the same text is what is kept."""
    from segue.paths import StateDir
    from segue.warm import Keeper

    root = str(StateDir.resolve(args.home).root)
    keeper = Keeper.begin(getattr(args, "raw_argv", None), args.home, root)
    if keeper is None:
        svc = _service(args)
        out, err, page, ids = _list_output(args, svc)
    else:
        with keeper.recording() as env:
            svc = _service(args, env)
            out, err, page, ids = _list_output(args, svc)
    table = ids is not None
    try:
        if isinstance(out, str):
            if out:
                sys.stdout.write(out)
                sys.stdout.flush()
        else:  # compact JSON items, encoded one at a time: written out (and kept) as they come
            body = keeper.body() if keeper is not None else None
            sys.stdout.flush()
            w = sys.stdout.buffer.write
            for chunk in _joined(out):
                w(chunk)
                if body is not None:
                    body.write(chunk)
            sys.stdout.buffer.flush()
        if err:
            sys.stderr.write(err)
        if keeper is not None:
            keeper.keep(page.sessions, table, out if isinstance(out, str) else None, err, 0, listing=(args, svc),
                        ids=ids)
    finally:
        if keeper is not None:
            keeper.discard()
    return 0


def _list_output(args: argparse.Namespace, svc: Service
                 ) -> tuple[str | Iterator[bytes], str, ListingPage, dict[str, str] | None]:
    """(stdout, stderr, the page, the ids shown when stdout is a table, else None) of `segue list`."""
    from segue.table import render_table, short_ids, terminal_width

    limit = args.limit
    if limit is None and not args.json and sys.stdout.isatty():
        limit = max(5, shutil.get_terminal_size().lines - 4)  # a screenful: header, the note, the prompt
    progress = ScanProgress() if sys.stderr.isatty() else None
    try:
        page = svc.page(args.runtime, directory=args.dir, include_subagents=args.all, limit=limit or None,
                        progress=progress)
    finally:
        if progress:
            progress.done()
    out: str | Iterator[bytes] = ""
    err: list[str] = []
    ids: dict[str, str] | None = None
    if args.json:
        if sys.stdout.isatty():
            out = json.dumps(page.sessions_json(), ensure_ascii=False, indent=2) + "\n"
        elif os.name == "posix" and hasattr(sys.stdout, "buffer"):
            # compact, each item encoded as stdout would (bytes: one wide character would make a str of the
            # whole listing four bytes a character), and no dict of every session held at once
            enc, errors = sys.stdout.encoding, sys.stdout.errors or "strict"
            # one encoder for every item (json.dumps with a non-default option builds a new one per call)
            dumps = json.JSONEncoder(ensure_ascii=False).encode
            out = _encoded(page, dumps, enc, errors)
        else:
            out = "[" + ",".join(json.dumps(item, ensure_ascii=False) for item in page.sessions_json()) + "]\n"
    elif page.sessions:
        ids = short_ids(page.every_id(), (s.id for s in page.sessions))
        out = render_table(page.sessions, time.time(), ids, terminal_width()) + "\n"
        if page.next_offset is not None:
            more = page.total - page.next_offset
            err.append(f"… {more} more session{'s' if more != 1 else ''} (--limit N for more, --limit 0 for all)")
    elif page.listed:
        err.append("No sessions match these filters.")
    else:
        err.append(nothing_found(svc, args.runtime))
    reasons = page.skipped_reasons
    if reasons:
        err.append(f"segue: skipped {len(reasons)} unreadable item(s):")
        err += [f"  {line}" for line in reasons[:20]]
        if len(reasons) > 20:
            err.append(f"  … and {len(reasons) - 20} more")
    return out, "".join(e + "\n" for e in err), page, ids


def _encoded(page: ListingPage, dumps: Callable[[Any], str], enc: str, errors: str) -> Iterator[bytes]:
    """Each session's JSON item as stdout encodes it. A compact session's row (segue.compact) goes once its item
    is made: only printing reads it, and what it frees is reused by the items after it (the rows of the rest go
    with `Service.printed`)."""
    from segue.compact import Compact

    for s in page.sessions:
        item = dumps(page.session_json(s)).encode(enc, errors)
        if type(s) is Compact:
            s.release()
        yield item


def _joined(items: Iterable[bytes]) -> Iterator[bytes]:
    """A JSON array of encoded items, piece by piece (never one copy of the whole)."""
    yield b"["
    for i, item in enumerate(items):
        if i:
            yield b","
        yield item
    yield b"]\n"


class ScanProgress:
    """Sessions read per runtime on stderr (a terminal), once a scan has taken more than about a second."""

    AFTER = 1.0

    def __init__(self) -> None:
        self.started = time.monotonic()
        self.counts: dict[str, int] = {}
        self.shown = False
        self.last = 0.0

    def __call__(self, runtime: str, sessions: int, done: int, total: int) -> None:
        self.counts[runtime] = sessions
        now = time.monotonic()
        if now - self.started < self.AFTER or (now - self.last < 0.1 and done != total):
            return
        self.last = now
        self.shown = True
        text = ", ".join(f"{rt} {n}" for rt, n in self.counts.items())
        sys.stderr.write(f"\rsegue: reading sessions: {text}\x1b[K")
        sys.stderr.flush()

    def done(self) -> None:
        if self.shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def nothing_found(svc: Service, runtimes: Sequence[str] | None) -> str:
    """Where Segue looked, when the stores hold no session at all."""
    by_runtime: dict[str, list[StoreLocation]] = {}
    for loc in svc.locations(runtimes=runtimes):
        by_runtime.setdefault(loc.runtime, []).append(loc)
    lines = ["No sessions found. Segue looked in:"]
    for runtime, locs in by_runtime.items():
        # the places that exist first, then the runtime's main location; the rest only counted
        first = next((loc for loc in locs if loc.exists), locs[0])
        state = "found, no sessions" if first.exists else "not found"
        hint = f" ({first.how_to_override})" if first.how_to_override else ""
        more = f"; {len(locs) - 1} more place{'s' if len(locs) > 2 else ''} checked" if len(locs) > 1 else ""
        lines.append(f"  {runtime:<9} {first.path}  [{state}]{hint}{more}")
    lines.append("Point Segue elsewhere with those variables, or run `segue demo` to see it work on a sample.")
    return "\n".join(lines)


# -- brief ----------------------------------------------------------------------------------------------------

def cmd_brief(args: argparse.Namespace) -> int:
    svc = _service(args)
    if args.json:
        _dump(svc.brief(args.ref).facts.to_json())
        return 0
    if args.stdout:
        sys.stdout.write(svc.brief(args.ref).markdown)
        return 0
    session, _ = svc.find(args.ref)
    path, facts = svc.write_brief(session)
    if facts.from_kept_facts:
        print("segue: this session is no longer in its runtime's store; the brief was rebuilt from the facts "
              "Segue kept when it last briefed it", file=sys.stderr)
    print(path)
    return 0


# -- resume ---------------------------------------------------------------------------------------------------

def cmd_resume(args: argparse.Namespace) -> int:
    from segue.resume import PlanRefused, exec_plan, locate_cli

    if args.shell and not args.print_command:
        raise Usage("--shell goes with --print")
    if args.print_command and (args.dry_run or args.yes):
        raise Usage("--print launches nothing: it does not go with --dry-run or --yes")
    svc = _service(args)
    if args.print_command:
        shell = args.shell or ("powershell" if os.name == "nt" else "posix")
        print(svc.resume_command(args.ref, runtime=args.target, new=args.new, cwd=args.cwd, shell=shell).command)
        return 0
    if args.dry_run:
        # the plan as it would run, brief path included, but no brief written; a CLI missing here is said,
        # not a failure: showing the plan is what was asked
        plan = svc.plan_resume(args.ref, runtime=args.target, new=args.new, cwd=args.cwd, write=False,
                               require_cli=False)
        _dump(plan.to_json())
        try:
            locate_cli(plan.runtime)
        except PlanRefused as e:
            print(f"segue: launching this plan would fail here: {e}", file=sys.stderr)
        return 0
    plan = svc.plan_resume(args.ref, runtime=args.target, new=args.new, cwd=args.cwd)
    try:
        print(describe_plan(plan), file=sys.stderr)
        if not args.yes:
            if not sys.stdin.isatty():
                raise Refused("not launching without confirmation: no terminal to ask on; pass --yes to launch")
            strict = plan.handed_off is not None or (plan.live and plan.mode == "native")
            question = ("This session is handed off to another surface. Type 'yes' to launch anyway: "
                        if plan.handed_off is not None
                        else "This session is open in another process. Type 'yes' to launch anyway: " if strict
                        else "Launch? [y/N] ")
            answer = input(question).strip().lower()
            if not (answer == "yes" or (not strict and answer == "y")):
                raise Refused("not launched")
        sys.stdout.flush()
        sys.stderr.flush()
        exec_plan(plan)
    except BaseException:  # declined, interrupted or failed to start: nothing launched, so its brief goes too
        if plan.brief_path:
            with contextlib.suppress(OSError):
                os.unlink(plan.brief_path)
        raise
    return 0  # pragma: no cover


def describe_plan(plan: Plan) -> str:
    import shlex

    from segue.resume import REASON_TEXTS
    from segue.stores import display_name
    from segue.table import one_line

    name = display_name(plan.runtime)
    # people read the reason's words, never its code (the JSON's)
    lines = [f"Plan: {f'reopen it in {name}' if plan.mode == 'native' else f'a new {name} session from a brief'}",
             f"  why:       {REASON_TEXTS.get(plan.reason, plan.reason.replace('_', ' '))}",
             f"  session:   {plan.session.ref}  {one_line(plan.session.display_title, 60)}",
             f"  command:   {' '.join(shlex.quote(a) for a in plan.argv)}",
             f"  directory: {plan.cwd}"]
    if plan.brief_path:
        lines.append(f"  brief:     {plan.brief_path}")
    if plan.live_warning:
        lines.append(f"  WARNING: {plan.live_warning}")
    if plan.handed_off:
        lines.append(f"  NOTE: handed off from the {plan.handed_off['surface']} surface since "
                     f"{plan.handed_off['since']} (token live until {plan.handed_off['expires_at']})")
    return "\n".join(lines)


# -- handoff --------------------------------------------------------------------------------------------------

def cmd_emit(args: argparse.Namespace) -> int:
    ref = args.session_ref or args.ref
    if not ref or (args.session_ref and args.ref and args.session_ref != args.ref):
        args.usage_of.error("handoff emit needs one session: REF or --session REF")
    print(_service(args).emit(ref, args.surface).token)
    return 0


def _read_token(given: str | None) -> str:
    if given:
        return given
    if sys.stdin.isatty():
        import getpass

        return getpass.getpass("Handoff token: ")
    line = sys.stdin.readline()
    if not line.strip():
        raise Refused("no token given: pass it as an argument, type it at the prompt, or pipe one line")
    return line.strip()


def cmd_claim(args: argparse.Namespace) -> int:
    from segue.model import UNTITLED
    from segue.results import PlanRefusal
    from segue.table import one_line

    out = _service(args).claim(_read_token(args.token), args.surface, tail=args.tail)
    if args.json:
        _dump(out.to_json())
        return 0
    s = out.session
    print(f"Claimed {s.runtime}:{s.id}  {one_line(s.title or UNTITLED, 70)}")
    print(f"  from the {out.source_surface} surface, as {out.claimed_as}")
    print(f"  directory: {s.cwd}")
    print(f"  active task: {one_line(out.active_task, 200)}")
    print(f"  brief: {out.brief_path}")
    if out.tail:
        print("Recent activity:")
        for st in out.tail:
            print(f"  [{st.kind}] {one_line(st.text, 150)}")
    if isinstance(out.plan, PlanRefusal):
        print(f"Resume is not possible here yet: {out.plan.message}")
    else:
        print(f"Resume with: segue resume {s.runtime}:{s.id}")
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    from segue.model import UNTITLED
    from segue.table import one_line

    rows = _service(args, redacts=False).token_status()  # kept titles, ids and times: no kept patterns to load
    if args.json:
        _dump([r.to_json() for r in rows])
        return 0
    if not rows:
        print("No live handoff tokens.")
        return 0
    for r in rows:
        state = f"claimed as {r.claimed_as}" if r.claimed else "not claimed"
        print(f"{r.session.runtime}:{r.session.id}  {one_line(r.session.title or UNTITLED, 50)}  from {r.surface}  "
              f"issued {r.issued_at}  {int(r.seconds_left)}s left  {state}")
    return 0


# -- trace ----------------------------------------------------------------------------------------------------

def cmd_trace(args: argparse.Namespace) -> int:
    from segue.model import UNTITLED
    from segue.table import one_line

    trace = _service(args).trace(args.ref)
    if args.json:
        _dump(trace.to_json())
        return 0
    rows = [(f"{c.runtime}:{c.id}", c.started_at or "-",
              one_line(c.title or UNTITLED, 70) if c.found else "(not found: no store Segue reads holds this session)")
            for c in trace.links]
    ref_w = max((len(r[0]) for r in rows), default=0)
    time_w = max((len(r[1]) for r in rows), default=0)
    for i, (ref, started, title) in enumerate(rows):
        print(f"{'   ' if i == 0 else '-> '}{ref.ljust(ref_w)}  {started.ljust(time_w)}  {title}")
    return 0
