"""Time simulation of a model's forward dynamics (seed eq. 2-146).

The seed recommends multistep predictor-corrector methods (Adams) over
single-step ones for their efficiency per function evaluation; the default
here is LSODA, which runs Adams while the problem is non-stiff and switches
to BDF when it becomes stiff.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, Radau

from ._array import finite_array
from .errors import ClosureError, KicError, ModelError, SingularityError

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
    switches : list of (t, from, to, condition)
        Where a closed model's simulation changed its independent coordinates:
        the time (s), the coordinate names before and after, and the condition
        number that triggered it.
    """

    t: np.ndarray
    q: np.ndarray
    qd: np.ndarray
    energy: np.ndarray
    energy_drift: float
    conservative: bool
    nfev: int
    phi: np.ndarray | None = None
    switches: list = field(default_factory=list)


_METHODS = {"RK23": RK23, "RK45": RK45, "DOP853": DOP853, "Radau": Radau, "BDF": BDF,
            "LSODA": LSODA}


def simulate(model, t_span, q0, qd0, tau=None, loads=None, method: str = "LSODA",
             rtol: float = 1e-9, atol: float = 1e-11, t_eval=None,
             max_step: float = np.inf, switch_condition: float = 100.0) -> Simulation:
    """Integrate ``q'' = I*^-1 (T - q'^T P* q' - T_L)`` from (q0, qd0).

    The integrator is stepped here (scipy's ``OdeSolver`` classes): after each
    accepted step a closed model's joint values are assembled starting from the
    previous step's, and every evaluation within a step starts from them too,
    so the motion stays on the assembly branch it started on; the joint values
    and energies recorded are those of the integrated states.

    A closed model in joint coordinates (the five-bar's cranks) fails where the
    closure cannot be solved for the other joints, although the mechanism moves
    through such a configuration.  There the simulation switches to the set of
    independent joint coordinates in which the closure is best conditioned
    (generalized coordinate partitioning: Wehage and Haug 1982; Freeman and
    Tesar 1982), carrying the state across exactly (the rates through the
    transfer), and switches again, or back, only when the set in use passes
    ``switch_condition`` (dimensionless condition number of its dependent
    block).  :attr:`Simulation.switches` says where.  Only where every set is
    singular (the mechanism's own mobility changes: a bifurcation) does a
    :class:`kic.SingularityError` remain.

    Parameters
    ----------
    model : SerialChain or ClosedModel (any model with ``forward_dynamics`` and
        ``dynamics``)
    t_span : (float, float)
        Start and end times (s).
    q0, qd0 : array_like, shape (M,)
        Initial coordinates and rates.
    tau : None, array_like (M,) or callable ``tau(t, q, qd) -> (M,)``
        Input loads (N m / N) at the model's coordinates; ``None`` for a free
        motion.  (With an input, coordinates are not switched.)
    loads : kic.Loads, optional
        Applied loads (gravity is always included through the model).
    method : str
        ``"LSODA"`` (Adams, switching to BDF when stiff; the default), ``"RK45"``,
        ``"RK23"``, ``"DOP853"``, ``"Radau"``, ``"BDF"``.
    rtol, atol : float
        Integration tolerances.
    t_eval : array_like, optional
        Output times; default: the solver's steps.
    switch_condition : float
        Condition number of the coordinates in use above which a closed model
        looks for better ones (``inf``: never switch).

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
    closed = hasattr(model, "assembly")        # a closed model tracks its joint values
    switching = (closed and tau is None and np.isfinite(switch_condition)
                 and all(n in model.mechanism.primitive_joints for n in model.coordinate_names))
    times = None if t_eval is None else np.sort(finite_array(t_eval, "t_eval"))
    rec = _Record(model, closed)
    current = model
    phi = model.assemble(q0) if closed else None
    y = np.concatenate([q0, qd0])
    t = t0
    nfev = 0
    if times is None or (times.size and times[0] <= t0):
        rec.add(current, t0, y, phi)
    threshold = switch_condition
    while True:
        solver, warm = _solver(current, method, t, y, t1, rtol, atol, max_step, tau_fn,
                               callable(tau), loads, phi, closed)
        switch = None
        while solver.status == "running":
            t_old, y_old, phi_old = solver.t, solver.y.copy(), warm["phi"]
            try:
                solver.step()
            except (SingularityError, ClosureError):
                # a trial point of the step met the singularity of these coordinates
                # (or crossed it, into the other assembly mode they see)
                if not switching:
                    raise
                switch = (t_old, y_old, phi_old, np.inf)    # the coordinates failed in a step
                break
            if solver.status == "failed":
                raise KicError(f"integration failed at t = {solver.t:g} s")
            if times is not None:
                inside = times[(times > t_old) & (times <= solver.t)]
                if inside.size:
                    dense = solver.dense_output()
                    for te in inside:
                        yi = dense(te)
                        rec.add(current, float(te), yi, warm["track"](yi[:M])[0])
            phi_step, cond = warm["track"](solver.y[:M])
            if times is None:
                rec.add(current, solver.t, solver.y, phi_step)
            if switching and cond > threshold:
                switch = (solver.t, solver.y.copy(), phi_step, cond)
                break
        nfev += solver.nfev
        if switch is None:
            break
        t, ys, phis, cond = switch
        new = _better_coordinates(current, phis, cond, t)
        if new is None:                         # the set in use is still the best one
            if np.isfinite(cond):
                current_next = current
            else:
                names, best = current.best_coordinates(phis)
                raise SingularityError(
                    f"the coordinates {current.coordinate_names} fail at t = {t:g} s and no "
                    f"other set of joint coordinates does better (best dimensionless condition "
                    f"number {best:.3e}, for {names}): every set is singular there, so the "
                    "mechanism's own mobility changes (a bifurcation)", condition=float(best),
                    where="closure Jacobian (bifurcation)")
        else:
            current_next = new
        if current_next is not current:
            rate = current.joint_rates(ys[:M], ys[M:], start=phis)
            idx = current_next.joint_indices(current_next.coordinate_names)
            y = np.concatenate([phis[idx], rate[idx]])
            rec.switches.append((t, list(current.coordinate_names),
                                 list(current_next.coordinate_names), float(cond)))
            current = current_next
            M = current.dof
            threshold = switch_condition
        else:
            y = ys
            threshold = 10 * cond       # no better set: look again only if it grows 10x
        phi = phis
    return rec.result(model, loads, tau, nfev)



def _solver(model, method, t, y, t1, rtol, atol, max_step, tau_fn, check_tau, loads, phi,
            closed):
    """The integrator for one stretch in one set of coordinates, and its warm start."""
    M = model.dof
    warm = {"phi": phi}
    extra = {"start": None} if closed else {}

    def rhs(t, x):
        q, qd = x[:M], x[M:]
        T = tau_fn(t, q, qd)
        if check_tau:                  # a constant input was checked once, up front
            T = np.asarray(T, dtype=float)
            if T.shape != (M,) or not np.all(np.isfinite(T)):
                raise ModelError(f"tau(t={t:g}) returned {T!r}, expected {M} finite values")
        if closed:
            extra["start"] = warm["phi"]
        out = np.empty(2 * M)
        out[:M] = qd
        out[M:] = model.forward_dynamics(q, qd, T, loads=loads, **extra)
        return out

    def track(q):
        """Joint values at q assembled from the last tracked ones, and the condition
        number of the coordinates there."""
        if not closed:
            return q, 1.0
        fast = model.track(q, warm["phi"])
        if fast is not None:
            warm["phi"] = fast[0]
            return fast
        asm = model.assembly(q, start=warm["phi"])
        if asm.status != 0:
            model.assemble(q, start=warm["phi"])          # raises with the report
        warm["phi"] = asm.phi
        return asm.phi, float(asm.condition)

    warm["track"] = track
    solver = _METHODS[method](rhs, t, y, t1, rtol=rtol, atol=atol, max_step=max_step)
    return solver, warm


def _better_coordinates(model, phi, cond, t):
    """The model in the best-conditioned set of joint coordinates at phi, or None
    when the set in use is (about) as good; a SingularityError where every set is
    singular (the mechanism's mobility changes there)."""
    names, best = model.best_coordinates(phi)
    if not best < model.max_condition:
        raise SingularityError(
            f"the mechanism itself is singular at t = {t:g} s: every set of independent "
            f"joint coordinates is singular there (best dimensionless condition number "
            f"{best:.3e}), so its mobility changes (a bifurcation); no choice of "
            "coordinates continues the motion", condition=float(best),
            where="closure Jacobian (bifurcation)")
    if sorted(names) == sorted(model.coordinate_names) or not best < cond / 2:
        return None
    return model.in_coordinates(names, reference=phi, name=model.name)


class _Record:
    """The samples of a simulation, with the model (coordinates) of each."""

    def __init__(self, model, closed):
        self.closed = closed
        self.user = model.joint_indices(model.coordinate_names) if closed else None
        self.t, self.phi, self.rates, self.models = [], [], [], []
        self.switches: list = []

    def add(self, model, t, y, phi):
        M = model.dof
        self.t.append(float(t))
        self.models.append(model)
        if self.closed:
            self.phi.append(np.array(phi, float))
            self.rates.append((y[:M].copy(), y[M:].copy()))
        else:
            self.phi.append(y[:M].copy())
            self.rates.append((y[:M].copy(), y[M:].copy()))

    def result(self, model, loads, tau, nfev) -> "Simulation":
        K = len(self.t)
        t = np.array(self.t)
        phi = np.array(self.phi).reshape(K, -1)
        energy = np.zeros(K)
        ke = np.zeros(K)
        qd_user = np.zeros((K, model.dof))
        # energies and the user's rates, stretch by stretch in the coordinates used
        k = 0
        while k < K:
            m = self.models[k]
            j = k
            while j < K and self.models[j] is m:
                j += 1
            q = np.array([r[0] for r in self.rates[k:j]])
            qd = np.array([r[1] for r in self.rates[k:j]])
            dyn = m.dynamics(q, start=phi[k:j]) if self.closed else m.dynamics(q)
            ke[k:j] = dyn.kinetic_energy(qd)
            energy[k:j] = ke[k:j] + dyn.potential_energy
            if loads:
                energy[k:j] += dyn.loads_energy(loads)
            if m is model:
                qd_user[k:j] = qd
            else:
                qd_user[k:j] = m.joint_rates(q, qd, start=phi[k:j])[:, self.user]
            k = j
        q_user = phi[:, self.user] if self.closed else phi
        conservative = tau is None and (loads is None or loads.conservative)
        scale = max(abs(float(energy[0])), float(np.max(ke)) if K else 0.0, 1e-300)
        drift = float(np.max(np.abs(energy - energy[0]))) / scale if K else 0.0
        return Simulation(t, q_user, qd_user, energy, drift, conservative, int(nfev), phi,
                          self.switches)
