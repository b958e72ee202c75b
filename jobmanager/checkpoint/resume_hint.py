"""What a job that failed for good tells its user about resuming it from a checkpoint.

Flink 2 deletes a job's checkpoints when it ends unless externalized checkpoint retention
says otherwise (``NO_EXTERNALIZED_CHECKPOINTS`` by default, as in PyFlink). A failed job
with checkpointing on therefore says either how to resume from the checkpoint it kept, as
an exact ``weir run -s`` command, or which setting would have kept one.
"""

from __future__ import annotations

from weir.core import config as cfg
from weir.core.checkpoint import ExternalizedCheckpointRetention
from weir.core.job_status import JobStatus

__all__ = ["resume_hint"]

_RETENTION_KEY = cfg.CHECKPOINTING_RETENTION.key
_SETTER = (
    "env.get_checkpoint_config().set_externalized_checkpoint_retention(\n"
    "        ExternalizedCheckpointRetention.DELETE_ON_CANCELLATION)"
)


def resume_hint(
    retention: ExternalizedCheckpointRetention, latest_checkpoint: str, program: str
) -> str:
    """The paragraph appended to the failure cause of a job that FAILED with checkpointing
    on. ``latest_checkpoint`` is the latest completed checkpoint's location ("" when none
    completed), ``program`` the client's command line ("" when unknown)."""
    command = program or "<your program and its arguments>"
    if not retention.retains_on(JobStatus.FAILED):
        return (
            f"\n\nIts checkpoints were deleted with it: {_RETENTION_KEY} is "
            f"{retention.name}, Flink's default. To be able to resume a job that fails from "
            f"its latest checkpoint, set it to DELETE_ON_CANCELLATION (or "
            f"RETAIN_ON_CANCELLATION, which keeps them when the job is cancelled too), e.g.\n"
            f"    {_SETTER}\n"
            f"and resume it with\n"
            f"    weir run -s <its chk-N directory> {command}"
        )
    if not latest_checkpoint:
        return (
            f"\n\nNo checkpoint of it had completed ({_RETENTION_KEY}: {retention.name}), "
            "so there is none to resume from."
        )
    return (
        f"\n\nIts latest checkpoint was kept ({_RETENTION_KEY}: {retention.name}). "
        f"To resume the job from it, run\n"
        f"    weir run -s {latest_checkpoint} {command}"
    )
