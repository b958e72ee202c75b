"""``CompletableFuture``: what ``JobClient`` methods return, as PyFlink's
``pyflink.common.completable_future.CompletableFuture``.

Defined in ``weir.core.completable_future``, next to the ``JobClient`` that returns it.
"""

from weir.core.completable_future import CompletableFuture

__all__ = ["CompletableFuture"]
