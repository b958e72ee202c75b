"""``TimeDomain``: whether a firing timer is based on event time or processing time.

Defined here, not in the API package, because the TaskManager hands these very values
to ``on_timer`` contexts and the API re-exports them (``weir.datastream.TimeDomain``):
one enum, so ``ctx.time_domain() == TimeDomain.EVENT_TIME`` holds.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["TimeDomain"]


class TimeDomain(Enum):
    EVENT_TIME = 0
    """Time given by the timestamps of the records (watermarks)."""
    PROCESSING_TIME = 1
    """The wall clock of the machine that processes the records."""
