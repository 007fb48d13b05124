"""Find credentials in text before the write policy stores it.

Pure and dependency-free: the functions below depend on the text alone. Each kind of
secret is one pattern in ``_TABLE``; a few kinds also have a small check where the
pattern alone would flag look-alikes (placeholders, masks, code references, hyphenated
words). A finding is the span of the secret part only: for a password in a URL the
password, for ``api_key = "..."`` the value, for the rest the whole token.

Kinds:

- ``aws-access-key``: ``AKIA``/``ASIA`` access key ids.
- ``aws-secret-key``: a 40-character secret access key after an ``aws_secret_access_key``
  or ``secret key`` label.
- ``github-token``: ``ghp_``/``gho_``/``ghu_``/``ghs_``/``ghr_`` and ``github_pat_`` tokens.
- ``slack-token`` (``xoxb-``, ``xoxp-``, ...) and ``slack-webhook`` URLs.
- ``anthropic-key`` (``sk-ant-``) and ``openai-key`` (``sk-``, ``sk-proj-``).
- ``google-api-key`` (``AIza``) and ``stripe-key`` (``sk_live_``, ``rk_live_``, ``sk_test_``).
- ``jwt``: JSON Web Tokens.
- ``private-key``: PEM private key blocks, to the end of the text if the END line is missing.
- ``url-password``: the password in ``scheme://user:password@host``.
- ``authorization``: the credential in ``Authorization: Bearer <token>`` (or Basic, Token).
- ``password`` and ``labelled-secret``: the value assigned to a label such as
  ``password=``, ``DB_PWD:``, ``api_key =`` or ``secret_token:``.

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
_ASSIGN = r"[\"']?[ \t]{0,5}(?:=>|:=|[:=])[ \t]{0,5}"
# A quoted value may hold spaces; quoted values are bounded so that an unterminated
# quote costs a bounded scan. A bare value runs to the next whitespace or quote.
_VALUE = (
    r"(?:\"(?P<dq>[^\"\n]{8,1024})\"|'(?P<sq>[^'\n]{8,1024})'"
    r"|[\"'`]?(?P<secret>[^\s\"'`]{8,}))"
)
# The label must end with one of these (`DB_PASSWORD`, `client_secret`, `x-api-key`),
# so `max_tokens`, `token_count` and `password_reset_url` are not labels. A bare `pwd`
# is the shell's working directory, not a password.
_PASSWORD_LABEL = r"(?:password|passwd|passphrase|[_.-]pwd)"
_SECRET_LABEL = (
    r"(?:secret|token|apikey|(?:api|access|secret|private|auth|signing|encryption|master)[_-]?key)"
)

#: (kind, pattern), most specific first: when two findings cover the same span, the
#: earlier kind wins. The ``secret`` group (or ``dq``/``sq``), if any, is the finding.
_TABLE: tuple[tuple[str, str], ...] = (
    (
        "private-key",
        r"-----BEGIN (?:RSA |EC |OPENSSH |DSA |ENCRYPTED |PGP )?PRIVATE KEY(?: BLOCK)?-----"
        r"(?s:.*?)(?:-----END [A-Z ]{0,20}PRIVATE KEY(?: BLOCK)?-----|\Z)",
    ),
    ("aws-access-key", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    (
        "aws-secret-key",
        r"(?i:(?:aws[ _-]?)?secret(?:[ _-]?access)?[ _-]?key)"
        + _ASSIGN
        + r"[\"']?(?P<secret>[A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])",
    ),
    (
        "github-token",
        r"(?<![A-Za-z0-9_])(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{36,})",
    ),
    (
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]{20,}",
    ),
    ("slack-token", r"(?<![A-Za-z0-9-])xox[baprs]-[A-Za-z0-9-]{10,}"),
    ("anthropic-key", r"(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{32,}"),
    ("openai-key", r"(?<![A-Za-z0-9_-])sk-(?!ant-)[A-Za-z0-9_-]{32,}"),
    ("google-api-key", r"(?<![A-Za-z0-9_-])AIza[A-Za-z0-9_-]{35}(?![A-Za-z0-9_-])"),
    ("stripe-key", r"(?<![A-Za-z0-9_])(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("jwt", r"(?<![A-Za-z0-9_-])eyJ[A-Za-z0-9_-]+\.eyJ[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"),
    # The user part has no colon, so `host:port` is never read as `user:password`, and
    # no brackets, as RFC 3986 allows none there (nor does `[REDACTED:...]` become a
    # user). The password may hold `@`: the last `@` before the path ends it.
    ("url-password", r"://[^\s:/?#@\[\]]{0,256}:(?P<secret>[^\s/?#]{1,256})@(?=[^\s/?#@])"),
    (
        "authorization",
        r"(?i:authorization)"
        + _ASSIGN
        + r"[\"']?(?i:bearer|basic|token)[ \t]{1,5}(?P<secret>[A-Za-z0-9._~+/=-]{8,})",
    ),
    ("password", r"(?i:" + _PASSWORD_LABEL + r")" + _ASSIGN + _VALUE),
    ("labelled-secret", r"(?i:" + _SECRET_LABEL + r")" + _ASSIGN + _VALUE),
)
_PATTERNS = tuple((kind, re.compile(pattern)) for kind, pattern in _TABLE)
# Every pattern above needs one of these literals: most texts hold none, and one
# search for them costs a few microseconds where running the table costs tens.
_TRIGGER = re.compile(
    r"(?i:secret|token|apikey|key|passw|passphrase|pwd|authorization)"
    r"|-----BEGIN|AKIA|ASIA|gh[pousr]_|github_pat_|hooks\.slack\.com|xox[baprs]-|sk-|[sr]k_"
    r"|AIza|eyJ|://"
)

_MASK_CHARS = frozenset("*•●·#xX")
# Values that stand for a secret rather than being one: `<your-key>`, `[token]`,
# `{{ token }}`, `${DB_PASSWORD}`, `$(cat file)`, `%(pw)s`, `$API_KEY`, `%API_KEY%`.
_PLACEHOLDER_START = re.compile(r"[<\[{]|\$\{|\$\(|%\(|\$[A-Z_][A-Z0-9_]*$|%[A-Z_][A-Z0-9_]*%$")
# ... and `YOUR_API_KEY`, `api-key-here`, or the label's own name.
_PLACEHOLDER_WORDS = re.compile(
    r"(?i)(?:^|[^a-z])your(?:[^a-z]|$)|[_ -]here\W*$"
    r"|^(?:password|passwd|pass|pwd|secret|token|none|null|undefined|redacted)$"
)
# A bare value with no digit made of names, dots and brackets is code, not a secret:
# `DB_PASSWORD`, `self.password`, `os.getenv(`, `os.environ[`.
_CODE_REFERENCE = re.compile(r"[A-Za-z_][A-Za-z_.,()\[\]]*")
_CODE_MARKS = frozenset("._([")
_TRAILING_PUNCTUATION = ".,;)]}"


def _is_placeholder(value: str) -> bool:
    return (
        len(set(value)) == 1
        or set(value) <= _MASK_CHARS
        or _PLACEHOLDER_START.match(value) is not None
        or _PLACEHOLDER_WORDS.search(value) is not None
    )


def _is_code_reference(value: str) -> bool:
    return _CODE_REFERENCE.fullmatch(value) is not None and not _CODE_MARKS.isdisjoint(value)


def _labelled_span(match: re.Match[str]) -> tuple[int, int] | None:
    """The span of an assigned value, or None if the value is a placeholder or code."""
    if match.group("secret") is None:
        group = "dq" if match.group("dq") is not None else "sq"
        start, end = match.span(group)
        return None if _is_placeholder(match.group(group)) else (start, end)
    start, end = match.span("secret")
    value = match.group("secret").rstrip(_TRAILING_PUNCTUATION)
    end = start + len(value)
    if len(value) < 8 or _is_placeholder(value) or _is_code_reference(value):
        return None
    return start, end


def _has_digit_span(match: re.Match[str]) -> tuple[int, int] | None:
    """The whole match if it holds a digit: keys are random, `sk-some-long-word` is not."""
    return match.span() if any(c.isdigit() for c in match.group()) else None


def _placeholder_free_span(match: re.Match[str]) -> tuple[int, int] | None:
    return None if _is_placeholder(match.group("secret")) else match.span("secret")


_Spanner = Callable[[re.Match[str]], tuple[int, int] | None]

#: Kinds whose matches need a check; the others' span is their secret group or match.
_CHECKS: dict[str, _Spanner] = {
    "slack-token": _has_digit_span,
    "anthropic-key": _has_digit_span,
    "openai-key": _has_digit_span,
    "url-password": _placeholder_free_span,
    "authorization": _placeholder_free_span,
    "password": _labelled_span,
    "labelled-secret": _labelled_span,
}


def _default_span(match: re.Match[str]) -> tuple[int, int]:
    return match.span("secret") if "secret" in match.re.groupindex else match.span()


def find_secrets(text: str) -> list[SecretFinding]:
    """Find the credentials in a text.

    Args:
        text: Any text, e.g. a memory about to be stored.

    Returns:
        The findings, sorted by start and non-overlapping. Where two patterns' spans
        overlap, they are merged into one finding of the earlier (then longer, then
        more specific) kind, so redacting every finding removes every secret.
    """
    if _TRIGGER.search(text) is None:
        return []
    candidates: list[tuple[int, int, int, str]] = []
    for priority, (kind, pattern) in enumerate(_PATTERNS):
        check = _CHECKS.get(kind)
        for match in pattern.finditer(text):
            span = check(match) if check is not None else _default_span(match)
            if span is not None and span[0] < span[1]:
                candidates.append((span[0], -span[1], priority, kind))
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
