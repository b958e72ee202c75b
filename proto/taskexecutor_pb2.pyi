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
    __slots__ = ("jobmaster_address", "deployment")
    JOBMASTER_ADDRESS_FIELD_NUMBER: _ClassVar[int]
    DEPLOYMENT_FIELD_NUMBER: _ClassVar[int]
    jobmaster_address: str
    deployment: TaskDeploymentDescriptorProto
    def __init__(self, jobmaster_address: _Optional[str] = ..., deployment: _Optional[_Union[TaskDeploymentDescriptorProto, _Mapping]] = ...) -> None: ...

class TaskDeploymentDescriptorProto(_message.Message):
    __slots__ = ("version", "weir_version", "job_id", "job_name", "vertex", "subtask_index", "attempt_number", "execution_attempt_id", "allocation_id", "input_gates", "result_partitions", "job_config", "job_parameters", "restored_state", "has_restored_state", "restored_checkpoint_id", "finished_on_restore")
    class JobConfigEntry(_message.Message):
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
    VERSION_FIELD_NUMBER: _ClassVar[int]
    WEIR_VERSION_FIELD_NUMBER: _ClassVar[int]
    JOB_ID_FIELD_NUMBER: _ClassVar[int]
    JOB_NAME_FIELD_NUMBER: _ClassVar[int]
    VERTEX_FIELD_NUMBER: _ClassVar[int]
    SUBTASK_INDEX_FIELD_NUMBER: _ClassVar[int]
    ATTEMPT_NUMBER_FIELD_NUMBER: _ClassVar[int]
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    ALLOCATION_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_GATES_FIELD_NUMBER: _ClassVar[int]
    RESULT_PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    JOB_CONFIG_FIELD_NUMBER: _ClassVar[int]
    JOB_PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    RESTORED_STATE_FIELD_NUMBER: _ClassVar[int]
    HAS_RESTORED_STATE_FIELD_NUMBER: _ClassVar[int]
    RESTORED_CHECKPOINT_ID_FIELD_NUMBER: _ClassVar[int]
    FINISHED_ON_RESTORE_FIELD_NUMBER: _ClassVar[int]
    version: int
    weir_version: str
    job_id: str
    job_name: str
    vertex: _common_pb2.JobVertexProto
    subtask_index: int
    attempt_number: int
    execution_attempt_id: str
    allocation_id: str
    input_gates: _containers.RepeatedCompositeFieldContainer[InputGateDescriptorProto]
    result_partitions: _containers.RepeatedCompositeFieldContainer[ResultPartitionDescriptorProto]
    job_config: _containers.ScalarMap[str, str]
    job_parameters: _containers.ScalarMap[str, str]
    restored_state: bytes
    has_restored_state: bool
    restored_checkpoint_id: int
    finished_on_restore: bool
    def __init__(self, version: _Optional[int] = ..., weir_version: _Optional[str] = ..., job_id: _Optional[str] = ..., job_name: _Optional[str] = ..., vertex: _Optional[_Union[_common_pb2.JobVertexProto, _Mapping]] = ..., subtask_index: _Optional[int] = ..., attempt_number: _Optional[int] = ..., execution_attempt_id: _Optional[str] = ..., allocation_id: _Optional[str] = ..., input_gates: _Optional[_Iterable[_Union[InputGateDescriptorProto, _Mapping]]] = ..., result_partitions: _Optional[_Iterable[_Union[ResultPartitionDescriptorProto, _Mapping]]] = ..., job_config: _Optional[_Mapping[str, str]] = ..., job_parameters: _Optional[_Mapping[str, str]] = ..., restored_state: _Optional[bytes] = ..., has_restored_state: _Optional[bool] = ..., restored_checkpoint_id: _Optional[int] = ..., finished_on_restore: _Optional[bool] = ...) -> None: ...

class ResultPartitionIdProto(_message.Message):
    __slots__ = ("producer", "edge_index")
    PRODUCER_FIELD_NUMBER: _ClassVar[int]
    EDGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    producer: str
    edge_index: int
    def __init__(self, producer: _Optional[str] = ..., edge_index: _Optional[int] = ...) -> None: ...

class ResultPartitionDescriptorProto(_message.Message):
    __slots__ = ("partition_id", "edge", "num_subpartitions", "consumer_subtasks", "consumer_parallelism", "consumer_max_parallelism")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    EDGE_FIELD_NUMBER: _ClassVar[int]
    NUM_SUBPARTITIONS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_SUBTASKS_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    CONSUMER_MAX_PARALLELISM_FIELD_NUMBER: _ClassVar[int]
    partition_id: ResultPartitionIdProto
    edge: _common_pb2.JobEdgeProto
    num_subpartitions: int
    consumer_subtasks: _containers.RepeatedScalarFieldContainer[int]
    consumer_parallelism: int
    consumer_max_parallelism: int
    def __init__(self, partition_id: _Optional[_Union[ResultPartitionIdProto, _Mapping]] = ..., edge: _Optional[_Union[_common_pb2.JobEdgeProto, _Mapping]] = ..., num_subpartitions: _Optional[int] = ..., consumer_subtasks: _Optional[_Iterable[int]] = ..., consumer_parallelism: _Optional[int] = ..., consumer_max_parallelism: _Optional[int] = ...) -> None: ...

class TaskManagerLocationProto(_message.Message):
    __slots__ = ("resource_id", "host", "data_port")
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    DATA_PORT_FIELD_NUMBER: _ClassVar[int]
    resource_id: str
    host: str
    data_port: int
    def __init__(self, resource_id: _Optional[str] = ..., host: _Optional[str] = ..., data_port: _Optional[int] = ...) -> None: ...

class InputChannelDescriptorProto(_message.Message):
    __slots__ = ("partition_id", "subpartition_index", "producer_location", "is_local")
    PARTITION_ID_FIELD_NUMBER: _ClassVar[int]
    SUBPARTITION_INDEX_FIELD_NUMBER: _ClassVar[int]
    PRODUCER_LOCATION_FIELD_NUMBER: _ClassVar[int]
    IS_LOCAL_FIELD_NUMBER: _ClassVar[int]
    partition_id: ResultPartitionIdProto
    subpartition_index: int
    producer_location: TaskManagerLocationProto
    is_local: bool
    def __init__(self, partition_id: _Optional[_Union[ResultPartitionIdProto, _Mapping]] = ..., subpartition_index: _Optional[int] = ..., producer_location: _Optional[_Union[TaskManagerLocationProto, _Mapping]] = ..., is_local: _Optional[bool] = ...) -> None: ...

class InputGateDescriptorProto(_message.Message):
    __slots__ = ("edge_index", "edge", "channels")
    EDGE_INDEX_FIELD_NUMBER: _ClassVar[int]
    EDGE_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    edge_index: int
    edge: _common_pb2.JobEdgeProto
    channels: _containers.RepeatedCompositeFieldContainer[InputChannelDescriptorProto]
    def __init__(self, edge_index: _Optional[int] = ..., edge: _Optional[_Union[_common_pb2.JobEdgeProto, _Mapping]] = ..., channels: _Optional[_Iterable[_Union[InputChannelDescriptorProto, _Mapping]]] = ...) -> None: ...

class CancelTaskRequest(_message.Message):
    __slots__ = ("execution_attempt_id",)
    EXECUTION_ATTEMPT_ID_FIELD_NUMBER: _ClassVar[int]
    execution_attempt_id: str
    def __init__(self, execution_attempt_id: _Optional[str] = ...) -> None: ...

class StopRequest(_message.Message):
    __slots__ = ("reason", "resource_id")
    REASON_FIELD_NUMBER: _ClassVar[int]
    RESOURCE_ID_FIELD_NUMBER: _ClassVar[int]
    reason: str
    resource_id: str
    def __init__(self, reason: _Optional[str] = ..., resource_id: _Optional[str] = ...) -> None: ...

class CheckpointOptions(_message.Message):
    __slots__ = ("checkpoint_type", "mode", "unaligned", "snapshot_compression", "target_location", "drain")
    CHECKPOINT_TYPE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    UNALIGNED_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_COMPRESSION_FIELD_NUMBER: _ClassVar[int]
    TARGET_LOCATION_FIELD_NUMBER: _ClassVar[int]
    DRAIN_FIELD_NUMBER: _ClassVar[int]
    checkpoint_type: str
    mode: str
    unaligned: bool
    snapshot_compression: bool
    target_location: str
    drain: bool
    def __init__(self, checkpoint_type: _Optional[str] = ..., mode: _Optional[str] = ..., unaligned: _Optional[bool] = ..., snapshot_compression: _Optional[bool] = ..., target_location: _Optional[str] = ..., drain: _Optional[bool] = ...) -> None: ...

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
