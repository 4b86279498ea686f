//! Suite → libtest-mimic trials: one trial per case, named by the case, sorted.
//!
//! Listing never touches the GPU or compiles anything. With `--exact NAME` only the
//! matching trial is built (cheap for nextest's process-per-test). Without a GPU every
//! case is reported ignored with the reason. On a machine without the CUDA driver library
//! the listing also flags every case ignored (a probe that initialises nothing), so runners
//! that list first, such as cargo-nextest, report the cases skipped: a case ignored only at
//! run time exits successfully and nextest would count it passed.
//!
//! With several devices (`KERNELGATE_DEVICES`) the trials are ordered longest first
//! ([`crate::schedule`]) and libtest runs them on at least as many threads as devices; each
//! trial leases whichever device is free, so every device stays busy. Configured devices are
//! also locked host-wide per case ([`crate::runner::device_locks`]), so under cargo-nextest
//! (a process per case, `--exact NAME`) each process takes a device no other process is using.

use crate::case::Case;
use crate::config::Config;
use crate::results::Verdict;
use crate::runner::{Outcome, Session};
use crate::suite::Suite;
use libtest_mimic::{Arguments, Completion, Failed, Trial};
use std::sync::Arc;

/// Builds the trials of `suite` for `args`.
pub fn trials(suite: &Suite, session: Arc<Session>, args: &Arguments) -> Vec<Trial> {
    let listing = args.list;
    let devices = if listing {
        None
    } else {
        Some(session.devices())
    };
    let no_gpu = devices.as_ref().and_then(|d| d.as_ref().err().cloned());
    let listed_ignored = listing && !crate::gpu::driver_library_present();
    let mut cases: Vec<&Case> = suite.cases.iter().collect();
    if args.exact {
        if let Some(f) = &args.filter {
            cases.retain(|c| &c.name() == f);
        }
    }
    // Several devices: longest first, so the run does not end on one device with a long case.
    if let Some(Ok(d)) = &devices {
        if d.len() > 1 && cases.len() > 1 {
            let model = crate::gpu::device_name(d[0]);
            cases = crate::schedule::order(
                cases,
                &session.store,
                model.as_deref(),
                &session.cfg.timing,
            );
        }
    }
    cases
        .into_iter()
        .map(|case| {
            let name = case.name();
            let case = case.clone();
            let session = session.clone();
            let no_gpu = no_gpu.clone();
            Trial::ignorable_test(name, move || {
                if let Some(reason) = no_gpu {
                    return Ok(Completion::ignored_with(format!("no GPU: {reason}")));
                }
                run_trial(&session, &case)
            })
            .with_ignored_flag(listed_ignored)
        })
        .collect()
}

/// Runs `case` in a child process of this test binary (`--exact NAME`): used once a fault
/// has cost this process its CUDA context, so later cases still run and are not blamed.
fn run_in_child(case: &Case, lost_in: &str) -> Result<Completion, Failed> {
    let name = case.name();
    let exe = std::env::current_exe()
        .map_err(|e| Failed::from(format!("{name}: cannot find the test binary: {e}")))?;
    let out = std::process::Command::new(exe)
        .args(["--exact", &name, "--test-threads", "1"])
        .output()
        .map_err(|e| Failed::from(format!("{name}: cannot start a child process: {e}")))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let note =
        format!("(run in a fresh process: this one lost its CUDA context to a fault in {lost_in})");
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        let tail = tail[tail.len().saturating_sub(12)..].join("\n");
        return Err(Failed::from(format!("{name} {note}:\n{tail}")));
    }
    if text.contains(" 1 ignored") {
        return Ok(Completion::ignored_with(format!(
            "ignored in a fresh process {note}"
        )));
    }
    if text.contains(" 1 passed") {
        println!("{name}: passed {note}");
        return Ok(Completion::Completed);
    }
    Err(Failed::from(format!(
        "{name} {note}: the child process ran no test:\n{text}"
    )))
}

fn run_trial(session: &Session, case: &Case) -> Result<Completion, Failed> {
    if let Some(lost_in) = session.context_lost() {
        return run_in_child(case, &lost_in);
    }
    let (device, result) = session.run_on(case);
    if device.is_none() {
        // Another trial's fault lost the last device while this one waited for it.
        if let Some(lost_in) = session.context_lost() {
            return run_in_child(case, &lost_in);
        }
    }
    match result {
        Ok(Outcome::Skipped(reason)) => Ok(Completion::ignored_with(reason)),
        Ok(Outcome::Ran(r)) => {
            if r.verdict.passed() {
                if matches!(
                    r.verdict,
                    Verdict::Faster | Verdict::Ambiguous | Verdict::Throttled | Verdict::SameCode
                ) {
                    println!("{}: {}", r.case, r.message);
                }
                Ok(Completion::Completed)
            } else {
                Err(Failed::from(format!("{}: {}", r.case, r.message)))
            }
        }
        Err(crate::error::Error::NoGpu(reason)) => {
            Ok(Completion::ignored_with(format!("no GPU: {reason}")))
        }
        Err(e) => Err(Failed::from(format!("{}: {e}", case.name()))),
    }
}

/// libtest's thread count for a run on `devices` devices when the command line said `given`.
///
/// One device: trials run one at a time in the order given (GPU work is serialised anyway, and
/// one at a time in name order makes the device's thermal and clock history the same from run
/// to run). Several: one thread per device, so each device has a trial to run. A count given
/// on the command line (`--test-threads N`) is kept.
pub fn test_threads(given: Option<usize>, devices: usize) -> Option<usize> {
    given.or(Some(devices.max(1)))
}

/// The whole test binary: loads the configured suite, runs the trials, prints a summary.
pub fn main() -> std::process::ExitCode {
    let mut args = Arguments::from_args();
    let cfg = match Config::from_env().and_then(|mut c| {
        if !args.list {
            c.resolve_base()?;
        }
        Ok(c)
    }) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kernelgate: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    let path = cfg.suite_path();
    let suite = match Suite::load(&path) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("kernelgate: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if let (Some(notice), false) = (cfg.profiler_notice(), args.list) {
        eprintln!("kernelgate: {notice}");
    }
    let session = Arc::new(Session::new(cfg, &suite.name).with_workers(suite.workers.clone()));
    let devices = if args.list {
        1
    } else {
        session.devices().map(|d| d.len()).unwrap_or(1)
    };
    args.test_threads = test_threads(args.test_threads, devices);
    if devices > 1 && !args.exact && args.test_threads.is_some_and(|t| t < devices) {
        eprintln!(
            "kernelgate: --test-threads {} runs fewer trials at once than the {devices} devices",
            args.test_threads.unwrap_or(1)
        );
    }
    if devices > 1 && !args.exact {
        // Open every device (and measure its ceilings) before the first trial, so no device's
        // probes overlap another device's case; a device that cannot be opened is retired.
        if let Ok(opened) = session.open_all() {
            for (ordinal, r) in opened {
                if let Err(e) = r {
                    eprintln!("kernelgate: GPU {ordinal} cannot be used: {e}");
                }
            }
        }
    }
    let trials = trials(&suite, session.clone(), &args);
    let conclusion = libtest_mimic::run(&args, trials);
    if let Some(w) = session.writer() {
        let reference = std::env::var("KERNELGATE_SPEEDUP_VS").unwrap_or_else(|_| "torch".into());
        if let Err(e) = w.finish(&reference) {
            eprintln!("kernelgate: {e}");
        }
        let recs = w.records();
        if !recs.is_empty() && !args.list {
            println!(
                "\nkernelgate suite `{}` seed {}:\n{}",
                suite.name,
                session.seed,
                crate::report::summary_table(&recs)
            );
            print!("{}", crate::report::speedup_table(&recs));
            print!("{}", w.summary().render());
            print!(
                "{}",
                crate::report::device_summary(&w.snapshot().devices, &recs)
            );
            println!("results: {}", w.path().display());
        }
    }
    conclusion.exit_code()
}
