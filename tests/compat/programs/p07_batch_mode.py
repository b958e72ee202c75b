from pyflink.common import Types
from pyflink.datastream import RuntimeExecutionMode, StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_runtime_mode(RuntimeExecutionMode.BATCH)
env.set_parallelism(1)
words = "the cat and the hat and the bat".split()
(
    env.from_collection(words, type_info=Types.STRING())
    .map(lambda w: (w, 1), output_type=Types.TUPLE([Types.STRING(), Types.INT()]))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .print()
)
env.execute("batch word count")
