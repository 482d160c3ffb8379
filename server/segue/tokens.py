"""Handoff tokens: short-lived, single-use `h_…` tokens that move a session between surfaces.

The registry `handoff_tokens.json` stores only SHA-256 digests. Every read-check-write runs under an
exclusive lock on `handoff_tokens.lock`, a separate file that is never replaced (locking the registry
itself would let a waiter wake on a replaced inode and two claimers both win). Writes are atomic: temp
file, fsync, rename, directory fsync; success is reported only after that.
"""

from __future__ import annotations

import json
import os
import re
import stat
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from segue.errors import SegueError
from segue.paths import StateDir

TTL = 300.0  # seconds a token lives
SKEW = 5.0  # tolerated clock step back between issuing and claiming processes
GRACE = 3600.0  # claimed/revoked tombstones outlive expiry so a replay is told "already claimed"
TOKEN_SHAPE = re.compile(r"^h_[A-Za-z0-9_-]+$")
SURFACES = ("terminal", "editor")
SURFACE_SHAPE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")


class TokenError(SegueError):
    """A claim that cannot succeed; `reason` is one of malformed, unknown, expired, claimed, revoked."""

    messages: ClassVar[dict[str, str]] = {
        "malformed": "that is not a Segue handoff token (they look like h_ followed by 32 characters); "
                     "emit a new one with `segue handoff emit`",
        "unknown": "no such handoff token; it may belong to another machine or Segue state directory, "
                   "or was never issued. Emit a new one",
        "expired": "that handoff token has expired (tokens live 5 minutes); emit a new one",
        "claimed": "that handoff token was already claimed; tokens are single use. Emit a new one",
        "revoked": "that handoff token was replaced by a newer one for the same session; use the newest "
                   "token or emit again",
    }

    def __init__(self, reason: str) -> None:
        super().__init__(self.messages[reason], reason=reason)


def new_token() -> str:
    import secrets  # here: a listing reads the registry and never mints (hashlib and secrets cost its start)

    return "h_" + secrets.token_urlsafe(24)  # 34 characters; the prefix means it never starts with '-'


def digest(token: str) -> str:
    import hashlib

    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass
class Claimed:
    entry: dict[str, Any]


class Registry:
    lock_timeout = 10.0  # seconds to wait for another process's emit or claim before failing clearly

    def __init__(self, state: StateDir, clock: Callable[[], float] = time.time,
                 warn: Callable[[str], None] | None = None) -> None:
        self.state = state
        self.clock = clock
        self.warn = warn or (lambda msg: print(f"segue: warning: {msg}", file=sys.stderr))

    # -- public operations ------------------------------------------------------------------------------
    def emit(self, *, runtime: str, session_id: str, surface: str, cwd: str | None, title: str | None,
             brief_path: str | None) -> tuple[str, dict[str, Any]]:
        if not SURFACE_SHAPE.match(surface):
            raise ValueError(f"surface must be a short lowercase word such as {', '.join(SURFACES)}")
        token = new_token()
        with self._locked():
            reg = self._load()
            now = self.clock()
            for e in reg["tokens"].values():  # one live token per session: revoke older ones
                if (e.get("runtime"), e.get("session_id")) == (runtime, session_id) and e.get("state") == "issued":
                    e["state"] = "revoked"
                    e["revoked_at"] = now
            entry = {"state": "issued", "issued_at": now, "expires_at": now + TTL, "runtime": runtime,
                     "session_id": session_id, "surface": surface, "cwd": cwd, "title": title,
                     "brief_path": brief_path}
            reg["tokens"][digest(token)] = entry
            self._save(reg)
        return token, entry

    def claim(self, token: str, claimed_as: str) -> dict[str, Any]:
        token = token.strip()
        if not TOKEN_SHAPE.match(token) or len(token) > 200:
            raise TokenError("malformed")
        key = digest(token)
        import hmac  # here: it loads OpenSSL (3.4 MB resident), which a listing reading the registry never needs

        with self._locked():
            reg = self._load()
            now = self.clock()
            entry = None
            for k, e in reg["tokens"].items():  # constant-time comparison of digests
                if hmac.compare_digest(k, key):
                    entry = e
            if entry is None:
                raise TokenError("unknown")
            if entry["state"] == "claimed":
                raise TokenError("claimed")
            if entry["state"] == "revoked":
                raise TokenError("revoked")
            if not (entry["issued_at"] - SKEW <= now < entry["expires_at"]) or \
                    entry["expires_at"] - entry["issued_at"] > TTL + 1e-6:
                raise TokenError("expired")
            entry.update(state="claimed", claimed_at=now, claimed_as=claimed_as)
            self._save(reg)  # the claim counts only once this returns
        return dict(entry)

    def revoke_session(self, runtime: str, session_id: str, surface: str) -> int:
        """Revoke the live, unclaimed tokens `surface` emitted for a session; how many were revoked."""
        with self._locked():
            reg = self._load()
            now = self.clock()
            n = 0
            for e in reg["tokens"].values():
                if ((e.get("runtime"), e.get("session_id"), e.get("surface")) == (runtime, session_id, surface)
                        and e.get("state") == "issued" and now < e["expires_at"]):
                    e["state"] = "revoked"
                    e["revoked_at"] = now
                    n += 1
            if n:
                self._save(reg)
        return n

    def status(self) -> list[dict[str, Any]]:
        """Tokens still within their lifetime, claimed or not (never the token itself)."""
        reg = self._read_snapshot()
        now = self.clock()
        out = []
        for e in reg["tokens"].values():
            if e.get("state") == "revoked" or now >= e.get("expires_at", 0):
                continue
            out.append({"session": {"runtime": e.get("runtime"), "id": e.get("session_id"),
                                    "title": e.get("title")},
                        "surface": e.get("surface"), "issued_at": e.get("issued_at"),
                        "expires_at": e.get("expires_at"),
                        "seconds_left": max(0.0, e["expires_at"] - now),
                        "claimed": e.get("state") == "claimed", "claimed_as": e.get("claimed_as")})
        out.sort(key=lambda r: r["issued_at"] or 0)
        return out

    def handed_off(self) -> dict[tuple[str, str], dict[str, Any]]:
        """Sessions frozen on their source surface: a live, unclaimed token exists."""
        reg = self._read_snapshot()
        now = self.clock()
        out: dict[tuple[str, str], dict[str, Any]] = {}
        for e in reg["tokens"].values():
            if e.get("state") == "issued" and e.get("issued_at", 0) - SKEW <= now < e.get("expires_at", 0):
                out[(e["runtime"], e["session_id"])] = {"surface": e.get("surface"), "since": e["issued_at"],
                                                        "expires_at": e["expires_at"]}
        return out

    # -- storage --------------------------------------------------------------------------------------------
    def _locked(self) -> Any:
        from filelock import FileLock  # lazy: keeps start-up light

        self.state.ensure()
        lock_path = self.state.tokens_lock
        if os.path.islink(lock_path):
            raise PermissionError(f"{lock_path} is a symlink; refusing to use it")
        # one FileLock per operation: filelock objects shared across threads exclude nothing
        return FileLock(str(lock_path), timeout=self.lock_timeout, mode=0o600)

    def _read_snapshot(self) -> dict[str, Any]:
        """A lock-free read for display: the registry is only ever replaced atomically."""
        try:
            return self._parse(self._read_bytes())
        except (OSError, ValueError):
            return {"version": 1, "tokens": {}}

    def _read_bytes(self) -> bytes:
        path = self.state.tokens_file
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return b""
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                raise ValueError("registry is not a regular file")
            return f.read()

    @staticmethod
    def _parse(data: bytes) -> dict[str, Any]:
        if not data.strip():
            return {"version": 1, "tokens": {}}
        reg = json.loads(data)
        if not isinstance(reg, dict) or not isinstance(reg.get("tokens"), dict):
            raise ValueError("registry has no token table")
        for k, e in reg["tokens"].items():
            if not (isinstance(k, str) and isinstance(e, dict) and isinstance(e.get("issued_at"), (int, float))
                    and isinstance(e.get("expires_at"), (int, float)) and e.get("state") in
                    ("issued", "claimed", "revoked")):
                raise ValueError("registry entry has the wrong shape")
        return reg

    def _load(self) -> dict[str, Any]:
        """Under the lock: read, set a corrupt registry aside, sweep what has expired."""
        try:
            reg = self._parse(self._read_bytes())
        except (ValueError, UnicodeDecodeError, OSError) as e:  # OSError: a symlink (O_NOFOLLOW) or worse
            aside = self.state.root / f"handoff_tokens.corrupt-{int(self.clock())}-{os.urandom(2).hex()}.json"
            try:
                os.replace(self.state.tokens_file, aside)
                self.warn(f"the handoff token registry was damaged ({e}); moved it to {aside} and started "
                          "a fresh one: tokens emitted before this must be emitted again")
            except OSError:
                self.warn(f"the handoff token registry was damaged ({e}); starting a fresh one")
            reg = {"version": 1, "tokens": {}}
        now = self.clock()
        reg["tokens"] = {k: e for k, e in reg["tokens"].items() if now <= e["expires_at"] + GRACE}
        return reg

    def _save(self, reg: dict[str, Any]) -> None:
        d = self.state.root
        tmp = d / f".tokens.{os.getpid()}.{os.urandom(4).hex()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0),
                     0o600)
        try:
            os.write(fd, json.dumps(reg, separators=(",", ":")).encode())
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.replace(tmp, self.state.tokens_file)
        except OSError:
            os.unlink(tmp)
            raise
        dfd = os.open(d, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
