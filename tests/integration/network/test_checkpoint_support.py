"""The data plane's support for checkpoints, over real loopback TCP and in memory:
blocked channels back-pressure only their producer, priority events overtake data."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest
from test_tcp_exchange import (
    channel,
    gate_of,
    network_threads,
    partition_descriptor,
    partition_id,
    read_all,
    wait_until,
)

from weir.core.errors import NetworkError
from weir.taskmanager.network import (
    BufferKind,
    DefaultInputGate,
    DefaultNetworkEnvironment,
    NetworkConfig,
    ResultPartition,
)

HOST = "127.0.0.1"
DATA, EVENT, PRIORITY, END = (
    BufferKind.DATA,
    BufferKind.EVENT,
    BufferKind.PRIORITY_EVENT,
    BufferKind.END_OF_PARTITION,
)


@pytest.fixture
def make_env() -> Iterator[Callable[..., DefaultNetworkEnvironment]]:
    envs: list[DefaultNetworkEnvironment] = []

    def make(name: str, config: NetworkConfig | None = None) -> DefaultNetworkEnvironment:
        env = DefaultNetworkEnvironment(name * 4, HOST, config or NetworkConfig())
        env.start()
        envs.append(env)
        return env

    yield make
    for env in envs:
        env.close()
    assert network_threads() == []


def emit_in_thread(writer: ResultPartition, payloads: list[bytes]) -> threading.Thread:
    def run() -> None:
        for p in payloads:
            writer.emit(0, p)
        writer.finish()

    thread = threading.Thread(target=run, name="test-producer")
    thread.start()
    return thread


def drain_available(gate: DefaultInputGate) -> list[tuple[int, int, BufferKind, bytes]]:
    """Everything ``poll`` hands out right now (timeout 0: it never waits)."""
    out = []
    while (polled := gate.poll(0)) is not None:
        out.append(polled)
    return out


class TestBlockedChannels:
    @pytest.mark.parametrize("local", [False, True])
    def test_a_blocked_channel_stalls_its_producer_with_bounded_in_flight_data(
        self, make_env, local: bool
    ) -> None:
        config = NetworkConfig(
            buffers_per_channel=2, floating_buffers_per_gate=3, max_buffers_per_subpartition=4
        )
        producer_env = make_env("a", config)
        consumer_env = producer_env if local else make_env("b", config)
        slow, fast = partition_id("p0"), partition_id("p1")
        gate = consumer_env.create_input_gate(
            (
                gate_of(
                    channel(slow, 0, producer_env, local=local),
                    channel(fast, 0, producer_env, local=local),
                ),
            )
        )
        slow_writer = producer_env.create_result_partition(partition_descriptor(slow, 1))
        fast_writer = producer_env.create_result_partition(partition_descriptor(fast, 1))
        total = 200
        slow_data = [b"s%d" % i for i in range(total)]
        fast_data = [b"f%d" % i for i in range(total)]
        slow_thread = emit_in_thread(slow_writer, slow_data)

        # The channel delivers one buffer (as if it were a barrier), then is blocked.
        first = gate.poll(10)
        assert first == (0, 0, DATA, b"s0")
        gate.block_channel(0, 0)
        assert gate.is_blocked(0, 0)

        # Its producer runs out of credit and room, and blocks in emit.
        wait_until(lambda: slow_writer.stats.blocked_emits >= 1)
        assert slow_thread.is_alive()

        # The other channel flows freely meanwhile; the blocked one delivers nothing.
        fast_thread = emit_in_thread(fast_writer, fast_data)
        polled = []
        while not any(kind == END for _, _, kind, _ in polled):
            item = gate.poll(10)
            assert item is not None
            polled.append(item)
        fast_thread.join()
        assert [p for g, c, k, p in polled if k == DATA] == fast_data
        assert {(g, c) for g, c, _, _ in polled} == {(0, 1)}
        assert drain_available(gate) == []

        # Bounded: at most the credits (exclusive + floating) between the producer's queue
        # and the task, at most the subpartition bound queued at the producer.
        stats = slow_writer.stats
        assert stats.buffers_sent - 1 <= 2 + 3
        assert stats.buffers_emitted - stats.buffers_sent <= 4
        assert stats.buffers_emitted < total
        if not local:
            assert gate.buffered(0, 0) <= 2 + 3
            assert gate.stats.max_buffered_per_channel <= 2 + 3

        gate.unblock_all()
        assert not gate.is_blocked(0, 0)
        rest = read_all(gate)
        slow_thread.join()
        assert [p for _, _, k, p in rest if k == DATA] == slow_data[1:]
        assert rest[-1] == (0, 0, END, b"")

    def test_unblock_with_nothing_parked_and_block_twice_are_harmless(self, make_env) -> None:
        env = make_env("a")
        pid = partition_id("p")
        gate = env.create_input_gate((gate_of(channel(pid, 0, env, local=False)),))
        writer = env.create_result_partition(partition_descriptor(pid, 1))
        gate.block_channel(0, 0)
        gate.block_channel(0, 0)
        gate.unblock_all()
        gate.unblock_all()
        writer.emit(0, b"x")
        writer.finish()
        assert [(k, p) for _, _, k, p in read_all(gate)] == [(DATA, b"x"), (END, b"")]


class TestPriorityEvents:
    def test_a_priority_event_overtakes_queued_and_received_buffers_over_tcp(
        self, make_env
    ) -> None:
        # No floating credit: exactly two buffers reach the consumer, the rest stay queued.
        config = NetworkConfig(buffers_per_channel=2, floating_buffers_per_gate=0)
        producer_env, consumer_env = make_env("a", config), make_env("b", config)
        pid, other = partition_id("p"), partition_id("q")
        gate = consumer_env.create_input_gate(
            (
                gate_of(channel(pid, 0, producer_env, local=False)),
                gate_of(channel(other, 0, producer_env, local=False)),
            )
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        other_writer = producer_env.create_result_partition(partition_descriptor(other, 1))
        other_writer.emit(0, b"other")  # another channel already waiting in the gate
        wait_until(lambda: gate.buffered(1, 0) == 1)
        data = [b"d%d" % i for i in range(5)]
        for p in data:
            writer.emit(0, p)
        writer.emit_event(0, b"in-order-event")
        wait_until(lambda: gate.buffered(0, 0) == 2)

        overtaken = writer.emit_priority_event(b"barrier-1")
        assert overtaken == [[b"d2", b"d3", b"d4"]]  # queued at the producer
        received = gate.channel(0, 0).queue  # type: ignore[attr-defined]
        wait_until(lambda: len(received) == 3)

        assert gate.poll(10) == (0, 0, PRIORITY, b"barrier-1")  # ahead of channel 1 too
        assert gate.priority_event_overtaken(0, 0) == [b"d0", b"d1"]  # jumped in the gate
        assert gate.priority_event_overtaken(0, 0) == []  # handed out once
        writer.finish()
        other_writer.finish()
        rest = read_all(gate)
        assert [(k, p) for g, _, k, p in rest if g == 0] == [
            *((DATA, p) for p in data),
            (EVENT, b"in-order-event"),
            (END, b""),
        ]
        assert [(k, p) for g, _, k, p in rest if g == 1] == [(DATA, b"other"), (END, b"")]

    def test_priority_events_keep_their_order_among_themselves(self, make_env) -> None:
        config = NetworkConfig(buffers_per_channel=1, floating_buffers_per_gate=0)
        producer_env, consumer_env = make_env("a", config), make_env("b", config)
        pid = partition_id("p")
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        writer.emit(0, b"d0")
        writer.emit(0, b"d1")
        wait_until(lambda: gate.buffered(0, 0) == 1)
        assert writer.emit_priority_event(b"p1") == [[b"d1"]]
        assert writer.emit_priority_event(b"p2") == [[b"d1"]]
        received = gate.channel(0, 0).queue  # type: ignore[attr-defined]
        wait_until(lambda: len(received) == 3)
        writer.finish()
        polled = [(k, p) for _, _, k, p in read_all(gate)]
        assert polled == [
            (PRIORITY, b"p1"),
            (PRIORITY, b"p2"),
            (DATA, b"d0"),
            (DATA, b"d1"),
            (END, b""),
        ]

    def test_a_priority_event_overtakes_queued_buffers_in_memory(self, make_env) -> None:
        env = make_env("a")
        pid = partition_id("p")
        gate = env.create_input_gate(
            (gate_of(channel(pid, 0, env, local=True), channel(pid, 1, env, local=True)),)
        )
        writer = env.create_result_partition(partition_descriptor(pid, 2))
        for i in range(3):
            writer.emit(0, b"a%d" % i)
            writer.emit(1, b"b%d" % i)
        assert writer.emit_priority_event(b"barrier") == [
            [b"a0", b"a1", b"a2"],
            [b"b0", b"b1", b"b2"],
        ]
        writer.finish()
        polled = read_all(gate)
        for ch, prefix in ((0, b"a"), (1, b"b")):
            assert [(k, p) for _, c, k, p in polled if c == ch] == [
                (PRIORITY, b"barrier"),
                *((DATA, prefix + b"%d" % i) for i in range(3)),
                (END, b""),
            ]
        assert gate.priority_event_overtaken(0, 0) == []  # the producer reported them


def test_a_lost_producer_fails_a_blocked_channel_at_once(make_env) -> None:
    producer_env, consumer_env = make_env("a"), make_env("b")
    pid = partition_id("p")
    gate = consumer_env.create_input_gate((gate_of(channel(pid, 0, producer_env, local=False)),))
    writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
    writer.emit(0, b"x")
    writer.emit(0, b"y")
    assert gate.poll(10) == (0, 0, DATA, b"x")
    gate.block_channel(0, 0)
    writer.release(RuntimeError("producer failed"))
    with pytest.raises(NetworkError, match="producer failed"):
        while True:
            gate.poll(10)
