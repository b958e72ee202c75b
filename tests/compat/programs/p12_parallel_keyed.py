from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(3)
data = [(i % 5, i) for i in range(30)]
(
    env.from_collection(data, type_info=Types.TUPLE([Types.INT(), Types.INT()]))
    .key_by(lambda t: t[0])
    .reduce(lambda a, b: (a[0], a[1] + b[1]))
    .filter(lambda t: t[1] > 40)
    .print()
)
env.execute()
