"""Bad input to the serial core: a clear, specific exception naming the joint,
link or value at fault; never a NaN or a bare numpy traceback."""
import numpy as np
import pytest

import kic
import mechanisms

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels


def rigid(x=0.0):
    T = np.eye(4)
    T[0, 3] = x
    return T


@pytest.mark.parametrize("kind", ["X", "", 3, None])
def test_unknown_joint_kind(kind):
    with pytest.raises(kic.ModelError, match="unknown joint kind"):
        kic.Joint(kind, name="elbow")


@pytest.mark.parametrize("axis, msg", [((0, 0, 0), "is zero"), ((0, np.nan, 1), "NaN"),
                                       ((0, np.inf, 1), "NaN or infinite"),
                                       ((1, 0), "3 components")])
def test_bad_axis_names_the_joint(axis, msg):
    with pytest.raises(kic.ModelError, match=msg) as err:
        kic.Joint("R", axis=axis, name="wrist")
    assert "wrist" in str(err.value)


def test_axis_is_normalised():
    assert np.allclose(kic.Joint("P", axis=(0, 3, 4)).axis, (0, 0.6, 0.8))


@pytest.mark.parametrize("T, msg", [
    (np.diag([1.0, 1.0, 2.0, 1.0]), "not a rigid transform"),
    (np.diag([1.0, 1.0, -1.0, 1.0]), "not a rigid transform"),          # a reflection
    (np.eye(3), "4x4"),
    (np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 1, 1.0]]), "last row"),
])
def test_origin_must_be_rigid(T, msg):
    with pytest.raises(kic.ModelError, match=msg) as err:
        kic.Joint("R", origin=T, name="shoulder")
    assert "shoulder" in str(err.value)


def test_link_mass_and_inertia():
    with pytest.raises(kic.ModelError, match=r"mass must be a scalar >= 0.*-1"):
        kic.Link(-1.0, name="upper")
    with pytest.raises(kic.ModelError, match="NaN"):
        kic.Link(np.nan, name="upper")
    with pytest.raises(kic.ModelError, match="not symmetric") as err:
        kic.Link(1.0, inertia=[[1, 0.2, 0], [0, 1, 0], [0, 0, 1]], name="upper")
    assert "upper" in str(err.value)
    with pytest.raises(kic.ModelError, match="positive semi-definite"):
        kic.Link(1.0, inertia=np.diag([1.0, -0.1, 1.0]), name="upper")
    with pytest.raises(kic.ModelError, match="triangle inequality"):
        kic.Link(1.0, inertia=np.diag([0.1, 0.1, 1.0]), name="upper")
    # the explicit opt-out accepts a published table that violates it
    link = kic.Link(1.0, inertia=np.diag([0.1, 0.1, 1.0]), check_triangle=False)
    assert link.inertia[2, 2] == 1.0


def test_chain_structure():
    j, l = kic.Joint("R"), kic.Link(1.0)
    with pytest.raises(kic.ModelError, match="2 joints but 1 links"):
        kic.SerialChain([j, kic.Joint("R")], [l])
    with pytest.raises(kic.ModelError, match="at least one joint"):
        kic.SerialChain([], [])
    with pytest.raises(kic.ModelError, match="not kic.Joint"):
        kic.SerialChain(["R"], [l])
    with pytest.raises(kic.ModelError, match=r"duplicate joint names \['a'\]"):
        kic.SerialChain([kic.Joint("R", name="a"), kic.Joint("R", name="a")], [l, l])
    with pytest.raises(kic.ModelError, match="gravity"):
        kic.SerialChain([j], [l], gravity=(0, 0))
    with pytest.raises(kic.ModelError, match="base is not a rigid transform"):
        kic.SerialChain([j], [l], base=np.diag([2.0, 1, 1, 1]))


def test_zero_total_mass_where_mass_is_needed():
    chain = kic.SerialChain([kic.Joint("R")], [kic.Link(0.0)])
    chain.kinematics([0.3])                                # kinematics need no mass
    with pytest.raises(kic.ModelError, match="zero total mass"):
        chain.dynamics([0.3])
    with pytest.raises(kic.ModelError, match="zero total mass"):
        chain.forward_dynamics([0.3], [0.0], [1.0])


@pytest.mark.parametrize("q", [[0.1, 0.2], np.zeros((4, 5)), 0.3, np.zeros((0, 2))])
def test_wrong_q_shape(q):
    arm = mechanisms.planar_three_link()
    with pytest.raises(kic.ModelError, match=r"shape \(\.\.\., 3\)"):
        arm.inverse_dynamics(q, np.zeros(3), np.zeros(3))
    with pytest.raises(kic.ModelError, match=r"shape \(\.\.\., 3\)"):
        arm.dynamics(q)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_inputs(bad):
    arm = mechanisms.planar_two_link()
    for args in (([bad, 0.0], [0, 0], [0, 0]), ([0.0, 0.0], [0, bad], [0, 0]),
                 ([0.0, 0.0], [0, 0], [bad, 0])):
        with pytest.raises(kic.ModelError, match="NaN or infinite"):
            arm.inverse_dynamics(*args)
    with pytest.raises(kic.ModelError, match="NaN or infinite"):
        arm.forward_dynamics([0.0, 0.0], [0.0, 0.0], [bad, 0.0])
    with pytest.raises(kic.ModelError, match="NaN or infinite"):
        arm.kinematics([[0.0, bad]])
    with pytest.raises(kic.ModelError):
        kic.Loads().force(0, (bad, 0, 0))


def test_rates_must_match_the_batch():
    arm = mechanisms.planar_two_link()
    with pytest.raises(kic.ModelError, match="does not match the batch"):
        arm.inverse_dynamics(np.zeros((4, 2)), np.zeros((3, 2)), np.zeros(2))


def test_unknown_link_and_joint_names():
    arm = mechanisms.puma560()
    kin = arm.kinematics(np.zeros(6))
    with pytest.raises(kic.ModelError, match="unknown link 'hand'"):
        kin.point("hand", (0, 0, 0))
    with pytest.raises(kic.ModelError, match="out of range"):
        kin.rotation(6)
    with pytest.raises(kic.ModelError, match="unknown joint"):
        arm.inverse_dynamics(np.zeros(6), np.zeros(6), np.zeros(6),
                             loads=kic.Loads().spring("knee", 1.0))
    with pytest.raises(kic.ModelError, match="order must be 1, 2 or 3"):
        arm.kinematics(np.zeros(6), order=4)


def test_dh_rows():
    with pytest.raises(kic.ModelError, match=r"unknown keys \['length'\]"):
        kic.SerialChain.from_dh([dict(length=1.0)], [kic.Link(1.0)])
    with pytest.raises(kic.ModelError, match="unknown DH convention"):
        kic.SerialChain.from_dh([dict(a=1.0)], [kic.Link(1.0)], convention="craig")
    with pytest.raises(kic.ModelError, match="2 DH rows but 1 links"):
        kic.SerialChain.from_dh([dict(a=1.0), dict(a=1.0)], [kic.Link(1.0)])


def test_singular_inertia_is_a_singularity_error():
    """A massless distal link with no inertia makes I* singular: reported with its
    smallest singular value and condition number, not a NaN."""
    chain = kic.SerialChain([kic.Joint("R"), kic.Joint("R", origin=rigid(1.0))],
                            [kic.Link(1.0, com=(0.5, 0, 0)), kic.Link(0.0)], gravity=(0, 0, 0))
    with pytest.raises(kic.SingularityError) as err:
        chain.forward_dynamics(np.zeros((3, 2)), np.zeros((3, 2)), np.ones((3, 2)))
    assert err.value.condition > 1e8 and "effective inertia" in str(err.value)
    assert err.value.index == (0,)
    with pytest.raises(kic.SingularityError) as err:          # index in the batch's shape
        chain.forward_dynamics(np.zeros((2, 3, 2)), np.zeros((2, 3, 2)), np.ones((2, 3, 2)))
    assert len(err.value.index) == 2
    with pytest.raises(kic.SingularityError):
        chain.forward_dynamics([0.0, 0.0], [0.0, 0.0], [1.0, 1.0])


@pytest.mark.parametrize("mass", [1e307, 1e308])
def test_masses_near_the_largest_float_are_an_error_not_a_nan(mass):
    """Finite model numbers whose dynamics overflow float64: a ModelError (at build
    time where the total mass itself overflows), never NaN without a word."""
    link = lambda: kic.Link(mass, com=(1.0, 0.0, 0.0), inertia=np.eye(3))   # noqa: E731
    joints = [kic.Joint("R", (0, 0, 1)), kic.Joint("R", (0, 1, 0))]
    with pytest.raises(kic.ModelError, match="overflow"):
        chain = kic.SerialChain(joints, [link(), link()])
        for q in (np.array([0.1, 0.2]), np.array([[0.1, 0.2], [0.3, 0.4]])):
            d = chain.dynamics(q)
            for value in (d.I_star, d.P_star, d.gravity_load, d.potential_energy):
                assert np.isfinite(value).all()
