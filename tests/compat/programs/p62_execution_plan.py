"""env.get_execution_plan() as PyFlink prints it, node ids replaced by their position: the
operators PyFlink adds (key_by maps, print's conversion map, the side output map, the
timestamp extraction), consecutive Python operators fused into one node, sources and sinks
prefixed, nodes ordered as PyFlink orders them."""

import json
import re

from pyflink.common import Duration, Time, Types, WatermarkStrategy
from pyflink.common.watermark_strategy import TimestampAssigner
from pyflink.datastream import OutputTag, StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource
from pyflink.datastream.functions import AggregateFunction, ProcessFunction
from pyflink.datastream.window import TumblingEventTimeWindows


class First(TimestampAssigner):
    def extract_timestamp(self, value, record_timestamp):
        return value[0]


class Count(AggregateFunction):
    def create_accumulator(self):
        return 0

    def add(self, value, accumulator):
        return accumulator + 1

    def get_result(self, accumulator):
        return accumulator

    def merge(self, a, b):
        return a + b


class Split(ProcessFunction):
    def process_element(self, value, ctx):
        yield value


def show(env):
    plan = env.get_execution_plan()
    ids = {}
    for node in json.loads(plan)["nodes"]:
        ids[node["id"]] = len(ids) + 1
    print(re.sub(r'"id" : (\d+)', lambda m: '"id" : %d' % ids[int(m.group(1))], plan))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
pairs = env.from_collection(
    [(1000, "a"), (2000, "b"), (3000, "a")], type_info=Types.TUPLE([Types.LONG(), Types.STRING()])
)
strategy = WatermarkStrategy.for_bounded_out_of_orderness(
    Duration.of_millis(0)
).with_timestamp_assigner(First())
(
    pairs.assign_timestamps_and_watermarks(strategy)
    .map(lambda p: (p[1], 1))
    .key_by(lambda p: p[0])
    .window(TumblingEventTimeWindows.of(Time.seconds(2)))
    .aggregate(Count())
    .print()
)
keyed = pairs.key_by(lambda p: p[1], key_type=Types.STRING())
keyed.sum(0).print().name("sums")
keyed.map(lambda p: p[0], output_type=Types.LONG()).filter(lambda x: x > 1000).print()
show(env)

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
numbers = env.from_source(NumberSequenceSource(1, 10), WatermarkStrategy.no_watermarks(), "seq")
tag = OutputTag("odd", Types.LONG())
split = numbers.process(Split(), output_type=Types.LONG())
split.get_side_output(tag).print()
(
    split.map(lambda x: x * 2)
    .set_parallelism(3)
    .rebalance()
    .map(lambda x: x)
    .map(lambda x: str(x), output_type=Types.STRING())
    .start_new_chain()
    .filter(lambda s: s)
    .print()
)
split.union(numbers).map(lambda x: x + 1).name("plus one").print()
show(env)
