"""Smooth nominal trajectories with their derivatives up to third order.

Nominal motor voltages need the jerk q''' (seed eq. 2-239, 2-240), so a
trajectory here always carries (q, q', q'', q''') on a time grid, produced
analytically (quintic / minimum-jerk segments, quintic splines) so that no
one differentiates by hand.
"""
from __future__ import annotations

import numpy as np

from ._array import finite_array
from .errors import ModelError

__all__ = ["Trajectory"]


class Trajectory:
    """Samples of a motion: ``t`` (K,), ``q``, ``qd``, ``qdd``, ``qddd`` (K, M).

    Parameters
    ----------
    t : array_like, shape (K,)
        Strictly increasing times (s).
    q, qd, qdd : array_like, shape (K, M)
        Coordinates and their first two derivatives (SI).
    qddd : array_like, shape (K, M), optional
        The third derivative; needed for nominal voltages.

    Examples
    --------
    >>> import numpy as np, kic
    >>> tr = kic.Trajectory.quintic([0.0, 0.0], [1.0, -0.5], duration=2.0, samples=5)
    >>> tr.q[-1].tolist(), bool(np.all(tr.qd[[0, -1]] == 0)), bool(np.all(tr.qdd[[0, -1]] == 0))
    ([1.0, -0.5], True, True)
    """

    def __init__(self, t, q, qd, qdd, qddd=None) -> None:
        self.t = finite_array(t, "t")
        if self.t.ndim != 1 or self.t.size < 1:
            raise ModelError(f"t must be a 1-D array of times, got shape {self.t.shape}")
        if self.t.size > 1 and np.any(np.diff(self.t) <= 0):
            raise ModelError("t must be strictly increasing")
        K = self.t.size
        arrs = {}
        for name, x in (("q", q), ("qd", qd), ("qdd", qdd), ("qddd", qddd)):
            if x is None:
                arrs[name] = None
                continue
            x = finite_array(x, name)
            if x.ndim == 1:
                x = x[:, None]
            if x.ndim != 2 or x.shape[0] != K:
                raise ModelError(f"{name} must have shape ({K}, M) to match t, got {x.shape}")
            arrs[name] = x
        M = arrs["q"].shape[1]
        for name, x in arrs.items():
            if x is not None and x.shape[1] != M:
                raise ModelError(f"{name} has {x.shape[1]} coordinates but q has {M}")
        self.q, self.qd, self.qdd, self.qddd = (arrs[k] for k in ("q", "qd", "qdd", "qddd"))

    def __len__(self) -> int:
        return self.t.size

    @property
    def dof(self) -> int:
        return self.q.shape[1]

    def select(self, sel) -> "Trajectory":
        """The samples ``sel`` (a slice, an index array or a boolean mask; times
        stay increasing) as a new Trajectory."""
        pick = lambda x: None if x is None else x[sel]                 # noqa: E731
        return Trajectory(self.t[sel], self.q[sel], self.qd[sel], self.qdd[sel],
                          pick(self.qddd))

    def require_jerk(self, what: str = "nominal voltages") -> np.ndarray:
        if self.qddd is None:
            raise ModelError(f"{what} need the third derivative q''' of the trajectory: this "
                             "trajectory is not smooth enough (build it with quintic() or "
                             "spline(), or pass qddd)")
        return self.qddd

    @classmethod
    def quintic(cls, q0, q1, duration: float, samples: int = 101, t0: float = 0.0,
                ) -> "Trajectory":
        """Minimum-jerk (quintic) motion from rest at ``q0`` to rest at ``q1``.

        ``q = q0 + (q1 - q0) (10 s^3 - 15 s^4 + 6 s^5)``, ``s = (t - t0)/duration``.
        """
        q0 = np.atleast_1d(finite_array(q0, "q0"))
        q1 = np.atleast_1d(finite_array(q1, "q1"))
        if q0.shape != q1.shape or q0.ndim != 1:
            raise ModelError(f"q0 and q1 must be vectors of one length, got {q0.shape}, {q1.shape}")
        T = float(duration)
        if not T > 0:
            raise ModelError(f"duration must be > 0 s, got {duration!r}")
        if int(samples) < 2:
            raise ModelError("samples must be at least 2")
        t = t0 + np.linspace(0.0, T, int(samples))
        s = (t - t0) / T
        d = q1 - q0
        p = np.stack([10 * s**3 - 15 * s**4 + 6 * s**5, (30 * s**2 - 60 * s**3 + 30 * s**4) / T,
                      (60 * s - 180 * s**2 + 120 * s**3) / T**2,
                      (60 - 360 * s + 360 * s**2) / T**3])
        q = q0 + p[0][:, None] * d
        return cls(t, q, p[1][:, None] * d, p[2][:, None] * d, p[3][:, None] * d)

    @classmethod
    def spline(cls, times, points, samples: int = 201) -> "Trajectory":
        """A C^4 quintic spline through waypoints, starting and ending at rest.

        Parameters
        ----------
        times : array_like, shape (W,)
            Waypoint times (s), increasing.
        points : array_like, shape (W, M)
            Waypoints.
        samples : int
            Number of output samples, uniform in time.
        """
        from scipy.interpolate import make_interp_spline
        tw = finite_array(times, "times")
        pw = finite_array(points, "points")
        if pw.ndim == 1:
            pw = pw[:, None]
        if tw.ndim != 1 or pw.shape[0] != tw.size or tw.size < 2:
            raise ModelError(f"times ({tw.shape}) and points ({pw.shape}) must give W >= 2 "
                             "waypoints")
        if np.any(np.diff(tw) <= 0):
            raise ModelError("waypoint times must be strictly increasing")
        zero = [(1, np.zeros(pw.shape[1])), (2, np.zeros(pw.shape[1]))]
        spl = make_interp_spline(tw, pw, k=5, bc_type=(zero, zero))
        t = np.linspace(tw[0], tw[-1], int(samples))
        return cls(t, spl(t), spl(t, 1), spl(t, 2), spl(t, 3))

    def __repr__(self) -> str:
        return (f"<Trajectory {len(self)} samples over [{self.t[0]:g}, {self.t[-1]:g}] s, "
                f"{self.dof} coordinates{'' if self.qddd is not None else ', no jerk'}>")
