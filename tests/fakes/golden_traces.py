"""Small golden sets for the Python API, gate and pytest-helper tests: traces whose offline
(lexical) verdicts are plain from the text: an answer copying its context is ENT, one changing
a number of it CON, one about something the context never mentions NIC."""

from __future__ import annotations

HOURS = ("The library opens at 8 am on weekdays. A day pass costs 4 euros for visitors. "
         "Members borrow up to 10 books at a time.")
QUESTION = "When does the library open, and what does a visit cost?"
GROUNDED = "The library opens at 8 am on weekdays. A day pass costs 4 euros for visitors."
CONTRADICTED = "The library opens at 10 am on weekdays."
UNSUPPORTED = "The library runs a chess club for retired engineers every Friday."


def trace(trace_id: str, route: str, answer: str, context: str = HOURS) -> dict:
    """A trace in rt4chart's input schema."""
    return {"trace_id": trace_id, "route": route, "timestamp": "2024-06-01T10:00:00Z",
            "question": QUESTION, "contexts": [{"doc_id": "library-hours", "text": context}],
            "answer": answer}


def golden(route_answers: dict[str, list[str]], prefix: str = "g") -> list[dict]:
    """Traces per route, ids `{prefix}-{route}-{i}` (stable, so two runs pair up)."""
    return [trace(f"{prefix}-{route}-{i}", route, answer)
            for route, answers in route_answers.items() for i, answer in enumerate(answers)]
