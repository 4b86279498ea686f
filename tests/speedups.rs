//! Speedups over a reference backend and their geometric means.

mod common;

use common::record;
use kernelgate::results::{annotate_speedups, geomean_speedups, Verdict};

#[test]
fn speedup_is_reference_over_own_median_for_the_same_problem_only() {
    let mut recs = vec![
        record((64, 64, 64), "torch", Verdict::Pass, Some(2.0), None),
        record((64, 64, 64), "cuda", Verdict::Pass, Some(1.0), None),
        record((64, 64, 64), "cublas", Verdict::Pass, Some(4.0), None),
        record((128, 64, 64), "cuda", Verdict::Pass, Some(1.0), None), // no torch run of this problem
        record((32, 32, 32), "torch", Verdict::Pass, Some(9.0), None),
        record((32, 32, 32), "cuda", Verdict::Wrong, None, None), // wrong: never timed, no speedup
    ];
    annotate_speedups(&mut recs, "torch");
    let s: Vec<Option<f64>> = recs
        .iter()
        .map(|r| r.speedup_vs.as_ref().map(|s| s.speedup))
        .collect();
    assert_eq!(s, vec![None, Some(2.0), Some(0.5), None, None, None]);
    assert_eq!(recs[1].speedup_vs.as_ref().unwrap().backend, "torch");
}

#[test]
fn geomean_min_max_per_family_and_backend() {
    let mut recs = vec![
        record((64, 64, 64), "torch", Verdict::Pass, Some(2.0), None),
        record((64, 64, 64), "cuda", Verdict::Pass, Some(1.0), None),
        record((128, 64, 64), "torch", Verdict::Pass, Some(1.0), None),
        record((128, 64, 64), "cuda", Verdict::Pass, Some(2.0), None),
        record((256, 64, 64), "torch", Verdict::Pass, Some(8.0), None),
        record((256, 64, 64), "cuda", Verdict::Pass, Some(1.0), None),
    ];
    annotate_speedups(&mut recs, "torch");
    let g = geomean_speedups(&recs);
    let s = &g[&("gemm".to_string(), "cuda".to_string())];
    let (geo, lo, hi, n) = (s.geomean, s.min.0, s.max.0, s.n);
    assert_eq!(n, 3);
    approx::assert_relative_eq!(
        geo,
        (2.0f64 * 0.5 * 8.0).powf(1.0 / 3.0),
        max_relative = 1e-12
    );
    assert_eq!((lo, hi), (0.5, 8.0));
    assert!(!g.contains_key(&("gemm".to_string(), "torch".to_string())));
}
