"""Every URDF of example-robot-data that Pinocchio loads (fixed base), loaded by kic
with default options and checked against Pinocchio and MuJoCo.

Optional: skipped without ``pinocchio`` (PyPI ``pin``) or ``example-robot-data``
(both in the ``test`` extra, so this runs in CI).  For each robot with moving joints:

* kic loads it (``Mechanism.from_urdf(path)``); the only diagnostics are
  :class:`kic.io.RepairWarning` (unphysical inertias, dropped mimics);
* I*, the gravity load and inverse dynamics in all joints equal Pinocchio's crba,
  computeGeneralizedGravity and rnea (mimic joints as independent joints,
  Pinocchio's default) to 1e-9 at random states (two per robot: poses are
  subsampled, robots are not);
* the robot is one chain for Pinocchio (each joint's parent the previous joint) if and
  only if ``SerialChain.from_urdf(path)`` loads it, and then the chain agrees too;
* its MJCF export compiles in MuJoCo, ``mj_fullM`` equals I*, every joint range
  Pinocchio read is MuJoCo's ``range`` (``limited``), and every ``<mimic>`` of the file
  is a joint equality with ``polycoef = (offset, multiplier)`` (robots with unphysical
  inertias are left out here: MuJoCo refuses them);
* its URDF export, loaded by Pinocchio, has the same crba and every link of the file
  as a frame (fixed links kept as fixed joints).
"""
from __future__ import annotations

import warnings
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import numpy as np
import pytest

import kic
from kic.io import RepairWarning, to_mjcf, to_urdf

from helpers import pin_configuration, robots_dir, within_ranges

pin = pytest.importorskip("pinocchio")


ROBOTS = robots_dir()
if ROBOTS is None:
    pytest.skip("example-robot-data is not installed", allow_module_level=True)
FILES = sorted(str(p.relative_to(ROBOTS)) for p in ROBOTS.rglob("*.urdf"))
TOL = 1e-9
STATES = 2


def close(a, b, what):
    scale = max(1.0, float(np.abs(b).max()))
    err = float(np.abs(np.asarray(a) - np.asarray(b)).max())
    assert err <= TOL * scale, f"{what}: max difference {err:.3e} > {TOL:.0e} x {scale:.3g}"


def sym(M):
    return np.triu(M) + np.triu(M, 1).T


def load_kic(load, path):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = load(path)
    others = [w for w in caught if not issubclass(w.category, RepairWarning)]
    assert not others, [str(w.message) for w in others]
    return out, [str(w.message) for w in caught if issubclass(w.category, RepairWarning)]


@pytest.fixture(params=FILES)
def robot(request):
    path = str(ROBOTS / request.param)
    try:
        pm = pin.buildModelFromUrdf(path)
    except Exception:                   # noqa: BLE001  (Pinocchio refuses it: not ours)
        pytest.skip("Pinocchio does not load it")
    if pm.nv == 0:
        pytest.skip("no moving joint")
    return path, pm


def test_loads_and_agrees_with_pinocchio(robot):
    path, pm = robot
    mech, said = load_kic(kic.Mechanism.from_urdf, path)
    assert len(said) <= 1                                       # one warning at most
    names = mech.primitive_joints
    assert sorted(names) == sorted(pm.names[1:])
    order = np.array([pm.joints[pm.getJointId(n)].idx_v for n in names])
    model = mech.model(names)
    data = pm.createData()
    rng = np.random.default_rng(zlib.crc32(Path(path).name.encode()))
    phi = within_ranges(mech.limits, names, rng.uniform(-1.5, 1.5, (STATES, len(names))), 1.5)
    qd, qdd = rng.uniform(-1, 1, (2, STATES, len(names)))
    dyn = model.dynamics(phi)
    tau = model.inverse_dynamics(phi, qd, qdd)
    for k in range(STATES):
        qp = pin_configuration(pm, names, phi[k])
        v, a = np.zeros(pm.nv), np.zeros(pm.nv)
        v[order], a[order] = qd[k], qdd[k]
        close(dyn.I_star[k], sym(pin.crba(pm, data, qp))[np.ix_(order, order)], "I*")
        close(dyn.gravity_load[k], pin.computeGeneralizedGravity(pm, data, qp)[order],
              "gravity load")
        close(tau[k], pin.rnea(pm, data, qp, v, a)[order], "inverse dynamics")


def test_single_chains_load_as_chains(robot):
    path, pm = robot
    one_chain = all(pm.parents[i] == i - 1 for i in range(1, pm.njoints))
    if not one_chain:
        with pytest.raises(kic.ModelError, match="not one chain"):
            load_kic(kic.SerialChain.from_urdf, path)
        return
    chain, _ = load_kic(kic.SerialChain.from_urdf, path)
    inner = getattr(chain, "model", chain)                     # a MimicModel's chain
    names = list(inner.joint_names)
    assert sorted(names) == sorted(pm.names[1:])
    order = np.array([pm.joints[pm.getJointId(n)].idx_v for n in names])
    data = pm.createData()
    phi = np.random.default_rng(3).uniform(-1.5, 1.5, (STATES, len(names)))
    I = inner.dynamics(phi).I_star
    for k in range(STATES):
        close(I[k], sym(pin.crba(pm, data, pin_configuration(pm, names, phi[k])))[np.ix_(order, order)],
              "chain I*")
    # every fixed link stays reachable as a named frame (a UR arm's tool0)
    links = {e.get("name") for e in ET.parse(path).getroot().iterfind("link")}
    assert links <= set(chain.fixed_frames)


def test_mjcf_export_matches_mujoco(robot):
    mujoco = pytest.importorskip("mujoco")
    path, pm = robot
    mech, said = load_kic(kic.Mechanism.from_urdf, path)
    if said:
        pytest.skip("unphysical inertias: MuJoCo refuses them")
    m = mujoco.MjModel.from_xml_string(to_mjcf(mech))
    d = mujoco.MjData(m)
    names = mech.primitive_joints
    assert m.nv == len(names)
    qadr = np.array([m.joint(n).qposadr[0] for n in names])
    vadr = np.array([m.joint(n).dofadr[0] for n in names])
    model = mech.model(names)
    phi = within_ranges(mech.limits, names,
                        np.random.default_rng(5).uniform(-1.5, 1.5, (STATES, len(names))), 1.5)
    I = model.dynamics(phi).I_star
    M = np.zeros((m.nv, m.nv))
    for k in range(STATES):
        d.qpos[qadr] = phi[k]
        mujoco.mj_forward(m, d)
        mujoco.mj_fullM(m, d, M)
        close(M[np.ix_(vadr, vadr)], I[k], "mj_fullM")
    # the joint ranges Pinocchio read are MuJoCo's
    for n in names:
        j = pm.joints[pm.getJointId(n)]
        lo, hi = pm.lowerPositionLimit[j.idx_q], pm.upperPositionLimit[j.idx_q]
        limited = j.nq == 1 and np.isfinite(lo) and np.isfinite(hi) and lo < hi
        assert bool(m.jnt_limited[m.joint(n).id]) == limited, n
        if limited:
            np.testing.assert_array_equal(m.jnt_range[m.joint(n).id], [lo, hi])
    # each <mimic> of the file is a joint equality q = offset + multiplier q_master
    mimics = {}
    for e in ET.parse(path).getroot().iterfind("joint"):
        mi = e.find("mimic")
        if mi is not None and e.get("name") in names and mi.get("joint") in names:
            mimics[e.get("name")] = (mi.get("joint"), float(mi.get("multiplier", 1.0)),
                                     float(mi.get("offset", 0.0)))
    found = {}
    for k in range(m.neq):
        if m.eq_type[k] == mujoco.mjtEq.mjEQ_JOINT:
            j1, j2 = m.joint(m.eq_obj1id[k]).name, m.joint(m.eq_obj2id[k]).name
            found[j1] = (j2, m.eq_data[k][1], m.eq_data[k][0])
    assert found == mimics


def test_urdf_export_round_trip(robot):
    path, pm = robot
    mech, _ = load_kic(kic.Mechanism.from_urdf, path)
    back = pin.buildModelFromXML(to_urdf(mech))
    names = list(pm.names[1:])
    assert list(back.names[1:]) == names or sorted(back.names[1:]) == sorted(names)
    order = np.array([back.joints[back.getJointId(n)].idx_v for n in names])
    phi = np.random.default_rng(7).uniform(-1.5, 1.5, len(names))
    M0 = sym(pin.crba(pm, pm.createData(), pin_configuration(pm, names, phi)))
    M1 = sym(pin.crba(back, back.createData(), pin_configuration(back, names, phi)))
    close(M1[np.ix_(order, order)], M0, "crba of the export")
    links = {e.get("name") for e in ET.parse(path).getroot().iterfind("link")}
    assert links <= {f.name for f in back.frames}
