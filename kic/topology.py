"""Description of a mechanism as a graph of bodies and joints (networkx).

A :class:`Mechanism` holds bodies (nodes; ``"ground"`` is fixed) and joints
(edges of a ``networkx.MultiGraph``).  Compound joints (U, C, S) are expanded
into revolute and prismatic ones with massless intermediate bodies.  From the
graph kic picks a spanning tree (open chains from the ground), the cut joints
(one per independent loop, networkx cycle basis) and builds the open chains
of the initial model; :meth:`Mechanism.model` then transfers that model to the
requested coordinates (:mod:`kic.closure`).

This module only describes; per-configuration results come from the model.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ._array import finite_array
from .chain import Joint, Link, SerialChain, check_rigid, unit_axis
from .errors import ModelError
from .settings import SPD_PIVOT_RTOL

__all__ = ["Mechanism", "GROUND", "PrimitiveJoint"]

GROUND = "ground"

_COMPOUND = {"R": 1, "P": 1, "U": 2, "C": 2, "S": 3}
_PRIMITIVE_KINDS = {"R": "R", "P": "P", "U": "RR", "C": "RP", "S": "RRR"}
_IDENTITY = np.eye(4)           # copied, never handed out (np.eye costs 10x a copy)


@dataclass
class PrimitiveJoint:
    """A one-DOF joint of the expanded graph (R or P), as :class:`Mechanism` holds it."""

    name: str
    kind: str                   # "R" or "P"
    axis: np.ndarray            # unit, in the joint frame
    parent: str
    child: str
    origin: np.ndarray          # joint frame in the parent body frame (q = 0)
    child_origin: np.ndarray    # joint frame in the child body frame (q = 0)
    virtual: bool = False
    compound: str | None = None


class Mechanism:
    """Bodies connected by joints, possibly in closed loops.

    Parameters
    ----------
    gravity : array_like, shape (3,)
        Gravitational acceleration in the ground frame (m/s^2).
    name : str, optional

    Examples
    --------
    A four-bar linkage (planar, gravity along -y):

    >>> import numpy as np, kic
    >>> mech = kic.Mechanism(gravity=(0, -9.81, 0))
    >>> for body, m in (("crank", 0.5), ("coupler", 1.0), ("rocker", 0.8)):
    ...     _ = mech.add_body(body, mass=m)
    >>> T = lambda x, y=0.0: np.array([[1, 0, 0, x], [0, 1, 0, y], [0, 0, 1, 0], [0, 0, 0, 1.]])
    >>> mech.add_joint("crank", "R", "ground", "crank")
    >>> mech.add_joint("A", "R", "crank", "coupler", origin=T(0.1))
    >>> mech.add_joint("B", "R", "coupler", "rocker", origin=T(0.35), child_origin=T(0.25))
    >>> mech.add_joint("rocker", "R", "ground", "rocker", origin=T(0.3))
    >>> mech.loop_count, mech.grubler(planar=True)
    (1, 1)
    """

    #: the name of the fixed body
    ground = GROUND

    def __init__(self, gravity=(0.0, 0.0, -9.81), name: str | None = None) -> None:
        import networkx as nx     # here, not at import: serial chains need not load it (0.1 s)
        self.gravity = finite_array(gravity, "gravity", (3,))
        self.name = name
        self.graph = nx.MultiGraph()
        self.graph.add_node(GROUND, link=None)
        self._joints: dict[str, dict] = {}
        self._primitives: list[PrimitiveJoint] = []
        self._primitive_index: dict[str, PrimitiveJoint] = {}   # name -> primitive joint
        self._limits: dict = {}

    # ------------------------------------------------------------ building
    def add_body(self, name: str, mass: float = 0.0, com=(0.0, 0.0, 0.0), inertia=None,
                 check_triangle: bool = True, link: Link | None = None) -> str:
        """Add a rigid body (kg, m, kg m^2 about the centroid in body axes)."""
        if not isinstance(name, str) or not name:
            raise ModelError(f"body name must be a non-empty string, got {name!r}")
        if name in self.graph:
            raise ModelError(f"body {name!r} already exists")
        if link is None:
            link = Link(mass, com, inertia, name=name, check_triangle=check_triangle)
        self.graph.add_node(name, link=link)
        return name

    def add_joint(self, name: str, kind: str, parent: str, child: str, axis=(0.0, 0.0, 1.0),
                  origin=None, child_origin=None, axes: Sequence | None = None,
                  limits=None) -> None:
        """Add a joint between two bodies.

        Parameters
        ----------
        name : str
        kind : {"R", "P", "U", "C", "S"}
            Revolute, prismatic, universal (two R), cylindrical (R and P on one
            axis) or spherical (three R).  Compound joints are expanded into R/P
            joints named ``name + "1"``, ``name + "2"``... with massless bodies
            between them.
        parent, child : str
            Body names (``"ground"`` is the fixed frame).
        axis : array_like, shape (3,)
            Axis of an R, P or C joint in the joint frame.
        origin : (4, 4) array_like, optional
            The joint frame in the parent body frame at zero joint values.
        child_origin : (4, 4) array_like, optional
            The joint frame in the child body frame at zero joint values; for a
            joint that closes a loop this fixes where it sits on the child.
        axes : sequence of (3,) array_like, optional
            Axes of the successive rotations of a U (two) or S (three) joint,
            each in the frame left by the previous rotation; default x, y (U)
            and x, y, z (S).
        limits : optional
            ``(lower, upper)`` of an R (rad) or P (m) joint, or the cone angle
            (rad, in (0, pi]) of a U or S joint about its default reference
            axis; see :meth:`set_limits` and :mod:`kic.limits`.
        """
        label = f"joint {name!r}"
        if not isinstance(name, str) or not name:
            raise ModelError(f"joint name must be a non-empty string, got {name!r}")
        if name in self._joints:
            raise ModelError(f"{label} already exists")
        key = str(kind).upper()
        if key not in _COMPOUND:
            raise ModelError(f"{label}: unknown joint kind {kind!r}; use R, P, U, C or S")
        graph = self.graph
        if parent not in graph or child not in graph:
            side, body = ("parent", parent) if parent not in graph else ("child", child)
            raise ModelError(f"{label}: unknown {side} body {body!r}; add it with add_body "
                             f"first (known: {sorted(graph.nodes)})")
        if parent == child:
            raise ModelError(f"{label} joins body {parent!r} to itself")
        O = _IDENTITY.copy() if origin is None else check_rigid(origin, f"{label} origin")
        C = _IDENTITY.copy() if child_origin is None else check_rigid(child_origin,
                                                                      f"{label} child_origin")
        n = _COMPOUND[key]
        if key in ("R", "P", "C"):
            ax = [unit_axis(axis, label)] * n
        else:
            default = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)][:n]
            given = default if axes is None else list(axes)
            if len(given) != n:
                raise ModelError(f"{label}: a {key} joint takes {n} axes, got {len(given)}")
            ax = [unit_axis(a, label) for a in given]
            # independent axes, by kic's SPD rule: squared sine of the angle between
            # an axis and the span of those before it (the pivot I* would get)
            spread = (np.linalg.norm(np.cross(ax[0], ax[1])) if n == 2
                      else abs(np.linalg.det(np.stack(ax))))
            if not spread ** 2 > SPD_PIVOT_RTOL:
                raise ModelError(f"{label}: the axes of a {key} joint must be independent "
                                 f"(got {[a.tolist() for a in ax]}): "
                                 + ("parallel axes make one rotation twice" if n == 2 else
                                    "coplanar axes put the joint at its gimbal lock"))
        kinds = _PRIMITIVE_KINDS[key]
        bodies = [parent, child] if n == 1 else [parent] + [
            self._fresh_body_name(f"{name}:{k + 1}") for k in range(n - 1)] + [child]
        for b in bodies[1:-1]:
            self.graph.add_node(b, link=Link(0.0, name=b), intermediate=True)
        for k in range(n):
            pname = name if n == 1 else f"{name}{k + 1}"
            if pname in self._primitive_index:
                raise ModelError(f"{label}: primitive joint name {pname!r} is taken")
            prim = PrimitiveJoint(pname, kinds[k], ax[k], bodies[k], bodies[k + 1],
                              O if k == 0 else _IDENTITY.copy(),
                              C if k == n - 1 else _IDENTITY.copy(),
                              compound=name if n > 1 else None)
            self._primitives.append(prim)
            self._primitive_index[pname] = prim
            self.graph.add_edge(prim.parent, prim.child, key=pname, primitive=prim)
        self._joints[name] = {"kind": key, "parent": parent, "child": child,
                              "primitives": [p.name for p in self._primitives[-n:]]}
        if limits is not None:
            try:
                self.set_limits(name, limits)
            except ModelError:
                self.remove_joint(name)          # leave the description as it was
                raise

    # -------------------------------------------------------------- limits
    def set_limits(self, joint: str, limits, axis=None) -> None:
        """Set (or with ``limits=None`` remove) the limits of a joint.

        Parameters
        ----------
        joint : str
            A joint as added, or an R/P joint of a compound joint by its
            expanded name (e.g. ``"u1"``).
        limits : (float, float) or float or None
            ``(lower, upper)`` for an R (rad) or P (m) joint, ``lower < upper``;
            the largest cone angle (rad, in (0, pi]) for a U or S joint.
        axis : array_like (3,), optional
            The cone's reference axis in the joint frame (U, S); default the
            cross product of the joint's first two axes.  The cone angle is
            the angle between this axis on the parent side and on the child
            side (:mod:`kic.limits`).

        Raises
        ------
        kic.ModelError
            Unknown joint, a kind that takes no limits (C, virtual), or
            invalid values; the message names the joint.
        """
        from .limits import make_limit
        if joint in self._joints:
            kind = self._joints[joint]["kind"]
            axes = [p.axis for p in self.joint_primitives(joint)]
        else:
            prim = self._primitive_index.get(joint)
            if prim is None or prim.virtual:
                raise ModelError(f"limits: unknown joint {joint!r}; joints are {self.joints}")
            kind, axes = prim.kind, [prim.axis]
        if limits is None:
            self._limits.pop(joint, None)
            return
        self._limits[joint] = make_limit(joint, kind, axes, limits, axis)

    @property
    def limits(self) -> dict:
        """Joint name -> :class:`kic.limits.JointRange` or
        :class:`kic.limits.ConeLimit` (a copy: change limits with
        :meth:`set_limits`, or assign a whole mapping joint -> limits)."""
        return dict(self._limits)

    @limits.setter
    def limits(self, mapping) -> None:
        old = self._limits
        self._limits = {}
        try:
            for joint, value in dict(mapping or {}).items():
                self.set_limits(joint, value)
        except ModelError:
            self._limits = old
            raise

    def copy(self) -> "Mechanism":
        """An independent copy of the description (bodies and joints are shared,
        immutable data; the graph and joint lists are new)."""
        m = Mechanism.__new__(Mechanism)
        m.gravity, m.name = self.gravity, self.name
        m.graph = self.graph.copy()
        m._joints = {k: dict(v) for k, v in self._joints.items()}
        m._primitives = list(self._primitives)
        m._primitive_index = dict(self._primitive_index)
        m._limits = dict(self._limits)
        return m

    def _fresh_body_name(self, base: str) -> str:
        """``base``, or ``base~2``, ``base~3``... if a body has that name: a generated
        body never takes a user's name (the user's body keeps its own)."""
        name, k = base, 1
        while name in self.graph:
            k += 1
            name = f"{base}~{k}"
        return name

    def add_virtual_body(self, name: str) -> str:
        """Add a massless body that only carries virtual joints (coordinates)."""
        if name in self.graph:
            raise ModelError(f"body {name!r} already exists")
        self.graph.add_node(name, link=None, intermediate=True)
        return name

    def add_virtual_joint(self, name: str, kind: str, axis, parent: str, child: str) -> None:
        """Add a massless R or P joint that realises a coordinate (e.g. the six
        joints of a :class:`kic.BodyPose`); it is not a physical joint and is not
        listed in :attr:`primitive_joints`."""
        if name in self._primitive_index:
            raise ModelError(f"virtual joint {name!r}: the name is taken")
        for body in (parent, child):
            if body not in self.graph:
                raise ModelError(f"virtual joint {name!r}: unknown body {body!r}")
        prim = PrimitiveJoint(name, kind, np.asarray(axis, float), parent, child, np.eye(4),
                              np.eye(4), virtual=True)
        self._primitives.append(prim)
        self._primitive_index[name] = prim
        self.graph.add_edge(parent, child, key=name, primitive=prim)

    def joint_kind(self, name: str) -> str:
        """Kind of the joint ``name`` as added (R, P, U, C or S)."""
        if name not in self._joints:
            raise ModelError(f"unknown joint {name!r}; joints are {self.joints}")
        return self._joints[name]["kind"]

    def joint_primitives(self, name: str) -> list:
        """The R/P joints (:class:`PrimitiveJoint`) a joint expands into, in order."""
        if name not in self._joints:
            raise ModelError(f"unknown joint {name!r}; joints are {self.joints}")
        return [self._primitive_index[p] for p in self._joints[name]["primitives"]]

    def all_primitives(self) -> list:
        """Every primitive joint, the virtual ones included, in the order added."""
        return list(self._primitives)

    def remove_joint(self, name: str) -> None:
        """Remove a joint, its primitive joints and the intermediate bodies between them."""
        prims = self.joint_primitives(name)
        self._primitives = [p for p in self._primitives if p not in prims]
        for p in prims:
            del self._primitive_index[p.name]
        for p in prims:
            self.graph.remove_edge(p.parent, p.child, key=p.name)
        for p in prims[1:]:
            self.graph.remove_node(p.parent)
        del self._joints[name]
        for key in [name] + [p.name for p in prims]:
            self._limits.pop(key, None)

    # -------------------------------------------------------------- files
    @classmethod
    def from_urdf(cls, source, gravity=(0.0, 0.0, -9.81), strict: bool = False,
                  name: str | None = None) -> "Mechanism":
        """The whole tree of a URDF (XML text or a file path); close its loops with
        :meth:`add_joint`.  See :func:`kic.io.urdf.mechanism_from_urdf`."""
        from .io.urdf import mechanism_from_urdf
        return mechanism_from_urdf(source, gravity=gravity, strict=strict, name=name)

    def to_urdf(self, name: str | None = None, limits=None) -> str:
        """URDF text of this loop-free mechanism (:func:`kic.io.urdf.to_urdf`)."""
        from .io.urdf import to_urdf
        return to_urdf(self, name=name, limits=limits)

    def to_mjcf(self, name: str | None = None, **options) -> str:
        """MJCF (MuJoCo) text of this mechanism, loops as equality constraints
        (:func:`kic.io.mjcf.to_mjcf`)."""
        from .io.mjcf import to_mjcf
        return to_mjcf(self, name=name, **options)

    # --------------------------------------------------------- inspection
    @property
    def bodies(self) -> list[str]:
        """Names of the bodies (ground first, intermediate bodies excluded)."""
        return [n for n, d in self.graph.nodes(data=True) if not d.get("intermediate")]

    @property
    def joints(self) -> list[str]:
        """Names of the joints as added."""
        return list(self._joints)

    @property
    def primitive_joints(self) -> list[str]:
        """Names of the R/P joints after expanding U, C and S joints."""
        return [p.name for p in self._primitives if not p.virtual]

    def _check_connected(self) -> None:
        import networkx as nx
        comp = nx.node_connected_component(self.graph, GROUND)
        lost = sorted(set(self.graph.nodes) - comp)
        if lost:
            raise ModelError(f"bodies {lost} are not connected to the ground by any joint")

    @property
    def loop_count(self) -> int:
        """Number of independent loops, ``E - V + 1`` (networkx cycle basis size)."""
        self._check_connected()
        return self.graph.number_of_edges() - self.graph.number_of_nodes() + 1

    def cycle_basis(self) -> list[list[str]]:
        """Bodies of each independent loop (``networkx.cycle_basis`` of the graph)."""
        import networkx as nx
        return nx.cycle_basis(nx.Graph(self.graph), GROUND)

    def grubler(self, planar: bool = False) -> int:
        """Mobility by the Grubler-Kutzbach count, ``lambda (n - 1 - j) + sum f_i``.

        Counts the expanded graph (intermediate bodies of compound joints are
        bodies, their joints one-DOF), with lambda = 3 (planar) or 6.
        """
        self._check_connected()
        lam = 3 if planar else 6
        prims = [p for p in self._primitives if not p.virtual]
        n = self.graph.number_of_nodes()
        return lam * (n - 1 - len(prims)) + len(prims)

    def __repr__(self) -> str:
        try:
            loops = f"{self.loop_count} loops"
        except ModelError:             # while it is being built: not connected yet
            loops = "not connected to the ground yet"
        return (f"<Mechanism {self.name or ''}: {len(self.bodies) - 1} bodies, "
                f"{len(self._joints)} joints, {loops}>")

    # ---------------------------------------------------------- the model
    def model(self, coordinates, reference=None, guess=None, cuts: Sequence[str] = (),
              name: str | None = None, mode=None):
        """The dynamic model in the given coordinates (a :class:`kic.ClosedModel`).

        Parameters
        ----------
        coordinates : sequence
            Each item is a joint name (a primitive R/P joint, e.g. the actuated
            cranks of a five-bar) or a coordinate object: :class:`kic.BodyPose`
            (x, y, z and three angles of a body) or :class:`kic.PointPosition`
            (world coordinates of a point on a body).
        reference : mapping or array_like, optional
            An assembled (or nearly assembled) configuration: joint name ->
            value, or all primitive joint values in :attr:`primitive_joints`
            order.  Newton starts from it; default all zero.
        guess : callable, optional
            ``guess(q) -> phi`` (..., N) initial values of all joints for the
            position solver (e.g. a closed-form inverse kinematics on the
            desired branch); by default the previous solution.
        cuts : sequence of str, optional
            Joints that must be cut to open the loops (default: chosen from a
            shortest-path spanning tree).
        mode : sequence of {-1, +1}, optional
            The assembly mode (see :attr:`kic.ClosedModel.mode`); default the
            mode of the reference configuration.
        """
        from .closure import ClosedModel
        return ClosedModel(self, coordinates, reference=reference, guess=guess, cuts=cuts,
                           name=name, mode=mode)

    # --------------------------------------------------- tree and chains
    def spanning_tree(self, cuts: Sequence[str] = (), avoid: Sequence[str] = ()):
        """Spanning tree edges (oriented from the ground) and cut primitives:
        ``(tree, cut_list)`` with ``tree[body] = (parent body, PrimitiveJoint)``.

        A shortest-path tree from the ground: virtual joints cost nothing, so
        bodies with pose coordinates hang on their virtual chains; physical
        joints at those bodies (``avoid``) cost much more, so that the loops
        through them are cut there (each Stewart leg its own loop).
        """
        import networkx as nx
        self._check_connected()
        names = {p.name: p for p in self._primitives}
        for c in cuts:
            if c not in names:
                raise ModelError(f"unknown cut joint {c!r}; primitive joints are "
                                 f"{sorted(names)}")
        G = nx.Graph()
        best: dict = {}
        for p in self._primitives:
            if p.name in cuts:
                continue
            w = 0.0 if p.virtual else (1000.0 if (p.parent in avoid or p.child in avoid)
                                         else 1.0)
            key = tuple(sorted((p.parent, p.child)))
            if key not in best or w < best[key][0]:
                best[key] = (w, p)
        for (a, b), (w, p) in best.items():
            G.add_edge(a, b, weight=w, primitive=p)
        if set(G.nodes) | {GROUND} != set(self.graph.nodes):
            lost = sorted(set(self.graph.nodes) - set(G.nodes) - {GROUND})
            raise ModelError(f"with cuts {list(cuts)}, bodies {lost} lose their connection "
                             "to the ground")
        pred, _ = nx.dijkstra_predecessor_and_distance(G, GROUND)
        order = sorted((n for n in G.nodes if n != GROUND),
                       key=lambda n: nx.shortest_path_length(G, GROUND, n, weight=None))
        missing = [n for n in self.graph.nodes if n != GROUND and n not in pred]
        if missing:
            raise ModelError(f"bodies {missing} are not connected to the ground")
        tree = {}
        for n in order:
            parent = pred[n][0]
            tree[n] = (parent, G.edges[parent, n]["primitive"])
        used = {p.name for _, p in tree.values()}
        cut_list = [p for p in self._primitives if p.name not in used]
        return tree, cut_list

    def open_chains(self, tree: dict, cut_list: list):
        """Open chains from the ground covering the tree and the cut-joint tips.

        Returns ``(chains, owner, tips, joint_owner)``: ``chains`` a list of
        (SerialChain, [primitive names]), ``owner[body] = (chain, link)`` where the
        body's mass is carried, ``tips[cut name] = (chain, link)`` and
        ``joint_owner[joint] = (chain, link)`` of its first occurrence.
        """
        # a cut joint's tip is marked by structure (the third item), never by its
        # name: a user's body may be called anything
        children: dict = {}
        for body, (parent, prim) in tree.items():
            children.setdefault(parent, []).append((body, prim, False))
        for prim in cut_list:
            children.setdefault(prim.parent, []).append((f"cut:{prim.name}", prim, True))
        # depth first, in the order added, without recursion (a chain may have
        # thousands of joints)
        paths, stack = [], [(GROUND, [])]
        while stack:
            body, path = stack.pop()
            kids = children.get(body, []) if not (path and path[-1][2]) else []
            if not kids:
                if path:
                    paths.append(path)
                continue
            stack.extend((child, path + [(child, prim, tip)])
                         for child, prim, tip in reversed(kids))
        chains, owner, tips = [], {}, {}
        jowner: dict = {}
        for ci, path in enumerate(paths):
            joints, links, offsets = [], [], []
            prev_child_origin_inv = np.eye(4)
            for li, (body, prim, tip) in enumerate(path):
                forward = prim.child == body or tip
                if forward:
                    origin, axis, child_origin = prim.origin, prim.axis, prim.child_origin
                else:   # the tree runs this joint from child to parent
                    origin, axis, child_origin = prim.child_origin, -prim.axis, prim.origin
                if tip:
                    child_origin = np.eye(4)
                joints.append(Joint(prim.kind, axis, prev_child_origin_inv @ origin,
                                    name=prim.name))
                inv_co = np.linalg.inv(child_origin)
                offsets.append(inv_co)
                prev_child_origin_inv = inv_co
                data = None if tip else self.graph.nodes[body]["link"]
                if data is not None and body not in owner:
                    owner[body] = (ci, li)
                    links.append(data)
                else:
                    links.append(Link(0.0, name=body))
                if tip:
                    tips[prim.name] = (ci, li)
                jowner.setdefault(prim.name, (ci, li))
            chain = SerialChain(joints, links, gravity=self.gravity,
                                frame_offsets=np.stack(offsets), name=f"chain{ci}")
            chains.append((chain, [p.name for _, p, _ in path]))
        return chains, owner, tips, jowner
