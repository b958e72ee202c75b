import grpc
import pytest

from weir.core import errors, rpc


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
