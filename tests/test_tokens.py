"""Handoff tokens: shape, lifetime, single use, storage, and races across processes."""

from __future__ import annotations

import contextlib
import json
import multiprocessing as mp
import os
import stat
import time
from pathlib import Path
from typing import Any

import pytest

from segue.paths import StateDir
from segue.tokens import GRACE, TTL, Registry, TokenError, digest, new_token


class Clock:
    def __init__(self, t: float = 1_800_000_000.0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def emit(reg: Registry, sid: str = "s1", runtime: str = "codex") -> str:
    token, _ = reg.emit(runtime=runtime, session_id=sid, surface="terminal", cwd="/w", title="t", brief_path=None)
    return token


def test_token_shape() -> None:
    for _ in range(200):
        t = new_token()
        assert len(t) == 34 and t.startswith("h_") and not t.startswith("-")
        assert all(c.isalnum() or c in "_-" for c in t)


def test_round_trip_and_single_use(tmp_path: Path) -> None:
    reg = Registry(StateDir(tmp_path / "s"))
    token = emit(reg)
    entry = reg.claim(token, "editor")
    assert (entry["runtime"], entry["session_id"], entry["surface"], entry["claimed_as"]) == (
        "codex", "s1", "terminal", "editor")
    with pytest.raises(TokenError) as e:
        reg.claim(token, "editor")
    assert e.value.reason == "claimed"


@pytest.mark.parametrize("bad", ["", "h_", "abc", "h_has space", "h_bad!chars", "-h_x",
                                 "0123456789abcdef0123456789abcdef", "Zm9vYmFyYmF6cXV4MTIzNDU2Nzg5MGFiY2Rl"])
def test_malformed_and_old_shapes_fail_closed(tmp_path: Path, bad: str) -> None:
    reg = Registry(StateDir(tmp_path / "s"))
    emit(reg)
    with pytest.raises(TokenError) as e:
        reg.claim(bad, "editor")
    assert e.value.reason == "malformed"
    assert "emit" in str(e.value)


def test_unknown_token(tmp_path: Path) -> None:
    reg = Registry(StateDir(tmp_path / "s"))
    emit(reg)
    with pytest.raises(TokenError) as e:
        reg.claim(new_token(), "editor")
    assert e.value.reason == "unknown"


def test_expiry_with_a_controlled_clock(tmp_path: Path) -> None:
    clock = Clock()
    reg = Registry(StateDir(tmp_path / "s"), clock=clock)
    token = emit(reg)
    clock.t += TTL - 0.5
    assert [r["seconds_left"] for r in reg.status()] == [pytest.approx(0.5)]
    clock.t += 1.0
    with pytest.raises(TokenError) as e:
        reg.claim(token, "editor")
    assert e.value.reason == "expired"


def test_future_dated_entry_is_refused(tmp_path: Path) -> None:
    clock = Clock()
    reg = Registry(StateDir(tmp_path / "s"), clock=clock)
    token = emit(reg)
    clock.t -= 60  # the clock stepped back a minute: the entry now looks issued in the future
    with pytest.raises(TokenError) as e:
        reg.claim(token, "editor")
    assert e.value.reason == "expired"


def test_status_time_left_is_computed_from_now(tmp_path: Path) -> None:
    clock = Clock()
    reg = Registry(StateDir(tmp_path / "s"), clock=clock)
    token = emit(reg)
    for elapsed in (0, 10, 120, 299):
        clock.t = 1_800_000_000.0 + elapsed
        rows = reg.status()
        assert len(rows) == 1
        assert rows[0]["seconds_left"] == pytest.approx(TTL - elapsed)
        assert rows[0]["claimed"] is False
    reg.claim(token, "editor")
    assert reg.status()[0]["claimed"] is True
    clock.t = 1_800_000_000.0 + TTL
    assert reg.status() == []
    assert token not in json.dumps(reg.status())


def test_reemit_revokes_the_earlier_token(tmp_path: Path) -> None:
    reg = Registry(StateDir(tmp_path / "s"))
    first = emit(reg)
    second = emit(reg)
    with pytest.raises(TokenError) as e:
        reg.claim(first, "editor")
    assert e.value.reason == "revoked"
    assert reg.claim(second, "editor")["session_id"] == "s1"


def test_sweep_on_load_keeps_tombstones_until_grace(tmp_path: Path) -> None:
    clock = Clock()
    state = StateDir(tmp_path / "s")
    reg = Registry(state, clock=clock)
    token = emit(reg, "old")
    reg.claim(token, "editor")
    clock.t += TTL + 10
    emit(reg, "new")  # a load inside the lock sweeps; the tombstone is still within GRACE
    data = json.loads(state.tokens_file.read_text())
    assert digest(token) in data["tokens"]
    with pytest.raises(TokenError) as e:
        reg.claim(token, "editor")
    assert e.value.reason == "claimed"  # a replay is detected, not "unknown"
    clock.t += GRACE + TTL + 1
    emit(reg, "newer")
    data = json.loads(state.tokens_file.read_text())
    assert digest(token) not in data["tokens"]
    assert len(data["tokens"]) == 1  # only "newer": "new" expired past its grace too


def test_registry_stores_digests_only_with_private_modes(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    reg = Registry(state)
    token = emit(reg)
    raw = state.tokens_file.read_bytes()
    assert token.encode() not in raw and token[2:].encode() not in raw
    assert digest(token).encode() in raw
    assert stat.S_IMODE(os.stat(state.root).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(state.tokens_file).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(state.tokens_lock).st_mode) & 0o077 == 0


def test_corrupt_registry_is_set_aside(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    state.ensure()
    state.tokens_file.write_text("{not json")
    os.chmod(state.tokens_file, 0o600)
    warnings: list[str] = []
    reg = Registry(state, warn=warnings.append)
    token = emit(reg)
    assert reg.claim(token, "editor")
    assert warnings and "damaged" in warnings[0]
    aside = list(state.root.glob("handoff_tokens.corrupt-*.json"))
    assert len(aside) == 1 and aside[0].read_text() == "{not json"


def test_registry_symlink_is_not_followed(tmp_path: Path) -> None:
    state = StateDir(tmp_path / "s")
    state.ensure()
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"version": 1, "tokens": {}}))
    os.symlink(target, state.tokens_file)
    reg = Registry(state, warn=lambda m: None)
    token = emit(reg)  # the symlink is set aside as damage; the target is never written
    assert json.loads(target.read_text()) == {"version": 1, "tokens": {}}
    assert not state.tokens_file.is_symlink()
    assert reg.claim(token, "editor")


# ---------------------------------------------------------------------------------------------------------
# Races across processes


class SlowRegistry(Registry):
    """Widens the read-check-write window the same way for both variants, so a missing lock shows."""

    lock_timeout = 120.0  # fifty processes queue for the lock; a loaded machine must not time them out

    def _load(self) -> dict[str, Any]:
        reg = super()._load()
        time.sleep(0.02)
        return reg


class UnlockedRegistry(SlowRegistry):
    def _locked(self) -> Any:
        return contextlib.nullcontext()


def _claimer(root: str, token: str, locked: bool, barrier: Any, out: Any) -> None:
    cls = SlowRegistry if locked else UnlockedRegistry
    reg = cls(StateDir(Path(root)))
    barrier.wait()
    try:
        reg.claim(token, "editor")
        out.put("ok")
    except TokenError as e:
        out.put(e.reason)
    except Exception as e:  # pragma: no cover - reported in the assertion
        out.put(f"error {type(e).__name__}: {e}")


def _race_claims(root: Path, token: str, locked: bool, n: int = 50) -> list[str]:
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(n)
    out = ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(str(root), token, locked, barrier, out)) for _ in range(n)]
    for p in procs:
        p.start()
    results = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return results


@pytest.mark.slow
def test_fifty_processes_claim_one_token_exactly_one_wins(tmp_path: Path) -> None:
    root = tmp_path / "s"
    token = emit(Registry(StateDir(root)))
    results = _race_claims(root, token, locked=True)
    assert results.count("ok") == 1, results
    assert results.count("claimed") == 49, results


@pytest.mark.slow
def test_negative_control_without_the_lock_double_claims(tmp_path: Path) -> None:
    root = tmp_path / "s"
    token = emit(Registry(StateDir(root)))
    results = _race_claims(root, token, locked=False)
    assert results.count("ok") > 1, "the race harness could not show a double claim without the lock"


def _emitter(root: str, sid: str, barrier: Any, out: Any) -> None:
    reg = SlowRegistry(StateDir(Path(root)))
    barrier.wait()
    token, _ = reg.emit(runtime="claude", session_id=sid, surface="terminal", cwd=None, title=None,
                        brief_path=None)
    out.put(token)


def _race_emits(root: Path, sids: list[str]) -> list[str]:
    ctx = mp.get_context("fork")
    barrier = ctx.Barrier(len(sids))
    out = ctx.Queue()
    procs = [ctx.Process(target=_emitter, args=(str(root), sid, barrier, out)) for sid in sids]
    for p in procs:
        p.start()
    tokens = [out.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=30)
    return tokens


@pytest.mark.slow
def test_fifty_concurrent_emits_for_fifty_sessions_lose_none(tmp_path: Path) -> None:
    root = tmp_path / "s"
    tokens = _race_emits(root, [f"s{i}" for i in range(50)])
    reg = Registry(StateDir(root))
    claimed = {reg.claim(t, "editor")["session_id"] for t in tokens}
    assert claimed == {f"s{i}" for i in range(50)}


@pytest.mark.slow
def test_concurrent_emits_for_one_session_leave_one_live_token(tmp_path: Path) -> None:
    root = tmp_path / "s"
    tokens = _race_emits(root, ["same"] * 20)
    reg = Registry(StateDir(root))
    verdicts = []
    for t in tokens:
        try:
            reg.claim(t, "editor")
            verdicts.append("ok")
        except TokenError as e:
            verdicts.append(e.reason)
    assert verdicts.count("ok") == 1 and verdicts.count("revoked") == 19, verdicts
