"""The plan of a union of keyed streams (each through PyFlink's values operator), a projection
(a Java operator, not fused) and a window over a keyed union, ids replaced by position."""

import json
import re

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment

env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
pairs = Types.TUPLE([Types.INT(), Types.INT()])
one = env.from_collection([(1, 2)], type_info=pairs)
two = env.from_collection([(3, 4)], type_info=pairs)
one.key_by(lambda x: x[0]).union(two.key_by(lambda x: x[1])).print()
one.project(1).map(lambda x: x).print()
one.union(two).key_by(lambda x: x[0]).reduce(lambda a, b: a).print()
plan = env.get_execution_plan()
ids = {}
for node in json.loads(plan)["nodes"]:
    ids[node["id"]] = len(ids) + 1
print(re.sub(r'"id" : (\d+)', lambda m: '"id" : %d' % ids[int(m.group(1))], plan))
