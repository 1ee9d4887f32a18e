"""A reference given as a mapping: the joints it names keep their values where the
joints it does not name can close the loops; those are solved for.  (An
over-determining mapping stays a rough sketch, as docs/closed.md promises.)"""
import numpy as np
import pytest

import kic
import mechanisms
from helpers import hand_four_bar

pytestmark = pytest.mark.usefixtures("each_backend")

POSE = ["platform.x", "platform.y", "platform.z", "platform.yaw", "platform.pitch",
        "platform.roll"]


def test_stewart_reference_naming_only_the_legs_reaches_the_nominal_pose():
    """Only the six leg lengths named (the nominal 0.6635 m): the U joints and the
    platform are solved for, and the platform stands at (0, 0, 0.6 m) as the
    builder's closed-form reference does (the minimum-norm closure over all
    joints used to shorten the legs and land at z = 0.531 m)."""
    sp = mechanisms.stewart_platform()
    legs = [f"leg{i}.p" for i in range(6)]
    L0 = sp.reference_phi[sp.phi_names.index("leg0.p")]
    model = sp.mechanism.model([kic.BodyPose("platform")], reference=dict.fromkeys(legs, L0))
    phi = dict(zip(model.phi_names, model.reference_phi))
    assert all(phi[n] == L0 for n in legs)                 # held, bit for bit
    assert phi["platform.z"] == pytest.approx(0.6, abs=1e-12)
    expected = dict(zip(sp.phi_names, sp.reference_phi))
    assert np.allclose([phi[n] for n in sp.phi_names], [expected[n] for n in sp.phi_names],
                       atol=1e-12)


def test_stewart_reference_naming_every_leg_joint_solves_the_platform():
    """The legs' U angles and lengths named (benchmarks/single_pose.py's
    noguess_stewart): the platform's six joints close the loops, the legs keep
    their values."""
    sp = mechanisms.stewart_platform()
    ref = {n: float(v) for n, v in zip(sp.phi_names, sp.reference_phi)
           if n.startswith("leg")}
    model = sp.mechanism.model([kic.BodyPose("platform")], reference=ref)
    phi = dict(zip(model.phi_names, model.reference_phi))
    assert all(phi[n] == v for n, v in ref.items())
    assert np.allclose([phi[n] for n in POSE], [0, 0, 0.6, 0, 0, 0], atol=1e-12)


def test_four_bar_crank_named_alone_is_held():
    """Crank named at 1 rad: A, rocker and B are solved for; the crank stays 1 rad
    and the loop closes (the model assembles its own reference crank angle to
    its reference)."""
    model = hand_four_bar(reference={"crank": 1.0})
    assert model.reference_phi[model.phi_names.index("crank")] == 1.0
    phi = model.assemble([1.0])
    assert np.allclose(phi, model.reference_phi, atol=1e-9)


def test_a_rough_sketch_that_names_too_many_joints_still_closes():
    """docs/closed.md: a rough sketch of the configuration is enough.  Three of the
    four joints named (more than the one-DOF loop leaves free): the unnamed joint
    cannot close the loop alone, so minimum-norm steps move every joint."""
    model = hand_four_bar(reference={"crank": 1.0, "A": -0.5, "rocker": 1.3})
    phi = dict(zip(model.phi_names, model.reference_phi))
    assert phi["crank"] != 1.0 and abs(phi["crank"] - 1.0) < 0.5
    assert np.allclose(model.assemble([phi["crank"]]), model.reference_phi, atol=1e-9)


def test_reference_naming_an_unknown_joint_is_a_model_error():
    with pytest.raises(kic.ModelError, match="unknown joint 'C'"):
        hand_four_bar(reference={"crank": 1.0, "C": 0.2})
