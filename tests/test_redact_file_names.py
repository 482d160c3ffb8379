"""File names are not secrets: a run of random-looking characters that ends in a file's extension is a name
(a Segue brief's `<runtime>-<id>-<time>Z.md`, an upload's `report-<hash>.pdf`), and a brief's path must reach the
agent that is told to read it. Found by a new user's trial: every brief path in a continued session's first request
was `[REDACTED:prefixed-token]`. Every value here is made up; none is a real credential."""

from __future__ import annotations

import pytest

from segue.model import Session
from segue.redact import Redactor
from segue.stores import RUNTIMES

# ids as each runtime makes them
IDS = {"claude": "618653cc-1d2e-4f3a-9b8c-7d6e5f4a3b2c", "codex": "019a2270-cbfd-7e3a-8c2b-1a2b3c4d5e6f",
       "opencode": "ses_dd8ef2a3bffeXyZ12abcDEF34g", "cline": "1795951786001_mu000",
       "gemini": "65c87a87-53ed-4555-aeb6-06aad8a9f60b"}


@pytest.fixture()
def r() -> Redactor:
    return Redactor(environ={})


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_segue_brief_path_survives(r: Redactor, runtime: str, tmp_path: object) -> None:
    from segue.brief import next_brief_path
    from segue.paths import StateDir

    sid = IDS.get(runtime, "7f3c9e21-5a4b-4c8d-9e0f-1a2b3c4d5e6f")
    state = StateDir.resolve(str(tmp_path))
    path = str(next_brief_path(state, Session(runtime=runtime, id=sid, store_path="/s"), 1_796_000_000.0))
    for text in (f"Read the handoff brief at {path} (a Markdown file written by Segue)", f"brief: {path}",
                 f'{{"prompt": "Read the handoff brief at {path}"}}', path.rsplit("/", 1)[1]):
        assert r.redact(text)[0] == text, text


@pytest.mark.parametrize("text", [
    "uploaded report-3f9a1c7e5b2d8046a1e9c3b7d5f20864.pdf to the bucket",
    "open ./cache/Xq3Z8vK2mLx7WtR9pN4c.json and look at the keys",
    "see logs/run-20261208T010845Z-k3d9fqav72mxpe0h.log",
    "the chunk main.8f3a9c1e5b7d2046a1e9.js is stale",
])
def test_random_looking_file_names_stay(r: Redactor, text: str) -> None:
    assert r.redact(text)[0] == text


@pytest.mark.parametrize("text,secret", [
    # (controls: a sentence's full stop, or a dot before a word that is no file extension, is no file name)
    ("the api key is acme_live_8fK2pQ9zLm4xW7vR3tY6. Rotate it.", "acme_live_8fK2pQ9zLm4xW7vR3tY6"),
    ("token=Xq3Z8vK2mLx7WtR9pN4cYb6Hs1Fj.then it failed", "Xq3Z8vK2mLx7WtR9pN4cYb6Hs1Fj"),
    ("export API_TOKEN=k3d9fqav72mxpe0hq4rzt8c2b6nW.", "k3d9fqav72mxpe0hq4rzt8c2b6nW"),
])
def test_a_secret_before_a_dot_is_still_a_secret(r: Redactor, text: str, secret: str) -> None:
    assert secret not in r.redact(text)[0]
