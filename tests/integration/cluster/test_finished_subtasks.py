"""Exactly-once when subtasks finish at different times (FLIP-147), on the MiniCluster.

A bounded ``NumberSequenceSource`` split over p subtasks, a map that fails once at a
chosen moment, and the exactly-once FileSink, all chained: a subtask that read its whole
split waits for its final checkpoint before it commits and exits, and a restore never
runs it again. Whatever fails when, the committed files hold every number exactly once.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections import Counter
from pathlib import Path

import pytest
from held_numbers import CheckpointCompleted, FileExists, Gate, HeldNumbers, OutputCommitted
from test_checkpoint_recovery import (
    await_condition,
    checkpointed_env,
    committed_lines,
    exactly_once_lines,
)

from weir.client.dispatcher_client import DispatcherGateway
from weir.common import Types, WatermarkStrategy
from weir.datastream import MapFunction, SourceFunction, StreamExecutionEnvironment
from weir.datastream.connectors import FileSink
from weir.datastream.connectors.file_system import Encoder, RollingPolicy
from weir.datastream.connectors.number_seq import NumberSequenceSource, split_range

pytestmark = pytest.mark.spark

NUMBERS = 50_000
RESTARTS = {
    "restart-strategy.type": "fixed-delay",
    "restart-strategy.fixed-delay.attempts": "3",
    "restart-strategy.fixed-delay.delay": "200 ms",
}


class Chaos(MapFunction):
    """Passes each number on as text, paces its subtask, and fails once, at the first of:

    - ``fail_at``: a number this subtask reads; with ``after_others`` only once another
      subtask's output is committed (its final checkpoint completed), with
      ``after_marker`` only once that file exists, reading slowly meanwhile so that
      checkpoints keep going;
    - ``fail_on_notify``: (subtask, n): the n-th checkpoint notification this subtask gets
      (it may be waiting for its final checkpoint then).

    What the failure saw (whether other output was committed) is written to ``marks``;
    the marker file also makes the failure happen once across restarts."""

    def __init__(self, marks: str, out: str, plan: dict) -> None:
        self.marks = marks
        self.out = out
        self.plan = plan

    def open(self, runtime_context) -> None:
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.pause_s = self.plan["pause_s"].get(str(self.subtask), 0.0)
        self.notified = 0

    def _fail(self, how: str, value: int | None) -> None:
        marker = Path(self.marks) / "failed.json"
        others = sorted(p.name for p in Path(self.out).rglob("*") if not p.name.startswith("."))
        marker.write_text(
            json.dumps({"how": how, "value": value, "subtask": self.subtask, "committed": others})
        )
        raise RuntimeError(f"injected failure ({how}) in subtask {self.subtask} at {value}")

    def _armed(self) -> bool:
        return not (Path(self.marks) / "failed.json").exists()

    def map(self, value):
        if self.pause_s and value % 100 == 0:
            time.sleep(self.pause_s)  # pacing: which subtask finishes first
        fail_at = self.plan.get("fail_at")
        if fail_at is not None and value >= fail_at and self._armed():
            if self.plan.get("after_others") and not any(
                not p.name.startswith(".") for p in Path(self.out).rglob("*") if p.is_file()
            ):
                time.sleep(0.001)  # read slowly until another subtask has committed
                return str(value)
            marker = self.plan.get("after_marker")
            if marker and not Path(marker).exists():
                time.sleep(0.001)  # read slowly until the test saw what it waits for
                return str(value)
            self._fail("record", value)
        return str(value)

    def notify_checkpoint_complete(self, checkpoint_id: int) -> None:
        self.notified += 1
        target = self.plan.get("fail_on_notify")
        if target and target == [self.subtask, self.notified] and self._armed():
            self._fail("notification", None)


def run_numbers(
    tmp_path: Path,
    parallelism: int,
    plan: dict,
    interval_ms: int = 300,
    *,
    keyed: bool = False,
    unaligned: bool = False,
    holds: dict[int, Gate] | None = None,
) -> tuple[Counter[str], dict | None]:
    """Run the job to its end; return the committed lines and what the failure saw.
    ``keyed``: the numbers cross a key_by exchange before the map, so the map and sink
    subtasks are tasks of their own that the sources' end reaches over the network.
    ``holds``: the source stops before each of these numbers until its gate opens."""
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    env: StreamExecutionEnvironment = checkpointed_env(tmp_path, RESTARTS, interval_ms)
    env.set_parallelism(parallelism)
    env.get_checkpoint_config().enable_unaligned_checkpoints(unaligned)
    source = HeldNumbers(1, NUMBERS, holds) if holds else NumberSequenceSource(1, NUMBERS)
    numbers = env.from_source(source, WatermarkStrategy.no_watermarks(), "numbers")
    if keyed:
        numbers = numbers.key_by(lambda n: n % 7)
    numbers.map(Chaos(str(marks), str(out), plan)).sink_to(exactly_once_lines(out))
    env.execute(f"numbers at p={parallelism}")
    marker = marks / "failed.json"
    return committed_lines(out), json.loads(marker.read_text()) if marker.exists() else None


def every_number_once() -> Counter[str]:
    return Counter(str(n) for n in range(1, NUMBERS + 1))


def last_split(parallelism: int) -> range:
    return split_range(1, NUMBERS, parallelism)[-1]


@pytest.mark.parametrize(
    ("parallelism", "when"),
    [
        (1, "before"),
        (2, "before"),
        (2, "after"),
        (2, "after-checkpointed"),
        (3, "before"),
        (3, "after"),
        (3, "after-checkpointed"),
    ],
)
def test_a_failure_before_or_after_another_subtask_finished(cluster, tmp_path, parallelism, when):
    """The reproduction: the last subtask fails once in the middle of its split, before
    any other subtask finished, or after the others committed their output and exited
    (having taken checkpoints before they finished, or not).

    The source holds each subtask where the case needs it, whatever the speed of each:
    - before: the others stop before their last number until the failure happened, the
      failing one before its failure until a checkpoint completed;
    - after: the failing one stops before its failure until another subtask committed
      (finished); the others read on, usually finishing before the first checkpoint;
    - after-checkpointed: so too, and the others stop before their last number until
      two checkpoints completed."""
    splits = split_range(1, NUMBERS, parallelism)
    fail_at = splits[-1].start + len(splits[-1]) // 2
    others_last = [split[-1] for split in splits[:-1]]
    marks, out, checkpoints = tmp_path / "marks", tmp_path / "out", tmp_path / "checkpoints"
    marks.mkdir()
    holds: dict[int, Gate]
    if when == "before":
        holds = {n: FileExists(marks / "failed.json") for n in others_last}
        holds[fail_at] = CheckpointCompleted(checkpoints)
    else:
        holds = {fail_at: OutputCommitted(out)}
        if when == "after-checkpointed":
            holds |= {n: CheckpointCompleted(checkpoints, 2) for n in others_last}
    plan = {"pause_s": {}, "fail_at": fail_at}
    lines, failure = run_numbers(tmp_path, parallelism, plan, holds=holds)
    assert failure is not None, "the injected failure never happened"
    assert failure["subtask"] == parallelism - 1
    assert bool(failure["committed"]) == (when != "before"), failure
    assert lines == every_number_once()


@pytest.mark.parametrize("unaligned", [False, True])
def test_across_an_exchange_every_number_is_committed_once(cluster, tmp_path, unaligned):
    """Sources -> key_by -> map and sink, the consumers slower than the sources. Unaligned
    barriers overtake the queued numbers, so the sources' final checkpoint completes and
    they exit while the consumers still work: the consumers' own final checkpoint is
    then triggered at them directly, and the failure (at their second notification)
    comes after the sources finished. Aligned, the failure comes mid-stream."""
    pace = {"0": 0.005, "1": 0.005}
    plan = (
        {"pause_s": pace, "fail_on_notify": [0, 2]}
        if unaligned
        else {
            "pause_s": pace,
            "fail_at": NUMBERS // 2,
        }
    )
    lines, failure = run_numbers(tmp_path, 2, plan, 150, keyed=True, unaligned=unaligned)
    assert failure is not None
    assert lines == every_number_once()


def test_a_failure_while_a_subtask_waits_for_its_final_checkpoint(cluster, tmp_path):
    """Subtask 0 reads its split fast and waits for its final checkpoint; the slow subtask
    1 fails when it is notified of a checkpoint (one subtask 0 may take as its final).
    Subtask 1 stops before its last number until it failed, so it cannot finish first."""
    plan = {"pause_s": {"1": 0.01}, "fail_on_notify": [1, 2]}
    holds: dict[int, Gate] = {last_split(2)[-1]: FileExists(tmp_path / "marks" / "failed.json")}
    lines, failure = run_numbers(tmp_path, 2, plan, interval_ms=200, holds=holds)
    assert failure is not None and failure["how"] == "notification"
    assert lines == every_number_once()


def test_without_a_failure_the_job_finishes_with_everything_committed(cluster, tmp_path):
    lines, failure = run_numbers(tmp_path, 3, {"pause_s": {"0": 0.002}})
    assert failure is None
    assert lines == every_number_once()
    assert not [p for p in (tmp_path / "out").rglob(".*") if p.is_file()], "hidden files left"


def chaos_plan(rng: random.Random) -> tuple[int, int, dict]:
    parallelism = rng.choice([1, 2, 2, 3, 3])
    interval_ms = rng.choice([100, 250, 600])
    # Across an exchange (the map and sink subtasks triggered directly once every source
    # finished) or chained; aligned or unaligned checkpoints.
    keyed, unaligned = rng.random() < 0.4, rng.random() < 0.3
    # Which subtasks are slow decides which finish first; none, some or all are.
    pause = {str(i): rng.choice([0.0, 0.002, 0.01]) for i in range(parallelism)}
    plan: dict = {"pause_s": pause}
    if rng.random() < 0.7:
        plan["fail_at"] = rng.randint(1, NUMBERS)
        plan["after_others"] = parallelism > 1 and rng.random() < 0.5
    else:
        plan["fail_on_notify"] = [rng.randrange(parallelism), rng.randint(1, 4)]
    plan["keyed"], plan["unaligned"] = keyed, unaligned
    return parallelism, interval_ms, plan


def _chaos(cluster, tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    parallelism, interval_ms, plan = chaos_plan(rng)
    print(f"chaos seed {seed}: p={parallelism}, every {interval_ms} ms, {plan}")
    lines, failure = run_numbers(
        tmp_path, parallelism, plan, interval_ms, keyed=plan["keyed"], unaligned=plan["unaligned"]
    )
    print(f"failure: {failure}")
    missing = every_number_once() - lines
    extra = lines - every_number_once()
    assert not missing and not extra, (
        f"seed {seed}: {sum(missing.values())} missing, {sum(extra.values())} duplicated"
    )


_SEED = int(os.environ.get("WEIR_CHAOS_SEED", "20261126"))


@pytest.mark.parametrize("run", range(3))
def test_chaos_committed_output_equals_the_input(cluster, tmp_path, run):
    """Random failure point, parallelism, checkpoint interval and pacing (so a random
    subtask finishes first). WEIR_CHAOS_SEED=n replays a sequence of runs."""
    _chaos(cluster, tmp_path, _SEED + run)


@pytest.mark.long
@pytest.mark.parametrize("run", range(3, 53))
def test_chaos_fifty_runs(cluster, tmp_path, run):
    _chaos(cluster, tmp_path, _SEED + run)


def test_execute_and_collect_sees_every_record_once_when_a_failure_follows_a_finish(
    cluster, tmp_path
):
    """The collect sink's results are released by checkpoints too: the subtasks that
    finished before the failure are not run again, and nothing reaches the client twice."""
    marks, out = tmp_path / "marks", tmp_path / "none"
    marks.mkdir()
    out.mkdir()
    split = last_split(2)
    plan = {"pause_s": {"1": 0.02}, "fail_at": split.start + len(split) // 4}
    env = checkpointed_env(tmp_path, RESTARTS, 200)
    numbers = env.from_source(
        NumberSequenceSource(1, NUMBERS), WatermarkStrategy.no_watermarks(), "numbers"
    ).map(Chaos(str(marks), str(out), plan))
    with numbers.execute_and_collect() as results:
        got = Counter(results)
    assert (marks / "failed.json").exists(), "the injected failure never happened"
    assert got == every_number_once()


class TrickleReader:
    """The numbers ``first..last``, one every ``every_s``, then none (idle) for ever; held
    before ``hold_at`` until ``gate`` opens."""

    def __init__(self, first: int, last: int, every_s: float, hold_at: int, gate: Gate) -> None:
        self.next, self.last, self.every_s = first, last, every_s
        self.hold_at, self.gate = hold_at, gate
        self.due = time.monotonic()

    def poll_batch(self, max_records: int) -> list[int]:
        if self.next > self.last or time.monotonic() < self.due:
            return []  # idle: the task serves its mailbox and polls again
        if self.next == self.hold_at and not self.gate():
            return []  # held
        self.due = time.monotonic() + self.every_s
        self.next += 1
        return [self.next - 1]

    def snapshot_state(self, checkpoint_id: int) -> int:
        return self.next

    def restore_state(self, state: int) -> None:
        self.next = int(state)

    def close(self) -> None:
        pass


class Trickle:
    """An unbounded source (it never ends) whose position is checkpointed."""

    def __init__(self, first: int, last: int, every_s: float, hold_at: int, gate: Gate) -> None:
        self.first, self.last, self.every_s = first, last, every_s
        self.hold_at, self.gate = hold_at, gate

    def is_bounded(self) -> bool:
        return False

    def create_reader(self, context) -> TrickleReader:
        return TrickleReader(self.first, self.last, self.every_s, self.hold_at, self.gate)

    def get_produced_type(self):
        return Types.LONG()


def test_a_bounded_source_beside_an_unbounded_one_is_not_read_again(cluster, tmp_path):
    """A bounded and an unbounded source into one sink: the bounded one finishes and exits
    while checkpoints go on; a failure after it finished restores it as finished, so its
    numbers are committed once, and the unbounded one resumes from its position."""
    bounded, trickled = 2_000, 300
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    env = checkpointed_env(tmp_path, RESTARTS, 200)
    env.set_parallelism(1)
    # Fails in the trickle, once the test saw the bounded source's task FINISHED: the
    # trickle stops before that number until then.
    finished_marker = marks / "bounded-finished"
    fail_at = bounded + trickled // 3
    plan = {"pause_s": {}, "fail_at": fail_at, "after_marker": str(finished_marker)}
    numbers = env.from_source(
        NumberSequenceSource(1, bounded), WatermarkStrategy.no_watermarks(), "bounded"
    )
    trickle = env.from_source(
        Trickle(bounded + 1, bounded + trickled, 0.01, fail_at, FileExists(finished_marker)),
        WatermarkStrategy.no_watermarks(),
        "trickle",
    )
    sink = (
        FileSink.for_row_format(f"file://{out}", Encoder.simple_string_encoder())
        .with_rolling_policy(RollingPolicy.on_checkpoint_rolling_policy())
        .build()
    )
    numbers.union(trickle).map(Chaos(str(marks), str(out), plan)).sink_to(sink)
    client = env.execute_async("bounded beside unbounded")
    expected = Counter(str(n) for n in range(1, bounded + trickled + 1))
    try:
        with DispatcherGateway(cluster.address) as gateway:
            await_condition(
                lambda: any(
                    "bounded" in t.task_name and t.state == "FINISHED"
                    for t in gateway.job_details(str(client.get_job_id())).tasks
                ),
                "the bounded source to finish while the unbounded one runs",
            )
        finished_marker.touch()
        deadline = time.monotonic() + 120
        while committed_lines(out) != expected:
            assert time.monotonic() < deadline, f"committed so far: {len(committed_lines(out))}"
            assert not committed_lines(out) - expected, "a number was committed twice"
            time.sleep(0.1)  # polling the committed files; the condition decides
        failure = json.loads((marks / "failed.json").read_text())
        assert failure["how"] == "record", failure
    finally:
        client.cancel().result()
    assert committed_lines(out) == expected


class CountingSource(SourceFunction):
    """A legacy source: 1..n, its position checkpointed, advanced after each collect."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.next = 1
        self.running = True

    def initialize_state(self, state: bytes | None) -> None:
        if state is not None:
            self.next = int(state.decode())

    def snapshot_state(self, checkpoint_id: int) -> bytes:
        return str(self.next).encode()

    def run(self, ctx) -> None:
        while self.running and self.next <= self.n:
            ctx.collect(self.next)
            self.next += 1
            if self.next % 100 == 0:
                time.sleep(0.002)  # pacing, so that checkpoints complete mid-stream

    def cancel(self) -> None:
        self.running = False


def test_a_legacy_source_function_resumes_from_its_checkpointed_position(cluster, tmp_path):
    """A SourceFunction's snapshot_state is restored through initialize_state, and a
    checkpoint falls between two collects, never inside one: nothing twice, nothing lost."""
    numbers = 20_000
    out, marks = tmp_path / "out", tmp_path / "marks"
    marks.mkdir()
    env = checkpointed_env(tmp_path, RESTARTS, 100)
    env.set_parallelism(1)
    plan = {"pause_s": {}, "fail_at": numbers // 2}
    (
        env.add_source(CountingSource(numbers), "counting")
        .map(Chaos(str(marks), str(out), plan))
        .sink_to(exactly_once_lines(out))
    )
    env.execute("legacy source restored")
    assert (marks / "failed.json").exists()
    assert committed_lines(out) == Counter(str(n) for n in range(1, numbers + 1))
