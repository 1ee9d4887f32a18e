"""internal_loads: a canonical basis, whatever basis the SVD happens to return."""
import numpy as np

import kic


def test_tie_between_components_is_not_decided_by_lapack():
    N = kic.internal_loads(np.array([[1.0], [1.0]]))
    assert np.allclose(N.ravel(), np.array([1.0, -1.0]) / np.sqrt(2), atol=1e-15)


def test_basis_depends_on_the_space_only():
    rng = np.random.default_rng(5)
    for Na, M in ((4, 2), (5, 2), (6, 3), (3, 1)):
        G = rng.normal(size=(Na, M))
        N = kic.internal_loads(G)
        assert N.shape == (Na, Na - M)
        assert np.abs(G.T @ N).max() < 1e-12 and np.allclose(N.T @ N, np.eye(Na - M))
        # the same null space through other column bases of G: the same answer
        for other in (-G, G[:, ::-1], G @ rng.normal(size=(M, M))):
            assert np.allclose(kic.internal_loads(other), N, atol=1e-12)
        # the first column is the null vector whose first nonzero component is positive
        first = int(np.argmax(np.abs(N[:, 0]) > 1e-9))
        assert N[first, 0] > 0
