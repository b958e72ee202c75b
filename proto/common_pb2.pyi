from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TaskManagerFileType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TASK_MANAGER_FILE_STDOUT: _ClassVar[TaskManagerFileType]
    TASK_MANAGER_FILE_LOG: _ClassVar[TaskManagerFileType]
TASK_MANAGER_FILE_STDOUT: TaskManagerFileType
TASK_MANAGER_FILE_LOG: TaskManagerFileType

class Empty(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class Ack(_message.Message):
    __slots__ = ("ok", "message")
    OK_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    ok: bool
    message: str
    def __init__(self, ok: _Optional[bool] = ..., message: _Optional[str] = ...) -> None: ...

class JobIdRequest(_message.Message):
    __slots__ = ("job_id",)
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    def __init__(self, job_id: _Optional[str] = ...) -> None: ...

class TriggerSavepointRequest(_message.Message):
    __slots__ = ("job_id", "target_directory", "stop", "drain")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    TARGET_DIRECTORY_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    target_directory: str
    stop: bool
    drain: bool
    def __init__(self, job_id: _Optional[str] = ..., target_directory: _Optional[str] = ..., stop: _Optional[bool] = ..., drain: _Optional[bool] = ...) -> None: ...

class TriggerSavepointResponse(_message.Message):
    __slots__ = ("savepoint_path",)
    SAVEPOINT_PATH_FIELD_NUMBER: _ClassVar[int]
    savepoint_path: str
    def __init__(self, savepoint_path: _Optional[str] = ...) -> None: ...

class OperatorDescriptorProto(_message.Message):
    __slots__ = ("operator_id", "name", "kind", "payload", "chained_outputs", "uid", "has_uid", "input_count")
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    CHAINED_OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    UID_FIELD_NUMBER: _ClassVar[int]
    HAS_UID_FIELD_NUMBER: _ClassVar[int]
    INPUT_COUNT_FIELD_NUMBER: _ClassVar[int]
    operator_id: str
    name: str
    kind: str
    payload: bytes
    chained_outputs: _containers.RepeatedScalarFieldContainer[str]
    uid: str
    has_uid: bool
    input_count: int
    def __init__(self, operator_id: _Optional[str] = ..., name: _Optional[str] = ..., kind: _Optional[str] = ..., payload: _Optional[bytes] = ..., chained_outputs: _Optional[_Iterable[str]] = ..., uid: _Optional[str] = ..., has_uid: _Optional[bool] = ..., input_count: _Optional[int] = ...) -> None: ...

class JobVertexProto(_message.Message):
    __slots__ = ("vertex_id", "name", "parallelism", "max_parallelism", "operators", "slot_sharing_group")
    VERTEX_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    MAX_PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    OPERATORS_FIELD_NUMBER: _ClassVar[int]
    SLOT_SHARING_GROUP_FIELD_NUMBER: _ClassVar[int]
    vertex_id: str
    name: str
    parallelism: int
    max_parallelism: int
    operators: _containers.RepeatedCompositeFieldContainer[OperatorDescriptorProto]
    slot_sharing_group: str
    def __init__(self, vertex_id: _Optional[str] = ..., name: _Optional[str] = ..., parallelism: _Optional[int] = ..., max_parallelism: _Optional[int] = ..., operators: _Optional[_Iterable[_Union[OperatorDescriptorProto, _Mapping]]] = ..., slot_sharing_group: _Optional[str] = ...) -> None: ...

class JobEdgeProto(_message.Message):
    __slots__ = ("source_vertex", "source_operator", "target_vertex", "input_index", "partitioner", "partitioner_payload", "serializer", "output_tag")
    SOURCE_VERTEX_FIELD_NUMBER: _ClassVar[int]
    SOURCE_OPERATOR_FIELD_NUMBER: _ClassVar[int]
    TARGET_VERTEX_FIELD_NUMBER: _ClassVar[int]
    INPUT_INDEX_FIELD_NUMBER: _ClassVar[int]
    PARTITIONER_FIELD_NUMBER: _ClassVar[int]
    PARTITIONER_PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    SERIALIZER_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TAG_FIELD_NUMBER: _ClassVar[int]
    source_vertex: str
    source_operator: str
    target_vertex: str
    input_index: int
    partitioner: str
    partitioner_payload: bytes
    serializer: str
    output_tag: str
    def __init__(self, source_vertex: _Optional[str] = ..., source_operator: _Optional[str] = ..., target_vertex: _Optional[str] = ..., input_index: _Optional[int] = ..., partitioner: _Optional[str] = ..., partitioner_payload: _Optional[bytes] = ..., serializer: _Optional[str] = ..., output_tag: _Optional[str] = ...) -> None: ...

class JobGraphProto(_message.Message):
    __slots__ = ("job_id", "job_name", "vertices", "edges", "config", "job_parameters")
    class ConfigEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    class JobParametersEntry(_message.Message):
        __slots__ = ("key", "value")
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: str
        def __init__(self, key: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    VERTICES_FIELD_NUMBER: _ClassVar[int]
    EDGES_FIELD_NUMBER: _ClassVar[int]
    CONFIG_FIELD_NUMBER: _ClassVar[int]
    JOB_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    job_name: str
    vertices: _containers.RepeatedCompositeFieldContainer[JobVertexProto]
    edges: _containers.RepeatedCompositeFieldContainer[JobEdgeProto]
    config: _containers.ScalarMap[str, str]
    job_parameters: _containers.ScalarMap[str, str]
    def __init__(self, job_id: _Optional[str] = ..., job_name: _Optional[str] = ..., vertices: _Optional[_Iterable[_Union[JobVertexProto, _Mapping]]] = ..., edges: _Optional[_Iterable[_Union[JobEdgeProto, _Mapping]]] = ..., config: _Optional[_Mapping[str, str]] = ..., job_parameters: _Optional[_Mapping[str, str]] = ...) -> None: ...

class IOMetrics(_message.Message):
    __slots__ = ("num_records_in", "num_records_out", "num_bytes_in", "num_bytes_out", "accumulated_idle_ms", "accumulated_back_pressured_ms")
    NUM_RECORDS_IN_FIELD_NUMBER: _ClassVar[int]
    NUM_RECORDS_OUT_FIELD_NUMBER: _ClassVar[int]
    NUM_BYTES_IN_FIELD_NUMBER: _ClassVar[int]
    NUM_BYTES_OUT_FIELD_NUMBER: _ClassVar[int]
    ACCUMULATED_IDLE_MS_FIELD_NUMBER: _ClassVar[int]
    ACCUMULATED_BACK_PRESSURED_MS_FIELD_NUMBER: _ClassVar[int]
    num_records_in: int
    num_records_out: int
    num_bytes_in: int
    num_bytes_out: int
    accumulated_idle_ms: float
    accumulated_back_pressured_ms: float
    def __init__(self, num_records_in: _Optional[int] = ..., num_records_out: _Optional[int] = ..., num_bytes_in: _Optional[int] = ..., num_bytes_out: _Optional[int] = ..., accumulated_idle_ms: _Optional[float] = ..., accumulated_back_pressured_ms: _Optional[float] = ...) -> None: ...

class TaskStatus(_message.Message):
    __slots__ = ("vertex_id", "task_name", "subtask_index", "attempt_number", "execution_attempt_id", "state", "resource_id", "failure_cause", "io_metrics")
    VERTEX_ID_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_NUMBER_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    IO_METRICS_FIELD_NUMBER: _ClassVar[int]
    vertex_id: str
    task_name: str
    subtask_index: int
    attempt_number: int
    execution_attempt_id: str
    state: str
    resource_id: str
    failure_cause: str
    io_metrics: IOMetrics
    def __init__(self, vertex_id: _Optional[str] = ..., task_name: _Optional[str] = ..., subtask_index: _Optional[int] = ..., attempt_number: _Optional[int] = ..., execution_attempt_id: _Optional[str] = ..., state: _Optional[str] = ..., resource_id: _Optional[str] = ..., failure_cause: _Optional[str] = ..., io_metrics: _Optional[_Union[IOMetrics, _Mapping]] = ...) -> None: ...

class JobDetails(_message.Message):
    __slots__ = ("job_id", "job_name", "status", "start_time_ms", "end_time_ms", "failure_cause", "tasks", "jobmaster_address", "status_version", "exception_history")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    START_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    END_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    TASKS_FIELD_NUMBER: _ClassVar[int]
    JOBMASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STATUS_VERSION_FIELD_NUMBER: _ClassVar[int]
    EXCEPTION_HISTORY_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    job_name: str
    status: str
    start_time_ms: int
    end_time_ms: int
    failure_cause: str
    tasks: _containers.RepeatedCompositeFieldContainer[TaskStatus]
    jobmaster_address: str
    status_version: int
    exception_history: _containers.RepeatedCompositeFieldContainer[ExceptionHistoryEntry]
    def __init__(self, job_id: _Optional[str] = ..., job_name: _Optional[str] = ..., status: _Optional[str] = ..., start_time_ms: _Optional[int] = ..., end_time_ms: _Optional[int] = ..., failure_cause: _Optional[str] = ..., tasks: _Optional[_Iterable[_Union[TaskStatus, _Mapping]]] = ..., jobmaster_address: _Optional[str] = ..., status_version: _Optional[int] = ..., exception_history: _Optional[_Iterable[_Union[ExceptionHistoryEntry, _Mapping]]] = ...) -> None: ...

class ExceptionHistoryEntry(_message.Message):
    __slots__ = ("timestamp_ms", "failure_cause", "task_name", "resource_id", "attempt_number", "restarted", "non_recoverable")
    TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    FAILURE_CAUSE_FIELD_NUMBER: _ClassVar[int]
    TASK_NAME_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_NUMBER_FIELD_NUMBER: _ClassVar[int]
    RESTARTED_FIELD_NUMBER: _ClassVar[int]
    NON_RECOVERABLE_FIELD_NUMBER: _ClassVar[int]
    timestamp_ms: int
    failure_cause: str
    task_name: str
    resource_id: str
    attempt_number: int
    restarted: bool
    non_recoverable: bool
    def __init__(self, timestamp_ms: _Optional[int] = ..., failure_cause: _Optional[str] = ..., task_name: _Optional[str] = ..., resource_id: _Optional[str] = ..., attempt_number: _Optional[int] = ..., restarted: _Optional[bool] = ..., non_recoverable: _Optional[bool] = ...) -> None: ...

class ProcessStatus(_message.Message):
    __slots__ = ("threads", "open_fds", "grpc_channels")
    THREADS_FIELD_NUMBER: _ClassVar[int]
    OPEN_FDS_FIELD_NUMBER: _ClassVar[int]
    GRPC_CHANNELS_FIELD_NUMBER: _ClassVar[int]
    threads: int
    open_fds: int
    grpc_channels: int
    def __init__(self, threads: _Optional[int] = ..., open_fds: _Optional[int] = ..., grpc_channels: _Optional[int] = ...) -> None: ...

class TaskManagerInfo(_message.Message):
    __slots__ = ("resource_id", "rpc_address", "data_host", "data_port", "num_slots", "free_slots", "last_heartbeat_ms", "spark_executor_id", "pid", "process")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DATA_HOST_FIELD_NUMBER: _ClassVar[int]
    DATA_PORT_FIELD_NUMBER: _ClassVar[int]
    NUM_SLOTS_FIELD_NUMBER: _ClassVar[int]
    FREE_SLOTS_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    SPARK_EXECUTOR_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    PROCESS_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    rpc_address: str
    data_host: str
    data_port: int
    num_slots: int
    free_slots: int
    last_heartbeat_ms: int
    spark_executor_id: str
    pid: int
    process: ProcessStatus
    def __init__(self, resource_id: _Optional[str] = ..., rpc_address: _Optional[str] = ..., data_host: _Optional[str] = ..., data_port: _Optional[int] = ..., num_slots: _Optional[int] = ..., free_slots: _Optional[int] = ..., last_heartbeat_ms: _Optional[int] = ..., spark_executor_id: _Optional[str] = ..., pid: _Optional[int] = ..., process: _Optional[_Union[ProcessStatus, _Mapping]] = ...) -> None: ...

class SlotAssignment(_message.Message):
    __slots__ = ("allocation_id", "resource_id", "rpc_address", "data_host", "data_port")
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    RPC_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DATA_HOST_FIELD_NUMBER: _ClassVar[int]
    DATA_PORT_FIELD_NUMBER: _ClassVar[int]
    allocation_id: str
    resource_id: str
    rpc_address: str
    data_host: str
    data_port: int
    def __init__(self, allocation_id: _Optional[str] = ..., resource_id: _Optional[str] = ..., rpc_address: _Optional[str] = ..., data_host: _Optional[str] = ..., data_port: _Optional[int] = ...) -> None: ...

class FetchCollectRequest(_message.Message):
    __slots__ = ("job_id", "operator_id", "max_batches", "timeout_ms")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCHES_FIELD_NUMBER: _ClassVar[int]
    TIMEOUT_MS_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    operator_id: str
    max_batches: int
    timeout_ms: int
    def __init__(self, job_id: _Optional[str] = ..., operator_id: _Optional[str] = ..., max_batches: _Optional[int] = ..., timeout_ms: _Optional[int] = ...) -> None: ...

class FetchCollectResponse(_message.Message):
    __slots__ = ("batches", "end_of_data", "job_status")
    BATCHES_FIELD_NUMBER: _ClassVar[int]
    END_OF_DATA_FIELD_NUMBER: _ClassVar[int]
    JOB_STATUS_FIELD_NUMBER: _ClassVar[int]
    batches: _containers.RepeatedScalarFieldContainer[bytes]
    end_of_data: bool
    job_status: str
    def __init__(self, batches: _Optional[_Iterable[bytes]] = ..., end_of_data: _Optional[bool] = ..., job_status: _Optional[str] = ...) -> None: ...

class ListTaskManagersResponse(_message.Message):
    __slots__ = ("task_managers",)
    TASK_MANAGERS_FIELD_NUMBER: _ClassVar[int]
    task_managers: _containers.RepeatedCompositeFieldContainer[TaskManagerInfo]
    def __init__(self, task_managers: _Optional[_Iterable[_Union[TaskManagerInfo, _Mapping]]] = ...) -> None: ...

class CheckpointStatisticsEntry(_message.Message):
    __slots__ = ("checkpoint_id", "status", "checkpoint_type", "trigger_timestamp_ms", "end_to_end_duration_ms", "sync_duration_ms", "async_duration_ms", "alignment_duration_ms", "state_size_bytes", "persisted_in_flight_bytes", "num_subtasks", "num_acknowledged", "external_path", "failure_message")
    CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINT_TYPE_FIELD_NUMBER: _ClassVar[int]
    TRIGGER_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    END_TO_END_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    SYNC_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ASYNC_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    ALIGNMENT_DURATION_MS_FIELD_NUMBER: _ClassVar[int]
    STATE_SIZE_BYTES_FIELD_NUMBER: _ClassVar[int]
    PERSISTED_IN_FLIGHT_BYTES_FIELD_NUMBER: _ClassVar[int]
    NUM_SUBTASKS_FIELD_NUMBER: _ClassVar[int]
    NUM_ACKNOWLEDGED_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_PATH_FIELD_NUMBER: _ClassVar[int]
    FAILURE_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    checkpoint_id: int
    status: str
    checkpoint_type: str
    trigger_timestamp_ms: int
    end_to_end_duration_ms: int
    sync_duration_ms: int
    async_duration_ms: int
    alignment_duration_ms: int
    state_size_bytes: int
    persisted_in_flight_bytes: int
    num_subtasks: int
    num_acknowledged: int
    external_path: str
    failure_message: str
    def __init__(self, checkpoint_id: _Optional[int] = ..., status: _Optional[str] = ..., checkpoint_type: _Optional[str] = ..., trigger_timestamp_ms: _Optional[int] = ..., end_to_end_duration_ms: _Optional[int] = ..., sync_duration_ms: _Optional[int] = ..., async_duration_ms: _Optional[int] = ..., alignment_duration_ms: _Optional[int] = ..., state_size_bytes: _Optional[int] = ..., persisted_in_flight_bytes: _Optional[int] = ..., num_subtasks: _Optional[int] = ..., num_acknowledged: _Optional[int] = ..., external_path: _Optional[str] = ..., failure_message: _Optional[str] = ...) -> None: ...

class CheckpointStatistics(_message.Message):
    __slots__ = ("job_id", "checkpointing_enabled", "num_triggered", "num_in_progress", "num_completed", "num_failed", "num_restored", "history", "latest_completed_path", "latest_restored_id", "latest_restored_path", "latest_restored_timestamp_ms", "latest_restored_is_savepoint", "latest_failed", "latest_savepoint")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    CHECKPOINTING_ENABLED_FIELD_NUMBER: _ClassVar[int]
    NUM_TRIGGERED_FIELD_NUMBER: _ClassVar[int]
    NUM_IN_PROGRESS_FIELD_NUMBER: _ClassVar[int]
    NUM_COMPLETED_FIELD_NUMBER: _ClassVar[int]
    NUM_FAILED_FIELD_NUMBER: _ClassVar[int]
    NUM_RESTORED_FIELD_NUMBER: _ClassVar[int]
    HISTORY_FIELD_NUMBER: _ClassVar[int]
    LATEST_COMPLETED_PATH_FIELD_NUMBER: _ClassVar[int]
    LATEST_RESTORED_ID_FIELD_NUMBER: _ClassVar[int]
    LATEST_RESTORED_PATH_FIELD_NUMBER: _ClassVar[int]
    LATEST_RESTORED_TIMESTAMP_MS_FIELD_NUMBER: _ClassVar[int]
    LATEST_RESTORED_IS_SAVEPOINT_FIELD_NUMBER: _ClassVar[int]
    LATEST_FAILED_FIELD_NUMBER: _ClassVar[int]
    LATEST_SAVEPOINT_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    checkpointing_enabled: bool
    num_triggered: int
    num_in_progress: int
    num_completed: int
    num_failed: int
    num_restored: int
    history: _containers.RepeatedCompositeFieldContainer[CheckpointStatisticsEntry]
    latest_completed_path: str
    latest_restored_id: int
    latest_restored_path: str
    latest_restored_timestamp_ms: int
    latest_restored_is_savepoint: bool
    latest_failed: CheckpointStatisticsEntry
    latest_savepoint: CheckpointStatisticsEntry
    def __init__(self, job_id: _Optional[str] = ..., checkpointing_enabled: _Optional[bool] = ..., num_triggered: _Optional[int] = ..., num_in_progress: _Optional[int] = ..., num_completed: _Optional[int] = ..., num_failed: _Optional[int] = ..., num_restored: _Optional[int] = ..., history: _Optional[_Iterable[_Union[CheckpointStatisticsEntry, _Mapping]]] = ..., latest_completed_path: _Optional[str] = ..., latest_restored_id: _Optional[int] = ..., latest_restored_path: _Optional[str] = ..., latest_restored_timestamp_ms: _Optional[int] = ..., latest_restored_is_savepoint: _Optional[bool] = ..., latest_failed: _Optional[_Union[CheckpointStatisticsEntry, _Mapping]] = ..., latest_savepoint: _Optional[_Union[CheckpointStatisticsEntry, _Mapping]] = ...) -> None: ...

class TaskManagerFileRequest(_message.Message):
    __slots__ = ("resource_id", "file_type", "max_bytes")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    FILE_TYPE_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    file_type: TaskManagerFileType
    max_bytes: int
    def __init__(self, resource_id: _Optional[str] = ..., file_type: _Optional[_Union[TaskManagerFileType, str]] = ..., max_bytes: _Optional[int] = ...) -> None: ...

class TaskManagerFileResponse(_message.Message):
    __slots__ = ("content", "truncated", "path")
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    TRUNCATED_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    content: bytes
    truncated: bool
    path: str
    def __init__(self, content: _Optional[bytes] = ..., truncated: _Optional[bool] = ..., path: _Optional[str] = ...) -> None: ...

class KvStateLocationRequest(_message.Message):
    __slots__ = ("job_id", "registration_name")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REGISTRATION_NAME_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    registration_name: str
    def __init__(self, job_id: _Optional[str] = ..., registration_name: _Optional[str] = ...) -> None: ...

class KvStateLocation(_message.Message):
    __slots__ = ("job_id", "registration_name", "operator_id", "num_key_groups", "key_type", "entries")
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    REGISTRATION_NAME_FIELD_NUMBER: _ClassVar[int]
    OPERATOR_ID_FIELD_NUMBER: _ClassVar[int]
    NUM_KEY_GROUPS_FIELD_NUMBER: _ClassVar[int]
    KEY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ENTRIES_FIELD_NUMBER: _ClassVar[int]
    job_id: str
    registration_name: str
    operator_id: str
    num_key_groups: int
    key_type: str
    entries: _containers.RepeatedCompositeFieldContainer[KvStateLocationEntry]
    def __init__(self, job_id: _Optional[str] = ..., registration_name: _Optional[str] = ..., operator_id: _Optional[str] = ..., num_key_groups: _Optional[int] = ..., key_type: _Optional[str] = ..., entries: _Optional[_Iterable[_Union[KvStateLocationEntry, _Mapping]]] = ...) -> None: ...

class KvStateLocationEntry(_message.Message):
    __slots__ = ("start_key_group", "end_key_group", "kv_state_id", "server_address", "subtask_index")
    START_KEY_GROUP_FIELD_NUMBER: _ClassVar[int]
    END_KEY_GROUP_FIELD_NUMBER: _ClassVar[int]
    KV_STATE_ID_FIELD_NUMBER: _ClassVar[int]
    SERVER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    start_key_group: int
    end_key_group: int
    kv_state_id: str
    server_address: str
    subtask_index: int
    def __init__(self, start_key_group: _Optional[int] = ..., end_key_group: _Optional[int] = ..., kv_state_id: _Optional[str] = ..., server_address: _Optional[str] = ..., subtask_index: _Optional[int] = ...) -> None: ...
