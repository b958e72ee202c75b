"""``KeyedStream.sum/min/max/min_by/max_by`` over a batch of columns: the running
aggregate of every record computed in one pass over the batch's columns, the key's
state read once per key before and written once after, with no Python call per record.

The results are those of the per-record reduce (``weir.datastream._aggregation``), record
for record: ``sum``, ``min`` and ``max`` give the key's first record with the field
replaced by the running value; ``min_by`` and ``max_by`` the record that holds the
smallest (largest) value so far, the earliest on ties. They go on as a ``ColumnBatch``
(the fields of the records they come from, taken from the batch's columns or, for a
key's earlier records, from its state), and the state keeps the very values the
per-record path keeps.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.core.columnar import ColumnBatch, batch_column, key_column

_KINDS = ("sum", "min", "max", "min_by", "max_by")


def accumulate_columns(
    kind: str,
    field: int | str,
    batch: ColumnBatch,
    *,
    key_field: int | str,
    backend: Any,
    value: Callable[[], Any],
    update: Callable[[Any], None],
) -> ColumnBatch | None:
    """The batch of results of ``batch``, its states updated; None when the batch lacks
    the columns (it then goes record by record)."""
    import numpy as np  # noqa: PLC0415 (columnar batches only)

    if kind not in _KINDS:
        return None
    keys = key_column(batch, key_field)
    values = (
        next(iter(batch.columns.values())) if batch.spec.is_scalar else batch_column(batch, field)
    )
    if keys is None or values is None or (batch.spec.is_scalar and field != 0):
        return None
    if not batch.spec.is_scalar and isinstance(field, str) and batch.spec.names is not None:
        position = batch.spec.names.index(field)
    else:
        position = field if isinstance(field, int) else 0
    keys_l = keys.tolist()
    values_l = values.tolist()
    # The key's record so far (state), as base rows before the batch's own rows.
    earlier: list[Any] = []
    base_of: dict[Any, int] = {}  # key -> the row of its accumulated record
    current: dict[Any, Any] = {}  # key -> the running value of the field
    for k in dict.fromkeys(keys_l):
        backend.current_key = k
        acc = value()
        if acc is not None:
            base_of[k] = len(earlier)
            earlier.append(acc)
            current[k] = acc if batch.spec.is_scalar else acc[position]
    offset = len(earlier)
    rows: list[int] = []
    running: list[Any] = []
    take_row = rows.append
    take_value = running.append
    by = kind.endswith("_by")
    smaller = kind.startswith("min")
    for i, (k, v) in enumerate(zip(keys_l, values_l, strict=True)):
        base = base_of.get(k)
        if base is None:
            base_of[k] = offset + i
            current[k] = v
        elif by:
            if (v < current[k]) if smaller else (v > current[k]):
                base_of[k] = offset + i
                current[k] = v
        elif kind == "sum":
            current[k] = current[k] + v
        elif (v < current[k]) if smaller else (v > current[k]):
            current[k] = v
        take_row(base_of[k])
        take_value(current[k])
    if earlier:
        before = _columns_of(earlier, batch)
        columns = {
            name: np.concatenate([before[name], column]) for name, column in batch.columns.items()
        }
    else:
        columns = batch.columns
    index = np.asarray(rows)
    out = {name: column[index] for name, column in columns.items()}
    if not by:
        out[list(out)[0 if batch.spec.is_scalar else position]] = np.asarray(running)
    # One state write per key: its last result, the value the per-record path keeps.
    last = {k: i for i, k in enumerate(keys_l)}
    at = np.asarray(list(last.values()))
    finals = ColumnBatch({name: column[at] for name, column in out.items()}, batch.spec)
    for k, record in zip(last, finals.records(), strict=True):
        backend.current_key = k
        update(record)
    return ColumnBatch(out, batch.spec)


def _columns_of(records: list[Any], like: ColumnBatch) -> dict[str, Any]:
    import numpy as np  # noqa: PLC0415

    if like.spec.is_scalar:
        name = next(iter(like.columns))
        return {name: np.asarray(records, dtype=like.columns[name].dtype)}
    fields = list(zip(*records, strict=True))
    return {
        name: np.asarray(values, dtype=column.dtype)
        for (name, column), values in zip(like.columns.items(), fields, strict=True)
    }
