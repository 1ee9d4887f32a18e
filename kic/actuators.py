"""DC-motor actuators, drive trains, nominal inputs and the linearized plant
(seed eq. 2-228 to 2-240 and the velocity-referenced state space).

An armature-controlled DC motor (eq. 2-228)::

    L i' + R i + C_E theta_m' = v,        I_r theta_m'' + B_r theta_m' - C_M i = -tau_load

drives actuated joint coordinates ``a`` through a constant drive train
``a' = G_m theta_m'`` (eq. 2-230; a gear ratio N is ``G_m = 1/N``).  In joint
terms (eq. 2-234 to 2-237): ``C_E_a = C_E G_m^-1``, ``C_M_a = G_m^-T C_M``,
``I'_a = G_m^-T I_r G_m^-1``, ``B'_a = G_m^-T B_r G_m^-1``, and the actuated
coordinates may differ from the model's (the legs of a Stewart platform
modelled in platform coordinates, the cranks of a five-bar): with
``a' = G^a_q q'`` the reflected rotor inertia ``G^a_q^T I'_a G^a_q`` depends on
the configuration and the linearization gains the corresponding terms.

With ``L = 0`` (``electrical="quasi_static"``) the currents follow the voltages
at once, ``i = R^-1 (v - C_E theta_m')``: the reduced model without the fast
armature modes.  A motor's voltage, current and speed limits are checked by the
nominal inputs (``on_limit``) and saturate the nonlinear model (:meth:`ActuatedSystem.rhs`);
a singular actuation or closure along a trajectory is reported by sample and
time (``on_failure``), by the closed model's condition rule.
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from ._array import finite_array
from .backend import spd_solve, use_compiled
from .kernels import linalg
from .closure import ClosedModel
from .errors import KicError, ModelError, SingularityError, Status
from .linearize import linear_dynamics
from .settings import (IMPLAUSIBLE_CURRENT_FACTOR, MAX_ELECTRICAL_TIME_CONSTANT,
                       MAX_TRAVEL_PER_MOTOR_RADIAN, MOTOR_CONSTANT_RTOL, RANK_RTOL)
from .trajectory import Trajectory

__all__ = ["DCMotor", "ActuatedSystem", "NominalInputs", "DriveState", "DriveLimitError",
           "DriveWarning"]

_ON_LIMIT = ("raise", "warn", "clip")
_ON_FAILURE = ("raise", "nan")
_ELECTRICAL = ("dynamic", "quasi_static")


class DriveWarning(UserWarning):
    """A drive that is probably mis-specified (a unit mistake) or a nominal
    motion beyond a motor's limits with ``on_limit="warn"``."""


class DriveLimitError(ModelError):
    """A nominal motion needs more voltage, current or speed than a motor allows.

    Attributes
    ----------
    motor : str
        The motor's name.
    quantity : str
        ``"voltage"``, ``"current"`` or ``"speed"``.
    value, limit : float
        The largest magnitude needed (V, A, rad/s on the motor shaft) and the limit.
    sample : int
        The first sample of the trajectory that exceeds the limit ...
    time : float
        ... and its time (s).
    index : tuple
        ``(sample,)``.
    """

    def __init__(self, message: str, *, motor: str, quantity: str, value: float, limit: float,
                 sample: int, time: float) -> None:
        super().__init__(message)
        self.motor, self.quantity, self.value, self.limit = motor, quantity, value, limit
        self.sample, self.time, self.index = sample, time, (sample,)


class DCMotor:
    """A separately excited (armature-controlled) DC motor.

    Parameters
    ----------
    resistance : float
        Armature resistance R (ohm), > 0.
    inductance : float
        Armature inductance L (H), >= 0.  Zero: no armature dynamics, usable in
        the quasi-static model only (``ActuatedSystem(..., electrical="quasi_static")``).
    torque_constant : float
        C_M (N m / A), > 0.
    back_emf_constant : float
        C_E (V s / rad), > 0.  In SI units it equals C_M; a difference of more
        than :data:`kic.settings.MOTOR_CONSTANT_RTOL` gives a :class:`DriveWarning`.
    rotor_inertia : float
        I_r (kg m^2), >= 0, on the motor shaft.
    rotor_damping : float
        B_r (N m s / rad), >= 0, on the motor shaft.
    name : str, optional
    voltage_limit : float, optional
        Largest terminal voltage magnitude (V), e.g. the supply; None: unlimited.
    current_limit : float, optional
        Largest armature current magnitude (A), e.g. the amplifier's; None: unlimited.
    speed_limit : float, optional
        Largest motor shaft speed (rad/s); None: unlimited.

    The limits are checked by the nominal inputs (``ActuatedSystem.nominal``,
    ``on_limit``) and the voltage and current limits saturate the nonlinear
    model (``ActuatedSystem.rhs``); the speed limit is reported only.

    Examples
    --------
    >>> import kic
    >>> m = kic.DCMotor(1.2, 2e-3, 0.05, 0.05, rotor_inertia=3e-5, rotor_damping=1e-5)
    >>> m.resistance, m.time_constant
    (1.2, 0.0016666666666666668)
    """

    def __init__(self, resistance: float, inductance: float, torque_constant: float,
                 back_emf_constant: float, rotor_inertia: float = 0.0,
                 rotor_damping: float = 0.0, name: str | None = None, *,
                 voltage_limit: float | None = None, current_limit: float | None = None,
                 speed_limit: float | None = None) -> None:
        label = f"motor {name!r}" if name else "motor"
        vals = {}
        for key, v, strict in (("resistance", resistance, True),
                               ("inductance", inductance, False),
                               ("torque_constant", torque_constant, True),
                               ("back_emf_constant", back_emf_constant, True),
                               ("rotor_inertia", rotor_inertia, False),
                               ("rotor_damping", rotor_damping, False),
                               ("voltage_limit", voltage_limit, True),
                               ("current_limit", current_limit, True),
                               ("speed_limit", speed_limit, True)):
            if v is None and key.endswith("_limit"):
                vals[key] = None
                continue
            x = finite_array(v, f"{label} {key}")
            if x.shape != () or (x <= 0 if strict else x < 0):
                raise ModelError(f"{label}: {key} must be a finite number "
                                 f"{'> 0' if strict else '>= 0'}, got {v!r}")
            vals[key] = float(x)
        self.resistance = vals["resistance"]
        self.inductance = vals["inductance"]
        self.torque_constant = vals["torque_constant"]
        self.back_emf_constant = vals["back_emf_constant"]
        self.rotor_inertia = vals["rotor_inertia"]
        self.rotor_damping = vals["rotor_damping"]
        self.voltage_limit = vals["voltage_limit"]
        self.current_limit = vals["current_limit"]
        self.speed_limit = vals["speed_limit"]
        self.name = name
        kt, ke = self.torque_constant, self.back_emf_constant
        if abs(kt - ke) > MOTOR_CONSTANT_RTOL * max(kt, ke):
            warnings.warn(f"{label}: torque constant {kt:g} N m/A and back-EMF constant "
                          f"{ke:g} V s/rad differ by {abs(kt - ke) / max(kt, ke):.0%}; in SI "
                          "units they are one number (a unit slip? mN m/A, V/krpm)",
                          DriveWarning, stacklevel=2)
        if self.time_constant > MAX_ELECTRICAL_TIME_CONSTANT:
            warnings.warn(f"{label}: electrical time constant L/R = {self.time_constant:g} s "
                          f"is implausibly long for a DC motor (inductance "
                          f"{self.inductance:g} H: given in mH?)", DriveWarning, stacklevel=2)

    @property
    def time_constant(self) -> float:
        """Electrical time constant L/R (s)."""
        return self.inductance / self.resistance

    @property
    def rated_current(self) -> float | None:
        """The current limit, else the stall current at the voltage limit (A), else None."""
        if self.current_limit is not None:
            return self.current_limit
        if self.voltage_limit is not None:
            return self.voltage_limit / self.resistance
        return None

    def __repr__(self) -> str:
        limits = "".join(f", {k}={getattr(self, k)}" for k in
                         ("voltage_limit", "current_limit", "speed_limit")
                         if getattr(self, k) is not None)
        return (f"DCMotor(R={self.resistance}, L={self.inductance}, C_M={self.torque_constant}, "
                f"C_E={self.back_emf_constant}{limits}, name={self.name!r})")


class DriveState(NamedTuple):
    """What :meth:`ActuatedSystem.evaluate` returns at one state."""

    rate: np.ndarray             #: x' (n_states,)
    voltage: np.ndarray          #: terminal voltages after saturation (Na,) V
    current: np.ndarray          #: armature currents (Na,) A
    saturated: np.ndarray        #: a limit acts (Na,) bool
    actuator_rates: np.ndarray   #: a' = G^a_q q' (Na,), rad/s or m/s


class NominalInputs:
    """Nominal motor currents and voltages along a trajectory.

    Attributes
    ----------
    t : ndarray (K,)
    current, current_rate : ndarray (K, Na)
        Armature currents (A) and their rates (A/s).
    voltage : ndarray (K, Na)
        Terminal voltages (V) that drive the nominal motion (eq. 2-240).
    torque : ndarray (K, Na)
        Motor-side torques C_M i (N m) reflected to the actuated joints.
    speed : ndarray (K, Na)
        Motor shaft speeds (rad/s).
    saturated : ndarray (K, Na) bool
        Where ``on_limit="clip"`` clipped the voltage or the current to a limit
        (there the nominal inputs no longer drive the trajectory).
    status : ndarray (K,) of kic.Status
        OK, or why a sample has NaN inputs (``on_failure="nan"``).
    """

    def __init__(self, t, current, current_rate, voltage, torque, speed=None, saturated=None,
                 status=None) -> None:
        self.t, self.current, self.current_rate = t, current, current_rate
        self.voltage, self.torque = voltage, torque
        self.speed = np.full(current.shape, np.nan) if speed is None else speed
        self.saturated = np.zeros(current.shape, bool) if saturated is None else saturated
        self.status = (np.full(np.shape(t), Status.OK, dtype=int) if status is None
                       else np.asarray(status))

    def select(self, sel) -> "NominalInputs":
        """The samples ``sel`` (a slice or index array) as new NominalInputs."""
        return NominalInputs(self.t[sel], self.current[sel], self.current_rate[sel],
                             self.voltage[sel], self.torque[sel], self.speed[sel],
                             self.saturated[sel], self.status[sel])


class ActuatedSystem:
    """A model (serial chain or closed mechanism) driven by DC motors.

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
    motors : sequence of DCMotor
        One per actuated joint.
    joints : sequence of str or int, optional
        The actuated joints; default: every joint of a serial chain, or
        ``model.actuators`` of a closed model.  They may be fewer than, equal
        to or more than the model's coordinates (more: overconstrained, the
        currents follow the load-distribution rule).
    gear_ratios : array_like (Na,), optional
        ``N`` per motor (motor angle = N x joint coordinate; rad per rad, or
        rad per m for a prismatic joint: a screw of lead p has N = 2 pi / p);
        default 1.
    gear_jacobian : array_like (Na, Na), optional
        Instead of ratios, the constant drive-train Jacobian ``G_m`` with
        ``a' = G_m theta_m'`` (seed eq. 2-230).
    weights : array_like (Na, Na) or (Na,), optional
        W of the load distribution (minimise ``tau^T W tau``); default the
        copper loss ``C_M_a^-T R C_M_a^-1``.
    loads : kic.Loads, optional
        Constant applied loads, springs and dampers on the mechanism.
    electrical : {"dynamic", "quasi_static"}, optional
        ``"dynamic"`` keeps the armature currents as states (``L i' + R i +
        C_E theta_m' = v``); ``"quasi_static"`` drops the inductances (the
        currents follow the voltages at once, ``i = R^-1 (v - C_E theta_m')``):
        the reduced model, without the fast electrical modes that make the full
        one stiff.  Default: dynamic, or quasi-static when a motor has ``L = 0``.

    Notes
    -----
    The nonlinear model (:meth:`rhs`) has the state ``x = (q, q', i)``
    (2M + Na: coordinates, their rates, armature currents) in the dynamic
    model and ``x = (q, q')`` (2M) in the quasi-static one
    (:attr:`state_names`); the input is the motor voltages ``v`` (Na).
    Saturation (:meth:`terminal`): the terminal voltage is ``v`` clipped to
    each motor's ``voltage_limit``; a ``current_limit`` acts as a
    current-limiting amplifier: with the current at the limit the voltage that
    would drive it further is lowered to hold it there (dynamic model), or the
    quasi-static current is clipped to the limit (the voltage is what the
    motor then takes).

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> arm = mechanisms.planar_two_link()
    >>> motor = kic.DCMotor(1.0, 1e-3, 0.1, 0.1, rotor_inertia=1e-4, rotor_damping=1e-5)
    >>> plant = kic.ActuatedSystem(arm, [motor, motor], gear_ratios=[50, 50])
    >>> traj = kic.Trajectory.quintic([0.0, 0.0], [0.5, -0.5], duration=1.0, samples=11)
    >>> ss = plant.state_space(traj)
    >>> ss.A.shape, ss.B.shape
    ((11, 6, 6), (11, 6, 2))
    """

    def __init__(self, model, motors: Sequence[DCMotor], joints=None, gear_ratios=None,
                 gear_jacobian=None, weights=None, loads=None,
                 electrical: str | None = None) -> None:
        self.model = model
        self.loads = loads
        motors = list(motors)
        if not motors or not all(isinstance(m, DCMotor) for m in motors):
            raise ModelError("motors must be a non-empty sequence of kic.DCMotor")
        self.motors = motors
        Na = len(motors)
        joints = list(model.actuators if joints is None else joints)
        if len(joints) != Na:
            raise ModelError(f"{Na} motors for {len(joints)} actuated joints {joints}")
        self._idx = model.joint_indices(joints)
        self.joint_names = [model.phi_names[k] for k in self._idx]
        if len(set(self._idx.tolist())) != Na:
            raise ModelError(f"actuated joints repeat: {joints}")
        if Na < model.dof:
            raise ModelError(f"{Na} motors cannot drive the {model.dof} coordinates of the model "
                             "(underactuated)")
        self.motor_names = [m.name or f"m{k + 1}" for k, m in enumerate(motors)]
        self.electrical = self._electrical_model(electrical)
        self.gear_jacobian = Gm = self._drive_train(gear_ratios, gear_jacobian, Na)
        self._check_screws(Gm)
        Gi = np.linalg.inv(Gm)
        self._motor_speed = Gi                             # theta_m' = G_m^-1 a'
        d = lambda attr: np.diag([getattr(m, attr) for m in motors])        # noqa: E731
        self.R, self.L = d("resistance"), d("inductance")
        self.C_E = d("back_emf_constant") @ Gi               # eq. 2-234
        self.C_M = Gi.T @ d("torque_constant")
        self.I_r = Gi.T @ d("rotor_inertia") @ Gi            # eq. 2-237
        self.B_r = Gi.T @ d("rotor_damping") @ Gi
        self._R_diag = np.array([m.resistance for m in motors])
        self._L_diag = np.array([m.inductance for m in motors])
        lim = lambda attr: np.array([np.inf if getattr(m, attr) is None    # noqa: E731
                                     else getattr(m, attr) for m in motors])
        self.voltage_limits = lim("voltage_limit")
        self.current_limits = lim("current_limit")
        self.speed_limits = lim("speed_limit")
        if weights is None:
            CMi = np.linalg.inv(self.C_M)
            W = CMi.T @ self.R @ CMi
        else:
            W = finite_array(weights, "weights")
            W = np.diag(W) if W.ndim == 1 else W
            if W.shape != (Na, Na) or np.any(np.linalg.eigvalsh(0.5 * (W + W.T)) <= 0):
                raise ModelError(f"weights must be positive definite ({Na}x{Na} or {Na} values)")
        self.weights = W
        self._direct = self._direct_selection()
        self._pose = None                    # the one-pose evaluator, built on first use

    def _electrical_model(self, electrical) -> str:
        no_L = [n for n, m in zip(self.motor_names, self.motors) if m.inductance == 0]
        if electrical is None:
            return "quasi_static" if no_L else "dynamic"
        if electrical not in _ELECTRICAL:
            raise ModelError(f"electrical must be one of {_ELECTRICAL}, got {electrical!r}")
        if electrical == "dynamic" and no_L:
            raise ModelError(f"motors {no_L} have no inductance: the dynamic electrical model "
                             "needs L > 0 (use electrical='quasi_static')")
        return electrical

    @staticmethod
    def _drive_train(gear_ratios, gear_jacobian, Na) -> np.ndarray:
        if gear_jacobian is not None and gear_ratios is not None:
            raise ModelError("give gear_ratios or gear_jacobian, not both")
        if gear_jacobian is None:
            N = np.ones(Na) if gear_ratios is None else finite_array(gear_ratios, "gear_ratios")
            if N.shape != (Na,) or np.any(N == 0):
                raise ModelError(f"gear_ratios must be {Na} non-zero numbers, got {gear_ratios!r}")
            return np.diag(1.0 / N)
        Gm = finite_array(gear_jacobian, "gear_jacobian", (Na, Na))
        sv = np.linalg.svd(Gm, compute_uv=False)
        if not sv[-1] > RANK_RTOL * sv[0]:
            cond = sv[0] / sv[-1] if sv[-1] > 0 else np.inf
            raise SingularityError(
                f"the drive-train Jacobian is singular (smallest singular value {sv[-1]:.3e},"
                f" condition {cond:.3e})", sigma_min=float(sv[-1]), condition=float(cond),
                where="drive-train Jacobian G_m")
        return Gm

    def _check_screws(self, Gm) -> None:
        """A prismatic joint moved more than a metre per motor radian: a screw's
        lead given as the gear ratio (N = 0.005 instead of 2 pi / 0.005)."""
        prismatic = _prismatic(self.model)[self._idx]
        for k in np.nonzero(prismatic)[0]:
            travel = float(np.abs(Gm[k]).max())
            if travel > MAX_TRAVEL_PER_MOTOR_RADIAN:
                warnings.warn(
                    f"motor {self.motor_names[k]!r} moves the prismatic joint "
                    f"{self.joint_names[k]!r} by {travel:g} m per motor radian: a screw's lead "
                    "given as the gear ratio? (a screw of lead p has N = 2 pi / p rad/m)",
                    DriveWarning, stacklevel=3)

    def _direct_selection(self):
        """``G^a_q`` when every actuated joint is a coordinate of the model (a
        constant selection: a serial chain, a five-bar in its cranks, a Stewart
        platform in its legs), else None."""
        names = list(self.model.coordinate_names)
        if not all(j in names for j in self.joint_names):
            return None
        S = np.zeros((self.n_motors, self.model.dof))
        for a, j in enumerate(self.joint_names):
            S[a, names.index(j)] = 1.0
        return S

    @property
    def n_states(self) -> int:
        """Length of the state of :meth:`rhs`: 2M + Na (dynamic) or 2M (quasi-static)."""
        return 2 * self.model.dof + (self.n_motors if self.electrical == "dynamic" else 0)

    @property
    def state_names(self) -> list:
        """Names of the entries of the state of :meth:`rhs`: ``q[c]``, ``qd[c]``, ``i[m]``."""
        c = list(self.model.coordinate_names)
        out = [f"q[{n}]" for n in c] + [f"qd[{n}]" for n in c]
        return out + ([f"i[{m}]" for m in self.motor_names]
                      if self.electrical == "dynamic" else [])

    @property
    def n_motors(self) -> int:
        return len(self.motors)

    # -------------------------------------------------------- kinematics
    def actuation(self, q, order: int = 3):
        """``G^a_q``, ``H^a_qq``, ``D^a_qqq`` of the actuated joints (batch first)."""
        q = np.asarray(q, float).reshape(-1, self.model.dof)
        _, tr = self.model.transfer_at(q, order)
        return (tr.G[:, self._idx], None if tr.H is None else tr.H[:, self._idx],
                None if tr.D is None else tr.D[:, self._idx])

    def _distribute(self, G, Th):
        """Actuator torques with G^T tau = Th (exact when square, else min W-norm)."""
        n, Na, M = G.shape
        if Na == M:
            return np.linalg.solve(np.swapaxes(G, -1, -2), Th[..., None])[..., 0], None
        Wi = np.linalg.inv(self.weights)
        WG = Wi @ G
        A = np.swapaxes(G, -1, -2) @ WG
        x = np.linalg.solve(A, Th[..., None])[..., 0]
        return np.einsum("nab,nb->na", WG, x), (Wi, A, x)

    # ---------------------------------------------------------- nominal
    def nominal(self, trajectory: Trajectory, on_limit: str = "raise",
                on_failure: str = "raise") -> NominalInputs:
        """Nominal currents and voltages along a trajectory (eq. 2-238 to 2-240).

        Parameters
        ----------
        trajectory : Trajectory
            The motion, with its jerk q'''.
        on_limit : {"raise", "warn", "clip"}
            Where the motion needs more voltage, current or motor speed than a
            motor's limits: raise :class:`DriveLimitError` naming the first
            sample, its time and the motor; warn (:class:`DriveWarning`) and
            return the inputs as needed; or clip the voltages and currents to
            the limits and flag the samples in ``saturated`` (a speed beyond
            its limit is warned about).  Currents beyond
            :data:`kic.settings.IMPLAUSIBLE_CURRENT_FACTOR` times a motor's
            rating give a DriveWarning (a likely unit mistake) whatever is chosen.
        on_failure : {"raise", "nan"}
            A sample where the model fails (not assembled, a singular closure,
            a singular actuation ``G^a_q`` by kic's condition rule,
            ``model.max_condition``): raise (a :class:`kic.SingularityError` or
            the model's error, naming the sample and its time), or NaN inputs
            there with the reason in ``status``.
        """
        return self._nominal(trajectory, on_limit, on_failure)[0]

    def _nominal(self, tr: Trajectory, on_limit: str = "raise", on_failure: str = "raise"):
        if not isinstance(tr, Trajectory):
            raise ModelError("give a kic.Trajectory (t, q, qd, qdd and qddd)")
        if tr.dof != self.model.dof:
            raise ModelError(f"the trajectory has {tr.dof} coordinates, the model {self.model.dof}")
        if on_limit not in _ON_LIMIT:
            raise ModelError(f"on_limit must be one of {_ON_LIMIT}, got {on_limit!r}")
        if on_failure not in _ON_FAILURE:
            raise ModelError(f"on_failure must be 'raise' or 'nan', got {on_failure!r}")
        tr.require_jerk()
        status, G, H, D = self._sample_status(tr, on_failure)
        ok = np.nonzero(status == Status.OK)[0]
        K, Na = len(tr), self.n_motors
        full = lambda x: _scatter(x, ok, K)                              # noqa: E731
        if ok.size:
            i, di, v, tau, speed, terms = self._inputs(tr.select(ok), G, H, D)
        else:
            i = di = v = tau = speed = np.zeros((0, Na))
            terms = None
        nom = NominalInputs(tr.t, full(i), full(di), full(v), full(tau), full(speed),
                            status=status)
        self._check_limits(nom, on_limit)
        return nom, (ok, terms)

    def _sample_status(self, tr: Trajectory, on_failure: str):
        """The status of every sample by the model's rules (assembly, closure
        singularity) and kic's condition rule for the actuation; raises for the
        first failing sample with ``on_failure="raise"``.  Returns ``(status,
        G, H, D)``, the actuation's coefficients at the good samples."""
        K = len(tr)
        status = np.zeros(K, dtype=int)
        if isinstance(self.model, ClosedModel):
            _, st = self.model.inverse_dynamics(tr.q, tr.qd, tr.qdd, loads=self.loads,
                                                on_failure="nan")
            status[:] = st
            bad = np.nonzero(status != Status.OK)[0]
            if bad.size and on_failure == "raise":
                k = int(bad[0])
                try:
                    self.model.inverse_dynamics(tr.q[k], tr.qd[k], tr.qdd[k], loads=self.loads)
                except KicError as exc:
                    raise _at_sample(exc, k, tr.t[k]) from None
                raise ModelError(f"sample {k} (t = {tr.t[k]:.6g} s): the model fails there "
                                 f"({Status(status[k]).name})")
        ok = np.nonzero(status == Status.OK)[0]
        G = H = D = None
        if ok.size:
            G, H, D = self.actuation(tr.q[ok], 3)
            cond = self._actuation_condition(G)
            singular = ~(cond < getattr(self.model, "max_condition", np.inf))
            if singular.any():
                j = int(np.argmax(singular))
                k = int(ok[j])
                if on_failure == "raise":
                    sv = np.linalg.svd(G[j], compute_uv=False)
                    raise SingularityError(
                        f"sample {k} (t = {tr.t[k]:.6g} s): the actuation of joints "
                        f"{self.joint_names} is singular there (dimensionless condition number "
                        f"{cond[j]:.3e} >= {self.model.max_condition:.0e}): the motors cannot "
                        "produce every load, the currents grow without bound",
                        sigma_min=float(sv[-1]), condition=float(cond[j]),
                        where="actuator Jacobian G^a_q", index=(k,))
                status[ok[singular]] = Status.SINGULAR_LOAD
                keep = ~singular
                ok = ok[keep]
                G, H, D = G[keep], H[keep], D[keep]
        return status, G, H, D

    def _actuation_condition(self, G) -> np.ndarray:
        """Dimensionless 2-norm condition number of ``G^a_q`` (n,) by the closed
        model's rule (prismatic coordinates times, prismatic actuators over, the
        characteristic length); 1 for actuators at the model's coordinates."""
        if self._direct is not None or G.shape[0] == 0:
            return np.ones(G.shape[0])
        from .loops import scaled_condition
        system = self.model.system
        prismatic = system.is_prismatic
        return scaled_condition(np.swapaxes(G, -1, -2), prismatic[system.q_idx],
                                prismatic[self._idx], self.model.characteristic_length)

    def _inputs(self, tr: Trajectory, G, H, D):
        """Currents, their rates, voltages, torques and motor speeds at the
        (good) samples of ``tr``, and the terms the state space reuses."""
        q, qd, qdd, qddd = tr.q, tr.qd, tr.qdd, tr.qddd
        lin = linear_dynamics(self.model, q, qd, qdd, self.loads)
        ad = np.einsum("nam,nm->na", G, qd)
        Hv = np.einsum("nacb,nc->nab", H, qd)             # d(G)/dt = H q'
        add = np.einsum("nam,nm->na", G, qdd) + np.einsum("nab,nb->na", Hv, qd)
        addd = (np.einsum("nam,nm->na", G, qddd) + 2 * np.einsum("nacb,nc,nb->na", H, qd, qdd)
                + np.einsum("nacb,nc,nb->na", H, qdd, qd)
                + np.einsum("nacde,nc,nd,ne->na", D, qd, qd, qd))
        y = add @ self.I_r.T + ad @ self.B_r.T            # rotor loads per actuator
        yd = addd @ self.I_r.T + add @ self.B_r.T
        Th = lin.T + np.einsum("nam,na->nm", G, y)
        Thd = (np.einsum("nij,nj->ni", lin.I, qddd) + np.einsum("nij,nj->ni", lin.C, qdd)
               + np.einsum("nij,nj->ni", lin.K, qd)
               + np.einsum("nam,na->nm", Hv, y) + np.einsum("nam,na->nm", G, yd))
        tau, extra = self._distribute(G, Th)
        if extra is None:
            taud = np.linalg.solve(np.swapaxes(G, -1, -2),
                                   (Thd - np.einsum("nam,na->nm", Hv, tau))[..., None])[..., 0]
        else:
            Wi, A, x = extra
            WG = Wi @ G
            Ad = np.swapaxes(Hv, -1, -2) @ WG + np.swapaxes(WG, -1, -2) @ Hv
            xd = np.linalg.solve(A, (Thd - np.einsum("nij,nj->ni", Ad, x))[..., None])[..., 0]
            taud = np.einsum("ab,nbm,nm->na", Wi, Hv, x) + np.einsum("nab,nb->na", WG, xd)
        CMi = np.linalg.inv(self.C_M)
        i = tau @ CMi.T
        di = taud @ CMi.T
        v = i @ self.R.T + ad @ self.C_E.T                           # eq. 2-235
        if self.electrical == "dynamic":
            v = v + di @ self.L.T
        speed = ad @ self._motor_speed.T
        return i, di, v, tau, speed, (lin, G, H, D, ad, add, y, tau)

    def _check_limits(self, nom: NominalInputs, on_limit: str) -> None:
        """Report (or clip) nominal inputs beyond the motors' limits, and warn on
        currents so far beyond a rating that a unit is likely wrong."""
        t = nom.t
        for a, m in enumerate(self.motors):
            rated = m.rated_current
            i = np.abs(nom.current[:, a])
            if rated is not None and np.nanmax(i, initial=0.0) > IMPLAUSIBLE_CURRENT_FACTOR * rated:
                k = int(np.nanargmax(i))
                warnings.warn(
                    f"motor {self.motor_names[a]!r}: the nominal current {i[k]:.3g} A at sample "
                    f"{k} (t = {t[k]:.6g} s) is {i[k] / rated:.0f} times its rating {rated:.3g} A:"
                    " check the units (torque constant in N m/A, gear ratio as motor radians "
                    "per joint unit, a screw as 2 pi / lead)", DriveWarning, stacklevel=4)
        found = []
        for quantity, values, limits, unit in (
                ("voltage", nom.voltage, self.voltage_limits, "V"),
                ("current", nom.current, self.current_limits, "A"),
                ("speed", nom.speed, self.speed_limits, "rad/s")):
            with np.errstate(invalid="ignore"):
                over = np.abs(values) > limits
            for a in np.nonzero(over.any(axis=0))[0]:
                k = int(np.argmax(over[:, a]))
                peak = float(np.nanmax(np.abs(values[:, a])))
                found.append((k, quantity, int(a), peak, float(limits[a]), unit, over[:, a]))
        if not found:
            return
        found.sort(key=lambda f: f[0])
        for k, quantity, a, peak, limit, unit, over in found:
            message = (f"motor {self.motor_names[a]!r}: the trajectory needs {quantity} "
                       f"{peak:.4g} {unit} (limit {limit:.4g} {unit}), first at sample {k} "
                       f"(t = {t[k]:.6g} s)")
            if on_limit == "raise":
                raise DriveLimitError(message, motor=self.motor_names[a], quantity=quantity,
                                      value=peak, limit=limit, sample=k, time=float(t[k]))
            if on_limit == "warn" or quantity == "speed":
                warnings.warn(message, DriveWarning, stacklevel=4)
            else:
                values = nom.voltage if quantity == "voltage" else nom.current
                values[:, a] = np.clip(values[:, a], -limit, limit)
                nom.saturated[:, a] |= over

    # ------------------------------------------------------- state space
    def state_space(self, trajectory: Trajectory, outputs=None, on_limit: str = "raise",
                    on_failure: str = "raise"):
        """Linearized plant x' = A x + B dv + E dT along a trajectory.

        State ``x = (dq, dq', di)`` (2M + Na; minimal coordinates for closed
        mechanisms), or ``x = (dq, dq')`` in the quasi-static model; inputs the
        motor voltage deviations ``dv``, disturbance ``dT`` a generalized load
        added to the mechanism's load.  Every signal is a deviation from the
        nominal motion and named so.

        Parameters
        ----------
        trajectory : Trajectory
            The nominal motion (with its jerk).
        outputs : None or sequence
            ``None``: y = dq.  Otherwise a list whose items are ``"q"`` (all
            coordinates, named ``dq[c]``), ``"qd"``, ``"i"`` (currents),
            ``"a"`` (the actuated joints' values, e.g. a Stewart platform's leg
            lengths, ``da[joint]``), ``(body, point)`` (the world position of a
            point of a body, ``dp[body.x]`` ...), or ``{name: (body, point)}``
            / ``{name: (body, point, axes)}`` (a named point, ``dp[tip.x]``,
            with ``axes`` a subset of ``"xyz"``, e.g. ``"xy"`` for a planar
            mechanism).
        on_limit, on_failure : str
            As :meth:`nominal`; with ``on_failure="nan"`` the failing samples'
            matrices are NaN and ``status`` says why.

        Returns
        -------
        kic.StateSpaceSequence
        """
        from .statespace import StateSpaceSequence
        nom, (ok, terms) = self._nominal(trajectory, on_limit, on_failure)
        tr = trajectory
        K, M, Na = len(tr), self.model.dof, self.n_motors
        status = nom.status
        blank = lambda *shape: np.full((K,) + shape, np.nan)              # noqa: E731
        I_, C_, K_, G_, H_ = blank(M, M), blank(M, M), blank(M, M), blank(Na, M), blank(Na, M)
        if ok.size:
            Ihat, Chat, Khat, G, Hv = self._linear_terms(tr, ok, terms)
            spd = _spd_ok(Ihat)
            if not spd.all():
                k = int(ok[np.argmin(spd)])
                if on_failure == "raise":
                    try:
                        spd_solve(Ihat[~spd][:1], np.zeros((1, M)),
                                  "inertia of the mechanism with the rotors")
                    except SingularityError as exc:
                        raise _at_sample(exc, k, tr.t[k]) from None
                status[ok[~spd]] = Status.SINGULAR_LOAD
            sel = ok[spd]
            I_[sel], C_[sel], K_[sel], G_[sel], H_[sel] = (Ihat[spd], Chat[spd], Khat[spd],
                                                          G[spd], Hv[spd])
        good = status == Status.OK
        names = list(self.model.coordinate_names)
        q_eval = tr.q.copy()
        q_eval[~good] = np.nan
        C, Dm, out_names = self._outputs(outputs, q_eval, good, G_, H_, names,
                                         self.motor_names, self.n_states)
        L = self.L if self.electrical == "dynamic" else None
        return StateSpaceSequence.electromechanical(
            tr.t, I_, C_, K_, G_, H_, self.C_M, self.C_E, L, self.R, C,
            coordinates=names, motors=self.motor_names, outputs=out_names, nominal=nom,
            trajectory=tr, D=Dm, status=status)

    def _linear_terms(self, tr: Trajectory, ok, terms):
        """I, C, K of the mechanism with the rotors, G^a_q and d(G^a_q q')/dq at
        the good samples ``ok`` (eq. 2-225 with the reflected rotor terms)."""
        lin, G, H, D, ad, add, y, tau = terms
        qd, qdd = tr.qd[ok], tr.qdd[ok]
        Hv = np.einsum("nacb,nc->nab", H, qd)                      # [a, c] d a'/dq_c
        dadd_dq = (np.einsum("nace,ne->nac", H, qdd)
                   + np.einsum("nacde,nd,ne->nac", D, qd, qd))      # d a''/dq_c
        dadd_dqd = Hv + np.einsum("naec,ne->nac", H, qd)           # d a''/dq'_c
        Gt = np.swapaxes(G, -1, -2)
        Ihat = lin.I + Gt @ self.I_r @ G
        Chat = lin.C + Gt @ (self.I_r @ dadd_dqd + self.B_r @ G)
        # the motor torques tau = C_M i act through G^T(q): their q-derivative
        Khat = (lin.K + np.einsum("nacb,na->nbc", H, y - tau)
                + Gt @ (self.I_r @ dadd_dq + self.B_r @ Hv))
        return Ihat, Chat, Khat, G, Hv

    def _outputs(self, outputs, q, good, G, Hv, names, motors, N):
        """Output rows C (K, p, N) and D (K, p, Na), and their names."""
        K, M, Na = q.shape[0], self.model.dof, self.n_motors
        if outputs is None:
            outputs = ["q"]
        if isinstance(outputs, (str, dict)):
            outputs = [outputs]
        rows, drows, labels = [], [], []

        def add(Cq, label, Dq=None):
            rows.append(Cq)
            drows.append(np.zeros((K, Cq.shape[1], Na)) if Dq is None else Dq)
            labels.extend(label)

        for item in outputs:
            if isinstance(item, str) and item in ("q", "qd"):
                Cq = np.zeros((K, M, N))
                Cq[:, :, (0 if item == "q" else M):(M if item == "q" else 2 * M)] = np.eye(M)
                add(Cq, [f"d{item}[{c}]" for c in names])
            elif isinstance(item, str) and item == "i":
                Cq = np.zeros((K, Na, N))
                Dq = None
                if self.electrical == "dynamic":
                    Cq[:, :, 2 * M:] = np.eye(Na)
                else:                     # di = R^-1 (dv - C_E (dG dq + G dq'))
                    Ri = np.linalg.inv(self.R)
                    Cq[:, :, :M] = -Ri @ self.C_E @ Hv
                    Cq[:, :, M:2 * M] = -Ri @ self.C_E @ G
                    Dq = np.broadcast_to(Ri, (K, Na, Na)).copy()
                add(Cq, [f"di[{m}]" for m in motors], Dq)
            elif isinstance(item, str) and item == "a":
                Cq = np.zeros((K, Na, N))
                Cq[:, :, :M] = G
                add(Cq, [f"da[{j}]" for j in self.joint_names])
            elif isinstance(item, (tuple, dict)):
                for name, (body, point, axes) in _points(item):
                    Gp = np.full((K, 3, M), np.nan)
                    if good.any():
                        Gp[good] = self.model.kinematics(q[good], 1).point(body, point) \
                            .G.reshape(-1, 3, M)
                    sel = ["xyz".index(c) for c in axes]
                    Cq = np.zeros((K, len(sel), N))
                    Cq[:, :, :M] = Gp[:, sel]
                    add(Cq, [f"dp[{name}.{c}]" for c in axes])
            else:
                raise ModelError(f"unknown output {item!r}: use 'q', 'qd', 'i', 'a', "
                                 "(body, point) or {name: (body, point[, axes])}")
        if len(set(labels)) != len(labels):
            raise ModelError(f"output names repeat: {labels}")
        return np.concatenate(rows, axis=1), np.concatenate(drows, axis=1), labels

    # --------------------------------------------------- nonlinear model
    def terminal(self, t, x, v, held=None):
        """The motors' terminal voltages and currents in state ``x`` under the
        commanded voltages ``v`` (Na,), after saturation (see the class notes):
        ``(voltage (Na,) V, current (Na,) A, saturated (Na,) bool)``.  The
        electrical power delivered is ``voltage @ current``.  ``held``: as
        :meth:`rhs`."""
        state = self.evaluate(t, x, v, held=held)
        return state.voltage, state.current, state.saturated

    def _terminal(self, i_state, ad, v, held=None):
        e = self.C_E @ ad                                   # back-EMF per motor (V)
        vmax, imax = self.voltage_limits, self.current_limits
        if held is not None:
            # the caller's saturation modes: v applied as given, the held motors at
            # their current limit
            sat = (held != 0) | (np.abs(v) >= vmax)
            on = held != 0
            if self.electrical == "dynamic":
                vc = np.where(on, self._R_diag * i_state + e, v) if on.any() else v
                return vc, i_state, sat
            i = (v - e) / self._R_diag
            if on.any():
                i = np.where(on, np.where(on, held, 0) * np.where(on, imax, 0.0), i)
            return (np.where(on, self._R_diag * i + e, v) if on.any() else v), i, sat
        vc = np.clip(v, -vmax, vmax)
        sat = vc != v
        if self.electrical == "dynamic":
            # a current-limiting amplifier: at the limit, no voltage that drives it further
            push = vc - self._R_diag * i_state - e
            hold = (np.abs(i_state) >= imax) & (push * i_state > 0)
            if hold.any():
                vc = np.where(hold, self._R_diag * i_state + e, vc)
                sat = sat | hold
            return vc, i_state, sat
        i = (vc - e) / self._R_diag
        ic = np.clip(i, -imax, imax)
        limited = ic != i
        if limited.any():
            vc = np.where(limited, self._R_diag * ic + e, vc)
        return vc, ic, sat | limited

    def _voltage(self, v) -> np.ndarray:
        v = np.asarray(v, dtype=float)
        if v.shape != (self.n_motors,) or not np.all(np.isfinite(v)):
            raise ModelError(f"the voltages must be {self.n_motors} finite numbers (V) for "
                             f"motors {self.motor_names}, got {v!r}")
        return v

    def _split(self, x):
        x = np.asarray(x, dtype=float)
        if x.shape != (self.n_states,):
            raise ModelError(f"the state must have {self.n_states} entries {self.state_names} "
                             f"({self.electrical} model), got shape {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ModelError(f"the state contains NaN or infinite values: {x}")
        M = self.model.dof
        q = np.ascontiguousarray(x[:M])
        qd = np.ascontiguousarray(x[M:2 * M])
        return q, qd, (x[2 * M:] if self.electrical == "dynamic" else None)

    def _pose_terms(self, t, q, qd):
        ev = self._pose
        if ev is None or ev.compiled != use_compiled():
            ev = self._pose = _PoseEvaluator(self)
        try:
            return ev(q, qd)
        except KicError as exc:
            raise _at_time(exc, t) from None

    def rhs(self, t, x, v, disturbance=None, held=None) -> np.ndarray:
        """The nonlinear state equations for simulation: ``x'`` (:attr:`n_states`).

        ``x = (q, q', i)`` (dynamic) or ``(q, q')`` (quasi-static), ``v`` (Na,)
        the commanded motor voltages (V), saturated by the motors' limits (see
        the class notes and :meth:`terminal`); ``disturbance`` (M,) an extra
        generalized load on the mechanism.  Mechanism and rotors::

            (I* + G^T I_r G) q'' = G^T (C_M i - I_r h - B_r a') - bias - w

        with ``a' = G q'``, ``h = a''`` at ``q'' = 0``; armature
        ``L i' = v - R i - C_E a'``.  Evaluated on the compiled kernels where
        the model has them (the last pose's joint values as the warm start), and
        solved by kic's SPD rule: a singular inertia raises
        :class:`kic.SingularityError` naming ``t``.

        ``held`` (Na,) of -1, 0, +1: the saturation decided by the caller (a
        simulation that switches it at located events, so that the equations
        are smooth between them): ``v`` is applied as given, and the motors with
        ``held = +-1`` are at their current limit of that sign (dynamic model:
        the voltage that holds the current, ``R i + C_E a'``; quasi-static: the
        current ``+-current_limit``).  None: saturation from the state, as above.
        """
        return self.evaluate(t, x, v, disturbance, held).rate

    def evaluate(self, t, x, v, disturbance=None, held=None) -> "DriveState":
        """:meth:`rhs` with what the motors do there (:class:`DriveState`: the
        applied voltages, the currents, the saturation flags and the actuator
        rates ``a'``), from one evaluation of the pose."""
        q, qd, i_state = self._split(x)
        I, bias, G, ad, h = self._pose_terms(t, q, qd)
        if held is not None:
            held = np.asarray(held)
            if held.shape != (self.n_motors,):
                raise ModelError(f"held must have {self.n_motors} entries (-1, 0, +1), "
                                 f"got shape {held.shape}")
        vc, i, sat = self._terminal(i_state, ad, self._voltage(v), held)
        r = G.T @ (self.C_M @ i - self.I_r @ h - self.B_r @ ad) - bias
        if disturbance is not None:
            w = np.asarray(disturbance, dtype=float)
            if w.shape != bias.shape:
                raise ModelError(f"disturbance must have {bias.size} entries, got {w.shape}")
            r = r - w
        Ihat = I + (self._J if self._direct is not None else G.T @ self.I_r @ G)
        M = bias.size
        qdd = np.empty(M)
        if not linalg.cholesky_solve(Ihat, r, np.zeros((M, M)), qdd):
            try:
                spd_solve(Ihat, r, "inertia of the mechanism with the rotors")
            except SingularityError as exc:
                raise _at_time(exc, t) from None
        if self.electrical == "quasi_static":
            rate = np.concatenate([qd, qdd])
        else:
            di = (vc - self._R_diag * i - self.C_E @ ad) / self._L_diag
            if held is not None:
                di[held != 0] = 0.0          # held exactly (not to the rounding of R i + e)
            rate = np.concatenate([qd, qdd, di])
        return DriveState(rate, vc, i, sat, ad)

    def inverse(self, q, qd, qdd) -> tuple[np.ndarray, np.ndarray]:
        """The motor currents (Na,) A and voltages (Na,) V that give the
        accelerations ``qdd`` at ``(q, qd)`` (one pose; computed torque):
        ``G^T C_M i = (I* + G^T I_r G) q'' + bias + G^T (I_r h + B_r a')``
        (distributed by the weights W when over-actuated), ``v = R i + C_E a'``
        (the armature's quasi-static voltage: in the dynamic model, without
        ``L i'``).  Evaluated as :meth:`rhs` is, on the compiled kernels where
        the model has them; the motors' limits are not applied."""
        M = self.model.dof
        q = finite_array(q, "q", (M,))
        qd = finite_array(qd, "qd", (M,))
        qdd = finite_array(qdd, "qdd", (M,))
        I, bias, G, ad, h = self._pose_terms(None, np.ascontiguousarray(q),
                                             np.ascontiguousarray(qd))
        add = G @ qdd + h
        T = I @ qdd + bias + G.T @ (self.I_r @ add + self.B_r @ ad)
        tau = self._distribute(G[None], T[None])[0][0]
        i = np.linalg.solve(self.C_M, tau)
        return i, self.R @ i + self.C_E @ ad

    @property
    def _J(self) -> np.ndarray:
        """The reflected rotor inertia in the coordinates when it is constant."""
        J = self.__dict__.get("_J_const")
        if J is None:
            S = self._direct
            J = self.__dict__["_J_const"] = S.T @ self.I_r @ S
        return J


class _PoseEvaluator:
    """What :meth:`ActuatedSystem.rhs` needs at one pose (q, q'): I* (M, M), the
    bias loads (M,) (velocity terms, gravity, loads), ``G^a_q`` (Na, M), the
    actuator rates a' and their accelerations h at q'' = 0 (Na,).

    Closed models without applied loads are evaluated as the model's evaluation
    chooses (:meth:`kic.closed_eval.CompiledEvaluation.drive_terms`: the compiled
    kernels), each pose assembled from the last one's joint values; everything
    else, and every pose that evaluation declines, through the model's public
    methods (which also raise, with the model's report, where a pose fails)."""

    def __init__(self, system: ActuatedSystem) -> None:
        model = system.model
        self.system, self.model = system, model
        self.compiled = use_compiled()
        self.phi = None
        M, Na = model.dof, system.n_motors
        self.zero = np.zeros(M)
        self.h0 = np.zeros(Na)
        self.closed = isinstance(model, ClosedModel)
        self.act = np.ascontiguousarray(system._idx, dtype=np.int64)
        self.evaluated = self.closed and system.loads is None

    def __call__(self, q, qd):
        if self.evaluated:
            out = self._evaluation(q, qd)
            if out is not None:
                return out
        return self._public(q, qd)

    def _evaluation(self, q, qd):
        S = self.system._direct
        q = np.ascontiguousarray(q, dtype=float)
        qd = np.ascontiguousarray(qd, dtype=float)
        terms = self.model.evaluation.drive_terms(
            q, qd, self.phi, self.act[:0] if S is not None else self.act)
        if terms is None:
            return None
        I, bias, self.phi, G, ad, h = terms
        if S is not None:
            return I, bias, S, S @ qd, self.h0
        return I, bias, G, ad, h

    def _public(self, q, qd):
        system, model, S = self.system, self.model, self.system._direct
        loads = system.loads
        if self.closed:
            phi = np.asarray(model.assemble(q, start=self.phi), dtype=float).reshape(-1)
            bias = model.inverse_dynamics(q, qd, self.zero, loads=loads, start=phi)
            I = model.dynamics(q, start=phi).I_star
            self.phi = phi
        else:
            bias = model.inverse_dynamics(q, qd, self.zero, loads=loads)
            I = model.dynamics(q).I_star
        bias = np.asarray(bias, dtype=float).reshape(-1)
        I = np.asarray(I, dtype=float).reshape(bias.size, bias.size)
        if S is not None:
            return I, bias, S, S @ qd, self.h0
        G, H, _ = system.actuation(q, 2)
        G, H = G[0], H[0]
        return I, bias, G, G @ qd, np.einsum("acb,c,b->a", H, qd, qd)


def _prismatic(model) -> np.ndarray:
    """Which joints (phi order) of a model are prismatic."""
    if isinstance(model, ClosedModel):
        return np.asarray(model.system.is_prismatic, dtype=bool)
    return ~np.asarray(model.is_revolute, dtype=bool)


def _points(item):
    """(name, (body, point, axes)) of a point output item."""
    if isinstance(item, tuple):
        if not 2 <= len(item) <= 3:
            raise ModelError(f"a point output is (body, point[, axes]), got {item!r}")
        specs = [(str(item[0]), (item[0], item[1], item[2] if len(item) > 2 else "xyz"))]
    else:
        specs = []
        for name, spec in item.items():
            if not isinstance(spec, tuple) or not 2 <= len(spec) <= 3:
                raise ModelError(f"output {name!r}: give (body, point) or (body, point, axes), "
                                 f"got {spec!r}")
            specs.append((str(name), (spec[0], spec[1], spec[2] if len(spec) > 2 else "xyz")))
    for name, (_, _, axes) in specs:
        if not isinstance(axes, str) or not axes or any(c not in "xyz" for c in axes) \
                or len(set(axes)) != len(axes):
            raise ModelError(f"output {name!r}: axes must be distinct letters of 'xyz', "
                             f"got {axes!r}")
    return specs


def _scatter(x, rows, K):
    """``x`` (n, ...) placed at ``rows`` of a NaN array of K rows."""
    out = np.full((K,) + x.shape[1:], np.nan)
    out[rows] = x
    return out


def _spd_ok(A) -> np.ndarray:
    """Which of the stacked matrices (n, M, M) pass kic's SPD rule (the
    factorization of :func:`kic.backend.spd_solve`, one failing matrix at a time)."""
    ok = np.ones(A.shape[0], dtype=bool)
    rhs = np.zeros(A.shape[:2])
    while ok.any():
        idx = np.nonzero(ok)[0]
        try:
            spd_solve(A[idx], rhs[idx])
            return ok
        except SingularityError as exc:
            ok[idx[exc.index[0] if exc.index else 0]] = False
    return ok


def _at_sample(exc: KicError, k: int, t: float) -> KicError:
    """The same error, said of sample k (time t) of a trajectory."""
    new = copy.copy(exc)
    new.args = (f"sample {k} (t = {float(t):.6g} s): {exc}",)
    new.index = (k,)
    return new


def _at_time(exc: KicError, t) -> KicError:
    """The same error, said of the state at time t of a simulation (None: no time)."""
    if t is None:
        return exc
    new = copy.copy(exc)
    try:
        when = f"t = {float(t):.6g} s"
    except (TypeError, ValueError):
        when = f"t = {t!r}"
    new.args = (f"{when}: {exc}",)
    return new
