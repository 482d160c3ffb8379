"""Segue's own state directory: briefs, tokens, cache, events.

`SEGUE_HOME`, else platformdirs' `user_state_dir("segue")`. Inside: `handoffs/` (briefs), `handoff_tokens.json`
+ `handoff_tokens.lock`, `cache/` (listing cache, kept brief facts), `events.jsonl`. Everything is private
(0700 directories, 0600 files) and checked before use: a symlinked or group/world-writable directory is
refused, never silently repaired.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from segue.errors import SegueError
from segue.record import record


class UnsafeDirectory(SegueError):
    """A state directory is a symlink, not ours, or writable by others."""

    reason = "unsafe_directory"


def default_home(environ: dict[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    override = env.get("SEGUE_HOME")
    if override:
        return Path(override).expanduser().absolute()
    import platformdirs  # only here: keeps `segue --help` fast

    return Path(platformdirs.user_state_dir("segue", appauthor=False)).absolute()


def ensure_private_dir(path: Path) -> Path:
    """Create `path` (0700) if missing; refuse a symlink, a non-directory, another owner, or group/world
    write bits. Missing parents are created 0700 too (os.makedirs gives them the umask's 0755: `--home
    ~/new/state` would leave ~/new readable by all); parents that exist are not ours to change."""
    missing = []
    p = Path(os.path.abspath(path))
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    try:
        for d in reversed(missing):
            with contextlib.suppress(FileExistsError):  # (made meanwhile by another process: checked below)
                os.mkdir(d, 0o700)
    except (FileExistsError, NotADirectoryError) as e:
        raise UnsafeDirectory(f"{path} exists and is not a directory") from e
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        raise UnsafeDirectory(f"{path} is a symlink; Segue keeps private files only in a real directory")
    if not stat.S_ISDIR(st.st_mode):
        raise UnsafeDirectory(f"{path} is not a directory")
    if hasattr(os, "geteuid") and st.st_uid != os.geteuid():
        raise UnsafeDirectory(f"{path} belongs to another user")
    if st.st_mode & 0o022:
        raise UnsafeDirectory(
            f"{path} is writable by group or others (mode {stat.S_IMODE(st.st_mode):o}); "
            f"run `chmod 700 {path}` if that is intended to be private")
    if st.st_mode & 0o077:
        # readable by others but not writable: tighten our own directory, which is safe to do
        os.chmod(path, 0o700)
    return path


@record(frozen=True)
class StateDir:
    root: Path

    @classmethod
    def resolve(cls, explicit: str | os.PathLike[str] | None = None) -> StateDir:
        return cls(Path(explicit).expanduser().absolute() if explicit else default_home())

    def ensure(self) -> Path:
        return ensure_private_dir(self.root)

    @property
    def handoffs(self) -> Path:
        return self.root / "handoffs"

    @property
    def cache(self) -> Path:
        return self.root / "cache"

    @property
    def tokens_file(self) -> Path:
        return self.root / "handoff_tokens.json"

    @property
    def tokens_lock(self) -> Path:
        return self.root / "handoff_tokens.lock"

    @property
    def events(self) -> Path:
        return self.root / "events.jsonl"

    def private(self, sub: Path) -> Path:
        self.ensure()
        return ensure_private_dir(sub)
