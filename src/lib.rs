//! kernelgate: GPU kernels as `cargo test` cases.
//!
//! Every kernel × shape × dtype × backend of a suite (`fixtures/*.json`) becomes one test
//! that first checks the output against a float64 CPU reference and then times the kernel
//! with CUDA events, comparing the median with the stored baseline for this GPU model
//! (`baselines/<gpu>/<kernel>.json`). See `README.md` for the commands and variables.
#![warn(missing_docs)]

pub mod abtest;
pub mod backend;
pub mod baseline;
pub mod case;
pub mod charts;
pub mod cli;
pub mod compare;
pub mod compile_variation;
pub mod config;
pub mod crossval;
pub mod cubin;
pub mod devices;
pub mod error;
pub mod family;
pub mod files;
pub mod gate;
pub mod gpu;
pub mod gpu_state;
pub mod harness;
pub mod inputs;
pub mod kernel_report;
pub mod machine_code;
pub mod merge;
pub mod rank;
pub mod report;
pub mod results;
pub mod roofline;
pub mod runner;
pub mod schedule;
pub mod selftest;
pub mod sensitivity;
pub mod shard;
pub mod speedup;
pub mod stats;
pub mod suite;
pub mod tables;
pub mod timefmt;
pub mod timing;
pub mod verify;

pub use error::{Error, Result};
