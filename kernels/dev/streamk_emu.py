# Emulates the work division and the fix-up protocol of the stream-K entries that
# kernels/dev/gemm_streamk_patch.py adds (session 46; built and compiled, not yet run on a GPU),
# with the kernel's own integer arithmetic, and checks for every (tiles, K blocks, G) of a sweep:
#   * the G CTAs' ranges [b*W/G, (b+1)*W/G) cover the W = tiles x K-blocks iterations once each,
#     and each CTA gets at least one (the bench's sk_grid: G <= W / 4);
#   * the segments a CTA walks (a tile and a K-block range) are exactly its range;
#   * a segment that starts after its tile's first K block is its CTA's first segment (the CTA
#     writes its slot before it ever waits: no wait cycle), and a CTA writes at most one slot;
#   * a segment holding a tile's first K block but not its last is its CTA's last segment, and
#     its `want` (c_last - b, c_last from the kernel's formula) is the number of the tile's
#     other segments, whose CTAs are exactly b+1 .. c_last;
#   * the fix-up then sums every K block of every tile once: it replays the protocol on random
#     partial sums (integers, so that the order cannot hide a double count) and compares with
#     the direct sum.
# No GPU, no numpy: `python3 kernels/dev/streamk_emu.py`. It checks the arithmetic as written in
# the patch, not the memory ordering (the device run checks that: two launches, bitwise equal).
import random
import sys


def segments(b, g, w, num_k):
    """The kernel's segment walk for CTA b: (tile, kb0, kb1) in order."""
    i, end = b * w // g, (b + 1) * w // g
    out = []
    while i < end:
        t, kb0 = i // num_k, i % num_k
        kb1 = min(num_k, kb0 + (end - i))
        out.append((t, kb0, kb1))
        i += kb1 - kb0
    return out


def check(tiles, num_k, g, rng):
    w = tiles * num_k
    segs = [segments(b, g, w, num_k) for b in range(g)]
    seen = [[0] * num_k for _ in range(tiles)]
    for b, ss in enumerate(segs):
        assert ss, f"CTA {b} of {g} has no iteration (W {w})"
        for t, kb0, kb1 in ss:
            for kb in range(kb0, kb1):
                seen[t][kb] += 1
        writers = [s for s in ss if s[1] > 0]
        assert len(writers) <= 1, f"CTA {b} writes {len(writers)} slots"
        if writers:
            assert ss[0] == writers[0], f"CTA {b}'s written segment is not its first"
        for j, (t, kb0, kb1) in enumerate(ss):
            if kb0 == 0 and kb1 < num_k:
                assert j == len(ss) - 1, f"CTA {b} finishes tile {t} before its range ends"
    assert all(c == 1 for row in seen for c in row), "an iteration is covered twice or never"
    # the fix-up on integer partial sums
    value = [[rng.randint(-1000, 1000) for _ in range(num_k)] for _ in range(tiles)]
    slot = {}
    for b, ss in enumerate(segs):
        t, kb0, kb1 = ss[0]
        if kb0 > 0:
            slot[b] = (t, sum(value[t][kb0:kb1]))
    stored = {}
    for b, ss in enumerate(segs):
        for t, kb0, kb1 in ss:
            if kb0 > 0:
                continue
            acc = sum(value[t][kb0:kb1])
            if kb1 < num_k:
                last = (t + 1) * num_k
                c_last = (last * g - 1) // w
                want = c_last - b
                writers = [c for c, (tt, _) in slot.items() if tt == t]
                assert sorted(writers) == list(range(b + 1, c_last + 1)), (
                    f"tile {t}: writers {sorted(writers)}, the kernel adds {b + 1}..{c_last}")
                assert want == len(writers)
                for c in range(b + 1, c_last + 1):
                    acc += slot[c][1]
            assert t not in stored, f"tile {t} stored twice"
            stored[t] = acc
    assert sorted(stored) == list(range(tiles)), "a tile is never stored"
    for t in range(tiles):
        assert stored[t] == sum(value[t]), f"tile {t}: {stored[t]} != {sum(value[t])}"


def main():
    rng = random.Random(46)
    n = 0
    for tiles in list(range(1, 40)) + [64, 90, 128, 131, 132, 133, 224, 264, 527]:
        for num_k in [1, 2, 3, 4, 5, 7, 8, 16, 31, 32, 33, 64, 96, 128, 203]:
            w = tiles * num_k
            for g in sorted({1, 2, 3, 7, 66, 131, 132, min(132, max(1, w // 4))}):
                if g > w:
                    continue
                check(tiles, num_k, g, rng)
                n += 1
    print(f"stream-K division and fix-up: {n} (tiles, K blocks, grid) cases pass")


if __name__ == "__main__":
    sys.exit(main())
