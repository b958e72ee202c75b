"""What a new leader recovers jobs from, kept in ZooKeeper: pointers to job graphs (the
graphs themselves in ``high-availability.storageDir``), the checkpoint id counter and the
pointers to the retained completed checkpoints of each job.

Every write is fenced (``ZooKeeperLeaderLatch.guarded_transaction``: it fails once this
process's leadership is over) and every update of a shared node is a compare-and-set on the
version last read, so two writers never silently overwrite each other: the loser gets a
LeaderLostError, which the checkpoint coordinator treats as a checkpoint that could not be
finalized (nothing is committed). Reads and writes wait for ZooKeeper's answer only while
connected (``ZooKeeperLeaderLatch.await_reply``): a master cut off from ZooKeeper is not
held up until the connection is back.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
import uuid
from collections.abc import Callable
from typing import Any, cast

import fsspec

from weir.core.errors import LeaderLostError, PossibleInconsistentStateError
from weir.core.highavailability.services import (
    CheckpointIdCounter,
    CompletedCheckpointPointer,
    CompletedCheckpointStore,
    JobGraphStore,
    UnsureWrite,
    settle_unsure_write,
)
from weir.core.highavailability.zookeeper.client import (
    checkpoint_counter_path,
    checkpoints_path,
    job_graph_path,
)
from weir.core.highavailability.zookeeper.leader_latch import ZooKeeperLeaderLatch
from weir.core.ids import JobId
from weir.core.job_status import JobStatus

logger = logging.getLogger(__name__)

TokenProvider = Callable[[], str]
"""The fencing token of this process's current leadership (raises LeaderLostError when
there is none)."""


class ZooKeeperJobGraphStore(JobGraphStore):
    """Graph bytes in ``{storage_dir}/submittedJobGraph-{random}``, pointer in ZooKeeper."""

    def __init__(
        self, client: Any, latch: ZooKeeperLeaderLatch, token: TokenProvider, storage_dir: str
    ) -> None:
        self._client = client
        self._latch = latch
        self._token = token
        self._storage_dir = storage_dir.rstrip("/")

    def put_job_graph(self, job_id: JobId, job_graph: bytes) -> None:
        path = job_graph_path(job_id)
        existing = self._pointer(job_id)
        if existing is not None:
            return  # recovered, or submitted again by the same leader: the graph is kept
        url = f"{self._storage_dir}/submittedJobGraph-{uuid.uuid4().hex}"
        fs, fs_path = fsspec.core.url_to_fs(url)
        fs.makedirs(fs_path.rsplit("/", 1)[0], exist_ok=True)
        with fs.open(fs_path, "wb") as out:
            out.write(job_graph)
        self._latch.await_reply(self._client.ensure_path_async("/jobgraphs"))
        data = json.dumps({"path": url}).encode()
        try:
            self._latch.guarded_transaction(self._token(), lambda t: t.create(path, data))
        except LeaderLostError:
            fs.rm(fs_path)
            raise

    def _pointer(self, job_id: JobId) -> str | None:
        from kazoo.exceptions import NoNodeError  # noqa: PLC0415 (optional dependency)

        try:
            data, _ = self._latch.await_reply(self._client.get_async(job_graph_path(job_id)))
        except NoNodeError:
            return None
        return str(json.loads(data)["path"])

    def remove_job_graph(self, job_id: JobId) -> None:
        from kazoo.exceptions import NoNodeError  # noqa: PLC0415 (optional dependency)

        url = self._pointer(job_id)
        if url is None:
            return
        try:
            self._latch.guarded_transaction(
                self._token(), lambda t: t.delete(job_graph_path(job_id))
            )
        except NoNodeError:
            return
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
        from kazoo.exceptions import NoNodeError  # noqa: PLC0415 (optional dependency)

        try:
            children = self._latch.await_reply(self._client.get_children_async("/jobgraphs"))
            return [JobId(child) for child in sorted(children)]
        except NoNodeError:
            return []


def _set_data(path: str, data: bytes, version: int, transaction: Any) -> None:
    transaction.set_data(path, data, version)


def _delete_fenced(latch: ZooKeeperLeaderLatch, token: TokenProvider, path: str) -> None:
    """Delete ``path`` in a fenced write (LeaderLostError when this master no longer
    leads); a node already gone is no error."""
    from kazoo.exceptions import NoNodeError  # noqa: PLC0415 (optional dependency)

    try:
        latch.guarded_transaction(token(), lambda t: t.delete(path))
    except NoNodeError:
        pass  # gone already: what was asked


class ZooKeeperCheckpointIdCounter(CheckpointIdCounter):
    """The next checkpoint id of a job in one node, advanced by compare-and-set."""

    def __init__(
        self, client: Any, latch: ZooKeeperLeaderLatch, token: TokenProvider, job_id: JobId
    ) -> None:
        self._client = client
        self._latch = latch
        self._token = token
        self._path = checkpoint_counter_path(job_id)
        self._lock = threading.Lock()
        latch.await_reply(client.ensure_path_async("/checkpoint_id_counter"))
        if latch.await_reply(client.exists_async(self._path)) is None:
            from kazoo.exceptions import NodeExistsError  # noqa: PLC0415

            try:
                self._latch.guarded_transaction(token(), lambda t: t.create(self._path, b"1"))
            except NodeExistsError:
                pass  # another contender of the same leadership created it first

    def _read(self) -> tuple[int, int]:
        from kazoo.exceptions import KazooException  # noqa: PLC0415 (optional dependency)

        try:
            data, stat = self._latch.await_reply(self._client.get_async(self._path))
        except KazooException as exc:
            msg = (
                f"the checkpoint id counter in ZooKeeper cannot be read ({type(exc).__name__}); "
                "leadership is in doubt until ZooKeeper answers again"
            )
            raise LeaderLostError(msg) from exc
        return int(data), stat.version

    def _swap(self, update: Callable[[int], int]) -> int:
        """Apply ``update`` by compare-and-set; returns the value it replaced."""
        from kazoo.exceptions import BadVersionError  # noqa: PLC0415

        with self._lock:
            while True:
                value, version = self._read()
                new = str(update(value)).encode()
                try:
                    self._latch.guarded_transaction(
                        self._token(), functools.partial(_set_data, self._path, new, version)
                    )
                except BadVersionError:
                    continue  # another writer came first: read again
                return value

    def get_and_increment(self) -> int:
        return self._swap(lambda value: value + 1)

    def shutdown(self, job_status: JobStatus) -> None:
        if job_status.is_globally_terminal_state():
            _delete_fenced(self._latch, self._token, self._path)

    def get(self) -> int:
        return self._read()[0]

    def set_count(self, count: int) -> None:
        self._swap(lambda _value: count)


class ZooKeeperCompletedCheckpointStore(CompletedCheckpointStore):
    """The retained pointers of one job as a JSON list in one node: adding one is one
    compare-and-set on the version this store last saw, so a writer that missed an update
    (a deposed leader) is refused instead of dropping its successor's checkpoints.

    A write whose answer was lost (the connection dropped before ZooKeeper answered) may
    or may not have been applied: ``add_checkpoint`` raises PossibleInconsistentStateError
    and the store remembers that write. The next ``add_checkpoint``, or ``settle`` before
    a restore, reads the node: holding that write's version and bytes, it was applied and
    the store goes on from it (the pointers it dropped are subsumed then); still holding
    what the store saw before, it was not, and the checkpoint it would have registered is
    subsumed. ZooKeeper answers a session's requests in order, so once a read made after
    the reconnection answers, the lost write has been applied or never will be."""

    def __init__(
        self,
        client: Any,
        latch: ZooKeeperLeaderLatch,
        token: TokenProvider,
        job_id: JobId,
        max_retained: int,
    ) -> None:
        from kazoo.exceptions import NodeExistsError  # noqa: PLC0415 (optional dependency)

        self._client = client
        self._latch = latch
        self._token = token
        self._job_id = job_id
        self._path = checkpoints_path(job_id)
        self._max_retained = max(1, max_retained)
        self._lock = threading.Lock()
        latch.await_reply(client.ensure_path_async("/checkpoints"))
        if latch.await_reply(client.exists_async(self._path)) is None:
            try:
                self._latch.guarded_transaction(token(), lambda t: t.create(self._path, b"[]"))
            except NodeExistsError:
                pass
        self._pointers, self._seen = self._read()
        """What the node held when this store last read or wrote it, and its version and
        bytes then."""
        self._unsure: UnsureWrite | None = None
        self._dropped: list[CompletedCheckpointPointer] = []
        """No longer retained since the last write that answered, not yet handed back."""

    def _read(self) -> tuple[list[CompletedCheckpointPointer], tuple[int, bytes]]:
        data, stat = self._latch.await_reply(self._client.get_async(self._path))
        pointers = [
            CompletedCheckpointPointer(
                JobId(entry["job_id"]),
                int(entry["checkpoint_id"]),
                str(entry["external_pointer"]),
                int(entry["timestamp_ms"]),
            )
            for entry in json.loads(data or b"[]")
        ]
        return pointers, (stat.version, data)

    def _settle_locked(self) -> None:
        if self._unsure is None:
            return
        found = self._read()[1]
        seen, self._pointers, settled = settle_unsure_write(
            found, self._seen, self._pointers, self._unsure, self._job_id
        )
        self._seen = cast("tuple[int, bytes]", seen)
        self._dropped = [*self._dropped, *settled]
        self._unsure = None

    def settle(self) -> None:
        with self._lock:
            self._settle_locked()

    def add_checkpoint(
        self, pointer: CompletedCheckpointPointer
    ) -> list[CompletedCheckpointPointer]:
        from kazoo.exceptions import BadVersionError  # noqa: PLC0415 (optional dependency)

        with self._lock:
            self._settle_locked()
            pointers = [*self._pointers, pointer]
            subsumed = pointers[: -self._max_retained]
            retained = pointers[-self._max_retained :]
            data = json.dumps(
                [
                    {
                        "job_id": p.job_id,
                        "checkpoint_id": p.checkpoint_id,
                        "external_pointer": p.external_pointer,
                        "timestamp_ms": p.timestamp_ms,
                    }
                    for p in retained
                ]
            ).encode()
            version = self._seen[0]
            try:
                self._latch.guarded_transaction(
                    self._token(), lambda t: t.set_data(self._path, data, version)
                )
            except BadVersionError as exc:
                msg = (
                    f"job {self._job_id}: the completed checkpoints in ZooKeeper changed under "
                    f"this JobMaster (another leader wrote them); checkpoint "
                    f"{pointer.checkpoint_id} is not registered"
                )
                raise LeaderLostError(msg) from exc
            except PossibleInconsistentStateError:
                self._unsure = UnsureWrite((version + 1, data), retained)
                raise
            self._pointers = retained
            self._seen = (version + 1, data)
            dropped, self._dropped = self._dropped, []
            return [*dropped, *subsumed]

    def get_latest(self) -> CompletedCheckpointPointer | None:
        with self._lock:
            return self._pointers[-1] if self._pointers else None

    def shutdown(self, job_status: JobStatus) -> None:
        if not job_status.is_globally_terminal_state():
            return
        with self._lock:
            _delete_fenced(self._latch, self._token, self._path)
            self._pointers = []

    def get_all(self) -> list[CompletedCheckpointPointer]:
        with self._lock:
            return list(self._pointers)
