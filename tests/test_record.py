"""segue.record gives the quick path's value classes what @dataclass gave them: checked against dataclasses."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from segue.record import FrozenInstanceError, factory, record


def _pair(frozen: bool) -> tuple[type, type]:
    class A:
        x: int
        y: str | None = None
        z: list[int] = factory(list)

    class B:
        x: int
        y: str | None = None
        z: list[int] = dataclasses.field(default_factory=list)

    A.__qualname__ = B.__qualname__ = "Point"
    return record(frozen=frozen)(A), dataclasses.dataclass(frozen=frozen)(B)


@pytest.mark.parametrize("frozen", [False, True])
def test_same_behaviour_as_a_dataclass(frozen: bool) -> None:
    mine, ref = _pair(frozen)
    for args, kw in [((1,), {}), ((1, "a"), {}), ((), {"x": 2, "z": [3]}), ((1,), {"y": "b"})]:
        a, b = mine(*args, **kw), ref(*args, **kw)
        assert repr(a) == repr(b)
        assert (a.x, a.y, a.z) == (b.x, b.y, b.z)
        assert a == mine(*args, **kw) and a != mine(99)
    assert mine(1).z is not mine(1).z  # a fresh list each time, as default_factory
    assert "z" not in mine.__dict__
    for bad_args, bad_kw in [((), {}), ((1, 2, 3, 4), {}), ((1,), {"x": 1}), ((1,), {"w": 1})]:
        with pytest.raises(TypeError):
            ref(*bad_args, **bad_kw)
        with pytest.raises(TypeError):
            mine(*bad_args, **bad_kw)
    if frozen:
        a = mine(1, "a", [])
        with pytest.raises(FrozenInstanceError):
            a.x = 2
        with pytest.raises(AttributeError):
            del a.x
        assert hash(mine(1, "a", ())) == hash(mine(1, "a", ()))
    else:
        a = mine(1)
        a.x = 5
        assert a.x == 5 and a != mine(1)  # negative control: a changed field compares unequal
        with pytest.raises(TypeError):
            hash(a)


def test_inherited_fields() -> None:
    from segue.limits import SEARCH_LIMIT, Bound, Param

    assert Param("n", low=1, high=3, default=2) == Param("n", 1, 3, 2)
    assert repr(Param("n", 1)) == "Param(name='n', low=1, high=None, default=0)"
    assert Bound("n", 1) != Param("n", 1)  # another class: unequal, as dataclasses
    assert SEARCH_LIMIT.default == 20 and SEARCH_LIMIT.allows(1000) and not SEARCH_LIMIT.allows(1001)


def test_a_quick_query_imports_no_dataclasses() -> None:
    code = ("import sys; import segue.cli_search, segue.search.fast, segue.paths, segue.timefmt, segue.table, "
            "segue.within; print(sorted(m for m in ('dataclasses', 'typing', 'inspect', 'segue.model', "
            "'segue.listing', 'segue.stores') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_quick_filters_import_no_dataclasses() -> None:
    # any --runtime parses here without the registry (segue.search.fast answers only runtimes its index holds)
    code = ("import sys\nfrom segue.cli_search import _parse_quick\n"
            "from segue.search.query import parse_since\n"
            "assert _parse_quick(['search', 'x', '--runtime', 'nosuch']).runtime == ['nosuch']\n"
            "assert _parse_quick(['search', 'x', '--runtime', 'claude']).runtime == ['claude']\n"
            "assert parse_since('7d', 1e9) == 1e9 - 7 * 86400 and parse_since('2026-06-01', 0) == 1780272000.0\n"
            "print(sorted(m for m in ('dataclasses', 'typing', 'inspect', 'segue.model', 'segue.stores')"
            " if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
