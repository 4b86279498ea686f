//! The `kernelgate` command: argument parsing and the subcommands' glue. The work itself
//! lives in library modules shared with the test harness ([`crate::runner`], [`crate::merge`],
//! [`crate::tables`], [`crate::compare`], [`crate::charts`], [`crate::roofline`]).
//!
//! Exit status: 0 success; 1 a case failed (`run`), a case is SLOW (`compare`) or the GPU
//! failed at run time; 2 bad usage or bad input (malformed or incompatible files, bad suite);
//! 3 no usable GPU (`run`, `gpu-info`, `roofline`).

mod run;

use crate::config::Config;
use crate::error::Error;
use crate::results::ResultsFile;
use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Exit status for a failed case, a SLOW comparison or a GPU failure.
pub const EXIT_FAILED: u8 = 1;
/// Exit status for bad usage or input.
pub const EXIT_INPUT: u8 = 2;
/// Exit status when there is no usable GPU.
pub const EXIT_NO_GPU: u8 = 3;

/// GPU kernels as test cases: run suites, merge and report results, compare runs, plot.
#[derive(Debug, Parser)]
#[command(name = "kernelgate", version, about, long_about = None)]
pub struct Cli {
    /// The subcommand.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run a suite's cases (check, time, compare with baselines) and write a results file.
    Run(RunArgs),
    /// List a suite's cases (never touches the GPU).
    List {
        /// Suite name under fixtures/ or a path to a suite JSON.
        #[arg(long, short, default_value = "default")]
        suite: String,
        /// Only shard K of N (`K/N`, as `run --shard`).
        #[arg(long)]
        shard: Option<crate::shard::Shard>,
    },
    /// Compile the kernels with NVRTC for an architecture without a GPU (NVRTC and the CUDA
    /// headers are enough) and print ptxas's registers, spills and shared memory per entry
    /// point. Exit 1 if a file does not compile or the CUDA headers are missing, 3 without
    /// NVRTC.
    Compile {
        /// Target architecture, as NVRTC's `--gpu-architecture` takes it.
        #[arg(long, default_value = "sm_90a")]
        arch: String,
        /// Kernel sources under kernels/, by name or path (default: every `*.cu` there, in name
        /// order).
        files: Vec<String>,
        /// A preprocessor definition (`-D MHA_WG_BN_D128=176`) or, starting with `-`, any NVRTC
        /// option (`--option=-lineinfo`); repeatable.
        #[arg(long = "option", short = 'D', allow_hyphen_values = true)]
        options: Vec<String>,
        /// Also compile each file this many times and list the entry points whose machine code
        /// varied between compiles (NVRTC's own variation; 1: no such check).
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=100))]
        repeat: u32,
    },
    /// Merge results files; (GPU, case) duplicates keep the newest record.
    Merge {
        /// Results files to merge, in order (on equal dates the later file wins).
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Where to write the merged file.
        #[arg(long, short)]
        output: PathBuf,
    },
    /// Markdown and CSV tables of results files (merged in memory when several).
    Report(ReportArgs),
    /// Compare two results files case by case: FAST / SLOW / SAME / AMBIGUOUS.
    Compare {
        /// The reference run ("before").
        a: PathBuf,
        /// The run judged ("now").
        b: PathBuf,
        /// Tolerance in percent; a change is called only beyond it and beyond both runs' noise.
        #[arg(long, default_value_t = crate::config::DEFAULT_TOLERANCE_PCT)]
        tolerance_pct: f64,
    },
    /// Rank several runs of the same cases (one per kernel configuration) case by case: each
    /// run's median and ratio to the fastest, the winner when it leads beyond tolerance and
    /// noise, and per run its wins and geomean ratio to the fastest.
    Rank {
        /// The runs: `LABEL=PATH` (a label given again joins its files, fastest record per
        /// case) or `PATH` (labelled by its file stem); at least two labels.
        #[arg(required = true, num_args = 2..)]
        runs: Vec<String>,
        /// Tolerance in percent the fastest must lead the next run by (and by more than both
        /// runs' noise) to be called the winner.
        #[arg(long, default_value_t = 1.0)]
        tolerance_pct: f64,
    },
    /// PNG and SVG charts of results files (merged in memory when several).
    Plot(PlotArgs),
    /// The device facts recorded with every result.
    GpuInfo {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Measured copy bandwidth and bf16 GEMM rate beside the datasheet figures.
    Roofline {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Show that the gate calls injected slowdowns of a real kernel (+10%) and passes small
    /// ones (+3%), against the stored baseline and in same-run A/B mode. Exit 1 if not.
    Selftest {
        /// The case to inject into (a `cuda` case of the suite).
        #[arg(long, default_value = "rmsnorm::cuda::m65536_n4096_w32_bf16")]
        case: String,
        /// Suite holding the case.
        #[arg(long, short, default_value = "default")]
        suite: String,
        /// Runs per level and mode.
        #[arg(long, default_value_t = 5)]
        runs: usize,
        /// Injected slowdowns in percent of the kernel's median (0 is always run).
        #[arg(long, value_delimiter = ',', default_value = "3,5,10")]
        levels: Vec<f64>,
        /// Write the full report (every record) as JSON here.
        #[arg(long, short)]
        output: Option<PathBuf>,
    },
    /// Add the timed records of results files (e.g. CI gate runs on other machines) to the
    /// baselines as rounds of the machines that measured them.
    #[command(group(clap::ArgGroup::new("case_filters").multiple(true)))]
    Import {
        /// Results files.
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        /// Drop the rounds of each touched entry that do not know their timed-window cost
        /// (window ceiling and batch) once a round that does arrives.
        #[arg(long)]
        retire_unwindowed: bool,
        /// Import only the records of cases whose name contains this (repeatable; any match).
        /// For taking some cases' rounds from a run that timed the others under settings their
        /// rule does not use, such as a forced kernel.
        #[arg(long = "case", value_name = "PATTERN", group = "case_filters")]
        cases: Vec<String>,
        /// Leave out the records of cases whose name contains this (repeatable; any match): a
        /// record that should not reach the baselines while the rest of its file does.
        #[arg(long = "skip-case", value_name = "PATTERN", group = "case_filters")]
        skip_cases: Vec<String>,
        /// With `--case` or `--skip-case`: match whole case names only.
        #[arg(long, requires = "case_filters")]
        exact: bool,
        /// Import only the records of cases that already have a baseline entry for their GPU
        /// model: another machine's rounds for the stored entries, no entry from one machine.
        #[arg(long)]
        existing_only: bool,
    },
    /// How each suite's cases are backed by the stored baselines of each GPU model: cases whose
    /// entry holds several machines' rounds, one machine's, or none, and `cuda` cases whose
    /// entry timed older kernel code than `kernels/` holds now (no GPU needed).
    Coverage {
        /// Suites (names under fixtures/ or paths); repeatable.
        #[arg(long = "suite", short, default_value = "default")]
        suites: Vec<String>,
        /// GPU slugs under the baselines directory (default: all).
        gpus: Vec<String>,
        /// The NVRTC version the stored hashes were computed with (the GPU machines').
        #[arg(long, default_value = "13.0")]
        nvrtc: String,
        /// The architecture they were compiled for.
        #[arg(long, default_value = "sm_90a")]
        arch: String,
    },
    /// Move the stored baselines' source hashes to the current rule (a module's hash covers the
    /// local files it includes, not every `kernels/*.cuh`): entries whose hash is the old form of
    /// a current kernel file get its new form and keep their rounds. No GPU needed.
    ///
    /// With `--since REV` it moves instead the hashes of entries timed on the kernels of git
    /// revision REV (or of a directory holding them) wherever the working tree's file compiles to
    /// the same cubin, byte for byte (NVRTC here, no GPU): comment edits and refactors the
    /// compiler sees through keep their baselines; files whose machine code changed restart.
    Rehash {
        /// The NVRTC version the stored hashes were computed with (the GPU machines').
        #[arg(long, default_value = "13.0")]
        nvrtc: String,
        /// The architecture they were compiled for.
        #[arg(long, default_value = "sm_90a")]
        arch: String,
        /// Compare the machine code against the kernels of this git revision or directory.
        #[arg(long, value_name = "REV")]
        since: Option<String>,
        /// With `--since`: print the comparison, change no baseline.
        #[arg(long, requires = "since")]
        dry_run: bool,
        /// Rewrite stored code hashes computed before session 39 (which changed for every
        /// entry of a file that gained an entry point) into the current form, for the machine
        /// code of the working tree's kernels (NVRTC here, no GPU).
        #[arg(long, conflicts_with = "since")]
        code_hashes: bool,
    },
    /// The spread stored in baselines per family (within and between machines), the entries to
    /// refresh (measured on one machine; long ones timed without the duty-cycle hold) and the
    /// absolute floor derived from tiny kernels measured on several machines.
    Spread {
        /// GPU slugs under the baselines directory (default: all).
        gpus: Vec<String>,
    },
    /// Replay the gate over the stored rounds, each machine in turn left out of its entries:
    /// false regressions a new machine would see, and how often a 10% / 20% slowdown is caught.
    Crossval {
        /// GPU slugs under the baselines directory (default: all).
        gpus: Vec<String>,
        /// Print JSON instead of tables.
        #[arg(long)]
        json: bool,
        /// Replay at each of these absolute floors (µs, comma-separated, e.g. `0,0.2,0.4,0.65`)
        /// and print how false regressions and caught slowdowns move with it, instead of the
        /// replay at the configured floor.
        #[arg(long, value_delimiter = ',', value_parser = parse_floor_us)]
        floors: Vec<f64>,
    },
}

/// Prints `items` as one pretty JSON list, or each rendered as Markdown.
fn print_reports<T: serde::Serialize>(items: &[T], json: bool, render: impl Fn(&T) -> String) {
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(items).expect("reports serialise")
        );
    } else {
        for it in items {
            println!("{}", render(it));
        }
    }
}

/// One value of `crossval --floors`: a finite number of µs, at least 0.
fn parse_floor_us(v: &str) -> std::result::Result<f64, String> {
    match v.trim().parse::<f64>() {
        Ok(f) if f.is_finite() && f >= 0.0 => Ok(f),
        _ => Err(format!("{v:?} is not a floor in µs (a number ≥ 0)")),
    }
}

/// `kernelgate run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Suite name under fixtures/ or a path to a suite JSON.
    #[arg(long, short, default_value = "default")]
    pub suite: String,
    /// Only these kernel families (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub kernels: Vec<String>,
    /// Only these backends (comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub backends: Vec<String>,
    /// Only these dtypes (comma-separated: bf16, fp16, fp32).
    #[arg(long, value_delimiter = ',')]
    pub dtype: Vec<String>,
    /// Warm-up time per case in ms.
    #[arg(long)]
    pub warmup_ms: Option<f64>,
    /// Fewest timed samples per case.
    #[arg(long)]
    pub min_samples: Option<usize>,
    /// Time cap for sampling one case: `2s`, `500ms` or a number of ms.
    #[arg(long, value_parser = parse_ms)]
    pub max_time: Option<f64>,
    /// Compare outputs with the float64 reference (the default).
    #[arg(long, overrides_with = "skip_verify")]
    pub verify: bool,
    /// Skip the reference comparison (outputs are still scanned for NaN/Inf; results say `verified: false`).
    #[arg(long, overrides_with = "verify")]
    pub skip_verify: bool,
    /// Write the results file here (default: a new file in the results directory).
    #[arg(long, short)]
    pub output: Option<PathBuf>,
    /// Regression tolerance in percent for every case.
    #[arg(long)]
    pub tolerance_pct: Option<f64>,
    /// Input seed (default: fresh per run).
    #[arg(long)]
    pub seed: Option<u64>,
    /// No progress bar (it is off anyway when stderr is not a terminal).
    #[arg(long)]
    pub no_progress: bool,
    /// Same-run A/B: compile our kernels from this git revision (or directory holding
    /// `kernels/`) too and time both in alternation (overrides `KERNELGATE_BASE`).
    #[arg(long)]
    pub base: Option<String>,
    /// Run only shard K of N (`K/N`): the same cases as
    /// `cargo nextest run --partition count:K/N` with the same filters.
    #[arg(long)]
    pub shard: Option<crate::shard::Shard>,
    /// Run on several GPUs at once: `all` or a comma list of ordinals (`0,1`); each case runs
    /// on one device, the longest cases first (overrides `KERNELGATE_DEVICES` and
    /// `KERNELGATE_DEVICE`).
    #[arg(long)]
    pub devices: Option<String>,
}

/// `kernelgate report`.
#[derive(Debug, Args)]
pub struct ReportArgs {
    /// Results files.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Backend the speedups are against (`gemm` falls back to `cublas` when it is absent).
    #[arg(long, default_value = crate::speedup::DEFAULT_BASELINE)]
    pub baseline_backend: String,
    /// Write the Markdown here (default: stdout, unless --csv is given).
    #[arg(long)]
    pub markdown: Option<PathBuf>,
    /// Write the CSV here.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

/// Chart formats on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    /// PNG.
    Png,
    /// SVG.
    Svg,
}

/// `kernelgate plot`.
#[derive(Debug, Args)]
pub struct PlotArgs {
    /// Results files.
    #[arg(required = true)]
    pub inputs: Vec<PathBuf>,
    /// Output directory.
    #[arg(long, short, default_value = "target/kernelgate/charts")]
    pub out_dir: PathBuf,
    /// Backend the speedups are against (`gemm` falls back to `cublas` when it is absent).
    #[arg(long, default_value = crate::speedup::DEFAULT_BASELINE)]
    pub baseline_backend: String,
    /// Formats (comma-separated).
    #[arg(long, value_delimiter = ',', default_values = ["png", "svg"])]
    pub format: Vec<FormatArg>,
}

/// Parses `2s`, `500ms`, `1.5s` or a bare number of milliseconds into milliseconds.
pub fn parse_ms(s: &str) -> Result<f64, String> {
    let s = s.trim();
    let (num, scale) = if let Some(n) = s.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = s.strip_suffix('s') {
        (n, 1e3)
    } else {
        (s, 1.0)
    };
    let v: f64 = num
        .trim()
        .parse()
        .map_err(|_| format!("{s:?} is not a duration (e.g. 2s, 500ms)"))?;
    if !(v.is_finite() && v >= 0.0) {
        return Err(format!("{s:?} must be a finite duration ≥ 0"));
    }
    Ok(v * scale)
}

/// The exit status an error maps to.
pub fn exit_code(e: &Error) -> u8 {
    match e {
        Error::NoGpu(_) => EXIT_NO_GPU,
        Error::Io { .. }
        | Error::Suite { .. }
        | Error::Baseline { .. }
        | Error::Results { .. }
        | Error::Case { .. }
        | Error::Env { .. }
        | Error::Json { .. } => EXIT_INPUT,
        _ => EXIT_FAILED,
    }
}

fn fail(e: Error) -> ExitCode {
    eprintln!("kernelgate: {e}");
    ExitCode::from(exit_code(&e))
}

/// Loads and merges results files (a single file is only checked).
pub fn load_inputs(paths: &[PathBuf]) -> crate::Result<ResultsFile> {
    if let [one] = paths {
        crate::merge::load(one)
    } else {
        crate::merge::merge_paths(paths)
    }
}

/// A kernel file named on `compile`'s command line as the name the project's kernel directory
/// `kernels` holds it under: a bare name, or a path whose directory is that one
/// (`kernels/gemm.cu`, `./kernels/gemm.cu` and `gemm.cu` name the same file from the project's
/// root). A path into another directory (a patched copy elsewhere) is an error naming both
/// directories: compiling the project's file of the same name instead would report on other code.
fn kernel_file_name(arg: &str, kernels: &Path) -> crate::Result<String> {
    let path = Path::new(arg);
    let name = path
        .file_name()
        .map_or_else(|| arg.to_string(), |n| n.to_string_lossy().into_owned());
    let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(name);
    };
    let same = match (parent.canonicalize(), kernels.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        Ok(name)
    } else {
        Err(Error::io(
            "compiling",
            path,
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "not in the project's kernel directory {}: `compile` builds the project's \
                     kernels (name one, or set KERNELGATE_ROOT to the root whose kernels/ holds \
                     this file)",
                    kernels.display()
                ),
            ),
        ))
    }
}

/// `compile`'s `-D` values as NVRTC options: a value starting with `-` is an option as given,
/// any other a definition (`NAME=VALUE` becomes `-DNAME=VALUE`).
fn nvrtc_options(values: &[String]) -> Vec<String> {
    values
        .iter()
        .map(|v| {
            if v.starts_with('-') {
                v.clone()
            } else {
                format!("-D{v}")
            }
        })
        .collect()
}

/// The kernel sources (`*.cu`) of `dir`, by name.
fn kernel_sources(dir: &Path) -> crate::error::Result<Vec<String>> {
    Ok(crate::files::with_extension(dir, "cu")?
        .iter()
        .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
        .collect())
}

/// The device block printed before a run and by `gpu-info`.
pub fn gpu_block(g: &crate::gpu::GpuInfo) -> String {
    let library = if g.nvrtc_library.is_empty() {
        String::new()
    } else {
        format!(" ({})", g.nvrtc_library)
    };
    format!(
        "GPU {}: {}\n  arch {} (compute capability {}), {} SMs, L2 {:.0} MB, memory {:.1} GB\n  driver {}, CUDA {}, NVRTC {}{library}\n  clocks: SM {} MHz (max {} MHz), memory {} MHz\n",
        g.ordinal,
        g.name,
        g.arch,
        g.compute_capability,
        g.sm_count,
        g.l2_bytes as f64 / 1e6,
        g.memory_bytes as f64 / 1e9,
        g.driver,
        g.cuda,
        g.nvrtc,
        g.sm_clock_mhz,
        g.sm_clock_max_mhz,
        g.mem_clock_mhz
    )
}

fn write_file(path: &Path, text: &str) -> crate::Result<()> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    std::fs::write(path, text).map_err(|e| Error::io("writing", path, e))
}

fn append_step_summary(text: &str) -> crate::Result<()> {
    let Some(p) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return Ok(());
    };
    use std::io::Write;
    let path = PathBuf::from(p);
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .map_err(|e| Error::io("opening GITHUB_STEP_SUMMARY", &path, e))?;
    f.write_all(text.as_bytes())
        .map_err(|e| Error::io("appending to GITHUB_STEP_SUMMARY", &path, e))
}

/// `--tolerance-pct` must be a finite percentage ≥ 0 (`compare`, `rank`).
fn check_tolerance_pct(tolerance_pct: f64) -> crate::Result<()> {
    if tolerance_pct >= 0.0 && tolerance_pct.is_finite() {
        Ok(())
    } else {
        Err(Error::Case {
            case: "--tolerance-pct".into(),
            message: format!("{tolerance_pct} is not a percentage ≥ 0"),
        })
    }
}

fn report(a: &ReportArgs) -> crate::Result<ExitCode> {
    let file = load_inputs(&a.inputs)?;
    let md = crate::tables::markdown(&file, &a.baseline_backend);
    if let Some(p) = &a.markdown {
        write_file(p, &md)?;
        eprintln!("markdown: {}", p.display());
    }
    if let Some(p) = &a.csv {
        write_file(p, &crate::tables::csv(&file, &a.baseline_backend))?;
        eprintln!("csv: {}", p.display());
    }
    if a.markdown.is_none() && a.csv.is_none() {
        print!("{md}");
    }
    append_step_summary(&md)?;
    Ok(ExitCode::SUCCESS)
}

/// `kernelgate rehash --since REV`: compares the machine code of REV's kernels with the working
/// tree's ([`crate::machine_code`]) and, unless `dry_run`, moves the hashes of the files that kept
/// theirs. The local NVRTC must be the version the stored hashes name: the comparison stands for
/// what the GPU machines compiled only when it is their compiler.
fn rehash_since(
    cfg: &Config,
    since: &str,
    nvrtc: &str,
    arch: &str,
    dry_run: bool,
) -> crate::Result<ExitCode> {
    require_nvrtc(since, nvrtc)?;
    let target = cfg.root.join("target").join("kernelgate");
    let old_dir =
        crate::abtest::materialize(&cfg.root, &target, since).map_err(|e| Error::Rehash {
            since: since.to_string(),
            message: e.to_string(),
        })?;
    let new_dir = cfg.root.join("kernels");
    let verdicts = crate::machine_code::compare_dirs(
        &old_dir,
        &new_dir,
        arch,
        nvrtc,
        &mut offline_cubin(arch),
    )?;
    print!(
        "{}",
        crate::machine_code::render(&verdicts, since, arch, nvrtc)
    );
    let map = crate::machine_code::migration(&verdicts);
    if dry_run || map.is_empty() {
        println!(
            "\nNo baseline changed{}.",
            if dry_run { " (--dry-run)" } else { "" }
        );
    } else {
        let sum = crate::baseline::rehash_entries(&cfg.baseline_dir, &map)?;
        println!(
            "\n{} entries rehashed in {} files, {} left (other files, other code, other backends).",
            sum.rewritten, sum.files, sum.left
        );
    }
    Ok(ExitCode::SUCCESS)
}

/// Refuses unless the NVRTC here is `nvrtc`, the version the stored hashes name: another
/// version's cubins would not be the ones that were timed. `what` (the revision, or the flag)
/// names the run in the error.
fn require_nvrtc(what: &str, nvrtc: &str) -> crate::Result<()> {
    let local = crate::gpu::nvrtc_version()?;
    if local == nvrtc {
        return Ok(());
    }
    Err(Error::Rehash {
        since: what.to_string(),
        message: format!(
            "the NVRTC here is {local}, the stored hashes name {nvrtc}: the cubins compiled here would not be the ones that were timed"
        ),
    })
}

/// A kernel file's cubin for `arch` from the NVRTC here, no defines (what `rehash` compares).
fn offline_cubin(arch: &str) -> impl FnMut(&Path, &str) -> crate::Result<Vec<u8>> + '_ {
    move |dir: &Path, file: &str| {
        crate::gpu::compile_offline_cubin(dir, file, arch, &[]).map(|(cubin, _)| cubin)
    }
}

/// `kernelgate rehash --code-hashes`: stored code hashes of the legacy form
/// ([`crate::cubin::entry_code_hash_legacy`]) for the working tree's machine code rewritten
/// into the current one. Like `--since`, only with the NVRTC the stored hashes name.
fn recode(cfg: &Config, nvrtc: &str, arch: &str) -> crate::Result<ExitCode> {
    require_nvrtc("--code-hashes", nvrtc)?;
    let found = crate::machine_code::legacy_code_hash_map(
        &cfg.root.join("kernels"),
        &mut offline_cubin(arch),
    )?;
    let sum = crate::baseline::recode_entries(&cfg.baseline_dir, &found.map)?;
    println!(
        "{} kernel files, {} entry points (NVRTC {nvrtc}, {arch}): {} sets of up to {} entry points mapped; {} entries' code hashes rewritten in {} files, {} left (vendor backends, other code, already current)",
        found.files,
        found.entries,
        found.map.len(),
        crate::machine_code::MOST_ENTRIES_PER_CASE,
        sum.rewritten,
        sum.files,
        sum.left
    );
    Ok(ExitCode::SUCCESS)
}

fn config() -> crate::Result<Config> {
    Config::from_env()
}

/// Runs the command line `args` (including the program name).
pub fn main_with<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { EXIT_INPUT } else { 0 });
        }
    };
    let r: crate::Result<ExitCode> = match cli.command {
        Command::Run(a) => config().and_then(|cfg| run::run(cfg, &a)),
        Command::List { suite, shard } => config().and_then(|mut cfg| {
            cfg.suite = suite;
            let s = crate::suite::Suite::load(&cfg.suite_path())?;
            let cases = match shard {
                Some(sh) => sh.select(s.cases.clone(), |c| c.name()),
                None => s.cases.clone(),
            };
            for c in &cases {
                println!("{}", c.name());
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Merge { inputs, output } => crate::merge::merge_paths(&inputs).and_then(|m| {
            crate::merge::write(&output, &m)?;
            let gpus: Vec<String> = m.all_gpus().into_iter().map(|g| g.name).collect();
            eprintln!(
                "merged {} files: {} records on {} into {}",
                inputs.len(),
                m.results.len(),
                gpus.join(", "),
                output.display()
            );
            Ok(ExitCode::SUCCESS)
        }),
        Command::Report(a) => report(&a),
        Command::Compare {
            a,
            b,
            tolerance_pct,
        } => (|| {
            check_tolerance_pct(tolerance_pct)?;
            let fa = crate::merge::load(&a)?;
            let fb = crate::merge::load(&b)?;
            let rows = crate::compare::compare(&fa, &fb, tolerance_pct);
            println!("A = {}\nB = {}\n", a.display(), b.display());
            print!("{}", crate::compare::render(&rows, tolerance_pct));
            Ok(if crate::compare::any_slow(&rows) {
                ExitCode::from(EXIT_FAILED)
            } else {
                ExitCode::SUCCESS
            })
        })(),
        Command::Rank {
            runs,
            tolerance_pct,
        } => (|| {
            check_tolerance_pct(tolerance_pct)?;
            let specs = crate::rank::parse_runs(&runs)?;
            for s in &specs {
                let files: Vec<String> = s.paths.iter().map(|p| p.display().to_string()).collect();
                println!("{} = {}", s.label, files.join(", "));
            }
            println!();
            let loaded = crate::rank::load(&specs)?;
            print!(
                "{}",
                crate::rank::render(&crate::rank::rank(&loaded, tolerance_pct))
            );
            Ok(ExitCode::SUCCESS)
        })(),
        Command::Plot(a) => load_inputs(&a.inputs).and_then(|file| {
            let formats: Vec<crate::charts::Format> = a
                .format
                .iter()
                .map(|f| match f {
                    FormatArg::Png => crate::charts::Format::Png,
                    FormatArg::Svg => crate::charts::Format::Svg,
                })
                .collect();
            let files = crate::charts::plot(&file, &a.out_dir, &a.baseline_backend, &formats)?;
            for f in &files {
                println!("{}", f.display());
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Compile {
            arch,
            files,
            options,
            repeat,
        } => config().and_then(|cfg| {
            let dir = cfg.root.join("kernels");
            let files = if files.is_empty() {
                kernel_sources(&dir)?
            } else {
                files
                    .iter()
                    .map(|f| kernel_file_name(f, &dir))
                    .collect::<crate::Result<Vec<_>>>()?
            };
            let mut extra = nvrtc_options(&options);
            extra.push("--ptxas-options=-v".to_string());
            let mut outcomes = Vec::new();
            for f in &files {
                let outcome = match crate::gpu::compile_offline(&dir, f, &arch, &extra) {
                    Ok(log) => crate::kernel_report::FileOutcome::Ok(
                        crate::kernel_report::parse_ptxas(&log),
                    ),
                    // No NVRTC or no CUDA headers: nothing can compile, say so once.
                    Err(e @ (Error::NoGpu(_) | Error::Headers { .. })) => return Err(e),
                    Err(e) => crate::kernel_report::FileOutcome::Failed(e.to_string()),
                };
                outcomes.push((f.clone(), outcome));
            }
            let nvrtc = crate::gpu::nvrtc_version()?;
            print!(
                "{}",
                crate::kernel_report::render(&arch, &nvrtc, &outcomes)
            );
            if repeat > 1 {
                // The harness's options (no ptxas report), each file that compiled above.
                let opts = nvrtc_options(&options);
                let mut varied = Vec::new();
                for (f, o) in &outcomes {
                    if !matches!(o, crate::kernel_report::FileOutcome::Ok(_)) {
                        continue;
                    }
                    let cubins = (0..repeat)
                        .map(|_| {
                            crate::gpu::compile_offline_cubin(&dir, f, &arch, &opts).map(|c| c.0)
                        })
                        .collect::<crate::Result<Vec<_>>>()?;
                    let codes = crate::compile_variation::entry_codes(&cubins).map_err(|m| {
                        Error::Compile {
                            file: f.clone(),
                            options: opts.join(" "),
                            log: format!("its cubin could not be taken apart: {m}"),
                        }
                    })?;
                    varied.push((f.clone(), codes));
                }
                print!(
                    "{}",
                    crate::compile_variation::render(repeat as usize, &varied)
                );
            }
            let failed = outcomes
                .iter()
                .any(|(_, o)| matches!(o, crate::kernel_report::FileOutcome::Failed(_)));
            Ok(if failed {
                ExitCode::from(EXIT_FAILED)
            } else {
                ExitCode::SUCCESS
            })
        }),
        Command::GpuInfo { json } => config().and_then(|cfg| {
            let g = crate::gpu::Gpu::open(cfg.device, &cfg.root.join("kernels"), &cfg.cache_dir)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&g.info).expect("GpuInfo serialises")
                );
            } else {
                print!("{}", gpu_block(&g.info));
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Selftest {
            case,
            suite,
            runs,
            levels,
            output,
        } => config().and_then(|mut cfg| {
            cfg.suite = suite;
            let s = crate::suite::Suite::load(&cfg.suite_path())?;
            let c = s
                .cases
                .iter()
                .find(|c| c.name() == case)
                .ok_or_else(|| Error::Case {
                    case: case.clone(),
                    message: format!("not a case of suite {}", s.name),
                })?;
            let r = crate::selftest::run(&cfg, c, runs.max(1), &levels)?;
            if let Some(p) = output {
                let text = serde_json::to_string_pretty(&r).map_err(|e| Error::Json {
                    what: p.display().to_string(),
                    source: e,
                })?;
                crate::baseline::write_atomic(&p, text.as_bytes())?;
            }
            print!("{}", r.render());
            Ok(if r.passed() {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(EXIT_FAILED)
            })
        }),
        Command::Import {
            inputs,
            retire_unwindowed,
            cases,
            skip_cases,
            exact,
            existing_only,
        } => config().and_then(|cfg| {
            let mut files = Vec::new();
            for p in &inputs {
                files.push(crate::results::load(p)?);
            }
            let left_out = crate::results::keep_cases(&mut files, &cases, exact);
            let skipped = crate::results::skip_cases(&mut files, &skip_cases, exact);
            let store = crate::baseline::Store::new(cfg.baseline_dir.clone());
            let unstored = if existing_only {
                crate::baseline::keep_stored(&store, &mut files)?
            } else {
                0
            };
            let sum = crate::baseline::import_results(&store, &files, retire_unwindowed)?;
            println!("{}", sum.render(inputs.len(), &cfg.baseline_dir));
            print!("{}", sum.render_restarts(10));
            if left_out > 0 {
                println!("{left_out} records left out: their cases match no --case pattern");
            }
            if skipped > 0 {
                println!("{skipped} records left out: their cases match a --skip-case pattern");
            }
            if unstored > 0 {
                println!("{unstored} records left out: their cases have no baseline entry (--existing-only)");
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Coverage {
            suites,
            gpus,
            nvrtc,
            arch,
        } => config().and_then(|mut cfg| {
            let models = baseline_files(&cfg, gpus)?;
            let current: std::collections::BTreeSet<String> =
                crate::gpu::current_hashes(&cfg.root.join("kernels"), &arch, &nvrtc)?
                    .into_keys()
                    .collect();
            let mut rows = Vec::new();
            for name in &suites {
                cfg.suite = name.clone();
                let suite = crate::suite::Suite::load(&cfg.suite_path())?;
                for (slug, files) in &models {
                    rows.push(crate::sensitivity::coverage(
                        name,
                        &suite.cases,
                        slug,
                        files,
                        Some(&current),
                    ));
                }
            }
            print!("{}", crate::sensitivity::render_coverage(&rows));
            Ok(ExitCode::SUCCESS)
        }),
        Command::Rehash {
            nvrtc,
            arch,
            since: Some(since),
            dry_run,
            ..
        } => config().and_then(|cfg| rehash_since(&cfg, &since, &nvrtc, &arch, dry_run)),
        Command::Rehash {
            nvrtc,
            arch,
            code_hashes: true,
            ..
        } => config().and_then(|cfg| recode(&cfg, &nvrtc, &arch)),
        Command::Rehash { nvrtc, arch, .. } => config().and_then(|cfg| {
            let map = crate::gpu::hash_migration(&cfg.root.join("kernels"), &arch, &nvrtc)?;
            let moved = map.iter().filter(|(old, (new, _))| old != &new).count();
            let sum = crate::baseline::rehash_entries(&cfg.baseline_dir, &map)?;
            println!(
                "{} kernel files ({moved} with a new hash, NVRTC {nvrtc}, {arch}); {} entries rehashed in {} files, {} left (other backends, other code, already current)",
                map.len(),
                sum.rewritten,
                sum.files,
                sum.left
            );
            Ok(ExitCode::SUCCESS)
        }),
        Command::Spread { gpus } => config().and_then(|cfg| {
            for (slug, files) in baseline_files(&cfg, gpus)? {
                println!("{}", crate::sensitivity::render_spread(&slug, &files));
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Crossval { gpus, json, floors } => config().and_then(|cfg| {
            let rule = crate::gate::Rule {
                tolerance: cfg
                    .tolerance_pct
                    .unwrap_or(crate::config::DEFAULT_TOLERANCE_PCT)
                    / 100.0,
                floor_ms: cfg.floor_us / 1e3,
            };
            let files = baseline_files(&cfg, gpus)?;
            if floors.is_empty() {
                let reports: Vec<crate::crossval::Report> = files
                    .into_iter()
                    .map(|(slug, files)| crate::crossval::replay(&slug, &files, rule))
                    .collect();
                print_reports(&reports, json, crate::crossval::render);
            } else {
                let sweeps: Vec<crate::crossval::Sweep> = files
                    .into_iter()
                    .map(|(slug, files)| crate::crossval::Sweep {
                        rows: crate::crossval::sweep(&slug, &files, rule.tolerance, &floors),
                        gpu: slug,
                    })
                    .collect();
                print_reports(&sweeps, json, crate::crossval::render_sweep);
            }
            Ok(ExitCode::SUCCESS)
        }),
        Command::Roofline { json } => config().and_then(|cfg| {
            let r = crate::roofline::measure(&cfg)?;
            if json {
                println!(
                    "{}",
                    serde_json::to_string_pretty(&r).expect("Roofline serialises")
                );
            } else {
                print!("{}", crate::roofline::render(&r));
            }
            Ok(ExitCode::SUCCESS)
        }),
    };
    r.unwrap_or_else(fail)
}

/// Runs the process's command line.
pub fn main() -> ExitCode {
    main_with(std::env::args_os())
}

/// The baseline files of each GPU slug in `gpus` (all slugs under the baselines directory when
/// empty), sorted by slug and file name.
fn baseline_files(
    cfg: &crate::config::Config,
    gpus: Vec<String>,
) -> crate::Result<Vec<(String, Vec<crate::baseline::BaselineFile>)>> {
    let mut slugs = gpus;
    if slugs.is_empty() {
        slugs = crate::files::subdirs(&cfg.baseline_dir)?
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().to_string())
            .collect();
    }
    let mut out = Vec::new();
    for slug in slugs {
        let dir = cfg.baseline_dir.join(&slug);
        let mut files = Vec::new();
        for p in crate::files::with_extension(&dir, "json")? {
            if let Some(f) = crate::baseline::load_file(&p)? {
                files.push(f);
            }
        }
        out.push((slug, files));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compile_takes_kernel_files_by_name_or_path() {
        let root = tempfile::tempdir().unwrap();
        let kernels = root.path().join("kernels");
        std::fs::create_dir(&kernels).unwrap();
        let abs = kernels.join("gemm.cu").to_string_lossy().into_owned();
        let dotted = format!("{}/./kernels/gemm.cu", root.path().display());
        for arg in ["gemm.cu", abs.as_str(), dotted.as_str()] {
            assert_eq!(kernel_file_name(arg, &kernels).unwrap(), "gemm.cu", "{arg}");
        }
        // relative to the working directory, as from the project's root (cargo runs the unit
        // tests in the package's root, which holds `kernels/`)
        let here = std::env::current_dir().unwrap().join("kernels");
        assert!(here.is_dir(), "{} is not a directory", here.display());
        for arg in ["kernels/gemm.cu", "./kernels/gemm.cu"] {
            assert_eq!(kernel_file_name(arg, &here).unwrap(), "gemm.cu", "{arg}");
        }
    }

    #[test]
    fn compile_refuses_a_kernel_file_outside_the_project_kernels() {
        // A patched copy elsewhere must not be reported as the project's file of that name.
        let root = tempfile::tempdir().unwrap();
        let kernels = root.path().join("kernels");
        let copy = root.path().join("copy");
        std::fs::create_dir(&kernels).unwrap();
        std::fs::create_dir(&copy).unwrap();
        let arg = copy.join("gemm_wgmma.cu").to_string_lossy().into_owned();
        let e = kernel_file_name(&arg, &kernels).unwrap_err().to_string();
        assert!(
            e.contains(&arg) && e.contains(&kernels.display().to_string()),
            "{e}"
        );
        assert!(e.contains("KERNELGATE_ROOT"), "{e}");
        // a directory that does not exist either
        let e = kernel_file_name("/no/such/dir/gemm.cu", &kernels)
            .unwrap_err()
            .to_string();
        assert!(e.contains("/no/such/dir/gemm.cu"), "{e}");
    }

    #[test]
    fn compile_definitions_become_nvrtc_options() {
        let v = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            nvrtc_options(&v(&["MHA_WG_BN_D128=176", "GV_ROWWISE_16", "-lineinfo"])),
            v(&["-DMHA_WG_BN_D128=176", "-DGV_ROWWISE_16", "-lineinfo"])
        );
        let cli = Cli::try_parse_from([
            "kernelgate",
            "compile",
            "--arch",
            "sm_80",
            "-D",
            "X=1",
            "--option=-lineinfo",
            "gemm_mtc.cu",
        ])
        .unwrap();
        match cli.command {
            Command::Compile {
                arch,
                files,
                options,
                repeat,
            } => {
                assert_eq!(repeat, 1);
                assert_eq!(arch, "sm_80");
                assert_eq!(files, v(&["gemm_mtc.cu"]));
                assert_eq!(nvrtc_options(&options), v(&["-DX=1", "-lineinfo"]));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn compile_repeat_is_a_count_from_one_to_a_hundred() {
        let repeat = |n: &str| {
            Cli::try_parse_from(["kernelgate", "compile", "--repeat", n, "gemm.cu"]).map(
                |c| match c.command {
                    Command::Compile { repeat, .. } => repeat,
                    other => panic!("{other:?}"),
                },
            )
        };
        assert_eq!(repeat("8").unwrap(), 8);
        assert_eq!(repeat("100").unwrap(), 100);
        for bad in ["0", "101", "two"] {
            assert!(repeat(bad).is_err(), "{bad}");
        }
    }
}
