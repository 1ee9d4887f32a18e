"""Workspace sampling: which task points a mechanism reaches, in its mode and
within its joint limits, and how well conditioned it is there.

Two entry points, both batched over task points of any leading shape:

* :func:`point_workspace`: a model in actuated coordinates (e.g. the five-bar
  in its cranks), the task a point on a body (the tip).  The actuated
  coordinates at each task point come from ``inverse`` (a closed-form inverse
  kinematics ``inverse(points) -> (q, status)``, e.g. ``model.geometry.inverse``
  of the five-bar) or, by default, from Newton assembly of the same mechanism
  modelled in the point's coordinates (:class:`kic.PointPosition`).  Each
  answer is then assembled by the model itself (its assembly mode, its joint
  limits) and conditioned with :func:`kic.indices.point_conditioning`.
* :func:`pose_workspace`: a model whose coordinates are the task (e.g. the
  Stewart platform in its platform pose), sampled over positions at a fixed
  orientation: assembled by the model (mode, limits), conditioned with
  :func:`kic.indices.task_conditioning`.

Both return a :class:`Workspace` (arrays only; :func:`kic.plot.workspace_map`
draws one).  :func:`grid` builds the task points of a regular grid.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from . import indices
from .coordinates import PointPosition
from .errors import ModelError, Status

__all__ = ["Workspace", "grid", "point_workspace", "pose_workspace"]


@dataclass(frozen=True)
class Workspace:
    """A sampled workspace (shapes (...) of the task points given).

    Attributes
    ----------
    points : ndarray (..., D)
        The task points (m).
    q : ndarray (..., M)
        The model's coordinates there (NaN where not reached).
    status : ndarray of int (...)
        :class:`kic.Status`: OK, UNASSEMBLABLE (out of reach), OTHER_MODE
        (reached only in another mode), OUTSIDE_LIMITS.
    condition : ndarray (...)
        Dimensionless condition number of the homogeneous actuation Jacobian
        (:attr:`kic.indices.Conditioning.condition`); NaN where not reached,
        ``inf`` at a singularity.
    length : float
        The characteristic length (m) that made the Jacobians homogeneous.
    """

    points: np.ndarray
    q: np.ndarray
    status: np.ndarray
    condition: np.ndarray
    length: float

    @property
    def reachable(self) -> np.ndarray:
        """Reached in the mode and within the limits (bool, ...)."""
        return self.status == Status.OK

    def conditioned(self, bound: float) -> np.ndarray:
        """Reachable with a condition number at most ``bound`` (bool, ...)."""
        with np.errstate(invalid="ignore"):
            return self.reachable & (self.condition <= float(bound))

    def map(self, bound: float | None = None) -> np.ndarray:
        """The condition number where reachable (and at most ``bound`` when
        given), NaN elsewhere: the values of :func:`kic.plot.workspace_map`."""
        keep = self.reachable if bound is None else self.conditioned(bound)
        return np.where(keep, self.condition, np.nan)


def grid(*axes) -> np.ndarray:
    """Task points of a regular grid: ``grid(x, y)`` (ny, nx, 2) with
    ``points[i, j] = (x[j], y[i])`` (the layout of
    :func:`kic.plot.workspace_map`); ``grid(x, y, z)`` (ny, nx, nz, 3)."""
    if not 1 <= len(axes) <= 3:
        raise ModelError(f"grid takes one to three axes, got {len(axes)}")
    arrays = []
    for k, a in enumerate(axes):
        a = np.asarray(a, dtype=float).reshape(-1)
        if a.size == 0 or not np.all(np.isfinite(a)):
            raise ModelError(f"grid axis {k} must be finite values, got {axes[k]!r}")
        arrays.append(a)
    return np.stack(np.meshgrid(*arrays, indexing="xy"), -1)


def _points(points, D: int | None, what: str) -> np.ndarray:
    p = np.asarray(points, dtype=float)
    if p.ndim == 0 or (D is not None and p.shape[-1] != D) or not np.all(np.isfinite(p)):
        raise ModelError(f"{what} must be finite, shape (..., {D}), got shape {p.shape}")
    return p


def point_workspace(model, points, body: str, point=(0.0, 0.0, 0.0), axes: str = "xy", *,
                    inverse: Callable | None = None, length: float | None = None,
                    reference=None) -> Workspace:
    """Reachable task points of a point on a body, and the conditioning there.

    Parameters
    ----------
    model : kic.ClosedModel
        In actuated coordinates (as many as task components).
    points : array_like (..., D)
        Task points (m), D = ``len(axes)``.
    body : str
    point : array_like (3,)
        The task point in the body frame (m).
    axes : str
        The world components of the task, e.g. ``"xy"``.
    inverse : callable, optional
        ``inverse(points (n, D)) -> (q (n, M), status (n,))``, e.g. the five-bar's
        ``model.geometry.inverse`` (which also names the working mode).
        Default: Newton assembly of the mechanism in the point's coordinates,
        from ``reference`` (joint values phi (N,) of ``model``, default its
        reference configuration), in the assembly mode found there.
    length : float, optional
        Characteristic length (m) of the indices; default the model's
        (``model.characteristic_length``).

    Returns
    -------
    Workspace
        ``status`` OK where the model, given the coordinates found, assembles in
        its mode within its limits; its own status otherwise.
    """
    D = len(axes)
    pts = _points(points, D, "points")
    batch = pts.shape[:-1]
    flat = pts.reshape(-1, D)
    n, M = flat.shape[0], model.dof
    if D != M:
        raise ModelError(f"point_workspace: {D} task components ({axes!r}) for a "
                         f"{M}-coordinate model; they must be as many")
    if inverse is not None:
        q, status = inverse(flat)
        q = np.asarray(q, dtype=float).reshape(n, M)
        status = np.asarray(status, int).reshape(n).copy()
    else:
        task = model.in_coordinates([PointPosition(body, point, axes)], reference=reference)
        phi, status = task.assemble(flat, on_failure="nan")
        q = phi[:, model.joint_indices(model.coordinate_names)]
        status = np.asarray(status, int).copy()
    return _finish(model, pts, batch, q, status, lambda qq, L: indices.point_conditioning(
        model, qq, body, point, axes, length=L, on_failure="nan"), length)


def pose_workspace(model, positions, orientation=(0.0, 0.0, 0.0), *,
                   actuators: Sequence[str] | None = None,
                   length: float | None = None) -> Workspace:
    """Reachable positions of a body at a fixed orientation, and the conditioning.

    Parameters
    ----------
    model : kic.ClosedModel
        Coordinates the task: position then orientation, e.g. a
        :class:`kic.BodyPose` (x, y, z, yaw, pitch, roll) such as the Stewart
        platform's.
    positions : array_like (..., P)
        Positions (m): the first P coordinates of the model.
    orientation : array_like (M - P,)
        The remaining coordinates (rad), the same at every point.
    actuators : sequence of str, optional
        The actuated joints of :func:`kic.indices.task_conditioning`; default
        ``model.actuators``.
    length : float, optional
        As in :func:`point_workspace`.

    Returns
    -------
    Workspace
        ``status`` of ``model.assemble`` (its mode and limits, e.g. the
        Stewart legs' stroke).
    """
    pos = _points(positions, None, "positions")
    rest = np.asarray(orientation, dtype=float).reshape(-1)
    M = model.dof
    if pos.shape[-1] + rest.size != M or not np.all(np.isfinite(rest)):
        raise ModelError(f"pose_workspace: positions (..., {pos.shape[-1]}) and orientation "
                         f"({rest.size},) must give the {M} coordinates "
                         f"{model.coordinate_names}")
    batch = pos.shape[:-1]
    flat = pos.reshape(-1, pos.shape[-1])
    q = np.concatenate([flat, np.broadcast_to(rest, (flat.shape[0], rest.size))], -1)
    return _finish(model, pos, batch, q, np.zeros(flat.shape[0], int),
                   lambda qq, L: indices.task_conditioning(model, qq, actuators,
                                                           length=L, on_failure="nan"), length)


def _finish(model, pts, batch, q, status, conditioning, length) -> Workspace:
    """Assemble the model at the found coordinates (mode, limits), condition the
    reachable ones, shape everything like the task points."""
    n = q.shape[0]
    good = np.nonzero(status == Status.OK)[0]
    if good.size:
        _, st = model.assemble(q[good], on_failure="nan")
        status[good] = st
    q = np.where((status == Status.OK)[:, None], q, np.nan)
    cond = np.full(n, np.nan)
    good = np.nonzero(status == Status.OK)[0]
    L = float("nan") if length is None else float(length)
    if good.size:
        # every point measured alike, with the model's length (or the one given);
        # a point whose closure is singular is data, not an exception for the map
        c = conditioning(q[good], length)
        cond[good] = c.condition
        st = np.asarray(c.status)
        status[good] = np.where(st == Status.SINGULAR_LOAD, status[good], st)
        L = float(np.asarray(c.length))
    return Workspace(pts, q.reshape(batch + (model.dof,)), status.reshape(batch),
                     cond.reshape(batch), L)
