#!/usr/bin/env python3
"""Held-out redaction corpus #6 -- written BLIND on 2026-12-08.

How it was written
------------------
The author read nothing of the redactor (nothing under server/), none of the
tests, and no other generator or corpus -- only the first 3 lines of
gen_heldout5.jsonl, to copy the row format.  Secret formats come from
general knowledge of public vendor token shapes (prefix, length, alphabet,
checksum-like parts); contexts imitate what people paste into AI coding
sessions and what agent tools print.  Every value is random from
``random.Random(6_2026_12_08)``; none is a real credential.  Stdlib only,
deterministic (no clock, no os.urandom, no set ordering), Python 3.10+.

Output: gen_heldout6.jsonl next to this file, one JSON object per line:

    {"text": str, "secret": str | null, "source": "gen-held6:<family>:<kind>:<context>"}

``secret`` is the EXACT substring of ``text`` that must not survive
redaction (asserted to occur in ``text``).  ``secret: null`` marks a
NEGATIVE row (family ``negative``): it holds no secret and a good redactor
must return it unchanged.

Conventions for what ``secret`` is
----------------------------------
* key=value / key: value / env / config / code literal: the value, without
  quotes.  ``Authorization: Bearer X`` / ``Token X`` / ``SSWS X`` /
  ``X-Api-Key: X``: X (scheme word excluded).
* ``Authorization: Basic B``: B (the base64 blob).  ``curl -u user:P``: P.
* URL with userinfo (``scheme://user:P@host``): P exactly as it appears in
  the text, i.e. percent-encoded when the password has reserved characters.
  Go/JDBC/ADO.NET DSNs: the password field.
* Webhook URLs (Slack, Discord) and bot-token URLs (Telegram): the token
  path segment (Telegram: the whole ``<id>:AA...`` token).
* Signed URLs: the signature parameter value (S3 ``X-Amz-Signature``, GCS
  ``X-Goog-Signature``, Azure SAS ``sig`` -- percent-encoded as it appears,
  CloudFront ``Signature``).
* PEM private key blocks (RSA/EC/PKCS#8/PGP): the first base64 body line.
  OpenSSH private keys: the body line that carries the private scalar
  (the first lines of an OpenSSH key are a fixed public header).  When the
  PEM sits inside a JSON string (GCP service-account JSON), the same line,
  which stays contiguous between the ``\\n`` escapes.
* GCP service-account JSON: either ``private_key_id`` (40 hex) or the first
  body line of ``private_key``, per the row's kind.
* Azure storage connection string: the ``AccountKey`` value.
* kubeconfig ``client-key-data`` / docker ``config.json`` ``auth`` / k8s
  Secret ``data:``: the whole base64 value as it appears.
* Laravel ``APP_KEY=base64:K``: K (the payload after ``base64:``).
  ``FLY_API_TOKEN="FlyV1 fm2_..."``: the ``fm2_...`` part.
* htpasswd: the hash after ``user:`` (as it appears, ``$$``-doubled inside
  docker-compose labels).  .netrc / .pgpass / git-credentials: the password.
* TOTP: the base32 ``secret=`` value of ``otpauth://`` (or the spaced groups
  shown as "enter this key manually").  BIP39: the whole space-separated
  phrase (words are from the BIP39 English list; the checksum word is NOT
  valid -- the list order is not embedded here).
* Cookies: the session cookie value.  JWTs: the whole JWT.  Passwords in
  prose (any language): the password itself, punctuation around it excluded.
* Values whose key and value are split across lines with a shell/Python/
  PowerShell line continuation keep the value itself on one line.

Decisions on ambiguous items
----------------------------
* LEFT OUT entirely (neither positive nor negative): Firebase web-config
  ``apiKey`` (AIza keys meant to ship in browsers), Stripe publishable keys
  (``pk_live_``), Sentry DSNs that carry only the public key, Algolia
  search-only keys, the jwt.io sample token, Google Docs/Drive link ids,
  CSRF/OAuth ``state``/PKCE values, webhook HMAC signature headers, password
  hashes in DB dumps (other than htpasswd, which is a positive).
* NEGATIVE: AWS documentation keys (AKIAIOSFODNN7EXAMPLE and its
  wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY partner) shown in clearly
  documentary context; vendor-published card TEST numbers (4242 4242 4242
  4242 etc.) explicitly labelled as test data; public keys of every kind
  (SSH, PEM PUBLIC KEY, certificates, DKIM p=, WireGuard PublicKey, age
  recipients, PGP signatures, Ethereum addresses and tx hashes); masked
  values (``****``, ``sk-...Xy7Q``, ``(sensitive value)``); placeholders
  (``<your-api-key>``, ``xxxx``, ``sk-...``, ``${VAR}``,
  ``{{ secrets.X }}``, ``changeme`` when marked as a default to change,
  ``REPLACE_ME``, ``your_password_here``); references (``op://``, Vault
  paths, ``secretKeyRef``, ARNs); SOPS-encrypted ``ENC[AES256_GCM,...]``
  values (ciphertext designed to be committed); pagination cursors that are
  base64 of innocuous JSON.
* POSITIVE although they look like ids: UUID-shaped secrets under a secret
  key name (Scaleway secret key, Postmark server token, Heroku legacy API
  key, Railway token), 64-hex Ethereum private keys (while a 64-hex tx hash
  is a negative), AWS / Alibaba access key IDs, kubeadm bootstrap tokens.
  Test-mode keys (``sk_test_``) are not used at all; only live-looking keys.
* A positive row may contain other credential-looking values besides its
  ``secret`` (an access key id next to its secret key, a public key next to
  a private one, an AWS credential inside a presigned URL); only ``secret``
  is labelled, nothing is claimed about the rest of a positive row.
* Positive rows carry benign near-misses too (git SHAs, UUIDs, image
  digests in the surrounding log/config), as real pastes do.
"""
import base64
import json
import random
import string
import struct
import zlib
from pathlib import Path
from urllib.parse import quote

R = random.Random(6_2026_12_08)
OUT = Path(__file__).with_name("gen_heldout6.jsonl")

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DIG = string.digits
AN = UP + LO + DIG
ANL = LO + DIG
ANU = UP + DIG
HEX = "0123456789abcdef"
HEXU = HEX.upper()
B64 = AN + "+/"
B64U = AN + "-_"
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"
K8SN = "bcdfghjklmnpqrstvwxz2456789"
NOW = 1796688000  # 2026-12-08T00:00:00Z, fixed


def rs(a, n):
    return "".join(R.choice(a) for _ in range(n))


def rb(n):
    return bytes(R.getrandbits(8) for _ in range(n))


def pick(seq):
    return R.choice(seq)


def b64(n):
    return base64.b64encode(rb(n)).decode()


def b64u(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def uuid4():
    h = rs(HEX, 32)
    h = h[:12] + "4" + h[13:16] + pick("89ab") + h[17:]
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ulid():
    return "01J" + rs("0123456789ABCDEFGHJKMNPQRSTVWXYZ", 23)


def ts(offset=None):
    t = NOW + (R.randint(0, 80000) if offset is None else offset)
    d = 8 + (t - NOW) // 86400
    s = (t - NOW) % 86400
    return f"2026-12-{d:02d}T{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"


def pod(base):
    return f"{base}-{rs(K8SN, pick([9, 10]))}-{rs(K8SN, 5)}"


B62 = DIG + UP + LO


def b62(n, w):
    s = ""
    while n:
        n, r = divmod(n, 62)
        s = B62[r] + s
    return s.rjust(w, "0")


def gh(prefix):
    body = rs(AN, 30)
    return prefix + body + b62(zlib.crc32(body.encode()) & 0xFFFFFFFF, 6)


def jwt(payload, alg="HS256"):
    h = {"alg": alg, "typ": "JWT"}
    siglen = 32
    if alg.startswith("RS"):
        h["kid"] = rs(B64U, 27)
        siglen = 256
    return ".".join([
        b64u(json.dumps(h, separators=(",", ":")).encode()),
        b64u(json.dumps(payload, separators=(",", ":")).encode()),
        b64u(rb(siglen)),
    ])


BIP = ("abandon ability able about above absent absorb abstract absurd abuse access accident account accuse "
       "achieve acid acoustic acquire across act action actor actress actual adapt add addict address adjust "
       "admit adult advance advice aerobic affair afford afraid again age agent agree ahead aim air airport "
       "aisle alarm album alcohol alert alien all alley allow almost alone alpha already also alter always "
       "amateur amazing among amount amused analyst anchor ancient anger angle angry animal ankle announce "
       "annual another answer antenna antique anxiety any apart apology appear apple approve april arch "
       "arctic area arena argue arm armed armor army around arrange arrest arrive arrow art artefact artist "
       "artwork ask aspect assault asset assist assume asthma athlete atom attack attend attitude attract "
       "auction audit august aunt author auto autumn average avocado avoid awake aware away awesome awful "
       "awkward axis baby bachelor bacon badge bag balance balcony ball bamboo banana banner bar barely "
       "bargain barrel base basic basket battle beach bean beauty because become beef before begin behave "
       "behind believe below belt bench benefit best betray better between beyond bicycle bid bike bind "
       "biology bird birth bitter black blade blame blanket blast bleak bless blind blood blossom blouse "
       "blue blur blush board boat body boil bomb bone bonus book boost border boring borrow boss bottom "
       "bounce box boy bracket brain brand brass brave bread breeze brick bridge brief bright bring brisk "
       "broccoli broken bronze broom brother brown brush bubble buddy budget buffalo build bulb bulk bullet "
       "bundle bunker burden burger burst bus business busy butter buyer buzz cabbage cabin cable cactus "
       "cage cake call calm camera camp can canal cancel candy cannon canoe canvas canyon capable capital "
       "captain car carbon card cargo carpet carry cart case cash casino castle casual cat catalog catch "
       "category cattle caught cause caution cave ceiling celery cement census century cereal certain chair "
       "chalk champion change chaos chapter charge chase chat cheap check cheese chef cherry chest chicken "
       "chief child chimney choice choose chronic chuckle chunk churn cigar cinnamon circle citizen city "
       "civil claim clap clarify claw clay clean clerk clever click client cliff climb clinic clip clock "
       "wagon wait walk wall walnut want warfare warm warrior wash wasp waste water wave way wealth weapon "
       "wear weasel weather web wedding weekend weird welcome west wet whale what wheat wheel when where "
       "whip whisper wide width wife wild will win window wine wing wink winner winter wire wisdom wise "
       "wish witness wolf woman wonder wood wool word work world worry worth wrap wreck wrestle wrist write "
       "wrong yard year yellow you young youth zebra zero zone zoo").split()

WORDS = ["Marmalade", "Tangerine", "Blueprint", "Harbor", "Kestrel", "Juniper", "Orchid", "Falcon",
         "Granite", "Velvet", "Copper", "Nimbus", "Saffron", "Quartz", "Lantern", "Meadow", "Pioneer",
         "Cobalt", "Zephyr", "Walnut", "Sunflower", "Basilisk", "Mistral", "Pelican"]


def pw():
    k = R.randrange(7)
    if k == 0:
        return pick(WORDS) + str(R.randint(10, 9999)) + pick("!#%&*?@")
    if k == 1:
        return rs(AN + "!#%^*-_=+@:/?", R.randint(13, 22)) + pick(AN)
    if k == 2:
        return "-".join(pick(BIP) for _ in range(4))
    if k == 3:
        return rs(AN, R.randint(24, 32))
    if k == 4:
        w = pick(WORDS).lower()
        w = w.replace("a", "4").replace("e", "3").replace("o", "0").replace("i", "1")
        return w[0].upper() + w[1:] + pick(["#", "!", "@", "_"]) + str(R.randint(1, 99))
    if k == 5:
        return pick(WORDS).lower() + pick(["_", ".", "-"]) + pick(WORDS).lower() + str(R.randint(1, 99))
    return rs(AN, 8) + pick("!@#%") + rs(AN, 8)


def pem_body(prefix, total, width=64):
    body = prefix + rs(B64, total - len(prefix))
    if R.random() < 0.5:
        body = body[:-1] + "="
    return [body[i:i + width] for i in range(0, len(body), width)]


def pem(label, lines):
    return f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----"


def rsa_lines():
    return pem_body(pick(["MIIEowIBAAKCAQEA", "MIIEpAIBAAKCAQEA", "MIIEogIBAAKCAQEA"]), R.choice([1588, 1592, 1596]))


def pkcs8_lines():
    return pem_body("MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQ", 1624)


def ec_lines():
    body = "MHcCAQEEI" + rs(B64, 43) + "oAoGCCqGSM49AwEHoUQDQgAE" + rs(B64, 86)
    return [body[i:i + 64] for i in range(0, len(body), 64)]


def openssh_key(comment):
    def sstr(b):
        return struct.pack(">I", len(b)) + b
    pk = rb(32)
    sk = rb(32)
    chk = rb(4)
    pub = sstr(b"ssh-ed25519") + sstr(pk)
    priv = chk + chk + sstr(b"ssh-ed25519") + sstr(pk) + sstr(sk + pk) + sstr(comment.encode())
    pad = 1
    while len(priv) % 8:
        priv += bytes([pad])
        pad += 1
    blob = b"openssh-key-v1\x00" + sstr(b"none") + sstr(b"none") + sstr(b"") + struct.pack(">I", 1) + sstr(pub) + sstr(priv)
    enc = base64.b64encode(blob).decode()
    lines = [enc[i:i + 70] for i in range(0, len(enc), 70)]
    off = blob.index(sk)
    mid = (off + 16) * 4 // 3  # a char well inside the private scalar
    secret = lines[mid // 70]
    return pem("OPENSSH PRIVATE KEY", lines), secret


def pgp_lines():
    body = pem_body("lQdGBG" + rs(B64, 4) + "ARAA", 1800)
    return body


# --------------------------------------------------------------------------
# filler
SERVICES = ["billing-api", "ingest-worker", "web", "notifier", "search-svc", "auth-gateway", "etl", "admin"]
HOSTS = ["ip-10-0-3-17", "devbox", "mbp-ana", "ci-runner-7", "build-42", "ws-lucas"]
PROMPTS = ["$ ", "dev@ip-10-0-3-17:~/billing$ ", "❯ ", "% ", "root@7f3c9a1e2b4d:/app# ",
           "(venv) ~/src/ingest $ ", "bash-5.2$ ", "➜  web git:(main) ✗ ", "ana@mbp ~/work/api % "]
SHELL_FOLLOW = [
    ("python scripts/check_keys.py", "checking credentials... FAILED (401 Unauthorized)"),
    ("npm run dev", "\n> web@0.1.0 dev\n> next dev\n\n  ▲ Next.js 15.0.3\n  - Local:        http://localhost:3000\n\n ✓ Ready in 2.1s"),
    ("go run ./cmd/worker", "2026/12/08 10:14:03 worker: starting with 4 goroutines\n2026/12/08 10:14:04 worker: upstream returned 403 Forbidden"),
    ("cargo run --release", "   Compiling ingest v0.4.1 (/home/dev/ingest)\n    Finished `release` profile [optimized] target(s) in 41.20s\n     Running `target/release/ingest`\nError: upstream rejected credentials (401)"),
    ("docker compose up -d api", "[+] Running 2/2\n ✔ Container billing-db-1   Healthy\n ✔ Container billing-api-1  Started"),
    ("pytest -q tests/integration", "F.\n================================== FAILURES ===================================\nE   AssertionError: expected 200, got 401\n1 failed, 1 passed in 3.12s"),
    ("uv run python -m app.sync", "INFO  sync: fetched 0 records\nWARN  sync: auth failed, retrying in 5s"),
    ("node index.js", "Listening on :3000\nError: Request failed with status code 401"),
]
CHAT_INTRO = [
    "Here's my config, it fails on startup:",
    "ok so I ran this and got a 403, what's wrong?",
    "Can you see why this isn't being picked up?",
    "I hardcoded it for now to test, is this fine?",
    "this is what I have in the file right now",
    "Still broken after the change. Current setup:",
    "why does the client ignore this??",
    "Pasting the relevant part:",
]


def needs_quote(v):
    return any(c in v for c in " ;&|<>()$`!#*?[]{}~^")


def shq(v):
    return '"' if needs_quote(v) else pick(["", '"', "'"])


def yq(v):
    if v[0] in "!&*%@`{[|>'\"-?:#,=+/" or ": " in v or " #" in v or "#" in v:
        return f'"{v}"'
    return pick([v, f'"{v}"', f"'{v}'"])


def k_snake(n):
    return n.lower()


def k_camel(n):
    p = n.lower().split("_")
    return p[0] + "".join(x.title() for x in p[1:])


def k_short(n):
    p = n.lower().split("_")
    return "_".join(p[-2:]) if len(p) > 2 else n.lower()


def k_kebab(n):
    return n.lower().replace("_", "-")


def cfgkey(n):
    return pick([k_snake, k_camel, k_short, k_kebab, k_snake])(n)


def section(n):
    p = n.lower().split("_")
    return p[0] if len(p) > 1 else "auth"


def host(sp):
    if "host" not in sp:
        sp["host"] = pick(["api.acme.internal", "internal-api.example.com", "localhost:8080", "svc.example.net"])
    return sp["host"]


def hdr(sp, v):
    h = sp.get("hdr", "bearer")
    if h == "bearer":
        return "Authorization", f"Bearer {v}"
    name, fmt = h
    return name, fmt.format(v=v)


def benign_env():
    base = [
        "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
        f"HOSTNAME={pod(pick(SERVICES))}", "HOME=/root", "LANG=C.UTF-8", "PYTHON_VERSION=3.12.7",
        "TERM=xterm", "NODE_ENV=production", f"PORT={pick([3000, 8000, 8080])}", "LOG_LEVEL=info",
        "KUBERNETES_SERVICE_HOST=10.96.0.1", "KUBERNETES_PORT=tcp://10.96.0.1:443", "PWD=/app",
        "SHLVL=1", "TZ=UTC", f"OTEL_SERVICE_NAME={pick(SERVICES)}", "GOMAXPROCS=4",
        "PIP_NO_CACHE_DIR=1", "NODE_VERSION=22.11.0", "YARN_VERSION=1.22.22", "AWS_REGION=eu-west-1",
        "GIT_COMMIT=" + rs(HEX, 40), "APP_VERSION=1." + str(R.randint(0, 40)) + "." + str(R.randint(0, 9)),
    ]
    R.shuffle(base)
    return base[:R.randint(7, 12)]


def benign_dotenv():
    base = ["PORT=3000", "LOG_LEVEL=debug", "NODE_ENV=development", "DATABASE_POOL_SIZE=10",
            "FEATURE_NEW_CHECKOUT=true", "PUBLIC_URL=https://app.example.com", "CACHE_TTL_SECONDS=300",
            "SENTRY_ENVIRONMENT=staging", "REDIS_HOST=localhost", "SMTP_PORT=587",
            "NEXT_PUBLIC_APP_NAME=Segue Demo", "TZ=Europe/Berlin", "WORKERS=4"]
    R.shuffle(base)
    return base[:R.randint(3, 6)]


# --------------------------------------------------------------------------
# generic contexts: fn(sp, name, value) -> text | (text, secret_override)
def c_export(sp, n, v):
    p = pick(PROMPTS)
    q = shq(v)
    cmd, out = pick(SHELL_FOLLOW)
    if R.random() < 0.55:
        return f"{p}export {n}={q}{v}{q}\n{p}{cmd}\n{out}"
    return f"{p}{n}={q}{v}{q} {cmd}\n{out}"


def c_printenv(sp, n, v):
    lines = benign_env()
    lines.insert(R.randint(0, len(lines)), f"{n}={v}")
    cmd = pick(["printenv", "env | sort", f"docker exec -it {pick(SERVICES)}-1 env",
                f"kubectl exec deploy/{pick(SERVICES)} -- env", "env"])
    if "sort" in cmd:
        lines.sort()
    return f"{pick(PROMPTS)}{cmd}\n" + "\n".join(lines)


def c_setdump(sp, n, v):
    q = "'" if needs_quote(v) else ""
    lines = ["BASH=/bin/bash", "BASHOPTS=checkwinsize:cmdhist:complete_fullquote:expand_aliases",
             "BASH_VERSION='5.2.21(1)-release'", "COLUMNS=148", "HISTFILE=/home/dev/.bash_history",
             "HOSTTYPE=x86_64", "IFS=$' \\t\\n'", "LINES=41", "MACHTYPE=x86_64-pc-linux-gnu",
             "OPTERR=1", "OSTYPE=linux-gnu", "PPID=" + str(R.randint(300, 90000)), "PS4='+ '"]
    lines.append(f"{n}={q}{v}{q}")
    lines.sort()
    return f"{pick(PROMPTS)}set | head -40\n" + "\n".join(lines)


def c_ps_env(sp, n, v):
    rows = [("ALLUSERSPROFILE", "C:\\ProgramData"), ("COMPUTERNAME", "DESKTOP-" + rs(ANU, 7)),
            ("HOMEPATH", "\\Users\\dev"), ("NUMBER_OF_PROCESSORS", "16"), ("OS", "Windows_NT"),
            (n, v), ("PROCESSOR_ARCHITECTURE", "AMD64"), ("USERNAME", "dev")]
    rows.sort()
    w = max(len(a) for a, _ in rows) + 1
    body = "\n".join(f"{a.ljust(w)}{b}" for a, b in rows)
    return f"PS C:\\Users\\dev\\src> Get-ChildItem Env: | Sort-Object Name\n\n{'Name'.ljust(w)}Value\n{'----'.ljust(w)}-----\n{body}"


def c_powershell(sp, n, v):
    if R.random() < 0.5:
        return f"PS C:\\work\\api> $env:{n} = \"{v}\"\nPS C:\\work\\api> dotnet run\nInfo: Microsoft.Hosting.Lifetime[14]\n      Now listening on: http://localhost:5080"
    return f"[Environment]::SetEnvironmentVariable(\"{n}\", \"{v}\", \"User\")\n# then restart the terminal so the SDK picks it up"


def c_dotenv(sp, n, v):
    lines = benign_dotenv()
    form = pick(["{n}={v}", "{n}=\"{v}\"", "{n}='{v}'", "{n} = {v}", "export {n}={v}"])
    if needs_quote(v) and "\"" not in form and "'" not in form:
        form = "{n}=\"{v}\""
    lines.insert(R.randint(0, len(lines)), form.format(n=n, v=v))
    lines.insert(0, f"# --- {section(n)} ---" if R.random() < 0.5 else "# local overrides, do not commit")
    head = pick(["", f"{pick(PROMPTS)}cat .env\n", "`.env.local`:\n\n", "# .env.production\n", f"{pick(PROMPTS)}cat apps/{pick(SERVICES)}/.env\n"])
    return head + "\n".join(lines)


def c_yaml(sp, n, v):
    key = cfgkey(n)
    env = pick(["dev", "staging", "prod", "local"])
    head = pick([f"# config/{env}.yaml\n", f"$ cat deploy/values-{env}.yaml\n", "", f"`settings.{env}.yml`:\n\n"])
    return (f"{head}app:\n  name: {pick(SERVICES)}\n  port: {pick([3000, 8000, 8080, 9090])}\n"
            f"{section(n)}:\n  endpoint: https://{host(sp)}\n  {key}: {yq(v)}\n  timeout: {pick(['10s', '30s', '5000'])}\n"
            f"logging:\n  level: {pick(['info', 'debug', 'warn'])}")


def c_toml_fix(sp, n, v):
    key = pick([k_snake(n), k_short(n)])
    q = pick(['"', "'"])
    return (f"# {pick(['config.toml', 'settings.toml', 'Config.toml', '.cargo/config.toml'])}\n"
            f"[server]\nhost = \"0.0.0.0\"\nport = {pick([8000, 8080])}\n\n[{section(n)}]\n"
            f"base_url = \"https://{host(sp)}\"\n{key} = {q}{v}{q}\nretries = 3")


def c_ini(sp, n, v):
    key = pick([k_snake(n), k_short(n), n])
    sep = pick([" = ", "=", ": "])
    return (f"; {pick(['app.ini', 'settings.cfg', 'config.ini', 'setup.cfg'])}\n[general]\ndebug = false\n\n"
            f"[{section(n)}]\nurl{sep}https://{host(sp)}\n{key}{sep}{v}\nverify_ssl{sep}true")


def c_json(sp, n, v):
    key = pick([k_camel(n), k_snake(n), n, k_short(n)])
    obj = {"name": pick(SERVICES), "env": pick(["staging", "production"]),
           section(n): {"baseUrl": f"https://{host(sp)}", key: v, "timeoutMs": pick([5000, 15000])},
           "features": {"betaSearch": R.random() < 0.5}}
    head = pick(["", "appsettings.json:\n", f"{pick(PROMPTS)}cat config/secrets.json\n", "```json\n"])
    body = json.dumps(obj, indent=pick([2, 4]), ensure_ascii=False)
    return head + body + ("\n```" if head == "```json\n" else "")


def c_hcl(sp, n, v):
    key = k_snake(n)
    k = R.randrange(3)
    if k == 0:
        return f"# terraform.tfvars\nregion      = \"eu-west-1\"\nenvironment = \"prod\"\n{key} = \"{v}\"\ninstance_count = 2"
    if k == 1:
        return (f"variable \"{key}\" {{\n  type    = string\n  default = \"{v}\"\n}}\n\n"
                f"resource \"kubernetes_secret\" \"app\" {{\n  metadata {{ name = \"app-secrets\" }}\n  data = {{\n    {n} = var.{key}\n  }}\n}}")
    return (f"provider \"{sp['f'].replace('-', '')}\" {{\n  {pick(['token', 'api_key', 'secret_key'])} = \"{v}\"\n}}\n\n"
            f"terraform {{\n  required_version = \">= 1.6\"\n}}")


def c_dockerfile(sp, n, v):
    base = pick(["python:3.12-slim", "node:22-alpine", "golang:1.23 AS build", "eclipse-temurin:21-jre", "ruby:3.3"])
    env = pick([f"ENV {n}={v}" if not needs_quote(v) else f"ENV {n}=\"{v}\"", f"ENV {n} {v}", f"ARG {n}={v}" if not needs_quote(v) else f"ARG {n}=\"{v}\""])
    return (f"FROM {base}\nWORKDIR /app\nCOPY . .\n{env}\nRUN {pick(['pip install --no-cache-dir -r requirements.txt', 'npm ci --omit=dev', 'go build -o /out/app ./cmd/app', 'bundle install'])}\n"
            f"EXPOSE 8080\nCMD [\"./start.sh\"]")


def c_compose(sp, n, v):
    svc = pick(SERVICES)
    if R.random() < 0.5:
        e = f"      - {n}={v}"
    else:
        e = f"      {n}: {yq(v)}"
    return (f"services:\n  {svc}:\n    image: ghcr.io/acme/{svc}:1.{R.randint(0, 30)}.{R.randint(0, 9)}\n    ports:\n      - \"8080:8080\"\n"
            f"    environment:\n      LOG_LEVEL: info\n{e}\n    depends_on:\n      - db\n  db:\n    image: postgres:16")


def c_k8s(sp, n, v):
    svc = pick(SERVICES)
    if R.random() < 0.5:
        return (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {svc}-secrets\n  namespace: {pick(['default', 'prod', 'apps'])}\n"
                f"type: Opaque\nstringData:\n  {n}: {yq(v)}")
    return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {svc}\nspec:\n  replicas: 2\n  template:\n    spec:\n"
            f"      containers:\n        - name: {svc}\n          image: ghcr.io/acme/{svc}:latest\n          env:\n"
            f"            - name: LOG_LEVEL\n              value: info\n            - name: {n}\n              value: \"{v}\"")


def c_kubectl(sp, n, v):
    svc = pick(SERVICES)
    if R.random() < 0.5:
        return (f"$ kubectl get configmap {svc}-config -o yaml\napiVersion: v1\ndata:\n  LOG_LEVEL: info\n  {n}: {yq(v)}\n"
                f"kind: ConfigMap\nmetadata:\n  creationTimestamp: \"{ts()}Z\"\n  name: {svc}-config\n  namespace: default\n"
                f"  resourceVersion: \"{R.randint(100000, 9999999)}\"\n  uid: {uuid4()}")
    p = pod(svc)
    return (f"$ kubectl describe pod {p}\nName:             {p}\nNamespace:        default\nNode:             gke-main-pool-{rs(HEX, 8)}-{rs(ANL, 4)}/10.128.0.{R.randint(2, 250)}\n"
            f"Status:           Running\nContainers:\n  {svc}:\n    Image:          ghcr.io/acme/{svc}:1.8.2\n    State:          Running\n"
            f"    Environment:\n      LOG_LEVEL:  info\n      {n}:  {v}\n    Mounts:\n      /var/run/secrets/kubernetes.io/serviceaccount from kube-api-access-{rs(K8SN, 5)} (ro)")


def c_tfplan(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        fn = pick(SERVICES)
        return (f"  # aws_lambda_function.{fn.replace('-', '_')} will be updated in-place\n  ~ resource \"aws_lambda_function\" \"{fn.replace('-', '_')}\" {{\n"
                f"        id            = \"{fn}\"\n        # (18 unchanged attributes hidden)\n\n      ~ environment {{\n          ~ variables = {{\n"
                f"              + \"{n}\" = \"{v}\"\n                \"LOG_LEVEL\" = \"info\"\n            }}\n        }}\n    }}\n\nPlan: 0 to add, 1 to change, 0 to destroy.")
    if k == 1:
        return (f"$ terraform state show aws_ssm_parameter.{k_snake(n)}\n# aws_ssm_parameter.{k_snake(n)}:\nresource \"aws_ssm_parameter\" \"{k_snake(n)}\" {{\n"
                f"    arn       = \"arn:aws:ssm:eu-west-1:{rs(DIG, 12)}:parameter/prod/{k_snake(n)}\"\n    name      = \"/prod/{k_snake(n)}\"\n"
                f"    tier      = \"Standard\"\n    type      = \"String\"\n    value     = \"{v}\"\n    version   = {R.randint(1, 9)}\n}}")
    out = {k_snake(n): {"sensitive": False, "type": "string", "value": v},
           "endpoint": {"sensitive": False, "type": "string", "value": f"https://{host(sp)}"}}
    return "$ terraform output -json\n" + json.dumps(out, indent=2)


_CLOCK = [NOW + 3 * 3600]


def gha_ts():
    """monotonic CI-log clock (advances a little on every call)"""
    _CLOCK[0] += R.randint(0, 2)
    t = _CLOCK[0] - NOW
    return f"2026-12-{8 + t // 86400:02d}T{t % 86400 // 3600:02d}:{t % 3600 // 60:02d}:{t % 60:02d}.{rs(DIG, 7)}Z"


def c_gha(sp, n, v):
    step = pick(["./scripts/deploy.sh", "npm run e2e", "python -m pytest tests/smoke", "make release"])
    lines = [f"##[group]Run {step}", step, "shell: /usr/bin/bash -e {0}", "env:", "  NODE_VERSION: 22",
             f"  {n}: {v}", "##[endgroup]", pick(["Deploying to production...", "Running smoke tests", "Error: Process completed with exit code 1."])]
    return "\n".join(f"{gha_ts()} {x}" for x in lines)


def c_gitlab(sp, n, v):
    return (f"Running with gitlab-runner 17.5.1 (affd9e7d)\n  on docker-runner-{R.randint(1, 9)} {rs(B64U, 8)}, system ID: s_{rs(HEX, 12)}\n"
            f"Preparing the \"docker\" executor\nUsing docker image sha256:{rs(HEX, 64)} for node:22 ...\n"
            f"$ echo \"debug: {n}=${n}\"\ndebug: {n}={v}\n$ npm run deploy\nERROR: Job failed: exit code 1")


def c_diff(sp, n, v):
    k = R.randrange(3)
    a, b = rs(HEX, 7), rs(HEX, 7)
    if k == 0:
        f, old, new, ctx = ".env.example", f"-{n}=", f"+{n}={v}", [" PORT=3000", " LOG_LEVEL=debug"]
    elif k == 1:
        f, old, new, ctx = "config/settings.py", f"-{n} = os.environ.get(\"{n}\", \"\")", f"+{n} = \"{v}\"", [" DEBUG = False", " TIME_ZONE = \"UTC\""]
    else:
        f, old, new, ctx = "deploy/values.yaml", f"-  {k_camel(n)}: \"\"", f"+  {k_camel(n)}: \"{v}\"", ["   replicas: 2", "   image: api"]
    ln = R.randint(3, 90)
    return (f"diff --git a/{f} b/{f}\nindex {a}..{b} 100644\n--- a/{f}\n+++ b/{f}\n@@ -{ln},4 +{ln},4 @@\n"
            f"{ctx[0]}\n{old}\n{new}\n{ctx[1]}")


def c_md(sp, n, v):
    lang = pick(["bash", "env", "sh", ""])
    body = f"export {n}={shq(v) if needs_quote(v) else ''}{v}{shq(v) if needs_quote(v) else ''}" if lang in ("bash", "sh") else f"{n}={v}"
    if needs_quote(v):
        body = body.replace(f"={v}", f"=\"{v}\"") if '"' not in body else body
    return f"{pick(CHAT_INTRO)}\n\n```{lang}\n{body}\n{pick(['make run', 'npm start', 'python app.py', 'docker compose up'])}\n```"


def c_agent(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        return (f"● Bash(grep -rn {n} .)\n  ⎿  ./docker-compose.override.yml:14:      {n}: {v}\n     ./README.md:88:Set `{n}` in your shell before running.")
    if k == 1:
        return (f"<tool_output name=\"read_file\" path=\".env\">\n{chr(10).join(benign_dotenv())}\n{n}={v}\n</tool_output>\n\nI can see the key is set, so the 401 must come from the region.")
    return f"[tool: shell] $ echo ${n}\n{v}\n[exit 0]"


def c_py(sp, n, v):
    k = R.randrange(4)
    key = k_snake(n)
    if k == 0:
        return f"import os\n\n{n} = \"{v}\"  # TODO move to env\nBASE_URL = \"https://{host(sp)}\"\n\ndef client():\n    return Client(api_key={n}, base_url=BASE_URL)"
    if k == 1:
        return f"os.environ.setdefault(\"{n}\", \"{v}\")\nsettings = Settings()\nprint(settings.{key[:20]} is not None)"
    if k == 2:
        return f"config = {{\n    'endpoint': 'https://{host(sp)}',\n    '{key}': '{v}',\n    'timeout': 30,\n}}"
    return f"class Settings(BaseSettings):\n    {key}: SecretStr = SecretStr(\"{v}\")\n    debug: bool = False"


def c_js(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        return f"const {k_camel(n)} = '{v}';\nconst res = await fetch('https://{host(sp)}{sp.get('path', '/v1/me')}', {{ method: 'GET' }});"
    if k == 1:
        return f"process.env.{n} ??= \"{v}\";\nmodule.exports = {{ reactStrictMode: true }};"
    return f"module.exports = {{\n  {k_camel(n)}: `{v}`,\n  region: 'us-east-1',\n}};"


def c_ts(sp, n, v):
    return (f"export const config = {{\n  baseUrl: \"https://{host(sp)}\",\n  {k_camel(n)}: \"{v}\",\n  retries: 2,\n}} as const;\n\n"
            f"export type Config = typeof config;")


def c_go(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        return f"func main() {{\n\t{k_camel(n)} := \"{v}\"\n\tc := client.New({k_camel(n)})\n\tlog.Fatal(c.Run(context.Background()))\n}}"
    if k == 1:
        return f"func init() {{\n\tos.Setenv(\"{n}\", \"{v}\")\n}}"
    return f"const (\n\tbaseURL = \"https://{host(sp)}\"\n\t{k_camel(n)} = \"{v}\"\n)"


def c_rust(sp, n, v):
    if R.random() < 0.5:
        return f"fn main() -> anyhow::Result<()> {{\n    let {k_snake(n)} = \"{v}\";\n    let client = Client::new({k_snake(n)});\n    client.ping()?;\n    Ok(())\n}}"
    return f"const {n}: &str = \"{v}\";\n\n#[tokio::main]\nasync fn main() {{ run({n}).await }}"


def c_java(sp, n, v):
    return (f"public final class Config {{\n    private static final String {n} = \"{v}\";\n    private static final int TIMEOUT_MS = 5000;\n\n"
            f"    public static String {k_camel(n)}() {{ return {n}; }}\n}}")


def c_cs(sp, n, v):
    if R.random() < 0.5:
        return f"var builder = WebApplication.CreateBuilder(args);\nbuilder.Configuration[\"{n}\"] = \"{v}\";\nvar app = builder.Build();"
    return f"public static class Keys\n{{\n    public const string {k_camel(n).title().replace('_', '')} = \"{v}\";\n}}"


def c_php(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        return f"<?php\nreturn [\n    'endpoint' => 'https://{host(sp)}',\n    '{k_snake(n)}' => '{v}',\n    'timeout' => 30,\n];"
    if k == 1:
        return f"<?php\ndefine('{n}', '{v}');\nrequire __DIR__ . '/vendor/autoload.php';"
    return f"$_ENV['{n}'] = \"{v}\";\n$client = new Client($_ENV['{n}']);"


def c_ruby(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        return f"Vendor.configure do |config|\n  config.{k_snake(n)} = \"{v}\"\n  config.timeout = 10\nend"
    if k == 1:
        return f"ENV[\"{n}\"] ||= \"{v}\"\nrequire_relative \"config/environment\""
    return f"CLIENT_OPTS = {{ \"{k_snake(n)}\" => \"{v}\", :open_timeout => 5 }}.freeze"


def c_sql(sp, n, v):
    k = R.randrange(3)
    prov = sp["f"]
    if k == 0:
        return f"INSERT INTO integrations (id, provider, {k_short(n)}, created_at)\nVALUES ({R.randint(1, 500)}, '{prov}', '{v}', now());"
    if k == 1:
        return f"UPDATE app_settings SET value = '{v}' WHERE name = '{n}';\n-- UPDATE 1"
    col = k_short(n)
    w = max(len(col), len(v))
    return (f"app=> SELECT id, provider, {col} FROM integrations WHERE id = 7;\n id | provider | {col.ljust(w)}\n"
            f"----+----------+-{'-' * w}\n  7 | {prov[:8].ljust(8)} | {v.ljust(w)}\n(1 row)")


def c_jupyter(sp, n, v):
    if R.random() < 0.5:
        i = R.randint(2, 40)
        return f"In [{i}]: import os; os.environ.get(\"{n}\")\nOut[{i}]: '{v}'"
    cell = {"cell_type": "code", "execution_count": R.randint(1, 30), "metadata": {},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": [f"loaded {n}={v}\n", "client ready\n"]}],
            "source": ["from dotenv import load_dotenv\n", "load_dotenv()\n", f"print(f\"loaded {n}={{os.environ['{n}']}}\")"]}
    return json.dumps(cell, indent=1, ensure_ascii=False)


def c_cont(sp, n, v):
    k = R.randrange(3)
    if k == 0:
        q = '"' if needs_quote(v) else ""
        return (f"docker run --rm \\\n  -p 8080:8080 \\\n  -e {n}={q}{v}{q} \\\n  -e LOG_LEVEL=debug \\\n  ghcr.io/acme/{pick(SERVICES)}:1.4.2")
    if k == 1:
        return f"client = Client(\n    base_url=\"https://{host(sp)}\",\n    {k_snake(n)}=(\n        \"{v}\"\n    ),\n)"
    return f"New-AppConfig `\n  -Name {pick(SERVICES)} `\n  -{k_camel(n).title()} \"{v}\" `\n  -Force"


def c_long(sp, n, v):
    fields = {"ts": ts() + "Z", "level": "debug", "svc": pick(SERVICES), "msg": "loaded runtime config",
              "pid": R.randint(100, 99999), "build": rs(HEX, 12)}
    for i in range(R.randint(10, 18)):
        fields[f"FEATURE_{rs(UP, 6)}"] = pick([True, False, "on", "off", R.randint(0, 500)])
    cfg = {"PUBLIC_URL": "https://app.example.com", n: v, "REGION": "eu-central-1"}
    fields["config"] = cfg
    fields["trace_id"] = rs(HEX, 32)
    if R.random() < 0.5:
        return json.dumps(fields, separators=(",", ":"))
    return "window.__ENV__=" + json.dumps(fields, separators=(",", ":")) + ";!function(){var e=document.createElement(\"script\");e.src=\"/static/js/main." + rs(HEX, 8) + ".js\",document.head.appendChild(e)}();"


def c_systemd(sp, n, v):
    svc = pick(SERVICES)
    return (f"# /etc/systemd/system/{svc}.service\n[Unit]\nDescription={svc}\nAfter=network-online.target\n\n[Service]\n"
            f"User=app\nEnvironment=\"{n}={v}\"\nEnvironment=\"PORT=8080\"\nExecStart=/opt/{svc}/bin/{svc}\nRestart=on-failure\n\n[Install]\nWantedBy=multi-user.target")


def c_paas_cfg(sp, n, v):
    app = pick(SERVICES) + "-" + pick(["prod", "staging"])
    rows = [("DATABASE_POOL", "10"), ("LOG_LEVEL", "info"), (n, v), ("WEB_CONCURRENCY", "2")]
    rows.sort()
    w = max(len(a) for a, _ in rows) + 2
    return f"$ heroku config -a {app}\n=== {app} Config Vars\n" + "\n".join(f"{(a + ':').ljust(w)}{b}" for a, b in rows)


def c_k8s_b64(sp, n, v):
    enc = base64.b64encode(v.encode()).decode()
    svc = pick(SERVICES)
    t = (f"$ kubectl get secret {svc}-env -o yaml\napiVersion: v1\ndata:\n  {n}: {enc}\n  LOG_LEVEL: aW5mbw==\nkind: Secret\n"
         f"metadata:\n  name: {svc}-env\n  namespace: default\n  uid: {uuid4()}\ntype: Opaque")
    return t, enc


def c_urlq(sp, n, v):
    enc = quote(v, safe="")
    qp = sp.get("qp", pick(["api_key", "token", "key", "access_token"]))
    k = R.randrange(2)
    if k == 0:
        return f"curl -s \"https://{host(sp)}{sp.get('path', '/v1/status')}?{qp}={enc}&format=json\" | jq .", enc
    return (f"{R.randint(10, 250)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)} - - [08/Dec/2026:10:{R.randint(10, 59)}:{R.randint(10, 59)} +0000] "
            f"\"GET /hooks/sync?{qp}={enc} HTTP/1.1\" 401 53 \"-\" \"python-requests/2.32.3\""), enc


# header contexts
def c_curl_v(sp, n, v):
    h, hv = hdr(sp, v)
    hst = host(sp)
    path = sp.get("path", "/v1/me")
    ip = f"{R.randint(3, 200)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}"
    return (f"$ curl -v https://{hst}{path} -H \"{h}: {hv}\"\n*   Trying {ip}:443...\n* Connected to {hst} ({ip}) port 443\n"
            f"* ALPN: server accepted h2\n* using HTTP/2\n> GET {path} HTTP/2\n> Host: {hst}\n> User-Agent: curl/8.5.0\n> Accept: */*\n"
            f"> {h}: {hv}\n>\n< HTTP/2 401\n< content-type: application/json\n< date: Tue, 08 Dec 2026 10:{R.randint(10, 59)}:{R.randint(10, 59)} GMT\n<\n"
            f"{{\"error\":{{\"message\":\"invalid credentials\",\"type\":\"authentication_error\"}}}}")


def c_http_raw(sp, n, v):
    h, hv = hdr(sp, v)
    path = sp.get("path", "/v1/me")
    return (f"POST {path} HTTP/1.1\r\nHost: {host(sp)}\r\nContent-Type: application/json\r\n{h}: {hv}\r\n"
            f"Content-Length: {R.randint(20, 200)}\r\n\r\n{{\"limit\": 10}}").replace("\r\n", "\n") if R.random() < 0.5 else (
            f"=== request ===\nPOST https://{host(sp)}{path}\nContent-Type: application/json\n{h}: {hv}\nX-Request-Id: {uuid4()}\n\n=== response 403 ===")


def c_har(sp, n, v):
    h, hv = hdr(sp, v)
    entry = {"log": {"version": "1.2", "creator": {"name": "WebInspector", "version": "537.36"},
                     "entries": [{"startedDateTime": ts() + ".123Z", "time": R.randint(30, 900),
                                  "request": {"method": "GET", "url": f"https://{host(sp)}{sp.get('path', '/v1/me')}",
                                              "httpVersion": "http/2.0",
                                              "headers": [{"name": ":authority", "value": host(sp)},
                                                          {"name": "accept", "value": "application/json"},
                                                          {"name": h.lower(), "value": hv},
                                                          {"name": "user-agent", "value": "Mozilla/5.0 (X11; Linux x86_64)"}],
                                              "queryString": [], "cookies": []},
                                  "response": {"status": 401, "statusText": "", "headers": []}}]}}
    return json.dumps(entry, indent=2)


def c_axios(sp, n, v):
    h, hv = hdr(sp, v)
    return (f"AxiosError: Request failed with status code 401\n    at settle (/app/node_modules/axios/lib/core/settle.js:19:12)\n"
            f"    at IncomingMessage.handleStreamEnd (/app/node_modules/axios/lib/adapters/http.js:599:11) {{\n  code: 'ERR_BAD_REQUEST',\n"
            f"  config: {{\n    method: 'get',\n    url: 'https://{host(sp)}{sp.get('path', '/v1/me')}',\n    headers: Object [AxiosHeaders] {{\n"
            f"      Accept: 'application/json, text/plain, */*',\n      '{h}': '{hv}',\n      'User-Agent': 'axios/1.7.7'\n    }},\n    timeout: 0\n  }}\n}}")


def c_jsonlog(sp, n, v):
    h, hv = hdr(sp, v)
    rec = {"time": ts() + "Z", "level": "DEBUG", "logger": "httpx", "event": "request",
           "method": "POST", "url": f"https://{host(sp)}{sp.get('path', '/v1/me')}",
           "headers": {"content-type": "application/json", h.lower(): hv}, "request_id": uuid4()}
    return json.dumps(rec, separators=(", ", ": ") if R.random() < 0.5 else (",", ":"))


def c_fetch(sp, n, v):
    h, hv = hdr(sp, v)
    if R.random() < 0.5:
        return (f"const res = await fetch(\"https://{host(sp)}{sp.get('path', '/v1/me')}\", {{\n  method: \"POST\",\n  headers: {{\n"
                f"    \"Content-Type\": \"application/json\",\n    \"{h}\": \"{hv}\",\n  }},\n  body: JSON.stringify(payload),\n}});")
    return (f"import requests\n\nresp = requests.get(\n    \"https://{host(sp)}{sp.get('path', '/v1/me')}\",\n"
            f"    headers={{\"{h}\": \"{hv}\"}},\n    timeout=10,\n)\nresp.raise_for_status()")


def c_curl_cont(sp, n, v):
    h, hv = hdr(sp, v)
    return (f"curl -sS -X POST \"https://{host(sp)}{sp.get('path', '/v1/me')}\" \\\n  -H \"Content-Type: application/json\" \\\n"
            f"  -H \"{h}: {hv}\" \\\n  -d '{{\"dry_run\": true}}'")


def c_traceback(sp, n, v):
    h, hv = hdr(sp, v)
    return (f"Traceback (most recent call last):\n  File \"/app/worker/sync.py\", line {R.randint(20, 300)}, in push\n    resp = session.post(url, json=body, headers=headers)\n"
            f"  File \"/usr/local/lib/python3.12/site-packages/requests/sessions.py\", line 637, in post\n    return self.request(\"POST\", url, data=data, json=json, **kwargs)\n"
            f"worker.errors.UpstreamError: 401 from https://{host(sp)}{sp.get('path', '/v1/me')} (headers={{'{h}': '{hv}', 'Accept': '*/*'}})")


WRAPPABLE = []


def c_tool_json(sp, n, v):
    inner = pick(WRAPPABLE)(sp, n, v)
    sec = None
    if isinstance(inner, tuple):
        inner, sec = inner
    k = R.randrange(4)
    if k == 0:
        o = {"type": "tool_result", "tool_use_id": "toolu_01" + rs(AN, 22), "content": inner, "is_error": False}
    elif k == 1:
        o = {"role": "tool", "tool_call_id": "call_" + rs(AN, 24), "content": inner}
    elif k == 2:
        o = {"type": "function_call", "name": pick(["write_file", "create_file", "apply_patch"]),
             "arguments": json.dumps({"path": pick([".env", "config/app.yaml", "deploy/k8s.yaml"]), "content": inner})}
    else:
        o = {"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "content": [{"type": "text", "text": inner}]}]},
             "uuid": uuid4(), "timestamp": ts() + ".000Z"}
    t = json.dumps(o, ensure_ascii=False)
    return (t, sec) if sec else t


LANG_KEY = {
    "en": "I set {n} to `{v}` but the request still fails with 401. What am I missing?",
    "es": "Puse mi {what} ({v}) en el archivo de configuración y sigue dando error 401. ¿Qué hago mal?",
    "fr": "J'ai mis ma clé {what} : {v} — mais l'appel renvoie toujours 401. Une idée ?",
    "de": "Ich habe den {what} {v} in die .env eingetragen, trotzdem bekomme ich 401. Woran liegt das?",
    "pt": "Coloquei o token {v} na variável {n}, mas continua dando 401. Alguém sabe por quê?",
    "it": "Ho impostato {n}={v} ma la richiesta restituisce ancora 401. Cosa sbaglio?",
    "nl": "Ik heb de sleutel {v} in {n} gezet, maar ik krijg nog steeds een 401. Wat doe ik fout?",
    "pl": "Ustawiłem {n} na „{v}”, ale nadal dostaję 401. Co robię źle?",
    "ru": "Я прописал {n}={v}, но запрос всё равно возвращает 401. Что не так?",
    "uk": "Я додав ключ {v} у змінну {n}, але сервер досі відповідає 401. Чому?",
    "tr": "{n} değişkenine «{v}» değerini verdim ama hâlâ 401 alıyorum. Neden?",
    "ja": "{n}に{v}を設定したのに401が返ってきます。何が間違っていますか？",
    "zh": "我已经把{n}设置成{v}了，但是请求还是返回401，怎么回事？",
    "ko": "{n}에 {v}를 넣었는데도 계속 401 에러가 나요. 왜 그럴까요?",
    "hi": "मैंने {n} में {v} डाल दिया है, फिर भी 401 error आ रहा है। क्या गलत है?",
    "ar": "وضعت المفتاح {v} في المتغير {n} لكن الطلب ما زال يرجع 401. ما المشكلة؟",
    "vi": "Mình đã đặt {n}={v} mà vẫn bị lỗi 401. Sai ở đâu vậy?",
    "id": "Saya sudah isi {n} dengan {v} tapi tetap dapat error 401. Kenapa ya?",
}
LANG_KEY2 = {
    "en": "Quick sanity check: is ({v}) a valid {what}? It was in the old wiki page.",
    "es": "Mi compañero me pasó esta clave: {v}. ¿Es un {what} válido o ya caducó?",
    "fr": "Voici le {what} qu'on m'a donné, « {v} », il a l'air expiré.",
    "de": "Der Kollege hat mir den Schlüssel „{v}“ geschickt – ist das ein gültiger {what}?",
    "pt": "Meu colega mandou essa chave: {v}. É um {what} válido?",
    "it": "Il collega mi ha girato questa chiave: {v}. È un {what} valido?",
    "nl": "Een collega stuurde me deze sleutel: {v}. Is dat een geldige {what}?",
    "pl": "Kolega podesłał mi klucz {v} – czy to poprawny {what}?",
    "ru": "Коллега прислал ключ «{v}» — это рабочий {what}?",
    "uk": "Колега надіслав ключ «{v}» — це дійсний {what}?",
    "tr": "Ekip arkadaşım şu anahtarı gönderdi: {v}. Bu geçerli bir {what} mi?",
    "ja": "同僚から「{v}」というキーをもらいました。これは有効な{what}ですか？",
    "zh": "同事发给我这个密钥：{v}，这是有效的{what}吗？",
    "ko": "동료가 보내준 키가 {v}인데, 유효한 {what}인가요?",
    "hi": "सहकर्मी ने यह key भेजी है: {v} — क्या यह सही {what} है?",
    "ar": "أرسل لي زميلي هذا المفتاح: {v} — هل هو {what} صالح؟",
    "vi": "Đồng nghiệp gửi mình key này: {v}, đây có phải {what} hợp lệ không?",
    "id": "Rekan kerja kirim key ini: {v}. Apakah ini {what} yang valid?",
}
LANGS = list(LANG_KEY)
_lang_i = [0]


def next_lang():
    lg = LANGS[_lang_i[0] % len(LANGS)]
    _lang_i[0] += 1
    return lg


def c_lang(sp, n, v):
    lg = next_lang()
    tpl = (LANG_KEY2 if sp["t"] == "kv" and R.random() < 0.7 else pick([LANG_KEY, LANG_KEY2]))[lg]
    return tpl.format(n=n, v=v, what=sp.get("label", "API key")), None, f"lang/{lg}"


WRAPPABLE[:] = [c_export, c_printenv, c_dotenv, c_yaml, c_diff, c_compose, c_k8s, c_tfplan, c_gha, c_agent]

KV_CTX = {
    "shell/export": c_export, "env/printenv": c_printenv, "env/bash-set": c_setdump, "env/powershell-env": c_ps_env,
    "shell/powershell": c_powershell, "file/dotenv": c_dotenv, "config/yaml": c_yaml, "config/toml": c_toml_fix,
    "config/ini": c_ini, "config/json": c_json, "iac/hcl": c_hcl, "docker/dockerfile": c_dockerfile,
    "docker/compose": c_compose, "k8s/manifest": c_k8s, "k8s/kubectl-out": c_kubectl, "iac/tf-output": c_tfplan,
    "ci/github-actions": c_gha, "ci/gitlab": c_gitlab, "vcs/diff": c_diff, "chat/md-fence": c_md,
    "agent/tool-print": c_agent, "code/python": c_py, "code/js": c_js, "code/ts": c_ts, "code/go": c_go,
    "code/rust": c_rust, "code/java": c_java, "code/csharp": c_cs, "code/php": c_php, "code/ruby": c_ruby,
    "sql/query": c_sql, "jupyter/output": c_jupyter, "shell/continuation": c_cont, "log/long-line": c_long,
    "config/systemd": c_systemd, "paas/config-vars": c_paas_cfg, "enc/k8s-secret-b64": c_k8s_b64,
    "enc/url-query": c_urlq, "agent/tool-json": c_tool_json, "lang": c_lang,
}
HDR_CTX = {
    "http/curl-v": c_curl_v, "http/raw-request": c_http_raw, "http/har": c_har, "log/axios-error": c_axios,
    "log/json-line": c_jsonlog, "code/http-client": c_fetch, "shell/curl-continuation": c_curl_cont,
    "log/traceback": c_traceback,
}


# --------------------------------------------------------------------------
# extra, vendor-specific contexts
def x_aws_creds(sp, n, v):
    vals = {"akid": "AKIA" + rs(UP + "234567", 16), "sk": rs(AN + "+/", 40)}
    vals[sp["slot"]] = v
    prof = pick(["default", "prod", "staging-admin"])
    return (f"{pick(PROMPTS)}cat ~/.aws/credentials\n[{prof}]\naws_access_key_id = {vals['akid']}\n"
            f"aws_secret_access_key = {vals['sk']}\nregion = {pick(['us-east-1', 'eu-west-1', 'ap-southeast-2'])}")


def x_aws_sts(sp, n, v):
    vals = {"akid": "ASIA" + rs(UP + "234567", 16), "sk": rs(AN + "+/", 40), "st": aws_session()}
    slot = sp["slot"]
    if slot == "akid":
        v = "ASIA" + v[4:]
    vals[slot] = v
    out = {"Credentials": {"AccessKeyId": vals["akid"], "SecretAccessKey": vals["sk"], "SessionToken": vals["st"],
                           "Expiration": ts() + "+00:00"},
           "AssumedRoleUser": {"AssumedRoleId": "AROA" + rs(ANU, 17) + ":ci-session",
                               "Arn": f"arn:aws:sts::{rs(DIG, 12)}:assumed-role/deployer/ci-session"}}
    return f"$ aws sts assume-role --role-arn arn:aws:iam::{rs(DIG, 12)}:role/deployer --role-session-name ci-session\n" + json.dumps(out, indent=4), v


def x_aws_env3(sp, n, v):
    vals = {"akid": "ASIA" + rs(UP + "234567", 16), "sk": rs(AN + "+/", 40), "st": aws_session()}
    vals[sp["slot"]] = v
    return (f"export AWS_ACCESS_KEY_ID={vals['akid']}\nexport AWS_SECRET_ACCESS_KEY={vals['sk']}\n"
            f"export AWS_SESSION_TOKEN={vals['st']}\naws s3 ls s3://acme-artifacts-{pick(['prod', 'dev'])}/")


def x_boto3(sp, n, v):
    vals = {"akid": "AKIA" + rs(UP + "234567", 16), "sk": rs(AN + "+/", 40)}
    vals[sp["slot"]] = v
    return (f"s3 = boto3.client(\n    \"s3\",\n    aws_access_key_id=\"{vals['akid']}\",\n    aws_secret_access_key=\"{vals['sk']}\",\n"
            f"    region_name=\"eu-west-1\",\n)\nprint(s3.list_buckets()[\"Buckets\"])")


def aws_session():
    return "IQoJb3JpZ2luX2Vj" + rs(B64, R.randint(360, 560))


def x_npmrc(sp, n, v):
    return f"{pick(PROMPTS)}cat ~/.npmrc\n//registry.npmjs.org/:_authToken={v}\n@acme:registry=https://npm.pkg.github.com\nsave-exact=true"


def x_pypirc(sp, n, v):
    return f"# ~/.pypirc\n[distutils]\nindex-servers =\n    pypi\n\n[pypi]\n  username = __token__\n  password = {v}"


def x_twine(sp, n, v):
    return f"{pick(PROMPTS)}TWINE_USERNAME=__token__ TWINE_PASSWORD={v} twine upload dist/*\nUploading distributions to https://upload.pypi.org/legacy/\nERROR    HTTPError: 403 Forbidden"


def x_gem(sp, n, v):
    return f"$ cat ~/.gem/credentials\n---\n:rubygems_api_key: {v}"


def x_nuget(sp, n, v):
    if R.random() < 0.5:
        return f"dotnet nuget push bin/Release/Acme.Client.{R.randint(1, 4)}.{R.randint(0, 9)}.0.nupkg --api-key {v} --source https://api.nuget.org/v3/index.json"
    return (f"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<configuration>\n  <apikeys>\n    <add key=\"https://www.nuget.org/api/v2/package\" value=\"{v}\" />\n"
            f"  </apikeys>\n</configuration>")


def x_docker_login(sp, n, v):
    user = pick(["acmebot", "ana-dev", "ci-deployer"])
    return (f"$ docker login -u {user} -p {v}\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\n"
            f"Login Succeeded")


def x_mvn(sp, n, v):
    sid = pick(["ossrh", "central", "artifactory", "nexus-releases"])
    return (f"<!-- ~/.m2/settings.xml -->\n<settings>\n  <servers>\n    <server>\n      <id>{sid}</id>\n      <username>{pick(['deployer', 'ci', 'x7Kp2qRm'])}</username>\n"
            f"      <password>{v}</password>\n    </server>\n  </servers>\n</settings>")


def x_gradle(sp, n, v):
    return f"# ~/.gradle/gradle.properties\norg.gradle.jvmargs=-Xmx2g\nossrhUsername=acme-release\nossrhPassword={v}\nsigning.keyId={rs(HEXU, 8)}"


def x_jf(sp, n, v):
    return f"$ jf c add acme --url=https://acme.jfrog.io --access-token={v} --interactive=false\n[Info] Server configuration 'acme' added."


def x_gh_remote(sp, n, v):
    user = pick(["x-access-token", "oauth2", "ana", "ci-bot"])
    repo = pick(["acme/billing", "acme/infra", "segue-dev/web"])
    return (f"$ git remote -v\norigin\thttps://{user}:{v}@github.com/{repo}.git (fetch)\norigin\thttps://{user}:{v}@github.com/{repo}.git (push)")


def x_gh_hosts(sp, n, v):
    return f"# ~/.config/gh/hosts.yml\ngithub.com:\n    user: ana-dev\n    oauth_token: {v}\n    git_protocol: https"


def x_gl_remote(sp, n, v):
    return f"$ git clone https://oauth2:{v}@gitlab.com/acme/platform/api.git\nCloning into 'api'...\nremote: HTTP Basic: Access denied."


def x_gl_runner(sp, n, v):
    return (f"concurrent = 4\ncheck_interval = 0\n\n[[runners]]\n  name = \"docker-runner-{R.randint(1, 9)}\"\n  url = \"https://gitlab.com\"\n"
            f"  token = \"{v}\"\n  executor = \"docker\"\n  [runners.docker]\n    image = \"alpine:3.20\"\n    privileged = false")


def x_bb_remote(sp, n, v):
    return f"git push https://ana_dev:{v}@bitbucket.org/acme/mobile-app.git main\nremote: Invalid credentials"


def x_stripe_listen(sp, n, v):
    return f"$ stripe listen --forward-to localhost:3000/api/webhooks\n> Ready! You are using Stripe API Version [2024-06-20]. Your webhook signing secret is {v} (^C to quit)"


def x_twilio(sp, n, v):
    return f"from twilio.rest import Client\n\nclient = Client(\"AC{rs(HEX, 32)}\", \"{v}\")\nclient.messages.create(to=\"+15558675310\", from_=\"+15017122661\", body=\"hi\")"


def x_mailgun(sp, n, v):
    return (f"curl -s --user 'api:{v}' \\\n    https://api.eu.mailgun.net/v3/mg.example.com/messages \\\n    -F from='Ops <ops@mg.example.com>' \\\n"
            f"    -F to=ana@example.com -F subject='test' -F text='hello'")


def x_tg_url(sp, n, v):
    return f"requests.post(f\"https://api.telegram.org/bot{v}/sendMessage\", json={{\"chat_id\": {R.randint(-1009999999999, -1001000000000)}, \"text\": msg}})"


def x_tg_log(sp, n, v):
    return f"telegram.error.InvalidToken: Invalid token\nDEBUG:httpx:HTTP Request: POST https://api.telegram.org/bot{v}/getMe \"HTTP/1.1 401 Unauthorized\""


def x_vault_login(sp, n, v):
    return (f"$ vault login -method=oidc\nSuccess! You are now authenticated. The token information displayed below\nis already stored in the token helper.\n\n"
            f"Key                  Value\n---                  -----\ntoken                {v}\ntoken_accessor       {rs(AN, 24)}\n"
            f"token_duration       768h\ntoken_renewable      true\ntoken_policies       [\"default\" \"dev\"]")


def x_tfrc(sp, n, v):
    return json.dumps({"credentials": {"app.terraform.io": {"token": v}}}, indent=2) if R.random() < 0.5 else (
        f"# ~/.terraformrc\ncredentials \"app.terraform.io\" {{\n  token = \"{v}\"\n}}")


def x_fly_create(sp, n, v):
    return f"$ fly tokens create deploy -a {pick(SERVICES)} -x 720h\n{v}"


def x_heroku_auth(sp, n, v):
    return (f"$ heroku authorizations:create -d \"ci deploy\"\nCreating OAuth Authorization... done\nClient:      <none>\nID:          {uuid4()}\n"
            f"Description: ci deploy\nScope:       global\nToken:       {v}\nUpdated at:  Tue Dec 08 2026 10:12:09 GMT+0000")


def x_doppler(sp, n, v):
    return (f"$ doppler configs tokens create ci-token --plain -p backend -c prd\n{v}\n$ export DOPPLER_TOKEN=$(pbpaste)")


def x_databrickscfg(sp, n, v):
    return f"$ cat ~/.databrickscfg\n[DEFAULT]\nhost  = https://adb-{rs(DIG, 16)}.{R.randint(1, 19)}.azuredatabricks.net\ntoken = {v}\n\n[staging]\nhost = https://dbc-{rs(HEX, 8)}-{rs(HEX, 4)}.cloud.databricks.com"


def x_hf_login(sp, n, v):
    return (f"$ huggingface-cli login --token {v}\nToken is valid (permission: write).\nYour token has been saved to /home/dev/.cache/huggingface/token\nLogin successful")


def x_openai_py(sp, n, v):
    return f"from openai import OpenAI\n\nclient = OpenAI(api_key=\"{v}\")\nresp = client.responses.create(model=\"gpt-4.1-mini\", input=\"ping\")"


def x_anthropic_py(sp, n, v):
    return f"import anthropic\n\nclient = anthropic.Anthropic(\n    api_key=\"{v}\",\n)\nmsg = client.messages.create(model=\"claude-sonnet-4-5\", max_tokens=256, messages=[{{\"role\": \"user\", \"content\": \"hi\"}}])"


def x_cf_global(sp, n, v):
    return (f"curl -s -X GET \"https://api.cloudflare.com/client/v4/zones?name=example.com\" \\\n     -H \"X-Auth-Email: ops@example.com\" \\\n"
            f"     -H \"X-Auth-Key: {v}\" \\\n     -H \"Content-Type: application/json\"")


def x_okta(sp, n, v):
    return f"curl -v -X GET -H \"Accept: application/json\" -H \"Authorization: SSWS {v}\" \"https://dev-{rs(DIG, 8)}.okta.com/api/v1/users?limit=25\""


def x_gcp_oauth(sp, n, v):
    return json.dumps({"installed": {"client_id": f"{rs(DIG, 12)}-{rs(ANL, 32)}.apps.googleusercontent.com", "project_id": f"acme-{rs(ANL, 6)}",
                                     "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token",
                                     "client_secret": v, "redirect_uris": ["http://localhost"]}})


def x_eth_hardhat(sp, n, v):
    return (f"module.exports = {{\n  solidity: \"0.8.24\",\n  networks: {{\n    sepolia: {{\n      url: \"https://sepolia.infura.io/v3/\" + process.env.INFURA_ID,\n"
            f"      accounts: [\"{v}\"],\n    }},\n  }},\n}};")


def x_eth_forge(sp, n, v):
    return f"$ forge script script/Deploy.s.sol --rpc-url $SEPOLIA_RPC --private-key {v} --broadcast\n[⠊] Compiling...\nNo files changed, compilation skipped"


def x_rails_master(sp, n, v):
    return f"{pick(PROMPTS)}cat config/master.key\n{v}\n{pick(PROMPTS)}fly secrets set RAILS_MASTER_KEY={v}"


def x_django(sp, n, v):
    return (f"# settings/production.py\nfrom .base import *\n\nDEBUG = False\nSECRET_KEY = '{v}'\nALLOWED_HOSTS = ['api.example.com']")


def x_fernet(sp, n, v):
    return f">>> from cryptography.fernet import Fernet\n>>> key = Fernet.generate_key()\n>>> key\nb'{v}'\n>>> f = Fernet(key)"


def x_wg(sp, n, v):
    return (f"[Interface]\nAddress = 10.8.0.{R.randint(2, 50)}/24\nPrivateKey = {v}\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = {b64(32)}\n"
            f"AllowedIPs = 0.0.0.0/0\nEndpoint = vpn.example.net:51820\nPersistentKeepalive = 25")


def x_wg_genkey(sp, n, v):
    return f"$ wg genkey | tee privatekey | wg pubkey > publickey\n$ cat privatekey\n{v}\n$ cat publickey\n{b64(32)}"


def x_age(sp, n, v):
    return f"$ age-keygen -o key.txt\nPublic key: age1{rs(BECH, 58)}\n$ cat key.txt\n# created: {ts()}Z\n# public key: age1{rs(BECH, 58)}\n{v}"


def x_sops_env(sp, n, v):
    return f"export SOPS_AGE_KEY={v}\nsops -d secrets/prod.enc.yaml > /tmp/prod.yaml"


def x_totp_manual(sp, n, v):
    groups = " ".join(v[i:i + 4] for i in range(0, len(v), 4))
    return (f"Can't scan the QR code? Enter this setup key in your authenticator app instead:\n\n    {groups}\n\n"
            f"Then type the 6-digit code to confirm."), groups


def x_totp_uri(sp, n, v):
    iss = pick(["GitHub", "AWS", "Acme%20Corp", "Grafana", "Okta"])
    user = pick(["ana%40example.com", "ops", "root-account"])
    return f"otpauth://totp/{iss}:{user}?secret={v}&issuer={iss}&algorithm=SHA1&digits=6&period=30"


def x_totp_py(sp, n, v):
    return f">>> import pyotp\n>>> totp = pyotp.TOTP(\"{v}\")\n>>> totp.now()\n'{R.randint(100000, 999999)}'"


# --------------------------------------------------------------------------
# generic specs
def S(f, k, g, names, label, t="api", **kw):
    d = {"f": f, "k": k, "g": g, "names": names, "label": label, "t": t}
    d.update(kw)
    return d


def azure_cs():
    return rs(AN, 3) + pick(DIG) + "Q~" + rs(AN + "_~.-", 33) + pick(AN)


def discord_bot():
    sf = str(R.randint(10 ** 17, 13 * 10 ** 17))
    return b64u(sf.encode()) + "." + rs(B64U, 6) + "." + rs(B64U, 38)


def mapbox_sk():
    pl = json.dumps({"u": pick(["acme-maps", "ana-dev", "fleetops"]), "a": rs(ANL, 25)}, separators=(",", ":"))
    return "sk." + b64u(pl.encode()) + "." + rs(B64U, 22)


def supabase_sr():
    ref = rs(LO, 20)
    return jwt({"iss": "supabase", "ref": ref, "role": "service_role", "iat": NOW - R.randint(10 ** 6, 10 ** 8), "exp": NOW + 10 ** 9})


def grafana_glc():
    pl = {"o": str(R.randint(100000, 999999)), "n": pick(["alloy-write", "ci-read"]), "k": rs(AN, 24), "m": {"r": pick(["prod-eu-west-2", "prod-us-east-0"])}}
    return "glc_" + b64u(json.dumps(pl, separators=(",", ":")).encode())


def sentry_org():
    pl = {"iat": NOW - R.randint(10 ** 5, 10 ** 7), "url": "https://sentry.io", "region_url": "https://de.sentry.io", "org": pick(["acme", "segue"])}
    return "sntrys_" + b64u(json.dumps(pl, separators=(",", ":")).encode()) + "_" + rs(B64U, 43)


def op_sa():
    pl = {"signInAddress": "my.1password.com", "userAuth": {"method": "SRPg-4096", "alg": "PBES2g-HS256", "iterations": 650000, "salt": rs(B64U, 22)},
          "email": rs(ANL, 13) + "@1passwordserviceaccounts.com", "srpX": rs(HEX, 64),
          "muk": {"alg": "A256GCM", "ext": True, "k": rs(B64U, 43), "key_ops": ["encrypt", "decrypt"], "kty": "oct", "kid": "mp"},
          "secretKey": "A3-" + rs(ANU, 6) + "-" + rs(ANU, 6) + "-" + rs(ANU, 5) + "-" + rs(ANU, 5) + "-" + rs(ANU, 5) + "-" + rs(ANU, 5),
          "throttleSecret": {"seed": rs(HEX, 64), "uuid": rs(ANU, 26)}, "deviceUuid": rs(ANL, 26)}
    return "ops_" + b64u(json.dumps(pl, separators=(",", ":")).encode())


def fly_tok():
    t = "fm2_lJPECAAAAAAAA" + rs(B64, R.randint(200, 320))
    return "FlyV1 " + t, t


def laravel():
    k = b64(32)
    return "base64:" + k, k


def seed_phrase():
    return " ".join(pick(BIP) for _ in range(pick([12, 12, 24])))


def akid():
    return "AKIA" + rs(UP + "234567", 16)


AWS_X = {"file/aws-credentials": x_aws_creds, "shell/sts-assume-role": x_aws_sts, "shell/export-session": x_aws_env3, "code/boto3": x_boto3}

SPECS = [
    # ---- cloud
    S("aws", "access-key-id", akid, ["AWS_ACCESS_KEY_ID"], "AWS access key", t="kv", slot="akid", n=4, extra=AWS_X),
    S("aws", "secret-access-key", lambda: rs(AN + "+/", 40), ["AWS_SECRET_ACCESS_KEY", "aws_secret_access_key"], "AWS secret key", t="kv", slot="sk", n=5,
      extra=AWS_X, nourl=True),
    S("aws", "session-token", aws_session, ["AWS_SESSION_TOKEN"], "AWS session token", t="kv", slot="st", n=3,
      extra={"shell/sts-assume-role": x_aws_sts, "shell/export-session": x_aws_env3}, nourl=True),
    S("gcp", "api-key", lambda: "AIza" + rs(B64U, 35), ["GOOGLE_MAPS_SERVER_KEY", "GCP_API_KEY"], "Google Cloud API key",
      host="maps.googleapis.com", path="/maps/api/geocode/json", hdr=("X-Goog-Api-Key", "{v}"), qp="key"),
    S("gcp", "oauth-client-secret", lambda: "GOCSPX-" + rs(B64U, 28), ["GOOGLE_CLIENT_SECRET"], "Google OAuth client secret", t="kv",
      extra={"file/client-secret-json": x_gcp_oauth}),
    S("azure", "ad-client-secret", azure_cs, ["AZURE_CLIENT_SECRET", "ARM_CLIENT_SECRET"], "Azure AD client secret", t="kv", n=4),
    S("digitalocean", "pat", lambda: "dop_v1_" + rs(HEX, 64), ["DIGITALOCEAN_TOKEN", "DO_API_TOKEN"], "DigitalOcean token",
      host="api.digitalocean.com", path="/v2/account"),
    S("linode", "pat", lambda: rs(HEX, 64), ["LINODE_TOKEN", "LINODE_CLI_TOKEN"], "Linode token", host="api.linode.com", path="/v4/profile"),
    S("hetzner", "api-token", lambda: rs(AN, 64), ["HCLOUD_TOKEN"], "Hetzner Cloud token", host="api.hetzner.cloud", path="/v1/servers"),
    S("scaleway", "secret-key", uuid4, ["SCW_SECRET_KEY"], "Scaleway secret key", host="api.scaleway.com", path="/instance/v1/zones/fr-par-1/servers",
      hdr=("X-Auth-Token", "{v}")),
    S("ovh", "application-secret", lambda: rs(ANL, 32), ["OVH_APPLICATION_SECRET", "OVH_CONSUMER_KEY"], "OVH application secret", t="kv"),
    S("alibaba", "access-key-secret", lambda: rs(AN, 30), ["ALIBABA_CLOUD_ACCESS_KEY_SECRET", "ALICLOUD_SECRET_KEY"], "Alibaba Cloud AccessKey secret", t="kv"),
    S("alibaba", "access-key-id", lambda: "LTAI5t" + rs(AN, 18), ["ALIBABA_CLOUD_ACCESS_KEY_ID"], "Alibaba Cloud AccessKey ID", t="kv", n=2),
    S("ibm", "api-key", lambda: rs(B64U, 44), ["IBMCLOUD_API_KEY", "IC_API_KEY"], "IBM Cloud API key", t="kv"),
    S("oracle", "auth-token", lambda: rs(AN + "()<>;:+_-#[]{}", 19) + pick(AN), ["OCI_AUTH_TOKEN", "OCIR_PASSWORD"], "OCI auth token", t="kv", nourl=True),
    S("oracle", "customer-secret-key", lambda: b64(32), ["OCI_S3_SECRET_KEY"], "OCI customer secret key", t="kv", n=2),
    # ---- dev platforms
    S("github", "classic-pat", lambda: gh("ghp_"), ["GITHUB_TOKEN", "GH_TOKEN"], "GitHub token", host="api.github.com", path="/user",
      hdr=pick(["bearer", ("Authorization", "token {v}")]), n=5, extra={"vcs/remote-url": x_gh_remote, "file/gh-hosts": x_gh_hosts}),
    S("github", "fine-grained-pat", lambda: "github_pat_11" + rs(ANU, 9) + "0" + rs(AN, 10) + "_" + rs(AN, 59), ["GITHUB_PAT", "GH_TOKEN"],
      "fine-grained PAT", host="api.github.com", path="/repos/acme/infra", n=4, extra={"vcs/remote-url": x_gh_remote}),
    S("github", "app-installation-token", lambda: gh("ghs_"), ["GITHUB_APP_TOKEN"], "GitHub App token", host="api.github.com",
      path="/installation/repositories", extra={"vcs/remote-url": x_gh_remote}),
    S("github", "oauth-token", lambda: gh("gho_"), ["GH_OAUTH_TOKEN"], "GitHub OAuth token", host="api.github.com", path="/user",
      extra={"file/gh-hosts": x_gh_hosts}),
    S("github", "user-to-server", lambda: gh("ghu_"), ["GITHUB_USER_TOKEN"], "GitHub user token", host="api.github.com", path="/user", n=2),
    S("github", "refresh-token", lambda: "ghr_" + rs(AN, 76), ["GITHUB_REFRESH_TOKEN"], "GitHub refresh token", t="kv", n=2),
    S("gitlab", "pat", lambda: "glpat-" + rs(B64U, 20), ["GITLAB_TOKEN", "CI_JOB_PAT"], "GitLab token", host="gitlab.com", path="/api/v4/user",
      hdr=("PRIVATE-TOKEN", "{v}"), n=4, extra={"vcs/remote-url": x_gl_remote}),
    S("gitlab", "runner-token", lambda: "glrt-" + rs(B64U, 20), ["RUNNER_TOKEN", "CI_SERVER_TOKEN"], "GitLab runner token", t="kv",
      extra={"file/runner-config": x_gl_runner}),
    S("gitlab", "deploy-token", lambda: "gldt-" + rs(B64U, 20), ["GITLAB_DEPLOY_TOKEN"], "GitLab deploy token", t="kv", extra={"vcs/remote-url": x_gl_remote}),
    S("gitlab", "pipeline-trigger", lambda: "glptt-" + rs(HEX, 40), ["TRIGGER_TOKEN"], "pipeline trigger token", t="kv", n=2),
    S("bitbucket", "app-password", lambda: "ATBB" + rs(AN, 32), ["BITBUCKET_APP_PASSWORD"], "Bitbucket app password", t="kv", extra={"vcs/remote-url": x_bb_remote}),
    S("npm", "automation-token", lambda: "npm_" + rs(AN, 36), ["NPM_TOKEN", "NODE_AUTH_TOKEN"], "npm token", t="kv", n=4, extra={"file/npmrc": x_npmrc}),
    S("pypi", "api-token", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(B64U, R.randint(140, 180)), ["PYPI_TOKEN", "TWINE_PASSWORD"], "PyPI token", t="kv",
      n=4, extra={"file/pypirc": x_pypirc, "shell/twine": x_twine}),
    S("rubygems", "api-key", lambda: "rubygems_" + rs(HEX, 48), ["GEM_HOST_API_KEY"], "RubyGems API key", t="kv", extra={"file/gem-credentials": x_gem}),
    S("nuget", "api-key", lambda: "oy2" + rs(ANL, 43), ["NUGET_API_KEY"], "NuGet API key", t="kv", extra={"shell/nuget": x_nuget}),
    S("dockerhub", "pat", lambda: "dckr_pat_" + rs(B64U, 27), ["DOCKERHUB_TOKEN", "DOCKER_PASSWORD"], "Docker Hub token", t="kv", n=4,
      extra={"shell/docker-login": x_docker_login}),
    S("jfrog", "api-key", lambda: "AKCp8" + rs(AN, 68), ["ARTIFACTORY_API_KEY", "JFROG_API_KEY"], "Artifactory API key", host="acme.jfrog.io",
      path="/artifactory/api/repositories", hdr=("X-JFrog-Art-Api", "{v}"), extra={"file/maven-settings": x_mvn}),
    S("jfrog", "access-token", lambda: "cmVmdGtuOjAxOjE3" + rs(AN, 48), ["JFROG_ACCESS_TOKEN", "JF_ACCESS_TOKEN"], "JFrog reference token",
      host="acme.jfrog.io", path="/access/api/v1/tokens", extra={"shell/jf-config": x_jf}),
    S("sonatype", "user-token", lambda: rs(B64U, 44), ["SONATYPE_PASSWORD", "OSSRH_TOKEN_PASSWORD"], "Sonatype user token", t="kv",
      extra={"file/maven-settings": x_mvn, "file/gradle-properties": x_gradle}),
    # ---- SaaS
    S("stripe", "live-secret", lambda: "sk_live_51" + rs(AN, 97), ["STRIPE_SECRET_KEY", "STRIPE_API_KEY"], "Stripe secret key", host="api.stripe.com",
      path="/v1/charges", n=5),
    S("stripe", "restricted", lambda: "rk_live_51" + rs(AN, 97), ["STRIPE_RESTRICTED_KEY"], "Stripe restricted key", host="api.stripe.com", path="/v1/customers"),
    S("stripe", "webhook-secret", lambda: "whsec_" + rs(AN, 32), ["STRIPE_WEBHOOK_SECRET"], "webhook signing secret", t="kv", n=4,
      extra={"shell/stripe-listen": x_stripe_listen}),
    S("twilio", "auth-token", lambda: rs(HEX, 32), ["TWILIO_AUTH_TOKEN"], "Twilio auth token", t="kv", n=3, extra={"code/twilio": x_twilio}),
    S("twilio", "api-key-secret", lambda: rs(AN, 32), ["TWILIO_API_SECRET"], "Twilio API key secret", t="kv", n=2),
    S("sendgrid", "api-key", lambda: "SG." + rs(B64U, 22) + "." + rs(B64U, 43), ["SENDGRID_API_KEY", "EMAIL_HOST_PASSWORD"], "SendGrid API key",
      host="api.sendgrid.com", path="/v3/mail/send", n=4),
    S("mailgun", "api-key", lambda: pick(["key-" + rs(HEX, 32), rs(HEX, 32) + "-" + rs(HEX, 8) + "-" + rs(HEX, 8)]), ["MAILGUN_API_KEY"],
      "Mailgun key", t="kv", extra={"shell/curl-user": x_mailgun}),
    S("postmark", "server-token", uuid4, ["POSTMARK_SERVER_TOKEN", "POSTMARK_API_TOKEN"], "Postmark server token", host="api.postmarkapp.com",
      path="/email", hdr=("X-Postmark-Server-Token", "{v}")),
    S("slack", "bot-token", lambda: f"xoxb-{rs(DIG, 12)}-{rs(DIG, 13)}-{rs(AN, 24)}", ["SLACK_BOT_TOKEN"], "Slack bot token", host="slack.com",
      path="/api/chat.postMessage", n=5),
    S("slack", "user-token", lambda: f"xoxp-{rs(DIG, 12)}-{rs(DIG, 12)}-{rs(DIG, 13)}-{rs(HEX, 32)}", ["SLACK_USER_TOKEN"], "Slack user token",
      host="slack.com", path="/api/search.messages"),
    S("slack", "app-token", lambda: f"xapp-1-A{rs(ANU, 10)}-{rs(DIG, 13)}-{rs(HEX, 64)}", ["SLACK_APP_TOKEN"], "Slack app-level token", t="kv"),
    S("slack", "signing-secret", lambda: rs(HEX, 32), ["SLACK_SIGNING_SECRET"], "Slack signing secret", t="kv", n=2),
    S("discord", "bot-token", discord_bot, ["DISCORD_TOKEN", "DISCORD_BOT_TOKEN"], "Discord bot token", host="discord.com", path="/api/v10/users/@me",
      hdr=("Authorization", "Bot {v}"), n=4),
    S("telegram", "bot-token", lambda: f"{R.randint(10 ** 9, 8 * 10 ** 9)}:AA{rs(B64U, 33)}", ["TELEGRAM_BOT_TOKEN", "TG_TOKEN"], "Telegram bot token",
      t="kv", n=4, extra={"code/telegram-url": x_tg_url, "log/telegram-url": x_tg_log}, nourl=True),
    S("shopify", "admin-token", lambda: "shpat_" + rs(HEX, 32), ["SHOPIFY_ACCESS_TOKEN", "SHOPIFY_ADMIN_API_TOKEN"], "Shopify admin token",
      host="acme-store.myshopify.com", path="/admin/api/2024-10/products.json", hdr=("X-Shopify-Access-Token", "{v}")),
    S("shopify", "shared-secret", lambda: "shpss_" + rs(HEX, 32), ["SHOPIFY_API_SECRET"], "Shopify app secret", t="kv", n=2),
    S("hubspot", "private-app", lambda: pick(["pat-na1-", "pat-eu1-"]) + uuid4(), ["HUBSPOT_ACCESS_TOKEN"], "HubSpot private app token",
      host="api.hubapi.com", path="/crm/v3/objects/contacts"),
    S("atlassian", "api-token", lambda: "ATATT3xFfGF0" + rs(B64U, 170) + "=" + rs(HEX.upper(), 8), ["JIRA_API_TOKEN", "CONFLUENCE_API_TOKEN"],
      "Atlassian API token", t="kv", n=4),
    S("linear", "api-key", lambda: "lin_api_" + rs(AN, 40), ["LINEAR_API_KEY"], "Linear API key", host="api.linear.app", path="/graphql",
      hdr=("Authorization", "{v}")),
    S("notion", "integration", lambda: pick(["secret_" + rs(AN, 43), "ntn_" + rs(DIG, 11) + rs(AN, 35)]), ["NOTION_TOKEN", "NOTION_API_KEY"],
      "Notion integration secret", host="api.notion.com", path="/v1/databases/query", n=4),
    S("airtable", "pat", lambda: "pat" + rs(AN, 14) + "." + rs(HEX, 64), ["AIRTABLE_API_KEY", "AIRTABLE_PAT"], "Airtable token",
      host="api.airtable.com", path="/v0/meta/bases"),
    S("asana", "pat", lambda: f"2/{rs(DIG, 16)}/{rs(DIG, 16)}:{rs(HEX, 32)}", ["ASANA_ACCESS_TOKEN"], "Asana PAT", host="app.asana.com",
      path="/api/1.0/users/me", nourl=True),
    S("figma", "pat", lambda: "figd_" + rs(B64U, 40), ["FIGMA_TOKEN"], "Figma token", host="api.figma.com", path="/v1/me",
      hdr=("X-Figma-Token", "{v}")),
    S("sentry", "user-auth-token", lambda: "sntryu_" + rs(HEX, 64), ["SENTRY_AUTH_TOKEN"], "Sentry auth token", host="sentry.io",
      path="/api/0/projects/"),
    S("sentry", "org-auth-token", sentry_org, ["SENTRY_AUTH_TOKEN"], "Sentry org token", t="kv"),
    S("datadog", "api-key", lambda: rs(HEX, 32), ["DD_API_KEY", "DATADOG_API_KEY"], "Datadog API key", host="api.datadoghq.eu",
      path="/api/v1/validate", hdr=("DD-API-KEY", "{v}"), n=4),
    S("datadog", "app-key", lambda: rs(HEX, 40), ["DD_APP_KEY", "DATADOG_APP_KEY"], "Datadog application key", host="api.datadoghq.com",
      path="/api/v1/monitor", hdr=("DD-APPLICATION-KEY", "{v}")),
    S("newrelic", "user-key", lambda: "NRAK-" + rs(ANU, 27), ["NEW_RELIC_API_KEY"], "New Relic user key", host="api.newrelic.com",
      path="/graphql", hdr=("API-Key", "{v}")),
    S("newrelic", "license-key", lambda: rs(HEX, 36) + "NRAL", ["NEW_RELIC_LICENSE_KEY"], "New Relic license key", t="kv"),
    S("pagerduty", "api-token", lambda: rs(AN + "_-+", 19) + pick(AN), ["PAGERDUTY_TOKEN"], "PagerDuty token", host="api.pagerduty.com",
      path="/incidents", hdr=("Authorization", "Token token={v}"), nourl=True),
    S("grafana", "service-account", lambda: "glsa_" + rs(AN, 32) + "_" + rs(HEX, 8), ["GRAFANA_TOKEN", "GRAFANA_SA_TOKEN"], "Grafana token",
      host="grafana.internal.example.com", path="/api/dashboards/uid/abc"),
    S("grafana", "cloud-access-policy", grafana_glc, ["GRAFANA_CLOUD_TOKEN"], "Grafana Cloud token", t="kv", n=2),
    S("honeycomb", "ingest-key", lambda: "hcaik_01" + rs(ANL, 56), ["HONEYCOMB_API_KEY"], "Honeycomb key", host="api.honeycomb.io",
      path="/1/auth", hdr=("X-Honeycomb-Team", "{v}")),
    S("algolia", "admin-key", lambda: rs(HEX, 32), ["ALGOLIA_ADMIN_KEY", "ALGOLIA_WRITE_API_KEY"], "Algolia admin key",
      host=rs(ANU, 10) + "-dsn.algolia.net", path="/1/indexes", hdr=("X-Algolia-API-Key", "{v}")),
    S("mapbox", "secret-token", mapbox_sk, ["MAPBOX_SECRET_TOKEN", "MAPBOX_DOWNLOADS_TOKEN"], "Mapbox secret token", t="kv"),
    S("okta", "api-token", lambda: "00" + rs(B64U, 40), ["OKTA_API_TOKEN"], "Okta API token", t="kv", extra={"shell/curl-ssws": x_okta}),
    S("auth0", "client-secret", lambda: rs(B64U, 64), ["AUTH0_CLIENT_SECRET"], "Auth0 client secret", t="kv", n=4),
    S("supabase", "service-role-jwt", supabase_sr, ["SUPABASE_SERVICE_ROLE_KEY"], "Supabase service_role key", host=rs(LO, 20) + ".supabase.co",
      path="/rest/v1/profiles", n=4),
    S("supabase", "secret-key", lambda: "sb_secret_" + rs(B64U, 31), ["SUPABASE_SECRET_KEY"], "Supabase secret key", t="kv", n=2),
    S("firebase", "fcm-server-key", lambda: "AAAA" + rs(B64U, 7) + ":APA91b" + rs(B64U, 134), ["FCM_SERVER_KEY"], "FCM server key",
      host="fcm.googleapis.com", path="/fcm/send", hdr=("Authorization", "key={v}"), nourl=True),
    S("clerk", "secret-key", lambda: "sk_live_" + rs(AN, 46), ["CLERK_SECRET_KEY"], "Clerk secret key", host="api.clerk.com", path="/v1/users"),
    S("vercel", "token", lambda: rs(AN, 24), ["VERCEL_TOKEN"], "Vercel token", host="api.vercel.com", path="/v9/projects"),
    S("netlify", "pat", lambda: "nfp_" + rs(AN, 36), ["NETLIFY_AUTH_TOKEN"], "Netlify token", host="api.netlify.com", path="/api/v1/sites"),
    S("flyio", "deploy-token", fly_tok, ["FLY_API_TOKEN"], "Fly.io deploy token", t="kv", n=3, extra={"shell/fly-tokens": x_fly_create}, nourl=True),
    S("heroku", "api-key", lambda: pick(["HRKU-AA" + rs(B64U, 58), uuid4()]), ["HEROKU_API_KEY"], "Heroku API key", host="api.heroku.com",
      path="/apps", extra={"shell/heroku-auth": x_heroku_auth}),
    S("render", "api-key", lambda: "rnd_" + rs(AN, 32), ["RENDER_API_KEY"], "Render API key", host="api.render.com", path="/v1/services"),
    S("railway", "token", uuid4, ["RAILWAY_TOKEN", "RAILWAY_API_TOKEN"], "Railway token", t="kv"),
    S("cloudflare", "api-token", lambda: rs(B64U, 40), ["CLOUDFLARE_API_TOKEN", "CF_API_TOKEN"], "Cloudflare API token",
      host="api.cloudflare.com", path="/client/v4/user/tokens/verify", n=4),
    S("cloudflare", "global-api-key", lambda: rs(HEX, 37), ["CLOUDFLARE_API_KEY", "CF_API_KEY"], "Cloudflare global API key", t="kv",
      extra={"shell/curl-x-auth-key": x_cf_global}),
    S("doppler", "service-token", lambda: "dp.st." + pick(["prd", "dev", "stg"]) + "." + rs(AN, 40), ["DOPPLER_TOKEN"], "Doppler token", t="kv",
      extra={"shell/doppler-token": x_doppler}),
    S("1password", "service-account", op_sa, ["OP_SERVICE_ACCOUNT_TOKEN"], "1Password service account token", t="kv"),
    S("vault", "token", lambda: pick(["hvs." + rs(AN, 24), "hvs.CAESI" + rs(B64U, 86), "hvb." + rs(AN, 90)]), ["VAULT_TOKEN"], "Vault token",
      host="vault.internal.example.com:8200", path="/v1/secret/data/app", hdr=("X-Vault-Token", "{v}"), n=4,
      extra={"shell/vault-login": x_vault_login}),
    S("terraform-cloud", "api-token", lambda: rs(AN, 14) + ".atlasv1." + rs(AN, 67), ["TFE_TOKEN", "TF_TOKEN_app_terraform_io"], "Terraform Cloud token",
      host="app.terraform.io", path="/api/v2/account/details", extra={"file/terraformrc": x_tfrc}),
    S("pulumi", "access-token", lambda: "pul-" + rs(HEX, 40), ["PULUMI_ACCESS_TOKEN"], "Pulumi token", t="kv"),
    # ---- AI
    S("openai", "project-key", lambda: "sk-proj-" + rs(B64U, 74) + "T3BlbkFJ" + rs(B64U, 74), ["OPENAI_API_KEY"], "OpenAI API key",
      host="api.openai.com", path="/v1/chat/completions", n=6, extra={"code/openai-sdk": x_openai_py}),
    S("openai", "service-account-key", lambda: "sk-svcacct-" + rs(B64U, 74) + "T3BlbkFJ" + rs(B64U, 74), ["OPENAI_API_KEY"], "OpenAI key",
      host="api.openai.com", path="/v1/responses", n=2),
    S("anthropic", "api-key", lambda: "sk-ant-api03-" + rs(B64U, 93) + "AA", ["ANTHROPIC_API_KEY"], "Anthropic API key", host="api.anthropic.com",
      path="/v1/messages", hdr=("x-api-key", "{v}"), n=6, extra={"code/anthropic-sdk": x_anthropic_py}),
    S("anthropic", "admin-key", lambda: "sk-ant-admin01-" + rs(B64U, 93) + "AA", ["ANTHROPIC_ADMIN_KEY"], "Anthropic admin key",
      host="api.anthropic.com", path="/v1/organizations/users", hdr=("x-api-key", "{v}"), n=2),
    S("google-ai", "gemini-key", lambda: "AIza" + rs(B64U, 35), ["GEMINI_API_KEY", "GOOGLE_API_KEY"], "Gemini API key",
      host="generativelanguage.googleapis.com", path="/v1beta/models/gemini-2.0-flash:generateContent", hdr=("x-goog-api-key", "{v}"), qp="key", n=4),
    S("groq", "api-key", lambda: "gsk_" + rs(AN, 52), ["GROQ_API_KEY"], "Groq API key", host="api.groq.com", path="/openai/v1/chat/completions"),
    S("mistral", "api-key", lambda: rs(AN, 32), ["MISTRAL_API_KEY"], "Mistral API key", host="api.mistral.ai", path="/v1/chat/completions"),
    S("cohere", "api-key", lambda: rs(AN, 40), ["COHERE_API_KEY", "CO_API_KEY"], "Cohere API key", host="api.cohere.com", path="/v2/chat"),
    S("replicate", "api-token", lambda: "r8_" + rs(AN, 37), ["REPLICATE_API_TOKEN"], "Replicate token", host="api.replicate.com", path="/v1/predictions"),
    S("huggingface", "user-token", lambda: "hf_" + rs(UP + LO, 34), ["HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"], "Hugging Face token",
      host="huggingface.co", path="/api/whoami-v2", n=4, extra={"shell/hf-login": x_hf_login}),
    S("together", "api-key", lambda: "tgp_v1_" + rs(B64U, 43), ["TOGETHER_API_KEY"], "Together API key", host="api.together.xyz", path="/v1/chat/completions"),
    S("perplexity", "api-key", lambda: "pplx-" + rs(AN, 48), ["PERPLEXITY_API_KEY", "PPLX_API_KEY"], "Perplexity API key", host="api.perplexity.ai",
      path="/chat/completions"),
    S("deepseek", "api-key", lambda: "sk-" + rs(HEX, 32), ["DEEPSEEK_API_KEY"], "DeepSeek API key", host="api.deepseek.com", path="/chat/completions"),
    S("xai", "api-key", lambda: "xai-" + rs(AN, 80), ["XAI_API_KEY"], "xAI API key", host="api.x.ai", path="/v1/chat/completions"),
    S("openrouter", "api-key", lambda: "sk-or-v1-" + rs(HEX, 64), ["OPENROUTER_API_KEY"], "OpenRouter key", host="openrouter.ai",
      path="/api/v1/chat/completions"),
    S("elevenlabs", "api-key", lambda: "sk_" + rs(HEX, 48), ["ELEVENLABS_API_KEY", "XI_API_KEY"], "ElevenLabs API key", host="api.elevenlabs.io",
      path="/v1/user", hdr=("xi-api-key", "{v}")),
    # ---- data platforms
    S("databricks", "pat", lambda: "dapi" + rs(HEX, 32) + pick(["", "-2", "-3"]), ["DATABRICKS_TOKEN"], "Databricks token",
      host="adb-" + rs(DIG, 16) + ".7.azuredatabricks.net", path="/api/2.0/clusters/list", n=4, extra={"file/databrickscfg": x_databrickscfg}),
    S("planetscale", "service-token", lambda: "pscale_tkn_" + rs(B64U, 43), ["PLANETSCALE_SERVICE_TOKEN"], "PlanetScale token", t="kv", n=2),
    S("neon", "api-key", lambda: "napi_" + rs(ANL, 60), ["NEON_API_KEY"], "Neon API key", host="console.neon.tech", path="/api/v2/projects", n=2),
    S("upstash", "redis-rest-token", lambda: "A" + rs(AN, 3) + "ASQg" + rs(B64U, 76), ["UPSTASH_REDIS_REST_TOKEN", "KV_REST_API_TOKEN"],
      "Upstash token", host=pick(["eu1", "us1", "apn1"]) + "-" + pick(BIP) + "-" + str(R.randint(10000, 99999)) + ".upstash.io", path="/get/session"),
    # ---- private keys as single-line values
    S("ethereum", "private-key", lambda: "0x" + rs(HEX, 64), ["PRIVATE_KEY", "DEPLOYER_PRIVATE_KEY", "WALLET_PRIVATE_KEY"], "wallet private key",
      t="kv", n=4, extra={"code/hardhat": x_eth_hardhat, "shell/forge": x_eth_forge}),
    S("age", "secret-key", lambda: "AGE-SECRET-KEY-1" + rs(BECH.upper(), 58), ["SOPS_AGE_KEY"], "age key", t="kv", n=3,
      extra={"shell/age-keygen": x_age, "shell/sops": x_sops_env}, only=["shell/age-keygen", "shell/sops", "ci/github-actions", "lang", "file/dotenv"]),
    S("wireguard", "private-key", lambda: b64(32), ["WG_PRIVATE_KEY", "WIREGUARD_PRIVATE_KEY"], "WireGuard private key", t="kv", n=4,
      extra={"file/wg-conf": x_wg, "shell/wg-genkey": x_wg_genkey}, only=["file/wg-conf", "shell/wg-genkey", "docker/compose", "lang", "agent/tool-json"]),
    S("bip39", "seed-phrase", seed_phrase, ["MNEMONIC", "SEED_PHRASE", "WALLET_MNEMONIC"], "seed phrase", t="kv", n=4, nourl=True,
      only=["file/dotenv", "code/js", "lang", "config/json", "agent/tool-json"]),
    # ---- generic app secrets
    S("jwt", "access-token", lambda: jwt({"sub": str(R.randint(1000, 99999)), "email": pick(["ana", "lucas", "mei"]) + "@example.com",
                                           "scope": "read write", "iat": NOW - 600, "exp": NOW + 3000, "iss": "https://auth.example.com/"},
                                          pick(["HS256", "RS256"])), ["ACCESS_TOKEN", "AUTH_TOKEN"], "access token",
      host="api.example.com", path="/v1/orders", n=5),
    S("django", "secret-key", lambda: pick(["django-insecure-", ""]) + rs("abcdefghijklmnopqrstuvwxyz0123456789!@#%^&*(-_=+)", 50),
      ["DJANGO_SECRET_KEY", "SECRET_KEY"], "Django SECRET_KEY", t="kv", n=4, nourl=True, extra={"code/django-settings": x_django}),
    S("rails", "secret-key-base", lambda: rs(HEX, 128), ["SECRET_KEY_BASE"], "secret_key_base", t="kv", n=3),
    S("rails", "master-key", lambda: rs(HEX, 32), ["RAILS_MASTER_KEY"], "Rails master key", t="kv", n=3, extra={"shell/master-key": x_rails_master}),
    S("laravel", "app-key", laravel, ["APP_KEY"], "Laravel APP_KEY", t="kv", n=4, nourl=True),
    S("nextauth", "secret", lambda: b64(32), ["NEXTAUTH_SECRET", "AUTH_SECRET"], "NextAuth secret", t="kv", n=4),
    S("encryption-key", "hex-256", lambda: rs(HEX, 64), ["ENCRYPTION_KEY", "DATA_ENCRYPTION_KEY", "AES_KEY"], "encryption key", t="kv", n=3),
    S("encryption-key", "fernet", lambda: base64.urlsafe_b64encode(rb(32)).decode(), ["FERNET_KEY"], "Fernet key", t="kv", n=3,
      extra={"repl/python": x_fernet}),
    S("encryption-key", "jwt-secret", lambda: pick([rs(AN, 48), b64(48)]), ["JWT_SECRET", "SESSION_SECRET", "COOKIE_SECRET"], "JWT signing secret",
      t="kv", n=4),
    S("webhook-secret", "github", lambda: rs(HEX, 40), ["GITHUB_WEBHOOK_SECRET"], "GitHub webhook secret", t="kv", n=2),
    S("webhook-secret", "svix", lambda: "whsec_" + b64(24), ["SVIX_WEBHOOK_SECRET", "CLERK_WEBHOOK_SECRET"], "Svix webhook secret", t="kv", n=2),
    S("totp", "seed", lambda: rs(B32, pick([16, 32])), ["TOTP_SECRET", "MFA_SEED"], "TOTP seed", t="kv", n=5,
      extra={"prose/totp-manual": x_totp_manual, "url/otpauth": x_totp_uri, "repl/pyotp": x_totp_py},
      only=["prose/totp-manual", "url/otpauth", "repl/pyotp", "file/dotenv", "lang", "agent/tool-json"]),
]


# --------------------------------------------------------------------------
# structured kinds: each yields (text, secret, context)
def ctx_cycle(names, n):
    names = list(names)
    R.shuffle(names)
    return [names[i % len(names)] for i in range(n)]


def wrap_tool(inner):
    o = pick([
        {"type": "tool_result", "tool_use_id": "toolu_01" + rs(AN, 22), "content": inner},
        {"role": "tool", "tool_call_id": "call_" + rs(AN, 24), "content": inner},
        {"type": "function_call_output", "call_id": "call_" + rs(AN, 24), "output": inner},
    ])
    return json.dumps(o, ensure_ascii=False)


def sa_json():
    lines = pkcs8_lines()
    proj = pick(["acme-prod", "segue-data", "ml-pipeline"]) + "-" + str(R.randint(100000, 999999))
    kid = rs(HEX, 40)
    d = {"type": "service_account", "project_id": proj, "private_key_id": kid,
         "private_key": pem("PRIVATE KEY", lines) + "\n",
         "client_email": f"{pick(['ci-deployer', 'bq-reader', 'terraform'])}@{proj}.iam.gserviceaccount.com",
         "client_id": rs(DIG, 21), "auth_uri": "https://accounts.google.com/o/oauth2/auth",
         "token_uri": "https://oauth2.googleapis.com/token",
         "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
         "client_x509_cert_url": f"https://www.googleapis.com/robot/v1/metadata/x509/ci-deployer%40{proj}.iam.gserviceaccount.com",
         "universe_domain": "googleapis.com"}
    return d, kid, lines[0]


def rows_gcp_sa(kind, n):
    out = []
    for c in ctx_cycle(["file/cat-json", "agent/tool-json", "k8s/secret-block", "ci/env-oneline", "iac/heredoc", "chat/md-fence"], n):
        d, kid, line = sa_json()
        sec = kid if kind == "private-key-id" else line
        js = json.dumps(d, indent=2)
        if c == "file/cat-json":
            t = f"{pick(PROMPTS)}cat ~/Downloads/{d['project_id']}-{kid[:12]}.json\n{js}"
        elif c == "agent/tool-json":
            t = wrap_tool(f"$ cat credentials/sa.json\n{js}")
        elif c == "k8s/secret-block":
            t = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: gcp-sa\ntype: Opaque\nstringData:\n  key.json: |\n" + "\n".join("    " + x for x in js.splitlines())
        elif c == "ci/env-oneline":
            t = f"{gha_ts()} env:\n{gha_ts()}   GOOGLE_CREDENTIALS: {json.dumps(d)}\n{gha_ts()} Error: google: could not find default credentials."
        elif c == "iac/heredoc":
            t = f"provider \"google\" {{\n  project     = \"{d['project_id']}\"\n  credentials = <<EOF\n{js}\nEOF\n}}"
        else:
            t = f"{pick(CHAT_INTRO)}\n\n```json\n{js}\n```"
        out.append((t, sec, c))
    return out


def azure_key():
    return base64.b64encode(rb(64)).decode()


def rows_azure_conn(kind, n):
    out = []
    for c in ctx_cycle(["config/appsettings", "file/dotenv", "code/csharp", "shell/az-cli", "config/functions-local", "lang"], n):
        acct = pick(["acmeprodstore", "segueartifacts", "mlfeatures01", "stlogs" + rs(ANL, 6)])
        key = azure_key()
        cs = f"DefaultEndpointsProtocol=https;AccountName={acct};AccountKey={key};EndpointSuffix=core.windows.net"
        ctx = c
        if c == "config/appsettings":
            t = json.dumps({"Logging": {"LogLevel": {"Default": "Information"}}, "ConnectionStrings": {"Storage": cs}, "AllowedHosts": "*"}, indent=2)
        elif c == "file/dotenv":
            t = f"AZURE_STORAGE_CONNECTION_STRING=\"{cs}\"\nAZURE_CONTAINER=uploads"
        elif c == "code/csharp":
            t = f"var client = new BlobServiceClient(\n    \"{cs}\");\nvar container = client.GetBlobContainerClient(\"uploads\");"
        elif c == "shell/az-cli":
            t = f"$ az storage account show-connection-string -g rg-prod -n {acct}\n" + json.dumps({"connectionString": cs}, indent=2)
        elif c == "config/functions-local":
            t = json.dumps({"IsEncrypted": False, "Values": {"AzureWebJobsStorage": cs, "FUNCTIONS_WORKER_RUNTIME": "python"}}, indent=2)
        else:
            lg = next_lang()
            ctx = f"lang/{lg}"
            t = LANG_KEY2[lg].format(v=cs, what="connection string", n="AZURE_STORAGE_CONNECTION_STRING")
        out.append((t, key, ctx))
    return out


def sas():
    sig = quote(base64.b64encode(rb(32)).decode(), safe="")
    q = f"sv=2022-11-02&ss=bfqt&srt=sco&sp=rwdlacupiytfx&se=2026-12-31T18:00:00Z&st=2026-12-08T10:00:00Z&spr=https&sig={sig}"
    return q, sig


def rows_azure_sas(kind, n):
    out = []
    for c in ctx_cycle(["shell/azcopy", "log/http", "code/python", "file/dotenv", "chat/prose"], n):
        q, sig = sas()
        acct = pick(["acmeprodstore", "segueartifacts", "mlfeatures01"])
        url = f"https://{acct}.blob.core.windows.net/backups/db-2026-12-07.sql.gz?{q}"
        if c == "shell/azcopy":
            t = f"$ azcopy copy ./dump.sql.gz \"{url}\"\nINFO: Scanning...\nJob {uuid4()} has started"
        elif c == "log/http":
            t = f"{ts()}Z ERROR blob upload failed: 403 AuthenticationFailed PUT {url}"
        elif c == "code/python":
            t = f"blob = BlobClient.from_blob_url(\n    \"{url}\"\n)\nblob.upload_blob(data, overwrite=True)"
        elif c == "file/dotenv":
            t = f"AZURE_SAS_TOKEN=?{q}\nAZURE_ACCOUNT={acct}"
        else:
            t = f"Here's a SAS link for the backups container, valid till the end of the month: {url} — let me know if the upload works."
        out.append((t, sig, c))
    return out


# ---- database URLs
def db_user():
    return pick(["app", "postgres", "admin", "svc_billing", "etl_rw", "root", "readonly", "doadmin", "neondb_owner"])


def mk_db(kind):
    p = pw()
    pe = quote(p, safe="")
    u = db_user()
    hostn = pick(["db.internal", "10.0.4.12", "prod-db.cluster-" + rs(ANL, 12) + ".eu-west-1.rds.amazonaws.com", "localhost", "postgres.railway.internal"])
    if kind == "postgres":
        url = f"{pick(['postgres', 'postgresql', 'postgresql+psycopg'])}://{u}:{pe}@{hostn}:5432/{pick(['app', 'billing', 'analytics'])}" + pick(["", "?sslmode=require"])
        return url, pe, p
    if kind == "mysql":
        url = f"{pick(['mysql', 'mysql+pymysql', 'mariadb'])}://{u}:{pe}@{hostn}:3306/{pick(['shop', 'wp', 'crm'])}"
        return url, pe, p
    if kind == "mongodb":
        url = f"mongodb+srv://{u}:{pe}@cluster0.{rs(ANL, 5)}.mongodb.net/{pick(['', 'app', 'test'])}?retryWrites=true&w=majority&appName=Cluster0"
        return url, pe, p
    if kind == "redis":
        if R.random() < 0.5:
            url = f"rediss://default:{pe}@{pick(BIP)}-{pick(BIP)}-{R.randint(10000, 99999)}.upstash.io:6379"
        else:
            url = f"redis://:{pe}@{pick(['redis', 'cache.internal', '127.0.0.1'])}:6379/{R.randint(0, 3)}"
        return url, pe, p
    if kind == "amqp":
        url = f"{pick(['amqp', 'amqps'])}://{pick(['guest', 'celery', 'orders'])}:{pe}@{pick(['rabbitmq', 'mq.internal', 'b-' + uuid4() + '.mq.eu-west-1.amazonaws.com'])}:{pick(['5672', '5671'])}/{pick(['', 'vhost', '%2F'])}"
        return url, pe, p
    if kind == "planetscale":
        p = "pscale_pw_" + rs(B64U, 43)
        url = f"mysql://{rs(ANL, 12)}:{p}@aws.connect.psdb.cloud/{pick(['shop', 'app'])}?sslaccept=strict"
        return url, p, p
    if kind == "neon":
        p = "npg_" + rs(AN, 12)
        url = f"postgresql://neondb_owner:{p}@ep-{pick(BIP)}-{pick(BIP)}-{rs(ANL, 8)}-pooler.{pick(['us-east-2', 'eu-central-1'])}.aws.neon.tech/neondb?sslmode=require"
        return url, p, p
    raise ValueError(kind)


DB_NAMES = {"postgres": "DATABASE_URL", "mysql": "DATABASE_URL", "mongodb": "MONGODB_URI", "redis": "REDIS_URL", "amqp": "CELERY_BROKER_URL",
            "planetscale": "DATABASE_URL", "neon": "DATABASE_URL"}


def rows_dburl(kind, n):
    out = []
    pool = ["file/dotenv", "docker/compose", "k8s/manifest", "code/python", "code/js", "shell/cli", "log/startup", "config/yaml",
            "agent/tool-json", "lang", "iac/hcl", "ci/github-actions", "config/prisma", "config/alembic"]
    for c in ctx_cycle(pool, n):
        url, sec, raw = mk_db(kind)
        nm = DB_NAMES[kind]
        ctx = c
        if c == "file/dotenv":
            q = pick(["", '"'])
            t = "\n".join(benign_dotenv() + [f"{nm}={q}{url}{q}"])
        elif c == "docker/compose":
            t = f"services:\n  worker:\n    build: .\n    environment:\n      - {nm}={url}\n      - LOG_LEVEL=info"
        elif c == "k8s/manifest":
            t = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db-conn\nstringData:\n  {nm}: \"{url}\""
        elif c == "code/python":
            t = pick([f"engine = create_engine(\"{url}\", pool_pre_ping=True)",
                      f"client = MongoClient(\"{url}\")\ndb = client.get_default_database()",
                      f"app = Celery(\"tasks\", broker=\"{url}\")",
                      f"r = redis.from_url(\"{url}\", decode_responses=True)"])
        elif c == "code/js":
            t = pick([f"const pool = new Pool({{ connectionString: '{url}' }});", f"await mongoose.connect(\"{url}\");",
                      f"const redis = new Redis(\"{url}\");", f"export default defineConfig({{ dbCredentials: {{ url: '{url}' }} }});"])
        elif c == "shell/cli":
            cli = {"postgres": "psql", "neon": "psql", "mysql": "mysqlsh --uri", "planetscale": "mysqlsh --uri", "mongodb": "mongosh",
                   "redis": "redis-cli -u", "amqp": "rabbitmqadmin --uri"}[kind]
            t = f"{pick(PROMPTS)}{cli} \"{url}\"\n{pick(['psql: error: connection to server failed: timeout expired', 'Connecting to ...', 'Error: connect ECONNREFUSED', 'Warning: Using a password on the command line interface can be insecure.'])}"
        elif c == "log/startup":
            t = f"{ts()}Z INFO  [{pick(SERVICES)}] connecting to {url}\n{ts()}Z ERROR [{pick(SERVICES)}] connection refused, retry 1/5"
        elif c == "config/yaml":
            t = f"spring:\n  datasource:\n    url: {url}\n  jpa:\n    open-in-view: false" if R.random() < 0.5 else f"database:\n  url: \"{url}\"\n  pool: 10"
        elif c == "agent/tool-json":
            t = wrap_tool(f"$ grep -r {nm} .\n./.env:{nm}={url}\n./README.md:Set {nm} before running migrations.")
        elif c == "lang":
            lg = next_lang()
            ctx = f"lang/{lg}"
            t = LANG_KEY[lg].format(n=nm, v=url, what="connection string")
        elif c == "iac/hcl":
            t = f"resource \"heroku_config\" \"app\" {{\n  sensitive_vars = {{}}\n  vars = {{\n    {nm} = \"{url}\"\n  }}\n}}"
        elif c == "ci/github-actions":
            t = "\n".join(f"{gha_ts()} {x}" for x in ["##[group]Run npm run migrate", "npm run migrate", "env:", f"  {nm}: {url}", "##[endgroup]", "Error: P1001: Can't reach database server"])
        elif c == "config/prisma":
            t = f"datasource db {{\n  provider = \"{'mysql' if kind in ('mysql', 'planetscale') else 'mongodb' if kind == 'mongodb' else 'postgresql'}\"\n  url      = \"{url}\"\n}}"
        else:
            t = f"# alembic.ini\n[alembic]\nscript_location = migrations\nsqlalchemy.url = {url}\n\n[loggers]\nkeys = root,sqlalchemy,alembic"
        if sec not in t:
            continue
        out.append((t, sec, ctx))
    return out


def rows_dsn(kind, n):
    """non-URL DSN formats: password is its own field."""
    out = []
    forms = ["go-mysql", "jdbc", "adonet", "libpq-kv", "django-dict", "rails-yml", "spring-props", "snowflake-py", "snowflake-toml", "pgbouncer"]
    for c in ctx_cycle(forms, n):
        p = pw()
        h = pick(["db.internal", "10.0.7.21", "sql-prod-01"])
        if c == "go-mysql":
            t = f"dsn := \"{db_user()}:{p}@tcp({h}:3306)/orders?parseTime=true&loc=UTC\"\ndb, err := sql.Open(\"mysql\", dsn)"
        elif c == "jdbc":
            p = quote(p, safe="")
            t = f"spring.datasource.url=jdbc:mysql://{h}:3306/crm?user=crm_app&password={p}&useSSL=true"
        elif c == "adonet":
            p = p.replace(";", "") or "x" + rs(AN, 12)
            t = f"\"ConnectionStrings\": {{\n  \"Default\": \"Server={h},1433;Database=Orders;User Id=sa;Password={p};TrustServerCertificate=True;\"\n}}"
        elif c == "libpq-kv":
            p = rs(AN, 20)
            t = f"conn = psycopg.connect(\"host={h} port=5432 dbname=billing user=billing password={p} sslmode=require\")"
        elif c == "django-dict":
            t = (f"DATABASES = {{\n    \"default\": {{\n        \"ENGINE\": \"django.db.backends.postgresql\",\n        \"NAME\": \"app\",\n"
                 f"        \"USER\": \"app\",\n        \"PASSWORD\": \"{p}\",\n        \"HOST\": \"{h}\",\n        \"PORT\": \"5432\",\n    }}\n}}")
        elif c == "rails-yml":
            t = f"production:\n  adapter: postgresql\n  database: app_production\n  username: app\n  password: {yq(p)}\n  host: {h}"
        elif c == "spring-props":
            t = f"spring.datasource.url=jdbc:postgresql://{h}:5432/app\nspring.datasource.username=app\nspring.datasource.password={p}\nspring.jpa.hibernate.ddl-auto=validate"
        elif c == "snowflake-py":
            t = (f"conn = snowflake.connector.connect(\n    user=\"ETL_SVC\",\n    password=\"{p}\",\n    account=\"{rs(ANU, 7)}-{rs(ANU, 7)}\",\n"
                 f"    warehouse=\"COMPUTE_WH\",\n    database=\"ANALYTICS\",\n)")
        elif c == "snowflake-toml":
            t = f"# ~/.snowflake/connections.toml\n[default]\naccount = \"{rs(ANL, 7)}-{rs(ANL, 7)}\"\nuser = \"ana\"\npassword = \"{p}\"\nrole = \"SYSADMIN\""
        else:
            t = f"; pgbouncer userlist.txt\n\"billing\" \"{p}\"\n\"readonly\" \"md5{rs(HEX, 32)}\""
        fam = "snowflake" if c.startswith("snowflake") else "mssql" if c == "adonet" else "mysql" if c in ("go-mysql", "jdbc") else "postgres"
        out.append((t, p, f"dsn/{c}", fam))
    return out


# ---- private key blocks
def rows_pem(kind, n):
    out = []
    pool = ["shell/cat", "config/yaml-block", "file/dotenv-escaped", "agent/tool-json", "code/python", "iac/tf-output", "chat/md-fence", "ci/secret-echo"]
    for c in ctx_cycle(pool, n):
        if kind == "rsa":
            lines = rsa_lines()
            block, sec = pem("RSA PRIVATE KEY", lines), lines[0]
        elif kind == "ec":
            lines = ec_lines()
            block, sec = pem("EC PRIVATE KEY", lines), lines[0]
        elif kind == "pkcs8":
            lines = pkcs8_lines()
            block, sec = pem("PRIVATE KEY", lines), lines[0]
        elif kind == "openssh":
            block, sec = openssh_key(pick(["ana@mbp", "deploy@ci", "root@bastion"]))
        else:
            lines = pgp_lines()
            block = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n" + "\n".join(lines) + "\n=" + rs(B64, 4) + "\n-----END PGP PRIVATE KEY BLOCK-----"
            sec = lines[0]
        fn = {"rsa": "deploy_key.pem", "ec": "server.key", "pkcs8": "jwt-signing.key", "openssh": "id_ed25519", "pgp": "release-signing.asc"}[kind]
        if c == "shell/cat":
            t = f"{pick(PROMPTS)}cat ~/.ssh/{fn}\n{block}\n{pick(PROMPTS)}"
        elif c == "config/yaml-block":
            t = f"tls:\n  enabled: true\n  key: |\n" + "\n".join("    " + x for x in block.splitlines()) + "\n  cert: /etc/tls/server.crt"
        elif c == "file/dotenv-escaped":
            t = f"JWT_ALGORITHM=RS256\nPRIVATE_KEY=\"{block.replace(chr(10), chr(92) + 'n')}\"\nPORT=8080"
        elif c == "agent/tool-json":
            t = wrap_tool(f"$ cat secrets/{fn}\n{block}")
        elif c == "code/python":
            t = f"PRIVATE_KEY = \"\"\"{block}\n\"\"\"\n\nsigner = load_pem_private_key(PRIVATE_KEY.encode(), password=None)"
        elif c == "iac/tf-output":
            t = f"$ terraform output -raw private_key_pem\n{block}"
        elif c == "chat/md-fence":
            t = f"{pick(CHAT_INTRO)}\n\n```\n{block}\n```\nssh says `Load key \"{fn}\": invalid format`"
        else:
            t = "\n".join(f"{gha_ts()} {x}" for x in (["Run echo \"$DEPLOY_KEY\" > key && chmod 600 key && cat key"] + block.splitlines()))
        out.append((t, sec, c))
    return out


# ---- kubeconfig / docker config
def rows_kubeconfig(kind, n):
    out = []
    for c in ctx_cycle(["file/kubeconfig", "shell/kubectl-config-view-raw", "agent/tool-json", "chat/md-fence"], n):
        cluster = pick(["prod-eu", "kind-dev", "gke_acme_europe-west1_main", "arn:aws:eks:eu-west-1:" + rs(DIG, 12) + ":cluster/main"])
        ca = base64.b64encode(("-----BEGIN CERTIFICATE-----\n" + "\n".join(pem_body("MIIC/jCCAeagAwIBAgIB", 1000)) + "\n-----END CERTIFICATE-----\n").encode()).decode()
        if kind == "client-key-data":
            sec = base64.b64encode((pem("RSA PRIVATE KEY", rsa_lines()) + "\n").encode()).decode()
            user = f"  user:\n    client-certificate-data: {base64.b64encode(b'-----BEGIN CERTIFICATE-----' + rb(300)).decode()}\n    client-key-data: {sec}"
        elif kind == "sa-token":
            sec = jwt({"aud": ["https://kubernetes.default.svc"], "exp": NOW + 3600, "iat": NOW, "iss": "https://kubernetes.default.svc",
                       "kubernetes.io": {"namespace": "ci", "serviceaccount": {"name": "deployer", "uid": uuid4()}},
                       "sub": "system:serviceaccount:ci:deployer"}, "RS256")
            user = f"  user:\n    token: {sec}"
        else:
            sec = rs(LO + DIG, 6) + "." + rs(LO + DIG, 16)
            user = f"  user:\n    token: {sec}"
        kc = (f"apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {ca[:180]}\n    server: https://{R.randint(10, 200)}.{R.randint(0, 255)}.{R.randint(0, 255)}.{R.randint(1, 254)}:6443\n"
              f"  name: {cluster}\ncontexts:\n- context:\n    cluster: {cluster}\n    user: admin\n  name: {cluster}\ncurrent-context: {cluster}\n"
              f"kind: Config\npreferences: {{}}\nusers:\n- name: admin\n{user}")
        if c == "file/kubeconfig":
            t = f"{pick(PROMPTS)}cat ~/.kube/config\n{kc}"
        elif c == "shell/kubectl-config-view-raw":
            t = f"$ kubectl config view --raw --minify\n{kc}"
        elif c == "agent/tool-json":
            t = wrap_tool(kc)
        else:
            t = f"{pick(CHAT_INTRO)}\n\n```yaml\n{kc}\n```"
        out.append((t, sec, c))
    return out


def rows_kubeadm(kind, n):
    out = []
    for c in ctx_cycle(["shell/kubeadm-init", "shell/kubeadm-join", "chat/prose"], n):
        tok = rs(LO + DIG, 6) + "." + rs(LO + DIG, 16)
        hsh = rs(HEX, 64)
        if c == "shell/kubeadm-init":
            t = (f"Your Kubernetes control-plane has initialized successfully!\n\nThen you can join any number of worker nodes by running the following on each as root:\n\n"
                 f"kubeadm join 10.0.0.10:6443 --token {tok} \\\n\t--discovery-token-ca-cert-hash sha256:{hsh}")
        elif c == "shell/kubeadm-join":
            t = f"$ sudo kubeadm join 10.0.0.10:6443 --token {tok} --discovery-token-ca-cert-hash sha256:{hsh}\n[preflight] Running pre-flight checks"
        else:
            t = f"Join command for the new node (token {tok}, valid 24h): use the usual discovery hash sha256:{hsh}."
        out.append((t, tok, c))
    return out


def rows_dockercfg(kind, n):
    out = []
    for c in ctx_cycle(["file/docker-config", "k8s/dockerconfigjson", "agent/tool-json", "ci/base64-echo"], n):
        reg = pick(["ghcr.io", "https://index.docker.io/v1/", "registry.gitlab.com", rs(DIG, 12) + ".dkr.ecr.eu-west-1.amazonaws.com", "acme.jfrog.io"])
        user = pick(["ana-dev", "ci-bot", "AWS", "oauth2accesstoken", "_json_key"])
        tok = pick([gh("ghp_"), "dckr_pat_" + rs(B64U, 27), "glpat-" + rs(B64U, 20), pw()])
        auth = base64.b64encode(f"{user}:{tok}".encode()).decode()
        cfg = json.dumps({"auths": {reg: {"auth": auth}}, "credsStore": "" if R.random() < 0.5 else "desktop"}, indent="\t")
        if c == "file/docker-config":
            t = f"{pick(PROMPTS)}cat ~/.docker/config.json\n{cfg}"
        elif c == "k8s/dockerconfigjson":
            t = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: regcred\ntype: kubernetes.io/dockerconfigjson\nstringData:\n  .dockerconfigjson: '{json.dumps({'auths': {reg: {'auth': auth}}})}'"
        elif c == "agent/tool-json":
            t = wrap_tool(cfg)
        else:
            t = f"$ echo -n \"$REGISTRY_USER:$REGISTRY_TOKEN\" | base64\n{auth}"
        out.append((t, auth, c))
    return out


# ---- small credential files
def apr1():
    a = "./" + AN
    return "$apr1$" + rs(a, 8) + "$" + rs(a, 22)


def bcrypt():
    return "$2y$" + pick(["05", "10", "12"]) + "$" + rs("./" + AN, 53)


def rows_htpasswd(kind, n):
    out = []
    for c in ctx_cycle(["file/htpasswd", "docker/traefik-label", "k8s/ingress-auth", "shell/htpasswd-cli"], n):
        h = pick([apr1(), bcrypt()])
        user = pick(["admin", "ops", "grafana", "metrics"])
        sec = h
        if c == "file/htpasswd":
            t = f"$ cat /etc/nginx/.htpasswd\n{user}:{h}\nreadonly:{pick([apr1(), bcrypt()])}"
        elif c == "docker/traefik-label":
            sec = h.replace("$", "$$")
            t = f"    labels:\n      - \"traefik.http.routers.dash.middlewares=auth\"\n      - \"traefik.http.middlewares.auth.basicauth.users={user}:{sec}\""
        elif c == "k8s/ingress-auth":
            sec = base64.b64encode(f"{user}:{h}\n".encode()).decode()
            t = f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: basic-auth\ntype: Opaque\ndata:\n  auth: {sec}"
        else:
            t = f"$ htpasswd -nbB {user} '<redacted>'\n{user}:{h}"
        out.append((t, sec, c))
    return out


def rows_netrc(kind, n):
    out = []
    for c in ctx_cycle(["file/netrc", "file/netrc-oneline", "agent/tool-json"], n):
        machine = pick(["api.heroku.com", "github.com", "git.heroku.com", "urs.earthdata.nasa.gov", "artifactory.acme.io"])
        p = pick([pw(), gh("ghp_"), uuid4()])
        if c == "file/netrc":
            t = f"$ cat ~/.netrc\nmachine {machine}\n  login ana@example.com\n  password {p}"
        elif c == "file/netrc-oneline":
            t = f"machine {machine} login ci password {p}\nmachine pypi.internal login deploy password {pw()}"
        else:
            t = wrap_tool(f"machine {machine}\n  login ana@example.com\n  password {p}\n")
        out.append((t, p, c))
    return out


def rows_pgpass(kind, n):
    out = []
    for c in ctx_cycle(["file/pgpass", "shell/echo-append", "chat/md-fence"], n):
        p = pw().replace(":", "")
        h = pick(["db.internal", "localhost", "10.0.4.12", "*"])
        line = f"{h}:5432:{pick(['app', '*', 'billing'])}:{db_user()}:{p}"
        if c == "file/pgpass":
            t = f"$ cat ~/.pgpass\n{line}\n$ chmod 600 ~/.pgpass"
        elif c == "shell/echo-append":
            t = f"$ echo '{line}' >> ~/.pgpass && psql -h {h} -U app app"
        else:
            t = f"{pick(CHAT_INTRO)}\n\n```\n{line}\n```"
        out.append((t, p, c))
    return out


def rows_gitcred(kind, n):
    out = []
    for c in ctx_cycle(["file/git-credentials", "shell/git-push-error", "ci/checkout-log", "config/gitconfig-url"], n):
        tok = pick([gh("ghp_"), "glpat-" + rs(B64U, 20), "ATBB" + rs(AN, 32), "hf_" + rs(UP + LO, 34), pw()])
        sec = quote(tok, safe="")
        hst = pick(["github.com", "gitlab.com", "bitbucket.org", "huggingface.co", "git.acme.internal"])
        if c == "file/git-credentials":
            t = f"$ cat ~/.git-credentials\nhttps://ana-dev:{sec}@{hst}\nhttps://oauth2:{quote(pick([gh('ghp_'), pw()]), safe='')}@gitlab.acme.io"
        elif c == "shell/git-push-error":
            t = f"$ git push\nremote: Permission to acme/site.git denied to ana-dev.\nfatal: unable to access 'https://ana-dev:{sec}@{hst}/acme/site.git/': The requested URL returned error: 403"
        elif c == "ci/checkout-log":
            t = f"{gha_ts()} [command]/usr/bin/git remote add origin https://x-access-token:{sec}@{hst}/acme/site\n{gha_ts()} [command]/usr/bin/git fetch --depth=1 origin"
        else:
            t = f"[url \"https://ci:{sec}@{hst}/\"]\n\tinsteadOf = https://{hst}/"
        out.append((t, sec, c))
    return out


def rows_basic(kind, n):
    out = []
    pool = ["http/curl-v", "http/raw-request", "log/nginx-debug", "code/python", "http/har", "agent/tool-json"] if kind == "header" else \
        ["shell/curl-u", "shell/wget", "code/requests-auth", "ci/github-actions"]
    for c in ctx_cycle(pool, n):
        user = pick(["admin", "api", "ana@example.com", "elastic", "jenkins", "ci"])
        p = pw()
        b = base64.b64encode(f"{user}:{p}".encode()).decode()
        hst = pick(["es.internal:9200", "jenkins.acme.io", "registry.internal", "api.example.com", "grafana.acme.io"])
        sec = b if kind == "header" else p
        if c == "http/curl-v":
            t = f"> GET /_cluster/health HTTP/1.1\n> Host: {hst}\n> Authorization: Basic {b}\n> User-Agent: curl/8.5.0\n>\n< HTTP/1.1 401 Unauthorized\n< WWW-Authenticate: Basic realm=\"security\""
        elif c == "http/raw-request":
            t = f"GET /api/json HTTP/1.1\nHost: {hst}\nAuthorization: Basic {b}\nAccept: application/json"
        elif c == "log/nginx-debug":
            t = f"{ts().replace('T', ' ').replace('-', '/')} [debug] 31#31: *{R.randint(1, 999)} http header: \"Authorization: Basic {b}\""
        elif c == "code/python":
            t = f"headers = {{\n    \"Authorization\": \"Basic {b}\",\n    \"Content-Type\": \"application/json\",\n}}"
        elif c == "http/har":
            t = json.dumps({"request": {"method": "GET", "url": f"https://{hst}/", "headers": [{"name": "Authorization", "value": f"Basic {b}"}]}}, indent=2)
        elif c == "agent/tool-json":
            t = wrap_tool(f"$ curl -sv https://{hst}/ 2>&1 | grep -i auth\n> Authorization: Basic {b}\n< HTTP/1.1 403 Forbidden")
        elif c == "shell/curl-u":
            t = f"$ curl -u {user}:{p} https://{hst}/_cat/indices?v\n{{\"error\":\"unauthorized\"}}" if not needs_quote(p) else f"$ curl -u '{user}:{p}' https://{hst}/_cat/indices?v"
        elif c == "shell/wget":
            t = f"wget --user={user} --password='{p}' https://{hst}/artifacts/build-{R.randint(100, 999)}.tar.gz"
        elif c == "code/requests-auth":
            t = f"r = requests.get(\"https://{hst}/api/json\", auth=(\"{user}\", \"{p}\"), timeout=10)"
        else:
            t = "\n".join(f"{gha_ts()} {x}" for x in ["Run curl -fsS -u \"$USER:$PASS\" https://" + hst + "/deploy", "env:", f"  USER: {user}", f"  PASS: {p}"])
        out.append((t, sec, c))
    return out


def rows_cookie(kind, n):
    out = []
    for c in ctx_cycle(["http/curl-cookie", "http/set-cookie", "http/har", "browser/devtools", "code/python", "agent/tool-json"], n):
        k = R.randrange(5)
        if k == 0:
            name, val = "sessionid", rs(ANL, 32)
        elif k == 1:
            name, val = "connect.sid", quote("s:" + rs(B64U, 32) + "." + b64(32).rstrip("="), safe="")
        elif k == 2:
            name, val = "_acme_session", b64(96).rstrip("=") + "--" + rs(HEX, 40)
        elif k == 3:
            name, val = "PHPSESSID", rs(ANL, 26)
        else:
            name, val = "__Secure-next-auth.session-token", jwt({"name": "Ana", "email": "ana@example.com", "sub": uuid4(), "iat": NOW, "exp": NOW + 2592000})
        hst = pick(["app.example.com", "dashboard.acme.io", "localhost:3000"])
        if c == "http/curl-cookie":
            t = f"curl 'https://{hst}/api/projects' -H 'accept: application/json' -H 'cookie: csrftoken={rs(AN, 32)}; {name}={val}; theme=dark' --compressed"
        elif c == "http/set-cookie":
            t = f"< HTTP/2 302\n< location: /dashboard\n< set-cookie: {name}={val}; Path=/; HttpOnly; Secure; SameSite=Lax\n< content-length: 0"
        elif c == "http/har":
            t = json.dumps({"request": {"url": f"https://{hst}/api/me", "cookies": [{"name": name, "value": val, "httpOnly": True}]}}, indent=2)
        elif c == "browser/devtools":
            t = f"Name\tValue\tDomain\tPath\n_ga\tGA1.1.{R.randint(10 ** 8, 10 ** 9)}.{NOW}\t.{hst}\t/\n{name}\t{val}\t{hst}\t/"
        elif c == "code/python":
            t = f"s = requests.Session()\ns.cookies.set(\"{name}\", \"{val}\", domain=\"{hst}\")\nprint(s.get(\"https://{hst}/api/me\").json())"
        else:
            t = wrap_tool(f"HTTP/1.1 200 OK\nSet-Cookie: {name}={val}; Path=/; HttpOnly\nContent-Type: text/html")
        out.append((t, val, c))
    return out


def rows_signed(kind, n):
    out = []
    for c in ctx_cycle(["log/line", "chat/prose", "code/python", "agent/tool-json", "shell/curl"], n):
        if kind == "s3-presigned":
            sig = rs(HEX, 64)
            url = (f"https://acme-exports.s3.eu-west-1.amazonaws.com/reports/2026-12/{uuid4()}.csv?X-Amz-Algorithm=AWS4-HMAC-SHA256"
                   f"&X-Amz-Credential=ASIA{rs(UP + '234567', 16)}%2F20261208%2Feu-west-1%2Fs3%2Faws4_request&X-Amz-Date=20261208T101500Z"
                   f"&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&X-Amz-Signature={sig}")
        elif kind == "gcs-signed":
            sig = rs(HEX, 512)
            url = (f"https://storage.googleapis.com/acme-ml-artifacts/models/ckpt-{R.randint(100, 9999)}.safetensors?X-Goog-Algorithm=GOOG4-RSA-SHA256"
                   f"&X-Goog-Credential=signer%40acme-prod.iam.gserviceaccount.com%2F20261208%2Fauto%2Fstorage%2Fgoog4_request"
                   f"&X-Goog-Date=20261208T101500Z&X-Goog-Expires=900&X-Goog-SignedHeaders=host&X-Goog-Signature={sig}")
        else:
            sig = rs(B64U + "~", 170).replace("_", "~")
            url = (f"https://d{rs(ANL, 13)}.cloudfront.net/videos/intro.mp4?Expires={NOW + 86400}&Signature={sig}"
                   f"&Key-Pair-Id=K{rs(ANU, 13)}")
        if c == "log/line":
            t = f"{ts()}Z INFO exporter: report ready url={url}"
        elif c == "chat/prose":
            t = f"The export link from the job is {url} — it 403s for me in the browser, is it expired?"
        elif c == "code/python":
            t = f"resp = httpx.get(\"{url}\")\nresp.raise_for_status()"
        elif c == "agent/tool-json":
            t = wrap_tool(json.dumps({"status": "ok", "download_url": url, "expires_in": 3600}))
        else:
            t = f"$ curl -o out.bin \"{url}\"\n  % Total    % Received % Xferd  Average Speed\n100  4812  100  4812    0     0  21873      0 --:--:-- --:--:-- --:--:-- 21972"
        out.append((t, sig, c))
    return out


def rows_webhook_url(kind, n):
    out = []
    for c in ctx_cycle(["file/dotenv", "code/python", "shell/curl", "ci/github-actions", "lang", "config/yaml"], n):
        if kind == "slack-webhook":
            tok = rs(AN, 24)
            url = f"https://hooks.slack.com/services/T{rs(ANU, 10)}/B{rs(ANU, 10)}/{tok}"
            nm = "SLACK_WEBHOOK_URL"
        else:
            tok = rs(B64U, 68)
            url = f"https://discord.com/api/webhooks/{R.randint(10 ** 17, 13 * 10 ** 17)}/{tok}"
            nm = "DISCORD_WEBHOOK_URL"
        ctx = c
        if c == "file/dotenv":
            t = f"{nm}={url}\nALERT_CHANNEL=#ops"
        elif c == "code/python":
            t = f"WEBHOOK = \"{url}\"\nrequests.post(WEBHOOK, json={{\"text\": f\"deploy {{sha}} done\"}})"
        elif c == "shell/curl":
            t = f"curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"hello\"}}' {url}"
        elif c == "ci/github-actions":
            t = "\n".join(f"{gha_ts()} {x}" for x in ["Run ./notify.sh", "env:", f"  {nm}: {url}", "invalid_payload"])
        elif c == "lang":
            lg = next_lang()
            ctx = f"lang/{lg}"
            t = LANG_KEY[lg].format(n=nm, v=url, what="webhook")
        else:
            t = f"alertmanager:\n  config:\n    receivers:\n      - name: ops\n        slack_configs:\n          - api_url: {url}\n            channel: '#ops'"
        out.append((t, tok, ctx))
    return out


# ---- passwords
LANG_PW = {
    "en": "The password for the staging box is {v} — can you ssh in and restart nginx?",
    "es": "La contraseña del servidor de staging es {v}, ¿puedes entrar y reiniciar nginx?",
    "fr": "Le mot de passe de la base de préprod : {v}. Tu peux lancer les migrations ?",
    "de": "Das Passwort für die Staging-DB lautet {v}. Kannst du die Migration laufen lassen?",
    "pt": "A senha do banco de homologação é {v}, pode rodar as migrações?",
    "it": "La password del database di staging è {v}, puoi lanciare le migrazioni?",
    "nl": "Het wachtwoord van de staging-database is {v}. Kun je de migraties draaien?",
    "pl": "Hasło do bazy na stagingu to {v} — odpalisz migracje?",
    "ru": "Пароль от базы на стейджинге: {v}. Можешь прогнать миграции?",
    "uk": "Пароль до бази на стейджингу — {v}. Можеш запустити міграції?",
    "tr": "Staging veritabanının şifresi {v}, migration'ları çalıştırabilir misin?",
    "ja": "ステージングDBのパスワードは{v}です。マイグレーションを流してもらえますか？",
    "zh": "测试环境数据库的密码是{v}，帮我跑一下迁移。",
    "ko": "스테이징 DB 비밀번호는 {v}입니다. 마이그레이션 좀 돌려주세요.",
    "hi": "स्टेजिंग डेटाबेस का पासवर्ड {v} है, क्या आप migrations चला सकते हैं?",
    "ar": "كلمة المرور لقاعدة بيانات الاختبار هي {v}، هل يمكنك تشغيل الترحيلات؟",
    "vi": "Mật khẩu của database staging là {v}, bạn chạy migration giúp mình nhé.",
    "id": "Password database staging-nya {v}, tolong jalankan migrasinya ya.",
}
LANG_PW2 = {
    "en": "login is admin / \"{v}\" (don't share it)",
    "es": "usuario: admin, contraseña: \"{v}\"",
    "fr": "identifiant admin, mot de passe « {v} »",
    "de": "Benutzer admin, Kennwort: {v}",
    "pt": "usuário admin e senha '{v}'",
    "it": "utente admin, password: {v}",
    "nl": "gebruiker admin, wachtwoord: {v}",
    "pl": "login admin, hasło: {v}",
    "ru": "логин admin, пароль «{v}»",
    "uk": "логін admin, пароль: {v}",
    "tr": "kullanıcı adı admin, parola: {v}",
    "ja": "ユーザー名はadmin、パスワードは「{v}」です",
    "zh": "用户名 admin，密码：{v}",
    "ko": "아이디 admin / 비밀번호 {v}",
    "hi": "यूज़रनेम admin और पासवर्ड ({v}) है",
    "ar": "اسم المستخدم admin وكلمة السر: {v}",
    "vi": "tài khoản admin, mật khẩu: {v}",
    "id": "username admin, kata sandi: {v}",
}


def rows_pw_prose(kind, n):
    out = []
    for _ in range(n):
        lg = next_lang()
        p = pw()
        t = pick([LANG_PW, LANG_PW2])[lg].format(v=p)
        if R.random() < 0.4:
            t = pick(["Context: ", "", "FYI — "]) + t + pick(["", "\nThanks!", "\n\n(temporary, I'll rotate it tomorrow)"])
        out.append((t, p, f"lang/{lg}"))
    return out


def rows_pw_cli(kind, n):
    out = []
    forms = ["mysql-p", "sshpass", "pgpassword", "redis-cli-a", "mongosh", "docker-login-stdin", "psexec", "openssl-pass", "rclone", "smbclient"]
    for c in ctx_cycle(forms, n):
        p = pw()
        if c == "mysql-p":
            t = f"$ mysql -h 127.0.0.1 -u root -p{p} shop < dump.sql\nmysql: [Warning] Using a password on the command line interface can be insecure." if not needs_quote(p) else f"$ mysql -u root -p'{p}' shop"
        elif c == "sshpass":
            t = f"sshpass -p '{p}' ssh -o StrictHostKeyChecking=no ubuntu@10.0.2.{R.randint(2, 250)} 'sudo systemctl restart app'"
        elif c == "pgpassword":
            t = f"{pick(PROMPTS)}PGPASSWORD='{p}' pg_dump -h db.internal -U app app > app.sql"
        elif c == "redis-cli-a":
            t = f"$ redis-cli -h cache.internal -a '{p}' --no-auth-warning INFO keyspace\n# Keyspace\ndb0:keys={R.randint(10, 99999)},expires=12,avg_ttl=0"
        elif c == "mongosh":
            t = f"mongosh --host rs0/mongo-0:27017 -u admin -p '{p}' --authenticationDatabase admin"
        elif c == "docker-login-stdin":
            t = f"$ echo '{p}' | docker login registry.acme.io -u ci --password-stdin\nLogin Succeeded"
        elif c == "psexec":
            t = f"PS> $pw = ConvertTo-SecureString \"{p}\" -AsPlainText -Force\nPS> $cred = New-Object System.Management.Automation.PSCredential (\"ACME\\svc_deploy\", $pw)"
        elif c == "openssl-pass":
            t = f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}" if not needs_quote(p) else f"openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout 'pass:{p}'"
        elif c == "rclone":
            t = f"$ rclone config create nas webdav url=https://nas.local/dav user=ana pass='{p}'"
        else:
            t = f"smbclient //fileserver/share -U 'ACME\\ana%{p}' -c 'ls'"
        out.append((t, p, f"shell/{c}"))
    return out


def rows_pw_config(kind, n):
    out = []
    forms = ["wp-config", "spring-yaml", "ansible-vars", "ldap", "smtp-django", "wpa-supplicant", "xml-datasource", "ini-mail", "json-admin", "compose-env", "redis-conf", "mosquitto"]
    for c in ctx_cycle(forms, n):
        p = pw()
        if c == "wp-config":
            t = f"define( 'DB_NAME', 'wordpress' );\ndefine( 'DB_USER', 'wp' );\ndefine( 'DB_PASSWORD', '{p}' );\ndefine( 'DB_HOST', 'localhost' );"
        elif c == "spring-yaml":
            t = f"spring:\n  mail:\n    host: smtp.office365.com\n    username: noreply@acme.io\n    password: {yq(p)}"
        elif c == "ansible-vars":
            t = f"all:\n  vars:\n    ansible_user: deploy\n    ansible_become_password: {yq(p)}\n  hosts:\n    web1.acme.internal:"
        elif c == "ldap":
            t = f"[auth.ldap]\nenabled = true\nbind_dn = \"cn=svc-grafana,ou=services,dc=acme,dc=io\"\nbind_password = '{p}'"
        elif c == "smtp-django":
            t = f"EMAIL_HOST = \"smtp.gmail.com\"\nEMAIL_PORT = 587\nEMAIL_HOST_USER = \"alerts@acme.io\"\nEMAIL_HOST_PASSWORD = \"{p}\""
        elif c == "wpa-supplicant":
            t = f"network={{\n    ssid=\"ACME-Office\"\n    psk=\"{p}\"\n    key_mgmt=WPA-PSK\n}}"
        elif c == "xml-datasource":
            p = p.replace("&", "").replace("<", "")
            t = f"<Resource name=\"jdbc/AppDB\" auth=\"Container\" type=\"javax.sql.DataSource\"\n          username=\"app\" password=\"{p}\"\n          url=\"jdbc:postgresql://db:5432/app\"/>"
        elif c == "ini-mail":
            t = f"[mail]\nserver = mail.acme.io\nuser = robot\npass = {p}\nstarttls = yes"
        elif c == "json-admin":
            t = json.dumps({"admin": {"username": "root", "password": p}, "port": 9000}, indent=2)
        elif c == "compose-env":
            t = f"  db:\n    image: mariadb:11\n    environment:\n      MARIADB_ROOT_PASSWORD: {yq(p)}\n      MARIADB_DATABASE: app"
        elif c == "redis-conf":
            t = f"# redis.conf\nbind 0.0.0.0\nprotected-mode yes\nrequirepass {p}\nmaxmemory 512mb"
        else:
            t = f"$ mosquitto_pub -h broker.local -u iot -P '{p}' -t sensors/temp -m 21.5"
        out.append((t, p, f"config/{c}"))
    return out


def rows_pw_sql(kind, n):
    out = []
    forms = ["pg-create-role", "mysql-create-user", "mssql-login", "pg-alter", "oracle-create", "snowflake-user"]
    for c in ctx_cycle(forms, n):
        p = pw().replace("'", "")
        t = {"pg-create-role": f"CREATE ROLE reporting WITH LOGIN PASSWORD '{p}' VALID UNTIL '2027-01-01';",
             "mysql-create-user": f"CREATE USER 'etl'@'%' IDENTIFIED BY '{p}';\nGRANT SELECT ON analytics.* TO 'etl'@'%';",
             "mssql-login": f"CREATE LOGIN svc_reports WITH PASSWORD = N'{p}', CHECK_POLICY = OFF;\nGO",
             "pg-alter": f"postgres=# ALTER USER app WITH PASSWORD '{p}';\nALTER ROLE",
             "oracle-create": f"SQL> CREATE USER app_ro IDENTIFIED BY \"{p}\" DEFAULT TABLESPACE users;\n\nUser created.",
             "snowflake-user": f"CREATE USER dbt_svc PASSWORD = '{p}' DEFAULT_ROLE = TRANSFORMER MUST_CHANGE_PASSWORD = FALSE;"}[c]
        out.append((t, p, f"sql/{c}"))
    return out


STRUCT = [
    ("gcp", "sa-private-key", lambda n: rows_gcp_sa("private-key", n), 4),
    ("gcp", "sa-private-key-id", lambda n: rows_gcp_sa("private-key-id", n), 3),
    ("azure", "storage-account-key", lambda n: rows_azure_conn("k", n), 5),
    ("azure", "sas-signature", lambda n: rows_azure_sas("k", n), 4),
    ("postgres", "url-password", lambda n: rows_dburl("postgres", n), 6),
    ("mysql", "url-password", lambda n: rows_dburl("mysql", n), 4),
    ("mongodb", "srv-url-password", lambda n: rows_dburl("mongodb", n), 5),
    ("redis", "url-password", lambda n: rows_dburl("redis", n), 4),
    ("amqp", "url-password", lambda n: rows_dburl("amqp", n), 3),
    ("planetscale", "password", lambda n: rows_dburl("planetscale", n), 3),
    ("neon", "password", lambda n: rows_dburl("neon", n), 3),
    ("*dsn", "password", lambda n: rows_dsn("k", n), 10),
    ("private-key", "rsa-pem", lambda n: rows_pem("rsa", n), 5),
    ("private-key", "ec-pem", lambda n: rows_pem("ec", n), 3),
    ("private-key", "pkcs8-pem", lambda n: rows_pem("pkcs8", n), 3),
    ("private-key", "openssh", lambda n: rows_pem("openssh", n), 5),
    ("private-key", "pgp", lambda n: rows_pem("pgp", n), 2),
    ("kubeconfig", "client-key-data", lambda n: rows_kubeconfig("client-key-data", n), 3),
    ("kubeconfig", "sa-token", lambda n: rows_kubeconfig("sa-token", n), 2),
    ("kubeconfig", "bootstrap-token", lambda n: rows_kubeadm("k", n), 3),
    ("docker-config", "auth", lambda n: rows_dockercfg("k", n), 4),
    ("htpasswd", "hash", lambda n: rows_htpasswd("k", n), 4),
    ("netrc", "password", lambda n: rows_netrc("k", n), 3),
    ("pgpass", "password", lambda n: rows_pgpass("k", n), 3),
    ("git-credential", "url-token", lambda n: rows_gitcred("k", n), 4),
    ("basic-auth", "header", lambda n: rows_basic("header", n), 5),
    ("basic-auth", "user-pass", lambda n: rows_basic("userpass", n), 4),
    ("cookie", "session", lambda n: rows_cookie("k", n), 6),
    ("signed-url", "s3-presigned", lambda n: rows_signed("s3-presigned", n), 4),
    ("signed-url", "gcs-signed", lambda n: rows_signed("gcs-signed", n), 3),
    ("signed-url", "cloudfront", lambda n: rows_signed("cloudfront", n), 2),
    ("slack", "webhook-url", lambda n: rows_webhook_url("slack-webhook", n), 4),
    ("discord", "webhook-url", lambda n: rows_webhook_url("discord-webhook", n), 3),
    ("password", "prose", lambda n: rows_pw_prose("k", n), 22),
    ("password", "cli", lambda n: rows_pw_cli("k", n), 10),
    ("password", "config", lambda n: rows_pw_config("k", n), 12),
    ("password", "sql", lambda n: rows_pw_sql("k", n), 6),
]


# --------------------------------------------------------------------------
# negatives: fn() -> (text, kind, context)
AUTHORS = ["Ana Souza", "Lucas Meyer", "Mei Tanaka", "Priya Nair", "Omar Haddad", "Jan Kowalski"]
MSGS = ["fix(api): handle empty cursor", "chore(deps): bump axios from 1.7.4 to 1.7.7", "feat: add retry to webhook sender",
        "refactor: split token refresh into its own module", "docs: explain how to rotate the signing secret",
        "test: cover password reset flow", "ci: cache pnpm store", "Merge pull request #" + str(R.randint(100, 999)) + " from acme/fix-auth"]


def n_git_log():
    lines = [f"{rs(HEX, 7)} {pick(MSGS)}" for _ in range(R.randint(4, 8))]
    return "$ git log --oneline -n " + str(len(lines)) + "\n" + "\n".join(lines), "git-sha", "shell/git-log"


def n_git_show():
    sha = rs(HEX, 40)
    return (f"commit {sha}\nMerge: {rs(HEX, 7)} {rs(HEX, 7)}\nAuthor: {pick(AUTHORS)} <dev@example.com>\nDate:   Tue Dec 8 10:{R.randint(10, 59)}:02 2026 +0100\n\n"
            f"    {pick(MSGS)}\n\n    Reviewed-on: https://review.example.com/c/api/+/{R.randint(10000, 99999)}\n    Change-Id: I{rs(HEX, 40)}"), "git-sha", "shell/git-show"


def n_git_misc():
    k = R.randrange(4)
    if k == 0:
        return f"$ git rev-parse HEAD\n{rs(HEX, 40)}\n$ git describe --tags\nv2.{R.randint(0, 9)}.{R.randint(0, 20)}-{R.randint(1, 60)}-g{rs(HEX, 7)}", "git-sha", "shell/rev-parse"
    if k == 1:
        return (f"$ git bisect good\nBisecting: {R.randint(2, 40)} revisions left to test after this (roughly {R.randint(1, 6)} steps)\n"
                f"[{rs(HEX, 40)}] {pick(MSGS)}"), "git-sha", "shell/bisect"
    if k == 2:
        return f"Fixed in {rs(HEX, 7)}, reverted by {rs(HEX, 9)} and re-landed as {rs(HEX, 12)}. See https://github.com/acme/api/commit/{rs(HEX, 40)}", "short-hash", "chat/prose"
    return (f"{gha_ts()} Syncing repository: acme/api\n{gha_ts()} Checking out the ref\n{gha_ts()} /usr/bin/git log -1 --format=%H\n{gha_ts()} {rs(HEX, 40)}"), "git-sha", "ci/checkout"


def n_sha256sum():
    files = ["segue-linux-amd64.tar.gz", "segue-darwin-arm64.tar.gz", "segue-windows-amd64.zip", "SHA256SUMS.sig", "install.sh"]
    R.shuffle(files)
    return "$ sha256sum -c SHA256SUMS\n" + "\n".join(f"{rs(HEX, 64)}  {f}" for f in files[:R.randint(2, 4)]), "sha256", "shell/sha256sum"


def n_npm_lock():
    pkgs = ["lodash", "react-dom", "@babel/core", "esbuild", "zod", "semver", "postcss"]
    R.shuffle(pkgs)
    ents = {}
    for p in pkgs[:3]:
        ver = f"{R.randint(0, 19)}.{R.randint(0, 30)}.{R.randint(0, 9)}"
        ents[f"node_modules/{p}"] = {"version": ver, "resolved": f"https://registry.npmjs.org/{p}/-/{p.split('/')[-1]}-{ver}.tgz",
                                     "integrity": "sha512-" + b64(64), "license": "MIT"}
    return json.dumps({"name": "web", "lockfileVersion": 3, "requires": True, "packages": ents}, indent=2), "lockfile-integrity", "file/package-lock"


def n_yarn_lock():
    p = pick(["chalk", "debug", "ms", "picocolors"])
    ver = f"{R.randint(1, 5)}.{R.randint(0, 9)}.{R.randint(0, 9)}"
    return (f"{p}@^{ver}:\n  version \"{ver}\"\n  resolved \"https://registry.yarnpkg.com/{p}/-/{p}-{ver}.tgz#{rs(HEX, 40)}\"\n"
            f"  integrity sha512-{b64(64)}"), "lockfile-integrity", "file/yarn-lock"


def n_cargo_lock():
    out = []
    for p in R.sample(["serde", "tokio", "anyhow", "rand_core", "hyper", "bytes", "itoa"], 3):
        out.append(f"[[package]]\nname = \"{p}\"\nversion = \"{R.randint(0, 2)}.{R.randint(0, 40)}.{R.randint(0, 9)}\"\n"
                   f"source = \"registry+https://github.com/rust-lang/crates.io-index\"\nchecksum = \"{rs(HEX, 64)}\"")
    return "\n\n".join(out), "lockfile-checksum", "file/cargo-lock"


def n_go_sum():
    mods = ["github.com/google/uuid", "golang.org/x/crypto", "github.com/stretchr/testify", "go.uber.org/zap"]
    lines = []
    for m in R.sample(mods, 2):
        v = f"v{R.randint(0, 1)}.{R.randint(0, 30)}.{R.randint(0, 9)}"
        lines += [f"{m} {v} h1:{b64(32)}", f"{m} {v}/go.mod h1:{b64(32)}"]
    return "\n".join(lines), "lockfile-checksum", "file/go-sum"


def n_pip_hash():
    p = pick(["requests", "urllib3", "certifi", "idna", "charset-normalizer"])
    return (f"{p}=={R.randint(1, 3)}.{R.randint(0, 32)}.{R.randint(0, 9)} \\\n    --hash=sha256:{rs(HEX, 64)} \\\n    --hash=sha256:{rs(HEX, 64)}"), "lockfile-checksum", "file/requirements-hashes"


def n_docker_digest():
    k = R.randrange(3)
    img = pick(["node", "python", "postgres", "nginx", "ghcr.io/acme/api"])
    if k == 0:
        return (f"$ docker pull {img}:latest\nlatest: Pulling from library/{img}\n{rs(HEX, 12)}: Pull complete\n{rs(HEX, 12)}: Pull complete\n"
                f"Digest: sha256:{rs(HEX, 64)}\nStatus: Downloaded newer image for {img}:latest"), "image-digest", "shell/docker-pull"
    if k == 1:
        return (f"$ docker images --digests\nREPOSITORY   TAG       DIGEST                                                                    IMAGE ID       SIZE\n"
                f"{img:<12} 22-slim   sha256:{rs(HEX, 64)}   {rs(HEX, 12)}   231MB"), "image-digest", "shell/docker-images"
    return f"      containers:\n        - name: api\n          image: {img}@sha256:{rs(HEX, 64)}\n          imagePullPolicy: IfNotPresent", "image-digest", "k8s/manifest"


def n_uuid_log():
    k = R.randrange(3)
    if k == 0:
        return (f"{ts()}Z INFO request_id={uuid4()} user_id={uuid4()} method=GET path=/v1/orders/{uuid4()} status=200 dur_ms={R.randint(3, 900)}"), "uuid", "log/line"
    if k == 1:
        return json.dumps({"environmentName": "AzureCloud", "homeTenantId": uuid4(), "id": uuid4(), "isDefault": True,
                           "name": "Acme Production", "state": "Enabled", "tenantId": uuid4(),
                           "user": {"name": "ana@acme.io", "type": "user"}}, indent=2), "uuid", "shell/az-account-show"
    return f"AZURE_TENANT_ID={uuid4()}\nAZURE_SUBSCRIPTION_ID={uuid4()}\nAZURE_CLIENT_ID={uuid4()}\n# AZURE_CLIENT_SECRET comes from the key vault", "uuid", "file/dotenv"


def n_ulid():
    return (f"order {ulid()} created\nshipment {ulid()} queued (parent {ulid()})\nidempotency_key={uuid4()}"), "ulid", "log/line"


def n_trace():
    k = R.randrange(3)
    if k == 0:
        return (f"< HTTP/2 500\n< x-request-id: {uuid4()}\n< traceparent: 00-{rs(HEX, 32)}-{rs(HEX, 16)}-01\n"
                f"< x-amzn-trace-id: Root=1-{rs(HEX, 8)}-{rs(HEX, 24)}\n< cf-ray: {rs(HEX, 16)}-FRA"), "trace-id", "http/response-headers"
    if k == 1:
        return (f"Sentry event {rs(HEX, 32)} captured\ndd.trace_id={R.randint(10 ** 18, 9 * 10 ** 18)} dd.span_id={R.randint(10 ** 18, 9 * 10 ** 18)}"), "trace-id", "log/line"
    return f"Please include the support code when contacting us: {rs(ANU, 4)}-{rs(ANU, 4)}-{rs(ANU, 4)} (request {rs(HEX, 24)})", "trace-id", "chat/prose"


def n_stripe_ids():
    o = {"id": "ch_3" + rs(AN, 23), "object": "charge", "amount": R.randint(100, 99999), "currency": "eur",
         "customer": "cus_" + rs(AN, 14), "payment_intent": "pi_3" + rs(AN, 23), "payment_method": "pm_1" + rs(AN, 23),
         "balance_transaction": "txn_3" + rs(AN, 23), "invoice": "in_1" + rs(AN, 23), "livemode": True, "status": "succeeded"}
    if R.random() < 0.5:
        return json.dumps(o, indent=2), "stripe-object-id", "json/api-response"
    return f"Refund failed for {o['id']} (customer {o['customer']}, event evt_1{rs(AN, 23)}, price price_1{rs(AN, 23)}, product prod_{rs(AN, 14)})", "stripe-object-id", "log/line"


def n_ssh_pub():
    k = R.randrange(4)
    ed = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI" + rs(B64, 43)
    rsa = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ" + rs(B64, 508)
    if k == 0:
        return f"$ cat ~/.ssh/id_ed25519.pub\n{ed} ana@mbp", "ssh-public-key", "shell/cat"
    if k == 1:
        return f"# ~/.ssh/authorized_keys\n{ed} deploy@ci\n{rsa} ana@old-laptop", "ssh-public-key", "file/authorized-keys"
    if k == 2:
        return (f"$ ssh-keygen -t ed25519 -C ana@acme.io\nGenerating public/private ed25519 key pair.\nYour identification has been saved in /home/ana/.ssh/id_ed25519\n"
                f"Your public key has been saved in /home/ana/.ssh/id_ed25519.pub\nThe key fingerprint is:\nSHA256:{rs(B64, 43)} ana@acme.io\n"
                f"The key's randomart image is:\n+--[ED25519 256]--+\n|    .o+=*B+.     |\n|     o.=+o=      |\n|      . +.+ .    |\n+----[SHA256]-----+"), "ssh-public-key", "shell/ssh-keygen"
    return f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rs(B64, 43)}\n[bastion.acme.io]:2222 ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAI{rs(B64, 140)}=", "ssh-public-key", "file/known-hosts"


def n_pem_public():
    k = R.randrange(4)
    if k == 0:
        return pem("PUBLIC KEY", pem_body("MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA", 392)), "pem-public-key", "file/pem"
    if k == 1:
        return "$ cat fullchain.pem\n" + pem("CERTIFICATE", pem_body("MIIFazCCA1OgAwIBAgIU", 1900)) + "\n" + pem("CERTIFICATE", pem_body("MIIEkjCCA3qgAwIBAgIQ", 1560)), "certificate", "shell/cat"
    if k == 2:
        return f"jwks:\n  keys:\n    - kty: RSA\n      kid: {rs(B64U, 27)}\n      use: sig\n      alg: RS256\n      n: {rs(B64U, 342)}\n      e: AQAB", "jwks-public", "config/yaml"
    return json.dumps({"ca_bundle": pem("CERTIFICATE", pem_body("MIIDdzCCAl+gAwIBAgIE", 1200))}, indent=2), "certificate", "config/json"


def n_dkim():
    return (f"$ dig +short TXT google._domainkey.acme.io\n\"v=DKIM1; k=rsa; p=MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA{rs(B64, 200)}\" \"{rs(B64, 150)}IDAQAB\""), "dkim-public-key", "shell/dig"


def n_pgp_sig():
    return ("-----BEGIN PGP SIGNATURE-----\n\n" + "\n".join(pem_body("iQIzBAABCAAdFiEE", 600)) + "\n=" + rs(B64, 4) + "\n-----END PGP SIGNATURE-----"), "pgp-signature", "file/asc"


def n_gpg_list():
    fp = rs(HEXU, 40)
    return (f"$ gpg --list-secret-keys --keyid-format=long\n/home/ana/.gnupg/pubring.kbx\n----------------------------\nsec   ed25519/{fp[-16:]} 2025-03-02 [SC]\n"
            f"      {fp}\nuid                 [ultimate] Ana Souza <ana@acme.io>\nssb   cv25519/{rs(HEXU, 16)} 2025-03-02 [E]"), "pgp-fingerprint", "shell/gpg"


PLACEHOLDERS = ["<your-api-key>", "xxxxxxxxxxxxxxxxxxxxxxxx", "sk-...", "${API_KEY}", "{{ secrets.TOKEN }}", "REPLACE_ME", "your_password_here",
                "<YOUR_TOKEN_HERE>", "ghp_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx", "sk-proj-XXXXXXXXXXXXXXXXXXXX", "TODO", "insert-key-here",
                "********", "[REDACTED]", "<redacted>", "$(cat /run/secrets/api_key)", "%API_KEY%", "${{ secrets.OPENAI_API_KEY }}",
                "<paste token>", "dummy", "null", "{{ .Values.apiKey }}", "${env:API_KEY}", "#{ApiKey}#", "$API_KEY", "YOUR_API_KEY"]


def n_placeholder():
    name = pick(["OPENAI_API_KEY", "STRIPE_SECRET_KEY", "GITHUB_TOKEN", "DATABASE_PASSWORD", "API_KEY", "SLACK_BOT_TOKEN", "ANTHROPIC_API_KEY"])
    ph = pick(PLACEHOLDERS)
    k = R.randrange(5)
    if k == 0:
        return f"# .env.example\n{name}={ph}\nPORT=3000", "placeholder", "file/env-example"
    if k == 1:
        return f"```bash\nexport {name}=\"{ph}\"\n```\nReplace the value with your own key from the dashboard.", "placeholder", "docs/readme"
    if k == 2:
        return f"{section(name)}:\n  {k_snake(name)}: \"{ph}\"   # set via helm --set", "placeholder", "config/yaml"
    if k == 3:
        return f"client = Client(api_key=\"{ph}\")  # <- put your key here", "placeholder", "code/python"
    return f"curl https://api.example.com/v1/me -H \"Authorization: Bearer {ph}\"", "placeholder", "docs/curl"


def n_changeme():
    k = R.randrange(3)
    if k == 0:
        return "# default credentials, change them before exposing the service\nADMIN_USER=admin\nADMIN_PASSWORD=changeme", "placeholder", "file/env-example"
    if k == 1:
        return "POSTGRES_PASSWORD: your_password_here  # change me", "placeholder", "docker/compose"
    return "| Variable | Default | Description |\n|---|---|---|\n| `SECRET_KEY` | `REPLACE_ME` | must be set in production |\n| `API_TOKEN` | *(none)* | token for the upstream API |", "placeholder", "docs/table"


def n_aws_example():
    k = R.randrange(3)
    if k == 0:
        return ("From the AWS docs, the credentials file looks like:\n\n```ini\n[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\n"
                "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n```"), "docs-example-key", "docs/md-fence"
    if k == 1:
        return "$ aws configure\nAWS Access Key ID [None]: AKIAIOSFODNN7EXAMPLE\nAWS Secret Access Key [None]: wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nDefault region name [None]: us-west-2", "docs-example-key", "docs/shell"
    return "    # example only, see https://docs.aws.amazon.com/IAM/latest/UserGuide/security-creds.html\n    access_key = \"AKIAIOSFODNN7EXAMPLE\"", "docs-example-key", "docs/hcl"


def n_env_names():
    names = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "STRIPE_SECRET_KEY", "DATABASE_URL", "AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "JWT_SECRET", "SENTRY_AUTH_TOKEN"]
    R.shuffle(names)
    k = R.randrange(4)
    if k == 0:
        return "Required environment variables:\n\n" + "\n".join(f"- `{x}`" for x in names[:4]), "env-var-name", "docs/list"
    if k == 1:
        return f"$ echo ${names[0]}\n\n$ # empty, so the SDK falls back to ~/.config", "env-var-name", "shell/echo-empty"
    if k == 2:
        return "env:\n" + "\n".join(f"  {x}: ${{{{ secrets.{x} }}}}" for x in names[:3]), "env-var-name", "ci/github-actions"
    return f"Error: {names[0]} is not set. Export it or add it to .env (see .env.example).", "env-var-name", "log/error"


def n_env_read():
    k = R.randrange(8)
    n = pick(["OPENAI_API_KEY", "STRIPE_SECRET_KEY", "DB_PASSWORD", "HF_TOKEN", "SLACK_BOT_TOKEN"])
    code = [f"api_key = os.environ[\"{n}\"]", f"const key = process.env.{n} ?? throwMissing(\"{n}\");",
            f"key := os.Getenv(\"{n}\")\nif key == \"\" {{\n\tlog.Fatal(\"{n} missing\")\n}}", f"let key = std::env::var(\"{n}\").expect(\"{n} not set\");",
            f"String key = System.getenv(\"{n}\");", f"var key = builder.Configuration[\"{n}\"] ?? throw new InvalidOperationException();",
            f"$key = getenv('{n}') ?: throw new RuntimeException('missing key');", f"api_key = ENV.fetch(\"{n}\")"][k]
    return code, "env-read", "code/" + ["python", "js", "go", "rust", "java", "csharp", "php", "ruby"][k]


def n_empty_pw():
    k = R.randrange(5)
    if k == 0:
        return "[client]\nuser=root\npassword=\nhost=127.0.0.1", "empty-or-reference", "config/my-cnf"
    if k == 1:
        return "DATABASE_URL=postgres://app:${DB_PASSWORD}@db:5432/app\nREDIS_URL=redis://redis:6379/0", "empty-or-reference", "file/dotenv"
    if k == 2:
        return "      env:\n        - name: DB_PASSWORD\n          valueFrom:\n            secretKeyRef:\n              name: db-credentials\n              key: password", "empty-or-reference", "k8s/manifest"
    if k == 3:
        return "    environment:\n      POSTGRES_PASSWORD: ${POSTGRES_PASSWORD:?set it in .env}\n      POSTGRES_USER: app", "empty-or-reference", "docker/compose"
    return "password = var.db_password\nusername = \"app\"", "empty-or-reference", "iac/hcl"


def n_refs():
    k = R.randrange(5)
    if k == 0:
        return "OPENAI_API_KEY=op://Engineering/OpenAI/credential\nSTRIPE_SECRET_KEY=op://Engineering/Stripe prod/secret key", "secret-reference", "file/env-1password"
    if k == 1:
        return f"arn:aws:secretsmanager:eu-west-1:{rs(DIG, 12)}:secret:prod/billing/stripe-{rs(AN, 6)}", "secret-reference", "log/arn"
    if k == 2:
        return "vault kv get -field=password secret/data/prod/postgres", "secret-reference", "shell/vault"
    if k == 3:
        return "DbPassword:\n  Type: AWS::SSM::Parameter::Value<String>\n  Default: /prod/db/password\n...\n      MasterUserPassword: !Ref DbPassword", "secret-reference", "iac/cloudformation"
    return f"gcloud secrets versions access latest --secret=stripe-key --project=acme-prod-{R.randint(100000, 999999)}", "secret-reference", "shell/gcloud"


def n_masked():
    k = R.randrange(6)
    if k == 0:
        return f"{gha_ts()} env:\n{gha_ts()}   OPENAI_API_KEY: ***\n{gha_ts()}   DEPLOY_ENV: production", "masked", "ci/github-actions"
    if k == 1:
        return f"$ aws configure list\n      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                <not set>             None    None\naccess_key     ****************{rs(ANU, 4)} shared-credentials-file\nsecret_key     ****************{rs(AN, 4)} shared-credentials-file", "masked", "shell/aws-configure-list"
    if k == 2:
        return f"Your API keys\nNAME          KEY            CREATED\nci-bot        sk-...{rs(AN, 4)}     Dec 1, 2026\nlocal-dev     sk-...{rs(AN, 4)}     Nov 12, 2026", "masked", "dashboard/listing"
    if k == 3:
        return f"  + resource \"aws_db_instance\" \"main\" {{\n      + password = (sensitive value)\n      + username = \"app\"\n    }}", "masked", "iac/tf-plan"
    if k == 4:
        return f"$ fly secrets list\nNAME              DIGEST                  CREATED AT\nDATABASE_URL      {rs(HEX, 16)}        2m ago\nOPENAI_API_KEY    {rs(HEX, 16)}        2m ago", "masked", "shell/fly-secrets"
    return f"$ kubectl describe secret api-env\nName:         api-env\nType:  Opaque\n\nData\n====\nOPENAI_API_KEY:  {R.randint(120, 180)} bytes\nDATABASE_URL:    {R.randint(60, 120)} bytes", "masked", "k8s/describe-secret"


def png_bytes(w, h):
    raw = b"".join(b"\x00" + rb(w * 3) for _ in range(h))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 0)) + chunk(b"IDAT", zlib.compress(raw, 0)) + chunk(b"IEND", b"")


def n_data_uri():
    k = R.randrange(3)
    if k == 0:
        d = base64.b64encode(png_bytes(R.randint(4, 8), R.randint(4, 8))).decode()
        return f"<img alt=\"logo\" src=\"data:image/png;base64,{d}\" />", "base64-benign", "html/img"
    if k == 1:
        d = base64.b64encode(b"wOF2\x00\x01\x00\x00" + rb(R.randint(150, 300))).decode()
        return f"@font-face {{\n  font-family: \"Inter\";\n  src: url(data:font/woff2;base64,{d}) format(\"woff2\");\n}}", "base64-benign", "css/font-face"
    svg = f"<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 24 24\"><path d=\"M{R.randint(1, 9)} {R.randint(1, 9)}h{R.randint(4, 14)}v{R.randint(4, 14)}H3z\" fill=\"#{rs(HEX, 6)}\"/></svg>"
    return f".icon {{ background-image: url(\"data:image/svg+xml;base64,{base64.b64encode(svg.encode()).decode()}\"); }}", "base64-benign", "css/svg"


def n_minified():
    k = R.randrange(3)
    if k == 0:
        ids = [rs(LO, 1) + rs(AN, R.randint(1, 3)) for _ in range(6)]
        return (f"\"use strict\";(self.webpackChunkweb=self.webpackChunkweb||[]).push([[{R.randint(100, 999)}],{{{R.randint(1000, 99999)}:(e,t,n)=>{{n.d(t,{{Z:()=>{ids[0]}}});"
                f"var {ids[1]}=n({R.randint(1000, 99999)}),{ids[2]}=n.n({ids[1]});function {ids[0]}(e){{return(0,{ids[2]}().jsx)(\"div\",{{className:\"{rs(LO, 6)}_{rs(B64U, 5)}\",children:e.children}})}}}}}}]);"), "minified-js", "js/chunk"
    if k == 1:
        segs = ",".join(rs("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/", R.randint(4, 8)) for _ in range(40))
        return json.dumps({"version": 3, "file": f"main.{rs(HEX, 8)}.js", "sources": ["webpack://web/./src/index.tsx"], "names": ["React", "useState"], "mappings": segs}), "sourcemap", "js/sourcemap"
    return f"<script src=\"https://cdn.jsdelivr.net/npm/bootstrap@5.3.3/dist/js/bootstrap.bundle.min.js\" integrity=\"sha384-{b64(48)}\" crossorigin=\"anonymous\"></script>", "sri-hash", "html/script"


def n_colors():
    k = R.randrange(3)
    if k == 0:
        shades = [50, 100, 200, 300, 400, 500, 600, 700, 800, 900]
        return "colors: {\n  brand: {\n" + "\n".join(f"    {s}: '#{rs(HEX, 6)}'," for s in shades) + "\n  },\n}", "css-colors", "config/tailwind"
    if k == 1:
        return ":root {\n" + "\n".join(f"  --color-{n}: #{rs(HEX, 6)};" for n in ["bg", "fg", "muted", "accent", "danger", "border"]) + "\n}", "css-colors", "css/vars"
    return "palette = [" + ", ".join(f"\"#{rs(HEXU, 6)}\"" for _ in range(12)) + "]", "css-colors", "code/python"


def n_versions():
    k = R.randrange(3)
    if k == 0:
        pk = ["anyio", "httpx", "pydantic", "pydantic_core", "sniffio", "typing_extensions", "uvicorn"]
        return "$ pip freeze\n" + "\n".join(f"{p}=={R.randint(0, 4)}.{R.randint(0, 30)}.{R.randint(0, 12)}" for p in pk), "version-string", "shell/pip-freeze"
    if k == 1:
        return (f"$ node -v && npm -v && go version\nv22.11.0\n10.9.0\ngo version go1.23.4 linux/amd64\n$ ./segue --version\nsegue 0.{R.randint(1, 30)}.{R.randint(0, 9)}+g{rs(HEX, 9)}.dirty (built 2026-12-0{R.randint(1, 7)})"), "version-string", "shell/versions"
    return f"Bumped to 4.{R.randint(0, 9)}.{R.randint(0, 9)}-rc.{R.randint(1, 5)}+build.{R.randint(100, 9999)}.sha.{rs(HEX, 7)}; previous was 4.0.0-beta.3", "version-string", "chat/prose"


def n_paths():
    k = R.randrange(5)
    if k == 0:
        return f"/nix/store/{rs('0123456789abcdfghijklmnpqrsvwxyz', 32)}-python3-3.12.7/bin/python3", "random-path", "shell/which"
    if k == 1:
        return f"  File \"/home/ana/.vscode-server/bin/{rs(HEX, 40)}/extensions/ms-python/run.py\", line 12", "random-path", "log/traceback"
    if k == 2:
        return f"node_modules/.pnpm/@babel+core@7.26.0_supports-color@8.1.1/node_modules/@babel/core/lib/index.js\n/var/folders/{rs(ANL, 2)}/{rs(ANL, 8)}_{rs(ANL, 21)}/T/pytest-of-ana/pytest-{R.randint(1, 99)}/test_export0/out.csv", "random-path", "log/paths"
    if k == 3:
        return f"Created wheel for psutil: filename=psutil-6.1.0-cp312-cp312-linux_x86_64.whl size=291740 sha256={rs(HEX, 64)}\n  Stored in directory: /root/.cache/pip/wheels/{rs(HEX, 2)}/{rs(HEX, 2)}/{rs(HEX, 58)}", "random-path", "shell/pip-build"
    return f"C:\\Users\\ana\\AppData\\Local\\Temp\\{uuid4()}\\setup.exe\nC:\\Windows\\Installer\\{{{uuid4().upper()}}}", "random-path", "log/windows"


def n_webpack():
    rows = []
    for n in ["main", "vendors", "runtime", str(R.randint(100, 999)), "polyfills"]:
        rows.append(f"  build/static/js/{n}.{rs(HEX, 8)}.js   {R.randint(1, 400)}.{R.randint(0, 99)} kB")
    return "File sizes after gzip:\n\n" + "\n".join(rows) + f"\n  build/static/css/main.{rs(HEX, 8)}.css  {R.randint(1, 30)}.1 kB", "chunk-hash", "shell/build-output"


def n_npm_names():
    names = ["@tanstack/react-query", "@aws-sdk/client-s3", "@octokit/rest", "token-types", "secret-handshake", "@auth/core",
             "passport-jwt", "jsonwebtoken", "dotenv-vault", "keytar", "node-forge", "@stripe/stripe-js"]
    R.shuffle(names)
    return "$ npm ls --depth=0\nweb@0.1.0 /app\n" + "\n".join(f"├── {n}@{R.randint(0, 12)}.{R.randint(0, 20)}.{R.randint(0, 9)}" for n in names[:6]), "package-names", "shell/npm-ls"


def n_k8s_names():
    svc = pick(SERVICES)
    rs_hash = rs(K8SN, 10)
    k = R.randrange(2)
    if k == 0:
        w = len(svc) + len(rs_hash) + 10
        lines = [f"{(svc + '-' + rs_hash + '-' + rs(K8SN, 5)).ljust(w)}1/1     Running   0          {R.randint(1, 59)}m" for _ in range(3)]
        return "$ kubectl get pods\n" + "NAME".ljust(w) + "READY   STATUS    RESTARTS   AGE\n" + "\n".join(lines), "k8s-names", "shell/kubectl-get-pods"
    return (f"$ kubectl get secrets\nNAME                          TYPE                                  DATA   AGE\n{svc}-env                      Opaque                                4      12d\n"
            f"default-token-{rs(K8SN, 5)}           kubernetes.io/service-account-token   3      200d\nsh.helm.release.v1.{svc}.v{R.randint(2, 40)}   helm.sh/release.v1                    1      1d"), "k8s-names", "shell/kubectl-get-secrets"


def isbn13():
    d = [9, 7, 8] + [R.randint(0, 9) for _ in range(9)]
    c = (10 - sum(x * (1 if i % 2 == 0 else 3) for i, x in enumerate(d)) % 10) % 10
    s = "".join(map(str, d + [c]))
    return f"{s[:3]}-{s[3]}-{s[4:8]}-{s[8:12]}-{s[12]}"


def n_isbn_phone():
    return (f"Reading list: \"Designing Data-Intensive Applications\" (ISBN {isbn13()}), \"Release It!\" (ISBN {isbn13()}).\n"
            f"On-call phone: +49 30 {R.randint(1000000, 9999999)}, backup +1 (415) 555-{R.randint(1000, 9999)}."), "isbn-phone", "chat/prose"


def n_test_cards():
    k = R.randrange(2)
    if k == 0:
        return ("Stripe test cards (test mode only):\n| Card | Number |\n|---|---|\n| Visa | 4242 4242 4242 4242 |\n| Visa (debit) | 4000 0566 5566 5556 |\n"
                "| Mastercard | 5555 5555 5555 4444 |\n| 3DS required | 4000 0027 6000 3184 |\nUse any future expiry and any CVC."), "test-card", "docs/table"
    return "await page.fill('#card-number', '4242424242424242'); // Stripe TEST card\nawait page.fill('#exp', '12/34');\nawait page.fill('#cvc', '123');", "test-card", "code/e2e"


NEG_PROSE = {
    "en": ["Don't paste the token here — rotate it in the dashboard and store the new one in the secret manager.",
           "The password field is required and must be at least 12 characters.", "Where should the API key live in prod? Vault or SSM?"],
    "es": ["No pegues el token aquí; rótalo desde el panel.", "El campo contraseña es obligatorio.", "¿Dónde guardamos la clave de la API en producción?"],
    "fr": ["Ne colle pas le jeton ici, fais-le tourner depuis la console.", "Le champ « mot de passe » est obligatoire.", "On met la clé secrète dans Vault ?"],
    "de": ["Bitte das Token nicht hier posten, sondern im Dashboard rotieren.", "Das Passwortfeld darf nicht leer sein.", "Wo liegt der API-Schlüssel in Produktion?"],
    "pt": ["Não cole o token aqui; gere um novo no painel.", "O campo senha é obrigatório.", "Onde guardamos a chave da API em produção?"],
    "it": ["Non incollare il token qui, ruotalo dalla dashboard.", "Il campo password è obbligatorio.", "Dove teniamo la chiave segreta in produzione?"],
    "nl": ["Plak het token hier niet; roteer het via het dashboard.", "Het wachtwoordveld is verplicht.", "Waar bewaren we de API-sleutel in productie?"],
    "pl": ["Nie wklejaj tu tokena, wygeneruj nowy w panelu.", "Pole hasło jest wymagane.", "Gdzie trzymamy klucz API na produkcji?"],
    "ru": ["Не вставляй сюда токен — перевыпусти его в панели.", "Поле «пароль» обязательно.", "Где хранить секретный ключ в проде?"],
    "uk": ["Не вставляй сюди токен — перевипусти його в панелі.", "Поле «пароль» обов'язкове.", "Де зберігати секретний ключ у проді?"],
    "tr": ["Token'ı buraya yapıştırma, panelden yenile.", "Şifre alanı zorunludur.", "API anahtarını prod'da nerede tutuyoruz?"],
    "ja": ["トークンはここに貼らないでください。ダッシュボードで再発行してください。", "パスワード欄は必須です。", "本番ではAPIキーをどこに保管しますか？"],
    "zh": ["不要把令牌贴在这里，请在控制台重新生成。", "密码字段为必填项。", "生产环境的 API 密钥放在哪里？"],
    "ko": ["토큰을 여기에 붙여넣지 마세요. 대시보드에서 재발급하세요.", "비밀번호 필드는 필수입니다.", "운영 환경에서 API 키는 어디에 보관하나요?"],
    "hi": ["टोकन यहाँ पेस्ट न करें, डैशबोर्ड से नया बनाइए।", "पासवर्ड फ़ील्ड ज़रूरी है।", "प्रोडक्शन में API key कहाँ रखें?"],
    "ar": ["لا تلصق الرمز هنا، قم بتدويره من لوحة التحكم.", "حقل كلمة المرور مطلوب.", "أين نحفظ مفتاح API في بيئة الإنتاج؟"],
    "vi": ["Đừng dán token vào đây, hãy tạo lại trong dashboard.", "Trường mật khẩu là bắt buộc.", "Khóa API trên production lưu ở đâu?"],
    "id": ["Jangan tempel token di sini, buat ulang dari dashboard.", "Kolom kata sandi wajib diisi.", "Di mana kita simpan API key di production?"],
}


def n_prose():
    lg = next_lang()
    a, b = R.sample(NEG_PROSE[lg], 2)
    return f"{a}{'' if lg in ('ja', 'zh') else ' '}{b}", "prose-keywords", f"lang/{lg}"


def n_prose_code():
    k = R.randrange(4)
    if k == 0:
        return "class PasswordResetForm(forms.Form):\n    password = forms.CharField(widget=forms.PasswordInput, min_length=12)\n    token = forms.CharField(widget=forms.HiddenInput)", "prose-keywords", "code/django-form"
    if k == 1:
        return "CREATE TABLE users (\n  id bigserial PRIMARY KEY,\n  email text NOT NULL UNIQUE,\n  password_hash text NOT NULL,\n  api_token_last4 char(4)\n);", "prose-keywords", "sql/schema"
    if k == 2:
        return "def rotate_token(user):\n    \"\"\"Invalidate the old secret and issue a new one.\"\"\"\n    user.token = secrets.token_urlsafe(32)\n    user.save(update_fields=[\"token\"])", "prose-keywords", "code/python"
    return "$ openssl rand -hex 32   # use the output as JWT_SECRET, don't commit it", "prose-keywords", "docs/shell"


def n_cursor():
    k = R.randrange(3)
    cur = base64.b64encode(json.dumps({"offset": R.randint(10, 900), "limit": 50}).encode()).decode()
    if k == 0:
        return json.dumps({"data": [{"id": R.randint(1, 999)}], "next_page_token": cur, "has_more": True}), "pagination-cursor", "json/api-response"
    if k == 1:
        c2 = b64u(json.dumps({"created_at": ts() + "Z", "id": R.randint(1000, 9999)}).encode())
        return f"GET /v1/events?starting_after={c2}&limit=100", "pagination-cursor", "http/request-line"
    return f"com.acme.billing.internal.InvoiceRenderer.renderPdf(InvoiceRenderer.java:{R.randint(10, 400)}) and segue.core.v{R.randint(1, 3)}.alpha", "jwt-like-dotted", "log/java-frame"


def n_cloud_ids():
    k = R.randrange(3)
    acct = rs(DIG, 12)
    if k == 0:
        return (f"$ aws ec2 describe-instances --query 'Reservations[].Instances[].[InstanceId,ImageId,VpcId]'\n[\n    [\n        \"i-0{rs(HEX, 16)}\",\n        \"ami-0{rs(HEX, 16)}\",\n        \"vpc-0{rs(HEX, 16)}\"\n    ]\n]"), "cloud-resource-id", "shell/aws-cli"
    if k == 1:
        return f"arn:aws:iam::{acct}:role/github-actions-deployer\narn:aws:lambda:eu-west-1:{acct}:function:thumbnailer:{R.randint(1, 40)}\nsg-0{rs(HEX, 16)}", "cloud-resource-id", "log/arns"
    return f"/subscriptions/{uuid4()}/resourceGroups/rg-prod/providers/Microsoft.Storage/storageAccounts/acmeprod{rs(ANL, 6)}", "cloud-resource-id", "log/azure-id"


def n_public_ids():
    k = R.randrange(3)
    if k == 0:
        return f"GOOGLE_CLIENT_ID={rs(DIG, 12)}-{rs(ANL, 32)}.apps.googleusercontent.com\n# the client secret is in 1Password", "public-client-id", "file/dotenv"
    if k == 1:
        return f"GitHub App ID: {R.randint(100000, 999999)}\nClient ID: Iv23li{rs(AN, 14)}\nInstallation ID: {R.randint(10 ** 7, 10 ** 8)}", "public-client-id", "chat/prose"
    return f"Posted to channel C0{rs(ANU, 9)} as U0{rs(ANU, 9)} (team T0{rs(ANU, 8)}), ts={NOW}.{rs(DIG, 6)}", "slack-ids", "log/line"


def n_crypto_public():
    k = R.randrange(5)
    if k == 0:
        return (f"Transaction hash: 0x{rs(HEX, 64)}\nStatus: Success\nBlock: {R.randint(19000000, 21000000)}\nFrom: 0x{rs(HEX, 40)}\nTo: 0x{rs(HEX, 40)}"), "eth-tx-hash", "shell/etherscan"
    if k == 1:
        return f"$ cast block latest --field hash\n0x{rs(HEX, 64)}\n$ cast balance 0x{rs(HEX, 40)}\n{R.randint(10 ** 15, 10 ** 19)}", "eth-tx-hash", "shell/cast"
    if k == 2:
        return "creation_rules:\n  - path_regex: secrets/.*\\.yaml$\n    age: >-\n      age1" + rs(BECH, 58) + ",\n      age1" + rs(BECH, 58), "age-recipient", "config/sops"
    if k == 3:
        return f"[Peer]\n# phone\nPublicKey = {b64(32)}\nAllowedIPs = 10.8.0.{R.randint(2, 250)}/32\nEndpoint = 203.0.113.{R.randint(2, 250)}:51820", "wireguard-public", "file/wg-peer"
    return (f"$ sudo wg show\ninterface: wg0\n  public key: {b64(32)}\n  private key: (hidden)\n  listening port: 51820\n\npeer: {b64(32)}\n  endpoint: 198.51.100.{R.randint(2, 250)}:51820\n  allowed ips: 10.8.0.2/32"), "wireguard-public", "shell/wg-show"


def n_fingerprints():
    k = R.randrange(3)
    if k == 0:
        return (f"The authenticity of host 'bastion.acme.io (203.0.113.{R.randint(2, 250)})' can't be established.\nED25519 key fingerprint is SHA256:{rs(B64, 43)}.\n"
                f"This key is not known by any other names.\nAre you sure you want to continue connecting (yes/no/[fingerprint])?"), "fingerprint", "shell/ssh"
    if k == 1:
        return f"SHA256 Fingerprint={':'.join(rs(HEXU, 2) for _ in range(32))}", "fingerprint", "shell/openssl"
    return f"ETag: \"{rs(HEX, 32)}\"\nLast-Modified: Mon, 07 Dec 2026 18:22:10 GMT\nx-amz-version-id: {rs(B64U, 32)}", "etag", "http/response-headers"


def n_cache_keys():
    return (f"{gha_ts()} Cache restored from key: node-cache-Linux-x64-npm-{rs(HEX, 64)}\n{gha_ts()} Received {R.randint(10, 400)} of {R.randint(400, 900)} MB\n"
            f"{gha_ts()} Cache hit for restore-key: setup-go-Linux-ubuntu24-go-1.23.4-{rs(HEX, 64)}"), "cache-key", "ci/github-actions"


def n_sops():
    return (f"stripe_key: ENC[AES256_GCM,data:{b64(40)},iv:{b64(32)},tag:{b64(16)},type:str]\nsops:\n  age:\n    - recipient: age1{rs(BECH, 58)}\n"
            f"      enc: |\n        -----BEGIN AGE ENCRYPTED FILE-----\n        {b64(48)}\n        -----END AGE ENCRYPTED FILE-----\n  lastmodified: \"{ts()}Z\"\n  mac: ENC[AES256_GCM,data:{b64(64)},iv:{b64(32)},tag:{b64(16)},type:str]\n  version: 3.9.1"), "sops-encrypted", "config/sops"


def n_db_nopw():
    k = R.randrange(3)
    if k == 0:
        return f"DATABASE_URL=postgresql://app@localhost:5432/app\nREDIS_URL=redis://localhost:6379/0\nMONGO_URL=mongodb://localhost:27017/test", "url-no-password", "file/dotenv"
    if k == 1:
        return f"{ts()}Z INFO connected to postgres://billing@db.internal:5432/billing (pool=10)", "url-no-password", "log/line"
    return "jdbc:postgresql://db:5432/app?user=app&ssl=true", "url-no-password", "config/jdbc"


def n_hashes_misc():
    k = R.randrange(4)
    if k == 0:
        return f"https://www.gravatar.com/avatar/{rs(HEX, 32)}?s=80&d=identicon", "content-hash", "url/gravatar"
    if k == 1:
        return f"ipfs://bafybei{rs('abcdefghijklmnopqrstuvwxyz234567', 52)}/metadata/{R.randint(1, 9999)}.json", "content-hash", "url/ipfs"
    if k == 2:
        return f"MD5 ({pick(['report.pdf', 'backup.tar', 'logo.png'])}) = {rs(HEX, 32)}\nSHA1 = {rs(HEX, 40)}", "content-hash", "shell/md5"
    return f"$ docker ps\nCONTAINER ID   IMAGE              COMMAND                  STATUS         NAMES\n{rs(HEX, 12)}   postgres:16        \"docker-entrypoint.s…\"   Up 2 hours     billing-db-1\n{rs(HEX, 12)}   ghcr.io/acme/api   \"./start.sh\"             Up 2 hours     billing-api-1", "container-id", "shell/docker-ps"


def n_tf_state_sensitive():
    return json.dumps({"version": 4, "terraform_version": "1.9.8", "serial": R.randint(1, 300), "lineage": uuid4(),
                       "outputs": {"db_password": {"value": "(sensitive)", "type": "string", "sensitive": True},
                                   "endpoint": {"value": f"prod-db.cluster-{rs(ANL, 12)}.eu-west-1.rds.amazonaws.com", "type": "string"}}}, indent=2), "masked", "iac/tf-state"


def n_generate_cmd():
    k = R.randrange(3)
    if k == 0:
        return "python -c \"import secrets; print(secrets.token_urlsafe(50))\"  # paste the result into DJANGO_SECRET_KEY", "generator-command", "docs/shell"
    if k == 1:
        return "To create a NextAuth secret run `npx auth secret` or `openssl rand -base64 32` and set AUTH_SECRET in .env.local.", "generator-command", "docs/prose"
    return "$ wg genkey | tee privatekey | wg pubkey > publickey\n$ chmod 600 privatekey", "generator-command", "docs/shell"


def n_long_benign():
    fields = {"ts": ts() + "Z", "level": "info", "svc": pick(SERVICES), "msg": "request completed", "request_id": uuid4(),
              "trace_id": rs(HEX, 32), "span_id": rs(HEX, 16), "user_agent": "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_6) AppleWebKit/605.1.15",
              "build": rs(HEX, 40), "etag": rs(HEX, 32), "region": "eu-west-1", "bytes": R.randint(100, 10 ** 6), "cache": "HIT",
              "digest": "sha256:" + rs(HEX, 64), "session_present": True, "token_type": "bearer", "password_reset": False}
    for i in range(R.randint(6, 12)):
        fields[f"flag_{rs(LO, 5)}"] = R.random() < 0.5
    return json.dumps(fields, separators=(",", ":")), "long-line-benign", "log/long-line"


NEG = [
    (n_git_log, 7), (n_git_show, 5), (n_git_misc, 8), (n_sha256sum, 5), (n_npm_lock, 5), (n_yarn_lock, 4), (n_cargo_lock, 4),
    (n_go_sum, 5), (n_pip_hash, 5), (n_docker_digest, 7), (n_uuid_log, 7), (n_ulid, 3), (n_trace, 6), (n_stripe_ids, 6),
    (n_ssh_pub, 8), (n_pem_public, 8), (n_dkim, 3), (n_pgp_sig, 3), (n_gpg_list, 3), (n_placeholder, 18), (n_changeme, 5),
    (n_aws_example, 4), (n_env_names, 8), (n_env_read, 10), (n_empty_pw, 8), (n_refs, 7), (n_masked, 10), (n_data_uri, 7),
    (n_minified, 7), (n_colors, 5), (n_versions, 5), (n_paths, 7), (n_webpack, 4), (n_npm_names, 3), (n_k8s_names, 5),
    (n_isbn_phone, 3), (n_test_cards, 3), (n_prose, 18), (n_prose_code, 6), (n_cursor, 6), (n_cloud_ids, 6), (n_public_ids, 5),
    (n_crypto_public, 9), (n_fingerprints, 5), (n_cache_keys, 3), (n_sops, 3), (n_db_nopw, 5), (n_hashes_misc, 6),
    (n_tf_state_sensitive, 2), (n_generate_cmd, 3), (n_long_benign, 4),
]


# --------------------------------------------------------------------------
def norm(res):
    """context result -> (text, secret_override | None, context_override | None)"""
    if isinstance(res, tuple):
        if len(res) == 3:
            return res
        return res[0], res[1], None
    return res, None, None


def generic_rows(sp):
    extra = sp.get("extra", {})
    pool = dict(KV_CTX)
    if sp["t"] == "api":
        pool.update(HDR_CTX)
    pool.update(extra)
    if "only" in sp:
        pool = {k: pool[k] for k in sp["only"]}
    n = max(2, round(sp.get("n", 3) * 0.8))
    probe = sp["g"]()
    disp_eq = not isinstance(probe, tuple)
    if sp.get("nourl") or not disp_eq:
        pool.pop("enc/url-query", None)
    chosen = [k for k in extra if k in pool]
    R.shuffle(chosen)
    chosen = chosen[:max(1, n - 1)] if chosen else []
    if "lang" in pool and "lang" not in chosen and R.random() < 0.22:
        chosen.append("lang")
    if "agent/tool-json" in pool and "agent/tool-json" not in chosen and R.random() < 0.12:
        chosen.append("agent/tool-json")
    rest = [k for k in pool if k not in chosen]
    R.shuffle(rest)
    chosen = (chosen + rest)[:n]
    rows = []
    for c in chosen:
        for _attempt in range(6):
            val = sp["g"]()
            disp, sec = val if isinstance(val, tuple) else (val, val)
            name = pick(sp["names"])
            text, sec2, c2 = norm(pool[c](sp, name, disp))
            secret = sec2 or sec
            if c == "enc/k8s-secret-b64":
                secret = sec2
            if secret in text:
                rows.append((text, secret, sp["f"], sp["k"], c2 or c))
                break
        else:
            raise AssertionError(f"could not place secret for {sp['f']}:{sp['k']} in {c}")
    return rows


def build():
    pos = []
    for sp in SPECS:
        pos += generic_rows(sp)
    for fam, kind, fn, n in STRUCT:
        for r in fn(max(2, round(n * 0.9))):
            if len(r) == 4:
                t, s, c, f = r
            else:
                (t, s, c), f = r, fam
            pos.append((t, s, f, kind, c))
    neg = []
    for fn, n in NEG:
        for _ in range(max(2, round(n * 0.9))):
            t, kind, c = fn()
            neg.append((t, None, "negative", kind, c))
    rows, seen = [], set()
    for t, s, f, k, c in pos + neg:
        if t in seen:
            continue
        seen.add(t)
        if s is not None:
            assert s in t, (f, k, c, s)
            assert s.strip() == s and len(s) >= 6, (f, k, c, s)
        rows.append({"text": t, "secret": s, "source": f"gen-held6:{f}:{k}:{c}"})
    R.shuffle(rows)
    return rows


def main():
    rows = build()
    with OUT.open("w", encoding="utf-8", newline="\n") as fh:
        for r in rows:
            fh.write(json.dumps(r, ensure_ascii=False) + "\n")
    npos = sum(r["secret"] is not None for r in rows)
    print(f"wrote {len(rows)} rows ({npos} positive, {len(rows) - npos} negative) to {OUT.name}")


if __name__ == "__main__":
    main()
