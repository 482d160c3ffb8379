"""One wire contract: `segue.lsp.protocol` is what the server serves and what the extension is typed by.

Drift of any kind fails here: the committed TypeScript is not what the contract generates; the server registers
a method the contract lacks (or the other way round, or with other params); the extension names a method the
contract does not have or sends a request around the typed client; a real reply on the real-runtime fixtures
has other keys or value types than its declared result; a closed set of values in the contract disagrees with
the core's. Each check is a function returning its findings, and each is shown to find a planted drift.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
import types
import uuid
from pathlib import Path
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
import pytest_lsp
from pygls.exceptions import JsonRpcException
from pytest_lsp import ClientServerConfig, LanguageClient

from segue.lsp import protocol as P
from segue.lsp import typescript
from tests.conftest import ROOT
from tests.test_lsp_harness import SERVER, Stores, init_params, keep_plain_json

EXT = ROOT / "vscode-extension"
GENERATED = EXT / "src" / "protocol.generated.ts"


# ---------------------------------------------------------------------------------------------------------
# The checks


def shape_errors(value: Any, t: Any, path: str = "result") -> list[str]:
    """How `value` (plain JSON) differs from the contract type `t`: missing or extra keys, wrong types,
    values outside a closed set. Empty when it fits exactly."""
    if t is Any:
        return []
    if t is None or t is type(None):
        return [] if value is None else [f"{path}: {value!r} is not null"]
    if t in P.CLOSED_SETS:
        allowed = P.CLOSED_SETS[t]
        return [] if value in allowed else [f"{path}: {value!r} is not one of {', '.join(allowed)}"]
    origin = get_origin(t)
    if origin is Literal:
        return [] if value in get_args(t) else [f"{path}: {value!r} is not one of {get_args(t)}"]
    if origin in (Union, types.UnionType):
        tries = [shape_errors(value, a, path) for a in get_args(t)]
        if any(not e for e in tries):
            return []
        return min(tries, key=len)
    if t is bool:
        return [] if isinstance(value, bool) else [f"{path}: {value!r} is not a boolean"]
    if t is int:
        return [] if isinstance(value, int) and not isinstance(value, bool) else [f"{path}: {value!r} is not an int"]
    if t is float:
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        return [] if ok else [f"{path}: {value!r} is not a number"]
    if t is str:
        return [] if isinstance(value, str) else [f"{path}: {value!r} is not a string"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{path}: {type(value).__name__} is not a list"]
        return [e for i, v in enumerate(value) for e in shape_errors(v, get_args(t)[0], f"{path}[{i}]")]
    if isinstance(t, type) and hasattr(t, "__required_keys__"):  # a TypedDict
        if not isinstance(value, dict):
            return [f"{path}: {type(value).__name__} is not an object ({t.__name__})"]
        hints = get_type_hints(t)
        out = [f"{path}: key {k!r} missing ({t.__name__})" for k in sorted(t.__required_keys__ - value.keys())]
        out += [f"{path}: key {k!r} not in {t.__name__}" for k in sorted(value.keys() - hints.keys())]
        for k in value.keys() & hints.keys():
            out += shape_errors(value[k], hints[k], f"{path}.{k}")
        return out
    raise TypeError(f"the checker does not know {t!r}")


def served_drift(served: dict[str, type], methods: tuple[P.Method, ...]) -> list[str]:
    """Methods served but not in the contract, in the contract but not served, or served with other params."""
    contract = {m.name: m.params for m in methods}
    out = [f"{m} is served but not in the contract" for m in sorted(served.keys() - contract.keys())]
    out += [f"{m} is in the contract but not served" for m in sorted(contract.keys() - served.keys())]
    out += [f"{m} is served with {served[m].__name__}, the contract says {contract[m].__name__}"
            for m in sorted(served.keys() & contract.keys()) if served[m] is not contract[m]]
    return out


_LITERAL = re.compile(r"""(['"`])(segue/[A-Za-z]+)\1""")
_SHORT = re.compile(r"\b(Methods|Notifications)\.([A-Za-z_]\w*)")
_RAW_CLIENT = re.compile(r"\b(sendRequest|sendNotification|onRequest|onNotification)\s*[<(]")


def extension_drift(sources: dict[str, str], methods: tuple[P.Method, ...],
                    notifications: tuple[P.Method, ...]) -> list[str]:
    """Method names in the extension's sources that the contract lacks, and requests sent around the typed
    `SegueServer.request` (only server.ts talks to the LanguageClient)."""
    names = {m.name for m in methods + notifications}
    short = {"Methods": {typescript.short_name(m.name) for m in methods},
             "Notifications": {typescript.short_name(m.name) for m in notifications}}
    out = []
    for file, text in sorted(sources.items()):
        out += [f"{file}: {lit} is not in the contract" for _, lit in _LITERAL.findall(text) if lit not in names]
        out += [f"{file}: {table}.{key} is not in the contract" for table, key in _SHORT.findall(text)
                if key not in short[table]]
        if not file.endswith("src/server.ts"):
            out += [f"{file}: {call} outside server.ts bypasses the typed request()"
                    for call in _RAW_CLIENT.findall(text)]
    return out


def extension_sources() -> dict[str, str]:
    files = [*EXT.glob("src/**/*.ts"), *EXT.glob("test/**/*.ts"), *EXT.glob("e2e/*.mjs")]
    return {str(f.relative_to(ROOT)): f.read_text(encoding="utf-8") for f in files if f != GENERATED}


# ---------------------------------------------------------------------------------------------------------
# The generated TypeScript


def test_the_committed_typescript_is_what_the_contract_generates() -> None:
    assert GENERATED.read_text(encoding="utf-8") == typescript.generate(), \
        "stale: run `npm run protocol` in vscode-extension (or python -m segue.lsp.typescript --out ...)"


def test_check_mode_fails_on_a_stale_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    current = tmp_path / "current.ts"
    assert typescript.main(["--out", str(current)]) == 0
    assert typescript.main(["--check", str(current)]) == 0
    stale = tmp_path / "stale.ts"
    stale.write_text(current.read_text(encoding="utf-8").replace("'segue/tokenStatus'", "'segue/tokenStatusX'"))
    assert typescript.main(["--check", str(stale)]) == 1
    assert "out of date" in capsys.readouterr().err
    assert typescript.main(["--check", str(tmp_path / "missing.ts")]) == 1


def test_a_method_added_to_the_contract_changes_the_generated_file(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = P.Method("segue/fake", P.RefParams, P.DemoResult, "A method only the contract has.")
    monkeypatch.setattr(P, "METHODS", (*P.METHODS, fake))
    text = typescript.generate()
    assert "'segue/fake': { params: RefParams; result: DemoResult };" in text and "  fake: 'segue/fake'," in text
    assert text != GENERATED.read_text(encoding="utf-8")


def test_the_generated_file_carries_every_part_of_the_contract() -> None:
    text = GENERATED.read_text(encoding="utf-8")
    for m in P.METHODS:
        params, result = m.params.__name__, m.result.__name__
        assert f"{m.name!r}: {{ params: {params}; result: {result} }};" in text, m.name
        assert f"export interface {result} {{" in text
    for m in P.NOTIFICATIONS:
        assert f"{m.name!r}: {m.params.__name__};" in text
    for rt, name in P.RUNTIME_NAMES.items():
        assert f"  {rt}: {name!r}," in text and f"  {rt}: {P.RUNTIME_ICONS[rt]!r}," in text
    for e in P.ERRORS + P.PROTOCOL_ERRORS:
        assert f"  {e.reason}: {e.code}, // {e.meaning}" in text
    for reason in P.PLAN_REASONS:
        assert f"  {reason}: " in text
    assert "segue/tokenStatus" in text  # the method the hand-written copy had lost


# ---------------------------------------------------------------------------------------------------------
# The contract against the core's own definitions


def test_closed_sets_agree_with_the_core() -> None:
    from segue import model, resume, tokens
    from segue.search import query
    from segue.stores import REGISTRY, display_name

    assert get_args(P.ResumeBlocker) == model.RESUME_BLOCKERS
    assert get_args(P.StepKind) == model.STEP_KINDS
    assert get_args(P.SearchWhere) == query.WHERE
    assert query.parse_where(list(get_args(P.SearchIn))) == query.WHERE
    assert P.PLAN_REASONS == resume.REASON_TEXTS and P.CLOSED_SETS[P.PlanReason] == resume.REASONS
    assert P.CLOSED_SETS[P.Runtime] == tuple(d.id for d in REGISTRY)
    assert {d.id: display_name(d.id) for d in REGISTRY} == P.RUNTIME_NAMES
    assert {d.id: d.icon for d in REGISTRY} == P.RUNTIME_ICONS
    refusals = set(re.findall(r'PlanRefused\("(\w+)"', Path(resume.__file__).read_text(encoding="utf-8")))
    assert refusals == set(get_args(P.RefusalReason))
    token_reasons = set(re.findall(r'TokenError\("(\w+)"', Path(tokens.__file__).read_text(encoding="utf-8")))
    assert token_reasons and token_reasons | refusals <= set(P.ERROR_CODES)
    codes = [e.code for e in P.ERRORS + P.PROTOCOL_ERRORS]
    assert len(set(codes)) == len(codes) and set(P.CLOSED_SETS[P.ErrorReason]) == {e.reason for e in
                                                                                      P.ERRORS + P.PROTOCOL_ERRORS}


def test_a_session_as_the_model_writes_it_has_the_contract_keys() -> None:
    from segue.model import Continues, Session

    s = Session(runtime="codex", id="i", store_path="/s.jsonl", started_at=1.5, continues=Continues("claude", "p"),
                handed_off={"surface": "terminal", "since": None, "expires_at": None}, problems=["x"])
    assert shape_errors(s.to_json(), P.Session) == []
    assert shape_errors(Session(runtime="claude", id="j", store_path="/t").to_json(), P.Session) == []


def test_a_refused_plan_has_the_contract_keys(tmp_path: Path) -> None:
    """A claim carries a refused plan as {refused, message, **data} (service.claim); the data comes from here."""
    from segue import resume
    from segue.model import Session

    refused = []
    with pytest.raises(resume.PlanRefused) as e:
        resume.locate_cli("cline", path=str(tmp_path))
    refused.append(e.value)
    with pytest.raises(resume.PlanRefused) as e:
        resume.check_directory(str(tmp_path / "gone"), Session(runtime="codex", id="i", store_path="/s"), False)
    refused.append(e.value)
    for r in refused:
        assert shape_errors({"refused": r.reason, "message": str(r), **r.data}, P.PlanRefusal) == []


def test_the_shape_check_finds_drift() -> None:
    reply = {"command": "codex resume x", "shell": "posix",
             "plan": {"mode": "native", "reason": "native", "runtime": "codex", "argv": ["codex"], "cwd": "/w",
                      "brief_path": None, "session": {"runtime": "codex", "id": "x", "title": None},
                      "handed_off": None, "live": False}}
    assert shape_errors(reply, P.ResumeCommandResult) == []
    assert shape_errors({**reply, "extra": 1}, P.ResumeCommandResult) == \
        ["result: key 'extra' not in ResumeCommandResult"]
    assert shape_errors({k: v for k, v in reply.items() if k != "shell"}, P.ResumeCommandResult) == \
        ["result: key 'shell' missing (ResumeCommandResult)"]
    assert shape_errors({**reply, "shell": "fish"}, P.ResumeCommandResult) == \
        ["result.shell: 'fish' is not one of ('posix', 'powershell')"]
    bad_plan = {**reply, "plan": {**reply["plan"], "runtime": "emacs", "reason": "because", "argv": "codex"}}
    assert sorted(shape_errors(bad_plan, P.ResumeCommandResult)) == [
        "result.plan.argv: str is not a list",
        "result.plan.reason: 'because' is not one of " + ", ".join(P.PLAN_REASONS),
        "result.plan.runtime: 'emacs' is not one of " + ", ".join(P.RUNTIMES)]
    assert shape_errors({"revoked": True, "session": reply["plan"]["session"]}, P.RevokeTokenResult) == \
        ["result.revoked: True is not an int"]


# ---------------------------------------------------------------------------------------------------------
# Both ends against the contract


def test_every_served_method_is_in_the_contract_and_back() -> None:
    import segue.lsp.server  # noqa: F401  (registering the handlers fills the tables)
    from segue.lsp import rpc

    assert set(rpc.REQUEST_PARAMS) == rpc.REQUESTS
    assert served_drift(rpc.REQUEST_PARAMS, P.METHODS) == []
    server_src = (ROOT / "server" / "segue" / "lsp" / "server.py").read_text(encoding="utf-8")
    sent = set(re.findall(r"notify\W+P\.([A-Z_]+)", server_src))
    assert sent and {getattr(P, n) for n in sent} <= {m.name for m in P.NOTIFICATIONS}


def test_the_served_method_check_finds_a_method_on_one_side_only() -> None:
    served = {m.name: m.params for m in P.METHODS}
    assert served_drift({**served, "segue/fake": P.NoParams}, P.METHODS) == \
        ["segue/fake is served but not in the contract"]
    fewer = {k: v for k, v in served.items() if k != P.TOKEN_STATUS}
    assert served_drift(fewer, P.METHODS) == ["segue/tokenStatus is in the contract but not served"]
    assert served_drift({**served, P.TRACE: P.NoParams}, P.METHODS) == \
        ["segue/trace is served with NoParams, the contract says RefParams"]


def test_the_extension_names_only_contract_methods() -> None:
    sources = extension_sources()
    assert any(f.endswith("src/server.ts") for f in sources) and len(sources) > 10
    assert extension_drift(sources, P.METHODS, P.NOTIFICATIONS) == []


def test_the_extension_check_finds_an_unknown_method_and_a_raw_request() -> None:
    planted = {"vscode-extension/src/x.ts": "await server.request('segue/fake', {}); Methods.fake; "
                                            "client.sendRequest('segue/brief', {});",
               "vscode-extension/src/server.ts": "client.sendRequest<R>(method, params); Notifications.sessionsChanged"}
    assert extension_drift(planted, P.METHODS, P.NOTIFICATIONS) == [
        "vscode-extension/src/x.ts: segue/fake is not in the contract",
        "vscode-extension/src/x.ts: Methods.fake is not in the contract",
        "vscode-extension/src/x.ts: sendRequest outside server.ts bypasses the typed request()"]


def test_the_extension_manifest_lists_the_registry_runtimes() -> None:
    """package.json is read by VS Code itself, so it cannot import the generated names: it must agree."""
    manifest = json.loads((EXT / "package.json").read_text(encoding="utf-8"))
    setting = manifest["contributes"]["configuration"]["properties"]["segue.defaultRuntime"]
    assert setting["enum"] == ["", *P.RUNTIMES]
    assert setting["enumDescriptions"][1:] == [P.RUNTIME_NAMES[r] for r in P.RUNTIMES]
    names = [P.RUNTIME_NAMES[r] for r in P.RUNTIMES]
    in_words = f"{', '.join(names[:-1])} or {names[-1]}"
    assert in_words in manifest["contributes"]["viewsWelcome"][0]["contents"]
    assert f"({', '.join(names)})" in manifest["description"]


# ---------------------------------------------------------------------------------------------------------
# Real replies: every method over stdio on the real-runtime fixtures, each reply against its declared type

STORES = Stores("wire")


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wire") / "segue-home"


@pytest_lsp.fixture(scope="module", config=ClientServerConfig(server_command=SERVER, server_env=STORES.env))
async def client(lsp_client: LanguageClient, home: Path):
    keep_plain_json(lsp_client)
    await lsp_client.initialize_session(init_params(home))
    yield
    await lsp_client.shutdown_session()


async def _call(client: LanguageClient, method: str, params: Any) -> Any:
    return await asyncio.wait_for(client.protocol.send_request_async(method, params), 60)


async def _error(client: LanguageClient, method: str, params: Any) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as e:
        await _call(client, method, params)
    return e.value


def _append_activity(session_file: Path) -> None:
    """One more record in a Claude session (this module's own copy of the store), as a live session writes."""
    lines = session_file.read_text(encoding="utf-8").splitlines()
    rec = json.loads(next(ln for ln in reversed(lines) if '"timestamp"' in ln))
    rec["uuid"] = str(uuid.uuid4())
    rec["timestamp"] = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(time.time() + 3600))
    with open(session_file, "a", encoding="utf-8") as f:
        f.write(json.dumps(rec) + "\n")


@pytest.mark.asyncio(loop_scope="module")
async def test_every_reply_has_exactly_its_declared_shape(client: LanguageClient) -> None:
    replies: dict[str, list[Any]] = {m.name: [] for m in P.METHODS}

    async def call(method: str, params: Any) -> Any:
        got = await _call(client, method, params)
        replies[method].append(got)
        return got

    await call(P.LIST_SESSIONS, {})
    listed = (await call(P.LIST_SESSIONS, {"include_subagents": True}))["sessions"]
    await call(P.LIST_SESSIONS, {"limit": 1, "offset": 1, "runtime": list(STORES.expected)[:2]})
    assert {s["runtime"] for s in listed} == set(STORES.expected) and any(s["parent_id"] for s in listed)
    tops = [s for s in listed if not s["parent_id"]]
    for s in listed:
        ref = f"{s['runtime']}:{s['id']}"
        await call(P.BRIEF, {"ref": ref})
        await call(P.TRACE, {"ref": ref})
        await call(P.PLAN_RESUME, {"ref": ref})
    for s in tops[:2]:
        ref = f"{s['runtime']}:{s['id']}"
        other = next(r for r in P.RUNTIMES if r != s["runtime"])
        await call(P.PLAN_RESUME, {"ref": ref, "runtime": other})
        await call(P.RESUME_COMMAND, {"ref": ref})
        await call(P.RESUME_COMMAND, {"ref": ref, "runtime": other, "shell": "powershell"})
    for q in ({"query": "files"}, {"query": '"write what happened"', "in": ["requests"]},
              {"query": "ls /nonexistent-dir", "in": ["commands"], "limit": 5}):
        await call(P.SEARCH, q)
    first, second = (f"{s['runtime']}:{s['id']}" for s in tops[:2])
    await call(P.EMIT_TOKEN, {"ref": first, "from": "editor"})
    await call(P.TOKEN_STATUS, {})
    await call(P.REVOKE_TOKEN, {"ref": first, "surface": "editor"})
    token = (await call(P.EMIT_TOKEN, {"ref": second, "from": "terminal"}))["token"]
    await call(P.CLAIM_TOKEN, {"token": token, "as": "editor"})
    await call(P.TOKEN_STATUS, {})  # a claimed token
    await call(P.LOCATIONS, {})
    await call(P.RUNTIME_CLIS, {})
    await call(P.DEMO, {})

    # the notification, on new activity in a Claude session of this module's own store copy
    claude = next(s for s in tops if s["runtime"] == "claude")
    session_file = next((STORES.root / "claude" / "home").rglob(f"{claude['id']}.jsonl"))
    fut = client.protocol.wait_for_notification_async(P.SESSIONS_CHANGED)
    _append_activity(session_file)
    changed = await asyncio.wait_for(fut, 15)

    # errors: data.reason names the code, and data has only the contract's keys
    errors = [await _error(client, P.PLAN_RESUME, {"ref": "codex:no-such-session-0000"}),
              await _error(client, P.PLAN_RESUME, {"ref": first, "new": True, "cwd": str(STORES.root / "gone")}),
              await _error(client, P.CLAIM_TOKEN, {"token": token, "as": "editor"}),
              await _error(client, P.CLAIM_TOKEN, {"token": "h_" + "A" * 32}),
              await _error(client, P.BRIEF, {"ref": 3})]
    codes = {e.reason: e.code for e in P.ERRORS + P.PROTOCOL_ERRORS}
    reasons = []
    for e in errors:
        assert shape_errors(e.data, P.ErrorData, "error.data") == []
        assert e.code == codes[e.data["reason"]], e.data
        reasons.append(e.data["reason"])
    assert reasons == ["unknown_session", "missing_directory", "claimed", "unknown", "invalid_params"]

    problems = [err for name, got in replies.items() for i, reply in enumerate(got)
                for err in shape_errors(reply, P.BY_NAME[name].result, f"{name}#{i}")]
    problems += shape_errors(changed, P.SessionsChangedParams, P.SESSIONS_CHANGED)
    assert problems == []
    assert [name for name, got in replies.items() if not got] == [], "every method of the contract is exercised"
    assert changed["runtimes"] == ["claude"]


def test_the_manifest_runtime_lists_are_written_from_the_registry(tmp_path: Path) -> None:
    """A runtime added to the registry reaches package.json through `npm run protocol`, never by hand."""
    from segue.lsp import typescript

    current = (EXT / "package.json").read_text(encoding="utf-8")
    assert typescript.manifest(current) == current  # the committed manifest is what the generator writes
    stale = json.loads(current)
    setting = stale["contributes"]["configuration"]["properties"]["segue.defaultRuntime"]
    first, names = P.RUNTIMES[0], [P.RUNTIME_NAMES[r] for r in P.RUNTIMES]
    setting["enum"], setting["enumDescriptions"] = ["", first], ["Ask every time", names[0]]
    stale["description"] = stale["description"].replace(", ".join(names), names[0])
    welcome = stale["contributes"]["viewsWelcome"][0]
    welcome["contents"] = welcome["contents"].replace(f"{', '.join(names[:-1])} or {names[-1]}", names[0])
    path = tmp_path / "package.json"
    path.write_text(json.dumps(stale, indent=2) + "\n", encoding="utf-8")
    ts = tmp_path / "protocol.generated.ts"
    ts.write_text(typescript.generate(), encoding="utf-8")
    assert typescript.main(["--check", str(ts), "--manifest", str(path)]) == 1
    assert typescript.main(["--out", str(ts), "--manifest", str(path)]) == 0
    assert path.read_text(encoding="utf-8") == current
    assert typescript.main(["--check", str(ts), "--manifest", str(path)]) == 0
