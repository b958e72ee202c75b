import threading

from jobmanager.collect_buffer import CollectBuffer


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
