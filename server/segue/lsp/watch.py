"""Watch the runtimes' stores (reading only) and say when sessions change.

Polling, not inotify: stdlib only and the same on every platform. Each tick stats a bounded set of paths:
every store root, the directory of every source (a new session appears as a new entry, which changes its
directory's mtime) and the most recently active sources themselves (new activity in a live session). A
change triggers a debounced rescan through the service's warm cache; a notification goes out only when the
sessions actually differ.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from segue.listing import Listing
from segue.service import Service

log = logging.getLogger("segue.lsp.watch")
MAX_WATCHED = 6000
RECENT_FILES = 64


class Watcher:
    def __init__(self, service: Service, notify: Callable[[list[str]], None], interval: float = 1.0) -> None:
        self.service = service
        self.notify = notify
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._paths: list[str] = []
        self._snapshot: dict[tuple[str, str], float | None] = {}

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="segue-watch", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()

    def _run(self) -> None:
        try:
            listing = self.service.scan()  # also warms the cache for the first request
        except Exception:
            log.exception("initial scan failed")
            return
        self._remember(listing)
        sig = self._signature()
        while not self._stop.wait(self.interval):
            try:
                now = self._signature()
                if now == sig:
                    continue
                self._stop.wait(min(0.3, self.interval))  # let a burst of writes settle
                listing = self.service.scan()
                changed = self._remember(listing)
                sig = self._signature()
                if changed:
                    self.notify(sorted(changed))
            except Exception:
                log.exception("watch tick failed")

    def _remember(self, listing: Listing) -> set[str]:
        snap = {(s.runtime, s.id): s.updated_at for s in listing.sessions}
        changed = {rt for (rt, sid), t in snap.items() if self._snapshot.get((rt, sid), -1.0) != t}
        changed |= {rt for (rt, sid) in self._snapshot if (rt, sid) not in snap}
        self._snapshot = snap
        paths: list[str] = []
        seen: set[str] = set()
        for locs in listing.locations.values():
            for loc in locs:
                _add(paths, seen, loc.path)
        by_recent = sorted(listing.sessions, key=lambda s: s.sort_time, reverse=True)
        for s in by_recent[:RECENT_FILES]:
            _add(paths, seen, s.store_path)
            if s.store_path.endswith((".db", ".sqlite")):
                _add(paths, seen, s.store_path + "-wal")
        for s in by_recent:
            if len(paths) >= MAX_WATCHED:
                break
            d = os.path.dirname(s.store_path)
            _add(paths, seen, d)
            _add(paths, seen, os.path.dirname(d))
        self._paths = paths
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


def _add(paths: list[str], seen: set[str], p: str) -> None:
    if p and p not in seen:
        seen.add(p)
        paths.append(p)
