"""Credential detector false positives: the LoCoMo texts it would refuse.

    python -m benchmarks.secrets_fp
    python -m benchmarks.secrets_fp --data PATH

LoCoMo (../shared/benchmarks/locomo/README.md) is ordinary conversation: none of it
holds a credential, so every text ``find_secrets`` flags is a false positive that the
default write policy (``refuse``) would turn away. Scanned: every dialog turn as the
LoCoMo benchmark stores it (``"<speaker>: <text>"``, plus ``" [shares <caption>]"``
for image turns), each session summary, each observation and each event of the event
summaries. Prints the texts scanned, the flags and every flagged text with its
findings; exits 1 if any text is flagged, so it can serve as a check.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.locomo import DEFAULT_DATA, turn_content


def texts(samples: list[dict[str, Any]]) -> Iterator[tuple[str, str]]:
    """``(where, text)`` for every text of the data set worth scanning."""
    for sample in samples:
        sample_id = sample["sample_id"]
        for key, session in sample["conversation"].items():
            if re.fullmatch(r"session_\d+", key) and isinstance(session, list):
                for turn in session:
                    yield f"{sample_id} {turn['dia_id']}", turn_content(turn)
        for key, summary in (sample.get("session_summary") or {}).items():
            yield f"{sample_id} {key}", summary
        for key, by_speaker in (sample.get("observation") or {}).items():
            for speaker, observations in by_speaker.items():
                for text, *_ in observations:
                    yield f"{sample_id} {key} {speaker}", text
        for key, events in (sample.get("event_summary") or {}).items():
            for speaker, items in events.items():
                if isinstance(items, list):
                    for text in items:
                        yield f"{sample_id} {key} {speaker}", text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA, help="locomo10.json")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(
            f"secrets_fp: data file not found: {args.data} (pass --data PATH to locomo10.json)",
            file=sys.stderr,
        )
        return 2
    from noema.memory.write.secrets import find_secrets

    samples = json.loads(args.data.read_text(encoding="utf-8"))
    scanned = flagged = 0
    started = time.perf_counter()
    for where, text in texts(samples):
        scanned += 1
        findings = find_secrets(text)
        if findings:
            flagged += 1
            found = ", ".join(f"{f.kind} {text[f.start : f.end]!r}" for f in findings)
            print(f"{where}: {text!r}\n    {found}")
    elapsed = time.perf_counter() - started
    print(f"texts scanned: {scanned:,} in {elapsed:.2f} s")
    print(f"flags: {flagged} ({flagged / max(scanned, 1):.4%} of texts)")
    return 1 if flagged else 0


if __name__ == "__main__":
    sys.exit(main())
