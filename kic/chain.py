"""Description of an open serial chain: joints, links, and the chain itself.

This module holds *what the mechanism is* (geometry and mass properties),
never what it does at a configuration; per-configuration results come from
:mod:`kic.kinematics` and :mod:`kic.dynamics` (as Pinocchio keeps ``Model``
apart from ``Data``).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from . import dynamics
from .backend import kernels
from ._array import as_batch, finite_array, homogeneous, numeric, rot_x, rot_z
from .errors import ModelError
from .settings import INERTIA_RTOL, TINY
from .settings import RIGID_RTOL, ZERO_NORM

if TYPE_CHECKING:  # pragma: no cover
    from .dynamics import DynamicModel
    from .kinematics import ChainKinematics
    from .loads import Loads

__all__ = ["Joint", "Link", "SerialChain", "composite_body", "inertia_defects", "inertia_scale"]

_KINDS = {"R": "R", "REVOLUTE": "R", "P": "P", "PRISMATIC": "P"}


def composite_body(parts) -> tuple:
    """Mass, centroid and centroidal inertia of rigidly joined parts (batched).

    ``parts`` is a sequence of ``(m, c, I_c)`` in one frame, each a mass (...)
    (kg), a centroid (..., 3) (m) and an inertia about it (..., 3, 3) (kg m^2),
    the leading axes (designs) broadcast.  Parallel-axis theorem:
    ``I = sum I_c + m_k (|d_k|^2 1 - d_k d_k^T)`` with ``d_k = c_k - c``.
    A body of zero mass keeps its parts' rotational inertia (it counts, as in
    every kic model) and its centroid is the frame's origin (it has none).
    Scalars give ``(float, (3,), (3, 3))``.  The one home of this rule: URDF
    links, closed plans and the ready-made mechanisms join bodies here.

    >>> import numpy as np, kic
    >>> rod = (1.0, (0.5, 0.0, 0.0), np.zeros((3, 3)))
    >>> m, c, I = kic.composite_body([rod, (1.0, (-0.5, 0.0, 0.0), np.zeros((3, 3)))])
    >>> m, c.tolist(), I.diagonal().tolist()
    (2.0, [0.0, 0.0, 0.0], [0.0, 0.5, 0.5])
    """
    ms, cs = [np.asarray(p[0], float) for p in parts], [np.asarray(p[1], float) for p in parts]
    m = sum(ms)
    moment = sum(mk[..., None] * ck for mk, ck in zip(ms, cs))
    c = np.divide(moment, m[..., None], out=np.zeros(moment.shape), where=m[..., None] > 0)
    I = np.zeros(c.shape + (3,))
    for mk, ck, (_, _, Ik) in zip(ms, cs, parts):
        d = ck - c
        I = I + (np.asarray(Ik, float) + mk[..., None, None] * (
            np.sum(d * d, -1)[..., None, None] * _EYE - d[..., :, None] * d[..., None, :]))
    return (float(m) if m.ndim == 0 else m), c, 0.5 * (I + np.swapaxes(I, -1, -2))


_EYE = np.eye(3)
_EYE4 = np.eye(4)      # copied where handed out (np.eye costs 10x a copy)


def check_rigid(T, name: str) -> np.ndarray:
    """Validate a 4x4 rigid transform (orthonormal, det +1, last row 0 0 0 1).

    The tests run on Python floats (a few microseconds: a file importer checks
    every joint's origin, and numpy's per-call cost would be most of a load).
    """
    if not (type(T) is np.ndarray and T.dtype == np.float64):
        T = finite_array(T, name)
    if T.shape != (4, 4):
        raise ModelError(f"{name} must be a 4x4 homogeneous transform, got shape {T.shape}")
    r0, r1, r2, last = rows = T.tolist()
    if not all(map(math.isfinite, r0 + r1 + r2 + last)):
        raise ModelError(f"{name} contains NaN or infinite values: {T!r}")
    (a, b, c, _), (d, e, f, _), (g, h, i, _) = rows[:3]
    err = max(abs(a * a + d * d + g * g - 1.0), abs(b * b + e * e + h * h - 1.0),
              abs(c * c + f * f + i * i - 1.0), abs(a * b + d * e + g * h),
              abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
    det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
    off = max(abs(last[0]), abs(last[1]), abs(last[2]), abs(last[3] - 1.0))
    if err > RIGID_RTOL or det < 0 or off > RIGID_RTOL:
        raise ModelError(
            f"{name} is not a rigid transform (rotation orthonormality error {err:.2e}, "
            f"det {det:+.6f}, last row {last})")
    return T


def unit_axis(axis, label: str) -> np.ndarray:
    """A joint axis (3,) as a unit vector; :class:`kic.ModelError` naming ``label``
    for a wrong shape, a non-finite or a zero axis.  Python floats, as
    :func:`check_rigid`."""
    a = axis if type(axis) is np.ndarray and axis.dtype == np.float64 else \
        finite_array(axis, f"{label} axis")
    if a.shape != (3,):
        raise ModelError(f"{label}: axis must have 3 components, got shape {a.shape}")
    x, y, z = a.tolist()
    if not (math.isfinite(x) and math.isfinite(y) and math.isfinite(z)):
        raise ModelError(f"{label} axis contains NaN or infinite values: {a!r}")
    n = math.sqrt(x * x + y * y + z * z)
    if n < ZERO_NORM:
        raise ModelError(f"{label}: axis {[x, y, z]} is zero")
    return np.array((x / n, y / n, z / n))


def _frame_with_z(axis: np.ndarray) -> np.ndarray:
    """A rotation whose third column is the unit vector ``axis``.

    Its first column is the x (or, for an axis near x, the y) direction made
    orthogonal to ``axis``, the second ``axis x first``: the arithmetic of numpy's
    vector operations written on Python floats (the same numbers, without numpy's
    cost per call, which was most of a chain's construction)."""
    z = axis.tolist()
    z0, z1, z2 = z
    if z == [0.0, 0.0, 1.0] or (abs(z0) < 0.9 and abs(z1) < 0.9
                                and np.allclose(axis, (0.0, 0.0, 1.0))):
        return _EYE.copy()
    if abs(z0) < 0.9:                   # x minus its part along the axis
        x = np.array((1.0 - z0 * z0, -(z1 * z0), -(z2 * z0)))
    else:                               # y minus its part along the axis
        x = np.array((-(z0 * z1), 1.0 - z1 * z1, -(z2 * z1)))
    x /= np.linalg.norm(x)
    x0, x1, x2 = x.tolist()
    return np.array(((x0, z1 * x2 - z2 * x1, z0),
                     (x1, z2 * x0 - z0 * x2, z1),
                     (x2, z0 * x1 - z1 * x0, z2)))


class Joint:
    """A one-degree-of-freedom joint of a serial chain.

    Parameters
    ----------
    kind : {"R", "P"}
        Revolute (coordinate: angle, rad) or prismatic (coordinate: length, m).
        ``"revolute"`` and ``"prismatic"`` are accepted too.
    axis : array_like, shape (3,)
        Direction of the joint axis in the joint frame; normalised on input.
    origin : array_like, shape (4, 4), optional
        Placement of the joint frame in the previous link's frame (the base
        frame for the first joint) at zero joint value.  Identity by default.
        The revolute axis passes through the joint frame's origin.
    name : str, optional
        Used in messages and for lookup; defaults to ``"joint<k>"``.

    Examples
    --------
    >>> import numpy as np, kic
    >>> j = kic.Joint("R", axis=(0, 0, 1), origin=np.eye(4), name="shoulder")
    >>> j.kind, j.axis.tolist()
    ('R', [0.0, 0.0, 1.0])
    """

    def __init__(self, kind: str, axis=(0.0, 0.0, 1.0), origin=None,
                 name: str | None = None) -> None:
        label = f"joint {name!r}" if name is not None else "joint"
        key = str(kind).upper() if isinstance(kind, str) else None
        if key not in _KINDS:
            raise ModelError(f"{label}: unknown joint kind {kind!r}; use 'R' (revolute) "
                             "or 'P' (prismatic)")
        self.kind: str = _KINDS[key]
        self.axis: np.ndarray = unit_axis(axis, label)
        self.origin: np.ndarray = (_EYE4.copy() if origin is None
                                   else check_rigid(origin, f"{label} origin"))
        self.name = name

    def __repr__(self) -> str:
        return f"Joint({self.kind!r}, axis={self.axis.tolist()}, name={self.name!r})"


def inertia_scale(inertia, mass, com) -> np.ndarray:
    """A link's own inertia scale (kg m^2), the largest of its inertia's entries and
    ``mass |com|^2`` (its inertia about the link frame); batched over leading axes."""
    inertia, mass, com = np.asarray(inertia, float), np.asarray(mass, float), \
        np.asarray(com, float)
    largest = np.abs(inertia).reshape(inertia.shape[:-2] + (9,)).max(axis=-1)
    return np.maximum(np.maximum(largest, mass * (com * com).sum(axis=-1)), TINY)


def _surely_physical(entries: list, tol: float, check_triangle: bool) -> bool:
    """Whether a symmetric 3x3 inertia (its 9 entries, Python floats) passes the tests
    of :func:`inertia_defects` with half the tolerance ``tol`` to spare: ``A + tol/2``
    and, for the triangle inequality, ``(trace(A) + tol/2) / 2 - A`` are positive
    definite (LDL^T pivots > 0; their round-off, ~1e-15 of the scale, is far below
    tol/2).  False means "ask the eigenvalues", not "defective"."""
    a, d, e, _, b, f, _, _, c = entries
    half = 0.5 * tol
    if not _positive_definite(a + half, b + half, c + half, d, e, f):
        return False
    if not check_triangle:
        return True
    h = 0.5 * (a + b + c + half)
    return _positive_definite(h - a, h - b, h - c, -d, -e, -f)


def _positive_definite(a: float, b: float, c: float, d: float, e: float, f: float) -> bool:
    """``[[a, d, e], [d, b, f], [e, f, c]]`` has positive LDL^T pivots (NaN: False)."""
    if not a > 0.0:
        return False
    b1 = b - d * d / a
    if not b1 > 0.0:
        return False
    f1 = f - d * e / a
    return c - e * e / a - f1 * f1 / b1 > 0.0


_SCREENED = 256
"""Up to this many tensors, :func:`inertia_defects` screens each in Python floats
(microseconds); beyond, numpy's batched eigenvalues are the faster test."""


def inertia_defects(inertia, scale, check_triangle: bool = True) -> list[str]:
    """What is unphysical about symmetric inertia tensors (kg m^2), one message each
    (``""`` for a physical one); ``inertia`` (..., 3, 3), ``scale`` (...) from
    :func:`inertia_scale`.

    A principal moment below ``-INERTIA_RTOL * scale`` (not positive
    semi-definite) and, with ``check_triangle``, ``I1 + I2 < I3 - INERTIA_RTOL *
    scale`` (the triangle inequality of every real body).  The principal
    moments decide; a tensor that passes both tests with half the tolerance to
    spare (:func:`_surely_physical`, most of a file's links) is not decomposed.
    """
    inertia = np.asarray(inertia, float).reshape(-1, 3, 3)
    n = len(inertia)
    scale = np.asarray(scale, float).reshape(-1)
    tol = INERTIA_RTOL * (scale if len(scale) == n else np.broadcast_to(scale, (n,)))
    out = [""] * n
    if n <= _SCREENED:
        doubt = [k for k, (entries, t) in enumerate(zip(inertia.reshape(n, 9).tolist(),
                                                       tol.tolist()))
                 if not _surely_physical(entries, t, check_triangle)]
        if not doubt:
            return out
    else:
        doubt = list(range(n))
    ev = np.linalg.eigvalsh(inertia[doubt])
    tol = tol[doubt]
    not_psd = ev[:, 0] < -tol
    bad = not_psd | (ev[:, 0] + ev[:, 1] < ev[:, 2] - tol) if check_triangle else not_psd
    for i in np.flatnonzero(bad):
        out[doubt[i]] = (f"inertia is not positive semi-definite (principal moments "
                         f"{ev[i].tolist()})" if not_psd[i] else
                         f"principal moments {ev[i].tolist()} violate the triangle "
                         "inequality I1 + I2 >= I3 of a physical body")
    return out


class Link:
    """Mass properties of a rigid link.

    Parameters
    ----------
    mass : float
        Mass (kg), >= 0.  Zero is allowed for massless intermediate bodies.
    com : array_like, shape (3,)
        Centroid in the link frame (m).
    inertia : array_like, shape (3, 3), optional
        Inertia tensor about the centroid in link-frame axes (kg m^2); zero
        (a point mass) by default.  Must be symmetric positive semi-definite.
    name : str, optional
        Defaults to ``"link<k>"``.
    check_triangle : bool
        Require the principal moments to satisfy the triangle inequality
        ``I1 + I2 >= I3`` that every real body does.  Some published tables
        (PUMA 560 among them) violate it; pass ``False`` to accept them.
    strict : bool
        Raise :class:`kic.ModelError` for an inertia that is not physical (not
        positive semi-definite, or the triangle inequality when checked).  With
        ``False`` the inertia is kept as given and its defects are listed in
        :attr:`defects` (file importers use this to load what a file states and
        say what is wrong with it).

    Attributes
    ----------
    defects : tuple of str
        What is unphysical about the inertia (empty for a physical link).

    Notes
    -----
    The checks allow :data:`kic.settings.INERTIA_RTOL` of the link's own scale,
    the largest of the inertia's entries and ``mass |com|^2`` (its inertia
    about the link frame): round-off zeros in a file, ``1e-35`` beside a
    centroid 0.1 m from the frame, pass.

    Examples
    --------
    >>> import kic
    >>> rod = kic.Link(2.0, com=(0.25, 0, 0), inertia=[[0, 0, 0], [0, 2*0.5**2/12, 0],
    ...                [0, 0, 2*0.5**2/12]])
    >>> float(rod.mass)
    2.0
    """

    def __init__(self, mass: float, com=(0.0, 0.0, 0.0), inertia=None,
                 name: str | None = None, check_triangle: bool = True,
                 strict: bool = True) -> None:
        label = f"link {name!r}" if name is not None else "link"
        m = finite_array(mass, f"{label} mass")
        if m.shape != () or m < 0:
            raise ModelError(f"{label}: mass must be a scalar >= 0 kg, got {mass!r}")
        self.mass = float(m)
        c = finite_array(com, f"{label} com")
        if c.shape != (3,):
            raise ModelError(f"{label}: com must have 3 components, got shape {c.shape}")
        self.com: np.ndarray = c
        I = np.zeros((3, 3)) if inertia is None else finite_array(inertia, f"{label} inertia")
        if I.shape == (3,):
            I = np.diag(I)
        if I.shape != (3, 3):
            raise ModelError(f"{label}: inertia must be 3x3 (or 3 principal moments), "
                             f"got shape {I.shape}")
        scale = float(inertia_scale(I, self.mass, c))
        if np.abs(I - I.T).max() > INERTIA_RTOL * scale:
            raise ModelError(f"{label}: inertia is not symmetric: {I.tolist()}")
        I = 0.5 * I + 0.5 * I.T              # (I + I.T) / 2 would overflow near the largest float
        self.defects: tuple[str, ...] = tuple(
            d for d in inertia_defects(I, scale, check_triangle) if d)
        if strict and self.defects:
            hint = ("; pass check_triangle=False to accept a published table that does"
                    if "triangle" in self.defects[0] else "")
            raise ModelError(f"{label}: {self.defects[0]}{hint}")
        self.inertia: np.ndarray = I
        self.name = name

    @classmethod
    def many(cls, masses, coms, inertias, names: Sequence[str | None],
             check_triangle: bool = True, strict: bool = True) -> list["Link"]:
        """Links from arrays, with the constructor's checks made for all at once.

        ``masses`` (n,) kg, ``coms`` (n, 3) m, ``inertias`` (n, 3, 3) kg m^2 about
        the centroids; ``names``, ``check_triangle`` and ``strict`` as in the
        constructor (a file importer builds its bodies this way).
        """
        names = list(names)
        n = len(names)
        given = ((masses, "link masses", (n,)), (coms, "link centroids", (n, 3)),
                 (inertias, "link inertias", (n, 3, 3)))
        m, c, I = (numeric(v, what) for v, what, _ in given)
        if (m.shape, c.shape, I.shape) != tuple(shape for *_, shape in given):
            for v, what, shape in given:
                finite_array(v, what, shape)        # names the one of a wrong shape
        negative = m < 0
        if negative.any():
            k = int(negative.argmax())
            raise ModelError(f"link {names[k]!r}: mass must be a scalar >= 0 kg, got {m[k]!r}")
        scale = inertia_scale(I, m, c)
        if not np.isfinite(scale).all():    # a NaN or infinity in any input makes one here
            for v, what, shape in given:
                finite_array(v, what, shape)        # names the input
        skew = np.abs(I - I.swapaxes(1, 2)).reshape(n, 9).max(axis=1) > INERTIA_RTOL * scale
        if skew.any():
            k = int(skew.argmax())
            raise ModelError(f"link {names[k]!r}: inertia is not symmetric: {I[k].tolist()}")
        I = 0.5 * (I + I.swapaxes(1, 2))
        defects = inertia_defects(I, scale, check_triangle)
        out = []
        new = cls.__new__
        for name, mk, ck, Ik, d in zip(names, m.tolist(), c, I, defects):
            if strict and d:
                raise ModelError(f"link {name!r}: {d}")
            link = new(cls)
            link.mass, link.com, link.inertia, link.name = mk, ck, Ik, name
            link.defects = (d,) if d else ()
            out.append(link)
        return out

    def __repr__(self) -> str:
        return f"Link(mass={self.mass}, com={self.com.tolist()}, name={self.name!r})"


class SerialChain:
    """An open serial chain of revolute and prismatic joints.

    Link frame ``j`` is ``frame(j-1) @ joints[j].origin @ motion_j(q_j)``, where
    ``motion_j`` rotates about (R) or translates along (P) the joint axis, and
    frame 0 is ``base``.  Link ``j`` is carried by joint ``j``.

    Parameters
    ----------
    joints : sequence of Joint
    links : sequence of Link
        One per joint; ``links[j]`` is moved by joints ``0..j``.
    gravity : array_like, shape (3,)
        Gravitational acceleration in the world frame (m/s^2).
    base : array_like, shape (4, 4), optional
        Placement of the chain's base in the world.
    tool : array_like, shape (4, 4), optional
        Tool frame in the last link's frame (the frame its data are given in,
        see ``frame_offsets``).
    frame_offsets : array_like, shape (M, 4, 4), optional
        For each link, the frame in which its mass properties and points are
        given, relative to the kinematic link frame above.  Identity by
        default; :meth:`from_dh` uses it so that links are described in their
        Denavit-Hartenberg frames.
    name : str, optional

    Notes
    -----
    Per-configuration results (influence coefficients, the dynamic model)
    accept a batch ``q`` of shape ``(..., M)`` and return arrays with the same
    leading axes.  SI units throughout: m, kg, s, rad, N, N m.

    Examples
    --------
    A planar two-link arm of uniform rods (seed 001), gravity along -y:

    >>> import numpy as np, kic
    >>> rod = lambda m, l: kic.Link(m, com=(l / 2, 0, 0),
    ...                             inertia=np.diag([0, m * l**2 / 12, m * l**2 / 12]))
    >>> T = np.eye(4); T[0, 3] = 1.0
    >>> arm = kic.SerialChain([kic.Joint("R"), kic.Joint("R", origin=T)],
    ...                       [rod(1.0, 1.0), rod(1.0, 1.0)], gravity=(0, -9.81, 0))
    >>> arm.dof
    2
    >>> np.round(arm.dynamics([0.0, 0.0]).I_star, 4)
    array([[2.6667, 0.8333],
           [0.8333, 0.3333]])
    """

    def __init__(self, joints: Sequence[Joint], links: Sequence[Link],
                 gravity=(0.0, 0.0, -9.81), base=None, tool=None,
                 frame_offsets=None, name: str | None = None) -> None:
        joints, links = list(joints), list(links)
        if not joints:
            raise ModelError("a serial chain needs at least one joint")
        if len(joints) != len(links):
            raise ModelError(f"{len(joints)} joints but {len(links)} links: give one link "
                             "per joint (link j is carried by joint j)")
        for k, j in enumerate(joints):
            if not isinstance(j, Joint):
                raise ModelError(f"joints[{k}] is {type(j).__name__}, not kic.Joint")
        for k, l in enumerate(links):
            if not isinstance(l, Link):
                raise ModelError(f"links[{k}] is {type(l).__name__}, not kic.Link")
        self.joints: tuple[Joint, ...] = tuple(joints)
        self.links: tuple[Link, ...] = tuple(links)
        self.name = name
        self.joint_names: tuple[str, ...] = tuple(
            j.name if j.name is not None else f"joint{k + 1}" for k, j in enumerate(joints))
        self.link_names: tuple[str, ...] = tuple(
            l.name if l.name is not None else f"link{k + 1}" for k, l in enumerate(links))
        for kind, names in (("joint", self.joint_names), ("link", self.link_names)):
            if len(set(names)) != len(names):
                dup = sorted({n for n in names if names.count(n) > 1})
                raise ModelError(f"duplicate {kind} names {dup}")
        self.gravity: np.ndarray = finite_array(gravity, "gravity", (3,))
        self.base: np.ndarray = _EYE4.copy() if base is None else check_rigid(base, "base")
        self.tool: np.ndarray = _EYE4.copy() if tool is None else check_rigid(tool, "tool")
        M = len(joints)
        if frame_offsets is None:
            offsets = np.broadcast_to(_EYE4, (M, 4, 4)).copy()
        else:
            offsets = finite_array(frame_offsets, "frame_offsets")
            if offsets.shape != (M, 4, 4):
                raise ModelError(f"frame_offsets must have shape ({M}, 4, 4), got {offsets.shape}")
            for k in range(M):
                check_rigid(offsets[k], f"frame offset of {self.link_names[k]!r}")
        self.frame_offsets: np.ndarray = offsets
        self._prepare()

    # ------------------------------------------------------------------ data
    def _prepare(self) -> None:
        """Precompute the constant arrays the numeric kernels use.

        Internally every joint frame is re-oriented so that its axis is z (a
        constant rotation Q_j with Q_j e_z = axis_j, absorbed into the origins,
        the link data and the frame offsets).  A revolute step is then a
        constant 3x4 product followed by a plane rotation of two columns.
        """
        M = self.dof
        self.is_revolute = np.array([j.kind == "R" for j in self.joints])
        self.is_prismatic = ~self.is_revolute
        Q = np.zeros((M, 4, 4))
        Q[:, 3, 3] = 1.0
        for k, j in enumerate(self.joints):
            Q[k, :3, :3] = _frame_with_z(j.axis)
        prevQ_T = np.concatenate([_EYE4[None], Q[:-1].transpose(0, 2, 1)])
        O = np.stack([j.origin for j in self.joints])
        self._origin_z = prevQ_T @ O @ Q                 # (M, 4, 4), joint axis = z
        Fo = Q.transpose(0, 2, 1) @ self.frame_offsets  # user frame in the z frame
        self._offsets_z = Fo
        self.masses = np.array([l.mass for l in self.links])
        coms = np.stack([l.com for l in self.links])
        self._com = np.einsum("mij,mj->mi", Fo[:, :3, :3], coms) + Fo[:, :3, 3]
        self._inertia = np.einsum("mij,mjk,mlk->mil", Fo[:, :3, :3],
                                  np.stack([l.inertia for l in self.links]), Fo[:, :3, :3])
        self._tool_kin = Fo[-1] @ self.tool
        from .backend import ChainData
        #: the constants as kic's kernels take them (:class:`kic.backend.ChainData`)
        self.kernel_data = ChainData(self.base, self.is_revolute, self._origin_z, self.masses,
                                     self._com, self._inertia, self.gravity, Fo, self._tool_kin)

    # ---------------------------------------------------------------- naming
    @property
    def dof(self) -> int:
        """Number of joints (generalized coordinates) M."""
        return len(self.joints)

    @property
    def total_mass(self) -> float:
        """Sum of the link masses (kg)."""
        return self.kernel_data.total_mass

    @property
    def has_inertia(self) -> bool:
        """Some link has mass or rotational inertia (a massless rotor counts: kic's one
        zero-mass convention); a chain without it contributes no loads of motion."""
        return self.kernel_data.has_inertia

    def link_index(self, link: int | str) -> int:
        """Index of a link given by index or name (``ModelError`` if unknown)."""
        return self._index(link, self.link_names, "link")

    def joint_index(self, joint: int | str) -> int:
        """Index of a joint given by index or name (``ModelError`` if unknown)."""
        return self._index(joint, self.joint_names, "joint")

    @staticmethod
    def _index(key, names, kind) -> int:
        if isinstance(key, (int, np.integer)) and not isinstance(key, bool):
            k = int(key)
            if -len(names) <= k < len(names):
                return k % len(names)
            raise ModelError(f"{kind} index {k} out of range for {len(names)} {kind}s")
        if isinstance(key, str) and key in names:
            return names.index(key)
        raise ModelError(f"unknown {kind} {key!r}; known {kind}s: {list(names)}")

    def __repr__(self) -> str:
        kinds = "".join(j.kind for j in self.joints)
        label = f" {self.name!r}" if self.name else ""
        return f"<SerialChain{label} {kinds}, {self.total_mass:g} kg>"

    # ------------------------------------------------------------ delegation
    def frames(self, q) -> np.ndarray:
        """World placement of every link frame, shape ``(..., M, 4, 4)``.

        Frames are the ones the links are described in (after
        ``frame_offsets``: the DH frames of a chain built with :meth:`from_dh`).
        """
        from .kinematics import link_frames
        return link_frames(self, q)

    def tool_frame(self, q) -> np.ndarray:
        """World placement of the tool frame, shape ``(..., 4, 4)``."""
        from .kinematics import link_frames
        return link_frames(self, q, tool=True)

    def kinematics(self, q, order: int = 2) -> "ChainKinematics":
        """Influence coefficients up to ``order`` (1, 2 or 3) at ``q`` (..., M).

        See :class:`kic.kinematics.ChainKinematics`.
        """
        from .kinematics import ChainKinematics
        return ChainKinematics(self, q, order)

    def dynamics(self, q) -> "DynamicModel":
        """The dynamic model (I*, P*, gravity load, energies) at ``q`` (..., M).

        See :class:`kic.dynamics.DynamicModel`.
        """
        return dynamics.chain_dynamics(self, q)

    def inverse_dynamics(self, q, qd, qdd, loads: "Loads | None" = None) -> np.ndarray:
        """Required joint loads ``T = I* q'' + q'^T P* q' + T_L`` (..., M), N m or N.

        Computed recursively, without forming P*.  Includes gravity and, if
        given, the applied ``loads`` (:class:`kic.Loads`).
        """
        if loads is None:           # one float64 configuration: straight to the kernel
            d = self.kernel_data
            out = np.empty(d.dof)
            if kernels().inverse_dynamics_one(d, q, qd, qdd, out):
                return out
        return dynamics.chain_inverse_dynamics(self, q, qd, qdd, loads)

    def forward_dynamics(self, q, qd, tau, loads: "Loads | None" = None) -> np.ndarray:
        """Joint accelerations ``q'' = I*^-1 (T - q'^T P* q' - T_L)`` (..., M)."""
        if loads is None:           # one float64 configuration: straight to the kernel
            d = self.kernel_data
            out = np.empty(d.dof)
            if kernels().forward_dynamics_one(d, q, qd, tau, out):
                return out
        return dynamics.chain_forward_dynamics(self, q, qd, tau, loads)

    def gravity_load(self, q) -> np.ndarray:
        """Joint loads that hold the chain against gravity, ``+dV/dq`` (..., M)."""
        return dynamics.chain_gravity_load(self, q)

    def kinetic_energy(self, q, qd) -> np.ndarray:
        """Kinetic energy ``q'^T I* q' / 2`` (J), shape ``(...)``."""
        return dynamics.chain_kinetic_energy(self, q, qd)

    def potential_energy(self, q) -> np.ndarray:
        """Gravitational potential energy ``-sum m_j g . c_j`` (J), shape ``(...)``."""
        return dynamics.chain_potential_energy(self, q)

    # ------------------------------- the interface shared with kic.ClosedModel
    # A serial chain is the closed model with no loops: its initial coordinates
    # phi are its coordinates q, its one open chain is itself and the transfer
    # is the identity, so linearization and actuation need no case of their own.
    @property
    def coordinate_names(self) -> list[str]:
        """The coordinates q: the joints, in order."""
        return list(self.joint_names)

    @property
    def phi_names(self) -> list[str]:
        """All joint values (for a serial chain, its coordinates)."""
        return list(self.joint_names)

    @property
    def actuators(self) -> list[str]:
        """The actuated joints (every joint)."""
        return list(self.joint_names)

    @property
    def open_chains(self) -> list:
        """The open chains of the model and their joint indices: the chain itself."""
        return [(self, np.arange(self.dof))]

    def joint_indices(self, names) -> np.ndarray:
        """Positions of the named (or numbered) joints."""
        if isinstance(names, (str, int, np.integer)):
            names = [names]
        return np.array([self.joint_index(n) for n in names], int)

    def transfer_at(self, q, order: int = 2):
        """Joint values and the (identity) transfer at ``q``: ``(phi (n, M), Transfer)``."""
        from .transfer import Transfer
        qT, _ = as_batch(q, self.dof)
        return np.ascontiguousarray(qT.T), Transfer.identity(qT.shape[1], self.dof, order)

    def split_loads(self, loads) -> list:
        """The loads acting on each open chain: all of them on the chain itself."""
        return [loads if loads else None]

    def actuator_loads(self, q, qd, qdd, actuators=None, weights=None,
                       loads: "Loads | None" = None) -> np.ndarray:
        """Loads of the actuated joints for a motion (..., Na): the joint loads of
        ``actuators`` (all joints, or each joint that is not actuated must need
        no load: a serial chain cannot distribute loads)."""
        idx = self.joint_indices(self.joint_names if actuators is None else actuators)
        if len(set(idx.tolist())) != self.dof:
            raise ModelError(f"{len(set(idx.tolist()))} actuators cannot drive the {self.dof} "
                             "joints of a serial chain (underactuated)")
        return self.inverse_dynamics(q, qd, qdd, loads=loads)[..., idx]

    # ------------------------------------------------------------ builders
    @classmethod
    def from_dh(cls, rows: Sequence[Mapping[str, Any]], links: Sequence[Link],
                convention: str = "standard", gravity=(0.0, 0.0, -9.81), base=None,
                tool=None, name: str | None = None) -> "SerialChain":
        """Build a chain from Denavit-Hartenberg rows given by keyword.

        Parameters
        ----------
        rows : sequence of mappings
            One per joint, with keys (all optional but ``kind`` defaults to
            ``"R"``): ``a`` (m), ``alpha`` (rad), ``d`` (m), ``theta`` (rad),
            ``kind`` (``"R"``/``"P"``), ``offset`` (joint-coordinate offset)
            and ``name``.  The joint variable adds to ``theta`` (R) or ``d``
            (P): ``theta_i = theta + offset + q_i`` for a revolute joint.
        links : sequence of Link
            Mass properties given in the DH frame of each link (standard: the
            frame at the distal end of link i, whose z is the axis of joint
            i+1; modified: the frame at joint i), as in published tables.
        convention : {"standard", "modified"}
            ``"standard"`` (distal, Paul/Spong/Corke ``DHRobot``):
            ``A_i = Rz(theta_i) Tz(d_i) Tx(a_i) Rx(alpha_i)``.
            ``"modified"`` (proximal, Craig/Khalil):
            ``A_i = Rx(alpha_{i-1}) Tx(a_{i-1}) Rz(theta_i) Tz(d_i)``, the row
            of joint i holding ``alpha_{i-1}`` and ``a_{i-1}``.
        gravity, base, tool, name
            As in the constructor; ``tool`` is given in the DH frame of the
            last link.

        Notes
        -----
        Freeman's (Duffy's) parameters map onto the modified convention, where
        frames sit at the joints: the link length ``a_jk`` (distance between
        joint axes j and k along their common normal) is ``a``, the twist
        ``alpha_jk`` is ``alpha``, the joint offset ``s_jj`` is ``d`` and the
        joint angle ``theta_jj`` is ``theta`` of joint j.  Frames returned by
        :meth:`frames` are the DH frames.

        Examples
        --------
        >>> import numpy as np, kic
        >>> rows = [dict(a=1.0), dict(a=1.0)]
        >>> arm = kic.SerialChain.from_dh(rows, [kic.Link(1.0), kic.Link(1.0)])
        >>> np.round(arm.tool_frame([np.pi / 2, 0.0])[:3, 3], 12)
        array([0., 2., 0.])
        """
        conv = str(convention).lower()
        if conv not in ("standard", "modified"):
            raise ModelError(f"unknown DH convention {convention!r}; use 'standard' or 'modified'")
        rows, links = list(rows), list(links)
        if len(rows) != len(links):
            raise ModelError(f"{len(rows)} DH rows but {len(links)} links")
        allowed = {"a", "alpha", "d", "theta", "kind", "offset", "name"}
        joints, offsets = [], []
        trailing_prev = np.eye(4)
        for k, row in enumerate(rows):
            if not isinstance(row, Mapping):
                raise ModelError(f"DH row {k} must be a mapping with keys {sorted(allowed)}, "
                                 f"got {type(row).__name__}")
            extra = set(row) - allowed
            if extra:
                raise ModelError(f"DH row {k}: unknown keys {sorted(extra)}; allowed "
                                 f"{sorted(allowed)}")
            label = f"DH row {k}"
            vals = {key: float(finite_array(row.get(key, 0.0), f"{label} {key}"))
                    for key in ("a", "alpha", "d", "theta", "offset")}
            kind = row.get("kind", "R")
            key = str(kind).upper()
            if key not in _KINDS:
                raise ModelError(f"{label}: unknown joint kind {kind!r}; use 'R' or 'P'")
            kind = _KINDS[key]
            theta, d = vals["theta"], vals["d"]
            if kind == "R":
                theta += vals["offset"]
            else:
                d += vals["offset"]
            # The variable part (Rz(q) or Tz(q)) commutes with the constant part
            # of the joint's own screw, Rz(theta) Tz(d), which therefore goes
            # before the motion ("lead"); in the standard convention the
            # Tx(a) Rx(alpha) after it ("trail") is the DH frame's offset from
            # the kinematic link frame and is carried into the next origin.
            screw = homogeneous(rot_z(theta)) @ homogeneous(p=(0.0, 0.0, d))
            twist = homogeneous(p=(vals["a"], 0.0, 0.0)) @ homogeneous(rot_x(vals["alpha"]))
            if conv == "standard":
                origin = trailing_prev @ screw
                trailing_prev = twist
                offsets.append(twist)
            else:
                origin = homogeneous(rot_x(vals["alpha"])) @ homogeneous(p=(vals["a"], 0.0, 0.0)) \
                    @ screw
                offsets.append(np.eye(4))
            joints.append(Joint(kind, (0.0, 0.0, 1.0), origin, row.get("name")))
        return cls(joints, links, gravity=gravity, base=base, tool=tool,
                   frame_offsets=np.stack(offsets), name=name)

    # ------------------------------------------------------------ files
    @classmethod
    def from_urdf(cls, source, base_link: str | None = None, tip_link: str | None = None,
                  gravity=(0.0, 0.0, -9.81), strict: bool = False):
        """The serial chain of a URDF (XML text or a file path).

        The chain of moving joints is found by itself when the file holds one;
        ``tip_link`` is needed only where moving branches split.  Returns a
        :class:`kic.MimicModel` when joints on the chain mimic others.  See
        :func:`kic.io.urdf.chain_from_urdf` (what is repaired, ``strict``).
        """
        from .io.urdf import chain_from_urdf
        return chain_from_urdf(source, base_link, tip_link, gravity=gravity, strict=strict)

    def to_urdf(self, name: str | None = None, limits: Mapping | None = None) -> str:
        """URDF text of this chain (:func:`kic.io.urdf.to_urdf`)."""
        from .io.urdf import to_urdf
        return to_urdf(self, name=name, limits=limits)

    def to_mjcf(self, name: str | None = None, **options) -> str:
        """MJCF (MuJoCo) text of this chain (:func:`kic.io.mjcf.to_mjcf`)."""
        from .io.mjcf import to_mjcf
        return to_mjcf(self, name=name, **options)
