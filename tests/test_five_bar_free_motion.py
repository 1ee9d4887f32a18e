"""The default five-bar's free fall (issue 10) against an independent formulation:
two arms plus a loop-closure constraint with Lagrange multipliers
(tests/oracles/five_bar_dae.py, no kic code)."""

import numpy as np
import pytest

import kic
import mechanisms
from oracles.five_bar_dae import FiveBarDAE, parallelogram_closure_rank


def test_free_fall_agrees_with_the_constrained_tree_formulation():
    fb = mechanisms.five_bar()
    t = np.array([0.0, 0.1, 0.2, 0.3, 0.32])
    ref = FiveBarDAE().simulate(t, fb.reference_phi)
    assert np.abs(ref.energy - ref.energy[0]).max() < 1e-10 * abs(ref.energy[0]) + 1e-12
    sim = kic.simulate(fb, (0.0, 0.32), fb.reference, [0.0, 0.0], rtol=1e-10, atol=1e-12,
                       t_eval=t)
    gap = np.abs(np.angle(np.exp(1j * (sim.phi - ref.phi)))).max()
    assert gap < 1e-6, gap
    assert sim.energy_drift < 1e-8


def test_the_symmetric_fall_ends_in_the_flat_configuration():
    """Symmetric dimensions and start: the motion stays symmetric and reaches, at
    0.325 s, the configuration with all five joints on the x axis.  There the
    closure Jacobian loses rank (3 -> 2) for every choice of coordinates: a
    bifurcation of the mechanism, which kic reports as such."""
    fb = mechanisms.five_bar()
    with pytest.raises(kic.SingularityError, match="bifurcation|no other set") as err:
        kic.simulate(fb, (0.0, 0.5), fb.reference, [0.0, 0.0], rtol=1e-10, atol=1e-12)
    flat = np.array([np.pi, 0.0, -np.pi, np.pi, np.pi])
    sv = np.linalg.svd(fb.closure_jacobian(flat), compute_uv=False)
    assert sv[-1] < 1e-12 * sv[0]                        # rank 2 there
    assert err.value is not None


def test_parallelogram_change_point_loses_rank():
    assert parallelogram_closure_rank(0.0) < parallelogram_closure_rank(0.7)
