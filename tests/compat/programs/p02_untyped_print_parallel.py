# partitioning: random (rebalance starts at a random subtask, in PyFlink as here)
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
ds = env.from_collection([(i, "v%d" % i, i * 0.5, i % 2 == 0, None) for i in range(8)])
ds.map(lambda t: (t[0] * 10, t[1], t[2], t[3], t[4])).print()
ds.filter(lambda t: t[0] % 3 == 0).map(lambda t: t[1]).print("tagged")
env.execute()
