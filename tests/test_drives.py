"""DC-motor drives in the loop: limits, the quasi-static model, unit plausibility,
the singularity rule of the motor layer, saturation, the energy balance, the
nonlinear plant against an independent electromechanical model, discrete-time
export and outputs.

Independent references written here:

- a two-link arm with geared DC motors written out in closed form (Horn's
  mass matrix, no kic), integrated under a feedback law with scipy's solve_ivp
  against ``ActuatedSystem.rhs``;
- the electrical and mechanical energy balance (supplied = stored + dissipated)
  along a motion driven through ``ActuatedSystem.rhs``;
- :class:`ReducedODE`, the quasi-static motor-plus-mechanism ODE written from the
  motor equations, for the reduced state space (finite differences);
- ``scipy.signal.cont2discrete`` for the discrete export.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy.integrate import solve_ivp
from scipy.optimize import brentq

import kic
import mechanisms
from helpers import derivative, rel_err, five_bar_stretched
from kic.actuators import DriveLimitError, DriveWarning
from test_linearize import (FB_Q0, FB_Q1, SMALL_MOTOR, SP_Q0, SP_Q1, MotorODE,
                            _nominal_state, stewart_plant)

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels


# ---------------------------------------------------------------- plants
def haptic(voltage_limit=24.0, current_limit=None, inductance=0.2e-3, electrical=None,
           gear=12.0):
    """The five-bar haptic device: two 24 V DC motors through 12:1 capstans."""
    fb = mechanisms.five_bar()
    motors = [kic.DCMotor(1.0, inductance, 0.035, 0.035, rotor_inertia=1e-5, rotor_damping=1e-6,
                          name=side, voltage_limit=voltage_limit, current_limit=current_limit)
              for side in ("left", "right")]
    return kic.ActuatedSystem(fb, motors, gear_ratios=[gear, gear], electrical=electrical)


# ================================================================ motors
def test_limits_are_validated_and_optional():
    m = kic.DCMotor(1.0, 1e-3, 0.1, 0.1)
    assert m.voltage_limit is None and m.current_limit is None and m.speed_limit is None
    assert m.rated_current is None
    m = kic.DCMotor(2.0, 1e-3, 0.1, 0.1, voltage_limit=24.0)
    assert m.rated_current == 12.0                       # the stall current
    m = kic.DCMotor(2.0, 1e-3, 0.1, 0.1, voltage_limit=24.0, current_limit=3.0, speed_limit=500)
    assert m.rated_current == 3.0 and "current_limit=3.0" in repr(m)
    for key in ("voltage_limit", "current_limit", "speed_limit"):
        for bad in (0.0, -1.0, np.nan, "x"):
            with pytest.raises(kic.ModelError, match=key):
                kic.DCMotor(1.0, 1e-3, 0.1, 0.1, **{key: bad})


def test_unit_mistakes_are_warned_about():
    with pytest.warns(DriveWarning, match="differ by"):          # kt in mN m/A
        kic.DCMotor(1.0, 1e-3, 35.0, 0.035)
    with pytest.warns(DriveWarning, match="time constant"):      # L in mH read as H
        kic.DCMotor(1.0, 0.2, 0.035, 0.035)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kic.DCMotor(1.0, 1e-3, 0.0350, 0.0345)                   # datasheet rounding: fine
    # a ball screw's lead given as the gear ratio (0.005 instead of 2 pi / 0.005)
    sp = mechanisms.stewart_platform()
    motors = [kic.DCMotor(1.0, 1e-3, 0.1, 0.1, voltage_limit=48.0, name=f"leg{k}")
              for k in range(6)]
    with pytest.warns(DriveWarning, match="lead given as the gear ratio"):
        plant = kic.ActuatedSystem(sp, motors, gear_ratios=[0.005] * 6)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        kic.ActuatedSystem(sp, motors, gear_ratios=[2 * np.pi / 0.005] * 6)
    # ... and the currents it implies are far beyond any rating: warned whatever on_limit
    tr = kic.Trajectory.quintic(SP_Q0, SP_Q1, duration=1.0, samples=11)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        plant.nominal(tr, on_limit="warn")
    messages = [str(w.message) for w in caught if w.category is DriveWarning]
    assert any("times its rating" in m for m in messages)       # the unit mistake ...
    assert any("needs voltage" in m for m in messages)          # ... and the limit


def test_inductance_zero_selects_the_quasi_static_model():
    plant = haptic(inductance=0.0)
    assert plant.electrical == "quasi_static" and plant.n_states == 4
    assert plant.state_names == ["q[crank1]", "q[crank2]", "qd[crank1]", "qd[crank2]"]
    with pytest.raises(kic.ModelError, match="no inductance"):
        haptic(inductance=0.0, electrical="dynamic")
    with pytest.raises(kic.ModelError, match="electrical must be"):
        haptic(electrical="static")
    full = haptic()
    assert full.electrical == "dynamic" and full.n_states == 6
    assert haptic(electrical="quasi_static").n_states == 4


# ====================================================== nominal and limits
def fast_move():
    """A 0.12 s move of the haptic device: about 77 V, more than its 24 V supply."""
    q1 = FB_Q0 + np.array([0.5, 0.4])
    return kic.Trajectory.quintic(FB_Q0, q1, duration=0.12, samples=101)


def test_a_motion_beyond_the_voltage_limit_is_reported():
    plant = haptic(voltage_limit=24.0)
    tr = fast_move()
    free = haptic(voltage_limit=None).nominal(tr)
    need = np.abs(free.voltage)
    assert need.max() > 24.0                              # this move needs more
    with pytest.raises(DriveLimitError, match=r"voltage .* first at sample \d+ \(t = ") as err:
        plant.nominal(tr)
    e = err.value
    first = int(np.argmax((need > 24.0).any(axis=1)))
    assert e.sample == first and e.index == (first,) and e.time == tr.t[first]
    assert e.quantity == "voltage" and e.limit == 24.0
    a = ["left", "right"].index(e.motor)
    assert (need[first, a] > 24.0) and np.isclose(e.value, need[:, a].max())
    assert isinstance(e, kic.ModelError)
    with pytest.raises(DriveLimitError):
        plant.state_space(tr)
    # warn: the inputs as needed
    with pytest.warns(DriveWarning, match="voltage"):
        warned = plant.nominal(tr, on_limit="warn")
    assert np.array_equal(warned.voltage, free.voltage)
    assert not warned.saturated.any()
    # clip: voltages at the limit, flagged where clipped
    clipped = plant.nominal(tr, on_limit="clip")
    assert np.abs(clipped.voltage).max() == 24.0
    assert np.array_equal(clipped.saturated, need > 24.0)
    inside = ~clipped.saturated
    assert np.array_equal(clipped.voltage[inside], free.voltage[inside])
    # a slow move of the same size needs no more than the supply
    slow = kic.Trajectory.quintic(FB_Q0, FB_Q0 + np.array([0.5, 0.4]), duration=1.0, samples=51)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plant.nominal(slow)
    with pytest.raises(kic.ModelError, match="on_limit"):
        plant.nominal(slow, on_limit="ignore")


def test_current_and_speed_limits():
    tr = fast_move()
    free = haptic(voltage_limit=None).nominal(tr)
    peak_i = np.abs(free.current).max()
    plant = haptic(voltage_limit=None, current_limit=0.5 * peak_i)
    with pytest.raises(DriveLimitError, match="current") as err:
        plant.nominal(tr)
    assert err.value.quantity == "current"
    clipped = plant.nominal(tr, on_limit="clip")
    assert np.isclose(np.abs(clipped.current).max(), 0.5 * peak_i)
    # motor speed = gear ratio x crank rate
    assert np.allclose(free.speed, 12.0 * tr.qd, rtol=1e-13)
    fb = mechanisms.five_bar()
    limit = 0.5 * np.abs(free.speed).max()
    motors = [kic.DCMotor(1.0, 0.2e-3, 0.035, 0.035, speed_limit=limit)] * 2
    slow_motor = kic.ActuatedSystem(fb, motors, gear_ratios=[12, 12])
    with pytest.raises(DriveLimitError, match="speed") as err:
        slow_motor.nominal(tr)
    assert err.value.limit == limit
    with pytest.warns(DriveWarning, match="speed"):        # a speed cannot be clipped
        slow_motor.nominal(tr, on_limit="clip")


# =================================================== the singularity rule
def stewart_through_singularity(samples=21):
    """The Stewart platform yawing through a singularity of its leg actuation,
    with the middle sample exactly on it."""
    sp = mechanisms.stewart_platform()
    det = lambda y: np.linalg.det(sp.actuator_jacobian(                  # noqa: E731
        np.array([0, 0, 0.6, 0, 0, y]), sp.actuators))
    yaw = brentq(det, 1.1, 1.3, xtol=1e-15)
    q0, q1 = np.array([0, 0, 0.6, 0, 0, yaw - 0.2]), np.array([0, 0, 0.6, 0, 0, yaw + 0.2])
    return kic.Trajectory.quintic(q0, q1, duration=1.0, samples=samples)


def test_motor_layer_raises_at_a_singular_actuation():
    """issue 18 item 4: currents of 1e8 A and a +5e4 1/s pole, silently, before."""
    plant, _ = stewart_plant()
    tr = stewart_through_singularity()
    mid = len(tr) // 2
    for call in (plant.nominal, plant.state_space):
        with pytest.raises(kic.SingularityError, match=rf"sample {mid} \(t = 0.5 s\)") as err:
            call(tr)
        assert err.value.index == (mid,) and err.value.condition > kic.ClosedModel.max_condition
    # failures as data: NaN and a status there, the rest as computed without it
    nom = plant.nominal(tr, on_failure="nan")
    assert nom.status[mid] == kic.Status.SINGULAR_LOAD
    assert (np.delete(nom.status, mid) == kic.Status.OK).all()
    assert np.isnan(nom.current[mid]).all() and np.isnan(nom.voltage[mid]).all()
    ss = plant.state_space(tr, on_failure="nan")
    assert np.array_equal(ss.status, nom.status)
    assert np.isnan(ss.A[mid]).all() and np.isnan(ss.B[mid]).all()
    assert np.isfinite(np.delete(ss.A, mid, axis=0)).all()
    rest = np.delete(np.arange(len(tr)), mid)
    alone = plant.state_space(tr.select(rest))
    assert np.array_equal(alone.A, ss.A[rest]) and np.array_equal(alone.B, ss.B[rest])
    assert np.array_equal(alone.nominal.voltage, nom.voltage[rest])
    assert np.isnan(ss.eigenvalues()[mid]).all()
    with pytest.raises(kic.ModelError, match="on_failure"):
        plant.nominal(tr, on_failure="ignore")


def test_motor_layer_reports_a_closure_singularity_by_sample():
    """The five-bar with its couplers collinear (type II) at sample 1."""
    fb = mechanisms.five_bar(base=0.4)
    q = five_bar_stretched()
    motor = kic.DCMotor(**SMALL_MOTOR)
    plant = kic.ActuatedSystem(fb, [motor, motor], gear_ratios=[20, 20])
    tr = kic.Trajectory([0.0, 0.01, 0.02], np.stack([q - 0.05, q, q - 0.05]),
                        np.full((3, 2), 0.1), np.zeros((3, 2)), np.zeros((3, 2)))
    with pytest.raises(kic.SingularityError, match=r"sample 1 \(t = 0.01 s\)") as err:
        plant.state_space(tr)
    assert err.value.index == (1,)
    nom = plant.nominal(tr, on_failure="nan")
    assert nom.status[1] != kic.Status.OK and nom.status[0] == kic.Status.OK
    assert np.isnan(nom.voltage[1]).all() and np.isfinite(nom.voltage[[0, 2]]).all()


# ==================================================== the nonlinear plant
def test_rhs_against_the_test_ode_for_actuators_at_other_coordinates():
    """Stewart platform in platform coordinates, motors on the legs: G^a_q and
    a'' at q'' = 0 per pose (the compiled kernels on the numba backend)."""
    plant, ode = stewart_plant()
    tr = kic.Trajectory.quintic(SP_Q0, SP_Q1, duration=1.0, samples=5)
    ss = plant.state_space(tr)
    rng = np.random.default_rng(3)
    for k in (1, 3):
        x = _nominal_state(ss, k) + 0.01 * rng.normal(size=18)
        v = rng.normal(size=6)
        assert rel_err(plant.rhs(0.0, x, v), ode(x, v), floor=0) < 1e-11
    # a pose far from the last one (the warm start follows)
    x = _nominal_state(ss, 0)
    assert rel_err(plant.rhs(0.0, x, ss.nominal.voltage[0]), ode(x, ss.nominal.voltage[0]),
                   floor=0) < 1e-11


def test_rhs_rejects_bad_states_and_voltages():
    plant = haptic()
    x = np.concatenate([FB_Q0, [0.1, 0.2], [0.0, 0.0]])
    with pytest.raises(kic.ModelError, match="state must have 6 entries"):
        plant.rhs(0.0, x[:5], [1.0, 1.0])
    with pytest.raises(kic.ModelError, match="NaN"):
        plant.rhs(0.0, np.where(np.arange(6) == 2, np.nan, x), [1.0, 1.0])
    with pytest.raises(kic.ModelError, match="voltages must be 2"):
        plant.rhs(0.0, x, [1.0])
    with pytest.raises(kic.ModelError, match="disturbance"):
        plant.rhs(0.0, x, [1.0, 1.0], disturbance=[1.0])


def _compiled_only(backend):
    """Long integrations of a closed model run on the compiled path only (the
    numpy path's rhs, 10-20 ms a call, gives the same values: both are checked
    against the test ODE pointwise in test_linearize and above)."""
    if backend == "numpy":
        pytest.skip("long integration of a closed model: compiled path")


def test_saturation_engages(each_backend):
    """A PD law commanding up to 90 V: the terminal voltage never exceeds the
    24 V supply, the current stays at its 20 A limit while the controller
    pushes, and the flags say when."""
    _compiled_only(each_backend)
    plant = haptic(voltage_limit=24.0, current_limit=20.0)
    target = FB_Q0 + np.array([0.3, -0.2])

    def command(x):
        return 300.0 * (target - x[:2]) - 8.0 * x[2:4]

    x0 = np.concatenate([FB_Q0, np.zeros(4)])
    # the limits switch the equations: integrated with the switches located as
    # events (kic.simulate), not stepped over (a solver stepping across them chatters
    # in the sliding mode at the current limit, at the mercy of the last digits)
    t = np.linspace(0.0, 0.4, 801)
    sim = kic.simulate(plant, (0.0, 0.4), FB_Q0, [0.0, 0.0], voltage=lambda s, x: command(x),
                       t_eval=t, rtol=1e-8, atol=1e-10)
    X = np.column_stack([sim.q, sim.qd, sim.currents])
    assert np.abs(sim.currents).max() <= 20.0 * (1 + 1e-6) and sim.saturated[:20].all()
    applied = [plant.terminal(s, x, command(x)) for s, x in zip(t, X)]
    v = np.array([a[0] for a in applied])
    i = np.array([a[1] for a in applied])
    sat = np.array([a[2] for a in applied])
    asked = np.array([command(x) for x in X])
    assert np.abs(asked).max() > 80.0                      # the controller asks for much more
    assert np.abs(v).max() <= 24.0
    assert np.abs(i).max() <= 20.0 * (1 + 1e-6)            # the limit, to the integration error
    assert np.abs(i).max() > 19.99                         # and it is reached
    assert sat[:20].all() and not sat[-100:].any()         # saturated early, free at the end
    assert np.abs(X[-1, :2] - target).max() < 0.05         # on its way to the target
    # the quasi-static model clips the current itself
    qs = haptic(voltage_limit=24.0, current_limit=2.0, electrical="quasi_static")
    vq, iq, sq = qs.terminal(0.0, x0[:4], np.array([24.0, -24.0]))
    assert np.allclose(iq, [2.0, -2.0]) and sq.all() and np.allclose(vq, [2.0, -2.0])


def test_energy_balance_of_the_motor_driven_five_bar(each_backend):
    """supplied electrical energy = magnetic + kinetic (mechanism and rotors) +
    potential energy change + copper and rotor friction losses, along a motion
    driven through ActuatedSystem.rhs by a feedback law that saturates."""
    _compiled_only(each_backend)
    plant = haptic(voltage_limit=6.0)
    fb = plant.model
    target = FB_Q0 + np.array([0.3, -0.2])

    def command(x):
        return 300.0 * (target - x[:2]) - 5.0 * x[2:4]

    R, L, Ir, Br, CE = (np.diag(plant.R), np.diag(plant.L), plant.I_r, plant.B_r, plant.C_E)

    def augmented(t, y):
        x = y[:6]
        v, i, _ = plant.terminal(t, x, command(x))
        qd = x[2:4]
        power_in = v @ i
        copper = R @ (i * i)
        friction = qd @ Br @ qd
        return np.concatenate([plant.rhs(t, x, command(x)), [power_in, copper + friction]])

    def stored(x):
        q, qd, i = x[:2], x[2:4], x[4:]
        return (0.5 * L @ (i * i) + fb.kinetic_energy(q, qd) + 0.5 * qd @ Ir @ qd
                + fb.potential_energy(q))

    x0 = np.concatenate([FB_Q0, np.zeros(4)])
    sol = solve_ivp(augmented, (0.0, 0.4), np.concatenate([x0, [0.0, 0.0]]), method="LSODA",
                    rtol=1e-10, atol=1e-12, max_step=2e-3)
    assert sol.success
    xe = sol.y[:, -1]
    supplied, dissipated = xe[6], xe[7]
    change = stored(xe[:6]) - stored(x0)
    assert supplied > 0.05                                  # a real exchange of energy
    assert abs(supplied - (change + dissipated)) < 1e-6 * supplied, (supplied, change,
                                                                     dissipated)
    # the limit was active on the way (the balance holds with the applied voltage)
    v0 = plant.terminal(0.0, x0, command(x0))
    assert v0[2].all() and np.allclose(np.abs(v0[0]), 6.0)
    assert np.allclose(CE, 12 * 0.035 * np.eye(2))


# ------------------------------------ an independent electromechanical model
def two_link_motor_model(l=1.0, m=1.0, g=9.81, N=(50.0, 30.0), R=(1.2, 2.0), L=(2e-3, 1e-3),
                         kt=(0.1, 0.06), Jr=(2e-5, 1e-5), Br=(1e-5, 2e-6)):
    """Horn's uniform two-link arm (mass matrix m l^2 [[5/3 + c2, 1/3 + c2/2],
    [1/3 + c2/2, 1/3]]) with a geared DC motor on each joint, in closed form."""
    N, R, L, kt, Jr, Br = (np.asarray(a, float) for a in (N, R, L, kt, Jr, Br))
    lc, I = l / 2, m * l * l / 12

    def f(x, v):
        q1, q2, w1, w2, i1, i2 = x
        c2, s2 = np.cos(q2), np.sin(q2)
        Mq = np.array([[2 * I + m * lc**2 + m * (l * l + lc**2 + 2 * l * lc * c2),
                        I + m * (lc**2 + l * lc * c2)],
                       [I + m * (lc**2 + l * lc * c2), I + m * lc**2]])
        h = m * l * lc * s2
        coriolis = np.array([-h * (2 * w1 * w2 + w2 * w2), h * w1 * w1])
        gravity = np.array([(m * lc + m * l) * g * np.cos(q1) + m * lc * g * np.cos(q1 + q2),
                            m * lc * g * np.cos(q1 + q2)])
        w = np.array([w1, w2])
        i = np.array([i1, i2])
        tau = N * kt * i - N * N * Br * w
        wd = np.linalg.solve(Mq + np.diag(N * N * Jr), tau - coriolis - gravity)
        di = (v - R * i - kt * N * w) / L
        return np.concatenate([w, wd, di])

    motors = [kic.DCMotor(R[k], L[k], kt[k], kt[k], rotor_inertia=Jr[k], rotor_damping=Br[k])
              for k in range(2)]
    plant = kic.ActuatedSystem(mechanisms.planar_two_link(l, l, m, m, g), motors,
                               gear_ratios=list(N))
    return f, plant


def test_feedback_loop_against_an_independent_two_link_model():
    f, plant = two_link_motor_model()
    target = np.array([0.4, -0.7])

    def command(x):            # PD on the joints plus a current loop term, within 24 V
        return np.clip(80.0 * (target - x[:2]) - 8.0 * x[2:4] - 0.5 * x[4:], -24.0, 24.0)

    x0 = np.array([-0.3, 0.5, 0.0, 0.0, 0.0, 0.0])
    x = x0 + 0.1
    assert rel_err(plant.rhs(0.0, x, [3.0, -2.0]), f(x, np.array([3.0, -2.0])), floor=0) < 1e-12
    kw = dict(method="Radau", rtol=1e-11, atol=1e-12, t_eval=np.linspace(0, 0.5, 26))
    ref = solve_ivp(lambda t, x: f(x, command(x)), (0.0, 0.5), x0, **kw)
    sim = solve_ivp(lambda t, x: plant.rhs(t, x, command(x)), (0.0, 0.5), x0, **kw)
    assert ref.success and sim.success
    scale = np.abs(ref.y).max(axis=1, keepdims=True)
    assert np.abs(sim.y - ref.y).max() / scale.max() < 1e-6
    assert np.abs(sim.y[:2] - ref.y[:2]).max() < 1e-6
    assert np.abs(ref.y[:2, -1] - x0[:2]).max() > 0.3         # it moved


# ===================================================== the reduced model
class ReducedODE(MotorODE):
    """MotorODE with the armature inductance dropped: i = R^-1 (v - C_E theta_m')."""

    def __init__(self, *args, **kw):
        super().__init__(*args, **kw)
        self.L = np.eye(self.Na)            # the current rate is not used here

    def __call__(self, x, v, w=None):
        M = self.M
        q, qd = x[:M], x[M:2 * M]
        G, h = self.actuation(q, qd)
        S = self.Gmi @ G
        thd = S @ qd
        i = np.linalg.solve(self.R, v - self.CE @ thd)
        full = super().__call__(np.concatenate([q, qd, i]), v, w)
        return full[:2 * M]

    def current(self, x, v):
        M = self.M
        G, _ = self.actuation(x[:M], x[M:2 * M])
        return np.linalg.solve(self.R, v - self.CE @ (self.Gmi @ G) @ x[M:2 * M])


@pytest.mark.parametrize("which", ["five_bar", "stewart"])
def test_quasi_static_state_space_against_finite_differences(which):
    if which == "five_bar":
        fb = mechanisms.five_bar()
        motors = [kic.DCMotor(**dict(SMALL_MOTOR, inductance=0.0))] * 2
        kw = dict(gear_ratios=[20.0, 20.0])
        model, q0, q1 = fb, FB_Q0, FB_Q1
    else:
        model = mechanisms.stewart_platform()
        motors = [kic.DCMotor(1.0, 0.0, 0.1, 0.1, rotor_inertia=2e-5, rotor_damping=1e-5)] * 6
        kw = dict(gear_ratios=[2 * np.pi / 0.005] * 6)
        q0, q1 = SP_Q0, SP_Q1
    plant = kic.ActuatedSystem(model, motors, **kw)
    ode = ReducedODE(model, motors, **kw)
    tr = kic.Trajectory.quintic(q0, q1, duration=0.5, samples=5)
    ss = plant.state_space(tr, outputs=["q", "i"])
    M = model.dof
    assert ss.A.shape == (5, 2 * M, 2 * M) and ss.states[-1] == f"dqd[{model.coordinate_names[-1]}]"
    nom = ss.nominal
    for k in (1, 3):
        x0 = np.concatenate([tr.q[k], tr.qd[k]])
        v0 = nom.voltage[k]
        # the nominal voltages drive the trajectory: v = R i + C_E a'
        f = ode(x0, v0)
        assert rel_err(f[M:], tr.qdd[k]) < 1e-10
        assert rel_err(ode.current(x0, v0), nom.current[k]) < 1e-12
        assert rel_err(plant.rhs(0.0, x0, v0), f, floor=0) < 1e-11
        A_fd = derivative(lambda x: ode(x, v0), x0,
                          np.concatenate([np.full(M, 1e-6), np.full(M, 1e-5)]))
        B_fd = derivative(lambda v: ode(x0, v), v0, np.full(len(motors), 1e-4))
        assert rel_err(ss.A[k], A_fd, floor=0) < 1e-6
        assert rel_err(ss.B[k], B_fd, floor=0) < 1e-6
        # the current output: C dx + D dv against differences of i(x, v)
        Ci = ss.C[k, M:]
        Di = ss.D[k, M:]
        Ci_fd = derivative(lambda x: ode.current(x, v0), x0,
                    np.concatenate([np.full(M, 1e-6), np.full(M, 1e-5)]))
        Di_fd = derivative(lambda v: ode.current(x0, v), v0, np.full(len(motors), 1e-4))
        assert rel_err(Ci, Ci_fd, floor=1e-12) < 1e-6 and rel_err(Di, Di_fd, floor=0) < 1e-9


def test_quasi_static_is_the_limit_of_small_inductance():
    """The slow (mechanical) poles of the full model tend to the reduced model's."""
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=3)
    reduced = haptic(inductance=0.0).state_space(tr).eigenvalues()[1]
    errors = []
    for L in (1e-4, 1e-5, 1e-6):
        ev = haptic(inductance=L).state_space(tr).eigenvalues()[1]
        slow = ev[np.argsort(np.abs(ev))[:4]]
        errors.append(np.abs(np.sort_complex(slow) - np.sort_complex(reduced)).max())
    assert errors[0] > errors[1] > errors[2] and errors[2] < 1e-3 * np.abs(reduced).max()


# ================================================================ exports
@pytest.fixture(scope="module")
def haptic_ss():
    tr = kic.Trajectory.quintic(FB_Q0, FB_Q1, duration=0.5, samples=21)
    return haptic().state_space(tr, outputs=["q", "a", "i",
                                             {"tip": ("coupler1", (0.35, 0.0, 0.0), "xy")}])


def test_discrete_export_is_scipy_zoh_at_every_sample(haptic_ss):
    from scipy.signal import cont2discrete
    ss, dt = haptic_ss, 1e-3
    d = ss.discrete(dt)
    assert d.dt == dt and ss.dt is None and d.is_discrete and len(d) == len(ss)
    for k in range(len(ss)):
        Ad, Bd, Cd, Dd, _ = cont2discrete((ss.A[k], ss.B[k], ss.C[k], ss.D[k]), dt, method="zoh")
        _, Ed, _, _, _ = cont2discrete((ss.A[k], ss.E[k], ss.C[k], np.zeros((ss.C.shape[1], 2))),
                                       dt, method="zoh")
        assert rel_err(d.A[k], Ad, floor=0) < 1e-12 and rel_err(d.B[k], Bd, floor=0) < 1e-12
        assert rel_err(d.E[k], Ed, floor=0) < 1e-12
        assert np.array_equal(d.C[k], Cd) and np.array_equal(d.D[k], Dd)
    # independent: the held input integrated over one period by solve_ivp
    k, u = 7, np.array([0.3, -0.2])
    x0 = np.linspace(-1, 1, 6) * 1e-2
    sol = solve_ivp(lambda t, x: ss.A[k] @ x + ss.B[k] @ u, (0, dt), x0, rtol=1e-12,
                    atol=1e-15, method="DOP853")
    assert rel_err(d.A[k] @ x0 + d.B[k] @ u, sol.y[:, -1], floor=0) < 1e-9
    with pytest.raises(kic.ModelError, match="discrete already"):
        d.discrete(dt)
    for bad in (0.0, -1e-3, np.nan, "1ms"):
        with pytest.raises(kic.ModelError, match="dt"):
            ss.discrete(bad)


def test_discrete_exports_carry_the_period(haptic_ss, tmp_path):
    from scipy.io import loadmat
    d = haptic_ss.discrete(1e-3)
    assert d.to_scipy(3).dt == 1e-3
    d.save_mat(tmp_path / "plant.mat")
    assert loadmat(tmp_path / "plant.mat")["dt"].item() == 1e-3
    d.save_npz(tmp_path / "plant")                          # the suffix added, as numpy does
    with np.load(tmp_path / "plant.npz") as z:
        assert z["dt"] == 1e-3 and np.array_equal(z["A"], d.A)
    haptic_ss.save_npz(tmp_path / "cont.npz")
    with np.load(tmp_path / "cont.npz") as z:
        assert z["dt"] == 0.0
    control = pytest.importorskip("control")
    sys = d.to_control(3)
    assert isinstance(sys, control.StateSpace) and sys.dt == 1e-3
    assert np.array_equal(sys.A, d.A[3])
    # a discrete LQR on it: stable closed loop at every sample
    Q = np.diag([1e5, 1e5, 4, 4, 1, 1])
    K, _, _ = control.dlqr(d.A[10], d.B[10], Q, np.eye(2))
    assert np.abs(np.linalg.eigvals(d.A - d.B @ K)).max() < 1.0


def test_samples_by_index_and_by_time(haptic_ss):
    ss = haptic_ss
    with pytest.raises(kic.ModelError, match="integer.*at\\(t\\)"):
        ss.to_scipy(0.5)
    with pytest.raises(kic.ModelError, match="integer"):
        ss.to_control(0.5)
    with pytest.raises(kic.ModelError, match="integer"):
        ss.to_scipy(True)
    k = ss.index(0.25)
    assert k == 10 and ss.t[k] == 0.25
    assert ss.index(0.251) == 10 and ss.index(np.float64(0.5)) == 20
    one = ss.at(0.25)
    assert len(one) == 1 and np.array_equal(one.A[0], ss.A[10])
    assert np.array_equal(one.nominal.voltage[0], ss.nominal.voltage[10])
    assert one.trajectory.q[0].tolist() == ss.trajectory.q[10].tolist()
    assert np.array_equal(ss[np.int64(4)].B[0], ss.B[4])
    for bad in (-0.1, 0.6, np.nan, "now"):
        with pytest.raises(kic.ModelError):
            ss.index(bad)


def test_outputs_named_consistently(haptic_ss):
    ss = haptic_ss
    assert ss.states == ["dq[crank1]", "dq[crank2]", "dqd[crank1]", "dqd[crank2]",
                         "di[left]", "di[right]"]
    assert ss.inputs == ["dv[left]", "dv[right]"]
    assert ss.disturbances == ["dT[crank1]", "dT[crank2]"]
    assert ss.outputs == ["dq[crank1]", "dq[crank2]", "da[crank1]", "da[crank2]", "di[left]",
                          "di[right]", "dp[tip.x]", "dp[tip.y]"]
    # the named point: its planar position by differences, no z row
    fb = mechanisms.five_bar()
    q = ss.trajectory.q[6]
    pos = lambda q: (fb.kinematics(q, 1).frame("coupler1") @ [0.35, 0, 0, 1])[:2]   # noqa
    assert rel_err(ss.C[6, 6:, :2], derivative(pos, q, [1e-6, 1e-6]), floor=0) < 1e-8
    assert np.all(ss.C[6, 6:, 2:] == 0)
    plant = haptic()
    with pytest.raises(kic.ModelError, match="axes"):
        plant.state_space(ss.trajectory, outputs=[{"tip": ("coupler1", (0.35, 0, 0), "xw")}])
    with pytest.raises(kic.ModelError, match="repeat"):
        plant.state_space(ss.trajectory, outputs=["q", "q"])


def test_actuator_outputs_of_the_stewart_platform_are_its_leg_lengths():
    plant, _ = stewart_plant()
    tr = kic.Trajectory.quintic(SP_Q0, SP_Q1, duration=1.0, samples=3)
    ss = plant.state_space(tr, outputs=["a"])
    sp = plant.model
    legs = lambda q: np.asarray(sp.assemble(q))[sp.joint_indices(sp.actuators)]     # noqa
    assert rel_err(ss.C[1, :, :6], derivative(legs, tr.q[1], np.full(6, 1e-6)), floor=0) < 1e-8
    assert np.all(ss.C[1, :, 6:] == 0)
    assert ss.outputs == [f"da[leg{k}.p]" for k in range(6)]


def test_saves_are_atomic(haptic_ss, tmp_path, monkeypatch):
    path = tmp_path / "plant.npz"
    haptic_ss.save_npz(path)
    before = path.read_bytes()

    def broken(f, **data):
        f.write(b"half a file")
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez", broken)
    with pytest.raises(OSError, match="disk full"):
        haptic_ss.save_npz(path)
    assert path.read_bytes() == before                     # the previous file survives
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plant.npz"]   # no temporary left
    import scipy.io
    mat = tmp_path / "plant.mat"
    haptic_ss.save_mat(mat)
    before = mat.read_bytes()
    monkeypatch.setattr(scipy.io, "savemat", lambda f, data: broken(f))
    with pytest.raises(OSError):
        haptic_ss.save_mat(mat)
    assert mat.read_bytes() == before
