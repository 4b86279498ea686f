//! Human-readable text: verdict messages and the summary table (snapshots).

mod common;

use common::{record, ALL_VERDICTS, GPU};
use kernelgate::baseline::Store;
use kernelgate::report::{summary_table, verdict_message};
use kernelgate::results::Verdict;

fn example(v: Verdict) -> kernelgate::results::Record {
    let dims = (4096, 4096, 4096);
    match v {
        Verdict::Pass => record(dims, "cublas", v, Some(0.2345), Some(0.2301)),
        Verdict::Faster => record(dims, "cuda", v, Some(0.2), Some(0.25)),
        Verdict::Ambiguous => record(dims, "cuda", v, Some(0.265), Some(0.25)),
        Verdict::Regression => record(dims, "cuda", v, Some(0.275), Some(0.25)),
        Verdict::New | Verdict::Updated | Verdict::MissingBaseline | Verdict::Ungated => {
            record(dims, "cuda", v, Some(1.25), None)
        }
        Verdict::Wrong => record(dims, "cuda", v, None, None),
        Verdict::SameCode => {
            let mut r = record(dims, "cuda", v, Some(0.266), Some(0.25));
            r.source_hash = "f09de93b325122e30ac538da".into();
            r.baseline_machines = Some(12);
            r
        }
        Verdict::Throttled => {
            let mut r = record(dims, "cuda", v, Some(0.39), Some(0.25));
            r.gpu_state = Some(
                "SM clock 840 of 1980 MHz; 86 °C; 192 of 700 W; clocks limited by: software thermal slowdown \
                 (after waiting 10.0 s for it to cool and measuring again)"
                    .into(),
            );
            r.slowdown = vec!["software thermal slowdown".into()];
            r
        }
    }
}

/// The message of `example(v)`, asserted to say every one of `needles` and not "REGRESSION".
fn passing_message_says(v: Verdict, needles: &[&str]) -> String {
    let msg = verdict_message(&example(v), GPU, &Store::new("baselines"));
    for needle in needles {
        assert!(msg.contains(needle), "missing {needle:?} in:\n{msg}");
    }
    assert!(!msg.contains("REGRESSION"), "{msg}");
    assert!(v.passed(), "{v:?}");
    msg
}

#[test]
fn same_code_messages_say_the_machine_is_slower_not_the_code() {
    passing_message_says(
        Verdict::SameCode,
        &[
            "slower, same code (not a regression): median 266.00 µs vs baseline 250.00 µs = 1.064x (+6.4%)",
            "source hash (f09de93b325122e30ac538da), the configuration and the driver are the baseline's own",
            "baseline from 12 machines",
            "kernelgate import",
            "KERNELGATE_STRICT=1",
        ],
    );
}

#[test]
fn throttled_messages_say_why_nothing_was_judged_or_stored() {
    let store = Store::new("baselines");
    let r = example(Verdict::Throttled);
    passing_message_says(
        Verdict::Throttled,
        &[
            "THROTTLED (latency not judged): median 390.00 µs vs baseline 250.00 µs = 1.560x (+56.0%)",
            "software thermal slowdown",
            "after waiting 10.0 s for it to cool",
            "KERNELGATE_STRICT=1",
        ],
    );
    // Under UPDATE_BASELINES there is no comparison: the message says the entry was kept.
    let mut u = record(
        (4096, 4096, 4096),
        "cuda",
        Verdict::Throttled,
        Some(0.39),
        None,
    );
    u.gpu_state = r.gpu_state.clone();
    let msg = verdict_message(&u, GPU, &store);
    assert!(
        msg.starts_with("THROTTLED, baseline NOT updated: median 390.00 µs"),
        "{msg}"
    );
    assert!(
        msg.contains("baselines/nvidia-h100-80gb-hbm3/gemm.json is unchanged"),
        "{msg}"
    );
    // A throttled case passes the test; a regression does not.
    assert!(Verdict::Throttled.passed());
    assert!(!Verdict::Regression.passed());
}

#[test]
fn verdict_messages() {
    let store = Store::new("baselines");
    for v in ALL_VERDICTS {
        let msg = verdict_message(&example(v), GPU, &store);
        insta::assert_snapshot!(
            format!(
                "verdict_{}",
                serde_json::to_value(v).unwrap().as_str().unwrap()
            ),
            msg
        );
    }
}

#[test]
fn regression_message_has_everything_needed_to_act() {
    let store = Store::new("baselines");
    let r = example(Verdict::Regression);
    let msg = verdict_message(&r, GPU, &store);
    for needle in [
        "REGRESSION: median 275.00 µs vs baseline 250.00 µs = 1.100x (+10.0%)",
        "beyond tolerance 5.0%",
        "noise ±0.40%",
        "best of 3 measurements, n=5",
        "baselines/nvidia-h100-80gb-hbm3/gemm.json",
        "UPDATE_BASELINES=1 cargo test --release --test kernels -- --exact gemm::cuda::m4096_n4096_k4096_bf16",
    ] {
        assert!(msg.contains(needle), "missing {needle:?} in:\n{msg}");
    }
}

#[test]
fn regression_message_names_the_gpu_state_when_known() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Regression);
    // Without a reading (no nvidia-smi, or it did not answer) nothing is claimed.
    assert!(!verdict_message(&r, GPU, &store).contains("GPU right after"));
    let state = kernelgate::gpu_state::parse("1755, 1980, 71, 689.5, 700, 0x4").unwrap();
    r.gpu_state = Some(state.to_string());
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.contains("\n  GPU right after: SM clock 1755 of 1980 MHz; 71 °C; 690 of 700 W; clocks limited by: software power cap\n"),
        "{msg}"
    );
    // The refresh command stays the last line.
    assert!(
        msg.trim_end()
            .ends_with("gemm::cuda::m4096_n4096_k4096_bf16"),
        "{msg}"
    );
    // Other verdicts never carry it.
    let mut p = example(Verdict::Pass);
    p.gpu_state = r.gpu_state.clone();
    assert!(!verdict_message(&p, GPU, &store).contains("GPU right after"));
}

#[test]
fn message_says_when_the_baseline_was_moved_for_the_window() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Pass);
    assert!(!verdict_message(&r, GPU, &store).contains("timed window"));
    r.window_shift_ms = Some(0.4e-3);
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.contains("; baseline moved +0.40 µs for this machine's timed window"),
        "{msg}"
    );
    // A shift too small to print is left out.
    r.window_shift_ms = Some(0.001e-3);
    assert!(!verdict_message(&r, GPU, &store).contains("timed window"));
}

#[test]
fn latency_units() {
    let store = Store::new("b");
    let msg = |ms: f64| {
        verdict_message(
            &record((1, 1, 1), "cuda", Verdict::New, Some(ms), None),
            GPU,
            &store,
        )
    };
    assert!(
        msg(250.0).starts_with("new: median 250.0 ms;"),
        "{}",
        msg(250.0)
    );
    assert!(
        msg(1.5).starts_with("new: median 1.500 ms;"),
        "{}",
        msg(1.5)
    );
    assert!(
        msg(0.0123).starts_with("new: median 12.30 µs;"),
        "{}",
        msg(0.0123)
    );
    assert!(
        msg(0.000_5).starts_with("new: median 0.50 µs;"),
        "{}",
        msg(0.000_5)
    );
}

#[test]
fn a_case_timed_under_a_profiler_says_why_it_was_not_gated() {
    let store = Store::new("b");
    let r = record((1, 1, 1), "cuda", Verdict::Ungated, Some(0.0123), None);
    assert!(r.verdict.passed(), "ungated cases pass");
    let m = verdict_message(&r, GPU, &store);
    assert!(
        m.starts_with(
            "ungated: median 12.30 µs, timed under a profiler (an Nsight injection variable is set)"
        ) && m.contains("not compared with the baseline"),
        "{m}"
    );
    assert_eq!(
        serde_json::to_string(&Verdict::Ungated).unwrap(),
        "\"ungated\""
    );
}

#[test]
fn wrong_verdict_keeps_its_own_message() {
    let r = example(Verdict::Wrong);
    assert_eq!(
        verdict_message(&r, GPU, &Store::new("baselines")),
        r.message
    );
}

#[test]
fn summary_table_snapshot() {
    let records = vec![
        record(
            (8192, 8192, 8192),
            "cuda",
            Verdict::Regression,
            Some(1.65),
            Some(1.5),
        ),
        record(
            (1024, 1024, 1024),
            "cublas",
            Verdict::Pass,
            Some(0.0123),
            Some(0.0121),
        ),
        record((4096, 4096, 4096), "cuda", Verdict::Wrong, None, None),
        record((1, 4096, 4096), "cublas", Verdict::New, Some(0.0456), None),
        record(
            (4096, 4096, 4096),
            "cublas",
            Verdict::Faster,
            Some(150.0),
            Some(180.0),
        ),
        record(
            (2048, 2048, 2048),
            "cuda",
            Verdict::Ambiguous,
            Some(0.095),
            Some(0.09),
        ),
    ];
    let table = summary_table(&records);
    insta::assert_snapshot!("summary_table", table);
    // Sorted by case, whatever the run order; one header line plus one line per record.
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 7);
    let cases: Vec<&str> = lines[1..]
        .iter()
        .map(|l| l.split_whitespace().next().unwrap())
        .collect();
    let mut sorted = cases.clone();
    sorted.sort();
    assert_eq!(cases, sorted);
    // Fixed width: every line is as wide as the header up to the variant column.
    let col = lines[0].find("variant").unwrap();
    for l in &lines {
        assert!(l.chars().count() >= col, "{l}");
    }
}

#[test]
fn summary_table_empty() {
    assert_eq!(
        summary_table(&[]),
        "case     verdict        median    TFLOP/s       GB/s  now/base  variant\n"
    );
}

#[test]
fn message_says_when_the_baseline_was_timed_after_another_l2_flush() {
    use kernelgate::timing::FlushMode;
    let store = Store::new("baselines");
    let mut r = example(Verdict::Pass);
    assert_eq!(r.l2_flush, Some(FlushMode::Read));
    let with = |r: &kernelgate::results::Record, then: Option<FlushMode>| {
        let mut r = r.clone();
        r.baseline_l2_flush = then;
        verdict_message(&r, GPU, &store)
    };
    // A baseline of write-flush rounds (or rounds from before the mode was recorded).
    let msg = with(&r, Some(FlushMode::Write));
    assert!(
        msg.contains("baseline timed after a write L2 flush, this run after a read one")
            && msg.contains("UPDATE_BASELINES=append"),
        "{msg}"
    );
    // The same flush, or a baseline the gate did not read: nothing said.
    assert!(!with(&r, Some(FlushMode::Read)).contains("L2 flush"));
    assert!(!with(&r, None).contains("L2 flush"));
    // A run whose worker did not say how it flushed: nothing said either.
    r.l2_flush = None;
    assert!(!with(&r, Some(FlushMode::Write)).contains("L2 flush"));
}

#[test]
fn message_says_when_the_baseline_was_timed_with_another_duty_cycle_hold() {
    let store = Store::new("baselines");
    let r = example(Verdict::Pass);
    let with = |then: Option<f64>, now: Option<f64>| {
        let mut r = r.clone();
        r.baseline_duty_hold = then;
        r.duty_hold = now;
        verdict_message(&r, GPU, &store)
    };
    // A long case timed under the hold against a baseline from before it.
    let msg = with(Some(0.0), Some(1.0));
    assert!(
        msg.contains(
            "baseline timed with no duty-cycle hold, this run with a duty-cycle hold of 1× the sample"
        ) && msg.contains("UPDATE_BASELINES=append"),
        "{msg}"
    );
    // The other way round (KERNELGATE_DUTY_HOLD=0 against held rounds).
    let msg = with(Some(1.0), None);
    assert!(
        msg.contains("baseline timed with a duty-cycle hold of 1× the sample, this run with no duty-cycle hold"),
        "{msg}"
    );
    // No difference recorded: nothing said.
    assert!(!with(None, Some(1.0)).contains("duty-cycle"));
    assert!(!with(None, None).contains("duty-cycle"));
}

#[test]
fn message_says_when_the_baseline_ran_another_configuration() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Pass);
    r.variant = "gemm_wgmma_bf16_128x128 (tma+wgmma 128x128x64, 6 stages; 64 CTAs; forced)".into();
    // No difference recorded (same configuration, or rounds that stored none): nothing said.
    assert!(!verdict_message(&r, GPU, &store).contains("configuration"));
    r.baseline_variant =
        Some("gemm_wgmma_bf16_64x128 (tma+wgmma 64x128x64, 4 stages; 128 CTAs)".into());
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.contains(
            "baseline's newest round ran another configuration: gemm_wgmma_bf16_64x128 \
             (tma+wgmma 64x128x64, 4 stages; 128 CTAs) (this run: gemm_wgmma_bf16_128x128"
        ),
        "{msg}"
    );
    // Long configurations are cut, and say so.
    r.baseline_variant = Some("x".repeat(400));
    let msg = verdict_message(&r, GPU, &store);
    assert!(msg.contains(&format!("{}…", "x".repeat(139))), "{msg}");
    assert!(!msg.contains(&"x".repeat(141)), "{msg}");
}

#[test]
fn message_says_when_the_baseline_timed_other_code() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Pass);
    r.source_hash = "9bc8886ca9432d5ab93967ae".into();
    // Same code (or an entry that stored no hash): nothing said.
    assert!(!verdict_message(&r, GPU, &store).contains("other code"));
    r.baseline_source_hash = Some("7078d5a161f992c8e4ffd75b".into());
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.contains(
            "baseline timed other code (stored source hash 7078d5a161f992c8e4ffd75b, this run \
             9bc8886ca9432d5ab93967ae): its rounds restart on the next import"
        ),
        "{msg}"
    );
}

#[test]
fn ambiguous_message_names_two_modes() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Ambiguous);
    assert!(!verdict_message(&r, GPU, &store).contains("two modes"));
    let samples: Vec<f64> = (0..20).map(|i| if i < 12 { 0.25 } else { 0.28 }).collect();
    r.stats = kernelgate::stats::Stats::from_samples(&samples);
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.contains("(samples in two modes, 250.00 µs and 280.00 µs: the median lands in either)"),
        "{msg}"
    );
}

#[test]
fn message_says_when_the_lower_modes_decided() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Pass);
    r.latency_ms = Some(2.345);
    r.baseline_ms = Some(2.106);
    r.ratio = Some(1.001);
    r.lower_modes = Some([2.108, 2.106]);
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.starts_with("ok: median lower mode 2.108 ms vs baseline lower mode 2.106 ms = 1.001x"),
        "{msg}"
    );
    assert!(
        msg.contains("decided on the lower modes: this run's samples and the baseline's rounds both fell into two modes (medians 2.345 ms and 2.106 ms"),
        "{msg}"
    );
}

#[test]
fn message_says_when_this_runs_own_lower_mode_kept_a_slowdown_uncalled() {
    let store = Store::new("baselines");
    let mut r = example(Verdict::Ambiguous);
    r.latency_ms = Some(2.3403);
    r.baseline_ms = Some(2.0915);
    r.ratio = Some(1.119);
    r.noise = Some(0.1105);
    r.own_lower_mode = Some(2.1075);
    let msg = verdict_message(&r, GPU, &store);
    assert!(
        msg.starts_with("ambiguous: median 2.340 ms vs baseline 2.091 ms = 1.119x, beyond tolerance 5.0% and noise ±11.05%, but this run's samples fell into two modes and its lower mode, 2.107 ms, is at the baseline's speed"),
        "{msg}"
    );
    assert!(!msg.contains("within noise"), "{msg}");
}
