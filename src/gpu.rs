//! The GPU layer: detection that never panics, device facts, device memory, NVRTC
//! compilation with an on-disk cache, raw kernel launches and a hang-guarded sync.

use crate::error::{Error, Result};
use cudarc::driver::{result as dres, sys, CudaContext, CudaStream};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Facts about the device, recorded with every result and baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GpuInfo {
    /// Device ordinal.
    pub ordinal: usize,
    /// Model name as the driver reports it.
    pub name: String,
    /// `sm_XY` (the seed runner's `arch`).
    pub arch: String,
    /// "X.Y".
    pub compute_capability: String,
    /// Streaming multiprocessors.
    pub sm_count: u32,
    /// L2 cache in bytes.
    pub l2_bytes: u64,
    /// Total device memory in bytes.
    pub memory_bytes: u64,
    /// Driver version (from `/proc/driver/nvidia/version` or nvidia-smi), else the API version.
    pub driver: String,
    /// CUDA driver API version, "13.0".
    pub cuda: String,
    /// NVRTC version, "13.0".
    pub nvrtc: String,
    /// The NVRTC library file this process loaded, as mapped (its real path names the full
    /// release, e.g. `…/libnvrtc.so.13.0.88`; [`nvrtc_library`]). [`GpuInfo::nvrtc`] and the
    /// source hash carry only major.minor, so two machines with the same source hash may
    /// compile with different releases; this tells them apart. Empty where unknown.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nvrtc_library: String,
    /// Maximum SM clock in MHz.
    pub sm_clock_max_mhz: u32,
    /// SM clock in MHz when read (from nvidia-smi; 0 if unavailable).
    pub sm_clock_mhz: u32,
    /// Memory clock in MHz when read (from nvidia-smi; else the maximum).
    pub mem_clock_mhz: u32,
    /// The physical GPU's UUID (`GPU-xxxxxxxx-…`, as nvidia-smi prints it): which card measured.
    #[serde(default)]
    pub uuid: String,
    /// The host name of the machine (from `/proc/sys/kernel/hostname`).
    #[serde(default)]
    pub host: String,
}

impl GpuInfo {
    /// The key that tells physical machines apart in baselines: the GPU UUID, else the host.
    pub fn machine_key(&self) -> String {
        if self.uuid.is_empty() {
            self.host.clone()
        } else {
            self.uuid.clone()
        }
    }
}

/// Where kernel sources are compiled from, and with which extra preprocessor definitions.
///
/// The working tree's `kernels/` is the default set; `KERNELGATE_BASE` adds a second set (the
/// kernels of a git revision) for same-run A/B comparisons, and the self-test compiles the
/// working tree's kernels with `-DKG_INJECT` and a delay.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct KernelSet {
    /// Directory holding the `.cu` sources and `.cuh` headers.
    pub dir: PathBuf,
    /// Extra NVRTC options such as `-DKG_INJECT`.
    pub defines: Vec<String>,
    /// Self-test: the delay written to each module's `kg_inject_ns` global (modules compiled
    /// with `-DKG_INJECT`), so all delays share one compiled module.
    pub inject_ns: Option<u64>,
}

impl KernelSet {
    /// The sources of `dir`, with no extra definitions.
    pub fn plain(dir: impl Into<PathBuf>) -> KernelSet {
        KernelSet {
            dir: dir.into(),
            defines: Vec::new(),
            inject_ns: None,
        }
    }

    fn key(&self, file: &str) -> String {
        format!("{}|{}|{file}", self.dir.display(), self.defines.join(" "))
    }
}

/// This machine's measured ceilings, recorded with every run and every baseline round, so a
/// comparison between machines can tell a uniformly slower machine from a slower kernel.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Ceilings {
    /// Device-to-device copy bandwidth, GB/s (bytes read + written).
    pub copy_gbps: f64,
    /// cuBLAS bf16 GEMM 8192³ on random data, TFLOP/s.
    pub gemm_tflops: f64,
    /// Per-launch time of an empty kernel replayed from a CUDA graph, µs.
    pub launch_us: f64,
    /// The timed window's own cost, µs: start event, one graph replay of one empty kernel, end
    /// event, behind the hold, as every sample is timed (median of 41). A host whose window
    /// costs more adds the difference to every sample (absent in rounds from before it was
    /// measured).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_us: Option<f64>,
}

fn host_name() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .ok()
        .filter(|s| !s.is_empty())
        .or_else(|| std::env::var("HOSTNAME").ok())
        .unwrap_or_default()
}

fn uuid_string(u: &sys::CUuuid) -> String {
    let b: Vec<u8> = u.bytes.iter().map(|&c| c as u8).collect();
    let hex: Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "GPU-{}-{}-{}-{}-{}",
        hex[0..4].concat(),
        hex[4..6].concat(),
        hex[6..8].concat(),
        hex[8..10].concat(),
        hex[10..16].concat()
    )
}

/// Whether the CUDA driver library (`libcuda`) can be opened: a cheap probe that initialises
/// nothing (used when listing, which never touches a device).
pub fn driver_library_present() -> bool {
    // SAFETY: only probes whether the shared library can be opened.
    unsafe { sys::is_culib_present() }
}

/// Checks, without panicking, that a CUDA driver and a device are present.
///
/// Returns the reason when not. Loads `libcuda` only after checking that it exists.
pub fn detect(ordinal: usize) -> std::result::Result<(), String> {
    if !driver_library_present() {
        return Err("the CUDA driver library (libcuda.so) is not installed".into());
    }
    dres::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
    let n = dres::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e:?}"))?;
    if n <= 0 {
        return Err("the CUDA driver reports no device".into());
    }
    if ordinal >= n as usize {
        return Err(format!(
            "device {ordinal} requested (KERNELGATE_DEVICE) but only {n} present"
        ));
    }
    Ok(())
}

/// The number of CUDA devices, or the reason there is none to count (never panics; loads
/// `libcuda` only after checking that it exists).
pub fn device_count() -> std::result::Result<usize, String> {
    if !driver_library_present() {
        return Err("the CUDA driver library (libcuda.so) is not installed".into());
    }
    dres::init().map_err(|e| format!("cuInit failed: {e:?}"))?;
    let n = dres::device::get_count().map_err(|e| format!("cuDeviceGetCount failed: {e:?}"))?;
    Ok(n.max(0) as usize)
}

/// The model name of device `ordinal` as the driver reports it, without creating a context
/// (`None` when there is no driver or no such device).
pub fn device_name(ordinal: usize) -> Option<String> {
    device_count().ok().filter(|&n| ordinal < n)?;
    let dev = dres::device::get(ordinal as i32).ok()?;
    dres::device::get_name(dev).ok()
}

/// The UUID of device `ordinal` as the driver reports it (`GPU-…`), without creating a
/// context (`None` when there is no driver or no such device).
pub fn device_uuid(ordinal: usize) -> Option<String> {
    device_count().ok().filter(|&n| ordinal < n)?;
    let dev = dres::device::get(ordinal as i32).ok()?;
    dres::device::get_uuid(dev).ok().map(|u| uuid_string(&u))
}

/// Device memory owned by the harness (raw `cuMemAlloc`), freed on drop.
#[derive(Debug)]
pub struct DeviceBuffer {
    ptr: sys::CUdeviceptr,
    bytes: usize,
    ctx: Arc<CudaContext>,
}

impl DeviceBuffer {
    /// The device address.
    pub fn ptr(&self) -> u64 {
        self.ptr
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        let _ = self.ctx.bind_to_thread();
        // SAFETY: ptr came from malloc_sync in this context and is freed once.
        let _ = unsafe { dres::free_sync(self.ptr) };
    }
}

/// A kernel argument, passed by value to `cuLaunchKernel`.
#[derive(Clone, Copy)]
pub enum KernelArg {
    /// A device pointer.
    Ptr(u64),
    /// A 32-bit signed integer.
    I32(i32),
    /// A 32-bit unsigned integer.
    U32(u32),
    /// A 64-bit unsigned integer.
    U64(u64),
    /// A 32-bit float.
    F32(f32),
    /// A TMA descriptor (`const __grid_constant__ CUtensorMap`).
    TensorMap(sys::CUtensorMap),
}

impl KernelArg {
    fn as_ptr(&mut self) -> *mut c_void {
        match self {
            KernelArg::Ptr(v) | KernelArg::U64(v) => v as *mut u64 as *mut c_void,
            KernelArg::I32(v) => v as *mut i32 as *mut c_void,
            KernelArg::U32(v) => v as *mut u32 as *mut c_void,
            KernelArg::F32(v) => v as *mut f32 as *mut c_void,
            KernelArg::TensorMap(v) => v as *mut sys::CUtensorMap as *mut c_void,
        }
    }
}

/// Grid, block and dynamic shared memory of a launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dims {
    /// Grid dimensions.
    pub grid: (u32, u32, u32),
    /// Block dimensions.
    pub block: (u32, u32, u32),
    /// Dynamic shared memory in bytes.
    pub smem: u32,
}

/// A loaded kernel function handle.
#[derive(Debug, Clone, Copy)]
pub struct Func(pub sys::CUfunction);

// SAFETY: a CUfunction is a plain driver handle, valid from any thread bound to its context;
// the harness serialises all use of the device.
unsafe impl Send for Func {}
// SAFETY: as above.
unsafe impl Sync for Func {}

/// A compiled kernel source: a loaded module and its functions.
pub struct Module {
    module: Arc<cudarc::driver::CudaModule>,
    /// Hash of source, includes, options, arch and NVRTC version.
    pub source_hash: String,
    /// The cubin, for the per-entry hashes ([`crate::cubin::entry_code_hash`]).
    cubin: Vec<u8>,
    /// Each loaded entry point's code hash ([`Module::entry_code_hash`]), computed once.
    entry_hashes: HashMap<String, String>,
    /// The entry points looked up since the last [`Gpu::start_code_log`].
    requested: Vec<String>,
    /// Seconds spent compiling (0 when served from the cache).
    pub compile_s: f64,
    /// Whether the cubin came from the on-disk cache.
    pub cached: bool,
    functions: HashMap<String, Func>,
    /// The kernel source file it was compiled from.
    file: String,
}

/// The error of loading entry point `name` of the module compiled from `file`: the driver's
/// "not found" is [`Error::MissingEntry`], anything else a driver error.
fn load_function_error(file: &str, name: &str, e: cudarc::driver::DriverError) -> Error {
    if is_missing_entry(e.0) {
        Error::MissingEntry {
            file: file.to_string(),
            entry: name.to_string(),
        }
    } else {
        Error::driver(format!("loading kernel function {name} of {file}"), e)
    }
}

/// Whether `cuModuleGetFunction`'s result says the module has no such entry point.
fn is_missing_entry(code: cudarc::driver::sys::CUresult) -> bool {
    code == cudarc::driver::sys::CUresult::CUDA_ERROR_NOT_FOUND
}

impl Module {
    /// The function `name`, loaded once ([`Error::MissingEntry`] where the module has none).
    /// Every entry point it returns is noted for [`Gpu::code_log_hash`] (one that does not
    /// exist is not: nothing launches it).
    pub fn function(&mut self, name: &str) -> Result<Func> {
        let raw = match self.functions.get(name) {
            Some(f) => *f,
            None => {
                let f = self
                    .module
                    .load_function(name)
                    .map_err(|e| load_function_error(&self.file, name, e))?;
                let raw = Func(f.cu_function());
                // Keep the module alive through self.module; the CudaFunction handle itself can go.
                self.functions.insert(name.to_string(), raw);
                let hash = crate::cubin::entry_code_hash(&self.cubin, name)
                    .unwrap_or_else(|_| code_hash(&self.cubin));
                self.entry_hashes.insert(name.to_string(), hash);
                raw
            }
        };
        if !self.requested.iter().any(|r| r == name) {
            self.requested.push(name.to_string());
        }
        Ok(raw)
    }

    /// The hash of loaded entry point `name`'s machine code ([`crate::cubin::entry_code_hash`]):
    /// the same for two builds whose `name` runs the same code, whatever else changed in the
    /// file. Where the cubin cannot be taken apart, the whole cubin's hash ([`code_hash`]).
    /// `None` for an entry point not loaded through [`Module::function`].
    pub fn entry_code_hash(&self, name: &str) -> Option<&str> {
        self.entry_hashes.get(name).map(String::as_str)
    }

    /// Whether the module defines `name` (loaded once when it does). Launchers use it to fall
    /// back for kernel sources from before an entry point existed: a `--base` revision of
    /// same-run A/B is compiled and launched by today's host code. Any other failure to load
    /// it is an error.
    pub fn has_function(&mut self, name: &str) -> Result<bool> {
        match self.function(name) {
            Ok(_) => Ok(true),
            Err(Error::MissingEntry { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// One device: its context, the harness's stream, facts, compiled modules and scratch.
pub struct Gpu {
    /// The CUDA context.
    pub ctx: Arc<CudaContext>,
    /// The stream every case runs on.
    pub stream: Arc<CudaStream>,
    /// Device facts.
    pub info: GpuInfo,
    modules: HashMap<String, Module>,
    flush: Option<DeviceBuffer>,
    flush_fn: Option<Func>,
    /// How [`Gpu::flush_l2`] empties the L2 (set from the timing policy by `timing::measure`).
    pub l2_flush: crate::timing::FlushMode,
    cache_dir: PathBuf,
    /// The kernel sources `module` compiles from (switched for A/B comparisons and the self-test).
    pub kernel_set: KernelSet,
    /// cuBLAS handle, created on first use.
    pub cublas: Option<cudarc::cublas::CudaBlas>,
    copy_gbps: Option<f64>,
    ceilings: Option<Ceilings>,
    /// The working tree's kernels as opened: where the harness's own probes come from,
    /// whatever `kernel_set` is switched to.
    probe_set: KernelSet,
    hold_fn: Option<Func>,
}

fn attr(ctx: &CudaContext, a: sys::CUdevice_attribute) -> Result<i32> {
    ctx.attribute(a)
        .map_err(|e| Error::driver(format!("reading device attribute {a:?}"), e))
}

fn nvidia_smi_clocks(ordinal: usize) -> Option<(u32, u32, String)> {
    let text = crate::gpu_state::nvidia_smi(
        &[
            "--query-gpu=clocks.sm,clocks.mem,driver_version".to_string(),
            "--format=csv,noheader,nounits".to_string(),
            format!("--id={ordinal}"),
        ],
        Duration::from_secs(10),
    )?;
    let mut it = text.trim().split(',').map(|s| s.trim().to_string());
    let sm = it.next()?.parse().ok()?;
    let mem = it.next()?.parse().ok()?;
    let drv = it.next()?;
    Some((sm, mem, drv))
}

fn version_string(v: i32) -> String {
    format!("{}.{}", v / 1000, (v % 1000) / 10)
}

/// The NVRTC version as "major.minor", or an error when NVRTC is missing.
pub fn nvrtc_version() -> Result<String> {
    // SAFETY: only probes whether the shared library can be opened.
    if !unsafe { cudarc::nvrtc::sys::is_culib_present() } {
        return Err(Error::NoGpu(
            "NVRTC (libnvrtc.so) is not installed; kernels cannot be compiled".into(),
        ));
    }
    let (mut maj, mut min) = (0, 0);
    // SAFETY: plain out-parameters.
    unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut maj, &mut min) };
    Ok(format!("{maj}.{min}"))
}

/// The NVRTC library this process has loaded ([`nvrtc_library_in`] over `/proc/self/maps`);
/// empty when none is mapped or the maps are unreadable (not Linux).
pub fn nvrtc_library() -> String {
    std::fs::read_to_string("/proc/self/maps")
        .map(|maps| nvrtc_library_in(&maps))
        .unwrap_or_default()
}

/// The first file of `maps` (the text of `/proc/<pid>/maps`) whose name starts with
/// `libnvrtc.so` (not `libnvrtc-builtins`), as mapped: the loader's real path, so a symlink
/// such as `libnvrtc.so.13` appears as its target. Empty when there is none.
pub fn nvrtc_library_in(maps: &str) -> String {
    maps.lines()
        .filter_map(|line| {
            // address perms offset dev inode path (the path may hold spaces)
            let path = line.splitn(6, char::is_whitespace).nth(5)?.trim();
            let name = Path::new(path).file_name()?.to_str()?;
            name.starts_with("libnvrtc.so").then(|| path.to_string())
        })
        .next()
        .unwrap_or_default()
}

/// Finds the CUDA include directory (holding `cuda_bf16.h`): `CUDA_HOME`, `CUDA_PATH`,
/// then the usual install places.
pub fn cuda_include_dir() -> Result<PathBuf> {
    let mut candidates: Vec<PathBuf> = Vec::new();
    for var in ["CUDA_HOME", "CUDA_PATH", "CUDA_ROOT"] {
        if let Ok(v) = std::env::var(var) {
            candidates.push(PathBuf::from(v).join("include"));
        }
    }
    candidates.push("/usr/local/cuda/include".into());
    candidates.push("/opt/cuda/include".into());
    if let Ok(rd) = std::fs::read_dir("/usr/local") {
        let mut more: Vec<PathBuf> = rd
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with("cuda-"))
            })
            .map(|p| p.join("include"))
            .collect();
        more.sort();
        more.reverse();
        candidates.extend(more);
    }
    candidates.push("/usr/include".into());
    for c in &candidates {
        if c.join("cuda_bf16.h").is_file() {
            return Ok(c.clone());
        }
    }
    Err(Error::Headers {
        searched: candidates
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", "),
    })
}

impl Gpu {
    /// Opens device `ordinal`; `kernels_dir` holds the `.cu` sources, `cache_dir` the cubin cache.
    pub fn open(ordinal: usize, kernels_dir: &Path, cache_dir: &Path) -> Result<Gpu> {
        detect(ordinal).map_err(Error::NoGpu)?;
        let ctx = CudaContext::new(ordinal).map_err(|e| Error::driver("creating context", e))?;
        // All work runs on one stream in order; the harness synchronises explicitly.
        // SAFETY: no CudaSlice crosses streams in this crate.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx
            .new_stream()
            .map_err(|e| Error::driver("creating stream", e))?;
        use sys::CUdevice_attribute as A;
        let major = attr(&ctx, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)?;
        let minor = attr(&ctx, A::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)?;
        let mut drv = 0;
        // SAFETY: plain out-parameter.
        unsafe { sys::cuDriverGetVersion(&mut drv) };
        let smi = nvidia_smi_clocks(ordinal);
        let driver = std::fs::read_to_string("/proc/driver/nvidia/version")
            .ok()
            .and_then(|t| {
                t.split_whitespace()
                    .find(|w| {
                        w.chars().filter(|c| *c == '.').count() >= 1
                            && w.chars().next().is_some_and(|c| c.is_ascii_digit())
                    })
                    .map(str::to_string)
            })
            .or_else(|| smi.as_ref().map(|s| s.2.clone()))
            .unwrap_or_else(|| version_string(drv));
        let info = GpuInfo {
            ordinal,
            name: ctx
                .name()
                .map_err(|e| Error::driver("reading device name", e))?,
            arch: format!("sm_{major}{minor}"),
            compute_capability: format!("{major}.{minor}"),
            sm_count: attr(&ctx, A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)? as u32,
            l2_bytes: attr(&ctx, A::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)? as u64,
            memory_bytes: ctx
                .total_mem()
                .map_err(|e| Error::driver("reading memory size", e))?
                as u64,
            driver,
            cuda: version_string(drv),
            nvrtc: nvrtc_version().unwrap_or_else(|_| "missing".into()),
            // After nvrtc_version, which loads the library.
            nvrtc_library: nvrtc_library(),
            sm_clock_max_mhz: (attr(&ctx, A::CU_DEVICE_ATTRIBUTE_CLOCK_RATE)? / 1000) as u32,
            sm_clock_mhz: smi.as_ref().map(|s| s.0).unwrap_or(0),
            mem_clock_mhz: smi
                .as_ref()
                .map(|s| s.1)
                .unwrap_or((attr(&ctx, A::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE)? / 1000) as u32),
            uuid: ctx.uuid().map(|u| uuid_string(&u)).unwrap_or_default(),
            host: host_name(),
        };
        Ok(Gpu {
            ctx,
            stream,
            info,
            modules: HashMap::new(),
            flush: None,
            flush_fn: None,
            l2_flush: crate::timing::FlushMode::default(),
            cache_dir: cache_dir.to_path_buf(),
            kernel_set: KernelSet::plain(kernels_dir),
            cublas: None,
            copy_gbps: None,
            ceilings: None,
            probe_set: KernelSet::plain(kernels_dir),
            hold_fn: None,
        })
    }

    /// Drops a device whose context a fault has poisoned, without the cleanup calls that
    /// would fail (and, in cuBLAS's case, panic) on it: the cuBLAS handle is leaked.
    pub fn discard(mut self) {
        if let Some(h) = self.cublas.take() {
            std::mem::forget(h);
        }
        self.modules.clear();
        self.flush = None;
        self.flush_fn = None;
    }

    /// The NVRTC target for this device: `sm_90a` on Hopper (for wgmma/setmaxnreg), else `sm_XY`.
    pub fn nvrtc_arch(&self) -> String {
        if self.info.arch == "sm_90" {
            "sm_90a".into()
        } else {
            self.info.arch.clone()
        }
    }

    /// Free and total device memory in bytes.
    pub fn mem_info(&self) -> Result<(u64, u64)> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        let (free, total) = dres::mem_get_info().map_err(|e| Error::driver("cuMemGetInfo", e))?;
        Ok((free as u64, total as u64))
    }

    /// Allocates `bytes` of device memory (at least 1 byte).
    pub fn alloc(&self, bytes: usize, what: &str) -> Result<DeviceBuffer> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        // SAFETY: plain allocation; the buffer owns and frees it.
        let ptr = unsafe { dres::malloc_sync(bytes.max(1)) }
            .map_err(|e| Error::driver(format!("allocating {bytes} bytes for {what}"), e))?;
        Ok(DeviceBuffer {
            ptr,
            bytes,
            ctx: self.ctx.clone(),
        })
    }

    /// Fills a buffer with a repeated 16-bit or 32-bit pattern (e.g. NaN poison), asynchronously.
    pub fn fill_pattern(&self, buf: &DeviceBuffer, elem_size: usize, pattern: u32) -> Result<()> {
        let n = buf.bytes / elem_size;
        // SAFETY: the buffer holds at least n elements of elem_size bytes; same context.
        let r = unsafe {
            match elem_size {
                2 => sys::cuMemsetD16Async(buf.ptr, pattern as u16, n, self.stream.cu_stream()),
                4 => sys::cuMemsetD32Async(buf.ptr, pattern, n, self.stream.cu_stream()),
                _ => {
                    sys::cuMemsetD8Async(buf.ptr, pattern as u8, buf.bytes, self.stream.cu_stream())
                }
            }
        };
        r.result().map_err(|e| Error::driver("poisoning output", e))
    }

    /// Copies a whole buffer to the host (synchronises the stream first).
    pub fn download(&self, buf: &DeviceBuffer, limit: Duration, what: &str) -> Result<Vec<u8>> {
        self.sync(limit, what)?;
        let mut out = vec![0u8; buf.bytes];
        // SAFETY: out has buf.bytes bytes; the stream is idle.
        unsafe { dres::memcpy_dtoh_sync(&mut out, buf.ptr) }
            .map_err(|e| Error::driver(format!("copying {what} to the host"), e))?;
        Ok(out)
    }

    /// Copies `len` bytes from `offset` of a buffer to the host (after the stream is idle).
    pub fn download_range(
        &self,
        buf: &DeviceBuffer,
        offset: usize,
        len: usize,
        limit: Duration,
        what: &str,
    ) -> Result<Vec<u8>> {
        assert!(offset + len <= buf.bytes, "range beyond the buffer");
        self.sync(limit, what)?;
        let mut out = vec![0u8; len];
        // SAFETY: the buffer holds offset + len bytes and `out` len bytes; the stream is idle.
        unsafe { dres::memcpy_dtoh_sync(&mut out, buf.ptr + offset as u64) }
            .map_err(|e| Error::driver(format!("copying part of {what} to the host"), e))?;
        Ok(out)
    }

    /// Counts the NaN/Inf elements of a buffer of `dtype` on the device (a grid-stride scan,
    /// `kg_nonfinite` in `kernels/probe.cu`): the count and the first such index.
    pub fn count_non_finite(
        &mut self,
        buf: &DeviceBuffer,
        dtype: crate::case::Dtype,
        limit: Duration,
        what: &str,
    ) -> Result<(usize, Option<usize>)> {
        use crate::case::Dtype;
        let (size, mask): (u32, u32) = match dtype {
            Dtype::Bf16 => (2, 0x7F80),
            Dtype::Fp16 => (2, 0x7C00),
            Dtype::Fp32 => (4, 0x7F80_0000),
        };
        let n = buf.bytes / size as usize;
        let f = self.probe_function("kg_nonfinite")?;
        let out = self.alloc(16, "the non-finite count")?;
        let init: Vec<u8> = [0u64.to_le_bytes(), u64::MAX.to_le_bytes()].concat();
        self.upload(&out, &init)?;
        let dims = self.grid_stride_dims(n as u64);
        let args = [
            KernelArg::Ptr(buf.ptr),
            KernelArg::U64(n as u64),
            KernelArg::U32(size),
            KernelArg::U32(mask),
            KernelArg::Ptr(out.ptr),
        ];
        self.launch(f, dims, &args)?;
        let r = self.download(&out, limit, what)?;
        let count = u64::from_le_bytes(r[0..8].try_into().expect("8 bytes")) as usize;
        let first = u64::from_le_bytes(r[8..16].try_into().expect("8 bytes"));
        Ok((count, (count > 0).then_some(first as usize)))
    }

    /// The launch of a grid-stride kernel over `n` elements: 256 threads a block, at most eight
    /// blocks an SM, at least one block.
    pub fn grid_stride_dims(&self, n: u64) -> Dims {
        let blocks = n.div_ceil(256).clamp(1, self.info.sm_count as u64 * 8);
        Dims {
            grid: (blocks as u32, 1, 1),
            block: (256, 1, 1),
            smem: 0,
        }
    }

    /// Copies host bytes into a buffer (synchronously).
    pub fn upload(&self, buf: &DeviceBuffer, data: &[u8]) -> Result<()> {
        assert!(data.len() <= buf.bytes);
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        // The copy goes on the harness stream and is waited for: a plain cuMemcpyHtoD runs on
        // the legacy default stream, which does not order with our non-blocking stream, and
        // from pageable memory it may return before the data has reached the device.
        // SAFETY: the buffer holds at least data.len() bytes; `data` outlives the copy because
        // the stream is synchronised before returning.
        unsafe {
            sys::cuMemcpyHtoDAsync_v2(
                buf.ptr,
                data.as_ptr() as *const c_void,
                data.len(),
                self.stream.cu_stream(),
            )
        }
        .result()
        .map_err(|e| Error::driver("copying inputs to the device", e))?;
        self.stream
            .synchronize()
            .map_err(|e| Error::driver("copying inputs to the device", e))
    }

    /// Waits for the stream, failing with [`Error::Hang`] after `limit`, and surfaces
    /// any asynchronous fault (illegal address, ...) as an error naming `what`.
    pub fn sync(&self, limit: Duration, what: &str) -> Result<()> {
        let ev = self
            .ctx
            .new_event(None)
            .map_err(|e| Error::driver("creating event", e))?;
        ev.record(&self.stream)
            .map_err(|e| Error::driver(format!("recording event after {what}"), e))?;
        let start = Instant::now();
        loop {
            // SAFETY: the event is alive for the duration of the call.
            let r = unsafe { sys::cuEventQuery(ev.cu_event()) };
            match r {
                sys::CUresult::CUDA_SUCCESS => return Ok(()),
                sys::CUresult::CUDA_ERROR_NOT_READY => {
                    if start.elapsed() > limit {
                        return Err(Error::Hang {
                            case: what.to_string(),
                            limit_s: limit.as_secs_f64(),
                        });
                    }
                    std::thread::sleep(Duration::from_micros(200));
                }
                other => return Err(Error::driver(format!("running {what}"), other)),
            }
        }
    }

    /// Launches `f` on the harness stream with `args`.
    pub fn launch(&self, f: Func, dims: Dims, args: &[KernelArg]) -> Result<()> {
        let mut store: Vec<KernelArg> = args.to_vec();
        let mut ptrs: Vec<*mut c_void> = store.iter_mut().map(|a| a.as_ptr()).collect();
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        // SAFETY: `f` was loaded in this context; every pointer in `ptrs` points into
        // `store`, which outlives the call; argument types match the kernel signature
        // by the contract of each caller (checked by the correctness gate).
        unsafe {
            dres::launch_kernel(
                f.0,
                dims.grid,
                dims.block,
                dims.smem,
                self.stream.cu_stream(),
                &mut ptrs,
            )
        }
        .map_err(|e| Error::driver(format!("launching kernel with {dims:?}"), e))
    }

    /// Launches `f` as a programmatic dependent of the launch before it in the stream
    /// (`CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION`): it may start once every CTA of
    /// that launch has executed `griddepcontrol.launch_dependents` (or exited), so its launch
    /// latency and set-up overlap the previous kernel. `f` must execute `griddepcontrol.wait`
    /// before it reads what the previous kernel writes or writes what it reads.
    pub fn launch_dependent(&self, f: Func, dims: Dims, args: &[KernelArg]) -> Result<()> {
        let mut store: Vec<KernelArg> = args.to_vec();
        let mut ptrs: Vec<*mut c_void> = store.iter_mut().map(|a| a.as_ptr()).collect();
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        // SAFETY: a plain-old-data union; the attribute below sets the member its id names.
        let mut value: sys::CUlaunchAttributeValue = unsafe { std::mem::zeroed() };
        value.programmaticStreamSerializationAllowed = 1;
        let mut attr = sys::CUlaunchAttribute {
            id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
            pad: [0; 4],
            value,
        };
        let config = sys::CUlaunchConfig {
            gridDimX: dims.grid.0,
            gridDimY: dims.grid.1,
            gridDimZ: dims.grid.2,
            blockDimX: dims.block.0,
            blockDimY: dims.block.1,
            blockDimZ: dims.block.2,
            sharedMemBytes: dims.smem,
            hStream: self.stream.cu_stream(),
            attrs: &mut attr,
            numAttrs: 1,
        };
        // SAFETY: `f` was loaded in this context; `config` and `attr` outlive the call; every
        // pointer in `ptrs` points into `store`, which outlives the call; argument types match
        // the kernel signature by the contract of each caller (checked by the correctness gate).
        unsafe { sys::cuLaunchKernelEx(&config, f.0, ptrs.as_mut_ptr(), std::ptr::null_mut()) }
            .result()
            .map_err(|e| {
                Error::driver(
                    format!("launching kernel with {dims:?} as a programmatic dependent"),
                    e,
                )
            })
    }

    /// The most dynamic shared memory one block may opt into on this GPU (bytes; 227 KiB on
    /// Hopper), as the driver reports it.
    pub fn max_dynamic_smem_optin(&self) -> Result<u64> {
        attr(
            &self.ctx,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        )
        .map(|v| v as u64)
    }

    /// How many blocks of `threads` threads (with `smem` bytes of dynamic shared memory) of `f`
    /// fit on one SM at once, from its registers and shared memory (at least 1).
    pub fn max_active_blocks(&self, f: Func, threads: u32, smem: u32) -> Result<u32> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        let mut n: std::ffi::c_int = 0;
        // SAFETY: f is a loaded function of this context (bound above); `n` outlives the call.
        unsafe {
            sys::cuOccupancyMaxActiveBlocksPerMultiprocessor(
                &mut n,
                f.0,
                threads as std::ffi::c_int,
                smem as usize,
            )
        }
        .result()
        .map_err(|e| Error::driver(format!("occupancy of a {threads}-thread block"), e))?;
        Ok(n.max(1) as u32)
    }

    /// How many clusters of a function compiled with `__cluster_dims__` can be resident at
    /// once (`cuOccupancyMaxActiveClusters`) for a launch of `grid` CTAs of `threads` threads and
    /// `smem` bytes of dynamic shared memory: a persistent grid of more clusters than this runs
    /// the extra ones as a second wave. The function's dynamic shared memory limit must already
    /// allow `smem`.
    pub fn max_active_clusters(&self, f: Func, grid: u32, threads: u32, smem: u32) -> Result<u32> {
        self.ctx
            .bind_to_thread()
            .map_err(|e| Error::driver("binding context", e))?;
        let config = sys::CUlaunchConfig {
            gridDimX: grid.max(1),
            gridDimY: 1,
            gridDimZ: 1,
            blockDimX: threads,
            blockDimY: 1,
            blockDimZ: 1,
            sharedMemBytes: smem,
            hStream: std::ptr::null_mut(),
            attrs: std::ptr::null_mut(),
            numAttrs: 0,
        };
        let mut n: std::ffi::c_int = 0;
        // SAFETY: f is a loaded function of this context (bound above); `config` (no launch
        // attributes: the cluster shape is the one compiled into f) and `n` outlive the call.
        unsafe { sys::cuOccupancyMaxActiveClusters(&mut n, f.0, &config) }
            .result()
            .map_err(|e| {
                Error::driver(
                    format!("cluster occupancy of {threads}-thread CTAs with {smem} bytes of shared memory"),
                    e,
                )
            })?;
        Ok(n.max(0) as u32)
    }

    /// Raises a function's dynamic shared memory limit. When the driver refuses (it says only
    /// "invalid argument"), the error names the GPU's per-block limit and the function's static
    /// shared memory, read after the refusal so that the accepted path is the plain driver call.
    pub fn set_max_dynamic_smem(&self, f: Func, bytes: u32) -> Result<()> {
        // SAFETY: f is a loaded function of this context.
        let set = unsafe {
            sys::cuFuncSetAttribute(
                f.0,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                bytes as i32,
            )
        }
        .result();
        let Err(e) = set else {
            return Ok(());
        };
        let optin = attr(
            &self.ctx,
            sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        );
        let mut stat: std::ffi::c_int = 0;
        // SAFETY: f is a loaded function of this context; `stat` outlives the call.
        let got = unsafe {
            sys::cuFuncGetAttribute(
                &mut stat,
                sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES,
                f.0,
            )
        }
        .result();
        let why = match (optin, got) {
            (Ok(optin), Ok(())) => format!(
                "{e:?}: the launch asks for {bytes} bytes of dynamic shared memory a block beside the function's {stat} bytes of static shared memory; {} allows {optin} bytes a block in all",
                self.info.name
            ),
            _ => format!("{e:?}"),
        };
        Err(Error::Driver {
            context: format!("raising dynamic shared memory to {bytes} bytes"),
            message: why,
        })
    }

    /// The measured memory bandwidth ceiling of this device in GB/s: the median of 15
    /// device-to-device copies of 1 GiB (or an eighth of free memory if less), counting bytes
    /// read plus bytes written. Measured once per process.
    pub fn copy_bandwidth_gbps(&mut self) -> Result<f64> {
        if let Some(bw) = self.copy_gbps {
            return Ok(bw);
        }
        let (free, _) = self.mem_info()?;
        let bytes = (1usize << 30).min(free as usize / 8).max(1 << 20);
        let src = self.alloc(bytes, "bandwidth probe source")?;
        let dst = self.alloc(bytes, "bandwidth probe destination")?;
        let (sp, dp) = (src.ptr(), dst.ptr());
        let ms = self.time_median(3, 15, "bandwidth probe", 0.0, &mut |gpu: &Gpu| {
            // SAFETY: both buffers are live allocations of `bytes` bytes in this context.
            unsafe { sys::cuMemcpyDtoDAsync_v2(dp, sp, bytes, gpu.stream.cu_stream()) }
                .result()
                .map_err(|e| Error::driver("device-to-device copy", e))
        })?;
        let bw = 2.0 * bytes as f64 / (ms / 1e3) / 1e9;
        self.copy_gbps = Some(bw);
        Ok(bw)
    }

    /// The copy bandwidth measured so far (by [`Gpu::copy_bandwidth_gbps`]), if any.
    pub fn measured_copy_gbps(&self) -> Option<f64> {
        self.copy_gbps
    }

    /// The ceilings measured so far (by [`Gpu::ceilings`]), if any.
    pub fn measured_ceilings(&self) -> Option<Ceilings> {
        self.ceilings
    }

    /// This machine's ceilings (copy bandwidth, a fixed cuBLAS GEMM, graph-replayed launch
    /// latency), measured once per process (about 0.2 s).
    pub fn ceilings(&mut self) -> Result<Ceilings> {
        if let Some(c) = self.ceilings {
            return Ok(c);
        }
        let copy_gbps = self.copy_bandwidth_gbps()?;
        let gemm_tflops = self.gemm_probe_tflops()?;
        let launch_us = self.launch_probe_us()?;
        let window_us = Some(self.window_probe_us()?);
        let c = Ceilings {
            copy_gbps,
            gemm_tflops,
            launch_us,
            window_us,
        };
        self.ceilings = Some(c);
        Ok(c)
    }

    /// Median of `reps` timed runs of `f` after `warm` untimed ones, in ms; each timed run
    /// behind a hold kernel of `hold_us` when that is positive (as the harness times samples).
    fn time_median(
        &mut self,
        warm: usize,
        reps: usize,
        what: &str,
        hold_us: f64,
        f: &mut dyn FnMut(&Gpu) -> Result<()>,
    ) -> Result<f64> {
        let crate::timing::Events { start, end } = crate::timing::events(self)?;
        for _ in 0..warm {
            f(self)?;
        }
        let mut times = Vec::with_capacity(reps);
        for _ in 0..reps {
            if hold_us > 0.0 {
                self.hold(hold_us)?;
            }
            start
                .record(&self.stream)
                .map_err(|e| Error::driver("recording event", e))?;
            f(self)?;
            end.record(&self.stream)
                .map_err(|e| Error::driver("recording event", e))?;
            self.sync(Duration::from_secs(10), what)?;
            times.push(
                start
                    .elapsed_ms(&end)
                    .map_err(|e| Error::driver("reading event time", e))? as f64,
            );
        }
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }

    /// cuBLAS bf16 GEMM 8192³ (fp32 accumulate) on random inputs, TFLOP/s.
    fn gemm_probe_tflops(&mut self) -> Result<f64> {
        use cudarc::cublas::sys as cb;
        // SAFETY: only probes whether the shared library can be opened.
        if !unsafe { cb::is_culib_present() } {
            return Ok(0.0);
        }
        let n: usize = 8192;
        let (a, b, c) = (
            self.alloc(n * n * 2, "GEMM probe A")?,
            self.alloc(n * n * 2, "GEMM probe B")?,
            self.alloc(n * n * 2, "GEMM probe C")?,
        );
        let sm = self.info.sm_count;
        let fill = self.module("fill.cu")?.function("kg_fill_bf16")?;
        for (t, buf) in [&a, &b].into_iter().enumerate() {
            self.launch(
                fill,
                Dims {
                    grid: (sm * 8, 1, 1),
                    block: (256, 1, 1),
                    smem: 0,
                },
                &[
                    KernelArg::Ptr(buf.ptr()),
                    KernelArg::U64((n * n) as u64),
                    KernelArg::U64(0x006b_6770_726f_6265),
                    KernelArg::U32(t as u32),
                    KernelArg::F32(-1.0),
                    KernelArg::F32(1.0),
                ],
            )?;
        }
        if self.cublas.is_none() {
            let h =
                cudarc::cublas::CudaBlas::new(self.stream.clone()).map_err(|e| Error::Cublas {
                    context: "creating handle".into(),
                    message: format!("{e:?}"),
                })?;
            self.cublas = Some(h);
        }
        let (pa, pb, pc) = (a.ptr(), b.ptr(), c.ptr());
        let ms = self.time_median(3, 9, "GEMM probe", 0.0, &mut |gpu: &Gpu| {
            let h = *gpu.cublas.as_ref().expect("created above").handle();
            let d = n as i32;
            // SAFETY: three live n×n bf16 buffers of this context.
            unsafe {
                crate::backend::cublas::gemm_row_major(
                    h,
                    cb::cudaDataType::CUDA_R_16BF,
                    (d, d, d),
                    (pa, pb, pc),
                )
            }
        })?;
        Ok(2.0 * (n as f64).powi(3) / (ms / 1e3) / 1e12)
    }

    /// A function of the harness's own `probe.cu` (compiled from the working tree's kernels
    /// whatever kernel set is current).
    fn probe_function(&mut self, name: &str) -> Result<Func> {
        let current = std::mem::replace(&mut self.kernel_set, self.probe_set.clone());
        let f = self.module("probe.cu").and_then(|m| m.function(name));
        self.kernel_set = current;
        f
    }

    /// Enqueues a kernel that keeps the stream busy for `us` µs, so that what the host enqueues
    /// next (a sample's start event and launches) is queued before the GPU gets to it.
    pub fn hold(&mut self, us: f64) -> Result<()> {
        let f = match self.hold_fn {
            Some(f) => f,
            None => {
                let f = self.probe_function("kg_hold")?;
                self.hold_fn = Some(f);
                f
            }
        };
        let dims = Dims {
            grid: (1, 1, 1),
            block: (1, 1, 1),
            smem: 0,
        };
        self.launch(f, dims, &[KernelArg::U64((us * 1e3).round() as u64)])
    }

    /// Per-launch time of an empty kernel, 128 launches replayed from a CUDA graph, µs.
    fn launch_probe_us(&mut self) -> Result<f64> {
        const LAUNCHES: usize = 128;
        let graph = self.empty_kernel_graph(LAUNCHES, "launch probe")?;
        let ms = self.time_median(3, 9, "launch probe", 0.0, &mut |_gpu: &Gpu| {
            graph
                .launch()
                .map_err(|e| Error::driver("replaying the launch probe", e))
        })?;
        Ok(ms * 1e3 / LAUNCHES as f64)
    }

    /// The cost of a sample's timed window itself, µs: hold, start event, replay of a graph of
    /// one empty kernel, end event; the median of 41 after 5 warm-ups.
    fn window_probe_us(&mut self) -> Result<f64> {
        let graph = self.empty_kernel_graph(1, "window probe")?;
        let ms = self.time_median(
            5,
            41,
            "window probe",
            crate::timing::HOLD_US,
            &mut |_gpu: &Gpu| {
                graph
                    .launch()
                    .map_err(|e| Error::driver("replaying the window probe", e))
            },
        )?;
        Ok(ms * 1e3)
    }

    /// A CUDA graph of `launches` launches of the empty probe kernel (one warp).
    fn empty_kernel_graph(
        &mut self,
        launches: usize,
        what: &str,
    ) -> Result<cudarc::driver::CudaGraph> {
        let f = self.probe_function("kg_empty")?;
        let dims = Dims {
            grid: (1, 1, 1),
            block: (32, 1, 1),
            smem: 0,
        };
        let context = format!("capturing the {what}");
        self.stream
            .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
            .map_err(|e| Error::driver(context.clone(), e))?;
        let mut launched = Ok(());
        for _ in 0..launches {
            launched = self.launch(f, dims, &[]);
            if launched.is_err() {
                break;
            }
        }
        let graph = self
            .stream
            .end_capture(sys::CUgraphInstantiate_flags(0))
            .map_err(|e| Error::driver(context.clone(), e))?;
        launched?;
        graph.ok_or_else(|| Error::Driver {
            context,
            message: "the capture produced no graph".into(),
        })
    }

    /// Empties the L2 so the next sample starts cold, by [`Gpu::l2_flush`]: `read` sweeps a
    /// buffer twice the L2 size with loads (`kg_l2_sweep`), leaving the L2 cold and clean (the
    /// previous sample's dirty lines are written back here, outside the timed window); `write`
    /// memsets it, leaving the L2 full of dirty lines that the timed launch writes back.
    pub fn flush_l2(&mut self) -> Result<()> {
        if self.flush.is_none() {
            let bytes = (self.info.l2_bytes as usize * 2)
                .max(1 << 20)
                .next_multiple_of(16);
            let buf = self.alloc(bytes, "L2 flush buffer")?;
            // Defined contents (and backed pages) before the first read sweep.
            // SAFETY: buf is a live allocation of buf.bytes bytes in this context.
            unsafe { dres::memset_d8_async(buf.ptr, 0x5a, buf.bytes, self.stream.cu_stream()) }
                .map_err(|e| Error::driver("initialising the L2 flush buffer", e))?;
            self.flush = Some(buf);
        }
        let (ptr, bytes) = {
            let buf = self.flush.as_ref().expect("allocated above");
            (buf.ptr, buf.bytes)
        };
        match self.l2_flush {
            crate::timing::FlushMode::Write => {
                // SAFETY: ptr is a live allocation of `bytes` bytes in this context.
                unsafe { dres::memset_d8_async(ptr, 0x5a, bytes, self.stream.cu_stream()) }
                    .map_err(|e| Error::driver("flushing L2", e))
            }
            crate::timing::FlushMode::Read => {
                let f = match self.flush_fn {
                    Some(f) => f,
                    None => {
                        let f = self.probe_function("kg_l2_sweep")?;
                        self.flush_fn = Some(f);
                        f
                    }
                };
                let dims = Dims {
                    grid: (self.info.sm_count.max(1) * 8, 1, 1),
                    block: (256, 1, 1),
                    smem: 0,
                };
                // The sink is never written (the kernel stores only for an impossible value);
                // pointing it into the flush buffer keeps it a valid address all the same.
                let args = [
                    KernelArg::Ptr(ptr),
                    KernelArg::U64((bytes / 16) as u64),
                    KernelArg::Ptr(ptr),
                ];
                self.launch(f, dims, &args)
            }
        }
    }

    /// Forgets which entry points were looked up, so that [`Gpu::code_log_hash`] covers what is
    /// looked up from now on (one backend's `prepare`).
    pub fn start_code_log(&mut self) {
        for m in self.modules.values_mut() {
            m.requested.clear();
        }
    }

    /// The entry points looked up since [`Gpu::start_code_log`]: (file, entry point,
    /// [`Module::entry_code_hash`]) of each.
    fn code_log(&self) -> Vec<(String, String, String)> {
        self.modules
            .values()
            .flat_map(|m| {
                m.requested.iter().map(move |e| {
                    let hash = m.entry_code_hash(e).expect("noted only once loaded");
                    (m.file.clone(), e.clone(), hash.to_string())
                })
            })
            .collect()
    }

    /// The code hash of the entry points looked up since [`Gpu::start_code_log`]: SHA-256 over
    /// each (file, entry point, [`Module::entry_code_hash`]) in name order, the first 12 bytes
    /// in hex; empty when none was (vendor libraries, workers). Every launch a backend prepares
    /// looks its functions up while preparing, so this is the machine code a case runs.
    pub fn code_log_hash(&self) -> String {
        let used = self.code_log();
        if used.is_empty() {
            return String::new();
        }
        crate::machine_code::combine_code_hashes(&used)
    }

    /// The entry points looked up since [`Gpu::start_code_log`], as `file:entry` in name order:
    /// what [`Gpu::code_log_hash`] covers.
    pub fn code_log_entries(&self) -> Vec<String> {
        let mut used: Vec<String> = self
            .code_log()
            .into_iter()
            .map(|(file, entry, _)| format!("{file}:{entry}"))
            .collect();
        used.sort();
        used
    }

    /// The module compiled from `<kernel set>/<file>`, compiling (or loading from the cache)
    /// once per kernel set.
    pub fn module(&mut self, file: &str) -> Result<&mut Module> {
        let key = self.kernel_set.key(file);
        if !self.modules.contains_key(&key) {
            let m = self.compile(file)?;
            self.modules.insert(key.clone(), m);
        }
        if let Some(ns) = self.kernel_set.inject_ns {
            let m = &self.modules[&key];
            if let Ok(mut sym) = m.module.get_global("kg_inject_ns", &self.stream) {
                self.stream
                    .memcpy_htod(&ns.to_le_bytes(), &mut sym)
                    .map_err(|e| Error::driver("setting the injected delay", e))?;
                self.stream
                    .synchronize()
                    .map_err(|e| Error::driver("setting the injected delay", e))?;
            }
        }
        Ok(self.modules.get_mut(&key).expect("inserted above"))
    }

    fn compile(&self, file: &str) -> Result<Module> {
        let dir = &self.kernel_set.dir;
        let path = dir.join(file);
        let source = std::fs::read_to_string(&path)
            .map_err(|e| Error::io("reading kernel source", &path, e))?;
        let arch = self.nvrtc_arch();
        let nvrtc = nvrtc_version()?;
        let mut options = default_options(&arch);
        options.extend(self.kernel_set.defines.iter().cloned());
        // Hash the source, the local files it includes, options, arch and NVRTC version.
        let includes = local_includes(dir, &source)?;
        let hash = source_hash(&source, &includes, &options, &nvrtc);
        let header_srcs = nvrtc_headers(dir, &includes)?;
        let cubin_path = self.cache_dir.join(format!(
            "{}-{arch}-{hash}.cubin",
            file.trim_end_matches(".cu")
        ));
        let start = Instant::now();
        let (cubin, cached) = match std::fs::read(&cubin_path) {
            Ok(bytes) if !bytes.is_empty() => (bytes, true),
            _ => {
                let include = cuda_include_dir()?;
                let (bytes, _log) = nvrtc_compile(file, &source, &header_srcs, &options, &include)?;
                std::fs::create_dir_all(&self.cache_dir)
                    .map_err(|e| Error::io("creating", &self.cache_dir, e))?;
                crate::baseline::write_atomic(&cubin_path, &bytes)?;
                (bytes, false)
            }
        };
        let compile_s = if cached {
            0.0
        } else {
            start.elapsed().as_secs_f64()
        };
        let kept = cubin.clone();
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_binary(cubin))
            .map_err(|e| {
                Error::driver(
                    format!("loading module {file} ({})", cubin_path.display()),
                    e,
                )
            })?;
        Ok(Module {
            module,
            source_hash: hash,
            cubin: kept,
            entry_hashes: HashMap::new(),
            requested: Vec::new(),
            compile_s,
            cached,
            functions: HashMap::new(),
            file: file.to_string(),
        })
    }
}

/// A module's source hash: the first 12 bytes of SHA-256, in hex, over its source, each (name,
/// text) of `deps` (the local files it includes, [`local_includes`]), the NVRTC options (arch,
/// `-std`, defines) and the NVRTC version. Baselines restart when it changes. Before session 21
/// `deps` was every `kernels/*.cuh` whether included or not, so adding or editing any header
/// restarted every module's baselines; `kernelgate rehash` moves stored hashes of the old form
/// to this one ([`hash_migration`]).
pub fn source_hash(
    source: &str,
    deps: &[(String, String)],
    options: &[String],
    nvrtc: &str,
) -> String {
    let mut h = Sha256::new();
    h.update(source.as_bytes());
    for (name, text) in deps {
        h.update(name.as_bytes());
        h.update(text.as_bytes());
    }
    h.update(options.join(" ").as_bytes());
    h.update(nvrtc.as_bytes());
    hex12(&h.finalize())
}

/// The first 12 bytes of a SHA-256 digest in hex: the form of every hash the harness stores
/// (source hashes, code hashes).
pub fn hex12(digest: &[u8]) -> String {
    digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// A whole cubin's hash ([`hex12`] of its SHA-256): the fallback code hash of an entry point
/// when the cubin cannot be taken apart ([`Module::entry_code_hash`]).
pub fn code_hash(cubin: &[u8]) -> String {
    hex12(&Sha256::digest(cubin))
}

/// The names in `text`'s `#include "name"` and `#include <name>` lines, in order (NVRTC finds
/// its in-memory headers either way).
fn include_names(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| {
            let rest = l.trim_start().strip_prefix('#')?.trim_start();
            let rest = rest.strip_prefix("include")?.trim_start();
            let close = match rest.chars().next()? {
                '"' => '"',
                '<' => '>',
                _ => return None,
            };
            rest[1..].split(close).next().map(str::to_string)
        })
        .collect()
}

/// The local files of `dir` that `source` includes (`#include "name"` or `<name>`), directly or
/// through other such files, sorted by name, as (name, text). A name that is not a file of
/// `dir` (a CUDA or system header) is left to NVRTC's include path and not hashed.
pub fn local_includes(dir: &Path, source: &str) -> Result<Vec<(String, String)>> {
    let mut found: BTreeMap<String, String> = BTreeMap::new();
    let mut todo = include_names(source);
    while let Some(name) = todo.pop() {
        if found.contains_key(&name) {
            continue;
        }
        let path = dir.join(&name);
        if !path.is_file() {
            continue;
        }
        let text = std::fs::read_to_string(&path)
            .map_err(|e| Error::io("reading kernel header", &path, e))?;
        todo.extend(include_names(&text));
        found.insert(name, text);
    }
    Ok(found.into_iter().collect())
}

/// The in-memory headers NVRTC gets for a module: every local header of `dir` and any other
/// local file the module includes (`includes`, from [`local_includes`]).
fn nvrtc_headers(dir: &Path, includes: &[(String, String)]) -> Result<Vec<(String, String)>> {
    let mut headers = local_headers(dir)?;
    for (name, text) in includes {
        if !headers.iter().any(|(n, _)| n == name) {
            headers.push((name.clone(), text.clone()));
        }
    }
    Ok(headers)
}

/// The stored-hash migration of `kernelgate rehash`: for every `dir/*.cu`, its source hash in
/// the form used before session 21 (every `*.cuh` of `dir` as a dependency) mapped to its hash
/// now ([`source_hash`] over [`local_includes`]) and the file's name, both for NVRTC version
/// `nvrtc`, architecture `arch` and no defines (how the harness compiles by default).
pub fn hash_migration(
    dir: &Path,
    arch: &str,
    nvrtc: &str,
) -> Result<BTreeMap<String, (String, String)>> {
    let options = default_options(arch);
    let all_headers = local_headers(dir)?;
    let mut map = BTreeMap::new();
    for (name, source) in kernel_sources(dir)? {
        let old = source_hash(&source, &all_headers, &options, nvrtc);
        map.insert(old, (current_hash(dir, &source, arch, nvrtc)?, name));
    }
    Ok(map)
}

/// The source hash every `dir/*.cu` has now ([`source_hash`] over [`local_includes`]), mapped
/// to the file's name, for NVRTC version `nvrtc`, architecture `arch` and no defines: the
/// hashes a run of the current kernel sources would store. A stored `cuda` entry whose hash is
/// not among them timed code that has since changed (`kernelgate coverage`). No GPU needed.
pub fn current_hashes(dir: &Path, arch: &str, nvrtc: &str) -> Result<BTreeMap<String, String>> {
    let mut map = BTreeMap::new();
    for (name, source) in kernel_sources(dir)? {
        map.insert(current_hash(dir, &source, arch, nvrtc)?, name);
    }
    Ok(map)
}

/// The source hash of `source` (a kernel file of `dir`) as the harness computes it by default.
pub fn current_hash(dir: &Path, source: &str, arch: &str, nvrtc: &str) -> Result<String> {
    let includes = local_includes(dir, source)?;
    Ok(source_hash(
        source,
        &includes,
        &default_options(arch),
        nvrtc,
    ))
}

/// The NVRTC options a kernel file is compiled with for `arch`, before any defines.
fn default_options(arch: &str) -> Vec<String> {
    vec![
        format!("--gpu-architecture={arch}"),
        "-std=c++17".to_string(),
    ]
}

/// Every `dir/*.cu` as (file name, source text), sorted by name.
pub fn kernel_sources(dir: &Path) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    for path in crate::files::with_extension(dir, "cu")? {
        let source = std::fs::read_to_string(&path)
            .map_err(|e| Error::io("reading kernel source", &path, e))?;
        out.push((
            path.file_name().unwrap().to_string_lossy().to_string(),
            source,
        ));
    }
    Ok(out)
}

/// The local headers of a kernel directory (`*.cuh`), sorted by name, as (name, text): NVRTC gets
/// them as in-memory headers.
fn local_headers(dir: &Path) -> Result<Vec<(String, String)>> {
    let headers = crate::files::with_extension(dir, "cuh")?;
    let mut out = Vec::new();
    for hp in &headers {
        let t =
            std::fs::read_to_string(hp).map_err(|e| Error::io("reading kernel header", hp, e))?;
        out.push((hp.file_name().unwrap().to_string_lossy().to_string(), t));
    }
    Ok(out)
}

/// Compiles `file` of kernel directory `dir` for `arch` (e.g. `sm_90a`) as a run does (NVRTC,
/// `-std=c++17`, the directory's headers, the CUDA include directory) with `extra` options
/// added, without a GPU and without the cubin cache: for checking kernels on a machine that
/// has NVRTC and the CUDA headers but no device. Returns NVRTC's log (with
/// `--ptxas-options=-v`, ptxas's per-entry report). A compile error is [`Error::Compile`] with
/// the log; missing NVRTC or headers are their own errors.
pub fn compile_offline(dir: &Path, file: &str, arch: &str, extra: &[String]) -> Result<String> {
    Ok(compile_offline_cubin(dir, file, arch, extra)?.1)
}

/// [`compile_offline`]'s cubin and log: the machine code a run would load for `file` of `dir`
/// (same options, same headers; no cache). [`crate::machine_code`] compares two of them.
pub fn compile_offline_cubin(
    dir: &Path,
    file: &str,
    arch: &str,
    extra: &[String],
) -> Result<(Vec<u8>, String)> {
    nvrtc_version()?;
    let path = dir.join(file);
    let source =
        std::fs::read_to_string(&path).map_err(|e| Error::io("reading kernel source", &path, e))?;
    let headers = nvrtc_headers(dir, &local_includes(dir, &source)?)?;
    let mut options = default_options(arch);
    options.extend(extra.iter().cloned());
    let include = cuda_include_dir()?;
    nvrtc_compile(file, &source, &headers, &options, &include)
}

/// Compiles `source` with NVRTC; returns the cubin and the compiler's log.
fn nvrtc_compile(
    file: &str,
    source: &str,
    headers: &[(String, String)],
    options: &[String],
    include: &Path,
) -> Result<(Vec<u8>, String)> {
    use cudarc::nvrtc::sys as nv;
    use std::ffi::{CStr, CString};
    let cerr = |log: String| Error::Compile {
        file: file.to_string(),
        options: options.join(" "),
        log,
    };
    let src = CString::new(source).map_err(|_| cerr("source contains a NUL byte".into()))?;
    let name = CString::new(file).expect("file names have no NUL");
    let hdr_srcs: Vec<CString> = headers
        .iter()
        .map(|(_, s)| CString::new(s.as_str()).expect("no NUL"))
        .collect();
    let hdr_names: Vec<CString> = headers
        .iter()
        .map(|(n, _)| CString::new(n.as_str()).expect("no NUL"))
        .collect();
    let hp: Vec<*const std::ffi::c_char> = hdr_srcs.iter().map(|c| c.as_ptr()).collect();
    let hn: Vec<*const std::ffi::c_char> = hdr_names.iter().map(|c| c.as_ptr()).collect();
    let mut opts: Vec<CString> = options
        .iter()
        .map(|o| CString::new(o.as_str()).expect("no NUL"))
        .collect();
    opts.push(CString::new(format!("--include-path={}", include.display())).expect("no NUL"));
    let optp: Vec<*const std::ffi::c_char> = opts.iter().map(|c| c.as_ptr()).collect();
    let mut prog: nv::nvrtcProgram = std::ptr::null_mut();
    // SAFETY: all strings are NUL-terminated and outlive the program; counts match arrays.
    unsafe {
        let r = nv::nvrtcCreateProgram(
            &mut prog,
            src.as_ptr(),
            name.as_ptr(),
            hp.len() as i32,
            if hp.is_empty() {
                std::ptr::null()
            } else {
                hp.as_ptr()
            },
            if hn.is_empty() {
                std::ptr::null()
            } else {
                hn.as_ptr()
            },
        );
        if r != nv::nvrtcResult::NVRTC_SUCCESS {
            return Err(cerr(format!("nvrtcCreateProgram: {r:?}")));
        }
        let r = nv::nvrtcCompileProgram(prog, optp.len() as i32, optp.as_ptr());
        let mut log_size = 0usize;
        nv::nvrtcGetProgramLogSize(prog, &mut log_size);
        let mut log = vec![0u8; log_size.max(1)];
        nv::nvrtcGetProgramLog(prog, log.as_mut_ptr() as *mut _);
        let log = CStr::from_bytes_until_nul(&log)
            .map(|c| c.to_string_lossy().to_string())
            .unwrap_or_default();
        if r != nv::nvrtcResult::NVRTC_SUCCESS {
            nv::nvrtcDestroyProgram(&mut prog);
            return Err(cerr(format!("{r:?}\n{log}")));
        }
        let mut size = 0usize;
        nv::nvrtcGetCUBINSize(prog, &mut size);
        let mut cubin = vec![0u8; size];
        let r = nv::nvrtcGetCUBIN(prog, cubin.as_mut_ptr() as *mut _);
        nv::nvrtcDestroyProgram(&mut prog);
        if r != nv::nvrtcResult::NVRTC_SUCCESS || size == 0 {
            return Err(cerr(format!("nvrtcGetCUBIN: {r:?} (size {size})")));
        }
        Ok((cubin, log))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use cudarc::driver::{sys::CUresult, DriverError};

    #[test]
    fn the_nvrtc_library_is_read_from_the_process_maps() {
        let maps = "\
7f1c2a000000-7f1c2a200000 r--p 00000000 103:02 4194305                   /usr/lib/x86_64-linux-gnu/libc.so.6
7f1c2b000000-7f1c2b400000 r-xp 00000000 103:02 5242881                   /usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc-builtins.so.13.0.88
7f1c2c000000-7f1c2f000000 r-xp 00000000 103:02 5242880                   /usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13.0.88
7f1c2f000000-7f1c2f100000 r--p 03000000 103:02 5242880                   /usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13.0.88
7ffd1a000000-7ffd1a021000 rw-p 00000000 00:00 0                          [stack]
7ffd1a100000-7ffd1a101000 rw-p 00000000 00:00 0
";
        assert_eq!(
            nvrtc_library_in(maps),
            "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13.0.88"
        );
        // A path with a space, and no NVRTC at all.
        assert_eq!(
            nvrtc_library_in("1-2 r-xp 0 0:0 7   /opt/my cuda/lib/libnvrtc.so.12.8.93\n"),
            "/opt/my cuda/lib/libnvrtc.so.12.8.93"
        );
        assert_eq!(
            nvrtc_library_in("1-2 r-xp 0 0:0 7   /usr/lib/libc.so.6\n"),
            ""
        );
        assert_eq!(nvrtc_library_in(""), "");
    }

    #[test]
    fn gpu_info_without_the_library_field_still_reads() {
        // Results written before the field existed.
        let old = r#"{"ordinal":0,"name":"NVIDIA H200","arch":"sm_90","compute_capability":"9.0",
            "sm_count":132,"l2_bytes":52428800,"memory_bytes":150000000000,"driver":"580.159.04",
            "cuda":"13.0","nvrtc":"13.0","sm_clock_max_mhz":1980,"sm_clock_mhz":1980,
            "mem_clock_mhz":3201,"uuid":"GPU-435ebd82","host":"vm"}"#;
        let g: GpuInfo = serde_json::from_str(old).unwrap();
        assert_eq!(g.nvrtc_library, "");
        // And an empty one is not written.
        assert!(!serde_json::to_string(&g).unwrap().contains("nvrtc_library"));
    }

    #[test]
    fn a_missing_entry_point_is_its_own_error_naming_file_and_entry() {
        let e = load_function_error(
            "gemm_wgmma.cu",
            "gemm_wgmma_f16_128x64_ts",
            DriverError(CUresult::CUDA_ERROR_NOT_FOUND),
        );
        assert!(
            matches!(&e, Error::MissingEntry { file, entry }
                if file == "gemm_wgmma.cu" && entry == "gemm_wgmma_f16_128x64_ts"),
            "{e:?}"
        );
        // Any other failure stays a driver error (formatting one needs the driver library,
        // so only the classification is checked here).
        assert!(is_missing_entry(CUresult::CUDA_ERROR_NOT_FOUND));
        for code in [
            CUresult::CUDA_ERROR_INVALID_CONTEXT,
            CUresult::CUDA_ERROR_INVALID_HANDLE,
            CUresult::CUDA_ERROR_ILLEGAL_ADDRESS,
        ] {
            assert!(!is_missing_entry(code), "{code:?}");
        }
    }
}
