"""A value a session's redaction found under a key (`password=…`) is redacted wherever that session shows it bare,
in the search index as in a brief: in later steps, in earlier ones, and after incremental refreshes that keep
the steps already indexed (they are redacted again, unwritten, so that the session's Redactor learns what they
taught). On a copy of the Claude Code store the real runtime wrote, the serial build and the workers alike."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from segue.search import engine
from segue.search import index as I
from tests import store_changes
from tests.test_search import copy_stores, service
from tests.test_search_build import dump

VALUE = "Zq8vLm2pWxQ7"
TEACH = f"Connected to the database with password={VALUE} as you asked."
BARE = f"Then I tried {VALUE} on the zebrafish staging host."


def _reply(root: Path, text: str, n: int) -> None:
    store_changes.append_claude_reply(root, text, n)


def _searched(root: Path, environ: dict[str, str]) -> tuple[Any, Any]:
    svc = service(root, environ)
    return svc.search(VALUE).to_json(), svc.search("zebrafish").to_json()


def _assert_hidden(root: Path, environ: dict[str, str]) -> None:
    bare, near = _searched(root, environ)
    assert bare["total"] == 0, bare
    assert near["total"] == 1 and "[REDACTED:" in near["results"][0]["snippet"], near
    assert not any(VALUE in text for _rowid, text, _k, _c in dump(root)["docs"])


@pytest.fixture(params=["serial", "workers"])
def stores(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
           ) -> tuple[Path, dict[str, str]]:
    if request.param == "workers":
        monkeypatch.setattr(I, "PARALLEL_MIN", 1)  # a few sessions: use the workers anyway
        monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
        monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "2")
    else:
        monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    return tmp_path, copy_stores(tmp_path)


def test_a_value_found_later_is_redacted_where_it_came_first(stores: Any) -> None:
    root, environ = stores
    _reply(root, BARE, 1)
    _reply(root, TEACH, 2)
    _assert_hidden(root, environ)


def test_a_value_found_in_a_kept_step_is_redacted_in_the_steps_added(stores: Any) -> None:
    root, environ = stores
    _reply(root, TEACH, 1)
    _searched(root, environ)  # indexed: the teaching step is kept by the next refresh
    _reply(root, BARE, 2)
    _assert_hidden(root, environ)


def test_a_value_found_in_a_step_added_is_redacted_in_the_kept_ones(stores: Any) -> None:
    root, environ = stores
    _reply(root, BARE, 1)
    first, _near = _searched(root, environ)
    assert first["total"] == 1  # nothing had taught it yet: as a brief of the session then would show it
    _reply(root, TEACH, 2)
    _assert_hidden(root, environ)


def test_the_refreshed_index_is_the_fresh_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env_a, env_b = copy_stores(a), copy_stores(b)
    _reply(a, BARE, 1)
    _searched(a, env_a)
    _reply(a, TEACH, 2)
    _searched(a, env_a)
    _reply(a, BARE.replace("staging", "production"), 3)
    _searched(a, env_a)
    for n, text in ((1, BARE), (2, TEACH), (3, BARE.replace("staging", "production"))):
        _reply(b, text, n)
    _searched(b, env_b)
    docs_a = [row[1:] for row in dump(a)["docs"]]
    docs_b = [row[1:] for row in dump(b)["docs"]]
    assert docs_a == docs_b and any(I.HIDDEN in row[0] and "zebrafish" in row[0] for row in docs_a)
    assert _learned(a) == _learned(b) and any(n is not None for n in _learned(a).values())


def _learned(root: Path) -> dict[tuple[str, str], int | None]:
    import sqlite3

    con = sqlite3.connect(root / "segue" / "cache" / I.FILE_NAME)
    try:
        return {(rt, sid): n for rt, sid, n in con.execute("SELECT runtime, id, learned_at FROM sessions")}
    finally:
        con.close()


def test_the_workers_note_where_the_sessions_learned_as_the_serial_build(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    env_a, env_b = copy_stores(a), copy_stores(b)
    for root in (a, b):
        _reply(root, BARE, 1)
        _reply(root, TEACH, 2)
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    _searched(a, env_a)
    monkeypatch.setattr(I, "PARALLEL_MIN", 1)
    monkeypatch.setattr(I, "PARALLEL_WORK_MS", 0.0)
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "2")
    _searched(b, env_b)
    assert _learned(a) == _learned(b)
    assert sum(n is not None for n in _learned(a).values()) >= 2  # the secret scenario's session, and this one


_REAL = engine.SessionRedaction


class _Blind:
    """The session's redaction as a plain function was: the index cannot ask it for the values it found."""

    def __init__(self, redactor: Any) -> None:
        self._inner = _REAL(redactor)

    @property
    def memory(self) -> None:
        return None

    @memory.setter
    def memory(self, value: Any) -> None:
        self._inner.memory = value

    def __call__(self, text: str, cap: int) -> str:
        return self._inner(text, cap)


def test_the_control_without_the_session_memory_the_value_shows(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The kept step teaches nothing and no row is checked again: what the tests above would catch."""
    monkeypatch.setenv("SEGUE_SEARCH_WORKERS", "0")
    monkeypatch.setattr(engine, "SessionRedaction", _Blind)
    environ = copy_stores(tmp_path)
    _reply(tmp_path, TEACH, 1)
    _searched(tmp_path, environ)
    _reply(tmp_path, BARE, 2)
    bare, _near = _searched(tmp_path, environ)
    assert bare["total"] == 1
