"""The fast kernels against Freeman's formulas written out literally.

I* and P* are assembled link by link from the influence coefficients exactly as
seed eq. 2-196/2-197 (docs/theory.md, section 3) write them, with the generalized
scalar and cross products; the library's composite-sum kernels must return the
same tensors element by element (not only the same symmetric part), for
random chains of revolute and prismatic joints, single and batched.
"""
import numpy as np
import pytest

import kic
from helpers import random_chain

pytestmark = pytest.mark.usefixtures("each_backend")   # numpy and compiled kernels


def literal_model(chain, q):
    kin = chain.kinematics(q, order=2)
    M = chain.dof
    I = np.zeros((M, M))
    P = np.zeros((M, M, M))
    frames = kin.frames
    for j, link in enumerate(chain.links):
        c = kin.point(j, link.com)
        r = kin.rotation(j)
        R = frames[j, :3, :3]
        Iw = R @ link.inertia @ R.T
        I += link.mass * c.G.T @ c.G + r.G.T @ Iw @ r.G                      # eq. 2-196
        # eq. 2-197: m G_c^T o H_c + (G_rot^T I) o H_rot + G_rot^T I ([G_rot]^T x [G_rot])
        P += link.mass * kic.scalar_product(c.G.T, c.H)
        P += kic.scalar_product(r.G.T @ Iw, r.H)
        for n in range(M):
            cross = kic.cross_product(r.G, r.G[:, n])          # [g_1 x g_n, ..., g_M x g_n]
            # P*[n, k, m] += (I g_k) . (g_n x g_m) = -(I g_k) . (g_m x g_n)
            P[n] += -(Iw @ r.G).T @ cross
    return I, P


@pytest.mark.parametrize("seed, M", [(0, 1), (1, 2), (2, 3), (3, 5), (4, 7)])
def test_I_and_P_equal_the_literal_formulas(seed, M):
    rng = np.random.default_rng(seed)
    chain = random_chain(rng, M)
    qs = rng.normal(size=(4, M))
    dyn = chain.dynamics(qs)                                  # batched kernel
    for k, q in enumerate(qs):
        I, P = literal_model(chain, q)
        scale_I, scale_P = np.abs(I).max(), max(np.abs(P).max(), 1e-12)
        assert np.abs(dyn.I_star[k] - I).max() < 1e-12 * scale_I
        assert np.abs(dyn.P_star[k] - P).max() < 1e-12 * max(scale_P, scale_I)
        one = chain.dynamics(q)                               # single-configuration path
        assert np.abs(one.I_star - I).max() < 1e-12 * scale_I
        assert np.abs(one.P_star - P).max() < 1e-12 * max(scale_P, scale_I)


def test_rotational_P_is_not_symmetric_but_its_quadratic_form_is_the_gyroscopic_load():
    """The last term of P* is Freeman's particular (non-symmetric) choice; its
    quadratic form is g_n . (w x I w)."""
    rng = np.random.default_rng(7)
    chain = random_chain(rng, 4, kinds="RRRR")
    q, qd = rng.normal(size=(2, 4))
    P = chain.dynamics(q).P_star
    assert np.abs(P - np.swapaxes(P, -1, -2)).max() > 1e-6
    _, Plit = literal_model(chain, q)
    assert np.allclose(np.einsum("nml,m,l->n", P, qd, qd), np.einsum("nml,m,l->n", Plit, qd, qd))
