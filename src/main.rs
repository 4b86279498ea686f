//! `kernelgate`: the command-line side of the harness.
//!
//! ```text
//! kernelgate list     [SUITE]   the cases of a suite (default: KERNELGATE_SUITE or `default`)
//! kernelgate run      [SUITE]   run every case (check, time, compare) and print the table
//! kernelgate gpu-info           the device facts recorded with every result
//! ```
//! The same environment variables as the test harness apply (see `README.md`).

use kernelgate::config::Config;
use kernelgate::runner::{Outcome, Session};
use kernelgate::suite::Suite;
use std::process::ExitCode;

fn load(cfg: &mut Config, suite: Option<&String>) -> Result<Suite, kernelgate::Error> {
    if let Some(s) = suite {
        cfg.suite = s.clone();
    }
    Suite::load(&cfg.suite_path())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut cfg = match Config::from_env() {
        Ok(c) => c,
        Err(e) => {
            eprintln!("kernelgate: {e}");
            return ExitCode::from(2);
        }
    };
    let result = match args.first().map(String::as_str) {
        Some("list") => load(&mut cfg, args.get(1)).map(|s| {
            for c in &s.cases {
                println!("{}", c.name());
            }
            ExitCode::SUCCESS
        }),
        Some("gpu-info") => {
            kernelgate::gpu::Gpu::open(cfg.device, &cfg.root.join("kernels"), &cfg.cache_dir).map(
                |g| {
                    println!(
                        "{}",
                        serde_json::to_string_pretty(&g.info).expect("GpuInfo serialises")
                    );
                    ExitCode::SUCCESS
                },
            )
        }
        Some("run") => load(&mut cfg, args.get(1)).and_then(|suite| {
            let session = Session::new(cfg, &suite.name).with_workers(suite.workers.clone());
            let mut failed = 0;
            let total = suite.cases.len();
            for (i, case) in suite.cases.iter().enumerate() {
                match session.run(case)? {
                    Outcome::Skipped(why) => {
                        println!("[{}/{total}] {} SKIPPED: {why}", i + 1, case.name())
                    }
                    Outcome::Ran(r) => {
                        failed += usize::from(!r.verdict.passed());
                        println!(
                            "[{}/{total}] {} {:?}: {}",
                            i + 1,
                            r.case,
                            r.verdict,
                            r.message
                        );
                    }
                }
            }
            if let Some(w) = session.writer() {
                println!("\n{}", kernelgate::report::summary_table(&w.records()));
                println!("results: {}", w.path().display());
            }
            Ok(if failed > 0 {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            })
        }),
        _ => {
            eprintln!("usage: kernelgate list [SUITE] | run [SUITE] | gpu-info");
            Ok(ExitCode::from(2))
        }
    };
    result.unwrap_or_else(|e| {
        eprintln!("kernelgate: {e}");
        ExitCode::from(1)
    })
}
