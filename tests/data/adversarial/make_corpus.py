"""Writes the adversarial corpus: bad inputs of many kinds mixed with valid traces, in JSONL
(UTF-8, UTF-16, gzip) and Parquet files, with `expected.json` (what each record must become)
and `README.md` (the same as a table).

    python tests/data/adversarial/make_corpus.py

The output is deterministic (no clock, gzip without a timestamp); the generated files are
committed and checked by tests/integration/test_adversarial.py. Each record that must become a
dead letter carries a marker, a string that appears in its dead letter's `raw` and in no other
record, so that the test can tell which dead letter belongs to which record.
"""

from __future__ import annotations

import codecs
import gzip
import io
import json
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
SAMPLE = HERE.parent / "ragtruth_sample.jsonl"
EXAMPLES = HERE.parents[2] / "pipeline" / "examples" / "traces.jsonl"

AUDITED, DEAD, SKIPPED = "audited", "dead letter", "skipped"
CTX = ("The free trial lasts 14 days. Only new users are eligible. The trial covers all Pro "
       "features.")
OK = {"contexts": [CTX], "answer": "The free trial lasts 14 days."}
SCHEMA = "README ## Traces"


@dataclass
class Entry:
    """What one line (JSONL, from 1) or row (Parquet, from 0) of the corpus must become."""

    file: str
    line: int
    kind: str
    expected: str  # AUDITED, DEAD or SKIPPED
    why: str  # the schema rule that decides it
    trace_id: str | None = None  # AUDITED: the answer row's trace_id
    marker: str | None = None  # DEAD: a string only this record's dead letter's raw holds
    raw: str | None = None  # DEAD, for a line too short to hold a marker: its raw, exactly
    stage: str | None = None  # DEAD: the dead letter's stage
    reason: str | None = None  # DEAD: a fragment of the dead letter's reason
    not_label: str | None = None  # AUDITED: a label its answer must not get (issue 21)


@dataclass
class Corpus:
    entries: list[Entry] = field(default_factory=list)
    _n: int = 0

    def marker(self) -> str:
        self._n += 1
        return f"ADV-{self._n:03d}-"


def sample(trace_id: str, source: Path = SAMPLE) -> dict:
    for line in source.read_text(encoding="utf-8").splitlines():
        if line.strip() and json.loads(line)["trace_id"] == trace_id:
            return json.loads(line)
    raise KeyError(trace_id)


def nested(depth: int) -> list:
    value: list = []
    for _ in range(depth - 1):
        value = [value]
    return value


class JsonlFile:
    """Lines of one text file and their expectations."""

    def __init__(self, corpus: Corpus, name: str):
        self.corpus, self.name, self.lines = corpus, name, []

    def _add(self, line: str | bytes | dict, **entry) -> None:
        if isinstance(line, dict):
            line = json.dumps(line, ensure_ascii=False)
        self.lines.append(line)
        self.corpus.entries.append(Entry(self.name, len(self.lines), **entry))

    def valid(self, record: dict, kind: str, why: str, not_label: str | None = None) -> None:
        self._add(record, kind=kind, expected=AUDITED, why=why, trace_id=record["trace_id"],
                  not_label=not_label)

    def bad(self, kind: str, why: str, make, reason: str, stage: str = "validate") -> None:
        """A bad line: `make(marker)` gives it, holding the marker; or `make` is the line (its
        dead letter's raw, exactly)."""
        reason = reason.replace("{line}", str(len(self.lines) + 1))
        if isinstance(make, str):
            self._add(make, kind=kind, expected=DEAD, why=why, raw=make, stage=stage,
                      reason=reason)
            return
        marker = self.corpus.marker()
        self._add(make(marker), kind=kind, expected=DEAD, why=why, marker=marker, stage=stage,
                  reason=reason)

    def blank(self, line: str, kind: str) -> None:
        self._add(line, kind=kind, expected=SKIPPED, why="blank lines are not records")

    def encode(self, codec: str = "utf-8", newline: str | list[str] = "\n",
               bom: bytes = b"") -> bytes:
        """The file's bytes; `newline` ends every line, or is the list of each line's end."""
        ends = newline if isinstance(newline, list) else [newline] * len(self.lines)
        out = io.BytesIO()
        out.write(bom)
        for line, end in zip(self.lines, ends, strict=True):
            data = line if isinstance(line, bytes) else line.encode(codec)
            out.write(data + end.encode(codec))
        return out.getvalue()


def t(marker: str, **fields) -> dict:
    """A trace valid but for `fields`, with the marker as its trace_id."""
    return {"trace_id": marker, **OK, **fields}


def q(marker: str, **fields) -> dict:
    """A trace valid but for `fields`, with the marker in its question (its trace_id may be
    what is wrong)."""
    return {"question": marker, **OK, **fields}


def j(text: str):
    """A raw line (not made by json.dumps): `{m}` is the marker."""
    return lambda m: text.replace("{m}", m)


def mixed(corpus: Corpus) -> JsonlFile:
    """UTF-8, LF: most kinds, with valid traces among them."""
    f = JsonlFile(corpus, "mixed.jsonl")
    f.valid(sample("ragtruth-14513"), "valid RAGTruth QA trace", SCHEMA)
    for group in (_timestamps, _numbers_and_depth, _field_limits, _text, _contexts, _shapes,
                  _work_limits, _evidence_is_the_documents):
        group(f)
    return f


def _timestamps(f: JsonlFile) -> None:
    """Event times at and beyond the edges."""
    f.bad("timestamp year 1 with +01:00 (year 0 in UTC)", "event times must lie in 0001-9999 "
          "UTC", lambda m: t(m, timestamp="0001-01-01T00:00:00+01:00"), "is out of range")
    f.bad("timestamp 9999-12-31 with -14:00 (year 10000 in UTC)", "event times must lie in "
          "0001-9999 UTC", lambda m: t(m, timestamp="9999-12-31T23:59:59-14:00"),
          "is out of range")
    f.valid({**OK, "trace_id": "adv-ts-first", "timestamp": "0001-01-01T00:00:00Z"},
            "timestamp at the first representable instant", "within 0001-9999 UTC")
    f.valid({**OK, "trace_id": "adv-ts-last", "timestamp": "9999-12-31T23:59:59Z"},
            "timestamp at the last second of 9999", "within 0001-9999 UTC")
    f.valid({**OK, "trace_id": "adv-ts-nozone", "timestamp": "2024-05-01T09:30:00"},
            "timestamp without zone", "a timestamp without zone is UTC")
    f.valid({**OK, "trace_id": "adv-ts-leap", "timestamp": "2016-12-31T23:59:60Z"},
            "leap second (23:59:60)", "RFC 3339 allows second 60; read as the next second")
    f.bad("unparseable timestamp", "timestamp must be RFC 3339",
          lambda m: t(m, timestamp="yesterday"), "timestamp 'yesterday' is not RFC 3339")
    f.bad("impossible date (Feb 30)", "timestamp must be RFC 3339",
          lambda m: t(m, timestamp="2024-02-30T10:00:00Z"), "is not RFC 3339")
    f.bad("timestamp as epoch seconds (number)", "timestamp must be RFC 3339 text",
          lambda m: t(m, timestamp=1714550000), "timestamp must be RFC 3339 text, got int")
    f.blank("", "blank line")


def _numbers_and_depth(f: JsonlFile) -> None:
    """Bytes, numbers and nesting JSON readers trip on."""
    f.bad("invalid UTF-8 byte (Latin-1 e-acute)", "a line must be valid text in the file's "
          "encoding", lambda m: json.dumps(t(m, answer="Caf\u00e9")).encode().replace(
              b"\\u00e9", b"\xe9"), "mixed.jsonl line {line}: not valid UTF-8", stage="read")
    f.bad("NaN in metadata", "JSON has no NaN",
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a", "metadata": {"s": NaN}}'),
          "NaN: JSON numbers must be finite")
    f.bad("-Infinity in metadata", "JSON has no Infinity",
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a", "metadata": {"s": '
            '-Infinity}}'), "-Infinity: JSON numbers must be finite")
    f.bad("number overflowing a double (1e400)", "numbers must be finite",
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a", "metadata": {"s": 1e400}}'),
          "number is infinity")
    f.bad("depth bomb (10,000 nested arrays)", "the JSON reader's depth limit",
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a", "metadata": '
            + "[" * 10_000 + "]" * 10_000 + "}"), "not valid JSON: depth limit exceeded")
    f.bad("structured context nested 50 deep", "structured contexts at most 32 levels deep",
          lambda m: t(m, contexts=[{"text": nested(50)}]), "nested deeper than 32 levels")


def _field_limits(f: JsonlFile) -> None:
    """Fields over their limits, and metadata of odd types."""
    f.bad("huge trace_id (10,000 characters)", "trace_id at most 256 characters",
          lambda m: t(m + "x" * 10_000), "'trace_id' is 10008 characters long")
    f.bad("trace_id a 30-digit number", "trace_id must be a string",
          lambda m: q(m, trace_id=123456789012345678901234567890),
          "field 'trace_id' must be a string, got int")
    f.bad("huge route (1,000 characters)", "route at most 256 characters",
          lambda m: t(m, route="r" * 1000), "'route' is 1000 characters long")
    f.bad("huge doc_id (300 characters)", "doc_id at most 256 characters",
          lambda m: t(m, contexts=[{"doc_id": "d" * 300, "text": CTX}]),
          "contexts[0].doc_id is 300 characters long")
    f.bad("metadata with 65 entries", "metadata at most 64 entries",
          lambda m: t(m, metadata={f"k{i}": "v" for i in range(65)}), "65 entries")
    f.bad("metadata value of 2,000 characters", "metadata entries at most 1024 characters",
          lambda m: t(m, metadata={"k": "v" * 2000}), "metadata 'k' is 2000 characters long")
    f.valid({**OK, "trace_id": "adv-meta-numbers",
             "metadata": {"n": 3, "x": 0.25, "ok": True, "none": None}},
            "metadata with number, bool and null values", "numbers are written as text")
    f.valid({**OK, "trace_id": "adv-meta-bigint",
             "metadata": {"order": 123456789012345678901234567890}},
            "metadata with a 30-digit integer", "kept exactly as text (not rounded to a double)")
    f.bad("metadata value a nested object", "metadata is a map string -> string",
          lambda m: t(m, metadata={"k": {"nested": 1}}),
          "metadata 'k' must be a string or a number, got dict")
    f.bad("metadata a list of 2-character strings", "metadata is a map",
          lambda m: t(m, metadata=["ab", "cd"]), "'metadata' must be a map")
    f.bad("structured context with a 30-digit integer", "integers in structured contexts "
          "within 64 bits (no silent rounding)",
          lambda m: t(m, contexts=[{"text": {"order": 123456789012345678901234567890}}]),
          "integer beyond 64 bits")


def _text(f: JsonlFile) -> None:
    """Text that looks bad but is valid, and text that is not."""
    f.valid({**OK, "trace_id": "adv-dup-1", "timestamp": "2024-05-01T00:00:00Z"},
            "trace_id repeated in more.jsonl.gz (this copy is earlier)",
            "a trace_id seen twice is audited once: the earliest")
    f.valid({"trace_id": "adv-ctl-escaped", "contexts": ["Bell \u0007 and \u001b[31mred\u001b"
             "[0m. " + CTX], "answer": "The free trial lasts 14 days.\u0007"},
            "control characters (escaped in JSON)", "valid JSON strings, valid text")
    f.bad("raw control character inside a JSON string", "JSON strings cannot hold raw "
          "control characters", j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a\x07b"}'),
          "unexpected control character")
    f.valid({"trace_id": "adv-zw-rtl", "question": "\u200fما مدة التجربة؟",
             "contexts": ["The free\u200b trial lasts 14 days.\u200d \u202eשלום\u202c עולם."],
             "answer": "The free\u200b trial lasts 14 days. \u05d4\u05e0\u05e1\u05d9\u05d5\u05df."},
            "zero-width and right-to-left text", "valid text")
    f.valid({"trace_id": "adv-nul-escaped", "contexts": [CTX],
             "answer": "The free trial lasts 14 days.\u0000"},
            "NUL character (escaped in JSON)", "a valid JSON string, valid text")
    f.bad("raw NUL byte inside a JSON string", "JSON strings cannot hold raw control "
          "characters", j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a\x00b"}'),
          "unexpected control character")
    f.bad("lone surrogate escape (\\ud800)", "text must be valid Unicode",
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "x \\ud800 y"}'),
          "surrogate")
    f.valid({"trace_id": "adv-empty-answer", "contexts": [CTX], "answer": ""},
            "empty answer", "answer may be empty: no claims, ENT")
    f.valid({"trace_id": "adv-ws-answer", "contexts": [CTX], "answer": "  \n\t "},
            "whitespace-only answer", "no sentences: no claims, ENT")
    f.valid({"trace_id": "adv-zw-context", "contexts": ["\u200b\u200b", CTX],
             "answer": "The free trial lasts 14 days."},
            "a context of zero-width spaces only, beside a real one", "valid text (U+200B is "
            "not whitespace)")


def _contexts(f: JsonlFile) -> None:
    """Contexts: empty, odd, colliding doc_ids."""
    f.bad("whitespace-only contexts", "contexts must hold text",
          lambda m: t(m, contexts=["   ", "\n\t"]), "contexts contain no text")
    f.valid(t("adv-empty-retrieval", contexts=[]), "contexts an empty list (nothing "
            "retrieved)", "an empty retrieval is audited: its claims are NIC", not_label="ENT")
    f.bad("contexts missing", "contexts required",
          lambda m: {"trace_id": m, "answer": "a"}, "'contexts' must be a list")
    f.bad("contexts an object, not a list", "contexts is a list",
          lambda m: t(m, contexts={"doc_id": "a", "text": CTX}),
          "'contexts' must be a list")
    f.bad("contexts item null", "contexts are strings or {doc_id, text}",
          lambda m: t(m, contexts=[None]), "contexts[0] must be a string or an object")
    f.bad("context object without text", "a context object has text",
          lambda m: t(m, contexts=[{"doc_id": "a"}]), "contexts[0].text must be a string")
    f.bad("doc_id collision (same doc_id twice)", "doc_ids are unique",
          lambda m: t(m, contexts=[{"doc_id": "a", "text": CTX}, {"doc_id": "a", "text": "B."}]),
          "duplicate doc_id 'a'")
    f.bad("doc_id collision with a default doc_id", "doc_ids default to doc0, doc1, ...",
          lambda m: t(m, contexts=[{"text": CTX}, {"doc_id": "doc0", "text": "B."}]),
          "duplicate doc_id 'doc0'")
    f.bad("doc_id collision of 1 and \"1\"", "integer doc_ids are written as text",
          lambda m: t(m, contexts=[{"doc_id": 1, "text": CTX}, {"doc_id": "1", "text": "B."}]),
          "duplicate doc_id '1'")


def _shapes(f: JsonlFile) -> None:
    """Missing fields, wrong types, and lines that are not one trace."""
    f.bad("answer missing", "answer required", lambda m: {"trace_id": m, "contexts": [CTX]},
          "missing required field 'answer'")
    f.bad("trace_id missing", "trace_id required", lambda m: {"question": m, **OK},
          "missing required field 'trace_id'")
    f.bad("trace_id empty", "trace_id required", lambda m: q(m, trace_id=""),
          "'trace_id' is empty")
    f.bad("trace_id whitespace only", "trace_id required", lambda m: q(m, trace_id=" \t "),
          "'trace_id' is empty")
    f.valid({**OK, "trace_id": "adv-route-empty", "route": ""}, "route empty",
            "route defaults to \"default\"")
    f.bad("answer a number", "answer is a string", lambda m: t(m, answer=42),
          "field 'answer' must be a string, got int")
    f.bad("question a list", "question is a string", lambda m: t(m, question=["a", "b"]),
          "field 'question' must be a string, got list")
    f.bad("JSON array instead of an object", "a trace is a JSON object",
          lambda m: json.dumps([t(m)]), "a trace must be a JSON object, got list")
    f.bad("bare string line", "a trace is a JSON object", lambda m: json.dumps(m),
          "a trace must be a JSON object, got str")
    f.bad("bare number line", "a trace is a JSON object", "31415926535897932384626433",
          "a trace must be a JSON object, got int")
    f.bad("null line", "a trace is a JSON object", "null",
          "a trace must be a JSON object, got NoneType")
    f.valid({**OK, "trace_id": "adv-bom-mid"}, "UTF-8 byte order mark mid-file (files "
            "concatenated)", "RFC 8259: a parser may ignore a BOM; it is not part of the text")
    f.lines[-1] = "\ufeff" + f.lines[-1]
    f.blank(" \t ", "whitespace-only line")
    f.bad("two JSON objects on one line", "one trace per line",
          lambda m: json.dumps(t(m)) + json.dumps(t(m + "b")), "unexpected content after document")
    f.bad("line cut mid-record", "one whole JSON object per line",
          lambda m: json.dumps(t(m))[:40], "unexpected end of data")


def _work_limits(f: JsonlFile) -> None:
    """Traces over the work limits, and valid traces to finish."""
    f.bad("answer over the sentence limit (260 sentences)", "max_answer_sentences=250",
          lambda m: t(m, answer="The trial is free. " * 260),
          "over limit max_answer_sentences=250", stage="segment")
    f.bad("context of 6,000 sentences on one line", "max_context_sentences=5000",
          lambda m: t(m, contexts=["The cat sat. " * 6000]),
          "over limit max_context_sentences=5000", stage="segment")
    f.valid(sample("ragtruth-8673"), "structured context (JSON record, data-to-text)", SCHEMA)
    f.valid(sample("paper-running-example", EXAMPLES), "the paper's running example", SCHEMA)
    f.valid(sample("ragtruth-13155"), "valid RAGTruth QA trace", SCHEMA)


# Issue 21, defect 1: a number only in rt4chart's own text (a document header's "Document 3",
# a doc id) or in the question is not evidence. Each answer states a number no document
# states: audited, and never ENT.
EVIDENCE = "README ## What it does, step 5 (evidence is only what the documents say)"
FIVE_DOCS = ["Shipping is free.", "Returns take a week.", "The free trial lasts 14 days.",
             "Support is open.", "Refunds go to the card."]


def _evidence_is_the_documents(f: JsonlFile) -> None:
    trial = "The free trial lasts 14 days."
    cases = [
        ("number of a document header", FIVE_DOCS, "How long is the trial?",
         "The free trial lasts 3 days."),
        ("number of a document header (6 documents)", [*FIVE_DOCS, "Open daily."],
         "How long is the trial?", "The free trial lasts 6 days."),
        ("number in a doc id", [{"doc_id": "kb-30", "text": trial}], "How long is the trial?",
         "The free trial lasts 30 days."),
        ("amount in a doc id", [{"doc_id": "price-$49", "text": "The plan costs $29 a month."}],
         "What does it cost?", "The plan costs $49 a month."),
        ("doc id with a line break and a number", [{"doc_id": "kb\n30 days", "text": trial}],
         "How long is the trial?", "The free trial lasts 30 days."),
        ("number in the question", [trial], "Is the free trial 30 days?",
         "The free trial lasts 30 days."),
    ]
    for i, (kind, contexts, question, answer) in enumerate(cases):
        f.valid({"trace_id": f"evidence-{i}", "question": question, "contexts": contexts,
                 "answer": answer}, kind, EVIDENCE, not_label="ENT")


def more_gz(corpus: Corpus) -> JsonlFile:
    """Gzipped, a UTF-8 BOM at its start, CRLF line ends."""
    f = JsonlFile(corpus, "more.jsonl.gz")
    f.valid(sample("ragtruth-14999"), "valid trace after a UTF-8 BOM, CRLF line ends (gzip)",
            "a BOM at the start of a file is honoured")
    f.bad("trace_id repeated across files (the later copy)", "a trace_id seen twice is audited "
          "once", lambda m: {**OK, "trace_id": "adv-dup-1", "question": m,
                             "timestamp": "2024-06-01T00:00:00Z"},
          "duplicate trace_id", stage="dedupe")
    f.bad("extremely long line (1.1 million characters of context)", "max_context_chars="
          "1000000", lambda m: t(m, contexts=["All work and no play. " * 50_000]),
          "over limit max_context_chars=1000000", stage="segment")
    f.valid(sample("ragtruth-2250"), "valid RAGTruth summary trace (empty question)", "question "
            "may be empty")
    f.bad("answer null", "answer required", lambda m: t(m, answer=None),
          "missing required field 'answer'")
    return f


def utf16(corpus: Corpus) -> JsonlFile:
    """UTF-16 little-endian with a BOM, CRLF line ends."""
    f = JsonlFile(corpus, "utf16.jsonl")
    f.valid(sample("ragtruth-2139"), "UTF-16 LE file with BOM", "UTF-16 BOMs are honoured")
    f.valid({**OK, "trace_id": "adv-utf16-astral", "answer": "The free trial lasts 14 days "
             "\U0001f600 \U0001d518."}, "characters beyond the BMP (surrogate pairs in UTF-16)",
            "valid text")
    f.bad("unparseable timestamp in a UTF-16 file", "timestamp must be RFC 3339",
          lambda m: t(m, timestamp="2024-13-45"), "is not RFC 3339")
    return f


def utf16be(corpus: Corpus) -> JsonlFile:
    """UTF-16 big-endian without a BOM (told by the zero byte of its first character)."""
    f = JsonlFile(corpus, "utf16be.jsonl")
    f.valid({**OK, "trace_id": "adv-utf16be"}, "UTF-16 BE file without BOM",
            "JSON text starts with ASCII: RFC 4627's detection")
    return f


def csv_lines(corpus: Corpus) -> JsonlFile:
    f = JsonlFile(corpus, "csv_as_jsonl.jsonl")
    f.bad("CSV given as JSONL: header line", "one JSON object per line",
          "trace_id,question,contexts,answer", "not valid JSON")
    f.bad("CSV given as JSONL: a row", "one JSON object per line",
          lambda m: f"{m},How long is the trial?,{CTX},The trial lasts 14 days.",
          "not valid JSON")
    f.bad("CSV given as JSONL: a row starting with a quoted field", "one JSON object per line",
          lambda m: f'"{m}","How long is the trial?","{CTX}","14 days."',
          "unexpected content after document")
    return f


class ParquetFile:
    """Rows of one Parquet file (one schema for all) and their expectations."""

    def __init__(self, corpus: Corpus, name: str, schema: pa.Schema):
        self.corpus, self.name, self.schema, self.rows = corpus, name, schema, []

    def _add(self, row: dict, **entry) -> None:
        self.rows.append(row)
        self.corpus.entries.append(Entry(self.name, len(self.rows) - 1, **entry))

    def valid(self, row: dict, kind: str, why: str) -> None:
        self._add(row, kind=kind, expected=AUDITED, why=why, trace_id=row["trace_id"])

    def bad(self, kind: str, why: str, make, reason: str, stage: str = "validate") -> None:
        marker = self.corpus.marker()
        self._add(make(marker), kind=kind, expected=DEAD, why=why, marker=marker, stage=stage,
                  reason=reason.replace("{row}", str(len(self.rows))))

    def encode(self) -> bytes:
        out = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(self.rows, schema=self.schema), out)
        return out.getvalue()


DOCS = pa.list_(pa.struct([("doc_id", pa.string()), ("text", pa.string())]))
TRACES = pa.schema([
    ("trace_id", pa.string()), ("route", pa.string()),
    ("timestamp", pa.timestamp("us", tz="UTC")), ("question", pa.string()),
    ("contexts", DOCS), ("answer", pa.string()), ("metadata", pa.map_(pa.string(), pa.float64())),
])
WHEN = datetime(2024, 5, 1, 12, tzinfo=UTC)
YEAR_20000_US = 568_971_820_800 * 10**6  # microseconds since the epoch, past datetime's range


def row(record: dict, **fields) -> dict:
    """A JSONL record as a row of TRACES (its timestamp and metadata are those in `fields`)."""
    values = {**record, **fields}
    contexts = [c if isinstance(c, dict) else {"doc_id": None, "text": c}
                for c in values["contexts"]]
    return {
        "trace_id": values.get("trace_id"), "route": values.get("route"),
        "timestamp": fields.get("timestamp", WHEN), "question": values.get("question", ""),
        "contexts": contexts, "answer": values.get("answer"), "metadata": fields.get("metadata"),
    }


def parquet_traces(corpus: Corpus) -> ParquetFile:
    f = ParquetFile(corpus, "traces.parquet", TRACES)
    rec = sample("ragtruth-6905")
    f.valid(row(rec, timestamp=WHEN, metadata=[("score", 0.5)]),
            "valid Parquet row (nested contexts, timestamp type, numeric map)", "Parquet rows "
            "are traces; numbers in metadata are written as text")
    f.bad("trace_id repeated across files (JSONL and Parquet; the later copy)", "a trace_id "
          "seen twice is audited once", lambda m: row(sample("ragtruth-14513"), question=m,
                                                      timestamp=datetime(2024, 6, 1, tzinfo=UTC)),
          "duplicate trace_id", stage="dedupe")
    f.bad("NaN in a Parquet metadata map", "numbers must be finite",
          lambda m: row(OK, trace_id=m, contexts=[{"doc_id": "a", "text": CTX}],
                        metadata=[("score", float("nan"))]), "nan: numbers must be finite")
    f.valid(row(OK, trace_id="adv-empty-retrieval-parquet", contexts=[]),
            "contexts an empty list (Parquet: nothing retrieved)",
            "an empty retrieval is audited: its claims are NIC")
    f.bad("Parquet timestamp in year 20000", "event times must lie in 0001-9999",
          lambda m: row(OK, trace_id=m, contexts=[{"doc_id": "a", "text": CTX}],
                        timestamp=YEAR_20000_US),
          "traces.parquet row group 0 row {row}: unreadable value, column 'timestamp'",
          stage="read")
    f.bad("context with null text (Parquet)", "a context has text",
          lambda m: row(OK, trace_id=m, contexts=[{"doc_id": "a", "text": None}]),
          "contexts[0].text must be a string")
    f.bad("trace_id null (Parquet)", "trace_id required",
          lambda m: row(OK, question=m, contexts=[{"doc_id": "a", "text": CTX}]),
          "missing required field 'trace_id'")
    f.valid(row(sample("ragtruth-13910"), timestamp=datetime(2024, 5, 3, 12, tzinfo=UTC)),
            "valid Parquet row", "Parquet rows are traces")
    return f


def wrong_types(corpus: Corpus) -> list[ParquetFile]:
    ids = ParquetFile(corpus, "wrong_id_type.parquet", pa.schema([
        ("trace_id", pa.int64()), ("question", pa.string()), ("contexts", pa.list_(pa.string())),
        ("answer", pa.string())]))
    for n in (9_100_001, 9_100_002):
        ids.bad("Parquet trace_id column of int64", "trace_id is a string",
                lambda m, n=n: {"trace_id": n, "question": m, "contexts": [CTX], "answer": "a"},
                "field 'trace_id' must be a string, got int")
    ctx = ParquetFile(corpus, "wrong_contexts_type.parquet", pa.schema([
        ("trace_id", pa.string()), ("contexts", pa.string()), ("answer", pa.string())]))
    ctx.bad("Parquet contexts column of strings", "contexts is a list",
            lambda m: {"trace_id": m, "contexts": CTX, "answer": "a"},
            "'contexts' must be a list")
    return [ids, ctx]


# --- Sources (issue 21, item 9): timestamps as exactly RFC 3339, Parquet nanoseconds ---------
SOURCES_TS_VALID = [  # (trace_id, timestamp, kind, why)
    ("adv-ts-lower", "2024-05-01t09:30:00z", "timestamp with lower-case t and z",
     "RFC 3339 5.6: T and Z may be lower case"),
    ("adv-ts-space", "2024-05-01 09:30:00+02:00", "timestamp with a space for the T",
     "RFC 3339 5.6, note: a space for readability"),
    ("adv-ts-nanos", "2024-05-01T09:30:00.123456789Z", "timestamp with nanoseconds",
     "any number of fraction digits; the event time keeps microseconds"),
]
SOURCES_TS_BAD = [  # (timestamp, kind)
    ("2024-W18-3", "ISO 8601 week date"),
    ("2024-05-01", "a date without a time"),
    ("2024-122", "ISO 8601 ordinal date"),
    ("20240501T093000Z", "ISO 8601 basic format"),
    ("2024-05-01T09:30Z", "time without seconds"),
    ("2024-05-01T09:30:00+0200", "offset without its colon"),
    ("2024-05-01T09:30:00,5Z", "decimal comma"),
]
NS_TRACES = pa.schema([("trace_id", pa.string()), ("timestamp", pa.timestamp("ns", tz="UTC")),
                       ("contexts", pa.list_(pa.string())), ("answer", pa.string())])


def sources_timestamps(corpus: Corpus) -> JsonlFile:
    """Timestamps RFC 3339 allows (lower case, a space, nanoseconds) and ISO 8601 forms it
    does not (week and ordinal dates, bare dates, basic format)."""
    f = JsonlFile(corpus, "rfc3339.jsonl")
    for trace_id, stamp, kind, why in SOURCES_TS_VALID:
        f.valid({**OK, "trace_id": trace_id, "timestamp": stamp}, kind, why)
    for stamp, kind in SOURCES_TS_BAD:
        f.bad(f"timestamp as {kind}", "timestamp must be RFC 3339 (section 5.6 date-time)",
              lambda m, stamp=stamp: t(m, timestamp=stamp), f"{stamp!r} is not RFC 3339")
    return f


def sources_nanoseconds(corpus: Corpus) -> ParquetFile:
    """Parquet timestamp[ns] values with nanoseconds, read without pandas."""
    f = ParquetFile(corpus, "nanoseconds.parquet", NS_TRACES)
    for i, ns in enumerate((1_714_555_800_123_456_789, 1_714_555_800_000_000_001)):
        f.valid({"trace_id": f"adv-ns-{i}", "timestamp": ns, "contexts": [CTX],
                 "answer": OK["answer"]}, "Parquet timestamp[ns] with nanoseconds",
                "nanoseconds are read as RFC 3339 text; the event time keeps microseconds")
    return f


README_HEAD = """\
# The adversarial corpus

Bad inputs of many kinds, mixed with valid traces, across JSONL (UTF-8, UTF-8 with BOM and CRLF
in gzip, UTF-16 LE with BOM, UTF-16 BE without BOM) and Parquet files.
`tests/integration/test_adversarial.py` audits them all in one run of the `rt4chart` console
script and checks that every record is what the table says: an answer row (audited), exactly
one dead letter whose stage is the one given and whose reason holds the fragment given, or
nothing (a blank line). The table is written from `expected.json`, the manifest the test reads;
both, and the data files, are written by `make_corpus.py` (run it after editing the cases and
commit what it writes).

Each record is classified by the trace schema (README.md, "## Traces") and by what
`transforms/validate.py`, `transforms/common/fields.py` and `transforms/common/limits.py` enforce.
Some
inputs that look bad are valid: an empty answer (no claims, ENT), zero-width or right-to-left
text, escaped control characters, numbers in metadata, a timestamp without zone (UTC).

Run-level cases, audited in runs of their own: `truncated.jsonl.gz` (20 valid traces, the
gzip stream cut at 60% of its bytes) must stop the run with exit 1 and its name, or, with
`--allow-partial-input`, give the answers of the lines read and one dead letter (stage "read")
saying how far it was read; `csv_as_jsonl.jsonl` alone (no valid record) must exit 1.

"line" is the line number from 1 for JSONL files and the row index from 0 for Parquet files.
A dead letter is matched to its record by a marker (`ADV-nnn-`) the record holds, or, for a
line too short to hold one, by its whole text.

| file | line | kind | expected | stage | reason holds | why |
|---|---|---|---|---|---|---|
"""


def truncated() -> tuple[bytes, int]:
    """A .jsonl.gz of valid traces cut at 60% of its bytes, and how many traces it had."""
    records = [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines()
               if line.strip()][:20]
    data = gzip.compress("".join(json.dumps(r) + "\n" for r in records).encode(), mtime=0)
    return data[: len(data) * 6 // 10], len(records)


def readme_table(entries: list[Entry]) -> str:
    def cell(text: str | None) -> str:
        return (text or "").replace("|", "\\|")

    lines = []
    for e in entries:
        expected = e.expected + (f" `{e.trace_id}`" if e.trace_id else "")
        reason = f"`{cell(e.reason)}`" if e.reason else ""
        lines.append(f"| {e.file} | {e.line} | {cell(e.kind)} | {cell(expected)} | "
                     f"{e.stage or ''} | {reason} | {cell(e.why)} |")
    return "\n".join(lines) + "\n"


# -- issue 21, input reading (wt-input): CR-only line ends, a .zst file, the question limit ----

def input_reading(corpus: Corpus) -> list[tuple[str, JsonlFile, str]]:
    """Files of issue 21's input kinds, each (name, lines, how it is encoded): CR-only line
    ends (old Mac files: once 5 records made one dead letter) and a Zstandard file; a question
    over its 20,000-character field limit."""
    cr = JsonlFile(corpus, "cr_only.jsonl")
    for i in range(3):
        cr.valid({**OK, "trace_id": f"adv-cr-{i}"}, "CR-only line ends (old Mac file)",
                 "CR alone is a line break")
    cr.bad("question of 30,000 characters", "question at most 20,000 characters",
           lambda m: q(m + "q" * 30_000, trace_id="adv-long-question"),
           "field 'question' is 30008 characters long; the limit is 20000")
    zst = JsonlFile(corpus, "more.jsonl.zst")
    zst.valid({**OK, "trace_id": "adv-zst"}, "Zstandard-compressed file",
              "read through a decompressor that notices truncation")
    return [("cr_only.jsonl", cr, "cr"), ("more.jsonl.zst", zst, "zst")]


def _encode_input_reading(f: JsonlFile, how: str) -> bytes:
    if how == "cr":
        return f.encode(newline="\r")
    import zstandard

    return zstandard.ZstdCompressor().compress(f.encode())


# -- issue 33, defects 4 to 6: ambiguous records refused, mixed line ends, ids byte for byte --

AMBIGUOUS = "a record that repeats a key is ambiguous (JSON readers disagree on which counts)"
REPEATED = "appears more than once"


def ambiguous(corpus: Corpus) -> JsonlFile:
    """Records that repeat a key, at the top or deeper (refused, whichever copy would be read),
    one with colons everywhere that repeats none, and trace ids that differ only in white
    space (three traces, each audited; a later copy's dead letter holds it as received)."""
    f = JsonlFile(corpus, "ambiguous.jsonl")
    f.bad("two answer keys (the last one true to the context)", AMBIGUOUS,
          j('{"trace_id": "{m}", "contexts": ["The free trial lasts 14 days."], '
            '"answer": "The free trial lasts 30 days.", '
            '"answer": "The free trial lasts 14 days."}'), f"key 'answer' of the record {REPEATED}")
    f.bad("two contexts keys", AMBIGUOUS,
          j('{"trace_id": "{m}", "contexts": ["The trial lasts 30 days."], "contexts": '
            '["The trial lasts 14 days."], "answer": "The trial lasts 14 days."}'),
          f"key 'contexts' of the record {REPEATED}")
    f.bad("two trace_id keys", AMBIGUOUS,
          j('{"trace_id": "{m}one", "trace_id": "{m}two", "contexts": ["c."], "answer": "a"}'),
          f"key 'trace_id' of the record {REPEATED}")
    f.bad("a context object with two text keys", AMBIGUOUS,
          j('{"trace_id": "{m}", "contexts": [{"doc_id": "a", "text": "It lasts 30 days.", '
            '"text": "It lasts 14 days."}], "answer": "It lasts 14 days."}'),
          f"key 'text' of contexts[0] {REPEATED}")
    f.bad("metadata repeating a key", AMBIGUOUS,
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a", '
            '"metadata": {"tier": "free", "tier": "pro"}}'),
          f"key 'tier' of metadata {REPEATED}")
    f.bad("a key repeated in another spelling (\\u0061nswer)", AMBIGUOUS,
          j('{"trace_id": "{m}", "contexts": ["c."], "answer": "a", "\\u0061nswer": "b"}'),
          f"key 'answer' of the record {REPEATED}")
    f.bad("a structured context repeating a key deep inside", AMBIGUOUS,
          j('{"trace_id": "{m}", "contexts": [{"text": {"plan": {"days": 30, "days": 14}}}], '
            '"answer": "The plan lasts 14 days."}'), f"key 'days' of contexts[0].text.plan "
          f"{REPEATED}")
    f.valid({"trace_id": "adv-colons:1", "question": "At 9:30: open?", "contexts": [
        {"doc_id": "a:b", "text": "The shop opens at 9:30: daily."}],
        "answer": "The shop opens at 9:30.", "metadata": {"k:": ":"}},
        "colons in ids, keys and text (no key repeated)", "colons are not keys")
    f.lines[-1] = f.lines[-1].replace('"The shop opens at 9:30: daily."',
                                      '"The shop opens at 9\\u003a30: daily."')
    for tid, answer in (("adv-F22", "The free trial lasts 14 days."),
                        (" adv-F22", "Only new users are eligible."),
                        ("adv-F22\t", "The trial covers all Pro features.")):
        f.valid({**OK, "trace_id": tid, "answer": answer, "timestamp": "2024-05-01T00:00:00Z"},
                "trace ids differing only in white space", "ids are kept byte for byte")
    f.bad("a later copy of ' adv-F22' (its dead letter holds it as received)", "a trace_id "
          "seen twice is audited once; raw is the record as received",
          '{ "answer":"Only new users are eligible.",  "trace_id":" adv-F22", "contexts":'
          '["' + CTX + '"], "timestamp":"2024-06-01T00:00:00Z"}', "duplicate trace_id",
          stage="dedupe")
    return f


def line_ends(corpus: Corpus) -> list[tuple[JsonlFile, list[str]]]:
    """Files mixing line ends, each with its lines' ends: CR then LF (once 1 answer and 1 dead
    letter of 4 traces), LF then CR (3 traces in one dead letter), and CR LF among them."""
    out = []
    for name, ends in (("cr_then_lf.jsonl", ["\r", "\n", "\n", "\n", "\n"]),
                       ("lf_then_cr.jsonl", ["\n", "\r", "\r", "\r\n", "\r"])):
        f = JsonlFile(corpus, name)
        for i in range(len(ends)):
            f.valid({**OK, "trace_id": f"adv-{name.split('.')[0]}-{i}"},
                    f"line ends mixed ({'-'.join(repr(e)[1:-1] for e in ends)})",
                    "CR, LF and CR LF each end a line, mixed or not")
        out.append((f, ends))
    return out


def repeated_columns(corpus: Corpus) -> dict[str, bytes]:
    """Parquet files repeating a column name (two `answer` columns) or a field name inside a
    column (a context struct with two `text` fields): every row a dead letter."""
    names = ["trace_id", "contexts", "answer", "answer"]
    entries, tables = [], {}
    ids = []
    for kind, value in (("two answer columns (the last true)", "The free trial lasts 30 days."),
                        ("two answer columns (the first true)", "The free trial lasts 14 days.")):
        marker = corpus.marker()
        ids.append(marker)
        entries.append(("repeated_columns.parquet", kind, marker, "column 'answer'", value))
    tables["repeated_columns.parquet"] = pa.Table.from_arrays([
        pa.array(ids), pa.array([[CTX], [CTX]]),
        pa.array([e[4] for e in entries]),
        pa.array([OK["answer"] if e[4] != OK["answer"] else "The trial lasts 30 days."
                  for e in entries])], names=names)
    marker = corpus.marker()
    docs = pa.StructArray.from_arrays(
        [pa.array(["a"]), pa.array(["It lasts 30 days."]), pa.array(["It lasts 14 days."])],
        names=["doc_id", "text", "text"])
    tables["repeated_fields.parquet"] = pa.Table.from_arrays(
        [pa.array([marker]), pa.ListArray.from_arrays([0, 1], docs),
         pa.array(["It lasts 14 days."])], names=["trace_id", "contexts", "answer"])
    entries.append(("repeated_fields.parquet", "a context struct with two text fields", marker,
                    "field 'text' of column 'contexts'", None))
    for row, (file, kind, marker, what, _) in enumerate(entries):
        corpus.entries.append(Entry(
            file, row if file == "repeated_columns.parquet" else 0, kind, DEAD,
            "a repeated column or field name is ambiguous", marker=marker, stage="read",
            reason=f"{what} {REPEATED}"))
    out = {}
    for name, table in tables.items():
        buf = io.BytesIO()
        pq.write_table(table, buf)
        out[name] = buf.getvalue()
    return out


def main() -> None:
    corpus = Corpus()
    text = [mixed(corpus), more_gz(corpus), utf16(corpus), utf16be(corpus), csv_lines(corpus)]
    tables = [parquet_traces(corpus), *wrong_types(corpus)]
    sources = [sources_timestamps(corpus), sources_nanoseconds(corpus)]  # issue 21, item 9
    files = {
        "mixed.jsonl": text[0].encode(),
        "more.jsonl.gz": gzip.compress(text[1].encode(newline="\r\n", bom=codecs.BOM_UTF8),
                                       mtime=0),
        "utf16.jsonl": text[2].encode("utf-16-le", "\r\n", codecs.BOM_UTF16_LE),
        "utf16be.jsonl": text[3].encode("utf-16-be"),
        "csv_as_jsonl.jsonl": text[4].encode(),
        **{p.name: p.encode() for p in tables},
        **{f.name: f.encode() for f in sources},
    }
    files.update({name: _encode_input_reading(f, how)
                  for name, f, how in input_reading(corpus)})
    files["ambiguous.jsonl"] = ambiguous(corpus).encode()  # issue 33
    files.update({f.name: f.encode(newline=ends) for f, ends in line_ends(corpus)})
    files.update(repeated_columns(corpus))
    cut, traces = truncated()
    for name, data in {**files, "truncated.jsonl.gz": cut}.items():
        (HERE / name).write_bytes(data)
    manifest = {"files": list(files), "entries": [asdict(e) for e in corpus.entries],
                "truncated": {"file": "truncated.jsonl.gz", "traces": traces}}
    (HERE / "expected.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n",
                                        encoding="utf-8")
    (HERE / "README.md").write_text(README_HEAD + readme_table(corpus.entries), encoding="utf-8")
    kinds = {e.kind for e in corpus.entries if e.expected != AUDITED}
    print(f"{len(corpus.entries)} records, {len(kinds)} kinds of bad or odd input, "
          f"{sum(e.expected == AUDITED for e in corpus.entries)} to audit")


if __name__ == "__main__":
    main()
