"""``ExternalizedCheckpointRetention`` (PyFlink's
``pyflink.datastream.externalized_checkpoint_retention``)."""

from weir.core.checkpoint.checkpoint_config import ExternalizedCheckpointRetention

__all__ = ["ExternalizedCheckpointRetention"]
