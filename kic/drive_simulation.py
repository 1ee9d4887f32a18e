"""Time simulation of a motor-driven plant (:class:`kic.ActuatedSystem`): the
mechanism, its rotors and its armatures under voltage sources, with the motors'
saturation, and the energy balance of both sides as its check.

``kic.simulate(plant, ...)`` comes here (:func:`simulate_drive`).  The state is
the plant's, ``x = (q, q', i)``, or ``(q, q')`` in the quasi-static model; the
input is the motor voltages: a controller ``voltage(t, x)`` (called at every
evaluation, or every ``period`` seconds and held), samples with their times
(held: a zero-order hold), a constant, or a :class:`kic.Trajectory` whose
nominal voltages are applied (open-loop nominal tracking).

Saturation is a hybrid system here, not a clip inside the equations: each motor
is in a voltage mode (free, or at +-``voltage_limit``) and a current mode
(free, or held at +-``current_limit``), the equations are smooth within a set
of modes (:meth:`ActuatedSystem.evaluate` with ``held``), and the switches are
events located on the integrator's dense output (a root of a smooth switching
function, to the root finder's precision) where the integration stops and
starts afresh in the new modes.  So the integrator never steps across a kink
or a jump of the right-hand side, and its error control holds on every
stretch; the held inputs switch at their sample times the same way.  The
switching functions (positive while a mode holds):

- voltage, free: ``voltage_limit - |v|``; at the limit: ``s v - voltage_limit``;
- current, free: ``current_limit - |i|`` (dynamic: the state; quasi-static:
  ``(v - C_E a') / R``); held at ``s current_limit``: ``s (v - v_hold)``, the
  amplifier's push against the voltage that holds the current (divided by R
  in the quasi-static model).

The energy balance (the electrical side included) is integrated with the
state, to the integration tolerance::

    supplied + input work = stored(t) - stored(0) + dissipated

``supplied = int v . i dt`` (the sources), ``input work = int q' . (tau -
T_L) dt`` (the input loads and the plant's applied loads: springs, dampers,
forces), ``stored`` = kinetic (mechanism and rotors) + gravitational
potential + magnetic ``i^T L i / 2``, ``dissipated`` = copper
``int i^T R i dt`` + rotor friction ``int a'^T B_r a' dt`` + the mismatch of a
motor whose torque and back-EMF constants differ (zero in SI units).
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.interpolate import CubicSpline
from scipy.optimize import brentq

from ._array import finite_array
from .actuators import ActuatedSystem
from .errors import ClosureError, ModelError, SingularityError, Status
from .model import ClosedLoopModel
from .settings import INTEGRATION_ATOL, INTEGRATION_RTOL, TINY
from .integration import (INTEGRATORS, RETRIES, RETRY_SHRINK, SHORT_STEPS, Simulation,
                          integration_options, integration_times)
from .trajectory import Trajectory

__all__ = ["simulate_drive", "DriveSimulation"]

_FLOWS = 5                  # supplied, input work, copper, rotor friction, conversion
_SETTLE = 8                 # mode switches at one instant before it is called chattering


@dataclass
class DriveSimulation(Simulation):
    """Result of :func:`kic.simulate` for a :class:`kic.ActuatedSystem`: the
    fields of :class:`kic.Simulation` (``energy`` the stored energy, see below)
    and, per sample:

    Attributes
    ----------
    currents : ndarray (K, Na)
        Armature currents (A): the state (dynamic model), or what the voltages
        and the back-EMF give (quasi-static), after saturation.
    voltages : ndarray (K, Na)
        Terminal voltages applied (V), after saturation.
    commanded : ndarray (K, Na)
        The voltages the source asked for (V).
    saturated : ndarray (K, Na) bool
        A motor at its voltage or current limit.
    energy : ndarray (K,)
        Stored energy (J): kinetic (mechanism and rotors) + gravitational
        potential + magnetic ``i^T L i / 2``.
    supplied, input_work, dissipated : ndarray (K,)
        Since the start (J): the electrical energy delivered by the sources
        ``int v . i dt``, the work of the input loads ``tau`` and of the plant's
        applied loads (springs, dampers, forces: ``-int q' . T_L dt``), and the copper and
        rotor friction losses (with the conversion mismatch of a motor whose
        torque and back-EMF constants differ).
    energy_drift : float
        The balance's largest error, ``max |supplied + input_work - (energy -
        energy[0]) - dissipated|``, over the largest of the energies exchanged
        and the kinetic energy: near the integration tolerance.
    conservative : bool
        True: the balance accounts for every flow, ``energy_drift`` is meaningful.
    events : list of (t, motor, quantity, state)
        Where a limit began or stopped acting: time (s), motor name,
        ``"voltage"`` or ``"current"``, ``+1``/``-1`` (at the limit of that sign)
        or 0 (free again).
    """

    currents: np.ndarray | None = None
    voltages: np.ndarray | None = None
    commanded: np.ndarray | None = None
    saturated: np.ndarray | None = None
    supplied: np.ndarray | None = None
    input_work: np.ndarray | None = None
    dissipated: np.ndarray | None = None
    events: list = field(default_factory=list)


def simulate_drive(plant: ActuatedSystem, t_span, q0, qd0, tau=None, loads=None,
                   method: str = "DOP853", rtol: float = INTEGRATION_RTOL,
                   atol: float = INTEGRATION_ATOL,
                   t_eval=None, max_step: float = np.inf, *, voltage=None, i0=None,
                   period: float | None = None, trajectory: Trajectory | None = None,
                   free_motion: Sequence[str] = ()) -> DriveSimulation:
    """Simulate a motor-driven plant; :func:`kic.simulate` with an
    :class:`kic.ActuatedSystem` as the model calls this.

    Parameters
    ----------
    plant : kic.ActuatedSystem
    t_span : (float, float)
        Start and end times (s).
    q0, qd0 : array_like (M,) or None
        Initial coordinates and rates; None with a trajectory as ``voltage``:
        the trajectory's at the start.
    tau : None, array_like (M,) or callable ``tau(t, q, qd) -> (M,)``
        Input loads at the model's coordinates besides the motors (N m / N).
    loads : None
        The plant's own ``loads`` apply; give them to the ActuatedSystem.
    method, rtol, atol, t_eval, max_step
        As :func:`kic.simulate` (``"Radau"``, ``"BDF"`` or ``"LSODA"`` for a
        stiff plant: the armature poles ``-R/L``).
    voltage : None, array_like (Na,), callable, (times, values) or Trajectory
        The motor voltages (V): None is the nominal voltages of ``trajectory``,
        or without one 0 V (the terminals shorted); an array
        a constant; a callable ``voltage(t, x) -> (Na,)`` a controller of the
        state ``x`` (continuous, or sampled every ``period`` and held); a pair
        ``(times (K,), values (K, Na))`` samples held from each time to the
        next (and the last beyond); a :class:`kic.Trajectory` its nominal
        voltages (:meth:`ActuatedSystem.nominal`, a cubic spline between its
        samples; beyond a motor's limits with a :class:`DriveWarning`).
    i0 : array_like (Na,), optional
        Initial currents (A) of the dynamic model; default zero, or the nominal
        currents at the start with a trajectory.
    period : float, optional
        The controller's sample period (s): ``voltage(t, x)`` called at
        ``t0 + k period`` and held (a zero-order hold, as a digital controller).
    trajectory : kic.Trajectory, optional
        With no ``voltage``: nominal tracking, as ``voltage=trajectory``.
    free_motion : sequence of str
        The options of :func:`kic.simulate` for a mechanism's free motion that the
        caller gave other than their defaults (``switch_condition``,
        ``bifurcation``, ``max_steps``, ``wall_time``, ``on_limit``): a plant does
        not take them (its coordinates are the motors' and its limits the
        motors'), so any is a ModelError rather than silently ignored.

    Returns
    -------
    DriveSimulation
    """
    if free_motion:
        raise ModelError(f"{', '.join(free_motion)}: options of a mechanism's free motion, "
                         "which a motor-driven plant does not take; leave them at their "
                         "defaults")
    if trajectory is not None:
        if voltage is not None:
            raise ModelError("give voltage or trajectory (nominal tracking), not both")
        if not isinstance(trajectory, Trajectory):
            raise ModelError(f"trajectory must be a kic.Trajectory, got {type(trajectory)}")
        voltage = trajectory
    drive = _options(plant, t_span, q0, qd0, tau, loads, method, rtol, atol, t_eval,
                     max_step, voltage, i0, period)
    return _Integration(drive).run()


@dataclass(frozen=True)
class _Drive:
    """The checked options of one simulation."""

    plant: ActuatedSystem
    t0: float
    t1: float
    x0: np.ndarray
    method: str
    rtol: float
    atol: float
    max_step: float
    times: np.ndarray | None          # output times, or None: the solver's steps
    continuous: Callable | None       # v(t, x) evaluated everywhere, or None: held
    held: Callable | None             # v at a segment's start (t, x), held over it
    boundaries: np.ndarray            # where held inputs switch, in (t0, t1)
    tau: Callable | None


def _options(plant, t_span, q0, qd0, tau, loads, method, rtol, atol, t_eval, max_step,
             voltage, i0, period) -> _Drive:
    if not isinstance(plant, ActuatedSystem):
        raise ModelError(f"voltage, i0, period and trajectory are inputs of a "
                         f"kic.ActuatedSystem, not of "
                         f"{type(plant).__name__}")
    if loads is not None:
        raise ModelError("a motor-driven plant carries its loads: give them to "
                         "kic.ActuatedSystem(..., loads=...), not to simulate")
    M, Na = plant.model.dof, plant.n_motors
    t0, t1, times = integration_times(t_span, t_eval)
    integration_options(method, rtol, atol, max_step, plant.n_states)
    names = plant.motor_names
    continuous = held = None
    boundaries = np.zeros(0)
    start_current = None
    if period is not None:
        period = float(finite_array(period, "period", ()))
        if not period > 0 or not callable(voltage):
            raise ModelError(f"period must be a positive time (s) for a controller "
                             f"voltage(t, x), got {period!r} with {type(voltage).__name__}")
    if isinstance(voltage, Trajectory):
        tr = voltage
        if tr.dof != M or len(tr) < 2 or not tr.t[0] <= t0 < t1 <= tr.t[-1]:
            raise ModelError(f"voltage: the trajectory ({tr.dof} coordinates, t = {tr.t[0]:g} "
                             f"to {tr.t[-1]:g} s) must have the model's {M} coordinates and "
                             f"cover t_span {t0:g} to {t1:g} s")
        nominal = plant.nominal(tr, on_limit="warn")
        spline = CubicSpline(tr.t, nominal.voltage, axis=0)
        continuous = lambda t, x: spline(t)                               # noqa: E731
        at = lambda x: CubicSpline(tr.t, x, axis=0)(t0)                  # noqa: E731
        k = int(np.searchsorted(tr.t, t0))
        if tr.t[k] == t0:                                   # a sample: exactly
            at = lambda x: x[k]                                           # noqa: E731
        start_current = at(nominal.current)
        if q0 is None and qd0 is None:
            q0, qd0 = at(tr.q), at(tr.qd)
    elif callable(voltage):
        checked = _checked_source(voltage, Na, names)
        if period is None:
            continuous = checked
        else:
            held = checked
            boundaries = t0 + period * np.arange(1, int(np.ceil((t1 - t0) / period)) + 1)
    elif isinstance(voltage, tuple):
        if len(voltage) != 2:
            raise ModelError("voltage samples are a pair (times (K,), values (K, Na))")
        sample_t = finite_array(voltage[0], "voltage times")
        sample_v = finite_array(voltage[1], "voltage values")
        if (sample_t.ndim != 1 or sample_v.shape != (sample_t.size, Na) or sample_t.size == 0
                or np.any(np.diff(sample_t) <= 0)):
            raise ModelError(f"voltage samples: times must be increasing (K,) and values "
                             f"(K, {Na}) for motors {names}; got {sample_t.shape}, "
                             f"{sample_v.shape}")
        if t0 < sample_t[0]:
            raise ModelError(f"voltage samples start at t = {sample_t[0]:g} s, after the start "
                             f"{t0:g} s")
        held = lambda t, x: sample_v[np.searchsorted(sample_t, t, side="right") - 1]  # noqa
        boundaries = sample_t
    else:
        constant = np.zeros(Na) if voltage is None else finite_array(voltage, "voltage", (Na,))
        held = lambda t, x: constant                                      # noqa: E731
    boundaries = boundaries[(boundaries > t0) & (boundaries < t1)]
    if q0 is None or qd0 is None:
        raise ModelError("q0 and qd0 are needed (None only with a trajectory as voltage)")
    x0 = [finite_array(q0, "q0", (M,)), finite_array(qd0, "qd0", (M,))]
    if plant.electrical == "dynamic":
        i0 = (start_current if i0 is None and start_current is not None
              else np.zeros(Na) if i0 is None else finite_array(i0, "i0", (Na,)))
        over = np.abs(i0) > plant.current_limits
        if over.any():
            raise ModelError(f"i0: the initial currents {i0} exceed the current limits of "
                             f"motors {[n for n, o in zip(names, over) if o]}")
        x0.append(np.asarray(i0, dtype=float))
    elif i0 is not None:
        raise ModelError("i0: the quasi-static model has no current states")
    tau_fn = None
    if callable(tau):
        tau_fn = _checked_load(tau, M)
    elif tau is not None:
        tau_c = finite_array(tau, "tau", (M,))
        tau_fn = lambda t, q, qd: tau_c                                   # noqa: E731
    return _Drive(plant, t0, t1, np.concatenate(x0), method, rtol, atol, max_step, times,
                  continuous, held, boundaries, tau_fn)


def _checked_source(fn, Na, names) -> Callable:
    def source(t, x):
        v = np.asarray(fn(t, x.copy()), dtype=float)
        if v.shape != (Na,) or not np.all(np.isfinite(v)):
            raise ModelError(f"voltage(t={t:g}, x) returned {v!r}: expected {Na} finite "
                             f"voltages (V) for motors {names}")
        return v
    return source


def _checked_load(fn, M) -> Callable:
    def load(t, q, qd):
        T = np.asarray(fn(t, q.copy(), qd.copy()), dtype=float)
        if T.shape != (M,) or not np.all(np.isfinite(T)):
            raise ModelError(f"tau(t={t:g}) returned {T!r}, expected {M} finite values")
        return T
    return load


class _Integration:
    """The hybrid integration: stretches of smooth equations between switches."""

    def __init__(self, drive: _Drive) -> None:
        self.d = drive
        p = self.p = drive.plant
        self.n, self.M, self.Na = p.n_states, p.model.dof, p.n_motors
        self.dynamic = p.electrical == "dynamic"
        self.vmax, self.imax = p.voltage_limits, p.current_limits
        self.vlim = np.where(np.isfinite(self.vmax), self.vmax, 0.0)
        self.limited = bool(np.isfinite(self.vmax).any() or np.isfinite(self.imax).any())
        self.R = np.diag(p.R).copy()
        self.sv = np.zeros(self.Na, dtype=int)        # voltage modes
        self.si = np.zeros(self.Na, dtype=int)        # current modes
        self.v_held = None
        self.limit, self.retries = None, 0            # shorter steps after a failed trial
        self.recent = None                            # the last accepted step size (s)
        self.last = None                              # the last evaluation (FSAL reuse)
        self.end = drive.t1                           # the end of the held input's segment
        self.phi = None                               # joint values for the applied loads
        self.samples: list = []
        self.events: list = []
        self.nfev = 0

    # ------------------------------------------------------------ equations
    def command(self, t, x):
        """The voltages the source asks for at (t, x)."""
        return self.v_held if self.v_held is not None else self.d.continuous(t, x)

    def point(self, t, y) -> tuple:
        """(DriveState, commanded v, applied-by-mode v, flows) at (t, y)."""
        x = y[:self.n]
        v = self.command(t, x)
        v_mode = np.where(self.sv != 0, self.sv * self.vlim, v)
        M = self.M
        T = None if self.d.tau is None else self.d.tau(t, x[:M], x[M:2 * M])
        st = self.p.evaluate(t, x, v_mode, None if T is None else -T, held=self.si)
        i, ad = st.current, st.actuator_rates
        tm = self.p.C_M @ i
        flows = np.array([st.voltage @ i, self.work(x, T),
                          self.R @ (i * i), ad @ self.p.B_r @ ad,
                          i @ (self.p.C_E @ ad) - tm @ ad])
        return st, v, v_mode, flows

    def work(self, x, T) -> float:
        """The power of the input loads T and of the plant's applied loads (W)."""
        q, qd = x[:self.M], x[self.M:2 * self.M]
        power = 0.0 if T is None else float(qd @ T)
        loads = self.p.loads
        if loads:
            model = self.p.model
            if isinstance(model, ClosedLoopModel):
                self.phi = np.asarray(model.assemble(q, start=self.phi), float).reshape(-1)
                dyn = model.dynamics(q, start=self.phi)
            else:
                dyn = model.dynamics(q)
            power -= float(qd @ np.asarray(dyn.load(loads, qd)).reshape(-1))
        return power

    def rhs(self, t, y):
        """The state's and the energy flows' rates."""
        out = self.point(t, y)
        self.last = (t, y.copy(), out)
        return np.concatenate([out[0].rate, out[3]])

    def at(self, t, y) -> tuple:
        """:meth:`point`, the last evaluation's when it was there (a step's end)."""
        last = self.last
        if last is not None and last[0] == t and np.array_equal(last[1], y):
            return last[2]
        return self.point(t, y)

    def switching(self, t, y) -> np.ndarray:
        """The switching functions (2 Na,): voltage modes, current modes."""
        st, v, v_mode, _ = self.at(t, y)
        gv = np.where(self.sv == 0, self.vmax - np.abs(v), self.sv * v - self.vmax)
        current = y[2 * self.M:self.n] if self.dynamic else st.current
        push = self.si * (v_mode - st.voltage) * (1.0 if self.dynamic else 1.0 / self.R)
        gi = np.where(self.si == 0, self.imax - np.abs(current), push)
        return np.concatenate([gv, gi])

    def toggle(self, t, y, which) -> np.ndarray:
        """Switch the modes whose functions are negative; the state there (a current
        reaching its limit is put on it exactly)."""
        t = float(t)
        st, v, _, _ = self.at(t, y)
        y = y.copy()
        for k in np.nonzero(which)[0]:
            a = k % self.Na
            if k < self.Na:
                self.sv[a] = int(np.sign(v[a])) if self.sv[a] == 0 else 0
                self.events.append((t, self.p.motor_names[a], "voltage", int(self.sv[a])))
                continue
            if self.si[a] == 0:
                if self.dynamic:
                    j = 2 * self.M + a
                    self.si[a] = int(np.sign(y[j]))
                    y[j] = self.si[a] * self.imax[a]
                else:
                    self.si[a] = int(np.sign(st.current[a]))
            else:
                self.si[a] = 0
            self.events.append((t, self.p.motor_names[a], "current", int(self.si[a])))
        recent = [e for e in self.events[-_SETTLE * 2 * self.Na:] if e[0] == t]
        if len(recent) >= _SETTLE * 2 * self.Na:
            raise ModelError(f"t = {t:.6g} s: the motors' limits switch back and forth without "
                             "end (a controller that chatters at a limit)")
        self.last = None
        return y

    def settle(self, t, y):
        """Modes consistent with the state at t (every switching function >= 0)."""
        if not self.limited:
            return y
        while True:             # toggle() stops a switching without end
            g = self.switching(t, y)
            if not (g < 0).any():
                return y
            y = self.toggle(t, y, g < 0)

    # ------------------------------------------------------------ the loop
    def run(self) -> DriveSimulation:
        """Segment by segment of the held inputs (one segment for a continuous
        source); a sample at a switching time of the input is taken after the
        switch (the input held from there on, as a zero-order hold)."""
        d = self.d
        y = np.concatenate([d.x0, np.zeros(_FLOWS)])
        t = d.t0
        for n, end in enumerate(list(d.boundaries) + [d.t1]):
            if d.held is not None:
                self.v_held = d.held(t, y[:self.n].copy())
            self.last = None
            y = self.settle(t, y)
            # the start is the balance's reference (dropped later if not asked for)
            if n == 0 or d.times is None or np.any(d.times == t):
                self.record(t, y)
            self.end = end
            while t < end:
                t, y = self.stretch(t, y, end)
        return self.result()

    def stretch(self, t, y, end):
        """Integrate from t towards ``end`` until the end or the first switch;
        returns where it stopped (modes switched there).  A trial point where the
        model fails (a configuration that does not assemble, beyond a large trial
        step) is tried again in shorter steps from the last accepted one, as
        :func:`kic.simulate` does."""
        d = self.d
        max_step, stop = d.max_step, end
        # the last accepted step size as the first (no initial-step search at each of a
        # held input's samples)
        first = None if self.recent is None else min(self.recent, max_step, stop - t)
        if self.limit is not None:
            max_step = min(max_step, self.limit)
            stop = min(end, t + SHORT_STEPS * self.limit)
            first = min(self.limit, stop - t)
        solver = INTEGRATORS[d.method](self.rhs, t, y, stop, rtol=d.rtol, atol=d.atol,
                                    max_step=max_step, first_step=first)
        try:
            while solver.status == "running":
                t_old, y_old = solver.t, solver.y.copy()
                try:
                    message = solver.step()
                except (ClosureError, SingularityError) as err:   # the model fails there
                    if Status.OUTSIDE_LIMITS in getattr(err, "status", ()):
                        # a joint limit is no failure of the step: shorter steps reach it too
                        raise ClosureError(f"the drive simulation reaches a joint limit in a "
                                           f"step after t = {t_old:.6g} s: {err}",
                                           status=[Status.OUTSIDE_LIMITS]) from None
                    if self.retries >= RETRIES:     # (not an input's error: those raise)
                        raise
                    self.retries += 1
                    tried = getattr(solver, "h_abs", None) or solver.step_size or (stop - t)
                    self.limit = tried / RETRY_SHRINK
                    self.last = None
                    return t_old, y_old
                if solver.status == "failed":
                    raise ModelError(f"the integration failed at t = {solver.t:.6g} s: {message}")
                t_new, y_new = solver.t, solver.y
                self.recent = getattr(solver, "h_abs", None) or solver.step_size
                if self.limited:
                    g = self.switching(t_new, y_new)
                    if (g < 0).any():
                        dense = solver.dense_output()
                        t_s = self.locate(dense, t_old, t_new, g < 0)
                        self.record_between(lambda: dense, t_old, t_s)
                        y_s = self.settle(t_s, dense(t_s))
                        if d.times is None:
                            self.record(t_s, y_s)
                        return t_s, y_s
                if d.times is None:
                    if t_new < self.end or self.end == d.t1:    # else: after the switch
                        self.record(t_new, y_new)
                else:
                    self.record_between(solver.dense_output, t_old, t_new)
        finally:
            self.nfev += solver.nfev
        self.limit, self.retries = None, 0       # the short steps have carried it past
        return solver.t, solver.y.copy()

    def locate(self, dense, t_old, t_new, which) -> float:
        """The first switch in (t_old, t_new]: the earliest root of the switching
        functions that turned negative, taken where the old mode no longer holds."""
        t_s = t_new
        for k in np.nonzero(which)[0]:
            g = lambda s: self.switching(s, dense(s))[k]                     # noqa: E731
            root = t_old if g(t_old) <= 0 else brentq(g, t_old, t_new)
            step = max(abs(root), 1.0) * np.finfo(float).eps
            while root < t_new and g(root) >= 0:
                root = min(root + step, t_new)
                step *= 2
            t_s = min(t_s, root)
        self.last = None
        return t_s

    # ------------------------------------------------------------ records
    def record_between(self, dense, t_old, t_new):
        """The output times in (t_old, t_new] from the step's dense output
        (``dense()`` gives it)."""
        times = self.d.times
        if times is None:
            return
        inside = times[(times > t_old) & (times <= t_new)
                       & ((times < self.end) | (self.end == self.d.t1))]
        if inside.size:
            fn = dense()
            for s in inside:
                self.record(float(s), fn(s))

    def record(self, t, y):
        st, v, _, _ = self.at(t, y)
        self.samples.append((float(t), y[:self.n].copy(), y[self.n:].copy(), v.copy(),
                             st.voltage.copy(), st.current.copy(), st.saturated.copy(),
                             st.actuator_rates.copy()))

    def result(self) -> DriveSimulation:
        p, model, M = self.p, self.p.model, self.M
        cols = list(zip(*self.samples)) if self.samples else [[]] * 8
        K = len(self.samples)
        shape = lambda c, w: np.array(c, dtype=float).reshape(K, w)          # noqa: E731
        t = np.array(cols[0], dtype=float)
        x, flows = shape(cols[1], self.n), shape(cols[2], _FLOWS)
        commanded, voltages, currents = (shape(c, self.Na) for c in cols[3:6])
        saturated = np.array(cols[6], dtype=bool).reshape(K, self.Na)
        ad = shape(cols[7], self.Na)
        q, qd = x[:, :M], x[:, M:2 * M]
        phi = _joint_values(model, q) if isinstance(model, ClosedLoopModel) else q.copy()
        stored = np.zeros(K)
        kinetic = np.zeros(K)
        if K:
            dyn = (model.dynamics(q, start=phi) if isinstance(model, ClosedLoopModel)
                   else model.dynamics(q))
            kinetic = (np.asarray(dyn.kinetic_energy(qd)).reshape(K)
                       + 0.5 * np.einsum("na,ab,nb->n", ad, p.I_r, ad))
            stored = kinetic + np.asarray(dyn.potential_energy).reshape(K)
            if self.dynamic:
                stored = stored + 0.5 * np.einsum("na,ab,nb->n", currents, p.L, currents)
        supplied, work = flows[:, 0], flows[:, 1]
        dissipated = flows[:, 2:].sum(axis=1)
        error = supplied + work - (stored - stored[:1]) - dissipated if K else stored
        scale = max(float(np.max(np.abs(np.concatenate([supplied, work, dissipated, kinetic])),
                                 initial=0.0)), TINY)
        drift = float(np.max(np.abs(error), initial=0.0)) / scale
        keep = slice(0, K)
        if self.d.times is not None and not (self.d.times.size and self.d.times[0] == t[0]):
            keep = slice(1, K)
        t, q, qd, stored, phi = t[keep], q[keep], qd[keep], stored[keep], phi[keep]
        currents, voltages, commanded = currents[keep], voltages[keep], commanded[keep]
        saturated, supplied, work, dissipated = (saturated[keep], supplied[keep], work[keep],
                                                 dissipated[keep])
        return DriveSimulation(t, q, qd, stored, drift, True, int(self.nfev), phi,
                               currents=currents, voltages=voltages, commanded=commanded,
                               saturated=saturated, supplied=supplied, input_work=work,
                               dissipated=dissipated, events=self.events)


def _joint_values(model, q) -> np.ndarray:
    """Every joint value along the samples, each assembled from the last (the
    branch the motion is on)."""
    phi = np.empty((q.shape[0], len(model.phi_names)))
    start = None
    for k in range(q.shape[0]):
        start = phi[k] = np.asarray(model.assemble(q[k], start=start), dtype=float).reshape(-1)
    return phi
