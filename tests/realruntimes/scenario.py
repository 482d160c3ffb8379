"""The scripted scenario the fake model plays, shared by every API dialect.

The fake model is stateless: for each request it finds the latest real user prompt and how many tool
results came after it, and picks the next scripted action. Each dialect (Anthropic Messages, OpenAI
Responses, Chat Completions) parses its own request shape into `Turn` and renders `Action`s as its own
stream. Fixture `expected.json` facts come from this script, never from Segue's output.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Action:
    kind: str  # "bash" | "write" | "agent" | "text"
    command: str = ""
    path: str = ""  # relative to the session cwd; dialects make it absolute when the tool needs it
    content: str = ""
    description: str = ""
    prompt: str = ""
    text: str = ""


@dataclass(frozen=True)
class Turn:
    """What a dialect read from one request."""

    prompt: str  # the latest real user prompt (runtime wrappers may remain; matching is by substring)
    tool_results_since_prompt: int
    tools_offered: tuple[str, ...] = field(default_factory=tuple)


# Prompts the generator sends, and what the agent does for each. Matching is by substring, first hit.
SCRIPTS: list[tuple[str, list[Action]]] = [
    ("echo hello > out.txt", [
        Action("bash", command="echo hello > out.txt && ls"),
        Action("text", text="Done. I created out.txt and listed the directory."),
    ]),
    ("nonexistent-dir", [
        Action("bash", command="ls /nonexistent-dir"),
        Action("write", path="notes.md", content="ls /nonexistent-dir failed: the directory does not exist.\n"),
        Action("text", text="The directory does not exist; I wrote notes.md about it."),
    ]),
    ("Count the files here", [  # the subagent's own task (must come before "subagent")
        Action("bash", command="ls | wc -l"),
        Action("text", text="The subagent counted the files: see the output above."),
    ]),
    ("subagent", [
        Action("agent", description="Count files",
               prompt="Count the files here with `ls | wc -l` and report the number."),
        Action("text", text="The subagent counted the files."),
    ]),
    ("database password", [
        Action("bash", command="printf 'DB_PASSWORD=Sup3rS3cret-42\\n' > .env && cat .env"),
        Action("text", text="Created .env with the database password."),
    ]),
    ("handoff brief", [
        Action("text", text="I read the brief. Shall I continue with the task it describes?"),
    ]),
]

TITLE = "Fake title"  # reply to tool-less requests (OpenCode's title call, Claude's topic checks)
DEFAULT = [Action("text", text="OK.")]


def next_action(turn: Turn) -> Action:
    if not turn.tools_offered:
        return Action("text", text=TITLE)
    actions = DEFAULT
    for needle, script in SCRIPTS:
        if needle in turn.prompt:
            actions = script
            break
    i = min(turn.tool_results_since_prompt, len(actions) - 1)
    return actions[i]
