"""The write side of the search index build: its shortcuts give exactly what the plain path gives.

- `index.cleaned` skips quote.clean only on an exact gate: the same text on every control character,
  escape sequence, line end and NUL, alone and mixed into ordinary text.
- `build.Distinct` (each distinct text redacted once per worker) gives every session the redaction the
  plain path gives it, found values (one memory per session) and exact values included; a naive memo
  that forgets the session's memory gives a different index on the same input (so the input exercises it).
- A build that fails in the middle of writing leaves whole sessions only (no savepoint per session: the
  transaction since the last commit is rolled back) and the next build completes the index.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest

from segue.model import Session, Step
from segue.paths import StateDir
from segue.quote import clean
from segue.redact import Redactor
from segue.search import build as B
from segue.search import index as I
from segue.search.build import Distinct, Prepared, shown_fields
from segue.search.index import SearchIndex

CONTROLS = [chr(c) for c in range(0x00, 0xA1)] + ["\r\n", "\x1b[31m", "\x1b]0;title\x07", "\x1b]52;c;ZXZpbA==\x1b\\",
                                                  "\x9b1m", "\x90dcs\x9c", "\x1bP", "\x1b(B", "\x7f"]
PLAIN = ["git status", "make test", "ünïcødé 日本 ✓", "tab\there", "line\nnext", "  ", "\u2028", "\ufffd", "é"]


def _two_part_hash(step: Step) -> bytes:
    """The step hash as it was first written (two updates): stored hashes must stay comparable."""
    h = I.blake2b(digest_size=8)
    h.update(f"{step.kind}\0{step.exit_code}\0{step.path}\0".encode("utf-8", "surrogatepass"))
    h.update(step.text.encode("utf-8", "surrogatepass"))
    return h.digest()


def test_step_hash_is_the_two_part_hash() -> None:
    rng = random.Random(7)
    alphabet = ["a", " ", "\0", "\n", "é", "\u2591", "\U0001f600", "\ud83d", "\ude00", "\udfff", "\x1b"]
    steps = [Step("command", text="", path=None, exit_code=None), Step("edit", text="x", path="\ud83d", exit_code=0)]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 12)))
        path = rng.choice([None, "", "/a/\ude00", text[:3]])
        steps.append(Step(rng.choice(["request", "message", "command", "edit", "tool"]), text=text, path=path,
                          exit_code=rng.choice([None, 0, 1, -9])))
    for step in steps:
        assert I._hash(step) == _two_part_hash(step)
    # negative control: a hash without the separator after the path differs
    moved = Step("command", text="b", path="a", exit_code=None)
    assert I._hash(moved) != I._hash(Step("command", text="", path="ab", exit_code=None))


def test_cleaned_is_clean_on_every_character_it_acts_on() -> None:
    rng = random.Random(17)
    texts = [*CONTROLS, *PLAIN, *(p + c + p for c in CONTROLS for p in ("a", "word "))]
    for _ in range(3000):
        texts.append("".join(rng.choice(CONTROLS + PLAIN) for _ in range(rng.randint(1, 12))))
    gated = 0
    for t in texts:
        assert I.cleaned(t) == clean(t), repr(t)
        gated += I._UNCLEAN_RE.search(t) is None
    assert gated > 100  # the gate skipped clean() on many of them (and was still right)


def test_cleaned_can_be_switched_off(monkeypatch: pytest.MonkeyPatch) -> None:
    called: list[str] = []
    monkeypatch.setattr(I, "clean", lambda t: called.append(t) or clean(t))
    assert I.cleaned("git status") == "git status" and not called
    monkeypatch.setattr(I, "_FAST_CLEAN", False)
    assert I.cleaned("git status") == "git status" and called == ["git status"]


def test_safe_text_replaces_exactly_the_lone_surrogates() -> None:
    rng = random.Random(5)
    alphabet = ["a", " ", "\ud800", "\udcff", "\U0001f600", "é", "日", "\x00", "\x7f", "\uffff"]
    for _ in range(2000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert I.safe_text(t) == t.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


# -- redacting each distinct text once ---------------------------------------------------------------------------

FOUND = "Tr0ub4dor&3xQ"  # found under a key in one text, bare in later ones (learned: a per-session memory)
EXACT = "exactvalue-8f2a91c4d7"  # an exact value (from the environment)
CLEAN = ["git status", "make test", "cd /work/app && npm test", "ls -la", "pytest -q", "/work/app/src/main.py",
         "the parser failed on line 3", "a" * 8200, "x" * 4100, "\x1b[31mred\x1b[0m text", "  ", "ok"]
SECRETS = [
    f"password: {FOUND}", f"try again with {FOUND} please", f"echo {FOUND}",
    "export GITHUB_TOKEN=ghp_R8tX2mK9pL4vQ7wE1zY6uB3nC5aD0fG2hJ4k", f"curl -H 'X-Key: {EXACT}' https://x",
    f"value {EXACT} again", "postgres://admin:hunter2hunter2@db.internal:5432/app", "AKIAIOSFODNN7EXAMPLE",
    "b " * 2100 + f"password={FOUND}",
    "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA1c7+9z5Pad7OejecsQ0bu\n-----END RSA PRIVATE KEY-----",
]
TEXTS = CLEAN * 6 + SECRETS  # mostly clean, as sessions are
KINDS = ["request", "message", "command", "edit"]


def _sessions(seed: int, n: int = 40) -> list[tuple[Session, list[Step]]]:
    rng = random.Random(seed)
    out = []
    for k in range(n):
        steps = []
        for _ in range(rng.randint(0, 14)):
            kind, text = rng.choice(KINDS), rng.choice(TEXTS)
            steps.append(Step(kind=kind, path=text, exit_code=rng.choice([None, 0, 1]))
                         if kind == "edit" else Step(kind=kind, text=text, exit_code=rng.choice([None, 0, 2])))
        out.append((Session(runtime="claude", id=f"s{k}", store_path=f"/x/{k}", title=rng.choice([None, *TEXTS]),
                            first_request=rng.choice([None, *TEXTS]),
                            cwd=rng.choice([None, "/work/app", f"/w/{EXACT}"]),
                            updated_at=1.0), steps))
    return out


def _plain(red: Redactor, sessions: list[tuple[Session, list[Step]]]) -> list[Any]:
    out = []
    for s, steps in sessions:
        scoped = red.scoped()

        def redact(t: str, cap: int, scoped: Redactor = scoped) -> str:
            return scoped.excerpt(t, cap)[0]

        out.append(B.prepare(s, b"", steps, redact))
    return out


def _distinct(d: Distinct, sessions: list[tuple[Session, list[Step]]]) -> list[Any]:
    out = []
    for s, steps in sessions:
        one = d.session()
        out.append(B.prepare(s, b"", steps, one.redact, text_of=one.text_of))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("budget", [B.MEMO_CHARS, 40])  # 40: the memory starts over again and again
def test_distinct_texts_redacted_once_give_the_plain_redaction(seed: int, budget: int,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    red = Redactor(environ={"MY_API_TOKEN": EXACT})
    sessions = _sessions(seed)
    computed: list[int] = []
    asked: list[int] = []
    real, text_of, redact = B._Session._plain, B._Session.text_of, B._Session.redact

    def counted(self: Any, text: str, cap: int) -> str:
        computed.append(1)
        return real(self, text, cap)

    def asked_text(self: Any, *args: Any) -> Any:  # what is asked, remembered or not
        asked.append(1)
        return text_of(self, *args)

    def asked_redact(self: Any, *args: Any) -> Any:
        asked.append(1)
        return redact(self, *args)

    expected = _plain(red, sessions)
    monkeypatch.setattr(B._Session, "_plain", counted)
    monkeypatch.setattr(B._Session, "text_of", asked_text)
    monkeypatch.setattr(B._Session, "redact", asked_redact)
    got = _distinct(Distinct(red, budget=budget), sessions)
    assert got == expected
    rows = [r[1] for p in expected for r in p.rows]
    assert EXACT not in str(expected) and any(I.HIDDEN in r for r in rows)  # secrets were met and redacted
    assert any(FOUND in r for r in rows)  # bare in a session that has not found it, redacted in one that has
    if budget == B.MEMO_CHARS:
        assert len(computed) < len(asked) * 0.8  # it did remember


def test_a_memo_that_ignores_the_sessions_memory_would_differ() -> None:
    """The negative control: remembering results whatever the session has found changes the index here."""
    red = Redactor(environ={})
    sessions = [
        (Session(runtime="claude", id="a", store_path="/a", updated_at=1.0),
         [Step(kind="command", text=f"echo {FOUND}")]),  # nothing found yet: stays as it is
        (Session(runtime="claude", id="b", store_path="/b", updated_at=1.0),
         [Step(kind="request", text=f"password: {FOUND}"), Step(kind="command", text=f"echo {FOUND}")]),
    ]
    expected = _plain(red, sessions)
    assert FOUND in expected[0].rows[0][1] and FOUND not in str(expected[1].rows)  # learned in b only
    naive: dict[Any, Any] = {}
    out = []
    for s, steps in sessions:
        scoped = red.scoped()

        def redact(t: str, cap: int, scoped: Redactor = scoped) -> str:
            return scoped.excerpt(t, cap)[0]

        def text_of(kind: str, text: str, redact: Any = redact) -> Any:
            if (kind, text) not in naive:
                naive[(kind, text)] = I.indexed_text(kind, text, redact)
            return naive[(kind, text)]

        out.append(B.prepare(s, b"", steps, redact, text_of=text_of))
    assert out != expected
    assert _distinct(Distinct(red), sessions) == expected


def test_shown_fields_through_distinct() -> None:
    red = Redactor(environ={"MY_SECRET": EXACT})
    d = Distinct(red)
    for s, _ in _sessions(9, 40):
        scoped = red.scoped()
        assert shown_fields(s, d.session().redact) == shown_fields(
            s, lambda t, c, scoped=scoped: scoped.excerpt(t, c)[0])


# -- failures while writing ---------------------------------------------------------------------------------------

def _index(tmp_path: Path) -> SearchIndex:
    state = StateDir(tmp_path / "s")
    return SearchIndex(state.private(state.cache))


def _prepared(i: int, bad: bool = False) -> Prepared:
    text = "beta \ud800" if bad else "beta"  # a lone surrogate: SQLite refuses it, after the first row went in
    return Prepared(hashes=b"\0" * 16, steps=2, diverged=0,
                    rows=[(0, f"alpha word{i}", "request", None), (1, text, "command", 0)], title=f"t{i}")


def _whole(idx: SearchIndex) -> tuple[int, int]:
    con = idx.connection()
    n = con.execute("SELECT count(*) FROM sessions").fetchone()[0]
    per = dict(con.execute("SELECT rowid >> 24, count(*) FROM docs GROUP BY 1").fetchall())
    sids = [r[0] for r in con.execute("SELECT sid FROM sessions")]
    assert sorted(per) == sorted(sids) and all(per[s] == 2 for s in sids)  # every session whole, no stray rows
    return n, sum(per.values())


def test_a_failure_while_writing_leaves_whole_sessions_and_the_next_build_completes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    monkeypatch.setattr(I, "BATCH_ROWS", 4)  # a batch of two sessions
    monkeypatch.setattr(I, "COMMIT_EVERY", -1.0)  # a commit after every session
    idx = _index(tmp_path)
    sessions = [Session(runtime="codex", id=f"x{i}", store_path=f"/none/{i}", updated_at=float(i)) for i in range(6)]

    def parallel(bad: int | None) -> Any:
        def run(tasks: Any) -> Any:
            for pos, s, _old, _mark in tasks:
                yield pos, _prepared(pos, bad == int(s.id[1:]))
        return run

    with idx.write_lock(), pytest.raises(UnicodeEncodeError):
        idx.refresh(sessions, None, None, {}, parallel=parallel(3))  # type: ignore[arg-type]
    n, _ = _whole(idx)
    assert 0 < n < 6  # what was committed before the failure is kept, whole
    with idx.write_lock():
        idx.refresh(sessions, None, None, {}, parallel=parallel(None))  # type: ignore[arg-type]
    assert _whole(idx) == (6, 12)
    assert sorted(h.id for h in idx.hits('"alpha"')) == [f"x{i}" for i in range(6)]


def test_a_build_cancelled_between_sessions_keeps_every_session_written(tmp_path: Path) -> None:
    from segue.search import Cancelled

    idx = _index(tmp_path)
    sessions = [Session(runtime="codex", id=f"x{i}", store_path=f"/none/{i}", updated_at=float(i)) for i in range(5)]

    def steps(_s: Any, _st: Any) -> Any:
        yield Step(kind="request", text="alpha one")
        yield Step(kind="command", text="beta", exit_code=0)

    seen: list[int] = []
    with idx.write_lock(), pytest.raises(Cancelled):
        idx.refresh(sessions, steps, lambda t, cap: t, {}, progress=lambda n, _t: seen.append(n),
                    cancelled=lambda: len(seen) >= 3)
    assert _whole(idx) == (3, 6)


# -- the order rows reach FTS5 ------------------------------------------------------------------------------------

def test_new_sessions_rows_reach_fts5_in_rowid_order_when_workers_answer_out_of_order(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """FTS5 writes a new segment whenever a rowid is lower than the one before it, so each batch of new sessions'
    rows goes in sorted, whatever order the workers answered in; the index holds every row either way."""
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    monkeypatch.setattr(I, "BATCH_ROWS", 10)  # five sessions per batch: several batches
    calls: list[list[int]] = []
    insert = I._insert

    def recorded(con: Any, rows: Any) -> None:
        calls.append([r[0] for r in rows])
        insert(con, rows)

    monkeypatch.setattr(I, "_insert", recorded)
    idx = _index(tmp_path)
    sessions = [Session(runtime="codex", id=f"x{i}", store_path=f"/none/{i}", updated_at=float(i)) for i in range(23)]
    shuffled = random.Random(7)

    def parallel(tasks: Any) -> Any:
        got = list(tasks)
        shuffled.shuffle(got)  # answers in any order, as two workers give them
        for pos, _s, _old, _mark in got:
            yield pos, _prepared(pos)

    with idx.write_lock():
        idx.refresh(sessions, None, None, {}, parallel=parallel)  # type: ignore[arg-type]
    assert len(calls) >= 3 and all(c == sorted(c) for c in calls)
    assert sorted(r for c in calls for r in c) == sorted(
        r[0] for r in idx.connection().execute("SELECT rowid FROM docs"))
    assert _whole(idx) == (23, 46)


# -- the recency table ---------------------------------------------------------------------------------------------

def _recency_matches(idx: SearchIndex) -> bool:
    con = idx.connection()
    return (con.execute("SELECT sid, updated_at FROM recency ORDER BY sid").fetchall()
            == con.execute("SELECT sid, updated_at FROM sessions ORDER BY sid").fetchall())


def test_a_parallel_build_writes_each_new_sessions_recency_row_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No trigger inserts `recency` rows (schema 10): `_Batch` writes them with the sessions, in batches, and the
    update and delete triggers keep them right when sessions move or go. Control: a batch that leaves them out is
    caught."""
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    monkeypatch.setattr(I, "BATCH_ROWS", 6)  # three sessions a batch: several batches

    def parallel(tasks: Any) -> Any:
        for pos, _s, _old, _mark in tasks:
            yield pos, _prepared(pos)

    def listed(n: int, shift: float) -> list[Session]:
        return [Session(runtime="codex", id=f"x{i}", store_path=f"/none/{i}",
                        updated_at=None if i % 7 == 0 else float(i) + (shift if i % 3 == 0 else 0.0))
                for i in range(n)]

    idx = _index(tmp_path)
    for sessions in (listed(17, 0.0), listed(23, 50.0)[5:]):  # then 5 gone, 6 new, a third moved
        with idx.write_lock():
            idx.refresh(sessions, None, None, {}, parallel=parallel)  # type: ignore[arg-type]
        assert _recency_matches(idx)
        assert idx.connection().execute("SELECT count(*) FROM recency").fetchone()[0] == len(sessions)

    def without_recency(con: Any, sessions: Any) -> None:
        con.executemany(I._INSERT_SESSION, sessions)

    monkeypatch.setattr(I, "_new_sessions", without_recency)
    other = SearchIndex(StateDir(tmp_path / "t").private(StateDir(tmp_path / "t").cache))
    with other.write_lock():
        other.refresh(listed(9, 0.0), None, None, {}, parallel=parallel)  # type: ignore[arg-type]
    assert not _recency_matches(other)
