#!/usr/bin/env python3
"""Held-out redaction corpus, round 5 (``gen_heldout5.jsonl``).

Written BLIND on 2026-12-07: the author did not read the redaction engine,
its tests, the other generators or the other corpora (only the first three
rows of ``gen_heldout4.jsonl``, to copy the row format).  Credential formats
come from public vendor documentation and general knowledge.

Run ``python tests/data/redaction/generate_heldout5.py``; it writes
``gen_heldout5.jsonl`` next to itself.  Stdlib only and deterministic: all
randomness comes from ``random.Random(5_2026_12_07)``; no clock, no
``os.urandom``, no set/hash ordering.

Row format (one JSON object per line)::

    {"text": str, "secret": str | null, "source": "gen-held5:<family>:<kind>:<context>"}

``secret`` is the EXACT substring of ``text`` that must not survive
redaction (the generator asserts it occurs in ``text``).  A text may contain
further credentials (for example an AWS key id next to its secret key); only
the named one is scored.  ``secret: null`` marks a NEGATIVE row
(family ``negative``): the text holds no secret and must come back unchanged.

Conventions for ``secret``:

* token / key=value / env var / config value / CLI flag: the value itself;
* ``Authorization: Bearer X`` (also ``token X``, ``Bot X``, ``SSWS X``,
  ``Api-Token X``, ``key=X``): X;  ``Authorization: Basic B``: the base64 B;
* URL with a password (``scheme://user:PASS@host``, ``.git-credentials``,
  ``cloudinary://id:SECRET@cloud``): the password, exactly as written in the
  URL (so percent-encoded when the password needs encoding);
* webhook URLs (Slack, Discord): the final secret path segment; Telegram
  bot API URLs: the bot token;
* connection strings (``AccountKey=``, ``Password=``): that value; Azure SAS
  URLs: the ``sig=`` value as written (percent-encoded);
* PEM blocks (RSA / EC / PKCS#8 / PGP): the first base64 body line;
  OpenSSH ed25519 blocks (whose first lines are a fixed header and the
  public key): the 4th body line, the first one carrying private-key bytes;
* base64-wrapped values (``kubectl get secret -o yaml`` data, Docker
  ``config.json`` ``auth``): the base64 string as it appears;
* cookies: the cookie value;  JWTs: the whole ``header.payload.signature``;
* URL-encoded / query-string placements: the value as it appears in text.

Families (96): cloud (aws, gcp, azure, digitalocean, alibaba, tencent,
cloudflare, linode, hetzner, netlify, supabase, vercel, ibmcloud), AI
providers (openai, anthropic, huggingface, groq, replicate, perplexity, xai,
openrouter, langsmith, cohere, mistral, deepseek, pinecone, wandb), code
hosts (github, gitlab, bitbucket, atlassian), package registries / infra
(npm, pypi, rubygems, nuget, dockerhub, cratesio, jfrog, clojars,
terraform-cloud, vault, pulumi), payment (stripe, square, braintree,
shopify, razorpay, paystack, flutterwave), messaging (slack, discord,
telegram, twilio, sendgrid, mailgun, mailchimp), SaaS / observability
(datadog, newrelic, sentry, grafana, linear, notion, airtable, postman,
dynatrace, figma, hubspot, doppler, onepassword, age, okta, circleci,
contentful, mapbox, databricks, planetscale, asana, algolia, prefect,
firebase, cloudinary), databases (postgres, mysql, mongodb, redis, rabbitmq,
mssql, elasticsearch) and generic kinds (password, jwt, private-key,
basic-auth, session-cookie, django, rails, generic).

Contexts.  Emphasis on multi-line AI-coding-agent artefacts (``agent/*``):
``cat .env``, ``env | sort``, ``kubectl get secret -o yaml`` (base64 data),
Kubernetes manifests with ``stringData``, ``docker inspect``, ``terraform
show`` / ``terraform state pull``, ``git diff`` hunks, pytest tracebacks and
pydantic errors printing settings, JSON tool results with escaped quotes,
shell heredocs writing config files, markdown code fences in an agent reply,
CI logs (GitHub Actions, GitLab, Jenkins), docker-compose files, Python
REPL, ``grep -rn``, ``printenv``, systemd units, ``helm get values``,
workflow files, numbered file reads; all framed as shell prompts or agent
tool calls.  Human-language prose around the secret (``lang/<code>``): en,
de, es, pt, fr, it, nl, pl, ru, tr, ja, zh, ko, hi, ar.  Placement
(``place/*``): start / end of text, trailing punctuation, quotes of many
scripts, query strings, URL-encoded values.  Plus config files
(``config/*``: YAML, TOML, INI, JSON, .properties, XML), CLI flags, HTTP
headers, code snippets and family-specific files (``~/.aws/credentials``,
``.npmrc``, ``.pypirc``, ``.git-credentials``, ``.netrc``, service-account
JSON, connection strings, webhook calls ...).

Negatives (``negative:<kind>:<context>``) are equally realistic artefacts:
``.env.example`` placeholders, ``${VAR}`` / ``{{ secrets.X }}`` references,
masked CI output, ``(sensitive value)``, ``SecretStr('**********')``,
redacted values (``sk-...abcd``, ``****``), documentation examples
(``AKIAIOSFODNN7EXAMPLE``), git SHAs, file and image digests, lock-file
integrity hashes, UUIDs, request / trace ids, version strings, base64 of
ordinary text, public keys and certificates, key names without values,
"the token expired" errors, prose about passwords in all 15 languages,
URLs and paths without credentials.  The generator asserts that no negative
matches any of the credential shapes it generates.
"""

import base64
import json
import os
import random
import re
import string
import struct
from urllib.parse import quote

rng = random.Random(5_2026_12_07)

UP = string.ascii_uppercase
LO = string.ascii_lowercase
DI = string.digits
B62 = UP + LO + DI
HEX = "0123456789abcdef"
B64 = B62 + "+/"
B64U = B62 + "-_"
UPD = UP + DI
B32 = UP + "234567"
LOD = LO + DI
BECH = "qpzry9x8gf2tvdw0s3jn54khce6mua7l"


# --------------------------------------------------------------------------
# small random helpers
# --------------------------------------------------------------------------

def r(alpha, n):
    return "".join(rng.choice(alpha) for _ in range(n))


def rb(n):
    return bytes(rng.getrandbits(8) for _ in range(n))


def b64s(s):
    if isinstance(s, str):
        s = s.encode()
    return base64.b64encode(s).decode()


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def uuid4():
    h = r(HEX, 32)
    h = h[:12] + "4" + h[13:16] + rng.choice("89ab") + h[17:]
    return "%s-%s-%s-%s-%s" % (h[:8], h[8:12], h[12:16], h[16:20], h[20:])


def pick(seq):
    return rng.choice(seq)


def iso(frac=False):
    m = rng.choice([10, 11, 12])
    d = rng.randint(1, 28 if m != 12 else 6)
    t = "2026-%02d-%02dT%02d:%02d:%02d" % (m, d, rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))
    if frac:
        t += ".%07d" % rng.randint(0, 9999999)
    return t + "Z"


def ts_series(n):
    """n increasing GitHub-Actions style timestamps."""
    m, d = rng.choice([10, 11, 12]), rng.randint(1, 6)
    t = rng.randint(0, 20 * 3600)
    out = []
    for _ in range(n):
        t += rng.randint(0, 3)
        out.append("2026-%02d-%02dT%02d:%02d:%02d.%07dZ" % (m, d, t // 3600, t // 60 % 60, t % 60, rng.randint(0, 9999999)))
    return out


def semver():
    return "%d.%d.%d" % (rng.randint(1, 4), rng.randint(0, 31), rng.randint(0, 15))


def acct():
    return str(rng.randint(100000000000, 999999999999))


def ip10():
    return "10.%d.%d.%d" % (rng.randint(0, 255), rng.randint(0, 255), rng.randint(2, 254))


def sha7():
    return r(HEX, 7)


def camel(key):
    parts = key.split("_")
    return parts[0] + "".join(p.title() for p in parts[1:])


REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-northeast-1", "sa-east-1"]
PROJECTS = ["billing-api", "orders-svc", "segue-web", "inventory", "notify-worker", "acme-portal",
            "data-pipeline", "auth-gateway", "search-indexer", "checkout"]
USERS = ["dev", "ubuntu", "maria", "kenji", "ahmet", "lena", "runner", "priya", "olek", "sofia"]
HOSTS = ["app.acme.io", "api.example.com", "staging.segue.dev", "portal.acme-corp.net", "shop.example.org"]
DBUSERS = ["app", "app_rw", "postgres", "admin", "svc_orders", "billing", "root", "deploy", "etl"]
DBNAMES = ["app", "orders", "billing", "analytics", "inventory", "prod", "core"]


def proj():
    return pick(PROJECTS)


def user():
    return pick(USERS)


# non-secret environment variables used as filler around the secret
FILLER_ENV = [
    ("NODE_ENV", lambda: pick(["production", "staging", "development"])),
    ("PORT", lambda: pick(["3000", "8000", "8080", "5000", "9090"])),
    ("LOG_LEVEL", lambda: pick(["info", "debug", "warn"])),
    ("APP_NAME", proj),
    ("AWS_REGION", lambda: pick(REGIONS)),
    ("DATABASE_HOST", lambda: pick(["db.internal", "postgres", ip10(), "db-primary.prod.svc.cluster.local"])),
    ("DATABASE_PORT", lambda: "5432"),
    ("REDIS_URL", lambda: "redis://%s:6379/%d" % (pick(["redis", "cache.internal", "127.0.0.1"]), rng.randint(0, 3))),
    ("CACHE_TTL_SECONDS", lambda: str(pick([60, 300, 900, 3600]))),
    ("SENTRY_ENVIRONMENT", lambda: pick(["production", "staging"])),
    ("TZ", lambda: "UTC"),
    ("PUBLIC_URL", lambda: "https://" + pick(HOSTS)),
    ("WEB_CONCURRENCY", lambda: str(rng.randint(2, 8))),
    ("S3_BUCKET", lambda: "acme-%s-%s" % (pick(["uploads", "exports", "backups"]), pick(["prod", "stg"]))),
    ("SMTP_HOST", lambda: pick(["smtp.mailgun.org", "smtp.sendgrid.net", "email-smtp.eu-west-1.amazonaws.com"])),
    ("SMTP_PORT", lambda: "587"),
    ("OTEL_EXPORTER_OTLP_ENDPOINT", lambda: "http://otel-collector:4317"),
    ("KAFKA_BROKERS", lambda: "kafka-0.kafka:9092,kafka-1.kafka:9092"),
    ("FEATURE_NEW_CHECKOUT", lambda: pick(["true", "false"])),
    ("RELEASE_VERSION", lambda: "v" + semver()),
    ("GIT_COMMIT", lambda: r(HEX, 40)),
    ("MAX_UPLOAD_MB", lambda: str(pick([10, 25, 50, 100]))),
    ("CORS_ALLOWED_ORIGINS", lambda: "https://app.acme.io,https://admin.acme.io"),
    ("PYTHONUNBUFFERED", lambda: "1"),
    ("QUEUE_NAME", lambda: pick(["default", "emails", "webhooks"])),
    ("METRICS_PORT", lambda: "9102"),
]

SYS_ENV = [
    ("HOME", lambda: "/home/" + user()),
    ("HOSTNAME", lambda: "%s-%s-%s" % (proj(), r(LOD, 10), r(LOD, 5))),
    ("LANG", lambda: pick(["en_US.UTF-8", "C.UTF-8", "de_DE.UTF-8"])),
    ("PATH", lambda: "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"),
    ("PWD", lambda: "/workspace/" + proj()),
    ("SHELL", lambda: pick(["/bin/bash", "/bin/zsh"])),
    ("SHLVL", lambda: str(rng.randint(1, 3))),
    ("TERM", lambda: pick(["xterm-256color", "screen-256color", "dumb"])),
    ("USER", user),
    ("_", lambda: "/usr/bin/env"),
    ("COLORTERM", lambda: "truecolor"),
    ("EDITOR", lambda: pick(["vim", "nano", "code --wait"])),
    ("VIRTUAL_ENV", lambda: "/workspace/%s/.venv" % proj()),
    ("NVM_DIR", lambda: "/home/%s/.nvm" % user()),
    ("GOPATH", lambda: "/home/%s/go" % user()),
    ("HISTSIZE", lambda: "10000"),
    ("LESS", lambda: "-R"),
    ("PAGER", lambda: "less"),
    ("SSH_AUTH_SOCK", lambda: "/tmp/ssh-%s/agent.%d" % (r(LOD, 10), rng.randint(1000, 99999))),
    ("XDG_RUNTIME_DIR", lambda: "/run/user/1000"),
    ("CI", lambda: "true"),
    ("KUBECONFIG", lambda: "/home/%s/.kube/config" % user()),
]


def env_pairs(pool, k):
    out = []
    for name, fn in rng.sample(pool, k):
        out.append((name, fn()))
    return out


def safe_plain(v):
    return re.fullmatch(r"[A-Za-z0-9_./+=-]+", v) is not None


def yq(v):
    """YAML scalar."""
    if safe_plain(v) and not v[0] in "-." and not v.isdigit():
        return v
    return json.dumps(v)


def shq(v):
    """shell-quoted value."""
    if safe_plain(v):
        return v if rng.random() < 0.5 else '"%s"' % v
    return "'%s'" % v


# --------------------------------------------------------------------------
# presentation frames for shell commands in an agent transcript
# --------------------------------------------------------------------------

def frame(cmd, out):
    style = rng.randrange(5)
    if style == 0:
        return "$ %s\n%s" % (cmd, out)
    if style == 1:
        lines = out.split("\n")
        body = "\n".join(("  \u23bf  " if i == 0 else "     ") + ln for i, ln in enumerate(lines))
        return "\u25cf Bash(%s)\n%s" % (cmd, body)
    if style == 2:
        u, p = user(), proj()
        return "%s@%s:~/%s$ %s\n%s\n%s@%s:~/%s$ " % (u, p, p, cmd, out, u, p, p)
    if style == 3:
        return "Running `%s`:\n\n```\n%s\n```" % (cmd, out)
    return "<tool_call name=\"bash\">%s</tool_call>\n<tool_result exit_code=\"0\">\n%s\n</tool_result>" % (cmd, out)


# --------------------------------------------------------------------------
# credential families
# --------------------------------------------------------------------------

class Fam(object):
    def __init__(self, family, kind, gen, env, key, label, vendor, slots="AA", bearer=False,
                 companions=None, domain=None):
        self.family = family
        self.kind = kind
        self.gen = gen              # () -> value | (value, secret)
        self.env = env
        self.key = key
        self.label = label
        self.vendor = vendor
        self.slots = slots
        self.bearer = bearer
        self.companions = companions  # () -> [(ENV, value)] (non-secret neighbours)
        self.domain = domain or "api.%s.com" % vendor.lower().replace(" ", "")

    def value(self):
        v = self.gen()
        if isinstance(v, tuple):
            return v
        return v, v

    def comp(self):
        return self.companions() if self.companions else []


def password(n=None, url_safe=False, symbols=True):
    n = n or rng.randint(12, 24)
    sym = "-._~" if url_safe else "!#%*+-.=?@^_~&"
    while True:
        mid = [rng.choice(B62) for _ in range(n - 2)]
        if symbols:
            for _ in range(rng.randint(1, 3)):
                mid[rng.randrange(len(mid))] = rng.choice(sym)
        p = rng.choice(B62) + "".join(mid) + rng.choice(B62)
        if any(c.isdigit() for c in p) and any(c.isupper() for c in p) and any(c.islower() for c in p):
            return p


def url_pw(scheme, users, host, path, url_safe_ratio=0.6):
    pw = password(url_safe=rng.random() < url_safe_ratio)
    enc = quote(pw, safe="")
    return "%s://%s:%s@%s%s" % (scheme, pick(users), enc, host, path), enc


def jwt(payload, alg="HS256"):
    header = json.dumps({"alg": alg, "typ": "JWT"}, separators=(",", ":"))
    siglen = {"HS256": 32, "RS256": 256, "ES256": 64}[alg]
    return "%s.%s.%s" % (b64u(header.encode()), b64u(json.dumps(payload, separators=(",", ":")).encode()),
                         b64u(rb(siglen)))


def jwt_user():
    iat = 1796000000 + rng.randint(0, 5000000)
    p = {"sub": str(rng.randint(10000, 999999)), "email": "%s@acme.io" % user(),
         "role": pick(["admin", "user", "service"]), "iat": iat, "exp": iat + pick([900, 3600, 86400])}
    if rng.random() < 0.5:
        p = {"iss": "https://auth.%s" % pick(HOSTS), "sub": uuid4(), "aud": "api", "iat": iat,
             "exp": iat + 3600, "scope": "read write"}
    return jwt(p, pick(["HS256", "RS256", "ES256"]))


def supabase_service_jwt():
    iat = 1790000000 + rng.randint(0, 5000000)
    return jwt({"iss": "supabase", "ref": r(LO, 20), "role": "service_role", "iat": iat,
                "exp": iat + 315360000})


def mapbox_sk():
    body = b64u(json.dumps({"u": pick(["acme-io", "segue", "geo-team"]), "a": r(LOD, 25)},
                           separators=(",", ":")).encode())
    return "sk.%s.%s" % (body, r(B64U, 22))


def slack_bot():
    return "xoxb-%d-%d-%s" % (rng.randint(10 ** 10, 10 ** 12), rng.randint(10 ** 12, 10 ** 13), r(B62, 24))


def slack_user():
    return "xoxp-%d-%d-%d-%s" % (rng.randint(10 ** 10, 10 ** 12), rng.randint(10 ** 10, 10 ** 12),
                                 rng.randint(10 ** 12, 10 ** 13), r(HEX, 32))


def slack_app():
    return "xapp-1-A%s-%d-%s" % (r(UPD, 10), rng.randint(10 ** 12, 10 ** 13), r(HEX, 64))


def discord_bot():
    uid = str(rng.randint(10 ** 17, 10 ** 19 - 1))
    return "%s.%s.%s" % (b64u(uid.encode()), r(B64U, 6), r(B64U, 38))


def telegram():
    return "%d:AA%s" % (rng.randint(10 ** 8, 10 ** 10 - 1), r(B64U, 33))


def azure_client_secret():
    return r(B62, 3) + "8Q~" + r(B62 + "~._-", 34)


def openai_proj():
    return "sk-proj-" + r(B64U, 74) + "T3BlbkFJ" + r(B64U, 74)


def openai_legacy():
    return "sk-" + r(B62, 20) + "T3BlbkFJ" + r(B62, 20)


def openai_svc():
    return "sk-svcacct-" + r(B64U, 74) + "T3BlbkFJ" + r(B64U, 74)


def twilio_sid():
    return [("TWILIO_ACCOUNT_SID", "AC" + r(HEX, 32))]


def cloudinary():
    sec = r(B64U, 27)
    return "cloudinary://%d:%s@%s" % (rng.randint(10 ** 14, 10 ** 15 - 1), sec, pick(["acme", "segue-media", "dx7kq2"])), sec


FAMS = [
    # ---- cloud
    Fam("aws", "access-key-id", lambda: "AKIA" + r(B32, 16), "AWS_ACCESS_KEY_ID", "aws_access_key_id", "AWS access key", "AWS", "AAL",
        domain="sts.amazonaws.com"),
    Fam("aws", "secret-access-key", lambda: r(B64, 40), "AWS_SECRET_ACCESS_KEY", "aws_secret_access_key", "AWS secret key", "AWS", "AAP",
        companions=lambda: [("AWS_DEFAULT_REGION", pick(REGIONS))], domain="s3.amazonaws.com"),
    Fam("aws", "session-token", lambda: "IQoJb3JpZ2luX2VjE" + r(B64, rng.randint(300, 380)), "AWS_SESSION_TOKEN", "aws_session_token",
        "AWS session token", "AWS", "AA", domain="sts.amazonaws.com"),
    Fam("gcp", "api-key", lambda: "AIza" + r(B64U, 35), "GOOGLE_API_KEY", "google_api_key", "Google API key", "Google", "AAP",
        domain="maps.googleapis.com"),
    Fam("gcp", "gemini-api-key", lambda: "AIza" + r(B64U, 35), "GEMINI_API_KEY", "gemini_api_key", "Gemini API key", "Gemini", "AL",
        domain="generativelanguage.googleapis.com"),
    Fam("gcp", "oauth-client-secret", lambda: "GOCSPX-" + r(B64U, 28), "GOOGLE_CLIENT_SECRET", "client_secret", "Google OAuth client secret",
        "Google", "AP", companions=lambda: [("GOOGLE_CLIENT_ID", "%d-%s.apps.googleusercontent.com" % (rng.randint(10 ** 11, 10 ** 12), r(LOD, 32)))]),
    Fam("gcp", "oauth-access-token", lambda: "ya29." + r(B64U, rng.randint(150, 200)), "GOOGLE_OAUTH_ACCESS_TOKEN", "access_token",
        "Google access token", "Google", "A", bearer=True, domain="www.googleapis.com"),
    Fam("azure", "storage-account-key", lambda: b64s(rb(64)), "AZURE_STORAGE_KEY", "account_key", "Azure storage key", "Azure", "AA",
        companions=lambda: [("AZURE_STORAGE_ACCOUNT", "acme%s" % pick(["prod", "stg", "data"]))], domain="acmeprod.blob.core.windows.net"),
    Fam("azure", "client-secret", azure_client_secret, "AZURE_CLIENT_SECRET", "client_secret", "Azure client secret", "Azure", "AL",
        companions=lambda: [("AZURE_TENANT_ID", uuid4()), ("AZURE_CLIENT_ID", uuid4())], domain="login.microsoftonline.com"),
    Fam("digitalocean", "pat", lambda: "dop_v1_" + r(HEX, 64), "DIGITALOCEAN_ACCESS_TOKEN", "do_token", "DigitalOcean token", "DigitalOcean",
        "AAL", bearer=True, domain="api.digitalocean.com"),
    Fam("alibaba", "access-key-id", lambda: "LTAI5t" + r(B62, 18), "ALIBABA_CLOUD_ACCESS_KEY_ID", "access_key_id", "Alibaba Cloud AccessKey",
        "Alibaba Cloud", "AP"),
    Fam("alibaba", "access-key-secret", lambda: r(B62, 30), "ALIBABA_CLOUD_ACCESS_KEY_SECRET", "access_key_secret",
        "Alibaba Cloud AccessKey secret", "Alibaba Cloud", "A"),
    Fam("tencent", "secret-id", lambda: "AKID" + r(B62, 32), "TENCENTCLOUD_SECRET_ID", "secret_id", "Tencent Cloud SecretId", "Tencent Cloud", "AL"),
    Fam("cloudflare", "api-token", lambda: r(B62 + "_-", 40), "CLOUDFLARE_API_TOKEN", "api_token", "Cloudflare API token", "Cloudflare",
        "AAP", bearer=True, domain="api.cloudflare.com"),
    Fam("linode", "pat", lambda: r(HEX, 64), "LINODE_TOKEN", "token", "Linode token", "Linode", "AL", bearer=True, domain="api.linode.com"),
    Fam("hetzner", "api-token", lambda: r(B62, 64), "HCLOUD_TOKEN", "token", "Hetzner Cloud token", "Hetzner", "AP", bearer=True,
        domain="api.hetzner.cloud"),
    Fam("netlify", "pat", lambda: "nfp_" + r(B62, 36), "NETLIFY_AUTH_TOKEN", "auth_token", "Netlify token", "Netlify", "AL", bearer=True),
    Fam("supabase", "access-token", lambda: "sbp_" + r(HEX, 40), "SUPABASE_ACCESS_TOKEN", "access_token", "Supabase token", "Supabase", "AP",
        bearer=True),
    Fam("supabase", "service-role-jwt", supabase_service_jwt, "SUPABASE_SERVICE_ROLE_KEY", "service_role_key", "Supabase service_role key",
        "Supabase", "AL", companions=lambda: [("SUPABASE_URL", "https://%s.supabase.co" % r(LO, 20))]),
    Fam("vercel", "token", lambda: r(B62, 24), "VERCEL_TOKEN", "token", "Vercel token", "Vercel", "AL", bearer=True),
    Fam("ibmcloud", "api-key", lambda: r(B64U, 44), "IBMCLOUD_API_KEY", "apikey", "IBM Cloud API key", "IBM Cloud", "AP"),
    # ---- AI providers
    Fam("openai", "project-key", openai_proj, "OPENAI_API_KEY", "openai_api_key", "OpenAI key", "OpenAI", "AAALP", bearer=True,
        domain="api.openai.com"),
    Fam("openai", "legacy-key", openai_legacy, "OPENAI_API_KEY", "api_key", "OpenAI key", "OpenAI", "AL", bearer=True, domain="api.openai.com"),
    Fam("openai", "service-account-key", openai_svc, "OPENAI_API_KEY", "api_key", "OpenAI service account key", "OpenAI", "AP", bearer=True,
        domain="api.openai.com"),
    Fam("anthropic", "api-key", lambda: "sk-ant-api03-" + r(B64U, 93) + "AA", "ANTHROPIC_API_KEY", "anthropic_api_key", "Anthropic key",
        "Anthropic", "AAALP", domain="api.anthropic.com"),
    Fam("anthropic", "admin-key", lambda: "sk-ant-admin01-" + r(B64U, 93) + "AA", "ANTHROPIC_ADMIN_KEY", "admin_key", "Anthropic admin key",
        "Anthropic", "AP", domain="api.anthropic.com"),
    Fam("huggingface", "user-token", lambda: "hf_" + r(UP + LO, 34), "HF_TOKEN", "hf_token", "Hugging Face token", "Hugging Face", "AL",
        bearer=True, domain="huggingface.co"),
    Fam("groq", "api-key", lambda: "gsk_" + r(B62, 52), "GROQ_API_KEY", "groq_api_key", "Groq key", "Groq", "AP", bearer=True,
        domain="api.groq.com"),
    Fam("replicate", "api-token", lambda: "r8_" + r(B62, 37), "REPLICATE_API_TOKEN", "api_token", "Replicate token", "Replicate", "AL",
        bearer=True),
    Fam("perplexity", "api-key", lambda: "pplx-" + r(B62, 48), "PERPLEXITY_API_KEY", "api_key", "Perplexity key", "Perplexity", "AP",
        bearer=True, domain="api.perplexity.ai"),
    Fam("xai", "api-key", lambda: "xai-" + r(B62, 80), "XAI_API_KEY", "xai_api_key", "xAI key", "xAI", "AL", bearer=True, domain="api.x.ai"),
    Fam("openrouter", "api-key", lambda: "sk-or-v1-" + r(HEX, 64), "OPENROUTER_API_KEY", "api_key", "OpenRouter key", "OpenRouter", "AP",
        bearer=True, domain="openrouter.ai"),
    Fam("langsmith", "api-key", lambda: "lsv2_%s_%s_%s" % (pick(["pt", "sk"]), r(HEX, 32), r(HEX, 10)), "LANGSMITH_API_KEY", "api_key",
        "LangSmith key", "LangSmith", "AL", domain="api.smith.langchain.com"),
    Fam("cohere", "api-key", lambda: r(B62, 40), "COHERE_API_KEY", "cohere_api_key", "Cohere key", "Cohere", "AP", bearer=True),
    Fam("mistral", "api-key", lambda: r(B62, 32), "MISTRAL_API_KEY", "api_key", "Mistral key", "Mistral", "AL", bearer=True,
        domain="api.mistral.ai"),
    Fam("deepseek", "api-key", lambda: "sk-" + r(HEX, 32), "DEEPSEEK_API_KEY", "api_key", "DeepSeek key", "DeepSeek", "AP", bearer=True),
    Fam("pinecone", "api-key", lambda: "pcsk_%s_%s" % (r(B62, 6), r(B62, 63)), "PINECONE_API_KEY", "api_key", "Pinecone key", "Pinecone",
        "AL"),
    Fam("wandb", "api-key", lambda: r(HEX, 40), "WANDB_API_KEY", "api_key", "W&B key", "Weights & Biases", "AP", domain="api.wandb.ai"),
    # ---- code hosts
    Fam("github", "classic-pat", lambda: "ghp_" + r(B62, 36), "GITHUB_TOKEN", "github_token", "GitHub token", "GitHub", "AALP",
        bearer=True, domain="api.github.com"),
    Fam("github", "fine-grained-pat", lambda: "github_pat_11" + r(UPD, 20) + "_" + r(B62, 59), "GH_TOKEN", "token", "GitHub PAT",
        "GitHub", "AAL", bearer=True, domain="api.github.com"),
    Fam("github", "oauth-token", lambda: "gho_" + r(B62, 36), "GITHUB_OAUTH_TOKEN", "oauth_token", "GitHub OAuth token", "GitHub", "AP",
        bearer=True, domain="api.github.com"),
    Fam("github", "app-installation-token", lambda: "ghs_" + r(B62, 36), "GITHUB_APP_TOKEN", "installation_token", "GitHub App token",
        "GitHub", "A", bearer=True, domain="api.github.com"),
    Fam("github", "user-to-server-token", lambda: "ghu_" + r(B62, 36), "GITHUB_USER_TOKEN", "user_token", "GitHub user token", "GitHub",
        "L", bearer=True, domain="api.github.com"),
    Fam("gitlab", "pat", lambda: "glpat-" + r(B64U, 20), "GITLAB_TOKEN", "private_token", "GitLab token", "GitLab", "ALP",
        domain="gitlab.com"),
    Fam("gitlab", "runner-token", lambda: "glrt-" + r(B64U, 20), "CI_RUNNER_TOKEN", "token", "GitLab runner token", "GitLab", "A",
        domain="gitlab.com"),
    Fam("gitlab", "deploy-token", lambda: "gldt-" + r(B64U, 20), "GITLAB_DEPLOY_TOKEN", "deploy_token", "GitLab deploy token", "GitLab", "P",
        domain="gitlab.com"),
    Fam("bitbucket", "app-password", lambda: "ATBB" + r(B62, 32), "BITBUCKET_APP_PASSWORD", "app_password", "Bitbucket app password",
        "Bitbucket", "AL", companions=lambda: [("BITBUCKET_USERNAME", user())], domain="api.bitbucket.org"),
    Fam("atlassian", "api-token", lambda: "ATATT3xFfGF0" + r(B64U, 170) + "=" + r("0123456789ABCDEF", 8), "JIRA_API_TOKEN",
        "api_token", "Jira API token", "Atlassian", "AP", companions=lambda: [("JIRA_EMAIL", "%s@acme.io" % user())],
        domain="acme.atlassian.net"),
    # ---- package registries / infra tooling
    Fam("npm", "access-token", lambda: "npm_" + r(B62, 36), "NPM_TOKEN", "npm_token", "npm token", "npm", "ALP", bearer=True,
        domain="registry.npmjs.org"),
    Fam("pypi", "api-token", lambda: "pypi-AgEIcHlwaS5vcmc" + r(B64U, rng.randint(120, 170)), "PYPI_API_TOKEN", "pypi_token", "PyPI token",
        "PyPI", "AAL", domain="upload.pypi.org"),
    Fam("rubygems", "api-key", lambda: "rubygems_" + r(HEX, 48), "GEM_HOST_API_KEY", "rubygems_api_key", "RubyGems key", "RubyGems", "AP",
        domain="rubygems.org"),
    Fam("nuget", "api-key", lambda: "oy2" + r(LOD, 43), "NUGET_API_KEY", "nuget_api_key", "NuGet key", "NuGet", "AL", domain="api.nuget.org"),
    Fam("dockerhub", "pat", lambda: "dckr_pat_" + r(B64U, 27), "DOCKERHUB_TOKEN", "docker_token", "Docker Hub token", "Docker Hub", "AAP",
        companions=lambda: [("DOCKERHUB_USERNAME", user())], domain="hub.docker.com"),
    Fam("cratesio", "api-token", lambda: "cio" + r(B62, 32), "CARGO_REGISTRY_TOKEN", "token", "crates.io token", "crates.io", "AL",
        domain="crates.io"),
    Fam("jfrog", "api-key", lambda: "AKCp8" + r(B62, 68), "ARTIFACTORY_API_KEY", "artifactory_api_key", "Artifactory API key", "JFrog",
        "AP", domain="acme.jfrog.io"),
    Fam("clojars", "deploy-token", lambda: "CLOJARS_" + r(HEX, 60), "CLOJARS_TOKEN", "deploy_token", "Clojars token", "Clojars", "A",
        domain="clojars.org"),
    Fam("terraform-cloud", "api-token", lambda: r(B62, 14) + ".atlasv1." + r(B62, 67), "TF_TOKEN_app_terraform_io", "token",
        "Terraform Cloud token", "Terraform Cloud", "AL", bearer=True, domain="app.terraform.io"),
    Fam("vault", "service-token", lambda: "hvs." + (r(B62, 24) if rng.random() < 0.5 else "CAESI" + r(B64U, 90)), "VAULT_TOKEN",
        "vault_token", "Vault token", "Vault", "AAP", domain="vault.acme.internal:8200"),
    Fam("pulumi", "access-token", lambda: "pul-" + r(HEX, 40), "PULUMI_ACCESS_TOKEN", "access_token", "Pulumi token", "Pulumi", "AL",
        domain="api.pulumi.com"),
    # ---- payment
    Fam("stripe", "secret-key", lambda: "sk_live_" + r(B62, pick([24, 99])), "STRIPE_SECRET_KEY", "stripe_secret_key", "Stripe secret key",
        "Stripe", "AALP", bearer=True, domain="api.stripe.com"),
    Fam("stripe", "restricted-key", lambda: "rk_live_" + r(B62, pick([24, 99])), "STRIPE_RESTRICTED_KEY", "restricted_key",
        "Stripe restricted key", "Stripe", "AL", bearer=True, domain="api.stripe.com"),
    Fam("stripe", "webhook-secret", lambda: "whsec_" + r(B62, 32), "STRIPE_WEBHOOK_SECRET", "webhook_secret", "Stripe webhook secret",
        "Stripe", "AP", domain="api.stripe.com"),
    Fam("square", "access-token", lambda: "EAAA" + r(B64U, 60), "SQUARE_ACCESS_TOKEN", "access_token", "Square token", "Square", "AL",
        bearer=True, domain="connect.squareup.com"),
    Fam("square", "application-secret", lambda: "sq0csp-" + r(B64U, 43), "SQUARE_APPLICATION_SECRET", "application_secret",
        "Square app secret", "Square", "A", domain="connect.squareup.com"),
    Fam("braintree", "access-token", lambda: "access_token$production$%s$%s" % (r(LOD, 16), r(HEX, 32)), "BRAINTREE_ACCESS_TOKEN",
        "access_token", "Braintree token", "Braintree", "AP", domain="api.braintreegateway.com"),
    Fam("shopify", "admin-token", lambda: "shpat_" + r(HEX, 32), "SHOPIFY_ACCESS_TOKEN", "access_token", "Shopify admin token", "Shopify",
        "AL", companions=lambda: [("SHOPIFY_STORE_DOMAIN", "%s.myshopify.com" % pick(["acme-store", "segue-shop", "kitsune-co"]))],
        domain="acme-store.myshopify.com"),
    Fam("shopify", "app-secret", lambda: "shpss_" + r(HEX, 32), "SHOPIFY_API_SECRET", "api_secret", "Shopify app secret", "Shopify", "P",
        domain="acme-store.myshopify.com"),
    Fam("razorpay", "key-secret", lambda: r(B62, 24), "RAZORPAY_KEY_SECRET", "key_secret", "Razorpay key secret", "Razorpay", "AL",
        companions=lambda: [("RAZORPAY_KEY_ID", "rzp_live_" + r(B62, 14))], domain="api.razorpay.com"),
    Fam("paystack", "secret-key", lambda: "sk_live_" + r(HEX, 40), "PAYSTACK_SECRET_KEY", "secret_key", "Paystack secret key", "Paystack",
        "AP", bearer=True, domain="api.paystack.co"),
    Fam("flutterwave", "secret-key", lambda: "FLWSECK-" + r(HEX, 32) + "-X", "FLW_SECRET_KEY", "secret_key", "Flutterwave secret key",
        "Flutterwave", "AL", bearer=True, domain="api.flutterwave.com"),
    # ---- messaging
    Fam("slack", "bot-token", slack_bot, "SLACK_BOT_TOKEN", "slack_bot_token", "Slack bot token", "Slack", "AALP", bearer=True,
        domain="slack.com"),
    Fam("slack", "user-token", slack_user, "SLACK_USER_TOKEN", "user_token", "Slack user token", "Slack", "AL", bearer=True,
        domain="slack.com"),
    Fam("slack", "app-token", slack_app, "SLACK_APP_TOKEN", "app_token", "Slack app-level token", "Slack", "AP", bearer=True,
        domain="slack.com"),
    Fam("discord", "bot-token", discord_bot, "DISCORD_TOKEN", "discord_token", "Discord bot token", "Discord", "AL",
        domain="discord.com"),
    Fam("telegram", "bot-token", telegram, "TELEGRAM_BOT_TOKEN", "bot_token", "Telegram bot token", "Telegram", "AL",
        domain="api.telegram.org"),
    Fam("twilio", "auth-token", lambda: r(HEX, 32), "TWILIO_AUTH_TOKEN", "auth_token", "Twilio auth token", "Twilio", "AL",
        companions=twilio_sid, domain="api.twilio.com"),
    Fam("sendgrid", "api-key", lambda: "SG." + r(B64U, 22) + "." + r(B64U, 43), "SENDGRID_API_KEY", "sendgrid_api_key", "SendGrid key",
        "SendGrid", "ALP", bearer=True, domain="api.sendgrid.com"),
    Fam("mailgun", "api-key", lambda: ("key-" + r(HEX, 32)) if rng.random() < 0.5 else "%s-%s-%s" % (r(HEX, 32), r(HEX, 8), r(HEX, 8)),
        "MAILGUN_API_KEY", "api_key", "Mailgun key", "Mailgun", "AAP", domain="api.mailgun.net"),
    Fam("mailchimp", "api-key", lambda: r(HEX, 32) + "-us" + str(rng.randint(1, 21)), "MAILCHIMP_API_KEY", "api_key", "Mailchimp key",
        "Mailchimp", "AL", domain="us6.api.mailchimp.com"),
    # ---- SaaS / observability
    Fam("datadog", "api-key", lambda: r(HEX, 32), "DD_API_KEY", "api_key", "Datadog API key", "Datadog", "AL", domain="api.datadoghq.eu"),
    Fam("datadog", "app-key", lambda: r(HEX, 40), "DD_APP_KEY", "app_key", "Datadog application key", "Datadog", "AP",
        domain="api.datadoghq.eu"),
    Fam("newrelic", "user-api-key", lambda: "NRAK-" + r(UPD, 27), "NEW_RELIC_API_KEY", "api_key", "New Relic key", "New Relic", "AL",
        domain="api.newrelic.com"),
    Fam("newrelic", "license-key", lambda: r(HEX, 36) + "NRAL", "NEW_RELIC_LICENSE_KEY", "license_key", "New Relic license key",
        "New Relic", "AP", domain="collector.newrelic.com"),
    Fam("sentry", "user-auth-token", lambda: "sntryu_" + r(HEX, 64), "SENTRY_AUTH_TOKEN", "auth_token", "Sentry auth token", "Sentry", "AL",
        bearer=True, domain="sentry.io"),
    Fam("grafana", "service-account-token", lambda: "glsa_" + r(B62, 32) + "_" + r(HEX, 8), "GRAFANA_TOKEN", "token", "Grafana token",
        "Grafana", "AP", bearer=True, domain="grafana.acme.io"),
    Fam("linear", "api-key", lambda: "lin_api_" + r(B62, 40), "LINEAR_API_KEY", "api_key", "Linear key", "Linear", "AL", domain="api.linear.app"),
    Fam("notion", "integration-token", lambda: ("ntn_" + r(B62, 46)) if rng.random() < 0.6 else "secret_" + r(B62, 43), "NOTION_TOKEN",
        "notion_token", "Notion token", "Notion", "AAP", bearer=True, domain="api.notion.com"),
    Fam("airtable", "pat", lambda: "pat" + r(B62, 14) + "." + r(HEX, 64), "AIRTABLE_API_KEY", "api_key", "Airtable token", "Airtable", "AL",
        bearer=True, domain="api.airtable.com"),
    Fam("postman", "api-key", lambda: "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34), "POSTMAN_API_KEY", "api_key", "Postman key", "Postman", "AP",
        domain="api.getpostman.com"),
    Fam("dynatrace", "api-token", lambda: "dt0c01." + r(UPD, 24) + "." + r(UPD, 64), "DT_API_TOKEN", "api_token", "Dynatrace token",
        "Dynatrace", "AL", domain="abc12345.live.dynatrace.com"),
    Fam("figma", "pat", lambda: "figd_" + r(B64U, 40), "FIGMA_TOKEN", "figma_token", "Figma token", "Figma", "AP", domain="api.figma.com"),
    Fam("hubspot", "private-app-token", lambda: "pat-%s-%s" % (pick(["na1", "eu1"]), uuid4()), "HUBSPOT_ACCESS_TOKEN", "access_token",
        "HubSpot token", "HubSpot", "AL", bearer=True, domain="api.hubapi.com"),
    Fam("doppler", "personal-token", lambda: "dp.pt." + r(B62, 43), "DOPPLER_TOKEN", "token", "Doppler token", "Doppler", "AP", bearer=True,
        domain="api.doppler.com"),
    Fam("onepassword", "service-account-token", lambda: "ops_eyJ" + r(B64U, rng.randint(280, 340)), "OP_SERVICE_ACCOUNT_TOKEN", "token",
        "1Password service account token", "1Password", "AL"),
    Fam("age", "secret-key", lambda: "AGE-SECRET-KEY-1" + r(BECH.upper(), 58), "SOPS_AGE_KEY", "age_key", "age key", "age", "AP"),
    Fam("okta", "api-token", lambda: "00" + r(B64U, 40), "OKTA_API_TOKEN", "api_token", "Okta token", "Okta", "AL",
        companions=lambda: [("OKTA_ORG_URL", "https://acme.okta.com")], domain="acme.okta.com"),
    Fam("circleci", "pat", lambda: "CCIPAT_" + r(B62, 22) + "_" + r(HEX, 40), "CIRCLECI_TOKEN", "token", "CircleCI token", "CircleCI", "AP",
        domain="circleci.com"),
    Fam("contentful", "management-token", lambda: "CFPAT-" + r(B64U, 43), "CONTENTFUL_MANAGEMENT_TOKEN", "management_token",
        "Contentful token", "Contentful", "AL", bearer=True, domain="api.contentful.com"),
    Fam("mapbox", "secret-token", mapbox_sk, "MAPBOX_SECRET_TOKEN", "access_token", "Mapbox secret token", "Mapbox", "AP",
        domain="api.mapbox.com"),
    Fam("databricks", "pat", lambda: "dapi" + r(HEX, 32), "DATABRICKS_TOKEN", "token", "Databricks token", "Databricks", "AL", bearer=True,
        companions=lambda: [("DATABRICKS_HOST", "https://adb-%d.%d.azuredatabricks.net" % (rng.randint(10 ** 15, 10 ** 16), rng.randint(1, 19)))],
        domain="adb-1234567890123456.7.azuredatabricks.net"),
    Fam("asana", "pat", lambda: "2/%s/%s:%s" % (r(DI, 16), r(DI, 16), r(HEX, 32)), "ASANA_ACCESS_TOKEN", "access_token", "Asana token",
        "Asana", "AP", bearer=True, domain="app.asana.com"),
    Fam("algolia", "admin-api-key", lambda: r(HEX, 32), "ALGOLIA_ADMIN_API_KEY", "admin_api_key", "Algolia admin key", "Algolia", "AL",
        companions=lambda: [("ALGOLIA_APP_ID", r(UPD, 10))], domain="acme-dsn.algolia.net"),
    Fam("prefect", "api-key", lambda: "pnu_" + r(B62, 36), "PREFECT_API_KEY", "api_key", "Prefect key", "Prefect", "AP",
        domain="api.prefect.cloud"),
    Fam("firebase", "fcm-server-key", lambda: "AAAA" + r(B64U, 7) + ":APA91b" + r(B64U, 134), "FCM_SERVER_KEY", "server_key",
        "FCM server key", "Firebase", "AL", domain="fcm.googleapis.com"),
    Fam("cloudinary", "api-secret-url", cloudinary, "CLOUDINARY_URL", "cloudinary_url", "Cloudinary URL", "Cloudinary", "AP"),
    Fam("planetscale", "password", lambda: "pscale_pw_" + r(B64U, 43), "PLANETSCALE_PASSWORD", "password", "PlanetScale password",
        "PlanetScale", "AL", companions=lambda: [("PLANETSCALE_HOST", "aws.connect.psdb.cloud")]),
    # ---- databases (value is a URL / DSN; secret is the password)
    Fam("postgres", "url-password", lambda: url_pw(pick(["postgres", "postgresql"]), DBUSERS,
                                                   pick(["db.internal:5432", "10.0.4.12:5432", "pg-prod.cluster-c9x2.eu-west-1.rds.amazonaws.com:5432",
                                                         "localhost:5432"]), "/" + pick(DBNAMES) + pick(["", "?sslmode=require"])),
        "DATABASE_URL", "database_url", "database URL", "Postgres", "AALP", domain="pg.internal.acme.io"),
    Fam("mysql", "url-password", lambda: url_pw(pick(["mysql", "mysql+pymysql"]), DBUSERS, pick(["mysql.internal:3306", "127.0.0.1:3306"]),
                                                "/" + pick(DBNAMES)), "MYSQL_URL", "mysql_url", "MySQL URL", "MySQL", "AAL", domain="mysql.internal.acme.io"),
    Fam("mongodb", "srv-password", lambda: url_pw("mongodb+srv", DBUSERS, "cluster0.%s.mongodb.net" % r(LOD, 5),
                                                  "/%s?retryWrites=true&w=majority" % pick(DBNAMES)),
        "MONGODB_URI", "mongodb_uri", "MongoDB URI", "MongoDB", "AL", domain="cloud.mongodb.com"),
    Fam("redis", "url-password", lambda: url_pw(pick(["redis", "rediss"]), ["default", ""],
                                                pick(["redis-%d.c1.eu-west-1-2.ec2.cloud.redislabs.com:%d" % (rng.randint(10000, 19999), rng.randint(10000, 19999)),
                                                      "cache.internal:6380"]), "/0"),
        "REDIS_URL", "redis_url", "Redis URL", "Redis", "AAP", domain="cache.internal.acme.io"),
    Fam("rabbitmq", "amqp-password", lambda: url_pw(pick(["amqp", "amqps"]), ["guest_rw", "app", "celery"], pick(["rabbitmq:5672", "mq.internal:5671"]),
                                                    "/" + pick(["%2F", "prod", "celery"])), "CELERY_BROKER_URL", "broker_url", "broker URL",
        "RabbitMQ", "AL", domain="mq.internal.acme.io"),
    Fam("mssql", "connection-string-password", None, "ConnectionStrings__Default", "connection_string", "connection string", "SQL Server", "AP", domain="acme-sql.database.windows.net"),
    Fam("elasticsearch", "url-password", lambda: url_pw("https", ["elastic", "kibana_system"], pick(["es.internal:9200", "search.acme.io:443"]), ""),
        "ELASTICSEARCH_URL", "elasticsearch_url", "Elasticsearch URL", "Elasticsearch", "AL", domain="es.internal.acme.io:9200"),
    # ---- generic
    Fam("password", "db-password", lambda: password(), "DB_PASSWORD", "password", "database password", "Postgres", "AAAAPP", domain="pg.internal.acme.io"),
    Fam("jwt", "access-token", jwt_user, "ACCESS_TOKEN", "access_token", "access token", "Auth0", "AALP", bearer=True),
    Fam("django", "secret-key", lambda: (pick(["", "django-insecure-"]) + r(LOD + "!@#%^&*(-_=+)", 50)), "DJANGO_SECRET_KEY", "secret_key",
        "Django SECRET_KEY", "Django", "AL"),
    Fam("rails", "secret-key-base", lambda: r(HEX, 128), "SECRET_KEY_BASE", "secret_key_base", "Rails secret_key_base", "Rails", "AP"),
    Fam("generic", "api-key", lambda: r(B62, pick([32, 40, 48])), "PAYMENTS_API_KEY", "payments_api_key", "internal API key", "Acme", "AL",
        bearer=True, domain="payments.internal.acme.io"),
    Fam("generic", "webhook-secret", lambda: r(HEX, 64), "WEBHOOK_SIGNING_SECRET", "webhook_secret", "webhook signing secret", "Acme", "AP"),
    Fam("generic", "encryption-key", lambda: b64s(rb(32)), "APP_ENCRYPTION_KEY", "encryption_key", "encryption key", "Acme", "AL"),
    Fam("generic", "jwt-signing-secret", lambda: r(B64U, 64), "JWT_SECRET", "jwt_secret", "JWT signing secret", "Acme", "AP"),
]


def mssql_value():
    pw = password(symbols=rng.random() < 0.7)
    pw = pw.replace(";", "").replace("=", "")
    host = pick(["tcp:acme-sql.database.windows.net,1433", "sql01.corp.local", "(localdb)\\\\MSSQLLocalDB"])
    host = host.replace("\\\\", "-")
    v = "Server=%s;Initial Catalog=%s;User ID=%s;Password=%s;Encrypt=True;TrustServerCertificate=False;Connection Timeout=30;" % (
        host, pick(DBNAMES), pick(["sqladmin", "app_user", "sa"]), pw)
    return v, pw


for _f in FAMS:
    if _f.family == "mssql":
        _f.gen = mssql_value


# --------------------------------------------------------------------------
# generic agent-artefact contexts: ctx(f, value, secret) -> (text, secret)
# --------------------------------------------------------------------------

def env_lines(f, v, k_lo=4, k_hi=11, quote_style=None):
    pairs = env_pairs(FILLER_ENV, rng.randint(k_lo, k_hi))
    q = quote_style if quote_style is not None else pick(["", "", '"', "'"])
    if q and not safe_plain(v):
        q = "'" if "'" not in v else '"'
    sec = ["%s=%s%s%s" % (f.env, q, v, q)] + ["%s=%s" % c for c in f.comp()]
    lines = ["%s=%s" % p for p in pairs]
    i = rng.randint(0, len(lines))
    return lines[:i] + sec + lines[i:]


def c_cat_env(f, v, s):
    lines = env_lines(f, v)
    if rng.random() < 0.5:
        lines.insert(rng.randint(0, 2), "# %s" % pick(["local overrides - do not commit", "generated by ./scripts/bootstrap.sh",
                                                    "prod values (copied from 1Password)", "TODO move to vault"]))
    cmd = pick(["cat .env", "cat .env.production", "cat services/%s/.env" % proj(), "cat .env.local", "cat ~/%s/.env" % proj()])
    return frame(cmd, "\n".join(lines)), s


def c_env_sort(f, v, s):
    pairs = env_pairs(SYS_ENV, rng.randint(10, 16)) + env_pairs(FILLER_ENV, rng.randint(3, 7))
    pairs.append((f.env, v))
    pairs.extend(f.comp())
    pairs.sort(key=lambda p: p[0])
    cmd = pick(["env | sort", "printenv | sort", "docker exec %s-1 env | sort" % proj(), "kubectl exec deploy/%s -- env | sort" % proj()])
    return frame(cmd, "\n".join("%s=%s" % p for p in pairs)), s


def c_kubectl_b64(f, v, s):
    name = proj() + pick(["-secrets", "-env", "-credentials"])
    ns = pick(["prod", "staging", "default", "payments"])
    data = [(k, b64s(val)) for k, val in env_pairs(FILLER_ENV, rng.randint(1, 4))]
    enc = b64s(v)
    data.append((f.env, enc))
    data.sort()
    lines = ["apiVersion: v1", "data:"] + ["  %s: %s" % d for d in data] + [
        "kind: Secret", "metadata:", "  creationTimestamp: \"%s\"" % iso(), "  name: %s" % name, "  namespace: %s" % ns,
        "  resourceVersion: \"%d\"" % rng.randint(100000, 99999999), "  uid: %s" % uuid4(), "type: Opaque"]
    return frame("kubectl get secret %s -n %s -o yaml" % (name, ns), "\n".join(lines)), enc


def c_k8s_manifest(f, v, s):
    name = proj() + "-secrets"
    lines = ["apiVersion: v1", "kind: Secret", "metadata:", "  name: %s" % name, "  namespace: %s" % pick(["prod", "staging"]),
             "  labels:", "    app.kubernetes.io/name: %s" % proj(), "type: Opaque", "stringData:"]
    items = [(k, val) for k, val in env_pairs(FILLER_ENV, rng.randint(1, 3))] + [(f.env, v)]
    rng.shuffle(items)
    lines += ["  %s: %s" % (k, yq(val)) for k, val in items]
    return frame("cat k8s/%s/secret.yaml" % pick(["base", "overlays/prod", "overlays/staging"]), "\n".join(lines)), s


def c_docker_inspect(f, v, s):
    env = ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8"]
    env += ["%s=%s" % p for p in env_pairs(FILLER_ENV, rng.randint(2, 5))]
    env.insert(rng.randint(1, len(env)), "%s=%s" % (f.env, v))
    cid = r(HEX, 64)
    p = proj()
    obj = [{
        "Id": cid,
        "Created": iso(frac=True),
        "Path": pick(["/docker-entrypoint.sh", "gunicorn", "node"]),
        "Args": pick([["server.js"], ["app.wsgi:application", "-b", "0.0.0.0:8000"], []]),
        "State": {"Status": "running", "Running": True, "Pid": rng.randint(1000, 60000), "ExitCode": 0},
        "Image": "sha256:" + r(HEX, 64),
        "Name": "/%s-1" % p,
        "Config": {
            "Hostname": cid[:12],
            "Env": env,
            "Image": "ghcr.io/acme/%s:%s" % (p, semver()),
            "WorkingDir": "/app",
            "Labels": {"com.docker.compose.project": p, "org.opencontainers.image.revision": r(HEX, 40)},
        },
    }]
    txt = json.dumps(obj, indent=4)
    if rng.random() < 0.4:
        txt = "\n".join(txt.split("\n")[:rng.randint(28, 34)]) + "\n        ..."
        if s not in txt:
            txt = json.dumps(obj, indent=4)
    return frame("docker inspect %s-1" % p, txt), s


def c_terraform_lambda(f, v, s):
    name = proj().replace("-", "_")
    ac = acct()
    pad = max(len(f.env), 9) + 2
    vars_ = [("LOG_LEVEL", "info"), ("STAGE", pick(["prod", "staging"])), (f.env, v)]
    rng.shuffle(vars_)
    vlines = ["            %s = %s" % (('"%s"' % k).ljust(pad), json.dumps(val)) for k, val in vars_]
    out = """# module.%s.aws_lambda_function.handler:
resource "aws_lambda_function" "handler" {
    architectures                  = [
        "arm64",
    ]
    arn                            = "arn:aws:lambda:%s:%s:function:%s"
    function_name                  = "%s"
    handler                        = "app.handler"
    memory_size                    = %d
    role                           = "arn:aws:iam::%s:role/%s-exec"
    runtime                        = "python3.12"
    source_code_hash               = "%s"
    timeout                        = 30

    environment {
        variables = {
%s
        }
    }

    tracing_config {
        mode = "PassThrough"
    }
}""" % (name, pick(REGIONS), ac, name, name, pick([256, 512, 1024]), ac, name, b64s(rb(32)), "\n".join(vlines))
    return frame("terraform show", out), s


def c_terraform_state(f, v, s):
    p = proj()
    res = {
        "mode": "managed", "type": "github_actions_secret", "name": f.key,
        "provider": "provider[\"registry.terraform.io/integrations/github\"]",
        "instances": [{"schema_version": 0, "attributes": {
            "created_at": iso(), "encrypted_value": None, "id": "%s:%s" % (p, f.env),
            "plaintext_value": v, "repository": p, "secret_name": f.env, "updated_at": iso()},
            "sensitive_attributes": [[{"type": "get_attr", "value": "plaintext_value"}]]}],
    }
    out = json.dumps(res, indent=2)
    return frame("terraform state pull | jq '.resources[] | select(.name == \"%s\")'" % f.key, out), s


def c_git_diff(f, v, s):
    style = rng.randrange(4)
    idx = "index %s..%s 100644" % (sha7(), sha7())
    n = rng.randint(5, 80)
    if style == 0:
        path = pick(["config/settings.py", "app/settings/production.py", "src/%s/config.py" % proj().replace("-", "_")])
        body = [" import os", " ", " DEBUG = False", ' ALLOWED_HOSTS = ["%s"]' % pick(HOSTS),
                '-%s = os.environ.get("%s", "")' % (f.env, f.env), '+%s = "%s"' % (f.env, v), ' TIME_ZONE = "UTC"']
        hdr = "@@ -%d,6 +%d,6 @@ from pathlib import Path" % (n, n)
    elif style == 1:
        path = pick([".env.production", "deploy/.env", ".env"])
        body = [" %s=%s" % p for p in env_pairs(FILLER_ENV, 3)]
        body.insert(2, "+%s=%s" % (f.env, v))
        hdr = "@@ -%d,3 +%d,4 @@" % (n, n)
    elif style == 2:
        path = pick(["config/production.yaml", "helm/values-prod.yaml", "config.yml"])
        body = [" %s:" % pick(["integrations", "providers", "clients"]), "   %s:" % f.vendor.lower().replace(" ", "_"),
                "     base_url: https://%s" % f.domain, "-    %s: ${%s}" % (f.key, f.env), "+    %s: %s" % (f.key, yq(v)),
                "     timeout_seconds: 10"]
        hdr = "@@ -%d,6 +%d,6 @@" % (n, n)
    else:
        path = pick(["src/config.ts", "src/lib/client.ts", "web/src/env.ts"])
        body = [" import { z } from \"zod\";", " ", "-export const %s = process.env.%s!;" % (camel(f.key), f.env),
                "+export const %s = \"%s\";" % (camel(f.key), v), " export const TIMEOUT_MS = 10_000;"]
        hdr = "@@ -%d,5 +%d,5 @@" % (n, n)
    out = "\n".join(["diff --git a/%s b/%s" % (path, path), idx, "--- a/%s" % path, "+++ b/%s" % path, hdr] + body)
    cmd = pick(["git diff", "git diff --cached", "git show HEAD", "git diff HEAD~1"])
    if cmd == "git show HEAD":
        u = user()
        out = "commit %s\nAuthor: %s <%s@acme.io>\nDate:   Mon Dec 7 %02d:%02d:11 2026 +0100\n\n    %s\n\n%s" % (
            r(HEX, 40), u.title(), u, rng.randint(8, 19), rng.randint(0, 59),
            pick(["fix prod config", "wip: hardcode creds for debugging", "temp: unblock deploy"]), out)
    return frame(cmd, out), s


def c_pytest(f, v, s):
    style = rng.randrange(3)
    mod = pick(["test_client", "test_billing", "test_sync", "test_webhooks"])
    head = ["============================= test session starts ==============================",
            "platform linux -- Python 3.12.%d, pytest-8.3.%d, pluggy-1.5.0" % (rng.randint(1, 8), rng.randint(1, 4)),
            "rootdir: /workspace/%s" % proj(), "configfile: pyproject.toml", "collected %d items" % rng.randint(5, 60), "",
            "tests/%s.py ..F" % mod, "", "=================================== FAILURES ==================================="]
    if style == 0:
        body = ["________________________________ test_fetch_retries ________________________________", "",
                "settings = Settings(env='staging', base_url='https://%s', %s='%s', timeout=30, retries=3)" % (f.domain, f.key, v), "",
                "    def test_fetch_retries(settings):", "        client = Client(settings)",
                ">       assert client.fetch(limit=5).status_code == 200", "E       AssertionError: assert 401 == 200",
                "E        +  where 401 = <Response [401]>.status_code", "", "tests/%s.py:%d: AssertionError" % (mod, rng.randint(10, 200))]
        tail = "FAILED tests/%s.py::test_fetch_retries - AssertionError: assert 401 == 200" % mod
    elif style == 1:
        body = ["________________________________ test_settings_load ________________________________", "",
                "    def test_settings_load():", ">       s = Settings()", "", "tests/%s.py:%d: " % (mod, rng.randint(10, 90)),
                "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _",
                "E   pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings",
                "E   %s" % f.key,
                "E     String should have at most 32 characters [type=string_too_long, input_value='%s', input_type=str]" % v,
                "E       For further information visit https://errors.pydantic.dev/2.9/v/string_too_long"]
        tail = "FAILED tests/%s.py::test_settings_load - pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings" % mod
    else:
        body = ["________________________________ test_sync_job ________________________________", "",
                "client     = <acme.client.Client object at 0x7f%s>" % r(HEX, 10),
                "config     = {'base_url': 'https://%s', '%s': '%s', 'region': '%s'}" % (f.domain, f.key, v, pick(REGIONS)),
                "resp       = <Response [403]>", "",
                "    def test_sync_job(client, config):", "        resp = client.sync(config)",
                ">       resp.raise_for_status()", "E       requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: https://%s/v1/sync" % f.domain,
                "", "tests/%s.py:%d: HTTPError" % (mod, rng.randint(10, 200))]
        tail = "FAILED tests/%s.py::test_sync_job - requests.exceptions.HTTPError: 403 Client Error" % mod
    foot = ["=========================== short test summary info ============================", tail,
            "========================= 1 failed, 2 passed in %.2fs ==========================" % (rng.random() * 3 + 0.2)]
    cmd = pick(["pytest tests/%s.py -x" % mod, "python -m pytest -l tests/%s.py" % mod, "uv run pytest -x -q"])
    return frame(cmd, "\n".join(head + body + foot)), s


def c_tool_json(f, v, s):
    style = rng.randrange(3)
    if style == 0:
        inner = "\n".join(env_lines(f, v, 3, 7, quote_style='"'))
    elif style == 1:
        cfg = {"name": proj(), "version": semver(), f.vendor.lower().replace(" ", ""): {camel(f.key): v, "baseUrl": "https://" + f.domain},
               "logLevel": "info"}
        inner = json.dumps(cfg, indent=2)
    else:
        inner = "%s:\n  %s: \"%s\"\n  endpoint: https://%s\n" % (f.vendor.lower().replace(" ", "_"), f.key, v, f.domain)
    if rng.random() < 0.5:
        obj = {"type": "tool_result", "tool_use_id": "toolu_01" + r(B62, 22), "content": [{"type": "text", "text": inner}],
               "is_error": False}
    else:
        obj = {"role": "tool", "tool_call_id": "call_" + r(B62, 24), "name": pick(["read_file", "bash", "shell"]), "content": inner}
    txt = json.dumps(obj)
    if rng.random() < 0.5:
        txt = json.dumps({"type": "user", "message": {"role": "user", "content": [obj]}, "uuid": uuid4(), "timestamp": iso(frac=True)})
    return txt, s


def c_heredoc(f, v, s):
    style = rng.randrange(3)
    if style == 0:
        path = "~/.config/%s/credentials.toml" % proj()
        body = '[default]\nendpoint = "https://%s"\n%s = "%s"\nregion = "%s"' % (f.domain, f.key, v, pick(REGIONS))
    elif style == 1:
        path = pick([".env", "deploy/.env.prod", "/etc/%s/env" % proj()])
        body = "\n".join(env_lines(f, v, 2, 6))
    else:
        path = "config/%s.yaml" % pick(["local", "production", "secrets"])
        body = "%s:\n  %s: %s\n  timeout: 10\n" % (f.vendor.lower().replace(" ", "_"), f.key, yq(v))
        body = body.rstrip("\n")
    q = pick(["'EOF'", "EOF", "'CONF'"])
    end = q.strip("'")
    txt = "$ mkdir -p $(dirname %s)\n$ cat > %s <<%s\n%s\n%s\n$ chmod 600 %s" % (path, path, q, body, end, path)
    if rng.random() < 0.5:
        txt = "\u25cf Bash(cat > %s <<%s\n%s\n%s)\n  \u23bf  (no output)" % (path, q, body, end)
    return txt, s


def c_md_fence(f, v, s):
    lang = rng.randrange(3)
    intro = pick(["I found the problem: the client was reading the wrong variable. Here's the corrected config:",
                  "Done. I wrote the credentials into the config so the integration test can run locally:",
                  "The 401 comes from the missing key. Updated `config/%s.yaml`:" % pick(["local", "dev"]),
                  "Here is the working setup I used:"])
    if lang == 0:
        code = "```yaml\n%s:\n  base_url: https://%s\n  %s: %s\n  retries: 3\n```" % (f.vendor.lower().replace(" ", "_"), f.domain, f.key, yq(v))
    elif lang == 1:
        code = "```bash\nexport %s=%s\n%s\n```" % (f.env, shq(v), pick(["npm run dev", "python -m app.worker", "make run"]))
    else:
        code = "```python\nclient = %sClient(\n    %s=\"%s\",\n    timeout=10,\n)\n```" % (f.vendor.replace(" ", "").replace("&", ""), f.key, v)
    outro = pick(["After that, restart the worker with `systemctl restart worker`.",
                  "Let me know if you want me to move this into a secret manager instead.",
                  "All 14 tests pass now.", ""])
    return ("%s\n\n%s\n\n%s" % (intro, code, outro)).rstrip(), s


def c_ci_log(f, v, s):
    style = rng.randrange(3)
    ver = semver()
    if style == 0:
        lines = ["##[group]Run ./scripts/deploy.sh %s" % pick(["prod", "staging"]), "./scripts/deploy.sh", "shell: /usr/bin/bash -e {0}",
                 "env:", "  NODE_VERSION: 20", "  %s: ***" % pick(["REGISTRY", "DEPLOY_KEY"]), "##[endgroup]"]
        if f.bearer:
            lines.append("+ curl -fsS -X POST -H 'Authorization: Bearer %s' https://%s/v1/deployments" % (v, f.domain))
        else:
            lines.append("+ export %s=%s" % (f.env, v))
        lines += ["+ echo 'deploying %s'" % ver, "deploying %s" % ver,
                  "##[error]Process completed with exit code %d." % pick([1, 22, 127])]
        out = "\n".join(t + " " + ln for t, ln in zip(ts_series(len(lines)), lines))
        cmd = "gh run view %d --log-failed" % rng.randint(10 ** 9, 10 ** 10)
    elif style == 1:
        out = "\n".join(["Running with gitlab-runner 17.%d.0 (%s)" % (rng.randint(0, 6), sha7()),
                         "  on docker-autoscaler %s, system ID: s_%s" % (r(LOD, 8), r(HEX, 12)),
                         "Preparing the \"docker\" executor", "Using docker image node:20-alpine ...",
                         "$ echo \"debug: %s=$%s\"" % (f.env, f.env), "debug: %s=%s" % (f.env, v),
                         "$ npm ci", "added %d packages in %ds" % (rng.randint(200, 1500), rng.randint(5, 60)),
                         "ERROR: Job failed: exit code 1"])
        cmd = "glab ci trace %d" % rng.randint(10 ** 6, 10 ** 7)
    else:
        out = "\n".join(["[Pipeline] stage", "[Pipeline] { (Deploy)", "[Pipeline] sh",
                         "+ ./deploy.sh --env prod --%s %s" % (f.key.replace("_", "-"), v),
                         "Deploying %s to prod..." % proj(), "error: upstream returned 403", "[Pipeline] }",
                         "[Pipeline] // stage", "ERROR: script returned exit code 1", "Finished: FAILURE"])
        cmd = "curl -s $JENKINS_URL/job/deploy/lastBuild/consoleText"
    return frame(cmd, out), s


def c_compose(f, v, s):
    envs = ["      - %s=%s" % p for p in env_pairs(FILLER_ENV, rng.randint(2, 4))]
    envs.insert(rng.randint(0, len(envs)), "      - %s=%s" % (f.env, v))
    p = proj()
    out = "\n".join(["services:", "  %s:" % p, "    image: ghcr.io/acme/%s:%s" % (p, semver()),
                     "    restart: unless-stopped", "    ports:", "      - \"8080:8080\"", "    environment:"] + envs +
                    ["    depends_on:", "      - db", "  db:", "    image: postgres:16", "    volumes:", "      - pgdata:/var/lib/postgresql/data",
                     "volumes:", "  pgdata: {}"])
    return frame(pick(["cat docker-compose.yml", "cat compose.yaml", "docker compose config"]), out), s


def c_python_repl(f, v, s):
    if rng.random() < 0.5:
        out = ">>> import os\n>>> os.environ[\"%s\"]\n'%s'\n>>> len(_)\n%d\n>>> " % (f.env, v, len(v))
    else:
        out = ">>> from app.config import settings\n>>> settings.%s\n'%s'\n>>> settings.base_url\n'https://%s'\n>>> " % (f.key, v, f.domain)
    return pick(["", "Python 3.12.7 (main, Oct  1 2026, 08:12:44) [GCC 12.2.0] on linux\nType \"help\" for more information.\n"]) + out, s


def c_grep(f, v, s):
    lines = ["./src/%s/config.py:%d:%s = os.getenv(\"%s\")" % (proj().replace("-", "_"), rng.randint(3, 40), f.env, f.env),
             "./deploy/values-prod.yaml:%d:    %s: \"%s\"" % (rng.randint(3, 90), f.env, v),
             "./README.md:%d:Set `%s` before running `make deploy`." % (rng.randint(3, 90), f.env)]
    rng.shuffle(lines)
    return frame("grep -rn %s . --exclude-dir=node_modules" % f.env, "\n".join(lines)), s


def c_printenv(f, v, s):
    return frame("printenv %s" % f.env, v).rstrip(), s


def c_systemd(f, v, s):
    p = proj()
    out = "\n".join(["# /etc/systemd/system/%s.service" % p, "[Unit]", "Description=%s service" % p, "After=network-online.target", "",
                     "[Service]", "User=%s" % p, "WorkingDirectory=/opt/%s" % p, "Environment=LOG_LEVEL=info",
                     "Environment=\"%s=%s\"" % (f.env, v), "ExecStart=/opt/%s/bin/server --port 8080" % p, "Restart=on-failure", "",
                     "[Install]", "WantedBy=multi-user.target"])
    return frame("systemctl cat %s" % p, out), s


def c_helm(f, v, s):
    out = "\n".join(["USER-SUPPLIED VALUES:", "env:", "  LOG_LEVEL: info", "  %s: %s" % (f.env, yq(v)), "image:",
                     "  repository: ghcr.io/acme/%s" % proj(), "  tag: %s" % semver(), "ingress:", "  enabled: true",
                     "  hosts:", "  - %s" % pick(HOSTS), "replicaCount: %d" % rng.randint(1, 6)])
    return frame("helm get values %s -n %s" % (proj(), pick(["prod", "staging"])), out), s


def c_gha_workflow(f, v, s):
    out = "\n".join(["name: deploy", "on:", "  push:", "    branches: [main]", "jobs:", "  deploy:", "    runs-on: ubuntu-latest",
                     "    env:", "      NODE_VERSION: 20", "      %s: %s" % (f.env, yq(v)), "    steps:", "      - uses: actions/checkout@v4",
                     "      - run: npm ci && npm run deploy"])
    return frame("cat .github/workflows/deploy.yml", out), s


def c_read_numbered(f, v, s):
    lines = env_lines(f, v, 4, 12)
    start = 1
    arrow = rng.random() < 0.5
    body = "\n".join(("%6d\u2192%s" if arrow else "%6d\t%s") % (start + i, ln) for i, ln in enumerate(lines))
    return "\u25cf Read(%s)\n%s" % (pick([".env", "deploy/prod.env", "services/api/.env.local"]), body), s


AGENT_CTX = [
    ("agent/cat-env", c_cat_env), ("agent/env-sort", c_env_sort), ("agent/kubectl-get-secret-b64", c_kubectl_b64),
    ("agent/k8s-manifest", c_k8s_manifest), ("agent/docker-inspect", c_docker_inspect), ("agent/terraform-show", c_terraform_lambda),
    ("agent/terraform-state", c_terraform_state), ("agent/git-diff", c_git_diff), ("agent/pytest-traceback", c_pytest),
    ("agent/tool-result-json", c_tool_json), ("agent/heredoc", c_heredoc), ("agent/md-fence", c_md_fence), ("agent/ci-log", c_ci_log),
    ("agent/docker-compose", c_compose), ("agent/python-repl", c_python_repl), ("agent/grep", c_grep), ("agent/printenv", c_printenv),
    ("agent/systemd-unit", c_systemd), ("agent/helm-values", c_helm), ("agent/gha-workflow", c_gha_workflow),
    ("agent/read-numbered", c_read_numbered),
]


# --------------------------------------------------------------------------
# human-language prose around the secret
# --------------------------------------------------------------------------

LANG_TOKEN = {
    "en": ["hey, here's the {vendor} key you asked for: {s} \u2014 it's the prod one, so please don't paste it anywhere public",
           "Can you check why the deploy fails? I set {env} to {s} but the API still answers 401.",
           "{vendor} token for the staging workspace is {s}\nrotate it after the demo on friday"],
    "de": ["Hier ist mein {vendor}-Token: {s}. Bitte nicht ins Repo committen!",
           "Kannst du pr\u00fcfen, warum der Deploy fehlschl\u00e4gt? Der API-Schl\u00fcssel lautet \u201e{s}\u201c und ist eigentlich noch g\u00fcltig.",
           "Ich habe {env} auf {s} gesetzt, trotzdem kommt 403 zur\u00fcck."],
    "es": ["Este es mi token de {vendor}: {s} \u00bfpuedes configurarlo en el pipeline de CI?",
           "Us\u00e9 la clave \u00ab{s}\u00bb pero la API devuelve 401. \u00bfQu\u00e9 estoy haciendo mal?",
           "Te paso la API key de {vendor} para producci\u00f3n: {s}. No la subas al repositorio, porfa."],
    "pt": ["Segue a chave da API do {vendor}: {s}. Pode colocar no .env do projeto?",
           "Meu token \u00e9 {s} e mesmo assim o {vendor} retorna \"unauthorized\".",
           "Configurei a vari\u00e1vel {env}={s} no servidor, mas o worker n\u00e3o inicia."],
    "fr": ["Voici ma cl\u00e9 d'API {vendor} : {s} \u2014 peux-tu l'ajouter aux secrets du d\u00e9p\u00f4t ?",
           "J'ai mis le jeton \u00ab {s} \u00bb dans la config, mais j'ai toujours une erreur 401.",
           "Le token {vendor} de prod, c'est {s}. Ne le partage pas, s'il te pla\u00eet."],
    "it": ["Ecco il token di {vendor}: {s}. Mettilo nelle variabili d'ambiente, per favore.",
           "Ho impostato {env} a {s} ma la richiesta fallisce con 403.",
           "la chiave API \u00e8 \"{s}\", puoi verificare se \u00e8 ancora valida?"],
    "nl": ["Hier is mijn {vendor} API-sleutel: {s}. Kun je die in de pipeline zetten?",
           "Ik krijg steeds een 401, terwijl het token {s} gewoon klopt.",
           "Zet {env} op {s} en probeer de build opnieuw."],
    "pl": ["M\u00f3j token {vendor} to {s}, skonfiguruj go prosz\u0119 w CI.",
           "Ustawi\u0142em {env}={s}, ale dalej dostaj\u0119 b\u0142\u0105d 401.",
           "Klucz API do \u015brodowiska produkcyjnego: {s} (nie wrzucaj go do repo)."],
    "ru": ["\u043c\u043e\u0439 \u0442\u043e\u043a\u0435\u043d: {s}",
           "\u0412\u043e\u0442 \u043a\u043b\u044e\u0447 API {vendor}: {s} \u2014 \u043d\u0435 \u043a\u043e\u043c\u043c\u0438\u0442\u044c \u0435\u0433\u043e, \u043f\u043e\u0436\u0430\u043b\u0443\u0439\u0441\u0442\u0430.",
           "\u041f\u043e\u0447\u0435\u043c\u0443 \u0437\u0430\u043f\u0440\u043e\u0441 \u043f\u0430\u0434\u0430\u0435\u0442 \u0441 401? \u042f \u043f\u0435\u0440\u0435\u0434\u0430\u044e \u0442\u043e\u043a\u0435\u043d {s} \u0432 \u0437\u0430\u0433\u043e\u043b\u043e\u0432\u043a\u0435."],
    "tr": ["{vendor} API anahtar\u0131m \u015fu: {s}. Bunu .env dosyas\u0131na ekler misin?",
           "{env} de\u011fi\u015fkenini {s} olarak ayarlad\u0131m ama h\u00e2l\u00e2 401 hatas\u0131 al\u0131yorum.",
           "Token'\u0131m \"{s}\", neden \u00e7al\u0131\u015fm\u0131yor?"],
    "ja": ["{vendor}\u306eAPI\u30ad\u30fc\u306f {s} \u3067\u3059\u3002.env\u306b\u8ffd\u52a0\u3057\u3066\u304f\u3060\u3055\u3044\u3002",
           "\u3053\u306e\u30c8\u30fc\u30af\u30f3\u300c{s}\u300d\u3092\u4f7f\u3063\u3066\u30c7\u30d7\u30ed\u30a4\u3057\u3066\u304f\u3060\u3055\u3044\u3002",
           "{env}\u306b{s}\u3092\u8a2d\u5b9a\u3057\u305f\u306e\u306b401\u304c\u8fd4\u3063\u3066\u304d\u307e\u3059\u3002"],
    "zh": ["\u6211\u7684{vendor}\u4ee4\u724c\u662f {s}\uff0c\u8bf7\u5e2e\u6211\u914d\u7f6e\u5230 CI \u91cc\u3002",
           "\u7528\u8fd9\u4e2a API \u5bc6\u94a5\uff1a{s}\u3002",
           "\u6211\u5df2\u7ecf\u628a {env} \u8bbe\u7f6e\u6210 {s} \u4e86\uff0c\u4f46\u662f\u63a5\u53e3\u8fd8\u662f\u8fd4\u56de 401\uff0c\u5e2e\u6211\u770b\u770b\uff1f"],
    "ko": ["\uc81c {vendor} \ud1a0\ud070\uc740 {s} \uc785\ub2c8\ub2e4. CI\uc5d0 \uc124\uc815\ud574 \uc8fc\uc138\uc694.",
           "API \ud0a4: {s}\n\uc774\uac78\ub85c \ub2e4\uc2dc \ud14c\uc2a4\ud2b8\ud574 \uc904 \uc218 \uc788\uc5b4\uc694?",
           "{env}\ub97c {s}\ub85c \uc124\uc815\ud588\ub294\ub370\ub3c4 401 \uc5d0\ub7ec\uac00 \ub098\uc694."],
    "hi": ["\u092e\u0947\u0930\u093e {vendor} API key \u092f\u0939 \u0939\u0948: {s} \u2014 \u0907\u0938\u0947 .env \u092e\u0947\u0902 \u0921\u093e\u0932 \u0926\u094b\u0964",
           "\u092e\u0948\u0902\u0928\u0947 {env} \u0915\u094b {s} \u092a\u0930 \u0938\u0947\u091f \u0915\u093f\u092f\u093e \u0939\u0948, \u092b\u093f\u0930 \u092d\u0940 401 error \u0906 \u0930\u0939\u093e \u0939\u0948\u0964",
           "\u091f\u094b\u0915\u0928 \"{s}\" \u0939\u0948, \u0915\u0943\u092a\u092f\u093e \u0907\u0938\u0947 \u0915\u093f\u0938\u0940 \u0915\u0947 \u0938\u093e\u0925 \u0936\u0947\u092f\u0930 \u092e\u0924 \u0915\u0930\u0928\u093e\u0964"],
    "ar": ["\u0647\u0630\u0627 \u0647\u0648 \u0645\u0641\u062a\u0627\u062d {vendor} \u0627\u0644\u062e\u0627\u0635 \u0628\u064a: {s} \u0645\u0646 \u0641\u0636\u0644\u0643 \u0623\u0636\u0641\u0647 \u0625\u0644\u0649 \u0645\u0644\u0641 .env",
           "\u0642\u0645\u062a \u0628\u062a\u0639\u064a\u064a\u0646 {env} \u0625\u0644\u0649 {s} \u0644\u0643\u0646 \u0645\u0627 \u0632\u0644\u062a \u0623\u062d\u0635\u0644 \u0639\u0644\u0649 \u0627\u0644\u062e\u0637\u0623 401.",
           "\u0627\u0644\u0631\u0645\u0632 \u0627\u0644\u0645\u0645\u064a\u0632 \u0647\u0648 \u00ab{s}\u00bb\u060c \u0644\u0627 \u062a\u0634\u0627\u0631\u0643\u0647 \u0645\u0639 \u0623\u062d\u062f."],
}

LANG_PASSWORD = {
    "en": ["the db password is {s}, user is {user}", "Password for the staging box: {s}\n(same as last week, I didn't rotate it yet)"],
    "de": ["Das Passwort f\u00fcr die Staging-Datenbank ist {s} (Benutzer: {user}).", "Passwort: {s}"],
    "es": ["la contrase\u00f1a de la base es {s} y el usuario es {user}", "Contrase\u00f1a del servidor de staging: {s}"],
    "pt": ["a senha do banco de produ\u00e7\u00e3o \u00e9 {s}, n\u00e3o compartilhe", "Usu\u00e1rio {user}, senha {s}."],
    "fr": ["Le mot de passe de la base est \u00ab {s} \u00bb (utilisateur {user}).", "mdp de la VM : {s}"],
    "it": ["la password del database \u00e8 {s}, utente {user}", "Password dell'ambiente di test: {s}"],
    "nl": ["Het wachtwoord van de database is {s}.", "gebruiker {user}, wachtwoord {s}"],
    "pl": ["Has\u0142o do bazy danych: {s}", "login {user}, has\u0142o {s} \u2014 zmie\u0144 je po wdro\u017ceniu"],
    "ru": ["\u043f\u0430\u0440\u043e\u043b\u044c \u043e\u0442 \u0431\u0430\u0437\u044b {s}, \u043b\u043e\u0433\u0438\u043d {user}",
           "\u041f\u0430\u0440\u043e\u043b\u044c \u043e\u0442 \u0441\u0435\u0440\u0432\u0435\u0440\u0430: {s}"],
    "tr": ["Veritaban\u0131 \u015fifresi: {s} \u2014 kullan\u0131c\u0131 ad\u0131 {user}", "Sunucu parolas\u0131 {s}, l\u00fctfen kimseyle payla\u015fma."],
    "ja": ["DB\u306e\u30d1\u30b9\u30ef\u30fc\u30c9\u306f{s}\u3067\u3059\u3002\u30e6\u30fc\u30b6\u30fc\u540d\u306f{user}\u3002",
           "\u30b9\u30c6\u30fc\u30b8\u30f3\u30b0\u306e\u30d1\u30b9\u30ef\u30fc\u30c9: {s}"],
    "zh": ["\u6570\u636e\u5e93\u5bc6\u7801\u662f\uff1a{s}\uff0c\u7528\u6237\u540d {user}\u3002", "\u670d\u52a1\u5668\u5bc6\u7801 {s} \u522b\u53d1\u5230\u7fa4\u91cc"],
    "ko": ["\ub370\uc774\ud130\ubca0\uc774\uc2a4 \ube44\ubc00\ubc88\ud638\ub294 {s} \uc774\uace0 \uc0ac\uc6a9\uc790\ub294 {user}\uc608\uc694.",
           "\uc11c\ubc84 \ube44\ubc88: {s}"],
    "hi": ["\u0921\u0947\u091f\u093e\u092c\u0947\u0938 \u0915\u093e \u092a\u093e\u0938\u0935\u0930\u094d\u0921 {s} \u0939\u0948, \u092f\u0942\u091c\u093c\u0930 {user}\u0964",
           "\u0938\u0930\u094d\u0935\u0930 \u0915\u093e password: {s}"],
    "ar": ["\u0643\u0644\u0645\u0629 \u0627\u0644\u0645\u0631\u0648\u0631 \u0644\u0642\u0627\u0639\u062f\u0629 \u0627\u0644\u0628\u064a\u0627\u0646\u0627\u062a \u0647\u064a {s} \u0648\u0627\u0633\u0645 \u0627\u0644\u0645\u0633\u062a\u062e\u062f\u0645 {user}",
           "\u0643\u0644\u0645\u0629 \u0633\u0631 \u0627\u0644\u062e\u0627\u062f\u0645: {s}"],
}
LANGS = ["en", "de", "es", "pt", "fr", "it", "nl", "pl", "ru", "tr", "ja", "zh", "ko", "hi", "ar"]

PASTED_LOGS = [
    "Traceback (most recent call last):\n  File \"/app/worker.py\", line {n}, in <module>\n    main()\n  File \"/app/worker.py\", line {m}, in main\n    client.ping()\nacme.errors.AuthenticationError: 401 Unauthorized",
    "HTTP/1.1 401 Unauthorized\ncontent-type: application/json\nx-request-id: {rid}\n\n{{\"error\":\"invalid_api_key\"}}",
    "Error: Request failed with status code 403\n    at createError (node_modules/axios/lib/core/createError.js:16:15)\n    at settle (node_modules/axios/lib/core/settle.js:17:12)",
]


def lang_text(lang, f, v, password_like):
    pool = LANG_PASSWORD[lang] if password_like else LANG_TOKEN[lang]
    t = pick(pool).format(s=v, vendor=f.vendor, env=f.env, user=pick(DBUSERS))
    if rng.random() < 0.35:
        log = pick(PASTED_LOGS).format(n=rng.randint(10, 99), m=rng.randint(100, 300), rid=uuid4())
        t = t + "\n\n```\n" + log + "\n```"
    if rng.random() < 0.25:
        t = pick(["> ", "User: ", "[%s] %s: " % (iso()[11:16], user())]) + t
    return t


# --------------------------------------------------------------------------
# placement / config / code contexts
# --------------------------------------------------------------------------

def c_place_start(f, v, s):
    t = pick(["{v}\n^ that's the new {label}, the old one was revoked this morning",
              "{v} <- use this one for staging",
              "{v}\n\nsorry, wrong window, please ignore that",
              "{v} is what `vault read` gave me for {env}, does it look right?"])
    return t.format(v=v, label=f.label, env=f.env), s


def c_place_end(f, v, s):
    t = pick(["ok here it is, {env}: {v}",
              "$ vault kv get -field={key} secret/prod/{proj}\n{v}",
              "$ op read op://Prod/{vendor}/credential\n{v}",
              "can you debug the webhook? the {label} is {v}"])
    return t.format(v=v, env=f.env, key=f.key, proj=proj(), vendor=f.vendor.replace(" ", "-"), label=f.label), s


def c_place_punct(f, v, s):
    pre, post = pick([("(", ")"), ("", "."), ("", ","), ("[", "]"), ("", ";"), ("", "!"), ("", "?"), ("<", ">"), ("", "..."), ("", ":")])
    t = pick(["I tried the {label} {a}{v}{b} but it fails",
              "The {label} was {a}{v}{b}",
              "new {label} {a}{v}{b}\nold one revoked"])
    return t.format(label=f.label, a=pre, b=post, v=v), s


def c_place_quoted(f, v, s):
    a, b = pick([('"', '"'), ("'", "'"), ("`", "`"), ("\u00ab", "\u00bb"), ("\u201e", "\u201c"), ("\u300c", "\u300d"),
                 ("\u201c", "\u201d"), ("\u2018", "\u2019"), ("**", "**")])
    t = pick(["set {key} to {a}{v}{b} and restart the worker",
              "{env}={a}{v}{b}",
              "the value in 1Password is {a}{v}{b}, copy it exactly"])
    return t.format(key=f.key, env=f.env, a=a, b=b, v=v), s


def c_place_query(f, v, s):
    enc = quote(v, safe="")
    encs = quote(s, safe="")
    param = pick(["dsn", "url"]) if "://" in v else pick(["api_key", "access_token", "token", "key", "auth"])
    style = rng.randrange(3)
    if style == 0:
        lines = []
        for _ in range(rng.randint(2, 5)):
            lines.append('%s - - [%s] "GET /healthz HTTP/1.1" 200 2 "-" "kube-probe/1.31"' % (ip10(), "07/Dec/2026:%02d:%02d:%02d +0000" % (
                rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59))))
        lines.insert(rng.randint(0, len(lines)), '%s - - [07/Dec/2026:%02d:%02d:%02d +0000] "GET /v1/export?%s=%s&format=csv&page=%d HTTP/1.1" 200 %d "-" "python-requests/2.32.3"' % (
            ip10(), rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), param, enc, rng.randint(1, 9), rng.randint(200, 90000)))
        t = frame("tail -n %d /var/log/nginx/access.log" % len(lines), "\n".join(lines))
    elif style == 1:
        t = 'curl -s "https://%s/v2/items?limit=50&%s=%s&sort=desc" | jq .' % (f.domain, param, enc)
    else:
        t = "Open this in the browser: https://%s/oauth/callback?state=%s&%s=%s" % (pick(HOSTS), r(B62, 16), param, enc)
    return t, encs


def c_urlencoded_form(f, v, s):
    enc = quote(v, safe="")
    encs = quote(s, safe="")
    body = "grant_type=client_credentials&client_id=%s&%s=%s&scope=read" % (r(LOD, 12), f.key, enc)
    t = "POST /oauth/token HTTP/1.1\nHost: %s\nContent-Type: application/x-www-form-urlencoded\nContent-Length: %d\n\n%s" % (
        f.domain, len(body), body)
    return t, encs


def c_yaml(f, v, s):
    t = "\n".join(["# config/%s.yaml" % pick(["production", "default", "local"]), "server:", "  port: 8080", "  workers: 4",
                   "%s:" % f.vendor.lower().replace(" ", "_"), "  base_url: https://%s" % f.domain, "  %s: %s" % (f.key, yq(v)),
                   "  timeout: 15s", "logging:", "  level: info"])
    return t, s


def c_toml(f, v, s):
    t = '[server]\nhost = "0.0.0.0"\nport = 8080\n\n[%s]\nendpoint = "https://%s"\n%s = "%s"\nmax_retries = 3\n' % (
        f.vendor.lower().replace(" ", "_").replace("&", ""), f.domain, f.key, v)
    return t, s


def c_ini(f, v, s):
    t = "[DEFAULT]\nlog_level = INFO\n\n[%s]\nurl = https://%s\n%s = %s\nverify_ssl = true\n" % (
        f.vendor.lower().replace(" ", "_").replace("&", ""), f.domain, f.key, v)
    return t, s


def c_json_cfg(f, v, s):
    cfg = {"$schema": "./config.schema.json", "env": pick(["production", "staging"]),
           "integrations": {f.vendor.lower().replace(" ", ""): {"enabled": True, camel(f.key): v}}, "featureFlags": {"newCheckout": False}}
    return json.dumps(cfg, indent=2, ensure_ascii=False), s


def c_properties(f, v, s):
    vend = f.vendor.lower().replace(" ", "").replace("&", "")
    t = "spring.application.name=%s\nserver.port=8080\n%s.base-url=https://%s\n%s.%s=%s\nmanagement.endpoints.web.exposure.include=health,info\n" % (
        proj(), vend, f.domain, vend, f.key.replace("_", "-"), v)
    return t, s


def c_xml(f, v, s):
    ve = v.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    se = s.replace("&", "&amp;").replace("<", "&lt;").replace('"', "&quot;")
    t = '<?xml version="1.0" encoding="utf-8"?>\n<configuration>\n  <appSettings>\n    <add key="Environment" value="Production" />\n    <add key="%s" value="%s" />\n    <add key="TimeoutSeconds" value="30" />\n  </appSettings>\n</configuration>' % (
        camel(f.key)[0].upper() + camel(f.key)[1:], ve)
    return t, se


def c_cli_flag(f, v, s):
    flag = f.key.replace("_", "-")
    tool = pick(["./bin/%s" % proj(), "acme-cli", "python manage.py sync_%s" % f.vendor.lower().replace(" ", "_").replace("&", ""), "npx %s" % proj()])
    if rng.random() < 0.5:
        t = "$ %s deploy --%s %s --region %s" % (tool, flag, shq(v), pick(REGIONS))
    else:
        t = "$ %s --%s=%s --verbose\nINFO  connecting to https://%s\nERROR 401 Unauthorized" % (tool, flag, shq(v), f.domain)
    return t, s


def c_code_python(f, v, s):
    t = "import %s\n\nclient = %s.Client(\n    %s=\"%s\",\n    timeout=30,\n)\nprint(client.ping())\n" % (
        f.vendor.lower().replace(" ", "_").replace("&", "").replace(".", ""), f.vendor.lower().replace(" ", "_").replace("&", "").replace(".", ""), f.key, v)
    return t, s


def c_code_js(f, v, s):
    t = "const client = new %sClient({\n  %s: '%s',\n  baseURL: 'https://%s',\n});\n\nawait client.ping();" % (
        f.vendor.replace(" ", "").replace("&", "").replace(".", ""), camel(f.key), v, f.domain)
    return t, s


def c_code_go(f, v, s):
    t = "func newClient() *Client {\n\treturn NewClient(Config{\n\t\tBaseURL: \"https://%s\",\n\t\t%s: \"%s\",\n\t})\n}" % (
        f.domain, camel(f.key)[0].upper() + camel(f.key)[1:], v)
    return t, s


def c_export(f, v, s):
    return "export %s=%s\n%s" % (f.env, shq(v), pick(["./run.sh", "npm start", "make integration-test", ""])), s


PLACE_CTX = [
    ("place/start", c_place_start), ("place/end", c_place_end), ("place/trailing-punct", c_place_punct),
    ("place/quoted", c_place_quoted), ("place/query", c_place_query), ("place/form-urlencoded", c_urlencoded_form),
    ("config/yaml", c_yaml), ("config/toml", c_toml), ("config/ini", c_ini), ("config/json", c_json_cfg),
    ("config/properties", c_properties), ("config/xml", c_xml), ("cli/flag", c_cli_flag), ("code/python", c_code_python),
    ("code/js", c_code_js), ("code/go", c_code_go), ("shell/export", c_export),
]


# --------------------------------------------------------------------------
# private keys (structurally plausible DER / OpenSSH / OpenPGP bodies)
# --------------------------------------------------------------------------

def wrap(b, n):
    return [b[i:i + n] for i in range(0, len(b), n)]


def der_len(n):
    if n < 0x80:
        return bytes([n])
    if n < 0x100:
        return b"\x81" + bytes([n])
    return b"\x82" + struct.pack(">H", n)


def rsa_pkcs1_der(bits=2048):
    mod = bytes([rng.randint(0xC0, 0xFF)]) + rb(bits // 8 - 1)
    parts = [b"\x02\x01\x00", b"\x02" + der_len(len(mod) + 1) + b"\x00" + mod, b"\x02\x03\x01\x00\x01"]
    # private exponent, primes, exponents, coefficient (random bytes of plausible size)
    for size in (bits // 8, bits // 16, bits // 16, bits // 16, bits // 16, bits // 16):
        x = bytes([rng.randint(0x01, 0x7F)]) + rb(size - 1 - rng.randint(0, 1))
        parts.append(b"\x02" + der_len(len(x)) + x)
    body = b"".join(parts)
    return b"\x30" + der_len(len(body)) + body


def pem(label, der, width=64):
    lines = wrap(base64.b64encode(der).decode(), width)
    return "-----BEGIN %s-----\n%s\n-----END %s-----" % (label, "\n".join(lines), label), lines[0]


def rsa_key(bits=2048):
    return pem("RSA PRIVATE KEY", rsa_pkcs1_der(bits))


def pkcs8_rsa_key():
    inner = rsa_pkcs1_der(2048)
    algo = bytes.fromhex("300d06092a864886f70d0101010500")
    body = b"\x02\x01\x00" + algo + b"\x04" + der_len(len(inner)) + inner
    return pem("PRIVATE KEY", b"\x30" + der_len(len(body)) + body)


def pkcs8_ed25519_key():
    return pem("PRIVATE KEY", bytes.fromhex("302e020100300506032b657004220420") + rb(32))


def ec_key():
    der = (bytes.fromhex("30770201010420") + rb(32) + bytes.fromhex("a00a06082a8648ce3d030107a144034200") + b"\x04" + rb(64))
    return pem("EC PRIVATE KEY", der)


def openssh_ed25519(comment):
    def sstr(b):
        return struct.pack(">I", len(b)) + b
    pk, seed, chk = rb(32), rb(32), rb(4)
    pub = sstr(b"ssh-ed25519") + sstr(pk)
    priv = chk + chk + sstr(b"ssh-ed25519") + sstr(pk) + sstr(seed + pk) + sstr(comment.encode())
    pad = 1
    while len(priv) % 8:
        priv += bytes([pad])
        pad += 1
    blob = b"openssh-key-v1\x00" + sstr(b"none") + sstr(b"none") + sstr(b"") + struct.pack(">I", 1) + sstr(pub) + sstr(priv)
    lines = wrap(base64.b64encode(blob).decode(), 70)
    txt = "-----BEGIN OPENSSH PRIVATE KEY-----\n%s\n-----END OPENSSH PRIVATE KEY-----" % "\n".join(lines)
    return txt, lines[3]


def pgp_private():
    data = b"\x95\x03\x98\x04" + struct.pack(">I", rng.randint(0x65000000, 0x69000000)) + b"\x01\x0c\x00" + rb(rng.randint(900, 1300))
    b = base64.b64encode(data).decode()
    lines = wrap(b, 64)
    crc = "=" + base64.b64encode(rb(3)).decode()
    txt = "-----BEGIN PGP PRIVATE KEY BLOCK-----\n\n%s\n%s\n-----END PGP PRIVATE KEY BLOCK-----" % ("\n".join(lines), crc)
    return txt, lines[0]


def any_key():
    k = rng.randrange(6)
    if k == 0:
        return "rsa", rsa_key(pick([2048, 2048, 4096]))
    if k == 1:
        return "ec", ec_key()
    if k == 2:
        return "openssh-ed25519", openssh_ed25519("%s@%s" % (user(), proj()))
    if k == 3:
        return "pkcs8-rsa", pkcs8_rsa_key()
    if k == 4:
        return "pkcs8-ed25519", pkcs8_ed25519_key()
    return "pgp", pgp_private()


# --------------------------------------------------------------------------
# family-specific contexts: each returns (family, kind, context, text, secret)
# --------------------------------------------------------------------------

SPECIFIC = []


def spec(fn):
    SPECIFIC.append(fn)
    return fn


def akia():
    return "AKIA" + r(B32, 16)


def aws_secret():
    return r(B64, 40)


@spec
def s_aws_credentials():
    out = []
    for which in ("secret", "id"):
        kid, sec = akia(), aws_secret()
        txt = "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\nregion = %s\n\n[%s]\nrole_arn = arn:aws:iam::%s:role/%s\nsource_profile = default" % (
            kid, sec, pick(REGIONS), pick(["prod", "staging", "audit"]), acct(), pick(["deploy", "ReadOnly", "admin"]))
        out.append(("aws", "secret-access-key" if which == "secret" else "access-key-id", "aws/credentials-file",
                    frame("cat ~/.aws/credentials", txt), sec if which == "secret" else kid))
    return out


@spec
def s_aws_sts():
    out = []
    for field in ("SecretAccessKey", "SessionToken"):
        kid = "ASIA" + r(B32, 16)
        sec = aws_secret()
        tok = "IQoJb3JpZ2luX2VjE" + r(B64, rng.randint(320, 400))
        obj = {"Credentials": {"AccessKeyId": kid, "SecretAccessKey": sec, "SessionToken": tok, "Expiration": iso()},
               "AssumedRoleUser": {"AssumedRoleId": "AROA%s:ci-%d" % (r(B32, 17), rng.randint(1000, 9999)),
                                   "Arn": "arn:aws:sts::%s:assumed-role/deploy/ci" % acct()}}
        txt = frame("aws sts assume-role --role-arn arn:aws:iam::%s:role/deploy --role-session-name ci" % acct(), json.dumps(obj, indent=4))
        out.append(("aws", "secret-access-key" if field == "SecretAccessKey" else "session-token", "agent/aws-sts-json", txt,
                    sec if field == "SecretAccessKey" else tok))
    kid = "ASIA" + r(B32, 16)
    txt = frame("env | grep -i aws", "AWS_ACCESS_KEY_ID=%s\nAWS_DEFAULT_REGION=%s\nAWS_SECRET_ACCESS_KEY=%s\nAWS_SESSION_TOKEN=%s" % (
        kid, pick(REGIONS), aws_secret(), "IQoJb3JpZ2luX2VjE" + r(B64, 330)))
    out.append(("aws", "temporary-access-key-id", "agent/env-grep", txt, kid))
    return out


@spec
def s_aws_configure_and_tool():
    sec = aws_secret()
    txt = "$ aws configure --profile ci\nAWS Access Key ID [None]: %s\nAWS Secret Access Key [None]: %s\nDefault region name [None]: %s\nDefault output format [None]: json" % (
        akia(), sec, pick(REGIONS))
    sec2 = aws_secret()
    inner = "[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (akia(), sec2)
    txt2 = json.dumps({"type": "tool_result", "tool_use_id": "toolu_01" + r(B62, 22), "content": inner})
    return [("aws", "secret-access-key", "aws/configure", txt, sec), ("aws", "secret-access-key", "agent/tool-result-json", txt2, sec2)]


@spec
def s_gcp_service_account():
    out = []
    for _ in range(2):
        keytxt, first = pkcs8_rsa_key()
        pid = "%s-%d" % (pick(["acme-prod", "segue-data", "billing-eu"]), rng.randint(100000, 999999))
        obj = {"type": "service_account", "project_id": pid, "private_key_id": r(HEX, 40), "private_key": keytxt + "\n",
               "client_email": "%s@%s.iam.gserviceaccount.com" % (pick(["ci-deployer", "bq-reader", "terraform"]), pid),
               "client_id": str(rng.randint(10 ** 20, 10 ** 21)), "auth_uri": "https://accounts.google.com/o/oauth2/auth",
               "token_uri": "https://oauth2.googleapis.com/token",
               "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs", "universe_domain": "googleapis.com"}
        txt = frame("cat %s" % pick(["sa.json", "credentials/gcp-key.json", "$GOOGLE_APPLICATION_CREDENTIALS"]), json.dumps(obj, indent=2))
        out.append(("gcp", "service-account-private-key", "agent/cat-service-account-json", txt, first))
    return out


@spec
def s_gcp_misc():
    out = []
    cs = "GOCSPX-" + r(B64U, 28)
    obj = {"installed": {"client_id": "%d-%s.apps.googleusercontent.com" % (rng.randint(10 ** 11, 10 ** 12), r(LOD, 32)),
                         "project_id": "acme-desktop", "auth_uri": "https://accounts.google.com/o/oauth2/auth",
                         "token_uri": "https://oauth2.googleapis.com/token", "client_secret": cs, "redirect_uris": ["http://localhost"]}}
    out.append(("gcp", "oauth-client-secret", "gcp/client-secret-json", frame("cat client_secret.json", json.dumps(obj)), cs))
    tok = "ya29." + r(B64U, 180)
    txt = "$ gcloud auth print-access-token\n%s\n$ curl -s -H \"Authorization: Bearer %s\" https://storage.googleapis.com/storage/v1/b?project=acme-prod" % (tok, tok)
    out.append(("gcp", "oauth-access-token", "gcp/print-access-token", txt, tok))
    k = "AIza" + r(B64U, 35)
    txt = '<script async src="https://maps.googleapis.com/maps/api/js?key=%s&callback=initMap&libraries=places"></script>' % k
    out.append(("gcp", "api-key", "html/script-src-query", txt, k))
    return out


@spec
def s_azure():
    out = []
    key = b64s(rb(64))
    cs = "DefaultEndpointsProtocol=https;AccountName=acme%s;AccountKey=%s;EndpointSuffix=core.windows.net" % (pick(["prod", "func", "logs"]), key)
    obj = {"IsEncrypted": False, "Values": {"AzureWebJobsStorage": cs, "FUNCTIONS_WORKER_RUNTIME": "python"}}
    out.append(("azure", "storage-account-key", "azure/local-settings-json", frame("cat local.settings.json", json.dumps(obj, indent=2)), key))
    key = b64s(rb(64))
    cs = "DefaultEndpointsProtocol=https;AccountName=acmedata;AccountKey=%s;EndpointSuffix=core.windows.net" % key
    out.append(("azure", "storage-account-key", "lang/es",
                "Hola, la cadena de conexi\u00f3n del storage es:\n%s\n\u00bfpor qu\u00e9 el SDK dice AuthenticationFailed?" % cs, key))
    for _ in range(2):
        sig = quote(b64s(rb(32)), safe="")
        url = "https://acme%s.blob.core.windows.net/%s/%s?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2026-12-31T23:59:59Z&st=2026-12-01T00:00:00Z&spr=https&sig=%s" % (
            pick(["backups", "exports"]), pick(["db", "reports"]), pick(["dump.sql.gz", "2026-11.csv"]), sig)
        txt = pick(["$ azcopy copy ./dump.sql.gz \"%s\"\nINFO: Scanning...\nJob %s has started" % (url, uuid4()),
                    "here's the SAS link, valid until new year: %s" % url])
        out.append(("azure", "sas-signature", "place/url-encoded", txt, sig))
    pw = azure_client_secret()
    obj = {"appId": uuid4(), "displayName": "gh-actions-%s" % proj(), "password": pw, "tenant": uuid4()}
    out.append(("azure", "client-secret", "agent/az-sp-create", frame("az ad sp create-for-rbac --name gh-actions --role contributor --scopes /subscriptions/%s" % uuid4(),
                                                                  "Creating 'contributor' role assignment under scope '/subscriptions/%s'\n%s" % (uuid4(), json.dumps(obj, indent=2))), pw))
    return out


@spec
def s_github():
    out = []
    t = "ghp_" + r(B62, 36)
    out.append(("github", "classic-pat", "git/credentials-file", frame("cat ~/.git-credentials", "https://%s:%s@github.com\nhttps://%s:%s@gitlab.com" % (
        user(), t, user(), "glpat-" + r(B64U, 20))), t))
    t, p = "ghs_" + r(B62, 36), proj()
    out.append(("github", "app-installation-token", "git/remote-v", frame("git remote -v", "origin\thttps://x-access-token:%s@github.com/acme/%s.git (fetch)\norigin\thttps://x-access-token:%s@github.com/acme/%s.git (push)" % (
        t, p, t, p)), t))
    t = "ghp_" + r(B62, 36)
    out.append(("github", "classic-pat", "http/authorization-token", "curl -s -H \"Authorization: token %s\" -H \"Accept: application/vnd.github+json\" https://api.github.com/repos/acme/%s/actions/runs?per_page=5" % (t, proj()), t))
    t = "gho_" + r(B62, 36)
    out.append(("github", "oauth-token", "agent/gh-auth-status", frame("gh auth status --show-token", "github.com\n  \u2713 Logged in to github.com account %s (keyring)\n  - Active account: true\n  - Git operations protocol: https\n  - Token: %s\n  - Token scopes: 'gist', 'read:org', 'repo', 'workflow'" % (user(), t)), t))
    t, u = "gho_" + r(B62, 36), user()
    out.append(("github", "oauth-token", "github/hosts-yml", frame("cat ~/.config/gh/hosts.yml", "github.com:\n    users:\n        %s:\n            oauth_token: %s\n    git_protocol: https\n    oauth_token: %s\n    user: %s" % (
        u, t, t, u)), t))
    t = "github_pat_11" + r(UPD, 20) + "_" + r(B62, 59)
    out.append(("github", "fine-grained-pat", "netrc", frame("cat ~/.netrc", "machine github.com\n  login %s\n  password %s\nmachine api.github.com\n  login %s\n  password %s" % (
        user(), t, user(), t)), t))
    return out


@spec
def s_gitlab_bitbucket_atlassian():
    out = []
    t = "glpat-" + r(B64U, 20)
    out.append(("gitlab", "pat", "http/private-token-header", 'curl --header "PRIVATE-TOKEN: %s" "https://gitlab.com/api/v4/projects/%d/pipelines?status=failed"' % (t, rng.randint(10 ** 6, 10 ** 8)), t))
    t = "glpat-" + r(B64U, 20)
    p = proj()
    out.append(("gitlab", "pat", "git/clone-url", "$ git clone https://oauth2:%s@gitlab.com/acme/%s.git\nCloning into '%s'...\nremote: Enumerating objects: %d, done." % (
        t, p, p, rng.randint(100, 9000)), t))
    t = "ATBB" + r(B62, 32)
    out.append(("bitbucket", "app-password", "git/clone-url", "$ git clone https://%s:%s@bitbucket.org/acme/%s.git" % (user(), t, proj()), t))
    t = "ATATT3xFfGF0" + r(B64U, 170) + "=" + r("0123456789ABCDEF", 8)
    out.append(("atlassian", "api-token", "curl/user-flag", "curl -s -u %s@acme.io:%s -H 'Accept: application/json' 'https://acme.atlassian.net/rest/api/3/search?jql=project=OPS'" % (user(), t), t))
    return out


@spec
def s_registries():
    out = []
    t = "npm_" + r(B62, 36)
    out.append(("npm", "access-token", "npm/npmrc", frame("cat ~/.npmrc", "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=%s\n@acme:registry=https://npm.pkg.github.com\nsave-exact=true" % t), t))
    t = "npm_" + r(B62, 36)
    out.append(("npm", "access-token", "agent/heredoc", "$ cat > .npmrc <<EOF\n//registry.npmjs.org/:_authToken=%s\nalways-auth=true\nEOF\n$ npm publish --access public\nnpm notice Publishing to https://registry.npmjs.org/ with tag latest" % t, t))
    t = "pypi-AgEIcHlwaS5vcmc" + r(B64U, 150)
    out.append(("pypi", "api-token", "pypi/pypirc", frame("cat ~/.pypirc", "[distutils]\nindex-servers =\n    pypi\n    testpypi\n\n[pypi]\nusername = __token__\npassword = %s\n\n[testpypi]\nrepository = https://test.pypi.org/legacy/\nusername = __token__" % t), t))
    t = "pypi-AgEIcHlwaS5vcmc" + r(B64U, 140)
    out.append(("pypi", "api-token", "cli/flag", "$ twine upload -u __token__ -p %s dist/*\nUploading distributions to https://upload.pypi.org/legacy/\nUploading acme_client-%s-py3-none-any.whl" % (t, semver()), t))
    t = "rubygems_" + r(HEX, 48)
    out.append(("rubygems", "api-key", "rubygems/credentials", frame("cat ~/.gem/credentials", "---\n:rubygems_api_key: %s\n" % t).rstrip(), t))
    t = "oy2" + r(LOD, 43)
    out.append(("nuget", "api-key", "cli/flag", "$ dotnet nuget push bin/Release/Acme.Client.%s.nupkg -k %s -s https://api.nuget.org/v3/index.json\nPushing Acme.Client.%s.nupkg to 'https://www.nuget.org/api/v2/package'..." % (semver(), t, semver()), t))
    u = user()
    t = "dckr_pat_" + r(B64U, 27)
    auth = b64s("%s:%s" % (u, t))
    out.append(("dockerhub", "pat", "docker/config-json-auth", frame("cat ~/.docker/config.json", json.dumps({"auths": {"https://index.docker.io/v1/": {"auth": auth}}, "credsStore": ""}, indent="\t")), auth))
    t = "dckr_pat_" + r(B64U, 27)
    out.append(("dockerhub", "pat", "cli/flag", "$ docker login -u %s -p %s\nWARNING! Using --password via the CLI is insecure. Use --password-stdin.\nLogin Succeeded" % (u, t), t))
    t = "cio" + r(B62, 32)
    out.append(("cratesio", "api-token", "cargo/credentials-toml", frame("cat ~/.cargo/credentials.toml", "[registry]\ntoken = \"%s\"" % t), t))
    t = r(B62, 14) + ".atlasv1." + r(B62, 67)
    out.append(("terraform-cloud", "api-token", "terraform/credentials-tfrc", frame("cat ~/.terraform.d/credentials.tfrc.json", json.dumps({"credentials": {"app.terraform.io": {"token": t}}}, indent=2)), t))
    t = "hvs." + r(B62, 24)
    out.append(("vault", "service-token", "vault/login-output", frame("vault login -method=github", "Success! You are now authenticated. The token information displayed below\nis already stored in the token helper. You do NOT need to run \"vault login\"\nagain. Future Vault requests will automatically use this token.\n\nKey                    Value\n---                    -----\ntoken                  %s\ntoken_accessor         %s\ntoken_duration         768h\ntoken_renewable        true\ntoken_policies         [\"default\" \"dev\"]" % (t, r(B62, 24))), t))
    t = "hvs.CAESI" + r(B64U, 90)
    out.append(("vault", "service-token", "http/custom-header", 'curl -s -H "X-Vault-Token: %s" https://vault.acme.internal:8200/v1/secret/data/prod/api | jq .data' % t, t))
    t = "AKCp8" + r(B62, 68)
    out.append(("jfrog", "api-key", "http/custom-header", "curl -H \"X-JFrog-Art-Api: %s\" -T build.tgz https://acme.jfrog.io/artifactory/libs-release-local/build.tgz" % t, t))
    return out


@spec
def s_payment():
    out = []
    t = "sk_live_" + r(B62, 99)
    out.append(("stripe", "secret-key", "curl/user-flag", "curl https://api.stripe.com/v1/charges \\\n  -u %s: \\\n  -d amount=2000 \\\n  -d currency=eur" % t, t))
    t = "sk_live_" + r(B62, 24)
    rk = "rk_live_" + r(B62, 24)
    out.append(("stripe", "secret-key", "stripe/cli-config", frame("cat ~/.config/stripe/config.toml", "[default]\n  device_name = '%s-mbp'\n  display_name = 'Acme'\n  live_mode_api_key = '%s'\n  live_mode_key_expires_at = '2027-03-01'\n  test_mode_key_expires_at = '2027-03-01'" % (user(), t)), t))
    out.append(("stripe", "restricted-key", "code/python", "import stripe\n\nstripe.api_key = \"%s\"\ncustomers = stripe.Customer.list(limit=3)\n" % rk, rk))
    t = "whsec_" + r(B62, 32)
    out.append(("stripe", "webhook-secret", "agent/stripe-listen", frame("stripe listen --forward-to localhost:8000/webhooks/stripe", "> Ready! You are using Stripe API Version [2026-10-29]. Your webhook signing secret is %s (^C to quit)" % t), t))
    t = "shpat_" + r(HEX, 32)
    out.append(("shopify", "admin-token", "http/custom-header", "curl -X GET \"https://acme-store.myshopify.com/admin/api/2026-10/orders.json?status=any\" \\\n  -H \"X-Shopify-Access-Token: %s\"" % t, t))
    t = "access_token$production$%s$%s" % (r(LOD, 16), r(HEX, 32))
    out.append(("braintree", "access-token", "code/ruby", "gateway = Braintree::Gateway.new(\n  access_token: \"%s\",\n)\n" % t, t))
    t = "EAAA" + r(B64U, 60)
    out.append(("square", "access-token", "http/bearer", "curl https://connect.squareup.com/v2/locations \\\n  -H 'Square-Version: 2026-11-20' \\\n  -H 'Authorization: Bearer %s'" % t, t))
    sec = r(B62, 24)
    out.append(("razorpay", "key-secret", "curl/user-flag", "curl -u rzp_live_%s:%s -X POST https://api.razorpay.com/v1/orders -H 'content-type: application/json' -d '{\"amount\":50000,\"currency\":\"INR\"}'" % (r(B62, 14), sec), sec))
    return out


@spec
def s_messaging():
    out = []
    for _ in range(2):
        seg = r(B62, 24)
        url = "https://hooks.slack.com/services/T%s/B%s/%s" % (r(UPD, 9), r(UPD, 11), seg)
        txt = pick(["curl -X POST -H 'Content-type: application/json' --data '{\"text\":\"deploy %s finished\"}' %s" % (semver(), url),
                    frame("cat .env", "SLACK_WEBHOOK_URL=%s\nSLACK_CHANNEL=#deploys" % url)])
        out.append(("slack", "incoming-webhook", "webhook/url-path", txt, seg))
    t = slack_bot()
    out.append(("slack", "bot-token", "http/request-dump", "POST /api/chat.postMessage HTTP/1.1\nHost: slack.com\nAuthorization: Bearer %s\nContent-Type: application/json; charset=utf-8\nContent-Length: %d\n\n{\"channel\":\"C%s\",\"text\":\"build failed\"}" % (
        t, rng.randint(40, 90), r(UPD, 10)), t))
    seg = r(B64U, 68)
    out.append(("discord", "webhook", "webhook/url-path", "DISCORD_WEBHOOK=https://discord.com/api/webhooks/%d/%s" % (rng.randint(10 ** 17, 10 ** 19 - 1), seg), seg))
    t = discord_bot()
    out.append(("discord", "bot-token", "http/authorization-bot", "curl -H \"Authorization: Bot %s\" https://discord.com/api/v10/users/@me" % t, t))
    t = telegram()
    out.append(("telegram", "bot-token", "url/path", "curl -s \"https://api.telegram.org/bot%s/sendMessage?chat_id=-100%d&text=deploy+ok\"" % (t, rng.randint(10 ** 9, 10 ** 10)), t))
    t = telegram()
    logl = "\n".join("%s - httpx - INFO - HTTP Request: POST https://api.telegram.org/bot%s/getUpdates \"HTTP/1.1 200 OK\"" % (
        "2026-12-07 %02d:%02d:%02d,%03d" % (rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999)), t) for _ in range(3))
    out.append(("telegram", "bot-token", "agent/app-log", frame("docker logs --tail 3 %s-bot" % proj(), logl), t))
    tok = r(HEX, 32)
    out.append(("twilio", "auth-token", "curl/user-flag", "curl -X POST https://api.twilio.com/2010-04-01/Accounts/AC%s/Messages.json \\\n  --data-urlencode \"Body=Your code is 482913\" \\\n  -u AC%s:%s" % (r(HEX, 32), r(HEX, 32), tok), tok))
    t = "SG." + r(B64U, 22) + "." + r(B64U, 43)
    out.append(("sendgrid", "api-key", "http/bearer", "curl --request POST --url https://api.sendgrid.com/v3/mail/send \\\n  --header 'Authorization: Bearer %s' \\\n  --header 'Content-Type: application/json'" % t, t))
    t = "key-" + r(HEX, 32)
    out.append(("mailgun", "api-key", "curl/user-flag", "curl -s --user 'api:%s' https://api.mailgun.net/v3/mg.acme.io/messages -F from='ops@acme.io' -F to='oncall@acme.io' -F subject='test'" % t, t))
    return out


@spec
def s_ai():
    out = []
    t = "sk-ant-api03-" + r(B64U, 93) + "AA"
    out.append(("anthropic", "api-key", "http/custom-header", "curl https://api.anthropic.com/v1/messages \\\n  -H \"x-api-key: %s\" \\\n  -H \"anthropic-version: 2023-06-01\" \\\n  -H \"content-type: application/json\" \\\n  -d '{\"model\":\"claude-sonnet-4-5\",\"max_tokens\":64,\"messages\":[{\"role\":\"user\",\"content\":\"ping\"}]}'" % t, t))
    t = "sk-ant-api03-" + r(B64U, 93) + "AA"
    out.append(("anthropic", "api-key", "agent/settings-json", frame("cat ~/.claude/settings.json", json.dumps({"env": {"ANTHROPIC_API_KEY": t, "DISABLE_TELEMETRY": "1"}, "permissions": {"allow": ["Bash(npm run test:*)"]}}, indent=2)), t))
    t = openai_proj()
    out.append(("openai", "project-key", "http/bearer", "curl https://api.openai.com/v1/chat/completions \\\n  -H \"Content-Type: application/json\" \\\n  -H \"Authorization: Bearer %s\" \\\n  -d '{\"model\": \"gpt-4o-mini\", \"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]}'" % t, t))
    t = openai_proj()
    out.append(("openai", "project-key", "agent/auth-json", frame("cat ~/.codex/auth.json", json.dumps({"OPENAI_API_KEY": t, "tokens": None, "last_refresh": iso()}, indent=2)), t))
    t = "hf_" + r(UP + LO, 34)
    out.append(("huggingface", "user-token", "place/end", frame("cat ~/.cache/huggingface/token", t), t))
    t = r(HEX, 40)
    out.append(("wandb", "api-key", "netrc", frame("cat ~/.netrc", "machine api.wandb.ai\n  login user\n  password %s" % t), t))
    return out


@spec
def s_saas():
    out = []
    k = r(HEX, 32)
    out.append(("datadog", "api-key", "http/custom-header", "curl -X POST \"https://api.datadoghq.eu/api/v2/series\" \\\n-H \"Content-Type: application/json\" \\\n-H \"DD-API-KEY: %s\" \\\n-d @metrics.json" % k, k))
    k = r(HEX, 32)
    out.append(("datadog", "api-key", "datadog/agent-yaml", frame("sudo cat /etc/datadog-agent/datadog.yaml", "## @param api_key - string - required\napi_key: %s\nsite: datadoghq.eu\nlogs_enabled: true\napm_config:\n  enabled: true" % k), k))
    t = "00" + r(B64U, 40)
    out.append(("okta", "api-token", "http/authorization-ssws", "curl -H \"Accept: application/json\" -H \"Authorization: SSWS %s\" \"https://acme.okta.com/api/v1/users?limit=25\"" % t, t))
    t = "dt0c01." + r(UPD, 24) + "." + r(UPD, 64)
    out.append(("dynatrace", "api-token", "http/authorization-api-token", "curl -H \"Authorization: Api-Token %s\" https://abc12345.live.dynatrace.com/api/v2/problems" % t, t))
    t = "PMAK-" + r(HEX, 24) + "-" + r(HEX, 34)
    out.append(("postman", "api-key", "http/custom-header", "curl --location 'https://api.getpostman.com/collections' --header 'X-Api-Key: %s'" % t, t))
    t = "figd_" + r(B64U, 40)
    out.append(("figma", "pat", "http/custom-header", "curl -H 'X-Figma-Token: %s' 'https://api.figma.com/v1/files/%s'" % (t, r(B62, 22)), t))
    t = "CCIPAT_" + r(B62, 22) + "_" + r(HEX, 40)
    out.append(("circleci", "pat", "http/custom-header", "curl -H \"Circle-Token: %s\" https://circleci.com/api/v2/me" % t, t))
    t = "AAAA" + r(B64U, 7) + ":APA91b" + r(B64U, 134)
    out.append(("firebase", "fcm-server-key", "http/authorization-key", "curl -X POST -H \"Authorization: key=%s\" -H \"Content-Type: application/json\" https://fcm.googleapis.com/fcm/send -d @push.json" % t, t))
    t = "AGE-SECRET-KEY-1" + r(BECH.upper(), 58)
    out.append(("age", "secret-key", "age/keys-txt", frame("cat ~/.config/sops/age/keys.txt", "# created: %s\n# public key: age1%s\n%s" % (iso()[:19] + "+01:00", r(BECH, 58), t)), t))
    t = "dapi" + r(HEX, 32)
    out.append(("databricks", "pat", "databricks/cfg", frame("cat ~/.databrickscfg", "[DEFAULT]\nhost  = https://adb-%d.%d.azuredatabricks.net\ntoken = %s\n\n[staging]\nhost = https://adb-%d.3.azuredatabricks.net\nauth_type = databricks-cli" % (
        rng.randint(10 ** 15, 10 ** 16), rng.randint(1, 19), t, rng.randint(10 ** 15, 10 ** 16))), t))
    j = supabase_service_jwt()
    out.append(("supabase", "service-role-jwt", "http/custom-header", "curl 'https://%s.supabase.co/rest/v1/profiles?select=*' \\\n-H \"apikey: %s\" \\\n-H \"Authorization: Bearer %s\"" % (r(LO, 20), j, j), j))
    t = "sntryu_" + r(HEX, 64)
    out.append(("sentry", "user-auth-token", "sentry/sentryclirc", frame("cat ~/.sentryclirc", "[auth]\ntoken=%s\n\n[defaults]\norg=acme\nproject=%s" % (t, proj())), t))
    return out


@spec
def s_databases():
    out = []
    for _ in range(2):
        pw = password(url_safe=False)
        enc = quote(pw, safe="")
        url = "postgresql://%s:%s@%s:5432/%s" % (pick(DBUSERS), enc, pick(["db.internal", "pg-prod.cluster-c9x2.eu-west-1.rds.amazonaws.com"]), pick(DBNAMES))
        txt = "$ psql \"%s\"\npsql (16.%d)\nSSL connection (protocol: TLSv1.3, cipher: TLS_AES_256_GCM_SHA384, compression: off)\nType \"help\" for help.\n\n%s=> \\dt" % (
            url, rng.randint(1, 6), pick(DBNAMES))
        out.append(("postgres", "url-password", "place/url-encoded" if enc != pw else "cli/psql-url", txt, enc))
    pw = password()
    out.append(("postgres", "password", "cli/env-prefix", "$ PGPASSWORD='%s' psql -h %s -U %s -d %s -c 'select count(*) from orders'\n count\n-------\n %d\n(1 row)" % (
        pw, ip10(), pick(DBUSERS), pick(DBNAMES), rng.randint(100, 99999)), pw))
    pw = password().replace(":", "")
    out.append(("postgres", "password", "postgres/pgpass", frame("cat ~/.pgpass", "db.internal:5432:*:%s:%s\nlocalhost:5432:%s:postgres:%s" % (pick(DBUSERS), pw, pick(DBNAMES), "${PGPASS_LOCAL}")), pw))
    pw = password()
    out.append(("postgres", "password", "cli/docker-run-env", "$ docker run -d --name pg -e POSTGRES_USER=app -e POSTGRES_PASSWORD='%s' -p 5432:5432 postgres:16\n%s" % (pw, r(HEX, 64)), pw))
    pw = password()
    out.append(("mysql", "password", "cli/flag", "$ mysql -h 127.0.0.1 -u root -p'%s' %s -e 'SHOW TABLES;'\nmysql: [Warning] Using a password on the command line interface can be insecure.\n+------------------+\n| Tables_in_app    |\n+------------------+\n| orders           |\n| users            |\n+------------------+" % (pw, pick(DBNAMES)), pw))
    pw = password()
    out.append(("mysql", "password", "config/properties", "spring.datasource.url=jdbc:mysql://mysql.internal:3306/%s?useSSL=true\nspring.datasource.username=%s\nspring.datasource.password=%s\nspring.jpa.hibernate.ddl-auto=validate" % (pick(DBNAMES), pick(DBUSERS), pw), pw))
    pw = password()
    out.append(("mysql", "password", "mysql/my-cnf", frame("cat ~/.my.cnf", "[client]\nuser=%s\npassword=\"%s\"\nhost=mysql.internal" % (pick(DBUSERS), pw)), pw))
    pw = password(url_safe=True)
    cl, db = r(LOD, 5), pick(DBNAMES)
    out.append(("mongodb", "srv-password", "cli/mongosh", "$ mongosh \"mongodb+srv://%s:%s@cluster0.%s.mongodb.net/%s\"\nCurrent Mongosh Log ID: %s\nConnecting to: mongodb+srv://<credentials>@cluster0.%s.mongodb.net/%s\nUsing MongoDB: 7.0.%d" % (
        pick(DBUSERS), pw, cl, db, r(HEX, 24), cl, db, rng.randint(1, 15)), pw))
    pw = password(symbols=False)
    out.append(("redis", "password", "cli/flag", "$ redis-cli -h cache.internal -p 6380 -a %s --tls ping\nWarning: Using a password with '-a' or '-u' option on the command line interface may not be safe.\nPONG" % pw, pw))
    pw = password().replace(";", "")
    out.append(("mssql", "password", "cli/flag", "$ sqlcmd -S acme-sql.database.windows.net -d %s -U sqladmin -P '%s' -Q \"SELECT @@VERSION\"" % (pick(DBNAMES), pw), pw))
    pw = password(url_safe=True)
    out.append(("elasticsearch", "password", "curl/user-flag", "curl -u elastic:%s -k https://es.internal:9200/_cluster/health?pretty\n{\n  \"cluster_name\" : \"acme-logs\",\n  \"status\" : \"yellow\"\n}" % pw, pw))
    pw = password()
    out.append(("rabbitmq", "password", "cli/positional", "$ rabbitmqctl add_user celery '%s'\nAdding user \"celery\" ...\nDone. Don't forget to grant the user permissions to some virtual hosts! See 'rabbitmqctl help set_permissions' to learn more." % pw, pw))
    return out


@spec
def s_passwords():
    out = []
    pw = password()
    out.append(("password", "sudo-password", "cli/stdin-echo", "$ echo '%s' | sudo -S apt-get update\n[sudo] password for %s: Hit:1 http://archive.ubuntu.com/ubuntu noble InRelease" % (pw, user()), pw))
    pw = password()
    out.append(("password", "key-passphrase", "cli/openssl-pass", "$ openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:%s" % pw, pw))
    pw = password(symbols=False)
    out.append(("password", "wifi-psk", "config/wpa-supplicant", frame("sudo cat /etc/wpa_supplicant/wpa_supplicant.conf", "ctrl_interface=DIR=/var/run/wpa_supplicant GROUP=netdev\nupdate_config=1\ncountry=DE\n\nnetwork={\n\tssid=\"Acme-Office\"\n\tpsk=\"%s\"\n\tkey_mgmt=WPA-PSK\n}" % pw), pw))
    pw = password()
    body = json.dumps({"username": "%s@acme.io" % user(), "password": pw})
    out.append(("password", "login-password", "http/json-body", "curl -s -X POST https://%s/api/login -H 'Content-Type: application/json' -d '%s'" % (pick(HOSTS), body), pw))
    pw = password()
    har = {"request": {"method": "POST", "url": "https://%s/session" % pick(HOSTS), "postData": {"mimeType": "application/x-www-form-urlencoded",
           "params": [{"name": "login", "value": user()}, {"name": "password", "value": pw}]}}}
    out.append(("password", "login-password", "har/post-data", json.dumps(har, indent=2), pw))
    pw = password()
    enc = quote(pw, safe="")
    out.append(("password", "login-password", "place/url-encoded" if enc != pw else "http/form-body",
                "POST /login HTTP/1.1\nHost: %s\nContent-Type: application/x-www-form-urlencoded\n\nusername=%s&password=%s&remember=1" % (pick(HOSTS), user(), enc), enc))
    pw = password()
    out.append(("password", "ansible-become", "config/ansible-inventory", frame("cat inventory/hosts.ini", "[web]\nweb01 ansible_host=%s\nweb02 ansible_host=%s\n\n[web:vars]\nansible_user=deploy\nansible_become_password=%s" % (ip10(), ip10(), pw)), pw))
    pw = password()
    out.append(("password", "windows-user", "cli/net-user", "PS C:\\> net user svc_backup %s /add\nThe command completed successfully." % pw, pw))
    return out


@spec
def s_generic_http():
    out = []
    for _ in range(3):
        j = jwt_user()
        txt = pick(["$ curl -v https://%s/api/me\n* Connected to %s (%s) port 443\n> GET /api/me HTTP/2\n> Host: %s\n> user-agent: curl/8.5.0\n> accept: */*\n> authorization: Bearer %s\n>\n< HTTP/2 200" % ("{h}", "{h}", ip10(), "{h}", j),
                    "{\"access_token\":\"%s\",\"token_type\":\"Bearer\",\"expires_in\":3600,\"scope\":\"openid profile\"}" % j,
                    "Cookie: theme=dark; access_token=%s; _ga=GA1.1.%d.%d" % (j, rng.randint(10 ** 8, 10 ** 9), rng.randint(10 ** 9, 2 * 10 ** 9))])
        txt = txt.replace("{h}", pick(HOSTS))
        out.append(("jwt", "access-token", pick(["http/curl-verbose", "http/token-response", "http/cookie"]) if False else
                    ("http/curl-verbose" if "curl -v" in txt else "http/token-response" if "token_type" in txt else "http/cookie"), txt, j))
    j = jwt_user()
    ls = {"origins": [{"origin": "https://%s" % pick(HOSTS), "localStorage": [{"name": "auth.token", "value": j}, {"name": "theme", "value": "dark"}]}]}
    out.append(("jwt", "access-token", "agent/playwright-storage", frame("cat playwright/.auth/user.json", json.dumps(ls, indent=2)), j))
    for _ in range(3):
        u, pw = user(), password(symbols=rng.random() < 0.5)
        b = b64s("%s:%s" % (u, pw))
        txt = pick(["> GET /api/v1/jobs HTTP/1.1\n> Host: jenkins.internal\n> Authorization: Basic %s\n> User-Agent: curl/8.5.0\n>\n< HTTP/1.1 200 OK" % b,
                    "wget --header=\"Authorization: Basic %s\" https://artifacts.acme.io/releases/%s.tar.gz" % (b, semver()),
                    json.dumps({"headers": [{"name": "Authorization", "value": "Basic %s" % b}, {"name": "Accept", "value": "application/json"}]}, indent=2)])
        out.append(("basic-auth", "header", "http/authorization-basic", txt, b))
    for _ in range(2):
        pw = password(url_safe=True)
        txt = pick(["$ curl -s https://admin:%s@jenkins.internal/job/deploy/api/json | jq .color" % pw,
                    frame("cat /etc/pip.conf", "[global]\nindex-url = https://%s:%s@pypi.acme.internal/simple\ntrusted-host = pypi.acme.internal" % (user(), pw))])
        out.append(("basic-auth", "url-password", "url/userinfo", txt, pw))
    v = r(LOD, 32)
    out.append(("session-cookie", "django-sessionid", "http/set-cookie", "$ curl -si -X POST https://%s/accounts/login/ -d @login.txt | head -8\nHTTP/1.1 302 Found\nServer: nginx\nDate: Mon, 07 Dec 2026 10:12:44 GMT\nLocation: /dashboard/\nSet-Cookie: csrftoken=%s; expires=Mon, 06 Dec 2027 10:12:44 GMT; Max-Age=31449600; Path=/; SameSite=Lax\nSet-Cookie: sessionid=%s; expires=Mon, 21 Dec 2026 10:12:44 GMT; HttpOnly; Max-Age=1209600; Path=/; SameSite=Lax; Secure" % (pick(HOSTS), r(B62, 32), v), v))
    v = "s%3A" + r(B64U, 32) + "." + quote(r(B64, 43), safe="")
    out.append(("session-cookie", "express-connect-sid", "place/url-encoded", "curl 'https://%s/api/cart' \\\n  -H 'accept: application/json' \\\n  -b 'connect.sid=%s; lang=en' \\\n  --compressed" % (pick(HOSTS), v), v))
    v = quote(b64s(rb(rng.randint(60, 90))), safe="") + "--" + r(HEX, 40)
    out.append(("session-cookie", "rails-session", "http/cookie", "Cookie: _acme_session=%s; locale=de" % v, v))
    v = r(B64U, 43)
    st = {"cookies": [{"name": "__Secure-next-auth.session-token", "value": v, "domain": pick(HOSTS), "path": "/", "httpOnly": True, "secure": True, "sameSite": "Lax", "expires": 1799000000}], "origins": []}
    out.append(("session-cookie", "nextauth-session", "agent/playwright-storage", frame("cat e2e/.auth/state.json", json.dumps(st, indent=2)), v))
    k = r(HEX, 32)
    out.append(("rails", "master-key", "place/end", frame("cat config/master.key", k), k))
    kb = r(HEX, 128)
    out.append(("rails", "secret-key-base", "rails/credentials-show", frame("bin/rails credentials:show", "# aws:\n#   access_key_id: 123\nsecret_key_base: %s\nstripe:\n  publishable: pk_placeholder" % kb), kb))
    return out


@spec
def s_placement_edges():
    """Secrets at the very start / very end of the text, with and without trailing punctuation."""
    out = []
    pool = [f for f in FAMS if f.family not in DB_FAMILIES and f.family not in ("generic", "django", "rails", "jwt")]
    for i, f in enumerate(rng.sample(pool, 16)):
        v, sec = f.value()
        if i % 4 == 0:
            txt, ctx = "%s\n\n%s" % (v, pick(["^ pasted from the vault UI, is this the right format for %s?" % f.env,
                                                 "(new %s, generated a minute ago)" % f.label])), "place/start"
        elif i % 4 == 1:
            txt, ctx = "%s%s %s" % (v, pick([",", ":", " \u2014", ";"]), pick(["that's the one from prod", "use it for the smoke test",
                                                                              "please rotate after the incident"])), "place/start"
        elif i % 4 == 2:
            txt, ctx = "%s %s%s" % (pick(["ok, final value for %s is" % f.env, "%s =" % f.key, "copy this into the CI secret:"]), v,
                                    pick([".", "!", "\u3002", "?", "..."])), "place/end-punct"
        else:
            txt, ctx = "%s\n%s" % (pick(["# %s" % f.label, "$ cat /run/secrets/%s" % f.key, "Token:"]), v), "place/end"
        out.append((f.family, f.kind, ctx, txt, sec))
    return out


@spec
def s_private_keys():
    out = []
    p = proj()
    ctxs = ["agent/cat-file", "agent/terraform-show", "agent/git-diff", "agent/env-escaped", "agent/kubectl-get-secret-b64",
            "agent/md-fence", "agent/heredoc", "agent/tool-result-json", "agent/ci-log", "lang/ru", "lang/ja", "lang/pt",
            "agent/docker-inspect"]
    for ctx in ctxs:
        kind, (keytxt, first) = any_key()
        if ctx == "agent/terraform-show":
            kind, (keytxt, first) = "rsa", rsa_key(4096)
        if ctx == "agent/env-escaped" and kind in ("pgp",):
            kind, (keytxt, first) = "rsa", rsa_key()
        sec = first
        if ctx == "agent/cat-file":
            path = pick({"openssh-ed25519": ["~/.ssh/id_ed25519", "deploy/keys/ci_ed25519"]}.get(kind, ["certs/server.key", "deploy/key.pem", "~/.ssh/id_rsa", "secrets/signing.key"]))
            if kind == "pgp":
                path = "backup/private.asc"
            txt = frame("cat %s" % path, keytxt)
        elif ctx == "agent/terraform-show":
            txt = frame("terraform show", "# tls_private_key.deploy:\nresource \"tls_private_key\" \"deploy\" {\n    algorithm                     = \"RSA\"\n    id                            = \"%s\"\n    private_key_pem               = <<-EOT\n%s\n    EOT\n    public_key_fingerprint_md5    = \"%s\"\n    rsa_bits                      = 4096\n}" % (
                r(HEX, 40), "\n".join("        " + ln for ln in keytxt.split("\n")), ":".join(r(HEX, 2) for _ in range(16))))
        elif ctx == "agent/git-diff":
            lines = keytxt.split("\n")
            txt = "$ git show --stat -p HEAD -- deploy/id_rsa\ndiff --git a/deploy/id_rsa b/deploy/id_rsa\nnew file mode 100600\nindex 0000000..%s\n--- /dev/null\n+++ b/deploy/id_rsa\n@@ -0,0 +1,%d @@\n%s" % (
                sha7(), len(lines), "\n".join("+" + ln for ln in lines))
        elif ctx == "agent/env-escaped":
            esc = keytxt.replace("\n", "\\n")
            txt = frame("cat .env", "GITHUB_APP_ID=%d\nGITHUB_APP_PRIVATE_KEY=\"%s\"\nWEBHOOK_PATH=/api/github/webhooks" % (rng.randint(100000, 999999), esc))
        elif ctx == "agent/kubectl-get-secret-b64":
            sec = b64s(keytxt + "\n")
            txt = frame("kubectl get secret %s-tls -n ingress -o yaml" % p, "apiVersion: v1\ndata:\n  tls.crt: %s\n  tls.key: %s\nkind: Secret\nmetadata:\n  name: %s-tls\n  namespace: ingress\ntype: kubernetes.io/tls" % (
                b64s("-----BEGIN CERTIFICATE-----\n" + b64s(rb(48)) + "\n-----END CERTIFICATE-----\n"), sec, p))
        elif ctx == "agent/md-fence":
            txt = "I generated a throwaway deploy key for the staging box and installed it:\n\n```\n%s\n```\n\nThe public half is already in `authorized_keys`." % keytxt
        elif ctx == "agent/heredoc":
            txt = "$ cat > ~/.ssh/deploy_key <<'EOF'\n%s\nEOF\n$ chmod 600 ~/.ssh/deploy_key\n$ ssh -i ~/.ssh/deploy_key deploy@%s 'uptime'" % (keytxt, ip10())
        elif ctx == "agent/tool-result-json":
            txt = json.dumps({"type": "tool_result", "tool_use_id": "toolu_01" + r(B62, 22), "content": keytxt + "\n"})
        elif ctx == "agent/ci-log":
            lines = ["+ echo \"$DEPLOY_KEY\""] + keytxt.split("\n") + ["+ ssh-add -", "Error loading key \"(stdin)\": invalid format"]
            txt = "\n".join("%s %s" % (t, ln) for t, ln in zip(ts_series(len(lines)), lines))
        elif ctx == "agent/docker-inspect":
            esc = keytxt.replace("\n", "\\n")
            obj = [{"Id": r(HEX, 64), "Config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "JWT_PRIVATE_KEY=%s" % esc, "PORT=8080"],
                                                 "Image": "ghcr.io/acme/%s:%s" % (p, semver())}}]
            txt = frame("docker inspect %s-1" % p, json.dumps(obj, indent=4))
        elif ctx == "lang/ru":
            txt = "\u041f\u043e\u0447\u0435\u043c\u0443 ssh \u043f\u0438\u0448\u0435\u0442 \u00abinvalid format\u00bb? \u0432\u043e\u0442 \u043c\u043e\u0439 \u043a\u043b\u044e\u0447:\n\n%s" % keytxt
        elif ctx == "lang/ja":
            txt = "\u3053\u306e\u79d8\u5bc6\u9375\u3067\u30b5\u30fc\u30d0\u30fc\u306b\u5165\u308c\u307e\u305b\u3093\u3002\u78ba\u8a8d\u3057\u3066\u304f\u308c\u307e\u3059\u304b\uff1f\n%s\n\u3088\u308d\u3057\u304f\u304a\u9858\u3044\u3057\u307e\u3059\u3002" % keytxt
        else:
            txt = "Oi, segue a chave privada do servidor de homologa\u00e7\u00e3o:\n%s\nn\u00e3o compartilhe com ningu\u00e9m." % keytxt
        out.append(("private-key", kind, ctx, txt, sec))
    return out


# --------------------------------------------------------------------------
# negatives: realistic artefacts without any secret
# --------------------------------------------------------------------------

SECRET_ENV_NAMES = [f.env for f in FAMS if f.family not in ("postgres", "mysql", "mongodb", "redis", "rabbitmq", "mssql", "elasticsearch")]
SECRET_ENV_NAMES = sorted(set(SECRET_ENV_NAMES) | {"DATABASE_URL", "DB_PASSWORD", "JWT_SECRET"})


def placeholder(name):
    return pick(["<YOUR_%s>" % name, "your-%s-here" % name.lower().replace("_", "-"), "changeme", "xxxxxxxxxxxxxxxx",
                 "${%s}" % name, "{{ .Values.%s }}" % camel(name.lower()), "REPLACE_ME", "<redacted>", "********", "",
                 "TODO", "dummy", "${{ secrets.%s }}" % name, "$(cat /run/secrets/%s)" % name.lower(),
                 "op://Prod/%s/credential" % name.lower().replace("_", "-"), "vault:secret/data/prod#%s" % name.lower(),
                 "arn:aws:secretsmanager:%s:%s:secret:prod/%s-%s" % (pick(REGIONS), acct(), name.lower(), r(B62, 6)),
                 "test", "none", "\"\"", "null"])


def n_env_example():
    lines = ["%s=%s" % p for p in env_pairs(FILLER_ENV, rng.randint(3, 8))]
    for name in rng.sample(SECRET_ENV_NAMES, rng.randint(2, 5)):
        lines.insert(rng.randint(0, len(lines)), "%s=%s" % (name, placeholder(name)))
    lines.insert(0, pick(["# Copy to .env and fill in real values", "# example configuration - never commit real keys", "# generated by ./scripts/init-env"]))
    return "placeholder", "agent/cat-env", frame(pick(["cat .env.example", "cat .env.sample", "cat .env.template"]), "\n".join(lines))


def n_env_sort():
    pairs = env_pairs(SYS_ENV, rng.randint(10, 18)) + env_pairs(FILLER_ENV, rng.randint(3, 8))
    pairs.sort()
    return "benign-env", "agent/env-sort", frame(pick(["env | sort", "printenv | sort"]), "\n".join("%s=%s" % p for p in pairs))


def n_kubectl():
    style = rng.randrange(3)
    ns = pick(["prod", "staging", "default"])
    if style == 0:
        rows = ["NAME                         TYPE                             DATA   AGE"]
        for _ in range(rng.randint(3, 7)):
            rows.append("%-28s %-32s %-6d %dd" % (proj() + pick(["-secrets", "-tls", "-env", "-registry"]), pick(["Opaque", "kubernetes.io/tls", "kubernetes.io/dockerconfigjson"]), rng.randint(1, 9), rng.randint(1, 400)))
        return "listing", "agent/kubectl-get-secrets", frame("kubectl get secrets -n %s" % ns, "\n".join(rows))
    if style == 1:
        keys = rng.sample(SECRET_ENV_NAMES, rng.randint(2, 5))
        p = proj()
        data = "\n".join("%s:  %d bytes" % (k, rng.randint(16, 120)) for k in keys)
        return "describe", "agent/kubectl-describe-secret", frame("kubectl describe secret %s-secrets -n %s" % (p, ns),
                                                                 "Name:         %s-secrets\nNamespace:    %s\nLabels:       app=%s\nAnnotations:  <none>\n\nType:  Opaque\n\nData\n====\n%s" % (p, ns, p, data))
    data = "\n".join("  %s: %s" % (k, yq(v)) for k, v in env_pairs(FILLER_ENV, rng.randint(3, 7)))
    p = proj()
    return "configmap", "agent/kubectl-get-configmap", frame("kubectl get configmap %s-config -n %s -o yaml" % (p, ns),
                                                            "apiVersion: v1\ndata:\n%s\nkind: ConfigMap\nmetadata:\n  creationTimestamp: \"%s\"\n  name: %s-config\n  namespace: %s\n  resourceVersion: \"%d\"\n  uid: %s" % (
                                                                data, iso(), p, ns, rng.randint(10 ** 5, 10 ** 8), uuid4()))


def n_docker_inspect():
    env = ["PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8",
           "GPG_KEY=%s" % r("0123456789ABCDEF", 40), "PYTHON_VERSION=3.12.%d" % rng.randint(1, 8), "PYTHON_SHA256=%s" % r(HEX, 64)]
    env += ["%s=%s" % p for p in env_pairs(FILLER_ENV, rng.randint(1, 4))]
    obj = [{"Id": r(HEX, 64), "Created": iso(frac=True), "Image": "sha256:" + r(HEX, 64),
            "RepoDigests": ["python@sha256:" + r(HEX, 64)],
            "Config": {"Env": env, "Cmd": ["python3"], "Labels": {"org.opencontainers.image.revision": r(HEX, 40),
                                                                  "org.opencontainers.image.version": semver()}}}]
    return "digests", "agent/docker-inspect", frame(pick(["docker inspect python:3.12-slim", "docker image inspect %s:latest" % proj()]), json.dumps(obj, indent=4))


def n_terraform():
    name = proj().replace("-", "_")
    out = """# aws_db_instance.%s:
resource "aws_db_instance" "%s" {
    allocated_storage                     = 100
    arn                                   = "arn:aws:rds:%s:%s:db:%s"
    engine                                = "postgres"
    engine_version                        = "16.%d"
    identifier                            = "%s"
    instance_class                        = "db.t4g.medium"
    password                              = (sensitive value)
    username                              = "%s"
    storage_encrypted                     = true
}

# aws_ssm_parameter.api_key:
resource "aws_ssm_parameter" "api_key" {
    arn   = "arn:aws:ssm:%s:%s:parameter/prod/api_key"
    name  = "/prod/api_key"
    type  = "SecureString"
    value = (sensitive value)
}""" % (name, name, pick(REGIONS), acct(), name, rng.randint(1, 6), name, pick(DBUSERS), pick(REGIONS), acct())
    return "sensitive-value", "agent/terraform-show", frame("terraform show", out)


def n_git_diff():
    name = pick(SECRET_ENV_NAMES)
    style = rng.randrange(3)
    if style == 0:
        body = ' import os\n \n-%s = "changeme"\n+%s = os.environ["%s"]\n TIMEOUT = 30' % (name, name, name)
        path = "config/settings.py"
    elif style == 1:
        body = " dependencies:\n-  requests==2.31.0\n+  requests==2.32.3\n-  urllib3==2.0.7\n+  urllib3==2.2.3"
        path = "requirements.in"
    else:
        body = "   %s:\n-    %s: ${%s}\n+    %s: ${{ secrets.%s }}\n     region: %s" % (pick(["deploy", "env"]), name.lower(), name, name.lower(), name, pick(REGIONS))
        path = ".github/workflows/deploy.yml"
    out = "diff --git a/%s b/%s\nindex %s..%s 100644\n--- a/%s\n+++ b/%s\n@@ -%d,5 +%d,5 @@\n%s" % (path, path, sha7(), sha7(), path, path, rng.randint(1, 90), rng.randint(1, 90), body)
    return "refactor", "agent/git-diff", frame("git diff", out)


def n_git_log():
    lines = []
    for _ in range(rng.randint(5, 12)):
        lines.append("%s %s" % (sha7(), pick(["fix: rotate expired token handling", "chore(deps): bump axios from 1.7.7 to 1.7.9",
                                             "feat: add password reset flow", "docs: explain how to set GITHUB_TOKEN", "refactor: move secrets to vault",
                                             "test: cover 401 retry", "ci: mask credentials in logs", "Merge pull request #%d from acme/fix-auth" % rng.randint(100, 3000)])))
    if rng.random() < 0.5:
        return "git-shas", "agent/git-log", frame("git log --oneline -n %d" % len(lines), "\n".join(lines))
    u = user()
    full = "commit %s\nMerge: %s %s\nAuthor: %s <%s@acme.io>\nDate:   Fri Dec 4 %02d:%02d:%02d 2026 +0100\n\n    Merge pull request #%d from acme/rotate-keys\n\n    Rotate API keys; tokens now come from Vault" % (
        r(HEX, 40), sha7(), sha7(), u.title(), u, rng.randint(8, 20), rng.randint(0, 59), rng.randint(0, 59), rng.randint(100, 3000))
    return "git-shas", "agent/git-show", frame("git show --no-patch HEAD", full)


def n_pytest():
    key = pick(["api_key", "token", "password", "secret_key", "client_secret"])
    txt = "\n".join(["============================= test session starts ==============================",
                     "platform linux -- Python 3.12.%d, pytest-8.3.%d, pluggy-1.5.0" % (rng.randint(1, 8), rng.randint(1, 4)),
                     "collected %d items" % rng.randint(3, 50), "", "tests/test_config.py F", "",
                     "=================================== FAILURES ===================================",
                     "______________________________ test_loads_settings ______________________________", "",
                     "settings = Settings(env='test', base_url='https://%s', %s=SecretStr('**********'), timeout=30)" % (pick(HOSTS), key), "",
                     "    def test_loads_settings(settings):", ">       assert settings.timeout == 10", "E       AssertionError: assert 30 == 10",
                     "E        +  where 30 = Settings(env='test', %s=SecretStr('**********')).timeout" % key, "",
                     "tests/test_config.py:%d: AssertionError" % rng.randint(5, 80),
                     "========================= 1 failed in %.2fs =========================" % (rng.random() + 0.1)])
    return "masked", "agent/pytest-traceback", frame("pytest tests/test_config.py", txt)


def n_tool_json():
    inner = pick([
        "HTTP/1.1 401 Unauthorized\nx-request-id: %s\ncontent-type: application/json\n\n{\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}" % uuid4(),
        json.dumps({"id": "msg_01" + r(B62, 22), "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                    "usage": {"input_tokens": rng.randint(10, 5000), "output_tokens": rng.randint(1, 900)}, "stop_reason": "end_turn"}, indent=2),
        json.dumps({"name": proj(), "version": semver(), "scripts": {"build": "tsc -p .", "test": "vitest run"},
                    "dependencies": {"zod": "^3.23.8", "undici": "^6.21.0"}}, indent=2),
        "%s\n%s\n%s" % ("src/auth/token.ts", "src/auth/password-reset.ts", "tests/auth/token.test.ts"),
    ])
    obj = {"type": "tool_result", "tool_use_id": "toolu_01" + r(B62, 22), "content": inner, "is_error": False}
    if rng.random() < 0.5:
        obj = {"role": "tool", "tool_call_id": "call_" + r(B62, 24), "content": inner}
    return "ids", "agent/tool-result-json", json.dumps(obj)


def n_heredoc():
    names = rng.sample(SECRET_ENV_NAMES, 3)
    body = "\n".join("%s=${%s}" % (n, n) for n in names) + "\nLOG_LEVEL=info"
    txt = "$ cat > .env <<EOF\n%s\nEOF\n$ docker compose up -d\n[+] Running 3/3\n \u2714 Container %s-db-1   Started" % (body, proj())
    return "env-reference", "agent/heredoc", txt


def n_md_fence():
    name = pick(SECRET_ENV_NAMES)
    txt = pick([
        "To run it locally, create a `.env` file with your own key:\n\n```bash\nexport %s=\"<paste your key here>\"\nnpm run dev\n```\n\nNever commit this file; it is already in `.gitignore`." % name,
        "I did **not** hard-code the token. The workflow now reads it from repository secrets:\n\n```yaml\nenv:\n  %s: ${{ secrets.%s }}\n```" % (name, name),
        "Your key looks like `sk-...` followed by a long random string. Set it with:\n\n```\nsetx %s \"your-key\"\n```" % name,
    ])
    return "instructions", "agent/md-fence", txt


def n_ci_log():
    lines = ["##[group]Run docker/login-action@v3", "with:", "  registry: ghcr.io", "  username: %s" % user(), "  password: ***", "##[endgroup]",
             "Logging into ghcr.io...", "Login Succeeded!", "##[group]Run ./deploy.sh", "+ curl -H 'Authorization: Bearer ***' https://%s/v1/deploy" % pick(HOSTS),
             "{\"status\":\"queued\",\"id\":\"%s\"}" % uuid4(), "##[endgroup]"]
    txt = "\n".join("%s %s" % (t, ln) for t, ln in zip(ts_series(len(lines)), lines))
    return "masked", "agent/ci-log", txt


def n_checksums():
    style = rng.randrange(5)
    if style == 0:
        out = "\n".join("%s  %s" % (r(HEX, 64), fn) for fn in rng.sample(["dist/app-linux-amd64.tar.gz", "dist/app-darwin-arm64.tar.gz",
                                                                           "dist/app-windows-amd64.zip", "dist/checksums.txt.sig", "dist/sbom.json"], 3))
        return "sha256", "agent/sha256sum", frame("sha256sum dist/*", out)
    if style == 1:
        out = "requests==2.32.3 \\\n    --hash=sha256:%s \\\n    --hash=sha256:%s\nurllib3==2.2.3 \\\n    --hash=sha256:%s" % (r(HEX, 64), r(HEX, 64), r(HEX, 64))
        return "pip-hashes", "agent/cat-requirements", frame("head -n 6 requirements.lock", out)
    if style == 2:
        out = json.dumps({"node_modules/zod": {"version": "3.23.8", "resolved": "https://registry.npmjs.org/zod/-/zod-3.23.8.tgz",
                                               "integrity": "sha512-" + b64s(rb(64)), "license": "MIT"}}, indent=2)
        return "npm-integrity", "agent/package-lock", frame("jq '.packages[\"node_modules/zod\"]' package-lock.json", out)
    if style == 3:
        out = "\n".join("%s v%s h1:%s" % (m, semver(), b64s(rb(32))) for m in ["github.com/spf13/cobra", "golang.org/x/sync", "github.com/stretchr/testify"])
        return "go-sum", "agent/cat-go-sum", frame("head -n 3 go.sum", out)
    out = "%s: digest: sha256:%s size: %d" % (semver(), r(HEX, 64), rng.randint(1000, 9000))
    return "image-digest", "agent/docker-push", frame("docker push ghcr.io/acme/%s:%s" % (proj(), semver()), "The push refers to repository [ghcr.io/acme/%s]\n%s: Pushed\n%s" % (proj(), r(HEX, 12), out))


def n_public_keys():
    style = rng.randrange(6)
    if style == 0:
        k = "ssh-ed25519 " + b64s(b"\x00\x00\x00\x0bssh-ed25519\x00\x00\x00\x20" + rb(32))
        return "ssh-public-key", "agent/cat-pub", frame("cat ~/.ssh/id_ed25519.pub", "%s %s@%s" % (k, user(), proj()))
    if style == 1:
        body = "\n".join(wrap(b64s(bytes.fromhex("30820122300d06092a864886f70d01010105000382010f003082010a0282010100") + rb(256) + bytes.fromhex("0203010001")), 64))
        return "public-key-pem", "agent/cat-file", frame("cat keys/jwt_public.pem", "-----BEGIN PUBLIC KEY-----\n%s\n-----END PUBLIC KEY-----" % body)
    if style == 2:
        body = "\n".join(wrap(b64s(bytes.fromhex("308203") + rb(rng.randint(700, 900))), 64))
        return "certificate", "agent/openssl", frame("cat certs/ca.crt", "-----BEGIN CERTIFICATE-----\n%s\n-----END CERTIFICATE-----" % body)
    if style == 3:
        body = "\n".join(wrap(b64s(b"\x99\x02\x0d\x04" + rb(500)), 64))
        return "pgp-public-key", "agent/gpg-export", frame("gpg --armor --export ops@acme.io", "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n%s\n=%s\n-----END PGP PUBLIC KEY BLOCK-----" % (body, b64s(rb(3))))
    if style == 4:
        out = "[Interface]\nAddress = 10.8.0.2/24\nDNS = 1.1.1.1\n\n[Peer]\nPublicKey = %s\nAllowedIPs = 0.0.0.0/0\nEndpoint = vpn.acme.io:51820\nPersistentKeepalive = 25" % b64s(rb(32))
        return "wireguard-public-key", "agent/cat-file", frame("sudo wg showconf wg0 | grep -v PrivateKey", out)
    out = "# age recipients for sops\nage1%s\nage1%s" % (r(BECH, 58), r(BECH, 58))
    return "age-recipient", "agent/cat-file", frame("cat .sops/recipients.txt", out)


def n_redacted():
    txt = pick([
        "Your OpenAI key (sk-proj-...%s) was rotated on %s." % (r(B62, 4), iso()[:10]),
        "Active tokens:\n  ghp_****************************%s  (expires in 12 days)\n  github_pat_11****...****%s" % (r(B62, 4), r(B62, 4)),
        "SLACK_BOT_TOKEN=xoxb-****-****-****\nSTRIPE_SECRET_KEY=sk_live_\u2022\u2022\u2022\u2022\u2022\u2022\u2022\u2022%s" % r(B62, 4),
        "$ aws configure list\n      Name                    Value             Type    Location\n      ----                    -----             ----    --------\n   profile                <not set>             None    None\naccess_key     ****************%s shared-credentials-file\nsecret_key     ****************%s shared-credentials-file\n    region                %s      config-file    ~/.aws/config" % (r(UPD, 4), r(B62, 4), pick(REGIONS)),
        "password: [REDACTED]\napi_key: [REDACTED]\nuser: %s" % user(),
        "$ npm config list\n; \"user\" config from /home/%s/.npmrc\n\n//registry.npmjs.org/:_authToken = (protected)\nregistry = \"https://registry.npmjs.org/\"" % user(),
    ])
    return "redacted", "agent/cli-output" if txt.startswith("$") or "=" in txt.split("\n")[0] else "prose/redacted", txt


def n_doc_example():
    txt = pick([
        "From the AWS docs:\n\n```\n[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n```\n\nReplace these with your own values.",
        "export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\nexport AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\nexport AWS_DEFAULT_REGION=us-west-2",
        "The token format is `ghp_` followed by 36 alphanumeric characters; fine-grained tokens start with `github_pat_`.",
        "Slack bot tokens start with `xoxb-`, user tokens with `xoxp-`, and app-level tokens with `xapp-`.",
        "curl https://api.example.com/v1/things -H \"Authorization: Bearer $API_TOKEN\"",
    ])
    return "doc-example", "docs/snippet", txt


def n_urls_paths():
    txt = pick([
        "Cloning from https://github.com/acme/%s.git into /home/%s/src/%s" % (proj(), user(), proj()),
        "DATABASE_URL=postgresql://%s@db.internal:5432/%s?sslmode=require" % (pick(DBUSERS), pick(DBNAMES)),
        "postgres://db.internal:5432/%s  (credentials come from IAM auth)" % pick(DBNAMES),
        "Config lives in ~/.aws/credentials and ~/.config/gh/hosts.yml; keys in ~/.ssh/id_ed25519 (not shown).",
        "GET https://api.github.com/repos/acme/%s/pulls?state=open&per_page=100&page=2" % proj(),
        "redis://cache.internal:6379/0\namqp://rabbitmq:5672/%2F\nhttps://es.internal:9200/_cat/indices?v",
        "See https://%s/docs/authentication#rotating-api-keys for how to rotate keys." % pick(HOSTS),
    ])
    return "no-credentials", "prose/paths" if txt.startswith(("Config", "See", "Cloning")) else "url/plain", txt


def n_b64_text():
    sentence = pick(["hello world, this is just a test file", "The quick brown fox jumps over the lazy dog",
                     "{\"alg\":\"none\",\"note\":\"not a token\"}", "release notes for version %s" % semver(),
                     "user=guest;role=viewer;theme=dark", "Lorem ipsum dolor sit amet, consectetur adipiscing elit"])
    enc = b64s(sentence)
    return "b64-plain-text", "agent/base64", frame(pick(["echo '%s' | base64 -d" % enc, "base64 notes.txt"]), sentence if rng.random() < 0.5 else enc)


def n_ids():
    txt = pick([
        "request failed: x-request-id=%s trace_id=%s span_id=%s" % (uuid4(), r(HEX, 32), r(HEX, 16)),
        "traceparent: 00-%s-%s-01" % (r(HEX, 32), r(HEX, 16)),
        "Created order %s for customer cus_%s (idempotency key %s)" % (uuid4(), r(B62, 14), uuid4()),
        "$ kubectl get pods -n prod\nNAME                           READY   STATUS    RESTARTS   AGE\n%s-%s-%s   1/1     Running   0          %dh\n%s-%s-%s   1/1     Running   2          %dd" % (
            proj(), r(LOD, 10), r(LOD, 5), rng.randint(1, 23), proj(), r(LOD, 10), r(LOD, 5), rng.randint(1, 30)),
        "Build %s (%s) finished in %dm%02ds; artifact id %d" % (semver(), r(HEX, 40), rng.randint(1, 30), rng.randint(0, 59), rng.randint(10 ** 9, 10 ** 10)),
        "anthropic request id: req_011C%s, message id: msg_01%s" % (r(B62, 20), r(B62, 22)),
    ])
    return "ids", "agent/cli-output" if txt.startswith(("$", "Build")) else "log/ids", txt


def n_key_names():
    name = pick(SECRET_ENV_NAMES)
    txt = pick([
        "Add `%s` to your Vercel project settings (Settings \u2192 Environment Variables) and redeploy." % name,
        "key = os.environ.get(\"%s\")\nif not key:\n    raise RuntimeError(\"%s is not set\")" % (name, name),
        "$ gh secret set %s < /dev/stdin\n\u2713 Set Actions secret %s for acme/%s" % (name, name, proj()),
        "$ gh secret list\nNAME                     UPDATED\n%s    about 2 days ago\n%s    about 1 month ago" % (name, pick(SECRET_ENV_NAMES)),
        "error: environment variable %s is empty; export it or pass --token" % name,
    ])
    return "key-name-only", ("code/python" if txt.startswith("key =") else "agent/cli-output" if txt.startswith(("$", "error")) else "prose/instructions"), txt


def n_expired():
    txt = pick([
        "{\"error\":\"invalid_grant\",\"error_description\":\"The refresh token has expired. Please sign in again.\"}",
        "HTTP 401: {\"message\":\"Bad credentials\",\"documentation_url\":\"https://docs.github.com/rest\"}",
        "ERROR stripe.error.AuthenticationError: Invalid API Key provided: sk_live_********************%s" % r(B62, 4),
        "botocore.exceptions.ClientError: An error occurred (ExpiredToken) when calling the GetCallerIdentity operation: The security token included in the request is expired",
        "fatal: Authentication failed for 'https://github.com/acme/%s.git/'" % proj(),
        "the token expired again last night, can we make the refresh job run every 30 minutes?",
    ])
    return "auth-error", "log/auth-error", txt


NEG_LANG = {
    "en": ["I forgot my password, how do I reset it?", "the token expired again, where do I get a new one?"],
    "de": ["Ich habe mein Passwort vergessen, wie setze ich es zur\u00fcck?", "Wo trage ich den GITHUB_TOKEN in den Repository-Einstellungen ein?"],
    "es": ["La contrase\u00f1a debe tener al menos 12 caracteres y un s\u00edmbolo.", "el token expir\u00f3, \u00bfc\u00f3mo genero uno nuevo?"],
    "pt": ["Esqueci a senha do banco, quem pode resetar?", "Onde eu coloco a chave da API? No .env ou no cofre de segredos?"],
    "fr": ["Le mot de passe a expir\u00e9, il faut le changer avant vendredi.", "Ne mets jamais la cl\u00e9 d'API dans le d\u00e9p\u00f4t, utilise les secrets GitHub."],
    "it": ["Ho perso la password dell'ambiente di test, puoi rigenerarla?", "Il token \u00e8 scaduto ieri sera."],
    "nl": ["Mijn wachtwoord werkt niet meer na de migratie.", "Waar staat de API-sleutel? Niet in de repo, hoop ik."],
    "pl": ["Zapomnia\u0142em has\u0142a do bazy, kto mo\u017ce je zresetowa\u0107?", "Token wygas\u0142, trzeba wygenerowa\u0107 nowy w ustawieniach."],
    "ru": ["\u043c\u043e\u0439 \u0442\u043e\u043a\u0435\u043d \u0438\u0441\u0442\u0451\u043a, \u043a\u0430\u043a \u043f\u043e\u043b\u0443\u0447\u0438\u0442\u044c \u043d\u043e\u0432\u044b\u0439?",
           "\u041f\u0430\u0440\u043e\u043b\u044c \u0434\u043e\u043b\u0436\u0435\u043d \u0431\u044b\u0442\u044c \u043d\u0435 \u043a\u043e\u0440\u043e\u0447\u0435 12 \u0441\u0438\u043c\u0432\u043e\u043b\u043e\u0432."],
    "tr": ["\u015eifremi unuttum, nas\u0131l s\u0131f\u0131rlayabilirim?", "API anahtar\u0131n\u0131 repoya koyma, gizli de\u011fi\u015fken olarak ekle."],
    "ja": ["\u30c8\u30fc\u30af\u30f3\u306e\u6709\u52b9\u671f\u9650\u304c\u5207\u308c\u307e\u3057\u305f\u3002\u518d\u767a\u884c\u3057\u3066\u304f\u3060\u3055\u3044\u3002",
           "\u30d1\u30b9\u30ef\u30fc\u30c9\u306f12\u6587\u5b57\u4ee5\u4e0a\u306b\u3057\u3066\u304f\u3060\u3055\u3044\u3002"],
    "zh": ["\u6211\u628a API \u5bc6\u94a5\u653e\u5728\u73af\u5883\u53d8\u91cf OPENAI_API_KEY \u91cc\u4e86\uff0c\u4f46\u7a0b\u5e8f\u8bfb\u4e0d\u5230\u3002",
           "\u5bc6\u7801\u8fc7\u671f\u4e86\uff0c\u9700\u8981\u7ba1\u7406\u5458\u91cd\u7f6e\u3002"],
    "ko": ["\ube44\ubc00\ubc88\ud638\ub97c \uc78a\uc5b4\ubc84\ub838\uc5b4\uc694. \uc5b4\ub5bb\uac8c \ucd08\uae30\ud654\ud558\ub098\uc694?",
           "\ud1a0\ud070\uc774 \ub9cc\ub8cc\ub418\uc5c8\uc2b5\ub2c8\ub2e4. \uc0c8\ub85c \ubc1c\uae09\ud574 \uc8fc\uc138\uc694."],
    "hi": ["\u092e\u0948\u0902 \u0905\u092a\u0928\u093e \u092a\u093e\u0938\u0935\u0930\u094d\u0921 \u092d\u0942\u0932 \u0917\u092f\u093e, \u0930\u0940\u0938\u0947\u091f \u0915\u0948\u0938\u0947 \u0915\u0930\u0942\u0901?",
           "API key \u0915\u094b repo \u092e\u0947\u0902 commit \u092e\u0924 \u0915\u0930\u094b, secrets \u092e\u0947\u0902 \u0930\u0916\u094b\u0964"],
    "ar": ["\u0646\u0633\u064a\u062a \u0643\u0644\u0645\u0629 \u0627\u0644\u0645\u0631\u0648\u0631\u060c \u0643\u064a\u0641 \u0623\u0639\u064a\u062f \u062a\u0639\u064a\u064a\u0646\u0647\u0627\u061f",
           "\u0627\u0646\u062a\u0647\u062a \u0635\u0644\u0627\u062d\u064a\u0629 \u0627\u0644\u0631\u0645\u0632 \u0627\u0644\u0645\u0645\u064a\u0632\u060c \u064a\u0631\u062c\u0649 \u0625\u0646\u0634\u0627\u0621 \u0631\u0645\u0632 \u062c\u062f\u064a\u062f."],
}


NEG_LANG_LEAD = {
    "en": "I put this in my .env but the app still says the key is missing:",
    "de": "Ich habe das in meine .env geschrieben, aber die App meldet immer noch, dass der Schl\u00fcssel fehlt:",
    "es": "Puse esto en mi .env pero la app sigue diciendo que falta la clave:",
    "pt": "Coloquei isso no meu .env, mas o app continua dizendo que a chave est\u00e1 faltando:",
    "fr": "J'ai mis \u00e7a dans mon .env mais l'appli dit toujours que la cl\u00e9 manque :",
    "it": "Ho messo questo nel mio .env ma l'app dice ancora che manca la chiave:",
    "nl": "Ik heb dit in mijn .env gezet, maar de app zegt nog steeds dat de sleutel ontbreekt:",
    "pl": "Wpisa\u0142em to do .env, ale aplikacja dalej m\u00f3wi, \u017ce brakuje klucza:",
    "ru": "\u042f \u0434\u043e\u0431\u0430\u0432\u0438\u043b \u044d\u0442\u043e \u0432 .env, \u043d\u043e \u043f\u0440\u0438\u043b\u043e\u0436\u0435\u043d\u0438\u0435 \u0432\u0441\u0451 \u0440\u0430\u0432\u043d\u043e \u043f\u0438\u0448\u0435\u0442, \u0447\u0442\u043e \u043a\u043b\u044e\u0447\u0430 \u043d\u0435\u0442:",
    "tr": "Bunu .env dosyama koydum ama uygulama h\u00e2l\u00e2 anahtar\u0131n eksik oldu\u011funu s\u00f6yl\u00fcyor:",
    "ja": ".env\u306b\u3053\u308c\u3092\u66f8\u3044\u305f\u306e\u306b\u3001\u307e\u3060\u30ad\u30fc\u304c\u306a\u3044\u3068\u8a00\u308f\u308c\u307e\u3059\uff1a",
    "zh": "\u6211\u5728 .env \u91cc\u5199\u4e86\u8fd9\u4e9b\uff0c\u4f46\u7a0b\u5e8f\u8fd8\u662f\u8bf4\u7f3a\u5c11\u5bc6\u94a5\uff1a",
    "ko": ".env\uc5d0 \uc774\ub807\uac8c \ub123\uc5c8\ub294\ub370 \uc571\uc774 \uc5ec\uc804\ud788 \ud0a4\uac00 \uc5c6\ub2e4\uace0 \ud574\uc694:",
    "hi": "\u092e\u0948\u0902\u0928\u0947 \u092f\u0939 .env \u092e\u0947\u0902 \u0921\u093e\u0932\u093e, \u092b\u093f\u0930 \u092d\u0940 app \u0915\u0939 \u0930\u0939\u093e \u0939\u0948 \u0915\u093f key missing \u0939\u0948:",
    "ar": "\u0648\u0636\u0639\u062a \u0647\u0630\u0627 \u0641\u064a \u0645\u0644\u0641 .env \u0644\u0643\u0646 \u0627\u0644\u062a\u0637\u0628\u064a\u0642 \u0645\u0627 \u0632\u0627\u0644 \u064a\u0642\u0648\u0644 \u0625\u0646 \u0627\u0644\u0645\u0641\u062a\u0627\u062d \u0645\u0641\u0642\u0648\u062f:",
}


def n_lang_multiline(lang):
    names = rng.sample(SECRET_ENV_NAMES, 2)
    cfg = "\n".join("%s=%s" % (n, pick(["<YOUR_%s>" % n, "${%s}" % n, "xxxxxxxxxxxxxxxx", "your-key-here"])) for n in names)
    err = pick(["KeyError: '%s'" % names[0], "Error: %s is not set" % names[0],
                "pydantic_core._pydantic_core.ValidationError: 1 validation error for Settings\n%s\n  Field required [type=missing, input_value={}, input_type=dict]" % names[0].lower()])
    return "%s\n\n```\n%s\nLOG_LEVEL=debug\n```\n\n```\n%s\n```" % (NEG_LANG_LEAD[lang], cfg, err)


NEG_GENERATORS = [
    (n_env_example, 12), (n_env_sort, 10), (n_kubectl, 10), (n_docker_inspect, 8), (n_terraform, 7), (n_git_diff, 10),
    (n_git_log, 8), (n_pytest, 8), (n_tool_json, 8), (n_heredoc, 7), (n_md_fence, 9), (n_ci_log, 8), (n_checksums, 10),
    (n_public_keys, 10), (n_redacted, 10), (n_doc_example, 5), (n_urls_paths, 8), (n_b64_text, 6), (n_ids, 9),
    (n_key_names, 9), (n_expired, 6),
]


# --------------------------------------------------------------------------
# self-checks for negatives: none may contain a credential shape we generate
# --------------------------------------------------------------------------

SHAPES = [re.compile(p) for p in [
    r"AKIA[A-Z2-7]{16}", r"ASIA[A-Z2-7]{16}", r"AIza[\w-]{35}", r"GOCSPX-[\w-]{20,}", r"ya29\.[\w-]{20,}", r"dop_v1_[0-9a-f]{64}",
    r"LTAI[A-Za-z0-9]{12,}", r"AKID[A-Za-z0-9]{32}", r"nfp_[A-Za-z0-9]{30,}", r"sbp_[0-9a-f]{40}", r"sk-proj-[\w-]{20,}",
    r"sk-svcacct-[\w-]{20,}", r"sk-ant-[\w-]{20,}", r"T3BlbkFJ", r"hf_[A-Za-z]{30,}", r"gsk_[A-Za-z0-9]{40,}", r"r8_[A-Za-z0-9]{30,}",
    r"pplx-[A-Za-z0-9]{40,}", r"xai-[A-Za-z0-9]{60,}", r"sk-or-v1-[0-9a-f]{64}", r"lsv2_(pt|sk)_", r"pcsk_\w{20,}", r"sk-[0-9a-f]{32}",
    r"gh[pousr]_[A-Za-z0-9]{36}", r"github_pat_\w{40,}", r"gl(pat|rt|dt|ptt)-[\w-]{20,}", r"ATBB[A-Za-z0-9]{32}", r"ATATT3[\w=-]{50,}",
    r"npm_[A-Za-z0-9]{36}", r"pypi-AgE", r"rubygems_[0-9a-f]{48}", r"oy2[a-z0-9]{43}", r"dckr_pat_[\w-]{20,}", r"\bcio[A-Za-z0-9]{32}\b",
    r"AKCp[A-Za-z0-9]{60,}", r"CLOJARS_[0-9a-f]{60}", r"atlasv1\.", r"hvs\.[\w-]{20,}", r"pul-[0-9a-f]{40}",
    r"[sr]k_(live|test)_[A-Za-z0-9]{16,}", r"whsec_[A-Za-z0-9]{20,}", r"EAAA[\w-]{50,}", r"sq0csp-[\w-]{40,}", r"access_token\$production\$",
    r"shp(at|ss|ca|pa)_[0-9a-f]{32}", r"FLWSECK", r"xox[baprs]-[0-9A-Za-z-]{10,}", r"xapp-\d-", r"hooks\.slack\.com/services/T\w+/B\w+/\w+",
    r"discord(app)?\.com/api/webhooks/\d+/[\w-]+", r"\b\d{8,10}:AA[\w-]{33}\b", r"SG\.[\w-]{22}\.[\w-]{43}", r"key-[0-9a-f]{32}",
    r"NRAK-[A-Z0-9]{27}", r"[0-9a-f]{36}NRAL", r"sntry[us]_", r"glsa_\w{32}", r"glc_[\w=]{30,}", r"lin_api_\w{40}", r"ntn_\w{40,}",
    r"secret_[A-Za-z0-9]{43}", r"pat[A-Za-z0-9]{14}\.[0-9a-f]{64}", r"PMAK-[0-9a-f]{24}", r"dt0c01\.", r"figd_", r"pat-(na|eu)1-",
    r"dp\.(pt|st|sa|ct)\.", r"ops_eyJ", r"AGE-SECRET-KEY-1", r"CCIPAT_", r"CFPAT-", r"\bsk\.eyJ", r"dapi[0-9a-f]{32}",
    r"pscale_(pw|tkn|oauth)_", r"pnu_[A-Za-z0-9]{36}", r"AAAA[\w-]{7}:APA91b", r"cloudinary://\d+:", r"BEGIN [A-Z ]*PRIVATE KEY",
    r"eyJ[\w-]{10,}\.eyJ[\w-]{10,}\.[\w-]{10,}", r"\b[12]/\d{16}/\d{16}:[0-9a-f]{32}", r"[0-9a-f]{32}-us\d{1,2}\b",
    r"AccountKey=[A-Za-z0-9+/]{20,}", r"[?&]sig=[\w%]{20,}", r"[A-Za-z0-9]{3}8Q~[\w.~-]{30,}", r"IQoJb3JpZ2luX2Vj",
    r"rzp_live_", r"Password=[^;\s]{4,}", r"connect\.sid=", r"sessionid=\w{20,}",
]]
ASSIGN = re.compile(r"(?i)(?<![:/\w.-])[\w.-]*(?:secret|token|passw(?:or)?d|pwd|api[_-]?key|apikey|access[_-]?key|auth|credential|private[_-]?key|psk)"
                    r"[\w.-]*[\"']?[ \t]*[:=][ \t]*[\"']?([^\s\"',;()]+)")
URLPW = re.compile(r"[a-z][a-z0-9+.-]*://([^/\s:@]*):([^@\s/]*)@")
HDR = re.compile(r"(?i)authorization:\s*(?:bearer|basic|token|bot|ssws|api-token)\s+([^\s'\"]+)")
MARKERS = ["${", "{{", "<", "*", "xxxx", "XXXX", "REDACTED", "redacted", "changeme", "EXAMPLE", "example", "your", "YOUR", "...",
           "\u2026", "\u2022", "os.environ", "getenv", "secrets.", "op://", "vault:", "arn:aws:secretsmanager", "REPLACE", "$(", "$"]


def looks_random(v):
    v = v.strip("\"'`")
    if len(v) < 10:
        return False
    if any(m in v for m in MARKERS):
        return False
    if re.match(r"[a-z][a-z0-9+.-]*://", v) and not URLPW.search(v):
        return False
    if v.startswith(("/", "~/", "./")):
        return False
    classes = sum(bool(re.search(p, v)) for p in (r"[A-Z]", r"[a-z]", r"[0-9]"))
    return classes >= 2 and (re.search(r"[0-9]", v) is not None or re.search(r"[^\w]", v) is not None)


def decoded_blobs(text):
    for m in re.finditer(r"[A-Za-z0-9+/]{24,}={0,2}", text):
        b = m.group(0)
        try:
            d = base64.b64decode(b + "=" * (-len(b) % 4), validate=False).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            continue
        if d.isprintable() or "\n" in d:
            yield d


def negative_problems(text, depth=0):
    probs = []
    for rx in SHAPES:
        for m in rx.finditer(text):
            if "EXAMPLE" in text[m.start():m.end() + 24]:
                continue
            probs.append("shape %s: %r" % (rx.pattern, m.group(0)))
    for m in ASSIGN.finditer(text):
        if looks_random(m.group(1)):
            probs.append("assignment: %r" % m.group(0))
    for m in URLPW.finditer(text):
        if m.group(2) and not any(x in m.group(2) for x in MARKERS):
            probs.append("url password: %r" % m.group(0))
    for m in HDR.finditer(text):
        if not any(x in m.group(1) for x in MARKERS):
            probs.append("auth header: %r" % m.group(0))
    if depth == 0:
        for d in decoded_blobs(text):
            probs.extend("in base64: " + p for p in negative_problems(d, 1))
    return probs


# --------------------------------------------------------------------------
# driver
# --------------------------------------------------------------------------

DB_FAMILIES = ("postgres", "mysql", "mongodb", "redis", "rabbitmq", "mssql", "elasticsearch", "password")


class Cycle(object):
    def __init__(self, items):
        self.items = list(items)
        self.queue = []

    def next(self, ok=lambda item: True):
        for _ in range(3 * len(self.items) + 1):
            if not self.queue:
                self.queue = list(self.items)
                rng.shuffle(self.queue)
            item = self.queue.pop(0)
            if ok(item):
                return item
            self.queue.append(item)
        raise RuntimeError("no acceptable item")


def c_http_bearer(f, v, s):
    if rng.random() < 0.5:
        t = "%s /v1/%s HTTP/1.1\nHost: %s\nAuthorization: Bearer %s\nAccept: application/json\nUser-Agent: %s/%s" % (
            pick(["GET", "POST"]), pick(["me", "projects", "events", "usage"]), f.domain, v, pick(["python-httpx", "axios", "okhttp"]), semver())
    else:
        t = "curl -sS https://%s/v1/%s -H \"Authorization: Bearer %s\" | jq '.data[0]'" % (f.domain, pick(["me", "projects", "usage"]), v)
    return t, s


def build():
    rows = []

    def add(text, secret, family, kind, ctx):
        if secret is not None:
            assert secret and secret in text, (family, kind, ctx, secret)
            assert len(secret) >= 8, (family, kind, ctx, secret)
        rows.append({"text": text, "secret": secret, "source": "gen-held5:%s:%s:%s" % (family, kind, ctx)})

    agent = Cycle(AGENT_CTX)
    place = Cycle(PLACE_CTX)
    langs = Cycle(LANGS)
    for f in FAMS:
        for slot in f.slots:
            v, s = f.value()
            if slot == "A":
                name, fn = agent.next()
                text, sec = fn(f, v, s)
            elif slot == "P":
                if f.bearer and rng.random() < 0.3:
                    name, fn = "http/bearer", c_http_bearer
                else:
                    name, fn = place.next(lambda it: not (it[0] == "config/xml" and not safe_plain(v)))
                text, sec = fn(f, v, s)
                if name == "place/query" and quote(v, safe="") != v:
                    name = "place/url-encoded"
            else:
                lang = langs.next()
                name = "lang/" + lang
                if f.family in DB_FAMILIES:
                    pw = password()
                    text, sec = lang_text(lang, f, pw, True), pw
                else:
                    text, sec = lang_text(lang, f, v, False), s
            add(text, sec, f.family, f.kind, name)
        if f.family == "password":
            for lang in LANGS:
                pw = password()
                add(lang_text(lang, f, pw, True), pw, "password", "prose-password", "lang/" + lang)
    for fn in SPECIFIC:
        for family, kind, ctx, text, sec in fn():
            add(text, sec, family, kind, ctx)

    positives = len(rows)
    seen = set(r_["text"] for r_ in rows)
    for gen, count in NEG_GENERATORS:
        for _ in range(count):
            for _attempt in range(60):
                kind, ctx, text = gen()
                if text not in seen:
                    break
            else:
                continue  # generator has run out of distinct texts
            seen.add(text)
            add(text, None, "negative", kind, ctx)
    for lang in LANGS:
        for t in NEG_LANG[lang]:
            if rng.random() < 0.4:
                t = "%s\n\n```\n%s\n```" % (t, pick(PASTED_LOGS).format(n=rng.randint(10, 99), m=rng.randint(100, 300), rid=uuid4()))
            add(t, None, "negative", "prose", "lang/" + lang)
        add(n_lang_multiline(lang), None, "negative", "placeholder", "lang/" + lang)

    # ---- checks
    secrets = [r_["secret"] for r_ in rows if r_["secret"] is not None]
    assert len(secrets) == len(set(secrets)), "duplicate secrets"
    neg_texts = [r_["text"] for r_ in rows if r_["secret"] is None]
    for t in neg_texts:
        probs = negative_problems(t)
        assert not probs, (probs, t)
        for sec in secrets:
            assert sec not in t
    assert len(set(r_["text"] for r_ in rows)) == len(rows), "duplicate texts"
    return rows, positives


def main():
    rows, positives = build()
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "gen_heldout5.jsonl")
    with open(out, "w", encoding="utf-8", newline="\n") as fh:
        for row in rows:
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    families = sorted(set(r_["source"].split(":")[1] for r_ in rows if r_["secret"] is not None))
    print("wrote %s: %d rows (%d positive, %d negative), %d families" % (
        out, len(rows), positives, len(rows) - positives, len(families)))


if __name__ == "__main__":
    main()
