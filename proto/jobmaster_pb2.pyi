from weir.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ThrowableType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    THROWABLE_TYPE_RECOVERABLE_ERROR: _ClassVar[ThrowableType]
    THROWABLE_TYPE_NON_RECOVERABLE_ERROR: _ClassVar[ThrowableType]
THROWABLE_TYPE_RECOVERABLE_ERROR: ThrowableType
THROWABLE_TYPE_NON_RECOVERABLE_ERROR: ThrowableType

class KvStateRegistration(_message.Message):
    __slots__ = ("job_id", "execution_attempt_id", "operator_id", "registration_name", "start_key_group", "end_key_group", "num_key_groups", "key_type", "kv_state_id", "server_address", "subtask_index")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    REGISTRATION_NAME_FIELD_NUMBER: _ClassVar[int]
    START_KEY_GROUP_FIELD_NUMBER: _ClassVar[int]
    END_KEY_GROUP_FIELD_NUMBER: _ClassVar[int]
    NUM_KEY_GROUPS_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    KV_STATE_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    execution_attempt_id: str
    operator_id: str
    registration_name: str
    start_key_group: int
    end_key_group: int
    num_key_groups: int
    key_type: str
    kv_state_id: str
    server_address: str
    subtask_index: int
    def __init__(self, job_id: _Optional[str] = ..., execution_attempt_id: _Optional[str] = ..., operator_id: _Optional[str] = ..., registration_name: _Optional[str] = ..., start_key_group: _Optional[int] = ..., end_key_group: _Optional[int] = ..., num_key_groups: _Optional[int] = ..., key_type: _Optional[str] = ..., kv_state_id: _Optional[str] = ..., server_address: _Optional[str] = ..., subtask_index: _Optional[int] = ...) -> None: ...

class EndOfDataNotice(_message.Message):
    __slots__ = ("job_id", "execution_attempt_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    execution_attempt_id: str
    def __init__(self, job_id: _Optional[str] = ..., execution_attempt_id: _Optional[str] = ...) -> None: ...

class TaskExecutionStateUpdate(_message.Message):
    __slots__ = ("job_id", "execution_attempt_id", "state", "failure_cause", "io_metrics", "throwable_type")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    IO_METRICS_FIELD_NUMBER: _ClassVar[int]
    THROWABLE_TYPE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    execution_attempt_id: str
    state: str
    failure_cause: str
    io_metrics: _common_pb2.IOMetrics
    throwable_type: ThrowableType
    def __init__(self, job_id: _Optional[str] = ..., execution_attempt_id: _Optional[str] = ..., state: _Optional[str] = ..., failure_cause: _Optional[str] = ..., io_metrics: _Optional[_Union[_common_pb2.IOMetrics, _Mapping]] = ..., throwable_type: _Optional[_Union[ThrowableType, str]] = ...) -> None: ...

class PushCollectBatchRequest(_message.Message):
    __slots__ = ("job_id", "operator_id", "subtask_index", "batch", "end_of_data", "execution_attempt_id", "checkpoint_epoch")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    END_OF_DATA_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_EPOCH_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    operator_id: str
    subtask_index: int
    batch: bytes
    end_of_data: bool
    execution_attempt_id: str
    checkpoint_epoch: int
    def __init__(self, job_id: _Optional[str] = ..., operator_id: _Optional[str] = ..., subtask_index: _Optional[int] = ..., batch: _Optional[bytes] = ..., end_of_data: _Optional[bool] = ..., execution_attempt_id: _Optional[str] = ..., checkpoint_epoch: _Optional[int] = ...) -> None: ...

class PushCollectBatchResponse(_message.Message):
    __slots__ = ("accepted", "message", "retry_after_ms")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    RETRY_AFTER_MS_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    message: str
    retry_after_ms: int
    def __init__(self, accepted: _Optional[bool] = ..., message: _Optional[str] = ..., retry_after_ms: _Optional[int] = ...) -> None: ...

class OfferSlotsRequest(_message.Message):
    __slots__ = ("job_id", "request_id", "slots")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    SLOTS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    request_id: str
    slots: _containers.RepeatedCompositeFieldContainer[_common_pb2.SlotAssignment]
    def __init__(self, job_id: _Optional[str] = ..., request_id: _Optional[str] = ..., slots: _Optional[_Iterable[_Union[_common_pb2.SlotAssignment, _Mapping]]] = ...) -> None: ...

class OfferSlotsResponse(_message.Message):
    __slots__ = ("accepted", "message")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    message: str
    def __init__(self, accepted: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class TaskManagerLostNotice(_message.Message):
    __slots__ = ("resource_id", "reason")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    reason: str
    def __init__(self, resource_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...

class CheckpointMetrics(_message.Message):
    __slots__ = ("sync_duration_ms", "async_duration_ms", "alignment_duration_ms", "persisted_in_flight_bytes", "state_size_bytes")
    SYNC_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ASYNC_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ALIGNMENT_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    PERSISTED_IN_FLIGHT_BYTES_FIELD_NUMBER: _ClassVar[int]
    STATE_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    sync_duration_ms: int
    async_duration_ms: int
    alignment_duration_ms: int
    persisted_in_flight_bytes: int
    state_size_bytes: int
    def __init__(self, sync_duration_ms: _Optional[int] = ..., async_duration_ms: _Optional[int] = ..., alignment_duration_ms: _Optional[int] = ..., persisted_in_flight_bytes: _Optional[int] = ..., state_size_bytes: _Optional[int] = ...) -> None: ...

class AcknowledgeCheckpointRequest(_message.Message):
    __slots__ = ("job_id", "execution_attempt_id", "checkpoint_id", "task_state", "metrics")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_STATE_FIELD_NUMBER: _ClassVar[int]
    METRICS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    execution_attempt_id: str
    checkpoint_id: int
    task_state: bytes
    metrics: CheckpointMetrics
    def __init__(self, job_id: _Optional[str] = ..., execution_attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., task_state: _Optional[bytes] = ..., metrics: _Optional[_Union[CheckpointMetrics, _Mapping]] = ...) -> None: ...

class DeclineCheckpointRequest(_message.Message):
    __slots__ = ("job_id", "execution_attempt_id", "checkpoint_id", "reason")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    execution_attempt_id: str
    checkpoint_id: int
    reason: str
    def __init__(self, job_id: _Optional[str] = ..., execution_attempt_id: _Optional[str] = ..., checkpoint_id: _Optional[int] = ..., reason: _Optional[str] = ...) -> None: ...
