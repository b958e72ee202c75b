import collections

from hypothesis import given
from hypothesis import strategies as st

from weir.core.job_graph import SerializerKind
from weir.core.serializers import deserialize_batch, frame_buffers, serialize_batch

primitive = st.one_of(
    st.integers(), st.text(), st.floats(allow_nan=False), st.none(), st.booleans(), st.binary()
)
records = st.lists(st.one_of(primitive, st.tuples(primitive, primitive), st.lists(primitive)))

Point = collections.namedtuple("Point", "x y")


class TestBatchSerializers:
    @given(records, st.sampled_from(list(SerializerKind)), st.booleans())
    def test_round_trip(self, batch, kind, compress):
        assert deserialize_batch(serialize_batch(batch, kind, compress)) == batch

    def test_marshal_refuses_subclasses_so_types_survive(self):
        batch = [Point(1, 2), Point(3, 4)]
        out = deserialize_batch(serialize_batch(batch, SerializerKind.MARSHAL))
        assert out == batch
        assert type(out[0]) is Point

    def test_primitives_use_marshal_and_objects_pickle(self):
        assert serialize_batch([1, "a"], SerializerKind.MARSHAL)[:1] == b"M"
        assert serialize_batch([Point(1, 2)], SerializerKind.MARSHAL)[:1] == b"P"

    def test_compression_shrinks_repetitive_buffers(self):
        batch = [("auction", 1, 2.0)] * 2000
        assert len(serialize_batch(batch, compress=True)) < len(serialize_batch(batch)) / 4

    def test_unknown_tag_is_reported(self):
        try:
            deserialize_batch(b"Zjunk")
        except ValueError as exc:
            assert "unknown buffer tag" in str(exc)
        else:
            raise AssertionError("expected ValueError")


def test_framed_buffers_are_parts_of_their_own_and_read_back_after_the_records():
    """A large buffer (an Arrow IPC stream, say) is written as the part it is, never
    copied into the bytes of the records before it; read back, it is a view of what was
    read, after the records."""
    big = bytearray(b"x" * 100_000)
    records = serialize_batch([("state", 1, 2)])
    parts = frame_buffers(records, [("blocks", big), ("more", b"")])
    assert any(part is big for part in parts)
    out = deserialize_batch(b"".join(parts))
    assert out[0] == ("state", 1, 2)
    assert [(name, bytes(view)) for name, view in out[1:]] == [
        ("blocks", bytes(big)),
        ("more", b""),
    ]
    assert isinstance(out[1][1], memoryview)
    only_buffers = deserialize_batch(b"".join(frame_buffers(b"", [("é", b"ab")])))
    assert [(name, bytes(view)) for name, view in only_buffers] == [("é", b"ab")]
