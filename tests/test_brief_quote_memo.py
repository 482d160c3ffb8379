"""A brief quotes each repeated piece (the same command run hundreds of times) once, while its redactor has
learned nothing new (`brief._Quoter`'s memory). The facts must be exactly those of quoting every piece again
(`memo=False`, what `SEGUE_FAST_PATHS=0` gives), on every store the reader contract knows and on pieces that
teach the redactor a value between two repeats."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from segue import brief
from segue.brief import build_facts
from segue.listing import reader_for
from segue.model import ReadStats, Session, Step
from segue.redact import Redactor
from segue.stores.base import Env
from tests.test_reader_contract import STORES, _tree

SESSION = Session(runtime="claude", id="s", store_path="/nowhere")
SECRET = "Zq7vR2mK9pXw4LtB"


def all_facts(name: str, memo: bool, factory: pytest.TempPathFactory) -> dict[str, Any]:
    runtimes, _ = STORES[name]
    store = _tree(name, "", factory)
    env = Env(home=store.root / store.home, environ={k: str(store.root / v) for k, v in store.environ.items()})
    out: dict[str, Any] = {}
    for rt in runtimes:
        reader = reader_for(rt, env)
        for src in reader.sources():
            try:
                sessions = reader.summarize(src)
            except OSError:
                continue
            for s in sessions:
                stats = ReadStats()
                facts = build_facts(s, reader.steps(s, stats), stats, Redactor(environ={}), memo=memo)
                out[f"{rt}:{s.id}:{os.path.relpath(s.store_path, store.root)}"] = facts.to_json()
    return out


@pytest.mark.parametrize("name", sorted(STORES))
def test_the_memory_gives_the_facts_of_quoting_every_piece(name: str,
                                                           tmp_path_factory: pytest.TempPathFactory) -> None:
    want = all_facts(name, False, tmp_path_factory)
    assert want, f"no session in {name}"
    assert all_facts(name, True, tmp_path_factory) == want


def _facts(steps: list[Step], memo: bool) -> dict[str, Any]:
    return build_facts(SESSION, iter(steps), ReadStats(), Redactor(environ={}), memo=memo).to_json()


def test_a_value_learned_between_two_repeats_is_redacted_in_both() -> None:
    steps = [Step("command", f"deploy --as {SECRET}", 1.0), Step("request", f"the password={SECRET} now", 2.0),
             Step("command", f"deploy --as {SECRET}", 3.0), Step("command", f"deploy --as {SECRET}", 4.0)]
    got = _facts(steps, True)
    assert got == _facts(steps, False)
    assert SECRET not in str(got)


def test_repeats_are_served_from_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Positive control: the memory does answer repeats (else the equality above proves nothing)."""
    calls = {"n": 0}
    real = Redactor.excerpt

    def counting(self: Redactor, *a: Any, **k: Any) -> Any:
        calls["n"] += 1
        return real(self, *a, **k)

    monkeypatch.setattr(Redactor, "excerpt", counting)
    steps = [Step("command", "git status --short", float(i)) for i in range(500)]
    _facts(steps, False)
    without = calls["n"]
    calls["n"] = 0
    got = _facts(steps, True)
    assert calls["n"] < without - 400
    assert [c["command"] for c in got["commands"]] == ["git status --short"] * 500


def test_a_memory_that_ignored_the_cap_would_be_caught(monkeypatch: pytest.MonkeyPatch) -> None:
    """Negative control: a memory keyed on the text alone serves a piece cut for one place (the header's
    title, 300 characters) where another cut is due (its first request, whole): the comparison catches it."""
    words = " ".join(f"word{i}" for i in range(200))
    session = Session(runtime="claude", id="s", store_path="/nowhere", title=words, first_request=words)

    class TextOnly(brief._Quoter):
        def __call__(self, text: str | None, cap: int, keep: str = "head") -> str | None:
            if text is None:
                return None
            if text in self.memo:
                return self.memo[text][0]  # type: ignore[index]
            shown = super().__call__(text, cap, keep)
            self.memo[text] = (shown or "", 0, 0)  # type: ignore[index]
            return shown

    def facts() -> dict[str, Any]:
        return build_facts(session, iter([]), ReadStats(), Redactor(environ={})).to_json()

    want = facts()
    monkeypatch.setattr(brief, "_Quoter", TextOnly)
    assert facts() != want


def test_fast_paths_off_turns_the_memory_off(tmp_path: Path) -> None:
    from segue.paths import StateDir
    from segue.service import Service

    seen: list[bool] = []
    real = brief.build_facts

    def spy(*a: Any, **k: Any) -> Any:
        seen.append(k.get("memo", True))
        return real(*a, **k)

    home = tmp_path / "home"
    t = home / ".claude" / "projects" / "-w"
    t.mkdir(parents=True)
    (t / "0b6a7f1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b.jsonl").write_text(
        '{"type":"user","sessionId":"0b6a7f1e-1c2d-4e5f-8a9b-0c1d2e3f4a5b","cwd":"/w",'
        '"timestamp":"2026-01-01T00:00:00.000Z","uuid":"u1","message":{"role":"user","content":"hello there"}}\n')
    for value, want in (("0", False), ("1", True)):
        svc = Service(StateDir(tmp_path / f"state{value}"), Env(home=home, environ={"SEGUE_FAST_PATHS": value}))
        session, _ = svc.find("claude:0b6a7f1e")
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(brief, "build_facts", spy)
            svc.facts(session)
        assert seen[-1] is want
