# ruff: noqa: E501  (a table of cases: one case per line reads best)
"""Issue 12, third pass: each leak kind of the issue's list, written as new cases in varied contexts (JSON,
YAML, env files, shell, code in several languages, logs, curl output, docker/k8s configs, CI files) so that a
rule is seen to hold by shape and context, not for one sample. Every value is made up here (random bodies
typed for this file; none is a real credential). The look-alikes at the end must come back unchanged."""

from __future__ import annotations

import pytest

from segue.redact import Redactor

P = "Vq7#mLr2Xw9"  # a made-up human password
T = "q8ZtR2vLx7WmK4pN9cYb"  # a made-up random token body (20)
H = "7c1e9a4f02b86d35e8a1c0f94b7d2e63"  # a made-up hex secret (32)
B64 = "dG9wU2VjcmV0OnE4WnRSMnZMeDdXbUs0cE45Y1li"  # base64 of "topSecret:q8ZtR2vLx7WmK4pN9cYb"


@pytest.fixture()
def r() -> Redactor:
    return Redactor(environ={})


# kind 1: vendor shapes no table lists, caught as prefix + random body
PREFIX_BODY = [
    (f'{{"api_key": "acme_live_{T}"}}', f"acme_live_{T}"),
    (f"export ZORBLY_TOKEN=zrb-prod-{T}", f"zrb-prod-{T}"),
    (f"client = Quux(key='qx.v2.{T}Kp')", f"{T}Kp"),
    (f"ERROR 401 unauthorized for key wkspc_{T}9 (tenant acme)", f"wkspc_{T}9"),
    (f"  token: brv_{T}3h", f"brv_{T}3h"),
    ("ok pasted it:\n\nsk-nimbus-k3d9fqa-v72mxpe-0hq4rzt-w8c2b6n\n\nstill 401", "sk-nimbus-k3d9fqa-v72mxpe-0hq4rzt-w8c2b6n"),
    ("Authorization header was key-7hq2w-9xk4m-p3v8z-t6c1r-b5n0d, got 403", "key-7hq2w-9xk4m-p3v8z-t6c1r-b5n0d"),
    ("ValueError: invalid credential 'plq_test_Xb4r9TqW2mZk1s' for tenant acme", "plq_test_Xb4r9TqW2mZk1s"),
    # base64url bodies whose - and _ leave no 16 alphanumerics in a row
    ("here you go: dkx_pat_Kq8Zt-R2vLx7W_mK4pN9c-Yb3Tq8", "Kq8Zt-R2vLx7W_mK4pN9c-Yb3Tq8"),
    ("curl -H 'Authorization: Bearer' x; token sq9atp-jIbH-3SqxkXIXvoZ_2Z0Vo", "jIbH-3SqxkXIXvoZ_2Z0Vo"),
]

# kind 2: known prefixes with the body rule too strict (charset, length, infix)
KNOWN_PREFIX = [
    ("$ kubectl create token ci\neyJhbGciOiJSUzI1NiIsImtpZCI6Ik1xZ3_-aB9x.eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0.c2lnbmF0dXJl_x-8Kp2",
     "eyJpc3MiOiJrdWJlcm5ldGVzL3NlcnZpY2VhY2NvdW50In0"),
    ("here is my clickup key: pk_81234567_Q7XK2M9TZP4WB6RJ1N8CV3YD5HLF0GSA", "Q7XK2M9TZP4WB6RJ1N8CV3YD5HLF0GSA"),
    ("SCALEWAY_ACCESS_KEY=SCW8K2Q7MZX4RTV9BN3P\n", "SCW8K2Q7MZX4RTV9BN3P"),
    ("Mein Zugang geht nicht, Schlüssel SCWQ4N8ZK2V7MRX3TB9P", "SCWQ4N8ZK2V7MRX3TB9P"),
    ("klaviyo:\n  token: pk_3f9a2b7c4d1e8f6a0b5c2d9e7f1a4b8c3d", "pk_3f9a2b7c4d1e8f6a0b5c2d9e7f1a4b8c3d"),
    ("jira says 401 with ATATT3xFfGF0Kq8ZtR2vLx7WmK4pN9cYb3Tq8Lw0Xe7sDf1Gh6Jk2Lm4Np8Qr3St9Uv-Wx_Yz0Ab5Cd7Ef2=0A1B2C3D",
     "Kq8ZtR2vLx7WmK4pN9cYb3Tq8Lw0Xe7sDf1Gh6Jk2Lm4Np8Qr3St9Uv"),
    ("AIRTABLE=patQ7xK2m9TzP4wB6.3f9a2b7c4d1e8f6a0b5c2d9e7f1a4b8c3d6e0f2a9b8c7d6e5f4a3b2c1d0e9f8a",
     "3f9a2b7c4d1e8f6a0b5c2d9e7f1a4b8c3d6e0f2a9b8c7d6e5f4a3b2c1d0e9f8a"),
    ("newrelic license_key 0a1b2c3d4e5f60718293a4b5c6d7e8f90a1bNRAL in newrelic.yml", "0a1b2c3d4e5f60718293a4b5c6d7e8f90a1bNRAL"),
    ('{"refresh_token": "1//0gKq8ZtR2vLx7WmK4pN9cYb3Tq8Lw0Xe7sDf1Gh6Jk2Lm4Np8Qr3"}', "Kq8ZtR2vLx7WmK4pN9cYb3Tq8Lw0Xe7sDf1Gh6Jk2Lm4Np8Qr3"),
    ("  api_secret: MKXedHsyaUbZYChOqTrw", "MKXedHsyaUbZYChOqTrw"),
    ("aws_session_token = IQoJb3JpZ2luX2VjEK3" + "q8ZtR2vLx7WmK4pN9cYb+/" * 6, "q8ZtR2vLx7WmK4pN9cYb+/" * 6),
    ("const s = { token: process.env.STS ?? 'FwoGZXIvYXdzE" + "Lx7WmK4pN9cYbq8ZtR2v/+" * 6 + "' }", "Lx7WmK4pN9cYbq8ZtR2v/+" * 6),
    ('{"name": "organizations/1b2c3d4e-0000-4a1b-9c8d-7e6f5a4b3c2d/apiKeys/9f8e7d6c-1111-4b2a-8c3d-2e1f0a9b8c7d"}',
     "9f8e7d6c-1111-4b2a-8c3d-2e1f0a9b8c7d"),
]

# kind 3: a value found under a key, shown again elsewhere
REPEATED = [
    (f"MYSQL_PWD={P}\n...\n$ mysql -u root\nERROR 1045: login as root with {P} denied", f"with {P}"),
    (f'{{"password": "{P}", "password_confirmation": "{P}"}}', P),
    (f"db:\n  password: {P}\n# later in the log\nretrying {P}\n", f"retrying {P}"),
]

# kind 4: password keys spelled otherwise
PW_KEYS = [
    (f"PSWD={P}", P), (f"db_paswrd: {P}", P), (f'"passworsd": "{P}"', P), (f"passwords: {P}", P), (f"user_passwords={P}", P),
    (f"MYSQLPASS={P}", P), (f"adminPwd = '{P}'", P), (f"<RootPassWd>{P}</RootPassWd>", P),
    (f'network={{\n    ssid="office"\n    psk="{P}"\n}}', P), (f"wpa_passphrase={P}", P),
]

# kind 5: quoted high-entropy literals assigned to any key (JSON, YAML, code)
QUOTED = [
    (f'{{"webhook": "{T}Zk"}}', f"{T}Zk"), (f"signing: '{T}Zk'", f"{T}Zk"),
    (f'const conn = {{ bridge: "{T}Qw" }};', f"{T}Qw"), (f'$cfg["relay"] = "{T}Hj";', f"{T}Hj"),
    (f'String salt2 = "{T}Pp";', f"{T}Pp"),
]

# kind 6: code between key and literal
CODE_BETWEEN = [
    (f'api_token: str = "{T}"', T), (f'client_secret: Optional[str] = "{T}"', T),
    (f'key := os.Getenv("API_KEY"); if key == "" {{ key = "{T}" }}', T),
    (f'TOKEN = os.environ.get("TOKEN") or "{T}"', T), (f'pw = getenv("DB_PASS", "{P}")', P),
    (f'#define API_SECRET "{T}"', T), (f'private const string ApiKey = "{T}";', T),
    (f"app.secret_key = b'{H}'", H), (f'var dbPassword string = "{P}"', P),
    (f'api_key = (\n    "{H}"\n    "{H[::-1]}"\n)', H[::-1]),
    (f'variable "db_password" {{\n  type    = string\n  default = "{P}"\n}}', P),
    (f"secret = ENV.fetch('SECRET_KEY_BASE') {{ '{H}' }}", H),
]

# kind 7: credentials passed to APIs and tools
TOOLS = [
    (f'curl_setopt($ch, CURLOPT_USERPWD, "admin:{P}");', P),
    (f'curl_easy_setopt(c, CURLOPT_XOAUTH2_BEARER, "{T}");', T),
    (f'$pw = ConvertTo-SecureString "{P}" -AsPlainText -Force', P),
    (f"vault write auth/x --client-secret={T}", T), (f"terraform apply -var --db-password '{P}'", P),
    (f"gpg --batch --passphrase '{P}+' -d notes.gpg", f"{P}+"),
    (f"sqlcmd -S db -U sa -P 'x{P}='", f"x{P}="), (f"ssh-keygen -t ed25519 -N '{P}' -f ~/.ssh/deploy", P),
    (f"net user svc_deploy {P} /add /domain", P), (f"mytool --bearer {T}", T),
    (f"curl https://api.example.com/v1/charges -u sk9{T}:", f"sk9{T}"),
    (f"http -a deploy:{P} POST https://ci.example.com/hook", P),
]

# kind 8: SQL user statements
SQL = [
    (f"CREATE USER app IDENTIFIED BY {P};", P), (f"ALTER USER 'app'@'%' IDENTIFIED WITH mysql_native_password BY '{P}';", P),
    (f"CREATE ROLE etl LOGIN PASSWORD '{P}';", P), (f"CREATE LOGIN [etl] WITH PASSWORD=N'{P}', CHECK_POLICY=OFF;", P),
    (f"CREATE DATABASE LINK remote CONNECT TO scott IDENTIFIED BY {P} USING 'orcl';", P),
    (f"GRANT ALL ON *.* TO 'a'@'%' IDENTIFIED BY '{P}';", P),
]

# kind 9: URLs and headers
URLS = [
    (f"GET /v1/items?limit=5&accessKey={T} HTTP/1.1", T), (f"https://x.example.com/cb?client_credential={T}", T),
    (f"wget 'https://dl.example.com/f?X-Sig=1&apiPassword={P}'", P),
    (f"postgres://deploy%40corp.example:{P}@db.example.com:5432/app", P),
    (f"https://jane.doe@example.com:{P}@git.example.com/repo.git", P),
    (f'Authorization: OAuth oauth_consumer_key="ck", oauth_signature="{T}%3D"', T),
    (f"https://hooks.example.com/services/T0001/B0002/{T}Xy", f"{T}Xy"),
    (f"git remote set-url origin https://{T}Zq@github.example.com/o/r.git", f"{T}Zq"),
    (f"https://ci-bot:+{T}/Ab9=@git.example.com", f"+{T}/Ab9="),
    (f"GET /login?next=https%3A%2F%2Fapp.example.com%2Fcb%3Faccess_token%3D{T}%26state%3Dx", T),
]

# kind 10: encoded secrets
ENCODED = [
    (f"data: {B64}", B64), (f'{{"blob": "{B64}"}}', B64),
    ("cfg=LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0KYjNCbGJuTnphQzFyWlhrdGRqRUFBQUFB",
     "LS0tLS1CRUdJTiBPUEVOU1NIIFBSSVZBVEUgS0VZLS0tLS0KYjNCbGJuTnphQzFyWlhrdGRqRUFBQUFB"),
    ("echo dnE3I21McjJYdzk= | base64 -d > ~/.pgpass", "dnE3I21McjJYdzk="),
]

# files and command output whose content is a secret
FILES = [
    (f"$ cat config/master.key\n{H}\n$ ls", H), (f"$ cat ~/.config/acme/token\n{T}Jk\n", f"{T}Jk"),
    (f"$ acme config get api-token\n{T}Rs\n", f"{T}Rs"),
    (f"2026-03-01T10:00:00Z ##[debug]Evaluating: secrets.DEPLOY_TOKEN\n2026-03-01T10:00:00Z ##[debug]Result: '{T}Dd'", f"{T}Dd"),
    (f"-----BEGIN OpenVPN Static key V1-----\n{H}\n{H[::-1]}\n-----END OpenVPN Static key V1-----", H[::-1]),
    ("untrusted comment: minisign encrypted secret key\nRWRTY0IyQ2hH3kq8ZtR2vLx7WmK4pN9cYbT5aLw0Xe7sDf1Gh6Jk2Lm4Np8Qr3St"
     "9Uv+Wx/Yz0Ab5Cd7Ef2Gh4Ij6Kl8Mn0Op1Qr3St5Uv7Wx9Yz0Ab2Cd4Ef6Gh8Ij0Kl1Mn3Op5Qr7St9Uv0Wx2Yz4Ab6Cd8E==",
     "RWRTY0IyQ2hH3kq8ZtR2vLx7WmK4pN9cYbT5aLw0Xe7sDf1Gh6Jk2Lm4Np8Qr3St"),
    (f"*:*:*:replicator:{P}", P), (f"db.example.com:5432:*:app:{P}", P),
    ("<server>\n  <id>internal</id>\n  <password>otter-tundra-meadow-velvet</password>\n</server>",
     "otter-tundra-meadow-velvet"),
    ('<Pass encoding="base64">dnE3I21McjJYdzk=</Pass>', "dnE3I21McjJYdzk="),
]

# prose
PROSE = [
    (f"le mot de passe root est {P}", P), ("le mot de passe root est meadow-comet-meadow-velvet", "meadow-comet-meadow-velvet"),
    (f"das Passwort von root ist {P}", P), ("creds: admin / kettle-velvet-zephyr-harbor", "kettle-velvet-zephyr-harbor"),
    (f"login: deploy / {P}", P),
]

# the two defects: a value ending in a quote-adjacent character is still a value
DEFECTS = [
    (f"password = 'x{P}='", f"x{P}="), (f'SetEnv("GRAFANA_ACCESS_KEY", "{B64}+/{T}==")', f"{B64}+/{T}=="),
]

CASES = PREFIX_BODY + KNOWN_PREFIX + REPEATED + PW_KEYS + QUOTED + CODE_BETWEEN + TOOLS + SQL + URLS + ENCODED + FILES \
    + PROSE + DEFECTS

# the same kinds where agents meet them: compose files, Dockerfiles, CI, Helm, connection strings in Go/Java/C#,
# PHP, Rust, Spring properties, AWS config, logs, curl, wget, package-registry URLs, prompts
P2, T2, H2 = "Hk3$vQ9zLm2", "W7nQ2xLr9KpZ4vTm8cYd", "4f9b2c7e1a0d83f6b5e2c9a147d06e3b"
IN_THE_WILD = [x for x in [
 (f"services:\n  db:\n    image: postgres:16\n    environment:\n      POSTGRES_PASSWORD: {P2}\n", P2),
 (f"docker run -e MYSQL_ROOT_PASSWORD={P2} -d mysql:8", P2),
 (f"docker run --env API_TOKEN={T2} app", T2),
 (f"ENV STRIPE_SECRET={T2}", T2),
 (f"ARG NPM_TOKEN={T2}", T2),
 (f"      - name: Login\n        run: echo {T2} | docker login ghcr.io -u bot --password-stdin", T2),
 (f"env:\n  SONAR_TOKEN: {T2}\n", T2),
 (f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\nstringData:\n  password: {P2}\n", P2),
 (f"  --set auth.password={P2}", P2),
 (f"helm install x --set postgresql.auth.postgresPassword={P2}", P2),
 (f'db, err := sql.Open("postgres", "user=app password={P2} host=db sslmode=disable")', P2),
 (f'String url = "jdbc:mysql://db:3306/app?user=app&password={P2}";', P2),
 (f'var conn = "Server=db;Database=app;User Id=sa;Password={P2};";', P2),
 (f"$password = '{P2}';", P2), (f"define('DB_PASSWORD', '{P2}');", P2),
 (f"config.api_key = '{T2}'", T2), (f'client := api.New("{T2}")', None),
 (f"spring.datasource.password={P2}", P2), (f"mail.smtp.password = {P2}", P2),
 (f'  "clientSecret": "{T2}",', T2), (f"AZURE_CLIENT_SECRET={T2}", T2),
 (f"[default]\naws_access_key_id = AKIAQ7XK2M9TZP4WB6RJ\naws_secret_access_key = {T2}Ab3dE5gH7jK9mN1pQ2sT", f"{T2}Ab3dE5gH7jK9mN1pQ2sT"),
 (f"2024-05-01 12:00:01 INFO connecting with token={T2}", T2),
 (f'DEBUG request headers: {{"Authorization": "Bearer {T2}", "Accept": "*/*"}}', T2),
 (f"< Set-Cookie: session={T2}; Path=/; HttpOnly", T2),
 (f"redis://:{P2}@cache:6379/0", P2),
 (f"mongodb+srv://app:{P2}@cluster0.example.net/db", P2),
 (f"amqp://guest:{P2}@rabbit:5672/", P2),
 (f"export OPENAI_API_KEY=sk-proj-{T2}T3BlbkFJ{T2}", f"sk-proj-{T2}"),
 (f"> my api key is {T2} please use it", T2),
 (f"the db password is {P2}", P2), (f"use password {P2} for the admin user", P2),
 (f"pip install --index-url https://__token__:{T2}@pypi.example.com/simple pkg", T2),
 (f"npm config set //registry.example.com/:_authToken {T2}", T2),
 (f"git clone https://oauth2:{T2}@gitlab.example.com/g/p.git", T2),
 (f"kubectl create secret generic db --from-literal=password={P2}", P2),
 (f"aws configure set aws_secret_access_key {T2}Ab3dE5gH7jK9mN1pQ2sT", f"{T2}Ab3dE5gH7jK9mN1pQ2sT"),
 ("gcloud auth activate-service-account --key-file=k.json\n\"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n\"", "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"),
 (f"SECRET_KEY = '{T2}-x9!q'", f"{T2}-x9!q"),
 (f"JWT_SECRET={H2}", H2), (f"encryption_key: {H2}", H2), (f"HMAC_KEY={H2}", H2),
 (f'webhook_url = "https://hooks.slack.com/services/T01ABCDEF/B02GHIJKL/{T2}Zk9q"', f"{T2}Zk9q"),
 (f"psql postgresql://app:{P2}@db/app -c 'select 1'", P2),
 (f"PGPASSWORD={P2} psql -h db -U app", P2),
 (f"mysql -uroot -p{P2} -e 'show databases'", P2),
 (f"sshpass -p '{P2}' ssh root@host", P2),
 (f"curl -H 'X-API-Key: {T2}' https://api.example.com", T2),
 (f"curl -H \"PRIVATE-TOKEN: {T2}\" https://gitlab.example.com/api/v4/projects", T2),
 (f"curl --header 'Authorization: token {T2}' https://api.github.com", T2),
 (f"wget --password={P2} ftp://files.example.com/a", P2),
 (f"$ env | grep TOKEN\nGITHUB_TOKEN={T2}\n", T2),
 (f"ruby: Rails.application.credentials.secret_key_base = '{H2}{H2}'", f"{H2}{H2}"),
 (f'  <add key="StorageKey" value="{T2}Ab3dE5gH7jK9mN1pQ2sT==" />', f"{T2}Ab3dE5gH7jK9mN1pQ2sT=="),
 (f"private static final String API_KEY = \"{T2}\";", T2),
 (f"let token: &str = \"{T2}\";", T2),
 (f'const PASSWORD: &str = "{P2}";', P2),
 (f"export const apiKey = '{T2}';", T2),
 (f"new BasicAuth(\"admin\", \"{P2}\")", None),
 (f"auth = ('admin', '{P2}')", P2),
 (f"requests.get(url, auth=HTTPBasicAuth('admin', '{P2}'))", P2),
 (f"login('admin', '{P2}')", P2),
 (f"Password: {P2}\nConfirm password: {P2}", P2),
] if x[1] is not None]

CASES += IN_THE_WILD


@pytest.mark.parametrize("text,secret", CASES)
def test_kind_redacted(r: Redactor, text: str, secret: str) -> None:
    out, n = r.redact(text)
    assert secret not in out and n >= 1, out
    assert r.redact(out) == (out, 0)


LOOK_ALIKES = [
    # the two defects
    'x = a.get("k") or "fallback"', "row['name'] = data['name']", 'conn = connect(host, password=None, port=5432)',
    "Server=db;Database=app;User Id=sa;Password=null;", '{"password": null, "token": null}',
    # free text and ids
    '"token_expired": "Your session token has expired, please sign in again"',
    "age -r age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p -o s.age s.txt",
    "bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq is the donation address",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    '"integrity": "sha512-z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUR8anu1v6vN6dVNYw=="',
    "commit 3f9a2b7c4d1e8f6a0b5c2d9e7f1a4b8c3d6e0f2a", "docker pull registry.example.com/app@sha256:" + "ab12" * 16,
    "request-id: 3b1d7e0c-8a4f-4c2e-9b6d-1f0e2a3c4d5e", "pod/api-server-7d9f8b6c5-x2kqp-canary-1 Running",
    "HAVE_LINUX_CAN_J1939_H = 1", "auth('GET', '/api/v1/users')", 'credentials("aws", "us-east-1")',
    "$ kubectl get secret db -o jsonpath='{.metadata.uid}'\n3b1d7e0c-8a4f-4c2e-9b6d-1f0e2a3c4d5e", "git checkout feature/redact-base64url-bodies-v2", "font-family: -apple-system-body-regular-text",
    "$ cat README.md\nThis project builds the parser and the renderer.",
    "$ cat ~/.ssh/id_ed25519.pub\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHb3Jm9kZ2Vy7sWq1vN8pT2xYk3LmZ9aQcR4eF6gH0jK me@x",
    "the password root is not the problem", "net user guest /active:no",
    "ssh-keygen -t ed25519 -N '' -f ~/.ssh/deploy", "CREATE USER app IDENTIFIED BY PASSWORD;",
    "variable \"db_password\" {\n  type      = string\n  sensitive = true\n}",
    "passwords:\n  - ${DB_PASS}", "key-value-store-config-file", "use-the-default-password-policy-here",
    "the creds: see vault / ask ops", "GET /v1/items?limit=5&sortKey=createdAt HTTP/1.1",

 "image: postgres:16\nports:\n  - 5432:5432", "password_hash = bcrypt.hashpw(pw, bcrypt.gensalt())",
 "if not token: raise ValueError('missing token')", "def get_secret(name: str) -> str:",
 "--password-stdin", "token_type: bearer", "The API key must be 32 characters long.",
 "key = cache_key(user.id, 'profile')", "sha1: 2fd4e1c67a2d28fced849ee1bb76e7391b93eb12",
 "secretName: db-credentials", "tokenizer = AutoTokenizer.from_pretrained('bert-base-uncased')",
 "passport.use(new LocalStrategy(verify))", "kubectl get secret db -o yaml",
 "ERROR: password authentication failed for user \"app\"", "export PATH=$HOME/.local/bin:$PATH",
 "Authorization: Bearer ${TOKEN}", "password: ${{ secrets.DB_PASSWORD }}", "api_key: os.environ['API_KEY']",
 "docker build --secret id=npm,src=$HOME/.npmrc .", "@pytest.fixture\ndef api_key(): return make_key()",
 "git log --oneline 4f9b2c7..e1a0d83", "uuid = '3b1d7e0c-8a4f-4c2e-9b6d-1f0e2a3c4d5e'",
]


@pytest.mark.parametrize("text", LOOK_ALIKES)
def test_look_alike_left_alone(r: Redactor, text: str) -> None:
    assert r.redact(text) == (text, 0)


def test_cut_to_its_tail_after_redaction(r: Redactor) -> None:
    """Kind 11: output is redacted as kept (a brief keeps 8 KiB of it), then cut to its tail: a key whose name is
    before the tail, or a value found under a key far above and repeated in the tail, is not shown."""
    out, _, cut = r.excerpt("password:\n  " + P + "\n" + "log line\n" * 40, 60, keep="tail")
    assert cut and P not in out
    kept = f"DB_PASSWORD={P}\n" + "step ok\n" * 900 + f"retry with {P}\n"
    out, _, cut = r.excerpt(kept, 400, keep="tail")
    assert cut and P not in out and "retry with" in out
