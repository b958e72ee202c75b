"""What high availability gives the services: leader election and retrieval, a store for
job graphs, checkpoint id counters and completed-checkpoint pointers (Flink's
HighAvailabilityServices). The standalone implementation serves a single master; the
ZooKeeper one plugs in behind the same interfaces without touching the services."""

from __future__ import annotations

import abc
from collections.abc import Callable
from dataclasses import dataclass

from weir.core.errors import LeaderLostError
from weir.core.ids import JobId
from weir.core.job_status import JobStatus


class LeaderContender(abc.ABC):
    """A component that wants to lead (Dispatcher, ResourceManager, a JobMaster)."""

    @abc.abstractmethod
    def grant_leadership(self, fencing_token: str) -> None:
        """Called (from a service thread) when this contender becomes leader."""

    @abc.abstractmethod
    def revoke_leadership(self) -> None:
        """Called when leadership is lost; the contender must stop acting as leader."""

    def suspend_leadership(self, suspended: bool) -> None:  # noqa: B027 (optional hook)
        """Leadership is in doubt (``True``: the ZooKeeper connection is suspended, the
        session may expire) or confirmed again (``False``). A leader commits nothing
        while in doubt. Called from a service thread; by default nothing happens."""

    @property
    @abc.abstractmethod
    def address(self) -> str:
        """The address to publish to clients and peers while leading."""


class LeaderElectionService(abc.ABC):
    @abc.abstractmethod
    def start(self, contender: LeaderContender) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    @abc.abstractmethod
    def has_leadership(self, fencing_token: str) -> bool:
        """True while the contender holding ``fencing_token`` is the leader."""

    def confirm_leadership(self, fencing_token: str) -> bool:
        """Like ``has_leadership``, but asks the source of truth (ZooKeeper) now instead
        of trusting this process's view; for the moments before an irrevocable act
        (telling tasks to commit). May block for a round trip."""
        return self.has_leadership(fencing_token)


LeaderListener = Callable[[str | None, str | None], None]
"""Called with ``(address, fencing_token)`` when the leader changes; ``(None, None)`` when
there is none."""


class LeaderRetrievalService(abc.ABC):
    @abc.abstractmethod
    def start(self, listener: LeaderListener) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...


class JobGraphStore(abc.ABC):
    """Submitted job graphs, so a new leader can recover running jobs."""

    @abc.abstractmethod
    def put_job_graph(self, job_id: JobId, job_graph: bytes) -> None: ...

    @abc.abstractmethod
    def remove_job_graph(self, job_id: JobId) -> None: ...

    @abc.abstractmethod
    def recover_job_graph(self, job_id: JobId) -> bytes | None: ...

    @abc.abstractmethod
    def get_job_ids(self) -> list[JobId]: ...


class CheckpointIdCounter(abc.ABC):
    """Checkpoint ids of one job: never repeat, also across restarts and failovers."""

    @abc.abstractmethod
    def get_and_increment(self) -> int: ...

    @abc.abstractmethod
    def get(self) -> int: ...

    @abc.abstractmethod
    def set_count(self, count: int) -> None: ...

    def shutdown(self, job_status: JobStatus) -> None:  # noqa: B027 (nothing kept outside)
        """The job ended in ``job_status``: a globally terminal job's counter is dropped
        (Flink's ``CheckpointIDCounter.shutdown``); kept otherwise, for the next leader."""


@dataclass(frozen=True, slots=True)
class CompletedCheckpointPointer:
    job_id: JobId
    checkpoint_id: int
    external_pointer: str
    """Where the checkpoint's ``_metadata`` lives (an fsspec URL), or a storage-specific key."""
    timestamp_ms: int


@dataclass(frozen=True, slots=True)
class UnsureWrite:
    """A write of a completed-checkpoint store whose answer was lost: it may have been
    applied or not. ``marker`` is what the store's node would show had it been applied
    (a version, an update id), ``retained`` the pointers it would have left there."""

    marker: object
    retained: list[CompletedCheckpointPointer]


def settle_unsure_write(
    found: object,
    seen: object,
    before: list[CompletedCheckpointPointer],
    unsure: UnsureWrite,
    job_id: JobId,
) -> tuple[object, list[CompletedCheckpointPointer], list[CompletedCheckpointPointer]]:
    """What became of ``unsure``, from the marker ``found`` in the store's node now, when
    the store last saw ``seen`` holding ``before``: the marker and pointers the store goes
    on from, and the pointers no longer retained whose files are to be deleted. Applied:
    what the write dropped. Not applied: the checkpoint it would have registered.
    LeaderLostError when neither is there (another leader wrote)."""
    if found == unsure.marker:
        return found, unsure.retained, [p for p in before if p not in unsure.retained]
    if found == seen:
        return seen, before, [p for p in unsure.retained if p not in before]
    msg = (
        f"job {job_id}: the completed checkpoints in the HA store changed under this "
        "JobMaster (another leader wrote them) while the answer to its last write was lost"
    )
    raise LeaderLostError(msg)


class CompletedCheckpointStore(abc.ABC):
    """Pointers to the retained completed checkpoints of one job, newest last."""

    @abc.abstractmethod
    def add_checkpoint(
        self, pointer: CompletedCheckpointPointer
    ) -> list[CompletedCheckpointPointer]:
        """Add ``pointer``; returns the pointers it subsumed (no longer retained)."""

    @abc.abstractmethod
    def get_latest(self) -> CompletedCheckpointPointer | None: ...

    @abc.abstractmethod
    def get_all(self) -> list[CompletedCheckpointPointer]: ...

    def settle(self) -> None:  # noqa: B027 (nothing kept outside)
        """Find out what became of a write whose answer was lost, if there is one, so
        that ``get_all`` is what the HA store holds: called before a restore, which must
        not go back behind a checkpoint the store registered. LeaderLostError when the
        store cannot be read now."""

    def shutdown(self, job_status: JobStatus) -> None:  # noqa: B027 (nothing kept outside)
        """The job ended in ``job_status``: a globally terminal job's pointers are dropped
        (the checkpoints themselves are kept or deleted by the coordinator, as the
        retention setting says; a retained one is found by its path); kept otherwise, for
        the next leader (Flink's ``CompletedCheckpointStore.shutdown``)."""


class HighAvailabilityServices(abc.ABC):
    @abc.abstractmethod
    def get_dispatcher_leader_election(self) -> LeaderElectionService: ...

    @abc.abstractmethod
    def get_resource_manager_leader_election(self) -> LeaderElectionService: ...

    @abc.abstractmethod
    def get_job_master_leader_election(self, job_id: JobId) -> LeaderElectionService: ...

    @abc.abstractmethod
    def get_dispatcher_leader_retriever(self) -> LeaderRetrievalService: ...

    @abc.abstractmethod
    def get_resource_manager_leader_retriever(self) -> LeaderRetrievalService: ...

    @abc.abstractmethod
    def get_job_graph_store(self) -> JobGraphStore: ...

    @abc.abstractmethod
    def create_checkpoint_id_counter(self, job_id: JobId) -> CheckpointIdCounter: ...

    @abc.abstractmethod
    def create_completed_checkpoint_store(
        self, job_id: JobId, max_retained: int
    ) -> CompletedCheckpointStore: ...

    def completed_checkpoint_dir(self) -> str | None:
        """Where a JobMaster writes the ``_metadata`` of checkpoints it would otherwise keep
        only in its memory (``execution.checkpointing.storage: jobmanager``, state inline),
        so that the next leader can restore them (Flink writes completed checkpoints to
        ``high-availability.storageDir``); None when nothing outlives the master."""
        return None

    @abc.abstractmethod
    def close(self) -> None: ...
