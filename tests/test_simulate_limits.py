"""simulate at joint limits: a five-bar falling under gravity from inside the range
of a passive (elbow) joint stops where the elbow reaches its bound, on both backends;
on_limit="stop" returns the motion up to there, "ignore" runs through."""
import numpy as np
import pytest

import kic
import mechanisms
from kic.simulation import SimulationWarning

pytestmark = pytest.mark.usefixtures("each_backend")

UPPER = 1.5          # rad: the elbow's bound (it starts at 0.82 and grows as it falls)
T_END = 0.5


def limited_five_bar():
    free = mechanisms.five_bar()
    mech = free.mechanism.copy()
    mech.set_limits("elbow2", (0.0, UPPER))
    model = mech.model(list(free.coordinate_names),
                       reference={k: free.reference_phi[i] for k, i in free.system.index.items()
                                  if k in mech.primitive_joints})
    q0 = model.reference_phi[model.joint_indices(model.coordinate_names)]
    return model, q0


def test_raise_names_the_joint_at_the_crossing():
    model, q0 = limited_five_bar()
    with pytest.raises(kic.ClosureError, match="elbow2") as info:
        kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0])
    err = info.value
    assert kic.Status.OUTSIDE_LIMITS in err.status
    sim = err.simulation
    k = model.phi_names.index("elbow2")
    assert sim.t[-1] < T_END
    assert np.all(sim.phi[:, k] <= UPPER)
    # the last sample is the crossing: the elbow at its bound
    assert sim.phi[-1, k] == pytest.approx(UPPER, rel=1e-6)
    assert f"{sim.t[-1]:.9g}" in str(err)


def test_stop_returns_the_truncated_motion_and_the_time_agrees_with_a_direct_check():
    model, q0 = limited_five_bar()
    with pytest.warns(SimulationWarning, match="elbow2"):
        sim = kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0], on_limit="stop")
    stop = sim.stopped_by
    assert stop["joint"] == "elbow2" and stop["limit"] == (0.0, UPPER)
    assert stop["t"] == sim.t[-1] and stop["value"] == pytest.approx(UPPER, rel=1e-6)
    # independent: the motion without limits, sampled at the reported time
    free = mechanisms.five_bar()
    ref = kic.simulate(free, (0.0, T_END), q0, [0.0, 0.0], t_eval=[stop["t"]], rtol=1e-11,
                       atol=1e-12)
    assert ref.phi[0, free.phi_names.index("elbow2")] == pytest.approx(UPPER, rel=1e-6)
    # with t_eval, the samples up to the crossing
    times = np.linspace(0.0, T_END, 51)
    with pytest.warns(SimulationWarning):
        sampled = kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0], t_eval=times,
                               on_limit="stop")
    assert sampled.stopped_by["t"] == pytest.approx(stop["t"], rel=1e-9)
    assert np.array_equal(sampled.t, times[times <= stop["t"]])


@pytest.mark.parametrize("method", ["LSODA", "BDF"])
def test_multistep_methods_stop_at_the_bound(method):
    """The crossing is located by DOP853's trial steps whatever the method: a
    multistep method's predictor reaches past its step, so its own trial steps
    stopped some 1e-4 rad short of the bound."""
    model, q0 = limited_five_bar()
    with pytest.warns(SimulationWarning, match="elbow2"):
        sim = kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0], on_limit="stop",
                           method=method)
        ref = kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0], on_limit="stop")
    assert sim.stopped_by["value"] == pytest.approx(UPPER, rel=1e-8)
    assert sim.phi[-1, model.phi_names.index("elbow2")] == sim.stopped_by["value"]
    assert sim.stopped_by["t"] == pytest.approx(ref.stopped_by["t"], rel=1e-7)


def test_crossing_time_agrees_between_backends():
    model, q0 = limited_five_bar()
    times = {}
    for backend in ("numpy", "numba"):
        previous = kic.set_backend(backend)
        try:
            with pytest.warns(SimulationWarning):
                times[backend] = kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0],
                                              on_limit="stop").stopped_by["t"]
        finally:
            kic.set_backend(previous)
    assert times["numpy"] == pytest.approx(times["numba"], rel=1e-7)


def test_ignore_runs_through():
    model, q0 = limited_five_bar()
    sim = kic.simulate(model, (0.0, T_END), q0, [0.0, 0.0], on_limit="ignore")
    assert sim.t[-1] == T_END and sim.stopped_by is None
    assert sim.phi[:, model.phi_names.index("elbow2")].max() > UPPER


def test_bad_option_and_serial_chains():
    model, q0 = limited_five_bar()
    with pytest.raises(kic.ModelError, match="on_limit"):
        kic.simulate(model, (0.0, 0.1), q0, [0.0, 0.0], on_limit="clamp")
    arm = mechanisms.planar_two_link()
    for option in ("raise", "stop", "ignore"):
        sim = kic.simulate(arm, (0.0, 0.2), [0.3, -0.4], [0.0, 0.0], on_limit=option)
        assert sim.t[-1] == 0.2 and sim.stopped_by is None


def test_drive_simulation_reports_the_limit():
    model, q0 = limited_five_bar()
    motors = [kic.DCMotor(resistance=1.0, inductance=0.2e-3, torque_constant=0.035,
                          back_emf_constant=0.035, rotor_inertia=1e-5, rotor_damping=1e-6,
                          name=side) for side in ("left", "right")]
    plant = kic.ActuatedSystem(model, motors, gear_ratios=[12.0, 12.0])
    with pytest.raises(kic.ClosureError, match=r"joint limit in a step after t = .*elbow2") \
            as info:
        kic.simulate(plant, (0.0, 2.0), q0, [0.0, 0.0], voltage=lambda t, x: np.zeros(2))
    assert kic.Status.OUTSIDE_LIMITS in info.value.status
