//! `kernelgate run`: the test harness's cases outside `cargo test`, through the same
//! [`Session`] (so the results file is the same), with a progress bar and a line per case.

use super::{gpu_block, RunArgs, EXIT_FAILED};
use crate::case::{Case, Dtype};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::results::{Record, Verdict};
use crate::runner::{Outcome, Session};
use crate::suite::Suite;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use std::collections::VecDeque;
use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

fn bad(flag: &str, message: String) -> Error {
    Error::Case {
        case: flag.to_string(),
        message,
    }
}

/// Applies the command line's options to the environment's configuration.
pub fn configure(mut cfg: Config, a: &RunArgs) -> Result<Config> {
    cfg.suite = a.suite.clone();
    if let Some(v) = a.warmup_ms {
        if !(v.is_finite() && v >= 0.0) {
            return Err(bad("--warmup-ms", format!("{v} is not a time ≥ 0")));
        }
        cfg.timing.warmup_ms = v;
    }
    if let Some(v) = a.min_samples {
        if v == 0 {
            return Err(bad("--min-samples", "must be at least 1".into()));
        }
        cfg.timing.min_samples = v;
        cfg.timing.max_samples = cfg.timing.max_samples.max(v);
    }
    if let Some(v) = a.max_time {
        cfg.timing.max_time_ms = v;
    }
    if a.skip_verify {
        cfg.skip_verify = true;
    } else if a.verify {
        cfg.skip_verify = false;
    }
    if let Some(b) = &a.base {
        cfg.base = Some(b.clone());
        cfg.base_kernels = None;
    }
    if let Some(t) = a.tolerance_pct {
        if !(t > 0.0 && t < 1000.0) {
            return Err(bad("--tolerance-pct", format!("{t} is not a percentage")));
        }
        cfg.tolerance_pct = Some(t);
    }
    if a.seed.is_some() {
        cfg.seed = a.seed;
    }
    if let Some(d) = &a.devices {
        let spec = crate::devices::DeviceSpec::parse(d).map_err(|m| bad("--devices", m))?;
        cfg.set_devices(spec, "--devices");
    }
    Ok(cfg)
}

/// The suite's cases that pass the `--kernels`, `--backends` and `--dtype` filters.
pub fn select(suite: &Suite, a: &RunArgs) -> Result<Vec<Case>> {
    for d in &a.dtype {
        if Dtype::parse(d).is_none() {
            return Err(bad(
                "--dtype",
                format!("unknown dtype {d:?} (bf16, fp16, fp32)"),
            ));
        }
    }
    for k in &a.kernels {
        if crate::family::by_name(k).is_none() {
            let known: Vec<&str> = crate::family::all().iter().map(|f| f.name()).collect();
            return Err(bad(
                "--kernels",
                format!("unknown kernel {k:?} (known: {})", known.join(", ")),
            ));
        }
    }
    for b in &a.backends {
        if crate::backend::by_name(b).is_none()
            && !crate::backend::worker::is_external(b, &suite.workers)
        {
            return Err(bad(
                "--backends",
                format!(
                    "unknown backend {b:?} (built in: cuda, cublas, {}; or a worker the suite or {} defines)",
                    crate::backend::worker::BUILTIN.join(", "),
                    crate::backend::worker::env_var(b)
                ),
            ));
        }
    }
    let keep = |list: &[String], v: &str| list.is_empty() || list.iter().any(|x| x == v);
    let cases: Vec<Case> = suite
        .cases
        .iter()
        .filter(|c| {
            keep(&a.kernels, &c.kernel)
                && keep(&a.backends, &c.backend)
                && keep(&a.dtype, c.dtype.name())
        })
        .cloned()
        .collect();
    let cases = match a.shard {
        Some(sh) => sh.select(cases, |c| c.name()),
        None => cases,
    };
    if cases.is_empty() {
        return Err(bad(
            "run",
            format!(
                "no case of suite {} matches the filters{}",
                suite.name,
                a.shard
                    .map(|s| format!(" in shard {s}"))
                    .unwrap_or_default()
            ),
        ));
    }
    Ok(cases)
}

/// `{m4096 n4096 k4096 bf16}`, shortened with `…` past five dimensions.
pub fn dims_brief(c: &Case) -> String {
    let mut parts: Vec<String> = c
        .shape
        .dims()
        .iter()
        .map(|(k, v)| format!("{k}{v}"))
        .collect();
    if parts.len() > 5 {
        parts.truncate(5);
        parts.push("…".into());
    }
    parts.push(c.dtype.to_string());
    format!("{{{}}}", parts.join(" "))
}

/// The live line of a finished case: `[3/40] gemm cuda {m4096 n4096 k4096 bf16} OK 0.227 ms 606.7 TFLOP/s`.
pub fn case_line(i: usize, n: usize, c: &Case, r: &Record) -> String {
    let word = match r.verdict {
        Verdict::Pass | Verdict::New | Verdict::Updated => "OK",
        Verdict::Faster => "FASTER",
        Verdict::Ambiguous => "AMBIGUOUS",
        Verdict::Regression => "REGRESSION",
        Verdict::Wrong => "WRONG",
        Verdict::MissingBaseline => "NO-BASELINE",
        Verdict::Ungated => "UNGATED",
        Verdict::Throttled => "THROTTLED",
        Verdict::SameCode => "SLOWER-SAME-CODE",
    };
    let mut s = format!(
        "[{i}/{n}] {} {} {} {word}",
        c.kernel,
        c.backend,
        dims_brief(c)
    );
    if let Some(ms) = r.latency_ms {
        s.push(' ');
        s.push_str(&crate::tables::fmt_ms(ms));
        if let Some(f) = r.roofline_frac {
            s.push_str(&format!(
                " {:.0} GB/s ({:.0}% of copy)",
                r.gbps.unwrap_or(0.0),
                f * 100.0
            ));
        } else if let Some(t) = r.tflops {
            s.push_str(&format!(" {t:.1} TFLOP/s"));
        }
        if let Some(ratio) = r.ratio {
            s.push_str(&format!(" ({ratio:.3}x baseline)"));
        }
    }
    s
}

fn progress(n: usize, enabled: bool) -> ProgressBar {
    if !enabled || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let pb = ProgressBar::with_draw_target(Some(n as u64), ProgressDrawTarget::stderr());
    pb.set_style(
        ProgressStyle::with_template("{bar:30.cyan/blue} {pos}/{len} ETA {eta} {wide_msg}")
            .expect("valid template")
            .progress_chars("=> "),
    );
    pb
}

/// The line of a finished case (`device`: the ordinal, shown with several devices); a failed
/// case's name goes to `failed`.
fn outcome_line(
    i: usize,
    n: usize,
    case: &Case,
    device: Option<usize>,
    result: Result<Outcome>,
    failed: &mut Vec<String>,
) -> String {
    let head = |word: &str| {
        let dev = device.map(|d| format!("gpu{d} ")).unwrap_or_default();
        format!(
            "[{i}/{n}] {dev}{} {} {} {word}",
            case.kernel,
            case.backend,
            dims_brief(case)
        )
    };
    match result {
        Ok(Outcome::Ran(r)) => {
            let mut l = case_line(i, n, case, &r);
            if let Some(d) = device {
                l = l.replacen("] ", &format!("] gpu{d} "), 1);
            }
            if !r.verdict.passed() {
                failed.push(case.name());
                l.push_str(&format!("\n    {}", r.message.replace('\n', "\n    ")));
            }
            l
        }
        Ok(Outcome::Skipped(why)) => head(&format!("SKIPPED: {why}")),
        Err(e) => {
            failed.push(case.name());
            head(&format!("ERROR: {e}"))
        }
    }
}

/// Runs the selected cases; exit status 1 when any case fails.
///
/// On one device the cases run in order on this thread. On several (`--devices`), one thread
/// per usable device takes the next case from a queue sorted longest first, and each case runs
/// on whichever device is free.
pub fn run(cfg: Config, a: &RunArgs) -> Result<ExitCode> {
    let mut cfg = configure(cfg, a)?;
    cfg.resolve_base()?;
    let suite = Suite::load(&cfg.suite_path())?;
    let mut cases = select(&suite, a)?;
    let mut session = Session::new(cfg, &suite.name).with_workers(suite.workers.clone());
    if let Some(p) = &a.output {
        session = session.with_results_file(p);
    }
    let devices = session.devices().map_err(Error::NoGpu)?;
    let multi = devices.len() > 1;
    let mut usable = 1;
    if multi {
        let mut first_err = None;
        let mut models = Vec::new();
        for (ordinal, r) in session.open_all()? {
            match r {
                Ok(info) => {
                    print!("{}", gpu_block(&info));
                    models.push(info.name);
                }
                Err(e) => {
                    println!("GPU {ordinal}: cannot be used: {e}");
                    first_err.get_or_insert(e);
                }
            }
        }
        if models.is_empty() {
            return Err(first_err.unwrap_or_else(|| Error::NoGpu("no device opened".into())));
        }
        usable = models.len();
        cases = crate::schedule::order(
            cases,
            &session.store,
            models.first().map(String::as_str),
            &session.cfg.timing,
        );
    } else {
        let info = session.open()?;
        print!("{}", gpu_block(&info));
    }
    if let Some(notice) = session.cfg.profiler_notice() {
        println!("{notice}");
    }
    println!(
        "suite {} ({} of {} cases), seed {}{}{}\n",
        suite.name,
        cases.len(),
        suite.cases.len(),
        session.seed,
        if multi {
            format!(", {usable} devices, longest cases first")
        } else {
            String::new()
        },
        if session.cfg.skip_verify {
            ", reference comparison SKIPPED"
        } else {
            ""
        }
    );
    let n = cases.len();
    let pb = progress(n, !a.no_progress);
    let started = std::time::Instant::now();
    let mut failed = Vec::new();
    if multi {
        let queue = Mutex::new(cases.iter().collect::<VecDeque<&Case>>());
        let done = AtomicUsize::new(0);
        let failed_all = Mutex::new(Vec::new());
        std::thread::scope(|s| {
            for _ in 0..usable {
                s.spawn(|| loop {
                    let Some(case) = queue.lock().unwrap_or_else(|p| p.into_inner()).pop_front()
                    else {
                        break;
                    };
                    pb.set_message(case.name());
                    let (device, result) = session.run_on(case);
                    let i = done.fetch_add(1, Ordering::SeqCst) + 1;
                    let mut f = Vec::new();
                    let line = outcome_line(i, n, case, device, result, &mut f);
                    failed_all
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .extend(f);
                    pb.suspend(|| println!("{line}"));
                    pb.inc(1);
                });
            }
        });
        failed = failed_all.into_inner().unwrap_or_else(|p| p.into_inner());
        failed.sort();
    } else {
        for (i, case) in cases.iter().enumerate() {
            pb.set_message(case.name());
            let result = session.run(case);
            let line = outcome_line(i + 1, n, case, None, result, &mut failed);
            pb.suspend(|| println!("{line}"));
            pb.inc(1);
        }
    }
    pb.finish_and_clear();
    let wall = started.elapsed().as_secs_f64();
    if let Some(w) = session.writer() {
        let reference = std::env::var("KERNELGATE_SPEEDUP_VS").unwrap_or_else(|_| "torch".into());
        w.finish(&reference)?;
        println!("\n{}", crate::report::summary_table(&w.records()));
        print!("{}", crate::report::speedup_table(&w.records()));
        print!("{}", w.summary().render());
        print!(
            "{}",
            crate::report::device_summary(&w.snapshot().devices, &w.records())
        );
        println!("results: {}", w.path().display());
    }
    println!("wall time {wall:.1} s");
    if failed.is_empty() {
        println!("{n} cases, all passed");
        Ok(ExitCode::SUCCESS)
    } else {
        println!("{} of {n} cases FAILED:", failed.len());
        for f in &failed {
            println!("  {f}");
        }
        Ok(ExitCode::from(EXIT_FAILED))
    }
}
