//! Baselines across kernel edits that leave the machine code as it was (`kernelgate rehash
//! --since REV`).
//!
//! A stored `cuda` entry belongs to the source hash of the code it timed
//! ([`crate::gpu::source_hash`]): any edit of a kernel file or a header it includes restarts
//! every entry of that file, a comment or a refactor too. This module compares the kernel
//! sources of a git revision (or an exported directory) with the working tree's, file by file,
//! and where the text differs compiles both with NVRTC for the baselines' architecture. A file
//! whose two cubins are byte for byte the same runs the same machine code, so its entries'
//! rounds still describe it: their hash moves to the new one ([`crate::baseline::rehash_entries`]).
//! So does a file whose new cubin only adds entry points, every old one's own machine code the
//! same (session 40: the fp32 split-K entries added to `gemm.cu`). A file whose entry points'
//! code changed keeps its old hash, and its entries restart on the next import as before. No GPU needed; NVRTC and the CUDA headers are.
//!
//! NVRTC's output varies between compiles of one source (sessions 43–44: it depends on the
//! compiling process's addresses; `kernels/gemm.cu` gave 5 PTX texts and 2 cubins in 16
//! processes). So where two cubins differ, both sides are compiled again ([`COMPILES`] times in
//! all, each), and an entry point counts as changed only where no compile of the old source and
//! none of the new gave it the same code: a comment edit of such a file is not called a code
//! change because one compile drew another variant.
//!
//! Entries that store the hash of the cubin they timed (`code_hash`, kept since session 37) need
//! no such step: the gate and imports match them by cubin on the next run. This module serves
//! entries stored before that, and moving hashes ahead of any run.
//!
//! It also maps stored code hashes of the form before session 39 to the current one
//! ([`legacy_code_hash_map`], `kernelgate rehash --code-hashes`): the per-entry hash changed so
//! that adding an entry point no longer changes the others' ([`crate::cubin`]).

use crate::error::Result;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

/// What became of one kernel file between the two trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Same source hash: nothing to move.
    Unchanged,
    /// The text differs, the cubins are identical: the entries keep their rounds.
    SameCode,
    /// The cubins differ only by entry points the old one lacked: every old entry point's own
    /// machine code ([`crate::cubin::entry_code_hash`]) is unchanged, so the stored entries,
    /// which timed old entry points, keep their rounds (a case whose launcher now picks a new
    /// entry point is still caught by its code hash at the next import).
    EntriesAdded,
    /// The cubins differ: the entries restart on the next import.
    CodeDiffers,
    /// Only in the new tree.
    Added,
    /// Only in the old tree.
    Removed,
}

impl Verdict {
    /// The word the table prints.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Unchanged => "unchanged",
            Verdict::SameCode => "same machine code: entries keep their rounds",
            Verdict::EntriesAdded => {
                "entry points added, the others' machine code unchanged: entries keep their rounds"
            }
            Verdict::CodeDiffers => "machine code differs: entries restart",
            Verdict::Added => "new file",
            Verdict::Removed => "removed",
        }
    }
}

/// How many times [`compare_dirs`] compiles each side of a file whose two first cubins differ
/// (NVRTC's variation, see the module comment), the first compile included.
pub const COMPILES: usize = 3;

/// One kernel file's comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileVerdict {
    /// The file name (`gemm_wgmma.cu`).
    pub file: String,
    /// Its source hash in the old tree (absent for an added file).
    pub old_hash: Option<String>,
    /// Its source hash in the new tree (absent for a removed file).
    pub new_hash: Option<String>,
    /// What became of it.
    pub verdict: Verdict,
    /// The two cubins' sizes in bytes, where both were compiled.
    pub cubin_bytes: Option<(usize, usize)>,
    /// Where the machine code differs: the entry points whose own code differs
    /// ([`crate::cubin::entry_code_hash`]; an entry point of one build only counts as changed),
    /// and how many entry points the new cubin has. `None` where the cubins could not be taken
    /// apart.
    pub changed_entries: Option<(Vec<String>, usize)>,
    /// Compiles of each side: 1, or more where the first two cubins differed and could be taken
    /// apart ([`COMPILES`]).
    pub compiles: usize,
    /// Entry points whose code differed between the first two compiles but met in a later
    /// compile of each side: NVRTC's own variation, not the edit's.
    pub varied: Vec<String>,
}

/// The entry points whose machine code differs between cubins `a` and `b`, and `b`'s count.
pub fn changed_entries(a: &[u8], b: &[u8]) -> Option<(Vec<String>, usize)> {
    let (ea, eb) = (
        crate::cubin::entry_points(a).ok()?,
        crate::cubin::entry_points(b).ok()?,
    );
    let mut names: Vec<&String> = ea.iter().chain(eb.iter()).collect();
    names.sort();
    names.dedup();
    let changed = names
        .into_iter()
        .filter(|e| {
            let ha = crate::cubin::entry_code_hash(a, e).ok();
            let hb = crate::cubin::entry_code_hash(b, e).ok();
            ha.is_none() || ha != hb
        })
        .cloned()
        .collect();
    Some((changed, eb.len()))
}

/// Whether some compile of the old source and some compile of the new gave entry point `entry`
/// the same machine code ([`crate::cubin::entry_code_hash`]).
fn variants_meet(olds: &[Vec<u8>], news: &[Vec<u8>], entry: &str) -> bool {
    let hashes = |cubins: &[Vec<u8>]| -> Vec<String> {
        cubins
            .iter()
            .filter_map(|c| crate::cubin::entry_code_hash(c, entry).ok())
            .collect()
    };
    let old = hashes(olds);
    hashes(news).iter().any(|h| old.contains(h))
}

/// Whether every entry point of `changed` is absent from cubin `old`: the new build only added
/// entry points (none changed or went away). False where the cubins could not be taken apart.
fn only_added(old: &[u8], changed: Option<&(Vec<String>, usize)>) -> bool {
    let (Some((names, _)), Ok(before)) = (changed, crate::cubin::entry_points(old)) else {
        return false;
    };
    !names.is_empty() && names.iter().all(|n| !before.contains(n))
}

/// Compares every `*.cu` of `old_dir` and `new_dir` (kernel directories) for architecture
/// `arch` and NVRTC version label `nvrtc` (the one the stored hashes were made with).
/// `compile(dir, file)` returns a file's cubin; it runs only for files whose source hash
/// differs, old tree first, and again ([`COMPILES`] in all, each side) where the two cubins
/// differ in entry points both have. The result is sorted by file name.
pub fn compare_dirs(
    old_dir: &Path,
    new_dir: &Path,
    arch: &str,
    nvrtc: &str,
    compile: &mut dyn FnMut(&Path, &str) -> Result<Vec<u8>>,
) -> Result<Vec<FileVerdict>> {
    let hashes = |dir: &Path| -> Result<BTreeMap<String, String>> {
        let mut map = BTreeMap::new();
        for (name, source) in crate::gpu::kernel_sources(dir)? {
            let h = crate::gpu::current_hash(dir, &source, arch, nvrtc)?;
            map.insert(name, h);
        }
        Ok(map)
    };
    let (old, new) = (hashes(old_dir)?, hashes(new_dir)?);
    let mut names: Vec<&String> = old.keys().chain(new.keys()).collect();
    names.sort();
    names.dedup();
    let mut out = Vec::new();
    for name in names {
        let (o, n) = (old.get(name).cloned(), new.get(name).cloned());
        let mut compiles = 0;
        let mut varied = Vec::new();
        let (verdict, cubin_bytes, changed) = match (&o, &n) {
            (Some(a), Some(b)) if a == b => (Verdict::Unchanged, None, None),
            (Some(_), Some(_)) => {
                let a = compile(old_dir, name)?;
                let b = compile(new_dir, name)?;
                compiles = 1;
                if a == b {
                    (Verdict::SameCode, Some((a.len(), b.len())), None)
                } else {
                    let mut changed = changed_entries(&a, &b);
                    let bytes = Some((a.len(), b.len()));
                    // Entry points of both cubins whose code differs may be NVRTC's variation:
                    // compile both sides again until each meets or the compiles run out.
                    if let Some((names, _)) = &mut changed {
                        let mut suspects: Vec<String> = names
                            .iter()
                            .filter(|e| crate::cubin::entry_code_hash(&a, e).is_ok())
                            .cloned()
                            .collect();
                        let (mut olds, mut news) = (vec![a.clone()], vec![b]);
                        while !suspects.is_empty() && compiles < COMPILES {
                            olds.push(compile(old_dir, name)?);
                            news.push(compile(new_dir, name)?);
                            compiles += 1;
                            let (met, left): (Vec<String>, Vec<String>) = suspects
                                .into_iter()
                                .partition(|e| variants_meet(&olds, &news, e));
                            varied.extend(met);
                            suspects = left;
                        }
                        names.retain(|e| !varied.contains(e));
                    }
                    let verdict = match &changed {
                        Some((names, _)) if names.is_empty() => Verdict::SameCode,
                        _ if only_added(&a, changed.as_ref()) => Verdict::EntriesAdded,
                        _ => Verdict::CodeDiffers,
                    };
                    (verdict, bytes, changed)
                }
            }
            (None, _) => (Verdict::Added, None, None),
            (_, None) => (Verdict::Removed, None, None),
        };
        varied.sort();
        out.push(FileVerdict {
            file: name.clone(),
            old_hash: o,
            new_hash: n,
            verdict,
            cubin_bytes,
            changed_entries: changed,
            compiles,
            varied,
        });
    }
    Ok(out)
}

/// The hash moves of the files that kept their entry points' machine code (the same cubin, or
/// only entry points added): old hash → (new hash, file), as
/// [`crate::baseline::rehash_entries`] takes them.
pub fn migration(verdicts: &[FileVerdict]) -> BTreeMap<String, (String, String)> {
    verdicts
        .iter()
        .filter(|v| matches!(v.verdict, Verdict::SameCode | Verdict::EntriesAdded))
        .filter_map(|v| Some((v.old_hash.clone()?, (v.new_hash.clone()?, v.file.clone()))))
        .collect()
}

/// A Markdown table of the comparison: one row per file whose text changed (unchanged files
/// are counted under it).
pub fn render(verdicts: &[FileVerdict], old: &str, arch: &str, nvrtc: &str) -> String {
    let mut s =
        format!("# Kernel sources since {old}: machine code compared (NVRTC {nvrtc}, {arch})\n\n");
    let changed: Vec<&FileVerdict> = verdicts
        .iter()
        .filter(|v| v.verdict != Verdict::Unchanged)
        .collect();
    if changed.is_empty() {
        let _ = writeln!(s, "No kernel file changed ({} compared).", verdicts.len());
        return s;
    }
    s.push_str("| file | old hash | new hash | cubin bytes (old / new) | verdict |\n");
    s.push_str("| --- | --- | --- | --- | --- |\n");
    for v in &changed {
        let bytes = v
            .cubin_bytes
            .map(|(a, b)| format!("{a} / {b}"))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} |",
            v.file,
            v.old_hash.as_deref().unwrap_or("–"),
            v.new_hash.as_deref().unwrap_or("–"),
            bytes,
            v.verdict.word()
        );
    }
    for v in &changed {
        if !v.varied.is_empty() {
            let _ = writeln!(
                s,
                "\n{}: {} entry points took other machine code in one compile and met in another ({} compiles of each side; NVRTC's own variation, not the edit's): {}",
                v.file,
                v.varied.len(),
                v.compiles,
                v.varied.join(", ")
            );
        }
        if v.verdict == Verdict::SameCode {
            continue;
        }
        if let Some((names, total)) = &v.changed_entries {
            let what = if v.verdict == Verdict::EntriesAdded {
                "are new (the others' machine code is unchanged)"
            } else {
                "differ"
            };
            let _ = writeln!(
                s,
                "\n{}: {} of {} entry points {what}{}{}",
                v.file,
                names.len(),
                total,
                if names.is_empty() { "" } else { ": " },
                names.join(", ")
            );
        }
    }
    let count = |w: Verdict| changed.iter().filter(|v| v.verdict == w).count();
    let _ = writeln!(
        s,
        "\n{} same machine code, {} with entry points added, {} machine code differs, {} new, {} removed; {} unchanged.",
        count(Verdict::SameCode),
        count(Verdict::EntriesAdded),
        count(Verdict::CodeDiffers),
        count(Verdict::Added),
        count(Verdict::Removed),
        verdicts.len() - changed.len()
    );
    s
}

/// Most entry points of one file a case is taken to load together, for
/// [`legacy_code_hash_map`]: the padding copies, the kernel and a reduction.
pub const MOST_ENTRIES_PER_CASE: usize = 4;

/// What [`legacy_code_hash_map`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CodeHashMap {
    /// Legacy code hash ([`crate::cubin::entry_code_hash_legacy`] per entry point, combined as
    /// [`crate::gpu::Gpu::code_log_hash`] combines them) → the current one.
    pub map: BTreeMap<String, String>,
    /// Kernel files compiled.
    pub files: usize,
    /// Entry points seen.
    pub entries: usize,
}

/// The code hash a case that loaded `used` (file, entry point, per-entry hash) records, as
/// [`crate::gpu::Gpu::code_log_hash`] computes it.
pub fn combine_code_hashes(used: &[(String, String, String)]) -> String {
    use sha2::{Digest, Sha256};
    let mut sorted = used.to_vec();
    sorted.sort();
    let mut h = Sha256::new();
    for (file, entry, hash) in &sorted {
        h.update(format!("{file}\t{entry}\t{hash}\n").as_bytes());
    }
    crate::gpu::hex12(&h.finalize())
}

/// Stored code hashes of the working tree's machine code, as they were computed before session
/// 39, mapped to the current form: every `*.cu` of `dir` compiled (`compile(dir, file)` gives its
/// cubin), and for every set of up to [`MOST_ENTRIES_PER_CASE`] entry points of one file, the
/// legacy combined hash → the current one, and for every two entry points of two files. A
/// stored hash that is not in the map timed other code (or a larger set across files), and
/// restarts as any other code does.
pub fn legacy_code_hash_map(
    dir: &Path,
    compile: &mut dyn FnMut(&Path, &str) -> Result<Vec<u8>>,
) -> Result<CodeHashMap> {
    let mut out = CodeHashMap::default();
    // (file, entry, legacy, current) of every entry point, for the pairs across files
    let mut all: Vec<(String, String, String, String)> = Vec::new();
    for path in crate::files::with_extension(dir, "cu")? {
        let file = path
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        let cubin = compile(dir, &file)?;
        let Ok(names) = crate::cubin::entry_points(&cubin) else {
            continue;
        };
        out.files += 1;
        out.entries += names.len();
        let mut hashes = Vec::new();
        for e in &names {
            if let (Ok(old), Ok(new)) = (
                crate::cubin::entry_code_hash_legacy(&cubin, e),
                crate::cubin::entry_code_hash(&cubin, e),
            ) {
                all.push((file.clone(), e.clone(), old.clone(), new.clone()));
                hashes.push((e.clone(), old, new));
            }
        }
        let mut pick = Vec::new();
        subsets(&hashes, 0, &mut pick, &mut |set| {
            let old: Vec<_> = set
                .iter()
                .map(|(e, o, _)| (file.clone(), e.clone(), o.clone()))
                .collect();
            let new: Vec<_> = set
                .iter()
                .map(|(e, _, n)| (file.clone(), e.clone(), n.clone()))
                .collect();
            out.map
                .insert(combine_code_hashes(&old), combine_code_hashes(&new));
        });
    }
    // Two entry points of two files (a row kernel and a helper of another module).
    for (i, a) in all.iter().enumerate() {
        for b in all[i + 1..].iter().filter(|b| b.0 != a.0) {
            let old = [
                (a.0.clone(), a.1.clone(), a.2.clone()),
                (b.0.clone(), b.1.clone(), b.2.clone()),
            ];
            let new = [
                (a.0.clone(), a.1.clone(), a.3.clone()),
                (b.0.clone(), b.1.clone(), b.3.clone()),
            ];
            out.map
                .insert(combine_code_hashes(&old), combine_code_hashes(&new));
        }
    }
    Ok(out)
}

/// Calls `f` with every non-empty subset of `items[from..]` added to `pick`, of at most
/// [`MOST_ENTRIES_PER_CASE`] items in all.
fn subsets<T: Clone>(items: &[T], from: usize, pick: &mut Vec<T>, f: &mut dyn FnMut(&[T])) {
    for i in from..items.len() {
        pick.push(items[i].clone());
        f(pick);
        if pick.len() < MOST_ENTRIES_PER_CASE {
            subsets(items, i + 1, pick, f);
        }
        pick.pop();
    }
}
