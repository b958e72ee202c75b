from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
lines = ["to be or not to be", "that is the question", "to be is to do"]
(
    env.from_collection(lines, type_info=Types.STRING())
    .flat_map(lambda line: line.split(), output_type=Types.STRING())
    .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    .key_by(lambda pair: pair[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .print()
)
env.execute("word count")
