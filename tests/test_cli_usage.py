"""Usage errors (exit 2) show the usage of the subcommand they concern, and say how to fix them. Found by a new
user's trial."""

from __future__ import annotations

from pathlib import Path

import pytest

from segue import cli


def usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        cli.main(["--home", str(tmp_path / "state"), *argv])
    assert e.value.code == 2
    out = capsys.readouterr()
    assert out.out == "" and "Traceback" not in out.err
    return out.err


def test_handoff_without_an_action_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    err = usage_error(tmp_path, capsys, "handoff")
    assert err.startswith("usage: segue handoff ") and "emit, claim or status" in err
    # control: bare `segue` is one too (its help, exit 2)
    assert cli.main([]) == 2


@pytest.mark.parametrize(("argv", "prog"), [
    (["resume", "--bogus", "x"], "segue resume"),
    (["handoff", "emit"], "segue handoff emit"),
    (["handoff", "claim", "h_x", "--nope"], "segue handoff claim"),
    (["resume", "x", "--shell", "posix"], "segue resume"),  # a combination argparse cannot express
    (["trace"], "segue trace"),  # (argparse's own: the control)
])
def test_a_subcommands_usage_error_shows_its_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                   argv: list[str], prog: str) -> None:
    err = usage_error(tmp_path, capsys, *argv) if argv[-1] != "posix" else _returned(tmp_path, capsys, argv)
    assert err.startswith(f"usage: {prog} ") and f"\n{prog}: error: " in err
    assert "usage: segue [-h]" not in err


def _returned(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert cli.main(["--home", str(tmp_path / "state"), *argv]) == 2
    return capsys.readouterr().err


@pytest.mark.parametrize(("argv", "word"), [(["search", "-hello"], "-hello"), (["search", "fix", "-x"], "-x"),
                                            (["search", "--bogus"], "--bogus")])
def test_a_query_word_starting_with_a_dash_is_told_to_follow_dashes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                    argv: list[str], word: str) -> None:
    err = usage_error(tmp_path, capsys, *argv)
    assert f"put it after --: segue search -- {word}" in err
    # control: an error about an option's value gets no such hint
    err = usage_error(tmp_path, capsys, "search", "x", "--limit", "1001")
    assert "after --" not in err and "--limit" in err
