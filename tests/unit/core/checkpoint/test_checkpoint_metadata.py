"""The _metadata format: exact round trips, and damage detected by name."""

from __future__ import annotations

import json
import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weir.core.checkpoint import (
    CheckpointMetadata,
    CheckpointType,
    InputChannelStateHandle,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorState,
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    OperatorSubtaskState,
    ResultSubpartitionStateHandle,
    StreamStateHandle,
    decode_metadata,
    encode_metadata,
)
from weir.core.errors import CorruptCheckpointError
from weir.core.ids import JobId, OperatorId

_u32 = st.integers(min_value=0, max_value=2**32 - 1)
_small = st.integers(min_value=0, max_value=1000)
_offsets = st.lists(st.integers(min_value=0, max_value=2**40), max_size=4).map(tuple)


@st.composite
def stream_handles(draw):
    if draw(st.booleans()):
        data = draw(st.binary(max_size=64))
        return StreamStateHandle(None, len(data), draw(_u32), draw(st.booleans()), data)
    path = "file:///ckpt/" + draw(st.text("abc-_.0123456789", min_size=1, max_size=20))
    return StreamStateHandle(path, draw(_small), draw(_u32), draw(st.booleans()))


@st.composite
def subtask_states(draw):
    start = draw(st.integers(min_value=0, max_value=100))
    end = draw(st.integers(min_value=start, max_value=128))
    return OperatorSubtaskState(
        managed_keyed_state=tuple(
            draw(
                st.lists(
                    st.builds(
                        KeyGroupsStateHandle,
                        st.just(KeyGroupRange(start, end)),
                        stream_handles(),
                        _offsets,
                        key_placement=st.sampled_from(["", "pickled", "Tuple<String, Integer>"]),
                    ),
                    max_size=2,
                )
            )
        ),
        managed_operator_state=tuple(
            draw(
                st.lists(
                    st.builds(
                        OperatorStateHandle,
                        stream_handles(),
                        st.lists(
                            st.builds(
                                OperatorStatePartition,
                                st.text(max_size=10),
                                st.sampled_from(OperatorStateDistributionMode),
                                _offsets,
                            ),
                            max_size=2,
                        ).map(tuple),
                    ),
                    max_size=2,
                )
            )
        ),
        input_channel_state=tuple(
            draw(
                st.lists(
                    st.builds(InputChannelStateHandle, _small, _small, stream_handles(), _offsets),
                    max_size=2,
                )
            )
        ),
        result_subpartition_state=tuple(
            draw(
                st.lists(
                    st.builds(
                        ResultSubpartitionStateHandle, _small, _small, stream_handles(), _offsets
                    ),
                    max_size=2,
                )
            )
        ),
        source_reader_state=tuple(draw(st.lists(stream_handles(), max_size=2))),
        source_split_state=tuple(draw(st.lists(stream_handles(), max_size=3))),
        source_splits_rescaled=draw(st.booleans()),
    )


@st.composite
def metadata(draw):
    operators = {}
    for op in draw(
        st.lists(st.text("0123456789abcdef", min_size=1, max_size=32), max_size=3, unique=True)
    ):
        parallelism = draw(st.integers(min_value=1, max_value=4))
        subtasks = {i: draw(subtask_states()) for i in range(parallelism)}
        operators[OperatorId(op)] = OperatorState(OperatorId(op), parallelism, 128, subtasks)
    return CheckpointMetadata(
        job_id=JobId(draw(st.text("0123456789abcdef", min_size=32, max_size=32))),
        checkpoint_id=draw(st.integers(min_value=1, max_value=2**62)),
        trigger_timestamp_ms=draw(st.integers(min_value=0, max_value=2**50)),
        completion_timestamp_ms=draw(st.integers(min_value=0, max_value=2**50)),
        checkpoint_type=draw(st.sampled_from(CheckpointType)),
        operator_states=operators,
    )


# Drawing whole metadata trees is slow on a loaded 2-core machine; the round trip, not the
# generation speed, is under test.
@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], deadline=None)
@given(metadata())
def test_metadata_round_trips_exactly(meta):
    assert decode_metadata(encode_metadata(meta)) == meta


def _sample() -> CheckpointMetadata:
    handle = StreamStateHandle("file:///x/chk-1/s", 3, 42, True)
    state = OperatorSubtaskState(
        managed_keyed_state=(KeyGroupsStateHandle(KeyGroupRange(0, 64), handle, (0, 10)),),
        source_reader_state=(StreamStateHandle(None, 2, 7, False, b"\x00\x01"),),
    )
    op = OperatorId("op")
    return CheckpointMetadata(
        JobId("j" * 32),
        1,
        100,
        200,
        CheckpointType.CHECKPOINT,
        {op: OperatorState(op, 1, 128, {0: state})},
    )


def test_the_body_is_self_describing_json():
    data = encode_metadata(_sample())
    assert data.startswith(b"WEIRCKPT")
    body = json.loads(data[18:])
    assert body["format"] == "weir-checkpoint-metadata"
    assert body["version"] == 1
    assert body["operators"][0]["subtasks"][0]["state"]["source_reader"][0]["inline"] == "AAE="


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (lambda d: d[:10], "cut short"),
        (lambda d: b"NOTWEIR!" + d[8:], "not a Weir checkpoint"),
        (lambda d: d[:8] + struct.pack(">H", 99) + d[10:], "format version 99"),
        (lambda d: d[:-1], "checksum"),
        (lambda d: d[:-3] + bytes([d[-3] ^ 0x20]) + d[-2:], "checksum"),
    ],
)
def test_damage_is_reported_with_the_source(damage, message):
    data = damage(encode_metadata(_sample()))
    with pytest.raises(CorruptCheckpointError, match=message) as err:
        decode_metadata(data, source="file:///x/chk-1/_metadata")
    assert err.value.path == "file:///x/chk-1/_metadata"


def test_a_valid_frame_with_a_foreign_body_is_corrupt():
    import zlib

    body = b'{"format": "something-else"}'
    data = struct.pack(">8sHII", b"WEIRCKPT", 1, len(body), zlib.crc32(body)) + body
    with pytest.raises(CorruptCheckpointError, match="cannot be decoded"):
        decode_metadata(data)


def test_handles_hold_a_path_or_inline_bytes():
    with pytest.raises(ValueError, match="either a path or inline"):
        StreamStateHandle(None, 0, 0)
    with pytest.raises(ValueError, match="either a path or inline"):
        StreamStateHandle("file:///x", 1, 0, inline=b"x")
    with pytest.raises(ValueError, match="key-group range"):
        KeyGroupRange(5, 3)


def test_a_savepoint_names_its_own_files_relative_to_its_directory():
    import dataclasses

    directory = "file:///sp/savepoint-abc"
    own = StreamStateHandle(f"{directory}/op-0-keyed", 3, 42, False)
    elsewhere = StreamStateHandle("file:///other/chk-1/x", 3, 42, False)
    state = OperatorSubtaskState(
        managed_keyed_state=(KeyGroupsStateHandle(KeyGroupRange(0, 128), own, (0,)),),
        source_reader_state=(elsewhere,),
    )
    op = OperatorId("op")
    meta = CheckpointMetadata(
        JobId("j" * 32),
        4,
        100,
        200,
        CheckpointType.SAVEPOINT,
        {op: OperatorState(op, 1, 128, {0: state}, uid="counter")},
    )
    data = encode_metadata(meta, relative_to=directory)
    body = json.loads(data[18:])
    keyed = body["operators"][0]["subtasks"][0]["state"]["keyed"][0]["handle"]
    assert keyed["relative"] == "op-0-keyed" and "path" not in keyed
    assert body["operators"][0]["uid"] == "counter"

    # Read where it was written, it is what was written; read after a move, its own
    # files are found in the new place and nothing else moves.
    assert decode_metadata(data, source=f"{directory}/_metadata") == meta
    moved = decode_metadata(data, source="/archive/savepoint-abc")
    subtask = moved.operator_states[op].subtask_states[0]
    assert subtask.managed_keyed_state[0].handle.path == "/archive/savepoint-abc/op-0-keyed"
    assert subtask.source_reader_state == (elsewhere,)
    assert dataclasses.replace(moved.operator_states[op], subtask_states={}).uid == "counter"


def test_a_relative_name_cannot_leave_the_directory():
    import zlib

    meta = _sample()
    body = json.loads(encode_metadata(meta)[18:])
    handle = body["operators"][0]["subtasks"][0]["state"]["keyed"][0]["handle"]
    del handle["path"]
    handle["relative"] = "../../etc/passwd"
    raw = json.dumps(body).encode()
    data = struct.pack(">8sHII", b"WEIRCKPT", 1, len(raw), zlib.crc32(raw)) + raw
    with pytest.raises(CorruptCheckpointError, match="bad relative state file name"):
        decode_metadata(data, source="/sp/savepoint-x")
