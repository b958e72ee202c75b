"""Types, Row, Configuration, Duration/Time and WatermarkStrategy (mirrors ``pyflink.common``)."""

from weir.common.completable_future import CompletableFuture
from weir.common.configuration import Configuration
from weir.common.execution_config import ExecutionConfig
from weir.common.job_client import JobClient
from weir.common.job_execution_result import JobExecutionResult, JobID
from weir.common.job_status import JobStatus
from weir.common.restart_strategy import RestartStrategies, RestartStrategyConfiguration
from weir.common.serialization import (
    DeserializationSchema,
    Encoder,
    SerializationSchema,
    SimpleStringSchema,
)
from weir.common.time import Duration, Instant, Time
from weir.common.typeinfo import (
    BasicArrayTypeInfo,
    BasicTypeInfo,
    ListTypeInfo,
    MapTypeInfo,
    ObjectArrayTypeInfo,
    PickledBytesTypeInfo,
    PrimitiveArrayTypeInfo,
    RowTypeInfo,
    SqlTimeTypeInfo,
    TupleTypeInfo,
    TypeInformation,
    Types,
)
from weir.common.types import Row, RowKind
from weir.common.watermark_strategy import (
    TimestampAssigner,
    Watermark,
    WatermarkGenerator,
    WatermarkOutput,
    WatermarkStrategy,
)

__all__ = [
    "BasicArrayTypeInfo",
    "BasicTypeInfo",
    "CompletableFuture",
    "Configuration",
    "DeserializationSchema",
    "Duration",
    "Encoder",
    "ExecutionConfig",
    "Instant",
    "JobClient",
    "JobExecutionResult",
    "JobID",
    "JobStatus",
    "ListTypeInfo",
    "MapTypeInfo",
    "ObjectArrayTypeInfo",
    "PickledBytesTypeInfo",
    "PrimitiveArrayTypeInfo",
    "RestartStrategies",
    "RestartStrategyConfiguration",
    "Row",
    "RowKind",
    "RowTypeInfo",
    "SerializationSchema",
    "SimpleStringSchema",
    "SqlTimeTypeInfo",
    "Time",
    "TimestampAssigner",
    "TupleTypeInfo",
    "TypeInformation",
    "Types",
    "Watermark",
    "WatermarkGenerator",
    "WatermarkOutput",
    "WatermarkStrategy",
]
