"""Held-out redaction corpus, round 4 (``gen-held4``).

Written blind on 2026-12-07: the author read no redaction code, no other generator and no other corpus
(only the first three rows of gen_heldout3.jsonl, to copy the row format).  Nothing here is derived from
the engine's rules; credential formats come from public vendor documentation and general knowledge.

Run ``python tests/data/redaction/generate_heldout4.py``; it writes ``gen_heldout4.jsonl`` next to itself.
Output is deterministic (fixed seed, stdlib only).

Row format: ``{"text": str, "secret": str | null, "source": "gen-held4:<family>:<kind>:<context>"}``.
``secret`` is the exact substring of ``text`` that must not survive redaction; ``null`` marks a negative
row: its text contains no secret and must come back unchanged.

Positive families
-----------------
* cloud: aws (access key id, secret access key, session token), gcp (service-account JSON private_key,
  AIza API keys, GOCSPX client secrets, ya29 access tokens, refresh tokens), azure (storage / Cosmos
  AccountKey, SAS ``sig``, Entra client secrets, Azure OpenAI api-key).
* AI: anthropic, openai, gemini, huggingface, replicate, groq, mistral, cohere, openrouter, perplexity,
  xai, langsmith.
* code hosts: github (ghp/gho/ghu/ghs/ghr, github_pat), gitlab (glpat, glrt, gldt), bitbucket, atlassian.
* registries: npm, pypi, rubygems, cratesio, dockerhub, nuget.
* payment: stripe (sk_live, rk_live, whsec), square, paypal, braintree.
* messaging: slack (xoxb, xoxp, xapp, webhooks), discord (bot token, webhooks), telegram, twilio.
* SaaS: sendgrid, mailgun, postmark, datadog, newrelic, sentry, linear, notion, shopify, vercel, netlify,
  supabase, firebase, cloudflare, digitalocean, heroku, doppler, vault, terraform, pulumi, grafana,
  postman, okta, planetscale.
* generic: jwt, private-key (PKCS#1, PKCS#8, SEC1 EC, OpenSSH, OpenPGP), age, conn-url, basic-auth,
  bearer, cookie, password-prose, env-generic, config-value, cli-flag, git-remote, npmrc, pip, netrc,
  docker-config, django.

Contexts: user prompts pasting configs or errors, shell commands, tool output (env dumps, ``cat .env``,
kubectl YAML with base64 data, JSON API responses, tracebacks, log lines), diffs, source files, Dockerfiles,
GitHub Actions, Terraform, markdown fences, JSON-escaped strings, start/end-of-text placement, trailing
punctuation, URLs with query strings, URL-encoded values, and German/Spanish/French/Japanese prose.

Conventions for ``secret``
--------------------------
* PEM / PGP blocks: the first base64 body line.  OpenSSH keys are the exception: their first body lines
  are a constant header plus the public key, so ``secret`` is the first line carrying private-key bytes.
* URL userinfo: the password only, percent-encoded exactly as it appears.  Webhook URLs: the token segment.
* Basic auth headers, docker ``auth`` and npm ``_auth`` fields, kubectl Secret ``data``: the base64 blob.
* Azure: the AccountKey value or the URL-encoded SAS ``sig``.  Legacy Sentry DSN: the secret half.

Format fidelity
---------------
Exact where the public format is simple: AWS key ids (AKIA/ASIA + base32); GitHub ghp_/gho_/ghu_/ghs_/ghr_
and npm_ tokens (30 random base62 chars + 6-char base62 CRC32 checksum, as the author understands the
scheme); age secret keys (real bech32 checksum); OpenPGP armour (real CRC-24); OpenSSH ed25519 key layout;
DER prefixes of PKCS#1/PKCS#8/SEC1 keys; JWT header/payload JSON.  Everything else is format-plausible:
right prefix, length and alphabet as publicly described, with no claim a vendor would accept it.  No value
is a real credential.

Borderline kinds
----------------
Left out entirely (neither positive nor negative): Stripe publishable keys (pk_live_/pk_test_) and test-mode
secret keys (sk_test_); modern public-key-only Sentry DSNs; Firebase web-config apiKey; Supabase anon keys
and sb_publishable_ keys; Mapbox pk. tokens; Twilio Account / API-key SIDs as secrets (they appear only next
to the real secret); OAuth client ids; bcrypt and other password hashes; webhook HMAC signatures; CSRF
tokens; encrypted private keys and SOPS ciphertext; the jwt.io sample token; Google Docs ids and other
capability-style share links; Heroku legacy UUID API keys; literal ``user:password`` placeholders.

Unprefixed values (Twilio auth tokens, Datadog / Mistral / Cohere / Cloudflare keys, Vercel tokens, Postmark's
UUID-shaped server tokens, generic passwords) only appear next to a naming variable, header, flag or label.

Treated as negatives (must be left unchanged): public keys of every kind (ssh ``.pub`` lines, known_hosts,
PUBLIC KEY / CERTIFICATE PEM, PGP PUBLIC KEY BLOCK, age recipients, JWKS, WireGuard peer keys); masked or
truncated keys (``sk-proj-****abcd``); AWS's documented example keys (``AKIA...EXAMPLE``); clearly marked
placeholders and template references; message / request / trace / object ids; content hashes and digests;
base64 of images and of harmless JSON; variable names and password mentions without a value.
"""

from __future__ import annotations

import base64
import json
import random
import string
import struct
import urllib.parse
import uuid
import zlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

SEED = 20261207
TAG = "gen-held4"
OUT = Path(__file__).with_name("gen_heldout4.jsonl")

Rng = random.Random

DIGITS = string.digits
UPPER = string.ascii_uppercase
LOWER = string.ascii_lowercase
LETTERS = string.ascii_letters
ALNUM = LETTERS + DIGITS
LOWER_ALNUM = LOWER + DIGITS
UPPER_ALNUM = UPPER + DIGITS
HEX = "0123456789abcdef"
UHEX = HEX.upper()
B62 = DIGITS + UPPER + LOWER
B64 = UPPER + LOWER + DIGITS + "+/"
B64URL = UPPER + LOWER + DIGITS + "-_"
B32 = UPPER + "234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
NIX32 = "0123456789abcdfghijklmnpqrsvwxyz"
PW_SYMBOLS = "!#%^*-_+=.~@"


@dataclass(frozen=True)
class Row:
    text: str
    secret: str | None
    source: str


def pos(family: str, kind: str, context: str, text: str, secret: str) -> Row:
    return Row(text, secret, f"{TAG}:{family}:{kind}:{context}")


def neg(kind: str, context: str, text: str) -> Row:
    return Row(text, None, f"{TAG}:negative:{kind}:{context}")


# --------------------------------------------------------------------------------------------------
# primitives


def rs(rng: Rng, alphabet: str, n: int) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def pick(rng: Rng, *options: str) -> str:
    return rng.choice(options)


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def wrap(s: str, width: int) -> list[str]:
    return [s[i : i + width] for i in range(0, len(s), width)]


def new_uuid(rng: Rng) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def ts(rng: Rng) -> str:
    month, day, hour, minute, second = (
        rng.randint(1, 11),
        rng.randint(1, 28),
        rng.randint(0, 23),
        rng.randint(0, 59),
        rng.randint(0, 59),
    )
    return f"2026-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{second:02d}Z"


def digits(rng: Rng, n: int) -> str:
    return str(rng.randint(1, 9)) + rs(rng, DIGITS, n - 1)


def urlenc(value: str) -> str:
    return urllib.parse.quote(value, safe="-._~")


def shq(rng: Rng, value: str) -> str:
    """Quote a value the way a person would type it in a shell."""
    if any(c in value for c in "$!&;|<>()`\"' #*?~^%=+@"):
        return f"'{value}'"
    return pick(rng, value, value, f'"{value}"')


def camel(var: str) -> str:
    head, *rest = var.lower().split("_")
    return head + "".join(p.capitalize() for p in rest)


def pascal(var: str) -> str:
    name = camel(var)
    return name[0].upper() + name[1:]


def base62(n: int, width: int) -> str:
    out = ""
    while n:
        n, r = divmod(n, 62)
        out = B62[r] + out
    return out.rjust(width, "0")


def crc24(data: bytes) -> int:
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def _bech32_polymod(values: list[int]) -> int:
    gen = (0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3)
    chk = 1
    for v in values:
        top = chk >> 25
        chk = ((chk & 0x1FFFFFF) << 5) ^ v
        for i, g in enumerate(gen):
            if (top >> i) & 1:
                chk ^= g
    return chk


def bech32(hrp: str, data: bytes) -> str:
    acc, bits, five = 0, 0, []
    for byte in data:
        acc = (acc << 8) | byte
        bits += 8
        while bits >= 5:
            bits -= 5
            five.append((acc >> bits) & 31)
    if bits:
        five.append((acc << (5 - bits)) & 31)
    hrp_exp = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    poly = _bech32_polymod([*hrp_exp, *five, 0, 0, 0, 0, 0, 0]) ^ 1
    check = [(poly >> (5 * (5 - i))) & 31 for i in range(6)]
    return hrp + "1" + "".join(BECH32[d] for d in [*five, *check])


# --------------------------------------------------------------------------------------------------
# credential makers


def gh_style(rng: Rng, prefix: str) -> str:
    body = rs(rng, ALNUM, 30)
    return prefix + body + base62(zlib.crc32(body.encode()), 6)


def mk_aws_akid(rng: Rng, prefix: str = "AKIA") -> str:
    return prefix + rs(rng, B32, 16)


def mk_aws_secret(rng: Rng) -> str:
    return rs(rng, B64, 40)


def mk_aws_session(rng: Rng) -> str:
    return pick(rng, "IQoJb3JpZ2luX2VjE", "FwoGZXIvYXdzE") + rs(rng, B64, rng.randint(300, 480))


def mk_azure_client_secret(rng: Rng) -> str:
    return rs(rng, ALNUM + "_~.", 3) + str(rng.randint(7, 8)) + "Q~" + rs(rng, ALNUM + "_~.-", 34)


def mk_ant(rng: Rng, middle: str) -> str:
    return f"sk-ant-{middle}-" + rs(rng, B64URL, 93) + "AA"


def mk_openai(rng: Rng, prefix: str) -> str:
    return prefix + rs(rng, B64URL, 74) + "T3BlbkFJ" + rs(rng, B64URL, 74)


def mk_openai_legacy(rng: Rng) -> str:
    return "sk-" + rs(rng, ALNUM, 20) + "T3BlbkFJ" + rs(rng, ALNUM, 20)


def mk_atlassian(rng: Rng, prefix: str) -> str:
    return prefix + rs(rng, B64URL, 170) + "=" + rs(rng, UHEX, 8)


def mk_slack_bot(rng: Rng) -> str:
    return f"xoxb-{digits(rng, rng.randint(11, 13))}-{digits(rng, 13)}-{rs(rng, ALNUM, 24)}"


def mk_slack_user(rng: Rng) -> str:
    return f"xoxp-{digits(rng, 12)}-{digits(rng, 12)}-{digits(rng, 13)}-{rs(rng, HEX, 32)}"


def mk_slack_app(rng: Rng) -> str:
    return f"xapp-1-A{rs(rng, UPPER_ALNUM, 10)}-{digits(rng, 13)}-{rs(rng, HEX, 64)}"


def mk_discord_bot(rng: Rng) -> str:
    user_id = digits(rng, rng.choice((18, 19)))
    return f"{b64url(user_id.encode())}.{rs(rng, B64URL, 6)}.{rs(rng, B64URL, 38)}"


def mk_telegram(rng: Rng) -> str:
    return f"{digits(rng, rng.choice((9, 10)))}:AA{rs(rng, B64URL, 33)}"


def mk_sentry_org(rng: Rng) -> str:
    claims = {
        "iat": rng.randint(1_730_000_000, 1_790_000_000),
        "url": "https://sentry.io",
        "region_url": "https://us.sentry.io",
        "org": pick(rng, "acme", "globex", "initech"),
    }
    payload = base64.b64encode(json.dumps(claims, separators=(",", ":")).encode()).decode().rstrip("=")
    return f"sntrys_{payload}_{rs(rng, ALNUM, 43)}"


def mk_jwt(rng: Rng, payload: dict[str, object], alg: str = "HS256") -> str:
    header: dict[str, str] = {"alg": alg, "typ": "JWT"}
    if alg == "RS256":
        header["kid"] = rs(rng, B64URL, 27)
    head = b64url(json.dumps(header, separators=(",", ":")).encode())
    body = b64url(json.dumps(payload, separators=(",", ":")).encode())
    sig = b64url(rng.randbytes(32 if alg == "HS256" else 256))
    return f"{head}.{body}.{sig}"


def mk_supabase_service(rng: Rng) -> str:
    iat = rng.randint(1_700_000_000, 1_760_000_000)
    claims = {
        "iss": "supabase",
        "ref": rs(rng, LOWER, 20),
        "role": "service_role",
        "iat": iat,
        "exp": iat + 315_360_000,
    }
    return mk_jwt(rng, claims)


def mk_user_jwt(rng: Rng) -> str:
    iat = rng.randint(1_780_000_000, 1_796_000_000)
    shape = rng.randrange(3)
    if shape == 0:
        claims: dict[str, object] = {
            "sub": new_uuid(rng),
            "email": f"dev{rng.randint(1, 99)}@acme.io",
            "role": "authenticated",
            "iat": iat,
            "exp": iat + 3600,
        }
        return mk_jwt(rng, claims)
    if shape == 1:
        claims = {
            "iss": "https://acme.eu.auth0.com/",
            "sub": f"auth0|{rs(rng, HEX, 24)}",
            "aud": "https://api.acme.io",
            "iat": iat,
            "exp": iat + 86400,
            "scope": "read:orders write:orders",
        }
        return mk_jwt(rng, claims, "RS256")
    claims = {
        "iss": "https://kubernetes.default.svc.cluster.local",
        "sub": "system:serviceaccount:prod:api",
        "aud": ["https://kubernetes.default.svc.cluster.local"],
        "iat": iat,
        "exp": iat + 31536000,
    }
    return mk_jwt(rng, claims, "RS256")


def pw_alnum(rng: Rng, lo: int = 16, hi: int = 28) -> str:
    return rs(rng, ALNUM, rng.randint(lo, hi))


def pw_strong(rng: Rng) -> str:
    n = rng.randint(14, 24)
    chars = [rng.choice(ALNUM) for _ in range(n)]
    for _ in range(rng.randint(2, 4)):
        chars[rng.randrange(1, n - 1)] = rng.choice(PW_SYMBOLS)
    return "".join(chars)


WORDS = (
    "sunflower",
    "falcon",
    "winter",
    "harbor",
    "maple",
    "rocket",
    "copper",
    "violet",
    "orbit",
    "glacier",
    "meadow",
    "cobalt",
    "lantern",
    "nebula",
    "saffron",
    "tundra",
    "juniper",
    "quartz",
)


def pw_human(rng: Rng) -> str:
    first = rng.choice(WORDS).capitalize()
    if rng.random() < 0.4:
        return f"{first}-{rng.choice(WORDS)}-{rng.choice(WORDS)}-{rng.randint(10, 99)}"
    return f"{first}{pick(rng, '', '.', '_')}{rng.randint(10, 9999)}{rng.choice('!#*%+')}{rs(rng, ALNUM, 2)}"


def pw_any(rng: Rng) -> str:
    return rng.choice((pw_alnum, pw_strong, pw_human))(rng)


# --------------------------------------------------------------------------------------------------
# key material


def pem(label: str, der: bytes) -> tuple[str, list[str]]:
    lines = wrap(b64(der), 64)
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----", lines


def der_rsa_pkcs1(rng: Rng) -> bytes:
    prefix = bytes.fromhex("308204a40201000282010100")
    return prefix + rng.randbytes(1192 - len(prefix))


def der_rsa_pkcs8(rng: Rng) -> bytes:
    prefix = bytes.fromhex("308204bd020100300d06092a864886f70d0101010500048204a7308204a30201000282010100")
    return prefix + rng.randbytes(1217 - len(prefix))


def der_ec_sec1(rng: Rng) -> bytes:
    return (
        bytes.fromhex("30770201010420")
        + rng.randbytes(32)
        + bytes.fromhex("a00a06082a8648ce3d030107a144034200")
        + b"\x04"
        + rng.randbytes(64)
    )


def der_ec_pkcs8(rng: Rng) -> bytes:
    prefix = bytes.fromhex("308187020100301306072a8648ce3d020106082a8648ce3d030107046d306b0201010420")
    return prefix + rng.randbytes(32) + bytes.fromhex("a14403420004") + rng.randbytes(64)


def ssh_str(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def openssh_ed25519(rng: Rng, comment: str) -> tuple[str, str]:
    pub, seed, check = rng.randbytes(32), rng.randbytes(32), rng.randbytes(4)
    pub_blob = ssh_str(b"ssh-ed25519") + ssh_str(pub)
    priv = check + check + pub_blob + ssh_str(seed + pub) + ssh_str(comment.encode())
    priv += bytes(range(1, 1 + (-len(priv)) % 8))
    body = (
        b"openssh-key-v1\x00"
        + ssh_str(b"none")
        + ssh_str(b"none")
        + ssh_str(b"")
        + struct.pack(">I", 1)
        + ssh_str(pub_blob)
        + ssh_str(priv)
    )
    lines = wrap(b64(body), 70)
    seed_line = ((body.index(seed) + 16) * 4 // 3) // 70
    text = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----"
    return text, lines[seed_line]


def ssh_ed25519_pub(rng: Rng) -> str:
    return "ssh-ed25519 " + b64(ssh_str(b"ssh-ed25519") + ssh_str(rng.randbytes(32)))


def ssh_rsa_pub(rng: Rng) -> str:
    n = b"\x00\xc1" + rng.randbytes(383)
    return "ssh-rsa " + b64(ssh_str(b"ssh-rsa") + ssh_str(b"\x01\x00\x01") + ssh_str(n))


def pgp_block(kind: str, packet: bytes) -> tuple[str, list[str]]:
    lines = wrap(b64(packet), 64)
    crc = "=" + b64(crc24(packet).to_bytes(3, "big"))
    text = (
        f"-----BEGIN PGP {kind} KEY BLOCK-----\n\n" + "\n".join(lines) + f"\n{crc}\n-----END PGP {kind} KEY BLOCK-----"
    )
    return text, lines


def pgp_private(rng: Rng) -> tuple[str, str]:
    packet = bytes([0x94, 0x58, 0x04]) + rng.randbytes(4) + b"\x16\x09\x2b\x06\x01\x04\x01\xda\x47\x0f\x01"
    packet += rng.randbytes(rng.randint(560, 700))
    text, lines = pgp_block("PRIVATE", packet)
    return text, lines[0]


def age_secret(rng: Rng) -> tuple[str, str]:
    return bech32("age-secret-key-", rng.randbytes(32)).upper(), bech32("age", rng.randbytes(32))


# --------------------------------------------------------------------------------------------------
# token kinds and their generic contexts


@dataclass(frozen=True)
class TokenKind:
    family: str
    kind: str
    make: Callable[[Rng], str]
    var: str
    label: str
    n: int
    profile: str = "http"
    host: str = "api.example.com"
    hname: str = "Authorization"
    hprefix: str = "Bearer "
    param: str = "api_key"
    extra: tuple[str, ...] = ()
    cli: str = ""
    user: str | None = None


Ctx = Callable[[Rng, TokenKind, str], tuple[str, str]]

ENV_FILLER = (
    "NODE_ENV=development",
    "PORT=3000",
    "LOG_LEVEL=debug",
    "APP_NAME=orders-api",
    "TZ=UTC",
    "FEATURE_FLAGS=beta,search",
    "REDIS_HOST=localhost",
    "DB_POOL_SIZE=10",
    "AWS_REGION=eu-central-1",
    "PUBLIC_BASE_URL=http://localhost:5173",
    "SENTRY_ENVIRONMENT=dev",
    "CACHE_TTL_SECONDS=300",
)
PRINTENV_FILLER = (
    "HOME=/home/dev",
    "HOSTNAME=devbox-3",
    "LANG=C.UTF-8",
    "PATH=/usr/local/bin:/usr/bin:/bin",
    "PWD=/workspace/app",
    "SHELL=/bin/bash",
    "SHLVL=1",
    "TERM=xterm-256color",
    "USER=dev",
    "VIRTUAL_ENV=/workspace/app/.venv",
    "COLORTERM=truecolor",
    "EDITOR=vim",
)
API_PATHS = ("/v1/models", "/v1/messages", "/v2/items?limit=20", "/api/v1/me", "/v1/chat/completions", "/v3/status")
RUN_CMDS = ("npm run dev", "python -m app.worker", "go run ./cmd/server", "uv run pytest -q", "pnpm test", "cargo run")


def env_lines(rng: Rng, line: str, filler: tuple[str, ...] = ENV_FILLER, k: int = 3) -> list[str]:
    lines = rng.sample(filler, k)
    lines.insert(rng.randrange(k + 1), line)
    return lines


def c_md_env(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    intro = pick(
        rng,
        "my .env looks like this:",
        "this is my .env.local, copied from the old laptop:",
        "contents of `.env` in the repo root:",
    )
    ask = pick(
        rng,
        "why doesn't the app pick it up?",
        "the SDK still says the key is missing. any idea?",
        "is anything wrong with the format?",
    )
    return f"{intro}\n```\n" + "\n".join(env_lines(rng, f"{k.var}={v}")) + f"\n```\n{ask}", v


def c_heres_key(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = pick(
        rng,
        f"here's my {k.label} {v} — can you figure out why every request comes back 401?",
        f"I just generated a new {k.label}:\n{v}\nplease put it into the config and rerun the failing test",
        f"use this {k.label} for now (I'll rotate it later): {v}\nthen retry the deploy",
    )
    return text, v


def c_error_paste(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        "getting this when I run `npm run sync`:\n\n"
        "AxiosError: Request failed with status code 401\n"
        "    at settle (node_modules/axios/lib/core/settle.js:19:12)\n"
        "    at IncomingMessage.handleStreamEnd (node_modules/axios/lib/adapters/http.js:599:11)\n"
        "  config: {\n"
        f"    url: 'https://{k.host}{rng.choice(API_PATHS)}',\n"
        "    method: 'get',\n"
        f"    headers: {{ Accept: 'application/json', '{k.hname}': '{k.hprefix}{v}' }},\n"
        "  },\n"
        "  code: 'ERR_BAD_REQUEST'"
    )
    return text, v


def c_export(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return f"$ export {k.var}={shq(rng, v)}\n$ {rng.choice(RUN_CMDS)}", v


def c_inline_env(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    out = pick(rng, "ready - started server on 0.0.0.0:3000", "INFO: worker started (pid 4182)", "error: 403 Forbidden")
    return f"{k.var}={shq(rng, v)} {rng.choice(RUN_CMDS)}\n{out}", v


def c_curl_header(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f'curl -sS https://{k.host}{rng.choice(API_PATHS)} \\\n  -H "{k.hname}: {k.hprefix}{v}" \\\n'
        '  -H "Content-Type: application/json"'
    )
    return text + pick(rng, "", '\n{"error":{"message":"unauthorized"}}'), v


def c_http_dump(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    path = rng.choice(API_PATHS)
    text = (
        f"*   Trying 104.18.{rng.randint(1, 250)}.{rng.randint(1, 250)}:443...\n* Connected to {k.host}\n"
        f"> GET {path} HTTP/2\n> Host: {k.host}\n> user-agent: curl/8.7.1\n> accept: */*\n"
        f"> {k.hname}: {k.hprefix}{v}\n>\n< HTTP/2 {pick(rng, '200', '401', '403')}\n< content-type: application/json"
    )
    return text, v


def c_printenv(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    lines = sorted([*rng.sample(PRINTENV_FILLER, 6), f"{k.var}={v}"])
    return "$ printenv\n" + "\n".join(lines), v


def c_cat_env(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    quote = pick(rng, "", '"', "'")
    body = "\n".join(env_lines(rng, f"{k.var}={quote}{v}{quote}", k=4))
    return f"$ cat .env\n# local development only\n{body}\n", v


def c_docker_inspect(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    env = [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"{k.var}={v}",
        "NODE_VERSION=20.18.1",
        "YARN_VERSION=1.22.22",
    ]
    return "$ docker inspect api --format '{{json .Config.Env}}'\n" + json.dumps(env), v


def c_log_kv(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f"{ts(rng)} DEBUG http.client request method=POST url=https://{k.host}{rng.choice(API_PATHS)} "
        f"{k.var.lower()}={v} attempt={rng.randint(1, 3)} timeout=30s"
    )
    return text, v


def c_stacktrace(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    line = rng.randint(40, 220)
    text = (
        "Traceback (most recent call last):\n"
        f'  File "/app/worker/sync.py", line {line}, in run\n'
        "    resp = self.client.get(path)\n"
        '  File "/app/.venv/lib/python3.12/site-packages/httpx/_client.py", line 1066, in get\n'
        '    return self.request("GET", url)\n'
        f"httpx.HTTPStatusError: Client error '401 Unauthorized' for url 'https://{k.host}/v1/sync'\n\n"
        "Locals at failure:\n"
        f"    path    = '/v1/sync'\n    {camel(k.var)} = '{v}'\n    retries = 3"
    )
    return text, v


def c_diff_added(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    a, b = rng.sample(ENV_FILLER, 2)
    text = (
        f"diff --git a/.env.production b/.env.production\n--- a/.env.production\n+++ b/.env.production\n"
        f"@@ -1,2 +1,3 @@\n {a}\n+{k.var}={v}\n {b}"
    )
    return text, v


def c_diff_removed(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f"--- a/config/settings.py\n+++ b/config/settings.py\n@@ -12,7 +12,7 @@ DEBUG = False\n"
        f'-{k.var} = "{v}"\n+{k.var} = os.environ["{k.var}"]\n TIMEOUT = 30'
    )
    return text, v


def c_src_python(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    if rng.random() < 0.5:
        text = f'# settings.py\nimport os\n\nDEBUG = False\n{k.var} = os.environ.get("{k.var}", "{v}")\n'
    else:
        text = (
            f'import httpx\n\nclient = httpx.Client(\n    base_url="https://{k.host}",\n'
            f'    headers={{"{k.hname}": "{k.hprefix}{v}"}},\n    timeout=20.0,\n)\n'
        )
    return text, v


def c_src_js(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = pick(
        rng,
        f"const {camel(k.var)} = process.env.{k.var} ?? '{v}';\n",
        f"export const config = {{\n  baseUrl: 'https://{k.host}',\n  {camel(k.var)}: \"{v}\",\n}};\n",
    )
    return text, v


def c_src_go(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f'package config\n\nimport "os"\n\nfunc {pascal(k.var)}() string {{\n'
        f'\tif v := os.Getenv("{k.var}"); v != "" {{\n\t\treturn v\n\t}}\n\treturn "{v}"\n}}\n'
    )
    return text, v


def c_json_escaped(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    if rng.random() < 0.5:
        content = "\n".join(env_lines(rng, f"{k.var}={v}")) + "\n"
        payload: dict[str, object] = {
            "type": "tool_use",
            "name": "write_file",
            "input": {"path": ".env", "content": content},
        }
    else:
        payload = {"tool": "bash", "input": {"command": f'export {k.var}="{v}"\n{rng.choice(RUN_CMDS)}'}}
    return json.dumps(payload), v


def c_json_config(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    cfg = {"service": {"name": k.family, "baseUrl": f"https://{k.host}", camel(k.var): v, "timeoutMs": 15000}}
    return json.dumps(cfg, indent=2), v


def c_yaml_config(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    quote = pick(rng, "", '"', "'")
    text = (
        f"{k.family}:\n  endpoint: https://{k.host}\n  {k.var.lower()}: {quote}{v}{quote}\n"
        "  timeout: 30s\n  retries: 2\n"
    )
    return text, v


def c_k8s_stringdata(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {k.family}-credentials\n  namespace: prod\n"
        f'type: Opaque\nstringData:\n  {k.var}: "{v}"\n'
    )
    return text, v


def c_k8s_b64(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    enc = b64(v.encode())
    text = (
        f"$ kubectl -n prod get secret {k.family}-credentials -o yaml\napiVersion: v1\ndata:\n"
        f'  {k.var}: {enc}\nkind: Secret\nmetadata:\n  creationTimestamp: "{ts(rng)}"\n'
        f"  name: {k.family}-credentials\n  namespace: prod\n  uid: {new_uuid(rng)}\ntype: Opaque"
    )
    return text, enc


def c_toml(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return f'[{k.family}]\nbase_url = "https://{k.host}"\n{k.var.lower()} = "{v}"\nmax_retries = 3\n', v


def c_gha_env(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f'name: nightly-sync\non:\n  schedule:\n    - cron: "0 3 * * *"\njobs:\n  sync:\n    runs-on: ubuntu-latest\n'
        f"    env:\n      {k.var}: {v}\n    steps:\n      - uses: actions/checkout@v4\n      - run: make sync\n"
    )
    return text, v


def c_dockerfile(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f"FROM node:20-alpine\nWORKDIR /app\nCOPY package*.json ./\nRUN npm ci --omit=dev\n"
        f'ENV {k.var}={v}\nCOPY . .\nCMD ["node", "server.js"]\n'
    )
    return text, v


def c_tf_default(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = f'variable "{k.var.lower()}" {{\n  type      = string\n  sensitive = true\n  default   = "{v}"\n}}\n'
    return text, v


def c_md_fence(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f"I added the key to `src/config.ts` so the build picks it up:\n\n```ts\n"
        f'export const {camel(k.var)} = "{v}";\n```\n\nRestart the dev server and the 401 should go away.'
    )
    return text, v


def c_prose_de(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return f"Hier ist mein {k.label}: {v}. Kannst du prüfen, warum der Aufruf trotzdem fehlschlägt?", v


def c_prose_es(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return f"Te paso la clave ({k.label}): {v} — ¿puedes revisar por qué sigue fallando el despliegue?", v


def c_prose_ja(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return f"{k.label}は {v} です。これで認証できるか確認してもらえますか？", v


def c_prose_fr(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return f"Voici ma clé ({k.label}) : {v}\nPeux-tu vérifier la configuration du client ?", v


def c_edge_start(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return pick(
        rng,
        f"{v}\n^ that's the {k.label} from the dashboard, is it still valid?",
        f"{v} is what I stored in the vault, can you wire it into the app?",
    ), v


def c_edge_end(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return pick(
        rng,
        f"ok, the new {k.label} is {v}.",
        f"rotated it, the replacement {k.label} is ({v})",
        f'set {k.var} to "{v}", then restart',
        f"new {k.label}: {v}, old one is revoked",
    ), v


def c_edge_alone(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return pick(rng, v, f"{v}\n"), v


def c_url_query(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    endpoint = pick(rng, "geocode/json", "models", "files", "search")
    url = f"https://{k.host}/v1/{endpoint}?q=berlin&{k.param}={v}&format=json"
    return pick(rng, f"GET {url} -> 403", f'fetch("{url}")', f"curl '{url}'"), v


def c_py_dict(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    text = (
        f'DEBUG:urllib3.connectionpool:https://{k.host}:443 "POST /v1/jobs HTTP/1.1" 401 94\n'
        f"DEBUG:app.client:request headers={{'User-Agent': 'python-requests/2.32.3', 'Accept': '*/*', "
        f"'{k.hname}': '{k.hprefix}{v}'}}"
    )
    return text, v


def c_curl_u(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    user = k.user or ""
    if user == "AC":
        user = "AC" + rs(rng, HEX, 32)
    cred = f"{v}:" if not user else f"{user}:{v}"
    return f"curl -s https://{k.host}{rng.choice(API_PATHS)} -u '{cred}'", v


def c_cli(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    return "$ " + k.cli.replace("{v}", v), v


def c_json_token_response(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    resp = {
        "token": v,
        "expires_at": ts(rng),
        "permissions": {"contents": "read", "metadata": "read"},
        "repository_selection": "selected",
    }
    return "$ curl -s -X POST .../access_tokens | jq\n" + json.dumps(resp, indent=2), v


def aws_triplet(rng: Rng, k: TokenKind, v: str) -> tuple[str, str, str]:
    kid = v if k.kind == "access-key-id" else mk_aws_akid(rng, "ASIA" if k.kind == "session-token" else "AKIA")
    secret = v if k.kind == "secret-access-key" else mk_aws_secret(rng)
    token = v if k.kind == "session-token" else mk_aws_session(rng)
    return kid, secret, token


def c_aws_credentials(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    kid, secret, token = aws_triplet(rng, k, v)
    text = f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {kid}\naws_secret_access_key = {secret}\n"
    if k.kind == "session-token":
        text += f"aws_session_token = {token}\n"
    return text + "\n[staging]\nsource_profile = default\nrole_arn = arn:aws:iam::210987654321:role/staging\n", v


def c_aws_configure(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    kid, secret, _ = aws_triplet(rng, k, v)
    text = (
        f"$ aws configure --profile ci\nAWS Access Key ID [None]: {kid}\nAWS Secret Access Key [None]: {secret}\n"
        "Default region name [None]: eu-west-1\nDefault output format [None]: json"
    )
    return text, v


def c_aws_boto3(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    kid, secret, _ = aws_triplet(rng, k, v)
    text = (
        f'import boto3\n\ns3 = boto3.client(\n    "s3",\n    aws_access_key_id="{kid}",\n'
        f'    aws_secret_access_key="{secret}",\n    region_name="eu-west-1",\n)\n'
    )
    return text, v


def c_aws_sts(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    kid, secret, token = aws_triplet(rng, k, v)
    out = {
        "Credentials": {"AccessKeyId": kid, "SecretAccessKey": secret, "SessionToken": token, "Expiration": ts(rng)},
        "AssumedRoleUser": {
            "AssumedRoleId": f"AROA{rs(rng, B32, 17)}:ci",
            "Arn": "arn:aws:sts::123456789012:assumed-role/deploy/ci",
        },
    }
    cmd = "$ aws sts assume-role --role-arn arn:aws:iam::123456789012:role/deploy --role-session-name ci\n"
    return cmd + json.dumps(out, indent=4), v


def c_gcp_client_json(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    project = f"{rng.choice(WORDS)}-{rng.randint(100000, 999999)}"
    cfg = {
        "web": {
            "client_id": f"{digits(rng, 12)}-{rs(rng, LOWER_ALNUM, 32)}.apps.googleusercontent.com",
            "project_id": project,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
            "client_secret": v,
            "redirect_uris": ["http://localhost:8080/callback"],
        }
    }
    return "$ cat client_secret.json\n" + json.dumps(cfg), v


def c_azure_credentials_json(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    creds = {"clientId": new_uuid(rng), "clientSecret": v, "subscriptionId": new_uuid(rng), "tenantId": new_uuid(rng)}
    text = "- uses: azure/login@v2\n  with:\n    creds: '" + json.dumps(creds) + "'\n"
    return text, v


def c_tf_credentials(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    cfg = {"credentials": {"app.terraform.io": {"token": v}}}
    return "$ cat ~/.terraform.d/credentials.tfrc.json\n" + json.dumps(cfg, indent=2), v


def c_telegram_url(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    chat = "-100" + digits(rng, 10)
    return pick(
        rng,
        f'curl -s "https://api.telegram.org/bot{v}/sendMessage?chat_id={chat}&text=deploy%20ok"',
        f"requests.exceptions.HTTPError: 404 Client Error: Not Found for url: https://api.telegram.org/bot{v}/getMe",
    ), v


def c_twilio_client(rng: Rng, k: TokenKind, v: str) -> tuple[str, str]:
    sid = ("SK" if k.kind == "api-key-secret" else "AC") + rs(rng, HEX, 32)
    text = (
        f'from twilio.rest import Client\n\nclient = Client("{sid}", "{v}")\n'
        'client.messages.create(to="+4915112345678", from_="+15005550006", body="hi")\n'
    )
    return text, v


CONTEXTS: dict[str, Ctx] = {
    "prompt/md-env-block": c_md_env,
    "prompt/heres-my-key": c_heres_key,
    "prompt/error-paste": c_error_paste,
    "shell/export": c_export,
    "shell/inline-env": c_inline_env,
    "shell/curl-header": c_curl_header,
    "tool/http-dump": c_http_dump,
    "tool/printenv": c_printenv,
    "tool/cat-env": c_cat_env,
    "tool/docker-inspect": c_docker_inspect,
    "tool/log-kv": c_log_kv,
    "tool/stacktrace": c_stacktrace,
    "diff/added": c_diff_added,
    "diff/removed": c_diff_removed,
    "src/python": c_src_python,
    "src/js": c_src_js,
    "src/go": c_src_go,
    "json/escaped": c_json_escaped,
    "json/config": c_json_config,
    "yaml/config": c_yaml_config,
    "yaml/k8s-stringdata": c_k8s_stringdata,
    "k8s/secret-b64": c_k8s_b64,
    "toml/config": c_toml,
    "gha/env": c_gha_env,
    "docker/env": c_dockerfile,
    "tf/default": c_tf_default,
    "md/fence": c_md_fence,
    "prose/de": c_prose_de,
    "prose/es": c_prose_es,
    "prose/ja": c_prose_ja,
    "prose/fr": c_prose_fr,
    "edge/start": c_edge_start,
    "edge/end-punct": c_edge_end,
    "edge/alone": c_edge_alone,
    "url/query": c_url_query,
    "py/dict-repr": c_py_dict,
    "shell/curl-u": c_curl_u,
    "shell/cli": c_cli,
    "tool/json-token-response": c_json_token_response,
    "aws/credentials-file": c_aws_credentials,
    "aws/configure": c_aws_configure,
    "aws/boto3": c_aws_boto3,
    "aws/sts-json": c_aws_sts,
    "gcp/client-secret-json": c_gcp_client_json,
    "azure/credentials-json": c_azure_credentials_json,
    "tf/credentials-json": c_tf_credentials,
    "url/telegram-bot": c_telegram_url,
    "twilio/client": c_twilio_client,
}

HTTP_CTX = ("shell/curl-header", "tool/http-dump", "prompt/error-paste", "py/dict-repr")
FILE_CTX = (
    "prompt/md-env-block",
    "shell/export",
    "shell/inline-env",
    "tool/printenv",
    "tool/cat-env",
    "tool/docker-inspect",
    "tool/log-kv",
    "tool/stacktrace",
    "diff/added",
    "diff/removed",
    "src/python",
    "src/js",
    "src/go",
    "json/escaped",
    "json/config",
    "yaml/config",
    "yaml/k8s-stringdata",
    "k8s/secret-b64",
    "toml/config",
    "gha/env",
    "docker/env",
    "tf/default",
    "md/fence",
    "prose/de",
    "prose/es",
    "prose/ja",
    "prose/fr",
)
EDGE_CTX = ("prompt/heres-my-key", "edge/start", "edge/end-punct", "edge/alone")
NAMED_EDGE = ("prompt/heres-my-key", "edge/end-punct")
PROFILES: dict[str, tuple[str, ...]] = {
    "http": HTTP_CTX + FILE_CTX + EDGE_CTX,
    "http-named": HTTP_CTX + FILE_CTX + NAMED_EDGE,
    "file-edge": FILE_CTX + EDGE_CTX,
    "file": FILE_CTX + NAMED_EDGE,
    "strict": (
        "shell/curl-header",
        "tool/http-dump",
        "tool/cat-env",
        "prompt/md-env-block",
        "shell/export",
        "diff/added",
        "yaml/k8s-stringdata",
    ),
}


def token_kinds() -> list[TokenKind]:
    t = TokenKind
    # fmt: off
    return [
        # cloud
        t("aws", "access-key-id", mk_aws_akid, "AWS_ACCESS_KEY_ID", "AWS access key id", 7, "file-edge",
          extra=("aws/credentials-file", "aws/configure", "aws/boto3")),
        t("aws", "secret-access-key", mk_aws_secret, "AWS_SECRET_ACCESS_KEY", "AWS secret access key", 7, "file",
          extra=("aws/credentials-file", "aws/sts-json", "aws/boto3", "aws/configure")),
        t("aws", "session-token", mk_aws_session, "AWS_SESSION_TOKEN", "AWS session token", 4, "file",
          extra=("aws/sts-json", "aws/credentials-file")),
        t("gcp", "api-key", lambda r: "AIza" + rs(r, B64URL, 35), "GOOGLE_MAPS_API_KEY", "Google Maps API key", 5,
          host="maps.googleapis.com", hname="X-Goog-Api-Key", hprefix="", param="key", extra=("url/query",)),
        t("gcp", "oauth-client-secret", lambda r: "GOCSPX-" + rs(r, B64URL, 28), "GOOGLE_CLIENT_SECRET",
          "Google OAuth client secret", 3, "file-edge", extra=("gcp/client-secret-json",)),
        t("gcp", "oauth-access-token", lambda r: "ya29.a0" + rs(r, B64URL, rng_len(r, 150, 210)),
          "GOOGLE_ACCESS_TOKEN", "Google access token", 3, host="www.googleapis.com"),
        t("gcp", "refresh-token", lambda r: "1//0" + rs(r, ALNUM, 1) + rs(r, B64URL, 98), "GOOGLE_REFRESH_TOKEN",
          "Google refresh token", 2, "file-edge"),
        t("azure", "client-secret", mk_azure_client_secret, "AZURE_CLIENT_SECRET", "Azure client secret", 5, "file",
          extra=("azure/credentials-json",),
          cli="az login --service-principal -u 3f1c2a9e-0b7d-4c55-9a61-2e8f4d7b9c10 -p {v} "
              "--tenant acme.onmicrosoft.com"),
        t("azure", "openai-api-key", lambda r: rs(r, HEX, 32), "AZURE_OPENAI_API_KEY", "Azure OpenAI key", 3,
          "http-named", host="acme-eastus.openai.azure.com", hname="api-key", hprefix=""),
        # AI providers
        t("anthropic", "api-key", lambda r: mk_ant(r, "api03"), "ANTHROPIC_API_KEY", "Anthropic API key", 8,
          host="api.anthropic.com", hname="x-api-key", hprefix=""),
        t("anthropic", "admin-key", lambda r: mk_ant(r, "admin01"), "ANTHROPIC_ADMIN_KEY", "Anthropic admin key", 2,
          host="api.anthropic.com", hname="x-api-key", hprefix=""),
        t("anthropic", "oauth-token", lambda r: mk_ant(r, "oat01"), "CLAUDE_CODE_OAUTH_TOKEN", "Claude OAuth token", 3,
          "file-edge"),
        t("openai", "project-key", lambda r: mk_openai(r, "sk-proj-"), "OPENAI_API_KEY", "OpenAI key", 7,
          host="api.openai.com"),
        t("openai", "svcacct-key", lambda r: mk_openai(r, "sk-svcacct-"), "OPENAI_API_KEY",
          "OpenAI service account key", 3, host="api.openai.com"),
        t("openai", "admin-key", lambda r: mk_openai(r, "sk-admin-"), "OPENAI_ADMIN_KEY", "OpenAI admin key", 2,
          host="api.openai.com"),
        t("openai", "legacy-key", mk_openai_legacy, "OPENAI_API_KEY", "OpenAI key", 3, host="api.openai.com"),
        t("gemini", "api-key", lambda r: "AIza" + rs(r, B64URL, 35), "GEMINI_API_KEY", "Gemini API key", 4,
          host="generativelanguage.googleapis.com", hname="x-goog-api-key", hprefix="", param="key",
          extra=("url/query",)),
        t("huggingface", "token", lambda r: "hf_" + rs(r, LETTERS, 34), "HF_TOKEN", "Hugging Face token", 5,
          host="huggingface.co", cli="huggingface-cli login --token {v} --add-to-git-credential"),
        t("replicate", "api-token", lambda r: "r8_" + rs(r, ALNUM, 37), "REPLICATE_API_TOKEN", "Replicate token", 4,
          host="api.replicate.com"),
        t("groq", "api-key", lambda r: "gsk_" + rs(r, ALNUM, 52), "GROQ_API_KEY", "Groq key", 4, host="api.groq.com"),
        t("mistral", "api-key", lambda r: rs(r, ALNUM, 32), "MISTRAL_API_KEY", "Mistral API key", 3, "http-named",
          host="api.mistral.ai"),
        t("cohere", "api-key", lambda r: rs(r, ALNUM, 40), "CO_API_KEY", "Cohere API key", 3, "http-named",
          host="api.cohere.com"),
        t("openrouter", "api-key", lambda r: "sk-or-v1-" + rs(r, HEX, 64), "OPENROUTER_API_KEY", "OpenRouter key", 4,
          host="openrouter.ai"),
        t("perplexity", "api-key", lambda r: "pplx-" + rs(r, ALNUM, 48), "PERPLEXITY_API_KEY", "Perplexity key", 3,
          host="api.perplexity.ai"),
        t("xai", "api-key", lambda r: "xai-" + rs(r, ALNUM, 80), "XAI_API_KEY", "xAI key", 3, host="api.x.ai"),
        t("langsmith", "api-key", lambda r: f"lsv2_pt_{rs(r, HEX, 32)}_{rs(r, HEX, 10)}", "LANGSMITH_API_KEY",
          "LangSmith key", 2, host="api.smith.langchain.com", hname="x-api-key", hprefix=""),
        # code hosts
        t("github", "classic-pat", lambda r: gh_style(r, "ghp_"), "GITHUB_TOKEN", "GitHub token", 6,
          host="api.github.com", hprefix="token ", cli="echo {v} | gh auth login --with-token"),
        t("github", "oauth-token", lambda r: gh_style(r, "gho_"), "GH_TOKEN", "GitHub OAuth token", 3,
          host="api.github.com"),
        t("github", "user-to-server", lambda r: gh_style(r, "ghu_"), "GITHUB_TOKEN", "GitHub App user token", 2,
          host="api.github.com"),
        t("github", "server-to-server", lambda r: gh_style(r, "ghs_"), "GITHUB_TOKEN", "GitHub installation token", 4,
          host="api.github.com", extra=("tool/json-token-response",)),
        t("github", "refresh-token", lambda r: gh_style(r, "ghr_"), "GITHUB_REFRESH_TOKEN", "GitHub refresh token", 2,
          "file-edge"),
        t("github", "fine-grained-pat", lambda r: f"github_pat_{rs(r, ALNUM, 22)}_{rs(r, ALNUM, 59)}", "GH_TOKEN",
          "GitHub fine-grained token", 5, host="api.github.com"),
        t("gitlab", "pat", lambda r: "glpat-" + rs(r, B64URL, 20), "GITLAB_TOKEN", "GitLab token", 5,
          host="gitlab.com", hname="PRIVATE-TOKEN", hprefix=""),
        t("gitlab", "runner-token", lambda r: "glrt-" + rs(r, B64URL, 20), "RUNNER_TOKEN", "GitLab runner token", 2,
          "file-edge",
          cli="gitlab-runner register --non-interactive --url https://gitlab.com --token {v} --executor docker"),
        t("gitlab", "deploy-token", lambda r: "gldt-" + rs(r, B64URL, 20), "GITLAB_DEPLOY_TOKEN", "GitLab deploy token",
          2, "file-edge"),
        t("bitbucket", "app-password", lambda r: "ATBB" + rs(r, ALNUM, 32), "BITBUCKET_APP_PASSWORD",
          "Bitbucket app password", 3, "file-edge", host="api.bitbucket.org", user="jdoe"),
        t("bitbucket", "repo-access-token", lambda r: mk_atlassian(r, "ATCTT3xFfGN0"), "BITBUCKET_ACCESS_TOKEN",
          "Bitbucket access token", 2, host="api.bitbucket.org"),
        t("atlassian", "api-token", lambda r: mk_atlassian(r, "ATATT3xFfGF0"), "JIRA_API_TOKEN", "Jira API token", 4,
          "file-edge", host="acme.atlassian.net", user="jane.doe@acme.io"),
        # registries
        t("npm", "token", lambda r: gh_style(r, "npm_"), "NPM_TOKEN", "npm token", 5, "file-edge",
          cli="npm config set //registry.npmjs.org/:_authToken {v}"),
        t("pypi", "token", lambda r: "pypi-AgEIcHlwaS5vcmc" + rs(r, B64URL, rng_len(r, 150, 190)), "TWINE_PASSWORD",
          "PyPI token", 5, "file-edge", cli="twine upload -u __token__ -p {v} dist/*"),
        t("rubygems", "api-key", lambda r: "rubygems_" + rs(r, HEX, 48), "GEM_HOST_API_KEY", "RubyGems key", 3,
          "file-edge"),
        t("cratesio", "token", lambda r: "cio" + rs(r, ALNUM, 32), "CARGO_REGISTRY_TOKEN", "crates.io token", 3, "file",
          cli="cargo login {v}"),
        t("dockerhub", "pat", lambda r: "dckr_pat_" + rs(r, B64URL, 27), "DOCKERHUB_TOKEN", "Docker Hub token", 4,
          "file-edge", cli="echo {v} | docker login -u acmebot --password-stdin"),
        t("nuget", "api-key", lambda r: "oy2" + rs(r, LOWER_ALNUM, 43), "NUGET_API_KEY", "NuGet key", 2, "file",
          cli="dotnet nuget push bin/Release/Acme.Core.2.1.0.nupkg -k {v} -s https://api.nuget.org/v3/index.json"),
        # payment
        t("stripe", "secret-key", lambda r: "sk_live_51" + rs(r, ALNUM, 97), "STRIPE_SECRET_KEY", "Stripe secret key",
          5, host="api.stripe.com", user=""),
        t("stripe", "restricted-key", lambda r: "rk_live_51" + rs(r, ALNUM, 97), "STRIPE_RESTRICTED_KEY",
          "Stripe restricted key", 3, host="api.stripe.com"),
        t("stripe", "webhook-secret", lambda r: "whsec_" + rs(r, ALNUM, 32), "STRIPE_WEBHOOK_SECRET",
          "Stripe webhook secret", 4, "file-edge"),
        t("square", "access-token", lambda r: "EAAA" + rs(r, B64URL, 60), "SQUARE_ACCESS_TOKEN", "Square token", 3,
          host="connect.squareup.com"),
        t("square", "app-secret", lambda r: "sq0csp-" + rs(r, B64URL, 43), "SQUARE_APPLICATION_SECRET",
          "Square application secret", 2, "file-edge"),
        t("paypal", "client-secret", lambda r: "E" + rs(r, B64URL, 79), "PAYPAL_CLIENT_SECRET", "PayPal client secret",
          3, "file"),
        t("braintree", "access-token",
          lambda r: f"access_token$production${rs(r, LOWER_ALNUM, 16)}${rs(r, HEX, 32)}", "BRAINTREE_ACCESS_TOKEN",
          "Braintree access token", 3, "file-edge"),
        # messaging
        t("slack", "bot-token", mk_slack_bot, "SLACK_BOT_TOKEN", "Slack bot token", 5, host="slack.com"),
        t("slack", "user-token", mk_slack_user, "SLACK_USER_TOKEN", "Slack user token", 3, host="slack.com"),
        t("slack", "app-token", mk_slack_app, "SLACK_APP_TOKEN", "Slack app-level token", 2, "file-edge"),
        t("discord", "bot-token", mk_discord_bot, "DISCORD_BOT_TOKEN", "Discord bot token", 4, host="discord.com",
          hprefix="Bot "),
        t("telegram", "bot-token", mk_telegram, "TELEGRAM_BOT_TOKEN", "Telegram bot token", 5, "file-edge",
          extra=("url/telegram-bot",)),
        t("twilio", "auth-token", lambda r: rs(r, HEX, 32), "TWILIO_AUTH_TOKEN", "Twilio auth token", 4, "file",
          host="api.twilio.com", user="AC", extra=("twilio/client",)),
        t("twilio", "api-key-secret", lambda r: rs(r, ALNUM, 32), "TWILIO_API_SECRET", "Twilio API key secret", 2,
          "file", extra=("twilio/client",)),
        # SaaS
        t("sendgrid", "api-key", lambda r: f"SG.{rs(r, B64URL, 22)}.{rs(r, B64URL, 43)}", "SENDGRID_API_KEY",
          "SendGrid key", 5, host="api.sendgrid.com"),
        t("mailgun", "api-key", lambda r: f"{rs(r, HEX, 32)}-{rs(r, HEX, 8)}-{rs(r, HEX, 8)}", "MAILGUN_API_KEY",
          "Mailgun key", 2, "file", host="api.eu.mailgun.net", user="api"),
        t("mailgun", "legacy-key", lambda r: "key-" + rs(r, HEX, 32), "MAILGUN_API_KEY", "Mailgun key", 1, "file",
          host="api.mailgun.net", user="api"),
        t("postmark", "server-token", new_uuid, "POSTMARK_SERVER_TOKEN", "Postmark server token", 2, "strict",
          host="api.postmarkapp.com", hname="X-Postmark-Server-Token", hprefix=""),
        t("datadog", "api-key", lambda r: rs(r, HEX, 32), "DD_API_KEY", "Datadog API key", 3, "http-named",
          host="api.datadoghq.eu", hname="DD-API-KEY", hprefix=""),
        t("datadog", "app-key", lambda r: rs(r, HEX, 40), "DD_APP_KEY", "Datadog application key", 2, "strict",
          host="api.datadoghq.eu", hname="DD-APPLICATION-KEY", hprefix=""),
        t("newrelic", "user-key", lambda r: "NRAK-" + rs(r, UPPER_ALNUM, 27), "NEW_RELIC_API_KEY", "New Relic key", 3,
          host="api.newrelic.com", hname="Api-Key", hprefix=""),
        t("newrelic", "license-key", lambda r: rs(r, HEX, 36) + "NRAL", "NEW_RELIC_LICENSE_KEY",
          "New Relic license key", 2, "file"),
        t("sentry", "user-auth-token", lambda r: "sntryu_" + rs(r, HEX, 64), "SENTRY_AUTH_TOKEN", "Sentry token", 2,
          host="sentry.io"),
        t("sentry", "org-auth-token", mk_sentry_org, "SENTRY_AUTH_TOKEN", "Sentry org token", 2, "file-edge"),
        t("linear", "api-key", lambda r: "lin_api_" + rs(r, ALNUM, 40), "LINEAR_API_KEY", "Linear key", 3,
          host="api.linear.app", hprefix=""),
        t("notion", "integration-secret", lambda r: "secret_" + rs(r, ALNUM, 43), "NOTION_TOKEN", "Notion secret", 2,
          host="api.notion.com"),
        t("notion", "ntn-token", lambda r: "ntn_" + digits(r, 11) + rs(r, ALNUM, 35), "NOTION_API_KEY", "Notion token",
          2, host="api.notion.com"),
        t("shopify", "admin-token", lambda r: "shpat_" + rs(r, HEX, 32), "SHOPIFY_ACCESS_TOKEN", "Shopify token", 2,
          host="acme-store.myshopify.com", hname="X-Shopify-Access-Token", hprefix=""),
        t("shopify", "shared-secret", lambda r: "shpss_" + rs(r, HEX, 32), "SHOPIFY_API_SECRET", "Shopify secret", 1,
          "file-edge"),
        t("shopify", "custom-app-token", lambda r: "shpca_" + rs(r, HEX, 32), "SHOPIFY_ADMIN_TOKEN", "Shopify token", 1,
          host="acme-store.myshopify.com", hname="X-Shopify-Access-Token", hprefix=""),
        t("vercel", "token", lambda r: rs(r, ALNUM, 24), "VERCEL_TOKEN", "Vercel token", 2, "strict",
          host="api.vercel.com", cli="vercel deploy --prod --yes --token {v}"),
        t("netlify", "pat", lambda r: "nfp_" + rs(r, ALNUM, 36), "NETLIFY_AUTH_TOKEN", "Netlify token", 2,
          host="api.netlify.com"),
        t("supabase", "service-role-jwt", mk_supabase_service, "SUPABASE_SERVICE_ROLE_KEY", "Supabase service_role key",
          3, host="xyzcompanyproject.supabase.co", hname="apikey", hprefix=""),
        t("supabase", "secret-key", lambda r: "sb_secret_" + rs(r, B64URL, 31), "SUPABASE_SECRET_KEY",
          "Supabase secret key", 2, host="xyzcompanyproject.supabase.co", hname="apikey", hprefix=""),
        t("firebase", "fcm-server-key", lambda r: f"AAAA{rs(r, B64URL, 7)}:APA91b{rs(r, B64URL, 134)}",
          "FCM_SERVER_KEY", "FCM server key", 2, host="fcm.googleapis.com", hprefix="key="),
        t("cloudflare", "api-token", lambda r: rs(r, B64URL, 40), "CLOUDFLARE_API_TOKEN", "Cloudflare API token", 3,
          "http-named", host="api.cloudflare.com"),
        t("cloudflare", "global-api-key", lambda r: rs(r, HEX, 37), "CLOUDFLARE_API_KEY", "Cloudflare global key", 1,
          "strict", host="api.cloudflare.com", hname="X-Auth-Key", hprefix=""),
        t("digitalocean", "pat", lambda r: "dop_v1_" + rs(r, HEX, 64), "DIGITALOCEAN_TOKEN", "DigitalOcean token", 4,
          host="api.digitalocean.com", cli="doctl auth init --context ci -t {v}"),
        t("heroku", "api-key", lambda r: "HRKU-AA" + rs(r, B64URL, 58), "HEROKU_API_KEY", "Heroku key", 2,
          host="api.heroku.com"),
        t("doppler", "service-token", lambda r: f"dp.st.{pick(r, 'prd', 'dev', 'stg')}.{rs(r, ALNUM, 43)}",
          "DOPPLER_TOKEN", "Doppler service token", 3, "file-edge", cli="doppler configure set token {v} --scope /app"),
        t("vault", "service-token", lambda r: "hvs." + rs(r, ALNUM, 24), "VAULT_TOKEN", "Vault token", 3,
          host="vault.acme.internal:8200", hname="X-Vault-Token", hprefix="", extra=("tool/json-token-response",)),
        t("vault", "batch-token", lambda r: "hvb.AAAAAQ" + rs(r, B64URL, 130), "VAULT_TOKEN", "Vault batch token", 1,
          host="vault.acme.internal:8200", hname="X-Vault-Token", hprefix=""),
        t("terraform", "api-token", lambda r: f"{rs(r, ALNUM, 14)}.atlasv1.{rs(r, ALNUM, 67)}",
          "TF_TOKEN_app_terraform_io", "Terraform Cloud token", 3, "file-edge", extra=("tf/credentials-json",)),
        t("pulumi", "access-token", lambda r: "pul-" + rs(r, HEX, 40), "PULUMI_ACCESS_TOKEN", "Pulumi token", 3,
          "file-edge", cli="pulumi login --cloud-url https://api.pulumi.com && PULUMI_ACCESS_TOKEN={v} pulumi up"),
        t("grafana", "service-account-token", lambda r: f"glsa_{rs(r, ALNUM, 32)}_{rs(r, HEX, 8)}",
          "GRAFANA_SERVICE_ACCOUNT_TOKEN", "Grafana token", 2, host="grafana.acme.io"),
        t("postman", "api-key", lambda r: f"PMAK-{rs(r, HEX, 24)}-{rs(r, HEX, 34)}", "POSTMAN_API_KEY", "Postman key",
          2, host="api.getpostman.com", hname="X-Api-Key", hprefix=""),
        t("okta", "api-token", lambda r: "00" + rs(r, B64URL, 40), "OKTA_API_TOKEN", "Okta API token", 2, "http-named",
          host="acme.okta.com", hprefix="SSWS "),
        t("planetscale", "service-token", lambda r: "pscale_tkn_" + rs(r, B64URL, 43), "PLANETSCALE_SERVICE_TOKEN",
          "PlanetScale token", 2, "file-edge"),
    ]
    # fmt: on


def rng_len(rng: Rng, lo: int, hi: int) -> int:
    return rng.randint(lo, hi)


def token_rows(rng: Rng, k: TokenKind) -> list[Row]:
    extras = list(k.extra)
    if k.cli:
        extras.append("shell/cli")
    if k.user is not None:
        extras.append("shell/curl-u")
    pool = [c for c in PROFILES[k.profile] if c not in extras]
    chosen = extras[: k.n] + rng.sample(pool, max(0, k.n - len(extras)))
    rows = []
    for ctx in chosen:
        text, secret = CONTEXTS[ctx](rng, k, k.make(rng))
        rows.append(pos(k.family, k.kind, ctx, text, secret))
    return rows


# --------------------------------------------------------------------------------------------------
# structured families


def gcp_sa_rows(rng: Rng) -> list[Row]:
    contexts = ["prompt/paste-json", "tool/cat-json", "gha/inline-json", "env/oneline-json", "src/python-dict"]
    rows = []
    for ctx in contexts:
        key, lines = pem("PRIVATE KEY", der_rsa_pkcs8(rng))
        project = f"{rng.choice(WORDS)}-{rng.randint(100000, 999999)}"
        email = f"{pick(rng, 'deployer', 'ci-runner', 'firebase-adminsdk-x1y2z')}@{project}.iam.gserviceaccount.com"
        sa = {
            "type": "service_account",
            "project_id": project,
            "private_key_id": rs(rng, HEX, 40),
            "private_key": key + "\n",
            "client_email": email,
            "client_id": digits(rng, 21),
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": "https://oauth2.googleapis.com/token",
            "universe_domain": "googleapis.com",
        }
        compact = json.dumps(sa)
        text = {
            "prompt/paste-json": "here's the service account json, gcloud says invalid_grant:\n"
            f"{json.dumps(sa, indent=2)}",
            "tool/cat-json": f"$ cat gcp-sa.json\n{json.dumps(sa, indent=2)}",
            "gha/inline-json": f"env:\n  GOOGLE_CREDENTIALS: '{compact}'\n",
            "env/oneline-json": f"GOOGLE_APPLICATION_CREDENTIALS_JSON='{compact}'",
            "src/python-dict": f"CREDS = {sa!r}\ncredentials = "
            "service_account.Credentials.from_service_account_info(CREDS)",
        }[ctx]
        rows.append(pos("gcp", "sa-private-key", ctx, text, lines[0]))
    return rows


def azure_storage_rows(rng: Rng) -> list[Row]:
    rows = []
    for ctx in rng.sample(
        ["env/conn-string", "json/appsettings", "json/local-settings", "src/python", "tool/az-keys-list", "prose/es"], 4
    ):
        acct = rs(rng, LOWER_ALNUM, rng.randint(8, 16))
        key = b64(rng.randbytes(64))
        conn = f"DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={key};EndpointSuffix=core.windows.net"
        keys = [{"creationTime": ts(rng), "keyName": "key1", "permissions": "FULL", "value": key}]
        text = {
            "env/conn-string": f'AZURE_STORAGE_CONNECTION_STRING="{conn}"',
            "json/appsettings": json.dumps(
                {"ConnectionStrings": {"Blob": conn}, "Logging": {"LogLevel": {"Default": "Information"}}}, indent=2
            ),
            "json/local-settings": json.dumps(
                {"IsEncrypted": False, "Values": {"AzureWebJobsStorage": conn, "FUNCTIONS_WORKER_RUNTIME": "python"}},
                indent=2,
            ),
            "src/python": "from azure.storage.blob import BlobServiceClient\n\n"
            f'svc = BlobServiceClient.from_connection_string("{conn}")\n',
            "tool/az-keys-list": f"$ az storage account keys list -n {acct} -g rg-prod\n{json.dumps(keys, indent=2)}",
            "prose/es": f"La cadena de conexión del storage es {conn} y aun así da AuthenticationFailed.",
        }[ctx]
        rows.append(pos("azure", "storage-account-key", ctx, text, key))
    acct = rs(rng, LOWER, 10)
    key = b64(rng.randbytes(64))
    text = f"COSMOS_CONNECTION_STRING=AccountEndpoint=https://{acct}.documents.azure.com:443/;AccountKey={key};"
    rows.append(pos("azure", "cosmos-key", "env/conn-string", text, key))
    return rows


def azure_sas_rows(rng: Rng) -> list[Row]:
    rows = []
    for ctx in rng.sample(["shell/azcopy", "shell/curl-upload", "tool/log", "env/sas-url", "prose/en"], 4):
        sig = urllib.parse.quote(b64(rng.randbytes(32)), safe="")
        acct = rs(rng, LOWER_ALNUM, 12)
        url = (
            f"https://{acct}.blob.core.windows.net/backups/db-{rng.randint(1, 30):02d}.sql.gz?sv=2024-11-04&ss=b"
            f"&srt=co&sp=rwdlac&se=2026-12-31T23:59:59Z&st=2026-12-01T00:00:00Z&spr=https&sig={sig}"
        )
        text = {
            "shell/azcopy": f'azcopy copy ./dump.sql.gz "{url}"',
            "shell/curl-upload": f'curl -X PUT -T dump.sql.gz -H "x-ms-blob-type: BlockBlob" "{url}"',
            "tool/log": f"{ts(rng)} INFO uploader put url={url} bytes={rng.randint(10**6, 10**8)}",
            "env/sas-url": f"BACKUP_SAS_URL={url}",
            "prose/en": f"the SAS link is {url} - it expires end of year",
        }[ctx]
        rows.append(pos("azure", "sas-signature", ctx, text, sig))
    return rows


def webhook_text(rng: Rng, ctx: str, var: str, url: str) -> str:
    return {
        "shell/curl-post": "curl -X POST -H 'Content-type: application/json' "
        f'--data \'{{"text":"deploy finished"}}\' {url}',
        "env/var": f"{var}={url}",
        "src/python": f'import requests\n\nrequests.post("{url}", json={{"content": "build failed"}}, timeout=5)\n',
        "gha/step": "      - name: notify\n        if: failure()\n        run: |\n"
        f'          curl -sf -d \'{{"text":"CI failed"}}\' "{url}"\n',
        "json/config": json.dumps({"alerts": {"channel": "#ops", "webhook": url, "minLevel": "error"}}, indent=2),
    }[ctx]


def webhook_rows(rng: Rng) -> list[Row]:
    ctxs = ["shell/curl-post", "env/var", "src/python", "gha/step", "json/config"]
    rows = []
    for ctx in rng.sample(ctxs, 4):
        token = rs(rng, ALNUM, 24)
        url = f"https://hooks.slack.com/services/T{rs(rng, UPPER_ALNUM, 10)}/B{rs(rng, UPPER_ALNUM, 10)}/{token}"
        rows.append(pos("slack", "webhook-url", ctx, webhook_text(rng, ctx, "SLACK_WEBHOOK_URL", url), token))
    for ctx in rng.sample(ctxs, 3):
        token = rs(rng, B64URL, 68)
        url = f"https://discord.com/api/webhooks/{digits(rng, 19)}/{token}"
        rows.append(pos("discord", "webhook-url", ctx, webhook_text(rng, ctx, "DISCORD_WEBHOOK_URL", url), token))
    return rows


def sentry_dsn_rows(rng: Rng) -> list[Row]:
    rows = []
    for ctx in ("src/python-init", "env/dsn"):
        secret = rs(rng, HEX, 32)
        dsn = f"https://{rs(rng, HEX, 32)}:{secret}@sentry.acme.internal/{rng.randint(2, 90)}"
        text = (
            f'import sentry_sdk\n\nsentry_sdk.init(dsn="{dsn}", traces_sample_rate=0.2)\n'
            if ctx == "src/python-init"
            else f"SENTRY_DSN={dsn}"
        )
        rows.append(pos("sentry", "legacy-dsn-secret", ctx, text, secret))
    return rows


def private_key_material(rng: Rng, kind: str) -> tuple[str, str, str]:
    """Return (pem text, secret line, typical path)."""
    if kind == "rsa-pkcs1":
        text, lines = pem("RSA PRIVATE KEY", der_rsa_pkcs1(rng))
        return text, lines[0], "certs/server.key"
    if kind == "pkcs8":
        text, lines = pem("PRIVATE KEY", der_rsa_pkcs8(rng) if rng.random() < 0.6 else der_ec_pkcs8(rng))
        return text, lines[0], "keys/jwt-signing.pem"
    if kind == "ec":
        text, lines = pem("EC PRIVATE KEY", der_ec_sec1(rng))
        return text, lines[0], "apple/AuthKey.p8"
    if kind == "openssh":
        text, secret = openssh_ed25519(rng, f"{pick(rng, 'dev', 'deploy', 'ci')}@{pick(rng, 'laptop', 'runner-7')}")
        return text, secret, "~/.ssh/id_ed25519"
    text, secret = pgp_private(rng)
    return text, secret, "backup/private.asc"


def pem_context(rng: Rng, ctx: str, key: str, path: str) -> str:
    indented = "\n".join("    " + line for line in key.split("\n"))
    ask = pick(rng, "deploy fails with `invalid format`, here is the key I use:", "is this key valid?")
    return {
        "tool/cat-file": f"$ cat {path}\n{key}",
        "prompt/paste": f"{ask}\n\n{key}\n\nthanks",
        "diff/added": f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1,{key.count(chr(10)) + 1} @@\n"
        + "\n".join("+" + ln for ln in key.split("\n")),
        "yaml/block-scalar": f"tls:\n  enabled: true\n  key: |\n{indented}\n",
        "src/python-triple": f'SIGNING_KEY = """{key}\n"""\n',
        "env/escaped-newlines": 'PRIVATE_KEY="' + key.replace("\n", "\\n") + '"',
        "json/escaped": json.dumps({"name": "deploy-key", "private_key": key + "\n"}),
        "md/fence": f"Here's the key you asked for:\n\n```\n{key}\n```",
        "tf/heredoc": 'resource "tls_locally_signed_cert" "x" {\n'
        f"  ca_private_key_pem = <<-EOT\n{indented}\n  EOT\n}}",
        "gha/env-block": f"env:\n  SSH_PRIVATE_KEY: |\n{indented}\n",
    }[ctx]


def private_key_rows(rng: Rng) -> list[Row]:
    ctxs = [
        "tool/cat-file",
        "prompt/paste",
        "diff/added",
        "yaml/block-scalar",
        "src/python-triple",
        "env/escaped-newlines",
        "json/escaped",
        "md/fence",
        "tf/heredoc",
        "gha/env-block",
    ]
    rows = []
    for kind, n in (("rsa-pkcs1", 4), ("pkcs8", 3), ("ec", 3), ("openssh", 4), ("pgp", 2)):
        for ctx in rng.sample(ctxs, n):
            key, secret, path = private_key_material(rng, kind)
            rows.append(pos("private-key", kind, ctx, pem_context(rng, ctx, key, path), secret))
    return rows


def age_rows(rng: Rng) -> list[Row]:
    sec1, pub1 = age_secret(rng)
    sec2, _ = age_secret(rng)
    return [
        pos(
            "age",
            "secret-key",
            "tool/cat-keys-txt",
            f"$ cat ~/.config/sops/age/keys.txt\n# created: {ts(rng)}\n# public key: {pub1}\n{sec1}\n",
            sec1,
        ),
        pos("age", "secret-key", "shell/export", f"export SOPS_AGE_KEY={sec2}\nsops -d secrets.enc.yaml", sec2),
    ]


def conn_password(rng: Rng, scheme: str) -> str:
    roll = rng.random()
    if scheme == "postgres" and roll < 0.2:
        return "npg_" + rs(rng, ALNUM, 12)
    if scheme == "mysql" and roll < 0.3:
        return "pscale_pw_" + rs(rng, ALNUM + "_", 43)
    return pw_strong(rng) if roll < 0.6 else pw_alnum(rng)


def conn_url(rng: Rng, scheme: str, enc: str) -> str:
    user = pick(rng, "app", "admin", "svc_orders", "postgres", "root", "analytics")
    if scheme == "postgres":
        host = pick(
            rng,
            "db.internal:5432",
            f"ep-{rs(rng, LOWER, 6)}-{digits(rng, 6)}.eu-central-1.aws.neon.tech",
            "aws-0-eu-central-1.pooler.supabase.com:6543",
            "10.0.3.17:5432",
        )
        return (
            f"{pick(rng, 'postgres', 'postgresql')}://{user}:{enc}@{host}/{pick(rng, 'app', 'orders')}?sslmode=require"
        )
    if scheme == "mysql":
        return (
            f"mysql://{user}:{enc}@{pick(rng, 'aws.connect.psdb.cloud', 'mysql.internal:3306')}/shop?ssl-mode=REQUIRED"
        )
    if scheme == "mongodb":
        if rng.random() < 0.5:
            cluster = rs(rng, LOWER_ALNUM, 5)
            return f"mongodb+srv://{user}:{enc}@cluster0.{cluster}.mongodb.net/app?retryWrites=true&w=majority"
        return f"mongodb://{user}:{enc}@mongo-0:27017,mongo-1:27017/admin?replicaSet=rs0&authSource=admin"
    if scheme == "redis":
        host = pick(rng, "cache.internal:6379", f"{rng.choice(WORDS)}-{digits(rng, 5)}.upstash.io:6379")
        return f"{pick(rng, 'redis', 'rediss')}://{pick(rng, '', 'default')}:{enc}@{host}/0"
    return f"{pick(rng, 'amqp', 'amqps')}://{user}:{enc}@{pick(rng, 'rabbitmq:5672', 'goose.rmq2.cloudamqp.com')}/%2F"


CONN_VARS = {
    "postgres": "DATABASE_URL",
    "mysql": "DATABASE_URL",
    "mongodb": "MONGODB_URI",
    "redis": "REDIS_URL",
    "amqp": "CELERY_BROKER_URL",
}
CONN_CLI = {
    "postgres": "psql \"{u}\" -c '\\dt'",
    "mysql": "mysqlsh --uri \"{u}\" --sql -e 'show tables'",
    "mongodb": "mongosh \"{u}\" --eval 'db.stats()'",
    "redis": 'redis-cli -u "{u}" PING',
    "amqp": 'celery -A app worker --broker "{u}" -l info',
}


def conn_context(rng: Rng, ctx: str, scheme: str, url: str) -> str:
    var = CONN_VARS[scheme]
    return {
        "env/url": f"{var}={url}",
        "shell/cli": "$ " + CONN_CLI[scheme].replace("{u}", url),
        "tool/log": f"{ts(rng)} INFO  [db] connecting to {url} (pool=10)",
        "compose/env": f"services:\n  api:\n    image: acme/api:latest\n    environment:\n      - {var}={url}\n",
        "json/config": json.dumps({"db": {"url": url, "pool": {"min": 1, "max": 10}}}, indent=2),
        "k8s/from-literal": f"kubectl -n prod create secret generic app-db --from-literal={var}='{url}'",
        "prose/en": f"the staging db is at {url} — can you run the migration against it?",
        "prose/de": f"Die Verbindung zur Datenbank ist {url}, aber die Migration hängt.",
        "src/python": f'engine = create_engine("{url}", pool_pre_ping=True)\n',
        "src/go": f'db, err := sql.Open("pgx", "{url}")\nif err != nil {{\n\tlog.Fatal(err)\n}}\n',
        "json/escaped": json.dumps({"tool": "bash", "input": {"command": f'export {var}="{url}"\nnpm run migrate'}}),
        "stacktrace": "Error: connect ETIMEDOUT\n"
        f"    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1607:16)\n  url: '{url}'",
    }[ctx]


def conn_rows(rng: Rng) -> list[Row]:
    ctxs = [
        "env/url",
        "shell/cli",
        "tool/log",
        "compose/env",
        "json/config",
        "k8s/from-literal",
        "prose/en",
        "prose/de",
        "src/python",
        "src/go",
        "json/escaped",
        "stacktrace",
    ]
    rows = []
    for scheme, n in (("postgres", 5), ("mysql", 3), ("mongodb", 4), ("redis", 4), ("amqp", 3)):
        for ctx in rng.sample(ctxs, n):
            enc = urlenc(conn_password(rng, scheme))
            rows.append(pos("conn-url", scheme, ctx, conn_context(rng, ctx, scheme, conn_url(rng, scheme, enc)), enc))
    return rows


def cli_flag_rows(rng: Rng) -> list[Row]:
    templates: dict[str, Callable[[str], str]] = {
        "shell/mysql-p": lambda p: f"$ mysql -h 127.0.0.1 -u root -p'{p}' shop -e 'SHOW TABLES;'",
        "shell/pgpassword": lambda p: (
            f"PGPASSWORD='{p}' psql -h db.internal -U app -d app -c 'select count(*) from users'"
        ),
        "shell/docker-login-p": lambda p: f"docker login registry.acme.io -u ci-bot -p '{p}'",
        "shell/kubectl-literal": lambda p: (
            f"kubectl -n prod create secret generic db-creds --from-literal=username=app --from-literal=password='{p}'"
        ),
        "shell/helm-set": lambda p: (
            "helm upgrade --install pg oci://registry-1.docker.io/bitnamicharts/postgresql "
            f"--set auth.postgresPassword='{p}'"
        ),
        "shell/redis-cli-a": lambda p: f"redis-cli -h cache.internal -a '{p}' --no-auth-warning INFO keyspace",
        "shell/sshpass": lambda p: f"sshpass -p '{p}' ssh deploy@10.0.4.21 'sudo systemctl restart api'",
        "shell/htpasswd": lambda p: f"htpasswd -bB /etc/nginx/.htpasswd admin '{p}'",
        "shell/mongodump": lambda p: (
            f"mongodump --host rs0/mongo-0:27017 --username backup --password '{p}' --authenticationDatabase admin"
        ),
        "shell/openssl-passout": lambda p: (
            f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout 'pass:{p}'"
        ),
        "shell/keytool": lambda p: (
            "keytool -importkeystore -srckeystore app.p12 -srcstoretype "
            f"PKCS12 -srcstorepass '{p}' -destkeystore app.jks"
        ),
        "shell/ldapsearch": lambda p: (
            f"ldapsearch -x -H ldaps://ldap.acme.io -D 'cn=admin,dc=acme,dc=io' -w '{p}' '(uid=jdoe)'"
        ),
        "shell/echo-stdin": lambda p: f"echo '{p}' | docker login ghcr.io -u octocat --password-stdin",
        "shell/wget": lambda p: (
            f"wget --user=deploy --password='{p}' https://artifacts.acme.io/releases/app-1.4.2.tar.gz"
        ),
        "shell/mc-alias": lambda p: f"mc alias set minio http://localhost:9000 minioadmin '{p}'",
        "shell/psql-conninfo": lambda p: (
            f'psql "host=db.internal port=5432 dbname=app user=app password={p} sslmode=require"'
        ),
        "shell/curl-u": lambda p: f"curl -u 'admin:{p}' https://jenkins.acme.io/api/json?pretty=true",
    }
    rows = []
    for ctx in rng.sample(sorted(templates), 14):
        pw = pw_any(rng)
        if ctx == "shell/psql-conninfo":
            pw = pw_alnum(rng)
        rows.append(pos("cli-flag", "password", ctx, templates[ctx](pw), pw))
    return rows


def prose_password_rows(rng: Rng) -> list[Row]:
    templates: dict[str, Callable[[str], str]] = {
        "prose/en-is": lambda p: f"the password for the staging db is {p}, user is admin",
        "prose/en-pw-colon": lambda p: f"ssh into 10.0.0.5 as deploy\npw: {p}",
        "prose/en-slash": lambda p: f"login for the grafana instance is admin / {p} — please don't commit it",
        "prose/en-changed": lambda p: f"I changed the root password to {p} so update the compose file please",
        "prose/en-backticks": lambda p: f"creds are user `deploy` and password `{p}`",
        "prose/en-list": lambda p: f"host: db.acme.io\nuser: app\npassword: {p}\nport: 5432",
        "prose/de": lambda p: f"Das Passwort für den Testserver ist {p}, Benutzer ist root.",
        "prose/es": lambda p: f"La contraseña de la base de datos es {p}; el usuario es postgres.",
        "prose/ja": lambda p: f"ステージング環境のパスワードは {p} です。",
        "prose/ja-fullwidth-colon": lambda p: f"管理画面のログイン情報\nユーザー名：admin\nパスワード：{p}",
        "prose/fr": lambda p: f"Le mot de passe du compte admin est {p} (à changer après la démo).",
        "prose/pt": lambda p: f"a senha do banco é {p}, consegue rodar o backup?",
    }
    rows = []
    for ctx in sorted(templates):
        pw = pw_human(rng) if rng.random() < 0.6 else pw_alnum(rng, 12, 18)
        rows.append(pos("password-prose", "password", ctx, templates[ctx](pw), pw))
    return rows


GENERIC_ENV: tuple[tuple[str, Callable[[Rng], str]], ...] = (
    ("DB_PASSWORD", pw_strong),
    ("SECRET_KEY", lambda r: rs(r, HEX, 64)),
    ("API_TOKEN", lambda r: rs(r, B64URL, 40)),
    ("JWT_SECRET", lambda r: b64(r.randbytes(48))),
    ("SESSION_SECRET", lambda r: rs(r, HEX, 32)),
    ("WEBHOOK_SECRET", lambda r: rs(r, ALNUM, 32)),
    ("ENCRYPTION_KEY", lambda r: b64(r.randbytes(32))),
    ("POSTGRES_PASSWORD", pw_alnum),
    ("REDIS_PASSWORD", lambda r: rs(r, ALNUM, 24)),
    ("NEXTAUTH_SECRET", lambda r: b64(r.randbytes(32))),
    ("APP_KEY", lambda r: "base64:" + b64(r.randbytes(32))),
    ("ADMIN_PASSWORD", pw_human),
    ("MINIO_ROOT_PASSWORD", pw_alnum),
    ("PAYMENTS_CLIENT_SECRET", lambda r: rs(r, B64URL, 48)),
)


def generic_env_text(rng: Rng, ctx: str, var: str, v: str) -> str:
    return {
        "tool/cat-env": "$ cat .env\n" + "\n".join(env_lines(rng, f"{var}={v}")),
        "tool/printenv": "$ env | sort\n" + "\n".join(sorted([*rng.sample(PRINTENV_FILLER, 5), f"{var}={v}"])),
        "diff/added": f"@@ -4,3 +4,4 @@\n PORT=8080\n+{var}={v}\n LOG_LEVEL=info",
        "compose/env": f'services:\n  web:\n    build: .\n    environment:\n      {var}: "{v}"\n      TZ: UTC\n',
        "gha/env": f"    env:\n      {var}: {v}\n      CI: true\n",
        "shell/export": f"export {var}='{v}'",
        "prompt/md-env-block": f"why does the container crash?\n```\n{var}={v}\nDEBUG=0\n```",
        "k8s/configmap": f'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web-config\ndata:\n  {var}: "{v}"\n',
        "shell/docker-run": f"docker run -d --name web -e {var}='{v}' -p 8080:8080 acme/web:1.8.0",
        "systemd/unit": f'[Service]\nEnvironment="{var}={v}"\nExecStart=/usr/local/bin/web\nRestart=always\n',
        "shell/heroku-config": f"heroku config:set {var}='{v}' -a acme-web",
        "shell/fly-secrets": f"fly secrets set {var}='{v}' --app acme-web",
        "shell/gh-secret": f"gh secret set {var} --body '{v}' --repo acme/web",
        "json/escaped": json.dumps(
            {"path": ".env.local", "content": f"{var}={v}\nNEXT_PUBLIC_URL=http://localhost:3000\n"}
        ),
    }[ctx]


def generic_env_rows(rng: Rng) -> list[Row]:
    ctxs = [
        "tool/cat-env",
        "tool/printenv",
        "diff/added",
        "compose/env",
        "gha/env",
        "shell/export",
        "prompt/md-env-block",
        "k8s/configmap",
        "shell/docker-run",
        "systemd/unit",
        "shell/heroku-config",
        "shell/fly-secrets",
        "shell/gh-secret",
        "json/escaped",
    ]
    rows = []
    for (var, make), ctx in zip(GENERIC_ENV, rng.sample(ctxs, len(GENERIC_ENV)), strict=True):
        v = make(rng)
        rows.append(pos("env-generic", var.lower().replace("_", "-"), ctx, generic_env_text(rng, ctx, var, v), v))
    return rows


def config_value_rows(rng: Rng) -> list[Row]:
    templates: dict[str, Callable[[str], str]] = {
        "yaml/database": lambda p: f"database:\n  host: db.internal\n  username: app\n  password: {p}\n  pool: 5\n",
        "yaml/quoted": lambda p: f'smtp:\n  host: smtp.mailgun.org\n  user: postmaster@mg.acme.io\n  password: "{p}"\n',
        "json/oauth": lambda p: json.dumps(
            {"oauth": {"client_id": "orders-api", "client_secret": p, "scopes": ["read"]}}, indent=2
        ),
        "toml/database": lambda p: f'[database]\nhost = "localhost"\nuser = "app"\npassword = "{p}"\n',
        "ini/my-cnf": lambda p: f"[client]\nuser=root\npassword={p}\nhost=127.0.0.1\n",
        "xml/maven-settings": lambda p: (
            "<servers>\n  <server>\n    <id>nexus-releases</id>\n    <username>deploy</username>\n"
            f"    <password>{p}</password>\n  </server>\n</servers>"
        ),
        "properties/spring": lambda p: (
            f"spring.datasource.url=jdbc:postgresql://db:5432/app\nspring.datasource.username=app\nspring.datasource.password={p}\n"
        ),
        "php/wp-config": lambda p: (
            f"define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );\n"
        ),
        "yaml/rails-database": lambda p: (
            f"production:\n  adapter: postgresql\n  database: app_production\n  username: app\n  password: {p}\n"
        ),
        "json/mssql-conn": lambda p: json.dumps(
            {
                "ConnectionStrings": {
                    "Default": "Server=tcp:acme-sql.database.windows.net,1433;Initial "
                    f"Catalog=app;User ID=sqladmin;Password={p};Encrypt=True;"
                }
            },
            indent=2,
        ),
        "pgpass/line": lambda p: f"$ cat ~/.pgpass\ndb.internal:5432:app:app:{p}\n",
        "yaml/ansible": lambda p: f"all:\n  vars:\n    ansible_user: deploy\n    ansible_become_password: {p}\n",
        "tfvars/assign": lambda p: f'region      = "eu-west-1"\ndb_username = "app"\ndb_password = "{p}"\n',
        "diff/yaml": lambda p: f"@@ -8,6 +8,7 @@ redis:\n   host: cache\n+  password: {p}\n   port: 6379",
    }
    rows = []
    for ctx in sorted(templates):
        v = rs(rng, B64URL, 40) if ctx == "json/oauth" else pw_any(rng)
        if ctx in ("json/mssql-conn", "pgpass/line"):
            v = pw_alnum(rng)
        rows.append(pos("config-value", "password", ctx, templates[ctx](v), v))
    return rows


def basic_auth_rows(rng: Rng) -> list[Row]:
    rows = []
    url_templates: dict[str, Callable[[str], str]] = {
        "url/jenkins": lambda e: (
            f"curl -X POST https://admin:{e}@jenkins.acme.io/job/deploy/buildWithParameters?ENV=prod"
        ),
        "url/nexus-npm": lambda e: f"registry=https://deploy:{e}@nexus.acme.io/repository/npm-group/",
        "url/elastic": lambda e: f"ELASTICSEARCH_URL=http://elastic:{e}@localhost:9200",
        "url/prose": lambda e: f"you can browse it at https://ops:{e}@grafana.acme.io/d/abc123/overview?orgId=1",
    }
    for ctx in sorted(url_templates):
        enc = urlenc(pw_any(rng))
        rows.append(pos("basic-auth", "url-userinfo", ctx, url_templates[ctx](enc), enc))
    hdr_templates: dict[str, Callable[[str], str]] = {
        "shell/curl-header": lambda b: f'curl -H "Authorization: Basic {b}" https://registry.acme.io/v2/_catalog',
        "tool/http-dump": lambda b: (
            f"> GET /api/v1/status HTTP/1.1\n> Host: admin.acme.io\n> Authorization: Basic {b}\n>\n< HTTP/1.1 200 OK"
        ),
        "src/python": lambda b: f'headers = {{"Authorization": "Basic {b}", "Accept": "application/json"}}\n',
        "tool/nginx-log": lambda b: f'{ts(rng)} [debug] 31#31: *7 http header: "Authorization: Basic {b}"',
        "json/har": lambda b: json.dumps(
            {
                "request": {
                    "method": "GET",
                    "url": "https://api.acme.io/v1/report",
                    "headers": [{"name": "Authorization", "value": f"Basic {b}"}],
                }
            }
        ),
    }
    for ctx in sorted(hdr_templates):
        blob = b64(f"{pick(rng, 'admin', 'deploy', 'jane@acme.io')}:{pw_any(rng)}".encode())
        rows.append(pos("basic-auth", "header", ctx, hdr_templates[ctx](blob), blob))
    return rows


def bearer_rows(rng: Rng) -> list[Row]:
    makers = (
        lambda r: rs(r, B64URL, 43),
        lambda r: rs(r, HEX, 64),
        lambda r: "v4.local." + rs(r, B64URL, 140),
        lambda r: rs(r, ALNUM, 32) + "." + rs(r, ALNUM, 40),
    )
    templates: dict[str, Callable[[str], str]] = {
        "shell/curl": lambda t: f"curl https://api.acme.io/v1/orders -H 'Authorization: Bearer {t}'",
        "tool/http-dump": lambda t: (
            f"POST /graphql HTTP/1.1\nHost: api.acme.io\nAuthorization: Bearer {t}\nContent-Type: application/json"
        ),
        "src/js-fetch": lambda t: f"await fetch(url, {{ headers: {{ Authorization: `Bearer {t}` }} }});",
        "json/postman": lambda t: json.dumps(
            {"auth": {"type": "bearer", "bearer": [{"key": "token", "value": t, "type": "string"}]}}
        ),
    }
    return [_bearer_row(rng, ctx, templates[ctx], make) for ctx, make in zip(sorted(templates), makers, strict=True)]


def _bearer_row(rng: Rng, ctx: str, template: Callable[[str], str], make: Callable[[Rng], str]) -> Row:
    tok = make(rng)
    return pos("bearer", "opaque-token", ctx, template(tok), tok)


def cookie_values(rng: Rng) -> list[tuple[str, str, str]]:
    """(cookie name, value, kind)."""
    laravel = {"iv": b64(rng.randbytes(16)), "value": b64(rng.randbytes(48)), "mac": rs(rng, HEX, 64), "tag": ""}
    jwe = (
        "eyJhbGciOiJkaXIiLCJlbmMiOiJBMjU2R0NNIn0.."
        + rs(rng, B64URL, 16)
        + "."
        + rs(rng, B64URL, 260)
        + "."
        + rs(rng, B64URL, 22)
    )
    sig = urllib.parse.quote(b64(rng.randbytes(32)).rstrip("="), safe="")
    return [
        ("sessionid", rs(rng, LOWER_ALNUM, 32), "django-session"),
        ("connect.sid", f"s%3A{rs(rng, B64URL, 32)}.{sig}", "express-session"),
        ("JSESSIONID", rs(rng, UHEX, 32), "jsessionid"),
        ("laravel_session", urllib.parse.quote(b64(json.dumps(laravel).encode()), safe=""), "laravel-session"),
        ("__Secure-next-auth.session-token", jwe, "nextauth-session"),
        (
            "_acme_session",
            f"{rs(rng, B64URL, 120)}--{rs(rng, B64URL, 24)}--{rs(rng, B64URL, 22)}%3D%3D",
            "rails-session",
        ),
    ]


def cookie_rows(rng: Rng) -> list[Row]:
    templates: dict[str, Callable[[str, str], str]] = {
        "tool/http-request": lambda n, v: (
            f"GET /dashboard HTTP/1.1\nHost: app.acme.io\nCookie: theme=dark; {n}={v}\nAccept: text/html"
        ),
        "tool/set-cookie": lambda n, v: (
            f"HTTP/1.1 302 Found\nLocation: /home\nSet-Cookie: {n}={v}; Path=/; HttpOnly; Secure; SameSite=Lax"
        ),
        "shell/curl-b": lambda n, v: f"curl -s -b '{n}={v}' https://app.acme.io/api/me | jq .",
        "prompt/devtools": lambda n, v: f"I copied this from devtools, can you reproduce the bug with it?\n{n}={v}",
        "src/python-requests": lambda n, v: (
            f's = requests.Session()\ns.cookies.set("{n}", "{v}", domain="app.acme.io")\n'
        ),
        "json/har": lambda n, v: json.dumps(
            {"cookies": [{"name": n, "value": v, "domain": "app.acme.io", "httpOnly": True}]}
        ),
    }
    rows = []
    for (name, value, kind), ctx in zip(cookie_values(rng), rng.sample(sorted(templates), 6), strict=True):
        rows.append(pos("cookie", kind, ctx, templates[ctx](name, value), value))
    return rows


def git_remote_rows(rng: Rng) -> list[Row]:
    ghs, glpat, ghp = gh_style(rng, "ghs_"), "glpat-" + rs(rng, B64URL, 20), gh_style(rng, "ghp_")
    fine = f"github_pat_{rs(rng, ALNUM, 22)}_{rs(rng, ALNUM, 59)}"
    bb = rs(rng, B64URL, 32) + "=" + rs(rng, UHEX, 8)
    ado = rs(rng, "abcdefghijklmnopqrstuvwxyz234567", 52)
    return [
        pos(
            "git-remote",
            "github-installation",
            "tool/git-remote-v",
            f"$ git remote -v\norigin\thttps://x-access-token:{ghs}@github.com/acme/api.git (fetch)\n"
            f"origin\thttps://x-access-token:{ghs}@github.com/acme/api.git (push)",
            ghs,
        ),
        pos(
            "git-remote",
            "gitlab-pat",
            "shell/git-clone",
            f"git clone https://oauth2:{glpat}@gitlab.com/acme/infra.git",
            glpat,
        ),
        pos(
            "git-remote",
            "github-classic",
            "config/git-config",
            f'[remote "origin"]\n\turl = https://octocat:{ghp}@github.com/acme/web.git\n'
            "\tfetch = +refs/heads/*:refs/remotes/origin/*",
            ghp,
        ),
        pos(
            "git-remote",
            "github-fine-grained",
            "tool/push-error",
            "$ git push\nremote: Permission to acme/web.git denied.\n"
            f"fatal: unable to access 'https://{fine}@github.com/acme/web.git/': "
            "The requested URL returned error: 403",
            fine,
        ),
        pos(
            "git-remote",
            "bitbucket-token",
            "shell/git-remote-set-url",
            f"git remote set-url origin https://x-token-auth:{bb}@bitbucket.org/acme/site.git",
            bb,
        ),
        pos(
            "git-remote",
            "azure-devops-pat",
            "tool/credential-store",
            f"$ cat ~/.git-credentials\nhttps://build:{ado}@dev.azure.com\nhttps://gitlab-ci-token:x@gitlab.example.org",
            ado,
        ),
    ]


def npmrc_rows(rng: Rng) -> list[Row]:
    npm, ghp = gh_style(rng, "npm_"), gh_style(rng, "ghp_")
    auth = b64(f"deploy:{pw_alnum(rng)}".encode())
    art = b64(pw_alnum(rng).encode())
    npm2 = gh_style(rng, "npm_")
    return [
        pos(
            "npmrc",
            "auth-token",
            "tool/cat-npmrc",
            f"$ cat ~/.npmrc\n//registry.npmjs.org/:_authToken={npm}\nfund=false\n",
            npm,
        ),
        pos(
            "npmrc",
            "github-packages",
            "file/npmrc",
            f"@acme:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={ghp}\n",
            ghp,
        ),
        pos(
            "npmrc",
            "basic-auth",
            "file/npmrc-auth",
            f"registry=https://nexus.acme.io/repository/npm/\n_auth={auth}\nalways-auth=true\n",
            auth,
        ),
        pos(
            "npmrc",
            "artifactory-password",
            "file/npmrc-password",
            f"//acme.jfrog.io/artifactory/api/npm/npm/:username=ci\n//acme.jfrog.io/artifactory/api/npm/npm/:_password={art}\n",
            art,
        ),
        pos(
            "npmrc",
            "yarnrc-token",
            "file/yarnrc-yml",
            f'npmRegistries:\n  "https://registry.npmjs.org":\n    npmAuthToken: "{npm2}"\n',
            npm2,
        ),
    ]


def pip_rows(rng: Rng) -> list[Row]:
    p1, p2 = urlenc(pw_any(rng)), "pypi-AgEIcHlwaS5vcmc" + rs(rng, B64URL, 160)
    gl = "glpat-" + rs(rng, B64URL, 20)
    p4, p5 = pw_alnum(rng), pw_alnum(rng)
    return [
        pos(
            "pip",
            "index-url-password",
            "file/pip-conf",
            f"$ cat ~/.config/pip/pip.conf\n[global]\nindex-url = https://ci:{p1}@pypi.acme.io/simple\n",
            p1,
        ),
        pos(
            "pip",
            "pypirc-token",
            "file/pypirc",
            f"[distutils]\nindex-servers = pypi\n\n[pypi]\nusername = __token__\npassword = {p2}\n",
            p2,
        ),
        pos(
            "pip",
            "extra-index-token",
            "shell/pip-install",
            "pip install --extra-index-url "
            f"https://__token__:{gl}@gitlab.com/api/v4/projects/4821/packages/pypi/simple acme-core",
            gl,
        ),
        pos("pip", "poetry-http-basic", "shell/poetry-config", f"poetry config http-basic.acme ci '{p4}'", p4),
        pos(
            "pip",
            "uv-index-password",
            "shell/uv-env",
            f"UV_INDEX_ACME_USERNAME=ci UV_INDEX_ACME_PASSWORD={p5} uv sync --frozen",
            p5,
        ),
    ]


def misc_generic_rows(rng: Rng) -> list[Row]:
    heroku = "HRKU-AA" + rs(rng, B64URL, 58)
    netrc_pw = pw_alnum(rng)
    docker_auth = b64(f"acmebot:{'dckr_pat_' + rs(rng, B64URL, 27)}".encode())
    docker_pw = pw_strong(rng)
    dj1 = "django-insecure-" + rs(rng, LOWER_ALNUM + "!@#%^&*(-_=+)", 50)
    dj2 = rs(rng, LOWER_ALNUM + "!@#%^&*(-_=+)", 50)
    return [
        pos(
            "netrc",
            "password",
            "file/netrc",
            f"$ cat ~/.netrc\nmachine api.heroku.com\n  login jane@acme.io\n  password {heroku}\n",
            heroku,
        ),
        pos(
            "netrc",
            "password",
            "file/netrc-oneline",
            f"machine artifacts.acme.io login ci password {netrc_pw}",
            netrc_pw,
        ),
        pos(
            "docker-config",
            "auth",
            "file/config-json",
            "$ cat ~/.docker/config.json\n"
            + json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": docker_auth}}}, indent=2),
            docker_auth,
        ),
        pos(
            "docker-config",
            "registry-password",
            "shell/kubectl-docker-registry",
            f"kubectl create secret docker-registry regcred --docker-server=registry.acme.io --docker-username=ci "
            f"--docker-password='{docker_pw}' --docker-email=ci@acme.io",
            docker_pw,
        ),
        pos(
            "django",
            "secret-key",
            "src/settings-py",
            f"# settings.py\nDEBUG = True\nSECRET_KEY = '{dj1}'\nALLOWED_HOSTS = []\n",
            dj1,
        ),
        pos(
            "django",
            "secret-key",
            "diff/settings-py",
            f"-SECRET_KEY = '{dj2}'\n+SECRET_KEY = os.environ[\"DJANGO_SECRET_KEY\"]",
            dj2,
        ),
    ]


def jwt_rows(rng: Rng) -> list[Row]:
    templates: dict[str, Callable[[str], str]] = {
        "shell/curl-bearer": lambda t: f'curl -H "Authorization: Bearer {t}" https://api.acme.io/v1/orders',
        "tool/json-token-response": lambda t: json.dumps(
            {"access_token": t, "token_type": "Bearer", "expires_in": 3600}, indent=2
        ),
        "tool/devtools-localstorage": lambda t: (
            f'> localStorage.getItem(\'auth\')\n\'{{"accessToken":"{t}","user":{{"id":42}}}}\''
        ),
        "src/test-fixture": lambda t: (
            f'ADMIN_TOKEN = "{t}"  # copied from staging\n\ndef test_admin(client):\n    ...\n'
        ),
        "tool/k8s-sa-token": lambda t: (
            f"$ kubectl exec -it api-0 -- cat /var/run/secrets/kubernetes.io/serviceaccount/token\n{t}"
        ),
        "url/websocket-query": lambda t: f"WebSocket connection to 'wss://rt.acme.io/socket?token={t}&v=2' failed",
        "tool/log-line": lambda t: f"{ts(rng)} WARN auth: rejected token={t} reason=expired",
        "prompt/decode": lambda t: f"can you decode this jwt and tell me why it's rejected? {t}",
    }
    return [
        pos("jwt", "bearer-jwt", ctx, templates[ctx](tok), tok)
        for ctx, tok in ((c, mk_user_jwt(rng)) for c in sorted(templates))
    ]


def positive_rows(rng: Rng) -> list[Row]:
    rows: list[Row] = []
    for kind in token_kinds():
        rows.extend(token_rows(rng, kind))
    for builder in (
        gcp_sa_rows,
        azure_storage_rows,
        azure_sas_rows,
        webhook_rows,
        sentry_dsn_rows,
        private_key_rows,
        age_rows,
        conn_rows,
        cli_flag_rows,
        prose_password_rows,
        generic_env_rows,
        config_value_rows,
        basic_auth_rows,
        bearer_rows,
        cookie_rows,
        git_remote_rows,
        npmrc_rows,
        pip_rows,
        misc_generic_rows,
        jwt_rows,
    ):
        rows.extend(builder(rng))
    return rows


# --------------------------------------------------------------------------------------------------
# negatives


def sha(rng: Rng, n: int = 40) -> str:
    return rs(rng, HEX, n)


def neg_git(rng: Rng) -> list[Row]:
    k = "git-sha"
    s = [sha(rng) for _ in range(6)]
    return [
        neg(
            k,
            "tool/git-log",
            f"$ git log -3 --format='%H %s'\n{s[0]} fix(api): handle empty cart\n"
            f"{s[1]} chore: bump deps\n{s[2]} feat: add retry to webhook sender",
        ),
        neg(
            k,
            "tool/git-reset",
            f"HEAD is now at {sha(rng, 7)} Merge pull request #{rng.randint(100, 999)} from acme/feat/search",
        ),
        neg(k, "tool/rev-parse", f"$ git rev-parse HEAD\n{s[3]}"),
        neg(
            k,
            "prose/commit-url",
            f"the regression came in with https://github.com/acme/api/commit/{s[4]}, can you revert it?",
        ),
        neg(
            k,
            "gha/pinned-action",
            f"      - uses: actions/checkout@{s[5]} # v4.2.2\n      - uses: actions/setup-node@{sha(rng)} # v4.1.0",
        ),
        neg(
            k,
            "tool/git-blame",
            f"{sha(rng, 8)} (Jane Doe 2026-01-12 10:22:01 +0100 42)     return cfg\n"
            f"{sha(rng, 8)} (Li Wei   2026-02-03 17:05:44 +0100 43) }}",
        ),
        neg(k, "shell/pip-git", f'pip install "git+https://github.com/acme/lib.git@{sha(rng)}#egg=acme-lib"'),
        neg(
            k,
            "tool/git-show",
            f"commit {sha(rng)}\nAuthor: Jane Doe <jane@acme.io>\nDate:   Tue Mar 3 11:02:19 2026 +0100\n\n"
            "    refactor(auth): move token refresh into middleware",
        ),
        neg(k, "prose/short-shas", f"Fixed in {sha(rng, 9)} and cherry-picked to release/1.4 as {sha(rng, 9)}."),
        neg(
            k,
            "src/go-mod",
            f"require (\n\tgithub.com/acme/kit v0.0.0-20260112093015-{sha(rng, 12)}\n\tgolang.org/x/sync v0.10.0\n)",
        ),
        neg(
            k,
            "tool/rebase-conflict",
            f"error: could not apply {sha(rng, 7)}... feat: add retries\nhint: Resolve all conflicts manually",
        ),
        neg(
            k,
            "tool/reflog",
            "\n".join(
                f"{sha(rng, 7)} HEAD@{{{i}}}: {m}"
                for i, m in enumerate(("checkout: moving from main to fix/login", "commit: wip", "pull: Fast-forward"))
            ),
        ),
        neg(
            k,
            "json/package-lock-git",
            json.dumps(
                {
                    "node_modules/acme-ui": {
                        "version": "2.3.0",
                        "resolved": f"git+ssh://git@github.com/acme/ui.git#{sha(rng)}",
                    }
                },
                indent=2,
            ),
        ),
        neg(
            k,
            "tool/git-log-merge",
            f"commit {sha(rng)}\nMerge: {sha(rng, 7)} {sha(rng, 7)}\nAuthor: ci-bot <ci@acme.io>",
        ),
    ]


def neg_uuid(rng: Rng) -> list[Row]:
    k = "uuid"
    u = new_uuid
    return [
        neg(k, "json/api-response", json.dumps({"id": u(rng), "status": "queued", "created_at": ts(rng)}, indent=2)),
        neg(k, "tool/log-kv", f"{ts(rng)} INFO request_id={u(rng)} method=GET path=/healthz status=200 duration_ms=3"),
        neg(
            k,
            "yaml/k8s-metadata",
            f'metadata:\n  name: api-7d9f8\n  namespace: prod\n  uid: {u(rng)}\n  resourceVersion: "{digits(rng, 8)}"',
        ),
        neg(
            k,
            "tool/az-account-show",
            json.dumps(
                {
                    "environmentName": "AzureCloud",
                    "id": u(rng),
                    "isDefault": True,
                    "name": "acme-prod",
                    "tenantId": u(rng),
                    "state": "Enabled",
                },
                indent=2,
            ),
        ),
        neg(
            k,
            "tool/psql-output",
            "app=> select gen_random_uuid();\n           gen_random_uuid\n"
            f"--------------------------------------\n {u(rng)}\n(1 row)",
        ),
        neg(
            k,
            "tool/http-response",
            f"< HTTP/1.1 404 Not Found\n< x-amzn-RequestId: {u(rng)}\n< content-type: application/json",
        ),
        neg(k, "src/python-repr", f">>> uuid.uuid4()\nUUID('{u(rng)}')"),
        neg(k, "shell/uuidgen", f"$ uuidgen | tr A-Z a-z\n{u(rng)}"),
        neg(
            k,
            "json/tfstate",
            json.dumps({"version": 4, "terraform_version": "1.9.8", "serial": 41, "lineage": u(rng)}, indent=2),
        ),
        neg(
            k,
            "tool/pg-duplicate",
            'ERROR:  duplicate key value violates unique constraint "orders_pkey"\n'
            f"DETAIL:  Key (id)=({u(rng)}) already exists.",
        ),
        neg(
            k,
            "tool/aadsts-error",
            f"AADSTS7000215: Invalid client secret provided. Ensure the secret being sent in the request is the "
            f"client secret value, not the client secret ID.\nTrace ID: {u(rng)}\n"
            f"Correlation ID: {u(rng)}\nTimestamp: 2026-03-02 10:14:55Z",
        ),
        neg(
            k,
            "tool/github-delivery",
            f"X-GitHub-Event: push\nX-GitHub-Delivery: {u(rng)}\nX-GitHub-Hook-ID: {digits(rng, 9)}",
        ),
    ]


def neg_hash(rng: Rng) -> list[Row]:
    k = "content-hash"

    def h(n: int = 64) -> str:
        return sha(rng, n)

    def integ() -> str:
        return "sha512-" + b64(rng.randbytes(64))

    return [
        neg(
            k,
            "toml/poetry-lock",
            f'files = [\n    {{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{h()}"}},\n'
            f'    {{file = "requests-2.32.3.tar.gz", hash = "sha256:{h()}"}},\n]',
        ),
        neg(k, "txt/requirements-hash", f"urllib3==2.2.3 \\\n    --hash=sha256:{h()} \\\n    --hash=sha256:{h()}"),
        neg(
            k,
            "json/package-lock",
            json.dumps(
                {
                    "node_modules/lodash": {
                        "version": "4.17.21",
                        "resolved": "https://registry.npmjs.org/lodash/-/lodash-4.17.21.tgz",
                        "integrity": integ(),
                    }
                },
                indent=2,
            ),
        ),
        neg(
            k,
            "txt/yarn-lock",
            '"@babel/core@^7.24.0":\n  version "7.26.0"\n'
            f'  resolved "https://registry.yarnpkg.com/@babel/core/-/core-7.26.0.tgz"\n  integrity {integ()}',
        ),
        neg(
            k,
            "txt/go-sum",
            f"github.com/google/uuid v1.6.0 h1:{b64(rng.randbytes(32))}\n"
            f"github.com/google/uuid v1.6.0/go.mod h1:{b64(rng.randbytes(32))}",
        ),
        neg(
            k,
            "toml/cargo-lock",
            '[[package]]\nname = "serde"\nversion = "1.0.215"\n'
            f'source = "registry+https://github.com/rust-lang/crates.io-index"\nchecksum = "{h()}"',
        ),
        neg(
            k,
            "tool/docker-pull",
            f"$ docker pull postgres:16-alpine\n16-alpine: Pulling from library/postgres\nDigest: sha256:{h()}\n"
            "Status: Downloaded newer image for postgres:16-alpine",
        ),
        neg(
            k,
            "tool/sha256sum",
            f"$ sha256sum dist/*\n{h()}  dist/app-1.4.2.tar.gz\n{h()}  dist/app-1.4.2-py3-none-any.whl",
        ),
        neg(k, "yaml/pnpm-lock", f"  /zod@3.23.8:\n    resolution: {{integrity: {integ()}}}\n    dev: false"),
        neg(
            k,
            "toml/uv-lock",
            '[[package]]\nname = "httpx"\nversion = "0.28.1"\n'
            'sdist = { url = "https://files.pythonhosted.org/packages/httpx-0.28.1.tar.gz", '
            f'hash = "sha256:{h()}", size = 141406 }}',
        ),
        neg(
            k,
            "yaml/image-digest",
            f"containers:\n  - name: api\n    image: ghcr.io/acme/api@sha256:{h()}\n"
            "    ports:\n      - containerPort: 8080",
        ),
        neg(
            k,
            "html/sri",
            '<script src="https://cdn.jsdelivr.net/npm/chart.js@4.4.7/dist/chart.umd.min.js" '
            f'integrity="sha384-{b64(rng.randbytes(48))}" crossorigin="anonymous"></script>',
        ),
        neg(k, "tool/etag", f'< HTTP/2 200\n< etag: "{h(32)}"\n< cache-control: public, max-age=31536000, immutable'),
        neg(
            k,
            "txt/git-lfs-pointer",
            f"version https://git-lfs.github.com/spec/v1\noid sha256:{h()}\nsize {rng.randint(10**5, 10**8)}",
        ),
        neg(k, "path/nix-store", f"/nix/store/{rs(rng, NIX32, 32)}-python3-3.12.7/bin/python3"),
        neg(k, "tool/gha-cache", f"Cache restored from key: Linux-pnpm-store-{h()}\nCache Size: ~212 MB"),
    ]


def png_b64(rng: Rng, n: int) -> str:
    return b64(bytes.fromhex("89504e470d0a1a0a0000000d49484452") + rng.randbytes(n))


def neg_b64data(rng: Rng) -> list[Row]:
    k = "base64-data"
    svg = b64(
        (
            '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
            f'<circle cx="8" cy="8" r="{rng.randint(3, 7)}" fill="#0ea5e9"/></svg>'
        ).encode()
    )
    srcmap = b64(
        json.dumps({"version": 3, "sources": ["src/index.ts"], "names": [], "mappings": "AAAA,SAASA"}).encode()
    )
    cfg = b64(
        json.dumps(
            {"theme": pick(rng, "dark", "light"), "locale": pick(rng, "de-DE", "es-ES", "ja-JP")}, separators=(",", ":")
        ).encode()
    )
    return [
        neg(k, "html/img-data-url", f'<img alt="logo" src="data:image/png;base64,{png_b64(rng, 420)}" />'),
        neg(k, "css/svg-data-url", f'.icon {{ background-image: url("data:image/svg+xml;base64,{svg}"); }}'),
        neg(k, "js/sourcemap", f"//# sourceMappingURL=data:application/json;charset=utf-8;base64,{srcmap}"),
        neg(
            k,
            "css/font-data-url",
            "@font-face { font-family: Inter; src: "
            f"url(data:font/woff2;base64,d09GMgABAAAAA{b64(rng.randbytes(300))}) format('woff2'); }}",
        ),
        neg(k, "shell/base64-decode", f"$ echo {cfg} | base64 -d\n" + b64decode_text(cfg)),
        neg(
            k,
            "yaml/configmap-binary",
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
            f"  name: branding\nbinaryData:\n  logo.png: {png_b64(rng, 240)}",
        ),
        neg(
            k,
            "json/notebook-output",
            json.dumps(
                {
                    "output_type": "display_data",
                    "data": {"image/png": png_b64(rng, 360), "text/plain": ["<Figure size 640x480>"]},
                }
            ),
        ),
        neg(k, "md/inline-image", f"![chart](data:image/png;base64,{png_b64(rng, 300)})"),
        neg(
            k,
            "mime/pdf-attachment",
            f'Content-Type: application/pdf; name="invoice-{rng.randint(1000, 9999)}.pdf"\n'
            f"Content-Transfer-Encoding: base64\n\nJVBERi0xLjcKJeLjz9MK{b64(rng.randbytes(180))}",
        ),
        neg(
            k,
            "json/manifest-icon",
            json.dumps(
                {
                    "name": "Acme",
                    "icons": [
                        {
                            "src": "data:image/x-icon;base64,AAABAAEAEBAAAAEAIABoBAAAFgAAACgAAAAQ"
                            + b64(rng.randbytes(150)),
                            "sizes": "16x16",
                        }
                    ],
                }
            ),
        ),
    ]


def b64decode_text(blob: str) -> str:
    return base64.b64decode(blob).decode()


def neg_placeholder(rng: Rng) -> list[Row]:
    k = "placeholder"
    n = rng.randint(2, 9)
    return [
        neg(
            k,
            "md/readme-export",
            f"## Setup\n\n```bash\nexport OPENAI_API_KEY=YOUR_API_KEY\npython examples/chat_{n}.py\n```",
        ),
        neg(
            k,
            "env/example-angle",
            f"# .env.example (step {n})\nSTRIPE_SECRET_KEY=<your-stripe-secret-key>\n"
            "STRIPE_WEBHOOK_SECRET=<from `stripe listen`>",
        ),
        neg(
            k,
            "md/api-docs-bearer",
            f"All requests need `Authorization: Bearer <token>`; tokens expire after {n} hours.",
        ),
        neg(k, "md/ellipsis-key", 'Set `ANTHROPIC_API_KEY="sk-ant-..."` in your shell, then run `claude`.'),
        neg(
            k,
            "prose/changeme",
            "Replace `changeme` with a strong password before deploying; "
            f"the chart refuses to start after {n} retries otherwise.",
        ),
        neg(k, "npmrc/env-ref", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\nalways-auth=true"),
        neg(
            k,
            "compose/required-var",
            "    environment:\n      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}\n      POSTGRES_DB: app",
        ),
        neg(
            k,
            "docs/aws-example-id",
            "$ aws configure\nAWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\nAWS Secret Access Key [None]: "
            "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nDefault region name [None]: us-west-2",
        ),
        neg(
            k,
            "docs/aws-example-env",
            "# values from the AWS docs, replace them\nexport AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        ),
        neg(k, "md/template-url", "DATABASE_URL=postgresql://USER:PASSWORD@HOST:5432/DBNAME"),
        neg(k, "md/template-url-angle", "Format: `mongodb+srv://<username>:<password>@<cluster>.mongodb.net/<db>`"),
        neg(
            k,
            "docs/xxx-token",
            "The token should look like `ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx` (40 characters).",
        ),
        neg(
            k,
            "toml/angle-placeholder",
            f'[api]\n# get one at https://console.example.com/keys\napi_key = "<your api key>"\ntimeout = {n}0',
        ),
        neg(
            k,
            "yaml/empty-password",
            'auth:\n  username: app\n  password: ""  # set via --set auth.password\n  database: app',
        ),
        neg(k, "env/empty-value", "DB_HOST=localhost\nDB_USER=app\nDB_PASSWORD=\nDB_NAME=app_dev"),
        neg(k, "yaml/replace-me", f'slack:\n  channel: "#deploys-{n}"\n  token: REPLACE_ME'),
        neg(k, "helm/template-ref", "data:\n  password: {{ .Values.db.password | b64enc | quote }}"),
        neg(k, "md/webhook-placeholder", "SLACK_WEBHOOK_URL=https://hooks.slack.com/services/XXX/YYY/ZZZ"),
        neg(
            k, "tf/var-ref", 'resource "aws_db_instance" "main" {\n  username = "app"\n  password = var.db_password\n}'
        ),
        neg(
            k,
            "gha/secrets-ref",
            "      - run: npm publish\n        env:\n          NODE_AUTH_TOKEN: ${{ secrets.NPM_TOKEN }}",
        ),
    ]


def neg_pubkey(rng: Rng) -> list[Row]:
    k = "public-key"
    spki, _ = pem(
        "PUBLIC KEY",
        bytes.fromhex("30820122300d06092a864886f70d01010105000382010f003082010a0282010100")
        + rng.randbytes(256)
        + bytes.fromhex("0203010001"),
    )
    ec_pub, _ = pem(
        "PUBLIC KEY",
        bytes.fromhex("3059301306072a8648ce3d020106082a8648ce3d030107034200") + b"\x04" + rng.randbytes(64),
    )
    cert, _ = pem("CERTIFICATE", bytes.fromhex("3082036b30820253a003020102021401") + rng.randbytes(860))
    pgp_pub, _ = pgp_block(
        "PUBLIC",
        bytes([0x98, 0x33, 0x04])
        + rng.randbytes(4)
        + b"\x16\x09\x2b\x06\x01\x04\x01\xda\x47\x0f\x01"
        + rng.randbytes(300),
    )
    jwks = {
        "keys": [
            {
                "kty": "RSA",
                "kid": rs(rng, B64URL, 27),
                "use": "sig",
                "alg": "RS256",
                "n": b64url(rng.randbytes(256)),
                "e": "AQAB",
            }
        ]
    }
    return [
        neg(k, "tool/cat-pub", f"$ cat ~/.ssh/id_ed25519.pub\n{ssh_ed25519_pub(rng)} dev@laptop"),
        neg(k, "file/authorized-keys", f"{ssh_rsa_pub(rng)} jane@acme-mbp\n{ssh_ed25519_pub(rng)} ci@runner-3"),
        neg(k, "tool/known-hosts", f"# Host github.com found: line 3\ngithub.com {ssh_ed25519_pub(rng)}"),
        neg(k, "pem/rsa-public", f"verify with this public key:\n\n{spki}"),
        neg(k, "pem/ec-public", f"$ openssl ec -in key.pem -pubout\nread EC key\nwriting EC key\n{ec_pub}"),
        neg(k, "pem/certificate", f"$ cat certs/ca.crt\n{cert}"),
        neg(k, "pgp/public-block", f"My public key for encrypted mail:\n\n{pgp_pub}"),
        neg(
            k,
            "yaml/sops-age-recipient",
            f"creation_rules:\n  - path_regex: secrets/.*\\.yaml$\n    age: {bech32('age', rng.randbytes(32))}",
        ),
        neg(k, "json/jwks", json.dumps(jwks, indent=2)),
        neg(
            k,
            "tool/ssh-keygen-fingerprint",
            "$ ssh-keygen -lf ~/.ssh/id_ed25519.pub\n"
            f"256 SHA256:{b64(rng.randbytes(32)).rstrip('=')} dev@laptop (ED25519)",
        ),
        neg(
            k,
            "yaml/cloud-init",
            f"users:\n  - name: deploy\n    ssh_authorized_keys:\n      - {ssh_ed25519_pub(rng)} deploy@bastion",
        ),
        neg(
            k,
            "ini/wireguard-peer",
            f"[Peer]\nPublicKey = {b64(rng.randbytes(32))}\nAllowedIPs = 10.8.0.0/24\nEndpoint = vpn.acme.io:51820",
        ),
    ]


def neg_ids(rng: Rng) -> list[Row]:
    k = "random-id"
    return [
        neg(
            k,
            "json/anthropic-message",
            json.dumps(
                {
                    "id": "msg_01" + rs(rng, B62, 22),
                    "type": "message",
                    "role": "assistant",
                    "model": "claude-sonnet-4-5",
                    "stop_reason": "end_turn",
                }
            )
            + f"\nrequest-id: req_011C{rs(rng, B62, 20)}",
        ),
        neg(
            k,
            "json/tool-use-block",
            json.dumps(
                {
                    "type": "tool_use",
                    "id": "toolu_01" + rs(rng, B62, 22),
                    "name": "bash",
                    "input": {"command": "ls -la"},
                }
            ),
        ),
        neg(
            k,
            "json/openai-completion",
            json.dumps(
                {
                    "id": "chatcmpl-" + rs(rng, ALNUM, 29),
                    "object": "chat.completion",
                    "system_fingerprint": "fp_" + rs(rng, HEX, 10),
                }
            ),
        ),
        neg(
            k,
            "json/openai-tool-call",
            json.dumps(
                {
                    "tool_calls": [
                        {
                            "id": "call_" + rs(rng, ALNUM, 24),
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{}"},
                        }
                    ]
                }
            ),
        ),
        neg(
            k,
            "tool/stripe-error",
            f"stripe.error.InvalidRequestError: Request req_{rs(rng, ALNUM, 14)}: No such customer: "
            f"'cus_{rs(rng, ALNUM, 14)}'",
        ),
        neg(
            k,
            "xml/s3-error",
            f"<Error><Code>NoSuchKey</Code><Key>exports/2026-03.csv</Key><RequestId>{rs(rng, UHEX, 16)}</RequestId>"
            f"<HostId>{b64(rng.randbytes(57))}</HostId></Error>",
        ),
        neg(k, "http/traceparent", f"traceparent: 00-{sha(rng, 32)}-{sha(rng, 16)}-01\ntracestate: vendor=acme"),
        neg(
            k,
            "tool/docker-ps",
            f"CONTAINER ID   IMAGE              STATUS\n{sha(rng, 12)}   postgres:16        Up 3 hours\n"
            f"{sha(rng, 12)}   redis:7-alpine     Up 3 hours",
        ),
        neg(
            k,
            "tool/kubectl-get-pods",
            "NAME                   READY   STATUS    RESTARTS   AGE\n"
            f"api-{rs(rng, 'bcdfghjklmnpqrstvwxz2456789', 10)}-"
            f"{rs(rng, 'bcdfghjklmnpqrstvwxz2456789', 5)}   1/1     Running   0          2d",
        ),
        neg(
            k, "prose/sentry-event", f"Sentry shows Event ID {sha(rng, 32)} for the crash, stack points at checkout.ts"
        ),
        neg(
            k,
            "url/gha-run",
            f"see https://github.com/acme/api/actions/runs/{digits(rng, 11)}/job/{digits(rng, 11)} "
            "for the failing step",
        ),
        neg(
            k, "url/slack-permalink", f"https://acme.slack.com/archives/C0{rs(rng, UPPER_ALNUM, 9)}/p{digits(rng, 16)}"
        ),
        neg(k, "prose/discord-ids", f"user id {digits(rng, 18)} in guild {digits(rng, 19)} keeps getting rate limited"),
        neg(
            k,
            "tool/vercel-deploy",
            f"✅  Production: https://acme-web-{rs(rng, LOWER_ALNUM, 9)}-acme.vercel.app [2s]\n"
            f"Deployment id: dpl_{rs(rng, ALNUM, 28)}",
        ),
        neg(
            k,
            "tool/cloudfront",
            f"$ aws cloudfront create-invalidation --distribution-id E{rs(rng, UPPER_ALNUM, 13)} --paths '/*'\n"
            f"Invalidation: I{rs(rng, UPPER_ALNUM, 25)} InProgress",
        ),
        neg(
            k,
            "prose/arn",
            f"the role is arn:aws:iam::{digits(rng, 12)}:role/github-actions-deploy "
            "and the bucket is acme-artifacts-prod",
        ),
        neg(
            k,
            "tool/gcloud-operation",
            f"Operation [operation-{digits(rng, 13)}-{rs(rng, HEX, 13)}-{sha(rng, 8)}-{sha(rng, 8)}] complete.",
        ),
        neg(
            k,
            "tool/npm-publish",
            f"npm notice package: @acme/ui@2.4.{rng.randint(0, 9)}\nnpm notice shasum: {sha(rng)}\n"
            f"npm notice total files: {rng.randint(20, 90)}",
        ),
        neg(k, "src/mongo-objectid", f"db.orders.find({{ _id: ObjectId('{sha(rng, 24)}') }})"),
        neg(
            k,
            "env/public-url",
            f"SUPABASE_URL=https://{rs(rng, LOWER, 20)}.supabase.co\nNEXT_PUBLIC_SITE_URL=https://acme.io",
        ),
    ]


def neg_varname(rng: Rng) -> list[Row]:
    k = "var-name"
    n = rng.randint(2, 5)
    return [
        neg(k, "prose/set-env", f"set OPENAI_API_KEY in your environment before running step {n} of the script"),
        neg(
            k,
            "src/python-environ",
            'api_key = os.environ["ANTHROPIC_API_KEY"]\nclient = anthropic.Anthropic(api_key=api_key)',
        ),
        neg(
            k,
            "src/ts-process-env",
            "const stripe = new Stripe(process.env.STRIPE_SECRET_KEY!, { apiVersion: '2025-10-29' });",
        ),
        neg(
            k,
            "tool/keyerror",
            "Traceback (most recent call last):\n"
            f"  File \"/app/boot.py\", line {n}1, in <module>\nKeyError: 'AWS_SECRET_ACCESS_KEY'",
        ),
        neg(
            k,
            "yaml/secret-key-ref",
            "env:\n  - name: DB_PASSWORD\n    valueFrom:\n      secretKeyRef:\n"
            "        name: db-credentials\n        key: password",
        ),
        neg(
            k,
            "src/pydantic-settings",
            "class Settings(BaseSettings):\n    database_url: PostgresDsn\n    jwt_secret: SecretStr\n"
            "    github_token: SecretStr | None = None",
        ),
        neg(k, "tf/sensitive-variable", 'variable "db_password" {\n  type      = string\n  sensitive = true\n}'),
        neg(
            k,
            "src/zod-env",
            "const env = z.object({\n  DATABASE_URL: z.string().url(),\n"
            "  NEXTAUTH_SECRET: z.string().min(32),\n}).parse(process.env);",
        ),
        neg(
            k,
            "tool/missing-env",
            "Error: Missing required environment variable: SLACK_BOT_TOKEN\n    at loadConfig (src/config.ts:14:11)",
        ),
        neg(
            k,
            "shell/docker-passthrough",
            "docker run --rm -e GITHUB_TOKEN -e NPM_TOKEN ghcr.io/acme/ci:latest make release",
        ),
        neg(k, "prose/de", "Du musst die Variable HF_TOKEN in deiner Shell setzen, sonst schlägt der Download fehl."),
        neg(k, "prose/es", "Define la variable GROQ_API_KEY antes de ejecutar el script de evaluación."),
        neg(k, "prose/ja", "環境変数 ANTHROPIC_API_KEY を設定してから再実行してください。"),
        neg(k, "shell/read-silent", "read -rs DB_PASSWORD && export DB_PASSWORD\n./migrate.sh"),
        neg(k, "shell/aws-profile", f"export AWS_PROFILE=staging-{n}\naws sts get-caller-identity"),
    ]


def neg_nopass(rng: Rng) -> list[Row]:
    k = "password-no-value"
    ip = f"10.0.{rng.randint(0, 9)}.{rng.randint(2, 250)}"
    return [
        neg(
            k,
            "tool/psql-auth-failed",
            f'psql: error: connection to server at "db.internal" ({ip}), port 5432 failed: FATAL:  '
            'password authentication failed for user "app"',
        ),
        neg(k, "tool/ssh-denied", f"deploy@{ip}: Permission denied (publickey,password)."),
        neg(
            k,
            "tool/mysql-denied",
            "ERROR 1045 (28000): Access denied for user 'root'@'localhost' (using password: YES)",
        ),
        neg(
            k,
            "prose/en-wrong",
            f"the password is wrong, I reset it in the console at {rng.randint(9, 17)}:00 but it still fails",
        ),
        neg(
            k,
            "tool/docker-warning",
            "WARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded",
        ),
        neg(k, "prose/de-wrong", "Das Passwort ist falsch, obwohl ich es gerade erst zurückgesetzt habe."),
        neg(k, "prose/es-wrong", "La contraseña es incorrecta según el log, pero funciona en local."),
        neg(k, "prose/ja-wrong", "パスワードが違いますと表示されてログインできません。"),
        neg(
            k,
            "tool/github-password-auth",
            "remote: Invalid username or token. Password authentication is not supported for Git operations.\n"
            "fatal: Authentication failed for 'https://github.com/acme/api.git/'",
        ),
        neg(
            k,
            "tool/openssl-prompt",
            "$ openssl rsa -in server.key -out server.nopass.key\nEnter pass phrase for server.key:",
        ),
        neg(k, "tool/django-validation", "This password is too common.\nThis password is entirely numeric."),
        neg(k, "tool/log-token-expired", f"{ts(rng)} WARN oauth: token expired, refreshing (attempt 1)"),
        neg(k, "tool/sudo-prompt", "[sudo] password for dev: \nSorry, try again.\n[sudo] password for dev: "),
        neg(
            k,
            "tool/npm-e401",
            "npm ERR! code E401\nnpm ERR! Unable to authenticate, your authentication token seems to be invalid.",
        ),
        neg(k, "prose/in-vault", "the password is stored in the team vault under 'staging db', ask Maria for access"),
        neg(k, "prose/policy", "Passwords must be at least 12 characters and the API key must have the `repo` scope."),
    ]


def neg_misc(rng: Rng) -> list[Row]:
    rows = [
        neg(
            "version",
            "tool/versions",
            f"$ node -v && python --version\nv20.{rng.randint(10, 18)}.1\nPython 3.12.{rng.randint(1, 8)}",
        ),
        neg(
            "version",
            "json/package-json",
            json.dumps({"dependencies": {"next": "15.1.3", "react": "^19.0.0", "zod": "~3.23.8"}}, indent=2),
        ),
        neg("version", "prose/semver-build", "we ship 1.4.0-rc.2+build.20260112.5114f85 to staging tomorrow"),
        neg(
            "version",
            "tool/kubectl-version",
            "Client Version: v1.31.2\nKustomize Version: v5.4.2\nServer Version: v1.30.6-eks-7f9249a",
        ),
        neg(
            "version",
            "http/user-agent",
            "User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 "
            "(KHTML, like Gecko) Chrome/131.0.6778.85 Safari/537.36",
        ),
        neg("version", "tool/go-version", "go version go1.23.4 linux/amd64"),
        neg(
            "version",
            "dockerfile/tags",
            "FROM python:3.12.7-slim-bookworm AS build\nFROM gcr.io/distroless/python3-debian12:nonroot",
        ),
        neg(
            "version",
            "tool/pip-list",
            "Package    Version\n---------- -------\nhttpx      0.28.1\npydantic   2.10.3\nruff       0.8.4",
        ),
        neg(
            "file-path", "prose/ssh-key-path", "the deploy key lives at /home/dev/.ssh/id_ed25519, permissions are 600"
        ),
        neg("file-path", "prose/aws-credentials-path", "boto3 reads ~/.aws/credentials and then ~/.aws/config"),
        neg(
            "file-path",
            "tool/tree",
            "src/\n  lib/\n    secrets/\n      manager.ts\n      manager.test.ts\n  token-store.ts",
        ),
        neg(
            "file-path",
            "prose/sa-token-path",
            "the pod reads /var/run/secrets/kubernetes.io/serviceaccount/token on startup",
        ),
        neg(
            "file-path",
            "tool/ls-ssh",
            "$ ls -la ~/.ssh\n-rw-------  1 dev dev  411 Jan  3 10:12 id_ed25519\n"
            "-rw-r--r--  1 dev dev   97 Jan  3 10:12 id_ed25519.pub",
        ),
        neg("file-path", "tool/gitignore", ".env\n.env.*.local\n*.pem\nsecrets/\ncredentials.json"),
        neg(
            "file-path",
            "prose/windows-path",
            r"npm is installed at C:\Users\dev\AppData\Roaming\npm\node_modules\npm\bin\npm-cli.js",
        ),
        neg(
            "file-path",
            "nginx/ssl-paths",
            "ssl_certificate     /etc/ssl/certs/acme.crt;\nssl_certificate_key /etc/ssl/private/acme.key;",
        ),
        neg(
            "css",
            "css/hex-colours",
            f".btn {{ color: #{sha(rng, 6)}; background: #{sha(rng, 6)}; border-color: #{sha(rng, 3)}; }}",
        ),
        neg(
            "css",
            "js/tailwind-palette",
            json.dumps({"brand": {str(i * 100): f"#{sha(rng, 6)}" for i in range(1, 6)}}, indent=2),
        ),
        neg(
            "css",
            "css/custom-props",
            f":root {{\n  --bg: #0f172a;\n  --fg: rgba(248, 250, 252, 0.9);\n  --accent: #{sha(rng, 6)};\n}}",
        ),
        neg(
            "css",
            "svg/path",
            '<path d="M12 2C6.48 2 2 6.48 2 12s4.48 10 10 10 10-4.48 10-10S17.52 2 12 2zm1 15h-2v-6h2v6z"/>',
        ),
        neg(
            "css",
            "css/module-classes",
            f'<button class="_button_{rs(rng, LOWER_ALNUM, 5)}_14 _primary_{rs(rng, LOWER_ALNUM, 5)}_3">Save</button>',
        ),
        neg(
            "css", "tw/classes", '<div class="bg-slate-900 text-[#e2e8f0] p-4 rounded-2xl shadow-[0_0_0_1px_#1e293b]">'
        ),
    ]
    return rows


def neg_masked(rng: Rng) -> list[Row]:
    k = "masked"
    tail = rs(rng, ALNUM, 4)
    return [
        neg(
            k,
            "tool/openai-error",
            f"openai.AuthenticationError: Error code: 401 - Incorrect API key provided: sk-proj-{'*' * 44}{tail}. "
            "You can find your API key at https://platform.openai.com/account/api-keys.",
        ),
        neg(
            k,
            "tool/gh-auth-status",
            f"github.com\n  ✓ Logged in to github.com account octocat (keyring)\n  - Token: ghp_{'*' * 36}",
        ),
        neg(
            k,
            "tool/aws-configure-list",
            f"      Name                    Value             Type    Location\n"
            f"access_key     ****************{rs(rng, B32, 4)} shared-credentials-file\n"
            f"secret_key     ****************{rs(rng, B64, 4)} shared-credentials-file",
        ),
        neg(
            k,
            "tool/log-redacted",
            f"{ts(rng)} DEBUG outgoing headers: Authorization=Bearer [REDACTED] X-Request-Id=abc",
        ),
        neg(
            k,
            "tool/gha-masked",
            'Run curl -H "Authorization: token ***" https://api.github.com/repos/acme/api\n  curl -H ...',
        ),
        neg(k, "yaml/stars", "database:\n  user: app\n  password: ********\n  host: db.internal"),
        neg(
            k,
            "tool/vercel-env-ls",
            "> Environment Variables found for acme/web\n name                 value        environments\n"
            " DATABASE_URL         Encrypted    Production, Preview\n STRIPE_SECRET_KEY    Encrypted    Production",
        ),
        neg(
            k,
            "prose/last-four",
            f"the Stripe dashboard shows the key ending in ...{rs(rng, ALNUM, 4)}, is that the one in prod?",
        ),
    ]


def neg_code(rng: Rng) -> list[Row]:
    k = "code-hash"
    return [
        neg(
            k,
            "tool/vite-build",
            f"dist/index.html                  0.46 kB\ndist/assets/index-{rs(rng, B64URL, 8)}.css   12.31 kB\n"
            f"dist/assets/index-{rs(rng, B64URL, 8)}.js   143.20 kB",
        ),
        neg(
            k,
            "tool/next-build",
            f"Route (app)                Size  First Load JS\n┌ ○ /                    5.2 kB  105 kB\n"
            f"└ chunks/{rng.randint(100, 999)}-{sha(rng, 16)}.js  46.1 kB",
        ),
        neg(
            k,
            "tool/jest-snapshot",
            f'› 1 snapshot obsolete from 1 test suite.\n  exports[`Button renders 1`] = `"{sha(rng, 32)}"`',
        ),
        neg(k, "src/webpack-runtime", f'__webpack_require__.h = () => ("{sha(rng, 20)}")'),
        neg(
            k,
            "tool/bazel",
            f"INFO: From Compiling src/main.cc:\nINFO: Build completed successfully, 412 total actions\n"
            f"bazel-out/k8-fastbuild/bin/_objs/main/{sha(rng, 32)}.o",
        ),
        neg(k, "tool/pytest-cache", f".pytest_cache/v/cache/nodeids\n.mypy_cache/3.12/{sha(rng, 40)}.data.json"),
        neg(
            k,
            "tool/terraform-plan",
            f'  # aws_s3_object.bundle will be updated in-place\n  ~ etag = "{sha(rng, 32)}" -> (known after apply)',
        ),
        neg(k, "tool/ruff-cache", f"$ ls .ruff_cache/0.8.4/\n{digits(rng, 19)}"),
    ]


def neg_docs(rng: Rng) -> list[Row]:
    k = "format-doc"
    return [
        neg(k, "prose/github-format", "GitHub classic PATs start with `ghp_` followed by 36 alphanumeric characters."),
        neg(
            k,
            "prose/stripe-format",
            "Stripe secret keys begin with sk_live_ in live mode; never ship them to the browser.",
        ),
        neg(
            k, "prose/aws-format", "AWS access key IDs begin with AKIA for long-term keys and ASIA for temporary ones."
        ),
        neg(k, "prose/slack-format", "Slack bot tokens are prefixed with xoxb- and user tokens with xoxp-."),
        neg(
            k, "prose/anthropic-format", "Anthropic keys look like sk-ant-api03-… and can be revoked from the console."
        ),
        neg(k, "prose/pem-format", "A PEM file has a -----BEGIN PRIVATE KEY----- line, base64 data, and an END line."),
    ]


def neg_secretref(rng: Rng) -> list[Row]:
    k = "secret-ref"
    return [
        neg(
            k,
            "prose/aws-sm-arn",
            f"it's in arn:aws:secretsmanager:eu-west-1:{digits(rng, 12)}:secret:prod/db-{rs(rng, ALNUM, 6)}",
        ),
        neg(
            k, "shell/gcloud-secrets", "gcloud secrets versions access latest --secret=db-password --project=acme-prod"
        ),
        neg(k, "shell/vault-kv-get", "vault kv get -field=password secret/data/apps/orders"),
        neg(
            k,
            "env/op-refs",
            "DATABASE_PASSWORD=op://Engineering/orders-db/password\nSTRIPE_KEY=op://Engineering/stripe/credential",
        ),
        neg(
            k,
            "json/azure-kv-ref",
            json.dumps(
                {"DbPassword": "@Microsoft.KeyVault(SecretUri=https://acme-kv.vault.azure.net/secrets/db-password/)"}
            ),
        ),
        neg(k, "shell/doppler-run", "doppler run --project orders --config prd -- npm start"),
        neg(
            k,
            "yaml/external-secret",
            "spec:\n  secretStoreRef:\n    name: aws-sm\n  data:\n"
            "    - secretKey: password\n      remoteRef:\n        key: prod/orders/db",
        ),
        neg(
            k,
            "gha/oidc",
            "permissions:\n  id-token: write\n- uses: aws-actions/configure-aws-credentials@v4\n"
            "  with:\n    role-to-assume: arn:aws:iam::123456789012:role/gha",
        ),
    ]


def neg_k8s(rng: Rng) -> list[Row]:
    k = "k8s-listing"
    return [
        neg(
            k,
            "tool/get-secrets",
            "$ kubectl -n prod get secrets\nNAME              TYPE                DATA   AGE\n"
            f"db-credentials    Opaque              2      {rng.randint(2, 90)}d\n"
            "regcred           kubernetes.io/dockerconfigjson   1      120d",
        ),
        neg(
            k,
            "tool/describe-secret",
            "$ kubectl describe secret db-credentials\nName:         db-credentials\nType:  Opaque\n\nData\n====\n"
            f"password:  {rng.randint(12, 40)} bytes\nusername:  3 bytes",
        ),
        neg(
            k,
            "tool/jsonpath-keys",
            '$ kubectl get secret db-credentials -o json | jq \'.data | keys\'\n[\n  "password",\n  "username"\n]',
        ),
        neg(
            k,
            "tool/helm-status",
            "NAME: pg\nLAST DEPLOYED: Mon Mar  2 10:11:12 2026\nSTATUS: deployed\nNOTES:\n"
            "  To get the password run: kubectl get secret pg-postgresql "
            '-o jsonpath="{.data.postgres-password}" | base64 -d',
        ),
    ]


def neg_nearmiss(rng: Rng) -> list[Row]:
    k = "near-miss"
    usage = {
        "input_tokens": rng.randint(1000, 90000),
        "cache_read_input_tokens": rng.randint(0, 200000),
        "output_tokens": rng.randint(10, 4000),
    }
    return [
        neg(k, "json/usage", json.dumps({"usage": usage, "stop_reason": "tool_use"})),
        neg(
            k,
            "src/max-tokens",
            'resp = client.messages.create(model="claude-opus-4-1", '
            f"max_tokens={rng.choice((1024, 4096, 8192))}, messages=msgs)",
        ),
        neg(
            k,
            "prose/rotated",
            "I rotated the Stripe key yesterday; the new one is only in the dashboard, not in the repo.",
        ),
        neg(k, "prose/token-limit", f"prompt is too long: {rng.randint(200001, 250000)} tokens > 200000 maximum"),
        neg(
            k,
            "src/tokenizer",
            'tokenizer = AutoTokenizer.from_pretrained("bert-base-uncased")\ntokens = tokenizer(text)["input_ids"]',
        ),
        neg(k, "prose/key-size", "the AES key must be 32 bytes, you're passing a 16-byte key"),
        neg(k, "src/dict-keys", 'for key, value in sorted(config.items()):\n    print(f"{key}={value}")'),
        neg(k, "prose/secret-sauce", "the secret sauce is the retry queue, not the cache"),
        neg(
            k,
            "tool/ssh-keygen-run",
            "$ ssh-keygen -t ed25519 -C dev@laptop\nGenerating public/private ed25519 key pair.\n"
            "Your identification has been saved in /home/dev/.ssh/id_ed25519",
        ),
        neg(
            k, "src/password-field", '<input type="password" name="password" autocomplete="current-password" required>'
        ),
    ]


def negative_rows(rng: Rng) -> list[Row]:
    rows: list[Row] = []
    for builder in (
        neg_git,
        neg_uuid,
        neg_hash,
        neg_b64data,
        neg_placeholder,
        neg_pubkey,
        neg_ids,
        neg_varname,
        neg_nopass,
        neg_misc,
        neg_masked,
        neg_code,
        neg_docs,
        neg_secretref,
        neg_k8s,
        neg_nearmiss,
    ):
        rows.extend(builder(rng))
    return rows


# --------------------------------------------------------------------------------------------------
# output


def check(rows: list[Row]) -> None:
    texts = [r.text for r in rows]
    dupes = [t for t, c in Counter(texts).items() if c > 1]
    if dupes:
        raise SystemExit(f"{len(dupes)} duplicate texts")
    for r in rows:
        if r.secret is not None and (not r.secret or r.secret not in r.text):
            raise SystemExit(f"secret not in text: {r.source}")


def build() -> list[Row]:
    rng = random.Random(SEED)
    rows = positive_rows(rng) + negative_rows(rng)
    check(rows)
    return rows


def main() -> None:
    rows = build()
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for r in rows:
            fh.write(json.dumps({"text": r.text, "secret": r.secret, "source": r.source}, ensure_ascii=False) + "\n")
    families = Counter(r.source.split(":")[1] for r in rows if r.secret is not None)
    negatives = sum(1 for r in rows if r.secret is None)
    print(f"wrote {len(rows)} rows to {OUT.name}: {sum(families.values())} positive, {negatives} negative")
    for fam, n in sorted(families.items()):
        print(f"  {fam:16s} {n}")


if __name__ == "__main__":
    main()
