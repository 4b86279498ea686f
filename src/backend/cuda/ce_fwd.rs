//! The forward cross-entropy kernels of their own modules and the choice between them
//! ([`CE_FWD_ENV`]): the warp-row kernel of `kernels/cross_entropy_l2online.cu` (`_o12*`, loads
//! that allocate in the L2, each vector summed as it lands; the default where [`ceo_auto`]
//! says), its predecessor of `kernels/cross_entropy_l2rows.cu` (`_c12`), the register-row kernel of
//! `kernels/cross_entropy_rows.cu` (`_w4`/`_w6`/`_w8`/`_w`, the default where [`cew_auto`]
//! says), and the register-resident (`_g`, the default where [`ceg_auto`] says) and second
//! bulk-staged (`_b`/`_bp`, opt-in) kernels of
//! `kernels/cross_entropy_bulk.cu`. Each module's source hash is its own, so changing one
//! restarts only its cases' baselines. Where none of them runs, `cross_entropy` runs the row
//! kernels of `rows_p.cu` chosen in [`super::norms`]. (The kernel files' launch comments name
//! `norms.rs`, where this code lived until session 17; editing them would restart their
//! cases' baselines for a comment.)

use super::norms::{own_kernel, r_layout, Pick, RowLayout, MAX_TPR};
use crate::case::Case;
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable choosing `cross_entropy`'s forward kernels of
/// `kernels/cross_entropy_l2rows.cu`, `kernels/cross_entropy_rows.cu` and
/// `kernels/cross_entropy_bulk.cu`: unset, empty or `auto` runs the warp-row `_o12*` of
/// [`CEO_FILE`] (with [`CEO_POLY`]) where [`ceo_auto`] says (in a kernel set without it, `_c12`
/// of [`CEC_FILE`] where [`cec_auto`] says), else the register-row `_w*` where [`cew_auto`] says, else the
/// register-resident `_g` where [`ceg_auto`] says, and the bulk-staged `_b` nowhere;
/// `l2online[:pP]` forces `_o12` with P of every 8 exponentials on the FMA pipe (0–2, default
/// [`CEO_POLY`]), `l2rows` forces `_c12` (both on rows [`cec_layout`] takes), `rows` forces `_w*`, `regs` forces `_g`,
/// `bulk[:W:S[:C][:poly]]` forces `_b`/`_bp`; `off` runs none of them (rows_p.cu's kernels).
/// Forcing one where it cannot run (below compute capability 9.0, rows that are not 16-byte
/// multiples, longer than [`CEB_MAX_ROW_BYTES`] for `_b`, than
/// [`R_CACHE`](super::norms::R_CACHE) × 512 vectors for `_g` or than [`CEW_CAP`] ×
/// [`MAX_TPR`] vectors for `_w`) is an error.
pub const CE_FWD_ENV: &str = "KERNELGATE_CE_FWD";

/// What [`CE_FWD_ENV`] asks of the cross-entropy forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeFwd {
    /// The per-shape rule ([`cew_auto`] for `_w*`, else [`ceg_auto`] for `_g`; `_b` nowhere).
    Auto,
    /// None of these kernels (rows_p.cu's run).
    Off,
    /// The second bulk-staged kernel with this launch wherever it can run.
    Force(CeConfig),
    /// The register-resident kernel (`kg_cross_entropy_*_g`) wherever it can run.
    Regs,
    /// The register-row kernel with one combine (`kg_cross_entropy_*_w` of [`CEW_FILE`])
    /// wherever it can run.
    Rows,
    /// The warp-row kernel reading through the L2 (`kg_cross_entropy_*_c12` of [`CEC_FILE`])
    /// wherever it can run.
    L2Rows,
    /// The warp-row kernel reading through the L2 and summing each vector as it lands
    /// (`kg_cross_entropy_*_o12*` of [`CEO_FILE`]) with this many of every 8 exponentials on
    /// the FMA pipe, wherever it can run.
    L2Online(u8),
}

/// The forward cross-entropy kernel of `kernels/cross_entropy_bulk.cu` a case runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CeKernel {
    /// The bulk-staged warp-per-row kernel (`_b`/`_bp`) with this launch.
    Bulk(CeConfig),
    /// The register-resident kernel (`_g`) with this row layout.
    Regs(RowLayout),
    /// The register-row kernel with one combine (`_w`, [`CEW_FILE`]) with this row layout.
    Rows(RowLayout),
    /// The warp-row kernel reading through the L2 (`_c12`, [`CEC_FILE`]) with this row layout.
    Warp(RowLayout),
    /// The warp-row kernel summing each vector as it lands (`_o12*`, [`CEO_FILE`]) with this
    /// row layout and this many of every 8 exponentials on the FMA pipe.
    Online(RowLayout, u8),
}

/// The layout of the register-resident forward cross-entropy (`kg_cross_entropy_*_g`) for rows
/// of `n` elements of `elem` bytes: [`r_layout`]'s (vectorised rows, at most [`R_CACHE`](super::norms::R_CACHE)
/// vectors a thread; its blocks hold at most 8 rows whenever a row spans several warps, which
/// is all the kernel's shared memory holds), else `None`.
pub fn ceg_layout(n: usize, elem: usize) -> Option<RowLayout> {
    r_layout(n, elem)
}

/// Parses a [`CE_FWD_ENV`] value: `auto` (also unset or empty), `off`, `regs` (the
/// register-resident kernel), `bulk` (the kernel with
/// [`CEB_DEFAULT`]) or `bulk:W:S[:C][:poly]` (W warps a block, 1–32; S row buffers a warp,
/// 1–[`CEB_MAX_STAGES`]; C pieces a row's copy is cut into, 1–[`CEB_MAX_CHUNKS`], default 1;
/// `poly`: the `_bp` kernel).
pub fn parse_ce_fwd(value: Option<&str>) -> std::result::Result<CeFwd, String> {
    let v = value.map(str::trim).unwrap_or("");
    match v {
        "" | "auto" => return Ok(CeFwd::Auto),
        "off" => return Ok(CeFwd::Off),
        "bulk" => return Ok(CeFwd::Force(CEB_DEFAULT)),
        "regs" => return Ok(CeFwd::Regs),
        "rows" => return Ok(CeFwd::Rows),
        "l2rows" => return Ok(CeFwd::L2Rows),
        "l2online" => return Ok(CeFwd::L2Online(CEO_POLY)),
        "l2online:p0" => return Ok(CeFwd::L2Online(0)),
        "l2online:p1" => return Ok(CeFwd::L2Online(1)),
        "l2online:p2" => return Ok(CeFwd::L2Online(2)),
        _ => {}
    }
    let bad = || {
        format!(
            "{CE_FWD_ENV}={v:?} is not a choice: use `auto`, `off`, `l2online[:p0|:p1|:p2]`, `l2rows`, `rows`, `regs`, `bulk` or `bulk:W:S[:C][:gB][:poly]` (W warps a block, 1-32; S row buffers a warp, 1-{CEB_MAX_STAGES}; C pieces a row's copy, 1-{CEB_MAX_CHUNKS}; gB at most B blocks an SM, 1-32)"
        )
    };
    let parts: Vec<&str> = v.split(':').collect();
    if parts.len() < 3 || parts.len() > 6 || parts[0] != "bulk" {
        return Err(bad());
    }
    let warps: u32 = parts[1].parse().map_err(|_| bad())?;
    let stages: u32 = parts[2].parse().map_err(|_| bad())?;
    let mut rest = &parts[3..];
    let chunks = match rest.first().map(|c| c.parse::<u32>()) {
        Some(Ok(c)) => {
            rest = &rest[1..];
            c
        }
        _ => 1,
    };
    let blocks_per_sm = match rest.first().and_then(|g| g.strip_prefix('g')) {
        Some(b) => {
            rest = &rest[1..];
            match b.parse::<u32>() {
                Ok(b) if (1..=32).contains(&b) => Some(b),
                _ => return Err(bad()),
            }
        }
        None => None,
    };
    let poly = match rest {
        [] => false,
        ["poly"] => true,
        _ => return Err(bad()),
    };
    if !(1..=32).contains(&warps)
        || !(1..=CEB_MAX_STAGES).contains(&stages)
        || !(1..=CEB_MAX_CHUNKS).contains(&chunks)
    {
        return Err(bad());
    }
    Ok(CeFwd::Force(CeConfig {
        warps,
        stages,
        chunks,
        blocks_per_sm,
        poly,
    }))
}

/// Whether `auto` runs the register-resident forward cross-entropy (`_g`) on `m` rows of
/// `row_bytes`: rows of at most 8 KB in inputs of at most 2^28 bytes, except the short grids of
/// 4–6 KB rows (inputs under 2^26 bytes), where the bulk-staged `_r` stays. Measured in session
/// 14 through the harness, `_g` time over the previous rule's in the same run (H100
/// GPU-676fe257, H200 GPU-48f177fa, `docs/kernels/session14/`):
/// - rows of 2 KB (N = 1000 bf16) at M = 4096 / 16384 / 65536: H100 0.88 / 0.81 / 0.78, H200
///   0.84 / 0.72 / 0.72;
/// - 8 KB rows (N = 4096 bf16) at M = 4096 / 16384: H100 0.95 / 0.95, H200 0.95 / 0.93; the
///   quack suite on the H200 at M = 8192 / 16384 / 32768: 0.88 / 0.91 / 0.94; at M = 65536
///   (2^29 bytes) H100 0.99, H200 1.06 (left out);
/// - 6 KB rows (N = 3072 bf16) at M = 16384: H100 0.95, H200 0.98; at M = 4096 (2^24.6
///   bytes) H100 1.07, H200 0.98 (left out);
/// - rows of 12–24 KB in bf16 at M ≥ 16384: H200 1.05–1.20 (left out).
pub fn ceg_auto(m: usize, row_bytes: usize) -> bool {
    let bytes = m * row_bytes;
    row_bytes <= 8192 && bytes <= 1 << 28 && !(row_bytes > 4096 && bytes < 1 << 26)
}

/// Whether `auto` runs the register-row forward cross-entropy (`kg_cross_entropy_*_w4/6/8`,
/// [`CEW_FILE`]) on `m` rows of `n` elements of `elem` bytes: rows of at least 6 KB that
/// [`cew_layout`] splits exactly (no predicated loads) in inputs of at least 2^25 bytes, except
/// rows under 8 KB in inputs under 2^26 bytes (4096 × 3072 bf16, which [`cec_auto`] gives the
/// warp rows read through the L2 since session 29). Since session 30 [`ceo_auto`] takes 6 KB
/// rows in inputs under 2^27 bytes before it (16384 × 3072 too). It takes precedence over [`ceg_auto`]. Measured in session 17 through the harness (`scripts/session17-ce.sh`, two
/// interleaved rounds per kernel, `docs/kernels/session17/`), `_w*` against the kernel the
/// previous rule ran, same run, on the 21 measured cases the rule switches:
/// - H200 GPU-6f871e6f: 1.02–1.12× faster on every one (4096 × 6144 0.71 → 0.77 of copy
///   bandwidth, 16384 × 3072 0.83 → 0.86); at 4096 × 3072, left out, it took 1.05× the
///   bulk-staged `_r`'s time, and on predicated rows (N = 1000) 1.3–1.4× `_g`'s;
/// - H100 GPU-927fe739: 0.99–1.10× (four cases 0.2–0.8% slower, inside the run's spread).
pub fn cew_auto(m: usize, n: usize, elem: usize) -> bool {
    let row_bytes = n * elem;
    let bytes = m * row_bytes;
    let exact = cew_layout(n, elem).is_some_and(|l| cew_suffix(n / l.vec, l.tpr) != "w");
    exact && row_bytes >= 6144 && bytes >= 1 << 25 && !(row_bytes < 8192 && bytes < 1 << 26)
}

/// The module of the warp-row forward cross-entropy that reads through the L2
/// (`kg_cross_entropy_*_c12`, [`CE_FWD_ENV`] `l2rows`).
pub const CEC_FILE: &str = "cross_entropy_l2rows.cu";

/// Vectors a lane of `kg_cross_entropy_*_c12` holds (its `KG_CEC_VPT`).
pub const CEC_VPT: usize = 12;

/// The layout of the warp-row forward cross-entropy (`kg_cross_entropy_*_c12`): 16-bit rows of
/// exactly 32 × [`CEC_VPT`] 16-byte vectors (6 KB, N = 3072), a warp a row, two rows a block
/// (64 threads, the probe's fastest with four); `None` for any other row.
pub fn cec_layout(n: usize, elem: usize) -> Option<RowLayout> {
    (elem == 2 && n * elem == 32 * CEC_VPT * 16).then_some(RowLayout {
        vec: 8,
        tpr: 32,
        rpb: 2,
    })
}

/// The module of the warp-row forward cross-entropy that reads through the L2 and sums each
/// vector as it lands (`kg_cross_entropy_*_o12`, `_o12p1`, `_o12p2`; [`CE_FWD_ENV`]
/// `l2online`). It takes the rows [`cec_layout`] takes, with the same launch.
pub const CEO_FILE: &str = "cross_entropy_l2online.cu";

/// Vectors a lane of `kg_cross_entropy_*_o12*` holds (its `KG_CEO_VPT`).
pub const CEO_VPT: usize = 12;

/// How many of every 8 exponentials `auto` puts on the FMA pipe in `kg_cross_entropy_*_o12*`
/// (0: `_o12`, 1: `_o12p1`, 2: `_o12p2`). Two: through the harness at 4096 × 3072 bf16 on H200
/// GPU-7491fca1 (session 30, two interleaved rounds each, `docs/kernels/session30/`), `_o12p2`
/// 7.53–7.58 µs (0.79–0.80 of the copy bandwidth), `_o12p1` 7.66–7.69, `_o12` 7.80–7.82 and
/// `_c12` 8.41–8.46 (0.71): once the batch's later launches find the logits in the L2, MUFU.EX2
/// (16 a clock per SM) bounds the kernel, and a quarter of the exponentials on the FMA pipe
/// relieves it.
pub const CEO_POLY: u8 = 2;

/// The entry-point suffix of `kg_cross_entropy_*_o12*` with `poly` of every 8 exponentials on
/// the FMA pipe (0–2).
pub fn ceo_suffix(poly: u8) -> &'static str {
    match poly {
        0 => "o12",
        1 => "o12p1",
        _ => "o12p2",
    }
}

/// Whether `auto` runs the warp-row forward cross-entropy that sums each vector as it lands
/// (`_o12*`, [`CEO_FILE`]) on `m` rows of `n` elements of `elem` bytes: rows [`cec_layout`]
/// takes in inputs under 2^27 bytes (M ≤ 21845 at N = 3072), which it takes from `_c12` (under
/// 2^26 bytes) and from `_w6` (2^26 up to 2^27). Measured in session 30 through the harness,
/// two interleaved rounds each (`docs/kernels/session30/`), `_o12p2` against the kernel the
/// previous rule ran:
/// - 4096 × 3072 bf16 against `_c12`: H200 GPU-7491fca1 7.53–7.58 µs against 8.41–8.46,
///   GPU-5893c750 7.50–7.51 against 8.39; H100 GPU-41500cde 8.43–8.45 against 9.35 (fp16 and
///   M = 1, 4097, 10922 alike or better);
/// - 16384 × 3072 bf16 against `_w6`: H200 26.58–26.80 µs against 27.54–27.58 (GPU-7491fca1),
///   26.67 against 27.42 (GPU-5893c750); H100 36.42 against 37.15 (fp16 alike);
/// - 65536 × 3072 (2^28.6 bytes, left out): 0.3–0.6% slower than `_w6` on both.
pub fn ceo_auto(m: usize, n: usize, elem: usize) -> bool {
    cec_layout(n, elem).is_some() && m * n * elem < 1 << 27
}

/// Whether `auto` runs the warp-row forward cross-entropy that reads through the L2 (`_c12`) in a
/// kernel set without [`CEO_FILE`] (session 29's rule) on
/// `m` rows of `n` elements of `elem` bytes: rows [`cec_layout`] takes in inputs under 2^26
/// bytes, the short grid [`cew_auto`] and [`ceg_auto`] leave to the bulk-staged `_r`. Measured
/// in session 29 with `kernels/dev/ce_probe.cu` timing as the harness does, its own L2 flush
/// included (H200 GPU-1a8e9d52, 4096 × 3072 bf16, three launches replayed from a graph after
/// the flush, per launch): this layout 8.25 µs against `_r`'s 9.67, `_w6`'s 10.5; one cold
/// launch 11.4–11.6 against 13.1–13.3 and 11.9–12.0. At 16384 × 3072 (one launch a sample) it
/// ties `_w6` (28.0 µs), which keeps that shape.
pub fn cec_auto(m: usize, n: usize, elem: usize) -> bool {
    cec_layout(n, elem).is_some() && m * n * elem < 1 << 26
}

/// The module of the second bulk-staged cross-entropy forward ([`CE_FWD_ENV`]).
pub const CEB_FILE: &str = "cross_entropy_bulk.cu";

/// The module of the register-row forward cross-entropy with one combine
/// (`kg_cross_entropy_*_w`, [`CE_FWD_ENV`] `rows`).
pub const CEW_FILE: &str = "cross_entropy_rows.cu";

/// Vectors a thread of `kg_cross_entropy_*_w` holds at most (its `KG_CEW_CAP`).
pub const CEW_CAP: usize = 8;

/// The entry point of `kg_cross_entropy_*_w*` for rows of `nv` vectors over `tpr` threads:
/// `w4`, `w6` or `w8` when every thread holds exactly that many vectors (loads without
/// predicates), else `w` (up to [`CEW_CAP`] a thread, predicated on the row's length).
pub fn cew_suffix(nv: usize, tpr: u32) -> &'static str {
    let tpr = tpr as usize;
    match nv.is_multiple_of(tpr).then_some(nv / tpr) {
        Some(4) => "w4",
        Some(6) => "w6",
        Some(8) => "w8",
        _ => "w",
    }
}

/// The layout of the register-row forward cross-entropy (`kg_cross_entropy_*_w`) for rows of
/// `n` elements of `elem` bytes, or `None` when the row is not a whole number of 16-byte
/// vectors or needs more than [`CEW_CAP`] × [`MAX_TPR`] of them. Threads: the first of 6, 8
/// and 4 vectors a thread that splits the row into whole warps, else as many 32-thread warps
/// as [`CEW_CAP`] vectors a thread need; rows of at most 32 vectors take a power-of-two group
/// of threads. Rows a block: 64 threads' worth up to one warp a row, else one. From
/// `kernels/dev/ce_probe.cu` on H200s (GPU-08c0e416 and GPU-88ff45c2, `docs/kernels/session17/`):
/// one row a block and 6 vectors a thread were the fastest or within 4% of it at 4096 × 6144,
/// 16384 × 3072, 4096 × 8192 and 65536 × 4096.
pub fn cew_layout(n: usize, elem: usize) -> Option<RowLayout> {
    if elem == 0 || !16usize.is_multiple_of(elem) || !(n * elem).is_multiple_of(16) || n == 0 {
        return None;
    }
    let vec = 16 / elem;
    let nv = n / vec;
    if nv > CEW_CAP * MAX_TPR {
        return None;
    }
    if nv <= 32 {
        let tpr = nv.next_power_of_two() as u32;
        // 64 threads a block; the kernel's shared slots are for rows spanning several warps.
        return Some(RowLayout {
            vec,
            tpr,
            rpb: 64 / tpr,
        });
    }
    let tpr = [6, 8, 4]
        .iter()
        .map(|&v| nv / v)
        .find(|&t| t.is_multiple_of(32) && nv.is_multiple_of(t) && t <= MAX_TPR)
        .unwrap_or_else(|| nv.div_ceil(CEW_CAP).div_ceil(32) * 32);
    // One-warp rows two a block (64 threads); rows of several warps one a block.
    Some(RowLayout {
        vec,
        tpr: tpr as u32,
        rpb: if tpr == 32 { 2 } else { 1 },
    })
}
/// Most row buffers per warp it takes (`KG_CEB_MAX_STAGES`).
pub const CEB_MAX_STAGES: u32 = 4;
/// Most pieces it cuts a row's copy into (`KG_CEB_MAX_CHUNKS`).
pub const CEB_MAX_CHUNKS: u32 = 4;
/// Longest row (bytes) it stages (`KG_CEB_MAX_ROW_BYTES`).
pub const CEB_MAX_ROW_BYTES: usize = 49_152;

/// A launch of the second bulk-staged cross-entropy forward.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CeConfig {
    /// Warps per block (each on its own rows).
    pub warps: u32,
    /// Row buffers per warp (rows in flight per warp).
    pub stages: u32,
    /// Pieces a row's copy is cut into, each on its own mbarrier: the warp sums a piece as soon
    /// as it lands (a running max per lane, rescaled when a piece raises it).
    pub chunks: u32,
    /// At most this many blocks an SM (`None`: as many as fit). Fewer blocks keep fewer rows in
    /// flight, so the rows asked for first land first instead of all landing at the end.
    pub blocks_per_sm: Option<u32>,
    /// A quarter of the exponentials on the FMA pipe (`kg_cross_entropy_*_bp`).
    pub poly: bool,
}

/// The launch `bulk` forces: four warps a block, two row buffers a warp (rows_p.cu's `_r`).
pub const CEB_DEFAULT: CeConfig = CeConfig {
    warps: 4,
    stages: 2,
    chunks: 1,
    blocks_per_sm: None,
    poly: false,
};

/// Dynamic shared memory of the second bulk-staged cross-entropy forward for rows of
/// `row_bytes` under `cfg` (`kg_ceb_smem_bytes`): per warp, [`CEB_MAX_STAGES`] ×
/// [`CEB_MAX_CHUNKS`] mbarriers (8 bytes each), then `cfg.stages` row buffers, each rounded up
/// to 128 bytes.
pub fn ceb_smem_bytes(row_bytes: usize, cfg: CeConfig) -> u32 {
    (cfg.warps as usize
        * ((CEB_MAX_STAGES * CEB_MAX_CHUNKS) as usize * 8
            + cfg.stages as usize * row_bytes.div_ceil(128) * 128)) as u32
}

/// Whether the second bulk-staged cross-entropy forward takes rows of `n` elements of `elem`
/// bytes: 16-byte multiples (as the bulk copy needs) of at most [`CEB_MAX_ROW_BYTES`].
pub fn ceb_applies(n: usize, elem: usize) -> bool {
    n > 0 && (n * elem).is_multiple_of(16) && n * elem <= CEB_MAX_ROW_BYTES
}

impl CeKernel {
    /// The kernel file (module) the kernel lives in.
    pub fn file(&self) -> &'static str {
        match self {
            CeKernel::Rows(_) => CEW_FILE,
            CeKernel::Warp(_) => CEC_FILE,
            CeKernel::Online(..) => CEO_FILE,
            CeKernel::Regs(_) | CeKernel::Bulk(_) => CEB_FILE,
        }
    }
}

/// The forward cross-entropy kernel of its own module that a case of `m` rows of `n` elements of
/// `elem` bytes runs under [`CE_FWD_ENV`], or `None` (rows_p.cu's kernels run): `auto` takes
/// the register-row kernel where [`cew_auto`] says, else the register-resident one where
/// [`ceg_auto`] says, and the bulk launches nowhere (none won on an H200, session 14). A kernel
/// set without [`CEW_FILE`] (a `KERNELGATE_BASE` revision from before session 17) gets the rule
/// it had, `_g` where [`ceg_auto`] says, so a same-run A/B times what that revision ran. Forcing
/// a kernel where it cannot run is an error naming the case, the variable and the reason.
pub fn choose(case: &Case, gpu: &Gpu, m: usize, n: usize, elem: usize) -> Result<Option<CeKernel>> {
    let ce_fwd = super::from_env(case, CE_FWD_ENV, parse_ce_fwd)?;
    let present = Present {
        rows: gpu.kernel_set.dir.join(CEW_FILE).is_file(),
        l2rows: gpu.kernel_set.dir.join(CEC_FILE).is_file(),
        l2online: gpu.kernel_set.dir.join(CEO_FILE).is_file(),
    };
    let d = decide(ce_fwd, m, n, elem, present);
    own_kernel(case, gpu, d.pick, CE_FWD_ENV, d.file, d.kernel, d.auto)
}

/// What [`choose`] asks of the launcher before it knows the GPU: how the kernel was asked for,
/// the kernel that can run the case (if any), whether `auto`'s rule wants it, and the module it
/// lives in (named in the error when a forced kernel cannot run).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decision {
    /// Auto, forced or off.
    pub pick: Pick,
    /// The kernel that can run the case, with its launch.
    pub kernel: Option<CeKernel>,
    /// Under `auto`: whether the rule runs it.
    pub auto: bool,
    /// Its module.
    pub file: &'static str,
}

/// Which of the forward cross-entropy's own modules a kernel set holds (a `KERNELGATE_BASE`
/// revision from before one of them gets the rule it had).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Present {
    /// [`CEW_FILE`] (session 17).
    pub rows: bool,
    /// [`CEC_FILE`] (session 29).
    pub l2rows: bool,
    /// [`CEO_FILE`] (session 30).
    pub l2online: bool,
}

#[cfg(test)]
impl Present {
    /// Every module present (a kernel set of this revision).
    pub const ALL: Present = Present {
        rows: true,
        l2rows: true,
        l2online: true,
    };
}

/// The pure part of [`choose`]: `ce_fwd` on `m` rows of `n` elements of `elem` bytes in a
/// kernel set holding the modules `present` names.
pub fn decide(ce_fwd: CeFwd, m: usize, n: usize, elem: usize, present: Present) -> Decision {
    let regs = ceg_layout(n, elem);
    let warp = match cec_layout(n, elem) {
        Some(l) if present.l2online && ceo_auto(m, n, elem) => Some(CeKernel::Online(l, CEO_POLY)),
        Some(l) if present.l2rows && cec_auto(m, n, elem) => Some(CeKernel::Warp(l)),
        _ => None,
    };
    let (pick, kernel, auto) = match ce_fwd {
        CeFwd::Off => (Pick::Off, None, false),
        CeFwd::Auto if warp.is_some() => (Pick::Auto, warp, true),
        CeFwd::Auto => match cew_layout(n, elem).filter(|_| cew_auto(m, n, elem) && present.rows) {
            Some(l) => (Pick::Auto, Some(CeKernel::Rows(l)), true),
            None => (Pick::Auto, regs.map(CeKernel::Regs), ceg_auto(m, n * elem)),
        },
        CeFwd::L2Rows => (Pick::Force, cec_layout(n, elem).map(CeKernel::Warp), false),
        CeFwd::L2Online(p) => (
            Pick::Force,
            cec_layout(n, elem).map(|l| CeKernel::Online(l, p)),
            false,
        ),
        CeFwd::Force(c) => (
            Pick::Force,
            ceb_applies(n, elem).then_some(CeKernel::Bulk(c)),
            false,
        ),
        CeFwd::Regs => (Pick::Force, regs.map(CeKernel::Regs), false),
        CeFwd::Rows => (Pick::Force, cew_layout(n, elem).map(CeKernel::Rows), false),
    };
    // The kernel's own module; a forced kernel that cannot run names the module it asked for.
    let file = match (ce_fwd, kernel) {
        (_, Some(k)) => k.file(),
        (CeFwd::Rows, None) => CEW_FILE,
        (CeFwd::L2Rows, None) => CEC_FILE,
        (CeFwd::L2Online(_), None) => CEO_FILE,
        _ => CEB_FILE,
    };
    Decision {
        pick,
        kernel,
        auto,
        file,
    }
}

/// One launch of a forward cross-entropy kernel of its own module: the entry point, its
/// dimensions and the scheme the case's variant string records.
#[derive(Debug, Clone)]
pub struct CeLaunch {
    /// The entry point (`kg_cross_entropy_<dtype>_<suffix>`).
    pub name: String,
    /// Grid, block and dynamic shared memory.
    pub dims: Dims,
    /// How the kernel covers the rows, for the variant string.
    pub scheme: String,
}

/// The launch of `kernel` over `m` rows of `n` elements of `elem` bytes (dtype name `tn`) on a
/// GPU of `sms` SMs. `args` holds (x, tgt, loss, lse, m, n); the bulk kernel's stages and
/// pieces are appended to it. The bulk kernel's shared memory is raised to what it needs and
/// its grid sized by its occupancy, which is why the GPU is needed.
#[allow(clippy::too_many_arguments)]
pub fn launch(
    gpu: &mut Gpu,
    kernel: CeKernel,
    tn: &str,
    m: usize,
    n: usize,
    elem: usize,
    sms: usize,
    args: &mut Vec<KernelArg>,
) -> Result<CeLaunch> {
    // cec_layout's rows: every lane of the online kernel holds exactly CEO_VPT vectors.
    debug_assert!(
        !matches!(kernel, CeKernel::Online(..)) || n * elem == 32 * CEO_VPT * 16,
        "the online kernel's rows are 32 x CEO_VPT vectors"
    );
    let rows = |g: RowLayout| Dims {
        grid: (m.div_ceil(g.rpb as usize) as u32, 1, 1),
        block: (g.tpr, g.rpb, 1),
        smem: 0,
    };
    Ok(match kernel {
        CeKernel::Regs(g) => CeLaunch {
            name: format!("kg_cross_entropy_{tn}_g"),
            dims: rows(g),
            scheme: "registers (cross_entropy_bulk.cu): the whole row loaded before use, max then sum reductions (1 barrier each), FFMA+EX2 per element, the target's logit loaded by the row's first thread".to_string(),
        },
        CeKernel::Warp(g) => CeLaunch {
            name: format!("kg_cross_entropy_{tn}_c12"),
            dims: rows(g),
            scheme: "warp rows read through the L2 (cross_entropy_l2rows.cu): 12 vectors a lane loaded with ld.global.cg before use, each lane's max then its sum of exp(x - its max) (FFMA+EX2), one butterfly of (max, sum) pairs, the target's logit loaded by lane 0".to_string(),
        },
        CeKernel::Online(g, p) => CeLaunch {
            name: format!("kg_cross_entropy_{tn}_{}", ceo_suffix(p)),
            dims: rows(g),
            scheme: format!(
                "warp rows read through the L2, summed as they land (cross_entropy_l2online.cu): 12 vectors a lane loaded with ld.global.cg, each lane's reference the max of its first vector, every vector's exp(x - reference) (FFMA+EX2{}) summed once it lands, a lane whose max is far above its reference summed again against it, one butterfly of (reference, sum) pairs, the target's logit loaded by lane 0",
                match p {
                    0 => String::new(),
                    p => format!(", {p} of every 8 by polynomial on the FMA pipe"),
                }
            ),
        },
        CeKernel::Rows(g) => CeLaunch {
            name: format!("kg_cross_entropy_{tn}_{}", cew_suffix(n / g.vec, g.tpr)),
            dims: rows(g),
            scheme: "register rows (cross_entropy_rows.cu): every vector of the thread loaded before use, each thread's max then its sum of exp(x - its max) (FFMA+EX2), one (max, sum) combine over the row, the target's logit loaded by the row's first thread".to_string(),
        },
        // The second bulk-staged kernel: a warp per row, persistent blocks.
        CeKernel::Bulk(cfg) => {
            let threads = cfg.warps * 32;
            let name = format!("kg_cross_entropy_{tn}_{}", if cfg.poly { "bp" } else { "b" });
            let smem = ceb_smem_bytes(n * elem, cfg);
            let f = gpu.module(CEB_FILE)?.function(&name)?;
            gpu.set_max_dynamic_smem(f, smem)?;
            let fit = gpu.max_active_blocks(f, threads, smem)? as usize;
            let per_sm = cfg.blocks_per_sm.map_or(fit, |b| fit.min(b as usize));
            let warps = cfg.warps as usize;
            let blocks = m.div_ceil(warps).min(sms * per_sm).max(1);
            let scheme = format!(
                "bulk-staged: whole rows copied to shared memory by cp.async.bulk{}, {} per warp in flight, the next row's target loaded a row ahead, max then sum (FFMA+EX2{}), warp per row, persistent {blocks} blocks of {warps} warps ({per_sm}/SM)",
                if cfg.chunks > 1 {
                    format!(" in {} pieces (each summed as it lands, running max per lane)", cfg.chunks)
                } else {
                    String::new()
                },
                cfg.stages,
                if cfg.poly { ", a quarter by polynomial on the FMA pipe" } else { "" }
            );
            args.extend([KernelArg::I32(cfg.stages as i32), KernelArg::I32(cfg.chunks as i32)]);
            CeLaunch {
                name,
                dims: Dims {
                    grid: (blocks as u32, 1, 1),
                    block: (threads, 1, 1),
                    smem,
                },
                scheme,
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_second_bulk_cross_entropy_takes_vectorised_rows_up_to_its_longest() {
        assert!(ceb_applies(3072, 2) && ceb_applies(24_576, 2) && ceb_applies(8, 2));
        assert!(!ceb_applies(24_584, 2), "over CEB_MAX_ROW_BYTES");
        assert!(!ceb_applies(1001, 2), "not a 16-byte multiple");
        assert!(!ceb_applies(0, 4));
        assert_eq!(ceb_smem_bytes(6144, CEB_DEFAULT), 4 * (128 + 2 * 6144));
        let one = CeConfig {
            warps: 1,
            stages: 1,
            chunks: 1,
            blocks_per_sm: None,
            poly: false,
        };
        assert_eq!(ceb_smem_bytes(2000, one), 128 + 2048);
        // One buffer of the longest row fits the 227 KB a block may have.
        assert!(ceb_smem_bytes(CEB_MAX_ROW_BYTES, one) <= 227 * 1024);
        assert_eq!(parse_ce_fwd(Some(" bulk ")), Ok(CeFwd::Force(CEB_DEFAULT)));
        assert_eq!(parse_ce_fwd(None), Ok(CeFwd::Auto));
        assert_eq!(parse_ce_fwd(Some("off")), Ok(CeFwd::Off));
        let c = |warps, stages, chunks, blocks_per_sm, poly| {
            Ok(CeFwd::Force(CeConfig {
                warps,
                stages,
                chunks,
                blocks_per_sm,
                poly,
            }))
        };
        assert_eq!(
            parse_ce_fwd(Some("bulk:8:2:g1")),
            c(8, 2, 1, Some(1), false)
        );
        assert_eq!(
            parse_ce_fwd(Some("bulk:8:2:2:g3:poly")),
            c(8, 2, 2, Some(3), true)
        );
        for bad in [
            "bulk:8:2:g0",
            "bulk:8:2:g33",
            "bulk:8:2:gx",
            "bulk:8:2:poly:g1",
        ] {
            assert!(parse_ce_fwd(Some(bad)).is_err(), "{bad}");
        }
        assert_eq!(parse_ce_fwd(Some("regs")), Ok(CeFwd::Regs));
        assert_eq!(parse_ce_fwd(Some("rows")), Ok(CeFwd::Rows));
        // auto: rows of at most 8 KB up to 2^28 bytes, not the short grids of 4-6 KB rows.
        assert!(ceg_auto(4096, 2000) && ceg_auto(65_536, 2000) && ceg_auto(16_384, 8192));
        assert!(ceg_auto(16_384, 6144) && ceg_auto(1, 16) && ceg_auto(32_768, 8192));
        assert!(!ceg_auto(65_536, 8192), "2^29 bytes");
        assert!(!ceg_auto(4096, 6144), "short grid of 6 KB rows");
        assert!(!ceg_auto(16_384, 12_288), "rows over 8 KB");
        // The register kernel: vectorised rows of at most 4 vectors a thread of up to 512.
        assert!(ceg_layout(3072, 2).is_some() && ceg_layout(16_384, 2).is_some());
        assert!(ceg_layout(16_392, 2).is_none() && ceg_layout(1001, 2).is_none());
        assert_eq!(parse_ce_fwd(Some("bulk:8:1")), c(8, 1, 1, None, false));
        assert_eq!(parse_ce_fwd(Some("bulk:4:3:poly")), c(4, 3, 1, None, true));
        assert_eq!(parse_ce_fwd(Some("bulk:8:1:4")), c(8, 1, 4, None, false));
        assert_eq!(
            parse_ce_fwd(Some("bulk:4:2:2:poly")),
            c(4, 2, 2, None, true)
        );
        for bad in [
            "bulk:0:1",
            "bulk:4:5",
            "bulk:4",
            "bulk:4:2:fast",
            "bulk:4:2:5",
            "bulk:4:2:0",
            "bulk:4:2:poly:2",
            "bulk:4:2:2:poly:x",
            "bulk:x:2",
            "block",
        ] {
            let e = parse_ce_fwd(Some(bad)).unwrap_err();
            assert!(
                e.contains(CE_FWD_ENV) && e.contains("bulk:W:S") && e.contains("`rows`"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn register_row_cross_entropy_layout_and_rule() {
        let lay =
            |n, e| cew_layout(n, e).map(|l| (l.vec, l.tpr, l.rpb, cew_suffix(n / l.vec, l.tpr)));
        // Six vectors a thread first, then eight, then four, one row a block.
        assert_eq!(lay(3072, 2), Some((8, 64, 1, "w6")));
        assert_eq!(lay(6144, 2), Some((8, 128, 1, "w6")));
        assert_eq!(lay(4096, 2), Some((8, 64, 1, "w8")));
        assert_eq!(lay(8192, 2), Some((8, 128, 1, "w8")));
        assert_eq!(lay(12_288, 2), Some((8, 256, 1, "w6")));
        assert_eq!(lay(32_768, 2), Some((8, 512, 1, "w8")));
        assert_eq!(lay(4096, 4), Some((4, 128, 1, "w8")));
        assert_eq!(lay(512, 4), Some((4, 32, 2, "w4")));
        // Rows no whole-warp split fits: up to CEW_CAP vectors a thread, predicated.
        assert_eq!(lay(1000, 2), Some((8, 32, 2, "w")));
        assert_eq!(lay(4104, 2), Some((8, 96, 1, "w")));
        // Short rows: a power-of-two group of threads, several rows a block.
        assert_eq!(lay(8, 2), Some((8, 1, 64, "w")));
        assert_eq!(lay(24, 2), Some((8, 4, 16, "w")));
        assert_eq!(lay(256, 2), Some((8, 32, 2, "w")));
        // Not whole vectors, or more than CEW_CAP x MAX_TPR of them.
        assert_eq!(lay(1001, 2), None);
        assert_eq!(lay(3, 4), None);
        assert_eq!(lay(65_536, 2), None);
        assert_eq!(lay(32_768, 4), None);
        for n in [8, 24, 1000, 3072, 4096, 4104, 32_768] {
            let l = cew_layout(n, 2).unwrap();
            let nv = n / l.vec;
            assert!(
                nv <= CEW_CAP * l.tpr as usize && l.tpr as usize <= MAX_TPR,
                "{n}"
            );
            assert!(
                l.tpr * l.rpb >= 64 && (l.tpr * l.rpb).is_multiple_of(32),
                "{n}"
            );
            assert!(
                l.tpr <= 32 || l.rpb == 1,
                "{n}: shared slots only for one row a block"
            );
        }
        // The rule: exact splits of rows of 6 KB and more in inputs of 2^25 bytes and more,
        // except 6 KB rows under 2^26 bytes.
        assert!(
            !cew_auto(4096, 3072, 2),
            "4096 x 3072 stays on the bulk-staged kernel"
        );
        assert!(cew_auto(4096, 6144, 2) && cew_auto(16_384, 3072, 2) && cew_auto(65_536, 3072, 2));
        assert!(cew_auto(4096, 4096, 2) && cew_auto(8192, 4096, 2) && cew_auto(4_194_304, 4096, 2));
        assert!(
            cew_auto(65_536, 12_288, 2) && cew_auto(1000, 32_768, 2) && cew_auto(4096, 4096, 4)
        );
        assert!(
            !cew_auto(4096, 1000, 2) && !cew_auto(65_536, 1000, 2),
            "predicated rows"
        );
        assert!(!cew_auto(1000, 4104, 2), "predicated rows");
        assert!(
            !cew_auto(257, 4096, 2) && !cew_auto(2048, 4096, 2),
            "under 2^25 bytes"
        );
        assert!(!cew_auto(262_144, 512, 4), "rows under 6 KB");
    }

    #[test]
    fn the_l2_warp_rows_take_6_kb_rows_of_16_bit_types_in_short_grids() {
        let l = cec_layout(3072, 2).expect("6 KB rows");
        assert_eq!((l.vec, l.tpr, l.rpb), (8, 32, 2));
        assert_eq!(
            l.vec * l.tpr as usize * CEC_VPT,
            3072,
            "every lane holds exactly CEC_VPT"
        );
        assert!(
            cec_layout(3072, 4).is_none() && cec_layout(1536, 4).is_none(),
            "fp32"
        );
        assert!(
            cec_layout(3064, 2).is_none()
                && cec_layout(4096, 2).is_none()
                && cec_layout(0, 2).is_none()
        );
        assert!(cec_auto(4096, 3072, 2) && cec_auto(1, 3072, 2) && cec_auto(10_922, 3072, 2));
        assert!(!cec_auto(10_923, 3072, 2), "2^26 bytes and over");
        assert!(!cec_auto(16_384, 3072, 2) && !cec_auto(65_536, 3072, 2));
        assert!(!cec_auto(4096, 6144, 2) && !cec_auto(4096, 2048, 2));
        assert_eq!(parse_ce_fwd(Some("l2rows")), Ok(CeFwd::L2Rows));
    }

    #[test]
    fn the_l2_warp_rows_file_matches_the_host() {
        // The kernel holds CEC_VPT vectors a lane and has an entry per 16-bit dtype the layout
        // takes; the launcher's names and the file agree.
        let src = super::super::kernel_source(CEC_FILE);
        assert!(src.contains(&format!("#define KG_CEC_VPT {CEC_VPT}\n")));
        for tn in ["bf16", "fp16"] {
            assert!(
                src.contains(&format!("KG_CEC({tn}, ")),
                "{tn} entry missing"
            );
        }
        assert!(src.contains("kg_cross_entropy_##TN##_c12("));
        assert!(!src.contains("KG_CEC(fp32, "), "fp32 rows are not taken");
    }

    /// The modules a kernel set holds.
    fn pr(rows: bool, l2rows: bool, l2online: bool) -> Present {
        Present {
            rows,
            l2rows,
            l2online,
        }
    }

    #[test]
    fn the_online_warp_rows_parse_and_name_their_entries() {
        assert_eq!(
            parse_ce_fwd(Some("l2online")),
            Ok(CeFwd::L2Online(CEO_POLY))
        );
        for (v, p) in [("l2online:p0", 0), ("l2online:p1", 1), (" l2online:p2 ", 2)] {
            assert_eq!(parse_ce_fwd(Some(v)), Ok(CeFwd::L2Online(p)), "{v}");
        }
        for v in ["l2online:p3", "l2online:", "l2online:1", "l2onlinep1"] {
            let e = parse_ce_fwd(Some(v)).unwrap_err();
            assert!(e.contains(CE_FWD_ENV) && e.contains("l2online"), "{v}: {e}");
        }
        assert_eq!(
            (ceo_suffix(0), ceo_suffix(1), ceo_suffix(2)),
            ("o12", "o12p1", "o12p2")
        );
        let l = cec_layout(3072, 2).unwrap();
        assert_eq!(
            (CeKernel::Online(l, 0).file(), CeKernel::Warp(l).file()),
            (CEO_FILE, CEC_FILE)
        );
        assert_eq!(
            l.vec * l.tpr as usize * CEO_VPT,
            3072,
            "CEO_VPT vectors a lane"
        );
    }

    #[test]
    fn the_online_warp_rows_file_matches_the_host() {
        // The kernel holds CEO_VPT vectors a lane and has an entry per 16-bit dtype and poly
        // count; the launcher's names and the file agree.
        let src = super::super::kernel_source(CEO_FILE);
        assert!(src.contains(&format!("#define KG_CEO_VPT {CEO_VPT}\n")));
        assert!(src.contains("kg_cross_entropy_##TN##_##SUF("));
        for p in 0..=2u8 {
            for (tn, ty) in [("bf16", "__nv_bfloat16"), ("fp16", "__half")] {
                let entry = format!("KG_CEO({tn}, {ty}, {}, {p})", ceo_suffix(p));
                assert!(src.contains(&entry), "{entry} missing");
            }
        }
        assert!(!src.contains("KG_CEO(fp32, "), "fp32 rows are not taken");
    }

    #[test]
    fn the_online_kernels_fma_pipe_exp2_is_accurate_and_finite() {
        // kg_ceo_ex2_fma of the kernel file, its coefficients read from the file and its f32
        // arithmetic emulated step for step (fmaf = mul_add, the exponent added to the bits):
        // relative error under 3e-6 against 2^max(x, -126) and a finite positive float for every
        // x up to 127, -inf included. (At the clamp, p(0) = 0.9999993 < 1 makes the result a
        // subnormal just under 2^-126, not the normal float the kernel's comment says: harmless
        // beside the reference's 1 in the sum.) A changed coefficient or step fails here.
        let src = super::super::kernel_source(CEO_FILE);
        let body = &src[src
            .find("float kg_ceo_ex2_fma(float x)")
            .expect("kg_ceo_ex2_fma")..];
        let body = &body[..body.find("\n}").unwrap()];
        let num = |s: &str| s.trim().trim_end_matches('f').parse::<f32>().unwrap();
        let lead = body
            .split("float p = ")
            .nth(1)
            .and_then(|r| r.split(';').next())
            .map(num)
            .expect("the leading coefficient");
        let rest: Vec<f32> = body
            .split("p = fmaf(p, f, ")
            .skip(1)
            .map(|r| num(r.split(')').next().unwrap()))
            .collect();
        assert_eq!(rest.len(), 4, "a degree-4 polynomial");
        assert!(body.contains("x = fmaxf(x, -126.f);"), "the clamp");
        assert!(body.contains("(__float_as_int(t) << 23)"), "the exponent");
        let ex2 = |x: f32| -> f32 {
            let x = x.max(-126.0);
            let t = x + 12_582_912.0;
            let j = t - 12_582_912.0;
            let f = x - j;
            let p = rest.iter().fold(lead, |p, &c| p.mul_add(f, c));
            f32::from_bits((p.to_bits() as i32).wrapping_add((t.to_bits() as i32) << 23) as u32)
        };
        let mut worst = 0f64;
        let mut x = -140.0f32;
        while x <= 127.0 {
            let y = ex2(x);
            assert!(y.is_finite() && y > 0.0, "exp2({x}) = {y}");
            assert!(x <= -126.0 || y.is_normal(), "exp2({x}) = {y}");
            let want = 2f64.powf(f64::from(x.max(-126.0)));
            worst = worst.max((f64::from(y) - want).abs() / want);
            x += 1.0 / 1024.0;
        }
        assert!(worst < 3e-6, "worst relative error {worst:e}");
        assert_eq!(ex2(f32::NEG_INFINITY), ex2(-126.0));
        assert!((f64::from(ex2(-126.0)) / 2f64.powi(-126) - 1.0).abs() < 3e-6);
        assert_eq!(
            ex2(0.0).to_bits(),
            0.999_999_3_f32.to_bits(),
            "p(0) is the constant term"
        );
    }

    #[test]
    fn the_choice_before_the_gpu() {
        let kind = |d: Decision| match d.kernel {
            Some(CeKernel::Online(l, p)) => format!("online{}x{}p{p}", l.tpr, l.rpb),
            Some(CeKernel::Rows(l)) => format!("rows{}", l.tpr),
            Some(CeKernel::Warp(l)) => format!("warp{}x{}", l.tpr, l.rpb),
            Some(CeKernel::Regs(_)) => "regs".to_string(),
            Some(CeKernel::Bulk(_)) => "bulk".to_string(),
            None => "none".to_string(),
        };
        // auto: the warp rows summed as they land where cec_auto says (with CEO_POLY), in a
        // kernel set of this revision; nowhere else.
        let online = format!("online32x2p{CEO_POLY}");
        let d = decide(CeFwd::Auto, 4096, 3072, 2, Present::ALL);
        assert_eq!(
            (d.pick, kind(d), d.auto, d.file),
            (Pick::Auto, online.clone(), true, CEO_FILE)
        );
        let d = decide(CeFwd::Auto, 4096, 3072, 2, pr(false, false, true));
        assert_eq!((kind(d), d.file), (online.clone(), CEO_FILE));
        for m in [1, 16_384, 21_845] {
            let d = decide(CeFwd::Auto, m, 3072, 2, Present::ALL);
            assert_eq!((kind(d), d.file), (online.clone(), CEO_FILE), "m {m}");
        }
        let d = decide(CeFwd::Auto, 21_846, 3072, 2, Present::ALL);
        assert_eq!(
            (kind(d), d.file),
            ("rows64".into(), CEW_FILE),
            "2^27 bytes and over"
        );
        let d = decide(CeFwd::Auto, 65_536, 3072, 2, Present::ALL);
        assert_eq!((kind(d), d.file), ("rows64".into(), CEW_FILE));
        // A kernel set with both warp-row modules but not the register rows: the same.
        let d = decide(CeFwd::Auto, 16_384, 3072, 2, pr(false, true, true));
        assert_eq!(kind(d), online);
        let d = decide(CeFwd::Auto, 4096, 2048, 2, Present::ALL);
        assert_eq!(kind(d), "regs", "only 6 KB rows");
        // Forced: each poly count, at any length, 16-bit types only; the file is named when it
        // cannot run.
        for p in 0..=2u8 {
            let d = decide(CeFwd::L2Online(p), 65_536, 3072, 2, Present::ALL);
            assert_eq!(
                (d.pick, kind(d), d.auto, d.file),
                (Pick::Force, format!("online32x2p{p}"), false, CEO_FILE)
            );
        }
        let d = decide(CeFwd::L2Online(0), 4096, 3072, 4, Present::ALL);
        assert_eq!((kind(d), d.file), ("none".into(), CEO_FILE));
        // l2rows still forces `_c12` beside it.
        let d = decide(CeFwd::L2Rows, 4096, 3072, 2, Present::ALL);
        assert_eq!((kind(d), d.file), ("warp32x2".into(), CEC_FILE));
        // A kernel set of session 29 (no cross_entropy_l2online.cu): the warp rows read through
        // the L2 where cec_auto says, then the register rows where cew_auto says, with their
        // files; else `_g` under ceg_auto's say; the bulk kernel never.
        let d = decide(CeFwd::Auto, 4096, 3072, 2, pr(true, true, false));
        assert_eq!(
            (d.pick, kind(d), d.auto, d.file),
            (Pick::Auto, "warp32x2".into(), true, CEC_FILE)
        );
        let d = decide(CeFwd::Auto, 16_384, 3072, 2, pr(true, true, false));
        assert_eq!(
            (d.pick, kind(d), d.auto, d.file),
            (Pick::Auto, "rows64".into(), true, CEW_FILE)
        );
        // A kernel set without cross_entropy_l2rows.cu: 4096 x 3072 keeps the rule it had, the
        // bulk-staged `_r` of rows_p.cu (`_g` is there but not wanted).
        let d = decide(CeFwd::Auto, 4096, 3072, 2, pr(true, false, false));
        assert_eq!(
            (kind(d), d.auto, d.file),
            ("regs".into(), false, CEB_FILE),
            "4096 x 3072 keeps _r"
        );
        // Forced: 6 KB rows of 16-bit types at any length; fp32 rows are not taken.
        let d = decide(CeFwd::L2Rows, 65_536, 3072, 2, pr(true, true, false));
        assert_eq!(
            (d.pick, kind(d), d.auto, d.file),
            (Pick::Force, "warp32x2".into(), false, CEC_FILE)
        );
        let d = decide(CeFwd::L2Rows, 4096, 3072, 4, pr(true, true, false));
        assert_eq!(
            (d.pick, kind(d), d.file),
            (Pick::Force, "none".into(), CEC_FILE)
        );
        let d = decide(CeFwd::Auto, 4096, 1000, 2, pr(true, false, false));
        assert_eq!((kind(d), d.auto, d.file), ("regs".into(), true, CEB_FILE));
        let d = decide(CeFwd::Auto, 65_536, 12_288, 2, pr(true, false, false));
        assert_eq!((kind(d), d.auto), ("rows256".into(), true));
        // A kernel set from before the register rows: the rule it had (here `_g` is not wanted
        // at 2^29 bytes, so rows_p.cu's kernels run).
        let d = decide(CeFwd::Auto, 16_384, 3072, 2, pr(false, false, false));
        assert_eq!((kind(d), d.auto, d.file), ("regs".into(), true, CEB_FILE));
        let d = decide(CeFwd::Auto, 65_536, 8192, 2, pr(false, false, false));
        assert_eq!((kind(d), d.auto), ("regs".into(), false));
        // Forced: the kernel where it can run, else none (the launcher's error names the file).
        let d = decide(CeFwd::Rows, 3, 1001, 2, pr(true, false, false));
        assert_eq!(
            (d.pick, kind(d), d.file),
            (Pick::Force, "none".into(), CEW_FILE)
        );
        let d = decide(CeFwd::Rows, 3, 1000, 2, pr(true, false, false));
        assert_eq!(
            (d.pick, kind(d), d.file),
            (Pick::Force, "rows32".into(), CEW_FILE)
        );
        let d = decide(CeFwd::Regs, 4096, 3072, 2, pr(true, false, false));
        assert_eq!(
            (d.pick, kind(d), d.file),
            (Pick::Force, "regs".into(), CEB_FILE)
        );
        let d = decide(
            CeFwd::Force(CEB_DEFAULT),
            4096,
            3072,
            2,
            pr(true, false, false),
        );
        assert_eq!(
            (d.pick, kind(d), d.file),
            (Pick::Force, "bulk".into(), CEB_FILE)
        );
        let d = decide(
            CeFwd::Force(CEB_DEFAULT),
            4096,
            32_768,
            2,
            pr(true, false, false),
        );
        assert_eq!(
            kind(d),
            "none",
            "64 KB rows are over the bulk kernel's longest"
        );
        let d = decide(CeFwd::Off, 16_384, 3072, 2, pr(true, false, false));
        assert_eq!((d.pick, kind(d)), (Pick::Off, "none".into()));
    }
}
