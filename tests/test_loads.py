"""Loads of real mechanisms (issue 10): springs, dampers and force laws between
two body points, torques at any joint, forces and moments fixed in a body.

Independent evidence: central differences of the potential energy (T_L = dV/dq
for conservative loads), the virtual work of forces computed by hand from kic's
point influence coefficients (T_L = -sum G_p^T f_p), the transfer's rows for a
passive joint's torque, and the energy balance of simulations.
"""
from __future__ import annotations

import numpy as np
import pytest

import kic
import mechanisms
from helpers import derivative

H = 1e-6


def _line_forces(Pa, Pb, tension):
    d = Pb - Pa
    u = d / np.linalg.norm(d, axis=-1, keepdims=True)
    return tension[..., None] * u, -tension[..., None] * u


# ------------------------------------------------------------------ serial
def test_serial_springs_and_joint_torque_derive_from_their_potential():
    arm = mechanisms.planar_two_link()
    loads = (kic.Loads().spring_between(0, (0.5, 0.1, 0), 1, (0.7, -0.1, 0), 120.0, 0.3)
             .spring_between(None, (1.0, 1.0, 0), 1, (1.0, 0, 0), 50.0, 0.2)
             .joint_torque(0, 2.0))
    assert loads.conservative
    for q in ([0.4, 0.9], [-1.2, 2.0]):
        q = np.array(q)
        TL = arm.dynamics(q).load(loads)
        dV = derivative(lambda x: arm.dynamics(x).loads_energy(loads), q, H)
        assert np.allclose(TL, dV, rtol=1e-7, atol=1e-7), (TL, dV)


def test_serial_element_equals_the_virtual_work_of_its_forces():
    """The same element as forces on its two points, by hand from kic's G of the
    points (the callable-load route of issue 10)."""
    arm = mechanisms.planar_two_link()
    pa, pb, k, rest, c = (0.3, 0.05, 0), (0.8, 0.0, 0), 80.0, 0.4, 3.0
    law = lambda length, rate: 10.0 * (length - rest) ** 3     # noqa: E731
    loads = (kic.Loads().spring_between(0, pa, 1, pb, k, rest).damper_between(0, pa, 1, pb, c)
             .element_between(0, pa, 1, pb, law))
    q, qd = np.array([[0.4, 0.9], [1.0, -0.5]]), np.array([[0.7, -1.1], [0.2, 0.3]])
    kin = arm.kinematics(q, 1)
    A, B = kin.point(0, pa), kin.point(1, pb)
    Pa, Pb = kin.link_point(0, pa), kin.link_point(1, pb)
    d = Pb - Pa
    length = np.linalg.norm(d, axis=-1)
    u = d / length[:, None]
    rate = ((np.einsum("nkm,nm->nk", B.G, qd) - np.einsum("nkm,nm->nk", A.G, qd)) * u).sum(-1)
    Fa, Fb = _line_forces(Pa, Pb, k * (length - rest) + c * rate + law(length, rate))
    expected = -(np.einsum("nkm,nk->nm", A.G, Fa) + np.einsum("nkm,nk->nm", B.G, Fb))
    assert np.allclose(arm.dynamics(q).load(loads, qd), expected, rtol=1e-12, atol=1e-12)
    # the same through inverse dynamics: the loads enter with the library's sign
    zero = np.zeros_like(q)
    tau = arm.inverse_dynamics(q, qd, zero, loads=loads) - arm.inverse_dynamics(q, qd, zero)
    assert np.allclose(tau, expected, rtol=1e-10, atol=1e-10)
    assert not loads.conservative


def test_body_fixed_force_turns_with_the_body():
    arm = mechanisms.planar_two_link()
    f, p = np.array([0.0, -5.0, 0.0]), np.array([0.6, 0.0, 0.0])
    q = np.array([0.3, 0.8])
    R = arm.kinematics(q, 1).frames[..., 1, :3, :3]
    world = kic.Loads().force(1, R @ f, point=p)
    body = kic.Loads().body_force(1, f, point=p).body_moment(1, (0, 0, 0.5))
    world.moment(1, R @ np.array([0, 0, 0.5]))
    assert np.allclose(arm.dynamics(q).load(body), arm.dynamics(q).load(world), atol=1e-12)
    assert not body.conservative


# ------------------------------------------------------------------ closed
@pytest.fixture(scope="module")
def five_bar():
    return mechanisms.five_bar()


def _five_bar_loads():
    return (kic.Loads()
            .spring_between("coupler1", (0.1, 0.02, 0), "crank2", (0.15, 0, 0), 300.0, 0.05)
            .spring_between("crank1", (0.1, 0, 0), "coupler1", (0.2, 0, 0), 80.0, 0.1)
            .spring_between(None, (0.1, -0.3, 0.0), "coupler2", (0.3, 0, 0), 40.0, 0.2)
            .joint_torque("elbow2", 0.7))


def test_closed_springs_across_chains_derive_from_their_potential(five_bar):
    loads = _five_bar_loads()
    for dq in ([0.05, -0.1], [-0.2, 0.15]):
        q = five_bar.reference + dq
        TL = five_bar.dynamics(q).load(loads)
        dV = derivative(lambda x: five_bar.dynamics(x).loads_energy(loads), q, H)
        assert np.allclose(TL, dV, rtol=1e-7, atol=1e-7), (TL, dV)


def test_passive_joint_torque_is_its_virtual_work(five_bar):
    q = five_bar.reference + [0.05, -0.1]
    phi, tr = five_bar.transfer_at(q, order=1)
    row = five_bar.phi_names.index("elbow2")
    TL = five_bar.dynamics(q).load(kic.Loads().joint_torque("elbow2", 0.7))
    assert np.allclose(TL, -0.7 * tr.G[0, row], atol=1e-12)


def test_closed_element_equals_forces_by_hand_and_batch_equals_single(five_bar):
    pa, pb, c = (0.1, 0.02, 0), (0.15, 0, 0), 4.0
    loads = (kic.Loads().spring_between("coupler1", pa, "crank2", pb, 300.0, 0.05)
             .damper_between("coupler1", pa, "crank2", pb, c))
    q = five_bar.reference + np.array([[0.05, -0.1], [-0.1, 0.1], [0.0, 0.02]])
    qd = np.array([[0.5, -0.3], [0.1, 0.9], [-0.4, 0.0]])
    kin = five_bar.kinematics(q, 1)
    A, B = kin.point("coupler1", pa), kin.point("crank2", pb)
    Pa = (kin.frame("coupler1") @ np.append(pa, 1.0))[..., :3]
    Pb = (kin.frame("crank2") @ np.append(pb, 1.0))[..., :3]
    d = Pb - Pa
    length = np.linalg.norm(d, axis=-1)
    u = d / length[:, None]
    rate = ((np.einsum("nkm,nm->nk", B.G, qd) - np.einsum("nkm,nm->nk", A.G, qd)) * u).sum(-1)
    Fa, Fb = _line_forces(Pa, Pb, 300.0 * (length - 0.05) + c * rate)
    expected = -(np.einsum("nkm,nk->nm", A.G, Fa) + np.einsum("nkm,nk->nm", B.G, Fb))
    zero = np.zeros_like(q)
    tau = (five_bar.inverse_dynamics(q, qd, zero, loads=loads)
           - five_bar.inverse_dynamics(q, qd, zero))
    assert np.allclose(tau, expected, rtol=1e-9, atol=1e-9)
    one = np.array([five_bar.inverse_dynamics(a, b, np.zeros(2), loads=loads)
                    for a, b in zip(q, qd)])
    assert np.allclose(five_bar.inverse_dynamics(q, qd, zero, loads=loads), one, atol=1e-10)
    # forward dynamics undoes inverse dynamics with the same loads
    T = five_bar.inverse_dynamics(q, qd, zero + 1.0, loads=loads)
    assert np.allclose(five_bar.forward_dynamics(q, qd, T, loads=loads), 1.0, atol=1e-8)


@pytest.mark.slow        # ~40 s: simulations of the five-bar with springs and dampers
def test_simulation_keeps_the_energy_of_springs_and_dampers_take_it(five_bar):
    q0 = five_bar.reference + [0.05, -0.1]
    springs = _five_bar_loads()
    sim = kic.simulate(five_bar, (0.0, 0.5), q0, [0.0, 0.0], loads=springs, rtol=1e-10,
                       atol=1e-12)
    assert sim.conservative and sim.energy_drift < 1e-7, sim.energy_drift
    damped = _five_bar_loads().damper_between("coupler1", (0.1, 0.02, 0), "crank2",
                                              (0.15, 0, 0), 5.0)
    sim = kic.simulate(five_bar, (0.0, 0.5), q0, [0.0, 0.0], loads=damped, rtol=1e-10,
                       atol=1e-12)
    assert not sim.conservative
    assert sim.energy[-1] < sim.energy[0] - 1e-3
    assert np.all(np.diff(sim.energy) < 1e-8 * abs(sim.energy[0]) + 1e-9)


def test_bad_loads_name_the_part(five_bar):
    with pytest.raises(kic.ModelError, match="stiffness"):
        kic.Loads().spring_between("a", (0, 0, 0), "b", (0, 0, 0), -1.0)
    with pytest.raises(kic.ModelError, match="'b'"):
        kic.Loads().spring_between("a", (0, 0, 0), "b", (0, 0), 1.0)
    with pytest.raises(kic.ModelError, match="callable"):
        kic.Loads().element_between("a", (0, 0, 0), "b", (0, 0, 0), 3.0)
    with pytest.raises(kic.ModelError, match="nowhere"):
        five_bar.dynamics(five_bar.reference).load(
            kic.Loads().spring_between("nowhere", (0, 0, 0), "crank1", (0, 0, 0), 1.0))
    with pytest.raises(kic.ModelError, match="'hinge'"):
        five_bar.dynamics(five_bar.reference).load(kic.Loads().joint_torque("hinge", 1.0))
