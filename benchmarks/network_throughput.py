"""Data-plane throughput: frames/s and MB/s between two environments over loopback TCP,
and between two tasks of one environment in memory.

    .venv/bin/python benchmarks/network_throughput.py [--seconds 2] [--buffers-per-channel 2]

One producer thread emits fixed-size buffers into one subpartition; the main thread
polls them from an input gate, as a task would. For reference, plain framed TCP in
Python moves about 20k x 32 KiB frames/s and 200k+ small frames/s.
"""

from __future__ import annotations

import argparse
import threading
import time

from weir.core.deployment import (
    InputChannelDescriptor,
    InputGateDescriptor,
    ResultPartitionDescriptor,
    ResultPartitionId,
    TaskManagerLocation,
)
from weir.core.ids import ExecutionAttemptId, JobVertexId, OperatorId, ResourceId
from weir.core.job_graph import JobEdge, PartitionerKind
from weir.taskmanager.network import BufferKind, DefaultNetworkEnvironment, NetworkConfig

HOST = "127.0.0.1"
EDGE = JobEdge(JobVertexId("src"), OperatorId("op"), JobVertexId("dst"), 0, PartitionerKind.FORWARD)


def run(
    producer: DefaultNetworkEnvironment,
    consumer: DefaultNetworkEnvironment,
    name: str,
    size: int,
    seconds: float,
) -> tuple[int, float]:
    pid = ResultPartitionId(ExecutionAttemptId(f"{name}-{size}"), 0)
    local = producer is consumer
    assert producer.data_port is not None
    location = TaskManagerLocation(ResourceId(producer.resource_id), HOST, producer.data_port)
    gate = consumer.create_input_gate(
        (InputGateDescriptor(0, EDGE, (InputChannelDescriptor(pid, 0, location, local),)),)
    )
    writer = producer.create_result_partition(ResultPartitionDescriptor(pid, EDGE, 1, (0,), 1, 128))
    payload = b"x" * size
    stop = threading.Event()
    sent = 0

    def produce() -> None:
        nonlocal sent
        emit = writer.emit
        while not stop.is_set():
            for _ in range(256):
                emit(0, payload)
            sent += 256
        writer.finish()

    thread = threading.Thread(target=produce)
    received = 0
    start = time.perf_counter()
    thread.start()
    deadline = start + seconds
    poll = gate.poll
    while True:
        polled = poll(5.0)
        if polled is None:
            msg = f"{name}: no buffer for 5 s after {received}"
            raise RuntimeError(msg)
        if polled[2] == BufferKind.END_OF_PARTITION:
            break
        received += 1
        if received & 1023 == 0 and not stop.is_set() and time.perf_counter() > deadline:
            stop.set()
    elapsed = time.perf_counter() - start
    thread.join()
    gate.close()
    assert received == sent, (received, sent)
    return received, elapsed


def main() -> None:
    defaults = NetworkConfig()
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--buffers-per-channel", type=int, default=defaults.buffers_per_channel)
    parser.add_argument("--floating-buffers", type=int, default=defaults.floating_buffers_per_gate)
    args = parser.parse_args()
    config = NetworkConfig(
        buffers_per_channel=args.buffers_per_channel,
        floating_buffers_per_gate=args.floating_buffers,
    )
    print(
        f"config: {config.buffers_per_channel} exclusive + {config.floating_buffers_per_gate} "
        f"floating credits, {config.max_buffers_per_subpartition} buffers per subpartition"
    )
    with (
        DefaultNetworkEnvironment("producer" * 4, HOST, config) as a,
        DefaultNetworkEnvironment("consumer" * 4, HOST, config) as b,
    ):
        a.start()
        b.start()
        for name, (producer, consumer) in (("tcp", (a, b)), ("local", (a, a))):
            for size in (32 * 1024, 100):
                frames, elapsed = run(producer, consumer, name, size, args.seconds)
                rate = frames / elapsed
                print(
                    f"{name:5s} {size:6d} B buffers: {rate:10,.0f} frames/s "
                    f"{rate * size / 1e6:9.1f} MB/s  ({frames} in {elapsed:.2f} s)"
                )


if __name__ == "__main__":
    main()
