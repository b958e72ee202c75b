"""Operators of a task's chain: implementations per OperatorKind and the chain that wires them."""

from taskmanager.operators.base import OperatorSetup, Output, StreamOperator
from taskmanager.operators.chain import OPERATORS, OperatorChain
from taskmanager.operators.contexts import TimersNotSupportedError
from taskmanager.operators.functions import FunctionTypeError
from taskmanager.operators.sinks import print_prefix, render

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
