"""The LoCoMo harness on a tiny synthetic conversation: evidence cleaning, recall@k sums."""

from __future__ import annotations

import json
import math
from pathlib import Path

from benchmarks.locomo import (
    BEGIN,
    END,
    Outcome,
    clean_evidence,
    load,
    main,
    parse_when,
    run,
    score,
    summarise,
)


def _data(tmp_path: Path) -> Path:
    conversation = {
        "speaker_a": "Ada",
        "speaker_b": "Bruno",
        "session_1_date_time": "1:56 pm on 8 May, 2023",
        "session_1": [
            {"speaker": "Ada", "dia_id": "D1:1", "text": "I adopted a greyhound called Zephyr."},
            {"speaker": "Bruno", "dia_id": "D1:2", "text": "Pineapple pizza tonight?"},
            {"speaker": "Ada", "dia_id": "D1:3", "text": "Sounds lovely."},
        ],
        "session_2_date_time": "10:00 am on 1 June, 2023",
        "session_3_date_time": "11:00 am on 2 June, 2023",  # a date key without a session
        "session_2": [
            {"speaker": "Bruno", "dia_id": "D2:1", "text": "Pineapple pizza tonight?"},
            {
                "speaker": "Ada",
                "dia_id": "D2:2",
                "text": "Look at this.",
                "blip_caption": "a photo of a lighthouse at dusk",
            },
        ],
    }
    qa = [
        # Both copies of a deduplicated turn are hits at rank 1.
        {"question": "pineapple pizza", "answer": "x", "evidence": ["D1:2", "D2:1"], "category": 4},
        # One gold turn found, one never (in another session, so no neighbour of the
        # hit): recall 0.5, any-hit 1, all-hit 0.
        {"question": "greyhound Zephyr", "answer": "x", "evidence": ["D1:1 D2:2"], "category": 1},
        # Caption text is indexed; the unknown id is dropped.
        {"question": "lighthouse", "evidence": ["D2:2; D9:9"], "category": 5},
        # Empty evidence: skipped.
        {"question": "anything", "answer": "x", "evidence": [], "category": 3},
    ]
    path = tmp_path / "locomo10.json"
    path.write_text(json.dumps([{"sample_id": "conv-t", "conversation": conversation, "qa": qa}]))
    return path


def test_clean_evidence_splits_drops_and_canonicalises() -> None:
    known = {"D1:1", "D1:3", "D30:5"}
    assert clean_evidence(["D1:1; D1:3", "D1:1", "D", "D30:05", "D:11:26"], known) == (
        "D1:1",
        "D1:3",
        "D30:5",
    )
    assert parse_when("1:56 pm on 8 May, 2023").isoformat() == "2023-05-08T13:56:00+00:00"


def test_score_and_summary_arithmetic() -> None:
    ranked = [{"a"}, {"x"}, {"b", "c"}]  # "b" and "c" share one (deduplicated) memory
    assert score(["a", "b", "z"], ranked) == [1, 3, None]
    outcomes = [
        Outcome("s", 1, [1, 3, None]),  # recall@1 1/3, @5 2/3
        Outcome("s", 2, [2]),  # recall@1 0, @5 1
        Outcome("s", 5, [None]),
    ]
    row = summarise(outcomes, (1, 2, 3, 4))
    assert row["n"] == 2
    assert math.isclose(row["recall@1"], (1 / 3 + 0) / 2)
    assert math.isclose(row["recall@5"], (2 / 3 + 1) / 2)
    assert row["any@1"] == 0.5 and row["all@1"] == 0.0
    assert row["any@5"] == 1.0 and row["all@5"] == 0.5
    assert summarise(outcomes, (5,))["recall@50"] == 0.0


def test_harness_end_to_end(tmp_path: Path) -> None:
    conversations = load(_data(tmp_path))
    (conv,) = conversations
    assert len(conv.turns) == 5 and conv.skipped == 1
    assert conv.turns[-1].content == "Ada: Look at this. [shares a photo of a lighthouse at dusk]"
    report = run(conversations, ["text"], progress=False)
    assert report["counts"]["memories"] == 4  # the repeated turn is one memory
    results = report["results"]["text"]
    assert results["4 single-hop"]["recall@1"] == 1.0
    assert results["1 multi-hop"]["recall@50"] == 0.5
    assert results["1 multi-hop"]["any@50"] == 1.0 and results["1 multi-hop"]["all@50"] == 0.0
    assert results["1-4"]["n"] == 2 and results["1-4"]["recall@1"] == 0.75
    assert results["5 adversarial"]["recall@1"] == 1.0

    output = tmp_path / "benchmarks.md"
    output.write_text("# Benchmarks\n\nintro\n")
    data = str(tmp_path / "locomo10.json")
    args = ["--data", data, "--output", str(output), "--quiet", "--embedder", "hash:64"]
    assert main(args) == 0  # every mode, vectors from the hash embedder
    text = output.read_text()
    assert text.startswith("# Benchmarks\n\nintro\n") and BEGIN in text and END in text
    assert "| text | 1-4 | 2 | 0.750 |" in text
    for mode in ("vector", "weighted", "rrf"):
        assert f"| {mode} | 1-4 | 2 |" in text
    assert main(["--data", data, "--embedder", "bogus", "--quiet"]) == 2
    assert main(["--data", str(tmp_path / "missing.json")]) == 2
