"""The Redactor: exact values, rule spans merged and applied, excerpts cut around redacted text."""

from __future__ import annotations

import base64
import bisect
import operator
import os
import re
from collections.abc import Iterable, Mapping
from typing import Literal

from segue import recache
from segue.redact import decode, generic
from segue.redact.checks import _CODE_RE, is_placeholder
from segue.redact.common import _CONTEXT, _ENV_NAME_RE, _MIN_EXACT, _OVERLAP, _WINDOW, MARKER_RE, WITHHELD, log
from segue.redact.index import (
    _GATED_RE,
    _SHAPE_GATES,
    _SHAPE_INDEXED,
    _SPLIT_AT,
    _WHOLE_RULES,
    _gate_search,
    _has_keyword,
    _lower,
    _run,
    _scan,
    _windows,
)
from segue.redact.keyblocks import _extend_back_over_key_block, _extend_over_key_blocks, _orphan_key_tail

# ---------------------------------------------------------------------------------------------
# exact values


def _encodings(value: str) -> set[str]:
    """The value plus the forms it takes when base64- or percent-encoded inside something larger."""
    forms = {value}
    raw = value.encode()
    for pad in range(3):  # base64 at each alignment; drop characters that mix in neighbouring bytes
        enc = base64.b64encode(b"\0" * pad + raw).decode().rstrip("=")
        lead = (pad * 4 + 2) // 3 if pad else 0
        tail = 1 if (pad + len(raw)) % 3 else 0
        core = enc[lead : len(enc) - tail]
        if len(core) >= _MIN_EXACT:
            forms.add(core)
            forms.add(core.replace("+", "-").replace("/", "_"))
    import urllib.parse  # only where exact values are known (~3 ms of import otherwise)

    for q in (urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)):
        forms.add(q)
    return {f for f in forms if len(f) >= _MIN_EXACT}


def _env_values(environ: Mapping[str, str]) -> list[str]:
    return [v for k, v in environ.items() if _ENV_NAME_RE.search(k) and len(v) >= _MIN_EXACT]


# ---------------------------------------------------------------------------------------------


class Redactor:
    """Replaces secrets with ``[REDACTED:<rule-id>]``; see the module docstring."""

    def __init__(self, exact_values: Iterable[str] = (), environ: Mapping[str, str] | None = None,
                 remember: bool = True) -> None:
        env = dict(os.environ if environ is None else environ)  # read once: an agent cannot export it away
        self._exact: set[str] = set()
        self._exact_re: re.Pattern[str] | None = None
        for v in [*exact_values, *_env_values(env)]:
            self._add(v)
        self._compile_exact()
        # values any rule found (6+ chars): their other occurrences are redacted too, in this text and,
        # with remember=True, in every later call (a brief: found under a key, shown bare elsewhere)
        self.remember = remember
        self._learned: set[str] = set()

    def scoped(self) -> Redactor:
        """A Redactor with the same exact values and a fresh memory of found values (one per brief)."""
        child = Redactor.__new__(Redactor)
        child._exact, child._exact_re = self._exact, self._exact_re
        child.remember, child._learned = True, set()
        return child

    def learned(self) -> frozenset[str]:
        """The values rules have found so far (what redact_known() redacts)."""
        return frozenset(self._learned)

    def learned_count(self) -> int:
        """How many values rules have found so far: the memory only grows, so an equal count is the same
        memory (what lets a caller reuse a result for the same text)."""
        return len(self._learned)

    def redact_known(self, text: str) -> tuple[str, int]:
        """Redact only the values found so far and the exact values: cheap, for a last pass over the
        pieces of a brief written before a later piece taught the Redactor a value."""
        spans = self._known_spans(text, [])
        return (_apply(text, spans), len(spans)) if spans else (text, 0)

    def add_exact(self, value: str) -> None:
        """Also redact this value (e.g. a token this process minted) and its encodings."""
        if self._add(value):
            self._compile_exact()

    def _add(self, value: str) -> bool:
        if len(value) < _MIN_EXACT:
            return False
        new = _encodings(value) - self._exact
        self._exact |= new
        return bool(new)

    def _compile_exact(self) -> None:
        if self._exact:
            alts = sorted(self._exact, key=lambda s: (-len(s), s))  # longest first
            self._exact_re = re.compile("|".join(map(re.escape, alts)))

    # -- public --------------------------------------------------------------------------

    def redact(self, text: str) -> tuple[str, int]:
        """(text with secrets replaced by markers, number replaced). Idempotent."""
        total = 0
        for _ in range(3):  # a marker can expose a new match ("Token [REDACTED]"): run to a fixed point
            spans = self._spans(text)
            if not spans:
                break
            text, total = _apply(text, spans), total + len(spans)
        return text, total

    def excerpt(self, text: str, limit: int, keep: Literal["head", "tail"] = "head") -> tuple[str, int, bool]:
        """Redact a window around the part that survives a cut to ``limit`` characters, then cut.

        The window holds at least 8 KiB beyond the cut (more if redaction shrank it) and reaches over
        any private-key block that starts in it, so a secret straddling the cut is seen whole.
        Fails closed: on any error the block is withheld and only the exception type is logged.
        """
        truncated = len(text) > limit
        try:
            return self._excerpt(text, limit, keep, truncated)
        except Exception as exc:  # fail closed, never echo the text
            log.warning("redaction failed: %s", type(exc).__name__)
            return WITHHELD, 0, truncated

    # -- internals -----------------------------------------------------------------------

    def _excerpt(self, text: str, limit: int, keep: str, truncated: bool) -> tuple[str, int, bool]:
        limit = max(0, limit)
        if not truncated:  # the common case: the whole text is the window and nothing is cut
            spans = self._spans(text)
            if not spans:
                return text, 0, False
            red = _apply(text, spans)
            if len(red) <= limit:
                return red, min(sum(1 for _ in MARKER_RE.finditer(red)), len(spans)), False
        context = _CONTEXT
        for attempt in range(4):
            if keep == "head":
                lo, hi = 0, min(len(text), limit + context)
                hi = _extend_over_key_blocks(text, lo, hi)
            else:
                lo, hi = max(0, len(text) - limit - context), len(text)
                lo = _extend_back_over_key_block(text, lo, hi)
            window = text[lo:hi]
            spans = self._spans(window)
            if keep == "tail" and lo > 0:
                spans = _merge([*spans, *_orphan_key_tail(window)])
            red = _apply(window, spans)
            # The _OVERLAP characters at the window's cut side may hold the part of a secret that a
            # rule could not see whole. Redaction can shorten the text and pull them into the kept
            # part: then widen the window, and in the end keep less rather than leak.
            if keep == "head":
                safe = len(red) if hi >= len(text) else _map_offset(spans, len(window) - _OVERLAP)
            else:
                safe = len(red) if lo <= 0 else len(red) - _map_offset(spans, _OVERLAP)
            whole = hi >= len(text) if keep == "head" else lo <= 0
            if safe >= limit or whole or attempt == 3:
                keep_n = min(limit, safe)
                out = _cut_head(red, keep_n) if keep == "head" else _cut_tail(red, keep_n)
                break
            context *= 4
        kept = sum(1 for _ in MARKER_RE.finditer(out)) if spans else 0
        return out, min(kept, len(spans)), truncated

    def _spans(self, text: str) -> list[tuple[int, int, str]]:
        """Rule spans, then every other occurrence of a value they cover (and of values found earlier)."""
        spans = self._rule_spans(text)
        for view in decode.views(text):  # percent-encoded, JSON-escaped, split across quoted pieces
            more = decode.mapped(self._rule_spans(view[1]), view)
            if more:
                spans = _merge_into(spans, more)
        if not spans and not self._learned:  # the common case
            return spans
        new = {text[a:b] for a, b, rid in spans if b - a >= _MIN_LEARNED and rid not in _NOT_LEARNED}
        new = {v for v in new if _learnable(v)}
        if new or self._learned:
            spans = self._known_spans(text, spans, new)
        return spans

    def _known_spans(self, text: str, spans: list[tuple[int, int, str]],
                     new: set[str] | frozenset[str] = frozenset()) -> list[tuple[int, int, str]]:
        """``spans`` plus every occurrence of a found value (``new`` and, remembered, earlier ones) that is
        not part of a longer word. Bounded: at most _MAX_LEARNED values are remembered and propagated, so a
        text full of random-looking tokens costs no more than its own rules."""
        if self.remember and len(self._learned) < _MAX_LEARNED:
            for v in sorted(new - self._learned)[: _MAX_LEARNED - len(self._learned)]:
                self._learned.add(v)
        pool = self._learned | set(sorted(new)[:_MAX_LEARNED])
        found = list(spans)
        if pool:
            found += _bounded_occurrences(text, [v for v in pool if v in text])  # `in` is cheaper than sre
        if not spans and self._exact_re is not None and any(v in text for v in self._exact):
            found += [(*m.span(), "known-secret") for m in self._exact_re.finditer(text)]
        return _drop_protected(text, _merge(found)) if found else found

    def _rule_spans(self, text: str) -> list[tuple[int, int, str]]:
        found: list[tuple[int, int, str]] = []
        if self._exact_re is not None and any(v in text for v in self._exact):  # `in` is cheaper than sre
            found += [(*m.span(), "known-secret") for m in self._exact_re.finditer(text)]
        low = _lower(text)
        # else no rule can match: most titles, commands and paths stop here
        if _has_keyword(low) or (_GATED_RE is not None and _GATED_RE.search(low)):
            if "-----BEGIN" in text or "PuTTY-User-Key-File" in text:
                for rule in _WHOLE_RULES:
                    if any(k in low for k in rule.keywords):
                        found += _run(rule, text, 0)
            if len(text) <= 2 * _WINDOW:
                found += _scan(text, 0, low)
            else:
                for start, chunk in _windows(text):
                    found += _scan(chunk, start, low[start : start + len(chunk)])
        if len(text) < _SPLIT_AT:  # linear scans, tried only where their gate opens
            if len(text) >= 16:
                # short texts: the whole gate in one search (a call per branch costs more)
                for i, rule in _SHAPE_INDEXED:
                    if rule.gate is None or (_SHAPE_GATES[i](text) if i in _SHAPE_GATES else rule.gate.search(text)):
                        found += _run(rule, text, 0)
        else:
            for i, rule in _SHAPE_INDEXED:
                if rule.gate is None or (_SHAPE_GATES[i](text) if i in _SHAPE_GATES else _gate_search(i, text)):
                    found += _run(rule, text, 0)
        if not found:
            return found
        return _drop_protected(text, _drop_masked(text, _merge(found)))


# a run of mask characters right after a match: the match is the visible head of a masked value (sk_live_4eC3…****,
# what a tool or a test prints instead of the secret), not a secret
_MASK_AFTER_RE = recache.compile(r"\*{3,}|•{2,}")


def _drop_masked(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    if "*" not in text and "•" not in text:
        return spans
    return [s for s in spans if _MASK_AFTER_RE.match(text, s[1]) is None]


_LEARN_CHARS_RE = recache.compile(r"[^\s\"'`()\[\]{}<>,;\\]{6,200}")


def _learnable(value: str) -> bool:
    """Worth redacting wherever else it occurs: one secret-like word, not code, a name or a placeholder.
    A false positive learned would spread through the whole brief."""
    if not _LEARN_CHARS_RE.fullmatch(value) or "[REDACTED:" in value or is_placeholder(value):
        return False
    if value.isalpha() and value.isascii() and len(value) >= 8 and not (value.islower() or value.isupper()):
        # letters only: a secret if mixed case and not words (gzTszuMeSg yes; PasswordField, HelloWorld no)
        return not _CODE_RE.match(value) and not generic._wordy(value)
    if _CODE_RE.match(value) or re.fullmatch(r"[A-Za-z_.\-]+|\d+|[\d.]+|[A-Za-z][\w.-]*=", value):
        return False
    # a digit, both cases or a symbol: "and/or", "get-started" are words, "Tr0ub4dor&3" is not
    if "=" in value.rstrip("="):
        return False  # key=value: code or a flag, not one secret
    return any(c.isdigit() for c in value) or any(c in "!@#$%^&*?~+" for c in value) or not (
        value.islower() or value.isupper())


def _bounded_occurrences(text: str, values: list[str]) -> list[tuple[int, int, str]]:
    """Every occurrence of each value not inside a longer alphanumeric word."""
    out = []
    n = len(text)
    for v in values:
        i = text.find(v)
        while i >= 0:
            j = i + len(v)
            if (i == 0 or not text[i - 1].isalnum()) and (j >= n or not text[j].isalnum()):
                out.append((i, j, "repeated-secret"))
            i = text.find(v, i + 1)
    return out


_MIN_LEARNED = 6
_MAX_LEARNED = 64
_NOT_LEARNED = frozenset({"private-key", "private-key-open", "putty-private-key", "known-secret", "repeated-secret"})


def _drop_protected(text: str, spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Spans that overlap no marker already in the text (so redact() is idempotent). Linear: spans and
    markers are both sorted by start, and markers do not overlap each other."""
    if "[REDACTED:" not in text or not spans:
        return spans
    marks = [m.span() for m in MARKER_RE.finditer(text)]
    if not marks:
        return spans
    starts = [a for a, _ in marks]
    out = []
    for s in sorted(spans):
        i = bisect.bisect_left(starts, s[1])  # markers starting before the span ends
        if i and marks[i - 1][1] > s[0]:
            continue  # the last such marker overlaps (any earlier one ends before it starts)
        out.append(s)
    return out


_START, _END = operator.itemgetter(0), operator.itemgetter(1)


def _merge(spans: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """Union of overlapping spans; the first rule (by position, then table order) names it."""
    out: list[tuple[int, int, str]] = []
    # by start, then longest first, ties in the given order: two stable sorts on C keys (a lambda building a
    # tuple per span costs several times more on texts with thousands of spans)
    ordered = sorted(spans, key=_END, reverse=True)
    ordered.sort(key=_START)
    for a, b, rid in ordered:
        if out and a < out[-1][1]:
            pa, pb, prid = out[-1]
            out[-1] = (pa, max(pb, b), prid)
        else:
            out.append((a, b, rid))
    return out


def _merge_into(spans: list[tuple[int, int, str]], more: list[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """``_merge([*spans, *more])`` where ``spans`` is already merged (each starts at or after the previous
    one's end): only the spans ``more`` can touch are merged again, so a text with many decoded views does not
    sort and walk all of its spans once per view. Spans ending before ``more`` begins, or starting after it
    ends, sort strictly before or after every span of the middle and never overlap it."""
    lo = min(a for a, _, _ in more)
    hi = max(b for _, b, _ in more)
    i = bisect.bisect_left(spans, lo, key=_END)  # the first span ending at or after lo (ends are sorted too)
    j = bisect.bisect_right(spans, hi, i, key=_START)  # the first span starting after hi
    return [*spans[:i], *_merge([*spans[i:j], *more]), *spans[j:]]


def _apply(text: str, spans: list[tuple[int, int, str]]) -> str:
    parts, pos = [], 0
    for a, b, rid in spans:
        parts += [text[pos:a], f"[REDACTED:{rid}]"]
        pos = b
    parts.append(text[pos:])
    return "".join(parts)


def _map_offset(spans: list[tuple[int, int, str]], off: int) -> int:
    """Where offset ``off`` of the original lands in the redacted text (start of a marker if inside one)."""
    shift = 0
    for a, b, rid in spans:
        if a >= off:
            break
        marker = len(rid) + 11
        if b > off:
            return a + shift
        shift += marker - (b - a)
    return off + shift




def _straddling_marker(red: str, cut: int) -> re.Match[str] | None:
    """The marker that the cut position falls inside, if any (markers are at most ~75 chars)."""
    for m in MARKER_RE.finditer(red, max(0, cut - 80), cut + 80):
        if m.start() < cut < m.end():
            return m
    return None


def _cut_head(red: str, limit: int) -> str:
    m = _straddling_marker(red, limit)
    return red[: m.start() if m else limit]  # never leave half a marker


def _cut_tail(red: str, limit: int) -> str:
    cut = max(0, len(red) - limit)
    m = _straddling_marker(red, cut)
    return red[m.end() if m else cut :]


_DECODE_DEPTH = [0]


def _decoded_has_secret(text: str) -> bool:
    """generic.decoded_scan: do the rules find anything in a decoded base64 run? (one level deep)"""
    if _DECODE_DEPTH[0]:
        return False
    _DECODE_DEPTH[0] += 1
    try:
        return bool(_PLAIN._rule_spans(text))
    finally:
        _DECODE_DEPTH[0] -= 1


_PLAIN = Redactor(environ={}, remember=False)
generic.decoded_scan = _decoded_has_secret
