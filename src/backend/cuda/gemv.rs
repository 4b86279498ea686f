//! `gemm` with M ≤ 8 in 16-bit types on the GEMV kernel of `kernels/gemv.cu` (session 14,
//! opt-in through [`GEMV_ENV`] until it is measured on both GPUs): CTAs of 256 threads over
//! strips of 512 columns of B and slices of K, two batches of B's rows in flight per thread;
//! several slices write fp32 partials that `gemm_gemv_reduce_*` adds in a fixed order.

use crate::backend::Prepared;
use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use crate::gpu::{Dims, Gpu, KernelArg};

/// Environment variable: `1` runs every 16-bit GEMM with M ≤ 8 and N a multiple of 8 on the
/// GEMV kernel with its slices added by each strip's last CTA in the same launch, `reduce` with
/// a second (reduction) launch instead (an error for a case it cannot take); unset, empty or
/// `0` never does.
pub const GEMV_ENV: &str = "KERNELGATE_GEMM_GEMV";
/// The kernel file.
pub const GEMV_FILE: &str = "gemv.cu";
/// Columns of B per CTA strip (`GV_STRIP` × 8).
const STRIP_COLS: u64 = 512;
/// Most rows of B per slice (`GV_KC`).
const MAX_KCHUNK: u64 = 512;
/// Fewest rows of B per slice when K is split.
const MIN_KCHUNK: u64 = 64;
/// Rows of a slice one batch covers over the four row groups (`GV_GROUPS` × `GV_U`).
const STEP: u64 = 16;
/// CTAs per SM the plan aims for.
const CTAS_PER_SM: u64 = 2;

/// How [`GEMV_ENV`] asks for the GEMV kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gemv {
    /// Not at all.
    Off,
    /// Slices added by each strip's last CTA, one launch.
    Fused,
    /// Slices added by a second launch.
    TwoLaunches,
}

/// Parses a [`GEMV_ENV`] value: `1` (fused), `reduce` (two launches), unset, empty or `0` (off).
pub fn parse_gemv(value: Option<&str>) -> std::result::Result<Gemv, String> {
    super::parse_choice(
        GEMV_ENV,
        value,
        &[
            ("1", Gemv::Fused),
            ("reduce", Gemv::TwoLaunches),
            ("0", Gemv::Off),
        ],
    )
    .map(|v| v.unwrap_or(Gemv::Off))
}

/// Whether the GEMV kernel takes `m × n` in `dtype`.
pub fn applies(dtype: Dtype, m: u64, n: u64) -> bool {
    matches!(dtype, Dtype::Bf16 | Dtype::Fp16)
        && (1..=8).contains(&m)
        && n > 0
        && n.is_multiple_of(8)
}

/// The launch plan: (tile of M, column strips, K slices, rows of B per slice).
pub fn plan(m: u64, n: u64, k: u64, sms: u64) -> (u64, u64, u64, u64) {
    let mt = [1u64, 2, 4, 8].into_iter().find(|&t| t >= m).unwrap_or(8);
    let gx = n.div_ceil(STRIP_COLS).max(1);
    let least = k.div_ceil(MAX_KCHUNK).max(1);
    // Slices of at least MIN_KCHUNK rows (rounded down: a K under two of them is one slice).
    let most = (k / MIN_KCHUNK).max(1);
    let splits = (CTAS_PER_SM * sms)
        .div_ceil(gx)
        .clamp(least, most.max(least));
    let kchunk = (k.div_ceil(splits).div_ceil(STEP) * STEP).min(MAX_KCHUNK);
    (mt, gx, k.div_ceil(kchunk), kchunk)
}

/// Whether [`GEMV_ENV`] asks for the kernel on `case`; forcing it where it cannot run is an
/// error naming the case.
pub fn wanted(case: &Case) -> Result<Gemv> {
    let how = super::from_env(case, GEMV_ENV, parse_gemv)?;
    if how == Gemv::Off {
        return Ok(how);
    }
    let s = &case.shape;
    if applies(case.dtype, s.get("m"), s.get("n")) {
        Ok(how)
    } else {
        Err(Error::Case {
            case: case.name(),
            message: format!(
                "{GEMV_ENV} forces kernels/{GEMV_FILE}, which takes bf16/fp16 with M <= 8 and N a multiple of 8"
            ),
        })
    }
}

/// Prepares C = A·B on the GEMV kernel.
pub fn prepare(
    gpu: &mut Gpu,
    case: &Case,
    how: Gemv,
    (a, b, c): (u64, u64, u64),
) -> Result<Prepared> {
    let s = &case.shape;
    let (m, n, k) = (s.get("m"), s.get("n"), s.get("k"));
    let d = match case.dtype {
        Dtype::Bf16 => "bf16",
        _ => "fp16",
    };
    let (mt, gx, splits, kchunk) = plan(m, n, k, gpu.info.sm_count as u64);
    let mut keep = Vec::new();
    let part = if splits > 1 {
        let ws = gpu.alloc(
            (splits * m * n * 4) as usize,
            &format!("{} GEMV partial sums", case.name()),
        )?;
        let p = ws.ptr();
        keep.push(ws);
        p
    } else {
        0
    };
    // One zeroed counter per strip for the fused reduction (each launch's last CTA of a strip
    // zeroes it again).
    let fused = splits > 1 && how == Gemv::Fused;
    let counters = if fused {
        let buf = gpu.alloc(
            (gx * 4) as usize,
            &format!("{} GEMV strip counters", case.name()),
        )?;
        gpu.fill_pattern(&buf, 4, 0)?;
        let p = buf.ptr();
        keep.push(buf);
        p
    } else {
        0
    };
    let mut steps = vec![(
        format!("gemm_gemv_{d}_{mt}"),
        Dims {
            grid: (gx as u32, splits as u32, 1),
            block: (256, 1, 1),
            smem: 0,
        },
        vec![
            KernelArg::Ptr(a),
            KernelArg::Ptr(b),
            KernelArg::Ptr(c),
            KernelArg::Ptr(part),
            KernelArg::Ptr(counters),
            KernelArg::I32(m as i32),
            KernelArg::I32(n as i32),
            KernelArg::I32(k as i32),
            KernelArg::I32(kchunk as i32),
        ],
    )];
    if splits > 1 && !fused {
        let elems = m * n;
        steps.push((
            format!("gemm_gemv_reduce_{d}"),
            Dims {
                grid: (elems.div_ceil(32) as u32, 1, 1),
                block: (256, 1, 1),
                smem: 0,
            },
            vec![
                KernelArg::Ptr(part),
                KernelArg::Ptr(c),
                KernelArg::U64(elems),
                KernelArg::I32(splits as i32),
            ],
        ));
    }
    let variant = format!(
        "gemm_gemv_{d}_{mt} (B streamed once, two batches of rows in flight; {gx}x{splits} CTAs of 256, {kchunk} rows of B each{}; forced)",
        match (splits > 1, fused) {
            (false, _) => "",
            (true, true) => ", slices added in order by each strip's last CTA",
            (true, false) => ", slices added in order by a second launch",
        }
    );
    super::launch_sequence(gpu, GEMV_FILE, steps, keep, variant, super::Chain::Ordinary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plans_cover_k_with_slices_the_kernel_takes() {
        for &(m, n, k) in &[
            (1u64, 4096u64, 4096u64),
            (5, 3000, 1000),
            (3, 5000, 77),
            (8, 8, 1),
            (1, 100_000, 100_000),
        ] {
            let (mt, gx, splits, kchunk) = plan(m, n, k, 132);
            assert!(mt >= m && mt <= 8);
            assert_eq!(gx, n.div_ceil(512));
            assert!(kchunk <= 512 && kchunk > 0, "{kchunk}");
            assert!(
                splits * kchunk >= k && (splits - 1) * kchunk < k,
                "{m}x{n}x{k}"
            );
        }
        assert_eq!(
            plan(3, 5000, 77, 132).2,
            1,
            "short K: one slice, no reduction"
        );
        assert!(applies(Dtype::Bf16, 8, 3000) && !applies(Dtype::Bf16, 9, 3000));
        assert!(!applies(Dtype::Fp32, 1, 4096) && !applies(Dtype::Fp16, 1, 4100));
        assert_eq!(parse_gemv(None), Ok(Gemv::Off));
        assert_eq!(parse_gemv(Some("1")), Ok(Gemv::Fused));
        assert_eq!(parse_gemv(Some("reduce")), Ok(Gemv::TwoLaunches));
        assert!(parse_gemv(Some("yes")).unwrap_err().contains(GEMV_ENV));
    }
}
