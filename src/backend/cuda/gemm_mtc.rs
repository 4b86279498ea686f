//! `gemm` with M ≤ 8 on tensor cores (`kernels/gemm_mtc.cu`): B streams through a per-warp
//! cp.async ring into shared memory and is the A operand of `mma.sync` m16n8k16 (C^T = B^T·A^T),
//! so the instructions per byte of B do not grow with M as they do in the SIMT GEMV. bf16/fp16,
//! compute capability 8.0 and up, N a multiple of 8; one CTA per 64 columns of C over all of K.
//!
//! History: written in session 19; its first device run (session 40, H100 GPU-5da6bd3e) was
//! correct and 1.1–3.2× slower than the default paths, so it stayed off. Session 41 rewrote it
//! from per-CTA clock traces of a bench (`kernels/dev/gemv_ring_bench.cu`): A staged in shared
//! memory before any of B is requested (behind B's stream its few lines held every warp for
//! microseconds), B in a per-warp ring with no CTA barrier in the loop, no K split (a split's
//! epilogue cost more than its bandwidth gained), 64-column strips. Which shapes take it by
//! default is [`chosen`], from that session's A/B through the harness (`scripts/suites/mtc41.json`).

use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::Result;
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable that chooses where this kernel runs: unset or empty, the shapes
/// [`chosen`] names; `0`, nowhere; `1`, every shape [`applies`] accepts (for A/B runs).
pub const MTC_ENV: &str = "KERNELGATE_GEMM_MTC";
/// Largest M the kernel takes (one n8 MMA tile of rows of A).
pub const MAX_M: u64 = 8;
/// Columns of C per CTA (`MTC_BN`).
pub const BN: u64 = 64;
/// Rows of B per CTA step: 16 per warp (`MTC_GROUP`).
const GROUP: u64 = 128;
/// Threads per CTA (`MTC_THREADS`).
const THREADS: u32 = 256;
/// Shared memory of the B ring (`MTC_RING_BYTES`: 6 stages × 8 warps × 16 rows × 128 bytes).
const RING_BYTES: u64 = 6 * 8 * 16 * 128;
/// Fewest column strips (CTAs) for [`chosen`]: with fewer, too few SMs stream B (one CTA
/// streams about 30 GB/s of it; session 41, H100). 8×1024×4096 (16 strips) ran 13.4 µs here
/// against 11.2 on the wgmma tiles.
pub const MIN_STRIPS: u64 = 32;
/// Largest M·K [`chosen`] gives this kernel at M = 5–8. Above it the wgmma tiles were as fast or
/// faster (session 41, H100 GPU-53300bda, every launch alone, µs this kernel / wgmma, bf16):
/// 5×8192×4096 28.42 / 28.48, 8×4096×4096 18.24 / 17.82, 8×8192×8192 53.66 / 52.18; at or below
/// it this kernel won by 15–30%: 5×3000×1000 5.65 / 7.34, 6×4096×2048 11.62 / 13.50,
/// 7×2048×1024 7.14 / 8.67 (and against the SIMT GEMV, 7×2056×130 5.49 / 7.10, 8×4104×77
/// 5.31 / 6.94).
pub const MAX_CHOSEN_MK: u64 = 16_384;
/// K range [`chosen`] gives this kernel at M = 1–4, over the SIMT GEMV: 8–10% faster at
/// 1×4096×4096 (12.31 / 13.42 µs), 2×8192×2048 (15.68 / 17.25) and 4×4096×4096 (17.63 / 19.31),
/// session 41, H100 GPU-53300bda; short K (3×5000×77) and K past the range were not measured
/// against it, and stay on the SIMT GEMV.
pub const CHOSEN_K_AT_M4: std::ops::RangeInclusive<u64> = 1024..=8192;

/// Where [`MTC_ENV`] sends the shapes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// The shapes of [`chosen`] (the default).
    Chosen,
    /// None.
    Off,
    /// Every shape [`applies`] accepts.
    All,
}

/// [`MTC_ENV`] as a [`Mode`] (another value is an error of `case`).
pub fn mode(case: &Case) -> Result<Mode> {
    super::from_env(case, MTC_ENV, parse_mode)
}

/// [`MTC_ENV`]'s value as a [`Mode`].
pub fn parse_mode(value: Option<&str>) -> std::result::Result<Mode, String> {
    super::parse_choice(MTC_ENV, value, &[("1", Mode::All), ("0", Mode::Off)])
        .map(|c| c.unwrap_or(Mode::Chosen))
}

/// Whether the kernel can take `m × n × k` of `dtype` on a GPU of `compute_capability` whose
/// blocks may opt into `max_smem` bytes of dynamic shared memory
/// ([`Gpu::max_dynamic_smem_optin`]): a 16-bit dtype, compute capability 8.0 or newer, M ≤ 8, N a
/// multiple of 8 (16-byte rows of B for cp.async), B the large operand (the shapes
/// `gemm_skinny::which` calls skinny-M), and A's rows and the ring within `max_smem`
/// ([`smem_bytes`]).
pub fn applies(
    m: u64,
    n: u64,
    k: u64,
    dtype: Dtype,
    compute_capability: &str,
    max_smem: u64,
) -> bool {
    matches!(dtype, Dtype::Bf16 | Dtype::Fp16)
        && super::compute_major(compute_capability) >= 8
        && m <= MAX_M
        && n.is_multiple_of(8)
        && k <= i32::MAX as u64
        && smem_bytes(m, k) <= max_smem
        && super::gemm_skinny::which(m, n, k) == Some(super::gemm_skinny::Skinny::M)
}

/// Whether the default path of `m × n × k` is this kernel: [`applies`], at least
/// [`MIN_STRIPS`] strips of [`BN`] columns, and M·K ≤ [`MAX_CHOSEN_MK`] at M = 5–8 or K in
/// [`CHOSEN_K_AT_M4`] at M = 1–4.
pub fn chosen(
    m: u64,
    n: u64,
    k: u64,
    dtype: Dtype,
    compute_capability: &str,
    max_smem: u64,
) -> bool {
    let by_m = if m <= 4 {
        CHOSEN_K_AT_M4.contains(&k)
    } else {
        m * k <= MAX_CHOSEN_MK
    };
    by_m && n.div_ceil(BN) >= MIN_STRIPS && applies(m, n, k, dtype, compute_capability, max_smem)
}

/// Bytes of one row of A in shared memory (`a_stride`): K in whole groups of [`GROUP`] rows of
/// 16-bit values, plus 16 bytes of padding.
pub fn a_stride(k: u64) -> u64 {
    k.div_ceil(GROUP).max(1) * GROUP * 2 + 16
}

/// Dynamic shared memory of a launch for `m` rows of A and `k`: the ring and A's rows.
pub fn smem_bytes(m: u64, k: u64) -> u64 {
    RING_BYTES + m * a_stride(k)
}

/// Prepares C = A·B (M ≤ 8, 16-bit) with `gemm_mtc_<dt>`.
pub fn prepare(gpu: &mut Gpu, case: &Case, (a, b, c): (u64, u64, u64)) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let strips = n.div_ceil(BN).max(1);
    let smem = smem_bytes(m, k) as u32;
    // Programmatic dependent launches need compute capability 9.0 or newer.
    let pdl = super::gemm_gemv::pdl_capable(&gpu.info.compute_capability);
    let name = format!("gemm_mtc_{}", case.dtype.name());
    let module = gpu.module("gemm_mtc.cu")?;
    let f = module.function(&name)?;
    gpu.set_max_dynamic_smem(f, smem)?;
    let variant = format!(
        "{name} (B through a 6-stage cp.async ring per warp as the A operand of mma.sync \
         m16n8k16, A staged first; {strips} CTAs of {BN} columns, all of K each{})",
        if pdl { "" } else { "; ordinary launch" }
    );
    let step = (
        name,
        Dims {
            grid: (strips as u32, 1, 1),
            block: (THREADS, 1, 1),
            smem,
        },
        vec![
            KernelArg::Ptr(a),
            KernelArg::Ptr(b),
            KernelArg::Ptr(c),
            KernelArg::I32(m as i32),
            KernelArg::I32(n as i32),
            KernelArg::I32(k as i32),
        ],
    );
    super::launch_sequence(
        gpu,
        "gemm_mtc.cu",
        vec![step],
        Vec::new(),
        variant,
        if pdl {
            super::Chain::Dependent
        } else {
            super::Chain::Ordinary
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::cuda::MAX_DYNAMIC_SMEM as HOPPER;
    /// The opt-in limits of an sm_80 (163 KiB) and an sm_86 (99 KiB).
    const SM80: u64 = 166_912;
    const SM86: u64 = 101_376;

    #[test]
    fn takes_16_bit_short_m_with_whole_16_byte_rows_from_ampere_on() {
        assert!(applies(8, 8192, 8192, Dtype::Bf16, "9.0", HOPPER));
        assert!(applies(5, 3000, 1000, Dtype::Fp16, "8.0", SM80));
        assert!(applies(1, 4096, 4096, Dtype::Bf16, "9.0", HOPPER));
        assert!(
            !applies(9, 8192, 8192, Dtype::Bf16, "9.0", HOPPER),
            "M over one n8 tile"
        );
        assert!(
            !applies(8, 8191, 8192, Dtype::Bf16, "9.0", HOPPER),
            "rows of B not 16-byte aligned"
        );
        assert!(
            !applies(8, 8192, 8192, Dtype::Fp32, "9.0", HOPPER),
            "no fp32 MMA here"
        );
        assert!(
            !applies(8, 8192, 8192, Dtype::Bf16, "7.5", HOPPER),
            "mma.sync bf16 needs sm_80"
        );
        assert!(
            !applies(8, 8, 1000, Dtype::Bf16, "9.0", HOPPER),
            "N ≤ M: A is the one to stream"
        );
        assert!(
            !applies(8, 8192, 16384, Dtype::Bf16, "9.0", HOPPER),
            "eight rows of a 16384-long A do not fit beside the ring"
        );
        assert!(applies(4, 8192, 16384, Dtype::Bf16, "9.0", HOPPER));
        assert!(
            !applies(8, 8192, 8192, Dtype::Bf16, "8.6", SM86),
            "99 KiB of shared memory on an 8.6"
        );
    }

    #[test]
    fn chosen_where_the_a_b_measured_it_faster() {
        // M = 5–8 up to M·K = 16384.
        assert!(chosen(5, 3000, 1000, Dtype::Bf16, "9.0", HOPPER));
        assert!(chosen(6, 4096, 2048, Dtype::Fp16, "9.0", HOPPER));
        assert!(chosen(7, 2056, 130, Dtype::Bf16, "9.0", HOPPER));
        assert!(chosen(8, 4104, 77, Dtype::Bf16, "9.0", HOPPER));
        assert!(
            !chosen(5, 8192, 4096, Dtype::Bf16, "9.0", HOPPER),
            "a tie: the wgmma tiles keep it"
        );
        assert!(
            !chosen(8, 4096, 4096, Dtype::Bf16, "9.0", HOPPER),
            "wgmma 2% faster"
        );
        assert!(
            !chosen(8, 8192, 8192, Dtype::Bf16, "9.0", HOPPER),
            "wgmma 3% faster"
        );
        // M = 1–4 with K in 1024..=8192, over the SIMT GEMV.
        assert!(chosen(1, 4096, 4096, Dtype::Bf16, "9.0", HOPPER));
        assert!(chosen(2, 8192, 2048, Dtype::Fp16, "9.0", HOPPER));
        assert!(chosen(4, 4096, 4096, Dtype::Bf16, "9.0", HOPPER));
        assert!(
            !chosen(3, 5000, 77, Dtype::Bf16, "9.0", HOPPER),
            "short K stays on the SIMT GEMV"
        );
        assert!(
            !chosen(4, 4096, 11008, Dtype::Bf16, "9.0", HOPPER),
            "not measured"
        );
        // At least 32 strips of 64 columns.
        assert!(
            !chosen(8, 1024, 1024, Dtype::Bf16, "9.0", HOPPER),
            "16 strips"
        );
        assert!(
            chosen(8, 1992, 1024, Dtype::Bf16, "9.0", HOPPER),
            "32 strips"
        );
        assert!(
            !chosen(8, 1984, 1024, Dtype::Bf16, "9.0", HOPPER),
            "31 strips"
        );
        assert!(
            !chosen(1, 4096, 4096, Dtype::Fp32, "9.0", HOPPER),
            "16-bit only"
        );
    }

    #[test]
    fn shared_memory_mirrors_the_kernel() {
        // MTC_RING_BYTES and a_stride in kernels/gemm_mtc.cu.
        let src = include_str!("../../../kernels/gemm_mtc.cu");
        for line in [
            "#define MTC_WARPS 8",
            "#define MTC_BN 64",
            "#define MTC_STAGES 6",
            "#define MTC_ROW_BYTES (MTC_BN * 2)",
            "#define MTC_STAGE_BYTES (16 * MTC_ROW_BYTES)",
            "#define MTC_GROUP (16 * MTC_WARPS)",
            "#define MTC_RING_BYTES (MTC_STAGES * MTC_WARPS * MTC_STAGE_BYTES)",
            "return (K + MTC_GROUP - 1) / MTC_GROUP * MTC_GROUP * 2 + 16;",
        ] {
            assert!(
                src.contains(line),
                "kernels/gemm_mtc.cu no longer has `{line}`"
            );
        }
        assert_eq!(RING_BYTES, 6 * 8 * 16 * (BN * 2));
        assert_eq!(a_stride(1000), 1024 * 2 + 16);
        assert_eq!(a_stride(1024), 1024 * 2 + 16);
        assert_eq!(a_stride(1), 128 * 2 + 16);
        assert_eq!(smem_bytes(5, 1000), 98_304 + 5 * 2064);
        // The largest K eight rows take on Hopper (227 KiB): 8320, 65 groups of 128.
        assert!(smem_bytes(8, 8320) <= HOPPER);
        assert!(smem_bytes(8, 8321) > HOPPER);
    }

    #[test]
    fn the_switch_chooses_nowhere_everywhere_or_the_rule() {
        assert_eq!(parse_mode(None), Ok(Mode::Chosen));
        assert_eq!(parse_mode(Some("")), Ok(Mode::Chosen));
        assert_eq!(parse_mode(Some("0")), Ok(Mode::Off));
        assert_eq!(parse_mode(Some("1")), Ok(Mode::All));
        assert!(parse_mode(Some("yes")).unwrap_err().contains(MTC_ENV));
    }
}
