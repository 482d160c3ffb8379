#!/usr/bin/env python3
"""Held-out redaction corpus #7 -- "agent transcript" material.

Written BLIND on 2026-12-08: the author did not read the redactor
(server/), the test-suite, the benchmarks, or any earlier generator or
corpus.  The only thing looked at was the first three lines of
gen_heldout5.jsonl, to copy the row format.  Every value is synthesised
from ``random.Random(7_2026_12_08)``; nothing is a real credential.  The
file is stdlib-only, uses no clock / os.urandom, and never iterates a set,
so two runs produce byte-identical output.

Emphasis: what coding agents' tools print and what people paste into a
chat -- long multi-line tool output (docker compose config, kubectl
describe / get secret -o json, helm get values, terraform output -json,
gh auth status -t, git config --list, aws sts assume-role, gcloud / az /
heroku token commands, vercel env pull, dot-file dumps, CI printenv,
stack traces, HTTP debug logs), framework config files, key-generation
output, JSON tool-call arguments (escaped and double-escaped), diff hunks,
Jupyter output, and chat prose in 13 languages.

Row format (one JSON object per line of gen_heldout7.jsonl)::

    {"text": str, "secret": str | null,
     "source": "gen-held7:<family>:<kind>:<context>"}

``secret`` is the EXACT substring of ``text`` that must not survive
redaction (the generator asserts it occurs in ``text``).  ``secret: null``
marks a NEGATIVE row (family ``negative``) that a good redactor returns
unchanged.  Other credentials may co-occur in a positive row (e.g. the
AccessKeyId next to a SecretAccessKey in an assume-role dump); only the
named one is measured.

Conventions for what ``secret`` is -- always the minimal substring whose
survival leaks the credential:
  * ``Authorization: Bearer X`` / ``token X`` / ``SSWS X`` / ``ApiKey X`` /
    ``key=X`` header forms -> ``X`` (scheme word excluded).
  * ``Authorization: Basic B`` -> the base64 blob ``B``.
  * URL with userinfo (``scheme://user:PASS@host``) -> ``PASS`` exactly as
    it appears (percent-encoding kept).  ``https://TOKEN@host`` -> TOKEN.
  * key=value, key: value, "key": "value", CLI ``--flag value`` /
    ``-pVALUE`` -> the value without quotes.
  * Laravel ``APP_KEY=base64:XXXX`` -> ``XXXX`` (the base64 part).
  * ``FLY_API_TOKEN="FlyV1 fm2_..."`` -> ``fm2_...`` (the scheme word
    ``FlyV1`` is excluded, like Bearer).
  * Webhook URLs (Slack / Discord) -> the final secret path segment.
  * Azure SAS URL -> the ``sig=`` value (percent-encoded as shown).
  * otpauth:// URI -> the ``secret=`` parameter.
  * Kubernetes ``kubectl get secret -o json`` / kubeconfig
    ``client-key-data`` / docker ``config.json`` ``auth`` -> the base64
    string as printed (that string IS the leak; decoding it is trivial).
  * PEM / PGP private key blocks (RSA, EC, PKCS#8, PGP) -> the first body
    line after the BEGIN line (and after armor headers / the blank line).
  * OpenSSH ``-----BEGIN OPENSSH PRIVATE KEY-----`` (ed25519) -> the 4th
    body line: lines 1-3 hold only the fixed ``openssh-key-v1`` header and
    the public key, line 4 is the first one carrying private-seed bytes.
  * age -> the whole ``AGE-SECRET-KEY-1...`` string; WireGuard -> the
    44-char base64 private key; Ethereum -> the ``0x``-prefixed hex.
  * Gmail app passwords keep their inner spaces (``abcd efgh ijkl mnop``).
  * Telegram ``https://api.telegram.org/bot<TOKEN>/...`` -> ``<TOKEN>``
    (the literal ``bot`` prefix is part of the URL, not of the token).
  * A PEM block inside a JSON string keeps its ``\n`` escapes, so the
    secret (first body line) is glued to a literal ``\n`` on both sides.
  * ``~/.cache/huggingface/token`` has no trailing newline, so the next
    shell prompt ``$`` directly follows the token.
  * Heroku / Snyk / Codecov / Railway tokens are bare UUIDs: positive only
    because of their context (their key name / the command that printed
    them); bare UUIDs elsewhere are negatives.

Choices on ambiguous items (negatives unless stated):
  * ``password_hash`` / htpasswd / bcrypt / argon2 hashes in a clearly
    labelled hash column or file -> NEGATIVE (a hash is not the
    credential; redacting it would corrupt DB dumps agents reason about).
  * AWS documentation keys (AKIAIOSFODNN7EXAMPLE, wJalrXUtnFEMI/...EXAMPLEKEY)
    and strings literally containing EXAMPLE / xxxx placeholders -> NEGATIVE.
  * Stripe publishable keys ``pk_live_...`` in front-end code that says it
    is publishable -> NEGATIVE (public by design).
  * Public keys (ssh-ed25519/ssh-rsa lines, PEM PUBLIC KEY / CERTIFICATE,
    age1... recipients, WireGuard PublicKey) -> NEGATIVE.
  * Test card numbers labelled as test data -> NEGATIVE.
  * Masked values (``****``, ``(sensitive value)``, ``(protected)``,
    ``<redacted>``, ``sk-proj-****abcd``) -> NEGATIVE.
  * AWS access key IDs (AKIA/ASIA) -> POSITIVE (matches the earlier
    corpora's convention visible in the three lines read).
  * Vault ``token_accessor`` values, Twilio Account SIDs, Razorpay key ids
    and other identifiers printed next to a secret are NOT the secret.
"""
from __future__ import annotations

import base64
import datetime as _dt
import hashlib
import json
import random
import string
import zlib
from pathlib import Path

R = random.Random(7_2026_12_08)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DG = string.digits
AN = UP + LO + DG
LODG = LO + DG
UPDG = UP + DG
HEXL = "0123456789abcdef"
HEXU = HEXL.upper()
URLS = AN + "-_"
B64A = AN + "+/"
B32U = UP + "234567"
B62 = DG + UP + LO


# --------------------------------------------------------------------------
# primitive randomness
# --------------------------------------------------------------------------
def rs(n, a=AN):
    return "".join(R.choice(a) for _ in range(n))


def hx(n):
    return rs(n, HEXL)


def rb(n):
    return bytes(R.getrandbits(8) for _ in range(n))


def b64(b):
    return base64.b64encode(b).decode()


def b64u(b):
    return base64.urlsafe_b64encode(b).decode().rstrip("=")


def pick(seq):
    return R.choice(seq)


def uuid4():
    b = bytearray(rb(16))
    b[6] = (b[6] & 0x0F) | 0x40
    b[8] = (b[8] & 0x3F) | 0x80
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def b62(n, width):
    s = ""
    while n:
        n, r = divmod(n, 62)
        s = B62[r] + s
    return s.rjust(width, "0")


def crc_token(prefix, body_len=30):
    body = rs(body_len)
    return prefix + body + b62(zlib.crc32(body.encode()), 6)


BASE = _dt.datetime(2026, 12, 8, 9, 0, 0)


def ts(span=86400 * 3):
    return BASE + _dt.timedelta(seconds=R.randint(0, span))


def iso(t=None):
    return (t or ts()).strftime("%Y-%m-%dT%H:%M:%SZ")


def httpdate(t=None):
    return (t or ts()).strftime("%a, %d %b %Y %H:%M:%S GMT")


def epoch(t=None):
    return int(((t or ts()) - _dt.datetime(1970, 1, 1)).total_seconds())


USERS = ["alice", "bob", "priya", "kenji", "marta", "omar", "lena", "diego",
         "sofia", "wei", "ana", "tomasz", "ngozi", "ivan", "chloe", "raj"]
PROJ = ["segue-api", "billing-svc", "atlas-web", "orbit", "tidepool", "ledger",
        "kiln", "harbor", "quill", "mosaic", "lumen", "driftwood", "parcel"]
ORGS = ["acme-labs", "northwind", "globex", "initech", "umbrella-dev", "hooli",
        "segue-dev", "vandelay", "tyrell-io"]
NS = ["prod", "staging", "default", "payments", "data", "platform"]
REGIONS = ["us-east-1", "eu-west-1", "eu-central-1", "ap-southeast-2", "us-west-2"]
WORDS = ["river", "copper", "falcon", "maple", "quartz", "harbor", "violet",
         "ember", "tundra", "pepper", "saffron", "glacier", "orbit", "cobalt"]


def user():
    return pick(USERS)


def proj():
    return pick(PROJ)


def org():
    return pick(ORGS)


def acct():
    return str(R.randint(10**11, 10**12 - 1))


def ip():
    return f"{R.randint(10, 223)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}"


def podname(base):
    return f"{base}-{rs(R.choice([9, 10]), LODG)}-{rs(5, LODG)}"


# --------------------------------------------------------------------------
# structured value builders
# --------------------------------------------------------------------------
def jwt(payload, header=None, sig=32):
    header = header or {"alg": "HS256", "typ": "JWT"}
    enc = lambda o: b64u(json.dumps(o, separators=(",", ":")).encode())
    return enc(header) + "." + enc(payload) + "." + b64u(rb(sig))


def pw_strong(n=None):
    n = n or R.randint(14, 26)
    sym = "!@#%^*-_=+.~"
    while True:
        s = rs(n, AN + sym)
        if (any(c in UP for c in s) and any(c in LO for c in s)
                and any(c in DG for c in s) and any(c in sym for c in s)):
            return s


def pw_url(n=None):
    return rs(n or R.randint(16, 32), AN + "-_.~")


def pw_human():
    w1, w2 = pick(WORDS), pick(WORDS)
    return pick([
        f"{w1.capitalize()}{w2.capitalize()}{R.randint(10, 9999)}{pick('!#@*')}",
        f"{w1}-{w2}-{R.randint(10, 99)}-{pick(WORDS)}",
        f"{w1.capitalize()}#{R.randint(1990, 2026)}{pick(['!', '?', '$$'])}".replace("$", "%"),
    ])


def pw_any():
    return pick([pw_strong, pw_strong, pw_url, pw_human])()


# ---- bech32 (age) --------------------------------------------------------
_BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


def _polymod(values):
    gen = [0x3B6A57B2, 0x26508E6D, 0x1EA119FA, 0x3D4233DD, 0x2A1462B3]
    chk = 1
    for v in values:
        b = chk >> 25
        chk = (chk & 0x1FFFFFF) << 5 ^ v
        for i in range(5):
            chk ^= gen[i] if ((b >> i) & 1) else 0
    return chk


def bech32(hrp, data):
    acc, bits, out = 0, 0, []
    for x in data:
        acc = (acc << 8) | x
        bits += 8
        while bits >= 5:
            bits -= 5
            out.append((acc >> bits) & 31)
    if bits:
        out.append((acc << (5 - bits)) & 31)
    exp = [ord(c) >> 5 for c in hrp] + [0] + [ord(c) & 31 for c in hrp]
    pm = _polymod(exp + out + [0] * 6) ^ 1
    chk = [(pm >> 5 * (5 - i)) & 31 for i in range(6)]
    return hrp + "1" + "".join(_BECH[d] for d in out + chk)


# ---- PEM -----------------------------------------------------------------
def wrap(s, n=64):
    return [s[i:i + n] for i in range(0, len(s), n)]


def rsa_der():
    mod = bytes([R.randint(0xC0, 0xFF)]) + rb(255)
    head = bytes.fromhex("308204a40201000282010100") + mod + bytes.fromhex("0203010001") + bytes.fromhex("02820100")
    return head + rb(1192 - len(head))


def pem_rsa_pkcs1():
    lines = wrap(b64(rsa_der()))
    return "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END RSA PRIVATE KEY-----", lines[0]


def pem_pkcs8():
    der = bytes.fromhex("308204be020100300d06092a864886f70d0101010500048204a8") + rsa_der()
    lines = wrap(b64(der))
    return "-----BEGIN PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END PRIVATE KEY-----", lines[0]


def pem_ec():
    der = (bytes.fromhex("30770201010420") + rb(32) + bytes.fromhex("a00a06082a8648ce3d030107a14403420004") + rb(64))
    lines = wrap(b64(der))
    return "-----BEGIN EC PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END EC PRIVATE KEY-----", lines[0]


def _sstr(b):
    return len(b).to_bytes(4, "big") + b


def openssh_ed25519(comment):
    pk, sk = rb(32), rb(32)
    pub = _sstr(b"ssh-ed25519") + _sstr(pk)
    chk = rb(4)
    priv = chk + chk + pub + _sstr(sk + pk) + _sstr(comment.encode())
    i = 1
    while len(priv) % 8:
        priv += bytes([i])
        i += 1
    blob = b"openssh-key-v1\0" + _sstr(b"none") + _sstr(b"none") + _sstr(b"") + (1).to_bytes(4, "big") + _sstr(pub) + _sstr(priv)
    lines = wrap(b64(blob), 70)
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\n" + "\n".join(lines) + "\n-----END OPENSSH PRIVATE KEY-----"
    publine = "ssh-ed25519 " + b64(pub) + " " + comment
    return key, lines[3], publine


def crc24(data):
    crc = 0xB704CE
    for byte in data:
        crc ^= byte << 16
        for _ in range(8):
            crc <<= 1
            if crc & 0x1000000:
                crc ^= 0x1864CFB
    return crc & 0xFFFFFF


def pgp_private():
    body = bytes([0x95, 0x07, 0x46, 0x04]) + epoch().to_bytes(4, "big") + bytes([0x01]) + rb(1860)
    lines = wrap(b64(body))
    cks = "=" + b64(crc24(body).to_bytes(3, "big"))
    txt = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(lines) + "\n" + cks + "\n-----END PGP PRIVATE KEY BLOCK-----"
    return txt, lines[0]


# ---- vendor token shapes -------------------------------------------------
def aws_akid():
    return "AKIA" + rs(16, B32U)


def aws_asia():
    return "ASIA" + rs(16, B32U)


def aws_secret():
    return rs(40, B64A)


def aws_session():
    s = "IQoJb3JpZ2luX2Vj" + rs(1, "EF") + rs(1, LO) + "//////////wEaC" + rs(R.randint(340, 420), B64A)
    if len(s) % 4 == 1:
        s += rs(1, B64A)
    return s + "=" * (-len(s) % 4)


def ghp():
    return crc_token("ghp_")


def gho():
    return crc_token("gho_")


def ghs():
    return crc_token("ghs_")


def github_pat():
    return "github_pat_11" + rs(20, UPDG) + "_" + rs(59)


def glpat():
    return "glpat-" + rs(20, URLS)


def glrt():
    return "glrt-" + rs(20, URLS)


def slack(prefix):
    return f"{prefix}-{R.randint(10**9, 10**13)}-{R.randint(10**12, 10**13 - 1)}-" + rs(24, LODG + UP)


def stripe_sk(live=True):
    return ("sk_live_51" if live else "sk_test_51") + rs(97)


def openai_proj():
    return "sk-proj-" + rs(74, URLS) + "T3BlbkFJ" + rs(74, URLS)


def openai_legacy():
    return "sk-" + rs(20) + "T3BlbkFJ" + rs(20)


def openai_svc():
    return "sk-svcacct-" + rs(74, URLS) + "T3BlbkFJ" + rs(74, URLS)


def anthropic():
    return "sk-ant-api03-" + rs(93, URLS) + "AA"


def google_key():
    return "AIza" + rs(35, URLS)


def ya29():
    return "ya29.a0A" + rs(R.randint(170, 220), URLS) + rs(4, DG)


def sa_private_key():
    k, first = pem_pkcs8()
    return k, first


def azure_storage_key():
    return b64(rb(64))


def azure_client_secret():
    return rs(3, AN) + "8Q~" + rs(34, AN + "_.~-")


def azure_jwt():
    tenant = uuid4()
    hdr = {"typ": "JWT", "alg": "RS256", "x5t": b64u(rb(20)), "kid": b64u(rb(20))}
    t = ts()
    pl = {"aud": "https://management.core.windows.net/", "iss": f"https://sts.windows.net/{tenant}/",
          "iat": epoch(t), "nbf": epoch(t), "exp": epoch(t) + 4299, "acr": "1", "aio": b64u(rb(60)),
          "amr": ["pwd", "mfa"], "appid": uuid4(), "family_name": "Ng", "given_name": "Lena",
          "name": "Lena Ng", "oid": uuid4(), "scp": "user_impersonation", "tid": tenant,
          "unique_name": "lena@contoso.onmicrosoft.com", "ver": "1.0"}
    return jwt(pl, hdr, 256), tenant


def k8s_sa_jwt():
    hdr = {"alg": "RS256", "kid": b64u(rb(32))}
    t = ts()
    pl = {"aud": ["https://kubernetes.default.svc.cluster.local"], "exp": epoch(t) + 31536000,
          "iat": epoch(t), "iss": "https://kubernetes.default.svc.cluster.local",
          "kubernetes.io": {"namespace": pick(NS), "serviceaccount": {"name": pick(["deployer", "ci-bot", "argo"]), "uid": uuid4()}},
          "nbf": epoch(t), "sub": "system:serviceaccount:" + pick(NS) + ":deployer"}
    return jwt(pl, hdr, 256)


def app_jwt():
    t = ts()
    pl = {"sub": str(R.randint(1000, 99999)), "email": f"{user()}@{pick(['acme.io', 'example.com', 'globex.dev'])}",
          "role": pick(["admin", "user", "service"]), "iat": epoch(t), "exp": epoch(t) + 3600,
          "jti": uuid4()}
    return jwt(pl)


def supabase_service_jwt():
    t = ts()
    pl = {"iss": "supabase", "ref": rs(20, LO), "role": "service_role", "iat": epoch(t) - 86400 * 200,
          "exp": epoch(t) + 86400 * 3000}
    return jwt(pl)


def vercel_oidc():
    t = ts()
    owner = org()
    pl = {"iss": f"https://oidc.vercel.com/{owner}", "sub": f"owner:{owner}:project:{proj()}:environment:development",
          "scope": f"owner:{owner}:project:{proj()}:environment:development", "aud": f"https://vercel.com/{owner}",
          "owner": owner, "owner_id": "team_" + rs(24), "project": proj(), "project_id": "prj_" + rs(28),
          "environment": "development", "user_id": rs(24), "nbf": epoch(t), "iat": epoch(t), "exp": epoch(t) + 43200}
    return jwt(pl, {"alg": "RS256", "typ": "JWT", "kid": "mrk-" + hx(32)}, 256)


def nextauth_jwe():
    return (b64u(json.dumps({"alg": "dir", "enc": "A256GCM"}, separators=(",", ":")).encode()) + ".." +
            b64u(rb(12)) + "." + b64u(rb(R.randint(300, 420))) + "." + b64u(rb(16)))


def mapbox_sk():
    payload = json.dumps({"u": user() + str(R.randint(1, 99)), "a": "cl" + rs(23, LODG)}, separators=(",", ":"))
    return "sk." + b64u(payload.encode()) + "." + rs(22, URLS)


def discord_bot():
    snow = str(R.randint(10**17, 10**18 - 1))
    return b64(snow.encode()).rstrip("=") + "." + rs(6, URLS) + "." + rs(38, URLS)


def telegram():
    return f"{R.randint(10**8, 10**10 - 1)}:AA" + rs(33, URLS)


def atlassian():
    return "ATATT3xFfGF0" + rs(R.randint(170, 190), URLS) + "=" + rs(8, HEXU)


def fcm():
    return "AAAA" + rs(7, URLS) + ":APA91b" + rs(134, URLS)


def tfc():
    return rs(14) + ".atlasv1." + rs(67)


def vault_hvs():
    return "hvs.CAESI" + rs(R.randint(80, 90), URLS) + rs(24)


def azdo_pat():
    return rs(52, "abcdefghijklmnopqrstuvwxyz234567")


def eth_pk():
    return "0x" + hx(64)


def wg_key():
    return b64(rb(32))


def totp_seed():
    return rs(32, B32U)


def gmail_app_pw():
    return " ".join(rs(4, LO) for _ in range(4))


def django_key():
    return pick(["django-insecure-", ""]) + rs(50, "abcdefghijklmnopqrstuvwxyz0123456789!@#%^&*(-_=+)")


def wp_salt():
    return rs(64, AN + "!#%&()*+,-./:;<=>?@[]^_`{|}~")


def elastic_key():
    return b64((rs(20, URLS) + ":" + rs(22, URLS)).encode())


def fly_token():
    return "fm2_" + b64(rb(R.randint(180, 230))).rstrip("=") + "," + "fm2_" + b64(rb(90)).rstrip("=")


def ngrok():
    return "2" + rs(26) + "_" + rs(21)


def basic_blob(u, p):
    return b64(f"{u}:{p}".encode())


# --------------------------------------------------------------------------
# family descriptor
# --------------------------------------------------------------------------
class Fam:
    def __init__(self, fam, kind, gen, keys, label, auth=None, host="api.example.com",
                 path="/v1/me", n=3, spec=(), generic=True, vendor=None, pw=False):
        self.fam, self.kind, self.gen, self.keys, self.label = fam, kind, gen, keys, label
        self.auth, self.host, self.path, self.n, self.spec = auth, host, path, n, list(spec)
        self.generic, self.vendor, self.pw = generic, vendor or fam, pw

    def key(self):
        return pick(self.keys)


def snake(k):
    return k.lower()


def camel(k):
    p = k.lower().split("_")
    return p[0] + "".join(x.capitalize() for x in p[1:])


def pascal(k):
    return "".join(x.capitalize() for x in k.lower().split("_"))


def dotted(k):
    return k.lower().replace("_", ".")


def kebab(k):
    return k.lower().replace("_", "-")


def plain(v):
    return all(c in AN + "-_./+=:@~" for c in v)


def shv(v):
    """shell-quoted value (never breaks the substring)"""
    if plain(v) and pick([True, True, False]):
        return v
    return pick(["'" + v + "'", '"' + v + '"']) if "$" not in v and "`" not in v else "'" + v + "'"


def yv(v):
    if all(c in AN + "-_./" for c in v) and v[0] not in "-." and pick([True, False]):
        return v
    return pick(['"' + v + '"', "'" + v + "'"])


def auth_hdr(f, v):
    a = f.auth
    if a[0] == "bearer":
        return "Authorization", "Bearer " + v
    if a[0] == "scheme":
        return "Authorization", a[1] + ("" if a[1].endswith("=") else " ") + v
    if a[0] == "header":
        return a[1], v
    raise ValueError(a)


def req_path(f, v):
    if f.auth and f.auth[0] == "query":
        return f"{f.path}?{f.auth[1]}={v}"
    return f.path


AGENT_INTRO = [
    "I found the problem: the variable was never exported in the shell that runs the dev server.",
    "The 401 is because the key isn't set. I've updated the env for you:",
    "Here's the minimal repro with the credentials inlined:",
    "Done. I put the value in the environment so the CLI can pick it up:",
    "Let me re-run with the variable set explicitly.",
]


# --------------------------------------------------------------------------
# generic contexts:  fn(f, k, v) -> (context, text)
# --------------------------------------------------------------------------
def g_export(f, k, v):
    cmd = pick(["npm run dev", "python manage.py runserver", "make deploy", "./scripts/smoke.sh", "go run ./cmd/api", "cargo run --release"])
    return "agent/md-fence-export", f"{pick(AGENT_INTRO)}\n\n```bash\nexport {k}={shv(v)}\n{cmd}\n```"


def g_printenv_gha(f, k, v):
    t = ts()
    env = [("CI", "true"), ("GITHUB_ACTIONS", "true"), ("GITHUB_REF", "refs/heads/" + pick(["main", "release/2.4", "fix/login"])),
           ("GITHUB_SHA", hx(40)), ("HOME", "/home/runner"), ("RUNNER_OS", "Linux"), ("RUNNER_ARCH", "X64"),
           ("PATH", "/home/runner/.local/bin:/opt/pipx_bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin"),
           ("ImageOS", "ubuntu24"), ("GITHUB_RUN_ID", str(R.randint(10**10, 10**11))), ("NODE_VERSION", pick(["20.18.1", "22.11.0"])),
           ("GITHUB_WORKSPACE", f"/home/runner/work/{proj()}/{proj()}"), ("JAVA_HOME", "/usr/lib/jvm/temurin-17-jdk-amd64"), (k, v)]
    env.sort()
    out = []
    us = R.randint(1000000, 9000000)
    stamp = lambda: t.strftime("%Y-%m-%dT%H:%M:%S.") + str(us + len(out) * 713).rjust(7, "0") + "Z"
    out.append(stamp() + " ##[group]Run printenv | sort")
    out.append(stamp() + " printenv | sort")
    out.append(stamp() + " shell: /usr/bin/bash -e {0}")
    out.append(stamp() + " ##[endgroup]")
    for a, b in env:
        out.append(f"{stamp()} {a}={b}")
    return "ci/printenv-gha", "\n".join(out)


def g_printenv_gitlab(f, k, v):
    lines = [f"Running with gitlab-runner 17.{R.randint(1, 6)}.{R.randint(0, 3)} ({hx(8)})",
             f"  on docker-autoscaler-{R.randint(1, 9)} {rs(8, LODG)}, system ID: s_{hx(12)}",
             "Preparing the \"docker\" executor", f"Using docker image sha256:{hx(64)} for python:3.12-slim ...",
             "Getting source from Git repository", f"Fetching changes with git depth set to 20...",
             f"Checking out {hx(8)} as detached HEAD (ref is main)...",
             "Executing \"step_script\" stage of the job script",
             "$ env | grep -E '^(CI_|APP_|" + k.split("_")[0] + ")' | sort",
             f"CI_COMMIT_SHORT_SHA={hx(8)}", f"CI_JOB_ID={R.randint(10**9, 10**10)}", "CI_PIPELINE_SOURCE=push",
             f"CI_PROJECT_PATH={org()}/{proj()}", f"{k}={v}", "$ pytest -q", "........................ [100%]",
             "Job succeeded"]
    return "ci/printenv-gitlab", "\n".join(lines)


def g_compose(f, k, v):
    p = proj()
    u = user()
    return "agent/docker-compose-config", (
        f"$ docker compose config\nname: {p}\nservices:\n  api:\n    build:\n      context: /home/{u}/src/{p}\n"
        f"      dockerfile: Dockerfile\n    depends_on:\n      db:\n        condition: service_healthy\n        required: true\n"
        f"    environment:\n      LOG_LEVEL: {pick(['info', 'debug'])}\n      {k}: {yv(v)}\n      PORT: \"8080\"\n"
        f"      TZ: UTC\n    image: {p}-api\n    networks:\n      default: null\n    ports:\n      - mode: ingress\n"
        f"        target: 8080\n        published: \"8080\"\n        protocol: tcp\n  db:\n    image: postgres:16-alpine\n"
        f"    healthcheck:\n      test:\n        - CMD-SHELL\n        - pg_isready -U postgres\n      interval: 5s\n"
        f"networks:\n  default:\n    name: {p}_default\n")


def g_kdescribe(f, k, v):
    p = proj()
    ns = pick(NS)
    pod = podname(p)
    return "agent/kubectl-describe-pod", (
        f"$ kubectl describe pod {pod} -n {ns}\nName:             {pod}\nNamespace:        {ns}\nPriority:         0\n"
        f"Service Account:  default\nNode:             ip-10-0-{R.randint(1, 200)}-{R.randint(1, 250)}.ec2.internal/10.0.3.17\n"
        f"Start Time:       {httpdate()}\nLabels:           app={p}\n                  pod-template-hash={rs(10, LODG)}\n"
        f"Status:           Running\nIP:               10.0.{R.randint(0, 255)}.{R.randint(0, 255)}\nControlled By:  ReplicaSet/{pod.rsplit('-', 1)[0]}\n"
        f"Containers:\n  {p}:\n    Container ID:   containerd://{hx(64)}\n    Image:          ghcr.io/{org()}/{p}:1.{R.randint(0, 30)}.{R.randint(0, 9)}\n"
        f"    Image ID:       ghcr.io/{org()}/{p}@sha256:{hx(64)}\n    Port:           8080/TCP\n    State:          Running\n"
        f"    Ready:          True\n    Restart Count:  {R.randint(0, 4)}\n    Environment:\n      LOG_LEVEL:       info\n"
        f"      {k}:  {v}\n      DB_PASSWORD:     <set to the key 'password' in secret '{p}-db'>  Optional: false\n"
        f"    Mounts:\n      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-{rs(5, LODG)} (ro)\n"
        f"Events:\n  Type    Reason   Age   From     Message\n  ----    ------   ----  ----     -------\n"
        f"  Normal  Pulled   3m    kubelet  Container image already present on machine\n")


def g_helm(f, k, v):
    rel = proj()
    return "agent/helm-get-values", (
        f"$ helm get values {rel} -n {pick(NS)}\nUSER-SUPPLIED VALUES:\nimage:\n  repository: ghcr.io/{org()}/{rel}\n"
        f"  tag: 2.{R.randint(0, 20)}.{R.randint(0, 9)}\ningress:\n  enabled: true\n  hosts:\n  - {rel}.{pick(['acme.io', 'globex.dev'])}\n"
        f"replicaCount: {R.randint(1, 6)}\nsecrets:\n  {pick([camel, snake])(k)}: {yv(v)}\nresources:\n  limits:\n    memory: 512Mi\n")


def g_tf_output(f, k, v):
    obj = {snake(k): {"sensitive": True, "type": "string", "value": v},
           "cluster_endpoint": {"sensitive": False, "type": "string", "value": f"https://{hx(32).upper()}.gr7.{pick(REGIONS)}.eks.amazonaws.com"},
           "vpc_id": {"sensitive": False, "type": "string", "value": "vpc-0" + hx(16)}}
    items = list(obj.items())
    R.shuffle(items)
    return "agent/terraform-output-json", "$ terraform output -json\n" + json.dumps(dict(items), indent=2)


def g_dotenv(f, k, v):
    lines = [f"# generated {ts().date()} -- do not commit", f"NODE_ENV={pick(['production', 'development'])}",
             f"APP_URL=https://{proj()}.local"]
    q = pick(["", '"', "'"]) if plain(v) else '"'
    lines.append(f"{k}={q}{v}{q}")
    lines += [f"LOG_LEVEL={pick(['info', 'warn'])}", f"SENTRY_ENVIRONMENT={pick(NS)}"]
    body = lines[:1] + R.sample(lines[1:], len(lines) - 1)
    return "file/dotenv-cat", "$ cat .env\n" + "\n".join(body)


def g_vercel(f, k, v):
    o, p = org(), proj()
    lines = ["# Created by Vercel CLI", f'{k}="{v}"', 'NX_DAEMON=""', 'TURBO_CACHE=""', 'TURBO_REMOTE_ONLY=""',
             'VERCEL="1"', 'VERCEL_ENV="development"', 'VERCEL_GIT_COMMIT_AUTHOR_LOGIN=""', 'VERCEL_URL=""']
    body = [lines[0]] + sorted(lines[1:])
    return "agent/vercel-env-pull", (
        f"$ vercel env pull .env.local\nVercel CLI 39.{R.randint(0, 3)}.{R.randint(0, 9)}\n"
        f"> Downloading `development` Environment Variables for {o}/{p}\n"
        f"✅  Created .env.local file  [{R.randint(120, 900)}ms]\n$ cat .env.local\n" + "\n".join(body))


def g_toolcall(f, k, v):
    cmd = pick([f"{k}={shv(v)} npm run deploy", f"export {k}={shv(v)} && pytest -x tests/integration",
                f"echo '{k}={v}' >> .env.local"])
    if "'" in v and cmd.startswith("echo"):
        cmd = f"{k}={shv(v)} npm run deploy"
    obj = {"id": "call_" + rs(24), "type": "function", "function": {"name": pick(["bash", "run_shell", "execute_command"]),
                                                                     "arguments": json.dumps({"command": cmd, "timeout": 120000})}}
    return "agent/tool-call-json-escaped", json.dumps({"role": "assistant", "content": None, "tool_calls": [obj]}, ensure_ascii=False)


def g_toolcall_double(f, k, v):
    inner = json.dumps({"file_path": pick(["config/settings.json", "appsettings.Development.json", ".vscode/launch.json"]),
                        "content": json.dumps({"env": {k: v, "DEBUG": "1"}}, indent=2)})
    msg = json.dumps({"type": "tool_use", "id": "toolu_01" + rs(22), "name": "Write", "input": inner})
    line = json.dumps({"ts": iso(), "level": "debug", "event": "transcript.append", "payload": msg})
    return "agent/tool-call-double-escaped", line


def g_diff(f, k, v):
    fn, old, new = pick([
        (".env.production", f"{k}=", f"{k}={v}"),
        ("config/settings.py", f'{k} = os.environ.get("{k}", "")', f'{k} = "{v}"'),
        ("deploy/values.yaml", f"  {camel(k)}: \"\"", f"  {camel(k)}: \"{v}\""),
        ("src/config.ts", f"  {camel(k)}: process.env.{k}!,", f"  {camel(k)}: \"{v}\","),
    ])
    a, b = hx(7), hx(7)
    ln = R.randint(3, 80)
    return "agent/git-diff", (
        f"$ git diff\ndiff --git a/{fn} b/{fn}\nindex {a}..{b} 100644\n--- a/{fn}\n+++ b/{fn}\n"
        f"@@ -{ln},6 +{ln},6 @@\n # {pick(['runtime config', 'keep in sync with the chart', 'see README'])}\n"
        f" LOG_FORMAT = \"json\"\n-{old}\n+{new}\n TIMEOUT_SECONDS = 30\n")


def g_jupyter(f, k, v):
    if pick([True, False]):
        n = R.randint(2, 30)
        return "notebook/ipython-out", (f"In [{n}]: import os; os.environ.get(\"{k}\")\nOut[{n}]: '{v}'\n\n"
                                        f"In [{n + 1}]: client = Client()\n")
    cell = {"cell_type": "code", "execution_count": R.randint(1, 40), "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream",
                         "text": [f"loaded settings from /home/{user()}/.config/{proj()}.toml\n", f"{k}={v}\n"]}],
            "source": ["from app.settings import settings\n", "print(settings.dump())"]}
    return "notebook/ipynb-output", json.dumps(cell, indent=1, ensure_ascii=False)


def g_history(f, k, v):
    n = R.randint(200, 1900)
    lines = [f"$ history | grep {k.split('_')[0]}",
             f" {n}  echo ${k}",
             f" {n + R.randint(1, 9)}  export {k}={shv(v)}",
             f" {n + R.randint(10, 40)}  {pick(['npm run dev', 'pytest -k auth', 'terraform plan'])}",
             f" {n + R.randint(41, 90)}  history | grep {k.split('_')[0]}"]
    return "shell/history-grep", "\n".join(lines)


def g_rich_tb(f, k, v):
    p = proj()
    return "trace/python-rich-locals", (
        "╭───────────────────── Traceback (most recent call last) ─────────────────────╮\n"
        f"│ /srv/{p}/app/clients.py:{R.randint(20, 200)} in connect                                 │\n"
        "│                                                                              │\n"
        "│ ╭────────────────────────────── locals ──────────────────────────────╮       │\n"
        f"│ │ {snake(k)} = '{v}'\n"
        f"│ │  base_url = 'https://{f.host}'\n"
        f"│ │   retries = {R.randint(1, 5)}\n"
        "│ ╰────────────────────────────────────────────────────────────────────╯       │\n"
        "╰──────────────────────────────────────────────────────────────────────────────╯\n"
        f"{pick(['PermissionError', 'RuntimeError', 'httpx.HTTPStatusError'])}: upstream returned 401 Unauthorized")


def g_py_tb_code(f, k, v):
    p = proj()
    return "trace/python-source-line", (
        "Traceback (most recent call last):\n"
        f"  File \"/home/{user()}/src/{p}/scripts/sync.py\", line {R.randint(10, 99)}, in <module>\n    main()\n"
        f"  File \"/home/{user()}/src/{p}/scripts/sync.py\", line {R.randint(100, 200)}, in main\n"
        f"    client = {pascal(f.vendor.replace('-', '_'))}Client({snake(k)}=\"{v}\", timeout=10)\n"
        f"  File \"/usr/lib/python3.12/site-packages/{f.vendor.replace('-', '_')}/client.py\", line 58, in __init__\n"
        "    self._session.headers.update(self._auth_headers())\n"
        "TypeError: _auth_headers() missing 1 required positional argument: 'scope'")


def g_json_log(f, k, v):
    obj = {"ts": iso(), "level": "debug", "logger": f"{f.vendor}.client", "msg": "config loaded",
           "service": proj(), snake(k): v, "pid": R.randint(100, 40000), "trace_id": hx(32)}
    return "log/structured-json", json.dumps(obj)


def g_java_props(f, k, v):
    p = proj()
    return "file/java-properties", (
        f"# application-{pick(NS)}.properties\nserver.port=8080\nspring.application.name={p}\n"
        f"logging.level.root=INFO\napp.{dotted(k)}={v}\nmanagement.endpoints.web.exposure.include=health,info\n")


def g_spring_yml(f, k, v):
    return "file/spring-application-yml", (
        f"spring:\n  application:\n    name: {proj()}\n  jpa:\n    open-in-view: false\n"
        f"{kebab(f.vendor)}:\n  {kebab(k)}: {yv(v)}\n  timeout: 5s\nserver:\n  port: 8080\n")


def g_appsettings(f, k, v):
    obj = {"Logging": {"LogLevel": {"Default": "Information", "Microsoft.AspNetCore": "Warning"}},
           "AllowedHosts": "*", pascal(f.vendor.replace("-", "_")): {pascal(k): v, "BaseUrl": f"https://{f.host}"}}
    return "file/appsettings-json", "// appsettings.Development.json\n" + json.dumps(obj, indent=2)


def g_go(f, k, v):
    return "code/go-struct", (
        f"package config\n\nimport \"time\"\n\nvar Default = Config{{\n\tBaseURL: \"https://{f.host}\",\n"
        f"\t{pascal(k).replace('Api', 'API').replace('Id', 'ID')}: \"{v}\",\n\tTimeout: {R.randint(5, 60)} * time.Second,\n}}\n")


def g_rust(f, k, v):
    if pick([True, False]):
        return "code/rust-const", f"// src/config.rs\npub const {k}: &str = \"{v}\";\npub const BASE_URL: &str = \"https://{f.host}\";\n"
    return "file/rust-config-toml", f"# config/local.toml (read by the `config` crate)\n[{f.vendor.replace('-', '_')}]\n{snake(k)} = \"{v}\"\nbase_url = \"https://{f.host}\"\n"


def g_php(f, k, v):
    if pick([True, False]):
        return "code/php-config-array", (f"<?php\n\nreturn [\n    '{snake(f.vendor)}' => [\n        '{snake(k)}' => '{v}',\n"
                                         f"        'endpoint' => env('{k.split('_')[0]}_ENDPOINT', 'https://{f.host}'),\n    ],\n];\n")
    return "file/php-dotenv", (f"APP_NAME={pascal(proj().replace('-', '_'))}\nAPP_ENV=local\nAPP_DEBUG=true\n"
                               f"{k}=\"{v}\"\nLOG_CHANNEL=stack\n")


def g_django(f, k, v):
    return "code/django-settings", (f"# settings/production.py\nfrom .base import *  # noqa\n\nDEBUG = False\n"
                                    f"ALLOWED_HOSTS = [\"{proj()}.acme.io\"]\n{k} = \"{v}\"\nCSRF_COOKIE_SECURE = True\n")


def g_rails_creds(f, k, v):
    return "agent/rails-credentials-show", (
        f"$ EDITOR=cat bin/rails credentials:show --environment {pick(['production', 'staging'])}\n"
        f"# aws:\n#   access_key_id: 123\n#   secret_access_key: 345\n\n{snake(f.vendor)}:\n  {snake(k)}: {v}\n"
        f"active_record_encryption:\n  key_derivation_salt: {rs(32)}\n")


def g_gha_yaml(f, k, v):
    return "file/github-workflow", (
        f"name: deploy\non:\n  push:\n    branches: [main]\njobs:\n  deploy:\n    runs-on: ubuntu-latest\n"
        f"    env:\n      {k}: {yv(v)}\n    steps:\n      - uses: actions/checkout@v4\n      - run: make deploy\n")


def g_dockerfile(f, k, v):
    return "file/dockerfile", (f"FROM python:3.12-slim\nWORKDIR /app\nCOPY requirements.txt .\nRUN pip install -r requirements.txt\n"
                               f"ENV {k}={v if plain(v) else chr(34) + v + chr(34)}\nCOPY . .\nCMD [\"gunicorn\", \"app:app\"]\n")


def g_k8s_stringdata(f, k, v):
    p = proj()
    return "file/k8s-secret-stringdata", (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {p}-env\n  namespace: {pick(NS)}\n"
                                          f"type: Opaque\nstringData:\n  {k}: {yv(v)}\n")


def g_systemd(f, k, v):
    p = proj()
    return "file/systemd-unit", (f"$ systemctl cat {p}.service\n# /etc/systemd/system/{p}.service\n[Unit]\nDescription={p}\n"
                                 f"After=network-online.target\n\n[Service]\nUser={p}\nEnvironment=\"{k}={v}\"\n"
                                 f"ExecStart=/opt/{p}/bin/{p} serve\nRestart=on-failure\n")


def g_curl_v(f, k, v):
    h, val = auth_hdr(f, v)
    path = f.path
    status = pick(["401", "403", "200"])
    return "log/curl-verbose", (
        f"$ curl -sv https://{f.host}{path} -H '{h}: {val}'\n*   Trying {ip()}:443...\n* Connected to {f.host} ({ip()}) port 443\n"
        "* ALPN: curl offers h2,http/1.1\n* TLSv1.3 (OUT), TLS handshake, Client hello (1):\n"
        "* SSL connection using TLSv1.3 / TLS_AES_256_GCM_SHA384 / X25519 / id-ecPublicKey\n"
        f"* Server certificate:\n*  subject: CN={f.host}\n*  expire date: Feb 21 23:59:59 2027 GMT\n"
        f"* using HTTP/2\n* [HTTP/2] [1] OPENED stream for https://{f.host}{path}\n* [HTTP/2] [1] [:method: GET]\n"
        f"* [HTTP/2] [1] [{h.lower()}: {val}]\n> GET {path} HTTP/2\n> Host: {f.host}\n> User-Agent: curl/8.5.0\n> Accept: */*\n"
        f"> {h}: {val}\n>\n< HTTP/2 {status}\n< date: {httpdate()}\n< content-type: application/json\n"
        f"< x-request-id: req_{hx(24)}\n<\n{{\"error\":{{\"type\":\"authentication_error\"}}}}")


def g_requests_debug(f, k, v):
    path = req_path(f, v)
    hdr = ""
    if f.auth[0] != "query":
        h, val = auth_hdr(f, v)
        hdr = f"{h}: {val}\\r\\n"
    return "log/python-http-client-debug", (
        f"DEBUG:urllib3.connectionpool:Starting new HTTPS connection (1): {f.host}:443\n"
        f"send: b'GET {path} HTTP/1.1\\r\\nHost: {f.host}\\r\\nUser-Agent: python-requests/2.32.3\\r\\n"
        f"Accept-Encoding: gzip, deflate\\r\\nAccept: */*\\r\\nConnection: keep-alive\\r\\n{hdr}\\r\\n'\n"
        "reply: 'HTTP/1.1 403 Forbidden\\r\\n'\nheader: Content-Type: application/json\nheader: Content-Length: 87\n"
        f"DEBUG:urllib3.connectionpool:https://{f.host}:443 \"GET {path} HTTP/1.1\" 403 87")


def g_axios(f, k, v):
    path = req_path(f, v)
    hdr = ""
    if f.auth[0] != "query":
        h, val = auth_hdr(f, v)
        hk = h if h.isidentifier() else f"'{h}'"
        hdr = f"      {hk}: '{val}',\n"
    return "trace/node-axios-error", (
        "AxiosError: Request failed with status code 401\n"
        "    at settle (/app/node_modules/axios/dist/node/axios.cjs:2019:12)\n"
        "    at IncomingMessage.handleStreamEnd (/app/node_modules/axios/dist/node/axios.cjs:3135:11)\n"
        "    at IncomingMessage.emit (node:events:531:35)\n"
        "    at process.processTicksAndRejections (node:internal/process/task_queues:82:21) {\n"
        "  code: 'ERR_BAD_REQUEST',\n  config: {\n    method: 'get',\n"
        f"    url: 'https://{f.host}{path}',\n    headers: Object [AxiosHeaders] {{\n"
        "      Accept: 'application/json, text/plain, */*',\n      'Content-Type': 'application/json',\n"
        f"{hdr}      'User-Agent': 'axios/1.7.9',\n      'Accept-Encoding': 'gzip, compress, deflate, br'\n    }},\n"
        "    timeout: 10000\n  },\n  status: 401\n}")


PROMPTS = [
    ("prompt/colon", "here is my key: {v}"),
    ("prompt/colon-nospace", "{label}:{v}"),
    ("prompt/use-this", "use this token {v} for the staging deploy, the old one got revoked"),
    ("prompt/backticks", "my {label} is `{v}` but the CLI keeps saying unauthorized??"),
    ("prompt/double-quotes", 'set {k} to "{v}" and rerun the failing tests'),
    ("prompt/single-quotes", "try again with '{v}' instead"),
    ("prompt/start", "{v}\n^ that's the new {label}, put it wherever the old one was"),
    ("prompt/end", "ok the new {label} is {v}"),
    ("prompt/parens", "rotate the creds (new {label}: {v}) and redeploy"),
    ("prompt/parens-tight", "the {label} ({v}) expires on friday"),
    ("prompt/trailing-period", "{label} = {v}. thanks!"),
    ("prompt/trailing-comma", "{v}, that's the one from 1password"),
    ("prompt/typos", "heres teh {label} agian {v} plz dont loose it this time lol"),
    ("prompt/question", "is {v} a valid {label}?"),
    ("prompt/exclaim", "finally works with {v}!"),
    ("prompt/semicolon", "{k}={v}; region={region}"),
    ("prompt/angle", "{label} <{v}>"),
    ("prompt/blank-lines", "can you add this to the repo secrets?\n\n{v}\n\nthanks"),
    ("prompt/brackets", "[{v}] <- {label}, paste into the vercel dashboard"),
    ("prompt/only", "{v}"),
]


_CYCLE = {"prompt": 0, "lang": 0}


def g_prompt(f, k, v):
    # cycle (rather than pick) so that every prompt shape is represented
    ctx, tpl = PROMPTS[_CYCLE["prompt"] % len(PROMPTS)]
    _CYCLE["prompt"] += 1
    return ctx, tpl.format(v=v, label=f.label, k=k, region=pick(REGIONS))


LANG = {
    "de": ["Das Passwort für die Staging-Datenbank ist {v} – bitte nicht ins Repo committen.",
           "Hier ist mein {label}: {v}. Kannst du damit den Deploy testen?"],
    "fr": ["Le mot de passe de la base de prod est {v}, je te l'envoie ici faute de mieux.",
           "Voici ma clé ({label}) : {v} — tu peux la mettre dans le .env ?"],
    "es": ["La contraseña del servidor es {v} (no la compartas con nadie).",
           "Te paso el {label}: {v}. Úsalo para el script de migración."],
    "pt": ["A senha do banco é {v}, troca depois do deploy.",
           "Segue a minha chave ({label}): {v}"],
    "it": ["La password dell'utente admin è {v}, cambiala appena puoi.",
           "Ecco il token che mi hai chiesto: {v}"],
    "nl": ["Het wachtwoord voor de VPN is {v}.",
           "Hier is mijn sleutel voor {label}: {v} — werkt hij bij jou?"],
    "pl": ["Hasło do bazy to {v}, nie wrzucaj go na Slacka.",
           "Mój klucz ({label}): {v}. Sprawdź, czy działa."],
    "ru": ["Пароль от базы: {v}, потом поменяю.",
           "Вот мой токен ({label}): {v} — подставь его в конфиг."],
    "ja": ["本番DBのパスワードは {v} です。あとで変更します。",
           "{label}はこれです：{v} 動くか確認してもらえますか？"],
    "zh": ["数据库密码是 {v}，部署完我会改掉。",
           "这是我的密钥（{label}）：{v}，帮我看看为什么返回 401。"],
    "ko": ["DB 비밀번호는 {v} 입니다. 나중에 바꿀게요.",
           "제 {label}는 {v} 이에요. 왜 403이 나오는지 봐주세요."],
    "tr": ["Veritabanı şifresi {v}, deploy'dan sonra değiştireceğim.",
           "{label} şu: {v} — neden 401 dönüyor?"],
    "en": ["fyi the db password is {v} until I rotate it tomorrow",
           "The {label} we got from the vendor is {v}; store it in the vault please."],
}
LANGS = list(LANG)


def g_lang(f, k, v):
    lang = LANGS[_CYCLE["lang"] % len(LANGS)]
    _CYCLE["lang"] += 1
    tpl = LANG[lang][0 if f.pw else 1]
    return "lang/" + lang, tpl.format(v=v, label=f.label)


class G:
    def __init__(self, fn, http=False, weight=1):
        self.fn, self.http, self.weight = fn, http, weight


GENERIC = [G(g_export), G(g_printenv_gha), G(g_printenv_gitlab), G(g_compose), G(g_kdescribe), G(g_helm),
           G(g_tf_output), G(g_dotenv), G(g_vercel), G(g_toolcall), G(g_toolcall_double), G(g_diff), G(g_jupyter),
           G(g_history), G(g_rich_tb), G(g_py_tb_code), G(g_json_log), G(g_java_props), G(g_spring_yml),
           G(g_appsettings), G(g_go), G(g_rust), G(g_php), G(g_django), G(g_rails_creds), G(g_gha_yaml),
           G(g_dockerfile), G(g_k8s_stringdata), G(g_systemd), G(g_curl_v, True), G(g_requests_debug, True),
           G(g_axios, True), G(g_prompt), G(g_prompt), G(g_prompt), G(g_prompt), G(g_lang), G(g_lang), G(g_lang)]


# --------------------------------------------------------------------------
# family-specific contexts:  fn(f) -> (context, text, secret)
# --------------------------------------------------------------------------
def sp_sts(field):
    def fn(f):
        a, s, t = aws_asia(), aws_secret(), aws_session()
        ac, role, sess = acct(), pick(["deploy", "ReadOnly", "terraform-ci", "admin-breakglass"]), f"{user()}-{R.randint(1000, 9999)}"
        obj = {"Credentials": {"AccessKeyId": a, "SecretAccessKey": s, "SessionToken": t,
                               "Expiration": (ts() + _dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S+00:00")},
               "AssumedRoleUser": {"AssumedRoleId": "AROA" + rs(17, B32U) + ":" + sess,
                                   "Arn": f"arn:aws:sts::{ac}:assumed-role/{role}/{sess}"}}
        txt = (f"$ aws sts assume-role --role-arn arn:aws:iam::{ac}:role/{role} --role-session-name {sess}\n"
               + json.dumps(obj, indent=4))
        return "agent/aws-sts-assume-role", txt, {"id": a, "secret": s, "token": t}[field]
    return fn


def sp_aws_creds_file(field):
    def fn(f):
        k1, s1, k2, s2 = aws_akid(), aws_secret(), aws_akid(), aws_secret()
        txt = (f"$ cat ~/.aws/credentials\n[default]\naws_access_key_id = {k1}\naws_secret_access_key = {s1}\n\n"
               f"[{pick(['prod', 'legacy', 'billing'])}]\naws_access_key_id={k2}\naws_secret_access_key={s2}\nregion = {pick(REGIONS)}\n")
        return "file/aws-credentials", txt, {"id": k2, "secret": s1}[field]
    return fn


def sp_aws_export(f):
    k, s, t = aws_asia(), aws_secret(), aws_session()
    txt = (f"$ aws configure export-credentials --profile {pick(['sso-dev', 'prod'])} --format env\n"
           f"export AWS_ACCESS_KEY_ID={k}\nexport AWS_SECRET_ACCESS_KEY={s}\nexport AWS_SESSION_TOKEN={t}\n"
           f"export AWS_CREDENTIAL_EXPIRATION={iso()}")
    return "agent/aws-export-credentials", txt, {"session-token": t, "secret-access-key": s}[f.kind]


def sp_gh_status(f):
    v, u = f.gen(), user()
    txt = (f"$ gh auth status -t\ngithub.com\n  ✓ Logged in to github.com account {u} (keyring)\n  - Active account: true\n"
           f"  - Git operations protocol: https\n  - Token: {v}\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'\n")
    return "agent/gh-auth-status-t", txt, v


def sp_gh_hosts(f):
    v, u = f.gen(), user()
    txt = (f"$ cat ~/.config/gh/hosts.yml\ngithub.com:\n    users:\n        {u}:\n            oauth_token: {v}\n"
           f"    git_protocol: https\n    oauth_token: {v}\n    user: {u}\n")
    return "file/gh-hosts-yml", txt, v


def sp_git_config(f):
    v, o, p = f.gen(), org(), proj()
    u = pick(["x-access-token", user(), "oauth2"])
    if f.fam == "gitlab":
        host = "gitlab.com"
    elif f.fam == "bitbucket":
        host = "bitbucket.org"
    else:
        host = "github.com"
    txt = (f"$ git config --list --show-origin\nfile:/home/{user()}/.gitconfig\tuser.name={user().capitalize()}\n"
           f"file:/home/{user()}/.gitconfig\tuser.email={user()}@users.noreply.github.com\n"
           "file:/home/runner/.gitconfig\tcredential.helper=store\nfile:.git/config\tcore.repositoryformatversion=0\n"
           "file:.git/config\tcore.filemode=true\n"
           f"file:.git/config\tremote.origin.url=https://{u}:{v}@{host}/{o}/{p}.git\n"
           "file:.git/config\tremote.origin.fetch=+refs/heads/*:refs/remotes/origin/*\nfile:.git/config\tbranch.main.remote=origin\n")
    return "agent/git-config-list", txt, v


def sp_git_credentials(f):
    v = f.gen()
    host = {"gitlab": "gitlab.com", "bitbucket": "bitbucket.org", "azure-devops": "dev.azure.com"}.get(f.fam, "github.com")
    txt = (f"$ cat ~/.git-credentials\nhttps://{user()}:{v}@{host}\nhttps://{user()}:{pw_url(20)}@git.internal.{org()}.com\n")
    return "file/git-credentials", txt, v


def sp_gh_api(f):
    v = f.gen()
    txt = (f"$ curl -s -H \"Authorization: token {v}\" -H \"Accept: application/vnd.github+json\" "
           f"https://api.github.com/repos/{org()}/{proj()}/actions/runs?per_page=1 | jq '.workflow_runs[0].status'\n\"completed\"")
    return "shell/curl-token-header", txt, v


def sp_gcloud_token(f):
    v = f.gen()
    txt = (f"$ gcloud auth print-access-token\n{v}\n$ curl -H \"Authorization: Bearer $(gcloud auth print-access-token)\" "
           f"https://storage.googleapis.com/storage/v1/b?project={proj()}-{R.randint(100000, 999999)}\n")
    return "agent/gcloud-print-access-token", txt, v


def sp_gcloud_sa_json(f):
    key, first = pem_pkcs8()
    p = f"{proj()}-{R.randint(100000, 999999)}"
    obj = {"type": "service_account", "project_id": p, "private_key_id": hx(40), "private_key": key + "\n",
           "client_email": f"deployer@{p}.iam.gserviceaccount.com", "client_id": str(R.randint(10**20, 10**21 - 1)),
           "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token"}
    txt = f"$ cat {pick(['sa.json', 'credentials/gcp-deployer.json', 'key.json'])}\n" + json.dumps(obj, indent=2)
    return "file/gcp-service-account-json", txt, first


def sp_az_token(f):
    v, tenant = azure_jwt()
    obj = {"accessToken": v, "expiresOn": (ts()).strftime("%Y-%m-%d %H:%M:%S.%f"), "expires_on": epoch(),
           "subscription": uuid4(), "tenant": tenant, "tokenType": "Bearer"}
    return "agent/az-get-access-token", "$ az account get-access-token\n" + json.dumps(obj, indent=2), v


def sp_heroku_token(f):
    v = f.gen()
    txt = (f"$ heroku auth:token\n ›   Warning: token will expire {(ts() + _dt.timedelta(days=R.randint(30, 365))).strftime('%m/%d/%Y')}\n"
           " ›   Use heroku authorizations:create to generate a long-term token\n" + v)
    return "agent/heroku-auth-token", txt, v


def sp_netrc(host, login=None):
    def fn(f):
        v = f.gen()
        lg = login or user() + "@" + pick(["acme.io", "gmail.com"])
        extra = f"machine {pick(['api.wandb.ai', 'git.heroku.com', 'ftp.internal'])}\n  login {user()}\n  password {hx(40)}\n"
        main = f"machine {host}\n  login {lg}\n  password {v}\n"
        blocks = [main, extra]
        R.shuffle(blocks)
        return "file/netrc", "$ cat ~/.netrc\n" + "".join(blocks), v
    return fn


def sp_npmrc(f):
    v = f.gen()
    txt = (f"$ cat ~/.npmrc\n@{org()}:registry=https://npm.pkg.github.com\n//registry.npmjs.org/:_authToken={v}\n"
           f"fund=false\naudit=false\n")
    return "file/npmrc", txt, v


def sp_npmrc_gh(f):
    v = f.gen()
    txt = f"# .npmrc\n@{org()}:registry=https://npm.pkg.github.com\n//npm.pkg.github.com/:_authToken={v}\nalways-auth=true\n"
    return "file/npmrc", txt, v


def sp_pypirc(f):
    v = f.gen()
    txt = (f"$ cat ~/.pypirc\n[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n[pypi]\nusername = __token__\npassword = {v}\n\n"
           "[testpypi]\nrepository = https://test.pypi.org/legacy/\nusername = __token__\n")
    return "file/pypirc", txt, v


def sp_pip_config(f):
    v = pw_url(R.randint(18, 30)) if f.pw else f.gen()
    u = user()
    txt = (f"$ pip config list\nglobal.index-url='https://{u}:{v}@{pick(['pypi.internal.acme.io', 'artifactory.globex.dev/artifactory/api/pypi/pypi-virtual'])}/simple'\n"
           "global.timeout='60'\ninstall.trusted-host='pypi.internal.acme.io'\n")
    return "agent/pip-config-list", txt, v


def sp_docker_config(f):
    tok = f.gen()
    blob = basic_blob(user(), tok)
    obj = {"auths": {pick(["ghcr.io", "registry.gitlab.com", "https://index.docker.io/v1/"]): {"auth": blob},
                     f"{acct()}.dkr.ecr.{pick(REGIONS)}.amazonaws.com": {}},
           "credsStore": "desktop", "currentContext": "default"}
    return "file/docker-config-json", "$ cat ~/.docker/config.json\n" + json.dumps(obj, indent="\t"), blob


def sp_docker_login(f):
    v = f.gen()
    n = R.randint(100, 900)
    txt = (f" {n}  docker login -u {user()} -p {v} {pick(['docker.io', 'ghcr.io'])}\n"
           "WARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded")
    return "shell/docker-login-p", txt, v


def kubeconfig(user_block):
    c = pick(["prod-eks", "gke_" + proj() + "_europe-west1_main", "kind-dev"])
    return (f"apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {b64(rb(R.randint(700, 800)))}\n"
            f"    server: https://{hx(32).upper()}.gr7.{pick(REGIONS)}.eks.amazonaws.com\n  name: {c}\ncontexts:\n- context:\n"
            f"    cluster: {c}\n    user: {c}-admin\n  name: {c}\ncurrent-context: {c}\nkind: Config\npreferences: {{}}\n"
            f"users:\n- name: {c}-admin\n  user:\n{user_block}")


def sp_kubeconfig_token(f):
    v = f.gen()
    return "file/kubeconfig", "$ kubectl config view --raw\n" + kubeconfig(f"    token: {v}\n"), v


def sp_kubeconfig_clientkey(f):
    key, _ = pem_rsa_pkcs1()
    blob = b64((key + "\n").encode())
    return "file/kubeconfig", "$ cat ~/.kube/config\n" + kubeconfig(f"    client-certificate-data: {b64(rb(900))}\n    client-key-data: {blob}\n"), blob


def sp_k8s_secret_json(f):
    v = f.gen()
    name = proj() + pick(["-db", "-env", "-api"])
    key = pick(["password", "api-key", "token", snake(f.key())])
    enc = b64(v.encode())
    obj = {"apiVersion": "v1", "data": {key: enc, "username": b64(user().encode())}, "kind": "Secret",
           "metadata": {"creationTimestamp": iso(), "name": name, "namespace": pick(NS), "resourceVersion": str(R.randint(10**5, 10**8)),
                        "uid": uuid4()}, "type": "Opaque"}
    return "agent/kubectl-get-secret-json", f"$ kubectl get secret {name} -o json\n" + json.dumps(obj, indent=4), enc


def sp_helm_pw(f):
    v = f.gen()
    rel = pick(["postgresql", "redis", "rabbitmq", "mongodb"])
    txt = (f"$ helm get values {rel} -n {pick(NS)} -o yaml\nUSER-SUPPLIED VALUES:\narchitecture: standalone\nauth:\n"
           f"  {pick(['password', 'rootPassword', 'postgresPassword'])}: {yv(v)}\n  username: app\nprimary:\n  persistence:\n    size: 20Gi\n")
    return "agent/helm-get-values", txt, v


def sp_ssh_keygen(f):
    c = f"{user()}@{pick(['laptop', 'buildbox', 'mbp.local'])}"
    key, sec, pub = openssh_ed25519(c)
    fp = b64(rb(32)).rstrip("=")
    txt = (f"$ ssh-keygen -t ed25519 -C \"{c}\" -f ./deploy_key -N ''\nGenerating public/private ed25519 key pair.\n"
           f"Your identification has been saved in ./deploy_key\nYour public key has been saved in ./deploy_key.pub\n"
           f"The key fingerprint is:\nSHA256:{fp} {c}\nThe key's randomart image is:\n+--[ED25519 256]--+\n|    .o+=*B=.     |\n"
           f"|     .oo=+o      |\n|      .+.o       |\n+----[SHA256]-----+\n$ cat deploy_key\n{key}\n$ cat deploy_key.pub\n{pub}")
    return "agent/ssh-keygen-cat", txt, sec


def sp_openssh_paste(f):
    key, sec, _ = openssh_ed25519(f"{user()}@ci")
    txt = pick([f"here's the deploy key for the runner, add it as SSH_PRIVATE_KEY:\n\n{key}\n",
                f"```\n{key}\n```\nwhy does ssh say 'invalid format'?"])
    return "prompt/pasted-key", txt, sec


def sp_openssl_genrsa(f):
    key, first = pem_pkcs8()
    return "agent/openssl-genrsa", f"$ openssl genrsa 2048\n{key}", first


def sp_pem_file(gen, path):
    def fn(f):
        key, first = gen()
        return "file/pem-cat", f"$ cat {path}\n{key}\n", first
    return fn


def sp_pem_json(gen):
    def fn(f):
        key, first = gen()
        obj = {"name": "Write", "input": {"file_path": "certs/server.key", "content": key + "\n"}}
        return "agent/tool-call-json-escaped", json.dumps(obj), first
    return fn


def sp_pem_env(gen):
    def fn(f):
        key, first = gen()
        return "file/dotenv-multiline", f'# .env\nJWT_ALG=RS256\nJWT_PRIVATE_KEY="{key}"\nJWT_ISSUER=https://auth.{org()}.com\n', first
    return fn


def sp_pem_k8s(gen):
    def fn(f):
        key, first = gen()
        ind = "\n".join("    " + ln for ln in key.split("\n"))
        return "file/k8s-secret-stringdata", (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls-{proj()}\ntype: kubernetes.io/tls\n"
                                              f"stringData:\n  tls.key: |\n{ind}\n"), first
    return fn


def sp_gpg(f):
    key, first = pgp_private()
    fpr = hx(40).upper()
    txt = (f"$ gpg --list-secret-keys --keyid-format=long\nsec   rsa4096/{fpr[-16:]} 2026-11-30 [SC]\n      {fpr}\n"
           f"uid                 [ultimate] {user().capitalize()} <{user()}@{org()}.com>\n\n"
           f"$ gpg --export-secret-keys --armor {fpr[-16:]}\n{key}")
    return "agent/gpg-export-secret-keys", txt, first


def sp_age(f):
    data = rb(32)
    sec = bech32("age-secret-key-", data).upper()
    pub = bech32("age", rb(32))
    txt = (f"$ age-keygen -o key.txt\nPublic key: {pub}\n$ cat key.txt\n# created: {ts().strftime('%Y-%m-%dT%H:%M:%S')}Z\n"
           f"# public key: {pub}\n{sec}")
    return "agent/age-keygen", txt, sec


def sp_age_sops(f):
    sec = bech32("age-secret-key-", rb(32)).upper()
    txt = f"export SOPS_AGE_KEY={sec}\nsops -d secrets/{pick(NS)}.enc.yaml > /tmp/decrypted.yaml"
    return "shell/sops-age-key", txt, sec


def sp_wg(f):
    priv = wg_key()
    pub = wg_key()
    txt = f"$ wg genkey | tee privatekey | wg pubkey > publickey\n$ cat privatekey publickey\n{priv}\n{pub}"
    return "agent/wg-genkey", txt, priv


def sp_wg_conf(f):
    priv = wg_key()
    txt = (f"$ sudo cat /etc/wireguard/wg0.conf\n[Interface]\nAddress = 10.8.0.{R.randint(2, 250)}/24\nPrivateKey = {priv}\n"
           f"ListenPort = 51820\n\n[Peer]\nPublicKey = {wg_key()}\nAllowedIPs = 10.8.0.0/24\nEndpoint = {ip()}:51820\n")
    return "file/wireguard-conf", txt, priv


def sp_vault_login(f):
    v = f.gen()
    txt = (f"$ vault login -method=oidc\nSuccess! You are now authenticated. The token information displayed below\n"
           "is already stored in the token helper. You do NOT need to run \"vault login\"\nagain. Future Vault requests will automatically use this token.\n\n"
           f"Key                  Value\n---                  -----\ntoken                {v}\ntoken_accessor       {rs(24)}\n"
           f"token_duration       768h\ntoken_renewable      true\ntoken_policies       [\"default\" \"{pick(['dev', 'ops'])}\"]\n")
    return "agent/vault-login", txt, v


def sp_terraformrc(f):
    v = f.gen()
    txt = f"$ cat ~/.terraform.d/credentials.tfrc.json\n" + json.dumps({"credentials": {"app.terraform.io": {"token": v}}}, indent=2)
    return "file/terraform-credentials", txt, v


def sp_databrickscfg(f):
    v = f.gen()
    txt = (f"$ cat ~/.databrickscfg\n[DEFAULT]\nhost  = https://dbc-{hx(8)}-{hx(4)}.cloud.databricks.com\ntoken = {v}\n\n"
           f"[staging]\nhost = https://adb-{R.randint(10**15, 10**16)}.{R.randint(1, 19)}.azuredatabricks.net\n")
    return "file/databrickscfg", txt, v


def sp_stripe_curl(f):
    v = f.gen()
    txt = (f"$ curl https://api.stripe.com/v1/payment_intents -u {v}: -d amount=2000 -d currency=eur\n"
           "{\n  \"error\": {\n    \"code\": \"parameter_missing\",\n    \"message\": \"Missing required param: payment_method.\"\n  }\n}")
    return "shell/curl-basic-user", txt, v


def sp_twilio_curl(f):
    v = f.gen()
    sid = "AC" + hx(32)
    txt = (f"curl -X POST https://api.twilio.com/2010-04-01/Accounts/{sid}/Messages.json \\\n  --data-urlencode \"Body=deploy done\" \\\n"
           f"  --data-urlencode \"To=+1555{R.randint(1000000, 9999999)}\" \\\n  -u {sid}:{v}")
    return "shell/curl-basic-user", txt, v


def sp_atlassian_curl(f):
    v = f.gen()
    txt = (f"curl -s -u {user()}@{org()}.com:{v} -H 'Accept: application/json' "
           f"'https://{org()}.atlassian.net/rest/api/3/search?jql=project=OPS'")
    return "shell/curl-basic-user", txt, v


def sp_slack_webhook(f):
    seg = rs(24, AN)
    url = f"https://hooks.slack.com/services/T0{rs(8, UPDG)}/B0{rs(9, UPDG)}/{seg}"
    txt = pick([f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy ok\"}}' {url}",
                f"SLACK_WEBHOOK_URL={url}", f"the alert webhook is {url} - can you wire it into alertmanager?"])
    return "shell/webhook-url", txt, seg


def sp_discord_webhook(f):
    seg = rs(68, URLS)
    url = f"https://discord.com/api/webhooks/{R.randint(10**17, 10**18 - 1)}/{seg}"
    txt = pick([f"DISCORD_WEBHOOK={url}", f"webhook_url: \"{url}\"\nusername: deploy-bot"])
    return "file/webhook-url", txt, seg


def sp_telegram_url(f):
    v = f.gen()
    txt = (f"{iso()} ERROR notifier: POST https://api.telegram.org/bot{v}/sendMessage failed: 400 Bad Request: chat not found")
    return "log/url-path-token", txt, v


def sp_google_key_url(f):
    v = f.gen()
    txt = pick([f"requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://maps.googleapis.com/maps/api/geocode/json?address=Berlin&key={v}",
                f"GET https://generativelanguage.googleapis.com/v1beta/models/gemini-2.0-flash:generateContent?key={v} -> 429"])
    return "trace/url-query-key", txt, v


def sp_jupyter_list(f):
    v = hx(48)
    port = R.randint(8888, 8899)
    txt = (f"$ jupyter server list\nCurrently running servers:\nhttp://localhost:{port}/?token={v} :: /home/{user()}/notebooks\n")
    return "agent/jupyter-server-list", txt, v


def sp_totp(f):
    v = totp_seed()
    iss = pick(["GitHub", "AWS", "Acme VPN", "Okta"])
    txt = pick([f"otpauth://totp/{iss}:{user()}%40{org()}.com?secret={v}&issuer={iss.replace(' ', '%20')}&algorithm=SHA1&digits=6&period=30",
                f"can't scan the QR on the server, the setup key it shows is {v} - add it to the shared 2FA vault?"])
    return "prompt/totp-seed", txt, v


def sp_kaggle(f):
    v = hx(32)
    return "file/kaggle-json", f"$ cat ~/.kaggle/kaggle.json\n{{\"username\":\"{user()}{R.randint(1, 99)}\",\"key\":\"{v}\"}}", v


def sp_cloudinary(f):
    v = rs(27, URLS)
    return "file/dotenv-url", f"CLOUDINARY_URL=cloudinary://{R.randint(10**14, 10**15 - 1)}:{v}@{proj()}\n", v


def sp_azure_conn(f):
    v = azure_storage_key()
    acc = proj().replace("-", "") + str(R.randint(10, 99))
    cs = f"DefaultEndpointsProtocol=https;AccountName={acc};AccountKey={v};EndpointSuffix=core.windows.net"
    txt = pick([f"$ az storage account show-connection-string -n {acc} -g rg-{pick(NS)}\n{{\n  \"connectionString\": \"{cs}\"\n}}",
                f"\"ConnectionStrings\": {{\n    \"Blob\": \"{cs}\"\n}}"])
    return "agent/azure-storage-connstring", txt, v


def sp_azure_sas(f):
    sig = b64(rb(32)).replace("+", "%2B").replace("/", "%2F").replace("=", "%3D")
    acc = proj().replace("-", "")
    url = (f"https://{acc}.blob.core.windows.net/backups/db-{ts().date()}.dump?sv=2022-11-02&ss=b&srt=sco&sp=rwdlacupiytfx"
           f"&se=2027-01-08T00:00:00Z&st=2026-12-08T00:00:00Z&spr=https&sig={sig}")
    txt = f"$ azcopy copy ./db.dump '{url}'\nINFO: Scanning...\nJob {uuid4()} has started"
    return "shell/azure-sas-url", txt, sig


def sp_fly(f):
    v = fly_token()
    txt = (f"$ fly tokens create deploy -x 999999h\nFlyV1 {v}\n")
    if pick([True, False]):
        txt = f'FLY_API_TOKEN="FlyV1 {v}"'
    return "agent/fly-tokens-create", txt, v


def sp_tailscale(f):
    v = f.gen()
    return "shell/cli-flag", f"sudo tailscale up --authkey={v} --advertise-tags=tag:ci --ssh\nSuccess.", v


def sp_ngrok(f):
    v = f.gen()
    return "agent/ngrok-add-authtoken", f"$ ngrok config add-authtoken {v}\nAuthtoken saved to configuration file: /home/{user()}/.config/ngrok/ngrok.yml", v


def sp_hf_cache(f):
    v = f.gen()
    return "file/hf-token-cat", f"$ cat ~/.cache/huggingface/token\n{v}$ huggingface-cli whoami\n{user()}", v


def sp_sonar(f):
    v = f.gen()
    txt = (f"$ sonar-scanner -Dsonar.projectKey={proj()} -Dsonar.host.url=https://sonar.{org()}.com -Dsonar.token={v}\n"
           f"INFO: Scanner configuration file: /opt/sonar-scanner/conf/sonar-scanner.properties\nINFO: SonarScanner 5.0.1.3006")
    return "shell/cli-flag", txt, v


def sp_okta(f):
    v = f.gen()
    txt = f"curl -s -H \"Authorization: SSWS {v}\" https://{org()}.okta.com/api/v1/users?limit=1"
    return "shell/curl-token-header", txt, v


def sp_fcm(f):
    v = f.gen()
    txt = (f"curl -X POST https://fcm.googleapis.com/fcm/send -H \"Authorization: key={v}\" -H \"Content-Type: application/json\" "
           "-d '{\"to\":\"/topics/all\",\"notification\":{\"title\":\"hi\"}}'")
    return "shell/curl-token-header", txt, v


def sp_elastic(f):
    v = f.gen()
    txt = f"curl -s -H \"Authorization: ApiKey {v}\" \"https://{proj()}.es.{pick(REGIONS)}.aws.found.io/_cat/indices?v\""
    return "shell/curl-token-header", txt, v


def sp_basic_curl_v(f):
    u, p = user(), pw_any()
    blob = basic_blob(u, p)
    host = pick(["jenkins.internal.acme.io", "registry.globex.dev", "grafana.ops.hooli.com"])
    txt = (f"$ curl -v -u {u}:*** https://{host}/api/json\n* Connected to {host} ({ip()}) port 443\n"
           f"* Server auth using Basic with user '{u}'\n> GET /api/json HTTP/1.1\n> Host: {host}\n"
           f"> Authorization: Basic {blob}\n> User-Agent: curl/8.5.0\n>\n< HTTP/1.1 200 OK\n< X-Jenkins: 2.479.2\n")
    return "log/curl-verbose", txt, blob


def sp_basic_requests(f):
    blob = basic_blob(pick(["admin", "ci", user()]), pw_any())
    txt = (f"send: b'POST /service/rest/v1/components?repository=pypi-internal HTTP/1.1\\r\\nHost: nexus.{org()}.com\\r\\n"
           f"Authorization: Basic {blob}\\r\\nContent-Length: 48211\\r\\n\\r\\n'\nreply: 'HTTP/1.1 204 No Content\\r\\n'")
    return "log/python-http-client-debug", txt, blob


def sp_setcookie(kind):
    def fn(f):
        if kind == "django":
            v, name = rs(32, LODG), "sessionid"
        elif kind == "nextauth":
            v, name = nextauth_jwe(), "__Secure-next-auth.session-token"
        elif kind == "express":
            v = "s%3A" + rs(32, URLS) + "." + b64(rb(32)).rstrip("=").replace("+", "%2B").replace("/", "%2F")
            name = "connect.sid"
        else:
            v, name = b64(rb(R.randint(150, 260))).replace("=", "%3D") + "--" + hx(40), f"_{proj().replace('-', '_')}_session"
        host = f"{proj()}.{pick(['acme.io', 'globex.dev'])}"
        txt = (f"$ curl -si -X POST https://{host}/login -d 'email={user()}%40acme.io&password=...'\nHTTP/2 302\n"
               f"date: {httpdate()}\nlocation: /dashboard\nset-cookie: csrftoken={rs(32)}; expires=Tue, 07 Dec 2027 10:00:00 GMT; Max-Age=31449600; Path=/; SameSite=Lax\n"
               f"set-cookie: {name}={v}; Path=/; HttpOnly; Secure; SameSite=Lax\ncontent-length: 0\n")
        return "log/set-cookie", txt, v
    return fn


def sp_cookie_curl(f):
    v = rs(32, LODG)
    host = f"admin.{org()}.com"
    txt = (f"curl 'https://{host}/api/orders?page=2' \\\n  -H 'accept: application/json' \\\n"
           f"  -b '_ga=GA1.1.{R.randint(10**8, 10**9)}.{epoch()}; sessionid={v}; theme=dark' \\\n"
           "  -H 'user-agent: Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36'")
    return "prompt/copy-as-curl-cookie", "this request works in the browser but not in my script:\n\n" + txt, v


# ---- database connection strings -----------------------------------------
def sp_prisma(f):
    v = pw_url()
    db = proj().replace("-", "_")
    url = f"postgresql://{db}:{v}@{pick(['db.internal', 'ep-' + rs(8, LO) + '-' + rs(6, LODG) + '.eu-central-1.aws.neon.tech'])}:5432/{db}?schema=public"
    txt = (f"$ cat .env\nDATABASE_URL=\"{url}\"\n$ npx prisma migrate dev\nEnvironment variables loaded from .env\n"
           f"Prisma schema loaded from prisma/schema.prisma\nDatasource \"db\": PostgreSQL database \"{db}\", schema \"public\"\n\n"
           "Error: P1000: Authentication failed against database server")
    return "file/prisma-env", txt, v


def sp_sqlalchemy_tb(f):
    v = pw_url()
    host = pick(["db.internal", "10.0.4.12", f"{proj()}.cluster-{rs(12, LODG)}.{pick(REGIONS)}.rds.amazonaws.com"])
    txt = ("Traceback (most recent call last):\n"
           f"  File \"/srv/app/db.py\", line {R.randint(5, 40)}, in <module>\n"
           f"    engine = create_engine(\"postgresql+psycopg2://app:{v}@{host}:5432/app\", pool_pre_ping=True)\n"
           "  File \"/usr/local/lib/python3.12/site-packages/sqlalchemy/engine/create.py\", line 617, in create_engine\n"
           "    dbapi = dbapi_meth(**dbapi_args)\n"
           "ModuleNotFoundError: No module named 'psycopg2'")
    return "trace/python-source-line", txt, v


def sp_psql_history(f):
    v = pw_strong()
    n = R.randint(100, 999)
    txt = (f"$ history | grep psql\n {n}  PGPASSWORD='{v}' psql -h {pick(['localhost', 'db.internal'])} -U postgres -c '\\dt'\n"
           f" {n + 3}  history | grep psql")
    return "shell/history-grep", txt, v


def sp_mysql_history(f):
    v = pw_strong()
    txt = (f"$ mysql -u root -p'{v}' -h 127.0.0.1 {proj().replace('-', '_')}\nmysql: [Warning] Using a password on the command line interface can be insecure.\n"
           "ERROR 1049 (42000): Unknown database")
    return "shell/cli-password-flag", txt, v


def sp_knex(f):
    v = pw_url()
    txt = (f"// knexfile.js\nmodule.exports = {{\n  production: {{\n    client: 'mysql2',\n    connection: 'mysql://app:{v}@{proj()}.{rs(12, LODG)}.{pick(REGIONS)}.rds.amazonaws.com:3306/app',\n"
           "    pool: { min: 2, max: 10 },\n  },\n};\n")
    return "code/node-knexfile", txt, v


def sp_planetscale(f):
    v = "pscale_pw_" + rs(43, URLS)
    txt = f"DATABASE_URL='mysql://{rs(20, LODG)}:{v}@aws.connect.psdb.cloud/{proj()}?sslaccept=strict'"
    return "file/dotenv-url", txt, v


def sp_mongo(f):
    v = pw_url()
    txt = (f"MongoServerError: bad auth : Authentication failed.\n    at Connection.onMessage (/app/node_modules/mongodb/lib/cmap/connection.js:231:30)\n"
           f"\n// src/db.ts:4\nawait mongoose.connect(\"mongodb+srv://{user()}:{v}@cluster0.{rs(5, LODG)}.mongodb.net/{proj()}?retryWrites=true&w=majority\");")
    return "trace/node-source-line", txt, v


def sp_redis(f):
    v = pw_url()
    txt = pick([f"# celeryconfig.py\nbroker_url = \"redis://:{v}@redis.{pick(NS)}.svc.cluster.local:6379/0\"\nresult_backend = broker_url\n",
                f"$ redis-cli -h cache.internal -a {v} ping\nWarning: Using a password with '-a' or '-u' option on the command line interface may not be safe.\nPONG"])
    return "code/redis-url", txt, v


def sp_amqp(f):
    v = pw_url()
    txt = f"{iso()} [celery] consumer: Cannot connect to amqp://worker:{v}@rabbitmq:5672//: [Errno 111] Connection refused.\nTrying again in 4.00 seconds... (2/100)"
    return "log/celery-broker-url", txt, v


def sp_jdbc(f):
    v = pw_url()
    txt = pick([f"spring.datasource.url=jdbc:postgresql://db.internal:5432/{proj().replace('-', '_')}?user=app&password={v}&sslmode=require\nspring.jpa.hibernate.ddl-auto=validate",
                f"jdbc:sqlserver://sql-{proj()}.database.windows.net:1433;databaseName=app;user=sa;password={v};encrypt=true;trustServerCertificate=false;"])
    return "file/jdbc-url", txt, v


def sp_adonet(f):
    v = pw_strong().replace(";", "")
    obj = {"ConnectionStrings": {"DefaultConnection": f"Server=tcp:sql-{proj()}.database.windows.net,1433;Initial Catalog={proj()};Persist Security Info=False;User ID=app_admin;Password={v};MultipleActiveResultSets=False;Encrypt=True;TrustServerCertificate=False;Connection Timeout=30;"},
           "Logging": {"LogLevel": {"Default": "Information"}}}
    return "file/appsettings-adonet", "// appsettings.Production.json\n" + json.dumps(obj, indent=2), v


def sp_mssql_compose(f):
    v = pw_strong()
    txt = (f"$ docker compose config\nservices:\n  sqlserver:\n    environment:\n      ACCEPT_EULA: \"Y\"\n      MSSQL_SA_PASSWORD: {yv(v)}\n"
           "    image: mcr.microsoft.com/mssql/server:2022-latest\n    ports:\n      - mode: ingress\n        target: 1433\n        published: \"1433\"\n")
    return "agent/docker-compose-config", txt, v


def sp_snowflake(f):
    v = pw_strong()
    txt = (f"$ cat ~/.snowflake/connections.toml\n[default]\naccount = \"{rs(7, UPDG)}-{rs(7, UPDG)}\"\nuser = \"{user().upper()}\"\n"
           f"password = \"{v}\"\nwarehouse = \"COMPUTE_WH\"\nrole = \"SYSADMIN\"\n")
    return "file/snowflake-connections", txt, v


def sp_ldap(f):
    v = pw_strong()
    txt = f"$ ldapsearch -x -H ldaps://ldap.{org()}.com -D 'cn=svc-{proj()},ou=services,dc={org().split('-')[0]},dc=com' -w '{v}' -b 'dc=corp' '(uid={user()})'"
    return "shell/cli-password-flag", txt, v


def sp_sshpass(f):
    v = pw_strong()
    return "shell/cli-password-flag", f"sshpass -p '{v}' ssh -o StrictHostKeyChecking=no deploy@{ip()} 'sudo systemctl restart {proj()}'", v


def sp_smtp(f):
    v = gmail_app_pw()
    txt = pick([f"EMAIL_HOST = \"smtp.gmail.com\"\nEMAIL_PORT = 587\nEMAIL_HOST_USER = \"{user()}@gmail.com\"\nEMAIL_HOST_PASSWORD = \"{v}\"\nEMAIL_USE_TLS = True",
                f"google gave me this app password for the mailer: {v} (it says it only shows once)"])
    return "code/smtp-app-password", txt, v


def sp_kafka(f):
    v = rs(64, B64A)
    k = rs(16, UPDG)
    txt = (f"# client.properties\nbootstrap.servers=pkc-{rs(5, LODG)}.{pick(REGIONS)}.aws.confluent.cloud:9092\nsecurity.protocol=SASL_SSL\n"
           f"sasl.mechanisms=PLAIN\nsasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required username=\"{k}\" password=\"{v}\";\n")
    return "file/kafka-client-properties", txt, v


def sp_wp(f):
    vals = [wp_salt() for _ in range(4)]
    names = ["AUTH_KEY", "SECURE_AUTH_KEY", "LOGGED_IN_KEY", "NONCE_KEY"]
    txt = "<?php\n// wp-config.php\n" + "".join(f"define( '{n}', '{s}' );\n".replace("'" + s + "'", "'" + s.replace("'", "") + "'")
                                               for n, s in zip(names, vals))
    sec = vals[1].replace("'", "")
    return "code/wp-config-salts", txt, sec


def sp_eth(f):
    v = eth_pk()
    txt = pick([f"# .env (foundry)\nRPC_URL=https://eth-sepolia.g.alchemy.com/v2/demo\nPRIVATE_KEY={v}\n",
                f"$ cast wallet new\nSuccessfully created new keypair.\nAddress:     0x{hx(40)}\nPrivate key: {v}"])
    return "agent/eth-private-key", txt, v


def sp_laravel(f):
    v = b64(rb(32))
    txt = pick([f"$ php artisan key:generate --show\nbase64:{v}",
                f"APP_NAME=Laravel\nAPP_ENV=production\nAPP_KEY=base64:{v}\nAPP_DEBUG=false\nAPP_URL=https://{proj()}.acme.io"])
    return "file/laravel-app-key", txt, v


def sp_rails_master(f):
    v = hx(32)
    txt = pick([f"$ cat config/master.key\n{v}", f"RAILS_MASTER_KEY={v} bin/rails assets:precompile"])
    return "file/rails-master-key", txt, v


def sp_django_key(f):
    v = django_key()
    txt = f"# {proj()}/settings.py\nBASE_DIR = Path(__file__).resolve().parent.parent\n\n# SECURITY WARNING: keep the secret key used in production secret!\nSECRET_KEY = '{v}'\n\nDEBUG = True\n"
    return "code/django-settings", txt, v


def sp_vercel_oidc(f):
    v = vercel_oidc()
    txt = (f"$ vercel env pull\nVercel CLI 39.2.0\n> Downloading `development` Environment Variables for {org()}/{proj()}\n"
           f"✅  Created .env.local file and added it to .gitignore [321ms]\n$ cat .env.local\n# Created by Vercel CLI\n"
           f"VERCEL_OIDC_TOKEN=\"{v}\"\n")
    return "agent/vercel-env-pull", txt, v


def sp_supabase_env(f):
    v = supabase_service_jwt()
    txt = f"NEXT_PUBLIC_SUPABASE_URL=https://{rs(20, LO)}.supabase.co\nSUPABASE_SERVICE_ROLE_KEY={v}\n"
    return "file/dotenv-cat", txt, v


def sp_npm_whoami(f):
    v = f.gen()
    txt = f"$ NPM_TOKEN={v} npm whoami --registry https://registry.npmjs.org/\n{user()}"
    return "shell/inline-env", txt, v


# --------------------------------------------------------------------------
# the family table
# --------------------------------------------------------------------------
B = ("bearer",)


def H(name):
    return ("header", name)


def S(word):
    return ("scheme", word)


def Q(param):
    return ("query", param)


FAMS = [
    # --- AWS
    Fam("aws", "access-key-id", aws_akid, ["AWS_ACCESS_KEY_ID"], "AWS access key", n=4, spec=[sp_aws_creds_file("id")]),
    Fam("aws", "temp-access-key-id", aws_asia, ["AWS_ACCESS_KEY_ID"], "AWS access key", n=2, spec=[sp_sts("id")]),
    Fam("aws", "secret-access-key", aws_secret, ["AWS_SECRET_ACCESS_KEY", "AWS_SECRET_KEY"], "AWS secret", n=7,
        spec=[sp_sts("secret"), sp_aws_creds_file("secret"), sp_aws_export]),
    Fam("aws", "session-token", aws_session, ["AWS_SESSION_TOKEN"], "session token", n=4, spec=[sp_sts("token"), sp_aws_export]),
    # --- GitHub
    Fam("github", "pat-classic", ghp, ["GITHUB_TOKEN", "GH_TOKEN"], "GitHub token", B, "api.github.com", "/user", n=7,
        spec=[sp_git_credentials, sp_gh_api, sp_git_config, sp_npmrc_gh, sp_docker_config]),
    Fam("github", "oauth-token", gho, ["GH_TOKEN", "GITHUB_OAUTH_TOKEN"], "gh token", B, "api.github.com", "/user", n=5,
        spec=[sp_gh_status, sp_gh_hosts]),
    Fam("github", "pat-fine-grained", github_pat, ["GITHUB_TOKEN", "GH_PAT"], "fine-grained PAT", B, "api.github.com",
        "/repos/acme/app", n=4, spec=[sp_git_config]),
    Fam("github", "app-installation-token", ghs, ["GITHUB_TOKEN"], "installation token", S("token"), "api.github.com",
        "/installation/repositories", n=3, spec=[sp_git_config]),
    # --- GitLab
    Fam("gitlab", "pat", glpat, ["GITLAB_TOKEN", "CI_JOB_TOKEN_OVERRIDE", "GL_TOKEN"], "GitLab PAT", H("PRIVATE-TOKEN"),
        "gitlab.com", "/api/v4/user", n=5, spec=[sp_git_config, sp_git_credentials]),
    Fam("gitlab", "runner-token", glrt, ["RUNNER_TOKEN", "CI_SERVER_TOKEN"], "runner token", n=2),
    # --- Slack
    Fam("slack", "bot-token", lambda: slack("xoxb"), ["SLACK_BOT_TOKEN"], "Slack bot token", B, "slack.com", "/api/auth.test", n=4),
    Fam("slack", "user-token", lambda: slack("xoxp"), ["SLACK_USER_TOKEN", "SLACK_TOKEN"], "Slack token", B, "slack.com", "/api/users.list", n=2),
    Fam("slack", "webhook-url", None, [], "webhook", n=2, spec=[sp_slack_webhook, sp_slack_webhook], generic=False),
    # --- Stripe
    Fam("stripe", "secret-key", stripe_sk, ["STRIPE_SECRET_KEY", "STRIPE_API_KEY"], "Stripe key", B, "api.stripe.com",
        "/v1/charges", n=6, spec=[sp_stripe_curl, sp_k8s_secret_json]),
    Fam("stripe", "restricted-key", lambda: "rk_live_51" + rs(97), ["STRIPE_RESTRICTED_KEY"], "restricted key", B,
        "api.stripe.com", "/v1/customers", n=2),
    Fam("stripe", "webhook-secret", lambda: "whsec_" + rs(32), ["STRIPE_WEBHOOK_SECRET"], "webhook signing secret", n=3),
    # --- AI vendors
    Fam("openai", "project-key", openai_proj, ["OPENAI_API_KEY"], "OpenAI key", B, "api.openai.com", "/v1/models", n=7,
        spec=[sp_k8s_secret_json]),
    Fam("openai", "legacy-key", openai_legacy, ["OPENAI_API_KEY", "OPENAI_KEY"], "openai key", B, "api.openai.com", "/v1/models", n=3),
    Fam("openai", "service-account-key", openai_svc, ["OPENAI_API_KEY"], "service account key", B, "api.openai.com",
        "/v1/chat/completions", n=2),
    Fam("anthropic", "api-key", anthropic, ["ANTHROPIC_API_KEY"], "Anthropic key", H("x-api-key"), "api.anthropic.com",
        "/v1/messages", n=6),
    Fam("huggingface", "user-token", lambda: "hf_" + rs(34, UP + LO), ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"], "HF token", B,
        "huggingface.co", "/api/whoami-v2", n=4, spec=[sp_hf_cache]),
    Fam("replicate", "api-token", lambda: "r8_" + rs(37), ["REPLICATE_API_TOKEN"], "Replicate token", B, "api.replicate.com",
        "/v1/account", n=2),
    Fam("groq", "api-key", lambda: "gsk_" + rs(52), ["GROQ_API_KEY"], "Groq key", B, "api.groq.com", "/openai/v1/models", n=3),
    Fam("cohere", "api-key", lambda: rs(40), ["COHERE_API_KEY", "CO_API_KEY"], "Cohere key", B, "api.cohere.com", "/v2/chat", n=2),
    Fam("mistral", "api-key", lambda: rs(32), ["MISTRAL_API_KEY"], "Mistral key", B, "api.mistral.ai", "/v1/models", n=2),
    Fam("perplexity", "api-key", lambda: "pplx-" + rs(48), ["PERPLEXITY_API_KEY"], "pplx key", B, "api.perplexity.ai",
        "/chat/completions", n=2),
    Fam("xai", "api-key", lambda: "xai-" + rs(80), ["XAI_API_KEY"], "xAI key", B, "api.x.ai", "/v1/models", n=2),
    # --- Google / GCP
    Fam("google", "api-key", google_key, ["GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_MAPS_API_KEY"], "Google API key",
        Q("key"), "maps.googleapis.com", "/maps/api/geocode/json", n=5, spec=[sp_google_key_url]),
    Fam("google", "oauth-access-token", ya29, ["GOOGLE_OAUTH_ACCESS_TOKEN", "CLOUDSDK_AUTH_ACCESS_TOKEN"], "access token", B,
        "www.googleapis.com", "/oauth2/v3/userinfo", n=4, spec=[sp_gcloud_token]),
    Fam("google", "oauth-refresh-token", lambda: "1//0" + rs(1, LO) + rs(100, URLS), ["GOOGLE_REFRESH_TOKEN"], "refresh token", n=2),
    Fam("google", "oauth-client-secret", lambda: "GOCSPX-" + rs(28, URLS), ["GOOGLE_CLIENT_SECRET"], "client secret", n=3),
    Fam("google", "service-account-private-key", None, [], "service account key", n=2, spec=[sp_gcloud_sa_json, sp_gcloud_sa_json],
        generic=False),
    Fam("gcp", "hmac-secret", lambda: rs(40, B64A), ["GCS_HMAC_SECRET", "HMAC_SECRET"], "HMAC secret", n=2),
    Fam("firebase", "fcm-server-key", fcm, ["FCM_SERVER_KEY"], "FCM key", S("key="), n=2, spec=[sp_fcm], host="fcm.googleapis.com", path="/fcm/send"),
    # --- Azure
    Fam("azure", "storage-account-key", azure_storage_key, ["AZURE_STORAGE_KEY", "AZURE_STORAGE_ACCOUNT_KEY"], "storage key",
        n=4, spec=[sp_azure_conn, sp_azure_conn]),
    Fam("azure", "client-secret", azure_client_secret, ["AZURE_CLIENT_SECRET", "ARM_CLIENT_SECRET"], "client secret", n=4),
    Fam("azure", "access-token", lambda: azure_jwt()[0], ["AZURE_ACCESS_TOKEN"], "access token", B, "management.azure.com",
        "/subscriptions?api-version=2022-12-01", n=3, spec=[sp_az_token]),
    Fam("azure", "sas-signature", None, [], "SAS", n=2, spec=[sp_azure_sas, sp_azure_sas], generic=False),
    Fam("azure-devops", "pat", azdo_pat, ["AZURE_DEVOPS_EXT_PAT", "AZDO_PAT"], "Azure DevOps PAT", None,
        "dev.azure.com", "/acme/_apis/projects", n=3, spec=[sp_git_credentials]),
    # --- messaging / email
    Fam("twilio", "auth-token", lambda: hx(32), ["TWILIO_AUTH_TOKEN"], "Twilio auth token", n=3, spec=[sp_twilio_curl]),
    Fam("twilio", "api-key-secret", lambda: rs(32), ["TWILIO_API_SECRET"], "Twilio API secret", n=2),
    Fam("sendgrid", "api-key", lambda: "SG." + rs(22, URLS) + "." + rs(43, URLS), ["SENDGRID_API_KEY"], "SendGrid key", B,
        "api.sendgrid.com", "/v3/mail/send", n=4),
    Fam("mailgun", "api-key", lambda: "key-" + hx(32), ["MAILGUN_API_KEY"], "Mailgun key", n=2),
    Fam("mailchimp", "api-key", lambda: hx(32) + "-us" + str(R.randint(1, 21)), ["MAILCHIMP_API_KEY"], "Mailchimp key", n=2),
    Fam("telegram", "bot-token", telegram, ["TELEGRAM_BOT_TOKEN", "TG_TOKEN"], "bot token", n=4, spec=[sp_telegram_url]),
    Fam("discord", "bot-token", discord_bot, ["DISCORD_TOKEN", "DISCORD_BOT_TOKEN"], "Discord bot token", S("Bot"),
        "discord.com", "/api/v10/users/@me", n=3),
    Fam("discord", "webhook-url", None, [], "webhook", n=2, spec=[sp_discord_webhook, sp_discord_webhook], generic=False),
    # --- package registries
    Fam("npm", "access-token", lambda: crc_token("npm_"), ["NPM_TOKEN", "NODE_AUTH_TOKEN"], "npm token", n=5,
        spec=[sp_npmrc, sp_npm_whoami]),
    Fam("pypi", "api-token", lambda: "pypi-AgEIcHlwaS5vcmcCJ" + rs(R.randint(130, 160), URLS), ["PYPI_TOKEN", "TWINE_PASSWORD"],
        "PyPI token", n=4, spec=[sp_pypirc]),
    Fam("dockerhub", "pat", lambda: "dckr_pat_" + rs(27, URLS), ["DOCKERHUB_TOKEN", "DOCKER_PASSWORD"], "Docker Hub token", n=4,
        spec=[sp_docker_login, sp_docker_config]),
    Fam("artifactory", "api-key", lambda: "AKCp8" + rs(68), ["ARTIFACTORY_API_KEY", "JFROG_PASSWORD"], "Artifactory key",
        H("X-JFrog-Art-Api"), "acme.jfrog.io", "/artifactory/api/repositories", n=3),
    # --- PaaS / hosting
    Fam("heroku", "api-key", uuid4, ["HEROKU_API_KEY"], "Heroku API key", B, "api.heroku.com", "/account", n=4,
        spec=[sp_heroku_token, sp_netrc("api.heroku.com")]),
    Fam("vercel", "token", lambda: rs(24), ["VERCEL_TOKEN"], "Vercel token", B, "api.vercel.com", "/v2/user", n=3),
    Fam("vercel", "oidc-token", vercel_oidc, ["VERCEL_OIDC_TOKEN"], "OIDC token", n=2, spec=[sp_vercel_oidc], generic=True),
    Fam("netlify", "pat", lambda: "nfp_" + rs(36), ["NETLIFY_AUTH_TOKEN"], "Netlify token", B, "api.netlify.com", "/api/v1/sites", n=2),
    Fam("digitalocean", "pat", lambda: "dop_v1_" + hx(64), ["DIGITALOCEAN_TOKEN", "DO_TOKEN"], "DO token", B,
        "api.digitalocean.com", "/v2/account", n=3),
    Fam("fly", "api-token", fly_token, ["FLY_API_TOKEN"], "fly token", n=2, spec=[sp_fly, sp_fly], generic=False),
    Fam("render", "api-key", lambda: "rnd_" + rs(32), ["RENDER_API_KEY"], "Render key", B, "api.render.com", "/v1/services", n=2),
    Fam("railway", "token", uuid4, ["RAILWAY_TOKEN"], "Railway token", n=2),
    Fam("cloudflare", "api-token", lambda: rs(40, URLS), ["CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"], "Cloudflare token", B,
        "api.cloudflare.com", "/client/v4/user/tokens/verify", n=4),
    Fam("cloudflare", "global-api-key", lambda: hx(37), ["CLOUDFLARE_API_KEY", "CF_API_KEY"], "global API key",
        H("X-Auth-Key"), "api.cloudflare.com", "/client/v4/zones", n=2),
    Fam("supabase", "service-role-key", supabase_service_jwt, ["SUPABASE_SERVICE_ROLE_KEY"], "service role key", B,
        "xyz.supabase.co", "/rest/v1/profiles", n=3, spec=[sp_supabase_env]),
    Fam("supabase", "access-token", lambda: "sbp_" + hx(40), ["SUPABASE_ACCESS_TOKEN"], "Supabase token", n=2),
    Fam("planetscale", "password", None, [], "db password", n=1, spec=[sp_planetscale], generic=False),
    # --- SaaS APIs
    Fam("linear", "api-key", lambda: "lin_api_" + rs(40), ["LINEAR_API_KEY"], "Linear key", H("Authorization"),
        "api.linear.app", "/graphql", n=2),
    Fam("notion", "integration-token", lambda: "ntn_" + str(R.randint(10**10, 10**11)) + rs(35), ["NOTION_TOKEN", "NOTION_API_KEY"],
        "Notion token", B, "api.notion.com", "/v1/users/me", n=3),
    Fam("shopify", "admin-token", lambda: "shpat_" + hx(32), ["SHOPIFY_ACCESS_TOKEN"], "Shopify token",
        H("X-Shopify-Access-Token"), "acme.myshopify.com", "/admin/api/2024-10/shop.json", n=3),
    Fam("datadog", "api-key", lambda: hx(32), ["DD_API_KEY", "DATADOG_API_KEY"], "Datadog API key", H("DD-API-KEY"),
        "api.datadoghq.eu", "/api/v1/validate", n=4),
    Fam("datadog", "app-key", lambda: hx(40), ["DD_APP_KEY"], "Datadog app key", H("DD-APPLICATION-KEY"),
        "api.datadoghq.com", "/api/v1/monitor", n=2),
    Fam("newrelic", "user-key", lambda: "NRAK-" + rs(27, UPDG), ["NEW_RELIC_API_KEY"], "New Relic key", H("API-Key"),
        "api.newrelic.com", "/graphql", n=2),
    Fam("sentry", "auth-token", lambda: "sntryu_" + hx(64), ["SENTRY_AUTH_TOKEN"], "Sentry token", B, "sentry.io",
        "/api/0/projects/", n=3),
    Fam("algolia", "admin-key", lambda: hx(32), ["ALGOLIA_ADMIN_KEY", "ALGOLIA_API_KEY"], "Algolia admin key",
        H("X-Algolia-API-Key"), "latency-dsn.algolia.net", "/1/indexes", n=2),
    Fam("mapbox", "secret-token", mapbox_sk, ["MAPBOX_SECRET_TOKEN", "MAPBOX_DOWNLOADS_TOKEN"], "Mapbox secret token",
        Q("access_token"), "api.mapbox.com", "/tokens/v2", n=2),
    Fam("square", "access-token", lambda: "EAAA" + rs(60, URLS), ["SQUARE_ACCESS_TOKEN"], "Square token", B,
        "connect.squareup.com", "/v2/locations", n=2),
    Fam("braintree", "access-token", lambda: f"access_token$production${rs(16, LODG)}${hx(32)}", ["BRAINTREE_ACCESS_TOKEN"],
        "Braintree token", n=2),
    Fam("paystack", "secret-key", lambda: "sk_live_" + hx(40), ["PAYSTACK_SECRET_KEY"], "Paystack key", B,
        "api.paystack.co", "/transaction", n=2),
    Fam("razorpay", "key-secret", lambda: rs(24), ["RAZORPAY_KEY_SECRET"], "Razorpay secret", n=2),
    Fam("plaid", "secret", lambda: hx(30), ["PLAID_SECRET"], "Plaid secret", n=2),
    Fam("atlassian", "api-token", atlassian, ["JIRA_API_TOKEN", "CONFLUENCE_API_TOKEN", "ATLASSIAN_API_TOKEN"], "Jira token",
        n=3, spec=[sp_atlassian_curl]),
    Fam("bitbucket", "app-password", lambda: "ATBB" + rs(28) + rs(8, HEXU), ["BITBUCKET_APP_PASSWORD"], "app password", n=3,
        spec=[sp_git_config]),
    Fam("okta", "api-token", lambda: "00" + rs(40, URLS), ["OKTA_API_TOKEN", "OKTA_CLIENT_TOKEN"], "Okta token", S("SSWS"),
        "acme.okta.com", "/api/v1/users", n=3, spec=[sp_okta]),
    Fam("auth0", "client-secret", lambda: rs(64, URLS), ["AUTH0_CLIENT_SECRET"], "Auth0 client secret", n=3),
    Fam("postman", "api-key", lambda: "PMAK-" + hx(24) + "-" + hx(34), ["POSTMAN_API_KEY"], "Postman key", H("X-Api-Key"),
        "api.getpostman.com", "/me", n=2),
    Fam("grafana", "service-account-token", lambda: "glsa_" + rs(32) + "_" + hx(8), ["GRAFANA_TOKEN", "GF_SA_TOKEN"],
        "Grafana token", B, "grafana.acme.io", "/api/dashboards/home", n=3),
    Fam("dropbox", "access-token", lambda: "sl.u." + rs(R.randint(130, 150), URLS), ["DROPBOX_ACCESS_TOKEN"], "Dropbox token", B,
        "api.dropboxapi.com", "/2/users/get_current_account", n=2),
    Fam("figma", "pat", lambda: "figd_" + rs(40, URLS), ["FIGMA_TOKEN"], "Figma token", H("X-Figma-Token"), "api.figma.com",
        "/v1/me", n=2),
    Fam("airtable", "pat", lambda: "pat" + rs(14) + "." + hx(64), ["AIRTABLE_API_KEY", "AIRTABLE_PAT"], "Airtable PAT", B,
        "api.airtable.com", "/v0/meta/whoami", n=2),
    Fam("contentful", "management-token", lambda: "CFPAT-" + rs(43, URLS), ["CONTENTFUL_MANAGEMENT_TOKEN"], "CMA token", B,
        "api.contentful.com", "/spaces", n=2),
    Fam("tailscale", "auth-key", lambda: "tskey-auth-k" + rs(10) + "CNTRL-" + rs(33), ["TS_AUTHKEY", "TAILSCALE_AUTHKEY"],
        "auth key", n=3, spec=[sp_tailscale]),
    Fam("ngrok", "authtoken", ngrok, ["NGROK_AUTHTOKEN"], "ngrok authtoken", n=2, spec=[sp_ngrok]),
    Fam("elastic", "api-key", elastic_key, ["ELASTIC_API_KEY", "ES_API_KEY"], "Elastic API key", S("ApiKey"),
        "acme.es.us-east-1.aws.found.io", "/_cat/indices", n=3, spec=[sp_elastic]),
    Fam("databricks", "pat", lambda: "dapi" + hx(32), ["DATABRICKS_TOKEN"], "Databricks token", B,
        "dbc-1a2b3c4d-5e6f.cloud.databricks.com", "/api/2.0/clusters/list", n=3, spec=[sp_databrickscfg]),
    Fam("confluent", "api-secret", None, [], "API secret", n=1, spec=[sp_kafka], generic=False),
    Fam("snyk", "token", uuid4, ["SNYK_TOKEN"], "Snyk token", S("token"), "api.snyk.io", "/rest/self", n=2),
    Fam("codecov", "upload-token", uuid4, ["CODECOV_TOKEN"], "Codecov token", n=2),
    Fam("circleci", "pat", lambda: "CCIPAT_" + rs(22) + "_" + hx(40), ["CIRCLECI_TOKEN", "CIRCLE_TOKEN"], "CircleCI token",
        H("Circle-Token"), "circleci.com", "/api/v2/me", n=2),
    Fam("buildkite", "api-token", lambda: "bkua_" + hx(40), ["BUILDKITE_API_TOKEN"], "Buildkite token", B, "api.buildkite.com",
        "/v2/user", n=2),
    Fam("sonarqube", "user-token", lambda: "squ_" + hx(40), ["SONAR_TOKEN"], "Sonar token", n=2, spec=[sp_sonar]),
    Fam("alibaba", "access-key-secret", lambda: rs(30), ["ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_SECRET_KEY"],
        "AccessKey secret", n=2),
    Fam("tencent", "secret-key", lambda: rs(32), ["TENCENTCLOUD_SECRET_KEY"], "SecretKey", n=2),
    Fam("ibm", "cloud-api-key", lambda: rs(44, URLS), ["IBMCLOUD_API_KEY", "IC_API_KEY"], "IBM Cloud API key", n=2),
    Fam("pulumi", "access-token", lambda: "pul-" + hx(40), ["PULUMI_ACCESS_TOKEN"], "Pulumi token", n=2),
    Fam("doppler", "service-token", lambda: f"dp.st.{pick(['dev', 'prd', 'stg'])}." + rs(43), ["DOPPLER_TOKEN"],
        "Doppler token", n=2),
    Fam("hashicorp", "vault-token", vault_hvs, ["VAULT_TOKEN"], "Vault token", H("X-Vault-Token"), "vault.acme.io:8200",
        "/v1/auth/token/lookup-self", n=4, spec=[sp_vault_login]),
    Fam("hashicorp", "terraform-cloud-token", tfc, ["TF_TOKEN_app_terraform_io", "TFE_TOKEN"], "TFC token", B,
        "app.terraform.io", "/api/v2/account/details", n=3, spec=[sp_terraformrc]),
    Fam("wandb", "api-key", lambda: hx(40), ["WANDB_API_KEY"], "wandb key", n=2, spec=[sp_netrc("api.wandb.ai", "user")]),
    Fam("kaggle", "api-key", None, [], "Kaggle key", n=1, spec=[sp_kaggle], generic=False),
    Fam("cloudinary", "api-secret", None, [], "Cloudinary secret", n=1, spec=[sp_cloudinary], generic=False),
    Fam("jupyter", "server-token", None, [], "token", n=1, spec=[sp_jupyter_list], generic=False),
    # --- generic tokens / app secrets
    Fam("jwt", "access-token", app_jwt, ["ACCESS_TOKEN", "AUTH_TOKEN", "API_TOKEN"], "bearer token", B, "api.acme.io",
        "/v1/orders", n=5),
    Fam("generic", "bearer-opaque", lambda: rs(R.randint(32, 48)), ["API_TOKEN", "SERVICE_TOKEN"], "API token", B,
        "internal-api.acme.io", "/v2/reports", n=4),
    Fam("generic", "api-key-hex", lambda: hx(R.randint(32, 64)), ["API_KEY", "PARTNER_API_KEY"], "API key", H("X-API-Key"),
        "partner.globex.dev", "/v1/quotes", n=4),
    Fam("generic", "webhook-secret", lambda: rs(R.randint(32, 48)), ["WEBHOOK_SECRET", "WEBHOOK_SIGNING_SECRET"],
        "webhook secret", n=3),
    Fam("generic", "oauth-client-secret", lambda: rs(R.randint(32, 64), URLS), ["OAUTH_CLIENT_SECRET", "CLIENT_SECRET"],
        "client secret", n=3),
    Fam("generic", "jwt-signing-secret", lambda: pick([b64(rb(48)), hx(64), rs(48)]), ["JWT_SECRET", "JWT_SIGNING_KEY"],
        "JWT secret", n=4),
    Fam("generic", "encryption-key", lambda: pick([b64(rb(32)), hx(64)]), ["ENCRYPTION_KEY", "DATA_KEY", "FIELD_ENCRYPTION_KEY"],
        "encryption key", n=3),
    Fam("k8s", "serviceaccount-token", k8s_sa_jwt, ["KUBE_TOKEN", "K8S_TOKEN"], "SA token", B,
        "kubernetes.default.svc", "/api/v1/namespaces", n=3, spec=[sp_kubeconfig_token]),
    Fam("k8s", "client-key-data", None, [], "client key", n=1, spec=[sp_kubeconfig_clientkey], generic=False),
    Fam("k8s", "secret-data-b64", pw_any, ["DB_PASSWORD"], "password", n=2, spec=[sp_k8s_secret_json, sp_k8s_secret_json], generic=False),
    Fam("http", "basic-auth", None, [], "basic auth", n=2, spec=[sp_basic_curl_v, sp_basic_requests], generic=False),
    Fam("http", "session-cookie", None, [], "session cookie", n=5,
        spec=[sp_setcookie("django"), sp_setcookie("nextauth"), sp_setcookie("express"), sp_setcookie("rails"), sp_cookie_curl],
        generic=False),
    Fam("docker", "registry-auth-b64", ghp, [], "registry auth", n=1, spec=[sp_docker_config], generic=False),
    Fam("django", "secret-key", django_key, ["DJANGO_SECRET_KEY", "SECRET_KEY"], "Django secret key", n=3, spec=[sp_django_key]),
    Fam("rails", "secret-key-base", lambda: hx(128), ["SECRET_KEY_BASE"], "secret_key_base", n=2),
    Fam("rails", "master-key", None, [], "master key", n=1, spec=[sp_rails_master], generic=False),
    Fam("laravel", "app-key", None, [], "APP_KEY", n=2, spec=[sp_laravel, sp_laravel], generic=False),
    Fam("wordpress", "auth-salt", None, [], "salt", n=1, spec=[sp_wp], generic=False),
    Fam("totp", "seed", None, [], "2FA seed", n=2, spec=[sp_totp, sp_totp], generic=False),
    Fam("ethereum", "private-key", eth_pk, ["PRIVATE_KEY", "DEPLOYER_PRIVATE_KEY"], "wallet private key", n=3, spec=[sp_eth]),
    # --- key material
    Fam("pem", "rsa-private-key", None, [], "key", n=3, generic=False,
        spec=[sp_pem_file(pem_rsa_pkcs1, "~/.ssh/id_rsa"), sp_pem_json(pem_rsa_pkcs1), sp_pem_env(pem_rsa_pkcs1)]),
    Fam("pem", "pkcs8-private-key", None, [], "key", n=3, generic=False,
        spec=[sp_openssl_genrsa, sp_pem_k8s(pem_pkcs8), sp_pem_file(pem_pkcs8, "certs/server.key")]),
    Fam("pem", "ec-private-key", None, [], "key", n=3, generic=False,
        spec=[sp_pem_file(pem_ec, "apns/AuthKey.p8"), sp_pem_json(pem_ec), sp_pem_k8s(pem_ec)]),
    Fam("ssh", "openssh-private-key", None, [], "key", n=3, generic=False, spec=[sp_ssh_keygen, sp_openssh_paste, sp_ssh_keygen]),
    Fam("pgp", "private-key-block", None, [], "key", n=2, generic=False, spec=[sp_gpg, sp_gpg]),
    Fam("age", "secret-key", None, [], "age key", n=2, generic=False, spec=[sp_age, sp_age_sops]),
    Fam("wireguard", "private-key", None, [], "wg key", n=2, generic=False, spec=[sp_wg, sp_wg_conf]),
    # --- passwords
    Fam("postgres", "password", pw_any, ["POSTGRES_PASSWORD", "PGPASSWORD", "DB_PASSWORD"], "password", n=6, pw=True,
        spec=[sp_prisma, sp_sqlalchemy_tb, sp_psql_history, sp_helm_pw]),
    Fam("mysql", "password", pw_any, ["MYSQL_ROOT_PASSWORD", "MYSQL_PASSWORD"], "password", n=4, pw=True,
        spec=[sp_mysql_history, sp_knex]),
    Fam("mongodb", "password", pw_any, ["MONGO_INITDB_ROOT_PASSWORD"], "password", n=2, pw=True, spec=[sp_mongo]),
    Fam("redis", "password", pw_any, ["REDIS_PASSWORD"], "password", n=3, pw=True, spec=[sp_redis]),
    Fam("rabbitmq", "password", pw_any, ["RABBITMQ_DEFAULT_PASS"], "password", n=2, pw=True, spec=[sp_amqp]),
    Fam("jdbc", "password", None, [], "password", n=2, pw=True, spec=[sp_jdbc, sp_jdbc], generic=False),
    Fam("mssql", "password", pw_any, ["MSSQL_SA_PASSWORD", "SA_PASSWORD"], "password", n=3, pw=True, spec=[sp_adonet, sp_mssql_compose]),
    Fam("snowflake", "password", None, [], "password", n=1, pw=True, spec=[sp_snowflake], generic=False),
    Fam("ldap", "bind-password", pw_any, ["LDAP_BIND_PASSWORD"], "password", n=2, pw=True, spec=[sp_ldap]),
    Fam("ssh", "password", pw_any, ["SSH_PASSWORD", "DEPLOY_PASSWORD"], "password", n=2, pw=True, spec=[sp_sshpass]),
    Fam("smtp", "app-password", gmail_app_pw, ["EMAIL_HOST_PASSWORD", "SMTP_PASSWORD"], "app password", n=3, pw=True, spec=[sp_smtp]),
    Fam("generic", "password", pw_any, ["ADMIN_PASSWORD", "APP_PASSWORD", "PASSWORD", "GRAFANA_ADMIN_PASSWORD"], "password",
        n=8, pw=True, spec=[sp_pip_config]),
]
# generic-context families with three or more rows get one extra generic row
# (tuning for ~460 positives; applied here so the table stays readable)
for _f in FAMS:
    if _f.generic and _f.n >= 3:
        _f.n += 1


# --------------------------------------------------------------------------
# hard negatives:  fn() -> (kind, context, text)
# --------------------------------------------------------------------------
PKGS = ["react", "lodash", "express", "zod", "vite", "esbuild", "typescript", "axios", "chalk", "commander", "semver",
        "debug", "ms", "picocolors", "tslib", "undici", "ws", "yaml", "glob", "minimatch"]
PYPKGS = ["requests", "urllib3", "certifi", "idna", "charset-normalizer", "pydantic", "fastapi", "starlette", "anyio",
          "sniffio", "numpy", "pandas", "attrs", "click", "rich", "httpx"]
GOMODS = ["github.com/stretchr/testify", "golang.org/x/sync", "github.com/google/uuid", "go.uber.org/zap",
          "github.com/spf13/cobra", "golang.org/x/net", "github.com/prometheus/client_golang", "google.golang.org/grpc"]
CRATES = ["serde", "tokio", "anyhow", "thiserror", "clap", "regex", "bytes", "itoa", "ryu", "libc", "hashbrown", "memchr"]


def ver():
    return f"{R.randint(0, 9)}.{R.randint(0, 30)}.{R.randint(0, 20)}"


def sha512_sri():
    return "sha512-" + b64(rb(64))


def n_package_lock():
    pk = R.sample(PKGS, 3)
    d = {}
    for p in pk:
        v = ver()
        d[f"node_modules/{p}"] = {"version": v, "resolved": f"https://registry.npmjs.org/{p}/-/{p}-{v}.tgz",
                                  "integrity": sha512_sri(), "license": "MIT"}
    return "lockfile-integrity", "file/package-lock-json", '"packages": ' + json.dumps(d, indent=2)


def n_yarn_lock():
    out = ["# THIS IS AN AUTOGENERATED FILE. DO NOT EDIT THIS FILE DIRECTLY.", "# yarn lockfile v1", ""]
    for p in R.sample(PKGS, 3):
        v = ver()
        out += [f'{p}@^{v.split(".")[0]}.0.0:', f'  version "{v}"',
                f'  resolved "https://registry.yarnpkg.com/{p}/-/{p}-{v}.tgz#{hx(40)}"', f"  integrity {sha512_sri()}", ""]
    return "lockfile-integrity", "file/yarn-lock", "\n".join(out)


def n_pnpm_lock():
    out = ["lockfileVersion: '9.0'", "", "packages:", ""]
    for p in R.sample(PKGS, 3):
        out += [f"  {p}@{ver()}:", f"    resolution: {{integrity: {sha512_sri()}}}", "    engines: {node: '>=18'}", ""]
    return "lockfile-integrity", "file/pnpm-lock", "\n".join(out)


def n_go_sum():
    out = []
    for m in R.sample(GOMODS, 3):
        v = "v" + ver()
        out.append(f"{m} {v} h1:{b64(rb(32))}")
        out.append(f"{m} {v}/go.mod h1:{b64(rb(32))}")
    return "go-sum", "file/go-sum", "$ cat go.sum\n" + "\n".join(out)


def n_cargo_lock():
    out = ["# This file is automatically @generated by Cargo.", "# It is not intended for manual editing.", "version = 4", ""]
    for c in R.sample(CRATES, 3):
        out += ["[[package]]", f'name = "{c}"', f'version = "{ver()}"',
                'source = "registry+https://github.com/rust-lang/crates.io-index"', f'checksum = "{hx(64)}"', ""]
    return "cargo-checksum", "file/cargo-lock", "\n".join(out)


def n_pip_hash():
    out = ["# This file is autogenerated by pip-compile with Python 3.12", "#    pip-compile --generate-hashes requirements.in", "#"]
    for p in R.sample(PYPKGS, 3):
        out.append(f"{p}=={ver()} \\")
        out.append(f"    --hash=sha256:{hx(64)} \\")
        out.append(f"    --hash=sha256:{hx(64)}")
    return "pip-hash", "file/requirements-hashes", "\n".join(out)


def n_pip_wheel():
    p = pick(PYPKGS)
    return "pip-hash", "log/pip-install", (f"Building wheels for collected packages: {p}\n  Building wheel for {p} (pyproject.toml) ... done\n"
                                           f"  Created wheel for {p}: filename={p}-{ver()}-py3-none-any.whl size={R.randint(3000, 90000)} sha256={hx(64)}\n"
                                           f"  Stored in directory: /tmp/pip-ephem-wheel-cache-{rs(8, LODG)}/wheels/{hx(2)}/{hx(2)}/{hx(60)}\nSuccessfully built {p}")


def n_docker_digest():
    img = pick(["node", "python", "postgres", "nginx", "redis"])
    tag = pick(["20-alpine", "3.12-slim", "16", "1.27", "7.4"])
    return "docker-digest", "agent/docker-pull", (f"$ docker pull {img}:{tag}\n{tag}: Pulling from library/{img}\n"
                                                 + "".join(f"{hx(12)}: Pull complete\n" for _ in range(R.randint(3, 6)))
                                                 + f"Digest: sha256:{hx(64)}\nStatus: Downloaded newer image for {img}:{tag}\ndocker.io/library/{img}:{tag}")


def n_docker_build():
    p = proj()
    return "docker-digest", "agent/docker-build", (f"#12 exporting to image\n#12 exporting layers 0.4s done\n#12 writing image sha256:{hx(64)} done\n"
                                                  f"#12 naming to docker.io/library/{p}:latest done\n#12 DONE 0.5s\n"
                                                  f"$ docker images --digests | head -3\nREPOSITORY   TAG      DIGEST                                                                    IMAGE ID       CREATED\n"
                                                  f"{p}   latest   <none>                                                                    {hx(12)}   5 seconds ago\n"
                                                  f"postgres     16       sha256:{hx(64)}   {hx(12)}   2 weeks ago")


MSGS = ["fix: handle empty cursor in pagination", "feat(auth): rotate session keys on login", "chore(deps): bump vite from 5.4.10 to 5.4.11",
        "refactor: extract token refresh into middleware", "docs: explain API_KEY env var", "test: add regression for #482",
        "ci: cache pnpm store", "fix(redactor): don't mangle sha512 integrity", "revert \"feat: secret rotation\"", "perf: avoid double JSON parse"]


def n_git_log():
    msgs = R.sample(MSGS, R.randint(5, 7))
    out = [f"$ git log --oneline -n {len(msgs)}"]
    for i, m in enumerate(msgs):
        pre = f"{hx(7)} " if i else f"{hx(7)} (HEAD -> main, origin/main) "
        out.append(pre + m)
    return "git-sha", "agent/git-log-oneline", "\n".join(out)


def n_git_show():
    h = hx(40)
    return "git-sha", "agent/git-show-stat", (f"$ git show --stat HEAD~1\ncommit {h}\nMerge: {hx(7)} {hx(7)}\nAuthor: {user().capitalize()} <{user()}@{org()}.com>\n"
                                             f"Date:   Mon Dec 7 16:{R.randint(10, 59)}:03 2026 +0100\n\n    {pick(MSGS)}\n\n"
                                             f" src/auth/session.ts | {R.randint(2, 40)} ++++---\n 1 file changed, 9 insertions(+), 4 deletions(-)")


def n_git_prose():
    return "git-sha", "prose/commit-ref", (f"The regression came in with {hx(7)} (\"{pick(MSGS)}\"); reverting it on top of {hx(12)} "
                                          f"makes the test pass again. Bisect log: good {hx(40)}, bad {hx(40)}.")


def n_git_diff_header():
    fn = pick(["src/utils/format.ts", "README.md", "app/models/user.rb", "pkg/api/router.go"])
    return "git-sha", "agent/git-diff", (f"diff --git a/{fn} b/{fn}\nindex {hx(7)}..{hx(7)} 100644\n--- a/{fn}\n+++ b/{fn}\n@@ -1,4 +1,4 @@\n"
                                         f"-// formats a currency amount\n+// formats a currency amount (locale aware)\n export function fmt(x) {{\n")


def n_uuids():
    rows = "\n".join(f" {uuid4()} | {user()}@{org()}.com | {ts().date()}" for _ in range(R.randint(3, 5)))
    return "uuid", "agent/psql-select", f"$ psql -c 'select id, email, created_at from users limit 4'\n                  id                  |      email      | created_at\n" + rows


def ulid():
    a = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    return "01J" + rs(23, a)


def ksuid():
    return "2" + rs(26, AN)


def n_ulid_log():
    out = [f"{iso()} INFO  job.enqueued id={ulid()} queue=emails attempt=1",
           f"{iso()} INFO  job.started id={ulid()} worker={podname('worker')}",
           f"{iso()} INFO  order.created order_id=ord_{ksuid()} ksuid={ksuid()}"]
    return "ulid-ksuid", "log/app", "\n".join(out)


def n_trace_ids():
    t = hx(32)
    out = [f"traceparent: 00-{t}-{hx(16)}-01", f"x-request-id: {uuid4()}", f"x-amzn-trace-id: Root=1-{hx(8)}-{hx(24)};Parent={hx(16)};Sampled=1",
           f"x-cloud-trace-context: {t}/{R.randint(10**17, 10**19)};o=1", f"cf-ray: {hx(16)}-FRA"]
    return "trace-id", "log/http-response-headers", "< HTTP/2 200\n" + "\n".join("< " + x for x in R.sample(out, 4))


def n_otel():
    obj = {"timestamp": iso(), "severity": "INFO", "body": "checkout completed", "trace_id": hx(32), "span_id": hx(16),
           "resource": {"service.name": proj(), "k8s.pod.name": podname(proj())}, "attributes": {"request.id": "req_" + rs(24)}}
    return "trace-id", "log/otel-json", json.dumps(obj)


def n_kubectl_pods():
    p = proj()
    rs_ = rs(10, LODG)
    out = ["NAME                                READY   STATUS    RESTARTS   AGE"]
    for _ in range(R.randint(3, 5)):
        out.append(f"{p}-{rs_}-{rs(5, LODG)}   1/1     Running   0          {R.randint(1, 59)}m")
    out.append(f"{p}-migrate-{epoch() // 60}-{rs(5, LODG)}   0/1     Completed 0          3h")
    return "k8s-names", "agent/kubectl-get-pods", f"$ kubectl get pods -n {pick(NS)}\n" + "\n".join(out)


def n_k8s_secret_list():
    p = proj()
    return "masked", "agent/kubectl-get-secrets", (f"$ kubectl get secrets -n {pick(NS)}\nNAME                    TYPE                 DATA   AGE\n"
                                                  f"{p}-db                  Opaque               2      41d\n{p}-tls                 kubernetes.io/tls    2      41d\n"
                                                  f"sh.helm.release.v1.{p}.v{R.randint(2, 30)}   helm.sh/release.v1   1      2d\n\n"
                                                  f"$ kubectl describe secret {p}-db\nName:         {p}-db\nType:  Opaque\n\nData\n====\npassword:  {R.randint(12, 40)} bytes\nusername:  {R.randint(3, 10)} bytes")


PNG_HEAD = bytes.fromhex("89504e470d0a1a0a0000000d49484452")


def n_png_datauri():
    data = PNG_HEAD + rb(R.randint(60, 140))
    return "base64-innocuous", "code/css-data-uri", f".icon-{pick(WORDS)} {{\n  background-image: url(\"data:image/png;base64,{b64(data)}\");\n}}"


def n_font():
    data = b"wOF2\x00\x01\x00\x00" + rb(R.randint(90, 160))
    return "base64-innocuous", "code/css-font-face", (f"@font-face {{\n  font-family: \"Inter\";\n  font-weight: {pick([400, 500, 700])};\n"
                                                     f"  src: url(data:font/woff2;base64,{b64(data)}) format(\"woff2\");\n}}")


def n_cursor():
    cur = b64u(json.dumps({"page": R.randint(2, 90), "after": uuid4(), "sort": "created_at"}).encode())
    obj = {"data": [{"id": R.randint(1000, 9999), "name": pick(WORDS)} for _ in range(2)], "has_more": True, "next_cursor": cur}
    return "base64-innocuous", "agent/api-response-cursor", f"$ curl -s 'https://api.{org()}.com/v1/items?limit=2' | jq .\n" + json.dumps(obj, indent=2)


def n_b64_json_config():
    raw = json.dumps({"theme": pick(["dark", "light"]), "features": ["beta-search", "new-nav"], "locale": pick(["de-DE", "en-GB", "ja-JP"])})
    return "base64-innocuous", "prose/decode-base64", f"what does this decode to? `{b64(raw.encode())}` it's in the `prefs` cookie"


def n_sourcemap():
    maps = ";".join(",".join(rs(R.randint(4, 6), AN + "+/") for _ in range(R.randint(3, 6))) for _ in range(4))
    return "minified", "code/sourcemap", json.dumps({"version": 3, "file": f"main.{hx(8)}.js", "sources": ["../src/index.ts"], "names": ["e", "t", "n"], "mappings": maps})


def n_minified():
    ids = [rs(1, LO) + rs(R.randint(0, 2), AN) for _ in range(8)]
    js = (f"!function(){{\"use strict\";var {ids[0]}=function({ids[1]},{ids[2]}){{return {ids[1]}.{rs(6, LO)}({ids[2]})}},"
          f"{ids[3]}=\"{rs(12, AN)}\",{ids[4]}=Object.freeze({{a:{R.randint(1, 99)},b:\"{rs(10, LODG)}\"}});"
          f"window.__{rs(5, LO)}=function(){{{ids[0]}({ids[4]},{ids[3]})}}}}();\n//# sourceMappingURL=app.{hx(8)}.js.map")
    return "minified", "code/minified-js", js


def n_webpack():
    out = [f"vite v5.4.{R.randint(1, 11)} building for production...", f"✓ {R.randint(300, 2000)} modules transformed."]
    for n in ["index", "vendor", "Dashboard", "Settings"]:
        out.append(f"dist/assets/{n}-{rs(8, URLS)}.js   {R.randint(1, 400)}.{R.randint(10, 99)} kB │ gzip: {R.randint(1, 90)}.{R.randint(10, 99)} kB")
    out.append(f"dist/assets/index-{rs(8, URLS)}.css   {R.randint(10, 90)}.{R.randint(10, 99)} kB")
    out.append(f"✓ built in {R.randint(2, 30)}.{R.randint(10, 99)}s")
    return "build-artifacts", "agent/vite-build", "\n".join(out)


def n_webpack_chunks():
    out = ["asset main.js 1.2 MiB [emitted] (name: main)"]
    for _ in range(3):
        out.append(f"asset {R.randint(100, 999)}.{hx(20)}.chunk.js {R.randint(3, 90)} KiB [emitted] [immutable]")
    out.append(f"webpack 5.96.1 compiled successfully in {R.randint(900, 9000)} ms")
    return "build-artifacts", "agent/webpack-build", "\n".join(out)


def n_css_colours():
    cols = {w: "#" + hx(6) for w in R.sample(WORDS, 5)}
    body = "\n".join(f"        {k}: '{v}'," for k, v in cols.items())
    return "css-hex", "code/tailwind-config", f"module.exports = {{\n  theme: {{\n    extend: {{\n      colors: {{\n{body}\n      }},\n    }},\n  }},\n}};"


def n_css_modules():
    return "css-hex", "code/css-modules", "\n".join(f".{pick(['Button', 'Card', 'Nav'])}_{pick(WORDS)}__{rs(5, URLS)} {{ color: #{hx(3)}; background: #{hx(8)}; }}" for _ in range(3))


def n_versions():
    out = ["$ pip freeze"] + [f"{p}=={ver()}" for p in R.sample(PYPKGS, 6)]
    out.append(f"{pick(PYPKGS)} @ git+https://github.com/{org()}/{proj()}.git@{hx(40)}")
    return "version-strings", "agent/pip-freeze", "\n".join(out)


def n_go_pseudo():
    mods = R.sample(GOMODS, 4)
    out = ["require ("] + [f"\t{m} v0.0.0-{ts().strftime('%Y%m%d%H%M%S')}-{hx(12)}" for m in mods[:2]] + \
          [f"\t{m} v{ver()}" for m in mods[2:]] + [")"]
    return "version-strings", "file/go-mod", "module github.com/" + org() + "/" + proj() + "\n\ngo 1.23\n\n" + "\n".join(out)


def n_paths():
    u = user()
    out = [f"/tmp/pytest-of-{u}/pytest-{R.randint(1, 300)}/test_upload_roundtrip0/{hx(12)}.bin",
           f"/var/folders/{rs(2, LODG)}/{rs(30, LODG)}/T/tmp{rs(8, LODG + '_')}/out.json",
           f"node_modules/.pnpm/@babel+core@7.26.0_{rs(26, LODG)}/node_modules/@babel/core/lib/index.js",
           f"/home/{u}/.cache/pre-commit/repo{rs(8, LODG + '_')}/py_env-python3/bin/ruff",
           f"C:\\Users\\{u}\\AppData\\Local\\Temp\\{uuid4()}\\setup.log"]
    return "paths", "log/file-list", "\n".join(R.sample(out, 4))


def n_s3_keys():
    out = [f"$ aws s3 ls s3://{proj()}-uploads-{acct()}/{ts().date()}/ --recursive | head"]
    for _ in range(R.randint(3, 5)):
        out.append(f"{ts().strftime('%Y-%m-%d %H:%M:%S')}  {R.randint(1000, 9000000):>9} uploads/{uuid4()}/{rs(22, URLS)}.{pick(['jpg', 'pdf', 'parquet'])}")
    return "s3-keys", "agent/aws-s3-ls", "\n".join(out)


def n_ssh_pub():
    lines = [f"ssh-ed25519 {b64(_sstr(b'ssh-ed25519') + _sstr(rb(32)))} {user()}@{pick(['laptop', 'ci', 'mbp'])}",
             f"ssh-rsa {b64(_sstr(b'ssh-rsa') + _sstr(bytes([1, 0, 1])) + _sstr(bytes([0]) + rb(256)))} {user()}@{pick(['desktop', 'bastion'])}"]
    return "public-key", "file/authorized-keys", "$ cat ~/.ssh/authorized_keys\n" + "\n".join(R.sample(lines, 2))


def n_ssh_keygen_pub_only():
    c = f"{user()}@{pick(['laptop', 'buildbox'])}"
    pub = b64(_sstr(b"ssh-ed25519") + _sstr(rb(32)))
    return "public-key", "agent/ssh-keygen-pub", (f"$ ssh-keygen -t ed25519 -C {c} -f ~/.ssh/id_gh -N ''\nGenerating public/private ed25519 key pair.\n"
                                                 f"Your identification has been saved in /home/{user()}/.ssh/id_gh\nThe key fingerprint is:\nSHA256:{b64(rb(32)).rstrip('=')} {c}\n"
                                                 f"$ cat ~/.ssh/id_gh.pub\nssh-ed25519 {pub} {c}\nAdd this public key to GitHub → Settings → SSH keys.")


def n_known_hosts():
    def one():
        blob = b64(_sstr(b"ecdsa-sha2-nistp256") + _sstr(b"nistp256") + _sstr(bytes([4]) + rb(64)))
        return f"|1|{b64(rb(20))}|{b64(rb(20))} ecdsa-sha2-nistp256 {blob}"
    return "public-key", "file/known-hosts", "\n".join(one() for _ in range(2))


def n_pem_public():
    der = bytes.fromhex("30820122300d06092a864886f70d01010105000382010f003082010a0282010100") + rb(256) + bytes.fromhex("0203010001")
    body = "\n".join(wrap(b64(der)))
    return "public-key", "file/pem-public-key", f"$ openssl rsa -in key.pem -pubout\nwriting RSA key\n-----BEGIN PUBLIC KEY-----\n{body}\n-----END PUBLIC KEY-----"


def n_pem_cert():
    body = "\n".join(wrap(b64(bytes.fromhex("308205") + rb(R.randint(700, 900)))))
    host = f"{proj()}.{org()}.com"
    return "public-key", "file/pem-certificate", (f"$ cat fullchain.pem\n# subject=CN={host}\n# issuer=C=US, O=Let's Encrypt, CN=R11\n"
                                                 f"-----BEGIN CERTIFICATE-----\n{body}\n-----END CERTIFICATE-----")


def n_age_pub():
    return "public-key", "file/sops-yaml", (f"# .sops.yaml\ncreation_rules:\n  - path_regex: secrets/.*\\.yaml$\n"
                                           f"    age: >-\n      {bech32('age', rb(32))},\n      {bech32('age', rb(32))}\n")


def n_wg_peer():
    return "public-key", "file/wireguard-peer", (f"# peers to add on the hub (public keys only)\n[Peer]\n# {user()}-laptop\nPublicKey = {wg_key()}\nAllowedIPs = 10.8.0.{R.randint(2, 250)}/32\n\n"
                                                f"[Peer]\n# {user()}-phone\nPublicKey = {wg_key()}\nAllowedIPs = 10.8.0.{R.randint(2, 250)}/32")


def n_gpg_list():
    fpr = hx(40).upper()
    return "public-key", "agent/gpg-list-keys", (f"$ gpg --list-keys --keyid-format=long\npub   ed25519/{fpr[-16:]} 2026-03-11 [SC]\n      {fpr}\n"
                                                f"uid                 [ultimate] {user().capitalize()} <{user()}@{org()}.com>\nsub   cv25519/{hx(16).upper()} 2026-03-11 [E]")


def n_jwt_header():
    hdr = b64u(json.dumps({"alg": pick(["HS256", "RS256", "ES256"]), "typ": "JWT"}, separators=(",", ":")).encode())
    return "jwt-header-only", "prose/jwt-header", pick([
        f"Every JWT starts with `{hdr}` because that's just base64url of the header. The payload is the second segment.",
        f"grep -c '{hdr}' access.log  # count tokens without printing them",
        f"if (!token.startsWith(\"{hdr}.\")) throw new Error(\"unexpected alg\");"])


PLACEHOLDERS = ["<token>", "${TOKEN}", "{{ .Values.password }}", "xxxxxxxxxxxxxxxx", "sk-...", "your-api-key-here",
                "********", "<YOUR_API_KEY>", "$OPENAI_API_KEY", "{{ secrets.NPM_TOKEN }}", "REPLACE_ME", "<password>",
                "${{ secrets.AWS_SECRET_ACCESS_KEY }}", "%(DB_PASSWORD)s", "{{ vault_db_password }}", "sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
                "ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX", "$(cat /run/secrets/api_key)", "...", "<redacted>"]


def n_placeholder():
    ph = pick(PLACEHOLDERS)
    tpl = pick([
        "export API_KEY={p}", "curl -H \"Authorization: Bearer {p}\" https://api.example.com/v1/me",
        "password: {p}\nusername: admin", "Set `OPENAI_API_KEY={p}` in your .env before running.",
        "  env:\n    - name: DB_PASSWORD\n      value: \"{p}\"", "DATABASE_URL=postgres://app:{p}@localhost:5432/app",
        "{{\"api_key\": \"{p}\", \"region\": \"eu\"}}", "token = \"{p}\"  # fill in"])
    return "placeholder", "docs/placeholder", tpl.format(p=ph)


def n_env_example():
    names = R.sample(["OPENAI_API_KEY", "STRIPE_SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN",
                      "SENTRY_DSN", "JWT_SECRET", "REDIS_PASSWORD", "SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY"], 5)
    if pick([True, False]):
        return "env-names", "file/env-example", "# .env.example -- copy to .env and fill in\n" + "\n".join(f"{n}=" for n in names)
    rows = "\n".join(f"| `{n}` | yes | {pick(['API key for the provider', 'connection string', 'signing secret', 'token with repo scope'])} |" for n in names)
    return "env-names", "docs/env-table", "| Variable | Required | Description |\n|---|---|---|\n" + rows


def n_code_env():
    return "code-reads-secret", "code/reads-env", pick([
        'api_key = os.environ["OPENAI_API_KEY"]\nclient = OpenAI(api_key=api_key)',
        "const stripe = new Stripe(process.env.STRIPE_SECRET_KEY!, { apiVersion: '2024-06-20' });",
        'token := os.Getenv("GITHUB_TOKEN")\nif token == "" {\n\tlog.Fatal("GITHUB_TOKEN not set")\n}',
        'let key = std::env::var("ANTHROPIC_API_KEY").expect("ANTHROPIC_API_KEY must be set");',
        "password = ENV.fetch(\"DATABASE_PASSWORD\") { raise KeyError, 'DATABASE_PASSWORD missing' }",
        f"secret = boto3.client('secretsmanager').get_secret_value(SecretId='{proj()}/prod/db')['SecretString']",
        f"$ vault kv get -field=password secret/{proj()}/db | pbcopy",
        f"env:\n  - name: API_TOKEN\n    valueFrom:\n      secretKeyRef:\n        name: {proj()}-env\n        key: api-token",
        f"DB_PASSWORD=$(gcloud secrets versions access latest --secret={proj()}-db-password)",
        "@Value(\"${app.jwt.secret}\")\nprivate String jwtSecret;"]) + pick(["", "\n", "\n# never hardcode the value"])


def n_prose():
    return "prose-no-value", "prose/tokens", pick([
        "Rotate the GitHub token every 90 days and never paste it into a chat; use `gh auth login` instead.",
        "The API key is read from the environment. If it's missing you'll get a 401, not a 500.",
        "Das Passwort steht im Tresor, nicht im Repo. Frag Lena nach Zugriff.",
        "Le token expire au bout d'une heure ; il faut appeler /refresh avec le refresh token.",
        "パスワードは1Passwordの「staging」保管庫にあります。",
        "密钥不要写进代码里，请放到环境变量 OPENAI_API_KEY 中。",
        "I revoked the leaked Stripe key and created a new restricted key with only charges:write.",
        "Your session cookie is HttpOnly, so document.cookie won't show it - that's expected.",
        "Contraseña olvidada? Usa el enlace de restablecimiento; el equipo de soporte nunca te la pedirá.",
        "The bearer token goes in the Authorization header, prefixed with 'Bearer ' and a space.",
        f"Token scopes needed: repo, workflow, read:org. Expiry: {R.randint(7, 90)} days.",
        "Пароль должен быть не короче 12 символов и содержать цифру."]) + pick(["", " Thanks!", "\n"])


def n_masked():
    return "masked", "agent/masked-output", pick([
        f"openai.AuthenticationError: Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: sk-proj-****{rs(4)}. You can find your API key at https://platform.openai.com/account/api-keys.', 'type': 'invalid_request_error', 'code': 'invalid_api_key'}}}}",
        f"$ terraform output\ndb_endpoint = \"{proj()}.cluster-{rs(12, LODG)}.eu-west-1.rds.amazonaws.com\"\ndb_password = <sensitive>\n$ terraform plan\n  ~ password = (sensitive value)",
        f"$ npm config list\n; \"user\" config from /home/{user()}/.npmrc\n\n//registry.npmjs.org/:_authToken = (protected)\nfund = false\n\n; node bin location = /usr/bin/node\n; node version = v20.18.1",
        f"$ aws configure list\n      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                <not set>             None    None\naccess_key     ****************{rs(4, B32U)} shared-credentials-file\nsecret_key     ****************{rs(4, B64A)} shared-credentials-file\n    region                {pick(REGIONS)}      config-file    ~/.aws/config",
        f"{iso()} ##[group]Run ./deploy.sh\n{iso()} env:\n{iso()}   VERCEL_TOKEN: ***\n{iso()}   NPM_TOKEN: ***",
        f"sqlalchemy.exc.OperationalError: (psycopg2.OperationalError) connection to server at \"db.internal\" (10.0.3.4), port 5432 failed: FATAL:  password authentication failed for user \"app\"\n(Background on this error at: https://sqlalche.me/e/20/e3q8)\nengine url: postgresql+psycopg2://app:***@db.internal:5432/app",
        f"$ gh auth status\ngithub.com\n  ✓ Logged in to github.com account {user()} (keyring)\n  - Token: gho_************************************\n  - Token scopes: 'gist', 'read:org', 'repo'",
        f"api_key: <redacted>\nclient_secret: [REDACTED]\npassword: '********'",
        f"Stripe key ending in …{rs(4)} was rolled at {iso()}; the old key is now restricted.",
        f"$ heroku config -a {proj()}\n=== {proj()} Config Vars\nDATABASE_URL: postgres://u****:****@ec2-{ip().replace('.', '-')}.compute-1.amazonaws.com:5432/d{rs(13, LODG)}"])


def n_doc_examples():
    return "doc-example", "docs/example-marked", pick([
        "# Example from the AWS docs (not a real key)\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "For example: `export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE` (this is the documentation sample key).",
        "Example token format: `ghp_EXAMPLEEXAMPLEEXAMPLEEXAMPLEEXAMPLE0` (36 chars after the prefix).",
        "Example (placeholder values):\n```\nSTRIPE_SECRET_KEY=sk_test_EXAMPLE_DO_NOT_USE\nSTRIPE_WEBHOOK_SECRET=whsec_EXAMPLE\n```",
        "// example from README - replace with your own\nconst client = new Client({ apiKey: 'EXAMPLE-API-KEY-0000' });",
        "Example connection string: `postgresql://user:password@localhost:5432/mydb` (replace user and password)."])


def n_test_cards():
    card = pick(["4242 4242 4242 4242", "4000 0000 0000 9995", "5555 5555 5555 4444", "4000 0025 0000 3155", "3782 822463 10005"])
    return "test-card", "docs/test-card", pick([
        f"Use the Stripe test card {card} with any future expiry and any CVC.",
        f"// test data only\nconst TEST_CARD = '{card.replace(' ', '')}'; // stripe test mode, declines never happen",
        f"| scenario | test card number |\n|---|---|\n| success | {card} |\n| 3DS required | 4000 0027 6000 3184 |"])


def bcrypt():
    return f"$2b$12${rs(53, AN + './')}"


def argon2():
    return f"$argon2id$v=19$m=65536,t=3,p=4${b64(rb(16)).rstrip('=')}${b64(rb(32)).rstrip('=')}"


def n_password_hash():
    if pick([True, False]):
        rows = "\n".join(f"  {R.randint(1, 500):>3} | {user()}@{org()}.com | {pick([bcrypt, argon2])()}" for _ in range(3))
        return "password-hash", "agent/psql-password-hash", f"=> SELECT id, email, password_hash FROM users LIMIT 3;\n id  |     email     | password_hash\n-----+---------------+--------------\n{rows}\n(3 rows)"
    return "password-hash", "file/htpasswd", f"$ cat .htpasswd   # bcrypt hashes, not passwords\n{user()}:{bcrypt()}\n{user()}:{bcrypt()}"


def n_checksums():
    files = [f"{proj()}_{ver()}_{pick(['linux', 'darwin'])}_{pick(['amd64', 'arm64'])}.tar.gz" for _ in range(3)]
    return "checksum", "file/sha256sums", "$ cat checksums.txt\n" + "\n".join(f"{hx(64)}  {f}" for f in files) + f"\n$ sha256sum -c checksums.txt\n{files[0]}: OK"


def n_etag():
    return "checksum", "log/http-response-headers", (f"< HTTP/1.1 200 OK\n< ETag: \"{hx(32)}\"\n< Content-MD5: {b64(rb(16))}\n"
                                                     f"< x-amz-id-2: {b64(rb(48))}\n< x-amz-request-id: {rs(16, UPDG)}\n< Last-Modified: {httpdate()}")


def n_aws_ids():
    return "cloud-ids", "agent/aws-describe", json.dumps({"Reservations": [{"Instances": [{
        "InstanceId": "i-0" + hx(16), "ImageId": "ami-0" + hx(16), "SubnetId": "subnet-0" + hx(16), "VpcId": "vpc-0" + hx(16),
        "SecurityGroups": [{"GroupId": "sg-0" + hx(16), "GroupName": "web"}],
        "IamInstanceProfile": {"Arn": f"arn:aws:iam::{acct()}:instance-profile/{proj()}", "Id": "AIPA" + rs(17, B32U)}}]}]}, indent=2)


def n_tf_state():
    return "cloud-ids", "file/terraform-state", json.dumps({"version": 4, "terraform_version": "1.9.8", "serial": R.randint(1, 400),
                                                            "lineage": uuid4(), "outputs": {"bucket": {"value": f"{proj()}-{hx(8)}", "type": "string"}},
                                                            "resources": []}, indent=2)


def n_ci_cache():
    k = f"Linux-pnpm-store-{hx(64)}"
    return "checksum", "ci/cache-restore", (f"{iso()} Cache hit for: {k}\n{iso()} Received {R.randint(10, 400)} of {R.randint(400, 900)} ({R.randint(1, 99)}.0%), 12.3 MBs/sec\n"
                                            f"{iso()} Cache restored successfully\n{iso()} Cache restored from key: {k}")


def n_mongo_ids():
    return "uuid", "agent/mongosh-find", "\n".join(f"{{ _id: ObjectId('{hx(24)}'), sku: '{rs(8, UPDG)}', qty: {R.randint(1, 90)} }}" for _ in range(3))


def n_publishable():
    return "publishable-key", "code/frontend-publishable", pick([
        f"// publishable key: safe to ship in the browser bundle\nconst stripe = await loadStripe('pk_live_51{rs(97)}');",
        f"<script>\n  // Stripe publishable key (public by design)\n  window.STRIPE_PK = \"pk_live_51{rs(97)}\";\n</script>"])


def n_host_fingerprint():
    return "public-key", "agent/ssh-first-connect", (f"The authenticity of host 'bastion.{org()}.com ({ip()})' can't be established.\n"
                                                    f"ED25519 key fingerprint is SHA256:{b64(rb(32)).rstrip('=')}.\nThis key is not known by any other names.\n"
                                                    "Are you sure you want to continue connecting (yes/no/[fingerprint])? yes")


def n_openssh_header_only():
    return "prose-no-value", "prose/key-format", ("An unencrypted OpenSSH key always begins with `b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ` - "
                                                  "that's just base64 for `openssh-key-v1\\0` + `none` + `none`, so it is not secret by itself.")


def n_hex_ids_misc():
    return "trace-id", "log/app", (f"{iso()} WARN  stripe.webhook event=evt_{rs(24)} idempotency_key={uuid4()} duplicate=true\n"
                                   f"{iso()} INFO  payment_intent=pi_{rs(24)} customer=cus_{rs(14)} status=succeeded")


def n_nonce_csp():
    return "base64-innocuous", "log/http-response-headers", (f"< content-security-policy: script-src 'self' 'nonce-{b64(rb(16))}' 'strict-dynamic'; "
                                                             f"style-src 'self' 'sha256-{b64(rb(32))}'")


def n_sri_html():
    return "lockfile-integrity", "code/html-sri", (f'<script src="https://cdn.jsdelivr.net/npm/{pick(PKGS)}@{ver()}/dist/index.min.js"\n'
                                                   f'        integrity="sha384-{b64(rb(48))}"\n        crossorigin="anonymous"></script>')


NEGS = [
    (n_package_lock, 5), (n_yarn_lock, 5), (n_pnpm_lock, 4), (n_go_sum, 5), (n_cargo_lock, 4), (n_pip_hash, 4), (n_pip_wheel, 4),
    (n_docker_digest, 4), (n_docker_build, 4), (n_git_log, 5), (n_git_show, 5), (n_git_prose, 4), (n_git_diff_header, 4),
    (n_uuids, 4), (n_ulid_log, 4), (n_trace_ids, 5), (n_otel, 4), (n_kubectl_pods, 4), (n_k8s_secret_list, 3),
    (n_png_datauri, 4), (n_font, 4), (n_cursor, 5), (n_b64_json_config, 4), (n_sourcemap, 3), (n_minified, 4),
    (n_webpack, 4), (n_webpack_chunks, 3), (n_css_colours, 4), (n_css_modules, 3), (n_versions, 4), (n_go_pseudo, 3),
    (n_paths, 4), (n_s3_keys, 4), (n_ssh_pub, 4), (n_ssh_keygen_pub_only, 3), (n_known_hosts, 3), (n_pem_public, 4),
    (n_pem_cert, 4), (n_age_pub, 3), (n_wg_peer, 3), (n_gpg_list, 3), (n_jwt_header, 4), (n_placeholder, 10),
    (n_env_example, 5), (n_code_env, 8), (n_prose, 8), (n_masked, 10), (n_doc_examples, 5), (n_test_cards, 5),
    (n_password_hash, 5), (n_checksums, 4), (n_etag, 4), (n_aws_ids, 4), (n_tf_state, 3), (n_ci_cache, 3),
    (n_mongo_ids, 3), (n_publishable, 3), (n_host_fingerprint, 3), (n_openssh_header_only, 1), (n_hex_ids_misc, 3),
    (n_nonce_csp, 3), (n_sri_html, 3),
]


# --------------------------------------------------------------------------
# assembly
# --------------------------------------------------------------------------
def main():
    rows, seen = [], set()

    def add(text, secret, fam, kind, ctx):
        if secret is not None:
            assert secret and secret in text, (fam, kind, ctx, secret)
        if text in seen:
            return False
        seen.add(text)
        rows.append({"text": text, "secret": secret, "source": f"gen-held7:{fam}:{kind}:{ctx}"})
        return True

    deck = []

    def draw(f):
        nonlocal deck
        for _ in range(400):
            if not deck:
                deck = GENERIC[:]
                R.shuffle(deck)
            for i in range(len(deck) - 1, -1, -1):
                g = deck[i]
                if g.http and f.auth is None:
                    continue
                return deck.pop(i)
            deck = []
        raise RuntimeError(f.fam)

    for f in FAMS:
        made = 0
        for sp in f.spec:
            for _ in range(20):
                ctx, text, sec = sp(f)
                if add(text, sec, f.fam, f.kind, ctx):
                    made += 1
                    break
        tries = 0
        while f.generic and made < f.n:
            tries += 1
            assert tries < 200, f.fam
            g = draw(f)
            v = f.gen()
            ctx, text = g.fn(f, f.key(), v)
            if v not in text:
                continue
            if add(text, v, f.fam, f.kind, ctx):
                made += 1

    for fn, cnt in NEGS:
        made = 0
        for _ in range(cnt * 30):
            if made >= cnt:
                break
            kind, ctx, text = fn()
            if add(text, None, "negative", kind, ctx):
                made += 1

    out = Path(__file__).with_name("gen_heldout7.jsonl")
    with out.open("w", encoding="utf-8", newline="\n") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    pos = sum(r["secret"] is not None for r in rows)
    print(f"wrote {len(rows)} rows ({pos} positive, {len(rows) - pos} negative) to {out.name}")


if __name__ == "__main__":
    main()
