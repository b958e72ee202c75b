"""A planned failure, a fixed-delay restart and restored keyed state; execute_and_collect exactly once."""

import time

from pyflink.common import Configuration, Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import KeyedProcessFunction, MapFunction
from pyflink.datastream.state import ValueStateDescriptor


class Slow(MapFunction):
    def open(self, ctx):
        self.attempt = ctx.get_attempt_number()

    def map(self, value):
        time.sleep(0.01)
        if value == 150 and self.attempt == 0:
            raise RuntimeError("planned failure")
        return value


class RunningSum(KeyedProcessFunction):
    def open(self, ctx):
        self.s = ctx.get_state(ValueStateDescriptor("s", Types.LONG()))
        self.attempt = ctx.get_attempt_number()

    def process_element(self, value, ctx):
        s = (self.s.value() or 0) + value
        self.s.update(s)
        if value > 290:
            yield (ctx.get_current_key(), value, s, self.attempt)


config = Configuration()
config.set_string("restart-strategy.type", "fixed-delay")
config.set_string("restart-strategy.fixed-delay.attempts", "2")
config.set_string("restart-strategy.fixed-delay.delay", "100 ms")
env = StreamExecutionEnvironment.get_execution_environment(config)
env.set_parallelism(1)
env.enable_checkpointing(300)
seq = env.from_source(NumberSequenceSource(1, 300), WatermarkStrategy.no_watermarks(), "seq")
out = (
    seq.map(Slow(), output_type=Types.LONG())
    .key_by(lambda x: x % 3, key_type=Types.LONG())
    .process(
        RunningSum(),
        output_type=Types.TUPLE([Types.LONG(), Types.LONG(), Types.LONG(), Types.INT()]),
    )
)
res = sorted(out.execute_and_collect("restart job"))
for r in res:
    print(r)
print("count", len(res))
