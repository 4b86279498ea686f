# Emulates kernels/gemm_mtc.cu's index math lane by lane and compares with A @ B (float64):
# the swizzled cp.async stage layout, the ldmatrix.x4.trans row addresses (lane (g, t) of
# matrix i receives stored elements [2t][g] and [2t+1][g], as gemm_skinny.cu's ntc kernel uses
# it on the GPU), the mma.m16n8k16 row.col fragment layouts, the output mapping and the split-K
# sum. No GPU: `python3 kernels/dev/mtc_emu.py` (numpy). It checks the indexing as written in the
# kernel, not the hardware.
import numpy as np
BN, BK, STAGES, THREADS = 128, 32, 4, 128
def swz(r, c): return r * 256 + ((c ^ (r & 7)) << 4)

def run(A, B, kchunk):
    M, K = A.shape; N = B.shape[1]
    strips = -(-N // BN); splits = -(-K // kchunk)
    part = np.zeros((splits, M, N), np.float64)
    for sy in range(splits):
        for sx in range(strips):
            ncta = sx * BN; kbeg = sy * kchunk; kend = min(K, kbeg + kchunk)
            ntiles = -(-(kend - kbeg) // BK)
            acc = np.zeros((4, 32, 2, 4))  # warp, lane, j, q
            for it in range(ntiles):
                # issue(it): the stage as 16-bit words
                stage = np.zeros(BK * 128, np.float64)  # element index = byte offset / 2
                k0 = kbeg + it * BK
                for tid in range(THREADS):
                    for i in range(BK * BN // 8 // THREADS):
                        q = tid + i * THREADS; r = q >> 4; c = q & 15
                        row = k0 + r; col = ncta + 8 * c
                        ok = row < kend and col < N
                        off = swz(r, c) // 2
                        stage[off:off + 8] = B[row, col:col + 8] if ok else 0.0
                for warp in range(4):
                    for ks in range(BK // 16):
                        regs_b = []
                        for lane in range(32):
                            g, t = lane >> 2, lane & 3
                            k = k0 + 16 * ks + 2 * t
                            def ap(row, kk):
                                if row >= M: return (0.0, 0.0)
                                lo = A[row, kk] if kk < kend else 0.0
                                hi = A[row, kk + 1] if kk + 1 < kend else 0.0
                                return (lo, hi)
                            regs_b.append((ap(g, k), ap(g, k + 8)))
                        for j in range(2):
                            # row addresses per lane
                            addr = []
                            for lane in range(32):
                                mat, r8 = lane >> 3, lane & 7
                                r = 16 * ks + 8 * (mat >> 1) + r8
                                c = (32 * warp + 16 * j) // 8 + (mat & 1)
                                addr.append(swz(r, c) // 2)
                            # ldmatrix.x4.trans: matrix i rows from lanes 8i..8i+7
                            a = [[None] * 4 for _ in range(32)]
                            for i in range(4):
                                mrows = [stage[addr[8 * i + rr]: addr[8 * i + rr] + 8] for rr in range(8)]
                                for lane in range(32):
                                    g, t = lane >> 2, lane & 3
                                    a[lane][i] = (mrows[2 * t][g], mrows[2 * t + 1][g])
                            # mma: assemble A (16x16), B (16x8) from fragments, D += A @ B
                            Am = np.zeros((16, 16)); Bm = np.zeros((16, 8))
                            for lane in range(32):
                                g, t = lane >> 2, lane & 3
                                a0, a1, a2, a3 = a[lane]
                                Am[g, 2*t:2*t+2] = a0; Am[g+8, 2*t:2*t+2] = a1
                                Am[g, 2*t+8:2*t+10] = a2; Am[g+8, 2*t+8:2*t+10] = a3
                                (b00, b01), (b10, b11) = regs_b[lane]
                                Bm[2*t, g] = b00; Bm[2*t+1, g] = b01
                                Bm[2*t+8, g] = b10; Bm[2*t+9, g] = b11
                            D = Am @ Bm
                            for lane in range(32):
                                g, t = lane >> 2, lane & 3
                                acc[warp, lane, j] += [D[g, 2*t], D[g, 2*t+1], D[g+8, 2*t], D[g+8, 2*t+1]]
            for warp in range(4):
                for lane in range(32):
                    g, t = lane >> 2, lane & 3
                    for j in range(2):
                        for q in range(4):
                            m = 2 * t + (q & 1); n = ncta + 32 * warp + 16 * j + g + 8 * (q >> 1)
                            if m < M and n < N: part[sy, m, n] = acc[warp, lane, j, q]
    return part.sum(0)

rng = np.random.default_rng(1)
for (M, N, K, kchunk) in [(5, 256, 100, 64), (8, 136, 77, 32), (1, 128, 40, 64), (7, 264, 96, 32), (3, 384, 33, 64)]:
    A = rng.standard_normal((M, K)); B = rng.standard_normal((K, N))
    C = run(A, B, kchunk)
    err = np.abs(C - A @ B).max()
    print(M, N, K, kchunk, 'max err', err, 'OK' if err < 1e-9 else 'BAD')
