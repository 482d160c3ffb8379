"""Shared pieces of the synthetic stores: seeded randomness, realistic text, clocks, the corpus ledger and
the fast block-repeat writer for transcripts of hundreds of MB.

Everything derives from one `random.Random(seed)` and a fixed end time, never the wall clock, so the same
flags write the same bytes.
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

T_END = 1795824000.0  # 2026-11-28T00:00:00Z: every generated time lies before it
DAY = 86400.0

# Markers a block template carries; each copy of the block gets its own values (fixed width, so every
# copy has the template's size). The text pool never produces "QQ".
BLOCK_ID = "QQBLKIDX"  # -> 8 hex digits: makes uuids, message ids and call ids unique per copy
BLOCK_DAY, BLOCK_HOUR, BLOCK_MIN = "QQDD", "QQHH", "QQMM"


def iso(t: float) -> str:
    dt = datetime.fromtimestamp(t, tz=timezone.utc)
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def dumps(obj: Any, indent: int | None = None) -> str:
    if indent is None:
        return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))
    return json.dumps(obj, ensure_ascii=False, indent=indent)


_WORD_TEXT = (
    "parser cache index config build release test fixture handler client server request response token "
    "session schema migration query table column retry timeout backoff queue worker thread lock mutex "
    "buffer stream chunk offset header footer layout widget button modal sidebar router middleware logger "
    "metric trace span exporter plugin adapter driver socket channel payload encoder decoder checksum "
    "snapshot rollback deploy pipeline artifact docker image volume cluster node pod service ingress "
    "secret vault policy role user account invoice order cart checkout price discount currency locale "
    "translation string format date timezone calendar event scheduler cron job batch import export csv "
    "json yaml toml markdown html css font icon theme color palette gradient shadow border margin padding"
)
_WORDS = _WORD_TEXT.split()
_EXT = (".py", ".ts", ".tsx", ".go", ".rs", ".md", ".json", ".toml", ".sql", ".css", ".sh", ".yaml")
_DIRS = ("src", "lib", "app", "server", "client", "pkg", "internal", "tests", "docs", "scripts", "cmd", "web")
_VERBS = ("Fix", "Add", "Refactor", "Explain", "Speed up", "Rename", "Document", "Remove", "Debug", "Port",
          "Review", "Split", "Simplify", "Harden", "Test", "Migrate")
_UNICODE = ("café", "naïve", "日本語の説明", "Größe", "emoji 🚀", "résumé", "Ελληνικά", "проверка", "→", "…")
_ERRORS = ("TypeError: cannot read properties of undefined (reading 'id')", "panic: runtime error: index out "
           "of range [3] with length 3", "AssertionError: assert 3 == 4", "error[E0502]: cannot borrow `x` as "
           "mutable", "ModuleNotFoundError: No module named 'yaml'", "ECONNREFUSED 127.0.0.1:5432",
           "segmentation fault (core dumped)", "FAILED tests/test_api.py::test_login - KeyError: 'token'")
_CMDS = ("git status --short --branch", "pytest -q tests/", "npm test", "cargo build --release", "go test ./...",
         "ls -la", "rg -n TODO src", "make lint", "git diff --stat", "docker compose up -d db",
         "python -m mypy server", "npm run build", "git log --oneline -20", "cat package.json",
         "ruff check .", "du -sh node_modules", "ls /nonexistent-dir", "git push origin HEAD")


def joined_lines(lines: list[str]) -> tuple[str, list[int]]:
    """The lines as one text (each ending in a newline) and the offset where each starts."""
    starts, pos = [], 0
    for ln in lines:
        starts.append(pos)
        pos += len(ln) + 1
    return "\n".join(lines) + "\n", starts


class Gen:
    """Seeded randomness plus the text a coding session is made of."""

    def __init__(self, seed: int) -> None:
        self.r = random.Random(seed)
        self._pool, self._starts = self._make_pool(2_000_000)

    # -- ids
    def hex(self, n: int) -> str:
        return f"{self.r.getrandbits(4 * n):0{n}x}"

    def uuid4(self) -> str:
        h = self.hex(32)
        return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{'89ab'[int(h[16], 16) & 3]}{h[17:20]}-{h[20:32]}"

    def uuid7(self, t: float) -> str:
        ms = f"{int(t * 1000):012x}"
        h = self.hex(20)
        return f"{ms[:8]}-{ms[8:12]}-7{h[:3]}-{'89ab'[int(h[3], 16) & 3]}{h[4:7]}-{h[7:19]}"

    def b62(self, n: int) -> str:
        a = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
        return "".join(a[self.r.randrange(62)] for _ in range(n))

    # -- choices
    def pick(self, seq: Any) -> Any:
        return seq[self.r.randrange(len(seq))]

    def chance(self, p: float) -> bool:
        return self.r.random() < p

    def words(self, n: int) -> str:
        return " ".join(self.pick(_WORDS) for _ in range(n))

    def path(self, cwd: str) -> str:
        return f"{cwd}/{self.pick(_DIRS)}/{self.pick(_WORDS)}_{self.pick(_WORDS)}{self.pick(_EXT)}"

    def command(self) -> str:
        return self.pick(_CMDS)

    def title(self) -> str:
        return f"{self.pick(_VERBS)} {self.words(self.r.randint(2, 5))}"

    def prompt(self) -> str:
        """A user's request: mostly a sentence or two, sometimes with code, unicode or several lines."""
        r = self.r
        head = f"{self.pick(_VERBS)} the {self.words(r.randint(1, 3))} in {self.pick(_DIRS)}/{self.pick(_WORDS)}" \
               f"{self.pick(_EXT)}"
        parts = [head]
        if r.random() < 0.5:
            parts.append(f"because `{self.command()}` fails with {self.pick(_ERRORS)}")
        if r.random() < 0.3:
            parts.append(f"and keep the {self.words(r.randint(2, 6))} as it is")
        if r.random() < 0.1:
            parts.append(self.pick(_UNICODE))
        text = " ".join(parts) + "."
        if r.random() < 0.15:
            text += "\n\nContext:\n```\n" + self.output(r.randint(80, 600)).rstrip() + "\n```\nThanks!"
        return text

    def answer(self) -> str:
        return f"I {self.pick(('updated', 'checked', 'fixed', 'rewrote', 'tested'))} the " \
               f"{self.words(self.r.randint(2, 6))}; {self.words(self.r.randint(4, 14))}."

    def output(self, size: int) -> str:
        """`size` characters of tool output (whole lines from a seeded pool)."""
        if size <= 0:
            return ""
        i = self._starts[self.r.randrange(len(self._starts))]
        out = self._pool[i: i + size]
        while len(out) < size:
            out += self._pool[: size - len(out)]
        return out

    def _make_pool(self, n: int) -> tuple[str, list[int]]:
        r = self.r
        lines: list[str] = []
        total = 0
        while total < n:
            k = r.randrange(8)
            if k == 0:
                line = f"{self.pick(_DIRS)}/{self.pick(_WORDS)}{self.pick(_EXT)}:{r.randint(1, 900)}:" \
                       f"{r.randint(1, 80)}: {self.words(r.randint(3, 9))}"
            elif k == 1:
                line = f"{'+' if r.random() < 0.5 else '-'}    {self.pick(_WORDS)}_{self.pick(_WORDS)} = " \
                       f"{self.pick(_WORDS)}({r.randint(0, 99)})"
            elif k == 2:
                line = f"PASSED tests/test_{self.pick(_WORDS)}.py::test_{self.pick(_WORDS)}_{self.pick(_WORDS)}"
            elif k == 3:
                line = f"-rw-r--r--  1 me  staff  {r.randint(10, 99999):>6} Nov {r.randint(1, 28):>2} " \
                       f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d} {self.pick(_WORDS)}{self.pick(_EXT)}"
            elif k == 4:
                line = f"    at {self.pick(_WORDS)}.{self.pick(_WORDS)} ({self.pick(_DIRS)}/{self.pick(_WORDS)}" \
                       f".ts:{r.randint(1, 500)}:{r.randint(1, 60)})"
            elif k == 5:
                line = f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d} INFO " \
                       f"{self.pick(_WORDS)}: {self.words(r.randint(2, 10))}"
            elif k == 6:
                line = "  " * r.randint(0, 4) + f"def {self.pick(_WORDS)}_{self.pick(_WORDS)}(self, " \
                       f"{self.pick(_WORDS)}: str) -> None:"
            else:
                line = self.words(r.randint(4, 16))
            if r.random() < 0.01:
                line += " " + self.pick(_UNICODE)
            lines.append(line)
            total += len(line) + 1
        return joined_lines(lines)

    def tool_size(self) -> int:
        """Tool output sizes: mostly small, a long tail of big ones (test logs, file reads, builds)."""
        x = self.r.random()
        if x < 0.70:
            return self.r.randint(20, 1500)
        if x < 0.93:
            return self.r.randint(1500, 12_000)
        if x < 0.99:
            return self.r.randint(12_000, 80_000)
        return self.r.randint(80_000, 400_000)

    def session_size(self, median: float = 12_000, sigma: float = 1.3, lo: int = 2_000, hi: int = 4_000_000) -> int:
        return int(min(hi, max(lo, self.r.lognormvariate(_ln(median), sigma))))


def rounds(size: int) -> int:
    """Most tool rounds a turn may have: small sessions are short exchanges, not one long turn."""
    return 1 if size < 12_000 else (3 if size < 40_000 else 6)


def _ln(x: float) -> float:
    import math

    return math.log(x)


class Clock:
    """Record times of one session: starts at `t`, moves forward by human/agent-like steps."""

    def __init__(self, g: Gen, t: float) -> None:
        self.g = g
        self.t = t

    def tick(self, lo: float = 0.05, hi: float = 4.0) -> float:
        self.t += self.g.r.uniform(lo, hi)
        return self.t

    def iso(self) -> str:
        return iso(self.t)

    def ms(self) -> int:
        return int(self.t * 1000)


class BlockClock(Clock):
    """Clock of a block template: the date, hour and minute are markers filled in per copy, the seconds
    run from 0 to 59 within one copy."""

    def __init__(self, g: Gen) -> None:
        super().__init__(g, 0.0)

    def tick(self, lo: float = 0.05, hi: float = 4.0) -> float:
        self.t = min(59.999, self.t + self.g.r.uniform(lo, hi) / 8)
        return self.t

    def iso(self) -> str:
        return f"2026-10-{BLOCK_DAY}T{BLOCK_HOUR}:{BLOCK_MIN}:{self.t:06.3f}Z"

    def ms(self) -> int:
        return int(1790000000000 + self.t * 1000)


def write_blocks(f: BinaryIO, template: bytes, nbytes: int, first_index: int = 0) -> int:
    """Write copies of `template` (markers substituted) until at least `nbytes` are written."""
    written, i = 0, first_index
    while written < nbytes:
        m = i
        day, hour, minute = 1 + (m // 1440) % 28, (m // 60) % 24, m % 60
        block = (template.replace(BLOCK_ID.encode(), b"%08x" % i)
                 .replace(BLOCK_DAY.encode(), b"%02d" % day)
                 .replace(BLOCK_HOUR.encode(), b"%02d" % hour)
                 .replace(BLOCK_MIN.encode(), b"%02d" % minute))
        f.write(block)
        written += len(block)
        i += 1
    return written


def encode_dir(cwd: str) -> str:
    """Claude Code's project directory name: every character outside [A-Za-z0-9] becomes '-'."""
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in cwd)


@dataclass
class Corpus:
    """What was generated: every session with the facts a listing must find, and every session file."""

    root: Path
    home: Path
    sessions: list[dict[str, Any]] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    targets: dict[str, dict[str, Any]] = field(default_factory=dict)  # the big sessions briefs are timed on

    def add(self, runtime: str, sid: str, first_request: str, *, parent_id: str | None = None, gen: str = "",
            path: str | os.PathLike[str] | None = None) -> None:
        self.sessions.append({"runtime": runtime, "id": sid, "parent_id": parent_id,
                              "first_request": first_request, "gen": gen,
                              "path": os.fspath(path) if path is not None else None})

    def file(self, path: str | os.PathLike[str]) -> None:
        self.files.append(os.fspath(path))


def set_mtime(path: str | os.PathLike[str], t: float) -> None:
    os.utime(path, ns=(int(t * 1e9), int(t * 1e9)))


@dataclass
class Plan:
    """One session to write: who it is, when, where, and how big."""

    sid: str
    start: float
    cwd: str
    branch: str
    size: int
    gen: str
    big: bool = False
    target: bool = False  # a brief target: its size is exactly the flag's
    children: int = 0
    extra: dict[str, Any] = field(default_factory=dict)


def projects(g: Gen, n: int) -> list[tuple[str, str]]:
    """(cwd, branch) pairs that sessions share, like a user's handful of repositories."""
    out = []
    for i in range(n):
        name = f"{g.pick(_WORDS)}-{g.pick(_WORDS)}{i}"
        base = g.pick(("/home/me/src", "/home/me/work", "/srv/repos", "/home/me/src/github.com/acme"))
        branch = g.pick(("main", "main", "master", "develop", f"feature/{g.pick(_WORDS)}-{g.pick(_WORDS)}",
                         f"fix/{g.pick(_WORDS)}", ""))
        out.append((f"{base}/{name}", branch))
    return out
