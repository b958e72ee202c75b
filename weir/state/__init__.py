"""Reading state outside a job: ``read_savepoint(path)`` lists a savepoint's operators
and iterates their keyed, list, union list and broadcast state as Python objects."""

from weir.state.savepoint_reader import OperatorInfo, SavepointReader, read_savepoint

__all__ = ["OperatorInfo", "SavepointReader", "read_savepoint"]
