"""Design sensitivities (kic.sensitivity) against central finite differences of
rebuilt models: the joint origin moved by +-h in a freshly built description,
the body's mass (and its inertia in proportion) changed by +-h."""
import numpy as np
import pytest

import kic
import mechanisms
from helpers import random_chain as make_chain, rel_err

pytestmark = pytest.mark.usefixtures("each_backend")

H_LEN, H_MASS = 1e-5, 1e-4


def shifted(T, d, h):
    T = np.array(T, float)
    T[:3, 3] += h * np.asarray(d, float)
    return T


def unit(d):
    d = np.asarray(d, float)
    return d / np.linalg.norm(d)


def scaled_link(link, h):
    m = link.mass + h
    return kic.Link(m, link.com, link.inertia * (m / link.mass), name=link.name,
                    check_triangle=False)


def moved_centroid(link, d, h):
    return kic.Link(link.mass, link.com + h * np.asarray(d, float), link.inertia, name=link.name,
                    check_triangle=False)


def added_inertia(link, S, h):
    return kic.Link(link.mass, link.com, link.inertia + h * S, name=link.name,
                    check_triangle=False)


def close(a, b, rtol=1e-7, floor=1e-12):
    """|a - b| <= rtol * max|b| (or rtol * floor where the derivative vanishes)."""
    err = rel_err(a, b, floor, ord=np.inf)
    assert err < rtol, f"relative error {err:.2e} (scale {max(np.abs(b).max(), floor):.3g})"
    return err


def quantities(model, q, qd, qdd, actuators=None):
    dyn = model.dynamics(q)
    out = [dyn.I_star, dyn.gravity_load, model.inverse_dynamics(q, qd, qdd)]
    if actuators is not None:
        out.append(model.actuator_loads(q, qd, qdd, actuators))
    return out


def check_against(s, build, perturb, q, qd, qdd, actuators=None, h_len=H_LEN):
    """Compare each column of s with central differences of rebuilt models
    (truncation error ~ h^2: ~1e-9 relative at h = 1e-5 m for these sizes)."""
    for k, name in enumerate(s.parameters):
        h = h_len if name.startswith(("length", "centroid")) or ":" not in name else H_MASS
        plus = quantities(build(**perturb(name, h)), q, qd, qdd, actuators)
        minus = quantities(build(**perturb(name, -h)), q, qd, qdd, actuators)
        fd = [(a - b) / (2 * h) for a, b in zip(plus, minus)]
        nominal = [np.abs(a + b).max() / 2 for a, b in zip(plus, minus)]
        got = [s.inertia[..., k], s.gravity_load[..., k], s.loads[..., k]]
        if actuators is not None:
            got.append(s.actuator_loads[..., k])
        for what, a, b, v in zip(("I*", "gravity", "loads", "actuators"), got, fd, nominal):
            try:
                close(a, b, floor=1e-3 * v)
            except AssertionError as exc:
                raise AssertionError(f"{name}, d{what}/dp: {exc}") from None


# ---------------------------------------------------------------- serial chain
@pytest.mark.parametrize("seed, kinds, offsets", [(20240611, "RPRR", None), (7, "PRRP", True),
                                                 (11, "RRPR", False)])
def test_serial_chain_against_rebuilt_chains(seed, kinds, offsets):
    rng = np.random.default_rng(seed)
    chain = make_chain(rng, 4, kinds=kinds, offsets=offsets)
    names = chain.joint_names
    d2 = rng.normal(size=3)
    params = [kic.Length(names[1]), kic.Length(names[2], direction=d2, name="j3 along d2"),
              kic.Length(names[0], direction=(0, 0, 1)),
              kic.Mass(chain.link_names[2]), kic.Mass(chain.link_names[3]),
              kic.Centroid(chain.link_names[1], direction=(0.2, -1.0, 0.5)),
              kic.Inertia(chain.link_names[3]),
              kic.Inertia(chain.link_names[0], tensor=[[2, 1, 0], [1, 3, 0], [0, 0, 1]])]
    q = rng.uniform(-1, 1, (3, 4))
    qd, qdd = rng.normal(size=(3, 4)), rng.normal(size=(3, 4))
    s = kic.sensitivities(chain, params, q, qd, qdd)
    assert s.inertia.shape == (3, 4, 4, 8) and s.actuator_loads.shape == (3, 4, 8)
    assert np.allclose(s.actuator_loads, s.loads)
    assert np.allclose(s.I_star, chain.dynamics(q).I_star)
    assert np.allclose(s.T, chain.inverse_dynamics(q, qd, qdd))
    where = {"length:" + names[1]: (1, unit(chain.joints[1].origin[:3, 3])),
             "j3 along d2": (2, unit(d2)), "length:" + names[0]: (0, unit((0, 0, 1)))}

    def build(joint=None, d=None, h=0.0, link=None, change=scaled_link):
        joints = list(chain.joints)
        links = list(chain.links)
        if joint is not None:
            J = joints[joint]
            joints[joint] = kic.Joint(J.kind, J.axis, shifted(J.origin, d, h), name=J.name)
        if link is not None:
            links[link] = change(links[link], h)
        return kic.SerialChain(joints, links, gravity=chain.gravity, base=chain.base,
                               tool=chain.tool, frame_offsets=chain.frame_offsets)

    tensor = {chain.link_names[3]: chain.links[3].inertia,
              chain.link_names[0]: np.array([[2, 1, 0], [1, 3, 0], [0, 0, 1.0]])}

    def perturb(name, h):
        kind, _, body = name.partition(":")
        if kind == "mass":
            return dict(link=chain.link_names.index(body), h=h)
        if kind == "centroid":
            return dict(link=chain.link_names.index(body), h=h,
                        change=lambda l, h: moved_centroid(l, unit((0.2, -1.0, 0.5)), h))
        if kind == "inertia":
            return dict(link=chain.link_names.index(body), h=h,
                        change=lambda l, h: added_inertia(l, tensor[body], h))
        j, d = where[name]
        return dict(joint=j, d=d, h=h)

    check_against(s, build, perturb, q, qd, qdd)


# -------------------------------------------------------------------- five-bar
FIVE = dict(base=0.2, l1=0.25, l2=0.27, k1=0.35, k2=0.33)


def rod(m, L):
    return dict(mass=m, com=(L / 2, 0, 0), inertia=np.diag([0, m * L * L / 12, m * L * L / 12]))


def T(x=0.0, y=0.0):
    out = np.eye(4)
    out[:2, 3] = x, y
    return out


def five_bar_mechanism(shift=None, mass=None, change=None, reverse=False):
    """The five-bar of mechanisms.five_bar, built here; ``shift = (joint, side, d, h)``
    moves one joint frame, ``mass = (body, h)`` changes one body's mass, ``change =
    (body, fn)`` its link; ``reverse``: elbow1 added from coupler1 to crank1, so that
    the spanning tree runs it from child to parent (and crank 1's length is where it
    sits on its child)."""
    g = FIVE
    mech = kic.Mechanism(gravity=(0, -9.81, 0))
    bodies = {"crank1": rod(1.0, g["l1"]), "crank2": rod(1.1, g["l2"]),
              "coupler1": rod(0.8, g["k1"]), "coupler2": rod(0.7, g["k2"])}
    for name, data in bodies.items():
        link = kic.Link(name=name, check_triangle=False, **data)
        if mass is not None and mass[0] == name:
            link = scaled_link(link, mass[1])
        if change is not None and change[0] == name:
            link = change[1](link)
        mech.add_body(name, link=link)
    origins = {"crank1": (T(), T()), "crank2": (T(g["base"]), T()),
               "elbow1": (T(), T(g["l1"])) if reverse else (T(g["l1"]), T()),
               "elbow2": (T(g["l2"]), T()), "tip": (T(g["k1"]), T(g["k2"]))}
    if shift is not None:
        joint, side, d, h = shift
        O, C = origins[joint]
        origins[joint] = (shifted(O, d, h), C) if side == "parent" else (O, shifted(C, d, h))
    for j, (parent, child) in {"crank1": ("ground", "crank1"), "crank2": ("ground", "crank2"),
                               "elbow1": ("coupler1", "crank1") if reverse
                               else ("crank1", "coupler1"),
                               "elbow2": ("crank2", "coupler2"),
                               "tip": ("coupler1", "coupler2")}.items():
        mech.add_joint(j, "R", parent, child, origin=origins[j][0],
                       child_origin=origins[j][1])
    return mech


REFERENCE = None


def five_bar_model(coordinates="cranks", **kw):
    global REFERENCE
    if REFERENCE is None:
        ref = mechanisms.five_bar(base=FIVE["base"], crank1=FIVE["l1"], crank2=FIVE["l2"],
                                  coupler1=FIVE["k1"], coupler2=FIVE["k2"])
        REFERENCE = dict(zip(ref.phi_names, ref.reference_phi))
    mech = five_bar_mechanism(**kw)
    if coordinates == "cranks":
        ref = dict(REFERENCE)
        if kw.get("reverse"):
            ref["elbow1"] = -ref["elbow1"]
        return mech.model(["crank1", "crank2"], reference=ref)
    tip = mech.model([kic.PointPosition("coupler1", (FIVE["k1"], 0, 0), prefix="tip.")],
                     reference=REFERENCE)
    tip.actuators = ["crank1", "crank2"]
    return tip


FIVE_PARAMS = [kic.Length("elbow1"), kic.Length("tip", side="child"),
               kic.Length("crank2", direction=(1, 0, 0), name="base"),
               kic.Length("elbow2", direction=(0.3, 1.0, 0.0)),
               kic.Length("tip", direction=(0, 1, 0), name="tip offset"),
               kic.Mass("crank1"), kic.Mass("coupler2"), kic.Centroid("coupler1"),
               kic.Centroid("crank2", direction=(0, 1, 0)), kic.Inertia("coupler1")]
FIVE_SHIFTS = {"length:elbow1": ("elbow1", "parent", (1, 0, 0)),
               "length:tip:child": ("tip", "child", (1, 0, 0)),
               "base": ("crank2", "parent", (1, 0, 0)),
               "length:elbow2": ("elbow2", "parent", unit((0.3, 1.0, 0.0))),
               "tip offset": ("tip", "parent", (0, 1, 0))}


def five_bar_perturb(name, h):
    if name.startswith("mass:"):
        return dict(mass=(name[5:], h))
    if name == "centroid:coupler1":
        return dict(change=("coupler1", lambda l: moved_centroid(l, unit(l.com), h)))
    if name == "centroid:crank2":
        return dict(change=("crank2", lambda l: moved_centroid(l, (0, 1, 0), h)))
    if name == "inertia:coupler1":
        return dict(change=("coupler1", lambda l: added_inertia(l, l.inertia, h)))
    joint, side, d = FIVE_SHIFTS[name]
    return dict(shift=(joint, side, d, h))


def test_five_bar_in_crank_coordinates_against_rebuilt_models():
    model = five_bar_model()
    q0 = model.reference
    q = q0 + np.array([[0.0, 0.0], [0.15, -0.1], [-0.1, 0.12], [0.05, 0.2]])
    rng = np.random.default_rng(5)
    qd, qdd = rng.normal(size=q.shape), rng.normal(size=q.shape)
    s = kic.sensitivities(model, FIVE_PARAMS, q, qd, qdd)
    assert s.actuators == ("crank1", "crank2")
    assert np.allclose(s.tau, model.actuator_loads(q, qd, qdd, ["crank1", "crank2"]))
    check_against(s, five_bar_model, five_bar_perturb, q, qd, qdd,
                  actuators=["crank1", "crank2"])


def test_a_joint_the_tree_runs_from_child_to_parent():
    model = five_bar_model(reverse=True)
    assert np.allclose(model.dynamics(model.reference).I_star,
                       five_bar_model().dynamics(model.reference).I_star)
    q = model.reference + np.array([[0.0, 0.0], [0.1, -0.15]])
    qd, qdd = np.array([0.5, -0.8]), np.array([1.5, 0.4])
    params = [kic.Length("elbow1", side="child"), kic.Length("elbow1", direction=(0, 1, 0)),
              kic.Mass("coupler1")]
    s = kic.sensitivities(model, params, q, qd, qdd)

    def perturb(name, h):
        if name.startswith("mass:"):
            return dict(mass=(name[5:], h), reverse=True)
        side, d = ("child", (1, 0, 0)) if name.endswith(":child") else ("parent", (0, 1, 0))
        return dict(shift=("elbow1", side, d, h), reverse=True)

    check_against(s, five_bar_model, perturb, q, qd, qdd, actuators=["crank1", "crank2"])
    crank = kic.sensitivities(five_bar_model(), [kic.Length("elbow1")], q, qd, qdd)
    np.testing.assert_allclose(s.actuator_loads[..., 0], crank.actuator_loads[..., 0],
                               rtol=1e-10, atol=1e-12)


def test_five_bar_actuator_loads_in_tip_coordinates():
    """Coordinates that are not the actuators: d(G^a_q)/dp enters dtau/dp."""
    model = five_bar_model("tip")
    crank = five_bar_model()
    cranks = crank.reference + np.array([[0.0, 0.0], [0.1, -0.12]])
    F = crank.kinematics(cranks, 1).frame("coupler1")
    q = F[:, :2, 3] + F[:, :2, 0] * FIVE["k1"]                 # the tip C (m)
    qd, qdd = np.array([[0.3, -0.2], [-0.1, 0.25]]), np.array([[1.0, 0.5], [-0.4, 0.8]])
    s = kic.sensitivities(model, FIVE_PARAMS[:2] + FIVE_PARAMS[3:4] + FIVE_PARAMS[5:6]
                          + FIVE_PARAMS[7:8], q, qd, qdd)
    assert s.actuators == ("crank1", "crank2")
    check_against(s, lambda **kw: five_bar_model("tip", **kw), five_bar_perturb, q, qd, qdd,
                  actuators=["crank1", "crank2"], h_len=2e-6)


# ------------------------------------------------------------ Stewart platform
STEWART = mechanisms.stewart_platform()


def stewart_mechanism(shift=None, mass=None):
    """The platform of mechanisms.stewart_platform(), built here from its anchors
    and bodies; ``shift`` and ``mass`` as for the five-bar."""
    B, P = STEWART.anchors
    nominal = STEWART.mechanism
    mech = kic.Mechanism(gravity=nominal.gravity)
    for body in ["platform"] + [f"leg{i}.{p}" for i in range(6) for p in ("cyl", "rod")]:
        link = nominal.graph.nodes[body]["link"]
        if mass is not None and mass[0] == body:
            link = scaled_link(link, mass[1])
        mech.add_body(body, link=link)
    origins = {}
    for i in range(6):
        origins[f"leg{i}.u"] = (T(*B[i][:2]), np.eye(4))
        origins[f"leg{i}.p"] = (np.eye(4), np.eye(4))
        origins[f"leg{i}.s"] = (np.eye(4), T(*P[i][:2]))
    if shift is not None:
        joint, side, d, h = shift
        O, C = origins[joint]
        origins[joint] = (shifted(O, d, h), C) if side == "parent" else (O, shifted(C, d, h))
    for i in range(6):
        u, p, s = (f"leg{i}.{k}" for k in "ups")
        mech.add_joint(u, "U", "ground", f"leg{i}.cyl", origin=origins[u][0],
                       axes=[(1, 0, 0), (0, 1, 0)])
        mech.add_joint(p, "P", f"leg{i}.cyl", f"leg{i}.rod", axis=(0, 0, 1),
                       origin=origins[p][0])
        mech.add_joint(s, "S", f"leg{i}.rod", "platform", origin=origins[s][0],
                       child_origin=origins[s][1])
    return mech


def stewart_model(**kw):
    physical = set(STEWART.mechanism.primitive_joints)
    ref = {n: v for n, v in zip(STEWART.phi_names, STEWART.reference_phi) if n in physical}
    model = stewart_mechanism(**kw).model([kic.BodyPose("platform")], reference=ref)
    model.actuators = [f"leg{i}.p" for i in range(6)]
    return model


STEWART_PARAMS = [kic.Length("leg0.u"), kic.Length("leg2.s", side="child"),
                  kic.Length("leg4.p", direction=(1, 0, 0)),
                  kic.Mass("platform"), kic.Mass("leg1.rod")]


def stewart_perturb(name, h):
    B, P = STEWART.anchors
    if name.startswith("mass:"):
        return dict(mass=(name[5:], h))
    return dict(shift={"length:leg0.u": ("leg0.u", "parent", unit(B[0])),
                       "length:leg2.s:child": ("leg2.s", "child", unit(P[2])),
                       "length:leg4.p": ("leg4.p", "parent", (1, 0, 0))}[name] + (h,))


def test_stewart_platform_leg_forces_against_rebuilt_models():
    model = stewart_model()
    q = model.reference + np.array([[0.01, -0.02, 0.03, 0.05, -0.04, 0.02],
                                    [-0.02, 0.01, -0.02, -0.03, 0.06, -0.05]])
    qd = np.array([[0.1, -0.2, 0.05, 0.3, -0.1, 0.2], [0.0, 0.1, -0.1, 0.1, 0.2, -0.3]])
    qdd = np.array([[0.5, 0.2, -0.3, 0.4, 0.1, -0.6], [-0.2, 0.3, 0.6, -0.1, 0.5, 0.2]])
    s = kic.sensitivities(model, STEWART_PARAMS, q, qd, qdd)
    assert s.actuators == tuple(model.actuators)
    assert s.actuator_loads.shape == (2, 6, 5)
    check_against(s, stewart_model, stewart_perturb, q, qd, qdd, actuators=model.actuators)


# ------------------------------------------------------- batches, open mechanisms
def test_batch_equals_single_pose():
    model = five_bar_model()
    q = model.reference + np.array([[[0.0, 0.0], [0.1, -0.1]], [[-0.1, 0.05], [0.05, 0.1]]])
    qd = np.array([0.4, -0.3])                      # broadcast over the batch
    qdd = np.ones(q.shape)
    sens = kic.DesignSensitivity(model, FIVE_PARAMS)
    s = sens(q, qd, qdd)
    assert s.inertia.shape == (2, 2, 2, 2, 10) and s.actuator_loads.shape == (2, 2, 2, 10)
    for i in range(2):
        for j in range(2):
            one = sens(q[i, j], qd, qdd[i, j])
            assert one.inertia.shape == (2, 2, 10)
            for a, b in ((s.inertia[i, j], one.inertia), (s.gravity_load[i, j], one.gravity_load),
                         (s.loads[i, j], one.loads), (s.actuator_loads[i, j], one.actuator_loads),
                         (s.T[i, j], one.T)):
                np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_open_mechanism_equals_serial_chain():
    """A kic.Mechanism without loops gives the same derivatives as the serial chain."""
    L1, L2 = 0.5, 0.4
    mech = kic.Mechanism(gravity=(0, -9.81, 0))
    mech.add_body("upper", **rod(2.0, L1))
    mech.add_body("fore", **rod(1.5, L2))
    mech.add_joint("shoulder", "R", "ground", "upper")
    mech.add_joint("elbow", "R", "upper", "fore", origin=T(L1))
    model = mech.model(["shoulder", "elbow"])
    chain = kic.SerialChain(
        [kic.Joint("R", name="shoulder"), kic.Joint("R", origin=T(L1), name="elbow")],
        [kic.Link(name="upper", **rod(2.0, L1)), kic.Link(name="fore", **rod(1.5, L2))],
        gravity=(0, -9.81, 0))
    params = [kic.Length("elbow"), kic.Mass("fore"), kic.Mass("upper")]
    q, qd, qdd = [[0.3, 0.8], [1.0, -0.4]], [0.5, -1.0], [[1.0, 2.0], [0.0, -1.0]]
    a = kic.sensitivities(model, params, q, qd, qdd)
    b = kic.sensitivities(chain, params, q, qd, qdd)
    for x, y in ((a.inertia, b.inertia), (a.gravity_load, b.gravity_load),
                 (a.loads, b.loads), (a.actuator_loads, b.actuator_loads)):
        np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12)
    # a lengthened upper arm: I*_11 grows by d/dL1 (m_fore |r_fore|^2) at the pose
    s = kic.sensitivities(chain, [kic.Length("elbow")], [0.0, 0.0])
    assert s.inertia[0, 0, 0] == pytest.approx(2 * 1.5 * (L1 + L2 / 2), rel=1e-12)
    assert s.gravity_load[0, 0] == pytest.approx(1.5 * 9.81, rel=1e-12)


def test_errors_name_the_part_at_fault():
    model = five_bar_model()
    with pytest.raises(kic.ModelError, match="unknown joint 'elbow9'"):
        kic.DesignSensitivity(model, [kic.Length("elbow9")])
    with pytest.raises(kic.ModelError, match="unknown body 'wheel'"):
        kic.DesignSensitivity(model, [kic.Mass("wheel")])
    with pytest.raises(kic.ModelError, match="length:crank1.*give a direction"):
        kic.DesignSensitivity(model, [kic.Length("crank1")])
    with pytest.raises(kic.ModelError, match="length:elbow1.*direction .* is zero"):
        kic.DesignSensitivity(model, [kic.Length("elbow1", direction=(0, 0, 0))])
    with pytest.raises(kic.ModelError, match="length:elbow1.*3 finite numbers"):
        kic.DesignSensitivity(model, [kic.Length("elbow1", direction=(1, 0))])
    with pytest.raises(kic.ModelError, match="side must be"):
        kic.DesignSensitivity(model, [kic.Length("elbow1", side="left")])
    with pytest.raises(kic.ModelError, match="repeated design parameters"):
        kic.DesignSensitivity(model, [kic.Mass("crank1"), kic.Mass("crank1")])
    with pytest.raises(kic.ModelError, match="parameter 0 must be kic.Length, kic.Mass"):
        kic.DesignSensitivity(model, ["elbow1"])
    with pytest.raises(kic.ModelError, match="inertia:crank1: tensor must be a finite symm"):
        kic.DesignSensitivity(model, [kic.Inertia("crank1", tensor=[[1, 2, 0], [0, 1, 0],
                                                                     [0, 0, 1]])])
    with pytest.raises(kic.ModelError, match="unknown body 'ground'"):
        kic.DesignSensitivity(model, [kic.Centroid("ground", direction=(1, 0, 0))])
    with pytest.raises(kic.ModelError, match="centroid:crank1: direction must be 3"):
        kic.DesignSensitivity(model, [kic.Centroid("crank1", direction="up")])
    with pytest.raises(kic.ModelError, match="unknown actuated joints"):
        kic.sensitivities(model, [kic.Mass("crank1")], model.reference, actuators=["x", "y"])
    with pytest.raises(kic.ModelError, match="q must have shape"):
        kic.sensitivities(model, [kic.Mass("crank1")], [0.0, 0.0, 0.0])
    chain = mechanisms.planar_two_link()
    with pytest.raises(kic.ModelError, match="no child side"):
        kic.DesignSensitivity(chain, [kic.Length(chain.joint_names[1], side="child")])
    with pytest.raises(kic.ModelError, match="unknown link 'hand'"):
        kic.DesignSensitivity(chain, [kic.Mass("hand")])
    with pytest.raises(kic.ModelError, match="kic.SerialChain or kic.ClosedModel"):
        kic.DesignSensitivity(five_bar_mechanism(), [kic.Mass("crank1")])


def test_a_pose_that_fails_is_reported_with_its_index():
    model = five_bar_model()
    q = np.stack([model.reference, [np.pi, 0.0]])      # elbows 0.72 m apart > 0.68 m
    with pytest.raises(kic.ClosureError) as err:
        kic.sensitivities(model, [kic.Length("elbow1")], q)
    assert err.value.index == (1,)


def test_subsets_of_parameters_and_static_loads_agree():
    """Columns do not depend on which other parameters are asked for (body parameters
    alone take another path), and at rest the loads are the gravity loads."""
    model = five_bar_model("tip")
    q = np.array([[0.08, 0.5], [0.12, 0.48]])
    qd, qdd = np.array([0.3, -0.2]), np.array([1.0, 0.5])
    full = kic.sensitivities(model, FIVE_PARAMS, q, qd, qdd)
    bodies = [p for p in FIVE_PARAMS if not isinstance(p, kic.Length)]
    alone = kic.sensitivities(model, bodies, q, qd, qdd)
    cols = [full.parameters.index(n) for n in alone.parameters]
    for a, b in ((full.inertia, alone.inertia), (full.loads, alone.loads),
                 (full.gravity_load, alone.gravity_load),
                 (full.actuator_loads, alone.actuator_loads)):
        np.testing.assert_allclose(a[..., cols], b, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(full.tau, alone.tau, rtol=1e-12)
    rest = kic.sensitivities(model, FIVE_PARAMS, q)
    np.testing.assert_allclose(rest.loads, rest.gravity_load, rtol=1e-12)
    np.testing.assert_allclose(rest.T, model.gravity_load(q), rtol=1e-10)
    np.testing.assert_allclose(rest.gravity_load, full.gravity_load, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(rest.inertia, full.inertia, rtol=1e-10, atol=1e-12)


def test_a_coordinate_function_model():
    """Coordinates (crank1, crank2 - crank1): the augmented model keeps the function."""
    def spread(phi):
        n = phi.shape[0]
        return (phi[:, 1] - phi[:, 0], np.broadcast_to([-1.0, 1.0], (n, 2)),
                np.zeros((n, 2, 2)), np.zeros((n, 2, 2, 2)))

    def build(**kw):
        five_bar_model()                                     # sets REFERENCE
        return five_bar_mechanism(**kw).model(
            ["crank1", kic.CoordinateFunction("spread", ["crank1", "crank2"], spread)],
            reference=REFERENCE)

    model = build()
    q = model.reference + np.array([[0.0, 0.0], [0.1, -0.05]])
    qd, qdd = np.array([0.3, 0.2]), np.array([0.5, -0.4])
    params = [kic.Length("elbow1"), kic.Length("tip", side="child"), kic.Mass("coupler1")]
    s = kic.sensitivities(model, params, q, qd, qdd, actuators=["crank1", "crank2"])
    check_against(s, build, five_bar_perturb, q, qd, qdd, actuators=["crank1", "crank2"])


# ------------------------------------------------- redundant actuation, failures
def test_redundant_actuation_against_rebuilt_models():
    """Three actuators on a two-degree-of-freedom five-bar: the least-norm loads of
    the model and their derivatives (dG^a/dp enters twice) against rebuilt models."""
    model = five_bar_model()
    acts = ["crank1", "crank2", "elbow1"]
    q = model.reference + np.array([[0.0, 0.0], [0.12, -0.08]])
    qd, qdd = np.array([[0.4, -0.3], [-0.2, 0.5]]), np.array([[1.2, 0.3], [-0.6, 0.9]])
    params = FIVE_PARAMS[:2] + FIVE_PARAMS[3:4] + FIVE_PARAMS[5:6] + FIVE_PARAMS[7:8]
    s = kic.sensitivities(model, params, q, qd, qdd, actuators=acts)
    assert s.actuators == tuple(acts) and s.actuator_loads.shape == (2, 3, 5)
    close(s.tau, model.actuator_loads(q, qd, qdd, acts), rtol=1e-12)
    # least norm: tau is in the range of G^a (the minimum-norm solution of G^T tau = T)
    G = model.kinematics(q, 1).transfer.G[:, [model.phi_names.index(a) for a in acts]]
    lam = np.linalg.lstsq(G[0], s.tau[0], rcond=None)[0]
    close(G[0] @ lam, s.tau[0], rtol=1e-12)
    check_against(s, five_bar_model, five_bar_perturb, q, qd, qdd, actuators=acts)
    with pytest.raises(kic.ModelError, match="at least 2 distinct actuated joints"):
        kic.sensitivities(model, params, q, actuators=["crank1"])


def test_failures_as_data():
    """on_failure="nan": a state the model cannot evaluate is NaN with the model's
    status, the others are the numbers of a call without it; a singular
    actuation (a Stewart design with equal half-angles) keeps I* and the loads."""
    model = five_bar_model()
    q = np.stack([model.reference, [np.pi, 0.0], model.reference + [0.1, -0.1],
                  [np.pi + 0.3, -0.3]])
    params = [kic.Length("elbow1"), kic.Mass("coupler1")]
    s = kic.sensitivities(model, params, q, on_failure="nan")
    expected = np.asarray(model.inverse_dynamics(q, 0 * q, 0 * q, on_failure="nan")[1])
    assert np.array_equal(s.status, expected) and np.count_nonzero(expected) == 2
    good = expected == 0
    one = kic.sensitivities(model, params, q[good])
    assert np.all(one.status == 0)
    for a, b in ((s.inertia, one.inertia), (s.loads, one.loads),
                 (s.actuator_loads, one.actuator_loads), (s.tau, one.tau)):
        assert np.array_equal(a[good], b) and np.all(np.isnan(a[~good]))
    with pytest.raises(kic.ModelError, match="on_failure"):
        kic.sensitivities(model, params, q, on_failure="skip")

    sp = mechanisms.stewart_platform(base_half_angle=0.3, plat_half_angle=0.3)
    pose = sp.reference + np.array([[0.0] * 6, [0.01, 0.0, 0.02, 0.0, 0.03, 0.0]])
    with pytest.raises(kic.SingularityError):
        kic.sensitivities(sp, [kic.Mass("platform")], pose)
    s = kic.sensitivities(sp, [kic.Mass("platform")], pose, on_failure="nan")
    assert np.all(s.status == kic.Status.SINGULAR_LOAD)
    assert np.all(np.isnan(s.tau)) and np.all(np.isnan(s.actuator_loads))
    ref = kic.sensitivities(sp, [kic.Mass("platform")], pose, actuators=())
    assert np.array_equal(s.inertia, ref.inertia) and np.array_equal(s.loads, ref.loads)
