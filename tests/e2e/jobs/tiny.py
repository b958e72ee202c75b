"""A small job that runs for a set time (two seconds by default) and ends: many of them
are submitted together to see that they queue for slots and all finish.

    weir run -d tests/e2e/jobs/tiny.py [--seconds S]
"""

import argparse
import time

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction

RECORDS = 4


class Discard(SinkFunction):
    def invoke(self, value, context):
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=2.0)
    pause = parser.parse_args().seconds / RECORDS

    def paced(x):
        time.sleep(pause)  # the job's running time, not a synchronisation
        return x * 2

    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection(list(range(RECORDS)), type_info=Types.LONG()).map(paced).add_sink(Discard())
    env.execute("tiny")
