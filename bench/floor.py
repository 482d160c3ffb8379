"""The floors Segue's figures are compared with, each run as its own Python process by `bench.run`.

    python -m bench.floor headtail FILES_TXT [BYTES]   read the first and last BYTES (16 KiB) of every file
    python -m bench.floor parse FILE MODE              one pass over a JSONL transcript
    python -m bench.floor opencode-rows DB             what an OpenCode database's sessions' rows cost

MODE: `read` (bytes only), `json` (stdlib json.loads of every line), `orjson` (orjson.loads of every line),
`skip` (json.loads of every line except tool output, which is recognised by bytes and never decoded).
Each prints one JSON line: what it did, so the caller can check the work was real.
"""

from __future__ import annotations

import json
import os
import sys

# Lines that carry tool output, recognised without decoding (Claude Code and Codex records).
SKIP_MARKERS = (b'"type":"progress"', b'"tool_result"', b'"function_call_output"', b'"aggregated_output"',
                b'"type":"reasoning"')


def headtail(list_file: str, nbytes: int) -> dict[str, int]:
    files = total = 0
    with open(list_file, encoding="utf-8") as f:
        paths = [ln.rstrip("\n") for ln in f if ln.strip()]
    for p in paths:
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        try:
            size = os.fstat(fd).st_size
            total += len(os.read(fd, nbytes))
            if size > 2 * nbytes:
                total += len(os.pread(fd, nbytes, size - nbytes))
            elif size > nbytes:
                total += len(os.pread(fd, size - nbytes, nbytes))
        finally:
            os.close(fd)
        files += 1
    return {"files": files, "bytes": total}


def parse(path: str, mode: str) -> dict[str, int]:
    loads = json.loads
    if mode == "orjson":
        import orjson

        loads = orjson.loads
    lines = decoded = skipped = nbytes = 0
    with open(path, "rb") as f:
        for raw in f:
            lines += 1
            nbytes += len(raw)
            if mode == "read":
                continue
            if mode == "skip" and any(m in raw for m in SKIP_MARKERS):
                skipped += 1
                continue
            try:
                loads(raw)
                decoded += 1
            except ValueError:
                pass
    return {"lines": lines, "decoded": decoded, "skipped": skipped, "bytes": nbytes}


# Every session row, and each session's first message with its first part, decoded: the least a listing that
# shows a first request must read, whatever the database's size (its other messages and parts are never touched).
_FIRST_SQL = """
SELECT s.id, m.data, (SELECT p.data FROM part p WHERE p.message_id = m.id ORDER BY p.id LIMIT 1)
FROM session s LEFT JOIN message m ON m.id = (
  SELECT id FROM message WHERE session_id = s.id ORDER BY time_created, id LIMIT 1)"""


def opencode_rows(db: str) -> dict[str, int]:
    import sqlite3

    con = sqlite3.connect(f"file:{db}?immutable=1", uri=True)  # the corpus is static while the floor runs
    try:
        sessions = con.execute("SELECT * FROM session").fetchall()
        decoded = nbytes = 0
        for _sid, msg, part in con.execute(_FIRST_SQL):
            for doc in (msg, part):
                if doc:
                    json.loads(doc)
                    decoded += 1
                    nbytes += len(doc)
    finally:
        con.close()
    return {"sessions": len(sessions), "decoded": decoded, "bytes": nbytes}


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "headtail":
        out = headtail(argv[1], int(argv[2]) if len(argv) > 2 else 16 * 1024)
    elif len(argv) == 3 and argv[0] == "parse":
        out = parse(argv[1], argv[2])
    elif len(argv) == 2 and argv[0] == "opencode-rows":
        out = opencode_rows(argv[1])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
