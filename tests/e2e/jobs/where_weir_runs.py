"""Prints where a TaskManager's Python and Weir come from (sys.prefix and weir.__file__),
one line per subtask: `WEIR AT <prefix>|<weir/__init__.py>`.

    weir run tests/e2e/jobs/where_weir_runs.py
"""

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment


def where(_value: int) -> str:
    import sys

    import weir

    return f"{sys.prefix}|{weir.__file__}"


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.set_parallelism(1)
    numbers = env.from_collection([0], type_info=Types.INT())
    with numbers.map(where, output_type=Types.STRING()).execute_and_collect() as lines:
        for line in lines:
            print(f"WEIR AT {line}", flush=True)
