"""Redactor behaviour: exact values, idempotence, untouched clean text, excerpts around cuts,
key blocks, fail-closed, and speed on pathological input (a sanity bound, not a benchmark)."""

from __future__ import annotations

import base64
import logging
import random
import secrets
import string
import time
import urllib.parse

import pytest

from segue import redact as R
from segue.redact import HANDOFF_TOKEN_RE, WITHHELD, Redactor

GHP = "ghp_R8tX2mK9pL4vQ7wE1zY6uB3nC5aD0fG2hJ4k"
SECRETS = [GHP, "password: Tr0ub4dor&3", "mysql -u root -pS3cretPw db", "postgres://app:pgs3cret@db:5432/x",
           "export OPENAI_API_KEY=k-1234abcd5678", "Authorization: Bearer abc123def456ghi789",
           "sk-ant-api03-Zq8Lw2Xv9Nb4Mc7Kd1Jf6Hg3Ps5Rt0Yu-Ei2Oa8Wq_Tz1", "AKIA4QWERTYUIOPASDFG"]
CLEAN_LINES = [
    "commit 3f2a1b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a",
    "Merge: 1a2b3c4 5d6e7f8",
    "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "request 550e8400-e29b-41d4-a716-446655440000 took 12ms",
    "============================= 12 passed in 0.53s ==============================",
    "def handle_password_reset(user_id: int, token_ttl: int = 300) -> None:",
    "drwxr-xr-x  5 dev dev 4096 Mar  3 10:12 src",
    "src/segue/redact.py:120:5: E501 Line too long",
    "The API key lives in the OS keychain; see docs/auth.md.",
    "npm WARN deprecated inflight@1.0.6: This module is not supported",
    "  File \"/usr/lib/python3.11/json/decoder.py\", line 355, in raw_decode",
    "https://github.com/org/repo/pull/42#issuecomment-123456",
    "tokens_used=1834 max_tokens=4096 temperature=0.2",
    "const [password, setPassword] = useState('');",
    "Password authentication failed for user \"postgres\"",
    "keyboard layout: us; key repeat: 30",
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGf3 dev@laptop",
    "Enter passphrase for key '/home/dev/.ssh/id_ed25519':",
]


@pytest.fixture
def r() -> Redactor:
    return Redactor(environ={})


# --- exact values -----------------------------------------------------------------------------

def test_env_values_and_their_encodings_are_redacted() -> None:
    value = "v4lue-Of-my-Tok3n!"
    env = {"MY_SERVICE_TOKEN": value, "PATH": "/usr/local/bin:/usr/bin", "SHORT_SECRET": "abc1234",
           "db_password": "Tr1cky pass phrase", "HOME": "/home/dev"}
    r = Redactor(environ=env)
    out, n = r.redact(f"echo {value} | tee log")
    assert value not in out and "[REDACTED:known-secret]" in out and n == 1
    b64 = base64.b64encode(b"user:" + value.encode()).decode()
    out, _ = r.redact(f"Authorization: custom {b64}")
    assert b64 not in out
    pct = urllib.parse.quote(value, safe="")
    assert pct not in r.redact(f"https://x.test/cb?v={pct}&z=1")[0]
    assert "Tr1cky pass phrase" not in r.redact("pw was Tr1cky pass phrase ok")[0]
    # names that do not look secret, and values under 8 characters, are left alone
    assert r.redact("PATH=/usr/local/bin:/usr/bin and abc1234")[0] == "PATH=/usr/local/bin:/usr/bin and abc1234"


def test_environment_is_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEGUE_TEST_API_KEY", "first-secret-value-1")
    r = Redactor()
    monkeypatch.setenv("SEGUE_TEST_API_KEY", "second-secret-value-2")
    assert "first-secret-value-1" not in r.redact("x first-secret-value-1 y")[0]
    assert r.redact("x second-secret-value-2 y")[0] == "x second-secret-value-2 y"


def test_add_exact_and_handoff_tokens(r: Redactor) -> None:
    minted = "plain-looking-value-42"
    assert r.redact(minted)[0] == minted
    r.add_exact(minted)
    assert r.redact(f"got {minted}.")[0] == "got [REDACTED:known-secret]."
    token = "h_" + secrets.token_urlsafe(24)
    assert HANDOFF_TOKEN_RE.fullmatch(token)
    assert token not in Redactor(environ={}).redact(f"segue claim {token}")[0]  # by pattern, not by value


def test_longest_value_wins() -> None:
    r = Redactor(exact_values=["abcdefgh12", "abcdefgh12345678"], environ={})
    assert r.redact("abcdefgh12345678") == ("[REDACTED:known-secret]", 1)


# --- properties -------------------------------------------------------------------------------

def _random_text(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.randint(1, 8)):
        kind = rng.random()
        if kind < 0.35:
            parts.append(rng.choice(SECRETS))
        elif kind < 0.7:
            parts.append(rng.choice(CLEAN_LINES))
        else:
            alphabet = string.ascii_letters + string.digits + " =:_-/.'\"\n"
            parts.append("".join(rng.choices(alphabet, k=rng.randint(1, 80))))
    return rng.choice(["\n", " ", "; "]).join(parts)


def test_idempotent_on_random_mixtures(r: Redactor) -> None:
    rng = random.Random(20261129)
    for _ in range(400):
        text = _random_text(rng)
        once, _ = r.redact(text)
        twice, n2 = r.redact(once)
        assert twice == once and n2 == 0, text
        for s in SECRETS:
            if s in text:
                assert s not in once


def test_secret_free_text_is_unchanged(r: Redactor) -> None:
    text = "\n".join(CLEAN_LINES)
    assert r.redact(text) == (text, 0)
    for line in CLEAN_LINES:
        assert r.redact(line) == (line, 0), line


def test_markers_are_not_redacted_again(r: Redactor) -> None:
    for text in ["password: [REDACTED:password-assignment]", "Authorization: Bearer [REDACTED:auth-header]",
                 "postgres://app:[REDACTED:url-credentials]@db/x", "API_TOKEN=[REDACTED:env-assignment]",
                 "[REDACTED:private-key]\n[REDACTED:known-secret]"]:
        assert r.redact(text) == (text, 0)


def test_rule_table_is_well_formed() -> None:
    ids = [rule.id for rule in R.RULES]
    assert len(ids) == len(set(ids))
    for rule in R.RULES:
        assert rule.tier in (1, 2, 3)
        assert all(k == k.lower() for k in rule.keywords), rule.id
        assert rule.keywords or rule.finder or rule.gate, rule.id  # every rule has a cheap pre-filter


def test_entropy_gate_on_generic_rule(r: Redactor) -> None:
    # HEROKU_KEY names a secret only for the generic rule, which also needs entropy >= 3.5
    assert r.redact("HEROKU_KEY = aaaaaaaabbbbbbbb1") == ("HEROKU_KEY = aaaaaaaabbbbbbbb1", 0)
    out = r.redact("HEROKU_KEY = Zf3D0LXCM3EIMbgJpUNnkRtOfOueHznB")
    assert out == ("HEROKU_KEY = [REDACTED:generic-assignment]", 1)


# --- excerpts ---------------------------------------------------------------------------------

JWT = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.abcDEF123456"


@pytest.mark.parametrize("secret", [GHP, "hunter2-Pa55w0rd", JWT])
def test_excerpt_catches_a_secret_straddling_the_cut(r: Redactor, secret: str) -> None:
    prefix = "password: " if "hunter" in secret else "token "
    head_text = "a" * 990 + " " + prefix + secret + " " + "b" * 20000
    for limit in range(995, 995 + len(prefix) + len(secret), 3):
        out, _, truncated = r.excerpt(head_text, limit, "head")
        assert truncated and len(out) <= limit
        assert secret[:6] not in out.replace(prefix, "") or secret[:6] in prefix, (limit, out[-60:])
    tail_text = "c" * 20000 + " " + prefix + secret + " " + "d" * 990
    for limit in range(990, 995 + len(secret), 3):
        out, _, truncated = r.excerpt(tail_text, limit, "tail")
        assert truncated and len(out) <= limit
        assert secret[-6:] not in out, (limit, out[:60])


def _pem(body_lines: int) -> tuple[str, list[str]]:
    rng = random.Random(body_lines)
    lines = ["".join(rng.choices(string.ascii_letters + string.digits + "+/", k=64)) for _ in range(body_lines)]
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----\n", lines


def test_excerpt_head_cut_inside_a_key_block(r: Redactor) -> None:
    pem, lines = _pem(400)  # ~26 KiB: the END line lies far beyond limit + 8 KiB
    text = "cat id_rsa\n" + pem + "done\n"
    out, n, truncated = r.excerpt(text, 2000, "head")
    assert truncated and n == 1
    assert not any(line[:20] in out for line in lines)
    assert out.startswith("cat id_rsa\n[REDACTED:private-key]")


def test_excerpt_tail_starting_inside_a_key_block(r: Redactor) -> None:
    pem, lines = _pem(400)
    out, _, _ = r.excerpt(pem + "after the key\n", 3000, "tail")
    assert not any(line[:20] in out for line in lines)
    assert out.endswith("[REDACTED:private-key]\nafter the key\n")


def test_excerpt_tail_when_the_begin_line_is_out_of_reach(r: Redactor) -> None:
    pem, lines = _pem(1500)  # ~97 KiB: BEGIN is beyond the backward search
    out, _, _ = r.excerpt(pem + "tail", 2000, "tail")
    assert not any(line[:20] in out for line in lines)
    assert out.endswith("tail")


def test_unterminated_key_block_is_redacted(r: Redactor) -> None:
    pem, lines = _pem(50)
    cut = pem[: len(pem) // 2]
    out, _ = r.redact("before\n" + cut)
    assert not any(line[:20] in out for line in lines)
    assert out.startswith("before\n[REDACTED:private-key-open]")


def test_excerpt_never_lets_redaction_shrinkage_pull_in_an_unseen_secret(r: Redactor) -> None:
    # the context beyond the cut is mostly key material, so redaction shrinks the window a lot
    pems = "".join(_pem(30)[0] for _ in range(8))
    text = "x" * 500 + pems + "token " + GHP + " " + "y" * 50000
    out, _, _ = r.excerpt(text, 4000, "head")
    assert len(out) <= 4000 and GHP[:10] not in out


def test_excerpt_short_text_and_limits(r: Redactor) -> None:
    assert r.excerpt("hello", 100) == ("hello", 0, False)
    assert r.excerpt("hello world", 5) == ("hello", 0, True)
    assert r.excerpt("hello world", 5, "tail") == ("world", 0, True)
    out, n, truncated = r.excerpt("key " + GHP, 1000)
    assert out == "key [REDACTED:github-token]" and n == 1 and not truncated


def test_excerpt_cut_never_splits_a_marker(r: Redactor) -> None:
    text = "z" * 100 + GHP + "z" * 100
    for limit in range(100, 130):
        out, _, _ = r.excerpt(text, limit, "head")
        assert "[REDACTED" not in out or out.endswith("]") or "]" in out[out.index("[REDACTED"):]
        assert len(out) <= limit
        out, _, _ = r.excerpt(text, limit, "tail")
        assert len(out) <= limit and not out.startswith(("EDACTED", "github-token]", "]"))


def test_excerpt_only_scans_a_window(r: Redactor, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int] = []
    original = Redactor._spans

    def spy(self: Redactor, text: str) -> list:
        seen.append(len(text))
        return original(self, text)

    monkeypatch.setattr(Redactor, "_spans", spy)
    big = ("line of tool output with password_hint and token_count=3\n" * 90000)  # ~5 MB
    for keep in ("head", "tail"):
        out, _, truncated = r.excerpt(big, 4000, keep)  # type: ignore[arg-type]
        assert truncated and len(out) <= 4000
    assert seen and max(seen) < 4000 + 4 * 8192 + 2048


def test_excerpt_fails_closed(r: Redactor, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def boom(self: Redactor, text: str) -> list:
        raise RuntimeError(f"cannot handle {text}")

    monkeypatch.setattr(Redactor, "_spans", boom)
    with caplog.at_level(logging.WARNING, logger="segue.redact"):
        assert r.excerpt("key " + GHP, 10) == (WITHHELD, 0, True)
        assert r.excerpt("short", 100) == (WITHHELD, 0, False)
    assert "RuntimeError" in caplog.text
    assert GHP not in caplog.text and "cannot handle" not in caplog.text


# --- speed on pathological input (measured figures: bench/bench_redact.py) ---------------------

PATHOLOGICAL = {
    "dashes": "-" * 80000,
    "password then blanks": "password" + " " * 80000 + "x",
    "assignments": "a=" * 40000,
    "token colons": "token: " * 12000,
    "quotes": '"' * 80000,
    "jwt-ish": ("eyJ" + "a" * 20 + ".") * 3000,
    "begin lines": "-----BEGIN PRIVATE KEY-----\n" * 3000,
    "open key block": "-----BEGIN PRIVATE KEY-----" + "A" * 200000,
    "curl -u": "curl -u " * 10000,
    "schemes": "a://" * 20000,
    "long url user": "postgres://" + "u" * 80000,
    "keyed identifiers": "secret_key_" * 8000,
    "authorization": "Authorization: " * 5000,
    "xml tags": "<password>" * 8000,
    "otpauth": "otpauth://x?" + "&" * 80000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_input_finishes_fast(r: Redactor, name: str) -> None:
    text = PATHOLOGICAL[name]
    t0 = time.perf_counter()
    out, _ = r.redact(text)
    elapsed = time.perf_counter() - t0
    assert elapsed < 2.0, f"{name}: {elapsed:.2f}s"
    assert isinstance(out, str)


@pytest.mark.parametrize("text", [
    "    at image.index (pkg/token.ts:382:26)\n",   # a stack frame whose file is named token.ts
    "src/token.toml:478:60:\n",                    # a compiler message position
    "scripts/secret.json:889:37: handler server",
    "lib/credentials.py:12: in test_login",
])
def test_a_file_position_after_a_secret_named_file_is_not_a_secret(text: str) -> None:
    # found by the benchmark's correctness check: 63 of 10,000 generated first requests lost "382:26"
    assert Redactor(environ={}).redact(text)[0] == text


def test_a_value_after_a_secret_key_is_still_redacted_when_it_is_not_a_position() -> None:
    out = Redactor(environ={}).redact("token: 382:26:abcDEF9xyz\nsecret = 123456:ABCdefGhIJKlmnoPQRstuVWXyz12345\n")[0]
    assert "abcDEF9xyz" not in out and "ABCdefGhIJ" not in out


@pytest.mark.parametrize("plain", [b"hello world\n", b'{"alg":"HS256"}', b"Hello, World!", b"this is a test file",
                                   b"production", b"2026-12-01", b"<config/>"])
def test_echo_base64_decode_of_ordinary_text_is_not_a_secret(plain: bytes) -> None:
    text = f"$ echo {base64.b64encode(plain).decode()} | base64 -d"
    assert Redactor(environ={}).redact(text)[0] == text


@pytest.mark.parametrize("secret", [b"hunter2!Xy", b"S3cr3tP@ss\n", b"admin:Passw0rd",
                                    b"ghp_abcdEFGH1234ijklMNOP5678qrstUVWX90ab"])
def test_echo_base64_decode_of_a_credential_is_redacted(secret: bytes) -> None:
    b64 = base64.b64encode(secret).decode()
    assert b64 not in Redactor(environ={}).redact(f"$ echo {b64} | base64 -d")[0]
