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
from scipy.integrate import solve_ivp

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


def simulate(model, t_span, q0, qd0, tau=None, loads=None, method: str = "LSODA",
             rtol: float = 1e-9, atol: float = 1e-11, t_eval=None,
             max_step: float = np.inf) -> Simulation:
    """Integrate ``q'' = I*^-1 (T - q'^T P* q' - T_L)`` from (q0, qd0).

    Parameters
    ----------
    model : SerialChain or any model with ``forward_dynamics`` and ``dynamics``
    t_span : (float, float)
        Start and end times (s).
    q0, qd0 : array_like, shape (M,)
        Initial coordinates and rates.
    tau : None, array_like (M,) or callable ``tau(t, q, qd) -> (M,)``
        Input loads (N m / N); ``None`` for a free motion.
    loads : kic.Loads, optional
        Applied loads (gravity is always included through the model).
    method : str
        Any :func:`scipy.integrate.solve_ivp` method; default LSODA (Adams).
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
    if callable(tau):
        tau_fn: Callable = tau
    elif tau is None:
        zero = np.zeros(M)
        tau_fn = lambda t, q, qd: zero                     # noqa: E731
    else:
        tau_c = finite_array(tau, "tau", (M,))
        tau_fn = lambda t, q, qd: tau_c                    # noqa: E731

    def rhs(t, x):
        q, qd = x[:M], x[M:]
        T = np.asarray(tau_fn(t, q, qd), dtype=float)
        if T.shape != (M,) or not np.all(np.isfinite(T)):
            raise ModelError(f"tau(t={t:g}) returned {T!r}, expected {M} finite values")
        return np.concatenate([qd, model.forward_dynamics(q, qd, T, loads=loads)])

    sol = solve_ivp(rhs, (t0, t1), np.concatenate([q0, qd0]), method=method,
                    rtol=rtol, atol=atol, t_eval=t_eval, max_step=max_step)
    if not sol.success:
        raise KicError(f"integration failed at t = {sol.t[-1]:g} s: {sol.message}")
    q, qd = sol.y[:M].T, sol.y[M:].T
    dyn = model.dynamics(q)
    energy = dyn.kinetic_energy(qd) + dyn.potential_energy
    if loads:
        energy = energy + dyn.loads_energy(loads)
    conservative = tau is None and (loads is None or loads.conservative)
    ke = dyn.kinetic_energy(qd)
    scale = max(abs(float(energy[0])), float(np.max(ke)), 1e-300)
    drift = float(np.max(np.abs(energy - energy[0]))) / scale
    return Simulation(sol.t, q, qd, energy, drift, conservative, int(sol.nfev))
