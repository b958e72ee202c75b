"""CSV files (mirrors ``pyflink.datastream.formats.csv``): ``CsvSchema`` describes the
columns, ``CsvReaderFormat`` reads Rows of them through ``FileSource``, with pyarrow's
CSV reader::

    schema = CsvSchema.builder() \\
        .add_number_column("id", number_type=DataTypes.INT()) \\
        .add_string_column("name") \\
        .set_column_separator("|") \\
        .set_use_header() \\
        .build()
    source = FileSource.for_record_stream_format(
        CsvReaderFormat.for_schema(schema), "file:///data/people").build()
    # records: Row(id=1, name='Ann'), typed Types.ROW_NAMED(["id", "name"], [INT, STRING])

Records are Rows with the columns' names; values are read as Flink's CSV format reads
them (``_csv_values``). A consumer of columns (``map_batches``, a built-in window
aggregate) gets them as numpy columns, without Rows being built.

Position in a file: the number of data records read, so a restored reader reads the file
again from its start and skips them, as Flink restores its CSV reader. Exact whatever
the file holds (quoted line breaks included), at the cost of reading the skipped part
again.

Where pyarrow's reader and Flink's (Jackson's) differ, the file is read as Flink reads it
(``_csv_lines``): a blank line in a file of several columns, text other than whitespace
after a quoted value's closing quote, and a quoted value the file ends in fail the read,
naming the row, once the records before it are handed over; whitespace after a closing
quote is skipped. In a file of one column a blank line is a record of one empty value, as
in Flink.

Options pyarrow's reader cannot follow exactly are refused when the schema is built,
naming the option: ``set_allow_comments``, ``set_escape_char`` (Jackson reads ``\\t``
as a tab, pyarrow as ``t``), ``set_any_property_name`` and
``remove_array_element_separator``.
"""

from __future__ import annotations

from typing import Any, NoReturn

from weir.common.typeinfo import TypeInformation
from weir.core.columnar import ColumnBatch
from weir.datastream.connectors._file_source_reader import FileSplit
from weir.datastream.connectors.file_system import StreamFormat
from weir.datastream.formats._csv_lines import CsvLineWatch
from weir.datastream.formats._typed_columns import FileFormatError, RowColumns, check_row_type
from weir.table.types import ArrayType, DataType, DataTypes, NumericType, RowField, RowType

__all__ = ["CsvReaderFormat", "CsvSchema", "CsvSchemaBuilder"]

# Bytes pyarrow reads and parses at once: a block's rows are converted a poll at a time.
_BLOCK_SIZE = 1 << 20


class CsvSchema:
    """The columns of a CSV file and how it is written (Jackson's ``CsvSchema``)."""

    def __init__(self, row_type: RowType, options: dict[str, Any], separators: list[str]):
        self._row_type = row_type
        self._options = dict(options)
        # Element separator per column (arrays only).
        self._separators = list(separators)

    @staticmethod
    def builder() -> CsvSchemaBuilder:
        return CsvSchemaBuilder()

    def size(self) -> int:
        return len(self._row_type)

    def __len__(self) -> int:
        return self.size()

    def __str__(self) -> str:
        columns = ",".join(f'"{f.name}"/{_column_kind(f.data_type)}' for f in self._row_type.fields)
        o = self._options
        return (
            f"[CsvSchema: columns=[{columns}], header? {str(o['use_header']).lower()}, "
            f"skipFirst? {str(o['skip_first_data_row']).lower()}, comments? false, "
            "any-properties? N/A]"
        )

    def __repr__(self) -> str:
        return str(self)


def _column_kind(data_type: DataType) -> str:
    if isinstance(data_type, ArrayType):
        return "ARRAY"
    if isinstance(data_type, NumericType):
        return "NUMBER"
    return "BOOLEAN" if data_type.type_name() == "BOOLEAN" else "STRING"


_DEFAULTS: dict[str, Any] = {
    "column_separator": ",",
    "quote_char": '"',
    "null_value": None,
    "use_header": False,
    "strict_headers": False,
    "skip_first_data_row": False,
}


def _single_char(what: str, char: str) -> str:
    if not isinstance(char, str) or len(char) != 1:
        msg = f"{what} must be a single char, got {char}"
        raise ValueError(msg)
    return char


def _refuse(option: str, why: str) -> NoReturn:
    msg = f"CsvSchemaBuilder.{option}: not supported; {why}"
    raise NotImplementedError(msg)


class CsvSchemaBuilder:
    """Builds a ``CsvSchema`` (Jackson's ``CsvSchema.Builder``), column by column."""

    def __init__(self) -> None:
        self._fields: list[RowField] = []
        self._separators: list[str] = []
        self._options = dict(_DEFAULTS)

    def build(self) -> CsvSchema:
        return CsvSchema(DataTypes.ROW(list(self._fields)), self._options, self._separators)

    def _add(self, name: str, data_type: DataType, separator: str = "") -> CsvSchemaBuilder:
        self._fields.append(DataTypes.FIELD(name, data_type))
        self._separators.append(separator)
        return self

    def add_array_column(
        self, name: str, separator: str = ";", element_type: DataType | None = None
    ) -> CsvSchemaBuilder:
        """An array column: its elements are separated by ``separator`` (default ``;``),
        each of ``element_type`` (default ``DataTypes.STRING()``), a primitive type."""
        element_type = DataTypes.STRING() if element_type is None else element_type
        if isinstance(element_type, (ArrayType, RowType)):
            msg = f"add_array_column({name!r}): the elements must be of a primitive type"
            raise TypeError(msg)
        if not separator:
            msg = f"add_array_column({name!r}): give a non-empty separator"
            raise ValueError(msg)
        return self._add(name, DataTypes.ARRAY(element_type), separator)

    def add_boolean_column(self, name: str) -> CsvSchemaBuilder:
        """A boolean column, ``DataTypes.BOOLEAN()``."""
        return self._add(name, DataTypes.BOOLEAN())

    def add_number_column(self, name: str, number_type: DataType | None = None) -> CsvSchemaBuilder:
        """A number column of ``number_type`` (default ``DataTypes.BIGINT()``)."""
        return self._add(name, DataTypes.BIGINT() if number_type is None else number_type)

    def add_string_column(self, name: str) -> CsvSchemaBuilder:
        """A string column, ``DataTypes.STRING()``."""
        return self._add(name, DataTypes.STRING())

    def add_columns_from(self, schema: CsvSchema) -> CsvSchemaBuilder:
        """Every column of ``schema``, after those added so far."""
        for field, separator in zip(schema._row_type, schema._separators, strict=True):
            self._add(field.name, field.data_type, separator)
        return self

    def clear_columns(self) -> CsvSchemaBuilder:
        self._fields.clear()
        self._separators.clear()
        return self

    def set_allow_comments(self, allow: bool = True) -> CsvSchemaBuilder:
        if allow:
            _refuse(
                "set_allow_comments",
                "pyarrow's CSV reader has no comment lines; remove the lines starting with '#'",
            )
        return self

    def set_any_property_name(self, name: str) -> CsvSchemaBuilder:
        _refuse("set_any_property_name", "declare every column of the file")

    def disable_array_element_separator(self) -> CsvSchemaBuilder:
        """The schema's default element separator: each array column added with
        ``add_array_column`` has its own, so this changes nothing in reading."""
        return self

    def remove_array_element_separator(self, index: int) -> CsvSchemaBuilder:
        _refuse(
            "remove_array_element_separator",
            "give the column the separator it is to have in add_array_column",
        )

    def set_array_element_separator(self, separator: str) -> CsvSchemaBuilder:
        """The schema's default element separator; see ``disable_array_element_separator``."""
        return self

    def set_column_separator(self, char: str) -> CsvSchemaBuilder:
        """The column separator, a single char (default ``,``)."""
        self._options["column_separator"] = _single_char("Column separator", char)
        return self

    def disable_escape_char(self) -> CsvSchemaBuilder:
        """No escape char, the default."""
        return self

    def set_escape_char(self, char: str) -> CsvSchemaBuilder:
        _single_char("Escape char", char)
        _refuse(
            "set_escape_char",
            "pyarrow's CSV reader takes the character after the escape char as it is, where "
            "Flink's reads \\t, \\n, \\r and \\0 as control characters; quote the values "
            "instead (a quote inside a quoted value is written twice)",
        )

    def set_line_separator(self, separator: str) -> CsvSchemaBuilder:
        """For writing only: reading recognises ``\\n``, ``\\r`` and ``\\r\\n``."""
        return self

    def set_null_value(self, null_value: str) -> CsvSchemaBuilder:
        """The text that stands for null (default: none, an empty field is ``''`` or,
        in a number column, an error)."""
        self._options["null_value"] = str(null_value)
        return self

    def disable_quote_char(self) -> CsvSchemaBuilder:
        """No quoting: a ``"`` is a character like any other."""
        self._options["quote_char"] = None
        return self

    def set_quote_char(self, char: str) -> CsvSchemaBuilder:
        """The quote char (default ``"``)."""
        self._options["quote_char"] = _single_char("Quote char", char)
        return self

    def set_skip_first_data_row(self, skip: bool = True) -> CsvSchemaBuilder:
        """Skip the first data row (the row after the header, if one is used)."""
        self._options["skip_first_data_row"] = bool(skip)
        return self

    def set_strict_headers(self, strict: bool = True) -> CsvSchemaBuilder:
        """With a header: fail when its names are not the columns' names, in order."""
        self._options["strict_headers"] = bool(strict)
        return self

    def set_use_header(self, use: bool = True) -> CsvSchemaBuilder:
        """The first row of each file is a header, not data."""
        self._options["use_header"] = bool(use)
        return self

    def size(self) -> int:
        return len(self._fields)

    def __len__(self) -> int:
        return self.size()


class CsvReaderFormat(StreamFormat):
    """The ``StreamFormat`` of CSV files with a ``CsvSchema``; records are Rows typed
    ``Types.ROW_NAMED`` with the schema's columns::

        source = FileSource.for_record_stream_format(
            CsvReaderFormat.for_schema(schema), CSV_FILE_PATH).build()
    """

    def __init__(self, schema: CsvSchema) -> None:
        super().__init__("UTF-8")
        self._schema = schema
        self._columns = RowColumns(check_row_type(schema._row_type, "CsvReaderFormat"))

    @staticmethod
    def for_schema(schema: CsvSchema) -> CsvReaderFormat:
        """The format of files with ``schema``."""
        if not isinstance(schema, CsvSchema):
            msg = f"CsvReaderFormat.for_schema needs a CsvSchema; got {type(schema).__name__}"
            raise TypeError(msg)
        return CsvReaderFormat(schema)

    # -- the FileSource's side ---------------------------------------------------------
    columnar = True

    def produced_type(self) -> TypeInformation:
        return self._columns.type_info

    def open_split(self, split: FileSplit) -> _CsvSplitReader:
        return _CsvSplitReader(self._schema, self._columns, split)

    def __repr__(self) -> str:
        return f"CsvReaderFormat({self._schema})"


class _BadRowError(Exception):
    """Row ``index`` of the rows being converted holds a bad value: ``error`` says which."""

    def __init__(self, index: int, error: FileFormatError) -> None:
        super().__init__(index)
        self.index = index
        self.error = error


class _CsvSplitReader:
    """Reads one file's records, a ColumnBatch a ``read``, keeping ``split.lines`` at the
    number of data records handed over."""

    def __init__(self, schema: CsvSchema, columns: RowColumns, split: FileSplit) -> None:
        import fsspec  # noqa: PLC0415

        self._schema = schema
        self._columns = columns
        self._split = split
        options = schema._options
        self._null_value: str | None = options["null_value"]
        # Records at the start of the file that are not data: the header, the first
        # data row skipped.
        self._header_rows = int(options["use_header"]) + int(options["skip_first_data_row"])
        self._skipped_by_parser = 0  # of those, rows the parser skipped for their width
        self._file = fsspec.open(split.path, "rb", compression="infer").open()
        # Watched for what Flink's reader refuses and pyarrow's does not: a blank line
        # among several columns, text after a closing quote, a quoted value never closed.
        self._watch = (
            CsvLineWatch(
                self._file, options["column_separator"], options["quote_char"], len(columns.names)
            )
            if options["quote_char"] is not None or len(columns.names) > 1
            else None
        )
        self._reader = self._open_reader()
        self._batch: Any = None  # the Arrow batch being handed over, and where in it
        self._at = 0
        # Its rows from _converted_at on, converted (None: not yet).
        self._converted: ColumnBatch | None = None
        self._converted_at = 0
        self._row_base = 0  # rows of the file (1-based) before self._batch
        self._first = True
        self._skip = self._header_rows + split.lines  # leading records not to hand over

    def _open_reader(self) -> Any:
        import pyarrow as pa  # noqa: PLC0415
        import pyarrow.csv as pa_csv  # noqa: PLC0415

        options = self._schema._options
        names = self._columns.names
        quote = options["quote_char"]
        parse = pa_csv.ParseOptions(
            delimiter=options["column_separator"],
            quote_char=quote if quote is not None else False,
            double_quote=True,
            escape_char=False,
            newlines_in_values=quote is not None,
            # With one column, a blank line is a record of one empty value (Flink's
            # reader reads it so); with several the read fails there (``CsvLineWatch``).
            ignore_empty_lines=len(names) > 1,
            invalid_row_handler=self._invalid_row,
        )
        read = pa_csv.ReadOptions(
            column_names=list(names), use_threads=False, block_size=_BLOCK_SIZE
        )
        convert = pa_csv.ConvertOptions(
            column_types={name: pa.string() for name in names},
            strings_can_be_null=False,
            quoted_strings_can_be_null=False,
            null_values=[],
        )
        try:
            return pa_csv.open_csv(
                self._watch or self._file,
                read_options=read,
                parse_options=parse,
                convert_options=convert,
            )
        except pa.ArrowInvalid as exc:
            if "Empty CSV file" in str(exc):
                return None
            raise self._error(None, None, str(exc)) from None

    def _invalid_row(self, row: Any) -> str:
        # The header and a first data row skipped are not read as data: their width is
        # no error (Flink's reader does not look at them either, unless headers are strict).
        if row.number is not None and row.number <= self._header_rows:
            if row.number == 1 and self._schema._options["strict_headers"]:
                return "error"
            self._skipped_by_parser += 1
            return "skip"
        return "error"

    def read(self, limit: int) -> ColumnBatch | None:
        """Up to ``limit`` records; None at the end of the file."""
        while True:
            batch = self._batch
            if batch is None or self._at >= batch.num_rows:
                if not self._next_batch():
                    self._before_refused_row()
                    return None
                continue
            room = self._before_refused_row()
            if self._skip:
                taken = min(self._skip, batch.num_rows - self._at, room)
                self._check_header(batch)
                self._at += taken
                self._skip -= taken
                continue
            converted = self._converted
            if converted is None:
                converted = self._converted = self._convert_rest(batch)
            start = self._at - self._converted_at
            n = min(limit, len(converted) - start, room)
            self._at += n
            self._split.lines += n
            if self._at - self._converted_at == len(converted):
                self._converted = None
            return converted[start : start + n]

    def _before_refused_row(self) -> int:
        """How many more rows may be read before the row the watch refused (a large
        number when it refused none); raises the read's error once none may."""
        watch = self._watch
        if watch is None or watch.refused_row is None:
            return 1 << 62
        room = watch.refused_row - 1 - (self._row_base + self._at)
        if room <= 0:
            raise self._error(watch.refused_row, None, str(watch.refusal))
        return room

    def _convert_rest(self, batch: Any) -> ColumnBatch:
        """The rest of the Arrow batch, from ``self._at``, converted at once (a few calls
        of pyarrow.compute per column and block, not per poll); up to its first bad
        value when it has one, which the next conversion, starting there, raises."""
        self._converted_at = self._at
        rows = batch.slice(self._at)
        while True:
            try:
                return self._convert(rows)
            except _BadRowError as exc:
                if exc.index == 0:
                    raise exc.error from None
                rows = rows.slice(0, exc.index)

    def _next_batch(self) -> bool:
        import pyarrow as pa  # noqa: PLC0415

        if self._batch is not None:
            self._row_base += self._batch.num_rows
        self._batch = None
        self._converted = None
        self._at = 0
        if self._reader is None:
            return False
        try:
            self._batch = self._reader.read_next_batch()
        except StopIteration:
            return False
        except pa.ArrowInvalid as exc:
            raise self._error(None, None, str(exc)) from None
        if self._first:
            # Header rows the parser skipped are not in the batch.
            self._first = False
            self._skip -= self._skipped_by_parser
            self._row_base += self._skipped_by_parser
        return True

    def _check_header(self, batch: Any) -> None:
        options = self._schema._options
        if not (
            options["use_header"] and options["strict_headers"] and self._row_base + self._at == 0
        ):
            return
        header = [column[0].as_py() for column in batch.columns]
        for i, (name, expected) in enumerate(zip(header, self._columns.names, strict=True)):
            if name != expected:
                msg = (
                    f"Mismatched header column #{i + 1}: expected {expected!r}, actual "
                    f"{name!r}; name the columns in the schema as the header does, or "
                    "set_strict_headers(False)"
                )
                raise self._error(1, None, msg)

    def _convert(self, rows: Any) -> ColumnBatch:
        from weir.datastream.formats._csv_values import BadValueError, convert  # noqa: PLC0415

        arrays = []
        separators = self._schema._separators
        for column, field, separator in zip(
            rows.columns, self._columns.row_type, separators, strict=True
        ):
            try:
                arrays.append(convert(column, field.data_type, self._null_value, separator))
            except BadValueError as exc:
                row = self._row_base + self._at + exc.index + 1
                what = f"{exc.value!r} is not {exc.expected}"
                raise _BadRowError(exc.index, self._error(row, field.name, what)) from None
        return self._columns.batch(arrays)

    def _error(self, row: int | None, column: str | None, what: str) -> FileFormatError:
        where = self._split.path
        if row is not None:
            where += f", row {row}"
        if column is not None:
            where += f", column {column!r}"
        msg = (
            f"CsvReaderFormat: cannot read {where}: {what}. Correct the file, or change the "
            "CsvSchema to match it (the column's type, set_null_value for the text that "
            "stands for null)"
        )
        return FileFormatError(msg)

    def close(self) -> None:
        self._reader = None
        self._file.close()
