//! The `nsa` family without a GPU: validation, the block-index generator's invariants,
//! the FLOP counts (nominal and honest), and the float64 reference against an independent
//! causal attention.

use approx::assert_relative_eq;
use kernelgate::case::{CaseName, Dtype, Shape};
use kernelgate::family::nsa::{
    self, attend, band, honest_flops, irregular_row, reference_row, regular_row, selected_keys,
    selected_row, window_keys, Generated, Nsa, NsaIrregular, Params, Source, CHECK_ROWS, COUNTS,
    INDICES, PAD,
};
use kernelgate::family::{self, Family, Init};
use kernelgate::inputs::{value, Uniform};
use kernelgate::suite::Suite;
use kernelgate::verify::Expected;
use proptest::prelude::*;
use std::path::Path;

#[allow(clippy::too_many_arguments)]
fn shape(b: u64, t: u64, hq: u64, h: u64, d: u64, s: u64, bs: u64, w: u64) -> Shape {
    Shape::new([
        ("b", b),
        ("t", t),
        ("hq", hq),
        ("h", h),
        ("d", d),
        ("s", s),
        ("bs", bs),
        ("w", w),
    ])
}

/// Explicit tensors in float64 (values from a small LCG), for the property tests.
struct Arrays {
    p: Params,
    q: Vec<f64>,
    k: Vec<f64>,
    v: Vec<f64>,
    gs: Vec<f64>,
    gw: Vec<f64>,
}

impl Arrays {
    fn new(p: Params, seed: u64, gate_slc: Option<f64>, gate_swa: Option<f64>) -> Arrays {
        let mut x = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((x >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        };
        let bt = p.b * p.t;
        let mut fill = |n: usize| (0..n).map(|_| next()).collect::<Vec<f64>>();
        let q = fill(bt * p.hq * p.d);
        let k = fill(bt * p.h * p.d);
        let v = fill(bt * p.h * p.d);
        let gs = fill(bt * p.hq)
            .into_iter()
            .map(|g| gate_slc.unwrap_or(g.abs()))
            .collect();
        let gw = fill(bt * p.hq)
            .into_iter()
            .map(|g| gate_swa.unwrap_or(g.abs()))
            .collect();
        Arrays { p, q, k, v, gs, gw }
    }
}

impl Source for Arrays {
    fn q(&self, b: usize, t: usize, hq: usize, d: usize) -> f64 {
        self.q[((b * self.p.t + t) * self.p.hq + hq) * self.p.d + d]
    }
    fn k(&self, b: usize, t: usize, h: usize, d: usize) -> f64 {
        self.k[((b * self.p.t + t) * self.p.h + h) * self.p.d + d]
    }
    fn v(&self, b: usize, t: usize, h: usize, d: usize) -> f64 {
        self.v[((b * self.p.t + t) * self.p.h + h) * self.p.d + d]
    }
    fn g_slc(&self, b: usize, t: usize, hq: usize) -> f64 {
        self.gs[(b * self.p.t + t) * self.p.hq + hq]
    }
    fn g_swa(&self, b: usize, t: usize, hq: usize) -> f64 {
        self.gw[(b * self.p.t + t) * self.p.hq + hq]
    }
}

/// Plain causal softmax attention in float64, written independently of the family:
/// query (b, t, hq) over keys 0..=t of KV head hq / (hq/h).
fn causal_attention(a: &Arrays, b: usize, t: usize, hq: usize) -> Vec<f64> {
    let p = &a.p;
    let h = hq / (p.hq / p.h);
    let scale = 1.0 / (p.d as f64).sqrt();
    let s: Vec<f64> = (0..=t)
        .map(|j| {
            scale
                * (0..p.d)
                    .map(|d| a.q(b, t, hq, d) * a.k(b, j, h, d))
                    .sum::<f64>()
        })
        .collect();
    let m = s.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let e: Vec<f64> = s.iter().map(|x| (x - m).exp()).collect();
    let z: f64 = e.iter().sum();
    (0..p.d)
        .map(|d| (0..=t).map(|j| e[j] * a.v(b, j, h, d)).sum::<f64>() / z)
        .collect()
}

fn close(x: &[f64], y: &[f64]) {
    assert_eq!(x.len(), y.len());
    for (a, b) in x.iter().zip(y) {
        assert_relative_eq!(*a, *b, epsilon = 1e-12, max_relative = 1e-10);
    }
}

#[test]
fn registered_with_dims_and_backends() {
    let f = family::by_name("nsa").expect("nsa registered");
    assert_eq!(f.dims(), ["b", "t", "hq", "h", "d", "s", "bs", "w"]);
    assert_eq!(f.zero_dims(), ["w"]);
    assert_eq!(f.backends(), ["cuda"]);
    assert_eq!(f.dtypes(), [Dtype::Bf16, Dtype::Fp16]);
    assert!(!f.memory_bound());
    let n = CaseName::parse("nsa::cuda::b32_t1024_hq16_h1_d128_s16_bs32_w0_bf16").unwrap();
    assert_eq!(n.shape, shape(32, 1024, 16, 1, 128, 16, 32, 0));
    assert_eq!(n.shape.to_string(), "b32_t1024_hq16_h1_d128_s16_bs32_w0");
}

#[test]
fn validation_errors_are_clear() {
    let ok = shape(2, 512, 16, 4, 64, 8, 32, 0);
    assert_eq!(Nsa.validate(&ok), Ok(()));
    let err = |s: Shape| Nsa.validate(&s).unwrap_err();
    assert!(err(shape(2, 512, 16, 3, 64, 8, 32, 0)).contains("not a multiple of h=3"));
    assert!(err(shape(2, 512, 16, 4, 96, 8, 32, 0)).contains("d=96 is not a supported head"));
    assert!(err(shape(2, 512, 16, 4, 64, 8, 48, 0)).contains("bs=48 is not a multiple of 32"));
    assert!(err(shape(2, 512, 16, 4, 64, 17, 32, 0))
        .contains("s=17 selected blocks exceed the 16 blocks"));
    // A ragged last block counts as a block.
    assert_eq!(Nsa.validate(&shape(1, 520, 16, 4, 64, 17, 32, 0)), Ok(()));
    assert!(err(shape(2, 512, 16, 4, 64, 8, 32, 513)).contains("window w=513 is longer"));
    assert!(err(shape(1 << 12, 1 << 16, 64, 4, 128, 16, 64, 0)).contains("exceeds 2^31"));
}

#[test]
fn suite_accepts_w0_and_rejects_other_zeros() {
    let text = |dims: &str| {
        format!(
            r#"{{"description": "x", "groups": [{{"kernel": "nsa", "backends": ["cuda"],
               "dtypes": ["bf16"], "shapes": [{dims}]}}]}}"#
        )
    };
    let s = Suite::parse(
        Path::new("nsa.json"),
        &text(r#"{"b":1,"t":64,"hq":16,"h":1,"d":64,"s":2,"bs":32,"w":0}"#),
    )
    .unwrap();
    assert_eq!(
        s.cases[0].name(),
        "nsa::cuda::b1_t64_hq16_h1_d64_s2_bs32_w0_bf16"
    );
    let e = Suite::parse(
        Path::new("nsa.json"),
        &text(r#"{"b":1,"t":64,"hq":16,"h":1,"d":64,"s":0,"bs":32,"w":0}"#),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("dimension s is 0"), "{e}");
    let e = Suite::parse(
        Path::new("nsa.json"),
        &text(r#"{"b":1,"t":64,"hq":12,"h":8,"d":64,"s":2,"bs":32,"w":0}"#),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("not a multiple of h=8"), "{e}");
}

#[test]
fn the_nsa_suites_load() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
    let s = Suite::load(&root.join("nsa.json")).unwrap();
    // 40 sweep cases, 3 published shapes, 5 own shapes x 2 dtypes, 2 fp16 cases,
    // 6 small-G ragged shapes x 2 dtypes, 2 long G = 1 shapes (session 20).
    assert_eq!(s.cases.len(), 69);
    assert!(s.cases.iter().all(|c| c.kernel == "nsa"));
    let names: Vec<String> = s.cases.iter().map(|c| c.name()).collect();
    for want in [
        "nsa::cuda::b32_t1024_hq16_h1_d128_s16_bs32_w0_bf16",
        "nsa::cuda::b1_t16384_hq64_h4_d128_s16_bs64_w0_bf16",
        "nsa::cuda::b1_t65536_hq64_h4_d128_s16_bs64_w0_bf16",
        "nsa::cuda::b2_t512_hq16_h16_d64_s8_bs32_w0_bf16",
        "nsa::cuda::b1_t8192_hq16_h16_d64_s4_bs32_w0_bf16",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} missing");
    }
    let d = Suite::load(&root.join("default.json")).unwrap();
    assert_eq!(
        d.cases
            .iter()
            .filter(|c| c.kernel == "nsa" && c.backend == "cuda")
            .count(),
        3
    );
}

#[test]
fn tensor_specs() {
    let s = shape(2, 96, 8, 2, 64, 3, 32, 16);
    let ins = Nsa.inputs(&s, Dtype::Bf16);
    let got: Vec<_> = ins.iter().map(|t| (t.name, t.len)).collect();
    assert_eq!(
        got,
        [
            ("q", 2 * 96 * 8 * 64),
            ("k", 2 * 96 * 2 * 64),
            ("v", 2 * 96 * 2 * 64),
            ("g_slc", 2 * 96 * 8),
            ("g_swa", 2 * 96 * 8),
            ("block_indices", 2 * 96 * 2 * 3),
            ("block_counts", 2 * 96 * 2),
        ]
    );
    assert_eq!(ins[nsa::Q].init, Init::Uniform(Uniform::SYMMETRIC));
    assert_eq!(
        ins[nsa::G_SLC].init,
        Init::Uniform(Uniform { lo: 0.0, hi: 1.0 })
    );
    assert_eq!(ins[INDICES].init, Init::HostI32);
    assert_eq!(ins[INDICES].bytes(), 2 * 96 * 2 * 3 * 4);
    assert_eq!(ins[COUNTS].init, Init::HostI32);
    let outs = Nsa.outputs(&s, Dtype::Fp16);
    assert_eq!(
        (outs[0].name, outs[0].len, outs[0].init),
        ("o", 2 * 96 * 8 * 64, Init::Output)
    );
    assert_eq!(Nsa.host_i32(&s, 1, INDICES).len(), ins[INDICES].len);
    assert_eq!(Nsa.host_i32(&s, 1, COUNTS).len(), ins[COUNTS].len);
}

/// Every generated row: sorted, distinct, causally visible, holds the own block, count
/// `min(s, t/bs + 1)`, padded with -1; the tensors agree with the per-row function.
#[test]
fn generated_indices_are_valid() {
    for (s, seed) in [
        (shape(2, 1024, 16, 4, 64, 16, 32, 0), 7u64),
        (shape(1, 300, 4, 2, 64, 3, 32, 0), 11),
        (shape(1, 256, 8, 1, 128, 4, 64, 0), 12),
        (shape(1, 2048, 16, 1, 128, 16, 64, 0), 13),
    ] {
        let p = Params::of(&s);
        let ind = Nsa.host_i32(&s, seed, INDICES);
        let cnt = Nsa.host_i32(&s, seed, COUNTS);
        for b in 0..p.b {
            for t in 0..p.t {
                for h in 0..p.h {
                    let row = (b * p.t + t) * p.h + h;
                    let sel = &ind[row * p.s..(row + 1) * p.s];
                    let count = cnt[row] as usize;
                    assert_eq!((sel.to_vec(), count), selected_row(&p, seed, b, t, h));
                    let own = (t / p.bs) as i32;
                    assert_eq!(count, p.s.min(t / p.bs + 1));
                    let (used, pad) = sel.split_at(count);
                    assert!(pad.iter().all(|&x| x == PAD));
                    assert!(used.windows(2).all(|w| w[0] < w[1]), "{used:?}");
                    assert!(used.iter().all(|&x| (0..=own).contains(&x)));
                    assert_eq!(*used.last().unwrap(), own);
                    assert_eq!(selected_keys(&p, t, sel, count).len(), p.keys_slc(t));
                }
            }
        }
    }
    // Random, and a pure function of the seed.
    let s = shape(1, 4096, 16, 1, 64, 16, 32, 0);
    assert_eq!(Nsa.host_i32(&s, 5, INDICES), Nsa.host_i32(&s, 5, INDICES));
    assert_ne!(Nsa.host_i32(&s, 5, INDICES), Nsa.host_i32(&s, 6, INDICES));
}

#[test]
fn flop_counts_nominal_and_honest() {
    let s = shape(32, 1024, 16, 1, 128, 16, 32, 0);
    // TileLang's nominal count B·T·HQ·4·D·S·block_size.
    assert_eq!(
        Nsa.flops(&s),
        32.0 * 1024.0 * 16.0 * 4.0 * 128.0 * 16.0 * 32.0
    );
    assert!(honest_flops(&s) < Nsa.flops(&s));
    // The honest count equals the keys counted from generated indices and windows.
    for s in [
        shape(2, 512, 16, 16, 64, 8, 32, 0),
        shape(1, 1000, 8, 2, 128, 8, 64, 100),
        shape(1, 300, 6, 2, 64, 3, 32, 300),
    ] {
        let p = Params::of(&s);
        let ind = Nsa.host_i32(&s, 3, INDICES);
        let cnt = Nsa.host_i32(&s, 3, COUNTS);
        let mut keys = 0usize;
        for b in 0..p.b {
            for t in 0..p.t {
                for h in 0..p.h {
                    let row = (b * p.t + t) * p.h + h;
                    let k =
                        selected_keys(&p, t, &ind[row * p.s..(row + 1) * p.s], cnt[row] as usize)
                            .len()
                            + window_keys(&p, t).len();
                    keys += k * p.g();
                }
            }
        }
        assert_relative_eq!(honest_flops(&s), 4.0 * p.d as f64 * keys as f64);
        let nominal = (p.b * p.t * p.hq * 4 * p.d * (p.s * p.bs + p.w)) as f64;
        assert_eq!(Nsa.flops(&s), nominal);
    }
    // At the bar case roughly 3/4 of the nominal work is real.
    let r = honest_flops(&s) / Nsa.flops(&s);
    assert!((0.70..0.80).contains(&r), "{r}");
}

#[test]
fn bytes_cover_q_k_v_o() {
    let s = shape(1, 128, 4, 2, 64, 2, 32, 0);
    let b = Nsa.bytes(&s, Dtype::Bf16);
    let qo = 2.0 * 128.0 * 4.0 * 64.0 * 2.0;
    let kv = 2.0 * 128.0 * 2.0 * 64.0 * 2.0;
    assert!(b >= qo + kv && b < 1.2 * (qo + kv), "{b}");
}

#[test]
fn reference_rows_match_the_definition() {
    let s = shape(2, 200, 8, 2, 64, 4, 32, 48);
    let p = Params::of(&s);
    let seed = 99;
    let exp = Nsa.reference(&s, Dtype::Bf16, seed);
    // One Expected per magnitude band, together the sampled rows, first and last included.
    assert!(
        exp.len() >= 2,
        "t=0 (1 key) and long rows fall in different bands"
    );
    let mut all: Vec<(usize, f64)> = Vec::new();
    for e in &exp {
        assert_eq!(e.output, 0);
        assert_eq!(e.indices.len(), e.values.len());
        assert_eq!(e.indices.len() % p.d, 0);
        assert!(e.values.iter().all(|v| v.is_finite()));
        all.extend(e.indices.iter().copied().zip(e.values.iter().copied()));
    }
    all.sort_by_key(|x| x.0);
    assert_eq!(all.len(), CHECK_ROWS * p.d);
    assert_eq!(all[0].0, 0);
    assert_eq!(all.last().unwrap().0, p.b * p.t * p.hq * p.d - 1);
    let src = Generated {
        p,
        seed,
        dtype: Dtype::Bf16,
    };
    // Row (b=0, t=0, hq=0): one key, o = g_slc·v[0] + g_swa·v[0].
    let g = Uniform { lo: 0.0, hi: 1.0 };
    let gs = value(seed, nsa::G_SLC as u32, 0, g, Dtype::Bf16);
    let gw = value(seed, nsa::G_SWA as u32, 0, g, Dtype::Bf16);
    for (d, &(_, got)) in all.iter().take(p.d).enumerate() {
        let v0 = value(
            seed,
            nsa::V as u32,
            d as u64,
            Uniform::SYMMETRIC,
            Dtype::Bf16,
        );
        assert_relative_eq!(got, (gs + gw) * v0, max_relative = 1e-12);
    }
    // Every sampled row equals reference_row over the generated indices, and sits in its band.
    for e in &exp {
        let mut bands = std::collections::BTreeSet::new();
        for (k, r) in e.indices.chunks(p.d).map(|c| c[0] / p.d).enumerate() {
            let (bt, hq) = (r / p.hq, r % p.hq);
            let (b, t) = (bt / p.t, bt % p.t);
            let (sel, count) = selected_row(&p, seed, b, t, hq / p.g());
            let want = reference_row(&p, &src, b, t, hq, &sel, count);
            close(&e.values[k * p.d..(k + 1) * p.d], &want);
            bands.insert(band(p.keys_slc(t), p.keys_swa(t)));
        }
        assert_eq!(bands.len(), 1, "one band per Expected");
    }
}

#[test]
fn bands_and_tolerances() {
    assert_eq!(band(1, 0), 0);
    assert_eq!(band(0, 0), 0);
    assert_eq!(band(0, 5), 2);
    assert_eq!(band(24, 0), 4);
    assert_eq!(band(512, 0), 9);
    assert_eq!(band(1023, 0), 9);
    assert_eq!(band(1024, 0), 10);
    // Harmonic: 64 selected and 64 window keys behave like 32 keys.
    assert_eq!(band(64, 64), 5);
    let s = shape(1, 64, 16, 1, 64, 2, 32, 0);
    let t = Nsa.tolerance(&s, Dtype::Bf16);
    assert_eq!((t.rel_l2, t.atol, t.rtol), (1e-2, 3.2e-2, 1.6e-2));
    let t = Nsa.tolerance(&s, Dtype::Fp16);
    assert_eq!((t.rel_l2, t.atol, t.rtol), (1e-2, 8e-3, 4e-3));
}

/// The rounding the kernel does (P to bf16 before P·V, the output to bf16) passes the check on
/// every band, for rows with few and many keys; an error of 5% of a row fails.
#[test]
fn tolerance_covers_p_rounding_and_catches_real_errors() {
    let s = shape(1, 2048, 16, 1, 64, 16, 64, 0);
    let p = Params::of(&s);
    let seed = 21;
    let src = Generated {
        p,
        seed,
        dtype: Dtype::Bf16,
    };
    let tol = Nsa.tolerance(&s, Dtype::Bf16);
    let bf = |x: f64| half::bf16::from_f64(x).to_f64();
    // Emulate the kernel in f64 with P and the output rounded to bf16, for many rows.
    let rows: Vec<usize> = (0..p.t)
        .step_by(13)
        .map(|t| t * p.hq + (t % p.hq))
        .collect();
    let mut bands = std::collections::BTreeMap::<u32, (Expected, Vec<f64>)>::new();
    for &r in &rows {
        let (t, hq) = (r / p.hq, r % p.hq);
        let (sel, count) = selected_row(&p, seed, 0, t, 0);
        let keys = selected_keys(&p, t, &sel, count);
        let want = reference_row(&p, &src, 0, t, hq, &sel, count);
        let scale = p.scale();
        let sc: Vec<f64> = keys
            .iter()
            .map(|&j| {
                scale
                    * (0..p.d)
                        .map(|d| src.q(0, t, hq, d) * src.k(0, j, 0, d))
                        .sum::<f64>()
            })
            .collect();
        let m = sc.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        let e: Vec<f64> = sc.iter().map(|x| (x - m).exp()).collect();
        let l: f64 = e.iter().sum();
        let g = src.g_slc(0, t, hq);
        let got: Vec<f64> = (0..p.d)
            .map(|d| {
                let o: f64 = keys
                    .iter()
                    .zip(&e)
                    .map(|(&j, &w)| bf(w) * src.v(0, j, 0, d))
                    .sum();
                bf(o / l * g)
            })
            .collect();
        let entry = bands.entry(band(keys.len(), 0)).or_insert_with(|| {
            (
                Expected {
                    output: 0,
                    indices: vec![],
                    values: vec![],
                    slack: Vec::new(),
                },
                vec![],
            )
        });
        entry.0.indices.extend(r * p.d..(r + 1) * p.d);
        entry.0.values.extend(want);
        entry.1.extend(got);
    }
    assert!(bands.len() >= 8);
    let total = p.t * p.hq * p.d;
    let mut full = vec![0.0; total];
    for (e, got) in bands.values() {
        for (&i, &g) in e.indices.iter().zip(got) {
            full[i] = g;
        }
    }
    for (band, (e, _)) in &bands {
        let c = kernelgate::verify::check("o", total, |i| full[i], e, tol);
        assert!(c.passed, "band {band}: {}", c.describe());
        // A 5% error in the band's largest row fails.
        let big = (0..e.values.len() / p.d)
            .max_by(|&a, &b| {
                let m = |k: usize| {
                    e.values[k * p.d..(k + 1) * p.d]
                        .iter()
                        .map(|v| v * v)
                        .sum::<f64>()
                };
                m(a).total_cmp(&m(b))
            })
            .unwrap();
        let bad_row = e.indices[big * p.d] / p.d;
        let mut wrong = full.clone();
        for x in &mut wrong[bad_row * p.d..(bad_row + 1) * p.d] {
            *x *= 1.05;
        }
        let c = kernelgate::verify::check("o", total, |i| wrong[i], e, tol);
        assert!(!c.passed, "band {band}: a 5% error passed");
    }
}

#[test]
fn duplicates_count_twice_and_pads_are_ignored() {
    let p = Params {
        b: 1,
        t: 96,
        hq: 2,
        h: 1,
        d: 8,
        s: 4,
        bs: 32,
        w: 0,
    };
    let a = Arrays::new(p, 4, Some(1.0), Some(0.0));
    let t = 70;
    // Block 0 twice plus the own block 2: the keys of block 0 count twice.
    let got = reference_row(&p, &a, 0, t, 1, &[0, 0, 2, PAD], 3);
    let mut keys: Vec<usize> = (0..32).chain(0..32).collect();
    keys.extend(64..=70);
    close(&got, &attend(&p, &a, 0, t, 1, &keys));
    // Doubling a block's keys = adding log 2 to their scores.
    let scale = 1.0 / (p.d as f64).sqrt();
    let score = |j: usize| {
        scale
            * (0..p.d)
                .map(|d| a.q(0, t, 1, d) * a.k(0, j, 0, d))
                .sum::<f64>()
    };
    let w: Vec<(usize, f64)> = (0..32)
        .map(|j| (j, 2.0 * score(j).exp()))
        .chain((64..=70).map(|j| (j, score(j).exp())))
        .collect();
    let z: f64 = w.iter().map(|x| x.1).sum();
    let want: Vec<f64> = (0..p.d)
        .map(|d| w.iter().map(|&(j, e)| e * a.v(0, j, 0, d)).sum::<f64>() / z)
        .collect();
    close(&got, &want);
    // Slots past the count, negative slots and future blocks contribute nothing.
    close(
        &reference_row(&p, &a, 0, t, 1, &[2, 0, 1, 1], 2),
        &reference_row(&p, &a, 0, t, 1, &[PAD, 0, 2, 5], 4),
    );
    // No key: zero, not NaN.
    assert!(reference_row(&p, &a, 0, t, 1, &[PAD; 4], 4)
        .iter()
        .all(|&x| x == 0.0));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// With every causally visible block selected (in any order) and no window, NSA is
    /// causal full attention (times the gate, here 1).
    #[test]
    fn all_blocks_selected_is_causal_attention(
        t_len in 1usize..80,
        bs in 1usize..12,
        h in 1usize..3,
        g in 1usize..4,
        d in 1usize..9,
        seed in any::<u64>(),
        rot in 0usize..16,
    ) {
        let nb = t_len.div_ceil(bs);
        let p = Params { b: 2, t: t_len, hq: h * g, h, d, s: nb, bs, w: 0 };
        let a = Arrays::new(p, seed, Some(1.0), None);
        for (b, t, hq) in [(0, 0, 0), (1, t_len - 1, p.hq - 1), (1, t_len / 2, g / 2)] {
            let mut sel: Vec<i32> = (0..nb as i32).collect();
            sel.rotate_left(rot % nb);
            let got = reference_row(&p, &a, b, t, hq, &sel, nb);
            close(&got, &causal_attention(&a, b, t, hq));
        }
    }

    /// A window at least t+1 long with the selected gate at 0 is causal attention times g_swa.
    #[test]
    fn full_window_is_causal_attention(
        t_len in 1usize..64,
        d in 1usize..9,
        seed in any::<u64>(),
        pick in 0usize..64,
    ) {
        let p = Params { b: 1, t: t_len, hq: 2, h: 1, d, s: 1, bs: 8, w: t_len };
        let a = Arrays::new(p, seed, Some(0.0), None);
        let t = pick % t_len;
        let got = reference_row(&p, &a, 0, t, 1, &[(t / 8) as i32], 1);
        let want: Vec<f64> = causal_attention(&a, 0, t, 1).iter().map(|x| x * a.g_swa(0, t, 1)).collect();
        close(&got, &want);
    }
}

#[test]
fn irregular_rows_break_every_rule_and_keep_the_semantics() {
    let s = shape(2, 300, 4, 2, 64, 6, 32, 0);
    let p = Params::of(&s);
    let seed = 11;
    let f = family::by_name("nsa_irregular").expect("nsa_irregular registered");
    assert_eq!(f.dims(), Nsa.dims());
    assert_eq!(
        f.inputs(&s, Dtype::Bf16).len(),
        Nsa.inputs(&s, Dtype::Bf16).len()
    );
    assert_eq!(f.flops(&s), Nsa.flops(&s));
    let ind = NsaIrregular.host_i32(&s, seed, INDICES);
    let cnt = NsaIrregular.host_i32(&s, seed, COUNTS);
    assert_eq!(ind.len(), p.b * p.t * p.h * p.s);
    assert_eq!(cnt.len(), p.b * p.t * p.h);
    assert_eq!(
        ind,
        NsaIrregular.host_i32(&s, seed, INDICES),
        "deterministic"
    );
    // The regular family is still the generator's rows.
    assert_ne!(ind, Nsa.host_i32(&s, seed, INDICES));
    let (mut unsorted, mut repeated, mut pad_inside, mut past_token) = (0, 0, 0, 0);
    let (mut zero, mut negative, mut above) = (0, 0, 0);
    for (row, (&c, slots)) in cnt.iter().zip(ind.chunks(p.s)).enumerate() {
        let t = (row / p.h) % p.t;
        assert_eq!(
            (slots.to_vec(), c),
            irregular_row(&p, seed, row / (p.h * p.t), t, row % p.h)
        );
        match c {
            0 => zero += 1,
            c if c < 0 => negative += 1,
            c if c as usize > p.s => above += 1,
            _ => {}
        }
        let live = &slots[..(c.max(0) as usize).min(p.s)];
        unsorted += usize::from(live.windows(2).any(|w| w[0] > w[1]));
        let valid: Vec<i32> = live.iter().copied().filter(|&x| x >= 0).collect();
        let mut dedup = valid.clone();
        dedup.sort_unstable();
        dedup.dedup();
        repeated += usize::from(dedup.len() < valid.len());
        pad_inside += usize::from(live.contains(&PAD));
        past_token += usize::from(live.iter().any(|&x| x >= 0 && x as usize * p.bs > t));
    }
    for (what, n) in [
        ("unsorted", unsorted),
        ("repeated", repeated),
        ("pad inside the count", pad_inside),
        ("past the token", past_token),
        ("count 0", zero),
        ("count -1", negative),
        ("count above s", above),
    ] {
        assert!(n > 5, "{what}: {n} rows of {}", cnt.len());
    }
    // The reference follows the semantics on these rows: a row with count <= 0 is 0, and every
    // sampled row equals reference_row over its irregular slots (repeats counted twice).
    let src = Generated {
        p,
        seed,
        dtype: Dtype::Fp16,
    };
    for e in NsaIrregular.reference(&s, Dtype::Fp16, seed) {
        for (k, r) in e.indices.chunks(p.d).map(|c| c[0] / p.d).enumerate() {
            let (bt, hq) = (r / p.hq, r % p.hq);
            let (b, t) = (bt / p.t, bt % p.t);
            let (sel, count) = irregular_row(&p, seed, b, t, hq / p.g());
            let got = &e.values[k * p.d..(k + 1) * p.d];
            close(
                got,
                &reference_row(&p, &src, b, t, hq, &sel, count.max(0) as usize),
            );
            if count <= 0 {
                assert!(got.iter().all(|&v| v == 0.0));
            }
        }
    }
    // regular_row is selected_row with its count.
    let (row, c) = selected_row(&p, seed, 1, 250, 1);
    assert_eq!(regular_row(&p, seed, 1, 250, 1), (row, c as i32));
}

#[test]
fn the_irregular_suite_loads() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/nsa_irregular.json");
    let suite = Suite::load(&path).expect("fixtures/nsa_irregular.json loads");
    assert!(suite.cases.len() >= 10);
    assert!(suite.cases.iter().all(|c| c.kernel == "nsa_irregular"));
}
