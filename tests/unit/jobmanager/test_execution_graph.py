import pytest

from weir.core.errors import JobGraphError
from weir.core.job_graph import (
    JobEdge,
    JobGraph,
    JobVertex,
    OperatorDescriptor,
    OperatorKind,
    PartitionerKind,
)
from weir.jobmanager.execution_graph import ExecutionGraph, SlotInfo, pointwise_consumers


def _vertex(vid, parallelism, kind=OperatorKind.MAP, group="default"):
    return JobVertex(
        vid, vid, parallelism, 128, (OperatorDescriptor(f"op-{vid}", vid, kind, b""),), group
    )


def _graph(vertices, edges):
    return JobGraph("job", "test", tuple(vertices), tuple(edges))


def _edge(src, dst, partitioner, index=0):
    return JobEdge(src, f"op-{src}", dst, index, partitioner)


def _slots(n, per_tm=1):
    return [
        SlotInfo(
            f"a{i}",
            f"tm{i // per_tm}",
            f"127.0.0.1:{9000 + i // per_tm}",
            "127.0.0.1",
            7000 + i // per_tm,
        )
        for i in range(n)
    ]


class TestPointwise:
    @pytest.mark.parametrize(
        ("producers", "consumers"), [(4, 2), (2, 4), (3, 2), (2, 3), (3, 3), (1, 5)]
    )
    def test_every_consumer_is_fed_and_each_producer_feeds_a_contiguous_range(
        self, producers, consumers
    ):
        fed = [pointwise_consumers(p, producers, consumers) for p in range(producers)]
        assert {j for targets in fed for j in targets} == set(range(consumers))
        for targets in fed:
            assert list(targets) == list(range(targets[0], targets[-1] + 1))
        if producers >= consumers:
            assert all(len(targets) == 1 for targets in fed)
        else:  # each consumer has exactly one producer
            assert sorted(j for targets in fed for j in targets) == list(range(consumers))


class TestDeploymentDescriptors:
    def test_slot_sharing_needs_max_parallelism_per_group(self):
        graph = ExecutionGraph(
            _graph(
                [
                    _vertex("src", 2, OperatorKind.SOURCE),
                    _vertex("map", 3),
                    _vertex("side", 2, group="g2"),
                ],
                [
                    _edge("src", "map", PartitionerKind.REBALANCE),
                    _edge("map", "side", PartitionerKind.REBALANCE),
                ],
            )
        )
        assert graph.required_slots() == 5

    def test_all_to_all_edge_connects_every_producer_to_every_consumer(self):
        graph = ExecutionGraph(
            _graph(
                [_vertex("src", 2, OperatorKind.SOURCE), _vertex("agg", 3)],
                [_edge("src", "agg", PartitionerKind.KEY_GROUP)],
            )
        )
        graph.assign_slots(_slots(3))
        producer = graph.vertices["src"][1]
        tdd = graph.deployment_descriptor(producer)
        (partition,) = tdd.result_partitions
        assert partition.num_subpartitions == 3
        assert partition.consumer_subtasks == (0, 1, 2)
        assert partition.consumer_max_parallelism == 128
        consumer = graph.vertices["agg"][2]
        (gate,) = graph.deployment_descriptor(consumer).input_gates
        assert [c.partition_id.producer for c in gate.channels] == [
            ev.current.attempt_id for ev in graph.vertices["src"]
        ]
        assert {c.subpartition_index for c in gate.channels} == {2}

    def test_forward_edge_is_one_to_one_and_local_under_slot_sharing(self):
        graph = ExecutionGraph(
            _graph(
                [_vertex("src", 2, OperatorKind.SOURCE), _vertex("map", 2)],
                [_edge("src", "map", PartitionerKind.FORWARD)],
            )
        )
        graph.assign_slots(_slots(2))
        for index in range(2):
            (gate,) = graph.deployment_descriptor(graph.vertices["map"][index]).input_gates
            (channel,) = gate.channels
            assert channel.partition_id.producer == graph.vertices["src"][index].current.attempt_id
            assert channel.subpartition_index == 0
            assert channel.is_local

    def test_remote_channels_carry_the_producer_data_address(self):
        graph = ExecutionGraph(
            _graph(
                [_vertex("src", 1, OperatorKind.SOURCE, group="a"), _vertex("map", 1, group="b")],
                [_edge("src", "map", PartitionerKind.REBALANCE)],
            )
        )
        graph.assign_slots(_slots(2))
        (gate,) = graph.deployment_descriptor(graph.vertices["map"][0]).input_gates
        (channel,) = gate.channels
        assert not channel.is_local
        assert channel.producer_location.data_port == 7000

    def test_forward_with_unequal_parallelism_is_rejected(self):
        with pytest.raises(JobGraphError, match="forward partitioning"):
            ExecutionGraph(
                _graph(
                    [_vertex("src", 1, OperatorKind.SOURCE), _vertex("map", 2)],
                    [_edge("src", "map", PartitionerKind.FORWARD)],
                )
            )
