"""Checkpoint data shared by the JobMaster and the TaskExecutors: state handles, the
``_metadata`` format, checkpoint storage and the checkpointing settings; and the
checkpoint statistics the JobMaster reports (their protobuf codec is
``weir.core.checkpoint.checkpoint_stats_codec``)."""

from weir.core.checkpoint.checkpoint_config import (
    CheckpointingConfig,
    CheckpointingMode,
    ExternalizedCheckpointRetention,
)
from weir.core.checkpoint.checkpoint_stats import (
    CheckpointStats,
    CheckpointStatsSnapshot,
    CheckpointStatus,
    RestoredCheckpointStats,
)
from weir.core.checkpoint.metadata import (
    CheckpointMetadata,
    CheckpointType,
    OperatorState,
    decode_metadata,
    decode_task_state,
    encode_metadata,
    encode_task_state,
)
from weir.core.checkpoint.operator_state_repartitioner import repartition_operator_state
from weir.core.checkpoint.state_handles import (
    CheckpointMetrics,
    IncrementalKeyGroupsStateHandle,
    InputChannelStateHandle,
    KeyedStateHandle,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    OperatorSubtaskState,
    ResultSubpartitionStateHandle,
    SharedFile,
    StateMetaInfo,
    StreamStateHandle,
    TaskStateSnapshot,
)
from weir.core.checkpoint.storage import (
    CheckpointStorage,
    CheckpointStorageLocation,
    FileSystemCheckpointStorage,
    JobManagerCheckpointStorage,
    create_checkpoint_storage,
    read_metadata_at,
    read_state,
)

__all__ = [
    "CheckpointMetadata",
    "CheckpointMetrics",
    "CheckpointStats",
    "CheckpointStatsSnapshot",
    "CheckpointStatus",
    "CheckpointStorage",
    "CheckpointStorageLocation",
    "CheckpointType",
    "CheckpointingConfig",
    "CheckpointingMode",
    "ExternalizedCheckpointRetention",
    "FileSystemCheckpointStorage",
    "IncrementalKeyGroupsStateHandle",
    "InputChannelStateHandle",
    "JobManagerCheckpointStorage",
    "KeyGroupRange",
    "KeyGroupsStateHandle",
    "KeyedStateHandle",
    "OperatorState",
    "OperatorStateDistributionMode",
    "OperatorStateHandle",
    "OperatorStatePartition",
    "OperatorSubtaskState",
    "RestoredCheckpointStats",
    "ResultSubpartitionStateHandle",
    "SharedFile",
    "StateMetaInfo",
    "StreamStateHandle",
    "TaskStateSnapshot",
    "create_checkpoint_storage",
    "decode_metadata",
    "decode_task_state",
    "encode_metadata",
    "encode_task_state",
    "read_metadata_at",
    "read_state",
    "repartition_operator_state",
]
