//! `gemm` with M ≤ 8 on tensor cores (`kernels/gemm_mtc.cu`): B streams through a cp.async
//! pipeline into shared memory and is the A operand of `mma.sync` m16n8k16 (C^T = B^T·A^T), so
//! the instructions per byte of B do not grow with M as they do in the SIMT GEMV. bf16/fp16,
//! compute capability 8.0 and up, N a multiple of 8.
//!
//! An experiment, off by default ([`MTC_ENV`]): written in session 19 after the SIMT GEMV lost
//! at M = 8 (8×8192×8192) and at 5×3000×1000. First run on a GPU in session 40 (H100
//! GPU-5da6bd3e, `scripts/suites/mtc40.json`, two interleaved rounds through the harness): correct
//! on all 14 cases, and slower than the default path on every one, µs default / this kernel, bf16:
//! 1×4096×4096 13.33 / 21.06, 2×8192×2048 11.58 / 22.49, 3×5000×77 4.43 / 4.80, 4×4096×11008
//! 38.18 / 50.72, 5×3000×1000 7.33 / 14.80, 8×1024×4096 8.11 / 26.21, 8×8192×8192 51.07 / 58.69
//! (fp16 the same within 2%). So it stays off; kept for A/B with a faster pipeline.

use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::gpu::Gpu;

/// Environment variable that sends the shapes [`applies`] accepts to this kernel (`1`); unset,
/// empty or `0` leaves them where they go by default.
pub const MTC_ENV: &str = "KERNELGATE_GEMM_MTC";
/// Largest M the kernel takes (one n8 MMA tile of rows of A).
pub const MAX_M: u64 = 8;
/// Columns of C per CTA (`MTC_BN`).
const BN: u64 = 128;
/// Rows of B per pipeline stage (`MTC_BK`).
const BK: u64 = 32;
/// Threads per CTA (`MTC_THREADS`).
const THREADS: u32 = 128;
/// CTAs per SM the split plan aims for: 32 KB of shared memory and 74 registers (nvcc 13,
/// sm_90a) a CTA leave room for six.
pub const CTAS_PER_SM: u64 = 6;
/// Fewest K tiles a split keeps, so that its pipeline has something to overlap.
pub const MIN_TILES_PER_SPLIT: u64 = 4;

/// Whether [`MTC_ENV`] asks for this kernel (`1`; unset, empty or `0` does not; another value is
/// an error of `case`).
pub fn requested(case: &Case) -> Result<bool> {
    super::from_env(case, MTC_ENV, |v| {
        super::parse_choice(MTC_ENV, v, &[("1", true), ("0", false)]).map(|c| c.unwrap_or(false))
    })
}

/// Whether the kernel takes `m × n × k` of `dtype` on a GPU of `compute_capability`: a 16-bit
/// dtype, compute capability 8.0 or newer, M ≤ 8, N a multiple of 8 (16-byte rows of B for
/// cp.async), and B the large operand (the shapes `gemm_skinny::which` calls skinny-M).
pub fn applies(m: u64, n: u64, k: u64, dtype: Dtype, compute_capability: &str) -> bool {
    matches!(dtype, Dtype::Bf16 | Dtype::Fp16)
        && super::compute_major(compute_capability) >= 8
        && m <= MAX_M
        && n.is_multiple_of(8)
        && super::gemm_skinny::which(m, n, k) == Some(super::gemm_skinny::Skinny::M)
}

/// The launch plan for `m × n × k`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Column strips of [`BN`] (grid x).
    pub strips: u64,
    /// K splits (grid y).
    pub splits: u64,
    /// Rows of B per split, a multiple of [`BK`].
    pub kchunk: u64,
}

/// Plans `n × k` for `sms` SMs: K is split into as many splits as keep the grid within one wave
/// of [`CTAS_PER_SM`] CTAs per SM, each of at least [`MIN_TILES_PER_SPLIT`] tiles of [`BK`]
/// rows (fewer only where K itself is shorter).
pub fn plan(n: u64, k: u64, sms: u64) -> Plan {
    let strips = n.div_ceil(BN).max(1);
    let tiles = k.div_ceil(BK).max(1);
    let slots = CTAS_PER_SM * sms.max(1);
    let want = (slots / strips)
        .min(tiles.div_ceil(MIN_TILES_PER_SPLIT))
        .max(1);
    let kchunk = tiles.div_ceil(want) * BK;
    Plan {
        strips,
        splits: k.div_ceil(kchunk).max(1),
        kchunk,
    }
}

/// Prepares C = A·B (M ≤ 8, 16-bit) with `gemm_mtc_<dt>`.
pub fn prepare(gpu: &mut Gpu, case: &Case, (a, b, c): (u64, u64, u64)) -> Result<Prepared> {
    let s = &case.shape;
    let (n, k) = (s.get("n"), s.get("k"));
    let p = plan(n, k, gpu.info.sm_count as u64);
    let pdl = super::gemm_gemv::pdl_capable(&gpu.info.compute_capability);
    let name = format!("gemm_mtc_{}", case.dtype.name());
    let shape =
        format!("B through a {BK}-row cp.async pipeline as the A operand of mma.sync m16n8k16");
    let variant = super::gemm_gemv::in_launch_variant(
        &name,
        &shape,
        p.strips,
        p.splits,
        p.kchunk.min(k),
        &format!("; experiment, {MTC_ENV}=1"),
    );
    super::gemm_gemv::launch_in_launch_split(
        gpu,
        case,
        (a, b, c),
        super::gemm_gemv::InLaunchSplit {
            file: "gemm_mtc.cu",
            name,
            strips: p.strips,
            splits: p.splits,
            kchunk: p.kchunk,
            threads: THREADS,
            variant,
            pdl,
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_16_bit_short_m_with_whole_16_byte_rows_from_ampere_on() {
        assert!(applies(8, 8192, 8192, Dtype::Bf16, "9.0"));
        assert!(applies(5, 3000, 1000, Dtype::Fp16, "8.0"));
        assert!(applies(1, 4096, 4096, Dtype::Bf16, "9.0"));
        assert!(
            !applies(9, 8192, 8192, Dtype::Bf16, "9.0"),
            "M over one n8 tile"
        );
        assert!(
            !applies(8, 8191, 8192, Dtype::Bf16, "9.0"),
            "rows of B not 16-byte aligned"
        );
        assert!(
            !applies(8, 8192, 8192, Dtype::Fp32, "9.0"),
            "no fp32 MMA here"
        );
        assert!(
            !applies(8, 8192, 8192, Dtype::Bf16, "7.5"),
            "mma.sync bf16 needs sm_80"
        );
        assert!(
            !applies(8, 8, 1000, Dtype::Bf16, "9.0"),
            "N ≤ M: A is the one to stream"
        );
    }

    #[test]
    fn plans_fill_one_wave_with_splits_of_at_least_four_tiles() {
        // 8×8192×8192 on 132 SMs: 64 strips, 792 / 64 = 12 splits of 22 tiles (704 rows).
        assert_eq!(
            plan(8192, 8192, 132),
            Plan {
                strips: 64,
                splits: 12,
                kchunk: 704
            }
        );
        // 5×3000×1000: 24 strips; 33 by the slots, but 32 tiles allow 8 splits of 4.
        assert_eq!(
            plan(3000, 1000, 132),
            Plan {
                strips: 24,
                splits: 8,
                kchunk: 128
            }
        );
        // A short K: one split.
        assert_eq!(plan(4096, 64, 132).splits, 1);
    }

    proptest::proptest! {
        /// Any shape and SM count: strips cover N, every row of B is in exactly one split of
        /// whole tiles, none is empty, and a split grid stays within one wave.
        #[test]
        fn plans_for_any_shape_cover_it(
            n in 1u64..200_000,
            k in 1u64..200_000,
            sms in 1u64..200,
        ) {
            let p = plan(n, k, sms);
            proptest::prop_assert!(p.strips * BN >= n && (p.strips - 1) * BN < n.max(1));
            proptest::prop_assert_eq!(p.kchunk % BK, 0);
            proptest::prop_assert!(p.splits * p.kchunk >= k && (p.splits - 1) * p.kchunk < k.max(1));
            proptest::prop_assert!(p.splits == 1 || p.strips * p.splits <= CTAS_PER_SM * sms);
            proptest::prop_assert!(p.kchunk <= i32::MAX as u64);
        }
    }

    #[test]
    fn the_switch_is_off_unless_set_to_one() {
        let parse = |v: Option<&str>| {
            super::super::parse_choice(MTC_ENV, v, &[("1", true), ("0", false)])
                .map(|c| c.unwrap_or(false))
        };
        assert_eq!(parse(None), Ok(false));
        assert_eq!(parse(Some("")), Ok(false));
        assert_eq!(parse(Some("0")), Ok(false));
        assert_eq!(parse(Some("1")), Ok(true));
        assert!(parse(Some("yes")).unwrap_err().contains(MTC_ENV));
    }
}
