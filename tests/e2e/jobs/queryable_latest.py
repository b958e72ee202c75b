"""A job that never ends on its own and keeps state a client can query: numbers, one
every 50 ms, keyed by their residue mod 4, each key's latest number published as the
queryable state "latest-by-residue". The cluster-script tests read it and cancel the job.

    weir run -d tests/e2e/jobs/queryable_latest.py
"""

import time

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SourceFunction

QUERYABLE_STATE = "latest-by-residue"


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


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    numbers = env.add_source(SlowCounter(), "slow counter", Types.LONG())
    numbers.key_by(lambda n: n % 4, key_type=Types.LONG()).as_queryable_state(QUERYABLE_STATE)
    env.execute("queryable_latest")
