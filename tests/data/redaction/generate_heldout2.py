# ruff: noqa: E501  (a data table: one vendor format or context per line)
"""Writes gen_heldout2.jsonl: a second held-out corpus, written (2026-12-02) before looking at why the rules
miss anything in gen_heldout.jsonl, and before reading the rule table, so that it measures generalisation.

It shares no code, seed, context template or negative with generate.py. Credential families are written from
vendors' published key formats (prefix, alphabet, length; every body is random, nothing here is a real
credential) and grouped by where they turn up: cloud providers, CI systems, databases, payment, messaging,
package registries (hosts are example hosts), AI services, SaaS, key material, framework secrets. They are
placed in config files (.env, .npmrc, .netrc, kubeconfig, docker config.json, terraform, YAML, TOML, JSON,
XML, INI, properties), shell history (exports, curl/wget/httpie headers, CLI flags), code in several
languages, prose in several languages and command output; some values are percent-encoded, base64-wrapped,
split across a quoted concatenation or stringified inside JSON. Negatives are look-alikes that fill agent
transcripts (tool-call and object ids, lockfile hashes, certificates, public keys, placeholders).

Never tune rules on this file's misses: only its totals are printed by the test.

Run: ``python tests/data/redaction/generate_heldout2.py`` (deterministic; rewrites gen_heldout2.jsonl).
"""

from __future__ import annotations

import base64
import json
import random
import string
import urllib.parse
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).parent
SEED = 50227
LOW, UP, DIG = string.ascii_lowercase, string.ascii_uppercase, string.digits
ALNUM = LOW + UP + DIG
HEX = DIG + "abcdef"
UHEX = DIG + "ABCDEF"
B64 = ALNUM + "+/"
B64URL = ALNUM + "-_"
B32 = UP + "234567"
UPDIG = UP + DIG
LOWDIG = LOW + DIG


def _uuid(r: random.Random) -> str:
    h = "".join(r.choices(HEX, k=32))
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{h[16:20]}-{h[20:]}"


UUID = "uuid"  # a format part: a random v4 UUID

# (family, vendor, format, prefixed). ``prefixed`` False: the token has no shape of its own (random hex,
# a UUID…) and is placed only in contexts that name it (a key, a header, a flag).
F = tuple[str, str, list, bool]
FORMATS: list[F] = [
    # cloud providers
    ("cloud", "aws-session-token", ["IQoJb3JpZ2luX2VjE", (B64, 300)], True),
    ("cloud", "aws-secret", [(B64, 40)], False),
    ("cloud", "aws-abia", ["ABIA", (B32, 16)], True),
    ("cloud", "alibaba-id", ["LTAI", (ALNUM, 20)], True),
    ("cloud", "alibaba-secret", [(ALNUM, 30)], False),
    ("cloud", "tencent-secretid", ["AKID", (ALNUM, 32)], True),
    ("cloud", "ibm-apikey", [(B64URL, 44)], False),
    ("cloud", "do-spaces-key", ["DO00", (UPDIG, 16)], True),
    ("cloud", "do-oauth", ["doo_v1_", (HEX, 64)], True),
    ("cloud", "do-refresh", ["dor_v1_", (HEX, 64)], True),
    ("cloud", "cloudflare-origin-ca", ["v1.0-", (HEX, 24), "-", (HEX, 146)], True),
    ("cloud", "cloudflare-global", [(HEX, 37)], False),
    ("cloud", "linode", [(HEX, 64)], False),
    ("cloud", "vultr", [(UPDIG, 36)], False),
    ("cloud", "hetzner", [(ALNUM, 64)], False),
    ("cloud", "scaleway-access", ["SCW", (UPDIG, 17)], True),
    ("cloud", "scaleway-secret", [UUID], False),
    ("cloud", "gcp-refresh", ["1//0", (B64URL, 99)], True),
    ("cloud", "gcp-access", ["ya29.c.", (B64URL, 200)], True),
    ("cloud", "azure-sas-sig", [(B64, 43), "="], False),
    ("cloud", "azure-apim", [(HEX, 32)], False),
    ("cloud", "yandex-iam", ["t1.", (B64URL, 180)], True),
    ("cloud", "yandex-api", ["AQVN", (B64URL, 36)], True),
    # CI systems
    ("ci", "gitlab-ci-job", ["glcbt-", (HEX, 2), "_", (B64URL, 20)], True),
    ("ci", "gitlab-trigger", ["glptt-", (HEX, 40)], True),
    ("ci", "gitlab-feed", ["glft-", (B64URL, 20)], True),
    ("ci", "gitlab-oauth-secret", ["gloas-", (HEX, 64)], True),
    ("ci", "circleci-project", ["CCIPRJ_", (ALNUM, 22), "_", (HEX, 40)], True),
    ("ci", "circleci-legacy", [(HEX, 40)], False),
    ("ci", "travis", [(ALNUM, 22)], False),
    ("ci", "jenkins-api", ["11", (HEX, 32)], False),
    ("ci", "azure-devops-new", [(ALNUM, 52), (ALNUM, 24), "AZDO", (ALNUM, 4)], True),
    ("ci", "buildkite-agent", ["bkct_", (B64URL, 40)], True),
    ("ci", "github-actions-runner", ["A", (UPDIG, 28)], False),
    ("ci", "drone", [(ALNUM, 32)], False),
    ("ci", "codemagic", [(B64URL, 43)], False),
    ("ci", "github-user-to-server", ["ghu_", (ALNUM, 36)], True),
    # databases
    ("db", "upstash-rest", ["AX", (B64URL, 4), "ASQgY", (B64URL, 60)], True),
    ("db", "influx", [(B64URL, 86), "=="], False),
    ("db", "turso-jwt", ["eyJhbGciOiJFZERTQSIsInR5cCI6IkpXVCJ9.eyJhIjoicnciLCJpYXQiOj", (B64URL, 60), ".", (B64URL, 86)], True),
    ("db", "supabase-service-role", ["eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJpc3MiOiJzdXBhYmFzZSIsInJlZiI6I", (B64URL, 90), ".", (B64URL, 43)], True),
    ("db", "neon-api", ["napi_", (LOWDIG, 64)], True),
    ("db", "fauna", ["fnA", (B64URL, 37)], True),
    ("db", "xata", ["xau_", (ALNUM, 32)], True),
    ("db", "mongodb-atlas-private", [UUID], False),
    ("db", "firebase-fcm", ["AAAA", (B64URL, 7), ":APA91b", (B64URL, 134)], True),
    ("db", "elastic-apikey", [(B64, 60), "=="], False),
    # payment
    ("pay", "stripe-test", ["sk_test_51", (ALNUM, 97)], True),
    ("pay", "stripe-restricted-test", ["rk_test_51", (ALNUM, 97)], True),
    ("pay", "checkout-sandbox", ["sk_sbox_", (LOWDIG, 26)], True),
    ("pay", "paystack", ["sk_live_", (HEX, 40)], True),
    ("pay", "gocardless", ["live_", (B64URL, 40)], True),
    ("pay", "paypal-secret", ["E", (B64URL, 79)], False),
    ("pay", "adyen", ["AQE", (B64URL + ".", 130)], True),
    ("pay", "square-sandbox", ["EAAAE", (B64URL, 59)], True),
    ("pay", "braintree-private", [(HEX, 32)], False),
    ("pay", "authorize-net", [(ALNUM, 16)], False),
    ("pay", "coinbase-cdp", ["organizations/", UUID, "/apiKeys/", UUID], True),
    ("pay", "lemonsqueezy", ["eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.eyJhdWQiOiI", (B64URL, 200), ".", (B64URL, 342)], True),
    ("pay", "razorpay-test", ["rzp_test_", (ALNUM, 14)], True),
    # messaging
    ("msg", "slack-app", ["xapp-1-A", (UPDIG, 10), "-", (DIG, 13), "-", (HEX, 64)], True),
    ("msg", "slack-config", ["xoxe.xoxp-1-", (B64URL, 150)], True),
    ("msg", "slack-refresh", ["xoxe-1-", (B64URL, 140)], True),
    ("msg", "discord-webhook", ["https://discord.com/api/webhooks/", (DIG, 18), "/", (B64URL, 68)], True),
    ("msg", "teams-webhook", ["https://acme.webhook.office.com/webhookb2/", UUID, "@", UUID, "/IncomingWebhook/", (HEX, 32), "/", UUID], True),
    ("msg", "twilio-auth", [(HEX, 32)], False),
    ("msg", "vonage-secret", [(ALNUM, 16)], False),
    ("msg", "ably", [(ALNUM, 6), ".", (ALNUM, 6), ":", (B64URL, 43)], True),
    ("msg", "pusher-secret", [(HEX, 20)], False),
    ("msg", "mailgun-new", [(HEX, 32), "-", (HEX, 8), "-", (HEX, 8)], True),
    ("msg", "mailjet", [(HEX, 32)], False),
    ("msg", "sparkpost", [(HEX, 40)], False),
    ("msg", "postmark", [UUID], False),
    ("msg", "line-channel", [(B64, 172), "="], False),
    ("msg", "zulip", [(ALNUM, 32)], False),
    ("msg", "mattermost", [(LOWDIG, 26)], False),
    ("msg", "sendbird", [(HEX, 40)], False),
    # package registries (hosts in contexts are example hosts)
    ("pkg", "npm-granular", ["npm_", (ALNUM, 36)], True),
    ("pkg", "pypi-token", ["pypi-AgEIcHlwaS5vcmcCJ", (B64URL, 150)], True),
    ("pkg", "docker-org", ["dckr_oat_", (B64URL, 32)], True),
    ("pkg", "jfrog-reference", ["cmVmdGtuOjAxOj", (ALNUM, 50)], True),
    ("pkg", "hex-pm", [(HEX, 32)], False),
    ("pkg", "cargo", ["cio", (ALNUM, 32)], True),
    ("pkg", "nuget", ["oy2", (LOWDIG, 43)], True),
    ("pkg", "rubygems", ["rubygems_", (HEX, 48)], True),
    ("pkg", "packagist", ["packagist_uat_", (ALNUM, 32)], True),
    ("pkg", "pub-dev", ["pub_", (HEX, 40)], True),
    ("pkg", "anaconda", [(ALNUM, 2), "-", (HEX, 8), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 4), "-", (HEX, 12)], False),
    # AI services
    ("ai", "anthropic-oauth", ["sk-ant-oat01-", (B64URL, 93), "AA"], True),
    ("ai", "openai-legacy", ["sk-", (ALNUM, 20), "T3BlbkFJ", (ALNUM, 20)], True),
    ("ai", "openai-admin", ["sk-admin-", (B64URL, 74), "T3BlbkFJ", (B64URL, 74)], True),
    ("ai", "azure-openai", [(HEX, 32)], False),
    ("ai", "voyage", ["pa-", (B64URL, 43)], True),
    ("ai", "together", ["tgp_v1_", (B64URL, 43)], True),
    ("ai", "cerebras", ["csk-", (LOWDIG, 48)], True),
    ("ai", "nvidia", ["nvapi-", (B64URL, 64)], True),
    ("ai", "tavily", ["tvly-", (ALNUM, 32)], True),
    ("ai", "firecrawl", ["fc-", (HEX, 32)], True),
    ("ai", "stability", ["sk-", (ALNUM, 48)], True),
    ("ai", "deepgram", [(HEX, 40)], False),
    ("ai", "assemblyai", [(HEX, 32)], False),
    ("ai", "langsmith-sk", ["lsv2_sk_", (HEX, 32), "_", (HEX, 10)], True),
    ("ai", "huggingface-org", ["api_org_", (ALNUM, 34)], True),
    ("ai", "helicone", ["sk-helicone-", (LOWDIG, 7), "-", (LOWDIG, 7), "-", (LOWDIG, 7), "-", (LOWDIG, 7)], True),
    ("ai", "runway", ["key_", (HEX, 128)], True),
    ("ai", "gemini", ["AIzaSy", (B64URL, 33)], True),
    ("ai", "cohere", [(ALNUM, 40)], False),
    # SaaS
    ("saas", "trello-token", ["ATTA", (HEX, 64), (UHEX, 8)], True),
    ("saas", "bitbucket-repo", ["ATCTT3xFfGN0", (B64URL, 180), "=", (UHEX, 8)], True),
    ("saas", "okta-ssws", ["00", (B64URL, 40)], True),
    ("saas", "auth0-secret", [(B64URL, 64)], False),
    ("saas", "doppler-cli", ["dp.ct.", (ALNUM, 43)], True),
    ("saas", "doppler-sa", ["dp.sa.", (ALNUM, 43)], True),
    ("saas", "doppler-scim", ["dp.scim.", (ALNUM, 43)], True),
    ("saas", "vault-legacy", ["s.", (ALNUM, 24)], True),
    ("saas", "vault-recovery", ["hvr.", (B64URL, 90)], True),
    ("saas", "consul-acl", [UUID], False),
    ("saas", "bitwarden-sm", ["0.", UUID, ".", (ALNUM, 30), ":", (B64, 22), "=="], True),
    ("saas", "tailscale-api", ["tskey-api-", (ALNUM, 16), "CNTRL-", (ALNUM, 32)], True),
    ("saas", "tailscale-client", ["tskey-client-", (ALNUM, 16), "CNTRL-", (ALNUM, 32)], True),
    ("saas", "honeycomb-ingest", ["hcaik_01", (LOWDIG, 56)], True),
    ("saas", "linear-oauth", ["lin_oauth_", (HEX, 64)], True),
    ("saas", "sanity", ["sk", (ALNUM, 180)], True),
    ("saas", "stytch", ["secret-live-", (B64URL, 36)], True),
    ("saas", "keygen", ["prod-", (HEX, 64), "v3"], True),
    ("saas", "convex", ["prod:", "happy-otter-", (DIG, 3), "|", (B64URL, 80)], True),
    ("saas", "grafana-legacy", ["eyJrIjoi", (B64, 60), "=="], True),
    ("saas", "rollbar", [(HEX, 32)], False),
    ("saas", "mixpanel", [(HEX, 32)], False),
    ("saas", "freshdesk", [(ALNUM, 20)], False),
    ("saas", "vercel", [(ALNUM, 24)], False),
    ("saas", "heroku-uuid", [UUID], False),
    ("saas", "snyk-token", [UUID], False),
    ("saas", "sentry-auth-legacy", [(HEX, 64)], False),
    ("saas", "pagerduty", ["u+", (B64URL, 18)], False),
    ("saas", "zoom-secret", [(ALNUM, 32)], False),
    ("saas", "shopify-partner", ["prtapi_", (HEX, 32)], True),
    ("saas", "figma-oauth", ["figu_", (B64URL, 40)], True),
    ("saas", "webflow", [(HEX, 64)], False),
    ("saas", "kubeadm-bootstrap", [(LOWDIG, 6), ".", (LOWDIG, 16)], True),
    ("saas", "wireguard-private", [(B64, 42), "A="], False),
]

# contexts for a token: {s} token, {env} env var name, {v} vendor word, {V} Capitalised vendor word,
# {h} a lower-case host-ish word. keyed=True: the context names the value (safe for unprefixed tokens).
C = tuple[str, str, bool]
CONTEXTS: list[C] = [
    ("kubeconfig-token", "users:\n- name: ci-bot\n  user:\n    token: {s}\ncontexts: []", True),
    ("docker-identitytoken", '{{"auths": {{"cr.example.com": {{"identitytoken": "{s}"}}}}, "credsStore": ""}}', True),
    ("tf-provider", 'provider "{v}" {{\n  api_token = "{s}"\n  region    = "eu-central-1"\n}}', True),
    ("tfvars", '{v}_api_key      = "{s}"\ninstance_type = "t3.small"', True),
    ("xml-add-key", '<appSettings>\n  <add key="{V}ApiKey" value="{s}" />\n</appSettings>', True),
    ("xml-element", "<{v}>\n  <apiToken>{s}</apiToken>\n  <timeout>30</timeout>\n</{v}>", True),
    ("ini-section", "[{v}]\nendpoint = https://api.example.com\ntoken={s}\n", True),
    ("toml-tool", '[tool.{v}]\ntoken = "{s}"\nverbose = false', True),
    ("properties", "{v}.api.key={s}\n{v}.api.timeout=30", True),
    ("dotenv-comment", '# {v} (rotated 2026-03)\n{env}="{s}" # do not commit', True),
    ("history-export", "  512  cd ~/src/app\n  513  export {env}='{s}'\n  514  make deploy", True),
    ("curl-token-scheme", "curl -s -H 'Authorization: Token {s}' https://api.example.com/v1/projects", True),
    ("curl-custom-header", 'curl -H "X-{V}-Token: {s}" https://api.example.com/status', True),
    ("curl-token-as-user", "curl https://api.example.com/v1/charges -u {s}:", True),
    ("curl-api-user", "curl -s --user 'api:{s}' https://api.example.com/v3/messages", True),
    ("httpie", 'http GET https://api.example.com/me "Authorization:Bearer {s}"', True),
    ("wget-header", "wget --header='Authorization: Bearer {s}' https://files.example.com/build.tgz", True),
    ("actions-debug", "##[debug]Evaluating: secrets.{env}\n##[debug]Result: '{s}'", True),
    ("json-log", '{{"level":"debug","msg":"outgoing request","headers":{{"authorization":"Bearer {s}","accept":"*/*"}}}}', True),
    ("python-nested-dict", "CONFIG = {{'{v}': {{'key': '{s}', 'retries': 3}}}}", True),
    ("js-nullish", "const client = new Client({{ apiKey: process.env.{env} ?? '{s}' }});", True),
    ("rust-let", 'let {v}_token = "{s}";', True),
    ("java-const", 'private static final String {env} = "{s}";', True),
    ("go-setenv", 'os.Setenv("{env}", "{s}")', True),
    ("k8s-env-list", 'env:\n  - name: {env}\n    value: "{s}"\n  - name: LOG_LEVEL\n    value: info', True),
    ("compose-env-list", "services:\n  api:\n    environment:\n      - {env}={s}\n      - TZ=UTC", True),
    ("helm-set", "helm upgrade --install api ./chart --set {v}.apiKey={s} --namespace prod", True),
    ("vault-kv-put", "vault kv put secret/app {v}_key={s}", True),
    ("markdown-table", "| variable | value |\n|---|---|\n| `{env}` | `{s}` |", True),
    ("stringified-json", '"settings": "{{\\"{v}Token\\":\\"{s}\\",\\"debug\\":false}}"', True),
    ("git-credentials", "$ cat ~/.git-credentials\nhttps://ci-bot:{s}@git.example.com", True),
    ("netrc-oneline", "machine api.{h}.example.com login ci password {s}", True),
    ("npmrc-scoped", "@acme:registry=https://pkgs.example.com/npm/\n//pkgs.example.com/npm/:_authToken={s}\nalways-auth=true", True),
    ("yarnrc", 'npmScopes:\n  acme:\n    npmAuthToken: "{s}"\n    npmRegistryServer: "https://pkgs.example.com"', True),
    ("spring-props", "spring.cloud.{v}.credentials.secret={s}", True),
    ("dotnet-user-secrets", 'dotnet user-secrets set "{V}:ApiKey" "{s}"', True),
    ("cli-login-flag", "{v} login --token {s} --non-interactive", True),
    ("heroku-config", "heroku config:set {env}={s} -a acme-prod", True),
    ("fly-secrets", "fly secrets set {env}={s}", True),
    ("powershell-env", '[Environment]::SetEnvironmentVariable("{env}", "{s}", "User")', True),
    # bare: only the token's own shape can give it away
    ("prose-fr", "Voici ma clé {v} : {s} (ne la partage pas)", False),
    ("prose-de", "Mein {V}-Zugang funktioniert nicht mehr, Schlüssel {s}", False),
    ("prose-es", "mi token de {v} es {s}, ¿por qué falla?", False),
    ("error-repr", "ValueError: invalid credential '{s}' for tenant acme", False),
    ("gh-with-token", "gh auth login --with-token <<< {s}", False),
    ("git-remote-user", "git remote set-url origin https://{s}@git.example.com/acme/app.git", False),
    ("csharp-ctor", 'var client = new {V}Client("{s}");', False),
    ("chat-paste", "ok pasted it:\n\n{s}\n\nstill 401", False),
]


def make_token(fmt: list, rng: random.Random) -> str:
    out = []
    for part in fmt:
        if part == UUID:
            out.append(_uuid(rng))
        elif isinstance(part, str):
            out.append(part)
        else:
            chars, n = part
            out.append("".join(rng.choices(chars, k=n)))
    return "".join(out)


def env_name(vendor: str, rng: random.Random) -> str:
    base = vendor.split("-")[0].upper()
    return base + rng.choice(["_API_TOKEN", "_SECRET_KEY", "_CLIENT_SECRET", "_ACCESS_KEY", "_APIKEY", "_TOKEN", "_CREDENTIAL"])


# other secret kinds: (kind, maker) -> (text, secret)
Maker = Callable[[random.Random], tuple[str, str]]


def pw(r: random.Random) -> str:
    words = ["Harbor", "lantern", "Granite", "otter", "Velvet", "comet", "Juniper", "walrus", "Saffron", "meadow",
             "Thunder", "pebble", "Crimson", "badger", "Tundra", "Mosaic", "kettle", "Orchid", "Zephyr", "nickel"]
    shape = r.randrange(6)
    if shape == 0:
        return r.choice(words) + r.choice(".-_") + str(r.randint(1970, 2031)) + r.choice("!#%+=")
    if shape == 1:
        return "".join(r.choices(ALNUM + "!#%+=-_.~", k=r.randint(12, 20)))
    if shape == 2:
        return r.choice(words) + r.choice(words).lower() + r.choice("!?") + str(r.randint(0, 99))
    if shape == 3:
        return "".join(r.choices(LOWDIG, k=r.randint(9, 14)))
    if shape == 4:
        return "-".join(r.choice(words).lower() for _ in range(4))  # a passphrase
    return r.choice(words)[:3] + str(r.randint(100, 999)) + r.choice(words)[-3:].upper() + r.choice("$&*")


def b64(s: str) -> str:
    return base64.b64encode(s.encode()).decode()


def rnd(r: random.Random, chars: str, n: int) -> str:
    return "".join(r.choices(chars, k=n))


def pem(r: random.Random, kind: str, lines: int = 8, headers: str = "") -> str:
    body = "\n".join(rnd(r, B64, 64) for _ in range(lines)) + "\n" + rnd(r, B64, 24) + "=="
    return f"-----BEGIN {kind}-----\n{headers}{body}\n-----END {kind}-----"


def body_line(block: str) -> str:
    """A line from the middle of a key block: if it survives, the key leaked (a whole block as the secret
    would count a half-redacted block as caught)."""
    lines = block.replace("\\n", "\n").split("\n")
    return lines[len(lines) // 2]


def _p(fmt: str, make: Callable[[random.Random], str] = pw) -> Maker:
    """A maker: ``fmt`` with a fresh secret as {p} (plain), {b} (base64) or {q} (percent-encoded); the
    secret to find is the form the text holds."""
    def m(r: random.Random) -> tuple[str, str]:
        p = make(r)
        forms = {"p": p, "b": b64(p), "q": urllib.parse.quote(p, safe="")}
        shown = next(k for k in "pbq" if "{" + k + "}" in fmt)
        return fmt.format(**forms), forms[shown]
    return m


KINDS: list[tuple[str, Maker]] = [
    # shell history and CLI tools
    ("docker-login-p", _p("docker login -u deploy -p {p} cr.example.com")),
    ("helm-repo-password", _p("helm repo add internal https://charts.example.com --username ci --password '{p}'")),
    ("redis-cli-a", _p("redis-cli -h cache.internal -a '{p}' ping")),
    ("mysql-long-password", _p("mysql --host=db1 --user=app --password={p} app < dump.sql")),
    ("sqlcmd-P", _p("sqlcmd -S tcp:db.example.com,1433 -U sa -P '{p}' -Q 'SELECT 1'")),
    ("wget-password", _p("wget --user=ci --password='{p}' https://files.example.com/nightly.tar.gz")),
    ("smbclient-percent", _p("smbclient //fs01/share -U 'CORP\\svc_backup%{p}'")),
    ("rsync-password-env", _p("RSYNC_PASSWORD='{p}' rsync -av backup@nas::data /mnt/data")),
    ("openssl-passout", _p("openssl pkcs12 -export -in cert.pem -inkey key.pem -out bundle.p12 -passout pass:{p}")),
    ("openssl-enc-k", _p("openssl enc -aes-256-cbc -salt -in db.sql -out db.sql.enc -k '{p}'")),
    ("keytool-storepass", _p("keytool -importcert -keystore truststore.jks -storepass {p} -file ca.crt -noprompt")),
    ("zip-P", _p("zip -r -P '{p}' backup.zip ./secrets")),
    ("7z-p", _p("7z a -p{p} -mhe=on archive.7z docs/", lambda r: rnd(r, ALNUM, 14))),
    ("gpg-passphrase", _p("gpg --batch --pinentry-mode loopback --passphrase '{p}' -d notes.gpg")),
    ("aws-configure-set", _p("aws configure set aws_secret_access_key {p} --profile prod", lambda r: rnd(r, B64, 40))),
    ("az-account-key", _p("az storage blob upload --account-name acme --account-key {p} -f a.txt -c c", lambda r: rnd(r, B64, 86) + "==")),
    ("net-user-add", _p("net user svc_deploy {p} /add /domain")),
    ("mysqladmin-password", _p("mysqladmin -u root password '{p}'")),
    ("ssh-keygen-N", _p("ssh-keygen -t ed25519 -N '{p}' -f ~/.ssh/deploy")),
    ("psql-conninfo", _p("psql \"host=db.internal port=5432 dbname=app user=app password={p} sslmode=require\"")),
    ("mongosh-uri", _p("mongosh \"mongodb+srv://admin:{p}@cluster0.ab1cd.mongodb.net/test\"", lambda r: rnd(r, ALNUM, 16))),
    ("ldapsearch-w", _p("ldapsearch -x -H ldaps://ldap.example.com -D 'cn=admin,dc=example,dc=com' -w '{p}' '(uid=*)'")),
    ("curl-oauth2-bearer", _p("curl --oauth2-bearer {p} https://api.example.com/v1/me", lambda r: rnd(r, B64URL, 40))),
    ("curl-data-password", _p("curl -X POST https://auth.example.com/login -d 'username=admin&password={q}'")),
    ("curl-json-body", _p("curl -X POST https://api.example.com/session -H 'Content-Type: application/json' -d '{{\"user\":\"ops\",\"password\":\"{p}\"}}'")),
    ("curl-cookie", _p("curl -b 'session_id={p}' https://app.example.com/admin", lambda r: rnd(r, B64URL, 48))),
    ("set-cookie-out", _p("< HTTP/2 200\n< set-cookie: __Host-session={p}; Path=/; Secure; HttpOnly", lambda r: rnd(r, B64URL, 64))),
    ("echo-base64-d", _p("echo {b} | base64 -d > ~/.pgpass")),
    ("kubectl-from-literal", _p("kubectl create secret generic db --from-literal=password='{p}' -n prod")),
    ("sshpass-env", _p("SSHPASS='{p}' sshpass -e ssh deploy@10.0.0.12")),
    # config files
    ("my-cnf", _p("[client]\nuser=root\npassword=\"{p}\"\nhost=127.0.0.1")),
    ("pgpass-wild", _p("*:*:*:replicator:{p}")),
    ("pypirc", _p("[pypi]\nusername = __token__\npassword = {p}", lambda r: "pypi-AgEIcHlwaS5vcmcCJ" + rnd(r, B64URL, 120))),
    ("pip-conf-url", _p("[global]\nindex-url = https://ci:{p}@pkgs.example.com/simple/", lambda r: rnd(r, ALNUM, 20))),
    ("maven-settings", _p("<server>\n  <id>internal</id>\n  <username>deployer</username>\n  <password>{p}</password>\n</server>")),
    ("gradle-props", _p("ossrhUsername=acme\nossrhPassword={p}\nsigning.keyId=24875D73")),
    ("composer-auth", _p('{{"http-basic": {{"repo.example.com": {{"username": "ci", "password": "{p}"}}}}}}')),
    ("composer-github-oauth", _p('{{"github-oauth": {{"github.com": "{p}"}}}}', lambda r: "gho_" + rnd(r, ALNUM, 36))),
    ("filezilla-b64", _p('<Server>\n  <Host>ftp.example.com</Host>\n  <User>web</User>\n  <Pass encoding="base64">{b}</Pass>\n</Server>')),
    ("webconfig-conn", _p('<add name="Default" connectionString="Data Source=sql01;Initial Catalog=App;User Id=app;Password={p};" />')),
    ("appsettings-json", _p('{{\n  "ConnectionStrings": {{\n    "Default": "Host=db;Database=app;Username=app;Password={p}"\n  }}\n}}')),
    ("spring-yaml", _p("spring:\n  datasource:\n    url: jdbc:postgresql://db:5432/app\n    username: app\n    password: {p}")),
    ("jdbc-query", _p("jdbc:mysql://db.example.com:3306/app?user=app&password={q}&useSSL=true")),
    ("jdbc-sqlserver", _p("jdbc:sqlserver://sql01:1433;databaseName=app;user=sa;password={p};encrypt=true")),
    ("compose-postgres", _p("    environment:\n      POSTGRES_USER: app\n      POSTGRES_PASSWORD: {p}")),
    ("ansible-become", _p("[web]\nweb1 ansible_host=10.0.0.5 ansible_user=deploy ansible_become_pass={p}")),
    ("helm-values-auth", _p("postgresql:\n  auth:\n    rootPassword: \"{p}\"\n    database: app")),
    ("tf-variable-default", _p('variable "db_password" {{\n  type    = string\n  default = "{p}"\n}}')),
    ("tf-aws-provider", _p('provider "aws" {{\n  access_key = "AKIA{a}"\n  secret_key = "{p}"\n}}'.replace("{a}", "QWERTYUIOPASDFGH"), lambda r: rnd(r, B64, 40))),
    ("k8s-secret-password-b64", _p("apiVersion: v1\nkind: Secret\ntype: Opaque\ndata:\n  username: YWRtaW4=\n  password: {b}")),
    ("k8s-stringdata", _p("kind: Secret\nstringData:\n  DATABASE_PASSWORD: \"{p}\"")),
    ("kubeconfig-client-key", lambda r: ((p := b64(pem(r, "RSA PRIVATE KEY", 4))),
                                         f"users:\n- name: admin\n  user:\n    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t\n    client-key-data: {p}")[::-1]),
    ("docker-config-b64-auth", _p('{{\n  "auths": {{\n    "cr.example.com": {{\n      "auth": "{b}"\n    }}\n  }}\n}}', lambda r: "robot$ci:" + rnd(r, ALNUM, 32))),
    ("dockerconfigjson-b64", lambda r: ((p := b64('{"auths":{"cr.example.com":{"username":"ci","password":"' + pw(r) + '"}}}')),
                                        f"data:\n  .dockerconfigjson: {p}\ntype: kubernetes.io/dockerconfigjson")[::-1]),
    ("git-extraheader", _p("[http \"https://git.example.com/\"]\n\textraheader = AUTHORIZATION: basic {b}", lambda r: "x-token:" + rnd(r, ALNUM, 30))),
    ("wpa-psk", _p('network={{\n    ssid="office"\n    psk="{p}"\n}}')),
    ("wireguard", _p("[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {p}\nDNS = 1.1.1.1", lambda r: rnd(r, B64, 42) + "A=")),
    ("rclone-conf", _p("[s3remote]\ntype = s3\naccess_key_id = AKIAZXCVBNMLKJHGFDSA\nsecret_access_key = {p}", lambda r: rnd(r, B64, 40))),
    ("s3cfg", _p("[default]\naccess_key = AKIAPOIUYTREWQLKJHGF\nsecret_key = {p}", lambda r: rnd(r, B64, 40))),
    ("streamlit-secrets", _p('[connections.db]\ndialect = "postgresql"\nusername = "app"\npassword = "{p}"')),
    ("ini-smtp", _p("[mail]\nsmtp_host = smtp.example.com\nsmtp_user = noreply\nsmtp_pwd = {p}")),
    ("neo4j-auth", _p("NEO4J_AUTH=neo4j/{p}")),
    ("oracle-sqlplus", _p("sqlplus system/{p}@//db.example.com:1521/ORCLPDB1", lambda r: rnd(r, ALNUM, 12))),
    # framework secrets
    ("django-secret", _p("SECRET_KEY = '{p}'", lambda r: "django-insecure-" + rnd(r, LOWDIG + "!@#$%^&*(-_=+)", 50))),
    ("rails-secret-base", _p("production:\n  secret_key_base: {p}", lambda r: rnd(r, HEX, 128))),
    ("rails-master-key", _p("$ cat config/master.key\n{p}", lambda r: rnd(r, HEX, 32))),
    ("laravel-app-key", _p("APP_KEY=base64:{p}", lambda r: rnd(r, B64, 43) + "=")),
    ("flask-bytes", _p("app.secret_key = b'{p}'", lambda r: rnd(r, HEX, 32))),
    ("nextauth-secret", _p("NEXTAUTH_SECRET={p}", lambda r: rnd(r, B64, 43) + "=")),
    ("symfony-secret", _p("APP_SECRET={p}", lambda r: rnd(r, HEX, 32))),
    ("jwt-secret-yaml", _p("auth:\n  jwtSecret: {p}", lambda r: rnd(r, ALNUM, 48))),
    ("session-secret-js", _p("app.use(session({{ secret: '{p}', resave: false }}))", lambda r: rnd(r, ALNUM, 32))),
    ("encryption-key-env", _p("ENCRYPTION_KEY={p}", lambda r: rnd(r, HEX, 64))),
    ("webhook-signing", _p("signing_secret: {p}", lambda r: rnd(r, HEX, 32))),
    # key material
    ("pem-ec", lambda r: ((p := pem(r, "EC PRIVATE KEY", 3)), f"$ openssl ecparam -genkey -name prime256v1\n{p}")[::-1]),
    ("pem-encrypted", lambda r: ((p := pem(r, "ENCRYPTED PRIVATE KEY", 12)), p)[::-1]),
    ("pem-rsa-proc-type", lambda r: ((p := pem(r, "RSA PRIVATE KEY", 10, "Proc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC," + rnd(r, UHEX, 32) + "\n\n")), p)[::-1]),
    ("pem-in-json-escaped", lambda r: ((p := pem(r, "PRIVATE KEY", 6).replace("\n", "\\n")),
                                        f'{{"client_email": "svc@acme-1.iam.gserviceaccount.com", "private_key": "{p}"}}')[::-1]),
    ("pem-in-yaml-block", lambda r: ((p := pem(r, "OPENSSH PRIVATE KEY", 5)),
                                      "deploy_key: |\n  " + p.replace("\n", "\n  "))[::-1]),
    ("openvpn-static", lambda r: ((p := "\n".join(rnd(r, HEX, 32) for _ in range(16))),
                                  f"<tls-auth>\n-----BEGIN OpenVPN Static key V1-----\n{p}\n-----END OpenVPN Static key V1-----\n</tls-auth>")[::-1]),
    ("putty-ppk", lambda r: ((p := rnd(r, B64, 64)),
                             f"PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nComment: deploy\nPublic-Lines: 2\n{rnd(r, B64, 64)}\n{rnd(r, B64, 4)}\nPrivate-Lines: 1\n{p}\nPrivate-MAC: {rnd(r, HEX, 64)}")[::-1]),
    ("minisign-secret", lambda r: ((p := "RWRTY0Iy" + rnd(r, B64, 204)), f"untrusted comment: minisign encrypted secret key\n{p}")[::-1]),
    ("jwk-rsa-private", lambda r: ((p := rnd(r, B64URL, 342)),
                                   f'{{"kty":"RSA","n":"{rnd(r, B64URL, 342)}","e":"AQAB","d":"{p}","p":"{rnd(r, B64URL, 171)}"}}')[::-1]),
    ("pem-base64-env", lambda r: ((p := b64(pem(r, "EC PRIVATE KEY", 3))), f"export TLS_KEY_B64=\"{p}\"")[::-1]),
    ("pem-base64-bare", lambda r: ((p := b64(pem(r, "RSA PRIVATE KEY", 4))), f"the key file is\n{p}")[::-1]),
    # JWTs and tokens in HTTP
    ("jwt-rs256-cookie", lambda r: ((p := "eyJhbGciOiJSUzI1NiIsImtpZCI6IjEifQ." + b64('{"sub":"u' + str(r.randint(1, 10**6)) + '","iat":1780000000}').rstrip("=") + "." + rnd(r, B64URL, 342)),
                                    f"Cookie: theme=dark; access_token={p}")[::-1]),
    ("jwe", lambda r: ((p := "eyJhbGciOiJSU0EtT0FFUCIsImVuYyI6IkEyNTZHQ00ifQ." + rnd(r, B64URL, 342) + "." + rnd(r, B64URL, 16) + "." + rnd(r, B64URL, 60) + "." + rnd(r, B64URL, 22)),
                       f"id_token: {p}")[::-1]),
    ("jwt-bare-prose", lambda r: ((p := "eyJ0eXAiOiJKV1QiLCJhbGciOiJFUzI1NiJ9." + b64('{"iss":"acme","exp":1799999999}').rstrip("=") + "." + rnd(r, B64URL, 86)),
                                  f"I decoded {p} and the exp looks fine")[::-1]),
    ("k8s-sa-token", lambda r: ((p := "eyJhbGciOiJSUzI1NiIsImtpZCI6I" + rnd(r, B64URL, 40) + "." + rnd(r, B64URL, 400) + "." + rnd(r, B64URL, 342)),
                                f"$ kubectl create token ci\n{p}")[::-1]),
    ("header-private-token", _p("curl --header \"PRIVATE-TOKEN: {p}\" https://git.example.com/api/v4/projects", lambda r: rnd(r, B64URL, 20))),
    ("header-x-auth-key", _p("curl -H 'X-Auth-Email: ops@example.com' -H 'X-Auth-Key: {p}' https://api.example.com/client/v4/zones", lambda r: rnd(r, HEX, 37))),
    ("header-ocp-apim", _p("Ocp-Apim-Subscription-Key: {p}", lambda r: rnd(r, HEX, 32))),
    ("header-apikey-lower", _p("curl 'https://abc.example.co/rest/v1/items' -H 'apikey: {p}'", lambda r: rnd(r, B64URL, 40))),
    ("header-dd-api-key", _p("-H \"DD-API-KEY: {p}\"", lambda r: rnd(r, HEX, 32))),
    ("header-api-token", _p("Api-Token: {p}", lambda r: rnd(r, ALNUM, 32))),
    ("header-vault-token", _p("curl -H \"X-Vault-Token: {p}\" https://vault.example.com/v1/secret/data/app", lambda r: "hvs." + rnd(r, B64URL, 24))),
    ("header-authorization-apikey", _p("Authorization: ApiKey {b}", lambda r: rnd(r, B64URL, 20) + ":" + rnd(r, B64URL, 22))),
    ("header-sswss", _p("Authorization: SSWS {p}", lambda r: "00" + rnd(r, B64URL, 40))),
    ("header-digest", _p('Authorization: Digest username="ops", realm="api", nonce="dcd98b", uri="/", response="{p}"', lambda r: rnd(r, HEX, 32))),
    ("header-aws-sigv4", _p("Authorization: AWS4-HMAC-SHA256 Credential=AKIAIOSFODNN7EXAMPLE/20260101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature={p}", lambda r: rnd(r, HEX, 64))),
    ("header-x-amz-security-token", _p("x-amz-security-token: {p}", lambda r: "IQoJb3JpZ2luX2VjE" + rnd(r, B64, 200))),
    # URLs
    ("url-sas", _p("https://acme.blob.core.windows.net/backups/db.bak?sv=2022-11-02&ss=b&srt=o&sp=r&se=2026-12-31T00:00:00Z&sig={q}", lambda r: rnd(r, B64, 43) + "=")),
    ("url-gcs-signed", _p("https://storage.googleapis.com/b/o.tar?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Date=20260101T000000Z&X-Goog-Signature={p}", lambda r: rnd(r, HEX, 256))),
    ("url-key-param", _p("GET /v1/geocode?address=berlin&key={p} HTTP/1.1", lambda r: "AIza" + rnd(r, B64URL, 35))),
    ("url-auth-param", _p("https://hooks.example.com/trigger?auth={p}&event=deploy", lambda r: rnd(r, ALNUM, 32))),
    ("url-password-param", _p("https://router.local/cgi-bin/login?username=admin&password={q}")),
    ("url-access-token-fragment", _p("https://app.example.com/callback#access_token={p}&token_type=bearer&expires_in=3600", lambda r: rnd(r, B64URL, 40))),
    ("url-userinfo-pct", _p("amqps://worker:{q}@mq.example.com:5671/prod", lambda r: pw(r) + "@:/")),
    ("url-userinfo-empty-user", _p("rediss://:{p}@cache.example.com:6380/0", lambda r: rnd(r, ALNUM, 32))),
    ("url-ftp", _p("ftp://upload:{p}@ftp.example.com/incoming/")),
    ("url-smtp", _p("MAIL_URL=smtp://noreply%40example.com:{p}@smtp.example.com:587")),
    ("url-snowflake", _p("snowflake://loader:{p}@ab12345.eu-central-1/analytics/public?warehouse=wh")),
    ("url-token-path", _p("POST https://api.example.com/v1/webhooks/incoming/{p}/deliver", lambda r: rnd(r, ALNUM, 40))),
    ("url-pct-b64-token", _p("https://api.example.com/oauth/authorize?client_secret={q}", lambda r: rnd(r, B64, 30) + "+/=")),
    # prose and values split, repeated, encoded
    ("prose-the-password-is", _p("the wifi password is {p} by the way")),
    ("prose-pw-arrow", _p("prod db -> user: app, pw -> {p}")),
    ("prose-de-passwort", _p("Das Passwort für den Server lautet {p}")),
    ("prose-fr-mdp", _p("le mot de passe root est {p}")),
    ("prose-es-contrasena", _p("la contraseña es {p}")),
    ("prose-creds-slash", _p("creds: admin / {p}")),
    ("repeat-after-key", lambda r: ((p := pw(r)), f"ADMIN_PASSWORD={p}\n$ ./login.sh admin\nusing {p} for admin")[::-1]),
    ("split-concat-py", lambda r: (lambda a, b: (f'TOKEN = "{a}" + "{b}"', b))("ghp_" + rnd(r, ALNUM, 18), rnd(r, ALNUM, 18))),
    ("split-concat-js", lambda r: (lambda a, b: (f"const key = '{a}' +\n  '{b}';", b))("sk-ant-api03-" + rnd(r, B64URL, 40), rnd(r, B64URL, 53) + "AA")),
    ("split-implicit-py", lambda r: (lambda a, b: (f'api_key = (\n    "{a}"\n    "{b}"\n)', b))(rnd(r, HEX, 32), rnd(r, HEX, 32))),
    ("b64-aws-pair", _p("CREDS_B64={b}", lambda r: "AKIA" + rnd(r, B32, 16) + ":" + rnd(r, B64, 40))),
    ("b64-env-file", _p("$ echo $DOTENV_B64\n{b}", lambda r: "DB_PASSWORD=" + pw(r) + "\nAPI_TOKEN=" + rnd(r, ALNUM, 32) + "\n")),
    ("b64-basic-in-json", _p('{{"headers": {{"Authorization": "Basic {b}"}}}}', lambda r: "admin:" + pw(r))),
    ("pct-form-body", _p("POST /login HTTP/1.1\nContent-Type: application/x-www-form-urlencoded\n\nusername=ops&password={q}&remember=1", lambda r: pw(r) + "&#")),
    ("sql-postgres-alter", _p("ALTER ROLE app WITH PASSWORD '{p}' VALID UNTIL '2027-01-01';")),
    ("sql-mssql-login", _p("CREATE LOGIN [etl] WITH PASSWORD=N'{p}', CHECK_POLICY=OFF;")),
    ("sql-set-password", _p("SET PASSWORD FOR 'app'@'%' = '{p}';")),
    ("sql-dblink", _p("CREATE DATABASE LINK remote CONNECT TO scott IDENTIFIED BY {p} USING 'orcl';", lambda r: rnd(r, ALNUM, 12))),
    ("code-kotlin-const", _p('const val API_SECRET = "{p}"', lambda r: rnd(r, ALNUM, 32))),
    ("code-swift-let", _p('let apiKey = "{p}"', lambda r: rnd(r, ALNUM, 32))),
    ("code-ruby-hash", _p("Stripe.api_key = '{p}'", lambda r: "sk_live_" + rnd(r, ALNUM, 24))),
    ("code-php-define", _p("define('AUTH_KEY', '{p}');", lambda r: rnd(r, ALNUM + "!@#$%^&*()-_[]{}<>~`+=,.;:/?|", 64).replace("'", "x"))),
    ("code-elixir-config", _p("config :app, App.Repo, password: \"{p}\"")),
    ("code-yaml-anchor", _p("defaults: &defaults\n  adapter: postgresql\n  password: {p}\ndevelopment:\n  <<: *defaults")),
    ("code-env-fallback-js", _p("const secret = process.env.JWT_SECRET || '{p}';", lambda r: rnd(r, ALNUM, 40))),
    ("code-dict-get-default", _p("password = settings.get('DB_PASSWORD', '{p}')")),
]

BLOCKS = {"pem-ec", "pem-encrypted", "pem-rsa-proc-type", "pem-in-json-escaped", "pem-in-yaml-block", "openvpn-static"}

NEGATIVES: list[tuple[str, Callable[[random.Random], str]]] = [
    ("actions-secret-ref", lambda r: "env:\n  NPM_TOKEN: ${{ secrets.NPM_TOKEN }}\n  API_KEY: ${{ secrets.API_KEY }}"),
    ("tf-var-ref", lambda r: 'password = var.db_password\napi_token = data.vault_generic_secret.app.data["token"]'),
    ("k8s-secret-ref", lambda r: "valueFrom:\n  secretKeyRef:\n    name: db-credentials\n    key: password"),
    ("oauth-response-meta", lambda r: '{"token_type": "Bearer", "expires_in": 3599, "scope": "read write"}'),
    ("go-sum", lambda r: f"golang.org/x/crypto v0.{r.randint(10, 30)}.0 h1:{rnd(r, B64, 43)}="),
    ("cargo-lock", lambda r: f'name = "serde"\nversion = "1.0.{r.randint(100, 220)}"\nchecksum = "{rnd(r, HEX, 64)}"'),
    ("poetry-lock", lambda r: f'{{file = "requests-2.32.3-py3-none-any.whl", hash = "sha256:{rnd(r, HEX, 64)}"}},'),
    ("pip-hash", lambda r: f"certifi==2024.8.30 \\\n    --hash=sha256:{rnd(r, HEX, 64)}"),
    ("lfs-pointer", lambda r: f"version https://git-lfs.github.com/spec/v1\noid sha256:{rnd(r, HEX, 64)}\nsize {r.randint(1000, 10**7)}"),
    ("etag", lambda r: f'ETag: "{rnd(r, HEX, 40)}"'),
    ("amz-request-id", lambda r: f"x-amz-request-id: {rnd(r, UPDIG, 16)}"),
    ("certificate", lambda r: "-----BEGIN CERTIFICATE-----\n" + "\n".join(rnd(r, B64, 64) for _ in range(5)) + "\n-----END CERTIFICATE-----"),
    ("pgp-public", lambda r: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(rnd(r, B64, 64) for _ in range(4)) + "\n-----END PGP PUBLIC KEY BLOCK-----"),
    ("age-recipient", lambda r: "age -r age1" + rnd(r, "qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58) + " -o secrets.age secrets.txt"),
    ("wireguard-public", lambda r: f"[Peer]\nPublicKey = {rnd(r, B64, 42)}A=\nAllowedIPs = 10.8.0.0/24"),
    ("google-client-id", lambda r: f"client_id: {r.randint(10**11, 10**12)}-{rnd(r, LOWDIG, 32)}.apps.googleusercontent.com"),
    ("git-log-oneline", lambda r: "\n".join(f"{rnd(r, HEX, 7)} Fix flaky test in auth module" for _ in range(3))),
    ("rev-parse", lambda r: f"$ git rev-parse HEAD\n{rnd(r, HEX, 40)}"),
    ("webpack-chunks", lambda r: f"dist/assets/index-{rnd(r, B64URL, 8)}.js   142.31 kB │ gzip: 45.77 kB"),
    ("css-modules", lambda r: f'<div class="css-{rnd(r, LOWDIG, 6)} Button_primary__{rnd(r, B64URL, 5)}">'),
    ("words", lambda r: "passwordless login uses the tokenizer; keycloak and the secretary handle keys"),
    ("bearer-placeholder", lambda r: "Authorization: Bearer <token>"),
    ("bearer-subshell", lambda r: 'curl -H "Authorization: Bearer $(gcloud auth print-access-token)" https://example.com'),
    ("bearer-var-brace", lambda r: 'curl -H "Authorization: Bearer ${API_TOKEN}" https://api.example.com'),
    ("empty-values", lambda r: 'PASSWORD=""\napi_key = None\ntoken: null\nsecret: ""'),
    ("password-flag-file", lambda r: "mysql --defaults-extra-file=~/.my.cnf --password-file=/run/secrets/db app"),
    ("token-stdin", lambda r: "cat token.txt | docker login --username ci --password-stdin cr.example.com"),
    ("env-reads", lambda r: "key = process.env.API_KEY\nsecret = os.environ['SECRET_KEY']"),
    ("key-id", lambda r: 'kid: "2026-01-rotating"\nalg: "RS256"'),
    ("claude-tool-id", lambda r: f'{{"type": "tool_use", "id": "toolu_01{rnd(r, ALNUM, 22)}", "name": "Bash"}}'),
    ("claude-request-id", lambda r: f"request_id: req_011C{rnd(r, ALNUM, 20)}"),
    ("openai-call-id", lambda r: f'{{"type": "function_call", "call_id": "call_{rnd(r, ALNUM, 24)}", "name": "shell"}}'),
    ("openai-chatcmpl", lambda r: f'"id": "chatcmpl-{rnd(r, ALNUM, 29)}", "object": "chat.completion"'),
    ("openai-file-id", lambda r: f"uploaded file-{rnd(r, ALNUM, 22)} (purpose=assistants)"),
    ("stripe-object-ids", lambda r: f"customer cus_{rnd(r, ALNUM, 14)} paid invoice in_{rnd(r, ALNUM, 24)} via pi_{rnd(r, ALNUM, 24)}"),
    ("container-id", lambda r: f"$ docker ps -q --no-trunc\n{rnd(r, HEX, 64)}"),
    ("k8s-uid", lambda r: f"  uid: {_uuid(r)}\n  resourceVersion: \"{r.randint(10**5, 10**7)}\""),
    ("sentry-event", lambda r: f"Sentry captured event {rnd(r, HEX, 32)}"),
    ("csp-hash", lambda r: f"Content-Security-Policy: script-src 'self' 'sha256-{rnd(r, B64, 43)}='"),
    ("session-uuid", lambda r: f"resuming session {_uuid(r)} in /home/dev/src/app"),
    ("ssh-fingerprint", lambda r: f"ED25519 key fingerprint is SHA256:{rnd(r, B64, 43)}."),
    ("known-hosts", lambda r: f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{rnd(r, B64, 43)}"),
    ("base64-json-plain", lambda r: f"payload: {b64(json.dumps({'event': 'deploy', 'sha': rnd(r, HEX, 7), 'env': 'prod'}))}"),
    ("python-hexdigest", lambda r: f">>> hashlib.md5(b'hello').hexdigest()\n'{rnd(r, HEX, 32)}'"),
    ("i18n-password", lambda r: '"password_reset_title": "Reset your password", "token_expired": "Your link expired"'),
    ("prose-password-policy", lambda r: "Passwords are hashed with argon2id; the token lifetime is 15 minutes."),
    ("url-next-param", lambda r: "https://app.example.com/login?next=%2Fdashboard%3Ftab%3Dbilling&lang=en"),
    ("ms-graph-ids", lambda r: f"tenant {_uuid(r)} app {_uuid(r)}"),
    ("version-tags", lambda r: f"image: ghcr.io/acme/api:v2.{r.randint(0, 9)}.{r.randint(0, 20)}-{rnd(r, HEX, 7)}"),
    ("slack-channel-ids", lambda r: f"posted to C0{rnd(r, UPDIG, 8)} by U0{rnd(r, UPDIG, 8)}"),
]


def build() -> list[dict]:
    rng = random.Random(SEED)
    rows: list[dict] = []
    keyed = [c for c in CONTEXTS if c[2]]
    for family, vendor, fmt, prefixed in FORMATS:
        pool = CONTEXTS if prefixed else keyed
        for ctx, tpl, _ in rng.sample(pool, k=2):
            tok = make_token(fmt, rng)
            word = vendor.split("-")[0]
            text = tpl.format(s=tok, env=env_name(vendor, rng), v=word, V=word.capitalize(), h=word)
            rows.append({"text": text, "secret": tok, "source": f"gen-held2:{family}:{vendor}:{ctx}"})
        # a base64-wrapped copy under a secret-naming key, as in a Kubernetes Secret
        if rng.random() < 0.25:
            enc = b64(make_token(fmt, rng))
            rows.append({"text": f"data:\n  {vendor.replace('-', '_')}_token: {enc}", "secret": enc,
                         "source": f"gen-held2:{family}:{vendor}:k8s-data-b64"})
    for name, make in KINDS:
        for _ in range(2):
            text, secret = make(rng)
            if name in BLOCKS:
                secret = body_line(secret)
            rows.append({"text": text, "secret": secret, "source": f"gen-held2:kind:{name}"})
    for name, make_neg in NEGATIVES:
        for _ in range(3):
            rows.append({"text": make_neg(rng), "secret": None, "source": f"gen-held2:neg:{name}"})
    seen, out = set(), []
    for x in rows:
        if x["text"] not in seen:
            assert x["secret"] is None or x["secret"] in x["text"], x
            seen.add(x["text"])
            out.append(x)
    return out


def main() -> None:
    rows = build()
    with open(HERE / "gen_heldout2.jsonl", "w", encoding="utf-8") as f:
        for x in rows:
            f.write(json.dumps(x, ensure_ascii=False) + "\n")
    pos = sum(x["secret"] is not None for x in rows)
    print(f"gen_heldout2.jsonl: {pos} positives, {len(rows) - pos} negatives")


if __name__ == "__main__":
    main()
