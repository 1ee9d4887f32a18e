"""Which kernels evaluate serial-chain dynamics: numpy or compiled.

kic's batched kernels are written in numpy and need nothing else.  When
`numba <https://numba.pydata.org>`_ is installed (``pip install kic[fast]``),
compiled versions of the serial-chain kernels -- inverse dynamics, I*, P*,
the gravity load and forward dynamics, at one configuration or a batch -- are
used instead: they evaluate the same sums (the tests hold both to the same
independent references) 1.5-3x faster on batches and 3-16x faster for a single
configuration (docs/performance.md).  Kinematics, loads, closed mechanisms and
linearization keep their numpy structure, with compiled link frames, screw
motion, chain recursions, cross products and small inverses underneath.

The choice is ``"auto"`` (compiled if numba imports, the default), ``"numpy"``
or ``"numba"``; the environment variable ``KIC_BACKEND`` sets the initial
choice.  The first compiled call of a session compiles the kernels (a few
seconds) or loads them from numba's cache next to the package.
"""
from __future__ import annotations

import os

__all__ = ["set_backend", "get_backend"]

_CHOICES = ("auto", "numpy", "numba")
_choice: str | None = None          # None: not read from the environment yet
_use: bool | None = None            # cached: compiled kernels in force


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
    global _choice, _use
    previous = _current()
    _choice = _check(name)
    _use = None
    return previous


def get_backend() -> str:
    """The kernels in use: ``"numba"`` (compiled) or ``"numpy"``."""
    return "numba" if use_compiled() else "numpy"


def use_compiled() -> bool:
    """True when the compiled kernels are to be used (internal, called often)."""
    global _use
    if _use is None:
        from . import _compiled
        name = _current()
        _use = name in ("auto", "numba") and _compiled.available and _compiled.load()
    return _use


def compiled_data(chain):
    """The chain's constants for the compiled kernels, or None under numpy."""
    if not use_compiled():
        return None
    data = chain.__dict__.get("_compiled_data")
    if data is None:
        from ._compiled import ChainData
        data = chain._compiled_data = ChainData(chain)
    return data
