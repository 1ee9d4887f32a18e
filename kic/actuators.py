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
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ._array import finite_array
from .errors import ModelError, SingularityError
from .linearize import linear_dynamics
from .trajectory import Trajectory

__all__ = ["DCMotor", "ActuatedSystem", "NominalInputs"]


class DCMotor:
    """A separately excited (armature-controlled) DC motor.

    Parameters
    ----------
    resistance : float
        Armature resistance R (ohm), > 0.
    inductance : float
        Armature inductance L (H), > 0.
    torque_constant : float
        C_M (N m / A), > 0.
    back_emf_constant : float
        C_E (V s / rad), > 0.
    rotor_inertia : float
        I_r (kg m^2), >= 0, on the motor shaft.
    rotor_damping : float
        B_r (N m s / rad), >= 0, on the motor shaft.
    name : str, optional

    Examples
    --------
    >>> import kic
    >>> m = kic.DCMotor(1.2, 2e-3, 0.05, 0.05, rotor_inertia=3e-5, rotor_damping=1e-5)
    >>> m.resistance, m.time_constant
    (1.2, 0.0016666666666666668)
    """

    def __init__(self, resistance: float, inductance: float, torque_constant: float,
                 back_emf_constant: float, rotor_inertia: float = 0.0,
                 rotor_damping: float = 0.0, name: str | None = None) -> None:
        label = f"motor {name!r}" if name else "motor"
        vals = {}
        for key, v, strict in (("resistance", resistance, True), ("inductance", inductance, True),
                               ("torque_constant", torque_constant, True),
                               ("back_emf_constant", back_emf_constant, True),
                               ("rotor_inertia", rotor_inertia, False),
                               ("rotor_damping", rotor_damping, False)):
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
        self.name = name

    @property
    def time_constant(self) -> float:
        """Electrical time constant L/R (s)."""
        return self.inductance / self.resistance

    def __repr__(self) -> str:
        return (f"DCMotor(R={self.resistance}, L={self.inductance}, C_M={self.torque_constant}, "
                f"C_E={self.back_emf_constant}, name={self.name!r})")


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
    """

    def __init__(self, t, current, current_rate, voltage, torque) -> None:
        self.t, self.current, self.current_rate = t, current, current_rate
        self.voltage, self.torque = voltage, torque


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
        ``N`` per motor (motor angle = N x joint coordinate); default 1.
    gear_jacobian : array_like (Na, Na), optional
        Instead of ratios, the constant drive-train Jacobian ``G_m`` with
        ``a' = G_m theta_m'`` (seed eq. 2-230).
    weights : array_like (Na, Na) or (Na,), optional
        W of the load distribution (minimise ``tau^T W tau``); default the
        copper loss ``C_M_a^-T R C_M_a^-1``.
    loads : kic.Loads, optional
        Constant applied loads, springs and dampers on the mechanism.

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
                 gear_jacobian=None, weights=None, loads=None) -> None:
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
        if gear_jacobian is not None and gear_ratios is not None:
            raise ModelError("give gear_ratios or gear_jacobian, not both")
        if gear_jacobian is None:
            N = np.ones(Na) if gear_ratios is None else finite_array(gear_ratios, "gear_ratios")
            if N.shape != (Na,) or np.any(N == 0):
                raise ModelError(f"gear_ratios must be {Na} non-zero numbers, got {gear_ratios!r}")
            Gm = np.diag(1.0 / N)
        else:
            Gm = finite_array(gear_jacobian, "gear_jacobian", (Na, Na))
            sv = np.linalg.svd(Gm, compute_uv=False)
            if not sv[-1] > 1e-12 * sv[0]:
                raise SingularityError(
                    f"the drive-train Jacobian is singular (smallest singular value {sv[-1]:.3e},"
                    f" condition {sv[0] / sv[-1] if sv[-1] > 0 else np.inf:.3e})",
                    sigma_min=float(sv[-1]), condition=float(sv[0] / sv[-1]) if sv[-1] > 0
                    else np.inf, where="drive-train Jacobian G_m")
        self.gear_jacobian = Gm
        Gi = np.linalg.inv(Gm)
        d = lambda attr: np.diag([getattr(m, attr) for m in motors])        # noqa: E731
        self.R, self.L = d("resistance"), d("inductance")
        self.C_E = d("back_emf_constant") @ Gi               # eq. 2-234
        self.C_M = Gi.T @ d("torque_constant")
        self.I_r = Gi.T @ d("rotor_inertia") @ Gi            # eq. 2-237
        self.B_r = Gi.T @ d("rotor_damping") @ Gi
        if weights is None:
            CMi = np.linalg.inv(self.C_M)
            W = CMi.T @ self.R @ CMi
        else:
            W = finite_array(weights, "weights")
            W = np.diag(W) if W.ndim == 1 else W
            if W.shape != (Na, Na) or np.any(np.linalg.eigvalsh(0.5 * (W + W.T)) <= 0):
                raise ModelError(f"weights must be positive definite ({Na}x{Na} or {Na} values)")
        self.weights = W

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
    def nominal(self, trajectory: Trajectory) -> NominalInputs:
        """Nominal currents and voltages along a trajectory (eq. 2-238 to 2-240)."""
        return self._nominal(trajectory)[0]

    def _nominal(self, tr: Trajectory):
        if not isinstance(tr, Trajectory):
            raise ModelError("give a kic.Trajectory (t, q, qd, qdd and qddd)")
        if tr.dof != self.model.dof:
            raise ModelError(f"the trajectory has {tr.dof} coordinates, the model {self.model.dof}")
        qddd = tr.require_jerk()
        q, qd, qdd = tr.q, tr.qd, tr.qdd
        lin = linear_dynamics(self.model, q, qd, qdd, self.loads)
        G, H, D = self.actuation(q, 3)
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
        v = di @ self.L.T + i @ self.R.T + ad @ self.C_E.T       # eq. 2-235
        nom = NominalInputs(tr.t, i, di, v, tau)
        return nom, (lin, G, H, D, ad, add, y, tau)

    # ------------------------------------------------------- state space
    def state_space(self, trajectory: Trajectory, outputs=None):
        """Linearized plant x' = A x + B dv + E dT along a trajectory.

        State ``x = (dq, dq', di)`` (2M + Na; minimal coordinates for closed
        mechanisms), inputs the motor voltage deviations ``dv``, disturbance
        ``dT`` a generalized load added to the mechanism's load.

        Parameters
        ----------
        trajectory : Trajectory
            The nominal motion (with q''').
        outputs : None or sequence
            ``None``: y = dq.  Otherwise a list whose items are ``"q"`` (all
            coordinates), ``"qd"``, ``"i"``, or ``(body_or_link, point)``: the
            world position deviation of a point through its G (three rows).

        Returns
        -------
        kic.StateSpaceSequence
        """
        from .statespace import StateSpaceSequence
        nom, (lin, G, H, D, ad, add, y, tau) = self._nominal(trajectory)
        tr = trajectory
        q, qd, qdd = tr.q, tr.qd, tr.qdd
        n, M = q.shape
        Na = self.n_motors
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
        names = self._coordinate_names()
        motors = [m.name or f"m{k + 1}" for k, m in enumerate(self.motors)]
        C, out_names = self._outputs(outputs, q, names, motors, n, M, Na)
        return StateSpaceSequence.electromechanical(
            tr.t, Ihat, Chat, Khat, G, Hv, self.C_M, self.C_E, self.L, self.R, C,
            coordinates=names, motors=motors, outputs=out_names, nominal=nom, trajectory=tr)

    def _coordinate_names(self):
        return list(self.model.coordinate_names)

    def _outputs(self, outputs, q, names, motors, n, M, Na):
        N = 2 * M + Na
        if outputs is None:
            outputs = ["q"]
        rows, labels = [], []
        for item in outputs:
            if item == "q":
                Cq = np.zeros((n, M, N))
                Cq[:, :, :M] = np.eye(M)
                rows.append(Cq)
                labels += [f"q[{c}]" for c in names]
            elif item == "qd":
                Cq = np.zeros((n, M, N))
                Cq[:, :, M:2 * M] = np.eye(M)
                rows.append(Cq)
                labels += [f"qd[{c}]" for c in names]
            elif item == "i":
                Cq = np.zeros((n, Na, N))
                Cq[:, :, 2 * M:] = np.eye(Na)
                rows.append(Cq)
                labels += [f"i[{m}]" for m in motors]
            elif isinstance(item, tuple) and len(item) == 2:
                body, point = item
                Gp = self.model.kinematics(q, 1).point(body, point).G.reshape(n, 3, M)
                Cq = np.zeros((n, 3, N))
                Cq[:, :, :M] = Gp
                rows.append(Cq)
                labels += [f"{body}.{a}" for a in "xyz"]
            else:
                raise ModelError(f"unknown output {item!r}: use 'q', 'qd', 'i' or "
                                 "(body, point)")
        return np.concatenate(rows, axis=1), labels

    # --------------------------------------------------- nonlinear model
    def rhs(self, t, x, v, disturbance=None) -> np.ndarray:
        """The nonlinear state equations, x = (q, q', i), for simulation.

        ``v`` (Na,) motor voltages (V); ``disturbance`` (M,) an extra generalized
        load on the mechanism.
        """
        M = self.model.dof
        q, qd, i = x[:M], x[M:2 * M], x[2 * M:]
        G, H, _ = self.actuation(q, 2)
        G, H = G[0], H[0]
        ad = G @ qd
        tau = self.C_M @ i
        # mechanism + rotors: (I* + G^T I_r G) q'' = G^T (tau - I_r H(q',q') - B_r a') - bias
        Hqq = np.einsum("acb,c,b->a", H, qd, qd)
        bias = self.model.inverse_dynamics(q, qd, np.zeros(M), loads=self.loads)
        I = self.model.dynamics(q).I_star + G.T @ self.I_r @ G
        rhs = G.T @ (tau - self.I_r @ Hqq - self.B_r @ ad) - bias
        if disturbance is not None:
            rhs = rhs - np.asarray(disturbance, float)
        qdd = np.linalg.solve(I, rhs)
        di = np.linalg.solve(self.L, v - self.R @ i - self.C_E @ ad)
        return np.concatenate([qd, qdd, di])
