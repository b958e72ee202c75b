"""Start-up: the wall time of ``python job.py`` for a trivial job on the embedded
MiniCluster, from the interpreter's start to its exit (Spark's JVM start, the first
TaskManager lease, the job, the exit), best and median of several fresh processes.

    .venv/bin/python benchmarks/startup.py [--runs 5]

The job maps three integers and prints them; each run's output is checked.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

JOB = """
from weir.common import Types
from weir.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
(env.from_collection([1, 2, 3], type_info=Types.INT())
    .map(lambda x: x * 2, output_type=Types.INT())
    .print())
env.execute("trivial")
"""


def one_run(script: str) -> tuple[float, str]:
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, script], capture_output=True, text=True, env=env, timeout=300, check=False
    )
    elapsed = time.perf_counter() - started
    if result.returncode != 0 or sorted(result.stdout.split()) != ["2", "4", "6"]:
        raise SystemExit(f"the trivial job failed:\n{result.stdout}\n{result.stderr[-3000:]}")
    return elapsed, result.stderr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="weir-startup-") as tmp:
        script = os.path.join(tmp, "trivial_job.py")
        with open(script, "w") as f:
            f.write(JOB)
        times = []
        stderr = ""
        for i in range(args.runs):
            elapsed, stderr = one_run(script)
            times.append(elapsed)
            print(f"run {i + 1}: {elapsed:.2f} s")
    print(
        f"trivial embedded job, wall time over {args.runs} runs: best {min(times):.2f} s, "
        f"median {statistics.median(times):.2f} s"
    )
    lines = [line for line in stderr.splitlines() if line.strip()]
    print(f"stderr of the last run ({len(lines)} lines):")
    for line in lines:
        print(f"  {line}")


if __name__ == "__main__":
    main()
