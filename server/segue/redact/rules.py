# ruff: noqa: E501  (a data table: a rule's pattern reads best on as few lines as it takes)
"""The rule table: what each rule matches (id, tier, pattern, check) and, beside it, its speed knobs
(keywords, gate, starts, anchor), which only skip work (tests/test_redact_prefilter.py)."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from segue import recache
from segue.redact.checks import (
    _PW_KEY_WORDS,
    _SECRET_KEY_WORDS,
    Check,
    _auth_header_ok,
    _auth_pair_ok,
    _auth_param_ok,
    _aws_ok,
    _aws_pair_ok,
    _aws_secret_ok,
    _base64_text_ok,
    _bearer_ok,
    _cjk_value_ok,
    _cli_flag_ok,
    _cloudflare_ok,
    _conn_ok,
    _context_ok,
    _curl_ok,
    _curl_token_ok,
    _directive_ok,
    _env_ok,
    _generic_ok,
    _hardhat_ok,
    _htpasswd_ok,
    _intl_prose_ok,
    _key_prose_ok,
    _keyed,
    _named_value_ok,
    _password_ok,
    _pgpass_ok,
    _prose_comma_ok,
    _prose_ok,
    _prose_value_ok,
    _random_value_ok,
    _scaleway_ok,
    _secret_flag_ok,
    _secret_ok,
    _set_to_ok,
    _slack_ok,
    _sql_user_ok,
    _tier1_ok,
    _totp_ok,
    _twilio_ok,
    _url_ok,
    _url_param_ok,
    _url_slash_ok,
    _url_token_ok,
)
from segue.redact.common import _HANDOFF_SCAN_RE
from segue.redact.generic import (
    GROUP_MARKS,
    SEED_WORDS,
    SHAPE_GATE,
    SHORT_MARKS,
    command_output,
    grouped_tokens,
    k8s_secret_values,
    keyed_object_values,
    prefixed_uuids,
    prose_as,
    quoted_literals,
    repl_echoes,
    seed_phrases,
    shaped_tokens,
    short_prefixed,
    tool_json_outputs,
    value_named_after,
)
from segue.redact.keyblocks import _OPEN_KEY, _key_blocks
from segue.redact.lazy import LazyPattern

_I = re.I


@dataclass(frozen=True)
class Starts:
    """Where a rule's matches can begin: at an occurrence of one of ``words`` in the lower-cased text,
    or at most ``reach`` characters of ``over`` (None: any) before one. For regexes with no literal to
    skip to (``\\b``, a look-behind or (?i) first) sre tries every position; matching only here, in
    order and never inside the previous match, finds the same matches as finditer. No ``words``: the
    rule's keywords."""

    words: tuple[str, ...] = ()
    over: str | None = ""
    reach: int = 0


_AT_KEYWORD = Starts()


@dataclass(frozen=True)
class Rule:
    id: str
    tier: int
    regex: re.Pattern[str]
    keywords: tuple[str, ...] = ()  # lower-case; the rule runs only if one occurs
    check: Check | None = None
    whole_text: bool = False  # multi-line blocks: scanned over the whole text, not in windows
    # keyed rules: find the keyword first, then match from the start of the identifier holding it;
    # far cheaper than trying the rule at every identifier of a long line
    anchor: re.Pattern[str] | None = None
    # rules that are not one regex (key blocks: BEGIN paired with the next END in linear time)
    finder: Callable[[str], list[tuple[int, int, str]]] | None = None
    # a cheap regex (literal first) that any match must contain: lets a rule whose regex sre cannot
    # skip through be left out of windows that hold a keyword but not the shape; written in lower
    # case with (?i), it is searched in the lower-cased window (case-insensitive sre is slow)
    gate: re.Pattern[str] | None = None
    starts: Starts | None = None


# value shapes: quoted (may hold spaces) or a bare run
_QV = r"""(?:"[^"\n]{1,200}"|'[^'\n]{1,200}'|`[^`\n]{1,200}`)"""
_BARE = r"""[^\s'"`]{1,200}"""
_VAL = rf"(?P<s>{_QV}|{_BARE})"
# a quoted literal of 4+ characters (up to 4000: session tokens and JWTs are long)
_QLIT = r"""(?P<s>"[^"\n]{4,4000}"|'[^'\n]{4,4000}'|`[^`\n]{4,4000}`)"""
# a key: an identifier of up to ~70 characters; which words make it a secret's name is decided in
# Python (key_words), where it is cheaper and clearer than in a regex
_KW_ANY = r"(?:pass|pwd|pw|secret|token|key|cred|auth|contrase|senha|wachtwoord)"
_KEY = r"(?=[\w.-]{0,70}?" + _KW_ANY + r")[\w.-]{1,70}"
_AKEY = r"[\w.-]{1,70}"  # in anchored rules the keyword was found first
_SP = r"[ \t]{0,16}"  # bounded: two unbounded runs of blanks in a row backtrack quadratically
_SP1 = r"[ \t]{1,16}"
# assignment operators of configs and code; "(" only directly before a quote (secret("x"))
# (then: a literal on the next line after "(": key = (\n    "part" "part"\n))
_SEP = (_SP + r"(?::=|=>|->|[!=]==?|::?=|\?=|[:=]|\((?=[\"'`]))" + _SP
        + r"(?:\([ \t]{0,16}\r?\n[ \t]{0,40}(?=[\"'`]))?(?:@|(?:[bBrRuU]{1,2}|N)(?=[\"']))?")
# a type between key and value: "KEY string =" (Go), "key: str =" / "key: Optional[str] =" (annotations)
_TYPE = (r"(?:" + _SP1 + r"(?:string|String|str|bytes|const|final|char\*?|\[\]byte)|" + _SP + ":" + _SP
         + r"(?:&(?:'static" + _SP1 + r")?)?(?:Optional\[|Final\[)?[A-Za-z_][\w.]{0,30}\]?(?:" + _SP + r"\|" + _SP + r"None)?(?=" + _SP + "=[^=]))?")
_PW_KEYWORDS = ("pass", "pwd", "pw", "psw", "pasw", "psk", "contrase", "senha", "wachtwoord", "mot de passe", "пароль", "kennwort",
                "hasło", "lösenord", "salasana")
_PW_ANCHOR = recache.compile(r"(?i)pass|pwd|pw|psw|pasw|psk|contrase|senha|wachtwoord|mot de passe|пароль|kennwort|hasło|lösenord"
                        r"|salasana")
_SECRET_ANCHOR = recache.compile(r"(?i)secret|token|cred|auth|key|pass|pwd|pw|psw|pasw|contrase|senha|wachtwoord|kennwort|hasło"
                            r"|lösenord|salasana")


# "is" in the languages prompts are written in (the password ist/lautet/est/es/è … X)
_COPULAS = r"lautet|ist|est|era|es|è|é|är|er|jest|je|será|hai"  # (hai: Hinglish, "mera password hai X")
_UUID_TAIL = r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


# a key's or a token's name in prose, in the languages prompts are written in (English "key" is judged with the word
# before it, in checks._key_prose_ok); CJK names are in password-prose-cjk, which needs no blank around them
_KEY_NAMES_EN = "secret[_-]key(?:[_-]base)?|token|secret|key|pat"
_KEY_NAMES_INTL = ("clé|clef|clave|chave|schlüssel|schluessel|chiave|klucz|nyckel|anahtar|anahtarı|ключ|токен"
                   "|секрет|رمز|الرمز|مفتاح|المفتاح|توكن|التوكن|sleutel")
_KEY_COPULAS = r"est|es|é|ist|è|is|was|jest|to|lautet|это|—|–|هو|هي|है|c'est|era|sono|är|er|are"
# after an English name: "to" only right after it ("set RAILS_MASTER_KEY to X"; "the key I use to encrypt …" is prose)
_KEY_COPULAS_EN = _KEY_COPULAS.replace("|to|", "|") + r"|to(?:(?<=key to)|(?<=token to)|(?<=secret to))"
_CJK_KEY_NAMES = "密钥|秘钥|私钥|令牌|金鑰|密鑰|秘密鍵|トークン|キー|토큰|시크릿|키"
_PW_NAMES_INTL = ("hasło|hasła|haslo|пароль|пароля|şifre|şifrem|şifresi|şifreniz|parola|parolası|parolam|mdp|كلمة (?:ال)?مرور"
                  "|كلمة (?:ال)?سر|पासवर्ड|mot de passe|contraseña|senha|passwort|wachtwoord|kennwort|lösenord"
                  "|kata sandi(?:nya)?|sandi(?:nya)?|mật khẩu|mat khau")
_PW_COPULAS_INTL = r"to|jest|brzmi|est|c'est|es|é|ist|lautet|это|—|–|-|هي|هو|है|olarak|è|är|был|была|adalah|yaitu|ialah|là"
# blanks in prose: French sets a (narrow) no-break space before its colon ("mot de passe : X")
_SPN = r"[ \t\u00a0\u202f]{0,16}"
_SPN1 = r"[ \t\u00a0\u202f]{1,16}"
# the words between a name and its copula, taken word by word (a copula is tried after each word, not each character)
_MID_WORDS = r"(?:[ \t\u00a0\u202f]{1,4}[^\s.:=]{1,30})"
# a bare value after a name with no copula ("la clave de API de Datadog X", "пароль от сервера X"): a digit (a key)
# or a digit or symbol (a password) in it, not only in trailing punctuation (a plain word there is more prose)
_DIGIT_AHEAD = r"(?=[^\s:：]{0,300}?\d[^\s:：]{0,300}(?:[\s,;.!?)]|$))"
_NOT_WORD_AHEAD = r"(?=\S{0,200}?(?:\d|[^\w\s:：,.;!?()]))"


_CURL_ANCHOR = recache.compile(r"-(?<!\S-)(?:u|-user|a|-auth)")


def _r(pattern: str, flags: int = 0) -> re.Pattern[str]:
    # compiled on first use (lazy.py): a process that redacts a title uses a handful of the table's patterns
    return cast("re.Pattern[str]", LazyPattern(pattern, flags))



RULES: tuple[Rule, ...] = (
    # --- tier 1: vendor prefixes and key blocks -------------------------------------------
    # BEGIN … END, and a BEGIN whose END is cut off (8 KiB after it go); see _key_blocks
    Rule("private-key", 1, _r(_OPEN_KEY), ("private key", "static key"), whole_text=True, finder=lambda t: _key_blocks(t)),
    Rule("putty-private-key", 1, _r(r"PuTTY-User-Key-File-\d+:[\s\S]{0,8192}?Private-MAC: ?[0-9a-fA-F]+"),
         ("putty-user-key-file",), whole_text=True),
    Rule("aws-access-key-id", 1, _r(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16}\b"),
         ("a3t", "akia", "asia", "abia", "acca"), _aws_ok, starts=_AT_KEYWORD),
    Rule("github-token", 1, _r(r"\b(?:ghp|gho|ghu|ghs|ghr)_[0-9A-Za-z]{36,255}\b"),
         ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("github-fine-grained-pat", 1, _r(r"\bgithub_pat_\w{82}\b"), ("github_pat_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("gitlab-token", 1,
         _r(r"\b(?:glpat|gldt|glft|glsoat|glrt|glptt|glcbt|glimt|glagent|gloas|glffct)-[0-9A-Za-z_.-]{20,300}"),
         ("glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "glptt-", "glcbt-", "glimt-", "glagent-", "gloas-",
          "glffct-"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("gitlab-rrt", 1, _r(r"\bGR1348941[\w-]{20,50}"), ("gr1348941",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("slack-token", 1, _r(r"(?i)\bxox[abposre]-(?:\d+-)+[0-9a-z-]{6,300}"), ("xox",), _slack_ok,
         starts=_AT_KEYWORD),
    Rule("slack-config-token", 1, _r(r"(?i)\bxoxe(?:\.xox[bp])?-\d-[A-Z0-9]{100,400}"), ("xoxe",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("slack-app-token", 1, _r(r"(?i)\bxapp-\d-[A-Z0-9]+-\d+-[a-z0-9]+"), ("xapp-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("slack-webhook", 1,
         _r(r"(?:https?://)?hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9+/]{43,56}"),
         ("hooks.slack.com",), _tier1_ok),
    Rule("stripe-key", 1, _r(r"\b(?:sk|rk)_(?:test|live|prod)_[A-Za-z0-9]{10,255}\b"), ("sk_", "rk_"), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("openai-key", 1,
         _r(r"\bsk-(?:(?:proj|svcacct|admin|service)-[A-Za-z0-9_-]{1,300}|[A-Za-z0-9]{1,300})T3BlbkFJ[A-Za-z0-9_-]{1,300}"),
         ("t3blbkfj",), _tier1_ok),
    Rule("anthropic-key", 1, _r(r"\bsk-ant-[a-z]{2,10}\d{2}-[A-Za-z0-9_-]{20,300}"), ("sk-ant-",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("openrouter-key", 1, _r(r"\bsk-or-v1-[0-9a-f]{64}\b"), ("sk-or-v1-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("huggingface-token", 1, _r(r"\b(?:hf_|api_org_)[A-Za-z0-9]{34}\b"), ("hf_", "api_org_"), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("gcp-api-key", 1, _r(r"\bAIza[\w-]{35}(?![\w-])"), ("aiza",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("npm-token", 1, _r(r"(?i)\bnpm_[a-z0-9]{36}\b"), ("npm_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("pypi-token", 1, _r(r"\bpypi-AgE(?:IcHlwaS5vcmc|NdGVzdC5weXBpLm9yZw)[\w-]{50,1000}"), ("pypi-age",),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("sendgrid-key", 1, _r(r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b"), ("sg.",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("supabase-key", 1, _r(r"\b(?:sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_-]{31})\b"), ("sbp_", "sb_secret_"),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("azure-ad-client-secret", 1,
         _r(r"(?:^|[\\'\"`\s>=:(,)])(?P<s>[a-zA-Z0-9_~.]{3}\dQ~[a-zA-Z0-9_~.-]{31,34})(?:$|[\\'\"`\s<),])", re.M),
         ("q~",), _tier1_ok),
    Rule("twilio-api-key", 1, _r(r"\bSK[0-9a-fA-F]{32}\b"), ("sk",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("aws-bedrock-api-key", 1,
         _r(r"\bABSK[A-Za-z0-9+/]{109,269}={0,2}|\bbedrock-api-key-YmVkcm9jay5hbWF6b25hd3MuY29t[A-Za-z0-9+/=%-]{0,2000}"),
         ("absk", "bedrock-api-key-"), _tier1_ok, starts=_AT_KEYWORD),
    Rule("xai-api-key", 1, _r(r"\bxai-[A-Za-z0-9_-]{70,120}"), ("xai-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("groq-api-key", 1, _r(r"\bgsk_[A-Za-z0-9]{52}\b"), ("gsk_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("perplexity-api-key", 1, _r(r"\bpplx-[A-Za-z0-9]{48}\b"), ("pplx-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("digitalocean-token", 1, _r(r"\bdo[opr]_v1_[a-f0-9]{64}\b"), ("do_v1_", "dop_v1_", "doo_v1_", "dor_v1_"),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("databricks-api-token", 1, _r(r"\bdapi[a-f0-9]{32}(?:-\d)?\b"), ("dapi",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("shopify-token", 1, _r(r"\bshp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}\b"), ("shp",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("hashicorp-tf-api-token", 1, _r(r"(?i)\b[a-z0-9]{14}\.(?-i:atlasv1)\.[a-z0-9_=-]{60,70}"), ("atlasv1",),
         _tier1_ok),
    Rule("vault-token", 1, _r(r"\bhv[sb]\.[\w-]{90,300}"), ("hvs.", "hvb."), _tier1_ok, starts=_AT_KEYWORD),
    Rule("age-secret-key", 1, _r(r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"), ("age-secret-key-",),
         starts=_AT_KEYWORD),
    Rule("1password-service-account-token", 1, _r(r"\bops_eyJ[A-Za-z0-9+/]{250,5000}={0,3}"), ("ops_eyj",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("1password-secret-key", 1,
         _r(r"\bA3-[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}\b"),
         ("a3-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("heroku-api-key-v2", 1, _r(r"\bHRKU-AA[0-9A-Za-z_-]{58}"), ("hrku-",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("sentry-token", 1, _r(r"\bsntry[us]_[A-Za-z0-9+/=_]{40,2000}"), ("sntry",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("linear-api-key", 1, _r(r"\blin_api_[A-Za-z0-9]{40}\b"), ("lin_api_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("notion-api-token", 1, _r(r"\bntn_[0-9]{11}[A-Za-z0-9]{35}\b"), ("ntn_",), _tier1_ok, starts=_AT_KEYWORD),
    Rule("grafana-token", 1,
         _r(r"\bglsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}\b|\bglc_[A-Za-z0-9+/]{32,400}={0,3}|\beyJrIjoi[A-Za-z0-9]{70,400}={0,3}"),
         ("glsa_", "glc_", "eyjrijoi"), _tier1_ok, starts=_AT_KEYWORD),
    # ClickUp personal tokens: pk_<user id>_<32 upper-case alphanumerics> (Stripe's pk_live_/pk_test_ are public)
    Rule("clickup-token", 1, _r(r"\bpk_\d{4,12}_[A-Z0-9]{32}\b"), ("pk_",), _tier1_ok, starts=_AT_KEYWORD),
    # AWS STS session tokens: base64 of a fixed header (the "origin" ones IQoJb3JpZ2luX2Vj…, the older FwoGZXIvYXdzE…)
    Rule("aws-session-token", 1, _r(r"\b(?:IQoJb3JpZ2luX2Vj|FwoGZXIvYXdzE)[A-Za-z0-9+/]{100,4000}={0,2}"),
         ("iqojb3jpz2lux2vj", "fwogzxivyxdze"), _tier1_ok, starts=_AT_KEYWORD),
    # Coinbase Developer Platform API key names (organizations/<uuid>/apiKeys/<uuid>), shown with their private key
    Rule("coinbase-cdp-key-name", 1, _r(r"\borganizations/[0-9a-f-]{36}/apiKeys/[0-9a-f-]{36}\b"), ("apikeys/",),
         _tier1_ok),
    # GitHub Actions debug logs print an evaluated secret: "Evaluating: secrets.X" then "Result: '…'"
    Rule("actions-debug-secret", 2,
         _r(r"Evaluating: secrets\.[\w-]{1,100}[ \t]{0,4}\r?\n[^\n]{0,40}?Result: (?P<s>'[^'\n]{1,4000}'|\S{1,4000})"),
         ("evaluating: secrets.",), _context_ok),
    # Atlassian API tokens (ATATT3…, ATCTT3… for Confluence/Jira Cloud), with their trailing =<8 hex> checksum
    Rule("atlassian-api-token", 1, _r(r"\bAT[AC]TT3[A-Za-z0-9_-]{60,400}(?:=[A-Fa-f0-9]{8})?"), ("atatt3", "atctt3"),
         _tier1_ok, starts=_AT_KEYWORD),
    # Airtable personal access tokens: pat<14>.<64 hex>
    Rule("airtable-pat", 1, _r(r"\bpat[A-Za-z0-9]{14}\.[a-f0-9]{64}\b"), ("pat",), _tier1_ok, gate=_r(r"(?i)\.[a-f0-9]{64}")),
    # Klaviyo private keys (pk_ and 34 hex; Stripe's public pk_live_/pk_test_ have letters after pk_)
    Rule("klaviyo-private-key", 1, _r(r"\bpk_[a-f0-9]{34}\b"), ("pk_",), _tier1_ok, starts=_AT_KEYWORD),
    # New Relic license keys (36 hex and the NRAL suffix)
    Rule("newrelic-license-key", 1, _r(r"\b[A-Fa-f0-9]{36}NRAL\b"), ("nral",), _tier1_ok),
    # Scaleway access keys: SCW and 17 upper-case alphanumerics
    Rule("scaleway-access-key", 1, _r(r"\bSCW[A-Z0-9]{17}\b"), ("scw",), _scaleway_ok, starts=_AT_KEYWORD),
    Rule("postman-api-token", 1, _r(r"(?i)\bPMAK-[a-f0-9]{24}-[a-f0-9]{34}\b"), ("pmak-",), _tier1_ok,
         starts=_AT_KEYWORD),
    Rule("segue-handoff-token", 1, _HANDOFF_SCAN_RE, ("h_",)),
    # prefix + random body (acme_live_8fK2…), long random runs, base64 that decodes to a secret: judged in
    # Python around each run of 16 alphanumerics (generic.py); the regex is only what the finder scans for
    Rule("prefixed-token", 1, _r(r"[A-Za-z0-9_-]{16}"), whole_text=True, finder=shaped_tokens,
         gate=_r(SHAPE_GATE)),
    # the same judged where the 16-alphanumeric scan cannot look: a short body after a prefix that names a
    # credential (rzp_live_…), a UUID body after one (access-production-<uuid>)
    Rule("prefixed-short-token", 1, _r(r"(?:" + "|".join(map(re.escape, SHORT_MARKS)) + r")[A-Za-z0-9]{12}"),
         SHORT_MARKS, finder=short_prefixed),
    Rule("grouped-token", 1, _r(r"(?:" + "|".join(map(re.escape, GROUP_MARKS)) + r")[A-Za-z0-9]{3,12}-[A-Za-z0-9]{3,12}-"),
         GROUP_MARKS, finder=grouped_tokens),
    Rule("prefixed-uuid-token", 1, _r(_UUID_TAIL), whole_text=True, finder=prefixed_uuids, gate=_r(_UUID_TAIL)),
    # a quoted random literal assigned to any key, in code, JSON or YAML (generic.py)
    Rule("quoted-literal", 2, _r(r"[\"'`][A-Za-z0-9+/=_.~-]{16}"), whole_text=True, finder=quoted_literals,
         gate=_r(r"[\"'`][A-Za-z0-9+/=_.~-]{16}")),
    # --- tier 2: structure and context ----------------------------------------------------
    # (not \b: prose in Japanese or Chinese glues a word to it, and a kana is a word character)
    Rule("jwt", 2, _r(r"(?<![A-Za-z0-9_-])ey[A-Za-z0-9]{17,2000}\.ey[A-Za-z0-9/\\_-]{17,8000}\.?(?:[A-Za-z0-9/\\_-]{10,2000}={0,2})?"),
         (".ey",), starts=Starts(("ey",))),
    Rule("url-credentials", 2,
         # the user part may be an e-mail address; the password runs to the last "@" before the host
         _r(r"(?i)\b[a-z][a-z0-9+.-]{1,20}://(?:[^\s:/@\"'<>]{1,100}@)?[^\s:/@\"'<>]{0,100}:"
            r"(?P<s>[^\s/\"'<>]{1,200})@"), ("://",),
         _url_ok, gate=_r(r"://[^\s:/\"'<>]{0,201}:[^\s/\"'<>]{1,200}@"),
         starts=Starts(("://",), "abcdefghijklmnopqrstuvwxyz0123456789+.-", 21)),
    # curl -u / httpie -a: both rules start where the flag is (one scan, shared by the anchor cache)
    Rule("curl-user", 2,
         _r(r"(?<!\S)(?:-u|--user|-a|--auth)[ =]{1,4}['\"]?[^\s:'\"$]{0,100}['\"]?:['\"]?"
            r"(?P<s>(?![\[$'\"<]|\{\{)[^\s'\"]{3,200})"), ("curl", "http"), _curl_ok,
         anchor=_CURL_ANCHOR),
    # an API key sent as the user with an empty password (curl -u sk_…: , https://TOKEN@host)
    Rule("curl-user-token", 2,
         _r(r"(?<!\S)(?:-u|--user)[ =]{1,4}['\"]?(?P<s>[^\s:'\"$]{16,200}):['\"]?(?![^\s'\"])"), ("curl",),
         _curl_token_ok, anchor=_CURL_ANCHOR),
    Rule("url-token-user", 2,
         _r(r"://(?P<s>[A-Za-z0-9_.~+=-]{16,200})@(?=[A-Za-z0-9.-]{1,253}(?:[:/\s\"'<>]|$))"), ("://",), _url_token_ok,
         gate=_r(r"(?i)://[a-z0-9_.~+=-]{16,200}@")),
    # a password holding "/" (url-credentials stops at it: base64 secrets pasted into a URL)
    Rule("url-password-slash", 2,
         _r(r"://[^\s:/@\"'<>]{1,100}:(?P<s>[^\s\"'<>@:]{8,200})@(?=[A-Za-z0-9.-]{1,253}(?:[:/\s\"'<>]|$))"), ("://",),
         _url_slash_ok, gate=_r(r"://[^\s:/@\"'<>]{1,100}:[^\s\"'<>@:]{0,200}/[^\s\"'<>@:]{0,200}@")),
    Rule("auth-header", 2,
         _r(r"(?i)\b(?:proxy-)?authorization[\"']?" + _SP + r"[:=]" + _SP + r"[\"'`]?"
            r"(?:(?:bearer|basic|token|bot|digest|api-?token"
            r"|apikey|key|sso-key|negotiate|ntlm|hmac|oauth)" + _SP1
            + r"|(?-i:[A-Z][A-Za-z0-9-]{1,40})" + _SP1 + r"(?=[^\s\"'<>,]{0,200}[\d=+/:]))?"
            r"(?P<s>[A-Za-z0-9._~+/=:@!#$%^&*-]{6,4000})"),
         ("authorization",), _auth_header_ok, starts=Starts(("proxy-authorization", "authorization"))),
    Rule("cookie-header", 2,
         _r(r"(?i)\b(?:set-)?cookie[\"']?" + _SP + r"[:=]" + _SP + r"[\"']?(?P<s>[^\s\"'<>;][^\n\"'<>]{5,4000})"),
         ("cookie",),
         _context_ok, starts=Starts(("set-cookie", "cookie"))),
    Rule("api-key-header", 2,
         _r(r"(?i)\b(?:x-api-key|x-auth-token|x-access-token|api-key|x-goog-api-key|private-token|x-functions-key"
            r"|ocp-apim-subscription-key)[\"']?" + _SP + r"[:=]" + _SP + r"[\"']?(?P<s>[A-Za-z0-9._~+/=-]{8,4000})"),
         ("api-key", "auth-token", "access-token", "private-token", "s-key", "subscription-key"),
         _context_ok, starts=Starts(("x-api-key", "x-auth-token", "x-access-token", "api-key", "x-goog-api-key",
                                     "private-token", "x-functions-key", "ocp-apim-subscription-key"))),
    Rule("npmrc-auth", 2, _r(r"_auth(?:Token)?" + _SP + r"=" + _SP + r"(?P<s>[^\s'\"]{1,1000})"), ("_auth",),
         _context_ok),
    Rule("azure-storage-key", 2, _r(r"(?i)AccountKey=(?P<s>[A-Za-z0-9+/=]{86,88})"), ("accountkey",),
         starts=_AT_KEYWORD),
    Rule("telegram-bot-token", 2, _r(r"(?:(?<![\w:])|(?<=bot))[0-9]{5,16}:A[A-Za-z0-9_-]{34}\b"), (":a",),
         starts=Starts((":a",), "0123456789", 16)),
    Rule("discord-bot-token", 2, _r(r"[MNO][A-Za-z\d_-]{23,25}\.[A-Za-z\d_-]{6}\.[A-Za-z\d_-]{27,38}\b"),
         gate=_r(r"(?i)\.[a-z\d_-]{6}\.")),
    # the pair pasted bare ("AKIA… wJalr…", "AKIA…:wJalr…"): the 40 characters right after an access key id are its secret
    Rule("aws-secret-after-key-id", 2,
         _r(r"\b(?:AKIA|ASIA)[A-Z2-7]{16}[ \t:,;|/]{1,3}(?P<s>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])"),
         ("akia", "asia"), _aws_pair_ok),
    Rule("aws-secret-access-key", 2,
         _r(r"(?i:(?:secret|access|key|token)(?:[ \t\w.-]{0,20})[\s'\"]{0,3})(?:\[[^\]\n]{0,40}\]:|=|>|:{1,3}=|\|\||:|=>|\?=|,)"
            r"[`'\"\s=]{0,5}(?P<s>[A-Za-z0-9/+=]{40})(?:\\?['\"`]|[\s;]|\\[nr]|$)", re.M),
         ("secret", "access", "key", "token"), _aws_secret_ok,
         starts=Starts(("secret", "access", "key", "token"))),  # tried at its keywords only: no gate is cheaper
    Rule("env-assignment", 2,
         _r(r"(?<![A-Za-z0-9_])(?P<k>[A-Z0-9_]{0,50}(?:API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|SECRET|TOKEN|PASSW(?:OR)?D|_PWD"
            r"|CREDENTIALS?|AUTH|_PAT(?=[=_]))[A-Z0-9_]{0,50})=(['\"]?)(?P<s>[^\s'\"]{6,1000})\2"),
         ("key", "secret", "token", "passw", "pwd", "credential", "auth", "_pat"), _env_ok,
         gate=_r(r"(?:KEY|SECRET|TOKEN|PASSW|_PWD|CREDENTIAL|AUTH|_PAT)[A-Z0-9_]{0,50}=")),
    Rule("url-secret-param", 2,
         _r(r"(?i)[?&](?:access_token|refresh_token|id_token|client_secret|api_?key|token|sig|signature"
            r"|x-amz-signature|x-amz-credential|x-goog-signature|code|password|passwd|pwd|secret|key|auth"
            r"|private_token|sessionid|session)=(?P<s>[^&#\s\"'<>]{6,2000})"),
         check=_context_ok, gate=_r(r"(?i)\?[a-z_-]{3,16}=|&[a-z_-]{3,16}="), starts=Starts(("?", "&"))),
    Rule("otpauth-secret", 2,
         _r(r"(?i)otpauth://[^\s?]{1,300}\?(?:[^\s#]{0,500}?&)?secret=(?P<s>[A-Z2-7=]{6,256})"), ("otpauth",),
         starts=_AT_KEYWORD),
    Rule("netrc-password", 2,
         _r(r"(?i)\bmachine" + _SP1 + r"\S{1,200}\s+login\s+\S{1,200}\s+password" + _SP1 + r"(?P<s>\S{1,200})"),
         ("machine",),
         _context_ok, starts=_AT_KEYWORD),
    Rule("cli-password-flag", 2,
         _r(r"(?i)-(?<![\w-]-)-?(?:password|passwd|pass|pwd|token|api[-_]?key|apikey|secret|auth-token|access-token"
            r"|client-secret|secret-key|access-key)(?:=|" + _SP1 + r")(?P<s>(?!-)" + _QV + "|(?!-)" + _BARE + ")"),
         ("pass", "pwd", "token", "key", "secret"), _cli_flag_ok),
    Rule("mysql-password", 2,
         _r(r"\b(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)\b[^\n|;&]{0,300}?[ \t]-p"
            r"(?P<s>" + _QV + r"|[^\s'\"-][^\s'\"]{0,200})"), ("mysql", "mariadb"), _context_ok, starts=_AT_KEYWORD),
    Rule("sshpass-password", 2, _r(r"\bsshpass" + _SP1 + r"-p" + _SP + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("sshpass",),
         _context_ok, starts=_AT_KEYWORD),
    Rule("redis-cli-password", 2,
         _r(r"\bredis-cli\b[^\n|;&]{0,300}?[ \t]-a" + _SP1 + r"(?P<s>" + _QV + "|" + _BARE + ")"), ("redis-cli",),
         _context_ok, starts=_AT_KEYWORD),
    Rule("sql-password", 2,
         _r(r"(?i)\b(?:identified" + _SP1 + r"(?:with" + _SP1 + r"\S{1,60}" + _SP1 + r")?(?:by|as)|password)" + _SP
            + r"(?:=" + _SP + r")?(?:password" + _SP + r")?"
            r"\(?" + _SP + r"N?(?P<s>'[^'\n]{1,200}'|\"[^\"\n]{1,200}\")"), ("identified", "password"), _context_ok,
         # three literal-first branches (each searched on its own) cost less than one alternation first
         gate=_r("(?i)" + "|".join(w + _SP + "(?:=" + _SP + ")?(?:password" + _SP + r")?\(?" + _SP + "n?['\"]"
                                   for w in ("by", "as", "password"))),
         starts=_AT_KEYWORD),
    Rule("connection-string-password", 2,
         _r(r"(?i)(?:^|[;\s\"'?&])(?:password|pwd)" + _SP + "=" + _SP + "(?P<s>" + _QV + r"|[^;\s\"'&]{1,200})",
            re.M), ("password", "pwd"), _conn_ok, gate=_r(r"(?i)p(?:assword|wd)" + _SP + "="),
         starts=Starts(("password", "pwd"), None, 1)),
    Rule("password-assignment", 2,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r")(?:\[\d{0,4}\])?(?:[\"'`]\]|\]?[\"'`]?)" + _TYPE + "(?P<sep>" + _SEP + ")" + _VAL),
         _PW_KEYWORDS, _keyed(_password_ok, _PW_KEY_WORDS, False), anchor=_PW_ANCHOR),
    Rule("password-prose", 2,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r"|mot de passe|пароль)(?P<sep>" + _SP1 +
            r"(?:(?:" + _COPULAS + r"|is|was|will be|=|:|->)" + _SP + ":?" + _SP + ")?)(?P<s>(?!-)" + _QV + "|(?![-(<])"
            + _BARE + ")"),
         (*_PW_KEYWORDS, "secret", "token", "key"), _prose_ok, anchor=_SECRET_ANCHOR),
    Rule("password-compare", 2,
         _r(r"(?P<s>\"[^\"\n]{4,200}\"|'[^'\n]{4,200}')" + _SP + "[!=]==?" + _SP + "(?P<k>" + _KEY + r")\b", _I),
         (*_PW_KEYWORDS, "secret", "key", "token"), _keyed(_context_ok, _PW_KEY_WORDS | _SECRET_KEY_WORDS, True),
         gate=_r("[\"'][ \t]{0,16}[!=]=")),
    Rule("secret-assignment", 2,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r")(?:\[\d{0,4}\])?(?:[\"'`]\]|[\"'`]?)" + _TYPE + "(?P<sep>" + _SEP + ")" + _VAL),
         ("secret", "token", "credential", "creds", "auth", "key"), _keyed(_secret_ok, _SECRET_KEY_WORDS, True),
         anchor=_SECRET_ANCHOR),
    Rule("xml-secret-element", 2,
         _r(r"(?i)<(?P<k>" + _KEY + r")(?:[ \t][^<>\n]{0,200})?>[ \t\r\n]{0,200}(?P<s>[^<\s][^<\n]{0,500}?)[ \t\r\n]{0,200}</(?P=k)>"),
         ("pass", "pwd", "psk", "secret", "token", "key", "credential", "auth"), _named_value_ok),
    Rule("keyed-call-argument", 2,
         _r(r"(?i)\(" + _SP + r"[\"'](?P<k>" + _KEY + r")[\"']" + _SP + "," + _SP + "(?P<s>" + _QV + ")"),
         ("pass", "pwd", "secret", "token", "key", "credential", "creds", "auth"),
         _named_value_ok),  # (a password may be words: define('DB_PASSWORD', 'correct-horse-battery'))
    # a password as a directive of a space-separated config (mosquitto's remote_password X, redis' requirepass X):
    # alone on its line, with another directive line in the text
    Rule("config-directive-password", 2,
         _r(r"(?im)^[ \t]{0,16}(?P<k>[a-z_]{0,30}(?:pass(?:wd|word)?|pwd)|masterauth)[ \t]{1,16}(?P<s>[^\s\"'=:#][^\s]{3,200})[ \t]*$"),
         ("pass", "pwd", "masterauth"), _directive_ok),  # (no starts: one ^ scan costs less than a try per "pass")
    # --- tier 2: credentials handed to APIs, tools and code (issue 12) ---------------------------
    Rule("mailchimp-key", 1, _r(r"\b[0-9a-f]{32}-us\d{1,2}\b"), ("-us",), _tier1_ok,
         starts=Starts(("-us",), "0123456789abcdef", 32)),
    Rule("jwk-private-field", 2,
         _r(r"\"(?:d|p|q|dp|dq|qi|k)\"" + _SP + ":" + _SP + r"\"(?P<s>[A-Za-z0-9_-]{16,4000})\""),
         ("\"kty\"",), gate=_r(r"\"(?:d|p|q|dp|dq|qi|k)\"")),
    Rule("pgpass-line", 2,
         _r(r"(?m)^[^\s:#]{1,200}:(?:\d{1,5}|\*):[^\s:]{1,200}:[^\s:]{1,200}:(?P<s>\S{1,200})$"), ("pgpass",),
         _context_ok),
    # a .pgpass line without the file's name: host (or *):port (or *):database:user:password, alone on its line
    Rule("pgpass-shape", 2,
         _r(r"(?m)^(?P<h>\*|[A-Za-z0-9_.-]{1,253}):(?:\*|\d{2,5}):[\w.$*-]{1,100}:[\w.@$*-]{1,100}"
            r":(?P<s>\S{4,200})$"), check=_pgpass_ok, gate=_r(r"(?i):(?:\*|\d{2,5}):[\w.$*-]{1,100}:[\w.@$*-]{1,100}:[^\s]")),
    # minisign and signify secret keys: base64 of "Ed" + the KDF's name ("Sc" scrypt, "BK" bcrypt)
    Rule("minisign-secret-key", 1, _r(r"\b(?:RWRTY0Iy|RWRCSw)[A-Za-z0-9+/]{100,400}={0,2}"), ("rwrty0iy", "rwrcsw"),
         _tier1_ok, starts=_AT_KEYWORD),
    Rule("env-fallback-literal", 2,
         _r(r"(?:getenv|environ\.get|env\.get|ENV\.fetch|env(?=\())" + _SP + r"\(?" + _SP
            + r"[\"'](?P<k>[\w.-]{1,70})[\"']"
            + _SP + r"(?:\)" + _SP + r"(?:or|\|\||\?\?|\?:|\{)" + _SP + "|," + _SP + r")" + _QLIT),
         ("getenv", "environ.get", "env.get", "env.fetch", "env("),
         _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True)),
    Rule("process-env-fallback", 2,
         _r(r"process\.env\.(?P<k>\w{1,70})" + _SP + r"(?:\|\||\?\?)" + _SP + _QLIT),
         ("process.env.",), _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True)),
    Rule("define-secret", 2,
         _r(r"#" + _SP + r"define" + _SP1 + r"(?P<k>\w{1,70})" + _SP1 + r"(?P<s>\"[^\"\n]{1,200}\"|[^\s\"]{6,200})"),
         ("define",), _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True)),
    # name/value pairs: k8s env lists, XML <add key= value=>, JSON {"name": …, "value": …}, CloudFormation
    Rule("name-value-pair", 2,
         _r(r"(?i)[\"']?(?:name|key|parameterkey|variable)[\"']?" + _SP + "[:=]" + _SP + r"[\"']?(?P<k>[\w.-]{1,70})[\"']?"
            + _SP + r"[,;]?" + _SP + r"(?:\r?\n[ \t]{0,40}-?[ \t]{0,4})?[\"']?(?:value|parametervalue|default)[\"']?" + _SP
            + "[:=]" + _SP + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("value",), _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True),
         starts=Starts(("name", "key", "parameterkey", "variable"), "\"'", 1)),
    # a Markdown table row | KEY | value |
    Rule("table-row-secret", 2,
         _r(r"(?:(?<=\| `)|(?<=\|`)|(?<=\| )|(?<=\|))(?P<k>[\w.-]{1,70})`?" + _SP + r"\|" + _SP + r"`?(?P<s>[^\s|`]{6,400})`?"
            + _SP + r"\|"),
         ("pass", "pwd", "secret", "token", "key", "credential", "auth"),
         _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True), anchor=_SECRET_ANCHOR),
    # single-dash flags of tools that take a password (-storepass, -keypass, -passphrase, -rpcpassword)
    Rule("single-dash-secret-flag", 2,
         _r(r"(?i)-(?<![\w-]-)(?P<k>[a-z]{0,16}(?:pass|password|passwd|pwd|passphrase|secret|token))(?:=|" + _SP1
            + r")(?P<s>(?!-)" + _QV + "|(?!-)" + _BARE + ")"),
         ("pass", "pwd", "secret", "token"), _secret_flag_ok),
    # tools with a short password flag or a password inside an argument
    Rule("tool-login-password", 2,
         _r(r"(?i)\b(?:docker|podman|helm|oras|skopeo|buildah|nerdctl|crane)\b[^\n|;&]{0,200}?\blogin\b[^\n|;&]{0,200}?"
            + _SP1 + r"-p(?:=|" + _SP1 + r")(?P<s>" + _QV + "|" + _BARE + ")"),
         ("login",), _context_ok,
         starts=Starts(("docker", "podman", "helm", "oras", "skopeo", "buildah", "nerdctl", "crane"))),
    Rule("sqlcmd-password", 2,
         _r(r"(?i)\b(?:sqlcmd|bcp|osql|isql)\b[^\n|;&]{0,300}?" + _SP1 + r"-P" + _SP + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("-p",), _context_ok, starts=Starts(("sqlcmd", "bcp", "osql", "isql"))),
    Rule("ldap-password", 2,
         _r(r"(?i)\bldap[a-z]{0,12}\b[^\n|;&]{0,300}?" + _SP1 + r"-w" + _SP1 + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("ldap",), _context_ok, starts=_AT_KEYWORD),
    Rule("smb-user-password", 2,
         _r(r"(?i)\b(?:smbclient|rpcclient|smbmap|smbget|net use|mount\.cifs)\b[^\n|;&]{0,300}?" + _SP1
            + r"(?:-U|--user(?:name)?=?)" + _SP + r"['\"]?[^\s%'\"]{1,100}%(?P<s>[^\s'\"]{1,200})"),
         ("smbclient", "rpcclient", "smbmap", "smbget", "net use", "mount.cifs"), _context_ok, starts=_AT_KEYWORD),
    Rule("7z-password", 2,
         _r(r"(?i)\b(?:7z|7za|7zz|7zr)\b[^\n|;&]{0,300}?" + _SP1 + r"-p(?P<s>" + _QV + r"|[^\s'\"-][^\s'\"]{0,200})"),
         ("-p",), _context_ok, starts=Starts(("7z",))),
    Rule("zip-password", 2,
         _r(r"(?i)\b(?:zip|unzip|zipcloak)\b[^\n|;&]{0,300}?" + _SP1 + r"-P" + _SP1 + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("-p",), _context_ok, starts=Starts(("zip", "unzip", "zipcloak"))),
    Rule("openssl-password", 2,
         _r(r"(?i)\bopenssl\b[^\n|;&]{0,400}?" + _SP1 + r"(?:-pass(?:in|out)?|-passphrase|-k)" + _SP1
            + r"(?!env:|file:|fd:|stdin)(?:pass:)?(?P<s>" + _QV + "|(?!-)" + _BARE + ")"),
         ("openssl",), _context_ok, starts=_AT_KEYWORD),
    Rule("pass-colon-literal", 2, _r(r"(?<![\w:])pass:(?P<s>[^\s'\"]{4,200})"), ("pass:",), _context_ok,
         starts=_AT_KEYWORD),
    Rule("oracle-userpass", 2,
         _r(r"(?i)\b(?:sqlplus|rman|expdp|impdp|sqlldr|dgmgrl)(?:" + _SP1 + r"-[a-z]{1,10})*" + _SP1
            + r"[\w$#]{1,60}/(?P<s>[^\s@/'\"]{1,200})@"),
         ("sqlplus", "rman", "expdp", "impdp", "sqlldr", "dgmgrl"), _context_ok, starts=_AT_KEYWORD),
    Rule("auth-header-param", 2,
         _r(r"(?i)(?<![\w-])(?:signature|response|credential)=\"?(?P<s>[A-Za-z0-9+/=_.-]{16,400})"),
         ("signature=", "response=", "credential="), _auth_param_ok,
         starts=Starts(("signature=", "response=", "credential="))),
    # "Bearer <token>" wherever it is written (a JS template, a log line, an SDK call), not only after
    # "Authorization:"; the token must look random
    Rule("bearer-token", 2,
         _r(r"(?i)\bbearer" + _SP1 + r"(?P<s>[A-Za-z0-9._~+/=-]{16,4000})"), ("bearer",), _bearer_ok,
         starts=_AT_KEYWORD),
    # every value of a Kubernetes Secret's data/stringData block (base64 or not, whatever its key)
    Rule("k8s-secret-data", 2, _r(r"(?i)kind:" + _SP + "secret"), ("kind:",), finder=k8s_secret_values),
    # Windows' setx NAME value and a secrets CLI's `secret set NAME --body value` (gh, and the like)
    Rule("setx-secret", 2,
         _r(r"(?i)\bsetx(?:" + _SP1 + r"/m)?" + _SP1 + r"(?P<k>[\w.-]{1,70})" + _SP1
            + r"(?P<s>" + _QV + "|" + _BARE + ")"),
         ("setx",), _keyed(_secret_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True), starts=_AT_KEYWORD),
    Rule("cli-secret-body", 2,
         _r(r"(?i)\bsecrets?" + _SP1 + r"(?:set|create|put|add|write|update)\b[^\n|;&]{0,200}?" + _SP1
            + r"(?:--body|--value|--secret-string|--data|-b)(?:=|" + _SP1 + r")(?P<s>(?!-)" + _QV
            + "|(?![-<@])" + _BARE + ")"),
         ("secret",), _context_ok, starts=_AT_KEYWORD),
    # the same in a tool call's JSON: {"command": "openssl rand -hex 32", "output": "<value>"}
    Rule("tool-json-output", 2, _r(r"[\"'](?:command|cmd)[\"']"), ("\"command\"", "\"cmd\""), finder=tool_json_outputs),
    Rule("command-output", 2, _r(r"(?:\$|PS[^\n>]{0,200}>)[ \t]{1,4}[^\n]{1,300}\n"),
         ("key", "secret", "token", "cred", "pass", "pw", "pgpass", "netrc", "pat", "openssl rand", "pwgen", "/dev/urandom",
          "/dev/random", "generate_key", "gen.secret"), finder=command_output),
    # "X" as the password, use X as my password: the keyword phrase is found first, the value before it
    Rule("password-prose-as", 2, _r(r"(?:as|is|for)[ \t]{1,16}[a-z]{0,4}[ \t]{0,16}(?:pass|pw|secret|token|api)"),
         ("pass", "pw", "secret", "token", "key"), finder=prose_as),
    Rule("keyed-object-value", 2, _r(r"[\"']value[\"']"), ("\"value\"", "'value'"), finder=keyed_object_values),
    # (keywords: the prompts, each with a character that is rare in text, so that the keyword index stays cheap)
    Rule("repl-echo", 2, _r(r"(?m)^(?:>|In \[)"), (">>> ", "\n> ", "]: "), finder=repl_echoes),
    Rule("value-named-after", 2, _r(r"(?i)(?:key|token|secret|passw|passphrase)"), ("key", "token", "secret", "passw"),
         finder=value_named_after),
    # Braintree's access tokens: access_token$production$<merchant>$<32 hex>
    Rule("braintree-access-token", 1,
         _r(r"access_token\$(?:production|sandbox)\$[0-9a-z]{16}\$[0-9a-f]{32}"), ("access_token$",), _tier1_ok),
    # ID:SECRET pairs of 16 upper-case alphanumerics and 64 base64 characters (Confluent Cloud API keys)
    Rule("api-key-pair", 1, _r(r"(?<![A-Za-z0-9])[A-Z0-9]{16}:(?P<s>[A-Za-z0-9+/]{64})(?![A-Za-z0-9+/])"),
         gate=_r(r"(?i):[a-z0-9+/]{64}")),
    Rule("curlopt-secret", 2,
         _r(r"CURLOPT_(?:\w{0,30}PASSWORD|\w{0,30}PASSWD|\w{0,10}USERPWD|XOAUTH2_BEARER|\w{0,30}TOKEN|\w{0,30}SECRET)"
            + _SP + "," + _SP + r"(?P<s>\"[^\"\n]{1,400}\"|'[^'\n]{1,400}')"), ("curlopt_",), _context_ok),
    Rule("powershell-securestring", 2,
         _r(r"(?i)ConvertTo-SecureString(?:" + _SP1 + r"-(?:AsPlainText|Force))*" + _SP1 + r"(?:-String" + _SP1
            + r")?(?P<s>\"[^\"\n]{1,400}\"|'[^'\n]{1,400}')"), ("convertto-securestring",), _context_ok),
    Rule("secret-flag", 2,
         _r(r"(?i)-(?<![\w-]-)-(?P<k>(?:[a-z][\w-]{0,40}?)?(?:secret|token|passw(?:or)?d|pass|pwd|bearer|api-?key|apikey"
            r"|credential)[\w-]{0,30})(?:=|" + _SP1 + r")(?P<s>(?!-)" + _QV + "|(?!-)" + _BARE + ")"),
         ("secret", "token", "pass", "pwd", "bearer", "key", "credential"), _secret_flag_ok),
    Rule("htpasswd-password", 2,
         _r(r"\bhtpasswd(?P<f>(?:" + _SP1 + r"-[a-zA-Z]{1,6}){1,4})" + _SP1 + r"\S{1,300}" + _SP1 + r"\S{1,200}" + _SP1
            + r"(?P<s>" + _QV + "|" + _BARE + ")"), ("htpasswd",), _htpasswd_ok),
    Rule("password-prose-for", 2,
         _r(r"(?i)\b(?:password|passwd|passwort|pw|pwd|passcode|passphrase|contraseña|contrasena|senha|mot de passe"
            r"|kennwort|wachtwoord)" + _SP1
            + r"(?:for|of|to|on|at|für|pour|para|per|voor|dla|von|de|du|do|da|del|van)" + _SP1
            + r"[^\n.:=]{1,60}?(?:" + _SP1 + r"(?:" + _COPULAS + r"|is|was|=)|" + _SP + r":)(?P<sep>" + _SP + r":?" + _SP + r")(?P<s>(?!-)" + _QV
            + "|(?![-(<])" + _BARE + ")"), ("pass", "pw", "contrase", "senha", "mot de passe", "kennwort", "wachtwoord"),
         _prose_value_ok, starts=_AT_KEYWORD),
    # "le mot de passe root est X", "das Passwort von root ist X": one word (after a preposition or not) between
    Rule("password-prose-word", 2,
         _r(r"(?i)\b(?:mot de passe|contraseña|contrasena|passwort|password|passwd|kennwort|senha|wachtwoord|pwd)" + _SP1
            + r"(?:(?:de|du|von|für|for|of|do|da|van|del)" + _SP1 + r")?[\w.@-]{1,30}" + _SP1 + r"(?:" + _COPULAS
            + r"|is|was)(?P<sep>" + _SP + r":?" + _SP1 + r")(?P<s>(?!-)" + _QV + "|(?![-(<])" + _BARE + ")"),
         ("mot de passe", "contrase", "passw", "kennwort", "senha", "wachtwoord", "pwd"), _prose_value_ok,
         starts=_AT_KEYWORD),
    # "I changed the password to X", "reset the admin password to X"
    Rule("password-set-to", 2,
         _r(r"(?i)(?:password|passwd|passphrase|passcode|pw|pwd)" + _SP1 + r"(?:back" + _SP1 + r")?to" + _SP1
            + r"(?P<s>(?!-)" + _QV + "|(?![-(<])" + _BARE + ")"),
         ("pass", "pw"), _set_to_ok, starts=_AT_KEYWORD),
    # "the password's X", "here's the password, X" (English, with no copula but the possessive or a comma)
    Rule("password-prose-comma", 2,
         _r(r"(?i)\b(?:password|passwd|passphrase|pw|pwd)(?P<p>'s|’s|,)" + _SP1 + r"(?P<s>(?!-)" + _QV + "|(?![-(<])" + _BARE + ")"),
         ("pass", "pw"), _prose_comma_ok, starts=_AT_KEYWORD),
    # Cloudflare's Global API Key: 37 hex (no digest is that long), as a key's value where Cloudflare is named
    Rule("cloudflare-global-key", 2,
         _r(r"(?i)key[\"']?" + _SP + r"[:=,]" + _SP + r"[\"']?(?P<s>[0-9a-f]{37})(?![0-9a-z])"), ("key",), _cloudflare_ok,
         starts=_AT_KEYWORD),
    # a Google service account's private_key_id (40 hex) beside its key, in its JSON (JSON-escaped too)
    Rule("gcp-private-key-id", 2,
         _r(r"private_key_id\\?[\"']?[ \t]{0,3}[:=][ \t]{0,3}\\?[\"']?(?P<s>[0-9a-f]{40})(?![0-9a-zA-Z])"),
         ("private_key_id",), _context_ok),
    # Fly.io macaroon tokens (fm1r_/fm1a_/fm2_ and base64, comma-joined), with their "FlyV1 " scheme when written
    Rule("flyio-token", 1,
         _r(r"(?:FlyV1[ \t]{1,4})?\bfm[12][ar]?_[A-Za-z0-9+/]{40,4000}={0,2}(?:,fm[12][ar]?_[A-Za-z0-9+/]{8,4000}={0,2})*"),
         ("fm1r_", "fm1a_", "fm2_"), _tier1_ok),
    # a TOTP seed typed in by hand: base32 in groups of four after an authenticator's words ("enter this key: JBSW Y3DP …")
    Rule("totp-manual-key", 2,
         _r(r"(?i)\b(?:setup[ \t]key|secret[ \t]key|key|secret|code|seed)\b[^\n]{0,40}?[:：]?[ \t]{0,4}[\"'`]?"
            r"(?P<s>(?-i:[A-Z2-7]{4}(?:[ \t][A-Z2-7]{4}){3,15}|[a-z2-7]{4}(?:[ \t][a-z2-7]{4}){3,15}))(?![A-Za-z0-9])"),
         ("2fa", "totp", "mfa", "authenticator", "otp", "two-factor", "2-step"), _totp_ok),
    # Alibaba Cloud AccessKey ids (LTAI and 12-20 alphanumerics), and the 30-character secret passed right after one
    Rule("alibaba-access-key-id", 1, _r(r"\bLTAI[A-Za-z0-9]{12,20}\b"), ("ltai",), _aws_ok, starts=_AT_KEYWORD),
    Rule("alibaba-secret-after-key-id", 2,
         _r(r"\bLTAI[A-Za-z0-9]{12,20}[\"']?" + _SP + r"[,:;]?" + _SP + r"[\"']?(?P<s>[A-Za-z0-9]{30})(?![A-Za-z0-9])"),
         ("ltai",), _aws_pair_ok),
    # a wallet's recovery phrase after the word that names it (generic.seed_phrases)
    Rule("seed-phrase", 2, _r(r"[a-z]{3,8} [a-z]{3,8} [a-z]{3,8}"), SEED_WORDS, finder=seed_phrases),
    # Hardhat/Foundry configs: accounts: ["0x<private key>", …]
    Rule("hardhat-accounts-key", 2,
         _r(r"(?i)\baccounts[\"']?" + _SP + r"[:=]" + _SP + r"\[" + _SP + r"(?:[\"'](?:0x)?[0-9a-f]{64}[\"']" + _SP + ","
            + _SP + r")*[\"'](?P<s>(?:0x)?[0-9a-f]{64})[\"']"), ("accounts",), _hardhat_ok),
    # Laravel's APP_KEY shape wherever it is printed (key:generate --show, "Application key [base64:…] set")
    Rule("base64-app-key", 2, _r(r"(?<![\w+/-])base64:(?P<s>[A-Za-z0-9+/]{43}=)(?![A-Za-z0-9+/=])"), ("base64:",),
         _random_value_ok),
    # MongoDB's shells and tools: -p PASSWORD (mongosh -u admin -p 'X')
    Rule("mongo-password", 2,
         _r(r"\bmongo(?:sh|dump|restore|import|export|stat|top|files)?\b[^\n|;&]{0,300}?[ \t]-p" + _SP1
            + r"(?P<s>" + _QV + r"|(?!-)" + _BARE + ")"), ("mongo",), _context_ok, starts=_AT_KEYWORD),
    # a .pgpass line written by echo or printf (echo "host:5432:db:user:X" >> ~/.pgpass)
    Rule("pgpass-echo", 2,
         _r(r"\b(?:echo|printf)" + _SP1 + r"(?:-[ne]" + _SP1 + r")?[\"']?(?:\*|[A-Za-z0-9_.-]{1,253}):(?:\*|\d{2,5}):[\w.$*-]{1,100}"
            r":[\w.@$*-]{1,100}:(?P<s>[^\s\"':]{1,200})[\"']?" + _SP + r"(?:>>?|\|" + _SP + r"(?:sudo" + _SP1 + r")?tee(?:" + _SP1
            + r"-a)?)" + _SP + r"\S{0,200}pgpass"), ("pgpass",), _context_ok, starts=Starts(("echo", "printf"))),
    # Go's MySQL driver DSN: user:password@tcp(host:port)/db (no scheme, so url-credentials does not see it)
    Rule("go-mysql-dsn", 2,
         _r(r"(?<![\w:/@.-])[\w.-]{1,64}:(?P<s>[^\s:@/\"'`]{1,200})@(?:tcp|unix|udp)(?:6)?\("), ("@tcp(", "@unix(", "@udp("),
         _url_ok),
    # "パスワードは X です", "パスワード：X", "密码是 X", "비밀번호는 X": passwords are ASCII, the prose around them not
    # (and a key or token's name: "Razorpay 密钥是 X", "APIキー：X", "토큰은 X"; "密码为：X", "密码设置成 X")
    Rule("password-prose-cjk", 2,
         _r(r"(?P<k>パスワード|暗証番号|密码|密碼|口令|비밀번호|패스워드|비번|암호|" + _CJK_KEY_NAMES + r")(?:(?:[ \t]{0,2}(?:は|が|を|:|：|=|＝|是|为|為"
            r"|는|은|:|设置?成|设为|改成了?|改为|更改为|变成|就是)){1,2}[、，,]?|(?P<np>(?=[ \t])))[ \t\u3000]{0,4}(?:「|『|\"|')?(?P<s>[!-~]{4,200})"),
         ("パスワード", "暗証番号", "密码", "密碼", "口令", "비밀번호", "패스워드", "비번", "암호", *_CJK_KEY_NAMES.split("|")), _cjk_value_ok),
    # "ma clé API est X", "mi clave de Azure es X", "la API key de Datadog es X", "il token personale di Linode è X",
    # "мой токен Vercel: X", "مفتاح Twilio: X", "the encryption key: X": a key's or token's name, a few words, a copula
    # or a colon, then a value that looks random (checks._key_prose_ok: what the words between say)
    Rule("key-prose-foreign", 2,
         _r(r"(?i)(?<!\w)(?P<k>(?:" + _KEY_NAMES_EN + r")(?![A-Za-z0-9_-])|(?P<kf>" + _KEY_NAMES_INTL + r")(?![\w-]))(?P<mid>" + _MID_WORDS + r"{0,6}?)"
            + r"(?:" + _SPN1 + r"(?(kf)(?:" + _KEY_COPULAS + r")|(?:" + _KEY_COPULAS_EN + r"))(?![\w'])" + _SPN + r"[:：]?|" + _SPN + r"(?:[:=](?=[ \t\u00a0\u202f])"
            + r"|[：是为為はがを는은])|(?(kf)(?=" + _SPN1 + _DIGIT_AHEAD + r")|(?!)))" + _SPN
            # (8+ characters, not a lower-case word: what _key_prose_ok would refuse anyway, refused here cheaply)
            # (a key is ASCII: the value stops where the prose goes on glued to it, "…입니다", "…です", or a quote «…»)
            + r"[«「『“‘]?(?=\S{8})(?![a-z.:,;!?()-]{0,200}(?:\s|$))(?P<s>" + _QV + r"|[!#-&(-_a-~]{8,200}(?=[^\x00-\x7f])|" + _BARE + ")"),
         ("token", "secret", "key", "pat", *(w for w in _KEY_NAMES_INTL.split("|") if w != "anahtarı")), _key_prose_ok,
         starts=_AT_KEYWORD),
    # "hasło to X", "мой пароль X", "пароль от базы — X", "şifrem X", "كلمة المرور هي X", "मेरा पासवर्ड X है",
    # "le mdp est X", "mon mot de passe c'est X": a password's name in the languages prompts are written in; the value
    # after a copula (with a few words between) or right after the name, with a digit or a symbol (_prose_value_ok)
    Rule("password-prose-intl", 2,
         _r(r"(?i)(?<![\w-])(?:" + _PW_NAMES_INTL + r")(?![\w-])(?:" + _MID_WORDS + r"{0,4}?(?:" + _SPN1 + r"(?:" + _PW_COPULAS_INTL
            + r")(?![\w'])" + _SPN + r"[:：]?|" + _SPN + r"[:：]|(?=" + _SPN1 + _NOT_WORD_AHEAD + r")))" + _SPN1
            + r"(?P<s>(?!-)" + _QV + "|(?![-(<])" + _BARE + ")"),
         ("hasło", "hasła", "haslo", "парол", "şifre", "parola", "mdp", "كلمة", "पासवर्ड", "mot de passe",
          "contraseña", "senha", "passwort", "wachtwoord", "kennwort", "lösenord", "sandi", "mật khẩu", "mat khau"),
         _intl_prose_ok, starts=_AT_KEYWORD),
    # a user and a password as one path-like pair: "login with root/X", "ssh as deploy / X"
    Rule("login-user-slash-password", 2,
         _r(r"(?i)\b(?:log[ -]?in|logged in|sign[ -]?in|ssh|connect(?:ed)?|auth(?:enticate)?)" + _SP1
            + r"(?:with|as|using)" + _SP1 + r"[\w.@+-]{1,64}" + _SP + "/" + _SP
            + r"(?P<s>[^\s/]{4,200}?)(?=[,;:!?)]?(?:\s|$))"),
         ("login", "log in", "log-in", "logged in", "signin", "sign in", "sign-in", "ssh as", "connect", "authenticat",
          "auth with", "auth as", "auth using"), _prose_value_ok, starts=_AT_KEYWORD,
         gate=_r(r"(?i)(?:with|as|using)[ \t]{1,16}[\w.@+-]{1,64}[ \t]{0,16}/")),
    # creds: admin / X, login: deploy / X (a user and a password written as a pair)
    Rule("user-slash-password", 2,
         _r(r"(?i)\b(?:creds|credentials|logins?|user/pass(?:word)?|username/password)" + _SP + r"[:=]" + _SP
            + r"[\w.@+-]{1,64}" + _SP + "/" + _SP + r"(?P<s>[^\s/]{4,200})"),
         ("creds", "credentials", "login", "er/pass"), _prose_value_ok, starts=_AT_KEYWORD),
    # a user and a password handed to an auth call or tuple: auth=('admin', '…'), HTTPBasicAuth("u", "…"),
    # login('u', '…'), new NetworkCredential("u", "…")
    Rule("auth-call-pair", 2,
         _r(r"(?i)(?<![\w.])(?P<k>[\w.]{0,40}(?:auth|login|credentials?|signin|sign_in))" + _SP + r"(?:=" + _SP + r")?\("
            + _SP + r"(?:u?[\"'][^\"'\n]{1,100}[\"']|[A-Za-z_][\w.]{0,60})" + _SP + "," + _SP
            + r"(?P<s>\"[^\"\n]{4,200}\"|'[^'\n]{4,200}')"),
         ("auth", "login", "credential", "signin", "sign_in"), _auth_pair_ok,
         gate=_r(r"(?i)(?:auth|login|credentials?|signin|sign_in)" + _SP + r"(?:=" + _SP + r")?\(" + _SP + r"[\w\"']")),
    # MinIO's client: mc alias set NAME URL ACCESS-KEY SECRET-KEY (and the older mc config host add)
    Rule("minio-alias-secret", 2,
         _r(r"\bmc(?:\.exe)?" + _SP1 + r"(?:alias" + _SP1 + r"set|config" + _SP1 + r"host" + _SP1 + r"add)"
            + r"(?:" + _SP1 + r"--?[\w-]{1,30})*" + _SP1 + r"\S{1,200}" + _SP1 + r"\S{1,400}" + _SP1 + r"\S{1,200}" + _SP1
            + r"(?P<s>(?!-)" + _QV + "|(?!-)" + _BARE + ")"), ("mc alias", "mc.exe alias", "mc config"), _context_ok,
         starts=Starts(("mc alias", "mc.exe alias", "mc config"))),
    # poetry config http-basic.REPO USER PASSWORD
    Rule("poetry-http-basic", 2,
         _r(r"\bpoetry" + _SP1 + r"config(?:" + _SP1 + r"--?[\w-]{1,30})*" + _SP1 + r"http-basic\.\S{1,100}" + _SP1
            + r"\S{1,200}" + _SP1 + r"(?P<s>(?!-)" + _QV + "|(?!-)" + _BARE + ")"), ("http-basic",), _context_ok),
    # a twilio client's auth token: twilio(sid, 'hex'), Client("AC…", "hex")
    Rule("twilio-client-token", 2,
         _r(r"(?i)\b(?:twilio(?:\.rest)?(?:\.Client)?|Client)" + _SP + r"\(" + _SP
            + r"(?:[\"']AC[0-9a-f]{32}[\"']|[A-Za-z_][\w.]{0,60})" + _SP + "," + _SP
            + r"[\"'](?P<s>[0-9a-f]{32})[\"']"), ("twilio", "client(\"ac", "client('ac"), _twilio_ok,
         starts=Starts(("twilio", "client"))),
    # a header as a name/value pair (HAR files, fetch/axios configs): {"name": "Authorization", "value": "Basic …"}
    Rule("header-name-value", 2,
         _r(r"(?i)[\"']name[\"']" + _SP + ":" + _SP + r"[\"'](?:proxy-)?(?:authorization|cookie|set-cookie|x-api-key"
            r"|api-key|x-auth-token|x-access-token|private-token|x-goog-api-key|x-functions-key)[\"'][ \t\r\n]{0,40},"
            + r"[ \t\r\n]{0,40}[\"']value[\"']" + _SP + ":" + _SP + r"[\"'](?:(?:Basic|Bearer|Token|Digest|Negotiate)"
            + _SP1 + r")?(?P<s>[^\"'\n]{6,4000})[\"']"), ("\"name\"", "'name'"), _context_ok,
         gate=_r(r"(?i)name[\"']" + _SP + ":" + _SP + r"[\"'](?:proxy-)?(?:authoriz|cookie|set-cookie|x-|api-key"
                 r"|private-token)")),
    # session cookies by their frameworks' names, anywhere (curl -b, a Cookie header, a browser's export)
    Rule("session-cookie", 2,
         _r(r"(?i)(?<![\w.-])(?:jsessionid|phpsessid|asp\.net_sessionid|aspsessionid\w{0,10}|sessionid|session_id"
            r"|connect\.sid|laravel_session|_session_id|ci_session|cfid|cftoken|sid)=(?P<s>[^;\s\"'&,]{16,400})"),
         ("jsessionid", "phpsessid", "aspsessionid", "asp.net_sessionid", "sessionid", "session_id", "connect.sid",
          "laravel_session", "ci_session", "sid=", "cfid", "cftoken"), _random_value_ok, starts=Starts((), None, 12)),
    # a secret piped into a command that reads it from stdin (echo X | docker login --password-stdin)
    Rule("stdin-secret", 2,
         _r(r"\b(?:echo|printf)" + _SP1 + r"(?:-n" + _SP1 + r"|'%s'" + _SP1 + r"|\"%s\"" + _SP1 + r")?(?P<s>" + _QV
            + r"|[^\s|$'\"]{4,200})" + _SP + r"\|[^\n|]{0,200}?(?:-stdin\b|\blogin\b[^\n|]{0,100}?--?p(?:assword)?-?stdin"
            + r"|\bsudo(?: -[A-Za-z]{1,6})*? -[A-Za-z]{0,5}S|\bchpasswd\b)"),
         ("stdin", "sudo -", "chpasswd"), _context_ok, starts=Starts(("echo", "printf"))),
    # a password as a tool's positional argument: rabbitmqctl add_user NAME PASSWORD, mosquitto_passwd -b FILE USER PASSWORD
    Rule("positional-password", 2,
         _r(r"\b(?:rabbitmqctl(?:" + _SP1 + r"-[\w-]{1,20}(?:" + _SP1 + r"[^\s-]\S{0,100})?)*?" + _SP1
            + r"(?:add_user|change_password)|mosquitto_passwd(?:" + _SP1 + r"-[a-zA-Z]{1,4})*?" + _SP1 + r"-b" + _SP1 + r"\S{1,300})"
            + _SP1 + r"(?:\"[^\"\n]{1,100}\"|'[^'\n]{1,100}'|[^\s'\"]{1,100})" + _SP1 + r"(?P<s>" + _QV + "|(?!-)" + _BARE + ")"),
         ("rabbitmqctl", "mosquitto_passwd"), _prose_value_ok, starts=_AT_KEYWORD),
    # a token as a login command's argument: wandb login KEY, ngrok authtoken KEY, ngrok config add-authtoken KEY
    Rule("login-token-argument", 2,
         _r(r"\b(?:wandb|ngrok)(?:" + _SP1 + r"config)?" + _SP1 + r"(?:login|authtoken|add-authtoken)(?:" + _SP1
            + r"--?[\w-]{1,30}(?:=\S{1,200})?)*" + _SP1 + r"(?P<s>[A-Za-z0-9_-]{20,200})(?![\w-])"),
         ("wandb", "ngrok"), _random_value_ok, starts=_AT_KEYWORD),
    # tools that take a password as a plain argument or a short flag
    Rule("ssh-keygen-passphrase", 2,
         _r(r"\bssh-keygen\b[^\n|;&]{0,300}?[ \t]-[NP]" + _SP + r"(?P<s>" + _QV + "|(?!-)" + _BARE + ")"),
         ("ssh-keygen",), _context_ok, starts=_AT_KEYWORD),
    Rule("net-user-password", 2,
         _r(r"(?i)\bnet" + _SP1 + r"user" + _SP1 + r"(?:\"[^\"\n]{1,100}\"|[^\s/\"]{1,100})" + _SP1
            + r"(?P<s>" + _QV + r"|(?![/*])[^\s\"']{1,200})"), ("net user",), _context_ok, starts=_AT_KEYWORD),
    Rule("echo-base64-decode", 2,
         _r(r"\becho" + _SP1 + r"(?:-[ne]" + _SP1 + r")?['\"]?(?P<s>[A-Za-z0-9+/]{8,4000}={0,2})['\"]?" + _SP + r"\|" + _SP
            + r"base64" + _SP1 + r"(?:-d|--decode|-D)\b"), ("base64",), _base64_text_ok,
         starts=Starts(("echo",))),
    Rule("hcl-variable-default", 2,
         _r(r"\bvariable" + _SP1 + r"\"(?P<k>[\w.-]{1,70})\"" + _SP + r"\{[^{}]{0,400}?\bdefault" + _SP + "=" + _SP
            + r"(?P<s>\"[^\"\n]{1,200}\")"), ("variable",), _named_value_ok, starts=_AT_KEYWORD),
    Rule("oauth-param", 2,
         _r(r"(?i)\boauth_(?:signature|token|token_secret|consumer_secret|verifier|nonce)" + _SP + "=" + _SP
            + r"(?P<s>\"[^\"\n]{6,400}\"|[^&\s\",]{6,400})"), ("oauth_",), _context_ok, starts=_AT_KEYWORD),
    Rule("url-secret-param-suffix", 2,
         _r(r"(?i)[?&;](?P<k>[\w.\-\[\]]{0,40}?(?:key|token|secret|signature|sig|credential|credentials|password|passwd"
            r"|pwd|pw|pass|auth))=(?P<s>[^&#\s\"'<>]{6,2000})"),
         ("key", "token", "secret", "sig", "credential", "pass", "pwd", "pw", "auth"), _url_param_ok,
         gate=_r(r"(?i)[?&;][\w.\-\[\]]{0,40}?(?:key|token|secret|sig|credential|pass|pwd|pw|auth)[a-z]{0,9}="),
         starts=Starts(("?", "&", ";"))),
    Rule("sql-identified-bare", 2,
         _r(r"(?i)\bidentified" + _SP1 + r"(?:with" + _SP1 + r"\S{1,60}" + _SP1 + r")?(?:by|as)" + _SP1
            + r"(?P<s>[^\s;'\"()]{3,200})"), ("identified",), _sql_user_ok, starts=_AT_KEYWORD),
    # --- tier 3: generic assignment, entropy-gated ---------------------------------------
    Rule("generic-assignment", 3,
         _r(r"(?i)(?<![\w.-])(?P<k>" + _AKEY + r")[\"'`]?" + _TYPE + _SP + "(?::=|=>|=|:)" + _SP + r"[\"'`]?"
            r"(?P<s>[^\s\"'`,;]{8,1000})"),
         ("key", "secret", "token", "auth", "credential", "creds", "passw"),
         _keyed(_generic_ok, _SECRET_KEY_WORDS | _PW_KEY_WORDS, True, last_key=True), anchor=_SECRET_ANCHOR),
)

