"""The one lazy numba registry of kic's compiled kernels (internal).

A kernel module marks its functions with :func:`jit`; they stay plain Python
functions (which is also how they run without numba) until :func:`load`
imports numba and replaces every marked function, in its own module and in
every kernel module that imported it by name, with its compiled dispatcher.
numba resolves a kernel's globals when it first compiles it, so compiled
kernels call compiled kernels, across modules, without knowing about this.
A module imported after :func:`load` has its functions compiled as they are
marked.  ``import kic`` therefore never imports numba, and a first call
compiles only the kernels it reaches (or loads them from numba's cache next
to the package).
"""
from __future__ import annotations

import importlib.util
import os
import sys
import warnings

__all__ = ["available", "jit", "load", "plain"]

available = importlib.util.find_spec("numba") is not None
"""numba is installed (imported, and kernels compiled, on first use)."""

_marked: list[tuple[str, str, bool, str | None]] = []   # module, name, inline, signature
_plain: dict[tuple[str, str], object] = {}              # the uncompiled functions
_loaded = False


def _compile(numba, fn, inline: bool, signature: str | None):
    options = dict(cache=True, nogil=True, error_model="numpy")
    if signature is not None:
        # one signature: any other argument type raises TypeError at the call, and
        # nothing new is compiled for it (callers then take their validating path)
        return numba.njit(signature, **options)(fn)
    return numba.njit(inline="always" if inline else "never", **options)(fn)


def jit(fn=None, *, inline: bool = False, signature: str | None = None):
    """Mark ``fn`` for compilation by :func:`load`.

    ``inline=True``: compiled into each caller (a call that passes array views
    costs more than a small helper's arithmetic).  ``signature``: the one
    numba signature of an entry point called straight from Python."""
    def mark(f):
        _marked.append((f.__module__, f.__name__, inline, signature))
        _plain[(f.__module__, f.__name__)] = f
        if _loaded:
            import numba
            return _compile(numba, f, inline, signature)
        return f
    return mark(fn) if fn is not None else mark


def plain(module: str, name: str):
    """The uncompiled function ``name`` of kernel module ``module`` (it runs on
    Python floats, lists and tuples where numba is absent)."""
    return _plain[(module, name)]


def load() -> bool:
    """Import numba and replace every marked function by its compiled dispatcher
    (compiled at its first call, or loaded from cache).  False, with a warning,
    if numba is installed but cannot be imported (e.g. built for another numpy)."""
    global _loaded, available
    if _loaded:
        return True
    if not available:
        return False
    try:
        import numba
    except ImportError as exc:
        warnings.warn(f"numba is installed but cannot be imported ({exc}); kic uses its "
                      "numpy kernels", RuntimeWarning, stacklevel=2)
        available = False
        return False
    dispatchers = {}
    for module, name, inline, signature in _marked:
        fn = _plain[(module, name)]
        dispatchers[id(fn)] = _compile(numba, fn, inline, signature)
    # every kernel module's names bound to a marked function, its own or imported
    for module in {m for m, *_ in _marked}:
        namespace = sys.modules[module].__dict__
        for key, value in list(namespace.items()):
            compiled = dispatchers.get(id(value))
            if compiled is not None:
                namespace[key] = compiled
    _loaded = True
    _notice_compilation([_plain[(m, n)] for m, n, inline, _ in _marked if not inline])
    return True


def _notice_compilation(functions) -> None:
    """One line on stderr when kernels are missing from numba's cache: their first
    calls compile them (seconds each, once per installation), and a user waiting
    for an answer should know why."""
    try:
        from numba.core.caching import FunctionCache
        missing, where = 0, None
        for fn in functions:
            cache = FunctionCache(fn)
            # numba's own file names (private API: a change only loses this notice)
            if not os.path.exists(cache._cache_file._index_path):
                missing += 1
                where = cache._cache_path
    except Exception:                    # noqa: BLE001 - a notice must never fail a call
        return
    if missing > 2:
        sys.stderr.write(f"kic: {missing} compiled kernels are not in numba's cache yet; "
                         "the first calls compile those they need (seconds, once; cached in "
                         f"{where}; KIC_BACKEND=numpy skips compilation)\n")
