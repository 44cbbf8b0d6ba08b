"""Two audits at once in two threads of one process (issue 49, point 1): each run carries its
own progress and counters (`tally.run_scope`), so each reads its own figures, and the verdicts
are those of each run alone. Before, a process-wide tally made the API take one audit at a time
(`_RUNS`): the rendezvous judge's first call would wait in vain for the other audit."""

from __future__ import annotations

import logging
import re
import threading
from concurrent.futures import ThreadPoolExecutor

import rt4chart

import golden_traces as gt

RUNS = {
    "small": [gt.trace("s-ok", "faq", gt.GROUNDED), gt.trace("s-con", "faq", gt.CONTRADICTED),
              gt.trace("s-nic", "billing", gt.UNSUPPORTED)],
    "large": [gt.trace(f"l-{i}", "faq", (gt.GROUNDED, gt.CONTRADICTED)[i % 2])
              for i in range(7)],
}
FINAL = re.compile(r"^progress: (\d+)/(\d+) traces done, (\d+) judge calls .*\(final\)$")


def _audit(name: str, folder, parties: int):
    folder.mkdir(exist_ok=True)
    result = rt4chart.audit(RUNS[name], judge="rendezvous_judge:factory",
                            judge_option={"folder": str(folder), "party": name,
                                          "parties": str(parties)})
    return threading.current_thread().name, result


def _verdicts(result) -> list[tuple]:
    return sorted((a.trace_id, a.label, tuple(c.label for c in a.claims))
                  for a in result.answers)


def _final_lines(caplog) -> dict[str, tuple[int, int]]:
    """The final progress line each thread logged: (traces done, of total, judge calls)."""
    lines = {}
    for record in caplog.records:
        match = FINAL.match(record.getMessage())
        if match:
            lines[record.threadName] = (int(match[1]), int(match[2]), int(match[3]))
    return lines


def test_two_audits_at_once_each_have_their_figures_and_the_verdicts_alone(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="rt4chart")
    alone = {name: _audit(name, tmp_path / f"alone-{name}", parties=1)[1] for name in RUNS}
    caplog.clear()
    with ThreadPoolExecutor(2, thread_name_prefix="audit") as pool:
        futures = {name: pool.submit(_audit, name, tmp_path / "together", 2) for name in RUNS}
        together = {name: future.result(timeout=600) for name, future in futures.items()}
    finals = _final_lines(caplog)
    for name, (thread, result) in together.items():
        assert _verdicts(result) == _verdicts(alone[name])
        assert result.complete  # neither waited in vain
        assert result.summary.answers == len(RUNS[name])
        assert result.summary.calls == alone[name].summary.calls
        # its own progress: its traces, not the other run's counted in
        assert finals[thread] == (len(RUNS[name]), len(RUNS[name]), result.summary.calls)
    assert {t for t, _ in together.values()} == set(finals)  # two threads, one line each
