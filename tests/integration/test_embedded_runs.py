"""Consecutive embedded runs (``python job.py``): each prints its result, ends cleanly, and
leaves nothing on stderr but the JVM's start-up line. A run whose shutdown waited on a
timeout or lost a report would say so there (a traceback, a warning)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

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
}
# What the JVM prints as it starts (the incubator module Spark's launcher adds); nothing
# else may appear.
ALLOWED_STDERR = ("WARNING: Using incubator modules: jdk.incubator.vector",)


def _runs(tmp_path, count: int, job: str) -> list[float]:
    script = tmp_path / "small_job.py"
    script.write_text(JOBS[job])
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    exits = []
    for run in range(count):
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
        lines = [line for line in result.stderr.splitlines() if line.strip()]
        finished = [line for line in lines if line.startswith("finished at ")]
        others = [line for line in lines if line not in finished and line not in ALLOWED_STDERR]
        assert len(finished) == 1 and not others, f"run {run}: stderr was\n{result.stderr}"
        assert len(result.stdout.splitlines()) == 100, result.stdout
        exits.append(ended - float(finished[0].split()[-1]))
    print(f"seconds from the job's end to the process's exit: {[round(s, 2) for s in exits]}")
    return exits


@pytest.mark.parametrize("job", sorted(JOBS))
def test_consecutive_embedded_runs_end_cleanly(tmp_path, job):
    _runs(tmp_path, 2, job)


@pytest.mark.long
@pytest.mark.parametrize("job", sorted(JOBS))
def test_twenty_consecutive_embedded_runs_end_cleanly(tmp_path, job):
    _runs(tmp_path, 20, job)
