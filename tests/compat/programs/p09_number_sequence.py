from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
seq = env.from_source(NumberSequenceSource(1, 12), WatermarkStrategy.no_watermarks(), "seq")
(
    seq.filter(lambda x: x % 2 == 1)
    .map(lambda x: (x % 3, x * x), output_type=Types.TUPLE([Types.LONG(), Types.LONG()]))
    .key_by(lambda t: t[0])
    .sum(1)
    .print()
)
env.execute()
