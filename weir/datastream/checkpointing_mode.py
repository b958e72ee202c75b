"""``CheckpointingMode`` (PyFlink's ``pyflink.datastream.checkpointing_mode``)."""

from weir.core.checkpoint.checkpoint_config import CheckpointingMode

__all__ = ["CheckpointingMode"]
