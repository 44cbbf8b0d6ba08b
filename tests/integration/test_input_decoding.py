"""Reading inputs: per-line decoding (UTF-8, UTF-16, BOMs), truncated or corrupt compressed
files, Parquet files with the wrong types or corrupt bytes, missing inputs."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import json
import lzma
import zlib
from datetime import UTC, datetime

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import zstandard
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from rt4chart.pipeline.sources.traces import InputFileError, ReadTraces, check_inputs
from rt4chart.pipeline.storage import text_files as textfiles
from rt4chart.pipeline.storage.text_files import numbered_lines, split_lines, text_encoding
from rt4chart.transforms.validate import ValidateTraces

from testutil import write_jsonl


@pytest.fixture(autouse=True)
def no_endpoint(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def _pipeline() -> TestPipeline:
    return TestPipeline(runner="FnApiRunner")  # the default would first try to download Prism


def _trace(trace_id: str, answer: str = "The shop opens at 9 am.") -> dict:
    return {"trace_id": trace_id, "contexts": ["The shop opens at 9 am."], "answer": answer}


def _lines(n: int, prefix: str = "t") -> list[str]:
    return [json.dumps(_trace(f"{prefix}{i}", f"Answer {i} is é.")) for i in range(n)]


def _letters(dead: beam.PCollection) -> beam.PCollection:
    return dead | beam.Map(lambda d: (d.stage, d.reason, d.raw, d.trace_id))


# -- bytes to lines, without a pipeline ------------------------------------------------------

@pytest.mark.parametrize("head, expected", [
    (b"\xef\xbb\xbf{", ("utf-8", b"\n", 3)),
    (b"\xff\xfe{\x00", ("utf-16-le", b"\n\x00", 2)),
    (b"\xfe\xff\x00{", ("utf-16-be", b"\x00\n", 2)),
    (b"{\x00\"\x00", ("utf-16-le", b"\n\x00", 0)),
    (b"\x00{\x00\"", ("utf-16-be", b"\x00\n", 0)),
    (b"{\"a\"", ("utf-8", b"\n", 0)),
    (b"", ("utf-8", b"\n", 0)),
])
def test_the_encoding_comes_from_the_byte_order_mark(head, expected):
    assert text_encoding(head) == expected


def test_lines_are_split_across_chunks_and_only_at_utf16_code_units(monkeypatch):
    monkeypatch.setattr(textfiles, "CHUNK_BYTES", 3)
    data = b"one\r\ntwo\n\nthree-is-longer-than-a-chunk\nlast"
    assert list(split_lines(b"", io.BytesIO(data), b"\n")) == [
        b"one", b"two", b"", b"three-is-longer-than-a-chunk", b"last"]
    # U+0A41 U+4E00 is 41 0A 00 4E in UTF-16-LE: "0A 00" at an odd offset is not a newline.
    text = "\u0a41\u4e00 a\nb\n"
    parts = list(split_lines(b"", io.BytesIO(text.encode("utf-16-le")), b"\n\x00"))
    assert [p.decode("utf-16-le") for p in parts] == ["\u0a41\u4e00 a", "b"]


def test_line_numbers_count_blank_lines_and_skip_the_byte_order_mark():
    data = ("\ufeff" + "a\n\nb").encode("utf-16-le")
    assert list(numbered_lines(io.BytesIO(data))) == [
        (1, "a".encode("utf-16-le"), "utf-16-le"), (2, b"", "utf-16-le"),
        (3, "b".encode("utf-16-le"), "utf-16-le")]


@pytest.mark.parametrize("codec,bom", [("utf-8", codecs.BOM_UTF8),
                                       ("utf-16-le", codecs.BOM_UTF16_LE)])
def test_a_byte_order_mark_starting_a_later_line_is_dropped(codec, bom):
    """Files concatenated with `cat`: the second one's BOM starts a line (RFC 8259 lets a JSON
    parser ignore it); a BOM elsewhere in a line is text and stays."""
    data = bom + "a\n\ufeffb\nc\ufeff\n".encode(codec)
    assert [(n, line.decode(codec)) for n, line, _ in numbered_lines(io.BytesIO(data))] == [
        (1, "a"), (2, "b"), (3, "c\ufeff")]


# -- ReadTraces ---------------------------------------------------------------------------------

def test_an_undecodable_line_is_a_dead_letter_naming_file_and_line_and_the_rest_is_read(
        tmp_path):
    good = _lines(2)
    path = tmp_path / "mixed.jsonl"
    path.write_bytes(good[0].encode() + b"\n" + b'{"trace_id": "bad", "answer": "caf\xe9"}\n'
                     + b"\n   \n" + good[1].encode() + b"\r\n")
    with _pipeline() as p:
        read = p | ReadTraces((str(path),))
        assert_that(read.records, equal_to(good), label="records")
        assert_that(_letters(read.dead_letters), equal_to([(
            "read",
            f"{path} line 2: not valid UTF-8 text (invalid continuation byte at byte 34 of the "
            "line); raw shows the undecodable bytes as \\xNN",
            '{"trace_id": "bad", "answer": "caf\\xe9"}', "bad")]), label="dead")


@pytest.mark.parametrize("encode", [
    lambda text: text.encode("utf-8-sig"),
    lambda text: text.encode("utf-16"),  # with a BOM
    lambda text: b"\xfe\xff" + text.encode("utf-16-be"),
    lambda text: text.encode("utf-16-le"),  # no BOM
    lambda text: text.replace("\n", "\r\n").encode("utf-16-be"),
], ids=["utf8-bom", "utf16-bom", "utf16be-bom", "utf16le-no-bom", "utf16be-crlf"])
def test_utf8_bom_and_utf16_files_are_read(tmp_path, encode):
    lines = _lines(3) + [json.dumps(_trace("emoji", "Open 😀 at 9 am."), ensure_ascii=False)]
    path = tmp_path / "t.jsonl"
    path.write_bytes(encode("\n".join(lines) + "\n"))
    with _pipeline() as p:
        read = p | ReadTraces((str(path),))
        assert_that(read.records, equal_to(lines), label="records")
        assert_that(read.dead_letters, equal_to([]), label="dead")


def test_a_utf16_line_with_a_lone_surrogate_is_a_dead_letter(tmp_path):
    good = _lines(2)
    path = tmp_path / "t.jsonl"
    bad = ('{"trace_id": "s", "answer": "'.encode("utf-16-le") + b"\x00\xd8"  # lone U+D800
           + '"}'.encode("utf-16-le"))
    path.write_bytes(b"\xff\xfe" + (good[0] + "\n").encode("utf-16-le") + bad + b"\n\x00"
                     + good[1].encode("utf-16-le"))
    with _pipeline() as p:
        read = p | ReadTraces((str(path),))
        assert_that(read.records, equal_to(good), label="records")
        where = f"{path} line 2: not valid UTF-16-LE text"
        assert_that(_letters(read.dead_letters) | beam.Map(
            lambda d: (d[1].startswith(where), d[2], d[3])),
            equal_to([(True, '{"trace_id": "s", "answer": "\\x00\\xd8"}', "s")]),
            label="dead")


def _truncated(path, compress, lines: list[str]):
    data = compress(("\n".join(lines) + "\n").encode())
    path.write_bytes(data[: len(data) // 2])
    return path


COMPRESSORS = {"gz": gzip.compress, "bz2": bz2.compress, "xz": lzma.compress,
               "zst": lambda data: zstandard.ZstdCompressor().compress(data),
               "deflate": zlib.compress}


@pytest.mark.parametrize("suffix", sorted(COMPRESSORS))
def test_a_truncated_compressed_file_is_an_error_naming_it(tmp_path, suffix):
    path = _truncated(tmp_path / f"t.jsonl.{suffix}", COMPRESSORS[suffix], _lines(3000))
    with pytest.raises(InputFileError, match=rf"^{path}: truncated or corrupt input: read \d+ "
                                             r"line\(s\), then EOFError"):
        with _pipeline() as p:
            p | ReadTraces((str(path),))


def test_a_corrupt_gzip_file_is_an_error_naming_it(tmp_path):
    data = bytearray(gzip.compress(("\n".join(_lines(3000)) + "\n").encode()))
    data[len(data) // 2: len(data) // 2 + 64] = b"\x00" * 64
    path = tmp_path / "t.jsonl.gz"
    path.write_bytes(bytes(data))
    with pytest.raises(InputFileError, match=rf"^{path}: truncated or corrupt input"):
        with _pipeline() as p:
            p | ReadTraces((str(path),))


def test_with_partial_input_allowed_the_lines_read_are_audited_and_the_rest_dead_lettered(
        tmp_path):
    lines = _lines(3000)
    path = _truncated(tmp_path / "t.jsonl.gz", gzip.compress, lines)
    with gzip.open(path, "rt") as fh:  # how far Python itself gets
        readable = []
        with pytest.raises(EOFError):
            for line in fh:
                readable.append(line)
    complete = [line.rstrip("\n") for line in readable if line.endswith("\n")]
    assert 0 < len(complete) < len(lines)
    with _pipeline() as p:
        read = p | ReadTraces((str(path),), allow_partial_input=True)
        assert_that(read.records, equal_to(complete), label="records")
        assert_that(read.dead_letters | beam.Map(lambda d: (d.stage, json.loads(d.raw)["read"],
                                                            d.reason.startswith(f"{path}: "))),
                    equal_to([("read", f"{len(complete)} line(s)", True)]), label="dead")


def test_intact_compressed_files_are_read_whole(tmp_path):
    lines = _lines(5)
    gz = tmp_path / "a.jsonl.gz"  # two gzip members, as `cat a.gz b.gz` makes
    gz.write_bytes(gzip.compress(("\n".join(lines[:2]) + "\n").encode())
                   + gzip.compress(("\n".join(lines[2:4]) + "\n").encode()))
    xz = tmp_path / "b.jsonl.xz"
    xz.write_bytes(lzma.compress(lines[4].encode()))
    zst = tmp_path / "c.jsonl.zst"  # two frames, as `cat a.zst b.zst` makes
    zst.write_bytes(COMPRESSORS["zst"](f"{lines[0]}\n".encode())
                    + COMPRESSORS["zst"](f"{lines[1]}\n".encode()))
    deflate = tmp_path / "d.jsonl.deflate"
    deflate.write_bytes(zlib.compress("\n".join(lines).encode()))
    with _pipeline() as p:
        read = p | ReadTraces((str(gz), str(xz), str(zst), str(deflate)))
        assert_that(read.records, equal_to(lines + lines[:2] + lines), label="records")
        assert_that(read.dead_letters, equal_to([]), label="dead")


def _validated(p, inputs, **kwargs):
    read = p | ReadTraces(tuple(str(i) for i in inputs), **kwargs)
    valid = read.records | ValidateTraces()
    return read, valid


def test_parquet_columns_of_the_wrong_type_become_validation_dead_letters(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.Table.from_pylist([_trace("ok")]), good)
    int_ids = tmp_path / "int_ids.parquet"
    pq.write_table(pa.table({"trace_id": pa.array([7], pa.int64()), "contexts": [["c"]],
                             "answer": ["a"]}), int_ids)
    text_contexts = tmp_path / "text_contexts.parquet"
    pq.write_table(pa.table({"trace_id": ["tc"], "contexts": ["one string"], "answer": ["a"]}),
                   text_contexts)
    text_time = tmp_path / "text_time.parquet"
    pq.write_table(pa.table({"trace_id": ["tt"], "contexts": [["c"]], "answer": ["a"],
                             "timestamp": ["yesterday"]}), text_time)
    with _pipeline() as p:
        read, valid = _validated(p, (good, int_ids, text_contexts, text_time))
        assert_that(valid.traces | beam.Map(lambda t: t.trace_id), equal_to(["ok"]),
                    label="traces")
        assert_that(valid.dead_letters | beam.Map(lambda d: (d.stage, d.trace_id, d.reason)),
                    equal_to([
                        ("validate", None, "field 'trace_id' must be a string, got int"),
                        ("validate", "tc", "'contexts' must be a list (an empty list when nothing "
                                      "was retrieved)"),
                        ("validate", "tt", "timestamp 'yesterday' is not RFC 3339"),
                    ]), label="dead")
        assert_that(read.dead_letters, equal_to([]), label="unread")


def test_a_parquet_value_python_cannot_hold_is_a_dead_letter_for_its_row(tmp_path):
    path = tmp_path / "t.parquet"
    beyond = pa.array([0, 3 * 10**17], pa.timestamp("us", tz="UTC"))
    pq.write_table(pa.table({"trace_id": ["fine", "far"], "contexts": [["c"], ["c"]],
                             "answer": ["a", "a"], "timestamp": beyond}), path)
    with _pipeline() as p:
        read = p | ReadTraces((str(path),))
        assert_that(read.records | beam.Map(lambda r: (r["trace_id"], r["timestamp"])),
                    equal_to([("fine", datetime(1970, 1, 1, tzinfo=UTC))]), label="records")
        assert_that(read.dead_letters | beam.Map(lambda d: (d.stage, d.trace_id, d.reason)),
                    equal_to([("read", "far", f"{path} row group 0 row 1: unreadable value, "
                                              "column 'timestamp': date value out of range")]),
                    label="dead")


def test_a_corrupt_parquet_file_is_an_error_naming_it_or_a_dead_letter(tmp_path):
    good = tmp_path / "good.parquet"
    pq.write_table(pa.Table.from_pylist([_trace("ok")]), good)
    bad = tmp_path / "bad.parquet"
    bad.write_bytes(b"PAR1 this is not a parquet file")
    with pytest.raises(InputFileError, match=rf"^{bad}: truncated or corrupt input: read 0 rows"):
        with _pipeline() as p:
            p | ReadTraces((str(good), str(bad)))
    with _pipeline() as p:
        read = p | ReadTraces((str(good), str(bad)), allow_partial_input=True)
        assert_that(read.records | beam.Map(lambda r: r["trace_id"]), equal_to(["ok"]),
                    label="records")
        assert_that(read.dead_letters | beam.Map(lambda d: json.loads(d.raw)["file"]),
                    equal_to([str(bad)]), label="dead")


def test_a_trace_id_in_two_files_is_audited_once(tmp_path):
    a = write_jsonl(tmp_path / "a.jsonl", [_trace("same"), _trace("only-a")])
    b = tmp_path / "b.jsonl.gz"
    with gzip.open(b, "wt") as fh:
        fh.write(json.dumps(_trace("same")) + "\n")
    with _pipeline() as p:
        _, valid = _validated(p, (a, b))
        assert_that(valid.traces | beam.Map(lambda t: t.trace_id), equal_to(["same", "only-a"]),
                    label="traces")
        assert_that(valid.dead_letters | beam.Map(lambda d: (d.stage, d.trace_id)),
                    equal_to([("dedupe", "same")]), label="dead")


def test_missing_inputs_are_named_before_anything_runs(tmp_path):
    present = write_jsonl(tmp_path / "a.jsonl", [_trace("a")])
    with pytest.raises(FileNotFoundError, match=r"no input file matches .*nothing-\*\.jsonl, "
                                                r".*gone\.parquet"):
        check_inputs([str(present), str(tmp_path / "nothing-*.jsonl"),
                      str(tmp_path / "gone.parquet")])
    folder = tmp_path / "folder"
    folder.mkdir()
    with pytest.raises(FileNotFoundError, match="no input file matches .*folder"):
        check_inputs([str(folder)])
    check_inputs([str(present), str(tmp_path / "*.jsonl")])
    with pytest.raises(FileNotFoundError, match="nothing-"):
        with _pipeline() as p:
            p | ReadTraces((str(present), str(tmp_path / "nothing-*.jsonl")))


# -- the audit command ------------------------------------------------------------------------

def test_audit_of_a_file_with_an_undecodable_line_audits_the_rest(tmp_path, audit):
    path = tmp_path / "t.jsonl"
    path.write_bytes(json.dumps(_trace("fine")).encode() + b"\n"
                     + b'{"trace_id": "broken", "answer": "\xff"}\n')
    code, tables, _ = audit(str(path), "--judge", "offline")
    assert code == 0
    assert [a["trace_id"] for a in tables["answers"]] == ["fine"]
    assert [(d["stage"], d["trace_id"]) for d in tables["dead_letters"]] == [("read", "broken")]
    assert tables["dead_letters"][0]["reason"].startswith(f"{path} line 2: not valid UTF-8")


def test_audit_of_a_truncated_gzip_fails_naming_the_file(tmp_path, audit, capsys):
    path = _truncated(tmp_path / "t.jsonl.gz", gzip.compress, _lines(3000))
    code, _, out = audit(str(path), "--judge", "offline")
    assert code == 1  # a failed run, not a usage error
    assert f"{path}: truncated or corrupt input" in capsys.readouterr().err
    assert not out.exists()  # the run made the folder: a failed run leaves nothing


# -- records over --max-record-bytes, CR-only line endings ----------------------------------

def test_a_line_over_the_record_limit_is_a_dead_letter_naming_file_and_line(tmp_path):
    lines = _lines(2)
    big = json.dumps(_trace("huge", "x" * 50_000))
    path = tmp_path / "t.jsonl"
    path.write_text(f"{lines[0]}\n{big}\n{lines[1]}\n")
    with _pipeline() as p:
        read = p | ReadTraces((str(path),), max_record_bytes=10_000)
        assert_that(read.records, equal_to(lines), label="records")
        assert_that(_letters(read.dead_letters) | beam.Map(
            lambda d: (d[0], d[1], len(d[2]), d[3])), equal_to([(
                "read", f"{path} line 2: record of {len(big):,} bytes is over "
                        "--max-record-bytes=10,000; skipped unread (raw holds its first 1,024 "
                        "bytes)", 1024, "huge")]), label="dead")


def test_a_parquet_row_over_the_record_limit_is_a_dead_letter_and_its_neighbours_are_read(
        tmp_path):
    rows = [_trace("a"), _trace("huge", "x" * 50_000), _trace("b")]
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    with _pipeline() as p:
        read = p | ReadTraces((str(path),), max_record_bytes=10_000)
        assert_that(read.records | beam.Map(lambda r: r["trace_id"]), equal_to(["a", "b"]),
                    label="records")
        assert_that(_letters(read.dead_letters) | beam.Map(
            lambda d: (d[0], d[1].split(": record of")[0], d[3])),
            equal_to([("read", f"{path} row group 0 row 1", "huge")]), label="dead")


def test_a_one_row_row_group_over_the_limit_is_told_by_its_metadata(tmp_path):
    path = tmp_path / "t.parquet"
    pq.write_table(pa.Table.from_pylist([_trace("a"), _trace("huge", "x" * 50_000)]), path,
                   row_group_size=1)
    with _pipeline() as p:
        read = p | ReadTraces((str(path),), max_record_bytes=10_000)
        assert_that(read.records | beam.Map(lambda r: r["trace_id"]), equal_to(["a"]),
                    label="records")
        assert_that(_letters(read.dead_letters) | beam.Map(lambda d: d[1].split(":")[0]),
                    equal_to([f"{path} row group 1 row 0"]), label="dead")


def test_audit_with_max_record_bytes_dead_letters_the_big_line_and_audits_the_rest(
        tmp_path, audit):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(_trace("fine")) + "\n"
                    + json.dumps(_trace("huge", "x" * 300_000)) + "\n")
    code, tables, _ = audit(str(path), "--judge", "offline", "--max-record-bytes", "256k")
    assert code == 0
    assert [a["trace_id"] for a in tables["answers"]] == ["fine"]
    assert [(d["stage"], d["trace_id"]) for d in tables["dead_letters"]] == [("read", "huge")]
    assert "--max-record-bytes=262,144" in tables["dead_letters"][0]["reason"]


def test_audit_of_a_file_with_cr_only_line_endings_audits_every_record(tmp_path, audit):
    path = tmp_path / "old-mac.jsonl"
    path.write_bytes("\r".join(json.dumps(_trace(f"t{i}")) for i in range(5)).encode() + b"\r")
    code, tables, _ = audit(str(path), "--judge", "offline")
    assert code == 0
    assert sorted(a["trace_id"] for a in tables["answers"]) == [f"t{i}" for i in range(5)]
    assert tables["dead_letters"] == []
