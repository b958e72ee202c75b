"""``TimeDomain`` (PyFlink's ``pyflink.datastream.time_domain``)."""

from weir.core.time_domain import TimeDomain

__all__ = ["TimeDomain"]
