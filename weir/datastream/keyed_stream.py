"""``KeyedStream`` (``pyflink.datastream.data_stream.KeyedStream``): a DataStream
partitioned by key, with the keyed operations (reduce, process with state and timers,
windows, aggregations, queryable state)."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from weir.common.typeinfo import (
    PickledBytesTypeInfo,
    RowTypeInfo,
    TypeInformation,
    read_back,
)
from weir.common.types import Row
from weir.core.columnar import BatchFormat
from weir.core.job_graph import OperatorKind
from weir.datastream._aggregation import AccumulateReduceFunction, AccumulateType
from weir.datastream._column_specs import column_spec
from weir.datastream.batch_functions import KeyedBatchFunction
from weir.datastream.data_stream import DataStream, _output_type
from weir.datastream.functions import (
    FilterFunction,
    FlatMapFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    ReduceFunction,
    SinkFunction,
)
from weir.datastream.queryable_state_stream import (
    QueryableStateFunction,
    QueryableStateStream,
    queryable_state_descriptor,
)
from weir.graph.transformations import PartitionTransformation

if TYPE_CHECKING:
    from weir.datastream.data_stream import CloseableIterator, DataStreamSink
    from weir.datastream.stream_execution_environment import StreamExecutionEnvironment
    from weir.datastream.window import WindowAssigner
    from weir.datastream.windowed_stream import WindowedStream

__all__ = ["KeyedStream"]


class KeyedStream(DataStream):
    """A stream partitioned by key; state and ``reduce``/``sum``/... are per key."""

    def __init__(
        self,
        env: StreamExecutionEnvironment,
        transformation: PartitionTransformation,
        key_selector: Callable[[Any], Any],
        origin_stream: DataStream,
        key_type: TypeInformation | None = None,
    ) -> None:
        super().__init__(env, transformation)
        self._key_selector = key_selector
        self._origin_stream = origin_stream
        self._key_type = key_type
        self._original_type = origin_stream._transformation.output_type

    def _keyed(
        self, kind: OperatorKind, name: str, function: Any, output_type: TypeInformation | None
    ) -> DataStream:
        return self._one_input(
            kind, name, {"function": function, "key_selectors": [self._key_selector]}, output_type
        )

    def map(
        self, func: Callable[[Any], Any] | MapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, MapFunction) and not callable(func):
            msg = "The input must be a MapFunction or a callable function"
            raise TypeError(msg)
        return self._keyed(OperatorKind.MAP, "Map", func, _output_type(output_type))

    def flat_map(
        self,
        func: Callable[[Any], Any] | FlatMapFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        if not isinstance(func, FlatMapFunction) and not callable(func):
            msg = "The input must be a FlatMapFunction or a callable function"
            raise TypeError(msg)
        return self._keyed(OperatorKind.FLAT_MAP, "FlatMap", func, _output_type(output_type))

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        if not isinstance(func, FilterFunction) and not callable(func):
            msg = "The input must be a FilterFunction or a callable function"
            raise TypeError(msg)
        return self._keyed(OperatorKind.FILTER, "Filter", func, self._original_type)

    def reduce(self, func: Callable[[Any, Any], Any] | ReduceFunction) -> DataStream:
        """A running reduce per key: emits the reduced value after every element."""
        if not isinstance(func, ReduceFunction) and not callable(func):
            msg = "The input must be a ReduceFunction or a callable function"
            raise TypeError(msg)
        return self._keyed(OperatorKind.REDUCE, "Reduce", func, self._original_type)

    def process(
        self,
        func: KeyedProcessFunction,  # type: ignore[override]
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        if not isinstance(func, KeyedProcessFunction):
            msg = "KeyedProcessFunction is required for KeyedStream."
            raise TypeError(msg)
        return self._keyed(
            OperatorKind.KEYED_PROCESS, "KEYED PROCESS", func, _output_type(output_type)
        )

    def map_batches(  # type: ignore[override]
        self,
        func: Callable[[Any, Any], Any] | KeyedBatchFunction,
        output_type: TypeInformation | None = None,
        batch_format: str = "list",
    ) -> DataStream:
        """Weir's own: ``func(key, records)`` once per key of each batch, with the key's
        records of the batch in ``batch_format`` (as ``DataStream.map_batches``) and its
        keyed state set (see ``KeyedBatchFunction``). The results of a batch go on key by
        key, in the order the keys first came in it. The stream must carry no event
        timestamps: results are not records one to one."""
        fmt = BatchFormat.of(batch_format)
        if not callable(func) and not isinstance(func, KeyedBatchFunction):
            msg = "map_batches() needs a KeyedBatchFunction or a callable taking (key, batch)"
            raise TypeError(msg)
        input_spec = column_spec(self._original_type)
        if fmt is not BatchFormat.LIST and input_spec is None:
            msg = (
                f"map_batches(batch_format={fmt.value!r}) needs to know the fields of its "
                f"input, whose type is {self._original_type!r}: declare it on the operator "
                "before key_by, or use batch_format='list'"
            )
            raise TypeError(msg)
        declared = _output_type(output_type)
        return self._one_input(
            OperatorKind.KEYED_MAP_BATCHES,
            "KeyedMapBatches",
            {
                "function": func,
                "key_selectors": [self._key_selector],
                "batch_format": fmt.value,
                "input_spec": input_spec,
                "output_spec": column_spec(declared),
            },
            declared,
        )

    def window(self, window_assigner: WindowAssigner) -> WindowedStream:
        """Windows this keyed stream: elements are grouped by key and by the windows the
        assigner puts them in::

            >>> ds.key_by(lambda x: x[0]) \\
            ...     .window(TumblingEventTimeWindows.of(Time.seconds(10))) \\
            ...     .reduce(lambda a, b: (a[0], a[1] + b[1]))
        """
        from weir.datastream.windowed_stream import WindowedStream  # noqa: PLC0415

        return WindowedStream(self, window_assigner)

    def count_window(self, size: int, slide: int = 0) -> WindowedStream:
        """Tumbling windows of ``size`` elements per key, or sliding ones every ``slide``
        elements when ``slide`` is not 0."""
        from weir.datastream.window import (  # noqa: PLC0415
            CountSlidingWindowAssigner,
            CountTumblingWindowAssigner,
        )
        from weir.datastream.windowed_stream import WindowedStream  # noqa: PLC0415

        if slide == 0:
            return WindowedStream(self, CountTumblingWindowAssigner(size))
        return WindowedStream(self, CountSlidingWindowAssigner(size, slide))

    def as_queryable_state(
        self, queryable_state_name: str, state_descriptor: Any = None
    ) -> QueryableStateStream:
        """Publishes the stream as queryable state (Flink's ``asQueryableState``): a sink
        that keeps, per key, the latest element (with no descriptor, or a
        ValueStateDescriptor) or the reduction of its elements (a
        ReducingStateDescriptor), readable with
        ``weir.queryablestate.QueryableStateClient`` while the job runs::

            >>> counts.key_by(lambda c: c[0]).as_queryable_state("counts")
        """
        descriptor = queryable_state_descriptor(
            queryable_state_name,
            state_descriptor,
            queryable_state_name,
            self._original_type,
        )
        self.process(QueryableStateFunction(descriptor)).name(
            f"Queryable state: {queryable_state_name}"
        )
        return QueryableStateStream(queryable_state_name, descriptor, self._key_type)

    def _accumulate(self, position: int | str, kind: AccumulateType) -> DataStream:
        return self.reduce(AccumulateReduceFunction(position, kind))

    def sum(self, position_to_sum: int | str = 0) -> DataStream:
        """A running sum of the field per key; the other fields are the key's first record's."""
        return self._accumulate(position_to_sum, AccumulateType.SUM)

    def min(self, position_to_min: int | str = 0) -> DataStream:
        """The running minimum of the field; the other fields are the key's first record's."""
        return self._accumulate(position_to_min, AccumulateType.MIN)

    def max(self, position_to_max: int | str = 0) -> DataStream:
        return self._accumulate(position_to_max, AccumulateType.MAX)

    def min_by(self, position_to_min_by: int | str = 0) -> DataStream:
        """The whole record with the smallest value in the field (the first one on ties)."""
        return self._accumulate(position_to_min_by, AccumulateType.MIN_BY)

    def max_by(self, position_to_max_by: int | str = 0) -> DataStream:
        return self._accumulate(position_to_max_by, AccumulateType.MAX_BY)

    def key_by(
        self,
        key_selector: Callable[[Any], Any] | KeySelector,
        key_type: TypeInformation | None = None,
    ) -> KeyedStream:
        return self._origin_stream.key_by(key_selector, key_type)

    def _values(self) -> DataStream:
        """The elements again as a plain DataStream (keyed partitioning kept), as PyFlink."""
        out = self.map(lambda x: x, output_type=self._original_type)
        out._transformation.name = "_keyed_stream_values_operator"
        return out

    def union(self, *streams: DataStream) -> DataStream:
        return self._values().union(*streams)

    def project(self, *field_indexes: int) -> DataStream:
        return self._values().project(*field_indexes)

    def add_sink(self, sink_func: SinkFunction | Callable[..., Any]) -> DataStreamSink:
        return self._values().add_sink(sink_func)

    def sink_to(self, sink: Any) -> DataStreamSink:
        return self._values().sink_to(sink)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        return self._values().print(sink_identifier)

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> CloseableIterator | list[Any]:
        """As PyFlink's: the keyed stream's records as it holds them, ``Row(f0=key,
        f1=record)``, where a key or a record of no declared type is its pickled bytes (a
        ``bytearray``)::

            for row in keyed.execute_and_collect():
                key, value = pickle.loads(row.f0), row.f1
        """
        internal = _InternalKeyedRecord(
            self._key_selector,
            pickle_key=_is_pickled(self._key_type),
            pickle_value=_is_pickled(self._original_type),
        )
        # As PyFlink's: the rows are made where the key is (at the parallelism of the stream
        # keyed) and read by the one collecting subtask, so a sequential input keeps its order.
        origin = self._origin_stream._transformation
        rows = self._origin_stream.map(internal)
        rows._transformation.parallelism = origin.parallelism
        if getattr(origin, "non_parallel", False):
            rows._transformation.parallelism = 1
        return rows.execute_and_collect(job_execution_name, limit)

    def get_type(self) -> TypeInformation:
        """As PyFlink's: the type of the stream its key_by made, a Row of the key and the
        record (``f0``, ``f1``)."""
        return RowTypeInfo(
            [
                read_back(self._key_type or PickledBytesTypeInfo()),
                read_back(self._original_type or PickledBytesTypeInfo()),
            ],
            ["f0", "f1"],
        )

    def _record_type(self) -> TypeInformation | None:
        return self._original_type

    def _unsupported(self, what: str) -> Any:
        """``what`` names the operation with its preposition, as PyFlink's message does."""
        msg = f"{what} KeyedStream is not supported."
        raise Exception(msg)  # PyFlink raises a bare Exception here

    def shuffle(self) -> DataStream:
        return self._unsupported_partitioning()

    def rebalance(self) -> DataStream:
        return self._unsupported_partitioning()

    def rescale(self) -> DataStream:
        return self._unsupported_partitioning()

    def forward(self) -> DataStream:
        return self._unsupported_partitioning()

    def broadcast(self, *args: Any) -> Any:  # type: ignore[override]
        return self._unsupported_partitioning()

    def global_(self) -> DataStream:
        return self._unsupported_partitioning()

    def partition_custom(self, partitioner: Any, key_selector: Any) -> DataStream:
        return self._unsupported_partitioning()

    def _unsupported_partitioning(self) -> DataStream:
        msg = "Cannot override partitioning for KeyedStream."
        raise Exception(msg)  # PyFlink raises a bare Exception here

    def cache(self) -> Any:
        msg = "Cache for KeyedStream is not supported."
        raise Exception(msg)  # PyFlink's plain Exception

    def set_parallelism(self, parallelism: int) -> Any:
        return self._unsupported("Set parallelism for")

    def name(self, name: str) -> Any:
        return self._unsupported("Set name for")

    def get_name(self) -> str:
        return self._unsupported("Get name of")  # type: ignore[no-any-return]

    def uid(self, uid: str) -> Any:
        return self._unsupported("Set uid for")

    def set_uid_hash(self, uid_hash: str) -> Any:
        return self._unsupported("Set uid hash for")

    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        return self._unsupported("Set max parallelism for")  # type: ignore[no-any-return]

    def force_non_parallel(self) -> DataStream:
        return self._unsupported("Set force non-parallel for")  # type: ignore[no-any-return]

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        return self._unsupported("Set buffer timeout for")  # type: ignore[no-any-return]

    def start_new_chain(self) -> DataStream:
        return self._unsupported("Start new chain for")  # type: ignore[no-any-return]

    def disable_chaining(self) -> Any:
        return self._unsupported("Disable chaining for")

    def slot_sharing_group(self, slot_sharing_group: Any) -> Any:
        return self._unsupported("Setting slot sharing group for")


def _is_pickled(type_info: TypeInformation | None) -> bool:
    return type_info is None or isinstance(type_info, PickledBytesTypeInfo)


class _InternalKeyedRecord:
    """A keyed stream's record in PyFlink's internal form, ``Row(f0=key, f1=record)``."""

    def __init__(
        self, key_selector: Callable[[Any], Any], *, pickle_key: bool, pickle_value: bool
    ) -> None:
        self._key = key_selector
        self._pickle_key = pickle_key
        self._pickle_value = pickle_value

    def __call__(self, value: Any) -> Row:
        key = self._key(value)
        return Row(
            f0=bytearray(pickle.dumps(key, protocol=5)) if self._pickle_key else key,
            f1=bytearray(pickle.dumps(value, protocol=5)) if self._pickle_value else value,
        )
