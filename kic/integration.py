"""What every simulation shares (:func:`kic.simulate` of a model's free or driven
motion, and of a motor-driven plant, :mod:`kic.drive_simulation`): the result,
the integrators by name and the checks of a simulation's times and options, and
the retry policy after a failed trial point."""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy.integrate import BDF, DOP853, LSODA, RK23, RK45, Radau

from ._array import finite_array
from .errors import ModelError

__all__ = ["Simulation", "SimulationWarning", "INTEGRATORS", "integration_times",
           "integration_options", "RETRIES", "SHORT_STEPS", "RETRY_SHRINK"]


class SimulationWarning(RuntimeWarning):
    """A finished simulation's post-processing (its energy record) failed: the
    motion is returned, the energies are NaN."""


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
    crossings : list of dict
        Where the motion went through a singular configuration of the mechanism
        itself (``kind`` ``"bifurcation"``: every set of coordinates fails there;
        crossed by the motion's own Taylor expansion) or passed near one
        (``"near pass"``: integrated in every joint value, with the closure as
        constraints): ``t`` and ``t_after`` (s), the best ``condition`` on the
        way and ``condition_after``, and the ``energy_jump`` (J) put back there.
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
    crossings: list = field(default_factory=list)
    #: where ``on_limit="stop"`` ended the motion at a joint limit: ``t`` (s), the
    #: ``joint``, its ``value`` (rad or m; a cone angle for a cone), the ``limit``
    #: and the ``unit``; None where no limit stopped it
    stopped_by: dict | None = None


#: after a trial point where the model fails (a closure that does not close, a
#: singular configuration), the integration retries in shorter steps
RETRIES = 6                  # approaches in shorter steps before a failure is final
SHORT_STEPS = 64             # a shortened step size holds for about this many steps
RETRY_SHRINK = 4             # after a failed trial point, steps this much shorter

INTEGRATORS = {"RK23": RK23, "RK45": RK45, "DOP853": DOP853, "Radau": Radau, "BDF": BDF,
               "LSODA": LSODA}           # the method names simulate takes (scipy's solvers)


def integration_times(t_span, t_eval=None) -> tuple[float, float, np.ndarray | None]:
    """``t_span`` and ``t_eval`` checked (s): ``(t0, t1, times)``; the span runs
    forward (t1 > t0: a simulation integrates forward in time only), ``t_eval``
    (None, or 1-D, finite, strictly increasing, inside [t0, t1]) is never
    silently cut.  The one check of a simulation's times (free motion and
    motor-driven plants)."""
    t0, t1 = (float(x) for x in finite_array(t_span, "t_span", (2,)))
    if not t1 > t0:
        raise ModelError(f"t_span must run forward, from t0 to a later t1 (s), got "
                         f"({t0:g}, {t1:g}); simulate integrates forward in time only")
    if t_eval is None:
        return t0, t1, None
    times = finite_array(t_eval, "t_eval")
    if times.ndim != 1 or not times.size:
        raise ModelError(f"t_eval must be a 1-D array of at least one time (s), got shape "
                         f"{times.shape}; None records every step")
    if times.size > 1 and not np.all(np.diff(times) > 0):
        k = int(np.argmin(np.diff(times) > 0))
        raise ModelError(f"t_eval must be strictly increasing: t_eval[{k}] = {times[k]:g} s "
                         f"is followed by {times[k + 1]:g} s")
    outside = times[(times < t0) | (times > t1)]
    if outside.size:
        raise ModelError(f"t_eval must lie inside t_span = ({t0:g}, {t1:g}) s; "
                         f"{outside.size} times do not (first {outside[0]:g} s)")
    return t0, t1, times


def integration_options(method: str, rtol, atol, max_step, n_states: int) -> None:
    """The integrator's options checked: ``method`` one of :data:`INTEGRATORS`,
    ``rtol``/``atol`` positive and finite (``atol`` a number or one per state
    value), ``max_step`` a positive number of seconds (inf: no limit; 0 would
    never end)."""
    if method not in INTEGRATORS:
        raise ModelError(f"unknown integration method {method!r}; use one of "
                         f"{list(INTEGRATORS)}")
    if not (isinstance(max_step, (int, float, np.integer, np.floating))
            and float(max_step) > 0.0):
        raise ModelError(f"max_step must be a positive number of seconds (inf: no limit), "
                         f"got {max_step!r}")
    for name, tol in (("rtol", rtol), ("atol", atol)):
        try:
            arr = np.asarray(tol, dtype=float)
        except (TypeError, ValueError):
            arr = np.array(np.nan)
        if not (np.all(np.isfinite(arr)) and np.all(arr > 0)
                and arr.shape in ((), (n_states,))):
            raise ModelError(f"{name} must be positive and finite (atol: a number or one per "
                             f"state value, {n_states}), got {tol!r}")
