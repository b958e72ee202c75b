"""BATCH mode decides the parallelism of operators that set none as Flink's adaptive batch
scheduler does (execution.batch.adaptive.auto-parallelism.*)."""

from __future__ import annotations

import pytest

from weir.common import Configuration, Encoder, Types, WatermarkStrategy
from weir.core.errors import ConfigurationError
from weir.datastream import RuntimeExecutionMode, StreamExecutionEnvironment
from weir.datastream.connectors.file_system import FileSink, FileSource, StreamFormat
from weir.datastream.connectors.number_seq import NumberSequenceSource

AUTO = "execution.batch.adaptive.auto-parallelism."


def batch_env(settings=None, parallelism=2, mode=RuntimeExecutionMode.BATCH):
    config = Configuration()
    for key, value in (settings or {}).items():
        config.set_string(key, value)
    env = StreamExecutionEnvironment.get_execution_environment(config)
    env.set_runtime_mode(mode)
    env.set_parallelism(parallelism)
    return env


def nodes(env):
    """name -> (parallelism, max parallelism) of every operator of the job built."""
    graph = env._stream_graph(clear=False)
    return {n.name: (n.parallelism, n.max_parallelism) for n in graph.nodes.values()}


def keyed_sum(env, values=(("a", 1), ("b", 2))):
    pairs = env.from_collection(list(values), Types.TUPLE([Types.STRING(), Types.INT()]))
    pairs.key_by(lambda p: p[0]).sum(1).name("sum").map(str).name("after").print()


def sequence(env, end=100):
    return env.from_source(NumberSequenceSource(1, end), WatermarkStrategy.no_watermarks(), "seq")


class TestDecidedParallelism:
    def test_a_small_keyed_job_runs_its_keyed_operators_at_1(self):
        env = batch_env()
        keyed_sum(env)
        found = nodes(env)
        assert found["sum"] == (1, 2)
        assert found["after"] == (1, 2)
        assert found["Sink: Print to Std. Out"] == (1, 2)

    def test_a_file_sink_after_a_small_keyed_operator_writes_from_one_subtask(self, tmp_path):
        env = batch_env()
        pairs = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
        sink = FileSink.for_row_format(str(tmp_path), Encoder.simple_string_encoder()).build()
        pairs.key_by(lambda p: p[0]).sum(1).map(str).sink_to(sink).name("files")
        (parallelism,) = {p for name, (p, _) in nodes(env).items() if "files" in name}
        assert parallelism == 1

    def test_streaming_mode_and_the_switch_off_keep_the_jobs_parallelism(self):
        for env in (
            batch_env(mode=RuntimeExecutionMode.STREAMING),
            batch_env({AUTO + "enabled": "false"}),
        ):
            keyed_sum(env)
            assert nodes(env)["sum"] == (2, 128)

    def test_the_volume_per_subtask_decides_within_the_bounds(self):
        values = [(f"k{i}", i) for i in range(200)]
        env = batch_env({AUTO + "avg-data-volume-per-task": "1kb"}, parallelism=64)
        keyed_sum(env, values)
        # The collection's pickled size over 1 kb, rounded up.
        (source,) = _sources(env)
        assert nodes(env)["sum"][0] == -(-source.estimated_size_bytes() // 1024) > 1
        env = batch_env({AUTO + "avg-data-volume-per-task": "1b", AUTO + "max-parallelism": "5"})
        keyed_sum(env, values)
        assert nodes(env)["sum"] == (5, 5)
        env = batch_env({AUTO + "min-parallelism": "2"})
        keyed_sum(env)
        assert nodes(env)["sum"] == (2, 2)

    def test_a_max_parallelism_set_bounds_the_decision_and_keeps_its_key_groups(self):
        env = batch_env({AUTO + "avg-data-volume-per-task": "1b", AUTO + "max-parallelism": "8"})
        env.set_max_parallelism(4)
        keyed_sum(env)
        assert nodes(env)["sum"] == (4, 4)

    def test_an_operators_own_parallelism_is_kept(self):
        env = batch_env()
        pairs = env.from_collection([("a", 1)], Types.TUPLE([Types.STRING(), Types.INT()]))
        pairs.key_by(lambda p: p[0]).sum(1).name("sum").set_parallelism(3).print()
        assert nodes(env)["sum"] == (3, 128)
        # The print sink declared the job's parallelism (2), not 3: rebalanced, and decided.
        assert nodes(env)["Sink: Print to Std. Out"][0] == 1

    def test_a_default_edge_is_forward_only_between_equal_declared_parallelisms(self):
        env = batch_env({AUTO + "avg-data-volume-per-task": "1b"})
        own = env.from_collection([1, 2]).map(lambda n: n).name("after collection")
        own.map(lambda n: n).name("one").set_parallelism(1).map(lambda n: n).name("after one")
        found = nodes(env)
        assert found["after collection"][0] == 2  # 1 -> 2 declared: a rebalance, decided
        assert found["after one"][0] == 2
        env = batch_env()
        sequence(env).map(lambda n: n).name("after sequence").print()
        assert nodes(env)["after sequence"][0] == 2  # forward: the source's, not by volume

    def test_sources_run_at_the_default_source_parallelism_and_files_one_per_file(self, tmp_path):
        for i in range(3):
            (tmp_path / f"part-{i}").write_text("x\n")
        env = batch_env({AUTO + "default-source-parallelism": "5", AUTO + "max-parallelism": "4"})
        sequence(env).map(lambda n: n).name("chained").print()
        files = FileSource.for_record_stream_format(
            StreamFormat.text_line_format(), str(tmp_path)
        ).build()
        env.from_source(files, WatermarkStrategy.no_watermarks(), "files").print()
        found = nodes(env)
        assert found["Source: seq"][0] == 4  # the default source parallelism, at most the max
        assert found["chained"][0] == 4  # a forward edge keeps the producer's parallelism
        assert found["Source: files"][0] == 3
        env = batch_env()
        (tmp_path / "part-3").write_text("x\n")
        env.from_source(files, WatermarkStrategy.no_watermarks(), "files").print()
        assert nodes(env)["Source: files"][0] == 2

    def test_an_unknown_volume_decides_the_upper_bound_and_broadcast_inputs_do_not_count(self):
        env = batch_env()
        sequence(env).rebalance().map(lambda n: n).name("after rebalance").print()
        env.from_source(Words(), WatermarkStrategy.no_watermarks(), "words").rebalance().map(
            lambda w: w
        ).name("unknown volume").print()
        assert nodes(env)["after rebalance"][0] == 1
        assert nodes(env)["unknown volume"][0] == 2
        env = batch_env({AUTO + "min-parallelism": "1"}, parallelism=3)
        sequence(env).broadcast().map(lambda n: n).name("broadcast only").print()
        assert nodes(env)["broadcast only"][0] == 1

    def test_bounds_that_contradict_each_other_name_the_keys(self):
        env = batch_env({AUTO + "min-parallelism": "3"})
        keyed_sum(env)
        with pytest.raises(ConfigurationError, match="max-parallelism' \\(2\\).*min-parallelism"):
            nodes(env)


class Words:
    """A bounded source that does not say how much it reads (as a Kafka topic)."""

    def is_bounded(self):
        return True

    def create_reader(self, context):
        raise NotImplementedError


def _sources(env):
    graph = env._stream_graph(clear=False)
    return [n.payload["source"] for n in graph.nodes.values() if "source" in n.payload]
