"""Codex summaries: which model a session shows, the same with fast paths on and off.

A rollout names models in two records: `turn_context.model` (the model a turn ran with, one per turn) and,
since 0.171, `event_msg` `thread_settings_applied{thread_settings.model}` (the thread's settings, written at
the start, on a resume and on a `/model` change; 0.171 writes it right after the first turn's context). The
session's model is the last turn context's; a settings record's only when no turn context names one.

The fast head path once kept a settings line as "the last turn context" while the reference decode dropped
settings records, so a settings record after the last turn context of the head gave another model with fast
paths on (93 of the 1,600 Codex sessions of the n1600 benchmark corpus). Each shape below is read as written
and in every serialization variant of the reader contract, with fast paths on and off.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from segue.stores.base import HEAD_BYTES, TAIL_BYTES, Env
from segue.stores.codex.reader import CodexReader
from tests.test_reader_contract import VARIANTS, rewrite_jsonl
from tests.test_store_codex import W, rel_for, uid, unified

TURN_MODEL = "gpt-5"
SETTINGS_MODEL = "gpt-5.1-codex-max"
BIG = HEAD_BYTES + TAIL_BYTES + 16 * 1024  # a middle neither the head nor the tail reads


def _settings(w: W, model: str) -> None:
    w.event({"type": "thread_settings_applied", "thread_id": "th",
             "thread_settings": {"model": model, "cwd": "/w/one"}})


def _head(w: W, *, turn: str | None, settings: str | None) -> None:
    """The corpus's first turn: task_started, developer text, environment context, then (0.171's order) the
    turn context and the thread settings, then the request."""
    w.event({"type": "task_started", "turn_id": "t1"})
    w.item({"type": "message", "id": "msg_1", "role": "developer",
            "content": [{"type": "input_text", "text": "<skills_instructions>rules</skills_instructions>"}]})
    w.item({"type": "message", "role": "user", "content": [
        {"type": "input_text", "text": "<environment_context>\n  <cwd>/w/one</cwd>\n</environment_context>"}]})
    if turn is not None:
        w.turn("/w/one", turn)
    if settings is not None:
        _settings(w, settings)
    w.item({"type": "message", "id": "msg_2", "role": "user",
            "content": [{"type": "input_text", "text": "Please run the tests"}]})
    w.event({"type": "item_completed", "item": {"type": "UserMessage", "id": "u1",
                                                "content": [{"type": "text", "text": "Please run the tests"}]}})


def _work(w: W, size: int) -> None:
    w.exec("c1", "make test", unified(1, ("FAIL tests/test_api.py::test_login\n" * (size // 34 + 1))[:size]))
    w.agent_x5("Tests fail.")
    w.done("Tests fail.")


def _shape(name: str, sid: str) -> tuple[W, str | None]:
    """A rollout of the named shape and the model its summary must show."""
    w = W(sid, ordinal=True)
    if name == "settings_after_turn_in_head":  # the shape that diverged on the corpus
        _head(w, turn=TURN_MODEL, settings=SETTINGS_MODEL)
        _work(w, BIG)
        return w, TURN_MODEL
    if name == "settings_after_turn_whole_file":  # small: the tail scan reads the whole file
        _head(w, turn=TURN_MODEL, settings=SETTINGS_MODEL)
        _work(w, 2000)
        return w, TURN_MODEL
    if name == "settings_only_in_head":  # no turn context anywhere read: the settings name the model
        _head(w, turn=None, settings=SETTINGS_MODEL)
        _work(w, BIG)
        return w, SETTINGS_MODEL
    if name == "settings_only_in_tail":  # a /model change after the last turn: no turn ran with it yet
        _head(w, turn=TURN_MODEL, settings=None)
        _work(w, BIG)
        _settings(w, SETTINGS_MODEL)
        return w, TURN_MODEL
    if name == "model_changed_mid_session":  # a resume with another model: its turn context is the last
        _head(w, turn=TURN_MODEL, settings=TURN_MODEL)
        _work(w, BIG)
        _settings(w, SETTINGS_MODEL)
        w.user_x5("now fix them", model=SETTINGS_MODEL)
        w.agent_x5("Fixed.")
        w.done("Fixed.")
        return w, SETTINGS_MODEL
    if name == "no_model_at_all":
        _head(w, turn=None, settings=None)
        _work(w, BIG)
        return w, None
    raise AssertionError(name)


SHAPES = ("settings_after_turn_in_head", "settings_after_turn_whole_file", "settings_only_in_head",
          "settings_only_in_tail", "model_changed_mid_session", "no_model_at_all")


def _summary(tmp: Path, fast: bool) -> dict[str, Any]:
    env = Env(home=tmp / "home", environ={"CODEX_HOME": str(tmp / "codex"),
                                          **({} if fast else {"SEGUE_FAST_PATHS": "0"})})
    reader = CodexReader(env)
    got = [s.to_json() for src in reader.sources() for s in reader.summarize(src)]
    assert len(got) == 1, got
    return got[0]


@pytest.mark.parametrize("shape", SHAPES)
def test_model_is_the_last_turn_context_fast_and_reference_alike(tmp_path: Path, shape: str) -> None:
    sid = uid(70 + SHAPES.index(shape))
    w, want = _shape(shape, sid)
    original = w.save(tmp_path / "asis", rel_for(sid)).read_bytes()
    if shape != "settings_after_turn_whole_file":
        assert len(original) > BIG  # the middle really lies between head and tail
    else:
        assert len(original) < HEAD_BYTES
    reference = _summary(tmp_path / "asis", fast=False)
    assert reference["model"] == want
    assert reference["first_request"] == "Please run the tests" and reference["problems"] == []
    for variant in VARIANTS:
        home = tmp_path / variant
        path = home / "codex" / rel_for(sid)
        path.parent.mkdir(parents=True)
        path.write_bytes(rewrite_jsonl(original, variant))
        for fast in (True, False):
            got = _summary(home, fast)
            assert got["model"] == want, (variant, fast)
            same = {k: v for k, v in got.items() if k != "store_path"}
            assert same == {k: v for k, v in reference.items() if k != "store_path"}, (variant, fast)


def test_the_diverging_shape_is_the_corpus_one(tmp_path: Path) -> None:
    """The constructed rollout has the corpus's layout: the settings line right after the turn context,
    both compact envelopes the fast path recognises, both in the head and neither in the tail."""
    sid = uid(90)
    w, _ = _shape("settings_after_turn_in_head", sid)
    data = w.save(tmp_path, rel_for(sid)).read_bytes()
    lines = data.split(b"\n")
    at = next(i for i, ln in enumerate(lines) if b'"type":"turn_context"' in ln)
    assert b'"payload":{"type":"thread_settings_applied"' in lines[at + 1]
    assert data.rfind(b"thread_settings_applied") < HEAD_BYTES
    assert b"turn_context" not in data[-TAIL_BYTES:] and b"thread_settings" not in data[-TAIL_BYTES:]
    assert json.loads(lines[at])["payload"]["model"] == TURN_MODEL
