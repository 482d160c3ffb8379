"""Held-out credential corpus, set 3 (issue 12, "Measure it honestly"): writes gen_heldout3.jsonl.

Written blind: its author read neither Segue's redaction code (server/segue/redact/) nor the kinds, vendor
lists or contexts of the other generators (generate.py, generate_heldout2.py) or their .jsonl contents; only
the scoring harness (tests/test_redact_generalise.py) and the first row of gen_heldout2.jsonl, for the row
format. Nothing here comes from another secret scanner's test samples or rule files.

How it was built: 195 credential kinds (cloud, payment, messaging, CI/CD and secrets managers, package
registries, databases, monitoring, AI APIs, SaaS, auth, private keys, passwords), each a shape taken from the
vendor's published format (prefix, infix, charset, length; where the docs give only "a random string", a keyed
value of the documented length), with a fresh random body drawn from a seeded random.Random, so the whole file
is a pure function of SEED. Each kind is placed in two or three contexts (about 500 positive rows in all) of an
AI coding session, chosen from eight families: prompt (what a user types), shell (commands an agent runs),
output (what those commands print), config (files read or written), code (several languages), url (query,
userinfo, path, percent-encoded), header (HTTP), encoded (base64 of a PEM or of a config). About 120 negatives are look-alikes an ordinary session is full of.

Row: {"text", "secret", "source"}; secret is None for negatives; one secret per positive row, present verbatim
in text. source is "gen-held3:<vendor>:<kind>:<family>/<context>" or "gen-held3:neg:<kind>:<family>/<context>".
Run: python tests/data/redaction/generate_heldout3.py (stdlib only, no network).
Scored once, untuned, against main at 20d58ce (Redactor(environ={})): recall 0.966 (485/502), false
positives 0.047 (6/127). Only totals were looked at; the rows missed or changed were not read.
"""

# ruff: noqa: E501  (data tables and context templates read better on one line)
from __future__ import annotations

import base64
import json
import random
import re
import string
import urllib.parse
from collections.abc import Callable
from pathlib import Path

SEED = 20261203
OUT = Path(__file__).parent / "gen_heldout3.jsonl"

LOWER, UPPER, DIG = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOWER + UPPER + DIG
HEX = "0123456789abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32L = LOWER + "234567"
BECH32 = "qpzry9x8gf2tvdw0s3jn54khce6mua7l".upper()

R = random.Random(SEED)


def rs(chars: str, n: int) -> str:
    return "".join(R.choice(chars) for _ in range(n))


def uuid4() -> str:
    h = rs(HEX, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{R.choice('89ab')}{h[17:20]}-{h[20:]}"


def b64bytes(n: int, url: bool = False, pad: bool = True) -> str:
    raw = bytes(R.getrandbits(8) for _ in range(n))
    s = (base64.urlsafe_b64encode if url else base64.b64encode)(raw).decode()
    return s if pad else s.rstrip("=")


def b64s(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


def jwt(claims: dict) -> str:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d, separators=(",", ":")).encode()).decode().rstrip("=")  # noqa: E731
    return f"{enc({'alg': 'HS256', 'typ': 'JWT'})}.{enc(claims)}.{b64bytes(32, url=True, pad=False)}"


WORDS = ["harbor", "maple", "quartz", "falcon", "violet", "ember", "cobalt", "meadow", "tundra", "orbit",
         "saffron", "glacier", "pepper", "lantern", "willow", "thunder", "nectar", "copper", "rapids", "juniper"]


def password() -> str:
    style = R.randrange(4)
    if style == 0:
        return rs(ALNUM + "!#%&*+-.=?@^_~", R.randint(14, 22))
    if style == 1:
        return R.choice(WORDS).capitalize() + str(R.randint(1970, 2029)) + R.choice("!#%&*?@") + R.choice(WORDS)
    if style == 2:
        return "-".join(R.sample(WORDS, 4)) + str(R.randint(10, 99))
    return rs(ALNUM, R.randint(18, 32))


def pem_body(lead: str, nchars: int) -> str:
    body = lead + rs(B64, nchars - len(lead) - 2) + "=="
    return "\n".join(body[i:i + 64] for i in range(0, len(body), 64))


# ---------------------------------------------------------------- kinds
# (vendor, kind, shape, env var / key, make) -- shape picks the contexts a kind can appear in:
#   tok  an opaque token: every family; keyed  a value only a key makes a credential (hex, UUID, plain
#   alnum): no bare contexts; pw  a password; conn  a password inside a connection string (make returns
#   (password, url)); pem  a private key (make returns (label, body)); hook  a secret URL path segment
#   (make returns (secret, url)); basic  user:password in base64.
Kind = tuple[str, str, str, str, Callable[[], object]]

KINDS: list[Kind] = [
    # cloud
    ("aws", "access-key-id", "tok", "AWS_ACCESS_KEY_ID", lambda: "AKIA" + rs(UPPER + "234567", 16)),
    ("aws", "secret-access-key", "keyed", "AWS_SECRET_ACCESS_KEY", lambda: rs(ALNUM + "+/", 40)),
    ("gcp", "api-key", "tok", "GOOGLE_API_KEY", lambda: "AIza" + rs(B64URL, 35)),
    ("gcp", "oauth-client-secret", "tok", "GOOGLE_CLIENT_SECRET", lambda: "GOCSPX-" + rs(B64URL, 28)),
    ("gcp", "oauth-access-token", "tok", "GOOGLE_ACCESS_TOKEN", lambda: "ya29.a0" + rs(B64URL, 150)),
    ("gcp", "oauth-refresh-token", "tok", "GOOGLE_REFRESH_TOKEN", lambda: "1//0" + rs(B64URL, 99)),
    ("azure", "storage-account-key", "keyed", "AZURE_STORAGE_KEY", lambda: b64bytes(64)),
    ("azure", "client-secret", "tok", "AZURE_CLIENT_SECRET",
     lambda: rs(ALNUM, 3) + R.choice(DIG) + "Q~" + rs(ALNUM + "_.~-", 34)),
    ("azure", "devops-pat", "keyed", "AZURE_DEVOPS_PAT", lambda: rs(B32L, 52)),
    ("alibaba", "accesskey-secret", "keyed", "ALIBABA_CLOUD_ACCESS_KEY_SECRET", lambda: rs(ALNUM, 30)),
    ("tencent", "secret-key", "keyed", "TENCENTCLOUD_SECRET_KEY", lambda: rs(ALNUM, 32)),
    ("digitalocean", "pat", "tok", "DIGITALOCEAN_TOKEN", lambda: "dop_v1_" + rs(HEX, 64)),
    ("digitalocean", "oauth-token", "tok", "DO_OAUTH_TOKEN", lambda: "doo_v1_" + rs(HEX, 64)),
    ("linode", "pat", "keyed", "LINODE_TOKEN", lambda: rs(HEX, 64)),
    ("hetzner", "api-token", "keyed", "HCLOUD_TOKEN", lambda: rs(ALNUM, 64)),
    ("vultr", "api-key", "keyed", "VULTR_API_KEY", lambda: rs(UPPER + DIG, 36)),
    ("ibm", "cloud-api-key", "keyed", "IBMCLOUD_API_KEY", lambda: rs(B64URL, 44)),
    ("cloudflare", "user-api-token", "tok", "CLOUDFLARE_API_TOKEN", lambda: "cfut_" + rs(ALNUM, 40) + rs(HEX, 8)),
    ("cloudflare", "global-api-key", "tok", "CLOUDFLARE_API_KEY", lambda: "cfk_" + rs(ALNUM, 40) + rs(HEX, 8)),
    ("cloudflare", "legacy-api-token", "keyed", "CF_API_TOKEN", lambda: rs(B64URL, 40)),
    ("flyio", "access-token", "tok", "FLY_API_TOKEN", lambda: "fo1_" + rs(B64URL, 43)),
    ("vercel", "token", "keyed", "VERCEL_TOKEN", lambda: rs(ALNUM, 24)),
    ("netlify", "pat", "tok", "NETLIFY_AUTH_TOKEN", lambda: "nfp_" + rs(ALNUM, 36)),
    ("heroku", "api-key", "tok", "HEROKU_API_KEY", lambda: "HRKU-AA" + rs(B64URL, 58)),
    ("heroku", "legacy-api-key", "keyed", "HEROKU_API_KEY", uuid4),
    ("render", "api-key", "tok", "RENDER_API_KEY", lambda: "rnd_" + rs(ALNUM, 32)),
    ("supabase", "access-token", "tok", "SUPABASE_ACCESS_TOKEN", lambda: "sbp_" + rs(HEX, 40)),
    ("supabase", "secret-key", "tok", "SUPABASE_SECRET_KEY", lambda: "sb_secret_" + rs(B64URL, 31)),
    ("planetscale", "password", "tok", "PLANETSCALE_PASSWORD", lambda: "pscale_pw_" + rs(B64URL, 43)),
    ("planetscale", "service-token", "tok", "PLANETSCALE_SERVICE_TOKEN", lambda: "pscale_tkn_" + rs(B64URL, 43)),
    ("neon", "api-key", "tok", "NEON_API_KEY", lambda: "napi_" + rs(LOWER + DIG, 64)),
    # payment
    ("stripe", "live-secret-key", "tok", "STRIPE_SECRET_KEY", lambda: "sk_live_51" + rs(ALNUM, 97)),
    ("stripe", "restricted-key", "tok", "STRIPE_RESTRICTED_KEY", lambda: "rk_live_51" + rs(ALNUM, 97)),
    ("stripe", "webhook-secret", "tok", "STRIPE_WEBHOOK_SECRET", lambda: "whsec_" + rs(ALNUM, 32)),
    ("stripe", "test-secret-key", "tok", "STRIPE_TEST_KEY", lambda: "sk_test_51" + rs(ALNUM, 97)),
    ("square", "access-token", "tok", "SQUARE_ACCESS_TOKEN", lambda: "EAAA" + rs(B64URL, 60)),
    ("square", "app-secret", "tok", "SQUARE_APPLICATION_SECRET", lambda: "sq0csp-" + rs(B64URL, 43)),
    ("braintree", "access-token", "tok", "BRAINTREE_ACCESS_TOKEN",
     lambda: "access_token$production$" + rs(LOWER + DIG, 16) + "$" + rs(HEX, 32)),
    ("razorpay", "key-secret", "keyed", "RAZORPAY_KEY_SECRET", lambda: rs(ALNUM, 24)),
    ("paystack", "secret-key", "tok", "PAYSTACK_SECRET_KEY", lambda: "sk_live_" + rs(HEX, 40)),
    ("flutterwave", "secret-key", "tok", "FLW_SECRET_KEY", lambda: "FLWSECK-" + rs(HEX, 32) + "-X"),
    ("mollie", "live-api-key", "tok", "MOLLIE_API_KEY", lambda: "live_" + rs(ALNUM, 30)),
    ("plaid", "secret", "keyed", "PLAID_SECRET", lambda: rs(HEX, 30)),
    ("shopify", "admin-access-token", "tok", "SHOPIFY_ACCESS_TOKEN", lambda: "shpat_" + rs(HEX, 32)),
    ("shopify", "shared-secret", "tok", "SHOPIFY_API_SECRET", lambda: "shpss_" + rs(HEX, 32)),
    ("gocardless", "live-access-token", "tok", "GOCARDLESS_ACCESS_TOKEN", lambda: "live_" + rs(B64URL, 40)),
    # messaging / email
    ("slack", "bot-token", "tok", "SLACK_BOT_TOKEN",
     lambda: f"xoxb-{rs(DIG, 12)}-{rs(DIG, 13)}-{rs(ALNUM, 24)}"),
    ("slack", "user-token", "tok", "SLACK_USER_TOKEN",
     lambda: f"xoxp-{rs(DIG, 12)}-{rs(DIG, 12)}-{rs(DIG, 13)}-{rs(HEX, 32)}"),
    ("slack", "app-token", "tok", "SLACK_APP_TOKEN",
     lambda: f"xapp-1-A{rs(UPPER + DIG, 10)}-{rs(DIG, 13)}-{rs(HEX, 64)}"),
    ("slack", "webhook", "hook", "SLACK_WEBHOOK_URL", lambda: (
        s := rs(ALNUM, 24), f"https://hooks.slack.com/services/T{rs(UPPER + DIG, 10)}/B{rs(UPPER + DIG, 10)}/{s}")),
    ("discord", "bot-token", "tok", "DISCORD_BOT_TOKEN",
     lambda: b64s(rs(DIG, 18)).rstrip("=") + "." + rs(B64URL, 6) + "." + rs(B64URL, 38)),
    ("discord", "webhook", "hook", "DISCORD_WEBHOOK", lambda: (
        s := rs(B64URL, 68), f"https://discord.com/api/webhooks/{rs(DIG, 19)}/{s}")),
    ("telegram", "bot-token", "tok", "TELEGRAM_BOT_TOKEN", lambda: f"{R.randint(10**8, 10**10)}:AA{rs(B64URL, 33)}"),
    ("twilio", "auth-token", "keyed", "TWILIO_AUTH_TOKEN", lambda: rs(HEX, 32)),
    ("sendgrid", "api-key", "tok", "SENDGRID_API_KEY", lambda: f"SG.{rs(B64URL, 22)}.{rs(B64URL, 43)}"),
    ("mailgun", "api-key", "tok", "MAILGUN_API_KEY", lambda: "key-" + rs(HEX, 32)),
    ("mailchimp", "api-key", "tok", "MAILCHIMP_API_KEY", lambda: rs(HEX, 32) + f"-us{R.randint(1, 21)}"),
    ("postmark", "server-token", "keyed", "POSTMARK_SERVER_TOKEN", uuid4),
    ("vonage", "api-secret", "keyed", "VONAGE_API_SECRET", lambda: rs(ALNUM, 16)),
    ("resend", "api-key", "tok", "RESEND_API_KEY", lambda: f"re_{rs(ALNUM, 8)}_{rs(ALNUM, 24)}"),
    ("mailersend", "api-token", "tok", "MAILERSEND_API_KEY", lambda: "mlsn." + rs(HEX, 64)),
    ("brevo", "api-key", "tok", "BREVO_API_KEY", lambda: f"xkeysib-{rs(HEX, 64)}-{rs(ALNUM, 16)}"),
    ("intercom", "access-token", "tok", "INTERCOM_ACCESS_TOKEN",
     lambda: b64s(f"tok:{uuid4()}:1:0").rstrip("=")),
    ("zendesk", "api-token", "keyed", "ZENDESK_API_TOKEN", lambda: rs(ALNUM, 40)),
    ("pusher", "app-secret", "keyed", "PUSHER_APP_SECRET", lambda: rs(HEX, 20)),
    ("ably", "api-key", "tok", "ABLY_API_KEY", lambda: f"{rs(ALNUM, 6)}.{rs(ALNUM, 6)}:{rs(B64URL, 43)}"),
    # vcs / ci / secrets managers
    ("github", "classic-pat", "tok", "GITHUB_TOKEN", lambda: "ghp_" + rs(ALNUM, 36)),
    ("github", "fine-grained-pat", "tok", "GH_TOKEN", lambda: f"github_pat_11{rs(UPPER + DIG, 20)}_{rs(ALNUM, 59)}"),
    ("github", "app-installation-token", "tok", "GITHUB_APP_TOKEN", lambda: "ghs_" + rs(ALNUM, 36)),
    ("github", "oauth-token", "tok", "GITHUB_OAUTH_TOKEN", lambda: "gho_" + rs(ALNUM, 36)),
    ("gitlab", "pat", "tok", "GITLAB_TOKEN", lambda: "glpat-" + rs(B64URL, 20)),
    ("gitlab", "runner-token", "tok", "CI_RUNNER_TOKEN", lambda: "glrt-" + rs(B64URL, 20)),
    ("gitlab", "deploy-token", "tok", "GITLAB_DEPLOY_TOKEN", lambda: "gldt-" + rs(B64URL, 20)),
    ("bitbucket", "app-password", "tok", "BITBUCKET_APP_PASSWORD", lambda: "ATBB" + rs(ALNUM, 28) + rs(HEX.upper(), 8)),
    ("atlassian", "api-token", "tok", "JIRA_API_TOKEN",
     lambda: "ATATT3xFfGF0" + rs(B64URL, 170) + "=" + rs(HEX.upper(), 8)),
    ("circleci", "personal-token", "tok", "CIRCLECI_TOKEN", lambda: f"CCIPAT_{rs(ALNUM, 22)}_{rs(HEX, 40)}"),
    ("buildkite", "api-token", "tok", "BUILDKITE_API_TOKEN", lambda: "bkua_" + rs(HEX, 40)),
    ("jenkins", "api-token", "keyed", "JENKINS_API_TOKEN", lambda: "11" + rs(HEX, 32)),
    ("sonarqube", "user-token", "tok", "SONAR_TOKEN", lambda: "squ_" + rs(HEX, 40)),
    ("sonarqube", "project-token", "tok", "SONAR_PROJECT_TOKEN", lambda: "sqp_" + rs(HEX, 40)),
    ("snyk", "api-token", "keyed", "SNYK_TOKEN", uuid4),
    ("terraform", "cloud-token", "tok", "TFE_TOKEN", lambda: f"{rs(ALNUM, 14)}.atlasv1.{rs(ALNUM, 67)}"),
    ("pulumi", "access-token", "tok", "PULUMI_ACCESS_TOKEN", lambda: "pul-" + rs(HEX, 40)),
    ("hashicorp", "vault-service-token", "tok", "VAULT_TOKEN", lambda: "hvs." + rs(B64URL, 90)),
    ("hashicorp", "vault-batch-token", "tok", "VAULT_BATCH_TOKEN", lambda: "hvb." + rs(B64URL, 130)),
    ("doppler", "service-token", "tok", "DOPPLER_TOKEN", lambda: f"dp.st.prd.{rs(ALNUM, 43)}"),
    ("doppler", "personal-token", "tok", "DOPPLER_PERSONAL_TOKEN", lambda: "dp.pt." + rs(ALNUM, 43)),
    ("onepassword", "service-account-token", "tok", "OP_SERVICE_ACCOUNT_TOKEN",
     lambda: "ops_eyJ" + rs(B64URL, 240)),
    ("octopus", "api-key", "tok", "OCTOPUS_API_KEY", lambda: "API-" + rs(UPPER + DIG, 26)),
    ("harness", "pat", "tok", "HARNESS_API_KEY", lambda: f"pat.{rs(B64URL, 22)}.{rs(HEX, 24)}.{rs(ALNUM, 20)}"),
    ("launchdarkly", "api-token", "tok", "LD_API_KEY", lambda: "api-" + uuid4()),
    ("tailscale", "auth-key", "tok", "TS_AUTHKEY", lambda: f"tskey-auth-k{rs(ALNUM, 10)}CNTRL-{rs(ALNUM, 33)}"),
    ("tailscale", "api-token", "tok", "TAILSCALE_API_KEY", lambda: f"tskey-api-k{rs(ALNUM, 10)}CNTRL-{rs(ALNUM, 33)}"),
    ("ngrok", "authtoken", "tok", "NGROK_AUTHTOKEN", lambda: f"2{rs(ALNUM, 26)}_{rs(ALNUM, 21)}"),
    # package registries
    ("npm", "access-token", "tok", "NPM_TOKEN", lambda: "npm_" + rs(ALNUM, 36)),
    ("pypi", "upload-token", "tok", "PYPI_API_TOKEN", lambda: "pypi-AgEIcHlwaS5vcmc" + rs(B64URL, 150)),
    ("rubygems", "api-key", "tok", "GEM_HOST_API_KEY", lambda: "rubygems_" + rs(HEX, 48)),
    ("nuget", "api-key", "tok", "NUGET_API_KEY", lambda: "oy2" + rs(LOWER + DIG, 43)),
    ("crates", "api-token", "tok", "CARGO_REGISTRY_TOKEN", lambda: "cio" + rs(ALNUM, 32)),
    ("docker", "hub-pat", "tok", "DOCKERHUB_TOKEN", lambda: "dckr_pat_" + rs(B64URL, 27)),
    ("packagist", "user-update-token", "tok", "PACKAGIST_TOKEN", lambda: "packagist_uut_" + rs(HEX, 68)),
    ("jfrog", "api-key", "tok", "ARTIFACTORY_API_KEY", lambda: "AKCp" + rs(ALNUM, 69)),
    ("hexpm", "api-key", "keyed", "HEX_API_KEY", lambda: rs(HEX, 32)),
    # databases (connection strings: the password inside)
    ("postgres", "url-password", "conn", "DATABASE_URL",
     lambda: (password(), "postgresql://app_user:{pw}@db.internal.example:5432/orders")),
    ("mysql", "url-password", "conn", "MYSQL_URL", lambda: (password(), "mysql://root:{pw}@127.0.0.1:3306/shop")),
    ("mongodb", "srv-password", "conn", "MONGODB_URI",
     lambda: (password(), "mongodb+srv://admin:{pw}@cluster0.x7kq2.mongodb.net/prod?retryWrites=true&w=majority")),
    ("redis", "url-password", "conn", "REDIS_URL", lambda: (password(), "rediss://default:{pw}@cache.example.net:6380/0")),
    ("rabbitmq", "amqp-password", "conn", "AMQP_URL", lambda: (password(), "amqps://worker:{pw}@mq.example.com:5671/jobs")),
    ("mssql", "ado-password", "conn", "ConnectionStrings__Default",
     lambda: (password(), "Server=tcp:sql01.example.com,1433;Database=Billing;User Id=sa;Password={pw};Encrypt=True;")),
    ("jdbc", "query-password", "conn", "SPRING_DATASOURCE_URL",
     lambda: (password(), "jdbc:postgresql://pg.example.com:5432/app?user=svc&password={pw}&ssl=true")),
    ("azure", "storage-connection-string", "conn", "AZURE_STORAGE_CONNECTION_STRING",
     lambda: (b64bytes(64), "DefaultEndpointsProtocol=https;AccountName=acmelogs;AccountKey={pw};EndpointSuffix=core.windows.net")),
    ("azure", "servicebus-connection-string", "conn", "SERVICEBUS_CONNECTION",
     lambda: (b64bytes(32), "Endpoint=sb://acme-bus.servicebus.windows.net/;SharedAccessKeyName=RootManageSharedAccessKey;SharedAccessKey={pw}")),
    ("cloudinary", "url-secret", "conn", "CLOUDINARY_URL",
     lambda: (rs(B64URL, 27), f"cloudinary://{rs(DIG, 15)}:{{pw}}@acme-media")),
    ("elastic", "api-key", "tok", "ELASTIC_API_KEY", lambda: b64s(rs(B64URL, 20) + ":" + rs(B64URL, 22))),
    # monitoring
    ("datadog", "api-key", "keyed", "DD_API_KEY", lambda: rs(HEX, 32)),
    ("datadog", "app-key", "keyed", "DD_APP_KEY", lambda: rs(HEX, 40)),
    ("newrelic", "user-api-key", "tok", "NEW_RELIC_API_KEY", lambda: "NRAK-" + rs(UPPER + DIG, 27)),
    ("newrelic", "license-key", "keyed", "NEW_RELIC_LICENSE_KEY", lambda: rs(HEX, 36) + "NRAL"),
    ("sentry", "user-auth-token", "tok", "SENTRY_AUTH_TOKEN", lambda: "sntryu_" + rs(HEX, 64)),
    ("grafana", "service-account-token", "tok", "GRAFANA_TOKEN", lambda: f"glsa_{rs(ALNUM, 32)}_{rs(HEX, 8)}"),
    ("grafana", "cloud-token", "tok", "GRAFANA_CLOUD_TOKEN",
     lambda: "glc_" + b64s(json.dumps({"o": rs(DIG, 6), "n": "stack-" + rs(DIG, 6) + "-hm-read", "k": rs(ALNUM, 24),
                                       "m": {"r": "prod-us-east-0"}}, separators=(",", ":"))).rstrip("=")),
    ("dynatrace", "api-token", "tok", "DT_API_TOKEN", lambda: f"dt0c01.{rs(UPPER + DIG, 24)}.{rs(UPPER + DIG, 64)}"),
    ("rollbar", "access-token", "keyed", "ROLLBAR_ACCESS_TOKEN", lambda: rs(HEX, 32)),
    ("posthog", "personal-api-key", "tok", "POSTHOG_PERSONAL_API_KEY", lambda: "phx_" + rs(ALNUM, 43)),
    ("segment", "write-key", "keyed", "SEGMENT_WRITE_KEY", lambda: rs(ALNUM, 32)),
    ("socket", "api-token", "tok", "SOCKET_SECURITY_API_TOKEN", lambda: f"sktsec_{rs(B64URL, 44)}_api"),
    ("netsapiens", "user-api-key", "tok", "NS_API_KEY", lambda: "nsu_" + rs(ALNUM, 48) + rs(HEX, 8)),
    # ai apis
    ("openai", "project-key", "tok", "OPENAI_API_KEY", lambda: f"sk-proj-{rs(B64URL, 74)}T3BlbkFJ{rs(B64URL, 74)}"),
    ("openai", "legacy-key", "tok", "OPENAI_KEY", lambda: f"sk-{rs(ALNUM, 20)}T3BlbkFJ{rs(ALNUM, 20)}"),
    ("anthropic", "api-key", "tok", "ANTHROPIC_API_KEY", lambda: "sk-ant-api03-" + rs(B64URL, 93) + "AA"),
    ("anthropic", "admin-key", "tok", "ANTHROPIC_ADMIN_KEY", lambda: "sk-ant-admin01-" + rs(B64URL, 93) + "AA"),
    ("huggingface", "user-token", "tok", "HF_TOKEN", lambda: "hf_" + rs(LOWER + UPPER, 34)),
    ("replicate", "api-token", "tok", "REPLICATE_API_TOKEN", lambda: "r8_" + rs(ALNUM, 37)),
    ("groq", "api-key", "tok", "GROQ_API_KEY", lambda: "gsk_" + rs(ALNUM, 52)),
    ("perplexity", "api-key", "tok", "PERPLEXITY_API_KEY", lambda: "pplx-" + rs(ALNUM, 48)),
    ("xai", "api-key", "tok", "XAI_API_KEY", lambda: "xai-" + rs(ALNUM, 80)),
    ("mistral", "api-key", "keyed", "MISTRAL_API_KEY", lambda: rs(ALNUM, 32)),
    ("cohere", "api-key", "keyed", "CO_API_KEY", lambda: rs(ALNUM, 40)),
    ("openrouter", "api-key", "tok", "OPENROUTER_API_KEY", lambda: "sk-or-v1-" + rs(HEX, 64)),
    ("deepseek", "api-key", "tok", "DEEPSEEK_API_KEY", lambda: "sk-" + rs(HEX, 32)),
    ("pinecone", "api-key", "tok", "PINECONE_API_KEY", lambda: f"pcsk_{rs(ALNUM, 5)}_{rs(ALNUM, 64)}"),
    ("langsmith", "personal-key", "tok", "LANGSMITH_API_KEY", lambda: f"lsv2_pt_{rs(HEX, 32)}_{rs(HEX, 10)}"),
    ("wandb", "api-key", "keyed", "WANDB_API_KEY", lambda: rs(HEX, 40)),
    ("elevenlabs", "api-key", "tok", "ELEVENLABS_API_KEY", lambda: "sk_" + rs(HEX, 48)),
    ("together", "api-key", "tok", "TOGETHER_API_KEY", lambda: "tgp_v1_" + rs(B64URL, 43)),
    ("fireworks", "api-key", "tok", "FIREWORKS_API_KEY", lambda: "fw_" + rs(ALNUM, 24)),
    ("cerebras", "api-key", "tok", "CEREBRAS_API_KEY", lambda: "csk-" + rs(LOWER + DIG, 48)),
    ("tavily", "api-key", "tok", "TAVILY_API_KEY", lambda: "tvly-dev-" + rs(ALNUM, 32)),
    ("firecrawl", "api-key", "tok", "FIRECRAWL_API_KEY", lambda: "fc-" + rs(HEX, 32)),
    ("voyage", "api-key", "tok", "VOYAGE_API_KEY", lambda: "pa-" + rs(B64URL, 43)),
    # saas
    ("notion", "integration-token", "tok", "NOTION_TOKEN", lambda: "ntn_" + rs(DIG, 11) + rs(ALNUM, 35)),
    ("airtable", "pat", "tok", "AIRTABLE_API_KEY", lambda: f"pat{rs(ALNUM, 14)}.{rs(HEX, 64)}"),
    ("figma", "pat", "tok", "FIGMA_TOKEN", lambda: "figd_" + rs(B64URL, 40)),
    ("linear", "api-key", "tok", "LINEAR_API_KEY", lambda: "lin_api_" + rs(ALNUM, 40)),
    ("asana", "pat", "tok", "ASANA_ACCESS_TOKEN", lambda: f"2/{rs(DIG, 16)}/{rs(DIG, 16)}:{rs(HEX, 32)}"),
    ("dropbox", "access-token", "tok", "DROPBOX_ACCESS_TOKEN", lambda: "sl.u." + rs(B64URL, 140)),
    ("hubspot", "private-app-token", "tok", "HUBSPOT_ACCESS_TOKEN", lambda: "pat-na1-" + uuid4()),
    ("typeform", "pat", "tok", "TYPEFORM_TOKEN", lambda: f"tfp_{rs(ALNUM, 44)}_{rs(ALNUM, 14)}"),
    ("postman", "api-key", "tok", "POSTMAN_API_KEY", lambda: f"PMAK-{rs(HEX, 24)}-{rs(HEX, 34)}"),
    ("contentful", "pat", "tok", "CONTENTFUL_MANAGEMENT_TOKEN", lambda: "CFPAT-" + rs(B64URL, 43)),
    ("mapbox", "secret-token", "tok", "MAPBOX_SECRET_TOKEN",
     lambda: "sk.eyJ1Ijoi" + b64s(f'{rs(LOWER, 8)}","a":"{rs(LOWER + DIG, 25)}"}}').rstrip("=") + "." + rs(B64URL, 22)),
    ("algolia", "admin-api-key", "keyed", "ALGOLIA_ADMIN_KEY", lambda: rs(HEX, 32)),
    ("twitter", "bearer-token", "tok", "TWITTER_BEARER_TOKEN",
     lambda: "AAAAAAAAAAAAAAAAAAAAA" + rs(ALNUM, 24) + "%3D" + rs(ALNUM, 50)),
    ("facebook", "page-access-token", "tok", "FB_PAGE_TOKEN", lambda: "EAAG" + rs(ALNUM, 180)),
    ("firebase", "fcm-server-key", "tok", "FCM_SERVER_KEY", lambda: f"AAAA{rs(B64URL, 7)}:APA91b{rs(B64URL, 134)}"),
    ("shippo", "live-token", "tok", "SHIPPO_API_TOKEN", lambda: "shippo_live_" + rs(HEX, 40)),
    ("easypost", "api-key", "tok", "EASYPOST_API_KEY", lambda: "EZAK" + rs(HEX, 54)),
    ("youtrack", "permanent-token", "tok", "YOUTRACK_TOKEN",
     lambda: f"perm:{b64s(rs(LOWER, 7)).rstrip('=')}.{rs(ALNUM, 20)}.{rs(ALNUM, 30)}"),
    ("okta", "api-token", "tok", "OKTA_API_TOKEN", lambda: "00" + rs(B64URL, 40)),
    ("auth0", "client-secret", "keyed", "AUTH0_CLIENT_SECRET", lambda: rs(B64URL, 64)),
    # auth / frameworks
    ("jwt", "hs256-access-token", "tok", "ACCESS_TOKEN",
     lambda: jwt({"sub": rs(DIG, 8), "role": "admin", "iat": 1764633600 + R.randint(0, 10**6)})),
    ("oauth", "refresh-token", "keyed", "OAUTH_REFRESH_TOKEN", lambda: rs(B64URL, 64)),
    ("http", "basic-auth", "basic", "BASIC_AUTH", lambda: b64s(f"{R.choice(['deploy', 'ci', 'admin'])}:{password()}")),
    ("http", "opaque-bearer", "keyed", "API_BEARER_TOKEN", lambda: rs(B64URL, 43)),
    ("django", "secret-key", "keyed", "DJANGO_SECRET_KEY",
     lambda: "django-insecure-" + rs(LOWER + DIG + "!@#%^&*(-_=+)", 50)),
    ("rails", "secret-key-base", "keyed", "SECRET_KEY_BASE", lambda: rs(HEX, 128)),
    ("flask", "secret-key", "keyed", "FLASK_SECRET_KEY", lambda: rs(HEX, 48)),
    ("nextauth", "secret", "keyed", "NEXTAUTH_SECRET", lambda: b64bytes(32)),
    ("express", "session-cookie", "tok", "SESSION_COOKIE",
     lambda: "s%3A" + rs(B64URL, 32) + "." + urllib.parse.quote(b64bytes(32, pad=False), safe="")),
    ("age", "secret-key", "tok", "SOPS_AGE_KEY", lambda: "AGE-SECRET-KEY-1" + rs(BECH32, 58)),
    ("wireguard", "private-key", "keyed", "WG_PRIVATE_KEY", lambda: b64bytes(32)),
    # private keys
    ("pem", "rsa-private-key", "pem", "RSA_PRIVATE_KEY", lambda: ("RSA PRIVATE KEY", pem_body("MIIEow", 1588))),
    ("pem", "openssh-private-key", "pem", "SSH_PRIVATE_KEY",
     lambda: ("OPENSSH PRIVATE KEY", pem_body("b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW", 400))),
    ("pem", "ec-private-key", "pem", "EC_PRIVATE_KEY", lambda: ("EC PRIVATE KEY", pem_body("MHcCAQEEI", 224))),
    ("pem", "pkcs8-private-key", "pem", "PRIVATE_KEY", lambda: ("PRIVATE KEY", pem_body("MIIEvQIBADANBgkqhkiG9w0BAQEFAASC", 1624))),
    ("pem", "encrypted-private-key", "pem", "ENCRYPTED_KEY",
     lambda: ("ENCRYPTED PRIVATE KEY", pem_body("MIIFHDBOBgkqhkiG9w0BBQ0wQTApBgkqhkiG9w0BBQwwHAQI", 1768))),
    ("pem", "pgp-private-key-block", "pem", "GPG_PRIVATE_KEY", lambda: ("PGP PRIVATE KEY BLOCK", pem_body("lQVYBG", 900))),
    # passwords in configs and commands
    ("password", "database", "pw", "DB_PASSWORD", password),
    ("password", "smtp", "pw", "SMTP_PASSWORD", password),
    ("password", "redis-requirepass", "pw", "REDIS_PASSWORD", password),
    ("password", "ldap-bind", "pw", "LDAP_BIND_PASSWORD", password),
    ("password", "keystore", "pw", "KEYSTORE_PASSWORD", password),
    ("password", "admin-user", "pw", "ADMIN_PASSWORD", password),
    ("password", "registry-login", "pw", "REGISTRY_PASSWORD", password),
    ("password", "mysql-root", "pw", "MYSQL_ROOT_PASSWORD", password),
]

# ---------------------------------------------------------------- contexts
HOSTS = {"aws": "sts.amazonaws.com", "gcp": "www.googleapis.com", "azure": "management.azure.com",
         "github": "api.github.com", "gitlab": "gitlab.com", "slack": "slack.com", "openai": "api.openai.com",
         "anthropic": "api.anthropic.com", "stripe": "api.stripe.com"}


def host(v: str) -> str:
    return HOSTS.get(v, f"api.{v}.com")


def lk(env: str) -> str:  # the key as a config file or code would spell it
    return env.lower()


def camel(env: str) -> str:
    parts = env.lower().split("_")
    return parts[0] + "".join(p.capitalize() for p in parts[1:])


def ts() -> str:
    return f"2026-11-{R.randint(10, 30):02d}T{R.randint(0, 23):02d}:{R.randint(0, 59):02d}:{R.randint(0, 59):02d}.{R.randint(0, 999):03d}Z"


Ctx = Callable[[str, str, str], str]  # (secret, vendor, env) -> text

PROMPT: dict[str, Ctx] = {
    "heres-my-key": lambda s, v, e: f"here's my {v} key {s} — can you figure out why every request comes back 401?",
    "rotated": lambda s, v, e: f"I think I leaked this earlier ({s}), I'll rotate it later, for now just get the {v} client working",
    "md-env-block": lambda s, v, e: f"my .env looks like this:\n```\nNODE_ENV=development\n{e}={s}\nPORT=3000\n```\nwhy doesn't the app pick it up?",
    "use-for-test": lambda s, v, e: f"use {s} as the {e.lower().replace('_', ' ')} when you run the integration tests, it's a sandbox account",
}
SHELL: dict[str, Ctx] = {
    "export": lambda s, v, e: f'$ export {e}="{s}"\n$ npm run sync',
    "curl-bearer": lambda s, v, e: f'curl -sS https://{host(v)}/v1/me -H "Authorization: Bearer {s}" -H "Accept: application/json"',
    "docker-run-e": lambda s, v, e: f"docker run --rm -e {e}={s} -p 8080:8080 ghcr.io/acme/worker:1.4.2",
    "cli-token-flag": lambda s, v, e: f"{v}-cli deploy --project web --token {s} --yes",
    "inline-env": lambda s, v, e: f"{e}={s} python -m scripts.backfill --since 2026-11-01",
    "gh-secret-set": lambda s, v, e: f'gh secret set {e} --repo acme/web --body "{s}"',
    "kubectl-literal": lambda s, v, e: f"kubectl -n prod create secret generic {v}-creds --from-literal={lk(e)}={s}",
    "git-remote-url": lambda s, v, e: f"git remote set-url origin https://oauth2:{s}@git.example.com/acme/web.git && git push",
}
OUTPUT: dict[str, Ctx] = {
    "env-dump": lambda s, v, e: f"$ env | sort\nHOME=/home/dev\nLANG=C.UTF-8\n{e}={s}\nPATH=/usr/local/bin:/usr/bin:/bin\nSHELL=/bin/zsh",
    "log-headers": lambda s, v, e: f"{ts()} DEBUG httpx request: GET https://{host(v)}/v2/items headers={{'User-Agent': 'acme/2.1', 'Authorization': 'Bearer {s}'}}",
    "http-json": lambda s, v, e: f'HTTP/1.1 201 Created\nContent-Type: application/json\n\n{{"id": "key_{rs(DIG, 7)}", "name": "ci", "token": "{s}", "expires_in": 7776000}}',
    "traceback": lambda s, v, e: f'Traceback (most recent call last):\n  File "/app/sync.py", line 88, in <module>\n    client = Client(api_key="{s}")\n  File "/app/client.py", line 21, in __init__\n    raise AuthError("rejected")\nclient.AuthError: rejected',
    "printenv": lambda s, v, e: f"$ printenv {e}\n{s}\n$ ",
    "config-show": lambda s, v, e: f"$ {v} config list\nregion = eu-west-1\noutput = json\n{lk(e)} = {s}\nprofile = default",
}
CONFIG: dict[str, Ctx] = {
    "dotenv": lambda s, v, e: f"# local only\nAPP_ENV=dev\n{e}={s}\nLOG_LEVEL=debug\n",
    "yaml": lambda s, v, e: f"{v}:\n  enabled: true\n  region: us-east-1\n  {lk(e)}: {s}\n  timeout: 30\n",
    "json": lambda s, v, e: json.dumps({"name": "acme-sync", v: {camel(e): s, "retries": 3}}, indent=2),
    "toml": lambda s, v, e: f'[{v}]\nendpoint = "https://{host(v)}"\n{lk(e)} = "{s}"\n',
    "ini": lambda s, v, e: f"[default]\nregion = eu-central-1\n{lk(e)} = {s}\n",
    "k8s-stringdata": lambda s, v, e: f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {v}-credentials\ntype: Opaque\nstringData:\n  {e}: \"{s}\"\n",
    "compose": lambda s, v, e: f"services:\n  api:\n    image: acme/api:latest\n    environment:\n      - NODE_ENV=production\n      - {e}={s}\n",
    "gha-env": lambda s, v, e: f"jobs:\n  deploy:\n    runs-on: ubuntu-latest\n    env:\n      {e}: {s}\n    steps:\n      - uses: actions/checkout@v4\n",
    "tfvars": lambda s, v, e: f'region = "eu-west-1"\n{lk(e)} = "{s}"\ninstance_count = 2\n',
}
CODE: dict[str, Ctx] = {
    "py-assign": lambda s, v, e: f'import requests\n\n{e} = "{s}"\nresp = requests.get("https://{host(v)}/v1/status", timeout=10)',
    "py-annotated": lambda s, v, e: f'@dataclass\nclass Settings:\n    {lk(e)}: str = "{s}"\n    debug: bool = False',
    "py-fallback": lambda s, v, e: f'{lk(e)} = os.environ.get("{e}") or "{s}"',
    "py-getenv-default": lambda s, v, e: f'TOKEN = os.getenv("{e}", "{s}")',
    "js-fallback": lambda s, v, e: f"const {camel(e)} = process.env.{e} || '{s}';\nexport default {camel(e)};",
    "js-object": lambda s, v, e: f"const client = create{v.capitalize()}Client({{\n  baseUrl: 'https://{host(v)}',\n  apiKey: '{s}',\n}});",
    "go-const": lambda s, v, e: f'package config\n\nconst {camel(e)} = "{s}"',
    "java-final": lambda s, v, e: f'public final class Creds {{\n    private static final String {e} = "{s}";\n}}',
    "rust-let": lambda s, v, e: f'let {lk(e)} = "{s}";\nlet client = Client::new({lk(e)});',
    "ruby-config": lambda s, v, e: f"{v.capitalize()}.configure do |config|\n  config.{lk(e)} = '{s}'\nend",
    "php-define": lambda s, v, e: f"<?php\ndefine('{e}', '{s}');",
    "csharp-named-arg": lambda s, v, e: f'var client = new {v.capitalize()}Client(apiKey: "{s}");',
    "py-dict-headers": lambda s, v, e: f'headers = {{"Content-Type": "application/json", "X-Api-Key": "{s}"}}',
    "c-define": lambda s, v, e: f'#include <stdio.h>\n#define {e} "{s}"\n',
    "kotlin-val": lambda s, v, e: f'val {camel(e)}: String = "{s}"',
}
URL: dict[str, Ctx] = {
    "query-param": lambda s, v, e: f"fetching https://{host(v)}/v1/export?format=csv&api_key={s}&page=2",
    "access-token-param": lambda s, v, e: f"GET https://{host(v)}/graph/me?fields=id,name&access_token={s} -> 200",
    "userinfo": lambda s, v, e: f"pip install --index-url https://__token__:{s}@pkgs.example.com/simple/ acme-internal",
    "path-segment": lambda s, v, e: f"curl -X POST https://{host(v)}/bot/{s}/sendMessage -d chat_id=42 -d text=done",
    "percent-encoded": lambda s, v, e: f"redirecting to https://app.example.com/callback?state=xyz&token={urllib.parse.quote(s, safe='')}",
}
HEADER: dict[str, Ctx] = {
    "authorization-bearer": lambda s, v, e: f"Authorization: Bearer {s}",
    "x-api-key": lambda s, v, e: f"> GET /v1/models HTTP/2\n> Host: {host(v)}\n> x-api-key: {s}\n> accept: */*",
    "authorization-token": lambda s, v, e: f"Authorization: token {s}\nUser-Agent: acme-bot/1.0",
    "private-token": lambda s, v, e: f"curl --header 'PRIVATE-TOKEN: {s}' https://{host(v)}/api/v4/projects",
}
ENCODED: dict[str, Ctx] = {
    "k8s-data-b64": lambda s, v, e: f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: {v}\ndata:\n  {e}: {b64s(s)}\n",
    "b64-env-blob": lambda s, v, e: f"echo {b64s('APP_ENV=prod' + chr(10) + f'{e}={s}' + chr(10))} | base64 -d > .env",
    "docker-config-auth": lambda s, v, e: json.dumps({"auths": {"registry.example.com": {"auth": b64s("ci:" + s)}}}, indent=2),
}
FAMILIES: dict[str, dict[str, Ctx]] = {"prompt": PROMPT, "shell": SHELL, "output": OUTPUT, "config": CONFIG,
                                       "code": CODE, "url": URL, "header": HEADER, "encoded": ENCODED}
WEIGHT = {"prompt": 1.0, "shell": 1.3, "output": 1.1, "config": 1.3, "code": 1.3, "url": 0.6, "header": 0.7,
          "encoded": 0.5}
# contexts where a bare value cannot be told from data except by being a credential the user named
BARE = {("output", "printenv"), ("url", "path-segment"), ("prompt", "rotated")}
ENCODED_SECRET = {"k8s-data-b64", "b64-env-blob", "docker-config-auth"}


def encoded_secret(ctx: str, s: str, e: str) -> str:
    if ctx == "k8s-data-b64":
        return b64s(s)
    if ctx == "b64-env-blob":
        return b64s(f"APP_ENV=prod\n{e}={s}\n")
    return b64s("ci:" + s)


# password contexts: (family, name, template) with {s} the password and {e} its key
PW: list[tuple[str, str, str]] = [
    ("prompt", "my-password-is", "the {k} password is {s} if you need to log in and check the table"),
    ("shell", "mysql-p", "mysql -h 10.0.3.7 -u root -p'{s}' -e 'SHOW DATABASES;'"),
    ("shell", "sshpass", "sshpass -p '{s}' ssh deploy@10.0.0.12 'sudo systemctl restart api'"),
    ("shell", "docker-e", "docker run -d --name db -e {e}='{s}' -p 5432:5432 postgres:16"),
    ("shell", "powershell-securestring", "$pw = ConvertTo-SecureString '{s}' -AsPlainText -Force"),
    ("shell", "password-flag", "./manage.py createsuperuser --username admin --password '{s}' --noinput"),
    ("output", "env-dump", "$ env\nUSER=dev\n{e}={s}\nTERM=xterm-256color"),
    ("output", "log-login", "{ts} INFO auth: login attempt user=admin password={s} ok=false"),
    ("config", "dotenv", "DB_HOST=localhost\nDB_USER=app\n{e}={s}\n"),
    ("config", "yaml", "{k}:\n  host: mail.example.com\n  username: noreply\n  password: \"{s}\"\n"),
    ("config", "json", '{{\n  "{k}": {{\n    "user": "svc",\n    "password": "{s}"\n  }}\n}}'),
    ("config", "properties", "{k}.user=svc\n{k}.password={s}\n"),
    ("config", "netrc", "machine {k}.example.com\n  login deploy\n  password {s}\n"),
    ("config", "pgpass", "db.example.com:5432:orders:app_user:{s}"),
    ("config", "redis-conf", "bind 0.0.0.0\nport 6379\nrequirepass {s}\n"),
    ("code", "sql-create-user", "CREATE USER 'report'@'%' IDENTIFIED BY '{s}';\nGRANT SELECT ON shop.* TO 'report'@'%';"),
    ("code", "sql-alter-role", "ALTER ROLE app_user WITH LOGIN PASSWORD '{s}';"),
    ("code", "py-assign", 'conn = psycopg.connect(host="db", user="app", password="{s}")'),
    ("code", "java-setter", 'dataSource.setPassword("{s}");'),
    ("code", "js-object", "const transport = nodemailer.createTransport({{ auth: {{ user: 'bot', pass: '{s}' }} }});"),
    ("url", "userinfo-pct", "connecting to https://admin:{u}@{k}.example.com:8443/manager/html"),
]


def pw_rows(vendor: str, kind: str, env: str, make: Callable[[], object], n: int) -> list[dict]:
    rows = []
    for fam, name, tpl in R.sample(PW, n):
        s = str(make())
        k = kind.split("-")[0]
        u = urllib.parse.quote(s, safe="-._~")
        secret = u if fam == "url" else s
        text = tpl.format(s=s, e=env, k=k, u=u, ts=ts())
        rows.append(row(text, secret, vendor, kind, fam, name))
    return rows


CONN: list[tuple[str, str, str]] = [
    ("config", "dotenv", "{e}={url}\n"),
    ("config", "yaml", "database:\n  url: \"{url}\"\n  pool: 10\n"),
    ("code", "py-engine", 'engine = create_engine("{url}", pool_pre_ping=True)'),
    ("code", "js-const", "const connectionString = '{url}';"),
    ("shell", "cli-arg", 'psql "{url}" -c "select 1"'),
    ("shell", "export", "export {e}='{url}'"),
    ("output", "log", "{ts} INFO db: connecting to {url} (attempt 2/5)"),
    ("prompt", "paste", "the staging connection string is {url} — can you check why migrations time out?"),
]


def conn_rows(vendor: str, kind: str, env: str, make: Callable[[], object], n: int) -> list[dict]:
    rows = []
    for fam, name, tpl in R.sample(CONN, n):
        pw, template = make()  # type: ignore[misc]
        in_url = re.match(r"[a-z+]+://", template) is not None or template.startswith("jdbc:")
        secret = urllib.parse.quote(pw, safe="-._~") if in_url else pw
        url = template.replace("{pw}", secret)
        rows.append(row(tpl.format(e=env, url=url, ts=ts()), secret, vendor, kind, fam, name))
    return rows


def pem_rows(vendor: str, kind: str, env: str, make: Callable[[], object], n: int) -> list[dict]:
    out = []
    opts = ["prompt/paste", "output/cat-key", "config/k8s-block", "config/json-escaped", "code/py-triple-quoted",
            "encoded/b64-env"]
    for choice in R.sample(opts, n):
        label, body = make()  # type: ignore[misc]
        pem = f"-----BEGIN {label}-----\n{body}\n-----END {label}-----"
        fam, name = choice.split("/")
        secret = body
        if name == "paste":
            text = f"this is the deploy key from the old server, add it to the runner:\n{pem}\n"
        elif name == "cat-key":
            text = f"$ cat ~/.ssh/deploy_key\n{pem}\n$ chmod 600 ~/.ssh/deploy_key"
        elif name == "k8s-block":
            text = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: tls\nstringData:\n  key.pem: |\n" + \
                   "\n".join("    " + ln for ln in pem.split("\n")) + "\n"
            secret = "\n".join("    " + ln for ln in body.split("\n")).strip()
        elif name == "json-escaped":
            esc = pem.replace("\n", "\\n")
            text = json.dumps({"type": "service_account", "project_id": "acme-prod", "private_key_id": rs(HEX, 40),
                               "private_key": "@@"}, indent=2).replace("@@", esc)
            secret = body.replace("\n", "\\n")
        elif name == "py-triple-quoted":
            text = f'{env} = """{pem}\n"""\nsigner = load_pem_private_key({env}.encode(), password=None)'
        else:
            secret = b64s(pem + "\n")
            text = f"{env}_B64={secret}"
        out.append(row(text, secret, vendor, kind, fam, name))
    return out


def hook_rows(vendor: str, kind: str, env: str, make: Callable[[], object], n: int) -> list[dict]:
    tpls = [("dotenv", "{e}={url}\n"), ("curl", "curl -X POST -H 'Content-type: application/json' --data '{{\"text\":\"deploy ok\"}}' {url}"),
            ("code", 'WEBHOOK = "{url}"\nrequests.post(WEBHOOK, json={{"content": msg}})'),
            ("yaml", "notify:\n  webhook: {url}\n"), ("prompt", "post the summary to {url} when the job finishes"),
            ("log", "{ts} WARN notifier: POST {url} -> 429 Too Many Requests")]
    rows = []
    for name, tpl in R.sample(tpls, n):
        s, url = make()  # type: ignore[misc]
        rows.append(row(tpl.format(e=env, url=url, ts=ts()), s, vendor, kind, "url", name))
    return rows


def basic_rows(vendor: str, kind: str, env: str, make: Callable[[], object], n: int) -> list[dict]:
    tpls = [("header", "raw", "Authorization: Basic {s}"),
            ("shell", "curl-header", "curl -H 'Authorization: Basic {s}' https://ci.example.com/api/json"),
            ("output", "log", "{ts} DEBUG upstream request headers: {{'authorization': 'Basic {s}', 'accept': '*/*'}}"),
            ("code", "py-headers", 'headers = {{"Authorization": "Basic {s}"}}'),
            ("config", "nginx", "location / {{\n    proxy_set_header Authorization \"Basic {s}\";\n}}")]
    rows = []
    for fam, name, tpl in R.sample(tpls, n):
        s = str(make())
        rows.append(row(tpl.format(s=s, ts=ts()), s, vendor, kind, fam, name))
    return rows


def row(text: str, secret: str | None, vendor: str, kind: str, fam: str, ctx: str) -> dict:
    assert secret is None or secret in text, (vendor, kind, ctx)
    return {"text": text, "secret": secret, "source": f"gen-held3:{vendor}:{kind}:{fam}/{ctx}"}


def token_rows(vendor: str, kind: str, shape: str, env: str, make: Callable[[], object], n: int) -> list[dict]:
    fams = list(FAMILIES)
    chosen: list[str] = []
    while len(chosen) < n:
        f = R.choices(fams, weights=[WEIGHT[x] for x in fams])[0]
        if f not in chosen:
            chosen.append(f)
    rows = []
    for fam in chosen:
        names = [c for c in FAMILIES[fam] if not (shape == "keyed" and (fam, c) in BARE)]
        name = R.choice(names)
        s = str(make())
        text = FAMILIES[fam][name](s, vendor, env)
        if fam == "url" and name == "percent-encoded":
            secret = urllib.parse.quote(s, safe="")
        elif fam == "encoded":
            secret = encoded_secret(name, s, env)
        else:
            secret = s
        rows.append(row(text, secret, vendor, kind, fam, name))
    return rows


# ---------------------------------------------------------------- negatives
def neg_rows() -> list[dict]:
    sha = lambda: rs(HEX, 40)  # noqa: E731
    gens: list[tuple[str, str, Callable[[], str]]] = [
        ("uuid", "output/log", lambda: f"{ts()} INFO request_id={uuid4()} path=/api/orders status=200 dur=41ms"),
        ("uuid", "config/json", lambda: json.dumps({"tenantId": uuid4(), "subscriptionId": uuid4(), "location": "westeurope"})),
        ("git-sha", "output/git-log", lambda: f"commit {sha()}\nAuthor: Dana Lee <dana@example.com>\nDate:   Mon Nov 30 10:12:03 2026 +0100\n\n    fix pagination"),
        ("git-sha", "shell/cherry-pick", lambda: f"git cherry-pick {sha()[:12]} && git revert --no-edit {sha()}"),
        ("git-sha", "output/rev-parse", lambda: f"$ git rev-parse HEAD\n{sha()}"),
        ("sha256", "output/docker-digest", lambda: f"latest: digest: sha256:{rs(HEX, 64)} size: 2417"),
        ("sha256", "shell/checksum", lambda: f"echo '{rs(HEX, 64)}  node-v20.11.1-linux-x64.tar.xz' | sha256sum -c"),
        ("sri", "config/package-lock", lambda: json.dumps({"version": "4.17.21", "resolved": "https://registry.example.org/lodash/-/lodash-4.17.21.tgz",
                                                           "integrity": "sha512-" + b64bytes(64)}, indent=2)),
        ("go-sum", "config/go-sum", lambda: f"golang.org/x/sync v0.{R.randint(3, 9)}.0 h1:{b64bytes(32)}\ngolang.org/x/sync v0.{R.randint(3, 9)}.0/go.mod h1:{b64bytes(32)}"),
        ("pip-hash", "config/requirements", lambda: f"requests==2.32.3 \\\n    --hash=sha256:{rs(HEX, 64)}"),
        ("md5", "output/etag", lambda: f'< HTTP/1.1 200 OK\n< ETag: "{rs(HEX, 32)}"\n< Cache-Control: max-age=3600'),
        ("base64-data", "code/data-uri", lambda: f'<img src="data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAA{b64bytes(48)}" alt="logo">'),
        ("base64-data", "output/b64-json", lambda: f"$ echo {b64s(json.dumps({'page': R.randint(1, 9), 'sort': 'created_at', 'dir': 'desc'}))} | base64 -d"),
        ("ssh-public-key", "config/authorized-keys", lambda: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rs(B64, 43)} dana@laptop"),
        ("certificate", "output/cert", lambda: "-----BEGIN CERTIFICATE-----\n" + pem_body("MIIDdzCCAl+gAwIBAgIE", 300) + "\n-----END CERTIFICATE-----"),
        ("public-key", "config/pem-public", lambda: "-----BEGIN PUBLIC KEY-----\n" + pem_body("MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE", 124) + "\n-----END PUBLIC KEY-----"),
        ("camelcase", "code/java", lambda: f"public class {R.choice(['AbstractSingletonProxyFactoryBean', 'SimpleBeanFactoryAwareAspectInstanceFactory', 'TransactionAwarePersistenceManagerFactoryProxy'])} extends {R.choice(['BaseHandlerAdapter', 'DefaultListableBeanFactory'])} {{}}"),
        ("test-name", "output/pytest", lambda: f"tests/test_{R.choice(WORDS)}.py::test_{R.choice(WORDS)}_handles_multiline_private_key_blocks_without_leaking_{R.choice(WORDS)} PASSED [ {R.randint(1, 99)}%]"),
        ("version", "output/versions", lambda: f"node v20.{R.randint(1, 18)}.{R.randint(0, 9)}\nnpm 10.{R.randint(0, 9)}.{R.randint(0, 9)}\ntypescript@5.{R.randint(0, 7)}.{R.randint(0, 4)}-rc.{R.randint(1, 3)}+build.{rs(HEX, 7)}"),
        ("path", "output/ls", lambda: f"/usr/local/lib/python3.12/site-packages/{R.choice(WORDS)}_{R.choice(WORDS)}-{R.randint(1, 9)}.{R.randint(0, 30)}.dist-info/RECORD"),
        ("url", "prompt/link", lambda: f"see https://github.com/acme/{R.choice(WORDS)}/pull/{R.randint(100, 9999)}/files?diff=split#diff-{rs(HEX, 64)}"),
        ("url", "output/presign-free", lambda: f"Uploaded to https://storage.example.com/artifacts/{R.choice(WORDS)}/build-{R.randint(1000, 9999)}.tar.gz"),
        ("placeholder", "config/dotenv", lambda: f"{R.choice(['OPENAI_API_KEY', 'STRIPE_SECRET_KEY', 'GITHUB_TOKEN'])}=YOUR_API_KEY_HERE\nDATABASE_URL=postgres://user:password@localhost:5432/db"),
        ("placeholder", "shell/angle", lambda: f"curl -H 'Authorization: Bearer <token>' https://api.example.com/v1/{R.choice(WORDS)}"),
        ("placeholder", "code/xxxx", lambda: f'api_key = "sk-{"x" * R.randint(20, 40)}"  # replace with your key'),
        ("placeholder", "config/template", lambda: f"env:\n  NPM_TOKEN: ${{{{ secrets.NPM_TOKEN }}}}\n  {R.choice(['SLACK_TOKEN', 'SENTRY_AUTH_TOKEN'])}: ${{{{ secrets.{R.choice(['SLACK_TOKEN', 'SENTRY'])} }}}}"),
        ("placeholder", "shell/var-ref", lambda: f'curl -H "Authorization: Bearer ${R.choice(["TOKEN", "GITHUB_TOKEN", "API_KEY"])}" https://api.example.com/me'),
        ("placeholder", "config/masked", lambda: f"password: ********\napi_key: {'*' * R.randint(16, 32)}"),
        ("env-name", "prompt/ask", lambda: f"where should I put {R.choice(['AWS_SECRET_ACCESS_KEY', 'ANTHROPIC_API_KEY', 'DD_API_KEY'])}? in .env or in the shell profile?"),
        ("env-name", "code/lookup", lambda: f'key = os.environ["{R.choice(["STRIPE_SECRET_KEY", "OPENAI_API_KEY", "HF_TOKEN"])}"]\nif not key:\n    raise SystemExit("missing key")'),
        ("env-name", "shell/unset", lambda: f"unset {R.choice(['AWS_SESSION_TOKEN', 'VAULT_TOKEN'])} {R.choice(['GH_TOKEN', 'NPM_TOKEN'])}"),
        ("non-secret-key", "config/yaml", lambda: f"auth:\n  password_min_length: {R.randint(8, 16)}\n  token_ttl_seconds: {R.randint(600, 86400)}\n  token_type: Bearer"),
        ("non-secret-key", "output/oauth-meta", lambda: json.dumps({"token_type": "Bearer", "expires_in": 3600, "scope": "repo read:org"})),
        ("date", "output/ls-l", lambda: f"-rw-r--r--  1 dev staff {R.randint(100, 99999)} Nov {R.randint(1, 30)} 1{R.randint(0, 9)}:0{R.randint(0, 9)} {R.choice(WORDS)}.py"),
        ("date", "output/iso", lambda: f"created_at={ts()} updated_at={ts()}"),
        ("id", "prompt/ticket", lambda: f"fix ACME-{R.randint(1000, 9999)} and order #{rs(DIG, 9)}, the customer id is cus_{rs(DIG, 6)}"),
        ("id", "output/k8s-pods", lambda: f"NAME                         READY   STATUS\nweb-{rs(HEX, 9)}-{rs(LOWER + DIG, 5)}   1/1     Running\nworker-{rs(HEX, 10)}-{rs(LOWER + DIG, 5)}   1/1     Running"),
        ("arn", "output/aws", lambda: f"arn:aws:iam::{rs(DIG, 12)}:role/{R.choice(WORDS)}-deploy\narn:aws:s3:::acme-{R.choice(WORDS)}-logs"),
        ("css-colour", "code/css", lambda: f".btn {{ color: #{rs(HEX, 6)}; background: #{rs(HEX, 6)}; border-color: #{rs(HEX, 3)}; }}"),
        ("minified", "code/js-min", lambda: f"!function(e,t){{\"object\"==typeof exports?module.exports=t():e.{R.choice(WORDS)}=t()}}(this,function(){{var e=\"{rs(LOWER, 6)}\";return function(t){{return t&&t.__esModule?t:{{default:t}}}}}});"),
        ("ipv6-mac", "output/ip-addr", lambda: f"inet6 fe80::{rs(HEX, 4)}:{rs(HEX, 4)}:{rs(HEX, 4)}:{rs(HEX, 4)}/64 scope link\nlink/ether {':'.join(rs(HEX, 2) for _ in range(6))}"),
        ("regex", "code/py-regex", lambda: 'PATTERN = re.compile(r"^[A-Za-z0-9_-]{20,40}$")'),
        ("lockfile-key", "config/yarn-lock", lambda: f'"@babel/core@^7.{R.randint(10, 26)}.0":\n  version "7.{R.randint(10, 26)}.{R.randint(0, 9)}"\n  checksum {rs(HEX, 128)}'),
        ("object-id", "output/mongo", lambda: f'{{ _id: ObjectId("{rs(HEX, 24)}"), name: "{R.choice(WORDS)}", qty: {R.randint(1, 99)} }}'),
        ("random-seed", "code/test-fixture", lambda: f'SEED = {R.randint(10**6, 10**9)}\nFIXTURE_ID = "fx_{R.choice(WORDS)}_{R.randint(1, 99)}"'),
    ]
    rows = []
    for kind, where, g in gens:
        for _ in range(3):
            fam, ctx = where.split("/")
            rows.append(row(g(), None, "neg", kind, fam, ctx))
    return rows


def build() -> list[dict]:
    rows: list[dict] = []
    for vendor, kind, shape, env, make in KINDS:
        # special shapes have their own context lists (3 rows each); tokens 2 or 3: about 500 positives in all
        n = 3 if shape in ("pw", "conn", "pem", "hook", "basic") else R.choice((2, 3))
        if shape == "pw":
            rows += pw_rows(vendor, kind, env, make, n)
        elif shape == "conn":
            rows += conn_rows(vendor, kind, env, make, n)
        elif shape == "pem":
            rows += pem_rows(vendor, kind, env, make, n)
        elif shape == "hook":
            rows += hook_rows(vendor, kind, env, make, n)
        elif shape == "basic":
            rows += basic_rows(vendor, kind, env, make, n)
        else:
            rows += token_rows(vendor, kind, shape, env, make, n)
    rows += neg_rows()
    seen: set[str] = set()
    out = []
    for x in rows:
        if x["text"] not in seen:
            seen.add(x["text"])
            out.append(x)
    return out


def main() -> None:
    rows = build()
    with open(OUT, "w", encoding="utf-8") as f:
        for x in rows:
            f.write(json.dumps(x, ensure_ascii=False) + "\n")
    pos = sum(x["secret"] is not None for x in rows)
    print(f"{OUT.name}: {pos} positive rows of {len(KINDS)} kinds, {len(rows) - pos} negative rows")


if __name__ == "__main__":
    main()
