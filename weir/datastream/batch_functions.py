"""Functions over whole batches of records: Weir's own, beside PyFlink's per-record ones.

- ``MapBatchesFunction`` for ``DataStream.map_batches``: ``map_batches(batch)`` gets one
  batch in the format the stream asked for and returns the batch of its results (any
  length: it may filter and flat-map too), in the same format.
- ``BatchSinkFunction``: ``invoke_batch(batch, context)`` gets every batch the sink's
  task moves, as it comes: a list of records, or a ``ColumnBatch`` (its ``columns`` are
  numpy arrays by field name) when a batch function or a columnar source made it.

Both have ``open``/``close`` as every Function has; a plain callable works for
``map_batches`` too. A source reader's ``poll_batch`` may return a ``ColumnBatch``
(``ColumnBatch({"f0": array, ...}, ColumnSpec(("f0", ...)))``) to hand over columns. Example, q1 of Nexmark over numpy columns::

    def to_euros(bids):
        return {**bids, "price": bids["price"] * 0.908}

    bids.map_batches(to_euros, output_type=bid_type, batch_format="numpy")
"""

from __future__ import annotations

import abc
from typing import Any

from weir.core.columnar import ColumnBatch, ColumnSpec
from weir.datastream.functions import Function, SinkFunction

__all__ = ["BatchSinkFunction", "ColumnBatch", "ColumnSpec", "MapBatchesFunction"]


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
