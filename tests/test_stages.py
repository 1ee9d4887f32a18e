"""The closed layer as stages: no hidden state, assembly modes, failures as data,
pickling, scale-invariant conditioning, simulations that keep what they integrated."""
import importlib
import pickle

import numpy as np
import pytest

import kic
import mechanisms
from helpers import five_bar_stretched, hand_four_bar, planar_offset

pytestmark = pytest.mark.usefixtures("each_backend")


def rod(mech, name, m, L):
    mech.add_body(name, mass=m, com=(L / 2, 0, 0),
                  inertia=np.diag([0.0, m * L ** 2 / 12, m * L ** 2 / 12]))


def hand_five_bar(scale=1.0):
    """mechanisms.five_bar()'s linkage built as a user would, without a guess."""
    s = scale
    mech = kic.Mechanism(gravity=(0, -9.81, 0), name="five-bar")
    for name, m, L in (("crank1", 1.0, 0.25), ("crank2", 1.0, 0.25), ("coupler2", 0.8, 0.35)):
        rod(mech, name, m, L * s)
    # coupler 1 carries the tip mass at its end, as in the builder
    m, L, mt = 0.8, 0.35 * s, 0.5
    M = m + mt
    c = (m * L / 2 + mt * L) / M
    I = m * L ** 2 / 12 + m * (L / 2 - c) ** 2 + mt * (L - c) ** 2
    mech.add_body("coupler1", mass=M, com=(c, 0, 0), inertia=np.diag([0.0, I, I]))
    mech.add_joint("crank1", "R", "ground", "crank1")
    mech.add_joint("crank2", "R", "ground", "crank2", origin=planar_offset(0.2 * s))
    mech.add_joint("elbow1", "R", "crank1", "coupler1", origin=planar_offset(0.25 * s))
    mech.add_joint("elbow2", "R", "crank2", "coupler2", origin=planar_offset(0.25 * s))
    mech.add_joint("tip", "R", "coupler1", "coupler2", origin=planar_offset(0.35 * s),
                   child_origin=planar_offset(0.35 * s))
    ref = mechanisms.five_bar().reference_phi
    return mech.model(["crank1", "crank2"], reference=dict(
        zip(["crank1", "crank2", "elbow1", "elbow2", "tip"], ref)))


def test_no_hidden_state_after_a_simulation():
    """closed.md's four-bar: simulate, then assemble at the reference gives the
    reference (the other assembly was returned before, silently)."""
    fb = hand_four_bar()
    ref = fb.assemble(fb.reference)
    sim = kic.simulate(fb, (0.0, 0.6), fb.reference, [3.0], rtol=1e-10, atol=1e-12)
    assert np.allclose(fb.assemble(fb.reference), ref, atol=1e-12)
    assert abs(ref[fb.phi_names.index("rocker")] - 1.3) < 0.05
    assert sim.energy_drift < 1e-7, sim.energy_drift
    assert sim.phi.shape == (len(sim.t), 4)
    # the record is the integrated branch: every phi closes the loop, in the mode
    asm = fb.assembly(sim.q, start=sim.phi)
    assert np.all(asm.status == kic.Status.OK)
    assert np.allclose(asm.phi, sim.phi, atol=1e-10)


def test_model_without_guess_simulates_like_the_builder():
    mine, builder = hand_five_bar(), mechanisms.five_bar()
    assert mine.mode == builder.mode
    springs = kic.Loads().spring("crank1", 20.0, rest=2.0).spring("crank2", 20.0, rest=1.2)
    t = np.linspace(0.0, 0.3, 7)
    a = kic.simulate(mine, (0.0, 0.3), [1.87, 1.27], [0.0, 0.0], loads=springs, t_eval=t)
    b = kic.simulate(builder, (0.0, 0.3), [1.87, 1.27], [0.0, 0.0], loads=springs, t_eval=t)
    assert np.allclose(a.q, b.q, atol=1e-7) and np.allclose(a.phi, b.phi, atol=1e-7)
    assert a.energy_drift < 1e-6


def test_batch_answers_equal_single_answers():
    """Each configuration of a batch gets its answer alone: no path through the batch."""
    fb = hand_five_bar()
    rng = np.random.default_rng(3)
    Q = fb.reference + rng.uniform(-0.4, 0.4, (12, 2))
    batch, status = fb.assemble(Q, on_failure="nan")
    for q, phi, s in zip(Q, batch, status):
        alone, s1 = fb.assemble(q, on_failure="nan")
        assert s == s1
        if s == kic.Status.OK:
            assert np.allclose(phi, alone, atol=1e-10)
    assert np.array_equal(fb.assemble(Q[::-1], on_failure="nan")[1], status[::-1])


def test_every_assembly_is_in_the_model_mode():
    """A warm start on the other branch does not switch the branch."""
    up, down = mechanisms.five_bar(), mechanisms.five_bar(branch="down")
    q = up.reference + 0.1
    other = down.assemble(q)
    phi = up.assemble(q, start=other)
    assert np.allclose(phi, up.assemble(q), atol=1e-10)
    assert up.assembly(q).mode.tolist() == list(up.mode)
    assert not np.allclose(phi, other)


def test_failures_as_data_and_every_failing_index():
    fb = mechanisms.five_bar(coupler1=0.3, coupler2=0.3)
    Q = np.tile(fb.reference, (3, 4, 1))
    Q[0, 1] = [np.pi, 0.0]
    Q[2, 3] = [np.pi, 0.1]
    Z = np.zeros_like(Q)
    with pytest.raises(kic.ClosureError) as err:
        fb.inverse_dynamics(Q, Z, Z)
    assert err.value.indices == [(0, 1), (2, 3)] and err.value.index == (0, 1)
    assert "(0, 1)" in str(err.value) and "(2, 3)" in str(err.value)
    for call in (lambda: fb.inverse_dynamics(Q, Z, Z, on_failure="nan"),
                 lambda: fb.forward_dynamics(Q, Z, Z, on_failure="nan"),
                 lambda: fb.actuator_loads(Q, Z, Z, fb.actuators, on_failure="nan"),
                 lambda: fb.condition(Q, on_failure="nan")):
        out, status = call()
        assert status.shape == (3, 4)
        assert status[0, 1] == status[2, 3] == kic.Status.UNASSEMBLABLE
        assert np.isnan(out[0, 1]).all() and np.all(np.isfinite(out[1]))
        good = fb.inverse_dynamics(fb.reference, [0, 0], [0, 0])
        if out.shape[-1:] == (2,) and call is not None:
            assert np.all(np.isfinite(out[status == kic.Status.OK]))
    T, _ = fb.inverse_dynamics(Q, Z, Z, on_failure="nan")
    assert np.allclose(T[1, 1], good)
    with pytest.raises(kic.ModelError, match="on_failure"):
        fb.assemble(Q, on_failure="ignore")


def test_singular_poses_are_data_too():
    """A singular configuration inside a batch: NaN and SINGULAR, the rest computed."""
    fb = mechanisms.five_bar(base=0.4)
    singular = five_bar_stretched()
    Q = np.stack([singular + [0.0, 0.3], singular, singular + [0.0, 0.2]])
    T, status = fb.inverse_dynamics(Q, np.zeros((3, 2)), np.zeros((3, 2)), on_failure="nan")
    assert list(status) == [kic.Status.OK, kic.Status.SINGULAR, kic.Status.OK]
    assert np.isnan(T[1]).all() and np.isfinite(T[[0, 2]]).all()


@pytest.mark.parametrize("builder", ["five_bar", "four_bar", "slider_crank", "bricard",
                                     "stewart_platform", "redundant_planar_arm",
                                     "two_arm_object"])
def test_models_pickle(builder):
    model = getattr(mechanisms, builder)()
    copy = pickle.loads(pickle.dumps(model))
    q = model.reference + 0.01
    qd = np.full(model.dof, 0.1)
    assert np.array_equal(copy.inverse_dynamics(q, qd, qd), model.inverse_dynamics(q, qd, qd))
    assert copy.mode == model.mode and copy.coordinate_names == model.coordinate_names


@pytest.mark.parametrize("scale", [1.0, 0.1, 1e-6, 1e3])
def test_condition_and_tolerances_do_not_depend_on_size(scale):
    """Defect b of issue 9: the same linkage at another size has the same condition
    number, and a regular pose of a micro-mechanism is not reported singular."""
    base = hand_five_bar()
    small = hand_five_bar(scale)
    q = base.reference + np.array([0.2, -0.1])
    assert small.characteristic_length == pytest.approx(scale * base.characteristic_length)
    assert small.condition(q) == pytest.approx(base.condition(q), rel=1e-7)
    phi = small.assemble(q)
    assert np.allclose(phi, base.assemble(q), atol=1e-8)
    small.dynamics(q).I_star                  # regular: no SingularityError


def test_reference_in_another_mode_is_refused_without_a_guess():
    fb = hand_five_bar()
    with pytest.raises(kic.ModelError, match="mode"):
        fb.mechanism.model(["crank1", "crank2"], reference=dict(zip(fb.phi_names,
                                                                    fb.reference_phi)),
                           mode=(-fb.mode[0],))
    down = mechanisms.five_bar(branch="down")
    fb2 = mechanisms.five_bar()
    other = fb2.mechanism.model(["crank1", "crank2"], reference=dict(
        zip(fb2.phi_names, fb2.reference_phi)), guess=down.guess, mode=down.mode)
    assert other.mode == down.mode
    assert np.allclose(other.assemble(fb2.reference), down.assemble(fb2.reference))


def test_simulation_switches_coordinates_through_a_crank_singularity(each_backend):
    """An unsymmetric five-bar falling from rest passes configurations where its crank
    coordinates fail; the simulation switches to better-conditioned joint coordinates
    and back, keeps reporting the cranks, and conserves energy."""
    fb = mechanisms.five_bar(base=0.25, crank2=0.3)
    end = 0.7 if each_backend == "numba" else 0.3     # numpy: one switch (0.27 s) is enough
    sim = kic.simulate(fb, (0.0, end), fb.reference, [0.0, 0.0], rtol=1e-10, atol=1e-12)
    assert sim.t[-1] == pytest.approx(end)
    assert len(sim.switches) >= (2 if end > 0.5 else 1)
    t, before, after, cond = sim.switches[0]
    assert before == ["crank1", "crank2"] and after != before and cond >= importlib.import_module("kic.simulation").SWITCH_CONDITION
    assert sim.energy_drift < 1e-7
    # the user's coordinates are reported all along, and they are the joint values
    assert np.allclose(sim.q, sim.phi[:, :2])
    # the record closes the loop everywhere (in whatever mode the cranks see there)
    res, _ = fb.system.residuals(sim.phi)
    assert max(float(np.abs(r).max()) for r in res) < 1e-10
    # the rates in the user's coordinates follow from the trajectory (central
    # differences over output times 1-2 ms apart, the integrator's steps being longer)
    dense = kic.simulate(fb, (0.0, end), fb.reference, [0.0, 0.0], rtol=1e-10, atol=1e-12,
                         t_eval=np.linspace(0.0, end, 301))
    assert len(dense.switches) == len(sim.switches)
    k = 150
    dt = dense.t[k + 1] - dense.t[k - 1]
    assert np.allclose((dense.q[k + 1] - dense.q[k - 1]) / dt, dense.qd[k], rtol=1e-2,
                       atol=1e-2)


def test_best_coordinates_avoid_the_singular_set():
    fb = mechanisms.five_bar()
    names, cond = fb.best_coordinates(fb.reference_phi)
    assert cond <= fb.condition(fb.reference) + 1e-9
    # near the couplers' alignment the cranks are poor and another set is chosen
    fb4 = mechanisms.five_bar(base=0.4)
    q = five_bar_stretched() + [0.0, 1e-7]
    phi = fb4.assemble(q)
    names, cond = fb4.best_coordinates(phi)
    assert names != ["crank1", "crank2"] and cond < 100 < fb4.condition(q)


def test_compiled_and_numpy_closed_models_agree_with_inertia_but_no_mass():
    """A body with rotational inertia and no mass (as PUMA 560's published link 1) is
    not massless: both backends' closed-model dynamics count it."""
    mech = kic.Mechanism(gravity=(0, -9.81, 0))
    mech.add_body("disc", mass=0.0, inertia=np.diag([0.1, 0.1, 0.2]), check_triangle=False)
    rod(mech, "crank", 0.5, 0.1)
    rod(mech, "coupler", 1.0, 0.35)
    rod(mech, "rocker", 0.8, 0.25)
    mech.add_joint("disc", "R", "ground", "disc")
    mech.add_joint("crank", "R", "disc", "crank")
    mech.add_joint("A", "R", "crank", "coupler", origin=planar_offset(0.1))
    mech.add_joint("rocker", "R", "ground", "rocker", origin=planar_offset(0.3))
    mech.add_joint("B", "R", "coupler", "rocker", origin=planar_offset(0.35), child_origin=planar_offset(0.25))
    m = mech.model(["disc", "crank"], reference={"crank": 1.0, "A": -0.5, "rocker": 1.3})
    q, qd, qdd = m.reference + 0.1, np.array([0.3, -0.2]), np.array([1.0, 0.5])
    tau = m.inverse_dynamics(q, qd, qdd)
    I = m.dynamics(q).I_star
    assert I[0, 0] > 0.2                              # the disc's 0.2 kg m^2 is there
    expect = I @ qdd + m.dynamics(q).velocity_term(qd) + m.dynamics(q).gravity_load
    assert np.allclose(tau, expect, rtol=1e-10, atol=1e-12)
    assert np.allclose(m.forward_dynamics(q, qd, tau), qdd, rtol=1e-9)


def test_one_model_interface():
    """SerialChain and ClosedModel offer the same public methods with the same meaning,
    so linearization and actuation work on either without asking which it is."""
    names = ["coordinate_names", "phi_names", "actuators", "open_chains", "dof",
             "joint_indices", "transfer_at", "split_loads", "kinematics", "dynamics",
             "inverse_dynamics", "forward_dynamics", "gravity_load", "kinetic_energy",
             "potential_energy", "frames", "actuator_loads"]
    arm, fb = mechanisms.planar_two_link(), mechanisms.five_bar()
    for model in (arm, fb):
        missing = [n for n in names if not hasattr(model, n)]
        assert not missing, (type(model).__name__, missing)
    q, qd, qdd = np.array([0.3, -0.4]), np.array([0.2, 0.1]), np.array([0.5, -0.3])
    phi, tr = arm.transfer_at(q, 3)
    assert tr.is_identity and np.allclose(tr.G, np.eye(2)) and np.allclose(phi, q)
    assert np.allclose(arm.actuator_loads(q, qd, qdd), arm.inverse_dynamics(q, qd, qdd))
    # the serial chain as a one-chain "closed" model: the same linearization either way
    lin = kic.linear_dynamics(arm, q, qd, qdd)
    assert np.allclose(lin.I, arm.dynamics(q).I_star)
