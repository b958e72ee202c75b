"""The TaskManager data plane: result partitions, input gates, credit-based TCP transport."""

from weir.taskmanager.network.api import (
    BufferKind,
    FatalErrorHandler,
    InputGate,
    InputGateStats,
    NetworkConfig,
    NetworkEnvironment,
    PartitionClosedError,
    PartitionStats,
    ResultPartitionWriter,
)
from weir.taskmanager.network.input_gate import DefaultInputGate
from weir.taskmanager.network.network_environment import DefaultNetworkEnvironment
from weir.taskmanager.network.result_partition import ResultPartition

__all__ = [
    "BufferKind",
    "DefaultInputGate",
    "DefaultNetworkEnvironment",
    "FatalErrorHandler",
    "InputGate",
    "InputGateStats",
    "NetworkConfig",
    "NetworkEnvironment",
    "PartitionClosedError",
    "PartitionStats",
    "ResultPartition",
    "ResultPartitionWriter",
]
