//! Counter-based inputs: a pure function of (seed, tensor, index), identical on the CPU
//! and on the device (kernels/kg_common.cuh).

use kernelgate::case::Dtype;
use kernelgate::inputs::{self, fmix64, hash, index_value, unit, value, value_f32, Uniform};
use proptest::prelude::*;

const SYM: Uniform = Uniform::SYMMETRIC;

#[test]
fn golden_values() {
    // Pinned once from this implementation; the device must produce the same bits.
    assert_eq!(fmix64(0), 0);
    assert_eq!(fmix64(1), 0xb456_bcfc_34c2_cb2c);
    type Golden = (u64, u32, u64, u64, u32, u32, f64, f64, u64);
    let golden: &[Golden] = &[
        // seed, tensor, index, hash, unit bits, value_f32 bits, bf16, fp16, index_value(.., 100)
        (0, 0, 0, 0x0, 0x0000_0000, 0xbf80_0000, -1.0, -1.0, 0),
        (
            0,
            0,
            1,
            0x60f7_2afe_a909_8c2a,
            0x3ec1_ee54,
            0xbe78_46b0,
            -2.421875e-1,
            -2.42431640625e-1,
            74,
        ),
        (
            1,
            0,
            0,
            0x7d6e_4ac3_8b2b_1be2,
            0x3efa_dc94,
            0xbca4_6d80,
            -2.001953125e-2,
            -2.00653076171875e-2,
            14,
        ),
        (
            0,
            1,
            0,
            0x6393_d51c_06c6_18dc,
            0x3ec7_27aa,
            0xbe63_6158,
            -2.216796875e-1,
            -2.220458984375e-1,
            60,
        ),
        (
            42,
            1,
            123_456_789,
            0x27e4_cadc_29c0_4582,
            0x3e1f_9328,
            0xbf30_366c,
            -6.875e-1,
            -6.884765625e-1,
            6,
        ),
        (
            0xdead_beef,
            2,
            u64::MAX,
            0xacb0_93a0_0843_9d3c,
            0x3f2c_b093,
            0x3eb2_c24c,
            3.49609375e-1,
            3.4912109375e-1,
            72,
        ),
    ];
    for &(s, t, i, h, ubits, vbits, bf, fp, idx) in golden {
        assert_eq!(hash(s, t, i), h, "hash({s}, {t}, {i})");
        assert_eq!(unit(s, t, i).to_bits(), ubits, "unit({s}, {t}, {i})");
        let v = value_f32(s, t, i, SYM);
        assert_eq!(v.to_bits(), vbits, "value_f32({s}, {t}, {i})");
        assert_eq!(value(s, t, i, SYM, Dtype::Fp32), v as f64);
        assert_eq!(value(s, t, i, SYM, Dtype::Bf16), bf);
        assert_eq!(value(s, t, i, SYM, Dtype::Fp16), fp);
        assert_eq!(index_value(s, t, i, 100), idx);
    }
}

/// The device generator transcribed independently from kernels/kg_common.cuh (unsigned
/// long long wrap-around arithmetic, `(float)(unsigned)(h >> 40) * (1.0f / 16777216.0f)`,
/// `__fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), u))`, then the clamp below hi).
fn device_value(seed: u64, tensor: u32, index: u64, lo: f32, hi: f32) -> f32 {
    fn fmix(mut x: u64) -> u64 {
        x ^= x >> 33;
        x = x.wrapping_mul(0xff51afd7ed558ccd);
        x ^= x >> 33;
        x = x.wrapping_mul(0xc4ceb9fe1a85ec53);
        x ^= x >> 33;
        x
    }
    let key = fmix(seed ^ (tensor as u64).wrapping_mul(0x9e3779b97f4a7c15));
    let h = fmix(key ^ index.wrapping_mul(0xbf58476d1ce4e5b9));
    let u = ((h >> 40) as u32) as f32 * (1.0f32 / 16777216.0f32);
    // Each operation rounded separately, as __fsub_rn / __fmul_rn / __fadd_rn do.
    let span = std::hint::black_box(hi - lo);
    let prod = std::hint::black_box(span * u);
    let v = lo + prod;
    if v >= hi && lo < hi {
        // nextafterf(hi, lo)
        if hi == 0.0 {
            -f32::from_bits(1)
        } else if hi > 0.0 {
            f32::from_bits(hi.to_bits() - 1)
        } else {
            f32::from_bits(hi.to_bits() + 1)
        }
    } else {
        v
    }
}

#[test]
fn host_matches_transcribed_device_formula() {
    let ranges = [
        (-1.0f32, 1.0f32),
        (0.0, 1.0),
        (1.0, 2.0),
        (0.5, 1.0),
        (-3.0, -1.0),
        (-0.3, 1.7),
        (-1e-3, 1e-3),
        (100.0, 100.5),
    ];
    for (lo, hi) in ranges {
        for seed in [0u64, 1, 0x1234_5678_9abc_def0] {
            for tensor in 0..3u32 {
                for i in (0..2000u64).chain([u64::MAX - 1, u64::MAX, 1 << 40]) {
                    let host = value_f32(seed, tensor, i, Uniform { lo, hi });
                    let dev = device_value(seed, tensor, i, lo, hi);
                    assert_eq!(
                        host.to_bits(),
                        dev.to_bits(),
                        "({seed}, {tensor}, {i}) in [{lo}, {hi})"
                    );
                }
            }
        }
    }
}

#[test]
fn device_source_uses_the_same_constants_and_formula() {
    let src = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/kernels/kg_common.cuh"
    ))
    .unwrap();
    let src: String = src.split_whitespace().collect::<Vec<_>>().join(" ");
    for needle in [
        "x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL; x ^= x >> 33;",
        "kg_fmix64(seed ^ ((unsigned long long)tensor * 0x9e3779b97f4a7c15ULL))",
        "kg_fmix64(key ^ (index * 0xbf58476d1ce4e5b9ULL))",
        "float u = (float)(unsigned int)(kg_hash(seed, tensor, index) >> 40) * (1.0f / 16777216.0f);",
        "float v = __fadd_rn(lo, __fmul_rn(__fsub_rn(hi, lo), u));",
        "return (v >= hi && lo < hi) ? nextafterf(hi, lo) : v;",
    ] {
        assert!(src.contains(needle), "kernels/kg_common.cuh no longer contains `{needle}`: update src/inputs.rs and this test together");
    }
    // The fill kernels round to the dtype with round-to-nearest-even, as Dtype::round does.
    let fill =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/kernels/fill.cu")).unwrap();
    for needle in [
        "kg_input_value(seed, tensor, i, lo, hi)",
        "__float2bfloat16_rn",
        "__float2half_rn",
    ] {
        assert!(
            fill.contains(needle),
            "kernels/fill.cu no longer contains `{needle}`"
        );
    }
}

#[test]
fn unit_has_24_random_bits() {
    for i in 0..10_000u64 {
        let u = unit(9, 3, i);
        assert!((0.0..1.0).contains(&u));
        let scaled = u as f64 * 16_777_216.0;
        assert_eq!(scaled.fract(), 0.0, "unit is k/2^24 exactly");
        assert_eq!(scaled as u64, hash(9, 3, i) >> 40);
    }
}

#[test]
fn top_of_range_stays_below_hi() {
    // unit(7, 0, 24657455) is the largest unit, 1 − 2^-24: lo + (hi − lo)·u rounds to hi in [1, 2).
    let i = 24_657_455;
    assert_eq!(unit(7, 0, i), 1.0 - 2f32.powi(-24));
    assert_eq!(
        1.0f32 + 1.0f32 * unit(7, 0, i),
        2.0,
        "the unclamped formula reaches hi"
    );
    assert_eq!(
        value_f32(7, 0, i, Uniform { lo: 1.0, hi: 2.0 }),
        2.0f32.next_down()
    );
    assert_eq!(
        value_f32(7, 0, i, Uniform { lo: 0.5, hi: 1.0 }),
        1.0f32.next_down()
    );
    assert_eq!(value_f32(7, 0, i, SYM), 1.0 - 2f32.powi(-23));
    // After rounding to a narrow dtype the value may be hi ("exclusive before rounding").
    assert_eq!(
        value(7, 0, i, Uniform { lo: 1.0, hi: 2.0 }, Dtype::Bf16),
        2.0
    );
}

#[test]
fn deterministic() {
    let a: Vec<u32> = (0..1000)
        .map(|i| value_f32(5, 1, i, SYM).to_bits())
        .collect();
    let b: Vec<u32> = (0..1000)
        .map(|i| value_f32(5, 1, i, SYM).to_bits())
        .collect();
    assert_eq!(a, b);
    // Independent of evaluation order.
    let c: Vec<u32> = (0..1000)
        .rev()
        .map(|i| value_f32(5, 1, i, SYM).to_bits())
        .collect::<Vec<_>>()
        .into_iter()
        .rev()
        .collect();
    assert_eq!(a, c);
}

#[test]
fn symmetric_values_look_uniform() {
    let n = 200_000u64;
    let vals: Vec<f64> = (0..n).map(|i| value_f32(11, 0, i, SYM) as f64).collect();
    let mean = vals.iter().sum::<f64>() / n as f64;
    let var = vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
    assert!(mean.abs() < 0.01, "mean {mean}");
    assert!((var - 1.0 / 3.0).abs() < 0.01, "variance {var}");
    let mut buckets = [0usize; 10];
    for v in &vals {
        buckets[((v + 1.0) * 5.0) as usize] += 1;
    }
    for b in buckets {
        assert!((b as f64 - 20_000.0).abs() < 1_000.0, "{buckets:?}");
    }
    // Never zeros: the design wants fresh random inputs.
    assert!(vals.iter().filter(|v| **v == 0.0).count() < 5);
}

#[test]
fn index_value_edges() {
    assert_eq!(index_value(1, 2, 3, 0), 0);
    for i in 0..1000 {
        assert_eq!(index_value(1, 2, i, 1), 0);
        assert!(index_value(1, 2, i, 7) < 7);
        assert_eq!(index_value(1, 2, i, u64::MAX), hash(1, 2, i) % u64::MAX);
    }
    let mut seen = [0usize; 7];
    for i in 0..70_000 {
        seen[index_value(4, 0, i, 7) as usize] += 1;
    }
    for s in seen {
        assert!((s as f64 - 10_000.0).abs() < 600.0, "{seen:?}");
    }
}

fn range() -> impl Strategy<Value = (f32, f32)> {
    (-1e4f32..1e4, 1e-6f32..1e4)
        .prop_map(|(lo, w)| (lo, lo + w))
        .prop_filter("lo < hi", |(lo, hi)| lo < hi)
}

proptest! {
    #[test]
    fn values_in_range(seed in any::<u64>(), tensor in any::<u32>(), start in any::<u64>(), (lo, hi) in range()) {
        let g = Uniform { lo, hi };
        for i in 0..64u64 {
            let idx = start.wrapping_add(i);
            let v = value_f32(seed, tensor, idx, g);
            prop_assert!(v >= lo && v < hi, "{v} not in [{lo}, {hi})");
            for d in Dtype::ALL {
                let r = value(seed, tensor, idx, g, d);
                prop_assert!(r >= d.round(lo).min(d.round(v)) && r <= d.round(hi), "{d}: {r} outside [{lo}, {hi}]");
                prop_assert_eq!(r, d.round(v));
            }
        }
    }

    #[test]
    fn values_at_the_top_of_unit_stay_in_range((lo, hi) in range()) {
        // The largest u, 1 − 2^-24, where rounding can reach hi.
        let i = 24_657_455;
        let v = value_f32(7, 0, i, Uniform { lo, hi });
        prop_assert!(v >= lo && v < hi, "{v} not in [{lo}, {hi})");
        prop_assert_eq!(v.to_bits(), device_value(7, 0, i, lo, hi).to_bits());
    }

    #[test]
    fn streams_differ_across_tensors_and_seeds(seed in any::<u64>(), other in any::<u64>(), t in 0u32..1000, start in 0u64..1 << 40) {
        prop_assume!(seed != other);
        let stream = |s: u64, t: u32| (0..32u64).map(|i| value_f32(s, t, start + i, SYM).to_bits()).collect::<Vec<_>>();
        let a = stream(seed, t);
        let b = stream(seed, t + 1);
        let c = stream(other, t);
        let same_ab = a.iter().zip(&b).filter(|(x, y)| x == y).count();
        let same_ac = a.iter().zip(&c).filter(|(x, y)| x == y).count();
        prop_assert!(same_ab <= 1, "tensors {t} and {}: {same_ab} equal of 32", t + 1);
        prop_assert!(same_ac <= 1, "seeds {seed} and {other}: {same_ac} equal of 32");
        // Within one stream, neighbouring elements differ too.
        let distinct: std::collections::HashSet<_> = a.iter().collect();
        prop_assert!(distinct.len() >= 31);
    }

    #[test]
    fn index_value_in_range(seed in any::<u64>(), tensor in any::<u32>(), i in any::<u64>(), n in 1u64..u64::MAX) {
        prop_assert!(index_value(seed, tensor, i, n) < n);
    }

    #[test]
    fn fmix64_is_a_bijection_on_samples(a in any::<u64>(), b in any::<u64>()) {
        prop_assume!(a != b);
        prop_assert_ne!(fmix64(a), fmix64(b));
    }
}

#[test]
fn uniform_symmetric_constant() {
    assert_eq!(inputs::Uniform::SYMMETRIC, Uniform { lo: -1.0, hi: 1.0 });
}
