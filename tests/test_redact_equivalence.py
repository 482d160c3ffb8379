"""The redactor's speed work changes no output: the whole Redactor (rule spans, decoded views, found values,
the fixed point, excerpts) gives the same redacted text and count with its fast paths as with the knob-free
reference path, on every corpus we have, contexts, clean source text, dense text and random mixtures.

The reference path: per window, every rule whose keyword is a substring of the window runs by finditer (or
its identifier anchors, which define where keyed rules match) with no gate, start position or keyword index
(tests/test_redact_prefilter.py's contract), the 16-alphanumeric scan by finditer (generic.FAST_RUNS off),
gates searched whole; then what core does with the spans. The pieces rewritten for speed without a switch
(gate branches, the alphabet test, random_body's character tests, _merge's sort, lazy patterns) are each
checked against their plain formulation."""

from __future__ import annotations

import itertools
import json
import random
import re
import sysconfig
from pathlib import Path

import pytest

from segue import redact as R
from segue.redact import Redactor, core, generic, index, lazy
from segue.redact.rules import RULES
from tests.test_redact_prefilter import OLD_KEYWORDS, _plain_run, _soup

DATA = Path(__file__).parent / "data" / "redaction"


def _corpus() -> list[str]:
    return [json.loads(line)["text"] for f in sorted(DATA.glob("*.jsonl")) for line in f.open(encoding="utf-8")
            if line.strip()]


def _reference_rule_spans(self: Redactor, text: str) -> list[tuple[int, int, str]]:
    found: list[tuple[int, int, str]] = []
    if self._exact_re is not None:
        found += [(*m.span(), "known-secret") for m in self._exact_re.finditer(text)]
    low_all = text.lower()
    if "-----BEGIN" in text or "PuTTY-User-Key-File" in text:
        for rule in RULES:
            if rule.whole_text and rule.keywords and any(k in low_all for k in rule.keywords):
                found += _plain_run(rule, text, 0, index._lower(text))
    for start, chunk in index._windows(text):
        low = index._lower(chunk)
        for rule in RULES:
            if rule.whole_text:
                continue
            keywords = OLD_KEYWORDS.get(rule.id, rule.keywords)
            if not keywords or any(k in low for k in keywords):
                found += _plain_run(rule, chunk, start, low)
    for rule in RULES:
        if rule.whole_text and not rule.keywords and len(text) >= 16:
            found += _plain_run(rule, text, 0, index._lower(text))
    return core._drop_protected(text, core._merge(found)) if found else found


def _outputs(texts: list[str]) -> list[object]:
    """What a brief sees: redact() with a per-brief memory, excerpt() heads and tails of long texts."""
    base = Redactor(environ={})
    out: list[object] = []
    for i, t in enumerate(texts):
        r = base.scoped()
        out.append(r.redact(t))
        if len(t) > 600 and i % 5 == 0:
            out.append(base.scoped().excerpt(t, 300, "head"))
            out.append(base.scoped().excerpt(t, 300, "tail"))
    out.append(sorted(base.scoped().learned()))
    return out


def _same(texts: list[str], monkeypatch: pytest.MonkeyPatch) -> int:
    fast = _outputs(texts)
    with monkeypatch.context() as m:
        m.setattr(generic, "FAST_RUNS", False)
        m.setattr(Redactor, "_rule_spans", _reference_rule_spans)
        slow = _outputs(texts)
    for a, b, t in zip(fast, slow, itertools.chain(texts, itertools.repeat("")), strict=False):
        assert a == b, t[:300]
    assert len(fast) == len(slow)
    return sum(isinstance(x, tuple) and x[1] > 0 for x in fast)


def _clean_sample(limit: int) -> list[str]:
    """Secret-free source: a slice of Python's standard library (the bench's clean text is all of it)."""
    files = sorted(Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
    out, n = [], 0
    for f in files[::3]:
        t = f.read_text(encoding="utf-8", errors="replace")
        out.append(t)
        n += len(t)
        if n >= limit:
            break
    return out


def _dense(texts: list[str], size: int, seed: int) -> str:
    rng = random.Random(seed)
    out, n = [], 0
    while n < size:
        t = rng.choice(texts)
        out.append(t)
        n += len(t) + 1
    return "\n".join(out)


def test_corpus_and_contexts_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _corpus()
    assert len(texts) > 1000
    assert _same(texts, monkeypatch) > 600  # the texts hold secrets: the comparison means something


@pytest.mark.slow
def test_clean_source_is_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = _clean_sample(600_000)
    assert sum(map(len, texts)) >= 600_000
    _same(texts, monkeypatch)


@pytest.mark.slow
def test_dense_text_and_mixtures_are_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    corpus = _corpus()
    rng = random.Random(20261202)
    clean = _clean_sample(150_000)
    texts = [_dense(corpus, 40_000, 1), _dense(corpus, 20_000, 2)]  # windowed: longer than 2 windows
    texts += [_soup(rng) + rng.choice(corpus) + rng.choice(["", " ", "=", "/", "\n"]) + rng.choice(corpus)
              + _soup(rng) for _ in range(600)]
    # secrets spliced into source text, at random places
    for _ in range(40):
        base = rng.choice(clean)
        at = rng.randrange(len(base) + 1)
        texts.append(base[max(0, at - 3000) : at] + rng.choice(corpus) + base[at : at + 3000])
    # the redactor's own output again (markers beside text), and runs of alphanumerics of every length
    texts += [Redactor(environ={}).redact(t)[0] + " " + t for t in rng.sample(corpus, 100)]
    texts += ["".join(rng.choices("aZ9", k=n)) + rng.choice(["", "==", "-", "/x", "é"]) for n in range(10, 60)]
    assert _same(texts, monkeypatch) > 500


def test_the_reference_path_sees_what_the_fast_path_would_miss(monkeypatch: pytest.MonkeyPatch) -> None:
    # the comparison can fail: a fast path that drops a rule is caught
    text = "export DB_PASSWORD=hunter2-Pa55 and ghp_R8tX2mK9pL4vQ7wE1zY6uB3nC5aD0fG2hJ4k"
    fast = Redactor(environ={}).redact(text)
    monkeypatch.setattr(index, "_KEYWORD_RULES", {k: frozenset() for k in index._KEYWORD_RULES})
    monkeypatch.setattr(index, "_PLANS", {})  # (the rules picked per keyword set, read from _KEYWORD_RULES)
    monkeypatch.setattr(index, "_PLAIN_PLANS", {})
    assert Redactor(environ={}).redact(text) != fast
    monkeypatch.setattr(Redactor, "_rule_spans", _reference_rule_spans)
    assert Redactor(environ={}).redact(text) == fast


def test_run16_starts_are_finditers() -> None:
    rng = random.Random(16)
    texts = _corpus() + _clean_sample(200_000)
    pieces = ["a" * 15, "a" * 16, "Z9" * 9, "é", "€", "😀", " ", "-", "_", "=", "/", "x" * 33, "\n", "İ"]
    texts += ["".join(rng.choice(pieces) for _ in range(rng.randint(0, 30))) for _ in range(3000)]
    for t in texts:
        assert list(generic._run16_starts(t)) == [m.start() for m in generic._RUN16.finditer(t)], t[:200]


def test_gate_branches_decide_as_the_whole_gate() -> None:
    rng = random.Random(17)
    texts = _corpus() + _clean_sample(100_000) + [_soup(rng) for _ in range(2000)]
    expanded = [i for i in index._GATES if len(index._GATES[i][0]) > len(index._GATE_BRANCHES[i])]
    assert len(expanded) >= 3  # password-compare, env-assignment, url-secret-param-suffix, quoted-literal
    for i, (_, on_low) in index._GATES.items():
        gate = RULES[i].gate
        assert gate is not None
        whole = re.compile(gate.pattern.replace("(?i)", "")) if on_low else lazy.compiled(gate)
        for t in texts:
            low = index._lower(t)
            assert index._gate_open(i, t, low) == bool(whole.search(low if on_low else t)), (RULES[i].id, t[:200])
            assert index._gate_search(i, t) == bool(lazy.compiled(gate).search(t)), (RULES[i].id, t[:200])


def test_literal_first_expansion_keeps_the_language() -> None:
    cases = {"[\"'][ \t]{0,4}==": ["\"[ \t]{0,4}==", "'[ \t]{0,4}=="], "(?:A|B)x": ["Ax", "Bx"],
             "[ab]?x": ["[ab]?x"], "(?:A|B)?x": ["(?:A|B)?x"], "[a-z]x": ["[a-z]x"], "[^\"]x": ["[^\"]x"],
             "(?:A|(?:B|C)y)x": ["Ax", "Byx", "Cyx"]}
    for branch, want in cases.items():
        assert index._literal_first(branch) == want, branch


def test_plain_formulations_of_the_rewritten_checks() -> None:
    def alphabet(body: str) -> bool:
        return sum(ord(b) - ord(a) == 1 for a, b in itertools.pairwise(body)) >= len(body) // 2

    def merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
        out: list[tuple[int, int, str]] = []
        for a, b, rid in sorted(spans, key=lambda s: (s[0], -s[1])):
            if out and a < out[-1][1]:
                out[-1] = (out[-1][0], max(out[-1][1], b), out[-1][2])
            else:
                out.append((a, b, rid))
        return out

    rng = random.Random(18)
    alpha = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789\x7f\x00 é~²"
    for _ in range(20000):
        n = rng.randint(0, 40)
        body = ("".join(rng.choices(alpha, k=n)) if rng.random() < 0.5
                else "".join(chr(97 + i if rng.random() < 0.7 else rng.randint(0, 127)) for i in range(n)))
        assert generic._alphabet(body) == alphabet(body), repr(body)
        spans = [(a, a + rng.randint(0, 10), rng.choice("wxyz")) for a in rng.choices(range(50), k=rng.randint(0, 30))]
        assert core._merge(spans) == merge(spans)
        # merging a few more spans into merged ones (each decoded view): as merging all of them again
        merged = [x for x in merge(spans) if rng.random() < 0.8]
        more = [(a, a + rng.randint(0, 12), rng.choice("wxyz")) for a in rng.choices(range(60), k=rng.randint(1, 6))]
        assert core._merge_into(merged, more) == merge([*merged, *more]), (merged, more)
    # inside a public block: bisect over finditer's sorted spans, as any() over all of them
    for _ in range(3000):
        ends = sorted(rng.sample(range(200), 2 * rng.randint(0, 8)))
        blocks = [(ends[k], ends[k + 1]) for k in range(0, len(ends), 2)]
        a = rng.randrange(210)
        assert generic._inside(blocks, a) == any(pa <= a < pb for pa, pb in blocks), (blocks, a)
    # random_body's character tests, once per distinct character: the same answers as per character
    for t in _corpus()[:600]:
        for body in re.findall(r"\S{1,80}", t):
            assert generic._kinds(body) == (any(c.isdigit() for c in body), any(c.isupper() for c in body),
                                            any(c.islower() for c in body)), body
            assert generic._alnum_only(body) == "".join(c for c in body if c.isalnum()), body


def test_lazy_patterns_are_the_compiled_ones() -> None:
    lazies = [p for r in RULES for p in (r.regex, r.gate) if isinstance(p, lazy.LazyPattern)]
    lazies += [v for v in vars(generic).values() if isinstance(v, lazy.LazyPattern)]
    assert len(lazies) > 100
    for p in lazies:
        real = re.compile(p.pattern, p._given)
        assert p.flags == real.flags, p.pattern
        assert p.groupindex == real.groupindex and p.groups == real.groups
        assert p.compiled.pattern == real.pattern
    assert R.RULES is RULES


def test_short_texts_before_and_after_the_keyword_trie(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(index, "_KEYWORD_RE", [])
    monkeypatch.setattr(index, "_short_calls", [0])
    texts = [t[:300] for t in _corpus()[:300]] + ["Fix the parser", "ls -la src/", "password: hunter2"]
    before = [(index._has_keyword(index._lower(t)), index._keywords_in(index._lower(t))) for t in texts]
    assert index._KEYWORD_RE  # built after the first calls
    after = [(index._has_keyword(index._lower(t)), index._keywords_in(index._lower(t))) for t in texts]
    assert before == after
    assert any(b for b, _ in before) and not all(b for b, _ in before)
