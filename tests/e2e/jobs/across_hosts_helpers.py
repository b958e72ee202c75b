"""A module of the job's own, beside it: it reaches the TaskManagers inside the job (pickled
by value), never by its path, which no other host has on its sys.path."""

KEYS = 8


def key_of(value: int) -> int:
    return value % KEYS
