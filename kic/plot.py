"""Pictures: a mechanism drawn at a configuration, animations, workspace maps
and trade-off (Pareto) plots, with matplotlib (the optional ``plot`` extra,
``pip install 'kic[plot]'``).

* :func:`skeleton` computes what is drawn (no matplotlib needed): each body as
  a line through the points where its joints sit, the joints, the prismatic
  strokes, the ground pivots, and whether the mechanism is planar;
* :func:`draw` draws one configuration, in 2D for a planar mechanism (every
  point in one coordinate plane, every revolute axis normal to it) and in 3D
  otherwise; :func:`animate` a motion (a ``FuncAnimation``, optionally written
  as a GIF);
* :func:`workspace_map` a scalar index over a grid of task points, unreachable
  points (NaN) left blank; :func:`pareto_front` and :func:`tradeoff` the
  non-dominated designs of two objectives.

Works for :class:`kic.SerialChain` (link frames from ``frames(q)``, joints at
the joint frames, the tool at ``tool_frame(q)``) and :class:`kic.ClosedModel`
(body frames from ``kinematics(q, order=1).frame(body)``; where each joint
sits on its two bodies from ``mechanism.joint_primitives(name)``).
Lengths in m.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .errors import ModelError
from .model import ChainModel, ClosedLoopModel
from .settings import COINCIDENT_RTOL, PARALLEL_SINE, TINY

__all__ = ["Skeleton", "skeleton", "draw", "animate", "workspace_map", "pareto_front",
           "tradeoff"]

_GROUND = "ground"
_PLANES = {"xy": (0, 1, 2), "xz": (0, 2, 1), "yz": (1, 2, 0)}


def _pyplot():
    """matplotlib.pyplot, or a clear ImportError naming the extra."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:            # pragma: no cover - depends on the install
        raise ImportError("kic.plot needs matplotlib, the optional 'plot' extra: "
                          "pip install 'kic[plot]'") from exc
    return plt


@dataclass
class Skeleton:
    """What :func:`draw` draws, at a batch of configurations (leading axes ``...``).

    Attributes
    ----------
    bodies : dict of str -> ndarray (..., k, 3)
        Each moving body as a polyline through the points where its joints sit
        (world, m); a body with three or more points is a closed polygon (the
        first point repeated at the end); a body with one joint is drawn from
        it to its centroid.
    joints : dict of str -> ndarray (..., 3)
        Joint positions (for a prismatic joint the end on its parent body).
    slides : dict of str -> ndarray (..., 2, 3)
        Prismatic (and cylindrical) joints: their two ends, the stroke.
    grounded : list of str
        The joints on the ground (drawn as fixed pivots).
    points : dict of str -> ndarray (..., 3)
        Extra marked points (task points, the tool).
    plane : str or None
        ``"xy"``, ``"xz"`` or ``"yz"`` when the mechanism is planar at these
        configurations, else None (drawn in 3D).
    """

    bodies: dict = field(default_factory=dict)
    joints: dict = field(default_factory=dict)
    slides: dict = field(default_factory=dict)
    grounded: list = field(default_factory=list)
    points: dict = field(default_factory=dict)
    plane: str | None = None
    axes: list = field(default_factory=list)     # (kind, world axis (..., 3)) of every joint
    joint_axes: dict = field(default_factory=dict)  # serial revolute joints: name -> axis

    def all_points(self) -> np.ndarray:
        """Every drawn point, (..., P, 3)."""
        parts = [v for v in self.bodies.values()] + [v[..., None, :] for v in
                                                     self.joints.values()]
        parts += list(self.slides.values()) + [v[..., None, :] for v in self.points.values()]
        return np.concatenate(parts, axis=-2)


def _apply(F: np.ndarray, p) -> np.ndarray:
    """World position(s) F (..., 4, 4) applied to a body-frame point p (3,)."""
    return F[..., :3, :3] @ np.asarray(p, float) + F[..., :3, 3]


def _is_serial(model) -> bool:
    return isinstance(model, ChainModel)


def _serial_skeleton(chain, q) -> Skeleton:
    F = np.asarray(chain.frames(q), float)                       # (..., M, 4, 4)
    batch = F.shape[:-3]
    K = F @ np.linalg.inv(chain.frame_offsets)                   # kinematic link frames
    base = np.broadcast_to(chain.base, batch + (4, 4))
    prev = np.concatenate([base[..., None, :, :], K[..., :-1, :, :]], axis=-3)
    Jf = prev @ np.stack([j.origin for j in chain.joints])      # joint frames, zero motion
    tool = np.asarray(chain.tool_frame(q), float)
    sk = Skeleton()
    M = chain.dof
    for j in range(M):
        # joint j -> its link's kinematic origin -> the link's (DH) frame -> the next joint
        nxt = Jf[..., j + 1, :3, 3] if j + 1 < M else tool[..., :3, 3]
        pts = [Jf[..., j, :3, 3], K[..., j, :3, 3], F[..., j, :3, 3], nxt]
        sk.bodies[chain.link_names[j]] = np.stack(_dedupe(pts), axis=-2)
        name = chain.joint_names[j]
        sk.joints[name] = Jf[..., j, :3, 3]
        axis = Jf[..., j, :3, :3] @ chain.joints[j].axis
        sk.axes.append((chain.joints[j].kind, axis))
        if chain.joints[j].kind == "R":
            sk.joint_axes[name] = axis
        if chain.joints[j].kind == "P":
            sk.slides[name] = np.stack([Jf[..., j, :3, 3], K[..., j, :3, 3]], -2)
    sk.grounded = [chain.joint_names[0]]
    sk.points["tool"] = tool[..., :3, 3]
    return sk


def _dedupe(pts: list) -> list:
    """Drop points equal to the previous one at every configuration (a zero
    offset between frames), so that no zero-length segment is drawn."""
    out = [pts[0]]
    for p in pts[1:]:
        scale = max(1.0, float(np.max(np.abs(p))))
        if not np.allclose(p, out[-1], rtol=0, atol=COINCIDENT_RTOL * scale):
            out.append(p)
    return out


def _primitives(mech) -> dict:
    """The one-DOF joints each joint of the mechanism expands into, in order."""
    return {name: mech.joint_primitives(name) for name in mech.joints}


def _closed_skeleton(model, q) -> Skeleton:
    mech = model.mechanism
    kin = model.kinematics(q, order=1)
    frames = {b: np.asarray(kin.frame(b), float) for b in mech.bodies if b != _GROUND}
    batch = next(iter(frames.values())).shape[:-2] if frames else ()
    ground = np.broadcast_to(np.eye(4), batch + (4, 4))
    frame = lambda b: ground if b == _GROUND else frames[b]          # noqa: E731
    sk = Skeleton()
    attached: dict[str, list] = {b: [] for b in mech.bodies}        # (local point, world)
    expanded = _primitives(mech)
    for name in mech.joints:
        prims = expanded[name]
        if not prims:
            continue
        first, last = prims[0], prims[-1]
        parent, child = first.parent, last.child
        p_local, c_local = first.origin[:3, 3], last.child_origin[:3, 3]
        p_world = _apply(frame(parent), p_local)
        c_world = _apply(frame(child), c_local)
        attached[parent].append((p_local, p_world))
        attached[child].append((c_local, c_world))
        sk.joints[name] = p_world
        if any(p.kind == "P" for p in prims):
            sk.slides[name] = np.stack([p_world, c_world], -2)
        if _GROUND in (parent, child):
            sk.grounded.append(name)
        Fj = frame(parent) @ first.origin
        for p in prims:          # axes of the expansion, for the planarity test
            sk.axes.append((p.kind, Fj[..., :3, :3] @ p.axis))
    on_slide = {b for name in sk.slides for b in (expanded[name][0].parent,
                                                  expanded[name][-1].child)}
    for body, items in attached.items():
        if body == _GROUND:
            continue
        pts, seen = [], []
        for loc, world in items:           # one point per place on the body
            if not any(np.allclose(loc, s, rtol=0, atol=COINCIDENT_RTOL) for s in seen):
                seen.append(loc)
                pts.append(world)
        if len(pts) == 1:           # a body on one joint: drawn to its centroid ...
            com = np.asarray(mech.graph.nodes[body]["link"].com, float)
            if np.allclose(com, seen[0], rtol=0, atol=COINCIDENT_RTOL) or body in on_slide:
                continue            # ... unless a stroke already shows it (a leg's cylinder)
            pts.append(_apply(frame(body), com))
        elif len(pts) >= 3:
            P = np.stack(pts, -2)
            Ploc = np.stack(seen) - np.mean(seen, axis=0)
            # the body-frame points' main directions (either sign gives the same figure)
            _, sv, Vt = np.linalg.svd(Ploc)
            if sv[1] <= PARALLEL_SINE * sv[0]:      # joints in a line: a bar through them
                order = np.argsort(Ploc @ Vt[0], kind="stable")
                pts = [P[..., i, :] for i in order]
            else:                           # a plate: its outline, by angle about the centre
                order = np.argsort(np.arctan2(Ploc @ Vt[1], Ploc @ Vt[0]), kind="stable")
                pts = [P[..., i, :] for i in order] + [P[..., order[0], :]]
        sk.bodies[body] = np.stack(pts, -2)
    return sk


def _plane_of(sk: Skeleton, tol: float = PARALLEL_SINE) -> str | None:
    """The coordinate plane holding every point, with every revolute axis normal
    to it and every prismatic axis in it; None if there is none."""
    P = sk.all_points().reshape(-1, 3)
    extent = float(np.max(np.ptp(P, axis=0))) if P.size else 0.0
    for plane, (_, _, normal) in (("xy", _PLANES["xy"]), ("xz", _PLANES["xz"]),
                                  ("yz", _PLANES["yz"])):
        if np.ptp(P[:, normal]) > tol * max(extent, TINY):
            continue
        ok = True
        for kind, axis in sk.axes:
            a = np.abs(np.asarray(axis).reshape(-1, 3)[:, normal])
            ok &= bool(np.all(a > 1 - tol)) if kind == "R" else bool(np.all(a < tol))
        if ok:
            return plane
    return None


def skeleton(model, q, points=None) -> Skeleton:
    """The drawing of ``model`` at configurations ``q`` (..., M), as data.

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
    q : array_like (..., M)
        Coordinates of the model (rad, m).
    points : dict of str -> (body, (3,) point), optional
        Extra points to mark, each on a body (body frame, m), e.g. a five-bar's
        tip ``{"C": ("coupler1", (0.35, 0, 0))}``.  For a serial chain the body
        is a link name or index.

    Returns
    -------
    Skeleton

    Examples
    --------
    >>> import numpy as np, mechanisms, kic.plot
    >>> sk = kic.plot.skeleton(mechanisms.five_bar(), [2.0, 1.1])
    >>> sk.plane, sorted(sk.grounded), len(sk.bodies), len(sk.joints)
    ('xy', ['crank1', 'crank2'], 4, 5)
    """
    if _is_serial(model):
        sk = _serial_skeleton(model, q)
    elif isinstance(model, ClosedLoopModel):
        sk = _closed_skeleton(model, q)
    else:
        raise ModelError(f"cannot draw a {type(model).__name__}: give a kic.SerialChain or "
                         "a kic.ClosedModel")
    if points:
        if _is_serial(model):
            F = np.asarray(model.frames(q), float)
            for name, (body, p) in points.items():
                sk.points[name] = _apply(F[..., model.link_index(body), :, :], p)
        else:
            kin = model.kinematics(q, order=1)
            for name, (body, p) in points.items():
                sk.points[name] = _apply(np.asarray(kin.frame(body), float), p)
    sk.plane = _plane_of(sk)
    return sk


# ------------------------------------------------------------------ drawing
_LINK = dict(color="#3b4a5a", lw=3.0, solid_capstyle="round", zorder=2)
_SLIDE = dict(color="#8ea4bb", lw=6.0, solid_capstyle="butt", zorder=1)
_BLOCK = dict(ls="none", marker="s", ms=12, mfc="white", mec="black", mew=1.5, zorder=3)
_AXIS = dict(color="black", lw=0.8, ls="-.", zorder=3)
_PIN = dict(ls="none", marker="o", ms=7, mfc="white", mec="black", mew=1.5, zorder=4)
_FIXED = dict(ls="none", marker="o", ms=7, mfc="black", mec="black", zorder=5)
_POINT = dict(ls="none", marker="X", ms=9, mfc="#c0392b", mec="white", mew=0.8, zorder=6)


def _dims(plane: str | None):
    return list(_PLANES[plane][:2]) if plane else [0, 1, 2]


def _set(artist, data: np.ndarray, dims) -> None:
    """Set a line's data from points (k, 3) in the drawing's coordinates."""
    data = np.atleast_2d(data)
    if len(dims) == 2:
        artist.set_data(data[:, dims[0]], data[:, dims[1]])
    else:
        artist.set_data_3d(data[:, 0], data[:, 1], data[:, 2])


def _plot(ax, data, dims, **style):
    data = np.atleast_2d(data)
    cols = [data[:, d] for d in dims]
    (line,) = ax.plot(*cols, **style)
    return line


def _movers(sk: Skeleton, dims, size: float):
    """(gid, data (..., k, 3), style) of every moving artist, in drawing order;
    in 3D the revolute axes of a serial chain as short lines of length 2 size."""
    out = [(f"slide:{n}", v, _SLIDE) for n, v in sk.slides.items()]
    if len(dims) == 3:
        out += [(f"axis:{n}", np.stack([sk.joints[n] - size * a, sk.joints[n] + size * a], -2),
                 _AXIS) for n, a in sk.joint_axes.items()]
    out += [(f"body:{n}", v, _LINK) for n, v in sk.bodies.items() if v.shape[-2] >= 2]
    pins = [n for n in sk.joints if n not in sk.grounded and n not in sk.slides]
    if pins:
        out.append(("joints", np.stack([sk.joints[n] for n in pins], -2), _PIN))
    pivots = [n for n in sk.grounded if n not in sk.slides]
    if pivots:
        out.append(("ground", np.stack([sk.joints[n] for n in pivots], -2), _FIXED))
    # a slider on a guide fixed to the ground: a block at its moving end
    out += [(f"slider:{n}", sk.slides[n][..., 1:, :], _BLOCK) for n in sk.grounded
            if n in sk.slides]
    out += [(f"point:{n}", v[..., None, :], _POINT) for n, v in sk.points.items()]
    return out


def _ground_symbols(ax, sk: Skeleton, index, dims, size: float) -> None:
    """Fixed pivots: a triangle on a hatched base (2D), or a dashed base outline
    through three or more pivots (3D)."""
    from matplotlib.patches import Polygon, Rectangle
    P = np.array([sk.joints[n][index] for n in sk.grounded if n not in sk.slides]
                 ).reshape(-1, 3)
    if len(dims) == 2:
        for p in P[:, dims]:
            tri = Polygon([p, p + [-size, -1.6 * size], p + [size, -1.6 * size]], closed=True,
                          fc="white", ec="black", lw=1.2, zorder=3)
            base = Rectangle(p + [-1.8 * size, -2.3 * size], 3.6 * size, 0.7 * size,
                             fc="none", ec="black", lw=0, hatch="////", zorder=3)
            ax.add_patch(tri)
            ax.add_patch(base)
            ax.plot([p[0] - 1.8 * size, p[0] + 1.8 * size], [p[1] - 1.6 * size] * 2,
                    color="black", lw=1.2, zorder=3, gid="ground-line")
    elif len(P) >= 3:
        c = P.mean(0)
        order = np.argsort(np.arctan2(P[:, 1] - c[1], P[:, 0] - c[0]), kind="stable")
        ring = P[np.r_[order, order[:1]]]
        ax.plot(ring[:, 0], ring[:, 1], ring[:, 2], color="black", lw=1.0, ls="--",
                gid="ground-line", zorder=1)


def _limits(ax, P: np.ndarray, dims, margin: float = 0.12, keep: bool = False) -> float:
    """Equal scales on every axis around the points (k, 3), grown to hold the
    current limits too when ``keep`` (drawing over a map); returns the extent."""
    lo, hi = np.nanmin(P, axis=0), np.nanmax(P, axis=0)
    extent = float(np.max((hi - lo)[dims])) or 1.0
    centre = (hi + lo) / 2
    half = extent * (0.5 + margin)
    setters = [ax.set_xlim, ax.set_ylim] + ([ax.set_zlim] if len(dims) == 3 else [])
    getters = [ax.get_xlim, ax.get_ylim] + ([ax.get_zlim] if len(dims) == 3 else [])
    for set_lim, get_lim, d in zip(setters, getters, dims):
        a, b = centre[d] - half, centre[d] + half
        if keep:
            old = get_lim()
            a, b = min(a, old[0]), max(b, old[1])
        set_lim(a, b)
    if len(dims) == 3:
        ax.set_box_aspect((1, 1, 1))
    else:
        ax.set_aspect("equal", adjustable="box")
    return extent


def _prepare_axes(ax, plane, dims, title):
    plt = _pyplot()
    if ax is None:
        fig = plt.figure(figsize=(6, 6) if len(dims) == 3 else (6, 5))
        ax = fig.add_subplot(111, projection="3d" if len(dims) == 3 else None)
    elif (getattr(ax, "name", "") == "3d") != (len(dims) == 3):
        raise ModelError(f"ax is a {'3D' if getattr(ax, 'name', '') == '3d' else '2D'} axes "
                         f"but the drawing is {'3D' if len(dims) == 3 else '2D (' + plane + ')'}"
                         "; pass plane= or another axes")
    names = "xyz"
    ax.set_xlabel(f"{names[dims[0]]} (m)")
    ax.set_ylabel(f"{names[dims[1]]} (m)")
    if len(dims) == 3:
        ax.set_zlabel("z (m)")
    else:
        ax.grid(True, color="0.9", lw=0.6)
        ax.set_axisbelow(True)
    if title:
        ax.set_title(title)
    return ax


def _resolve_plane(sk: Skeleton, plane) -> str | None:
    if plane == "auto":
        return sk.plane
    if plane in (None, "3d"):
        return None
    if plane not in _PLANES:
        raise ModelError(f"plane must be 'auto', 'xy', 'xz', 'yz' or '3d', got {plane!r}")
    return plane


def _render(ax, sk: Skeleton, index, plane, title, labels: bool):
    dims = _dims(plane)
    keep = ax is not None and ax.has_data()
    ax = _prepare_axes(ax, plane, dims, title)
    artists = []
    extent = _limits(ax, sk.all_points().reshape(-1, 3), dims, keep=keep)
    for gid, data, style in _movers(sk, dims, 0.1 * extent):
        line = _plot(ax, data[index], dims, **style)
        line.set_gid(gid)
        artists.append((line, data))
    if sk.grounded:
        _ground_symbols(ax, sk, index, dims, 0.025 * extent)
        if len(dims) == 2 and not keep:     # room for the ground symbols below the pivots
            lo, hi = ax.get_ylim()
            ax.set_ylim(min(lo, min(sk.joints[n][index][dims[1]] for n in sk.grounded)
                            - 0.1 * extent), hi)
    if labels:
        for n, v in sk.points.items():
            p = v[index]
            args = [p[d] for d in dims]
            ax.text(*args, f"  {n}", color="#c0392b", fontsize=9, zorder=7)
    return ax, artists


def _one_configuration(model, q) -> np.ndarray:
    q = np.asarray(q, dtype=float)
    if q.ndim != 1:
        raise ModelError(f"draw takes one configuration q of shape (M,), got {q.shape}; "
                         "use animate for a sequence")
    return q


def draw(model, q, ax=None, *, points=None, plane="auto", title=None, labels: bool = True):
    """Draw a mechanism at one configuration.

    Bodies are thick lines through the points where their joints sit (a plate
    with three or more joints as its outline), revolute, universal and
    spherical joints white pins, prismatic joints lighter bars along their
    stroke, ground pivots black pins on a hatched base (2D), extra points red
    crosses.  Equal scales on every axis, axes in m.

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
    q : array_like (M,)
        The configuration (rad, m).
    ax : matplotlib Axes, optional
        2D or 3D axes to draw into; a new figure by default.
    points : dict of str -> (body, (3,) point), optional
        Extra points to mark (see :func:`skeleton`).
    plane : {"auto", "xy", "xz", "yz", "3d"}
        ``"auto"``: 2D when the mechanism is planar at q (:class:`Skeleton`),
        3D otherwise.
    title : str, optional
        Default: the model's name.
    labels : bool
        Name the extra points.

    Returns
    -------
    matplotlib Axes
        Each body's line has gid ``"body:<name>"``, the pins ``"joints"``,
        the ground pivots ``"ground"``, the strokes ``"slide:<joint>"`` (and a
        block ``"slider:<joint>"`` on a guide fixed to the ground), the
        points ``"point:<name>"``, the revolute axes of a serial chain in 3D
        ``"axis:<joint>"``.
    """
    q = _one_configuration(model, q)
    sk = skeleton(model, q, points)
    plane = _resolve_plane(sk, plane)
    ax, _ = _render(ax, sk, (), plane, getattr(model, "name", None) if title is None else title,
                    labels)
    return ax


def animate(model, t, q, *, points=None, plane="auto", title=None, interval=None,
            gif: str | None = None, fps: float | None = None, trace: str | None = None):
    """Animate a motion: one frame per configuration.

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
    t : array_like (N,)
        Times (s), shown in the title; the frame interval defaults to their
        median step.
    q : array_like (N, M)
        Configurations along the motion.
    points : dict, optional
        Extra points to mark (see :func:`skeleton`).
    plane, title
        As in :func:`draw` (the plane is decided over the whole motion).
    interval : float, optional
        Milliseconds between frames.
    gif : str, optional
        Also write the animation to this GIF file (matplotlib's PillowWriter).
    fps : float, optional
        Frames per second of the GIF (default from ``interval``).
    trace : str, optional
        Name of a point in ``points`` (or ``"tool"`` for a serial chain) whose
        path is drawn as a thin line.

    Returns
    -------
    matplotlib.animation.FuncAnimation
        With ``len(t)`` frames.
    """
    _pyplot()
    from matplotlib.animation import FuncAnimation, PillowWriter
    t = np.asarray(t, dtype=float).reshape(-1)
    q = np.asarray(q, dtype=float)
    if q.ndim != 2 or q.shape[0] != t.shape[0]:
        raise ModelError(f"animate needs q of shape (N, M) with N = len(t) = {t.shape[0]}, "
                         f"got {q.shape}")
    sk = skeleton(model, q, points)
    plane = _resolve_plane(sk, plane)
    name = getattr(model, "name", None) if title is None else title
    ax, artists = _render(None, sk, (0,), plane, name, labels=False)
    dims = _dims(plane)
    if trace is not None:
        if trace not in sk.points:
            raise ModelError(f"trace {trace!r} is not a marked point; points: "
                             f"{sorted(sk.points)}")
        path = _plot(ax, sk.points[trace], dims, color="#c0392b", lw=0.8, alpha=0.6)
        path.set_gid(f"trace:{trace}")
    label = ax.set_title(f"{name or ''}  t = {t[0]:.3f} s".strip())

    def update(k):
        for line, data in artists:
            _set(line, data[k], dims)
        label.set_text(f"{name or ''}  t = {t[k]:.3f} s".strip())
        return [a for a, _ in artists] + [label]

    if interval is None:
        interval = 1000.0 * float(np.median(np.diff(t))) if len(t) > 1 else 100.0
    anim = FuncAnimation(ax.figure, update, frames=len(t), interval=interval, blit=False)
    if gif is not None:
        anim.save(gif, writer=PillowWriter(fps=fps or max(1.0, 1000.0 / interval)))
    return anim


# -------------------------------------------------------- maps and trade-offs
def workspace_map(x, y, values, ax=None, *, label: str = "index", bound: float | None = None,
                  cmap: str = "viridis", log: bool = False, xlabel: str = "x (m)",
                  ylabel: str = "y (m)", title: str | None = None):
    """A scalar index over a grid of task points; unreachable points left blank.

    Parameters
    ----------
    x : array_like (nx,)
    y : array_like (ny,)
        Grid coordinates (m).
    values : array_like (ny, nx)
        The index at ``(x[j], y[i])``; NaN (or inf) where the point is not
        reachable (e.g. the status of a failed inverse kinematics), drawn blank.
    ax : matplotlib Axes, optional
    label : str
        Colour-bar label.
    bound : float, optional
        Draw the contour ``values == bound`` (e.g. a condition-number limit).
    log : bool
        Logarithmic colour scale (for condition numbers).

    Returns
    -------
    matplotlib Axes
    """
    plt = _pyplot()
    from matplotlib.colors import LogNorm
    x, y = np.asarray(x, float).reshape(-1), np.asarray(y, float).reshape(-1)
    V = np.asarray(values, float)
    if V.shape != (y.size, x.size):
        raise ModelError(f"values must have shape (len(y), len(x)) = ({y.size}, {x.size}), "
                         f"got {V.shape}")
    masked = np.ma.masked_invalid(V)
    if ax is None:
        ax = plt.figure(figsize=(6, 5)).add_subplot(111)
    norm = None
    if log:
        good = masked.compressed()
        good = good[good > 0]
        norm = LogNorm(*(good.min(), good.max())) if good.size else None
    mesh = ax.pcolormesh(x, y, masked, shading="auto", cmap=cmap, norm=norm)
    mesh.set_gid("map")
    ax.figure.colorbar(mesh, ax=ax, label=label)
    if bound is not None and masked.count() and masked.min() < bound < masked.max():
        cs = ax.contour(x, y, masked, levels=[bound], colors="white", linewidths=1.2)
        ax.clabel(cs, fmt=lambda v: f"{v:g}", fontsize=8)
    ax.set_aspect("equal", adjustable="box")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    return ax


def pareto_front(objectives, minimize=True) -> np.ndarray:
    """Non-dominated rows of ``objectives`` (n, k): a boolean mask (n,).

    Row i is dominated when some row j is at least as good in every objective
    and strictly better in one (better = smaller where ``minimize``, larger
    otherwise).  Rows with a NaN (failed designs) are never on the front and
    dominate nothing; equal rows do not dominate each other.

    Examples
    --------
    >>> import kic.plot
    >>> kic.plot.pareto_front([[1, 4], [2, 2], [3, 3], [4, 1], [2, 2]]).tolist()
    [True, True, False, True, True]
    """
    F = np.asarray(objectives, dtype=float)
    if F.ndim != 2:
        raise ModelError(f"objectives must have shape (n, k), got {F.shape}")
    sign = np.where(np.broadcast_to(np.asarray(minimize, bool), (F.shape[1],)), 1.0, -1.0)
    F = F * sign
    ok = np.all(np.isfinite(F), axis=1)
    front = ok.copy()
    G = F[ok]
    idx = np.flatnonzero(ok)
    for a, i in enumerate(idx):     # O(n^2) comparisons, O(n) memory
        better_eq = np.all(G <= G[a], axis=1)
        strictly = np.any(G < G[a], axis=1)
        front[i] = not np.any(better_eq & strictly)
    return front


def tradeoff(f1, f2, ax=None, *, labels=("objective 1", "objective 2"),
             minimize=(True, True), title: str | None = None, annotate=None):
    """A trade-off (Pareto) scatter of two objectives, the front highlighted.

    Parameters
    ----------
    f1, f2 : array_like (n,)
        The two objectives of n designs (NaN: failed designs, not drawn).
    ax : matplotlib Axes, optional
    labels : (str, str)
        Axis labels, with units.
    minimize : (bool, bool)
        Which direction is better for each objective.
    annotate : sequence of str, optional
        A label per design, written next to the designs on the front.

    Returns
    -------
    matplotlib Axes
        The dominated designs have gid ``"dominated"``, the front
        ``"front"`` (markers) and ``"front-line"`` (the staircase through it).
    """
    plt = _pyplot()
    F = np.stack([np.asarray(f1, float).reshape(-1), np.asarray(f2, float).reshape(-1)], -1)
    front = pareto_front(F, minimize)
    ok = np.all(np.isfinite(F), axis=1)
    if ax is None:
        ax = plt.figure(figsize=(6, 4.5)).add_subplot(111)
    rest = ok & ~front
    (d,) = ax.plot(F[rest, 0], F[rest, 1], ls="none", marker="o", ms=4, color="0.65",
                   label=f"dominated ({int(rest.sum())})")
    d.set_gid("dominated")
    P = F[front]
    order = np.argsort(P[:, 0], kind="stable")
    # the attainment staircase when both are minimised, else a plain line through the front
    style = "steps-post" if tuple(np.broadcast_to(minimize, (2,))) == (True, True) else "default"
    (s,) = ax.plot(P[order, 0], P[order, 1], drawstyle=style, color="#c0392b", lw=1.0)
    s.set_gid("front-line")
    (m,) = ax.plot(P[:, 0], P[:, 1], ls="none", marker="o", ms=6, color="#c0392b",
                   label=f"Pareto front ({int(front.sum())})")
    m.set_gid("front")
    if annotate is not None:
        for i in np.flatnonzero(front):
            ax.annotate(str(annotate[i]), F[i], textcoords="offset points", xytext=(4, 4),
                        fontsize=8)
    ax.set_xlabel(labels[0])
    ax.set_ylabel(labels[1])
    ax.grid(True, color="0.9", lw=0.6)
    ax.legend(frameon=False)
    if title:
        ax.set_title(title)
    return ax
