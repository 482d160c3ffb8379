"""bench.mutate changes only its own corpus: a copy's expected.json names the original's files (refused), a
corpus reached through a symlink is the same files (accepted)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from bench import mutate


def _corpus(root: Path) -> Path:
    f = root / "home" / ".claude" / "projects" / "p" / "s.jsonl"
    f.parent.mkdir(parents=True)
    f.write_text("{}\n")
    return f


def test_a_symlinked_corpus_is_its_own(tmp_path: Path) -> None:
    f = _corpus(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert mutate.inside(str(f), tmp_path / "link" / "home")
    assert mutate.inside(str(tmp_path / "link" / "home" / ".claude" / "x"), tmp_path / "real" / "home")


def test_a_copied_corpus_refuses_the_originals_files(tmp_path: Path) -> None:
    f = _corpus(tmp_path / "orig")
    shutil.copytree(tmp_path / "orig", tmp_path / "copy")
    assert not mutate.inside(str(f), tmp_path / "copy" / "home")
    assert not mutate.inside(str(tmp_path / "orig" / "homer" / "x"), tmp_path / "orig" / "home")  # a prefix only
    with pytest.raises(ValueError, match="outside"):
        mutate.apply([{"runtime": "claude", "path": str(f)}], tmp_path / "copy" / "home", tmp_path / "backup")
    assert f.read_text() == "{}\n"
