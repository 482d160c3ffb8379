"""Plain value classes for the modules a CLI query imports (segue.search.fast): what `@dataclass` gives them
(an `__init__` from the annotated fields, `__repr__`, `__eq__`; frozen: `__hash__` and no assignment) without
importing dataclasses, whose `inspect` and per-class code generation cost a quick answer ~10 ms.

Only what those classes use: fields in annotation order (a base's first), class-level defaults, `factory(list)`
for a fresh mutable default. No ClassVar, InitVar, field options or ordering.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    T = TypeVar("T")

_MISSING = object()


class FrozenInstanceError(AttributeError):
    """Assigning to a field of a frozen record (as dataclasses' error of that name)."""


class _Factory:
    __slots__ = ("make",)

    def __init__(self, make: Callable[[], Any]) -> None:
        self.make = make


def factory(make: Callable[[], Any]) -> Any:
    """A default made anew for every instance (dataclasses' `field(default_factory=make)`)."""
    return _Factory(make)


def record(cls: type[T] | None = None, *, frozen: bool = False) -> Any:
    def wrap(c: type[T]) -> type[T]:
        return _build(c, frozen)

    return wrap if cls is None else wrap(cls)


def _build(cls: type[T], frozen: bool) -> type[T]:
    names: list[str] = []
    defaults: dict[str, Any] = {}
    for base in reversed(cls.__mro__[1:]):
        for n in getattr(base, "__record_fields__", ()):
            if n not in names:
                names.append(n)
            defaults.pop(n, None)
            d = base.__dict__.get("__record_defaults__", {})
            if n in d:
                defaults[n] = d[n]
    for n in cls.__dict__.get("__annotations__", {}):  # noqa: RUF063 (inspect is what this module avoids)
        if n not in names:
            names.append(n)
        if n in cls.__dict__:
            defaults[n] = cls.__dict__[n]
            if isinstance(defaults[n], _Factory):
                delattr(cls, n)  # as dataclasses does: no shared mutable value on the class
        else:
            defaults.pop(n, None)
    seen_default = False
    for n in names:
        if n in defaults:
            seen_default = True
        elif seen_default:
            raise TypeError(f"non-default argument {n!r} follows default argument")
    fields = tuple(names)
    cls.__record_fields__ = fields  # type: ignore[attr-defined]
    cls.__record_defaults__ = dict(defaults)  # type: ignore[attr-defined]
    cls.__match_args__ = fields  # type: ignore[attr-defined]
    setter = object.__setattr__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        if len(args) > len(fields):
            raise TypeError(f"{cls.__name__}() takes {len(fields)} positional arguments but {len(args)} were given")
        for n, v in zip(fields, args, strict=False):
            if n in kwargs:
                raise TypeError(f"{cls.__name__}() got multiple values for argument {n!r}")
            setter(self, n, v)
        for n in fields[len(args):]:
            v = kwargs.pop(n, _MISSING)
            if v is _MISSING:
                v = defaults.get(n, _MISSING)
                if v is _MISSING:
                    raise TypeError(f"{cls.__name__}() missing required argument: {n!r}")
                if isinstance(v, _Factory):
                    v = v.make()
            setter(self, n, v)
        if kwargs:
            raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {next(iter(kwargs))!r}")

    def __repr__(self: Any) -> str:
        return f"{type(self).__qualname__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in fields) + ")"

    def __eq__(self: Any, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return tuple(getattr(self, n) for n in fields) == tuple(getattr(other, n) for n in fields)

    cls.__init__ = __init__  # type: ignore[misc]
    cls.__repr__ = __repr__  # type: ignore[method-assign]
    cls.__eq__ = __eq__  # type: ignore[method-assign,assignment]
    if frozen:
        def __setattr__(self: Any, name: str, value: Any) -> None:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")

        def __delattr__(self: Any, name: str) -> None:
            raise FrozenInstanceError(f"cannot delete field {name!r}")

        def __hash__(self: Any) -> int:
            return hash(tuple(getattr(self, n) for n in fields))

        cls.__setattr__ = __setattr__  # type: ignore[method-assign,assignment]
        cls.__delattr__ = __delattr__  # type: ignore[method-assign,assignment]
        cls.__hash__ = __hash__  # type: ignore[method-assign,assignment]
    else:
        cls.__hash__ = None  # type: ignore[assignment]  # mutable and compared by value: unhashable, as a dataclass
    return cls
