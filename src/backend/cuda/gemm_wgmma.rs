//! Hopper fast path for bf16/fp16 GEMM: TMA + wgmma (`kernels/gemm_wgmma.cu`), with the CTA
//! tile and the K split chosen by shape ([`pick`]).
//!
//! The launch follows the recipe at the head of the kernel file: two 2-D tensor maps with
//! 128-byte swizzle (A boxes 64 K × BM, B boxes 64 N × 64 K), a persistent grid of
//! min(tiles × splits, SMs × CTAs per SM) blocks, the tile's dynamic shared memory, and with
//! split-K a second kernel that adds the fp32 partial tiles in a fixed order. The 128-row
//! tiles of 256, 192, 128 and 64 columns, the `_c2` clusters of 256 and 128 and 192x192 launch
//! their `_ts` entries, which store C through shared memory with TMA and take a third tensor
//! map, of C ([`EPILOGUE_ENV`]). Where N is not a multiple of 8 (and K is not split), the
//! `_uc` entries of `kernels/gemm_wgmma_uc.cu` write C in place with stores cut to its rows'
//! alignment ([`DIRECT_C_ENV`]); B is still read from a padded copy. Where B's rows are not
//! 128-byte aligned and would be copied into aligned ones, the unsplit 128x256, 192x192 and
//! 128x128 plans become 2-CTA clusters that read B in place ([`multicast_misaligned_b`]).

use super::tma::tensor_map_16bit_rows;
use super::MAX_DYNAMIC_SMEM;
use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable that forces the CTA tile: `128x256`, `128x128`, `64x256`, `64x128`,
/// `128x192`, `128x64`, `192x192`, a 2-CTA cluster tile paired along M `128x256_c2` /
/// `128x128_c2` or one paired along N `128x64_n2` / `128x128_n2` (unset or empty: chosen by
/// shape).
pub const TILE_ENV: &str = "KERNELGATE_GEMM_TILE";
/// Environment variable for the epilogue of the tiles that have a TMA-store entry
/// ([`WgTile::tma_store`]): `tma` (unset or empty) stores C through shared-memory staging boxes
/// with one tensor store per 64 × 64 box (the `_ts` entries), `regs` stores it from registers
/// with 16-byte stores (the entries without the suffix, the only epilogue until session 32).
/// Measured in the dev bench, same process as cuBLAS (`docs/kernels/session32`): `tma` 0.5–1.4%
/// faster at 2048³ and about 2% from 4096³ to 8192³ on an H200 (GPU-3ad56ac7), 1.2% and 2% at
/// 2048³ and 4096³ on an H100 (GPU-d45e9c4d).
pub const EPILOGUE_ENV: &str = "KERNELGATE_GEMM_EPILOGUE";
/// Environment variable that forces the number of K splits, `1` to `16` (unset or empty: chosen
/// by shape; `1` turns split-K off).
pub const SPLITK_ENV: &str = "KERNELGATE_GEMM_SPLITK";
/// Environment variable for shapes whose N is not a multiple of 8, without K splits: `1`
/// (unset or empty) writes C in place from `kernels/gemm_wgmma_uc.cu`'s `_uc` entries where
/// [`direct_c_pays`], `0` always computes into a padded result and copies its first N columns
/// into C (`gemm_wgmma_unpad16`, the only path before session 39).
pub const DIRECT_C_ENV: &str = "KERNELGATE_GEMM_DIRECT_C";
/// The kernel file of the `_uc` entries ([`DIRECT_C_ENV`]).
pub const UC_FILE: &str = "gemm_wgmma_uc.cu";

/// Fewest output elements M·N for which C is written in place when N is not a multiple of 8
/// ([`direct_c_pays`]).
pub const DIRECT_C_MIN_ELEMS: u64 = 1 << 16;

/// Whether writing C in place (the `_uc` entries) beats the padded result and its copy for an
/// `m × n` output (N not a multiple of 8, no K splits). Measured on an H100 (GPU-fe12f313,
/// session 39, two interleaved rounds, bf16 µs in place / padded; cuBLAS): 4095×4097×64
/// 33.2 / 63.7 (39.6), 8191×4097×128 57.8 / 124.9 (104.0), 2000×3001×1000 39.7 / 48.9,
/// 2048×2049×2048 39.4 / 45.7, 1536×1537×1024 24.0 / 28.5, 1024×1025×512 12.0 / 13.2,
/// 777×999×135 10.2 / 10.7, 130×1001×72 5.96 / 5.95, 4096×12×1000 9.94 / 10.05; below 2^16
/// elements the padded path was ahead: 129×257×513 9.34 / 9.13, 2048×9×64 5.37 / 5.11 (a
/// few tiles, each a CTA's only one, where the in-place epilogue's longer code is on the
/// critical path and the copy is a few kilobytes).
pub fn direct_c_pays(m: u64, n: u64) -> bool {
    m * n >= DIRECT_C_MIN_ELEMS
}

/// K step of every tile (one TMA stage holds BM × 64 of A and 64 × BN of B).
pub const BK: u64 = 64;

/// A CTA tile of the wgmma kernel (`gemm_wgmma_<dt>_<bm>x<bn>` in `kernels/gemm_wgmma.cu`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WgTile {
    /// Rows of C per CTA (64 per consumer warpgroup).
    pub bm: u64,
    /// Columns of C per CTA.
    pub bn: u64,
    /// Depth of the shared-memory ring.
    pub stages: u32,
    /// CTAs that fit on one SM (shared memory and launch bounds).
    pub ctas_per_sm: u64,
    /// Cost model ([`plan_cost`]): nanoseconds one CTA spends on one 64-deep K block when
    /// its tensor cores, not L2, are the limit (with its [`ctas_per_sm`](Self::ctas_per_sm)
    /// sharing the SM). Fitted to the H100 bench, see [`plan_cost`].
    pub kblock_ns: u64,
    /// Cost model ([`plan_cost`]): fixed nanoseconds per wave of CTAs (pipeline fill, epilogue,
    /// and launch/timing floor), growing with the tile. Fitted to the H100 bench.
    pub wave_ns: u64,
    /// CTAs per cluster: 1, or 2 for the `_c2` entries, whose two CTAs take vertically
    /// adjacent tiles and each TMA-multicast half of the shared B tile to both, and for the
    /// `_n2` entries ([`pair_n`](Self::pair_n)).
    pub cluster: u64,
    /// 2-CTA clusters paired along N (`_n2`): the two CTAs take horizontally adjacent tiles
    /// and each TMA-multicasts half of the shared A tile (a 64-row box) to both.
    pub pair_n: bool,
    /// Whether the kernel file has a TMA-store entry of the tile (`..._ts`, see
    /// [`EPILOGUE_ENV`]): 128x256, 128x128, their `_c2` clusters (session 32), 128x64 and
    /// 192x192 (session 33, once the staging boxes followed a running count), 128x192
    /// (session 46).
    pub tma_store: bool,
}

impl WgTile {
    /// Threads per CTA: a producer warpgroup and one consumer warpgroup per 64 rows.
    pub fn threads(self) -> u32 {
        (self.bm / 64 + 1) as u32 * 128
    }
    /// Dynamic shared memory of the register-epilogue entry: the stage ring, 1024 bytes of
    /// alignment slack, 128 of mbarriers.
    pub fn smem(self) -> u32 {
        self.stages * ((self.bm + self.bn) * BK * 2) as u32 + 1024 + 128
    }
    /// Dynamic shared memory of the TMA-store entry: the stage ring, 1024 bytes of alignment
    /// slack, the mbarriers' block rounded up to 1024 bytes, and [`staging_boxes`] 64 × 64
    /// staging boxes (8 KiB each) per consumer warpgroup.
    ///
    /// [`staging_boxes`]: Self::staging_boxes
    pub fn smem_tma_store(self) -> u32 {
        self.tma_store_base() + (self.bm / 64) as u32 * self.staging_boxes() * 8192
    }
    /// Staging boxes per consumer warpgroup of the TMA-store entry (the kernel's `EPI_NBUF`):
    /// two where they fit in the 227 KiB of dynamic shared memory, else one, whose every store
    /// must have read it before the warpgroup writes the next box (192x192).
    pub fn staging_boxes(self) -> u32 {
        if u64::from(self.tma_store_base() + (self.bm / 64) as u32 * 2 * 8192) <= MAX_DYNAMIC_SMEM {
            2
        } else {
            1
        }
    }
    /// The TMA-store entry's shared memory before its staging boxes.
    fn tma_store_base(self) -> u32 {
        self.stages * ((self.bm + self.bn) * BK * 2) as u32 + 2048
    }
    /// CTAs per K split of an `m × n` product: its output tiles, with the M tiles padded to
    /// whole clusters (the padding CTA of a 2-CTA cluster computes but stores nothing).
    pub fn tiles(self, m: u64, n: u64) -> u64 {
        if self.pair_n {
            m.div_ceil(self.bm) * n.div_ceil(self.bn * self.cluster) * self.cluster
        } else {
            m.div_ceil(self.bm * self.cluster) * self.cluster * n.div_ceil(self.bn)
        }
    }
    /// `BMxBN` (`BMxBN_c2` / `BMxBN_n2` for 2-CTA clusters paired along M / N), the suffix of
    /// the kernel's entry point and the value of [`TILE_ENV`].
    pub fn name(self) -> String {
        let c = match (self.cluster > 1, self.pair_n) {
            (false, _) => "",
            (true, false) => "_c2",
            (true, true) => "_n2",
        };
        format!("{}x{}{c}", self.bm, self.bn)
    }
    /// Persistent grid for `units` CTAs of work on `sms` SMs: at most one wave, a whole
    /// number of clusters (`units` is a multiple of the cluster size, see [`tiles`](Self::tiles)).
    pub fn grid(self, units: u64, sms: u64) -> u64 {
        units.min(sms * self.ctas_per_sm / self.cluster * self.cluster)
    }
}

/// A plain (one-CTA) tile of [`TILES`].
const fn plain(
    bm: u64,
    bn: u64,
    stages: u32,
    ctas_per_sm: u64,
    kblock_ns: u64,
    wave_ns: u64,
) -> WgTile {
    WgTile {
        bm,
        bn,
        stages,
        ctas_per_sm,
        kblock_ns,
        wave_ns,
        cluster: 1,
        pair_n: false,
        tma_store: false,
    }
}

/// `t` with its TMA-store entry (`_ts`).
const fn with_tma_store(t: WgTile) -> WgTile {
    WgTile {
        tma_store: true,
        ..t
    }
}

/// `t` as a 2-CTA cluster (same per-CTA costs; the model only halves the shared operand's
/// traffic): paired along M sharing B (`_c2`), or along N sharing A (`_n2`, `pair_n`).
/// Pairs along N have no TMA-store entry.
const fn cluster2(t: WgTile, pair_n: bool) -> WgTile {
    WgTile {
        cluster: 2,
        pair_n,
        tma_store: t.tma_store && !pair_n,
        ..t
    }
}

const T128X256: WgTile = with_tma_store(plain(128, 256, 4, 1, 760, 8000));
const T128X128: WgTile = with_tma_store(plain(128, 128, 6, 1, 390, 6500));
// 128x64 (session 18): cuBLAS's choice for the few-tile shapes (128x64 tiles in 1x2 clusters at
// 2048×512×4096 and 1024³, see docs/kernels). Its constants are fitted to its forced times on
// H100 GPU-b75b1e0a (2048×512×4096 19.0 µs, 1024³ 7.2) and rounded so that the pick, where it
// may take the tile at all (BN64_MIN_KBLOCKS), leaves 1000³ on 128x128 (12.1 against 13.8
// forced).
// Its TMA-store entry (session 33, dev bench H100 GPU-5b0df1fb): 1024³ 9.54 µs against 9.73 (bf16)
// and 9.70 (fp16) with the register epilogue.
const T128X64: WgTile = with_tma_store(plain(128, 64, 8, 1, 250, 4500));

/// The tiles the kernel file instantiates, largest first (the order [`pick`] prefers on ties),
/// then the 2-CTA cluster versions of the two 128-row tiles paired along M, 128x192, 128x64, the
/// clusters paired along N (picked only as [`n_pairs_in_pick`] says), and 192x192.
pub const TILES: [WgTile; 11] = [
    T128X256,
    T128X128,
    plain(64, 256, 5, 1, 560, 6500),
    plain(64, 128, 4, 2, 290, 5400),
    cluster2(T128X256, false),
    cluster2(T128X128, false),
    // 128x192: cost constants interpolated between 128x128 and 128x256, not fitted; with them
    // the pick takes it only where its wave count wins, of the suite shapes at 3072³ (H100
    // GPU-cb034f80, forced on 12 shapes in one run: 3072³ 83.1 µs against 95.8 for the 128x128
    // pick, 0.95× cuBLAS; 8192³ equal; 1.05–1.26× the time of the pick elsewhere).
    // Its TMA-store entry (session 46) stores a tile during the next one's first three K blocks
    // and skews the last tile's tail, as 128x256's does: in the dev bench (50 shapes, bf16, two
    // H200s and an H100) 0.953-0.967× the register epilogue's time in geomean on the 17 shapes
    // whose pick it is (0.84-1.07×, most gained where K is short); 8191×264×128 through the
    // gate 7.2 against 8.1 µs (H100), 6.9 against 7.7 (H200).
    with_tma_store(plain(128, 192, 5, 1, 575, 7200)),
    T128X64,
    cluster2(T128X64, true),
    cluster2(T128X128, true),
    // 192x192 (session 28): three consumer warpgroups of 64 rows × 192 columns, 4 stages, 512
    // threads; cuBLAS's tile at 3072³ (Nsight Compute, H100 GPU-386d7cbc:
    // nvjet_sm90_tst_192x192_64x3_2x1, 256 tiles on 132 SMs). Forced on the squares in the dev
    // bench (H100 GPU-042aa07b, two rounds, bf16 µs): 3072³ 77.9–78.0 against 81.3–81.5 for
    // 128x192 (0.98× cuBLAS's time against 0.94×); 2048³ 31.3 (128x256: 28.3–28.6), 4096³
    // 195.2 (176.5), 6144³ 657–691 (582–583), 8192³ 1729 (1388–1410). Its constants: 128x256's
    // time per FLOP (760 ns × 192·192 / (128·256), rounded up) and its wave cost, with which the
    // pick takes it at 3072³ and nowhere else in the suites. Its TMA-store entry (session 33,
    // one staging box per warpgroup; dev bench H100 GPU-5b0df1fb, 3 processes): 3072³ 77.15 /
    // 79.52 µs (bf16 / fp16) against 78.37 / 80.64 with the register epilogue, cuBLAS 77.50 /
    // 79.20.
    with_tma_store(plain(192, 192, 4, 1, 860, 8000)),
];

/// Whether [`pick`] considers the 2-CTA clusters paired along N (`_n2`, A multicast) for an
/// `m × k` A operand: only 128x64_n2, and only where A's rows are not 128-byte aligned
/// (K % 64 ≠ 0, which the cost model charges [`MISALIGNED_TRAFFIC`] times the traffic; the
/// multicast halves it), M fills its 128 rows and K spans at least [`N_PAIRS_MIN_KBLOCKS`]
/// blocks.
///
/// Measured with the producer tail (session 19, H100 GPU-9856f8c5, forced against the pick in
/// one run, µs): misaligned K, M ≥ 128 and 3 or more K blocks, 128x64_n2 won everywhere —
/// 1000³ 11.01 / 11.77, 777×1000×136 4.89 / 5.26, 777×999×135 10.88 / 12.02, 129×257×513
/// 9.14 / 9.48, 4096×12×1000 9.81 / 10.02. With two K blocks it lost or tied (130×1001×72 6.09 /
/// 5.94, 1000×1000×100 7.12 / 7.12), below 128 rows it lost by 1–20% (17×8192×77, 64×64×3,
/// 33×17×1000), and with K aligned it lost everywhere (256³ 3.82 / 3.58, 512³ 4.92 / 4.68,
/// 1024³ 8.09 / 6.92, 2048×512×4096 22.02 / 18.69, 8191×264×128 9.30 / 8.79). 128x128_n2 lost
/// to it or to the pick on every shape but 4095×4097×64.
pub fn n_pairs_in_pick(t: WgTile, m: u64, k: u64) -> bool {
    t.bn == 64 && !k.is_multiple_of(BK) && m >= t.bm && k.div_ceil(BK) >= N_PAIRS_MIN_KBLOCKS
}

/// Fewest K blocks for which [`pick`] considers 128x64_n2 ([`n_pairs_in_pick`]).
pub const N_PAIRS_MIN_KBLOCKS: u64 = 3;

/// Fewest 64-wide K blocks for which [`pick`] considers the 128x64 tile, and only where M fills
/// its 128 rows. Forced on the few-tile shapes (H100 GPU-b75b1e0a, µs 128x64 / pick) it won
/// where K is long (2048×512×4096 19.0 / 22.1, 1024³ 7.2 / 7.7) and lost by 3–4% where it is
/// short (256³ 4.10 / 3.97, 777×1000×136 5.47 / 5.27), which the cost model alone does not
/// separate; picked at 5×3000×1000 it took 9.8 µs against 7.7 for 64x128 (GPU-3ea44b83).
pub const BN64_MIN_KBLOCKS: u64 = 16;

/// Fewest 64-wide K blocks for which [`pick`] considers the 192x192 tile: it was measured on the
/// squares only (32 to 128 K blocks). With one K block (4095×4097×64, 8192×8192×8) the model
/// would take it for its fewer waves, untimed.
pub const WIDE_MIN_KBLOCKS: u64 = 16;

/// Whether [`pick`] considers `t` without being forced to, for `m` rows and `k` columns of A
/// and B read from rows of `ldb` elements.
fn in_pick(t: WgTile, m: u64, k: u64, ldb: u64) -> bool {
    let num_k = k.div_ceil(BK).max(1);
    if t.pair_n {
        n_pairs_in_pick(t, m, k)
    } else if t.bm == 192 {
        num_k >= WIDE_MIN_KBLOCKS
    } else if t.bn == 64 {
        num_k >= BN64_MIN_KBLOCKS && m >= t.bm
    } else {
        t.cluster == 1 || m_pairs_in_pick(ldb)
    }
}

/// Whether [`pick`] considers the 2-CTA clusters paired along M (`_c2`, B multicast) by itself
/// ([`TILE_ENV`] can force them anywhere): only where the kernel reads B from rows of `ldb`
/// elements that are not 128-byte multiples (`ldb % 64 != 0`, which the cost model charges
/// [`MISALIGNED_TRAFFIC`] times the traffic; the multicast halves it). That is B read in place:
/// where [`Padding`] copies B into aligned rows, [`multicast_misaligned_b`] decides instead.
///
/// Session 47: the trace of a stream-K variant (H200 GPU-71145b83) showed the L2 → SM traffic
/// capping the mid-size shapes (132 CTAs moved the K blocks no faster than 90). On 40 seeded
/// random shapes with such B rows whose plan changes (M up to 8191, K 96–7624; dev bench, B
/// read in place as the harness reads it there, the old plan and the new one in the same run),
/// the new plans took 0.878× (bf16) / 0.876× (fp16) the old plans' time in geomean on H100
/// GPU-e2e86e01 (35–36 faster, 4–5 slower, from 0.58× at 1901×5032×5744 to 1.15× at
/// 658×560×6800) and 0.893× / 0.895× on H200 GPU-661be54a; on 30 more shapes (seed 48, chosen
/// after the first run) 0.930× / 0.925× on that H200 (worst 1.17× at 155×7264×1288), and on 38
/// more (seed 49, after this rule was written) 0.920× / 0.928× on H100 GPU-987356d9. Through
/// the harness (14 shapes, both dtypes, same-run rounds against `copy`): 0.835× in geomean on
/// H100 GPU-065cbc8d, 0.876× on H200 GPU-24b93d3d (docs/kernels/session47).
/// Where B's rows are aligned the cluster tiles were slower than the plain ones (128x256_c2 by
/// 0.7–1.5% at 4096×1024×4096 and 8192×1024×8192, session 43; 0.96–1.03× at 4096³–8192³ on an
/// H100 since session 14), so they stay out of the pick there.
pub fn m_pairs_in_pick(ldb: u64) -> bool {
    !ldb.is_multiple_of(64)
}

/// Most K splits.
pub const MAX_SPLITS: u64 = 16;
/// Fewest 64-wide K blocks per split when [`pick`] splits K (a split's pipeline fill and its
/// fp32 partial tile must be paid for by enough MMAs).
pub const MIN_KBLOCKS_PER_SPLIT: u64 = 4;

/// Cost model: aggregate L2 → SM bandwidth (bytes per µs) that the CTAs of a wave share
/// for their TMA loads (about 11 TB/s on the H100 fit).
const L2_BYTES_PER_US: f64 = 11.0e6;
/// Cost model: factor on an operand's load traffic when its rows are not 128-byte aligned
/// (K % 64 ≠ 0 for A, N % 64 ≠ 0 for B): each 128-byte box row then touches an extra line.
const MISALIGNED_TRAFFIC: f64 = 1.8;
/// Cost model: microseconds of the second (reduction) launch.
const REDUCE_LAUNCH_US: f64 = 2.7;
/// Cost model: bytes per microsecond of the split-K partial traffic (mostly L2-resident).
const PARTIAL_BYTES_PER_US: f64 = 8.8e6;

/// A launch plan: the tile and the number of K splits (1 = no split-K).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// CTA tile.
    pub tile: WgTile,
    /// K splits; above 1 each split writes fp32 partials that a second kernel adds in order.
    pub splits: u64,
}

/// Modelled time (µs) of `tile` with `splits` K splits for `m × n × k` on `sms` SMs.
///
/// With units = tiles × splits, slots = SMs × CTAs per SM, waves = ⌈units / slots⌉ and
/// active = min(units, slots) CTAs running at once:
///
/// time = waves × ([`WgTile::wave_ns`] + K blocks per split × t_kb) (+ split-K terms), where
/// t_kb = max([`WgTile::kblock_ns`], active × bytes per K block / [`L2_BYTES_PER_US`]):
/// a K block is bound by the tensor cores or by the L2 → SM traffic the active CTAs share
/// ((BM + BN) × 64 × 2 bytes each, × [`MISALIGNED_TRAFFIC`] for an operand whose rows are
/// not 128-byte aligned). Split-K adds [`REDUCE_LAUNCH_US`] and the fp32 partials written
/// and read back (2·splits·m·n·4 bytes) plus C (m·n·2 bytes) at [`PARTIAL_BYTES_PER_US`].
///
/// The seven constants per tile and the four global ones were fitted to
/// `/work/shared-data/h100-gemm-wgmma-bench.txt` (H100 SXM, every tile × split timed with L2
/// flushed): the fixed cost per wave is what makes the small tiles win up to 1024³ (64x128
/// one wave at 256³: 6.7 µs against 9.1 for 128x128), the shared L2 bandwidth is what
/// makes 64x128 (2 CTAs per SM, most bytes per FLOP) lose from 2048³ on, and the
/// misalignment factor is why 1000³ prefers 128x128 while 1024³ prefers 64x128 with the same
/// tile counts. Fit quality: about 13% RMS on every timed config of the suite shapes.
pub fn plan_cost(tile: WgTile, splits: u64, m: u64, n: u64, k: u64, sms: u64) -> f64 {
    let num_k = k.div_ceil(BK).max(1);
    let splits = splits.max(1);
    let kb_per = num_k.div_ceil(splits);
    let units = tile.tiles(m, n) * splits;
    let slots = tile.grid(u64::MAX, sms.max(1)).max(1);
    let waves = units.div_ceil(slots) as f64;
    let active = units.min(slots) as f64;
    let misaligned = |aligned: bool| if aligned { 1.0 } else { MISALIGNED_TRAFFIC };
    // with 2-CTA clusters each CTA loads half of the shared tile (TMA multicast): B when
    // paired along M, A when paired along N
    let (a_share, b_share) = if tile.pair_n {
        (tile.cluster as f64, 1.0)
    } else {
        (1.0, tile.cluster as f64)
    };
    let rows = tile.bm as f64 * misaligned(k.is_multiple_of(64)) / a_share
        + tile.bn as f64 * misaligned(n.is_multiple_of(64)) / b_share;
    let bytes = rows * (BK * 2) as f64;
    let kblock_us = (tile.kblock_ns as f64 / 1000.0).max(active * bytes / L2_BYTES_PER_US);
    let mut t = waves * (tile.wave_ns as f64 / 1000.0 + kb_per as f64 * kblock_us);
    if splits > 1 {
        let bytes = (2 * splits * m * n * 4 + m * n * 2) as f64;
        t += REDUCE_LAUNCH_US + bytes / PARTIAL_BYTES_PER_US;
    }
    t
}

/// The launch plan for `m × n × k` on `sms` SMs: among the tiles of [`TILES`] (or the forced
/// `tile`) and split counts 1..=[`MAX_SPLITS`] (or the forced `splits`), the one of least
/// [`plan_cost`]. Automatic split counts keep at least [`MIN_KBLOCKS_PER_SPLIT`] K blocks per
/// split and never leave a split empty. A candidate must beat the best so far by 3% to replace
/// it, so near-ties go to the larger tile and the fewer splits (no workspace, no second
/// launch). In effect (H100): 64x128 while one wave of it covers the problem (up to 512³),
/// 128x64 where K is long (1024³, 2048×512×4096), 128x64_n2 where A's rows are misaligned
/// ([`n_pairs_in_pick`]: 1000³, 777×1000×136), 192x192 at 3072³, 128x256 from 2048³ on;
/// split-K where even the small tiles leave the machine mostly idle and K is long; since
/// session 47 the B-multicast clusters (`_c2`) where B is read from misaligned rows of `ldb`
/// elements ([`m_pairs_in_pick`]; `ldb ≥ n` is [`Padding`]'s row length, `n` for B in place).
/// Mirrored by `pick_plan` in `kernels/dev/gemm_wgmma_bench.cu` (which reads B in place).
pub fn pick(
    m: u64,
    n: u64,
    k: u64,
    ldb: u64,
    sms: u64,
    tile: Option<WgTile>,
    splits: Option<u64>,
) -> Plan {
    let num_k = k.div_ceil(BK).max(1);
    let tiles: Vec<WgTile> = tile.map_or_else(
        || {
            TILES
                .into_iter()
                .filter(|&t| in_pick(t, m, k, ldb))
                .collect()
        },
        |t| vec![t],
    );
    let split_counts: Vec<u64> = match splits {
        Some(s) => vec![s.max(1)],
        None => (1..=MAX_SPLITS)
            .filter(|&s| {
                let kb_per = num_k.div_ceil(s);
                s == 1 || (kb_per >= MIN_KBLOCKS_PER_SPLIT && (s - 1) * kb_per < num_k)
            })
            .collect(),
    };
    let mut best: Option<(f64, Plan)> = None;
    for &t in &tiles {
        for &s in &split_counts {
            let c = plan_cost(t, s, m, n, k, sms);
            if best.is_none_or(|(b, _)| c < 0.97 * b) {
                best = Some((c, Plan { tile: t, splits: s }));
            }
        }
    }
    best.map(|(_, p)| p).unwrap_or(Plan {
        tile: TILES[0],
        splits: 1,
    })
}

/// The values of [`TILE_ENV`]: every tile of [`TILES`] under its name.
const TILE_CHOICES: [(&str, WgTile); 11] = [
    ("128x256", TILES[0]),
    ("128x128", TILES[1]),
    ("64x256", TILES[2]),
    ("64x128", TILES[3]),
    ("128x256_c2", TILES[4]),
    ("128x128_c2", TILES[5]),
    ("128x192", TILES[6]),
    ("128x64", TILES[7]),
    ("128x64_n2", TILES[8]),
    ("128x128_n2", TILES[9]),
    ("192x192", TILES[10]),
];

/// The values of [`SPLITK_ENV`].
const SPLIT_CHOICES: [(&str, u64); 16] = [
    ("1", 1),
    ("2", 2),
    ("3", 3),
    ("4", 4),
    ("5", 5),
    ("6", 6),
    ("7", 7),
    ("8", 8),
    ("9", 9),
    ("10", 10),
    ("11", 11),
    ("12", 12),
    ("13", 13),
    ("14", 14),
    ("15", 15),
    ("16", 16),
];

/// Parses an [`EPILOGUE_ENV`] value: whether the tiles with a TMA-store entry use it.
pub fn parse_epilogue(value: Option<&str>) -> std::result::Result<bool, String> {
    super::parse_choice(EPILOGUE_ENV, value, &[("tma", true), ("regs", false)])
        .map(|c| c.unwrap_or(true))
}

/// Parses a [`TILE_ENV`] value (unset or empty: `None`, chosen by shape).
pub fn parse_tile(value: Option<&str>) -> std::result::Result<Option<WgTile>, String> {
    super::parse_choice(TILE_ENV, value, &TILE_CHOICES)
}

/// Parses a [`SPLITK_ENV`] value (unset or empty: `None`, chosen by shape).
pub fn parse_splits(value: Option<&str>) -> std::result::Result<Option<u64>, String> {
    super::parse_choice(SPLITK_ENV, value, &SPLIT_CHOICES)
}

/// Whether the wgmma kernel handles this case on this device: compute capability 9.0 and a
/// 16-bit dtype. N or K not a multiple of 8 (TMA needs 16-byte row strides) is handled by
/// padded copies ([`Padding`]). `KERNELGATE_NO_WGMMA=1` forces the portable kernel.
pub fn applies(gpu: &Gpu, case: &Case) -> bool {
    let (n, k) = (case.shape.get("n"), case.shape.get("k"));
    gpu.info.compute_capability == "9.0"
        && matches!(case.dtype, Dtype::Bf16 | Dtype::Fp16)
        && n >= 1
        && k >= 1
        && std::env::var("KERNELGATE_NO_WGMMA")
            .map(|v| v != "1")
            .unwrap_or(true)
}

/// Environment variable for the alignment copies of [`Padding`]: `off` turns them off, a number
/// sets the fewest rows M for which B is aligned (unset or empty: [`ALIGN_MIN_OTHER`]). Copies
/// that TMA needs (N or K not a multiple of 8) are always made.
pub const ALIGN_ENV: &str = "KERNELGATE_GEMM_ALIGN";

/// Fewest rows M for which B, when its rows are not 128-byte multiples, is copied into 128-byte
/// aligned rows: the copy reads and writes B once (about 400 / M of the GEMM's time at 600
/// TFLOP/s and 3 TB/s, so 10% at M = 4096), and misaligned rows cost each TMA box row a second
/// line (the [`MISALIGNED_TRAFFIC`] of the cost model). Measured on an H100 (GPU-cb034f80, same
/// run, µs unaligned / aligned): 4096×1000×4096 74.6 / 56.5, 8192×1000×8192 285.4 / 193.8.
pub const ALIGN_MIN_OTHER: u64 = 2048;

/// Fewest K for which B, when TMA could read it in place (N a multiple of 8), is copied into
/// 128-byte aligned rows (with M ≥ [`ALIGN_MIN_OTHER`]): below it the GEMM reads B too few
/// times for the aligned rows to pay for the copy's launch. Same run on an H100 (GPU-841074bc,
/// session 39, two interleaved rounds, bf16 µs aligned / not): 4096×1000×128 9.69 / 8.36,
/// 8191×264×128 8.72 / 8.10; 2048×520×256 7.13 / 7.22, 4096×1000×512 13.10 / 13.94,
/// 4096×1000×1024 18.22 / 21.32, 8191×264×1024 18.02 / 19.40, 4096×1000×4096 52.45 / 72.96.
///
/// Where N is not a multiple of 8 the copy is made anyway, and its rows are aligned whatever K:
/// 4095×4097×64 (C in place) ran 3–5% slower with B in rows of 4104 than of 4160 (H100
/// 71aabb24, H200 cf1f6506, against the entries of four machines).
pub const ALIGN_MIN_K: u64 = 256;

/// The operands as the kernel reads them. TMA needs 16-byte row strides: K is rounded up to a
/// multiple of 8 (A copied into rows of `kp` elements with zero columns; B's rows past K are out
/// of bounds of its tensor map and read as zeros) and N likewise (B copied into rows of `ldb`,
/// the result computed into an `m × np` buffer whose first N columns are then copied into C).
/// B's rows that are not 128-byte multiples are also copied into 128-byte aligned ones where M
/// is large enough to pay for it ([`ALIGN_MIN_OTHER`]); A's are not (measured slower).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Padding {
    /// K as the kernel sees it (a multiple of 8).
    pub kp: u64,
    /// N as the kernel sees it (a multiple of 8).
    pub np: u64,
    /// Elements per row of the B the kernel reads (N when B is read in place).
    pub ldb: u64,
}

impl Padding {
    /// The copies `m × n × k` needs; `align` is the fewest rows M for which B is copied into
    /// 128-byte aligned rows (`None`: never; for K below [`ALIGN_MIN_K`] only where the copy is
    /// needed anyway).
    pub fn of(m: u64, n: u64, k: u64, align: Option<u64>) -> Self {
        let kp = k.next_multiple_of(8);
        let np = n.next_multiple_of(8);
        // A's rows are not aligned beyond 8 elements (`kp`): at 4096×4096×1000 the copy made it
        // slower (63.4 µs against 58.5 unaligned, H100 GPU-cb034f80), while aligning B took
        // 4096×1000×4096 from 74.6 to 56.5.
        // Where TMA needs the copy anyway (N not a multiple of 8), aligned rows cost no launch.
        let worth = k >= ALIGN_MIN_K || !n.is_multiple_of(8);
        let ldb = if align.is_some_and(|min| m >= min) && worth && !n.is_multiple_of(64) {
            n.next_multiple_of(64)
        } else {
            np
        };
        Padding { kp, np, ldb }
    }
    /// Whether A is copied into rows of `kp` (K not a multiple of 8).
    pub fn copies_a(self, k: u64) -> bool {
        self.kp != k
    }
    /// The same padding with B read in place, without the alignment copy, where TMA can read
    /// B's rows of `n` elements (N a multiple of 8); unchanged otherwise.
    pub fn b_in_place(self, n: u64) -> Self {
        if self.np == n {
            Padding { ldb: n, ..self }
        } else {
            self
        }
    }
    /// Whether B is copied (N not a multiple of 8, or aligned rows).
    pub fn copies_b(self, n: u64) -> bool {
        self.ldb != n
    }
    /// Whether the result goes through an `m × np` buffer (N not a multiple of 8).
    pub fn pads_c(self, n: u64) -> bool {
        self.np != n
    }
}

/// Environment variable for B's rows that are not 128-byte aligned (N a multiple of 8, not of
/// 64) where [`Padding`] would copy them into aligned rows and the plan is one unsplit 128x256,
/// 192x192 or 128x128 tile: `multicast` (unset or empty) runs the 2-CTA cluster of the same
/// width reading B in place ([`multicast_misaligned_b`]), `copy` keeps the plan and the copy
/// (the only path before session 43). `copy` also keeps the 2-CTA clusters out of the pick where
/// B is read from misaligned rows in place ([`m_pairs_in_pick`]; the plans before session 47).
pub const MISALIGNED_B_ENV: &str = "KERNELGATE_GEMM_MISALIGNED_B";

/// Parses a [`MISALIGNED_B_ENV`] value: `true` for `multicast` (the default), `false` for `copy`.
pub fn parse_misaligned_b(value: Option<&str>) -> std::result::Result<bool, String> {
    super::parse_choice(
        MISALIGNED_B_ENV,
        value,
        &[("multicast", true), ("copy", false)],
    )
    .map(|c| c.unwrap_or(true))
}

/// The 2-CTA cluster tile (paired along M, B multicast) that replaces the automatic `plan` and
/// B's alignment copy for `pad`'s N columns, if any: B's rows are not 128-byte aligned but TMA
/// can read them (N a multiple of 8, not of 64), `pad` copies them into aligned rows, and the
/// plan is one unsplit tile of 128x256 or 192x192 (then 128x256_c2) or 128x128 (128x128_c2).
///
/// A misaligned 128-byte box row touches two lines, which made B's loads the bound of the plain
/// tiles (hence the alignment copy, which costs a read and a write of B). The cluster loads
/// half of B per CTA and multicasts it, so per CTA it loads about as many lines as the plain
/// tile does from aligned rows. cuBLAS's own kernel for 4096×1000×4096 is a 2-CTA cluster too
/// (`nvjet_sm90_tst_128x256_64x4_2x1_v`, H200 GPU-779e83ec). Measured (session 43, two
/// interleaved rounds, every launch alone, bf16 µs: the plan with the copy / the cluster in
/// place; cuBLAS):
/// - 128x256_c2, H200 GPU-3b8ce41a and H100 GPU-6589fe08: 4096×1000×4096 51.57 / 47.97 and
///   52.24 / 48.51 (47.0, 47.3); 8192×1000×8192 (a 192x192 plan) 205.87 / 181.18 and
///   236.64 / 178.13 (181.4, 179.6); 4096×1000×1024 18.98 / 18.24 and 19.71 / 18.78;
///   4096×1000×512 13.47 / 13.18 and 14.27 / 14.05.
/// - 128x128_c2, H200 GPU-702f6684 and H100 GPU-6589fe08: 2048×1000×4096 35.81 / 29.79 and
///   43.25 / 32.74 (26.2, 27.8); 4096×264×4096 37.86 / 29.76; 3000×520×4096 39.41 / 32.93;
///   2048×1000×1024 13.78 / 11.74; 2048×520×1024 12.80 / 11.33; 4096×264×1024 13.70 / 12.22.
///   The rule itself against the copy on H100 GPU-ba1c2e10: 2048×1000×4096 43.54 / 32.74,
///   4096×264×4096 44.32 / 34.26, 3000×520×4096 44.06 / 35.65, 4096×264×1024 14.02 / 13.47.
/// - Left alone: plans without the copy (M below [`ALIGN_MIN_OTHER`] or K below
///   [`ALIGN_MIN_K`]; 1024×2000×4096 28.22 / 26.91 and 1024×1504×1024 11.10 / 11.20 on the
///   H200, within the runs' spread), and the 128x192 plans (8191×264×1024: 17.76 with the copy
///   against 24.38 on 128x256_c2 on the H200, 18.69 against 21.31 on 128x128_c2 on the H100).
/// - With N aligned the cluster tiles are slower than the plain ones (128x256_c2 by 0.7–1.5% at
///   4096×1024×4096 and 8192×1024×8192, same runs), so they stay out of [`pick`]
///   ([`m_pairs_in_pick`]).
pub fn multicast_misaligned_b(plan: Plan, pad: Padding, n: u64) -> Option<WgTile> {
    if plan.splits != 1 || pad.np != n || n.is_multiple_of(64) || !pad.copies_b(n) {
        return None;
    }
    let t = plan.tile;
    if t.cluster != 1 {
        None
    } else if t == TILES[0] || t.bm == 192 {
        Some(TILES[4])
    } else if t == TILES[1] {
        Some(TILES[5])
    } else {
        None
    }
}

/// Environment variable for how the kernels of a sequence (padding copies, GEMM, split-K
/// reduction) are launched: `1` (unset or empty) each as a programmatic dependent of the
/// stream's previous kernel, the first one too, so its launch and set-up overlap the kernel
/// before it (back-to-back launches of a case overlap, as cuBLAS's do); `inner` only the
/// kernels after the first (the default until session 18); `0` one after the other the
/// ordinary way. Same run on an H100 (GPU-ffc6fbc6, `scripts/suites/gemm-small.json`, two
/// rounds each), `1` against `inner`: 2.6–15.7% faster on 14 of 22 cases (256³ 4.06 → 3.51 µs,
/// 512³ 5.14 → 4.67, 1024³ 7.27 → 6.98), level (within 0.6%) on the rest.
pub const PDL_ENV: &str = "KERNELGATE_GEMM_PDL";

/// Parses a [`PDL_ENV`] value into the chain of the sequence.
fn parse_pdl(value: Option<&str>) -> std::result::Result<super::Chain, String> {
    super::parse_choice(
        PDL_ENV,
        value,
        &[
            ("1", super::Chain::Dependent),
            ("all", super::Chain::Dependent),
            ("inner", super::Chain::Overlapped),
            ("0", super::Chain::Ordinary),
        ],
    )
    .map(|c| c.unwrap_or(super::Chain::Dependent))
}

/// Parses an [`ALIGN_ENV`] value: the fewest rows M for aligning B, `None` for `off`.
pub fn parse_align(value: Option<&str>) -> std::result::Result<Option<u64>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(Some(ALIGN_MIN_OTHER)),
        Some("off") => Ok(None),
        Some(v) => v.parse::<u64>().map(Some).map_err(|_| {
            format!("{ALIGN_ENV}={v:?}: expected `off` or the fewest rows M for aligning B (a whole number)")
        }),
    }
}

/// The launch of `gemm_wgmma_pad16`: `src` (`rows × cols`) copied into `dst` (`rows × cols_p`,
/// zero columns after `cols`), one thread per 8 elements of `dst`.
fn pad_step(src: u64, dst: u64, rows: u64, cols: u64, cols_p: u64, sms: u64) -> super::Step {
    copy_step(
        "gemm_wgmma_pad16",
        rows * cols_p / 8,
        [src, dst],
        [rows, cols, cols_p],
        sms,
    )
}

/// The launch of `gemm_wgmma_unpad16`: the first `cols` columns of `src` (`rows × cols_p`)
/// copied into `dst` (`rows × cols`), one thread per element of `dst`.
fn unpad_step(src: u64, dst: u64, rows: u64, cols: u64, cols_p: u64, sms: u64) -> super::Step {
    copy_step(
        "gemm_wgmma_unpad16",
        rows * cols,
        [src, dst],
        [rows, cols, cols_p],
        sms,
    )
}

/// A grid-stride copy kernel's launch over `work` threads' worth of elements.
fn copy_step(name: &str, work: u64, ptrs: [u64; 2], dims: [u64; 3], sms: u64) -> super::Step {
    (
        name.to_string(),
        Dims {
            grid: (work.div_ceil(256).clamp(1, sms * 8) as u32, 1, 1),
            block: (256, 1, 1),
            smem: 0,
        },
        vec![
            KernelArg::Ptr(ptrs[0]),
            KernelArg::Ptr(ptrs[1]),
            KernelArg::I32(dims[0] as i32),
            KernelArg::I32(dims[1] as i32),
            KernelArg::I32(dims[2] as i32),
        ],
    )
}

/// Prepares the wgmma kernel for C = A·B with the plan [`pick`] chooses (or the one forced by
/// [`TILE_ENV`] / [`SPLITK_ENV`]); split-K's fp32 workspace and the padded copies of
/// [`Padding`] are allocated here, once, and the copies are made inside every launch.
pub fn prepare(gpu: &mut Gpu, case: &Case, a: u64, b: u64, c: u64) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let mut pad = Padding::of(m, n, k, super::from_env(case, ALIGN_ENV, parse_align)?);
    let (np, kp) = (pad.np, pad.kp);
    let forced_tile = super::from_env(case, TILE_ENV, parse_tile)?;
    let forced_splits = super::from_env(case, SPLITK_ENV, parse_splits)?;
    let sms = gpu.info.sm_count as u64;
    let multicast_b = super::from_env(case, MISALIGNED_B_ENV, parse_misaligned_b)?;
    // `copy`: the pick sees B's rows as aligned, so it leaves the B-multicast clusters out
    let pick_ldb = if multicast_b {
        pad.ldb
    } else {
        pad.ldb.next_multiple_of(64)
    };
    let mut plan = pick(m, np, kp, pick_ldb, sms, forced_tile, forced_splits);
    // B's misaligned rows multicast by a 2-CTA cluster instead of copied (automatic plans only).
    let cluster = match multicast_misaligned_b(plan, pad, n) {
        Some(t) if forced_tile.is_none() && forced_splits.is_none() => multicast_b.then_some(t),
        _ => None,
    };
    if let Some(t) = cluster {
        plan.tile = t;
        pad = pad.b_in_place(n);
    }
    // an automatic B-multicast cluster, the rule's or the pick's, reads B's misaligned rows in place
    let b_multicast = forced_tile.is_none() && plan.tile.cluster == 2 && !plan.tile.pair_n;
    let tile = plan.tile;
    let mut keep = Vec::new();
    let mut steps: Vec<super::Step> = Vec::new();
    let mut alloc = |gpu: &mut Gpu, elems: u64, what: &str| -> Result<u64> {
        let buf = gpu.alloc((elems * 2) as usize, &format!("{} {what}", case.name()))?;
        let p = buf.ptr();
        keep.push(buf);
        Ok(p)
    };
    let a_k = if pad.copies_a(k) {
        let ap = alloc(gpu, m * kp, "A copied into padded rows")?;
        steps.push(pad_step(a, ap, m, k, kp, sms));
        ap
    } else {
        a
    };
    let b_k = if pad.copies_b(n) {
        let bp = alloc(gpu, k * pad.ldb, "B copied into padded rows")?;
        steps.push(pad_step(b, bp, k, n, pad.ldb, sms));
        bp
    } else {
        b
    };
    // N not a multiple of 8 without K splits: C written in place by a `_uc` entry, where the
    // kernel set has that file (a `--base` revision from before session 39 does not).
    let direct_c = pad.pads_c(n)
        && plan.splits == 1
        && direct_c_pays(m, n)
        && super::from_env(case, DIRECT_C_ENV, |v| super::parse_switch(DIRECT_C_ENV, v))?
        && gpu.kernel_set.dir.join(UC_FILE).is_file();
    let c_k = if pad.pads_c(n) && !direct_c {
        alloc(gpu, m * np, "padded result")?
    } else {
        c
    };
    // `_n2`: each CTA of the pair loads (and multicasts) one 64-row half of the A tile.
    let a_box_rows = if tile.pair_n { 64 } else { tile.bm as u32 };
    let tm_a = tensor_map_16bit_rows(case, a_k, [kp, m], kp, [64, a_box_rows])?;
    let tm_b = tensor_map_16bit_rows(case, b_k, [np, k], pad.ldb, [64, 64])?;
    let dt = if case.dtype == Dtype::Bf16 {
        "bf16"
    } else {
        "f16"
    };
    // TMA stores need C's rows 16-byte aligned: not for the `_uc` entries.
    let want_tma_store =
        !direct_c && tile.tma_store && super::from_env(case, EPILOGUE_ENV, parse_epilogue)?;
    let plain_name = format!("gemm_wgmma_{dt}_{}", tile.name());
    let ts_name = format!("{plain_name}_ts");
    let file = if direct_c { UC_FILE } else { "gemm_wgmma.cu" };
    let module = gpu.module(file)?;
    // A kernel source from before the tile's TMA-store entry (a `--base` revision of same-run
    // A/B: before session 32, or session 33 for 128x64 and 192x192) has only the
    // register-epilogue entry: launch that, and say so in the configuration.
    let tma_store = want_tma_store && module.has_function(&ts_name)?;
    let name = if direct_c {
        format!("{plain_name}_uc")
    } else if tma_store {
        ts_name
    } else {
        plain_name
    };
    let smem = if tma_store {
        tile.smem_tma_store()
    } else {
        tile.smem()
    };
    let f = module.function(&name)?;
    gpu.set_max_dynamic_smem(f, smem)?;
    let units = tile.tiles(m, np) * plan.splits;
    // `_c2` entries carry their cluster dims in the binary (`__cluster_dims__(2, 1, 1)`), so
    // the plain launch works as long as the grid is a whole number of clusters.
    let mut grid = tile.grid(units, sms);
    // Clusters: no more than can be resident at once (the driver may fit fewer than SMs / 2
    // two-CTA clusters of this shared-memory size; the rest would run as a second wave).
    let mut resident = String::new();
    if tile.cluster > 1 {
        let most = gpu.max_active_clusters(f, grid as u32, tile.threads(), smem)? as u64;
        if most >= 1 {
            grid = grid.min(most * tile.cluster);
        }
        resident = format!(", {most} clusters resident at most");
    }
    let part = if plan.splits > 1 {
        let ws = gpu.alloc(
            (plan.splits * m * np * 4) as usize,
            &format!("{} split-K partial tiles", case.name()),
        )?;
        let p = ws.ptr();
        keep.push(ws);
        p
    } else {
        0
    };
    let mut args = vec![
        KernelArg::TensorMap(tm_a),
        KernelArg::TensorMap(tm_b),
        KernelArg::Ptr(c_k),
        KernelArg::Ptr(part),
        KernelArg::I32(m as i32),
        // `_uc`: C's own width (its row stride and the stores' bound); the tile count is the
        // same as for np, the next multiple of 8
        KernelArg::I32(if direct_c { n } else { np } as i32),
        KernelArg::I32(kp as i32),
        KernelArg::I32(plan.splits as i32),
    ];
    if tma_store {
        // C as the kernel writes it (the padded result when N is padded): 64 × 64 boxes.
        args.push(KernelArg::TensorMap(tensor_map_16bit_rows(
            case,
            c_k,
            [np, m],
            np,
            [64, 64],
        )?));
    }
    steps.push((
        name.clone(),
        Dims {
            grid: (grid as u32, 1, 1),
            block: (tile.threads(), 1, 1),
            smem,
        },
        args,
    ));
    if plan.splits > 1 {
        let elems = m * np;
        steps.push((
            format!("gemm_wgmma_reduce_{dt}"),
            Dims {
                grid: (elems.div_ceil(1024).clamp(1, sms * 8) as u32, 1, 1),
                block: (256, 1, 1),
                smem: 0,
            },
            vec![
                KernelArg::Ptr(part),
                KernelArg::Ptr(c_k),
                KernelArg::U64(elems),
                KernelArg::I32(plan.splits as i32),
            ],
        ));
    }
    if pad.pads_c(n) && !direct_c {
        steps.push(unpad_step(c_k, c, m, n, np, sms));
    }
    let how = match (forced_tile.is_some(), forced_splits.is_some()) {
        (false, false) if b_multicast => {
            "by shape: B's misaligned rows read in place, half per CTA"
        }
        (false, false) => "by shape",
        (true, false) => "tile forced",
        (false, true) => "split forced",
        (true, true) => "forced",
    };
    let mut copies = Vec::new();
    if pad.copies_a(k) {
        copies.push(format!("A into rows of {kp}"));
    }
    if pad.copies_b(n) {
        copies.push(format!("B into rows of {}", pad.ldb));
    }
    if pad.pads_c(n) && !direct_c {
        copies.push(format!("C through rows of {np}"));
    }
    let padded = if copies.is_empty() {
        String::new()
    } else {
        format!("; copies: {}", copies.join(", "))
    };
    let epilogue = if direct_c {
        "register stores into C in place (rows at any alignment, the last chunk cut at N)"
    } else {
        epilogue_name(&tile, plan.splits, k, tma_store, want_tma_store)
    };
    let variant = format!(
        "{name} (tma+wgmma {}x{}x64, {} stages, {} CTA(s)/cluster, split-K {}, epilogue {epilogue}; {grid} CTAs{resident}; {how}{padded})",
        tile.bm, tile.bn, tile.stages, tile.cluster, plan.splits
    );
    let chain = super::from_env(case, PDL_ENV, parse_pdl)?;
    super::launch_sequence(gpu, file, steps, keep, variant, chain)
}

/// How the launched GEMM writes C, for the case's configuration: fp32 partials with K splits,
/// else TMA stores (`tma_store`: the `_ts` entry runs; the 128x256 ones, plain and cluster, the
/// 192x192 and the 128x192 one store each finished tile during the next tile's first four or
/// three K blocks (session 44 for 192x192 and the cluster, 46 for 128x192), and where K
/// has more blocks of 64 than the tile has stages, a CTA's last tile runs its last `stages`
/// blocks one consumer warpgroup after the other, so that the first ones' rows are stored while
/// the last one's finish) or
/// register stores, saying when the TMA store was wanted (`want_tma_store`) but the kernel
/// source lacks the entry.
fn epilogue_name(
    tile: &WgTile,
    splits: u64,
    k: u64,
    tma_store: bool,
    want_tma_store: bool,
) -> &'static str {
    let overlapped =
        (tile.bm == 128 && tile.bn == 256 && !tile.pair_n) || (tile.bn == 192 && tile.cluster == 1);
    match (splits > 1, tma_store, want_tma_store) {
        (true, _, _) => "fp32 partials",
        (false, true, _) if overlapped && k.div_ceil(64) > tile.stages as u64 => {
            "TMA store, overlapped with the next tile; the last tile's tail skewed by warpgroup"
        }
        (false, true, _) if overlapped => "TMA store, overlapped with the next tile",
        (false, true, _) => "TMA store",
        (false, false, true) => "register stores (this kernel source has no TMA-store entry)",
        (false, false, false) => "register stores",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`pick`] with B read in place from rows of `n` elements.
    fn pick_in_place(
        m: u64,
        n: u64,
        k: u64,
        sms: u64,
        tile: Option<WgTile>,
        splits: Option<u64>,
    ) -> Plan {
        pick(m, n, k, n, sms, tile, splits)
    }

    #[test]
    fn the_128x256_and_192_column_tma_store_tiles_overlap_their_epilogue() {
        let by = |n: &str| TILES.iter().find(|t| t.name() == n).unwrap();
        for name in ["128x256", "128x256_c2", "192x192", "128x192"] {
            let t = by(name);
            // 4 stages (128x192: 5): the tail is skewed from stages + 1 K blocks on
            let first_skewed = 64 * t.stages as u64 + 1;
            for k in [first_skewed, 2048, 4097] {
                assert_eq!(
                    epilogue_name(t, 1, k, true, true),
                    "TMA store, overlapped with the next tile; the last tile's tail skewed by warpgroup",
                    "{name} k {k}"
                );
            }
            for k in [8, 64, first_skewed - 1] {
                assert_eq!(
                    epilogue_name(t, 1, k, true, true),
                    "TMA store, overlapped with the next tile",
                    "{name} k {k}"
                );
            }
        }
        let t = by("128x256");
        assert_eq!(epilogue_name(t, 2, 4096, true, true), "fp32 partials");
        assert_eq!(epilogue_name(t, 1, 4096, false, false), "register stores");
        assert_eq!(
            epilogue_name(t, 1, 4096, false, true),
            "register stores (this kernel source has no TMA-store entry)"
        );
        for n in ["128x128_c2", "128x128", "128x64", "128x64_n2"] {
            assert_eq!(
                epilogue_name(by(n), 1, 4096, true, true),
                "TMA store",
                "{n}"
            );
        }
    }

    #[test]
    fn tiles_match_the_kernel_table() {
        // The dynamic smem sizes the kernel file static_asserts, and its thread counts.
        let smem: Vec<u32> = TILES.iter().map(|t| t.smem()).collect();
        assert_eq!(
            smem,
            [
                197_760, 197_760, 205_952, 99_456, 197_760, 197_760, 205_952, 197_760, 197_760,
                197_760, 197_760
            ]
        );
        let threads: Vec<u32> = TILES.iter().map(|t| t.threads()).collect();
        assert_eq!(
            threads,
            [384, 384, 256, 256, 384, 384, 384, 384, 384, 384, 512]
        );
        for t in TILES {
            assert!(u64::from(t.smem()) <= MAX_DYNAMIC_SMEM, "{}", t.name());
            // The CTAs per SM fit in 228 KiB (1 KiB reserved per CTA).
            assert!(t.ctas_per_sm * (t.smem() as u64 + 1024) <= 228 * 1024);
        }
        assert_eq!(TILES[0].tiles(2048, 512), 32);
        assert_eq!(TILES[3].tiles(1, 8), 1);
        // clusters: M tiles padded to pairs, grid a whole number of clusters
        assert_eq!(TILES[4].tiles(3 * 128, 256), 4);
        assert_eq!(TILES[5].tiles(1, 8), 2);
        assert_eq!(TILES[4].grid(1000, 132), 132);
        assert_eq!(TILES[4].grid(1000, 131), 130);
        assert_eq!(TILES[4].grid(6, 132), 6);
        assert_eq!(TILES[4].name(), "128x256_c2");
        // N pairs: N tiles padded to pairs
        assert_eq!(TILES[8].name(), "128x64_n2");
        assert_eq!(TILES[8].tiles(2048, 512), 128);
        assert_eq!(TILES[8].tiles(129, 65), 4);
        assert_eq!(TILES[9].tiles(1024, 1024), 64);
    }

    #[test]
    fn a_multicast_pairs_only_where_a_rows_are_misaligned() {
        // Measured wins (session 19): misaligned K, M ≥ 128, three or more K blocks.
        for &(m, n, k) in &[
            (1000u64, 1000u64, 1000u64),
            (777, 1000, 136),
            (777, 999, 136),
        ] {
            assert_eq!(
                pick_in_place(m, n, k, 132, None, None).tile.name(),
                "128x64_n2",
                "{m}x{n}x{k}"
            );
        }
        // Two K blocks, short M, aligned K: never.
        for &(m, n, k) in &[
            (130u64, 1001u64, 72u64),
            (1000, 1000, 100),
            (17, 8192, 80),
            (64, 64, 8),
            (1024, 1024, 1024),
            (2048, 512, 4096),
            (8191, 264, 128),
        ] {
            assert!(
                !pick_in_place(m, n, k, 132, None, None).tile.pair_n,
                "{m}x{n}x{k}"
            );
        }
        assert!(
            !n_pairs_in_pick(TILES[9], 1000, 1000),
            "128x128_n2 stays forced-only"
        );
    }

    #[test]
    fn cluster_tiles_halve_b_traffic_in_the_model() {
        // Automatic picks take them only where B's rows as read are misaligned: not with
        // aligned N, nor where the alignment copy made B's rows 128-byte multiples.
        for &(m, n, k, ldb) in &[
            (4096u64, 1000u64, 4096u64, 1024u64),
            (8192, 1000, 8192, 1024),
            (8192, 8192, 8192, 8192),
            (4096, 1024, 4096, 1024),
            (256, 256, 256, 256),
        ] {
            let t = pick(m, n, k, ldb, 132, None, None).tile;
            assert!(t.cluster == 1 || t.pair_n, "{m}x{n}x{k} ldb {ldb}");
        }
        assert!(!m_pairs_in_pick(1024) && m_pairs_in_pick(1000) && m_pairs_in_pick(3000));
        // Where they are in the pick, it takes them where session 47 measured them ahead
        // (dev bench, bf16 and fp16 µs, old plan -> cluster; H100 GPU-e2e86e01 / H200
        // GPU-661be54a / GPU-d90a2ea5): 1901×5032×5744 128x256 split 2 312.1 -> 182.8 (H100);
        // 963×7016×7624 281.8 -> 187.7 (H100); 1792×3000×6144 128x192 155.9 -> 125.5 (H100),
        // 129.7 -> 111.9 (H200); 386×3800×904 128x128 18.34 -> 15.07 (H100).
        for &(m, n, k, want) in &[
            (1901u64, 5032u64, 5744u64, "128x256_c2"),
            (963, 7016, 7624, "128x256_c2"),
            (1792, 3000, 6144, "128x128_c2"),
            (386, 3800, 904, "128x128_c2"),
        ] {
            assert_eq!(
                pick_in_place(m, n, k, 132, None, None).tile.name(),
                want,
                "{m}x{n}x{k}"
            );
        }
        // Nor the N pairs where K is aligned (or M short), and 128x64 only where K is long.
        for &(m, n, k) in &[
            (2048u64, 512u64, 4096u64),
            (256, 256, 256),
            (1024, 1024, 1024),
            (5, 3000, 1000),
        ] {
            let t = pick_in_place(m, n, k, 132, None, None).tile;
            assert!(!t.pair_n, "{m}x{n}x{k}");
            assert!(
                t.bn != 64 || (k.div_ceil(BK) >= BN64_MIN_KBLOCKS && m >= 128),
                "{m}x{n}x{k}"
            );
        }
        // 4096×1000×4096 (one wave, misaligned B rows: L2-bound in the model) gains from
        // multicast; 8192³ (tensor-core bound) does not.
        let c = |t: WgTile, m, n, k| plan_cost(t, 1, m, n, k, 132);
        assert!(c(TILES[4], 4096, 1000, 4096) < 0.9 * c(TILES[0], 4096, 1000, 4096));
        assert!(c(TILES[4], 8192, 8192, 8192) >= c(TILES[0], 8192, 8192, 8192));
    }

    #[test]
    fn pdl_values_choose_the_chain() {
        assert_eq!(parse_pdl(None), Ok(super::super::Chain::Dependent));
        assert_eq!(parse_pdl(Some("1")), Ok(super::super::Chain::Dependent));
        assert_eq!(parse_pdl(Some("all")), Ok(super::super::Chain::Dependent));
        assert_eq!(
            parse_pdl(Some("inner")),
            Ok(super::super::Chain::Overlapped)
        );
        assert_eq!(parse_pdl(Some(" 0 ")), Ok(super::super::Chain::Ordinary));
        let e = parse_pdl(Some("yes")).unwrap_err();
        assert!(e.contains(PDL_ENV) && e.contains("`all`"), "{e}");
    }

    #[test]
    fn env_values() {
        assert_eq!(parse_tile(None), Ok(None));
        assert_eq!(parse_tile(Some("")), Ok(None));
        for t in TILES {
            assert_eq!(parse_tile(Some(&t.name())), Ok(Some(t)));
        }
        let err = parse_tile(Some("256x128")).unwrap_err();
        assert!(err.contains(TILE_ENV) && err.contains("64x128"), "{err}");
        assert_eq!(parse_splits(None), Ok(None));
        assert_eq!(parse_splits(Some(" 4 ")), Ok(Some(4)));
        for s in 1..=MAX_SPLITS {
            assert_eq!(parse_splits(Some(&s.to_string())), Ok(Some(s)));
        }
        assert!(parse_splits(Some("0")).is_err());
        assert!(parse_splits(Some("17")).is_err());
    }

    #[test]
    fn epilogue_values() {
        assert_eq!(parse_epilogue(None), Ok(true));
        assert_eq!(parse_epilogue(Some("")), Ok(true));
        assert_eq!(parse_epilogue(Some(" tma ")), Ok(true));
        assert_eq!(parse_epilogue(Some("regs")), Ok(false));
        let e = parse_epilogue(Some("smem")).unwrap_err();
        assert!(e.contains(EPILOGUE_ENV) && e.contains("`regs`"), "{e}");
    }

    #[test]
    fn every_tile_has_direct_c_entries_and_the_padding_copy() {
        // `prepare` may pick any tile for an N that is not a multiple of 8: each needs its `_uc`
        // entry in both dtypes, and the file its own `gemm_wgmma_pad16` for B.
        let text = super::super::kernel_source(UC_FILE);
        for t in TILES {
            for dt in ["bf16", "f16"] {
                let name = format!("gemm_wgmma_{dt}_{}_uc,", t.name());
                assert!(text.contains(&name), "{UC_FILE} lacks {name}");
            }
        }
        assert!(text.contains("gemm_wgmma_pad16("));
        assert_eq!(
            text.matches("_uc, ").count(),
            2 * TILES.len(),
            "one `_uc` entry per tile and dtype"
        );
    }

    #[test]
    fn direct_c_where_the_output_is_large_enough() {
        // the measured shapes on either side of the threshold
        for (m, n) in [
            (4095, 4097),
            (8191, 4097),
            (1024, 1025),
            (777, 999),
            (130, 1001),
        ] {
            assert!(direct_c_pays(m, n), "{m}x{n}");
        }
        for (m, n) in [(129, 257), (2048, 9), (33, 17), (100, 100)] {
            assert!(!direct_c_pays(m, n), "{m}x{n}");
        }
        assert!(direct_c_pays(4096, 16) && !direct_c_pays(4095, 16));
    }

    #[test]
    fn direct_c_switch_values() {
        let p = |v| super::super::parse_switch(DIRECT_C_ENV, v);
        assert_eq!(p(None), Ok(true));
        assert_eq!(p(Some("0")), Ok(false));
        assert!(p(Some("yes")).unwrap_err().contains(DIRECT_C_ENV));
    }

    #[test]
    fn tma_store_entries_exist_for_exactly_the_tiles_that_name_them() {
        // Every tile with `tma_store` has `_ts` entries in both dtypes, of the size the kernel
        // file static_asserts; no other tile has one (the host would ask for a missing symbol).
        // the entries in the .cu, the tile configurations and the body in the header
        let text = super::super::kernel_source("gemm_wgmma.cu")
            + &super::super::kernel_source("gemm_wgmma.cuh");
        let with: Vec<String> = TILES
            .iter()
            .filter(|t| t.tma_store)
            .map(|t| t.name())
            .collect();
        assert_eq!(
            with,
            [
                "128x256",
                "128x128",
                "128x256_c2",
                "128x128_c2",
                "128x192",
                "128x64",
                "192x192"
            ]
        );
        for t in TILES {
            for dt in ["bf16", "f16"] {
                let entry = format!("(gemm_wgmma_{dt}_{}_ts,", t.name());
                assert_eq!(text.contains(&entry), t.tma_store, "{entry}");
            }
            if t.tma_store {
                let (boxes, smem) = if t.bn == 192 {
                    (1, 223_232)
                } else {
                    (2, 231_424)
                };
                assert_eq!(t.staging_boxes(), boxes, "{}", t.name());
                assert_eq!(t.smem_tma_store(), smem, "{}", t.name());
                assert!(u64::from(t.smem_tma_store()) <= MAX_DYNAMIC_SMEM);
                assert!(t.ctas_per_sm * (t.smem_tma_store() as u64 + 1024) <= 228 * 1024);
            }
        }
        for (tile, bytes) in [
            ("128x256", 231_424),
            ("128x128", 231_424),
            ("128x64", 231_424),
            ("192x192", 223_232),
            ("128x192", 223_232),
        ] {
            let recipe = format!("SMEM_BYTES_TS == {bytes}, \"host recipe: {tile}_ts");
            assert!(text.contains(&recipe), "{recipe}");
        }
        // Tiles whose box count is not a multiple of their staging boxes (128x64: one box, two
        // staging boxes) are correct only while the kernel picks the staging box by a running
        // count over the warpgroup's tiles: by the column block (`j & 1`, session 32) 128x64
        // overwrote a box its previous tile's store was still reading (wrong at 8192×8192×8 in
        // the dev bench). 192x192 (three boxes, one staging box) needs no count.
        assert!(text.contains("if constexpr ((BN / 64) % CF::EPI_NBUF == 0)"));
        assert!(text.contains("slot = ebox++ % CF::EPI_NBUF;"));
        assert!(!text.contains("(j & 1) * CF::EPI_BOX_BYTES"));
    }

    /// [`fixture_plan`] (before [`multicast_misaligned_b`]) by tile name and splits.
    fn p(m: u64, n: u64, k: u64) -> (String, u64) {
        let p = fixture_plan(m, n, k);
        (p.tile.name(), p.splits)
    }

    #[test]
    fn big_problems_take_the_big_tile_unsplit() {
        for s in [2048, 4096, 6144, 8192] {
            assert_eq!(p(s, s, s), ("128x256".into(), 1), "{s}");
        }
        assert_eq!(p(8192, 1024, 8192), ("128x256".into(), 1));
        assert_eq!(p(4096, 1000, 4096).1, 1);
    }

    #[test]
    fn suite_picks_match_the_h100_measurement() {
        // Measured best (or within 3% of it, both dtypes) per suite shape in the H100 run of
        // `kernels/dev/run_gemm_wgmma_bench.sh` (/work/shared-data/h100-gemm-wgmma-bench.txt,
        // GPU-e2f46ae1, L2 flushed, every tile × split timed). bf16 µs of the pinned plan:
        // 256³ 6.72, 512³ 8.51, 1024³ 12.19 (128x128: 13.54), 1000³ 13.86 (64x128: 14.98),
        // 777×1000×136 7.49, 2048×512×4096 26.40, 2048³ 34.11 (f16: 35.49 vs 128x128 35.04),
        // 3072³ 113.98 (128x256: 116.61), 4096³ 197.54, 4096×1000×4096 75.71, 6144³ 639.87,
        // 8192³ 1510.5, 8192×1024×8192 185.63.
        for &(m, n, k, tile, splits) in &[
            (256u64, 256u64, 256u64, "64x128", 1u64),
            (512, 512, 512, "64x128", 1),
            // 128x64 (session 18, forced on H100 GPU-b75b1e0a): 7.2 µs against 7.7 for 64x128.
            (1024, 1024, 1024, "128x64", 1),
            // 128x64_n2 with the producer tail (session 19, H100 GPU-9856f8c5, forced beside
            // the pick): 11.01 µs against 11.77 for 128x128, 4.89 against 5.26 for 64x128.
            (1000, 1000, 1000, "128x64_n2", 1),
            (777, 1000, 136, "128x64_n2", 1),
            // 128x64 (session 18, same run): 19.0 µs against 22.1 for 128x128 split 2.
            (2048, 512, 4096, "128x64", 1),
            // M = 5 stays on the 64-row tile, split 4 (7.7 µs; 128x64 9.8, GPU-3ea44b83).
            (5, 3000, 1000, "64x128", 4),
            (2048, 2048, 2048, "128x256", 1),
            // 128x192 (added later, forced on H100 GPU-cb034f80): 83.1 µs against 95.8 for
            // 128x128 in the same run; then 192x192 (session 28, H100 GPU-042aa07b): 77.9
            // against 81.3 for 128x192; both lose on every other square.
            (3072, 3072, 3072, "192x192", 1),
            (4096, 4096, 4096, "128x256", 1),
            (4096, 1000, 4096, "128x256", 1),
            (6144, 6144, 6144, "128x256", 1),
            (8192, 8192, 8192, "128x256", 1),
            (8192, 1024, 8192, "128x256", 1),
        ] {
            assert_eq!(p(m, n, k), (tile.into(), splits), "{m}x{n}x{k}");
        }
    }

    #[test]
    fn held_out_shapes_keep_the_plan_measured_ahead_of_a_refit() {
        // Session 46 refitted four cost constants to three 50-shape dev-bench sweeps
        // (scripts/pick_refit.py fit: 128x256 wave 8800, 128x128 kblock 351, 64x128 wave 5508,
        // 128x192 kblock 586); on 30 held-out random shapes whose plan that changed it was 4%
        // slower in geomean (H100 GPU-c0baa2b5, docs/kernels/session46). These are the shapes
        // where the current plan won by 5% or more (bf16 µs, current against refitted plan): a
        // change of the model must measure them again.
        for &(m, n, k, tile, splits) in &[
            (152u64, 7296u64, 7552u64, "192x192", 3u64), // 51.26 against 79.01 (128x128)
            (136, 3776, 7872, "192x192", 6),             // 34.56 against 37.22 (128x128 /2)
            (338, 1792, 3200, "128x64", 1),              // 15.20 against 17.47 (128x128 /3)
            (404, 2560, 1720, "64x128", 1),              // 17.25 against 18.46 (128x128)
            (3874, 7680, 3704, "128x256", 1),            // 325.95 against 354.46 (192x192)
            (4005, 7424, 3976, "128x256", 1),            // 348.32 against 376.90 (192x192)
            (5389, 6784, 2040, "128x256", 1),            // 225.06 against 247.33 (192x192)
            (6537, 5504, 2424, "128x256", 1),            // 261.60 against 278.24 (192x192)
            (6569, 1920, 10560, "128x192", 1),           // 337.98 against 415.52 (128x128)
            (7650, 768, 13184, "128x192", 1),            // 209.89 against 258.85 (128x128)
        ] {
            assert_eq!(p(m, n, k), (tile.into(), splits), "{m}x{n}x{k}");
        }
    }

    /// The `m × n × k` of every bf16/fp16 GEMM case of every committed suite, sorted, once each.
    fn fixture_gemm_shapes() -> Vec<(u64, u64, u64)> {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        let mut shapes = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_none_or(|e| e != "json") {
                continue;
            }
            let suite = crate::suite::Suite::load(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for case in suite
                .cases
                .iter()
                .filter(|c| c.kernel == "gemm" && matches!(c.dtype, Dtype::Bf16 | Dtype::Fp16))
            {
                let s = &case.shape;
                shapes.push((s.get("m"), s.get("n"), s.get("k")));
            }
        }
        shapes.sort_unstable();
        shapes.dedup();
        assert!(
            shapes.len() > 40,
            "only {} GEMM shapes found under {}",
            shapes.len(),
            dir.display()
        );
        shapes
    }

    /// The automatic plan of `m × n × k` on 132 SMs, with the same padding as `prepare`.
    fn fixture_plan(m: u64, n: u64, k: u64) -> Plan {
        let pad = Padding::of(m, n, k, parse_align(None).unwrap());
        pick(m, pad.np, pad.kp, pad.ldb, 132, None, None)
    }

    #[test]
    fn the_192_tile_is_picked_at_3072_cubed_alone_in_every_fixture() {
        // 192x192 is measured ahead only at 3072³ (session 28); every other bf16/fp16 GEMM
        // case of every committed suite keeps a measured tile.
        let at: Vec<_> = fixture_gemm_shapes()
            .into_iter()
            .filter(|&(m, n, k)| fixture_plan(m, n, k).tile.name() == "192x192")
            .collect();
        assert_eq!(at, [(3072, 3072, 3072)]);
    }

    /// The cluster tile [`multicast_misaligned_b`] gives the automatic plan of `m × n × k`, by
    /// name.
    fn multicast_tile(m: u64, n: u64, k: u64) -> Option<String> {
        let pad = Padding::of(m, n, k, parse_align(None).unwrap());
        multicast_misaligned_b(fixture_plan(m, n, k), pad, n).map(|t| t.name())
    }

    #[test]
    fn misaligned_b_is_multicast_only_where_measured_in_every_fixture() {
        // Session 43 measured the clusters reading B in place ahead of the copy; every fixture
        // shape they take must be one of those measured.
        let at: Vec<_> = fixture_gemm_shapes()
            .into_iter()
            .filter(|&(m, n, k)| multicast_tile(m, n, k).is_some())
            .collect();
        assert_eq!(at, [(4096, 1000, 4096)]);
    }

    #[test]
    fn misaligned_b_is_multicast_where_measured_ahead() {
        let c2 = |m, n, k| multicast_tile(m, n, k);
        let wide = Some("128x256_c2".to_string());
        let narrow = Some("128x128_c2".to_string());
        // measured ahead (session 43): 128x256 and 192x192 plans, then 128x128 plans
        assert_eq!(c2(4096, 1000, 4096), wide);
        assert_eq!(c2(4096, 1000, 1024), wide);
        assert_eq!(c2(4096, 1000, 512), wide);
        assert_eq!(fixture_plan(8192, 1000, 8192).tile.name(), "192x192");
        assert_eq!(c2(8192, 1000, 8192), wide);
        for (m, n, k) in [
            (2048, 1000, 4096),
            (2048, 1000, 1024),
            (2048, 520, 1024),
            (3000, 520, 4096),
            (4096, 264, 4096),
            (4096, 264, 1024),
        ] {
            assert_eq!(c2(m, n, k), narrow, "{m}x{n}x{k}");
        }
        // left alone: no copy to replace (M or K too small), the 128x192 plans
        assert_eq!(c2(1024, 2000, 4096), None);
        assert_eq!(c2(1024, 1504, 1024), None);
        assert_eq!(c2(8191, 264, 128), None);
        assert_eq!(fixture_plan(8191, 264, 1024).tile.name(), "128x192");
        assert_eq!(c2(8191, 264, 1024), None);
        // aligned rows, and rows TMA cannot read in place (N not a multiple of 8)
        assert_eq!(c2(4096, 1024, 4096), None);
        assert_eq!(c2(8192, 8192, 8192), None);
        assert_eq!(c2(4095, 4097, 4096), None);
        // split plans, cluster plans and the other tiles never
        let pad = Padding::of(4096, 1000, 4096, parse_align(None).unwrap());
        let split = Plan {
            tile: TILES[0],
            splits: 2,
        };
        assert_eq!(multicast_misaligned_b(split, pad, 1000), None);
        for t in TILES {
            let got = multicast_misaligned_b(Plan { tile: t, splits: 1 }, pad, 1000);
            let want = [TILES[0], TILES[1]].contains(&t) || (t.bm == 192);
            assert_eq!(got.is_some(), want, "{}", t.name());
            if let Some(c) = got {
                let bn = if t.bn == 128 { 128 } else { 256 };
                assert_eq!((c.bm, c.bn, c.cluster, c.pair_n), (128, bn, 2, false));
            }
        }
        // without the copy (ALIGN off) nothing is replaced
        let off = Padding::of(4096, 1000, 4096, None);
        assert_eq!(
            multicast_misaligned_b(fixture_plan(4096, 1000, 4096), off, 1000),
            None
        );
        // the replaced plan reads B in place; N not a multiple of 8 keeps its copy
        assert!(pad.copies_b(1000));
        assert!(!pad.b_in_place(1000).copies_b(1000));
        let pad = Padding::of(4095, 4097, 4096, parse_align(None).unwrap());
        assert_eq!(pad.b_in_place(4097), pad);
    }

    #[test]
    fn misaligned_b_env_values() {
        assert_eq!(parse_misaligned_b(None), Ok(true));
        assert_eq!(parse_misaligned_b(Some("")), Ok(true));
        assert_eq!(parse_misaligned_b(Some("multicast")), Ok(true));
        assert_eq!(parse_misaligned_b(Some(" copy ")), Ok(false));
        let e = parse_misaligned_b(Some("c2")).unwrap_err();
        assert!(e.contains(MISALIGNED_B_ENV) && e.contains("`copy`"), "{e}");
    }

    #[test]
    fn the_dev_bench_mirrors_the_tile_table_and_the_pick_constants() {
        // kernels/dev/gemm_wgmma_bench.cu times every tile and marks the pick with its own copy
        // of the table and cost model; a tile or constant changed on one side only would make the
        // bench's "pick" column lie.
        let text = super::super::kernel_source("dev/gemm_wgmma_bench.cu");
        let start = text
            .find("static const TileCfg TILES[] = {")
            .expect("the bench's table");
        let end = start + text[start..].find("};").unwrap();
        // (name, the seven numbers, pair_n, the bf16 and f16 entries, ts)
        type Row = (String, Vec<u64>, bool, [String; 2], bool);
        let rows: Vec<Row> = text[start..end]
            .lines()
            .filter_map(|l| {
                let (name, rest) = l.trim().strip_prefix("{\"")?.split_once('"')?;
                let rest = rest.trim_end().strip_suffix("},")?;
                let f: Vec<&str> = rest.split(',').map(str::trim).skip(1).collect();
                let nums = f[..7].iter().map(|x| x.parse().unwrap()).collect();
                let entry = |x: &str| x.trim_start_matches("(const void*)").to_string();
                let entries = [entry(f[8]), entry(f[9])];
                Some((
                    name.to_string(),
                    nums,
                    f[7] == "true",
                    entries,
                    f.get(10) == Some(&"true"),
                ))
            })
            .collect();
        assert_eq!(rows.len(), TILES.len());
        assert!(text.contains(&format!("static const int NT = {};", TILES.len())));
        for ((name, nums, pair_n, entries, ts), t) in rows.iter().zip(TILES) {
            // The bench launches the entry the host launches by default: `_ts` where the tile
            // has one, and sizes its shared memory for it.
            let sfx = if t.tma_store { "_ts" } else { "" };
            assert_eq!(*ts, t.tma_store, "{name}: ts flag");
            for (e, dt) in entries.iter().zip(["bf16", "f16"]) {
                assert_eq!(e, &format!("gemm_wgmma_{dt}_{}{sfx}", t.name()));
            }
            let want = [
                t.bm,
                t.bn,
                t.stages as u64,
                t.ctas_per_sm,
                t.kblock_ns,
                t.wave_ns,
                t.cluster,
            ];
            assert_eq!(
                (name.as_str(), nums.as_slice(), *pair_n),
                (t.name().as_str(), &want[..], t.pair_n)
            );
        }
        for (c, v) in [
            ("BN64_MIN_KBLOCKS", BN64_MIN_KBLOCKS),
            ("WIDE_MIN_KBLOCKS", WIDE_MIN_KBLOCKS),
            ("MAX_SPLITS", MAX_SPLITS),
            ("MIN_KBLOCKS_PER_SPLIT", MIN_KBLOCKS_PER_SPLIT),
        ] {
            assert!(
                text.contains(&format!("{c} = {v}")),
                "{c} = {v} in the bench"
            );
        }
        assert!(text.contains(&format!("L2_BYTES_PER_US = {:.1}e6", L2_BYTES_PER_US / 1e6)));
        assert!(text.contains(&format!("MISALIGNED_TRAFFIC = {MISALIGNED_TRAFFIC:?}")));
        assert!(text.contains(&format!("REDUCE_LAUNCH_US = {REDUCE_LAUNCH_US:?}")));
        assert!(text.contains(&format!(
            "PARTIAL_BYTES_PER_US = {:.1}e6",
            PARTIAL_BYTES_PER_US / 1e6
        )));
    }

    #[test]
    fn padding_rounds_n_and_k_up_to_whole_16_byte_rows() {
        const A: Option<u64> = Some(ALIGN_MIN_OTHER);
        // K = 100: A copied into rows of 104 (N = 1000 too small for 128-byte rows).
        let p = Padding::of(1000, 1000, 100, A);
        assert_eq!((p.np, p.kp, p.ldb), (1000, 104, 1000));
        assert!(p.copies_a(100) && !p.copies_b(1000) && !p.pads_c(1000));
        // N = 4097: B copied into rows of 4104 (M = 4095 ≥ 2048 and K ≥ 256: 128-byte rows,
        // 4160) and C through rows of 4104 (or written in place, see `direct_c_pays`).
        let p = Padding::of(4095, 4097, 256, A);
        assert_eq!((p.np, p.kp, p.ldb), (4104, 256, 4160));
        assert!(!p.copies_a(256) && p.copies_b(4097) && p.pads_c(4097));
        let p = Padding::of(4095, 4097, 256, None);
        assert_eq!(p.ldb, 4104);
        // K below ALIGN_MIN_K: no copy where TMA can read B in place; where it cannot, the
        // copy it needs is aligned all the same.
        let p = Padding::of(4095, 4097, 64, A);
        assert_eq!((p.np, p.kp, p.ldb), (4104, 64, 4160));
        assert_eq!(Padding::of(2048, 9, 64, A).ldb, 64);
        assert!(!Padding::of(8191, 264, 128, A).copies_b(264));
        assert_eq!(Padding::of(8191, 264, 256, A).ldb, 320);
        let p = Padding::of(1, 9, 5, A);
        assert_eq!((p.np, p.kp, p.ldb), (16, 8, 16));
        assert!(p.copies_a(5) && p.copies_b(9) && p.pads_c(9));
        // N = 1000 with M = 4096: B aligned to rows of 1024, C written in place.
        let p = Padding::of(4096, 1000, 4096, A);
        assert_eq!((p.np, p.ldb), (1000, 1024));
        assert!(!p.copies_a(4096) && p.copies_b(1000) && !p.pads_c(1000));
        assert!(!Padding::of(4096, 1000, 4096, None).copies_b(1000));
        // A is never aligned, only padded to a multiple of 8.
        assert!(!Padding::of(777, 1000, 136, A).copies_a(136));
        assert!(!Padding::of(4096, 4096, 1000, A).copies_a(1000));
        assert_eq!(Padding::of(4096, 4096, 1001, A).kp, 1008);
        // Aligned shapes copy nothing.
        let p = Padding::of(4096, 4096, 4096, A);
        assert!(!p.copies_a(4096) && !p.copies_b(4096) && !p.pads_c(4096));
        // Every copied row is a whole number of 16-byte chunks (what the pad kernel writes).
        for x in 1..300u64 {
            for m in [1, 4096] {
                let p = Padding::of(m, x, x, A);
                assert!(
                    p.np.is_multiple_of(8) && p.kp.is_multiple_of(8) && p.np >= x && p.np - x < 8
                );
                assert!(p.ldb.is_multiple_of(8) && p.ldb >= p.np);
            }
        }
    }

    proptest::proptest! {
        /// Any shape: the plan for the padded problem is a tile `pick` may take, a split count
        /// in range that leaves no split empty, a grid of at least one CTA and at most one per
        /// unit, and tiles that cover the output.
        #[test]
        fn plans_for_any_shape_cover_it(m in 1u64..20_000, n in 1u64..20_000, k in 1u64..20_000) {
            let pad = Padding::of(m, n, k, Some(ALIGN_MIN_OTHER));
            let p = pick(m, pad.np, pad.kp, pad.ldb, 132, None, None);
            proptest::prop_assert!(in_pick(p.tile, m, pad.kp, pad.ldb));
            // the pick's own B-multicast clusters only where B's rows stay misaligned
            proptest::prop_assert!(p.tile.cluster == 1 || p.tile.pair_n || !pad.ldb.is_multiple_of(64));
            proptest::prop_assert!((1..=MAX_SPLITS).contains(&p.splits));
            let num_k = pad.kp.div_ceil(BK);
            let kb_per = num_k.div_ceil(p.splits);
            proptest::prop_assert!(p.splits == 1 || (p.splits - 1) * kb_per < num_k);
            proptest::prop_assert!(p.splits == 1 || kb_per >= MIN_KBLOCKS_PER_SPLIT);
            let tiles = p.tile.tiles(m, pad.np);
            proptest::prop_assert!(
                m.div_ceil(p.tile.bm) * pad.np.div_ceil(p.tile.bn) <= tiles
            );
            let units = tiles * p.splits;
            let grid = p.tile.grid(units, 132);
            proptest::prop_assert!(grid >= 1 && grid <= units);
            proptest::prop_assert!(u64::from(p.tile.smem()) <= MAX_DYNAMIC_SMEM);
        }

        /// Any shape: the misaligned-B cluster replaces only an unsplit 128x256, 192x192 or
        /// 128x128 plan whose B rows TMA could read in place but `Padding` would copy; it keeps
        /// the plan's rows per CTA (128) and the width (256, or 128 for 128x128), pairs along M
        /// (B multicast), and with B in place nothing but A's and C's padding stays.
        #[test]
        fn the_misaligned_b_cluster_replaces_only_the_copy(
            m in 1u64..20_000, n in 1u64..20_000, k in 1u64..20_000,
        ) {
            let pad = Padding::of(m, n, k, Some(ALIGN_MIN_OTHER));
            let plan = pick(m, pad.np, pad.kp, pad.ldb, 132, None, None);
            match multicast_misaligned_b(plan, pad, n) {
                Some(c) => {
                    proptest::prop_assert!(n.is_multiple_of(8) && !n.is_multiple_of(64));
                    proptest::prop_assert!(pad.copies_b(n) && plan.splits == 1);
                    let wide = plan.tile == TILES[0] || plan.tile.bm == 192;
                    proptest::prop_assert!(wide || plan.tile == TILES[1]);
                    proptest::prop_assert_eq!(c, if wide { TILES[4] } else { TILES[5] });
                    proptest::prop_assert!(c.cluster == 2 && !c.pair_n && c.bm == 128);
                    let inplace = pad.b_in_place(n);
                    proptest::prop_assert!(!inplace.copies_b(n));
                    proptest::prop_assert_eq!((inplace.np, inplace.kp), (pad.np, pad.kp));
                    proptest::prop_assert!(u64::from(c.smem()) <= MAX_DYNAMIC_SMEM);
                }
                None => proptest::prop_assert!(
                    plan.splits != 1
                        || !pad.copies_b(n)
                        || !n.is_multiple_of(8)
                        || ![TILES[0], TILES[1]].contains(&plan.tile) && plan.tile.bm != 192
                ),
            }
        }

        /// Any shape: the kernel sees N and K as multiples of 8 no smaller than the real ones
        /// and less than 8 larger, copies are made exactly when TMA needs them or B is aligned,
        /// and every copied row is a whole number of 16-byte chunks.
        #[test]
        fn padding_for_any_shape(m in 1u64..100_000, n in 1u64..100_000,
                                 k in proptest::prop_oneof![1u64..512, 1u64..100_000],
                                 align in proptest::option::of(1u64..10_000)) {
            let p = Padding::of(m, n, k, align);
            proptest::prop_assert!(p.np.is_multiple_of(8) && p.np >= n && p.np - n < 8);
            proptest::prop_assert!(p.kp.is_multiple_of(8) && p.kp >= k && p.kp - k < 8);
            proptest::prop_assert_eq!(p.copies_a(k), !k.is_multiple_of(8));
            proptest::prop_assert_eq!(p.pads_c(n), !n.is_multiple_of(8));
            // small K: aligned rows only where the copy is made anyway (N not a multiple of 8)
            let worth = k >= ALIGN_MIN_K || !n.is_multiple_of(8);
            let aligned = align.is_some_and(|a| m >= a) && worth && !n.is_multiple_of(64);
            proptest::prop_assert_eq!(p.ldb, if aligned { n.next_multiple_of(64) } else { p.np });
            proptest::prop_assert_eq!(p.copies_b(n), aligned || !n.is_multiple_of(8));
            proptest::prop_assert!(p.ldb.is_multiple_of(8) && p.ldb >= p.np);
        }
    }

    #[test]
    fn align_env_values() {
        assert_eq!(parse_align(None), Ok(Some(ALIGN_MIN_OTHER)));
        assert_eq!(parse_align(Some(" ")), Ok(Some(ALIGN_MIN_OTHER)));
        assert_eq!(parse_align(Some("off")), Ok(None));
        assert_eq!(parse_align(Some("512")), Ok(Some(512)));
        let err = parse_align(Some("yes")).unwrap_err();
        assert!(err.contains(ALIGN_ENV) && err.contains("off"), "{err}");
        // A threshold of 1 aligns B of every shape whose N is not a multiple of 64.
        assert_eq!(Padding::of(1000, 1000, 1000, Some(1)).ldb, 1024);
        assert_eq!(Padding::of(1000, 1000, 1000, Some(2048)).ldb, 1000);
    }

    #[test]
    fn pad_steps_cover_the_padded_matrix() {
        // pad16: one thread per 8 elements of the padded rows; unpad16: one per element of C.
        let (name, dims, args) = pad_step(1, 2, 1000, 100, 104, 132);
        assert_eq!(name, "gemm_wgmma_pad16");
        assert!(dims.grid.0 as u64 * 256 >= 1000 * 104 / 8);
        assert_eq!(args.len(), 5);
        let (name, dims, _) = unpad_step(1, 2, 3, 9, 16, 132);
        assert_eq!(name, "gemm_wgmma_unpad16");
        assert_eq!(dims.grid.0, 1);
        let (_, dims, _) = unpad_step(1, 2, 4095, 4097, 4104, 132);
        assert_eq!(dims.grid.0 as u64, 132 * 8);
    }

    #[test]
    fn few_tiles_take_smaller_tiles_or_split_k() {
        // 32 tiles of 128x256 on 132 SMs with K = 4096: K is split or the tile shrinks until
        // the SMs are about filled (128 tiles of 128x64, unsplit, since session 18).
        let plan = pick_in_place(2048, 512, 4096, 132, None, None);
        let units = plan.tile.tiles(2048, 512) * plan.splits;
        assert!(units >= 100, "{plan:?}");
        assert!(plan.splits > 1 || plan.tile.bn == 64, "{plan:?}");
        // Tiny squares: a smaller tile, no split (K too short to split).
        assert_eq!(p(256, 256, 256).1, 1);
        assert_ne!(p(256, 256, 256).0, "128x256");
        assert_ne!(p(1024, 1024, 1024).0, "128x256");
        // K = 8: never split.
        assert_eq!(p(8192, 8192, 8).1, 1);
    }

    #[test]
    fn automatic_splits_keep_enough_k_per_split() {
        for &(m, n, k) in &[
            (2048u64, 512u64, 4096u64),
            (256, 256, 256),
            (777, 1000, 136),
            (128, 128, 65536),
            (512, 512, 512),
            (1000, 1000, 1000),
            (17, 8192, 8192),
        ] {
            let plan = pick_in_place(m, n, k, 132, None, None);
            let num_k = k.div_ceil(BK);
            let kb_per = num_k.div_ceil(plan.splits);
            assert!(plan.splits >= 1 && plan.splits <= MAX_SPLITS);
            if plan.splits > 1 {
                assert!(kb_per >= MIN_KBLOCKS_PER_SPLIT, "{m} {n} {k} {plan:?}");
                assert!((plan.splits - 1) * kb_per < num_k, "empty split: {plan:?}");
            }
        }
        // A long K over one tile splits widely.
        assert!(pick_in_place(128, 128, 65536, 132, None, None).splits >= 8);
    }

    #[test]
    fn forced_choices_are_kept() {
        let t = TILES[3];
        let plan = pick_in_place(8192, 8192, 8192, 132, Some(t), None);
        assert_eq!(plan.tile, t);
        let plan = pick_in_place(8192, 8192, 8192, 132, None, Some(3));
        assert_eq!(plan.splits, 3);
        let plan = pick_in_place(256, 256, 256, 132, Some(TILES[0]), Some(16));
        assert_eq!((plan.tile, plan.splits), (TILES[0], 16));
    }
}
