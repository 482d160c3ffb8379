"""Issue 12: secrets the rules can only see decoded (segue.redact.decode): percent-encoded values, JSON escaped
inside a string, values split across quoted concatenation; base64 runs that decode to a secret. Spans found in
a decoded view map back onto the encoded characters, and text without an encoding is not rescanned."""

from __future__ import annotations

import base64
import urllib.parse

import pytest

from segue.redact import Redactor, decode

PW = "Tr0ub4dor&3x!"
TOKEN = "ghp_" + "R8tX2mK9pL4vQ7wE1zY6" + "uI3oP5aS8dF0gH2jK4lM"


@pytest.fixture()
def r() -> Redactor:
    return Redactor(environ={})


@pytest.mark.parametrize("text,secret", [
    ("data=" + urllib.parse.quote('{"password": "' + PW + '"}', safe=""), urllib.parse.quote(PW, safe="")),
    (f"https://app.example.com/cb?next={urllib.parse.quote('https://x.example.com/?api_key=' + TOKEN, safe='')}",
     TOKEN),
    ('"settings": "{\\"apiToken\\":\\"Zq8vX2mK9pL4vR8tW3\\",\\"debug\\":false}"', "Zq8vX2mK9pL4vR8tW3"),
    (f'TOKEN = "{TOKEN[:20]}" + "{TOKEN[20:]}"', TOKEN[20:]),
    (f"const key = '{TOKEN[:18]}' +\n  '{TOKEN[18:]}';", TOKEN[18:]),
    (f'key = ("{TOKEN[:22]}"\n       "{TOKEN[22:]}")', TOKEN[22:]),
])
def test_decoded_views_find_what_the_encoding_hides(r: Redactor, text: str, secret: str) -> None:
    assert secret in text
    out, n = r.redact(text)
    assert secret not in out and n >= 1, out
    assert r.redact(out) == (out, 0)


def test_spans_map_back_over_the_encoded_characters() -> None:
    text = "q=" + urllib.parse.quote('{"password":"' + PW + '"}', safe="")
    (view,) = decode.views(text)
    _lo, new, starts, ends = view
    assert PW in new and len(starts) == len(ends) == len(new)
    a = new.index(PW)
    spans = decode.mapped([(a, a + len(PW), "x")], view)
    assert spans == [(text.index(urllib.parse.quote(PW, safe="")),
                      text.index(urllib.parse.quote(PW, safe="")) + len(urllib.parse.quote(PW, safe="")), "x")]


@pytest.mark.parametrize("text", [
    "print('%2d items' % n, 'and %3d more' % m)", 'print("hello" + "world")', "x = 'a' if y else 'b'",
    "see https://example.com/a%20b and c%20d", 'msg = "say \\"hi\\" to them"',
    "https://example.com/search?q=token%20rotation%20guide&page=2",
])
def test_plain_text_with_encodings_is_unchanged(r: Redactor, text: str) -> None:
    assert r.redact(text) == (text, 0)


def test_text_without_an_encoding_builds_no_view() -> None:
    assert decode.views("Fix the flaky retry handler in src/queue/worker.py") == []
    assert decode.views("a = 'x', b = 'y'") == []


def test_base64_of_a_secret_is_redacted(r: Redactor) -> None:
    for inner in (f"GITHUB_TOKEN={TOKEN}\n", "-----BEGIN PRIVATE KEY-----\nMIIE" + "A" * 60 + "\n"):
        blob = base64.b64encode(inner.encode()).decode()
        out, _ = r.redact(f"$ echo {blob} | base64 -d")
        assert blob not in out, inner
