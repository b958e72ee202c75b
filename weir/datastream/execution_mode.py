"""``RuntimeExecutionMode``: how a DataStream program executes (PyFlink's enum)."""

from __future__ import annotations

import enum


class RuntimeExecutionMode(enum.Enum):
    """STREAMING: records flow continuously and keyed aggregations emit on every update.
    BATCH: bounded input only; keyed aggregations emit their final value per key once the
    input ends. AUTOMATIC: BATCH when every source is bounded, else STREAMING."""

    STREAMING = 0
    BATCH = 1
    AUTOMATIC = 2
