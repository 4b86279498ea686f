//! `gemm` with M ≤ 8 (GEMV-like): B read once with every thread's loads in flight, split-K
//! partials added in the same launch by the last CTA of each column strip
//! (`kernels/gemm_gemv.cu`), any architecture, every dtype.

use crate::backend::Prepared;
use crate::case::Case;
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// The largest M the GEMV kernels take. The M ≤ 8 entry loads B 8 bytes at a time with 32 rows
/// in flight: a first one at 16 bytes, which left registers for only eight rows, was slower than
/// the wgmma tiles at M = 5–8 (H100: 5×3000×1000 11.1 against 7.7 µs, 8×8192×8192 74 against
/// 52; docs/kernels, session 18).
pub const MAX_GEMV_M: u64 = 8;
/// Environment variable that turns the GEMV kernels off (`0`: M ≤ 8 goes where it went before,
/// the wgmma tiles or `gemm_skinny.cu`), for same-run comparisons.
pub const GEMV_ENV: &str = "KERNELGATE_GEMV";
/// Environment variable that sets how many CTAs per SM the split-K plan aims for (default
/// [`CTAS_PER_SM`]).
pub const GEMV_CTAS_ENV: &str = "KERNELGATE_GEMV_CTAS_PER_SM";
/// Environment variable that launches the GEMV kernel the ordinary way (`0`) instead of as a
/// programmatic dependent of the stream's previous kernel (unset or `1`).
pub const GEMV_PDL_ENV: &str = "KERNELGATE_GEMV_PDL";
/// Warps of a CTA (`GV_WARPS` in the kernel).
const WARPS: u64 = 8;
/// Rows of B each warp has in flight (the entries' `R`) for an entry of `mt` rows of C: 16
/// rows of 16 bytes, or 32 rows of 8 bytes for eight rows of C.
pub fn rows(mt: u64) -> u64 {
    if mt > 4 {
        32
    } else {
        16
    }
}

/// Bytes of a row of B each thread loads at a time (the entries' `VB`) for `mt` rows of C.
pub fn vec_bytes(mt: u64) -> u64 {
    if mt > 4 {
        8
    } else {
        16
    }
}
/// CTAs per SM the plan aims for by default: the kernels are built for two resident CTAs
/// (`__launch_bounds__(256, 2)`).
pub const CTAS_PER_SM: u64 = 2;

/// The largest M the GEMV kernels take for every N and K; from here to [`MAX_GEMV_M`] they take
/// only shapes whose N or K is not a multiple of 8.
pub const MAX_GEMV_M_ANY: u64 = 4;

/// Whether `m × n × k` takes the GEMV kernels: B the large operand (the shapes
/// `gemm_skinny::which` calls skinny-M) and M ≤ 4, or M = 5–8 with N or K not a multiple of 8.
///
/// At eight rows of C the SIMT kernel issues twice the FMAs per byte of B that it does at four,
/// and it lost to the paths M = 5–8 took before on both aligned shapes measured (H100 GPU-e7d02a6b
/// / H200 GPU-828b1783, µs, GEMV / before: 5×3000×1000 bf16 8.24 / 7.38 and 8.37 / 7.30,
/// 8×8192×8192 bf16 64.4 / 51.2 and 67.6 / 41.3). Where N or K is odd, the wgmma tiles first copy
/// the operands to padded buffers and the GEMV won on both GPUs (6×4103×2000 bf16 13.56 / 25.60
/// and 13.49 / 23.84; 7×1001×4099 13.18 / 16.78 and 13.98 / 15.84); the rule is the same for
/// fp32 (`gemm_skinny.cu` before).
pub fn applies(m: u64, n: u64, k: u64) -> bool {
    let rows_ok =
        m <= MAX_GEMV_M_ANY || (m <= MAX_GEMV_M && (!n.is_multiple_of(8) || !k.is_multiple_of(8)));
    rows_ok && super::gemm_skinny::which(m, n, k) == Some(super::gemm_skinny::Skinny::M)
}

/// The GEMV launch plan for `m × n × k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Rows of C the entry is compiled for (1, 2, 4 or 8; ≥ M).
    pub mt: u64,
    /// Column strips (grid x): 32 lanes × [`vec_bytes`] of a row each.
    pub strips: u64,
    /// K splits (grid y).
    pub splits: u64,
    /// Rows of B per split, a multiple of one pass (8 warps × [`rows`]).
    pub kchunk: u64,
}

/// Plans `m × n × k` for `sms` SMs and `ctas_per_sm` CTAs per SM: K is split into as many
/// whole-pass splits as keep the grid within `ctas_per_sm × sms` CTAs (one wave: the CTAs have
/// equal work, so a partial second wave would run at the bandwidth of its few CTAs).
pub fn plan(m: u64, n: u64, k: u64, elem_bytes: u64, sms: u64, ctas_per_sm: u64) -> Plan {
    let mt = [1, 2, 4, 8].into_iter().find(|&t| t >= m).unwrap_or(8);
    let pass = WARPS * rows(mt);
    let strips = n.div_ceil(32 * (vec_bytes(mt) / elem_bytes)).max(1);
    let want = (ctas_per_sm.max(1) * sms / strips).max(1);
    let splits = want.min(k.div_ceil(pass)).max(1);
    let kchunk = k.div_ceil(splits).div_ceil(pass).max(1) * pass;
    Plan {
        mt,
        strips,
        splits: k.div_ceil(kchunk).max(1),
        kchunk,
    }
}

/// Whether [`GEMV_ENV`] allows the GEMV kernels (unset, empty or `1`; `0` does not; another
/// value is an error of `case`).
pub fn allowed(case: &Case) -> Result<bool> {
    super::from_env(case, GEMV_ENV, |v| super::parse_switch(GEMV_ENV, v))
}

/// [`GEMV_CTAS_ENV`] parsed: unset or empty is [`CTAS_PER_SM`]; otherwise a whole number 1–32.
pub fn parse_ctas(value: Option<&str>) -> std::result::Result<u64, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(CTAS_PER_SM),
        Some(v) => match v.parse::<u64>() {
            Ok(c) if (1..=32).contains(&c) => Ok(c),
            _ => Err(format!(
                "{GEMV_CTAS_ENV}={v:?}: expected a whole number of CTAs per SM from 1 to 32"
            )),
        },
    }
}

/// Whether a GPU of `compute_capability` ("major.minor") can launch programmatic dependents
/// (9.0 and newer).
pub fn pdl_capable(compute_capability: &str) -> bool {
    super::compute_major(compute_capability) >= 9
}

/// Prepares C = A·B (M ≤ 8) with `gemm_gemv_<dt>_<MT>`.
pub fn prepare(gpu: &mut Gpu, case: &Case, (a, b, c): (u64, u64, u64)) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let ctas = super::from_env(case, GEMV_CTAS_ENV, parse_ctas)?;
    // Programmatic dependent launches need compute capability 9.0 or newer.
    let pdl = super::from_env(case, GEMV_PDL_ENV, |v| super::parse_switch(GEMV_PDL_ENV, v))?
        && pdl_capable(&gpu.info.compute_capability);
    let p = plan(
        m,
        n,
        k,
        case.dtype.size() as u64,
        gpu.info.sm_count as u64,
        ctas,
    );
    let name = format!("gemm_gemv_{}_{}", case.dtype.name(), p.mt);
    let variant = in_launch_variant(
        &name,
        &shape_text(p.mt),
        p.strips,
        p.splits,
        p.kchunk.min(k),
        "",
    ) + if pdl { "" } else { "; ordinary launch" };
    launch_in_launch_split(
        gpu,
        case,
        (a, b, c),
        InLaunchSplit {
            file: "gemm_gemv.cu",
            name,
            strips: p.strips,
            splits: p.splits,
            kchunk: p.kchunk,
            threads: (WARPS * 32) as u32,
            variant,
            pdl,
        },
    )
}

/// How an entry of `mt` rows reads B, for its variant.
fn shape_text(mt: u64) -> String {
    format!(
        "B streamed once, {} rows of it in flight per thread, {} bytes each",
        rows(mt),
        vec_bytes(mt)
    )
}

/// `"{name} ({shape}; {strips}x{splits} CTAs, {rows} rows of B each[, split-K added by the
/// last CTA]{tail})"`: the variant of a kernel launched by [`launch_in_launch_split`].
pub(super) fn in_launch_variant(
    name: &str,
    shape: &str,
    strips: u64,
    splits: u64,
    rows: u64,
    tail: &str,
) -> String {
    let split = if splits > 1 {
        ", split-K added by the last CTA"
    } else {
        ""
    };
    format!("{name} ({shape}; {strips}x{splits} CTAs, {rows} rows of B each{split}{tail})")
}

/// One launch of a kernel with the calling convention of `gemm_gemv.cu` and `gemm_mtc.cu`:
/// `(A, B, C, part, done, M, N, K, kchunk)` on a grid of (column strips, K splits), whose split-K
/// partials the last CTA of each strip adds in the same launch.
pub(super) struct InLaunchSplit {
    /// Kernel source file.
    pub file: &'static str,
    /// Entry point.
    pub name: String,
    /// Column strips (grid x).
    pub strips: u64,
    /// K splits (grid y).
    pub splits: u64,
    /// Rows of B per split.
    pub kchunk: u64,
    /// Threads per CTA.
    pub threads: u32,
    /// The record's variant.
    pub variant: String,
    /// Launch as a programmatic dependent of the stream's previous kernel.
    pub pdl: bool,
}

/// Launches `l` for C = A·B of the case's M, N, K: with `splits > 1` it allocates the fp32
/// partials and the per-strip counters, zeroed once (the kernel's last CTA of a strip sets its
/// counter back to zero for the next launch).
pub(super) fn launch_in_launch_split(
    gpu: &mut Gpu,
    case: &Case,
    (a, b, c): (u64, u64, u64),
    l: InLaunchSplit,
) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let mut part_buf = None;
    let part = super::gemm_skinny::split_workspace(gpu, case, l.splits, m * n, &mut part_buf)?;
    let mut keep: Vec<_> = part_buf.into_iter().collect();
    let done = if l.splits > 1 {
        let done = gpu.alloc(
            (l.strips * 4) as usize,
            &format!("{} split-K counters", case.name()),
        )?;
        gpu.fill_pattern(&done, 4, 0)?;
        let ptr = done.ptr();
        keep.push(done);
        ptr
    } else {
        0
    };
    let step = (
        l.name,
        Dims {
            grid: (l.strips as u32, l.splits as u32, 1),
            block: (l.threads, 1, 1),
            smem: 0,
        },
        vec![
            KernelArg::Ptr(a),
            KernelArg::Ptr(b),
            KernelArg::Ptr(c),
            KernelArg::Ptr(part),
            KernelArg::Ptr(done),
            KernelArg::I32(m as i32),
            KernelArg::I32(n as i32),
            KernelArg::I32(k as i32),
            KernelArg::I32(l.kchunk as i32),
        ],
    );
    super::launch_sequence(
        gpu,
        l.file,
        vec![step],
        keep,
        l.variant,
        if l.pdl {
            super::Chain::Dependent
        } else {
            super::Chain::Ordinary
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemv_takes_short_m_where_b_is_the_large_operand() {
        assert!(applies(1, 4096, 4096));
        assert!(applies(3, 5000, 77));
        assert!(applies(4, 5, 100));
        // M = 5–8: only where N or K is not a multiple of 8.
        assert!(!applies(5, 3000, 1000));
        assert!(!applies(8, 8192, 8192));
        assert!(applies(6, 4103, 2000));
        assert!(applies(7, 1001, 4099));
        assert!(applies(8, 4096, 4100));
        assert!(!applies(9, 4095, 4095));
        assert!(!applies(9, 4096, 4096));
        assert!(!applies(16, 8192, 8192));
        // N ≤ M: A is the one to stream.
        assert!(!applies(4, 4, 1000));
        assert!(!applies(1, 1, 0));
    }

    #[test]
    fn plans_cover_k_in_whole_passes() {
        for &(m, n, k) in &[
            (1u64, 4096u64, 4096u64),
            (2, 3000, 1000),
            (3, 5000, 77),
            (1, 1, 1),
            (4, 100_000, 31),
            (3, 9, 1_000_000),
            (5, 3000, 1000),
            (8, 8192, 8192),
            (7, 1001, 4099),
        ] {
            for eb in [2u64, 4] {
                for ctas in [1, 2, 4] {
                    let p = plan(m, n, k, eb, 132, ctas);
                    assert!(p.mt >= m && p.mt <= 8, "{m} {}", p.mt);
                    assert_eq!(p.kchunk % (WARPS * rows(p.mt)), 0);
                    assert!(p.strips * 32 * (vec_bytes(p.mt) / eb) >= n);
                    // Every row of B is in exactly one split, and none is empty.
                    assert!(
                        p.splits * p.kchunk >= k && (p.splits - 1) * p.kchunk < k,
                        "{m} {n} {k} {p:?}"
                    );
                    assert!(p.splits <= k.max(1));
                }
            }
        }
        // 1×4096×4096 bf16 on 132 SMs: 16 strips of 256 columns, K in 16 splits of two
        // 128-row passes: 256 CTAs, two per SM.
        // 8×8192×8192 bf16: 64 strips of 128 columns; 264 / 64 = 4 splits of 2048 rows (256
        // CTAs; five splits, the earlier rounding up, made 320 CTAs, a wave and a fifth).
        assert_eq!(
            plan(8, 8192, 8192, 2, 132, 2),
            Plan {
                mt: 8,
                strips: 64,
                splits: 4,
                kchunk: 2048
            }
        );
        assert_eq!(
            plan(1, 4096, 4096, 2, 132, 2),
            Plan {
                mt: 1,
                strips: 16,
                splits: 16,
                kchunk: 256
            }
        );
        // 3×5000×77: 20 strips, one pass covers K.
        assert_eq!(plan(3, 5000, 77, 2, 132, 2).splits, 1);
        // 5×3000×1000 bf16: the eight-row entry, 8-byte vectors (128 columns a strip), so 24
        // strips; K in 4 splits of one 256-row pass.
        assert_eq!(
            plan(5, 3000, 1000, 2, 132, 2),
            Plan {
                mt: 8,
                strips: 24,
                splits: 4,
                kchunk: 256
            }
        );
    }

    proptest::proptest! {
        /// Any shape the GEMV takes, any SM count and CTA target: the entry covers M, the strips
        /// cover N, every row of B is in exactly one split of whole passes, none is empty, and
        /// the grid stays within about the target (or one split per strip).
        #[test]
        fn plans_for_any_shape_cover_it(
            m in 1u64..=MAX_GEMV_M,
            n in 1u64..200_000,
            k in 1u64..200_000,
            eb in proptest::sample::select(vec![2u64, 4]),
            sms in 1u64..200,
            ctas in 1u64..=32,
        ) {
            let p = plan(m, n, k, eb, sms, ctas);
            proptest::prop_assert!(p.mt >= m && [1, 2, 4, 8].contains(&p.mt));
            proptest::prop_assert!(p.mt / 2 < m.max(1), "the smallest entry that covers M");
            proptest::prop_assert_eq!(p.kchunk % (WARPS * rows(p.mt)), 0);
            let sw = 32 * (vec_bytes(p.mt) / eb);
            proptest::prop_assert!(p.strips * sw >= n);
            proptest::prop_assert!((p.strips - 1) * sw < n);
            proptest::prop_assert!(p.splits * p.kchunk >= k && (p.splits - 1) * p.kchunk < k);
            proptest::prop_assert!(p.splits == 1 || p.strips * p.splits <= ctas * sms);
            // The kernel's int arguments.
            proptest::prop_assert!(p.kchunk <= i32::MAX as u64);
        }
    }

    #[test]
    fn variants_read_as_the_committed_rounds_do() {
        // baselines/*/gemm.json, gemm::cuda::m1_n1000_k1000_bf16 (a changed variant would
        // restart the entry on the next append).
        let p = plan(1, 1000, 1000, 2, 132, CTAS_PER_SM);
        assert_eq!(
            in_launch_variant("gemm_gemv_bf16_1", &shape_text(p.mt), p.strips, p.splits, p.kchunk.min(1000), ""),
            "gemm_gemv_bf16_1 (B streamed once, 16 rows of it in flight per thread, 16 bytes each; \
             4x8 CTAs, 128 rows of B each, split-K added by the last CTA)"
        );
        assert_eq!(
            in_launch_variant("k", "s", 3, 1, 77, "; tail"),
            "k (s; 3x1 CTAs, 77 rows of B each; tail)"
        );
    }

    #[test]
    fn programmatic_launches_only_from_hopper_on() {
        assert!(pdl_capable("9.0") && pdl_capable("10.0") && pdl_capable("12.0"));
        assert!(
            !pdl_capable("8.0") && !pdl_capable("8.9") && !pdl_capable("") && !pdl_capable("x")
        );
    }

    #[test]
    fn ctas_per_sm_parses_or_names_the_variable() {
        assert_eq!(parse_ctas(None), Ok(CTAS_PER_SM));
        assert_eq!(parse_ctas(Some("")), Ok(CTAS_PER_SM));
        assert_eq!(parse_ctas(Some("4")), Ok(4));
        for bad in ["0", "33", "two", "-1"] {
            let e = parse_ctas(Some(bad)).unwrap_err();
            assert!(e.contains(GEMV_CTAS_ENV), "{e}");
        }
    }
}
