"""User metrics from a function's metric group: a counter, a meter, a distribution and a gauge
registered in open(), some in nested groups, and updated for every record; the records go on
unchanged. (What the metrics read is not printed: PyFlink's getters count within a bundle.)"""

from pyflink.common import Types
from pyflink.datastream import MapFunction, StreamExecutionEnvironment
from pyflink.metrics import Counter, Distribution, Meter, MetricGroup


class Measured(MapFunction):
    def open(self, runtime_context):
        group = runtime_context.get_metrics_group()
        self.seen = group.counter("seen")
        self.big = group.add_group("sizes").counter("big")
        self.per_key = group.add_group("key", "parity").counter("records")
        self.rate = group.meter("rate", time_span_in_seconds=30)
        self.values = group.distribution("values")
        self.last = 0
        group.gauge("last", lambda: self.last)
        kinds = [(self.seen, Counter), (self.rate, Meter), (self.values, Distribution)]
        self.kinds_ok = isinstance(group, MetricGroup) and all(isinstance(m, k) for m, k in kinds)

    def map(self, value):
        self.seen.inc()
        if value > 20:
            self.big.inc(2)
            self.big.dec()
        self.per_key.inc()
        self.rate.mark_event(3)
        self.values.update(value)
        self.last = value
        return f"{value} measured, metric kinds as declared: {self.kinds_ok}"


env = StreamExecutionEnvironment.get_execution_environment()
env.set_parallelism(1)
env.from_collection([5, 25, 10, 40], type_info=Types.INT()).map(
    Measured(), output_type=Types.STRING()
).print()
env.execute("user metrics")
