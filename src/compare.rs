//! `kernelgate compare A B`: every case of two results files called FAST, SLOW, SAME or
//! AMBIGUOUS by [`crate::gate::compare`] — the rule the test gate uses — with B as "now" and
//! A as "before", each side's noise being its `Stats.noise` (relative 95% CI of the median).
//! Where both sides' samples fell into two modes, their lower modes decide when their
//! comparison makes a call ([`crate::gate::with_lower_modes`]), as in the test gate.
//!
//! Cases are matched by name; when either file spans several GPUs, by (GPU, name). Cases in
//! only one file, or without a latency (wrong output) in either, are listed but not called.
//! A case timed after different L2 flushes in A and B (see [`crate::timing::FlushMode`]: a
//! `write` flush's write-back lands in the timed window, a `read` one's does not) is still
//! called, but marked, and the summary says how many such cases there are. So is a case whose
//! kernel configuration (the record's `variant`: entry point, tile, split, peer version) differs
//! between A and B; the two configurations are listed after the table. So is a case timed with
//! another number of launches per sample (or with and without a CUDA graph) in A than in B
//! ([`Record::timing_word`]): a batch's time per launch is not a lone launch's. Where both
//! records carry a code hash (the machine code of the entry points the case ran,
//! [`Record::code_hash`]), a case whose code differs is marked and the summary counts the cases
//! that ran the same machine code in both: their speed changes are not the code's.

use crate::gate::{self, Change, Comparison};
use crate::results::{Record, ResultsFile};
use crate::timing::FlushMode;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The outcome for one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    /// B is faster beyond tolerance and noise.
    Fast,
    /// B is slower beyond tolerance and noise.
    Slow,
    /// Within tolerance.
    Same,
    /// Beyond tolerance but within noise.
    Ambiguous,
    /// Only in A.
    OnlyA,
    /// Only in B.
    OnlyB,
    /// No latency on one side (a wrong output is never timed).
    Untimed,
    /// B is slower beyond tolerance and noise, but B was timed while its GPU reported a thermal
    /// or hardware slowdown ([`Record::slowdown`]): not called slow.
    Throttled,
}

impl Status {
    /// The word shown.
    pub fn word(self) -> &'static str {
        match self {
            Status::Fast => "FAST",
            Status::Slow => "SLOW",
            Status::Same => "SAME",
            Status::Ambiguous => "AMBIGUOUS",
            Status::OnlyA => "ONLY-A",
            Status::OnlyB => "ONLY-B",
            Status::Untimed => "UNTIMED",
            Status::Throttled => "THROTTLED",
        }
    }
}

/// One compared case.
#[derive(Debug, Clone)]
pub struct Row {
    /// Case name (prefixed with `GPU: ` when matching by GPU).
    pub key: String,
    /// Median in A.
    pub a_ms: Option<f64>,
    /// Median in B.
    pub b_ms: Option<f64>,
    /// The comparison, when both were timed.
    pub cmp: Option<Comparison>,
    /// The call.
    pub status: Status,
    /// The L2 flush of A and B when they differ (`None`: the same, or not both timed).
    pub flush_differs: Option<(Option<FlushMode>, Option<FlushMode>)>,
    /// The kernel configurations of A and B when both name one and they differ.
    pub variant_differs: Option<(String, String)>,
    /// How a sample was timed in A and B ([`Record::timing_word`]) when both were timed and
    /// the two differ.
    pub timing_differs: Option<(String, String)>,
    /// Whether A and B ran the same machine code ([`Record::code_hash`]); `None` where either
    /// side has no code hash (vendor libraries, workers, older records) or a case is in one file.
    pub same_code: Option<bool>,
    /// Where the machine code changed and both records name their entry points
    /// ([`Record::code_entries`]) and those differ: the entry points only A ran, and only B ran
    /// (a kernel rule that picked other entry points, as against an edit of the same ones).
    pub entries_differ: Option<(Vec<String>, Vec<String>)>,
}

fn noise(r: &Record) -> f64 {
    r.stats.as_ref().map(|s| s.noise).unwrap_or(0.0)
}

fn flush_word(f: Option<FlushMode>) -> &'static str {
    f.map_or("none", FlushMode::as_str)
}

/// Compares B against A at `tolerance_pct` percent.
pub fn compare(a: &ResultsFile, b: &ResultsFile, tolerance_pct: f64) -> Vec<Row> {
    let by_gpu = a.all_gpus().len() > 1 || b.all_gpus().len() > 1;
    let key = |r: &Record| {
        if by_gpu {
            format!("{}: {}", r.gpu_model, r.case)
        } else {
            r.case.clone()
        }
    };
    let index = |f: &ResultsFile| -> BTreeMap<String, Record> {
        // Later records of a case win, as in `merge` (files are in run order).
        f.results.iter().map(|r| (key(r), r.clone())).collect()
    };
    let (ia, ib) = (index(a), index(b));
    let mut keys: Vec<&String> = ia.keys().chain(ib.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .map(|k| {
            let (ra, rb) = (ia.get(k), ib.get(k));
            let a_ms = ra.and_then(|r| r.latency_ms);
            let b_ms = rb.and_then(|r| r.latency_ms);
            let (cmp, status) = match (ra, rb) {
                (Some(_), None) => (None, Status::OnlyA),
                (None, Some(_)) => (None, Status::OnlyB),
                (Some(ra), Some(rb)) => match (a_ms, b_ms) {
                    (Some(x), Some(y)) => {
                        let tol = tolerance_pct / 100.0;
                        let medians = gate::compare(y, noise(rb), x, noise(ra), tol);
                        // Both runs in two modes: their lower modes decide when they can.
                        let low = |r: &Record| r.stats.as_ref().and_then(|st| st.low);
                        let lower = low(ra)
                            .zip(low(rb))
                            .map(|([xa, na], [yb, nb])| gate::compare(yb, nb, xa, na, tol));
                        let c = gate::with_lower_modes(medians, lower);
                        let st = match c.change {
                            Change::Fast => Status::Fast,
                            // B slowed by its GPU: not called. (A slowed by its GPU only
                            // makes a slower B more certainly slower.)
                            Change::Slow if !rb.slowdown.is_empty() => Status::Throttled,
                            Change::Slow => Status::Slow,
                            Change::Same => Status::Same,
                            Change::Ambiguous => Status::Ambiguous,
                        };
                        (Some(c), st)
                    }
                    _ => (None, Status::Untimed),
                },
                (None, None) => unreachable!("key comes from one of the files"),
            };
            let flush_differs = match (ra, rb) {
                (Some(ra), Some(rb))
                    if cmp.is_some() && ra.l2_flush_mode() != rb.l2_flush_mode() =>
                {
                    Some((ra.l2_flush_mode(), rb.l2_flush_mode()))
                }
                _ => None,
            };
            let variant_differs = match (ra, rb) {
                (Some(ra), Some(rb))
                    if !ra.variant.is_empty()
                        && !rb.variant.is_empty()
                        && ra.variant != rb.variant =>
                {
                    Some((ra.variant.clone(), rb.variant.clone()))
                }
                _ => None,
            };
            let timing_differs = match (ra, rb) {
                (Some(ra), Some(rb)) if cmp.is_some() => {
                    let (a, b) = (ra.timing_word(), rb.timing_word());
                    (a != b).then_some((a, b))
                }
                _ => None,
            };
            let same_code = match (ra, rb) {
                (Some(ra), Some(rb)) if !ra.code_hash.is_empty() && !rb.code_hash.is_empty() => {
                    Some(ra.code_hash == rb.code_hash)
                }
                _ => None,
            };
            let entries_differ = match (ra, rb) {
                (Some(ra), Some(rb))
                    if same_code == Some(false)
                        && !ra.code_entries.is_empty()
                        && !rb.code_entries.is_empty()
                        && ra.code_entries != rb.code_entries =>
                {
                    let only = |x: &[String], y: &[String]| -> Vec<String> {
                        x.iter().filter(|e| !y.contains(e)).cloned().collect()
                    };
                    Some((
                        only(&ra.code_entries, &rb.code_entries),
                        only(&rb.code_entries, &ra.code_entries),
                    ))
                }
                _ => None,
            };
            Row {
                key: k.clone(),
                a_ms,
                b_ms,
                cmp,
                status,
                flush_differs,
                variant_differs,
                timing_differs,
                same_code,
                entries_differ,
            }
        })
        .collect()
}

/// Whether any case is SLOW (the only thing that fails `kernelgate compare`).
pub fn any_slow(rows: &[Row]) -> bool {
    rows.iter().any(|r| r.status == Status::Slow)
}

/// A fixed-width table of the rows and a count per status.
pub fn render(rows: &[Row], tolerance_pct: f64) -> String {
    let w = rows.iter().map(|r| r.key.len()).max().unwrap_or(4).max(4);
    let ms = |v: Option<f64>| v.map(crate::tables::fmt_ms).unwrap_or_else(|| "-".into());
    let mut s = format!(
        "{:<w$}  {:>10}  {:>10}  {:>8}  {:>7}  {}\n",
        "case", "A median", "B median", "B/A", "noise", "call"
    );
    for r in rows {
        let _ = writeln!(
            s,
            "{:<w$}  {:>10}  {:>10}  {:>8}  {:>7}  {}{}{}{}{}",
            r.key,
            ms(r.a_ms),
            ms(r.b_ms),
            r.cmp
                .map(|c| format!("{:.3}x", c.ratio))
                .unwrap_or_else(|| "-".into()),
            r.cmp
                .map(|c| format!("±{:.1}%", c.noise * 100.0))
                .unwrap_or_else(|| "-".into()),
            r.status.word(),
            r.flush_differs
                .map(|(a, b)| format!(" (L2 flush {} -> {})", flush_word(a), flush_word(b)))
                .unwrap_or_default(),
            if r.variant_differs.is_some() {
                " (configuration changed)"
            } else {
                ""
            },
            r.timing_differs
                .as_ref()
                .map(|(a, b)| format!(" (timed as {a} -> {b})"))
                .unwrap_or_default(),
            match (r.same_code, &r.entries_differ) {
                (Some(false), Some((a, b))) => {
                    let mut parts: Vec<String> = a.iter().map(|e| format!("-{e}")).collect();
                    parts.extend(b.iter().map(|e| format!("+{e}")));
                    format!(" (machine code changed: {})", parts.join(" "))
                }
                (Some(false), None) => " (machine code changed)".to_string(),
                _ => String::new(),
            }
        );
    }
    let mut counts: Vec<String> = Vec::new();
    for st in [
        Status::Slow,
        Status::Throttled,
        Status::Fast,
        Status::Same,
        Status::Ambiguous,
        Status::Untimed,
        Status::OnlyA,
        Status::OnlyB,
    ] {
        let n = rows.iter().filter(|r| r.status == st).count();
        if n > 0 {
            counts.push(format!("{n} {}", st.word()));
        }
    }
    let _ = writeln!(
        s,
        "\n{} (tolerance {tolerance_pct}%, and beyond both runs' noise)",
        counts.join(", ")
    );
    let mixed = rows.iter().filter(|r| r.flush_differs.is_some()).count();
    if mixed > 0 {
        let _ = writeln!(
            s,
            "{mixed} case(s) were timed after different L2 flushes in A and B: not like for like \
             (a write flush leaves dirty lines that the timed kernel writes back; \
             KERNELGATE_L2_FLUSH sets the mode)"
        );
    }
    let batched = rows.iter().filter(|r| r.timing_differs.is_some()).count();
    if batched > 0 {
        let _ = writeln!(
            s,
            "{batched} case(s) were timed with another number of launches per sample in A than in \
             B: not like for like (in a batch the launches run back to back, overlapping where they \
             use programmatic dependent launch, and each after the first finds a warm L2; a \
             case's batch follows its duration unless a stored baseline \
             names one, and KERNELGATE_BATCH pins it)"
        );
    }
    let hashed: Vec<&Row> = rows.iter().filter(|r| r.same_code.is_some()).collect();
    if !hashed.is_empty() {
        let other = hashed.iter().filter(|r| r.same_code == Some(false)).count();
        let moved = hashed
            .iter()
            .filter(|r| {
                r.same_code == Some(true) && matches!(r.status, Status::Fast | Status::Slow)
            })
            .count();
        let _ = writeln!(
            s,
            "{other} of {} case(s) with a code hash on both sides ran other machine code in B than \
             in A; {} ran the same machine code, and {moved} of those were called faster or slower: \
             not by their code but by the machine or the run",
            hashed.len(),
            hashed.len() - other
        );
    }
    let changed: Vec<&Row> = rows
        .iter()
        .filter(|r| r.variant_differs.is_some())
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(
            s,
            "{} case(s) ran another kernel configuration in B than in A:",
            changed.len()
        );
        let clip = |v: &str| crate::report::clip(v, crate::report::VARIANT_NOTE_CHARS);
        for r in changed {
            let (a, b) = r.variant_differs.as_ref().expect("filtered above");
            let _ = writeln!(s, "  {}\n    A: {}\n    B: {}", r.key, clip(a), clip(b));
        }
    }
    s
}
