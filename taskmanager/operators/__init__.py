"""Operators of a task's chain: implementations per OperatorKind and the chain that wires them."""

from weir.taskmanager.operators.base import OperatorSetup, Output, StreamOperator
from weir.taskmanager.operators.chain import OPERATORS, OperatorChain
from weir.taskmanager.operators.contexts import TimersNotSupportedError
from weir.taskmanager.operators.functions import FunctionTypeError
from weir.taskmanager.operators.sinks import print_prefix, render

__all__ = [
    "OPERATORS",
    "FunctionTypeError",
    "OperatorChain",
    "OperatorSetup",
    "Output",
    "StreamOperator",
    "TimersNotSupportedError",
    "print_prefix",
    "render",
]
