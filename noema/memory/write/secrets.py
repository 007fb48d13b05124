"""Find credentials in text before the write policy stores it.

Pure and dependency-free: the functions below depend on the text alone. Each kind of
secret is one or more patterns in ``_TABLE`` (and the bare AWS secret key, which needs
a word elsewhere in the text, one after it), most with a small check where the pattern
alone would flag look-alikes (placeholders, documented example keys, masks, code
references, hyphenated words, prose). A finding is the span of the secret part only:
for a password in a URL the password, for ``api_key = "..."`` the value, for the rest
the whole token.

Kinds:

- ``aws-access-key``: ``AKIA``/``ASIA`` access key ids, also joined to lowercase words
  (``deploy_AKIA...``), but not inside a longer run of capitals and digits.
- ``aws-secret-key``: a 40-character secret access key after an ``aws_secret_access_key``
  or ``secret key`` label, or bare (mixed case, a digit) in a text that says ``aws`` or
  ``secret``.
- ``github-token``: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and ``github_pat_`` tokens.
- ``gitlab-token`` (``glpat-``, ``gldt-``, ``glrt-``, ...), ``npm-token`` (``npm_``),
  ``sendgrid-key`` (``SG.<id>.<secret>``), ``vault-token`` (``hvs.``, ``hvb.``, ``hvr.``)
  and ``telegram-bot-token`` (``<bot id>:AA<33 characters>``).
- ``slack-token`` (``xoxb-``, ``xoxp-``, ...) and ``slack-webhook`` URLs.
- ``anthropic-key`` (``sk-ant-``), ``openai-key`` (``sk-``, ``sk-proj-``) and
  ``huggingface-token`` (``hf_``, ``api_org_``), also joined to a name by ``-`` or
  ``_`` (``prod-sk-proj-...``). A body need not hold a digit: one of letters only is
  a key when it looks random (both cases, not as words run together, or a run of
  letters too long for a word), so ``sk-this-is-a-long-kebab-case-name`` is not one.
- ``google-api-key`` (``AIza``) and ``stripe-key`` (``sk_live_``, ``rk_live_``, ``sk_test_``).
- ``azure-storage-key``: the ``AccountKey=`` of a storage connection string, or the value
  of an ``account_key`` label.
- ``jwt``: JSON Web Tokens.
- ``private-key``: PEM private key blocks, to the end of the text if the END line is missing.
- ``url-password``: the password in ``scheme://user:password@host``.
- ``authorization``: the credential in ``Authorization: Bearer <token>`` (or Basic, Token).
- ``password``: the value assigned to a label such as ``password=``, ``DB_PWD:`` or
  ``pass=`` (four characters or more, and under eight not letters only, so
  ``password=form`` in code is not one), the rest of the line after ``passphrase:``, or
  a password in prose (``the wifi password is sunflower42``), which must hold a digit
  or a symbol: ``the password is stored in the vault`` is ordinary prose.
- ``labelled-secret``: the value assigned to a label such as ``api_key =`` or
  ``secret_token:``.

Every pattern runs in linear time: no nested quantifiers, and a failed attempt costs a
bounded scan, except the JWT's, which may only start where a run of its alphabet starts,
so each run is scanned once. Overlapping matches are merged, so no part of a secret is
left unredacted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["SecretFinding", "find_secrets", "redact_secrets"]


@dataclass(frozen=True)
class SecretFinding:
    """One secret in a text.

    Attributes:
        kind: What was found, e.g. ``"aws-access-key"`` or ``"url-password"``.
        start: Offset of the secret's first character in the text.
        end: Offset just past the secret's last character.
    """

    kind: str
    start: int
    end: int


# Label, optional closing quote of a JSON/YAML key, then `=`, `:`, `:=` or `=>`.
_ASSIGN = r"[\"']?[ \t]{0,5}(?P<sep>=>|:=|[:=])[ \t]{0,5}"


def _value(minimum: int) -> str:
    """An assigned value of ``minimum`` characters or more: group dq, sq or secret.

    A quoted value may hold spaces; quoted values are bounded so that an unterminated
    quote costs a bounded scan. A bare value runs to the next whitespace or quote.
    """
    return (
        rf"(?:\"(?P<dq>[^\"\n]{{{minimum},1024}})\"|'(?P<sq>[^'\n]{{{minimum},1024}})'"
        rf"|[\"'`]?(?P<secret>[^\s\"'`]{{{minimum},}}))"
    )


# The label must end with one of these (`DB_PASSWORD`, `client_secret`, `x-api-key`),
# so `max_tokens`, `token_count` and `password_reset_url` are not labels, nor is a part
# of a colon-separated name (`arn:aws:secretsmanager:...:secret:prod/db`). A bare `pwd`
# is the shell's working directory, not a password; a bare `pass` is a label only
# before `=`, as `pass:` is prose (`the mountain pass: closed`).
_PASSWORD_LABEL = r"(?:password|passwd|passcode|[_.-]pwd|[_.-]pass)"
_SECRET_LABEL = (
    r"(?:secret|token|apikey|(?:api|access|secret|private|auth|signing|encryption|master)[_-]?key)"
)
# A password in prose: `my password is hunter2`, `the password for the router is
# sunflower42`, `the password's now X`, `password was changed to X`, `password is: X`.
_PROSE_PASSWORD = (
    r"(?<![A-Za-z])(?i:pass(?:word|phrase|code)|passwd)"
    r"(?i:[ \t]+(?:for|to|of|on|at)(?:[ \t]+[\w.@'-]{1,40}){1,3}?)?"
    r"(?i:(?:[ \t]+(?:is|was|has[ \t]+been))?[ \t]+(?:set|changed|reset)[ \t]+to"
    r"|['’]s(?:[ \t]+now)?"
    r"|[ \t]+(?:is|was)(?:[ \t]+(?:now|still|just|actually))?)"
    r"(?:[ \t]*:)?[ \t]+"
    r"(?:[\"'“‘`](?P<quoted>[^\"'“”‘’`\s]{4,64})[\"'”’`]|(?P<secret>[^\s\"'`“”‘’]{4,}))"
)
# A passphrase is words: unquoted, it runs to the end of the line (or a `,;()`) from
# a character that is not punctuation.
_PASSPHRASE = (
    r"(?i:passphrase)" + _ASSIGN + r"(?:\"(?P<dq>[^\"\n]{4,1024})\"|'(?P<sq>[^'\n]{4,1024})'"
    r"|`?(?P<phrase>[^\s\"'`,;:.!?()][^\n\"'`,;()]{0,255}))"
)

# What ``redact_secrets`` leaves in place of a credential.
_REDACTION = re.compile(r"\[REDACTED:[a-z-]+\]")

_MASK_CHARS = frozenset("*•●·#xX")
# Values that stand for a secret rather than being one: `<your-key>`, `[token]`,
# `{{ token }}`, `(none)`, `${DB_PASSWORD}`, `$(cat file)`, `%(pw)s`, `$API_KEY`,
# `%API_KEY%`, and YAML tags (`password: !vault |`, `!secret wifi`, `!Ref DbPassword`).
_PLACEHOLDER_START = re.compile(
    r"[<\[{(]|\$\{|\$\(|%\(|\$[A-Z_][A-Z0-9_]*$|%[A-Z_][A-Z0-9_]*%$|![A-Za-z]+$"
)
# ... and `YOUR_API_KEY`, `api-key-here`, or the label's own name.
_PLACEHOLDER_WORDS = re.compile(
    r"(?i)(?:^|[^a-z])your(?:[^a-z]|$)|[_ -]here\W*$"
    r"|^(?:password|passwd|pass|pwd|secret|token|none|null|undefined|redacted)$"
)
# Values of a password or secret label that are settings, states or types, not secrets:
# `require_password: true`, `password: required`, `password: str`, `password: SecretStr`.
_ORDINARY_VALUE = re.compile(
    r"(?i:true|false|yes|no|on|off|nil|empty|blank|unset|required|optional|unknown|missing"
    r"|expired|changed|reset|hidden|masked|protected|default|str|string|bytes|text|int"
    r"|integer|bool|boolean|secretstr|secretbytes|object|any|char|varchar)"
)
# Words that, among others, make a value a prompt or a label: `'Enter password'`.
_PROMPT = re.compile(r"(?i)(?<![a-z])pass(?:word|phrase|code)(?![a-z])")
# Tokens that stand for a key in documentation: `AKIAIOSFODNN7EXAMPLE`, `...EXAMPLEKEY`,
# `sample_token`; and, for the tokens of a known format, a run of six of a character
# (`AKIAXXXXXXXXXXXXXXXX`, `ghp_000000...`), which a random token hardly ever holds.
_EXAMPLE = re.compile(r"(?i)example|sample|dummy|placeholder")
_REPEATED = re.compile(r"(.)\1{5}")
# Keys published for local emulators: Azurite's (and the Azure Storage Emulator's) account key.
_PUBLISHED_KEYS = frozenset(
    {
        "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==",
    }
)
# A bare value that is a name, possibly dotted, called or indexed, is code, not a
# secret: `DB_PASSWORD`, `self.password`, `settings.API_KEY_V2`, `tokens[0]`,
# `secrets.token_hex(32)`, `hashlib.sha256(b).hexdigest()`, and `os.getenv(` or
# `os.environ[` (a bare value ends at a quote). A name's parts may end in digits
# (`API_KEY_V2`) but not hold them inside. Brackets hold no `.[]()`, so each value has
# one parse and a failed match costs a linear scan.
_NAME = r"[A-Za-z_]+[0-9]*"
_CODE_REFERENCE = re.compile(
    rf"{_NAME}(?P<rest>(?:\.{_NAME}|\[[^\s.\[\]()]*\]?|\([^\s.\[\]()]*\)?)*)\)*"
)
_PLAIN_WORDS = re.compile(r"[^\W\d_]+(?:['’-][^\W\d_]+)*")
# Words a prose sentence after `passphrase:` holds and a passphrase rarely does.
_PROSE_WORD = re.compile(
    r"(?i:a|an|the|is|are|was|were|be|been|being|must|should|can|could|will|would|may"
    r"|you|your|it|its|this|that|these|those|i|we|my|our|use|using|make|with|of|to"
    r"|for|and|or|not|if|from|at|in|on|by|as)"
)
# `the secret: ingredient1 is love`: the colon begins a sentence and the "value" is
# its subject.
_COPULA = re.compile(r"[ \t]+(?:is|are|was|were)\b")
# `the password is 8-16 characters`, `the password was 2 weeks old`: a measure, not a value.
_UNIT = re.compile(
    r"(?i)[ \t]+(?:characters?|chars?|digits?|letters?|symbols?|words?|long|old"
    r"|times?|seconds?|minutes?|hours?|days?|weeks?|months?|years?)\b"
)
# A bare 40-character string may be an AWS secret access key in a text with one of
# these words. Anywhere in the text, not within so many characters: redacting shortens
# a text and would bring a word closer, so that a redacted text would hold a finding.
# Nor in a redaction (`[REDACTED:aws-access-key]`).
_AWS_CONTEXT = re.compile(r"(?i)(?<![a-z])(?:aws(?![a-z])|secret)(?![a-z-]*\])")
_BARE_AWS_SECRET = re.compile(r"(?<![A-Za-z0-9/+_.-])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
# Capitalised or lowercase words and numbers run together (`Acme2024`, `QuarterlyReports`);
# the lookaheads make each a longest run, so there is one parse.
_WORDY = re.compile(r"(?:[A-Z]?[a-z]{2,}(?![a-z])|[0-9]+(?![0-9]))+")
# A run of letters of one case longer than words are ("internationalization" is 20).
_ONE_CASE_RUN = re.compile(r"[a-z]{24,}|[A-Z]{24,}")
# Words run together, capitalised or as acronyms (`ReplaceWithYourOpenAIKey`): a word
# has a vowel, an acronym up to five capitals. Each alternative starts where no other
# can and has one length, so there is one parse.
_CAMEL_WORDS = re.compile(
    r"(?:(?=[AEIOUY]|[A-Z]?[a-z]*[aeiouy])[A-Z]?[a-z]{2,}(?![a-z])"
    r"|[A-Z]{2,5}(?=[A-Z][a-z])|[A-Z]{2,5}$)+"
)
_PARTS = re.compile(r"[-_.]")
_TRAILING_PUNCTUATION = ".,;:)]}"
_PROSE_TRAILING_PUNCTUATION = ".,;:!?)]}"


def _is_placeholder(value: str) -> bool:
    return (
        len(set(value)) == 1
        or set(value) <= _MASK_CHARS
        or _PLACEHOLDER_START.match(value) is not None
        or _PLACEHOLDER_WORDS.search(value) is not None
    )


def _is_ordinary(value: str) -> bool:
    return (
        _is_placeholder(value)
        or _ORDINARY_VALUE.fullmatch(value) is not None
        or _EXAMPLE.search(value) is not None
        or value in _PUBLISHED_KEYS
        or (" " in value.strip() and _PROMPT.search(value) is not None)
    )


def _is_fake(value: str) -> bool:
    return (
        _EXAMPLE.search(value) is not None
        or _REPEATED.search(value) is not None
        or value in _PUBLISHED_KEYS
    )


def _looks_random(value: str) -> bool:
    """A random token, not a name like `glpat-for-ci` or `sk-ButtonGroupLarge`.

    A digit; or, in a part between `-`, `_` or `.`, both cases not as capitalised
    words run together; or a run of one case too long for a word. A random part
    may lack a digit (a 20-character one about once in 30; Hugging Face tokens
    are letters only).
    """
    if any(c.isdigit() for c in value) or _ONE_CASE_RUN.search(value) is not None:
        return True
    return any(
        _CAMEL_WORDS.fullmatch(part) is None
        and any(c.isupper() for c in part)
        and any(c.islower() for c in part)
        for part in _PARTS.split(value)
    )


def _is_code_reference(value: str) -> bool:
    match = _CODE_REFERENCE.fullmatch(value)
    if match is None:
        return False
    if match.group("rest"):
        return True
    # A lone name needs an underscore and no digit: `DB_PASSWORD`, but not `My_Pass_2024`.
    return "_" in value and not any(c.isdigit() for c in value)


def _is_secret_value(value: str, minimum: int) -> bool:
    """Long enough, not ordinary, and under eight characters not letters only."""
    return (
        len(value) >= minimum
        and not _is_ordinary(value)
        and (len(value) >= 8 or not value.isalpha())
    )


def _assigned(match: re.Match[str]) -> tuple[str, str]:
    """The group holding an assigned value and its text: dq, sq or the bare secret."""
    for group in ("dq", "sq", "quoted"):
        if group in match.re.groupindex and match.group(group) is not None:
            return group, match.group(group)
    return "secret", match.group("secret")


def _labelled_span(match: re.Match[str], minimum: int) -> tuple[int, int] | None:
    """The span of an assigned value, or None if it is a placeholder, a setting or code."""
    group, value = _assigned(match)
    start = match.start(group)
    if group == "secret":
        value = value.rstrip(_TRAILING_PUNCTUATION)
        if _is_code_reference(value):
            return None
    if not _is_secret_value(value, minimum):
        return None
    return start, start + len(value)


def _password_span(match: re.Match[str]) -> tuple[int, int] | None:
    return _labelled_span(match, 4)


def _secret_span(match: re.Match[str]) -> tuple[int, int] | None:
    span = _labelled_span(match, 8)
    if (
        span is not None
        and match.group("secret") is not None
        and match.group("sep") == ":"
        and _COPULA.match(match.string, match.end("secret")) is not None
    ):
        return None
    return span


def _passphrase_span(match: re.Match[str]) -> tuple[int, int] | None:
    """A quoted value, one word as a password, or words that are not a sentence."""
    phrase = match.group("phrase")
    if phrase is None:
        return _labelled_span(match, 4)
    if _REDACTION.search(phrase):
        # A credential in these words was taken out already: what is left was not
        # a passphrase before (`passphrase: api_key: [REDACTED:labelled-secret]`).
        return None
    start = match.start("phrase")
    phrase = phrase.rstrip().rstrip(_PROSE_TRAILING_PUNCTUATION)
    words = phrase.split()
    if len(words) == 1:
        if _is_code_reference(phrase) or not _is_secret_value(phrase, 4):
            return None
    elif (
        len(phrase) < 8
        or _is_ordinary(phrase)
        or any(_PROSE_WORD.fullmatch(word) for word in words)
    ):
        return None
    return start, start + len(phrase)


def _prose_password_span(match: re.Match[str]) -> tuple[int, int] | None:
    """A password in a sentence: a quoted value, or a bare one that is not plain words."""
    group, value = _assigned(match)
    start = match.start(group)
    if group == "secret":
        value = value.rstrip(_PROSE_TRAILING_PUNCTUATION)
        if (
            len(value) < 4
            or _PLAIN_WORDS.fullmatch(value) is not None
            or _is_code_reference(value)
            or _UNIT.match(match.string, start + len(value)) is not None
        ):
            return None
    if _is_ordinary(value):
        return None
    return start, start + len(value)


def _has_digit_span(match: re.Match[str]) -> tuple[int, int] | None:
    """The whole match if it holds a digit: keys are random, `sk-some-long-word` is not."""
    return match.span() if any(c.isdigit() for c in match.group()) else None


def _genuine_span(match: re.Match[str]) -> tuple[int, int] | None:
    """The secret (group or whole match) unless it is a documented example or a mask."""
    group = "secret" if "secret" in match.re.groupindex else 0
    return None if _is_fake(match.group(group)) else match.span(group)


def _random_span(match: re.Match[str]) -> tuple[int, int] | None:
    """The secret if its random part looks random and is no documented example or mask."""
    body = match.group("body" if "body" in match.re.groupindex else "secret")
    return None if _is_fake(body) or not _looks_random(body) else _default_span(match)


def _is_path(value: str) -> bool:
    """`Projects/Acme2024/Reports`: a slash between words and numbers, not random text."""
    parts = value.strip("/").split("/")
    return len(parts) > 1 and all(_WORDY.fullmatch(part) for part in parts)


def _is_bare_aws_secret(value: str) -> bool:
    """Random: hex digests and commit ids have one case, a key both and a digit."""
    return (
        any(c.isdigit() for c in value)
        and any(c.isupper() for c in value)
        and any(c.islower() for c in value)
        and not _is_fake(value)
        and not _is_path(value)
    )


def _default_span(match: re.Match[str]) -> tuple[int, int]:
    return match.span("secret") if "secret" in match.re.groupindex else match.span()


def _placeholder_free_span(match: re.Match[str]) -> tuple[int, int] | None:
    return None if _is_placeholder(match.group("secret")) else match.span("secret")


_Spanner = Callable[[re.Match[str]], tuple[int, int] | None]

#: (kind, pattern, check), most specific first: when two findings cover the same span,
#: the earlier kind wins. The check returns the finding's span, or None for a
#: look-alike; without one, the span is the ``secret`` group if any, else the match.
_TABLE: tuple[tuple[str, str, _Spanner | None], ...] = (
    (
        "private-key",
        r"-----BEGIN (?:RSA |EC |OPENSSH |DSA |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)(?:-----END [A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----|\Z)",
        None,
    ),
    ("aws-access-key", r"(?<![0-9A-Z])(?:AKIA|ASIA)[0-9A-Z]{16}(?![0-9A-Z])", _genuine_span),
    (
        "aws-secret-key",
        r"(?i:(?:aws[ _-]?)?secret(?:[ _-]?access)?[ _-]?key)"
        + _ASSIGN
        + r"[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
        _genuine_span,
    ),
    (
        "github-token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{36,})",
        _genuine_span,
    ),
    (
        "gitlab-token",
        r"(?<![A-Za-z0-9_-])gl(?:pat|dt|rt|ptt|soat|cbt|ft|imt)-(?P<body>[A-Za-z0-9_-]{20,})",
        _random_span,
    ),
    ("npm-token", r"(?<![A-Za-z0-9_])npm_(?P<body>[A-Za-z0-9]{36})(?![A-Za-z0-9])", _random_span),
    (
        "sendgrid-key",
        r"(?<![A-Za-z0-9_.-])SG\.(?P<body>[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43})(?![A-Za-z0-9_-])",
        _random_span,
    ),
    ("vault-token", r"(?<![A-Za-z0-9_.-])hv[sbr]\.(?P<body>[A-Za-z0-9_-]{24,})", _random_span),
    (
        "telegram-bot-token",
        r"(?<![0-9])[0-9]{8,10}:(?P<body>AA[A-Za-z0-9_-]{33})(?![A-Za-z0-9_-])",
        _random_span,
    ),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}",
        None,
    ),
    ("slack-token", r"(?<![A-Za-z0-9-])xox[baprs]-[A-Za-z0-9-]{10,}", _has_digit_span),
    ("anthropic-key", r"(?<![A-Za-z0-9])sk-ant-(?P<body>[A-Za-z0-9_-]{32,})", _random_span),
    ("openai-key", r"(?<![A-Za-z0-9])sk-(?!ant-)(?P<body>[A-Za-z0-9_-]{32,})", _random_span),
    (
        "huggingface-token",
        r"(?<![A-Za-z0-9])(?:hf_|api_org_)(?P<body>[A-Za-z]{34})(?![A-Za-z0-9_])",
        _random_span,
    ),
    (
        "google-api-key",
        r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])",
        _genuine_span,
    ),
    (
        "stripe-key",
        r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        _genuine_span,
    ),
    (
        "azure-storage-key",
        r"(?i:account[ _-]?key)" + _ASSIGN + r"[\"']?(?P<secret>[A-Za-z0-9+/]{30,}={0,2})",
        _random_span,
    ),
    ("jwt", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*", None),
    # The user part has no colon, so `host:port` is never read as `user:password`, and
    # no brackets, as RFC 3986 allows none there (nor does `[REDACTED:...]` become a
    # user). The password may hold `@`: the last `@` before the path ends it.
    (
        "url-password",
        r"://[^\s:/?#@\[\]]{0,256}:(?P<secret>[^\s/?#]{1,256})@(?=[^\s/?#@])",
        _placeholder_free_span,
    ),
    (
        "authorization",
        r"(?i:authorization)"
        + _ASSIGN
        + r"[\"']?(?i:bearer|basic|token)[ \t]{1,5}(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
        _placeholder_free_span,
    ),
    ("password", r"(?<!:)(?i:" + _PASSWORD_LABEL + r")" + _ASSIGN + _value(4), _password_span),
    (
        "password",
        r"(?<![A-Za-z0-9_.-])(?i:pass)[ \t]{0,5}(?P<sep>=)(?![=>])[ \t]{0,5}" + _value(4),
        _password_span,
    ),
    ("password", _PASSPHRASE, _passphrase_span),
    ("password", _PROSE_PASSWORD, _prose_password_span),
    ("labelled-secret", r"(?<!:)(?i:" + _SECRET_LABEL + r")" + _ASSIGN + _value(8), _secret_span),
)
_PATTERNS = tuple((kind, re.compile(pattern), check) for kind, pattern, check in _TABLE)
# Every pattern above needs one of these literals: most texts hold none, and one
# search for them costs a few microseconds where running the table costs tens.
_TRIGGER = re.compile(
    r"(?i:secret|token|apikey|key|pass|pwd|authorization|aws)"
    r"|-----BEGIN|AKIA|ASIA|gh[pousr]_|github_pat_|gl[a-z]{1,4}-|npm_|SG\.|hv[sbr]\.|:AA"
    r"|hooks\.slack\.com|xox[baprs]-|sk-|[sr]k_|hf_|api_org_|AIza|eyJ|://"
)
# For ASCII text, the same test as plain substring tests on the lower-cased text,
# about twice as fast. Lower-casing lets the case-sensitive literals match in any
# case, and "k_" stands for "[sr]k_": a few more texts reach the table, none fewer.
_ASCII_TRIGGER_WORDS = (
    *("secret", "token", "key", "pass", "pwd", "authorization", "aws", "-----begin"),
    *("akia", "asia", "github_pat_", "npm_", "sg.", ":aa", "hooks.slack.com", "sk-"),
    *("k_", "hf_", "api_org_", "aiza", "eyj", "://"),
)
_ASCII_TRIGGER = re.compile(r"gh[pousr]_|gl[a-z]{1,4}-|hv[sbr]\.|xox[baprs]-")


def _may_hold_secret(text: str) -> bool:
    """Whether ``text`` holds a literal that some pattern of the table needs."""
    if not text.isascii():
        return _TRIGGER.search(text) is not None
    low = text.lower()
    return any(word in low for word in _ASCII_TRIGGER_WORDS) or (
        _ASCII_TRIGGER.search(low) is not None
    )


def find_secrets(text: str) -> list[SecretFinding]:
    """Find the credentials in a text.

    Args:
        text: Any text, e.g. a memory about to be stored.

    Returns:
        The findings, sorted by start and non-overlapping. Where two patterns' spans
        overlap, they are merged into one finding of the earlier (then longer, then
        more specific) kind, so redacting every finding removes every secret.
    """
    if not _may_hold_secret(text):
        return []
    candidates: list[tuple[int, int, int, str]] = []
    for priority, (kind, pattern, check) in enumerate(_PATTERNS):
        for match in pattern.finditer(text):
            span = check(match) if check is not None else _default_span(match)
            if span is not None and span[0] < span[1]:
                candidates.append((span[0], -span[1], priority, kind))
    # Last, so that `client_secret = <40 characters>` is a labelled secret.
    if _AWS_CONTEXT.search(text) is not None:
        for match in _BARE_AWS_SECRET.finditer(text):
            if _is_bare_aws_secret(match.group()):
                candidates.append((match.start(), -match.end(), len(_PATTERNS), "aws-secret-key"))
    candidates.sort()
    findings: list[SecretFinding] = []
    for start, negative_end, _, kind in candidates:
        end = -negative_end
        if findings and start < findings[-1].end:
            last = findings[-1]
            if end > last.end:
                findings[-1] = SecretFinding(last.kind, last.start, end)
            continue
        findings.append(SecretFinding(kind, start, end))
    return findings


def redact_secrets(text: str) -> tuple[str, list[SecretFinding]]:
    """Replace every credential in a text with ``[REDACTED:<kind>]``.

    Args:
        text: Any text, e.g. a memory about to be stored.

    Returns:
        The redacted text, and the findings as ``find_secrets`` returns them, with
        spans in the original text.
    """
    findings = find_secrets(text)
    parts: list[str] = []
    position = 0
    for finding in findings:
        parts.append(text[position : finding.start])
        parts.append(f"[REDACTED:{finding.kind}]")
        position = finding.end
    parts.append(text[position:])
    return "".join(parts), findings
