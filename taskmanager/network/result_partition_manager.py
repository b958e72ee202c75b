"""The registry of an environment's result partitions (Flink's ``ResultPartitionManager``).

Tasks of a job are deployed concurrently, so a consumer may ask for a subpartition
before its producer has registered the partition: such requests are parked and
answered when the partition registers.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from weir.core.deployment import ResultPartitionId
from weir.core.errors import NetworkError
from weir.taskmanager.network.result_partition import ResultPartition

logger = logging.getLogger(__name__)

OnPartitionReady = Callable[[ResultPartition], None]


class ResultPartitionManager:
    """Thread-safe; callbacks run outside its lock, on the thread that made them due."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._partitions: dict[ResultPartitionId, ResultPartition] = {}
        self._parked: dict[ResultPartitionId, list[OnPartitionReady]] = {}
        self._closed = False

    def register(self, partition: ResultPartition) -> None:
        with self._lock:
            if self._closed:
                msg = (
                    f"cannot register result partition {partition.partition_id}: the network "
                    "environment is closed"
                )
                raise NetworkError(msg)
            if partition.partition_id in self._partitions:
                msg = (
                    f"result partition {partition.partition_id} is already registered; "
                    "each task attempt must produce each edge once"
                )
                raise NetworkError(msg)
            self._partitions[partition.partition_id] = partition
            waiting = self._parked.pop(partition.partition_id, [])
        for on_ready in waiting:
            on_ready(partition)

    def request(self, partition_id: ResultPartitionId, on_ready: OnPartitionReady) -> None:
        """Call ``on_ready(partition)`` now if it is registered, or when it registers."""
        with self._lock:
            partition = self._partitions.get(partition_id)
            if partition is None:
                self._parked.setdefault(partition_id, []).append(on_ready)
                logger.debug("request for %s parked until its producer registers", partition_id)
                return
        on_ready(partition)

    def cancel_request(self, partition_id: ResultPartitionId, on_ready: OnPartitionReady) -> None:
        with self._lock:
            waiting = self._parked.get(partition_id)
            if waiting and on_ready in waiting:
                waiting.remove(on_ready)
                if not waiting:
                    del self._parked[partition_id]

    def release(self, partition: ResultPartition, cause: BaseException | None = None) -> None:
        """Unregister and release; called when all consumers are done, or on failure."""
        with self._lock:
            if self._partitions.get(partition.partition_id) is partition:
                del self._partitions[partition.partition_id]
        partition.release(cause)

    def get(self, partition_id: ResultPartitionId) -> ResultPartition | None:
        with self._lock:
            return self._partitions.get(partition_id)

    def __len__(self) -> int:
        with self._lock:
            return len(self._partitions)

    def close(self) -> None:
        """Release every partition (blocked writers raise PartitionClosedError)."""
        with self._lock:
            self._closed = True
            partitions = list(self._partitions.values())
            self._partitions.clear()
            self._parked.clear()
        for partition in partitions:
            partition.release(None)
