"""A directory's current git branch, read from `.git/HEAD` without running git or writing anything.

For sessions whose runtime recorded no branch (Cline 3 subagent rows and some multi-cwd sessions): the
branch the directory is on *now*, which a brief must label as such. Worktrees and submodules keep a `.git`
file (`gitdir: <path>`) instead of a directory.
"""

from __future__ import annotations

import os
import stat

MAX_DEPTH = 64  # directories walked up from the session's cwd to find the repository
_SMALL = 4096  # HEAD and a `.git` file are one short line


def _read_small(path: str) -> str | None:
    """A small regular file's text, or None (never blocks on a FIFO, never follows into a device)."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        return os.read(fd, _SMALL).decode("utf-8", "replace")
    except OSError:
        return None
    finally:
        os.close(fd)


def git_dir(directory: str) -> str | None:
    """The git directory of the repository holding `directory` (walking up), or None."""
    d = os.path.abspath(directory)
    for _ in range(MAX_DEPTH):
        dot = os.path.join(d, ".git")
        try:
            st = os.stat(dot)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            return dot
        if st is not None and stat.S_ISREG(st.st_mode):
            text = _read_small(dot) or ""
            first = text.splitlines()[0].strip() if text.strip() else ""
            if first.startswith("gitdir:"):
                target = first[len("gitdir:"):].strip()
                return os.path.normpath(os.path.join(d, target)) if target else None
            return None
        parent = os.path.dirname(d)
        if parent == d:
            return None
        d = parent
    return None


def current_branch(directory: str | None) -> str | None:
    """The branch `directory` is on now (`ref: refs/heads/<name>` in HEAD), or None: not a repository, a
    detached HEAD (a commit, not a branch), or unreadable."""
    if not directory or not os.path.isabs(directory):
        return None
    gd = git_dir(directory)
    if gd is None:
        return None
    head = _read_small(os.path.join(gd, "HEAD"))
    if head is None:
        return None
    line = head.strip()
    prefix = "ref: refs/heads/"
    if line.startswith(prefix) and len(line) > len(prefix) and "\n" not in line:
        return line[len(prefix):]
    return None
