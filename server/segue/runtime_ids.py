"""The ids of the registered runtimes (segue.stores.RUNTIMES), in its order, for a CLI query's `--runtime` check:
that registry imports every reader and its descriptor (dataclasses). tests/test_record.py keeps the two equal."""

from __future__ import annotations

RUNTIME_IDS: tuple[str, ...] = ("claude", "codex", "opencode", "cline", "gemini")
