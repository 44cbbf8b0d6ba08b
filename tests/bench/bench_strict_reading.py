"""Cost of the strict reading of inputs (issue 33), printed as figures (not a test).

    python tests/bench/bench_strict_reading.py [--records N]

Prints the time per record of `validate.load_json` (orjson plus the repeated-key check)
against `orjson.loads` alone, on the RAGTruth sample's records (prose contexts, structured
data-to-text contexts), and the time to split a file into lines (`textfiles.split_lines`,
CR LF, CR and LF each a break) against `bytes.splitlines`.
"""

from __future__ import annotations

import argparse
import io
import time
from pathlib import Path

import orjson

from rt4chart.pipeline.storage.text_files import split_lines
from rt4chart.transforms.validate import load_json

SAMPLE = Path(__file__).resolve().parents[1] / "data" / "ragtruth_sample.jsonl"


def _per_record(fn, records: list[bytes], repeat: int) -> float:
    start = time.perf_counter()
    for _ in range(repeat):
        for record in records:
            fn(record)
    return (time.perf_counter() - start) / (repeat * len(records))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=200)
    args = ap.parse_args()
    records = [line for line in SAMPLE.read_bytes().splitlines() if line.strip()]
    mean_kb = sum(map(len, records)) / len(records) / 1024
    plain = _per_record(orjson.loads, records, args.repeat)
    strict = _per_record(load_json, records, args.repeat)
    print(f"{len(records)} records of {mean_kb:.1f} KB on average")
    print(f"orjson.loads: {plain * 1e6:.1f} us/record; load_json (repeated-key check): "
          f"{strict * 1e6:.1f} us/record ({strict / plain:.2f}x)")
    data = b"\n".join(records * args.repeat) + b"\n"
    start = time.perf_counter()
    n = sum(1 for _ in split_lines(b"", io.BytesIO(data), b"\n"))
    ours = time.perf_counter() - start
    start = time.perf_counter()
    data.splitlines()
    theirs = time.perf_counter() - start
    print(f"split_lines: {len(data) / ours / 2**20:.0f} MB/s ({n} lines); bytes.splitlines: "
          f"{len(data) / theirs / 2**20:.0f} MB/s")


if __name__ == "__main__":
    main()
