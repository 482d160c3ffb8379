"""segue.redact.recache: compiled redaction patterns kept between processes must be the very patterns re.compile
builds (Pattern.__eq__: flags and sre code), for every pattern the redactor holds; a damaged or foreign cache
falls back to re.compile; the negative control shows the comparison sees a wrong entry."""

from __future__ import annotations

import gc
import marshal
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import segue.redact  # noqa: F401 - every rule module, so every LazyPattern exists
from segue.redact import index, recache
from segue.redact.lazy import LazyPattern


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    recache.reset()
    yield
    recache.reset()


def patterns() -> list[tuple[str, int]]:
    found = {(p.pattern, p._given) for p in gc.get_objects() if isinstance(p, LazyPattern)}
    for name, mod in list(sys.modules.items()):  # the patterns the rule modules compile as they load
        if name.startswith("segue.redact"):
            for v in vars(mod).values():
                for p in (v if isinstance(v, tuple) else (v,)):
                    p = p[1] if isinstance(p, tuple) and len(p) == 2 else p
                    if isinstance(p, re.Pattern) and isinstance(p.pattern, str):
                        found.add((p.pattern, p.flags & ~re.U))
    index.prepare_many()  # the keyword searches, built after the first calls (or before a listing forks)
    found |= {(p.pattern, p.flags & ~re.U) for _c, p in index._KEYWORD_GROUPS}
    found |= {(p.pattern, p.flags & ~re.U) for p in (*index._KEYWORD_RE, *index._ANY_KEYWORD_RE)}
    assert len(found) > 140
    return sorted(found)


def test_kept_patterns_are_re_compiles(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    every = patterns()
    recache.use(str(tmp_path))
    assert [recache.compile(p, f) for p, f in every] == [re.compile(p, f) for p, f in every]  # misses
    recache.save()
    assert len(list(tmp_path.iterdir())) == 1
    recache.reset()
    recache.use(str(tmp_path))
    monkeypatch.setattr(re, "compile", lambda *a: pytest.fail("a kept pattern was compiled again"))
    got = [recache.compile(p, f) for p, f in every]  # every one from the file
    monkeypatch.undo()
    assert got == [re.compile(p, f) for p, f in every]
    text = "token=ghp_" + "a1B2" * 9 + " AKIAABCDEFGHIJKLMNOP password: hunter2-hunter2"
    assert [[m.span() for m in g.finditer(text)] for g in got] == \
        [[m.span() for m in re.compile(p, f).finditer(text)] for p, f in every]


def test_a_wrong_entry_is_seen(tmp_path: Path) -> None:
    """The negative control: another pattern's arguments under a key build a pattern that is not re.compile's."""
    (a, fa), (b, fb) = patterns()[:2]
    recache.use(str(tmp_path))
    recache.compile(a, fa)
    recache.compile(b, fb)
    recache.save()
    table = recache._table
    assert table is not None
    table[(a, fa)] = table[(b, fb)]
    assert recache.compile(a, fa) != re.compile(a, fa)


@pytest.mark.parametrize("content", [b"", b"not marshal", b"\xe9\x00\x00\x00\x00"])
def test_a_damaged_cache_compiles_afresh(tmp_path: Path, content: bytes) -> None:
    recache.use(str(tmp_path))
    recache.reset()
    path = next(iter([f"{tmp_path}/redact-re-{recache._version()}"]))
    Path(path).write_bytes(content)
    recache.use(str(tmp_path))
    p, f = patterns()[0]
    assert recache.compile(p, f) == re.compile(p, f)


def test_switched_off(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_RE_CACHE", "0")
    recache.use(str(tmp_path))
    p, f = patterns()[0]
    assert recache.compile(p, f) == re.compile(p, f)
    recache.save()
    assert list(tmp_path.iterdir()) == []


_COUNTING = """
import os, sys
from segue import patch, recache
if os.environ.get("TEST_WORKERS"):  # the cold listing summarises in worker processes, as a big one does
    from segue import listing
    listing.PARALLEL_MIN = 1
misses = []
real_args = recache._args
recache._args = lambda p, f: (misses.append(p), real_args(p, f))[1]
real_answer = patch.answer
def answer(*a):
    rc = real_answer(*a)
    print("PATCH", rc, file=sys.stderr)
    return rc
patch.answer = answer
from segue.entry import main
rc = main(sys.argv[1:])
sys.stdout.flush()
print("MISSES", len(misses), file=sys.stderr)
raise SystemExit(rc)
"""


@pytest.mark.parametrize("workers", [False, True], ids=["in-process", "workers"])
def test_a_full_listing_keeps_the_fixed_patterns_for_the_first_patch(tmp_path: Path, workers: bool) -> None:
    """The full path fills the cache too (only the redactor's fixed patterns: no secret of the listed sessions is
    in a key), its worker processes' compiles included, so the first patch after it compiles nothing; the
    negative control: without the file it does."""
    import json
    import subprocess

    from tests.store_changes import append_claude_reply, claude_transcript
    from tests.test_cli_real import Stores

    stores = Stores(tmp_path)
    secret = "ghp_" + "Zq7xW3" * 6
    one = claude_transcript(tmp_path)  # its title holds the secret: the patch below summarises it again
    text = one.read_text()
    assert "Please run `echo hello" in text
    one.write_text(text.replace("Please run `echo hello", f"Please use {secret} to run `echo hello"))

    def run() -> tuple[bytes, str]:
        env = {**stores.env, "TEST_WORKERS": "1"} if workers else stores.env
        p = subprocess.run([sys.executable, "-c", _COUNTING, "list", "--json"], env=env, capture_output=True,
                           timeout=120)
        assert p.returncode == 0, p.stderr
        return p.stdout, p.stderr.decode()

    out, err = run()  # cold: the full path
    assert secret.encode() not in out and b"REDACTED" in out and "PATCH" not in err
    assert int(err.split("MISSES ")[1]) > 0
    files = list((tmp_path / "segue-home" / "cache").glob("redact-re-*"))
    assert len(files) == 1
    kept = marshal.loads(files[0].read_bytes())
    fixed = {p for p, _f in patterns()}  # (by their text: patterns() reads inline flags into the flags)
    assert kept and {p for p, _f in kept} <= fixed, {p for p, _f in kept} - fixed
    assert not any(secret in p or "Zq7xW3" in p for p, _f in kept)

    append_claude_reply(tmp_path, "done, nothing else")
    before = files[0].read_bytes()
    patched, err = run()
    assert "PATCH 0" in err and int(err.split("MISSES ")[1]) == 0, err
    assert files[0].read_bytes() == before
    ref = subprocess.run([sys.executable, "-m", "segue", "list", "--json"], env={**stores.env, "SEGUE_WARM": "0"},
                         capture_output=True, timeout=120)
    assert patched == ref.stdout and json.loads(patched)

    append_claude_reply(tmp_path, "and once more")
    files[0].unlink()
    _out, err = run()  # the control: the same patch without the kept patterns compiles
    assert "PATCH 0" in err and int(err.split("MISSES ")[1]) > 0, err


def test_a_one_shot_brief_keeps_and_uses_the_fixed_patterns(tmp_path: Path) -> None:
    """`segue brief` (a one-shot process) compiles the redactor's patterns from the kept ones and saves what it
    compiled: the next brief compiles none of them, and prints what SEGUE_RE_CACHE=0 prints. Controls: without
    the kept file the same brief compiles again; a cache directory others may read is neither used nor written."""
    import subprocess

    from tests.test_cli_real import Stores

    stores = Stores(tmp_path)
    sec = next(s for s in stores.expected["codex"]["sessions"] if s.get("scenario") == "secret")
    argv = ["brief", f"codex:{sec['id']}", "--stdout"]

    def run(**env: str) -> tuple[bytes, int]:
        p = subprocess.run([sys.executable, "-c", _COUNTING, *argv], env={**stores.env, **env},
                           capture_output=True, timeout=120)
        assert p.returncode == 0, p.stderr
        out = re.sub(rb"Written by Segue at \S+", b"", p.stdout)  # the one line that names the moment
        return out, int(p.stderr.decode().split("MISSES ")[1])

    cache = tmp_path / "segue-home" / "cache"
    first, misses = run()  # a fresh state directory: no cache to use yet (none is created for it)
    assert misses == 0 and b"REDACTED" in first and cache.is_dir() and not list(cache.glob("redact-re-*"))
    out, misses = run()
    assert misses > 0 and out == first
    files = list(cache.glob("redact-re-*"))
    assert len(files) == 1
    kept = marshal.loads(files[0].read_bytes())
    assert kept and {p for p, _f in kept} <= {p for p, _f in patterns()}  # the fixed patterns, no secret
    again, misses = run()
    assert misses == 0 and again == first
    assert again == run(SEGUE_RE_CACHE="0")[0]

    files[0].unlink()
    _out, misses = run()  # the control: the same brief without the kept patterns compiles them
    assert misses > 0 and len(list(cache.glob("redact-re-*"))) == 1

    for f in cache.glob("redact-re-*"):
        f.unlink()
    cache.chmod(0o750)
    try:
        out, misses = run()  # not private: plain re.compile (nothing asks recache), nothing written there
        assert out == first and misses == 0 and not list(cache.glob("redact-re-*"))
    finally:
        cache.chmod(0o700)
