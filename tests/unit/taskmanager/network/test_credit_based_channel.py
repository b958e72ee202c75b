"""Consumer-side credit accounting: exclusive credits, floating credits, recycling."""

from __future__ import annotations

from weir.taskmanager.network.credit_based_channel import ChannelCredit, FloatingBufferPool


def grants(result: list[tuple[ChannelCredit, int]]) -> list[tuple[str, int]]:
    return [(str(channel.owner), count) for channel, count in result]


class TestChannelCredit:
    def test_consumed_data_returns_its_exclusive_credit(self) -> None:
        channel = ChannelCredit(2, FloatingBufferPool(0), owner="a")
        assert grants(channel.on_buffer_received(backlog=0)) == []
        assert grants(channel.on_data_consumed()) == [("a", 1)]
        assert channel.total == 2

    def test_backlog_borrows_floating_credits_up_to_the_pool(self) -> None:
        pool = FloatingBufferPool(3)
        channel = ChannelCredit(2, pool, owner="a")
        assert grants(channel.on_buffer_received(backlog=5)) == [("a", 3)]
        assert (channel.floating, pool.available, channel.waiting) == (3, 0, True)

    def test_floating_credit_no_longer_needed_goes_back_to_the_pool(self) -> None:
        pool = FloatingBufferPool(2)
        channel = ChannelCredit(1, pool, owner="a")
        channel.on_buffer_received(backlog=2)
        assert channel.floating == 2
        channel.on_buffer_received(backlog=0)
        assert grants(channel.on_data_consumed()) == []
        assert (channel.floating, pool.available) == (1, 1)
        assert grants(channel.on_data_consumed()) == []
        assert grants(channel.on_data_consumed()) == [("a", 1)]
        assert (channel.floating, pool.available) == (0, 2)

    def test_recycled_floating_credit_goes_to_a_waiting_channel(self) -> None:
        pool = FloatingBufferPool(1)
        first = ChannelCredit(1, pool, owner="first")
        second = ChannelCredit(1, pool, owner="second")
        assert grants(first.on_buffer_received(backlog=1)) == [("first", 1)]
        assert grants(second.on_buffer_received(backlog=1)) == []
        assert second.waiting
        first.on_buffer_received(backlog=0)
        assert grants(first.on_data_consumed()) == [("second", 1)]
        assert (first.floating, second.floating, pool.available) == (0, 1, 0)

    def test_release_returns_all_floating_credits(self) -> None:
        pool = FloatingBufferPool(4)
        channel = ChannelCredit(2, pool, owner="a")
        channel.on_buffer_received(backlog=3)
        assert grants(channel.release()) == []
        assert (channel.floating, pool.available) == (0, 4)

    def test_total_never_exceeds_exclusive_plus_pool(self) -> None:
        pool = FloatingBufferPool(2)
        channels = [ChannelCredit(2, pool, owner=i) for i in range(3)]
        for step in range(50):
            channel = channels[step % 3]
            channel.on_buffer_received(backlog=step % 5)
            channel.on_data_consumed()
            assert sum(c.floating for c in channels) + pool.available == 2
            assert all(c.total <= 2 + 2 for c in channels)
