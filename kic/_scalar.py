"""Single-configuration kernels in plain Python floats (internal).

A numpy call costs about a microsecond whatever its size, so a batched kernel
evaluated at one configuration spends its time in call overhead.  These
kernels run the same world-frame screw recursion as :mod:`kic.dynamics` with
Python floats (about 10 ns a flop in CPython 3.11), which makes a single
inverse dynamics call of a 6-joint arm take tens of microseconds.  The tests
check them against the batched kernels and the independent oracle.
"""
from __future__ import annotations

import math

__all__ = []


def _frames(data, q):
    """World screws and link frames: yields per joint (sw, sv, R, p)."""
    T = data.base
    out = []
    for j, (isR, O) in enumerate(data.joints):
        R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
        (o00, o01, o02, o03, o10, o11, o12, o13, o20, o21, o22, o23) = O
        b00 = R00 * o00 + R01 * o10 + R02 * o20
        b01 = R00 * o01 + R01 * o11 + R02 * o21
        b02 = R00 * o02 + R01 * o12 + R02 * o22
        b10 = R10 * o00 + R11 * o10 + R12 * o20
        b11 = R10 * o01 + R11 * o11 + R12 * o21
        b12 = R10 * o02 + R11 * o12 + R12 * o22
        b20 = R20 * o00 + R21 * o10 + R22 * o20
        b21 = R20 * o01 + R21 * o11 + R22 * o21
        b22 = R20 * o02 + R21 * o12 + R22 * o22
        rx = R00 * o03 + R01 * o13 + R02 * o23 + px
        ry = R10 * o03 + R11 * o13 + R12 * o23 + py
        rz = R20 * o03 + R21 * o13 + R22 * o23 + pz
        qj = q[j]
        if isR:
            c, s = math.cos(qj), math.sin(qj)
            T = (c * b00 + s * b01, c * b01 - s * b00, b02,
                 c * b10 + s * b11, c * b11 - s * b10, b12,
                 c * b20 + s * b21, c * b21 - s * b20, b22, rx, ry, rz)
            sw = (b02, b12, b22)
            sv = (ry * b22 - rz * b12, rz * b02 - rx * b22, rx * b12 - ry * b02)
        else:
            T = (b00, b01, b02, b10, b11, b12, b20, b21, b22,
                 rx + qj * b02, ry + qj * b12, rz + qj * b22)
            sw = (0.0, 0.0, 0.0)
            sv = (b02, b12, b22)
        out.append((sw, sv, T))
    return out


def inverse_dynamics(data, q, qd, qdd, gravity=True):
    """Joint loads (list of M floats) of one configuration, incl. gravity."""
    screws = _frames(data, q)
    wx = wy = wz = vx = vy = vz = awx = awy = awz = 0.0
    if gravity:
        avx, avy, avz = -data.gravity[0], -data.gravity[1], -data.gravity[2]
    else:
        avx = avy = avz = 0.0
    wrenches = []
    for j, (sw, sv, T) in enumerate(screws):
        m, (cx0, cy0, cz0), I = data.links[j]
        swx, swy, swz = sw
        svx, svy, svz = sv
        u, ud = qd[j], qdd[j]
        wx += swx * u; wy += swy * u; wz += swz * u
        vx += svx * u; vy += svy * u; vz += svz * u
        # d/dt of the joint screw is (w x sw, w x sv + v x sw)
        awx += swx * ud + (wy * swz - wz * swy) * u
        awy += swy * ud + (wz * swx - wx * swz) * u
        awz += swz * ud + (wx * swy - wy * swx) * u
        avx += svx * ud + (wy * svz - wz * svy + vy * swz - vz * swy) * u
        avy += svy * ud + (wz * svx - wx * svz + vz * swx - vx * swz) * u
        avz += svz * ud + (wx * svy - wy * svx + vx * swy - vy * swx) * u
        R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
        cx = R00 * cx0 + R01 * cy0 + R02 * cz0 + px
        cy = R10 * cx0 + R11 * cy0 + R12 * cz0 + py
        cz = R20 * cx0 + R21 * cy0 + R22 * cz0 + pz
        # centroid velocity and acceleration
        ux = vx + wy * cz - wz * cy
        uy = vy + wz * cx - wx * cz
        uz = vz + wx * cy - wy * cx
        Fx = m * (avx + awy * cz - awz * cy + wy * uz - wz * uy)
        Fy = m * (avy + awz * cx - awx * cz + wz * ux - wx * uz)
        Fz = m * (avz + awx * cy - awy * cx + wx * uy - wy * ux)
        # Euler's equation in link axes
        wlx = R00 * wx + R10 * wy + R20 * wz
        wly = R01 * wx + R11 * wy + R21 * wz
        wlz = R02 * wx + R12 * wy + R22 * wz
        alx = R00 * awx + R10 * awy + R20 * awz
        aly = R01 * awx + R11 * awy + R21 * awz
        alz = R02 * awx + R12 * awy + R22 * awz
        I00, I01, I02, I11, I12, I22 = I
        hx = I00 * wlx + I01 * wly + I02 * wlz
        hy = I01 * wlx + I11 * wly + I12 * wlz
        hz = I02 * wlx + I12 * wly + I22 * wlz
        nx = I00 * alx + I01 * aly + I02 * alz + wly * hz - wlz * hy
        ny = I01 * alx + I11 * aly + I12 * alz + wlz * hx - wlx * hz
        nz = I02 * alx + I12 * aly + I22 * alz + wlx * hy - wly * hx
        wrenches.append((Fx, Fy, Fz,
                         cy * Fz - cz * Fy + R00 * nx + R01 * ny + R02 * nz,
                         cz * Fx - cx * Fz + R10 * nx + R11 * ny + R12 * nz,
                         cx * Fy - cy * Fx + R20 * nx + R21 * ny + R22 * nz))
    tau = [0.0] * len(screws)
    fx = fy = fz = nx = ny = nz = 0.0
    for j in range(len(screws) - 1, -1, -1):
        Fx, Fy, Fz, Nx, Ny, Nz = wrenches[j]
        fx += Fx; fy += Fy; fz += Fz
        nx += Nx; ny += Ny; nz += Nz
        (swx, swy, swz), (svx, svy, svz), _ = screws[j]
        tau[j] = swx * nx + swy * ny + swz * nz + svx * fx + svy * fy + svz * fz
    return tau


def inertia(data, q):
    """I* (list of M lists) of one configuration by composite inertias."""
    screws = _frames(data, q)
    M = len(screws)
    # running composite mass, first moment and rotational inertia about the origin
    S0 = 0.0
    S1x = S1y = S1z = 0.0
    J00 = J01 = J02 = J11 = J12 = J22 = 0.0
    cols = [None] * M
    for j in range(M - 1, -1, -1):
        sw, sv, T = screws[j]
        m, (cx0, cy0, cz0), I = data.links[j]
        R00, R01, R02, R10, R11, R12, R20, R21, R22, px, py, pz = T
        cx = R00 * cx0 + R01 * cy0 + R02 * cz0 + px
        cy = R10 * cx0 + R11 * cy0 + R12 * cz0 + py
        cz = R20 * cx0 + R21 * cy0 + R22 * cz0 + pz
        I00, I01, I02, I11, I12, I22 = I
        # A = R I (rows), world inertia = A R^T
        a00 = R00 * I00 + R01 * I01 + R02 * I02
        a01 = R00 * I01 + R01 * I11 + R02 * I12
        a02 = R00 * I02 + R01 * I12 + R02 * I22
        a10 = R10 * I00 + R11 * I01 + R12 * I02
        a11 = R10 * I01 + R11 * I11 + R12 * I12
        a12 = R10 * I02 + R11 * I12 + R12 * I22
        a20 = R20 * I00 + R21 * I01 + R22 * I02
        a21 = R20 * I01 + R21 * I11 + R22 * I12
        a22 = R20 * I02 + R21 * I12 + R22 * I22
        cc = cx * cx + cy * cy + cz * cz
        J00 += a00 * R00 + a01 * R01 + a02 * R02 + m * (cc - cx * cx)
        J01 += a00 * R10 + a01 * R11 + a02 * R12 - m * cx * cy
        J02 += a00 * R20 + a01 * R21 + a02 * R22 - m * cx * cz
        J11 += a10 * R10 + a11 * R11 + a12 * R12 + m * (cc - cy * cy)
        J12 += a10 * R20 + a11 * R21 + a12 * R22 - m * cy * cz
        J22 += a20 * R20 + a21 * R21 + a22 * R22 + m * (cc - cz * cz)
        S0 += m
        S1x += m * cx; S1y += m * cy; S1z += m * cz
        (ax, ay, az), (tx, ty, tz) = sw, sv
        # composite momentum of a unit rate of joint j: f = S0 t - S1 x a, n = J a + S1 x t
        fx = S0 * tx - (S1y * az - S1z * ay)
        fy = S0 * ty - (S1z * ax - S1x * az)
        fz = S0 * tz - (S1x * ay - S1y * ax)
        nx = J00 * ax + J01 * ay + J02 * az + S1y * tz - S1z * ty
        ny = J01 * ax + J11 * ay + J12 * az + S1z * tx - S1x * tz
        nz = J02 * ax + J12 * ay + J22 * az + S1x * ty - S1y * tx
        cols[j] = (fx, fy, fz, nx, ny, nz)
    out = [[0.0] * M for _ in range(M)]
    for n in range(M):
        fx, fy, fz, nx, ny, nz = cols[n]
        for k in range(n + 1):
            (ax, ay, az), (tx, ty, tz), _ = screws[k]
            x = ax * nx + ay * ny + az * nz + tx * fx + ty * fy + tz * fz
            out[k][n] = x
            out[n][k] = x
    return out


def cholesky_solve(A, b):
    """Solve A x = b for a small SPD A (lists); None if not positive definite."""
    M = len(b)
    L = [row[:] for row in A]
    dmax = max(A[i][i] for i in range(M))
    for k in range(M):
        Lk = L[k]
        d = Lk[k]
        for t in range(k):
            d -= Lk[t] * Lk[t]
        if not d > 1e-14 * dmax:
            return None
        d = math.sqrt(d)
        Lk[k] = d
        for i in range(k + 1, M):
            Li = L[i]
            x = Li[k]
            for t in range(k):
                x -= Li[t] * Lk[t]
            Li[k] = x / d
    x = list(b)
    for i in range(M):
        Li = L[i]
        v = x[i]
        for t in range(i):
            v -= Li[t] * x[t]
        x[i] = v / Li[i]
    for i in range(M - 1, -1, -1):
        v = x[i]
        for t in range(i + 1, M):
            v -= L[t][i] * x[t]
        x[i] = v / L[i][i]
    return x


class ScalarData:
    """The constants of a chain as Python floats, built once per chain."""

    __slots__ = ("base", "joints", "links", "gravity")

    def __init__(self, chain) -> None:
        B = chain.base
        self.base = tuple(float(x) for x in (*B[0, :3], *B[1, :3], *B[2, :3], *B[:3, 3]))
        self.joints = [(bool(chain.is_revolute[j]),
                        tuple(float(x) for x in chain._origin_z[j][:3].ravel()))
                       for j in range(chain.dof)]
        self.links = []
        for j in range(chain.dof):
            I = chain._inertia[j]
            self.links.append((float(chain.masses[j]), tuple(float(x) for x in chain._com[j]),
                               (float(I[0, 0]), float(I[0, 1]), float(I[0, 2]),
                                float(I[1, 1]), float(I[1, 2]), float(I[2, 2]))))
        self.gravity = tuple(float(x) for x in chain.gravity)
