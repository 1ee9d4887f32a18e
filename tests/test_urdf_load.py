"""How URDF files are read: their declared encodings, and the fast checks the loader
makes (rigid origins, inertias) against the rules they stand for; the models loaded
from the example-robot-data collection against a reference of the loader before its
speed-up (tests/data/robot_files_reference.json).

The reference holds, for each robot file (by CRC-32 of its bytes), projections of I*,
the gravity load and inverse dynamics at one state onto fixed random vectors, from
``Mechanism.from_urdf`` of kic 0a34798 (before the loader computed in Python floats).
Regenerate it after an intended change of the numbers with
``python tests/test_urdf_load.py --write-reference`` from the repository root.
"""
from __future__ import annotations

import json
import sys
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import kic
from helpers import robots_dir, within_ranges
from kic.chain import check_rigid, inertia_defects, inertia_scale
from kic.io import RepairWarning
from kic.settings import INERTIA_RTOL, RIGID_RTOL

DATA = Path(__file__).resolve().parent / "data"
REFERENCE = DATA / "robot_files_reference.json"

# a two-link arm with Latin-1 names (an accented shoulder, a sharp s, an umlaut)
ARM = """<?xml version="1.0" encoding="{enc}"?>
<robot name="bras">
  <link name="socle"/>
  <link name="\u00e9paule_lien">
    <inertial><mass value="1.5"/><origin xyz="0.1 0 0" rpy="0.1 0.2 0.3"/>
      <inertia ixx="0.01" iyy="0.02" izz="0.02" ixy="0.001" ixz="0" iyz="0"/></inertial>
  </link>
  <link name="coude_\u00e4">
    <inertial><mass value="1.0"/><origin xyz="0.2 0 0"/>
      <inertia ixx="0.01" iyy="0.03" izz="0.03" ixy="0" ixz="0" iyz="0"/></inertial>
  </link>
  <joint name="\u00e9paule" type="revolute">
    <parent link="socle"/><child link="\u00e9paule_lien"/><axis xyz="0 0 1"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
  <joint name="coude_\u00df" type="revolute">
    <parent link="\u00e9paule_lien"/><child link="coude_\u00e4"/>
    <origin xyz="0.3 0 0" rpy="0 0.4 0"/><axis xyz="0 1 0"/>
    <limit lower="-1" upper="1" effort="1" velocity="1"/>
  </joint>
</robot>
"""
NAMES = ["\u00e9paule", "coude_\u00df"]


def _written(tmp_path, name, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def test_a_declared_latin1_file_loads_with_its_names(tmp_path):
    latin1 = _written(tmp_path, "bras.urdf", ARM.format(enc="ISO-8859-1").encode("latin-1"))
    utf8 = _written(tmp_path, "bras8.urdf", ARM.format(enc="UTF-8").encode("utf-8"))
    assert open(latin1, "rb").read() != open(utf8, "rb").read()
    chain = kic.SerialChain.from_urdf(latin1)
    assert list(chain.joint_names) == NAMES
    assert list(chain.link_names) == ["\u00e9paule_lien", "coude_\u00e4"]
    mech = kic.Mechanism.from_urdf(latin1)
    assert mech.primitive_joints == NAMES
    # the same robot written in UTF-8 is the same model, to the bit
    q = np.array([[0.3, -0.7], [1.1, 0.2]])
    same = kic.SerialChain.from_urdf(utf8).dynamics(q).I_star
    np.testing.assert_array_equal(chain.dynamics(q).I_star, same)
    # and bytes are decoded by their declaration too
    again = kic.SerialChain.from_urdf(ARM.format(enc="latin-1").encode("latin-1"))
    np.testing.assert_array_equal(again.dynamics(q).I_star, same)


def test_a_byte_order_mark_says_utf16(tmp_path):
    path = _written(tmp_path, "bras16.urdf", ARM.format(enc="UTF-16").encode("utf-16"))
    assert kic.Mechanism.from_urdf(path).primitive_joints == NAMES


def test_pinocchio_loads_the_latin1_file_to_the_same_inertia(tmp_path):
    pin = pytest.importorskip("pinocchio")
    path = _written(tmp_path, "bras.urdf", ARM.format(enc="ISO-8859-1").encode("latin-1"))
    pm = pin.buildModelFromUrdf(path)       # (its names keep the raw Latin-1 bytes)
    q = np.array([0.3, -0.7])
    M = pin.crba(pm, pm.createData(), q)
    I = kic.SerialChain.from_urdf(path).dynamics(q).I_star
    np.testing.assert_allclose(I, np.triu(M) + np.triu(M, 1).T, rtol=0, atol=1e-15)


@pytest.mark.parametrize("data, match", [
    (ARM.format(enc="UTF-8").encode("latin-1"), r"is not valid UTF-8 text.*byte \d+"),
    (ARM.format(enc="UTF-8").replace('<?xml version="1.0" encoding="UTF-8"?>', "")
     .encode("latin-1"), r"is not valid utf-8 text"),
    (ARM.format(enc="klingon-7").encode("latin-1"), "declares encoding 'klingon-7'"),
])
def test_an_undecodable_file_is_a_kic_error_naming_it(tmp_path, data, match):
    path = _written(tmp_path, "broken.urdf", data)
    with pytest.raises(kic.ModelError, match=match) as info:
        kic.Mechanism.from_urdf(path)
    assert "broken.urdf" in str(info.value)
    with pytest.raises(kic.ModelError, match=match):
        kic.SerialChain.from_urdf(data)


def _eigen_only(I, scale):
    """inertia_defects decided by the principal moments alone: a batch larger than the
    screened size goes straight to the eigenvalues."""
    n = len(I)
    reps = 300 // n + 1
    return inertia_defects(np.concatenate([I] * reps), np.concatenate([scale] * reps))[:n]


def test_inertia_screen_decides_as_the_principal_moments():
    rng = np.random.default_rng(20)
    tensors = []
    for _ in range(240):
        R = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        moments = np.sort(rng.uniform(0, 2, 3))
        tol = INERTIA_RTOL * 2
        kind = rng.integers(5)
        if kind == 1:       # a principal moment at the PSD bound, just inside or outside
            moments[0] = -tol * rng.choice([0.4, 0.6, 0.99, 1.01, 1.5])
        elif kind == 2:     # the triangle inequality at its bound
            moments[2] = moments[0] + moments[1] + tol * rng.choice([0.4, 0.6, 0.99, 1.01, 2])
        elif kind == 3:     # a thin rod, a point mass
            moments = np.array([0.0, 1.0, 1.0]) if rng.random() < 0.5 else np.zeros(3)
        tensors.append(R @ np.diag(moments) @ R.T * 10.0 ** rng.integers(-6, 3))
    I = np.array(tensors)
    I = 0.5 * (I + I.swapaxes(1, 2))
    scale = inertia_scale(I, np.zeros(len(I)), np.zeros((len(I), 3)))
    screened = inertia_defects(I, scale)
    assert screened == _eigen_only(I, scale)
    assert sum(map(bool, screened)) > 40            # both sides of both bounds were tried
    assert inertia_defects(I, scale, check_triangle=False) == \
        inertia_defects(np.concatenate([I] * 2), np.concatenate([scale] * 2),
                        check_triangle=False)[:len(I)]


def test_rigid_check_in_floats_is_numpys_rule():
    rng = np.random.default_rng(21)
    for k in range(300):
        T = np.eye(4)
        T[:3, :3] = np.linalg.qr(rng.normal(size=(3, 3)))[0]
        if np.linalg.det(T[:3, :3]) < 0:
            T[:3, 0] *= -1
        T[:3, 3] = rng.normal(size=3)
        size = RIGID_RTOL * rng.choice([0.1, 0.5, 2.0, 10.0])
        where = rng.integers(4)
        if where == 1:
            T[:3, :3] += size * rng.normal(size=(3, 3))
        elif where == 2:
            T[3, rng.integers(4)] += size
        elif where == 3:
            T[:3, :3] = T[:3, :3] @ np.diag([1, 1, -1])      # a reflection
        R = T[:3, :3]
        err = np.abs(R.T @ R - np.eye(3)).max()
        margin = min(abs(err - RIGID_RTOL), abs(np.abs(T[3] - (0, 0, 0, 1)).max() - RIGID_RTOL))
        if margin < 1e-6 * RIGID_RTOL:
            continue                                        # on the bound: either answer
        rigid = err <= RIGID_RTOL and np.linalg.det(R) >= 0 and \
            np.abs(T[3] - (0, 0, 0, 1)).max() <= RIGID_RTOL
        if rigid:
            assert check_rigid(T, "T") is T
        else:
            with pytest.raises(kic.ModelError, match="not a rigid transform"):
                check_rigid(T, "T")
    for bad in (np.full((4, 4), np.nan), [[1, 0, 0, 0]] * 4, np.eye(3)):
        with pytest.raises(kic.ModelError):
            check_rigid(bad, "T")


# ---------------------------------------------------------------- the collection


def fingerprint(path: Path) -> dict:
    """What the reference records of one robot file (public API only, so that any kic
    version computes it)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RepairWarning)
        mech = kic.Mechanism.from_urdf(str(path))
    names = mech.primitive_joints
    model = mech.model(names)
    rng = np.random.default_rng(zlib.crc32(path.name.encode()))
    phi, qd, qdd, u, w = rng.uniform(-1.5, 1.5, (5, 1, len(names)))
    phi = within_ranges(mech.limits, names, phi, 1.5)     # the model refuses poses outside
    I = model.dynamics(phi).I_star[0]
    g = model.dynamics(phi).gravity_load[0]
    tau = model.inverse_dynamics(phi, qd, qdd)[0]
    u, w = u[0], w[0]
    return {"crc32": zlib.crc32(path.read_bytes()), "joints": list(names),
            "I_star": [float(u @ I @ w), float(np.abs(I).max())],
            "gravity": [float(u @ g), float(np.abs(g).max())],
            "inverse_dynamics": [float(u @ tau), float(np.abs(tau).max())]}


ROBOTS = robots_dir()
STORED = json.loads(REFERENCE.read_text()) if REFERENCE.exists() else {}


@pytest.mark.parametrize("name", sorted(STORED))
def test_collection_loads_as_before_the_speed_up(name):
    if ROBOTS is None:
        pytest.skip("example-robot-data is not installed")
    path = ROBOTS / name
    ref = STORED[name]
    if not path.exists() or zlib.crc32(path.read_bytes()) != ref["crc32"]:
        pytest.skip("the file differs from the one of the reference")
    now = fingerprint(path)
    assert now["joints"] == ref["joints"]
    n = len(ref["joints"])
    rng = np.random.default_rng(zlib.crc32(path.name.encode()))
    u, w = rng.uniform(-1.5, 1.5, (5, 1, n))[3:, 0]
    # |u^T (A - B) w| <= |u|_1 |w|_1 max|A - B|: the projections differ by at most what
    # entries 1e-12 (relative) apart give
    for key, weight in (("I_star", np.abs(u).sum() * np.abs(w).sum()),
                        ("gravity", np.abs(u).sum()), ("inverse_dynamics", np.abs(u).sum())):
        (p, scale), (p0, scale0) = now[key], ref[key]
        assert abs(scale - scale0) <= 1e-12 * max(1.0, scale0), key
        assert abs(p - p0) <= 1e-12 * max(1.0, scale0) * weight, key


def _write_reference() -> None:
    import pinocchio as pin
    out = {}
    for p in sorted(ROBOTS.rglob("*.urdf")):
        try:
            if pin.buildModelFromUrdf(str(p)).nv == 0:
                continue
        except Exception:                   # noqa: BLE001  (not loaded by Pinocchio)
            continue
        out[str(p.relative_to(ROBOTS))] = fingerprint(p)
    lines = [f" {json.dumps(k)}: {json.dumps(out[k], sort_keys=True)}" for k in sorted(out)]
    REFERENCE.write_text("{\n" + ",\n".join(lines) + "\n}\n")     # a line per robot
    print(f"{len(out)} robots written to {REFERENCE}")


if __name__ == "__main__" and sys.argv[1:] == ["--write-reference"]:
    _write_reference()
