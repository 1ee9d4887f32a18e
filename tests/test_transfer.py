"""kic.Transfer and kic.solve_transfer on cases with closed forms."""
import numpy as np
import pytest

import kic
from helpers import derivative

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels


def circle(theta, r=2.0):
    """phi = (x, y) on a circle of radius r as functions of the angle q = theta."""
    c, s = np.cos(theta), np.sin(theta)
    G = r * np.array([[-s], [c]])
    H = r * np.array([[[-c]], [[-s]]])
    D = r * np.array([[[[s]]], [[[-c]]]])
    return G, H, D


def test_solve_transfer_with_a_closure_constraint():
    """psi(phi) = [atan2(y, x); x^2 + y^2 - r^2] = [q; 0] (case (c), docs/theory.md §4)."""
    r, th = 2.0, 0.7
    x, y = r * np.cos(th), r * np.sin(th)
    rho2 = x * x + y * y
    # first rows: q = atan2(y, x); second: c = x^2 + y^2 - r^2
    Gpsi = np.array([[-y / rho2, x / rho2], [2 * x, 2 * y]])
    Hq = np.array([[2 * x * y, y * y - x * x], [y * y - x * x, -2 * x * y]]) / rho2**2
    Hc = np.array([[2.0, 0.0], [0.0, 2.0]])
    Hpsi = np.stack([Hq, Hc])
    # third derivatives of atan2 by central differences of its Hessian
    def hq(u, v):
        return (np.array([[2 * u * v, v * v - u * u], [v * v - u * u, -2 * u * v]])
                / (u * u + v * v) ** 2)
    Dq = derivative(lambda p: hq(*p), [x, y], axis=0)          # Dq[l, m, n] = dHq[m, n]/dp_l
    Dpsi = np.stack([Dq, np.zeros((2, 2, 2))])
    tr = kic.solve_transfer(Gpsi, Hpsi, Dpsi, m=1)
    G, H, D = circle(th, r)
    assert np.allclose(tr.G, G, atol=1e-12)
    assert np.allclose(tr.H, H, atol=1e-12)
    assert np.allclose(tr.D, D, atol=1e-6)


def test_inverse_and_composition_are_identities():
    rng = np.random.default_rng(0)
    G = rng.normal(size=(3, 3)) + 3 * np.eye(3)
    H = rng.normal(size=(3, 3, 3))
    H = 0.5 * (H + np.swapaxes(H, -1, -2))
    D = rng.normal(size=(3, 3, 3, 3))
    D = sum(np.transpose(D, (0,) + p) for p in
            [(1, 2, 3), (1, 3, 2), (2, 1, 3), (2, 3, 1), (3, 1, 2), (3, 2, 1)]) / 6
    tr = kic.Transfer(G, H, D)
    back = tr.inverse()
    one = tr.then(back)
    assert np.allclose(one.G, np.eye(3))
    assert np.allclose(one.H, 0, atol=1e-12) and np.allclose(one.D, 0, atol=1e-10)
    two = back.then(tr)
    assert np.allclose(two.G, np.eye(3)) and np.allclose(two.H, 0, atol=1e-12)


def test_model_transfer_keeps_the_form():
    """T_q = G^T T_phi with I*_q, P*_q from Transfer equals the transferred motion."""
    rng = np.random.default_rng(1)
    N, M = 4, 2
    I = rng.normal(size=(N, N))
    I = I @ I.T + N * np.eye(N)
    P = rng.normal(size=(N, N, N))
    G = rng.normal(size=(N, M))
    H = rng.normal(size=(N, M, M))
    H = 0.5 * (H + np.swapaxes(H, -1, -2))
    tr = kic.Transfer(G, H)
    qd, qdd = rng.normal(size=(2, M))
    phid, phidd = tr.rates(qd, qdd)
    T_phi = I @ phidd + np.einsum("nml,m,l->n", P, phid, phid)
    T_q = tr.inertia(I) @ qdd + np.einsum("nml,m,l->n", tr.power(I, P), qd, qd)
    assert np.allclose(T_q, tr.load(T_phi))


def test_bad_shapes_and_singular():
    with pytest.raises(kic.ModelError, match="shape"):
        kic.Transfer(np.eye(2), np.zeros((2, 3, 3)))
    with pytest.raises(kic.SingularityError) as err:
        kic.Transfer(np.array([[1.0, 2.0], [2.0, 4.0]])).inverse()
    assert err.value.sigma_min < 1e-12
    with pytest.raises(kic.ModelError, match="square"):
        kic.solve_transfer(np.ones((2, 3)))
