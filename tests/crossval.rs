//! `kernelgate crossval`: the leave-one-machine-out replay of the gate over stored rounds.

use kernelgate::baseline::{load_file, BaselineFile, Entry, Round, SCHEMA};
use kernelgate::crossval::{render, replay, replay_entry};
use kernelgate::gate::{Change, Rule};
use kernelgate::stats::Stats;
use std::collections::BTreeMap;
use std::path::Path;

mod common;
use common::{h200_provenance as env, stored_round as round};

/// One round per machine (`GPU-0`, `GPU-1`, ...) at these medians (ms), one mode, `noise`.
fn one_mode_machines(medians_ms: &[f64], noise: f64) -> Vec<Round> {
    medians_ms
        .iter()
        .enumerate()
        .map(|(i, ms)| Round {
            noise,
            ..round(ms * 1e3, &format!("GPU-{i}"))
        })
        .collect()
}

fn entry(rounds: Vec<Round>) -> Entry {
    let st = Stats::from_samples(&[rounds[0].median_ms; 20]).unwrap();
    Entry::from_rounds(&st, rounds, env())
}

fn file(entries: Vec<(&str, Entry)>) -> BaselineFile {
    BaselineFile {
        schema: SCHEMA,
        kernel: "gemm".into(),
        gpu: "NVIDIA H200".into(),
        entries: entries
            .into_iter()
            .map(|(c, e)| (c.to_string(), e))
            .collect::<BTreeMap<_, _>>(),
    }
}

const RULE: Rule = Rule {
    tolerance: 0.05,
    floor_ms: 0.65e-3,
};

#[test]
fn identical_machines_pass_and_a_slowdown_is_caught() {
    let e = entry(vec![
        round(200.0, "GPU-a"),
        round(200.4, "GPU-b"),
        round(199.8, "GPU-c"),
    ]);
    let trials = replay_entry("gemm::cuda::m4096_n4096_k4096_bf16", &e, RULE);
    assert_eq!(trials.len(), 3);
    for t in &trials {
        assert_eq!(t.same_speed, Change::Same, "{t:?}");
        assert_eq!(t.slower_10, Change::Slow, "{t:?}");
        assert_eq!(t.slower_20, Change::Slow, "{t:?}");
        assert!((t.ratio - 1.0).abs() < 0.01, "{t:?}");
    }
}

#[test]
fn a_machine_unlike_the_others_is_a_false_regression() {
    // Machine c runs 30% slower than a and b: left out, it is failed although nothing changed.
    let e = entry(vec![
        round(100.0, "GPU-a"),
        round(100.2, "GPU-b"),
        round(130.0, "GPU-c"),
    ]);
    let trials = replay_entry("gemm::cublas::m8192_n8192_k8192_bf16", &e, RULE);
    let c = trials.iter().find(|t| t.machine == "GPU-c").unwrap();
    assert_eq!(c.same_speed, Change::Slow);
    assert!(c.ratio > 1.25, "{c:?}");
    // Left out, a and b face a baseline whose between-machine spread covers 30%: no call.
    let a = trials.iter().find(|t| t.machine == "GPU-a").unwrap();
    assert_ne!(a.same_speed, Change::Slow, "{a:?}");
    let r = replay(
        "nvidia-h200",
        &[file(vec![("gemm::cublas::m8192_n8192_k8192_bf16", e)])],
        RULE,
    );
    assert_eq!(r.backends["cublas"].trials, 3);
    assert_eq!(r.backends["cublas"].false_regressions, 1);
    assert_eq!(r.worst.len(), 1);
    assert_eq!(r.worst[0].machine, "GPU-c");
    let text = render(&r);
    assert!(text.contains("| cublas | 3 | 1 (33.3%) |"), "{text}");
    assert!(
        text.contains("gemm::cublas::m8192_n8192_k8192_bf16 on GPU-c"),
        "{text}"
    );
}

#[test]
fn false_regressions_a_peer_shares_on_the_same_machine_are_counted() {
    // Machine c is slow on this shape for ours and cuBLAS alike; on another shape only ours.
    let slow = |ours: f64| {
        entry(vec![
            round(100.0, "GPU-a"),
            round(100.2, "GPU-b"),
            round(ours, "GPU-c"),
        ])
    };
    let r = replay(
        "nvidia-h200",
        &[file(vec![
            ("gemm::cuda::m6144_n6144_k6144_bf16", slow(130.0)),
            ("gemm::cublas::m6144_n6144_k6144_bf16", slow(125.0)),
            ("gemm::cuda::m4096_n4096_k4096_bf16", slow(130.0)),
            ("gemm::cublas::m4096_n4096_k4096_bf16", slow(100.1)),
        ])],
        RULE,
    );
    let total: usize = r.backends.values().map(|t| t.false_regressions).sum();
    assert_eq!((total, r.shared), (3, 2));
    assert_eq!(r.worst.len(), r.worst_also.len());
    let text = render(&r);
    assert!(
        text.contains("2 of 3 false regressions are shared"),
        "{text}"
    );
    assert!(
        text.contains("gemm::cuda::m6144_n6144_k6144_bf16 on GPU-c: 1.299x (also cublas 1.249x)"),
        "{text}"
    );
    // The 4096³ one is ours alone: no peer named.
    assert!(
        text.contains("gemm::cuda::m4096_n4096_k4096_bf16 on GPU-c: 1.299x\n"),
        "{text}"
    );
}

#[test]
fn single_machine_entries_and_other_batches_are_skipped() {
    let one = entry(vec![round(50.0, "GPU-a"), round(50.1, "GPU-a")]);
    assert!(replay_entry("gemm::cuda::x", &one, RULE).is_empty());
    // b's only round was timed with another batch than the pinned one: nothing to replay for b,
    // and a left out faces b's rounds alone, whose own batch then rules.
    let mut other = round(40.0, "GPU-b");
    other.batch = Some(2);
    let e = entry(vec![round(50.0, "GPU-a"), round(50.2, "GPU-a"), other]);
    let trials = replay_entry("gemm::cuda::x", &e, RULE);
    assert!(trials.iter().all(|t| t.machine == "GPU-a"), "{trials:?}");
    let r = replay("nvidia-h200", &[file(vec![("gemm::cuda::y", one)])], RULE);
    assert_eq!((r.single_machine, r.backends.len()), (1, 0));
}

#[test]
fn the_committed_baselines_replay() {
    // Every GPU model with committed baselines yields trials; a corrupt file is an error that
    // names it (load_file), never a silent skip.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("baselines");
    for slug in ["nvidia-h100-80gb-hbm3", "nvidia-h200"] {
        let mut files = Vec::new();
        for name in ["gemm.json", "mha.json", "rmsnorm.json"] {
            files.push(load_file(&root.join(slug).join(name)).unwrap().unwrap());
        }
        let r = replay(slug, &files, RULE);
        let trials: usize = r.backends.values().map(|t| t.trials).sum();
        assert!(trials > 100, "{slug}: {trials} trials");
    }
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("gemm.json");
    std::fs::write(&bad, "{ not json").unwrap();
    let e = load_file(&bad).unwrap_err().to_string();
    assert!(e.contains("gemm.json"), "{e}");
}

/// A round from the samples of a kernel that ran in two modes (2.11 and 2.35 ms) on `machine`:
/// `upper` of its 20 samples in the slow mode.
fn bimodal_round(upper: usize, machine: &str) -> Round {
    let samples: Vec<f64> = (0..20)
        .map(|i| {
            let jitter = 1.0 + 0.0005 * (i % 4) as f64;
            if i < 20 - upper {
                2.106 * jitter
            } else {
                2.345 * jitter
            }
        })
        .collect();
    let st = Stats::from_samples(&samples).unwrap();
    assert!(st.modes.is_some());
    Round {
        median_ms: st.median_ms,
        noise: st.noise,
        n: st.n,
        low: st.low,
        ..round(0.0, machine)
    }
}

#[test]
fn a_mode_switch_is_no_regression_and_the_lower_modes_still_catch_a_slowdown() {
    // Two H200s (session 22): one with most samples in the fast mode, one in the slow mode, so
    // their medians are 11% apart.
    let e = entry(vec![bimodal_round(6, "GPU-a"), bimodal_round(13, "GPU-b")]);
    let trials = replay_entry("softmax::cuda::m524288_n4096_bf16", &e, RULE);
    assert_eq!(trials.len(), 2);
    let b = trials.iter().find(|t| t.machine == "GPU-b").unwrap();
    assert!(b.ratio > 1.1, "{b:?}");
    // The medians alone are ambiguous (the modes' distance is the noise); the lower modes,
    // 2.106 against 2.106 ms, say the same speed; a slowdown of both modes is caught.
    for t in &trials {
        assert_eq!(t.same_speed, Change::Same, "{t:?}");
        assert_eq!(t.slower_10, Change::Slow, "{t:?}");
        assert_eq!(t.slower_20, Change::Slow, "{t:?}");
    }
    // Without the lower modes stored (rounds from before they were kept): the medians decide,
    // and the modes' distance in their noise keeps the switch from reading as a regression.
    let strip = |mut r: Round| {
        r.low = None;
        r
    };
    let old = entry(vec![
        strip(bimodal_round(6, "GPU-a")),
        strip(bimodal_round(13, "GPU-b")),
    ]);
    // Its blind spot, which the lower modes close: held out, GPU-a (median in the fast mode)
    // made 10% or 20% slower is not called against GPU-b's median in the slow mode.
    for t in replay_entry("softmax::cuda::m524288_n4096_bf16", &old, RULE) {
        assert_ne!(t.same_speed, Change::Slow, "{t:?}");
        if t.machine == "GPU-a" {
            assert_ne!(t.slower_10, Change::Slow, "{t:?}");
            assert_ne!(t.slower_20, Change::Slow, "{t:?}");
        }
    }
}

/// Session 26: one H200 (GPU-999cf8a6) ran the 4 GB `rmsnorm` in two modes with its median in
/// the slow one (2.2675 ms; lower mode 2.0246), eleven others in one fast mode (2.02–2.04 ms).
/// Held out, it read 1.119× with a noise of 10.9% (the modes' distance over its median), which
/// the replay called a regression; the distance over the lower mode (12.0%) covers the switch.
#[test]
fn one_machine_in_the_slow_mode_of_two_is_no_regression() {
    let mut rounds = one_mode_machines(
        &[
            2.0276, 2.0243, 2.0278, 2.0253, 2.0270, 2.0258, 2.0253, 2.0219, 2.0282, 2.0365, 2.0271,
        ],
        0.0012,
    );
    // The stored round as imported before session 26.
    rounds.push(Round {
        median_ms: 2.267519950866699,
        noise: 0.10890491603744343,
        low: Some([2.02457594871521, 0.005108316644495292]),
        ..round(0.0, "GPU-999cf8a6")
    });
    assert!(rounds[11].noise_with_modes() > 0.119);
    let e = entry(rounds);
    let trials = replay_entry("rmsnorm::cuda::m524288_n4096_w32_bf16", &e, RULE);
    let t = trials.iter().find(|t| t.machine == "GPU-999cf8a6").unwrap();
    assert!(t.ratio > 1.11, "{t:?}");
    assert_eq!(t.same_speed, Change::Ambiguous, "{t:?}");
    // A real slowdown of both modes still reads beyond the modes' distance.
    assert_eq!(t.slower_10, Change::Slow, "{t:?}");
    // The other machines read the same speed and a 20% slowdown is caught on each (a 10% one
    // is within the spread the slow machine's round gives the entry).
    for t in trials.iter().filter(|t| t.machine != "GPU-999cf8a6") {
        assert_eq!(t.same_speed, Change::Same, "{t:?}");
        assert_eq!(t.slower_20, Change::Slow, "{t:?}");
    }
}

/// The same machine's `cross_entropy_bwd`: its lower mode (2.1075 ms) sat 0.8% above the other
/// machines' one-mode medians (2.09–2.11), so the modes' distance alone (11.0%) did not cover
/// the 1.119x of its median; its own lower mode against the baseline reads the same speed.
#[test]
fn a_held_out_run_in_two_modes_is_judged_by_its_lower_mode_too() {
    let mut rounds = one_mode_machines(
        &[
            2.0902, 2.1047, 2.0912, 2.0899, 2.0917, 2.0913, 2.0897, 2.1049, 2.0927, 2.1105, 2.1050,
        ],
        0.001,
    );
    rounds.push(Round {
        median_ms: 2.3403,
        noise: 0.10179266157454357,
        low: Some([2.1074559688568115, 0.000576782461810444]),
        ..round(0.0, "GPU-999cf8a6")
    });
    let e = entry(rounds);
    let trials = replay_entry("cross_entropy_bwd::cuda::m524288_n4096_bf16", &e, RULE);
    let t = trials.iter().find(|t| t.machine == "GPU-999cf8a6").unwrap();
    assert!(t.ratio > 1.11, "{t:?}");
    assert_eq!(t.same_speed, Change::Ambiguous, "{t:?}");
    assert_eq!(t.slower_10, Change::Slow, "{t:?}");
    assert_eq!(t.slower_20, Change::Slow, "{t:?}");
}

/// A run whose samples hold two modes 11% apart has the distance over the lower mode as its
/// noise, whichever mode its median sits in.
#[test]
fn two_mode_noise_is_the_distance_over_the_lower_mode() {
    for upper in [6, 13] {
        let r = bimodal_round(upper, "GPU-x");
        assert!(
            (r.noise - (2.345 / 2.106 - 1.0)).abs() < 2e-3,
            "{upper}: {}",
            r.noise
        );
        assert!(r.noise_with_modes() >= r.noise);
    }
}

#[test]
fn trials_are_also_counted_by_the_baselines_duration() {
    // Three machines alike on a 5 µs kernel and on a 200 µs one: a 10% slowdown of the 5 µs
    // kernel (0.5 µs) is under the 0.65 µs floor and is not called; the 200 µs one's is.
    let alike = |us: f64| {
        entry(vec![
            round(us, "GPU-a"),
            round(us * 1.001, "GPU-b"),
            round(us * 0.999, "GPU-c"),
        ])
    };
    let r = replay(
        "nvidia-h200",
        &[file(vec![
            ("gemm::cuda::m64_n64_k64_bf16", alike(5.0)),
            ("gemm::cuda::m4096_n4096_k4096_bf16", alike(200.0)),
        ])],
        RULE,
    );
    let band = |label: &str| {
        r.by_duration
            .iter()
            .find(|(l, _)| l == label)
            .map(|(_, t)| t.clone())
            .unwrap()
    };
    let short = band("under 10 µs");
    let long = band("100 µs – 1 ms");
    assert_eq!((short.trials, long.trials), (3, 3));
    assert_eq!((short.caught_10, long.caught_10), (0, 3));
    assert_eq!((short.caught_20, long.caught_20), (3, 3));
    assert_eq!(band("10–100 µs").trials, 0);
    let text = render(&r);
    assert!(
        text.contains("| under 10 µs | 3 | 0 (0.0%) | 0.0% | 0.0% | 100.0% |"),
        "{text}"
    );
    assert!(!text.contains("| 10–100 µs |"), "{text}");
    for t in replay_entry("gemm::cuda::m64_n64_k64_bf16", &alike(5.0), RULE) {
        assert!((t.baseline_ms - 5e-3).abs() < 1e-5, "{t:?}");
    }
    assert_eq!(
        kernelgate::crossval::duration_band(0.0099),
        0,
        "9.9 µs is under 10 µs"
    );
    assert_eq!(kernelgate::crossval::duration_band(5.0), 3);
}

#[test]
fn the_floor_sweep_trades_false_regressions_for_caught_slowdowns() {
    use kernelgate::crossval::{render_sweep, sweep, Sweep};
    // A 5 µs kernel on which machine c runs 0.5 µs (10%) slower than a and b, and a 200 µs one
    // alike on all three.
    let files = [file(vec![
        (
            "softmax::cuda::m33_n4100_bf16",
            entry(vec![
                round(5.0, "GPU-a"),
                round(5.005, "GPU-b"),
                round(5.5, "GPU-c"),
            ]),
        ),
        (
            "gemm::cuda::m4096_n4096_k4096_bf16",
            entry(vec![
                round(200.0, "GPU-a"),
                round(200.2, "GPU-b"),
                round(199.8, "GPU-c"),
            ]),
        ),
    ])];
    let rows = sweep("nvidia-h200", &files, 0.05, &[0.0, 0.4, 0.65]);
    assert_eq!(rows.len(), 3);
    let fr: Vec<usize> = rows.iter().map(|r| r.all.false_regressions).collect();
    // c's 0.5 µs is a false regression under floors of 0 and 0.4 µs, not under 0.65 µs.
    assert_eq!(fr, vec![1, 1, 0]);
    // Higher floors never catch more.
    for w in rows.windows(2) {
        assert!(w[0].all.caught_10 >= w[1].all.caught_10, "{rows:?}");
        assert!(
            w[0].under_10us.caught_20 >= w[1].under_10us.caught_20,
            "{rows:?}"
        );
    }
    assert_eq!(rows[0].under_10us.trials, 3);
    assert_eq!(rows[0].all.trials, 6);
    let text = render_sweep(&Sweep {
        gpu: "nvidia-h200".into(),
        rows: rows.clone(),
    });
    assert!(text.contains("| 0.65 µs | 6 | 0 |"), "{text}");
    assert!(text.contains("| 0.00 µs | 6 | 1 |"), "{text}");
}
