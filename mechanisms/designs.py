"""Design batches of the closed mechanisms: vectorized writers and the
five-bar's tip task for D designs at once.

A writer makes D copies of a template model (:meth:`kic.DesignBatch.from_template`)
and writes each design's numbers by name (:attr:`kic.DesignBatch.fields`) from
the one derivation the builders use (:func:`mechanisms.closed.five_bar_numbers`,
:func:`mechanisms.closed.stewart_numbers`), and each design's reference
configuration (:meth:`kic.DesignBatch.set_reference`) from the closed forms of
:mod:`mechanisms.geometry`: no model is built per design.
"""
from __future__ import annotations

import inspect
from functools import partial

import numpy as np

import kic
from kic.designs import DesignBatch
from kic.errors import Status
from kic.settings import DEFAULT_GRAVITY, MAX_CONDITION, WRITER_RTOL

from ._common import design_arrays
from .closed import (FIVE_BAR_PARAMETERS, STEWART_PARAMETERS, check_half_angles, five_bar,
                     five_bar_numbers, stewart_inertias, stewart_numbers, stewart_platform)
from .geometry import (FIVE_BAR_LENGTHS, five_bar_closes, five_bar_inverse,
                       five_bar_joint_values, five_bar_rate_condition, five_bar_rates,
                       five_bar_reference, mode_tuple, points, stewart_anchors,
                       stewart_joint_values)

__all__ = ["five_bar_designs", "five_bar_task", "FiveBarTask", "stewart_designs"]


def _defaults(builder, names) -> dict:
    """The builder's default values of ``names`` (one source of the defaults)."""
    sig = inspect.signature(builder).parameters
    return {k: sig[k].default for k in names}


def _write(batch: DesignBatch, numbers: dict) -> None:
    """Write a builder's numbers (arrays (D, ...), :func:`mechanisms.closed.five_bar_numbers`)
    into the batch's designs by name: a body's mass properties into the joint
    that carries it, a joint's origin, a closure's frame on its B side (the loop
    named by the joint that carries its A side), gravity."""
    f, plan = batch.fields, batch.plan
    joint = {n: i for i, n in enumerate(plan.phi_names)}
    body = {n: i for i, n in enumerate(plan.body_names)}
    for name, (m, c, I) in numbers["bodies"].items():
        k = body[name]
        f["mass"][:, k], f["com"][:, k], f["inertia"][:, k] = m, c, I
    for name, xyz in numbers["origins"].items():
        f["origin"][:, joint[name], :3, 3] = xyz
    for loop, a in enumerate(plan.body_a):
        f["T_b"][:, loop, :3, 3] = numbers["closures"][plan.phi_names[a]]
    f["gravity"][:] = numbers["gravity"]


def _check_writer(builder: str, template: DesignBatch, numbers: dict, reference) -> None:
    """The writer must reproduce the template model's own numbers from the
    template's parameters (it relies on the builder's names of joints, bodies
    and loops)."""
    written = DesignBatch.from_template(template, 1)
    _write(written, numbers)
    written.set_reference(reference)
    want = template.fields
    for name, got in written.fields.items():
        got, ref = got[0], want[name][0]
        if not np.allclose(got, ref, rtol=WRITER_RTOL, atol=WRITER_RTOL * np.abs(ref).max()):
            k = np.unravel_index(np.argmax(np.abs(got - ref)), got.shape)
            raise RuntimeError(f"{builder}: the vectorized writer no longer matches the "
                               f"builder (field {name!r}{list(k)}: {got[k]!r} != "
                               f"{ref[k]!r})")


def _lengths(params: dict) -> dict:
    """The five-bar's lengths (D, 1), broadcasting with configurations (D, n)."""
    return {k: params[k][:, None] for k in FIVE_BAR_LENGTHS}


# ------------------------------------------------------------------ five-bar
def five_bar_designs(base=0.2, crank1=0.25, crank2=0.25, coupler1=0.35, coupler2=0.35,
                     m_crank1=1.0, m_crank2=1.0, m_coupler1=0.8, m_coupler2=0.8, m_tip=0.5,
                     g=DEFAULT_GRAVITY, *, mode=(-1, 1, 1)):
    """D five-bar designs as one :class:`kic.designs.DesignBatch`, without a model per design.

    Every parameter is that of :func:`five_bar` (same units and meaning), given
    as a scalar or an array (D,) (broadcast together).  The structure is built
    once (a template model); each design's numbers (joint origins, masses,
    centroids, inertias, the closure frame, gravity, the characteristic length
    at its reference configuration) are written into its float buffer by numpy
    array operations.  A design with no configuration in ``mode`` (or whose
    loop never closes) is kept as infeasible (``batch.feasible``): its poses
    fail with ``kic.Status.UNASSEMBLABLE``, no exception.

    Parameters
    ----------
    base, crank1, crank2, coupler1, coupler2 : float or array_like (D,)
        Lengths (m), > 0.
    m_crank1, m_crank2, m_coupler1, m_coupler2, m_tip : float or array_like (D,)
        Masses (kg), >= 0.
    g : float or array_like (D,)
        Gravity (m/s^2) along -y.
    mode : (int, int, int)
        (elbow1, elbow2, tip_side), shared by the designs: the reference
        configuration of each design is in it, as in :func:`five_bar`.

    Returns
    -------
    kic.designs.DesignBatch
        Coordinates the crank angles; ``parameters`` the arrays above plus
        ``elbow1``, ``elbow2``, ``tip_side``; ``guess`` the closed-form joint
        values at crank angles (so ``batch.loads`` starts every pose there);
        :func:`five_bar_task` evaluates a task of the tip.

    Raises
    ------
    kic.ModelError
        A parameter out of range (the message names it and the first design).

    Notes
    -----
    Each design's float buffer equals the one of ``five_bar(..., mode=mode)``
    for its parameters (tests/test_designs.py): the joint origins ``base``,
    ``crank_i``, ``coupler1``, the tip's frame on coupler 2, the rods' masses,
    centroids and inertias (``m L^2 / 12``, the tip mass on coupler 1 by the
    parallel-axis theorem), gravity, and the characteristic length at the
    reference configuration, found from the mode as :func:`five_bar` does (the
    home pose where it is in the mode and regular, else the most regular
    configuration of the same crank grid, searched for many designs at once).

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> batch = mechanisms.five_bar_designs(crank1=[0.25, 0.3], crank2=[0.25, 0.3])
    >>> task = mechanisms.five_bar_task(batch, [[0.1, 0.45]], [[0.0, 0.0]], [[0.0, 0.0]])
    >>> task.torques.shape, task.status.tolist()
    ((2, 1, 2), [[0], [0]])
    """
    b = "five_bar_designs"
    elbows_side = mode_tuple(mode)
    p, D = design_arrays(b, FIVE_BAR_PARAMETERS, dict(
        base=base, crank1=crank1, crank2=crank2, coupler1=coupler1, coupler2=coupler2,
        m_crank1=m_crank1, m_crank2=m_crank2, m_coupler1=m_coupler1, m_coupler2=m_coupler2,
        m_tip=m_tip, g=g))
    side = elbows_side[2]
    template = _five_bar_template(side)
    # a loop that closes nowhere is decided in closed form, the mode by the search
    ref, _ = five_bar_reference(p, elbows_side[:2], side)
    feasible = five_bar_closes(p) & np.all(np.isfinite(ref), -1)
    params = dict(p, elbow1=np.full(D, elbows_side[0]), elbow2=np.full(D, elbows_side[1]),
                  tip_side=np.full(D, side))
    batch = DesignBatch.from_template(
        template, D, parameters=params, build=partial(_five_bar_design_model, mode=elbows_side),
        guess=partial(_five_bar_design_guess, tip_side=side))
    _write(batch, five_bar_numbers(p))
    # an infeasible design keeps the template's reference for its (unused) scale
    batch.set_reference(np.where(feasible[:, None], ref, template.reference_phi[0]))
    batch.reference_phi[~feasible] = np.nan
    batch.feasible[:] = feasible
    return batch


#: five_bar_designs' templates by tip side: one-design batches (plans are immutable)
_FIVE_BAR_TEMPLATES: dict = {}


def _five_bar_template(side: int) -> DesignBatch:
    """The structure (the default design on a tip side), built and checked once."""
    if side not in _FIVE_BAR_TEMPLATES:
        template = DesignBatch.from_models([five_bar(tip_side=side)])
        p = {k: np.array([v], float) for k, v in
             _defaults(five_bar, FIVE_BAR_PARAMETERS).items()}
        _check_writer("five_bar_designs", template, five_bar_numbers(p),
                      template.reference_phi)
        _FIVE_BAR_TEMPLATES[side] = template
    return _FIVE_BAR_TEMPLATES[side]


def _five_bar_design_model(mode, elbow1=None, elbow2=None, tip_side=None, **kw):
    """The model of one design of :func:`five_bar_designs` (the numpy path)."""
    return five_bar(**kw, mode=mode)


def _five_bar_design_guess(params: dict, q, tip_side=1) -> np.ndarray:
    """Start values (D, n, 5) at crank angles q (D, n, 2): the closed form."""
    return five_bar_joint_values(_lengths(params), q, None, tip_side)


class FiveBarTask:
    """A tip task evaluated for D five-bar designs (per-configuration results).

    Attributes
    ----------
    mode : (int, int, int)
        (elbow1, elbow2, tip_side) every answer is in.
    cranks, crank_rates, crank_accelerations : ndarray (D, n, 2)
        The closed-form inverse kinematics (rad, rad/s, rad/s^2); NaN where failed.
    phi : ndarray (D, n, 5)
        All joint values (rad) in the batch's joint order (``batch.plan.phi_names``).
    torques : ndarray (D, n, 2)
        Crank torques (N m), gravity included: ``I* q'' + q'^T P* q' + T_gravity``.
    inertia : ndarray (D, n, 2, 2)
        I* in the crank angles (kg m^2).
    status : ndarray (D, n) of int
        :class:`kic.Status`: UNASSEMBLABLE where a crank cannot reach the tip (or
        the design is infeasible), OTHER_MODE where the cranks reach it with the
        tip on the other side, SINGULAR_LOAD where the task Jacobian is singular
        by kic's one rule (``condition`` at or above
        :data:`kic.settings.MAX_CONDITION`): a type I singularity (an elbow
        straight, the tip at the edge of its reach: unbounded crank rates) or a
        type II (the couplers aligned), as :mod:`kic.indices` reports it;
        SINGULAR where the closure of the design's model (in the crank angles)
        is singular, the couplers aligned (type II); OUTSIDE_LIMITS where a
        joint is outside its limits.
    condition : ndarray (D, n)
        Dimensionless 2-norm condition number of the task Jacobian ``J = dC/dq``
        (m/rad), tip velocity per crank rate
        (:func:`mechanisms.geometry.five_bar_rate_condition`, kic's one scaled
        condition): 1 where a crank rate moves the tip equally fast in every
        direction, inf at a type I (an elbow straight: J loses rank) or type II
        singularity (the couplers aligned: J unbounded).  All entries of J are
        lengths per radian, so ``kappa(J)`` does not depend on the units or on
        the size of the linkage (it equals
        ``kic.indices.point_conditioning(...).condition``); from ``J^-1`` with
        rows ``e_i^T / (l_i e_i . n_i)`` (``e_i = C - A_i``, ``n_i`` the normal
        of crank i).  NaN where the inverse kinematics failed.
    """

    def __init__(self, **kw) -> None:
        self.__dict__.update(kw)

    @property
    def ok(self) -> np.ndarray:
        return self.status == Status.OK


def five_bar_task(batch, tip, tip_rate, tip_acceleration) -> FiveBarTask:
    """Evaluate a tip task for every design of a :func:`five_bar_designs` batch.

    Parameters
    ----------
    batch : kic.designs.DesignBatch
        From :func:`five_bar_designs` (its ``parameters`` name the lengths and
        the mode).
    tip, tip_rate, tip_acceleration : array_like (n, 2) or (D, n, 2)
        Tip positions (m), velocities (m/s) and accelerations (m/s^2).

    Returns
    -------
    FiveBarTask
        Inverse kinematics in the batch's mode, crank torques, I* and the
        conditioning per (design, point); failures as data (NaN + status).

    Notes
    -----
    The inverse kinematics and rates are those of
    :meth:`mechanisms.geometry.FiveBarGeometry.inverse` and ``inverse_rates`` (one
    function of arrays, :mod:`mechanisms.geometry`, with a design axis); every
    pose starts its assembly from the closed-form joint values, so the
    torques are those of the design's model at the same configuration.

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> batch = mechanisms.five_bar_designs(coupler1=[0.35, 0.1], coupler2=[0.35, 0.1])
    >>> task = mechanisms.five_bar_task(batch, [[0.1, 0.45]], [[0.0, 0.0]], [[0.0, 0.0]])
    >>> [kic.Status(s).name for s in task.status[:, 0]]
    ['OK', 'UNASSEMBLABLE']
    >>> bool(np.isnan(task.torques[1]).all())
    True
    """
    p = batch.parameters
    need = FIVE_BAR_LENGTHS + ("elbow1", "elbow2", "tip_side")
    if any(k not in p for k in need):
        raise kic.ModelError("five_bar_task needs a batch from mechanisms.five_bar_designs")
    D = len(batch)
    x, xd, xdd = (points(v, w) for v, w in (
        (tip, "tip"), (tip_rate, "tip_rate"), (tip_acceleration, "tip_acceleration")))
    x, xd, xdd = (v if v.ndim == 3 else v.reshape((1,) * (3 - v.ndim) + v.shape)
                  for v in (x, xd, xdd))
    n = max(v.shape[1] for v in (x, xd, xdd))
    x, xd, xdd = (np.broadcast_to(v, (D, n, 2)) for v in (x, xd, xdd))
    mode = (int(p["elbow1"][0]), int(p["elbow2"][0]), int(p["tip_side"][0]))
    lengths = _lengths(p)
    cranks, status = five_bar_inverse(lengths, x, mode[:2], mode[2])
    qd, qdd, rows = five_bar_rates(lengths, cranks, x, xd, xdd)
    condition = five_bar_rate_condition(rows)
    ok = status == Status.OK
    start = five_bar_joint_values(lengths, np.where(ok[..., None], cranks, 0.0), x)
    # type I and type II by one rule and threshold (inverse_rates, kic.indices):
    # rates near either are not to be trusted
    finite = np.all(np.isfinite(qd), -1) & np.all(np.isfinite(qdd), -1)
    singular = ~(condition < MAX_CONDITION) | ~finite
    status = np.where(ok & singular, int(Status.SINGULAR_LOAD), status)
    ok = status == Status.OK
    z = lambda a: np.where(ok[..., None], a, 0.0)                # noqa: E731
    res = batch.loads(z(cranks), z(qd), z(qdd), actuators=(),
                      start=np.where(ok[..., None], start, 0.0), skip=status)
    status = res.status
    good = status == Status.OK
    nan = lambda a: np.where(good.reshape(good.shape + (1,) * (a.ndim - 2)), a,  # noqa: E731
                             np.nan)
    return FiveBarTask(mode=mode, phi=res.phi, cranks=nan(cranks), crank_rates=nan(qd),
                       crank_accelerations=nan(qdd), torques=res.loads, inertia=res.inertia,
                       status=status,
                       condition=np.where(status == Status.UNASSEMBLABLE, np.nan,
                                          np.where(status == Status.OTHER_MODE, np.nan,
                                                   condition)))


# ------------------------------------------------------------ Stewart platform
_STEWART_FIXED = ("I_plat", "plat_com", "cyl_com", "I_cyl", "rod_com", "I_rod")


def stewart_designs(rb=0.5, rp=0.3, base_half_angle=np.radians(15.0),
                    plat_half_angle=np.radians(45.0), h0=0.6, m_plat=10.0, m_cyl=2.0,
                    m_rod=1.0, g=DEFAULT_GRAVITY, **fixed):
    """D Stewart platform designs as one :class:`kic.designs.DesignBatch`, without a
    model per design.

    The parameters are those of :func:`stewart_platform` (same units and
    meaning), as scalars or arrays (D,) broadcast together: the anchor radii,
    the half-angles of the anchor pairs (rad, in [0, pi/3)), the nominal
    height ``h0`` (the reference pose, m) and the masses (kg), gravity
    (m/s^2).  ``fixed`` keyword arguments of :func:`stewart_platform`
    (``I_plat``, ``plat_com``, ``cyl_com``, ``I_cyl``, ``rod_com``, ``I_rod``)
    are shared by all designs.  The structure is built once; each design's base
    anchors (the U joints' origins), platform anchors (the S closures'
    frames), masses, gravity and characteristic length at its reference pose
    are written into its float buffer.

    Parameters
    ----------
    rb, rp : float or array_like (D,)
        Radii of the base and platform anchor circles (m).
    base_half_angle, plat_half_angle : float or array_like (D,)
        Half the angular spacing of each anchor pair (rad, in [0, pi/3)).
    h0 : float or array_like (D,)
        Nominal platform height (m): the reference pose.
    m_plat, m_cyl, m_rod : float or array_like (D,)
        Masses of the platform, each cylinder and each rod (kg).
    g : float or array_like (D,)
        Gravity (m/s^2) along -z.
    **fixed
        Other keyword arguments of :func:`stewart_platform`, shared.

    Returns
    -------
    kic.designs.DesignBatch
        Coordinates the platform pose (x, y, z, yaw, pitch, roll); actuators
        the six legs; ``guess`` the legs' closed-form inverse kinematics (the
        start of every pose); ``parameters`` the arrays above.  The assembly
        mode is the template's (every leg's U-P block with the leg pointing
        up, ``det A > 0``), the same for every design with ``h0 > 0``.

    Raises
    ------
    kic.ModelError
        A parameter out of range (the message names it and the first design).

    Notes
    -----
    The reference configuration of each design is its nominal pose
    ``(0, 0, h0, 0, 0, 0)`` with the legs' closed-form joint values, as
    :func:`stewart_platform`'s model's; every number of the float buffer is the
    builder's (tests/test_designs.py).

    Examples
    --------
    >>> import numpy as np, mechanisms
    >>> batch = mechanisms.stewart_designs(rb=[0.5, 0.6])
    >>> pose = [0.0, 0.0, 0.6, 0.0, 0.0, 0.0]
    >>> res = batch.loads(pose, np.zeros(6), accelerations=np.zeros((1, 6)))
    >>> res.actuator_loads.shape                  # designs, poses, accelerations, legs
    (2, 1, 1, 6)
    """
    b = "stewart_designs"
    p, D = design_arrays(b, STEWART_PARAMETERS, dict(
        rb=rb, rp=rp, base_half_angle=base_half_angle, plat_half_angle=plat_half_angle, h0=h0,
        m_plat=m_plat, m_cyl=m_cyl, m_rod=m_rod, g=g))
    for name in ("base_half_angle", "plat_half_angle"):
        check_half_angles(b, name, p[name])
    template, shared = _stewart_template(fixed)
    guess = partial(_stewart_design_guess, names=tuple(template.plan.phi_names))
    batch = DesignBatch.from_template(template, D, parameters=p,
                                      build=partial(_stewart_design_model, fixed=fixed),
                                      guess=guess)
    _write(batch, stewart_numbers(p, **shared))
    batch.set_reference(_stewart_reference(p, guess))
    return batch


#: stewart_designs' template of the defaults (a one-design batch) and its shared numbers
_STEWART_TEMPLATE: dict = {}


def _stewart_template(fixed: dict):
    """The structure (stewart_platform(**fixed)) and its shared inertias and
    centroids, checked against the writer (the defaults' kept)."""
    if not fixed and "" in _STEWART_TEMPLATE:
        return _STEWART_TEMPLATE[""]
    template = DesignBatch.from_models([stewart_platform(**fixed)])
    shared = stewart_inertias("stewart_designs", **{
        **_defaults(stewart_platform, _STEWART_FIXED),
        **{k: v for k, v in fixed.items() if k in _STEWART_FIXED}})
    p = {k: np.array([v], float) for k, v in
         {**_defaults(stewart_platform, STEWART_PARAMETERS),
          **{k: v for k, v in fixed.items() if k in STEWART_PARAMETERS}}.items()}
    guess = partial(_stewart_design_guess, names=tuple(template.plan.phi_names))
    _check_writer("stewart_designs", template, stewart_numbers(p, **shared),
                  _stewart_reference(p, guess))
    if not fixed:
        _STEWART_TEMPLATE[""] = (template, shared)
    return template, shared


def _stewart_reference(p: dict, guess) -> np.ndarray:
    """Each design's reference joint values (D, N): its nominal pose (0, 0, h0, 0,
    0, 0) with the legs' closed-form joint values."""
    home = np.zeros((p["h0"].shape[0], 1, 6))
    home[:, 0, 2] = p["h0"]
    return guess(p, home)[:, 0]


def _stewart_design_guess(params: dict, q, names=()) -> np.ndarray:
    """Start values (D, n, N) in the joint order ``names`` at platform poses
    q (D or 1, n, 6): the legs' closed-form inverse kinematics."""
    B, P = stewart_anchors(params["rb"], params["rp"], params["base_half_angle"],
                           params["plat_half_angle"])
    return stewart_joint_values(B, P, q, names)


def _stewart_design_model(fixed, **kw):
    """The model of one design of :func:`stewart_designs` (the numpy path)."""
    return stewart_platform(**kw, **fixed)
