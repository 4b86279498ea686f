//! Honest timing: CUDA events with timing enabled, warm-up by time, an optional L2 flush
//! before every sample, batched launches replayed from a CUDA graph for short kernels,
//! and sampling until the median is stable or a time cap is reached.

use crate::error::{Error, Result};
use crate::gpu::Gpu;
use crate::stats::{median_noise, percentile};
use cudarc::driver::sys;
use serde::{Deserialize, Serialize};
use std::time::{Duration, Instant};

/// How a case is timed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Policy {
    /// Warm-up time before sampling, in ms.
    pub warmup_ms: f64,
    /// Fewest samples.
    pub min_samples: usize,
    /// Most samples.
    pub max_samples: usize,
    /// Time cap for sampling, in ms (wall clock, flushes included).
    pub max_time_ms: f64,
    /// Stop once the median's relative 95% CI half-width is below this.
    pub target_noise: f64,
    /// Kernels shorter than this (µs) are launched in batches so launch overhead does not dominate.
    pub min_sample_us: f64,
    /// Largest batch.
    pub max_batch: usize,
    /// Hang limit for any single synchronisation, in seconds.
    pub hang_limit_s: f64,
    /// How long the hold kernel in front of every sample keeps the stream busy, µs
    /// (`KERNELGATE_HOLD_US`, default [`HOLD_US`]); it must outlast the host's enqueue of the
    /// start event and the timed launch.
    #[serde(default = "default_hold_us")]
    pub hold_us: f64,
    /// Launches per sample decided beforehand (the stored baseline's, so the gate compares like
    /// with like, else `KERNELGATE_BATCH`); `None`: chosen in warm-up from the kernel's duration
    /// (see [`Policy::min_sample_us`]).
    /// A batch above 1 is replayed from a CUDA graph when capture works.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// After warm-up, keep running samples exactly as they will be timed (flush, hold, launch)
    /// for this long (ms, wall clock) before the first kept sample, so the GPU's power
    /// management reaches the state it holds while sampling (`KERNELGATE_SOAK_MS`; applied to
    /// compute-bound families only).
    #[serde(default)]
    pub soak_ms: f64,
    /// How the L2 is flushed before each sample of a case that asks for a cold L2
    /// (`KERNELGATE_L2_FLUSH`; a policy stored before the field existed read `write`).
    #[serde(default = "legacy_flush")]
    pub l2_flush: FlushMode,
    /// Duty-cycle hold: a sample of at least [`DUTY_MIN_SAMPLE_US`] is held for at least this
    /// many times its own duration (see [`duty_hold_us`]; `KERNELGATE_DUTY_HOLD`, default
    /// [`DUTY_HOLD`]; 0 turns it off, as in a policy stored before the field existed).
    #[serde(default)]
    pub duty_hold: f64,
}

fn default_hold_us() -> f64 {
    HOLD_US
}

fn legacy_flush() -> FlushMode {
    FlushMode::Write
}

/// How the L2 is emptied before each sample (see `docs/gate/README.md`, "A clean L2 flush").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FlushMode {
    /// Read a buffer twice the L2's size (`kg_l2_sweep` in `kernels/probe.cu`): the lines the
    /// last sample left dirty are written back during the flush, and the timed launch starts
    /// with a cold and *clean* L2, so it pays only for its own traffic. The default.
    #[default]
    Read,
    /// Write (memset) a buffer twice the L2's size, as nvbench and triton's `do_bench` do and
    /// kernelgate did before: cold, but the L2 is left full of the flush's dirty lines, which
    /// the timed launch writes back as it evicts them. Measured on an H100: a read-only kernel
    /// over 25 MB ran at 0.63 of copy bandwidth after it against 1.05 after a read flush.
    Write,
}

impl FlushMode {
    /// The name used in results, baselines, the worker protocol and `KERNELGATE_L2_FLUSH`.
    pub fn as_str(self) -> &'static str {
        match self {
            FlushMode::Read => "read",
            FlushMode::Write => "write",
        }
    }

    /// Parses [`FlushMode::as_str`]'s names.
    pub fn parse(s: &str) -> Option<FlushMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "read" => Some(FlushMode::Read),
            "write" | "memset" => Some(FlushMode::Write),
            _ => None,
        }
    }
}

impl Default for Policy {
    fn default() -> Policy {
        Policy {
            warmup_ms: 50.0,
            min_samples: 20,
            max_samples: 2000,
            max_time_ms: 2000.0,
            target_noise: 0.005,
            min_sample_us: 20.0,
            max_batch: 256,
            hang_limit_s: 60.0,
            hold_us: HOLD_US,
            batch: None,
            soak_ms: 0.0,
            l2_flush: FlushMode::Read,
            duty_hold: DUTY_HOLD,
        }
    }
}

/// Raw timing of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Samples {
    /// Milliseconds per launch, one value per sample.
    pub ms: Vec<f64>,
    /// Launches per sample.
    pub batch: usize,
    /// Whether each sample replayed a captured CUDA graph.
    pub graph: bool,
    /// Whether L2 was flushed before each sample.
    pub flushed: bool,
    /// How it was flushed (`None`: not flushed, or a worker that does not say: see
    /// [`crate::backend::worker::RunReply::l2_flush`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_flush: Option<FlushMode>,
    /// Warm-up launches run.
    pub warmup_launches: usize,
    /// The hold in front of each sample, µs: the policy's, raised when the host's enqueue of a
    /// sample came near it (see [`HOST_MARGIN`]).
    #[serde(default)]
    pub hold_us: f64,
    /// Median host time to enqueue one sample's start event, launches and end event, µs.
    #[serde(default)]
    pub host_enqueue_us: f64,
    /// Samples dropped because their enqueue outlasted the hold (the GPU may have idled inside
    /// the timed window); each such sample doubled the hold.
    #[serde(default)]
    pub late_samples: usize,
    /// The duty-cycle ratio that set the hold's floor ([`duty_hold_us`]), when the rule applied
    /// (a sample of at least [`DUTY_MIN_SAMPLE_US`] under a policy with a ratio above 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duty_hold: Option<f64>,
}

/// A start and an end event, both with timing enabled.
pub(crate) struct Events {
    pub(crate) start: cudarc::driver::CudaEvent,
    pub(crate) end: cudarc::driver::CudaEvent,
}

/// Two timing events on `gpu`'s context.
pub(crate) fn events(gpu: &Gpu) -> Result<Events> {
    // Timing must be enabled: cudarc's new_event(None) disables it.
    let flags = Some(sys::CUevent_flags::CU_EVENT_DEFAULT);
    Ok(Events {
        start: gpu
            .ctx
            .new_event(flags)
            .map_err(|e| Error::driver("creating timing event", e))?,
        end: gpu
            .ctx
            .new_event(flags)
            .map_err(|e| Error::driver("creating timing event", e))?,
    })
}

/// By default every sample starts behind a kernel that holds the stream this long (µs), plus
/// [`HOLD_PER_LAUNCH_US`] per launch enqueued eagerly, so the host's launch latency never falls
/// between the start and end events (nvbench's "blocking kernel"). Without it, a kernel of
/// 50 µs timed alone read 55.8 µs in one process and 60.0 µs in the next on one H200.
pub const HOLD_US: f64 = 20.0;
/// Extra hold per eagerly enqueued launch, µs.
pub const HOLD_PER_LAUNCH_US: f64 = 3.0;
/// The hold must be at least this many times the host's enqueue time of a sample, measured in
/// warm-up; a slow host (a 2-GPU H200 host took longer than 20 µs) gets a longer hold.
pub const HOST_MARGIN: f64 = 3.0;
/// The longest hold the harness raises to, µs.
pub const MAX_HOLD_US: f64 = 2000.0;

/// Default ratio of the duty-cycle hold ([`Policy::duty_hold`]): a long sample is held for at
/// least as long as it runs, so every backend's long kernels run at most half of the time.
/// Why: the hold otherwise follows each backend's host enqueue time (cuBLAS's call took ~50 µs
/// against ~7 µs for a kernel launch, so its hold was 150–450 µs against 50–130), and a long,
/// power-bound kernel runs faster the more the GPU idles between samples. On an H100
/// (GPU-fc38f869, `docs/gate/README.md`, session 15) our 6144³/8192³ GEMMs read 586.9–1457.6 µs
/// with a 1000 µs hold for both backends against 595.2–1572.1 µs with the enqueue-driven hold
/// (up to 1.10×), while cuBLAS, already held ~300–450 µs, moved by at most 1.2%: the same-run
/// ratio compared our kernel at a ~90% duty cycle with cuBLAS at ~60%.
pub const DUTY_HOLD: f64 = 1.0;
/// Samples shorter than this (µs) keep the enqueue-driven hold.
///
/// Session 15 set it at 250 µs: on that H100 nothing at or under 4096³ (182 µs) moved with the
/// hold. Session 48 lowered it to 100 µs. On H200s our 4096³ GEMM, held 26–100 µs by its launch
/// time (80–90% busy) while cuBLAS's call held it 160–370 µs, landed in a slow state in about
/// one process in five (fp16 186–194 µs against 181–183; the "H200 slow mode" of sessions 32–35).
/// Both backends held 400 µs, it did not in 16 processes of two H200s, and our readings tightened
/// to cuBLAS's spread (GPU-57beb59e, ten processes each way: fp16 180.5–188.1 µs against
/// 181.1–182.0, bf16 175.3–177.7 against 175.9–176.3; `docs/kernels/session48`).
pub const DUTY_MIN_SAMPLE_US: f64 = 100.0;
/// The longest duty-cycle hold, µs.
pub const MAX_DUTY_HOLD_US: f64 = 20_000.0;

/// The duty-cycle floor of the hold in front of a sample that runs `sample_us`: `ratio` ×
/// `sample_us` (at most [`MAX_DUTY_HOLD_US`]) for samples of at least [`DUTY_MIN_SAMPLE_US`]
/// under a ratio above 0, else `None` (the rule does not apply).
pub fn duty_hold_us(ratio: f64, sample_us: f64) -> Option<f64> {
    (ratio > 0.0 && sample_us >= DUTY_MIN_SAMPLE_US)
        .then(|| (ratio * sample_us).min(MAX_DUTY_HOLD_US))
}

/// The hold for a host whose enqueue of one sample took `enqueue_us` (its slowest trial):
/// `policy_us`, or [`HOST_MARGIN`] × `enqueue_us` when that is longer, at most [`MAX_HOLD_US`].
pub fn hold_for(policy_us: f64, enqueue_us: f64) -> f64 {
    policy_us
        .max(HOST_MARGIN * enqueue_us)
        .min(MAX_HOLD_US.max(policy_us))
}

/// One launcher made ready for sampling: its batch and, for short kernels, a captured graph.
struct Timed<'a> {
    launch: &'a mut dyn FnMut(&Gpu) -> Result<()>,
    batch: usize,
    graph: Option<cudarc::driver::CudaGraph>,
    warmup_launches: usize,
    hold_us: f64,
    /// Host enqueue time of each kept sample, µs.
    enqueue_us: Vec<f64>,
    late: usize,
    /// The duty-cycle ratio, when it set the hold's floor.
    duty: Option<f64>,
}

/// Trial samples in warm-up that measure the host's enqueue time.
const ENQUEUE_TRIALS: usize = 5;

/// The batch for a kernel whose fastest warm-up launch took `single_ms`: `forced` when the
/// policy pins one (clamped to `1..=max_batch`), else 1 for kernels of at least
/// `min_sample_us` and enough launches to fill `min_sample_us` (at least 2) for shorter ones.
pub fn batch_for(
    single_ms: f64,
    forced: Option<usize>,
    min_sample_us: f64,
    max_batch: usize,
) -> usize {
    match forced {
        Some(b) => b.clamp(1, max_batch.max(1)),
        None if single_ms * 1e3 < min_sample_us => ((min_sample_us / (single_ms * 1e3).max(1e-3))
            .ceil() as usize)
            .clamp(2, max_batch.max(2)),
        None => 1,
    }
}

impl Timed<'_> {
    /// Warms `launch` up by time and picks its batch (a graph of `batch` launches when short).
    fn warm<'a>(
        gpu: &mut Gpu,
        ev: &Events,
        hang: Duration,
        name: &str,
        policy: &Policy,
        flush: bool,
        launch: &'a mut dyn FnMut(&Gpu) -> Result<()>,
    ) -> Result<Timed<'a>> {
        let mut t = Timed {
            launch,
            batch: 1,
            graph: None,
            warmup_launches: 0,
            hold_us: policy.hold_us,
            enqueue_us: Vec::new(),
            late: 0,
            duty: None,
        };
        // Warm-up by time: double the batch until the warm-up budget is spent.
        let mut spent = 0.0;
        let mut n = 1usize;
        let mut single = f64::INFINITY;
        while spent < policy.warmup_ms || t.warmup_launches < 3 {
            let (ms, _) = t.eager(gpu, ev, hang, name, n, false)?;
            single = single.min(ms / n as f64);
            spent += ms;
            t.warmup_launches += n;
            if spent < policy.warmup_ms / 4.0 {
                n = (n * 2).min(4096);
            }
        }
        // Batch short kernels (or as the policy pins it); replay the batch from a CUDA graph
        // when capture works.
        t.batch = batch_for(single, policy.batch, policy.min_sample_us, policy.max_batch);
        if t.batch > 1 {
            t.graph = capture(gpu, t.batch, &mut *t.launch);
        }
        // How long does this host take to enqueue one sample? The hold must outlast it.
        let mut slowest: f64 = 0.0;
        for _ in 0..ENQUEUE_TRIALS {
            let (_, us) = t.submit(gpu, ev, hang, name, false)?;
            slowest = slowest.max(us);
        }
        t.hold_us = hold_for(policy.hold_us, slowest);
        // Long samples: idle at least as long as they run, whatever the backend's enqueue time.
        if let Some(h) = duty_hold_us(policy.duty_hold, single * 1e3 * t.batch as f64) {
            t.hold_us = t.hold_us.max(h);
            t.duty = Some(policy.duty_hold);
        }
        // Soak: samples as they will be taken, discarded, until the power state has settled.
        if policy.soak_ms > 0.0 {
            let soak = Instant::now();
            while soak.elapsed().as_secs_f64() * 1e3 < policy.soak_ms {
                t.submit(gpu, ev, hang, name, flush)?;
            }
        }
        Ok(t)
    }

    /// Times `n` launches enqueued one by one: ms for all of them, and the host's enqueue time
    /// after the hold, µs.
    fn eager(
        &mut self,
        gpu: &mut Gpu,
        ev: &Events,
        hang: Duration,
        name: &str,
        n: usize,
        flush: bool,
    ) -> Result<(f64, f64)> {
        if flush {
            gpu.flush_l2()?;
        }
        gpu.hold(self.hold_us + HOLD_PER_LAUNCH_US * n as f64)?;
        let t0 = Instant::now();
        ev.start
            .record(&gpu.stream)
            .map_err(|e| Error::driver("recording start event", e))?;
        for _ in 0..n {
            (self.launch)(gpu)?;
        }
        ev.end
            .record(&gpu.stream)
            .map_err(|e| Error::driver("recording end event", e))?;
        let enqueue_us = t0.elapsed().as_secs_f64() * 1e6;
        gpu.sync(hang, name)?;
        let ms = ev
            .start
            .elapsed_ms(&ev.end)
            .map_err(|e| Error::driver("reading event time", e))? as f64;
        Ok((ms, enqueue_us))
    }

    /// One batch (graph replay when captured): ms for the whole batch and the host's enqueue
    /// time after the hold, µs.
    fn submit(
        &mut self,
        gpu: &mut Gpu,
        ev: &Events,
        hang: Duration,
        name: &str,
        flush: bool,
    ) -> Result<(f64, f64)> {
        match &self.graph {
            Some(g) => {
                if flush {
                    gpu.flush_l2()?;
                }
                gpu.hold(self.hold_us)?;
                let t0 = Instant::now();
                ev.start
                    .record(&gpu.stream)
                    .map_err(|e| Error::driver("recording start event", e))?;
                g.launch()
                    .map_err(|e| Error::driver("replaying graph", e))?;
                ev.end
                    .record(&gpu.stream)
                    .map_err(|e| Error::driver("recording end event", e))?;
                let enqueue_us = t0.elapsed().as_secs_f64() * 1e6;
                gpu.sync(hang, name)?;
                let ms = ev
                    .start
                    .elapsed_ms(&ev.end)
                    .map_err(|e| Error::driver("reading event time", e))?
                    as f64;
                Ok((ms, enqueue_us))
            }
            None => {
                let b = self.batch;
                self.eager(gpu, ev, hang, name, b, flush)
            }
        }
    }

    /// One sample: ms per launch over one batch, or `None` when the host's enqueue outlasted
    /// the hold (the sample is dropped and the hold doubled, up to [`MAX_HOLD_US`]).
    fn sample(
        &mut self,
        gpu: &mut Gpu,
        ev: &Events,
        hang: Duration,
        name: &str,
        flush: bool,
    ) -> Result<Option<f64>> {
        let (ms, enqueue_us) = self.submit(gpu, ev, hang, name, flush)?;
        let budget = match self.graph {
            Some(_) => self.hold_us,
            None => self.hold_us + HOLD_PER_LAUNCH_US * self.batch as f64,
        };
        if enqueue_us > budget && self.hold_us < MAX_HOLD_US {
            self.late += 1;
            self.hold_us = (2.0 * self.hold_us).min(MAX_HOLD_US);
            return Ok(None);
        }
        self.enqueue_us.push(enqueue_us);
        Ok(Some(ms / self.batch as f64))
    }

    fn into_samples(self, ms: Vec<f64>, flush: Option<FlushMode>) -> Samples {
        let mut e = self.enqueue_us;
        e.sort_by(f64::total_cmp);
        Samples {
            ms,
            batch: self.batch,
            graph: self.graph.is_some(),
            flushed: flush.is_some(),
            l2_flush: flush,
            warmup_launches: self.warmup_launches,
            hold_us: self.hold_us,
            host_enqueue_us: if e.is_empty() {
                0.0
            } else {
                percentile(&e, 50.0)
            },
            late_samples: self.late,
            duty_hold: self.duty,
        }
    }
}

/// Whether the median of `ms` is known to within `target` (relative 95% half-width).
fn settled(ms: &[f64], target: f64) -> bool {
    let mut s = ms.to_vec();
    s.sort_by(f64::total_cmp);
    let (med, mad) = crate::stats::median_mad(&s);
    median_noise(med, mad, s.len()) < target
}

/// Times `launch` (which enqueues one run of the kernel on `gpu.stream`) under `policy`.
///
/// `name` labels errors. `flush_l2` asks for a cold L2 before each sample.
pub fn measure(
    gpu: &mut Gpu,
    name: &str,
    policy: &Policy,
    flush_l2: bool,
    launch: &mut dyn FnMut(&Gpu) -> Result<()>,
) -> Result<Samples> {
    let hang = Duration::from_secs_f64(policy.hang_limit_s);
    gpu.l2_flush = policy.l2_flush;
    let ev = events(gpu)?;
    let mut t = Timed::warm(gpu, &ev, hang, name, policy, flush_l2, launch)?;
    let mut ms = Vec::new();
    let started = Instant::now();
    let cap = Duration::from_secs_f64(policy.max_time_ms / 1e3);
    loop {
        if let Some(x) = t.sample(gpu, &ev, hang, name, flush_l2)? {
            ms.push(x);
        }
        let n = ms.len();
        if n >= policy.max_samples {
            break;
        }
        if n >= policy.min_samples
            && (started.elapsed() > cap || (n % 5 == 0 && settled(&ms, policy.target_noise)))
        {
            break;
        }
    }
    Ok(t.into_samples(ms, flush_l2.then_some(policy.l2_flush)))
}

/// Times two launchers of the same case in alternation (same buffers, same warm device state):
/// pair `i` is `(base[i], new[i])`, measured back to back, the order flipping every pair so
/// that drift cancels. Stops once the paired ratio's 95% interval is within
/// `policy.target_noise` or after twice the time cap.
pub fn measure_pair(
    gpu: &mut Gpu,
    name: &str,
    policy: &Policy,
    flush_l2: bool,
    base: &mut dyn FnMut(&Gpu) -> Result<()>,
    new: &mut dyn FnMut(&Gpu) -> Result<()>,
) -> Result<(Samples, Samples)> {
    let hang = Duration::from_secs_f64(policy.hang_limit_s);
    gpu.l2_flush = policy.l2_flush;
    let ev = events(gpu)?;
    let mut a = Timed::warm(gpu, &ev, hang, name, policy, flush_l2, base)?;
    let mut b = Timed::warm(gpu, &ev, hang, name, policy, flush_l2, new)?;
    // One hold for both, so neither runs at a higher duty cycle than the other.
    let hold = a.hold_us.max(b.hold_us);
    (a.hold_us, b.hold_us) = (hold, hold);
    let (mut ma, mut mb) = (Vec::new(), Vec::new());
    let started = Instant::now();
    let cap = Duration::from_secs_f64(2.0 * policy.max_time_ms / 1e3);
    loop {
        // A pair is kept only when both samples are (a late one is re-taken).
        let (x, y) = if ma.len() % 2 == 0 {
            let x = a.sample(gpu, &ev, hang, name, flush_l2)?;
            (x, b.sample(gpu, &ev, hang, name, flush_l2)?)
        } else {
            let y = b.sample(gpu, &ev, hang, name, flush_l2)?;
            (a.sample(gpu, &ev, hang, name, flush_l2)?, y)
        };
        if let (Some(x), Some(y)) = (x, y) {
            ma.push(x);
            mb.push(y);
        }
        let n = ma.len();
        if n >= policy.max_samples {
            break;
        }
        if n >= policy.min_samples.max(20) {
            if started.elapsed() > cap {
                break;
            }
            if n % 10 == 0 {
                if let Some(p) = crate::gate::paired(&ma, &mb, 0.0) {
                    if (p.hi - p.lo) / 2.0 < policy.target_noise {
                        break;
                    }
                }
            }
        }
    }
    let mode = flush_l2.then_some(policy.l2_flush);
    Ok((a.into_samples(ma, mode), b.into_samples(mb, mode)))
}

/// Captures `n` launches into a graph; `None` if capture is not possible for this launch.
fn capture(
    gpu: &Gpu,
    n: usize,
    launch: &mut dyn FnMut(&Gpu) -> Result<()>,
) -> Option<cudarc::driver::CudaGraph> {
    gpu.stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .ok()?;
    let mut ok = true;
    for _ in 0..n {
        if launch(gpu).is_err() {
            ok = false;
            break;
        }
    }
    let g = gpu
        .stream
        .end_capture(sys::CUgraphInstantiate_flags(0))
        .ok()
        .flatten();
    if ok {
        g
    } else {
        None
    }
}

/// The host-wide lock of `KERNELGATE_EXCLUSIVE_TIMING=1`, held while a case is timed (warm-up
/// and samples; an external worker's whole request): a process-wide mutex for the devices of
/// one run, plus an advisory lock on [`timing_lock_path`] for other kernelgate processes on the
/// same host that have the variable set too. Released on drop.
pub struct TimingLock {
    _file: Option<std::fs::File>,
    _guard: std::sync::MutexGuard<'static, ()>,
}

/// The file other processes lock to serialise their timing: `kernelgate-timing.lock` in the
/// system's temporary directory.
pub fn timing_lock_path() -> std::path::PathBuf {
    std::env::temp_dir().join("kernelgate-timing.lock")
}

/// Takes the host-wide timing lock when `on` (blocking until it is free); `None` when off.
///
/// When the lock file cannot be opened or locked only this process's devices are serialised
/// (said once on stderr).
pub fn exclusive(on: bool) -> Option<TimingLock> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    static WARNED: std::sync::Once = std::sync::Once::new();
    if !on {
        return None;
    }
    let guard = LOCK.lock().unwrap_or_else(|p| p.into_inner());
    let path = timing_lock_path();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .or_else(|_| std::fs::File::open(&path))
        .and_then(|f| f.lock().map(|_| f));
    let file = match file {
        Ok(f) => Some(f),
        Err(e) => {
            WARNED.call_once(|| {
                eprintln!(
                    "kernelgate: KERNELGATE_EXCLUSIVE_TIMING: cannot lock {} ({e}); timing is serialised within this process only",
                    path.display()
                )
            });
            None
        }
    };
    Some(TimingLock {
        _file: file,
        _guard: guard,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_samples_idle_as_long_as_they_run() {
        // Off, or a sample under the threshold: the rule does not apply.
        assert_eq!(duty_hold_us(0.0, 1000.0), None);
        assert_eq!(duty_hold_us(1.0, DUTY_MIN_SAMPLE_US - 1.0), None);
        // A 4096³ GEMM sample (~180 µs) is held as long as it runs (session 48), a 2048³ one
        // (~26 µs) keeps the enqueue-driven hold.
        assert_eq!(duty_hold_us(1.0, 180.0), Some(180.0));
        assert_eq!(duty_hold_us(1.0, 26.0), None);
        // A long sample: held ratio × its duration, capped.
        assert_eq!(
            duty_hold_us(1.0, DUTY_MIN_SAMPLE_US),
            Some(DUTY_MIN_SAMPLE_US)
        );
        assert_eq!(duty_hold_us(0.5, 1400.0), Some(700.0));
        assert_eq!(duty_hold_us(1.0, 1e9), Some(MAX_DUTY_HOLD_US));
        // The default policy applies it; a policy stored before the field existed does not.
        assert_eq!(Policy::default().duty_hold, DUTY_HOLD);
        let mut v = serde_json::to_value(Policy::default()).unwrap();
        v.as_object_mut().unwrap().remove("duty_hold");
        let legacy: Policy = serde_json::from_value(v).unwrap();
        assert_eq!(legacy.duty_hold, 0.0);
    }

    #[test]
    fn hold_outlasts_a_slow_host() {
        // A fast host keeps the policy's hold; a slow one gets HOST_MARGIN × its enqueue time.
        assert_eq!(hold_for(20.0, 4.0), 20.0);
        assert_eq!(hold_for(20.0, 10.0), 30.0);
        assert_eq!(hold_for(50.0, 10.0), 50.0);
        // Never beyond MAX_HOLD_US unless the policy itself asks for more.
        assert_eq!(hold_for(20.0, 1e6), MAX_HOLD_US);
        assert_eq!(hold_for(5000.0, 1e6), 5000.0);
    }

    #[test]
    fn batch_is_adaptive_unless_pinned() {
        // 5 µs kernel, 20 µs target: 4 launches; a 25 µs kernel runs alone.
        assert_eq!(batch_for(0.005, None, 20.0, 256), 4);
        assert_eq!(batch_for(0.025, None, 20.0, 256), 1);
        // Just under the threshold still batches (at least 2): the flip a pinned batch avoids.
        assert_eq!(batch_for(0.0199, None, 20.0, 256), 2);
        // Very short kernels stop at the largest batch.
        assert_eq!(batch_for(1e-6, None, 20.0, 256), 256);
        // A pinned batch wins both ways, clamped to 1..=max_batch.
        assert_eq!(batch_for(0.0199, Some(1), 20.0, 256), 1);
        assert_eq!(batch_for(0.025, Some(2), 20.0, 256), 2);
        assert_eq!(batch_for(0.005, Some(0), 20.0, 256), 1);
        assert_eq!(batch_for(0.005, Some(999), 20.0, 256), 256);
    }
}
