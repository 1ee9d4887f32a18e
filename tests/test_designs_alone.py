"""A design batch without a guess function evaluates each pose as it would be alone
(from its design's reference, never from the pose before it): a shuffled set of
poses gives the same numbers, bit for bit, on both backends."""
import numpy as np
import pytest

import kic
from kic.designs import DesignBatch
from helpers import hand_four_bar

pytestmark = pytest.mark.usefixtures("each_backend")


def test_shuffled_poses_give_the_same_numbers_bit_for_bit():
    batch = DesignBatch.from_builder(hand_four_bar, {"crank": [0.1, 0.08, 0.12],
                                                     "coupler": [0.35, 0.3, 0.4]})
    assert batch.guess is None and batch.model(0).guess is None
    q = np.linspace(-np.pi, np.pi, 48)[:, None]          # a full turn of the crank
    qd, qdd = np.ones_like(q), np.full_like(q, 0.5)
    perm = np.random.default_rng(1).permutation(len(q))
    ordered = batch.loads(q, qd, qdd)
    shuffled = batch.loads(q[perm], qd, qdd)
    for name in ("loads", "actuator_loads", "inertia", "bias", "phi", "status",
                 "actuation_condition"):
        a, b = getattr(ordered, name), getattr(shuffled, name)
        if a is None:
            assert b is None
            continue
        assert np.array_equal(a[:, perm], b, equal_nan=True), name
    assert np.all(ordered.status == kic.Status.OK)        # every pose found, in its mode
    for d in range(len(batch)):                            # and each as its model says
        m = batch.model(d)
        np.testing.assert_allclose(ordered.loads[d], m.inverse_dynamics(q, qd, qdd),
                                   rtol=1e-9, atol=1e-12)
