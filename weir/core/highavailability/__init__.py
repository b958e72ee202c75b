"""High-availability services: the interfaces and the standalone (non-HA) implementation."""

from weir.core.highavailability.services import (
    CheckpointIdCounter,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
    HighAvailabilityServices,
    JobGraphStore,
    LeaderContender,
    LeaderElectionService,
    LeaderListener,
    LeaderRetrievalService,
)
from weir.core.highavailability.standalone import StandaloneHaServices

__all__ = [
    "CheckpointIdCounter",
    "CompletedCheckpointPointer",
    "CompletedCheckpointStore",
    "HighAvailabilityServices",
    "JobGraphStore",
    "LeaderContender",
    "LeaderElectionService",
    "LeaderListener",
    "LeaderRetrievalService",
    "StandaloneHaServices",
]
