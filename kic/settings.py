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
    "INERTIA_RTOL", "TINY", "PARALLEL_SINE", "WRITER_RTOL", "MOTOR_CONSTANT_RTOL",
    "MAX_ELECTRICAL_TIME_CONSTANT", "MAX_TRAVEL_PER_MOTOR_RADIAN", "IMPLAUSIBLE_CURRENT_FACTOR",
    "BRIDGE_CONDITION", "CROSSING_RTOL", "LANDING_TOLERANCE", "RIGID_RTOL", "ZERO_NORM",
    "COINCIDENT_RTOL", "NULLSPACE_RTOL", "INTEGRATION_RTOL", "INTEGRATION_ATOL",
    "SAME_FRAME_ATOL", "STRUCTURE_RTOL", "GAUSS_NEWTON_RCOND", "BATCH_WORK_BYTES",
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

# ------------------------------------------------------------------ geometry
PARALLEL_SINE = 1e-9
"""Two unit axes whose cross product (the sine of the angle between them) is
shorter than this are parallel to the precision of a model's input (a few
nanoradians; axes written to 9 digits in a file still count): a cone limit on two
such axes needs its reference axis given; a planar mechanism's MJCF export; the
gimbal lock of URDF's roll-pitch-yaw angles."""

# ------------------------------------------------------------- design batches
WRITER_RTOL = 1e-12
"""A design writer's numbers must equal its builder's model's to this fraction
of each field's largest entry (round-off of another order of operations is
accepted; a writer that drifts from the builder is not)."""

# ------------------------------------------------------------------- drives
MOTOR_CONSTANT_RTOL = 0.05
"""In SI units a DC motor's torque constant (N m/A) and back-EMF constant
(V s/rad) are one number; datasheets round them a little, so a larger relative
difference is taken as a unit slip (mN m/A, V/krpm) and warned about."""

MAX_ELECTRICAL_TIME_CONSTANT = 0.1
"""Armature time constant L/R (s) above which an inductance is taken as a unit
slip (mH read as H): brushed DC motors have 0.01-10 ms."""

MAX_TRAVEL_PER_MOTOR_RADIAN = 1.0
"""Travel (m) of a prismatic joint per motor radian above which a drive train
is taken as a unit slip (a screw's lead given as the gear ratio): a 5 mm screw
gives 0.0008 m/rad, a 0.1 m pulley 0.1 m/rad."""

IMPLAUSIBLE_CURRENT_FACTOR = 10.0
"""A nominal current this many times a motor's rating (its current limit, else
its stall current at the voltage limit) is reported as a likely unit mistake,
whatever ``on_limit`` says: no drive runs there, even briefly."""

BRIDGE_CONDITION = 1e4
"""Where no set of joint coordinates does better than this dimensionless
condition number, a closed model's simulation takes the motion across the
singular configuration of the mechanism ahead (closer in, a state in joint
coordinates carries errors amplified by the condition)."""

CROSSING_RTOL = 1e-6
"""A crossing of a singular configuration by the motion's Taylor expansion is
accepted when the closure corrects the expansion's rates by at most this
fraction of the speed, and the energy changes by at most this fraction of the
energy (beyond it the motion turned sharply: it did not follow the expansion)."""

LANDING_TOLERANCE = 1e3 * CLOSURE_TOLERANCE
"""Closure residual a point put back on the closure after a crossing (minimum-norm
Gauss-Newton over every joint) must reach: projection from a point off the
closure stops on a looser residual than Newton in independent coordinates."""

# --------------------------------------------------------- descriptions, input
RIGID_RTOL = 1e-9
"""A 4x4 transform is rigid when ``R^T R = 1`` and its last row is ``0 0 0 1`` to
this (rotations written to 9 digits in a file or a script pass; a shear does not)."""

ZERO_NORM = 1e-12
"""A direction (a joint axis, a design direction) given with a norm below this is
zero: directions carry no units, and one this short has lost its digits."""

COINCIDENT_RTOL = 1e-12
"""Two points closer than this fraction of the drawing's extent are one point
(a picture joins them)."""

NULLSPACE_RTOL = 1e-10
"""Singular values of an actuation Jacobian below this fraction of the largest
span its null space, the internal loads of an over-actuated mechanism (above
rounding of a Jacobian assembled to the closure tolerance)."""

# --------------------------------------------------------------- simulation
INTEGRATION_RTOL = 1e-9
"""Default relative tolerance of :func:`kic.simulate` (energy drift of 1e-8 over
10 s of a falling five-bar)."""

INTEGRATION_ATOL = 1e-11
"""Default absolute tolerance of :func:`kic.simulate` (rad, m, rad/s, m/s)."""

# ------------------------------------------------------ loops and closed plans
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

# ------------------------------------------------------------------ memory
BATCH_WORK_BYTES = 2 ** 28
"""Temporary memory (bytes) of one block of a large batch on a closed model's numpy
path: a batch is evaluated in blocks of this many bytes over an upper estimate of
one configuration's (:meth:`kic.closed_eval.NumpyEvaluation.bytes_per_pose`), so that
a batch of any size stays within 1 GB beyond its outputs (a quarter of it: numpy's
allocator keeps some of a block's memory, and the outputs grow alongside)."""

# --------------------------------------------------------- serial-chain kernels
ABA_MIN_JOINTS = 20
"""Serial chains of at least this many joints take forward dynamics by the O(M)
articulated-body recursion instead of forming and factoring I* (O(M^2) + O(M^3)):
measured crossovers (benchmarks/long_chains.py) about 20 joints compiled, 10 for
numpy batches, 35 for one configuration in Python floats; one threshold between them."""
__all__ += ["ABA_MIN_JOINTS"]

# ------------------------------------------------------------ small numeric choices
TYPE_TWO_INVERSE_CONDITION = 1e-8
"""point_conditioning: below this inverse condition of the joint-space Jacobian G the
type II (actuation) side is undetermined (a type I singularity hides it)."""
CONDITION_PREFILTER = 1e-2
"""Design sensitivities: poses whose actuation Jacobian's 2-norm condition number is
below this fraction of the model's max_condition skip the model's own (costlier)
singularity check; the others get it, so the one rule decides."""
DIFFERENCE_STEP = 1e-7
"""Central-difference step of the MJCF export's solve for joint offsets: truncation
~step^2 and round-off ~eps/step are both ~1e-9 of the unit there."""
__all__ += ["TYPE_TWO_INVERSE_CONDITION", "CONDITION_PREFILTER", "DIFFERENCE_STEP"]

# ------------------------------------------------------------ simulation (crossings)
LAST_RESORT_CROSSING_RTOL = 1e-4
"""A pass of a singular configuration that neither the Taylor crossing (within
CROSSING_RTOL) nor the integration in every joint value (its energy check) carries is
crossed by the expansion when the closure corrects its rates by at most this fraction
of the speed: too near the singular configuration for the joint-space matrix, no
coordinates regular there, the expansion is the one model left (its energy is put back)."""
__all__ += ["LAST_RESORT_CROSSING_RTOL"]

# ------------------------------------------------------------ compiled one-pose calls
ONE_POSE_STACK_FLOATS = 8192
"""Work (float64) a compiled one-configuration call of a serial chain takes on the stack
instead of allocating it (64 KB, well inside any thread's stack): its inverse dynamics up
to 341 joints, 24 per joint; longer chains take the batch kernels."""
__all__ += ["ONE_POSE_STACK_FLOATS"]

# ------------------------------------------------------------ the compiled LSODA
# ODEPACK's own constants in DSTODA, as scipy's LSODA runs them (kept, so that
# kic.kernels.lsoda takes scipy's steps): the floor of |h| times the Lipschitz
# estimate in the Adams stability test, and the biases in the step ratios that
# the orders nq, nq - 1 and nq + 1 allow (1 / (1.2 d^(1/l) + 1.2e-6) and so on)
LSODA_PDH_FLOOR = 0.000001
LSODA_BIAS_SAME = 0.0000012
LSODA_BIAS_DOWN = 0.0000013
LSODA_BIAS_UP = 0.0000014
__all__ += ["LSODA_PDH_FLOOR", "LSODA_BIAS_SAME", "LSODA_BIAS_DOWN", "LSODA_BIAS_UP"]
