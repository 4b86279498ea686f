//! `kernelgate compile --repeat N`: whether NVRTC gives a kernel file the same machine code every
//! time it compiles it.
//!
//! It does not always. NVRTC 13.0.88 compiled `kernels/gemm.cu` into 5 PTX texts and 2 cubins in
//! 16 processes. The output depends on the compiling process's addresses: without address-space
//! randomisation and with an identical environment it was the same 16 times
//! (`scripts/nvrtc-determinism.sh`, session 44).
//!
//! An entry point whose code varies gets other code hashes on other machines with the same
//! source. The harness treats that as the same code ([`crate::gate::compiler_variant`],
//! [`crate::machine_code`]). This report shows which entry points vary, and how often: compile
//! each file N times in this process and count each entry point's distinct machine codes
//! ([`crate::cubin::entry_code_hash`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One file's entry points after several compiles: entry point → (code hash → compiles that
/// gave it), in name order.
pub type EntryCodes = BTreeMap<String, BTreeMap<String, usize>>;

/// Counts, per entry point of `cubins` (compiles of one file), the compiles that gave each of
/// its machine codes. An entry point missing from some cubin counts those compiles under
/// `"absent"`. A cubin that cannot be taken apart is an error naming its compile (1-based).
pub fn entry_codes(cubins: &[Vec<u8>]) -> Result<EntryCodes, String> {
    let mut names: Vec<String> = Vec::new();
    for (i, c) in cubins.iter().enumerate() {
        for e in crate::cubin::entry_points(c).map_err(|m| format!("compile {}: {m}", i + 1))? {
            if !names.contains(&e) {
                names.push(e);
            }
        }
    }
    let mut out = EntryCodes::new();
    for name in names {
        let counts = out.entry(name.clone()).or_default();
        for c in cubins {
            let h = crate::cubin::entry_code_hash(c, &name).unwrap_or_else(|_| "absent".into());
            *counts.entry(h).or_default() += 1;
        }
    }
    Ok(out)
}

/// The entry points of `codes` with more than one machine code.
pub fn varying(codes: &EntryCodes) -> Vec<&str> {
    codes
        .iter()
        .filter(|(_, c)| c.len() > 1)
        .map(|(e, _)| e.as_str())
        .collect()
}

/// A Markdown section for `files` (file name, its [`EntryCodes`]) after `compiles` compiles of
/// each: a row per entry point that varied (how many machine codes, and how many compiles gave
/// each, most first), then one line per file whose every entry point kept one machine code.
pub fn render(compiles: usize, files: &[(String, EntryCodes)]) -> String {
    let mut s =
        format!("\n## NVRTC's variation: {compiles} compiles of each file in this process\n\n");
    let mut rows = Vec::new();
    let mut steady = Vec::new();
    for (file, codes) in files {
        let v = varying(codes);
        if v.is_empty() {
            steady.push(format!("{file} ({} entry points)", codes.len()));
        }
        for e in v {
            let mut counts: Vec<usize> = codes[e].values().copied().collect();
            counts.sort_unstable_by(|a, b| b.cmp(a));
            let counts: Vec<String> = counts.iter().map(|n| n.to_string()).collect();
            rows.push(format!(
                "| {file} | {e} | {} | {} |",
                codes[e].len(),
                counts.join(", ")
            ));
        }
    }
    if rows.is_empty() {
        s.push_str("Every entry point compiled to one machine code.\n");
    } else {
        s.push_str("| file | entry point | machine codes | compiles each |\n");
        s.push_str("| --- | --- | ---: | --- |\n");
        for r in &rows {
            let _ = writeln!(s, "{r}");
        }
        let _ = writeln!(
            s,
            "\n{} entry points varied. Their cases can record another code hash on another machine \
             with the same source; imports and the gate treat that as the same code when the NVRTC \
             release is the same.",
            rows.len()
        );
    }
    if !steady.is_empty() {
        let _ = writeln!(
            s,
            "\nOne machine code for every entry point: {}.",
            steady.join(", ")
        );
    }
    s
}
