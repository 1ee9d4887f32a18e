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
import types
import warnings

__all__ = ["available", "jit", "load", "plain"]

available = importlib.util.find_spec("numba") is not None
"""numba is installed (imported, and kernels compiled, on first use)."""

_marked: list[tuple[str, str, bool, str | None]] = []   # module, name, inline, signature
_plain: dict[tuple[str, str], object] = {}              # the uncompiled functions
_key: dict[int, tuple[str, str]] = {}    # id of a marked function or its dispatcher -> key
_kept: list = []                         # ... which stay alive, so that no id is reused
_twins: dict[tuple[str, str], object] = {}              # plain(): bound to plain twins
_loaded = False


def _compile(numba, fn, inline: bool, signature: str | None):
    options = dict(cache=True, nogil=True, error_model="numpy")
    if signature is not None:
        # one signature, compiled (or loaded from cache) at the first call, not at
        # load(): a first use compiles only the entry points it calls.  Then any
        # other argument type raises TypeError at the call, and nothing new is
        # compiled for it (callers then take their validating path)
        dispatcher = numba.njit(**options)(fn)

        def first_call(self, *args, **kws):
            # numba calls this where no compiled variant matches the arguments, and
            # calls what it returns: the dispatcher again, now with its one variant
            self.compile(signature)
            self.disable_compile()
            return self

        dispatcher._compile_for_args = types.MethodType(first_call, dispatcher)
        return dispatcher
    return numba.njit(inline="always" if inline else "never", **options)(fn)


def jit(fn=None, *, inline: bool = False, signature: str | None = None):
    """Mark ``fn`` for compilation by :func:`load`.

    ``inline=True``: compiled into each caller (a call that passes array views
    costs more than a small helper's arithmetic).  ``signature``: the one
    numba signature of an entry point called straight from Python."""
    def mark(f):
        key = (f.__module__, f.__name__)
        _marked.append((*key, inline, signature))
        _plain[key] = f
        _key[id(f)] = key
        if _loaded:
            import numba
            compiled = _compile(numba, f, inline, signature)
            _key[id(compiled)] = key
            _kept.append(compiled)
            return compiled
        return f
    return mark(fn) if fn is not None else mark


def plain(module: str, name: str):
    """The uncompiled function ``name`` of kernel module ``module`` (it runs on
    Python floats, lists and tuples where numba is absent).

    The twin calls the plain twins of the marked functions it uses, also after
    :func:`load` has replaced them in their modules by compiled dispatchers (a
    dispatcher called from Python with floats and tuples costs microseconds)."""
    key = (module, name)
    twin = _twins.get(key)
    if twin is None:
        f = _plain[key]
        namespace = dict(f.__globals__)          # a copy: load() patches the module's
        twin = _twins[key] = types.FunctionType(f.__code__, namespace, f.__name__,
                                                f.__defaults__, f.__closure__)
        twin.__doc__ = f.__doc__
        for k, v in list(namespace.items()):
            other = _key.get(id(v))
            if other is not None:
                namespace[k] = plain(*other)
    return twin


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
    # the lazy dispatchers first, bound in every kernel module; then the entry
    # points with one signature, which numba compiles at once (their callees must
    # be dispatchers by then)
    for eager in (False, True):
        dispatchers = {}
        for module, name, inline, signature in _marked:
            if (signature is not None) != eager:
                continue
            fn = _plain[(module, name)]
            dispatchers[id(fn)] = compiled = _compile(numba, fn, inline, signature)
            _key[id(compiled)] = (module, name)
            _kept.append(compiled)
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
