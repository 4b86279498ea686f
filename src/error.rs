//! The one error type of the library: every failure says what failed and where.

use std::path::PathBuf;

/// Everything that can go wrong in kernelgate, with the place it went wrong.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file could not be read or written.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("reading", "writing", "renaming"...).
        action: &'static str,
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A suite fixture is malformed or contradictory.
    #[error("suite {path}: {entry}: {message}")]
    Suite {
        /// The fixture file.
        path: PathBuf,
        /// Which entry ("case group 3", "top level", ...).
        entry: String,
        /// What is wrong.
        message: String,
    },
    /// A baseline file cannot be used.
    #[error("baseline {path}: {message} (fix or delete the file; it is never overwritten while corrupt)")]
    Baseline {
        /// The baseline file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A results file cannot be used.
    #[error("results {path}: {message}")]
    Results {
        /// The results file.
        path: PathBuf,
        /// What is wrong.
        message: String,
    },
    /// A case name or case description is invalid.
    #[error("case {case}: {message}")]
    Case {
        /// The case name (or the text that failed to parse).
        case: String,
        /// What is wrong.
        message: String,
    },
    /// No usable GPU, driver or CUDA library.
    #[error("no GPU: {0}")]
    NoGpu(String),
    /// A CUDA driver call failed.
    #[error("CUDA driver error in {context}: {message}")]
    Driver {
        /// What was being done.
        context: String,
        /// The driver's own description.
        message: String,
    },
    /// NVRTC failed to compile a kernel source.
    #[error("NVRTC could not compile {file} ({options}):\n{log}")]
    Compile {
        /// The kernel source file.
        file: String,
        /// The options used.
        options: String,
        /// The compiler log.
        log: String,
    },
    /// A compiled kernel module has no entry point of that name (a `--base` revision from
    /// before the entry existed, or a host/kernel mismatch).
    #[error("kernel module {file} has no entry point {entry}")]
    MissingEntry {
        /// The kernel source file the module was compiled from.
        file: String,
        /// The entry point asked for.
        entry: String,
    },
    /// The CUDA headers NVRTC needs could not be found.
    #[error("CUDA headers not found (looked for cuda_bf16.h in {searched}); set CUDA_HOME or CUDA_PATH to the CUDA toolkit")]
    Headers {
        /// The directories searched.
        searched: String,
    },
    /// cuBLAS returned an error.
    #[error("cuBLAS error in {context}: {message}")]
    Cublas {
        /// What was being done.
        context: String,
        /// cuBLAS's status.
        message: String,
    },
    /// A case does not fit on this device.
    #[error(
        "case {case} needs {need_mb:.0} MB of device memory, the device has {free_mb:.0} MB free"
    )]
    TooBig {
        /// The case name.
        case: String,
        /// Needed memory in MB.
        need_mb: f64,
        /// Free memory in MB.
        free_mb: f64,
    },
    /// A kernel ran past its time limit.
    #[error("case {case}: kernel did not finish within {limit_s} s (hang?)")]
    Hang {
        /// The case name.
        case: String,
        /// The limit in seconds.
        limit_s: f64,
    },
    /// An environment variable holds an unusable value.
    #[error("environment variable {var}={value:?}: {message}")]
    Env {
        /// The variable.
        var: &'static str,
        /// Its value.
        value: String,
        /// What is wrong.
        message: String,
    },
    /// An external backend cannot run here (no Python, no torch, no CUDA device for it, or
    /// the family/dtype is not implemented by the worker): its cases are ignored.
    #[error("backend {backend} unavailable: {reason}")]
    BackendUnavailable {
        /// The backend.
        backend: String,
        /// Why.
        reason: String,
    },
    /// An external backend's worker failed (crash, hang, garbage or its own error).
    #[error("{message}")]
    Worker {
        /// The backend.
        backend: String,
        /// What happened.
        message: String,
    },
    /// The base of a same-run A/B comparison (`KERNELGATE_BASE`) cannot be used.
    #[error("A/B base {spec:?}: {message}")]
    Base {
        /// The revision or directory given.
        spec: String,
        /// What is wrong.
        message: String,
    },
    /// `kernelgate rehash --since` cannot compare the machine code of two kernel trees.
    #[error("rehash since {since:?}: {message}")]
    Rehash {
        /// The revision or directory given.
        since: String,
        /// What is wrong.
        message: String,
    },
    /// JSON (de)serialisation failed.
    #[error("JSON in {what}: {source}")]
    Json {
        /// What was being (de)serialised.
        what: String,
        /// The serde_json error.
        #[source]
        source: serde_json::Error,
    },
}

/// The library's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    /// An I/O error on `path` while doing `action`.
    pub fn io(action: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            action,
            path: path.into(),
            source,
        }
    }

    /// A driver error with context.
    pub fn driver(context: impl Into<String>, err: impl std::fmt::Debug) -> Self {
        Error::Driver {
            context: context.into(),
            message: format!("{err:?}"),
        }
    }
}
