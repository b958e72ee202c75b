"""RecordWriter: partitions a task's output batches, fills buffers and writes them.

Records are routed a whole batch at a time into per-subpartition pending lists; a
pending list is serialized with ONE ``serialize_batch`` call once it holds about a
segment's worth of records. How many records fit is estimated from the size of the
buffers serialized before, so no record is ever serialized on its own. Partial lists
go out when the task's buffer timeout fires (``BufferTimeout``, served by the task's
mailbox loop between batches), and when the task finishes.

The task thread calls everything here; the one other caller is the task's
``OutputFlusher``, which sends the partial lists of a task stuck in one long batch
(``flush_if``). Each public method holds the writer's lock, taken once per batch.

Timestamps travel beside the records: a subpartition whose pending records carry
timestamps keeps a parallel list, and its buffer is written with
``serialize_timestamped``; streams without event time never build that list. A batch
of columns carries them as an array (``weir.taskmanager.operators.base``), written as
a column of its buffers.
Watermarks and idleness are broadcast as events to every subpartition after the
records pending before them, so they stay in order with the data.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

from weir.core import config
from weir.core.columnar import ColumnBatch, batch_column, project
from weir.core.deployment import ResultPartitionDescriptor
from weir.core.errors import RecordTooLargeError, WeirError
from weir.core.field_access import field_of
from weir.core.job_graph import PartitionerKind
from weir.core.key_groups import PyFlinkKeyHasher, compute_operator_index_for_key_group
from weir.core.serializers import (
    serialize_batch,
    serialize_columnar,
    serialize_timestamped,
    unpicklable_record_error,
)
from weir.core.type_coders import DeclaredTypeCoder
from weir.taskmanager.network.api import ResultPartitionWriter
from weir.taskmanager.task_events import EndOfData, Watermark, WatermarkStatus, serialize_event
from weir.taskmanager.user_code import load_user_code

# A first buffer is cut after this many records, before any size is known; small
# enough that even large records give a buffer of a few segments at most.
_INITIAL_RECORDS_PER_BUFFER = 128
_MAX_RECORDS_PER_BUFFER = 1 << 16
# Key -> subpartition memo for KEY_GROUP edges: a dict hit costs far less than hashing
# the key as PyFlink does (pickle, Java hashCode, murmur: microseconds). Cleared when it
# grows past this, so a high-cardinality key space costs memory in proportion to this
# bound only.
_ROUTE_CACHE_LIMIT = 1 << 16
# A buffer of columns holds up to this many segments' worth of rows (32 KiB segments: 1
# MiB, some 26,000 bids of four longs and a timestamp). What a buffer costs whatever its
# size (its frame, a lock and a wake-up at each end, the Arrow stream's header, one pass
# of the consumer's operator over it) is then paid per tens of thousands of rows, not per
# a few hundred, which is what lets columns run at the speed of their arithmetic. A
# record buffer stays about one segment. Bounded as every buffer is: a subpartition
# queues at most ``taskmanager.network.memory.max-buffers-per-channel`` (10) of them.
_COLUMN_BUFFER_SEGMENTS = 32
# The widest range of integer keys a column of keys is routed through a table for (4
# bytes a key: 4 MiB at most); wider, through the memo.
_ROUTE_TABLE_LIMIT = 1 << 20
_END_OF_DATA = serialize_event(EndOfData())


class PartitionerError(WeirError, ValueError):
    """A custom partitioner returned a channel out of range."""


Timestamps = list[int | None] | Any | None
"""A list, or a batch of columns' int64 array (``weir.taskmanager.operators.base``)."""


def _timestamp_list(timestamps: Timestamps) -> list[int | None] | None:
    if timestamps is None or isinstance(timestamps, list):
        return timestamps
    return timestamps.tolist()  # type: ignore[no-any-return]


def _key_selector(obj: Any) -> Callable[[Any], Any]:
    return obj.get_key if hasattr(obj, "get_key") else obj  # type: ignore[no-any-return]


# Long.MIN_VALUE, as Flink reports a watermark that was never set.
_NO_WATERMARK = -(1 << 63)


class RecordWriter:
    """Writes one output edge of a task (one ResultPartition)."""

    def __init__(
        self,
        writer: ResultPartitionWriter,
        descriptor: ResultPartitionDescriptor,
        *,
        segment_size: int,
        compress: bool = False,
        rng: random.Random | None = None,
        max_frame_size: int = config.MAX_FRAME_SIZE.default,
        operator_name: str = "",
    ) -> None:
        """``max_frame_size``: the largest buffer written (one frame on the wire); a
        larger one is split, and a record that does not fit alone fails the task.
        ``operator_name``: the name of the operator whose output this is, for errors
        about its records (its id when not given)."""
        edge = descriptor.edge
        self.operator_name = operator_name or str(edge.source_operator)
        self._writer = writer
        self._emit_buffer = writer.emit
        self.descriptor = descriptor
        self.source_operator = edge.source_operator
        self.output_tag = edge.output_tag
        """The side output this edge carries ("" for the main output)."""
        self._serializer = edge.serializer
        self._compress = compress
        self._segment_size = segment_size
        self._max_frame_size = max_frame_size
        self._rng = rng or random.Random()  # noqa: S311 - spreading load, not security
        n = descriptor.num_subpartitions
        self._n = n
        self._pending: list[list[Any]] = [[] for _ in range(n)]
        self._pending_ts: list[list[int | None] | None] = [None] * n
        self._records_per_buffer = _INITIAL_RECORDS_PER_BUFFER
        self.buffers_written = 0
        self.records_written = 0
        self.bytes_written = 0
        self.last_watermark = _NO_WATERMARK
        """The last watermark sent downstream (Flink's currentOutputWatermark)."""
        kind = edge.partitioner
        payload = load_user_code(edge.partitioner_payload) if edge.partitioner_payload else {}
        self._key_field: int | str | None = None
        # The only fields the consumer reads (weir.graph.columns_read); None: all.
        self._columns_read: tuple[int | str, ...] | None = payload.get("columns_read")
        self._partitioner_kind = kind
        self._next = 0
        self._lock = threading.Lock()
        self._emit: Callable[[list[Any], Timestamps], None]
        self._code: Callable[[list[Any]], list[Any]] | None = None
        if kind is PartitionerKind.BROADCAST:
            # one pending list, serialized once and written to every subpartition
            self._pending = [[]]
            self._pending_ts = [None]
            self._emit = self._emit_broadcast
        elif kind is PartitionerKind.CUSTOM:
            partitioner = payload["partitioner"]
            self._partition = (
                partitioner.partition if hasattr(partitioner, "partition") else partitioner
            )
            self._key = _key_selector(payload["key_selector"])
            self._emit = self._emit_custom
        elif n == 1:
            self._emit = self._emit_single
        elif kind is PartitionerKind.KEY_GROUP:
            self._key = _key_selector(payload["key_selector"])
            self._key_group = PyFlinkKeyHasher(payload.get("key_type", "pickled")).key_group
            m = descriptor.consumer_max_parallelism
            p = descriptor.consumer_parallelism
            self._max_parallelism = m
            # subpartition i feeds consumer subtask consumer_subtasks[i]; route a key group
            # to the subpartition of the consumer that owns it
            sub_of_consumer = {c: i for i, c in enumerate(descriptor.consumer_subtasks)}
            self._route_of_group = [
                sub_of_consumer[compute_operator_index_for_key_group(m, p, g)] for g in range(m)
            ]
            self._route_cache: dict[Any, int] = {}
            self._route_table: Any = None  # integer key columns: see _column_routes
            self._route_table_low = 0
            self._key_field = field_of(self._key)
            self._emit = self._emit_key_group
        elif kind is PartitionerKind.REBALANCE:
            # Flink starts each writer at a random channel so that many producers do not
            # all hit consumer 0 first.
            self._next = self._rng.randrange(n)
            self._emit = self._emit_round_robin
        elif kind is PartitionerKind.RESCALE:
            self._emit = self._emit_round_robin
        elif kind is PartitionerKind.SHUFFLE:
            self._emit = self._emit_shuffle
        else:  # FORWARD and GLOBAL have exactly one target
            self._emit = self._emit_single
        # Which edges take a ColumnBatch as columns (see ``emit``).
        self._columnar = self._emit == self._emit_single or (
            self._emit == self._emit_key_group and self._key_field is not None
        )

    def code_after_routing(self, coder: DeclaredTypeCoder | None, operator: str) -> None:
        """Code this edge's records with ``coder`` once their keys (or partitions) are
        taken: PyFlink fuses the function of ``key_by`` (or ``partition_custom``) with the
        Python function before it, so the key selector reads a record as it was made, and
        the record is serialised after (``weir.graph.coded_outputs``). Called before the
        first ``emit``; with one subpartition no key is taken here, and the records are
        coded before they are routed."""
        if coder is None:
            return
        code = coder.batch_function(operator)
        self._code = code
        if self._emit not in (self._emit_key_group, self._emit_custom):
            route = self._emit

            def emit_coded(batch: list[Any], timestamps: Timestamps = None) -> None:
                route(code(batch) if type(batch) is list else batch, timestamps)

            self._emit = emit_coded

    # --- routing ---------------------------------------------------------------------

    def _add_timestamps(self, s: int, before: int, timestamps: Timestamps, count: int) -> None:
        """Keep subpartition ``s``'s timestamp list parallel to its ``before`` pending
        records plus ``count`` new ones."""
        pts = self._pending_ts[s]
        if pts is None:
            pts = self._pending_ts[s] = [None] * before
        if timestamps is None:
            pts.extend([None] * count)
        else:
            pts.extend(timestamps)

    def _emit_single(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        if type(batch) is ColumnBatch:
            self._write_columns(0, batch, timestamps)
            return
        pending = self._pending[0]
        if timestamps is not None or self._pending_ts[0] is not None:
            self._add_timestamps(0, len(pending), timestamps, len(batch))
        pending.extend(batch)
        if len(pending) >= self._records_per_buffer:
            self._drain_full(0)

    def _emit_broadcast(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        self._emit_single(batch, timestamps)

    def _emit_round_robin(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        n = self._n
        start = self._next
        pending = self._pending
        with_ts = timestamps is not None or any(t is not None for t in self._pending_ts)
        # record j goes to (start + j) % n, so subpartition s takes every n-th record
        # beginning at (s - start) % n
        for s in range(n):
            first = (s - start) % n
            if first < len(batch):
                part = batch[first::n]
                if with_ts:
                    self._add_timestamps(
                        s,
                        len(pending[s]),
                        None if timestamps is None else timestamps[first::n],
                        len(part),
                    )
                pending[s].extend(part)
        self._next = (start + len(batch)) % n
        self._drain_all_full()

    def _emit_shuffle(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        n = self._n
        rand = self._rng.randrange
        self._distribute(batch, [rand(n) for _ in batch], timestamps)

    def _emit_key_group(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        if type(batch) is ColumnBatch:
            column = batch_column(batch, self._key_field)
            if column is not None:
                self._distribute_columns(batch, self._column_routes(column), timestamps)
                return
            batch = batch.records()
            timestamps = _timestamp_list(timestamps)
        key = self._key
        cache = self._route_cache
        get = cache.get
        routes: list[int] = []
        append = routes.append
        for record in batch:
            k = key(record)
            try:
                r = get(k)
            except TypeError:  # an unhashable key (a list): route it without the memo
                r = self._route(k, cacheable=False)
            if r is None:
                r = self._route(k, cacheable=True)
            append(r)
        if self._code is not None:
            batch = self._code(batch)
        self._distribute(batch, routes, timestamps)

    # --- columns -----------------------------------------------------------------------

    def _column_routes(self, keys: Any) -> Any:
        """The subpartition of every key of a column, as an array. Integer keys over a
        range not much wider than a route table are looked up in one (filled once per
        key, as the memo is); other keys go through the memo one by one."""
        import numpy as np  # noqa: PLC0415 (columnar batches only)

        if keys.dtype.kind in "iu" and len(keys):
            low, high = int(keys.min()), int(keys.max())
            if high - low < _ROUTE_TABLE_LIMIT:
                table, table_low = self._route_table_for(low, high)
                slots = keys - table_low
                routes = table[slots]
                unknown = routes < 0
                if unknown.any():
                    for k in np.unique(keys[unknown]).tolist():
                        table[k - table_low] = self._route(k, cacheable=False)
                    routes = table[slots]
                return routes
        get = self._route_cache.get
        routes_list: list[int] = []
        append = routes_list.append
        for k in keys.tolist():
            r = get(k)
            if r is None:
                r = self._route(k, cacheable=True)
            append(r)
        return np.asarray(routes_list)

    def _route_table_for(self, low: int, high: int) -> tuple[Any, int]:
        """The route table (-1: not known yet) grown to cover keys ``low..high``, and the
        key of its first slot; a new one when the range moved too far."""
        import numpy as np  # noqa: PLC0415

        table, table_low = self._route_table, self._route_table_low
        if table is not None:
            new_low = min(low, table_low)
            new_high = max(high, table_low + len(table) - 1)
            if new_high - new_low < _ROUTE_TABLE_LIMIT:
                if new_low < table_low or new_high >= table_low + len(table):
                    grown = np.full(new_high - new_low + 1, -1, dtype=np.int32)
                    grown[table_low - new_low : table_low - new_low + len(table)] = table
                    table, table_low = grown, new_low
            else:
                table = None
        if table is None:
            table, table_low = np.full(high - low + 1, -1, dtype=np.int32), low
        self._route_table, self._route_table_low = table, table_low
        return table, table_low

    def _distribute_columns(self, batch: ColumnBatch, routes: Any, timestamps: Timestamps) -> None:
        import numpy as np  # noqa: PLC0415 (columnar batches only)

        for s in range(self._n):
            rows = np.flatnonzero(routes == s)
            if not len(rows):
                continue
            if len(rows) == len(routes):
                self._write_columns(s, batch, timestamps)
                continue
            # np.take: a fifth faster than indexing with the rows
            part = ColumnBatch({k: np.take(v, rows) for k, v in batch.columns.items()}, batch.spec)
            if timestamps is None or type(timestamps) is not list:
                part_ts = None if timestamps is None else np.take(timestamps, rows)
            else:
                part_ts = [timestamps[i] for i in rows.tolist()]
            self._write_columns(s, part, part_ts)

    def _write_columns(self, s: int, batch: ColumnBatch, timestamps: Timestamps) -> None:
        """Write a ColumnBatch to subpartition ``s`` as column buffers of about
        ``_COLUMN_BUFFER_SEGMENTS`` segments each, after the records pending there
        (their order is kept)."""
        if self._pending[s]:
            pending, pts = self._pending[s], self._pending_ts[s]
            self._pending[s], self._pending_ts[s] = [], None
            self._write(s, pending, pts)
        count = len(batch)
        row_bytes = sum(column.itemsize for column in batch.columns.values()) or 1
        if timestamps is not None:
            row_bytes += 8
        step = max(1, self._segment_size * _COLUMN_BUFFER_SEGMENTS // row_bytes)
        for start in range(0, count, step):
            part = batch[start : start + step] if count > step else batch
            part_ts = None if timestamps is None else timestamps[start : start + step]
            buffer = serialize_columnar(part, part_ts, self._compress)
            if len(buffer) > self._max_frame_size:
                # A huge row: the record path splits.
                self._write(s, part.records(), _timestamp_list(part_ts))
                continue
            self.records_written += len(part)
            self.bytes_written += len(buffer)
            self._emit_whole(s, buffer)

    def _route(self, key: Any, *, cacheable: bool) -> int:
        r = self._route_of_group[self._key_group(key, self._max_parallelism)]
        if cacheable:
            if len(self._route_cache) >= _ROUTE_CACHE_LIMIT:
                self._route_cache.clear()
            self._route_cache[key] = r
        return r

    def _emit_custom(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        n = self._n
        key = self._key
        partition = self._partition
        routes = [partition(key(x), n) for x in batch]
        for r in routes:
            if not isinstance(r, int) or not 0 <= r < n:
                msg = (
                    f"the custom partitioner returned {r!r} for {n} partitions; it must "
                    f"return an int in [0, {n})"
                )
                raise PartitionerError(msg)
        if self._code is not None:
            batch = self._code(batch)
        self._distribute(batch, routes, timestamps)

    def _distribute(
        self, batch: list[Any], routes: list[int], timestamps: Timestamps = None
    ) -> None:
        if timestamps is None and not any(t is not None for t in self._pending_ts):
            appends = [p.append for p in self._pending]
            for record, r in zip(batch, routes, strict=True):
                appends[r](record)
        else:
            for s in range(self._n):
                if self._pending_ts[s] is None:
                    self._pending_ts[s] = [None] * len(self._pending[s])
            appends = [p.append for p in self._pending]
            ts_appends = [p.append for p in self._pending_ts]  # type: ignore[union-attr]
            stamps = timestamps if timestamps is not None else [None] * len(batch)
            for record, r, t in zip(batch, routes, stamps, strict=True):
                appends[r](record)
                ts_appends[r](t)
        self._drain_all_full()

    def emit(self, batch: list[Any], timestamps: Timestamps = None) -> None:
        """Route ``batch`` to its subpartitions; full buffers are written at once. A
        ColumnBatch crosses as columns on forward and single-target edges, and on key-group
        edges whose key is one field; elsewhere as its records."""
        with self._lock:
            if type(batch) is ColumnBatch:
                if not self._columnar:
                    batch = batch.records()
                    timestamps = _timestamp_list(timestamps)
                elif self._columns_read is not None:
                    batch = project(batch, self._columns_read)
            self._emit(batch, timestamps)

    # --- watermarks ----------------------------------------------------------------------

    def emit_watermark(self, watermark: int) -> None:
        """Send ``watermark`` to every consumer, after the records pending before it."""
        with self._lock:
            self._flush()
            self.last_watermark = watermark
            self._writer.broadcast_event(serialize_event(Watermark(watermark)))

    def emit_watermark_status(self, idle: bool) -> None:
        with self._lock:
            self._flush()
            self._writer.broadcast_event(serialize_event(WatermarkStatus(idle)))

    # --- buffers -----------------------------------------------------------------------

    def _drain_all_full(self) -> None:
        limit = self._records_per_buffer
        for s, pending in enumerate(self._pending):
            if len(pending) >= limit:
                self._drain_full(s)

    def _drain_full(self, s: int) -> None:
        pending = self._pending[s]
        pts = self._pending_ts[s]
        while len(pending) >= self._records_per_buffer:
            limit = self._records_per_buffer
            if len(pending) == limit:
                self._pending[s] = []
                self._pending_ts[s] = None
                self._write(s, pending, pts)
                return
            chunk = pending[:limit]
            del pending[:limit]
            chunk_ts = None
            if pts is not None:
                chunk_ts = pts[:limit]
                del pts[:limit]
            self._write(s, chunk, chunk_ts)

    def _serialize(self, records: list[Any], timestamps: list[int | None] | None) -> bytes:
        try:
            if timestamps is None:
                return serialize_batch(records, self._serializer, self._compress)
            return serialize_timestamped(records, timestamps, self._serializer, self._compress)
        except Exception as exc:
            # Costs nothing until a buffer fails; then find the record that did it.
            error = unpicklable_record_error(
                records, f"operator {self.operator_name!r}", "the next task"
            )
            if error is None:
                raise
            raise error from exc

    def _within_frames(
        self, records: list[Any], timestamps: list[int | None] | None, buffer: bytes
    ) -> list[bytes]:
        """``buffer`` (of ``records``) is larger than a frame: halve the records until
        each part fits. Rare, and one check per buffer on the common path."""
        if len(buffer) <= self._max_frame_size:
            return [buffer]
        if len(records) == 1:
            raise self._record_too_large(records[0], len(buffer))
        half = len(records) // 2
        parts = []
        for part, part_ts in (
            (records[:half], None if timestamps is None else timestamps[:half]),
            (records[half:], None if timestamps is None else timestamps[half:]),
        ):
            parts += self._within_frames(part, part_ts, self._serialize(part, part_ts))
        return parts

    def _record_too_large(self, record: Any, size: int) -> RecordTooLargeError:
        limit = self._max_frame_size
        msg = (
            f"a record of {size} bytes serialized ({type(record).__name__}, output of "
            f"operator {self.operator_name!r}) is larger than the network frame limit of "
            f"{limit} bytes ({limit / (1 << 20):g} MiB, {config.MAX_FRAME_SIZE.key}); "
            f"send smaller records (a file path or an object-store key instead of the "
            f"data), or raise the limit in the job's configuration, e.g. "
            f"config.set_string('{config.MAX_FRAME_SIZE.key}', "
            f"'{max(2 * limit, size) // (1 << 20) + 1} mb') (at most 1 gb)"
        )
        return RecordTooLargeError(msg)

    def _write(
        self, s: int, records: list[Any], timestamps: list[int | None] | None = None
    ) -> None:
        buffer = self._serialize(records, timestamps)
        size = len(buffer)
        count = len(records)
        # Aim the next buffer at one segment, from the bytes per record just measured.
        estimate = max(1, min(_MAX_RECORDS_PER_BUFFER, count * self._segment_size // size))
        self._records_per_buffer = estimate
        self.records_written += count
        self.bytes_written += size
        if size > self._max_frame_size:
            for part in self._within_frames(records, timestamps, buffer):
                self._emit_whole(s, part)
            return
        self._emit_whole(s, buffer)

    def _emit_whole(self, s: int, buffer: bytes) -> None:
        self.buffers_written += 1
        if self._partitioner_kind is PartitionerKind.BROADCAST:
            for sub in range(self._n):
                self._emit_buffer(sub, buffer)
        else:
            self._emit_buffer(s, buffer)

    def has_pending(self) -> bool:
        return any(self._pending)

    def pending_buffers(self) -> dict[int, list[bytes]]:
        """The partly filled buffers, serialized as ``flush`` would write them, per
        subpartition, without writing them: an unaligned checkpoint persists them as
        output channel state while they stay pending (they are sent after its barrier,
        possibly together with later records, which a restore produces again)."""
        out: dict[int, list[bytes]] = {}
        with self._lock:  # after a flush the OutputFlusher may be finishing
            for s, pending in enumerate(self._pending):
                if pending:
                    pts = self._pending_ts[s]
                    buffers = self._within_frames(pending, pts, self._serialize(pending, pts))
                    targets = (
                        range(self._n)
                        if self._partitioner_kind is PartitionerKind.BROADCAST
                        else (s,)
                    )
                    for sub in targets:
                        out.setdefault(sub, []).extend(buffers)
        return out

    def flush(self) -> None:
        """Write every partly filled buffer now (buffer timeout, end of input)."""
        with self._lock:
            self._flush()

    def flush_if(self, still_due: Callable[[], bool]) -> bool:
        """The ``OutputFlusher``'s flush, from its own thread: ``flush`` if the lock is
        free (the task thread is not inside this writer) and ``still_due()``, asked
        under the lock, holds. Returns whether it flushed."""
        if not self._lock.acquire(blocking=False):
            return False
        try:
            if not still_due():
                return False
            self._flush()
            return True
        finally:
            self._lock.release()

    def _flush(self) -> None:
        for s, pending in enumerate(self._pending):
            if pending:
                pts = self._pending_ts[s]
                self._pending[s] = []
                self._pending_ts[s] = None
                self._write(s, pending, pts)

    def finish(self) -> None:
        """Flush, then end every subpartition (END_OF_PARTITION)."""
        with self._lock:
            self._flush()
            self._writer.finish()

    def end_of_data(self) -> None:
        """Flush, then tell every subpartition that no more records follow."""
        with self._lock:
            self._flush()
            self._writer.broadcast_event(_END_OF_DATA)

    def release(self, cause: BaseException | None = None) -> None:
        # Not under the lock: releasing wakes an OutputFlusher blocked in emit while
        # holding it.
        for pending in self._pending:
            pending.clear()
        self._pending_ts = [None] * len(self._pending)
        self._writer.release(cause)


class BufferTimeout:
    """When the task flushes partly filled buffers (``execution.buffer-timeout.interval``).

    ``timeout_ms > 0``: flush every ``timeout_ms`` (Flink's output flusher period);
    ``0``: after each processed batch; ``-1``: never, only full buffers go out.
    """

    def __init__(self, timeout_ms: int, clock: Callable[[], float]) -> None:
        self.timeout_ms = timeout_ms
        self._clock = clock
        self._interval = timeout_ms / 1000.0
        self.flush_after_batch = timeout_ms == 0
        self.periodic = timeout_ms > 0
        self._deadline = clock() + self._interval if self.periodic else float("inf")

    def poll_timeout(self) -> float | None:
        """How long the task may block waiting for input (``None``: until woken)."""
        if not self.periodic:
            return None
        return max(0.0, self._deadline - self._clock())

    def rearm(self) -> None:
        """A flush just happened elsewhere (the ``OutputFlusher``, while the task was inside
        a long batch): the next periodic one is due an interval from now, as with Flink's
        fixed-rate flusher, not at once when the batch ends. Any thread."""
        if self.periodic:
            self._deadline = self._clock() + self._interval

    def due(self) -> bool:
        """True when a periodic flush is due; re-arms the deadline."""
        if not self.periodic:
            return False
        now = self._clock()
        if now < self._deadline:
            return False
        self._deadline = now + self._interval
        return True
