"""Batches of records held as columns, and the batch formats of ``map_batches``.

A ``ColumnBatch`` is what a batch function or a columnar source hands on: one array per
field (numpy), which the next batch function, a batch sink or the network reads as it
is, with no record ever built. It is also a ``Sequence`` of records, built on first use
and kept (``records()``), so an operator that reads records one by one takes it as it
takes a list: the chain turns it into its records in front of every operator that is
not columnar (``as_records``).

How a record is made of its fields (a tuple, a Row with field names, a lone value) is
the stream's declared type's business, which this module does not import: the user API
describes it in a ``ColumnSpec`` (``weir.datastream`` builds one from a
TypeInformation) and the runtime only calls it.

The formats a batch function may take and give (``BatchFormat``):

- ``list``: a list of records;
- ``numpy``: one array for a stream of single values, else a dict of arrays by field
  name (a tuple's fields are ``f0``, ``f1``, ... as in PyFlink);
- ``arrow``: a ``pyarrow.RecordBatch``;
- ``pandas``: a ``pandas.DataFrame``.

numpy, pyarrow and pandas are imported when a batch first needs them, so processes
that never see a columnar batch do not pay for the imports.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, overload

__all__ = [
    "BatchFormat",
    "ColumnBatch",
    "ColumnSpec",
    "as_records",
    "batch_column",
    "from_format",
    "project",
    "to_format",
]


class BatchFormat(enum.Enum):
    LIST = "list"
    NUMPY = "numpy"
    ARROW = "arrow"
    PANDAS = "pandas"

    @classmethod
    def of(cls, value: str | BatchFormat) -> BatchFormat:
        if isinstance(value, BatchFormat):
            return value
        try:
            return cls(value)
        except ValueError:
            choices = ", ".join(repr(f.value) for f in cls)
            msg = f"batch_format must be one of {choices}; got {value!r}"
            raise ValueError(msg) from None


@dataclass(frozen=True)
class ColumnSpec:
    """How the records of a stream are made of columns and back.

    ``names``: the fields' names, in order; None for a stream of single values (one
    column). ``make_record``: builds one record from its field values in order (a Row
    with these names, say); None makes tuples. ``numpy_dtypes``: per field, the numpy
    dtype its column takes (None: numpy decides from the values)."""

    names: tuple[str, ...] | None = None
    make_record: Callable[..., Any] | None = None
    numpy_dtypes: tuple[str | None, ...] | None = None

    @property
    def is_scalar(self) -> bool:
        return self.names is None


SCALAR = ColumnSpec()


class ColumnBatch(Sequence[Any]):
    """A batch of records held as one numpy array per field (see the module docstring).

    ``columns``: the arrays by field name, in field order, all of one length (for a
    stream of single values, one array under its spec's single name ``f0``)."""

    __slots__ = ("_records", "columns", "spec")

    def __init__(self, columns: Mapping[str, Any], spec: ColumnSpec) -> None:
        self.columns = dict(columns)
        self.spec = spec
        self._records: list[Any] | None = None

    def __len__(self) -> int:
        for column in self.columns.values():
            return len(column)
        return 0

    def records(self) -> list[Any]:
        """The batch's records, built once (tuples, Rows, or single values)."""
        records = self._records
        if records is None:
            records = self._records = _build_records(self.columns, self.spec)
        return records

    def __iter__(self) -> Iterator[Any]:
        return iter(self.records())

    @overload
    def __getitem__(self, index: int) -> Any: ...

    @overload
    def __getitem__(self, index: slice) -> ColumnBatch: ...

    def __getitem__(self, index: int | slice) -> Any:
        if isinstance(index, slice):
            return ColumnBatch({k: v[index] for k, v in self.columns.items()}, self.spec)
        return self.records()[index]

    def __repr__(self) -> str:
        return f"ColumnBatch({len(self)} records, columns {list(self.columns)})"


def _build_records(columns: Mapping[str, Any], spec: ColumnSpec) -> list[Any]:
    lists = [column.tolist() for column in columns.values()]
    if spec.is_scalar:
        return lists[0] if lists else []
    assert spec.names is not None
    if len(lists) < len(spec.names):  # projected (``project``): None in the fields left out
        rows = len(lists[0]) if lists else 0
        lists = [
            columns[name].tolist() if name in columns else [None] * rows for name in spec.names
        ]
    rows = zip(*lists, strict=True)
    make = spec.make_record
    if make is None:
        return list(rows)
    return [make(*values) for values in rows]


def project(batch: ColumnBatch, fields: Sequence[int | str]) -> ColumnBatch:
    """``batch`` with only the columns of ``fields`` (positions or names), for a consumer
    that reads nothing else: its records, if ever built, hold None in the fields left out.
    The batch itself when a field is not one of its columns, or nothing would be left
    out."""
    names = batch.spec.names
    if names is None:
        return batch
    kept: dict[str, Any] = {}
    for field in fields:
        if isinstance(field, int) and not -len(names) <= field < len(names):
            return batch
        name = names[field] if isinstance(field, int) else field
        column = batch.columns.get(name)
        if column is None:
            return batch
        kept[name] = column
    if not kept or len(kept) == len(batch.columns):
        return batch
    return ColumnBatch({name: kept[name] for name in names if name in kept}, batch.spec)


def as_records(batch: Sequence[Any]) -> list[Any]:
    """``batch`` as a list of records (itself when it is one)."""
    if type(batch) is list:
        return batch
    if isinstance(batch, ColumnBatch):
        return batch.records()
    return list(batch)


def _column_names(spec: ColumnSpec, width: int) -> tuple[str, ...]:
    return spec.names if spec.names is not None else tuple(f"f{i}" for i in range(width))


def _columns_of(batch: Sequence[Any], spec: ColumnSpec) -> dict[str, Any]:
    """The numpy columns of a batch (taken as they are from a ColumnBatch)."""
    import numpy as np  # noqa: PLC0415 (only columnar batches need numpy)

    if isinstance(batch, ColumnBatch):
        return batch.columns
    records = as_records(batch)
    if spec.is_scalar:
        return {"f0": np.asarray(records)}
    names = _column_names(spec, len(records[0]) if records else 0)
    dtypes = spec.numpy_dtypes or (None,) * len(names)
    fields = list(zip(*records, strict=True)) if records else [() for _ in names]
    return {
        name: np.asarray(values, dtype=dtype)
        for name, values, dtype in zip(names, fields, dtypes, strict=True)
    }


def to_format(batch: Sequence[Any], batch_format: BatchFormat, spec: ColumnSpec) -> Any:
    """``batch`` in ``batch_format``, for a batch function whose input has ``spec``."""
    if batch_format is BatchFormat.LIST:
        return as_records(batch)
    columns = _columns_of(batch, spec)
    if batch_format is BatchFormat.NUMPY:
        return next(iter(columns.values())) if spec.is_scalar else columns
    if batch_format is BatchFormat.ARROW:
        import pyarrow as pa  # noqa: PLC0415

        return pa.RecordBatch.from_arrays(
            [pa.array(column) for column in columns.values()], names=list(columns)
        )
    import pandas as pd  # noqa: PLC0415 (optional: the pandas format only)

    return pd.DataFrame(columns, copy=False)


def from_format(result: Any, batch_format: BatchFormat, spec: ColumnSpec | None) -> Sequence[Any]:
    """What a batch function returned in ``batch_format``, as a batch whose records have
    ``spec`` (a ColumnBatch for the columnar formats, the list itself for ``list``);
    without a spec (no declared output type) a lone array makes single values and
    several columns make tuples. Raises TypeError naming what was expected when the
    result is not of the format."""
    if batch_format is BatchFormat.LIST:
        if isinstance(result, list):
            return result
        if isinstance(result, ColumnBatch):
            return result
        if result is None:
            return []
        return list(result)
    columns = _columns_from(result, batch_format)
    if spec is None:
        single = batch_format is BatchFormat.NUMPY and not isinstance(result, Mapping)
        spec = SCALAR if single else ColumnSpec(tuple(columns))
    if spec.is_scalar and len(columns) != 1:
        msg = (
            f"the batch function returned {len(columns)} columns ({', '.join(columns)}) for a "
            "stream of single values; return one array, or declare an output_type of "
            "Types.TUPLE or Types.ROW_NAMED for several fields"
        )
        raise TypeError(msg)
    if not spec.is_scalar and spec.names is not None and len(columns) != len(spec.names):
        msg = (
            f"the batch function returned the columns {list(columns)}; its output_type has "
            f"the fields {list(spec.names)}"
        )
        raise TypeError(msg)
    lengths = {len(c) for c in columns.values()}
    if len(lengths) > 1:
        msg = f"the batch function returned columns of different lengths: {sorted(lengths)}"
        raise TypeError(msg)
    if spec.names is not None and list(columns) != list(spec.names):
        columns = dict(zip(spec.names, columns.values(), strict=True))
    if spec.numpy_dtypes is not None:
        # The declared types' widths: a FLOAT field is single precision, as PyFlink's
        # serialisation makes it, whatever the function computed it in.
        columns = {
            name: column if dtype is None or column.dtype == dtype else column.astype(dtype)
            for (name, column), dtype in zip(columns.items(), spec.numpy_dtypes, strict=True)
        }
    return ColumnBatch(columns, spec)


def _columns_from(result: Any, batch_format: BatchFormat) -> dict[str, Any]:
    import numpy as np  # noqa: PLC0415

    if batch_format is BatchFormat.NUMPY:
        if isinstance(result, np.ndarray):
            return {"f0": result}
        if isinstance(result, Mapping):
            return {str(k): np.asarray(v) for k, v in result.items()}
        msg = (
            "a batch function with batch_format='numpy' returns a numpy array (single "
            f"values) or a dict of arrays by field name; got {type(result).__name__}"
        )
        raise TypeError(msg)
    if batch_format is BatchFormat.ARROW:
        import pyarrow as pa  # noqa: PLC0415

        if isinstance(result, pa.Table):
            result = result.combine_chunks().to_batches()
            result = result[0] if result else pa.RecordBatch.from_pydict({})
        if not isinstance(result, pa.RecordBatch):
            msg = (
                "a batch function with batch_format='arrow' returns a pyarrow.RecordBatch; "
                f"got {type(result).__name__}"
            )
            raise TypeError(msg)
        return {
            name: column.to_numpy(zero_copy_only=False)
            for name, column in zip(result.schema.names, result.columns, strict=True)
        }
    import pandas as pd  # noqa: PLC0415

    if not isinstance(result, pd.DataFrame):
        msg = (
            "a batch function with batch_format='pandas' returns a pandas.DataFrame; "
            f"got {type(result).__name__}"
        )
        raise TypeError(msg)
    return {str(name): result[name].to_numpy() for name in result.columns}


def batch_column(batch: ColumnBatch, field: int | str | None) -> Any:
    """The column of ``field`` (a position or a name) of ``batch``; None when there is no
    such field (or no field was given)."""
    if field is None or batch.spec.is_scalar:
        return None
    if isinstance(field, int):
        names = batch.spec.names
        assert names is not None
        return batch.columns.get(names[field]) if -len(names) <= field < len(names) else None
    if batch.spec.make_record is None:
        return None  # tuples have no named fields: r["f0"] is no column of them
    return batch.columns.get(field)


def key_column(batch: ColumnBatch, field: int | str | None) -> Any:
    """``batch_column``, for a column of keys that operators group in dicts: None also
    when it holds a float NaN (a dict would take each NaN for a key of its own; the batch
    then goes record by record, its keys through the key selector's ``state_key``). An
    integer or string column costs one look at its dtype."""
    column = batch_column(batch, field)
    if column is not None and column.dtype.kind in "fc" and column.size:
        import numpy as np  # noqa: PLC0415 (columnar batches only)

        if np.isnan(column).any():
            return None
    return column
