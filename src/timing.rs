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
    /// Warm-up launches run.
    pub warmup_launches: usize,
}

struct Events {
    start: cudarc::driver::CudaEvent,
    end: cudarc::driver::CudaEvent,
}

fn events(gpu: &Gpu) -> Result<Events> {
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
    let ev = events(gpu)?;
    let time_region = |gpu: &mut Gpu,
                       n: usize,
                       launch: &mut dyn FnMut(&Gpu) -> Result<()>,
                       flush: bool|
     -> Result<f64> {
        if flush {
            gpu.flush_l2()?;
        }
        ev.start
            .record(&gpu.stream)
            .map_err(|e| Error::driver("recording start event", e))?;
        for _ in 0..n {
            launch(gpu)?;
        }
        ev.end
            .record(&gpu.stream)
            .map_err(|e| Error::driver("recording end event", e))?;
        gpu.sync(hang, name)?;
        Ok(ev
            .start
            .elapsed_ms(&ev.end)
            .map_err(|e| Error::driver("reading event time", e))? as f64)
    };

    // Warm-up by time: double the batch until the warm-up budget is spent.
    let mut warmup_launches = 0usize;
    let mut spent = 0.0;
    let mut n = 1usize;
    let mut single = f64::INFINITY;
    while spent < policy.warmup_ms || warmup_launches < 3 {
        let t = time_region(gpu, n, launch, false)?;
        single = single.min(t / n as f64);
        spent += t;
        warmup_launches += n;
        if spent < policy.warmup_ms / 4.0 {
            n = (n * 2).min(4096);
        }
    }

    // Batch short kernels; replay the batch from a CUDA graph when capture works.
    let batch = if single * 1e3 < policy.min_sample_us {
        ((policy.min_sample_us / (single * 1e3).max(1e-3)).ceil() as usize)
            .clamp(2, policy.max_batch)
    } else {
        1
    };
    let graph = if batch > 1 {
        capture(gpu, batch, launch)
    } else {
        None
    };

    let mut ms = Vec::new();
    let started = Instant::now();
    let cap = Duration::from_secs_f64(policy.max_time_ms / 1e3);
    loop {
        let t = match &graph {
            Some(g) => {
                if flush_l2 {
                    gpu.flush_l2()?;
                }
                ev.start
                    .record(&gpu.stream)
                    .map_err(|e| Error::driver("recording start event", e))?;
                g.launch()
                    .map_err(|e| Error::driver("replaying graph", e))?;
                ev.end
                    .record(&gpu.stream)
                    .map_err(|e| Error::driver("recording end event", e))?;
                gpu.sync(hang, name)?;
                ev.start
                    .elapsed_ms(&ev.end)
                    .map_err(|e| Error::driver("reading event time", e))? as f64
            }
            None => time_region(gpu, batch, launch, flush_l2)?,
        };
        ms.push(t / batch as f64);
        let n = ms.len();
        if n >= policy.max_samples {
            break;
        }
        if n >= policy.min_samples {
            if started.elapsed() > cap {
                break;
            }
            if n % 5 == 0 {
                let mut s = ms.clone();
                s.sort_by(f64::total_cmp);
                let med = percentile(&s, 50.0);
                let mut dev: Vec<f64> = s.iter().map(|x| (x - med).abs()).collect();
                dev.sort_by(f64::total_cmp);
                if median_noise(med, percentile(&dev, 50.0), n) < policy.target_noise {
                    break;
                }
            }
        }
    }
    Ok(Samples {
        ms,
        batch,
        graph: graph.is_some(),
        flushed: flush_l2,
        warmup_launches,
    })
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
