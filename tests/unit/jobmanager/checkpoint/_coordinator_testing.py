"""Test doubles for the CheckpointCoordinator: hand-driven time and a recording gateway."""

from __future__ import annotations

import heapq
import itertools
import uuid
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field

import fsspec

from weir.core.checkpoint import CheckpointingConfig, FileSystemCheckpointStorage
from weir.core.highavailability.standalone import (
    StandaloneCheckpointIdCounter,
    StandaloneCompletedCheckpointStore,
)
from weir.core.ids import ExecutionAttemptId, JobId, OperatorId
from weir.jobmanager.checkpoint import CheckpointCoordinator, CheckpointPlan, CheckpointTask

JOB = JobId("f" * 32)


class _Timer:
    def __init__(self, action):
        self.action = action
        self.cancelled = False

    def cancel(self):
        self.cancelled = True


class TestingTime:
    """A clock and a scheduled executor that move only when ``advance`` is called."""

    def __init__(self, start_ms: int = 1_000_000) -> None:
        self.now = start_ms
        self._queue: list[tuple[int, int, _Timer]] = []
        self._seq = itertools.count()

    def __call__(self) -> int:
        return self.now

    def schedule(self, delay_ms, action):
        timer = _Timer(action)
        heapq.heappush(self._queue, (self.now + max(0, delay_ms), next(self._seq), timer))
        return timer

    def advance(self, ms: int) -> None:
        target = self.now + ms
        while self._queue and self._queue[0][0] <= target:
            due, _, timer = heapq.heappop(self._queue)
            self.now = max(self.now, due)
            if not timer.cancelled:
                timer.action()
        self.now = target

    def pending_timers(self) -> int:
        return sum(1 for *_, t in self._queue if not t.cancelled)


class DirectExecutor(Executor):
    """Runs what it is given at once, on the caller's thread: the coordinator's deletions
    happen before the call that asked for them returns, as a test wants to check them."""

    def submit(self, fn, /, *args, **kwargs):
        future: Future = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to the caller through the future
            future.set_exception(exc)
        return future


@dataclass
class TestingCheckpointGateway:
    triggered: list[tuple[str, int]] = field(default_factory=list)
    completed: list[tuple[str, int]] = field(default_factory=list)
    aborted: list[tuple[str, int]] = field(default_factory=list)
    fail_triggers: bool = False

    def trigger_checkpoint(self, attempt_id, checkpoint_id, timestamp_ms, options):
        if self.fail_triggers:
            from weir.core.errors import ServiceUnavailableError

            raise ServiceUnavailableError("TaskExecutor unreachable")
        self.triggered.append((attempt_id, checkpoint_id))

    def notify_checkpoint_complete(self, attempt_id, checkpoint_id):
        self.completed.append((attempt_id, checkpoint_id))

    def notify_checkpoint_aborted(self, attempt_id, checkpoint_id):
        self.aborted.append((attempt_id, checkpoint_id))


SOURCE = ExecutionAttemptId("source-0")
MAP_0 = ExecutionAttemptId("map-0")
MAP_1 = ExecutionAttemptId("map-1")
ATTEMPTS = (SOURCE, MAP_0, MAP_1)
SOURCE_OP = OperatorId("source-op")
MAP_OP = OperatorId("map-op")

PLAN = CheckpointPlan(
    tasks=(
        CheckpointTask(SOURCE, 0, 1, is_source=True),
        CheckpointTask(MAP_0, 0, 2),
        CheckpointTask(MAP_1, 1, 2),
    ),
    max_parallelism={SOURCE_OP: 128, MAP_OP: 128},
)


@dataclass
class Harness:
    coordinator: CheckpointCoordinator
    time: TestingTime
    gateway: TestingCheckpointGateway
    storage: FileSystemCheckpointStorage
    store: StandaloneCompletedCheckpointStore
    counter: StandaloneCheckpointIdCounter
    failures: list
    root: str
    plan: dict
    completed: list
    """Checkpoint ids the completion listener was called with, in order."""

    def ack(self, attempt, checkpoint_id, data: bytes = b"state"):
        """Write state as the task would and acknowledge."""
        from weir.core.checkpoint import (
            CheckpointMetrics,
            KeyGroupRange,
            KeyGroupsStateHandle,
            OperatorSubtaskState,
            TaskStateSnapshot,
        )

        location = self.storage.init_checkpoint(checkpoint_id)
        handle = location.write_state(f"{attempt}", data)
        if attempt == SOURCE:
            states = {SOURCE_OP: OperatorSubtaskState(source_reader_state=(handle,))}
        else:
            index = 0 if attempt == MAP_0 else 1
            keyed = KeyGroupsStateHandle(KeyGroupRange(index * 64, index * 64 + 64), handle)
            states = {MAP_OP: OperatorSubtaskState(managed_keyed_state=(keyed,))}
        metrics = CheckpointMetrics(
            sync_duration_ms=2,
            async_duration_ms=5,
            alignment_duration_ms=1,
            state_size_bytes=len(data),
        )
        return self.coordinator.receive_acknowledge(
            attempt, checkpoint_id, TaskStateSnapshot(states), metrics
        )

    def ack_all(self, checkpoint_id):
        for attempt in ATTEMPTS:
            self.ack(attempt, checkpoint_id)

    def chk_dirs(self) -> set[str]:
        fs, path = fsspec.core.url_to_fs(f"{self.root}/{JOB}")
        if not fs.exists(path):
            return set()
        names = {str(p).rstrip("/").rsplit("/", 1)[-1] for p in fs.ls(path, detail=False)}
        return {n for n in names if n.startswith("chk-")}


_DIRECT = object()


def make_harness(
    *, storage_class: type = FileSystemCheckpointStorage, io_executor=_DIRECT, **config
) -> Harness:
    """``io_executor``: where deletions run; by default at once, on the caller's thread
    (``DirectExecutor``); None for the coordinator's own thread."""
    defaults = {"interval_ms": 1000, "timeout_ms": 10_000}
    defaults.update(config)
    cfg = CheckpointingConfig(**defaults)
    root = f"memory://coordinator-{uuid.uuid4().hex}"
    time = TestingTime()
    gateway = TestingCheckpointGateway()
    storage = storage_class(root, JOB)
    store = StandaloneCompletedCheckpointStore(cfg.num_retained)
    counter = StandaloneCheckpointIdCounter()
    failures: list = []
    completed: list = []
    plan = {"value": PLAN}
    coordinator = CheckpointCoordinator(
        job_id=JOB,
        config=cfg,
        storage=storage,
        id_counter=counter,
        store=store,
        gateway=gateway,
        plan_provider=lambda: plan["value"],
        clock=time,
        executor=time,
        on_failure=failures.append,
        on_completed=completed.append,
        io_executor=DirectExecutor() if io_executor is _DIRECT else io_executor,
    )
    return Harness(
        coordinator, time, gateway, storage, store, counter, failures, root, plan, completed
    )
