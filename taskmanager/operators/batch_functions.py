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

from weir.core.columnar import BatchFormat, ColumnSpec, from_format, to_format
from weir.core.errors import WeirError
from weir.taskmanager.operators.base import OperatorSetup, Output, StreamOperator, Timestamps
from weir.taskmanager.operators.functions import close_function, open_function, user_method


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
            collect(result, timestamps)  # type: ignore[arg-type]

        self.process = process  # type: ignore[assignment]

    def close(self) -> None:
        close_function(self.function)
