"""The CLI's warm listing: `segue list` answered with its own finished output when nothing it depends on changed.

A full `segue list` (cli.cmd_list) runs under a paused probe recording (segue.probe): what the readers'
discovery and live checks looked at, and what decoration read of the sessions' checkouts (`.git/HEAD`), is noted.
Its finished output is then kept in `cache/warm/<digest of the arguments>`, beside the probe and every input on
Segue's side that decorates a listing: the token registry, the kept brief facts, `events.jsonl`, the session
index, the environment that matters, a digest of Segue's own code and the interpreter, the working directory,
the terminal. The next process with exactly the same arguments replays the probe and re-checks those inputs
(`answer`, called by the entry point before the CLI is even imported); when every one gives the same answer it
prints the kept output, else it returns None and the full path runs (and keeps a new entry).

Positive matches only: a probe the recorder could not make whole, a session that is live (a process Segue cannot
re-check without the reader), a token's expiry or start passing, or any input differing sends the caller to the
full path. A table (`segue list` on a terminal) is kept as its rows and rendered again, since ages move with the
clock. Set SEGUE_WARM=0 to never answer from it (and never keep one).

When some of the probe's groups changed (one per runtime's discovery: the Claude file appended, the OpenCode rows
updated) and nothing else did, segue.patch re-reads only those runtimes and patches the kept output (the patch
path; SEGUE_WARM_PATCH=0 switches it off). An entry is [printed bytes][patch table][header][header length].
"""

from __future__ import annotations

import marshal
import os
import sys
import time

from segue import replay

TYPE_CHECKING = False  # not typing's: a quick answer imports as little as it can
if TYPE_CHECKING:
    from collections.abc import Iterator, Sequence
    from contextlib import AbstractContextManager
    from typing import Any

    from segue.stores.base import Env

# 2: the probe in groups (replay.changed_groups), a patch table (segue.patch); 3: the probe's blob apart from the
# header, which names where it is and where the printed bytes begin (`write_tail`); 4: a table's rows hold the id
# and the id shown
FORMAT = 4
KEEP = 8  # argument sets kept (the oldest entry goes first)
SUBDIR = "warm"
# the environment the listing's own output depends on beyond what the readers looked up (the probe has those)
ENV_NAMES = ("HOME", "SEGUE_HOME", "SEGUE_FAST_PATHS", "COLUMNS", "LINES", "PYTHONIOENCODING", "PYTHONUTF8",
             "LANG", "LC_ALL", "LC_CTYPE", "XDG_STATE_HOME")
_VALUED = ("--runtime", "--dir", "--limit")
_PLAIN = ("--json", "--all")


def enabled(environ: Any = None) -> bool:
    v = (os.environ if environ is None else environ).get("SEGUE_WARM", "1")
    return v.strip().lower() not in ("0", "off", "false", "no")


def patch_enabled(environ: Any = None) -> bool:
    v = (os.environ if environ is None else environ).get("SEGUE_WARM_PATCH", "1")
    return v.strip().lower() not in ("0", "off", "false", "no")


def split(argv: Sequence[str]) -> tuple[str | None, list[str]] | None:
    """(--home value, list arguments) of a plain `segue [--home DIR] list [--json] [--all] [--runtime R]…
    [--dir PATH] [--limit N]`, spelled out in full; None for anything else (the full path parses it)."""
    args = list(argv)
    home = None
    if args[:1] == ["--home"] and len(args) > 1:
        home, args = args[1], args[2:]
    elif args[:1] and args[0].startswith("--home="):
        home, args = args[0][7:], args[1:]
    if args[:1] != ["list"]:
        return None
    i = 1
    while i < len(args):
        a = args[i]
        if a in _PLAIN:
            i += 1
        elif a in _VALUED and i + 1 < len(args) and not args[i + 1].startswith("-"):
            i += 2
        elif a.partition("=")[0] in _VALUED and "=" in a:
            i += 1
        else:
            return None
    return home, args


def state_root(home: str | None, environ: Any = None) -> str:
    """The state directory as paths.StateDir.resolve finds it (the full path checks that they agree)."""
    env = os.environ if environ is None else environ
    explicit = home or env.get("SEGUE_HOME")
    if not explicit:
        import platformdirs

        explicit = platformdirs.user_state_dir("segue", appauthor=False)
    p = os.path.expanduser(explicit)
    if not p.startswith("/"):
        p = os.getcwd().rstrip("/") + "/" + p
    parts = [c for c in p.split("/") if c and c != "."]
    lead = "//" if p.startswith("//") and not p.startswith("///") else "/"
    return lead + "/".join(parts)


def _terminal() -> Any:
    out_tty = sys.stdout.isatty()
    size = None
    if out_tty:
        try:
            size = tuple(os.get_terminal_size(sys.__stdout__.fileno()))
        except (OSError, AttributeError, ValueError):
            size = None
    return (out_tty, sys.stderr.isatty(), size, sys.stdout.encoding, sys.stdout.errors)


def key_of(argv: Sequence[str], root: str) -> tuple[Any, ...]:
    home = os.path.expanduser("~")
    return (FORMAT, tuple(argv), root, os.getcwd(), _terminal(), sys.executable, sys.version, home,
            tuple((n, os.environ.get(n)) for n in ENV_NAMES))


def _entry_path(root: str, key: tuple[Any, ...]) -> str:
    return f"{root}/cache/{SUBDIR}/{replay.blake2b(marshal.dumps(key), digest_size=16).hexdigest()}"


_CODE = os.path.dirname(os.path.abspath(__file__))


def inputs(root: str) -> list[Any]:
    """Everything on Segue's side a listing's output depends on, as (path, signature): its state files, the kept
    briefs, the session index, and every module of Segue itself."""
    sig = replay._stat_sig
    paths = [f"{root}/handoff_tokens.json", f"{root}/events.jsonl", f"{root}/cache/index.sqlite",
             f"{root}/cache/index.sqlite-wal", f"{root}/cache/index.sqlite-journal", f"{root}/cache/briefs",
             f"{root}/cache/briefs/index.json"]
    paths += _tree(f"{root}/cache/briefs", 2)
    paths += _tree(_CODE, 4)
    return [(p, sig(p, False)) for p in paths]


def _tree(top: str, depth: int) -> list[str]:
    """Every directory and file under `top` (sorted; `__pycache__` aside), `depth` levels down."""
    out: list[str] = []
    try:
        with os.scandir(top) as it:
            entries = sorted((e.name, e.is_dir(follow_symlinks=False)) for e in it)
    except OSError:
        return out
    for name, is_dir in entries:
        if name == "__pycache__":
            continue
        path = f"{top}/{name}"
        out.append(path)
        if is_dir and depth > 1:
            out += _tree(path, depth - 1)
    return out


def is_private_dir(path: str) -> bool:
    """A real directory of this user that nobody else may read or write (Segue's private cache)."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return (st.st_mode & 0o170000) == 0o040000 and st.st_uid == os.geteuid() and not st.st_mode & 0o077


def _read_entry(path: str) -> Any:
    """(header, the entry's open file, where its printed bytes end), or None. The bytes stay on disk until they
    are copied out (`_copy_body`): a 32,000-session listing is 20 MB."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    f = os.fdopen(fd, "rb")
    try:
        st = os.fstat(f.fileno())
        if ((st.st_mode & 0o170000) != 0o100000 or st.st_uid != os.geteuid() or st.st_mode & 0o077
                or st.st_size < 8):
            f.close()
            return None
        f.seek(st.st_size - 8)
        n = int.from_bytes(f.read(8), "little")
        if not 0 < n <= st.st_size - 8:
            f.close()
            return None
        f.seek(st.st_size - 8 - n)
        return marshal.loads(f.read(n)), f, st.st_size - 8 - n
    except (OSError, ValueError, EOFError, TypeError, IndexError):
        f.close()
        return None


def write_tail(w: Any, at: int, key: Any, blob: bytes | tuple[int, int], after: Any, until: float, payload: Any,
               span: Any, base: int = 0) -> None:
    """An entry's end, written at offset `at` of `w`: the probe's blob as it is (inside the header it would be
    copied: 1.2 MB at 8,000 sessions; or where it was written already), the header naming where it is and where
    the printed bytes begin (`base`), the header's length."""
    if isinstance(blob, bytes):
        w.write(blob)
        blob = (at, len(blob))
    head = marshal.dumps((FORMAT, key, blob, after, until, payload, span, base))
    w.write(head)
    w.write(len(head).to_bytes(8, "little"))


def _read_blob(f: Any, at: Any, end: int) -> bytes | None:
    """The probe's blob an entry's header names (`write_tail`), or None."""
    if not (isinstance(at, tuple) and len(at) == 2 and all(type(x) is int for x in at)):
        return None
    off, n = at
    if off < 0 or n < 0 or off + n > end:
        return None
    f.seek(off)
    blob = f.read(n)
    return blob if len(blob) == n else None


def index_files(root: str) -> set[str]:
    """The inputs a listing writes itself (the session index): the patch path writes them too."""
    return {f"{root}/cache/index.sqlite", f"{root}/cache/index.sqlite-wal", f"{root}/cache/index.sqlite-journal"}


def same_but(a: list[Any], b: list[Any], written: set[str]) -> bool:
    return [x for x in a if x[0] not in written] == [x for x in b if x[0] not in written]


def _copy_body(f: Any, base: int, size: int) -> None:
    """The printed bytes of an entry (from `base`) to stdout, a megabyte at a time."""
    f.seek(base)
    out = sys.stdout.buffer
    left = size
    while left > 0:
        chunk = f.read(min(left, 1 << 20))
        if not chunk:
            raise OSError("the kept answer is shorter than its header says")
        out.write(chunk)
        left -= len(chunk)
    out.flush()


# -- the quick answer ---------------------------------------------------------------------------------------

def _home_and_root(argv: Sequence[str]) -> tuple[str | None, str] | None:
    """(the --home given, the state directory it resolves to) when these arguments may be answered warm."""
    if not enabled() or os.name != "posix":  # (paths, owners and modes as POSIX has them)
        return None
    parsed = split(argv)
    if parsed is None:
        return None
    try:
        return parsed[0], state_root(parsed[0])
    except Exception:  # an unusual state directory: the full path explains it
        return None


def answer(argv: Sequence[str]) -> int | None:
    """Print what the full path printed for these arguments, when nothing it depends on changed; None (having
    printed nothing) otherwise."""
    found_root = _home_and_root(argv)
    if found_root is None:
        return None
    root = found_root[1]
    if not (is_private_dir(root) and is_private_dir(f"{root}/cache") and is_private_dir(f"{root}/cache/{SUBDIR}")):
        return None
    key = key_of(argv, root)
    found = _read_entry(_entry_path(root, key))
    if found is None:
        return None
    entry, f, body = found
    with f:
        if not isinstance(entry, tuple) or len(entry) != 8 or entry[0] != FORMAT or entry[1] != key:
            return None
        _fmt, _key, blob_at, seen, valid_until, payload, span, base = entry
        blob = _read_blob(f, blob_at, body)
        if blob is None or type(base) is not int or not 0 <= base <= body:
            return None
        entry = (_fmt, _key, blob, *entry[3:])
        if not time.time() < valid_until:
            return None
        patching = span is not None and patch_enabled()
        now = inputs(root)
        if now != seen and not (patching and same_but(now, seen, index_files(root) | {f"{root}/events.jsonl"})):
            return None
        groups = replay.groups_of(blob)
        changed = replay.changed_in(groups, os.path.expanduser("~"), os.environ, stop=not patching)
        if changed is None:
            return None
        if changed or now != seen:  # (only the index or the events log moved: the patch re-keeps it as it is)
            if not patching:
                return None
            from segue.patch import answer as patched  # only the runtimes that changed are read again

            # (the key as computed here: marshal's bytes of a loaded copy may differ, and name another file)
            return patched(root, (_fmt, key, *entry[2:]), f, body, changed, now, groups)
        kind, out, err, rc = payload
        try:
            if kind == "rows":
                out = render_rows(out)
            if kind == "bytes":
                if not isinstance(out, int) or not 0 <= out <= body - base:
                    return None
                sys.stdout.flush()
                _copy_body(f, base, out)
            elif out:
                sys.stdout.write(out)
                sys.stdout.flush()
            if err:
                sys.stderr.write(err)
        except BrokenPipeError:
            return 0
    return int(rc)


ROW_FIELDS = ("runtime", "parent_id", "live", "handed_off", "subagent_count", "title", "first_request",
              "updated_at", "started_at", "cwd", "branch", "id")
# a kept row: ROW_FIELDS' values, then the id as the table showed it (its abbreviation among every id listed)


def row_of(s: Any, shown_id: str) -> tuple[Any, ...]:
    return (*(getattr(s, f) for f in ROW_FIELDS), shown_id)


def render_rows(rows: Sequence[Sequence[Any]]) -> str:
    """A kept table again: its rows as they were, the ages from the clock now."""
    from segue.table import render_table, terminal_width

    shown = [_Row(r) for r in rows]
    ids = {r.id: r.shown_id for r in shown}
    return render_table(shown, time.time(), ids, terminal_width()) + "\n"  # type: ignore[arg-type]


class _Row:
    """What table.render_table reads of a session, as kept."""

    def __init__(self, values: Sequence[Any]) -> None:
        self.__dict__.update(zip((*ROW_FIELDS, "shown_id"), values, strict=True))


# -- keeping the full path's output -------------------------------------------------------------------------

class Spans:
    """(offset, length) of each item, in two arrays of machine integers: 8,000 pairs of int objects in tuples
    would be 0.9 MB held to the cold listing's end (its peak), these are 0.13 MB. Reads as a list of pairs."""

    __slots__ = ("lengths", "starts")

    def __init__(self) -> None:
        from array import array

        self.starts, self.lengths = array("q"), array("q")

    def append(self, span: tuple[int, int]) -> None:
        self.starts.append(span[0])
        self.lengths.append(span[1])

    def __len__(self) -> int:
        return len(self.starts)

    def __getitem__(self, i: int) -> tuple[int, int]:
        return (self.starts[i], self.lengths[i])


class _Noting:
    """The body file, noting where each JSON item of the listing (every other piece `cli._joined` writes:
    "[", item, ",", item, …, "]\n") begins and ends."""

    def __init__(self, keeper: Keeper) -> None:
        self.k = keeper
        self.n = 0

    def write(self, chunk: bytes) -> int:
        k = self.k
        if k.items is not None and self.n % 2 == 1:
            k.items.append((k._size, len(chunk)))
        self.n += 1
        k._size += len(chunk)
        return k._body.write(chunk)


class Keeper:
    """Records a full `segue list` and keeps its output (cli.cmd_list): `recording()` around the listing,
    then `keep(...)` with what was printed."""

    def __init__(self, argv: list[str], root: str) -> None:
        self.argv, self.root = argv, root
        self.key = key_of(argv, root)
        self.before: list[Any] | None = None
        self.blob: bytes | None = None
        self._tmp: str | None = None
        self._body: Any = None
        self.items: Spans | None = None  # (offset, length) of each JSON item written to the body
        self._size = 0  # the printed bytes written, from `_base`
        self._base = 0  # where they begin in the body file: after the probe's blob, written first
        self._blob_at: tuple[int, int] | None = None

    @classmethod
    def begin(cls, argv: Sequence[str] | None, home: str | None, resolved_root: str) -> Keeper | None:
        """A keeper when these arguments may be answered warm next time (None: switched off, another form)."""
        found = None if argv is None else _home_and_root(argv)
        if found is None or found[1] != resolved_root or found[0] != home:  # what the service uses, or nothing
            return None
        return cls(list(argv), found[1])

    def recording(self) -> AbstractContextManager[Env]:
        import contextlib

        @contextlib.contextmanager
        def rec_env() -> Iterator[Env]:
            from pathlib import Path

            from segue import probe
            from segue.stores.base import Env

            self.before = inputs(self.root)
            from segue import recache  # the redactor's fixed patterns this pass compiles, kept for the first patch
            from segue.paths import ensure_private_dir

            # cache/ now, not when the index is written: a cold listing's workers save theirs as they go (an
            # unsafe state directory: no cache, the listing itself says why). SEGUE_RE_CACHE=0: use() does nothing.
            with contextlib.suppress(Exception):
                ensure_private_dir(Path(self.root) / "cache")
                recache.use(f"{self.root}/cache")
            with probe.recording(paused=True) as rec:
                yield Env(home=Path(os.path.expanduser("~")), environ=rec.env(dict(os.environ)))
            self.blob = rec.dump_groups(os.path.expanduser("~"), os.environ)

        return rec_env()

    def body(self) -> Any:
        """A private file the printed bytes are copied into as they are written (kept by `keep`)."""
        from pathlib import Path

        from segue.paths import ensure_private_dir

        try:
            ensure_private_dir(Path(self.root) / "cache" / SUBDIR)
            self._tmp = f"{_entry_path(self.root, self.key)}.{os.getpid()}.tmp"
            fd = os.open(self._tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            self._body = os.fdopen(fd, "wb")
        except Exception:  # nothing kept this time
            self._tmp = self._body = None
            return None
        self.items, self._size = Spans(), 0
        self._base, self._blob_at = 0, None
        blob = self.blob
        if blob is not None:  # written now, not held to the end of the listing (where its peak is)
            try:
                self._body.write(blob)
            except Exception:
                self.discard()
                return None
            self._base, self._blob_at, self.blob = len(blob), (0, len(blob)), None
        return _Noting(self)

    def discard(self) -> None:
        """Drop a body `keep` did not take (a broken pipe, an answer that cannot be kept)."""
        if self._body is not None:
            self._body.close()
            self._body = None
        if self._tmp is not None:
            _unlink(self._tmp)
            self._tmp = None

    def keep(self, sessions: Sequence[Any], table: bool, out: str | None, err: str, rc: int,
             listing: Any = None, ids: dict[str, str] | None = None) -> bool:
        """Keep what the listing printed (`out`, or the bytes written to `body()`); False (nothing kept) when it
        cannot be answered warm. `listing`: (the parsed arguments, the service), for the patch table; `ids`: the
        ids a table showed."""
        recache = sys.modules.get("segue.recache")
        if recache is not None and is_private_dir(f"{self.root}/cache"):
            recache.save()  # (no-op unless `recording()` called use(): the patterns compiled by the listing)
        if (self.blob is None and self._blob_at is None) or self.before is None or any(s.live for s in sessions):
            return False
        after = inputs(self.root)
        if not same_but(after, self.before, {f"{self.root}/events.jsonl"} | index_files(self.root)):
            return False  # another process changed a decoration input meanwhile: the next run keeps one
        until = self._valid_until()
        if until is None:
            return False
        payload: tuple[Any, ...]
        if table:
            shown = ids or {}
            payload = ("rows", [row_of(s, shown.get(s.id, s.id)) for s in sessions], err, rc)
        elif out is not None:
            payload = ("text", out, err, rc)
        elif self._body is not None:  # the printed bytes are the body; the header goes after them
            payload = ("bytes", self._size, err, rc)
        else:
            return False
        patch_table = None
        if listing is not None and payload[0] != "text" and not err:
            try:
                listing[1].printed()  # what only printing needed goes before the table is built
                from segue.patch import table_of

                patch_table = table_of(listing[0], listing[1], sessions, self.items if payload[0] == "bytes"
                                       else None)
            except Exception:  # the patch path is an optimisation: the entry is kept without it
                patch_table = None
        body = self._body if payload[0] == "bytes" else None
        if body is None:
            self.discard()
            self._size = 0
            if self.body() is None:
                return False
            body = self._body
        blob = self.blob if self._blob_at is None else self._blob_at
        if blob is None:
            return False
        span = None
        at = self._base + self._size
        try:
            if patch_table is not None:
                span = self._write_table(body, patch_table)
                if span is not None:
                    at = span[0] + span[1]
            write_tail(body, at, self.key, blob, after, until, payload, span, self._base)
            body.close()
            self._body = None
            os.replace(self._tmp, _entry_path(self.root, self.key))
            self._tmp = None
        except Exception:  # a kept answer is an optimisation; never a reason for a listing to fail
            return False
        _prune(f"{self.root}/cache/{SUBDIR}")
        return True

    def _write_table(self, body: Any, pieces: Iterator[bytes]) -> tuple[int, int] | None:
        """Write the patch table's pieces after the printed bytes, as they are encoded (segue.patch._frames): its
        span in the entry, or None with the body cut back to the printed bytes when a piece could not be made
        (raises when it cannot be cut back)."""
        start, n = self._base + self._size, 0
        try:
            for piece in pieces:
                body.write(piece)
                n += len(piece)
        except Exception:  # the patch path is an optimisation: the entry is kept without a table
            body.flush()  # (an error here is the caller's: nothing is kept)
            body.truncate(start)
            body.seek(start)
            return None
        return (start, n)

    def _valid_until(self) -> float | None:
        """When a live token expires or a future-issued one starts counting (handed_off changes with the clock)."""
        import json

        from segue.tokens import SKEW

        try:
            with open(f"{self.root}/handoff_tokens.json", "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return float("inf")
        except OSError:
            return None
        if not data.strip():
            return float("inf")
        try:
            tokens = json.loads(data)["tokens"]
            now = time.time()
            times = []
            for e in tokens.values():
                if e.get("state") == "issued":
                    times.append(float(e.get("expires_at", 0)))
                    start = float(e.get("issued_at", 0)) - SKEW
                    if start > now:
                        times.append(start)
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        return min(times, default=float("inf"))


def _prune(d: str) -> None:
    try:
        entries = sorted(((e.stat().st_mtime_ns, e.path) for e in os.scandir(d) if e.is_file()), reverse=True)
    except OSError:
        return
    for _, p in entries[KEEP:]:
        _unlink(p)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:  # gone already (another process pruned it)
        return


def forget(root: str) -> None:
    """Drop every kept answer (tests, and a state directory being cleaned)."""
    try:
        names = [e.path for e in os.scandir(f"{root}/cache/{SUBDIR}")]
    except OSError:
        return
    for p in names:
        _unlink(p)
