//! Several GPUs in one run: which devices to use (`KERNELGATE_DEVICE`, `KERNELGATE_DEVICES`,
//! `kernelgate run --devices`) and a pool of per-device slots that cases lease one at a time.
//!
//! Each slot holds one device's state (for the harness: a lazily opened [`crate::gpu::Gpu`]
//! with its module cache, cuBLAS handle and external workers) behind its own lock. A case
//! leases whichever live slot is free (blocking until one is) and keeps it for its whole life
//! (check, timing, re-measurement), so it is pinned to one device. A slot whose device was lost
//! to a sticky fault, hung, or could not be opened is retired with the reason; later cases go
//! to the other slots, and once none is left every lease fails with all the reasons.
//!
//! Across processes (cargo-nextest runs each case in its own process; two `cargo test` runs may
//! share a host) the pool can also take a host-wide advisory lock per device ([`HostLocks`]):
//! a lease then holds its device's lock file as well as the slot, and a device held by another
//! kernelgate process counts as busy. Without several devices configured no lock is taken.
//!
//! The pool and the locks are generic over the slot state and the lock keys, so scheduling,
//! fault isolation and locking are tested without a GPU (`tests/devices.rs`).

use std::fmt;
use std::fs::File;
use std::io;
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Several devices named by `KERNELGATE_DEVICES` or `kernelgate run --devices`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DeviceSpec {
    /// Every device the driver reports (`all`).
    All,
    /// These ordinals, in this order (`0,1`).
    List(Vec<usize>),
}

impl DeviceSpec {
    /// Parses `all` (any case) or a comma list of distinct device ordinals such as `0,1`.
    ///
    /// The error says what is wrong with the text; callers add which variable or flag held it.
    pub fn parse(s: &str) -> Result<DeviceSpec, String> {
        let t = s.trim();
        if t.eq_ignore_ascii_case("all") {
            return Ok(DeviceSpec::All);
        }
        let hint = "expected `all` or a comma list of device ordinals such as 0,1";
        if t.is_empty() {
            return Err(format!("no device given ({hint})"));
        }
        let mut out: Vec<usize> = Vec::new();
        for part in t.split(',') {
            let p = part.trim();
            if p.is_empty() {
                return Err(format!("empty entry in the device list ({hint})"));
            }
            let d: usize = p
                .parse()
                .map_err(|_| format!("{p:?} is not a device ordinal ({hint})"))?;
            if out.contains(&d) {
                return Err(format!("device {d} is listed twice"));
            }
            out.push(d);
        }
        Ok(DeviceSpec::List(out))
    }

    /// The first device named (`all`: 0): the device of single-device commands.
    pub fn first(&self) -> usize {
        match self {
            DeviceSpec::All => 0,
            DeviceSpec::List(v) => v.first().copied().unwrap_or(0),
        }
    }

    /// The ordinals on a machine with `count` devices; `origin` (the variable or flag that
    /// named them) goes into the error.
    pub fn resolve(&self, count: usize, origin: &str) -> Result<Vec<usize>, String> {
        match self {
            DeviceSpec::All if count == 0 => Err("the CUDA driver reports no device".into()),
            DeviceSpec::All => Ok((0..count).collect()),
            DeviceSpec::List(v) => {
                if let Some(bad) = v.iter().find(|&&d| d >= count) {
                    return Err(format!(
                        "device {bad} requested ({origin}) but only {count} present"
                    ));
                }
                Ok(v.clone())
            }
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::All => f.write_str("all"),
            DeviceSpec::List(v) => {
                let s: Vec<String> = v.iter().map(|d| d.to_string()).collect();
                f.write_str(&s.join(","))
            }
        }
    }
}

/// How long a process waits between looks at the lock files of devices that other processes
/// hold (when every device it may use is held elsewhere).
pub const LOCK_POLL: Duration = Duration::from_millis(20);

/// The lock file of the device named `key` in `dir`: `kernelgate-device-<key>.lock`.
///
/// The key is the device's UUID where the driver reports it (the harness's choice: one
/// physical GPU has one UUID in every process, whatever `CUDA_VISIBLE_DEVICES` says), else
/// its ordinal.
pub fn lock_path(dir: &Path, key: &str) -> PathBuf {
    dir.join(format!("kernelgate-device-{key}.lock"))
}

/// A held host-wide advisory lock on one device (`flock` on Linux, through
/// [`File::try_lock`]/[`File::lock`]). Released when dropped: the file is closed, and stays.
///
/// The lock belongs to the open file, so two handles in one process exclude each other just as
/// two processes do.
#[derive(Debug)]
pub struct DeviceLock {
    path: PathBuf,
    _file: File,
}

impl DeviceLock {
    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Opens (creating) a lock file; read-only when it exists but is not writable (another user's
/// file in a shared temporary directory), which `flock` accepts.
fn open_lock_file(path: &Path) -> io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .or_else(|e| File::open(path).map_err(|_| e))
}

/// Locks `path` if no other open file holds it; `Ok(None)` when one does.
pub fn try_lock_file(path: &Path) -> io::Result<Option<DeviceLock>> {
    let file = open_lock_file(path)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(DeviceLock {
            path: path.to_path_buf(),
            _file: file,
        })),
        Err(std::fs::TryLockError::WouldBlock) => Ok(None),
        Err(std::fs::TryLockError::Error(e)) => Err(e),
    }
}

/// Locks `path`, waiting while another open file holds it.
pub fn lock_file(path: &Path) -> io::Result<DeviceLock> {
    let file = open_lock_file(path)?;
    file.lock()?;
    Ok(DeviceLock {
        path: path.to_path_buf(),
        _file: file,
    })
}

/// Host-wide advisory locks for the devices of a pool: one lock file per device in one
/// directory, named by a key per device ([`lock_path`]). Every kernelgate process on the host
/// that uses the same directory and keys (by default the system's temporary directory and the
/// devices' UUIDs) uses a device only while it holds that device's lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostLocks {
    dir: PathBuf,
    keys: Vec<String>,
}

impl HostLocks {
    /// Locks in `dir`, one per device, named by `keys` (in the pool's slot order).
    pub fn new(dir: impl Into<PathBuf>, keys: Vec<String>) -> HostLocks {
        HostLocks {
            dir: dir.into(),
            keys,
        }
    }

    /// Locks in `dir` keyed by the devices' ordinals.
    pub fn by_ordinal(dir: impl Into<PathBuf>, ordinals: &[usize]) -> HostLocks {
        HostLocks::new(dir, ordinals.iter().map(|d| d.to_string()).collect())
    }

    /// The directory the harness keeps its device locks in: the system's temporary directory
    /// (`$TMPDIR`, else `/tmp`), as for the exclusive-timing lock.
    pub fn default_dir() -> PathBuf {
        std::env::temp_dir()
    }

    /// The directory of the lock files.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The key of each device, in slot order.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The lock file of the device in slot `index`.
    pub fn path(&self, index: usize) -> PathBuf {
        lock_path(&self.dir, &self.keys[index])
    }

    /// Locks the device in slot `index` if no other process (or open file) holds it.
    pub fn try_lock(&self, index: usize) -> io::Result<Option<DeviceLock>> {
        try_lock_file(&self.path(index))
    }

    /// Locks the device in slot `index`, waiting while another process holds it.
    pub fn lock(&self, index: usize) -> io::Result<DeviceLock> {
        lock_file(&self.path(index))
    }
}

/// A device taken by [`claim_device`]: its ordinal and its lock, held until dropped.
#[derive(Debug)]
pub struct Claim {
    /// The device's ordinal.
    pub ordinal: usize,
    /// The device's host-wide lock.
    pub lock: DeviceLock,
}

/// Tries the devices `ordinals` in order and locks the first one that nothing else holds
/// (lock files in `lock_dir`, keyed by ordinal); `Ok(None)` when every one is held. A lock
/// file that cannot be opened or locked is an error.
pub fn try_claim_device(ordinals: &[usize], lock_dir: &Path) -> io::Result<Option<Claim>> {
    for &ordinal in ordinals {
        if let Some(lock) = try_lock_file(&lock_path(lock_dir, &ordinal.to_string()))? {
            return Ok(Some(Claim { ordinal, lock }));
        }
    }
    Ok(None)
}

/// As [`try_claim_device`], but while every device is held waits for one to be released
/// (looking again every [`LOCK_POLL`]). No device at all is an error.
pub fn claim_device(ordinals: &[usize], lock_dir: &Path) -> io::Result<Claim> {
    if ordinals.is_empty() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "no device to claim",
        ));
    }
    loop {
        if let Some(c) = try_claim_device(ordinals, lock_dir)? {
            return Ok(c);
        }
        std::thread::sleep(LOCK_POLL);
    }
}

/// Why a slot no longer takes cases.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dead {
    /// A sticky fault in the named case cost the process this device's context.
    Lost(String),
    /// The named case hung on this device.
    Wedged(String),
    /// The device could not be opened (the reason).
    Unusable(String),
}

impl fmt::Display for Dead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dead::Lost(c) => write!(f, "context lost to a fault in {c}"),
            Dead::Wedged(c) => write!(f, "unusable after a hang in {c}"),
            Dead::Unusable(why) => write!(f, "cannot be used: {why}"),
        }
    }
}

/// Every slot of a pool is retired: `(ordinal, why)` per slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllDead(pub Vec<(usize, Dead)>);

impl fmt::Display for AllDead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(d, why)| format!("device {d} {why}"))
            .collect();
        write!(f, "no device left: {}", parts.join("; "))
    }
}

#[derive(Debug, Default)]
struct Meta {
    busy: bool,
    dead: Option<Dead>,
}

/// N device slots, each with its own state behind its own lock, and optionally a host-wide
/// lock per device ([`Pool::with_host_locks`]).
pub struct Pool<S> {
    ordinals: Vec<usize>,
    slots: Vec<Mutex<S>>,
    meta: Mutex<Vec<Meta>>,
    freed: Condvar,
    host: Option<HostLocks>,
    /// A lock file could not be used (said once on stderr).
    warned: AtomicBool,
    /// A lease waited for devices held by other processes (said once on stderr).
    waited: AtomicBool,
}

/// The outcome of trying a slot's host-wide lock.
enum HostTry {
    /// The device may be used: its lock, or none (no host locks, or the lock file was unusable).
    Free(Option<DeviceLock>),
    /// Another process holds the device.
    Held,
}

/// What a job run on a leased slot says about the slot.
#[derive(Debug)]
pub enum Step<R> {
    /// Done; the slot stays in service.
    Done(R),
    /// Done, but the slot is retired (its device was lost or hung).
    Retire(R, Dead),
    /// The slot could not take the job (e.g. the device would not open): retire it and run
    /// the job on another slot.
    Retry(Dead),
}

/// A leased slot: exclusive use of one device's state until dropped (and, with host locks,
/// of the device itself among the host's kernelgate processes).
pub struct Lease<'a, S> {
    pool: &'a Pool<S>,
    index: usize,
    state: Option<MutexGuard<'a, S>>,
    host: Option<DeviceLock>,
}

impl<S> Lease<'_, S> {
    /// The device ordinal of this slot.
    pub fn ordinal(&self) -> usize {
        self.pool.ordinals[self.index]
    }

    /// The host-wide lock file this lease holds (`None` without host locks, or when the lock
    /// file could not be used).
    pub fn host_lock(&self) -> Option<&Path> {
        self.host.as_ref().map(DeviceLock::path)
    }

    /// The slot's position in the pool.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Takes the slot out of service: no later lease gets it.
    pub fn retire(&self, why: Dead) {
        let mut m = self.pool.lock_meta();
        m[self.index].dead = Some(why);
        drop(m);
        self.pool.freed.notify_all();
    }
}

impl<S> Deref for Lease<'_, S> {
    type Target = S;
    fn deref(&self) -> &S {
        self.state.as_ref().expect("held until drop")
    }
}

impl<S> DerefMut for Lease<'_, S> {
    fn deref_mut(&mut self) -> &mut S {
        self.state.as_mut().expect("held until drop")
    }
}

impl<S> Drop for Lease<'_, S> {
    fn drop(&mut self) {
        self.state = None;
        // Release the device to other processes before this process's waiters look at it.
        self.host = None;
        let mut m = self.pool.lock_meta();
        m[self.index].busy = false;
        drop(m);
        self.pool.freed.notify_all();
    }
}

impl<S> Pool<S> {
    /// A pool with one slot per ordinal, its state made by `make(ordinal)`.
    pub fn new(ordinals: Vec<usize>, mut make: impl FnMut(usize) -> S) -> Pool<S> {
        let slots = ordinals.iter().map(|&d| Mutex::new(make(d))).collect();
        let meta = ordinals.iter().map(|_| Meta::default()).collect();
        Pool {
            ordinals,
            slots,
            meta: Mutex::new(meta),
            freed: Condvar::new(),
            host: None,
            warned: AtomicBool::new(false),
            waited: AtomicBool::new(false),
        }
    }

    /// Makes every lease also hold its device's host-wide lock, so kernelgate processes on one
    /// host never use a device at once: [`Pool::acquire`] takes the first slot that is free
    /// here *and* whose lock nothing else holds, looking again every [`LOCK_POLL`] while the
    /// free slots are held elsewhere; [`Pool::acquire_slot`] waits for its device's lock. A
    /// lock file that cannot be opened or locked is said once on stderr and its device used
    /// without it.
    ///
    /// # Panics
    ///
    /// When `locks` does not have one key per slot.
    pub fn with_host_locks(mut self, locks: HostLocks) -> Pool<S> {
        assert_eq!(
            locks.keys().len(),
            self.ordinals.len(),
            "one lock key per device"
        );
        self.host = Some(locks);
        self
    }

    /// The host-wide locks of this pool, if it takes them.
    pub fn host_locks(&self) -> Option<&HostLocks> {
        self.host.as_ref()
    }

    fn lock_failed(&self, index: usize, e: &io::Error) {
        if !self.warned.swap(true, Ordering::SeqCst) {
            let path = self
                .host
                .as_ref()
                .map(|h| h.path(index))
                .unwrap_or_default();
            eprintln!(
                "kernelgate: cannot lock {} ({e}); device {} is used without its host-wide lock, so another kernelgate process may use it at the same time",
                path.display(),
                self.ordinals[index]
            );
        }
    }

    /// Tries the host-wide lock of slot `index` without waiting.
    fn try_host(&self, index: usize) -> HostTry {
        let Some(h) = &self.host else {
            return HostTry::Free(None);
        };
        match h.try_lock(index) {
            Ok(Some(l)) => HostTry::Free(Some(l)),
            Ok(None) => HostTry::Held,
            Err(e) => {
                self.lock_failed(index, &e);
                HostTry::Free(None)
            }
        }
    }

    fn lock_meta(&self) -> MutexGuard<'_, Vec<Meta>> {
        self.meta.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lease(&self, index: usize, host: Option<DeviceLock>) -> Lease<'_, S> {
        let state = self.slots[index].lock().unwrap_or_else(|p| p.into_inner());
        Lease {
            pool: self,
            index,
            state: Some(state),
            host,
        }
    }

    /// The device ordinals, one per slot.
    pub fn ordinals(&self) -> &[usize] {
        &self.ordinals
    }

    /// Number of slots (live or not).
    pub fn len(&self) -> usize {
        self.ordinals.len()
    }

    /// Whether the pool has no slot.
    pub fn is_empty(&self) -> bool {
        self.ordinals.is_empty()
    }

    /// The retired slots: `(ordinal, why)`.
    pub fn dead(&self) -> Vec<(usize, Dead)> {
        self.lock_meta()
            .iter()
            .zip(&self.ordinals)
            .filter_map(|(m, &d)| m.dead.clone().map(|w| (d, w)))
            .collect()
    }

    /// Leases the first free live slot (in slot order), waiting while all live slots are busy;
    /// fails once every slot is retired. With host locks a slot is free only when no other
    /// process holds its device either.
    pub fn acquire(&self) -> Result<Lease<'_, S>, AllDead> {
        let started = Instant::now();
        let mut m = self.lock_meta();
        loop {
            if m.iter().all(|s| s.dead.is_some()) {
                let why = m
                    .iter()
                    .zip(&self.ordinals)
                    .map(|(s, &d)| (d, s.dead.clone().expect("all dead")))
                    .collect();
                return Err(AllDead(why));
            }
            let mut held_elsewhere = false;
            for i in 0..m.len() {
                if m[i].busy || m[i].dead.is_some() {
                    continue;
                }
                match self.try_host(i) {
                    HostTry::Free(lock) => {
                        m[i].busy = true;
                        drop(m);
                        return Ok(self.lease(i, lock));
                    }
                    HostTry::Held => held_elsewhere = true,
                }
            }
            m = if held_elsewhere {
                // Other processes release their devices without telling us: look again soon.
                self.say_waiting(started);
                self.freed
                    .wait_timeout(m, LOCK_POLL)
                    .unwrap_or_else(|p| p.into_inner())
                    .0
            } else {
                self.freed.wait(m).unwrap_or_else(|p| p.into_inner())
            };
        }
    }

    /// Says once, after a second of waiting, that the devices are held by other processes.
    fn say_waiting(&self, since: Instant) {
        if since.elapsed() >= Duration::from_secs(1) && !self.waited.swap(true, Ordering::SeqCst) {
            if let Some(h) = &self.host {
                eprintln!(
                    "kernelgate: waiting for a device: the free ones are held by other kernelgate processes (lock files kernelgate-device-*.lock in {})",
                    h.dir().display()
                );
            }
        }
    }

    /// Leases slot `index` (waiting while it is busy, and with host locks while another process
    /// holds its device); fails if it is retired.
    pub fn acquire_slot(&self, index: usize) -> Result<Lease<'_, S>, Dead> {
        let mut m = self.lock_meta();
        loop {
            if let Some(why) = &m[index].dead {
                return Err(why.clone());
            }
            if !m[index].busy {
                m[index].busy = true;
                drop(m);
                break;
            }
            m = self.freed.wait(m).unwrap_or_else(|p| p.into_inner());
        }
        // The slot is ours in this process; wait for the device among the host's processes.
        let lock = self.host.as_ref().and_then(|h| match h.lock(index) {
            Ok(l) => Some(l),
            Err(e) => {
                self.lock_failed(index, &e);
                None
            }
        });
        Ok(self.lease(index, lock))
    }

    /// Runs `job` on a free live slot and returns the slot's ordinal with the job's result.
    /// A job that answers [`Step::Retry`] retires its slot and runs again on another one; a
    /// job that answers [`Step::Retire`] keeps its result and retires the slot.
    pub fn run<R>(
        &self,
        mut job: impl FnMut(&mut Lease<'_, S>) -> Step<R>,
    ) -> Result<(usize, R), AllDead> {
        loop {
            let mut lease = self.acquire()?;
            match job(&mut lease) {
                Step::Done(r) => return Ok((lease.ordinal(), r)),
                Step::Retire(r, why) => {
                    lease.retire(why);
                    return Ok((lease.ordinal(), r));
                }
                Step::Retry(why) => lease.retire(why),
            }
        }
    }
}
