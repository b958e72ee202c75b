import threading

from weir.jobmanager.collect_buffer import CollectBuffer, FetchResult


class TestCollectBuffer:
    def test_push_waits_when_full_and_resumes_after_fetch(self):
        buffer = CollectBuffer(num_producers=1, max_batches=2)
        assert buffer.push(0, b"a", False, timeout=0)
        assert buffer.push(0, b"b", False, timeout=0)
        assert not buffer.push(0, b"c", False, timeout=0)  # full: the sink must retry
        assert buffer.fetch(1, timeout=0).batches == [b"a"]
        assert buffer.push(0, b"c", False, timeout=0)

    def test_end_only_after_every_producer_ended_and_all_fetched(self):
        buffer = CollectBuffer(num_producers=2)
        buffer.push(0, b"x", True, timeout=0)
        result = buffer.fetch(10, timeout=0)
        assert result.batches == [b"x"] and not result.end_of_data
        buffer.push(1, b"", True, timeout=0)
        assert buffer.fetch(10, timeout=0).end_of_data

    def test_blocked_fetch_wakes_on_push(self):
        buffer = CollectBuffer(num_producers=1)
        got = []
        reader = threading.Thread(target=lambda: got.append(buffer.fetch(5, timeout=30)))
        reader.start()
        buffer.push(0, b"late", False, timeout=0)
        reader.join(30)
        assert got[0].batches == [b"late"]

    def test_close_ends_the_stream(self):
        buffer = CollectBuffer(num_producers=3)
        buffer.close()
        assert buffer.fetch(1, timeout=0).end_of_data


class TestCollectBufferHoldBack:
    """With checkpointing on: batches wait for the checkpoint that covers them."""

    def test_a_batch_is_visible_once_a_later_checkpoint_completed(self):
        buffer = CollectBuffer(num_producers=1, hold_back=True)
        buffer.push(0, b"e0", False, timeout=0, epoch=0)
        buffer.push(0, b"e3", False, timeout=0, epoch=3)
        assert buffer.fetch(10, timeout=0) == FetchResult([], False)

        buffer.checkpoint_completed(3)  # covers epoch 0, not epoch 3
        assert buffer.fetch(10, timeout=0) == FetchResult([b"e0"], False)
        buffer.checkpoint_completed(4)
        assert buffer.fetch(10, timeout=0).batches == [b"e3"]

    def test_release_keeps_the_push_order(self):
        buffer = CollectBuffer(num_producers=2, hold_back=True)
        for subtask, batch, epoch in ((0, b"a", 1), (1, b"b", 2), (0, b"c", 1), (1, b"d", 5)):
            buffer.push(subtask, batch, False, timeout=0, epoch=epoch)
        buffer.checkpoint_completed(3)
        assert buffer.fetch(10, timeout=0).batches == [b"a", b"b", b"c"]

    def test_a_restart_drops_what_is_held_back_and_keeps_what_is_visible(self):
        buffer = CollectBuffer(num_producers=1, hold_back=True)
        buffer.push(0, b"covered", False, timeout=0, epoch=1)
        buffer.checkpoint_completed(2)
        buffer.push(0, b"replayed", True, timeout=0, epoch=2)

        buffer.restart(attempt=1)
        buffer.push(0, b"again", False, timeout=0, epoch=2, attempt=1)
        buffer.checkpoint_completed(3)

        result = buffer.fetch(10, timeout=0)
        # The ended flag was reset: the redeployed sink has not ended yet.
        assert result == FetchResult([b"covered", b"again"], False)

    def test_pushes_of_an_earlier_attempt_are_dropped_after_a_restart(self):
        buffer = CollectBuffer(num_producers=1, hold_back=True)
        buffer.restart(attempt=2)
        assert buffer.push(0, b"stale", True, timeout=0, epoch=5, attempt=1)
        buffer.checkpoint_completed(9)
        assert buffer.fetch(10, timeout=0) == FetchResult([], False)
        assert buffer.num_held_back == 0

    def test_end_of_data_waits_for_held_back_batches_until_the_job_finished(self):
        buffer = CollectBuffer(num_producers=1, hold_back=True)
        buffer.push(0, b"last", True, timeout=0, epoch=4)
        assert buffer.fetch(10, timeout=0) == FetchResult([], False)

        buffer.release_all()
        buffer.close()
        assert buffer.fetch(10, timeout=0) == FetchResult([b"last"], True)

    def test_a_job_that_ends_without_finishing_drops_what_is_held_back(self):
        buffer = CollectBuffer(num_producers=1, hold_back=True)
        buffer.push(0, b"visible", False, timeout=0, epoch=0)
        buffer.checkpoint_completed(1)
        buffer.push(0, b"uncommitted", False, timeout=0, epoch=1)
        buffer.close()
        assert buffer.fetch(10, timeout=0) == FetchResult([b"visible"], True)

    def test_held_back_batches_do_not_count_against_the_bound(self):
        buffer = CollectBuffer(num_producers=1, max_batches=2, hold_back=True)
        # More than max_batches wait for a checkpoint; the sink must not block on them,
        # or it could never take the barrier that releases them.
        for i in range(5):
            assert buffer.push(0, b"%d" % i, False, timeout=0, epoch=1)
        buffer.checkpoint_completed(2)
        # Now they are visible: the sink is back-pressured until the client fetches.
        assert not buffer.push(0, b"next", False, timeout=0, epoch=2)
        assert buffer.fetch(5, timeout=0).batches == [b"0", b"1", b"2", b"3", b"4"]
        assert buffer.push(0, b"next", False, timeout=0, epoch=2)

    def test_a_blocked_fetch_wakes_on_checkpoint_completion(self):
        buffer = CollectBuffer(num_producers=1, hold_back=True)
        buffer.push(0, b"x", False, timeout=0, epoch=0)
        got = []
        reader = threading.Thread(target=lambda: got.append(buffer.fetch(5, timeout=30)))
        reader.start()
        buffer.checkpoint_completed(1)
        reader.join(30)
        assert got[0].batches == [b"x"]

    def test_without_hold_back_checkpoints_change_nothing(self):
        buffer = CollectBuffer(num_producers=1)
        buffer.push(0, b"now", True, timeout=0, epoch=3)
        assert buffer.fetch(10, timeout=0) == FetchResult([b"now"], True)
