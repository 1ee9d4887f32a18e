"""Actuators at coordinates other than the model's, redundancy and load
distribution (seed ch. IV: redundant and overconstrained systems).

* Overconstrained systems (more actuators N_a than degrees of freedom M:
  cooperating arms, redundantly actuated parallel robots): the actuator loads
  satisfy ``(G^a_q)^T tau_a = T_q`` with N_a > M unknowns; the weighted
  minimum-norm solution is ``tau_a = W^-1 G^a_q (G^a_q^T W^-1 G^a_q)^-1 T_q``
  (W = 1 for minimum norm, W = motor resistances / torque constants^2 for
  minimum copper loss) and ``N lambda`` adds internal (squeeze) loads that do
  no work.
* Redundant systems (more joints than task coordinates): a weighted
  pseudo-inverse with explicit null-space motion, and the task-space inertia
  ``(G I*^-1 G^T)^-1`` (equal to the Schur complement of an augmented model,
  see the redundant-arm example in the docs).
"""
from __future__ import annotations

import numpy as np

from .errors import ModelError, SingularityError
from .settings import NULLSPACE_RTOL, RANK_RTOL, TINY

__all__ = ["load_distribution", "internal_loads", "weighted_pseudo_inverse",
           "redundant_rates", "task_inertia"]


def _weights(W, n: int) -> np.ndarray:
    if W is None:
        return np.ones(n)
    W = np.asarray(W, dtype=float)
    if W.shape != (n,) or not np.all(np.isfinite(W)) or np.any(W <= 0):
        raise ModelError(f"weights must be {n} positive finite numbers (a diagonal W), got {W!r}")
    return W


def load_distribution(G_a, T, weights=None) -> np.ndarray:
    """Actuator loads of least weighted norm that produce the coordinate loads T.

    Parameters
    ----------
    G_a : array_like, shape (..., Na, M)
        ``G^a_q``: actuator rates per coordinate rate (Na >= M).
    T : array_like, shape (..., M)
        Required loads at the coordinates (e.g. from ``inverse_dynamics``).
    weights : array_like, shape (Na,), optional
        Diagonal of W; the result minimises ``tau^T W tau``.

    Returns
    -------
    tau_a : ndarray, shape (..., Na)
        ``W^-1 G (G^T W^-1 G)^-1 T``; satisfies ``G^T tau_a = T``.

    Examples
    --------
    >>> import numpy as np, kic
    >>> G = np.array([[1.0], [1.0]])         # two motors on one coordinate
    >>> kic.load_distribution(G, [4.0]), kic.load_distribution(G, [4.0], weights=[1.0, 3.0])
    (array([2., 2.]), array([3., 1.]))
    """
    G = np.asarray(G_a, dtype=float)
    T = np.asarray(T, dtype=float)
    Na, M = G.shape[-2:]
    if Na < M:
        raise ModelError(f"{Na} actuators cannot drive {M} coordinates (underactuated)")
    w = 1.0 / _weights(weights, Na)
    GW = G * w[:, None]                                   # W^-1 G
    A = np.swapaxes(G, -1, -2) @ GW                        # G^T W^-1 G
    sv = np.linalg.svd(A, compute_uv=False)
    if np.any(~(sv[..., -1] > RANK_RTOL * sv[..., 0])):
        raise SingularityError("the actuators cannot produce every coordinate load here: "
                               "G^a_q is rank deficient", sigma_min=float(sv[..., -1].min()),
                               where="actuator Jacobian G^a_q")
    return (GW @ np.linalg.solve(A, T[..., None]))[..., 0]


def internal_loads(G_a, tol: float = NULLSPACE_RTOL) -> np.ndarray:
    """Basis of the actuator loads that do no work: the null space of ``G^a_q^T``.

    Returns an array of shape (Na, Na - M) (for one configuration) whose columns
    are orthonormal; adding any combination to ``tau_a`` leaves ``T_q`` unchanged.

    The basis is canonical, so it does not depend on the LAPACK build: the
    reduced row echelon form of the null space (unique for the space; pivots are
    the first components above ``tol`` relative to the largest), orthonormalized
    by Gram-Schmidt in that order.  So the first column is the null vector whose
    first nonzero component is positive, and so on.

    Examples
    --------
    >>> import numpy as np, kic
    >>> kic.internal_loads(np.array([[1.0], [1.0]])).ravel() * np.sqrt(2)
    array([ 1., -1.])
    """
    G = np.asarray(G_a, dtype=float)
    if G.ndim != 2:
        raise ModelError("internal_loads takes one configuration: G^a_q of shape (Na, M)")
    u, s, _ = np.linalg.svd(G, full_matrices=True)
    rank = int(np.sum(s > tol * max(s[0], TINY))) if s.size else 0
    B = u[:, rank:].T.copy()                    # rows span the null space (any basis)
    k, n = B.shape
    # reduced row echelon form: unique for the row space, whatever basis SVD gave
    row = 0
    scale = max(float(np.abs(B).max()), TINY) if B.size else 1.0
    for col in range(n):
        if row == k:
            break
        p = row + int(np.argmax(np.abs(B[row:, col])))
        if abs(B[p, col]) <= tol * scale:
            continue
        B[[row, p]] = B[[p, row]]
        B[row] /= B[row, col]
        others = np.arange(k) != row
        B[others] -= np.outer(B[others, col], B[row])
        row += 1
    # Gram-Schmidt in the echelon order keeps each leading component positive
    Q = np.zeros((n, k))
    for j in range(k):
        v = B[j] - Q[:, :j] @ (Q[:, :j].T @ B[j])
        Q[:, j] = v / np.linalg.norm(v)
    return Q


def weighted_pseudo_inverse(G, weights=None) -> np.ndarray:
    """``G^+_W = W^-1 G^T (G W^-1 G^T)^-1`` for a wide G (..., P, N), P <= N."""
    G = np.asarray(G, dtype=float)
    P, N = G.shape[-2:]
    if P > N:
        raise ModelError(f"G has more rows ({P}) than columns ({N}): not redundant")
    w = 1.0 / _weights(weights, N)
    GWt = np.swapaxes(G * w, -1, -2)
    A = G @ GWt
    return GWt @ np.linalg.inv(A)


def redundant_rates(G, H, xd, xdd, nu=None, nud=None, weights=None):
    """Joint rates and accelerations of a redundant system for a task motion.

    ``phi' = G+ x' + (1 - G+ G) nu`` and
    ``phi'' = G+ (x'' - phi'^T H phi') + (1 - G+ G) nu'``, with ``G+`` the
    weighted pseudo-inverse.  The null-space motion ``nu`` (and its rate) is
    explicit: the pseudo-inverse rate law alone is not integrable
    (docs/theory.md#redundant-mechanisms).

    Parameters
    ----------
    G : (P, N), H : (P, N, N)
        Task influence coefficients in the joints at the current configuration.
    xd, xdd : (P,)
        Task velocity and acceleration.
    nu, nud : (N,), optional
        Null-space velocity and acceleration (default zero).

    Returns
    -------
    phid, phidd : ndarray (N,)
    """
    G = np.asarray(G, float)
    H = np.asarray(H, float)
    N = G.shape[-1]
    Gp = weighted_pseudo_inverse(G, weights)
    Pn = np.eye(N) - Gp @ G
    nu = np.zeros(N) if nu is None else np.asarray(nu, float)
    nud = np.zeros(N) if nud is None else np.asarray(nud, float)
    phid = Gp @ np.asarray(xd, float) + Pn @ nu
    phidd = Gp @ (np.asarray(xdd, float) - np.einsum("pmn,m,n->p", H, phid, phid)) + Pn @ nud
    return phid, phidd


def task_inertia(I_star, G) -> np.ndarray:
    """Task-space (operational-space) inertia ``(G I*^-1 G^T)^-1`` (..., P, P)."""
    I_star = np.asarray(I_star, float)
    G = np.asarray(G, float)
    X = G @ np.linalg.solve(I_star, np.swapaxes(G, -1, -2))
    return np.linalg.inv(X)
