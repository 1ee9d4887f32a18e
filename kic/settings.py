"""kic's numeric settings, each named once with the reason for its value.

Every tolerance, iteration limit and threshold that decides an answer lives
here; modules import the name, never restate the number.  Dimensionless
values are relative to a scale named beside them (a matrix's own diagonal, a
model's characteristic length, the largest singular value), so that no rule
depends on the user's units.
"""
from __future__ import annotations

__all__ = [
    "CLOSURE_TOLERANCE", "NEWTON_MAX_ITERATIONS", "NEWTON_MAX_STEP", "EXACT_START",
    "SPD_PIVOT_RTOL", "MAX_CONDITION", "RANK_RTOL", "JACOBI_SWEEPS", "JACOBI_RTOL",
    "LANE_WIDTH", "FROBENIUS_MARGIN", "DEFAULT_GRAVITY", "SWITCH_CONDITION",
    "INERTIA_RTOL", "TINY",
]

# ---------------------------------------------------------------- loop closure
CLOSURE_TOLERANCE = 1e-12
"""Loop-closure residual at which Newton stops: rad for orientation rows, and
lengths divided by the model's characteristic length for position rows (a few
hundred ulps of a unit quantity: converged to rounding, not to a looser fit)."""

NEWTON_MAX_ITERATIONS = 60
"""Newton steps before a pose is reported as not assembled (quadratic
convergence needs < 10 from a good start; the rest is the damped approach from
a poor one)."""

NEWTON_MAX_STEP = 0.5
"""Largest Newton step in max-norm (rad, or lengths over the characteristic
length): a longer step is scaled down so that the iterate stays on the branch
of the start (an undamped step can jump to another assembly mode)."""

EXACT_START = 2e-15
"""A start whose residual is below this (about ten ulps) closes the loops to
rounding already: it is taken as it is, without a polishing Newton step that
could not move it."""

# ------------------------------------------------------------- singularities
SPD_PIVOT_RTOL = 1e-12
"""The one rule of kic's symmetric positive definite solves (I*, and every
Cholesky): the k-th pivot must exceed this fraction of its own diagonal entry.
The ratio is the squared sine of the angle between coordinate k and the span of
those before it, so the rule is independent of units and of coordinate scaling."""

MAX_CONDITION = 1e6
"""Dimensionless 2-norm condition number (lengths over the model's
characteristic length) at and above which a closure block or an actuation is
reported singular: beyond it a relative input error of 1e-10 (a good sensor)
becomes 1e-4 in the answer."""

RANK_RTOL = 1e-12
"""Relative singular value below which a general matrix is rank deficient to
rounding (the numerical floor under :data:`MAX_CONDITION`, for matrices with no
physical scale of their own)."""

JACOBI_SWEEPS = 60
"""Sweeps of one-sided Jacobi before a condition number is taken as it stands
(small matrices converge in 6-10; the bound only stops a NaN from looping)."""

JACOBI_RTOL = 1e-15
"""One-sided Jacobi rotates a pair of columns while their cosine exceeds this
(a few ulps): below it the pair is orthogonal to rounding."""

FROBENIUS_MARGIN = 4.0
"""Design lanes decide a block's singularity from the bound
``kappa_2 <= ||A||_F ||A^-1||_F <= n kappa_2`` when it is this factor away from
:data:`MAX_CONDITION`; only in between is the exact condition computed."""

# ------------------------------------------------------------------ kernels
LANE_WIDTH = 32
"""Poses evaluated side by side in vector lanes (design batches): the least
width at which the compiler vectorizes the lanes' loops (8 did not)."""

TINY = 1e-300
"""Floor for a scale used as a divisor (a zero scale means "no scale", and the
ratio it guards is then taken relative to 1)."""

# ------------------------------------------------------------------- models
DEFAULT_GRAVITY = 9.81
"""Gravity (m/s^2) of the built-in mechanisms, as in the published cases they
reproduce (not the standard 9.80665)."""

INERTIA_RTOL = 1e-9
"""Symmetry, positive semi-definiteness and the triangle inequality of an
inertia tensor are checked to this fraction of the tensor's largest entry
(round-off in files is accepted, a physical defect is not)."""

# --------------------------------------------------------------- simulation
SWITCH_CONDITION = 30.0
"""A closed model's simulation switches coordinates when their condition
number passes this (well before :data:`MAX_CONDITION`: the integrator's error
grows with the condition long before the model is singular)."""

# ------------------------------------------------- added with the closed kernels' split
SAME_FRAME_ATOL = 1e-12
"""Two open chains' copies of one joint are the same joint when their axes and
frames agree to this (unit vectors and rotations; m for origins): rounding of
the frames' products, not a design difference."""

STRUCTURE_RTOL = 1e-9
"""A mechanism's structure at its reference configuration (the rank of a
loop's closure rows and of the closure Jacobian, whether joint axes are
parallel, so a loop is planar): singular values, or sines of angles, below
this fraction of the largest are zero.  Looser than :data:`RANK_RTOL`: a
reference pose read from a file carries the rounding of its numbers."""

GAUSS_NEWTON_RCOND = 1e-10
"""The minimum-norm Gauss-Newton steps that assemble a reference
configuration drop singular values below this fraction of the largest (the
directions a redundant closure leaves free)."""
