"""Which columns a keyed edge's consumer reads, so that the producer sends only those.

A window with a built-in aggregate (``weir.datastream.aggregate_functions``) on aligned
windows with their default trigger (in event time with no allowed lateness and no side
output for late data; in processing time, where no record is late, with any) reads of
each record only its key field and the aggregate's value field: batches of columns cross
its input edge with just those columns (and the timestamps). Anything that would read a
record whole (a late record sent to a side output, a ``reduce`` or ``aggregate`` of the
user's) keeps every column. A record built from such a batch holds None in the fields
left out (``weir.core.columnar.project``); nothing on that path reads them.
"""

from __future__ import annotations

from typing import Any

from weir.core.field_access import field_of
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.graph.stream_graph import StreamEdge, StreamNode

__all__ = ["columns_read"]


def columns_read(edge: StreamEdge, consumer: StreamNode) -> tuple[int | str, ...] | None:
    """The fields (positions or names) ``consumer`` reads of the records of ``edge``; None
    when it may read them whole."""
    if edge.partitioner is not PartitionerKind.KEY_GROUP or edge.output_tag:
        return None
    if consumer.kind is not OperatorKind.WINDOW:
        return None
    payload: dict[str, Any] = consumer.payload
    fast = payload.get("fast_path")
    if not fast:
        return None
    # Processing time has no late records: lateness and a late-data tag change nothing.
    late = payload.get("allowed_lateness") or payload.get("late_data_tag") is not None
    if fast.get("event_time") and late:
        return None
    if payload.get("window_state") != "aggregating":
        return None
    builtin = getattr(payload.get("state_function"), "builtin", None)
    if not isinstance(builtin, tuple):
        return None
    selectors = payload.get("key_selectors") or [None]
    key_field = field_of(selectors[0])
    edge_key = edge.partitioner_payload.get("key_selector")
    if key_field is None or edge_key is None or field_of(edge_key) != key_field:
        return None
    value_field = builtin[1]
    return (key_field,) if value_field is None else (key_field, value_field)
