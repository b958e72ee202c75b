"""Barrier handlers: aligned, at-least-once and unaligned, over orderings of channel inputs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from weir.taskmanager.checkpointing import (
    AbortCheckpoint,
    AbortReason,
    AlignedBarrierHandler,
    AtLeastOnceBarrierHandler,
    BlockChannel,
    ChannelStateComplete,
    ReadToEnd,
    TriggerSnapshot,
    UnalignedBarrierHandler,
    UnblockAll,
)
from weir.taskmanager.task_events import CheckpointBarrier


def barrier(n: int, *, unaligned: bool = False) -> CheckpointBarrier:
    return CheckpointBarrier(n, 1000 + n, unaligned=unaligned)


def trigger(n: int, *, unaligned: bool = False) -> TriggerSnapshot:
    return TriggerSnapshot(barrier(n, unaligned=unaligned), unaligned=unaligned)


SUBSUMED = AbortReason.CHECKPOINT_DECLINED_SUBSUMED
CANCELLED = AbortReason.CHECKPOINT_DECLINED_ON_CANCELLATION_BARRIER


class TestAlignedBarrierHandler:
    def test_blocks_each_channel_until_the_last_barrier_then_triggers_and_unblocks(self) -> None:
        handler = AlignedBarrierHandler([3])
        assert handler.on_barrier(0, 1, barrier(1)) == [BlockChannel(0, 1)]
        assert handler.on_barrier(0, 0, barrier(1)) == [BlockChannel(0, 0)]
        assert handler.blocked_channels == {(0, 0), (0, 1)}
        assert handler.on_barrier(0, 2, barrier(1)) == [trigger(1), UnblockAll()]
        assert handler.pending_checkpoint_id is None
        assert handler.blocked_channels == frozenset()

    def test_single_channel_triggers_at_once_without_blocking(self) -> None:
        handler = AlignedBarrierHandler([1])
        assert handler.on_barrier(0, 0, barrier(1)) == [trigger(1)]
        assert handler.on_barrier(0, 0, barrier(2)) == [trigger(2)]

    def test_two_gates_of_a_connect_align_together(self) -> None:
        handler = AlignedBarrierHandler([2, 1])
        assert handler.on_barrier(1, 0, barrier(5)) == [BlockChannel(1, 0)]
        assert handler.on_barrier(0, 1, barrier(5)) == [BlockChannel(0, 1)]
        assert handler.on_barrier(0, 0, barrier(5)) == [trigger(5), UnblockAll()]

    def test_a_newer_barrier_aborts_the_stale_alignment_and_starts_its_own(self) -> None:
        handler = AlignedBarrierHandler([3])
        handler.on_barrier(0, 0, barrier(1))
        handler.on_barrier(0, 1, barrier(1))
        # Channel 2 never delivered 1 (its upstream skipped it) but now delivers 2.
        assert handler.on_barrier(0, 2, barrier(2)) == [
            AbortCheckpoint(1, SUBSUMED),
            UnblockAll(),
            BlockChannel(0, 2),
        ]
        assert handler.pending_checkpoint_id == 2
        assert handler.on_barrier(0, 0, barrier(2)) == [BlockChannel(0, 0)]
        assert handler.on_barrier(0, 1, barrier(2)) == [trigger(2), UnblockAll()]

    def test_late_barriers_of_an_aborted_checkpoint_are_dropped(self) -> None:
        handler = AlignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1))
        handler.on_barrier(0, 0, barrier(2))  # aborts 1
        assert handler.on_barrier(0, 1, barrier(1)) == []
        assert handler.on_barrier(0, 1, barrier(2)) == [trigger(2), UnblockAll()]

    def test_repeated_barriers_are_ignored(self) -> None:
        handler = AlignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1))
        assert handler.on_barrier(0, 0, barrier(1)) == []
        assert handler.on_barrier(0, 1, barrier(1)) == [trigger(1), UnblockAll()]
        assert handler.on_barrier(0, 1, barrier(1)) == []  # after completion too

    def test_end_of_partition_during_alignment_counts_as_aligned(self) -> None:
        handler = AlignedBarrierHandler([3])
        handler.on_barrier(0, 0, barrier(1))
        handler.on_barrier(0, 1, barrier(1))
        assert handler.on_end_of_partition(0, 2) == [trigger(1), UnblockAll()]
        # The ended channel is aligned for every later checkpoint as well.
        assert handler.on_barrier(0, 0, barrier(2)) == [BlockChannel(0, 0)]
        assert handler.on_barrier(0, 1, barrier(2)) == [trigger(2), UnblockAll()]

    def test_end_of_partition_without_alignment_does_nothing(self) -> None:
        handler = AlignedBarrierHandler([2])
        assert handler.on_end_of_partition(0, 0) == []
        assert handler.on_barrier(0, 1, barrier(1)) == [trigger(1)]

    def test_coordinator_abort_unblocks_and_later_barriers_of_it_are_dropped(self) -> None:
        handler = AlignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(3))
        assert handler.on_checkpoint_aborted(3) == [AbortCheckpoint(3, CANCELLED), UnblockAll()]
        assert handler.on_barrier(0, 1, barrier(3)) == []
        assert handler.on_checkpoint_aborted(4) == []  # not started here yet
        assert handler.on_barrier(0, 0, barrier(4)) == []
        assert handler.on_barrier(0, 0, barrier(5)) == [BlockChannel(0, 0)]

    def test_an_unknown_channel_is_refused(self) -> None:
        handler = AlignedBarrierHandler([2])
        with pytest.raises(ValueError, match="not an input of this task"):
            handler.on_barrier(1, 0, barrier(1))

    @given(st.permutations([(0, 0), (0, 1), (1, 0)]), st.integers(0, 3))
    def test_any_order_triggers_exactly_once_after_the_last_channel(
        self, order: list[tuple[int, int]], ended_at: int
    ) -> None:
        handler = AlignedBarrierHandler([2, 1])
        triggers = 0
        blocked: set[tuple[int, int]] = set()
        ended = order[ended_at] if ended_at < 3 else None
        for i, channel in enumerate(order):
            if channel == ended:
                actions = handler.on_end_of_partition(*channel)
            else:
                actions = handler.on_barrier(*channel, barrier(1))
            for action in actions:
                if isinstance(action, BlockChannel):
                    blocked.add((action.gate_index, action.channel_index))
                elif isinstance(action, UnblockAll):
                    blocked.clear()
                elif isinstance(action, TriggerSnapshot):
                    triggers += 1
                    assert i == 2, "triggered before every channel was in"
            if i < 2:
                assert ended not in blocked
        assert triggers == 1
        assert blocked == set()


class TestAtLeastOnceBarrierHandler:
    def test_never_blocks_and_triggers_on_the_last_barrier(self) -> None:
        handler = AtLeastOnceBarrierHandler([2, 1])
        assert handler.on_barrier(0, 1, barrier(1)) == []
        assert handler.on_barrier(1, 0, barrier(1)) == []
        assert handler.on_barrier(0, 0, barrier(1)) == [trigger(1)]

    def test_overlapping_checkpoints_complete_and_subsume_older_ones(self) -> None:
        handler = AtLeastOnceBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1))
        handler.on_barrier(0, 0, barrier(2))
        assert handler.pending_checkpoint_ids == [1, 2]
        # Channel 1 skipped checkpoint 1 (its upstream declined it) and delivers 2.
        assert handler.on_barrier(0, 1, barrier(2)) == [AbortCheckpoint(1, SUBSUMED), trigger(2)]
        assert handler.on_barrier(0, 1, barrier(1)) == []  # late
        assert handler.pending_checkpoint_ids == []

    def test_repeated_barriers_are_counted_once(self) -> None:
        handler = AtLeastOnceBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1))
        assert handler.on_barrier(0, 0, barrier(1)) == []
        assert handler.on_barrier(0, 1, barrier(1)) == [trigger(1)]

    def test_end_of_partition_completes_a_pending_checkpoint(self) -> None:
        handler = AtLeastOnceBarrierHandler([3])
        handler.on_barrier(0, 0, barrier(1))
        handler.on_barrier(0, 1, barrier(1))
        assert handler.on_end_of_partition(0, 2) == [trigger(1)]
        assert handler.on_barrier(0, 0, barrier(2)) == []
        assert handler.on_barrier(0, 1, barrier(2)) == [trigger(2)]

    def test_coordinator_abort_drops_the_pending_checkpoint(self) -> None:
        handler = AtLeastOnceBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1))
        assert handler.on_checkpoint_aborted(1) == [AbortCheckpoint(1, CANCELLED)]
        assert handler.on_checkpoint_aborted(1) == []
        assert handler.on_barrier(0, 1, barrier(1)) == []  # starts afresh, never completes


class TestUnalignedBarrierHandler:
    def test_first_barrier_triggers_at_once_and_later_buffers_are_captured(self) -> None:
        handler = UnalignedBarrierHandler([3])
        assert handler.on_buffer(0, 1, b"before") is False
        assert handler.on_barrier(0, 0, barrier(1, unaligned=True)) == [trigger(1, unaligned=True)]
        assert handler.on_buffer(0, 0, b"after-barrier") is False  # post-barrier data
        assert handler.on_buffer(0, 1, b"x1") is True
        assert handler.on_buffer(0, 2, b"y1") is True
        assert handler.on_barrier(0, 1, barrier(1, unaligned=True)) == []
        assert handler.on_buffer(0, 1, b"x2") is False
        assert handler.on_buffer(0, 2, b"y2") is True
        assert handler.on_barrier(0, 2, barrier(1, unaligned=True)) == [
            ChannelStateComplete(1, {(0, 1): [b"x1"], (0, 2): [b"y1", b"y2"]})
        ]
        assert handler.on_buffer(0, 2, b"y3") is False
        assert handler.pending_checkpoint_id is None

    def test_buffers_a_priority_barrier_overtook_in_the_gate_are_channel_state(self) -> None:
        handler = UnalignedBarrierHandler([1, 1])
        assert handler.on_barrier(1, 0, barrier(4, unaligned=True), overtaken=[b"o1", b"o2"]) == [
            trigger(4, unaligned=True)
        ]
        handler.on_buffer(0, 0, b"a")
        assert handler.on_barrier(0, 0, barrier(4, unaligned=True), overtaken=[b"o3"]) == [
            ChannelStateComplete(4, {(1, 0): [b"o1", b"o2"], (0, 0): [b"a", b"o3"]})
        ]

    def test_single_channel_completes_with_the_trigger(self) -> None:
        handler = UnalignedBarrierHandler([1])
        assert handler.on_barrier(0, 0, barrier(1, unaligned=True)) == [
            trigger(1, unaligned=True),
            ChannelStateComplete(1, {}),
        ]

    def test_a_newer_barrier_aborts_the_incomplete_capture(self) -> None:
        handler = UnalignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1, unaligned=True))
        handler.on_buffer(0, 1, b"stale")
        assert handler.on_barrier(0, 0, barrier(2, unaligned=True)) == [
            AbortCheckpoint(1, SUBSUMED),
            trigger(2, unaligned=True),
        ]
        assert handler.on_barrier(0, 1, barrier(1, unaligned=True)) == []  # late
        handler.on_buffer(0, 1, b"fresh")
        assert handler.on_barrier(0, 1, barrier(2, unaligned=True)) == [
            ChannelStateComplete(2, {(0, 1): [b"fresh"]})
        ]

    def test_end_of_partition_ends_the_capture_of_its_channel(self) -> None:
        handler = UnalignedBarrierHandler([3])
        handler.on_barrier(0, 0, barrier(1, unaligned=True))
        handler.on_buffer(0, 1, b"x")
        assert handler.on_end_of_partition(0, 1) == []
        assert handler.on_end_of_partition(0, 2) == [ChannelStateComplete(1, {(0, 1): [b"x"]})]
        assert handler.on_barrier(0, 0, barrier(2, unaligned=True)) == [
            trigger(2, unaligned=True),
            ChannelStateComplete(2, {}),
        ]

    def test_repeated_barrier_is_ignored(self) -> None:
        handler = UnalignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1, unaligned=True))
        assert handler.on_barrier(0, 0, barrier(1, unaligned=True)) == []
        assert handler.on_barrier(0, 1, barrier(1, unaligned=True)) == [ChannelStateComplete(1, {})]

    def test_coordinator_abort_drops_the_capture(self) -> None:
        handler = UnalignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1, unaligned=True))
        handler.on_buffer(0, 1, b"x")
        assert handler.on_checkpoint_aborted(1) == [AbortCheckpoint(1, CANCELLED)]
        assert handler.on_buffer(0, 1, b"y") is False
        assert handler.on_barrier(0, 1, barrier(1, unaligned=True)) == []

    def test_a_trigger_with_finished_producers_snapshots_at_once_and_reads_to_the_end(
        self,
    ) -> None:
        """Every producer finished with buffers still on the way (Flink's
        triggerUnfinishedChannelsCheckpoint): the snapshot is taken at once, unaligned,
        and every buffer until each open channel's END is channel state."""
        handler = UnalignedBarrierHandler([2, 1])
        handler.on_buffer(0, 0, b"processed before")
        assert handler.on_end_of_partition(1, 0) == []  # that producer's channel is done
        assert handler.on_trigger(barrier(3, unaligned=True)) == [
            trigger(3, unaligned=True),
            ReadToEnd(3, frozenset({(0, 0), (0, 1)})),
        ]
        assert handler.on_buffer(0, 0, b"a1") is True
        assert handler.on_buffer(0, 1, b"b1") is True
        assert handler.on_buffer(0, 0, b"a2") is True
        assert handler.on_end_of_partition(0, 0) == []
        assert handler.on_buffer(0, 1, b"b2") is True
        assert handler.on_end_of_partition(0, 1) == [
            ChannelStateComplete(3, {(0, 0): [b"a1", b"a2"], (0, 1): [b"b1", b"b2"]})
        ]
        assert handler.pending_checkpoint_id is None

    def test_buffers_read_ahead_but_not_processed_are_channel_state_of_a_later_trigger(
        self,
    ) -> None:
        handler = UnalignedBarrierHandler([2])
        handler.on_trigger(barrier(1, unaligned=True))
        handler.on_buffer(0, 0, b"a1")
        handler.on_buffer(0, 1, b"b1")
        handler.on_end_of_partition(0, 0)
        assert handler.on_end_of_partition(0, 1) == [
            ChannelStateComplete(1, {(0, 0): [b"a1"], (0, 1): [b"b1"]})
        ]
        # Checkpoint 2 comes before the task processed what it read ahead: every channel
        # has ended, and what is left unprocessed is the whole in-flight input.
        assert handler.on_trigger(barrier(2, unaligned=True), {(0, 1): [b"b1"]}) == [
            trigger(2, unaligned=True),
            ChannelStateComplete(2, {(0, 1): [b"b1"]}),
        ]

    def test_a_trigger_subsumes_a_capture_waiting_for_a_finished_channel(self) -> None:
        handler = UnalignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(1, unaligned=True))
        handler.on_buffer(0, 1, b"x")  # channel 1's producer finished before barrier 1
        assert handler.on_trigger(barrier(2, unaligned=True)) == [
            AbortCheckpoint(1, SUBSUMED),
            trigger(2, unaligned=True),
            ReadToEnd(2, frozenset({(0, 0), (0, 1)})),
        ]
        assert handler.on_buffer(0, 0, b"a") is True
        handler.on_buffer(0, 1, b"y")
        handler.on_end_of_partition(0, 1)
        assert handler.on_end_of_partition(0, 0) == [
            ChannelStateComplete(2, {(0, 0): [b"a"], (0, 1): [b"y"]})
        ]

    def test_a_trigger_of_a_checkpoint_already_seen_is_dropped(self) -> None:
        handler = UnalignedBarrierHandler([2])
        handler.on_barrier(0, 0, barrier(5, unaligned=True))
        assert handler.on_trigger(barrier(5, unaligned=True)) == []
        assert handler.on_trigger(barrier(4, unaligned=True)) == []

    def test_a_trigger_after_every_channel_ended_completes_at_once(self) -> None:
        handler = UnalignedBarrierHandler([1])
        handler.on_end_of_partition(0, 0)
        assert handler.on_trigger(barrier(1, unaligned=True)) == [
            trigger(1, unaligned=True),
            ChannelStateComplete(1, {}),
        ]

    def test_a_finishing_producer_channel_is_read_to_its_end_while_another_runs(
        self,
    ) -> None:
        """Channel (0, 0)'s producer took its final checkpoint (its barrier says its
        operators finished) and then finished with buffers still on the way; channel
        (1, 0)'s producer runs on. The next barrier from the running one takes the
        snapshot at once and reads the finished channel, and it alone, to its END: every
        buffer until then is channel state."""
        handler = UnalignedBarrierHandler([1, 1])
        final = CheckpointBarrier(1, 1001, unaligned=True, end_of_data=True)
        assert handler.on_barrier(0, 0, final) == [TriggerSnapshot(final, unaligned=True)]
        assert handler.on_barrier(1, 0, barrier(1, unaligned=True)) == [ChannelStateComplete(1, {})]
        assert handler.on_buffer(0, 0, b"a1") is False  # after barrier 1: processed
        assert handler.on_barrier(1, 0, barrier(2, unaligned=True), [b"b1"]) == [
            trigger(2, unaligned=True),
            ReadToEnd(2, frozenset({(0, 0)})),
        ]
        assert handler.awaits(0, 0)
        assert not handler.awaits(1, 0)
        assert handler.on_buffer(0, 0, b"a2") is True
        assert handler.on_buffer(1, 0, b"b2") is False  # after its barrier
        assert handler.on_end_of_partition(0, 0) == [
            ChannelStateComplete(2, {(0, 0): [b"a2"], (1, 0): [b"b1"]})
        ]
        assert not handler.awaits(0, 0)

    def test_buffers_read_ahead_are_channel_state_of_the_next_barrier(self) -> None:
        handler = UnalignedBarrierHandler([1, 1])
        handler.on_barrier(0, 0, CheckpointBarrier(1, 1001, unaligned=True, end_of_data=True))
        handler.on_barrier(1, 0, barrier(1, unaligned=True))
        handler.on_barrier(1, 0, barrier(2, unaligned=True))
        handler.on_buffer(0, 0, b"a1")
        assert handler.on_end_of_partition(0, 0) == [ChannelStateComplete(2, {(0, 0): [b"a1"]})]
        # The task has not processed a1 when barrier 3 arrives: it is in flight for 3.
        assert handler.on_barrier(1, 0, barrier(3, unaligned=True), (), {(0, 0): [b"a1"]}) == [
            trigger(3, unaligned=True),
            ChannelStateComplete(3, {(0, 0): [b"a1"]}),
        ]

    def test_a_finishing_producer_that_takes_the_checkpoint_ends_the_read_at_its_barrier(
        self,
    ) -> None:
        """The producer's final checkpoint failed, so it still takes the next one: the
        read of its channel stops at that barrier."""
        handler = UnalignedBarrierHandler([1, 1])
        handler.on_barrier(0, 0, CheckpointBarrier(1, 1001, unaligned=True, end_of_data=True))
        assert handler.on_checkpoint_aborted(1) == [AbortCheckpoint(1, CANCELLED)]
        assert handler.on_barrier(1, 0, barrier(2, unaligned=True)) == [
            trigger(2, unaligned=True),
            ReadToEnd(2, frozenset({(0, 0)})),
        ]
        assert handler.on_buffer(0, 0, b"a1") is True
        again = CheckpointBarrier(2, 1002, unaligned=True, end_of_data=True)
        assert handler.on_barrier(0, 0, again, [b"a2"]) == [
            ChannelStateComplete(2, {(0, 0): [b"a1", b"a2"]})
        ]
        assert not handler.awaits(0, 0)

    def test_without_a_finishing_producer_nothing_is_read_ahead(self) -> None:
        handler = UnalignedBarrierHandler([1, 1])
        assert handler.on_barrier(1, 0, barrier(1, unaligned=True)) == [trigger(1, unaligned=True)]
        assert handler.awaits(0, 0)

    @given(st.lists(st.sampled_from(["a", "b", "E0", "E1"]), max_size=30))
    def test_after_a_trigger_every_buffer_until_its_end_is_captured(
        self, script: list[str]
    ) -> None:
        # Two channels whose producers finished; "a"/"b" deliver a buffer on channel 0/1,
        # "E0"/"E1" its END_OF_PARTITION. The capture is complete when both have ended.
        handler = UnalignedBarrierHandler([2])
        assert handler.on_trigger(barrier(1, unaligned=True))[-1] == ReadToEnd(
            1, frozenset({(0, 0), (0, 1)})
        )
        ended: set[int] = set()
        expected: dict[tuple[int, int], list[bytes]] = {}
        complete = []
        for seq, step in enumerate(script):
            ch = 0 if step in ("a", "E0") else 1
            if ch in ended:
                continue
            if step.startswith("E"):
                ended.add(ch)
                complete += handler.on_end_of_partition(0, ch)
            else:
                buf = b"%d" % seq
                assert handler.on_buffer(0, ch, buf) is True
                expected.setdefault((0, ch), []).append(buf)
        assert complete == ([ChannelStateComplete(1, expected)] if len(ended) == 2 else [])

    @given(st.lists(st.sampled_from(["a", "b", "B0", "B1"]), max_size=30))
    def test_captured_buffers_are_exactly_those_between_the_trigger_and_their_barrier(
        self, script: list[str]
    ) -> None:
        # Two channels; "a"/"b" deliver a buffer on channel 0/1, "B0"/"B1" the barrier.
        handler = UnalignedBarrierHandler([2])
        delivered: set[int] = set()
        triggered = False
        expected: dict[tuple[int, int], list[bytes]] = {}
        seq = 0
        complete = []
        for step in script:
            if step.startswith("B"):
                ch = int(step[1])
                if ch in delivered:
                    continue
                delivered.add(ch)
                triggered = True
                for action in handler.on_barrier(0, ch, barrier(1, unaligned=True)):
                    if isinstance(action, ChannelStateComplete):
                        complete.append(action)
            else:
                ch = 0 if step == "a" else 1
                seq += 1
                buf = b"%d" % seq
                captured = handler.on_buffer(0, ch, buf)
                should = triggered and ch not in delivered and len(delivered) < 2
                assert captured is should
                if should:
                    expected.setdefault((0, ch), []).append(buf)
        if len(delivered) == 2:
            assert complete == [ChannelStateComplete(1, expected)]
        else:
            assert complete == []
