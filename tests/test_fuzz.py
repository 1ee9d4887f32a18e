"""Hostile and random inputs over the public API (issue 18): every call returns
numbers, NaN with a status, or raises a kic error that names the part at fault;
never another exception, never a silent non-finite or a silently accepted
input that means nothing (complex, NaN, a wrong length...).

The cases and their classification are in ``fuzzing.py`` (``python
tests/fuzzing.py`` prints the counts for both backends)."""
from __future__ import annotations

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import kic  # noqa: E402
import mechanisms  # noqa: E402
import fuzzing  # noqa: E402

SETTINGS = settings(derandomize=True, max_examples=40, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow])


def _counts(cases):
    found = {"silent": [], "foreign": []}
    tried = 0
    for label, bad_name, call in cases:
        out = fuzzing.classify(call, refuse=bad_name in fuzzing.MUST_REFUSE,
                               empty=bad_name == "empty batch")
        tried += 1
        if out.kind in found:
            found[out.kind].append(f"{label}: {out.detail}")
    return tried, found


@pytest.mark.parametrize("backend", ["numba", "numpy"])
def test_every_bad_input_is_a_kic_error_or_a_status(backend):
    kic.set_backend(backend)
    try:
        tried, found = _counts(fuzzing.all_cases())
    finally:
        kic.set_backend("auto")
    assert tried > 600
    assert found == {"silent": [], "foreign": []}


def _five_bar(data):
    base = data.draw(st.floats(0.05, 0.5))
    c1, c2 = data.draw(st.floats(0.1, 0.4)), data.draw(st.floats(0.1, 0.4))
    k1, k2 = data.draw(st.floats(0.2, 0.6)), data.draw(st.floats(0.2, 0.6))
    # masses: the defaults, none at all (I* = 0), or implausibly large
    scale = data.draw(st.sampled_from([1.0, 0.0, 1e300]))
    masses = {k: scale * m for k, m in (("m_crank1", 1.0), ("m_crank2", 1.0),
                                         ("m_coupler1", 0.8), ("m_coupler2", 0.8),
                                         ("m_tip", 0.5))}
    try:
        return mechanisms.five_bar(base=base, crank1=c1, crank2=c2, coupler1=k1, coupler2=k2,
                                   **masses)
    except kic.KicError:                       # an impossible design is refused clearly
        return None


def _serial(data):
    n = data.draw(st.integers(1, 6))
    joints, links = [], []
    for k in range(n):
        T = np.eye(4)
        T[:3, 3] = [data.draw(st.floats(-0.5, 0.5)) for _ in range(3)]
        axis = [data.draw(st.floats(-1, 1)) for _ in range(3)]
        if np.linalg.norm(axis) < 0.1:
            axis = [0.0, 0.0, 1.0]
        m = data.draw(st.sampled_from([0.0, 0.5, 2.0]))
        J = data.draw(st.sampled_from([0.0, 0.01]))
        joints.append(kic.Joint(data.draw(st.sampled_from("RP")), axis, T))
        links.append(kic.Link(m, com=(0.1, 0, 0), inertia=np.eye(3) * J))
    return kic.SerialChain(joints, links)


BAD = sorted(fuzzing.bad_values(2))


@SETTINGS
@given(st.data())
def test_random_mechanisms_with_random_bad_inputs(data):
    closed = data.draw(st.booleans())
    model = _five_bar(data) if closed else _serial(data)
    if model is None:
        return
    bad_name = data.draw(st.sampled_from(BAD))
    calls = (fuzzing.closed_cases(model, "five_bar", model.reference) if closed
             else fuzzing.serial_cases(model, "chain"))
    calls = [c for c in calls if c[1] == bad_name]
    label, _, call = data.draw(st.sampled_from(calls))
    out = fuzzing.classify(call, refuse=bad_name in fuzzing.MUST_REFUSE,
                           empty=bad_name == "empty batch")
    assert out.kind not in ("silent", "foreign"), (label, out.detail)


def test_the_classifier_can_fail():
    """The harness finds what it must (a check that cannot fail is a defect)."""
    assert fuzzing.classify(lambda: np.array([np.nan])).kind == "silent"
    assert fuzzing.classify(lambda: int("x")).kind == "foreign"
    assert fuzzing.classify(lambda: np.ones(2), refuse=True).kind == "silent"
    assert fuzzing.classify(lambda: (np.array([np.nan]), np.array(2))).kind == "status"
    assert fuzzing.classify(lambda: np.ones((1, 2)), empty=True).kind == "silent"
