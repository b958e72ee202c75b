"""``map_batches``: a user function called once per batch, in the batch format it asked
for (``weir.core.columnar``), instead of once per record.

The batch is the one the task already moves through its chain: watermarks, checkpoint
barriers and timers fall between batches, never inside one, exactly as for the
per-record operators. The function returns the batch of its results, of any length
(so it also filters and flat-maps), in the same format; a columnar result goes on as a
``ColumnBatch``, which a next batch function reads as it is and a per-record operator
takes as its records.

Timestamps: a result batch as long as its input keeps the input's timestamps, record
by record. A batch function that changes the length of a batch of a stream with event
timestamps cannot say which result came from which record, and is refused with what to
do (flat_map, or filter before it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from weir.core.columnar import (
    BatchFormat,
    ColumnBatch,
    ColumnSpec,
    as_records,
    from_format,
    key_column,
    to_format,
)
from weir.core.errors import WeirError
from weir.core.field_access import field_of
from weir.taskmanager.operators.base import (
    OperatorSetup,
    Output,
    StreamOperator,
    Timestamps,
    timestamp_list,
)
from weir.taskmanager.operators.functions import (
    close_function,
    key_selector,
    open_function,
    user_method,
)


class BatchLengthError(WeirError, ValueError):
    """A batch function changed the number of records of a batch with event timestamps."""


class MapBatchesOperator(StreamOperator):
    columnar = True
    """Takes a ``ColumnBatch`` as it comes (the chain converts batches only in front of
    operators that read records)."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        payload = setup.payload
        self.function = payload["function"]
        self.batch_format = BatchFormat.of(payload.get("batch_format", "list"))
        self.input_spec: ColumnSpec = payload.get("input_spec") or ColumnSpec()
        self.output_spec: ColumnSpec | None = payload.get("output_spec")

    def open(self, output: Output) -> None:
        super().open(output)
        open_function(self.function, self.setup.runtime_context)
        f = user_method(self.function, "map_batches", self.name)
        collect = output.collect
        batch_format, input_spec, output_spec = (
            self.batch_format,
            self.input_spec,
            self.output_spec,
        )
        name = self.name

        def process(batch: Sequence[Any], timestamps: Timestamps) -> None:
            result = from_format(
                f(to_format(batch, batch_format, input_spec)), batch_format, output_spec
            )
            if not len(result):
                return
            if timestamps is not None and len(result) != len(batch):
                msg = (
                    f"the batch function of {name!r} turned a batch of {len(batch)} records "
                    f"with event timestamps into {len(result)} records, so which result "
                    "came from which record (and has its timestamp) is unknown; return one "
                    "result per record, or filter (filter()) or flat_map() instead"
                )
                raise BatchLengthError(msg)
            if type(result) is not ColumnBatch:  # records: their timestamps a list too
                timestamps = timestamp_list(timestamps)
            collect(result, timestamps)  # type: ignore[arg-type]

        self.process = process  # type: ignore[assignment]

    def close(self) -> None:
        close_function(self.function)


class KeyedMapBatchesOperator(MapBatchesOperator):
    """``KeyedStream.map_batches``: the function once per key of each batch, with the
    key's records (in their order) in the batch format and the keyed state backend set
    to that key; results go on key by key, in the order the keys first came."""

    def __init__(self, setup: OperatorSetup) -> None:
        super().__init__(setup)
        selectors = setup.payload.get("key_selectors") or ()
        if not selectors or selectors[0] is None or setup.keyed_state_backend is None:
            msg = f"operator {self.name!r}: map_batches per key runs on a KeyedStream"
            raise ValueError(msg)
        self.key = key_selector(selectors[0])
        self.key_field = field_of(self.key)
        self.backend = setup.keyed_state_backend

    def open(self, output: Output) -> None:
        StreamOperator.open(self, output)
        open_function(self.function, self.setup.runtime_context)
        f = user_method(self.function, "map_batches", self.name)
        collect = output.collect
        batch_format, input_spec, output_spec = (
            self.batch_format,
            self.input_spec,
            self.output_spec,
        )
        backend, name = self.backend, self.name

        def process(batch: Sequence[Any], timestamps: Timestamps) -> None:
            if timestamps is not None:
                msg = (
                    f"map_batches per key of {name!r} runs on a stream with event "
                    "timestamps; its results are per key, not per record: assign the "
                    "timestamps after it, or use process() with a KeyedProcessFunction"
                )
                raise BatchLengthError(msg)
            results: list[Any] = []
            for k, group in self._groups(batch):
                backend.current_key = k
                given = to_format(group, batch_format, input_spec)
                result = from_format(f(k, given), batch_format, output_spec)
                if len(result):
                    results.extend(as_records(result))
            if results:
                collect(results, None)

        self.process = process  # type: ignore[assignment]

    def _groups(self, batch: Sequence[Any]) -> list[tuple[Any, Sequence[Any]]]:
        """The batch's records by key, keys in the order they first came, each group in
        its records' order (a ColumnBatch's groups stay columns)."""
        if type(batch) is ColumnBatch:
            keys = key_column(batch, self.key_field)
            if keys is not None:
                import numpy as np  # noqa: PLC0415

                keys_l = keys.tolist()
                rows: dict[Any, list[int]] = {}
                for i, k in enumerate(keys_l):
                    rows.setdefault(k, []).append(i)
                columns = batch.columns
                return [
                    (
                        k,
                        ColumnBatch({n: c[np.asarray(r)] for n, c in columns.items()}, batch.spec),
                    )
                    for k, r in rows.items()
                ]
        key = self.key
        groups: dict[Any, list[Any]] = {}
        for record in as_records(batch):
            groups.setdefault(key(record), []).append(record)
        return list(groups.items())
