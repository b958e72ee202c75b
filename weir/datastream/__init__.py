"""The DataStream API (mirrors ``pyflink.datastream``)."""

from weir.core.time_domain import TimeDomain
from weir.datastream.checkpoint_config import (
    CheckpointConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from weir.datastream.connected_streams import ConnectedStreams
from weir.datastream.data_stream import CloseableIterator, DataStream, DataStreamSink, KeyedStream
from weir.datastream.execution_mode import RuntimeExecutionMode
from weir.datastream.functions import (
    AggregateFunction,
    CoFlatMapFunction,
    CoMapFunction,
    CoProcessFunction,
    FilterFunction,
    FlatMapFunction,
    Function,
    KeyedCoProcessFunction,
    KeyedProcessFunction,
    KeySelector,
    MapFunction,
    Partitioner,
    ProcessFunction,
    ProcessWindowFunction,
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
    WindowFunction,
)
from weir.datastream.output_tag import OutputTag
from weir.datastream.slot_sharing_group import MemorySize, SlotSharingGroup
from weir.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from weir.datastream.state_backend import (
    EmbeddedRocksDBStateBackend,
    HashMapStateBackend,
    StateBackend,
)
from weir.datastream.stream_execution_environment import StreamExecutionEnvironment
from weir.datastream.timerservice import TimerService
from weir.datastream.window import (
    CountWindow,
    GlobalWindow,
    MergingWindowAssigner,
    TimeWindow,
    Trigger,
    TriggerResult,
    Window,
    WindowAssigner,
)
from weir.datastream.windowed_stream import AllWindowedStream, WindowedStream

__all__ = [
    "AggregateFunction",
    "AggregatingStateDescriptor",
    "AllWindowedStream",
    "CheckpointConfig",
    "CheckpointingMode",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "CountWindow",
    "DataStream",
    "DataStreamSink",
    "EmbeddedRocksDBStateBackend",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "GlobalWindow",
    "HashMapStateBackend",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListStateDescriptor",
    "MapFunction",
    "MapStateDescriptor",
    "MemorySize",
    "MergingWindowAssigner",
    "OutputTag",
    "Partitioner",
    "ProcessFunction",
    "ProcessWindowFunction",
    "ReduceFunction",
    "ReducingStateDescriptor",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "SlotSharingGroup",
    "SourceFunction",
    "StateBackend",
    "StateDescriptor",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimeWindow",
    "TimerService",
    "Trigger",
    "TriggerResult",
    "ValueState",
    "ValueStateDescriptor",
    "Window",
    "WindowAssigner",
    "WindowFunction",
    "WindowedStream",
]
