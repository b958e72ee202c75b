"""What connectors share (mirrors ``pyflink.datastream.connectors.base``)."""

from __future__ import annotations

from enum import Enum

__all__ = ["DeliveryGuarantee"]


class DeliveryGuarantee(Enum):
    """What a sink guarantees about the records it writes when a job fails and restarts.

    * ``EXACTLY_ONCE``: records are written in transactions committed when the checkpoint
      after them completes; readers of committed data see each record once.
    * ``AT_LEAST_ONCE``: every record written before a checkpoint is acknowledged by the
      external system before the checkpoint completes; a restart may write some twice.
    * ``NONE``: nothing is waited for; records may be lost or written twice.
    """

    EXACTLY_ONCE = 0
    AT_LEAST_ONCE = 1
    NONE = 2
