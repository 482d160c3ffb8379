"""The redactor's cost-per-text fast paths (issues 16 and 17) decide exactly as their plain formulations:

- the anchored keyword search (index._anchored_trie) matches a text iff a keyword is a substring of it;
- generic.shape_gate_open is ``re.search(SHAPE_GATE, text) is not None``;
- a rule's required characters (segue.redact.required) are in every text its regex matches, on the corpora,
  fragment soup and random text, and the reading is conservative where it cannot know;
- _prose_ok's reordered tests and prose_as' early return give the answers of the old order / of no return;
- SEGUE_FAST_PATHS=0 switches them off, with the same redactions.

The whole Redactor is compared with the knob-free reference path in tests/test_redact_equivalence.py."""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest

from segue.redact import checks, generic, index
from segue.redact.checks import (
    _PW_KEY_WORDS,
    _SECRET_KEY_WORDS,
    _names_secret,
    _password_ok,
    _quoted,
    _secret_ok,
    _unquote,
)
from segue.redact.required import required
from segue.redact.rules import RULES
from tests.test_redact_prefilter import _samples, _soup

DATA = Path(__file__).parent / "data" / "redaction"
ROOT = Path(__file__).resolve().parent.parent


def _corpus() -> list[str]:
    return [json.loads(line)["text"] for f in sorted(DATA.glob("*.jsonl")) for line in f.open(encoding="utf-8")
            if line.strip()]


def _texts(seed: int, n: int = 3000) -> list[str]:
    rng = random.Random(seed)
    corpus = _corpus()
    texts = corpus + _samples(rng) + [_soup(rng) for _ in range(n)]
    texts += [_soup(rng) + rng.choice(corpus) + _soup(rng) for _ in range(n // 3)]
    return texts


def test_anchored_keyword_search_is_substring_search() -> None:
    words = index._KEYWORDS
    rx = re.compile(index._anchored_trie(words))
    rng = random.Random(31)
    alphabet = sorted({c for k in words for c in k} | set("xyz 0\n"))
    texts = [index._lower(t) for t in _texts(32, 1500)]
    for _ in range(20000):
        parts = [rng.choice(words) if rng.random() < 0.3 else "".join(rng.choices(alphabet, k=rng.randint(1, 5)))
                 for _ in range(rng.randint(0, 6))]
        low = "".join(parts)
        cut = rng.randint(0, len(low))
        texts += [low, low[cut:], low[:cut], low[1:-1]]
    found = 0
    for low in texts:
        want = any(k in low for k in words)
        assert (rx.search(low) is not None) == want, low[:200]
        found += want
    assert 0.2 * len(texts) < found < 0.95 * len(texts)
    # every keyword alone, and cut by one character at either end (a partial keyword is no keyword)
    for k in words:
        assert rx.search(k) and rx.search("x" + k + "x")
        for part in (k[1:], k[:-1]):
            assert (rx.search(part) is not None) == any(w in part for w in words), (k, part)


def test_anchored_keyword_search_can_fail() -> None:
    # negative control: a keyword left out of the anchored search is missed where only it occurs
    alone = [k for k in index._KEYWORDS if not any(o in f"({k})" for o in index._KEYWORDS if o != k)]
    assert len(alone) > 50
    for k in alone:
        rx = re.compile(index._anchored_trie([w for w in index._KEYWORDS if w != k]))
        assert rx.search(f"({k})") is None, k
    assert all(re.compile(index._anchored_trie(index._KEYWORDS)).search(f"({k})") for k in alone)


def test_has_keyword_uses_the_anchored_search_once_built() -> None:
    for _ in range(index._EAGER_CALLS + 2):
        index._has_keyword("x")
    assert index._ANY_KEYWORD_RE and index._ANY_KEYWORD_RE[0] is not index._KEYWORD_RE[0]
    for t in _texts(33, 500):
        low = index._lower(t)[: index._SPLIT_AT - 1]
        assert index._has_keyword(low) == any(k in low for k in index._KEYWORDS), low


def test_shape_gate_is_the_regex() -> None:
    gate = re.compile(generic.SHAPE_GATE)
    rng = random.Random(34)
    texts = _texts(35, 1500)
    pieces = ["a", "Z", "9", "_", "-", " ", ".", "é", "İ", "😀", "\n", "A1", "aaaaaaaaaaaaaaa", "Ab_-cD", "\udc80", "€"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(20000)]
    opened = 0
    for t in texts:
        want = gate.search(t) is not None
        assert generic.shape_gate_open(t) == want, repr(t[:200])
        opened += want
    assert 0.1 * len(texts) < opened < 0.9 * len(texts)


def test_required_characters_read_from_regexes() -> None:
    assert required(r"a|b") == ()
    assert required(r"x=[;,]") == ("=", ",;")
    assert required(r"(?:=)?x") == ()  # optional: requires nothing
    assert required(r"(?:a=|b:)y") == (":=",)  # one of each alternative
    assert required(r"(?<=\|)x") == ("|",)  # a look-behind's characters are in the text
    assert required(r"(?<!\|)x") == ()
    assert required(r"[^=]x") == () and required(r"[a-z=]") == ()
    assert required(r"(?i)KEY=") == ("=",)  # letters do not count (case folding)
    assert required(r"(?P<k>\w)=(?P=k)") == ("=",)
    assert required(r"x{0,3}-{1,2}") == ("-",)
    assert required("(") == ()  # not a regex: nothing


def test_every_rule_match_holds_its_required_characters() -> None:
    texts = _texts(36, 2500)
    checked = matched = 0
    for rule in RULES:
        need = index._required_chars(rule)
        if not need:
            continue
        checked += 1
        rx = re.compile(rule.regex.pattern, getattr(rule.regex, "_given", 0))
        for t in texts:
            if rx.search(t) is not None:
                matched += 1
                assert index._holds(t, need), (rule.id, need, t[:200])
    assert checked > 80 and matched > 2000


def _prose_ok_before(value: str, m: re.Match[str], text: str) -> bool:
    """checks._prose_ok as it was written before its tests were reordered (with the provider words it has since)."""
    key = m.group("k")
    if key.lower() in ("mot de passe", "пароль") or _names_secret(key, _PW_KEY_WORDS, False):
        return _password_ok(value, m, text)
    if key.lower() == "key":
        before = text[max(0, m.start() - 20) : m.start()].rstrip().rsplit(None, 1)
        key = (before[-1] if before else "") + "_key"
        if key[:-4].lower() in checks._PROVIDER_WORDS:  # the fourth pass's meaning: "my openai key is …"
            key = "api_key"
    if not (_names_secret(key, _SECRET_KEY_WORDS, True) and _secret_ok(value, m, text)):
        return False
    if _quoted(value):
        return True
    return generic.random_body(_unquote(value).rstrip(",;.:!?)"), 12)


def test_prose_check_order_changes_no_answer() -> None:
    rule = next(r for r in RULES if r.id == "password-prose")
    rng = random.Random(38)
    extra = ["my token is " + "".join(rng.choices("aB3dE5gH7jK9mN1pQ", k=n)) for n in range(4, 30)]
    extra += ["the api key " + w for w in ("counter", "'x1'", '"hunter22"', "Tr0ub4dor&3", "sk_live_abcdef123456")]
    answers = set()
    for t in _texts(39, 2000) + extra:
        for m in rule.regex.finditer(t):
            raw = m.group("s")
            answers.add(checks._prose_ok(raw, m, t))
            assert checks._prose_ok(raw, m, t) == _prose_ok_before(raw, m, t), t[:200]
    assert answers == {True, False}


def test_prose_as_early_return_changes_no_span(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(41)
    texts = [*_texts(40, 1000), "uſe Tr0ub4dor&3 as my password", "USE Tr0ub4dor&3 as my password"]
    for _ in range(200):
        v = "".join(rng.choices("aB3dE5gH7jK9mN1pQ&!", k=rng.randint(3, 14)))
        form = rng.choice(['"{}" as the password', "use {} as my token", "'{}' is the secret", "Use {} for the api key",
                           "{} as the password", "take {} as the pw", '"{}" for your secret'])
        texts.append(_soup(rng)[:30] + " " + form.format(v) + rng.choice(["", ".", " now", "\n"]))
    fast = [generic.prose_as(t) for t in texts]
    monkeypatch.setattr(generic, "FAST_PATHS", False)
    assert [generic.prose_as(t) for t in texts] == fast
    assert sum(map(bool, fast)) > 50


_DIGEST = r"""
import hashlib, json, sys
from pathlib import Path
from segue.redact import Redactor, index
texts = [json.loads(l)["text"] for f in sorted(Path(sys.argv[1]).glob("*.jsonl"))
         for l in f.open(encoding="utf-8") if l.strip()]
texts += [t[:n] for t in texts[:400] for n in (30, 120, 399)]
if sys.argv[2] == "prepare":
    index.prepare_many()  # what a cold listing does before it forks
base = Redactor(environ={})
h = hashlib.sha256()
for t in texts:
    h.update(repr(base.scoped().redact(t)).encode()); h.update(repr(base.scoped().excerpt(t, 200, "tail")).encode())
print(json.dumps({"digest": h.hexdigest(), "shape_gates": len(index._SHAPE_GATES),
                  "anchored": bool(index._ANY_KEYWORD_RE) and index._ANY_KEYWORD_RE[0] is not index._KEYWORD_RE[0],
                  "required": len(index._REQUIRED)}))
"""


def test_fast_paths_switch_off_with_the_same_redactions() -> None:
    out = {}
    for v, how in (("1", ""), ("0", ""), ("1", "prepare"), ("0", "prepare")):
        env = {**os.environ, "SEGUE_FAST_PATHS": v, "PYTHONPATH": str(ROOT / "server")}
        proc = subprocess.run([sys.executable, "-c", _DIGEST, str(DATA), how or "-"], env=env, capture_output=True,
                              text=True, check=True)
        out[v + how] = json.loads(proc.stdout)
    assert len({o["digest"] for o in out.values()}) == 1
    assert out["1prepare"]["required"] > 100 and out["0prepare"]["required"] == 0
    assert out["1"]["shape_gates"] == 1 and out["1"]["anchored"] and out["1"]["required"] > 20
    assert out["0"]["shape_gates"] == 0 and not out["0"]["anchored"] and out["0"]["required"] == 0
