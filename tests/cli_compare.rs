//! `kernelgate compare A B`: the gate's rule per case; non-zero exit only when something is SLOW.

#[path = "cli_support/mod.rs"]
mod common;

use common::{fixture, kernelgate, text};
use kernelgate::compare::{compare, Status};

#[test]
fn two_real_runs_of_the_default_cases() {
    // The default and gemm suites ran two minutes apart on the same H200.
    let dir = tempfile::tempdir().unwrap();
    let out = kernelgate(
        dir.path(),
        &[
            "compare",
            fixture("h200-default.json").to_str().unwrap(),
            fixture("h200-gemm.json").to_str().unwrap(),
        ],
    );
    let (o, e) = text(&out);
    let a = kernelgate::merge::load(&fixture("h200-default.json")).unwrap();
    let b = kernelgate::merge::load(&fixture("h200-gemm.json")).unwrap();
    let rows = compare(&a, &b, 5.0);
    let slow = rows.iter().any(|r| r.status == Status::Slow);
    assert_eq!(out.status.code(), Some(if slow { 1 } else { 0 }), "{o}{e}");
    assert!(
        o.contains("ONLY-A"),
        "spin cases are only in the default run"
    );
    assert!(o.contains("ONLY-B"));
    assert!(rows
        .iter()
        .filter(|r| r.status == Status::OnlyA)
        .all(|r| r.key.starts_with("spin::")));
}

#[test]
fn calls_follow_the_gate_rule() {
    let a = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    let n = |r: &kernelgate::results::Record| r.stats.as_ref().unwrap().noise;
    // 0: 20% slower, 1: 20% faster, 2: 2% slower, 3: 20% slower but a very noisy run.
    for (i, f) in [1.2, 1.0 / 1.2, 1.02, 1.2].iter().enumerate() {
        let r = &mut b.results[i];
        r.latency_ms = Some(r.latency_ms.unwrap() * f);
        r.stats.as_mut().unwrap().median_ms *= f;
    }
    b.results[3].stats.as_mut().unwrap().noise = 0.5;
    let rows = compare(&a, &b, 5.0);
    let status = |case: &str| rows.iter().find(|r| r.key == case).unwrap().status;
    assert_eq!(status(&a.results[0].case), Status::Slow);
    assert_eq!(status(&a.results[1].case), Status::Fast);
    assert_eq!(status(&a.results[2].case), Status::Same);
    assert_eq!(status(&a.results[3].case), Status::Ambiguous);
    assert_eq!(status(&a.results[4].case), Status::Same);
    for r in &rows {
        let ra = a.results.iter().find(|x| x.case == r.key).unwrap();
        let rb = b.results.iter().find(|x| x.case == r.key).unwrap();
        let g = kernelgate::gate::compare(
            rb.latency_ms.unwrap(),
            n(rb),
            ra.latency_ms.unwrap(),
            n(ra),
            0.05,
        );
        assert_eq!(r.cmp.unwrap(), g, "the test gate's own rule");
    }
}

#[test]
fn a_slowdown_timed_on_a_slowed_gpu_is_throttled_not_slow() {
    let a = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    let r = &mut b.results[0];
    r.latency_ms = Some(r.latency_ms.unwrap() * 1.5);
    r.stats.as_mut().unwrap().median_ms *= 1.5;
    r.slowdown = vec!["software thermal slowdown".into()];
    let rows = compare(&a, &b, 5.0);
    let row = rows.iter().find(|x| x.key == a.results[0].case).unwrap();
    assert_eq!(row.status, Status::Throttled);
    assert!(
        !kernelgate::compare::any_slow(&rows),
        "throttled does not fail compare"
    );
    let text = kernelgate::compare::render(&rows, 5.0);
    assert!(
        text.contains("THROTTLED") && text.contains("1 THROTTLED"),
        "{text}"
    );
    // The same slowdown on a cool GPU is SLOW, and so it is when only A's GPU was slowed (A's
    // time was inflated, so B is slower still).
    b.results[0].slowdown.clear();
    let rows = compare(&a, &b, 5.0);
    assert!(kernelgate::compare::any_slow(&rows));
    let mut a2 = a.clone();
    a2.results[0].slowdown = vec!["software thermal slowdown".into()];
    assert!(kernelgate::compare::any_slow(&compare(&a2, &b, 5.0)));
}

fn run_compare(b_scale: f64, tol: &str) -> i32 {
    let dir = tempfile::tempdir().unwrap();
    let a = kernelgate::results::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    for r in &mut b.results {
        r.latency_ms = r.latency_ms.map(|x| x * b_scale);
    }
    kernelgate::merge::write(&dir.path().join("b.json"), &b).unwrap();
    let out = kernelgate(
        dir.path(),
        &[
            "compare",
            fixture("h200-smoke.json").to_str().unwrap(),
            "b.json",
            "--tolerance-pct",
            tol,
        ],
    );
    out.status.code().unwrap()
}

#[test]
fn exit_status_is_non_zero_only_for_slow() {
    assert_eq!(run_compare(1.0, "5"), 0, "identical runs");
    assert_eq!(run_compare(0.5, "5"), 0, "FAST passes");
    assert_eq!(run_compare(1.03, "5"), 0, "SAME within tolerance");
    assert_eq!(run_compare(1.5, "5"), 1, "SLOW fails");
    assert_eq!(run_compare(1.5, "60"), 0, "--tolerance-pct widens SAME");
}

#[test]
fn malformed_input_is_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("b.json"), "[]").unwrap();
    let out = kernelgate(
        dir.path(),
        &[
            "compare",
            fixture("h200-smoke.json").to_str().unwrap(),
            "b.json",
        ],
    );
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("b.json"));
}

#[test]
fn cases_timed_after_different_l2_flushes_are_marked() {
    use kernelgate::timing::FlushMode;
    let a = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    // B: the first case after a read flush (A's records predate the field: a write flush), the
    // second after a write flush recorded as such (the same as A's), the third not flushed.
    b.results[0].l2_flush = Some(FlushMode::Read);
    b.results[1].l2_flush = Some(FlushMode::Write);
    b.results[2].l2_flushed = false;
    let rows = compare(&a, &b, 5.0);
    let row = |case: &str| rows.iter().find(|r| r.key == case).unwrap();
    assert!(a
        .results
        .iter()
        .take(3)
        .all(|r| r.l2_flushed && r.l2_flush.is_none()));
    assert_eq!(
        row(&a.results[0].case).flush_differs,
        Some((Some(FlushMode::Write), Some(FlushMode::Read)))
    );
    assert_eq!(row(&a.results[1].case).flush_differs, None);
    assert_eq!(
        row(&a.results[2].case).flush_differs,
        Some((Some(FlushMode::Write), None))
    );
    assert!(rows.iter().skip(3).all(|r| r.flush_differs.is_none()));
    let out = kernelgate::compare::render(&rows, 5.0);
    assert!(out.contains("(L2 flush write -> read)"), "{out}");
    assert!(out.contains("(L2 flush write -> none)"), "{out}");
    assert!(
        out.contains("2 case(s) were timed after different L2 flushes"),
        "{out}"
    );
    // Runs of one flush say nothing about it.
    let same = kernelgate::compare::render(&compare(&a, &a, 5.0), 5.0);
    assert!(!same.contains("L2 flush"), "{same}");
}

#[test]
fn cases_timed_with_another_batch_are_marked() {
    let a = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    // B: the first case in graph batches of two where A timed it alone (or the other way
    // round), the second in plain batches of three, the third as A did.
    let word = |batch: usize, graph: bool| {
        let mut r = a.results[0].clone();
        (r.batch, r.graph) = (batch, graph);
        r.timing_word()
    };
    let (b0, g0) = if a.results[0].batch > 1 {
        (1, false)
    } else {
        (2, true)
    };
    (b.results[0].batch, b.results[0].graph) = (b0, g0);
    (b.results[1].batch, b.results[1].graph) = (3, false);
    let rows = compare(&a, &b, 5.0);
    let row = |i: usize| rows.iter().find(|r| r.key == a.results[i].case).unwrap();
    assert_eq!(
        row(0).timing_differs,
        Some((a.results[0].timing_word(), word(b0, g0)))
    );
    assert_eq!(
        row(1).timing_differs.as_ref().map(|d| d.1.as_str()),
        (a.results[1].batch != 3).then_some("3 launches")
    );
    assert_eq!(row(2).timing_differs, None);
    assert_eq!(word(1, true), "1 launch");
    assert_eq!(word(2, true), "2 launches, graph");
    assert_eq!(word(4, false), "4 launches");
    let out = kernelgate::compare::render(&rows, 5.0);
    let line = out
        .lines()
        .find(|l| l.starts_with(&a.results[0].case))
        .unwrap();
    assert!(
        line.ends_with(&format!(
            "(timed as {} -> {})",
            a.results[0].timing_word(),
            word(b0, g0)
        )),
        "{line}"
    );
    let n = rows.iter().filter(|r| r.timing_differs.is_some()).count();
    assert!(
        out.contains(&format!(
            "{n} case(s) were timed with another number of launches per sample in A than in B"
        )),
        "{out}"
    );
    assert!(out.contains("KERNELGATE_BATCH pins it"), "{out}");
    // Runs timed alike say nothing about it; the calls themselves do not change.
    let same = kernelgate::compare::render(&compare(&a, &a, 5.0), 5.0);
    assert!(!same.contains("timed as") && !same.contains("launches per sample"));
    let plain = compare(&a, &a, 5.0);
    assert!(rows.iter().zip(&plain).all(|(x, y)| x.status == y.status));
}

#[test]
fn a_changed_kernel_configuration_is_marked_and_listed() {
    let a = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    let case = a.results[0].case.clone();
    b.results[0].variant = format!("{} (forced)", a.results[0].variant);
    // A side that names no configuration is not a change.
    b.results[1].variant.clear();
    let rows = compare(&a, &b, 5.0);
    let changed: Vec<_> = rows
        .iter()
        .filter(|r| r.variant_differs.is_some())
        .collect();
    assert_eq!(changed.len(), 1);
    assert_eq!(changed[0].key, case);
    let text = kernelgate::compare::render(&rows, 5.0);
    let line = text.lines().find(|l| l.starts_with(&case)).unwrap();
    assert!(line.ends_with("SAME (configuration changed)"), "{line}");
    assert!(
        text.contains(&format!(
            "1 case(s) ran another kernel configuration in B than in A:\n  {case}\n    A: {}\n    B: {} (forced)",
            a.results[0].variant, a.results[0].variant
        )),
        "{text}"
    );
}

#[test]
fn runs_in_two_modes_are_compared_on_their_lower_modes() {
    use kernelgate::stats::Stats;
    let mut a = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let mut b = a.clone();
    // The same kernel on two machines: 2.106 or 2.345 ms sample by sample, most of A's samples
    // in the fast mode and most of B's in the slow one; case 1 also 10% slower in both modes.
    let samples = |upper: usize, f: f64| -> Vec<f64> {
        (0..20)
            .map(|i| {
                f * if i < 20 - upper { 2.106 } else { 2.345 } * (1.0 + 0.0005 * (i % 4) as f64)
            })
            .collect()
    };
    let set = |r: &mut kernelgate::results::Record, s: Vec<f64>| {
        let st = Stats::from_samples(&s).unwrap();
        r.latency_ms = Some(st.median_ms);
        r.stats = Some(st);
    };
    for (i, f) in [(0, 1.0), (1, 1.1)] {
        set(&mut a.results[i], samples(6, 1.0));
        set(&mut b.results[i], samples(13, f));
    }
    let rows = compare(&a, &b, 5.0);
    let row = |i: usize| rows.iter().find(|r| r.key == a.results[i].case).unwrap();
    // The medians are 11% apart (fast mode against slow mode), the lower modes the same.
    assert!(row(0).cmp.unwrap().ratio < 1.01, "{:?}", row(0).cmp);
    assert_eq!(row(0).status, Status::Same);
    // 10% slower in both modes: called on the lower modes.
    assert_eq!(row(1).status, Status::Slow);
}

/// The line of `compare`'s table for `case`.
fn line_of(text: &str, case: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(case))
        .unwrap_or_else(|| panic!("no line for {case}: {text}"))
        .to_string()
}

#[test]
fn machine_code_changes_are_marked_and_counted() {
    let a0 = kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap();
    let timed: Vec<usize> = (0..a0.results.len())
        .filter(|&i| a0.results[i].latency_ms.is_some())
        .take(3)
        .collect();
    assert_eq!(timed.len(), 3, "the fixture has timed cases");
    let mut a = a0.clone();
    for &i in &timed {
        a.results[i].code_hash = format!("c0de{i}");
    }
    let mut b = a.clone();
    // Case 0 ran other code; case 1 the same code, but 30% slower; case 2 has no hash in B.
    b.results[timed[0]].code_hash = "beef".into();
    let slower = b.results[timed[1]].latency_ms.unwrap() * 1.3;
    b.results[timed[1]].latency_ms = Some(slower);
    b.results[timed[2]].code_hash.clear();
    let rows = compare(&a, &b, 5.0);
    let row = |i: usize| rows.iter().find(|r| r.key == a.results[i].case).unwrap();
    assert_eq!(row(timed[0]).same_code, Some(false));
    assert_eq!(row(timed[1]).same_code, Some(true));
    assert_eq!(row(timed[1]).status, Status::Slow);
    assert_eq!(row(timed[2]).same_code, None);
    let text = kernelgate::compare::render(&rows, 5.0);
    let line = |i: usize| line_of(&text, &a.results[i].case);
    assert!(line(timed[0]).ends_with("(machine code changed)"), "{text}");
    assert!(!line(timed[1]).contains("machine code"), "{text}");
    assert!(
        text.contains(
            "1 of 2 case(s) with a code hash on both sides ran other machine code in B than in A; \
             1 ran the same machine code, and 1 of those were called faster or slower"
        ),
        "{text}"
    );
    // Files without code hashes say nothing about it.
    let plain = kernelgate::compare::render(&compare(&a0, &a0, 5.0), 5.0);
    assert!(!plain.contains("code hash"), "{plain}");
    // Where both records name their entry points and those differ, the line says which: the
    // launcher picked other entry points (not an edit of the same ones).
    let (mut a, mut b) = (a, b);
    a.results[timed[0]].code_entries = vec![
        "gemm.cu:gemm_sgemm_64x64_vec4".into(),
        "gemm.cu:shared".into(),
    ];
    b.results[timed[0]].code_entries = vec![
        "gemm.cu:gemm_sgemm_64x64_vec4_k2".into(),
        "gemm.cu:shared".into(),
    ];
    // Same entry points, other code: no list.
    a.results[timed[2]].code_hash = "c0de".into();
    b.results[timed[2]].code_hash = "f00d".into();
    a.results[timed[2]].code_entries = vec!["gemm.cu:k".into()];
    b.results[timed[2]].code_entries = vec!["gemm.cu:k".into()];
    let rows = compare(&a, &b, 5.0);
    let row = |i: usize| rows.iter().find(|r| r.key == a.results[i].case).unwrap();
    assert_eq!(
        row(timed[0]).entries_differ,
        Some((
            vec!["gemm.cu:gemm_sgemm_64x64_vec4".to_string()],
            vec!["gemm.cu:gemm_sgemm_64x64_vec4_k2".to_string()]
        ))
    );
    assert_eq!(row(timed[2]).entries_differ, None);
    let text = kernelgate::compare::render(&rows, 5.0);
    let line = |i: usize| line_of(&text, &a.results[i].case);
    assert!(
        line(timed[0]).ends_with(
            "(machine code changed: -gemm.cu:gemm_sgemm_64x64_vec4 +gemm.cu:gemm_sgemm_64x64_vec4_k2)"
        ),
        "{text}"
    );
    assert!(line(timed[2]).ends_with("(machine code changed)"), "{text}");
}
