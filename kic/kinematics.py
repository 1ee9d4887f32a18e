"""Influence coefficients of an open serial chain (seed 004, chapter II.B).

For a dependent quantity u(q) (the rotation of a link, a point on a link):

* ``G[..., p, n] = du_p/dq_n``                          first order (eq. 2-6)
* ``H[..., p, m, n] = dG[..., p, n]/dq_m``              second order (eq. 2-17)
* ``D[..., p, l, m, n] = dH[..., p, m, n]/dq_l``        third order (eq. 2-42)

so that ``u' = G q'`` (eq. 2-7), ``u'' = G q'' + q'^T H q'`` (eq. 2-27) and
``u''' = G q''' + 2 H(q', q'') + H(q'', q') + D(q', q', q')`` (eq. 2-44, with
``H(a, b) = sum_mn H[p, m, n] a_m b_n``).  For rotations ``u'`` is the angular
velocity (a quasi-coordinate); the rotational H is not symmetric (eq. 2-69).

The coefficients come from the joint screws alone (Tables 2-3 to 2-5): with
``s_n`` the world axis of joint n, ``r_n`` a point on it and ``s^R_n = s_n`` for
revolute joints, 0 for prismatic ones, for a point P on link j and n, k <= j:

* ``G[:, n] = s_n x (P - r_n)`` (R) or ``s_n`` (P)
* ``H[:, i, k] = s^R_i x G[:, k]`` for ``i <= k`` (symmetric)
* ``D[:, i, k, l] = s^R_i x H[:, k, l]`` for ``i <= k <= l`` (symmetric)

and for the rotation of link j: ``G[:, n] = s^R_n``, ``H[:, m, n] = s^R_m x s^R_n``
for ``m < n`` (0 otherwise), and ``D[:, l, m, n]`` the derivative of the latter.
"""
from __future__ import annotations

import numpy as np

from .backend import cross, kernels
from ._array import as_batch, from_batch, match_batch, numeric
from .errors import ModelError

__all__ = ["Influence", "ChainKinematics", "Pose", "link_frames"]


# --------------------------------------------------------------------------
# forward kinematics (batch last)
# --------------------------------------------------------------------------
class Pose:
    """World geometry of a chain at N configurations, batch last.

    Attributes: ``R`` (3, 3, M, N) rotations and ``p`` (3, M, N) origins of
    the internal (z-axis) link frames, ``s`` (3, M, N) joint axes (the third
    column of R), ``r`` (3, M, N) points on the axes (the link origins), ``sR`` the axes of revolute joints (zero for
    prismatic), ``sv`` the moment part of the joint screws (``r x s`` for R,
    ``s`` for P).
    """

    __slots__ = ("R", "p", "s", "r", "sR", "sv", "N", "Fc")

    def __init__(self, chain, qT: np.ndarray) -> None:
        self.N = qT.shape[1]
        # Frames are stored by columns, batch last: Fc[j, k, i, n] = T_j[i, k]
        # (k = 0..2 rotation columns, k = 3 origin)
        Fc, self.sR, self.sv = kernels().pose(chain.kernel_data, qT)
        self.Fc = Fc
        # the joint axis is the unchanged third column; the link origin lies on it
        self.R = Fc[:, :3].transpose(2, 1, 0, 3)        # (3, 3, M, N) view
        self.p = Fc[:, 3].transpose(1, 0, 2)
        self.s = Fc[:, 2].transpose(1, 0, 2)
        self.r = self.p


def link_motion(pose: Pose, qdT: np.ndarray, qddT: np.ndarray | None = None,
                gravity: np.ndarray | None = None):
    """World screw motion of every link, batch last: (w, v, aw, av), each (3, M, N).

    ``w`` is the angular velocity, ``v`` the velocity of the body point at the
    world origin, ``(aw, av)`` their time derivatives: prefix sums of the joint
    screws ``xi_n q'_n`` and of ``xi_n q''_n + V_n x xi_n q'_n`` (O(links)).
    With ``qddT=None`` the accelerations are the velocity-product terms
    ``q'^T H q'`` alone; ``gravity`` (3,) adds the base acceleration ``-g``.  A point P on link j then has velocity
    ``v + w x P`` and acceleration ``av + aw x P + w x (v + w x P)``.
    """
    return kernels().link_motion(pose.sR, pose.sv, qdT, qddT, gravity)


def point_acceleration(w, v, aw, av, P) -> np.ndarray:
    """Acceleration of a body point at world position P from the screw motion."""
    u = cross(w, P)
    u += v                               # the point's velocity
    a = cross(w, u)
    a += cross(aw, P)
    a += av
    return a


def link_frames(chain, q, tool: bool = False) -> np.ndarray:
    """World frames of the links (..., M, 4, 4), or of the tool (..., 4, 4)."""
    qT, batch = as_batch(q, chain.dof)
    return _frames(chain, Pose(chain, qT), batch, tool)


def _frames(chain, pose: "Pose", batch: tuple, tool: bool = False) -> np.ndarray:
    M, N = pose.p.shape[1:]
    F = np.zeros((N, M, 4, 4))
    F[..., :3, :3] = pose.R.transpose(3, 2, 0, 1)
    F[..., :3, 3] = pose.p.transpose(2, 1, 0)
    F[..., 3, 3] = 1.0
    if tool:
        return (F[:, -1] @ chain.kernel_data.tool).reshape(batch + (4, 4))
    return (F @ chain.kernel_data.offsets).reshape(batch + (M, 4, 4))


# --------------------------------------------------------------------------
# influence coefficients
# --------------------------------------------------------------------------
def _pairs(M: int):
    """Index grids: (min(a, b), max(a, b)) over an M x M grid."""
    a, b = np.indices((M, M))
    return np.minimum(a, b), np.maximum(a, b)


def _triples(M: int):
    """Index grids of sorted (i1 <= i2 <= i3) over an M x M x M grid."""
    idx = np.sort(np.stack(np.indices((M, M, M))), axis=0)
    return idx[0], idx[1], idx[2]


def point_coefficients(sR: np.ndarray, G: np.ndarray, order: int):
    """H and D of a point from its G and the revolute axes (batch last).

    ``sR`` (3, M, N), ``G`` (3, M, N) already zero beyond the point's link.
    """
    M = G.shape[1]
    H = D = None
    if order >= 2:
        i, k = _pairs(M)
        X = cross(sR[:, :, None], G[:, None, :])          # X[:, i, k] = s^R_i x G_k
        H = X[:, i, k]
        if order >= 3:
            i1, i2, i3 = _triples(M)
            Y = cross(sR[:, :, None, None], H[:, None])   # Y[:, i, k, l] = s^R_i x H_kl
            D = Y[:, i1, i2, i3]
    return H, D


def rotation_coefficients(sR: np.ndarray, link: int, order: int):
    """G, H, D of the rotation of link ``link`` (batch last)."""
    M = sR.shape[1]
    mask = (np.arange(M) <= link)
    g = sR * mask[None, :, None]
    H = D = None
    if order >= 2:
        m, n = np.indices((M, M))
        X = cross(g[:, :, None], g[:, None, :])            # s_m x s_n
        H = X * (m < n)[None, :, :, None]
        if order >= 3:
            l, m3, n3 = np.indices((M, M, M))
            # d(s_m x s_n)/dq_l = s_l x (s_m x s_n) for l < m, s_m x (s_l x s_n) for m <= l < n
            first = cross(g[:, :, None, None], H[:, None])            # s_l x H_mn
            second = cross(g[:, None, :, None], X[:, :, None, :])     # s_m x (s_l x s_n) [l,m,n]
            second = second * (l < n3)[None, ..., None]
            D = np.where((l < m3)[None, ..., None], first, second) * (m3 < n3)[None, ..., None]
    return g, H, D


class Influence:
    """Influence coefficients of one dependent quantity at a batch of configurations.

    Attributes
    ----------
    G : ndarray, shape (..., P, M)
        First order, ``du/dq`` (for a point: m/rad or dimensionless; for a
        rotation: rad/rad).
    H : ndarray, shape (..., P, M, M) or None
        Second order, ``H[..., p, m, n] = dG[..., p, n]/dq_m``.
    D : ndarray, shape (..., P, M, M, M) or None
        Third order, ``D[..., p, l, m, n] = dH[..., p, m, n]/dq_l``.

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> arm = mechanisms.planar_two_link()
    >>> tip = arm.kinematics([0.3, 0.5], order=2).point(1, (1.0, 0, 0))
    >>> tip.G.shape, tip.H.shape
    ((3, 2), (3, 2, 2))
    """

    def __init__(self, G: np.ndarray, H: np.ndarray | None = None,
                 D: np.ndarray | None = None) -> None:
        self.G, self.H, self.D = G, H, D

    @property
    def dof(self) -> int:
        return self.G.shape[-1]

    def _rates(self, name, x):
        x = numeric(x, name)
        if x.ndim == 0 or x.shape[-1] != self.dof:
            raise ModelError(f"{name} must have shape (..., {self.dof}), got {x.shape}")
        if not np.all(np.isfinite(x)):
            raise ModelError(f"{name} contains NaN or infinite values")
        return x

    def _need(self, order: int) -> None:
        if (order >= 2 and self.H is None) or (order >= 3 and self.D is None):
            raise ModelError(f"this Influence was computed to order "
                             f"{1 if self.H is None else 2}; request order={order} "
                             "from kinematics()")

    def velocity(self, qd) -> np.ndarray:
        """``u' = G q'`` (eq. 2-7), shape (..., P)."""
        qd = self._rates("qd", qd)
        return np.einsum("...pn,...n->...p", self.G, qd)

    def acceleration(self, qd, qdd) -> np.ndarray:
        """``u'' = G q'' + q'^T H q'`` (eq. 2-27), shape (..., P)."""
        self._need(2)
        qd, qdd = self._rates("qd", qd), self._rates("qdd", qdd)
        return (np.einsum("...pn,...n->...p", self.G, qdd)
                + np.einsum("...pmn,...m,...n->...p", self.H, qd, qd))

    def jerk(self, qd, qdd, qddd) -> np.ndarray:
        """``u''' = G q''' + 2 H(q', q'') + H(q'', q') + D(q', q', q')`` (eq. 2-44)."""
        self._need(3)
        qd, qdd, qddd = (self._rates("qd", qd), self._rates("qdd", qdd),
                         self._rates("qddd", qddd))
        return (np.einsum("...pn,...n->...p", self.G, qddd)
                + 2.0 * np.einsum("...pmn,...m,...n->...p", self.H, qd, qdd)
                + np.einsum("...pmn,...m,...n->...p", self.H, qdd, qd)
                + np.einsum("...plmn,...l,...m,...n->...p", self.D, qd, qd, qd))

    def __repr__(self) -> str:
        order = 1 if self.H is None else (2 if self.D is None else 3)
        return f"<Influence order {order}, G {self.G.shape}>"


class ChainKinematics:
    """Kinematic state of a serial chain at a batch of configurations.

    Created by :meth:`kic.SerialChain.kinematics`; holds the joint screws at
    ``q`` and produces the influence coefficients of any link rotation or
    point on demand.

    Attributes
    ----------
    q : ndarray, shape (..., M)
    order : int
    frames : ndarray, shape (..., M, 4, 4)
        World frames of the links (the frames their data are given in).
    axes : ndarray, shape (..., M, 3)
        World unit axes ``s_n`` of the joints.
    joint_points : ndarray, shape (..., M, 3)
        A world point ``r_n`` on each joint axis (m).
    """

    def __init__(self, chain, q, order: int = 2) -> None:
        if order not in (1, 2, 3):
            raise ModelError(f"order must be 1, 2 or 3, got {order!r}")
        self.chain = chain
        self.order = order
        self._qT, self._batch = as_batch(q, chain.dof)
        self.q = from_batch(self._qT, self._batch, 1)
        self._pose = Pose(chain, self._qT)

    def _out(self, x):
        return None if x is None else from_batch(x, self._batch, x.ndim - 1)

    @property
    def frames(self) -> np.ndarray:
        return _frames(self.chain, self._pose, self._batch)

    def link_point(self, link: int | str, p) -> np.ndarray:
        """World position (N, 3) of a point given in a link's frame (kept once computed)."""
        j = self.chain.link_index(link)
        key = (j,) + tuple(np.asarray(p, float).ravel())
        cache = self.__dict__.setdefault("_points", {})
        if key not in cache:
            Fo = self.chain.kernel_data.offsets[j]
            pk = Fo[:3, :3] @ np.asarray(p, float) + Fo[:3, 3]
            R = self._pose.R[:, :, j]
            cache[key] = (R[:, 0] * pk[0] + R[:, 1] * pk[1] + R[:, 2] * pk[2]
                          + self._pose.p[:, j]).T
        return cache[key]

    def link_frame(self, link: int | str, T=None) -> np.ndarray:
        """World frame (N, 4, 4) of one link's frame, times ``T`` (in that frame)."""
        j = self.chain.link_index(link)
        pose = self._pose
        N = pose.N
        F = np.zeros((N, 4, 4))
        F[:, :3, :3] = np.moveaxis(pose.R[:, :, j], -1, 0)
        F[:, :3, 3] = pose.p[:, j].T
        F[:, 3, 3] = 1.0
        Fo = self.chain.kernel_data.offsets[j]
        X = Fo if T is None else Fo @ T
        return F @ X

    @property
    def pose(self) -> Pose:
        """The link frames and joint screws at ``q``, batch last (:class:`Pose`), as
        the kernels of :func:`kic.backend.kernels` take them."""
        return self._pose

    @property
    def axes(self) -> np.ndarray:
        return self._out(self._pose.s).swapaxes(-1, -2)

    @property
    def joint_points(self) -> np.ndarray:
        return self._out(self._pose.r).swapaxes(-1, -2)

    def rotation(self, link: int | str) -> Influence:
        """Influence coefficients of the angular motion of ``link``.

        ``G`` (..., 3, M) maps joint rates to the link's world angular velocity
        (rad/s); ``H`` and ``D`` as in the module docstring.
        """
        j = self.chain.link_index(link)
        G, H, D = rotation_coefficients(self._pose.sR, j, self.order)
        return Influence(self._out(G), self._out(H), self._out(D))

    def point(self, link: int | str, p=(0.0, 0.0, 0.0)) -> Influence:
        """Influence coefficients of a point fixed on ``link``.

        Parameters
        ----------
        link : int or str
        p : array_like, shape (3,) or (..., 3)
            The point in the link's frame (m), e.g. a centroid or a tool tip.
        """
        j = self.chain.link_index(link)
        return Influence(*(self._out(x) for x in self._point(j, self._local_point(j, p))))

    def tool(self) -> Influence:
        """Influence coefficients of the tool-frame origin (see ``chain.tool``)."""
        j = self.chain.dof - 1
        tool = self.chain.kernel_data.tool[:3, 3][:, None]
        return Influence(*(self._out(x) for x in self._point(j, tool)))

    def _local_point(self, j: int, p) -> np.ndarray:
        """Point on link j in the kinematic frame, shape (3, N) or (3, 1)."""
        chain = self.chain
        p = np.asarray(p, dtype=float)
        if p.ndim == 0 or p.shape[-1] != 3 or not np.all(np.isfinite(p)):
            raise ModelError(f"point on link {chain.link_names[j]!r} must be a finite "
                             f"(..., 3) array, got {p!r}")
        Fo = chain.kernel_data.offsets[j]
        if p.ndim == 1:
            return (Fo[:3, :3] @ p + Fo[:3, 3])[:, None]
        pT = match_batch(p, 3, self._batch, "point")
        return Fo[:3, :3] @ pT + Fo[:3, 3][:, None]

    def _point(self, j: int, pk: np.ndarray):
        """G, H, D (batch last) of the point with kinematic-frame coords ``pk``."""
        pose = self._pose
        P = (pose.R[:, :, j] * pk[None]).sum(axis=1) + pose.p[:, j]      # (3, N)
        mask = (np.arange(self.chain.dof) <= j)[None, :, None]
        G = np.where(self.chain.is_revolute[None, :, None],
                     cross(pose.s, P[:, None] - pose.r), pose.s) * mask
        H, D = point_coefficients(pose.sR, G, self.order)
        return G, H, D

    def __repr__(self) -> str:
        return f"<ChainKinematics order {self.order}, batch {self._batch}, M={self.chain.dof}>"
