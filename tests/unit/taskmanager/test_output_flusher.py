"""OutputFlusher: a task stuck inside one batch still sends what the batch emitted early."""

from __future__ import annotations

import threading

from test_record_writer import FakeClock, writer

from weir.core.job_graph import PartitionerKind
from weir.taskmanager.output_flusher import OutputFlusher
from weir.taskmanager.record_writer import BufferTimeout


class TestFlushIf:
    def test_flushes_when_still_due(self):
        rw, cap = writer(PartitionerKind.FORWARD, 1)
        rw.emit([1, 2])
        assert rw.flush_if(lambda: True)
        assert cap.records(0) == [1, 2]

    def test_not_when_no_longer_due(self):
        rw, cap = writer(PartitionerKind.FORWARD, 1)
        rw.emit([1, 2])
        assert not rw.flush_if(lambda: False)
        assert cap.buffers == [] and rw.has_pending()

    def test_not_while_another_thread_is_inside_the_writer(self):
        rw, cap = writer(PartitionerKind.FORWARD, 1)
        rw.emit([1])
        inside, done = threading.Event(), threading.Event()

        class Blocking:
            def __call__(self, batch, timestamps):
                inside.set()
                done.wait(10)

        rw._emit = Blocking()  # the task thread, held inside emit
        task_thread = threading.Thread(target=rw.emit, args=([2],))
        task_thread.start()
        assert inside.wait(10)
        assert not rw.flush_if(lambda: True)
        done.set()
        task_thread.join(10)
        assert cap.buffers == []


class TestOutputFlusher:
    def _flusher(self, timeout_ms: int = 100):
        rw, cap = writer(PartitionerKind.FORWARD, 1)
        clock = FakeClock()
        timeout = BufferTimeout(timeout_ms, clock)
        return OutputFlusher([rw], timeout, "task"), rw, cap, timeout, clock

    def test_flushes_only_when_the_task_stayed_inside_one_batch(self):
        flusher, rw, cap, _, _ = self._flusher()
        rw.emit([1, 2])
        seen = flusher.check(-1)  # between batches: never
        assert cap.buffers == []
        flusher.epoch += 1  # a batch starts
        seen = flusher.check(seen)  # first look inside it
        assert cap.buffers == []
        seen = flusher.check(seen)  # still the same batch an interval later
        assert cap.records(0) == [1, 2]
        flusher.epoch += 1  # it ended
        rw.emit([3])
        flusher.check(flusher.check(seen))
        assert cap.records(0) == [1, 2]

    def test_a_new_batch_is_not_the_batch_seen_before(self):
        flusher, rw, cap, _, _ = self._flusher()
        rw.emit([1])
        flusher.epoch = 1
        seen = flusher.check(-1)
        flusher.epoch = 3  # one batch ended and another began between two looks
        flusher.check(seen)
        assert cap.buffers == []

    def test_its_flush_re_arms_the_task_buffer_timeout(self):
        flusher, _, _, timeout, clock = self._flusher()
        clock.now += 0.5  # the task has been inside its batch for a while
        flusher.epoch = 1
        flusher.check(flusher.check(-1))
        assert not timeout.due()  # the batch's end does not flush again at once
        clock.now += 0.1
        assert timeout.due()

    def test_the_thread_sends_pending_output_of_a_stuck_task(self):
        flusher, rw, cap, _, _ = self._flusher(timeout_ms=1)
        sent = threading.Event()

        def emitted(sub, buffer):
            cap.emit(sub, buffer)
            sent.set()

        rw._emit_buffer = emitted
        rw.emit([1, 2])
        flusher.epoch = 1
        flusher.start()
        try:
            assert sent.wait(10)
        finally:
            flusher.close()
        assert cap.records(0) == [1, 2]

    def test_nothing_to_do_without_writers_or_with_a_timeout_of_minus_one(self):
        timeout = BufferTimeout(-1, FakeClock())
        for flusher in (OutputFlusher([], None, "t"), OutputFlusher([], timeout, "t")):
            flusher.start()
            assert flusher._thread is None
