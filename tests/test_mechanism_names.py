"""A user's names are never taken for generated ones, and a long chain builds
(issue 18: reserved names; RecursionError of a 1,200-joint chain)."""
import numpy as np
import pytest

import kic


def _offset(x, y=0.0):
    T = np.eye(4)
    T[:3, 3] = (x, y, 0.0)
    return T


def _two_link(second: str) -> kic.Mechanism:
    m = kic.Mechanism(gravity=(0.0, -9.81, 0.0))
    m.add_body("a", mass=1.5, com=(0.2, 0.0, 0.0), inertia=np.eye(3) * 0.01)
    m.add_body(second, mass=2.0, com=(0.15, 0.0, 0.0), inertia=np.eye(3) * 0.02)
    m.add_joint("j0", "R", "ground", "a")
    # the child frame is not the joint frame: a generated cut-joint tip would drop it
    m.add_joint("j1", "R", "a", second, origin=_offset(0.4), child_origin=_offset(-0.1, 0.05))
    return m


@pytest.mark.parametrize("name", ["cut:bob", "cut:j1", "ground:1"])
def test_a_body_named_like_a_cut_tip_has_its_own_dynamics(name):
    q, qd, qdd = np.array([0.3, -0.7]), np.array([0.4, 0.9]), np.array([-0.2, 0.5])
    ref = _two_link("bob").model(["j0", "j1"])
    got = _two_link(name).model(["j0", "j1"])
    np.testing.assert_allclose(got.gravity_load(q), ref.gravity_load(q), rtol=1e-14)
    np.testing.assert_allclose(got.inverse_dynamics(q, qd, qdd),
                               ref.inverse_dynamics(q, qd, qdd), rtol=1e-13)


def test_a_compound_joint_never_takes_a_users_body():
    m = kic.Mechanism()
    m.add_body("u:1", mass=5.0, inertia=np.eye(3))
    m.add_body("b", mass=1.0, inertia=np.eye(3) * 0.1)
    m.add_joint("u", "U", "ground", "b")
    assert m.graph.nodes["u:1"]["link"].mass == 5.0          # the user's body, untouched
    generated = [n for n, d in m.graph.nodes(data=True) if d.get("intermediate")]
    assert generated == ["u:1~2"]
    assert "u:1" in m.bodies and "u:1~2" not in m.bodies
    m.remove_joint("u")                                       # and it goes with its joint
    assert "u:1~2" not in m.graph and m.graph.nodes["u:1"]["link"].mass == 5.0


def test_a_chain_of_1200_joints_builds_its_model():
    n = 1200
    m = kic.Mechanism(gravity=(0.0, -9.81, 0.0))
    prev = "ground"
    for k in range(n):
        m.add_body(f"b{k}", mass=1.0, com=(0.05, 0.0, 0.0), inertia=np.eye(3) * 1e-3)
        m.add_joint(f"j{k}", "R", prev, f"b{k}", origin=_offset(0.1) if k else None)
        prev = f"b{k}"
    model = m.model([f"j{k}" for k in range(n)])
    assert model.dof == n
    # the torque that holds the last body against gravity: m g times its lever
    q = np.zeros(n)
    assert model.gravity_load(q)[-1] == pytest.approx(1.0 * 9.81 * 0.05, rel=1e-9)


@pytest.mark.parametrize("kind, axes", [("U", [(1, 0, 0), (1, 0, 0)]),
                                        ("U", [(0, 0, 1), (0, 0, -1)]),
                                        ("S", [(1, 0, 0), (0, 1, 0), (1, 1, 0)]),
                                        ("S", [(1, 0, 0), (0, 1, 0), (1, 0, 0)])])
def test_a_compound_joint_with_dependent_axes_is_refused(kind, axes):
    m = kic.Mechanism()
    m.add_body("b", mass=1.0, inertia=np.eye(3))
    with pytest.raises(kic.ModelError, match=f"joint 'j': the axes of a {kind} joint"):
        m.add_joint("j", kind, "ground", "b", axes=axes)
    assert "j" not in m.joints and sorted(m.graph.nodes) == ["b", "ground"]
    m.add_joint("j", kind, "ground", "b")                     # the default axes are fine


def test_repr_while_building():
    m = kic.Mechanism(name="half")
    m.add_body("a", mass=1.0)
    assert "not connected to the ground yet" in repr(m)
    m.add_joint("j", "R", "ground", "a")
    assert "0 loops" in repr(m)


@pytest.mark.parametrize("bad", [None, [np.nan, 0.0], [0.0, np.inf], "x", [0.1]])
def test_a_serial_chain_transfer_refuses_bad_values(bad):
    import mechanisms
    chain = mechanisms.planar_two_link()
    with pytest.raises(kic.ModelError):
        chain.transfer_at(bad)
    phi, tr = chain.transfer_at(np.array([[0.1, 0.2], [0.3, 0.4]]))
    assert phi.shape == (2, 2) and tr.G.shape[0] == 2
