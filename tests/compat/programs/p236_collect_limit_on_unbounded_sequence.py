"""execute_and_collect(limit=N) on a source that would run for days: the first N elements,
then the job is cancelled and the program goes on (and ends) at once."""

from pyflink.common import Types, WatermarkStrategy
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.connectors.number_seq import NumberSequenceSource

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
numbers = env.from_source(
    NumberSequenceSource(0, 10**15), WatermarkStrategy.no_watermarks(), "numbers"
)
print(numbers.map(lambda x: x * 2, output_type=Types.LONG()).execute_and_collect(limit=5))
print(numbers.filter(lambda x: x % 7 == 3).execute_and_collect(limit=3))
