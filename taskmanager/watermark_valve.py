"""StatusWatermarkValve: the watermark of one task input from the watermarks of its channels.

Each input channel reports watermarks and idleness in order with its records. The
input's watermark is the minimum over the channels that are active (not idle, not
ended), and it only advances (Flink's ``StatusWatermarkValve``):

- a channel's watermark only advances; a lower one is ignored;
- an idle channel does not hold the input back; when every channel is idle the input
  is idle, which the task forwards so that the tasks downstream do not wait for it;
- a channel that comes back from idleness is aligned again only once its watermark
  caught up with the input's, so it cannot drag the input's watermark back;
- an ended channel (end of partition) no longer counts.

``input_watermark``/``input_status``/``channel_ended`` return what to forward: the new
watermark (or None) and the new idleness of the whole input (or None).
"""

from __future__ import annotations

from weir.taskmanager.operators.base import MIN_WATERMARK


class _Channel:
    __slots__ = ("active", "aligned", "watermark")

    def __init__(self) -> None:
        self.watermark = MIN_WATERMARK
        self.active = True
        self.aligned = True


class StatusWatermarkValve:
    def __init__(self, num_channels: int) -> None:
        self._channels = [_Channel() for _ in range(num_channels)]
        self.watermark = MIN_WATERMARK
        self.idle = False

    def input_watermark(self, channel: int, watermark: int) -> int | None:
        """Channel ``channel`` reached ``watermark``; returns the input's new watermark."""
        ch = self._channels[channel]
        if not ch.active or watermark <= ch.watermark:
            return None
        ch.watermark = watermark
        if not ch.aligned and watermark >= self.watermark:
            ch.aligned = True
        return self._advance()

    def input_status(self, channel: int, idle: bool) -> tuple[int | None, bool | None]:
        """Channel ``channel`` became idle (True) or active (False); returns the input's
        new watermark and its new idleness (None when unchanged)."""
        ch = self._channels[channel]
        if idle and ch.active:
            ch.active = False
            ch.aligned = False
            advanced = self._advance()
            if all(not c.active for c in self._channels) and not self.idle:
                self.idle = True
                return advanced, True
            return advanced, None
        if not idle and not ch.active:
            ch.active = True
            ch.aligned = ch.watermark >= self.watermark
            if self.idle:
                self.idle = False
                return None, False
        return None, None

    def channel_ended(self, channel: int) -> int | None:
        """Channel ``channel`` ended; it no longer holds the input back."""
        ch = self._channels[channel]
        ch.active = False
        ch.aligned = False
        return self._advance()

    def _advance(self) -> int | None:
        aligned = [c.watermark for c in self._channels if c.active and c.aligned]
        if not aligned:
            return None
        low = min(aligned)
        if low > self.watermark:
            self.watermark = low
            return low
        return None
