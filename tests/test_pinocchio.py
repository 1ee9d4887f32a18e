"""Cross-check kic against Pinocchio on the built-in spatial arms.

Skipped when Pinocchio is not installed (``pip install -e '.[bench]'``).  The
Pinocchio model is built from the kic chain's own description by
``benchmarks/pin_model.py``, so these tests check kic's algorithms, not the
published parameter tables: effective inertia (crba), inverse dynamics
(rnea), forward dynamics (aba), gravity, the symmetric part of P* (Coriolis
tensor), frames, tool and point Jacobians, and the second-order coefficients
through the classical acceleration of a frame.
"""
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

pin = pytest.importorskip("pinocchio")

import mechanisms  # noqa: E402

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from pin_model import build_pin_model, link_frame_ids  # noqa: E402

ARMS = ["puma560", "stanford_arm", "panda"]          # 6R, RRPRRR, 7R (modified DH)
LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
TOL = 1e-10


@pytest.fixture(scope="module", params=ARMS + ["random_chain"])
def arm(request):
    if request.param == "random_chain":     # R and P joints, skew axes, base, offsets, tool
        import helpers
        chain = helpers.random_chain(np.random.default_rng(5), 7, offsets=True)
    else:
        chain = getattr(mechanisms, request.param)()
    model = build_pin_model(chain)
    return chain, model, model.createData()


def states(chain, n=8, seed=7):
    rng = np.random.default_rng(seed)
    M = chain.dof
    q = rng.uniform(-np.pi, np.pi, (n, M))
    q[:, ~chain.is_revolute] = rng.uniform(-0.3, 0.3, (n, int((~chain.is_revolute).sum())))
    return q, rng.uniform(-1.5, 1.5, (n, M)), rng.uniform(-2, 2, (n, M))


def close(a, b, scale=None):
    scale = max(1.0, float(np.abs(b).max())) if scale is None else scale
    err = float(np.abs(np.asarray(a) - np.asarray(b)).max())
    assert err <= TOL * scale, f"max difference {err:.3e} > {TOL:.0e} x {scale:.3g}"


def test_pin_model_matches_description(arm):
    chain, model, _ = arm
    assert model.nq == model.nv == chain.dof
    assert np.isclose(sum(model.inertias[i].mass for i in range(1, model.njoints)),
                      chain.total_mass)
    np.testing.assert_array_equal(model.gravity.linear, chain.gravity)


def test_frames(arm):
    chain, model, data = arm
    ids = link_frame_ids(model, chain)
    tool = model.getFrameId("tool")
    for q in states(chain)[0]:
        pin.framesForwardKinematics(model, data, q)
        F = chain.frames(q)
        for j, fid in enumerate(ids):
            close(data.oMf[fid].homogeneous, F[j])
        close(data.oMf[tool].homogeneous, chain.tool_frame(q))


def test_effective_inertia(arm):
    chain, model, data = arm
    q = states(chain)[0]
    I = chain.dynamics(q).I_star
    for k in range(len(q)):
        Mq = pin.crba(model, data, q[k])
        Mq = np.triu(Mq) + np.triu(Mq, 1).T
        close(I[k], Mq)
        close(I[k], I[k].T)


def test_inverse_dynamics(arm):
    chain, model, data = arm
    q, qd, qdd = states(chain)
    tau = chain.inverse_dynamics(q, qd, qdd)
    dyn = chain.dynamics(q)
    model_form = dyn.torque(qd, qdd)
    for k in range(len(q)):
        ref = pin.rnea(model, data, q[k], qd[k], qdd[k])
        close(tau[k], ref)
        close(model_form[k], ref)
        # single configuration (unbatched) gives the same
        close(chain.inverse_dynamics(q[k], qd[k], qdd[k]), ref)


def test_gravity_load(arm):
    chain, model, data = arm
    q = states(chain)[0]
    g = chain.gravity_load(q)
    for k in range(len(q)):
        close(g[k], pin.computeGeneralizedGravity(model, data, q[k]))


def test_forward_dynamics(arm):
    chain, model, data = arm
    q, qd, _ = states(chain)
    tau = np.random.default_rng(3).normal(size=q.shape) * 10.0
    qdd = chain.forward_dynamics(q, qd, tau)
    for k in range(len(q)):
        ref = pin.aba(model, data, q[k], qd[k], tau[k])
        close(qdd[k], ref, scale=max(1.0, float(np.abs(ref).max())) * 1e2)


def test_inertia_power_symmetric_part(arm):
    """sym(P*[n]) equals the Christoffel symbols: Pinocchio's C(q, e_l)[n, m]."""
    chain, model, data = arm
    q = states(chain, n=4)[0]
    P = chain.dynamics(q).P_star
    for k in range(len(q)):
        T = np.stack([pin.computeCoriolisMatrix(model, data, q[k], e).copy()
                      for e in np.eye(chain.dof)], axis=-1)
        close(0.5 * (P[k] + P[k].transpose(0, 2, 1)), 0.5 * (T + T.transpose(0, 2, 1)))


def test_tool_jacobian(arm):
    chain, model, data = arm
    tool = model.getFrameId("tool")
    for q in states(chain)[0]:
        J = pin.computeFrameJacobian(model, data, q, tool, LWA)
        kin = chain.kinematics(q, order=1)
        close(kin.tool().G, J[:3])
        close(kin.rotation(chain.dof - 1).G, J[3:])


def test_point_jacobians_and_second_order(arm):
    """G of points on every link; H through the classical acceleration at q'' = 0."""
    chain, model, data = arm
    model = pin.Model(model)                               # a copy: probe frames are added
    data = model.createData()
    rng = np.random.default_rng(11)
    q, qd, _ = states(chain, n=4)
    for k in range(len(q)):
        pin.forwardKinematics(model, data, q[k], qd[k], np.zeros(chain.dof))
        pin.computeJointJacobians(model, data, q[k])
        kin = chain.kinematics(q[k], order=2)
        for j in range(chain.dof):
            p = rng.uniform(-0.3, 0.3, 3)                   # in the link's (described) frame
            Fo = chain.frame_offsets[j]
            place = pin.SE3(np.eye(3), Fo[:3, :3] @ p + Fo[:3, 3])
            J = pin.getFrameJacobian(model, data, j + 1, place, LWA)
            point, rot = kin.point(j, p), kin.rotation(j)
            close(point.G, J[:3])
            close(rot.G, J[3:])
            # classical acceleration of the point and angular acceleration at q'' = 0
            fid = model.addFrame(pin.Frame(f"probe{k}_{j}", j + 1, place,
                                           pin.FrameType.OP_FRAME))
            d2 = model.createData()
            pin.forwardKinematics(model, d2, q[k], qd[k], np.zeros(chain.dof))
            pin.updateFramePlacements(model, d2)
            acc = pin.getFrameClassicalAcceleration(model, d2, fid, LWA)
            close(point.acceleration(qd[k], np.zeros(chain.dof)), acc.linear)
            close(rot.acceleration(qd[k], np.zeros(chain.dof)), acc.angular)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_chains(seed):
    """Random chains: R and P joints about arbitrary axes, a base placement, frame
    offsets, a tool, arbitrary gravity (helpers.random_chain)."""
    import helpers

    rng = np.random.default_rng(seed)
    chain = helpers.random_chain(rng, 7, offsets=True)
    model = build_pin_model(chain)
    data = model.createData()
    q, qd, qdd = states(chain, n=5, seed=seed)
    tau = chain.inverse_dynamics(q, qd, qdd)
    I = chain.dynamics(q).I_star
    tool = model.getFrameId("tool")
    for k in range(len(q)):
        close(tau[k], pin.rnea(model, data, q[k], qd[k], qdd[k]))
        Mq = pin.crba(model, data, q[k])
        close(I[k], np.triu(Mq) + np.triu(Mq, 1).T)
        J = pin.computeFrameJacobian(model, data, q[k], tool, LWA)
        kin = chain.kinematics(q[k], order=1)
        close(kin.tool().G, J[:3])
        close(kin.rotation(chain.dof - 1).G, J[3:])
        pin.framesForwardKinematics(model, data, q[k])
        for j, fid in enumerate(link_frame_ids(model, chain)):
            close(data.oMf[fid].homogeneous, chain.frames(q[k])[j])


@pytest.mark.parametrize("M", [12, 30])
def test_long_chains_forward_dynamics(M):
    """Forward dynamics of long random chains (from kic.settings.ABA_MIN_JOINTS joints
    on by the articulated-body recursion) against Pinocchio's aba, one configuration
    and a batch."""
    import helpers
    from kic.settings import ABA_MIN_JOINTS

    assert (M >= ABA_MIN_JOINTS) == (M == 30)       # one case on each side
    rng = np.random.default_rng(40 + M)
    chain = helpers.random_chain(rng, M, offsets=True)
    model = build_pin_model(chain)
    data = model.createData()
    q, qd, _ = states(chain, n=4, seed=M)
    tau = rng.normal(size=q.shape) * 10.0
    qdd = chain.forward_dynamics(q, qd, tau)
    for k in range(len(q)):
        ref = pin.aba(model, data, q[k], qd[k], tau[k])
        scale = max(1.0, float(np.abs(ref).max())) * 1e2
        close(qdd[k], ref, scale=scale)
        close(chain.forward_dynamics(q[k], qd[k], tau[k]), ref, scale=scale)
