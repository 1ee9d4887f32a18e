"""Loops of a closed mechanism: open chains, cut joints and their closure rows.

The initial model is a set of open chains from the ground (the spanning tree
of a :class:`kic.Mechanism`, plus one chain tip per cut joint) in the initial
coordinates phi: every primitive joint value, the cut joints' included.  Each
cut gives a closure ``c_l(phi) = 0``: the tip frame of its chain coincides with
the joint's frame on the other body (6 rows, "pose"), or a point coincides
(3 rows, "point": a cut spherical joint, a :class:`kic.PointPosition`), or a
coordinate function equals its value (1 row).  Rows that are structurally
dependent (planar loops, the Bricard linkage) are reduced to independent
combinations.

With the coordinates q a subset of phi, the other joints p (dependent) split
into independent *blocks*: connected components of the loops that share them,
each solved on its own (the six legs of a Stewart platform are six 3x3
systems, not one 18x18).  Per block, ``A = dc/dp`` and ``B = dc/dq``.

:class:`LoopSystem` holds this structure (constant once built) and evaluates
it at joint values phi (batch first, ``(n, N)``): residuals, closure rows and
their coefficients, the block matrices, velocity-product accelerations, the
condition numbers and the signs of ``det A`` (the assembly mode).

Condition numbers are made dimensionless with a characteristic length ``L``
of the mechanism (length rows divided by L, prismatic columns multiplied by
L), so they do not change with the units or the size of the mechanism.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ._array import finite_array, homogeneous
from .coordinates import CoordinateFunction, CoordinateSetup
from .errors import ClosureError, ModelError, SingularityError
from .kernels.linalg import frobenius_bounds, scaled_condition, small_inverse
from .kinematics import ChainKinematics, link_motion, point_acceleration
from .settings import (CLOSURE_TOLERANCE, FROBENIUS_MARGIN, GAUSS_NEWTON_RCOND,
                       NEWTON_MAX_ITERATIONS, NEWTON_MAX_STEP, RANK_RTOL, STRUCTURE_RTOL, TINY)

__all__ = ["LoopSystem", "Loop", "Side", "FunctionSide", "Block", "LoopRows",
           "scaled_condition", "characteristic_length", "TOLERANCE", "MAX_ITERATIONS"]

TOLERANCE = CLOSURE_TOLERANCE           # (kic.settings) rad, and lengths relative to L
MAX_ITERATIONS = NEWTON_MAX_ITERATIONS  # (kic.settings)


def _vex_error(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """Orientation error of Ra relative to Rb (..., 3): vex of the skew part of Ra Rb^T."""
    E = Ra @ np.swapaxes(Rb, -1, -2)
    return 0.5 * np.stack([E[..., 2, 1] - E[..., 1, 2], E[..., 0, 2] - E[..., 2, 0],
                           E[..., 1, 0] - E[..., 0, 1]], axis=-1)


class Side:
    """One side of a loop: a frame (or point) ``T`` on link ``link`` of chain ``chain``,
    entering the closure with ``sign``; ``cols`` the phi indices that move it."""

    __slots__ = ("sign", "chain", "link", "T", "cols", "sel_dep", "dep_pos", "sel_q", "q_pos")

    def __init__(self, sign: float, chain: int, link: int, T: np.ndarray, cols: np.ndarray):
        self.sign, self.chain, self.link, self.T, self.cols = sign, chain, link, T, cols


class FunctionSide:
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


class Loop:
    """A closure: its sides, the phi columns that move it and its row reduction.

    Attributes
    ----------
    name : str
        The cut joint (or virtual closure) it closes.
    kind : {"pose", "point", "function"}
    k : int
        Raw rows (6, 3 or 1).
    rank : int
        Independent rows.
    reduction : {"full", "fixed", "svd"}
        Rows used as they are, through a constant projection ``U`` (k, rank), or
        through the leading left singular vectors at each configuration.
    base : ndarray (k, k0) or None
        A constant row selection applied first (a point coordinate's own axes).
    target : ndarray (4, 4)
        The frame (or point) the tip must meet when it meets the ground.
    """

    def __init__(self, name: str, kind: str, sides: list, target=None) -> None:
        self.name, self.kind, self.sides = name, kind, sides
        self.cols = np.unique(np.concatenate([s.cols for s in sides]))
        self.k = {"pose": 6, "point": 3, "function": 1}[kind]
        self.rank = self.k
        self.reduction = "full"
        self.U = None
        self.base = None
        self.target = target

    def length_rows(self) -> np.ndarray:
        """Which reduced rows are lengths (True) rather than angles."""
        if self.kind == "function":
            return np.zeros(self.rank, bool)
        raw = np.array([False] * 3 + [True] * 3) if self.k == 6 else np.ones(3, bool)
        if self.reduction == "fixed":
            # a projected row is a length when it draws on length rows only
            # (U's columns are unit vectors: an entry below RANK_RTOL is a zero)
            return np.array([bool(np.all(raw[np.abs(u) > RANK_RTOL])) for u in self.U.T])
        if self.reduction == "svd" or self.base is not None:
            return np.ones(self.rank, bool)
        return raw

    def __repr__(self) -> str:
        return f"<Loop {self.name!r} {self.kind}: rank {self.rank} of {self.k}>"


class LoopRows:
    """A loop's reduced rows at a batch: residual and per-side coefficients."""

    __slots__ = ("r", "G", "H", "D", "U")

    def __init__(self):
        self.r, self.G, self.H, self.D, self.U = None, [], [], [], None


@dataclass
class Block:
    """Loops that share dependent joints, solved together.

    ``loops`` indices into :attr:`LoopSystem.loops`, ``joints`` the dependent
    phi indices, ``rows`` the slice of each loop's rows in the block's rows."""

    loops: list
    joints: np.ndarray
    rows: list
    length_rows: np.ndarray
    length_cols: np.ndarray

    @property
    def size(self) -> int:
        return len(self.joints)


def characteristic_length(points: np.ndarray) -> np.ndarray:
    """A mechanism's characteristic length L (m) from its joint points (..., P, 3)
    at its reference configuration: the largest distance between two of them or
    one and the world origin, 1 m if all coincide (leading axes kept: one L per
    design).  Lengths divided by L make closure residuals and condition numbers
    dimensionless."""
    points = np.asarray(points, float)
    pts = np.concatenate([np.zeros(points.shape[:-2] + (1, 3)), points], axis=-2)
    d = np.linalg.norm(pts[..., :, None, :] - pts[..., None, :, :], axis=-1).max(axis=(-2, -1))
    return np.where(d > 0, d, 1.0)


class LoopSystem:
    """The open chains and loop closures of a mechanism in coordinates q.

    Built by :class:`kic.ClosedModel` from a :class:`~kic.coordinates.CoordinateSetup`;
    constant once built.

    Attributes
    ----------
    chains : list of kic.SerialChain
        The open chains of the spanning tree (and the cut joints' tips).
    chain_joints : list of int arrays
        The phi index of every joint of each chain.
    owner : dict
        body -> (chain, link) that carries its mass.
    joint_owner : dict
        primitive joint -> (chain, link) of its first occurrence.
    phi_names : list of str
    coordinate_names : list of str
    q_idx : int array (M,)
        Positions of the coordinates in phi.
    loops : list of Loop
    blocks : list of Block
    length : float
        The characteristic length L (m) of the mechanism: the largest distance
        between two joints at the reference configuration.
    """

    def __init__(self, setup: CoordinateSetup, cuts: Sequence[str] = ()) -> None:
        m = setup.mechanism
        self.ground = m.ground
        tree, cut_list = m.spanning_tree(cuts, avoid=setup.heavy)
        spheres = _point_close_spheres(m, cut_list, setup.names)
        if spheres:
            tree, cut_list = m.spanning_tree(cuts, avoid=setup.heavy)
        chains, owner, tips, jowner = m.open_chains(tree, cut_list)
        self.mechanism = m
        self.chains = [c for c, _ in chains]
        self.phi_names = [p.name for p in m.all_primitives()]
        self.index = {n: i for i, n in enumerate(self.phi_names)}
        self.chain_joints = [np.array([self.index[n] for n in names]) for _, names in chains]
        self.owner, self.joint_owner = owner, jowner
        self.coordinate_names = list(setup.names)
        self.dof = len(self.coordinate_names)
        self.q_idx = np.array([self.index[n] for n in self.coordinate_names])
        self.N = len(self.phi_names)
        self.is_prismatic = np.array([p.kind == "P" for p in m.all_primitives()])
        loops = []
        for prim in cut_list:
            ci, li = tips[prim.name]
            loops.append(self._pose_or_point(prim.name, "pose", (ci, li), np.eye(4),
                                             self.body_link(prim.child), prim.child_origin))
        for name, parent, p_parent, child, p_child in spheres:
            loops.append(self._pose_or_point(name, "point", self.body_link(parent),
                                             homogeneous(p=p_parent), self.body_link(child),
                                             homogeneous(p=p_child)))
        for pc in setup.points:
            lp = self._pose_or_point(pc.name, "point", self.body_link(pc.tip_body), np.eye(4),
                                     self.body_link(pc.body), homogeneous(p=pc.point))
            lp.base = np.eye(3)[:, ["xyz".index(a) for a in pc.axes]]
            lp.rank = len(pc.axes)
            loops.append(lp)
        for f in setup.functions:
            side = FunctionSide(f, np.array([self.index[j] for j in f.joints]),
                                self.index[f.name])
            loops.append(Loop(f"function:{f.name}", "function", [side]))
        self.loops = loops
        self.loop_names = [l.name for l in loops]
        self.length = 1.0
        self.blocks: list[Block] = []

    def _pose_or_point(self, name, kind, tip, tip_frame, target, target_frame) -> Loop:
        """A loop whose tip side (on chain/link ``tip``) meets ``target`` (or the ground)."""
        sides = [Side(1.0, tip[0], tip[1], tip_frame, self.chain_joints[tip[0]][: tip[1] + 1])]
        if target is not None:
            sides.append(Side(-1.0, target[0], target[1], target_frame,
                              self.chain_joints[target[0]][: target[1] + 1]))
        return Loop(name, kind, sides, target=target_frame)

    def body_link(self, body: str):
        """(chain, link) that carries ``body`` (None for the ground)."""
        if body == self.ground:
            return None
        if body in self.owner:
            return self.owner[body]
        for ci, chain in enumerate(self.chains):
            if body in chain.link_names:
                return (ci, chain.link_names.index(body))
        raise ModelError(f"body {body!r} is in no chain")

    # -------------------------------------------------------- preparation
    def prepare(self, phi0: np.ndarray) -> None:
        """Row reduction, characteristic length, mobility check and blocks, at an
        assembled reference configuration ``phi0`` (N,)."""
        self._classify(phi0)
        self.length = self._characteristic_length(phi0)
        self._check_mobility(phi0)
        self._make_blocks()

    def reference_phi(self, reference, primitive_joints: Sequence[str]) -> np.ndarray:
        """All joint values at a (nearly) assembled ``reference`` (mapping or array).

        Gauss-Newton closes the loops from it.  The joints a mapping names keep
        their values where the joints it does not name can close the loops
        (e.g. a Stewart platform's legs given, its platform solved for); where
        they cannot (a rough sketch that names too many joints, or an array,
        which names them all), minimum-norm steps move every joint."""
        phi = np.zeros(self.N)
        named = np.zeros(self.N, bool)
        if reference is not None:
            if isinstance(reference, Mapping):
                for k, v in reference.items():
                    if k in self.index:
                        phi[self.index[k]] = float(v)
                        named[self.index[k]] = True
                    elif k not in primitive_joints:
                        raise ModelError(f"reference names unknown joint {k!r}")
            else:
                ref = finite_array(reference, "reference")
                if ref.shape != (len(primitive_joints),):
                    raise ModelError(f"reference must give the {len(primitive_joints)} "
                                     f"primitive joint values {list(primitive_joints)}, "
                                     f"got shape {ref.shape}")
                for k, v in zip(primitive_joints, ref):
                    if k in self.index:
                        phi[self.index[k]] = v
        if named.any() and not named.all():
            held, _ = self._close(phi, ~named)
            if held is not None:
                return held
        closed, rows = self._close(phi, np.ones(self.N, bool))
        if closed is None:
            res = [float(np.linalg.norm(rw.r[0])) for rw in rows]
            worst = int(np.argmax(res))
            raise ClosureError(
                f"the reference configuration cannot be assembled: loop "
                f"{self.loops[worst].name!r} misses by {res[worst]:.3e}",
                loop=self.loops[worst].name, residual=res[worst])
        return closed

    def _close(self, phi: np.ndarray, moving: np.ndarray):
        """Assemble from ``phi`` by minimum-norm Gauss-Newton steps of the joints
        ``moving`` (N,) bool, the others held: (joint values, None), or (None,
        the last loop rows) where the loops stay open."""
        if not self.loops:
            return phi, None
        phi = phi.copy()[None]
        for _ in range(NEWTON_MAX_ITERATIONS):
            rows, _ = self.rows(phi, 1)
            r = np.concatenate([rw.r[0] for rw in rows])
            if np.max(np.abs(r)) < CLOSURE_TOLERANCE * max(self.length, TINY):
                return phi[0], None
            J = np.concatenate([self.loop_matrix(l, rw, 1)[0]
                                for l, rw in zip(self.loops, rows)])
            dphi = np.linalg.lstsq(J[:, moving], -r, rcond=GAUSS_NEWTON_RCOND)[0]
            step = np.max(np.abs(dphi))
            if step > NEWTON_MAX_STEP:
                dphi *= NEWTON_MAX_STEP / step
            phi[0, moving] += dphi
        return None, rows

    def _characteristic_length(self, phi0: np.ndarray) -> float:
        """The largest distance between two joint points at phi0 (1 m if all coincide)."""
        pts = [chain_points.reshape(-1, 3) for chain_points in (
            ChainKinematics(chain, phi0[self.chain_joints[ci]], 1).joint_points
            for ci, chain in enumerate(self.chains))]
        return float(characteristic_length(np.concatenate(pts)))

    def _classify(self, phi0: np.ndarray) -> None:
        """Structural rank of every loop and its row reduction (at the reference)."""
        rows, kins = self.rows(phi0[None], 1, residual=False)
        for li, rw in zip(self.loops, rows):
            if li.kind == "function":
                continue
            G = self.loop_matrix(li, rw, 1)[0]        # rows after the base selection
            k = G.shape[0]
            sv = np.linalg.svd(G, compute_uv=False)
            scale = max(sv[0], TINY) if sv.size else 1.0
            rank = int(np.sum(sv > STRUCTURE_RTOL * scale))
            li.rank = rank
            if rank == k:
                if li.base is not None:
                    li.reduction, li.U = "fixed", li.base
                continue
            if li.base is not None:
                li.reduction = "svd"
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
                if U.shape[1] == rank:
                    li.reduction, li.U = "fixed", U
                    continue
            li.reduction = "svd"

    def _plane_normal(self, li: Loop, kins: dict):
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
        if any(np.linalg.norm(np.cross(a, n)) > STRUCTURE_RTOL for a in rev):
            return None
        if any(abs(a @ n) > STRUCTURE_RTOL for a, isR in axes if not isR):
            return None
        return n

    def _check_mobility(self, phi0) -> None:
        J = self.jacobian(phi0[None])[0]
        rank = (np.linalg.matrix_rank(J, tol=STRUCTURE_RTOL * max(np.abs(J).max(), TINY))
                if J.size else 0)
        self.mobility = int(self.N - rank)
        if self.mobility != self.dof:
            mech = self.mechanism
            raise ModelError(
                f"the mechanism has mobility {self.mobility} at the reference configuration "
                f"(rank of the closure Jacobian {rank} for {self.N} joints; Grubler count "
                f"{mech.grubler()} spatial, {mech.grubler(True)} planar) but {self.dof} "
                f"coordinates were given: {self.coordinate_names} do not match the mobility")

    def _make_blocks(self) -> None:
        """Group loops that share dependent joints; each group is solved alone."""
        import networkx as nx     # here, not at import: serial chains need not load it (0.1 s)
        qset = set(self.q_idx.tolist())
        qpos = {int(g): a for a, g in enumerate(self.q_idx)}
        G = nx.Graph()
        for i, li in enumerate(self.loops):
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
        self.blocks = []
        for comp in sorted(nx.connected_components(G), key=lambda s: min(map(str, s))):
            loops = sorted(i for kind, i in comp if kind == "loop")
            deps = np.array(sorted(i for kind, i in comp if kind == "joint"), int)
            nrows = sum(self.loops[i].rank for i in loops)
            if nrows != len(deps):
                names = [self.loops[i].name for i in loops]
                mech = self.mechanism
                raise ModelError(
                    f"loops {names} give {nrows} independent constraints on {len(deps)} "
                    f"dependent joints {[self.phi_names[d] for d in deps]}: the coordinates "
                    f"{self.coordinate_names} do not match the mobility (Grubler count "
                    f"{mech.grubler()} spatial, {mech.grubler(True)} planar)")
            dpos = {int(g): i for i, g in enumerate(deps)}
            offsets, k = [], 0
            for i in loops:
                offsets.append(slice(k, k + self.loops[i].rank))
                k += self.loops[i].rank
                for side in self.loops[i].sides:
                    cols = side.cols.tolist()
                    side.sel_dep = np.array([m for m, g in enumerate(cols) if g in dpos], int)
                    side.dep_pos = np.array([dpos[g] for g in cols if g in dpos], int)
                    side.sel_q = np.array([m for m, g in enumerate(cols) if g in qpos], int)
                    side.q_pos = np.array([qpos[g] for g in cols if g in qpos], int)
            lrows = np.concatenate([self.loops[i].length_rows() for i in loops])
            self.blocks.append(Block(loops, deps, offsets, lrows, self.is_prismatic[deps]))
        # the assembly mode: one det sign per diagonal block of each block's fine
        # block-triangular form (det A is their product, and each sign is a mode of
        # its own: the five-bar in tip coordinates has one per elbow)
        self.mode_parts = [(b, rows, cols) for b, block in enumerate(self.blocks)
                           for rows, cols in self._fine_blocks(block)]

    def _fine_blocks(self, block: Block) -> list:
        """The Dulmage-Mendelsohn fine decomposition of a block's structure (every
        row of a loop depends on the joints of that loop only): (row positions,
        column positions) of each square diagonal block of its block-triangular
        form, ordered by their first column.  The decomposition does not depend on
        the matching found (it is unique)."""
        import networkx as nx
        dpos = {int(g): i for i, g in enumerate(block.joints)}
        graph = nx.Graph()
        rows = []
        for i, sl in zip(block.loops, block.rows):
            cols = [dpos[c] for c in self.loops[i].cols.tolist() if c in dpos]
            for r in range(sl.start, sl.stop):
                rows.append(("row", r))
                graph.add_edges_from((("row", r), ("col", c)) for c in cols)
        whole = [(np.arange(block.size), np.arange(block.size))]
        if len(rows) != block.size:
            return whole
        match = nx.bipartite.hopcroft_karp_matching(graph, top_nodes=rows)
        if any(r not in match for r in rows):
            return whole                   # structurally singular: no finer sign
        depends = nx.DiGraph()
        depends.add_nodes_from(range(block.size))
        row_of = {}
        for r in rows:
            c0 = match[r][1]
            row_of[c0] = r[1]
            depends.add_edges_from((c0, c[1]) for c in graph[r] if c[1] != c0)
        parts = sorted(sorted(cc) for cc in nx.strongly_connected_components(depends))
        return [(np.array(sorted(row_of[c] for c in cc)), np.array(cc)) for cc in parts]

    def block_mode(self, mode: np.ndarray) -> np.ndarray:
        """Signs of det A per block (..., B) from the finer mode (..., S): their
        products (0 where a part is 0)."""
        mode = np.asarray(mode, dtype=float)
        out = np.ones(mode.shape[:-1] + (len(self.blocks),))
        for k, (b, _, _) in enumerate(self.mode_parts):
            out[..., b] *= mode[..., k]
        return out

    # --------------------------------------------------- evaluation at phi
    def kinematics(self, phi: np.ndarray, order: int, chains=None) -> dict:
        """ChainKinematics of the needed chains at phi (n, N)."""
        want = range(len(self.chains)) if chains is None else chains
        return {ci: ChainKinematics(self.chains[ci], phi[:, self.chain_joints[ci]], order)
                for ci in want}

    def _side_influence(self, side: Side, kins: dict, order: int, cache: dict, k: int, n: int):
        """G, H, D of a side's rows (rotation and point), signed, over its columns."""
        key = (side.chain, side.link, tuple(side.T[:3, 3]), k, order)
        if key not in cache:
            kin = kins[side.chain]
            j, c = side.link, len(side.cols)
            infs = ([kin.rotation(j)] if k == 6 else []) + [kin.point(j, side.T[:3, 3])]
            G = np.concatenate([i.G.reshape(n, 3, i.G.shape[-1])[..., :c] for i in infs],
                               axis=1)
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

    def side_frame(self, side: Side, kins: dict) -> np.ndarray:
        return kins[side.chain].link_frame(side.link, side.T)

    def side_point(self, side: Side, kins: dict) -> np.ndarray:
        return kins[side.chain].link_point(side.link, side.T[:3, 3])

    def _loop_residual(self, li: Loop, kins: dict, phi: np.ndarray) -> np.ndarray:
        """The raw closure residual of one loop (n, k): orientation error and
        position difference of its two sides, or u(phi) - q for a function."""
        if li.kind == "function":
            return li.sides[0].parts(phi, 1)[0]
        if li.k == 3:                                # points only
            a = self.side_point(li.sides[0], kins)
            b = (self.side_point(li.sides[1], kins) if len(li.sides) > 1
                 else li.target[:3, 3])
            return a - b
        Fa = self.side_frame(li.sides[0], kins)
        Fb = (self.side_frame(li.sides[1], kins) if len(li.sides) > 1
              else np.broadcast_to(li.target, Fa.shape))
        dp = Fa[:, :3, 3] - Fb[:, :3, 3]
        return np.concatenate([_vex_error(Fa[:, :3, :3], Fb[:, :3, :3]), dp], axis=1)

    def residuals(self, phi: np.ndarray, kins=None):
        """Closure residuals of every loop (reduced by the base selection, (n, r)
        each) and the chain kinematics used."""
        if kins is None:
            kins = self.kinematics(phi, 1)
        out = []
        for li in self.loops:
            r = self._loop_residual(li, kins, phi)
            out.append(r if li.base is None else r @ li.base)
        return out, kins

    def scaled_residual(self, phi: np.ndarray, kins=None):
        """The worst closure residual per configuration (n,), lengths divided by L,
        and the chain kinematics."""
        res, kins = self.residuals(phi, kins)
        n = phi.shape[0]
        worst = np.zeros(n)
        for li, r in zip(self.loops, res):
            if li.kind == "function":
                scale = np.ones(r.shape[1])
            elif li.k == 6 and li.base is None:
                scale = np.array([1.0] * 3 + [1.0 / self.length] * 3)
            else:
                scale = np.full(r.shape[1], 1.0 / self.length)
            worst = np.maximum(worst, np.abs(r * scale).max(axis=1))
        return worst, kins

    def rows(self, phi: np.ndarray, order: int, residual: bool = True, kins=None):
        """Reduced rows of every loop (list of LoopRows) and the chain kinematics used."""
        if kins is None:
            kins = self.kinematics(phi, max(order, 1))
        cache: dict = {}
        out = []
        n = phi.shape[0]
        for li in self.loops:
            rows = LoopRows()
            for side in li.sides:
                if li.kind == "function":
                    _, G, H, D = side.parts(phi, order)
                else:
                    G, H, D = self._side_influence(side, kins, order, cache, li.k, n)
                rows.G.append(G)
                rows.H.append(H)
                rows.D.append(D)
            if residual:
                rows.r = self._loop_residual(li, kins, phi)
            if li.reduction != "full" or li.base is not None:
                if li.reduction in ("fixed", "full"):
                    U0 = li.U if li.reduction == "fixed" else li.base
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

    def bias(self, rows: list, kins: dict, phid: np.ndarray, phi: np.ndarray,
             motion: dict) -> list:
        """Velocity-product accelerations ``H^c(phi', phi')`` of every loop (reduced);
        ``motion`` collects the chains' screw motion (reused by inverse dynamics)."""
        out = []
        for li, rw in zip(self.loops, rows):
            if li.kind == "function":          # u's H contracted with phi'
                side = li.sides[0]
                H = side.parts(phi, 2)[2]
                v = phid[:, side.cols]
                out.append(np.einsum("nrab,na,nb->nr", H, v, v))
                continue
            b = 0.0
            for side in li.sides:
                kin = kins[side.chain]
                if side.chain not in motion:
                    motion[side.chain] = link_motion(kin.pose,
                                                     phid[:, self.chain_joints[side.chain]].T)
                w, v, aw, av = (x[:, side.link] for x in motion[side.chain])
                P = self.side_point(side, kins).T
                a = point_acceleration(w, v, aw, av, P)
                part = a if li.k == 3 else np.concatenate([aw, a], axis=0)
                b = b + side.sign * part.T
            if rw.U is not None:
                b = np.einsum("nkr,nk->nr", rw.U, b)
            out.append(b)
        return out

    def loop_matrix(self, li: Loop, rows: LoopRows, n: int) -> np.ndarray:
        """A loop's (reduced) rows over all N joints, (n, r, N)."""
        J = np.zeros((n, rows.G[0].shape[1], self.N))
        for side, G in zip(li.sides, rows.G):
            J[:, :, side.cols] += G
        return J

    def jacobian(self, phi: np.ndarray) -> np.ndarray:
        """The closure Jacobian ``dc/dphi`` (n, R, N) of the independent rows of every
        loop at phi (n, N) (coordinate partitioning works on it)."""
        rows, _ = self.rows(phi, 1, residual=False)
        n = phi.shape[0]
        if not rows:
            return np.zeros((n, 0, self.N))
        return np.concatenate([self.loop_matrix(l, rw, n) for l, rw in zip(self.loops, rows)],
                              axis=1)

    def block_matrices(self, rows, block: Block, n: int, need_q: bool = True):
        """A = dc/dp (n, R, nd) and B = dc/dq (n, R, M) of one block."""
        R = block.rows[-1].stop
        A = np.zeros((n, R, block.size))
        B = np.zeros((n, R, self.dof)) if need_q else None
        for i, rs in zip(block.loops, block.rows):
            for side, G in zip(self.loops[i].sides, rows[i].G):
                if side.sel_dep.size:
                    A[:, rs, side.dep_pos] += G[:, :, side.sel_dep]
                if need_q and side.sel_q.size:
                    B[:, rs, side.q_pos] += G[:, :, side.sel_q]
        return A, B

    def block_residual(self, rows, block: Block) -> np.ndarray:
        return np.concatenate([rows[i].r for i in block.loops], axis=1)

    def condition(self, A: np.ndarray, block: Block) -> np.ndarray:
        """Dimensionless 2-norm condition of a block's matrices A (n, m, m)."""
        return scaled_condition(A, block.length_rows, block.length_cols, self.length)

    def inverses(self, As: list, max_condition: float, batch_index=None) -> list:
        """Inverses of the blocks' matrices; a SingularityError when a block's
        dimensionless 2-norm condition reaches ``max_condition``.

        The Frobenius product of the scaled block, ``kappa_F = ||A_s||_F
        ||A_s^-1||_F`` with ``kappa_2 <= kappa_F <= m kappa_2``, clears a block
        that is FROBENIUS_MARGIN below the threshold; the others get the 2-norm
        condition itself, so the decisions are those of the exact condition."""
        out = []
        for block, A in zip(self.blocks, As):
            Ai = small_inverse(A)
            row = np.where(block.length_rows, 1.0 / self.length, 1.0)
            col = np.where(block.length_cols, self.length, 1.0)
            # A_s = Dr A Dc, so A_s^-1 = Dc^-1 A^-1 Dr^-1
            bound = frobenius_bounds(A * row[:, None] * col[None, :],
                                     Ai / col[:, None] / row[None, :])
            suspect = ~(bound * FROBENIUS_MARGIN < max_condition)
            if np.any(suspect):
                idx = np.nonzero(suspect)[0]
                cond = self.condition(A[idx], block)
                bad = ~(cond < max_condition)
                if np.any(bad):
                    k = int(idx[np.argmax(bad)])
                    self.raise_singular(A[k], block, float(cond[np.argmax(bad)]), k,
                                        A.shape[0] > 1)
            out.append(Ai)
        return out

    def raise_singular(self, A: np.ndarray, block: Block, cond: float, index: int,
                       batched: bool, what: str | None = None) -> None:
        sv = np.linalg.svd(A, compute_uv=False)
        names = [self.loops[k].name for k in block.loops]
        joints = [self.phi_names[d] for d in block.joints]
        where = f" at batch index {index}" if batched else ""
        if what is not None:
            raise SingularityError(
                f"singular {what} for joints {joints}: smallest singular value {sv[-1]:.3e}, "
                f"dimensionless condition number {cond:.3e}{where}",
                sigma_min=float(sv[-1]), condition=cond, where=what,
                index=(index,) if batched else None)
        raise SingularityError(
            f"singular configuration of loops {names}: the dependent joints {joints} cannot "
            f"be solved (smallest singular value {sv[-1]:.3e}, dimensionless condition number "
            f"{cond:.3e}){where}", sigma_min=float(sv[-1]), condition=cond,
            where={"loops": names, "joints": joints}, index=(index,) if batched else None)

    def mode(self, phi: np.ndarray, rows=None, jacobian=None) -> np.ndarray:
        """The assembly mode at phi (n, N): (n, S) of -1, 0, +1, the signs of
        ``det`` of every diagonal block of each block's fine block-triangular form
        (:attr:`mode_parts`; one per block where a block does not refine).

        Within one assembly mode the signs stay the same; they change only
        where a block is singular, which is where the modes meet.  A block with
        rows reduced per configuration (``reduction == "svd"``) has no defined
        sign and reports 0.  ``jacobian`` (n, R, N): the closure Jacobian at phi
        with :meth:`jacobian`'s rows (e.g. the compiled kernels'), read instead of
        forming the rows here."""
        n = phi.shape[0]
        if rows is None and jacobian is None:
            rows, _ = self.rows(phi, 1, residual=False)
        out = np.zeros((n, len(self.mode_parts)))
        mats: dict = {}
        for k, (b, r, c) in enumerate(self.mode_parts):
            block = self.blocks[b]
            if any(self.loops[i].reduction == "svd" for i in block.loops):
                continue
            if b not in mats:
                mats[b] = (self.block_matrices(rows, block, n, need_q=False)[0]
                           if jacobian is None
                           else jacobian[:, self._jacobian_rows(block)][:, :, block.joints])
            out[:, k] = np.sign(np.linalg.det(mats[b][:, r][:, :, c]))
        return out

    def _jacobian_rows(self, block: Block) -> np.ndarray:
        """The rows of :meth:`jacobian` that are a block's rows, in its order (the
        rows of its loops, loop after loop, as :meth:`block_matrices` stacks them)."""
        first = np.cumsum([0] + [li.rank for li in self.loops])
        return np.concatenate([np.arange(first[i], first[i] + self.loops[i].rank)
                               for i in block.loops]).astype(int)


def _point_close_spheres(m, cut_list, keep=()) -> list:
    """Close every cut spherical joint as a 3-row point constraint.

    An S joint that closes a loop needs no angles: the loop only asks its two
    centres to coincide (as a Pinocchio user would write it).  Its three R
    joints and two massless bodies are removed from the model's copy of the
    mechanism ``m``; returns (name, parent, centre in parent, child, centre in
    child) per S.
    """
    out = []
    for prim in cut_list:
        J = prim.compound
        if J is None or m.joint_kind(J) != "S":
            continue
        prims = m.joint_primitives(J)
        if any(p.name in keep for p in prims):       # its angles are coordinates: keep them
            continue
        first, last = prims[0], prims[-1]
        m.remove_joint(J)
        out.append((J, first.parent, first.origin[:3, 3], last.child,
                    last.child_origin[:3, 3]))
    return out
