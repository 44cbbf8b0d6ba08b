"""Peak memory of a batch audit as the number of traces grows (not a test).

    .venv/bin/python tests/bench/bench_batch_memory.py [--sizes 671 2684]
        [--data ../shared/data/ragtruth] [--json out.json] [rt4chart or beam options ...]

For each size N, writes N traces made from the RAGTruth answers (`--data`, cycled: the k-th
pass gives each trace the id `<id>-r<k>` and moves its timestamp k days on, so that every id is
unique and the rates span several days), runs the real `rt4chart audit` console script (next to
this Python) on them in a subprocess with the offline judge, and measures the peak resident
memory of the whole process tree (the CLI and any worker process it starts): psutil when it is
installed, else /proc, polled every 50 ms; and the CLI process's own peak from `os.wait4`
(`ru_maxrss`, exact but for that process only). Prints a line per size, then both peaks and the
ratio of the largest size's to the smallest's. Options it does not know go to `rt4chart audit`
(e.g. `--chunk-traces 0` for one pipeline run over the whole input, `--runner ...`).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
RT4CHART = str(Path(sys.executable).parent / "rt4chart")
DAY0 = datetime(2024, 5, 1, 9, 0, tzinfo=UTC)
# ../shared/data/ragtruth beside the checkout (a worktree sits one level deeper), else the
# 29 answers shipped with the tests.
DATA = next((p for p in (HERE.parents[2] / "shared" / "data" / "ragtruth",
                         HERE.parents[3] / "shared" / "data" / "ragtruth")
             if (p / "response.jsonl").exists()), HERE.parent / "data" / "ragtruth_gold")

try:  # optional: the /proc fallback needs nothing
    import psutil
except ImportError:  # pragma: no cover - depends on the environment
    psutil = None


def traces(data: str, n: int):
    """N traces cycled from the RAGTruth answers, with unique ids and spread timestamps."""
    from rt4chart.pipeline.eval.datasets import ragtruth_traces

    base = list(ragtruth_traces(data))
    for i in range(n):
        rnd, t = divmod(i, len(base))
        record = base[t]
        when = DAY0 + timedelta(days=rnd, minutes=t)
        yield dict(record, trace_id=f"{record['trace_id']}-r{rnd}",
                   timestamp=when.isoformat().replace("+00:00", "Z"))


def _proc_children() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as fh:
                stat = fh.read()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        children.setdefault(ppid, []).append(int(entry))
    return children


def _proc_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def tree_rss(pid: int) -> int:
    """Resident bytes of a process and all its descendants, now."""
    if psutil is not None:
        try:
            root = psutil.Process(pid)
            procs = [root, *root.children(recursive=True)]
        except psutil.Error:
            return 0
        total = 0
        for proc in procs:
            try:
                total += proc.memory_info().rss
            except psutil.Error:
                pass
        return total
    children, todo, total = _proc_children(), [pid], 0
    while todo:
        current = todo.pop()
        total += _proc_rss(current)
        todo.extend(children.get(current, []))
    return total


class TreePeak:
    """Polls a process tree's resident memory in a thread; `peak` is the largest sum seen."""

    def __init__(self, pid: int, every_s: float = 0.05):
        self.peak = 0
        self._pid, self._every = pid, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while not self._stop.wait(self._every):
            self.peak = max(self.peak, tree_rss(self._pid))

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def run_once(path: Path, out: Path, extra: list[str]) -> dict:
    """One audit in a subprocess: exit code, wall and CPU seconds, peaks (MB)."""
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    argv = [RT4CHART, "audit", str(path), "--out", str(out), *extra]
    started = time.monotonic()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    poll = TreePeak(proc.pid)
    stderr = proc.stderr.read() if proc.stderr else b""
    # wait4 gives this child's own rusage (not the maximum over every child waited for so far).
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    tree = poll.stop()
    return {"exit": proc.returncode, "wall_s": round(time.monotonic() - started, 1),
            "cpu_s": round(usage.ru_utime + usage.ru_stime, 1),
            "tree_peak_mb": round(tree / 2**20), "cli_peak_mb": round(usage.ru_maxrss / 1024),
            "stderr_tail": stderr.decode(errors="replace").strip().splitlines()[-5:]}


def answers_written(out: Path) -> int:
    from rt4chart.pipeline.results.summary import read_table

    return read_table(str(out), "answers").num_rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[671, 2684])
    ap.add_argument("--data", default=str(DATA))
    ap.add_argument("--json", help="write the figures here")
    args, extra = ap.parse_known_args()
    if "--judge" not in extra:
        extra = [*extra, "--judge", "offline"]
    rows: dict[int, dict] = {}
    print(f"{'traces':>7} {'exit':>4} {'answers':>7} {'tree peak MB':>12} {'CLI peak MB':>11} "
          f"{'wall s':>7} {'CPU s':>7}", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-batch-memory-") as tmp:
        for n in args.sizes:
            path = Path(tmp) / f"traces-{n}.jsonl"
            with open(path, "w") as fh:
                fh.writelines(json.dumps(t) + "\n" for t in traces(args.data, n))
            out = Path(tmp) / f"out-{n}"
            row = run_once(path, out, extra)
            row["answers"] = answers_written(out) if row["exit"] == 0 else 0
            rows[n] = row
            print(f"{n:>7,} {row['exit']:>4} {row['answers']:>7,} {row['tree_peak_mb']:>12,} "
                  f"{row['cli_peak_mb']:>11,} {row['wall_s']:>7} {row['cpu_s']:>7}", flush=True)
            if row["exit"] != 0:
                print("  " + "\n  ".join(row["stderr_tail"]), flush=True)
    small, large = min(rows), max(rows)
    ratio = {k: round(rows[large][k] / max(rows[small][k], 1), 3)
             for k in ("tree_peak_mb", "cli_peak_mb")}
    print(f"peak RSS (process tree): {rows[small]['tree_peak_mb']:,} MB for {small:,} traces, "
          f"{rows[large]['tree_peak_mb']:,} MB for {large:,} traces: "
          f"ratio {ratio['tree_peak_mb']} (x{large / small:g} traces)")
    print(f"peak RSS (CLI process, wait4): {rows[small]['cli_peak_mb']:,} MB, "
          f"{rows[large]['cli_peak_mb']:,} MB: ratio {ratio['cli_peak_mb']}")
    if args.json:
        Path(args.json).write_text(json.dumps({"extra_args": extra, "sizes": rows,
                                               "ratio_largest_to_smallest": ratio}, indent=2))


if __name__ == "__main__":
    main()
