"""Parquet files (mirrors ``pyflink.datastream.formats.parquet``):
``ParquetColumnarRowInputFormat`` reads Rows of a declared row type through
``FileSource.for_bulk_file_format``, with pyarrow::

    row_type = DataTypes.ROW([
        DataTypes.FIELD("a", DataTypes.INT()),
        DataTypes.FIELD("b", DataTypes.STRING()),
    ])
    source = FileSource.for_bulk_file_format(
        ParquetColumnarRowInputFormat(row_type), "file:///data/table").build()

The file's columns are found by the fields' names (ignoring case unless
``is_case_sensitive``); a field the file lacks reads as null, as in Flink. A column must
hold the declared type as Parquet stores it (INT an INT32, BIGINT an INT64, STRING a
UTF8 string, DECIMAL(p, s) a decimal of p and s, ...): a file whose column has another
type fails, naming the file, the column and both types. Timestamps are read as wall-clock
time in UTC when ``is_utc_timestamp``, else in the time zone a JVM on the machine takes as
its default (``TZ``, else ``/etc/localtime``: ``local_zone``), to milliseconds.

Position in a file: the row group and the rows read of it, so a restored reader starts
at that row group and skips the rows read.
"""

from __future__ import annotations

from typing import Any

from weir.common.configuration import Configuration
from weir.common.typeinfo import TypeInformation
from weir.core.columnar import ColumnBatch
from weir.datastream.connectors._file_source_reader import FileSplit
from weir.datastream.connectors.file_system import BulkFormat
from weir.datastream.formats._typed_columns import (
    FileFormatError,
    RowColumns,
    arrow_type,
    check_row_type,
)
from weir.table.types import RowType, TimestampType

__all__ = ["ParquetColumnarRowInputFormat"]


class ParquetColumnarRowInputFormat(BulkFormat):
    """Reads the fields of ``row_type`` from Parquet files, ``batch_size`` rows at a time,
    as Rows (typed ``Types.ROW_NAMED`` with the fields), or as numpy columns for a
    consumer of columns. Only primitive types: no arrays, maps or rows in a column.

    ``hadoop_config``: Flink's Hadoop settings; files are read through fsspec, so it
    must be empty (configure the file system through fsspec).
    """

    def __init__(
        self,
        row_type: RowType,
        hadoop_config: Configuration | None = None,
        batch_size: int = 2048,
        is_utc_timestamp: bool = False,
        is_case_sensitive: bool = True,
    ) -> None:
        check_row_type(row_type, "ParquetColumnarRowInputFormat")
        for field in row_type:
            if str(field.data_type) == "ARRAY":
                msg = (
                    f"ParquetColumnarRowInputFormat: field {field.name!r} is an ARRAY; only "
                    "primitive types are supported for a column"
                )
                raise TypeError(msg)
        if hadoop_config is not None and hadoop_config.to_dict():
            msg = (
                "ParquetColumnarRowInputFormat: Weir reads files through fsspec, not Hadoop; "
                f"the Hadoop settings {sorted(hadoop_config.to_dict())} would be ignored. "
                "Pass no hadoop_config and configure the file system through fsspec"
            )
            raise ValueError(msg)
        if batch_size <= 0:
            msg = f"ParquetColumnarRowInputFormat: batch_size must be positive; got {batch_size}"
            raise ValueError(msg)
        self._columns = RowColumns(row_type)
        self._batch_size = int(batch_size)
        self._utc = bool(is_utc_timestamp)
        self._case_sensitive = bool(is_case_sensitive)

    def produced_type(self) -> TypeInformation:
        return self._columns.type_info

    def open_split(self, split: FileSplit) -> _ParquetSplitReader:
        return _ParquetSplitReader(self, split)

    def __repr__(self) -> str:
        return f"ParquetColumnarRowInputFormat({self._columns.row_type!r})"


class _ParquetSplitReader:
    """Reads one file's rows, a ColumnBatch a ``read``, keeping ``split.offset`` at the row
    group being read and ``split.lines`` at the rows of it handed over."""

    def __init__(self, fmt: ParquetColumnarRowInputFormat, split: FileSplit) -> None:
        import fsspec  # noqa: PLC0415
        import pyarrow.parquet as pq  # noqa: PLC0415

        self._format = fmt
        self._split = split
        # The zone of the timestamps' wall-clock time, found once per file.
        self._zone = "UTC" if fmt._utc else local_zone()
        self._file = fsspec.open(split.path, "rb").open()
        try:
            self._parquet = pq.ParquetFile(self._file)
        except Exception as exc:  # pyarrow's errors for a file that is no Parquet vary
            self._file.close()
            msg = f"ParquetColumnarRowInputFormat: {split.path} is not a readable Parquet file"
            raise FileFormatError(msg) from exc
        # The file's column of each field (None: the file has none, the field is null).
        self._sources = self._match_columns()
        self._batches: Any = None  # the row group's batches, and the batch being read
        self._batch: Any = None
        self._at = 0

    def _match_columns(self) -> list[str | None]:
        schema = self._parquet.schema_arrow
        names = schema.names
        sources: list[str | None] = []
        for field in self._format._columns.row_type:
            if self._format._case_sensitive:
                found = [n for n in names if n == field.name]
            else:
                found = [n for n in names if n.lower() == field.name.lower()]
            if len(found) > 1:
                msg = (
                    f"ParquetColumnarRowInputFormat: {self._split.path} has the columns "
                    f"{found}, which all match field {field.name!r} ignoring case; read it "
                    "with is_case_sensitive=True"
                )
                raise FileFormatError(msg)
            if not found:
                sources.append(None)
                continue
            stored = schema.field(found[0]).type
            if not _compatible(stored, field.data_type):
                msg = (
                    f"ParquetColumnarRowInputFormat: {self._split.path}, column {found[0]!r} "
                    f"holds {stored}, which is not the declared {field.data_type!r} "
                    f"({arrow_type(field.data_type)}); declare the field with the type the "
                    "file has"
                )
                raise FileFormatError(msg)
            sources.append(found[0])
        return sources

    def read(self, limit: int) -> ColumnBatch | None:
        """Up to ``limit`` rows; None at the end of the file."""
        split = self._split
        while True:
            batch = self._batch
            if batch is not None and self._at < batch.num_rows:
                n = min(limit, batch.num_rows - self._at)
                rows = batch.slice(self._at, n)
                self._at += n
                split.lines += n
                return self._convert(rows)
            if self._batches is not None:
                self._batch = next(self._batches, None)
                self._at = 0
                if self._batch is not None:
                    continue
                split.offset += 1  # the row group is read
                split.lines = 0
                self._batches = None
            if split.offset >= self._parquet.num_row_groups:
                return None
            self._open_row_group()

    def _open_row_group(self) -> None:
        """Batches of the row group ``split.offset``, past the ``split.lines`` rows read."""
        split = self._split
        columns = sorted({c for c in self._sources if c is not None})
        batches = self._parquet.iter_batches(
            batch_size=self._format._batch_size,
            row_groups=[split.offset],
            columns=columns,
            use_threads=False,
        )
        skip = split.lines
        self._batches = iter(batches)
        self._batch = None
        while skip:
            batch = next(self._batches, None)
            if batch is None:
                return
            if batch.num_rows > skip:
                self._batch, self._at = batch, skip
                return
            skip -= batch.num_rows

    def _convert(self, rows: Any) -> ColumnBatch:
        import pyarrow as pa  # noqa: PLC0415

        arrays = []
        for source, field in zip(self._sources, self._format._columns.row_type, strict=True):
            target = arrow_type(field.data_type)
            if source is None:
                arrays.append(pa.nulls(rows.num_rows, target))
                continue
            array = rows.column(source)
            if isinstance(field.data_type, TimestampType):
                array = _wall_clock(array, self._zone)
            elif array.type != target:
                array = array.cast(target)  # string from large_string, dictionary
            arrays.append(array)
        return self._format._columns.batch(arrays)

    def close(self) -> None:
        self._batches = None
        self._file.close()


def _compatible(stored: Any, data_type: Any) -> bool:
    import pyarrow as pa  # noqa: PLC0415

    target = arrow_type(data_type)
    if pa.types.is_dictionary(stored):
        stored = stored.value_type
    if pa.types.is_string(target):
        return pa.types.is_string(stored) or pa.types.is_large_string(stored)
    if pa.types.is_timestamp(target):
        return pa.types.is_timestamp(stored)
    return bool(stored == target)


def _wall_clock(array: Any, zone: str) -> Any:
    """The timestamps' wall-clock time in ``zone`` (UTC, or the local one), in
    milliseconds, zoneless (the stored value taken as an instant, as Flink takes it: in
    the local zone, a ``java.sql.Timestamp`` of it read in the JVM's default zone)."""
    import pyarrow as pa  # noqa: PLC0415
    import pyarrow.compute as pc  # noqa: PLC0415

    instants = array.cast(pa.timestamp(array.type.unit, tz="UTC")).cast(
        pa.timestamp("ms", tz="UTC"), safe=False
    )
    if zone == "UTC":
        return instants.cast(pa.timestamp("ms"))
    try:
        # local_timestamp reads an instant in the zone of its type.
        return pc.local_timestamp(instants.cast(pa.timestamp("ms", tz=zone)))
    except pa.ArrowInvalid:  # a time zone database pyarrow cannot find: Python's
        return _wall_clock_by_value(instants, zone)


def _wall_clock_by_value(instants: Any, zone: str) -> Any:
    import datetime  # noqa: PLC0415
    import zoneinfo  # noqa: PLC0415

    import pyarrow as pa  # noqa: PLC0415

    tz = zoneinfo.ZoneInfo(zone)
    epoch = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC)
    values: list[int | None] = []
    for ms in instants.cast(pa.int64()).to_pylist():
        if ms is None:
            values.append(None)
            continue
        offset = (epoch + datetime.timedelta(milliseconds=ms)).astimezone(tz).utcoffset()
        values.append(ms + (offset or datetime.timedelta()) // datetime.timedelta(milliseconds=1))
    return pa.array(values, pa.int64()).cast(pa.timestamp("ms"))


def local_zone() -> str:
    """The time zone a JVM on this machine takes as its default, as an IANA name: ``TZ``,
    else the zone ``/etc/localtime`` links to, else ``/etc/timezone``'s, else UTC."""
    import os  # noqa: PLC0415
    import zoneinfo  # noqa: PLC0415

    candidates = [os.environ.get("TZ", "").lstrip(":")]
    target = os.path.realpath("/etc/localtime")
    if "/zoneinfo/" in target:
        candidates.append(target.split("/zoneinfo/", 1)[1])
    try:
        with open("/etc/timezone", encoding="ascii") as names:
            candidates.append(names.read().strip())
    except (OSError, ValueError):
        pass
    for name in candidates:
        if not name:
            continue
        try:
            zoneinfo.ZoneInfo(name)
        except (ValueError, zoneinfo.ZoneInfoNotFoundError):
            return "UTC"  # a zone the JVM does not know either: it takes GMT
        return "UTC" if name in ("Etc/UTC", "Etc/GMT", "GMT", "UTC", "Etc/Universal") else name
    return "UTC"
