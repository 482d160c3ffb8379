"""Secret redaction for text quoted from agent transcripts (security.md §1).

Three layers, applied together and merged: (a) exact values this process knows (secret-looking
environment variables, tokens it minted) in plain, base64 and percent-encoded form; (b) vendor
prefixes (tier 1, unconditional); (c) structure and context (tier 2) and generic assignments
that must also pass an entropy test (tier 3). Transcripts leak short human passwords in prose
and on command lines, so tier 2 is anchored on keywords rather than on entropy (§1.5b).

Every rule has lower-case keyword pre-filters, bounded quantifiers and, where it can start
anywhere, a look-behind anchor: Python's ``re`` backtracks, and agent stores hold minified lines
of hundreds of KB. Long texts are scanned in overlapping windows so that a keyword in one
window does not make a rule scan the whole text.

Most of what a brief quotes (thousands of commands, paths, titles) holds no keyword, so the cost
per call matters as much as throughput. One trie regex over the lower-cased text finds which
keywords occur, or that none does and the call returns; a rule then runs only if one of its
keywords occurs and its gate (a cheap regex every match contains) opens; a rule whose regex sre
cannot skip through (no literal first) is tried only where a match can start. sre skips to a
literal first character in about a nanosecond but spends ~50 ns at each candidate of a
charset-first pattern, which is what most of the choices below come from. Pre-filters only skip
work: tests/test_redact_prefilter.py checks them against every rule run by finditer.

Shapes no vendor table lists (issue 12) are judged in Python by generic.py: a short prefix and a random body,
long random runs, base64 that decodes to a secret, quoted random literals assigned to any key. Once a rule
finds a value (6+ characters, secret-like), its other occurrences are redacted too; a Redactor remembers up
to 64 such values across calls (``scoped()`` gives a fresh memory, one per brief; ``redact_known()`` is the
cheap last pass over pieces written before a value was found).

Some secrets are visible only decoded (``decode``): percent-encoded values, JSON escaped inside a string,
values split across quoted concatenation. Where a literal-first trigger finds one, a bounded region around it
is rewritten, the rules run on the rewrite and their spans are mapped back over the encoded characters.

Per text the cost is mostly proving that nothing can match (issues 16, 17): whether any keyword occurs is one
search that tries only a few rare characters (index._anchored_trie); a rule a keyword wakes is left out of a
window that lacks a character every match of its regex holds (``required``, read from sre's parse); the shape
gate runs on a byte mapping of the text. SEGUE_FAST_PATHS=0 gives their plain formulations.

Layout: ``common`` (markers, sizes), ``checks`` (entropy, placeholders, key names), ``generic`` (shape
finders), ``keyblocks`` (PEM blocks), ``rules`` (the table: id, tier, pattern, check, then the speed knobs
keywords/gate/starts/anchor), ``index`` (which rules run where), ``required`` (characters a regex's matches
hold), ``decode`` (decoded views), ``core`` (the
Redactor), ``summary`` (titles and first requests of listings), ``lazy`` (patterns compiled on first use: a
listing that redacts one title pays ~13 ms for the redactor, not ~90). tests/test_redact_equivalence.py proves
the fast paths give the whole Redactor's output of the knob-free reference path. To add a rule: one
``Rule(...)`` line in ``rules.RULES``; give it keywords that every match contains, and run
tests/test_redact_prefilter.py.
"""

from segue.redact import checks, common, core, decode, generic, index, keyblocks, rules, summary

# one namespace for callers and tests: ``from segue.redact import Redactor``, ``redact.RULES``, ``redact._run``
for _mod in (common, checks, generic, keyblocks, rules, index, decode, core, summary):
    globals().update({k: v for k, v in vars(_mod).items() if not k.startswith("__")})
del _mod

__all__ = ["HANDOFF_TOKEN_RE", "MARKER_RE", "RULES", "WITHHELD", "Redactor", "Rule", "is_placeholder", "shannon"]
