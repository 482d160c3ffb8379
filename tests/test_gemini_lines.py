"""Gemini CLI's small session files are read in one call and split in memory (`_lines`): the same records,
damaged-line counts and cut-last-line handling as iterating the file line by line (the path files over
WHOLE_READ keep), on random mixtures of records, blank lines, CRLF, damage, over-long and cut lines."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from segue.model import ReadStats
from segue.stores.base import loads
from segue.stores.gemini import reader as G

PIECES = [
    json.dumps({"id": "m1", "timestamp": "2026-01-01T00:00:00.000Z", "type": "user", "content": "hi"}),
    json.dumps({"sessionId": "s", "startTime": "2026-01-01T00:00:00.000Z"}, indent=2).replace("\n", " "),
    '{"$set":{"lastUpdated":"2026-01-02T00:00:00.000Z"}}', "", "   ", "\t", "{damaged", "[1, 2]", '"x"',
    '{"id":"m2","content":"' + "y" * 300 + '"}', "\r", '{"a":1}\r',
    '{"p":"' + "z" * 191 + '"}', '{"p":"' + "z" * 192 + '"}', '{"p":"' + "z" * 193 + '"}',  # around MAX_LINE
]


def _read(path: Path) -> tuple[list[object], int]:
    stats = ReadStats()
    return [loads(raw) for raw in G._lines(path, stats)], stats.damaged_lines


@pytest.mark.parametrize("seed", range(6))
def test_whole_read_gives_the_lines_iteration_gives(seed: int, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    monkeypatch.setattr(G, "MAX_LINE", 200)  # some lines are over it
    for i in range(150):
        lines = [rng.choice(PIECES) for _ in range(rng.randint(0, 12))]
        data = "\n".join(lines)
        ending = rng.choice(["\n", "", "\n\n", '\n{"id":"cut', "\r\n", '\n{"id":"m3"}'])
        path = tmp_path / f"s{seed}-{i}.jsonl"
        path.write_bytes((data + ending).encode())
        whole = _read(path)
        with monkeypatch.context() as m:
            m.setattr(G, "WHOLE_READ", -1)  # every file goes through the line iteration
            iterated = _read(path)
        assert whole == iterated, data + ending


def test_a_small_file_is_read_in_one_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2}\n')
    calls = []
    monkeypatch.setattr(G, "_split_lines", lambda data, stats: calls.append(data) or iter(()))
    assert _read(path) == ([], 0) and calls == [path.read_bytes()]
