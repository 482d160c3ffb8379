"""Issue 12, second pass: contexts and token shapes the rules learnt generically (not from a held-out file's
misses): tool password flags, name/value pairs, tables, multilingual prose, any Authorization scheme, prefixes
that name a credential, Kubernetes Secret data; and the look-alikes they must leave alone."""

from __future__ import annotations

import pytest

from segue.redact import Redactor

V = "Zq8v#X2mK9"  # a made-up password
T = "Zq8vX2mK9pL4vR8tW3yB"  # a made-up random token


@pytest.fixture()
def r() -> Redactor:
    return Redactor(environ={})


@pytest.mark.parametrize("text,secret", [
    (f'env:\n  - name: DB_PASSWORD\n    value: "{V}"', V),
    (f'<add key="ApiSecret" value="{V}" />', V),
    (f'{{"name": "API_TOKEN", "value": "{V}"}}', V),
    (f"| `STRIPE_KEY` | `{T}` |", T),
    (f"keytool -list -keystore ks.jks -storepass {V}", V),
    (f"docker login -u me -p {V} cr.example.com", V),
    (f"sqlcmd -S db -U sa -P '{V}'", V),
    (f"ldapsearch -x -D cn=admin -w '{V}' '(uid=*)'", V),
    (f"smbclient //fs/share -U 'CORP\\\\bob%{V}'", V),
    (f"7z a -p{T} a.7z .", T),
    (f"zip -P '{V}' a.zip f", V),
    (f"openssl pkcs12 -export -passout pass:{V} -out a.p12", V),
    (f"openssl enc -aes-256-cbc -k '{V}' -in a", V),
    (f"sqlplus system/{T}@//db:1521/ORCL", T),
    (f"Authorization: SSWS 00{T}", T),
    (f"Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/x, Signature={'0a1b2c3d' * 8}", "0a1b2c3d" * 8),
    (f"Das Passwort für den Server lautet {V}", V),
    (f"le mot de passe est {V}", V),
    (f"la contraseña es {V}", V),
    (f"mein Kennwort lautet {V}", V),
    (f'try logging in with "{V}" as the password', V),
    (f"use {V} as my password", V),
    (f"setx API_TOKEN {T}", T),
    (f'gh secret set DEPLOY_KEY --body "{T}"', T),
    ("rzp_live_sl0Yn1fx7ujfZ8", "rzp_live_sl0Yn1fx7ujfZ8"),
    ("access-production-66b908ff-c124-4a76-87c7-30375b36c20d", "66b908ff-c124-4a76-87c7-30375b36c20d"),
    ("export EASYPOST=EZAKb3927484b729d1710af028f37f696ce41b47c52a08991129c04505",
     "b3927484b729d1710af028f37f696ce41b47c52a08991129c04505"),
    ("invalid credentials rdme_hcgm0ylc4azv5kb6spct1txl0322pc4xg5ucp6ym1argvx8betm1vpsyeeml",
     "hcgm0ylc4azv5kb6spct1txl0322pc4xg5ucp6ym1argvx8betm1vpsyeeml"),
    ("Error: invalid credentials A0LDnL44wGTIiGjTdn4DOJJLdjB9fPiV (status 403)", "A0LDnL44wGTIiGjTdn4DOJJLdjB9fPiV"),
    ("kind: Secret\ndata:\n  username: YWRtaW4=\n  url: cG9zdGdyZXM6Ly9kYg==\n", "cG9zdGdyZXM6Ly9kYg=="),
    (f'log.info("calling", extra={{"hdr": "Bearer {T}"}})', T),
    ("DB_PASSWORD=gzTszuMeSgQ\nlogin with gzTszuMeSgQ failed", "login with gzTszuMeSgQ"),
])
def test_redacted(r: Redactor, text: str, secret: str) -> None:
    out, n = r.redact(text)
    assert secret not in out and n >= 1, out
    assert r.redact(out) == (out, 0)


@pytest.mark.parametrize("text", [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb3Jm9kZ2Vy7sWq1vN8pT2xYk3LmZ9aQcR4eF6gH0jK dev@laptop",
    "tests/test_auth.py::test_password_reset_sends_email PASSED",
    "I set \"hello world\" as the title", "the key is important here", "keytool -storepass changeit",
    "openssl req -passin env:KEYPASS -new", "Authorization: the header is required",
    "for k in keys: name = k; value = v", "const h = {Authorization: `Bearer ${token}`}",
    "kind: ConfigMap\ndata:\n  a: bcdefgh", "request_id: req_011CS4kPq2Xb7Yv9Lm3Nw8Rt",
    '{"type": "tool_use", "id": "toolu_01A09q90qw90lq917835lq9X", "name": "Bash"}',
    "resuming session 66b908ff-c124-4a76-87c7-30375b36c20d in /home/dev/src/app",
    "pod/api-7d9f8b6c5-x2kqp   1/1   Running",
    "passe-partout is a word", "use the helper as the token source",
])
def test_left_alone(r: Redactor, text: str) -> None:
    assert r.redact(text) == (text, 0)
