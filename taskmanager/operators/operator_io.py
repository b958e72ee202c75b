"""What each operator of a chain received and handed on: Flink's per-operator
``numRecordsIn``/``numRecordsOut`` and output watermark.

Counted on the task thread, per batch and never per record, at the boundaries the chain
already has: a batch an operator emits passes one counting call on its way to its
outputs (main and side outputs apart), and a batch entering the chain's head passes one
on its way in. What a chained operator received is what the operator before it emitted on
its main output (a chain is a tree: each chained operator has one operator before it), so
it costs nothing more. No lock: the task thread is the only writer, readers (a scrape, a
``GetMetrics`` call) read plain ints, and a read that races a batch sees the count before
or after it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from weir.taskmanager.operators.base import MIN_WATERMARK, Collect, Timestamps

__all__ = ["OperatorIOCounters", "counting_in", "counting_out", "recording_watermark"]


class OperatorIOCounters:
    """One operator's counts. ``upstream``: the counters of the chained operator before it
    (None for the chain's head, whose input is counted where the task hands it in)."""

    __slots__ = ("main_out", "output_watermark", "records_in", "side_out", "upstream")

    def __init__(self, upstream: OperatorIOCounters | None = None) -> None:
        self.upstream = upstream
        self.records_in = 0
        """Records handed to the head of the chain (unused below the head)."""
        self.main_out = 0
        self.side_out = 0
        self.output_watermark = MIN_WATERMARK

    @property
    def num_records_in(self) -> int:
        upstream = self.upstream
        return self.records_in if upstream is None else upstream.main_out

    @property
    def num_records_out(self) -> int:
        return self.main_out + self.side_out


def counting_in(process: Collect, counters: OperatorIOCounters) -> Collect:
    """``process`` counting the records it is handed (the head's input)."""

    def counted(batch: list[Any], timestamps: Timestamps) -> None:
        counters.records_in += len(batch)
        process(batch, timestamps)

    return counted


def counting_out(collect: Collect, counters: OperatorIOCounters, *, side: bool) -> Collect:
    """``collect`` counting the records an operator emits on its main or a side output."""
    if side:

        def counted_side(batch: list[Any], timestamps: Timestamps) -> None:
            counters.side_out += len(batch)
            collect(batch, timestamps)

        return counted_side

    def counted(batch: list[Any], timestamps: Timestamps) -> None:
        counters.main_out += len(batch)
        collect(batch, timestamps)

    return counted


def recording_watermark(
    emit: Callable[[int], None], counters: OperatorIOCounters
) -> Callable[[int], None]:
    """``emit`` remembering the last watermark the operator sent on (once per watermark)."""

    def recorded(watermark: int) -> None:
        counters.output_watermark = watermark
        emit(watermark)

    return recorded
