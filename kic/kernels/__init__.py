"""kic's numeric kernels (internal): each algorithm once, in a compiled (numba) and a
numpy form side by side, with a parity test per function in ``tests/test_kernels.py``.

* :mod:`kic.kernels.jit` -- the one lazy numba registry (numba is imported on first use);
* :mod:`kic.kernels.linalg` -- THE symmetric positive definite solve and its singularity
  rule, LU with partial pivoting, the 2-norm condition number (one definition, made
  dimensionless by a characteristic length), small inverses.

Nothing here is public API: the library's modules call these, users call the library.
"""
