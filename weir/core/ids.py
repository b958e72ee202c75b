"""Identities of jobs, vertices, operators, TaskManagers, slots and executions."""

from __future__ import annotations

import re
import secrets
from typing import NewType

from weir.core.errors import InvalidJobIdError

JobId = NewType("JobId", str)
JobVertexId = NewType("JobVertexId", str)
OperatorId = NewType("OperatorId", str)
ResourceId = NewType("ResourceId", str)
AllocationId = NewType("AllocationId", str)
ExecutionAttemptId = NewType("ExecutionAttemptId", str)
IntermediateDataSetId = NewType("IntermediateDataSetId", str)


def new_hex_id() -> str:
    """32 hex characters, the shape of Flink's ids."""
    return secrets.token_hex(16)


def new_job_id() -> JobId:
    return JobId(new_hex_id())


_JOB_ID = re.compile(r"[0-9a-fA-F]{32}")


def parse_job_id(text: object) -> JobId:
    """A job id from outside (a client, a command line): 32 hex digits, as Flink's JobID,
    returned in lower case. Anything else is refused, never used: job ids name
    directories (checkpoints, TaskManager working directories)."""
    if isinstance(text, str) and _JOB_ID.fullmatch(text):
        return JobId(text.lower())
    msg = (
        f"{text!r} is not a job id: a job id is 32 hex digits ([0-9a-f]{{32}}), e.g. "
        "fd72014d4c864993a2e5a9287b4a9c5d; `weir list -a` shows the ids of the cluster's jobs"
    )
    raise InvalidJobIdError(msg)


def new_resource_id() -> ResourceId:
    return ResourceId(new_hex_id())


def new_allocation_id() -> AllocationId:
    return AllocationId(new_hex_id())


def new_execution_attempt_id() -> ExecutionAttemptId:
    return ExecutionAttemptId(new_hex_id())
