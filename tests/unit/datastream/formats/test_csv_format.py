"""CsvSchema and CsvReaderFormat: PyFlink's builder, values read as PyFlink 2.3 reads them
(the expected records below are PyFlink's own output for the same files), errors that
name the file, row and column, positions restored exactly, and columns for a consumer
of columns."""

from __future__ import annotations

import datetime
import decimal
import io

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from weir.common import Row, Types
from weir.core.columnar import ColumnBatch
from weir.datastream.connectors.file_system import FileSource
from weir.datastream.formats._csv_lines import CsvLineWatch
from weir.datastream.formats._typed_columns import FileFormatError
from weir.datastream.formats.csv import CsvReaderFormat, CsvSchema
from weir.table import DataTypes as T


class Ctx:
    def get_index_of_this_subtask(self) -> int:
        return 0

    def get_number_of_parallel_subtasks(self) -> int:
        return 1


def _source(path, schema: CsvSchema) -> FileSource:
    csv = CsvReaderFormat.for_schema(schema)
    return FileSource.for_record_stream_format(csv, str(path)).build()


def read_all(path, schema: CsvSchema, max_records: int = 100) -> list[Row]:
    reader = _source(path, schema).create_reader(Ctx())
    out: list[Row] = []
    while (batch := reader.poll_batch(max_records)) is not None:
        out.extend(batch)
    return out


def _ibs():
    return (
        CsvSchema.builder()
        .add_number_column("i", T.INT())
        .add_string_column("s")
        .add_boolean_column("b")
    )


def _two():
    return CsvSchema.builder().add_string_column("s").add_string_column("t")


def row(**fields) -> Row:
    return Row(**fields)


# (file content, schema, the records PyFlink 2.3 read from it)
PYFLINK_READS = {
    "types and quoting": (
        '1,a,true,1.5,x;y,7\n2,"b,\nc",false,3,z,8\n3,,TRUE,2.25,,9\n',
        CsvSchema.builder()
        .add_number_column("id", T.INT())
        .add_string_column("s")
        .add_boolean_column("b")
        .add_number_column("d", T.DOUBLE())
        .add_array_column("arr")
        .add_number_column("l"),
        [
            row(id=1, s="a", b=True, d=1.5, arr=["x", "y"], l=7),
            row(id=2, s="b,\nc", b=False, d=3.0, arr=["z"], l=8),
            row(id=3, s="", b=True, d=2.25, arr=[], l=9),
        ],
    ),
    "empty null literal": (
        '1,x,true\n,,\n1,"",true\n',
        _ibs().set_null_value(""),
        [row(i=1, s="x", b=True), row(i=None, s=None, b=None), row(i=1, s=None, b=True)],
    ),
    "NULL literal": (
        "1,NULL,NULL\nNULL,y,false\n",
        _ibs().set_null_value("NULL"),
        [row(i=1, s=None, b=None), row(i=None, s="y", b=False)],
    ),
    "booleans": (
        "1,x,\n1,x,yes\n1,x, true \n1,x,1\n",
        _ibs(),
        [
            row(i=1, s="x", b=False),
            row(i=1, s="x", b=False),
            row(i=1, s="x", b=True),
            row(i=1, s="x", b=False),
        ],
    ),
    "header": ("i,t,b\n1,x,true\n", _ibs().set_use_header(), [row(i=1, s="x", b=True)]),
    "header of another width": (
        "i,s\n1,x,true\n",
        _ibs().set_use_header(),
        [row(i=1, s="x", b=True)],
    ),
    "header and first row skipped": (
        "i,s,b\n9,z,true\n1,x,true\n",
        _ibs().set_use_header().set_skip_first_data_row(),
        [row(i=1, s="x", b=True)],
    ),
    "strict header": (
        "i,s,b\n1,x,true\n",
        _ibs().set_use_header().set_strict_headers(),
        [row(i=1, s="x", b=True)],
    ),
    "quote char": ("1,'a,b',true\n", _ibs().set_quote_char("'"), [row(i=1, s="a,b", b=True)]),
    "separator": ("1|a,b|true\n", _ibs().set_column_separator("|"), [row(i=1, s="a,b", b=True)]),
    "no quote char": ('1,"x,true\n', _ibs().disable_quote_char(), [row(i=1, s='"x', b=True)]),
    "whitespace": (" 1 , x ,true\n", _ibs(), [row(i=1, s=" x ", b=True)]),
    "line endings": (
        "1,x,true\r\n2,y,false\r\n3,z,true",
        _ibs(),
        [row(i=1, s="x", b=True), row(i=2, s="y", b=False), row(i=3, s="z", b=True)],
    ),
    "quoted values": (
        '"1",x,"true"\n1,"a""b",true\n1,a"b,true\n',
        _ibs(),
        [row(i=1, s="x", b=True), row(i=1, s='a"b', b=True), row(i=1, s='a"b', b=True)],
    ),
    "number types": (
        "1,2,3,4.5,6.5,7.25,8\n",
        CsvSchema.builder()
        .add_number_column("a", T.TINYINT())
        .add_number_column("b", T.SMALLINT())
        .add_number_column("c", T.BIGINT())
        .add_number_column("d", T.FLOAT())
        .add_number_column("e", T.DOUBLE())
        .add_number_column("f", T.DECIMAL(10, 2))
        .add_number_column("g"),
        [row(a=1, b=2, c=3, d=4.5, e=6.5, f=decimal.Decimal("7.25"), g=8)],
    ),
    "doubles as Java parses them": (
        "1.5f\nInfinity\n-Infinity\n0x1p3\n1.\n.5\n+NaN\n1e400\n 2.5d \n1e3\n",
        CsvSchema.builder().add_number_column("d", T.DOUBLE()),
        [
            row(d=v)
            for v in [1.5, float("inf"), float("-inf"), 8.0, 1.0, 0.5, "nan", float("inf"), 2.5]
        ]
        + [row(d=1000.0)],
    ),
    "floats in single precision": (
        "0.1\n16777217\n",
        CsvSchema.builder().add_number_column("d", T.FLOAT()),
        [row(d=0.10000000149011612), row(d=16777216.0)],
    ),
    "integers": ("+5\n\t7\t\n", CsvSchema.builder().add_number_column("d"), [row(d=5), row(d=7)]),
    "decimals rounded half up, too long ones null": (
        "1.005\n-1.005\n1.004\n1e2\n+3.5\n123456\n999.995\n",
        CsvSchema.builder().add_number_column("d", T.DECIMAL(5, 2)),
        [
            *(row(d=decimal.Decimal(v)) for v in ["1.01", "-1.01", "1.00", "100.00", "3.50"]),
            row(d=None),
            row(d=None),
        ],
    ),
    "dates and timestamps": (
        "2024-1-2,2024-01-02 03:04:05.1239\n2024-01-02, 2024-01-02 03:04:05\n",
        CsvSchema.builder().add_number_column("d", T.DATE()).add_number_column("t", T.TIMESTAMP(6)),
        [
            row(d=datetime.date(2024, 1, 2), t=datetime.datetime(2024, 1, 2, 3, 4, 5, 123000)),
            row(d=datetime.date(2024, 1, 2), t=datetime.datetime(2024, 1, 2, 3, 4, 5)),
        ],
    ),
    "arrays": (
        "1;2;3,x\n,y\n 1 ; 2 ,z\n",
        CsvSchema.builder().add_array_column("a", ";", T.INT()).add_string_column("s"),
        [row(a=[1, 2, 3], s="x"), row(a=[], s="y"), row(a=[1, 2], s="z")],
    ),
    "array parts": (
        'a;,x\n;b,y\n;,z\n"a,b;c",w\n',
        CsvSchema.builder().add_array_column("a").add_string_column("s"),
        [
            row(a=["a", ""], s="x"),
            row(a=["", "b"], s="y"),
            row(a=["", ""], s="z"),
            row(a=["a,b", "c"], s="w"),
        ],
    ),
    "array nulls": (
        "a;NULL,x\nNULL,y\n",
        CsvSchema.builder().add_array_column("a").add_string_column("s").set_null_value("NULL"),
        [row(a=["a", None], s="x"), row(a=[None], s="y")],
    ),
    "array separator": (
        "1|2,x\n",
        CsvSchema.builder().add_array_column("a", "|", T.INT()).add_string_column("s"),
        [row(a=[1, 2], s="x")],
    ),
    "a blank line of one column is an empty value": (
        "a\n\nb\n",
        CsvSchema.builder().add_string_column("s"),
        [row(s="a"), row(s=""), row(s="b")],
    ),
    "a blank line inside a quoted value": (
        '1,"a\n\nb",true\n2,y,false\n',
        _ibs(),
        [row(i=1, s="a\n\nb", b=True), row(i=2, s="y", b=False)],
    ),
    "byte order mark": ("\ufeff1,x,true\n", _ibs(), [row(i=1, s="x", b=True)]),
    "a byte order mark before a quoted value": (
        '\ufeff"a,b",1\n',
        _two(),
        [row(s="a,b", t="1")],
    ),
    "quotes inside an unquoted value are text": (
        'ab"c,1\nab",2\n "ab",3\nx,"y,z"\n',
        _two(),
        [row(s='ab"c', t="1"), row(s='ab"', t="2"), row(s=' "ab"', t="3"), row(s="x", t="y,z")],
    ),
    "whitespace after a closing quote is skipped": (
        '"ab" ,1\n"cd"\t,2\nx,"ef" ',
        _two(),
        [row(s="ab", t="1"), row(s="cd", t="2"), row(s="x", t="ef")],
    ),
    "doubled quotes": (
        '"a""b",1\n"""",2\n"a\r\nb",3\r\n',
        _two(),
        [row(s='a"b', t="1"), row(s='"', t="2"), row(s="a\r\nb", t="3")],
    ),
    "empty file": ("", CsvSchema.builder().add_string_column("s"), []),
}


def _same(got: list[Row], expected: list[Row]) -> bool:
    def norm(r):
        return [("nan" if isinstance(v, float) and v != v else v) for v in r]

    return [norm(r) for r in got] == [norm(r) for r in expected] and all(
        g.as_dict().keys() == e.as_dict().keys() for g, e in zip(got, expected, strict=True)
    )


@pytest.mark.parametrize("case", list(PYFLINK_READS))
def test_values_are_read_as_pyflink_reads_them(tmp_path, case):
    data, builder, expected = PYFLINK_READS[case]
    path = tmp_path / "in.csv"
    path.write_bytes(data.encode())
    got = read_all(path, builder.build())
    expected = [Row(**{k: v for k, v in r.as_dict().items()}) for r in expected]
    assert _same(got, expected), got
    for record, want in zip(got, expected, strict=True):
        assert [type(v) for v in record] == [float if v == "nan" else type(v) for v in want], record


# (file content, schema, the message's parts) for files PyFlink 2.3 fails on too
BAD_FILES = {
    "a fraction in an INT column": ("1,x,true\n1.5,x,true\n", _ibs(), ["row 2", "'i'", "'1.5'"]),
    "an INT out of range": ("3000000000,x,true\n", _ibs(), ["row 1", "'3000000000' is not an"]),
    "a TINYINT out of range": (
        "300\n",
        CsvSchema.builder().add_number_column("a", T.TINYINT()),
        ["row 1", "'a'", "int8"],
    ),
    "an exponent in an integer": ("1e3,x,true\n", _ibs(), ["'1e3'"]),
    "hex in an integer": ("0x10,x,true\n", _ibs(), ["'0x10'"]),
    "an empty number": ("1,x,true\n,x,true\n", _ibs(), ["row 2", "''", "set_null_value"]),
    "nan is no Java double": (
        "nan\n",
        CsvSchema.builder().add_number_column("d", T.DOUBLE()),
        ["'nan' is not a double"],
    ),
    "whitespace around a decimal": (
        " 2.5 \n",
        CsvSchema.builder().add_number_column("d", T.DECIMAL(5, 2)),
        ["' 2.5 '"],
    ),
    "an ISO timestamp": (
        "2024-01-02T03:04:05\n",
        CsvSchema.builder().add_number_column("d", T.TIMESTAMP(3)),
        ["'2024-01-02T03:04:05'"],
    ),
    "a bad array element": (
        "1;x,x\n",
        CsvSchema.builder().add_array_column("a", ";", T.INT()).add_string_column("s"),
        ["'a'", "'1;x'"],
    ),
    "too few columns": ("1,x,true\n1,x\n", _ibs(), ["Row #2", "Expected 3 columns, got 2"]),
    "too many columns": ("1,x,true,9\n", _ibs(), ["Row #1", "got 4"]),
    "a blank line among several columns": (
        "1,x,true\n\n2,y,false\n",
        _ibs(),
        ["row 2", "a blank line", "3 columns"],
    ),
    "a blank line at the end": ("1,x,true\n2,y,false\n\n", _ibs(), ["row 3", "a blank line"]),
    "a blank line first": ("\n1,x,true\n", _ibs(), ["row 1", "a blank line"]),
    "a blank line between CRLF lines": (
        "1,x,true\r\n\r\n2,y,false\r\n",
        _ibs(),
        ["row 2", "a blank line"],
    ),
    "text after a closing quote": ('"ab"c,1\n', _two(), ["row 1", "'c' after the closing quote"]),
    "text after a closing quote, one column": (
        'x\n"ab"c\n',
        CsvSchema.builder().add_string_column("s"),
        ["row 2", "'c' after the closing quote"],
    ),
    "text after an empty quoted value": ('""x,1\n', _two(), ["row 1", "'x' after"]),
    "text after doubled quotes and the closing one": (
        '"a"""b,1\n',
        _two(),
        ["row 1", "'b' after"],
    ),
    "a blank line after a quote inside an unquoted value": (
        'ab"c,1\n\nx,2\n',
        _two(),
        ["row 2", "a blank line"],
    ),
    "a quoted value never closed": (
        'x\n"ab""\n',
        CsvSchema.builder().add_string_column("s"),
        ["row 2", "never closed", "Missing closing quote"],
    ),
    "a header of other names": (
        "i,t,b\n1,x,true\n",
        _ibs().set_use_header().set_strict_headers(),
        ["row 1", "expected 's', actual 't'", "set_strict_headers(False)"],
    ),
    "a strict header of another width": (
        "i,s\n1,x,true\n",
        _ibs().set_use_header().set_strict_headers(),
        ["Expected 3 columns, got 2"],
    ),
}


@pytest.mark.parametrize("case", list(BAD_FILES))
def test_a_bad_file_fails_naming_file_row_column_and_what_to_do(tmp_path, case):
    data, builder, parts = BAD_FILES[case]
    path = tmp_path / "bad.csv"
    path.write_bytes(data.encode())
    with pytest.raises(FileFormatError) as failure:
        read_all(path, builder.build())
    message = str(failure.value)
    assert str(path) in message
    assert "Correct the file, or change the CsvSchema" in message
    for part in parts:
        assert part in message


def test_records_before_a_bad_value_are_read_and_none_after_it_is_skipped(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("1,a,true\n2,b,true\nx,c,true\n4,d,true\n")
    reader = _source(path, _ibs().build()).create_reader(Ctx())
    assert [r.i for r in reader.poll_batch(2)] == [1, 2]
    with pytest.raises(FileFormatError, match="row 3"):
        reader.poll_batch(2)
    # The failed batch moved nothing: a restore from here reads the bad row again.
    assert reader.snapshot_splits() == [(f"file://{path}", 0, 2)]


def test_options_pyarrow_cannot_follow_are_refused_by_name():
    builder = CsvSchema.builder()
    with pytest.raises(NotImplementedError, match="set_allow_comments"):
        builder.set_allow_comments()
    builder.set_allow_comments(False)
    with pytest.raises(NotImplementedError, match=r"set_escape_char.*\\t"):
        builder.set_escape_char("\\")
    with pytest.raises(NotImplementedError, match="set_any_property_name"):
        builder.set_any_property_name("rest")
    with pytest.raises(NotImplementedError, match="remove_array_element_separator"):
        builder.remove_array_element_separator(0)
    with pytest.raises(ValueError, match="Column separator must be a single char"):
        builder.set_column_separator("||")
    with pytest.raises(ValueError, match="Quote char must be a single char"):
        builder.set_quote_char("")


def test_the_schema_is_pyflinks():
    schema = (
        CsvSchema.builder()
        .add_number_column("id", number_type=T.INT())
        .add_string_column("name")
        .add_array_column("list", ",", element_type=T.STRING())
        .add_boolean_column("ok")
        .set_use_header()
        .build()
    )
    assert len(schema) == schema.size() == 4
    assert str(schema) == (
        '[CsvSchema: columns=["id"/NUMBER,"name"/STRING,"list"/ARRAY,"ok"/BOOLEAN], header? '
        "true, skipFirst? false, comments? false, any-properties? N/A]"
    )
    copied = CsvSchema.builder().add_columns_from(schema).add_number_column("n").build()
    assert copied._row_type.field_names() == ["id", "name", "list", "ok", "n"]
    assert CsvSchema.builder().add_columns_from(schema).clear_columns().size() == 0
    source = _source("/tmp/none.csv", schema)
    assert source.get_produced_type() == Types.ROW_NAMED(
        ["id", "name", "list", "ok"],
        [Types.INT(), Types.STRING(), Types.LIST(Types.STRING()), Types.BOOLEAN()],
    )
    with pytest.raises(TypeError, match="needs a CsvSchema"):
        CsvReaderFormat.for_schema("id,name")


QUOTED = "".join(f'{i},"line {i}\nwith ""quotes"", and a break",{i % 2 == 0}\n' for i in range(40))


@pytest.mark.parametrize("header", [False, True])
def test_a_reader_restored_at_any_record_reads_the_rest_exactly(tmp_path, header):
    path = tmp_path / "in.csv"
    path.write_text(("i,s,b\n" if header else "") + QUOTED)
    schema = _ibs().set_use_header(header).build()
    expected = read_all(path, schema)
    assert [r.i for r in expected] == list(range(40))
    source = _source(path, schema)
    reader = source.create_reader(Ctx())
    consumed: list[Row] = []
    while True:
        splits = reader.snapshot_splits()
        restored = source.create_reader(Ctx())
        restored.restore_splits(splits)
        rest = []
        while (batch := restored.poll_batch(7)) is not None:
            rest.extend(batch)
        assert consumed + rest == expected
        batch = reader.poll_batch(3)
        if batch is None:
            break
        consumed.extend(batch)
    assert reader.snapshot_splits() == []


def test_a_consumer_of_columns_gets_numpy_columns_of_the_same_records(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("".join(f"{i},{i * 0.5},k{i % 3},{i % 2 == 0}\n" for i in range(1000)))
    schema = (
        CsvSchema.builder()
        .add_number_column("key")
        .add_number_column("value", T.DOUBLE())
        .add_string_column("name")
        .add_boolean_column("even")
        .build()
    )
    reader = _source(path, schema).create_reader(Ctx())
    batches = []
    while (batch := reader.poll_columns(300)) is not None:
        batches.append(batch)
    assert [len(b) for b in batches] == [300, 300, 300, 100]
    first = batches[0]
    assert isinstance(first, ColumnBatch)
    assert first.columns["key"].dtype == np.int64
    assert first.columns["value"].dtype == np.float64
    assert first.columns["even"].dtype == np.bool_
    assert first._records is None  # nothing was made a record
    records = [r for b in batches for r in b.records()]
    assert records == read_all(path, schema)
    assert records[3] == Row(key=3, value=1.5, name="k0", even=False)


def test_a_column_with_nulls_is_an_object_column_of_values_and_none(tmp_path):
    path = tmp_path / "in.csv"
    path.write_text("1\n\n3\n")
    schema = CsvSchema.builder().add_number_column("n", T.INT()).set_null_value("").build()
    batch = _source(path, schema).create_reader(Ctx()).poll_columns(10)
    assert batch.columns["n"].dtype == object
    assert batch.records() == [Row(n=1), Row(n=None), Row(n=3)]


def test_the_records_before_a_blank_line_are_read_before_it_fails(tmp_path):
    path = tmp_path / "in.csv"
    path.write_bytes(b"1,x,true\n2,y,false\n\n3,z,true\n")
    reader = _source(path, _ibs().build()).create_reader(Ctx())
    assert [r.i for r in reader.poll_batch(10)] == [1, 2]
    with pytest.raises(FileFormatError, match="row 3: a blank line"):
        reader.poll_batch(10)
    assert reader.snapshot_splits() == [(f"file://{path}", 0, 2)]


def _jackson_reading(data: bytes, quote: int | None, columns: int) -> tuple[int | None, bytes]:
    """Byte by byte, as Jackson's CSV parser reads: the first row it refuses (None if it
    refuses none), and, when it refuses none, the bytes without the whitespace it skips
    after closing quotes."""
    sep, out = ord(","), bytearray()
    inside, value_start, line_open, lines, open_row = False, True, False, 0, 0
    bom = b"\xef\xbb\xbf"
    i = len(bom) if data.startswith(bom) else 0
    out += data[:i]
    while i < len(data):
        byte = data[i]
        if quote is not None and byte == quote and (inside or value_start):
            if not inside:
                inside, open_row = True, lines + 1
            elif i + 1 < len(data) and data[i + 1] == quote:
                out.append(byte)  # a doubled quote: one quote of the value
                i += 1
            else:
                inside = False
                j = i + 1
                while j < len(data) and data[j] <= 32 and data[j] not in (10, 13, sep):
                    j += 1
                if j < len(data) and data[j] not in (10, 13, sep):
                    return lines + 1, b""
                out.append(byte)
                i, value_start, line_open = j, False, True
                continue
            out.append(byte)
            i, value_start, line_open = i + 1, False, True
            continue
        out.append(byte)
        if byte in (10, 13) and not inside:
            if not line_open and columns > 1:
                return lines + 1, b""
            lines, line_open, value_start = lines + 1, False, True
            if byte == 13 and i + 1 < len(data) and data[i + 1] == 10:
                out.append(10)
                i += 1
        else:
            line_open = True
            value_start = byte == sep and not inside
        i += 1
    if inside:
        return open_row, b""
    return None, bytes(out)


@settings(max_examples=1000, deadline=None)
@given(
    data=st.lists(
        st.sampled_from([b"a", b",", b'"', b"\n", b"\r", b"\r\n", b" ", b"\t"]), max_size=30
    ).map(b"".join),
    bom=st.booleans(),
    quoted=st.booleans(),
    columns=st.sampled_from([1, 2]),
    size=st.integers(1, 8),
)
def test_the_line_watch_reads_as_jackson_does_byte_by_byte(data, bom, quoted, columns, size):
    """Whatever the blocks the file is read in: a \\r\\n or a run of quotes split between
    two blocks, quotes opened in one and closed in the next, whitespace after a closing
    quote reaching the end of a block, a byte order mark split."""
    data = b"\xef\xbb\xbf" + data if bom else data
    watch = CsvLineWatch(io.BytesIO(data), ",", '"' if quoted else None, columns)
    handed = bytearray()
    while block := watch.read(size):
        handed += block
    refused, kept = _jackson_reading(data, ord('"') if quoted else None, columns)
    assert watch.refused_row == refused
    if refused is None:
        assert bytes(handed) == kept
