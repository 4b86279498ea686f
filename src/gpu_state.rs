//! The GPU's clocks, temperature, power and clock-limit reasons read right after a case was
//! judged a regression, so that a slowdown the machine caused (a power cap, thermal slowdown,
//! clocks held low) can be told from one the kernel caused. Read with `nvidia-smi`; where it
//! is missing, answers slowly or does not know a field, the record simply has no state.
//!
//! Why: on crossval, the false regressions of fresh machines were long compute-bound kernels
//! (6144³ GEMMs, cuBLAS as much as ours) running 7–18% slow late in a run on a machine that
//! had measured a higher GEMM ceiling at its start (docs/gate/README.md, session 13).

use std::fmt;
use std::io::Read;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What `nvidia-smi` said about the GPU at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct GpuState {
    /// SM clock, MHz.
    pub sm_mhz: Option<u32>,
    /// Highest SM clock, MHz.
    pub sm_max_mhz: Option<u32>,
    /// GPU temperature, °C.
    pub temperature_c: Option<u32>,
    /// Power draw, W.
    pub power_w: Option<f64>,
    /// Power limit, W.
    pub power_limit_w: Option<f64>,
    /// Why the clocks are held below their highest, as `nvidia-smi` names the active reasons
    /// (empty: none, or not known).
    pub reasons: Vec<&'static str>,
}

/// The fields asked of `nvidia-smi`, in the order [`parse`] reads them; the last one has an
/// older name (drivers before 535), tried when the first query fails.
const FIELDS: &str = "clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit";
const REASONS: [&str; 2] = [
    "clocks_event_reasons.active",
    "clocks_throttle_reasons.active",
];

/// The clock-limit reasons of `nvidia-smi`'s bit mask (`nvmlClocksEventReasons`).
const REASON_BITS: [(u64, &str); 9] = [
    (0x1, "GPU idle"),
    (0x2, "applications clocks setting"),
    (0x4, "software power cap"),
    (0x8, "hardware slowdown"),
    (0x10, "sync boost"),
    (0x20, "software thermal slowdown"),
    (0x40, "hardware thermal slowdown"),
    (0x80, "hardware power brake"),
    (0x100, "display clock setting"),
];

/// The clock-limit reasons that mean the *machine* slowed the kernel down: thermal slowdowns, a
/// hardware slowdown or power brake. A software power cap is not one of them: a busy H100 or
/// H200 runs at its power cap in normal operation, and its baselines were timed so.
pub const SLOWDOWNS: [&str; 4] = [
    "hardware slowdown",
    "software thermal slowdown",
    "hardware thermal slowdown",
    "hardware power brake",
];

/// The reasons set in `mask` (unknown bits are left out).
pub fn reasons(mask: u64) -> Vec<&'static str> {
    REASON_BITS
        .iter()
        .filter(|(bit, _)| mask & bit != 0)
        .map(|&(_, name)| name)
        .collect()
}

/// One `--format=csv,noheader,nounits` line of SM clock, highest SM clock, temperature, power
/// draw, power limit and the clock-limit reasons mask, as [`read`] asks for them. Values
/// `nvidia-smi` cannot give (`[N/A]`, `[Not Supported]`) are `None`; a line with another
/// number of fields is not a state.
pub fn parse(line: &str) -> Option<GpuState> {
    let f: Vec<&str> = line.trim().split(',').map(str::trim).collect();
    if f.len() != 6 {
        return None;
    }
    let int = |s: &str| s.parse::<f64>().ok().map(|v| v.round() as u32);
    let real = |s: &str| s.parse::<f64>().ok();
    let mask = f[5]
        .strip_prefix("0x")
        .and_then(|h| u64::from_str_radix(h, 16).ok());
    Some(GpuState {
        sm_mhz: int(f[0]),
        sm_max_mhz: int(f[1]),
        temperature_c: int(f[2]),
        power_w: real(f[3]),
        power_limit_w: real(f[4]),
        reasons: mask.map(reasons).unwrap_or_default(),
    })
}

impl GpuState {
    /// The active reasons among [`SLOWDOWNS`]: empty when the GPU ran as it normally does
    /// under load.
    pub fn slowdown(&self) -> Vec<&'static str> {
        self.reasons
            .iter()
            .copied()
            .filter(|r| SLOWDOWNS.contains(r))
            .collect()
    }

    /// Whether an active slowdown is cutting the SM clock now: a [`GpuState::slowdown`] with the
    /// clock below [`THROTTLED_CLOCK`] of its highest (or either clock unknown).
    pub fn slows(&self) -> bool {
        !self.slowdown().is_empty()
            && match (self.sm_mhz, self.sm_max_mhz) {
                (Some(now), Some(max)) if max > 0 => (now as f64) < THROTTLED_CLOCK * max as f64,
                _ => true,
            }
    }
}

impl fmt::Display for GpuState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        match (self.sm_mhz, self.sm_max_mhz) {
            (Some(now), Some(max)) => parts.push(format!("SM clock {now} of {max} MHz")),
            (Some(now), None) => parts.push(format!("SM clock {now} MHz")),
            _ => {}
        }
        if let Some(t) = self.temperature_c {
            parts.push(format!("{t} °C"));
        }
        match (self.power_w, self.power_limit_w) {
            (Some(p), Some(l)) => parts.push(format!("{p:.0} of {l:.0} W")),
            (Some(p), None) => parts.push(format!("{p:.0} W")),
            _ => {}
        }
        let limits: Vec<&str> = self
            .reasons
            .iter()
            .copied()
            .filter(|r| *r != "GPU idle")
            .collect();
        if !limits.is_empty() {
            parts.push(format!("clocks limited by: {}", limits.join(", ")));
        }
        if parts.is_empty() {
            return f.write_str("nothing known");
        }
        f.write_str(&parts.join("; "))
    }
}

/// Runs `nvidia-smi` with `args` and returns its standard output, or `None` when it is missing,
/// fails, or has not answered within `limit` (then it is killed).
pub(crate) fn nvidia_smi(args: &[String], limit: Duration) -> Option<String> {
    let mut child = Command::new("nvidia-smi")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(status)) => {
                if !status.success() {
                    return None;
                }
                let mut out = String::new();
                child.stdout.take()?.read_to_string(&mut out).ok()?;
                return Some(out);
            }
            Ok(None) if start.elapsed() < limit => std::thread::sleep(Duration::from_millis(5)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The state of the GPU with this UUID (or, without one, this `nvidia-smi` index) now, if
/// `nvidia-smi` can tell within a few seconds.
pub fn read(uuid: &str, ordinal: usize) -> Option<GpuState> {
    REASONS
        .iter()
        .find_map(|reasons| parse(&query(uuid, ordinal, &format!("{FIELDS},{reasons}"))?))
}

/// The first line `nvidia-smi --query-gpu=<fields>` answers (csv, no header, no units) for the
/// GPU with this UUID (or, without one, this `nvidia-smi` index), within a few seconds.
fn query(uuid: &str, ordinal: usize, fields: &str) -> Option<String> {
    let id = if uuid.is_empty() {
        ordinal.to_string()
    } else {
        uuid.to_string()
    };
    let args = vec![
        format!("--query-gpu={fields}"),
        "--format=csv,noheader,nounits".to_string(),
        format!("--id={id}"),
    ];
    nvidia_smi(&args, Duration::from_secs(5)).and_then(|out| Some(out.lines().next()?.to_string()))
}

/// How long the GPU has spent in each slowdown since the driver loaded, as `nvidia-smi`'s
/// `clocks_event_reasons_counters.*` report it (µs; drivers from 535 on). Two readings around a
/// case say whether its clocks were cut *while* it was timed, which the reasons active at one
/// moment ([`GpuState::slowdown`]) cannot: a slowdown that ended before the case did, or began
/// after it was read.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SlowdownTime {
    /// Software thermal slowdown.
    pub sw_thermal_us: f64,
    /// Hardware thermal slowdown.
    pub hw_thermal_us: f64,
    /// Hardware power brake.
    pub hw_power_brake_us: f64,
}

/// The counters asked of `nvidia-smi`, in the order [`parse_counters`] reads them.
const COUNTERS: &str = "clocks_event_reasons_counters.sw_thermal_slowdown,\
clocks_event_reasons_counters.hw_thermal_slowdown,\
clocks_event_reasons_counters.hw_power_brake_slowdown";

/// A slowdown counted between two readings is one when it lasted at least this long, µs (and
/// at least [`COUNTED_FRACTION`] of the time between the readings).
pub const COUNTED_MIN_US: f64 = 1000.0;
/// The least fraction of the time between two readings a slowdown must fill to mark a record
/// (its timing is then neither imported nor stored).
pub const COUNTED_FRACTION: f64 = 0.01;
/// The least fraction of a suspected regression's fresh measurement a slowdown must fill for
/// the verdict `throttled` (a slowdown of a few milliseconds must not excuse a real regression);
/// a slowdown still active at its end counts when the SM clock is below
/// [`THROTTLED_CLOCK`] of its highest.
pub const THROTTLED_FRACTION: f64 = 0.10;
/// The SM clock, as a fraction of its highest, below which an active slowdown is taken to slow
/// the kernel ([`GpuState::slows`]).
pub const THROTTLED_CLOCK: f64 = 0.95;

/// One `--format=csv,noheader,nounits` line of the three slowdown counters (software thermal,
/// hardware thermal, hardware power brake, in that order); `None` when a field is not a
/// number (an older driver answers `[N/A]` or refuses the query).
pub fn parse_counters(line: &str) -> Option<SlowdownTime> {
    let f: Vec<f64> = line
        .trim()
        .split(',')
        .map(|x| x.trim().parse::<f64>().ok())
        .collect::<Option<Vec<f64>>>()?;
    match f[..] {
        [sw, hw, brake] => Some(SlowdownTime {
            sw_thermal_us: sw,
            hw_thermal_us: hw,
            hw_power_brake_us: brake,
        }),
        _ => None,
    }
}

impl SlowdownTime {
    /// The slowdowns that filled at least [`COUNTED_MIN_US`] and `fraction` of `elapsed`
    /// between `before` and `self` (the marking rule uses [`COUNTED_FRACTION`], the throttled
    /// verdict [`THROTTLED_FRACTION`]), named as [`SLOWDOWNS`] names them.
    pub fn since(
        &self,
        before: &SlowdownTime,
        elapsed: Duration,
        fraction: f64,
    ) -> Vec<&'static str> {
        let least = COUNTED_MIN_US.max(fraction * elapsed.as_secs_f64() * 1e6);
        [
            (self.sw_thermal_us - before.sw_thermal_us, SLOWDOWNS[1]),
            (self.hw_thermal_us - before.hw_thermal_us, SLOWDOWNS[2]),
            (
                self.hw_power_brake_us - before.hw_power_brake_us,
                SLOWDOWNS[3],
            ),
        ]
        .into_iter()
        .filter(|(d, _)| *d >= least)
        .map(|(_, name)| name)
        .collect()
    }
}

/// The slowdown counters of the GPU with this UUID (or `nvidia-smi` index) now, if `nvidia-smi`
/// reports them within a few seconds (`None` under [`FAKE_VAR`]: a faked state has no history).
pub fn read_counters(uuid: &str, ordinal: usize) -> Option<SlowdownTime> {
    if std::env::var(FAKE_VAR).is_ok_and(|v| !v.trim().is_empty()) {
        return None;
    }
    parse_counters(&query(uuid, ordinal, COUNTERS)?)
}

/// A reading of the slowdown counters and when it was taken, to tell later what slowdowns
/// happened since ([`Mark::slowdowns_since`]).
#[derive(Debug, Clone, Copy)]
pub struct Mark {
    counters: Option<SlowdownTime>,
    at: Instant,
}

impl Mark {
    /// Reads the counters now (`None` inside when `nvidia-smi` cannot tell them).
    pub fn now(uuid: &str, ordinal: usize) -> Mark {
        Mark {
            counters: read_counters(uuid, ordinal),
            at: Instant::now(),
        }
    }

    /// The slowdowns counted since this mark that filled `fraction` of the time since
    /// ([`SlowdownTime::since`]); empty when either reading is missing.
    pub fn slowdowns_since(&self, uuid: &str, ordinal: usize, fraction: f64) -> Vec<&'static str> {
        match (self.counters, read_counters(uuid, ordinal)) {
            (Some(before), Some(after)) => after.since(&before, self.at.elapsed(), fraction),
            _ => Vec::new(),
        }
    }
}

/// Calibration only: `KERNELGATE_FAKE_GPU_STATE`, an `nvidia-smi` line as [`parse`] reads it,
/// stands in for the GPU's state (a device test of the throttled verdict needs a throttled GPU).
pub const FAKE_VAR: &str = "KERNELGATE_FAKE_GPU_STATE";

/// The state of the GPU now: [`read`], or the state [`FAKE_VAR`] describes when it is set.
pub fn current(uuid: &str, ordinal: usize) -> Option<GpuState> {
    match std::env::var(FAKE_VAR) {
        Ok(line) if !line.trim().is_empty() => parse(&line),
        _ => read(uuid, ordinal),
    }
}

/// Time this process has spent waiting for throttled GPUs to cool ([`cool_down`]), ms.
static COOLED_MS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Waits while the GPU reports a [`GpuState::slowdown`], polling every 250 ms, for at most
/// `per_case` and at most what is left of `budget` for the whole process (so a GPU that stays
/// hot costs a run `budget` once, not once per case; the wait is reserved from the budget before
/// it starts, so concurrent devices never overrun it, and what was not used is given back).
/// Returns the last state read (`None`: `nvidia-smi` could not tell) and the time spent
/// sleeping (zero when the GPU showed no active slowdown or the budget was spent).
pub fn cool_down(
    uuid: &str,
    ordinal: usize,
    per_case: Duration,
    budget: Duration,
) -> (Option<GpuState>, Duration) {
    use std::sync::atomic::Ordering;
    let budget_ms = budget.as_millis().min(u64::MAX as u128) as u64;
    let want_ms = per_case.as_millis().min(u64::MAX as u128) as u64;
    let mut reserved = 0;
    let _ = COOLED_MS.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |spent| {
        reserved = want_ms.min(budget_ms.saturating_sub(spent));
        Some(spent + reserved)
    });
    let limit = Duration::from_millis(reserved);
    let mut state = current(uuid, ordinal);
    let mut slept = Duration::ZERO;
    while state.as_ref().is_some_and(|s| !s.slowdown().is_empty()) && slept < limit {
        let nap = Duration::from_millis(250).min(limit - slept);
        std::thread::sleep(nap);
        slept += nap;
        state = current(uuid, ordinal);
    }
    // Give back what was reserved and not slept (the polls' own time is not charged).
    let unused = reserved.saturating_sub(slept.as_millis() as u64);
    COOLED_MS.fetch_sub(unused, Ordering::SeqCst);
    (state, slept)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_busy_capped_gpu() {
        let s = parse("1755, 1980, 71, 689.52, 700.00, 0x0000000000000004").unwrap();
        assert_eq!(s.sm_mhz, Some(1755));
        assert_eq!(s.sm_max_mhz, Some(1980));
        assert_eq!(s.temperature_c, Some(71));
        assert_eq!(s.power_w, Some(689.52));
        assert_eq!(s.reasons, vec!["software power cap"]);
        assert_eq!(
            s.to_string(),
            "SM clock 1755 of 1980 MHz; 71 °C; 690 of 700 W; clocks limited by: software power cap"
        );
    }

    #[test]
    fn unknown_values_and_idle_are_left_out() {
        let s = parse("345, 1980, 50, [N/A], [Not Supported], 0x0000000000000001").unwrap();
        assert_eq!(s.power_w, None);
        assert_eq!(s.reasons, vec!["GPU idle"]);
        // Idle is not a limit worth naming after a timed case.
        assert_eq!(s.to_string(), "SM clock 345 of 1980 MHz; 50 °C");
        let s = parse("[N/A], [N/A], [N/A], [N/A], [N/A], [N/A]").unwrap();
        assert_eq!(s.to_string(), "nothing known");
    }

    #[test]
    fn several_reasons_and_unknown_bits() {
        assert_eq!(
            reasons(0x4 | 0x20 | 0x40 | 0x8000),
            vec![
                "software power cap",
                "software thermal slowdown",
                "hardware thermal slowdown"
            ]
        );
        assert!(reasons(0).is_empty());
    }

    #[test]
    fn slowdowns_are_thermal_and_hardware_limits_only() {
        let hot = parse("840, 1980, 86, 192.0, 700.0, 0x20").unwrap();
        assert_eq!(hot.slowdown(), vec!["software thermal slowdown"]);
        let capped = parse("1755, 1980, 71, 689.5, 700.0, 0x4").unwrap();
        assert!(
            capped.slowdown().is_empty(),
            "a power cap is normal under load"
        );
        let idle = parse("345, 1980, 40, 70.0, 700.0, 0x1").unwrap();
        assert!(idle.slowdown().is_empty());
        let all = parse("600, 1980, 95, 300.0, 700.0, 0xEF").unwrap();
        assert_eq!(
            all.slowdown(),
            vec![
                "hardware slowdown",
                "software thermal slowdown",
                "hardware thermal slowdown",
                "hardware power brake"
            ]
        );
        let unknown = parse("[N/A], [N/A], [N/A], [N/A], [N/A], [N/A]").unwrap();
        assert!(unknown.slowdown().is_empty());
        // Whether the active slowdown cuts the clock: 840 of 1980 does, 1950 of 1980 does not,
        // an unknown clock is taken to.
        assert!(hot.slows());
        assert!(!parse("1950, 1980, 84, 500.0, 700.0, 0x20").unwrap().slows());
        assert!(parse("[N/A], 1980, 84, 500.0, 700.0, 0x20")
            .unwrap()
            .slows());
        assert!(!capped.slows());
    }

    #[test]
    fn counters_name_the_slowdowns_that_filled_the_interval() {
        let before = parse_counters("100, 0, 0").unwrap();
        assert_eq!(before.hw_power_brake_us, 0.0);
        let after = parse_counters("2000100, 500, 1500").unwrap();
        // 10 s between the readings: 1% is 100 ms, so 2 s of software thermal slowdown counts
        // and 500 µs / 1.5 ms of the others do not.
        assert_eq!(
            after.since(&before, Duration::from_secs(10), COUNTED_FRACTION),
            vec!["software thermal slowdown"]
        );
        // Over 50 ms, 1 ms (the least that counts) and more does.
        assert_eq!(
            after.since(&before, Duration::from_millis(50), COUNTED_FRACTION),
            vec!["software thermal slowdown", "hardware power brake"]
        );
        assert!(before
            .since(&before, Duration::from_secs(1), COUNTED_FRACTION)
            .is_empty());
        // The throttled verdict asks for 10%: 2 s of 10 s counts, of 30 s does not.
        assert_eq!(
            after.since(&before, Duration::from_secs(10), THROTTLED_FRACTION),
            vec!["software thermal slowdown"]
        );
        assert!(after
            .since(&before, Duration::from_secs(30), THROTTLED_FRACTION)
            .is_empty());
        assert_eq!(parse_counters("[N/A], [N/A], [N/A]"), None);
        assert_eq!(parse_counters("1, 2"), None);
        assert_eq!(parse_counters(""), None);
    }

    #[test]
    fn cooling_a_gpu_that_cannot_be_read_waits_for_nothing() {
        let (state, waited) = cool_down(
            "GPU-00000000-0000-0000-0000-000000000000",
            0,
            Duration::from_secs(5),
            Duration::from_secs(30),
        );
        assert_eq!(state, None);
        assert!(waited < Duration::from_secs(5));
    }

    #[test]
    fn other_lines_are_not_states() {
        assert_eq!(parse(""), None);
        assert_eq!(parse("1755, 1980, 71"), None);
        assert_eq!(
            parse("No devices were found"),
            None,
            "an error message is not a state"
        );
    }

    #[test]
    fn a_missing_tool_gives_no_state() {
        // A UUID no GPU has: nvidia-smi (if present) fails, and no state is made up.
        assert_eq!(read("GPU-00000000-0000-0000-0000-000000000000", 0), None);
    }
}
