"""Freeman's generalized scalar and cross products (seed Appendix A, eq. 2-172).

These operators are what let a dynamic model keep its form under a change of
generalized coordinates (chapter III): ``A (v^T H v) = v^T (A o H) v``,
``(A C) o H = A o (C o H)`` and ``A o (G^T H G) = G^T (A o H) G``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["scalar_product", "cross_product"]


def scalar_product(A, B) -> np.ndarray:
    """Generalized scalar product ``A o B`` (APL's ``+.x``).

    Contracts the last index of ``A`` with the first index of ``B``:
    ``(A o H)[m, a, b] = sum_p A[m, p] H[p, a, b]``.  Leading batch axes are
    not supported here; the numeric kernels contract batched arrays directly.

    Examples
    --------
    >>> import numpy as np, kic
    >>> A = np.arange(6.0).reshape(2, 3); H = np.ones((3, 2, 2))
    >>> kic.scalar_product(A, H)[:, 0, 0]
    array([ 3., 12.])
    """
    return np.tensordot(np.asarray(A, float), np.asarray(B, float), axes=1)


def cross_product(G, b) -> np.ndarray:
    """Generalized cross product ``[G]^T x b = [g_1 x b, ..., g_M x b]`` (3 x M).

    Examples
    --------
    >>> import numpy as np, kic
    >>> kic.cross_product(np.eye(3), np.array([0.0, 0.0, 1.0]))
    array([[ 0.,  1.,  0.],
           [-1.,  0.,  0.],
           [ 0.,  0.,  0.]])
    """
    G = np.asarray(G, float)
    b = np.asarray(b, float)
    return np.cross(G, b, axis=0)
