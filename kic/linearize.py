"""Linearized dynamics about a nominal motion (seed eq. 2-201 to 2-227).

For required loads ``T(q, q', q'')`` (the dynamic model with its loads)::

    dT = I* d(q'') + C d(q') + K d(q)                           (eq. 2-225)

with ``C = dT/dq' = q'^T (P* + P*^T)`` (plus viscous damping) and
``K = dT/dq`` at fixed rates (the position-derivative term).  For a serial
chain K is assembled link by link from the first- to third-order influence
coefficients (docs/theory.md#the-linearized-model-eq-2-225-to-2-227):

    K[m,n] += H_c[:,n,m] . (p' - m g) + g_c_m . m da_c/dq_n + H_rot[:,n,m] . L'
            + g_rot_m . (dI/dq_n alpha + I dalpha/dq_n + dw/dq_n x I w
                         + w x (dI/dq_n w + I dw/dq_n))

with ``p' = m a_c``, ``L' = I alpha + w x I w``, ``dI/dq_n = [g_n x] I - I [g_n x]``,
``dw/dq_n = H_rot[:, n, :] q'``, ``dalpha/dq_n = H_rot[:, n, :] q'' + q'^T D_rot[:, n] q'``
and likewise for the centroid acceleration a_c.  Constant applied forces and
moments add ``-H_u[:,n,m] . T_u``, springs their stiffness, dampers their
coefficient to C (eq. 2-226).  A transferred model (closed mechanism) gets
``K_q[b,a] = sum_n H[n,a,b] T_phi_n + [G^T (K_phi G + C_phi Phi'_q + I*_phi Phi''_q)]_ba``
with ``Phi'_q = H q'`` and ``Phi''_q = H q'' + q'^T D q'`` (this is why D is needed).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .backend import cross
from .errors import ModelError

__all__ = ["LinearDynamics", "linear_dynamics"]


@dataclass
class LinearDynamics:
    """Coefficients of ``dT = I* dq'' + C dq' + K dq`` along a batch of states.

    Attributes
    ----------
    I : ndarray, shape (..., M, M)
        Effective inertia I* (kg m^2, kg).
    C : ndarray, shape (..., M, M)
        ``dT/dq'`` (N m s/rad ...): ``q'^T (P* + P*^T)`` plus damping.
    K : ndarray, shape (..., M, M)
        ``dT/dq`` at fixed rates (N m/rad ...).
    T : ndarray, shape (..., M)
        The nominal required loads.
    """

    I: np.ndarray
    C: np.ndarray
    K: np.ndarray
    T: np.ndarray


def _rates(model, q, qd, qdd):
    M = model.dof
    q = np.asarray(q, float)
    batch = q.shape[:-1]
    arrs = []
    for name, x in (("q", q), ("qd", qd), ("qdd", qdd)):
        x = np.asarray(x, float)
        if x.ndim == 0 or x.shape[-1] != M:
            raise ModelError(f"{name} must have shape (..., {M}), got {x.shape}")
        try:
            x = np.broadcast_to(x, batch + (M,))
        except ValueError as exc:
            raise ModelError(f"{name} of shape {x.shape} does not match q {q.shape}") from exc
        if not np.all(np.isfinite(x)):
            raise ModelError(f"{name} contains NaN or infinite values")
        arrs.append(x.reshape(-1, M))
    return batch, arrs


def linear_dynamics(model, q, qd, qdd, loads=None) -> LinearDynamics:
    """The linearized dynamics of a serial chain or closed model about (q, q', q'').

    Parameters
    ----------
    model : kic.SerialChain or kic.ClosedModel
    q, qd, qdd : array_like, shape (..., M)
        Nominal coordinates, rates and accelerations (a trajectory: K states).
    loads : kic.Loads, optional
        Constant applied loads, springs and dampers.

    Returns
    -------
    LinearDynamics

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> arm = mechanisms.planar_two_link()
    >>> lin = kic.linear_dynamics(arm, [0.3, 0.5], [0.2, -0.1], [0.0, 0.4])
    >>> lin.K.shape, bool(np.allclose(lin.I, arm.dynamics([0.3, 0.5]).I_star))
    ((2, 2), True)
    """
    batch, (qf, qdf, qddf) = _rates(model, q, qd, qdd)
    phi, tr = model.transfer_at(qf, 3)
    if tr.is_identity:                 # one open chain in its own coordinates
        (chain, _), = model.open_chains
        I, C, K, T = _chain_linear(chain, qf, qdf, qddf, loads)
    else:
        I, C, K, T = _closed_linear(model, phi, tr, qf, qdf, qddf, loads)
    M = model.dof
    shape = lambda X, tail: X.reshape(batch + tail)                 # noqa: E731
    return LinearDynamics(shape(I, (M, M)), shape(C, (M, M)), shape(K, (M, M)), shape(T, (M,)))


def _chain_linear(chain, q, qd, qdd, loads):
    """I, C, K, T of a serial chain (batch first)."""
    n, M = q.shape
    kin = chain.kinematics(q, 3)
    dyn = chain.dynamics(q)
    I = dyn.I_star.reshape(n, M, M)
    P = dyn.P_star.reshape(n, M, M, M)
    C = np.einsum("bm,bnmk->bnk", qd, P) + np.einsum("bm,bnkm->bnk", qd, P)
    T = chain.inverse_dynamics(q, qd, qdd, loads=loads).reshape(n, M)
    K = np.zeros((n, M, M))
    F = kin.frames.reshape(n, M, 4, 4)
    g = chain.gravity
    for j, link in enumerate(chain.links):
        if link.mass == 0 and not np.any(link.inertia):
            continue
        rt = kin.rotation(j)
        pc = kin.point(j, link.com)
        Gr, Hr, Dr = (x.reshape((n,) + x.shape[-k:]) for x, k in ((rt.G, 2), (rt.H, 3),
                                                                   (rt.D, 4)))
        Gc, Hc, Dc = (x.reshape((n,) + x.shape[-k:]) for x, k in ((pc.G, 2), (pc.H, 3),
                                                                   (pc.D, 4)))
        m = link.mass
        R = F[:, j, :3, :3]
        Iw = R @ link.inertia @ np.swapaxes(R, -1, -2)
        w = np.einsum("bpm,bm->bp", Gr, qd)
        alpha = np.einsum("bpm,bm->bp", Gr, qdd) + np.einsum("bpmk,bm,bk->bp", Hr, qd, qd)
        ac = np.einsum("bpm,bm->bp", Gc, qdd) + np.einsum("bpmk,bm,bk->bp", Hc, qd, qd)
        Iw_w = np.einsum("bpq,bq->bp", Iw, w)
        Ldot = np.einsum("bpq,bq->bp", Iw, alpha) + cross(w.T, Iw_w.T).T
        force = m * ac - m * g                         # d'Alembert load minus gravity
        # d/dq_n of the rates: (b, 3, n)
        dw = np.einsum("bpnk,bk->bpn", Hr, qd)
        dalpha = np.einsum("bpnk,bk->bpn", Hr, qdd) + np.einsum("bpnkl,bk,bl->bpn", Dr, qd, qd)
        dac = np.einsum("bpnk,bk->bpn", Hc, qdd) + np.einsum("bpnkl,bk,bl->bpn", Dc, qd, qd)
        K += np.einsum("bpnm,bp->bmn", Hc, force)
        K += m * np.einsum("bpm,bpn->bmn", Gc, dac)
        K += np.einsum("bpnm,bp->bmn", Hr, Ldot)
        # dI/dq_n = [g_n x] I - I [g_n x] = S_n + S_n^T with S_n = [g_n x] I, every n at
        # once: S[b, p, n, q] = (g_n x I[:, q])_p
        S = cross(Gr[:, :, :, None], Iw[:, :, None, :], axis=1)
        dI = S.transpose(0, 2, 1, 3) + S.transpose(0, 2, 3, 1)          # (b, n, 3, 3)
        dL = np.einsum("bnpq,bq->bpn", dI, w) + np.einsum("bpq,bqn->bpn", Iw, dw)
        term = (np.einsum("bnpq,bq->bpn", dI, alpha) + np.einsum("bpq,bqn->bpn", Iw, dalpha)
                + cross(dw, Iw_w[:, :, None], axis=1) + cross(w[:, :, None], dL, axis=1))
        K += np.einsum("bpm,bpn->bmn", Gr, term)
    if loads:
        K, C = _load_terms(chain, kin, loads, K, C, n, M)
    return I, C, K, T


def _load_terms(chain, kin, loads, K, C, n, M):
    """Stiffness and damping of applied loads (constant forces and moments)."""
    for f in loads.forces:
        if f.force.ndim != 1:
            raise ModelError("linearization takes constant applied forces (a (3,) vector)")
        H = kin.point(f.link, f.point).H.reshape(n, 3, M, M)
        K = K - np.einsum("bpnm,p->bmn", H, f.force)
    for mo in loads.moments:
        if mo.moment.ndim != 1:
            raise ModelError("linearization takes constant applied moments (a (3,) vector)")
        H = kin.rotation(mo.link).H.reshape(n, 3, M, M)
        K = K - np.einsum("bpnm,p->bmn", H, mo.moment)
    for s in loads.springs:
        k = chain.joint_index(s.joint)
        K = K.copy()
        K[:, k, k] += s.stiffness
    for d in loads.dampers:
        k = chain.joint_index(d.joint)
        C = C.copy()
        C[:, k, k] += d.coefficient
    return K, C


def _closed_linear(model, phi, tr, q, qd, qdd, loads):
    """I, C, K, T of a transferred (closed) model, from its chains."""
    n, M = q.shape
    G, H, D = tr.G, tr.H, tr.D
    phid, phidd = tr.rates(qd, qdd)
    I = np.zeros((n, M, M))
    C = np.zeros((n, M, M))
    K = np.zeros((n, M, M))
    T = np.zeros((n, M))
    Phi1 = np.einsum("bnae,be->bna", H, qd)
    Phi2 = np.einsum("bnae,be->bna", H, qdd) + np.einsum("bnade,bd,be->bna", D, qd, qd)
    Psi = Phi1 + np.einsum("bnea,be->bna", H, qd)                 # d phi''/d q'
    chain_loads = model.split_loads(loads) if loads else [None] * len(model.open_chains)
    for (chain, idx), cl in zip(model.open_chains, chain_loads):
        if not chain.has_inertia and cl is None:
            continue
        lin = _chain_linear(chain, phi[:, idx], phid[:, idx], phidd[:, idx], cl)
        Ic, Cc, Kc, Tc = lin
        Gc, Hc = G[:, idx], H[:, idx]
        I += np.einsum("bna,bnm,bmc->bac", Gc, Ic, Gc)
        C += (np.einsum("bnx,bnm,bma->bxa", Gc, Cc, Gc)
              + np.einsum("bnx,bnm,bma->bxa", Gc, Ic, Psi[:, idx]))
        K += (np.einsum("bnax,bn->bxa", Hc, Tc)
              + np.einsum("bnx,bnm,bma->bxa", Gc, Kc, Gc)
              + np.einsum("bnx,bnm,bma->bxa", Gc, Cc, Phi1[:, idx])
              + np.einsum("bnx,bnm,bma->bxa", Gc, Ic, Phi2[:, idx]))
        T += np.einsum("bnx,bn->bx", Gc, Tc)
    return I, C, K, T
