"""Closed mechanisms: loop closure and the transferred model (seed ch. III-IV).

The initial model is a set of open chains from the ground (the spanning tree
of a :class:`kic.Mechanism`, plus one chain tip per cut joint) in the initial
coordinates phi: every primitive joint value, the cut joints' included.  Each
cut gives a closure ``c_l(phi) = 0``: the tip frame of its chain coincides with
the joint's frame on the other body (6 rows, "pose"), or a point coincides
(3 rows, "point").  Rows that are structurally dependent (planar loops, the
Bricard linkage) are reduced to independent combinations.

New coordinates q are a subset of phi (joint names, or virtual joints that a
coordinate object such as :class:`BodyPose` adds), so with phi = (q, p)::

    G^p_q  = -(G^c_p)^-1 G^c_q
    H^p_qq = -(G^c_p)^-1 o (G^phi_q^T H^c G^phi_q)          (method.md, case b)

and the third order likewise; the model follows by :class:`kic.Transfer`.
The dependent joints split into independent blocks (connected components of
the loops that share them), each solved on its own: the six legs of a Stewart
platform are six 6x6 systems, not one 36x36.
"""
from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence

import networkx as nx
import numpy as np

from ._array import finite_array, from_batch, match_batch, spd_solve
from .dynamics import DynamicModel
from .errors import ClosureError, ModelError, SingularityError
from .kinematics import Influence
from .topology import GROUND, Mechanism, _Loop
from .transfer import Transfer, transfer_influence

__all__ = ["ClosedModel", "BodyPose", "PointPosition"]

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


_UNIT = {"x": (1.0, 0.0, 0.0), "y": (0.0, 1.0, 0.0), "z": (0.0, 0.0, 1.0)}


def _vex_error(Ra: np.ndarray, Rb: np.ndarray) -> np.ndarray:
    """Orientation error of Ra relative to Rb (..., 3): vex of the skew part of Ra Rb^T."""
    E = Ra @ np.swapaxes(Rb, -1, -2)
    return 0.5 * np.stack([E[..., 2, 1] - E[..., 1, 2], E[..., 0, 2] - E[..., 2, 0],
                           E[..., 1, 0] - E[..., 0, 1]], axis=-1)


class _LoopInfo:
    """A loop with its columns and its row reduction."""

    def __init__(self, loop: _Loop, cols: np.ndarray) -> None:
        self.loop = loop
        self.cols = cols            # global phi indices that move the loop
        self.mode = "full"          # "full", "fixed" (constant projection) or "svd"
        self.U = None               # (k, r) constant projection for "fixed"
        self.rank = 6 if loop.kind == "pose" else 3

    @property
    def name(self) -> str:
        return self.loop.name


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
    """

    def __init__(self, mech: Mechanism, coordinates, reference=None, guess=None,
                 cuts: Sequence[str] = (), name: str | None = None) -> None:
        self.mechanism = mech
        self.name = name or mech.name
        self._guess = guess
        if isinstance(coordinates, (str, BodyPose, PointPosition)):
            coordinates = [coordinates]
        coordinates = list(coordinates)
        if not coordinates:
            raise ModelError("give at least one coordinate")
        m = copy.copy(mech)
        m.graph = mech.graph.copy()
        m._primitives = list(mech._primitives)
        heavy, point_loops, coord_names = [], [], []
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
                point_loops.append((f"point:{c.prefix}", prev, c.body, c.point))
                coord_names.extend(names)
            else:
                raise ModelError(f"coordinate {k} must be a joint name, BodyPose or "
                                 f"PointPosition, got {type(c).__name__}")
        if len(set(coord_names)) != len(coord_names):
            raise ModelError(f"repeated coordinates in {coord_names}")
        self._graph_mech = m
        tree, cut_list = m._tree(cuts, avoid=heavy)
        extra = [tip for _, tip, _, _ in point_loops]
        chains, owner, tips, jowner = m._chains(tree, cut_list)
        self._chains = [c for c, _ in chains]
        self.phi_names = [p.name for p in m._primitives]
        index = {n: i for i, n in enumerate(self.phi_names)}
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
            target, T = self._body_frame_ref(prim.child, prim.child_origin)
            loops.append(_Loop(prim.name, "pose", tips[prim.name], target, T))
        for lname, tip_body, body, point in point_loops:
            target, T = self._body_frame_ref(body, np.eye(4))
            T = T.copy()
            T[:3, 3] = T[:3, :3] @ point + T[:3, 3]
            loops.append(_Loop(lname, "point", owner.get(tip_body) or self._tip_of(tip_body),
                               target, T))
        del extra
        self.loops = [l.name for l in loops]
        self._loops = []
        for l in loops:
            cols = set(self._chain_idx[l.tip[0]][: l.tip[1] + 1].tolist())
            if l.target is not None:
                cols |= set(self._chain_idx[l.target[0]][: l.target[1] + 1].tolist())
            self._loops.append(_LoopInfo(l, np.array(sorted(cols))))
        # reference assembly, row reduction, blocks, mobility
        phi0 = self._reference(reference)
        self._classify(phi0)
        self._make_blocks()
        self._last = phi0
        self._phi_ref = phi0
        self._check_mobility(phi0)

    # ------------------------------------------------------------ helpers
    def _tip_of(self, body):
        for ci, chain in enumerate(self._chains):
            if body in chain.link_names:
                return (ci, chain.link_names.index(body))
        raise ModelError(f"body {body!r} is in no chain")

    def _body_frame_ref(self, body: str, T_in_body: np.ndarray):
        """(chain, link) owning ``body`` and ``T_in_body`` (a frame in the body frame)."""
        if body == GROUND:
            return None, T_in_body
        if body not in self._owner:
            return self._tip_of(body), T_in_body
        return self._owner[body], T_in_body

    def _reference(self, reference) -> np.ndarray:
        phi = np.zeros(self.N)
        if reference is not None:
            if isinstance(reference, Mapping):
                for k, v in reference.items():
                    if k not in self.phi_names:
                        raise ModelError(f"reference names unknown joint {k!r}")
                    phi[self.phi_names.index(k)] = float(v)
            else:
                ref = finite_array(reference, "reference")
                n = len(self.mechanism.primitive_joints)
                if ref.shape != (n,):
                    raise ModelError(f"reference must give the {n} primitive joint values "
                                     f"{self.mechanism.primitive_joints}, got shape {ref.shape}")
                phi[:n] = ref
        # virtual pose coordinates start at the pose of their body
        return self._solve_all(phi)

    # --------------------------------------------------- loop evaluation
    def _kinematics(self, phi: np.ndarray, order: int, chains=None):
        """ChainKinematics of the needed chains at phi (n, N)."""
        from .kinematics import ChainKinematics
        want = range(len(self._chains)) if chains is None else chains
        return {ci: ChainKinematics(self._chains[ci], phi[:, self._chain_idx[ci]], order)
                for ci in want}

    def _loop_parts(self, li: _LoopInfo, kins: dict, order: int, residual=True):
        """Rows of loop li over its columns: (r (n,k), G (n,k,c), H, D)."""
        l = li.loop
        cols = li.cols
        pos = {int(g): k for k, g in enumerate(cols)}
        n = next(iter(kins.values()))._qT.shape[1]
        c = len(cols)
        k = 6 if l.kind == "pose" else 3
        G = np.zeros((n, k, c))
        H = np.zeros((n, k, c, c)) if order >= 2 else None
        D = np.zeros((n, k, c, c, c)) if order >= 3 else None
        sides = [(+1.0, l.tip, np.zeros(3), np.eye(4))]
        if l.target is not None:
            sides.append((-1.0, l.target, l.target_frame[:3, 3], l.target_frame))
        frames = []
        for sign, (ci, j), point, T in sides:
            kin = kins[ci]
            loc = np.array([pos[int(g)] for g in self._chain_idx[ci]])
            parts = []
            if k == 6:
                parts.append((slice(0, 3), kin.rotation(j)))
            parts.append((slice(k - 3, k), kin.point(j, point)))
            for rows, inf in parts:
                _scatter(G, rows, loc, sign * inf.G.reshape(n, 3, -1), 1)
                if H is not None:
                    _scatter(H, rows, loc, sign * inf.H.reshape(n, 3, len(loc), len(loc)), 2)
                if D is not None:
                    _scatter(D, rows, loc, sign * inf.D.reshape(n, 3, *(len(loc),) * 3), 3)
            if residual:
                F = kin.frames.reshape(n, -1, 4, 4)[:, j] @ T
                frames.append(F)
        r = None
        if residual:
            Fa = frames[0]
            Fb = frames[1] if len(frames) > 1 else np.broadcast_to(l.target_frame, Fa.shape)
            dp = Fa[:, :3, 3] - Fb[:, :3, 3]
            r = dp if k == 3 else np.concatenate([_vex_error(Fa[:, :3, :3], Fb[:, :3, :3]), dp],
                                                 axis=1)
        return r, G, H, D

    def _reduce(self, li: _LoopInfo, r, G, H, D):
        """Independent row combinations of a loop."""
        if li.mode == "full":
            return r, G, H, D
        if li.mode == "fixed":
            U = li.U
            proj = lambda X: np.einsum("kr,nk...->nr...", U, X) if X is not None else None  # noqa
            return proj(r), proj(G), proj(H), proj(D)
        u, s, _ = np.linalg.svd(G, full_matrices=True)
        U = u[:, :, : li.rank]                                   # (n, k, r)
        proj = lambda X: None if X is None else np.einsum("nkr,nk...->nr...", U, X)  # noqa
        return proj(r), proj(G), proj(H), proj(D)

    def _rows(self, phi, order, residual=True, kins=None):
        """Reduced rows of every loop: list of (r, G, H, D) over loop columns."""
        if kins is None:
            kins = self._kinematics(phi, max(order, 1))
        return [self._reduce(li, *self._loop_parts(li, kins, order, residual))
                for li in self._loops], kins

    # ------------------------------------------------------ construction
    def _solve_all(self, phi: np.ndarray) -> np.ndarray:
        """Assemble from ``phi`` moving every joint (minimum-norm Gauss-Newton)."""
        if not self._loops:
            return phi
        phi = phi.copy()[None]
        for _ in range(_MAX_ITER):
            kins = self._kinematics(phi, 1)
            r_all, J = [], []
            for li in self._loops:
                r, G, _, _ = self._loop_parts(li, kins, 1)
                Jl = np.zeros((G.shape[1], self.N))
                Jl[:, li.cols] = G[0]
                r_all.append(r[0])
                J.append(Jl)
            r = np.concatenate(r_all)
            if np.max(np.abs(r)) < _TOL:
                break
            dphi = np.linalg.lstsq(np.vstack(J), -r, rcond=1e-10)[0]
            step = np.max(np.abs(dphi))
            if step > 0.5:
                dphi *= 0.5 / step
            phi[0] += dphi
        else:
            worst = int(np.argmax([np.abs(x).max() for x in r_all]))
            raise ClosureError(
                f"the reference configuration cannot be assembled: loop "
                f"{self._loops[worst].name!r} misses by {np.linalg.norm(r_all[worst]):.3e}",
                loop=self._loops[worst].name, residual=float(np.linalg.norm(r_all[worst])))
        return phi[0]

    def _classify(self, phi0: np.ndarray) -> None:
        """Structural rank of every loop and its row reduction (at the reference)."""
        kins = self._kinematics(phi0[None], 1)
        for li in self._loops:
            _, G, _, _ = self._loop_parts(li, kins, 1, residual=False)
            G = G[0]
            k = G.shape[0]
            sv = np.linalg.svd(G, compute_uv=False)
            scale = max(sv[0], 1e-300) if sv.size else 1.0
            rank = int(np.sum(sv > 1e-9 * scale))
            li.rank = rank
            if rank == k:
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
                    li.mode, li.U = "fixed", U
                    continue
            li.mode = "svd"

    def _plane_normal(self, li: _LoopInfo, kins: dict):
        """The common normal if every joint moving the loop keeps it planar."""
        axes = []
        l = li.loop
        for ci, j in [l.tip] + ([l.target] if l.target is not None else []):
            kin = kins[ci]
            s = kin.axes.reshape(-1, kin.chain.dof, 3)[0][: j + 1]
            for sj, isR in zip(s, kin.chain.is_revolute[: j + 1]):
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
        G = nx.Graph()
        for i, li in enumerate(self._loops):
            G.add_node(("loop", i))
            for c in li.cols.tolist():
                if c not in qset:
                    G.add_edge(("loop", i), ("joint", c))
        dependent = [i for i in range(self.N) if i not in qset]
        for d in dependent:
            if ("joint", d) not in G:
                raise ModelError(
                    f"joint {self.phi_names[d]!r} is neither a coordinate nor constrained by a "
                    f"loop: the coordinates {self.coordinate_names} do not fix it (the "
                    "mechanism has more mobility than coordinates)")
        self._blocks = []
        for comp in nx.connected_components(G):
            loops = sorted(i for kind, i in comp if kind == "loop")
            deps = sorted(i for kind, i in comp if kind == "joint")
            rows = sum(self._loops[i].rank for i in loops)
            if rows != len(deps):
                names = [self._loops[i].name for i in loops]
                raise ModelError(
                    f"loops {names} give {rows} independent constraints on {len(deps)} "
                    f"dependent joints {[self.phi_names[d] for d in deps]}: the coordinates "
                    f"{self.coordinate_names} do not match the mobility (Grubler count "
                    f"{self.mechanism.grubler()} spatial, {self.mechanism.grubler(True)} planar)")
            indep = sorted(set().union(*[set(self._loops[i].cols.tolist()) for i in loops])
                           & qset)
            self._blocks.append((loops, np.array(deps, int), np.array(indep, int)))

    def _check_mobility(self, phi0) -> None:
        rows, _ = self._rows(phi0[None], 1, residual=False)
        J = np.zeros((sum(G.shape[1] for _, G, _, _ in rows), self.N))
        k = 0
        for li, (_, G, _, _) in zip(self._loops, rows):
            J[k:k + G.shape[1], li.cols] = G[0]
            k += G.shape[1]
        rank = np.linalg.matrix_rank(J, tol=1e-9 * max(np.abs(J).max(), 1e-300)) if k else 0
        mobility = self.N - rank
        self.mobility = mobility
        if mobility != self.dof:
            raise ModelError(
                f"the mechanism has mobility {mobility} at the reference configuration (rank "
                f"of the closure Jacobian {rank} for {self.N} joints; Grubler count "
                f"{self.mechanism.grubler()} spatial, {self.mechanism.grubler(True)} planar) "
                f"but {self.dof} coordinates were given: {self.coordinate_names}")

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

        Raises
        ------
        ClosureError
            A loop cannot be closed; the message names it and the residual.
        SingularityError
            The dependent-joint Jacobian is singular on the way.
        """
        qf, batch = self._phi_batch(q)
        return self._assemble(qf, guess).reshape(batch + (self.N,))

    def _assemble(self, qf: np.ndarray, guess=None) -> np.ndarray:
        n = qf.shape[0]
        if guess is not None:
            phi = np.array(np.broadcast_to(np.asarray(guess, float).reshape(-1, self.N),
                                           (n, self.N)))
        elif self._guess is not None:
            phi = np.asarray(self._guess(qf), dtype=float).reshape(n, self.N).copy()
        else:
            last = self._last.reshape(-1, self.N)
            phi = np.array(np.broadcast_to(last if last.shape[0] in (1, n) else self._phi_ref,
                                           (n, self.N)))
        phi[:, self._q_idx] = qf
        for it in range(_MAX_ITER):
            rows, _ = self._rows(phi, 1)
            worst = max(float(np.abs(r).max()) for r, _, _, _ in rows) if rows else 0.0
            if worst < _TOL:
                break
            for loops, deps, _ in self._blocks:
                r = np.concatenate([rows[i][0] for i in loops], axis=1)
                A = self._block_matrix(rows, loops, deps)
                _check_block(A, self, loops, deps)
                step = np.linalg.solve(A, -r[..., None])[..., 0]
                lim = np.abs(step).max(axis=1, keepdims=True)
                step *= np.minimum(1.0, 0.5 / np.maximum(lim, 1e-300))
                phi[:, deps] += step
        else:
            res = [np.linalg.norm(r, axis=1).max() for r, _, _, _ in rows]
            i = int(np.argmax(res))
            raise ClosureError(
                f"loop {self._loops[i].name!r} cannot be closed at these coordinates: "
                f"residual {res[i]:.3e} after {_MAX_ITER} Newton steps (outside the workspace "
                "or across a singularity)", loop=self._loops[i].name, residual=float(res[i]))
        self._last = phi[-1:].copy() if n > 1 else phi.copy()
        return phi

    def _block_matrix(self, rows, loops, cols) -> np.ndarray:
        """Rows of the block's loops over the global columns ``cols``: (n, R, len(cols))."""
        parts = []
        for i in loops:
            G = rows[i][1]
            li = self._loops[i]
            pos = {int(g): k for k, g in enumerate(li.cols)}
            sel = np.array([pos.get(int(c), -1) for c in cols])
            X = np.zeros(G.shape[:2] + (len(cols),))
            ok = sel >= 0
            X[..., ok] = G[..., sel[ok]]
            parts.append(X)
        return np.concatenate(parts, axis=1)

    def condition(self, q) -> np.ndarray:
        """2-norm condition number of the dependent-joint Jacobian (...), per
        configuration (the worst block); large near a singularity."""
        qf, batch = self._phi_batch(q)
        phi = self._assemble(qf)
        rows, _ = self._rows(phi, 1, residual=False)
        cond = np.ones(qf.shape[0])
        for loops, deps, _ in self._blocks:
            sv = np.linalg.svd(self._block_matrix(rows, loops, deps), compute_uv=False)
            c = np.where(sv[:, -1] > 0, sv[:, 0] / np.where(sv[:, -1] > 0, sv[:, -1], 1), np.inf)
            cond = np.maximum(cond, c)
        return cond.reshape(batch)

    # ------------------------------------------------------------ transfer
    def _transfer(self, phi: np.ndarray, order: int, kins=None):
        """G^phi_q (n, N, M), H^phi_qq, D^phi_qqq at assembled phi (n, N)."""
        n, M = phi.shape[0], self.dof
        rows, kins = self._rows(phi, order, residual=False, kins=kins)
        G = np.zeros((n, self.N, M))
        G[:, self._q_idx, np.arange(M)] = 1.0
        H = np.zeros((n, self.N, M, M)) if order >= 2 else None
        D = np.zeros((n, self.N, M, M, M)) if order >= 3 else None
        qpos = {int(g): a for a, g in enumerate(self._q_idx)}
        for loops, deps, indep in self._blocks:
            local = np.concatenate([deps, indep])
            A = self._block_matrix(rows, loops, deps)
            _check_block(A, self, loops, deps)
            Ai = np.linalg.inv(A)
            # G^phi_q restricted to the block's columns: deps from the solve, indep = unit rows
            Gl = np.zeros((n, len(local), M))
            Gl[:, len(deps) + np.arange(len(indep)), [qpos[int(i)] for i in indep]] = 1.0
            B = self._block_matrix(rows, loops, indep)
            Gl[:, : len(deps)] = -Ai @ (B @ Gl[:, len(deps):])
            G[:, deps] = Gl[:, : len(deps)]
            if order >= 2:
                Hl = np.zeros((n, len(local), M, M))
                X = self._block_tensor(rows, loops, local, 2, Gl, Hl)
                Hl[:, : len(deps)] = -np.einsum("npr,nrab->npab", Ai, X)
                H[:, deps] = Hl[:, : len(deps)]
                if order >= 3:
                    Dl = np.zeros((n, len(local), M, M, M))
                    X = self._block_tensor(rows, loops, local, 3, Gl, Hl)
                    Dl[:, : len(deps)] = -np.einsum("npr,nrcab->npcab", Ai, X)
                    D[:, deps] = Dl[:, : len(deps)]
        return Transfer(G, H, D), kins

    def _block_tensor(self, rows, loops, local, order, Gl, Hl) -> np.ndarray:
        """The known part of the block's order-2 (or 3) constraint in q."""
        out = []
        for i in loops:
            _, Gc, Hc, Dc = rows[i]
            li = self._loops[i]
            pos = {int(g): k for k, g in enumerate(li.cols)}
            sel = np.array([pos.get(int(c), -1) for c in local])
            ok = np.nonzero(sel >= 0)[0]
            s = sel[ok]
            Gs, Hs = Gl[:, ok], Hl[:, ok]
            Hcs = Hc[:, :, s][:, :, :, s]
            if order == 2:
                out.append(np.einsum("nrmk,nma,nkb->nrab", Hcs, Gs, Gs, optimize=True))
            else:
                Gcs = Gc[:, :, s]
                Dcs = Dc[:, :, s][:, :, :, s][:, :, :, :, s]
                _, _, Dq = transfer_influence(Gcs, Hcs, Dcs, Gs, Hs,
                                              np.zeros(Hs.shape[:-2] + (Hs.shape[-1],) * 3))
                out.append(Dq)
        return np.concatenate(out, axis=1)

    # ------------------------------------------------------- public model
    def kinematics(self, q, order: int = 2) -> "ClosedKinematics":
        """Influence coefficients in q of any body (see :class:`ClosedKinematics`)."""
        return ClosedKinematics(self, q, order)

    def dynamics(self, q) -> "ClosedDynamics":
        """The transferred dynamic model at ``q`` (I*, P*, loads, energies)."""
        return ClosedDynamics(self, q)

    def joint_rates(self, q, qd, qdd=None):
        """phi' (and phi'') of every joint from the coordinate rates."""
        qf, batch = self._phi_batch(q)
        phi = self._assemble(qf)
        tr, _ = self._transfer(phi, 1 if qdd is None else 2)
        qd = match_batch(qd, self.dof, batch, "qd").T
        if qdd is None:
            return tr.rates(qd).reshape(batch + (self.N,))
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        a, b = tr.rates(qd, qdd)
        return a.reshape(batch + (self.N,)), b.reshape(batch + (self.N,))

    def inverse_dynamics(self, q, qd, qdd, loads=None) -> np.ndarray:
        """Required loads at the coordinates, ``T_q = sum_c G_c^T T_c`` (..., M).

        Each open chain runs its own recursive inverse dynamics at the
        transferred joint motion (no P* is formed).
        """
        qf, batch = self._phi_batch(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        qdd = match_batch(qdd, self.dof, batch, "qdd").T
        phi = self._assemble(qf)
        tr, _ = self._transfer(phi, 2)
        phid, phidd = tr.rates(qd, qdd)
        T = self._joint_loads(phi, phid, phidd, loads)
        return tr.load(T).reshape(batch + (self.dof,))

    def _joint_loads(self, phi, phid, phidd, loads) -> np.ndarray:
        """Joint loads of every chain at (phi, phi', phi''), summed into phi (n, N)."""
        T = np.zeros(phi.shape)
        for ci, chain in enumerate(self._chains):
            if chain.total_mass <= 0 and not (loads and self._chain_loads(loads, ci)):
                continue
            idx = self._chain_idx[ci]
            cl = self._chain_loads(loads, ci) if loads else None
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

    def actuator_jacobian(self, q, actuators: Sequence[str]) -> np.ndarray:
        """``G^a_q`` (..., Na, M): rates of the actuated joints per coordinate rate."""
        qf, batch = self._phi_batch(q)
        idx = self._joint_indices(actuators)
        tr, _ = self._transfer(self._assemble(qf), 1)
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
        T = self.inverse_dynamics(q, qd, qdd, loads=loads)
        G = self.actuator_jacobian(q, actuators)
        if G.shape[-2] == G.shape[-1]:
            from .transfer import _checked_inverse
            Gi = _checked_inverse(G.reshape(-1, self.dof, self.dof), "actuator Jacobian G^a_q")
            return np.einsum("nba,nb->na", Gi, T.reshape(-1, self.dof)).reshape(T.shape)
        return load_distribution(G, T, weights)

    def forward_dynamics(self, q, qd, tau, loads=None) -> np.ndarray:
        """``q'' = I*_q^-1 (T - q'^T P*_q q' - T_L)`` (..., M)."""
        qf, batch = self._phi_batch(q)
        qd = match_batch(qd, self.dof, batch, "qd").T
        tau = match_batch(tau, self.dof, batch, "tau").T
        phi = self._assemble(qf)
        tr, _ = self._transfer(phi, 2)
        phid, phidd = tr.rates(qd, np.zeros_like(qd))
        bias = tr.load(self._joint_loads(phi, phid, phidd, loads))
        I = self._inertia(phi, tr)
        return spd_solve(I, tau - bias, "effective inertia I* in "
                         f"{self.coordinate_names}").reshape(batch + (self.dof,))

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


def _scatter(X, rows, loc, val, nidx):
    """X[:, rows, loc, loc, ...] += val over ``nidx`` column axes."""
    idx = [slice(None), rows] + [None] * nidx
    for k in range(nidx):
        shape = [1] * nidx
        shape[k] = -1
        idx[2 + k] = loc.reshape(shape)
    X[tuple(idx)] += val


def _check_block(A: np.ndarray, model: ClosedModel, loops, deps) -> None:
    sv = np.linalg.svd(A, compute_uv=False)
    smin, smax = sv[:, -1], sv[:, 0]
    bad = ~(smin > 1e-10 * np.maximum(smax, 1e-300))
    if np.any(bad):
        i = int(np.argmax(bad))
        cond = float(smax[i] / smin[i]) if smin[i] > 0 else float("inf")
        names = [model._loops[k].name for k in loops]
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
        phi = model._assemble(qf)
        self._phi = phi
        self.phi = phi.reshape(self._batch + (model.N,))
        self.transfer, self._kins = model._transfer(phi, order)

    def _body(self, body: str):
        owner = self.model._owner.get(body)
        if owner is None:
            raise ModelError(f"unknown body {body!r}; bodies: "
                             f"{sorted(self.model._owner)}")
        return owner

    def _transferred(self, ci, inf: Influence) -> Influence:
        tr = self.transfer.rows(self.model._chain_idx[ci])
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
    transferred to q and superposed, ``I*_q = sum_c G_c^T I*_c G_c`` etc."""

    def __init__(self, model: ClosedModel, q) -> None:
        qf, batch = model._phi_batch(q)
        super().__init__(qf.reshape(batch + (model.dof,)), batch)
        self.model = model
        self._phi = model._assemble(qf)
        self._tr, _ = model._transfer(self._phi, 2)
        self._chain_models = {ci: c.dynamics(self._phi[:, model._chain_idx[ci]])
                              for ci, c in enumerate(model._chains) if c.total_mass > 0}

    def _sum(self, fn):
        out = 0.0
        for ci, dyn in self._chain_models.items():
            out = out + fn(self._tr.rows(self.model._chain_idx[ci]), dyn)
        return out

    # the base class expects batch-last arrays
    def _I(self):
        return np.moveaxis(self._sum(lambda tr, d: tr.inertia(d.I_star)), 0, -1)

    def _P(self):
        return np.moveaxis(self._sum(lambda tr, d: tr.power(d.I_star, d.P_star)), 0, -1)

    def _gravity(self):
        return np.moveaxis(self._sum(lambda tr, d: tr.load(d.gravity_load)), 0, -1)

    def _potential(self):
        return self._sum(lambda tr, d: d.potential_energy)

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
