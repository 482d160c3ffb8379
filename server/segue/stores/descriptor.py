"""What a runtime is, for every module that needs one: the shape of a runtime's descriptor.

Each runtime's package (`segue.stores.<id>`) defines one `RuntimeDescriptor` next to its reader, and
`segue.stores` lists them. Nothing outside `segue.stores` spells a runtime id or name: listing, briefs,
resume plans, the CLI's choices, the wire contract and the extension's names all come from here.

A descriptor loads without its reader (the reader's modules load on the first `reader(env)` call), so
parsing a command line or validating a request costs no reader import.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from segue.stores.base import Env, Reader


@dataclass(frozen=True)
class RuntimeDescriptor:
    id: str  # in refs (`claude:<id>`), JSON, the handoff marker and `--runtime`
    name: str  # display name, the same in briefs, plans, errors and the extension
    cli: str  # the command on PATH
    install: str  # the command that installs the CLI
    reader: Callable[[Env], Reader]
    # argv (argv[0] = `cli`, resolved on PATH by the plan) that reopens a session by id, interactively
    native_argv: Callable[[str], list[str]]
    # argv that starts a new interactive session whose first prompt is the argument (never one-shot)
    new_session_argv: Callable[[str], list[str]]
    # native reopen works only from the session's own directory (elsewhere it means a new session)
    cwd_bound: bool
    # environment variables that move the store (each reader's `locations()` says how)
    env_overrides: tuple[str, ...]
    # the extension's icon: a codicon name (the runtimes' own logos are trademarks, not in the icon font)
    icon: str = "comment-discussion"
    # the store records no branch: listings show the branch checked out in the session's directory
    branch_from_checkout: bool = False
    # the store keeps sessions as rows of a database the listing reads incrementally (`Reader.summarize_delta`):
    # a change there is the listing's to read, so the search patch (segue.search.patch) leaves it to a refresh
    database: bool = False

    @property
    def install_hint(self) -> str:
        return f"install {self.name}: {self.install}"


def lazy_attributes(package: str, module: str) -> Callable[[str], Any]:
    """A package's `__getattr__` that serves the names of one of its modules on first use (PEP 562), so
    importing the package (for its descriptor) does not import its reader. A submodule's name is that
    submodule (`from segue.stores.claude import triage` inside the reader must not load `module` midway),
    and `import_module` returns a module still loading as it is, so nothing here recurses."""

    def __getattr__(name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        try:
            value = getattr(importlib.import_module(f"{package}.{module}"), name)
        except AttributeError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        setattr(sys.modules[package], name, value)  # found once: later reads are plain attribute reads
        return value

    return __getattr__
