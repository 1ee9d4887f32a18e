"""Closed mechanisms: loop closure and the transferred model (seed ch. III-IV).

The initial model is a set of open chains from the ground (the spanning tree
of a :class:`kic.Mechanism`, plus one chain tip per cut joint) in the initial
coordinates phi: every primitive joint value, the cut joints' included.  Each
cut gives a closure ``c_l(phi) = 0``: the tip frame of its chain coincides with
the joint's frame on the other body (6 rows, "pose"), or a point coincides
(3 rows, "point": a cut spherical joint, a :class:`PointPosition`), or a
coordinate function equals its value (1 row).  Rows that are structurally
dependent (planar loops, the Bricard linkage) are reduced to independent
combinations.

New coordinates q are a subset of phi (joint names, or virtual joints that a
coordinate object such as :class:`BodyPose`, :class:`PointPosition` or
:class:`CoordinateFunction` adds), so with phi = (q, p)::

    G^p_q  = -(G^c_p)^-1 G^c_q
    H^p_qq = -(G^c_p)^-1 o (G^phi_q^T H^c G^phi_q)          (method.md, case b)

and the third order likewise; the model follows by :class:`kic.Transfer`.
The dependent joints split into independent blocks (connected components of
the loops that share them), each solved on its own: the six legs of a Stewart
platform are six 3x3 systems, not one 18x18 (a cut spherical joint closes as
a point constraint; its angles are not needed).
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import networkx as nx
import numpy as np

from . import _compiled, _scalar
from ._array import (finite_array, from_batch, homogeneous, inverse_with_condition, match_batch,
                     spd_solve)
from .backend import compiled_data
from .dynamics import DynamicModel
from .errors import ClosureError, ModelError, SingularityError, located
from .kinematics import Influence
from .topology import GROUND, Mechanism, _Loop
from .transfer import Transfer, transfer_influence

__all__ = ["ClosedModel", "BodyPose", "PointPosition", "CoordinateFunction"]

_TOL = 1e-12          # closure tolerance (m, rad)
_MAX_ITER = 60


class BodyPose:
    """Coordinates of a body's pose: x, y, z (m) of its frame origin and the
    angles yaw, pitch, roll (rad) with ``R = Rz(yaw) Ry(pitch) Rx(roll)``.

    Realised as a massless virtual P-P-P-R-R-R chain from the ground to the
    body (method.md section 4), so its influence coefficients come from the
    serial code.

    Parameters
    ----------
    body : str
    components : sequence of str, optional
        A subset of ``("x", "y", "z", "yaw", "pitch", "roll")`` in that order,
        e.g. ``("x", "y", "yaw")`` for a body moving in the x-y plane.
    prefix : str, optional
        Prefix of the coordinate names (default ``body + "."``).
    """

    names = ("x", "y", "z", "yaw", "pitch", "roll")
    _joints = {"x": ("P", "x"), "y": ("P", "y"), "z": ("P", "z"),
               "yaw": ("R", "z"), "pitch": ("R", "y"), "roll": ("R", "x")}

    def __init__(self, body: str, components=None, prefix: str | None = None) -> None:
        self.body = body
        comps = tuple(self.names if components is None else components)
        if not comps or any(c not in self.names for c in comps) or \
                list(comps) != [n for n in self.names if n in comps]:
            raise ModelError(f"BodyPose components must be an ordered subset of {self.names}, "
                             f"got {components!r}")
        self.components = comps
        self.prefix = f"{body}." if prefix is None else prefix

    def coordinate_names(self) -> list[str]:
        return [self.prefix + n for n in self.components]

    def __repr__(self) -> str:
        return f"BodyPose({self.body!r}, {self.components})"


class PointPosition:
    """World coordinates (m) of a point fixed on a body, along ``axes``.

    Parameters
    ----------
    body : str
    point : array_like, shape (3,)
        The point in the body frame (m).
    axes : str
        Which world coordinates: any of ``"xyz"``, e.g. ``"xy"`` for a planar
        coupler point.
    """

    def __init__(self, body: str, point=(0.0, 0.0, 0.0), axes: str = "xy",
                 prefix: str | None = None) -> None:
        self.body = body
        self.point = finite_array(point, f"point on body {body!r}", (3,))
        if not axes or any(a not in "xyz" for a in axes) or len(set(axes)) != len(axes):
            raise ModelError(f"axes must be distinct letters of 'xyz', got {axes!r}")
        self.axes = axes
        self.prefix = f"{body}.p" if prefix is None else prefix

    def coordinate_names(self) -> list[str]:
        return [self.prefix + a for a in self.axes]

    def __repr__(self) -> str:
        return f"PointPosition({self.body!r}, {self.point.tolist()}, {self.axes!r})"


class CoordinateFunction:
    """A coordinate ``q = u(phi)`` given as a function of some joints, with its
    influence coefficients (method.md section 3, case c).

    Parameters
    ----------
    name : str
        The coordinate's name.
    joints : sequence of str
        The primitive joints u depends on (their order is the order of the
        columns below).
    fn : callable
        ``fn(phi) -> (u, G, H, D)`` for joint values ``phi`` of shape (n, k):
        ``u`` (n,), ``G`` (n, k) = du/dphi, ``H`` (n, k, k) = dG/dphi (first
        index the differentiating joint), ``D`` (n, k, k, k) = dH/dphi.

    Examples
    --------
    The difference of two crank angles as a coordinate of a five-bar:

    >>> import numpy as np, kic, mechanisms
    >>> def diff(phi):
    ...     n = phi.shape[0]
    ...     G = np.broadcast_to([-1.0, 1.0], (n, 2))
    ...     return phi[:, 1] - phi[:, 0], G, np.zeros((n, 2, 2)), np.zeros((n, 2, 2, 2))
    >>> fb = mechanisms.five_bar()
    >>> m = fb.in_coordinates(["crank1", kic.CoordinateFunction("spread", ["crank1", "crank2"],
    ...                                                         diff)])
    >>> m.coordinate_names
    ['crank1', 'spread']
    """

    def __init__(self, name: str, joints, fn) -> None:
        if not isinstance(name, str) or not name:
            raise ModelError(f"a coordinate function needs a name, got {name!r}")
        if not callable(fn):
            raise ModelError(f"coordinate {name!r}: fn must be callable")
        self.name, self.joints, self.fn = name, list(joints), fn
        if not self.joints:
            raise ModelError(f"coordinate {name!r} depends on no joint")

    def coordinate_names(self) -> list[str]:
        return [self.name]

    def evaluate(self, phi: np.ndarray):
        """(u, G, H, D) at joint values phi (n, k), checked for shape and finiteness."""
        n, k = phi.shape
        out = self.fn(phi)
        if not isinstance(out, tuple) or len(out) != 4:
            raise ModelError(f"coordinate {self.name!r}: fn must return (u, G, H, D)")
        shapes = [(n,), (n, k), (n, k, k), (n, k, k, k)]
        res = []
        for what, x, shape in zip("uGHD", out, shapes):
            x = np.asarray(x, dtype=float)
            if x.shape != shape:
                raise ModelError(f"coordinate {self.name!r}: {what} must have shape {shape}, "
                                 f"got {x.shape}")
            if not np.all(np.isfinite(x)):
                raise ModelError(f"coordinate {self.name!r}: {what} is not finite")
            res.append(x)
        return tuple(res)

    def __repr__(self) -> str:
        return f"CoordinateFunction({self.name!r}, {self.joints})"


class _FunctionSide:
    """The single 'side' of a coordinate-function closure ``u(phi) - q = 0``."""

    __slots__ = ("coord", "joints", "virtual", "cols", "sign", "sel_dep", "dep_pos",
                 "sel_q", "q_pos")

    def __init__(self, coord: CoordinateFunction, joints: np.ndarray, virtual: int) -> None:
        self.coord, self.joints, self.virtual = coord, joints, virtual
        self.cols = np.concatenate([joints, [virtual]])
        self.sign = 1.0

    def parts(self, phi: np.ndarray, order: int):
        """Residual (n, 1) and G, H, D over ``cols`` (the virtual column last)."""
        u, Gu, Hu, Du = self.coord.evaluate(phi[:, self.joints])
        n, k = Gu.shape
        r = (u - phi[:, self.virtual])[:, None]
        G = np.concatenate([Gu, -np.ones((n, 1))], axis=1)[:, None]
        H = D = None
        if order >= 2:
            H = np.zeros((n, 1, k + 1, k + 1))
            H[:, 0, :k, :k] = Hu
        if order >= 3:
            D = np.zeros((n, 1, k + 1, k + 1, k + 1))
            D[:, 0, :k, :k, :k] = Du
        return r, G, H, D


_UNIT = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def _vex_error(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """Orientation error of Ra relative to Rb (..., 3): vex of the skew part of Ra Rb^T."""
    E = Ra @ np.swapaxes(Rb, -1, -2)
    return 0.5 * np.stack([E[..., 2, 1] - E[..., 1, 2], E[..., 0, 2] - E[..., 2, 0],
                           E[..., 1, 0] - E[..., 0, 1]], axis=-1)


class _Side:
    """One side of a loop: a frame (or point) on link ``link`` of chain ``chain``."""

    __slots__ = ("sign", "chain", "link", "T", "cols", "sel_dep", "dep_pos", "sel_q", "q_pos")

    def __init__(self, sign: float, chain: int, link: int, T: np.ndarray, cols: np.ndarray):
        self.sign, self.chain, self.link, self.T, self.cols = sign, chain, link, T, cols


class _LoopInfo:
    """A loop: its sides, columns and row reduction."""

    def __init__(self, loop: _Loop, sides: list, cols: np.ndarray) -> None:
        self.loop = loop
        self.sides = sides
        self.cols = cols            # global phi indices that move the loop
        self.k = 6 if loop.kind == "pose" else 3
        self.mode = "full"          # "full", "fixed" (constant projection) or "svd"
        self.U = None               # (k, r) constant projection for "fixed"
        self.base = None            # (k, k0) constant row selection applied first
        self.rank = self.k

    @property
    def name(self) -> str:
        return self.loop.name


class _Rows:
    """A loop's reduced rows at a batch: residual and per-side coefficients."""

    __slots__ = ("r", "G", "H", "D", "U")

    def __init__(self):
        self.r, self.G, self.H, self.D, self.U = None, [], [], [], None


class ClosedModel:
    """The dynamic model of a mechanism in chosen coordinates (transferred).

    Same interface as :class:`kic.SerialChain` (``kinematics``, ``dynamics``,
    ``inverse_dynamics``, ``forward_dynamics``, energies, works with
    :func:`kic.simulate`), plus the position-level closure (:meth:`assemble`)
    and singularity queries (:meth:`condition`).  Built by
    :meth:`kic.Mechanism.model`.

    Attributes
    ----------
    dof : int
        Number M of coordinates q.
    coordinate_names : list of str
    phi_names : list of str
        The initial coordinates: every primitive joint (and virtual joint).
    mechanism : Mechanism
    loops : list of str
        The cut joints (or virtual closures), one per loop.
    max_condition : float
        Condition number of a dependent-joint Jacobian above which the
        configuration is reported as singular (:class:`kic.SingularityError`);
        default 1e6 (beyond it about 10 significant digits are lost; a
        configuration exactly at a singularity in floating point gives some
        1e6-1e7 for a square-root singularity).
    """

    max_condition = 1e6

    def __init__(self, mech: Mechanism, coordinates, reference=None, guess=None,
                 cuts: Sequence[str] = (), name: str | None = None) -> None:
        self.mechanism = mech
        self.name = name or mech.name
        self._guess = guess
        if isinstance(coordinates, (str, BodyPose, PointPosition, CoordinateFunction)):
            coordinates = [coordinates]
        coordinates = list(coordinates)
        if not coordinates:
            raise ModelError("give at least one coordinate")
        m = copy.copy(mech)
        m.graph = mech.graph.copy()
        m._primitives = list(mech._primitives)
        heavy, point_loops, coord_names, functions = [], [], [], []
        physical = set(mech.primitive_joints)
        for k, c in enumerate(coordinates):
            if isinstance(c, str):
                if c not in physical:
                    raise ModelError(f"coordinate {c!r} is not a joint of the mechanism; "
                                     f"primitive joints are {sorted(physical)}")
                coord_names.append(c)
            elif isinstance(c, BodyPose):
                if c.body not in mech.graph or c.body == GROUND:
                    raise ModelError(f"BodyPose: unknown body {c.body!r}")
                names = c.coordinate_names()
                chain_bodies = [f"virtual:{n}" for n in names[:-1]] + [c.body]
                prev = GROUND
                for n, b, (kind, ax) in zip(names, chain_bodies,
                                            [c._joints[k] for k in c.components]):
                    if b != c.body:
                        m.graph.add_node(b, link=None, intermediate=True)
                    m._add_virtual(n, kind, _UNIT[ax], prev, b)
                    prev = b
                heavy.append(c.body)
                coord_names.extend(names)
            elif isinstance(c, PointPosition):
                if c.body not in mech.graph or c.body == GROUND:
                    raise ModelError(f"PointPosition: unknown body {c.body!r}")
                names = c.coordinate_names()
                prev = GROUND
                for n, a in zip(names, c.axes):
                    b = f"virtual:{n}"
                    m.graph.add_node(b, link=None, intermediate=True)
                    m._add_virtual(n, "P", _UNIT[a], prev, b)
                    prev = b
                point_loops.append((f"point:{c.prefix}", prev, c.body, c.point, c.axes))
                coord_names.extend(names)
            elif isinstance(c, CoordinateFunction):
                bad = [j for j in c.joints if j not in physical]
                if bad:
                    raise ModelError(f"coordinate {c.name!r} depends on unknown joints {bad}")
                m.graph.add_node(f"virtual:{c.name}", link=None, intermediate=True)
                m._add_virtual(c.name, "P", _UNIT["x"], GROUND, f"virtual:{c.name}")
                functions.append(c)
                coord_names.append(c.name)
            else:
                raise ModelError(f"coordinate {k} must be a joint name, BodyPose, "
                                 f"PointPosition or CoordinateFunction, got {type(c).__name__}")
        if len(set(coord_names)) != len(coord_names):
            raise ModelError(f"repeated coordinates in {coord_names}")
        tree, cut_list = m._tree(cuts, avoid=heavy)
        spheres = self._point_close_spheres(m, cut_list, coord_names)
        if spheres:
            tree, cut_list = m._tree(cuts, avoid=heavy)
        chains, owner, tips, jowner = m._chains(tree, cut_list)
        self._chains = [c for c, _ in chains]
        self.phi_names = [p.name for p in m._primitives]
        index = {n: i for i, n in enumerate(self.phi_names)}
        self._index = index
        self._chain_idx = [np.array([index[n] for n in names]) for _, names in chains]
        self._owner = owner
        self._jowner = jowner
        self.coordinate_names = coord_names
        self.dof = len(coord_names)
        self._q_idx = np.array([index[n] for n in coord_names])
        self.N = len(self.phi_names)
        # loops
        loops = []
        for prim in cut_list:
            loops.append(_Loop(prim.name, "pose", tips[prim.name], self._body_link(prim.child),
                               prim.child_origin))
        for name, parent, p_parent, child, p_child in spheres:
            loops.append(_Loop(name, "point", self._body_link(parent), self._body_link(child),
                               homogeneous(p=p_child), homogeneous(p=p_parent)))
        axes_of = {}
        for lname, tip_body, body, point, axes in point_loops:
            axes_of[lname] = axes
            loops.append(_Loop(lname, "point", self._body_link(tip_body),
                               self._body_link(body), homogeneous(p=point)))
        self.loops = [l.name for l in loops]
        self._loops = []
        for l in loops:
            sides = [_Side(1.0, l.tip[0], l.tip[1],
                           np.eye(4) if l.tip_frame is None else l.tip_frame,
                           self._chain_idx[l.tip[0]][: l.tip[1] + 1])]
            if l.target is not None:
                sides.append(_Side(-1.0, l.target[0], l.target[1], l.target_frame,
                                   self._chain_idx[l.target[0]][: l.target[1] + 1]))
            cols = np.unique(np.concatenate([s.cols for s in sides]))
            li = _LoopInfo(l, sides, cols)
            if l.name in axes_of:          # a point coordinate constrains its own axes only
                li.base = np.eye(3)[:, ["xyz".index(a) for a in axes_of[l.name]]]
            self._loops.append(li)
        for f in functions:
            side = _FunctionSide(f, np.array([index[j] for j in f.joints]), index[f.name])
            li = _LoopInfo(_Loop(f"function:{f.name}", "function", None, None, np.eye(4)),
                           [side], np.unique(side.cols))
            li.k = li.rank = 1
            self._loops.append(li)
            self.loops.append(li.name)
        # reference assembly, row reduction, blocks, mobility
        phi0 = self._reference(reference)
        self._classify(phi0)
        self._check_mobility(phi0)
        self._make_blocks()
        self._last = phi0
        self._phi_ref = phi0
        self.actuators = list(coord_names) if all(n in physical for n in coord_names) else []

    # ------------------------------------------------------------ helpers
    @staticmethod
    def _point_close_spheres(m: Mechanism, cut_list, keep=()) -> list:
        """Close every cut spherical joint as a 3-row point constraint.

        An S joint that closes a loop needs no angles: the loop only asks its two
        centres to coincide (as a Pinocchio user would write it).  Its three R
        joints and two massless bodies are removed from the model's graph ``m``;
        returns (name, parent, centre in parent, child, centre in child) per S.
        """
        out = []
        for prim in cut_list:
            J = prim.compound
            if J is None or m._joints.get(J, {}).get("kind") != "S":
                continue
            names = m._joints[J]["primitives"]
            if any(n in keep for n in names):       # its angles are coordinates: keep them
                continue
            prims = [p for p in m._primitives if p.name in names]
            first, last = prims[0], prims[-1]
            m._primitives = [p for p in m._primitives if p.name not in names]
            for p in prims:
                m.graph.remove_edge(p.parent, p.child, key=p.name)
            for p in prims[1:]:
                m.graph.remove_node(p.parent)
            out.append((J, first.parent, first.origin[:3, 3], last.child,
                        last.child_origin[:3, 3]))
        return out

    def _body_link(self, body: str):
        """(chain, link) that carries ``body`` (None for the ground)."""
        if body == GROUND:
            return None
        if body in self._owner:
            return self._owner[body]
        for ci, chain in enumerate(self._chains):
            if body in chain.link_names:
                return (ci, chain.link_names.index(body))
        raise ModelError(f"body {body!r} is in no chain")

    def _reference(self, reference) -> np.ndarray:
        phi = np.zeros(self.N)
        if reference is not None:
            if isinstance(reference, Mapping):
                for k, v in reference.items():
                    if k in self._index:
                        phi[self._index[k]] = float(v)
                    elif k not in self.mechanism.primitive_joints:
                        raise ModelError(f"reference names unknown joint {k!r}")
            else:
                ref = finite_array(reference, "reference")
                names = self.mechanism.primitive_joints
                if ref.shape != (len(names),):
                    raise ModelError(f"reference must give the {len(names)} primitive joint "
                                     f"values {names}, got shape {ref.shape}")
                for k, v in zip(names, ref):
                    if k in self._index:
                        phi[self._index[k]] = v
        # virtual pose coordinates start at the pose of their body
        return self._solve_all(phi)

    # --------------------------------------------------- loop evaluation
    def _kinematics(self, phi: np.ndarray, order: int, chains=None):
        """ChainKinematics of the needed chains at phi (n, N)."""
        from .kinematics import ChainKinematics
        want = range(len(self._chains)) if chains is None else chains
        return {ci: ChainKinematics(self._chains[ci], phi[:, self._chain_idx[ci]], order)
                for ci in want}

    def _side_influence(self, side: _Side, kins: dict, order: int, cache: dict, k: int):
        """G, H, D of a side's rows (rotation and point), signed, over its columns."""
        key = (side.chain, side.link, tuple(side.T[:3, 3]), k, order)
        if key not in cache:
            kin = kins[side.chain]
            kin.order = order
            j, c = side.link, len(side.cols)
            n = kin._qT.shape[1]
            infs = ([kin.rotation(j)] if k == 6 else []) + [kin.point(j, side.T[:3, 3])]
            G = np.concatenate([i.G.reshape(n, 3, -1)[..., :c] for i in infs], axis=1)
            H = D = None
            if order >= 2:
                H = np.concatenate([i.H.reshape(n, 3, *i.H.shape[-2:])[..., :c, :c]
                                    for i in infs], axis=1)
            if order >= 3:
                D = np.concatenate([i.D.reshape(n, 3, *i.D.shape[-3:])[..., :c, :c, :c]
                                    for i in infs], axis=1)
            cache[key] = (G, H, D)
        G, H, D = cache[key]
        s = side.sign
        return s * G, None if H is None else s * H, None if D is None else s * D

    def _side_frame(self, side: _Side, kins: dict) -> np.ndarray:
        return kins[side.chain].link_frame(side.link, side.T)

    def _side_point(self, side: _Side, kins: dict) -> np.ndarray:
        return kins[side.chain].link_point(side.link, side.T[:3, 3])

    def _loop_residual(self, li: _LoopInfo, kins: dict, phi: np.ndarray) -> np.ndarray:
        """The raw closure residual of one loop (n, k): orientation error and
        position difference of its two sides, or u(phi) - q for a function."""
        if li.loop.kind == "function":
            return li.sides[0].parts(phi, 1)[0]
        if li.k == 3:                                # points only
            a = self._side_point(li.sides[0], kins)
            b = (self._side_point(li.sides[1], kins) if len(li.sides) > 1
                 else li.loop.target_frame[:3, 3])
            return a - b
        Fa = self._side_frame(li.sides[0], kins)
        Fb = (self._side_frame(li.sides[1], kins) if len(li.sides) > 1
              else np.broadcast_to(li.loop.target_frame, Fa.shape))
        dp = Fa[:, :3, 3] - Fb[:, :3, 3]
        return dp if li.k == 3 else np.concatenate(
            [_vex_error(Fa[:, :3, :3], Fb[:, :3, :3]), dp], axis=1)

    def _residuals(self, phi: np.ndarray):
        """Closure residuals of every loop (reduced, (n, r) each) and the kinematics."""
        kins = self._kinematics(phi, 1)
        out = []
        for li in self._loops:
            r = self._loop_residual(li, kins, phi)
            out.append(r if li.base is None else r @ li.base)
        return out, kins

    def _rows(self, phi: np.ndarray, order: int, residual: bool = True, kins=None):
        """Reduced rows of every loop (list of _Rows) and the chain kinematics used."""
        if kins is None:
            kins = self._kinematics(phi, max(order, 1))
        cache: dict = {}
        out = []
        n = phi.shape[0]
        for li in self._loops:
            rows = _Rows()
            for side in li.sides:
                if li.loop.kind == "function":
                    _, G, H, D = side.parts(phi, order)
                else:
                    G, H, D = self._side_influence(side, kins, order, cache, li.k)
                rows.G.append(G)
                rows.H.append(H)
                rows.D.append(D)
            if residual:
                rows.r = self._loop_residual(li, kins, phi)
            if li.mode != "full" or li.base is not None:
                if li.mode == "fixed" or li.mode == "full":
                    U0 = li.U if li.mode == "fixed" else li.base
                    U = np.broadcast_to(U0, (n,) + U0.shape)
                else:
                    Gl = np.zeros((n, li.k, len(li.cols)))
                    pos = {int(g): i for i, g in enumerate(li.cols)}
                    for side, G in zip(li.sides, rows.G):
                        Gl[:, :, [pos[int(g)] for g in side.cols]] += G
                    base = np.eye(li.k) if li.base is None else li.base
                    U = base @ np.linalg.svd(np.einsum("kr,nkc->nrc", base, Gl))[0][:, :, : li.rank]
                rows.U = U
                proj = lambda X: None if X is None else np.einsum("nkr,nk...->nr...", U, X)  # noqa
                rows.G = [proj(X) for X in rows.G]
                rows.H = [proj(X) for X in rows.H]
                rows.D = [proj(X) for X in rows.D]
                rows.r = proj(rows.r)
            out.append(rows)
        return out, kins

    def _bias(self, rows: list, kins: dict, phid: np.ndarray, phi: np.ndarray,
              motion: dict) -> list:
        """Velocity-product accelerations ``H^c(phi', phi')`` of every loop (reduced);
        ``motion`` collects the chains' screw motion (reused by inverse dynamics)."""
        from .kinematics import link_motion, point_acceleration
        out = []
        for li, rw in zip(self._loops, rows):
            if li.loop.kind == "function":          # u's H contracted with phi'
                side = li.sides[0]
                H = side.parts(phi, 2)[2]
                v = phid[:, side.cols]
                out.append(np.einsum("nrab,na,nb->nr", H, v, v))
                continue
            b = 0.0
            for side in li.sides:
                kin = kins[side.chain]
                if side.chain not in motion:
                    motion[side.chain] = link_motion(kin._pose, phid[:, self._chain_idx[side.chain]].T)
                w, v, aw, av = (x[:, side.link] for x in motion[side.chain])
                P = self._side_point(side, kins).T
                a = point_acceleration(w, v, aw, av, P)
                part = a if li.k == 3 else np.concatenate([aw, a], axis=0)
                b = b + side.sign * part.T
            if rw.U is not None:
                b = np.einsum("nkr,nk->nr", rw.U, b)
            out.append(b)
        return out

    # ------------------------------------------------------ construction
    def _loop_matrix(self, li: _LoopInfo, rows: _Rows, n: int) -> np.ndarray:
        """A loop's (reduced) rows over all N joints, (n, r, N)."""
        J = np.zeros((n, rows.G[0].shape[1], self.N))
        for side, G in zip(li.sides, rows.G):
            J[:, :, side.cols] += G
        return J

    def _solve_all(self, phi: np.ndarray) -> np.ndarray:
        """Assemble from ``phi`` moving every joint (minimum-norm Gauss-Newton)."""
        if not self._loops:
            return phi
        phi = phi.copy()[None]
        for _ in range(_MAX_ITER):
            rows, _ = self._rows(phi, 1)
            r = np.concatenate([rw.r[0] for rw in rows])
            if np.max(np.abs(r)) < _TOL:
                break
            J = np.concatenate([self._loop_matrix(li, rw, 1)[0]
                                for li, rw in zip(self._loops, rows)])
            dphi = np.linalg.lstsq(J, -r, rcond=1e-10)[0]
            step = np.max(np.abs(dphi))
            if step > 0.5:
                dphi *= 0.5 / step
            phi[0] += dphi
        else:
            res = [float(np.linalg.norm(rw.r[0])) for rw in rows]
            worst = int(np.argmax(res))
            raise ClosureError(
                f"the reference configuration cannot be assembled: loop "
                f"{self._loops[worst].name!r} misses by {res[worst]:.3e}",
                loop=self._loops[worst].name, residual=res[worst])
        return phi[0]

    def _classify(self, phi0: np.ndarray) -> None:
        """Structural rank of every loop and its row reduction (at the reference)."""
        rows, kins = self._rows(phi0[None], 1, residual=False)
        for li, rw in zip(self._loops, rows):
            G = self._loop_matrix(li, rw, 1)[0]        # rows after the base selection
            k = G.shape[0]
            sv = np.linalg.svd(G, compute_uv=False)
            scale = max(sv[0], 1e-300) if sv.size else 1.0
            rank = int(np.sum(sv > 1e-9 * scale))
            li.rank = rank
            if rank == k:
                if li.base is not None:
                    li.mode, li.U = "fixed", li.base
                continue
            if li.base is not None:
                li.mode = "svd"
                continue
            normal = self._plane_normal(li, kins)
            if normal is not None:
                e1 = np.cross(normal, [1.0, 0, 0] if abs(normal[0]) < 0.9 else [0, 1.0, 0])
                e1 /= np.linalg.norm(e1)
                e2 = np.cross(normal, e1)
                U = np.zeros((k, 3 if k == 6 else 2))
                if k == 6:
                    U[:3, 0] = normal
                    U[3:, 1], U[3:, 2] = e1, e2
                else:
                    U[:, 0], U[:, 1] = e1, e2
                if U.shape[1] == rank and li.base is None:
                    li.mode, li.U = "fixed", U
                    continue
            li.mode = "svd"

    def _plane_normal(self, li: _LoopInfo, kins: dict):
        """The common normal if every joint moving the loop keeps it planar."""
        axes = []
        for side in li.sides:
            kin = kins[side.chain]
            s = kin.axes.reshape(-1, kin.chain.dof, 3)[0][: side.link + 1]
            for sj, isR in zip(s, kin.chain.is_revolute[: side.link + 1]):
                axes.append((sj, bool(isR)))
        rev = [a for a, isR in axes if isR]
        if not rev:
            return None
        n = rev[0] / np.linalg.norm(rev[0])
        if any(np.linalg.norm(np.cross(a, n)) > 1e-9 for a in rev):
            return None
        if any(abs(a @ n) > 1e-9 for a, isR in axes if not isR):
            return None
        return n

    def _make_blocks(self) -> None:
        """Group loops that share dependent joints; each group is solved alone."""
        qset = set(self._q_idx.tolist())
        qpos = {int(g): a for a, g in enumerate(self._q_idx)}
        G = nx.Graph()
        for i, li in enumerate(self._loops):
            G.add_node(("loop", i))
            for c in li.cols.tolist():
                if c not in qset:
                    G.add_edge(("loop", i), ("joint", c))
        for d in range(self.N):
            if d not in qset and ("joint", d) not in G:
                raise ModelError(
                    f"joint {self.phi_names[d]!r} is neither a coordinate nor constrained by a "
                    f"loop: the coordinates {self.coordinate_names} do not fix it (the "
                    "mechanism has more mobility than coordinates)")
        self._blocks = []
        for comp in sorted(nx.connected_components(G), key=lambda s: min(map(str, s))):
            loops = sorted(i for kind, i in comp if kind == "loop")
            deps = np.array(sorted(i for kind, i in comp if kind == "joint"), int)
            rows = sum(self._loops[i].rank for i in loops)
            if rows != len(deps):
                names = [self._loops[i].name for i in loops]
                raise ModelError(
                    f"loops {names} give {rows} independent constraints on {len(deps)} "
                    f"dependent joints {[self.phi_names[d] for d in deps]}: the coordinates "
                    f"{self.coordinate_names} do not match the mobility (Grubler count "
                    f"{self.mechanism.grubler()} spatial, {self.mechanism.grubler(True)} planar)")
            dpos = {int(g): i for i, g in enumerate(deps)}
            offsets, k = [], 0
            for i in loops:
                offsets.append(slice(k, k + self._loops[i].rank))
                k += self._loops[i].rank
                for side in self._loops[i].sides:
                    cols = side.cols.tolist()
                    side.sel_dep = np.array([m for m, g in enumerate(cols) if g in dpos], int)
                    side.dep_pos = np.array([dpos[g] for g in cols if g in dpos], int)
                    side.sel_q = np.array([m for m, g in enumerate(cols) if g in qpos], int)
                    side.q_pos = np.array([qpos[g] for g in cols if g in qpos], int)
            self._blocks.append((loops, deps, offsets))

    def _check_mobility(self, phi0) -> None:
        rows, _ = self._rows(phi0[None], 1, residual=False)
        J = np.concatenate([self._loop_matrix(li, rw, 1)[0]
                            for li, rw in zip(self._loops, rows)]) if rows else np.zeros((0, 1))
        rank = np.linalg.matrix_rank(J, tol=1e-9 * max(np.abs(J).max(), 1e-300)) if rows else 0
        mobility = int(self.N - rank)
        self.mobility = mobility
        if mobility != self.dof:
            raise ModelError(
                f"the mechanism has mobility {mobility} at the reference configuration (rank "
                f"of the closure Jacobian {rank} for {self.N} joints; Grubler count "
                f"{self.mechanism.grubler()} spatial, {self.mechanism.grubler(True)} planar) "
                f"but {self.dof} coordinates were given: {self.coordinate_names} do not match "
                "the mobility")

    # ------------------------------------------------------------ closure
    def _phi_batch(self, q) -> tuple[np.ndarray, tuple]:
        q = np.asarray(q, dtype=float)
        if q.ndim == 0 or q.shape[-1] != self.dof:
            raise ModelError(f"q must have shape (..., {self.dof}) for coordinates "
                             f"{self.coordinate_names}, got {q.shape}")
        if not np.all(np.isfinite(q)):
            raise ModelError("q contains NaN or infinite values")
        batch = q.shape[:-1]
        return q.reshape(-1, self.dof), batch

    def assemble(self, q, guess=None) -> np.ndarray:
        """All joint values phi (..., N) at coordinates ``q`` (..., M).

        Newton on the dependent joints, block by block, from ``guess``
        (default: the model's ``guess`` function, else the previous solution).
        Without a guess function a batch is treated as a path: each
        configuration starts from its predecessor's solution, so a trajectory
        stays on its assembly branch.

        Raises
        ------
        ClosureError
            A loop cannot be closed; the message names it and the residual.
        SingularityError
            The dependent-joint Jacobian is singular on the way.
        """
        qf, batch = self._phi_batch(q)
        with located(batch, qf.shape[0]):
            return self._assemble(qf, guess)[0].reshape(batch + (self.N,))

    def _assemble(self, qf: np.ndarray, guess=None):
        """phi (n, N) at coordinates qf (n, M), and the chain kinematics at it."""
        n = qf.shape[0]
        if guess is not None:
            phi = np.array(np.broadcast_to(np.asarray(guess, float).reshape(-1, self.N),
                                           (n, self.N)))
        elif self._guess is not None:
            g = self._guess(qf)
            if isinstance(g, Mapping):              # joint name -> values (n,)
                phi = np.array(np.broadcast_to(self._phi_ref, (n, self.N)))
                for k, v in g.items():
                    if k in self._index:
                        phi[:, self._index[k]] = v
            else:
                phi = np.asarray(g, dtype=float).reshape(n, self.N).copy()
        else:
            last = self._last.reshape(-1, self.N)
            phi = np.array(np.broadcast_to(last if last.shape[0] in (1, n) else self._phi_ref,
                                           (n, self.N)))
        phi[:, self._q_idx] = qf
        if n == 1 or guess is not None or self._guess is not None:
            phi, kins, res = self._newton(phi)
            bad = np.nonzero(res >= _TOL)[0]
            if bad.size:
                self._raise_open(res[bad[:1]], phi[bad[:1]], None if n == 1 else int(bad[0]))
            self._last = phi[-1:].copy()
            return phi, kins
        # no first guess: the batch is a path, each configuration starts from its
        # predecessor's solution (continuation keeps the assembly branch)
        prev = phi[0].copy()
        for k in range(n):
            start = prev.copy()
            start[self._q_idx] = qf[k]
            try:
                sol, _, r = self._newton(start[None])
            except SingularityError as err:
                err.index = (k,)
                raise
            if r[0] >= _TOL:
                self._raise_open(r, sol, k)
            phi[k] = prev = sol[0]
        _, kins = self._residuals(phi)
        self._last = phi[-1:].copy()
        return phi, kins

    def _newton(self, phi: np.ndarray):
        """Newton on the dependent joints, block by block; returns the per-configuration
        worst residual instead of raising when it does not converge."""
        n = phi.shape[0]
        for it in range(_MAX_ITER):
            res, kins = self._residuals(phi)
            worst = (np.max([np.abs(r).max(axis=1) for r in res], axis=0) if res
                     else np.zeros(n))
            if np.all(worst < _TOL):
                return phi, kins, worst
            rows, _ = self._rows(phi, 1, kins=kins)
            for loops, deps, offsets in self._blocks:
                r = np.concatenate([rows[i].r for i in loops], axis=1)
                A, _ = self._block_matrices(rows, loops, deps, offsets, n, need_q=False)
                Ai = self._inverse(A, loops, deps)
                step = -np.einsum("npr,nr->np", Ai, r)
                step[worst < _TOL] = 0.0
                lim = np.abs(step).max(axis=1, keepdims=True)
                step *= np.minimum(1.0, 0.5 / np.maximum(lim, 1e-300))
                phi[:, deps] += step
        res, kins = self._residuals(phi)
        worst = np.max([np.abs(r).max(axis=1) for r in res], axis=0)
        return phi, kins, worst

    def _raise_open(self, worst, phi, index):
        res, _ = self._residuals(phi)
        norms = [float(np.linalg.norm(r, axis=1).max()) for r in res]
        i = int(np.argmax(norms))
        where = "" if index is None else f" (batch index {index})"
        raise ClosureError(
            f"loop {self._loops[i].name!r} cannot be closed at these coordinates{where}: "
            f"residual {norms[i]:.3e} after {_MAX_ITER} Newton steps (outside the workspace "
            "or across a singularity)", loop=self._loops[i].name, residual=norms[i],
            index=None if index is None else (index,))

    def _block_matrices(self, rows, loops, deps, offsets, n, need_q=True):
        """A = dc/dphi_dep (n, R, nd) and Bq = dc/dq (n, R, M) of one block."""
        R = offsets[-1].stop
        A = np.zeros((n, R, len(deps)))
        B = np.zeros((n, R, self.dof)) if need_q else None
        for i, rs in zip(loops, offsets):
            for side, G in zip(self._loops[i].sides, rows[i].G):
                if side.sel_dep.size:
                    A[:, rs, side.dep_pos] += G[:, :, side.sel_dep]
                if need_q and side.sel_q.size:
                    B[:, rs, side.q_pos] += G[:, :, side.sel_q]
        return A, B

    def _inverses(self, As: list) -> list:
        """Inverses of the blocks' matrices, same-sized blocks in one batched call."""
        out: list = [None] * len(As)
        by_size: dict = {}
        for k, A in enumerate(As):
            by_size.setdefault(A.shape[1:], []).append(k)
        for ks in by_size.values():
            try:
                Ai, cond = inverse_with_condition(np.stack([As[k] for k in ks]))
                ok = np.all(np.isfinite(Ai)) and np.all(cond < self.max_condition)
            except np.linalg.LinAlgError:
                ok = False
            for i, k in enumerate(ks):
                loops, deps, _ = self._blocks[k]
                out[k] = Ai[i] if ok else self._inverse(As[k], loops, deps)
        return out

    def _inverse(self, A: np.ndarray, loops, deps, what=None) -> np.ndarray:
        """Inverse of the block matrices, with a SingularityError near singularity
        (1-norm condition estimate, then the exact figures from an SVD)."""
        try:
            Ai, cond = inverse_with_condition(A)
            ok = np.all(np.isfinite(Ai)) and np.all(cond < self.max_condition)
        except np.linalg.LinAlgError:
            ok = False
        if not ok:
            _check_block(A, self, loops, deps, what)
        return Ai

    def condition(self, q) -> np.ndarray:
        """2-norm condition number of the dependent-joint Jacobian (...), per
        configuration (the worst block); large near a singularity.

        Examples
        --------
        >>> import numpy as np, mechanisms
        >>> fb = mechanisms.five_bar()
        >>> c = fb.condition([[2.0, 1.2], [2.0, 1.0]])
        >>> c.shape, bool(np.all(c >= 1))
        ((2,), True)
        """
        qf, batch = self._phi_batch(q)
        with located(batch, qf.shape[0]):
            phi, _ = self._assemble(qf)
        rows, _ = self._rows(phi, 1, residual=False)
        cond = np.ones(qf.shape[0])
        for loops, deps, offsets in self._blocks:
            A, _ = self._block_matrices(rows, loops, deps, offsets, qf.shape[0], need_q=False)
            sv = np.linalg.svd(A, compute_uv=False)
            c = np.where(sv[:, -1] > 0, sv[:, 0] / np.where(sv[:, -1] > 0, sv[:, -1], 1), np.inf)
            cond = np.maximum(cond, c)
        return cond.reshape(batch)

    # ------------------------------------------------------------ transfer
    def _transfer(self, phi: np.ndarray, order: int, kins=None, velocity=None):
        """The transfer G^phi_q (n, N, M), H^phi_qq, D^phi_qqq at assembled phi (n, N).

        With ``velocity=(qd, qdd)`` (order 1), also the joint rates phi' and
        accelerations phi'' from the acceleration-level closure, without H.
        """
        n, M = phi.shape[0], self.dof
        rows, kins = self._rows(phi, order, residual=False, kins=kins)
        G = np.zeros((n, self.N, M))
        G[:, self._q_idx, np.arange(M)] = 1.0
        H = np.zeros((n, self.N, M, M)) if order >= 2 else None
        D = np.zeros((n, self.N, M, M, M)) if order >= 3 else None
        mats = [self._block_matrices(rows, loops, deps, offsets, n)
                for loops, deps, offsets in self._blocks]
        inv = self._inverses([A for A, _ in mats])
        for (loops, deps, offsets), (A, B), Ai in zip(self._blocks, mats, inv):
            G[:, deps] = -Ai @ B
        for (loops, deps, offsets), Ai in zip(self._blocks, inv) if order >= 2 else ():
            X = self._known(rows, loops, offsets, 2, G, None, n)
            H[:, deps] = -np.einsum("npr,nrab->npab", Ai, X)
        for (loops, deps, offsets), Ai in zip(self._blocks, inv) if order >= 3 else ():
            X = self._known(rows, loops, offsets, 3, G, H, n)
            D[:, deps] = -np.einsum("npr,nrcab->npcab", Ai, X)
        tr = Transfer(G, H, D)
        if velocity is None:
            return tr, kins
        qd, qdd = velocity
        phid = tr.rates(qd)
        phidd = tr.rates(qdd)          # G q'', plus the velocity products below:
        motion: dict = {}
        bias = self._bias(rows, kins, phid, phi, motion)
        for (loops, deps, offsets), Ai in zip(self._blocks, inv):
            b = np.concatenate([bias[i] for i in loops], axis=1)
            phidd[:, deps] -= np.einsum("npr,nr->np", Ai, b)      # -G^c_p^-1 H^c(phi', phi')
        return tr, kins, phid, phidd, motion

    def _known(self, rows, loops, offsets, order, G, H, n) -> np.ndarray:
        """The part of a block's order-2 (or 3) constraint that does not involve
        the dependent joints' own H (or D): sum over the sides of the chain rule."""
        R = offsets[-1].stop
        M = self.dof
        X = np.zeros((n, R) + (M,) * order)
        for i, rs in zip(loops, offsets):
            for side, Gc, Hc, Dc in zip(self._loops[i].sides, rows[i].G, rows[i].H, rows[i].D):
                Gs = G[:, side.cols]
                if order == 2:
                    X[:, rs] += np.einsum("nrmk,nma,nkb->nrab", Hc, Gs, Gs, optimize=True)
                else:
                    Hs = H[:, side.cols]
                    zero = np.zeros(Hs.shape[:-2] + (M, M, M))
                    X[:, rs] += transfer_influence(Gc, Hc, Dc, Gs, Hs, zero)[2]
        return X

    # ------------------------------------------------------- public model
    def kinematics(self, q, order: int = 2) -> "ClosedKinematics":
        """Influence coefficients in q of any body (see :class:`ClosedKinematics`)."""
        return ClosedKinematics(self, q, order)

    def dynamics(self, q) -> "ClosedDynamics":
        """The transferred dynamic model at ``q`` (I*, P*, loads, energies)."""
        return ClosedDynamics(self, q)

    def joint_rates(self, q, qd, qdd=None):
        """phi' (and phi'' when ``qdd`` is given) of every joint (..., N)."""
        qf, batch = self._phi_batch(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd_ = np.zeros_like(qd) if qdd is None else match_batch(qdd, self.dof, batch, "qdd").T
        with located(batch, qf.shape[0]):
            phi, kins = self._assemble(qf)
            _, _, phid, phidd, _ = self._transfer(phi, 1, kins, velocity=(qd, qdd_))
        if qdd is None:
            return phid.reshape(batch + (self.N,))
        return phid.reshape(batch + (self.N,)), phidd.reshape(batch + (self.N,))

    def inverse_dynamics(self, q, qd, qdd, loads=None) -> np.ndarray:
        """Required loads at the coordinates, ``T_q = sum_c G_c^T T_c`` (..., M).

        The joint motion comes from the velocity- and acceleration-level
        closure (no second-order coefficients are formed) and each open chain
        runs its own recursive inverse dynamics (no P* is formed).
        """
        qf, batch = self._phi_batch(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        T, _ = self._required(qf, qd, qdd, loads, batch=batch)
        return T.reshape(batch + (self.dof,))

    def _required(self, qf, qd, qdd, loads, actuators=None, batch=()):
        """T_q (n, M) by blocks of configurations, and G^phi_q of ``actuators``;
        ``batch`` the caller's batch shape, for the index a SingularityError reports."""
        from ._array import blocks
        n = qf.shape[0]
        batched_loads = loads is not None and any(
            f.force.ndim > 1 or f.point.ndim > 1 for f in loads._forces) or (
            loads is not None and any(m.moment.ndim > 1 for m in loads._moments))
        parts = [slice(None)] if batched_loads else blocks(n)
        T = np.empty((n, self.dof))
        Ga = None if actuators is None else np.empty((n, len(actuators), self.dof))
        for sl in parts:
            start, stop, _ = sl.indices(n)
            with located(batch, stop - start, start):
                phi, kins = self._assemble(qf[sl])
                tr, _, phid, phidd, motion = self._transfer(phi, 1, kins,
                                                            velocity=(qd[sl], qdd[sl]))
            T[sl] = tr.load(self._joint_loads(phi, phid, phidd, loads, kins, motion))
            if actuators is not None:
                Ga[sl] = tr.G[:, actuators]
        return T, Ga

    def _joint_loads(self, phi, phid, phidd, loads, kins=None, motion=None) -> np.ndarray:
        """Joint loads of every chain at (phi, phi', phi''), summed into phi (n, N)."""
        from .dynamics import _inverse_dynamics
        T = np.zeros(phi.shape)
        for ci, chain in enumerate(self._chains):
            cl = self._chain_loads(loads, ci) if loads else None
            if chain.total_mass <= 0 and cl is None:
                continue
            idx = self._chain_idx[ci]
            if cl is None and phi.shape[0] == 1:            # lean single configuration
                kc = compiled_data(chain)
                if kc is not None:
                    T[:, idx] += _compiled.inverse_dynamics(kc, phi[:, idx], phid[:, idx],
                                                            phidd[:, idx])
                else:
                    T[0, idx] += _scalar.inverse_dynamics(chain._scalar, phi[0, idx].tolist(),
                                                          phid[0, idx].tolist(),
                                                          phidd[0, idx].tolist())
            elif kins is not None and cl is None and ci in kins:
                T[:, idx] += _inverse_dynamics(chain, kins[ci]._pose, phid[:, idx].T,
                                               phidd[:, idx].T,
                                               motion=None if motion is None
                                               else motion.get(ci)).T
            else:
                T[:, idx] += chain.inverse_dynamics(phi[:, idx], phid[:, idx], phidd[:, idx],
                                                    loads=cl)
        return T

    def _chain_loads(self, loads, ci: int):
        """The part of ``loads`` that acts on bodies and joints owned by chain ci."""
        from .loads import Loads
        part = Loads()
        chain = self._chains[ci]
        for f in loads._forces:
            owner = self._owner.get(f.link)
            if owner is None:
                raise ModelError(f"load on unknown body {f.link!r}")
            if owner[0] == ci:
                part._forces.append(type(f)(chain.link_names[owner[1]], f.force, f.point))
        for mo in loads._moments:
            owner = self._owner.get(mo.link)
            if owner is None:
                raise ModelError(f"load on unknown body {mo.link!r}")
            if owner[0] == ci:
                part._moments.append(type(mo)(chain.link_names[owner[1]], mo.moment))
        for s in loads._springs:
            if s.joint not in self._jowner:
                raise ModelError(f"spring on unknown joint {s.joint!r}")
            if self._jowner[s.joint][0] == ci:
                part._springs.append(s)
        for d in loads._dampers:
            if d.joint not in self._jowner:
                raise ModelError(f"damper on unknown joint {d.joint!r}")
            if self._jowner[d.joint][0] == ci:
                part._dampers.append(d)
        return part if part else None

    def in_coordinates(self, coordinates, guess=None, name: str | None = None) -> "ClosedModel":
        """The same mechanism modelled in other coordinates (e.g. actuator ones).

        The new model starts its position solver from this model's last
        assembled configuration.
        """
        physical = set(self.mechanism.primitive_joints)
        last = self._last.reshape(-1, self.N)[-1]
        ref = {k: last[i] for k, i in self._index.items() if k in physical}
        return self.mechanism.model(coordinates, reference=ref, guess=guess, name=name)

    def actuator_model(self) -> "ClosedModel":
        """The model in the actuated joints ``self.actuators`` (as many as dof)."""
        acts = getattr(self, "actuators", None)
        if not acts:
            raise ModelError("this model has no actuators listed (set model.actuators)")
        return self.in_coordinates(acts, name=f"{self.name} in actuator coordinates")

    def actuator_jacobian(self, q, actuators: Sequence[str]) -> np.ndarray:
        """``G^a_q`` (..., Na, M): rates of the actuated joints per coordinate rate."""
        qf, batch = self._phi_batch(q)
        idx = self._joint_indices(actuators)
        with located(batch, qf.shape[0]):
            phi, kins = self._assemble(qf)
            tr, _ = self._transfer(phi, 1, kins)
        return tr.G[:, idx].reshape(batch + (len(idx), self.dof))

    def _joint_indices(self, names: Sequence[str]) -> np.ndarray:
        if isinstance(names, str):
            names = [names]
        out = []
        for n in names:
            if n not in self.phi_names:
                raise ModelError(f"unknown joint {n!r}; joints are {self.phi_names}")
            out.append(self.phi_names.index(n))
        return np.array(out)

    def actuator_loads(self, q, qd, qdd, actuators: Sequence[str], weights=None,
                       loads=None) -> np.ndarray:
        """Loads of actuators at the joints ``actuators`` for a motion (..., Na).

        ``(G^a_q)^T tau_a = T_q``: solved exactly when Na = M (e.g. the six leg
        forces of a Stewart platform moved in platform coordinates), by the
        weighted minimum-norm rule of :func:`kic.load_distribution` when
        Na > M (overconstrained); :func:`kic.internal_loads` spans the rest.
        """
        from .actuation import load_distribution
        qf, batch = self._phi_batch(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        idx = self._joint_indices(actuators)
        T, G = self._required(qf, qd, qdd, loads, idx, batch=batch)
        if G.shape[-2] == G.shape[-1]:
            # checked like the closures: near a singularity of the actuation the
            # loads grow without bound and a SingularityError says so
            with located(batch, G.shape[0]):
                Gi = self._inverse(np.swapaxes(G, -1, -2), [], idx,
                                   what="actuator Jacobian G^a_q")
            tau = (Gi @ T[..., None])[..., 0]
        else:
            tau = load_distribution(G, T, weights)
        return tau.reshape(batch + (len(idx),))

    def forward_dynamics(self, q, qd, tau, loads=None) -> np.ndarray:
        """``q'' = I*_q^-1 (T - q'^T P*_q q' - T_L)`` (..., M)."""
        qf, batch = self._phi_batch(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        tau = match_batch(tau, self.dof, batch, "tau").T
        with located(batch, qf.shape[0]):
            phi, kins = self._assemble(qf)
            tr, _, phid, phidd, motion = self._transfer(phi, 1, kins,
                                                        velocity=(qd, np.zeros_like(qd)))
            bias = tr.load(self._joint_loads(phi, phid, phidd, loads, kins, motion))
            I = self._inertia(phi, tr)
            qdd = spd_solve(I, tau - bias, f"effective inertia I* in {self.coordinate_names}")
        return qdd.reshape(batch + (self.dof,))

    def _inertia(self, phi, tr) -> np.ndarray:
        I = 0.0
        for ci, chain in enumerate(self._chains):
            if chain.total_mass <= 0:
                continue
            idx = self._chain_idx[ci]
            I = I + tr.rows(idx).inertia(chain.dynamics(phi[:, idx]).I_star)
        return I

    def __repr__(self) -> str:
        return (f"<ClosedModel {self.name or ''} in {self.coordinate_names}: "
                f"{self.N} joints, {len(self._loops)} loops>")


def _check_block(A: np.ndarray, model: ClosedModel, loops, deps, what=None) -> None:
    sv = np.linalg.svd(A, compute_uv=False)
    smin, smax = sv[:, -1], sv[:, 0]
    bad = ~(smin * model.max_condition > np.maximum(smax, 1e-300))
    if np.any(bad):
        i = int(np.argmax(bad))
        cond = float(smax[i] / smin[i]) if smin[i] > 0 else float("inf")
        names = [model._loops[k].name for k in loops]
        if what is not None:
            raise SingularityError(
                f"singular {what} for joints {[model.phi_names[d] for d in deps]}: smallest "
                f"singular value {smin[i]:.3e}, condition number {cond:.3e}"
                + (f" at batch index {i}" if A.shape[0] > 1 else ""),
                sigma_min=float(smin[i]), condition=cond, where=what,
                index=(i,) if A.shape[0] > 1 else None)
        raise SingularityError(
            f"singular configuration of loops {names}: the dependent joints "
            f"{[model.phi_names[d] for d in deps]} cannot be solved (smallest singular value "
            f"{smin[i]:.3e}, condition number {cond:.3e})" + (f" at batch index {i}"
                                                               if A.shape[0] > 1 else ""),
            sigma_min=float(smin[i]), condition=cond,
            where={"loops": names, "joints": [model.phi_names[d] for d in deps]},
            index=(i,) if A.shape[0] > 1 else None)


class ClosedKinematics:
    """Influence coefficients of a closed mechanism's bodies in its coordinates.

    Attributes
    ----------
    q : ndarray (..., M)
    phi : ndarray (..., N)
        The assembled joint values.
    transfer : Transfer
        ``G^phi_q``, ``H^phi_qq`` (and ``D`` for order 3), batch first.
    """

    def __init__(self, model: ClosedModel, q, order: int = 2) -> None:
        if order not in (1, 2, 3):
            raise ModelError(f"order must be 1, 2 or 3, got {order!r}")
        self.model = model
        self.order = order
        qf, self._batch = model._phi_batch(q)
        self.q = qf.reshape(self._batch + (model.dof,))
        with located(self._batch, qf.shape[0]):
            phi, kins = model._assemble(qf)
            self._tr, self._kins = model._transfer(phi, order, kins)
        self._phi = phi
        self.phi = phi.reshape(self._batch + (model.N,))
        for kin in self._kins.values():
            kin.order = order

    @property
    def transfer(self) -> Transfer:
        """``G^phi_q`` (..., N, M), ``H^phi_qq`` and ``D^phi_qqq`` (order 3) at q."""
        b = self._batch
        shape = lambda X: None if X is None else X.reshape(b + X.shape[1:])  # noqa: E731
        return Transfer(shape(self._tr.G), shape(self._tr.H), shape(self._tr.D))

    def _body(self, body: str):
        owner = self.model._owner.get(body)
        if owner is None:
            raise ModelError(f"unknown body {body!r}; bodies: "
                             f"{sorted(self.model._owner)}")
        return owner

    def _transferred(self, ci, inf: Influence) -> Influence:
        tr = self._tr.rows(self.model._chain_idx[ci])
        n = self._phi.shape[0]
        G, H, D = tr.influence(inf.G.reshape(n, 3, -1),
                               None if inf.H is None else inf.H.reshape(n, 3, *inf.H.shape[-2:]),
                               None if inf.D is None else inf.D.reshape(n, 3, *inf.D.shape[-3:]))
        out = lambda X: None if X is None else X.reshape(self._batch + X.shape[1:])  # noqa
        return Influence(out(G), out(H), out(D))

    def rotation(self, body: str) -> Influence:
        """Influence coefficients (in q) of the angular motion of ``body``."""
        ci, j = self._body(body)
        return self._transferred(ci, self._kins[ci].rotation(j))

    def point(self, body: str, p=(0.0, 0.0, 0.0)) -> Influence:
        """Influence coefficients (in q) of a point fixed on ``body`` (body frame, m)."""
        ci, j = self._body(body)
        return self._transferred(ci, self._kins[ci].point(j, p))

    def frame(self, body: str) -> np.ndarray:
        """World frame of ``body`` (..., 4, 4)."""
        ci, j = self._body(body)
        F = self._kins[ci].frames
        return F.reshape(-1, F.shape[-3], 4, 4)[:, j].reshape(self._batch + (4, 4))


class ClosedDynamics(DynamicModel):
    """:class:`DynamicModel` of a :class:`ClosedModel`: the open chains' models
    transferred to q and superposed, ``I*_q = sum_c G_c^T I*_c G_c`` etc.

    Large batches are processed in blocks of configurations (the transfer's
    second-order coefficients of a Stewart platform are ~12 kB a pose)."""

    def __init__(self, model: ClosedModel, q) -> None:
        from ._array import blocks
        qf, batch = model._phi_batch(q)
        super().__init__(qf.reshape(batch + (model.dof,)), batch)
        self.model = model
        with located(batch, qf.shape[0]):
            self._phi, _ = model._assemble(qf)
        self._parts = [(sl, {}) for sl in blocks(qf.shape[0])]

    def _part(self, k, order=2):
        """Transfer (to ``order``) and chain models of block k (kept for one block)."""
        sl, data = self._parts[k]
        if order not in data and not (order == 1 and 2 in data):
            m = self.model
            phi = self._phi[sl]
            with located(self._batch, sl.stop - sl.start, sl.start):
                tr, _ = m._transfer(phi, order)
            models = {ci: c.dynamics(phi[:, m._chain_idx[ci]])
                      for ci, c in enumerate(m._chains) if c.total_mass > 0}
            if len(self._parts) > 1:
                return sl, (tr, models)
            data[order] = (tr, models)
        return sl, data.get(order) or data[2]

    @property
    def _tr(self):
        if len(self._parts) == 1:
            return self._part(0)[1][0]
        return self.model._transfer(self._phi, 2)[0]

    def _sum(self, *terms, order=2):
        """Sums over the chains of fn(transfer rows, chain model) for each
        (fn, tail) in terms, in one pass block by block, as batch-last arrays."""
        n = self._phi.shape[0]
        outs = [np.zeros((n,) + tail) for _, tail in terms]
        for k in range(len(self._parts)):
            sl, (tr, models) = self._part(k, order)
            for ci, dyn in models.items():
                rows = tr.rows(self.model._chain_idx[ci])
                for out, (fn, _) in zip(outs, terms):
                    out[sl] += fn(rows, dyn)
        outs = [np.moveaxis(o, 0, -1) for o in outs]
        return outs[0] if len(outs) == 1 else outs

    # the base class expects batch-last arrays; I*, loads and energies need only
    # the first-order transfer, P* the second
    def _I(self):
        M = self.dof
        return self._sum((lambda tr, d: tr.inertia(d.I_star), (M, M)), order=1)

    def _P(self):
        M = self.dof
        I, P = self._sum((lambda tr, d: tr.inertia(d.I_star), (M, M)),
                         (lambda tr, d: tr.power(d.I_star, d.P_star), (M, M, M)))
        self._cache.setdefault("I", from_batch(I, self._batch, 2))    # same pass, keep I*
        return P

    def _gravity(self):
        return self._sum((lambda tr, d: tr.load(d.gravity_load), (self.dof,)), order=1)

    def _potential(self):
        return self._sum((lambda tr, d: d.potential_energy, ()), order=1)

    def _applied(self, loads, qdT):
        qd = None if qdT is None else qdT.T
        phid = None if qd is None else self._tr.rates(qd)
        T = np.zeros(self._phi.shape)
        m = self.model
        for ci, chain in enumerate(m._chains):
            cl = m._chain_loads(loads, ci)
            if cl is None:
                continue
            idx = m._chain_idx[ci]
            T[:, idx] += cl.chain_load(chain, self._phi[:, idx],
                                       None if phid is None else phid[:, idx])
        return np.moveaxis(self._tr.load(T), 0, -1)

    def loads_energy(self, loads) -> np.ndarray:
        E = 0.0
        m = self.model
        for ci, chain in enumerate(m._chains):
            cl = m._chain_loads(loads, ci)
            if cl is None:
                continue
            idx = m._chain_idx[ci]
            E = E + chain.dynamics(self._phi[:, idx]).loads_energy(cl)
        return np.broadcast_to(E, self._batch) if np.ndim(E) == 0 else E.reshape(self._batch)
