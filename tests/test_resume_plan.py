"""Resume plan rules for every runtime pair and reason (no store needed); markers and trace chains."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from segue import resume
from segue.lineage import chain, find_marker, link, marker
from segue.model import Continues, Session
from segue.stores import RUNTIMES

NATIVE = {
    "claude": ["claude", "--resume", "ID"],
    "codex": ["codex", "resume", "ID"],
    "opencode": ["opencode", "--session", "ID"],
    "cline": ["cline", "--auto-approve", "false", "--id", "ID"],
    "gemini": ["gemini", "--resume", "ID"],
}
CWD_BOUND = ("claude", "opencode", "gemini")  # native resume only from the session's own directory


def sess(rt: str, **kw: object) -> Session:
    return Session(runtime=rt, id="ID", store_path="/s", cwd="/w", **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("source", RUNTIMES)
@pytest.mark.parametrize("target", RUNTIMES)
def test_every_runtime_pair(source: str, target: str) -> None:
    mode, reason = resume.choose(sess(source), target=target, new=False, cwd=None, in_store=True)
    if source == target:
        assert (mode, reason) == ("native", "native")
        assert resume.native_argv(target, "ID") == NATIVE[target]
    else:
        assert (mode, reason) == ("new_session", "other_runtime")


@pytest.mark.parametrize("rt", RUNTIMES)
def test_reasons(rt: str) -> None:
    assert resume.choose(sess(rt), target=None, new=True, cwd=None, in_store=True) == ("new_session", "requested")
    sub = sess(rt, parent_id="P", resumable=False, resume_blocker="subagent")
    assert resume.choose(sub, target=None, new=False, cwd=None, in_store=True) == ("new_session", "subagent")
    assert resume.choose(sess(rt), target=None, new=False, cwd=None, in_store=False) == ("new_session", "not_in_store")
    vsx = sess(rt, resumable=False, resume_blocker="cli_cannot_reopen")
    assert resume.choose(vsx, target=None, new=False, cwd=None, in_store=True) == ("new_session", "not_resumable")
    moved = resume.choose(sess(rt), target=None, new=False, cwd="/elsewhere", in_store=True)
    if rt in CWD_BOUND:
        assert moved == ("new_session", "cwd_override")
    else:
        assert moved == ("native", "native")
    assert resume.choose(sess(rt), target=None, new=False, cwd="/w", in_store=True) == ("native", "native")
    # a session without a recorded directory reopens as any other once --cwd chooses one
    nodir = Session(runtime=rt, id="ID", store_path="/s", resumable=False, resume_blocker="no_directory")
    chosen = resume.choose(nodir, target=None, new=False, cwd="/elsewhere", in_store=True)
    assert chosen == (("new_session", "cwd_override") if rt in CWD_BOUND else ("native", "native"))


def test_unknown_target_is_refused() -> None:
    with pytest.raises(resume.PlanRefused) as e:
        resume.choose(sess("codex"), target="emacs", new=False, cwd=None, in_store=True)
    assert e.value.reason == "bad_target"


@pytest.mark.parametrize("rt", RUNTIMES)
def test_new_session_argv_names_the_brief_by_path_and_ends_with_the_marker(rt: str) -> None:
    src = Session(runtime="codex", id="0199abcd", store_path="/s")
    prompt = resume.first_prompt("/state/handoffs/codex-0199abcd.md", src)
    argv = resume.new_session_argv(rt, prompt)
    assert argv[-1] == prompt and prompt.splitlines()[-1] == "[segue-handoff v1 from=codex:0199abcd]"
    assert "/state/handoffs/codex-0199abcd.md" in prompt and "confirm the task with the user" in prompt
    resume.assert_no_bypass(argv)
    if rt == "cline":
        assert argv[1:3] == ["--auto-approve", "false"]


@pytest.mark.parametrize("argv", [["claude", "--dangerously-skip-permissions"], ["codex", "--yolo"],
                                  ["cline", "--auto-approve", "true"], ["opencode", "--auto"],
                                  ["claude", "--permission-mode", "bypassPermissions"]])
def test_bypass_flags_are_caught(argv: list[str]) -> None:
    with pytest.raises(AssertionError):
        resume.assert_no_bypass(argv)


def test_dash_ids_are_refused() -> None:
    with pytest.raises(resume.PlanRefused):
        resume.native_argv("codex", "--yolo")


def test_missing_directory_and_cli(tmp_path: Path) -> None:
    s = sess("codex")
    with pytest.raises(resume.PlanRefused) as e:
        resume.check_directory(str(tmp_path / "gone"), s, overridden=False)
    assert e.value.reason == "missing_directory" and "--cwd" in str(e.value) and "no longer exists" in str(e.value)
    assert resume.check_directory(str(tmp_path), s, overridden=True) == str(tmp_path)
    # a directory the person chose never existed as far as Segue knows (found by a new user's trial)
    with pytest.raises(resume.PlanRefused) as e:
        resume.check_directory(str(tmp_path / "gone"), s, overridden=True)
    assert e.value.reason == "missing_directory" and str(e.value).endswith("gone does not exist")
    (tmp_path / "file").write_text("")
    with pytest.raises(resume.PlanRefused) as e:
        resume.check_directory(str(tmp_path / "file"), s, overridden=True)
    assert str(e.value).endswith("file is not a directory")
    with pytest.raises(resume.PlanRefused) as e:
        resume.locate_cli("codex", path=str(tmp_path))
    assert e.value.reason == "missing_cli" and "npm install -g @openai/codex" in str(e.value)
    fake = tmp_path / "codex"
    fake.write_text("#!/bin/sh\n")
    os.chmod(fake, 0o755)
    assert resume.locate_cli("codex", path=str(tmp_path)) == str(fake)


def test_launch_env_drops_segue_variables_and_adds_nothing() -> None:
    env = resume.launch_env({"PATH": "/bin", "SEGUE_HOME": "/x", "SEGUE_TOKEN": "h_x", "HOME": "/h"})
    assert env == {"PATH": "/bin", "HOME": "/h"}


# ---------------------------------------------------------------------------------------------------------
# Lineage

@pytest.mark.parametrize("wrapped", [
    "Read the brief\n{m}",
    "\"Read the brief\n{m}\"",  # OpenCode's literal quotes
    "<user_input mode=\"act\">Read the brief\n{m}</user_input>",  # Cline hub runs
    "Read the brief\n{m}\n\n",
])
def test_marker_found_after_wrappers(wrapped: str) -> None:
    text = wrapped.format(m=marker("claude", "ea68516a-1111"))
    assert find_marker(text) == Continues("claude", "ea68516a-1111")


@pytest.mark.parametrize("text", [
    "Read the brief [segue-handoff v1 from=claude:abc]",  # not on its own line
    "[segue-handoff v1 from=claude:abc]\nand then more text",  # not the last line
    "Read\n[segue-handoff v2 from=claude:abc]",
    "Read\n[segue-handoff v1 from=emacs:abc]",
    None, "",
])
def test_marker_rejected(text: str | None) -> None:
    assert find_marker(text) is None


def test_chain_in_both_directions_across_runtimes() -> None:
    a = Session(runtime="claude", id="a", store_path="/a", started_at=1, title="first")
    b = Session(runtime="codex", id="b", store_path="/b", started_at=2,
                first_request="Read\n" + marker("claude", "a"))
    c = Session(runtime="opencode", id="c", store_path="/c", started_at=3,
                first_request="Read\n" + marker("codex", "b"))
    other = Session(runtime="cline", id="x", store_path="/x", started_at=4, first_request="unrelated")
    sessions = [c, other, a, b]
    assert [s.id for s in link(sessions)] == ["c", "b"]
    for start in (a, b, c):
        assert [(e["runtime"], e["id"]) for e in chain(sessions, start)] == [
            ("claude", "a"), ("codex", "b"), ("opencode", "c")]
    assert chain(sessions, c)[1]["continues"] == {"runtime": "claude", "id": "a"}


def test_chain_with_a_source_gone_from_its_store() -> None:
    b = Session(runtime="codex", id="b", store_path="/b", first_request="Read\n" + marker("claude", "gone"))
    link([b])
    # a link is named by its title, else its first request (b has no title)
    assert [(e["id"], e["title"], e["found"]) for e in chain([b], b)] == [
        ("gone", None, False), ("b", b.first_request, True)]
