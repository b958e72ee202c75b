"""A real Apache Kafka broker for the tests: Kafka 4 in KRaft combined mode (broker and
controller in one JVM, no ZooKeeper) on 127.0.0.1, started from Kafka's own jars.

The jars come from Maven Central through ``tests/kafka/pom.xml`` (``mvn
dependency:copy-dependencies``), once per machine: they are cached in
``~/.cache/weir-tests/kafka-<version>/`` (``WEIR_TEST_CACHE`` moves it), under a file lock
so that parallel test workers fetch them once. The storage is formatted with
``kafka.tools.StorageTool format --standalone`` before the first start; ``restart()`` keeps
the data and the ports, as a broker restarted in place does.

It keeps Kafka's defaults where users' brokers have them (``transaction.max.timeout.ms``
above all: 15 minutes, which Flink's one-hour ``transaction.timeout.ms`` exceeds), so the
tests meet what users meet. Besides its plain listener it has one that asks for SASL/PLAIN
credentials (``sasl_bootstrap_servers``; user ``SASL_USER``, password ``SASL_PASSWORD``).
Topics are never created behind a test's back (``auto.create.topics.enable`` is off).

Under pytest-xdist the workers share one broker (``SharedKafka``, through
tests/server_watchdog.py, as MinIO is shared); a test that stops, kills or restarts a
broker starts one of its own (``KafkaBroker``).
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from server_watchdog import SCRIPT, locked, register, unregister

_POM = Path(__file__).parent / "kafka" / "pom.xml"
KAFKA_VERSION = re.search(r"<kafka.version>([^<]+)<", _POM.read_text()).group(1)  # type: ignore[union-attr]

# A broker on this 2-core machine formats in ~3 s and serves in ~5-10 s; under a loaded
# test run give it far longer before calling it broken.
_START_TIMEOUT_S = 120.0


def _cache_dir() -> Path:
    root = os.environ.get("WEIR_TEST_CACHE") or os.path.expanduser("~/.cache/weir-tests")
    return Path(root) / f"kafka-{KAFKA_VERSION}"


def kafka_classpath() -> str:
    """The broker's classpath, fetching the jars with Maven on first use."""
    cache = _cache_dir()
    libs = cache / "libs"
    done = cache / ".complete"
    if done.exists():
        return f"{libs}/*"
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not done.exists():
            if shutil.which("mvn") is None:
                msg = "Maven (mvn) is needed to fetch Kafka's jars: run `make setup`"
                raise RuntimeError(msg)
            shutil.rmtree(libs, ignore_errors=True)
            result = subprocess.run(
                [
                    "mvn",
                    "-q",
                    "-B",
                    "-f",
                    str(_POM),
                    "dependency:copy-dependencies",
                    f"-DoutputDirectory={libs}",
                    "-DincludeScope=runtime",
                ],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if result.returncode != 0:
                output = result.stdout + result.stderr
                msg = f"fetching Kafka {KAFKA_VERSION} with Maven failed:\n{output}"
                raise RuntimeError(msg)
            done.touch()
    return f"{libs}/*"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


_LOG4J = """\
Configuration:
  Appenders:
    File:
      name: file
      fileName: {log}
      PatternLayout: {{pattern: "[%d] %p %m (%c)%n"}}
  Loggers:
    Root: {{level: INFO, AppenderRef: [{{ref: file}}]}}
"""


class KafkaBroker:
    """One KRaft node (broker + controller) on 127.0.0.1; ``bootstrap_servers`` names it."""

    SASL_USER = "weir"
    SASL_PASSWORD = "weir-secret"

    def __init__(
        self,
        directory: Path,
        extra_properties: dict[str, str] | None = None,
        *,
        ports: dict[str, int] | None = None,
    ) -> None:
        """``ports``: those of a broker already running (``ports()``), to join it."""
        self.directory = Path(directory)
        self.port = ports["port"] if ports else _free_port()
        self.sasl_port = ports["sasl_port"] if ports else _free_port()
        self.controller_port = ports["controller_port"] if ports else _free_port()
        self._extra = dict(extra_properties or {})
        self._process: subprocess.Popen[bytes] | None = None
        self._formatted = False

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def sasl_bootstrap_servers(self) -> str:
        """The listener that asks for SASL/PLAIN credentials (``security.protocol``
        ``SASL_PLAINTEXT``)."""
        return f"127.0.0.1:{self.sasl_port}"

    @property
    def log_file(self) -> Path:
        return self.directory / "server.log"

    def _write_config(self) -> Path:
        properties = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.bootstrap.servers": f"127.0.0.1:{self.controller_port}",
            "listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port},"
                f"CONTROLLER://127.0.0.1:{self.controller_port}"
            ),
            "advertised.listeners": (
                f"PLAINTEXT://127.0.0.1:{self.port},SASL_PLAINTEXT://127.0.0.1:{self.sasl_port}"
            ),
            "controller.listener.names": "CONTROLLER",
            "listener.security.protocol.map": (
                "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT"
            ),
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": (
                "org.apache.kafka.common.security.plain.PlainLoginModule required "
                f'user_{self.SASL_USER}="{self.SASL_PASSWORD}";'
            ),
            "inter.broker.listener.name": "PLAINTEXT",
            "log.dirs": str(self.directory / "data"),
            "num.partitions": "1",
            # Missing topics must be reported, not created behind the test's back.
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "4",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.state.log.num.partitions": "4",
            "group.initial.rebalance.delay.ms": "0",
            **self._extra,
        }
        path = self.directory / "server.properties"
        path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        (self.directory / "log4j2.yaml").write_text(_LOG4J.format(log=self.log_file))
        return path

    def _java(self, main: str, *args: str) -> list[str]:
        return [
            "java",
            "-Xms256m",
            "-Xmx1g",
            "-XX:+UseG1GC",
            f"-Dlog4j2.configurationFile={self.directory / 'log4j2.yaml'}",
            f"-Dkafka.logs.dir={self.directory}",
            "-cp",
            kafka_classpath(),
            main,
            *args,
        ]

    def ports(self) -> dict[str, int]:
        return {
            "port": self.port,
            "sasl_port": self.sasl_port,
            "controller_port": self.controller_port,
        }

    def prepare(self) -> Path:
        """Write the configuration and format the storage (once); returns the
        configuration's path."""
        self.directory.mkdir(parents=True, exist_ok=True)
        config = self._write_config()
        if not self._formatted:
            cluster_id = _cluster_id()
            subprocess.run(
                self._java(
                    "kafka.tools.StorageTool",
                    "format",
                    "-t",
                    cluster_id,
                    "-c",
                    str(config),
                    "--standalone",
                ),
                check=True,
                capture_output=True,
                timeout=120,
            )
            self._formatted = True
        return config

    def start(self) -> KafkaBroker:
        config = self.prepare()
        with open(self.directory / "stdout.log", "ab") as out:
            self._process = subprocess.Popen(
                self._java("kafka.Kafka", str(config)),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.await_ready()
        return self

    def await_ready(self) -> None:
        """Until the broker serves metadata and transactions."""
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + _START_TIMEOUT_S
        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers, "log_level": 0})
        while True:
            if self._process is not None and self._process.poll() is not None:
                msg = (
                    f"the Kafka broker exited with {self._process.returncode}; see {self.log_file}"
                )
                raise RuntimeError(msg)
            try:
                metadata = admin.list_topics(timeout=2)
                if metadata.brokers:
                    return
            except Exception:  # not up yet
                pass
            if time.monotonic() > deadline:
                msg = f"the Kafka broker did not serve in {_START_TIMEOUT_S} s; see {self.log_file}"
                raise RuntimeError(msg)
            time.sleep(0.2)

    def stop(self) -> None:
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def kill(self) -> None:
        """SIGKILL: the broker dies as on a power cut."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=30)

    def restart(self) -> None:
        self.stop()
        self.start()

    # -- helpers for tests ---------------------------------------------------------------

    def create_topic(self, name: str, partitions: int = 1) -> str:
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        admin.create_topics([NewTopic(name, partitions, 1)])[name].result(timeout=60)
        deadline = time.monotonic() + 60
        while True:  # until every partition has a leader
            topic = admin.list_topics(name, timeout=10).topics.get(name)
            if topic is not None and topic.error is None and len(topic.partitions) == partitions:
                if all(p.leader >= 0 for p in topic.partitions.values()):
                    return name
            if time.monotonic() > deadline:
                msg = f"topic {name} did not get leaders"
                raise RuntimeError(msg)
            time.sleep(0.05)

    def add_partitions(self, name: str, total: int) -> None:
        from confluent_kafka.admin import AdminClient, NewPartitions

        admin = AdminClient({"bootstrap.servers": self.bootstrap_servers})
        admin.create_partitions([NewPartitions(name, total)])[name].result(timeout=60)

    def produce(
        self,
        topic: str,
        values: list[bytes | str],
        *,
        partition: int | None = None,
        keys: list[bytes | str] | None = None,
        timestamps: list[int] | None = None,
    ) -> None:
        from confluent_kafka import Producer

        producer = Producer({"bootstrap.servers": self.bootstrap_servers, "linger.ms": 5})
        for i, value in enumerate(values):
            kwargs: dict[str, object] = {"value": value}
            if partition is not None:
                kwargs["partition"] = partition
            if keys is not None:
                kwargs["key"] = keys[i]
            if timestamps is not None:
                kwargs["timestamp"] = timestamps[i]
            while True:
                try:
                    producer.produce(topic, **kwargs)
                    break
                except BufferError:
                    producer.poll(0.1)
        remaining = producer.flush(60)
        assert remaining == 0, f"{remaining} records not delivered to {topic}"

    def read_committed(
        self, topic: str, *, expected: int | None = None, timeout: float = 60.0
    ) -> list[tuple[int, int, bytes | None, bytes | None]]:
        """Every committed record of ``topic`` as ``(partition, offset, key, value)``: read
        with ``isolation.level=read_committed`` up to the last stable offset of each
        partition (waiting until ``expected`` records are there, when given)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"reader-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
            }
        )
        try:
            metadata = consumer.list_topics(topic, timeout=10)
            partitions = sorted(metadata.topics[topic].partitions)
            deadline = time.monotonic() + timeout
            while True:
                records = self._read_all(consumer, topic, partitions, TopicPartition)
                if expected is None or len(records) >= expected or time.monotonic() > deadline:
                    return records
                time.sleep(0.2)
        finally:
            consumer.close()

    def read_timestamps(
        self, topic: str, *, expected: int, timeout: float = 60.0
    ) -> dict[bytes | None, int]:
        """``value: Kafka timestamp`` of the committed records of ``topic``, once
        ``expected`` distinct values are there (or ``timeout`` passed)."""
        from confluent_kafka import Consumer, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap_servers,
                "group.id": f"reader-{uuid.uuid4().hex}",
                "isolation.level": "read_committed",
                "enable.auto.commit": False,
            }
        )
        found: dict[bytes | None, int] = {}
        try:
            partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
            consumer.assign([TopicPartition(topic, p, 0) for p in partitions])
            deadline = time.monotonic() + timeout
            while len(found) < expected and time.monotonic() < deadline:
                for message in consumer.consume(1000, 0.2):
                    if not message.error():
                        found[message.value()] = message.timestamp()[1]
        finally:
            consumer.close()
        return found

    @staticmethod
    def _read_all(consumer, topic, partitions, topic_partition):  # type: ignore[no-untyped-def]
        # The end of a read_committed consumer is the last stable offset.
        ends = {}
        for p in partitions:
            _low, high = consumer.get_watermark_offsets(topic_partition(topic, p), timeout=10)
            ends[p] = high
        consumer.assign([topic_partition(topic, p, 0) for p in partitions])
        records: list[tuple[int, int, bytes | None, bytes | None]] = []
        position = dict.fromkeys(partitions, 0)
        deadline = time.monotonic() + 30
        while any(position[p] < ends[p] for p in partitions) and time.monotonic() < deadline:
            for message in consumer.consume(1000, 0.2):
                if message.error():
                    continue
                records.append(
                    (message.partition(), message.offset(), message.key(), message.value())
                )
                position[message.partition()] = message.offset() + 1
            # Transaction markers take offsets too: ask where the consumer is.
            for tp in consumer.position([topic_partition(topic, p) for p in partitions]):
                if tp.offset >= 0:
                    position[tp.partition] = max(position[tp.partition], tp.offset)
        consumer.unassign()
        return records


@dataclass
class SharedKafka:
    """One broker for every process of a run that needs one (pytest-xdist's workers); see
    the module docstring."""

    run_dir: Path

    def acquire(self) -> KafkaBroker:
        kafka_classpath()  # fetched outside the run's lock (under a lock of its own)
        with locked(self.run_dir / "lock"):
            register(self.run_dir / "users")
            state = self.run_dir / "broker.json"
            directory = self.run_dir / "broker"
            if state.exists():
                return KafkaBroker(directory, ports=json.loads(state.read_text()))
            broker = KafkaBroker(directory)
            config = broker.prepare()
            with open(directory / "stdout.log", "ab") as out:
                watchdog = subprocess.Popen(
                    [
                        sys.executable,
                        SCRIPT,
                        str(self.run_dir / "users"),
                        *broker._java("kafka.Kafka", str(config)),
                    ],
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    # Not ended with the worker that started it: others may still use it.
                    start_new_session=True,
                )
            broker._process = watchdog  # its end is the broker's
            broker.await_ready()
            broker._process = None  # stopped by the watchdog, never by a worker
            state.write_text(json.dumps(broker.ports()))
            return broker

    def release(self) -> None:
        with locked(self.run_dir / "lock"):
            unregister(self.run_dir / "users")


def _cluster_id() -> str:
    """A random KRaft cluster id as Kafka's ``Uuid.randomUuid`` makes one: base64 of 16
    random bytes, never starting with "-" (the storage tool would read it as an option)."""
    while True:
        cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not cluster_id.startswith("-"):
            return cluster_id
