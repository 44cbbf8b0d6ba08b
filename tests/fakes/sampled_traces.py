"""Generated traces for the sampling tests: N traces over three routes, one in 50 with
metadata feedback=down, each its own trace id (the sampling decision's input)."""

from __future__ import annotations

from rt4chart.schemas.records import Trace
from rt4chart.transforms.sampling import UNSAMPLED, SamplingConfig

ROUTES = ("checkout", "search", "help")
CONTEXT = "The sky is blue on a clear day. Grass is green in spring."


def sampled_records(n: int, day: str = "2024-06-01") -> list[dict]:
    """`n` trace records in rt4chart's JSON schema, in a fixed order."""
    return [{"trace_id": f"s-{i:05d}", "route": ROUTES[i % 3],
             "timestamp": f"{day}T{(i // 60) % 24:02d}:{i % 60:02d}:00Z",
             "question": "What colour is the sky?", "contexts": [CONTEXT],
             "answer": "The sky is blue on a clear day.",
             "metadata": {"feedback": "down" if i % 50 == 7 else "up"}}
            for i in range(n)]


# The sampling of the stream and batch tests, and its command-line options.
SAMPLING = SamplingConfig(sample=("0.1",), always=("metadata.feedback=down",))
SAMPLING_ARGS = ("--sample", "0.1", "--always", "metadata.feedback=down")


def expected_ids(records: list[dict], config: SamplingConfig = SAMPLING) -> set[str]:
    """The trace ids the decision picks, from the records alone (no pipeline)."""
    return {r["trace_id"] for r in records if config.decide(Trace(
        r["trace_id"], r["route"], 0, "", (), "",
        metadata=tuple(r.get("metadata", {}).items()))) != UNSAMPLED}
