"""A closed model flattened into plain arrays for the compiled kernels (internal).

:func:`plan_from_model` reads a :class:`kic.ClosedModel` once and returns a
:class:`ClosedPlan`: the spanning tree of every primitive joint phi (the open
chains merged, a shared joint once), the loop closures as frames on two bodies
with their constant row projections, and the independent blocks of dependent
joints.  :mod:`kic.kernels.closed` evaluates a pose from these arrays alone
(assembly, the transfer ``G^phi_q``, phi', phi'', inverse and forward dynamics,
actuator loads), in one compiled call.

Conventions (world frame = ground frame, SI units)
--------------------------------------------------
Tree.  Joint j carries body j; ``parent[j]`` is -1 for the ground; ``order``
lists the joints parents first (phi keeps kic's numbering).  The body frame is::

    F_j = F_parent[j] @ origin[j] @ Motion(axis[j], phi[j]) @ offset[j],  F_-1 = I

with ``Motion`` a rotation about (R) or translation along (P) the unit
``axis[j]`` of the joint frame ``F_parent @ origin``.  ``mass``, ``com`` (body
frame) and ``inertia`` (about the centroid, body axes) are the body's; a body
that several of kic's open chains carry has its mass once (the owner's copy;
copies that carry mass too are combined as rigid bodies).

Loops.  Loop l has ``k[l]`` raw rows: 6 for a pose closure (orientation error
``vex(R_A R_B^T)`` then the position difference ``p_A - p_B``) or 3 for a
point closure (``p_A - p_B``), where ``X_A = F_body_a @ T_a`` and ``X_B =
F_body_b @ T_b`` (``body_b = -1``: the ground, ``X_B = T_b``).  Its reduced
rows are ``U[l, :k, :r]^T raw`` (``r[l]`` rows; U the identity for a full loop,
the planar reduction or a coordinate's axis selection otherwise).  The
Jacobian of the raw rows over joint j on the path of side A (B subtracted) is
``[s_j; s_j x (x - o_j)]`` for R and ``[0; s_j]`` for P (world axis s_j through
o_j, x the side's point; the first three only for pose loops).

Rows.  The reduced rows of all loops are numbered in block order:
``loop_row[l]`` is the first row of loop l, ``row_is_rot[i]`` says whether row
i is an orientation row (else a position row, m).  Block b owns rows
``block_row[b]:block_row[b+1]`` and the dependent joints
``dep[block_row[b]:block_row[b+1]]`` (square blocks), and the loops
``block_loops[block_loop[b]:block_loop[b+1]]``.

Scale.  ``L_char`` is the model's characteristic length (the largest distance
between two joints at its reference configuration): position residuals converge when
``|r| < tol * L_char``, orientation ones when ``|r| < tol``, and condition
numbers are computed with lengths divided by ``L_char`` (independent of units).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .kernels import layout
from .kernels.frames import joint_motions
from .kernels.layout import FLOAT_FIELDS
from .loops import characteristic_length
from .settings import CLOSURE_TOLERANCE, MAX_CONDITION, NEWTON_MAX_ITERATIONS, SAME_FRAME_ATOL

__all__ = ["ClosedPlan", "plan_from_model", "joint_indices", "body_frames", "FLOAT_FIELDS",
           "float_fields", "joint_origins", "reference_length"]


@dataclass(frozen=True, eq=False)
class ClosedPlan:
    """Plain arrays describing a closed model for :mod:`kic.kernels.closed`.

    See the module docstring for the conventions.  ``args`` holds the same data
    as the two flat buffers (float64, int64) the kernels take (built once).
    """

    parent: np.ndarray          # (N,) int64
    order: np.ndarray           # (N,) int64, parents before children
    is_revolute: np.ndarray     # (N,) bool
    axis: np.ndarray            # (N, 3)
    origin: np.ndarray          # (N, 4, 4)
    offset: np.ndarray          # (N, 4, 4)
    mass: np.ndarray            # (N,)
    com: np.ndarray             # (N, 3)
    inertia: np.ndarray         # (N, 3, 3)
    gravity: np.ndarray         # (3,)
    loop_k: np.ndarray          # (L,) int64, 6 or 3
    loop_r: np.ndarray          # (L,) int64, reduced rows
    loop_row: np.ndarray        # (L,) int64, first reduced row (block order)
    body_a: np.ndarray          # (L,) int64
    T_a: np.ndarray             # (L, 4, 4)
    body_b: np.ndarray          # (L,) int64, -1 = ground
    T_b: np.ndarray             # (L, 4, 4)
    U: np.ndarray               # (L, 6, 6), U[l, :k, :r] used
    row_is_rot: np.ndarray      # (R,) bool
    dep: np.ndarray             # (R,) int64, dependent joints in block order
    block_row: np.ndarray       # (B + 1,) int64
    block_loop: np.ndarray      # (B + 1,) int64
    block_loops: np.ndarray     # (L,) int64
    q_idx: np.ndarray           # (M,) int64
    L_char: float
    tol: float = CLOSURE_TOLERANCE
    max_iter: int = NEWTON_MAX_ITERATIONS
    max_condition: float = MAX_CONDITION
    phi_names: tuple = ()
    coordinate_names: tuple = ()
    body_names: tuple = ()      # (N,) the body each joint carries
    args: tuple = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # the two flat buffers the kernels take, laid out by the tables of
        # kic.kernels.layout (built once)
        object.__setattr__(self, "args", layout.pack(self))

    @property
    def buffers(self) -> tuple[np.ndarray, np.ndarray]:
        """The (float64, int64) buffers of :mod:`kic.kernels.layout` (as ``args``)."""
        return self.args

    @property
    def N(self) -> int:
        """Number of joints phi."""
        return int(self.parent.shape[0])

    @property
    def dof(self) -> int:
        """Number of coordinates q (M)."""
        return int(self.q_idx.shape[0])

    @property
    def n_blocks(self) -> int:
        """Number of independent blocks of dependent joints (B)."""
        return int(self.block_row.shape[0] - 1)


def body_frames(plan: ClosedPlan, phi) -> tuple[np.ndarray, np.ndarray]:
    """World body frames (N, 4, 4) and joint-frame origins (N, 3) at one phi (numpy;
    the plan's own definition, used for its scale and by the tests)."""
    phi = np.asarray(phi, float)
    N = plan.N
    F = np.empty((N, 4, 4))
    o = np.empty((N, 3))
    for j in plan.order:
        P = np.eye(4) if plan.parent[j] < 0 else F[plan.parent[j]]
        J = P @ plan.origin[j]
        o[j] = J[:3, 3]
        F[j] = J @ joint_motions(bool(plan.is_revolute[j]), plan.axis[j], phi[j]) @ plan.offset[j]
    return F, o


def joint_indices(model, names) -> np.ndarray:
    """Indices in phi (int64) of joints given by name (``kic.ModelError`` if unknown)."""
    from .errors import ModelError
    if isinstance(names, str):
        names = [names]
    out = []
    for n in names:
        if n not in model.phi_names:
            raise ModelError(f"unknown joint {n!r}; joints are {model.phi_names}")
        out.append(model.phi_names.index(n))
    return np.array(out, dtype=np.int64)


def _combine(parts) -> tuple[float, np.ndarray, np.ndarray]:
    """Mass, centroid and central inertia of rigid bodies given in one frame."""
    m = sum(p[0] for p in parts)
    if m <= 0:          # no mass, but maybe rotational inertia (frame-free then)
        return 0.0, np.zeros(3), sum((p[2] for p in parts), np.zeros((3, 3)))
    c = sum(p[0] * p[1] for p in parts) / m
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = ci - c
        I += Ii + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return float(m), c, I


def plan_from_model(model) -> ClosedPlan | None:
    """Flatten a :class:`kic.ClosedModel` into a :class:`ClosedPlan` (None when the
    kernels cannot evaluate it: coordinate-function closures, loops whose row
    reduction changes with the pose, inconsistent shared joints).

    This is the only function that reads the model's internals.  What it relies
    on (kic.closure / kic.loops as of commit df2bad1, the staged closed layer):

    - ``model.system`` (:class:`kic.loops.LoopSystem`) with ``.chains`` (list of
      :class:`kic.SerialChain`) and ``.chain_joints`` (phi index of each chain
      joint).  Chains are paths from the ground sharing prefixes; a chain's
      ``joints[k].origin`` is the joint frame in the previous link's *kinematic*
      frame (``base`` for k = 0), the body (link) frame is the kinematic frame
      times ``frame_offsets[k]``, the link's mass properties are in the body
      frame; a shared body carries its mass on one chain only (massless copies,
      of the same name, elsewhere).
    - ``.loops``: :class:`kic.loops.Loop` with ``.kind`` (``"pose"``, ``"point"``;
      ``"function"`` unsupported), ``.k`` (6 / 3), ``.rank``, ``.reduction``
      (``"full"``; ``"fixed"`` with constant ``.U`` (k, rank); ``"svd"``
      unsupported), ``.target`` (the ground-side frame when there is one side)
      and ``.sides``: :class:`kic.loops.Side` with ``.sign`` (+1 side A, -1 side
      B), ``.chain``, ``.link``, ``.T`` (frame on the link, in its body frame).
    - ``.blocks``: :class:`kic.loops.Block` with ``.loops`` (loop indices, rows
      in this order, ``rank`` rows each) and ``.joints`` (dependent phi indices).
    - ``.q_idx``, ``.N``, ``.dof``, ``.phi_names``, ``.coordinate_names``, and
      :data:`kic.settings.CLOSURE_TOLERANCE`,
      :data:`kic.settings.NEWTON_MAX_ITERATIONS`; public:
      ``model.mechanism.gravity``, ``model.max_condition``,
      ``model.characteristic_length``, ``model.reference_phi``.
    """
    system = model.system
    chains, chain_idx = system.chains, system.chain_joints
    N, M = int(system.N), int(system.dof)
    parent = np.full(N, -2, dtype=np.int64)
    is_rev = np.zeros(N, dtype=bool)
    axis = np.zeros((N, 3))
    origin = np.zeros((N, 4, 4))
    offset = np.zeros((N, 4, 4))
    names = [""] * N
    masses: list[list] = [[] for _ in range(N)]
    for chain, idx in zip(chains, chain_idx):
        offs = chain.frame_offsets
        for k, (jt, g) in enumerate(zip(chain.joints, idx)):
            g = int(g)
            par = int(idx[k - 1]) if k else -1
            O = chain.base @ jt.origin if k == 0 else np.linalg.inv(offs[k - 1]) @ jt.origin
            if parent[g] == -2:
                parent[g], is_rev[g], axis[g] = par, jt.kind == "R", jt.axis
                origin[g], offset[g] = O, offs[k]
                names[g] = chain.link_names[k]
            elif (parent[g] != par or is_rev[g] != (jt.kind == "R")
                  or not np.allclose(axis[g], jt.axis, atol=SAME_FRAME_ATOL)
                  or not np.allclose(origin[g], O, atol=SAME_FRAME_ATOL)
                  or not np.allclose(offset[g], offs[k], atol=SAME_FRAME_ATOL)):
                return None                  # a shared joint seen differently: not a tree
            link = chain.links[k]
            if link.mass > 0 or np.any(link.inertia):
                masses[g].append((link.mass, np.asarray(link.com, float),
                                  np.asarray(link.inertia, float)))
    if np.any(parent == -2):
        return None
    # parents first (phi is numbered by kic's joint list; a virtual coordinate joint
    # added last can carry physical bodies, so the kernels walk the tree in ``order``)
    order, seen = [], set()
    for j in range(N):
        stack = []
        while j >= 0 and j not in seen:
            stack.append(j)
            j = int(parent[j])
        for s_ in reversed(stack):
            seen.add(s_)
            order.append(s_)
    mass, com, inertia = np.zeros(N), np.zeros((N, 3)), np.zeros((N, 3, 3))
    for g in range(N):
        mass[g], com[g], inertia[g] = _combine(masses[g])

    # loops
    L = len(system.loops)
    loop_k, loop_r = np.zeros(L, np.int64), np.zeros(L, np.int64)
    body_a, body_b = np.zeros(L, np.int64), np.full(L, -1, np.int64)
    T_a, T_b = np.zeros((L, 4, 4)), np.zeros((L, 4, 4))
    U = np.zeros((L, 6, 6))
    rot_of_loop = []
    for l, li in enumerate(system.loops):
        if li.kind not in ("pose", "point") or li.reduction not in ("full", "fixed"):
            return None
        k = int(li.k)
        Ul = np.eye(k) if li.reduction == "full" else np.asarray(li.U, float)
        if li.reduction == "full" and li.base is not None:
            return None                      # (kic turns a full-rank base into "fixed")
        if Ul.shape[0] != k or Ul.shape[1] != int(li.rank):
            return None
        loop_k[l], loop_r[l] = k, Ul.shape[1]
        U[l, :k, :Ul.shape[1]] = Ul
        sa = [s_ for s_ in li.sides if s_.sign > 0]
        sb = [s_ for s_ in li.sides if s_.sign < 0]
        if len(sa) != 1 or len(sb) > 1:
            return None
        body_a[l] = int(chain_idx[sa[0].chain][sa[0].link])
        T_a[l] = sa[0].T
        if sb:
            body_b[l] = int(chain_idx[sb[0].chain][sb[0].link])
            T_b[l] = sb[0].T
        else:
            T_b[l] = li.target
        # each reduced row must be purely an orientation or a position row
        flags = []
        for c in range(Ul.shape[1]):
            rot = np.abs(Ul[:3, c]).max() > 0 if k == 6 else False
            pos = np.abs(Ul[3:, c] if k == 6 else Ul[:, c]).max() > 0
            if rot == pos:
                return None
            flags.append(bool(rot))
        rot_of_loop.append(flags)

    # blocks: rows in block order
    q_idx = np.asarray(system.q_idx, dtype=np.int64)
    dep, row_is_rot, block_row, block_loop, block_loops = [], [], [0], [0], []
    loop_row = np.zeros(L, np.int64)
    for block in system.blocks:
        for i in block.loops:
            loop_row[i] = len(row_is_rot)
            row_is_rot.extend(rot_of_loop[i])
            block_loops.append(int(i))
        dep.extend(int(d) for d in block.joints)
        if len(row_is_rot) != len(dep):
            return None
        block_row.append(len(dep))
        block_loop.append(len(block_loops))
    if len(dep) + M != N or len(block_loops) != L:
        return None

    return ClosedPlan(
        parent=parent, order=np.array(order, np.int64), is_revolute=is_rev,
        axis=np.ascontiguousarray(axis), origin=origin, offset=offset, mass=mass, com=com,
        inertia=inertia, gravity=np.asarray(model.mechanism.gravity, float).copy(),
        loop_k=loop_k, loop_r=loop_r, loop_row=loop_row, body_a=body_a, T_a=T_a,
        body_b=body_b, T_b=T_b, U=U, row_is_rot=np.array(row_is_rot, dtype=bool),
        dep=np.array(dep, np.int64), block_row=np.array(block_row, np.int64),
        block_loop=np.array(block_loop, np.int64), block_loops=np.array(block_loops, np.int64),
        q_idx=q_idx, L_char=float(model.characteristic_length),
        tol=float(CLOSURE_TOLERANCE), max_iter=int(NEWTON_MAX_ITERATIONS),
        max_condition=float(model.max_condition), phi_names=tuple(system.phi_names),
        coordinate_names=tuple(system.coordinate_names), body_names=tuple(names))


# ------------------------------------------------------------ design batches
def float_fields(plan: ClosedPlan, buffers: np.ndarray) -> dict:
    """Views of float buffers laid out as ``plan.args[0]``, by field name.

    ``buffers`` (..., F): one buffer per design (leading axes kept); the views
    have shape (..., N, 4, 4) for ``origin`` etc. (see :data:`FLOAT_FIELDS`),
    so writing into them writes the buffers (a parametric mechanism's numbers
    are set this way, the structure staying in ``plan.args[1]``)."""
    from .errors import ModelError
    buffers = np.asarray(buffers)
    F = plan.args[0].shape[0]
    if buffers.shape[-1:] != (F,):
        raise ModelError(f"float buffers must have shape (..., {F}), got {buffers.shape}")
    return layout.float_views(buffers, plan.N, int(plan.loop_k.shape[0]))


def joint_origins(plan: ClosedPlan, fields: dict, phi) -> np.ndarray:
    """World points (..., N, 3) of every joint at joint values ``phi`` (..., N):
    its frame's origin ``F_parent @ origin`` moved by the joint (a P joint's point
    travels with it, as :class:`kic.ChainKinematics`' ``joint_points``, which
    the model's characteristic length measures), for designs whose numbers are
    ``fields`` (:func:`float_fields`, leading axes broadcast with phi's): the
    numpy, batched form of :func:`body_frames`."""
    phi = np.asarray(phi, float)
    axis, origin, offset = fields["axis"], fields["origin"], fields["offset"]
    lead = np.broadcast_shapes(phi.shape[:-1], origin.shape[:-3])
    F = np.empty(lead + (plan.N, 4, 4))
    o = np.empty(lead + (plan.N, 3))
    for j in plan.order:
        p = int(plan.parent[j])
        J = origin[..., j, :, :] if p < 0 else F[..., p, :, :] @ origin[..., j, :, :]
        J = np.broadcast_to(J, lead + (4, 4))
        JT = J @ joint_motions(bool(plan.is_revolute[j]), axis[..., j, :], phi[..., j])
        o[..., j, :] = JT[..., :3, 3]
        F[..., j, :, :] = JT @ offset[..., j, :, :]
    return o


def reference_length(plan: ClosedPlan, fields: dict, phi) -> np.ndarray:
    """The characteristic length (...) (m) of designs at their reference joint
    values ``phi`` (..., N): the largest distance between two joint origins or
    a joint origin and the world origin (1 m if all coincide), as
    ``ClosedModel.characteristic_length``."""
    return characteristic_length(joint_origins(plan, fields, phi))
