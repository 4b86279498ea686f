# Emulates kernels/gemm_skinny.cu's tensor-core skinny-N kernel (skinny_ntc<T, NT, R, H>, session
# 42) lane by lane and compares with A @ B (float64), for every entry's (NT, R, H) and for shapes
# with partial row groups, K splits, K not a multiple of the step, and N below the tile. It models
#   * A's loads: lane (g, t) of warp w takes 8 elements of rows row0 + 16r + 8rr + g at
#     k0 + 32h + 8t (zeros past M or the split's end),
#   * the staged B (N == NT): physical row pr of the step to tile 2h + ss, row L = 2tt + i + 8hi
#     of bs, and ldmatrix.x2/x4.trans handing lane (g, t) stored rows 2t, 2t+1 (matrix 0) and
#     8 + 2t, 8 + 2t + 1 (matrix 1) of column g (+8 for the second n-tile),
#   * the unstaged B (N < NT): each lane's scalar gathers for its k pairs,
#   * the m16n8k16 row.col fragments (a0..a3 from 32-bit words 2s, 2s + 1 of each 16 bytes),
#   * the accumulators (c0, c1 at row g, columns 2t, 2t + 1; c2, c3 at row g + 8), the four
#     warps' sum in warp order, and the split-K partials added in split order.
# No GPU: `python3 kernels/dev/ntc_emu.py` (numpy). It checks the indexing as written in the
# kernel, not the hardware; the device runs of session 42 checked the kernel itself
# (docs/kernels/session42). A wrong permutation of B's rows or a wrong fragment word fails it.
import sys

import numpy as np

WARPS = 4
ENTRIES = [(8, 1, 4), (8, 1, 8), (8, 2, 2), (8, 2, 4), (16, 1, 2), (16, 2, 2)]


def ceil_div(a, b):
    return -(-a // b)


def mma(acc, a, b):
    """acc[lane] (4 floats) += A·B for m16n8k16 with lane-held fragments: a[lane] = 4 pairs
    (a0..a3 as in PTX: rows g, g+8, g, g+8; k pairs 2t.., 2t.., 2t+8.., 2t+8..), b[lane] = 2 pairs
    (k rows 2t.., 2t+8..; column g)."""
    Am = np.zeros((16, 16))
    Bm = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for q, (row, kk) in enumerate([(g, 2 * t), (g + 8, 2 * t), (g, 2 * t + 8), (g + 8, 2 * t + 8)]):
            Am[row, kk:kk + 2] = a[lane][q]
        for q, kk in enumerate([2 * t, 2 * t + 8]):
            Bm[kk:kk + 2, g] = b[lane][q]
    D = Am @ Bm
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        acc[lane] += [D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1]]


def cta(A, B, M, N, K, NT, R, H, gx_i, kbeg, kend):
    """One CTA's partial tile (16R x NT) as the kernel sums it."""
    NJ = NT // 8
    STEP = 32 * H
    row0 = gx_i * 16 * R
    staged = N == NT
    red = np.zeros((WARPS, 16 * R, NT))
    for warp in range(WARPS):
        acc = np.zeros((R, NJ, 32, 4))
        k0 = kbeg + warp * STEP
        while k0 < kend:
            # A: a[lane][r][rr][h] = 8 values.
            a = np.zeros((32, R, 2, H, 8))
            for lane in range(32):
                g, t = lane >> 2, lane & 3
                for r in range(R):
                    for rr in range(2):
                        row = row0 + 16 * r + 8 * rr + g
                        for h in range(H):
                            k = k0 + 32 * h + 8 * t
                            for e in range(8):
                                if row < M and k + e < kend:
                                    a[lane, r, rr, h, e] = A[row, k + e]
            # B fragments b[lane][j][h][p] = pair.
            b = np.zeros((32, NJ, H, 4, 2))
            if staged:
                bs = np.zeros((2 * H, 16, NT))
                for q in range(NT * H // 8):
                    for lane in range(32):
                        idx = lane + 32 * q
                        pr, c = idx // (NT // 8), idx % (NT // 8)
                        h, tt, w = pr >> 5, (pr >> 3) & 3, pr & 7
                        ss, hi, i = w >> 2, (w >> 1) & 1, w & 1
                        L = 2 * tt + i + 8 * hi
                        v = B[k0 + pr, 8 * c:8 * c + 8] if k0 + pr < kend else np.zeros(8)
                        bs[2 * h + ss, L, 8 * c:8 * c + 8] = v
                for h in range(H):
                    for ss in range(2):
                        # ldmatrix .trans: matrix q (lanes 8q..8q+7 give its row addresses) is
                        # rows 8(q & 1).. of columns 8((q >> 1) % NJ)..; lane (g, t) receives its
                        # stored rows 2t, 2t + 1 at column g.
                        for lane in range(32):
                            g, t = lane >> 2, lane & 3
                            for q in range(2 * NJ):
                                rows = [8 * (q & 1) + 2 * t, 8 * (q & 1) + 2 * t + 1]
                                col = 8 * ((q >> 1) % NJ) + g
                                pair = [bs[2 * h + ss, rows[0], col], bs[2 * h + ss, rows[1], col]]
                                j, which = q >> 1, q & 1
                                b[lane, j, h, 2 * ss + which] = pair
            else:
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    for j in range(NJ):
                        n = 8 * j + g
                        for h in range(H):
                            for p in range(4):
                                k = k0 + 32 * h + 8 * t + 2 * p
                                lo = B[k, n] if n < N and k < kend else 0.0
                                hi = B[k + 1, n] if n < N and k + 1 < kend else 0.0
                                b[lane, j, h, p] = [lo, hi]
            for r in range(R):
                for h in range(H):
                    for s in range(2):
                        for j in range(NJ):
                            af = [[a[ln, r, 0, h, 4 * s:4 * s + 2], a[ln, r, 1, h, 4 * s:4 * s + 2],
                                   a[ln, r, 0, h, 4 * s + 2:4 * s + 4], a[ln, r, 1, h, 4 * s + 2:4 * s + 4]]
                                  for ln in range(32)]
                            bf = [[b[ln, j, h, 2 * s], b[ln, j, h, 2 * s + 1]] for ln in range(32)]
                            mma(acc[r, j], af, bf)
            k0 += WARPS * STEP
        for r in range(R):
            for j in range(NJ):
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    red[warp, 16 * r + g, 8 * j + 2 * t:8 * j + 2 * t + 2] = acc[r, j, lane, :2]
                    red[warp, 16 * r + g + 8, 8 * j + 2 * t:8 * j + 2 * t + 2] = acc[r, j, lane, 2:]
    out = np.zeros((16 * R, NT))
    for w in range(WARPS):
        out += red[w]
    return out


def run(M, N, K, NT, R, H, splits, seed):
    rng = np.random.default_rng(seed)
    A = rng.integers(-8, 8, (M, K)).astype(float) / 8
    B = rng.integers(-8, 8, (K, N)).astype(float) / 8
    B_pad = np.zeros((K + 32 * H * WARPS, max(N, NT)))  # reads past K are guarded; room anyway
    B_pad[:K, :N] = B
    span = WARPS * 32 * H
    kchunk = ceil_div(ceil_div(K, splits), span) * span
    splits = ceil_div(K, kchunk)
    gx = ceil_div(M, 16 * R)
    C = np.zeros((M, N))
    for x in range(gx):
        part = np.zeros((16 * R, NT))
        for y in range(splits):  # partials added in split order
            part += cta(A, B_pad, M, N, K, NT, R, H, x, y * kchunk, min(K, (y + 1) * kchunk))
        rows = slice(16 * R * x, min(M, 16 * R * (x + 1)))
        C[rows] = part[:rows.stop - rows.start, :N]
    want = A @ B
    err = np.abs(C - want).max()
    return err


def main():
    cases = []
    for (NT, R, H) in ENTRIES:
        nmax = NT
        for (M, N, K, splits) in [(16 * R, nmax, 4 * 32 * H, 1),           # one step per warp
                                  (16 * R + 5, nmax, 4 * 32 * H * 2 + 40, 2),  # partial row group, split, short tail
                                  (16 * R * 2 - 3, nmax - 3, 4 * 32 * H + 24, 1),  # N below the tile (unstaged)
                                  (7, 1, 40, 1)]:                         # fewer rows than a tile, K < step
            cases.append((M, N, K, NT, R, H, splits))
    bad = 0
    for i, c in enumerate(cases):
        err = run(*c, seed=i)
        ok = err < 1e-9
        bad += not ok
        print(f"NT {c[3]:2d} R {c[4]} H {c[5]}  {c[0]:4d}x{c[1]:2d}x{c[2]:5d} splits {c[6]}: max |err| {err:.1e} {'ok' if ok else 'FAIL'}")
    print("all ok" if not bad else f"{bad} FAILED")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
