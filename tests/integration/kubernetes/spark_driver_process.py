"""A Spark driver started as Weir's master starts it, in a process of its own (a test
process may hold another SparkContext): ``python spark_driver_process.py CONFIG_JSON``.

It prints ``started <application id>``, then obeys lines on its standard input:
``run`` runs a one-partition Python job and prints ``ran <pod name>`` with the
SPARK_EXECUTOR_POD_NAME of the executor that ran it; ``stop`` stops the context, prints
``stopped`` and exits."""

from __future__ import annotations

import json
import logging
import os
import sys

from weir.resourcemanager.spark_launcher import create_spark_context, stop_spark_context


def _pod_name(_rows: object) -> list[str]:
    return [os.environ.get("SPARK_EXECUTOR_POD_NAME", "?")]


def main() -> int:
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    context = create_spark_context(json.loads(sys.argv[1]))
    print(f"started {context.applicationId}", flush=True)
    for line in sys.stdin:
        command = line.strip()
        if command == "run":
            (name,) = context.parallelize([0], 1).mapPartitions(_pod_name).collect()
            print(f"ran {name}", flush=True)
        elif command == "stop":
            break
    stop_spark_context(context)
    print("stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
