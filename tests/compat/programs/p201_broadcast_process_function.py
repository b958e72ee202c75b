# partitioning: random
"""BroadcastProcessFunction at parallelism 2: prices are broadcast to both subtasks and kept
in each one's broadcast state; orders are spread over the subtasks (rebalanced, so which
subtask gets which order varies, and the prefixes are not compared) and priced from the
broadcast state in process_element. An order whose price has not arrived yet waits in the
function and is priced when the price comes, so what is printed does not depend on which
input a subtask reads first (an order without a price is never printed)."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import BroadcastProcessFunction, RuntimeContext
from pyflink.datastream.state import MapStateDescriptor

PRICES = MapStateDescriptor("prices", Types.STRING(), Types.DOUBLE())


class PriceOrders(BroadcastProcessFunction):
    def open(self, runtime_context: RuntimeContext):
        self.subtask = runtime_context.get_index_of_this_subtask()
        self.waiting = []

    def process_element(self, value, ctx):
        price = ctx.get_broadcast_state(PRICES).get(value[1])
        if price is None:
            self.waiting.append(value)
        else:
            yield self.priced(value, price)

    def process_broadcast_element(self, value, ctx):
        prices = ctx.get_broadcast_state(PRICES)
        prices.put(value[0], value[1])
        yield "subtask %d: price of %s is %s (ts %d, watermark %d, known %s)" % (
            self.subtask,
            value[0],
            value[1],
            ctx.timestamp(),
            ctx.current_watermark(),
            sorted(prices.keys()),
        )
        still_waiting = []
        for order in self.waiting:
            if order[1] == value[0]:
                yield self.priced(order, value[1])
            else:
                still_waiting.append(order)
        self.waiting = still_waiting

    @staticmethod
    def priced(order, price):
        return "order %d: %d x %s = %.2f" % (order[0], order[2], order[1], order[2] * price)


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
prices = env.from_collection(
    [("apple", 0.5), ("pear", 0.75), ("plum", 1.25)],
    type_info=Types.TUPLE([Types.STRING(), Types.DOUBLE()]),
)
orders = env.from_collection(
    [
        (1, "apple", 4),
        (2, "pear", 2),
        (3, "plum", 10),
        (4, "apple", 1),
        (5, "kiwi", 3),
        (6, "pear", 8),
        (7, "apple", 12),
    ],
    type_info=Types.TUPLE([Types.INT(), Types.STRING(), Types.INT()]),
)
(
    orders.connect(prices.broadcast(PRICES))
    .process(PriceOrders(), output_type=Types.STRING())
    .print()
)
env.execute("broadcast process function")
