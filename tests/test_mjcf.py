"""MJCF export (kic.mjcf) loaded by MuJoCo (optional: skipped without ``mujoco``).

MuJoCo's joint-space inertia of the exported tree (``mj_fullM``) must equal kic's
inertia of the same tree (``spanning_tree(mech)[0].model(all joints)``) at the same
joint values, the loop constraints must hold at the exported assembled keyframe,
and a few hundred ``mj_step`` must stay finite with the loops closed to a small
tolerance (MuJoCo's equality constraints are soft).
"""
from __future__ import annotations

import numpy as np
import pytest

import kic
import mechanisms
from kic.io.mjcf import spanning_tree, to_mjcf

mujoco = pytest.importorskip("mujoco")

CASES = {
    "five_bar": (mechanisms.five_bar, np.array([np.pi / 2 + 0.3, np.pi / 2 - 0.3])),
    "stewart": (mechanisms.stewart_platform, np.array([0.01, -0.02, 0.6, 0.05, -0.03, 0.02])),
    "bricard": (mechanisms.bricard, np.array([0.3])),         # spatial R cut: two connects
    "slider_crank": (mechanisms.slider_crank, np.array([0.7])),
}


def load(xml):
    m = mujoco.MjModel.from_xml_string(xml)
    return m, mujoco.MjData(m)


def full_inertia(m, d, qpos):
    d.qpos[:] = qpos
    mujoco.mj_forward(m, d)
    M = np.zeros((m.nv, m.nv))
    mujoco.mj_fullM(m, d, M)
    return M


def residual(m, d):
    """Largest equality-constraint violation (m for connect, m and rad for weld)."""
    mujoco.mj_forward(m, d)
    return float(np.abs(d.efc_pos[:d.ne]).max()) if d.ne else 0.0


@pytest.fixture(scope="module", params=list(CASES))
def exported(request):
    build, q = CASES[request.param]
    cm = build()
    cuts = ("slide",) if request.param == "slider_crank" else ()   # P cut: ghost + weld
    return request.param, cm, q, cuts, to_mjcf(cm, q=q, cuts=cuts)


def test_loads_and_keyframe_is_assembled(exported):
    name, cm, q, cuts, xml = exported
    m, d = load(xml)
    tree, cut = spanning_tree(cm.mechanism, cuts)
    assert m.neq >= len(cut) >= 1
    mujoco.mj_resetDataKeyframe(m, d, 0)
    assert residual(m, d) < 1e-12
    # the keyframe holds kic's assembled joint values
    phi = dict(zip(cm.phi_names, cm.assemble(q)))
    for n in tree.primitive_joints:
        if n in phi:
            assert abs(d.qpos[m.joint(n).qposadr[0]] - phi[n]) < 1e-12


def test_tree_inertia_equals_mujoco(exported):
    name, cm, q, cuts, xml = exported
    m, d = load(xml)
    tree, _ = spanning_tree(cm.mechanism, cuts)
    names = tree.primitive_joints
    model = tree.model(names)
    qadr = np.array([m.joint(n).qposadr[0] for n in names])
    vadr = np.array([m.joint(n).dofadr[0] for n in names])
    rng = np.random.default_rng(0)
    worst = 0.0
    for k in range(5):
        qpos = np.zeros(m.nq)
        if k:
            qpos[:] = rng.uniform(-1.0, 1.0, m.nq)
        else:
            mujoco.mj_resetDataKeyframe(m, d, 0)
            qpos[:] = d.qpos
        M = full_inertia(m, d, qpos)
        I = model.dynamics(qpos[qadr]).I_star
        err = float(np.abs(M[np.ix_(vadr, vadr)] - I).max())
        worst = max(worst, err)
        assert err <= 1e-10 * max(1.0, float(np.abs(I).max())), f"{name}: {err:.2e}"
        assert len(vadr) == m.nv
    print(f"{name}: largest |mj_fullM - kic tree I*| {worst:.2e}")


def test_steps_stay_closed(exported):
    name, cm, q, cuts, xml = exported
    m, d = load(xml)
    mujoco.mj_resetDataKeyframe(m, d, 0)
    worst = 0.0
    for _ in range(300):
        mujoco.mj_step(m, d)
        worst = max(worst, residual(m, d))
    assert np.all(np.isfinite(d.qpos)) and np.all(np.isfinite(d.qvel))
    assert np.abs(d.qvel).max() < 50.0               # falling under gravity, no blow-up
    assert worst < 5e-3, f"{name}: loop residual {worst:.2e}"
    print(f"{name}: largest loop residual over 300 steps {worst:.2e}")


def test_cut_kinds():
    five = spanning_tree(mechanisms.five_bar().mechanism)[1]
    assert five == ["tip"]
    xml = to_mjcf(mechanisms.five_bar())
    assert xml.count("<connect") == 1 and "<weld" not in xml      # planar: one connect
    assert to_mjcf(mechanisms.bricard()).count("<connect") == 2   # spatial R: two
    sp = mechanisms.stewart_platform().mechanism
    tree, cut = spanning_tree(sp)
    assert len(cut) == 5 and all(c.endswith(".s") for c in cut)    # S joints cut first
    xml = to_mjcf(mechanisms.slider_crank(), cuts=["slide"])
    assert xml.count("<weld") == 1
    with pytest.raises(kic.ModelError, match="unknown cut joint"):
        to_mjcf(sp, cuts=["nope"])


def test_serial_chain_export():
    chain = mechanisms.panda()
    m, d = load(chain.to_mjcf() if hasattr(chain, "to_mjcf") else to_mjcf(chain))
    assert m.nq == chain.dof
    rng = np.random.default_rng(1)
    for q in rng.uniform(-2, 2, (4, chain.dof)):
        M = full_inertia(m, d, q)
        I = chain.dynamics(q).I_star
        assert np.abs(M - I).max() <= 1e-10 * max(1.0, np.abs(I).max())
        d.qvel[:] = 0.0
        mujoco.mj_forward(m, d)
        assert np.abs(d.qfrc_bias - chain.gravity_load(q)).max() < 1e-10


def test_random_chain_export():
    """Skew axes, R and P joints, base, frame offsets: MuJoCo's inertia, gravity and
    bias forces equal kic's, and the tool is a site at kic's tool frame."""
    import helpers
    rng = np.random.default_rng(21)
    chain = helpers.random_chain(rng, 6, offsets=True)
    m, d = load(to_mjcf(chain))
    for q in rng.uniform(-1.5, 1.5, (3, 6)):
        qd = rng.uniform(-1, 1, 6)
        M = full_inertia(m, d, q)
        I = chain.dynamics(q).I_star
        assert np.abs(M - I).max() <= 1e-10 * max(1.0, np.abs(I).max())
        d.qvel[:] = qd
        mujoco.mj_forward(m, d)
        bias = chain.inverse_dynamics(q, qd, np.zeros(6))
        assert np.abs(d.qfrc_bias - bias).max() <= 1e-10 * max(1.0, np.abs(bias).max())
        tool = chain.tool_frame(q)
        assert np.abs(d.site("tool").xpos - tool[:3, 3]).max() < 1e-12
        assert np.abs(d.site("tool").xmat.reshape(3, 3) - tool[:3, :3]).max() < 1e-12


@pytest.mark.parametrize("case, tol", [("five_bar", 1e-4), ("stewart", 1e-4),
                                       ("slider_crank", 2e-3)])
def test_constrained_accelerations_equal_kic_forward_dynamics(case, tol):
    """At rest on the assembled keyframe, MuJoCo's constrained joint accelerations
    (stiff closures) equal kic's closed-model forward dynamics, every joint's
    (``joint_rates``): an independent check of the export's loops and masses."""
    build, q = CASES[case]
    cm = build()
    cuts = ("slide",) if case == "slider_crank" else ()
    m, d = load(to_mjcf(cm, q=q, cuts=cuts, solimp=(0.99999, 0.99999, 0.001)))
    mujoco.mj_resetDataKeyframe(m, d, 0)
    mujoco.mj_forward(m, d)
    zero = np.zeros(cm.dof)
    _, phidd = cm.joint_rates(q, zero, cm.forward_dynamics(q, zero, zero))
    kic_acc = dict(zip(cm.phi_names, phidd))
    names = [n for n in kic_acc if mujoco.mj_name2id(m, mujoco.mjtObj.mjOBJ_JOINT, n) >= 0]
    assert len(names) >= 4
    err = max(abs(d.qacc[m.joint(n).dofadr[0]] - kic_acc[n]) for n in names)
    scale = max(abs(kic_acc[n]) for n in names)
    assert err <= tol * scale, f"{case}: {err / scale:.2e}"
    print(f"{case}: |MuJoCo qacc - kic| / max |kic| = {err / scale:.2e}")
    for _ in range(300):                    # stiff closures also step stably
        mujoco.mj_step(m, d)
    assert np.all(np.isfinite(d.qpos)) and residual(m, d) < 1e-3


# --------------------------------------------------------------------------
# an imported robot: joint ranges, mimic couplings, fixed links as sites
# --------------------------------------------------------------------------
DATA = __import__("pathlib").Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize("fname", ["chain_mimic.urdf", "tree_mimic.urdf"])
def test_imported_robot_keeps_ranges_mimics_and_frames(fname):
    """chain_mimic: j4 = 0.5 j2 - 0.2 (a chain, exported through its MimicModel);
    tree_mimic: finger_b = -0.7 finger_a + 0.1 (a tree).  MuJoCo's mass matrix is
    kic's in all joints, each URDF range is a MuJoCo range, each mimic a joint
    equality that holds exactly where the coupling does, each fixed link a site."""
    import xml.etree.ElementTree as ET
    path = DATA / fname
    if fname == "chain_mimic.urdf":
        model = kic.SerialChain.from_urdf(path)
        full, names = model.model, list(model.model.joint_names)
        couplings = {"j4": ("j2", 0.5, -0.2)}
    else:
        model = kic.Mechanism.from_urdf(path)
        names = model.primitive_joints
        full = model.model(names)
        couplings = {"finger_b": ("finger_a", -0.7, 0.1)}
    m, d = load(model.to_mjcf())
    root = ET.parse(path).getroot()
    low, high = np.full(len(names), -0.8), np.full(len(names), 0.8)
    for e in root.iterfind("joint"):                  # ranges, read from the file itself
        lim = e.find("limit")
        if e.get("name") in names and lim is not None and lim.get("lower") is not None:
            i = names.index(e.get("name"))           # poses within the ranges: a model
            low[i] = max(low[i], float(lim.get("lower")))     # refuses others
            high[i] = min(high[i], float(lim.get("upper")))
            k = m.joint(e.get("name")).id
            assert m.jnt_limited[k]
            np.testing.assert_array_equal(m.jnt_range[k], [float(lim.get("lower")),
                                                           float(lim.get("upper"))])
        elif e.get("name") in names:
            assert not m.jnt_limited[m.joint(e.get("name")).id]
    for e in root.iterfind("link"):                   # every fixed link is a body or site
        n = e.get("name")
        assert n in {m.body(i).name for i in range(m.nbody)} | \
            {m.site(i).name for i in range(m.nsite)} | {"base_link"}, n
    (slave, (master, mult, off)), = couplings.items()
    assert m.neq == 1 and m.eq_type[0] == mujoco.mjtEq.mjEQ_JOINT
    qadr = np.array([m.joint(n).qposadr[0] for n in names])
    vadr = np.array([m.joint(n).dofadr[0] for n in names])
    rng = np.random.default_rng(4)
    for _ in range(3):
        phi = rng.uniform(low, high)
        phi[names.index(slave)] = off + mult * phi[names.index(master)]
        d.qpos[qadr] = phi
        assert residual(m, d) < 1e-15                   # the coupling holds: no violation
        M = full_inertia(m, d, d.qpos.copy())
        np.testing.assert_allclose(M[np.ix_(vadr, vadr)], full.dynamics(phi).I_star,
                                   rtol=0, atol=1e-12)
        d.qpos[qadr[names.index(slave)]] += 0.01        # and its violation is seen
        assert abs(residual(m, d) - 0.01) < 1e-12
