from weir.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class SlotAvailableRequest(_message.Message):
    __slots__ = ("resource_id", "allocation_id")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    allocation_id: str
    def __init__(self, resource_id: _Optional[str] = ..., allocation_id: _Optional[str] = ...) -> None: ...

class RegisterTaskExecutorRequest(_message.Message):
    __slots__ = ("resource_id", "rpc_address", "data_host", "data_port", "num_slots", "spark_executor_id", "pid", "lease_id")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DATA_HOST_FIELD_NUMBER: _ClassVar[int]
    DATA_PORT_FIELD_NUMBER: _ClassVar[int]
    NUM_SLOTS_FIELD_NUMBER: _ClassVar[int]
    SPARK_EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    LEASE_ID_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    rpc_address: str
    data_host: str
    data_port: int
    num_slots: int
    spark_executor_id: str
    pid: int
    lease_id: str
    def __init__(self, resource_id: _Optional[str] = ..., rpc_address: _Optional[str] = ..., data_host: _Optional[str] = ..., data_port: _Optional[int] = ..., num_slots: _Optional[int] = ..., spark_executor_id: _Optional[str] = ..., pid: _Optional[int] = ..., lease_id: _Optional[str] = ...) -> None: ...

class RegisterTaskExecutorResponse(_message.Message):
    __slots__ = ("accepted", "message", "heartbeat_interval_ms", "heartbeat_timeout_ms")
    ACCEPTED_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    accepted: bool
    message: str
    heartbeat_interval_ms: int
    heartbeat_timeout_ms: int
    def __init__(self, accepted: _Optional[bool] = ..., message: _Optional[str] = ..., heartbeat_interval_ms: _Optional[int] = ..., heartbeat_timeout_ms: _Optional[int] = ...) -> None: ...

class TaskExecutorHeartbeat(_message.Message):
    __slots__ = ("resource_id", "allocated_slots", "process")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATED_SLOTS_FIELD_NUMBER: _ClassVar[int]
    PROCESS_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    allocated_slots: _containers.RepeatedScalarFieldContainer[str]
    process: _common_pb2.ProcessStatus
    def __init__(self, resource_id: _Optional[str] = ..., allocated_slots: _Optional[_Iterable[str]] = ..., process: _Optional[_Union[_common_pb2.ProcessStatus, _Mapping]] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("known", "stale_slots")
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    STALE_SLOTS_FIELD_NUMBER: _ClassVar[int]
    known: bool
    stale_slots: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, known: _Optional[bool] = ..., stale_slots: _Optional[_Iterable[str]] = ...) -> None: ...

class RequestSlotsRequest(_message.Message):
    __slots__ = ("job_id", "count", "jobmaster_address", "timeout_ms", "request_id", "protocol_version", "fencing_token")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    JOBMASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    count: int
    jobmaster_address: str
    timeout_ms: int
    request_id: str
    protocol_version: int
    fencing_token: str
    def __init__(self, job_id: _Optional[str] = ..., count: _Optional[int] = ..., jobmaster_address: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., request_id: _Optional[str] = ..., protocol_version: _Optional[int] = ..., fencing_token: _Optional[str] = ...) -> None: ...

class RequestSlotsResponse(_message.Message):
    __slots__ = ("protocol_version", "requests_ahead")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_AHEAD_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    requests_ahead: int
    def __init__(self, protocol_version: _Optional[int] = ..., requests_ahead: _Optional[int] = ...) -> None: ...

class CancelSlotRequestRequest(_message.Message):
    __slots__ = ("job_id", "request_id", "fencing_token")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REQUEST_ID_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    request_id: str
    fencing_token: str
    def __init__(self, job_id: _Optional[str] = ..., request_id: _Optional[str] = ..., fencing_token: _Optional[str] = ...) -> None: ...

class CancelSlotRequestResponse(_message.Message):
    __slots__ = ("cancelled", "explanation")
    CANCELLED_FIELD_NUMBER: _ClassVar[int]
    EXPLANATION_FIELD_NUMBER: _ClassVar[int]
    cancelled: bool
    explanation: str
    def __init__(self, cancelled: _Optional[bool] = ..., explanation: _Optional[str] = ...) -> None: ...

class ReleaseSlotsRequest(_message.Message):
    __slots__ = ("job_id", "allocation_ids", "fencing_token")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_IDS_FIELD_NUMBER: _ClassVar[int]
    FENCING_TOKEN_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    allocation_ids: _containers.RepeatedScalarFieldContainer[str]
    fencing_token: str
    def __init__(self, job_id: _Optional[str] = ..., allocation_ids: _Optional[_Iterable[str]] = ..., fencing_token: _Optional[str] = ...) -> None: ...
