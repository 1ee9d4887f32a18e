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
to the package), entry points with a signature included (:class:`_Entry`).
Functions that only compiled code calls can go without the wrappers of calls
from Python (:func:`compiled_callers_only`); functions that allocate nothing can
go without reference counting (``jit(bare=True)``), their work on the stack
(:func:`stack_vector`) and in views made without a slice's and a reshape's code
(:func:`view`), two intrinsics that ``load`` binds like the marked functions.
"""
from __future__ import annotations

import importlib.util
import sys
import types
import warnings

__all__ = ["available", "compiled_callers_only", "jit", "load", "plain", "stack_vector", "view"]

available = importlib.util.find_spec("numba") is not None
"""numba is installed (imported, and kernels compiled, on first use)."""

_marked: list[tuple[str, str, bool, str | None]] = []   # module, name, inline, signature
_plain: dict[tuple[str, str], object] = {}              # the uncompiled functions
_key: dict[int, tuple[str, str]] = {}    # id of a marked function or its dispatcher -> key
_kept: list = []                         # ... which stay alive, so that no id is reused
_twins: dict[tuple[str, str], object] = {}              # plain(): bound to plain twins
_callers_only: set[tuple[str, str]] = set()             # compiled without a Python wrapper
_bare: set[tuple[str, str]] = set()      # compiled without NRT (entry points: the GIL held)
_loaded = False


def _compile(numba, fn, inline: bool, signature: str | None):
    # reference counting set, not left to numba: a function it leaves unset takes
    # the setting of the compilation that first reaches it, so one first compiled
    # from a bare caller's would lose it (and one that allocates fail to compile,
    # on a first use that happens to take that path)
    options = dict(cache=True, nogil=True, error_model="numpy", _nrt=True)
    if (fn.__module__, fn.__name__) in _bare:
        # it allocates nothing (work on the stack, stack_vector): array arguments are
        # unboxed without a reference-counted wrapper each, and a call of a
        # microsecond does not release and take back the GIL (0.16 us a call)
        options.update(_nrt=False, nogil=False)
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
    if (fn.__module__, fn.__name__) in _callers_only and not inline:
        # no wrappers for calls from Python (they unbox every argument: a fifth to a
        # half of a stage's code, compiled at first use and never run)
        targetoptions = dict(nopython=True, nogil=True, error_model="numpy", _nrt=True,
                             inline="never", no_cpython_wrapper=True, no_cfunc_wrapper=True)
        if (fn.__module__, fn.__name__) in _bare:
            targetoptions.update(_nrt=False)
        dispatcher = _callers_only_dispatcher()(fn, targetoptions=targetoptions)
        dispatcher.enable_caching()
        return dispatcher
    return numba.njit(inline="always" if inline else "never", **options)(fn)


_CallersOnly = None


def _callers_only_dispatcher():
    """The dispatcher class of :func:`compiled_callers_only` functions: a call
    from Python raises TypeError (their compiled code has no entry for it)."""
    global _CallersOnly
    if _CallersOnly is None:
        from numba.core.registry import CPUDispatcher

        class CallersOnly(CPUDispatcher):
            def __call__(self, *args, **kws):
                raise TypeError(f"{self.py_func.__module__}.{self.py_func.__name__} is "
                                "compiled for compiled callers only (call its plain "
                                "twin, kic.kernels.jit.plain, from Python)")

        _CallersOnly = CallersOnly
    return _CallersOnly


def jit(fn=None, *, inline: bool = False, signature: str | None = None, bare: bool = False):
    """Mark ``fn`` for compilation by :func:`load`.

    ``inline=True``: compiled into each caller (a call that passes array views
    costs more than a small helper's arithmetic).  ``signature``: the one
    numba signature of an entry point called straight from Python (only: it is
    compiled at its first call, see :class:`_Entry`).  ``bare=True`` (a function
    that allocates nothing and returns no array, an entry point's work in
    :func:`stack_vector`): compiled without numba's reference counting (an
    allocation in it fails to compile; its array arguments live as long as its
    caller's), so with less code and no atomic operation per array argument and
    per member of a named tuple it reads (a third of a closed model's simulation
    had gone to them), and an entry point without releasing the GIL: a fifth of a
    microsecond less per call from Python."""
    def mark(f):
        key = (f.__module__, f.__name__)
        if bare:
            _bare.add(key)
        _marked.append((*key, inline, signature))
        _plain[key] = f
        _key[id(f)] = key
        if _loaded:
            if signature is not None:
                compiled = _Entry(key, signature)
            else:
                import numba
                compiled = _compile(numba, f, inline, signature)
            _key[id(compiled)] = key
            _kept.append(compiled)
            return compiled
        return f
    return mark(fn) if fn is not None else mark


def compiled_callers_only(module: str, *, but: tuple[str, ...] = (),
                          only: tuple[str, ...] | None = None) -> None:
    """Compile the marked functions of kernel ``module`` -- but the ones named in
    ``but``, the inline ones and the entry points with a signature -- for
    compiled callers only: without the wrappers through which Python calls a
    compiled function (about a fifth of a stage's first compilation: a cold
    five-bar 1.5 s of CPU; a stage is compiled, once more, into each entry point
    that calls it, and only that copy runs).  Called at the end of the module
    (its functions are marked then); a Python call of such a function raises
    TypeError (its plain twin, :func:`plain`, runs from Python).  ``only``: these
    functions of the module and no other."""
    chosen = {(m, n) for m, n, inline, signature in _marked
              if m == module and n not in but and not inline and signature is None
              and (only is None or n in only)}
    _callers_only.update(chosen)
    if _loaded and chosen:
        # the module was imported after load(): its functions are dispatchers already
        import numba
        replacements = {}
        for key in chosen:
            compiled = _compile(numba, _plain[key], False, None)
            _key[id(compiled)] = key
            _kept.append(compiled)
            replacements[id(sys.modules[module].__dict__[key[1]])] = compiled
        _bind(replacements)


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


class _Entry:
    """An entry point with one signature (called from Python only), compiled -- or
    loaded from numba's cache -- at its first call, then bound in place of this
    stand-in in every kernel module: a first call compiles the entry points it
    reaches, not every entry point of kic."""

    __slots__ = ("key", "signature")

    def __init__(self, key, signature: str) -> None:
        self.key, self.signature = key, signature

    def compile(self):
        import numba
        compiled = _compile(numba, _plain[self.key], False, self.signature)
        _key[id(compiled)] = self.key
        _kept.append(compiled)
        _bind({id(self): compiled})
        return compiled

    def __call__(self, *args):
        return self.compile()(*args)

    @property
    def signatures(self) -> list:
        """The compiled signatures (compiles the entry point)."""
        return self.compile().signatures


def _bind(replacements: dict) -> None:
    """Every kernel module's names bound to a replaced object (a marked function, its
    own or imported, or an :class:`_Entry`) rebound to its replacement."""
    for module in {m for m, *_ in _marked}:
        namespace = sys.modules[module].__dict__
        for key, value in list(namespace.items()):
            new = replacements.get(id(value))
            if new is not None:
                namespace[key] = new


def load() -> bool:
    """Import numba and replace every marked function by its compiled dispatcher
    (compiled at its first call, or loaded from cache), every entry point with a
    signature by an :class:`_Entry` that compiles it at its first call.  False,
    with a warning, if numba is installed but cannot be imported (e.g. built for
    another numpy)."""
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
    replacements = {}
    for module, name, inline, signature in _marked:
        fn = _plain[(module, name)]
        if signature is None:
            compiled = _compile(numba, fn, inline, signature)
        else:
            compiled = _Entry((module, name), signature)
        _key[id(compiled)] = (module, name)
        _kept.append(compiled)
        replacements[id(fn)] = compiled
    for name, make in (("stack_vector", _stack_vector_intrinsic), ("view", _view_intrinsic)):
        compiled = make(numba)
        _key[id(compiled)] = (__name__, name)
        _kept.append(compiled)
        replacements[id(_plain[(__name__, name)])] = compiled
        globals()[name] = compiled       # for kernel modules imported from now on
    _bind(replacements)
    _loaded = True
    _install_notice()
    return True


def stack_vector(n):
    """``n`` uninitialized float64 as a 1-D array: in compiled code on the stack of
    the calling function, freed at its return (no allocation: a :func:`jit`
    ``bare`` entry point takes its work here; call it once per call, not in a
    loop, and keep ``n`` to kilobytes), in plain Python ``numpy.empty(n)``."""
    import numpy as np
    return np.empty(n)


_plain[(__name__, "stack_vector")] = stack_vector


def _stack_vector_intrinsic(numba):
    """The compiled :func:`stack_vector`: an ``alloca`` of n doubles as a C array."""
    from numba.core import types
    from numba.extending import intrinsic
    from numba.np.arrayobj import populate_array

    array_type = types.Array(types.float64, 1, "C")

    @intrinsic
    def stack_vector(typingctx, n):
        if not isinstance(n, types.Integer):
            return None

        def codegen(context, builder, sig, args):
            count = context.cast(builder, args[0], sig.args[0], types.intp)
            item = context.get_data_type(types.float64)
            data = builder.alloca(item, size=count)
            array = context.make_array(array_type)(context, builder)
            size = context.get_constant(types.intp, 8)
            populate_array(array, data=data, shape=[count], strides=[size], itemsize=size,
                           meminfo=None)
            return array._getvalue()

        return array_type(n), codegen

    return stack_vector


def view(w, start, shape):
    """The C-contiguous array of ``shape`` (a tuple of ints) that starts at
    ``w[start]`` in the 1-D C-contiguous ``w``: ``w[start:start + size].reshape(shape)``
    without its checks (compiled: a pointer and the strides, none of the code of a
    slice and a reshape, which cost a first compilation some 25 ms each); the caller
    keeps it inside ``w``."""
    size = 1
    for n in shape:
        size *= n
    return w[start:start + size].reshape(shape)


_plain[(__name__, "view")] = view


def _view_intrinsic(numba):
    """The compiled :func:`view`: a view sharing ``w``'s data and owner."""
    from numba.core import cgutils, types
    from numba.core.imputils import impl_ret_borrowed
    from numba.extending import intrinsic
    from numba.np.arrayobj import populate_array

    @intrinsic
    def view(typingctx, w, start, shape):
        if not (isinstance(w, types.Array) and w.ndim == 1 and w.layout == "C"
                and isinstance(start, types.Integer) and isinstance(shape, types.UniTuple)
                and isinstance(shape.dtype, types.Integer)):
            return None
        result = types.Array(w.dtype, shape.count, "C")

        def codegen(context, builder, sig, args):
            source_type, start_type, shape_type = sig.args
            source = context.make_array(source_type)(context, builder, args[0])
            offset = context.cast(builder, args[1], start_type, types.intp)
            dims = [context.cast(builder, n, shape_type.dtype, types.intp)
                    for n in cgutils.unpack_tuple(builder, args[2])]
            itemsize = context.get_constant(
                types.intp, context.get_abi_sizeof(context.get_data_type(w.dtype)))
            strides = [itemsize]
            for n in reversed(dims[1:]):
                strides.insert(0, builder.mul(strides[0], n))
            array = context.make_array(result)(context, builder)
            populate_array(array, data=builder.gep(source.data, [offset]), shape=dims,
                           strides=strides, itemsize=itemsize, meminfo=source.meminfo,
                           parent=source.parent)
            return impl_ret_borrowed(context, builder, result, array._getvalue())

        return result(w, start, shape), codegen

    return view


_noticed = False


def _install_notice() -> None:
    """One line on stderr when numba starts compiling a kernel (one missing from its
    cache: seconds, once per installation), for a user waiting for an answer.
    Loading from the cache raises no such event and costs nothing here."""
    try:
        from numba.core import event
    except ImportError:                  # an older numba: no notice
        return

    class Notice(event.Listener):
        def on_start(self, ev) -> None:
            global _noticed
            dispatcher = (ev.data or {}).get("dispatcher")
            module = getattr(getattr(dispatcher, "py_func", None), "__module__", "")
            if _noticed or not module.startswith(__package__):    # a kic kernel only
                return
            _noticed = True
            where = getattr(getattr(dispatcher, "_cache", None), "_cache_path", None)
            sys.stderr.write("kic: compiling kernels missing from numba's cache (seconds, "
                             "once" + (f"; cached in {where}" if where else "")
                             + "; KIC_BACKEND=numpy skips compilation)\n")

        def on_end(self, ev) -> None:
            pass

    event.register("numba:compile", Notice())
