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
    ReduceFunction,
    RuntimeContext,
    SinkFunction,
    SourceFunction,
)
from weir.datastream.output_tag import OutputTag
from weir.datastream.state import (
    AggregatingStateDescriptor,
    ListStateDescriptor,
    MapStateDescriptor,
    ReducingStateDescriptor,
    StateDescriptor,
    ValueState,
    ValueStateDescriptor,
)
from weir.datastream.stream_execution_environment import StreamExecutionEnvironment
from weir.datastream.timerservice import TimerService

__all__ = [
    "AggregateFunction",
    "AggregatingStateDescriptor",
    "CheckpointConfig",
    "CheckpointingMode",
    "CloseableIterator",
    "CoFlatMapFunction",
    "CoMapFunction",
    "CoProcessFunction",
    "ConnectedStreams",
    "DataStream",
    "DataStreamSink",
    "ExternalizedCheckpointRetention",
    "FilterFunction",
    "FlatMapFunction",
    "Function",
    "KeySelector",
    "KeyedCoProcessFunction",
    "KeyedProcessFunction",
    "KeyedStream",
    "ListStateDescriptor",
    "MapFunction",
    "MapStateDescriptor",
    "OutputTag",
    "Partitioner",
    "ProcessFunction",
    "ReduceFunction",
    "ReducingStateDescriptor",
    "RuntimeContext",
    "RuntimeExecutionMode",
    "SinkFunction",
    "SourceFunction",
    "StateDescriptor",
    "StreamExecutionEnvironment",
    "TimeDomain",
    "TimerService",
    "ValueState",
    "ValueStateDescriptor",
]
