"""The correctness check: every generated session, and its first request, in `segue list --json --all`.

Speed bought with missing sessions does not count, so every benchmark run checks this. A first request
matches when it is equal, or when Segue capped a long one (8 KiB) and what it kept is the start of it.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

CAP_MIN = 1000  # a capped first request must keep at least this much of the original


def first_request_matches(expected: str, found: str | None) -> bool:
    if found is None:
        return False
    if found == expected:
        return True
    kept = found[:-1] if found.endswith("…") else found
    return len(kept) >= CAP_MIN and len(expected) > len(kept) and expected.startswith(kept)


def check(expected: list[dict[str, Any]], listed: list[dict[str, Any]]) -> dict[str, Any]:
    by_key = {(s["runtime"], s["id"]): s for s in listed}
    exp_keys = {(s["runtime"], s["id"]) for s in expected}
    per: dict[str, Counter[str]] = {}
    missing: list[str] = []
    wrong: list[dict[str, Any]] = []
    for s in expected:
        c = per.setdefault(s["runtime"], Counter())
        c["expected"] += 1
        got = by_key.get((s["runtime"], s["id"]))
        if got is None:
            c["missing"] += 1
            missing.append(f"{s['runtime']}:{s['id']} ({s['gen']})")
            continue
        c["found"] += 1
        if first_request_matches(s["first_request"], got.get("first_request")):
            c["first_request_ok"] += 1
        else:
            c["first_request_wrong"] += 1
            wrong.append({"ref": f"{s['runtime']}:{s['id']}", "gen": s["gen"],
                          "expected": s["first_request"][:120], "found": (got.get("first_request") or "")[:120]})
        if got.get("parent_id") != s.get("parent_id"):
            c["parent_wrong"] += 1
    extra = [f"{k[0]}:{k[1]}" for k in by_key if k not in exp_keys]
    total = len(expected)
    ok_first = sum(c["first_request_ok"] for c in per.values())
    return {
        "ok": not missing and not wrong,
        "expected": total,
        "found": total - len(missing),
        "first_request_ok": ok_first,
        "extra": len(extra),
        "per_runtime": {rt: dict(c) for rt, c in per.items()},
        "missing_examples": missing[:10],
        "wrong_examples": wrong[:10],
        "extra_examples": extra[:10],
        "missing_by_gen": dict(Counter(m.rsplit("(", 1)[1].rstrip(")") for m in missing)),
    }
