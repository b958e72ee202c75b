"""A task's checkpoint acknowledgement or decline that reaches a JobMaster after it stopped
(a task acknowledging as the job ends) is dropped, as Flink drops messages to a finished
job: no error reaches the task or the log (JobMaster not started: no server, no sockets)."""

from __future__ import annotations

from pathlib import Path

from weir.core.checkpoint import CheckpointMetrics, TaskStateSnapshot
from weir.core.highavailability import StandaloneHaServices
from weir.core.job_graph import JobGraph, JobVertex, OperatorDescriptor, OperatorKind
from weir.jobmanager.job_master import JobMaster


def test_checkpoint_messages_after_the_job_master_stopped_are_dropped(tmp_path: Path) -> None:
    sink = OperatorDescriptor("sink", "sink", OperatorKind.COLLECT, b"")
    graph = JobGraph("d" * 32, "late acks", (JobVertex("v", "v", 1, 128, (sink,), "default"),), ())
    config = {
        "execution.checkpointing.interval": "1 h",
        "execution.checkpointing.dir": tmp_path.as_uri(),
    }
    job_master = JobMaster(graph, config, StandaloneHaServices(), on_terminated=lambda _: None)
    assert job_master.checkpoint_coordinator is not None
    job_master.close()

    job_master.acknowledge_checkpoint("attempt", 1, TaskStateSnapshot(), CheckpointMetrics())
    job_master.decline_checkpoint("attempt", 1, "the task ended")
