from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Optional as _Optional

DESCRIPTOR: _descriptor.FileDescriptor

class KvStateRequest(_message.Message):
    __slots__ = ("job_id", "queryable_state_name", "serialized_key")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    QUERYABLE_STATE_NAME_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_KEY_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    queryable_state_name: str
    serialized_key: bytes
    def __init__(self, job_id: _Optional[str] = ..., queryable_state_name: _Optional[str] = ..., serialized_key: _Optional[bytes] = ...) -> None: ...

class KvStateServerRequest(_message.Message):
    __slots__ = ("kv_state_id", "serialized_key")
    KV_STATE_ID_FIELD_NUMBER: _ClassVar[int]
    SERIALIZED_KEY_FIELD_NUMBER: _ClassVar[int]
    kv_state_id: str
    serialized_key: bytes
    def __init__(self, kv_state_id: _Optional[str] = ..., serialized_key: _Optional[bytes] = ...) -> None: ...

class KvStateResponse(_message.Message):
    __slots__ = ("serialized_value",)
    SERIALIZED_VALUE_FIELD_NUMBER: _ClassVar[int]
    serialized_value: bytes
    def __init__(self, serialized_value: _Optional[bytes] = ...) -> None: ...
