"""Redaction pre-filters only skip work: the keyword index, the gates and the literal-first regexes give
the same spans as running every rule wherever one of its keywords occurs (the old contract, checked
with plain substring tests), on the corpus and on fragment soup built to hit each gate's shape."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from segue import redact as R
from segue.redact import HANDOFF_TOKEN_RE, Redactor

DATA = Path(__file__).parent / "data" / "redaction"
# keywords the rules had before gates replaced them: the reference runs these rules more often
OLD_KEYWORDS = {"jwt": ("ey",), "discord-bot-token": (".",), "url-secret-param": ("=",), "cli-password-flag": ("-",)}
OLD_CLI_RE = re.compile(R.RULES[[r.id for r in R.RULES].index("cli-password-flag")].regex.pattern.replace(
    r"(?i)-(?<![\w-]-)-?", r"(?i)(?<![\w-])--?"))

FRAGMENTS = [
    "password", "PASSWORD", "Password", "pwd", "pw", "passwd", "pass", "secret", "SECRET", "token", "TOKEN", "key",
    "KEY", "API_KEY", "apiKey", "auth", "AUTH", "credential", "access", "identified", "by", "://", "http", "user",
    ":", "@", "=", "==", "!=", "===", "'", '"', "`", " ", " ", " ", "\t", "\n", "?", "&", "sig", "code", "session",
    "-", "--", "--password", "--token", ".", ".ey", "eyJ", "h_", "SK", "sk", ",", ">", "|", "(", ")", "[", "]",
    "curl", "-u", "mysql", "-p", "Bearer", "Authorization", "cookie", "_", "DB_", "export ", "<", ">", "/", "MTk",
]


def _soup(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(3, 40)):
        if rng.random() < 0.7:
            parts.append(rng.choice(FRAGMENTS))
        else:  # a value-like run, sometimes exactly 40 (the AWS secret length) or 6 (discord's middle part)
            n = rng.choice([1, 3, 6, 8, 12, 24, 32, 40, 45])
            parts.append("".join(rng.choices("abcXYZ0123456789+/=_-", k=n)))
    return "".join(parts)


def _reference(text: str) -> list[tuple[int, int, str]]:
    """The old pre-filter contract: per window, a rule runs iff one of its keywords is a substring of the
    lower-cased window (rules without keywords always run); gates ignored."""
    found: list[tuple[int, int, str]] = []
    if "-----BEGIN" in text or "PuTTY-User-Key-File" in text:
        for rule in R.RULES:
            if rule.whole_text and any(k in text.lower() for k in rule.keywords):
                found += R._run(rule, text, 0)
    for start, chunk in R._windows(text):
        low = chunk.lower()
        for rule in R.RULES:
            if rule.whole_text:
                continue
            keywords = OLD_KEYWORDS.get(rule.id, rule.keywords)
            if not keywords or any(k in low for k in keywords):
                found += R._run(rule, chunk, start, low, {})
    if "[REDACTED:" in text:
        protected = [m.span() for m in R.MARKER_RE.finditer(text)]
        found = [s for s in found if not any(s[0] < pe and ps < s[1] for ps, pe in protected)]
    return R._merge(found)


def _corpus() -> list[str]:
    return [json.loads(line)["text"] for f in sorted(DATA.glob("*.jsonl")) for line in f.open() if line.strip()]


def test_prefilters_change_no_span_on_the_corpus() -> None:
    r = Redactor(environ={})
    texts = _corpus()
    assert len(texts) > 600
    for text in texts:
        assert r._spans(text) == _reference(text), text


def test_prefilters_change_no_span_on_fragment_soup() -> None:
    r = Redactor(environ={})
    rng = random.Random(20261129)
    hits = 0
    for _ in range(4000):
        text = _soup(rng)
        spans = r._spans(text)
        assert spans == _reference(text), text
        hits += bool(spans)
    assert hits > 400  # the soup does hold secrets, so the comparison means something


@pytest.mark.parametrize("seed", range(3))
def test_keyword_index_finds_exactly_the_substrings(seed: int) -> None:
    rng = random.Random(seed)
    alphabet = sorted({c for k in R._KEYWORDS for c in k} | set("xyz 0"))
    for _ in range(3000):
        parts = [rng.choice(R._KEYWORDS) if rng.random() < 0.4 else "".join(rng.choices(alphabet, k=rng.randint(1, 4)))
                 for _ in range(rng.randint(1, 12))]
        low = "".join(parts)
        lo = rng.randint(0, len(low))
        hi = rng.randint(lo, len(low))
        assert R._keywords_in(low[lo:hi]) == {k for k in R._KEYWORDS if k in low[lo:hi]}, (low, lo, hi)


def test_literal_first_regexes_match_like_the_originals() -> None:
    handoff = R.RULES[[r.id for r in R.RULES].index("segue-handoff-token")].regex
    cli = R.RULES[[r.id for r in R.RULES].index("cli-password-flag")].regex
    assert handoff is not HANDOFF_TOKEN_RE and cli.pattern != OLD_CLI_RE.pattern
    rng = random.Random(7)
    matched = 0
    for _ in range(3000):
        pieces = ["h_", "ah_", "-h_", "_", "-", "--", "x", "A", "9", " ", "password", "token", "=", "--password=",
                  " -pass ", "w-", "abcdefghijklmnop"]
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(1, 20)))
        for new, old in ((handoff, HANDOFF_TOKEN_RE), (cli, OLD_CLI_RE)):
            spans = [m.span() for m in new.finditer(text)]
            assert spans == [m.span() for m in old.finditer(text)], (text, new.pattern)
            matched += bool(spans)
    assert matched > 300


def test_lower_keeps_offsets() -> None:
    text = "İSTANBUL_PASSWORD=x1y2z3w4 İ"
    assert len(text.lower()) != len(text)  # the one character that lower-cases to two
    low = R._lower(text)
    assert len(low) == len(text) and low.startswith("istanbul_password")
    assert "x1y2z3w4" not in Redactor(environ={}).redact(text)[0]


def test_excerpt_tail_of_a_short_text_with_a_stray_end_line() -> None:
    # an END line before a BEGIN line once moved the tail window forward and the excerpt came back empty
    text = "hello -----END RSA PRIVATE KEY----- then -----BEGIN RSA PRIVATE KEY-----\nAAAA\n" \
           "-----END RSA PRIVATE KEY-----\nbye"
    r = Redactor(environ={})
    out, n, truncated = r.excerpt(text, 1000, "tail")
    assert out == "hello -----END RSA PRIVATE KEY----- then [REDACTED:private-key]\nbye" and n == 1 and not truncated
    assert r.excerpt(text, 1000, "tail") == r.excerpt(text, 1000, "head")
    for lo in range(text.index("-----END")):  # the window start only ever moves back
        assert R._extend_back_over_key_block(text, lo, len(text)) <= lo


def test_anchor_scan_word_by_word_finds_what_the_alternation_finds() -> None:
    rng = random.Random(11)
    anchors = list(R._ANCHOR_WORDS)
    assert len(anchors) >= 2
    words = sorted({w for ws in R._ANCHOR_WORDS.values() for w in ws})
    for _ in range(3000):
        text = "".join(rng.choice([*words, "x", "_", ".", " ", "\n", "=", "se", "pa", "ss", "d", "w"])
                       for _ in range(rng.randint(1, 25)))
        low = R._lower(text)
        present = R._keywords_in(low)
        for anchor in anchors:
            assert R._identifier_starts(anchor, text, low, present) == R._identifier_starts(anchor, text, low), text


def test_gates_searched_branch_by_branch_decide_as_the_whole_gate() -> None:
    rng = random.Random(5)
    assert any(len(branches) > 1 for branches, _ in R._GATES.values())
    for i, (_, on_low) in R._GATES.items():
        gate = R.RULES[i].gate
        assert gate is not None
        whole = re.compile(gate.pattern.replace("(?i)", "")) if on_low else gate
        for _ in range(500):
            text = _soup(rng)
            low = R._lower(text)
            assert R._gate_open(i, text, low) == bool(whole.search(low if on_low else text)), (R.RULES[i].id, text)
