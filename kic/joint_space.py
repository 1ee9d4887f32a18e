"""The closed mechanism in joint space: its open chains held together by the
closure, with Lagrange multipliers (every joint value a state, no independent
coordinates).  What :func:`kic.simulate` integrates where every set of
coordinates is poorly conditioned (a near pass), and a second formulation the
tests check the transferred model against."""
from __future__ import annotations

import numpy as np

from .errors import ModelError

__all__ = ["joint_space_dynamics"]


def joint_space_dynamics(model, phi, phid) -> tuple:
    """The mechanism ``model`` (a :class:`kic.ClosedModel`) as its open chains held
    together by the closure: the formulation with Lagrange multipliers, in every
    joint value, which needs no independent coordinates::

        M phi'' + b = J^T lambda,      J phi'' + c = 0

    at joint values and rates phi, phi' (..., N) (rad, m; rad/s, m/s).

    Returns
    -------
    M : ndarray (..., N, N)
        The sum of the open chains' I*, each in its own joints (kg m^2, kg): block
        diagonal where the chains share no joint; a chain without mass or
        rotational inertia (e.g. one that only leads to a cut joint) adds nothing.
    b : ndarray (..., N)
        The sum of the chains' velocity-product and gravity loads ``q'^T P* q' +
        T_gravity`` (N m, N); applied loads are not included.
    J : ndarray (..., R, N)
        The closure Jacobian (independent rows, as
        :meth:`kic.ClosedModel.closure_jacobian`).
    c : ndarray (..., R)
        The closure's velocity-product accelerations, ``J phi'' + c = 0`` along
        every motion.

    The compiled kernels answer where the model's evaluation is compiled
    (:func:`kic.kernels.closed.joint_space`: the tree's composite rigid bodies
    and Newton-Euler pass, a five-bar pose in microseconds), the open chains'
    numpy models otherwise (the same numbers to rounding).
    """
    phi = np.asarray(phi, dtype=float)
    phid = np.asarray(phid, dtype=float)
    if phi.shape[-1:] != (model.N,) or phid.shape != phi.shape:
        raise ModelError(f"phi and phid must have the same shape (..., {model.N}), got "
                         f"{phi.shape} and {phid.shape}")
    batch = phi.shape[:-1]
    P, V = phi.reshape(-1, model.N), phid.reshape(-1, model.N)
    compiled = model.evaluation.joint_space(P, V)
    M, b, J, c = _numpy_joint_space(model, P, V) if compiled is None else compiled
    R = J.shape[1]
    return (M.reshape(batch + (model.N, model.N)), b.reshape(batch + (model.N,)),
            J.reshape(batch + (R, model.N)), c.reshape(batch + (R,)))


def _numpy_joint_space(model, P: np.ndarray, V: np.ndarray) -> tuple:
    """:func:`joint_space_dynamics` at joint values and rates P, V (n, N) from the
    open chains' numpy models: (M, b, J, c) batch-first."""
    n = P.shape[0]
    M = np.zeros((n, model.N, model.N))
    b = np.zeros((n, model.N))
    for chain, idx in model.open_chains:
        if not chain.has_inertia:          # carries nothing: zero rows, as its energy
            continue
        dyn = chain.dynamics(P[:, idx])
        # chains share their trunk where one body closes several loops (each body's
        # mass is in one chain): their terms add
        M[:, idx[:, None], idx[None, :]] += dyn.I_star
        b[:, idx] += dyn.velocity_term(V[:, idx]) + dyn.gravity_load
    rows, kins = model.system.rows(P, 2, residual=False)
    J = (np.concatenate([model.system.loop_matrix(li, rw, n)
                         for li, rw in zip(model.system.loops, rows)], axis=1)
         if rows else np.zeros((n, 0, model.N)))
    c = (np.concatenate(model.system.bias(rows, kins, V, P, {}), axis=1)
         if rows else np.zeros((n, 0)))
    return M, b, J, c
