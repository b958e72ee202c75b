"""Two DefaultNetworkEnvironments in one process exchanging buffers over loopback TCP."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator

import pytest

from weir.core.deployment import (
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskManagerLocation,
)
from weir.core.errors import NetworkError
from weir.core.ids import ExecutionAttemptId, JobVertexId, OperatorId, ResourceId
from weir.core.job_graph import JobEdge, PartitionerKind
from weir.taskmanager.network import (
    BufferKind,
    DefaultInputGate,
    DefaultNetworkEnvironment,
    NetworkConfig,
    PartitionClosedError,
    ResultPartition,
)

HOST = "127.0.0.1"
EDGE = JobEdge(
    JobVertexId("src"), OperatorId("op"), JobVertexId("dst"), 0, PartitionerKind.REBALANCE
)


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    """Await a condition another thread brings about (never a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "condition not reached in time"
        time.sleep(0.001)


def network_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("weir-network-io")]


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


def partition_id(producer: str, edge_index: int = 0) -> ResultPartitionId:
    return ResultPartitionId(ExecutionAttemptId(producer), edge_index)


def partition_descriptor(pid: ResultPartitionId, n: int) -> ResultPartitionDescriptor:
    return ResultPartitionDescriptor(pid, EDGE, n, tuple(range(n)), n, 128)


def channel(
    pid: ResultPartitionId, subpartition: int, producer: DefaultNetworkEnvironment, *, local: bool
) -> InputChannelDescriptor:
    assert producer.data_port is not None
    location = TaskManagerLocation(ResourceId(producer.resource_id), HOST, producer.data_port)
    return InputChannelDescriptor(pid, subpartition, location, local)


def gate_of(*channels: InputChannelDescriptor) -> InputGateDescriptor:
    return InputGateDescriptor(0, EDGE, channels)


def read_all(
    gate: DefaultInputGate, timeout: float = 10.0
) -> list[tuple[int, int, BufferKind, bytes]]:
    out = []
    deadline = time.monotonic() + timeout
    while not gate.is_finished():
        assert time.monotonic() < deadline, f"gate not finished; got {len(out)} buffers"
        polled = gate.poll(0.5)
        if polled is not None:
            out.append(polled)
    return out


def produce(writer: ResultPartition, count: int, *, finish: bool = True) -> threading.Thread:
    def run() -> None:
        for i in range(count):
            for sub in range(writer.num_subpartitions):
                writer.emit(sub, f"{sub}:{i}".encode())
        if finish:
            writer.finish()

    thread = threading.Thread(target=run, name="test-producer")
    thread.start()
    return thread


def payloads(polled: list[tuple[int, int, BufferKind, bytes]], gate: int, ch: int) -> list[bytes]:
    return [p for g, c, kind, p in polled if (g, c) == (gate, ch) and kind == BufferKind.DATA]


class TestTcpExchange:
    def test_many_buffers_arrive_in_order(self, make_env) -> None:
        producer_env, consumer_env = make_env("a"), make_env("b")
        pid = partition_id("p1")
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        thread = produce(writer, 5000)
        polled = read_all(gate)
        thread.join()
        assert payloads(polled, 0, 0) == [f"0:{i}".encode() for i in range(5000)]
        assert polled[-1][2] == BufferKind.END_OF_PARTITION
        assert gate.is_finished()
        assert writer.stats.buffers_emitted == writer.stats.buffers_sent == 5000
        assert gate.stats.buffers_received == 5000
        wait_until(lambda: writer.is_released)  # released once its END was consumed

    def test_all_to_all_two_by_two_multiplexes_channels_on_one_connection(self, make_env) -> None:
        env_a, env_b = make_env("a"), make_env("b")
        # Producers p0 (on a) and p1 (on b) each feed consumers c0 (on a) and c1 (on b).
        pids = [partition_id("p0"), partition_id("p1")]
        envs = [env_a, env_b]
        gates = [
            env.create_input_gate(
                (
                    gate_of(
                        *(
                            channel(pids[p], consumer, envs[p], local=envs[p] is env)
                            for p in range(2)
                        )
                    ),
                )
            )
            for consumer, env in enumerate(envs)
        ]
        writers = [
            envs[p].create_result_partition(partition_descriptor(pids[p], 2)) for p in range(2)
        ]
        threads = [produce(w, 2000) for w in writers]
        # Both consumers read concurrently: a producer blocked on one full subpartition
        # would otherwise starve the other consumer (that is back-pressure working).
        results: list[list[tuple[int, int, BufferKind, bytes]]] = [[], []]
        readers = [
            threading.Thread(target=lambda i=i: results[i].extend(read_all(gates[i])))
            for i in range(2)
        ]
        for r in readers:
            r.start()
        for r in readers:
            r.join()
        for t in threads:
            t.join()
        for consumer in range(2):
            for producer in range(2):
                assert payloads(results[consumer], 0, producer) == [
                    f"{consumer}:{i}".encode() for i in range(2000)
                ]
        # One client connection per consumer environment towards the other one.
        assert len(env_a._connections._client._clients) <= 1
        assert len(env_b._connections._client._clients) <= 1

    def test_several_channels_share_one_connection(self, make_env) -> None:
        producer_env, consumer_env = make_env("a"), make_env("b")
        pid = partition_id("p")
        gate = consumer_env.create_input_gate(
            (gate_of(*(channel(pid, s, producer_env, local=False) for s in range(4))),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 4))
        thread = produce(writer, 500)
        polled = read_all(gate)
        thread.join()
        for s in range(4):
            assert payloads(polled, 0, s) == [f"{s}:{i}".encode() for i in range(500)]
        assert len(consumer_env._connections._client._clients) == 1

    def test_events_travel_in_order_with_data(self, make_env) -> None:
        producer_env, consumer_env = make_env("a"), make_env("b")
        pid = partition_id("p")
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        expected = [
            (BufferKind.EVENT, b"e%d" % i) if i % 10 == 0 else (BufferKind.DATA, b"d%d" % i)
            for i in range(300)
        ]

        def run() -> None:
            for kind, payload in expected:
                if kind == BufferKind.EVENT:
                    writer.emit_event(0, payload)
                else:
                    writer.emit(0, payload)
            writer.finish()

        thread = threading.Thread(target=run)
        thread.start()
        polled = read_all(gate)
        thread.join()
        assert [(k, p) for _, _, k, p in polled[:-1]] == expected
        assert polled[-1][2] == BufferKind.END_OF_PARTITION
        assert gate.stats.events_polled == 30

    def test_request_before_the_producer_registers_is_parked(self, make_env) -> None:
        producer_env, consumer_env = make_env("a"), make_env("b")
        pid = partition_id("late")
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        assert gate.poll(0) is None
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        thread = produce(writer, 10)
        assert len(payloads(read_all(gate), 0, 0)) == 10
        thread.join()


class TestLocalExchange:
    def test_buffers_events_and_end_in_memory(self, make_env) -> None:
        env = make_env("a")
        pid = partition_id("p")
        gate = env.create_input_gate(
            (gate_of(channel(pid, 0, env, local=True), channel(pid, 1, env, local=True)),)
        )
        writer = env.create_result_partition(partition_descriptor(pid, 2))
        writer.broadcast_event(b"watermark")
        thread = produce(writer, 3000)
        polled = read_all(gate)
        thread.join()
        for s in range(2):
            kinds = [(k, p) for g, c, k, p in polled if c == s]
            assert kinds[0] == (BufferKind.EVENT, b"watermark")
            assert payloads(polled, 0, s) == [f"{s}:{i}".encode() for i in range(3000)]
            assert kinds[-1][0] == BufferKind.END_OF_PARTITION
        assert writer.stats.max_queued <= NetworkConfig().max_buffers_per_subpartition
        assert env._connections._client._clients == {}  # no socket for local channels
        wait_until(lambda: writer.is_released)


class TestBackPressure:
    def test_slow_consumer_blocks_only_its_own_channel(self, make_env) -> None:
        config = NetworkConfig(
            buffers_per_channel=2, floating_buffers_per_gate=0, max_buffers_per_subpartition=3
        )
        producer_env, consumer_env = make_env("a", config), make_env("b", config)
        pid = partition_id("p")
        slow_gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        fast_gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 1, producer_env, local=False)),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 2))

        blocked_writer = threading.Thread(
            target=lambda: [writer.emit(0, b"s%d" % i) for i in range(50)]
        )
        blocked_writer.start()
        # The slow channel fills its 2 credits, then its subpartition fills to 3: emit blocks.
        wait_until(lambda: writer.stats.blocked_emits >= 1 and slow_gate.buffered(0, 0) == 2)
        assert blocked_writer.is_alive()
        assert writer.stats.max_queued <= 3
        assert slow_gate.stats.max_buffered_per_channel <= 2

        # Meanwhile another channel on the same connection keeps flowing.
        for i in range(200):
            writer.emit(1, b"f%d" % i)
            polled = fast_gate.poll(5)
            assert polled is not None and polled[3] == b"f%d" % i
        assert len(consumer_env._connections._client._clients) == 1
        assert slow_gate.buffered(0, 0) == 2

        # Unstall: everything arrives in order, never more in flight than the credits.
        got = []
        while len(got) < 50:
            polled = slow_gate.poll(5)
            assert polled is not None
            got.append(polled[3])
        blocked_writer.join(5)
        assert got == [b"s%d" % i for i in range(50)]
        assert writer.stats.max_queued <= 3
        assert slow_gate.stats.max_buffered_per_channel <= 2
        assert writer.stats.blocked_emits >= 1

    def test_floating_credits_bound_what_a_channel_buffers(self, make_env) -> None:
        config = NetworkConfig(
            buffers_per_channel=2, floating_buffers_per_gate=3, max_buffers_per_subpartition=8
        )
        producer_env, consumer_env = make_env("a", config), make_env("b", config)
        pid = partition_id("p")
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        thread = produce(writer, 100, finish=False)
        # The backlog travels with the buffers: let the subpartition fill (8 queued, the
        # producer blocked) before the consumer asks, so its first buffer announces 7.
        wait_until(lambda: writer.stats.blocked_emits >= 1)
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        # Backlogged, the channel borrows the gate's floating credits: 2 + 3 buffered.
        wait_until(lambda: gate.buffered(0, 0) == 5)
        assert gate.stats.max_buffered_per_channel == 5
        got = [gate.poll(5) for _ in range(100)]
        thread.join()
        assert [g[3] for g in got if g] == [f"0:{i}".encode() for i in range(100)]
        assert gate.stats.max_buffered_per_channel <= 5
        assert gate.pool.available <= 3


class TestFailures:
    def test_closing_the_producer_environment_fails_the_consumer(self, make_env) -> None:
        producer_env, consumer_env = make_env("a"), make_env("b")
        pid = partition_id("p")
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        writer.emit(0, b"one")
        assert gate.poll(5) is not None
        producer_env.close()
        with pytest.raises(NetworkError, match=str(pid)) as info:
            for _ in range(10):
                gate.poll(5)
        assert f"{HOST}:" in str(info.value)
        with pytest.raises(NetworkError):
            gate.poll(0)  # stays failed

    def test_a_partition_released_with_an_error_fails_the_consumer(self, make_env) -> None:
        producer_env, consumer_env = make_env("a"), make_env("b")
        pid = partition_id("p")
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        writer.release(RuntimeError("producer task failed"))
        with pytest.raises(NetworkError, match="producer task failed"):
            gate.poll(5)

    def test_a_local_partition_released_with_an_error_fails_the_consumer(self, make_env) -> None:
        env = make_env("a")
        pid = partition_id("p")
        gate = env.create_input_gate((gate_of(channel(pid, 0, env, local=True)),))
        writer = env.create_result_partition(partition_descriptor(pid, 1))
        writer.release(RuntimeError("producer task failed"))
        with pytest.raises(NetworkError, match="producer task failed"):
            gate.poll(5)

    def test_connecting_to_a_dead_port_fails_the_consumer(self, make_env) -> None:
        dead = make_env("a")
        consumer_env = make_env("b")
        pid = partition_id("p")
        descriptor = channel(pid, 0, dead, local=False)
        dead.close()
        gate = consumer_env.create_input_gate((gate_of(descriptor),))
        with pytest.raises(NetworkError, match="connect"):
            gate.poll(5)

    def test_close_wakes_a_blocked_poll_and_a_blocked_emit(self, make_env) -> None:
        env = make_env("a", NetworkConfig(max_buffers_per_subpartition=1))
        pid = partition_id("p")
        gate = env.create_input_gate((gate_of(channel(partition_id("never"), 0, env, local=True)),))
        writer = env.create_result_partition(partition_descriptor(pid, 1))
        writer.emit(0, b"fills the subpartition")
        errors: list[BaseException] = []

        def blocked(call: Callable[[], object]) -> threading.Thread:
            def run() -> None:
                try:
                    call()
                except PartitionClosedError as exc:
                    errors.append(exc)

            thread = threading.Thread(target=run)
            thread.start()
            return thread

        threads = [blocked(lambda: gate.poll(None)), blocked(lambda: writer.emit(0, b"x"))]
        wait_until(lambda: writer.stats.blocked_emits == 1)
        env.close()
        for t in threads:
            t.join(5)
        assert len(errors) == 2

    def test_wakeup_returns_none(self, make_env) -> None:
        env = make_env("a")
        gate = env.create_input_gate((gate_of(channel(partition_id("p"), 0, env, local=True)),))
        gate.wakeup()
        assert gate.poll(None) is None


class TestLifecycle:
    def test_close_leaves_no_thread_and_is_idempotent(self) -> None:
        before = set(threading.enumerate())
        envs = [DefaultNetworkEnvironment(n * 8, HOST, NetworkConfig()) for n in "ab"]
        for env in envs:
            env.start()
        pid = partition_id("p")
        gate = envs[1].create_input_gate((gate_of(channel(pid, 0, envs[0], local=False)),))
        writer = envs[0].create_result_partition(partition_descriptor(pid, 1))
        writer.emit(0, b"x")
        assert gate.poll(5) is not None
        assert len(network_threads()) == 2
        for env in envs:
            env.close()
            env.close()
        assert set(threading.enumerate()) == before

    def test_an_environment_never_started_closes_cleanly(self) -> None:
        with DefaultNetworkEnvironment("c" * 8, HOST, NetworkConfig()) as env:
            with pytest.raises(NetworkError, match="start"):
                env.create_input_gate(
                    (gate_of(channel(partition_id("p"), 0, _FakeStarted(), local=False)),)
                )


class _FakeStarted:
    resource_id = "elsewhere"
    data_port = 1


class TestOneConsumerPerSubpartition:
    def test_a_second_request_is_refused_and_the_consumer_gets_every_buffer(self, make_env) -> None:
        producer_env, consumer_env, thief_env = make_env("a"), make_env("b"), make_env("c")
        pid = partition_id("p")
        writer = producer_env.create_result_partition(partition_descriptor(pid, 1))
        gate = consumer_env.create_input_gate(
            (gate_of(channel(pid, 0, producer_env, local=False)),)
        )
        writer.emit(0, b"first")
        first = None
        deadline = time.monotonic() + 10
        while first is None:  # the consumer is attached once its first buffer arrived
            assert time.monotonic() < deadline, "the consumer got nothing"
            first = gate.poll(0.5)
        thief = thief_env.create_input_gate((gate_of(channel(pid, 0, producer_env, local=False)),))
        with pytest.raises(NetworkError, match="already has a consumer"):
            while True:  # bounded: read_all's deadline below, the error comes first
                assert time.monotonic() < deadline + 10, "the second request was not refused"
                thief.poll(0.5)
        thread = produce(writer, 1000)
        polled = read_all(gate)
        thread.join()
        assert first[3] == b"first"
        assert payloads(polled, 0, 0) == [f"0:{i}".encode() for i in range(1000)]
