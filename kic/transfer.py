"""Transfer of a model between sets of generalized coordinates (seed ch. III).

Given initial coordinates phi (N,) and new coordinates q (M,) related through
``phi = phi(q)`` with the influence coefficients

* ``G[..., n, a] = dphi_n/dq_a``                  (G^phi_q)
* ``H[..., n, a, b] = dG[..., n, b]/dq_a``         (H^phi_qq)
* ``D[..., n, c, a, b] = dH[..., n, a, b]/dq_c``   (D^phi_qqq)

every part of the model keeps its form (the point of the method):

* influence coefficients: ``G^u_q = G^u_phi G``,
  ``H^u_qq = G^T H^u_phi G + G^u_phi o H`` and the third-order analogue;
* ``I*_qq = G^T I*_phi G``;
* ``P*_qqq = (G^T I*_phi) o H + G^T o (G^T P*_phi G)``;
* loads ``T_q = G^T T_phi`` (gravity and applied loads alike).

Here ``o`` is Freeman's generalized scalar product (:func:`kic.scalar_product`).
Transfers compose: phi -> q -> x equals phi -> x (:meth:`Transfer.then`).
All arrays carry leading batch axes.
"""
from __future__ import annotations

import numpy as np

from .errors import ModelError, SingularityError
from .settings import RANK_RTOL, TINY

__all__ = ["Transfer", "transfer_influence", "solve_transfer", "closure_transfer"]


def _sandwich(H: np.ndarray, A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """``A^T H B`` plane by plane: out[..., p, a, b] = sum_mn H[..., p, m, n] A[m, a] B[n, b]."""
    return np.einsum("...pmn,...ma,...nb->...pab", H, A, B, optimize=True)


def transfer_influence(G_u, H_u=None, D_u=None, G=None, H=None, D=None):
    """Chain rule to third order: the coefficients of u(phi(q)) in q.

    Parameters
    ----------
    G_u, H_u, D_u : ndarray, shapes (..., P, N), (..., P, N, N), (..., P, N, N, N)
        Coefficients of u in phi (H_u, D_u optional).
    G, H, D : ndarray, shapes (..., N, M), (..., N, M, M), (..., N, M, M, M)
        Coefficients of phi in q.

    Returns
    -------
    (G_uq, H_uq, D_uq)
        ``None`` where an input order is missing.
    """
    G_uq = np.einsum("...pn,...na->...pa", G_u, G)
    H_uq = D_uq = None
    if H_u is not None and H is not None:
        H_uq = _sandwich(H_u, G, G) + np.einsum("...pn,...nab->...pab", G_u, H)
        if D_u is not None and D is not None:
            D_uq = (np.einsum("...plmn,...lc,...ma,...nb->...pcab", D_u, G, G, G, optimize=True)
                    + np.einsum("...pmn,...mca,...nb->...pcab", H_u, H, G, optimize=True)
                    + np.einsum("...pmn,...ma,...ncb->...pcab", H_u, G, H, optimize=True)
                    + np.einsum("...pln,...lc,...nab->...pcab", H_u, G, H, optimize=True)
                    + np.einsum("...pn,...ncab->...pcab", G_u, D))
    return G_uq, H_uq, D_uq


class Transfer:
    """The map from new coordinates q to initial coordinates phi at a batch of q.

    Attributes
    ----------
    G : ndarray, shape (..., N, M)
        ``G^phi_q``.
    H : ndarray, shape (..., N, M, M) or None
        ``H^phi_qq``.
    D : ndarray, shape (..., N, M, M, M) or None
        ``D^phi_qqq``.

    Examples
    --------
    A pure change of coordinates, polar to Cartesian, and back:

    >>> import numpy as np, kic
    >>> r, t = 2.0, 0.3
    >>> G = np.array([[np.cos(t), -r*np.sin(t)], [np.sin(t), r*np.cos(t)]])   # dx/d(r,t)
    >>> H = np.zeros((2, 2, 2))
    >>> H[0] = [[0, -np.sin(t)], [-np.sin(t), -r*np.cos(t)]]
    >>> H[1] = [[0, np.cos(t)], [np.cos(t), -r*np.sin(t)]]
    >>> back = kic.Transfer(G, H).inverse()
    >>> np.allclose(kic.Transfer(G, H).then(back).G, np.eye(2))
    True
    """

    def __init__(self, G, H=None, D=None) -> None:
        self.G = np.asarray(G, dtype=float)
        self.H = None if H is None else np.asarray(H, dtype=float)
        self.D = None if D is None else np.asarray(D, dtype=float)
        N, M = self.G.shape[-2:]
        if self.H is not None and self.H.shape[-3:] != (N, M, M):
            raise ModelError(f"H must have shape (..., {N}, {M}, {M}), got {self.H.shape}")
        if self.D is not None and self.D.shape[-4:] != (N, M, M, M):
            raise ModelError(f"D must have shape (..., {N}, {M}, {M}, {M}), got {self.D.shape}")

    @classmethod
    def identity(cls, n: int, M: int, order: int = 2) -> "Transfer":
        """The transfer of coordinates to themselves at n configurations (G = 1,
        H = D = 0 to ``order``); :attr:`is_identity` says so without looking."""
        G = np.broadcast_to(np.eye(M), (n, M, M))
        H = np.zeros((n, M, M, M)) if order >= 2 else None
        D = np.zeros((n, M, M, M, M)) if order >= 3 else None
        tr = cls(G, H, D)
        tr.is_identity = True
        return tr

    #: True for :meth:`identity` transfers (callers may skip the products)
    is_identity = False

    @property
    def order(self) -> int:
        return 1 if self.H is None else (2 if self.D is None else 3)

    def rows(self, index) -> "Transfer":
        """The transfer of a subset of the initial coordinates (rows ``index``)."""
        return Transfer(self.G[..., index, :],
                        None if self.H is None else self.H[..., index, :, :],
                        None if self.D is None else self.D[..., index, :, :, :])

    # -------------------------------------------------------------- motion
    def rates(self, qd, qdd=None, qddd=None):
        """phi', and phi'' (eq. 2-27 form), phi''' when asked, from q-rates."""
        phid = np.einsum("...na,...a->...n", self.G, qd)
        if qdd is None:
            return phid
        phidd = (np.einsum("...na,...a->...n", self.G, qdd)
                 + np.einsum("...nab,...a,...b->...n", self.H, qd, qd))
        if qddd is None:
            return phid, phidd
        phiddd = (np.einsum("...na,...a->...n", self.G, qddd)
                  + 2 * np.einsum("...nab,...a,...b->...n", self.H, qd, qdd)
                  + np.einsum("...nab,...a,...b->...n", self.H, qdd, qd)
                  + np.einsum("...ncab,...c,...a,...b->...n", self.D, qd, qd, qd))
        return phid, phidd, phiddd

    # ------------------------------------------------------------- the model
    def influence(self, G_u, H_u=None, D_u=None):
        """Transfer the coefficients of a dependent quantity (see module docs)."""
        return transfer_influence(G_u, H_u, D_u, self.G, self.H, self.D)

    def inertia(self, I_phi) -> np.ndarray:
        """``I*_qq = G^T I*_phi G``."""
        return np.swapaxes(self.G, -1, -2) @ np.asarray(I_phi) @ self.G

    def power(self, I_phi, P_phi) -> np.ndarray:
        """``P*_qqq = (G^T I*_phi) o H + G^T o (G^T P*_phi G)``."""
        GI = np.einsum("...na,...nm->...am", self.G, I_phi)
        return (np.einsum("...am,...mbc->...abc", GI, self.H)
                + np.einsum("...na,...nml,...mb,...lc->...abc", self.G, P_phi, self.G, self.G,
                            optimize=True))

    def load(self, T_phi) -> np.ndarray:
        """``T_q = G^T T_phi`` for any input load (gravity, applied, required)."""
        return (np.swapaxes(self.G, -1, -2) @ np.asarray(T_phi)[..., None])[..., 0]

    # ---------------------------------------------------------- composition
    def then(self, other: "Transfer") -> "Transfer":
        """Compose: ``self`` maps q -> phi, ``other`` maps x -> q; result x -> phi."""
        G, H, D = transfer_influence(self.G, self.H, self.D, other.G, other.H, other.D)
        return Transfer(G, H, D)

    def inverse(self) -> "Transfer":
        """The inverse transfer of a square (pure change of coordinates) one.

        ``G^q_phi = (G^phi_q)^-1``, ``H^q = -G^q o (G^q^T H^phi G^q)``
        (case (a) of docs/theory.md#cases-a-b-and-c), and the third order likewise.
        """
        N, M = self.G.shape[-2:]
        if N != M:
            raise ModelError(f"only a square transfer can be inverted, this one is {N}x{M}")
        Gi = _checked_inverse(self.G, "transfer Jacobian G^phi_q")
        Hi = Di = None
        if self.H is not None:
            Hi = -np.einsum("...an,...nbc->...abc", Gi, _sandwich(self.H, Gi, Gi))
            if self.D is not None:
                # q(phi(q)) = q: the third-order coefficient of the composition
                # vanishes; with D^q = 0 it leaves D0, so D^q o (G, G, G) = -D0.
                zero = np.zeros(Gi.shape[:-2] + (M, M, M, M))
                _, _, D0 = transfer_influence(Gi, Hi, zero, self.G, self.H, self.D)
                Di = -np.einsum("...pcab,...cl,...am,...bn->...plmn", D0, Gi, Gi, Gi,
                                optimize=True)
        return Transfer(Gi, Hi, Di)


def _checked_inverse(A: np.ndarray, what: str) -> np.ndarray:
    """Inverse of stacked square matrices with a SingularityError when ill-conditioned."""
    sv = np.linalg.svd(A, compute_uv=False)
    smin, smax = sv[..., -1], sv[..., 0]
    bad = ~(smin > RANK_RTOL * np.maximum(smax, TINY))
    if np.any(bad):
        idx = tuple(int(i) for i in np.argwhere(bad)[0]) if bad.ndim else ()
        s = float(smin[idx]) if idx else float(smin)
        S = float(smax[idx]) if idx else float(smax)
        raise SingularityError(
            f"{what} is singular" + (f" at batch index {idx}" if idx else "")
            + f": smallest singular value {s:.3e}, condition number "
            + (f"{S / s:.3e}" if s > 0 else "inf"),
            sigma_min=s, condition=S / s if s > 0 else float("inf"), where=what,
            index=idx or None)
    return np.linalg.inv(A)


def solve_transfer(G_psi, H_psi=None, D_psi=None, m: int | None = None,
                   what: str = "coordinate Jacobian") -> Transfer:
    """The transfer phi -> q from the relations ``psi(phi) = [q(phi); c(phi)] = [q; 0]``.

    Parameters
    ----------
    G_psi : ndarray, shape (..., N, N)
        Rows ``[G^q_phi; G^c_phi]``: first the M new coordinates, then the
        N - M independent constraints (docs/theory.md#cases-a-b-and-c).
    H_psi, D_psi : ndarray, optional
        Their second and third order coefficients in phi.
    m : int
        Number M of new coordinates (the leading rows).

    Returns
    -------
    Transfer
        ``G^phi_q`` = first M columns of ``J^-1``,
        ``H^phi_qq = -J^-1 o (G^T H^psi G)``, and D likewise.
    """
    N = G_psi.shape[-1]
    if G_psi.shape[-2] != N:
        raise ModelError(f"the coordinate and constraint rows must form a square system, got "
                         f"{G_psi.shape[-2]} rows for {N} initial coordinates")
    m = N if m is None else m
    Ji = _checked_inverse(G_psi, what)
    G = Ji[..., :, :m]
    H = D = None
    if H_psi is not None:
        H = -np.einsum("...np,...pab->...nab", Ji, _sandwich(H_psi, G, G))
        if D_psi is not None:
            X = (np.einsum("...plmn,...lc,...ma,...nb->...pcab", D_psi, G, G, G, optimize=True)
                 + np.einsum("...pmn,...mca,...nb->...pcab", H_psi, H, G, optimize=True)
                 + np.einsum("...pmn,...ma,...ncb->...pcab", H_psi, G, H, optimize=True)
                 + np.einsum("...pln,...lc,...nab->...pcab", H_psi, G, H, optimize=True))
            D = -np.einsum("...np,...pcab->...ncab", Ji, X)
    return Transfer(G, H, D)


def closure_transfer(system, phi: np.ndarray, order: int, max_condition: float, kins=None,
                     velocity=None):
    """The transfer G^phi_q, H^phi_qq, D^phi_qqq of a closed mechanism at assembled
    joint values ``phi`` (n, N) (docs/theory.md#case-b-the-coordinates-are-joints).

    With phi = (q, p) and the closures c(phi) = 0 of ``system`` (a
    :class:`kic.loops.LoopSystem`), block by block::

        G^p_q  = -A^-1 B                                  (A = dc/dp, B = dc/dq)
        H^p_qq = -A^-1 o (G^phi_q^T H^c G^phi_q)
        D^p_qqq = -A^-1 o (the third-order chain rule without D^p)

    Parameters
    ----------
    system : kic.loops.LoopSystem
    phi : ndarray (n, N)
    order : {1, 2, 3}
    max_condition : float
        A block whose dimensionless condition number passes it raises
        :class:`kic.SingularityError`.
    kins : dict, optional
        The chains' kinematics at phi (reused when given).
    velocity : (qd, qdd), optional
        Rates (n, M): then also phi' and phi'' (from the acceleration-level
        closure, without forming H) and the chains' screw motion.

    Returns
    -------
    (Transfer, kins) or, with ``velocity``, (Transfer, kins, phid, phidd, motion)
    """
    n, M = phi.shape[0], system.dof
    rows, kins = system.rows(phi, order, residual=False, kins=kins)
    G = np.zeros((n, system.N, M))
    G[:, system.q_idx, np.arange(M)] = 1.0
    H = np.zeros((n, system.N, M, M)) if order >= 2 else None
    D = np.zeros((n, system.N, M, M, M)) if order >= 3 else None
    mats = [system.block_matrices(rows, block, n) for block in system.blocks]
    inv = system.inverses([A for A, _ in mats], max_condition)
    for block, (A, B), Ai in zip(system.blocks, mats, inv):
        G[:, block.joints] = -Ai @ B
    for block, Ai in zip(system.blocks, inv) if order >= 2 else ():
        X = _closure_known(system, rows, block, 2, G, None, n)
        H[:, block.joints] = -np.einsum("npr,nrab->npab", Ai, X)
    for block, Ai in zip(system.blocks, inv) if order >= 3 else ():
        X = _closure_known(system, rows, block, 3, G, H, n)
        D[:, block.joints] = -np.einsum("npr,nrcab->npcab", Ai, X)
    tr = Transfer(G, H, D)
    if velocity is None:
        return tr, kins
    qd, qdd = velocity
    phid = tr.rates(qd)
    phidd = tr.rates(qdd)          # G q'', plus the velocity products below:
    motion: dict = {}
    bias = system.bias(rows, kins, phid, phi, motion)
    for block, Ai in zip(system.blocks, inv):
        b = np.concatenate([bias[i] for i in block.loops], axis=1)
        phidd[:, block.joints] -= np.einsum("npr,nr->np", Ai, b)   # -A^-1 H^c(phi', phi')
    return tr, kins, phid, phidd, motion


def _closure_known(system, rows, block, order, G, H, n) -> np.ndarray:
    """The part of a block's order-2 (or 3) constraint that does not involve the
    dependent joints' own H (or D): the chain rule summed over the loops' sides."""
    R = block.rows[-1].stop
    M = system.dof
    X = np.zeros((n, R) + (M,) * order)
    for i, rs in zip(block.loops, block.rows):
        rw = rows[i]
        for side, Gc, Hc, Dc in zip(system.loops[i].sides, rw.G, rw.H, rw.D):
            Gs = G[:, side.cols]
            if order == 2:
                X[:, rs] += np.einsum("nrmk,nma,nkb->nrab", Hc, Gs, Gs, optimize=True)
            else:
                Hs = H[:, side.cols]
                zero = np.zeros(Hs.shape[:-2] + (M, M, M))
                X[:, rs] += transfer_influence(Gc, Hc, Dc, Gs, Hs, zero)[2]
    return X
