"""kic's numeric kernels (internal): each algorithm once, in a compiled (numba) and a
numpy form side by side, with a parity test per function in ``tests/test_kernels.py``.

* :mod:`kic.kernels.jit` -- the one lazy numba registry (numba is imported on first use);
* :mod:`kic.kernels.linalg` -- THE symmetric positive definite solve and its singularity
  rule, LU with partial pivoting, the 2-norm condition number (one definition, made
  dimensionless by a characteristic length), small inverses;
* :mod:`kic.kernels.frames` -- frames: Rodrigues' rotation, a joint's motion, the
  serial joint step, a chain's or a tree's link frames and joint screws;
* :mod:`kic.kernels.rnea` -- joint loads by the Newton-Euler recursion in world
  coordinates (link motion, link wrenches), on a chain and on a tree;
* :mod:`kic.kernels.inertia` -- I*, P* and the gravity load by composite sums, on a
  chain and on a tree (one zero-mass convention: a massless body's rotational
  inertia counts);
* :mod:`kic.kernels.articulated` -- forward dynamics of a serial chain in O(M) by
  articulated-body inertias (long chains, from :data:`kic.settings.ABA_MIN_JOINTS` on);
* :mod:`kic.kernels.serial_numba`, :mod:`kic.kernels.serial_numpy` -- the two kernel
  sets of serial chains that :func:`kic.backend.kernels` chooses between (drivers over
  the modules above, the same names and signatures);
* :mod:`kic.kernels.layout` -- the one table of each flat buffer of a closed model
  (packing, numpy views and the compiled unpacking by name are derived from it);
* :mod:`kic.kernels.closed_pose` -- a closed model's pose, stage by stage (assembly,
  transfer, rates, Newton-Euler over the tree, I*, actuator loads) and its one
  compiled entry (one pose, or a batch); :mod:`kic.kernels.closed_lanes` -- design
  batches, poses side by side in vector lanes; :mod:`kic.kernels.integrator` -- the
  DOP853 stepper of free motion; :mod:`kic.kernels.closed` -- their Python entry points.

Nothing here is public API: the library's modules call these, users call the library.
"""
