from weir.proto import common_pb2 as _common_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JobPlanResponse(_message.Message):
    __slots__ = ("plan_json", "config")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    PLAN_JSON_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    plan_json: str
    config: _containers.ScalarMap[str, str]
    def __init__(self, plan_json: _Optional[str] = ..., config: _Optional[_Mapping[str, str]] = ...) -> None: ...

class SubmitJobRequest(_message.Message):
    __slots__ = ("job_graph",)
    JOB_GRAPH_FIELD_NUMBER: _ClassVar[int]
    job_graph: bytes
    def __init__(self, job_graph: _Optional[bytes] = ...) -> None: ...

class SubmitJobResponse(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class ListJobsRequest(_message.Message):
    __slots__ = ("include_terminated",)
    INCLUDE_TERMINATED_FIELD_NUMBER: _ClassVar[int]
    include_terminated: bool
    def __init__(self, include_terminated: _Optional[bool] = ...) -> None: ...

class ListJobsResponse(_message.Message):
    __slots__ = ("jobs",)
    JOBS_FIELD_NUMBER: _ClassVar[int]
    jobs: _containers.RepeatedCompositeFieldContainer[_common_pb2.JobDetails]
    def __init__(self, jobs: _Optional[_Iterable[_Union[_common_pb2.JobDetails, _Mapping]]] = ...) -> None: ...

class WaitForJobResultRequest(_message.Message):
    __slots__ = ("job_id", "timeout_ms", "known_version")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    KNOWN_VERSION_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    timeout_ms: int
    known_version: int
    def __init__(self, job_id: _Optional[str] = ..., timeout_ms: _Optional[int] = ..., known_version: _Optional[int] = ...) -> None: ...

class ClusterOverviewResponse(_message.Message):
    __slots__ = ("task_managers", "slots_total", "slots_available", "jobs_running", "jobs_finished", "jobs_cancelled", "jobs_failed")
    TASK_MANAGERS_FIELD_NUMBER: _ClassVar[int]
    SLOTS_TOTAL_FIELD_NUMBER: _ClassVar[int]
    SLOTS_AVAILABLE_FIELD_NUMBER: _ClassVar[int]
    JOBS_RUNNING_FIELD_NUMBER: _ClassVar[int]
    JOBS_FINISHED_FIELD_NUMBER: _ClassVar[int]
    JOBS_CANCELLED_FIELD_NUMBER: _ClassVar[int]
    JOBS_FAILED_FIELD_NUMBER: _ClassVar[int]
    task_managers: int
    slots_total: int
    slots_available: int
    jobs_running: int
    jobs_finished: int
    jobs_cancelled: int
    jobs_failed: int
    def __init__(self, task_managers: _Optional[int] = ..., slots_total: _Optional[int] = ..., slots_available: _Optional[int] = ..., jobs_running: _Optional[int] = ..., jobs_finished: _Optional[int] = ..., jobs_cancelled: _Optional[int] = ..., jobs_failed: _Optional[int] = ...) -> None: ...
