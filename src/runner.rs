//! One case end to end: inputs → run → verify → time → compare with the baseline → record.
//!
//! GPU work is serialised per device by the [`Session`]'s device slots, whatever libtest's
//! `--test-threads` says: one case at a time per device, each case pinned to one device. After
//! a fault the device's context is torn down and its next case starts on a fresh one, so one
//! case's fault is never blamed on the next; a device whose context cannot be recreated (a
//! sticky fault) or that hung is retired and the run goes on on the others.

use crate::backend::{self, Bindings};
use crate::baseline::{Entry, Provenance, Store};
use crate::case::Case;
use crate::config::Config;
use crate::devices::{AllDead, Dead, HostLocks, Pool, Step};
use crate::error::{Error, Result};
use crate::family::{self, Init};
use crate::gate::{self, Change};
use crate::gpu::{Gpu, KernelArg};
use crate::results::{AbOutcome, Record, Verdict, Writer};
use crate::stats::Stats;
use crate::timing::{self, Samples};
use crate::verify;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

/// What happened to a case.
#[derive(Debug)]
pub enum Outcome {
    /// It ran; the record holds the verdict.
    Ran(Box<Record>),
    /// It could not run here, for a reason that is not a failure (too big for this card).
    Skipped(String),
}

/// Per-process state shared by all trials: configuration, the devices, stores.
///
/// The devices are a [`Pool`] of slots, one per device of the run (one unless
/// `KERNELGATE_DEVICES` or `--devices` names several), each with a lazily opened [`Gpu`]
/// (its NVRTC modules, cuBLAS handle and external workers) behind its own lock. A case leases
/// whichever slot is free and keeps it from its checked run to its last timed round.
///
/// When the devices are configured (`KERNELGATE_DEVICES` or `--devices`, even naming one), a
/// lease also holds its device's host-wide lock ([`device_locks`]), so kernelgate processes on
/// one host (cargo-nextest's process per case, two `cargo test` runs) never use a device at
/// once: each case takes the first device that is free here and in every other process. The
/// default single device (`KERNELGATE_DEVICE`) takes no lock, as before.
pub struct Session {
    /// Configuration.
    pub cfg: Config,
    /// Run seed.
    pub seed: u64,
    devices: OnceLock<std::result::Result<Pool<GpuSlot>, String>>,
    /// Baseline store.
    pub store: Store,
    /// Results writer (created with the first device opened), shared by all devices.
    writer: Mutex<Option<Arc<Writer>>>,
    suite: String,
    suite_workers: std::collections::BTreeMap<String, String>,
    results_file: Option<std::path::PathBuf>,
}

/// One device's state.
#[derive(Default)]
struct GpuSlot {
    gpu: Option<Gpu>,
    /// External workers pinned to this device: running ones by backend name, and backends
    /// found unavailable.
    workers: crate::backend::worker::Pool,
}

/// A fresh run seed from the clock and the process id.
pub fn fresh_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    crate::inputs::fmix64(t ^ ((std::process::id() as u64) << 32))
}

/// The seed of one problem: the run seed mixed with the problem's name, so every backend
/// of one problem sees the same inputs and different problems see different ones.
pub fn case_seed(run_seed: u64, case: &Case) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in case.problem().bytes() {
        h = (h ^ b as u64).wrapping_mul(0x0000_0100_0000_01b3);
    }
    crate::inputs::fmix64(run_seed ^ h)
}

/// The ordinals of `cfg`'s devices. Several devices (`cfg.devices`) are resolved against the
/// driver's device count; a single device is only checked when `check` is set.
pub fn device_ordinals(cfg: &Config, check: bool) -> std::result::Result<Vec<usize>, String> {
    match &cfg.devices {
        None => {
            if check {
                crate::gpu::detect(cfg.device)?;
            }
            Ok(vec![cfg.device])
        }
        Some(spec) => spec.resolve(crate::gpu::device_count()?, cfg.devices_origin),
    }
}

/// The host-wide locks a session under `cfg` takes for its devices `ordinals`: none for the
/// default single device (no `KERNELGATE_DEVICES`, no `--devices`); otherwise one per device in
/// the system's temporary directory ([`HostLocks::default_dir`]), keyed by the device's UUID
/// (one physical GPU has one UUID in every process, whatever `CUDA_VISIBLE_DEVICES` makes its
/// ordinal there), or by its ordinal when the driver does not say.
pub fn device_locks(cfg: &Config, ordinals: &[usize]) -> Option<HostLocks> {
    cfg.devices.as_ref()?;
    let keys = ordinals
        .iter()
        .map(|&d| crate::gpu::device_uuid(d).unwrap_or_else(|| d.to_string()))
        .collect();
    Some(HostLocks::new(HostLocks::default_dir(), keys))
}

impl Session {
    /// A session for `suite` under `cfg`.
    pub fn new(cfg: Config, suite: &str) -> Session {
        let seed = cfg.seed.unwrap_or_else(fresh_seed);
        Session {
            store: Store::new(cfg.baseline_dir.clone()),
            cfg,
            seed,
            devices: OnceLock::new(),
            writer: Mutex::new(None),
            suite: suite.to_string(),
            suite_workers: Default::default(),
            results_file: None,
        }
    }

    /// Adds the suite's external backends (name → worker command).
    pub fn with_workers(mut self, workers: std::collections::BTreeMap<String, String>) -> Session {
        self.suite_workers = workers;
        self
    }

    /// Writes the results to `path` instead of a new file in the results directory.
    pub fn with_results_file(mut self, path: impl Into<std::path::PathBuf>) -> Session {
        self.results_file = Some(path.into());
        self
    }

    /// The results writer, if any case has run.
    pub fn writer(&self) -> Option<Arc<Writer>> {
        self.writer
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    fn pool(&self) -> Result<&Pool<GpuSlot>> {
        self.devices
            .get_or_init(|| {
                device_ordinals(&self.cfg, false).map(|v| {
                    // Configured devices are shared with the host's other kernelgate processes.
                    let locks = device_locks(&self.cfg, &v);
                    let pool = Pool::new(v, |_| GpuSlot::default());
                    match locks {
                        Some(l) => pool.with_host_locks(l),
                        None => pool,
                    }
                })
            })
            .as_ref()
            .map_err(|e| Error::NoGpu(e.clone()))
    }

    /// The ordinals of the devices this session runs on, or why there is none (checks the
    /// driver; opens nothing).
    pub fn devices(&self) -> std::result::Result<Vec<usize>, String> {
        device_ordinals(&self.cfg, true)
    }

    /// The case whose fault lost this process's CUDA context, if one did and no other device
    /// is left: later cases must run in a fresh process (the test harness re-runs each in a
    /// child process).
    pub fn context_lost(&self) -> Option<String> {
        let pool = self.devices.get()?.as_ref().ok()?;
        let dead = pool.dead();
        if dead.len() < pool.len() {
            return None;
        }
        dead.into_iter().find_map(|(_, d)| match d {
            Dead::Lost(c) => Some(c),
            _ => None,
        })
    }

    /// Opens the (first) device, as the first case would, and returns its facts.
    pub fn open(&self) -> Result<crate::gpu::GpuInfo> {
        let pool = self.pool()?;
        let multi = pool.len() > 1;
        let mut lease = pool
            .acquire_slot(0)
            .map_err(|d| self.no_device(AllDead(vec![(pool.ordinals()[0], d)]), multi))?;
        let ordinal = lease.ordinal();
        self.ensure_open(&mut lease, ordinal, multi)?;
        Ok(lease.gpu.as_ref().expect("opened above").info.clone())
    }

    /// Opens every device of the session and returns each one's facts or error, by ordinal.
    /// With several devices, one that cannot be opened is retired (its cases go to the others).
    pub fn open_all(&self) -> Result<Vec<(usize, Result<crate::gpu::GpuInfo>)>> {
        let pool = self.pool()?;
        let multi = pool.len() > 1;
        let mut out = Vec::new();
        for (i, &ordinal) in pool.ordinals().iter().enumerate() {
            let r = match pool.acquire_slot(i) {
                Err(d) => Err(self.no_device(AllDead(vec![(ordinal, d)]), multi)),
                Ok(mut lease) => match self.ensure_open(&mut lease, ordinal, multi) {
                    Ok(()) => Ok(lease.gpu.as_ref().expect("opened above").info.clone()),
                    Err(e) => {
                        if multi {
                            lease.retire(Dead::Unusable(e.to_string()));
                        }
                        Err(e)
                    }
                },
            };
            out.push((ordinal, r));
        }
        Ok(out)
    }

    /// Opens the slot's device if it is not open. The first device opened creates the results
    /// writer with its facts and ceilings; with several devices every device measures its
    /// ceilings here, one device at a time (under the writer's lock), so the probes of one do
    /// not overlap those of another (opened together before the first case, they overlap no
    /// case either: see [`Session::open_all`]).
    fn ensure_open(&self, slot: &mut GpuSlot, ordinal: usize, multi: bool) -> Result<()> {
        if slot.gpu.is_none() {
            let mut g = open_gpu_on(&self.cfg, ordinal)?;
            let mut w = self.writer.lock().unwrap_or_else(|p| p.into_inner());
            let ceilings = if w.is_none() || multi {
                let _t = crate::timing::exclusive(self.cfg.exclusive_timing);
                g.ceilings().ok()
            } else {
                None
            };
            if w.is_none() {
                let info = Some(g.info.clone());
                let writer = match &self.results_file {
                    Some(p) => Writer::at(p, &self.suite, info, self.seed),
                    None => Writer::new(&self.cfg.results_dir, &self.suite, info, self.seed),
                };
                writer.set_run_facts(ceilings, self.cfg.base.clone());
                writer.set_hold_us(self.cfg.timing.hold_us);
                *w = Some(Arc::new(writer));
            }
            if multi {
                w.as_ref().expect("created above").add_device(&g.info);
            }
            slot.gpu = Some(g);
        }
        Ok(())
    }

    /// The error of a case that found no device left.
    fn no_device(&self, all: AllDead, multi: bool) -> Error {
        let lost = all.0.iter().find_map(|(_, d)| match d {
            Dead::Lost(c) => Some(c.clone()),
            _ => None,
        });
        match (multi, lost) {
            (false, Some(c)) => Error::Driver {
                context: "opening the device".into(),
                message: format!("this process lost its CUDA context to a fault in {c}; run the case in a fresh process"),
            },
            (true, Some(_)) => Error::Driver {
                context: "choosing a device".into(),
                message: format!("{all}; run the case in a fresh process"),
            },
            (false, None) => match all.0.first() {
                Some((_, Dead::Wedged(w))) => {
                    Error::NoGpu(format!("the device is unusable after an earlier hang ({w})"))
                }
                _ => Error::NoGpu(all.to_string()),
            },
            (true, None) => Error::NoGpu(all.to_string()),
        }
    }

    /// Runs one case on a free device (waiting for one), pinned to it for the whole case.
    pub fn run(&self, case: &Case) -> Result<Outcome> {
        self.run_on(case).1
    }

    /// Runs one case as [`Session::run`] does and also says on which device ordinal it ran
    /// (`None` when it found no device).
    pub fn run_on(&self, case: &Case) -> (Option<usize>, Result<Outcome>) {
        let pool = match self.pool() {
            Ok(p) => p,
            Err(e) => return (None, Err(e)),
        };
        let multi = pool.len() > 1;
        let ran = pool.run(|lease| {
            let ordinal = lease.ordinal();
            if let Err(e) = self.ensure_open(lease, ordinal, multi) {
                return if multi {
                    Step::Retry(Dead::Unusable(e.to_string()))
                } else {
                    Step::Done(Err(e))
                };
            }
            match self.run_in_slot(lease, ordinal, case) {
                (r, Some(dead)) => Step::Retire(r, dead),
                (r, None) => Step::Done(r),
            }
        });
        match ran {
            Err(all) => (None, Err(self.no_device(all, multi))),
            Ok((ordinal, result)) => {
                if let Ok(Outcome::Ran(r)) = &result {
                    if let Some(w) = self.writer() {
                        if let Err(e) = w.push((**r).clone()) {
                            return (Some(ordinal), Err(e));
                        }
                    }
                }
                (Some(ordinal), result)
            }
        }
    }

    /// Runs `case` on the opened device of `slot`; a fault or hang says how the slot died
    /// (after a fault the context is reset and reopened: only if that fails is it lost).
    fn run_in_slot(
        &self,
        slot: &mut GpuSlot,
        ordinal: usize,
        case: &Case,
    ) -> (Result<Outcome>, Option<Dead>) {
        let GpuSlot { gpu, workers } = slot;
        let gpu = gpu.as_mut().expect("opened by ensure_open");
        let ext = Externals {
            pool: workers,
            suite_workers: &self.suite_workers,
        };
        // The slot may have been used from another thread before: make its context current here.
        let result = gpu
            .ctx
            .bind_to_thread()
            .map_err(|e| Error::driver(format!("binding the context of device {ordinal}"), e))
            .and_then(|_| run_case(gpu, case, &self.cfg, self.seed, &self.store, ext));
        let healthy = gpu
            .sync(Duration::from_secs(5), "the end of the case")
            .is_ok()
            && gpu.ctx.check_err().is_ok();
        if let Err(Error::Worker { .. }) = &result {
            // A worker that failed a request is restarted for the next case.
            slot.workers.running.remove(&case.backend);
        }
        match &result {
            Err(Error::Hang { .. }) => return (result, Some(Dead::Wedged(case.name()))),
            _ if !healthy || matches!(result, Err(Error::Driver { .. })) => {
                // A fault poisons the context: drop it and reset so the next case starts clean.
                slot.workers.running.clear();
                if let Some(g) = slot.gpu.take() {
                    g.discard();
                }
                reset_device(ordinal);
                // Sticky faults cannot be recovered in-process: probe, and remember if so.
                match open_gpu_on(&self.cfg, ordinal) {
                    Ok(g) => slot.gpu = Some(g),
                    Err(_) => return (result, Some(Dead::Lost(case.name()))),
                }
            }
            _ => {}
        }
        (result, None)
    }
}

/// Opens the configured device with the configured kernel set.
pub fn open_gpu(cfg: &Config) -> Result<Gpu> {
    open_gpu_on(cfg, cfg.device)
}

/// Opens device `ordinal` with the configured kernel set.
pub fn open_gpu_on(cfg: &Config, ordinal: usize) -> Result<Gpu> {
    let mut g = Gpu::open(ordinal, &cfg.root.join("kernels"), &cfg.cache_dir)?;
    g.kernel_set = cfg.kernel_set();
    Ok(g)
}

fn reset_device(ordinal: usize) {
    let mut dev = 0;
    // SAFETY: plain driver calls on a device handle; no live objects of ours remain.
    unsafe {
        if cudarc::driver::sys::cuDeviceGet(&mut dev, ordinal as i32)
            == cudarc::driver::sys::CUresult::CUDA_SUCCESS
        {
            let _ = cudarc::driver::sys::cuDevicePrimaryCtxReset_v2(dev);
        }
    }
}

fn fill_inputs(
    gpu: &mut Gpu,
    case: &str,
    bufs: &[(crate::family::TensorSpec, crate::gpu::DeviceBuffer)],
    seed: u64,
) -> Result<()> {
    let module = gpu.module("fill.cu")?;
    let mut fns = Vec::new();
    for (spec, _) in bufs {
        fns.push(module.function(&format!("kg_fill_{}", spec.dtype))?);
    }
    for (tensor, ((spec, buf), f)) in bufs.iter().zip(fns).enumerate() {
        let (Init::Uniform(u) | Init::Masked(u, _)) = spec.init else {
            continue;
        };
        let dims = gpu.grid_stride_dims(spec.len as u64);
        gpu.launch(
            f,
            dims,
            &[
                KernelArg::Ptr(buf.ptr()),
                KernelArg::U64(spec.len as u64),
                KernelArg::U64(seed),
                KernelArg::U32(tensor as u32),
                KernelArg::F32(u.lo),
                KernelArg::F32(u.hi),
            ],
        )?;
        if let Init::Masked(_, mk) = spec.init {
            mask_columns(gpu, case, spec, buf, mk)?;
        }
    }
    Ok(())
}

/// Sets the columns `mk` names to −inf in every row of `buf` (`kernels/mask.cu`), after its fill
/// on the same stream. A mask that does not fit the tensor (a family bug: suites validate
/// shapes on load) is an error naming `case` and the input.
fn mask_columns(
    gpu: &mut Gpu,
    case: &str,
    spec: &crate::family::TensorSpec,
    buf: &crate::gpu::DeviceBuffer,
    mk: crate::inputs::ColMask,
) -> Result<()> {
    if mk.row == 0 || !spec.len.is_multiple_of(mk.row) || mk.lead + mk.pad > mk.row {
        return Err(Error::Case {
            case: case.to_string(),
            message: format!(
                "column mask (row {}, lead {}, pad {}) does not fit input {} of {} elements",
                mk.row, mk.lead, mk.pad, spec.name, spec.len
            ),
        });
    }
    let rows = (spec.len / mk.row) as u64;
    let masked = rows * (mk.lead + mk.pad) as u64;
    if masked == 0 {
        return Ok(());
    }
    let f = gpu
        .module("mask.cu")?
        .function(&format!("kg_mask_cols_{}", spec.dtype))?;
    let dims = gpu.grid_stride_dims(masked);
    gpu.launch(
        f,
        dims,
        &[
            KernelArg::Ptr(buf.ptr()),
            KernelArg::U64(rows),
            KernelArg::U64(mk.row as u64),
            KernelArg::U64(mk.lead as u64),
            KernelArg::U64(mk.pad as u64),
        ],
    )
}

fn nan_pattern(dtype: crate::case::Dtype) -> (usize, u32) {
    match dtype {
        crate::case::Dtype::Bf16 => (2, 0x7fc0),
        crate::case::Dtype::Fp16 => (2, 0x7e00),
        crate::case::Dtype::Fp32 => (4, 0x7fc0_0000),
    }
}

/// The tolerance in percent that applies to `case`.
pub fn tolerance_pct(cfg: &Config, case: &Case) -> f64 {
    cfg.tolerance_pct
        .or(case.tolerance_pct)
        .unwrap_or(crate::config::DEFAULT_TOLERANCE_PCT)
}

/// The family of `case` (suites validate kernels on load, so a miss names a bug or a hand-made case).
fn family_of(case: &Case) -> Result<&'static dyn family::Family> {
    family::by_name(&case.kernel).ok_or_else(|| Error::Case {
        case: case.name(),
        message: "unknown kernel".into(),
    })
}

/// Compares every expected output with the reference; `fetch(k)` gives output `k`'s raw bytes.
fn check_outputs(
    fam: &dyn family::Family,
    case: &Case,
    outputs: &[crate::family::TensorSpec],
    expected: &[verify::Expected],
    mut fetch: impl FnMut(usize, &verify::Expected) -> Result<Fetched>,
) -> Result<Vec<verify::Check>> {
    let tol = fam.tolerance(&case.shape, case.dtype);
    let mut checks = Vec::new();
    for exp in expected {
        let spec = &outputs[exp.output];
        let fetched = fetch(exp.output, exp)?;
        let d = spec.dtype;
        // An output stored in another dtype than the case's (a 16-bit `dw` of an fp32 case
        // with 16-bit weights) is held to its own dtype's bounds, never tighter than the case's.
        let tol = if d == case.dtype {
            tol
        } else {
            tol.loosest(fam.tolerance(&case.shape, d))
        };
        checks.push(match fetched {
            Fetched::Whole(host) => verify::check_in(
                Some(d),
                spec.name,
                spec.len,
                |i| d.decode(&host, i),
                exp,
                tol,
            ),
            Fetched::Sampled { scan, spans } => verify::check_scanned(
                Some(d),
                spec.name,
                spec.len,
                scan,
                |i| {
                    let k = spans.partition_point(|(start, _)| *start <= i) - 1;
                    d.decode(&spans[k].1, i - spans[k].0)
                },
                exp,
                tol,
            ),
        });
    }
    Ok(checks)
}

/// An output brought to the host for checking.
enum Fetched {
    /// All of it.
    Whole(Vec<u8>),
    /// Scanned for NaN/Inf on the device (count, first index); only the spans holding the
    /// reference's indices were copied, as (first element, bytes).
    Sampled {
        scan: (usize, Option<usize>),
        spans: Vec<(usize, Vec<u8>)>,
    },
}

/// Elements between two reference indices that are still copied as one span rather than two.
const SPAN_GAP: usize = 64;

/// Fetches output buffer `buf` of `spec` for checking against `exp`: whole when it is at most
/// `cfg.device_check_bytes`, else scanned on the device with only the sampled spans copied.
fn fetch_output(
    gpu: &mut Gpu,
    cfg: &Config,
    spec: &crate::family::TensorSpec,
    buf: &crate::gpu::DeviceBuffer,
    exp: &verify::Expected,
    hang: Duration,
    name: &str,
) -> Result<Fetched> {
    if buf.bytes() <= cfg.device_check_bytes {
        return Ok(Fetched::Whole(gpu.download(buf, hang, name)?));
    }
    let scan = gpu.count_non_finite(buf, spec.dtype, hang, name)?;
    let size = spec.dtype.size();
    let spans = verify::index_spans(&exp.indices, SPAN_GAP)
        .into_iter()
        .map(|r| {
            let bytes =
                gpu.download_range(buf, r.start * size, (r.end - r.start) * size, hang, name)?;
            Ok((r.start, bytes))
        })
        .collect::<Result<Vec<_>>>()?;
    Ok(Fetched::Sampled { scan, spans })
}

/// One independent measurement of a case: fresh buffers and inputs, one checked run, timing.
struct Round {
    checks: Vec<verify::Check>,
    timing: Option<(Samples, Stats)>,
    compile_s: f64,
    variant: String,
    source_hash: String,
    /// The code hash of the entry points the case runs ([`crate::gpu::Gpu::code_log_hash`];
    /// empty for vendor libraries and workers).
    code_hash: String,
    /// The entry points `code_hash` covers ([`crate::gpu::Gpu::code_log_entries`]).
    code_entries: Vec<String>,
    /// Same-run A/B (only with `KERNELGATE_BASE`, our own kernels, correct output).
    ab: Option<AbRound>,
    /// Why an external worker could not capture its op in a CUDA graph, if it could not.
    capture_error: Option<String>,
}

/// What the A/B part of a round found.
enum AbRound {
    /// The base compiles to the same sources, or to the same machine code: nothing to compare.
    Identical(String),
    /// The base could not be prepared (e.g. the kernel did not exist there).
    Unavailable(String),
    /// Interleaved samples of base and new.
    Measured { base: Samples, base_hash: String },
}

/// Allocates, fills and poisons, prepares the backend, runs once and checks the output
/// against the reference, then (only if correct) times the kernel. Buffers are freed at the
/// end, so the next round gets fresh allocations.
fn round(
    gpu: &mut Gpu,
    case: &Case,
    cfg: &Config,
    seed: u64,
    expected: &[verify::Expected],
    ext: &mut Externals,
) -> Result<Round> {
    let name = case.name();
    let fam = family_of(case)?;
    let hang = Duration::from_secs_f64(cfg.timing.hang_limit_s);
    let mut inputs = Vec::new();
    for spec in fam.inputs(&case.shape, case.dtype) {
        let buf = gpu.alloc(spec.bytes(), &format!("{name} input {}", spec.name))?;
        inputs.push((spec, buf));
    }
    let mut outputs = Vec::new();
    for spec in fam.outputs(&case.shape, case.dtype) {
        let buf = match spec.init {
            Init::Alias(_) => None,
            _ => Some(gpu.alloc(spec.bytes(), &format!("{name} output {}", spec.name))?),
        };
        outputs.push((spec, buf));
    }
    fill_inputs(gpu, &name, &inputs, seed)?;
    for (k, (spec, buf)) in inputs.iter().enumerate() {
        if spec.init == Init::HostI32 {
            let vals = fam.host_i32(&case.shape, seed, k);
            if vals.len() != spec.len {
                return Err(Error::Case {
                    case: name.clone(),
                    message: format!(
                        "family produced {} values for input {} of {} elements",
                        vals.len(),
                        spec.name,
                        spec.len
                    ),
                });
            }
            let bytes: Vec<u8> = vals.iter().flat_map(|v| v.to_le_bytes()).collect();
            gpu.upload(buf, &bytes)?;
        }
    }
    for (spec, buf) in &outputs {
        if let Some(buf) = buf {
            let (size, pat) = nan_pattern(spec.dtype);
            gpu.fill_pattern(buf, size, pat)?;
        }
    }
    gpu.sync(hang, &format!("{name} input generation"))?;
    if backend::by_name(&case.backend).is_none() {
        return external_round(gpu, case, cfg, expected, ext, &inputs, &outputs);
    }
    let be = backend::by_name(&case.backend).expect("checked above");
    let out_ptr = |spec: &crate::family::TensorSpec, buf: &Option<crate::gpu::DeviceBuffer>| match (
        spec.init, buf,
    ) {
        (Init::Alias(k), _) => inputs[k].1.ptr(),
        (_, Some(b)) => b.ptr(),
        (_, None) => unreachable!("non-alias outputs are allocated"),
    };
    let bind = Bindings {
        inputs: inputs.iter().map(|(_, b)| b.ptr()).collect(),
        outputs: outputs.iter().map(|(s, b)| out_ptr(s, b)).collect(),
    };
    // Our kernels' code hash: the entry points `prepare` looked up. A library backend's code is
    // the library's (its version is its source hash), whatever helper kernels it touches.
    let ours = case.backend == "cuda";
    gpu.start_code_log();
    let mut prepared = be.prepare(gpu, case, &bind, cfg)?;
    let mut code_entries = Vec::new();
    if ours {
        prepared.code_hash = gpu.code_log_hash();
        code_entries = gpu.code_log_entries();
    }

    // Correctness gate: one checked run on poisoned outputs.
    (prepared.launch)(gpu)?;
    gpu.sync(hang, &name)?;
    let specs: Vec<_> = outputs.iter().map(|(spec, _)| spec.clone()).collect();
    let checks = check_outputs(fam, case, &specs, expected, |k, exp| {
        let buf = match (specs[k].init, &outputs[k].1) {
            (Init::Alias(i), _) => &inputs[i].1,
            (_, Some(b)) => b,
            (_, None) => unreachable!("non-alias outputs are allocated"),
        };
        fetch_output(gpu, cfg, &specs[k], buf, exp, hang, &name)
    })?;
    let mut ab = None;
    let timing = if !checks.iter().all(|c| c.passed) {
        None
    } else {
        // Same-run A/B: the base's kernels, prepared over the same buffers, timed in alternation.
        let mut pair = None;
        if let (Some(dir), true) = (&cfg.base_kernels, case.backend == "cuda") {
            let new_set = std::mem::replace(
                &mut gpu.kernel_set,
                crate::gpu::KernelSet::plain(dir.clone()),
            );
            gpu.start_code_log();
            let base = be.prepare(gpu, case, &bind, cfg).map(|mut b| {
                if ours {
                    b.code_hash = gpu.code_log_hash();
                }
                b
            });
            gpu.kernel_set = new_set;
            match base {
                Err(e) if base_unavailable(&e) => {
                    ab = Some(AbRound::Unavailable(e.to_string()));
                }
                Err(e) => return Err(e),
                Ok(b)
                    if b.source_hash == prepared.source_hash
                        || (!b.code_hash.is_empty() && b.code_hash == prepared.code_hash) =>
                {
                    ab = Some(AbRound::Identical(b.source_hash));
                }
                Ok(b) => pair = Some(b),
            }
        }
        // Only the timed phase holds the host-wide lock (KERNELGATE_EXCLUSIVE_TIMING).
        let exclusive = crate::timing::exclusive(cfg.exclusive_timing);
        let s = match pair {
            Some(mut b) => {
                let (sb, sn) = timing::measure_pair(
                    gpu,
                    &name,
                    &cfg.timing,
                    case.flush_l2,
                    &mut b.launch,
                    &mut prepared.launch,
                )?;
                ab = Some(AbRound::Measured {
                    base: sb,
                    base_hash: b.source_hash,
                });
                sn
            }
            None => timing::measure(gpu, &name, &cfg.timing, case.flush_l2, &mut prepared.launch)?,
        };
        drop(exclusive);
        let st = Stats::from_samples(&s.ms).ok_or_else(|| Error::Case {
            case: name.clone(),
            message: "no valid timing samples".into(),
        })?;
        Some((s, st))
    };
    Ok(Round {
        checks,
        timing,
        ab,
        capture_error: None,
        compile_s: prepared.compile_s,
        variant: prepared.variant,
        source_hash: prepared.source_hash,
        code_hash: prepared.code_hash,
        code_entries,
    })
}

/// External backends available to a case: the running workers and the suite's definitions.
pub struct Externals<'a> {
    /// Running workers by backend name (kept across cases, restarted after a failure) and
    /// the backends whose worker could not start.
    pub pool: &'a mut crate::backend::worker::Pool,
    /// The suite's `workers` entries.
    pub suite_workers: &'a std::collections::BTreeMap<String, String>,
}

/// A scratch directory for raw tensor files (in /dev/shm when present), removed on drop.
struct Scratch(std::path::PathBuf);

impl Scratch {
    fn new() -> Result<Scratch> {
        static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let base = if std::path::Path::new("/dev/shm").is_dir() {
            std::path::PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        let dir = base.join(format!(
            "kg-{}-{}",
            std::process::id(),
            N.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).map_err(|e| Error::io("creating", &dir, e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A round on an external backend: inputs made on our device as for every backend, passed
/// to the worker as raw files; its outputs come back as files and get the same checks.
fn external_round(
    gpu: &mut Gpu,
    case: &Case,
    cfg: &Config,
    expected: &[verify::Expected],
    ext: &mut Externals,
    inputs: &[(crate::family::TensorSpec, crate::gpu::DeviceBuffer)],
    outputs: &[(crate::family::TensorSpec, Option<crate::gpu::DeviceBuffer>)],
) -> Result<Round> {
    use crate::backend::worker::{
        self, RunRequest, TensorFile, TimingRequest, Worker, WorkerError,
    };
    let name = case.name();
    let hang = Duration::from_secs_f64(cfg.timing.hang_limit_s);
    let be = case.backend.clone();
    let unavailable = |reason: String| Error::BackendUnavailable {
        backend: be.clone(),
        reason,
    };
    let failed = |message: String| Error::Worker {
        backend: be.clone(),
        message,
    };
    if let Some(why) = ext.pool.unavailable.get(&case.backend) {
        return Err(unavailable(why.clone()));
    }
    if !ext.pool.running.contains_key(&case.backend) {
        let argv =
            worker::command(&case.backend, &cfg.root, ext.suite_workers).ok_or_else(|| {
                unavailable(format!(
                    "backend {be} is neither built in nor an external worker"
                ))
            })?;
        match Worker::spawn_with_env(
            &case.backend,
            &argv,
            &worker::device_env(&gpu.info),
            hang.max(Duration::from_secs(120)),
        ) {
            Ok(w) => {
                ext.pool.running.insert(case.backend.clone(), w);
            }
            Err(WorkerError::Unavailable(m) | WorkerError::Failed(m)) => {
                ext.pool.unavailable.insert(case.backend.clone(), m.clone());
                return Err(unavailable(m));
            }
        }
    }
    let w = ext
        .pool
        .running
        .get_mut(&case.backend)
        .expect("inserted above");
    let dt = case.dtype.to_string();
    if !w
        .hello
        .families
        .get(&case.kernel)
        .is_some_and(|d| d.contains(&dt))
    {
        return Err(unavailable(format!(
            "worker {} ({}) does not implement {} {dt}",
            w.hello.name, w.hello.version, case.kernel
        )));
    }
    let dir = Scratch::new()?;
    let mut in_files = Vec::new();
    for (k, (spec, buf)) in inputs.iter().enumerate() {
        let bytes = gpu.download(buf, hang, &name)?;
        let path = dir.0.join(format!("in{k}.bin"));
        std::fs::write(&path, &bytes).map_err(|e| Error::io("writing worker input", &path, e))?;
        in_files.push(TensorFile {
            name: spec.name.to_string(),
            path,
            dtype: spec.dtype.to_string(),
            len: spec.len,
            int32: spec.init == Init::HostI32,
            alias: None,
        });
    }
    let out_files: Vec<TensorFile> = outputs
        .iter()
        .enumerate()
        .map(|(k, (spec, _))| TensorFile {
            name: spec.name.to_string(),
            path: dir.0.join(format!("out{k}.bin")),
            dtype: spec.dtype.to_string(),
            len: spec.len,
            int32: false,
            alias: match spec.init {
                Init::Alias(i) => Some(i),
                _ => None,
            },
        })
        .collect();
    let t = &cfg.timing;
    let req = RunRequest {
        op: "run".into(),
        case: name.clone(),
        kernel: case.kernel.clone(),
        dtype: dt,
        shape: case.shape.to_json(),
        inputs: in_files,
        outputs: out_files.clone(),
        timing: TimingRequest {
            warmup_ms: t.warmup_ms,
            min_samples: t.min_samples,
            max_samples: t.max_samples,
            max_time_ms: t.max_time_ms,
            target_noise: t.target_noise,
            min_sample_us: t.min_sample_us,
            max_batch: t.max_batch,
            flush_l2: case.flush_l2,
            l2_flush: t.l2_flush,
            hold_us: t.hold_us,
            batch: t.batch,
            soak_ms: t.soak_ms,
            duty_hold: t.duty_hold,
        },
    };
    let budget = hang + Duration::from_secs_f64((t.warmup_ms + t.max_time_ms) / 1e3 * 2.0 + 30.0);
    // The worker checks and times in one request: all of it holds the timing lock.
    let exclusive = crate::timing::exclusive(cfg.exclusive_timing);
    let reply = w.run(&req, budget);
    drop(exclusive);
    let reply = reply.map_err(|e| match e {
        // The worker declined this case (outside what its library implements): ignored.
        WorkerError::Unavailable(m) => unavailable(m),
        WorkerError::Failed(m) => failed(m),
    })?;
    let fam = family_of(case)?;
    let specs: Vec<_> = outputs.iter().map(|(spec, _)| spec.clone()).collect();
    let checks = check_outputs(fam, case, &specs, expected, |k, _| {
        let (spec, f) = (&specs[k], &out_files[k]);
        let host = std::fs::read(&f.path).map_err(|e| {
            failed(format!(
                "backend {be}: output {} not readable at {}: {e}",
                spec.name,
                f.path.display()
            ))
        })?;
        if host.len() != spec.len * spec.dtype.size() {
            return Err(failed(format!(
                "backend {be}: output {} has {} bytes, expected {} ({} × {})",
                spec.name,
                host.len(),
                spec.len * spec.dtype.size(),
                spec.len,
                spec.dtype
            )));
        }
        Ok(Fetched::Whole(host))
    })?;
    let timing = if checks.iter().all(|c| c.passed) {
        let st = Stats::from_samples(&reply.samples_ms)
            .ok_or_else(|| failed(format!("backend {be}: no valid timing samples")))?;
        let samples = Samples {
            ms: reply.samples_ms.clone(),
            batch: reply.batch,
            graph: reply.graph,
            flushed: reply.flushed,
            l2_flush: if reply.flushed { reply.l2_flush } else { None },
            warmup_launches: 0,
            hold_us: reply.hold_us,
            host_enqueue_us: reply.host_enqueue_us,
            late_samples: reply.late_samples,
            duty_hold: reply.duty_hold,
        };
        Some((samples, st))
    } else {
        None
    };
    Ok(Round {
        checks,
        timing,
        ab: None,
        capture_error: reply.graph_error.clone(),
        compile_s: reply.compile_s,
        variant: if reply.variant.is_empty() {
            w.hello.name.clone()
        } else {
            reply.variant
        },
        source_hash: format!("{} {}", w.hello.name, w.hello.version),
        code_hash: String::new(),
        code_entries: Vec::new(),
    })
}

/// Rounds measured when writing a baseline; their spread becomes part of the baseline's noise.
pub const BASELINE_ROUNDS: usize = 3;
/// Most rounds measured for a suspected regression.
pub const GATE_ROUNDS: usize = 3;

/// Runs one case on `gpu`: the whole data flow of the design.
///
/// Each round allocates fresh buffers: on a GPU whose clocks and memory placement vary
/// from one allocation to the next, a baseline is the median of [`BASELINE_ROUNDS`]
/// rounds and records their spread as noise, and a suspected regression is re-measured in
/// fresh rounds (best of [`GATE_ROUNDS`]) before it fails.
pub fn run_case(
    gpu: &mut Gpu,
    case: &Case,
    cfg: &Config,
    run_seed: u64,
    store: &Store,
    mut ext: Externals,
) -> Result<Outcome> {
    let name = case.name();
    let fam = family_of(case)?;
    let seed = case_seed(run_seed, case);

    // Does it fit? Tensors plus the L2 flush buffer, with 5% headroom.
    let need =
        family::device_bytes(fam, &case.shape, case.dtype) as f64 + 2.0 * gpu.info.l2_bytes as f64;
    let (free, _) = gpu.mem_info()?;
    if need > free as f64 * 0.95 {
        return Ok(Outcome::Skipped(
            Error::TooBig {
                case: name,
                need_mb: need / 1e6,
                free_mb: free as f64 / 1e6,
            }
            .to_string(),
        ));
    }
    let expected = if cfg.skip_verify {
        // Still scan every output for NaN/Inf (unwritten elements), but compare nothing.
        fam.outputs(&case.shape, case.dtype)
            .iter()
            .enumerate()
            .map(|(output, _)| verify::Expected {
                output,
                indices: vec![],
                values: vec![],
                slack: Vec::new(),
            })
            .collect()
    } else {
        fam.reference(&case.shape, case.dtype, seed)
    };
    // The stored entry, read before timing: the gate (and an append) times with its batch.
    let stored = if cfg.update_baselines && !cfg.append_baselines {
        None
    } else {
        store.entry(&gpu.info.name, &case.kernel, &name)?
    };
    let case_cfg = case_config(cfg, fam, case, stored.as_ref());
    let cfg = &case_cfg;
    // The GPU's slowdown counters before the case is timed: what they add by its end says
    // whether its clocks were cut while it ran (not only whether they are cut at the end).
    let (uuid, ordinal) = (gpu.info.uuid.clone(), gpu.info.ordinal);
    let mark = (cfg.gpu_state_every_case && cfg.profiler.is_none())
        .then(|| crate::gpu_state::Mark::now(&uuid, ordinal));
    let counted = |m: Option<&crate::gpu_state::Mark>| {
        m.map(|m| m.slowdowns_since(&uuid, ordinal, crate::gpu_state::COUNTED_FRACTION))
            .unwrap_or_default()
    };
    let first = match round(gpu, case, cfg, seed, &expected, &mut ext) {
        Err(Error::BackendUnavailable { reason, .. }) => return Ok(Outcome::Skipped(reason)),
        other => other?,
    };
    let memory_mb = family::device_bytes(fam, &case.shape, case.dtype) as f64 / 1e6;
    let tol_pct = tolerance_pct(cfg, case);
    let mut record = Record {
        case: name.clone(),
        kernel: case.kernel.clone(),
        backend: case.backend.clone(),
        dtype: case.dtype.to_string(),
        arch: gpu.info.arch.clone(),
        gpu_model: gpu.info.name.clone(),
        device_ordinal: Some(gpu.info.ordinal),
        device_uuid: Some(gpu.info.uuid.clone()).filter(|u| !u.is_empty()),
        compute_capability: gpu.info.compute_capability.clone(),
        problem_size: case.shape.to_json(),
        latency_ms: None,
        tflops: None,
        gbps: None,
        roofline_gbps: None,
        roofline_frac: None,
        stats: None,
        samples_ms: vec![],
        batch: 0,
        graph: false,
        l2_flushed: false,
        l2_flush: None,
        hold_us: 0.0,
        host_enqueue_us: 0.0,
        late_samples: 0,
        duty_hold: None,
        compilation_time: first.compile_s,
        variant: first.variant.clone(),
        verdict: Verdict::Wrong,
        baseline_ms: None,
        ratio: None,
        noise: None,
        tolerance_pct: tol_pct,
        measurements: 1,
        checks: first.checks.clone(),
        verified: !cfg.skip_verify,
        seed,
        memory_mb,
        source_hash: first.source_hash.clone(),
        code_hash: first.code_hash.clone(),
        code_entries: first.code_entries.clone(),
        date: crate::timefmt::now_rfc3339(),
        message: String::new(),
        speedup_vs: None,
        machine: String::new(),
        baseline_machines: None,
        baseline_l2_flush: None,
        baseline_duty_hold: None,
        baseline_variant: None,
        baseline_source_hash: None,
        machine_factor: None,
        window_shift_ms: None,
        lower_modes: None,
        own_lower_mode: None,
        floor_ms: None,
        min_detectable: None,
        ab: None,
        capture_error: None,
        gpu_state: None,
        slowdown: Vec::new(),
    };
    let Some((mut samples, mut stats)) = first.timing.clone() else {
        let bad = first
            .checks
            .iter()
            .find(|c| !c.passed)
            .expect("no timing only when a check failed");
        record.message = format!(
            "WRONG OUTPUT: {}\n  backend variant {}; reproduce with KERNELGATE_SEED={run_seed}",
            bad.describe(),
            first.variant
        );
        return Ok(Outcome::Ran(Box::new(record)));
    };
    record.capture_error = first.capture_error.clone();
    let ceilings = match gpu.measured_ceilings() {
        Some(c) => Some(c),
        None => {
            let _t = crate::timing::exclusive(cfg.exclusive_timing);
            gpu.ceilings().ok()
        }
    };
    let machine = ThisMachine {
        key: gpu.info.machine_key(),
        host: gpu.info.host.clone(),
        ceilings,
    };
    let variant = first.variant.clone();
    let stored_round = |st: &Stats, s: &Samples| crate::baseline::Round {
        median_ms: st.median_ms,
        noise: st.noise,
        n: st.n,
        machine: machine.key.clone(),
        host: machine.host.clone(),
        date: crate::timefmt::now_rfc3339(),
        ceilings: machine.ceilings,
        batch: Some(s.batch),
        l2_flush: s.l2_flush,
        duty_hold: s.duty_hold,
        variant: crate::baseline::stored_variant(&variant),
        low: st.low,
    };
    let mut rounds = vec![stored_round(&stats, &samples)];
    // Any later round that turns out wrong is a failure too (e.g. a race that shows up rarely).
    let next_round =
        |gpu: &mut Gpu, record: &mut Record, ext: &mut Externals| -> Result<Option<Round>> {
            let r = round(gpu, case, cfg, seed, &expected, ext)?;
            if let Some(bad) = r.checks.iter().find(|c| !c.passed) {
                record.checks = r.checks.clone();
                record.message = format!(
                "WRONG OUTPUT in a repeated round: {}; reproduce with KERNELGATE_SEED={run_seed}",
                bad.describe()
            );
                return Ok(None);
            }
            Ok(Some(r))
        };

    let tol = tol_pct / 100.0;
    let rule = gate::Rule {
        tolerance: tol,
        floor_ms: cfg.floor_us / 1e3,
    };
    let fam_memory_bound = fam.memory_bound();
    // Under a profiler the samples time the profiler too: nothing to compare (see Ungated).
    let base = if cfg.update_baselines || cfg.profiler.is_some() {
        None
    } else {
        stored
    };
    let factor = base
        .as_ref()
        .and_then(|b| gate::machine_factor(fam_memory_bound, b.ceilings(), machine.ceilings));
    // What this machine's timed window costs per launch over the baseline machines'.
    // (The entry's typical window per launch when its rounds know their batch, else the
    // difference of windows over this run's batch.)
    let shift = |b: &Entry, batch: usize| {
        gate::overhead_shift_ms(b.overhead_ms, b.ceilings(), machine.ceilings, batch)
    };
    let mut cmp = None;
    let mut ab_outcome: Option<AbOutcome> = None;
    // A suspected regression still slow on a still-slowed GPU after a cool-down, and the wait.
    let mut throttled = false;
    let mut cooled: Option<Duration> = None;
    // A base without this kernel: the stored baseline decides, as without A/B.
    let ab_first = match first.ab {
        Some(AbRound::Unavailable(why)) if !cfg.update_baselines => {
            ab_outcome = Some(ab_unavailable(cfg, &why));
            None
        }
        other => other,
    };
    if cfg.update_baselines {
        // Rounds only as many as the noise needs: a second round when the first is noisier
        // than the target (the spread between processes and machines comes from appends).
        let want = if stats.noise > 2.0 * cfg.timing.target_noise {
            BASELINE_ROUNDS
        } else {
            1
        };
        while rounds.len() < want {
            let Some(r) = next_round(gpu, &mut record, &mut ext)? else {
                return Ok(Outcome::Ran(Box::new(record)));
            };
            let (s2, st2) = r.timing.expect("timed when correct");
            rounds.push(stored_round(&st2, &s2));
            let meds: Vec<f64> = rounds.iter().map(|r| r.median_ms).collect();
            if (st2.median_ms - median(&meds)).abs() < (stats.median_ms - median(&meds)).abs() {
                samples = s2;
                stats = st2;
            }
        }
    } else if let Some(first_ab) = ab_first {
        // Same-run A/B: the paired test decides; a suspected regression is re-measured and the
        // round with the smallest ratio decides.
        let mut cur = (first_ab, samples.clone(), stats.clone());
        let mut best: Option<(gate::Paired, String)> = None;
        loop {
            let (ab, s, st) = cur;
            let (p, hash) = match ab {
                AbRound::Measured { base, base_hash } => (
                    gate::paired(&base.ms, &s.ms, tol).ok_or_else(|| Error::Case {
                        case: name.clone(),
                        message: "A/B: no valid sample pairs".into(),
                    })?,
                    base_hash,
                ),
                AbRound::Identical(h) => {
                    ab_outcome = Some(ab_result(cfg, h, "identical".into(), None, None));
                    break;
                }
                AbRound::Unavailable(why) => {
                    ab_outcome = Some(ab_unavailable(cfg, &why));
                    break;
                }
            };
            if best.as_ref().is_none_or(|(b, _)| p.ratio < b.ratio) {
                best = Some((p, hash));
                samples = s;
                stats = st;
            }
            if p.change != Change::Slow || rounds.len() >= GATE_ROUNDS {
                break;
            }
            let Some(r) = next_round(gpu, &mut record, &mut ext)? else {
                return Ok(Outcome::Ran(Box::new(record)));
            };
            let (s2, st2) = r.timing.expect("timed when correct");
            rounds.push(stored_round(&st2, &s2));
            let Some(next) = r.ab else { break };
            cur = (next, s2, st2);
        }
        if let Some((p, h)) = best {
            ab_outcome = Some(ab_result(
                cfg,
                h,
                "measured".into(),
                Some(p),
                Some(stats.median_ms / p.ratio),
            ));
        }
    } else if let Some(b) = &base {
        // The medians, the lower modes where both sides held two, this run's own lower mode
        // where only it did (gate::against_stored).
        let scale = if cfg.machine_factor {
            factor.unwrap_or(1.0)
        } else {
            1.0
        };
        let gated = |st: &Stats, batch: usize| {
            let v = gate::against_stored(
                gate::RunSummary::of(st),
                b,
                scale,
                |e| shift(e, batch),
                rule,
            );
            (v.comparison, v.lower_modes, v.own_lower_mode)
        };
        let (mut c, mut modes, mut own_low) = gated(&stats, samples.batch);
        // A suspected regression is re-measured in fresh rounds; the best round decides. Still
        // slow on a GPU that reports a thermal or hardware slowdown, it waits for the GPU to cool
        // (for a bounded time) and gets one round more; if the case is still slow while the GPU
        // still slowed that round, the machine is the likely cause and the latency is not judged
        // (Throttled).
        let mut limit = GATE_ROUNDS;
        // The GPU's state once the rounds above called it slow, every slowdown the case saw (it
        // marks the record whatever the verdict), and the mark before the round after a cool-down.
        let mut checked: Option<Option<crate::gpu_state::GpuState>> = None;
        let mut during = Vec::new();
        let mut again = None;
        loop {
            while c.change == Change::Slow && rounds.len() < limit {
                let Some(r) = next_round(gpu, &mut record, &mut ext)? else {
                    return Ok(Outcome::Ran(Box::new(record)));
                };
                let (s2, st2) = r.timing.expect("timed when correct");
                rounds.push(stored_round(&st2, &s2));
                if st2.median_ms < stats.median_ms {
                    (c, modes, own_low) = gated(&st2, s2.batch);
                    samples = s2;
                    stats = st2;
                }
            }
            if c.change != Change::Slow || again.is_some() {
                break;
            }
            let state = crate::gpu_state::current(&uuid, ordinal);
            during = counted(mark.as_ref());
            let hot =
                !during.is_empty() || state.as_ref().is_some_and(|s| !s.slowdown().is_empty());
            checked = Some(state);
            if !hot || cfg.strict {
                break;
            }
            let (_, waited) = crate::gpu_state::cool_down(
                &uuid,
                ordinal,
                COOLDOWN_PER_CASE,
                Duration::from_secs_f64(cfg.cooldown_s),
            );
            cooled = Some(waited);
            again = Some(crate::gpu_state::Mark::now(&uuid, ordinal));
            limit = rounds.len() + 1;
        }
        if let Some(again) = again {
            let state = crate::gpu_state::current(&uuid, ordinal);
            // The fresh round's own slowdowns decide: one that filled a tenth of it, or one
            // still active at its end that holds the SM clock down (a slowdown of a few
            // milliseconds does not excuse a real regression).
            let fresh = again.slowdowns_since(&uuid, ordinal, crate::gpu_state::THROTTLED_FRACTION);
            throttled = c.change == Change::Slow
                && (!fresh.is_empty() || state.as_ref().is_some_and(|s| s.slows()));
            for r in counted(mark.as_ref()).into_iter().chain(fresh) {
                if !during.contains(&r) {
                    during.push(r);
                }
            }
            checked = Some(state);
        }
        if let Some(state) = checked {
            record.gpu_state = state.as_ref().map(|s| s.to_string());
            note_state(
                &mut record.slowdown,
                &mut record.gpu_state,
                state.as_ref(),
                &during,
                cooled,
                cfg.cooldown_s,
            );
        }
        cmp = Some(c);
        record.lower_modes = modes;
        record.own_lower_mode = own_low;
    }
    // The very code the baseline timed (gate::same_code): a slowdown is then this machine's.
    // This run's configuration as its rounds store it (`rounds` always holds the first).
    let nvrtc = crate::baseline::nvrtc_of_code(&first.code_hash, &gpu.info.nvrtc_library);
    let same_code = base.as_ref().is_some_and(|b| {
        gate::same_code(
            gate::CodeIdentity {
                source_hash: &first.source_hash,
                code_hash: &first.code_hash,
                variant: rounds.first().and_then(|r| r.variant.as_deref()),
                driver: &gpu.info.driver,
                nvrtc: &nvrtc,
            },
            gate::CodeIdentity {
                source_hash: &b.env.source_hash,
                code_hash: &b.env.code_hash,
                variant: b.rounds.last().and_then(|r| r.variant.as_deref()),
                driver: &b.env.driver,
                nvrtc: &b.env.nvrtc,
            },
        )
    });
    let verdict = if cfg.update_baselines
        && note_state(
            &mut record.slowdown,
            &mut record.gpu_state,
            crate::gpu_state::current(&uuid, ordinal).as_ref(),
            &counted(mark.as_ref()),
            None,
            cfg.cooldown_s,
        ) {
        // Timed on a slowed GPU: these rounds are not the kernel's alone, so the stored entry
        // is left as it was.
        Verdict::Throttled
    } else if cfg.update_baselines {
        let env = Provenance {
            gpu: gpu.info.name.clone(),
            compute_capability: gpu.info.compute_capability.clone(),
            driver: gpu.info.driver.clone(),
            cuda: gpu.info.cuda.clone(),
            sm_clock_mhz: gpu.info.sm_clock_mhz,
            mem_clock_mhz: gpu.info.mem_clock_mhz,
            date: crate::timefmt::now_rfc3339(),
            source_hash: first.source_hash.clone(),
            code_hash: first.code_hash.clone(),
            nvrtc,
        };
        let mut all_rounds = Vec::new();
        if cfg.append_baselines {
            if let Some(old) = store.entry(&gpu.info.name, &case.kernel, &name)? {
                all_rounds = crate::baseline::rounds_to_keep(
                    old,
                    &first.source_hash,
                    &first.code_hash,
                    &env.nvrtc,
                    samples.l2_flush,
                    samples.duty_hold,
                    rounds.first().and_then(|r| r.variant.as_deref()),
                );
            }
        }
        all_rounds.extend(rounds.iter().cloned());
        let keep = all_rounds.len().saturating_sub(crate::baseline::MAX_ROUNDS);
        all_rounds.drain(..keep);
        store.update(
            &gpu.info.name,
            &case.kernel,
            &name,
            Entry::from_rounds(&stats, all_rounds, env),
        )?;
        Verdict::Updated
    } else if cfg.profiler.is_some() {
        Verdict::Ungated
    } else if let Some(ab) = ab_outcome.as_ref().filter(|a| a.decides()) {
        match ab.paired.map(|p| p.change) {
            Some(Change::Slow) => Verdict::Regression,
            Some(Change::Fast) => Verdict::Faster,
            Some(Change::Ambiguous) => Verdict::Ambiguous,
            Some(Change::Same) | None => Verdict::Pass,
        }
    } else {
        match &cmp {
            None if cfg.strict => Verdict::MissingBaseline,
            None => Verdict::New,
            Some(c) => match c.change {
                Change::Slow if throttled => Verdict::Throttled,
                Change::Slow if same_code && !cfg.strict => Verdict::SameCode,
                Change::Slow => Verdict::Regression,
                Change::Fast => Verdict::Faster,
                Change::Same => Verdict::Pass,
                Change::Ambiguous => Verdict::Ambiguous,
            },
        }
    };
    let t_s = stats.median_ms / 1e3;
    let flops = fam.flops(&case.shape);
    record.latency_ms = Some(stats.median_ms);
    record.tflops = (flops > 0.0).then(|| flops / t_s / 1e12);
    let gbps = fam.bytes(&case.shape, case.dtype) / t_s / 1e9;
    record.gbps = Some(gbps);
    if fam_memory_bound {
        let ceiling = match gpu.measured_copy_gbps() {
            Some(c) => c,
            None => {
                let _t = crate::timing::exclusive(cfg.exclusive_timing);
                gpu.copy_bandwidth_gbps()?
            }
        };
        record.roofline_gbps = Some(ceiling);
        record.roofline_frac = Some(gbps / ceiling);
    }
    record.samples_ms = samples.ms.clone();
    record.batch = samples.batch;
    record.graph = samples.graph;
    record.l2_flushed = samples.flushed;
    record.l2_flush = samples.l2_flush;
    record.hold_us = samples.hold_us;
    record.host_enqueue_us = samples.host_enqueue_us;
    record.late_samples = samples.late_samples;
    record.duty_hold = samples.duty_hold;
    record.stats = Some(stats);
    record.baseline_ms = base.as_ref().map(|b| b.median_ms);
    record.baseline_machines = base.as_ref().map(|b| b.machines);
    // How the baseline's newest round was timed and what ran, where it differs from this run.
    let newest = base.as_ref().and_then(|b| b.rounds.last());
    record.baseline_l2_flush = newest
        .filter(|_| samples.flushed)
        .map(|x| x.l2_flush.unwrap_or(crate::timing::FlushMode::Write));
    record.baseline_duty_hold = newest
        .filter(|x| x.duty_hold != samples.duty_hold)
        .map(|x| x.duty_hold.unwrap_or(0.0));
    record.baseline_variant = newest
        .and_then(|x| x.variant.clone())
        .filter(|v| *v != record.variant);
    record.baseline_source_hash = base
        .as_ref()
        .filter(|b| b.env.code_hash.is_empty() || b.env.code_hash != record.code_hash)
        .map(|b| b.env.source_hash.clone())
        .filter(|h| !h.is_empty() && *h != record.source_hash);
    record.machine = machine.key.clone();
    record.machine_factor = factor;
    record.window_shift_ms = base
        .as_ref()
        .filter(|_| cmp.is_some())
        .and_then(|b| shift(b, samples.batch));
    record.ratio = cmp.map(|c| c.ratio);
    record.noise = cmp.map(|c| c.noise);
    record.floor_ms = cmp.map(|c| c.floor_ms);
    record.min_detectable = match (&cmp, &ab_outcome) {
        (Some(c), _) => Some(c.min_detectable),
        (None, Some(a)) => a.paired.map(|p| p.min_detectable),
        _ => None,
    };
    if cmp.is_none() {
        if let Some(p) = ab_outcome.as_ref().and_then(|a| a.paired) {
            record.ratio = Some(p.ratio);
            record.noise = Some((p.hi - p.lo) / 2.0);
        }
    }
    record.ab = ab_outcome;
    record.measurements = rounds.len();
    record.verdict = verdict;
    // The GPU's state after every other timed case (`KERNELGATE_GPU_STATE=all`), and after
    // any regression: a record timed on a slowed GPU is marked, so it is neither imported nor
    // stored, and a regression says what the GPU was doing.
    let read_state = record.gpu_state.is_none()
        && cfg.profiler.is_none()
        && !cfg.update_baselines
        && (verdict == Verdict::Regression || cfg.gpu_state_every_case);
    if read_state {
        let state = crate::gpu_state::current(&uuid, ordinal);
        if verdict == Verdict::Regression {
            record.gpu_state = state.as_ref().map(|s| s.to_string());
        }
        note_state(
            &mut record.slowdown,
            &mut record.gpu_state,
            state.as_ref(),
            &counted(mark.as_ref()),
            None,
            cfg.cooldown_s,
        );
    }
    record.message = crate::report::verdict_message(&record, &gpu.info.name, store);
    Ok(Outcome::Ran(Box::new(record)))
}

/// The longest one suspected regression waits for a slowed GPU to cool
/// ([`crate::gpu_state::cool_down`]; the run's whole budget is `KERNELGATE_COOLDOWN_S`).
pub const COOLDOWN_PER_CASE: Duration = Duration::from_secs(10);

/// Marks a record (its `slowdown` and `gpu_state`) with the slowdowns the GPU reported: those active in `state`
/// ([`crate::gpu_state::GpuState::slowdown`]) and those its counters show `during` the case
/// ([`crate::gpu_state::Mark::slowdowns_since`]); where there are any (or a state was already
/// noted), the whole state, what was counted, and the cool-down waited, if any (`budget_s`: the
/// run's cool-down budget, named when it was spent). Returns whether the GPU was slowed.
fn note_state(
    slowdown: &mut Vec<String>,
    gpu_state: &mut Option<String>,
    state: Option<&crate::gpu_state::GpuState>,
    during: &[&str],
    cooled: Option<Duration>,
    budget_s: f64,
) -> bool {
    let mut slow: Vec<&str> = state.map(|s| s.slowdown()).unwrap_or_default();
    for r in during {
        if !slow.contains(r) {
            slow.push(r);
        }
    }
    *slowdown = slow.iter().map(|r| r.to_string()).collect();
    if slowdown.is_empty() && gpu_state.is_none() && cooled.is_none() {
        return false;
    }
    let mut text = state.map_or_else(|| "state unknown".to_string(), |s| s.to_string());
    if !during.is_empty() {
        text += &format!("; while timed: {}", during.join(", "));
    }
    match cooled {
        Some(w) if w.as_secs_f64() >= 0.05 => {
            text += &format!(
                " (after waiting {:.1} s for it to cool and measuring again)",
                w.as_secs_f64()
            )
        }
        Some(_) => {
            text += &format!(
                " (measured again at once: no slowdown was active any more, or the run's {budget_s:.0} s cool-down budget was spent)"
            )
        }
        None => {}
    }
    *gpu_state = Some(text);
    !slowdown.is_empty()
}

/// The A/B part of a record.
fn ab_result(
    cfg: &Config,
    base_hash: String,
    status: String,
    paired: Option<gate::Paired>,
    base_ms: Option<f64>,
) -> AbOutcome {
    AbOutcome {
        base: cfg.base.clone().unwrap_or_default(),
        base_hash,
        status,
        paired,
        base_ms,
    }
}

/// Whether a same-run A/B base that failed to prepare with `e` leaves the case to its stored
/// baseline (the A/B reported unavailable) rather than ending it: the base's source does not
/// compile, is missing, has no entry point the host asks for, or rejects the case. A driver
/// fault or anything else ends the case.
fn base_unavailable(e: &Error) -> bool {
    matches!(
        e,
        Error::Compile { .. } | Error::Io { .. } | Error::Case { .. } | Error::MissingEntry { .. }
    )
}

/// The A/B part of a record whose base could not be prepared.
fn ab_unavailable(cfg: &Config, why: &str) -> AbOutcome {
    ab_result(
        cfg,
        String::new(),
        format!("unavailable: {why}"),
        None,
        None,
    )
}

/// The run's configuration as it applies to `case`: the timing policy pinned to the stored
/// entry's batch (unless `KERNELGATE_ADAPTIVE_BATCH=1`), and the soak kept for compute-bound
/// families only (memory-bound kernels and the calibration spin do not move with the SM clock).
pub fn case_config(
    cfg: &Config,
    fam: &dyn crate::family::Family,
    case: &Case,
    stored: Option<&Entry>,
) -> Config {
    let mut c = cfg.clone();
    if !cfg.adaptive_batch {
        c.timing.batch = stored.and_then(|e| e.batch).or(cfg.timing.batch);
    }
    if fam.memory_bound() || case.kernel == "spin" {
        c.timing.soak_ms = 0.0;
    }
    c
}

/// This machine as baseline rounds record it.
struct ThisMachine {
    key: String,
    host: String,
    ceilings: Option<crate::gpu::Ceilings>,
}

fn median(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile(&s, 50.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::gpu_state::parse;

    #[test]
    fn a_base_without_the_entry_leaves_the_case_to_its_baseline() {
        // What a base revision cannot provide makes the A/B unavailable; a driver fault ends
        // the case as it would without A/B.
        let missing = Error::MissingEntry {
            file: "gemm_wgmma.cu".into(),
            entry: "gemm_wgmma_bf16_192x192_ts".into(),
        };
        assert!(base_unavailable(&missing));
        let compile = Error::Compile {
            file: "x.cu".into(),
            options: String::new(),
            log: "error".into(),
        };
        assert!(base_unavailable(&compile));
        let case = Error::Case {
            case: "c".into(),
            message: "m".into(),
        };
        assert!(base_unavailable(&case));
        assert!(!base_unavailable(&Error::driver(
            "launching",
            "CUDA_ERROR_ILLEGAL_ADDRESS"
        )));
        assert!(!base_unavailable(&Error::Hang {
            case: "c".into(),
            limit_s: 10.0
        }));
        // The record's A/B note carries the error's text, which names the entry.
        assert_eq!(
            missing.to_string(),
            "kernel module gemm_wgmma.cu has no entry point gemm_wgmma_bf16_192x192_ts"
        );
    }

    #[test]
    fn note_state_marks_slowed_gpus_and_says_what_it_waited() {
        let (mut slow, mut text) = (Vec::new(), None);
        // Nothing read: nothing claimed.
        assert!(!note_state(&mut slow, &mut text, None, &[], None, 30.0));
        assert!(slow.is_empty() && text.is_none());
        // A busy GPU at its power cap is not slowed, and a passing record carries no state.
        let capped = parse("1755, 1980, 71, 689.5, 700, 0x4").unwrap();
        assert!(!note_state(
            &mut slow,
            &mut text,
            Some(&capped),
            &[],
            None,
            30.0
        ));
        assert!(slow.is_empty() && text.is_none());
        // Active thermal slowdown after the cool-down.
        let hot = parse("840, 1980, 86, 190, 700, 0x20").unwrap();
        let waited = Some(Duration::from_millis(2000));
        assert!(note_state(
            &mut slow,
            &mut text,
            Some(&hot),
            &[],
            waited,
            30.0
        ));
        assert_eq!(slow, vec!["software thermal slowdown"]);
        let t = text.clone().unwrap();
        assert!(t.starts_with("SM clock 840 of 1980 MHz; 86 °C"), "{t}");
        assert!(
            t.ends_with("(after waiting 2.0 s for it to cool and measuring again)"),
            "{t}"
        );
        // Over by the end, but counted while the case was timed; the budget was spent.
        let (mut slow, mut text) = (Vec::new(), None);
        let during = ["hardware power brake", "software thermal slowdown"];
        assert!(note_state(
            &mut slow,
            &mut text,
            Some(&capped),
            &during,
            Some(Duration::ZERO),
            30.0
        ));
        assert_eq!(
            slow,
            vec!["hardware power brake", "software thermal slowdown"]
        );
        let t = text.unwrap();
        assert!(
            t.contains("; while timed: hardware power brake, software thermal slowdown"),
            "{t}"
        );
        assert!(
            t.contains("the run's 30 s cool-down budget was spent"),
            "{t}"
        );
        // Active and counted alike are named once; a regression's state is kept when cool.
        let (mut slow, mut text) = (Vec::new(), Some("set before".to_string()));
        assert!(note_state(
            &mut slow,
            &mut text,
            Some(&hot),
            &["software thermal slowdown"],
            None,
            30.0
        ));
        assert_eq!(slow, vec!["software thermal slowdown"]);
        let (mut slow, mut text) = (Vec::new(), Some("set before".to_string()));
        assert!(!note_state(
            &mut slow,
            &mut text,
            Some(&capped),
            &[],
            None,
            30.0
        ));
        assert!(text.unwrap().contains("software power cap"));
    }
}
