//! Helpers shared by the `cli_*` tests (included with `#[path]`, not a test target of its own).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A real results file recorded on an H200 (`fixtures/results/`).
pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/results")
        .join(name)
}

/// Runs the `kernelgate` binary with `args` in `dir` (no GPU-related environment leaks in).
pub fn kernelgate(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .args(args)
        .current_dir(dir)
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("KERNELGATE_SUITE")
        .output()
        .expect("the kernelgate binary runs")
}

/// stdout and stderr as text.
pub fn text(o: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&o.stdout).into_owned(),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A copy of a real results file that differs ONLY in the GPU name (metadata and every
/// record's `gpu_model`), to exercise cross-GPU merging without a second GPU's run. It is
/// not a measurement of that GPU; the tests say so where they use it.
pub fn relabelled_copy(src: &Path, dst: &Path, gpu: &str) {
    let text = std::fs::read_to_string(src).expect("fixture readable");
    let mut v: serde_json::Value = serde_json::from_str(&text).expect("fixture is JSON");
    v["gpu"]["name"] = gpu.into();
    for r in v["results"].as_array_mut().expect("results array") {
        r["gpu_model"] = gpu.into();
    }
    std::fs::write(dst, serde_json::to_string_pretty(&v).expect("serialises")).expect("write");
}
