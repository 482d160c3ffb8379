"""The branch a checkout has checked out, read from `.git/HEAD`: a module of its own so that a patched listing
(segue.patch) decorates the sessions it read again without importing segue.service."""

from __future__ import annotations

import os


def git_branch(cwd: str) -> str | None:
    """The branch checked out in a directory, from `.git/HEAD` (read only; no git process)."""
    d = cwd
    for _ in range(40):
        head = os.path.join(d, ".git")
        try:
            if os.path.isfile(head):  # a worktree or submodule: `gitdir: …`
                with open(head, encoding="utf-8", errors="replace") as f:
                    line = f.read(4096).strip()
                if line.startswith("gitdir:"):
                    head = os.path.join(d, line[7:].strip())
            with open(os.path.join(head, "HEAD"), encoding="utf-8", errors="replace") as f:
                ref = f.read(4096).strip()
            if ref.startswith("ref: refs/heads/"):
                return ref[len("ref: refs/heads/"):] or None
            return "HEAD" if ref else None
        except OSError:
            parent = os.path.dirname(d)
            if parent == d:
                return None
            d = parent
    return None
