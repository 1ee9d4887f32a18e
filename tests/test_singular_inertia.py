"""Forward dynamics where I* cannot be inverted: a kic error naming the reason, or
a status (issue 18, item 7: IndexError of a closed model without inertia, numpy's
LinAlgError of a MimicModel)."""
from __future__ import annotations

import numpy as np
import pytest

import kic
import mechanisms

BACKENDS = ["numba", "numpy"]


@pytest.fixture(params=BACKENDS)
def backend(request):
    kic.set_backend(request.param)
    yield request.param
    kic.set_backend("auto")


def _one_joint():
    mech = kic.Mechanism()
    mech.add_body("a", mass=0.0)
    mech.add_joint("j", "R", "ground", "a")
    return mech.model(["j"])


def _massless_five_bar():
    return mechanisms.five_bar(m_crank1=0.0, m_crank2=0.0, m_coupler1=0.0, m_coupler2=0.0,
                               m_tip=0.0)


@pytest.mark.parametrize("build", [_one_joint, _massless_five_bar])
def test_forward_dynamics_of_a_model_without_inertia(backend, build):
    model = build()
    q = model.reference
    M = model.dof
    z = np.zeros(M)
    assert np.array_equal(model.dynamics(q).I_star, np.zeros((M, M)))
    for qs in (q, np.stack([q, q])):
        with pytest.raises(kic.SingularityError, match="no body of the model has mass"):
            model.forward_dynamics(qs, z, np.ones(M))
    qdd, status = model.forward_dynamics(np.stack([q, q]), z, np.ones(M), on_failure="nan")
    assert np.isnan(qdd).all() and status.tolist() == [kic.Status.SINGULAR_LOAD] * 2


def test_a_model_with_inertia_does_not_name_that_reason(backend):
    fb = mechanisms.five_bar()
    q = np.array([[2.0, 1.1], [2.1, 1.0]])
    qdd = fb.forward_dynamics(q, np.zeros(2), np.ones(2))
    assert np.allclose(fb.inverse_dynamics(q, np.zeros(2), qdd), 1.0)


def _two_joint_chain(mass):
    """Two coaxial revolutes with point masses on the axis: I* = 0 when massless
    bodies carry no rotational inertia, regular with the given inertia."""
    links = [kic.Link(mass, com=(0.3, 0.0, 0.0), inertia=np.eye(3) * 0.01 * mass)
             for _ in range(2)]
    T = np.eye(4)
    T[0, 3] = 0.5
    joints = [kic.Joint("R", [0, 0, 1], np.eye(4)), kic.Joint("R", [0, 0, 1], T)]
    return kic.SerialChain(joints, links)


def test_mimic_forward_dynamics_with_a_singular_I_star_is_a_singularity_error(backend):
    # point masses on the common axis of two revolutes: I* = 0 (the masses never move)
    chain = kic.SerialChain([kic.Joint("R", [0, 0, 1], np.eye(4)),
                             kic.Joint("R", [0, 0, 1], np.eye(4))],
                            [kic.Link(1.0, com=(0.0, 0.0, 0.0)), kic.Link(1.0)])
    mm = kic.MimicModel(chain, {})
    with pytest.raises(kic.SingularityError, match="effective inertia I"):
        mm.forward_dynamics([0.1, 0.2], [0.0, 0.0], [1.0, 1.0])
    with pytest.raises(kic.SingularityError, match="at batch index"):
        mm.dynamics([[0.1, 0.2], [0.3, 0.4]]).acceleration([0.0, 0.0], [1.0, 1.0])


def test_mimic_forward_dynamics_inverts_its_inverse_dynamics(backend):
    """Independent evidence: the SPD solve returns the accelerations the inverse
    dynamics were asked for, and agrees with a general LU solve of I*."""
    mm = kic.MimicModel(_two_joint_chain(2.0), {"joint2": ("joint1", -0.5, 0.1)})
    rng = np.random.default_rng(3)
    q, qd, qdd = (rng.standard_normal((5, 1)) for _ in range(3))
    tau = mm.inverse_dynamics(q, qd, qdd)
    assert np.allclose(mm.forward_dynamics(q, qd, tau), qdd, rtol=1e-12, atol=1e-12)
    dyn = mm.dynamics(q)
    rhs = tau - dyn.velocity_term(qd) - dyn.gravity_load
    assert np.allclose(dyn.acceleration(qd, tau),
                       np.linalg.solve(dyn.I_star, rhs[..., None])[..., 0], rtol=1e-12)
