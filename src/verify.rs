//! The correctness gate: device output against a float64 reference.

use crate::case::Dtype;
use serde::{Deserialize, Serialize};

/// Error bounds for one dtype.
///
/// A check passes when the relative L2 error over the checked elements is at most
/// `rel_l2`, and every checked element satisfies `|got − want| ≤ atol·scale + rtol·|want|`,
/// where `scale` is the RMS of the reference over the checked elements (so the bound
/// follows the data's magnitude). Non-finite output where the reference is finite fails.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Bound on ‖got − want‖₂ / ‖want‖₂.
    pub rel_l2: f64,
    /// Absolute part of the element bound, in units of the reference's RMS.
    pub atol: f64,
    /// Relative part of the element bound.
    pub rtol: f64,
}

impl Tolerance {
    /// Each bound the larger of `self`'s and `other`'s.
    pub fn loosest(self, other: Tolerance) -> Tolerance {
        Tolerance {
            rel_l2: self.rel_l2.max(other.rel_l2),
            atol: self.atol.max(other.atol),
            rtol: self.rtol.max(other.rtol),
        }
    }

    /// The default bounds for outputs stored in `dtype` (fp32 accumulation assumed).
    pub fn for_dtype(dtype: Dtype) -> Tolerance {
        match dtype {
            // bf16 has 8 significant bits: one rounding of the output is up to 2^-8 relative.
            Dtype::Bf16 => Tolerance {
                rel_l2: 1e-2,
                atol: 1.6e-2,
                rtol: 1.6e-2,
            },
            // fp16 has 11 significant bits.
            Dtype::Fp16 => Tolerance {
                rel_l2: 1e-2,
                atol: 4e-3,
                rtol: 4e-3,
            },
            Dtype::Fp32 => Tolerance {
                rel_l2: 1e-5,
                atol: 1e-5,
                rtol: 1e-5,
            },
        }
    }
}

/// Reference values for a subset of one output tensor's elements (`Default`: none yet, of
/// output 0, as a family fills check groups one row at a time).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Expected {
    /// Which output tensor (index into the family's output list).
    pub output: usize,
    /// Flat element indices checked.
    pub indices: Vec<usize>,
    /// Reference values at those indices, in float64.
    pub values: Vec<f64>,
    /// Per checked element, the absolute error that fp32 arithmetic cannot avoid in computing
    /// it (a value formed by cancelling terms much larger than itself, as `rmsnorm_bwd`'s dx
    /// of a one-column row): errors are counted beyond it, as beyond the output format's
    /// [`resolution`]. Empty: none (every element's error counts whole).
    pub slack: Vec<f64>,
}

/// Units of fp32 rounding (2^-24 each) allowed on the magnitude of the terms a value is
/// formed from, in [`Expected::slack`]: a few roundings of each term, an approximate
/// reciprocal square root (up to 2 units) cubed, and a sum's error. An fp32 emulation of
/// `rmsnorm_bwd` with the square root 2 units off erred by up to 17.6 units on rows of 1–300
/// columns (7 on one column); this is about twice that.
pub const ARITH_SLACK_UNITS: f64 = 32.0;

/// [`Expected::slack`] for a value formed in fp32 from terms whose absolute values sum to
/// `magnitude`: [`ARITH_SLACK_UNITS`] · 2^-24 · `magnitude`.
pub fn fp32_slack(magnitude: f64) -> f64 {
    ARITH_SLACK_UNITS * 2f64.powi(-24) * magnitude
}

/// The worst element of a check.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Worst {
    /// Output tensor name.
    pub tensor: String,
    /// Flat index.
    pub index: usize,
    /// Device value.
    #[serde(with = "nonfinite")]
    pub got: f64,
    /// Reference value.
    #[serde(with = "nonfinite")]
    pub want: f64,
}

/// The outcome of comparing one output tensor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Check {
    /// Output tensor name.
    pub tensor: String,
    /// Elements compared with the reference.
    pub checked: usize,
    /// Elements in the whole output (all scanned for NaN/Inf).
    pub total: usize,
    /// Relative L2 error over the checked elements (each element's error counted as in
    /// `max_abs`).
    #[serde(with = "nonfinite")]
    pub rel_l2: f64,
    /// Largest |got − want| over the checked elements, counted beyond the output format's
    /// resolution and each element's rounding slack (see [`check_in`]).
    #[serde(with = "nonfinite")]
    pub max_abs: f64,
    /// The element with the largest excess over its bound.
    pub worst: Option<Worst>,
    /// Number of non-finite elements in the whole output (unwritten elements stay NaN).
    pub non_finite: usize,
    /// First non-finite element index, if any.
    pub first_non_finite: Option<usize>,
    /// Whether the check passed.
    pub passed: bool,
    /// Why it failed, if it did.
    pub reason: Option<String>,
    /// Whether the NaN/Inf scan ran on the device and only the sampled spans were copied
    /// (outputs above `KERNELGATE_DEVICE_CHECK_MB`); absent when the whole output was read.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub scanned_on_device: bool,
}

/// Serde for f64 fields that may hold NaN/Inf (a wrong output's error, a poisoned element):
/// JSON has no such numbers and serde_json would write `null`, which it cannot read back
/// into an f64. Non-finite values are written as the strings "NaN", "inf", "-inf".
mod nonfinite {
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(x: &f64, s: S) -> Result<S::Ok, S::Error> {
        if x.is_finite() {
            s.serialize_f64(*x)
        } else if x.is_nan() {
            s.serialize_str("NaN")
        } else if *x > 0.0 {
            s.serialize_str("inf")
        } else {
            s.serialize_str("-inf")
        }
    }

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum Repr {
        Num(f64),
        Text(String),
        Null(()),
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<f64, D::Error> {
        match Repr::deserialize(d)? {
            Repr::Num(x) => Ok(x),
            Repr::Text(t) => match t.as_str() {
                "NaN" => Ok(f64::NAN),
                "inf" => Ok(f64::INFINITY),
                "-inf" => Ok(f64::NEG_INFINITY),
                _ => Err(serde::de::Error::custom(format!(
                    "expected a number, \"NaN\", \"inf\" or \"-inf\", got {t:?}"
                ))),
            },
            // Files written before non-finite values were spelled out.
            Repr::Null(()) => Ok(f64::NAN),
        }
    }
}

/// The reference's `indices` as sorted, disjoint element ranges to copy from the device: indices
/// closer than `gap` elements share a range.
pub fn index_spans(indices: &[usize], gap: usize) -> Vec<std::ops::Range<usize>> {
    let mut v = indices.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out: Vec<std::ops::Range<usize>> = Vec::new();
    for i in v {
        match out.last_mut() {
            Some(r) if i <= r.end + gap => r.end = i + 1,
            _ => out.push(i..i + 1),
        }
    }
    out
}

/// Compares one output (given as all its elements decoded to f64 by `got`) with the reference.
///
/// `got(i)` returns element `i` of the device output; `total` is the output's length.
/// Every element is scanned for NaN/Inf (outputs are poisoned with NaN before the run,
/// so an unwritten element shows up here), and the reference indices are compared.
pub fn check(
    tensor: &str,
    total: usize,
    got: impl Fn(usize) -> f64,
    exp: &Expected,
    tol: Tolerance,
) -> Check {
    check_in(None, tensor, total, got, exp, tol)
}

/// The absolute resolution of a storage format near zero: the spacing of its subnormals
/// (fp16 2^-24, bf16 2^-133, fp32 2^-149). No kernel can store a value closer than about this
/// to its exact value once the value falls among the subnormals.
pub fn resolution(format: Dtype) -> f64 {
    match format {
        Dtype::Fp16 => 2f64.powi(-24),
        Dtype::Bf16 => 2f64.powi(-133),
        Dtype::Fp32 => 2f64.powi(-149),
    }
}

/// As [`check`], for an output stored in `format`: each element's error is counted beyond the
/// format's [`resolution`] (a value among the subnormals is stored only to that spacing, so a
/// reference of 2.6e-7 stored in fp16 is 2.38e-7 or 2.98e-7 however exactly it was computed)
/// and beyond the element's [`Expected::slack`]. `None` takes no resolution off, as [`check`]
/// does.
pub fn check_in(
    format: Option<Dtype>,
    tensor: &str,
    total: usize,
    got: impl Fn(usize) -> f64,
    exp: &Expected,
    tol: Tolerance,
) -> Check {
    let mut non_finite = 0usize;
    let mut first_non_finite = None;
    for i in 0..total {
        if !got(i).is_finite() {
            non_finite += 1;
            first_non_finite.get_or_insert(i);
        }
    }
    Check {
        scanned_on_device: false,
        ..check_scanned(
            format,
            tensor,
            total,
            (non_finite, first_non_finite),
            got,
            exp,
            tol,
        )
    }
}

/// As [`check_in`], for an output whose NaN/Inf scan was done elsewhere (on the device, for
/// outputs too large to download): `scan` is the count of non-finite elements and the first
/// one's index; `got` is only asked for the reference's indices.
pub fn check_scanned(
    format: Option<Dtype>,
    tensor: &str,
    total: usize,
    scan: (usize, Option<usize>),
    got: impl Fn(usize) -> f64,
    exp: &Expected,
    tol: Tolerance,
) -> Check {
    let quantum = format.map_or(0.0, resolution);
    let (non_finite, first_non_finite) = scan;
    let mut slack_used = 0.0f64;
    let mut diff2 = 0.0;
    let mut ref2 = 0.0;
    let mut max_abs: f64 = 0.0;
    for &w in &exp.values {
        ref2 += w * w;
    }
    let n = exp.values.len().max(1) as f64;
    let scale = (ref2 / n).sqrt().max(f64::MIN_POSITIVE);
    let mut worst: Option<(f64, Worst)> = None;
    let mut bad_ref_nan = None;
    for (k, (&i, &w)) in exp.indices.iter().zip(&exp.values).enumerate() {
        let g = got(i);
        let slack = exp.slack.get(k).copied().unwrap_or(0.0);
        if !w.is_finite() {
            bad_ref_nan.get_or_insert(i);
            continue;
        }
        // Beyond the format's resolution and the arithmetic's slack; NaN stays NaN (f64::max
        // would drop it).
        let d = (g - w).abs();
        let d = if d.is_finite() {
            slack_used = slack_used.max(d.min(quantum + slack));
            (d - quantum - slack).max(0.0)
        } else {
            d
        };
        let d_eff = if d.is_finite() { d } else { f64::INFINITY };
        diff2 += if d.is_finite() { d * d } else { f64::INFINITY };
        max_abs = max_abs.max(d_eff);
        let excess = d_eff - (tol.atol * scale + tol.rtol * w.abs());
        if worst.as_ref().is_none_or(|(e, _)| excess > *e) {
            worst = Some((
                excess,
                Worst {
                    tensor: tensor.to_string(),
                    index: i,
                    got: g,
                    want: w,
                },
            ));
        }
    }
    let rel_l2 = if ref2 > 0.0 {
        (diff2 / ref2).sqrt()
    } else if diff2 == 0.0 {
        0.0
    } else {
        f64::INFINITY
    };
    let mut reason = None;
    // Where a failing error had slack taken off, say how much, so a reader sees why the
    // printed difference is larger than the counted one.
    let slack_note = if slack_used > 0.0 {
        format!(" (errors counted beyond up to {slack_used:.3e} of rounding slack)")
    } else {
        String::new()
    };
    if let Some(i) = bad_ref_nan {
        reason = Some(format!(
            "the reference itself is not finite at index {i} (family bug)"
        ));
    } else if non_finite > 0 {
        reason = Some(format!(
            "{non_finite} of {total} elements are NaN/Inf (first at index {}): unwritten (poisoned) or overflowed",
            first_non_finite.unwrap_or(0)
        ));
    } else if rel_l2 > tol.rel_l2 {
        reason = Some(format!(
            "relative L2 error {rel_l2:.3e} exceeds {:.1e}{slack_note}",
            tol.rel_l2
        ));
    } else if let Some((excess, w)) = &worst {
        if *excess > 0.0 {
            reason = Some(format!(
                "element {} differs by {:.3e}, bound {:.3e} (atol {:.1e}·rms {:.3e} + rtol {:.1e}·|want|){slack_note}",
                w.index,
                (w.got - w.want).abs(),
                tol.atol * scale + tol.rtol * w.want.abs(),
                tol.atol,
                scale,
                tol.rtol
            ));
        }
    }
    Check {
        tensor: tensor.to_string(),
        checked: exp.indices.len(),
        total,
        rel_l2,
        max_abs,
        worst: worst.map(|(_, w)| w),
        non_finite,
        first_non_finite,
        passed: reason.is_none(),
        reason,
        scanned_on_device: true,
    }
}

impl Check {
    /// A one-paragraph failure message naming the worst element, its index, got vs want.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "output `{}`: {} ({} of {} elements checked against the float64 reference; rel L2 {:.3e}, max abs {:.3e})",
            self.tensor,
            self.reason.as_deref().unwrap_or("ok"),
            self.checked,
            self.total,
            self.rel_l2,
            self.max_abs
        );
        if let Some(w) = &self.worst {
            s.push_str(&format!(
                "; worst element: index {} got {:.6e} want {:.6e}",
                w.index, w.got, w.want
            ));
        }
        s
    }
}

/// Picks a deterministic sample of `count` row indices out of `rows`, always including
/// the first and last row; all rows when `rows <= count`. Sorted, no duplicates.
pub fn sample_rows(rows: usize, count: usize, seed: u64) -> Vec<usize> {
    if rows <= count.max(2) {
        return (0..rows).collect();
    }
    let mut out = vec![0, rows - 1];
    let mut k = 0u64;
    while out.len() < count.max(2) {
        let r = crate::inputs::index_value(seed, 0xFFFF_0000, k, rows as u64) as usize;
        k += 1;
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out.sort_unstable();
    out
}
