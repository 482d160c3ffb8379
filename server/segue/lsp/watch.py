"""Watch the runtimes' stores (reading only) and say when sessions change.

Polling, not inotify: stdlib only and the same on every platform. Each tick stats a bounded set of paths:
every store root, every directory between a root and a source (a new session appears as a new entry, which
changes its directory's mtime, and a new day or project directory changes its parent's) and the most
recently active sources themselves (new activity in a live session). A change triggers a debounced rescan
through the service's warm cache; a notification goes out only when the sessions actually differ. A full
pass over every source runs every `FULL_EVERY` seconds or more (paced to the home's size) for what no
watched path shows, and keeps the service's listing current, so requests answer from memory.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable

from segue.collector import paused
from segue.heap import give_back
from segue.listing import Listing
from segue.service import Service

log = logging.getLogger("segue.lsp.watch")
MAX_WATCHED = 6000
RECENT_FILES = 64
SETTLE = 0.3  # seconds to let a burst of writes finish before rescanning
FULL_EVERY = 10.0  # seconds between full passes over every source (at least; slower on big homes)


class Watcher:
    def __init__(self, service: Service, notify: Callable[[list[str]], None], interval: float = 1.0) -> None:
        self.service = service
        self.notify = notify
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._paths: list[str] = []
        self._snapshot: dict[tuple[str, str], float | None] = {}
        self.ticks = 0  # for tests and logs: how many times the stores were looked at
        # the token registry's stat, the sessions it marks handed off (and until when): a claim, revoke or emit on
        # any surface, or a token running out, changes what the listing shows
        self._tokens_stat: object = ()
        self._handed: dict[tuple[str, str], float] = {}
        self.full_every = FULL_EVERY

    def _pace(self, took: float) -> None:
        """A full pass costs at most ~5 % of a core; the service reuses a listing until well after the next
        pass is due, so a request never pays for a scan while the watcher runs."""
        self.full_every = max(FULL_EVERY, 20 * took)
        self.service.reuse_within = max(self.service.reuse_within, 3 * self.full_every)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="segue-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            started = time.monotonic()
            # every session of the listing is built at once while the editor's first answer waits: the collector
            # would scan them again and again as they are made (8,000 sessions: ~130 ms of a 1.0 s start)
            with paused():
                listing = self._pass()  # also warms the cache for the first request
            self._pace(time.monotonic() - started)
        except Exception:
            log.exception("initial scan failed; not watching")
            return
        self._remember(listing)
        try:
            self._handoffs_changed()
        except Exception:  # (the registry is looked at again each tick; the watching goes on)
            log.exception("token registry check failed")
        sig = self._signature()
        last_full = time.monotonic()
        while not self._stop.wait(self.interval):
            try:
                self.ticks += 1
                handed = self._handoffs_changed()
                if handed and not self._stop.is_set():
                    self.notify(sorted(handed))
                if self._signature() == sig:
                    if time.monotonic() - last_full < self.full_every:
                        continue
                    # the periodic full pass: catches what the watched paths cannot show (an old session
                    # appended to in place) and keeps the service's listing fresh, so requests never scan
                    started = time.monotonic()
                    changed = self._remember(self._pass())
                    last_full = time.monotonic()
                    self._pace(last_full - started)
                    if changed and not self._stop.is_set():
                        self.notify(sorted(changed))
                    continue
                self._stop.wait(min(SETTLE, self.interval))
                before = list(self._paths)
                sig = self._signature()  # taken before the scan: a write during the scan shows up next tick
                changed = self._remember(self._pass())
                last_full = time.monotonic()
                if self._paths != before:
                    sig = self._signature()
                if changed and not self._stop.is_set():
                    self.notify(sorted(changed))
            except Exception:
                log.exception("watch tick failed")

    def _handoffs_changed(self) -> set[str]:
        """The runtimes whose handed-off sessions changed since the last look: the registry file changed (one
        stat a tick) or a token it marks ran out."""
        from segue.tokens import Registry

        state = self.service.state
        try:
            st = os.stat(state.tokens_file)
            stat: object = (st.st_mtime_ns, st.st_size, st.st_ino)
        except OSError:
            stat = None
        now = self.service.clock()
        if stat == self._tokens_stat and all(t > now for t in self._handed.values()):
            return set()
        self._tokens_stat = stat
        try:
            marks = Registry(state, clock=self.service.clock).handed_off()
            handed = {k: float(v["expires_at"]) for k, v in marks.items()}
        except Exception:  # an unreadable registry marks nothing handed off, as a listing does
            log.debug("token registry unreadable", exc_info=True)
            handed = {}
        changed = {rt for (rt, _sid) in handed.keys() ^ self._handed.keys()}
        self._handed = handed
        return changed

    def _pass(self) -> Listing:
        """One pass over the stores; what it freed (index rows, decoding, replaced sessions) goes back to the
        system (`segue.heap`: ~1-3 ms at 32,000 sessions)."""
        listing = self.service.refresh()
        give_back()
        return listing

    def _remember(self, listing: Listing) -> set[str]:
        snap = {(s.runtime, s.id): s.updated_at for s in listing.sessions}
        changed = {rt for (rt, sid), t in snap.items() if self._snapshot.get((rt, sid), -1.0) != t}
        changed |= {rt for (rt, sid) in self._snapshot if (rt, sid) not in snap}
        self._snapshot = snap
        paths: list[str] = []
        seen: set[str] = set()
        roots: list[str] = []
        for locs in listing.locations.values():
            for loc in locs:
                _add(paths, seen, loc.path)
                roots.append(os.path.normpath(loc.path))
        by_recent = sorted(listing.sessions, key=lambda s: s.sort_time, reverse=True)
        for s in by_recent[:RECENT_FILES]:
            _add(paths, seen, s.store_path)
            if s.store_path.endswith((".db", ".sqlite")):
                _add(paths, seen, s.store_path + "-wal")
        for s in by_recent:
            if len(paths) >= MAX_WATCHED:
                break
            for d in _dirs_up_to_root(s.store_path, roots):
                _add(paths, seen, d)
        self._paths = paths[:MAX_WATCHED]
        return changed

    def _signature(self) -> tuple[object, ...]:
        out: list[object] = []
        for p in self._paths:
            try:
                st = os.stat(p)
                out.append((st.st_mtime_ns, st.st_size))
            except OSError:
                out.append(None)
        return tuple(out)


def _dirs_up_to_root(path: str, roots: list[str]) -> list[str]:
    """The directories from a source's own up to the store root holding it (at most two when no root does)."""
    out: list[str] = []
    d = os.path.dirname(os.path.normpath(path))
    for _ in range(12):
        out.append(d)
        if d in roots:
            return out
        parent = os.path.dirname(d)
        if parent == d:
            break
        d = parent
    return out[:2]


def _add(paths: list[str], seen: set[str], p: str) -> None:
    if p and p not in seen:
        seen.add(p)
        paths.append(p)
