//! `gemm` where M or N is at most 16 (GEMV-like): the large operand is streamed once at
//! memory bandwidth (`kernels/gemm_skinny.cu`), any architecture, every dtype.

use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
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
/// Warps of a tensor-core skinny-N CTA (`SKT_WARPS`); the CTA owns 32 rows of A.
const SKT_WARPS: u64 = 4;
/// Rows of A per tensor-core skinny-N CTA.
const SKT_ROWS: u64 = 32;
/// Columns of A per warp step of the tensor-core skinny-N kernel (`SKT_STEP`).
const SKT_STEP: u64 = 64;
/// CTAs per SM the tensor-core skinny-N plan aims for (its CTAs are half the size).
const SKT_CTAS_PER_SM: u64 = 4;

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

/// The tensor-core skinny-N plan: (tile of N, CTA row groups, K splits, columns of A per CTA).
/// K is split until there are about four CTAs per SM, each split a multiple of the four warps'
/// step (4 × 64 columns) so every warp has at least one step.
pub fn plan_ntc(m: u64, n: u64, k: u64, sms: u64) -> (u64, u64, u64, u64) {
    let nt = if n <= 8 { 8 } else { 16 };
    let gx = m.div_ceil(SKT_ROWS).max(1);
    let span = SKT_WARPS * SKT_STEP;
    let want = (SKT_CTAS_PER_SM * sms).div_ceil(gx).max(1);
    let most = k.div_ceil(span).max(1);
    let splits = want.min(most);
    let kchunk = k.div_ceil(splits).div_ceil(span) * span;
    (nt, gx, k.div_ceil(kchunk), kchunk)
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
            let (nt, gx, splits, kchunk) = plan_ntc(m, n, k, sms);
            (
                format!("gemm_skinny_ntc_{d}_{nt}"),
                gx,
                SKT_WARPS * 32,
                splits,
                kchunk,
                format!(
                    "gemm_skinny_ntc_{d}_{nt} (A streamed once on tensor cores, mma.sync m16n8k16; {gx}x{splits} CTAs of {SKT_WARPS} warps x {SKT_ROWS} rows, {kchunk} columns of A each)"
                ),
            )
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

    #[test]
    fn tensor_core_plans_give_every_warp_a_step() {
        for &(m, n, k) in &[
            (8192u64, 8u64, 8192u64),
            (16, 16, 65536),
            (2048, 3, 777),
            (8192, 16, 4096),
            (100_000, 1, 5),
            (17, 9, 255),
        ] {
            let (nt, gx, splits, kchunk) = plan_ntc(m, n, k, 132);
            assert!(nt >= n && (nt == 8 || nt == 16));
            assert!(gx * SKT_ROWS >= m && (gx - 1) * SKT_ROWS < m);
            assert_eq!(kchunk % (SKT_WARPS * SKT_STEP), 0);
            assert!(
                splits * kchunk >= k && (splits - 1) * kchunk < k,
                "{m} {n} {k}"
            );
        }
        // 8192×16×4096 on 132 SMs: 256 row groups, K in three splits of 1536 columns (the
        // last 1024) for 768 CTAs, about four per SM at least.
        assert_eq!(plan_ntc(8192, 16, 4096, 132), (16, 256, 3, 1536));
        // 16×16×65536: one row group, K over 256 splits of one step per warp.
        assert_eq!(plan_ntc(16, 16, 65536, 132), (16, 1, 256, 256));
        assert!(tensor_cores(Dtype::Bf16, "9.0") && tensor_cores(Dtype::Fp16, "8.0"));
        assert!(!tensor_cores(Dtype::Fp32, "9.0") && !tensor_cores(Dtype::Bf16, "7.5"));
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
