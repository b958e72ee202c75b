"""The broadcast API's shapes and refusals: broadcast() without descriptors is the broadcast
partitioner (every subtask prints every element), with MapStateDescriptors it is a
BroadcastStream; connect gives a BroadcastConnectedStream; the wrong function for the
(non-)keyed side, a descriptor that is no MapStateDescriptor, a bad output type and a keyed
stream's broadcast() are refused with PyFlink's messages."""

from pyflink.common import Types
from pyflink.datastream import StreamExecutionEnvironment
from pyflink.datastream.functions import BroadcastProcessFunction, KeyedBroadcastProcessFunction
from pyflink.datastream.state import MapStateDescriptor, ValueStateDescriptor

RULES = MapStateDescriptor("rules", Types.STRING(), Types.STRING())
MORE = MapStateDescriptor("more", Types.INT(), Types.INT())


class Plain(BroadcastProcessFunction):
    def process_element(self, value, ctx):
        pass

    def process_broadcast_element(self, value, ctx):
        pass


class Keyed(KeyedBroadcastProcessFunction):
    def process_element(self, value, ctx):
        pass

    def process_broadcast_element(self, value, ctx):
        pass


def refused(what, call):
    try:
        call()
        print("%s: accepted" % what)
    except Exception as e:
        print("%s: %s: %s" % (what, type(e).__name__, e))


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(2)
words = env.from_collection(["x", "y"], type_info=Types.STRING())
numbers = env.from_collection([1, 2, 3], type_info=Types.INT())

broadcast_stream = words.broadcast(RULES, MORE)
print(type(words.broadcast()).__name__, type(broadcast_stream).__name__)
print([d.get_name() for d in broadcast_stream.broadcast_state_descriptors])
connected = numbers.connect(broadcast_stream)
print(type(connected).__name__, [d.get_name() for d in connected.broadcast_state_descriptors])
keyed = numbers.key_by(lambda n: n % 2, key_type=Types.INT())
print(type(keyed.connect(broadcast_stream)).__name__)

refused(
    "a keyed stream with a BroadcastProcessFunction",
    lambda: keyed.connect(broadcast_stream).process(Plain()),
)
refused("a stream with a KeyedBroadcastProcessFunction", lambda: connected.process(Keyed()))
refused("a ValueStateDescriptor", lambda: words.broadcast(ValueStateDescriptor("v", Types.INT())))
refused("a second descriptor that is a name", lambda: words.broadcast(RULES, "more"))
refused("output_type 'STRING'", lambda: connected.process(Plain(), output_type="STRING"))
refused("broadcast() of a keyed stream", lambda: keyed.broadcast(RULES))
refused("broadcast() of a keyed stream without descriptors", lambda: keyed.broadcast())

numbers.broadcast().map(lambda n: n * 10, output_type=Types.INT()).print("everywhere")
env.execute("broadcast api")
