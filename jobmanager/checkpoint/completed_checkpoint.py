"""A checkpoint every task acknowledged and whose ``_metadata`` is stored."""

from __future__ import annotations

from dataclasses import dataclass

from weir.core.checkpoint import CheckpointMetadata


@dataclass(frozen=True, slots=True)
class CompletedCheckpoint:
    metadata: CheckpointMetadata
    external_pointer: str
    """Where ``_metadata`` is: an fsspec URL, or a ``jobmanager://`` key."""

    @property
    def checkpoint_id(self) -> int:
        return self.metadata.checkpoint_id

    @property
    def trigger_timestamp_ms(self) -> int:
        return self.metadata.trigger_timestamp_ms

    @property
    def completion_timestamp_ms(self) -> int:
        return self.metadata.completion_timestamp_ms
