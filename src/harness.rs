//! Suite → libtest-mimic trials: one trial per case, named by the case, sorted.
//!
//! Listing never touches the GPU or compiles anything. With `--exact NAME` only the
//! matching trial is built (cheap for nextest's process-per-test). Without a GPU every
//! case is reported ignored with the reason.

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
    let no_gpu = if listing {
        None
    } else {
        crate::gpu::detect(session.cfg.device).err()
    };
    let mut cases: Vec<&Case> = suite.cases.iter().collect();
    if args.exact {
        if let Some(f) = &args.filter {
            cases.retain(|c| &c.name() == f);
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
    match session.run(case) {
        Ok(Outcome::Skipped(reason)) => Ok(Completion::ignored_with(reason)),
        Ok(Outcome::Ran(r)) => {
            if r.verdict.passed() {
                if matches!(r.verdict, Verdict::Faster | Verdict::Ambiguous) {
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

/// The whole test binary: loads the configured suite, runs the trials, prints a summary.
pub fn main() -> std::process::ExitCode {
    let mut args = Arguments::from_args();
    // GPU work is serialised anyway; running trials one at a time in name order makes the
    // device's thermal and clock history the same from run to run (`--test-threads N` overrides).
    if args.test_threads.is_none() {
        args.test_threads = Some(1);
    }
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
    let session = Arc::new(Session::new(cfg, &suite.name).with_workers(suite.workers.clone()));
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
            println!("results: {}", w.path().display());
        }
    }
    conclusion.exit_code()
}
