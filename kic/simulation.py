"""Time simulation of a model's forward dynamics (seed eq. 2-146).

The seed recommends multistep predictor-corrector methods (Adams) over
single-step ones for their efficiency per function evaluation; LSODA runs
Adams while the problem is non-stiff and switches to BDF when it becomes
stiff.  The default is DOP853, for the tight tolerances mechanisms are
simulated at.

:func:`simulate` is a loop over stretches of integration in one set of
coordinates (``_integrate``); the state between them (``_Motion``: the model in
use, the time and state, and what the switching policy remembers) changes
where a stretch must leave its coordinates (``_leave``): a switch to better
ones, a crossing of a singular configuration of the mechanism, or shorter
steps.  The policy's thresholds are in :mod:`kic.settings`, its counts and
factors below.
"""
from __future__ import annotations

import time
import warnings
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field, replace

import numpy as np

from ._array import finite_array
from .assembly import in_mode
from .errors import ClosureError, KicError, ModelError, SingularityError, Status
from .integration import (INTEGRATORS, RETRIES, RETRY_SHRINK, SHORT_STEPS, Simulation,
                          SimulationWarning, integration_options, integration_times)
from .model import ClosedLoopModel
from .simulate_limits import (BeyondLimit, LimitCrossed, limit_text, limits_of, nearest_limit,
                              without_limits)
from .settings import (BRIDGE_CONDITION, CROSSING_RTOL, LANDING_TOLERANCE, SWITCH_CONDITION,
                       INTEGRATION_ATOL, INTEGRATION_RTOL, LAST_RESORT_CROSSING_RTOL, TINY)

__all__ = ["simulate", "Simulation", "SimulationWarning", "INTEGRATORS", "integration_times",
           "integration_options"]


#: the policy of a closed model's simulation where its coordinates degrade (counts
#: and factors; the condition thresholds are :data:`kic.settings.SWITCH_CONDITION`
#: and :data:`kic.settings.BRIDGE_CONDITION`)
APPROACH_STEPS = 8           # an approach again covers the last stretch in this many
SWITCH_GAIN = 2.0            # switch only to a set this much better conditioned
LOOK_AGAIN = 2.0             # no better set yet: look again when the condition grows so
AFTER_CROSSING = 10.0        # after a crossing, look again when it grows this much
CROSS_FROM = BRIDGE_CONDITION / 4    # farther out than this, approach before crossing
CLEAR = BRIDGE_CONDITION / 10        # a near pass ends once some set is this good
BRIEF_PASS = 0.5             # s: a near pass lasting longer is not a pass
FURTHEST_CROSSING = 0.1      # rad (or m / L) of motion: the longest expansion across
CROSSING_TRIES = 21          # expansions of 2 ... 2**11 times the estimated time,
CROSSING_GROWTH = 2 ** 0.5   # each this much longer than the last (the first lands
                             # where the start's mirror image is, on the edge of the
                             # landing's test: a doubling would multiply the expansion's
                             # error by 8 for a landing just short of the mirror image)
COMPILED_BLOCK = 2048        # steps one compiled call records before Python sees them
MAX_STEPS = 1_000_000        # default work budget: accepted steps (a 2 s five-bar takes
                             # tens to hundreds; a million means max_step or the
                             # tolerances ask for more than a simulation should take)

def simulate(model, t_span, q0, qd0, tau=None, loads=None, method: str = "DOP853",
             rtol: float = INTEGRATION_RTOL, atol: float = INTEGRATION_ATOL, t_eval=None,
             max_step: float = np.inf, switch_condition: float = SWITCH_CONDITION,
             bifurcation: str = "cross", max_steps: int = MAX_STEPS,
             wall_time: float | None = None, on_limit: str = "raise", **drive) -> Simulation:
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
    block).  :attr:`Simulation.switches` says where.

    Where every set is singular, the mechanism itself is: its mobility changes
    there (a bifurcation, or change point, where two branches of its
    configuration space cross, as in a parallelogram four-bar with all joints
    collinear).  A motion that reaches it with some speed continues along the
    branch it came on (leaving it for the other branch would take an impulse);
    with ``bifurcation="cross"`` (the default) the simulation crosses it that
    way, by the motion's own Taylor expansion over a fraction of a millisecond
    (see :data:`BRIDGE_CONDITION`), and records each crossing in
    :attr:`Simulation.crossings`; with ``bifurcation="raise"`` it stops there
    with a :class:`kic.SingularityError` that says so.  A free motion that only
    passes near such a configuration (every set poor, the motion turning too
    sharply for an expansion) is integrated there in every joint value, the
    open chains with the closure as constraints
    (:func:`kic.joint_space.joint_space_dynamics`), and recorded in
    :attr:`Simulation.crossings` as a ``"near pass"`` (one too near for that is
    crossed by the expansion, within :data:`kic.settings.LAST_RESORT_CROSSING_RTOL`).

    Parameters
    ----------
    model : kic.model.Model
        A :class:`kic.SerialChain`, :class:`kic.ClosedModel` or any model with
        the shared interface; a :class:`kic.model.ClosedLoopModel` has its
        joint values tracked, its coordinates switched and its singular
        configurations crossed.
    t_span : (float, float)
        Start and end times (s), the end after the start: kic integrates forward in
        time only (a free motion without damping runs backwards as the forward
        motion with its rates reversed); a reversed or empty span is a ModelError.
    q0, qd0 : array_like, shape (M,)
        Initial coordinates and rates.
    tau : None, array_like (M,) or callable ``tau(t, q, qd) -> (M,)``
        Input loads (N m / N) at the model's coordinates; ``None`` for a free
        motion.  (With an input, coordinates are not switched.)
    loads : kic.Loads, optional
        Applied loads (gravity is always included through the model).
    method : str
        ``"DOP853"`` (the default: Dormand-Prince 8(5,3), explicit, for the
        tight tolerances mechanisms are simulated at; the free motion of a
        closed model runs it in compiled code, step for step as scipy's
        ``DOP853``, where numba is present), ``"LSODA"`` (Adams, switching to
        BDF when stiff: stiff springs, dampers or motor models; compiled where
        DOP853 is, as scipy's step for step), ``"RK45"``, ``"RK23"``, ``"Radau"``, ``"BDF"``.
    rtol, atol : float
        Integration tolerances.
    t_eval : array_like, optional
        Output times (s), strictly increasing, inside ``t_span`` (else a
        :class:`kic.ModelError`); default: the solver's steps.
    max_step : float
        Longest step (s), > 0; default no limit.
    switch_condition : float
        Condition number of the coordinates in use above which a closed model
        looks for better ones (``inf``: never switch); default
        :data:`SWITCH_CONDITION` (30).
    bifurcation : {"cross", "raise"}
        What a closed model's free motion does at a singular configuration of
        the mechanism itself (see above).
    max_steps : int
        Work budget: the accepted steps of the whole simulation (default
        :data:`MAX_STEPS`); beyond it a :class:`kic.KicError` names the time
        reached and carries the motion so far as its ``simulation``.
    wall_time : float, optional
        Work budget in wall-clock seconds, checked as for ``max_steps``.
    on_limit : {"raise", "stop", "ignore"}
        Where a closed model's joint values cross a limit (``model.limits``, checked
        at each step, the time located by bisection): ``"raise"`` a ClosureError
        naming joint, value, range and time, the motion up to there as
        ``err.simulation``; ``"stop"`` return that motion (a SimulationWarning,
        :attr:`Simulation.stopped_by`); ``"ignore"`` go on as without limits.
    **drive
        ``voltage``, ``i0``, ``period``, ``trajectory``: a :class:`kic.ActuatedSystem` is
        simulated with its motors (:func:`kic.drive_simulation.simulate_drive`; the
        options from ``switch_condition`` to ``on_limit`` stay at their defaults).

    Returns
    -------
    Simulation
        Where the energy record of the finished motion cannot be computed, the
        motion is returned with NaN energies and a :class:`SimulationWarning`.

    Examples
    --------
    >>> import mechanisms, kic
    >>> arm = mechanisms.planar_two_link()
    >>> sim = kic.simulate(arm, (0.0, 1.0), [0.3, -0.4], [0.0, 0.0])
    >>> sim.conservative, bool(sim.energy_drift < 1e-6)
    (True, True)
    """
    from .actuators import ActuatedSystem
    if drive or isinstance(model, ActuatedSystem):      # the motor-driven plant
        from .drive_simulation import simulate_drive
        free = (("switch_condition", switch_condition, SWITCH_CONDITION), ("max_steps",
                max_steps, MAX_STEPS), ("bifurcation", bifurcation, "cross"),
                ("wall_time", wall_time, None), ("on_limit", on_limit, "raise"))
        return simulate_drive(model, t_span, q0, qd0, tau, loads, method, rtol, atol, t_eval,
                              max_step, free_motion=[k for k, v, d in free if v != d], **drive)
    run, t0, y0 = _options(model, t_span, q0, qd0, tau, loads, method, rtol, atol, t_eval,
                           max_step, switch_condition, bifurcation, max_steps, wall_time)
    model = _limits_applied(model, run, on_limit)
    rec = _Record(model, run.closed)
    phi = model.assemble(y0[:model.dof]) if run.closed else None
    if run.times is None or (run.times.size and run.times[0] <= t0):
        rec.add(model, t0, y0, phi)
    motion = _Motion(model, t0, y0, phi, threshold=switch_condition, may_cross=run.cross,
                     models=_Models.of(model) if run.closed else None, started=time.perf_counter())
    try:
        while True:
            stretch = _integrate(run, motion, rec)
            if stretch.leave:
                _leave(run, motion, stretch, rec)
            elif stretch.t >= run.t1:
                break
            else:
                # the short steps have taken the motion past the difficulty: go on freely
                motion.t, motion.y, motion.phi = stretch.t, stretch.y, stretch.phi
                motion.step_limit, motion.retries = None, 0
    except _OverBudget as over:
        # the motion so far travels with the error: the work is not lost
        err = KicError(str(over))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", SimulationWarning)
            err.simulation = rec.result(model, loads, tau, motion.nfev)
        raise err from None
    except LimitCrossed as crossed:
        return _stopped_at_limit(on_limit, crossed.stop, run, rec, model, loads, tau, motion.nfev)
    return rec.result(model, loads, tau, motion.nfev)


def _limits_applied(model, run: "_Run", on_limit: str):
    """The model to integrate: without its joint limits for ``on_limit="ignore"``."""
    if on_limit not in ("raise", "stop", "ignore"):
        raise ModelError(f"on_limit must be 'raise', 'stop' or 'ignore', got {on_limit!r}")
    return without_limits(model) if on_limit == "ignore" and run.closed \
        and model.limits.checked else model


def _stopped_at_limit(on_limit, stop, run, rec, model, loads, tau, nfev) -> "Simulation":
    """The motion up to the crossing of a joint limit (``on_limit="stop"``, with a
    warning), or the error that carries it (``"raise"``)."""
    message = (f"simulate stopped at t = {stop['t']:.9g} s of {run.t1:g} s: joint "
               f"{stop['joint']!r} reaches its limit there ({limit_text(stop)})")
    if on_limit == "stop":
        warnings.warn(message, SimulationWarning, stacklevel=3)
        sim = rec.result(model, loads, tau, nfev)
        sim.stopped_by = stop
        return sim
    err = ClosureError(message + "; on_limit='stop' returns the motion up to there",
                       status=[Status.OUTSIDE_LIMITS])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SimulationWarning)
        err.simulation = rec.result(model, loads, tau, nfev)
    raise err from None


def _locate_limit(run: "_Run", motion: "_Motion", t0: float, y0, phi0, h_out: float, rec) -> None:
    """From (t0, y0, phi0) inside the limits, a limit is crossed within h_out (s):
    bisect for the longest step whose evaluations stay inside (the crossing, to the
    float resolution of time), record the motion up to it, raise LimitCrossed.  The
    trial steps are DOP853's, whatever the method: its stages lie inside the step,
    where a multistep method's predictor reaches past it (and stops short)."""
    model, M, limits, run = (motion.model, motion.model.dof, limits_of(motion.model),
                             replace(run, method="DOP853"))
    lo, hi, found = 0.0, h_out, (t0, y0, phi0)
    while hi - lo > 2.0 * np.spacing(abs(t0) + hi):
        h = 0.5 * (lo + hi)
        try:
            span = (t0 + h) - t0                  # (h as the float times see it)
            solver, warm = _solver(run, model, t0, y0, t0 + h, span, span, phi0)
            while solver.status == "running":
                solver.step()
                phi = warm["track"](solver.y[:M])[0]
            if solver.status == "failed" or not limits.within(phi):
                raise BeyondLimit()
        except BeyondLimit:
            hi = h
            continue
        lo, found = h, (solver.t, solver.y.copy(), phi)
    t, y, phi = found
    rec.truncate(t0)
    if run.times is None:
        rec.add(model, t, y, phi)
    elif t > t0:                   # the samples up to the crossing, step by step again
        solver, warm = _solver(run, model, t0, y0, t, t - t0, t - t0, phi0)
        while solver.status == "running":
            t_old = solver.t
            solver.step()
            dense = solver.dense_output()
            for te in run.times[(run.times > t_old) & (run.times <= solver.t)]:
                yi = dense(te)
                rec.add(model, float(te), yi, warm["track"](yi[:M])[0])
    raise LimitCrossed({"t": float(t), **nearest_limit(model, limits, phi)})


class _OverBudget(Exception):
    """The work budget is spent (internal: :func:`simulate` raises a KicError)."""


def _spend(run: "_Run", motion: "_Motion", steps: int, t: float) -> None:
    """Count ``steps`` accepted steps reaching time t (s) against the budget."""
    motion.steps += steps
    if t >= run.t1:             # a motion that reached its end is done, not stopped
        return
    if motion.steps > run.max_steps:
        raise _OverBudget(f"simulate stopped at t = {t:.6g} s of {run.t1:g} s: the work "
                          f"budget of max_steps = {run.max_steps} accepted steps is spent "
                          f"(max_step = {run.max_step:g} s, rtol = {run.rtol:g}); raise "
                          "max_steps, or loosen max_step or the tolerances")
    if run.wall_time is not None and time.perf_counter() - motion.started > run.wall_time:
        raise _OverBudget(f"simulate stopped at t = {t:.6g} s of {run.t1:g} s: the work "
                          f"budget of wall_time = {run.wall_time:g} s is spent after "
                          f"{motion.steps} steps")


@dataclass(frozen=True)
class _Run:
    """What the caller asked for, fixed for the whole simulation."""

    t1: float                   # the end (s)
    method: str
    rtol: float
    atol: float
    max_step: float
    times: np.ndarray | None    # the output times, or None: the solver's steps
    tau_fn: Callable            # tau(t, q, qd) -> (M,)
    tau_const: np.ndarray | None   # a constant input (zeros for none), else None
    check_tau: bool             # tau is the caller's function: check its answers
    free: bool                  # no input (tau None)
    loads: object
    closed: bool                # a closed model: its joint values are tracked
    switching: bool             # a closed model's free motion may change coordinates
    compiled: bool              # the compiled free motion may serve
    switch_condition: float
    cross: bool                 # singular configurations of the mechanism are crossed
    max_steps: int              # the work budget: accepted steps
    wall_time: float | None     # and wall-clock seconds

    @property
    def conservative(self) -> bool:
        return self.free and (self.loads is None or self.loads.conservative)

    @property
    def relax(self) -> float:
        """The threshold a raised one falls back to once the condition is below it."""
        return self.switch_condition if self.switching else np.inf


def _options(model, t_span, q0, qd0, tau, loads, method, rtol, atol, t_eval, max_step,
             switch_condition, bifurcation, max_steps,
             wall_time) -> tuple[_Run, float, np.ndarray]:
    """The checked options, the start time (s) and the start state (q0, qd0)."""
    M = model.dof
    q0 = finite_array(q0, "q0", (M,))
    qd0 = finite_array(qd0, "qd0", (M,))
    t0, t1, times = integration_times(t_span, t_eval)
    integration_options(method, rtol, atol, max_step, 2 * M)
    if isinstance(max_steps, (bool, np.bool_)) or not isinstance(max_steps, (int, np.integer)) \
            or max_steps < 1:
        raise ModelError(f"max_steps must be a positive integer, got {max_steps!r}")
    if wall_time is not None and not (isinstance(wall_time, (int, float, np.integer,
                                                             np.floating))
                                      and float(wall_time) > 0.0):
        raise ModelError(f"wall_time must be a positive number of seconds or None, got "
                         f"{wall_time!r}")
    if bifurcation not in ("cross", "raise"):
        raise ModelError(f"bifurcation must be 'cross' or 'raise', got {bifurcation!r}")
    if not (isinstance(switch_condition, (int, float, np.integer, np.floating))
            and switch_condition >= 1.0):    # (NaN fails too) a condition number is >= 1
        raise ModelError(f"switch_condition must be a condition number >= 1 (inf: never "
                         f"switch), got {switch_condition!r}")
    tau_c = None if callable(tau) else (np.zeros(M) if tau is None
                                        else finite_array(tau, "tau", (M,)))
    tau_fn: Callable = tau if callable(tau) else (lambda t, q, qd: tau_c)   # noqa: E731
    closed = isinstance(model, ClosedLoopModel)
    switching = (closed and tau is None and np.isfinite(switch_condition)
                 and all(n in model.mechanism.primitive_joints for n in model.coordinate_names))
    tau_const = None if callable(tau) else tau_fn(t0, q0, qd0)
    # the compiled DOP853 and LSODA serve a constant input and no applied loads (loads
    # vary with the state: they take the integrator stepped here, over a compiled rhs)
    compiled = (closed and tau_const is not None and not loads
                and method in ("DOP853", "LSODA") and np.ndim(atol) == 0)
    run = _Run(t1, method, rtol, atol, float(max_step), times, tau_fn, tau_const,
               callable(tau), tau is None, loads, closed, switching, compiled, switch_condition,
               bifurcation == "cross", int(max_steps),
               None if wall_time is None else float(wall_time))
    return run, t0, np.concatenate([q0, qd0])


class _Models:
    """The models of one mechanism in the coordinate sets its simulations use, each
    built once per set and assembly mode (a model takes milliseconds to build; a
    motion through singular configurations switches back and forth between a
    few sets), every one with the first model's characteristic length, so that
    every condition number of the motion is on one scale.  Kept for the model
    the caller simulates, as long as it lives (:meth:`of`): a model is not
    changed by its simulations, so the next one of the same model reuses them."""

    _kept: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()

    @classmethod
    def of(cls, model) -> "_Models":
        """The models kept for ``model`` (new ones for a model not seen before)."""
        models = cls._kept.get(model)
        if models is None:
            models = cls._kept[model] = cls(model)
        return models

    def __init__(self, model) -> None:
        self.length = model.characteristic_length
        self.first = weakref.ref(model)       # (its own entry must not keep it alive)
        self.built: dict = {}
        self.builds = 0

    def get(self, model, names, phi):
        """The model in the coordinates ``names`` whose assembly mode holds at the
        joint values ``phi`` (N,): the first one or one built before, or a new one
        with ``phi`` as its reference."""
        kept = self.built.setdefault(tuple(names), [])
        first = self.first()
        candidates = ([first] if first is not None and first.coordinate_names == list(names)
                      else []) + kept
        if candidates:  # (the models of one set share their blocks: one mode to find)
            found = candidates[0].mode_at(np.asarray(phi, float)[None])
            for m in candidates:
                if in_mode(found, np.array(m.mode, float))[0]:
                    return m
        new = model.in_coordinates(list(names), reference=phi, name=model.name,
                                   characteristic_length=self.length)
        kept.append(new)
        self.builds += 1
        return new


@dataclass
class _Motion:
    """Where the integration stands: the model (coordinates) in use, the state at
    time t, and what the switching policy remembers."""

    model: object
    t: float
    y: np.ndarray               # (q, q') in the model's coordinates (2M,)
    phi: np.ndarray | None      # every joint value (closed models)
    threshold: float            # condition at which the coordinates are looked at again
    may_cross: bool             # a crossing may be tried (none failed since the last)
    history: list = field(default_factory=list)   # (t, condition, y, phi) of the steps
    step_limit: float | None = None    # shorter steps after a step failed
    retries: int = 0            # approaches in shorter steps so far
    recent_step: float | None = None   # the last accepted step size (s)
    nfev: int = 0
    models: _Models | None = None      # the models in the coordinate sets used so far
    started: float = 0.0        # time.perf_counter() at the start (the wall-time budget)
    steps: int = 0              # accepted steps so far (the step budget)

    def restart(self, run: _Run, model, t: float, y, phi, threshold: float) -> None:
        """Begin afresh in ``model`` (new coordinates, or beyond a crossing)."""
        self.model, self.t, self.y, self.phi = model, t, y, phi
        self.threshold, self.history, self.step_limit, self.retries = threshold, [], None, 0
        self.may_cross = run.cross


@dataclass
class _End:
    """Where the coordinates in use must be left: the state there, its condition,
    and the best set of coordinates there with their condition."""

    t: float
    y: np.ndarray
    phi: np.ndarray
    condition: float
    names: list
    best: float


def _integrate(run: _Run, motion: _Motion, rec) -> "_Stretch":
    """One stretch of integration in the coordinates in use (compiled where it
    serves), until the end or until the coordinates must be left."""
    limit = motion.step_limit
    stretch_max = run.max_step if limit is None else min(run.max_step, limit)
    # after a failed step, the first step too is short (the solver's own choice
    # would try a point beyond the singularity again), and short steps hold for
    # a short while only
    first = stretch_max if limit is not None else motion.recent_step
    t_end = run.t1 if limit is None else min(run.t1, motion.t + SHORT_STEPS * stretch_max)
    if first is not None:
        first = min(first, run.max_step, t_end - motion.t)
        first = first if first > 0 else None      # (at the end already)
    stretch = None
    if run.compiled:
        stretch = _compiled_stretch(run, motion, t_end, stretch_max, first, rec)
    if stretch is None:
        stretch = _scipy_stretch(run, motion, t_end, stretch_max, first, rec)
    motion.nfev += stretch.nfev
    motion.threshold = stretch.threshold
    motion.recent_step = stretch.step or motion.recent_step
    return stretch


def _leave(run: _Run, motion: _Motion, stretch: "_Stretch", rec) -> None:
    """The coordinates in use must be left where ``stretch`` ended: cross a
    singular configuration of the mechanism, switch to better coordinates, or go
    on in these (looking again later, or in shorter steps); raises where none
    of these can."""
    end = _End(stretch.t, stretch.y, stretch.phi, stretch.condition,
               *motion.model.best_coordinates(stretch.phi))
    if not end.best < BRIDGE_CONDITION and motion.may_cross:
        if _approach(motion, end, rec):
            return
        crossed = _bifurcation(run, motion, end, rec)
        if crossed is not None:
            _after_crossing(run, motion, end, crossed, rec)
            return
    model, cond = motion.model, end.condition
    if sorted(end.names) != sorted(model.coordinate_names) and end.best < cond / SWITCH_GAIN:
        _switch(run, motion, end, rec)
        return
    if np.isfinite(cond):
        motion.step_limit, motion.retries = None, 0
        # no better set yet: look again when it doubles (a better set may appear
        # soon; the errors of these coordinates grow with their condition), and
        # past BRIDGE_CONDITION
        motion.threshold = (LOOK_AGAIN * cond if cond >= BRIDGE_CONDITION
                            else min(LOOK_AGAIN * cond, BRIDGE_CONDITION))
    elif motion.retries < RETRIES and (stretch.tried or motion.recent_step):
        # a trial point jumped over the singular configuration of these coordinates
        # before the condition said so: approach it again in shorter steps (than
        # the one that failed, or, where the solver failed before its first step,
        # than the last step taken)
        motion.retries += 1
        motion.step_limit = (stretch.tried or motion.step_limit
                             or motion.recent_step) / RETRY_SHRINK
        motion.threshold = min(motion.threshold, LOOK_AGAIN * current_condition(motion.history))
    else:
        bifurcation = not end.best < BRIDGE_CONDITION
        why = ("every set is poorly conditioned there: the mechanism itself is at or "
               "near a singular configuration (a bifurcation, where its mobility changes)"
               if bifurcation else "no other set does better there")
        raise SingularityError(
            f"the coordinates {model.coordinate_names} fail in a step after t = {end.t:g} s; "
            f"{why} (best dimensionless condition number {end.best:.3e}, for {end.names})",
            condition=float(end.best), where="closure Jacobian (bifurcation)"
            if bifurcation else "closure Jacobian")
    motion.t, motion.y, motion.phi = end.t, end.y, end.phi


def _approach(motion: _Motion, end: _End, rec) -> bool:
    """Every set of coordinates is poor at ``end``: the mechanism nears a singular
    configuration of its own (a bifurcation).  It is crossed from the last step
    still below BRIDGE_CONDITION (closer in, the state in these coordinates
    carries errors amplified by the condition): ``end`` moves back there; or,
    where that step is too far out to cross from, the motion approaches again in
    shorter steps from it (True)."""
    below = [h for h in motion.history if h[1] <= BRIDGE_CONDITION]
    if not (below and below[-1][0] < end.t):
        return False
    t, cond, y, phi = below[-1]
    rec.truncate(t)
    if cond < CROSS_FROM and motion.retries < RETRIES:
        motion.step_limit, motion.retries = (end.t - t) / APPROACH_STEPS, motion.retries + 1
        motion.t, motion.y, motion.phi = t, y, phi
        motion.history = [h for h in motion.history if h[0] <= t]
        motion.threshold = CROSS_FROM
        return True
    end.t, end.condition, end.y, end.phi = t, cond, y, phi
    end.names, end.best = motion.model.best_coordinates(phi)
    return False


def _bifurcation(run: _Run, motion: _Motion, end: _End, rec):
    """Take the motion across the singular configuration of the mechanism ahead
    of ``end`` (:func:`_cross`), or integrate a near pass in every joint value
    (:func:`_joint_space_pass`): what :func:`_cross` returns, or None where
    neither serves and the coordinates in use can go on; raises where they
    cannot."""
    model = motion.model
    crossing = (model, motion.models, end.t, end.y, end.phi, end.best, motion.history,
                run.loads, run.conservative)
    crossed = _cross(*crossing, CROSSING_RTOL)
    if crossed is None and run.free and not run.loads:
        # a near pass (the motion turns sharply there: no expansion follows it):
        # integrate it in every joint value, with the closure as constraints
        crossed = _joint_space_pass(model, motion.models, end.t, end.y, end.phi, run.t1,
                                    run.rtol, run.atol, run.times, rec)
    if crossed is None:
        # a pass so near that the joint-space matrix fails too, and no coordinates are
        # regular there: the expansion is the one model left (within a looser bound)
        crossed = _cross(*crossing, LAST_RESORT_CROSSING_RTOL)
    motion.may_cross = crossed is not None     # a failed crossing: integrate on instead
    if crossed is None and not end.best < model.max_condition:
        raise SingularityError(
            f"the mechanism itself is singular near t = {end.t:g} s: every set of "
            f"independent joint coordinates is singular there (best dimensionless "
            f"condition number {end.best:.3e}, for {end.names}), so its mobility changes "
            "(a bifurcation), and no configuration beyond it continues the motion",
            condition=float(end.best), where="closure Jacobian (bifurcation)")
    return crossed


def _after_crossing(run: _Run, motion: _Motion, end: _End, crossed, rec) -> None:
    """Record a crossing and go on beyond it in the coordinates best there."""
    new, t_after, y, phi, info = crossed
    if run.times is not None and "jerk" in info:
        for te in run.times[(run.times > end.t) & (run.times < t_after)]:
            rec.add_joints(float(te), *_taylor(info, te - end.t, motion.model))
    rec.crossings.append(info["report"])
    if run.times is None:
        rec.add(new, t_after, y, phi)
    # leaving the singular configuration the condition falls: look again only if it
    # grows 10x
    threshold = max(run.switch_condition, AFTER_CROSSING * info["report"]["condition_after"])
    motion.restart(run, new, t_after, y, phi, threshold)


def _switch(run: _Run, motion: _Motion, end: _End, rec) -> None:
    """Go on in the coordinates ``end.names``, the state carried across exactly
    (the rates through the transfer)."""
    model = motion.model
    M = model.dof
    new = motion.models.get(model, end.names, end.phi)
    rate = model.joint_rates(end.y[:M], end.y[M:], start=end.phi)
    idx = new.joint_indices(new.coordinate_names)
    rec.switches.append((end.t, list(model.coordinate_names), list(new.coordinate_names),
                         float(end.condition)))
    motion.restart(run, new, end.t, np.concatenate([end.phi[idx], rate[idx]]), end.phi,
                   run.switch_condition)


@dataclass
class _Stretch:
    """How a stretch of integration in one set of coordinates ended."""

    t: float                    # where it stopped (s): the last accepted step
    y: np.ndarray
    phi: np.ndarray
    condition: float            # there; inf where a trial point of the next step failed
    leave: bool                 # these coordinates must be left (else t_end was reached)
    nfev: int
    tried: float | None         # the step size that failed (a trial point failed)
    threshold: float            # the switching threshold in effect at the end
    step: float | None = None   # the last accepted step size (s), if any


def _scipy_stretch(run: _Run, motion: _Motion, t_end, max_step, first, rec) -> _Stretch:
    """Integrate in one set of coordinates with scipy's solver, stepped here, until
    t_end or until these coordinates must be left: a step's condition number
    passed the threshold (which falls to ``run.relax`` once the condition is at
    most that), or a trial point failed."""
    model, t, y, phi = motion.model, motion.t, motion.y, motion.phi
    threshold, history, switching = motion.threshold, motion.history, run.switching
    try:
        solver, warm = _solver(run, model, t, y, t_end, max_step, first, phi)
    except BeyondLimit:
        # the solver's first trial step reached a limit: locate it in what remains
        _locate_limit(run, motion, t, y, phi, t_end - t, rec)
    except (SingularityError, ClosureError):
        # the solver's first evaluations (its initial step) met the singularity
        if not switching:
            raise
        return _Stretch(t, y, phi, np.inf, True, 0, None, threshold)
    cond = current_condition(history)
    times, relax, step = run.times, run.relax, warm["step"]
    y_step = np.array(y, float)           # the last accepted state (the solver's own copy)
    while solver.status == "running":
        t_old, y_old, phi_old = solver.t, y_step, warm["phi"]
        try:
            solver.step()
        except BeyondLimit:
            _locate_limit(run, motion, t_old, y_old, phi_old, t_end - t_old, rec)
        except (SingularityError, ClosureError):
            # a trial point of the step met the singularity of these coordinates
            # (or crossed it, into the other assembly mode they see)
            if not switching:
                raise
            return _Stretch(t_old, y_old, phi_old, np.inf, True, solver.nfev,
                            solver.step_size, threshold, solver.step_size)
        if solver.status == "failed":
            # the step size underflowed: the motion is discontinuous in these
            # coordinates there (near their singularity, a trial point's closure can
            # land on either of two close solutions)
            if not switching:
                raise KicError(f"integration failed at t = {solver.t:g} s (step size too "
                               "small)")
            return _Stretch(solver.t, solver.y.copy(), warm["phi"], np.inf, True, solver.nfev,
                            None, threshold, solver.step_size)
        if times is not None:
            inside = times[(times > t_old) & (times <= solver.t)]
            if inside.size:
                dense = solver.dense_output()
                for te in inside:
                    yi = dense(te)
                    rec.add(model, float(te), yi, *step(yi)[::2])
        y_step = solver.y.copy()
        phi_step, cond, phid = step(y_step)
        history.append((solver.t, cond, y_step, phi_step))
        motion.steps += 1                      # (the budget's checks: only where they may fail)
        if motion.steps > run.max_steps or run.wall_time is not None:
            _spend(run, motion, 0, solver.t)
        if times is None:
            rec.add(model, solver.t, y_step, phi_step, phid)
        if cond <= relax:
            threshold = min(threshold, relax)
        if switching and cond > threshold:
            return _Stretch(solver.t, solver.y.copy(), phi_step, cond, True, solver.nfev, None,
                            threshold, solver.step_size)
    return _Stretch(solver.t, solver.y.copy(), warm["phi"], cond, False, solver.nfev, None,
                    threshold, solver.step_size)


def _compiled_stretch(run: _Run, motion: _Motion, t_end, max_step, first,
                      rec) -> _Stretch | None:
    """The same as :func:`_scipy_stretch` for the free motion of a closed model
    with DOP853 or LSODA, in compiled calls (the model's evaluation's
    :meth:`~kic.closed_eval.CompiledEvaluation.free_motion_steps`; a call goes on
    from the block before, LSODA from its state); None where it does not serve."""
    model, t, y, phi = motion.model, motion.t, motion.y, motion.phi
    threshold, history, switching, relax = (motion.threshold, motion.history, run.switching,
                                            run.relax)
    M = model.dof
    nfev, step, last, resume = 0, first or 0.0, None, None
    stop = threshold if switching else np.inf
    cond = current_condition(history)
    while True:
        times = None if run.times is None else run.times[(run.times > t)
                                                         & (run.times <= t_end)]
        out = model.evaluation.free_motion_steps(
            t, y, t_end, phi, rtol=run.rtol, atol=run.atol, step=step, max_step=max_step,
            stop_condition=stop, relax=relax, capacity=_capacity(run, motion),
            tau=run.tau_const, times=times, method=run.method, resume=resume)
        if out is None:
            return None
        nfev += out["nfev"]
        limits = limits_of(model)
        if limits is not None:           # the compiled steps do not check limits
            _compiled_limits(run, motion, limits, (t, y, phi), out, rec)
        history.extend(zip(out["t"].tolist(), out["condition"].tolist(), out["y"], out["phi"]))
        cond = history[-1][1] if len(out["t"]) else cond
        if times is None:
            rec.add_block(model, out["t"], out["y"], out["phi"], out["rates"])
        rec.add_block(model, *out["samples"])
        t, y, phi = out["state"]
        _spend(run, motion, len(out["t"]), t)
        step, code, stop, resume = out["step"], out["code"], out["threshold"], out.get("resume")
        last = out["last_step"] or last
        threshold = min(threshold, stop)
        if code == 0:
            return _Stretch(t, y, phi, cond, False, nfev, None, threshold, last)
        if code == 1:
            return _Stretch(t, y, phi, cond, True, nfev, None, threshold, last)
        if code == 2:
            if not switching:
                raise SingularityError(f"{Status(out['status']).name.lower()} configuration "
                                       f"in a step after t = {t:g} s in the coordinates "
                                       f"{model.coordinate_names}")
            return _Stretch(t, y, phi, np.inf, True, nfev, out["step"] or None, threshold, last)
        if code == 3:
            if not switching:
                raise KicError(f"integration failed at t = {t:g} s (step size too small)")
            return _Stretch(t, y, phi, np.inf, True, nfev, None, threshold, last)
        if code == 5:
            phi, cond = _assembled(model, y[:M], phi)
            history.append((t, cond, y, phi))
            if run.times is None:
                rec.add(model, t, y, phi)
            if cond <= relax:
                threshold = stop = min(stop, relax)
            if cond > stop:
                return _Stretch(t, y, phi, cond, True, nfev, None, threshold, last)


def _compiled_limits(run: _Run, motion: _Motion, limits, before, out, rec) -> None:
    """Where a step of a compiled block ends beyond a joint limit, record the block
    up to the step before and locate the crossing in that step."""
    outside = [k for k, pk in enumerate(out["phi"]) if not limits.within(pk)]
    if not outside:
        return
    k = outside[0]
    t0, y0, phi0 = before if k == 0 else (float(out["t"][k - 1]), out["y"][k - 1],
                                           out["phi"][k - 1])
    steps = zip(out["t"][:k], out["y"][:k], out["phi"][:k]) if run.times is None else ()
    for tk, yk, pk in [*steps, *(s for s in zip(*out["samples"]) if s[0] < out["t"][k])]:
        rec.add(motion.model, tk, yk, pk)
    _locate_limit(run, motion, t0, y0, phi0, float(out["t"][k]) - t0, rec)


def _capacity(run: _Run, motion: _Motion) -> int:
    """Steps one compiled call may record: a block of steps, within the step budget
    (one beyond it, to say that it is spent)."""
    return int(min(COMPILED_BLOCK, max(run.max_steps - motion.steps + 1, 1)))


def _assembled(model, q, start):
    """Joint values at q (M,) assembled from ``start`` by the general path, and the
    condition number there; raises with the general path's report where it fails."""
    asm = model.assembly(q, start=start)
    if asm.status != 0:
        model.assemble(q, start=start)                    # raises with the report
    return asm.phi, float(asm.condition)


def _solver(run: _Run, model, t, y, t1, max_step, first, phi):
    """The integrator for one stretch in one set of coordinates, and its warm start
    (``track``: q -> joint values, condition; ``step``: y -> those and the rates)."""
    M = model.dof
    warm = {"phi": phi}
    tau_fn, check_tau, loads, closed = run.tau_fn, run.check_tau, run.loads, run.closed

    evaluation = model.evaluation if closed else None     # (chosen once per stretch)
    fast = evaluation.motion_rhs() if closed else None
    limits = limits_of(model) if closed else None
    no_loads = np.zeros(model.N) if closed else None
    # a constant input (none: zeros) laid out once for the whole motion
    tau_fixed = None if check_tau else np.ascontiguousarray(
        run.tau_const if run.tau_const is not None else np.zeros(M), dtype=float)

    def rhs(t, x):
        q, qd = x[:M], x[M:]
        T = tau_fixed if tau_fixed is not None else tau_fn(t, q, qd)
        if check_tau:                  # a constant input was checked once, up front
            T = np.ascontiguousarray(T, dtype=float)
            if T.shape != (M,) or not np.all(np.isfinite(T)):
                raise ModelError(f"tau(t={t:g}) returned {T!r}, expected {M} finite values")
        if fast is not None:
            # one compiled call (two with applied loads: their joint loads first)
            x = np.ascontiguousarray(x, dtype=float)
            tl = no_loads if not loads else evaluation.joint_loads_at(loads, x, warm["phi"])
            f, phi, status = (0, 0, -1) if tl is None else fast(x, warm["phi"], T, tl)[:3]
            if status == 0:
                if limits is not None and not limits.within(phi):
                    raise BeyondLimit()     # (the compiled kernel does not check limits)
                return f
            if status > 0:
                raise SingularityError(f"{Status(int(status)).name.lower()} configuration at "
                                       f"t = {t:g} s in the coordinates "
                                       f"{model.coordinate_names}")
        out = np.empty(2 * M)
        out[:M] = qd
        if closed:
            # failures as data: a singular trial point fails the step at once (the
            # caller changes coordinates or crosses); no search from other starts
            out[M:], status = model.forward_dynamics(q, qd, T, loads=loads, on_failure="nan",
                                                     start=warm["phi"])
            if status == Status.OUTSIDE_LIMITS:
                raise BeyondLimit()
            if status != 0:
                raise SingularityError(f"{Status(int(status)).name.lower()} configuration at "
                                       f"t = {t:g} s in the coordinates "
                                       f"{model.coordinate_names}")
        else:
            out[M:] = model.forward_dynamics(q, qd, T, loads=loads)
        return out

    def lean_rhs(t, x):
        """rhs of a constant input, no loads, no limits: one compiled call."""
        f, _, status, _, _ = fast(np.ascontiguousarray(x, dtype=float), warm["phi"],
                                  tau_fixed, no_loads)
        return f if status == 0 else rhs(t, x)

    def track(q):
        """Joint values at q assembled from the last tracked ones, and the condition
        number of the coordinates there."""
        if not closed:
            return q, 1.0
        fast = evaluation.track(q, warm["phi"])
        if fast is not None:
            warm["phi"] = fast[0]
            return fast
        warm["phi"], cond = _assembled(model, q, warm["phi"])
        return warm["phi"], cond

    lean = fast is not None and not evaluation.refined
    tau_track = tau_fixed if tau_fixed is not None else np.zeros(M)   # (rates: any input)

    def step(y):
        """track(y[:M]) and the rates, by the compiled rhs's call where it serves."""
        if lean:
            _, phi, status, cond, phid = fast(np.ascontiguousarray(y, dtype=float), warm["phi"],
                                              tau_track, no_loads)
            if status == 0:
                warm["phi"] = phi
                return phi, cond, phid
        return (*track(y[:M]), None)

    warm["track"], warm["step"] = track, step
    fun = lean_rhs if (fast is not None and tau_fixed is not None and not loads
                       and limits is None) else rhs
    solver = INTEGRATORS[run.method](fun, t, y, t1, rtol=run.rtol, atol=run.atol,
                                  max_step=max_step, first_step=first)
    return solver, warm


def current_condition(history) -> float:
    """The condition number at the last accepted step (1 before any)."""
    return float(history[-1][1]) if history else 1.0


def _taylor(info, dt, model):
    """Joint values and rates dt (s) after the start of a crossing: the motion's
    Taylor expansion (its jerk from the accelerations at both ends, when known),
    put back on the closure."""
    return _expansion(info, dt, model)[:2]


def _expansion(info, dt, model):
    """:func:`_taylor`, and the closure's residual where it landed."""
    jerk = info.get("jerk", 0.0)
    phi = info["phi"] + dt * info["phid"] + dt * dt / 2 * info["phidd"] + dt ** 3 / 6 * jerk
    phid = info["phid"] + dt * info["phidd"] + dt * dt / 2 * jerk
    phi, residual = model.project(phi)
    return phi, _tangent(model, phi, phid), residual


def _tangent(model, phi, phid):
    """phid with its component across the closure removed (minimum norm)."""
    J = model.closure_jacobian(phi)
    return phid - np.linalg.pinv(J) @ (J @ phid)


def _accelerations(model, phi, phid, loads):
    """phi'' of the free motion at joint values and rates (N,), the model in
    coordinates that are regular there."""
    idx = model.joint_indices(model.coordinate_names)
    q, qd = phi[idx], phid[idx]
    qdd = model.forward_dynamics(q, qd, np.zeros(model.dof), loads=loads, start=phi)
    return model.joint_rates(q, qd, qdd, start=phi)[1]


def _cross(model, models, t, y, phi, condition, history, loads, conservative,
           rtol: float = CROSSING_RTOL):
    """Take the motion across a singular configuration of the mechanism.

    Where every set of independent coordinates is singular the two branches of
    the configuration space meet, and a smooth motion continues along the
    branch it came on, which near the crossing is the motion's own Taylor
    expansion.  The step h is twice the estimated time to the singular
    configuration (1 / condition falls about linearly in time on the way in):
    a predictor from the joint values, rates and accelerations, then two
    correctors with the jerk from the accelerations at both ends (errors
    O(h^4) in the values, O(h^3) in the rates), each put back on the closure
    (minimum-norm Gauss-Newton) with its rates projected on the closure's
    tangent.  h is a fraction of a millisecond near BRIDGE_CONDITION.  A
    conservative motion keeps its energy across: the rates are scaled to the
    energy before (the correction is reported).  The closure may correct the
    expansion's rates, and the energy change, by at most ``rtol`` (of the speed,
    of the energy).  Returns (model in the best coordinates there, t + h, state,
    phi, info), or None when no point beyond is regular or the checks fail.
    """
    M = model.dof
    q, qd = y[:M], y[M:]
    try:
        qdd = model.forward_dynamics(q, qd, np.zeros(M), loads=loads, start=phi)
        phid, phidd = model.joint_rates(q, qd, qdd, start=phi)
    except KicError:
        return None                     # these coordinates are singular there already
    scale = np.where(model.system.is_prismatic, 1.0 / model.characteristic_length, 1.0)
    speed = float(np.linalg.norm(phid * scale))
    if not speed > 0.0:
        return None                     # at rest on a singular configuration
    dt = 1.0 / (condition * speed)      # distance ~ 1 / condition (rad)
    pts = [(h[0], h[1]) for h in history if np.isfinite(h[1]) and h[0] <= t][-2:]
    if len(pts) == 2 and pts[1][0] > pts[0][0]:
        slope = (1 / pts[1][1] - 1 / pts[0][1]) / (pts[1][0] - pts[0][0])
        if slope < 0:
            dt = (1 / pts[1][1]) / -slope
    before = _joint_energies(model, phi[None], phid[None], loads)[1][0]
    # twice the estimate first; longer where the estimate fell short (the landing still
    # before the singular configuration), up to FURTHEST_CROSSING of motion
    for h in 2.0 * CROSSING_GROWTH ** np.arange(CROSSING_TRIES) * dt:
        if h * speed > FURTHEST_CROSSING:
            break
        info = {"phi": phi, "phid": phid, "phidd": phidd}
        phi_b, phid_b, residual = _expansion(info, h, model)
        names, best = model.best_coordinates(phi_b)
        if not (residual < LANDING_TOLERANCE and best < condition):
            continue
        try:
            for _ in range(2):                  # correctors
                new = models.get(model, names, phi_b)
                info["jerk"] = (_accelerations(new, phi_b, phid_b, loads) - phidd) / h
                phi_b, phid_b = _taylor(info, h, model)
        except KicError:
            continue
        # the expansion must hold across: the closure barely corrects its rates (a
        # motion passing near, not through, the singular configuration turns sharply
        # there, and no expansion follows it)
        predicted = phid + h * phidd + h * h / 2 * info["jerk"]
        if np.linalg.norm((phid_b - predicted) * scale) > rtol * speed:
            return None
        names, best = model.best_coordinates(phi_b)
        new = models.get(model, names, phi_b)
        idx = new.joint_indices(new.coordinate_names)
        after = _joint_energies(model, phi_b[None], phid_b[None], loads)[1][0]
        kinetic = after - _joint_energies(model, phi_b[None], 0 * phid_b[None], loads)[1][0]
        if conservative and abs(after - before) > rtol * max(abs(before), kinetic):
            return None
        if conservative:
            # the motion keeps its energy across, as everywhere: put back the O(h^3)
            # error of the rates by scaling them (reported as energy_jump)
            if kinetic > 0 and kinetic + before - after > 0:
                phid_b = phid_b * np.sqrt((kinetic + before - after) / kinetic)
        info["report"] = {"t": float(t), "t_after": float(t + h),
                          "condition": float(condition), "condition_after": float(best),
                          "energy_jump": float(after - before), "kind": "bifurcation"}
        return new, t + h, np.concatenate([phi_b[idx], phid_b[idx]]), phi_b, info
    return None


def _joint_space_pass(model, models, t, y, phi, t1, rtol, atol, times, rec):
    """Integrate a free motion that passes near a singular configuration of the
    mechanism in every joint value: the open chains with the closure as
    constraints (:meth:`kic.ClosedModel.joint_space_dynamics`, Lagrange
    multipliers), which needs no independent coordinates and controls the error
    of every joint's value and rate, from (t, y, phi) until some set of
    coordinates is well conditioned again (below :data:`CLEAR`, after
    the worst point) or t1.  The end is put back on the closure (positions by
    minimum-norm Gauss-Newton, rates on its tangent) and its energy restored by
    scaling the rates (reported as ``energy_jump``).  Integrated at the run's
    tolerances, at most ``CROSSING_RTOL / 10`` (the energy check's bound).  Returns
    what :func:`_cross` does, the samples on the way recorded; None where it fails."""
    M, N = model.dof, model.N
    q, qd = y[:M], y[M:]
    try:
        phid = model.joint_rates(q, qd, start=phi)
    except KicError:
        return None
    before = _joint_energies(model, phi[None], phid[None], None)[1][0]

    def rhs(_, x):
        Mm, b, J, c = model.joint_space_dynamics(x[:N], x[N:])
        R = J.shape[0]
        K = np.zeros((N + R, N + R))
        K[:N, :N], K[:N, N:], K[N:, :N] = Mm, J.T, J
        return np.concatenate([x[N:], np.linalg.solve(K, np.concatenate([-b, -c]))[:N]])

    # within the energy check's bound, whatever the run's tolerance: a pass integrated
    # at a looser one fails the check by its own error and leaves the motion to
    # coordinates that are singular there
    tight = min(rtol, CROSSING_RTOL / 10)
    solver = INTEGRATORS["DOP853"](rhs, t, np.concatenate([phi, phid]), t1, rtol=tight,
                                   atol=atol * tight / rtol)
    worst, samples = 0.0, []
    try:
        while solver.status == "running":
            t_old = solver.t
            solver.step()
            if solver.status == "failed":
                return None
            x = solver.y
            names, best = model.best_coordinates(x[:N])
            worst = max(worst, best)
            if times is not None:
                inside = times[(times > t_old) & (times <= solver.t)]
                if inside.size:
                    dense = solver.dense_output()
                    samples += [(float(te), dense(te)) for te in inside]
            elif solver.t < t1:
                samples.append((solver.t, x.copy()))
            if best < CLEAR and best < worst:
                break
            if solver.t - t > BRIEF_PASS:
                return None                     # not a brief pass
    except (np.linalg.LinAlgError, KicError):
        return None
    phi_b, residual = model.project(solver.y[:N])
    if not residual < LANDING_TOLERANCE:
        return None
    phid_b = _tangent(model, phi_b, solver.y[N:])
    after = _joint_energies(model, phi_b[None], phid_b[None], None)[1][0]
    kinetic = after - _joint_energies(model, phi_b[None], 0 * phid_b[None], None)[1][0]
    if not abs(after - before) <= CROSSING_RTOL * max(abs(before), kinetic):
        return None
    if kinetic > 0 and kinetic + before - after > 0:
        phid_b = phid_b * np.sqrt((kinetic + before - after) / kinetic)
    names, best = model.best_coordinates(phi_b)
    new = models.get(model, names, phi_b)
    idx = new.joint_indices(new.coordinate_names)
    for ts, xs in samples:
        rec.add_joints(ts, xs[:N], xs[N:])
    info = {"report": {"t": float(t), "t_after": float(solver.t), "condition": float(worst),
                       "condition_after": float(best), "energy_jump": float(after - before),
                       "kind": "near pass"}}
    return new, solver.t, np.concatenate([phi_b[idx], phid_b[idx]]), phi_b, info


def _joint_energies(model, phi, phid, loads):
    """(kinetic energy, kinetic + potential (+ conservative loads) energy) (n,) each
    from the joint values and rates of every open chain: no coordinates involved."""
    E = np.zeros(phi.shape[0])
    kinetic = np.zeros(phi.shape[0])
    for chain, idx in model.open_chains:
        if not chain.has_inertia:
            continue            # a chain without mass (one leading to a cut joint): no energy
        dyn = chain.dynamics(phi[:, idx])
        ke = dyn.kinetic_energy(phid[:, idx])
        kinetic = kinetic + ke
        E = E + ke + dyn.potential_energy
    if loads:
        E = E + model.loads_energy_at(loads, phi)
    return kinetic, E


class _Record:
    """The samples of a simulation in blocks, each block one model's (coordinates')
    samples as arrays: (model, t (k,), y (k, 2M), phi (k, N), the joint rates phi'
    (k, N) or None where not known); a block of the joints alone (inside a
    crossing) has no model and no y.  A compiled stretch hands hundreds of steps
    over as one block."""

    def __init__(self, model, closed):
        self.closed = closed
        self.user = model.joint_indices(model.coordinate_names) if closed else None
        self.blocks, self.switches, self.crossings = [], [], []

    def add(self, model, t, y, phi, phid=None) -> None:
        """A sample: time t (s), state y in model's coordinates, phi, rates phid if known."""
        self.add_block(model, [t], [y], [phi], None if phid is None else [phid])

    def add_block(self, model, t, y, phi, phid=None) -> None:
        """Samples at the times t (k,) (s): states y (k, 2M) in model's coordinates,
        joint values phi (k, N) (a serial chain's: None), joint rates phid if known."""
        t = np.array(t, float).reshape(-1)        # copies: the caller's arrays are reused
        if not t.shape[0]:
            return
        y = np.array(y, float).reshape(t.shape[0], -1)
        phi = np.array(phi, float).reshape(t.shape[0], -1) if self.closed else y[:, :model.dof]
        self.blocks.append((model, t, y, phi,
                            None if phid is None else np.array(phid, float).reshape(phi.shape)))

    def add_joints(self, t, phi, phid) -> None:
        """A sample given by its joint values and rates (inside a crossing)."""
        self.blocks.append((None, np.array([t], float), None, np.array(phi, float)[None],
                            np.array(phid, float)[None]))

    def truncate(self, t) -> None:
        """Drop the samples after time t (s)."""
        kept = []
        for model, ts, *arrays in self.blocks:
            k = int(np.count_nonzero(ts <= t))
            if k:
                kept.append((model, ts[:k], *(a if a is None else a[:k] for a in arrays)))
        self.blocks = kept

    def result(self, model, loads, tau, nfev) -> "Simulation":
        """The Simulation; where its energy record fails, the motion with NaN
        energies and a SimulationWarning (a finished motion is never lost)."""
        t = np.concatenate([b[1] for b in self.blocks])
        phi = np.concatenate([b[3] for b in self.blocks])
        K = t.shape[0]
        conservative = tau is None and (loads is None or loads.conservative)
        step = "rates"
        try:
            q_user, qd_user, rates = self._user_motion(model, phi)
            step = "energy record"
            energy, drift = self._energy(model, phi, rates, loads)
        except Exception as exc:      # noqa: BLE001 - a finished motion is never lost
            warnings.warn(f"simulate: the motion is complete, but its {step} failed "
                          f"({type(exc).__name__}: {exc}); energy and energy_drift are NaN"
                          + ("" if step != "rates" else ", and so are the rates outside the "
                             "coordinates the motion started in"),
                          SimulationWarning, stacklevel=3)
            if step == "rates":
                q_user, qd_user = self._user_rates_as_integrated(phi)
            energy, drift = np.full(K, np.nan), float("nan")
        return Simulation(t, q_user, qd_user, energy, drift, conservative, int(nfev), phi,
                          self.switches, self.crossings)

    def _user_rates_as_integrated(self, phi):
        """The user's coordinates and, where the integration ran in them, their
        rates (NaN elsewhere): what needs no model evaluation."""
        q_user = phi[:, self.user] if self.closed else phi
        qd = np.full(q_user.shape, np.nan)
        first, k = self.blocks[0][0], 0
        for m, ts, y, *_ in self.blocks:
            if m is first and y is not None and y.shape[1] == 2 * qd.shape[1]:
                qd[k:k + ts.shape[0]] = y[:, qd.shape[1]:]
            k += ts.shape[0]
        return q_user, qd

    def _user_motion(self, model, phi):
        """The user's coordinates and rates, and the rates the energy needs (every
        joint's for a closed model, the coordinates' for a serial one)."""
        if not self.closed:
            qd = np.concatenate([y[:, model.dof:] for _, _, y, *_ in self.blocks])
            return phi, qd, qd
        phid = np.zeros(phi.shape)
        runs, k = [], 0            # (model, first, rows) of the samples without rates
        for m, ts, y, phi_b, rates in self.blocks:
            j = k + ts.shape[0]
            if rates is not None:
                phid[k:j] = rates
            elif runs and runs[-1][0] is m and runs[-1][1] + len(runs[-1][2]) == k:
                runs[-1][2].extend(y)
            else:
                runs.append((m, k, list(y)))
            k = j
        for m, k, ys in runs:
            M, ys, rows = m.dof, np.array(ys), slice(k, k + len(ys))
            if m.evaluation.compiled:      # pose by pose (microseconds a pose compiled,
                phid[rows] = [m.joint_rates(x[:M], x[M:], start=p)    # the numpy batch
                              for x, p in zip(ys, phi[rows])]         # a millisecond)
            else:
                phid[rows] = m.joint_rates(ys[:, :M], ys[:, M:], start=phi[rows])
        return phi[:, self.user], phid[:, self.user], phid

    def _energy(self, model, phi, rates, loads):
        """Kinetic + potential (+ conservative loads) energy (K,) and its drift."""
        K = phi.shape[0]
        if not K:
            return np.zeros(0), 0.0
        if self.closed:
            ke, energy = _joint_energies(model, phi, rates, loads)
        else:
            dyn = model.dynamics(phi)
            ke = dyn.kinetic_energy(rates)
            energy = ke + dyn.potential_energy
            if loads:
                energy = energy + dyn.loads_energy(loads)
        scale = max(abs(float(energy[0])), float(np.max(ke)), TINY)
        return energy, float(np.max(np.abs(energy - energy[0]))) / scale
