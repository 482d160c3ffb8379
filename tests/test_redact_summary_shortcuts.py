"""The listing redaction's shortcuts (segue.redact.summary: a title equal to the first request, the memo of
texts a fresh Redactor left unchanged) change no output: every pair of (first request, title) from the redaction
corpus, the real-runtime fixtures' sessions and random mixtures of secrets, words and markers, redacted in
several orders (memo cold, warm and refilled), gives exactly what a scan of every text gives."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from segue.model import Session
from segue.redact import summary as S
from segue.redact.summary import redact_summary

DATA = Path(__file__).parent / "data" / "redaction"
MARKER = "[segue-handoff v1 from=opencode:ses_dd8efb976ffec6myh5MdH16VY0]"
PIECES = ["fix the parser", "password: Qv7-Hunter#2026", "token", "continue", "Qv7-Hunter#2026",
          "export GITHUB_TOKEN=ghp_R8tX2mK9pL4vQ7wE1zY6uB3nC5aD0fG2hJ4k", "acme_live_Zt4Kq9Wm2Xp7Rv3Nb8Lc5Hd1",
          "use hunter2xyz as the password", "src/app.py", "secret", "\n", " ", MARKER, "key=value", "ok"]


def _texts() -> list[str]:
    out = [json.loads(line)["text"] for f in sorted(DATA.glob("*.jsonl")) for line in f.open(encoding="utf-8")
           if line.strip()]
    return [t[:8192] for t in out]


def _pairs(seed: int) -> list[tuple[str | None, str | None]]:
    rng = random.Random(seed)
    texts = rng.sample(_texts(), 500)
    pairs: list[tuple[str | None, str | None]] = []
    for t in texts:
        first_line = t.strip().splitlines()[0][:200] if t.strip() else None
        pairs += [(t, t), (t, first_line)] if rng.random() < 0.5 else [(t, None), (None, t)]
    for _ in range(1500):
        a = "".join(rng.choice(PIECES) + rng.choice([" ", "", "\n"]) for _ in range(rng.randint(0, 6)))
        b = a if rng.random() < 0.4 else "".join(rng.choice(PIECES) for _ in range(rng.randint(0, 3)))
        pairs.append((a or None, b or None))
    rng.shuffle(pairs)
    return pairs + pairs[: len(pairs) // 3]  # repeats: answered from the memo the first ones filled


def _run(pairs: list[tuple[str | None, str | None]]) -> list[tuple[str | None, str | None]]:
    out = []
    for first, title in pairs:
        s = redact_summary(Session(runtime="claude", id="x", store_path="/p", first_request=first, title=title))
        out.append((s.first_request, s.title))
    return out


@pytest.mark.parametrize("seed", [1])
def test_shortcuts_give_what_scanning_every_text_gives(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    pairs = _pairs(seed)
    with monkeypatch.context() as m:
        m.setattr(S, "SHORTCUTS", False)
        reference = _run(pairs)
    S._CLEAN.clear()
    fast = _run(pairs)
    assert fast == reference
    # a memo that is cleared when full gives the same answers too
    monkeypatch.setattr(S, "_CLEAN_MAX", 7)
    S._CLEAN.clear()
    assert _run(pairs) == reference
    assert sum(1 for (f, t), (rf, rt) in zip(pairs, reference, strict=True) if f != rf or t != rt) > 50


def test_the_memo_holds_only_texts_left_unchanged() -> None:
    S._CLEAN.clear()
    _run([("password: Qv7-Hunter#2026", "password: Qv7-Hunter#2026"), ("fix the parser in src/app.py", None)])
    assert "fix the parser in src/app.py" in S._CLEAN
    assert not any("Qv7-Hunter" in t for t in S._CLEAN)


def test_a_found_value_still_reaches_an_equal_or_clean_looking_title() -> None:
    # the first request teaches the Redactor a value: the title (clean on its own) must not be taken from the memo
    S._CLEAN.clear()
    _run([("Qv7-Hunter#2026 again", None)])  # scanned alone: whatever it gives, it is not a found value
    s = redact_summary(Session(runtime="claude", id="x", store_path="/p",
                               first_request="password: Qv7-Hunter#2026", title="Qv7-Hunter#2026 again"))
    assert "Qv7-Hunter" not in (s.title or "") and "Qv7-Hunter" not in (s.first_request or "")


def test_segue_fast_paths_off_turns_the_shortcuts_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(S, "_SHARED", [])
    monkeypatch.setattr(S, "_SHORTCUTS", [])
    monkeypatch.setenv("SEGUE_FAST_PATHS", "0")
    S.summary_redactor()
    assert not S._shortcuts()
    S._CLEAN.clear()
    _run([("fix the parser in src/app.py", "fix the parser in src/app.py")])
    assert not S._CLEAN
