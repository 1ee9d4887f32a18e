"""Which kernels evaluate serial chains: numpy or compiled -- chosen here, once.

kic's kernels come in two sets with the same function names and signatures:

* ``kic._compiled`` -- compiled by `numba <https://numba.pydata.org>`_ when it is
  installed (``pip install kic[fast]``): every recursion runs one configuration
  at a time in registers, 2-3x faster than numpy on batches and 9-30x faster
  at one configuration (PUMA 560, measured in one run);
* ``kic._scalar`` -- numpy, batch last, for batches, and plain Python floats for
  one configuration (no numba needed).

The arithmetic of one joint or link (frame step, screw-motion step, link wrench,
centroid and world inertia, composite-inertia and gravity steps) and the Cholesky
solve with kic's one singularity rule (``kic._compiled.spd_pivot_ok``: a pivot
must exceed 1e-12 of its own diagonal entry) are written once, in
``kic._compiled``: numba compiles them, and the plain-float kernels run them
uncompiled.  :func:`kernels` returns the set in force; callers never branch on
the backend themselves.  The set's functions (``d`` the chain's
:class:`ChainData`, from :func:`chain_data`; ``q, qd, qdd, tau`` (N, M)
float arrays, batch first; ``qT`` etc. (M, N), batch last)::

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
    inverse_with_condition(A (..., m, m)) -> (inverses, 1-norm condition numbers (...))

The choice is ``"auto"`` (compiled if numba imports, the default), ``"numpy"``
or ``"numba"``; the environment variable ``KIC_BACKEND`` sets the initial
choice.  The first compiled call of a session compiles the kernels (a few
seconds) or loads them from numba's cache next to the package.
"""
from __future__ import annotations

import os

import numpy as np

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
        from . import _compiled
        if not (_compiled.available and _compiled.load()):
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
        from . import _compiled
        name = _current()
        _use = name in ("auto", "numba") and _compiled.available and _compiled.load()
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
            from . import _compiled as module
        else:
            from . import _scalar as module
        _set = module
    return _set


class ChainData:
    """A serial chain's constants as the kernels take them, built once per chain.

    Arrays (contiguous float64 unless said): ``base`` (3, 4) placement of the base;
    ``isR`` (M,) bool, revolute joints; ``O`` (M, 3, 4) and ``O4`` (M, 4, 4) the
    joints' constant origins, re-oriented so that every joint axis is z;
    ``mass`` (M,) kg; ``com`` (M, 3) m and ``inertia`` (M, 3, 3) kg m^2 (about the
    centroid), in those re-oriented link axes; ``gravity`` (3,) m/s^2;
    ``offsets`` (M, 4, 4) the frames the links are described in, relative to the
    re-oriented ones; ``tool`` (4, 4) the tool in the last re-oriented frame.
    The same as Python floats and tuples for the plain-float kernels:
    ``base_t`` (12-tuple: rotation row by row, then the origin), ``joints_t`` (per
    joint: revolute, 12-tuple origin), ``links_t`` (per link: mass, centroid
    3-tuple, inertia 6-tuple xx, xy, xz, yy, yz, zz); ``total_mass`` (kg);
    ``packed`` the arrays in one vector for the compiled one-configuration kernels.
    """

    __slots__ = ("base", "isR", "O", "O4", "mass", "com", "inertia", "gravity", "offsets",
                 "tool", "base_t", "joints_t", "links_t", "total_mass", "packed")

    def __init__(self, base, is_revolute, origins, masses, com, inertia, gravity, offsets,
                 tool) -> None:
        f = lambda x: np.ascontiguousarray(x, dtype=float)   # noqa: E731
        self.base = f(np.asarray(base)[:3])
        self.isR = np.ascontiguousarray(is_revolute, dtype=np.bool_)
        self.O4 = f(origins)
        self.O = f(self.O4[:, :3])
        self.mass = f(masses)
        self.total_mass = float(self.mass.sum())
        self.com = f(com)
        self.inertia = f(inertia)
        self.gravity = f(gravity)
        self.offsets = f(offsets)
        self.tool = f(tool)
        from ._compiled import pack           # plain numpy: imports no numba
        self.packed = pack(self.base, self.isR, self.O, self.mass, self.com, self.inertia,
                           self.gravity)
        self.base_t = tuple(float(x) for x in (*self.base[:, :3].ravel(), *self.base[:, 3]))
        self.joints_t = [(bool(r), tuple(float(x) for x in O.ravel()))
                         for r, O in zip(self.isR, self.O)]
        self.links_t = [(float(m), tuple(float(x) for x in c),
                         (float(I[0, 0]), float(I[0, 1]), float(I[0, 2]), float(I[1, 1]),
                          float(I[1, 2]), float(I[2, 2])))
                        for m, c, I in zip(self.mass, self.com, self.inertia)]

    @property
    def dof(self) -> int:
        return self.mass.shape[0]


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
    check the condition): closed forms for m <= 3 (numpy), Gauss-Jordan elimination
    with partial pivoting (compiled)."""
    return kernels().small_inverse(A)


def inverse_with_condition(A: np.ndarray):
    """Inverses of stacked (..., m, m) matrices and their 1-norm condition numbers
    ``||A||_1 ||A^-1||_1`` (...): inf/NaN where singular, or ``np.linalg.LinAlgError``
    from LAPACK (m > 3, numpy kernels)."""
    return kernels().inverse_with_condition(A)


def spd_solve(A: np.ndarray, b: np.ndarray, what: str = "matrix"):
    """Solve stacked SPD systems ``A x = b`` (leading batch axes).

    Raises :class:`~kic.SingularityError` naming the configuration when a matrix
    fails kic's singularity rule, :func:`kic._compiled.spd_pivot_ok`: a Cholesky
    pivot ``L_kk^2`` not above ``1e-12 A_kk`` (relative to its own diagonal entry,
    hence independent of the units of each coordinate).
    """
    from ._scalar import spd_factor, spd_substitute
    from .errors import SingularityError
    A = np.asarray(A, dtype=float)
    L, ok = spd_factor(A)
    if np.all(ok):
        return spd_substitute(L, b)
    bad = ~ok
    with np.errstate(invalid="ignore", divide="ignore"):
        sv = np.linalg.svd(np.where(np.isfinite(A), A, 0.0), compute_uv=False)
    smin, smax = sv[..., -1], sv[..., 0]
    cond = np.where(smin > 0, smax / np.where(smin > 0, smin, 1.0), np.inf)
    # the failing configuration with the largest condition number (ties: the first)
    idx = (np.unravel_index(int(np.argmax(np.where(bad, cond, -1.0))), cond.shape)
           if cond.ndim else ())
    raise SingularityError(
        f"{what} is singular or not positive definite"
        + (f" at batch index {idx}" if idx else "")
        + f": smallest singular value {float(smin[idx]):.3e}, "
          f"condition number {float(cond[idx]):.3e}",
        sigma_min=float(smin[idx]), condition=float(cond[idx]), where=what,
        index=idx if idx else None)
