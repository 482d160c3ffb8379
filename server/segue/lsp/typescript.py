"""Writes the extension's TypeScript contract from `segue.lsp.protocol`: one source of truth for both ends.

    python -m segue.lsp.typescript                        # print it
    python -m segue.lsp.typescript --out FILE             # write FILE (vscode-extension/src/protocol.generated.ts)
    python -m segue.lsp.typescript --check FILE           # exit 1 if FILE is not what would be written
    … --manifest package.json                            # also package.json's runtime lists (written or checked)

The output is deterministic (no time, no path), so the committed file can be compared byte for byte.
"""

from __future__ import annotations

import argparse
import sys
import types
import typing
from pathlib import Path
from typing import Annotated, Any, Literal, Union, get_args, get_origin, get_type_hints

import attrs

from segue.lsp import protocol as P

HEADER = """\
// GENERATED from server/segue/lsp/protocol.py by `python -m segue.lsp.typescript`: do not edit.
// Regenerate with `npm run protocol` (in vscode-extension); the build and tests/test_wire_contract.py fail when
// this file and the Python contract differ.
// No vscode import here, so the pure helpers that use these types run in plain Node unit tests too.
"""
# The NewTypes of the contract: their TypeScript alias, in terms of the constants emitted with them.
NEWTYPE_TS = {P.Runtime: "(typeof RUNTIMES)[number]", P.PlanReason: "keyof typeof PLAN_REASONS",
              P.ErrorReason: "keyof typeof ERROR_CODES"}


def _q(s: str) -> str:
    return "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _key(name: str) -> str:
    return name if name.isidentifier() else _q(name)


def _doc(text: str | None, indent: str = "") -> list[str]:
    if not text:
        return []
    words = " ".join(text.split())
    lines, line = [], ""
    for w in words.split(" "):
        if line and len(indent) + 4 + len(line) + 1 + len(w) > 110:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}" if line else w
    lines.append(line)
    if len(lines) == 1:
        return [f"{indent}/** {lines[0]} */"]
    return [f"{indent}/**", *(f"{indent} * {ln}" for ln in lines), f"{indent} */"]


def short_name(method: str) -> str:
    """`segue/listSessions` -> `listSessions`: the key in the generated `Methods` table."""
    return method.split("/", 1)[1]


class _Namer:
    """Maps Python types to TypeScript, collecting the named types (TypedDicts, params classes) used."""

    def __init__(self) -> None:
        self.literals = {v: k for k, v in vars(P).items() if get_origin(v) is Literal and k[0].isupper()}
        self.used: dict[str, Any] = {}

    def ts(self, t: Any) -> str:
        if t is Any:
            return "unknown"
        if t is None or t is type(None):
            return "null"
        if t in NEWTYPE_TS:
            return t.__name__
        if t in (str,):
            return "string"
        if t in (int, float):
            return "number"
        if t is bool:
            return "boolean"
        if get_origin(t) is Literal:
            name = self.literals.get(t)
            return name if name else " | ".join(_q(a) for a in get_args(t))
        origin = get_origin(t)
        if origin in (Union, types.UnionType):
            return " | ".join(self.ts(a) for a in get_args(t))
        if origin is list:
            inner = self.ts(get_args(t)[0])
            return f"({inner})[]" if " | " in inner else f"{inner}[]"
        if origin is dict:
            return f"Record<string, {self.ts(get_args(t)[1])}>"
        if typing.is_typeddict(t) or attrs.has(t):
            self.used.setdefault(t.__name__, t)
            return t.__name__
        raise TypeError(f"no TypeScript for {t!r}")


def _interface(namer: _Namer, cls: Any) -> list[str]:
    out = _doc(cls.__doc__ if cls.__doc__ and not cls.__doc__.startswith(cls.__name__ + "(") else None)
    if attrs.has(cls):  # params: a field with a default may be left out
        fields = attrs.fields(cls)
        if not fields:
            return [*out, f"export type {cls.__name__} = Record<string, never>;"]
        hints = get_type_hints(cls)
        body = []
        for f in fields:
            t = f.metadata.get("wire_type", hints[f.name])
            opt = "?" if f.default is not attrs.NOTHING else ""
            body.append(f"  {_key(f.metadata.get('wire', f.name))}{opt}: {namer.ts(t)};")
    else:
        body = []
        for k, t in get_type_hints(cls, include_extras=True).items():
            if get_origin(t) is Annotated:  # Annotated[type, "doc"]
                t, doc = get_args(t)[0], " ".join(str(a) for a in get_args(t)[1:])
                body += _doc(doc, "  ")
            body.append(f"  {_key(k)}{'?' if k in cls.__optional_keys__ else ''}: {namer.ts(t)};")
    return [*out, f"export interface {cls.__name__} {{", *body, "}"]


def _record(name: str, items: dict[str, str], doc: str, key_type: str | None = None) -> list[str]:
    typ = f": Readonly<Record<{key_type}, string>>" if key_type else ""
    tail = "" if key_type else " as const"
    return [*_doc(doc), f"export const {name}{typ} = {{", *(f"  {_key(k)}: {_q(v)}," for k, v in items.items()),
            f"}}{tail};"]


def generate() -> str:
    namer = _Namer()
    out: list[str] = [HEADER]
    out += _doc("The runtimes Segue reads, in the registry's order (`segue.stores.REGISTRY`).")
    out += [f"export const RUNTIMES = [{', '.join(_q(r) for r in P.RUNTIMES)}] as const;",
            f"export type Runtime = {NEWTYPE_TS[P.Runtime]};", ""]
    out += ["export function isRuntime(value: string): value is Runtime {",
            "  return (RUNTIMES as readonly string[]).includes(value);", "}", ""]
    out += [*_record("RUNTIME_NAMES", P.RUNTIME_NAMES, "Display names, the same in briefs, plans and errors.",
                     "Runtime"), ""]
    out += [*_record("RUNTIME_ICONS", P.RUNTIME_ICONS,
                     "Codicons only: the runtimes' own logos are trademarks and not part of the icon font.",
                     "Runtime"), ""]
    out += [*_record("PLAN_REASONS", P.PLAN_REASONS,
                     "Why a plan reopens a session natively or starts a new one, as the CLI says it."), ""]
    out += [f"export type PlanReason = {NEWTYPE_TS[P.PlanReason]};", ""]
    for lit, name in namer.literals.items():
        out += [f"export type {name} = {' | '.join(_q(a) for a in get_args(lit))};"]
    out += [""]
    out += _doc("Every `data.reason` an error reply carries, with its JSON-RPC code.")
    out += ["export const ERROR_CODES = {"]
    for e in (*P.PROTOCOL_ERRORS, *P.ERRORS):
        out += [f"  {_key(e.reason)}: {e.code}, // {e.meaning}"]
    out += ["} as const;", f"export type ErrorReason = {NEWTYPE_TS[P.ErrorReason]};", ""]

    # the named types, in the order protocol.py defines them
    roots = [m.params for m in P.METHODS + P.NOTIFICATIONS] + [m.result for m in P.METHODS]
    for t in (*roots, P.ErrorData, P.InitializationOptions):
        namer.ts(t)
    seen: set[str] = set()
    order = [v for k, v in vars(P).items() if isinstance(v, type)]
    while True:  # a type's fields may name more types: emit until nothing new turns up
        pending = [t for t in order if t.__name__ in namer.used and t.__name__ not in seen]
        if not pending:
            break
        for t in pending:
            seen.add(t.__name__)
            _interface(namer, t)  # registers what its fields use
    for t in order:
        if t.__name__ in seen:
            out += [*_interface(namer, t), ""]

    out += _doc("Segue's requests (client to server), by short name.")
    out += ["export const Methods = {", *(f"  {short_name(m.name)}: {_q(m.name)}," for m in P.METHODS), "} as const;"]
    out += ["export const Notifications = {",
            *(f"  {short_name(m.name)}: {_q(m.name)}," for m in P.NOTIFICATIONS), "} as const;", ""]
    out += _doc("Each request's params and result: `SegueServer.request` is typed by this map.")
    out += ["export type MethodMap = {"]
    for m in P.METHODS:
        entry = f"{{ params: {namer.ts(m.params)}; result: {namer.ts(m.result)} }}"
        out += [*_doc(m.doc, "  "), f"  {_q(m.name)}: {entry};"]
    out += ["};", "export type Method = keyof MethodMap;", ""]
    out += ["export type NotificationMap = {"]
    for m in P.NOTIFICATIONS:
        out += [*_doc(m.doc, "  "), f"  {_q(m.name)}: {namer.ts(m.params)};"]
    out += ["};", ""]
    return "\n".join(out)


def manifest(text: str) -> str:
    """package.json with its runtime parts (the defaultRuntime choices, the description's and the empty view's
    lists of runtimes) written from the registry: VS Code reads the manifest itself, so it cannot import them.
    Everything else in it is kept as it is (key order, formatting of two-space JSON)."""
    import json
    import re

    data = json.loads(text)
    names = [P.RUNTIME_NAMES[r] for r in P.RUNTIMES]
    setting = data["contributes"]["configuration"]["properties"]["segue.defaultRuntime"]
    setting["enum"] = ["", *P.RUNTIMES]
    setting["enumDescriptions"] = [setting["enumDescriptions"][0], *names]
    if "enumItemLabels" in setting:  # the dropdown's labels ("Ask every time" for the empty choice)
        setting["enumItemLabels"] = [setting["enumItemLabels"][0], *names]
    data["description"] = re.sub(r"\([^()]*\)", f"({', '.join(names)})", data["description"], count=1)
    welcome = data["contributes"]["viewsWelcome"][0]
    in_words = f"{', '.join(names[:-1])} or {names[-1]}" if len(names) > 1 else names[0]
    welcome["contents"] = re.sub(r"(?<=found no ).*?(?= sessions on this machine)", in_words, welcome["contents"],
                                 count=1)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m segue.lsp.typescript", description=__doc__.splitlines()[0])
    g = ap.add_mutually_exclusive_group()
    g.add_argument("--out", type=Path, help="write the TypeScript to this file")
    g.add_argument("--check", type=Path, help="exit 1 if this file differs from what would be written")
    ap.add_argument("--manifest", type=Path, help="the extension's package.json: its runtime lists are written "
                                                  "(--out) or checked (--check) too")
    a = ap.parse_args(argv)
    wanted = [(a.check or a.out, generate())]
    if a.manifest is not None:
        try:
            wanted.append((a.manifest, manifest(a.manifest.read_text(encoding="utf-8"))))
        except (OSError, ValueError, KeyError, IndexError) as e:
            print(f"segue.lsp.typescript: cannot read the runtime lists of {a.manifest}: {e}", file=sys.stderr)
            return 1
    if a.check is not None:
        for path, text in wanted:
            try:
                current = path.read_text(encoding="utf-8")
            except OSError as e:
                print(f"segue.lsp.typescript: cannot read {path}: {e.strerror}", file=sys.stderr)
                return 1
            if current != text:
                print(f"segue.lsp.typescript: {path} is out of date with server/segue/lsp/protocol.py and the "
                      "runtime registry; regenerate it: npm run protocol (in vscode-extension)", file=sys.stderr)
                return 1
        return 0
    if a.out is not None:
        for path, text in wanted:
            path.write_text(text, encoding="utf-8")
        return 0
    sys.stdout.write(wanted[0][1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
