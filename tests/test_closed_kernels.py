"""The compiled closed-mechanism kernels (kic.kernels.closed and its modules) and their plan.

Two kinds of evidence: agreement with the numpy ClosedModel (assembly, G, I*,
inverse and forward dynamics, actuator loads) to 1e-10 relative, and checks
that use none of kic's closed-mechanism code: finite differences of the
assembled phi(q) against G and of phi along a path against phi' and phi'',
the energy balance d(T + V)/dt = tau . q' of the forward dynamics with the
kinetic energy from finite differences of the body frames, and the reported
condition numbers against an SVD of a finite-difference closure Jacobian.
The closure residual of those checks is written here from the plan's
documented definition (closed_plan module docstring), in numpy.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import kic
import mechanisms
from helpers import five_bar_stretched
from kic.kernels import closed as K
from kic.kernels import linalg
from kic.closed_plan import ClosedPlan, body_frames, joint_indices, plan_from_model

compiled = pytest.mark.skipif(not (K.available and K.load()), reason="needs numba")

RTOL = 1e-10


def rel(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


# --------------------------------------------------------------------- cases
def _five_bar():
    return mechanisms.five_bar(), np.array([[2.0, 1.1], [1.9, 1.0], [2.2, 0.8]])


def _four_bar():
    return mechanisms.four_bar(), np.array([[0.3], [1.2], [2.5]])


def _slider_crank():
    return mechanisms.slider_crank(), np.array([[0.3], [2.2], [4.0]])


def _stewart():
    return mechanisms.stewart_platform(), np.array([[0, 0, 0.6, 0, 0, 0],
                                                    [0.05, -0.03, 0.62, 0.1, -0.05, 0.08],
                                                    [-0.04, 0.06, 0.55, -0.2, 0.07, -0.1]])


def _five_bar_tip():
    fb = mechanisms.five_bar()
    tip = fb.in_coordinates([kic.PointPosition("coupler1", (0.35, 0, 0))])
    C = [fb.kinematics(np.array(q), 1).frame("coupler1") @ [0.35, 0, 0, 1]
         for q in ([2.0, 1.1], [1.9, 1.0], [2.2, 0.8])]
    return tip, np.array([c[:2] for c in C])


def _near_reference(model):
    q0 = model.reference_phi[[model.phi_names.index(c) for c in model.coordinate_names]]
    return model, q0 + np.array([[0.0], [0.02], [-0.03]]) * np.cos(np.arange(q0.size))


CASES = {"five_bar": _five_bar, "four_bar": _four_bar, "slider_crank": _slider_crank,
         "stewart": _stewart, "five_bar_tip": _five_bar_tip,
         "redundant_arm": lambda: _near_reference(mechanisms.redundant_planar_arm()),
         "two_arms": lambda: _near_reference(mechanisms.two_arm_object())}
_cache: dict = {}


def case(name):
    """(model, plan, q, phi) with phi assembled by the numpy model (cached)."""
    if name not in _cache:
        model, q = CASES[name]()
        plan = plan_from_model(model)
        assert plan is not None
        _cache[name] = (model, plan, q, model.assemble(q))
    return _cache[name]


def motion(q, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(size=q.shape), rng.normal(size=q.shape), rng.normal(size=q.shape)


# ----------------------------------------------- the plan's own definitions
def residual_np(plan: ClosedPlan, phi) -> np.ndarray:
    """Reduced closure rows (R,) from the plan's documented definition (numpy)."""
    F, _ = body_frames(plan, phi)
    r = np.zeros(plan.dep.shape[0])
    for l in range(plan.loop_k.shape[0]):
        Xa = F[plan.body_a[l]] @ plan.T_a[l]
        Xb = (F[plan.body_b[l]] if plan.body_b[l] >= 0 else np.eye(4)) @ plan.T_b[l]
        dp = Xa[:3, 3] - Xb[:3, 3]
        if plan.loop_k[l] == 6:
            E = Xa[:3, :3] @ Xb[:3, :3].T
            raw = np.concatenate([0.5 * np.array([E[2, 1] - E[1, 2], E[0, 2] - E[2, 0],
                                                  E[1, 0] - E[0, 1]]), dp])
        else:
            raw = dp
        k, rr, row = plan.loop_k[l], plan.loop_r[l], plan.loop_row[l]
        r[row:row + rr] = plan.U[l, :k, :rr].T @ raw
    return r


def energy_np(plan: ClosedPlan, phi_m, phi_p, h) -> float:
    """Kinetic + potential energy at the midpoint of two poses 2h apart in time,
    velocities from central differences of the body frames (numpy)."""
    Fm, _ = body_frames(plan, phi_m)
    Fp, _ = body_frames(plan, phi_p)
    E = 0.0
    for j in np.nonzero(plan.mass > 0)[0]:
        m = plan.mass[j]
        cm = Fm[j, :3, :3] @ plan.com[j] + Fm[j, :3, 3]
        cp = Fp[j, :3, :3] @ plan.com[j] + Fp[j, :3, 3]
        c = 0.5 * (cm + cp)
        v = (cp - cm) / (2 * h)
        D = Fp[j, :3, :3] @ Fm[j, :3, :3].T                 # exp(2h [w]x)
        w = 0.5 * np.array([D[2, 1] - D[1, 2], D[0, 2] - D[2, 0], D[1, 0] - D[0, 1]]) / (2 * h)
        R = 0.5 * (Fm[j, :3, :3] + Fp[j, :3, :3])
        Iw = R @ plan.inertia[j] @ R.T
        E += 0.5 * m * v @ v + 0.5 * w @ Iw @ w - m * plan.gravity @ c
    return E


# ------------------------------------------------------------------- plans
def test_plan_frames_match_the_model():
    """The merged tree puts every body where the model does (public frames), holds
    the mechanism's mass once, and lists parents before children."""
    for name in CASES:
        model, plan, q, phi = case(name)
        frames = model.frames(q)                          # (n, B, 4, 4)
        for k in range(q.shape[0]):
            F, _ = body_frames(plan, phi[k])
            for b, body in enumerate(model.bodies):
                j = plan.body_names.index(body)
                assert np.abs(F[j] - frames[k, b]).max() < 1e-12
        heavy = [b for b in model.mechanism.bodies if b in model.bodies]
        total = sum(model.mechanism.graph.nodes[b]["link"].mass for b in heavy)
        assert plan.mass.sum() == pytest.approx(total, rel=1e-14)
        pos = np.empty(plan.N, int)
        pos[plan.order] = np.arange(plan.N)
        assert all(p < 0 or pos[p] < pos[j] for j, p in enumerate(plan.parent))


def test_plan_unsupported_models_return_none():
    def diff(phi):
        n = phi.shape[0]
        return (phi[:, 1] - phi[:, 0], np.broadcast_to([-1.0, 1.0], (n, 2)),
                np.zeros((n, 2, 2)), np.zeros((n, 2, 2, 2)))
    fb = mechanisms.five_bar()
    fs = fb.in_coordinates(["crank1", kic.CoordinateFunction("spread", ["crank1", "crank2"],
                                                             diff)])
    assert plan_from_model(fs) is None
    assert plan_from_model(mechanisms.bricard()) is None      # per-pose SVD row reduction


def test_plan_scale_is_a_length():
    """L_char scales with the mechanism (the tolerance and conditions are unit-free)
    and is the model's characteristic length."""
    a = plan_from_model(mechanisms.five_bar())
    b = plan_from_model(mechanisms.five_bar(base=2.0, crank1=2.5, crank2=2.5, coupler1=3.5,
                                            coupler2=3.5))
    assert 0.3 < a.L_char < 1.0
    assert b.L_char == pytest.approx(10 * a.L_char, rel=1e-9)
    assert a.L_char == mechanisms.five_bar().characteristic_length


# ------------------------------------------- agreement with the numpy model
@compiled
@pytest.mark.parametrize("name", list(CASES))
def test_assemble_matches_numpy(name):
    model, plan, q, phi = case(name)
    start = phi + 0.03 * np.cos(np.arange(plan.N))       # off the solution
    start[:, plan.q_idx] = 0.0                            # replaced by q
    ph, status, res, cond, dsign = K.assemble(plan, q, start)
    assert np.all(status == 0) and np.all(res < plan.tol)
    assert np.abs(ph - phi).max() < 1e-10 * max(1.0, np.abs(phi).max())
    assert cond.shape == (q.shape[0], plan.n_blocks) and np.all(cond >= 1)
    assert np.all(np.abs(dsign) == 1)
    # along a fine path, each pose started from its predecessor, the branch is kept
    qp = q[0] + np.linspace(0.0, 1.0, 40)[:, None] * (q[1] - q[0])
    ph2, status2, _, _, dsign2 = K.assemble(plan, qp, phi[0], path=True)
    assert np.all(status2 == 0) and np.abs(ph2 - model.assemble(qp)).max() < 1e-10
    assert np.all(dsign2 == dsign2[0])


@compiled
@pytest.mark.parametrize("name", list(CASES))
def test_transfer_and_inertia_match_numpy(name):
    model, plan, q, phi = case(name)
    G, status, res, *_ = K.transfer(plan, phi)
    assert np.all(status == 0)
    assert rel(G, model.kinematics(q, 1).transfer.G) < RTOL
    I, status, *_ = K.inertia(plan, phi)
    assert np.all(status == 0)
    assert rel(I, model.dynamics(q).I_star) < RTOL


@compiled
@pytest.mark.parametrize("name", list(CASES))
def test_dynamics_match_numpy(name):
    model, plan, q, phi = case(name)
    qd, qdd, tau = motion(q)
    T, ph, status, *_ = K.inverse_dynamics(plan, q, qd, qdd, phi)
    assert np.all(status == 0)
    assert rel(T, model.inverse_dynamics(q, qd, qdd)) < RTOL
    a, ph, status, *_ = K.forward_dynamics(plan, q, qd, tau, phi)
    assert np.all(status == 0)
    assert rel(a, model.forward_dynamics(q, qd, tau)) < RTOL
    # one pose at a time, single rows broadcast
    for k in range(q.shape[0]):
        T1 = K.inverse_dynamics(plan, q[k], qd[k], qdd[k], phi[k])[0]
        assert T1.shape == (1, plan.dof) and rel(T1[0], T[k]) < 1e-14


@compiled
@pytest.mark.parametrize("name", ["five_bar", "four_bar", "slider_crank", "stewart",
                                  "redundant_arm", "two_arms"])
def test_actuator_loads_match_numpy(name):
    """Na = M (cranks, Stewart legs) and Na > M (two arms holding an object: four
    motors on three coordinates, least norm)."""
    model, plan, q, phi = case(name)
    qd, qdd, _ = motion(q, 1)
    act = joint_indices(model, model.actuators)
    tau, ph, status, res, cond, dsign, acond = K.actuator_loads(plan, q, qd, qdd, act, phi)
    assert np.all(status == 0) and np.all(acond >= 1)
    assert rel(tau, model.actuator_loads(q, qd, qdd, model.actuators)) < RTOL


@compiled
def test_overactuated_loads_are_least_norm():
    model, plan, q, phi = case("five_bar")
    qd, qdd, _ = motion(q, 2)
    three = ["crank1", "crank2", "elbow1"]
    tau = K.actuator_loads(plan, q, qd, qdd, joint_indices(model, three), phi)[0]
    assert rel(tau, model.actuator_loads(q, qd, qdd, three)) < RTOL


@compiled
def test_leg_forces_symmetric_at_rest():
    """The Stewart actuation is well conditioned; at rest in the symmetric pose the
    six leg forces are equal."""
    model, plan, q, phi = case("stewart")
    act = joint_indices(model, model.actuators)
    acond = K.actuator_loads(plan, q, 0 * q, 0 * q, act, phi)[-1]
    assert np.all(np.isfinite(acond)) and np.all(acond >= 1)
    f = K.actuator_loads(plan, q[0], np.zeros(6), np.zeros(6), act, phi[0])[0][0]
    assert np.allclose(f, f[0], rtol=1e-12)


# ------------------------------------------------ independent evidence
@compiled
@pytest.mark.parametrize("name", list(CASES))
def test_G_is_the_derivative_of_the_assembly(name):
    """Central differences of the assembled phi(q) (plan kernels only) against G."""
    model, plan, q, phi = case(name)
    G = K.transfer(plan, phi)[0]
    h = 1e-6
    for k in range(q.shape[0]):
        Gfd = np.empty((plan.N, plan.dof))
        for m in range(plan.dof):
            e = np.zeros(plan.dof)
            e[m] = h
            pp, sp, *_ = K.assemble(plan, q[k] + e, phi[k])
            pm, sm, *_ = K.assemble(plan, q[k] - e, phi[k])
            assert sp[0] == 0 and sm[0] == 0
            Gfd[:, m] = (pp[0] - pm[0]) / (2 * h)
        assert np.abs(Gfd - G[k]).max() < 1e-7 * max(1.0, np.abs(G[k]).max())


@compiled
@pytest.mark.parametrize("name", list(CASES))
def test_rates_are_the_derivatives_along_a_path(name):
    """phi' and phi'' against central differences of phi(q(t)) along
    q(t) = q + q' t + q'' t^2 / 2, and the closure residual stays zero (numpy)."""
    model, plan, q, phi = case(name)
    qd, qdd, _ = motion(q, 4)
    phid, phidd, ph, status, *_ = K.rates(plan, q, qd, qdd, phi)
    assert np.all(status == 0)
    h = 1e-4
    for k in range(q.shape[0]):
        assert np.abs(residual_np(plan, ph[k])).max() < 1e-11
        at = lambda t: K.assemble(plan, q[k] + qd[k] * t + 0.5 * qdd[k] * t * t,  # noqa
                                  phi[k])[0][0]
        p_m, p0, p_p = at(-h), at(0.0), at(h)
        scale = max(1.0, np.abs(phid[k]).max(), np.abs(phidd[k]).max())
        assert np.abs((p_p - p_m) / (2 * h) - phid[k]).max() < 1e-6 * scale
        assert np.abs((p_p - 2 * p0 + p_m) / h**2 - phidd[k]).max() < 1e-4 * scale


@compiled
@pytest.mark.parametrize("name", list(CASES))
def test_forward_dynamics_energy_rate(name):
    """d(T + V)/dt = tau . q' at the forward-dynamics acceleration, with T and V
    from the plan's body frames by finite differences (no kic dynamics)."""
    model, plan, q, phi = case(name)
    qd, _, tau = motion(q, 5)
    qdd, ph, status, *_ = K.forward_dynamics(plan, q, qd, tau, phi)
    assert np.all(status == 0)
    h, d = 1e-5, 1e-3

    def E(k, t):
        at = lambda s: K.assemble(plan, q[k] + qd[k] * s + 0.5 * qdd[k] * s * s,  # noqa
                                  phi[k])[0][0]
        return energy_np(plan, at(t - h), at(t + h), h)

    for k in range(q.shape[0]):
        rate = (-E(k, 2 * d) + 8 * E(k, d) - 8 * E(k, -d) + E(k, -2 * d)) / (12 * d)
        power = tau[k] @ qd[k]
        scale = np.abs(tau[k]).max() * np.abs(qd[k]).max() + abs(power)
        assert abs(rate - power) < 1e-5 * scale, (rate, power)


# --------------------------------------------------- failures as data
@compiled
def test_unreachable_pose_is_flagged_and_the_rest_fine():
    """With a 0.4 m base the cranks at (pi, 0) put A1 and A2 0.9 m apart, beyond
    the 0.7 m the couplers reach: status 1 and NaN there, the other poses exact."""
    model = mechanisms.five_bar(base=0.4)
    plan = plan_from_model(model)
    q = np.array([[2.0, 1.1], [1.9, 1.0], [2.0, 1.3]])
    phi = model.assemble(q)
    qq = np.concatenate([q[:1], [[np.pi, 0.0]], q[1:]])
    start = np.concatenate([phi[:1], phi[:1], phi[1:]])
    qd, qdd, tau = motion(qq, 6)
    ph, status, res, cond, dsign = K.assemble(plan, qq, start)
    assert status.tolist() == [0, 1, 0, 0]
    assert np.all(np.isnan(ph[1])) and res[1] > 1e-3
    assert np.abs(ph[[0, 2, 3]] - phi).max() < 1e-10
    for out in (K.inverse_dynamics(plan, qq, qd, qdd, start),
                K.forward_dynamics(plan, qq, qd, tau, start)):
        assert out[2].tolist() == [0, 1, 0, 0]
        assert np.all(np.isnan(out[0][1])) and np.all(np.isfinite(out[0][[0, 2, 3]]))
    T = K.inverse_dynamics(plan, qq, qd, qdd, start)[0]
    assert rel(T[[0, 2, 3]], model.inverse_dynamics(q, qd[[0, 2, 3]], qdd[[0, 2, 3]])) < RTOL
    with pytest.raises(kic.ClosureError):             # the numpy model agrees
        model.assemble(qq[1])
    # a path does not carry the failure over
    ph, status, *_ = K.assemble(plan, qq, phi[0], path=True)
    assert status.tolist() == [0, 1, 0, 0] and np.abs(ph[[0, 2, 3]] - phi).max() < 1e-10


@compiled
def test_condition_near_a_singular_block():
    """Towards the five-bar's type II singularity the reported condition (and
    det sign) agree with an SVD of a finite-difference closure Jacobian in the
    plan's scaling, grow like 1/sqrt(distance), and past max_condition the pose
    is flagged singular (status 2) with NaN outputs."""
    wide = mechanisms.five_bar(base=0.4)
    plan = plan_from_model(wide)
    th1, th2 = five_bar_stretched()
    path = np.stack([np.full(4, th1), th2 + np.array([0.3, 0.1, 1e-2, 1e-4])], axis=-1)
    phi = wide.assemble(path)
    ph, status, res, cond, dsign = K.assemble(plan, path, phi)
    assert np.all(status == 0)
    c = cond[:, 0]
    assert np.all(np.diff(c) > 0) and 5 < c[3] / c[2] < 20
    dep = plan.dep
    for k in range(path.shape[0]):
        A = np.empty((dep.size, dep.size))
        h = 1e-7
        for i, d in enumerate(dep):
            e = np.zeros(plan.N)
            e[d] = h
            A[:, i] = (residual_np(plan, ph[k] + e) - residual_np(plan, ph[k] - e)) / (2 * h)
        scale_r = np.where(plan.row_is_rot, 1.0, 1.0 / plan.L_char)
        scale_c = np.where(plan.is_revolute[dep], 1.0, plan.L_char)
        sv = np.linalg.svd(scale_r[:, None] * A * scale_c, compute_uv=False)
        assert c[k] == pytest.approx(sv[0] / sv[-1], rel=1e-5)
        assert dsign[k, 0] == np.sign(np.linalg.det(A))
    tight = dataclasses.replace(plan, max_condition=float(np.sqrt(c[2] * c[3])))
    qd = np.full((4, 2), 0.1)
    T, ph2, status, *_ = K.inverse_dynamics(tight, path, qd, 0 * qd, phi)
    assert status.tolist() == [0, 0, 0, 2]
    assert np.all(np.isnan(T[3])) and np.all(np.isfinite(ph2[3]))
    assert np.all(np.isfinite(T[:3]))


@compiled
def test_singular_inertia_is_flagged():
    """A massless mechanism has no I*: forward dynamics reports status 3."""
    model, plan, q, phi = case("four_bar")
    light = dataclasses.replace(plan, mass=np.zeros_like(plan.mass),
                                inertia=np.zeros_like(plan.inertia))
    qdd, ph, status, *_ = K.forward_dynamics(light, q, 0 * q, 0 * q + 1.0, phi)
    assert np.all(status == 3) and np.all(np.isnan(qdd))


@compiled
def test_bad_input_raises_model_error():
    model, plan, q, phi = case("five_bar")
    with pytest.raises(kic.ModelError):
        K.assemble(plan, [np.nan, 1.0], phi[0])
    with pytest.raises(kic.ModelError):
        K.assemble(plan, np.zeros(3), phi[0])
    with pytest.raises(kic.ModelError):
        K.inverse_dynamics(plan, q, np.zeros((2, 2)), np.zeros(2), phi)
    with pytest.raises(kic.ModelError):
        K.forward_dynamics(plan, q, np.zeros(2), [np.inf, 0.0], phi)
    with pytest.raises(kic.ModelError):
        K.actuator_loads(plan, q, np.zeros(2), np.zeros(2), [0], phi)


def test_without_numba_the_module_imports_and_says_so():
    """With numba unimportable the module imports, reports unavailability and the
    entry points raise ImportError (the caller keeps the numpy path)."""
    import subprocess
    import sys
    code = (
        "import sys; sys.modules['numba'] = None\n"
        "import numpy as np, mechanisms\n"
        "from kic.kernels import closed as K\n"
        "from kic.closed_plan import plan_from_model\n"
        "m = mechanisms.four_bar(); plan = plan_from_model(m)\n"
        "assert K.available is False and K.load() is False\n"
        "try:\n"
        "    K.assemble(plan, [0.3], m.reference_phi)\n"
        "except ImportError:\n"
        "    print('fallback')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "fallback"


@compiled
def test_assembly_mode():
    """det signs are the model's mode; asking for the other mode flags every pose
    (status 4, NaN loads), and the elbow-flipped assembly is found in it."""
    model, plan, q, phi = case("five_bar")
    qd, qdd, _ = motion(q, 7)
    ph, status, _, _, dsign = K.assemble(plan, q, phi, mode=model.mode)
    assert np.all(status == 0) and np.all(dsign == np.array(model.mode))
    other = -np.array(model.mode, float)
    T, ph, status, *_ = K.inverse_dynamics(plan, q, qd, qdd, phi, mode=other)
    assert np.all(status == 4) and np.all(np.isnan(T)) and np.all(np.isfinite(ph))
    # the five-bar built on its other branch is in the other mode
    flipped = mechanisms.five_bar(branch="down")
    assert flipped.phi_names == model.phi_names and np.all(np.array(flipped.mode) == other)
    phf = flipped.assemble(q)
    ph2, status2, _, _, dsign2 = K.assemble(plan, q, phf, mode=other)
    assert np.all(status2 == 0) and np.all(dsign2 == other)
    assert np.abs(ph2 - phf).max() < 1e-10


@compiled
@pytest.mark.parametrize("count", [32, 13, 1])
def test_condition_lanes_match_svd(count):
    """The condition numbers of matrices side by side in lanes (the design batches'
    actuation) against numpy's SVD, for a full set of lanes and partial ones:
    well and badly conditioned, rank deficient (inf or beyond 1e14) and not
    finite (inf); and the same numbers as one matrix alone in the lanes."""
    rng = np.random.default_rng(3)
    A = rng.normal(size=(count, 6, 6))
    if count > 1:
        A[1] = A[1] * np.logspace(0, -8, 6)          # condition ~1e8
    if count > 3:
        A[2][:, 4] = A[2][:, 3]                       # rank deficient
        A[3, 2, 5] = np.nan
    V = 32
    pairs = linalg.round_robin_pairs(6)
    work, norms = np.empty((6, 6, V)), np.empty((6, V))
    gam, cs, sn, cond = np.empty(V), np.empty(V), np.empty(V), np.empty(V)
    live, turned = np.empty(V, bool), np.empty(V, bool)
    linalg.condition_numbers_lanes(A, count, work, norms, gam, cs, sn, pairs, cond, live, turned)
    got = cond[:count].copy()
    for u in range(count):
        if not np.all(np.isfinite(A[u])):
            assert got[u] == np.inf
            continue
        ref = np.linalg.cond(A[u])
        if ref > 1e14:
            assert got[u] > 1e14
        else:
            assert abs(got[u] / ref - 1) < 1e-15 * ref + 1e-13
        linalg.condition_numbers_lanes(A[u:u + 1], 1, work, norms, gam, cs, sn, pairs, cond, live,
                                       turned)
        assert cond[0] == got[u]


@compiled
@pytest.mark.parametrize("name", ["five_bar", "stewart"])
def test_layout_unpacks_every_field_by_name(name):
    """The compiled unpacking (generated from kic.kernels.layout's tables) gives
    every field of the plan, and the named float views of a design's buffer
    are the same numbers: packing and unpacking come from one table."""
    from kic.closed_plan import float_fields
    from kic.kernels import layout
    _, plan, _, _ = case(name)
    P = layout.unpack(*plan.args)
    for field in P._fields:
        got = getattr(P, field)
        if field in ("N", "M", "L", "R", "B"):
            continue
        want = getattr(plan, field)
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want), err_msg=field)
    assert (P.N, P.M, P.L, P.B) == (plan.N, plan.dof, plan.loop_k.shape[0], plan.n_blocks)
    views = float_fields(plan, plan.args[0][None])
    for field, _, _ in layout.FLOAT_FIELDS:
        if field != "scale":
            np.testing.assert_array_equal(views[field][0], getattr(P, field), err_msg=field)
    assert views["scale"][0].tolist() == [P.L_char, P.tol, P.max_condition]
    assert plan.buffers is plan.args
    # writing a view writes the buffer the kernels read
    floats = plan.args[0].copy()
    float_fields(plan, floats)["mass"][0] = 123.0
    assert layout.unpack(floats, plan.args[1]).mass[0] == 123.0


# ------------------------------------ one pose under actuator loads (issue 19)
@pytest.mark.parametrize("backend", ["numpy", "numba"])
@pytest.mark.parametrize("name", ["five_bar", "stewart"])
def test_forward_dynamics_under_actuator_loads(name, backend):
    """``forward_dynamics(..., actuators=)`` inverts ``actuator_loads`` (a second
    kernel path: assembly, transfer, RNEA and the actuation solve), and equals the
    coordinate loads ``(G^a_q)^T tau`` given by hand, one pose and a batch."""
    if backend == "numba" and not (K.available and K.load()):
        pytest.skip("needs numba")
    model, _, q, _ = case(name)
    qd, qdd, _ = motion(q, 3)
    acts = model.actuators
    previous = kic.set_backend(backend)
    try:
        tau = model.actuator_loads(q, qd, qdd, acts)
        for k in range(q.shape[0]):
            one = model.forward_dynamics(q[k], qd[k], tau[k], actuators=acts)
            assert rel(one, qdd[k]) < 1e-9
            by_hand = model.forward_dynamics(
                q[k], qd[k], model.actuator_jacobian(q[k], acts).T @ tau[k])
            assert rel(one, by_hand) < RTOL
        assert rel(model.forward_dynamics(q, qd, tau, actuators=acts), qdd) < 1e-9
        with pytest.raises(kic.ModelError):
            model.forward_dynamics(q[0], qd[0], tau[0][:-1], actuators=acts)
    finally:
        kic.set_backend(previous)


@compiled
@pytest.mark.parametrize("name", ["five_bar", "stewart"])
def test_one_pose_actuator_jacobian_and_rates_match_numpy(name):
    """The compiled one-pose G^a_q (one kernel call: assembly and transfer) and
    joint rates against the numpy path."""
    model, _, q, _ = case(name)
    qd, qdd, _ = motion(q, 4)
    acts = model.actuators
    compiled_G = [model.actuator_jacobian(q[k], acts) for k in range(q.shape[0])]
    for k in range(q.shape[0]):
        # a warm start (the assembled joint values): the same Jacobian
        phi = model.assemble(q[k])
        assert rel(model.actuator_jacobian(q[k], acts, start=phi), compiled_G[k]) < RTOL
    compiled_rates = [model.joint_rates(q[k], qd[k], qdd[k]) for k in range(q.shape[0])]
    previous = kic.set_backend("numpy")
    try:
        for k in range(q.shape[0]):
            assert rel(compiled_G[k], model.actuator_jacobian(q[k], acts)) < RTOL
            phi = model.assemble(q[k])
            assert rel(compiled_G[k], model.actuator_jacobian(q[k], acts, start=phi)) < RTOL
            phid, phidd = model.joint_rates(q[k], qd[k], qdd[k])
            assert rel(compiled_rates[k][0], phid) < RTOL
            assert rel(compiled_rates[k][1], phidd) < RTOL
    finally:
        kic.set_backend(previous)


@compiled
def test_read_only_arrays_use_the_one_compiled_variant():
    """A read-only q or start (a model's reference_phi is one) is laid out as a
    writable array before the kernel call: numba would type it apart and compile
    the entry again; the answers are the same."""
    model, _, q, _ = case("five_bar")
    qd, qdd, _ = motion(q, 5)
    frozen = q[0].copy()
    frozen.setflags(write=False)
    start = model.reference_phi                  # read-only
    want = model.inverse_dynamics(q[0].copy(), qd[0], qdd[0])
    assert rel(model.inverse_dynamics(frozen, qd[0], qdd[0], start=start), want) < RTOL
    from kic.kernels import closed_pose
    assert len(closed_pose.batch.signatures) == 1          # one entry, one signature


@compiled
def test_one_pose_and_batches_share_the_one_compiled_entry():
    """The lean one-pose call and batch calls run one compiled function with one
    signature (a second entry or variant would compile the whole pose again at
    first use, seconds): each pose of a batch equals its one-pose answer bit
    for bit, for every output the entry gives."""
    from kic.kernels import closed_pose
    model, plan, q, phi = case("five_bar")
    qd, qdd, _ = motion(q, 7)
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    act = np.array(model.evaluation.actuator_index(model.coordinate_names), np.int64)
    mode = np.zeros(plan.block_row.shape[0] - 1)
    for name, x, a in (("assemble", q, K._EMPTY_I), ("inverse_dynamics", qdd, K._EMPTY_I),
                       ("forward_dynamics", qdd, K._EMPTY_I), ("actuator_loads", qdd, act),
                       ("rates", qdd, K._EMPTY_I), ("transfer", q, K._EMPTY_I)):
        out, phis, status, res, cond, sign, act_cond = K._call(
            plan, K._CODE[name], q, qd, x, a, phi, False, mode)
        for t in range(q.shape[0]):
            phi_one = np.full(N, np.nan)
            got = K.one(plan, name, q[t].copy(), qd[t].copy(), x[t].copy(), a, phi[t].copy(),
                        False, mode, phi_one)
            assert got[1] == status[t] == 0, name
            np.testing.assert_array_equal(got[0], out[t], err_msg=name)
            np.testing.assert_array_equal(phi_one, phis[t], err_msg=name)
            assert got[2] == (max(cond[t]) if cond.shape[1] else 1.0), name
            assert got[3] is True, name                # every output finite
    assert len(closed_pose.batch.signatures) == 1
    assert not hasattr(closed_pose, "single")


@compiled
def test_one_pose_flags_a_result_that_overflows():
    """Finite inputs whose one-pose answer overflows: the lean call says so (its
    ``finite`` flag, no pass over the output in Python), and the model's call
    then takes the general path, which reports the overflow."""
    model, plan, q, phi = case("five_bar")
    M, N = plan.q_idx.shape[0], plan.parent.shape[0]
    big = np.array([1e308, -1e308])
    mode = np.zeros(plan.block_row.shape[0] - 1)
    with np.errstate(over="ignore"):
        out, status, _, finite = K.one(plan, "forward_dynamics", q[0].copy(), np.zeros(M), big,
                                       K._EMPTY_I, phi[0].copy(), False, mode, np.empty(N))
    assert status == 0 and finite is False and not np.isfinite(out).all()
    out, status, _, finite = K.one(plan, "forward_dynamics", q[0].copy(), np.zeros(M),
                                   np.zeros(M), K._EMPTY_I, phi[0].copy(), False, mode,
                                   np.empty(N))
    assert status == 0 and finite is True
    with np.errstate(over="ignore"), pytest.raises(kic.ModelError, match="overflows"):
        model.forward_dynamics(q[0].copy(), np.zeros(M), big)


@compiled
def test_stages_are_compiled_for_compiled_callers_only():
    """The stages of a pose run inside the entry points only: compiled without
    the wrappers of Python calls (seconds of first use), so a call from Python
    raises TypeError instead of running code that has no entry for it; their
    plain twins still run from Python.  Also when closed_pose is imported after
    the registry has loaded numba (a serial chain used first)."""
    import subprocess
    import sys
    from kic.kernels import closed_pose
    from kic.kernels import jit as registry
    model, plan, q, phi = case("five_bar")
    with pytest.raises(TypeError, match="compiled callers only"):
        closed_pose.tree_frames(plan.parent, plan.order, plan.is_revolute, plan.axis,
                                plan.origin, plan.offset, phi[0], np.empty((5, 4, 4)),
                                np.empty((5, 6)))
    assert type(closed_pose.batch).__name__ != type(closed_pose.newton).__name__
    twin = registry.plain(closed_pose.__name__, "tree_frames")
    assert twin is not closed_pose.tree_frames
    late = ("import sys\nfrom kic.kernels import jit\nassert 'kic.kernels.closed_pose' not in "
            "sys.modules\njit.load()\nfrom kic.kernels import closed_pose, closed_lanes\n"
            "assert closed_lanes.closure_residual is closed_pose.closure_residual\n"
            "try:\n    closed_pose.closure_residual()\nexcept TypeError as e:\n    print(e)\n")
    out = subprocess.run([sys.executable, "-c", late], capture_output=True, text=True,
                         check=True).stdout
    assert "compiled callers only" in out


@compiled
def test_an_empty_batch_gives_empty_outputs():
    """No poses: every output has zero rows and its own width."""
    _, plan, q, _ = case("five_bar")
    M, N, B = q.shape[1], plan.parent.shape[0], plan.block_row.shape[0] - 1
    none = np.zeros((0, M))
    out = K.actuator_loads(plan, none, none, none, [0, 1], np.zeros((0, N)))
    assert [a.shape for a in out] == [(0, 2), (0, N), (0,), (0,), (0, B), (0, B), (0,)]
    assert out[2].dtype == np.int64


@compiled
def test_lane_and_condition_stages_are_for_compiled_callers_only():
    """The design lanes' stages and the condition number's stages run inside
    compiled entry points only (compiled without Python's wrappers: a Python
    call raises TypeError); the design batches' entry and the LU functions that
    Python calls (the parity tests, serial_numba's inverses) still run."""
    from kic.kernels import closed_lanes
    with pytest.raises(TypeError, match="compiled callers only"):
        closed_lanes.block_condition(np.zeros(1, np.int64), np.zeros(1, np.int64),
                                     np.zeros(1, np.int64), 1.0, np.zeros((1, 1, 1)), 0, 1, 0,
                                     np.zeros((1, 1)), np.zeros((1, 1)))
    with pytest.raises(TypeError, match="compiled callers only"):
        linalg.condition_leading(np.eye(2), 2, 2, np.empty((2, 2)))
    assert linalg.condition_number(np.diag([2.0, 0.5]), np.empty((2, 2))) == pytest.approx(4.0)
    A, piv, b = np.array([[0.0, 2.0], [1.0, 1.0]]), np.zeros(2, np.int64), np.array([2.0, 3.0])
    assert linalg.lu_factor(A, 2, piv) == -1.0
    linalg.lu_solve(A, 2, piv, b)
    np.testing.assert_allclose(b, [2.0, 1.0], rtol=1e-15)
    assert type(closed_lanes.design_loads).__name__ != type(closed_lanes.transfer_lanes).__name__


@compiled
def test_transfer_at_given_joint_values_leaves_them_and_matches_assembly():
    """G^phi_q at given joint values (the entry's evaluation without a Newton
    step) is the transfer after an assembly that starts at those values (to
    rounding: Newton may polish them), and it reports the residual of the values
    it was given (not corrected)."""
    model, plan, q, phi = case("five_bar")
    G_at, status, residual, *_ = K.transfer(plan, phi)
    from kic.kernels.closed_pose import ASSEMBLED_TRANSFER
    out = K._call(plan, ASSEMBLED_TRANSFER, q, q, q, K._EMPTY_I, phi, False)
    assert (status == 0).all() and (out[2] == 0).all()
    np.testing.assert_allclose(out[1], phi, rtol=0, atol=1e-14)
    np.testing.assert_allclose(G_at.reshape(len(q), -1), out[0], rtol=1e-12, atol=1e-14)
    moved = phi.copy()
    moved[:, 2] += 1e-3
    _, _, residual_moved, *_ = K.transfer(plan, moved)
    assert (residual_moved > 1e3 * np.maximum(residual, 1e-300)).all()
