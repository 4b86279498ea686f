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
//! The pool is generic over the slot state so its scheduling and fault isolation are tested
//! without a GPU (`tests/devices.rs`).

use std::fmt;
use std::ops::{Deref, DerefMut};
use std::sync::{Condvar, Mutex, MutexGuard};

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

/// N device slots, each with its own state behind its own lock.
pub struct Pool<S> {
    ordinals: Vec<usize>,
    slots: Vec<Mutex<S>>,
    meta: Mutex<Vec<Meta>>,
    freed: Condvar,
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

/// A leased slot: exclusive use of one device's state until dropped.
pub struct Lease<'a, S> {
    pool: &'a Pool<S>,
    index: usize,
    state: Option<MutexGuard<'a, S>>,
}

impl<S> Lease<'_, S> {
    /// The device ordinal of this slot.
    pub fn ordinal(&self) -> usize {
        self.pool.ordinals[self.index]
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
        }
    }

    fn lock_meta(&self) -> MutexGuard<'_, Vec<Meta>> {
        self.meta.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn lease(&self, index: usize) -> Lease<'_, S> {
        let state = self.slots[index].lock().unwrap_or_else(|p| p.into_inner());
        Lease {
            pool: self,
            index,
            state: Some(state),
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

    /// Leases the first free live slot, waiting while all live slots are busy; fails once
    /// every slot is retired.
    pub fn acquire(&self) -> Result<Lease<'_, S>, AllDead> {
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
            if let Some(i) = m.iter().position(|s| !s.busy && s.dead.is_none()) {
                m[i].busy = true;
                drop(m);
                return Ok(self.lease(i));
            }
            m = self.freed.wait(m).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Leases slot `index` (waiting while it is busy); fails if it is retired.
    pub fn acquire_slot(&self, index: usize) -> Result<Lease<'_, S>, Dead> {
        let mut m = self.lock_meta();
        loop {
            if let Some(why) = &m[index].dead {
                return Err(why.clone());
            }
            if !m[index].busy {
                m[index].busy = true;
                drop(m);
                return Ok(self.lease(index));
            }
            m = self.freed.wait(m).unwrap_or_else(|p| p.into_inner());
        }
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
