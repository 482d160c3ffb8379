"""`segue list` for a person: a screenful on a terminal with a note of how many more, `--limit 0` for all;
`--json` prints everything unless limited; progress on a terminal's stderr only."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from segue import cli
from tests.test_listing import DirReader, dir_reader  # noqa: F401  (the fixture)


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, dir_reader: type[DirReader]) -> Path:  # noqa: F811
    store = tmp_path / "home" / "store"
    store.mkdir(parents=True)
    for i in range(40):
        (store / f"{i}.json").write_text(json.dumps({"id": f"s{i:02d}", "t": 1000 + i, "q": f"ask {i}"}))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var in ("CODEX_HOME", "OPENCODE_DATA_DIR", "CLINE_DIR", "CLAUDE_CONFIG_DIR", "XDG_DATA_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr("shutil.get_terminal_size", lambda *a: __import__("os").terminal_size((120, 14)))
    return tmp_path


def run(home: Path, monkeypatch: pytest.MonkeyPatch, *argv: str, tty: bool) -> tuple[str, str]:
    out, err = (Tty(), Tty()) if tty else (io.StringIO(), io.StringIO())
    monkeypatch.setattr("sys.stdout", out)
    monkeypatch.setattr("sys.stderr", err)
    assert cli.main(["--home", str(home / "state"), "list", *argv]) == 0
    return out.getvalue(), err.getvalue()


def test_a_terminal_gets_a_screenful_and_how_many_more(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = run(home, monkeypatch, tty=True)
    rows = out.splitlines()[1:]
    assert len(rows) == 10 and "ask 39" in rows[0]  # 14 lines - 4
    assert "30 more sessions" in err and "--limit 0" in err


def test_limit_zero_is_all_and_a_pipe_gets_all(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, err = run(home, monkeypatch, "--limit", "0", tty=True)
    assert len(out.splitlines()) == 41 and "more" not in err
    out, err = run(home, monkeypatch, tty=False)
    assert len(out.splitlines()) == 41 and err == ""
    out, err = run(home, monkeypatch, "--limit", "3", tty=False)
    assert len(out.splitlines()) == 4 and "37 more" in err


def test_json_prints_everything_unless_limited(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out, _ = run(home, monkeypatch, "--json", tty=True)
    assert len(json.loads(out)) == 40
    out, _ = run(home, monkeypatch, "--json", "--limit", "2", tty=False)
    assert [s["id"] for s in json.loads(out)] == ["s39", "s38"]


def test_a_negative_limit_is_a_usage_error(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(SystemExit) as e:
        cli.main(["--home", str(home / "state"), "list", "--limit", "-1"])
    assert e.value.code == 2


def test_progress_shows_on_a_terminal_after_a_second_only(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli.ScanProgress, "AFTER", 0.0)
    _, err = run(home, monkeypatch, "--limit", "0", tty=True)
    assert "reading sessions: claude 40" in err
    (home / "state").rename(home / "state-old")  # cold again
    _, err = run(home, monkeypatch, "--limit", "0", tty=False)
    assert err == ""
    monkeypatch.setattr(cli.ScanProgress, "AFTER", 60.0)
    (home / "state").rename(home / "state-old2")
    _, err = run(home, monkeypatch, "--limit", "0", tty=True)
    assert "reading" not in err
