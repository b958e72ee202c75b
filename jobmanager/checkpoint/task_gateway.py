"""The CheckpointCoordinator's way to the tasks: the TaskExecutor gRPC service."""

from __future__ import annotations

import logging
from collections.abc import Callable

import grpc

from weir.core import rpc
from weir.core.errors import RemoteError
from weir.core.ids import ExecutionAttemptId
from weir.core.security import SecurityConfig
from weir.jobmanager.checkpoint.checkpoint_coordinator import CheckpointOptions
from weir.proto import taskexecutor_pb2, taskexecutor_pb2_grpc

# Trigger and notify are short control messages; a TaskExecutor that needs longer is gone
# (the checkpoint then fails by decline, well within execution.checkpointing.timeout).
_RPC_TIMEOUT_S = 10.0

logger = logging.getLogger(__name__)


class TaskExecutorCheckpointGateway:
    """Implements ``CheckpointTriggerGateway`` over gRPC; ``address_of`` finds the
    TaskExecutor that runs an attempt (None when the attempt is no longer known)."""

    def __init__(
        self, address_of: Callable[[ExecutionAttemptId], str | None], security: SecurityConfig
    ) -> None:
        self._address_of = address_of
        self._security = security

    def _stub(
        self, attempt_id: ExecutionAttemptId
    ) -> tuple[grpc.Channel, taskexecutor_pb2_grpc.TaskExecutorStub]:
        address = self._address_of(attempt_id)
        if address is None:
            msg = f"task {attempt_id} is not part of the job any more"
            raise RemoteError(msg)
        channel = rpc.create_channel(address, self._security)
        return channel, taskexecutor_pb2_grpc.TaskExecutorStub(channel)

    def trigger_checkpoint(
        self,
        attempt_id: ExecutionAttemptId,
        checkpoint_id: int,
        timestamp_ms: int,
        options: CheckpointOptions,
    ) -> None:
        channel, stub = self._stub(attempt_id)
        with channel:
            answer = rpc.call(
                "TaskExecutor.TriggerCheckpoint",
                stub.TriggerCheckpoint,
                taskexecutor_pb2.TriggerCheckpointRequest(
                    execution_attempt_id=attempt_id,
                    checkpoint_id=checkpoint_id,
                    timestamp_ms=timestamp_ms,
                    options=taskexecutor_pb2.CheckpointOptions(
                        checkpoint_type=options.checkpoint_type.value,
                        mode=options.mode.name,
                        unaligned=options.unaligned,
                        snapshot_compression=options.snapshot_compression,
                        target_location=options.target_location,
                        drain=options.drain,
                    ),
                ),
                timeout=_RPC_TIMEOUT_S,
            )
        if not answer.ok:
            # The task ended meanwhile: a finished task aborts the pending checkpoints
            # (not counted as a failure), a failed one triggers a failover.
            logger.info(
                "checkpoint %d not triggered at %s: %s", checkpoint_id, attempt_id, answer.message
            )

    def notify_checkpoint_complete(
        self, attempt_id: ExecutionAttemptId, checkpoint_id: int
    ) -> None:
        self._notify(attempt_id, checkpoint_id, complete=True)

    def notify_checkpoint_aborted(self, attempt_id: ExecutionAttemptId, checkpoint_id: int) -> None:
        self._notify(attempt_id, checkpoint_id, complete=False)

    def _notify(self, attempt_id: ExecutionAttemptId, checkpoint_id: int, complete: bool) -> None:
        channel, stub = self._stub(attempt_id)
        method = stub.NotifyCheckpointComplete if complete else stub.NotifyCheckpointAborted
        with channel:
            rpc.call(
                "TaskExecutor.NotifyCheckpoint" + ("Complete" if complete else "Aborted"),
                method,
                taskexecutor_pb2.CheckpointNotification(
                    execution_attempt_id=attempt_id, checkpoint_id=checkpoint_id
                ),
                timeout=_RPC_TIMEOUT_S,
            )
