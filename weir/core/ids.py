"""Identities of jobs, vertices, operators, TaskManagers, slots and executions."""

from __future__ import annotations

import secrets
from typing import NewType

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


def new_resource_id() -> ResourceId:
    return ResourceId(new_hex_id())


def new_allocation_id() -> AllocationId:
    return AllocationId(new_hex_id())


def new_execution_attempt_id() -> ExecutionAttemptId:
    return ExecutionAttemptId(new_hex_id())
