from weir.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class MetricSampleProto(_message.Message):
    __slots__ = ("scope", "name", "variables", "kind", "value")
    class VariablesEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    SCOPE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VARIABLES_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    scope: _containers.RepeatedScalarFieldContainer[str]
    name: str
    variables: _containers.ScalarMap[str, str]
    kind: str
    value: float
    def __init__(self, scope: _Optional[_Iterable[str]] = ..., name: _Optional[str] = ..., variables: _Optional[_Mapping[str, str]] = ..., kind: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...

class MetricsDump(_message.Message):
    __slots__ = ("metrics", "prometheus_address")
    METRICS_FIELD_NUMBER: _ClassVar[int]
    PROMETHEUS_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    metrics: _containers.RepeatedCompositeFieldContainer[MetricSampleProto]
    prometheus_address: str
    def __init__(self, metrics: _Optional[_Iterable[_Union[MetricSampleProto, _Mapping]]] = ..., prometheus_address: _Optional[str] = ...) -> None: ...

class AllocateSlotRequest(_message.Message):
    __slots__ = ("allocation_id", "job_id", "jobmaster_address")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOBMASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    job_id: str
    jobmaster_address: str
    def __init__(self, allocation_id: _Optional[str] = ..., job_id: _Optional[str] = ..., jobmaster_address: _Optional[str] = ...) -> None: ...

class FreeSlotRequest(_message.Message):
    __slots__ = ("allocation_id",)
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    def __init__(self, allocation_id: _Optional[str] = ...) -> None: ...

class SubmitTaskRequest(_message.Message):
    __slots__ = ("task_deployment_descriptor", "jobmaster_address")
    TASK_DEPLOYMENT_DESCRIPTOR_FIELD_NUMBER: _ClassVar[int]
    JOBMASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    task_deployment_descriptor: bytes
    jobmaster_address: str
    def __init__(self, task_deployment_descriptor: _Optional[bytes] = ..., jobmaster_address: _Optional[str] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ("execution_attempt_id",)
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    execution_attempt_id: str
    def __init__(self, execution_attempt_id: _Optional[str] = ...) -> None: ...

class StopRequest(_message.Message):
    __slots__ = ("reason",)
    REASON_FIELD_NUMBER: _ClassVar[int]
    reason: str
    def __init__(self, reason: _Optional[str] = ...) -> None: ...

class CheckpointOptions(_message.Message):
    __slots__ = ("checkpoint_type", "mode", "unaligned", "snapshot_compression")
    CHECKPOINT_TYPE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    UNALIGNED_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    checkpoint_type: str
    mode: str
    unaligned: bool
    snapshot_compression: bool
    def __init__(self, checkpoint_type: _Optional[str] = ..., mode: _Optional[str] = ..., unaligned: _Optional[bool] = ..., snapshot_compression: _Optional[bool] = ...) -> None: ...

class TriggerCheckpointRequest(_message.Message):
    __slots__ = ("execution_attempt_id", "checkpoint_id", "timestamp_ms", "options")
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    OPTIONS_FIELD_NUMBER: _ClassVar[int]
    execution_attempt_id: str
    checkpoint_id: int
    timestamp_ms: int
    options: CheckpointOptions
    def __init__(self, execution_attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., timestamp_ms: _Optional[int] = ..., options: _Optional[_Union[CheckpointOptions, _Mapping]] = ...) -> None: ...

class CheckpointNotification(_message.Message):
    __slots__ = ("execution_attempt_id", "checkpoint_id")
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    execution_attempt_id: str
    checkpoint_id: int
    def __init__(self, execution_attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ...) -> None: ...
