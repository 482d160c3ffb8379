"""The scanning index: which rules run where. One trie over the lower-cased text finds the keywords
that occur, gates and start positions narrow where a rule is tried; none of it changes a span."""

from __future__ import annotations

import collections
import itertools
import re
from collections.abc import Callable, Iterable, Iterator

from segue import recache
from segue.redact.checks import _quoted
from segue.redact.common import _OVERLAP, _WINDOW, FAST_PATHS
from segue.redact.generic import SHAPE_GATE, shape_gate_open
from segue.redact.lazy import LazyPattern
from segue.redact.rules import RULES, Rule, Starts

# ---------------------------------------------------------------------------------------------
# pre-filters: one regex pass over the lower-cased text finds which keywords occur, so most
# short texts (titles, commands, paths) cost one search instead of a hundred substring tests


def _trie(words: list[str]) -> str:
    """A regex for any of ``words`` with shared prefixes factored out (sre tries alternatives one
    by one, so a flat alternation of ~100 words costs several times more per position)."""
    heads: dict[str, list[str]] = {}
    for w in words:
        heads.setdefault(w[0], []).append(w[1:])
    alts = []
    for head, tails in sorted(heads.items()):
        rest = [t for t in tails if t]
        sub = _trie(rest) if rest else ""
        if sub and len(rest) < len(tails):  # a word ends here and longer ones go on
            sub = f"(?:{sub})?"
        alts.append(re.escape(head) + sub)
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# case-insensitive anchors are scanned in the lower-cased text; those that are a list of words are
# cut down to the words a window holds (same order, so the same hits): one or two words share a
# literal prefix, which sre skips to, where eight words make it try every position
_LOWER_ANCHORS = {r.anchor: LazyPattern(r.anchor.pattern.replace("(?i)", "")) for r in RULES
                  if r.anchor is not None and r.anchor.flags & re.I}
_ANCHOR_WORDS = {a: tuple(low.pattern.split("|")) for a, low in _LOWER_ANCHORS.items()
                 if re.fullmatch(r"[\w ]+(?:\|[\w ]+)*", low.pattern)}
_KEYWORDS = sorted({k for rule in RULES for k in rule.keywords} | {w for ws in _ANCHOR_WORDS.values() for w in ws})
# the trie of all keywords, for short texts; built after the first _EAGER_CALLS of them, which test every
# keyword by substring instead (~6 µs a call): a process that redacts a title or two never builds it (~4 ms)
_EAGER_CALLS = 64
_KEYWORD_RE: list[re.Pattern[str]] = []  # [the trie], once built
_short_calls = [0]


def _keyword_trie() -> re.Pattern[str] | None:
    """The trie of all keywords, or None while short texts are still few enough to test by substring."""
    if _KEYWORD_RE:
        return _KEYWORD_RE[0]
    _short_calls[0] += 1
    if _short_calls[0] <= _EAGER_CALLS:
        return None
    _KEYWORD_RE.append(recache.compile(_trie(_KEYWORDS)))
    if not _ANY_KEYWORD_RE:
        _ANY_KEYWORD_RE.append(recache.compile(_anchored_trie(_KEYWORDS)) if FAST_PATHS else _KEYWORD_RE[0])
    return _KEYWORD_RE[0]


# Whether a short text holds a keyword at all (most do not), with fewer tries than the trie: sre tries a
# charset-first pattern at every position whose character may start it, and walks the alternatives one by one
# there, so the trie above (keywords start with nearly every letter) costs ~35 ns a character. Here each keyword
# is found at one of its characters that is rare in text, then checked whole: the rest of it after that
# character is matched, the part before by a look-behind. Every occurrence of a keyword holds its character,
# so this search finds a match exactly when the trie does (tests/test_redact_fastpaths.py); ~2x cheaper.
# Characters from the most to the least frequent in transcripts and source (lower-cased); others are rarer still
_CHAR_FREQUENCY = " etrosiancdluhmpfg.-bk/y:vwx_(1=0q2j\"34986z"
# the characters keywords are found at (each keyword at its rarest of them): few, so that few positions are
# tried, and together in every keyword of the table (a new keyword without any is found at its rarest character)
_ANCHOR_CHARS = "_-vkqpnx:gcya"
_ANY_KEYWORD_RE: list[re.Pattern[str]] = []  # built with the trie


def _rarity(c: str) -> int:
    i = _CHAR_FREQUENCY.find(c)
    return i if i >= 0 else len(_CHAR_FREQUENCY)


def _anchored_trie(words: list[str]) -> str:
    """A regex that matches where one of ``words`` occurs (its match is not the word: only whether it
    matches counts). Each word is found at its anchor character and checked around it."""
    groups: dict[str, list[tuple[str, str]]] = {}
    # words with none of the anchor characters whose rarest are outside the table (пароль, 密钥, كلمة): each is
    # found at the one of those that most such words share, so that they form few alternatives (each costs ASCII
    # text a test at every character that can start one)
    words = [w for w in words if not any(v != w and v in w for v in words)]  # (one inside another: found with it)
    rare = len(_CHAR_FREQUENCY)
    wide = {w for w in words if not any(a in _ANCHOR_CHARS for a in w) and _rarity(max(w, key=_rarity)) == rare}
    shared = collections.Counter(a for w in wide for a in set(w) if _rarity(a) == rare and not a.isspace())
    for w in words:
        c = (max((a for a in w if _rarity(a) == rare and not a.isspace()), key=shared.__getitem__) if w in wide
             else max((a for a in w if a in _ANCHOR_CHARS), key=_rarity, default="") or max(w, key=_rarity))
        j = w.index(c)
        groups.setdefault(c, []).append((w[j + 1 :], w if j else ""))
    # the most frequent characters first: where the character does not start an alternative, sre skips it at
    # the cost of one comparison, so the common ones should not wait behind the rare ones
    return "|".join(re.escape(c) + _around(groups[c]) for c in sorted(groups, key=_rarity))


def _around(items: list[tuple[str, str]]) -> str:
    """The rest of each word after its anchor (a trie), then a look-behind for the whole word when it has
    characters before the anchor. ``items``: (what follows, the whole word or "" when nothing precedes)."""
    if any(not rest and not whole for rest, whole in items):
        return ""  # a word ends here with nothing before its anchor: the match is made
    by: dict[str, list[tuple[str, str]]] = {}
    for rest, whole in items:
        if rest:
            by.setdefault(rest[0], []).append((rest[1:], whole))
    alts = [re.escape(ch) + _around(sub) for ch, sub in sorted(by.items())]
    alts += [f"(?<={re.escape(whole)})" for rest, whole in items if not rest]
    return alts[0] if len(alts) == 1 else "(?:" + "|".join(alts) + ")"


# sre spends ~50 ns at each position that could start a charset-first pattern like the one above, but
# skips to a literal first character in ~1 ns: past a few hundred characters one trie per first
# character (~26 calls) is cheaper than one trie for all (compiled on first use: short texts never need them)
_SPLIT_AT = 400
# Each group reports, at every occurrence of its first character, the longest keyword starting there (the
# rest of the keyword is captured in a look-ahead, so the match consumes one character and no occurrence is
# hidden inside another: every keyword present is reported or lies inside a reported one, see _INNER).
_KEYWORD_GROUPS: list[tuple[str, re.Pattern[str]]] = []


def _keyword_groups() -> list[tuple[str, re.Pattern[str]]]:
    if not _KEYWORD_GROUPS:
        for c in sorted({k[0] for k in _KEYWORDS}):
            tails = [k[1:] for k in _KEYWORDS if k[0] == c and len(k) > 1]
            single = c in _KEYWORDS  # a one-character keyword: the tail may be empty
            rest = f"(?=({_trie(tails)}){'?' if single else ''})" if tails else "()"
            _KEYWORD_GROUPS.append((c, recache.compile(re.escape(c) + rest)))
    return _KEYWORD_GROUPS


_BY_FIRST: dict[str, tuple[str, ...]] = {}
for _k in _KEYWORDS:
    _BY_FIRST[_k[0]] = (*_BY_FIRST.get(_k[0], ()), _k)
del _k


# findall() reports non-overlapping matches: a keyword inside a match, or one that starts inside
# a match and runs past its end, is not reported, so derive the first and look the second up.
# Both tables are filled per keyword when first needed (all of them at once cost ~45 ms of import).
class _PerKeyword(dict[str, tuple[str, ...]]):
    def __init__(self, fill: Callable[[str], tuple[str, ...]]) -> None:
        super().__init__()
        self._fill = fill

    def __missing__(self, k: str) -> tuple[str, ...]:
        v = self[k] = self._fill(k)
        return v


def _inner_of(k: str) -> tuple[str, ...]:
    """The other keywords that occur inside ``k``."""
    return tuple(o for o in _KEYWORDS if o != k and o in k)


def _straddling_of(k: str) -> tuple[str, ...]:
    """The keywords that start inside ``k`` and run past its end (or start where it does and are longer)."""
    hits = {o for i in range(len(k)) for o in _BY_FIRST.get(k[i], ()) if len(o) > len(k) - i and o.startswith(k[i:])}
    return tuple(o for o in _KEYWORDS if o in hits)


_INNER = _PerKeyword(_inner_of)
_STRADDLING = _PerKeyword(_straddling_of)
# the keywords a long text's report implies (it and the keywords inside its keywords), per reported set
_INNER_CLOSED: dict[frozenset[str], frozenset[str]] = {}
_KEYWORD_RULES: dict[str, frozenset[int]] = dict.fromkeys(_KEYWORDS, frozenset())
for _i, _r in enumerate(RULES):  # one pass over the table (a keyword x rule product costs ~2 ms of import)
    if not _r.whole_text:
        for _k in set(_r.keywords):
            _KEYWORD_RULES[_k] = _KEYWORD_RULES[_k] | {_i}
del _i, _r, _k
_WHOLE_RULES = tuple(r for r in RULES if r.whole_text and r.keywords)
# whole-text rules with no keyword judge token shapes in one linear scan of their own (generic.py)
_SHAPE_RULES = tuple(r for r in RULES if r.whole_text and not r.keywords)
_GATED = frozenset(i for i, r in enumerate(RULES) if not r.keywords and r.gate is not None and not r.whole_text)


def _structure(pattern: str, start: int = 0) -> Iterator[tuple[int, str]]:
    """(index, character) of each character of ``pattern`` from ``start`` that is neither escaped nor inside a
    character class: the ones that make its groups and alternatives."""
    esc = in_class = False
    for i in range(start, len(pattern)):
        c = pattern[i]
        if esc:
            esc = False
        elif c == "\\":
            esc = True
        elif in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        else:
            yield i, c


def _branches(pattern: str) -> list[str]:
    """The top-level alternatives of a regex (sre scans a charset-first alternation at every position,
    but skips straight to a literal first character: so each branch is searched on its own)."""
    cuts, depth = [-1], 0
    for i, c in _structure(pattern):
        if c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and depth == 0:
            cuts.append(i)
    cuts.append(len(pattern))
    return [pattern[a + 1 : b] for a, b in itertools.pairwise(cuts)]


_PLAIN_CLASS_CHARS = frozenset("\"'`?&;:!=#@%,<>|/")
_QUANTIFIERS = ("?", "*", "+", "{")


def _group_end(pattern: str, start: int) -> int:
    """The index of the ")" that closes the group opened at ``start`` (-1 if none)."""
    depth = 0
    for i, c in _structure(pattern, start):
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return i
    return -1


def _literal_first(branch: str) -> list[str]:
    """``branch`` as alternatives that each start with a literal, where it starts with a class of a few plain
    characters (``["']…``) or a group of alternatives (``(?:KEY|TOKEN)…``): sre skips to a literal first
    character at ~1 ns a character but tries a charset-first pattern at every position (~15 ns), and a
    search for (A|B)R finds a match exactly when one for AR or for BR does."""
    if "(?P" in branch:  # a named group must not be repeated
        return [branch]
    if branch.startswith("[") and not branch.startswith(("[^", "[]")):
        chars, i = [], 1
        while i < len(branch) and branch[i] != "]":
            if branch[i] == "\\" and i + 1 < len(branch) and not branch[i + 1].isalnum():
                i += 1  # an escaped punctuation character stands for itself
            chars.append(branch[i])
            i += 1
        rest = branch[i + 1 :]
        if (i < len(branch) and 0 < len(chars) <= 6 and set(chars) <= _PLAIN_CLASS_CHARS
                and not rest.startswith(_QUANTIFIERS)):
            return [re.escape(c) + rest for c in dict.fromkeys(chars)]
    if branch.startswith("(?:"):
        end = _group_end(branch, 0)
        inner, rest = branch[3:end], branch[end + 1 :]
        alts = _branches(inner)
        if end > 0 and len(alts) > 1 and not rest.startswith(_QUANTIFIERS):
            return [x for a in alts for x in _literal_first(a + rest)]
    return [branch]


# rule index -> (the gate's branches, search them in the lower-cased text?); flags are read once here
# (RegexFlag arithmetic costs more than a short search)
_GATE_BRANCHES = {i: _branches(r.gate.pattern.replace("(?i)", "")) for i, r in enumerate(RULES) if r.gate is not None}
_GATES = {i: (tuple(LazyPattern(x) for b in bs for x in _literal_first(b)), bool(RULES[i].gate.flags & re.I))  # type: ignore[union-attr]
          for i, bs in _GATE_BRANCHES.items()}


# rules with a gate and no keyword (their gates are (?i)): one search in the lower-cased text tells
# whether any of them can match
_GATED_RE = recache.compile("|".join(b for i in sorted(_GATED) for b in _GATE_BRANCHES[i])) if _GATED else None


def _gate_search(i: int, text: str) -> bool:
    """As ``RULES[i].gate.search(text)``, branch by branch."""
    branches, on_low = _GATES[i]
    if on_low:  # its branches are for the lower-cased text
        return RULES[i].gate.search(text) is not None
    return any(b.search(text) for b in branches)


# the whole-text shape rules with their index in the table (their gates are searched branch by branch)
_SHAPE_INDEXED = tuple((i, r) for i, r in enumerate(RULES) if r.whole_text and not r.keywords)
# gates searched by a function that decides as the gate's regex does (SEGUE_FAST_PATHS=0: the regex)
_SHAPE_GATES: dict[int, Callable[[str], bool]] = {
    i: shape_gate_open for i, r in _SHAPE_INDEXED if FAST_PATHS and r.gate is not None and r.gate.pattern == SHAPE_GATE}


def _gate_open(i: int, text: str, low: str) -> bool:
    branches, on_low = _GATES[i]
    return any(b.search(low if on_low else text) for b in branches)


def _has_keyword(low: str) -> bool:
    if len(low) < _SPLIT_AT:
        trie = _KEYWORD_RE[0] if _KEYWORD_RE else _keyword_trie()
        return any(k in low for k in _KEYWORDS) if trie is None else _ANY_KEYWORD_RE[0].search(low) is not None
    return any(p.search(low) for _, p in _KEYWORD_GROUPS or _keyword_groups())


def _keywords_in(low: str) -> set[str]:
    """Every keyword that occurs in ``low``."""
    if len(low) >= _SPLIT_AT:  # every keyword present is reported or inside a reported one
        found: set[str] = set()
        for c, p in _KEYWORD_GROUPS or _keyword_groups():
            tails = p.findall(low)
            if tails:
                found.update(c + t for t in set(tails))
        if not found:
            return found
        key = frozenset(found)
        sure = _INNER_CLOSED.get(key)
        if sure is None:
            sure = set(found)
            for k in found:
                sure.update(_INNER[k])
            if len(_INNER_CLOSED) >= 4096:  # bounded: a text can report many sets
                _INNER_CLOSED.clear()
            sure = _INNER_CLOSED[key] = frozenset(sure)
        return set(sure)
    # short texts: one findall of the whole trie (non-overlapping matches), then the fix-ups
    trie = _KEYWORD_RE[0] if _KEYWORD_RE else _keyword_trie()
    if trie is None:
        return {k for k in _KEYWORDS if k in low}
    found = set(trie.findall(low))
    if not found:
        return found
    present = set(found)
    for k in found:
        present.update(_INNER[k])
    for o in {o for k in found for o in _STRADDLING[k]} - present:
        if o in low:
            present.add(o)
    return present


def _scan(chunk: str, offset: int, low: str) -> list[tuple[int, int, str]]:
    """Spans of the windowed rules in one window (``low`` is the window lower-cased)."""
    present = _keywords_in(low)
    _scans[0] += 1
    plans = _PLANS if FAST_PATHS and _scans[0] > _EAGER_SCANS else _PLAIN_PLANS
    key = frozenset(present)
    plan = plans.get(key)
    if plan is None:
        if len(plans) >= 4096:  # bounded: texts can hold many keyword sets
            plans.clear()
        plan = plans[key] = _plan(present, plans is _PLANS)
    found: list[tuple[int, int, str]] = []
    cache: dict[object, list[int]] = {}  # per window: anchor scans, and each word's occurrences (by the word)
    for i, rule, need, gated in plan:
        if need and not _holds(chunk, need):
            continue  # a character every match holds is missing: no match here
        if not gated or _gate_open(i, chunk, low):
            found += _run(rule, chunk, offset, low, cache, present)
    return found


# per set of keywords, the rules they pick (table order: it names merged spans), each with its required
# characters (when read) and whether it has a gate
_Plan = tuple[tuple[int, Rule, tuple[str, ...], bool], ...]
_PLANS: dict[frozenset[str], _Plan] = {}
_PLAIN_PLANS: dict[frozenset[str], _Plan] = {}  # (SEGUE_FAST_PATHS=0, and a process's first windows)


def _plan(present: set[str], required: bool) -> _Plan:
    picked = set(_GATED)
    for k in present:
        picked |= _KEYWORD_RULES[k]
    plan = []
    for i in sorted(picked):
        need = _REQUIRED.get(i) if required else ()
        if need is None:
            need = _REQUIRED[i] = _required_chars(RULES[i])
        plan.append((i, RULES[i], need, i in _GATES))
    return tuple(plan)


# Characters a rule's matches must hold, read from its regex (segue.redact.required): a rule is left out of a
# window that lacks one, which costs a few substring tests instead of its run (most rules a common keyword wakes,
# "token" in prose, want an operator, a quote, a "|" or a "--" the text does not have). Read for a rule when
# first needed, after the first _EAGER_SCANS windows (a process that scans a few pays nothing for it).
_REQUIRED: dict[int, tuple[str, ...]] = {}
_EAGER_SCANS = 32
_scans = [0]


def prepare_many() -> None:
    """Build now what a process that redacts many texts builds on the way (the keyword searches, the rules'
    required characters): a cold listing calls it before it forks, so its workers inherit them instead of each
    building its own. Changes no answer: each is built as it would be on first use."""
    if not _KEYWORD_RE:
        _short_calls[0] = max(_short_calls[0], _EAGER_CALLS)
        _keyword_trie()
    _keyword_groups()
    if FAST_PATHS:
        _scans[0] = max(_scans[0], _EAGER_SCANS)
        for i, rule in enumerate(RULES):
            if i not in _REQUIRED and not rule.whole_text:
                _REQUIRED[i] = _required_chars(rule)


def _required_chars(rule: Rule) -> tuple[str, ...]:
    if rule.finder is not None:
        return ()  # its regex is what the finder scans for, not what it finds
    from segue.redact.required import required

    return required(rule.regex.pattern, getattr(rule.regex, "_given", rule.regex.flags))


def _holds(chunk: str, need: tuple[str, ...]) -> bool:
    """Does ``chunk`` hold at least one character of each string of ``need``?"""
    for chars in need:
        if len(chars) == 1:
            if chars not in chunk:
                return False
        elif not any(c in chunk for c in chars):
            return False
    return True


def _occurrences(word: str, low: str) -> Iterable[int]:
    """Every start of ``word`` in ``low``, overlapping ones too (str.find skips like sre on a literal)."""
    i = low.find(word)
    while i >= 0:
        yield i
        i = low.find(word, i + 1)


def _occurrences_of(word: str, low: str, cache: dict[object, list[int]] | None) -> list[int] | Iterable[int]:
    """_occurrences, kept in ``cache`` (one window's): rules and anchors that share a word find it once."""
    if cache is None:
        return _occurrences(word, low)
    hits = cache.get(word)
    if hits is None:
        hits = cache[word] = list(_occurrences(word, low))
    return hits


def _word_hits(words: tuple[str, ...], low: str, present: set[str],
               cache: dict[object, list[int]] | None = None) -> list[int]:
    """Starts of the matches of the alternation ``words`` in ``low`` (leftmost, earlier word first,
    non-overlapping), from one literal search per word that occurs: sre skips straight to a literal
    but tries every position for words that start differently."""
    hits = sorted((a, i, len(w)) for i, w in enumerate(words) if w in present
                  for a in _occurrences_of(w, low, cache))
    out, end = [], 0
    for a, _, n in hits:
        if a >= end:  # what the alternation does: at each position the first word, never inside a match
            out.append(a)
            end = a + n
    return out


# sre's (?i) matches these to i and s, str.lower() keeps them (or, for U+0130, turns it into two characters)
_FOLD = str.maketrans({"\u0130": "i", "\u0131": "i", "\u017f": "s"})


def _lower(text: str) -> str:
    """Lower-cased as (?i) sees it, offsets kept: a keyword or start found here is one sre can match."""
    low = text.lower()
    if len(low) != len(text) or "\u0131" in low or "\u017f" in low:
        low = text.translate(_FOLD).lower()
    return low


def _start_positions(st: Starts, words: tuple[str, ...], low: str,
                     cache: dict[object, list[int]] | None = None) -> list[int]:
    """Where matches can begin (see Starts), in order."""
    out: set[int] = set()
    for w in words:
        for i in _occurrences_of(w, low, cache):
            if st.reach:
                seg = low[max(0, i - st.reach) : i]
                back = len(seg) if st.over is None else len(seg) - len(seg.rstrip(st.over))
                out.update(range(i - back, i + 1))
            else:
                out.add(i)
    return sorted(out)


def _value_span(m: re.Match[str]) -> tuple[int, int]:
    """The span to replace: group "s" without its surrounding quotes and trailing , ; else the match."""
    if "s" in m.re.groupindex and m.start("s") >= 0:
        a, b = m.span("s")
        v = m.group("s")
        if _quoted(v):
            return a + 1, b - 1
        while b > a + 1 and m.string[b - 1] in ",;":
            b -= 1
        return a, b
    return m.span()


_IDENT_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-"


def _identifier_starts(anchor: re.Pattern[str], text: str, low: str | None,
                       present: set[str] | None = None, cache: dict[object, list[int]] | None = None) -> list[int]:
    """Start of each identifier that holds an anchor keyword, in order, without repeats
    (``present``: the keywords ``low`` holds, if known)."""
    pat = _LOWER_ANCHORS.get(anchor)
    words = _ANCHOR_WORDS.get(anchor)
    hits: Iterable[int]
    if pat is None or low is None or len(low) != len(text):
        hits = (m.start() for m in anchor.finditer(text))
    elif words is not None and present is not None:
        hits = _word_hits(words, low, present, cache)
    else:
        hits = (m.start() for m in pat.finditer(low))
    out: list[int] = []
    last = -1
    for start in hits:
        floor = max(0, start - 70, last)
        start = floor + len(text[floor:start].rstrip(_IDENT_CHARS))  # back to the identifier's start
        if start != last:
            out.append(start)
            last = start
    return out



def _anchored(rule: Rule, text: str, starts: list[int]) -> Iterable[re.Match[str]]:
    done = -1
    for start in starts:
        if start < done:
            continue
        m = rule.regex.match(text, start)
        if m is not None:
            done = m.end()
            yield m




def _run(rule: Rule, text: str, offset: int, low: str | None = None,
         cache: dict[object, list[int]] | None = None,
         present: set[str] | None = None) -> list[tuple[int, int, str]]:
    """Spans of one rule in ``text`` (a window at ``offset``); ``cache`` shares anchor scans and word
    occurrences between the rules of one window."""
    if rule.finder is not None:
        return [(a + offset, b + offset, rid) for a, b, rid in rule.finder(text)]
    matches: Iterable[re.Match[str]]
    if rule.anchor is not None:
        cache = {} if cache is None else cache
        if rule.anchor not in cache:
            cache[rule.anchor] = _identifier_starts(rule.anchor, text, low, present, cache)
        matches = _anchored(rule, text, cache[rule.anchor])
    elif rule.starts is not None:
        same = low is not None and len(low) == len(text)  # the window's own lower-cased text (and cache)
        low = low if low is not None and same else _lower(text)
        words = rule.starts.words or rule.keywords
        if same and present is not None and not rule.starts.words:
            words = tuple(w for w in words if w in present)  # the window's keywords: the others have no occurrence
        matches = _anchored(rule, text, _start_positions(rule.starts, words, low, cache if same else None))
    else:
        matches = rule.regex.finditer(text)
    out = []
    has_s = "s" in rule.regex.groupindex  # looked up once per rule, not twice per match
    check, rid = rule.check, rule.id
    for m in matches:  # _value_span, inlined
        if has_s and m.start("s") >= 0:
            a, b = m.span("s")
            raw = m.group("s")
            if _quoted(raw):
                a, b = a + 1, b - 1
            else:
                while b > a + 1 and text[b - 1] in ",;":
                    b -= 1
        else:
            a, b = m.span()
            raw = m.group(0)
        if b <= a:
            continue
        if check is not None and not check(raw, m, text):
            continue
        out.append((a + offset, b + offset, rid))
    return out


def _windows(text: str) -> Iterable[tuple[int, str]]:
    if len(text) <= 2 * _WINDOW:
        yield 0, text
        return
    step = _WINDOW - _OVERLAP
    for start in range(0, len(text), step):
        yield start, text[start : start + _WINDOW]
        if start + _WINDOW >= len(text):
            break

