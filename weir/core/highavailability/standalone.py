"""High availability for one master and no standby (``high-availability.type: none``).

Leadership is granted at once with a fixed fencing token; leaders are found at the
configured addresses; job graphs are not persisted (a restarted master starts empty);
checkpoint ids and pointers live as long as the JobMaster, as in Flink's
StandaloneHaServices. The checkpoint data itself is always in checkpoint storage.
"""

from __future__ import annotations

import itertools
import threading

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
from weir.core.ids import JobId
from weir.core.job_status import JobStatus

DEFAULT_FENCING_TOKEN = "00000000000000000000000000000000"  # noqa: S105 (not a secret)


class StandaloneLeaderElectionService(LeaderElectionService):
    def __init__(self) -> None:
        self._contender: LeaderContender | None = None

    def start(self, contender: LeaderContender) -> None:
        self._contender = contender
        contender.grant_leadership(DEFAULT_FENCING_TOKEN)

    def stop(self) -> None:
        if self._contender is not None:
            self._contender.revoke_leadership()
            self._contender = None

    def has_leadership(self, fencing_token: str) -> bool:
        return self._contender is not None and fencing_token == DEFAULT_FENCING_TOKEN


class StandaloneLeaderRetrievalService(LeaderRetrievalService):
    def __init__(self, address: str) -> None:
        self._address = address

    def start(self, listener: LeaderListener) -> None:
        listener(self._address, DEFAULT_FENCING_TOKEN)

    def stop(self) -> None:
        """Nothing to release: the address is fixed."""


class StandaloneJobGraphStore(JobGraphStore):
    """Keeps nothing: without HA there is no standby to recover jobs."""

    def put_job_graph(self, job_id: JobId, job_graph: bytes) -> None:
        del job_id, job_graph

    def remove_job_graph(self, job_id: JobId) -> None:
        del job_id

    def recover_job_graph(self, job_id: JobId) -> bytes | None:
        del job_id
        return None

    def get_job_ids(self) -> list[JobId]:
        return []


class StandaloneCheckpointIdCounter(CheckpointIdCounter):
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 1

    def get_and_increment(self) -> int:
        with self._lock:
            value = self._next
            self._next += 1
            return value

    def get(self) -> int:
        return self._next

    def set_count(self, count: int) -> None:
        with self._lock:
            self._next = count


class StandaloneCompletedCheckpointStore(CompletedCheckpointStore):
    def __init__(self, max_retained: int) -> None:
        self._max_retained = max(1, max_retained)
        self._pointers: list[CompletedCheckpointPointer] = []
        self._lock = threading.Lock()

    def add_checkpoint(
        self, pointer: CompletedCheckpointPointer
    ) -> list[CompletedCheckpointPointer]:
        with self._lock:
            self._pointers.append(pointer)
            subsumed = self._pointers[: -self._max_retained]
            self._pointers = self._pointers[-self._max_retained :]
            return subsumed

    def get_latest(self) -> CompletedCheckpointPointer | None:
        with self._lock:
            return self._pointers[-1] if self._pointers else None

    def get_all(self) -> list[CompletedCheckpointPointer]:
        with self._lock:
            return list(self._pointers)

    def shutdown(self, job_status: JobStatus) -> None:
        if job_status.is_globally_terminal_state():
            with self._lock:
                self._pointers = []


class StandaloneHaServices(HighAvailabilityServices):
    def __init__(self, dispatcher_address: str = "", resource_manager_address: str = "") -> None:
        self.dispatcher_address = dispatcher_address
        self.resource_manager_address = resource_manager_address
        self._counter = itertools.count()

    def get_dispatcher_leader_election(self) -> LeaderElectionService:
        return StandaloneLeaderElectionService()

    def get_resource_manager_leader_election(self) -> LeaderElectionService:
        return StandaloneLeaderElectionService()

    def get_job_master_leader_election(self, job_id: JobId) -> LeaderElectionService:
        del job_id
        return StandaloneLeaderElectionService()

    def get_dispatcher_leader_retriever(self) -> LeaderRetrievalService:
        return StandaloneLeaderRetrievalService(self.dispatcher_address)

    def get_resource_manager_leader_retriever(self) -> LeaderRetrievalService:
        return StandaloneLeaderRetrievalService(self.resource_manager_address)

    def get_job_graph_store(self) -> JobGraphStore:
        return StandaloneJobGraphStore()

    def create_checkpoint_id_counter(self, job_id: JobId) -> CheckpointIdCounter:
        del job_id
        return StandaloneCheckpointIdCounter()

    def create_completed_checkpoint_store(
        self, job_id: JobId, max_retained: int
    ) -> CompletedCheckpointStore:
        del job_id
        return StandaloneCompletedCheckpointStore(max_retained)

    def close(self) -> None:
        """Nothing to release."""
