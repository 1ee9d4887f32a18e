"""kic.simulate's arguments and its work budget (issue 18, item 10: hangs and silently
dropped inputs), and a finished motion that is never lost (item 6)."""
import warnings

import numpy as np
import pytest

import kic
import mechanisms

import kic.simulation as simulate_module  # noqa: E402  (the module; kic.simulate is the function)


@pytest.fixture(scope="module")
def arm():
    return mechanisms.planar_two_link()


@pytest.fixture(scope="module")
def fb():
    return mechanisms.five_bar()


def _run(model, **kw):
    q0 = np.array([0.3, -0.4]) if model.dof == 2 and not hasattr(model, "mechanism") \
        else model.reference
    return kic.simulate(model, kw.pop("t_span", (0.0, 0.2)), q0, np.zeros(model.dof), **kw)


@pytest.mark.parametrize("t_span", [(1.0, 0.0), (0.5, 0.5), (0.0, np.nan), (0.0,)])
def test_t_span_must_run_forward(arm, fb, t_span):
    for model in (arm, fb):
        with pytest.raises(kic.ModelError, match="t_span"):
            _run(model, t_span=t_span)


@pytest.mark.parametrize("t_eval, why", [([0.05, 0.3], "inside t_span"),
                                         ([-0.1, 0.1], "inside t_span"),
                                         ([0.1, 0.05], "strictly increasing"),
                                         ([0.1, 0.1], "strictly increasing"),
                                         ([[0.1]], "1-D"),
                                         ([], "at least one time"),
                                         ([0.1, np.nan], "NaN")])
def test_t_eval_checked_not_dropped(arm, fb, t_eval, why):
    for model in (arm, fb):
        with pytest.raises(kic.ModelError, match=why):
            _run(model, t_eval=t_eval)


def test_t_eval_at_the_ends(arm, fb):
    for model in (arm, fb):
        sim = _run(model, t_eval=[0.0, 0.1, 0.2])
        np.testing.assert_array_equal(sim.t, [0.0, 0.1, 0.2])


@pytest.mark.parametrize("max_step", [0.0, -0.01, np.nan, "1"])
def test_max_step_must_be_positive(arm, fb, max_step):
    for model in (arm, fb):             # fb: the compiled path, which hung before
        with pytest.raises(kic.ModelError, match="max_step"):
            _run(model, max_step=max_step)


@pytest.mark.parametrize("option, value", [("rtol", 0.0), ("atol", -1.0), ("rtol", np.nan),
                                           ("atol", [1e-9, 1e-9])])
def test_tolerances_checked(arm, option, value):
    with pytest.raises(kic.ModelError, match=option):
        _run(arm, **{option: value})


@pytest.mark.parametrize("option, value", [("max_steps", 0), ("max_steps", 2.5),
                                           ("max_steps", True), ("wall_time", 0.0),
                                           ("wall_time", np.nan),
                                           ("switch_condition", 0.5),
                                           ("switch_condition", np.nan),
                                           ("switch_condition", "30")])
def test_budget_options_checked(arm, option, value):
    with pytest.raises(kic.ModelError, match=option):
        _run(arm, **{option: value})


def test_step_budget_stops_with_the_time_reached(arm, fb):
    """A tiny max_step asks for 2e5 steps: the budget stops it, names the time reached
    and keeps the motion so far (compiled path for the five-bar, scipy for the arm)."""
    for model in (arm, fb):
        with pytest.raises(kic.KicError, match=r"stopped at t = .* max_steps = 50") as info:
            _run(model, t_span=(0.0, 2.0), max_step=1e-5, max_steps=50)
        partial = info.value.simulation
        assert 2 <= len(partial.t) <= 52
        assert partial.t[-1] == pytest.approx(len(partial.t) * 1e-5, rel=0.1)
        # the motion so far is the start of the whole one
        whole = _run(model, t_span=(0.0, partial.t[-1]), max_step=1e-5)
        np.testing.assert_allclose(partial.q[-1], whole.q[-1], atol=1e-12)


def test_wall_time_budget(fb):
    with pytest.raises(kic.KicError, match="wall_time = 1e-09 s is spent") as info:
        _run(fb, t_span=(0.0, 2.0), max_step=1e-4, wall_time=1e-9)
    assert len(info.value.simulation.t) >= 1
    # a motion that reached its end within one compiled block is done, not stopped
    # (the budget is checked after each block; it had said "stopped at t = 0.5 s of 0.5 s")
    for method in ("DOP853", "LSODA"):
        sim = kic.simulate(fb, (0.0, 0.05), fb.reference, [0.0, 0.0], method=method,
                           wall_time=1e-9)
        assert sim.t[-1] == 0.05


def _three_rrr(cuts=()):
    """A planar 3-RRR (three RRR legs to a platform); cut at the platform (default)
    or, with ``cuts``, at two base pivots: then two open chains lead from the ground
    straight to a cut joint and carry no mass."""
    def at(x, y):
        m = np.eye(4)
        m[:2, 3] = (x, y)
        return m
    L, Rb, rp, m_link = 0.5, 1.0, 0.3, 0.4
    mech = kic.Mechanism(gravity=(0.0, -9.81, 0.0), name="3-RRR")
    mech.add_body("platform", mass=1.0, com=(0, 0, 0), inertia=np.diag([0.01, 0.01, 0.02]))
    a = np.radians([90.0, 210.0, 330.0])
    alpha = np.arccos((Rb - rp) / 2 / L)
    rod = dict(mass=m_link, com=(L / 2, 0, 0),
               inertia=np.diag([1e-6, m_link * L * L / 12, m_link * L * L / 12]))
    ref = {}
    for i in range(3):
        mech.add_body(f"a{i}", **rod)
        mech.add_body(f"b{i}", **rod)
        mech.add_joint(f"base{i}", "R", "ground", f"a{i}",
                       origin=at(Rb * np.cos(a[i]), Rb * np.sin(a[i])))
        mech.add_joint(f"elbow{i}", "R", f"a{i}", f"b{i}", origin=at(L, 0))
        theta = a[i] + np.pi + alpha
        ref.update({f"base{i}": theta, f"elbow{i}": -2 * alpha,
                    f"wrist{i}": -(theta - 2 * alpha)})
    for i in range(3):
        mech.add_joint(f"wrist{i}", "R", f"b{i}", "platform", origin=at(L, 0),
                       child_origin=at(rp * np.cos(a[i]), rp * np.sin(a[i])))
    coords = ["base0", "elbow1", "elbow2"]
    return mech.model(coords, reference=ref, cuts=list(cuts), name="3-RRR")


def test_chains_without_mass_contribute_zero_energy():
    """Issue 18 item 6: cut at two base pivots, two open chains carry no mass; the
    energy record raised 'zero total mass' and the motion was lost.  The same
    mechanism cut at its platform gives the same motion and the same energies."""
    at_base = _three_rrr(cuts=["base1", "base2"])
    assert sum(not c.has_inertia for c, _ in at_base.open_chains) == 2
    at_platform = _three_rrr()
    assert all(c.has_inertia for c, _ in at_platform.open_chains)
    times = np.linspace(0.0, 0.3, 7)
    runs = []
    for model in (at_base, at_platform):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            runs.append(kic.simulate(model, (0.0, 0.3), model.reference, np.zeros(3),
                                     t_eval=times, rtol=1e-11, atol=1e-13))
    a, b = runs
    assert np.all(np.isfinite(a.energy)) and a.energy_drift < 1e-8
    np.testing.assert_allclose(a.q, b.q, atol=1e-8)
    np.testing.assert_allclose(a.energy, b.energy, atol=1e-8)
    assert np.ptp(a.energy) < 1e-8 and np.ptp(a.phi[:, 0]) > 0.01     # it moved


def test_a_failed_energy_record_keeps_the_motion(fb, monkeypatch):
    """Post-processing that fails returns the motion with a warning, never loses it."""
    good = _run(fb, t_span=(0.0, 0.3))

    def broken(*args, **kw):
        raise kic.ModelError("chain x has zero total mass")
    monkeypatch.setattr(simulate_module, "_joint_energies", broken)
    with pytest.warns(simulate_module.SimulationWarning, match="energy record failed"):
        sim = _run(fb, t_span=(0.0, 0.3))
    np.testing.assert_array_equal(sim.q, good.q)
    np.testing.assert_array_equal(sim.qd, good.qd)
    assert np.isnan(sim.energy).all() and np.isnan(sim.energy_drift)


def test_joint_space_dynamics_of_chains_without_mass():
    """The joint-space (Lagrange multiplier) form, which a near pass integrates,
    takes open chains without mass (they carry no inertia: zero rows), and its
    accelerations are those of the same mechanism cut where every chain carries
    mass (a second formulation: the transferred model in its coordinates)."""
    at_base = _three_rrr(cuts=["base1", "base2"])
    at_platform = _three_rrr()
    phi = at_base.assemble(at_base.reference)
    phid = at_base.joint_rates(at_base.reference, np.array([0.3, -0.2, 0.1]))
    accelerations = []
    for model in (at_base, at_platform):
        order = [model.phi_names.index(n) for n in at_base.phi_names]
        p, v = np.empty(model.N), np.empty(model.N)
        p[order], v[order] = phi, phid
        M, b, J, c = model.joint_space_dynamics(p, v)
        K = np.block([[M, -J.T], [J, np.zeros((J.shape[0], J.shape[0]))]])
        x = np.linalg.solve(K, np.concatenate([-b, -c]))
        accelerations.append(x[:model.N][order])
    np.testing.assert_allclose(accelerations[0], accelerations[1], rtol=1e-8, atol=1e-8)
