"""The decoders servicers apply to request fields, fed random bytes and random documents:
each returns our type or raises the error that answers INVALID_ARGUMENT, never anything
that would answer INTERNAL with a traceback."""

from __future__ import annotations

import json

from google.protobuf.message import DecodeError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from weir.core import rpc
from weir.core.checkpoint import (
    InputChannelStateHandle,
    KeyGroupRange,
    KeyGroupsStateHandle,
    OperatorStateDistributionMode,
    OperatorStateHandle,
    OperatorStatePartition,
    OperatorSubtaskState,
    ResultSubpartitionStateHandle,
    StreamStateHandle,
    TaskStateSnapshot,
    decode_task_state,
    encode_task_state,
)
from weir.core.deployment import ExecutionState
from weir.core.deployment_codec import DEPLOYMENT_VERSION, decode_deployment
from weir.core.errors import DeploymentVersionError, InvalidRequestError, JobGraphError
from weir.core.ids import OperatorId
from weir.core.job_graph_codec import decode_job_graph
from weir.proto import taskexecutor_pb2

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3)
    ),
    max_leaves=12,
)


def _real_task_state() -> dict:
    """An encoded task state with every kind of handle, as JSON."""
    handle = StreamStateHandle("file:///x/chk-1/s", 3, 42, True)
    inline = StreamStateHandle(None, 2, 7, False, b"\x00\x01")
    state = OperatorSubtaskState(
        managed_keyed_state=(KeyGroupsStateHandle(KeyGroupRange(0, 64), handle, (0, 10)),),
        managed_operator_state=(
            OperatorStateHandle(
                inline,
                (OperatorStatePartition("s", OperatorStateDistributionMode.UNION, (0,)),),
            ),
        ),
        input_channel_state=(InputChannelStateHandle(0, 1, handle, (0,)),),
        result_subpartition_state=(ResultSubpartitionStateHandle(0, 1, inline, (0,)),),
        source_reader_state=(inline,),
        source_split_state=(handle,),
    )
    return json.loads(encode_task_state(TaskStateSnapshot({OperatorId("op"): state})))


def _paths(doc: object, path: tuple = ()) -> list[tuple]:
    found = [path]
    if isinstance(doc, dict):
        for key, value in doc.items():
            found += _paths(value, (*path, key))
    elif isinstance(doc, list):
        for index, value in enumerate(doc):
            found += _paths(value, (*path, index))
    return found


@st.composite
def _mutated_task_states(draw: st.DrawFn) -> bytes:
    """A real task state with one value, anywhere in it, replaced by a random one."""
    doc = _real_task_state()
    path = draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    parent[path[-1]] = draw(_json)
    return json.dumps(doc).encode()


_task_states = st.one_of(
    st.binary(max_size=256),
    _json.map(lambda doc: json.dumps(doc).encode()),
    _mutated_task_states(),
)


@settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow])
@given(_task_states)
def test_a_task_state_decodes_or_is_an_invalid_request(data: bytes) -> None:
    try:
        rpc.decode_field("task_state", decode_task_state, data)
    except InvalidRequestError as exc:
        assert exc.field == "task_state"


@settings(max_examples=400)
@given(st.binary(max_size=512))
def test_a_job_graph_decodes_or_is_a_job_graph_error(data: bytes) -> None:
    try:
        decode_job_graph(data)
    except JobGraphError as exc:
        assert str(exc)


@settings(max_examples=400)
@given(st.binary(max_size=512), st.booleans())
def test_a_deployment_decodes_or_is_an_invalid_request(data: bytes, same_version: bool) -> None:
    message = taskexecutor_pb2.TaskDeploymentDescriptorProto()
    try:
        message.ParseFromString(data)
    except DecodeError:
        return  # gRPC refuses a message it cannot parse before any servicer sees it
    if same_version:
        message.version = DEPLOYMENT_VERSION
    try:
        rpc.decode_field("deployment", decode_deployment, message)
    except DeploymentVersionError:
        assert not same_version
    except InvalidRequestError as exc:
        assert exc.field == "deployment"


@settings(max_examples=200)
@given(st.text(max_size=16))
def test_an_execution_state_decodes_or_is_an_invalid_request(text: str) -> None:
    try:
        assert rpc.decode_field("state", ExecutionState, text).value == text
    except InvalidRequestError as exc:
        assert exc.field == "state"
