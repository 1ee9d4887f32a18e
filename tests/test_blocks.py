"""Large batches of a closed model are evaluated in blocks (issue 18, item 12): the
temporary memory is bounded whatever the batch size
(:data:`kic.settings.BATCH_WORK_BYTES`; ``benchmarks/memory.py`` measures 1e6
Stewart poses), and the answers are those of one call, bit for bit."""
from __future__ import annotations

import numpy as np
import pytest

import kic
import kic.closed_eval as closed_eval
import mechanisms
from kic.closed_eval import NumpyEvaluation, in_caller_batch


@pytest.fixture(params=["numba", "numpy"])
def backend(request):
    kic.set_backend(request.param)
    yield request.param
    kic.set_backend("auto")


def _blocks_of(monkeypatch, model, size):
    """Force blocks of ``size`` configurations on the model's numpy path."""
    monkeypatch.setattr(closed_eval, "BATCH_WORK_BYTES", size * model.evaluation.bytes_per_pose())
    assert model.evaluation.block_size() == size


def _answers(model, q, qd, qdd):
    d = model.dynamics(q)
    return {"actuator_loads": model.actuator_loads(q, qd, qdd, model.actuators,
                                                   on_failure="nan"),
            "inverse_dynamics": model.inverse_dynamics(q, qd, qdd, on_failure="nan"),
            "forward_dynamics": model.forward_dynamics(q, qd, qdd, on_failure="nan"),
            "assemble": model.assemble(q, on_failure="nan"),
            "I_star": d.I_star, "P_star": d.P_star, "gravity_load": d.gravity_load}


def _stewart(rng, n):
    sp = mechanisms.stewart_platform()
    q = sp.reference + rng.uniform(-1, 1, (n, 6)) * [0.02, 0.02, 0.02, 0.05, 0.05, 0.05]
    return sp, q


def _five_bar(rng, n):
    fb = mechanisms.five_bar()
    return fb, np.array([2.0, 1.1]) + rng.uniform(-0.3, 0.3, (n, 2))


@pytest.mark.parametrize("build", [_stewart, _five_bar])
@pytest.mark.parametrize("size", [2, 3, 7])
def test_blocks_give_the_numbers_of_one_call_bit_for_bit(backend, monkeypatch, build, size):
    rng = np.random.default_rng(size)
    model, q = build(rng, 23)
    if build is _stewart:
        q = q.reshape(23, 1, 6)                 # and a batch of two axes
    qd = rng.standard_normal(q.shape) * 0.1
    qdd = rng.standard_normal(q.shape) * 0.1
    whole = _answers(model, q, qd, qdd)
    _blocks_of(monkeypatch, model, size)
    blocked = _answers(model, q, qd, qdd)
    for name, a in whole.items():
        for x, y in zip(a if isinstance(a, tuple) else (a,),
                        blocked[name] if isinstance(a, tuple) else (blocked[name],)):
            assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True), name


def test_every_numpy_evaluation_sees_at_most_a_block(monkeypatch):
    """The memory bound: no assembly (the largest temporaries) over more than a
    block of configurations, for the three calls of the issue."""
    kic.set_backend("numpy")
    try:
        sp, q = _stewart(np.random.default_rng(1), 40)
        seen, jacobians = [], []
        assembled = NumpyEvaluation.assembled
        regular = NumpyEvaluation.actuation_regular

        def spy(self, qf, *args, **kw):
            seen.append(qf.shape[0])
            return assembled(self, qf, *args, **kw)

        def spy_jacobians(self, Gt, *args):
            jacobians.append(Gt.shape[0])
            return regular(self, Gt, *args)
        monkeypatch.setattr(NumpyEvaluation, "assembled", spy)
        monkeypatch.setattr(NumpyEvaluation, "actuation_regular", spy_jacobians)
        _blocks_of(monkeypatch, sp, 6)
        z = np.zeros(6)
        for call in (lambda: sp.actuator_loads(q, z, z, sp.actuators),
                     lambda: sp.inverse_dynamics(q, z, z),
                     lambda: sp.dynamics(q).I_star):
            seen.clear()
            call()
            assert seen and max(seen) <= 7 and sum(seen) == 40
        assert max(jacobians) <= 7 and sum(jacobians) == 40      # actuator_loads' solves
    finally:
        kic.set_backend("auto")


def test_block_size_from_the_setting_and_the_model_size():
    sp = mechanisms.stewart_platform()
    fb = mechanisms.five_bar()
    for m in (sp, fb):
        ev = m.evaluation
        assert ev.block_size() * ev.bytes_per_pose() <= kic.settings.BATCH_WORK_BYTES
        assert ev.block_size() >= 10_000            # blocks large enough to be fast
    assert sp.evaluation.bytes_per_pose() > 10 * fb.evaluation.bytes_per_pose()


def test_a_failure_in_a_block_names_its_index_in_the_callers_batch(monkeypatch):
    kic.set_backend("numpy")
    try:
        short = mechanisms.five_bar(coupler1=0.3, coupler2=0.3)
        q = np.tile([2.0, 1.1], (3, 4, 1))
        q[1, 2] = q[2, 1] = [np.pi, 0.0]        # flat 6 and 9: blocks [6, 9) and [9, 12)
        with pytest.raises(kic.ClosureError) as whole:
            short.inverse_dynamics(q, [0.0, 0.0], [0.0, 0.0])
        assert whole.value.indices == [(1, 2), (2, 1)]
        _blocks_of(monkeypatch, short, 3)
        for call in (lambda: short.inverse_dynamics(q, [0.0, 0.0], [0.0, 0.0]),
                     lambda: short.dynamics(q), lambda: short.assemble(q)):
            with pytest.raises(kic.ClosureError, match=r"at batch index \(1, 2\)") as err:
                call()
            assert err.value.indices == [(1, 2)] and err.value.index == (1, 2)
    finally:
        kic.set_backend("auto")


def test_errors_moved_to_the_callers_batch():
    sing = kic.SingularityError("I* is singular at batch index (1,): ...", index=(1,))
    moved = in_caller_batch(sing, 6, 3, (3, 4))
    assert moved.index == (1, 3) and "at batch index (1, 3)" in str(moved)
    over = kic.ModelError("the result overflows float64 at batch index (np.int64(2),): ...")
    assert "at batch index (2, 0)" in str(in_caller_batch(over, 6, 3, (3, 4)))
    plain = kic.ModelError("q must be numeric")
    assert in_caller_batch(plain, 6, 3, (3, 4)) is plain
