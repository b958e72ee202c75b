"""A PyFlink Kafka program (tests/integration/kafka_jobs/running_count.py: source, key_by,
running count, exactly-once sink; only its imports changed) on the MiniCluster against a
real Kafka broker, checkpointing every 500 ms: TaskManagers killed at random moments, a
failure between a checkpoint's completion and its commit, and a rescale from a savepoint.
Each time a read_committed consumer must find exactly the output of a failure-free run."""

from __future__ import annotations

import logging
import os
import pickle
import random
import re
import signal
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from weir.client import cli
from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Configuration, Duration, SimpleStringSchema, Time, Types, WatermarkStrategy
from weir.core.checkpoint import read_state
from weir.core.errors import JobExecutionError
from weir.core.job_status import JobStatus
from weir.core.source import assign_splits
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors import DeliveryGuarantee
from weir.datastream.connectors.kafka import (
    KafkaOffsetsInitializer,
    KafkaRecordSerializationSchema,
    KafkaSink,
    KafkaSource,
    KafkaTopicPartition,
)
from weir.datastream.connectors.kafka import sink as sink_module
from weir.datastream.formats.json import JsonRowDeserializationSchema
from weir.datastream.window import TumblingEventTimeWindows
from weir.state import read_savepoint

sys.path.insert(0, str(Path(__file__).parents[1] / "kafka_jobs"))
from running_count import running_count

pytestmark = pytest.mark.spark

logger = logging.getLogger(__name__)

PROGRAM = Path(__file__).parents[1] / "kafka_jobs" / "running_count.py"
RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "20",
    "restart-strategy.fixed-delay.delay": "100 ms",
}
DEADLINE_S = 180


class Feed:
    """Writes ``count`` words round-robin into the input topic's partitions, paced over
    ``seconds``, from a thread: the job reads while it is written. ``stop_at`` is where
    each partition ends; ``expected`` the output of a failure-free run."""

    def __init__(self, broker, topic: str, partitions: int, count: int, seconds: float, seed=0):
        rng = random.Random(seed)
        self.words = [f"w{rng.randrange(13)}" for _ in range(count)]
        self.broker, self.topic, self.partitions, self.seconds = broker, topic, partitions, seconds
        self.stop_at = {p: len(self.words[p::partitions]) for p in range(partitions)}
        seen: Counter[str] = Counter()
        self.expected: Counter[str] = Counter()
        for word in self.words:
            seen[word] += 1
            self.expected[f"{word},{seen[word]}"] += 1
        self._thread = threading.Thread(target=self._run, daemon=True)
        self.error: BaseException | None = None

    def _run(self) -> None:
        try:
            steps = 20
            per_partition = [self.words[p :: self.partitions] for p in range(self.partitions)]
            for step in range(steps):
                for p, words in enumerate(per_partition):
                    size = -(-len(words) // steps)
                    chunk = words[step * size : (step + 1) * size]
                    if chunk:
                        self.broker.produce(self.topic, chunk, partition=p)
                time.sleep(self.seconds / steps)  # pacing the input, not synchronisation
        except BaseException as exc:
            self.error = exc

    def start(self) -> Feed:
        self._thread.start()
        return self

    def join(self) -> None:
        self._thread.join(60)
        assert self.error is None, self.error


def _topics(broker, partitions: int) -> tuple[str, str, str]:
    name = uuid.uuid4().hex[:8]
    return (
        broker.create_topic(f"words-{name}", partitions),
        broker.create_topic(f"counts-{name}", 2),
        f"running-count-{name}",
    )


def _env(tmp_path: Path, parallelism: int = 2) -> StreamExecutionEnvironment:
    configuration = Configuration()
    for key, value in RESTARTS.items():
        configuration.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(parallelism)
    env.enable_checkpointing(500)
    env.get_checkpoint_config().set_checkpoint_storage_dir(f"file://{tmp_path / 'checkpoints'}")
    return env


def _output(broker, topic: str, expected: Counter[str]) -> Counter[str]:
    records = broker.read_committed(topic, expected=sum(expected.values()), timeout=30)
    return Counter(value.decode() for *_, value in records)


def _await(condition, what: str, timeout: float = DEADLINE_S):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _checkpoints(gateway, job_id: str) -> int:
    """Completed checkpoints of a job that must still be running."""
    status = gateway.job_details(job_id).status
    assert status not in ("FINISHED", "FAILED", "CANCELED"), f"job {job_id} is {status}"
    return gateway.checkpoint_statistics(job_id).num_completed


def _running(gateway, job_id: str, min_attempt: int):
    details = gateway.job_details(job_id)
    if details.status in ("FINISHED", "FAILED", "CANCELED"):
        raise AssertionError(f"job {job_id} is {details.status}: {details.failure_cause}")
    if details.status == "RUNNING" and details.tasks:
        if all(t.state == "RUNNING" and t.attempt_number >= min_attempt for t in details.tasks):
            return details.tasks
    return None


def test_the_pyflink_program_is_exactly_once_with_task_managers_killed_at_random(
    cluster, kafka_broker, tmp_path
):
    seed = int(os.environ.get("WEIR_CHAOS_SEED", time.time_ns() % 2**32))
    print(f"chaos seed: {seed} (WEIR_CHAOS_SEED={seed} replays it)")
    rng = random.Random(seed)
    source, out, prefix = _topics(kafka_broker, 2)
    feed = Feed(kafka_broker, source, 2, 4000, seconds=16, seed=seed)
    env = _env(tmp_path)
    running_count(env, kafka_broker.bootstrap_servers, source, out, prefix, feed.stop_at)
    client = env.execute_async("running count, two TaskManagers killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        # The input is written from when the job runs, so that it runs through both kills.
        _await(lambda: _running(gateway, job_id, 0), "the job to run")
        feed.start()
        attempt = 0
        for _ in range(2):
            tasks = _await(lambda a=attempt: _running(gateway, job_id, a), "the job to run")
            completed = gateway.checkpoint_statistics(job_id).num_completed
            target = completed + rng.randint(1, 3)
            _await(lambda t=target: _checkpoints(gateway, job_id) >= t, f"{target} checkpoints")
            time.sleep(rng.uniform(0, 0.5))  # a random moment between two checkpoints
            victim_id = rng.choice(sorted({t.resource_id for t in tasks}))
            (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == victim_id]
            os.kill(victim.pid, signal.SIGKILL)
            logger.info("killed TaskManager %s", victim_id)
            attempt += 1
    client.get_job_execution_result().result()
    feed.join()
    assert _output(kafka_broker, out, feed.expected) == feed.expected


def _shouting_job(env, servers: str, source: str, out: str, prefix: str, stop_at) -> None:
    """Kafka -> map_batches (a batch of words at once) -> Kafka, exactly once."""
    kafka_source = (
        KafkaSource.builder()
        .set_bootstrap_servers(servers)
        .set_topics(source)
        .set_starting_offsets(KafkaOffsetsInitializer.earliest())
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(
            KafkaOffsetsInitializer.offsets(
                {KafkaTopicPartition(source, p): offset for p, offset in stop_at.items()}
            )
        )
        .build()
    )
    (
        env.from_source(kafka_source, WatermarkStrategy.no_watermarks(), "words")
        .uid("words")
        .map_batches(lambda words: [f"{w}!" for w in words], output_type=Types.STRING())
        .uid("shout")
        .sink_to(_string_sink_with_prefix(servers, out, prefix))
        .uid("shouted")
    )


def _string_sink_with_prefix(servers: str, topic: str, prefix: str) -> KafkaSink:
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.EXACTLY_ONCE)
        .set_transactional_id_prefix(prefix)
        .set_property("transaction.timeout.ms", "900000")
        .build()
    )


@pytest.mark.long
def test_kafka_map_batches_kafka_is_exactly_once_with_a_task_manager_killed(
    cluster, kafka_broker, tmp_path
):
    source, out, prefix = _topics(kafka_broker, 2)
    feed = Feed(kafka_broker, source, 2, 6000, seconds=12, seed=3)
    env = _env(tmp_path)
    _shouting_job(env, kafka_broker.bootstrap_servers, source, out, prefix, feed.stop_at)
    client = env.execute_async("kafka map_batches kafka, a TaskManager killed")
    job_id = str(client.get_job_id())
    with DispatcherGateway(cluster.address) as gateway:
        _await(lambda: _running(gateway, job_id, 0), "the job to run")
        feed.start()
        tasks = _running(gateway, job_id, 0)
        completed = gateway.checkpoint_statistics(job_id).num_completed
        _await(lambda: _checkpoints(gateway, job_id) >= completed + 2, "two more checkpoints")
        victim_id = sorted({t.resource_id for t in tasks})[0]
        (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == victim_id]
        os.kill(victim.pid, signal.SIGKILL)
        # The killed TaskManager's tasks (a region of their own: no shuffle) run again.
        _await(
            lambda: any(t.attempt_number >= 1 for t in _running(gateway, job_id, 0) or ()),
            "the killed tasks to run again",
        )
    client.get_job_execution_result().result()
    feed.join()
    # A failure-free run writes every word once, shouted.
    expected = Counter(f"{word}!" for word in feed.words)
    assert _output(kafka_broker, out, expected) == expected


class CrashBeforeCommit(KafkaSink):
    """The test hook: once a checkpoint completed while this subtask holds a
    pre-committed transaction, the first subtask to get here kills its own TaskManager
    before the commit, so the checkpoint holds a transaction Kafka never saw committed.
    The restored job must commit it through the real recovery path."""

    @staticmethod
    def marker(prefix: str) -> Path:
        return Path(tempfile.gettempdir()) / f"{prefix}.crashed"

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        writer = self._writer
        if checkpoint_id >= 2 and writer is not None and writer._pending:
            try:
                with open(self.marker(self._settings.transactional_id_prefix), "x") as f:
                    f.write(f"{checkpoint_id} {sorted(writer._pending)}")
            except FileExistsError:
                pass
            else:
                os.kill(os.getpid(), signal.SIGKILL)
        super().notify_checkpoint_complete(checkpoint_id)


def test_a_failure_between_checkpoint_completion_and_commit_loses_nothing(
    cluster, kafka_broker, tmp_path, monkeypatch
):
    source, out, prefix = _topics(kafka_broker, 2)
    feed = Feed(kafka_broker, source, 2, 2000, seconds=8)
    env = _env(tmp_path)
    marker = CrashBeforeCommit.marker(prefix)
    # The program builds its sink with KafkaSink.builder(): it builds the hook instead.
    monkeypatch.setattr(sink_module, "KafkaSink", CrashBeforeCommit)
    running_count(env, kafka_broker.bootstrap_servers, source, out, prefix, feed.stop_at)
    monkeypatch.undo()
    feed.start()
    env.execute("running count, killed before a commit")
    feed.join()
    assert marker.exists(), "the failure was never placed"
    marker.unlink()
    assert _output(kafka_broker, out, feed.expected) == feed.expected


def _cli_run(cluster, capsys, *args: str) -> str:
    assert cli.main(["run", "-d", "-m", cluster.address, *args]) == 0
    match = re.search(r"JobID ([0-9a-f]{32})", capsys.readouterr().out)
    assert match, "the CLI did not print the job id"
    return match.group(1)


def _stop_with_savepoint(cluster, capsys, tmp_path: Path, job_id: str) -> str:
    with DispatcherGateway(cluster.address) as gateway:
        _await(lambda: gateway.checkpoint_statistics(job_id).num_completed >= 1, "a checkpoint")
    assert cli.main(["stop", "-m", cluster.address, "-p", str(tmp_path / "sp"), job_id]) == 0
    match = re.search(r"Savepoint completed\. Path: (\S+)", capsys.readouterr().out)
    assert match
    with DispatcherGateway(cluster.address) as gateway:
        assert gateway.wait_for_result(job_id, DEADLINE_S * 1000).status == JobStatus.FINISHED.name
    return match.group(1)


def _source_splits(path: str) -> list[list[tuple]]:
    """The splits (partitions and discovery classes) each source subtask held in the
    savepoint, in its order."""
    sp = read_savepoint(path)
    (source,) = (op for op in sp.operators if op.uid == "words")
    state = sp.metadata.operator_states[source.operator_id]
    return [
        pickle.loads(read_state(handle))
        for _, subtask in sorted(state.subtask_states.items())
        for handle in subtask.source_split_state
    ]


def _partitions(splits: list[tuple]) -> set[tuple[str, int]]:
    return {(s[1], s[2]) for s in splits if s[0] == "partition"}


@pytest.mark.long  # rescaling from a savepoint is in make test without Kafka
def test_a_savepoint_at_parallelism_2_resumes_at_3_with_the_partitions_dealt_out(
    cluster, kafka_broker, tmp_path, capsys
):
    source, out, prefix = _topics(kafka_broker, 6)
    feed = Feed(kafka_broker, source, 6, 3000, seconds=20).start()
    stop = ",".join(f"{p}:{o}" for p, o in feed.stop_at.items())
    args = [str(PROGRAM), kafka_broker.bootstrap_servers, source, out, prefix, stop]

    job_id = _cli_run(cluster, capsys, "-p", "2", *args)
    first = _stop_with_savepoint(cluster, capsys, tmp_path, job_id)
    at_two = _source_splits(first)
    assert len(at_two) == 2 and sum(len(_partitions(s)) for s in at_two) == 6

    # At parallelism 3 each subtask takes its round-robin share of the old subtasks'
    # partitions; a second savepoint shows where they went.
    job_id = _cli_run(cluster, capsys, "-p", "3", "-s", first, *args)
    second = _stop_with_savepoint(cluster, capsys, tmp_path, job_id)
    at_three = [_partitions(s) for s in _source_splits(second)]
    assert at_three == [_partitions(assign_splits(at_two, i, 3)) for i in range(3)]
    assert all(at_three)  # every new subtask reads partitions

    assert cli.main(["run", "-m", cluster.address, "-p", "3", "-s", second, *args]) == 0
    feed.join()
    assert _output(kafka_broker, out, feed.expected) == feed.expected


def test_kafka_timestamps_are_event_time_and_an_idle_partition_does_not_hold_it_back(
    cluster, kafka_broker
):
    """Windows over Kafka's record timestamps (no assigner): partition 1 stays empty, and
    with with_idleness it stops holding the watermark back, so the windows of partition
    0 fire while the unbounded job runs."""
    source = kafka_broker.create_topic(f"events-{uuid.uuid4().hex[:8]}", 2)
    timestamps = [10_000 + 1000 * window + i for window in range(5) for i in range(10)]
    kafka_broker.produce(source, ["e"] * len(timestamps), partition=0, timestamps=timestamps)
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    kafka = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(source)
        .set_value_only_deserializer(SimpleStringSchema())
        .build()
    )
    strategy = WatermarkStrategy.for_monotonous_timestamps().with_idleness(Duration.of_millis(300))
    counts = (
        env.from_source(kafka, strategy, "events")
        .map(lambda _: 1, output_type=Types.INT())
        .key_by(lambda _: 0)
        .window(TumblingEventTimeWindows.of(Time.seconds(1)))
        .reduce(lambda a, b: a + b)
    )
    with counts.execute_and_collect("event time from Kafka") as results:
        # Windows 0..3 close as partition 0's watermark passes them; window 4 stays open.
        assert [next(results) for _ in range(4)] == [10, 10, 10, 10]


def _string_sink(broker, topic: str) -> KafkaSink:
    return (
        KafkaSink.builder()
        .set_bootstrap_servers(broker.bootstrap_servers)
        .set_record_serializer(
            KafkaRecordSerializationSchema.builder()
            .set_topic(topic)
            .set_value_serialization_schema(SimpleStringSchema())
            .build()
        )
        .set_delivery_guarantee(DeliveryGuarantee.AT_LEAST_ONCE)
        .build()
    )


def test_a_record_leaves_for_kafka_with_the_timestamp_it_came_with(cluster, kafka_broker):
    """Kafka -> map -> Kafka: each output record has its input record's Kafka timestamp,
    as Flink's KafkaSource and KafkaSink pass it through the element's timestamp."""
    source = kafka_broker.create_topic(f"stamped-in-{uuid.uuid4().hex[:8]}", 2)
    sink = kafka_broker.create_topic(f"stamped-out-{uuid.uuid4().hex[:8]}", 1)
    words = [f"w{i}" for i in range(300)]
    stamps = {word: 1_600_000_000_000 + 7 * i for i, word in enumerate(words)}
    kafka_broker.produce(source, words, timestamps=[stamps[w] for w in words])
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(2)
    kafka = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(source)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    (
        env.from_source(kafka, WatermarkStrategy.no_watermarks(), "stamped")
        .map(lambda word: word.upper(), output_type=Types.STRING())
        .sink_to(_string_sink(kafka_broker, sink))
    )
    env.execute("timestamps through")
    found = kafka_broker.read_timestamps(sink, expected=len(words))
    assert found == {word.upper().encode(): stamp for word, stamp in stamps.items()}


def test_a_record_that_is_not_utf8_reads_and_writes_as_java_does(cluster, kafka_broker):
    """SimpleStringSchema decodes as Java's new String(bytes, UTF_8): a record that is not
    valid UTF-8 reads with U+FFFD and the job goes on (it failed it before), and a
    string with an unpaired surrogate leaves as Java's getBytes writes it, with '?'."""
    source = kafka_broker.create_topic(f"text-in-{uuid.uuid4().hex[:8]}", 1)
    sink = kafka_broker.create_topic(f"text-out-{uuid.uuid4().hex[:8]}", 1)
    kafka_broker.produce(source, [b"ok", b"bad \xff\xed\xa0\x80 x", "caf\u00e9".encode()])
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    kafka = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics(source)
        .set_value_only_deserializer(SimpleStringSchema())
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    (
        env.from_source(kafka, WatermarkStrategy.no_watermarks(), "text")
        .map(lambda text: f"{text!a} \ud800", output_type=Types.STRING())
        .sink_to(_string_sink(kafka_broker, sink))
    )
    env.execute("text as java")
    found = sorted(value for *_, value in kafka_broker.read_committed(sink, expected=3))
    assert found == [b"'bad \\ufffd\\ufffd x' ?", b"'caf\\xe9' ?", b"'ok' ?"]


@pytest.mark.parametrize("problem", ["missing topic", "bad record"])
def test_bad_input_fails_the_job_naming_the_problem_and_the_cluster_serves_on(
    cluster, kafka_broker, problem
):
    topic = kafka_broker.create_topic(f"bad-{uuid.uuid4().hex[:8]}", 1)
    kafka_broker.produce(topic, [b'{"n": 1}', b"not json", b'{"n": 3}'])
    configuration = Configuration()
    configuration.set_string("restart-strategy.type", "none")
    env = StreamExecutionEnvironment.get_execution_environment(configuration)
    env.set_parallelism(1)
    schema = (
        JsonRowDeserializationSchema.builder()
        .type_info(Types.ROW_NAMED(["n"], [Types.INT()]))
        .build()
    )
    kafka = (
        KafkaSource.builder()
        .set_bootstrap_servers(kafka_broker.bootstrap_servers)
        .set_topics("no-such-topic" if problem == "missing topic" else topic)
        .set_value_only_deserializer(schema)
        .set_bounded(KafkaOffsetsInitializer.latest())
        .build()
    )
    env.from_source(kafka, WatermarkStrategy.no_watermarks(), "input").print()
    with pytest.raises(JobExecutionError) as info:
        env.execute(problem)
    if problem == "missing topic":
        assert "'no-such-topic' does not exist" in info.value.cause
        assert "set_topics" in info.value.cause
    else:
        assert f"offset 1 of Kafka partition {topic}-0" in info.value.cause
        assert "ignore_parse_errors" in info.value.cause
    env = StreamExecutionEnvironment.get_execution_environment()
    assert sorted(env.from_collection([1, 2]).map(lambda x: -x).execute_and_collect()) == [-2, -1]


def _kill_one(gateway, job_id: str, rng: random.Random, attempt: int) -> None:
    tasks = _await(lambda: _running(gateway, job_id, attempt), "the job to run")
    victim_id = rng.choice(sorted({t.resource_id for t in tasks}))
    (victim,) = [tm for tm in gateway.list_task_managers() if tm.resource_id == victim_id]
    os.kill(victim.pid, signal.SIGKILL)


@pytest.mark.long  # 50 runs of the job: about ten minutes
@pytest.mark.timeout(3600)
def test_chaos_fifty_randomised_runs_are_exactly_once(cluster, kafka_broker, tmp_path):
    """Each run draws its parallelism (1-3), checkpoint interval and where it fails: a
    TaskManager killed after some checkpoints, or killed between a checkpoint's
    completion and its commit (the hook), or not at all."""
    seed = int(os.environ.get("WEIR_CHAOS_SEED", time.time_ns() % 2**32))
    runs = int(os.environ.get("WEIR_KAFKA_CHAOS_RUNS", "50"))
    print(f"chaos seed: {seed} (WEIR_CHAOS_SEED={seed} replays it)")
    rng = random.Random(seed)
    for run in range(runs):
        parallelism = rng.randint(1, 3)
        interval = rng.choice([200, 500, 1000])
        failure = rng.choice(["kill", "kill", "before-commit", "none"])
        print(f"run {run}: p={parallelism}, interval={interval} ms, failure={failure}")
        source, out, prefix = _topics(kafka_broker, 3)
        feed = Feed(kafka_broker, source, 3, 1500, seconds=8, seed=seed + run)
        env = _env(tmp_path / str(run), parallelism)
        env.enable_checkpointing(interval)
        builds = CrashBeforeCommit if failure == "before-commit" else KafkaSink
        original = sink_module.KafkaSink
        sink_module.KafkaSink = builds
        try:
            running_count(env, kafka_broker.bootstrap_servers, source, out, prefix, feed.stop_at)
        finally:
            sink_module.KafkaSink = original
        client = env.execute_async(f"chaos run {run}")
        job_id = str(client.get_job_id())
        with DispatcherGateway(cluster.address) as gateway:
            # The input is written from when the job runs, so that it runs through the kill.
            _await(lambda: _running(gateway, job_id, 0), "the job to run")
            feed.start()
            if failure == "kill":
                target = rng.randint(1, 3)
                _await(lambda t=target: _checkpoints(gateway, job_id) >= t, f"{target} checkpoints")
                time.sleep(rng.uniform(0, interval / 1000))  # a random moment
                _kill_one(gateway, job_id, rng, 0)
        client.get_job_execution_result().result()
        feed.join()
        if failure == "before-commit":
            marker = CrashBeforeCommit.marker(prefix)
            assert marker.exists(), f"run {run}: the failure was never placed"
            marker.unlink()
        assert _output(kafka_broker, out, feed.expected) == feed.expected, f"run {run}"


@pytest.mark.long
def test_a_broker_restart_mid_job_is_exactly_once(cluster, tmp_path_factory, tmp_path):
    """The job's broker is stopped and started again while the job runs (a broker of its
    own, so the shared one stays up): the job fails over or waits, and the output is
    still exactly once."""
    from kafka_broker import KafkaBroker

    broker = KafkaBroker(tmp_path_factory.mktemp("kafka-restarted")).start()
    try:
        source, out, prefix = _topics(broker, 2)
        feed = Feed(broker, source, 2, 3000, seconds=12)
        env = _env(tmp_path)
        running_count(env, broker.bootstrap_servers, source, out, prefix, feed.stop_at)
        client = env.execute_async("running count, broker restarted")
        job_id = str(client.get_job_id())
        with DispatcherGateway(cluster.address) as gateway:
            _await(lambda: _running(gateway, job_id, 0), "the job to run")
            _await(lambda: gateway.checkpoint_statistics(job_id).num_completed >= 2, "checkpoints")
        broker.stop()
        broker.start()
        feed.start()
        client.get_job_execution_result().result()
        feed.join()
        assert _output(broker, out, feed.expected) == feed.expected
    finally:
        broker.stop()
