import grpc
import pytest

from weir.core import errors, rpc
from weir.core.checkpoint import CheckpointType, decode_task_state


def test_every_status_code_maps_to_a_weir_error():
    assert set(rpc.CODE_TO_ERROR) == set(grpc.StatusCode)
    for cls in rpc.CODE_TO_ERROR.values():
        assert issubclass(cls, errors.WeirError)


class _FakeRpcError(grpc.RpcError):
    def __init__(self, code, details):
        self._code, self._details = code, details

    def code(self):
        return self._code

    def details(self):
        return self._details


@pytest.mark.parametrize(
    ("raised", "expected"),
    [
        (errors.ConfigurationError("bad key 'x'"), errors.ConfigurationError),
        (errors.JobNotFoundError("no job"), errors.JobNotFoundError),
        (errors.SlotAllocationError("not enough slots"), errors.SlotAllocationError),
        (errors.JobGraphError("garbage"), errors.JobGraphError),
        (errors.InvalidJobIdError("'../x' is not a job id"), errors.InvalidJobIdError),
        (errors.InvalidRequestError("field state cannot be decoded"), errors.InvalidRequestError),
    ],
)
def test_server_errors_come_back_as_the_same_class(raised, expected):
    code = rpc.status_code_for(raised)
    details = f"{type(raised).__name__}: {raised}"
    mapped = rpc.map_rpc_error(_FakeRpcError(code, details), "Call")
    assert type(mapped) is expected
    assert str(raised) in str(mapped)


def test_unavailable_says_what_to_check():
    mapped = rpc.map_rpc_error(
        _FakeRpcError(grpc.StatusCode.UNAVAILABLE, "connect failed"), "Submit"
    )
    assert isinstance(mapped, errors.ServiceUnavailableError)
    assert "running" in str(mapped)


class TestDecodeField:
    def test_a_value_the_decoder_refuses_is_invalid_argument_naming_the_field(self) -> None:
        with pytest.raises(errors.InvalidRequestError) as info:
            rpc.decode_field("options.checkpoint_type", CheckpointType, "BOGUS")
        assert info.value.field == "options.checkpoint_type"
        assert "options.checkpoint_type" in str(info.value) and "'BOGUS'" in str(info.value)
        assert rpc.status_code_for(info.value) == grpc.StatusCode.INVALID_ARGUMENT

    def test_a_corrupt_task_state_names_the_field_and_its_first_bytes(self) -> None:
        with pytest.raises(errors.InvalidRequestError, match=r"task_state .*12 bytes: b'\\x00"):
            rpc.decode_field("task_state", decode_task_state, b"\x00not json\xff\xfe\xfd")

    def test_the_decoded_value_is_returned(self) -> None:
        assert rpc.decode_field("state", CheckpointType, "SAVEPOINT") is CheckpointType.SAVEPOINT

    def test_errors_that_are_not_about_the_value_pass_through(self) -> None:
        def refuse(_value: object) -> None:
            raise errors.DeploymentVersionError("version 9")

        with pytest.raises(errors.DeploymentVersionError):
            rpc.decode_field("deployment", refuse, None)

    def test_an_inner_field_keeps_its_own_name(self) -> None:
        def outer(value: str) -> CheckpointType:
            return rpc.decode_field("deployment.inner", CheckpointType, value)

        with pytest.raises(errors.InvalidRequestError) as info:
            rpc.decode_field("deployment", outer, "BOGUS")
        assert info.value.field == "deployment.inner"
