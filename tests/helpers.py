"""Shared test helpers: random-model factories, comparisons, finite differences
and reference models.

Importable from every test module (``tests/`` is on ``sys.path`` via
``conftest.py``).  Uses only ``kic.chain`` (the description classes), and
``mechanisms`` in :func:`mechanism_builder`.  The one home of the tests' relative
errors (:func:`rel_err`, :func:`max_rel_err`) and central differences
(:func:`derivative`, :func:`directional_derivative`): a test module calls these
instead of writing its own.
"""
from __future__ import annotations

import numpy as np

from kic.chain import Joint, Link, SerialChain

__all__ = ["random_rotation", "random_rigid", "random_inertia", "random_link",
           "random_chain", "random_loads", "rel_err", "max_rel_err", "assert_close",
           "assert_rel_recorded", "derivative", "directional_derivative", "FD_STEP",
           "mechanism_builder", "two_link_rods", "G_FU", "dh_standard", "dh_modified",
           "combine_bodies", "within_ranges", "planar_offset", "hand_four_bar",
           "five_bar_stretched", "five_bar_gap"]


# ------------------------------------------------------------ random pieces
def random_rotation(rng):
    """Uniformly random rotation matrix (unit quaternion)."""
    x = rng.normal(size=4)
    w, a, b, c = x / np.linalg.norm(x)
    return np.array([
        [1 - 2 * (b * b + c * c), 2 * (a * b - c * w), 2 * (a * c + b * w)],
        [2 * (a * b + c * w), 1 - 2 * (a * a + c * c), 2 * (b * c - a * w)],
        [2 * (a * c - b * w), 2 * (b * c + a * w), 1 - 2 * (a * a + b * b)]])


def random_rigid(rng, scale=0.5):
    T = np.eye(4)
    T[:3, :3] = random_rotation(rng)
    T[:3, 3] = rng.uniform(-scale, scale, 3)
    return T


def random_unit(rng):
    v = rng.normal(size=3)
    return v / np.linalg.norm(v)


def random_inertia(rng, mass):
    """SPD centroidal inertia of a random solid box (triangle inequality holds)."""
    a, b, c = rng.uniform(0.05, 0.6, 3)
    principal = mass / 12.0 * np.array([b * b + c * c, a * a + c * c, a * a + b * b])
    R = random_rotation(rng)
    I = R @ np.diag(principal) @ R.T
    return 0.5 * (I + I.T)


def random_link(rng, name=None):
    m = rng.uniform(0.5, 3.0)
    return Link(m, com=rng.uniform(-0.4, 0.4, 3), inertia=random_inertia(rng, m), name=name)


def random_chain(rng, M, kinds=None, offsets=None, tool=True, gravity=None, base=True):
    """A random serial chain of M joints.

    kinds : str or sequence of "R"/"P" (default: random, about 2/3 revolute).
    offsets : True/False to force random ``frame_offsets`` (default: random choice).
    """
    if kinds is None:
        kinds = ["R" if rng.uniform() < 0.65 else "P" for _ in range(M)]
    kinds = list(kinds)
    assert len(kinds) == M
    joints = [Joint(k, axis=rng.normal(size=3), origin=random_rigid(rng)) for k in kinds]
    links = [random_link(rng) for _ in range(M)]
    if offsets is None:
        offsets = bool(rng.uniform() < 0.5)
    frame_offsets = np.stack([random_rigid(rng, 0.3) for _ in range(M)]) if offsets else None
    if gravity is None:
        gravity = 9.81 * random_unit(rng)
    return SerialChain(joints, links, gravity=gravity,
                       base=random_rigid(rng) if base else None,
                       tool=random_rigid(rng, 0.2) if tool else None,
                       frame_offsets=frame_offsets)


def random_loads(rng, chain, oracle_loads_cls, springs=True, dampers=True):
    """A random set of applied loads in the oracle's representation."""
    M = chain.dof
    L = oracle_loads_cls()
    for _ in range(2):
        L.force(int(rng.integers(M)), rng.normal(scale=5.0, size=3),
                point=rng.uniform(-0.5, 0.5, 3))
    L.moment(int(rng.integers(M)), rng.normal(scale=2.0, size=3))
    if springs:
        L.spring(int(rng.integers(M)), rng.uniform(1, 20), rest=rng.uniform(-0.5, 0.5))
    if dampers:
        L.damper(int(rng.integers(M)), rng.uniform(0.1, 3))
    return L


# ----------------------------------------------------------- comparisons
def rel_err(actual, expected, floor=1.0, ord=None):
    """Norm-wise relative error ``|a - e| / max(|e|, floor)``.

    ``ord=None``: the Frobenius (2-) norm of the flattened arrays; ``ord=np.inf``:
    the largest entry, ``max|a - e| / max(max|e|, floor)``.
    """
    a = np.asarray(actual, float)
    e = np.asarray(expected, float)
    if e.size == 0:
        return 0.0
    return float(np.linalg.norm((a - e).ravel(), ord)
                 / max(float(np.linalg.norm(e.ravel(), ord)), floor))


def max_rel_err(actual, expected, floor=1.0):
    """Entry-wise relative error, the largest: ``max |a - e| / max(|e|, floor)``
    (each entry against its own size: stricter than :func:`rel_err` for small
    entries of a large array)."""
    a = np.asarray(actual, float)
    e = np.asarray(expected, float)
    return float(np.max(np.abs(a - e) / np.maximum(floor, np.abs(e)), initial=0.0))


def assert_rel_recorded(measured, actual, expected, what, rtol, floor, key_until=","):
    """Assert a norm-wise relative error and record the largest per kind of check
    in ``measured`` (the kind: ``what`` up to ``key_until``, digits folded)."""
    import re
    actual = np.asarray(actual, float)
    expected = np.asarray(expected, float)
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    err = rel_err(actual, expected, floor)
    key = re.sub(r"\d+", "#", what.split(key_until)[0])
    measured[key] = max(measured.get(key, 0.0), err)
    assert err <= rtol, (f"{what}: relative error {err:.3e} > {rtol:.0e}\n"
                         f"kic    = {actual!r}\noracle = {expected!r}")
    return err


def assert_close(actual, expected, rtol, floor=1.0, what=""):
    a = np.asarray(actual, float)
    e = np.asarray(expected, float)
    assert a.shape == e.shape, f"{what}: shape {a.shape} != expected {e.shape}"
    err = rel_err(a, e, floor)
    assert err <= rtol, (f"{what}: relative error {err:.3e} > {rtol:.1e}\n"
                         f"actual={a!r}\nexpected={e!r}")


# ------------------------------------------------------ finite differences
FD_STEP = 1e-6     # central differences: truncation ~h^2, round-off ~eps/h, both ~1e-10 here


def derivative(f, x, h=FD_STEP, axis=-1, richardson=False):
    """Central differences of ``f`` at ``x`` along every coordinate of ``x``.

    ``result`` stacks ``(f(x + h_k e_k) - f(x - h_k e_k)) / 2h_k`` for k = 0..x.size-1
    on ``axis`` of the result (``axis=-1``: a Jacobian ``[..., k]``; ``axis=1``: the
    influence-coefficient order ``H[p, m, n] = dG[p, n]/dq_m``).  ``h``: one step or
    one per coordinate (states of different units).  ``richardson``: one
    Richardson step over the steps 2h and h (truncation O(h^4) instead of O(h^2),
    so a larger h keeps round-off small).
    """
    x = np.asarray(x, float)
    steps = np.broadcast_to(np.asarray(h, float), (x.size,))

    def central(scale):
        cols = [directional_derivative(f, x, e.reshape(x.shape), scale * hk)
                for e, hk in zip(np.eye(x.size), steps)]
        return np.stack(cols, axis=axis)
    if not richardson:
        return central(1.0)
    return (4 * central(1.0) - central(2.0)) / 3


def directional_derivative(f, x, dx, h=FD_STEP):
    """``(f(x + h dx) - f(x - h dx)) / 2h``: the derivative of ``f`` along ``dx``
    (``x`` may be a time, ``dx = 1``: ``directional_derivative(E, 0.0, 1.0)``)."""
    return (np.asarray(f(x + h * dx), float) - np.asarray(f(x - h * dx), float)) / (2 * h)


# -------------------------------------------------------------- builders
def mechanism_builder(name):
    """``mechanisms.<name>``; a missing builder FAILS the test (never a skip: a
    rename must not silently switch off the tests that use it)."""
    import mechanisms
    fn = getattr(mechanisms, name, None)
    assert fn is not None, f"mechanisms.{name} does not exist (renamed or removed?)"
    return fn


def planar_offset(x=0.0, y=0.0):
    """A homogeneous transform that only translates by (x, y, 0) (m)."""
    M = np.eye(4)
    M[:2, 3] = x, y
    return M


FOUR_BAR_REFERENCE = {"crank": 1.0, "A": -0.5, "rocker": 1.3}


def hand_four_bar(crank=0.1, coupler=0.35, reference=None):
    """The four-bar of docs/closed.md section 1 built as a user would (crank and
    coupler lengths in m; rods of masses 0.5, 1.0, 0.8 kg, ground link 0.3 m,
    rocker 0.25 m), no guess function.  ``reference``: the joint values the
    model starts from (default: the docs' assembled pose)."""
    import kic
    mech = kic.Mechanism(gravity=(0, -9.81, 0), name="four-bar")
    for name, m, L in (("crank", 0.5, crank), ("coupler", 1.0, coupler), ("rocker", 0.8, 0.25)):
        mech.add_body(name, mass=m, com=(L / 2, 0, 0),
                      inertia=np.diag([0.0, m * L ** 2 / 12, m * L ** 2 / 12]))
    mech.add_joint("crank", "R", "ground", "crank")
    mech.add_joint("A", "R", "crank", "coupler", origin=planar_offset(crank))
    mech.add_joint("rocker", "R", "ground", "rocker", origin=planar_offset(0.3))
    mech.add_joint("B", "R", "coupler", "rocker", origin=planar_offset(coupler),
                   child_origin=planar_offset(0.25))
    return mech.model(["crank"], reference=FOUR_BAR_REFERENCE if reference is None else reference)


def five_bar_gap(q, base=0.4, crank=0.25, couplers=0.7):
    """|A1 A2| - (coupler1 + coupler2) (m) of the five-bar of
    ``mechanisms.five_bar(base=base)`` at crank angles ``q`` (..., 2) rad: the
    crank tips' distance beyond what the couplers reach (> 0: cannot assemble)."""
    q = np.asarray(q, float)
    dx = base + crank * (np.cos(q[..., 1]) - np.cos(q[..., 0]))
    dy = crank * (np.sin(q[..., 1]) - np.sin(q[..., 0]))
    return np.hypot(dx, dy) - couplers


def five_bar_stretched(base=0.4, crank1=np.pi / 2 + 0.4, crank=0.25, couplers=0.7):
    """Crank angles (rad) at which the five-bar of ``mechanisms.five_bar(base=base)``
    has its couplers collinear and stretched (:func:`five_bar_gap` = 0): its type
    II (direct-kinematic) singularity.  Found by root-finding on the crank tips'
    distance, independently of kic; crank 1 at ``crank1``."""
    from scipy.optimize import brentq
    crank2 = brentq(lambda t: five_bar_gap([crank1, t], base, crank, couplers), -1.0, 1.0,
                    xtol=1e-15)
    return np.array([crank1, crank2])


# ---------------------------------------------------------- DH (independent)
def dh_standard(theta, d, a, alpha):
    """Rz(theta) Tz(d) Tx(a) Rx(alpha), written out (Fu-Gonzalez-Lee eq. 3.2-5)."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha), np.sin(alpha)
    return np.array([[ct, -ca * st, sa * st, a * ct],
                     [st, ca * ct, -sa * ct, a * st],
                     [0.0, sa, ca, d],
                     [0.0, 0.0, 0.0, 1.0]])


def dh_modified(alpha_prev, a_prev, theta, d):
    """Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta) Tz(d), written out (Craig eq. 3.6)."""
    ct, st, ca, sa = np.cos(theta), np.sin(theta), np.cos(alpha_prev), np.sin(alpha_prev)
    return np.array([[ct, -st, 0.0, a_prev],
                     [st * ca, ct * ca, -sa, -sa * d],
                     [st * sa, ct * sa, ca, ca * d],
                     [0.0, 0.0, 0.0, 1.0]])


# ------------------------------------------------------- reference models
G_FU = 9.8062


def two_link_rods(m1, m2, l, g=G_FU, gravity_dir=(0.0, -1.0, 0.0)):
    """Fu-Gonzalez-Lee two-link planar arm of uniform rods (seed 002, docs/theory.md §8).

    Built with plain joints (not DH) so that only ``kic.chain`` is involved:
    joint 1 at the base, joint 2 at distance l along link 1's x axis, centroids
    at l/2, inertia diag(0, m l^2/12, m l^2/12).
    """
    T = np.eye(4)
    T[0, 3] = l
    rod = lambda m: Link(m, com=(l / 2, 0, 0), inertia=np.diag([0, m * l * l / 12, m * l * l / 12]))
    return SerialChain([Joint("R"), Joint("R", origin=T)], [rod(m1), rod(m2)],
                       gravity=g * np.asarray(gravity_dir, float))


def combine_bodies(parts):
    """Composite (mass, com, centroidal inertia) of (m, c, I_c) parts in one frame."""
    m = sum(p[0] for p in parts)
    c = sum(p[0] * np.asarray(p[1], float) for p in parts) / m
    I = np.zeros((3, 3))
    for mi, ci, Ii in parts:
        d = np.asarray(ci, float) - c
        I += np.asarray(Ii, float) + mi * (d @ d * np.eye(3) - np.outer(d, d))
    return m, c, I


def within_ranges(limits, names, phi, span: float):
    """Joint values ``phi`` (..., len(names)) drawn in [-span, span) mapped affinely
    into the ranges of the joints ``limits`` (a mapping joint -> (lower, upper))
    gives them: a closed model refuses poses outside its joint limits
    (kic.Status.OUTSIDE_LIMITS), so tests that compare with a peer at random poses
    draw them inside."""
    phi = np.array(phi, dtype=float)
    for i, n in enumerate(names):
        if n in limits:
            lo, hi = limits[n]
            phi[..., i] = lo + (hi - lo) * (phi[..., i] + span) / (2 * span)
    return phi


# ------------------------------------------------------------ robot files
def robots_dir():
    """The folder of example-robot-data's robots (a pathlib.Path), or None where the
    package is not installed (the tests of the collection then skip)."""
    import importlib.metadata
    from pathlib import Path
    try:
        files = importlib.metadata.files("example-robot-data") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for f in files:
        parts = Path(str(f)).parts
        if parts[-1].endswith(".urdf") and "robots" in parts:
            return Path(str(f.locate())).parents[len(parts) - parts.index("robots") - 2]
    return None


def pin_configuration(model, names, phi):
    """Pinocchio configuration of ``model`` (continuous joints as cos, sin) from joint
    values ``phi`` of the joints ``names``."""
    q = np.zeros(model.nq)
    for n, v in zip(names, phi):
        j = model.joints[model.getJointId(n)]
        if j.nq == 2:
            q[j.idx_q:j.idx_q + 2] = np.cos(v), np.sin(v)
        else:
            q[j.idx_q] = v
    return q
