"""``Mind``'s methods that keep the mind: health, forgetting, embedding and transfer."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import IO, Any

from pydantic import SkipValidation, ValidationError

from concepts import (
    Lifecycle,
    RecallFilters,
    Status,
)
from concepts.models import Key
from concepts.paths import WorldPath
from noema._arguments import Count, checked
from noema._mind.base import MindBase, Progress
from noema.errors import InvalidInput, from_validation
from noema.memory.knowledge.health import HealthReport, health_report
from noema.memory.upkeep import consolidate as consolidation, derived as upkeep
from noema.memory.upkeep.decay import DecayReport, run_decay
from noema.memory.upkeep.purge import PurgePlan, PurgeReport, plan_purge, purge
from noema.memory.upkeep.transfer import (
    ExportData,
    export_lines,
    iter_audit,
    iter_events,
    iter_memories,
    iter_relationships,
    parse_export,
    restore,
)
from noema.memory.upkeep.verify import Checkpoint, checkpoint_of, verify_records
from noema.memory.upkeep.verify_checks import VerifyReport
from noema.memory.write.chat_exports import (
    ChatExport,
    ChatFormat,
    ChatImportReport,
    chat_inputs,
    load_chat_export,
)
from noema.memory.write.parts import Parts
from noema.memory.write.policy import secret_kinds
from noema.memory.write.reconciler import Reconciler
from noema.storage import ops

__all__ = ["UpkeepPart"]


class UpkeepPart(MindBase):
    """Keeping the mind: health, forgetting, embedding, decay, consolidation, verify, transfer.

    Transfer is ``export``/``import_`` (a whole mind, byte for byte) and
    ``import_chat`` (a chat app's history, remembered message by message).
    """

    @checked
    def health(
        self,
        *,
        rules: Sequence[str] | None = None,
        limit: Count = 100,
        world: WorldPath | None = None,
    ) -> HealthReport:
        """Run the health rules over the mind: what to review, merge, refresh or add.

        Deterministic rules (``noema.memory.knowledge.health``, no model): declining
        confidence, unresolved contradictions, stale clusters, duplicates,
        coverage gaps, popular but unexamined memories, orphaned derived ones.

        Args:
            rules: Names of the rules to run (``noema.memory.knowledge.health.RULES``);
                ``None`` runs them all.
            limit: Most findings per rule.
            world: Only this world and its descendants (a path; ``None``: all).

        Returns:
            The report: findings in rule order, what each rule read, what it left off.

        Raises:
            InvalidInput: ``rules`` names an unknown rule (``field="rules"``).
        """
        return health_report(
            self.storage, self.info, self.config, self.clock, rules=rules, limit=limit, world=world
        )

    @checked
    def plan_forget(
        self,
        ids: str | Sequence[str] = (),
        *,
        key: Key | None = None,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        containing: str | None = None,
    ) -> PurgePlan:
        """What ``forget`` with the same selectors would remove; nothing is written."""
        ids = [ids] if isinstance(ids, str) else list(ids)  # one id, or several
        chosen = self._purge_filters(filters)
        with self.storage.transaction(write=False) as session:
            return plan_purge(
                session, self.info, ids=ids, key=key, filters=chosen, containing=containing
            )

    @checked
    def forget(
        self,
        ids: str | Sequence[str] = (),
        *,
        key: Key | None = None,
        filters: RecallFilters | Mapping[str, Any] | None = None,
        containing: str | None = None,
    ) -> PurgeReport:
        """Delete memories for good: the only path that deletes (privacy).

        Removes the memories named by ``ids``, every memory with ``key``, every
        one passing ``filters`` (any status unless the filters name statuses), and
        every one whose content contains ``containing`` (ignoring case); also the
        memories derived from them, their vectors, full-text entries and edges,
        and the payloads of events that quote them. A content-free
        ``memory_purged`` event records it; ``verify`` still passes.
        """
        plan = self.plan_forget(ids, key=key, filters=filters, containing=containing)
        return purge(self.storage, self.info, self.clock, plan)

    @staticmethod
    def _purge_filters(
        filters: RecallFilters | Mapping[str, Any] | None,
    ) -> RecallFilters | None:
        if filters is None:
            return None
        fields = (
            filters.model_dump(exclude_unset=True)
            if isinstance(filters, RecallFilters)
            else dict(filters)
        )
        fields.setdefault("statuses", tuple(Status))
        fields.setdefault("lifecycles", tuple(Lifecycle))
        try:
            return RecallFilters.model_validate(fields)
        except ValidationError as exc:
            raise from_validation(exc, what="filters:") from None

    @checked
    def wait_for_embeddings(
        self, progress: Progress | None = None, *, timeout: float | None = None
    ) -> bool:
        """Wait until background embedding (of bulk ``remember_many`` writes) is done.

        Returns False when ``timeout`` (seconds) ran out first. An error of the
        background embedder is raised here.
        """
        return self._background.wait(progress, timeout)

    @checked
    def embed_missing(
        self,
        progress: Progress | None = None,
        *,
        batch: Count = 256,
        stop: threading.Event | None = None,
    ) -> int:
        """Embed every memory that has no vector under the configured model; returns how many.

        Idempotent and safe beside writers: each batch is embedded outside any
        transaction and stored in its own. ``progress(done, total)`` follows it;
        ``stop``, once set, ends it after the current batch.
        """
        return upkeep.embed_missing(self._engine, progress, batch=batch, stop=stop)

    @checked
    def reindex(self, progress: Progress | None = None, *, batch: Count = 1_000) -> int:
        """Rebuild every memory's entity links and expanded keys; returns how many were read.

        New memories get both as they are written; this brings memories written
        before entity extraction (schema version 3) or key expansion (version 4)
        existed into the graph and keys lanes, and refreshes keys after the
        expansion changes. Idempotent: links are never duplicated, and keys
        already up to date are not rewritten. Last, the worlds' composed vectors
        are recomputed from the stored ones (stores from before they existed).
        """
        return upkeep.reindex(self._engine, progress, batch=batch)

    def decay(self) -> DecayReport:
        """Run the decay job now (idempotent; never deletes)."""
        return run_decay(self.storage, self.info, self.config, self.clock)

    @checked
    def consolidate(
        self,
        *,
        chat_model: Any = None,
        min_group: int = consolidation.DEFAULT_MIN_GROUP,
        min_shared: int = consolidation.DEFAULT_MIN_SHARED,
        limit: Count = consolidation.DEFAULT_LIMIT,
    ) -> consolidation.ReflectReport:
        """Consolidate now: groups of related episodes become semantic or procedural memories.

        Each new memory is ``derived_from`` its group's episodes; contradicting
        members get ``contradicts`` edges, near-duplicates ``same_as`` proposals.
        Idempotent (a second run writes nothing) and never deletes or changes
        a memory. The ``reflect`` process and background job run the same.

        Args:
            chat_model: a LangChain chat model that writes the summaries;
                without one (or where it fails) a deterministic offline method does.
            min_group: fewest episodes a group needs (at least 2).
            min_shared: fewest keywords two episodes must share (at least 1).
            limit: most unconsolidated episodes read, the newest first.

        Returns:
            What the run read and wrote.
        """
        return consolidation.consolidate(
            self._engine,
            chat_model=chat_model,
            min_group=min_group,
            min_shared=min_shared,
            limit=limit,
        )

    @checked
    def verify(self, *, against: Checkpoint | None = None) -> VerifyReport:
        """Check the audit chain, its events, and every row of the mind against them.

        Memories, edges, worlds, world links, history spans, peers and the
        mind's own row; a stored value that cannot be read is a finding too.
        ``against``: a ``checkpoint()`` kept outside the database; the chain
        must still hold its entry, so a cut-off tail or rewritten history shows.
        """
        if against is not None and against.mind_id != self.id:
            raise InvalidInput(f"checkpoint: it is of another mind, not {self.name!r}")
        with self.storage.transaction(write=False) as session:
            return verify_records(
                iter_audit(session, self.id),
                iter_events(session, self.id),
                iter_memories(session, self.id),
                iter_relationships(session, self.id),
                stored=session.run(ops.ReadStoredRows(self.id)),
                against=against,
            )

    def checkpoint(self) -> Checkpoint:
        """The head of the audit chain now: keep it elsewhere, verify against it later."""
        with self.storage.transaction(write=False) as session:
            return checkpoint_of(self.id, session.run(ops.AuditHead(self.id)))

    @checked
    def export_lines(self, *, world: WorldPath | None = None) -> list[str]:
        """The mind as JSONL lines (no newlines), from one consistent snapshot.

        ``world``: only that world and its descendants, with the edges between
        their memories and no events or audit chain (such a file is not restorable).
        """
        return export_lines(self.storage, self.info, world)

    def export(self, fp: IO[str], *, world: str | None = None) -> int:
        """Write the mind (or one ``world`` of it) as JSONL to ``fp``; returns the line count."""
        if not callable(getattr(fp, "write", None)):
            raise InvalidInput(f"fp: a text file open for writing, not {type(fp).__name__}")
        count = 0
        for line in self.export_lines(world=world):
            fp.write(line + "\n")
            count += 1
        return count

    def import_(
        self, source: IO[bytes] | IO[str] | Iterable[bytes | str] | ExportData
    ) -> dict[str, int]:
        """Restore an export into this mind, which must be empty; all or nothing.

        ``source`` is the export's lines (a file or any iterable), or an
        ``ExportData`` already checked with ``noema.memory.upkeep.transfer.parse_export``.
        """
        if isinstance(source, ExportData):
            return restore(self.storage, self.info, source, self.config.policy)
        if isinstance(source, str | bytes | Mapping) or not isinstance(source, Iterable):
            raise InvalidInput(f"source: an export's lines or file, not {type(source).__name__}")
        return restore(self.storage, self.info, parse_export(source), self.config.policy)

    @checked
    def import_chat(
        self,
        source: SkipValidation[str | os.PathLike[str] | IO[bytes] | IO[str] | ChatExport],
        *,
        format: ChatFormat = "auto",
        progress: Progress | None = None,
    ) -> ChatImportReport:
        """Remember a chat history exported by a chat app: one observation per message.

        ``source`` is a path (``"-"``: standard input), a file open for reading, or a
        ``ChatExport`` already read with ``noema.memory.write.chat_exports``. Its
        ``format``: ``chatgpt`` (ChatGPT's ``conversations.json``: the path to each
        conversation's current message, so branches edited away are left out),
        ``claude`` (Claude's ``conversations.json``), ``jsonl`` (one
        ``{"role", "content", "time"}`` a line, optionally ``conversation`` and
        ``title``), or ``auto`` to tell it from the file.

        Each message the user or an assistant wrote in text becomes an episodic
        observation at the time it was said, on the thread ``chat:<conversation
        id>`` in conversation order: the user's on the channel ``user``, the
        assistant's on ``source`` (tagged ``assistant``). System, tool, hidden and
        empty messages are skipped. Credentials are redacted whatever the write
        policy says (``[REDACTED:<kind>]``, recorded on each memory's event). The
        whole file is read and checked before the first write, so a bad one
        writes nothing. As with ``remember_many``, a large history is embedded in
        the background after it is written (``wait_for_embeddings``), and
        ``progress(done, total)`` follows the write.

        Raises:
            InvalidInput: the file cannot be read, is no chat export of
                ``format``, or a message in it is wrong; the message names it.
            PolicyViolation: the write policy refuses a message for another reason
                than a credential (its confidence, a credential in a thread label).
        """
        export = (
            source if isinstance(source, ChatExport) else load_chat_export(source, format=format)
        )
        made = chat_inputs(export)
        inputs = [item for _, item in made]
        redacting = self.config.model_copy(
            update={"policy": self.config.policy.model_copy(update={"secrets": "redact"})}
        )
        writer = Reconciler(Parts(self.storage, self.info, redacting, self.clock, self.embedder))
        written = self._write_many(
            inputs, writer, progress=progress, labels=[where for where, _ in made]
        )
        return ChatImportReport(
            format=export.format,
            conversations=len(export.conversations),
            messages=export.messages,
            memories=len({memory.id for memory in written}),
            skipped=export.skipped,
            redacted=sum(1 for item in inputs if secret_kinds(item)),
        )
