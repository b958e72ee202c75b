"""What a new leader recovers jobs from, kept in the cluster's ConfigMap beside the lease:
pointers to job graphs (the graphs themselves in ``high-availability.storageDir``), the
checkpoint id counter and the pointers to the retained completed checkpoints of each job,
under the data keys::

    jobGraph-{job id}               {"path": URL of the graph in storageDir}
    checkpointIdCounter-{job id}    the next checkpoint id
    completedCheckpoints-{job id}   {"update": id of its last write, "checkpoints": [...]}

One ConfigMap for the lease and the pointers is what makes every write fenced: a write is
a compare-and-swap of the whole ConfigMap (``KubernetesLeaderElector.guarded_update``)
that also checks the lease, and Kubernetes has no transaction across two objects. A
ConfigMap holds at most 1 MiB: some thousands of jobs' pointers.

The completed checkpoints of a job are also compared with what this store last saw (its
last write's id), as the ZooKeeper store compares node versions: a writer that missed an
update (a deposed leader) is refused instead of dropping its successor's checkpoints.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass

import fsspec

from weir.core.errors import LeaderLostError, PossibleInconsistentStateError
from weir.core.highavailability.kubernetes.api_client import KubernetesApiError
from weir.core.highavailability.kubernetes.leader_elector import KubernetesLeaderElector
from weir.core.highavailability.services import (
    CheckpointIdCounter,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
    JobGraphStore,
    UnsureWrite,
    settle_unsure_write,
)
from weir.core.ids import JobId
from weir.core.job_status import JobStatus

logger = logging.getLogger(__name__)

JOB_GRAPH_PREFIX = "jobGraph-"
COUNTER_PREFIX = "checkpointIdCounter-"
CHECKPOINTS_PREFIX = "completedCheckpoints-"

TokenProvider = Callable[[], str]
"""The fencing token of this process's current leadership (raises LeaderLostError when
there is none)."""


def _read_data(elector: KubernetesLeaderElector, what: str) -> dict[str, str]:
    """The ConfigMap's data now; LeaderLostError when the API server does not answer."""
    try:
        current = elector.read()
    except KubernetesApiError as exc:
        msg = f"{what} cannot be read from the API server ({exc}); try again once it answers"
        raise LeaderLostError(msg) from exc
    return dict(current.data) if current is not None else {}


def _remove(key: str) -> Callable[[dict[str, str]], dict[str, str] | None]:
    def update(data: dict[str, str]) -> dict[str, str] | None:
        if key not in data:
            return None
        del data[key]
        return data

    return update


class KubernetesJobGraphStore(JobGraphStore):
    """Graph bytes in ``{storage_dir}/submittedJobGraph-{random}``, pointer in the ConfigMap."""

    def __init__(
        self, elector: KubernetesLeaderElector, token: TokenProvider, storage_dir: str
    ) -> None:
        self._elector = elector
        self._token = token
        self._storage_dir = storage_dir.rstrip("/")

    def put_job_graph(self, job_id: JobId, job_graph: bytes) -> None:
        key = JOB_GRAPH_PREFIX + job_id
        if self._pointer(job_id) is not None:
            return  # recovered, or submitted again by the same leader: the graph is kept
        url = f"{self._storage_dir}/submittedJobGraph-{uuid.uuid4().hex}"
        fs, fs_path = fsspec.core.url_to_fs(url)
        fs.makedirs(fs_path.rsplit("/", 1)[0], exist_ok=True)
        with fs.open(fs_path, "wb") as out:
            out.write(job_graph)
        value = json.dumps({"path": url})
        kept: list[bool] = []

        def put(data: dict[str, str]) -> dict[str, str] | None:
            kept.clear()
            if key in data:
                kept.append(True)  # written meanwhile by this leadership: that one stays
                return None
            data[key] = value
            return data

        try:
            self._elector.guarded_update(self._token(), put)
        except LeaderLostError as exc:
            if not isinstance(exc, PossibleInconsistentStateError):
                fs.rm(fs_path)
            raise
        if kept:
            fs.rm(fs_path)

    def _pointer(self, job_id: JobId) -> str | None:
        text = _read_data(self._elector, f"the job graph of {job_id}").get(
            JOB_GRAPH_PREFIX + job_id
        )
        return str(json.loads(text)["path"]) if text else None

    def remove_job_graph(self, job_id: JobId) -> None:
        url = self._pointer(job_id)
        if url is None:
            return
        self._elector.guarded_update(self._token(), _remove(JOB_GRAPH_PREFIX + job_id))
        fs, fs_path = fsspec.core.url_to_fs(url)
        try:
            fs.rm(fs_path)
        except FileNotFoundError:
            pass  # removed before: nothing left to do

    def recover_job_graph(self, job_id: JobId) -> bytes | None:
        url = self._pointer(job_id)
        if url is None:
            return None
        fs, fs_path = fsspec.core.url_to_fs(url)
        with fs.open(fs_path, "rb") as source:
            return bytes(source.read())

    def get_job_ids(self) -> list[JobId]:
        data = _read_data(self._elector, "the stored job graphs")
        return sorted(
            JobId(k[len(JOB_GRAPH_PREFIX) :]) for k in data if k.startswith(JOB_GRAPH_PREFIX)
        )


class KubernetesCheckpointIdCounter(CheckpointIdCounter):
    """The next checkpoint id of a job under one data key, advanced by compare-and-swap."""

    def __init__(
        self, elector: KubernetesLeaderElector, token: TokenProvider, job_id: JobId
    ) -> None:
        self._elector = elector
        self._token = token
        self._key = COUNTER_PREFIX + job_id
        self._lock = threading.Lock()

    def _swap(self, update: Callable[[int], int]) -> int:
        """Apply ``update`` by compare-and-swap; returns the value it replaced."""
        replaced: list[int] = []

        def swap(data: dict[str, str]) -> dict[str, str]:
            value = int(data.get(self._key, "1"))
            replaced[:] = [value]
            data[self._key] = str(update(value))
            return data

        with self._lock:
            self._elector.guarded_update(self._token(), swap)
        return replaced[0]

    def get_and_increment(self) -> int:
        return self._swap(lambda value: value + 1)

    def get(self) -> int:
        return int(_read_data(self._elector, "the checkpoint id counter").get(self._key, "1"))

    def set_count(self, count: int) -> None:
        self._swap(lambda _value: count)

    def shutdown(self, job_status: JobStatus) -> None:
        if job_status.is_globally_terminal_state():
            self._elector.guarded_update(self._token(), _remove(self._key))


def _encode_pointer(p: CompletedCheckpointPointer) -> dict[str, object]:
    return {
        "job_id": p.job_id,
        "checkpoint_id": p.checkpoint_id,
        "external_pointer": p.external_pointer,
        "timestamp_ms": p.timestamp_ms,
    }


def _decode(text: str | None) -> tuple[list[CompletedCheckpointPointer], str]:
    if not text:
        return [], ""
    stored = json.loads(text)
    pointers = [
        CompletedCheckpointPointer(
            JobId(entry["job_id"]),
            int(entry["checkpoint_id"]),
            str(entry["external_pointer"]),
            int(entry["timestamp_ms"]),
        )
        for entry in stored.get("checkpoints", [])
    ]
    return pointers, str(stored.get("update", ""))


@dataclass(frozen=True, slots=True)
class _Base:
    """What one write of the completed checkpoints goes on from, and what it writes."""

    seen: str
    before: list[CompletedCheckpointPointer]
    dropped: list[CompletedCheckpointPointer]
    retained: list[CompletedCheckpointPointer]
    subsumed: list[CompletedCheckpointPointer]


class KubernetesCompletedCheckpointStore(CompletedCheckpointStore):
    """The retained pointers of one job as one JSON value: adding one is one fenced
    compare-and-swap that also checks the value is the one this store last wrote or read.

    A write whose answer was lost (the API server restarted under it, say) may or may not
    have been applied: ``add_checkpoint`` raises PossibleInconsistentStateError and the
    store remembers that write. The next ``add_checkpoint`` (or ``settle``, before a
    restore) reads the value anyway: if it
    is that write, it was applied, and the store goes on from it (the pointers it dropped
    are subsumed then) instead of taking it for another leader's; if it is the one before,
    it was not, and the checkpoint it would have registered is subsumed."""

    def __init__(
        self,
        elector: KubernetesLeaderElector,
        token: TokenProvider,
        job_id: JobId,
        max_retained: int,
    ) -> None:
        self._elector = elector
        self._token = token
        self._job_id = job_id
        self._key = CHECKPOINTS_PREFIX + job_id
        self._max_retained = max(1, max_retained)
        self._lock = threading.Lock()
        text = _read_data(elector, f"the completed checkpoints of job {job_id}").get(self._key)
        self._pointers, self._seen = _decode(text)
        self._unsure: UnsureWrite | None = None
        """A write whose answer was lost (its update id and pointers), until settled."""
        self._dropped: list[CompletedCheckpointPointer] = []
        """Pointers a write whose answer was lost dropped, once it is known to be applied:
        subsumed with the next checkpoint added."""

    def add_checkpoint(
        self, pointer: CompletedCheckpointPointer
    ) -> list[CompletedCheckpointPointer]:
        with self._lock:
            update_id = uuid.uuid4().hex
            read: list[_Base] = []

            def add(data: dict[str, str]) -> dict[str, str]:
                read.clear()
                base = self._base(_decode(data.get(self._key))[1], pointer)
                read.append(base)
                data[self._key] = json.dumps(
                    {
                        "update": update_id,
                        "checkpoints": [_encode_pointer(p) for p in base.retained],
                    }
                )
                return data

            try:
                self._elector.guarded_update(self._token(), add)
            except LeaderLostError as exc:
                if read:
                    # What the read showed holds whatever became of the write.
                    base = read[0]
                    self._pointers, self._seen, self._dropped = base.before, base.seen, base.dropped
                    self._unsure = None
                    if isinstance(exc, PossibleInconsistentStateError):
                        self._unsure = UnsureWrite(update_id, base.retained)
                raise
            base = read[0]
            self._pointers = base.retained
            self._seen = update_id
            self._unsure = None
            self._dropped = []
            return [*base.dropped, *base.subsumed]

    def _base(self, found: str, pointer: CompletedCheckpointPointer) -> _Base:
        """What a write adding ``pointer`` goes on from, given the update id ``found`` in
        the ConfigMap; LeaderLostError when another leader wrote there."""
        seen, before, dropped = self._seen, self._pointers, self._dropped
        if self._unsure is not None:
            marker, before, settled = settle_unsure_write(
                found, seen, before, self._unsure, self._job_id
            )
            seen, dropped = str(marker), [*dropped, *settled]
        elif found != seen:
            msg = (
                f"job {self._job_id}: the completed checkpoints in the HA ConfigMap "
                "changed under this JobMaster (another leader wrote them); "
                f"checkpoint {pointer.checkpoint_id} is not registered"
            )
            raise LeaderLostError(msg)
        pointers = [*before, pointer]
        return _Base(
            seen=seen,
            before=before,
            dropped=dropped,
            retained=pointers[-self._max_retained :],
            subsumed=pointers[: -self._max_retained],
        )

    def get_latest(self) -> CompletedCheckpointPointer | None:
        with self._lock:
            return self._pointers[-1] if self._pointers else None

    def get_all(self) -> list[CompletedCheckpointPointer]:
        with self._lock:
            return list(self._pointers)

    def settle(self) -> None:
        with self._lock:
            if self._unsure is None:
                return
            data = _read_data(self._elector, f"the completed checkpoints of job {self._job_id}")
            found = _decode(data.get(self._key))[1]
            seen, self._pointers, settled = settle_unsure_write(
                found, self._seen, self._pointers, self._unsure, self._job_id
            )
            self._seen, self._dropped = str(seen), [*self._dropped, *settled]
            self._unsure = None

    def shutdown(self, job_status: JobStatus) -> None:
        if not job_status.is_globally_terminal_state():
            return
        with self._lock:
            self._elector.guarded_update(self._token(), _remove(self._key))
            self._pointers = []
            self._seen = ""
            self._unsure = None
            self._dropped = []
