"""A job that never ends on its own: an unbounded source emitting one number every
50 ms into a sink that drops them. The cluster-script tests cancel it.

    weir run -d tests/e2e/jobs/slow_unbounded.py
"""

import time

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction, SourceFunction


class SlowCounter(SourceFunction):
    """0, 1, 2, ... one every 50 ms, until cancelled."""

    def __init__(self):
        self._running = True  # a plain flag: the function is pickled with the job

    def run(self, ctx):
        n = 0
        while self._running:
            ctx.collect(n)
            n += 1
            time.sleep(0.05)  # the source's rate

    def cancel(self):
        self._running = False


class Discard(SinkFunction):
    def invoke(self, value, context):
        pass


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.add_source(SlowCounter(), "slow counter", Types.LONG()).add_sink(Discard())
    env.execute("slow_unbounded")
