"""Issue 12: recall and false positives on generated corpora of vendor formats and secret kinds in transcript
contexts (tests/data/redaction/generate.py). gen_dev.jsonl is what rules are developed on; gen_heldout.jsonl has
other vendors, contexts and negatives, was committed before the rules it measures, and only its totals are
printed (so that nobody tunes on its misses). Its misses were read once (2026-12-02) after gen_heldout2.jsonl was
written, so it is now half-tuned; gen_heldout2.jsonl (generate_heldout2.py: another generator, seed, contexts and
credential families) was the held-out figure (0.909 untuned by the second pass); its misses were read on
2026-12-02 (third pass) to find kinds of leak, which were fixed by shape and context with new cases of their own
(tests/test_redact_kinds.py), so it is half-tuned too. gen_heldout3.jsonl (generate_heldout3.py, written blind: its
author read no redaction code and no other generator) is the blind figure: 0.966 recall / 4.7 % FP on the rules it
was written against, 0.974 / 7.1 % after the third pass. Only its per-commit totals were looked at, to find the
commit whose false positives rose; that rule (echo-base64-decode) was narrowed on negatives of our own, giving
0.974 / 4.7 %. Its rows have never been read. gen_heldout4.jsonl (generate_heldout4.py, written blind on 2026-12-07 by
an author who read no redaction code, no other generator and no other corpus; 74 credential families, 452 secrets, 201
near-miss negatives) measured 0.967 recall / 9.5 % FP on the rules as they were, before anyone looked at it. Then
only the labels of its misses (family:kind:context, no text) were read, and each kind was written as new cases of our
own (tests/test_redact_kinds4.py) and fixed by shape and context: 0.991 / 4.5 % after, so it is half-tuned now. The
blind gen_heldout3 moved with it, untouched: 0.974 → 0.980 recall, 4.7 % FP.
gen_heldout5.jsonl (generate_heldout5.py, written blind on 2026-12-07 the same way; 96 families, 425 secrets, 223
negatives, mostly multi-line agent artefacts and prose in 15 languages) measured 0.936 recall / 14.3 % FP on the
rules after the fourth pass, before anyone looked at it: below both goals. The fifth pass (2026-12-08) read only the
labels of its misses and changed negatives (family:kind:context; no text, no secret, no generator), wrote each kind as
new cases of our own (tests/test_redact_kinds5.py) and fixed the rules by shape and context: 0.976 recall / 4.5 % FP
after (13.9 % when the pass began), so it is half-tuned now; gen_heldout3 moved to 0.980 / 2.4 %, gen_heldout4 to
0.993 / 3.0 %. gen_heldout6.jsonl (generate_heldout6.py, written blind on 2026-12-08 the same way while the fifth
pass ran, by another author; 110 families, 462 secrets, 250 negatives) is the blind figure now: 0.907 recall / 10.0 %
FP on the rules before the fifth pass (6f0bb85), 0.920 / 7.6 % after it (be0f8a9), below both goals: that was its
blind figure. The sixth pass (2026-12-08) read only the labels of its misses and changed negatives (family:kind:context;
no text, no secret, no generator), wrote each kind as new cases of our own (tests/test_redact_kinds6.py) and fixed
the rules by shape and context: 0.963 recall / 3.6 % FP after, so gen_heldout6 is half-tuned now (gen_heldout4 moved
to 0.993 / 2.0 %, gen_heldout5 to 0.981 / 4.5 %). gen_heldout7.jsonl (generate_heldout7.py, written blind on
2026-12-08 the same way while the sixth pass ran; 108 families, 481 secrets mostly inside multi-line tool output and
file dumps, 258 negatives) is the blind figure now: 0.967 recall / 9.3 % FP before the sixth pass (fee0590), 0.969 /
7.4 % after its rounds (13bbb17). Nobody has read its rows or labels. Only totals are printed here."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from segue.redact import Redactor

DATA = Path(__file__).parent / "data" / "redaction"


def _load(name: str) -> list[dict]:
    with open(DATA / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def score(name: str) -> tuple[float, float, list[dict], list[dict]]:
    r = Redactor(environ={})
    rows = _load(name)
    pos = [x for x in rows if x["secret"] is not None]
    neg = [x for x in rows if x["secret"] is None]
    missed = [x for x in pos if x["secret"] in r.redact(x["text"])[0]]
    changed = [x for x in neg if r.redact(x["text"])[0] != x["text"]]
    return 1 - len(missed) / len(pos), len(changed) / len(neg), missed, changed


# the goal is 0.95 on all; each file is held to what the rules reached, so a regression shows.
# gen_heldout2: 0.831 untuned when written, 0.909 after the second pass, 1.000 after the third (see above)
FLOOR = {"gen_dev.jsonl": 1.0, "gen_heldout.jsonl": 1.0, "gen_heldout2.jsonl": 1.0,
         "gen_heldout3.jsonl": 0.98, "gen_heldout4.jsonl": 0.99,
         "gen_heldout5.jsonl": 0.97, "gen_heldout6.jsonl": 0.96, "gen_heldout7.jsonl": 0.96}
# false positives: at most 5 % (the goal; gen_heldout4 measured 9.5 % blind, 4.5 % after the fourth pass; gen_heldout5
# 14.3 % blind, 4.5 % after the fifth; gen_heldout6 7.6 % blind, 3.6 % after the sixth)
# gen_heldout7: 7.4 % blind after the sixth pass, above the goal: held to that until a pass looks at it
FP_CEILING: dict[str, float] = {"gen_heldout7.jsonl": 0.075}


@pytest.mark.parametrize("name,show", [("gen_dev.jsonl", True), ("gen_heldout.jsonl", False),
                                       ("gen_heldout2.jsonl", False), ("gen_heldout3.jsonl", False),
                                       ("gen_heldout4.jsonl", False), ("gen_heldout5.jsonl", False),
                                       ("gen_heldout6.jsonl", False), ("gen_heldout7.jsonl", False)],
                         ids=["dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7"])
def test_generated_corpus(name: str, show: bool) -> None:
    recall, fp, missed, changed = score(name)
    rows = _load(name)
    n_pos = sum(x["secret"] is not None for x in rows)
    print(f"\n{name}: recall {recall:.3f} of {n_pos}, false positives {fp:.3f} of {len(rows) - n_pos}")
    if show:
        for x in missed:
            print("  missed:", x["source"], x["text"][:140].encode("unicode_escape").decode())
        for x in changed:
            print("  changed:", x["source"], x["text"][:140].encode("unicode_escape").decode())
    assert recall >= FLOOR[name]
    assert fp <= FP_CEILING.get(name, 0.05)


def test_corpora_are_well_formed_and_disjoint() -> None:
    dev, held = _load("gen_dev.jsonl"), _load("gen_heldout.jsonl")
    for x in dev + held:
        assert set(x) == {"text", "secret", "source"}
        assert x["secret"] is None or x["secret"] in x["text"]
    kinds = [{x["source"].split(":")[2 if ":neg:" in x["source"] else 1] for x in rows} for rows in (dev, held)]
    assert not kinds[0] & kinds[1]
    assert sum(x["secret"] is not None for x in held) >= 200 and sum(x["secret"] is None for x in held) >= 50


def test_second_heldout_corpus_is_well_formed_and_new() -> None:
    held2 = _load("gen_heldout2.jsonl")
    assert sum(x["secret"] is not None for x in held2) >= 500 and sum(x["secret"] is None for x in held2) >= 100
    for x in held2:
        assert set(x) == {"text", "secret", "source"} and x["source"].startswith("gen-held2:")
        assert x["secret"] is None or x["secret"] in x["text"]
    old = {x["text"] for name in ("gen_dev.jsonl", "gen_heldout.jsonl") for x in _load(name)}
    assert not old & {x["text"] for x in held2}
    r = Redactor(environ={})
    for x in held2:  # idempotent here too (the decoded views must not redact around a marker)
        once, _ = r.redact(x["text"])
        assert r.redact(once) == (once, 0), x["source"]


@pytest.mark.parametrize("n,pos,neg", [(4, 450, 200), (5, 420, 220), (6, 460, 250), (7, 480, 255)],
                         ids=["heldout4", "heldout5", "heldout6", "heldout7"])
def test_later_heldout_corpora_are_well_formed_new_and_redacted_idempotently(n: int, pos: int, neg: int) -> None:
    held = _load(f"gen_heldout{n}.jsonl")
    assert sum(x["secret"] is not None for x in held) >= pos and sum(x["secret"] is None for x in held) >= neg
    for x in held:
        assert set(x) == {"text", "secret", "source"} and x["source"].startswith(f"gen-held{n}:")
        assert x["secret"] is None or x["secret"] in x["text"]
    names = ["gen_dev.jsonl", "gen_heldout.jsonl"] + [f"gen_heldout{i}.jsonl" for i in range(2, n)]
    old = {x["text"]: x["secret"] for name in names for x in _load(name)}
    # new texts, but for a public example two blind authors both quoted as a near miss (gen_heldout6 has AWS's
    # documented example key line that gen_heldout4 has too)
    same = [x for x in held if x["text"] in old]
    assert all(x["secret"] is None and old[x["text"]] is None for x in same), [x["source"] for x in same]
    assert len(same) <= len(held) // 100, [x["source"] for x in same]
    r = Redactor(environ={})
    for x in held:
        once, _ = r.redact(x["text"])
        assert r.redact(once) == (once, 0), x["source"]
