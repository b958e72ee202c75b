"""The ResourceManager service: TaskManager registry, heartbeats, slots, Spark leases."""

from weir.resourcemanager.heartbeat_monitor import HeartbeatMonitor
from weir.resourcemanager.resource_manager import RegistrationResult, ResourceManager
from weir.resourcemanager.slot_manager import (
    DefaultSlotManager,
    SlotAssignment,
    SlotRequest,
    TaskManagerLauncher,
    TaskManagerRegistration,
    TaskManagerStatus,
)
from weir.resourcemanager.spark_launcher import SparkTaskManagerLauncher, create_spark_session

__all__ = [
    "DefaultSlotManager",
    "HeartbeatMonitor",
    "RegistrationResult",
    "ResourceManager",
    "SlotAssignment",
    "SlotRequest",
    "SparkTaskManagerLauncher",
    "TaskManagerLauncher",
    "TaskManagerRegistration",
    "TaskManagerStatus",
    "create_spark_session",
]
