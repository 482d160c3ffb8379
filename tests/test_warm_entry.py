"""A kept entry's layout (segue.warm, FORMAT 3): the probe's blob apart from the header, which names where it and
the printed bytes are; a patch table written piece by piece, cut back when a piece cannot be made."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from segue import warm


def _entry(path: Path, body: bytes, blob: bytes, first: bool) -> None:
    with open(path, "wb") as w:
        if first:  # the Keeper's order: the blob, then the printed bytes
            w.write(blob)
            w.write(body)
            warm.write_tail(w, len(blob) + len(body), ("k",), (0, len(blob)), [], float("inf"),
                            ("bytes", len(body), "", 0), None, len(blob))
        else:  # the patch path's: the printed bytes, then the blob with the header
            w.write(body)
            warm.write_tail(w, len(body), ("k",), blob, [], float("inf"), ("bytes", len(body), "", 0), None)
    os.chmod(path, 0o600)


def test_the_blob_and_the_body_are_where_the_header_says(tmp_path: Path) -> None:
    for first in (True, False):
        p = tmp_path / f"e{first}"
        _entry(p, b"[1,2]\n", b"BLOB" * 100, first)
        found = warm._read_entry(str(p))
        assert found is not None
        head, f, end = found
        with f:
            assert len(head) == 8 and head[0] == warm.FORMAT
            assert warm._read_blob(f, head[2], end) == b"BLOB" * 100
            base = head[7]
            f.seek(base)
            assert f.read(head[5][1]) == b"[1,2]\n"
            # the controls: a span past the header's start, or not a pair of integers
            assert warm._read_blob(f, (head[2][0], end - head[2][0] + 1), end) is None
            assert warm._read_blob(f, (0.0, 4), end) is None


class _Body(io.BytesIO):
    pass


def test_a_table_that_fails_is_cut_back() -> None:
    k = warm.Keeper.__new__(warm.Keeper)
    k._base, k._size = 3, 5
    body = _Body()
    body.write(b"BBBPPPPP")

    def pieces(fail: bool) -> Any:
        yield b"one"
        if fail:
            raise ValueError("unmarshallable")
        yield b"two"

    assert k._write_table(body, pieces(True)) is None
    assert body.getvalue() == b"BBBPPPPP" and body.tell() == 8
    assert k._write_table(body, pieces(False)) == (8, 6)  # the control: a table that is made is kept whole
    assert body.getvalue() == b"BBBPPPPPonetwo"
