//! `gemm` where M or N is at most 16 (GEMV-like): the large operand is streamed once at
//! memory bandwidth (`kernels/gemm_skinny.cu`), any architecture, every dtype.

use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::gpu::{Dims, Gpu, KernelArg};

/// The largest M (or N) the skinny kernels take.
pub const MAX_SKINNY: u64 = 16;
/// Threads of a skinny-M CTA (`SKM_THREADS` in the kernel).
const SKM_THREADS: u64 = 256;
/// Most rows of B one skinny-M CTA handles (`SKM_KC` in the kernel).
const SKM_KC: u64 = 256;
/// Fewest rows of B per skinny-M CTA when K is split (below this the atomics cost more than
/// the extra parallelism buys).
const MIN_KCHUNK: u64 = 32;
/// Warps of a skinny-N CTA (`SKN_WARPS`).
const SKN_WARPS: u64 = 8;
/// CTAs per SM the split-K plans aim for.
const CTAS_PER_SM: u64 = 2;
/// Split-K outputs up to this many elements are reduced a warp per element.
const WARP_REDUCE_MAX_ELEMS: u64 = 8192;
/// Warps of a tensor-core skinny-N CTA (`SKT_WARPS`); the CTA owns 16·R rows of A.
const SKT_WARPS: u64 = 4;
/// CTAs per SM the tensor-core skinny-N plan aims for where the row groups are fewer than the
/// SMs (few rows: K is split into many short ranges, their partials added a warp per output).
const SKT_CTAS_PER_SM: u64 = 4;
/// Most row groups of 16 for which the tensor-core skinny-N plan keeps one m16 tile per CTA
/// (R = 1), per SM; beyond it R = 2 (65536×16×1024: 2048 CTAs of 32 rows ran 50.5 µs against
/// 56.8 for 4096 of 16, H100 GPU-0595606e).
const SKT_R1_MAX_GROUPS_PER_SM: u64 = 8;
/// Largest K for which the 8-column tensor-core kernel takes 256-column warp steps (H = 8): one
/// step per warp covers the CTA's whole range, every load in flight at once (2048×3×777 8.1 µs
/// against 11.4 with H = 4; 8192×8×8192 52.3 against 51.0, H100 GPU-0595606e).
const SKT_H8_MAX_K: u64 = 1024;
/// Fewest columns of A for which the 8-column tensor-core kernel takes 256-column warp steps
/// (H = 8) again, where its row groups of 16 number at least [`SKT_H8_LONG_MIN_GROUPS_PER_SM`]
/// per SM, so that K stays unsplit and every CTA streams the whole of it. Session 45, through
/// the harness, three interleaved rounds (`scripts/session45-ntc.sh`), r1h8 against r1h4:
/// 8192×8×8192 1.7–2.3% faster on H100 GPU-a36ff702 and 4.3–4.8% on H200 GPU-8cfb8e0d (3–6% on
/// H200 GPU-d0dfb060 in two rounds), 8192×4×8192 7.7–8.7% on both; where the CTAs get shorter K
/// ranges r1h4 stays ahead on both (16384×8×4096 4–6%, 1024×8×16384 2–5%, 4096×8×4096 0–6%),
/// and 4096×7×12288 (split in three) went each way by 2–3%.
const SKT_H8_LONG_K: u64 = 8192;
/// See [`SKT_H8_LONG_K`]: 8192 rows (512 groups, 3.9 per SM of 132) took H = 8; 4096 rows (256,
/// 1.9 per SM, K split) did not.
const SKT_H8_LONG_MIN_GROUPS_PER_SM: u64 = 2;
/// Fewest columns of A per K split where the row groups already cover the SMs: a split there
/// only fills the GPU's resident CTA slots, and short ones cost more in partial sums and the
/// reduce launch than they add (4096×12×1000: 11.4 µs unsplit, 13.2 in two splits).
const SKT_MIN_SPLIT_COLS: u64 = 2048;

/// Which skinny kernel a shape takes, if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skinny {
    /// M ≤ 16: stream B.
    M,
    /// N ≤ 16 (and N ≤ M): stream A.
    N,
}

/// The skinny kernel for `m × n × k`, unless `KERNELGATE_NO_SKINNY=1`.
pub fn which(m: u64, n: u64, k: u64) -> Option<Skinny> {
    if std::env::var("KERNELGATE_NO_SKINNY").is_ok_and(|v| v == "1") || k == 0 {
        return None;
    }
    if n <= MAX_SKINNY && n <= m {
        Some(Skinny::N)
    } else if m <= MAX_SKINNY {
        Some(Skinny::M)
    } else {
        None
    }
}

/// The skinny-M launch plan: (tile of M, CTA columns, K splits, rows of B per CTA).
pub fn plan_m(m: u64, n: u64, k: u64, elem_bytes: u64, sms: u64) -> (u64, u64, u64, u64) {
    let mt = [1, 2, 4, 8, 16].into_iter().find(|&t| t >= m).unwrap_or(16);
    let vec = 16 / elem_bytes;
    let gx = n.div_ceil(SKM_THREADS * vec).max(1);
    // About two CTAs per SM, each with at least MIN_KCHUNK and at most SKM_KC rows of B.
    let want = (CTAS_PER_SM * sms).div_ceil(gx).max(1);
    let most = k.div_ceil(MIN_KCHUNK).max(1);
    let least = k.div_ceil(SKM_KC).max(1);
    let splits = want.min(most).max(least);
    let kchunk = k.div_ceil(splits);
    (mt, gx, k.div_ceil(kchunk), kchunk)
}

/// The skinny-N plan: (tile of N, rows per warp, CTA row groups, K splits, columns of A per
/// CTA). K is split (partial sums reduced afterwards) until there are about two CTAs per SM,
/// each split a multiple of one warp step (32 lanes × 16 bytes) and at least two of them.
pub fn plan_n(m: u64, n: u64, k: u64, dtype: Dtype, sms: u64) -> (u64, u64, u64, u64, u64) {
    let nt = match dtype {
        Dtype::Fp32 if n <= 4 => 4,
        _ if n <= 8 => 8,
        _ => 16,
    };
    let rows = if nt <= 8 { 8 } else { 4 };
    let gx = m.div_ceil(SKN_WARPS * rows).max(1);
    let step = 32 * (16 / dtype.size() as u64);
    let want = (CTAS_PER_SM * sms).div_ceil(gx).max(1);
    let most = k.div_ceil(2 * step).max(1);
    let splits = want.min(most);
    let kchunk = k.div_ceil(splits).div_ceil(step) * step;
    (nt, rows, gx, k.div_ceil(kchunk), kchunk)
}

/// Environment variable that forces the tensor-core skinny-N kernel's configuration:
/// `r<R>h<H>` (16·R rows per CTA, warp steps of 32·H columns), one of [`NTC_CHOICES`] for the
/// case's N tile; unset or empty: [`choose_ntc`]'s pick.
pub const NTC_ENV: &str = "KERNELGATE_SKINNY_NTC";

/// The (R, H) configurations under their [`NTC_ENV`] names (not every one exists for both N
/// tiles: [`choose_ntc`] checks).
pub const NTC_CHOICES: [(&str, (u64, u64)); 5] = [
    ("r1h2", (1, 2)),
    ("r1h4", (1, 4)),
    ("r1h8", (1, 8)),
    ("r2h2", (2, 2)),
    ("r2h4", (2, 4)),
];

/// The (tile of N, R, H) entries `gemm_skinny.cu` defines.
const NTC_ENTRIES: [(u64, u64, u64); 6] = [
    (8, 1, 4),
    (8, 1, 8),
    (8, 2, 2),
    (8, 2, 4),
    (16, 1, 2),
    (16, 2, 2),
];

/// The tensor-core skinny-N launch plan ([`choose_ntc`], [`ntc_splits`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtcPlan {
    /// The tile of N: 8 or 16.
    pub nt: u64,
    /// m16 tiles per CTA (the CTA owns 16·r rows of A): 1 or 2.
    pub r: u64,
    /// Halves of 32 columns per warp step (a step is 32·h columns): 2, 4 or 8.
    pub h: u64,
    /// CTAs along M (row groups).
    pub gx: u64,
    /// K splits.
    pub splits: u64,
    /// Columns of A per split, a multiple of the four warps' span (4 · 32·h).
    pub kchunk: u64,
}

impl NtcPlan {
    /// The entry point's name for dtype `d` (`bf16` or `fp16`).
    pub fn entry(&self, d: &str) -> String {
        format!("gemm_skinny_ntc_{d}_{}_r{}h{}", self.nt, self.r, self.h)
    }
}

/// Parses a [`NTC_ENV`] value into (R, H) (unset or empty: `None`).
pub fn parse_ntc(value: Option<&str>) -> std::result::Result<Option<(u64, u64)>, String> {
    super::parse_choice(NTC_ENV, value, &NTC_CHOICES)
}

/// The tensor-core skinny-N configuration for `m × n × k` (K split not yet chosen: `splits` 1),
/// from session 42's sweep of `kernels/dev/skinny_n_bench.cu` (H100 GPU-0595606e, every
/// configuration on nine shapes):
/// - one m16 tile per CTA, two beyond [`SKT_R1_MAX_GROUPS_PER_SM`] row groups per SM, and for
///   N > 8 where the row groups of 16 number one to two per SM: 32 rows per CTA then leave
///   fewer row groups than SMs, so K is split into short ranges (4096×12×1000: 8.8 µs in
///   128×4 CTAs against 9.9 in 256 unsplit ones; 4097×16×4104 20.6 against 21.1, H100
///   GPU-8f42cc54);
/// - N ≤ 8: 128-column warp steps (H = 4), 256 (H = 8) where K ≤ [`SKT_H8_MAX_K`] and where K
///   is at least [`SKT_H8_LONG_K`] with [`SKT_H8_LONG_MIN_GROUPS_PER_SM`] row groups per SM or
///   more (session 45, both GPU models); N ≤ 16: 64-column steps (H = 2; H = 4 and 8 ran 3–42%
///   slower).
///
/// `forced` ([`NTC_ENV`]) replaces R and H; an (N tile, R, H) the kernel file does not define
/// is an error naming the ones it does.
pub fn choose_ntc(
    m: u64,
    n: u64,
    k: u64,
    sms: u64,
    forced: Option<(u64, u64)>,
) -> std::result::Result<NtcPlan, String> {
    let nt = if n <= 8 { 8 } else { 16 };
    let (r, h) = match forced {
        Some(rh) => rh,
        None => {
            let groups = m.div_ceil(16);
            let r = if groups > SKT_R1_MAX_GROUPS_PER_SM * sms
                || (nt == 16 && (sms..=2 * sms).contains(&groups))
            {
                2
            } else {
                1
            };
            let h = match (nt, r) {
                (16, _) => 2,
                (_, 1)
                    if k <= SKT_H8_MAX_K
                        || (k >= SKT_H8_LONG_K
                            && groups >= SKT_H8_LONG_MIN_GROUPS_PER_SM * sms) =>
                {
                    8
                }
                _ => 4,
            };
            (r, h)
        }
    };
    if !NTC_ENTRIES.contains(&(nt, r, h)) {
        let have: Vec<String> = NTC_ENTRIES
            .iter()
            .filter(|e| e.0 == nt)
            .map(|&(_, r, h)| format!("r{r}h{h}"))
            .collect();
        return Err(format!(
            "{NTC_ENV}=r{r}h{h}: no such entry for N tile {nt} (N = {n}); it has {}",
            have.join(", ")
        ));
    }
    let gx = m.div_ceil(16 * r).max(1);
    Ok(NtcPlan {
        nt,
        r,
        h,
        gx,
        splits: 1,
        kchunk: k.max(1).div_ceil(SKT_WARPS * 32 * h) * SKT_WARPS * 32 * h,
    })
}

/// `plan` with its K split, for a GPU of `sms` SMs holding `per_sm` of its CTAs each (the
/// driver's occupancy of the entry point):
/// - row groups fewer than the SMs: about [`SKT_CTAS_PER_SM`] CTAs per SM, each split at least
///   one step per warp;
/// - otherwise as many splits as the resident CTA slots hold in one wave, each at least
///   [`SKT_MIN_SPLIT_COLS`] columns. A second wave cost 20% at 8192×8×8192 (62.1 against
///   51.0 µs, H100 GPU-0595606e); 4097×16×4104's 257 unsplit CTAs left the SMs half idle
///   (23.4 µs against 20.3 on the wgmma tiles, H100 GPU-159fc32e).
///
/// Each split is a multiple of the four warps' span (4 · 32·h columns).
pub fn ntc_splits(plan: NtcPlan, k: u64, sms: u64, per_sm: u64) -> NtcPlan {
    let span = SKT_WARPS * 32 * plan.h;
    let most = k.div_ceil(span).max(1);
    let want = if plan.gx < sms {
        (SKT_CTAS_PER_SM * sms).div_ceil(plan.gx)
    } else {
        ((per_sm.max(1) * sms) / plan.gx).min(k / SKT_MIN_SPLIT_COLS)
    };
    let splits = want.clamp(1, most);
    let kchunk = k.max(1).div_ceil(splits).div_ceil(span) * span;
    NtcPlan {
        splits: k.max(1).div_ceil(kchunk),
        kchunk,
        ..plan
    }
}

/// Whether skinny-N runs on tensor cores: 16-bit inputs on compute capability 8.0 or newer,
/// unless `KERNELGATE_SKINNY_FFMA=1` asks for the FFMA kernel.
pub fn tensor_cores(dtype: Dtype, compute_capability: &str) -> bool {
    dtype != Dtype::Fp32
        && super::compute_major(compute_capability) >= 8
        && !std::env::var("KERNELGATE_SKINNY_FFMA").is_ok_and(|v| v == "1")
}

/// The fp32 `[splits][elems]` partial-sum workspace when K is split (kept in `keep`), else a
/// null pointer.
pub(super) fn split_workspace(
    gpu: &mut Gpu,
    case: &Case,
    splits: u64,
    elems: u64,
    keep: &mut Option<crate::gpu::DeviceBuffer>,
) -> Result<u64> {
    if splits <= 1 {
        return Ok(0);
    }
    let ws = gpu.alloc(
        (splits * elems * 4) as usize,
        &format!("{} split-K partial sums", case.name()),
    )?;
    let p = ws.ptr();
    *keep = Some(ws);
    Ok(p)
}

/// The launch that adds the `splits` partial slices in order and converts them into C.
fn reduce_step(
    d: &str,
    part: u64,
    c: u64,
    elems: u64,
    splits: u64,
    sms: u64,
) -> (String, Dims, Vec<KernelArg>) {
    // Few outputs and many splits: a warp per output (`_w`) instead of a thread walking every
    // split in turn.
    let (name, grid) = if elems <= WARP_REDUCE_MAX_ELEMS && splits >= 32 {
        (
            format!("gemm_skinny_reduce_w_{d}"),
            elems.div_ceil(8).clamp(1, sms * 8),
        )
    } else {
        (
            format!("gemm_skinny_reduce_{d}"),
            elems.div_ceil(256).clamp(1, sms * 8),
        )
    };
    (
        name,
        Dims {
            grid: (grid as u32, 1, 1),
            block: (256, 1, 1),
            smem: 0,
        },
        vec![
            KernelArg::Ptr(part),
            KernelArg::Ptr(c),
            KernelArg::U64(elems),
            KernelArg::I32(splits as i32),
        ],
    )
}

/// Prepares C = A·B with the skinny kernel `kind`.
pub fn prepare(
    gpu: &mut Gpu,
    case: &Case,
    kind: Skinny,
    (a, b, c): (u64, u64, u64),
) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let d = case.dtype.name();
    let sms = gpu.info.sm_count as u64;
    // The two kernels take the same arguments; they differ in entry point and grid.
    let (name, gx, threads, splits, kchunk, variant) = match kind {
        Skinny::M => {
            let (mt, gx, splits, kchunk) = plan_m(m, n, k, case.dtype.size() as u64, sms);
            (
                format!("gemm_skinny_m_{d}_{mt}"),
                gx,
                SKM_THREADS,
                splits,
                kchunk,
                format!(
                    "gemm_skinny_m_{d}_{mt} (B streamed once; {gx}x{splits} CTAs, {kchunk} rows of B each{})",
                    if splits > 1 { ", split-K partials" } else { "" }
                ),
            )
        }
        Skinny::N if tensor_cores(case.dtype, &gpu.info.compute_capability) => {
            let forced = super::from_env(case, NTC_ENV, parse_ntc)?;
            let p = choose_ntc(m, n, k, sms, forced).map_err(|message| Error::Case {
                case: case.name(),
                message,
            })?;
            let f = gpu.module("gemm_skinny.cu")?.function(&p.entry(d))?;
            let per_sm = gpu.max_active_blocks(f, (SKT_WARPS * 32) as u32, 0)? as u64;
            let p = ntc_splits(p, k, sms, per_sm);
            let name = p.entry(d);
            let variant = format!(
                "{name} (A streamed once on tensor cores, mma.sync m16n8k16; {}x{} CTAs of {SKT_WARPS} warps x {} rows, {}-column warp steps, {} columns of A each)",
                p.gx,
                p.splits,
                16 * p.r,
                32 * p.h,
                p.kchunk
            );
            (name, p.gx, SKT_WARPS * 32, p.splits, p.kchunk, variant)
        }
        Skinny::N => {
            let (nt, rows, gx, splits, kchunk) = plan_n(m, n, k, case.dtype, sms);
            (
                format!("gemm_skinny_n_{d}_{nt}"),
                gx,
                SKN_WARPS * 32,
                splits,
                kchunk,
                format!(
                    "gemm_skinny_n_{d}_{nt} (A streamed once; {gx}x{splits} CTAs of {SKN_WARPS} warps x {rows} rows, {kchunk} columns of A each)"
                ),
            )
        }
    };
    let mut workspace = None;
    let part = split_workspace(gpu, case, splits, m * n, &mut workspace)?;
    let mut steps = vec![(
        name,
        Dims {
            grid: (gx as u32, splits as u32, 1),
            block: (threads as u32, 1, 1),
            smem: 0,
        },
        vec![
            KernelArg::Ptr(a),
            KernelArg::Ptr(b),
            KernelArg::Ptr(c),
            KernelArg::Ptr(part),
            KernelArg::I32(m as i32),
            KernelArg::I32(n as i32),
            KernelArg::I32(k as i32),
            KernelArg::I32(kchunk as i32),
        ],
    )];
    if splits > 1 {
        steps.push(reduce_step(d, part, c, m * n, splits, sms));
    }
    super::launch_sequence(
        gpu,
        "gemm_skinny.cu",
        steps,
        workspace.into_iter().collect(),
        variant,
        super::Chain::Ordinary,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_pick_the_operand_to_stream() {
        assert_eq!(which(1, 4096, 4096), Some(Skinny::M));
        assert_eq!(which(16, 8192, 8192), Some(Skinny::M));
        assert_eq!(which(8192, 8, 8192), Some(Skinny::N));
        assert_eq!(which(3, 5000, 77), Some(Skinny::M));
        // Both small: stream the larger one.
        assert_eq!(which(16, 8, 1000), Some(Skinny::N));
        assert_eq!(which(8, 16, 1000), Some(Skinny::M));
        assert_eq!(which(17, 8192, 8192), None);
        assert_eq!(which(4096, 4096, 4096), None);
        assert_eq!(which(1, 1, 0), None);
    }

    #[test]
    fn skinny_m_plans_cover_k_with_bounded_chunks() {
        for &(m, n, k) in &[
            (1u64, 4096u64, 4096u64),
            (16, 8192, 8192),
            (3, 5000, 77),
            (1, 1, 1),
            (7, 100_000, 31),
            (16, 8, 100_000),
        ] {
            for eb in [2u64, 4] {
                let (mt, gx, splits, kchunk) = plan_m(m, n, k, eb, 132);
                assert!(mt >= m && mt <= 16, "{m} {mt}");
                assert!(gx * SKM_THREADS * (16 / eb) >= n);
                assert!((1..=SKM_KC).contains(&kchunk));
                // Every row of B is in exactly one chunk, and no chunk is empty.
                assert!(
                    splits * kchunk >= k && (splits - 1) * kchunk < k,
                    "{m} {n} {k}"
                );
            }
        }
        // 1×4096×4096 bf16 on 132 SMs: 2 column blocks, K in 32-row chunks over 128 splits.
        assert_eq!(plan_m(1, 4096, 4096, 2, 132), (1, 2, 128, 32));
    }

    /// What every tensor-core skinny-N plan keeps: an entry the kernel file defines, row groups
    /// that cover M, every column of A in exactly one split of whole four-warp spans, and where
    /// the row groups cover the SMs, one wave of resident CTAs with splits of at least
    /// [`SKT_MIN_SPLIT_COLS`] columns; the kernel's int arguments fit.
    fn check_ntc_plan(p: NtcPlan, m: u64, n: u64, k: u64, sms: u64, per_sm: u64) {
        assert!(NTC_ENTRIES.contains(&(p.nt, p.r, p.h)), "{p:?}");
        assert!(p.nt >= n, "{p:?} {n}");
        let rows = 16 * p.r;
        assert!(p.gx * rows >= m && (p.gx - 1) * rows < m, "{p:?} {m}");
        assert_eq!(p.kchunk % (SKT_WARPS * 32 * p.h), 0, "{p:?}");
        assert!(
            p.splits * p.kchunk >= k && (p.splits - 1) * p.kchunk < k.max(1),
            "{p:?} {k}"
        );
        if p.gx >= sms && p.splits > 1 {
            assert!(p.gx * p.splits <= per_sm * sms, "{p:?} {per_sm}");
            assert!(p.kchunk >= SKT_MIN_SPLIT_COLS, "{p:?}");
        }
        assert!(
            p.kchunk <= i32::MAX as u64 && p.gx <= i32::MAX as u64,
            "{p:?}"
        );
    }

    /// [`choose_ntc`] and [`ntc_splits`] for 132 SMs holding `per_sm` CTAs each.
    fn ntc(m: u64, n: u64, k: u64, per_sm: u64) -> NtcPlan {
        ntc_splits(choose_ntc(m, n, k, 132, None).unwrap(), k, 132, per_sm)
    }

    #[test]
    fn tensor_core_plans_give_every_warp_a_step() {
        for &(m, n, k) in &[
            (8192u64, 8u64, 8192u64),
            (16, 16, 65536),
            (2048, 3, 777),
            (8192, 16, 4096),
            (100_000, 1, 5),
            (17, 9, 255),
            (1000, 5, 3000),
            (65536, 16, 1024),
            (4097, 16, 4104),
            (1, 1, 1),
        ] {
            for per_sm in [1u64, 4, 7, 16] {
                check_ntc_plan(ntc(m, n, k, per_sm), m, n, k, 132, per_sm);
            }
        }
        // The sweep's winners on an H100 (132 SMs), unsplit where M alone fills the slots (the
        // 8-column entries: 7 CTAs per SM; the 16-column r1h2: 4); with K of 8192 and 2 or
        // more row groups per SM 256-column steps (session 45).
        let p = ntc(8192, 8, 8192, 7);
        assert_eq!((p.r, p.h, p.gx, p.splits), (1, 8, 512, 1));
        assert_eq!(p.entry("bf16"), "gemm_skinny_ntc_bf16_8_r1h8");
        assert_eq!(ntc(8192, 4, 8192, 7).h, 8);
        // session 45's shapes where 128-column steps stayed ahead: shorter K, or K split
        for &(m, n, k) in &[
            (16384u64, 8u64, 4096u64),
            (1024, 8, 16384),
            (4096, 8, 4096),
            (4096, 7, 12288),
        ] {
            assert_eq!(ntc(m, n, k, 7).h, 4, "{m}x{n}x{k}");
        }
        let p = ntc(8192, 8, 4096, 7);
        assert_eq!((p.r, p.h), (1, 4));
        assert_eq!(
            ntc(2048, 3, 777, 4).entry("fp16"),
            "gemm_skinny_ntc_fp16_8_r1h8"
        );
        let p = ntc(2048, 3, 777, 4);
        assert_eq!((p.gx, p.splits), (128, 1));
        // N > 8 with one to two row groups of 16 per SM: 32 rows per CTA, K split.
        let p = ntc(4096, 12, 1000, 5);
        assert_eq!((p.nt, p.r, p.h, p.gx, p.splits), (16, 2, 2, 128, 4));
        let p = ntc(8192, 16, 4096, 4);
        assert_eq!((p.r, p.h, p.gx, p.splits), (1, 2, 512, 1));
        let p = ntc(4097, 16, 4104, 5);
        assert_eq!((p.r, p.gx, p.splits, p.kchunk), (2, 129, 5, 1024));
        // Where the row groups of 16 cover the SMs, the split fills the resident slots: 257
        // one-tile CTAs of 4104 columns in two splits, 514 of 528 slots.
        let p = ntc_splits(
            choose_ntc(4097, 16, 4104, 132, Some((1, 2))).unwrap(),
            4104,
            132,
            4,
        );
        assert_eq!((p.gx, p.splits, p.kchunk), (257, 2, 2304));
        let p = ntc(65536, 16, 1024, 4);
        assert_eq!((p.r, p.h, p.gx, p.splits), (2, 2, 2048, 1));
        // 16×16×65536: one row group, K over 256 splits of one 64-column step per warp.
        let p = ntc(16, 16, 65536, 4);
        assert_eq!((p.r, p.h, p.gx, p.splits, p.kchunk), (1, 2, 1, 256, 256));
        // 1000×5×3000: 63 row groups, K in six splits of 512 (four warps of 128 columns).
        let p = ntc(1000, 5, 3000, 7);
        assert_eq!((p.r, p.h, p.gx, p.splits, p.kchunk), (1, 4, 63, 6, 512));
        assert!(tensor_cores(Dtype::Bf16, "9.0") && tensor_cores(Dtype::Fp16, "8.0"));
        assert!(!tensor_cores(Dtype::Fp32, "9.0") && !tensor_cores(Dtype::Bf16, "7.5"));
    }

    proptest::proptest! {
        /// Any skinny-N shape, SM count and occupancy keeps [`check_ntc_plan`]'s properties.
        #[test]
        fn ntc_plans_for_any_shape_cover_it(
            m in 1u64..300_000,
            n in 1u64..=MAX_SKINNY,
            k in 1u64..300_000,
            sms in 1u64..200,
            per_sm in 1u64..=16,
        ) {
            let p = ntc_splits(choose_ntc(m, n, k, sms, None).unwrap(), k, sms, per_sm);
            check_ntc_plan(p, m, n, k, sms, per_sm);
        }
    }

    #[test]
    fn the_forced_configuration_names_the_entries_there_are() {
        assert_eq!(parse_ntc(None), Ok(None));
        assert_eq!(parse_ntc(Some(" ")), Ok(None));
        assert_eq!(parse_ntc(Some("r2h2")), Ok(Some((2, 2))));
        let err = parse_ntc(Some("r3h1")).unwrap_err();
        assert!(err.contains(NTC_ENV) && err.contains("`r1h4`"), "{err}");
        // r2h2 exists for both tiles; r1h8 only for N ≤ 8.
        let p = choose_ntc(8192, 8, 8192, 132, Some((2, 2))).unwrap();
        assert_eq!((p.nt, p.r, p.h, p.gx), (8, 2, 2, 256));
        assert_eq!(
            ntc_splits(p, 8192, 132, 7).entry("bf16"),
            "gemm_skinny_ntc_bf16_8_r2h2"
        );
        let err = choose_ntc(8192, 16, 4096, 132, Some((1, 8))).unwrap_err();
        assert!(
            err.contains("r1h8") && err.contains("N tile 16") && err.contains("r1h2"),
            "{err}"
        );
    }

    #[test]
    fn skinny_n_plans_split_k_in_whole_warp_steps() {
        for &(m, n, k) in &[
            (8192u64, 8u64, 8192u64),
            (16, 16, 65536),
            (2048, 3, 777),
            (8192, 16, 4096),
            (100_000, 1, 5),
        ] {
            for dt in [Dtype::Bf16, Dtype::Fp32] {
                let (nt, rows, gx, splits, kchunk) = plan_n(m, n, k, dt, 132);
                let step = 32 * (16 / dt.size() as u64);
                assert!(nt >= n && kchunk % step == 0 && kchunk > 0);
                assert!(gx * SKN_WARPS * rows >= m);
                assert!(
                    splits * kchunk >= k && (splits - 1) * kchunk < k,
                    "{m} {n} {k}"
                );
            }
        }
        // 16×16×65536 bf16: one row group, so K is split 128 ways (512 columns, two warp steps each).
        assert_eq!(
            plan_n(16, 16, 65536, Dtype::Bf16, 132),
            (16, 4, 1, 128, 512)
        );
    }
}
