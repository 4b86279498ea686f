//! The memory-bound families on our kernels (`kernels/norms.cu`, `softmax.cu`,
//! `elementwise.cu`, and the pipelined `rows_p.cu`).
//!
//! Row kernels run blocks of (threads per row) × (rows per block): 16-byte vectors when the
//! row length allows it (else scalar), about four vectors per thread, a power of two ≤ 32
//! threads per row for short rows (sub-warp shuffles) or a multiple of 32 up to 512, and about
//! 256 threads per block ([`row_layout`]).
//!
//! Register-resident kernels (`kernels/rows_p.cu`, suffix `_r`; by default per the shape rule
//! of [`rows_variant`]): `softmax`, `cross_entropy_bwd` and `layernorm` with the old kernels'
//! layout and grid (a block per row group, the row's 16-byte loads all issued first, held in
//! registers) but one barrier per reduction and less arithmetic: max and sum reductions without
//! exponentials, one EX2 per element (cross-entropy's target column fixed up by one store of the
//! thread holding it, off the per-element path); LayerNorm's statistics in one reduction of
//! shifted sums. `rmsnorm_bwd`'s `_r` kernel has the old kernel's persistent grid and keeps two
//! row groups in registers: the next group's loads are in flight while it reduces and stores the
//! current one (`KERNELGATE_ROWS_KERNEL=reg`; not yet in the default rule).
//!
//! `cross_entropy`'s `_r` kernel stages whole rows in shared memory with the sm_90 bulk-copy
//! engine (`cp.async.bulk` on an mbarrier per row buffer, [`ce_b_smem_bytes`]): a persistent
//! grid of 4-warp blocks, a warp per row, [`ce_b_stages`] rows in flight per warp without
//! registers holding them, so a short grid asks for its whole input at once (M = 4096 × 3072 bf16:
//! H100 0.74 → 0.84 of copy bandwidth, H200 0.58 → 0.62). Rows of 16-byte multiples up to
//! [`CE_B_MAX_ROW_BYTES`] on compute capability 9.0+; [`ce_b_auto`] says where `auto` runs it.
//! (Until session 11 the `_r` name was the streamed `_p` kernel with `L2::evict_first` loads,
//! which measured the same as `_p`.)
//!
//! Kernels of their own modules (each module's hash is its own, so changing one restarts only
//! its cases' baselines): `rmsnorm_bwd`'s bulk-staged kernel (`kernels/rmsnorm_bwd_bulk.cu`,
//! `_b`; the default on rows of 8–16 KB, [`rb_auto`], [`RMSNORM_BWD_ENV`]) and the forward
//! cross-entropy kernels of `kernels/cross_entropy_rows.cu` and `kernels/cross_entropy_bulk.cu`,
//! chosen in [`ce_fwd`] (the register-row `_w*` and register-resident `_g` by default where
//! their rules say, the second bulk-staged `_b`/`_bp` opt-in).
//!
//! Pipelined kernels (`kernels/rows_p.cu`, suffix `_p`; by default per [`rows_variant`],
//! everywhere they apply with `KERNELGATE_ROWS_KERNEL=all`): `softmax`,
//! `softmax_bwd`, `cross_entropy_bwd`, `layernorm` and `rmsnorm_bwd` on vectorised rows of at most
//! [`P_CACHE`] vectors per thread ([`p_layout`]: rows of up to 2048 vectors). A persistent grid
//! (as many blocks as fit at once, [`Gpu::max_active_blocks`]) walks the row groups; each
//! thread copies its own vectors of the next group into its own slots of a two-stage shared
//! buffer with cp.async while it computes the current one ([`p_smem_bytes`]), so loads stay
//! in flight behind the reductions whatever the occupancy, and the weights stay in L1.
//! `cross_entropy`'s `_p` kernel (any vectorised row) streams the row with one FFMA + EX2 per
//! element and a packed 16-bit max. `KERNELGATE_ROWS_KERNEL=old` ([`ROWS_KERNEL_ENV`]) runs the
//! previous kernels instead (`_v`/`_s`), which also serve every row the `_p` kernels do not and
//! a kernel set without `rows_p.cu` (a `KERNELGATE_BASE` revision from before it, so a
//! same-run A/B against it times old against new).
//! `kernels/dev/rows_launch.h` mirrors these rules for the standalone bench
//! (`kernels/dev/run_rows_bench.sh`): change both together.
//!
//! Schemes by family (recorded in the variant string):
//! - `softmax`, `cross_entropy_bwd`: each thread keeps p = exp(x − its own max) in registers
//!   (one exponential per element) and one block reduction combines the {max, sum} states
//!   (old kernels: the row cached in registers, two exponentials per element).
//! - `cross_entropy`: nothing is kept; the row is streamed (eight 16-byte loads in flight per
//!   thread) into an online {max, sum}; a warp per row when rows are many
//!   ([`ce_fwd_layout`]), else the usual layout.
//! - `layernorm`: mean, then the squared deviations from it, over the on-chip row (two block
//!   reductions; a one-reduction {count, mean, M2} variant measured 0.53–0.69 of copy bandwidth
//!   on the dsv3 shapes against 0.66–0.86 for this one, H200).
//! - `rmsnorm_bwd`: a persistent grid sized by the kernel's occupancy; one reduction per row
//!   for both sums; dw partial sums per block (its rows combined on chip), then a small
//!   column-sum kernel.

use super::ce_fwd;
use crate::backend::{Bindings, Prepared};
use crate::case::Case;
use crate::error::{Error, Result};
use crate::family::norms::{weight_dtype, EPS};
use crate::gpu::{Dims, Gpu, KernelArg};

/// The launch layout of a row kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowLayout {
    /// Elements per vector (16 bytes' worth, or 1 when the row length is not a multiple).
    pub vec: usize,
    /// Threads per row (blockDim.x).
    pub tpr: u32,
    /// Rows per block (blockDim.y).
    pub rpb: u32,
}

/// Vectors per thread that `kg_rmsnorm_bwd_*` caches in registers (its `C`).
pub const RMSNORM_BWD_CACHE: usize = 4;
/// Floats of `kg_rmsnorm_bwd_*`'s shared buffer for the on-chip dw combine (`KG_BWD_RED`).
pub const RMSNORM_BWD_RED_FLOATS: usize = 8192;

/// Threads per row are at most this (the kernels' `__launch_bounds__`).
pub const MAX_TPR: usize = 512;

/// The file of the pipelined (`_p`) kernels.
pub const P_FILE: &str = "rows_p.cu";
/// The module of the bulk-staged rmsnorm_bwd kernel ([`RMSNORM_BWD_ENV`]).
pub const RB_FILE: &str = "rmsnorm_bwd_bulk.cu";
/// 16-byte vectors of each staged row per thread in the `_p` kernels (`KG_P_CACHE`).
pub const P_CACHE: usize = 4;
/// Stages of the `_p` kernels' shared buffer (`KG_P_STAGES`).
pub const P_STAGES: usize = 2;

/// Threads per block of the bulk-staged cross-entropy forward (`kg_cross_entropy_*_r`,
/// `KG_CE_B_THREADS`): four warps, each on its own rows.
pub const CE_B_THREADS: u32 = 128;
/// Longest row (bytes) the bulk-staged cross-entropy forward stages (`KG_CE_B_MAX_ROW_BYTES`); longer rows stream (`_p`).
pub const CE_B_MAX_ROW_BYTES: usize = 24_576;
/// Row buffers per warp of that kernel for rows of at most 8 KB (`KG_CE_B_STAGES`); longer
/// rows get one (see [`ce_b_stages`]).
pub const CE_B_STAGES: usize = 2;

/// Row buffers per warp for rows of `row_bytes` (`kg_ce_b_stages`): [`CE_B_STAGES`] up to
/// 8 KB, else one, so that longer rows still leave several warps per scheduler.
pub fn ce_b_stages(row_bytes: usize) -> usize {
    if row_bytes <= 8192 {
        CE_B_STAGES
    } else {
        1
    }
}

/// Dynamic shared memory of the bulk-staged cross-entropy forward for rows of `row_bytes` in
/// blocks of `threads` (`kg_ce_b_smem_bytes`): 128 bytes of mbarriers, then [`ce_b_stages`]
/// buffers of the row rounded up to 128 bytes per warp.
pub fn ce_b_smem_bytes(row_bytes: usize, threads: u32) -> u32 {
    let stage = row_bytes.div_ceil(128) * 128;
    (128 + (threads as usize / 32) * ce_b_stages(row_bytes) * stage) as u32
}

/// Where `auto` runs the bulk-staged cross-entropy forward rather than the streamed `_p` one
/// (measured session 11, bench and harness, H100 GPU-0f8172f5/GPU-8acddf77 and H200
/// GPU-b29d356a, `docs/kernels/session11/`): rows of 4–6 KB at any `m` (N = 3072 bf16: H200
/// 1.08× `_p` at M = 4096, 1.09× at 16384, 1.07× at 65536; H100 1.14×, 1.02×, 0.98×), and rows
/// of at most 16 KB on grids of at least 16384 rows holding at most 2^28 bytes (16384 × 6144 and
/// × 8192: H200 1.01–1.03×, H100 1.00–1.01×). Elsewhere `_p` was as fast or faster: 65536-row
/// grids of longer rows (0.98–0.99×), M = 4096 with rows of 12 KB or more (H100 0.93×, H200
/// 0.91×), 4096 × 1000 (0.95×).
pub fn ce_b_auto(m: usize, row_bytes: usize) -> bool {
    (4096..=6144).contains(&row_bytes)
        || (row_bytes <= 16_384 && m >= 16_384 && m * row_bytes <= 1 << 28)
}

/// Whether the bulk-staged cross-entropy forward takes rows of `n` elements of `elem` bytes:
/// vectorised rows (16-byte multiples, as the bulk copy needs) of at most
/// [`CE_B_MAX_ROW_BYTES`]. It also needs compute capability 9.0 or newer (the launcher checks).
pub fn ce_b_applies(n: usize, elem: usize) -> bool {
    n > 0 && (n * elem).is_multiple_of(16) && n * elem <= CE_B_MAX_ROW_BYTES
}

/// Environment variable that picks the row kernels: `old` runs the `_v`/`_s` kernels
/// everywhere; unset, empty or `auto` the per-shape rule of [`rows_variant`]; `all` the `_p`
/// kernels wherever they apply; `reg` the `_r` kernels wherever they apply.
pub const ROWS_KERNEL_ENV: &str = "KERNELGATE_ROWS_KERNEL";

/// Environment variable choosing `rmsnorm_bwd`'s bulk-staged kernel
/// (`kernels/rmsnorm_bwd_bulk.cu`, `kg_rmsnorm_bwd_*_b`): `bulk` forces it, `off` never runs it,
/// unset, empty or `auto` runs it where [`rb_auto`] says. Forcing `bulk` where it cannot run
/// (below compute capability 9.0, rows that are not 16-byte multiples or longer than [`RB_C`] ×
/// 1024 vectors) is an error.
pub const RMSNORM_BWD_ENV: &str = "KERNELGATE_RMSNORM_BWD";

/// A choice between a kernel's default rule, forcing it and never running it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pick {
    /// The per-shape rule.
    Auto,
    /// The kernel wherever it can run; an error elsewhere.
    Force,
    /// Never the kernel.
    Off,
}

/// Parses a [`RMSNORM_BWD_ENV`] value: `bulk`, `auto` (also unset or empty) or `off`.
pub fn parse_rmsnorm_bwd(value: Option<&str>) -> std::result::Result<Pick, String> {
    super::parse_choice(
        RMSNORM_BWD_ENV,
        value,
        &[
            ("bulk", Pick::Force),
            ("auto", Pick::Auto),
            ("off", Pick::Off),
        ],
    )
    .map(|b| b.unwrap_or(Pick::Auto))
}

/// Where `auto` runs the bulk-staged rmsnorm_bwd (given that it can run there): rows of 8–16 KB,
/// where it was measured (session 12, harness, dsv3 and quack rmsnorm_bwd cases, bf16 N = 4096 to
/// 8192). H200 GPU-aeba05c4: 0.77–0.94× the default kernels' time at every shape (0.96× at
/// 131072 × 4096), which takes every dsv3 shape over issue 13's bars (0.80–0.98 of copy
/// bandwidth); H100 GPU-0592762f: 0.85–0.95× at M ≤ 16384, 0.97–1.00× at M = 65536, never slower.
pub fn rb_auto(_m: usize, row_bytes: usize) -> bool {
    (8192..=16_384).contains(&row_bytes)
}

/// 16-byte vectors per thread of the bulk-staged rmsnorm_bwd kernel (`KG_RB_C`).
pub const RB_C: usize = 2;
/// Row buffers per block of it (`KG_RB_STAGES`).
pub const RB_STAGES: usize = 2;

/// Dynamic shared memory of the bulk-staged rmsnorm_bwd kernel for rows of `row_bytes`
/// (`kg_rb_smem_bytes`): 128 bytes of mbarriers, then per stage the x and the dy row, each
/// rounded up to 128 bytes.
pub fn rb_smem_bytes(row_bytes: usize) -> u32 {
    (128 + RB_STAGES * 2 * row_bytes.div_ceil(128) * 128) as u32
}

/// Threads per block of the bulk-staged rmsnorm_bwd kernel for rows of `n` elements of `elem`
/// bytes: the row's 16-byte vectors over [`RB_C`] per thread, rounded up to a warp; `None` where
/// it cannot run (rows that are not 16-byte multiples, or need more than 1024 threads).
pub fn rb_threads(n: usize, elem: usize) -> Option<u32> {
    if n == 0 || !(n * elem).is_multiple_of(16) {
        return None;
    }
    let nv = n * elem / 16;
    let t = nv.div_ceil(RB_C).div_ceil(32) * 32;
    (t <= 1024).then_some(t as u32)
}

/// Which row kernels a run allows (`KERNELGATE_ROWS_KERNEL`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsKernel {
    /// The `_v`/`_s` kernels everywhere (`old`).
    Old,
    /// The per-shape rule of [`rows_variant`] (unset, empty or `auto`).
    Auto,
    /// The `_p` kernels wherever they apply (`all`).
    All,
    /// The `_r` kernels wherever they apply, else the old kernels (`reg`).
    Reg,
}

/// The values of `KERNELGATE_ROWS_KERNEL`.
const ROWS_CHOICES: [(&str, RowsKernel); 4] = [
    ("old", RowsKernel::Old),
    ("auto", RowsKernel::Auto),
    ("all", RowsKernel::All),
    ("reg", RowsKernel::Reg),
];

/// Parses a `KERNELGATE_ROWS_KERNEL` value (unset or empty: `auto`).
pub fn parse_rows_kernel(value: Option<&str>) -> std::result::Result<RowsKernel, String> {
    super::parse_choice(ROWS_KERNEL_ENV, value, &ROWS_CHOICES)
        .map(|k| k.unwrap_or(RowsKernel::Auto))
}

/// The kernel generation a row case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowsVariant {
    /// `kernels/norms.cu`, `kernels/softmax.cu` (`_v`/`_s`).
    Old,
    /// The pipelined kernels of `rows_p.cu` (`_p`).
    P,
    /// The register-resident kernels of `rows_p.cu` (`_r`).
    R,
}

/// The families with an `_r` kernel.
pub const R_FAMILIES: [&str; 4] = ["softmax", "cross_entropy_bwd", "layernorm", "rmsnorm_bwd"];
/// 16-byte vectors of a row per thread in the `_r` kernels (`KG_R_CACHE`).
pub const R_CACHE: usize = 4;

/// The layout of an `_r` kernel for rows of `n` elements of `elem` bytes: the [`row_layout`]
/// when its rows are vectorised and every vector fits the [`R_CACHE`] registers of its
/// threads (rows of at most `R_CACHE * MAX_TPR` vectors), else `None`.
pub fn r_layout(n: usize, elem: usize) -> Option<RowLayout> {
    let l = row_layout(n, elem);
    (l.vec > 1 && n / l.vec <= R_CACHE * l.tpr as usize).then_some(l)
}

/// Shortest row (elements) on which LayerNorm runs its `_r` kernel under `auto`: on 4096 × 1000
/// the H100 measured `_r` at 0.94× of the old kernel.
pub const LAYERNORM_R_FROM_N: usize = 2048;

/// Which kernels family `kind` runs on an `m` × `n` case of `elem`-byte elements under `choice`
/// (the kernel set having `rows_p.cu` and its `_r` kernels; the caller falls back to
/// [`RowsVariant::Old`] otherwise). `_r` of `cross_entropy` is its bulk-staged kernel (rows
/// [`ce_b_applies`] takes; the launcher falls back to `_p` below compute capability 9.0). The default (`auto`) rule,
/// mirrored by `kernels/dev/rows_launch.h` (`rows_variant`), from the session-8 runs of
/// `kernels/dev/run_rows_bench.sh` on an H100 (GPU-e2f46ae1) and an H200 (GPU-042d82ef) over
/// the dsv3 shapes, 65536 × 4096 and the default-suite rows (`docs/kernels/session8/`):
/// - `softmax`: `_r` wherever [`r_layout`] gives one (H200 1.13–1.24× the old kernel; H100
///   within 0.3–1.3% at M ≥ 16384, 1–12% faster at M = 4096);
/// - `layernorm`: `_r` on rows of at least [`LAYERNORM_R_FROM_N`] elements (H200 1.11–1.18×
///   the old kernel at M ≥ 16384; H100 0.98–1.02×), else the old kernel;
/// - `rmsnorm`, `fused_add_rmsnorm`: the old kernels;
/// - `cross_entropy_bwd`: `_r` wherever [`r_layout`] applies (its target column written by a
///   second store: H200 1.1–1.5× the `_p` kernel);
/// - `softmax_bwd`: `_p` on short grids (`m` ≤ 8192) of rows of at least 4096 elements
///   (2.5–2.8% faster at M = 4096), else the old kernel (3–5% faster at M ≥ 16384, 8% on
///   4096 × 1000);
/// - `rmsnorm_bwd`: `_p` on long grids (`m` ≥ 16384) when the old kernel's block ([`row_layout`]
///   tpr × rpb) has fewer than 224 threads (two such blocks per SM leave it under 14 warps:
///   N = 6144, `_p` 2.4–2.9% faster), else the old kernel;
/// - `cross_entropy` (vectorised rows): the bulk-staged `_r` kernel where [`ce_b_auto`] says
///   (session 11), else `_p` (H200 1.05–1.24× the old kernel everywhere; H100 1.03–1.21× below
///   2^28 elements, 0.97–0.98× above, where both pass the bar).
pub fn rows_variant(
    choice: RowsKernel,
    kind: &str,
    m: usize,
    n: usize,
    elem: usize,
) -> RowsVariant {
    let rl = row_layout(n, elem);
    let vec = rl.vec > 1;
    let p_applies = match kind {
        "softmax" | "softmax_bwd" | "cross_entropy_bwd" | "layernorm" | "rmsnorm_bwd" => {
            p_layout(n, elem).is_some()
        }
        "cross_entropy" => vec,
        _ => false,
    };
    let r_applies = if kind == "cross_entropy" {
        ce_b_applies(n, elem)
    } else {
        R_FAMILIES.contains(&kind) && r_layout(n, elem).is_some()
    };
    let auto = || match kind {
        "softmax" if r_applies => RowsVariant::R,
        "layernorm" if r_applies && n >= LAYERNORM_R_FROM_N => RowsVariant::R,
        "cross_entropy_bwd" if r_applies => RowsVariant::R,
        "softmax_bwd" if p_applies && m <= 8192 && n >= 4096 => RowsVariant::P,
        "rmsnorm_bwd" if p_applies && m >= 16_384 && rl.tpr * rl.rpb < 224 => RowsVariant::P,
        "cross_entropy" if r_applies && ce_b_auto(m, n * elem) => RowsVariant::R,
        "cross_entropy" if p_applies => RowsVariant::P,
        _ => RowsVariant::Old,
    };
    match choice {
        RowsKernel::Old => RowsVariant::Old,
        RowsKernel::All if p_applies => RowsVariant::P,
        RowsKernel::Reg if r_applies => RowsVariant::R,
        RowsKernel::Auto => auto(),
        _ => RowsVariant::Old,
    }
}

/// The layout of a `_p` (staged) kernel for rows of `n` elements of `elem` bytes: the
/// [`row_layout`] when its rows are vectorised and every vector fits the [`P_CACHE`] slots of
/// its threads (rows of at most `P_CACHE * MAX_TPR` vectors), else `None`.
pub fn p_layout(n: usize, elem: usize) -> Option<RowLayout> {
    let l = row_layout(n, elem);
    (l.vec > 1 && n / l.vec <= P_CACHE * l.tpr as usize).then_some(l)
}

/// Dynamic shared memory of a `_p` kernel staging `tensors` rows per thread slot in blocks of
/// `threads` threads (`kg_p_smem_bytes`): [`P_STAGES`] × tensors × [`P_CACHE`] × threads × 16.
pub fn p_smem_bytes(tensors: usize, threads: u32) -> u32 {
    (P_STAGES * tensors * P_CACHE * threads as usize * 16) as u32
}

/// The launch of a staged `_p` kernel `name` over `groups` row groups of `lay`: a persistent
/// grid of as many blocks as fit on every SM at once with the dynamic shared memory of
/// `tensors` staged rows (the function's limit raised to it first), at most `groups`.
/// Returns the dims and the blocks per SM.
fn p_dims(
    gpu: &mut Gpu,
    name: &str,
    lay: &RowLayout,
    tensors: usize,
    groups: usize,
) -> Result<(Dims, usize)> {
    let threads = lay.tpr * lay.rpb;
    let smem = p_smem_bytes(tensors, threads);
    let sms = gpu.info.sm_count as usize;
    let f = gpu.module(P_FILE)?.function(name)?;
    gpu.set_max_dynamic_smem(f, smem)?;
    let per_sm = gpu.max_active_blocks(f, threads, smem)? as usize;
    let blocks = groups.min(sms * per_sm).max(1);
    Ok((
        Dims {
            grid: (blocks as u32, 1, 1),
            block: (lay.tpr, lay.rpb, 1),
            smem,
        },
        per_sm,
    ))
}

/// The layout for rows of `n` elements of `elem` bytes.
pub fn row_layout(n: usize, elem: usize) -> RowLayout {
    let full = 16 / elem;
    let vec = if n.is_multiple_of(full) { full } else { 1 };
    let nv = n / vec;
    let want = nv.div_ceil(4).max(1);
    let tpr = if want <= 32 {
        want.next_power_of_two()
    } else {
        (want.div_ceil(32) * 32).min(MAX_TPR)
    };
    let rpb = (256 / tpr).max(1);
    RowLayout {
        vec,
        tpr: tpr as u32,
        rpb: rpb as u32,
    }
}

/// Warps that must be in flight on every SM (a quarter of an SM's 64) before the forward
/// cross-entropy gives each row one warp instead of a block.
pub const CE_WARPS_PER_SM: usize = 16;

/// The layout of the forward cross-entropy, which keeps nothing on chip (it streams the row
/// into an online logsumexp): one warp per row (no barrier, eight 16-byte loads in flight per
/// lane) when the row has at least 32 vectors and there are enough rows to give every SM
/// [`CE_WARPS_PER_SM`] warps; else the usual [`row_layout`] (a block per long row when rows
/// are few, sub-warp rows when they are short).
pub fn ce_fwd_layout(m: usize, n: usize, elem: usize, sms: usize) -> RowLayout {
    let lay = row_layout(n, elem);
    if n / lay.vec >= 32 && m >= sms * CE_WARPS_PER_SM {
        RowLayout {
            tpr: 32,
            rpb: 8,
            ..lay
        }
    } else {
        lay
    }
}

fn suffix(l: &RowLayout) -> &'static str {
    if l.vec == 1 {
        "s"
    } else {
        "v"
    }
}

/// Prepares one case of a family of [`crate::family::norms`].
pub fn prepare(gpu: &mut Gpu, case: &Case, bind: &Bindings) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n) = (s.us("m"), s.us("n"));
    let dt = case.dtype;
    let tn = dt.name();
    let kind = case.kernel.as_str();
    let sms = gpu.info.sm_count;
    let choice = super::from_env(case, ROWS_KERNEL_ENV, parse_rows_kernel)?;
    let lay = if kind == "cross_entropy" {
        ce_fwd_layout(m, n, dt.size(), sms as usize)
    } else {
        row_layout(n, dt.size())
    };
    // The weight dtype picks the weight/bias/dw element type of the norm kernels.
    let wn = weight_dtype(s, dt).name();
    // The kernels of rows_p.cu (rows_variant): a kernel set without rows_p.cu, or whose rows_p.cu
    // has no `_r` kernels (a KERNELGATE_BASE revision from before them), runs the old kernels.
    let mut variant = rows_variant(choice, kind, m, n, dt.size());
    if variant != RowsVariant::Old && !gpu.kernel_set.dir.join(P_FILE).is_file() {
        variant = RowsVariant::Old;
    }
    // The bulk-staged cross-entropy needs the sm_90 copy engine: elsewhere it streams (`_p`).
    if variant == RowsVariant::R && kind == "cross_entropy" && !has_bulk_copy(gpu) {
        variant = RowsVariant::P;
    }
    if variant == RowsVariant::R {
        let probe = if kind == "layernorm" || kind == "rmsnorm_bwd" {
            format!("kg_{kind}_{tn}_w{wn}_r")
        } else {
            format!("kg_{kind}_{tn}_r")
        };
        if !gpu.module(P_FILE)?.has_function(&probe)? {
            variant = RowsVariant::Old;
        }
    }
    let use_p = variant == RowsVariant::P;
    let use_r = variant == RowsVariant::R;
    let staged = use_p && kind != "cross_entropy";
    let ce_p = use_p && kind == "cross_entropy";
    let sfx = match variant {
        RowsVariant::P => "p",
        RowsVariant::R => "r",
        RowsVariant::Old => suffix(&lay),
    };
    // The kernels of their own modules (sm_90+ bulk copies), each chosen by its variable.
    let row_bytes = n * dt.size();
    let rb_threads_pick = if kind == "rmsnorm_bwd" {
        let pick = super::from_env(case, RMSNORM_BWD_ENV, parse_rmsnorm_bwd)?;
        let t = rb_threads(n, dt.size());
        own_kernel(
            case,
            gpu,
            pick,
            RMSNORM_BWD_ENV,
            RB_FILE,
            t,
            rb_auto(m, row_bytes),
        )?
    } else {
        None
    };
    let ce_pick = if kind == "cross_entropy" {
        ce_fwd::choose(case, gpu, m, n, dt.size())?
    } else {
        None
    };
    let (mi, ni) = (m as i32, n as i32);
    let eps = KernelArg::F32(EPS as f32);
    let i = &bind.inputs;
    let o = &bind.outputs;
    let groups = m.div_ceil(lay.rpb as usize);
    let row_dims = Dims {
        grid: (groups as u32, 1, 1),
        block: (lay.tpr, lay.rpb, 1),
        smem: 0,
    };
    let row = |name: &str| format!("kg_{name}_{tn}_{sfx}");
    let norm = |name: &str| format!("kg_{name}_{tn}_w{wn}_{sfx}");
    // Each arm picks the file and pushes its launches (function, dims, args) in order.
    let mut steps: Vec<(String, Dims, Vec<KernelArg>)> = Vec::new();
    let mut workspace = None;
    // How the kernel covers the rows (recorded in the variant string).
    let mut scheme = match kind {
        "softmax" | "cross_entropy_bwd" if use_r => {
            "registers: max then sum reductions (1 barrier each), p = exp(x - max) kept, 1 EX2 per element"
                .to_string()
        }
        "layernorm" if use_r => {
            "registers: one reduction of sums of x - x[0] and its square (1 barrier)".to_string()
        }
        "softmax" | "cross_entropy_bwd" => "online max+sum, 1 reduction, row cached".to_string(),
        "cross_entropy" if use_r => {
            format!("bulk-staged: whole rows copied to shared memory by cp.async.bulk, {} per warp in flight, max then sum (FFMA+EX2), warp per row", ce_b_stages(n * dt.size()))
        }
        "cross_entropy" if ce_p && lay.tpr == 32 && lay.rpb == 8 => {
            "online max+sum streamed (packed max, FFMA+EX2), warp per row".to_string()
        }
        "cross_entropy" if ce_p => "online max+sum streamed (packed max, FFMA+EX2)".to_string(),
        "cross_entropy" if lay.tpr == 32 && lay.rpb == 8 => {
            "online max+sum streamed, warp per row".to_string()
        }
        "cross_entropy" => "online max+sum streamed".to_string(),
        "layernorm" => "mean then variance, 2 reductions, row cached".to_string(),
        _ => "row cached".to_string(),
    };
    // The pipelined launch of a staged kernel: its dims and the scheme it records.
    let mut staged_dims = |gpu: &mut Gpu, name: &str, tensors: usize, what: &str| {
        let (dims, per_sm) = p_dims(gpu, name, &lay, tensors, groups)?;
        scheme = format!(
            "pipelined: rows staged by cp.async one group ahead, persistent {} blocks ({per_sm}/SM), {what}",
            dims.grid.0
        );
        Ok::<Dims, Error>(dims)
    };
    let file = match kind {
        "rmsnorm" => {
            steps.push((
                norm("rmsnorm"),
                row_dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(o[0]),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            "norms.cu"
        }
        "fused_add_rmsnorm" => {
            steps.push((
                norm("fused_add_rmsnorm"),
                row_dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(i[2]),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            "norms.cu"
        }
        "layernorm" => {
            let name = norm("layernorm");
            let dims = if staged {
                staged_dims(gpu, &name, 1, "mean then variance, 2 reductions")?
            } else {
                row_dims
            };
            steps.push((
                name,
                dims,
                vec![
                    KernelArg::Ptr(i[0]),
                    KernelArg::Ptr(i[1]),
                    KernelArg::Ptr(i[2]),
                    KernelArg::Ptr(o[0]),
                    KernelArg::I32(mi),
                    KernelArg::I32(ni),
                    eps,
                ],
            ));
            if staged || use_r {
                P_FILE
            } else {
                "norms.cu"
            }
        }
        "rmsnorm_bwd" if rb_threads_pick.is_some() => {
            // The bulk-staged kernel, a block per row at a time on a persistent grid.
            let threads = rb_threads_pick.unwrap_or(32);
            let name = format!("kg_rmsnorm_bwd_{tn}_w{wn}_b");
            let smem = rb_smem_bytes(n * dt.size());
            let f = gpu.module(RB_FILE)?.function(&name)?;
            gpu.set_max_dynamic_smem(f, smem)?;
            let per_sm = gpu.max_active_blocks(f, threads, smem)? as usize;
            let blocks = m.min(sms as usize * per_sm).max(1);
            scheme = format!(
                "bulk-staged: x and dy rows copied to shared memory by cp.async.bulk, {RB_STAGES} rows ahead, persistent {blocks} blocks ({per_sm}/SM), w and dw sums in registers, 1 reduction per row"
            );
            let dims = Dims {
                grid: (blocks as u32, 1, 1),
                block: (threads, 1, 1),
                smem,
            };
            let dw = format!("kg_rmsnorm_dw_{wn}_b");
            let (two, ws) = rmsnorm_bwd_steps(gpu, case, name, dims, dw, i, o, n, eps)?;
            steps.extend(two);
            workspace = Some(ws);
            RB_FILE
        }
        "rmsnorm_bwd" => {
            // A persistent grid: as many blocks as fit at once (the occupancy of the compiled
            // kernel), each block keeping one fp32 row of dw partial sums (its rows combined on
            // chip), which kg_rmsnorm_dw_* adds in a fixed order.
            let name = norm("rmsnorm_bwd");
            let dims = if staged {
                staged_dims(gpu, &name, 2, "dw partials per block")?
            } else if use_r {
                // The register-resident kernel: the old kernel's persistent grid (no dynamic
                // shared memory), sized by its own occupancy.
                let f = gpu.module(P_FILE)?.function(&name)?;
                let per_sm = gpu.max_active_blocks(f, lay.tpr * lay.rpb, 0)? as usize;
                let blocks = groups.min(sms as usize * per_sm).max(1);
                scheme = format!(
                    "registers: persistent {blocks} blocks ({per_sm}/SM), next row group loaded during the current one, 1 reduction per row, dw partials per block"
                );
                Dims {
                    grid: (blocks as u32, 1, 1),
                    ..row_dims
                }
            } else {
                let threads = lay.tpr * lay.rpb;
                // The old kernel combines a block's rows in shared memory only for rows that fit
                // its register cache (RMSNORM_BWD_CACHE vectors per thread): row_layout gives a
                // block of several rows only to such rows; check it rather than trust it.
                let cached = RMSNORM_BWD_CACHE * lay.tpr as usize;
                if lay.rpb > 1
                    && (n / lay.vec > cached
                        || cached * lay.vec * lay.rpb as usize > RMSNORM_BWD_RED_FLOATS)
                {
                    return Err(Error::Case {
                        case: case.name(),
                        message: format!(
                            "rmsnorm_bwd layout {lay:?} does not fit the kernel's on-chip dw combine"
                        ),
                    });
                }
                let f = gpu.module("norms.cu")?.function(&name)?;
                let per_sm = gpu.max_active_blocks(f, threads, 0)? as usize;
                let blocks = groups.min(sms as usize * per_sm).max(1);
                scheme = format!("persistent {blocks} blocks ({per_sm}/SM), dw partials per block");
                Dims {
                    grid: (blocks as u32, 1, 1),
                    ..row_dims
                }
            };
            let dw = format!(
                "kg_rmsnorm_dw_{wn}{}",
                if staged || use_r { "_p" } else { "" }
            );
            let (two, ws) = rmsnorm_bwd_steps(gpu, case, name, dims, dw, i, o, n, eps)?;
            steps.extend(two);
            workspace = Some(ws);
            if staged || use_r {
                P_FILE
            } else {
                "norms.cu"
            }
        }
        "cross_entropy" if ce_pick.is_some() => {
            // The kernels of their own modules take (x, tgt, loss, lse, m, n), the bulk one
            // then its launch's stages and chunks.
            let mut args: Vec<KernelArg> = i
                .iter()
                .chain(o.iter())
                .map(|&p| KernelArg::Ptr(p))
                .chain([KernelArg::I32(mi), KernelArg::I32(ni)])
                .collect();
            let k = ce_pick.expect("guarded by ce_pick.is_some()");
            let launch = ce_fwd::launch(gpu, k, tn, m, n, dt.size(), sms as usize, &mut args)?;
            scheme = launch.scheme;
            steps.push((launch.name, launch.dims, args));
            k.file()
        }
        // The row kernels of softmax.cu and rows_p.cu take every input, then every output, then
        // (m, n).
        "softmax" | "softmax_bwd" | "cross_entropy" | "cross_entropy_bwd" => {
            let mut args: Vec<KernelArg> = i
                .iter()
                .chain(o.iter())
                .map(|&p| KernelArg::Ptr(p))
                .collect();
            args.extend([KernelArg::I32(mi), KernelArg::I32(ni)]);
            let name = row(kind);
            let dims = match kind {
                "cross_entropy" if use_r => {
                    let smem = ce_b_smem_bytes(n * dt.size(), CE_B_THREADS);
                    let f = gpu.module(P_FILE)?.function(&name)?;
                    gpu.set_max_dynamic_smem(f, smem)?;
                    let per_sm = gpu.max_active_blocks(f, CE_B_THREADS, smem)? as usize;
                    let warps = (CE_B_THREADS / 32) as usize;
                    let blocks = m.div_ceil(warps).min(sms as usize * per_sm).max(1);
                    scheme +=
                        &format!(", persistent {blocks} blocks of {warps} warps ({per_sm}/SM)");
                    Dims {
                        grid: (blocks as u32, 1, 1),
                        block: (CE_B_THREADS, 1, 1),
                        smem,
                    }
                }
                _ if !staged => row_dims,
                "softmax_bwd" => staged_dims(gpu, &name, 2, "1 reduction")?,
                _ => staged_dims(
                    gpu,
                    &name,
                    1,
                    "p = exp(x - own max) in registers, 1 reduction",
                )?,
            };
            steps.push((name, dims, args));
            if use_p || use_r {
                P_FILE
            } else {
                "softmax.cu"
            }
        }
        "gelu" | "gelu_tanh" | "silu" | "mse" => {
            let total = m * n;
            let full = 16 / dt.size();
            let vec = if total.is_multiple_of(full) { full } else { 1 };
            let v = if vec == 1 { "s" } else { "v" };
            let nvec = (total / vec) as u64;
            let blocks = (nvec.div_ceil(256) as usize).clamp(1, sms as usize * 16);
            let flat = Dims {
                grid: (blocks as u32, 1, 1),
                block: (256, 1, 1),
                smem: 0,
            };
            let name = if kind == "gelu" { "gelu_erf" } else { kind };
            if kind == "mse" {
                let ws = gpu.alloc(blocks * 4, &format!("{} partial sums", case.name()))?;
                steps.push((
                    format!("kg_mse_partial_{tn}_{v}"),
                    flat,
                    vec![
                        KernelArg::Ptr(i[0]),
                        KernelArg::Ptr(i[1]),
                        KernelArg::Ptr(ws.ptr()),
                        KernelArg::U64(nvec),
                    ],
                ));
                steps.push((
                    "kg_mse_final".to_string(),
                    Dims {
                        grid: (1, 1, 1),
                        block: (1024, 1, 1),
                        smem: 0,
                    },
                    vec![
                        KernelArg::Ptr(ws.ptr()),
                        KernelArg::I32(blocks as i32),
                        KernelArg::Ptr(o[0]),
                        KernelArg::F32((1.0 / total as f64) as f32),
                    ],
                ));
                workspace = Some(ws);
            } else {
                steps.push((
                    format!("kg_{name}_{tn}_{v}"),
                    flat,
                    vec![
                        KernelArg::Ptr(i[0]),
                        KernelArg::Ptr(o[0]),
                        KernelArg::U64(nvec),
                    ],
                ));
            }
            "elementwise.cu"
        }
        other => {
            return Err(Error::Case {
                case: case.name(),
                message: format!("the cuda backend has no kernel for family {other}"),
            })
        }
    };
    let names: Vec<&str> = steps.iter().map(|(n, _, _)| n.as_str()).collect();
    let variant = if file == "elementwise.cu" {
        names.join(" + ")
    } else {
        let block = steps
            .first()
            .map_or((lay.tpr, lay.rpb, 1), |(_, d, _)| d.block);
        format!(
            "{} (vec {}, {}x{} threads, {scheme})",
            names.join(" + "),
            lay.vec,
            block.0,
            block.1
        )
    };
    super::launch_sequence(
        gpu,
        file,
        steps,
        workspace.into_iter().collect(),
        variant,
        super::Chain::Ordinary,
    )
}

/// Whether the device has the bulk-copy engine (`cp.async.bulk`, compute capability 9.0+) that
/// the `_r` cross-entropy and the `_b` rmsnorm_bwd kernels stage their rows with.
fn has_bulk_copy(gpu: &Gpu) -> bool {
    super::compute_major(&gpu.info.compute_capability) >= 9
}

/// The launch (block size, or configuration) of a kernel of its own module (`file`, staged by the
/// bulk-copy engine) where `pick` of variable `var` runs it, else `None` (the [`rows_variant`]
/// kernels). `threads` is its launch for the case (`None` where the row does not suit it);
/// `auto` its per-shape rule. It
/// runs only on compute capability 9.0+ and with a kernel set that has `file` (a
/// `KERNELGATE_BASE` revision from before it runs the other kernels); forcing it elsewhere is an
/// error of the case.
pub(super) fn own_kernel<T: Copy>(
    case: &Case,
    gpu: &Gpu,
    pick: Pick,
    var: &str,
    file: &str,
    threads: Option<T>,
    auto: bool,
) -> Result<Option<T>> {
    let present = gpu.kernel_set.dir.join(file).is_file();
    let runs = threads.filter(|_| has_bulk_copy(gpu) && present);
    match pick {
        Pick::Off => Ok(None),
        Pick::Auto => Ok(runs.filter(|_| auto)),
        Pick::Force => runs.map(Some).ok_or_else(|| {
            let s = &case.shape;
            Error::Case {
                case: case.name(),
                message: format!(
                    "{var} forces kernels/{file}, which needs compute capability 9.0 or newer, the file in the kernel set, and rows its block can take (16-byte multiples, not too long); here: compute capability {}, {}, rows of {} bytes",
                    gpu.info.compute_capability,
                    if present { "file present" } else { "file missing" },
                    s.us("n") * case.dtype.size()
                ),
            }
        }),
    }
}

/// The two launches of an rmsnorm_bwd case: `name` over `dims` (x, w, dy → dx, one fp32 row of
/// dw partial sums per block into a workspace of `dims.grid.0` rows), then `dw_name` adding the
/// rows in a fixed order into dw. Returns them and the workspace, which must outlive them.
#[allow(clippy::too_many_arguments)]
fn rmsnorm_bwd_steps(
    gpu: &mut Gpu,
    case: &Case,
    name: String,
    dims: Dims,
    dw_name: String,
    inputs: &[u64],
    outputs: &[u64],
    n: usize,
    eps: KernelArg,
) -> Result<(Vec<super::Step>, crate::gpu::DeviceBuffer)> {
    let (m, blocks) = (case.shape.us("m") as i32, dims.grid.0 as usize);
    let ws = gpu.alloc(blocks * n * 4, &format!("{} dw partial sums", case.name()))?;
    let main = vec![
        KernelArg::Ptr(inputs[0]),
        KernelArg::Ptr(inputs[1]),
        KernelArg::Ptr(inputs[2]),
        KernelArg::Ptr(outputs[0]),
        KernelArg::Ptr(ws.ptr()),
        KernelArg::I32(m),
        KernelArg::I32(n as i32),
        eps,
    ];
    let dw_dims = Dims {
        grid: (n.div_ceil(32) as u32, 1, 1),
        block: (32, 16, 1),
        smem: 0,
    };
    let dw = vec![
        KernelArg::Ptr(ws.ptr()),
        KernelArg::Ptr(outputs[1]),
        KernelArg::I32(blocks as i32),
        KernelArg::I32(n as i32),
    ];
    Ok((vec![(name, dims, main), (dw_name, dw_dims, dw)], ws))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kg_rmsnorm_bwd_*` traps on a block of several rows whose rows do not fit its register
    /// cache or its shared dw combine: `row_layout` must never produce one.
    #[test]
    fn row_layout_fits_the_rmsnorm_bwd_combine() {
        for elem in [2usize, 4] {
            for n in (1..=20_000).chain([65_536, 131_072, 262_144, 262_147]) {
                let l = row_layout(n, elem);
                assert!(l.tpr as usize <= MAX_TPR);
                assert!((l.tpr * l.rpb).is_multiple_of(32) || l.tpr * l.rpb == l.tpr);
                if l.rpb > 1 {
                    let cached = RMSNORM_BWD_CACHE * l.tpr as usize;
                    assert!(n / l.vec <= cached, "n {n} elem {elem}: {l:?}");
                    assert!(
                        cached * l.vec * l.rpb as usize <= RMSNORM_BWD_RED_FLOATS,
                        "n {n} elem {elem}: {l:?}"
                    );
                }
            }
        }
    }

    /// The `_p` kernels hold every vector of a row in their slots, and their shared buffer (and
    /// the rmsnorm_bwd dw combine that reuses it) fits a block: check the whole range.
    #[test]
    fn p_layout_fits_the_staged_kernels() {
        for elem in [2usize, 4] {
            for n in (1..=20_000).chain([65_536, 131_072, 262_144, 262_147]) {
                let Some(l) = p_layout(n, elem) else {
                    let r = row_layout(n, elem);
                    assert!(
                        r.vec == 1 || n / r.vec > P_CACHE * MAX_TPR,
                        "n {n} elem {elem}"
                    );
                    continue;
                };
                assert_eq!(l, row_layout(n, elem));
                assert!(l.vec > 1 && n.is_multiple_of(l.vec));
                assert!(
                    n / l.vec <= P_CACHE * l.tpr as usize,
                    "n {n} elem {elem}: {l:?}"
                );
                let threads = l.tpr * l.rpb;
                assert!(threads <= MAX_TPR as u32);
                // The largest buffer (two staged tensors) stays within an SM's 227 KiB.
                assert!(p_smem_bytes(2, threads) <= 227 * 1024);
                // rmsnorm_bwd's dw combine: P_CACHE * vec fp32 values per thread fit the buffer.
                assert!(
                    P_CACHE * l.vec * 4 * threads as usize <= p_smem_bytes(2, threads) as usize
                );
            }
        }
        // The dsv3 and quack rows take the staged kernels; scalar and very long rows do not.
        for n in [3072, 4096, 6144, 7168, 8192, 12288, 16384] {
            assert!(p_layout(n, 2).is_some(), "bf16 n {n}");
        }
        assert!(p_layout(8192, 4).is_some());
        assert!(p_layout(16_392, 2).is_none());
        assert!(p_layout(4100, 2).is_none());
        assert!(p_layout(262_144, 2).is_none());
        assert_eq!(p_smem_bytes(1, 256), 32 * 1024);
    }

    #[test]
    fn rows_kernel_choice_parses() {
        assert_eq!(parse_rows_kernel(None), Ok(RowsKernel::Auto));
        assert_eq!(parse_rows_kernel(Some("")), Ok(RowsKernel::Auto));
        assert_eq!(parse_rows_kernel(Some("auto")), Ok(RowsKernel::Auto));
        assert_eq!(parse_rows_kernel(Some(" old ")), Ok(RowsKernel::Old));
        assert_eq!(parse_rows_kernel(Some("all")), Ok(RowsKernel::All));
        assert_eq!(parse_rows_kernel(Some("reg")), Ok(RowsKernel::Reg));
        assert!(parse_rows_kernel(Some("new")).is_err());
    }

    #[test]
    fn rows_variant_rule() {
        use RowsKernel::*;
        use RowsVariant as V;
        let ms = [4096, 16_384, 65_536];
        // Choices other than auto do not depend on the shape's m.
        for m in ms {
            for n in [1000, 3072, 4096, 6144, 7168, 8192, 12288] {
                for k in R_FAMILIES {
                    assert_eq!(rows_variant(Reg, k, m, n, 2), V::R, "{k} {n}");
                    assert_eq!(rows_variant(All, k, m, n, 2), V::P, "{k} {n}");
                    assert_eq!(rows_variant(Old, k, m, n, 2), V::Old, "{k} {n}");
                }
                assert_eq!(rows_variant(Reg, "cross_entropy", m, n, 2), V::R, "{n}");
                assert_eq!(rows_variant(All, "cross_entropy", m, n, 2), V::P);
                for k in ["softmax_bwd", "rmsnorm", "fused_add_rmsnorm"] {
                    assert_eq!(rows_variant(Reg, k, m, n, 2), V::Old, "{k} {n}");
                }
            }
        }
        // auto on the measured shapes (H100): the dsv3 rows, 65536 x 4096, the suite rows.
        let auto = |k: &str, m: usize, n: usize| rows_variant(Auto, k, m, n, 2);
        for m in ms {
            for n in [1000, 4096, 6144, 7168, 8192] {
                assert_eq!(auto("softmax", m, n), V::R, "{m} {n}");
                let ln = if n >= LAYERNORM_R_FROM_N {
                    V::R
                } else {
                    V::Old
                };
                assert_eq!(auto("layernorm", m, n), ln, "{m} {n}");
                assert_eq!(auto("rmsnorm", m, n), V::Old, "{m} {n}");
                assert_eq!(auto("fused_add_rmsnorm", m, n), V::Old, "{m} {n}");
            }
            for n in [1000, 3072, 4096, 6144, 8192, 12288] {
                assert_eq!(auto("cross_entropy_bwd", m, n), V::R, "{m} {n}");
            }
        }
        // softmax_bwd: _p only on short grids of long rows.
        for n in [6144, 7168, 8192] {
            assert_eq!(auto("softmax_bwd", 4096, n), V::P, "{n}");
            assert_eq!(auto("softmax_bwd", 16_384, n), V::Old, "{n}");
            assert_eq!(auto("softmax_bwd", 65_536, n), V::Old, "{n}");
        }
        assert_eq!(auto("softmax_bwd", 4096, 1000), V::Old);
        assert_eq!(auto("softmax_bwd", 65_536, 4096), V::Old);
        // rmsnorm_bwd: _p on long grids when the old block is small (N = 6144: 192 threads).
        assert_eq!(auto("rmsnorm_bwd", 16_384, 6144), V::P);
        assert_eq!(auto("rmsnorm_bwd", 65_536, 6144), V::P);
        assert_eq!(auto("rmsnorm_bwd", 4096, 6144), V::Old);
        for m in ms {
            for n in [1000, 4096, 7168, 8192] {
                assert_eq!(auto("rmsnorm_bwd", m, n), V::Old, "{m} {n}");
            }
        }
        // cross_entropy: the bulk-staged _r kernel on rows of 4-6 KB and on the mid-size grids of
        // rows up to 16 KB, the streamed _p kernel on every other vectorised row.
        for (m, n) in [
            (4096, 3072),
            (16_384, 3072),
            (65_536, 3072),
            (16_384, 6144),
            (16_384, 8192),
        ] {
            assert_eq!(auto("cross_entropy", m, n), V::R, "{m} {n}");
        }
        for (m, n) in [
            (4096, 1000),
            (4096, 6144),
            (4096, 8192),
            (4096, 12288),
            (16_384, 12288),
            (65_536, 4096),
            (65_536, 6144),
            (65_536, 8192),
            (65_536, 12288),
            (4096, 131_072),
        ] {
            assert_eq!(auto("cross_entropy", m, n), V::P, "{m} {n}");
        }
        // Rows the bulk copy cannot take (not 16-byte multiples, or over 24 KB) never get it.
        assert!(!ce_b_applies(1001, 2) && !ce_b_applies(12_290, 2) && !ce_b_applies(0, 2));
        assert!(ce_b_applies(12_288, 2) && ce_b_applies(6144, 4) && !ce_b_applies(12_289, 2));
        assert_eq!(rows_variant(Reg, "cross_entropy", 4096, 131_072, 2), V::Old);
        // Its shared memory: 128 bytes of barriers, two buffers per warp up to 8 KB rows, one above.
        assert_eq!(ce_b_smem_bytes(6144, 128), 128 + 4 * 2 * 6144);
        assert_eq!(ce_b_smem_bytes(8192, 128), 128 + 4 * 2 * 8192);
        assert_eq!(ce_b_smem_bytes(2000, 128), 128 + 4 * 2 * 2048);
        assert_eq!(ce_b_smem_bytes(16_384, 128), 128 + 4 * 16_384);
        // Scalar rows and rows longer than the register cache keep the old kernels.
        for k in R_FAMILIES {
            assert_eq!(rows_variant(Auto, k, 4096, 1001, 2), V::Old);
            assert_eq!(rows_variant(Auto, k, 4096, 16_392, 2), V::Old);
            assert_eq!(rows_variant(Auto, k, 4096, 262_144, 2), V::Old);
        }
        assert_eq!(rows_variant(Auto, "cross_entropy", 4096, 1001, 2), V::Old);
        assert_eq!(rows_variant(Reg, "cross_entropy", 4096, 1001, 2), V::Old);
        // The _r rows are exactly the _p rows (same layout, same cache).
        for elem in [2usize, 4] {
            for n in 1..=20_000 {
                assert_eq!(r_layout(n, elem), p_layout(n, elem), "n {n} elem {elem}");
            }
        }
    }

    #[test]
    fn the_bulk_rmsnorm_bwd_takes_vectorised_rows_up_to_1024_threads() {
        // bf16 rows: N / 8 vectors, two per thread, rounded up to a warp.
        assert_eq!(rb_threads(8192, 2), Some(512));
        assert_eq!(rb_threads(6144, 2), Some(384));
        assert_eq!(rb_threads(7168, 2), Some(448));
        assert_eq!(rb_threads(1000, 2), Some(64));
        assert_eq!(rb_threads(16_384, 2), Some(1024));
        assert_eq!(rb_threads(16_392, 2), None, "over 1024 threads");
        assert_eq!(rb_threads(1001, 2), None, "not a 16-byte multiple");
        assert_eq!(rb_threads(0, 2), None);
        assert_eq!(rb_threads(4096, 4), Some(512));
        // Every thread count it gives is a whole number of warps and covers the row.
        for n in (8..=16_384).step_by(8) {
            let t = rb_threads(n, 2).unwrap() as usize;
            assert!(
                t.is_multiple_of(32) && t <= 1024 && t * RB_C >= n / 8,
                "{n}"
            );
        }
        assert_eq!(rb_smem_bytes(16_384), 128 + 2 * 2 * 16_384);
        // auto: rows of 8-16 KB, where it was measured.
        assert!(rb_auto(4096, 8192) && rb_auto(65_536, 16_384) && rb_auto(16_384, 12_288));
        assert!(!rb_auto(4096, 4096) && !rb_auto(65_536, 16_400));
        assert_eq!(rb_smem_bytes(2000), 128 + 2 * 2 * 2048);
        assert_eq!(parse_rmsnorm_bwd(None), Ok(Pick::Auto));
        assert_eq!(parse_rmsnorm_bwd(Some("")), Ok(Pick::Auto));
        assert_eq!(parse_rmsnorm_bwd(Some("auto")), Ok(Pick::Auto));
        assert_eq!(parse_rmsnorm_bwd(Some("off")), Ok(Pick::Off));
        assert_eq!(parse_rmsnorm_bwd(Some("bulk")), Ok(Pick::Force));
        let e = parse_rmsnorm_bwd(Some("fast")).unwrap_err();
        assert!(e.contains(RMSNORM_BWD_ENV) && e.contains("`bulk`"), "{e}");
    }

    #[test]
    fn ce_fwd_gives_a_warp_per_row_only_to_many_long_rows() {
        let sms = 132;
        assert_eq!(ce_fwd_layout(65_536, 4096, 2, sms).tpr, 32);
        assert_eq!(ce_fwd_layout(4096, 3072, 2, sms).tpr, 32);
        assert_eq!(ce_fwd_layout(4096, 131_072, 2, sms).tpr, 32);
        // Few rows: a block per long row.
        assert_eq!(ce_fwd_layout(4, 262_144, 2, sms), row_layout(262_144, 2));
        // Short rows keep the sub-warp layout.
        assert_eq!(ce_fwd_layout(65_536, 64, 2, sms), row_layout(64, 2));
    }
}
