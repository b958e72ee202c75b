"""Consecutive embedded runs (``python job.py``): each prints its result, ends cleanly, and
leaves nothing on stderr but the JVM's start-up line. A run whose shutdown waited on a
timeout or lost a report would say so there (a traceback, a warning)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from weir.core.checkpoint import (
    IncrementalKeyGroupsStateHandle,
    KeyGroupsStateHandle,
    decode_metadata,
)

pytestmark = pytest.mark.spark

JOBS = {
    # printed by the TaskManagers
    "print": """
import sys, time
from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
(env.from_collection(list(range(100)), type_info=Types.INT())
    .map(lambda x: x * 2, output_type=Types.INT())
    .key_by(lambda x: x % 4)
    .reduce(lambda a, b: a + b)
    .print())
env.execute("small job")
print(f"finished at {time.time()}", file=sys.stderr, flush=True)
""",
    # collected by the client, with checkpoints: the last results come with the final
    # checkpoint, before the tasks have exited, and the program returns right after
    "collect": """
import sys, time
from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(200)
results = list(
    env.from_collection(list(range(100)), type_info=Types.INT())
    .map(lambda x: x * 2, output_type=Types.INT())
    .execute_and_collect()
)
for r in sorted(results):
    print(r)
print(f"finished at {time.time()}", file=sys.stderr, flush=True)
""",
    # two collects in one program: the second job may find its slot freed by the first
    # only after a TaskManager was leased for it, which then registers while the cluster
    # stops at exit
    "two collects": """
import sys, time
from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
with (
    env.from_collection(list(range(50)), type_info=Types.INT())
    .map(lambda x: x * 2)
    .execute_and_collect()
) as results:
    first = sorted(results)
second_job = env.from_collection(list(range(50, 100)), type_info=Types.INT())
with second_job.execute_and_collect() as results:
    second = sorted(results)
for r in first + second:
    print(r)
print(f"finished at {time.time()}", file=sys.stderr, flush=True)
""",
    # keyed state on rocksdb, checkpointed while the job runs and as it ends: full
    # checkpoints (read off the task thread) or incremental ones (SST files in shared/)
    "rocksdb": """
import sys, time
from weir.common import Types
from weir.datastream import EmbeddedRocksDBStateBackend, StreamExecutionEnvironment
from weir.datastream import ExternalizedCheckpointRetention
from weir.datastream.functions import KeyedProcessFunction
from weir.datastream.state import ValueStateDescriptor


class RunningCount(KeyedProcessFunction):
    def open(self, runtime_context):
        self.count = runtime_context.get_state(ValueStateDescriptor("count", Types.LONG()))

    def process_element(self, value, ctx):
        time.sleep(0.01)  # the job lasts long enough for a few checkpoints
        count = (self.count.value() or 0) + 1
        self.count.update(count)
        yield value, count


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
env.enable_checkpointing(100)
env.get_checkpoint_config().set_checkpoint_storage_dir("file://" + sys.argv[2])
env.get_checkpoint_config().set_externalized_checkpoint_retention(
    ExternalizedCheckpointRetention.RETAIN_ON_CANCELLATION
)
env.set_state_backend(EmbeddedRocksDBStateBackend(sys.argv[1] == "incremental"))
(env.from_collection(list(range(100)), type_info=Types.INT())
    .key_by(lambda x: x % 7)
    .process(RunningCount())
    .print())
env.execute("rocksdb job")
print(f"finished at {time.time()}", file=sys.stderr, flush=True)
""",
}
# execute_and_collect(limit=N) cancels a job whose sources would run for days, twice over,
# then the program ends.
LIMITED_COLLECT = """
import sys, time
from weir.common import Types, WatermarkStrategy
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
numbers = env.from_source(NumberSequenceSource(0, 10**15), WatermarkStrategy.no_watermarks(), "n")
print(len(numbers.map(lambda x: x * 2, output_type=Types.LONG()).execute_and_collect(limit=5)))
print(len(numbers.filter(lambda x: x % 7 == 3).execute_and_collect(limit=3)))
print(f"finished at {time.time()}", file=sys.stderr, flush=True)
"""
# A job run by a thread of the program that outlives its main thread: the cluster stops
# only once that thread has ended, as it did when it stopped at atexit.
OUTLIVING_THREAD = """
import threading, time
from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
print(list(env.from_collection([1], type_info=Types.INT()).execute_and_collect()), flush=True)


def later():
    time.sleep(0.5)  # starts its job after the main thread has ended; not a synchronisation
    numbers = env.from_collection([3, 1, 2], type_info=Types.INT())
    print(sorted(numbers.map(lambda x: x * 10, output_type=Types.INT()).execute_and_collect()))


threading.Thread(target=later).start()
"""
# The bound on the exit of that program. The issue asked to assert it: the process ended
# 41 s after its results before cancelling a job no longer waited on servers that had
# stopped taking calls (and on a TaskManager lease nobody would use); now about 2 s, of
# which most is the JVM's own exit. Generous, for a loaded machine.
LIMITED_COLLECT_EXIT_S = 10.0
# What the JVM prints as it starts (the incubator module Spark's launcher adds); nothing
# else may appear.
ALLOWED_STDERR = ("WARNING: Using incubator modules: jdk.incubator.vector",)


def _runs(tmp_path, count: int, job: str, *args: str) -> list[float]:
    script = tmp_path / "small_job.py"
    script.write_text(JOBS[job])
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    exits = []
    for run in range(count):
        result = subprocess.run(
            [sys.executable, str(script), *args],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            env=env,
            timeout=300,
        )
        ended = time.time()
        assert result.returncode == 0, result.stderr[-4000:]
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        finished = [line for line in lines if line.startswith("finished at ")]
        others = [line for line in lines if line not in finished and line not in ALLOWED_STDERR]
        assert len(finished) == 1 and not others, f"run {run}: stderr was\n{result.stderr}"
        assert len(result.stdout.splitlines()) == 100, result.stdout
        exits.append(ended - float(finished[0].split()[-1]))
    print(f"seconds from the job's end to the process's exit: {[round(s, 2) for s in exits]}")
    return exits


@pytest.mark.parametrize("job", sorted(set(JOBS) - {"rocksdb"}))
def test_consecutive_embedded_runs_end_cleanly(tmp_path, job):
    # Two runs of one job show that a run leaves nothing in the way of the next; the
    # other jobs run once here, twenty times in make test-long.
    _runs(tmp_path, 2 if job == "collect" else 1, job)


@pytest.mark.parametrize(
    "checkpoints", [pytest.param("full", marks=pytest.mark.long), "incremental"]
)
def test_a_job_on_rocksdb_ends_cleanly(tmp_path, checkpoints):
    _runs(tmp_path, 1, "rocksdb", checkpoints, str(tmp_path / "checkpoints"))
    (metadata,) = tmp_path.glob("checkpoints/*/chk-*/_metadata")
    handles = [
        handle
        for operator in decode_metadata(metadata.read_bytes()).operator_states.values()
        for subtask in operator.subtask_states.values()
        for handle in subtask.managed_keyed_state
    ]
    kind = IncrementalKeyGroupsStateHandle if checkpoints == "incremental" else KeyGroupsStateHandle
    assert handles and all(isinstance(h, kind) for h in handles)


@pytest.mark.long
@pytest.mark.parametrize("job", sorted(set(JOBS) - {"rocksdb"}))
def test_twenty_consecutive_embedded_runs_end_cleanly(tmp_path, job):
    _runs(tmp_path, 20, job)


def test_a_program_that_collected_with_a_limit_ends_at_once(tmp_path):
    """A program whose last call is execute_and_collect(limit=N) on a job that would never
    end exits within seconds, without a timeout or a lost report on stderr."""
    script = tmp_path / "limited.py"
    script.write_text(LIMITED_COLLECT)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    ended = time.time()
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split() == ["5", "3"]
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    finished = [line for line in lines if line.startswith("finished at ")]
    others = [line for line in lines if line not in finished and line not in ALLOWED_STDERR]
    assert len(finished) == 1 and not others, f"stderr was\n{result.stderr[-4000:]}"
    exit_s = ended - float(finished[0].split()[-1])
    print(f"seconds from the last result to the process's exit: {exit_s:.2f}")
    assert exit_s < LIMITED_COLLECT_EXIT_S


def test_a_job_of_a_thread_that_outlives_the_main_thread_completes(tmp_path):
    script = tmp_path / "outliving.py"
    script.write_text(OUTLIVING_THREAD)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.splitlines() == ["[1]", "[10, 20, 30]"], result.stderr[-4000:]
    others = [
        line for line in result.stderr.splitlines() if line.strip() and line not in ALLOWED_STDERR
    ]
    assert not others, f"stderr was\n{result.stderr[-4000:]}"
