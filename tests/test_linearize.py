"""Linearized dynamics, DC-motor actuators, nominal inputs and the state space.

Every kic result here is checked against something written independently in
this file:

- ``kic.linear_dynamics`` (I*, C, K, T) against central finite differences of
  ``inverse_dynamics`` in q'', q' and q (serial chains with loads, closed models);
- ``ActuatedSystem.state_space`` (A, B, E, C) against central finite
  differences of :class:`MotorODE`, the nonlinear motor-plus-mechanism ODE
  written below from the dynamic model (``I_star``, ``inverse_dynamics`` for the
  bias, the actuation Jacobian) and the seed's motor equations (eq. 2-228,
  2-230) in motor-shaft variables - not from ``ActuatedSystem.rhs``;
- the nominal voltages by open-loop integration of MotorODE, the linear model by
  propagating a small perturbation, the four-bar's 3x3 model by a reduced ODE in
  the crank angle written from the loop geometry alone (no kic at all).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.interpolate import CubicSpline

import kic
import mechanisms
from helpers import derivative, random_chain, random_loads, rel_err, five_bar_stretched

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

RTOL_FD = 1e-6          # finite differences against the analytic linearization


# --------------------------------------------------------------- helpers
def _fd_linear(model, q, qd, qdd, loads=None, h=1e-5):
    """I, C, K by central differences of the inverse dynamics."""
    T = lambda a, b, c: model.inverse_dynamics(a, b, c, loads=loads)     # noqa: E731
    return (derivative(lambda x: T(q, qd, x), qdd, h), derivative(lambda x: T(q, x, qdd), qd, h),
            derivative(lambda x: T(x, qd, qdd), q, h))


def _block_errors(A, A_ref, M):
    """Relative error of each block of a (2M + Na)-state matrix (rows x columns in
    (q, q', i)); blocks that are zero in the reference are measured against the
    norm of their row block."""
    n = A.shape[0]
    cuts = [slice(0, M), slice(M, 2 * M), slice(2 * M, n)]
    cols = [slice(0, M), slice(M, 2 * M), slice(2 * M, A.shape[1])]
    out = {}
    for r, rs in zip("q q' i".split(), cuts):
        row_norm = max(np.linalg.norm(A_ref[rs]), 1e-300)
        for c, cs in zip("q q' i".split(), cols):
            if cs.start >= cs.stop:
                continue
            ref = A_ref[rs, cs]
            floor = np.linalg.norm(ref) if np.linalg.norm(ref) > 1e-9 * row_norm else row_norm
            out[(r, c)] = float(np.linalg.norm(A[rs, cs] - ref) / floor)
    return out


# ------------------------------------------------ the test's nonlinear model
class MotorODE:
    """Mechanism plus geared DC motors, state x = (q, q', i), written from the
    seed's motor equations in motor-shaft variables::

        L i' + R i + C_E theta_m' = v
        I_r theta_m'' + B_r theta_m' - C_M i = -tau_load
        a' = G_m theta_m'                  (drive train; gear ratio N: G_m = 1/N)

    with ``tau_load = G_m^T tau_a`` (virtual work: tau_load . theta_m' = tau_a . a')
    and the mechanism ``(G^a_q)^T tau_a = I*(q) q'' + bias(q, q') + w``, where
    ``a' = G^a_q q'``, ``a'' = G^a_q q'' + h(q, q')``.  G^a_q: the identity rows of a
    serial chain, else ``model.actuator_jacobian``; h: the actuated joints'
    accelerations at q'' = 0 from ``model.joint_rates`` (the acceleration-level
    closure, no H).
    """

    def __init__(self, model, motors, joints=None, gear_ratios=None, gear_jacobian=None,
                 loads=None):
        self.model, self.loads = model, loads
        self.serial = isinstance(model, kic.SerialChain)
        M, Na = model.dof, len(motors)
        if joints is None:
            joints = list(range(M)) if self.serial else list(model.actuators)
        self.joints = list(joints)
        d = lambda a: np.diag([getattr(m, a) for m in motors])           # noqa: E731
        self.R, self.L = d("resistance"), d("inductance")
        self.CM, self.CE = d("torque_constant"), d("back_emf_constant")
        self.Ir, self.Br = d("rotor_inertia"), d("rotor_damping")
        if gear_jacobian is None:
            N = np.ones(Na) if gear_ratios is None else np.asarray(gear_ratios, float)
            gear_jacobian = np.diag(1.0 / N)
        self.Gm = np.asarray(gear_jacobian, float)
        self.Gmi = np.linalg.inv(self.Gm)
        if self.serial:
            self.sel = np.eye(M)[[model.joint_index(j) for j in self.joints]]
            self.identity = False
        else:
            self.idx = [model.phi_names.index(j) for j in self.joints]
            # actuators at the model's own coordinates: a = q exactly
            self.identity = self.joints == list(model.coordinate_names)
        self.M, self.Na = M, Na

    def actuation(self, q, qd):
        """G^a_q (Na, M) and h = a'' at q'' = 0 (Na,)."""
        if self.serial:
            return self.sel, np.zeros(self.Na)
        if self.identity:
            return np.eye(self.M), np.zeros(self.M)
        G = self.model.actuator_jacobian(q, self.joints)
        _, phidd = self.model.joint_rates(q, qd, np.zeros(self.M))
        return G, phidd[self.idx]

    def __call__(self, x, v, w=None):
        M = self.M
        q, qd, i = x[:M], x[M:2 * M], x[2 * M:]
        G, h = self.actuation(q, qd)
        S = self.Gmi @ G                              # theta_m' = S q'
        thd = S @ qd
        I = self.model.dynamics(q).I_star + S.T @ self.Ir @ S
        bias = self.model.inverse_dynamics(q, qd, np.zeros(M), loads=self.loads)
        if w is not None:
            bias = bias + w
        # tau_a = G_m^-T tau_load, tau_load = C_M i - B_r theta_m' - I_r theta_m''
        rhs = S.T @ (self.CM @ i - self.Br @ thd - self.Ir @ (self.Gmi @ h)) - bias
        qdd = np.linalg.solve(I, rhs)
        di = np.linalg.solve(self.L, v - self.R @ i - self.CE @ thd)
        return np.concatenate([qd, qdd, di])


def _quintic_at(q0, q1, duration, t):
    """The minimum-jerk motion (q and three derivatives) at arbitrary times, written out."""
    q0, q1, t = np.asarray(q0, float), np.asarray(q1, float), np.atleast_1d(t)
    s, T, d = t / duration, duration, q1 - q0
    p = [10 * s**3 - 15 * s**4 + 6 * s**5, (30 * s**2 - 60 * s**3 + 30 * s**4) / T,
         (60 * s - 180 * s**2 + 120 * s**3) / T**2, (60 - 360 * s + 360 * s**2) / T**3]
    return kic.Trajectory(t, q0 + np.outer(p[0], d), *(np.outer(x, d) for x in p[1:]))


def _check_current_rate(plant, q0, q1, duration, times, h=1e-5, rtol=1e-7):
    """Nominal current rate against a central difference in time of the nominal current."""
    for t in times:
        i = [plant.nominal(_quintic_at(q0, q1, duration, t + s)).current[0] for s in (-h, h)]
        di = plant.nominal(_quintic_at(q0, q1, duration, t)).current_rate[0]
        assert rel_err(di, (i[1] - i[0]) / (2 * h), floor=0) < rtol, (t, di)


def _nominal_state(ss, k):
    tr, nom = ss.trajectory, ss.nominal
    return np.concatenate([tr.q[k], tr.qd[k], nom.current[k]])


def _check_state_space(plant, ode, ss, k, rtol=RTOL_FD):
    """A, B, E at point k against central differences of the ODE; returns errors."""
    M, Na = ode.M, ode.Na
    x0 = _nominal_state(ss, k)
    v0 = ss.nominal.voltage[k]
    steps = np.concatenate([np.full(M, 1e-6), np.full(M, 1e-5),
                            1e-5 * np.maximum(1.0, np.abs(x0[2 * M:]))])
    A_fd = derivative(lambda x: ode(x, v0), x0, steps)
    B_fd = derivative(lambda v: ode(x0, v), v0, np.full(Na, 1e-4))
    E_fd = derivative(lambda w: ode(x0, v0, w), np.zeros(M), np.full(M, 1e-3))
    errs = _block_errors(ss.A[k], A_fd, M)
    errs["B"] = rel_err(ss.B[k], B_fd, floor=0)
    errs["E"] = rel_err(ss.E[k], E_fd, floor=0)
    worst = max(errs, key=errs.get)
    assert errs[worst] < rtol, f"point {k}: {worst} relative error {errs[worst]:.2e}\n{errs}"
    return errs


# ----------------------------------------------------------- the plants
def puma_plant(loads=True):
    """PUMA 560 with the published gears, rotor inertias and viscous friction
    (mechanisms.puma560_drives) and armature constants of its size class."""
    arm = mechanisms.puma560()
    dr = mechanisms.puma560_drives()
    big = dict(resistance=1.6, inductance=4.8e-3, torque_constant=0.26, back_emf_constant=0.26)
    small = dict(resistance=3.9, inductance=2.4e-3, torque_constant=0.095,
                 back_emf_constant=0.095)
    motors = [kic.DCMotor(**(big if k < 3 else small), rotor_inertia=dr.motor_inertia[k],
                          rotor_damping=dr.viscous_friction[k], name=f"m{k + 1}")
              for k in range(6)]
    L = (kic.Loads().force(5, (2.0, -3.0, -20.0), point=(0.0, 0.01, 0.1))
         .moment(3, (0.3, -0.2, 0.5)).spring(1, 40.0, rest=0.2).damper(2, 0.8)) if loads else None
    kw = dict(gear_ratios=dr.gear_ratio, loads=L)
    return (kic.ActuatedSystem(arm, motors, **kw), MotorODE(arm, motors, **kw))


PUMA_Q0 = np.array([0.1, -0.6, 0.4, 0.3, 0.5, -0.2])
PUMA_Q1 = np.array([0.7, -0.2, -0.1, -0.4, 1.0, 0.6])

SMALL_MOTOR = dict(resistance=2.0, inductance=1e-3, torque_constant=0.03, back_emf_constant=0.03,
                   rotor_inertia=5e-6, rotor_damping=1e-6)


def five_bar_plant(joints=None, gears=(20.0, 20.0)):
    fb = mechanisms.five_bar()
    motors = [kic.DCMotor(**SMALL_MOTOR, name=f"m{k + 1}") for k in range(len(gears))]
    kw = dict(joints=joints, gear_ratios=list(gears))
    return kic.ActuatedSystem(fb, motors, **kw), MotorODE(fb, motors, **kw)


FB_Q0 = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])
FB_Q1 = np.array([np.pi / 2 + 0.7, np.pi / 2 - 0.1])


def stewart_plant():
    """Six motors on ball screws (5 mm lead) at the legs; the model stays in
    platform coordinates, so the actuators are at other coordinates."""
    sp = mechanisms.stewart_platform()
    motors = [kic.DCMotor(1.0, 1e-3, 0.1, 0.1, rotor_inertia=2e-5, rotor_damping=1e-5,
                          name=f"leg{k}") for k in range(6)]
    kw = dict(gear_ratios=[2 * np.pi / 0.005] * 6)
    return kic.ActuatedSystem(sp, motors, **kw), MotorODE(sp, motors, **kw)


SP_Q0 = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])
SP_Q1 = np.array([0.05, -0.03, 0.65, 0.1, -0.05, 0.08])


@pytest.fixture(scope="module")
def puma():
    plant, ode = puma_plant()
    tr = kic.Trajectory.quintic(PUMA_Q0, PUMA_Q1, duration=1.0, samples=401)
    return plant, ode, tr, plant.state_space(tr)


@pytest.fixture(scope="module")
def five():
    plant, ode = five_bar_plant()
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=201)
    return plant, ode, tr, plant.state_space(tr)


# ======================================================= linear_dynamics
@pytest.mark.parametrize("M, seed", [(2, 1), (4, 2), (6, 3), (7, 4)])
def test_linear_dynamics_random_chains(M, seed):
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, M)
    loads = random_loads(rng, chain, kic.Loads)
    q, qd, qdd = rng.normal(size=(3, M))
    lin = kic.linear_dynamics(chain, q, qd, qdd, loads=loads)
    I, C, K = _fd_linear(chain, q, qd, qdd, loads)
    for name, a, b in (("I", lin.I, I), ("C", lin.C, C), ("K", lin.K, K)):
        assert rel_err(a, b, floor=0) < RTOL_FD, (name, rel_err(a, b, floor=0))
    assert rel_err(lin.T, chain.inverse_dynamics(q, qd, qdd, loads=loads), floor=0) < 1e-13


def test_linear_dynamics_puma_with_loads():
    arm = mechanisms.puma560()
    loads = (kic.Loads().force(5, (5.0, -3.0, -40.0), point=(0.02, 0.0, 0.15))
             .moment(4, (0.4, 1.0, -0.7)).spring(2, 25.0, rest=-0.3).damper(0, 1.5)
             .damper(4, 0.2))
    rng = np.random.default_rng(5)
    for q in mechanisms.PUMA560_POSES.values():
        q = np.asarray(q, float) + 0.1 * rng.normal(size=6)   # off the special poses
        qd, qdd = rng.normal(size=(2, 6))
        lin = kic.linear_dynamics(arm, q, qd, qdd, loads=loads)
        I, C, K = _fd_linear(arm, q, qd, qdd, loads)
        for name, a, b in (("I", lin.I, I), ("C", lin.C, C), ("K", lin.K, K)):
            assert rel_err(a, b, floor=0) < RTOL_FD, (name, rel_err(a, b, floor=0))
    # each load's own contribution: the spring's stiffness and the damper's coefficient
    bare = kic.linear_dynamics(arm, q, qd, qdd)
    sd = kic.linear_dynamics(arm, q, qd, qdd, loads=kic.Loads().spring(2, 25.0).damper(0, 1.5))
    assert np.allclose(sd.K - bare.K, np.diag([0, 0, 25.0, 0, 0, 0]), atol=1e-12)
    assert np.allclose(sd.C - bare.C, np.diag([1.5, 0, 0, 0, 0, 0]), atol=1e-12)


CLOSED = {
    "five_bar": (mechanisms.five_bar, FB_Q0 + [0.1, -0.05], 1e-5),
    "stewart": (mechanisms.stewart_platform, np.array([0.02, -0.01, 0.62, 0.1, -0.05, 0.08]),
                1e-5),
    "bricard": (mechanisms.bricard, np.array([-1.3]), 1e-4),
    "four_bar": (mechanisms.four_bar, np.array([1.0]), 1e-5),
}


@pytest.mark.parametrize("name", sorted(CLOSED))
def test_linear_dynamics_closed(name):
    build, q, h = CLOSED[name]
    model = build()
    rng = np.random.default_rng(len(name))
    qd, qdd = rng.normal(size=(2, model.dof))
    lin = kic.linear_dynamics(model, q, qd, qdd)
    I, C, K = _fd_linear(model, q, qd, qdd, h=h)
    for label, a, b in (("I", lin.I, I), ("C", lin.C, C), ("K", lin.K, K)):
        assert rel_err(a, b, floor=0) < RTOL_FD, (label, rel_err(a, b, floor=0))
    assert np.allclose(lin.I, model.dynamics(q).I_star, rtol=1e-12, atol=1e-14)


def test_linear_dynamics_closed_with_loads():
    fb = mechanisms.five_bar()
    loads = (kic.Loads().force("coupler1", (1.0, -8.0, 0.0), point=(0.2, 0.0, 0.0))
             .moment("crank2", (0.0, 0.0, 0.6)).spring("elbow1", 3.0, rest=0.4)
             .damper("elbow2", 0.3))
    q, qd, qdd = FB_Q0 + [0.05, 0.1], np.array([1.2, -0.7]), np.array([3.0, 2.0])
    lin = kic.linear_dynamics(fb, q, qd, qdd, loads=loads)
    I, C, K = _fd_linear(fb, q, qd, qdd, loads)
    for label, a, b in (("I", lin.I, I), ("C", lin.C, C), ("K", lin.K, K)):
        assert rel_err(a, b, floor=0) < RTOL_FD, (label, rel_err(a, b, floor=0))


def test_linear_dynamics_batched_along_a_trajectory():
    sp = mechanisms.stewart_platform()
    tr = kic.Trajectory.quintic(SP_Q0, SP_Q1, duration=1.0, samples=7)
    lin = kic.linear_dynamics(sp, tr.q, tr.qd, tr.qdd)
    assert lin.K.shape == (7, 6, 6) and lin.T.shape == (7, 6)
    one = kic.linear_dynamics(sp, tr.q[3], tr.qd[3], tr.qdd[3])
    for a in ("I", "C", "K", "T"):
        assert np.allclose(getattr(lin, a)[3], getattr(one, a), rtol=1e-12, atol=1e-12)
    # rates broadcast against q; a wrong length is an error
    lin0 = kic.linear_dynamics(sp, tr.q, np.zeros(6), np.zeros(6))
    assert lin0.C.shape == (7, 6, 6) and np.allclose(lin0.C, 0)
    with pytest.raises(kic.ModelError, match="qd"):
        kic.linear_dynamics(sp, tr.q, tr.qd[:3], tr.qdd)
    with pytest.raises(kic.ModelError, match=r"shape \(\.\.\., 6\)"):
        kic.linear_dynamics(sp, tr.q, tr.qd[:, :5], tr.qdd)


# ==================================================== nominal and the ODE
def test_test_ode_agrees_with_rhs(puma, five):
    """The library's ActuatedSystem.rhs and this file's MotorODE: same equations."""
    rng = np.random.default_rng(7)
    for plant, ode, tr, ss in (puma, five):
        for k in (3, len(tr) // 2):
            x = _nominal_state(ss, k) + 0.01 * rng.normal(size=ss.A.shape[1])
            v = rng.normal(size=ode.Na)
            assert rel_err(plant.rhs(0.0, x, v), ode(x, v), floor=0) < 1e-12
            w = rng.normal(size=ode.M)
            assert rel_err(plant.rhs(0.0, x, v, disturbance=w), ode(x, v, w), floor=0) < 1e-12


def test_nominal_inputs_reproduce_the_motion(puma, five):
    """At every sampled point the ODE driven by the nominal voltage gives the
    trajectory's acceleration and the nominal current rate."""
    for plant, ode, tr, ss in (puma, five):
        nom = ss.nominal
        for k in range(0, len(tr), len(tr) // 10):
            f = ode(_nominal_state(ss, k), nom.voltage[k])
            M = ode.M
            assert np.allclose(f[:M], tr.qd[k], rtol=0, atol=1e-14)
            assert rel_err(f[M:2 * M], tr.qdd[k]) < 1e-10
            assert rel_err(f[2 * M:], nom.current_rate[k]) < 1e-10
        # the trajectory is the quintic written out here, sample for sample
        q0, q1, T = tr.q[0], tr.q[-1], tr.t[-1]
        ref = _quintic_at(q0, q1, T, tr.t)
        assert np.allclose(ref.qddd, tr.qddd, rtol=1e-12, atol=1e-9)
        # the current rate is the time derivative of the current
        _check_current_rate(plant, q0, q1, T, [0.13 * T, 0.5 * T, 0.81 * T])
        # v = L i' + R i + C_E_a a'
        v = (nom.current_rate @ plant.L.T + nom.current @ plant.R.T + tr.qd @ plant.C_E.T
             if ode.serial or ode.identity else None)
        if v is not None:
            assert np.allclose(v, nom.voltage, rtol=1e-12, atol=1e-12)


def test_state_space_puma_against_finite_differences(puma):
    plant, ode, tr, ss = puma
    assert ss.A.shape == (401, 18, 18) and ss.B.shape == (401, 18, 6)
    for k in (60, 200, 330):
        _check_state_space(plant, ode, ss, k)


def test_state_space_five_bar_against_finite_differences(five):
    plant, ode, tr, ss = five
    assert ss.A.shape == (201, 6, 6)
    for k in (40, 120):
        _check_state_space(plant, ode, ss, k)


def test_state_space_stewart_against_finite_differences():
    """Motors on the legs, model in platform coordinates: reflected rotor inertia
    G^T I_r G, and the back-EMF C_E G(q) q', depend on the configuration."""
    plant, ode = stewart_plant()
    tr = kic.Trajectory.quintic(SP_Q0, SP_Q1, duration=1.0, samples=5)
    ss = plant.state_space(tr, outputs=["q", ("platform", (0.0, 0.0, 0.1))])
    assert ss.A.shape == (5, 18, 18) and ss.C.shape == (5, 9, 18)
    errs = _check_state_space(plant, ode, ss, 2)
    # the configuration-dependent blocks are not trivially zero here
    assert np.linalg.norm(ss.A[2, 12:, :6]) > 0
    # the output map: a point of the platform, by differences of its world position
    kin = lambda q: (plant.model.kinematics(q, 1).frame("platform")          # noqa: E731
                     @ np.array([0.0, 0.0, 0.1, 1.0]))[:3]
    Gp = derivative(kin, tr.q[2], np.full(6, 1e-6))
    assert rel_err(ss.C[2, 6:, :6], Gp, floor=0) < 1e-8
    assert np.all(ss.C[2, 6:, 6:] == 0) and np.allclose(ss.C[2, :6, :6], np.eye(6))
    assert ss.outputs[6:] == ["dp[platform.x]", "dp[platform.y]", "dp[platform.z]"]
    assert max(errs.values()) < RTOL_FD


OTHER_PLANTS = {
    # name: (model builder, actuated joints, motion of the coordinates)
    "bricard": (mechanisms.bricard, ["j1"], 0.2),
    "slider_crank": (mechanisms.slider_crank, ["crank"], 1.0),
    "four_bar_in_rocker_angle": (lambda: mechanisms.four_bar().in_coordinates(["rocker"]),
                                 ["crank"], 0.1),
    "two_arm_object": (mechanisms.two_arm_object, ["a1", "a2", "b1", "b2"], 0.03),
    "redundant_arm": (mechanisms.redundant_planar_arm, ["j1", "j2", "j3"], 0.05),
}


@pytest.mark.parametrize("name", sorted(OTHER_PLANTS))
def test_state_space_other_closed_plants(name):
    """Rank-deficient closure (Bricard), a prismatic slider, a crank motor on a model
    in the rocker angle, four motors for three coordinates, augmented coordinates."""
    build, joints, dq = OTHER_PLANTS[name]
    model = build()
    q0 = model.reference
    tr = kic.Trajectory.quintic(q0, q0 + dq * np.linspace(0.5, 1.0, model.dof), duration=0.5,
                                samples=11)
    motors = [kic.DCMotor(**SMALL_MOTOR)] * len(joints)
    kw = dict(joints=joints, gear_ratios=[10.0] * len(joints))
    plant, ode = kic.ActuatedSystem(model, motors, **kw), MotorODE(model, motors, **kw)
    ss = plant.state_space(tr)
    n = 2 * model.dof + len(joints)
    assert ss.A.shape == (11, n, n) and ss.B.shape == (11, n, len(joints))
    _check_state_space(plant, ode, ss, 5)


def test_overconstrained_five_bar_three_motors():
    """Crank 1, crank 2 and elbow 1 driven: 2 coordinates, 3 motors, state 2M + Na = 7;
    the nominal currents follow the load-distribution rule (minimum copper loss)."""
    plant, ode = five_bar_plant(joints=["crank1", "crank2", "elbow1"], gears=(20, 20, 10))
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=101)
    ss = plant.state_space(tr, outputs=["q", "i"])
    assert ss.A.shape == (101, 7, 7) and ss.B.shape == (101, 7, 3)
    assert ss.states[-3:] == ["di[m1]", "di[m2]", "di[m3]"]
    nom = ss.nominal
    for k in (20, 70):
        _check_state_space(plant, ode, ss, k)
        # the ODE driven by the nominal voltages follows the trajectory
        f = ode(_nominal_state(ss, k), nom.voltage[k])
        assert rel_err(f[2:4], tr.qdd[k]) < 1e-10 and rel_err(f[4:], nom.current_rate[k]) < 1e-10
    # G^T C_M i = required load (mechanism + rotors), and i minimises i^T R i
    fb = plant.model
    for k in (10, 50, 90):
        q, qd, qdd = tr.q[k], tr.qd[k], tr.qdd[k]
        G = fb.actuator_jacobian(q, ode.joints)                       # (3, 2)
        _, a_dd = fb.joint_rates(q, qd, qdd)
        a_d = G @ qd
        a_dd = a_dd[ode.idx]
        N = np.array([20.0, 20.0, 10.0])
        CMa = np.diag(N * 0.03)                                       # joint-side C_M
        rotor = N**2 * (SMALL_MOTOR["rotor_inertia"] * a_dd + SMALL_MOTOR["rotor_damping"] * a_d)
        required = fb.inverse_dynamics(q, qd, qdd) + G.T @ rotor
        i = nom.current[k]
        Aeq = G.T @ CMa
        assert rel_err(Aeq @ i, required, floor=0) < 1e-12
        # optimality: R i is orthogonal to every current that makes no load
        null = np.linalg.svd(Aeq)[2][-1]
        R = np.diag([2.0] * 3)
        assert abs(null @ R @ i) < 1e-12 * np.linalg.norm(R @ i)
        # and any admissible current costs more
        rng = np.random.default_rng(k)
        for s in rng.normal(size=4):
            j = i + s * null
            assert j @ R @ j > i @ R @ i
        # the minimiser in closed form (Lagrange)
        Ri = np.linalg.inv(R)
        i_star = Ri @ Aeq.T @ np.linalg.solve(Aeq @ Ri @ Aeq.T, required)
        assert rel_err(i, i_star, floor=0) < 1e-12
    # the current rates are the time derivatives of the distributed currents
    _check_current_rate(plant, FB_Q0, FB_Q1, 0.5, [0.07, 0.25, 0.41])
    # the library's rhs is the same ODE here too
    x = _nominal_state(ss, 30) + 0.01
    assert rel_err(plant.rhs(0.0, x, [1.0, -2.0, 0.5]), ode(x, np.array([1.0, -2.0, 0.5])),
                   floor=0) < 1e-12
    # other weights: minimum-norm actuator loads instead of minimum copper loss
    flat = kic.ActuatedSystem(fb, plant.motors, joints=ode.joints, gear_ratios=[20, 20, 10],
                              weights=[1.0, 1.0, 1.0])
    q = tr.q[40]
    tau = flat.nominal(_quintic_at(FB_Q0, FB_Q1, 0.5, tr.t[40])).torque[0]
    G = fb.actuator_jacobian(q, ode.joints)
    assert rel_err(tau, kic.load_distribution(G, G.T @ tau), floor=0) < 1e-12
    assert abs(np.linalg.svd(G.T)[2][-1] @ tau) < 1e-12 * np.linalg.norm(tau)


# ======================================================== integrations
def _voltage_spline(ss):
    return CubicSpline(ss.t, ss.nominal.voltage, axis=0)


def _open_loop(ode, ss, t_end, method="Radau", rtol=1e-9):
    v = _voltage_spline(ss)
    sol = solve_ivp(lambda t, x: ode(x, v(t)), (ss.t[0], t_end), _nominal_state(ss, 0),
                    method=method, rtol=rtol, atol=1e-2 * rtol, dense_output=True)
    assert sol.success, sol.message
    return sol


def test_open_loop_nominal_voltages_puma(puma):
    """Voltages interpolated by a cubic spline on the 401-point grid; stiff solver
    (electrical time constants of 0.6-3 ms)."""
    plant, ode, tr, ss = puma
    sol = _open_loop(ode, ss, tr.t[-1])
    x = sol.sol(tr.t).T
    err_q = np.abs(x[:, :6] - tr.q).max()
    err_qd = np.abs(x[:, 6:12] - tr.qd).max()
    err_i = np.abs(x[:, 12:] - ss.nominal.current).max()
    assert err_q < 1e-8 * np.abs(PUMA_Q1 - PUMA_Q0).max(), err_q
    assert err_qd < 1e-8 * np.abs(tr.qd).max(), err_qd
    assert err_i < 1e-7 * np.abs(ss.nominal.current).max(), err_i


def test_open_loop_nominal_voltages_five_bar(five):
    plant, ode, tr, ss = five
    sol = _open_loop(ode, ss, tr.t[-1], method="BDF", rtol=1e-10)
    x = sol.sol(tr.t).T
    err_q = np.abs(x[:, :2] - tr.q).max()
    err_qd = np.abs(x[:, 2:4] - tr.qd).max()
    err_i = np.abs(x[:, 4:] - ss.nominal.current).max()
    assert err_q < 1e-7 * np.abs(FB_Q1 - FB_Q0).max(), err_q
    assert err_qd < 1e-7 * np.abs(tr.qd).max(), err_qd
    assert err_i < 1e-6 * np.abs(ss.nominal.current).max(), err_i


def test_linear_model_propagates_a_small_perturbation(puma):
    """x' = A(t) x from dx0 (A by a cubic spline in t) against the nonlinear
    deviation from the nominal state over 0.2 s."""
    plant, ode, tr, ss = puma
    A = CubicSpline(ss.t, ss.A, axis=0)
    v = _voltage_spline(ss)
    T = 0.2
    rng = np.random.default_rng(11)
    dx0 = np.concatenate([1e-4 * rng.normal(size=6), 1e-3 * rng.normal(size=6),
                          1e-3 * rng.normal(size=6)])
    kw = dict(method="Radau", rtol=1e-10, atol=1e-13)
    k = np.arange(8, 81, 8)                                    # t = 0.02 .. 0.2 s
    pert = solve_ivp(lambda t, x: ode(x, v(t)), (0, T), _nominal_state(ss, 0) + dx0,
                     t_eval=tr.t[k], **kw)
    lin = solve_ivp(lambda t, x: A(t) @ x, (0, T), dx0, t_eval=tr.t[k], jac=lambda t, x: A(t),
                    **kw)
    assert pert.success and lin.success
    dev = pert.y - np.stack([_nominal_state(ss, j) for j in k], axis=1)
    for sl, what in ((slice(0, 6), "q"), (slice(6, 12), "q'"), (slice(12, 18), "i")):
        err = np.linalg.norm(dev[sl] - lin.y[sl]) / np.linalg.norm(dev[sl])
        assert err < 2e-4, (what, err)
        print(f"perturbation, {what}: relative error {err:.1e}")
    # the deviation has changed along the way (q: by ~20 %, q' and i: entirely)
    assert np.linalg.norm(dev[:6, -1] - dx0[:6]) > 0.1 * np.linalg.norm(dx0[:6])
    assert np.linalg.norm(dev[6:, -1] - dx0[6:]) > 0.5 * np.linalg.norm(dx0[6:])


# =========================================== four-bar: no spurious modes
def _four_bar_reduced(a=0.1, c=0.35, r=0.25, d=0.3, ma=0.5, mc=1.0, mr=0.8, g=9.81,
                      branch_sign=1.0):
    """The four-bar's dynamics in the crank angle, from the loop geometry alone:
    I(th) th'' + I'(th) th'^2 / 2 + V'(th) = tau (uniform rods, centroids at mid-length)."""
    e = lambda x: np.array([np.cos(x), np.sin(x)])                    # noqa: E731
    n = lambda x: np.array([-np.sin(x), np.cos(x)])                   # noqa: E731
    O4 = np.array([d, 0.0])

    def angles(th):
        A = a * e(th)
        D = O4 - A
        L = np.linalg.norm(D)
        x = (L * L + c * c - r * r) / (2 * L)
        y = branch_sign * np.sqrt(c * c - x * x)
        u = D / L
        B = A + x * u + y * np.array([-u[1], u[0]])
        beta = np.arctan2(*(B - A)[::-1])
        gamma = np.arctan2(*(B - O4)[::-1])
        # loop a e(th) + c e(beta) - r e(gamma) - O4 = 0 differentiated once and twice
        J = np.column_stack([c * n(beta), -r * n(gamma)])
        b1, g1 = np.linalg.solve(J, -a * n(th))
        rhs = a * e(th) + c * e(beta) * b1**2 - r * e(gamma) * g1**2
        b2, g2 = np.linalg.solve(J, rhs)
        return B, beta, gamma, (b1, g1), (b2, g2)

    def model(th):
        _, beta, gamma, (b1, g1), (b2, g2) = angles(th)
        # (mass, centroid Jacobian, its derivative, rotational rate, its derivative, Izz)
        parts = [(ma, a / 2 * n(th), -a / 2 * e(th), 1.0, 0.0, ma * a * a / 12),
                 (mc, a * n(th) + c / 2 * n(beta) * b1,
                  -a * e(th) + c / 2 * (-e(beta) * b1**2 + n(beta) * b2), b1, b2, mc * c * c / 12),
                 (mr, r / 2 * n(gamma) * g1, r / 2 * (-e(gamma) * g1**2 + n(gamma) * g2), g1, g2,
                  mr * r * r / 12)]
        I = sum(m * J @ J + Iz * w * w for m, J, _, w, _, Iz in parts)
        dI = sum(2 * (m * J @ Jd + Iz * w * wd) for m, J, Jd, w, wd, Iz in parts)
        dV = sum(m * g * J[1] for m, J, *_ in parts)
        return I, dI, dV

    return angles, model


def test_four_bar_one_motor_is_3x3_with_the_reduced_ode_eigenvalues():
    fb = mechanisms.four_bar()
    N = 30.0
    motor = kic.DCMotor(**SMALL_MOTOR)
    plant = kic.ActuatedSystem(fb, [motor], gear_ratios=[N])
    tr = kic.Trajectory.quintic([0.5], [2.5], duration=0.6, samples=61)
    ss = plant.state_space(tr)
    assert ss.A.shape == (61, 3, 3) and ss.B.shape == (61, 3, 1)
    assert ss.states == ["dq[crank]", "dqd[crank]", "di[m1]"]
    # the same mechanism: kic's assembled B equals the closed-form one
    sign = None
    for s in (1.0, -1.0):
        angles, model = _four_bar_reduced(branch_sign=s)
        B_kic = (fb.kinematics([1.0], 1).frame("rocker") @ [0.25, 0, 0, 1])[:2]
        if np.allclose(angles(1.0)[0], B_kic, atol=1e-12):
            sign = s
    assert sign is not None, "the closed-form four-bar does not match kic's assembly"
    angles, model = _four_bar_reduced(branch_sign=sign)
    assert np.isclose(model(1.0)[0], fb.dynamics([1.0]).I_star[0, 0], rtol=1e-12)
    Rm, Lm, CM, CE = 2.0, 1e-3, 0.03, 0.03
    Jr, Br = SMALL_MOTOR["rotor_inertia"], SMALL_MOTOR["rotor_damping"]

    def f(x, v):
        th, thd, i = x
        I, dI, dV = model(th)
        thdd = (N * CM * i - N * N * Br * thd - dI * thd**2 / 2 - dV) / (I + N * N * Jr)
        return np.array([thd, thdd, (v - Rm * i - CE * N * thd) / Lm])

    for k in (0, 15, 30, 47):
        x0 = np.array([tr.q[k, 0], tr.qd[k, 0], ss.nominal.current[k, 0]])
        v0 = ss.nominal.voltage[k, 0]
        assert np.allclose(f(x0, v0), [tr.qd[k, 0], tr.qdd[k, 0], ss.nominal.current_rate[k, 0]],
                           rtol=1e-9, atol=1e-9)
        A_fd = derivative(lambda x: f(x, v0), x0, [1e-6, 1e-5, 1e-5 * max(1, abs(x0[2]))])
        ev_fd = np.sort_complex(np.linalg.eigvals(A_fd))
        ev = np.sort_complex(ss.eigenvalues()[k])
        assert np.abs(ev - ev_fd).max() < 1e-6 * np.abs(ev_fd).max(), (ev, ev_fd)
        assert rel_err(ss.A[k], A_fd, floor=0) < RTOL_FD


# ============================================================ bad input
@pytest.mark.parametrize("field, value", [
    ("resistance", 0.0), ("resistance", -1.0), ("inductance", -1e-3), ("inductance", np.nan),
    ("torque_constant", -0.1), ("back_emf_constant", np.inf), ("rotor_inertia", -1e-6),
    ("rotor_damping", np.nan), ("resistance", "abc"), ("torque_constant", [0.1, 0.2])])
def test_bad_motor_parameters(field, value):
    kw = dict(resistance=1.0, inductance=1e-3, torque_constant=0.1, back_emf_constant=0.1,
              rotor_inertia=1e-5, rotor_damping=1e-5)
    kw[field] = value
    with pytest.raises(kic.ModelError, match=field):
        kic.DCMotor(**kw)


def test_motor_parameter_zero_inertia_and_damping_are_allowed():
    m = kic.DCMotor(1.0, 1e-3, 0.1, 0.1)
    assert m.rotor_inertia == 0.0 and m.rotor_damping == 0.0


def test_singular_gear_jacobian():
    fb = mechanisms.five_bar()
    motor = kic.DCMotor(**SMALL_MOTOR)
    with pytest.raises(kic.SingularityError, match="drive-train Jacobian") as err:
        kic.ActuatedSystem(fb, [motor, motor], gear_jacobian=[[0.05, 0.1], [0.025, 0.05]])
    assert err.value.sigma_min < 1e-12
    # a coupled but regular drive train is fine and enters as G_m
    plant = kic.ActuatedSystem(fb, [motor, motor], gear_jacobian=[[0.05, 0.01], [0.0, 0.05]])
    ode = MotorODE(fb, [motor, motor], gear_jacobian=[[0.05, 0.01], [0.0, 0.05]])
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=11)
    _check_state_space(plant, ode, plant.state_space(tr), 5)
    with pytest.raises(kic.ModelError, match="gear_jacobian"):
        kic.ActuatedSystem(fb, [motor, motor], gear_jacobian=np.eye(3))
    with pytest.raises(kic.ModelError, match="not both"):
        kic.ActuatedSystem(fb, [motor, motor], gear_jacobian=np.eye(2), gear_ratios=[1, 1])
    with pytest.raises(kic.ModelError, match="gear_ratios"):
        kic.ActuatedSystem(fb, [motor, motor], gear_ratios=[10.0, 0.0])
    with pytest.raises(kic.ModelError, match="gear_ratios"):
        kic.ActuatedSystem(fb, [motor, motor], gear_ratios=[10.0, np.nan])


def test_bad_trajectories():
    t = np.linspace(0, 1, 5)
    q = np.zeros((5, 2))
    with pytest.raises(kic.ModelError, match=r"qd must have shape \(5, M\)"):
        kic.Trajectory(t, q, np.zeros((4, 2)), q)
    with pytest.raises(kic.ModelError, match="qddd"):
        kic.Trajectory(t, q, q, q, np.zeros((6, 2)))
    with pytest.raises(kic.ModelError, match="coordinates"):
        kic.Trajectory(t, q, np.zeros((5, 3)), q)
    with pytest.raises(kic.ModelError, match="increasing"):
        kic.Trajectory(t[::-1], q, q, q)
    with pytest.raises(kic.ModelError, match="NaN"):
        kic.Trajectory(t, np.full((5, 2), np.nan), q, q)
    with pytest.raises(kic.ModelError, match="duration"):
        kic.Trajectory.quintic([0, 0], [1, 1], duration=0.0)
    with pytest.raises(kic.ModelError, match="q0 and q1"):
        kic.Trajectory.quintic([0, 0], [1, 1, 1], duration=1.0)
    with pytest.raises(kic.ModelError, match="waypoints"):
        kic.Trajectory.spline([0.0, 1.0], np.zeros((3, 2)))
    # no q''': the positions and rates are fine, the voltages are not
    plant, _ = five_bar_plant()
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=11)
    rough = kic.Trajectory(tr.t, tr.q, tr.qd, tr.qdd)
    with pytest.raises(kic.ModelError, match="third derivative"):
        plant.nominal(rough)
    with pytest.raises(kic.ModelError, match="third derivative"):
        plant.state_space(rough)
    with pytest.raises(kic.ModelError, match="kic.Trajectory"):
        plant.nominal((tr.t, tr.q, tr.qd, tr.qdd, tr.qddd))
    with pytest.raises(kic.ModelError, match="3 coordinates, the model 2"):
        plant.nominal(kic.Trajectory.quintic([0, 0, 0], [1, 1, 1], duration=1.0, samples=3))


def test_operating_point_at_a_singularity():
    """Five-bar with the two couplers collinear (type II): no model there."""
    fb = mechanisms.five_bar(base=0.4)
    th1, th2 = five_bar_stretched()
    q = np.array([th1, th2])
    motor = kic.DCMotor(**SMALL_MOTOR)
    plant = kic.ActuatedSystem(fb, [motor, motor], gear_ratios=[20, 20])
    # a short trajectory whose middle sample is the singular configuration
    tr = kic.Trajectory([0.0, 0.01, 0.02], np.tile(q, (3, 1)), np.full((3, 2), 0.1),
                        np.zeros((3, 2)), np.zeros((3, 2)))
    for call in (plant.nominal, plant.state_space):
        with pytest.raises(kic.SingularityError, match="condition number") as err:
            call(tr)
        assert err.value.condition > fb.max_condition
    with pytest.raises(kic.SingularityError):
        kic.linear_dynamics(fb, q, [0.1, 0.1], [0.0, 0.0])


def test_load_history_is_not_linearized_silently():
    """A force that varies along the trajectory has no K of its own: a clear error
    (load variations enter through the disturbance input E instead)."""
    arm = mechanisms.puma560()
    tr = kic.Trajectory.quintic(PUMA_Q0, PUMA_Q1, duration=1.0, samples=4)
    loads = kic.Loads().force(5, np.outer(np.arange(4.0), [0.0, 0.0, -1.0]))
    assert arm.inverse_dynamics(tr.q, tr.qd, tr.qdd, loads=loads).shape == (4, 6)
    with pytest.raises(kic.ModelError, match="constant applied forces"):
        kic.linear_dynamics(arm, tr.q, tr.qd, tr.qdd, loads=loads)
    loads = kic.Loads().moment(5, np.outer(np.arange(4.0), [0.0, 0.0, -1.0]))
    with pytest.raises(kic.ModelError, match="constant applied moments"):
        kic.linear_dynamics(arm, tr.q, tr.qd, tr.qdd, loads=loads)


def test_wrong_counts_of_motors_and_joints():
    fb = mechanisms.five_bar()
    motor = kic.DCMotor(**SMALL_MOTOR)
    with pytest.raises(kic.ModelError, match="1 motors for 2 actuated joints"):
        kic.ActuatedSystem(fb, [motor])
    with pytest.raises(kic.ModelError, match="underactuated"):
        kic.ActuatedSystem(fb, [motor], joints=["crank1"])
    with pytest.raises(kic.ModelError, match="3 motors for 2"):
        kic.ActuatedSystem(fb, [motor] * 3, joints=["crank1", "crank2"])
    with pytest.raises(kic.ModelError, match="repeat"):
        kic.ActuatedSystem(fb, [motor] * 2, joints=["crank1", "crank1"])
    with pytest.raises(kic.ModelError, match="unknown joint"):
        kic.ActuatedSystem(fb, [motor] * 2, joints=["crank1", "nope"])
    with pytest.raises(kic.ModelError, match="kic.DCMotor"):
        kic.ActuatedSystem(fb, [motor, "motor"])
    with pytest.raises(kic.ModelError, match="kic.DCMotor"):
        kic.ActuatedSystem(fb, [])
    arm = mechanisms.puma560()
    with pytest.raises(kic.ModelError, match="5 motors for 6"):
        kic.ActuatedSystem(arm, [motor] * 5)
    with pytest.raises(kic.ModelError, match="weights"):
        kic.ActuatedSystem(fb, [motor] * 3, joints=["crank1", "crank2", "elbow1"],
                           weights=[1.0, -1.0, 1.0])
    plant = kic.ActuatedSystem(fb, [motor, motor])
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=3)
    with pytest.raises(kic.ModelError, match="unknown output"):
        plant.state_space(tr, outputs=["tau"])


# ============================================================== exports
@pytest.fixture(scope="module")
def small_ss():
    plant, _ = five_bar_plant()
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=21)
    return plant.state_space(tr, outputs=["q", "i", ("coupler1", (0.35, 0.0, 0.0))])


def test_to_control_named(small_ss):
    control = pytest.importorskip("control")
    ss = small_ss
    plant, _ = five_bar_plant()
    ss = plant.state_space(ss.trajectory, outputs=["q", "i"])
    sys = ss.to_control(7)
    assert isinstance(sys, control.StateSpace)
    assert sys.state_labels == ["dq[crank1]", "dq[crank2]", "dqd[crank1]", "dqd[crank2]",
                                "di[m1]", "di[m2]"]
    assert sys.input_labels == ["dv[m1]", "dv[m2]"]
    assert sys.output_labels == ["dq[crank1]", "dq[crank2]", "di[m1]", "di[m2]"]
    assert np.array_equal(sys.A, ss.A[7]) and np.array_equal(sys.B, ss.B[7])
    assert np.array_equal(sys.C, ss.C[7]) and np.array_equal(sys.D, ss.D[7])
    assert np.allclose(np.sort_complex(sys.poles()), np.sort_complex(ss.eigenvalues()[7]))
    dist = ss.to_control(-1, disturbance=True)
    assert dist.input_labels == ["dv[m1]", "dv[m2]", "dT[crank1]", "dT[crank2]"]
    assert np.array_equal(dist.B[:, 2:], ss.E[-1])
    # signals can be addressed by name in python-control
    assert sys[["dq[crank2]"], ["dv[m1]"]].D.shape == (1, 1)
    with pytest.raises(kic.ModelError, match="out of range"):
        ss.to_control(21)


@pytest.mark.parametrize("case", ["point output", "stewart"])
def test_to_control_names_with_dots(small_ss, case):
    pytest.importorskip("control")
    if case == "point output":
        ss = small_ss                                # outputs include ('coupler1', point)
    else:
        plant, _ = stewart_plant()
        ss = plant.state_space(kic.Trajectory.quintic(SP_Q0, SP_Q1, duration=1.0, samples=3))
    sys = ss.to_control(1, disturbance=True)
    assert np.array_equal(sys.A, ss.A[1])
    assert len(sys.output_labels) == len(ss.outputs)
    # python-control reserves ".": kic's names appear with "_" instead
    assert sys.output_labels == [n.replace(".", "_") for n in ss.outputs]


def test_to_scipy(small_ss):
    from scipy.signal import StateSpace
    sys = small_ss.to_scipy(3)
    assert isinstance(sys, StateSpace)
    assert np.array_equal(sys.A, small_ss.A[3]) and np.array_equal(sys.B, small_ss.B[3])
    assert np.array_equal(sys.C, small_ss.C[3]) and np.array_equal(sys.D, small_ss.D[3])
    assert np.array_equal(small_ss.to_scipy(-21).A, small_ss.A[0])


def test_save_mat(small_ss, tmp_path):
    from scipy.io import loadmat
    path = tmp_path / "plant.mat"
    small_ss.save_mat(path)
    m = loadmat(path)
    n, K = 6, 21
    assert m["A"].shape == (n, n, K) and m["B"].shape == (n, 2, K)
    assert m["E"].shape == (n, 2, K) and m["C"].shape == (7, n, K) and m["D"].shape == (7, 2, K)
    assert m["t"].shape == (K, 1) and m["v_nom"].shape == (K, 2) and m["i_nom"].shape == (K, 2)
    assert np.array_equal(m["A"][:, :, 4], small_ss.A[4])
    assert np.array_equal(m["C"][:, :, 9], small_ss.C[9])
    assert np.array_equal(m["t"][:, 0], small_ss.t)
    names = [str(np.squeeze(s)) for s in np.ravel(m["states"])]
    assert names == small_ss.states
    assert [str(np.squeeze(s)) for s in np.ravel(m["inputs"])] == small_ss.inputs
    assert [str(np.squeeze(s)) for s in np.ravel(m["outputs"])] == small_ss.outputs


def test_save_npz_round_trip(small_ss, tmp_path):
    path = tmp_path / "plant.npz"
    small_ss.save_npz(path)
    with np.load(path) as z:
        for k in ("t", "A", "B", "E", "C", "D"):
            assert np.array_equal(z[k], getattr(small_ss, k)), k
        for k in ("states", "inputs", "disturbances", "outputs"):
            assert z[k].tolist() == getattr(small_ss, k), k
        assert np.array_equal(z["v_nom"], small_ss.nominal.voltage)
        assert np.array_equal(z["i_nom"], small_ss.nominal.current)


def test_variation(small_ss, five):
    v = small_ss.variation()
    assert set(v) == {"relative_change_A", "relative_change_B", "relative_change_mechanical",
                      "rate", "rate_mechanical", "slowest_mode", "ratio"}
    assert all(np.isfinite(x) and x >= 0 for x in v.values())
    assert v["relative_change_B"] == 0.0                 # B = [0; 0; L^-1] is constant
    ss = five[3]
    A = ss.A
    expect = np.max(np.linalg.norm(A - A[0], axis=(1, 2))) / np.linalg.norm(A[0])
    assert np.isclose(ss.variation()["relative_change_A"], expect, rtol=1e-12)
    M = ss.trajectory.q.shape[1]
    Am = A[:, M:2 * M]                                     # the acceleration rows
    expect = np.max(np.linalg.norm(Am - Am[0], axis=(1, 2))) / np.linalg.norm(Am[0])
    assert np.isclose(ss.variation()["relative_change_mechanical"], expect, rtol=1e-12)
    assert ss.variation()["relative_change_mechanical"] > ss.variation()["relative_change_A"]
    ev = ss.eigenvalues()
    assert np.isclose(ss.variation()["slowest_mode"], np.abs(ev.real).min(), rtol=1e-12)
    assert np.all(np.diff(ev.real, axis=1) >= 0)             # sorted by real part
    # one point: no rate
    plant, _ = five_bar_plant()
    one = plant.state_space(kic.Trajectory(ss.t[:1], ss.trajectory.q[:1], ss.trajectory.qd[:1],
                                           ss.trajectory.qdd[:1], ss.trajectory.qddd[:1]))
    assert one.variation()["rate"] == 0.0 and one.variation()["relative_change_A"] == 0.0
    assert one.variation()["rate_mechanical"] == 0.0


def test_trajectory_helpers():
    tr = kic.Trajectory.quintic([0.0, 1.0], [1.0, -1.0], duration=2.0, samples=201)
    # derivatives consistent with the positions (spline of the samples)
    for lo, hi in (("q", "qd"), ("qd", "qdd"), ("qdd", "qddd")):
        d = np.gradient(getattr(tr, lo), tr.t, axis=0, edge_order=2)
        assert rel_err(d[2:-2], getattr(tr, hi)[2:-2]) < 1e-3
    assert np.allclose(tr.qd[[0, -1]], 0) and np.allclose(tr.qdd[[0, -1]], 0)
    sp = kic.Trajectory.spline([0.0, 0.4, 1.0], [[0.0, 0.0], [0.3, -0.2], [0.5, 0.1]], samples=101)
    assert np.allclose(sp.q[0], [0, 0]) and np.allclose(sp.q[-1], [0.5, 0.1])
    assert np.allclose(sp.qd[[0, -1]], 0, atol=1e-12) and np.allclose(sp.qdd[[0, -1]], 0,
                                                                       atol=1e-10)
    i = np.argmin(np.abs(sp.t - 0.4))
    assert abs(sp.t[i] - 0.4) < 1e-12 and np.allclose(sp.q[i], [0.3, -0.2])
    for lo, hi in (("q", "qd"), ("qd", "qdd"), ("qdd", "qddd")):
        d = np.gradient(getattr(sp, lo), sp.t, axis=0, edge_order=2)
        assert rel_err(d[2:-2], getattr(sp, hi)[2:-2]) < 1e-2
