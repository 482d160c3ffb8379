"""The runtimes Segue reads, one line each: the registry every other module asks.

A runtime is one package `segue.stores.<id>` with its reader and its `DESCRIPTOR` (id, display name,
resume and new-session argv, whether resume is bound to the session's directory, install hint,
environment overrides, runtime-specific rules). Adding one = writing that package and one line below
(see CONTRIBUTING.md, "How to add a runtime"). The order here is the order of listings and choices.
"""

from __future__ import annotations

from segue.stores import claude, cline, codex, gemini, opencode
from segue.stores.descriptor import RuntimeDescriptor

REGISTRY: tuple[RuntimeDescriptor, ...] = (
    claude.DESCRIPTOR,
    codex.DESCRIPTOR,
    opencode.DESCRIPTOR,
    cline.DESCRIPTOR,
    gemini.DESCRIPTOR,
)

RUNTIMES: tuple[str, ...] = tuple(d.id for d in REGISTRY)
_BY_ID = {d.id: d for d in REGISTRY}


class UnknownRuntime(ValueError):
    pass


def descriptor(runtime_id: str) -> RuntimeDescriptor:
    """The descriptor of a registered runtime; `UnknownRuntime` (a ValueError) for anything else."""
    try:
        return _BY_ID[runtime_id]
    except KeyError:
        raise UnknownRuntime(f"unknown runtime {runtime_id!r}; choose one of {', '.join(RUNTIMES)}") from None


def display_name(runtime_id: str) -> str:
    """The runtime's display name; the id itself for one not registered (kept facts of a removed runtime)."""
    d = _BY_ID.get(runtime_id)
    return d.name if d else runtime_id
