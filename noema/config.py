"""Typed configuration (ADR 0001). The environment is read in one place: ``Settings.from_env``."""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from concepts import STALE_CONFIDENCE
from noema.errors import ConfigError, InvalidInput, from_validation

__all__ = [
    "DEFAULT_MIND",
    "DEFAULT_WEIGHTS",
    "DeepConfig",
    "EpisodeConfig",
    "JobsConfig",
    "MindConfig",
    "RecallWeights",
    "Settings",
    "WritePolicy",
    "default_database_url",
]

DEFAULT_MIND = "default"
#: The best installed embedder: e5 in the base install (noema.embeddings).
DEFAULT_EMBEDDER = "auto"
#: The best installed reranker for deep recall (noema.memory.recall.rerank).
DEFAULT_RERANKER = "auto"
DEFAULT_MIN_CONFIDENCE = 0.5
DEFAULT_HALF_LIFE_DAYS = 14.0
DEFAULT_RECENCY_DAYS = 30.0
DEFAULT_INITIAL_ACTIVATION = 0.5
DEFAULT_REINFORCE_GAIN = 0.2
DEFAULT_BATCH_SIZE = 1_000
DEFAULT_DECAY_SECONDS = 3_600.0
DEFAULT_REFLECT_SECONDS = 1_800.0
DEFAULT_EMBED_MISSING_SECONDS = 600.0
DEFAULT_LEASE_SECONDS = 300.0
DEFAULT_RRF_K = 60
#: Candidates each recall lane offers per result asked for (50 for a limit of 10).
DEFAULT_CANDIDATES_PER_RESULT = 5
DEFAULT_DEEP_POOL = 100
DEFAULT_EMBED_INLINE_MAX = 64
DEFAULT_DEEP_WEIGHT = 0.3
#: Worlds a ``worlds-first`` recall looks inside, and how it scores them. On LoCoMo
#: (a world per session) attention beat mean at every number of worlds; 5 kept 94%
#: of flat recall's R@5 at 0.7 of its latency (docs/benchmarks.md, "Worlds-first recall").
DEFAULT_WORLDS_FIRST_LIMIT = 5
DEFAULT_WORLD_POOLING: Literal["mean", "attention"] = "attention"


#: Signals left out of a result's components while their weight is 0.
OPTIONAL_SIGNALS = ("graph", "keys", "entity", "time", "dated", "context")


class RecallWeights(BaseModel):
    """Weights of the recall components (ADR 0005). They need not sum to 1."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The full-text signal over content.
    text: float = Field(default=1.0, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Vector similarity; for a memory without a vector (or with no embedder) it
    #: is added to ``text``.
    vector: float = Field(default=0.80, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Recency, ``exp(-age / recency_days)`` (0 as fitted on LoCoMo, whose
    #: questions do not favour recent turns; raise it where newer should win).
    recency: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Current activation.
    activation: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Stored importance.
    importance: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Credibility, faded by the memory's decay class.
    credibility: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The graph lane in the weighted sum (0: it only adds candidates).
    graph: float = Field(default=0.0, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The full-text signal over the expanded keys (dates, entities, summary,
    #: key, tags).
    keys: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The query's names and codes found in the memory (its speaker in full, a
    #: mention at half).
    entity: float = Field(default=0.50, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The memory's date against the query's time expressions ("last May").
    time: float = Field(default=0.80, ge=0.0, le=1.0, allow_inf_nan=False)
    #: For "when" questions: memories that say when something happened.
    dated: float = Field(default=0.40, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The lifecycle's signal (verified 1.0, active 0.8, candidate 0.5, stale 0.0).
    status: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Co-occurrence with the query's other strong results (``noema.memory.recall.cooccurrence``).
    cooccurrence: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The neighbour lift: the memories just before and after a strong hit in its
    #: thread (``noema.memory.recall.context``), capped below the hit.
    context: float = Field(default=0.8, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The same-world bonus inside a world (``noema.memory.write.worlds``): its own memories get
    #: all of it, its descendants' half; added only when a recall names a world.
    world: float = Field(default=0.05, ge=0.0, le=1.0, allow_inf_nan=False)

    def effective(self, *, vectors: bool) -> dict[str, float]:
        """The weights in use: without vectors the vector weight moves to text.

        A zero graph weight is left out, so the graph lane adds candidates only.
        """
        held = _EFFECTIVE.get((id(self), vectors))
        if held is None or held[0] is not self:
            if len(_EFFECTIVE) >= _EFFECTIVE_HELD:
                _EFFECTIVE.clear()
            held = _EFFECTIVE[id(self), vectors] = (self, _effective(self, vectors))
        return dict(held[1])


#: ``RecallWeights.effective`` once per (frozen) weights object, found by identity:
#: recall asks once per candidate, and hashing the model cost more than the rest.
#: Each entry holds its weights, so no other object can take its id meanwhile.
_EFFECTIVE: dict[tuple[int, bool], tuple[RecallWeights, tuple[tuple[str, float], ...]]] = {}
_EFFECTIVE_HELD = 64


def _effective(weights: RecallWeights, vectors: bool) -> tuple[tuple[str, float], ...]:
    effective = weights.model_dump()
    del effective["world"]  # added by the recall's scope, when it names a world
    for optional in OPTIONAL_SIGNALS:
        if not effective[optional]:
            del effective[optional]
    if not vectors:
        effective["text"] = round(effective["text"] + effective.pop("vector"), 12)
    return tuple(effective.items())


#: Fitted on LoCoMo by leave-one-conversation-out (ADR 0013, docs/benchmarks.md);
#: activation, importance, credibility and keys cannot be fitted there and keep set
#: values. Without vectors the vector weight moves to text.
DEFAULT_WEIGHTS = RecallWeights()


class DeepConfig(BaseModel):
    """Deep recall (``depth="deep"``): the reranker's pool and weight.

    How many fused candidates the reranker sees, and the weight of its spread
    score (the ``rerank`` component).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Candidates of the fast ranking the reranker sees.
    pool: int = Field(default=DEFAULT_DEEP_POOL, ge=1, le=1_000)
    #: The weight of the reranker's spread score (the ``rerank`` component).
    weight: float = Field(default=DEFAULT_DEEP_WEIGHT, ge=0.0, le=10.0, allow_inf_nan=False)


class EpisodeConfig(BaseModel):
    """Task episodes (ADR 0022): their ranking components and when they become procedures.

    ``outcome`` and ``rating`` weigh the ``outcome`` and ``rating`` components of
    an episode recall. Reflect turns an approach into a procedural memory once
    ``procedure_min_successes`` of its episodes in one world (and role) succeeded
    and its posterior success rate is at least ``procedure_min_rate``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The weight of the ``outcome`` component of an episode recall.
    outcome: float = Field(default=0.20, ge=0.0, le=1.0, allow_inf_nan=False)
    #: The weight of the ``rating`` component of an episode recall.
    rating: float = Field(default=0.10, ge=0.0, le=1.0, allow_inf_nan=False)
    #: Successful episodes of an approach (in one world and role) before reflect
    #: makes it a procedure.
    procedure_min_successes: int = Field(default=3, ge=2, le=1_000)
    #: The lowest posterior success rate of an approach that becomes a procedure.
    procedure_min_rate: float = Field(default=0.6, ge=0.0, le=1.0, allow_inf_nan=False)


class WritePolicy(BaseModel):
    """What the reconciler refuses before anything is written.

    ``secrets``: what to do with content that carries a credential (API keys,
    tokens, private keys, passwords in URLs): ``refuse`` it (the default), store
    it with each credential replaced by ``[REDACTED:<kind>]`` and the redaction
    recorded (``redact``), or store it as it is (``allow``).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Writes below this confidence are refused unless forced.
    min_confidence: float = Field(default=DEFAULT_MIN_CONFIDENCE, ge=0.0, le=1.0)
    #: Content carrying a credential: ``refuse`` it, ``redact`` it or ``allow`` it.
    secrets: Literal["refuse", "redact", "allow"] = "refuse"


class MindConfig(BaseModel):
    """Per-mind behaviour of memory: recall weights and fusion, write policy, dynamics.

    ``fusion`` is the default way lanes combine (``weighted`` sum or ``rrf``);
    ``embed_on_write`` embeds new memories inline (else the ``embed-missing`` job
    does it later); a ``remember_many`` of more than ``embed_inline_max`` items
    commits first and is embedded in the background (``Mind.wait_for_embeddings``).
    ``newer_wins``: of two memories that give different values
    of one fact, the newer ranks above the older in normal recall, and a question
    about the present state takes the newest memories on its subject first. ``deep``:
    the pool and weight of deep recall's reranker.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    weights: RecallWeights = DEFAULT_WEIGHTS
    deep: DeepConfig = DeepConfig()
    episodes: EpisodeConfig = EpisodeConfig()
    #: Of two memories giving different values of one fact, the newer ranks
    #: above the older; a question about the present state ("where do I work
    #: now?") takes the newest memories on its subject first.
    newer_wins: bool = True
    #: The learned ranker reorders the head of a weighted recall
    #: (``noema.memory.recall.ranker``).
    ranker: bool = True
    #: How lanes combine: a ``weighted`` sum or ``rrf`` (reciprocal-rank fusion).
    fusion: Literal["weighted", "rrf"] = "weighted"
    #: The ``k`` of reciprocal-rank fusion.
    rrf_k: int = Field(default=DEFAULT_RRF_K, ge=1, le=10_000)
    #: Candidates each recall lane offers per result asked for, a limit under 10
    #: counting as 10: fewer is faster and finds less of the evidence
    #: (docs/benchmarks.md, "Recall trade-offs").
    candidates_per_result: int = Field(default=DEFAULT_CANDIDATES_PER_RESULT, ge=1, le=50)
    #: Embed new memories as they are written (else ``embed-missing`` does it).
    embed_on_write: bool = True
    #: A ``remember_many`` of more items commits first and is embedded in the
    #: background.
    embed_inline_max: int = Field(default=DEFAULT_EMBED_INLINE_MAX, ge=0, le=1_000_000)
    policy: WritePolicy = WritePolicy()
    #: Activation's half-life, slowed by importance:
    #: ``half_life_days × (1 + importance)``.
    half_life_days: float = Field(default=DEFAULT_HALF_LIFE_DAYS, gt=0)
    #: The recency signal is ``exp(-age / recency_days)``.
    recency_days: float = Field(default=DEFAULT_RECENCY_DAYS, gt=0)
    #: The activation of a new memory.
    initial_activation: float = Field(default=DEFAULT_INITIAL_ACTIVATION, ge=0.0, le=1.0)
    #: The share of the distance to 1 that one recall adds to activation.
    reinforce_gain: float = Field(default=DEFAULT_REINFORCE_GAIN, ge=0.0, le=1.0)
    #: Memories per transaction in ``remember_many`` and ``remember --file``.
    batch_size: int = Field(default=DEFAULT_BATCH_SIZE, ge=1, le=100_000)
    #: Stage write-time detection's proposals (supersedes, contradicts, same_as)
    #: for writes of up to 64 new memories (``noema.memory.write.detect``).
    detect_on_write: bool = True
    #: Co-occurrence weights halve in this many days from their last update.
    cooccurrence_half_life_days: float = Field(default=30.0, gt=0)
    #: The ``decay`` job marks active and candidate memories stale below this
    #: faded confidence.
    stale_confidence: float = Field(default=STALE_CONFIDENCE, ge=0.0, le=1.0)
    #: ``worlds-first`` recall looks inside this many best worlds
    #: (``noema.memory.write.composed``).
    worlds_first_limit: int = Field(default=DEFAULT_WORLDS_FIRST_LIMIT, ge=1, le=10_000)
    #: How ``worlds-first`` scores a world: the cosine with its ``mean`` vector, or
    #: with its members pooled by ``attention`` to the query (measured on LoCoMo).
    world_pooling: Literal["mean", "attention"] = DEFAULT_WORLD_POOLING


class JobsConfig(BaseModel):
    """How often each background job runs, and how long its store lease lasts (ADR 0006).

    Intervals are in seconds. A job registered under ``decay`` or ``decay:<suffix>``
    takes ``decay_seconds``; ``embed-missing`` takes ``embed_missing_seconds``.
    A running job renews its lease every third of ``lease_seconds``.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: Seconds between runs of the ``decay`` job.
    decay_seconds: float = Field(default=DEFAULT_DECAY_SECONDS, gt=0, allow_inf_nan=False)
    #: Seconds between runs of the ``reflect`` job.
    reflect_seconds: float = Field(default=DEFAULT_REFLECT_SECONDS, gt=0, allow_inf_nan=False)
    #: Seconds between runs of the ``embed-missing`` job.
    embed_missing_seconds: float = Field(
        default=DEFAULT_EMBED_MISSING_SECONDS, gt=0, allow_inf_nan=False
    )
    #: How long a runtime holds a job's lease before another may take it.
    lease_seconds: float = Field(default=DEFAULT_LEASE_SECONDS, gt=0, allow_inf_nan=False)

    def interval(self, name: str) -> float | None:
        """The configured interval of the job ``name`` (the part before any ``:``), if any."""
        intervals = {
            "decay": self.decay_seconds,
            "reflect": self.reflect_seconds,
            "embed-missing": self.embed_missing_seconds,
        }
        return intervals.get(name.partition(":")[0])


def default_data_dir(environ: Mapping[str, str]) -> Path:
    """The user's data directory for Noema (XDG on Linux, the platform's own elsewhere)."""
    home = Path(environ.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "noema"
    if sys.platform == "win32":
        base = environ.get("LOCALAPPDATA") or str(home / "AppData" / "Local")
        return Path(base) / "noema"
    base = environ.get("XDG_DATA_HOME") or str(home / ".local" / "share")
    return Path(base) / "noema"


def default_database_url(environ: Mapping[str, str] | None = None) -> str:
    """``sqlite:///<data dir>/noema.db``."""
    env = os.environ if environ is None else environ
    return f"sqlite:///{default_data_dir(env) / 'noema.db'}"


class Settings(BaseModel):
    """Where the store is, which mind, and how each mind behaves.

    ``minds`` holds per-mind overrides of ``memory``, keyed by mind name.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    #: The store (``NOEMA_DATABASE_URL``); none: a SQLite file in the user's
    #: data directory.
    database_url: str | None = None
    #: The mind to open (``NOEMA_MIND``).
    mind: str = DEFAULT_MIND
    #: ``auto`` (e5 in the base install, else MiniLM when installed, else none),
    #: ``e5``, ``minilm``, ``hash[:DIMS]`` or ``none`` (``NOEMA_EMBEDDER``).
    embedder: str = DEFAULT_EMBEDDER
    #: Deep recall's reranker: ``auto`` (none: deep recall is the fast ranking,
    #: with its learned ranker), ``none``, ``lexical`` or ``embedding:<embedder>``
    #: (``NOEMA_RERANKER``).
    reranker: str = DEFAULT_RERANKER
    #: The chat model of ``noema chat``: ``module:Class`` or ``provider:model``
    #: (``NOEMA_CHAT_MODEL``); none: the offline responder, which answers from memory.
    chat_model: str | None = None
    #: The chat model's keyword arguments (``NOEMA_CHAT_MODEL_ARGS``, a JSON object).
    chat_model_args: dict[str, Any] = Field(default_factory=dict)
    memory: MindConfig = MindConfig()
    #: Per-mind ``[minds.NAME]`` tables, each overriding ``[memory]`` field by
    #: field.
    minds: dict[str, MindConfig] = Field(default_factory=dict)
    jobs: JobsConfig = JobsConfig()

    @model_validator(mode="before")
    @classmethod
    def _inherit(cls, data: Any) -> Any:
        # A [minds.NAME] table overrides [memory] field by field.
        if isinstance(data, dict) and isinstance(data.get("minds"), dict):
            base = data.get("memory") or {}
            base = base.model_dump() if isinstance(base, MindConfig) else dict(base)
            data = dict(data)
            data["minds"] = {
                name: {**base, **(v.model_dump() if isinstance(v, MindConfig) else v)}
                for name, v in data["minds"].items()
            }
        return data

    def mind_config(self, name: str) -> MindConfig:
        """The configuration of the mind ``name``: its own section, else the default."""
        return self.minds.get(name, self.memory)

    def url(self, environ: Mapping[str, str] | None = None) -> str:
        """The database URL: the configured one, else a SQLite file in the data directory."""
        return self.database_url or default_database_url(environ)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from the environment: the one place Noema reads it.

        ``NOEMA_CONFIG`` names a TOML file; ``NOEMA_DATABASE_URL``, ``NOEMA_MIND``,
        ``NOEMA_EMBEDDER``, ``NOEMA_RERANKER``, ``NOEMA_CHAT_MODEL`` and
        ``NOEMA_CHAT_MODEL_ARGS`` override what it says. The file's
        ``chat_model_args`` are its ``chat_model``'s: ``NOEMA_CHAT_MODEL`` drops
        them (its arguments are ``NOEMA_CHAT_MODEL_ARGS``, else none).
        """
        env = os.environ if environ is None else environ
        data: dict[str, Any] = {}
        path = env.get("NOEMA_CONFIG")
        if path:
            try:
                data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
            except OSError as exc:
                raise ConfigError(f"cannot read NOEMA_CONFIG file {path}: {exc.strerror}") from exc
            except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
                raise ConfigError(f"NOEMA_CONFIG file {path} is not valid TOML: {exc}") from exc
        if env.get("NOEMA_DATABASE_URL"):
            data["database_url"] = env["NOEMA_DATABASE_URL"]
        if env.get("NOEMA_MIND"):
            data["mind"] = env["NOEMA_MIND"]
        if env.get("NOEMA_EMBEDDER"):
            data["embedder"] = env["NOEMA_EMBEDDER"]
        if env.get("NOEMA_RERANKER"):
            data["reranker"] = env["NOEMA_RERANKER"]
        if env.get("NOEMA_CHAT_MODEL"):
            data["chat_model"] = env["NOEMA_CHAT_MODEL"]
            data.pop("chat_model_args", None)
        if env.get("NOEMA_CHAT_MODEL_ARGS"):
            from noema.chat_models import chat_model_arguments

            try:
                data["chat_model_args"] = chat_model_arguments(
                    env["NOEMA_CHAT_MODEL_ARGS"], where="NOEMA_CHAT_MODEL_ARGS"
                )
            except InvalidInput as exc:
                raise ConfigError(str(exc)) from None
        try:
            return cls.model_validate(data)
        except ValidationError as exc:
            raise ConfigError(str(from_validation(exc, what="configuration"))) from exc
