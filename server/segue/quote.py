"""CommonMark-safe quoting of untrusted text (security.md §3).

Transcript text is hostile: it may try to close the fence it is quoted in, fake headings or
HTML, hide characters, or carry terminal escapes. Each quoted block goes through, in order:

1. ``clean``          normalise line ends, strip terminal escapes and control characters
                      (before redaction: a colour code can split a secret in two)
2. redact             ``Redactor.excerpt`` (segue.redact): redact, then cut to the size cap
3. ``mark_invisible`` show bidi, zero-width and tag characters as ``<U+XXXX>``
4. ``fence``          a backtick fence longer than any backtick run in the final body

Titles and paths that go inline use ``inline`` (clean, mark, one line, code span).
"""

from __future__ import annotations

import re

# OSC ends on BEL or ST; Linux vt also ends it on the next ESC, hence [^\x07\x1b\x9c].
_ESC_RE = re.compile(
    r"\x1b\][^\x07\x1b\x9c]{0,65536}(?:\x07|\x1b\\|\x9c)?"  # OSC: titles, hyperlinks, OSC 52 clipboard
    r"|\x1b[P^_X][^\x1b\x9c]{0,65536}(?:\x1b\\|\x9c)?"  # DCS, PM, APC, SOS
    r"|(?:\x1b\[|\x9b)[\x30-\x3f]{0,64}[\x20-\x2f]{0,16}[\x40-\x7e]?"  # CSI, 7- and 8-bit
    r"|[\x90\x98\x9d-\x9f][^\x07\x1b\x9c]{0,65536}(?:\x07|\x1b\\|\x9c)?"  # 8-bit string introducers
    r"|\x1b[\x20-\x2f]{0,16}[\x30-\x7e]?"  # other ESC sequences (and a lone ESC)
)
_CTRL_RE = re.compile(r"[\x01-\x08\x0b-\x1f\x7f-\x9f]")  # keeps \t and \n; NUL is handled apart
_INVISIBLE_RE = re.compile(
    "[\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180f\u200b-\u200f\u202a-\u202e\u2060-\u206f"
    "\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff9-\ufffb\U000e0000-\U000e007f\U000e0100-\U000e01ef]"
)
_BACKTICKS_RE = re.compile(r"`+")
# Info strings are picked by code; never derived from input.
INFO_STRINGS = frozenset({"", "text", "diff", "console", "json", "python", "shell", "markdown"})


def clean(text: str) -> str:
    """LF line ends, no terminal escapes, no control characters but tab and newline, NUL -> U+FFFD."""
    text = text.replace("\r\n", "\n").replace("\r", "\n")  # a bare CR starts a line in CommonMark
    text = text.replace("\x00", "\ufffd")
    return _CTRL_RE.sub("", _ESC_RE.sub("", text))


def mark_invisible(text: str) -> str:
    """Bidi controls, zero-width and tag characters -> visible markers such as ``<U+202E>``.

    Shown rather than deleted: ZWJ/ZWNJ are legitimate in Persian, Indic scripts and emoji.
    """
    return _INVISIBLE_RE.sub(lambda m: f"<U+{ord(m.group()):04X}>", text)


def _longest_run(text: str) -> int:
    return max((len(m) for m in _BACKTICKS_RE.findall(text)), default=0)


def fence(body: str, info: str = "text") -> str:
    """A fenced code block at column 0 that nothing in ``body`` can close.

    A backtick fence closes only on a backtick run at least as long, so one longer than any run in
    the body is safe whatever the body holds (tildes, HTML, headings). Ends with a newline.
    """
    if info not in INFO_STRINGS:
        raise ValueError(f"info string {info!r} is not on the allow-list")
    bar = "`" * max(3, _longest_run(body) + 1)
    if not body.endswith("\n"):
        body += "\n"
    return f"{bar}{info}\n{body}{bar}\n"


def inline(text: str, max_len: int = 300) -> str:
    """One line of untrusted text as an inline code span, truncated with "…"."""
    one = " ".join(mark_invisible(clean(text)).split())
    if len(one) > max_len:
        one = one[: max(0, max_len - 1)].rstrip() + "…"
    if not one:
        return "` `"
    bar = "`" * (_longest_run(one) + 1)
    # CommonMark strips one space from each side when both are spaces, so pad when the content
    # starts or ends with a backtick (or with a space, which would otherwise be eaten)
    pad = " " if one[0] in "` " or one[-1] in "` " else ""
    return f"{bar}{pad}{one}{pad}{bar}"
