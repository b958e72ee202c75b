"""Functions over whole batches of records: Weir's own, beside PyFlink's per-record ones.

- ``MapBatchesFunction`` for ``DataStream.map_batches``: ``map_batches(batch)`` gets one
  batch in the format the stream asked for and returns the batch of its results (any
  length: it may filter and flat-map too), in the same format.
- ``BatchSinkFunction``: ``invoke_batch(batch, context)`` gets every batch the sink's
  task moves, as it comes: a list of records, or a ``ColumnBatch`` (its ``columns`` are
  numpy arrays by field name) when a batch function or a columnar source made it. The
  context's ``batch_timestamps`` are the records' timestamps, in order (None when the
  stream has none).

Both have ``open``/``close`` as every Function has; a plain callable works for
``map_batches`` too. A source reader's ``poll_batch`` may return a ``ColumnBatch``
(``ColumnBatch({"f0": array, ...}, ColumnSpec(("f0", ...)))``) to hand over columns.
``KeyedBatchFunction`` is for ``KeyedStream.map_batches``: one call per key of a batch.

Example, q1 of Nexmark over numpy columns::

    def to_euros(bids):
        return {**bids, "price": bids["price"] * 0.908}

    bids.map_batches(to_euros, output_type=bid_type, batch_format="numpy")
"""

from __future__ import annotations

import abc
from typing import Any

from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream.functions import Function, SinkFunction

__all__ = [
    "BatchSinkFunction",
    "ColumnBatch",
    "ColumnSpec",
    "KeyedBatchFunction",
    "MapBatchesFunction",
]


class MapBatchesFunction(Function):
    """``map_batches(batch) -> batch`` once per batch (see the module docstring)."""

    @abc.abstractmethod
    def map_batches(self, batch: Any) -> Any:
        pass


class BatchSinkFunction(SinkFunction):
    """A sink called once per batch: ``invoke_batch(batch, context)``. ``invoke``, for a
    single record, hands it on as a batch of one."""

    @abc.abstractmethod
    def invoke_batch(self, batch: Any, context: Any) -> None:
        pass

    def invoke(self, value: Any, context: Any) -> None:
        self.invoke_batch([value], context)


class KeyedBatchFunction(Function):
    """For ``KeyedStream.map_batches``: ``map_batches(key, batch)`` once per key of each
    batch the task moves, with that key's records of the batch (in their order, in the
    stream's batch format), returning the batch of results in the same format.

    Keyed state (``get_state`` in ``open``) is the key's during the call, as in a
    KeyedProcessFunction: read it once at the start and write it once at the end, and
    the key's state is read and written once per batch, whatever its number of records.
    A running count per key::

        class CountPerKey(KeyedBatchFunction):
            def open(self, runtime_context):
                self.count = runtime_context.get_state(
                    ValueStateDescriptor("count", Types.LONG())
                )

            def map_batches(self, key, records):
                count = self.count.value() or 0
                self.count.update(count + len(records))
                return [(key, count + len(records))]
    """

    @abc.abstractmethod
    def map_batches(self, key: Any, batch: Any) -> Any:
        pass
