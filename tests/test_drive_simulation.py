"""``kic.simulate`` of a motor-driven plant (kic.drive_simulation): against an
independent electromechanical model, the energy balance with the electrical side,
saturation, the quasi-static model, held inputs, nominal tracking, bad inputs.

The independent reference (:class:`FiveBarDrive`) is written here from the
motor equations and the five-bar's forward dynamics under crank torques
(``ClosedModel.forward_dynamics`` with ``start=phi``, the rotor inertia put in
by solving with I*^-1 from differences of forward dynamics): no
``ActuatedSystem`` involved, the voltage limit a plain clip inside the
equations (the simulation's events are located instead).
"""
from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

import kic
import mechanisms
from kic.actuators import DriveWarning
from kic.drive_simulation import DriveSimulation

pytestmark = pytest.mark.slow

Q0 = np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])       # crank angles (rad)
TARGET = Q0 + np.array([0.3, -0.2])
MOTOR = dict(resistance=1.0, inductance=0.2e-3, torque_constant=0.035, back_emf_constant=0.035,
             rotor_inertia=1e-5, rotor_damping=1e-6)
GEAR = 12.0


def haptic(voltage_limit=None, current_limit=None, electrical=None, **motor):
    """The five-bar haptic device: two DC motors through 12:1 capstans."""
    params = dict(MOTOR, **motor)
    motors = [kic.DCMotor(**params, name=side, voltage_limit=voltage_limit,
                          current_limit=current_limit) for side in ("left", "right")]
    return kic.ActuatedSystem(mechanisms.five_bar(), motors, gear_ratios=[GEAR, GEAR],
                              electrical=electrical)


class FiveBarDrive:
    """The five-bar with a geared DC motor on each crank, written from the motor
    equations (motor angle = N x crank angle)::

        L i' = v - R i - k_e N q'                  (armature)
        (I* + N^2 J_r) q'' = N k_t i - N^2 B_r q' - bias(q, q')

    ``bias`` and ``I*`` enter through kic's forward dynamics of the bare
    mechanism, ``FD(T) = I*^-1 (T - bias)``: with ``C = I*^-1`` (columns
    ``FD(e_k) - FD(0)``), ``(1 + C N^2 J_r) q'' = FD(N k_t i - N^2 B_r q')``.
    Quasi-static: ``i = (v - k_e N q') / R``.  The voltage limit clips v.
    """

    def __init__(self, voltage_limit=np.inf, quasi_static=False, **motor):
        p = dict(MOTOR, **motor)
        self.fb = mechanisms.five_bar()
        self.R, self.L = p["resistance"], p["inductance"]
        self.kt, self.ke = p["torque_constant"], p["back_emf_constant"]
        self.J = GEAR ** 2 * p["rotor_inertia"]
        self.B = GEAR ** 2 * p["rotor_damping"]
        self.vmax, self.quasi_static = voltage_limit, quasi_static
        self.phi = None

    def current(self, x, v):
        v = np.clip(v, -self.vmax, self.vmax)
        if self.quasi_static:
            return (v - self.ke * GEAR * x[2:4]) / self.R
        return x[4:6]

    def __call__(self, t, x, v):
        q, qd = x[:2], x[2:4]
        i = self.current(x, v)
        self.phi = self.fb.assemble(q, start=self.phi)
        fd = lambda T: self.fb.forward_dynamics(q, qd, T, start=self.phi)     # noqa: E731
        zero = fd(np.zeros(2))
        C = np.column_stack([fd(e) - zero for e in np.eye(2)])
        qdd = np.linalg.solve(np.eye(2) + C * self.J,
                              fd(GEAR * self.kt * i - self.B * qd))
        if self.quasi_static:
            return np.concatenate([qd, qdd])
        di = (np.clip(v, -self.vmax, self.vmax) - self.R * i - self.ke * GEAR * qd) / self.L
        return np.concatenate([qd, qdd, di])


def controller(x):
    """PD on the cranks with a current term (V): 60 V asked at the start."""
    v = 200.0 * (TARGET - x[:2]) - 4.0 * x[2:4]
    return v - 0.5 * x[4:6] if x.size == 6 else v


# ====================================== against the independent model
@pytest.mark.parametrize("electrical", ["dynamic", "quasi_static"])
def test_feedback_loop_against_an_independent_electromechanical_model(electrical):
    qs = electrical == "quasi_static"
    plant = haptic(voltage_limit=24.0, electrical=electrical)
    ref_model = FiveBarDrive(voltage_limit=24.0, quasi_static=qs)
    x0 = np.concatenate([Q0, [0.0, 0.0]] + ([] if qs else [[0.0, 0.0]]))
    ts = np.linspace(0.0, 0.3, 31)
    ref = solve_ivp(lambda t, x: ref_model(t, x, controller(x)), (0.0, 0.3), x0,
                    method="DOP853", rtol=1e-12, atol=1e-13, t_eval=ts)
    assert ref.success
    sim = kic.simulate(plant, (0.0, 0.3), Q0, [0.0, 0.0], voltage=lambda t, x: controller(x),
                       t_eval=ts, rtol=1e-11, atol=1e-12)
    assert isinstance(sim, DriveSimulation) and isinstance(sim, kic.Simulation)
    X = ref.y.T
    assert np.array_equal(sim.t, ts)
    assert np.abs(sim.q - X[:, :2]).max() < 1e-6
    assert np.abs(sim.qd - X[:, 2:4]).max() < 1e-6 * np.abs(X[:, 2:4]).max()
    i_ref = np.array([ref_model.current(x, controller(x)) for x in X])
    assert np.abs(sim.currents - i_ref).max() < 1e-6 * np.abs(i_ref).max()
    # the limit acted (events located), and the motion went well on its way
    assert sim.saturated[0].all() and not sim.saturated[-1].any()
    assert {e[2] for e in sim.events} == {"voltage"} and len(sim.events) >= 4
    assert np.abs(sim.commanded).max() > 50.0 and np.abs(sim.voltages).max() == 24.0
    assert np.abs(X[-1, :2] - Q0).max() > 0.15


# ========================================================= energy balance
@pytest.mark.parametrize("back_emf", [0.035, 0.0345])
def test_energy_balance_with_the_electrical_side(back_emf):
    """supplied = stored change + dissipated, to the integration tolerance, with
    voltage and current limits acting (and a motor whose constants differ by
    1.4 %: the conversion mismatch is accounted as dissipated)."""
    plant = haptic(voltage_limit=24.0, current_limit=8.0, back_emf_constant=back_emf)
    ts = np.linspace(0.0, 0.3, 3001)
    sim = kic.simulate(plant, (0.0, 0.3), Q0, [0.0, 0.0], voltage=lambda t, x: controller(x),
                       t_eval=ts)
    assert sim.conservative
    change = sim.energy - sim.energy[0]
    error = sim.supplied + sim.input_work - change - sim.dissipated
    assert sim.supplied[-1] > 1.0                                # a real exchange of energy
    assert np.abs(error).max() < 1e-7 * sim.supplied.max()
    assert sim.energy_drift < 1e-7
    # the stored energy, written out: kinetic (mechanism, rotors), potential, magnetic
    fb = plant.model
    J, L = GEAR ** 2 * MOTOR["rotor_inertia"], MOTOR["inductance"]
    stored = (fb.kinetic_energy(sim.q, sim.qd) + 0.5 * J * (sim.qd ** 2).sum(axis=1)
              + fb.potential_energy(sim.q) + 0.5 * L * (sim.currents ** 2).sum(axis=1))
    assert np.abs(sim.energy - stored).max() < 1e-12 * np.abs(stored).max()
    # the flows are the integrals of the recorded powers: the trapezoid rule on the
    # 3000 intervals, those with a switch inside (a kink of the power) left out
    power = (sim.voltages * sim.currents).sum(axis=1)
    trapezoid = 0.5 * (power[1:] + power[:-1]) * np.diff(ts)
    switches = np.array([e[0] for e in sim.events])
    smooth = ~((switches[None, :] > ts[:-1, None]) & (switches[None, :] < ts[1:, None])).any(1)
    assert smooth.sum() > 2900
    increments = np.diff(sim.supplied)
    assert abs((trapezoid - increments)[smooth].sum()) < 1e-5 * sim.supplied[-1]
    copper = (MOTOR["resistance"] * sim.currents ** 2).sum(axis=1)
    assert np.all(np.diff(sim.dissipated) > 0)
    assert abs(np.trapezoid(copper, ts) - sim.dissipated[-1]) < 0.05 * sim.dissipated[-1]
    # both limits acted on the way
    kinds = {(e[1], e[2]) for e in sim.events}
    assert ("left", "voltage") in kinds and ("left", "current") in kinds
    assert np.abs(sim.currents).max() <= 8.0 * (1 + 1e-12)


def test_input_loads_enter_the_balance():
    """A constant input torque on the cranks besides the motors: its work is
    recorded and closes the balance."""
    plant = haptic(electrical="quasi_static")
    sim = kic.simulate(plant, (0.0, 0.2), Q0, [0.0, 0.0], tau=[0.8, -0.5],
                       voltage=[1.0, -1.0])
    assert abs(sim.input_work[-1]) > 1e-3 and sim.energy_drift < 1e-7
    free = kic.simulate(plant, (0.0, 0.2), Q0, [0.0, 0.0], voltage=[1.0, -1.0])
    assert np.all(free.input_work == 0) and free.energy_drift < 1e-7
    assert np.abs(sim.q[-1] - free.q[-1]).max() > 1e-3
    # no source (0 V, the terminals shorted): the motors brake the fall, nothing supplied
    shorted = kic.simulate(haptic(), (0.0, 0.2), Q0, [0.0, 0.0])
    assert np.all(shorted.supplied == 0) and np.all(shorted.voltages == 0)
    assert shorted.dissipated[-1] > 1e-4 and shorted.energy_drift < 1e-7
    assert np.allclose(shorted.energy - shorted.energy[0], -shorted.dissipated, rtol=0,
                       atol=1e-8 * shorted.dissipated[-1])


def test_applied_loads_enter_the_balance():
    """A spring and a damper on the cranks (the plant's loads, on the numpy path):
    their work is recorded and closes the balance; against the spring's energy
    and the damper's dissipation written out."""
    loads = kic.Loads().spring("crank1", 4.0, rest=Q0[0]).damper("crank2", 0.2)
    motors = [kic.DCMotor(**MOTOR, name=side, voltage_limit=24.0) for side in ("l", "r")]
    plant = kic.ActuatedSystem(mechanisms.five_bar(), motors, gear_ratios=[GEAR, GEAR],
                               loads=loads, electrical="quasi_static")
    ts = np.linspace(0.0, 0.06, 1201)
    sim = kic.simulate(plant, (0.0, 0.06), Q0, [0.0, 0.0], voltage=lambda t, x: controller(x),
                       t_eval=ts)
    assert sim.conservative and sim.energy_drift < 1e-7
    spring = 0.5 * 4.0 * (sim.q[:, 0] - Q0[0]) ** 2
    damper = np.concatenate([[0.0], np.cumsum(0.5 * np.diff(ts) * 0.2 * (
        sim.qd[1:, 1] ** 2 + sim.qd[:-1, 1] ** 2))])
    assert spring[-1] > 1e-3 and damper[-1] > 1e-3
    expected = -(spring - spring[0]) - damper
    assert np.abs(sim.input_work - expected).max() < 1e-4 * np.abs(expected).max()


# ================================================================ saturation
def test_saturation_engages():
    """A demand beyond the 24 V supply: flags set, voltages clipped, the motion
    slower than the unsaturated plant's under the same law."""
    ts = np.linspace(0.0, 0.15, 151)
    law = lambda t, x: controller(x)                                     # noqa: E731
    limited = kic.simulate(haptic(voltage_limit=24.0), (0.0, 0.15), Q0, [0.0, 0.0],
                           voltage=law, t_eval=ts)
    free = kic.simulate(haptic(), (0.0, 0.15), Q0, [0.0, 0.0], voltage=law, t_eval=ts)
    assert np.abs(free.voltages).max() > 50.0 and not free.saturated.any()
    assert np.abs(limited.voltages).max() == 24.0
    flagged = limited.saturated
    assert flagged[:5].all()
    assert np.all(np.abs(limited.voltages[flagged]) == 24.0)
    assert np.all(np.abs(limited.commanded[flagged]) >= 24.0)
    inside = ~flagged
    assert np.array_equal(limited.voltages[inside], limited.commanded[inside])
    # slower: less of the way covered at every early sample
    progress = lambda s: np.abs(s.q - Q0).sum(axis=1)                   # noqa: E731
    assert np.all(progress(limited)[1:30] < progress(free)[1:30])
    # the current limit of the amplifier holds the current there exactly
    held = kic.simulate(haptic(voltage_limit=24.0, current_limit=5.0), (0.0, 0.05), Q0,
                        [0.0, 0.0], voltage=law, t_eval=ts[:51])
    assert np.abs(held.currents).max() == 5.0
    on = [e for e in held.events if e[2] == "current" and e[3] != 0]
    assert on and held.saturated[np.abs(held.currents) == 5.0].all()


def test_held_samples_switch_at_their_times():
    """Voltage samples (times, values) held: a step beyond the limit, then back;
    and a controller sampled every millisecond against the loop written by hand."""
    plant = haptic(voltage_limit=10.0, electrical="quasi_static")
    times = np.array([0.0, 0.01, 0.02])
    values = np.array([[5.0, -5.0], [30.0, -2.0], [0.0, 0.0]])
    ts = np.linspace(0.0, 0.03, 31)
    sim = kic.simulate(plant, (0.0, 0.03), Q0, [0.0, 0.0], voltage=(times, values), t_eval=ts)
    # a sample at a switching time is taken after the switch (held from there on)
    assert np.array_equal(sim.commanded[ts < 0.01], np.tile(values[0], (10, 1)))
    mid = (ts >= 0.01) & (ts < 0.02)
    assert np.all(sim.voltages[mid, 0] == 10.0) and np.all(sim.saturated[mid, 0])
    assert np.array_equal(sim.commanded[mid], np.tile(values[1], (10, 1)))
    assert not sim.saturated[mid, 1].any() and not sim.saturated[ts >= 0.02].any()
    steps = kic.simulate(plant, (0.0, 0.03), Q0, [0.0, 0.0], voltage=(times, values))
    assert np.count_nonzero(steps.t == 0.01) == 1 and steps.commanded[steps.t == 0.01][0, 0] == 30
    # a digital controller at 1 kHz (zero-order hold) against a hand-written loop
    law = lambda t, x: 150.0 * (TARGET - x[:2]) - 3.0 * x[2:4]          # noqa: E731
    sim = kic.simulate(plant, (0.0, 0.02), Q0, [0.0, 0.0], voltage=law, period=1e-3,
                       t_eval=np.linspace(0.0, 0.02, 21), rtol=1e-11, atol=1e-12)
    x = np.concatenate([Q0, [0.0, 0.0]])
    ref_model = FiveBarDrive(voltage_limit=10.0, quasi_static=True)
    X = [x]
    for k in range(20):
        v = law(k * 1e-3, x)
        sol = solve_ivp(lambda t, y: ref_model(t, y, v), (k * 1e-3, (k + 1) * 1e-3), x,
                        method="DOP853", rtol=1e-12, atol=1e-13)
        x = sol.y[:, -1]
        X.append(x)
    X = np.array(X)
    assert np.abs(sim.q - X[:, :2]).max() < 1e-8
    asked = np.array([law(k * 1e-3, x) for k, x in enumerate(X[:-1])])  # held over a period
    assert np.abs(sim.commanded[:-1] - asked).max() < 1e-5
    assert np.array_equal(sim.commanded[-1], sim.commanded[-2])     # the end: still held


# ================================================ nominal tracking, closed models
def test_nominal_tracking_follows_the_trajectory():
    """No controller: the nominal voltages of a trajectory drive it open loop
    (from the nominal state; the spline between 401 samples is the only error)."""
    plant = haptic()
    tr = kic.Trajectory.quintic(Q0, TARGET, duration=0.4, samples=401)
    sim = kic.simulate(plant, (0.0, 0.4), None, None, trajectory=tr, t_eval=tr.t)
    nom = plant.nominal(tr)
    same = kic.simulate(plant, (0.0, 0.4), tr.q[0], tr.qd[0], voltage=tr, t_eval=tr.t)
    assert np.abs(same.q - sim.q).max() < 1e-12
    assert np.abs(sim.q - tr.q).max() < 1e-5
    assert np.abs(sim.currents - nom.current).max() < 1e-3 * np.abs(nom.current).max()
    assert np.abs(sim.commanded - nom.voltage).max() < 1e-12 * np.abs(nom.voltage).max()
    assert sim.energy_drift < 1e-7
    # beyond the supply: warned, and saturated in the simulation
    fast = kic.Trajectory.quintic(Q0, Q0 + np.array([0.5, 0.4]), duration=0.12, samples=121)
    with pytest.warns(DriveWarning, match="voltage"):
        sat = kic.simulate(haptic(voltage_limit=24.0), (0.0, 0.12), None, None, voltage=fast)
    assert sat.saturated.any() and np.abs(sat.voltages).max() <= 24.0
    assert np.abs(sat.q[-1] - fast.q[-1]).max() > 1e-3            # it could not keep up


def test_stewart_platform_driven_by_its_leg_motors():
    """Actuators at other coordinates (legs of a platform modelled in its pose):
    a quasi-static plant under a PD law on the pose through the leg Jacobian."""
    sp = mechanisms.stewart_platform()
    motors = [kic.DCMotor(1.0, 0.0, 0.1, 0.1, rotor_inertia=2e-5, rotor_damping=1e-5,
                          voltage_limit=48.0, name=f"leg{k}") for k in range(6)]
    plant = kic.ActuatedSystem(sp, motors, gear_ratios=[2 * np.pi / 0.005] * 6)
    q0 = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])
    goal = q0 + np.array([0.01, -0.01, 0.02, 0.02, 0.0, 0.03])
    hold = plant.nominal(kic.Trajectory(np.array([0.0, 1.0]), np.stack([q0, q0]),
                                        np.zeros((2, 6)), np.zeros((2, 6)),
                                        np.zeros((2, 6)))).voltage[0]

    def law(t, x):
        G = sp.actuator_jacobian(x[:6], sp.actuators)
        return hold + G @ (400.0 * (goal - x[:6]) - 40.0 * x[6:12])

    sim = kic.simulate(plant, (0.0, 0.3), q0, np.zeros(6), voltage=law)
    assert sim.energy_drift < 1e-7 and sim.phi.shape == (len(sim.t), len(sp.phi_names))
    assert np.abs(sim.q[-1] - goal).max() < 0.5 * np.abs(goal - q0).max()


# ================================================================ bad input
def test_bad_inputs_raise_kic_errors():
    plant = haptic(voltage_limit=24.0)
    run = lambda **kw: kic.simulate(plant, (0.0, 0.01), Q0, [0.0, 0.0], **kw)   # noqa: E731
    with pytest.raises(kic.ModelError, match=r"voltage\(t=0.*expected 2 finite"):
        run(voltage=lambda t, x: np.zeros(3))
    with pytest.raises(kic.ModelError, match="voltage"):
        run(voltage=lambda t, x: np.array([np.nan, 0.0]))
    with pytest.raises(kic.ModelError, match="q0"):
        kic.simulate(plant, (0.0, 0.01), Q0[:1], [0.0, 0.0])
    with pytest.raises(kic.ModelError, match="qd0"):
        kic.simulate(plant, (0.0, 0.01), Q0, [0.0, 0.0, 0.0])
    with pytest.raises(kic.ModelError, match="i0"):
        run(i0=[1.0])
    with pytest.raises(kic.ModelError, match="i0.*exceed"):
        kic.simulate(haptic(current_limit=2.0), (0.0, 0.01), Q0, [0.0, 0.0], i0=[3.0, 0.0])
    with pytest.raises(kic.ModelError, match="i0.*quasi-static"):
        kic.simulate(haptic(electrical="quasi_static"), (0.0, 0.01), Q0, [0.0, 0.0],
                     i0=[0.0, 0.0])
    with pytest.raises(kic.ModelError, match="voltage must have shape"):
        run(voltage=[1.0, 2.0, 3.0])
    with pytest.raises(kic.ModelError, match="voltage samples"):
        run(voltage=(np.array([0.0, 0.1]), np.zeros((2, 3))))
    with pytest.raises(kic.ModelError, match="period"):
        run(voltage=[1.0, 1.0], period=1e-3)
    with pytest.raises(kic.ModelError, match="period"):
        run(voltage=lambda t, x: np.zeros(2), period=-1.0)
    with pytest.raises(kic.ModelError, match="loads"):
        run(loads=kic.Loads())
    with pytest.raises(kic.ModelError, match="tau"):
        run(tau=lambda t, q, qd: np.zeros(3))
    with pytest.raises(kic.ModelError, match="t_eval"):
        run(t_eval=[0.0, 0.5])
    with pytest.raises(kic.ModelError, match="method"):
        run(method="Euler")
    for option, value in (("max_steps", 10), ("wall_time", 1.0), ("on_limit", "stop"),
                          ("switch_condition", 100.0), ("bifurcation", "raise")):
        with pytest.raises(kic.ModelError, match=f"{option}: options of a mechanism's free"):
            run(**{option: value})
    with pytest.raises(kic.ModelError, match="trajectory"):
        run(voltage=kic.Trajectory.quintic(Q0, TARGET, duration=0.005, samples=6))
    with pytest.raises(kic.ModelError, match="not both"):
        run(voltage=[1.0, 1.0], trajectory=kic.Trajectory.quintic(Q0, TARGET, 0.1, 11))
    with pytest.raises(kic.ModelError, match="q0 and qd0"):
        kic.simulate(plant, (0.0, 0.01), None, None)
    with pytest.raises(kic.ModelError, match="ActuatedSystem"):
        kic.simulate(mechanisms.planar_two_link(), (0.0, 0.1), [0.0, 0.0], [0.0, 0.0],
                     voltage=[1.0, 1.0])
    with pytest.raises(kic.ModelError, match="state must have 6"):
        plant.rhs(0.0, np.zeros(5), [0.0, 0.0])
    with pytest.raises(kic.ModelError, match="held"):
        plant.rhs(0.0, np.concatenate([Q0, np.zeros(4)]), [0.0, 0.0], held=[0])


def test_inverse_is_the_nominal_input_at_one_pose():
    """ActuatedSystem.inverse (one pose, compiled where rhs is) against the nominal
    inputs of a trajectory (batched, numpy) and against rhs."""
    sp = mechanisms.stewart_platform()
    motors = [kic.DCMotor(1.0, 1e-3, 0.1, 0.1, rotor_inertia=2e-5, rotor_damping=1e-5)
              for _ in range(6)]
    plant = kic.ActuatedSystem(sp, motors, gear_ratios=[2 * np.pi / 0.005] * 6)
    q0 = np.array([0.0, 0.0, 0.6, 0.0, 0.0, 0.0])
    tr = kic.Trajectory.quintic(q0, q0 + np.array([0.05, -0.03, 0.05, 0.1, -0.05, 0.08]),
                                duration=1.0, samples=5)
    nom = plant.nominal(tr)
    for k in (1, 2, 3):
        i, v = plant.inverse(tr.q[k], tr.qd[k], tr.qdd[k])
        assert np.abs(i - nom.current[k]).max() < 1e-10 * np.abs(nom.current[k]).max()
        # the dynamic model's voltage without L i'
        assert np.abs(v + plant.L @ nom.current_rate[k] - nom.voltage[k]).max() < 1e-9
        x = np.concatenate([tr.q[k], tr.qd[k], i])
        assert np.abs(plant.rhs(0.0, x, v)[6:12] - tr.qdd[k]).max() < 1e-9
    with pytest.raises(kic.ModelError, match="qdd"):
        plant.inverse(q0, np.zeros(6), np.zeros(5))
