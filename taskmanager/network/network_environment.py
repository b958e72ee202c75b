"""``DefaultNetworkEnvironment``: a TaskExecutor's data plane (Flink's ``NettyShuffleEnvironment``).

It owns the partition registry, the I/O thread with its data server and connections,
and every partition and gate its tasks create, so ``close`` leaves nothing behind: this
runs inside reused Spark Python workers, where a leaked thread or socket outlives the job.

Example::

    with DefaultNetworkEnvironment(resource_id, "127.0.0.1", NetworkConfig()) as env:
        port = env.start()
        writer = env.create_result_partition(partition_descriptor)
        gate = env.create_input_gate(task_deployment.input_gates)
"""

from __future__ import annotations

import itertools
import logging
import threading

from weir.core.deployment import InputGateDescriptor, ResultPartitionDescriptor
from weir.core.errors import ConfigurationError, NetworkError
from weir.taskmanager.network.api import FatalErrorHandler, NetworkConfig
from weir.taskmanager.network.connection_admission import AdmissionLimits
from weir.taskmanager.network.connection_manager import ConnectionManager
from weir.taskmanager.network.input_channel import (
    InputChannel,
    LocalInputChannel,
    RemoteInputChannel,
)
from weir.taskmanager.network.input_gate import DefaultInputGate
from weir.taskmanager.network.result_partition import ResultPartition
from weir.taskmanager.network.result_partition_manager import ResultPartitionManager

logger = logging.getLogger(__name__)


class DefaultNetworkEnvironment:
    """Implements ``NetworkEnvironment``; thread-safe."""

    def __init__(self, resource_id: str, host: str, config: NetworkConfig) -> None:
        if config.buffers_per_channel < 1:
            msg = (
                f"buffers_per_channel must be at least 1; got {config.buffers_per_channel} "
                "(a channel without exclusive credit could never receive data)"
            )
            raise ConfigurationError(msg)
        if config.max_buffers_per_subpartition < 1:
            msg = (
                "max_buffers_per_subpartition must be at least 1; got "
                f"{config.max_buffers_per_subpartition}"
            )
            raise ConfigurationError(msg)
        self.resource_id = resource_id
        self.host = host
        self.config = config
        self.data_port: int | None = None
        self._partitions = ResultPartitionManager()
        self._connections = ConnectionManager(
            resource_id,
            host,
            self._partitions,
            config.security,
            config.data_ports,
            limits=AdmissionLimits(
                config.handshake_timeout_ms / 1000,
                config.max_unauthenticated_connections_per_host,
                config.max_unauthenticated_connections,
            ),
        )
        self._channel_ids = itertools.count(1)
        self._lock = threading.Lock()
        self._gates: set[DefaultInputGate] = set()
        self._created: list[ResultPartition] = []
        self._closed = False

    def __enter__(self) -> DefaultNetworkEnvironment:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def start(self, on_fatal_error: FatalErrorHandler | None = None) -> int:
        self._check_open()
        self.data_port = self._connections.start(on_fatal_error)
        return self.data_port

    def create_result_partition(self, descriptor: ResultPartitionDescriptor) -> ResultPartition:
        self._check_open()
        partition = ResultPartition(descriptor, self.config, on_consumed=self._partitions.release)
        self._partitions.register(partition)
        with self._lock:
            # Weakly bounded: partitions are released when consumed; the list is only
            # used by ``close`` to wake writers of partitions nobody consumed.
            self._created = [p for p in self._created if not p.is_released]
            self._created.append(partition)
        return partition

    def create_input_gate(self, descriptors: tuple[InputGateDescriptor, ...]) -> DefaultInputGate:
        self._check_open()
        gate = DefaultInputGate(self.config.floating_buffers_per_gate, on_close=self._forget_gate)
        channels: list[list[InputChannel]] = []
        local: list[LocalInputChannel] = []
        remote: list[RemoteInputChannel] = []
        for gate_index, gate_descriptor in enumerate(descriptors):
            row: list[InputChannel] = []
            for channel_index, channel_descriptor in enumerate(gate_descriptor.channels):
                location = channel_descriptor.producer_location
                if channel_descriptor.is_local and location.resource_id == self.resource_id:
                    channel: InputChannel = LocalInputChannel(
                        gate_index,
                        channel_index,
                        channel_descriptor,
                        self._partitions,
                        gate.enqueue,
                    )
                    local.append(channel)  # type: ignore[arg-type]
                else:
                    if channel_descriptor.is_local:
                        logger.warning(
                            "channel marked local but produced by TaskManager %s, not %s; "
                            "reading it over TCP",
                            location.resource_id,
                            self.resource_id,
                        )
                    channel = RemoteInputChannel(
                        gate_index,
                        channel_index,
                        channel_descriptor,
                        channel_id=next(self._channel_ids),
                        exclusive_credits=self.config.buffers_per_channel,
                        pool=gate.pool,
                    )
                    remote.append(channel)  # type: ignore[arg-type]
                row.append(channel)
            channels.append(row)
        if remote and not self._connections.is_running:
            msg = (
                "this input gate reads remote partitions but the network environment was not "
                "started; call start() first"
            )
            raise NetworkError(msg)
        gate.set_channels(channels, self._connections)
        with self._lock:
            self._gates.add(gate)
        for local_channel in local:
            local_channel.request()
        for remote_channel in remote:
            self._connections.request_partition(remote_channel)
        return gate

    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            gates = list(self._gates)
            self._gates.clear()
        # Partitions first: blocked writers wake with PartitionClosedError and remote
        # consumers are told their partition is gone, before the sockets close.
        self._partitions.close()
        for partition in self._created:
            partition.release(None)
        self._created.clear()
        for gate in gates:
            gate.close()
        self._connections.close()
        logger.info("network environment of %s closed", self.resource_id)

    def _forget_gate(self, gate: DefaultInputGate) -> None:
        with self._lock:
            self._gates.discard(gate)

    def _check_open(self) -> None:
        if self._closed:
            msg = f"the network environment of {self.resource_id} is closed"
            raise NetworkError(msg)
