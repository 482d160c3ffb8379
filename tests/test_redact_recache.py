"""segue.redact.recache: compiled redaction patterns kept between processes must be the very patterns re.compile
builds (Pattern.__eq__: flags and sre code), for every pattern the redactor holds; a damaged or foreign cache
falls back to re.compile; the negative control shows the comparison sees a wrong entry."""

from __future__ import annotations

import gc
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import segue.redact  # noqa: F401 - every rule module, so every LazyPattern exists
from segue.redact import index, recache
from segue.redact.lazy import LazyPattern


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    recache.reset()
    yield
    recache.reset()


def patterns() -> list[tuple[str, int]]:
    found = {(p.pattern, p._given) for p in gc.get_objects() if isinstance(p, LazyPattern)}
    for name, mod in list(sys.modules.items()):  # the patterns the rule modules compile as they load
        if name.startswith("segue.redact"):
            for v in vars(mod).values():
                for p in (v if isinstance(v, tuple) else (v,)):
                    p = p[1] if isinstance(p, tuple) and len(p) == 2 else p
                    if isinstance(p, re.Pattern) and isinstance(p.pattern, str):
                        found.add((p.pattern, p.flags & ~re.U))
    index._keyword_groups()
    found |= {(p.pattern, p.flags & ~re.U) for _c, p in index._KEYWORD_GROUPS}
    assert len(found) > 140
    return sorted(found)


def test_kept_patterns_are_re_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    every = patterns()
    recache.use(str(tmp_path))
    assert [recache.compile(p, f) for p, f in every] == [re.compile(p, f) for p, f in every]  # misses
    recache.save()
    assert len(list(tmp_path.iterdir())) == 1
    recache.reset()
    recache.use(str(tmp_path))
    monkeypatch.setattr(re, "compile", lambda *a: pytest.fail("a kept pattern was compiled again"))
    got = [recache.compile(p, f) for p, f in every]  # every one from the file
    monkeypatch.undo()
    assert got == [re.compile(p, f) for p, f in every]
    text = "token=ghp_" + "a1B2" * 9 + " AKIAABCDEFGHIJKLMNOP password: hunter2-hunter2"
    assert [[m.span() for m in g.finditer(text)] for g in got] == \
        [[m.span() for m in re.compile(p, f).finditer(text)] for p, f in every]


def test_a_wrong_entry_is_seen(tmp_path: Path) -> None:
    """The negative control: another pattern's arguments under a key build a pattern that is not re.compile's."""
    (a, fa), (b, fb) = patterns()[:2]
    recache.use(str(tmp_path))
    recache.compile(a, fa)
    recache.compile(b, fb)
    recache.save()
    table = recache._table
    assert table is not None
    table[(a, fa)] = table[(b, fb)]
    assert recache.compile(a, fa) != re.compile(a, fa)


@pytest.mark.parametrize("content", [b"", b"not marshal", b"\xe9\x00\x00\x00\x00"])
def test_a_damaged_cache_compiles_afresh(tmp_path: Path, content: bytes) -> None:
    recache.use(str(tmp_path))
    recache.reset()
    path = next(iter([f"{tmp_path}/redact-re-{recache._version()}"]))
    Path(path).write_bytes(content)
    recache.use(str(tmp_path))
    p, f = patterns()[0]
    assert recache.compile(p, f) == re.compile(p, f)


def test_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_RE_CACHE", "0")
    recache.use(str(tmp_path))
    p, f = patterns()[0]
    assert recache.compile(p, f) == re.compile(p, f)
    recache.save()
    assert list(tmp_path.iterdir()) == []
