from proto import common_pb2 as _common_pb2
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

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
