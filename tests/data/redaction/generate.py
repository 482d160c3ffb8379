# ruff: noqa: E501  (a data table: one vendor format or context per line)
"""Writes gen_dev.jsonl and gen_heldout.jsonl: made-up credentials of vendors' documented shapes (prefix,
charset, length; every body is random, nothing here is a real credential) and hand-written secret kinds
(passwords, SQL, URLs, encoded blobs…), placed in transcript contexts (prompts, commands, command output),
plus look-alike negatives.

Vendors and context templates are split between the two files by a hash of their names, not by hand, and
each file has its own random seed: the held-out file has vendors, contexts and negatives the dev file lacks.
It was generated and committed before the rules were changed for issue 12, and rules are not tuned on it.

Run: ``python tests/data/redaction/generate.py`` (deterministic; rewrites both files).
"""

from __future__ import annotations

import base64
import hashlib
import json
import random
import string
import urllib.parse
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
LOW, UP, DIG = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOW + UP + DIG
HEX = DIG + "abcdef"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = UP + "234567"
UPDIG = UP + DIG
LOWDIG = LOW + DIG

# (vendor, format): format is a list of literal strings and (charset, length) pairs. From vendors'
# documentation of their key formats (prefixes, lengths, alphabets), as published.
V = tuple[str, list]
VENDORS: list[V] = [
    ("github-classic-pat", ["ghp_", (ALNUM, 36)]),
    ("github-oauth", ["gho_", (ALNUM, 36)]),
    ("github-app-server", ["ghs_", (ALNUM, 36)]),
    ("github-refresh", ["ghr_", (ALNUM, 76)]),
    ("github-fine-grained", ["github_pat_11", (UPDIG, 20), "_", (ALNUM, 59)]),
    ("gitlab-pat", ["glpat-", (B64URL, 20)]),
    ("gitlab-runner", ["glrt-", (B64URL, 20)]),
    ("gitlab-deploy", ["gldt-", (B64URL, 20)]),
    ("slack-bot", ["xoxb-", (DIG, 12), "-", (DIG, 13), "-", (ALNUM, 24)]),
    ("slack-user", ["xoxp-", (DIG, 12), "-", (DIG, 12), "-", (DIG, 13), "-", (HEX, 32)]),
    ("stripe-secret", ["sk_live_51", (ALNUM, 97)]),
    ("stripe-restricted", ["rk_live_51", (ALNUM, 97)]),
    ("stripe-webhook", ["whsec_", (ALNUM, 32)]),
    ("openai-project", ["sk-proj-", (B64URL, 74), "T3BlbkFJ", (B64URL, 74)]),
    ("openai-svcacct", ["sk-svcacct-", (B64URL, 74), "T3BlbkFJ", (B64URL, 74)]),
    ("anthropic", ["sk-ant-api03-", (B64URL, 93), "AA"]),
    ("anthropic-admin", ["sk-ant-admin01-", (B64URL, 93), "AA"]),
    ("huggingface", ["hf_", (ALNUM, 34)]),
    ("npm", ["npm_", (ALNUM, 36)]),
    ("pypi", ["pypi-AgEIcHlwaS5vcmc", (B64URL, 120)]),
    ("sendgrid", ["SG.", (B64URL, 22), ".", (B64URL, 43)]),
    ("twilio-api-key", ["SK", (HEX, 32)]),
    ("mailgun", ["key-", (HEX, 32)]),
    ("mailchimp", [(HEX, 32), "-us", (DIG, 2)]),
    ("digitalocean", ["dop_v1_", (HEX, 64)]),
    ("doppler-personal", ["dp.pt.", (ALNUM, 43)]),
    ("doppler-service", ["dp.st.prd.", (ALNUM, 40)]),
    ("shopify-access", ["shpat_", (HEX, 32)]),
    ("shopify-shared-secret", ["shpss_", (HEX, 32)]),
    ("atlassian", ["ATATT3xFfGF0", (B64URL, 170), "=", (HEX, 8)]),
    ("linear", ["lin_api_", (ALNUM, 40)]),
    ("notion", ["ntn_", (DIG, 11), (ALNUM, 35)]),
    ("notion-legacy", ["secret_", (ALNUM, 43)]),
    ("airtable-pat", ["pat", (ALNUM, 14), ".", (HEX, 64)]),
    ("figma", ["figd_", (B64URL, 40)]),
    ("netlify", ["nfp_", (ALNUM, 36)]),
    ("flyio", ["FlyV1 fm2_", (B64URL, 180)]),
    ("render", ["rnd_", (ALNUM, 32)]),
    ("supabase", ["sbp_", (HEX, 40)]),
    ("supabase-secret", ["sb_secret_", (B64URL, 31)]),
    ("planetscale", ["pscale_tkn_", (B64URL, 43)]),
    ("planetscale-password", ["pscale_pw_", (B64URL, 43)]),
    ("neon", ["napi_", (LOWDIG, 64)]),
    ("newrelic-user", ["NRAK-", (UPDIG, 27)]),
    ("newrelic-insert", ["NRII-", (B64URL, 32)]),
    ("sentry-user", ["sntryu_", (HEX, 64)]),
    ("sentry-org", ["sntrys_eyJpYXQiO", (B64, 60), "_", (B64URL, 43)]),
    ("postman", ["PMAK-", (HEX, 24), "-", (HEX, 34)]),
    ("pulumi", ["pul-", (HEX, 40)]),
    ("terraform-cloud", [(ALNUM, 14), ".atlasv1.", (ALNUM, 67)]),
    ("vault-service", ["hvs.", (B64URL, 91)]),
    ("vault-batch", ["hvb.", (B64URL, 120)]),
    ("onepassword-sa", ["ops_eyJzaWduSW5BZGRyZXNzIjoi", (B64, 300)]),
    ("age", ["AGE-SECRET-KEY-1", ("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", 58)]),
    ("circleci", ["CCIPAT_", (ALNUM, 22), "_", (HEX, 40)]),
    ("buildkite", ["bkua_", (HEX, 40)]),
    ("jfrog", ["AKCp", (ALNUM, 69)]),
    ("docker-hub", ["dckr_pat_", (B64URL, 27)]),
    ("nuget", ["oy2", (LOWDIG, 43)]),
    ("rubygems", ["rubygems_", (HEX, 48)]),
    ("crates-io", ["cio", (ALNUM, 32)]),
    ("grafana-sa", ["glsa_", (ALNUM, 32), "_", (HEX, 8)]),
    ("grafana-cloud", ["glc_eyJvIjoi", (B64, 100), "="]),
    ("posthog-personal", ["phx_", (ALNUM, 43)]),
    ("hubspot", ["pat-na1-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)]),
    ("square-access", ["EAAA", (B64URL, 60)]),
    ("square-oauth-secret", ["sq0csp-", (B64URL, 43)]),
    ("paypal-braintree", ["access_token$production$", (LOWDIG, 16), "$", (HEX, 32)]),
    ("plaid", ["access-production-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)]),
    ("contentful", ["CFPAT-", (B64URL, 43)]),
    ("typeform", ["tfp_", (B64URL, 44), "_", (B64URL, 14)]),
    ("easypost", ["EZAK", (HEX, 54)]),
    ("shippo", ["shippo_live_", (HEX, 40)]),
    ("flutterwave", ["FLWSECK-", (HEX, 32), "-X"]),
    ("razorpay", ["rzp_live_", (ALNUM, 14)]),
    ("mollie", ["live_", (ALNUM, 30)]),
    ("brevo", ["xkeysib-", (HEX, 64), "-", (ALNUM, 16)]),
    ("resend", ["re_", (ALNUM, 8), "_", (ALNUM, 24)]),
    ("clerk", ["sk_live_", (ALNUM, 40)]),
    ("prefect", ["pnu_", (ALNUM, 36)]),
    ("modal", ["as-", (ALNUM, 22)]),
    ("ngrok", ["2", (ALNUM, 26), "_", (ALNUM, 21)]),
    ("tailscale", ["tskey-auth-", (ALNUM, 17), "-", (ALNUM, 33)]),
    ("infisical", ["st.", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12), ".", (HEX, 32),
                   ".", (HEX, 32)]),
    ("bitbucket", ["ATBB", (ALNUM, 32), (HEX, 8)]),
    ("sourcegraph", ["sgp_", (HEX, 16), "_", (HEX, 40)]),
    ("sonarqube", ["squ_", (HEX, 40)]),
    ("readme", ["rdme_", (LOWDIG, 70)]),
    ("cloudinary-url", ["cloudinary://", (DIG, 15), ":", (B64URL, 27), "@demo"]),
    ("google-oauth-access", ["ya29.a0", (B64URL, 150)]),
    ("google-client-secret", ["GOCSPX-", (B64URL, 28)]),
    ("google-api", ["AIza", (B64URL, 35)]),
    ("twitter-bearer", ["AAAAAAAAAAAAAAAAAAAAA", (ALNUM, 16), "%3D", (ALNUM, 50)]),
    ("facebook-access", ["EAAC", (ALNUM, 180)]),
    ("dynatrace", ["dt0c01.", (UPDIG, 24), ".", (UPDIG, 64)]),
    ("duffel", ["duffel_live_", (B64URL, 43)]),
    ("frameio", ["fio-u-", (B64URL, 64)]),
    ("harness", ["pat.", (B64URL, 22), ".", (HEX, 24), ".", (ALNUM, 20)]),
    ("octopus", ["API-", (UPDIG, 26)]),
    ("scalingo", ["tk-us-", (B64URL, 48)]),
    ("yandex-oauth", ["y0_", (B64URL, 55)]),
    ("groq", ["gsk_", (ALNUM, 52)]),
    ("perplexity", ["pplx-", (ALNUM, 48)]),
    ("xai", ["xai-", (ALNUM, 80)]),
    ("openrouter", ["sk-or-v1-", (HEX, 64)]),
    ("deepseek", ["sk-", (HEX, 32)]),
    ("langsmith", ["lsv2_pt_", (HEX, 32), "_", (HEX, 10)]),
    ("pinecone", ["pcsk_", (ALNUM, 5), "_", (ALNUM, 60)]),
    ("replicate", ["r8_", (ALNUM, 37)]),
    ("fireworks", ["fw_", (ALNUM, 24)]),
    ("elevenlabs", ["sk_", (HEX, 48)]),
    ("anyscale", ["esecret_", (LOWDIG, 26)]),
    ("databricks", ["dapi", (HEX, 32)]),
    ("heroku", ["HRKU-AA", (B64URL, 58)]),
    ("aws-access-key", ["AKIA", (B32, 16)]),
    ("aws-temp-key", ["ASIA", (B32, 16)]),
    ("azure-devops-pat", [(("abcdefghijklmnopqrstuvwxyz234567"), 52)]),
    ("azure-entra-secret", [(ALNUM, 3), "8Q~", (B64URL + "~.", 34)]),
    ("discord-bot", ["MT", (ALNUM, 24), ".", (B64URL, 6), ".", (B64URL, 38)]),
    ("telegram-bot", [(DIG, 10), ":AA", (B64URL, 33)]),
    ("mapbox-secret", ["sk.eyJ1Ijoi", (B64URL, 60), ".", (B64URL, 22)]),
    ("adafruit", ["aio_", (ALNUM, 28)]),
    ("asana", ["2/", (DIG, 16), "/", (DIG, 16), ":", (HEX, 32)]),
    ("clickup", ["pk_", (DIG, 8), "_", (UPDIG, 32)]),
    ("dropbox", ["sl.", (B64URL, 135)]),
    ("lob", ["live_", (HEX, 35)]),
    ("mapbox-public-but-secretish", ["tk.eyJ1Ijoi", (B64URL, 60), ".", (B64URL, 22)]),
    ("hashicorp-consul", ["hvs.CAESI", (B64URL, 86)]),
    ("confluent", [(UPDIG, 16), ":", (B64, 64)]),
    ("cohere", [(ALNUM, 40)]),
    ("mistral", [(ALNUM, 32)]),
    ("cloudflare-api-token", [(B64URL, 40)]),
    ("datadog-api", [(HEX, 32)]),
    ("algolia-admin", [(HEX, 32)]),
    ("twilio-auth-token", [(HEX, 32)]),
    ("wandb", [(HEX, 40)]),
    ("gitea", [(HEX, 40)]),
    ("okta", ["00", (B64URL, 40)]),
    ("snyk", [(HEX, 8), "-", (HEX, 4), "-4", (HEX, 3), "-", (HEX, 4), "-", (HEX, 12)]),
    ("zendesk", [(ALNUM, 40)]),
    ("launchdarkly", ["api-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)]),
    ("shopify-custom", ["shpca_", (HEX, 32)]),
    ("coinbase-secret", [(B64, 86), "=="]),
    ("mux", [(B64, 75)]),
    ("intercom", ["dG9rOj", (B64, 54), "="]),
]

# env var / key names per vendor (first word of the vendor name)
def env_name(vendor: str, rng: random.Random) -> str:
    base = vendor.split("-")[0].upper()
    return base + rng.choice(["_API_KEY", "_TOKEN", "_SECRET", "_ACCESS_TOKEN", "_KEY", "_AUTH_TOKEN", "_PAT"])


def split_of(name: str) -> str:
    return "held" if hashlib.sha1(name.encode()).digest()[0] % 2 else "dev"


def make_token(fmt: list, rng: random.Random) -> str:
    out = []
    for part in fmt:
        if isinstance(part, str):
            out.append(part)
        else:
            chars, n = part
            out.append("".join(rng.choices(chars, k=n)))
    return "".join(out)


# contexts where a vendor token appears: {s} the token, {env} an env var name, {v} the vendor word
TOKEN_CONTEXTS = [
    ("prompt-here-is", "here is my {v} key: {s} can you wire it into the config?"),
    ("prompt-use", "Use {s} as the {v} token for now, I'll rotate it later"),
    ("prompt-bare-end", "it still fails with 401 even though I pasted {s}"),
    ("prompt-quoted", "I set the key to \"{s}\" but the client says unauthorized"),
    ("prompt-backtick", "The token is `{s}` - please test the endpoint"),
    ("cmd-export", "export {env}={s}"),
    ("cmd-export-quoted", "export {env}=\"{s}\""),
    ("cmd-bearer", "curl -sS -H \"Authorization: Bearer {s}\" https://api.example.com/v1/me"),
    ("cmd-docker-env", "docker run --rm -e {env}={s} ghcr.io/acme/worker:1.4"),
    ("cmd-flag-api-key", "acme-cli deploy --api-key {s} --region eu-west-1"),
    ("cmd-flag-token-eq", "./bin/sync --token={s} --dry-run"),
    ("cmd-gh-secret", "gh secret set {env} --body \"{s}\""),
    ("cmd-inline-env", "{env}={s} npm run deploy"),
    ("cmd-query", "curl \"https://api.example.com/v2/items?limit=10&api_key={s}\""),
    ("cmd-header-x", "curl -H 'X-API-Key: {s}' https://api.example.com/health"),
    ("cmd-echo-pipe", "echo {s} | docker login ghcr.io -u octocat --password-stdin"),
    ("cmd-python-c", "python -c \"import acme; acme.Client(api_key='{s}').ping()\""),
    ("cmd-setx", "setx {env} {s}"),
    ("cmd-powershell", "$env:{env} = \"{s}\""),
    ("cmd-kubectl", "kubectl create secret generic acme --from-literal=token={s}"),
    ("out-dotenv", "$ cat .env\nNODE_ENV=production\n{env}={s}\nPORT=8080"),
    ("out-printenv", "HOME=/home/dev\nSHELL=/bin/bash\n{env}={s}\nLANG=C.UTF-8"),
    ("out-json", "{{\n  \"name\": \"acme\",\n  \"apiKey\": \"{s}\",\n  \"timeout\": 30\n}}"),
    ("out-json-compact", "{{\"provider\":\"{v}\",\"credentials\":{{\"token\":\"{s}\"}},\"retries\":3}}"),
    ("out-yaml", "providers:\n  {v}:\n    api_token: {s}\n    region: us-east-1"),
    ("out-toml", "[{v}]\napi_key = \"{s}\"\nendpoint = \"https://api.example.com\""),
    ("out-log-header", "DEBUG http: request headers={{'Authorization': 'Bearer {s}', 'Accept': 'application/json'}}"),
    ("out-traceback", "  File \"app/client.py\", line 12, in <module>\n    client = Client(token=\"{s}\")\nAuthError: 401"),
    ("out-error-bare", "Error: invalid credentials {s} (status 403)"),
    ("out-git-remote", "origin\thttps://x-access-token:{s}@github.com/acme/app.git (fetch)"),
    ("out-ini", "[default]\nregion = eu-west-1\n{v}_secret = {s}"),
    ("out-table", "NAME        VALUE\n{env}   {s}\nDEBUG       false"),
    ("out-python-repr", "Settings(debug=False, api_key='{s}', timeout=30)"),
    ("out-config-get", "$ acme config get token\n{s}"),
    ("out-npmrc", "//registry.npmjs.org/:_authToken={s}"),
    ("out-terraform", "  + {v}_token = \"{s}\""),
    ("code-js-const", "const {v}Key = \"{s}\";"),
    ("code-go", "client := acme.New(\"{s}\")"),
    ("code-ts-header", "headers: {{ Authorization: `Bearer {s}` }},"),
    ("code-php", "$apiKey = '{s}';"),
]

# secret kinds that are not one vendor's token: (kind, maker) -> (text, secret)
Maker = Callable[[random.Random], tuple[str, str]]


def pw(rng: random.Random) -> str:
    words = ["Summer", "winter", "Falcon", "tiger", "Orange", "river", "Monkey", "dragon", "Sunshine", "Purple",
             "coffee", "Rocket", "silver", "Shadow", "maple", "Quartz", "Banjo", "pepper", "Nova", "Cobalt"]
    shape = rng.randrange(5)
    if shape == 0:
        return rng.choice(words) + str(rng.randint(10, 2029)) + rng.choice("!@#$%&*?")
    if shape == 1:
        return "".join(rng.choices(ALNUM + "!@#%^&*-_", k=rng.randint(10, 18)))
    if shape == 2:
        return rng.choice(words).lower() + rng.choice("-_.") + rng.choice(words) + str(rng.randint(1, 99))
    if shape == 3:
        return "".join(rng.choices(ALNUM, k=rng.randint(8, 12)))
    return rng.choice(words) + rng.choice(words) + str(rng.randint(100, 999))


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def _pem(rng: random.Random, kind: str = "RSA PRIVATE KEY") -> str:
    body = "\n".join("".join(rng.choices(B64, k=64)) for _ in range(6))
    return f"-----BEGIN {kind}-----\n{body}\n-----END {kind}-----"


def _key_shape(name: str) -> Maker:
    def make(rng: random.Random) -> tuple[str, str]:
        p = pw(rng)
        return rng.choice([f"{name}={p}", f"{name}: {p}", f"{name} = \"{p}\"", f"  {name}: '{p}'"]), p
    return make


KINDS: list[tuple[str, Maker]] = [
    ("pw-prompt", lambda r: ((p := pw(r)), f"my password for the staging db is {p}")[::-1]),
    ("pw-prompt-colon", lambda r: ((p := pw(r)), f"login: admin / pass: {p}")[::-1]),
    ("pw-prompt-quoted", lambda r: ((p := pw(r)), f"try logging in with \"{p}\" as the password")[::-1]),
    ("pw-key-PSWD", _key_shape("PSWD")),
    ("pw-key-PASWRD", _key_shape("DB_PASWRD")),
    ("pw-key-misspelt", _key_shape("passworsd")),
    ("pw-key-plural", _key_shape("passwords")),
    ("pw-key-glued", _key_shape("MYSQLPASS")),
    ("pw-key-pass-suffix", _key_shape("SMTP_PASS")),
    ("pw-key-pwd-camel", _key_shape("adminPwd")),
    ("pw-key-passphrase", _key_shape("gpg_passphrase")),
    ("pw-key-pswrd", _key_shape("user_pswrd")),
    ("pw-key-passwd-upper", _key_shape("LDAP_PASSWD")),
    ("pw-key-pword", _key_shape("rootPword")),
    ("pw-key-pin", _key_shape("master_passcode")),
    ("pw-confirmation", lambda r: ((p := pw(r)),
                                   f"user[password]={p}&user[password_confirmation]={p}")[::-1]),
    ("pw-repeat-login", lambda r: ((p := pw(r)), f"DB_PASSWORD={p}\n...\n$ psql -U app -W\nPassword: \n"
                                                  f"login with {p} failed")[::-1]),
    ("pw-repeat-bare", lambda r: ((p := "".join(r.choices(ALNUM, k=14))),
                                  f"password: {p}\nI copied {p} into the vault")[::-1]),
    ("sql-create-user", lambda r: ((p := pw(r)), f"CREATE USER 'app'@'%' IDENTIFIED BY '{p}';")[::-1]),
    ("sql-alter-user-plugin", lambda r: ((p := pw(r)),
                                         f"ALTER USER 'root'@'localhost' IDENTIFIED WITH mysql_native_password BY '{p}';")[::-1]),
    ("sql-create-role", lambda r: ((p := pw(r)), f"CREATE ROLE reporter WITH LOGIN PASSWORD '{p}';")[::-1]),
    ("sql-create-login", lambda r: ((p := pw(r)), f"CREATE LOGIN svc_etl WITH PASSWORD = '{p}';")[::-1]),
    ("sql-oracle-bare", lambda r: ((p := "".join(r.choices(ALNUM, k=12))),
                                   f"ALTER USER scott IDENTIFIED BY {p} ACCOUNT UNLOCK;")[::-1]),
    ("sql-snowflake-as", lambda r: ((p := pw(r)), f"CREATE USER loader PASSWORD = '{p}' DEFAULT_ROLE = etl;")[::-1]),
    ("url-userinfo", lambda r: ((p := pw(r)), f"DATABASE_URL=postgres://app:{p}@db.internal:5432/app")[::-1]),
    ("url-userinfo-email", lambda r: ((p := pw(r)),
                                      f"git clone https://jane.doe@example.com:{p}@git.example.com/team/repo.git")[::-1]),
    ("url-userinfo-amqp", lambda r: ((p := pw(r).replace("@", "#")), f"amqp://guest:{p}@rabbit:5672/vhost")[::-1]),
    ("url-pct-encoded", lambda r: ((p := urllib.parse.quote(pw(r) + "@/", safe="")),
                                   f"redis://default:{p}@cache:6379/0")[::-1]),
    ("url-query-signature", lambda r: ((p := "".join(r.choices(HEX, k=64))),
                                       f"https://bucket.s3.amazonaws.com/f.zip?X-Amz-Expires=300&X-Amz-Signature={p}")[::-1]),
    ("url-query-client-secret", lambda r: ((p := "".join(r.choices(B64URL, k=32))),
                                           f"POST /oauth/token?grant_type=client_credentials&client_secret={p}")[::-1]),
    ("url-query-apikey-suffix", lambda r: ((p := "".join(r.choices(ALNUM, k=24))),
                                           f"GET https://maps.example.com/geo?q=berlin&mapsApiKey={p}")[::-1]),
    ("url-query-credential", lambda r: ((p := "".join(r.choices(B64URL, k=28))),
                                        f"wss://rt.example.com/socket?userCredential={p}&v=2")[::-1]),
    ("url-path-token", lambda r: ((p := "".join(r.choices(ALNUM, k=32))),
                                  f"curl -X POST https://hooks.example.com/services/T0/B0/{p}")[::-1]),
    ("url-telegram-path", lambda r: ((p := str(r.randint(10**9, 10**10)) + ":AA" + "".join(r.choices(B64URL, k=33))),
                                     f"curl https://api.telegram.org/bot{p}/getUpdates")[::-1]),
    ("auth-basic", lambda r: ((p := b64("deploy:" + pw(r))), f"Authorization: Basic {p}")[::-1]),
    ("auth-oauth1", lambda r: ((p := "".join(r.choices(ALNUM, k=43))),
                               f"Authorization: OAuth oauth_consumer_key=\"xvz1evFS4wEEPTGEFPHBog\", oauth_nonce=\"kYjz\", "
                               f"oauth_signature=\"{p}%3D\", oauth_token=\"370773112-GmHxMAgYyLbNEtIKZeRNFsMKPR9EyMZeS9weJAEb\"")[::-1]),
    ("jwt", lambda r: ((p := "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9." + b64('{"sub":"' + str(r.randint(1, 10**6))
                                                                              + '","exp":1790000000}').rstrip("=")
                        + "." + "".join(r.choices(B64URL, k=43))), f"token={p}")[::-1]),
    ("pem-rsa", lambda r: ((p := _pem(r)), f"$ cat deploy.pem\n{p}\n")[::-1]),
    ("pem-b64", lambda r: ((p := b64(_pem(r, "PRIVATE KEY"))), f"tls.key: {p}")[::-1]),
    ("jwk-private", lambda r: ((p := "".join(r.choices(B64URL, k=43))),
                               f'{{"kty":"EC","crv":"P-256","x":"{"".join(r.choices(B64URL, k=43))}",'
                               f'"y":"{"".join(r.choices(B64URL, k=43))}","d":"{p}"}}')[::-1]),
    ("jwk-b64", lambda r: ((p := b64('{"kty":"OKP","crv":"Ed25519","d":"' + "".join(r.choices(B64URL, k=43))
                                      + '","x":"' + "".join(r.choices(B64URL, k=43)) + '"}')),
                           f"SIGNING_JWK_B64={p}")[::-1]),
    ("k8s-secret-b64", lambda r: ((p := b64("ghp_" + "".join(r.choices(ALNUM, k=36)))),
                                  f"apiVersion: v1\nkind: Secret\ndata:\n  gh: {p}\n")[::-1]),
    ("docker-config-auth", lambda r: ((p := b64("ci:" + pw(r))),
                                      f'{{"auths":{{"registry.example.com":{{"auth":"{p}"}}}}}}')[::-1]),
    ("gcp-sa-json", lambda r: ((p := _pem(r, "PRIVATE KEY").replace("\n", "\\n")),
                               f'{{"type": "service_account", "project_id": "acme-1", "private_key": "{p}"}}')[::-1]),
    ("aws-pair", lambda r: ((p := "".join(r.choices(B64, k=40))),
                            f"aws_access_key_id = AKIA{''.join(r.choices(B32, k=16))}\naws_secret_access_key = {p}")[::-1]),
    ("azure-conn", lambda r: ((p := "".join(r.choices(B64, k=86)) + "=="),
                              f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey={p};EndpointSuffix=core.windows.net")[::-1]),
    ("ado-conn", lambda r: ((p := pw(r).replace(";", "")),
                            f"Server=tcp:sql.example.com,1433;Database=app;User ID=svc;Password={p};Encrypt=true")[::-1]),
    ("netrc", lambda r: ((p := pw(r)), f"machine api.example.com\n  login bot\n  password {p}")[::-1]),
    ("pgpass", lambda r: ((p := pw(r).replace(":", "")), f"$ cat ~/.pgpass\ndb.internal:5432:app:app:{p}")[::-1]),
    ("code-annotated", lambda r: ((p := "".join(r.choices(ALNUM, k=24))), f"    api_secret: str = \"{p}\"")[::-1]),
    ("code-environ-or", lambda r: ((p := "".join(r.choices(ALNUM, k=20))),
                                   f"TOKEN = os.environ.get(\"SVC_TOKEN\") or \"{p}\"")[::-1]),
    ("code-getenv-default", lambda r: ((p := pw(r)), f"db_pw = os.getenv(\"DB_PW\", \"{p}\")")[::-1]),
    ("code-define", lambda r: ((p := "".join(r.choices(ALNUM, k=20))), f"#define API_KEY \"{p}\"")[::-1]),
    ("code-define-bare", lambda r: ((p := "".join(r.choices(HEX, k=32))), f"#define SECRET_KEY {p}")[::-1]),
    ("code-quoted-any-key", lambda r: ((p := "".join(r.choices(ALNUM, k=32))), f"  \"signingSeed\": \"{p}\",")[::-1]),
    ("code-yaml-any-key", lambda r: ((p := "".join(r.choices(ALNUM + "+/", k=40))), f"  hmacSeed: \"{p}\"")[::-1]),
    ("code-go-struct", lambda r: ((p := "".join(r.choices(ALNUM, k=28))), f"\tWebhookSecret string = \"{p}\"")[::-1]),
    ("curlopt-userpwd", lambda r: ((p := pw(r)), f"curl_easy_setopt(curl, CURLOPT_USERPWD, \"admin:{p}\");")[::-1]),
    ("curlopt-password", lambda r: ((p := pw(r)), f"curl_setopt($ch, CURLOPT_PROXYPASSWORD, '{p}');")[::-1]),
    ("curlopt-bearer", lambda r: ((p := "".join(r.choices(B64URL, k=40))),
                                  f"curl_easy_setopt(h, CURLOPT_XOAUTH2_BEARER, \"{p}\");")[::-1]),
    ("pwsh-securestring", lambda r: ((p := pw(r)),
                                     f"$pw = ConvertTo-SecureString \"{p}\" -AsPlainText -Force")[::-1]),
    ("pwsh-securestring-string", lambda r: ((p := pw(r)),
                                            f"ConvertTo-SecureString -String '{p}' -AsPlainText -Force")[::-1]),
    ("flag-client-secret", lambda r: ((p := "".join(r.choices(B64URL, k=30))),
                                      f"az login --service-principal -u app --client-secret {p} --tenant t")[::-1]),
    ("flag-bearer", lambda r: ((p := "".join(r.choices(ALNUM, k=32))), f"kubectl --bearer-token {p} get pods")[::-1]),
    ("flag-db-password", lambda r: ((p := pw(r)), f"pg_restore --db-password={p} dump.sql")[::-1]),
    ("flag-secret-id", lambda r: ((p := "".join(r.choices(HEX, k=36))),
                                  f"vault write auth/approle/login role_id=abc --secret-id-value {p}")[::-1]),
    ("mysql-p", lambda r: ((p := pw(r).replace("'", "")), f"mysql -uroot -p'{p}' -e 'select 1'")[::-1]),
    ("htpasswd", lambda r: ((p := pw(r)), f"htpasswd -b -c .htpasswd admin {p}")[::-1]),
    ("sshpass", lambda r: ((p := pw(r)), f"sshpass -p '{p}' scp build.tgz deploy@web1:/srv")[::-1]),
    ("otpauth", lambda r: ((p := "".join(r.choices(B32, k=32))),
                           f"otpauth://totp/Acme:ops?secret={p}&issuer=Acme")[::-1]),
    ("ssh-ed25519-openssh", lambda r: ((p := _pem(r, "OPENSSH PRIVATE KEY")), p)[::-1]),
    ("pgp-private", lambda r: ((p := _pem(r, "PGP PRIVATE KEY BLOCK")), f"gpg --export-secret-keys -a\n{p}")[::-1]),
    ("pct-in-query", lambda r: ((p := urllib.parse.quote(pw(r) + "&=", safe="")),
                                f"curl 'https://x.example.com/login?user=bob&pw={p}'")[::-1]),
]

# look-alikes that must come back unchanged
NEGATIVES: list[tuple[str, Callable[[random.Random], str]]] = [
    ("uuid", lambda r: f"request id {_uuid(r)} completed in 12ms"),
    ("git-sha", lambda r: f"commit {''.join(r.choices(HEX, k=40))}\nAuthor: Dev <dev@example.com>"),
    ("sha256", lambda r: f"sha256: {''.join(r.choices(HEX, k=64))}  dist/app.tar.gz"),
    ("docker-digest", lambda r: f"Digest: sha256:{''.join(r.choices(HEX, k=64))}"),
    ("npm-integrity", lambda r: f"\"integrity\": \"sha512-{''.join(r.choices(B64, k=86))}==\","),
    ("camel", lambda r: "class " + "".join(r.sample(["Abstract", "Singleton", "Proxy", "Factory", "Bean", "Token",
                                                     "Manager", "Provider", "Handler", "Resolver"], 5)) + ":"),
    ("path", lambda r: f"/home/dev/projects/{r.choice(['acme', 'api'])}/node_modules/.pnpm/lodash@4.17.21/index.js"),
    ("version", lambda r: f"Successfully installed requests-2.{r.randint(20, 32)}.0 urllib3-2.2.{r.randint(0, 9)}"),
    ("placeholder-angle", lambda r: "export OPENAI_API_KEY=<your-api-key>"),
    ("placeholder-env", lambda r: "curl -H \"Authorization: Bearer $GITHUB_TOKEN\" https://api.github.com/user"),
    ("placeholder-x", lambda r: "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx"),
    ("placeholder-template", lambda r: "password: {{ .Values.db.password }}"),
    ("placeholder-stars", lambda r: "Password: ********"),
    ("bypass", lambda r: "We can bypass the cache with --no-cache; compass and passive modes are unchanged"),
    ("password-prose", lambda r: "The password must contain at least 12 characters and one digit."),
    ("token-count", lambda r: f"usage: prompt_tokens={r.randint(100, 9999)} completion_tokens={r.randint(10, 999)}"),
    ("max-tokens", lambda r: f"max_tokens = {r.choice([1024, 4096, 8192])}"),
    ("password-file", lambda r: "docker login --password-stdin < ~/.docker/pw.txt"),
    ("password-var", lambda r: "password = os.environ[\"DB_PASSWORD\"]"),
    ("token-var", lambda r: "token = get_token(user_id)"),
    ("key-func", lambda r: "cache_key = make_key(request.path, user.id)"),
    ("secret-name", lambda r: "secret_name = \"prod/db/credentials\""),
    ("msg-id", lambda r: f"\"id\": \"msg_{''.join(r.choices(ALNUM, k=24))}\", \"type\": \"message\""),
    ("base64-text", lambda r: f"data: {b64('The quick brown fox jumps over the lazy dog, again and again.')}"),
    ("hex-color", lambda r: "color: #ff8800; background: #1e1e1e;"),
    ("email", lambda r: "Contact jane.doe@example.com or ops@acme.io for access"),
    ("url-plain", lambda r: "https://github.com/acme/widgets/blob/main/src/index.ts#L42"),
    ("url-query-plain", lambda r: "https://example.com/search?q=token+rotation&page=2&sort=desc"),
    ("ssh-public", lambda r: f"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{''.join(r.choices(B64, k=43))} dev@laptop"),
    ("public-key-pem", lambda r: "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----"),
    ("none-conn", lambda r: "Password=None; Host=localhost; Port=5432"),
    ("null-json", lambda r: "{\"password\": null, \"token\": null}"),
    ("or-quotes", lambda r: "name = data.get(\"name\") or \"anonymous\""),
    ("dict-index", lambda r: "row['token'] = data['token']"),
    ("test-name", lambda r: "tests/test_auth.py::test_password_reset_sends_email PASSED"),
    ("k8s-resource", lambda r: f"pod/api-7d9f8b6c5-{''.join(r.choices(LOWDIG, k=5))}   1/1   Running   0   3h"),
    ("aws-arn", lambda r: f"arn:aws:iam::{r.randint(10**11, 10**12)}:role/deploy-role"),
    ("semver-hash", lambda r: f"Building app@1.4.{r.randint(0, 9)}+{''.join(r.choices(HEX, k=7))}"),
    ("sri", lambda r: f"<script src=\"app.js\" integrity=\"sha384-{''.join(r.choices(B64, k=64))}\"></script>"),
    ("random-words-camel", lambda r: "const isPasswordVisible = togglePasswordVisibility(event)"),
    ("lockfile", lambda r: f"resolved \"https://registry.example.com/react/-/react-18.2.0.tgz#{''.join(r.choices(HEX, k=40))}\""),
    ("jwt-like-short", lambda r: "eyJAAAA.eyJBBB"),
    ("cli-flag-file", lambda r: "terraform apply -var-file=prod.tfvars --token-file /run/secrets/tf"),
    ("sql-no-pw", lambda r: "CREATE USER reporter; GRANT SELECT ON ALL TABLES TO reporter;"),
    ("compass-key", lambda r: "COMPASS_HEADING=270 PASSIVE_MODE=true BYPASS_PROXY=1"),
    ("base64-image", lambda r: f"data:image/png;base64,iVBORw0KGgo{''.join(r.choices(B64, k=60))}"),
    ("object-id", lambda r: f"ObjectId(\"{''.join(r.choices(HEX, k=24))}\")"),
    ("cve", lambda r: "Fixed CVE-2024-3094 in xz-utils 5.6.1-r2"),
    ("i18n-key", lambda r: "t('auth.password.reset.title')"),
]


def _uuid(r: random.Random) -> str:
    h = "".join(r.choices(HEX, k=32))
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"


def build(split: str, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows: list[dict] = []
    vendors = [v for v in VENDORS if split_of(v[0]) == split]
    contexts = [c for c in TOKEN_CONTEXTS if split_of(c[0]) == split]
    for name, fmt in vendors:
        for ctx_name, tpl in rng.sample(contexts, k=min(3, len(contexts))):
            tok = make_token(fmt, rng)
            text = tpl.format(s=tok, env=env_name(name, rng), v=name.split("-")[0])
            rows.append({"text": text, "secret": tok, "source": f"gen-{split}:{name}:{ctx_name}"})
    for name, make in KINDS:
        if split_of(name) != split:
            continue
        for _ in range(2):
            text, secret = make(rng)
            rows.append({"text": text, "secret": secret, "source": f"gen-{split}:{name}"})
    for name, make in NEGATIVES:
        if split_of(name) != split:
            continue
        for _ in range(5):
            rows.append({"text": make(rng), "secret": None, "source": f"gen-{split}:neg:{name}"})
    # dedupe negatives that came out the same
    seen, out = set(), []
    for x in rows:
        if x["text"] not in seen:
            seen.add(x["text"])
            out.append(x)
    return out


def main() -> None:
    for split, seed, fname in (("dev", 1201, "gen_dev.jsonl"), ("held", 9413, "gen_heldout.jsonl")):
        rows = build(split, seed)
        with open(HERE / fname, "w", encoding="utf-8") as f:
            for x in rows:
                f.write(json.dumps(x, ensure_ascii=False) + "\n")
        pos = sum(x["secret"] is not None for x in rows)
        print(f"{fname}: {pos} positives, {len(rows) - pos} negatives")


if __name__ == "__main__":
    main()
