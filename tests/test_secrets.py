"""The credential detector: every kind in a sentence, look-alikes, overlaps, huge inputs.

Fake secrets are built from parts, so no literal here looks like a live credential to
a secret scanner (the AWS documentation key ``AKIAIOSFODNN7EXAMPLE`` excepted).
"""

from __future__ import annotations

import asyncio
import base64
import itertools
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from concepts import EventKind, Observation
from noema import Mind
from noema.config import MindConfig, Settings, WritePolicy
from noema.errors import ConfigError, PolicyViolation
from noema.memory.secrets import SecretFinding, find_secrets, redact_secrets
from workspace import CycleReport

NOEMA = str(Path(sys.executable).parent / "noema")

#: Where the secret goes in a sample sentence.
S = "<S>"


def _b64url(value: dict[str, object]) -> str:
    raw = json.dumps(value, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


GITHUB_BODY = "a1B2" * 9
JWT = ".".join(
    [
        _b64url({"alg": "HS256", "typ": "JWT"}),
        _b64url({"sub": "1234567890", "name": "Ada", "iat": 1516239022}),
        "SflKxwRJ" + "SMeKKF2Q" + "T4fwpMeJ" + "f36POk6y" + "JV_adQssw5c",
    ]
)
BEGIN_RSA = "-----BEGIN " + "RSA PRIVATE KEY" + "-----"
END_RSA = "-----END " + "RSA PRIVATE KEY" + "-----"
KEY_BODY = "MIIEow" + "IBAAKCAQEA" + "x7Y" * 20 + "\n" + "Qz9" * 21 + "=="
PEM = f"{BEGIN_RSA}\n{KEY_BODY}\n{END_RSA}"
OPENSSH_PEM = (
    "-----BEGIN "
    + "OPENSSH PRIVATE KEY"
    + f"-----\n{KEY_BODY}\n"
    + ("-----END " + "OPENSSH PRIVATE KEY" + "-----")
)
PLAIN_PEM = (
    "-----BEGIN " + "PRIVATE KEY" + f"-----\n{KEY_BODY}\n" + ("-----END " + "PRIVATE KEY" + "-----")
)
PASSWORD = "hunter2" + "Xy9!"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCY" + "EXAMPLEKEY"

# (kind, secret, sentence with `S` where the secret goes)
FOUND = [
    ("aws-access-key", "AKIAIOSFODNN7EXAMPLE", "deploy with <S> and the usual role"),
    ("aws-access-key", "ASIA" + "J7" * 8, "the session key <S> expires at noon"),
    ("aws-secret-key", AWS_SECRET, "aws_secret_access_key = <S>\nregion = eu-west-1"),
    ("aws-secret-key", AWS_SECRET, 'set AWS_SECRET_ACCESS_KEY="<S>" in the runner'),
    ("aws-secret-key", AWS_SECRET, "Secret key: <S> (rotated monthly)"),
    ("github-token", "ghp_" + GITHUB_BODY, "push with <S> from the CI box"),
    ("github-token", "gho_" + GITHUB_BODY, "the OAuth token is <S>, keep it safe"),
    ("github-token", "ghu_" + GITHUB_BODY, "user-to-server: <S>."),
    ("github-token", "ghs_" + GITHUB_BODY, "installation token <S> for the app"),
    ("github-token", "ghr_" + GITHUB_BODY, "refresh with <S> tomorrow"),
    (
        "github-token",
        "github_pat_" + "11ABCDEFG" + "0" * 13 + "_" + "aB3" * 19 + "xy",
        "fine-grained PAT <S> for the docs repo",
    ),
    (
        "slack-token",
        "xoxb-" + "1234567890" + "-" + "0987654321" + "-" + "aB3dE" * 5,
        "the bot posts with <S> in #alerts",
    ),
    ("slack-token", "xoxp-" + "2" * 11 + "-" + "3" * 11 + "-" + "f0" * 16, "user token: <S>"),
    (
        "slack-webhook",
        "https://hooks.slack.com/services/" + "T0000AAAA/B0000BBBB/" + "x7Y" * 8,
        "alerts go to <S> every hour",
    ),
    ("openai-key", "sk-" + "Ab3d" * 12, "OPENAI_API_KEY is <S> on my laptop"),
    ("openai-key", "sk-proj-" + "Ab3_d-9" * 10, "use the project key <S> for evals"),
    ("anthropic-key", "sk-ant-api03-" + "Zz9" * 30, "Claude calls use <S> now"),
    ("google-api-key", "AIza" + "Sy" + "A1b2C3d4e5" * 3 + "F6g", "the maps key <S> is billed"),
    ("stripe-key", "sk_live_" + "4eC3" * 6, "charge cards with <S> only in prod"),
    ("stripe-key", "rk_live_" + "9xQ2" * 6, "the restricted key <S> reads refunds"),
    ("stripe-key", "sk_test_" + "7tY1" * 6, "staging uses <S> for now"),
    ("jwt", JWT, "the session cookie was <S> before logout"),
    ("private-key", PEM, "the deploy key:\n<S>\nuse it for the bastion"),
    ("private-key", OPENSSH_PEM, "id_ed25519 holds <S> and nothing else"),
    ("private-key", PLAIN_PEM, "pkcs8: <S> done"),
    ("private-key", f"{BEGIN_RSA}\n{KEY_BODY}\n", "it was cut off: <S>"),
    ("url-password", "S3cr3t" + "Pw9", "connect to postgres://admin:<S>@db.internal:5432/app"),
    ("url-password", "hunter2" + "abc", "the cache is redis://:<S>@localhost:6379/0 today"),
    ("url-password", "p@ss" + "W0rd", "mirror at https://bot:<S>@git.example.com/repo.git"),
    ("password", PASSWORD, "log in with password=<S> then change it"),
    ("password", PASSWORD, "passwd: <S>\nuser: admin"),
    ("password", PASSWORD, 'DB_PASSWORD="<S>" in the .env file'),
    ("password", "correct horse " + "battery staple", '{"password": "<S>", "user": "ada"}'),
    ("password", PASSWORD, "db_pwd: <S>"),
    ("labelled-secret", "9f8e7d6c" + "5b4a3f2e", 'api_key = "<S>"'),
    ("labelled-secret", "tok3n" + "-Value-42", "secret_token: <S> (staging only)"),
    ("labelled-secret", "c1i3nt" + "s3cr3t", "client_secret=<S>; then call /token"),
    ("labelled-secret", "abc123" + "def456", "X-Api-Key: <S>"),
    ("authorization", "abcdefgh" + "12345678", "curl -H 'Authorization: Bearer <S>' api/v1"),
    ("authorization", "YWxhZGRpbjpvcGVuc2VzYW1l", "Authorization: Basic <S>"),
]


@pytest.mark.parametrize(
    ("kind", "secret", "template"),
    FOUND,
    ids=[f"{kind}-{i}" for i, (kind, _, _) in enumerate(FOUND)],
)
def test_each_kind_is_found_and_redacted(kind: str, secret: str, template: str) -> None:
    text = template.replace(S, secret)
    start = text.index(secret)

    assert find_secrets(text) == [SecretFinding(kind, start, start + len(secret))]

    redacted, findings = redact_secrets(text)
    assert redacted == template.replace(S, f"[REDACTED:{kind}]")
    assert secret not in redacted
    assert findings == find_secrets(text)


NOT_SECRETS = [
    "fixed in commit 9fceb02d0ae598e95dc970b74767f19372d61af8 yesterday",
    "the run id is 123e4567-e89b-12d3-a456-426614174000",
    "sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
    "we use sk-learn, I mean scikit-learn, for the baseline",
    "see task-123 and task-4567 on the board",
    "the header was aGVsbG8= which is just hello",
    "AKIA is the prefix AWS uses for long-term access keys",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIE\n-----END CERTIFICATE-----",
    "paste the BEGIN CERTIFICATE line too",
    "docs at https://docs.example.com/guide?page=2#setup",
    "clone git@github.com:noema/noema.git or ssh://git@github.com/noema/noema",
    "the dev server runs on http://localhost:8080/api",
    "postgresql://postgres@127.0.0.1:5432/db is the default",
    "my password was reset last week",
    "send me the password reset link",
    "the password is stored in the vault",
    "the token prefix ghp_ marks a GitHub personal token",
    "internationalization and counterrevolutionaries are long words",
    "write to ada.lovelace@example.com about the meeting",
    "the job ran at 2026-01-01T12:00:00.123456+00:00",
    "call me on +1 (555) 010-4477 after six",
    "password=",
    "password: ********",
    "password: xxxxxxxxxx",
    "api_key=<your-key-here>",
    'api_key = "YOUR_API_KEY"',
    "API_KEY=your-api-key-here",
    "password=${DB_PASSWORD}",
    "password: $DB_PASSWORD",
    "password={{ vault_password }}",
    'password = os.environ["DB_PASSWORD"]',
    "password = os.getenv('DB_PASSWORD')",
    "password = self.password",
    "password = settings.DATABASE_PASSWORD",
    "user: ada, password: password",
    "Authorization: Bearer <token>",
    "Authorization: Bearer $TOKEN",
    "max_tokens=100000000 and token_count: 12345678",
    "PWD=/home/ada/projects/noema",
    "password_reset_url: https://example.com/reset",
    "the secret: it was her",
    "sk-this-is-a-very-long-kebab-case-name-for-a-test",
    "xoxo-hugs-and-kisses-from-the-team",
    "redacted: postgres://admin:[REDACTED:url-password]@db/app",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_look_alikes_are_not_secrets(text: str) -> None:
    assert find_secrets(text) == []
    assert redact_secrets(text) == (text, [])


def test_several_secrets_in_one_text_are_all_redacted() -> None:
    github = "ghp_" + GITHUB_BODY
    text = (
        f"Rotate AKIAIOSFODNN7EXAMPLE today.\n"
        f"export GITHUB_TOKEN={github}\n"
        f"DATABASE_URL=postgres://app:{PASSWORD}@db:5432/app\n"
        f"curl -H 'Authorization: Bearer {JWT}' https://api.example.com\n"
        f"{PEM}\n"
        f"Then tell Ada the job is done."
    )

    redacted, findings = redact_secrets(text)

    assert [f.kind for f in findings] == [
        "aws-access-key",
        "github-token",
        "url-password",
        "jwt",
        "private-key",
    ]
    assert redacted == (
        "Rotate [REDACTED:aws-access-key] today.\n"
        "export GITHUB_TOKEN=[REDACTED:github-token]\n"
        "DATABASE_URL=postgres://app:[REDACTED:url-password]@db:5432/app\n"
        "curl -H 'Authorization: Bearer [REDACTED:jwt]' https://api.example.com\n"
        "[REDACTED:private-key]\n"
        "Then tell Ada the job is done."
    )
    for secret in (github, PASSWORD, JWT, KEY_BODY):
        assert secret not in redacted


def test_overlapping_matches_merge_into_one_finding() -> None:
    # `secret_token: ...` labels a value that is also an OpenAI key: one finding, the
    # specific kind, covering the whole value.
    key = "sk-" + "Ab3d" * 12
    text = f"secret_token: {key} and password={PASSWORD}"

    findings = find_secrets(text)

    start = text.index(key)
    assert findings == [
        SecretFinding("openai-key", start, start + len(key)),
        SecretFinding("password", text.index(PASSWORD), text.index(PASSWORD) + len(PASSWORD)),
    ]


# Secrets, their parts and look-alikes, so random texts hit many patterns and overlaps.
SECRETS = [
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_" + GITHUB_BODY,
    "sk-" + "Ab3d" * 12,
    JWT,
    PEM,
    f"postgres://u:{PASSWORD}@db/x",
]
FRAGMENTS = [
    *SECRETS,
    BEGIN_RSA,
    END_RSA,
    "password=",
    "api_key: ",
    '"',
    "Authorization: Bearer ",
    "://",
    ":",
    "@",
    "word",
    "-----",
    "eyJ",
    "9f8e7d6c5b4a",
    "${X}",
]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([*FRAGMENTS, " ", "\n"]), max_size=30))
def test_findings_are_sorted_and_disjoint_spans_of_the_text(parts: list[str]) -> None:
    text = "".join(parts)

    redacted, findings = redact_secrets(text)
    starts = [finding.start for finding in findings]
    ends = [finding.end for finding in findings]

    for finding in findings:
        assert 0 <= finding.start < finding.end <= len(text)
    for before, after in itertools.pairwise(findings):
        assert before.end <= after.start
    outside = [text[end:start] for end, start in zip([0, *ends], [*starts, len(text)], strict=True)]
    assert re.sub(r"\[REDACTED:[a-z-]+\]", "", redacted) == "".join(outside)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.sampled_from(FRAGMENTS), st.sampled_from([" ", "\n", ", ", "; "])),
        max_size=20,
    )
)
def test_delimited_secrets_are_all_removed_and_redaction_is_stable(
    parts: list[tuple[str, str]],
) -> None:
    text = "".join(fragment + separator for fragment, separator in parts)

    redacted, _ = redact_secrets(text)

    for secret in SECRETS:
        assert secret not in redacted
    assert redact_secrets(redacted) == (redacted, [])


def _ordinary_text(size: int) -> str:
    paragraph = (
        "Caroline went to the LGBTQ support group on 2023-05-08 and said it was powerful. "
        "Melanie painted a sunrise; see https://example.com/blog?id=42#top and task-123. "
        "The commit 9fceb02d0ae598e95dc970b74767f19372d61af8 fixed the password reset link, "
        "and http://localhost:8080 serves the docs. My token count was 12345678 today. "
        "We use scikit-learn (sk-learn) with uuid 123e4567-e89b-12d3-a456-426614174000.\n"
    )
    return (paragraph * (size // len(paragraph) + 1))[:size]


MEGABYTE = 1_000_000


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(_ordinary_text(MEGABYTE), id="prose"),
        pytest.param("a" * MEGABYTE, id="one-letter"),
        pytest.param("eyJ-" * (MEGABYTE // 4), id="jwt-prefixes"),
        pytest.param("sk-" * (MEGABYTE // 3), id="key-prefixes"),
        pytest.param('password="a ' * (MEGABYTE // 12), id="unterminated-quotes"),
        pytest.param("://a:" * (MEGABYTE // 5), id="url-fragments"),
        pytest.param("-----BEGIN x" * (MEGABYTE // 12), id="begin-lines"),
        pytest.param("password: " * (MEGABYTE // 10), id="labels"),
    ],
)
def test_a_megabyte_is_scanned_in_linear_time(text: str) -> None:
    started = time.perf_counter()
    find_secrets(text)
    # Catastrophic backtracking on a megabyte takes minutes; a linear scan well under this.
    assert time.perf_counter() - started < 10


# ---------------------------------------------------------------- the write policy


AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
GITHUB = "ghp_" + "a1B2" * 9


def _policy_mind(open_mind: Callable[..., Mind], secrets: str, name: str = "policy") -> Mind:
    config = MindConfig(policy=WritePolicy(secrets=secrets))  # type: ignore[arg-type]
    return open_mind(name, config=config)


def test_the_default_policy_refuses_a_credential_and_writes_nothing(mind: Mind) -> None:
    events = len(mind.events())
    for force in (False, True):  # force lowers the bar of confidence only
        with pytest.raises(PolicyViolation) as caught:
            mind.remember(f"Deploy with key {AWS_KEY} from the laptop", force=force)
        message = str(caught.value)
        assert "aws-access-key" in message and AWS_KEY not in message
        assert len(message.splitlines()) == 1
    with pytest.raises(PolicyViolation, match=r"item 2: .*github-token"):
        mind.remember_many(
            [{"content": "An ordinary note"}, {"content": "CI uses", "payload": {"t": GITHUB}}]
        )
    with pytest.raises(PolicyViolation, match="url-password"):
        mind.remember("Connect to postgresql://app:s3cretPassw0rd@db.internal:5432/app")
    assert len(mind.events()) == events and mind.stats()["total"] == 0
    # Look-alikes are ordinary text.
    for text in (
        "Commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
        "Connect to postgresql://postgres@127.0.0.1:5432/noema",
        "The password reset link was sent to ada@example.com",
    ):
        mind.remember(text)
    assert mind.stats()["total"] == 3


def test_the_redact_policy_stores_the_text_without_the_credential_and_records_it(
    open_mind: Callable[..., Mind],
) -> None:
    mind = _policy_mind(open_mind, "redact")
    memory = mind.remember(
        f"Deploy with key {AWS_KEY}", tags=["ops"], payload={"token": GITHUB}, key="ops.deploy"
    )
    assert memory.content == "Deploy with key [REDACTED:aws-access-key]"
    assert memory.payload == {"token": "[REDACTED:github-token]"}
    created = mind.events(memory_id=memory.id, kinds=[EventKind.MEMORY_CREATED])[0]
    assert created.payload["redacted"] == ["aws-access-key", "github-token"]
    lines = "\n".join(mind.export_lines())
    assert AWS_KEY not in lines and GITHUB not in lines
    again = mind.remember(f"Deploy with key {AWS_KEY}", tags=["ops"], key="ops.deploy")
    assert again.id == memory.id  # the redacted text is what dedups
    assert mind.verify().ok


def test_the_allow_policy_stores_credentials_as_they_are(open_mind: Callable[..., Mind]) -> None:
    mind = _policy_mind(open_mind, "allow")
    assert AWS_KEY in mind.remember(f"Deploy with key {AWS_KEY}").content


def test_observations_pass_the_same_policy(open_mind: Callable[..., Mind]) -> None:
    refusing = _policy_mind(open_mind, "refuse", "observer")
    with pytest.raises(PolicyViolation, match="aws-access-key"):
        refusing.observe(f"The key is {AWS_KEY}")
    assert refusing.events() == []

    async def cycle(mind: Mind, text: str) -> CycleReport:
        workspace = mind.workspace()
        report = await workspace.step([Observation(content=text)])
        await workspace.stop()
        return report

    report = asyncio.run(cycle(refusing, f"The key is {AWS_KEY}"))
    assert report.refused == [["aws-access-key"]] and report.percepts == []
    kinds = [e.kind for e in refusing.events()]
    assert EventKind.OBSERVATION_RECEIVED not in kinds
    refused = refusing.events(kinds=[EventKind.OBSERVATION_REFUSED])
    assert [e.payload for e in refused] == [{"channel": "user", "credentials": ["aws-access-key"]}]
    assert refusing.stats()["total"] == 0

    redacting = _policy_mind(open_mind, "redact", "redactor")
    asyncio.run(cycle(redacting, f"The key is {AWS_KEY}"))
    seen = redacting.events(kinds=[EventKind.OBSERVATION_RECEIVED])[0]
    assert seen.payload["content"] == "The key is [REDACTED:aws-access-key]"
    assert seen.payload["redacted"] == ["aws-access-key"]
    stored = [r.memory.content for r in redacting.recall("key", peek=True)]
    assert stored == ["The key is [REDACTED:aws-access-key]"]
    assert redacting.verify().ok


def test_the_command_line_refuses_a_credential_in_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    done = subprocess.run(
        [NOEMA, "--db", url, "remember", "db password=hunter2hunter2 for staging"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith("noema: error: the text holds a credential (password)")
    assert "hunter2" not in done.stderr and len(done.stderr.splitlines()) == 1
    stats = subprocess.run(
        [NOEMA, "--db", url, "stats", "--json"], capture_output=True, text=True, check=True
    )
    assert json.loads(stats.stdout)["total"] == 0


def test_the_policy_is_configured_in_the_toml_file(tmp_path: Path) -> None:
    path = tmp_path / "noema.toml"
    path.write_text(
        '[memory.policy]\nsecrets = "redact"\n\n[minds.strict.policy]\nsecrets = "refuse"\n'
    )
    settings = Settings.from_env({"NOEMA_CONFIG": str(path)})
    assert settings.mind_config("any").policy.secrets == "redact"
    assert settings.mind_config("strict").policy.secrets == "refuse"
    path.write_text('[memory.policy]\nsecrets = "sometimes"\n')
    with pytest.raises(ConfigError, match="secrets"):
        Settings.from_env({"NOEMA_CONFIG": str(path)})
