"""Which kernels evaluate serial chains: numpy or compiled -- chosen here, once.

kic's kernels come in two sets with the same function names and signatures:

* :mod:`kic.kernels.serial_numba` -- compiled by `numba <https://numba.pydata.org>`_
  (numba is a dependency of kic): every recursion runs one configuration at a
  time in registers, 2-5x faster than numpy on batches of 10,000 and 8-26x faster
  for one configuration (PUMA 560, ``benchmarks/serial.py``; docs/performance.md);
* :mod:`kic.kernels.serial_numpy` -- numpy, batch last, for batches, and plain
  Python floats for one configuration (no numba needed).

Each algorithm is written once per backend in :mod:`kic.kernels` -- frames
(:mod:`~kic.kernels.frames`), joint loads (:mod:`~kic.kernels.rnea`), I*, P* and
the gravity load (:mod:`~kic.kernels.inertia`), forward dynamics of long chains in
O(M) (:mod:`~kic.kernels.articulated`), the SPD solve with kic's one
singularity rule and the inverses (:mod:`~kic.kernels.linalg`: a Cholesky pivot
must exceed :data:`kic.settings.SPD_PIVOT_RTOL` of its own diagonal entry) -- its
compiled form beside its numpy twin; the arithmetic of one joint or link is
compiled by numba and run uncompiled by the plain-float kernels.
:func:`kernels` returns the set in force; callers never branch on the backend
themselves.  The set's functions (``d`` the chain's :class:`ChainData`, from
:func:`chain_data`; ``q, qd, qdd, tau`` (N, M) float arrays, batch first; ``qT``
etc. (M, N), batch last)::

    inverse_dynamics(d, q, qd, qdd, gravity=True) -> (N, M)
    gravity_load(d, q) -> (N, M)
    inertia(d, q) -> (N, M, M)
    inertia_power(d, q, with_inertia=True) -> (I* (N, M, M) or None, P* (N, M, M, M))
    forward_dynamics(d, q, qd, tau) -> (q'' (N, M), ok (N,))   # ok: I* passed the rule
    inverse_dynamics_one(d, q, qd, qdd, out) -> bool   # one configuration, (M,) arrays;
    gravity_load_one(d, q, out) -> bool                # False: not finite float64 (M,)
    inertia_one(d, q, out) -> bool                     # vectors (or I* singular);
    forward_dynamics_one(d, q, qd, tau, out) -> bool   # the caller then validates
    pose(d, qT) -> (Fc (M, 4, 3, N), sR (3, M, N), sv (3, M, N))   # link frames, screws
    link_motion(sR, sv, qdT, qddT=None, gravity=None) -> (w, v, aw, av), each (3, M, N)
    loads_from_motion(d, Fc, sR, sv, motion, qddT, gravity) -> (M, N)
    cross(a, b, axis=0) -> a x b along axis 0 or 1
    small_inverse(A (..., m, m)) -> inverses (NaN or inf where singular)
    inverse_with_condition(A (..., m, m)) -> (inverses, ||A||_F ||A^-1||_F (...)),
                                             a bound on the 2-norm condition number

The choice is ``"auto"`` (compiled if numba imports, the default), ``"numpy"``
or ``"numba"``; the environment variable ``KIC_BACKEND`` sets the initial
choice.  The first compiled call of a session compiles the kernels it reaches
(seconds, once per installation: a line on stderr says so) or loads them from
numba's cache next to the package.
"""
from __future__ import annotations

import os

import numpy as np

from .errors import ModelError

__all__ = ["set_backend", "get_backend", "kernels", "chain_data", "ChainData", "KERNELS"]

KERNELS = ("inverse_dynamics", "gravity_load", "inertia", "inertia_power", "forward_dynamics",
           "inverse_dynamics_one", "gravity_load_one", "inertia_one", "forward_dynamics_one",
           "pose", "link_motion", "loads_from_motion", "cross", "small_inverse",
           "inverse_with_condition")
"""The functions every kernel set provides, with the same signatures."""

_CHOICES = ("auto", "numpy", "numba")
_choice: str | None = None          # None: not read from the environment yet
_use: bool | None = None            # cached: compiled kernels in force
_set = None                         # cached: the kernel set in force


def _check(name) -> str:
    if name not in _CHOICES:
        raise ValueError(f"unknown kic backend {name!r}: use one of {', '.join(_CHOICES)}")
    if name == "numba":
        from .kernels import jit
        if not (jit.available and jit.load()):
            raise ImportError("the 'numba' backend needs numba: pip install 'kic[fast]'")
    return name


def _current() -> str:
    global _choice
    if _choice is None:
        env = os.environ.get("KIC_BACKEND", "auto").strip().lower() or "auto"
        try:
            _choice = _check(env)
        except ValueError as exc:
            raise ValueError(f"environment variable KIC_BACKEND: {exc}") from None
    return _choice


def set_backend(name: str) -> str:
    """Choose the serial-chain kernels; returns the previous choice.

    Parameters
    ----------
    name : {"auto", "numpy", "numba"}
        ``"auto"`` uses the compiled kernels when numba is installed.

    Returns
    -------
    str
        The choice in force before the call, so that it can be restored.

    Raises
    ------
    ValueError
        For an unknown name.
    ImportError
        For ``"numba"`` when numba is not installed.

    Examples
    --------
    >>> import kic
    >>> previous = kic.set_backend("numpy")
    >>> kic.get_backend()
    'numpy'
    >>> _ = kic.set_backend(previous)
    """
    global _choice, _use, _set
    previous = _current()
    _choice = _check(name)
    _use = _set = None
    return previous


def get_backend() -> str:
    """The kernels in use: ``"numba"`` (compiled) or ``"numpy"``."""
    return "numba" if use_compiled() else "numpy"


def use_compiled() -> bool:
    """True when the compiled kernels are in force (prefer :func:`kernels`)."""
    global _use
    if _use is None:
        from .kernels import jit
        name = _current()
        _use = name in ("auto", "numba") and jit.available and jit.load()
    return _use


def kernels():
    """The kernel set in force: a module with the functions of :data:`KERNELS`.

    Examples
    --------
    >>> import numpy as np, kic, mechanisms
    >>> from kic.backend import kernels, chain_data
    >>> arm = mechanisms.planar_two_link()
    >>> q = np.array([[0.4, 1.1]])
    >>> np.allclose(kernels().inverse_dynamics(chain_data(arm), q, q, q),
    ...             arm.inverse_dynamics(q, q, q))
    True
    """
    global _set
    if _set is None or _use is None:
        if use_compiled():
            from .kernels import serial_numba as module
        else:
            from .kernels import serial_numpy as module
        _set = module
    return _set


class ChainData:
    """A serial chain's constants as the kernels take them, built once per chain.

    Arrays (contiguous float64): ``base`` (3, 4) placement of the base; ``isR`` (M,)
    1.0 for a revolute joint, 0.0 for a prismatic one (floats: the same array type
    as its view in ``packed``, so that every kernel is compiled once); ``O`` (M, 3, 4)
    and ``O4`` (M, 4, 4) the joints' constant origins, re-oriented so that every
    joint axis is z;
    ``mass`` (M,) kg; ``com`` (M, 3) m and ``inertia`` (M, 3, 3) kg m^2 (about the
    centroid), in those re-oriented link axes; ``gravity`` (3,) m/s^2;
    ``offsets`` (M, 4, 4) the frames the links are described in, relative to the
    re-oriented ones; ``tool`` (4, 4) the tool in the last re-oriented frame.
    The same as Python floats and tuples for the plain-float kernels:
    ``base_t`` (12-tuple: rotation row by row, then the origin), ``joints_t`` (per
    joint: revolute, 12-tuple origin), ``links_t`` (per link: mass, centroid
    3-tuple, inertia 6-tuple xx, xy, xz, yy, yz, zz); ``total_mass`` (kg);
    ``has_inertia``: some link has mass or rotational inertia (kic's one zero-mass
    convention: a massless rotor's inertia counts, so only a chain without either
    has no dynamic model); ``packed`` the arrays in one vector, the chain as every
    compiled kernel takes it (one argument: each array argument costs a call);
    ``dof`` the number of joints M.
    """

    __slots__ = ("base", "isR", "O", "O4", "mass", "com", "inertia", "gravity", "offsets",
                 "tool", "base_t", "joints_t", "links_t", "total_mass", "has_inertia", "packed",
                 "dof")

    def __init__(self, base, is_revolute, origins, masses, com, inertia, gravity, offsets,
                 tool) -> None:
        f = lambda x: np.ascontiguousarray(x, dtype=float)   # noqa: E731
        self.base = f(np.asarray(base)[:3])
        self.isR = np.ascontiguousarray(is_revolute, dtype=float)
        self.O4 = f(origins)
        self.O = f(self.O4[:, :3])
        self.mass = f(masses)
        self.dof = self.mass.shape[0]
        with np.errstate(over="ignore"):
            self.total_mass = float(self.mass.sum())
        if not np.isfinite(self.total_mass):      # each mass finite, their sum not
            raise ModelError("the links' total mass overflows float64: masses near the "
                             "largest float leave no room for the dynamics' sums (use "
                             "other units)")
        self.com = f(com)
        self.inertia = f(inertia)
        self.has_inertia = bool(self.total_mass > 0 or np.any(self.inertia))
        self.gravity = f(gravity)
        self.offsets = f(offsets)
        self.tool = f(tool)
        from .kernels.serial_numba import pack    # plain numpy: imports no numba
        self.packed = pack(self.base, self.isR, self.O, self.mass, self.com, self.inertia,
                           self.gravity)
        self.base_t = tuple(float(x) for x in (*self.base[:, :3].ravel(), *self.base[:, 3]))
        self.joints_t = [(bool(r), tuple(float(x) for x in O.ravel()))
                         for r, O in zip(self.isR, self.O)]
        self.links_t = [(float(m), tuple(float(x) for x in c),
                         (float(I[0, 0]), float(I[0, 1]), float(I[0, 2]), float(I[1, 1]),
                          float(I[1, 2]), float(I[2, 2])))
                        for m, c, I in zip(self.mass, self.com, self.inertia)]


def chain_data(chain) -> ChainData:
    """The :class:`ChainData` of a :class:`kic.SerialChain` (built with the chain)."""
    return chain.kernel_data


# ------------------------------------------------ primitives of the kernel set
# Array primitives whose fastest form depends on the kernels in force; callers
# use these and never look at the backend themselves.
def cross(a: np.ndarray, b: np.ndarray, axis: int = 0) -> np.ndarray:
    """Cross product along ``axis`` (0 or 1; 3 components), broadcasting the rest
    (the kernel set's, :func:`kic.backend.kernels`)."""
    return kernels().cross(a, b, axis)


def small_inverse(A: np.ndarray) -> np.ndarray:
    """Inverses of stacked (..., m, m) matrices; NaN or inf where singular (callers
    check the condition): :func:`kic.kernels.linalg.small_inverse` (closed forms
    for m <= 3) or, compiled, :func:`kic.kernels.linalg.invert_stacked`."""
    return kernels().small_inverse(A)


def inverse_with_condition(A: np.ndarray):
    """Inverses of stacked (..., m, m) matrices and the Frobenius bounds
    ``||A||_F ||A^-1||_F`` (...) on their 2-norm condition numbers
    (``kappa_2 <= bound <= m kappa_2``, a cheap pre-check before the exact
    :func:`kic.kernels.linalg.condition_numbers`): NaN inverses and an infinite
    bound where singular."""
    return kernels().inverse_with_condition(A)


def spd_solve(A: np.ndarray, b: np.ndarray, what: str = "matrix"):
    """Solve stacked SPD systems ``A x = b`` (leading batch axes):
    :func:`kic.kernels.linalg.spd_solve`.

    Raises :class:`~kic.SingularityError` naming the configuration when a matrix
    fails kic's singularity rule, :func:`kic.kernels.linalg.spd_pivot_ok`: a
    Cholesky pivot ``L_kk^2`` not above :data:`kic.settings.SPD_PIVOT_RTOL` times
    ``A_kk`` (relative to its own diagonal entry, hence independent of the units
    of each coordinate).
    """
    from .kernels.linalg import spd_solve as solve
    return solve(A, b, what)
