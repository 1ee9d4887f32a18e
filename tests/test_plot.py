"""Pictures (kic.plot): what is drawn where, checked against hand geometry; animations;
workspace maps; Pareto fronts."""
import sys

import numpy as np
import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

import kic  # noqa: E402
import kic.plot as kp  # noqa: E402
import mechanisms  # noqa: E402


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def lines(ax, prefix):
    return [ln for ln in ax.lines if (ln.get_gid() or "").startswith(prefix)]


def one(ax, gid):
    found = [ln for ln in ax.lines if ln.get_gid() == gid]
    assert len(found) == 1, (gid, [ln.get_gid() for ln in ax.lines])
    return found[0]


def xy(line):
    return np.stack(line.get_data(), -1)


def xyz(line):
    return np.stack(line.get_data_3d(), -1)


def five_bar_cranks(C, base=0.2, l=0.25, k=0.35):
    """Crank angles putting the tip at C, elbows outwards (by hand)."""
    out = []
    for O, sign in ((np.zeros(2), 1.0), (np.array([base, 0.0]), -1.0)):
        d = C - O
        r = np.hypot(*d)
        out.append(np.arctan2(d[1], d[0]) + sign * np.arccos((l**2 + r**2 - k**2) / (2 * l * r)))
    return np.array(out)


def test_five_bar_drawn_in_2d_where_the_hand_geometry_puts_it():
    fb = mechanisms.five_bar()
    C = np.array([0.08, 0.42])
    q = five_bar_cranks(C)
    ax = kp.draw(fb, q, points={"C": ("coupler1", (0.35, 0, 0))})
    assert ax.name != "3d"
    assert ax.get_xlabel() == "x (m)" and ax.get_ylabel() == "y (m)"
    assert ax.get_aspect() == 1.0                                   # equal axes
    bodies = {ln.get_gid()[5:]: xy(ln) for ln in lines(ax, "body:")}
    assert sorted(bodies) == ["coupler1", "coupler2", "crank1", "crank2"]
    A1 = 0.25 * np.array([np.cos(q[0]), np.sin(q[0])])
    A2 = np.array([0.2, 0.0]) + 0.25 * np.array([np.cos(q[1]), np.sin(q[1])])
    assert np.allclose(bodies["crank1"], [[0, 0], A1], atol=1e-12)
    assert np.allclose(bodies["crank2"], [[0.2, 0], A2], atol=1e-12)
    assert np.allclose(bodies["coupler1"], [A1, C], atol=1e-9)
    assert np.allclose(bodies["coupler2"], [A2, C], atol=1e-9)
    tip = one(ax, "point:C")
    assert np.allclose(xy(tip), [C], atol=1e-9)
    pins = one(ax, "joints")                                    # elbows and the tip
    assert np.allclose(xy(pins), [A1, A2, C], atol=1e-9)
    ground = one(ax, "ground")
    assert np.allclose(xy(ground), [[0, 0], [0.2, 0]])
    hatched = [p for p in ax.patches if p.get_hatch()]
    assert len(hatched) == 2                                         # one base per pivot


def test_stewart_platform_drawn_in_3d():
    sp = mechanisms.stewart_platform()
    x = np.array([0.03, -0.02, 0.58, 0.1, 0.05, -0.04])
    ax = kp.draw(sp, x)
    assert ax.name == "3d"
    B, P = sp.anchors
    c, s = np.cos, np.sin
    yaw, pitch, roll = x[3:]
    Rz = np.array([[c(yaw), -s(yaw), 0], [s(yaw), c(yaw), 0], [0, 0, 1]])
    Ry = np.array([[c(pitch), 0, s(pitch)], [0, 1, 0], [-s(pitch), 0, c(pitch)]])
    Rx = np.array([[1, 0, 0], [0, c(roll), -s(roll)], [0, s(roll), c(roll)]])
    Pw = x[:3] + P @ (Rz @ Ry @ Rx).T                                 # platform anchors, world
    legs = lines(ax, "slide:")
    assert len(legs) == 6
    for i in range(6):
        (leg,) = lines(ax, f"slide:leg{i}.p")
        assert np.allclose(xyz(leg), [B[i], Pw[i]], atol=1e-9)     # U centre to S centre
    plate = one(ax, "body:platform")
    outline = xyz(plate)
    assert outline.shape == (7, 3) and np.allclose(outline[0], outline[-1])   # closed hexagon
    assert np.allclose(np.sort(outline[:-1], axis=0), np.sort(Pw, axis=0), atol=1e-9)
    assert len(lines(ax, "body:")) == 1                 # cylinders and rods: the strokes
    ground = one(ax, "ground")
    assert np.allclose(np.sort(xyz(ground), 0), np.sort(B, 0))
    pins = one(ax, "joints")                       # the six spherical joints
    assert np.allclose(np.sort(xyz(pins), 0), np.sort(Pw, 0), atol=1e-9)


def test_puma560_drawn_in_3d_through_its_dh_frames():
    arm = mechanisms.puma560()
    q = np.array([0.3, -0.5, 0.8, 0.2, 0.4, -0.1])
    ax = kp.draw(arm, q)
    assert ax.name == "3d"
    F = arm.frames(q)
    drawn = np.concatenate([xyz(ln) for ln in lines(ax, "body:")])
    for j in range(6):                  # every DH frame origin is a vertex of the stick figure
        assert np.min(np.linalg.norm(drawn - F[j, :3, 3], axis=1)) < 1e-12
    tool = one(ax, "point:tool")
    assert np.allclose(xyz(tool), [arm.tool_frame(q)[:3, 3]])
    assert len(lines(ax, "axis:")) == 6
    # standard DH: joint j + 1 turns about z of frame j, so its axis line lies on it
    for j in range(1, 6):
        (axis,) = lines(ax, f"axis:{arm.joint_names[j]}")
        ends = xyz(axis) - F[j - 1, :3, 3]
        assert np.allclose(np.cross(ends, F[j - 1, :3, 2]), 0, atol=1e-12)
    ground = one(ax, "ground")
    assert np.allclose(xyz(ground), [arm.base[:3, 3]])


def test_slider_crank_in_2d_slider_block_on_its_guide():
    sc = mechanisms.slider_crank(crank=0.1, rod=0.3)
    th = 0.8
    ax = kp.draw(sc, [th])
    assert ax.name != "3d"
    A = 0.1 * np.array([np.cos(th), np.sin(th)])
    xB = A[0] + np.sqrt(0.3**2 - A[1]**2)                       # by hand, no offset
    assert np.allclose(xy(one(ax, "body:crank")), [[0, 0], A], atol=1e-12)
    assert np.allclose(xy(one(ax, "body:rod")), [A, [xB, 0]], atol=1e-9)
    assert np.allclose(xy(one(ax, "slide:slide")), [[0, 0], [xB, 0]], atol=1e-9)
    assert np.allclose(xy(one(ax, "slider:slide")), [[xB, 0]], atol=1e-9)
    assert np.allclose(xy(one(ax, "ground")), [[0, 0]])          # the crank pivot only
    assert np.allclose(xy(one(ax, "joints")), [A, [xB, 0]], atol=1e-9)


def test_own_mechanism_ternary_bar_and_a_body_on_one_joint():
    """A four-bar whose coupler carries a third joint E on the line A-B, with an arm
    on E: the coupler is one bar A-B-E, the arm a line from E to its centroid."""
    def T(x=0.0):
        M = np.eye(4)
        M[0, 3] = x
        return M
    mech = kic.Mechanism(gravity=(0, -9.81, 0))
    for b in ("crank", "coupler", "rocker", "arm"):
        mech.add_body(b, mass=1.0, com=(0.05, 0, 0))
    mech.add_joint("crank", "R", "ground", "crank")
    mech.add_joint("A", "R", "crank", "coupler", origin=T(0.1))
    mech.add_joint("rocker", "R", "ground", "rocker", origin=T(0.3))
    mech.add_joint("B", "R", "coupler", "rocker", origin=T(0.35), child_origin=T(0.25))
    mech.add_joint("E", "R", "coupler", "arm", origin=T(0.5))
    model = mech.model(["crank", "E"], reference={"crank": 1.0, "A": -0.5, "rocker": 1.3})
    ax = kp.draw(model, [1.0, 0.3])
    A = 0.1 * np.array([np.cos(1.0), np.sin(1.0)])
    O4 = np.array([0.3, 0.0])                       # B: |B - A| = 0.35, |B - O4| = 0.25, above
    d = np.hypot(*(O4 - A))
    a = (0.35**2 - 0.25**2 + d**2) / (2 * d)
    u = (O4 - A) / d
    B = A + a * u + np.sqrt(0.35**2 - a**2) * np.array([-u[1], u[0]])
    E = A + (B - A) * 0.5 / 0.35
    assert np.allclose(xy(one(ax, "body:coupler")), [A, B, E], atol=1e-9)
    arm = xy(one(ax, "body:arm"))
    phi = np.arctan2(*(B - A)[::-1]) + 0.3           # the arm's absolute angle
    assert np.allclose(arm, [E, E + 0.05 * np.array([np.cos(phi), np.sin(phi)])], atol=1e-9)


def test_drawing_over_a_map_keeps_the_map_in_view():
    fb = mechanisms.five_bar()
    x, y = np.linspace(-0.5, 0.7, 5), np.linspace(-0.2, 0.7, 4)
    ax = kp.workspace_map(x, y, np.ones((4, 5)))
    kp.draw(fb, [2.0, 1.1], ax=ax)
    assert ax.get_xlim()[0] <= -0.5 and ax.get_xlim()[1] >= 0.7
    assert ax.get_ylim()[0] <= -0.2 and ax.get_ylim()[1] >= 0.7
    with pytest.raises(kic.ModelError, match="3D"):
        kp.draw(mechanisms.stewart_platform(), [0, 0, 0.6, 0, 0, 0], ax=ax)


def test_planarity_decides_2d_or_3d():
    assert kp.skeleton(mechanisms.planar_two_link(), [0.3, 0.5]).plane == "xy"
    assert kp.skeleton(mechanisms.planar_two_link(), [0.0, 0.0]).plane == "xy"   # collinear
    assert kp.skeleton(mechanisms.puma560(), np.zeros(6)).plane is None
    assert kp.draw(mechanisms.five_bar(), [2.0, 1.1], plane="3d").name == "3d"
    with pytest.raises(kic.ModelError, match="one configuration"):
        kp.draw(mechanisms.five_bar(), [[2.0, 1.1], [2.0, 1.0]])
    with pytest.raises(kic.ModelError, match="plane"):
        kp.draw(mechanisms.five_bar(), [2.0, 1.1], plane="xw")


def test_animate_has_a_frame_per_time_and_ends_at_the_last_pose(tmp_path):
    from PIL import Image
    fb = mechanisms.five_bar()
    t = np.linspace(0.0, 0.5, 6)
    tips = np.stack([0.08 + 0.03 * np.cos(4 * np.pi * t), 0.42 + 0.03 * np.sin(4 * np.pi * t)], -1)
    q = np.stack([five_bar_cranks(C) for C in tips])
    gif = tmp_path / "five_bar.gif"
    anim = kp.animate(fb, t, q, points={"C": ("coupler1", (0.35, 0, 0))}, trace="C",
                      gif=str(gif), fps=10)
    assert isinstance(anim, matplotlib.animation.FuncAnimation)
    assert len(list(anim.new_frame_seq())) == 6
    assert Image.open(gif).n_frames == 6
    ax = plt.gcf().axes[0]                                  # the figure animate made
    tip = one(ax, "point:C")
    assert np.allclose(xy(tip), [tips[-1]], atol=1e-9)      # saving ran every frame
    trace = one(ax, "trace:C")
    assert np.allclose(xy(trace), tips, atol=1e-9)
    with pytest.raises(kic.ModelError, match="len"):
        kp.animate(fb, t[:3], q)


def test_animate_a_spatial_mechanism_in_3d(tmp_path):
    sp = mechanisms.stewart_platform()
    t = np.linspace(0.0, 0.3, 4)
    x = np.zeros((4, 6))
    x[:, 2] = 0.6 + 0.5 * t
    x[:, 3] = 0.2 * t
    anim = kp.animate(sp, t, x, gif=str(tmp_path / "stewart.gif"))
    assert len(list(anim.new_frame_seq())) == 4
    ax = plt.gcf().axes[0]
    assert ax.name == "3d" and len(lines(ax, "slide:")) == 6
    plate = xyz(one(ax, "body:platform"))                  # the last frame after saving
    assert np.allclose(plate[:, 2], x[-1, 2], atol=1e-9)


def test_workspace_map_leaves_unreachable_points_blank():
    x = np.linspace(-0.2, 0.4, 7)
    y = np.linspace(0.1, 0.5, 5)
    X, Y = np.meshgrid(x, y)
    V = 1 + X**2 + Y
    V[X**2 + Y**2 > 0.2] = np.nan                                  # "unreachable"
    ax = kp.workspace_map(x, y, V, label="condition", bound=1.4)
    (mesh,) = [c for c in ax.collections if c.get_gid() == "map"]
    A = mesh.get_array()
    assert np.array_equal(np.ma.getmaskarray(A).reshape(V.shape), np.isnan(V))
    assert np.allclose(A.compressed(), V[~np.isnan(V)])
    assert len(ax.figure.axes) == 2                                 # the colour bar
    with pytest.raises(kic.ModelError, match="shape"):
        kp.workspace_map(x, y, V.T)


def test_pareto_front_of_a_known_set():
    F = np.array([[1.0, 5.0], [2.0, 3.0], [3.0, 4.0], [4.0, 1.0], [2.0, 3.0], [5.0, 0.5],
                  [np.nan, 0.0], [6.0, 6.0]])
    front = kp.pareto_front(F)
    assert front.tolist() == [True, True, False, True, True, True, False, False]
    # maximising the second objective instead: (5, 0.5) and (4, 1) are then the worst
    assert kp.pareto_front(F, minimize=[True, False]).tolist() == \
        [True, False, False, False, False, False, False, True]
    ax = kp.tradeoff(F[:, 0], F[:, 1], labels=("mass (kg)", "peak torque (N m)"))
    m = one(ax, "front")
    assert sorted(map(tuple, xy(m))) == sorted(map(tuple, F[front]))
    d = one(ax, "dominated")
    assert sorted(map(tuple, xy(d))) == [(3.0, 4.0), (6.0, 6.0)]
    assert ax.get_xlabel() == "mass (kg)"


def test_missing_matplotlib_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install 'kic\[plot\]'"):
        kp.draw(mechanisms.five_bar(), [2.0, 1.1])
    sk = kp.skeleton(mechanisms.five_bar(), [2.0, 1.1])         # data only: no matplotlib
    assert len(sk.bodies) == 4
