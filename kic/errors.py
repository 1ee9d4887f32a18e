"""Every exception kic raises on purpose, in one place.

All of them derive from :class:`KicError`, so ``except kic.KicError`` catches
anything the library reports about a model or a configuration.
"""
from __future__ import annotations

import copy
import re
from contextlib import contextmanager
from enum import IntEnum
from typing import Any

import numpy as np

__all__ = ["KicError", "ModelError", "SingularityError", "ClosureError", "Status"]


class Status(IntEnum):
    """Per-configuration outcome of a batched call made with ``on_failure="nan"``.

    Such calls return NaN where a configuration failed and say why here,
    instead of raising for the whole batch (optimizers and design sweeps want
    the rest of the batch).
    """

    OK = 0
    #: no closure found: outside the workspace, or not reachable from the
    #: reference along a path that stays in the model's assembly mode
    UNASSEMBLABLE = 1
    #: the closure's dependent-joint Jacobian is singular (condition above the limit)
    SINGULAR = 2
    #: the effective inertia I* or the actuation Jacobian is singular: the
    #: actuation Jacobian's (actuator rates per task rate, or its inverse's)
    #: dimensionless condition number at or above ``max_condition``
    #: (:data:`kic.settings.MAX_CONDITION`), one rule for a type I singularity
    #: (the edge of the workspace: actuator rates unbounded) and a type II
    #: (uncontrolled motion), in ``actuator_loads``, :mod:`kic.indices`, design
    #: batches and tasks (``mechanisms.five_bar_task``, ``inverse_rates``)
    SINGULAR_LOAD = 3
    #: the loops close only in another assembly mode than the model's
    OTHER_MODE = 4
    #: a joint is outside its limits (a range, a stroke, a cone angle:
    #: :mod:`kic.limits`), checked by every evaluation at a pose
    OUTSIDE_LIMITS = 5


class KicError(Exception):
    """Base class of the errors raised by kic.

    ``index``, where set, is the index of the offending configuration in the
    batch the caller passed (a tuple in the batch's shape).
    """

    index: tuple | None = None

    def in_batch(self, start: int, size: int, batch: tuple) -> "KicError":
        """The same error, raised for the block of configurations ``start`` to
        ``start + size`` (flat) of a batch of shape ``batch``, indexed in that batch."""
        if not batch or (self.index is None and size != 1):
            return self
        local = self.index[0] if self.index else 0
        index = tuple(int(i) for i in np.unravel_index(start + local, batch))
        message, found = _INDEX.subn(f"batch index {index}", str(self))
        new = copy.copy(self)
        new.args = (message if found else f"{message} at batch index {index}",)
        new.index = index
        return new


_INDEX = re.compile(r"batch index (\([^)]*\)|\d+)")


class ModelError(KicError, ValueError):
    """A model description or an input is invalid.

    The message names the joint, link, body or argument at fault and the
    offending value.  Derives from :class:`ValueError`, so code written against
    plain numpy/scipy conventions still catches it.
    """


class SingularityError(KicError, ArithmeticError):
    """A configuration is singular (or too close to singular) for the request.

    Attributes
    ----------
    sigma_min : float
        Smallest singular value of the matrix that had to be inverted.
    condition : float
        Its 2-norm condition number (``inf`` when exactly singular).
    where : Any
        What was singular: a description such as ``"effective inertia I*"`` or
        the loop and joints involved.
    index : tuple or None
        Index of the offending configuration in the batch, when batched.
    """

    def __init__(self, message: str, *, sigma_min: float = float("nan"),
                 condition: float = float("inf"), where: Any = None,
                 index: tuple | None = None) -> None:
        super().__init__(message)
        self.sigma_min = sigma_min
        self.condition = condition
        self.where = where
        self.index = index


class ClosureError(KicError, ArithmeticError):
    """A closed loop could not be assembled at the requested coordinates.

    Attributes
    ----------
    loop : Any
        The loop (its cut joint or name) that failed to close.
    residual : float
        Norm of the closure residual when the solver gave up (m or rad).
    index : tuple or None
        Index of the (first) offending configuration in the batch, when batched.
    indices : list of tuple
        Every failing configuration of the batch (empty when not batched).
    status : list of Status
        Why each of ``indices`` failed.
    """

    def __init__(self, message: str, *, loop: Any = None,
                 residual: float = float("nan"), index: tuple | None = None,
                 indices: list | None = None, status: list | None = None) -> None:
        super().__init__(message)
        self.loop = loop
        self.residual = residual
        self.index = index
        self.indices = list(indices or [])
        self.status = list(status or [])


@contextmanager
def located(batch: tuple, size: int, start: int = 0):
    """Re-raise a SingularityError or ClosureError of configurations ``start`` to
    ``start + size`` (flat) with its index in the caller's ``batch`` shape (internal)."""
    try:
        yield
    except (SingularityError, ClosureError) as exc:
        raise exc.in_batch(start, size, batch) from None


def at_batch_indices(indices: list, batched: bool) -> str:
    """`` at batch index (2,)`` or `` at batch indices (2,), (5,) ... and 3 more``
    (the first ten), for a message; empty for one configuration (internal)."""
    if not batched:
        return ""
    if len(indices) == 1:
        return f" at batch index {indices[0]}"
    return f" at batch indices {', '.join(str(i) for i in indices[:10])}" + (
        f" and {len(indices) - 10} more" if len(indices) > 10 else "")
