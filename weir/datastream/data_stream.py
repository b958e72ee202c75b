"""``DataStream``, ``KeyedStream``, ``DataStreamSink`` and ``CloseableIterator`` (mirrors
``pyflink.datastream.data_stream``). Each call records a transformation; nothing runs until
the environment executes. ``KeyedStream`` lives in ``weir.datastream.keyed_stream`` and is
imported here, where PyFlink programs import it from."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, overload

from weir.common.typed_values import type_coder
from weir.common.typeinfo import (
    RowTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
    key_type_name,
    print_format_spec,
    read_back,
    serializer_kind_of,
    single_precision_spec,
)
from weir.common.watermark_strategy import WatermarkStrategy
from weir.core.columnar import BatchFormat
from weir.core.job_graph import OperatorKind, PartitionerKind
from weir.core.key_selectors import CodedKey, ConformedKeySelector
from weir.datastream._column_specs import column_spec
from weir.datastream.batch_functions import MapBatchesFunction
from weir.datastream.functions import (
    FilterFunction,
    FlatMapFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessFunction,
    SinkFunction,
)
from weir.datastream.output_tag import OutputTag
from weir.datastream.slot_sharing_group import SlotSharingGroup
from weir.datastream.state import MapStateDescriptor
from weir.graph.transformations import (
    ChainingStrategy,
    PartitionTransformation,
    PhysicalTransformation,
    SideOutputTransformation,
    Transformation,
    UnionTransformation,
)

if TYPE_CHECKING:
    from weir.datastream.connected_streams import BroadcastConnectedStream, ConnectedStreams
    from weir.datastream.stream_execution_environment import StreamExecutionEnvironment
    from weir.datastream.window import WindowAssigner
    from weir.datastream.windowed_stream import AllWindowedStream

__all__ = [
    "BroadcastStream",
    "CachedDataStream",
    "CloseableIterator",
    "DataStream",
    "DataStreamSink",
    "KeyedStream",
]


def _output_type(output_type: TypeInformation | list[TypeInformation] | None) -> TypeInformation:
    if output_type is None:
        return Types.PICKLED_BYTE_ARRAY()
    if isinstance(output_type, list):
        return RowTypeInfo(output_type)
    return output_type


def _key_selector_callable(
    key_selector: Callable[[Any], Any] | KeySelector,
) -> Callable[[Any], Any]:
    if isinstance(key_selector, KeySelector):
        return key_selector.get_key
    if callable(key_selector):
        return key_selector
    msg = "Parameter key_selector should be type of KeySelector or a callable function."
    raise TypeError(msg)


class _OperatorSettings:
    """The per-operator settings shared by DataStream and DataStreamSink."""

    _transformation: Transformation

    def _set(self, **settings: Any) -> Any:
        for key, value in settings.items():
            setattr(self._transformation, key, value)
        return self

    def name(self, name: str) -> Any:
        """Sets the name shown in logs, the plan and the web UI."""
        return self._set(name=name)

    def get_name(self) -> str:
        return self._transformation.name

    def uid(self, uid: str) -> Any:
        """A stable id for this operator's state across job versions (must be unique)."""
        return self._set(uid=uid)

    def set_uid_hash(self, uid_hash: str) -> Any:
        """Sets the operator id directly (32 hex characters), e.g. one read from old logs."""
        return self._set(uid_hash=uid_hash)

    def set_parallelism(self, parallelism: int) -> Any:
        t = self._transformation
        if isinstance(t, PhysicalTransformation) and t.non_parallel and parallelism != 1:
            msg = f"The parallelism of non parallel operator {t.name!r} must be 1."
            raise ValueError(msg)
        if parallelism < 1:
            msg = f"The parallelism of an operator must be at least 1, got {parallelism}"
            raise ValueError(msg)
        return self._set(parallelism=parallelism)

    def set_description(self, description: str) -> Any:
        return self._set(description=description)

    def disable_chaining(self) -> Any:
        """This operator chains neither to its input nor to its outputs."""
        return self._set(chaining=ChainingStrategy.NEVER)

    def slot_sharing_group(self, slot_sharing_group: str | SlotSharingGroup) -> Any:
        """Operators in the same slot sharing group may share a slot; by name (a
        ``SlotSharingGroup``'s resources are not used). Operators inherit the group of their
        inputs when those agree, else they are in ``"default"``."""
        if isinstance(slot_sharing_group, SlotSharingGroup):
            group = slot_sharing_group.get_name()
        elif isinstance(slot_sharing_group, str):
            group = slot_sharing_group
        else:
            msg = (
                "slot_sharing_group() needs a name or a SlotSharingGroup; got "
                f"{type(slot_sharing_group).__name__}"
            )
            raise TypeError(msg)
        return self._set(slot_sharing_group=group)


class DataStream(_OperatorSettings):
    """A stream of elements; transform it with ``map``, ``filter``, ``key_by`` and so on::

    >>> ds = env.from_collection([1, 2, 3])
    >>> ds.map(lambda x: x * 2).filter(lambda x: x > 2).print()
    """

    def __init__(self, env: StreamExecutionEnvironment, transformation: Transformation) -> None:
        self._env = env
        self._transformation = transformation

    # -- settings ---------------------------------------------------------------------
    def set_max_parallelism(self, max_parallelism: int) -> DataStream:
        if not 0 < max_parallelism <= 1 << 15:
            msg = f"max parallelism must be in [1, 32768], got {max_parallelism}"
            raise ValueError(msg)
        return self._set(max_parallelism=max_parallelism)  # type: ignore[no-any-return]

    def force_non_parallel(self) -> DataStream:
        """Parallelism and max parallelism 1, for good."""
        t = self._transformation
        t.parallelism = 1
        t.max_parallelism = 1
        if isinstance(t, PhysicalTransformation):
            t.non_parallel = True
        return self

    def set_buffer_timeout(self, timeout_millis: int) -> DataStream:
        return self._set(buffer_timeout_ms=timeout_millis)  # type: ignore[no-any-return]

    def start_new_chain(self) -> DataStream:
        """This operator starts a new chain: it does not chain to its input."""
        return self._set(chaining=ChainingStrategy.HEAD)  # type: ignore[no-any-return]

    def get_type(self) -> TypeInformation:
        """The declared type of the records, as PyFlink returns it (``read_back``)."""
        return read_back(self._record_type() or Types.PICKLED_BYTE_ARRAY())

    def _record_type(self) -> TypeInformation | None:
        """The declared type of the records (``None``: undeclared)."""
        return self._transformation.output_type

    def get_execution_environment(self) -> StreamExecutionEnvironment:
        return self._env

    def get_execution_config(self) -> Any:
        return self._env.get_config()

    # -- operators --------------------------------------------------------------------
    def cache(self) -> CachedDataStream:
        """Keeps this stream's result the first time a job computes it, for later jobs of
        the environment to read instead of computing it again (BATCH mode only); see
        ``CachedDataStream``. Released by ``invalidate()`` or when the environment closes."""
        return self._env._cache(self)

    def _one_input(
        self,
        kind: OperatorKind,
        name: str,
        payload: dict[str, Any],
        output_type: TypeInformation | None,
    ) -> DataStream:
        t = PhysicalTransformation(
            id=self._env._next_id(),
            name=name,
            output_type=output_type,
            kind=kind,
            input_streams=[self._transformation],
            payload=payload,
        )
        self._env._add_operator(t)
        return DataStream(self._env, t)

    def map(
        self, func: Callable[[Any], Any] | MapFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        """One output per element. Without ``output_type`` outputs are pickled."""
        if not isinstance(func, MapFunction) and not callable(func):
            msg = "The input must be a MapFunction or a callable function"
            raise TypeError(msg)
        return self._one_input(
            OperatorKind.MAP, "Map", {"function": func}, _output_type(output_type)
        )

    def flat_map(
        self,
        func: Callable[[Any], Any] | FlatMapFunction,
        output_type: TypeInformation | None = None,
    ) -> DataStream:
        """Any number of outputs per element: the function yields or returns an iterable."""
        if not isinstance(func, FlatMapFunction) and not callable(func):
            msg = "The input must be a FlatMapFunction or a callable function"
            raise TypeError(msg)
        return self._one_input(
            OperatorKind.FLAT_MAP, "FlatMap", {"function": func}, _output_type(output_type)
        )

    def map_batches(
        self,
        func: Callable[[Any], Any] | MapBatchesFunction,
        output_type: TypeInformation | None = None,
        batch_format: str = "list",
    ) -> DataStream:
        """``func`` called once per batch of records instead of once per record (Weir's
        own; named as Ray's ``map_batches``). It gets a batch in ``batch_format`` and
        returns the batch of its results in the same format, of any length (so it may
        filter and flat-map too):

        - ``"list"``: a list of records;
        - ``"numpy"``: one array for a stream of single values (``Types.INT()``, say),
          else a dict of arrays by field name (a tuple's fields are ``f0``, ``f1``...);
        - ``"arrow"``: a ``pyarrow.RecordBatch``; ``"pandas"``: a ``pandas.DataFrame``
          (pandas must be installed).

        The columnar formats need the stream's type (declare ``output_type`` upstream, or
        ``type_info`` on the source) and this operator's ``output_type`` for several
        output fields; a columnar result goes on as columns to the next batch function
        and as records to a per-record one. A batch is what the task moves through its
        chain (``python.fn-execution.bundle.size`` records at most): watermarks,
        checkpoint barriers and timers fall between batches, as between records. With
        event timestamps, a function must return one result per record.

        >>> stream.map_batches(lambda xs: xs * 2, Types.LONG(), batch_format="numpy")
        """
        fmt = BatchFormat.of(batch_format)
        if not callable(func) and not isinstance(func, MapBatchesFunction):
            msg = "map_batches() needs a MapBatchesFunction or a callable taking a batch"
            raise TypeError(msg)
        input_type = self._transformation.output_type
        input_spec = column_spec(input_type)
        if fmt is not BatchFormat.LIST and input_spec is None:
            msg = (
                f"map_batches(batch_format={fmt.value!r}) needs to know the fields of its "
                f"input, whose type is {input_type!r}: declare it (output_type=Types.ROW_NAMED"
                "(...), Types.TUPLE(...) or a basic type on the operator before, or "
                "type_info on the source), or use batch_format='list'"
            )
            raise TypeError(msg)
        declared = _output_type(output_type)
        return self._one_input(
            OperatorKind.MAP_BATCHES,
            "MapBatches",
            {
                "function": func,
                "batch_format": fmt.value,
                "input_spec": input_spec,
                "output_spec": column_spec(declared),
            },
            declared,
        )

    def filter(self, func: Callable[[Any], bool] | FilterFunction) -> DataStream:
        """Keeps the elements for which ``func`` is true; the type is unchanged."""
        if not isinstance(func, FilterFunction) and not callable(func):
            msg = "The input must be a FilterFunction or a callable function"
            raise TypeError(msg)
        return self._one_input(
            OperatorKind.FILTER, "Filter", {"function": func}, self._transformation.output_type
        )

    def process(
        self, func: ProcessFunction, output_type: TypeInformation | None = None
    ) -> DataStream:
        if not isinstance(func, ProcessFunction):
            msg = "The input must be a ProcessFunction!"
            raise TypeError(msg)
        return self._one_input(
            OperatorKind.PROCESS, "PROCESS", {"function": func}, _output_type(output_type)
        )

    def assign_timestamps_and_watermarks(self, watermark_strategy: WatermarkStrategy) -> DataStream:
        """Stamps every element with its event time (the strategy's TimestampAssigner)
        and generates watermarks with the strategy's generator; the watermarks arriving
        from upstream are replaced, except the final one of a bounded input."""
        if not isinstance(watermark_strategy, WatermarkStrategy):
            msg = (
                "assign_timestamps_and_watermarks() needs a WatermarkStrategy, e.g. "
                "WatermarkStrategy.for_bounded_out_of_orderness(Duration.of_seconds(5))"
                f".with_timestamp_assigner(...); got {type(watermark_strategy).__name__!r}"
            )
            raise TypeError(msg)
        return self._one_input(
            OperatorKind.TIMESTAMPS_WATERMARKS,
            "Timestamps/Watermarks",
            {"watermark_strategy": watermark_strategy._snapshot()},
            self._transformation.output_type,
        )

    def get_side_output(self, output_tag: OutputTag) -> DataStream:
        """The records this operator emitted with ``ctx.output(output_tag, value)`` (or
        the late records of ``side_output_late_data(output_tag)``)."""
        if not isinstance(output_tag, OutputTag):
            msg = f"get_side_output() needs an OutputTag; got {type(output_tag).__name__!r}"
            raise TypeError(msg)
        t = SideOutputTransformation(
            id=self._env._next_id(),
            name=f"SideOutput({output_tag.tag_id})",
            output_type=_output_type(output_tag.type_info),
            input=self._transformation,
            tag_id=output_tag.tag_id,
        )
        return DataStream(self._env, t)

    def key_by(
        self,
        key_selector: Callable[[Any], Any] | KeySelector,
        key_type: TypeInformation | None = None,
    ) -> KeyedStream:
        """Partitions by key: elements with equal keys go to the same subtask and share state.

        Keys are equal as Python compares them (``==``), as dict keys are: ``1``, ``1.0``
        and ``True`` are one key, and so are a NamedTuple and the plain tuple of its
        fields, however each was built (see ``weir.core.canonical_keys``). Objects of
        your own classes are equal keys when they are of one class with equal pickled
        state; return a plain value from the selector when ``__eq__`` says otherwise.
        Without ``key_type``, ints, strings, bytes and tuples or Rows of them are placed
        on the subtasks PyFlink places them on::

            >>> words.key_by(lambda pair: pair[0])
        """
        selector = _key_selector_callable(key_selector)
        # As PyFlink's keyed operators get keys back from the key type's coder: a Row of a
        # ROW key type with the type's names.
        coder = type_coder(key_type, strict=False, what="key") if key_type is not None else None
        if coder is not None:
            selector = ConformedKeySelector(selector, CodedKey(coder))
        t = PartitionTransformation(
            id=self._env._next_id(),
            name="Partition",
            output_type=self._transformation.output_type,
            input=self._transformation,
            partitioner=PartitionerKind.KEY_GROUP,
            partitioner_payload={"key_selector": selector, "key_type": key_type_name(key_type)},
        )
        return KeyedStream(self._env, t, selector, self, key_type)

    def union(self, *streams: DataStream) -> DataStream:
        """One stream of the elements of this and the given streams (same type)."""
        inputs = [self._transformation]
        for stream in streams:
            plain = stream._values() if isinstance(stream, KeyedStream) else stream
            inputs.append(plain._transformation)
        t = UnionTransformation(
            id=self._env._next_id(),
            name="Union",
            output_type=self._transformation.output_type,
            union_inputs=inputs,
        )
        return DataStream(self._env, t)

    def window_all(self, window_assigner: WindowAssigner) -> AllWindowedStream:
        """Windows the whole (non-keyed) stream; the windows are evaluated in one subtask::

        >>> ds.window_all(TumblingEventTimeWindows.of(Time.seconds(5))).reduce(max)
        """
        # windowed_stream builds on this module, so it can only be imported here.
        from weir.datastream.windowed_stream import AllWindowedStream  # noqa: PLC0415

        return AllWindowedStream(self, window_assigner)

    @overload
    def connect(self, ds: DataStream) -> ConnectedStreams: ...

    @overload
    def connect(self, ds: BroadcastStream) -> BroadcastConnectedStream: ...

    def connect(
        self, ds: DataStream | BroadcastStream
    ) -> ConnectedStreams | BroadcastConnectedStream:
        """Two streams, possibly of different types, processed by one co-function; or,
        with a BroadcastStream (``broadcast(descriptor, ...)``), a BroadcastConnectedStream
        for a (Keyed)BroadcastProcessFunction::

            >>> events.connect(rules.broadcast(rule_state)).process(ApplyRules())
        """
        # connected_streams builds on this module, so it can only be imported here.
        from weir.datastream.connected_streams import (  # noqa: PLC0415
            BroadcastConnectedStream,
            ConnectedStreams,
        )

        if isinstance(ds, BroadcastStream):
            return BroadcastConnectedStream(self, ds, ds.broadcast_state_descriptors)
        return ConnectedStreams(self, ds)

    # -- partitioning -----------------------------------------------------------------
    def _partition(
        self, kind: PartitionerKind, payload: dict[str, Any] | None = None
    ) -> DataStream:
        t = PartitionTransformation(
            id=self._env._next_id(),
            name="Partition",
            output_type=self._transformation.output_type,
            input=self._transformation,
            partitioner=kind,
            partitioner_payload=payload or {},
        )
        return DataStream(self._env, t)

    def project(self, *field_indexes: int) -> DataStream:
        """The tuples' fields at ``field_indexes``, in that order, as new tuples: the
        stream must be declared as a tuple stream (``output_type=Types.TUPLE([...])``)."""
        tuple_type = self.get_type()
        if not isinstance(tuple_type, TupleTypeInfo):
            msg = "Only Tuple DataStreams can be projected."
            raise Exception(msg)  # PyFlink raises a bare Exception here
        field_types = tuple_type.get_field_types()
        indexes = tuple(field_indexes)
        for index in indexes:
            if not 0 <= index < len(field_types):
                msg = (
                    f"project(): field index {index} is out of range for a tuple of "
                    f"{len(field_types)} fields"
                )
                raise IndexError(msg)
        out = self.map(
            lambda value: tuple([value[i] for i in indexes]),
            output_type=Types.TUPLE([field_types[i] for i in indexes]),
        )
        projection = out._transformation
        assert isinstance(projection, PhysicalTransformation)
        projection.name = "Projection"
        projection.payload["projection"] = indexes  # a Java operator in PyFlink's plans
        return out

    def shuffle(self) -> DataStream:
        return self._partition(PartitionerKind.SHUFFLE)

    def rebalance(self) -> DataStream:
        return self._partition(PartitionerKind.REBALANCE)

    def rescale(self) -> DataStream:
        return self._partition(PartitionerKind.RESCALE)

    def forward(self) -> DataStream:
        """Each subtask sends to the same-index subtask; parallelism must not change."""
        return self._partition(PartitionerKind.FORWARD)

    @overload
    def broadcast(self) -> DataStream: ...

    @overload
    def broadcast(
        self,
        broadcast_state_descriptor: MapStateDescriptor,
        *other_broadcast_state_descriptors: MapStateDescriptor,
    ) -> BroadcastStream: ...

    def broadcast(
        self,
        broadcast_state_descriptor: MapStateDescriptor | None = None,
        *other_broadcast_state_descriptors: MapStateDescriptor,
    ) -> DataStream | BroadcastStream:
        """Every element goes to every downstream subtask. With MapStateDescriptors, a
        BroadcastStream whose elements fill the broadcast states they describe, to
        ``connect`` to another stream::

            >>> rules = MapStateDescriptor("rules", Types.STRING(), Types.INT())
            >>> events.connect(rule_stream.broadcast(rules)).process(ApplyRules())
        """
        if broadcast_state_descriptor is None:
            return self._partition(PartitionerKind.BROADCAST)
        descriptors = [broadcast_state_descriptor, *other_broadcast_state_descriptors]
        for descriptor in descriptors:
            if not isinstance(descriptor, MapStateDescriptor):
                msg = "broadcast_state_descriptor must be MapStateDescriptor"
                raise TypeError(msg)  # PyFlink's words
        return BroadcastStream(self._partition(PartitionerKind.BROADCAST), descriptors)

    def global_(self) -> DataStream:
        """Every element goes to the first downstream subtask (Flink's ``global()``)."""
        return self._partition(PartitionerKind.GLOBAL)

    def partition_custom(
        self,
        partitioner: Callable[[Any, int], int] | Partitioner,
        key_selector: Callable[[Any], Any] | KeySelector,
    ) -> DataStream:
        """``partitioner.partition(key, num_partitions)`` picks each element's subtask."""
        if isinstance(partitioner, Partitioner):
            partition: Callable[[Any, int], int] = partitioner.partition
        elif callable(partitioner):
            partition = partitioner
        else:
            msg = "Parameter partitioner should be type of Partitioner or a callable function."
            raise TypeError(msg)
        return self._partition(
            PartitionerKind.CUSTOM,
            {"partitioner": partition, "key_selector": _key_selector_callable(key_selector)},
        )

    # -- sinks ------------------------------------------------------------------------
    def _sink(self, kind: OperatorKind, name: str, payload: dict[str, Any]) -> DataStreamSink:
        t = PhysicalTransformation(
            id=self._env._next_id(),
            name=name,
            kind=kind,
            input_streams=[self._transformation],
            payload=payload,
        )
        self._env._add_operator(t)
        return DataStreamSink(t)

    def print(self, sink_identifier: str | None = None) -> DataStreamSink:
        """Writes each element to standard output (prefixed by ``sink_identifier`` and the
        subtask index when the parallelism is above 1)."""
        return self._sink(
            OperatorKind.PRINT,
            "Print to Std. Out",
            {
                "sink_identifier": sink_identifier,
                "format": print_format_spec(self._record_type() or Types.PICKLED_BYTE_ARRAY()),
            },
        )

    def add_sink(self, sink_func: SinkFunction | Callable[..., Any]) -> DataStreamSink:
        if not isinstance(sink_func, SinkFunction) and not callable(sink_func):
            msg = f"add_sink() needs a SinkFunction or a callable; got {type(sink_func)!r}"
            raise TypeError(msg)
        return self._sink(OperatorKind.SINK, "Unnamed", {"function": sink_func})

    def sink_to(self, sink: Any) -> DataStreamSink:
        if not isinstance(sink, SinkFunction) and not callable(sink):
            msg = (
                f"sink_to() needs a SinkFunction (or a callable); got {type(sink)!r}: "
                "connector sinks are not available yet"
            )
            raise TypeError(msg)
        return self._sink(OperatorKind.SINK, "Writer", {"function": sink})

    def execute_and_collect(
        self, job_execution_name: str | None = None, limit: int | None = None
    ) -> CloseableIterator | list[Any]:
        """Runs the job and returns its elements: an iterator to use in ``with``, or, with
        ``limit``, a list of the first ``limit`` elements (the job is then cancelled)::

            with ds.execute_and_collect() as results:
                for value in results: ...
        """
        # marshal (the fast choice for declared primitives) would give a bytearray of an
        # untyped stream back as bytes: an untyped stream is collected pickled.
        collect = self._sink(
            OperatorKind.COLLECT,
            "Data stream collect sink",
            {
                "serializer": serializer_kind_of(self._transformation.output_type),
                # FLOAT values come back as PyFlink's client reads them from Java.
                "float_collect": single_precision_spec(self._record_type()),
            },
        )
        collect._transformation.parallelism = 1
        iterator = CloseableIterator(
            self._env._execute_and_collect(collect._transformation, job_execution_name)
        )
        if limit is None:
            return iterator
        results: list[Any] = []
        with iterator:
            for value in iterator:
                if len(results) >= limit:
                    break
                results.append(value)
        return results


class BroadcastStream:
    """A stream with broadcast state (``DataStream.broadcast(descriptor, ...)``): nothing
    can be applied to it but ``connect`` from a keyed or non-keyed stream, which gives a
    BroadcastConnectedStream."""

    def __init__(
        self, input_stream: DataStream, broadcast_state_descriptors: list[MapStateDescriptor]
    ) -> None:
        self.input_stream = input_stream
        self.broadcast_state_descriptors = broadcast_state_descriptors


class DataStreamSink(_OperatorSettings):
    """The end of a stream: name, uid and parallelism of the sink."""

    def __init__(self, transformation: PhysicalTransformation) -> None:
        self._transformation = transformation


class CloseableIterator:
    """The results of ``execute_and_collect``; closing it cancels the job if still running."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._iterator: Iterator[Any] = iter(inner)

    def __iter__(self) -> CloseableIterator:
        return self

    def __next__(self) -> Any:
        return next(self._iterator)

    def next(self) -> Any:
        return next(self._iterator)

    def close(self) -> None:
        self._inner.close()

    def __enter__(self) -> CloseableIterator:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# A DataStream's key_by makes a KeyedStream, which is a DataStream: imported once both
# sides of the cycle are defined (the package imports this module first).
from weir.datastream.cached_data_stream import CachedDataStream  # noqa: E402
from weir.datastream.keyed_stream import KeyedStream  # noqa: E402
