from proto import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class TaskExecutionStateUpdate(_message.Message):
    __slots__ = ("job_id", "execution_attempt_id", "state", "failure_cause")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    execution_attempt_id: str
    state: str
    failure_cause: str
    def __init__(self, job_id: _Optional[str] = ..., execution_attempt_id: _Optional[str] = ..., state: _Optional[str] = ..., failure_cause: _Optional[str] = ...) -> None: ...

class PushCollectBatchRequest(_message.Message):
    __slots__ = ("job_id", "operator_id", "subtask_index", "batch", "end_of_data", "execution_attempt_id")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    BATCH_FIELD_NUMBER: _ClassVar[int]
    END_OF_DATA_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    operator_id: str
    subtask_index: int
    batch: bytes
    end_of_data: bool
    execution_attempt_id: str
    def __init__(self, job_id: _Optional[str] = ..., operator_id: _Optional[str] = ..., subtask_index: _Optional[int] = ..., batch: _Optional[bytes] = ..., end_of_data: _Optional[bool] = ..., execution_attempt_id: _Optional[str] = ...) -> None: ...

class TaskManagerLostNotice(_message.Message):
    __slots__ = ("resource_id", "reason")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    reason: str
    def __init__(self, resource_id: _Optional[str] = ..., reason: _Optional[str] = ...) -> None: ...
