"""A job of a few records that ends at once: many of them are submitted together to see
that they queue for slots and all finish.

    weir run -d tests/e2e/jobs/tiny.py
"""

from weir.common import Types
from weir.datastream import StreamExecutionEnvironment
from weir.datastream.functions import SinkFunction


class Discard(SinkFunction):
    def invoke(self, value, context):
        pass


if __name__ == "__main__":
    env = StreamExecutionEnvironment.get_execution_environment()
    env.from_collection([1, 2, 3], type_info=Types.LONG()).map(lambda x: x * 2).add_sink(Discard())
    env.execute("tiny")
