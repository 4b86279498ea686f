# Emulates kernels/gemm_mtc.cu's index math lane by lane and compares with A @ B (float64): the
# session-41 kernel (one CTA per 64 columns over all of K, 8 warps, A staged as [m][k] 16-bit rows,
# B's per-warp stages of 16 rows x 128 bytes stored with chunk c of row r at c ^ (r & 7)). It models
#   * the cp.async stores of B (lane l: chunk l % 8 of stage rows l / 8 + 4j, zero past K or N),
#   * the ldmatrix.x4.trans row addresses (lanes 8q..8q+7 give matrix q's rows; lane (g, t)
#     receives stored elements [2t][g] and [2t+1][g] of each 8x8 matrix),
#   * the m16n8k16 row.col fragments (B^T as the A operand, A's rows g < M as the B operand),
#   * the accumulator-to-output mapping and the warp-order sum.
# No GPU: `python3 kernels/dev/mtc_emu.py` (numpy). It checks the indexing as written in the kernel,
# not the hardware; the device runs of session 41 checked the kernel itself (docs/kernels/session41).
# (Session 19's version modelled the kernel this one replaced: 128-column strips, global split-K.)
import numpy as np

W, WARPS, GROUP, ROWB = 64, 8, 128, 128


def stage_store(B, k0, col0, K, N):
    """One warp's stage (16 rows from k0) as the swizzled byte-addressed array the kernel
    writes: a dict offset -> 8 values (one 16-byte chunk)."""
    st = {}
    for lane in range(32):
        chunk, row0 = lane % 8, lane // 8
        for j in range(4):
            r = row0 + 4 * j
            row, col = k0 + r, col0 + chunk * 8
            vals = np.zeros(8)
            if row < K and col < N:  # N % 8 == 0: a chunk is all in or all out
                vals = B[row, col:col + 8].copy()
            st[r * ROWB + ((chunk ^ (r & 7)) << 4)] = vals
    return st


def ldmatrix_x4_trans(st, j):
    """The four 8x8 matrices of columns 16j..16j+15 as each lane receives them: a[lane][q] =
    (elements [2t][g], [2t+1][g] of matrix q)."""
    rows = {}
    for lane in range(32):
        lq = lane >> 3
        lk = (lq >> 1) * 8 + (lane & 7)
        c = 2 * j + (lq & 1)
        rows[(lq, lane & 7)] = st[lk * ROWB + ((c ^ (lk & 7)) << 4)]  # matrix lq, its row lane&7
    out = np.zeros((32, 4, 2))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        for q in range(4):
            out[lane, q] = (rows[(q, 2 * t)][g], rows[(q, 2 * t + 1)][g])
    return out


def mma(acc, a, b):
    """acc[lane][i] += the m16n8k16 row.col product from per-lane fragments a[lane][q][2],
    b[lane][2][2] (fragment layouts of the PTX ISA)."""
    Am = np.zeros((16, 16))
    Bm = np.zeros((16, 8))
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        Am[g, 2 * t:2 * t + 2] = a[lane, 0]
        Am[g + 8, 2 * t:2 * t + 2] = a[lane, 1]
        Am[g, 2 * t + 8:2 * t + 10] = a[lane, 2]
        Am[g + 8, 2 * t + 8:2 * t + 10] = a[lane, 3]
        Bm[2 * t:2 * t + 2, g] = b[lane, 0]
        Bm[2 * t + 8:2 * t + 10, g] = b[lane, 1]
    D = Am @ Bm
    for lane in range(32):
        g, t = lane >> 2, lane & 3
        acc[lane] += (D[g, 2 * t], D[g, 2 * t + 1], D[g + 8, 2 * t], D[g + 8, 2 * t + 1])


def run(A, B):
    M, K = A.shape
    N = B.shape[1]
    arows = -(-K // GROUP) * GROUP
    As = np.zeros((M, arows))
    As[:, :K] = A
    C = np.full((M, N), np.nan)
    nsteps = -(-K // GROUP)
    for x in range(-(-N // W)):
        col0 = x * W
        red = np.zeros((WARPS, 8, W))
        for warp in range(WARPS):
            acc = np.zeros((W // 16, 32, 4))
            for step in range(nsteps):
                kl = step * GROUP + warp * 16
                st = stage_store(B, kl, col0, K, N)
                b = np.zeros((32, 2, 2))
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    if g < M:
                        b[lane, 0] = As[g, kl + 2 * t:kl + 2 * t + 2]
                        b[lane, 1] = As[g, kl + 2 * t + 8:kl + 2 * t + 10]
                for j in range(W // 16):
                    mma(acc[j], ldmatrix_x4_trans(st, j), b)
            for j in range(W // 16):
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    for i in range(4):
                        n, m = 16 * j + g + (8 if i >= 2 else 0), 2 * t + (i & 1)
                        if m < M:
                            red[warp, m, n] = acc[j, lane, i]
        for o in range(M * W):
            m, c = divmod(o, W)
            v = red[0, m, c]
            for w in range(1, WARPS):
                v += red[w, m, c]
            if col0 + c < N:
                C[m, col0 + c] = v
    return C


if __name__ == "__main__":
    rng = np.random.default_rng(41)
    # Partial strips, K shorter than one group, K not a multiple of 16 or 8, M from 1 to 8.
    for M, N, K in [(5, 200, 130), (8, 72, 77), (1, 64, 8), (3, 136, 300), (7, 8, 1000), (8, 128, 128)]:
        A = rng.uniform(-1, 1, (M, K))
        B = rng.uniform(-1, 1, (K, N))
        got = run(A, B)
        err = np.max(np.abs(got - A @ B))
        assert np.isfinite(got).all(), (M, N, K)
        assert err < 1e-9, (M, N, K, err)
        print(f"{M}x{N}x{K}: max |err| {err:.1e}")
    print("gemm_mtc indexing: ok")
