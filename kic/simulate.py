"""Time simulation of a model's forward dynamics (seed eq. 2-146).

The seed recommends multistep predictor-corrector methods (Adams) over
single-step ones for their efficiency per function evaluation; the default
here is LSODA, which runs Adams while the problem is non-stiff and switches
to BDF when it becomes stiff.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, Radau

from ._array import finite_array
from .errors import KicError, ModelError

__all__ = ["simulate", "Simulation"]


@dataclass
class Simulation:
    """Result of :func:`simulate`.

    Attributes
    ----------
    t : ndarray, shape (K,)
        Times (s).
    q, qd : ndarray, shape (K, M)
        Coordinates and rates along the motion.
    phi : ndarray, shape (K, N)
        Every joint value along the motion (for a serial chain, q itself), as
        the integration tracked it: each step's assembly starts from the
        previous step's, so the record stays on the branch it integrated.
    energy : ndarray, shape (K,)
        Kinetic + gravitational potential + conservative-load potential (J).
    energy_drift : float
        ``max |E(t) - E(0)| / max(|E(0)|, max KE)``; meaningful (and expected
        near the integration tolerance) when :attr:`conservative` is true.
    conservative : bool
        No input load and only conservative applied loads.
    nfev : int
        Number of right-hand-side evaluations.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    energy: np.ndarray
    energy_drift: float
    conservative: bool
    nfev: int
    phi: np.ndarray | None = None


_METHODS = {"RK23": RK23, "RK45": RK45, "DOP853": DOP853, "Radau": Radau, "BDF": BDF,
            "LSODA": LSODA}


def simulate(model, t_span, q0, qd0, tau=None, loads=None, method: str = "LSODA",
             rtol: float = 1e-9, atol: float = 1e-11, t_eval=None,
             max_step: float = np.inf) -> Simulation:
    """Integrate ``q'' = I*^-1 (T - q'^T P* q' - T_L)`` from (q0, qd0).

    The integrator is stepped here (scipy's ``OdeSolver`` classes): after each
    accepted step a closed model's joint values are assembled starting from the
    previous step's, and every evaluation within a step starts from them too,
    so the motion stays on the assembly branch it started on; the joint values
    and energies recorded are those of the integrated states.

    Parameters
    ----------
    model : SerialChain or ClosedModel (any model with ``forward_dynamics`` and
        ``dynamics``)
    t_span : (float, float)
        Start and end times (s).
    q0, qd0 : array_like, shape (M,)
        Initial coordinates and rates.
    tau : None, array_like (M,) or callable ``tau(t, q, qd) -> (M,)``
        Input loads (N m / N); ``None`` for a free motion.
    loads : kic.Loads, optional
        Applied loads (gravity is always included through the model).
    method : str
        ``"LSODA"`` (Adams, switching to BDF when stiff; the default), ``"RK45"``,
        ``"RK23"``, ``"DOP853"``, ``"Radau"``, ``"BDF"``.
    rtol, atol : float
        Integration tolerances.
    t_eval : array_like, optional
        Output times; default: the solver's steps.

    Returns
    -------
    Simulation

    Examples
    --------
    >>> import mechanisms, kic
    >>> arm = mechanisms.planar_two_link()
    >>> sim = kic.simulate(arm, (0.0, 1.0), [0.3, -0.4], [0.0, 0.0])
    >>> sim.conservative, bool(sim.energy_drift < 1e-6)
    (True, True)
    """
    M = model.dof
    q0 = finite_array(q0, "q0", (M,))
    qd0 = finite_array(qd0, "qd0", (M,))
    t0, t1 = (float(x) for x in finite_array(t_span, "t_span", (2,)))
    if method not in _METHODS:
        raise ModelError(f"unknown integration method {method!r}; use one of {list(_METHODS)}")
    if callable(tau):
        tau_fn: Callable = tau
    elif tau is None:
        zero = np.zeros(M)
        tau_fn = lambda t, q, qd: zero                     # noqa: E731
    else:
        tau_c = finite_array(tau, "tau", (M,))
        tau_fn = lambda t, q, qd: tau_c                    # noqa: E731
    closed = hasattr(model, "assemble")        # a closed model tracks its joint values
    warm = {"phi": model.assemble(q0) if closed else None}
    extra = {"start": None} if closed else {}

    def rhs(t, x):
        q, qd = x[:M], x[M:]
        T = np.asarray(tau_fn(t, q, qd), dtype=float)
        if T.shape != (M,) or not np.all(np.isfinite(T)):
            raise ModelError(f"tau(t={t:g}) returned {T!r}, expected {M} finite values")
        if closed:
            extra["start"] = warm["phi"]
        return np.concatenate([qd, model.forward_dynamics(q, qd, T, loads=loads, **extra)])

    def track(q):
        """Joint values at q, assembled from the last tracked ones."""
        if not closed:
            return q
        warm["phi"] = model.assemble(q, start=warm["phi"])
        return warm["phi"]

    solver = _METHODS[method](rhs, t0, np.concatenate([q0, qd0]), t1, rtol=rtol, atol=atol,
                              max_step=max_step)
    times = None if t_eval is None else np.sort(finite_array(t_eval, "t_eval"))
    ts, ys, phis = [], [], []
    if times is None or (times.size and times[0] <= t0):
        ts.append(t0)
        ys.append(solver.y.copy())
        phis.append(warm["phi"] if closed else q0)
    while solver.status == "running":
        t_old = solver.t
        solver.step()
        if solver.status == "failed":
            raise KicError(f"integration failed at t = {solver.t:g} s")
        if times is not None:
            inside = times[(times > t_old) & (times <= solver.t)]
            if inside.size:
                dense = solver.dense_output()
                for te in inside:
                    y = dense(te)
                    ts.append(float(te))
                    ys.append(y)
                    phis.append(track(y[:M]))
        else:
            ts.append(solver.t)
            ys.append(solver.y.copy())
        phi_step = track(solver.y[:M])
        if times is None:
            phis.append(phi_step)
    t = np.array(ts)
    Y = np.array(ys).reshape(-1, 2 * M)
    q, qd = Y[:, :M], Y[:, M:]
    phi = np.array(phis).reshape(len(ts), -1)
    dyn = model.dynamics(q, start=phi) if closed else model.dynamics(q)
    ke = dyn.kinetic_energy(qd)
    energy = ke + dyn.potential_energy
    if loads:
        energy = energy + dyn.loads_energy(loads)
    conservative = tau is None and (loads is None or loads.conservative)
    scale = max(abs(float(energy[0])), float(np.max(ke)) if ke.size else 0.0, 1e-300)
    drift = float(np.max(np.abs(energy - energy[0]))) / scale if energy.size else 0.0
    return Simulation(t, q, qd, energy, drift, conservative, int(solver.nfev), phi)
