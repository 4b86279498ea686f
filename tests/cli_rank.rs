//! `kernelgate rank RUN...`: several runs of the same cases ranked case by case, the winner
//! called by the gate's rule (beyond tolerance and both runs' noise).

#[path = "cli_support/mod.rs"]
mod common;

use common::{fixture, kernelgate, relabelled_copy, text};
use kernelgate::rank::{parse_runs, rank, render, RunSpec};
use kernelgate::results::ResultsFile;
use std::path::PathBuf;

fn smoke() -> ResultsFile {
    kernelgate::merge::load(&fixture("h200-smoke.json")).unwrap()
}

/// A copy of `f` with case `i`'s median scaled by `factor` (latency and stats together).
fn scaled(f: &ResultsFile, changes: &[(usize, f64)]) -> ResultsFile {
    let mut g = f.clone();
    for &(i, factor) in changes {
        let r = &mut g.results[i];
        r.latency_ms = Some(r.latency_ms.unwrap() * factor);
        r.stats.as_mut().unwrap().median_ms *= factor;
    }
    g
}

#[test]
fn runs_are_labelled_and_joined_by_label() {
    let args: Vec<String> = [
        "regs=a.json",
        "rows=b.json",
        "regs=c.json",
        "dir/off-1.json",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let runs = parse_runs(&args).unwrap();
    assert_eq!(
        runs,
        vec![
            RunSpec {
                label: "regs".into(),
                paths: vec![PathBuf::from("a.json"), PathBuf::from("c.json")],
            },
            RunSpec {
                label: "rows".into(),
                paths: vec![PathBuf::from("b.json")],
            },
            RunSpec {
                label: "off-1".into(),
                paths: vec![PathBuf::from("dir/off-1.json")],
            },
        ]
    );
    // One label is not a ranking; empty labels and paths are refused with what was given.
    let one: Vec<String> = vec!["x=a.json".into(), "x=b.json".into()];
    let e = parse_runs(&one).unwrap_err().to_string();
    assert!(e.contains("at least two runs"), "{e}");
    let empty: Vec<String> = vec!["=a.json".into(), "b.json".into()];
    let e = parse_runs(&empty).unwrap_err().to_string();
    assert!(e.contains("=a.json") && e.contains("LABEL=PATH"), "{e}");
}

#[test]
fn the_winner_must_lead_beyond_tolerance_and_noise() {
    let a = smoke();
    // Case 0: B 20% slower (A wins); case 1: B 20% faster (B wins); case 2: B 0.5% faster
    // (inside the 1% tolerance: a tie); case 3: B 20% faster but its run is very noisy (a tie).
    let mut b = scaled(
        &a,
        &[(0, 1.2), (1, 1.0 / 1.2), (2, 1.0 / 1.005), (3, 1.0 / 1.2)],
    );
    b.results[3].stats.as_mut().unwrap().noise = 0.5;
    let r = rank(&[("a".into(), vec![a.clone()]), ("b".into(), vec![b])], 1.0);
    let row = |i: usize| r.rows.iter().find(|x| x.key == a.results[i].case).unwrap();
    assert_eq!((row(0).fastest, row(0).clear), (Some(0), true));
    assert!((row(0).lead.unwrap() - 0.2).abs() < 1e-9);
    assert_eq!((row(1).fastest, row(1).clear), (Some(1), true));
    assert_eq!((row(2).fastest, row(2).clear), (Some(1), false));
    assert_eq!((row(3).fastest, row(3).clear), (Some(1), false));
    let n = a.results.len();
    assert_eq!(r.common, n);
    assert_eq!(r.summaries[0].wins, 1);
    assert_eq!(r.summaries[1].wins, 1);
    assert_eq!(r.summaries[0].timed, n);
    // A's ratio to the fastest: 1.2 on cases 1 and 3, 1.005 on case 2, 1 elsewhere.
    let ga = (2.0 * 1.2f64.ln() + 1.005f64.ln()) / n as f64;
    assert!((r.summaries[0].geomean.unwrap() - ga.exp()).abs() < 1e-9);
    let (worst, case) = r.summaries[1].worst.clone().unwrap();
    assert!((worst - 1.2).abs() < 1e-9 && case == a.results[0].case);
}

#[test]
fn a_label_keeps_its_fastest_record_and_untimed_cases_rank_nowhere() {
    let a = smoke();
    // Two rounds of B: case 0 is 10% slower in the first and 10% faster in the second; the
    // second round's case 1 has no latency (a wrong output), the first's does.
    let b1 = scaled(&a, &[(0, 1.1)]);
    let mut b2 = scaled(&a, &[(0, 1.0 / 1.1)]);
    b2.results[1].latency_ms = None;
    // C never timed case 2.
    let mut c = a.clone();
    c.results[2].latency_ms = None;
    let r = rank(
        &[
            ("a".into(), vec![a.clone()]),
            ("b".into(), vec![b1, b2]),
            ("c".into(), vec![c]),
        ],
        1.0,
    );
    let row = |i: usize| r.rows.iter().find(|x| x.key == a.results[i].case).unwrap();
    assert_eq!(row(0).fastest, Some(1), "B's faster round counts");
    assert_eq!(
        row(1).ms[1],
        a.results[1].latency_ms,
        "the timed round is kept"
    );
    assert_eq!(row(2).ms[2], None);
    assert_eq!(
        r.common,
        a.results.len() - 1,
        "C's untimed case is not common"
    );
    assert_eq!(r.summaries[2].timed, a.results.len() - 1);
    let md = render(&r);
    assert!(md.contains("| – |"), "{md}");
    assert!(
        !md.contains("copy bandwidth"),
        "no fractions recorded: {md}"
    );
}

#[test]
fn memory_bound_cases_show_their_fraction_of_copy_bandwidth() {
    let mut a = smoke();
    a.results[0].roofline_frac = Some(0.764);
    let mut b = scaled(&a, &[(0, 1.2)]);
    b.results[0].roofline_frac = Some(0.637);
    let md = render(&rank(&[("a".into(), vec![a]), ("b".into(), vec![b])], 1.0));
    assert!(
        md.contains("** · 0.76 |") && md.contains("(1.200x) · 0.64 |"),
        "{md}"
    );
    assert!(
        md.contains("fraction of the copy bandwidth measured in that run"),
        "{md}"
    );
}

#[test]
fn runs_on_several_gpu_models_rank_within_each_model() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("other.json");
    relabelled_copy(&fixture("h200-smoke.json"), &other, "NVIDIA H100 80GB HBM3");
    let a = smoke();
    let b = kernelgate::merge::load(&other).unwrap();
    let r = rank(
        &[("h200".into(), vec![a.clone()]), ("h100".into(), vec![b])],
        1.0,
    );
    // Every key names its GPU and only one run has it: nothing is ranked across GPUs.
    assert_eq!(r.rows.len(), 2 * a.results.len());
    assert!(r.rows.iter().all(|x| x.key.starts_with("NVIDIA H")));
    assert!(r.rows.iter().all(|x| !x.clear && x.lead.is_none()));
    assert_eq!(r.common, 0);
    assert!(render(&r).contains("(only run)"));
}

#[test]
fn runs_that_timed_a_case_differently_get_no_winner() {
    let a = smoke();
    // B: case 0 20% faster (a clear win alike), case 1 20% faster but timed in graph batches
    // of two where A timed it alone (or alone where A batched it): no winner.
    let mut b = scaled(&a, &[(0, 1.0 / 1.2), (1, 1.0 / 1.2)]);
    let other = if a.results[1].batch > 1 {
        (1, false)
    } else {
        (2, true)
    };
    (b.results[1].batch, b.results[1].graph) = other;
    let r = rank(
        &[("a".into(), vec![a.clone()]), ("b".into(), vec![b.clone()])],
        1.0,
    );
    let row = |i: usize| r.rows.iter().find(|x| x.key == a.results[i].case).unwrap();
    assert!(row(0).clear && !row(0).timing_differs());
    assert_eq!(row(0).fastest, Some(1));
    assert!(!row(1).clear && row(1).timing_differs());
    assert_eq!(row(1).fastest, Some(1), "the times are still shown");
    assert_eq!(
        row(1).timing,
        vec![a.results[1].timing_word(), b.results[1].timing_word()]
    );
    assert_eq!(r.summaries[1].wins, 1);
    assert_eq!(
        r.common,
        a.results.len() - 1,
        "the unlike case is left out of the summary"
    );
    let out = render(&r);
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("| {} |", a.results[1].case)))
        .unwrap();
    assert!(line.contains("| timing differs |"), "{line}");
    assert!(
        out.contains(&format!(
            "- {}: a: {}, b: {}",
            a.results[1].case,
            a.results[1].timing_word(),
            b.results[1].timing_word()
        )),
        "{out}"
    );
    assert!(out.contains("KERNELGATE_BATCH pins the batch"), "{out}");
    // Alike runs print no such note.
    let alike = render(&rank(
        &[("a".into(), vec![a.clone()]), ("b".into(), vec![a])],
        1.0,
    ));
    assert!(!alike.contains("timing differs"), "{alike}");
}

#[test]
fn the_table_is_stable() {
    let a = smoke();
    let b = scaled(&a, &[(0, 1.2), (1, 1.0 / 1.2), (2, 1.0 / 1.005)]);
    let r = rank(
        &[("before".into(), vec![a]), ("after".into(), vec![b])],
        1.0,
    );
    insta::assert_snapshot!(render(&r));
}

#[test]
fn the_cli_ranks_labelled_files_and_reports_bad_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let smoke_path = fixture("h200-smoke.json");
    let smoke = smoke_path.to_str().unwrap();
    let out = kernelgate(
        dir.path(),
        &["rank", &format!("x={smoke}"), &format!("y={smoke}")],
    );
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(0), "{o}{e}");
    assert!(o.starts_with(&format!("x = {smoke}\ny = {smoke}\n")), "{o}");
    assert!(
        o.contains("| case | x | y | fastest | lead | kernels |"),
        "{o}"
    );
    // The same file twice: every case is a tie at 0.0%.
    assert!(o.contains("| tie | 0.0% |"), "{o}");
    // One run only, and a file that is not there: non-zero, saying what.
    let out = kernelgate(
        dir.path(),
        &["rank", &format!("x={smoke}"), &format!("x={smoke}")],
    );
    let (o, e) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(e.contains("at least two runs"), "{o}{e}");
    let out = kernelgate(
        dir.path(),
        &["rank", &format!("x={smoke}"), "y=missing.json"],
    );
    let (o, e) = text(&out);
    assert_ne!(out.status.code(), Some(0));
    assert!(e.contains("missing.json"), "{o}{e}");
}
