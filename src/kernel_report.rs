//! `kernelgate compile`: what ptxas reports per entry point when the kernels are compiled
//! without a GPU ([`crate::gpu::compile_offline`]), parsed from NVRTC's log and rendered as one
//! table (registers, spills, stack and shared memory per entry, and every file's outcome).

/// One entry point's resources as ptxas reports them (`--ptxas-options=-v`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EntryResources {
    /// Entry point name.
    pub name: String,
    /// Registers per thread.
    pub registers: u32,
    /// Stack frame, bytes.
    pub stack: u64,
    /// Spill stores, bytes.
    pub spill_stores: u64,
    /// Spill loads, bytes.
    pub spill_loads: u64,
    /// Static shared memory, bytes.
    pub smem: u64,
    /// ptxas's "Potential Performance Loss" notes for this entry, each with its code
    /// (`"(C7511) wgmma.mma_async instructions are serialized due to insufficient register
    /// resources for the wgmma pipeline"`: every wgmma of the entry waits for the previous one).
    pub performance_loss: Vec<String>,
}

/// The number before `unit` in `line` (`"32772 bytes smem"` with unit `" bytes smem"`).
fn number_before(line: &str, unit: &str) -> Option<u64> {
    let end = line.find(unit)?;
    let head = &line[..end];
    let start = head
        .rfind(|c: char| !c.is_ascii_digit())
        .map_or(0, |i| i + 1);
    head[start..].parse().ok()
}

/// A ptxas "Potential Performance Loss" line: the entry it names and the note with its code
/// (`ptxas info : (C7511) Potential Performance Loss: wgmma.mma_async instructions are
/// serialized due to ... in the function 'gemm_wgmma_f16_128x256_ts'`).
fn performance_loss(line: &str) -> Option<(String, String)> {
    const MARK: &str = "Potential Performance Loss: ";
    const IN_FN: &str = " in the function '";
    let at = line.find(MARK)?;
    let code = line[..at]
        .rfind('(')
        .map(|i| line[i..at].trim())
        .filter(|c| c.ends_with(')'))
        .unwrap_or_default();
    let rest = &line[at + MARK.len()..];
    let (text, name) = match rest.rfind(IN_FN) {
        Some(i) => (&rest[..i], rest[i + IN_FN.len()..].trim_end_matches('\'')),
        None => (rest, ""),
    };
    let note = if code.is_empty() {
        text.trim().to_string()
    } else {
        format!("{code} {}", text.trim())
    };
    Some((name.to_string(), note))
}

/// Parses ptxas's verbose report from an NVRTC log: one [`EntryResources`] per "Compiling
/// entry function" line, filled from the lines that follow it, and each entry's "Potential
/// Performance Loss" notes (ptxas prints them before the entries' reports, naming the
/// function). Lines of other forms are ignored, so a log without the report gives an empty
/// list.
pub fn parse_ptxas(log: &str) -> Vec<EntryResources> {
    let mut out: Vec<EntryResources> = Vec::new();
    let mut losses: Vec<(String, String)> = Vec::new();
    for line in log.lines() {
        if let Some(l) = performance_loss(line) {
            losses.push(l);
            continue;
        }
        if let Some(rest) = line.split("Compiling entry function '").nth(1) {
            let name = rest.split('\'').next().unwrap_or_default().to_string();
            out.push(EntryResources {
                name,
                ..EntryResources::default()
            });
            continue;
        }
        let Some(cur) = out.last_mut() else { continue };
        if line.contains("bytes stack frame") {
            cur.stack = number_before(line, " bytes stack frame").unwrap_or(0);
            cur.spill_stores = number_before(line, " bytes spill stores").unwrap_or(0);
            cur.spill_loads = number_before(line, " bytes spill loads").unwrap_or(0);
        } else if line.contains(" registers") {
            cur.registers = number_before(line, " registers").unwrap_or(0) as u32;
            cur.smem = number_before(line, " bytes smem").unwrap_or(0);
        }
    }
    for (name, note) in losses {
        if let Some(e) = out.iter_mut().find(|e| e.name == name) {
            e.performance_loss.push(note);
        }
    }
    out
}

/// The outcome of compiling one file: the entries ptxas reported, or the error's text.
#[derive(Debug, Clone, PartialEq)]
pub enum FileOutcome {
    /// Compiled: what ptxas reported per entry.
    Ok(Vec<EntryResources>),
    /// Did not compile (or could not be read): the error as text.
    Failed(String),
}

/// Markdown report of `files` (name, outcome) compiled for `arch` by NVRTC `nvrtc` ("13.0"):
/// one row per entry point with its registers, spills, stack and shared memory (spills
/// flagged), then ptxas's performance-loss notes per entry (a serialized wgmma pipeline), each
/// failure with its log, and a closing count. The header names the NVRTC
/// version because a GPU machine's own NVRTC compiles the kernels again at run time, and an
/// older one can refuse what a newer one accepted (a generic lambda: 13.5 took it, 13.0 did not).
pub fn render(arch: &str, nvrtc: &str, files: &[(String, FileOutcome)]) -> String {
    let mut s = format!(
        "# Kernels compiled for {arch} (NVRTC {nvrtc}, no GPU)\n\n\
         A GPU machine compiles them again with its own NVRTC: one older than {nvrtc} may refuse \
         what compiled here.\n\n"
    );
    s.push_str(
        "| file | entry | registers | spill stores / loads (B) | stack (B) | static smem (B) |\n",
    );
    s.push_str("|---|---|---:|---:|---:|---:|\n");
    let mut failed = Vec::new();
    let mut entries = 0;
    let mut spilling = 0;
    let mut losses = Vec::new();
    for (file, outcome) in files {
        match outcome {
            FileOutcome::Ok(es) => {
                for e in es {
                    entries += 1;
                    if !e.performance_loss.is_empty() {
                        losses.push((file, e));
                    }
                    let spill = if e.spill_stores + e.spill_loads > 0 {
                        spilling += 1;
                        format!("**{} / {}**", e.spill_stores, e.spill_loads)
                    } else {
                        "0 / 0".to_string()
                    };
                    s.push_str(&format!(
                        "| {file} | {} | {} | {spill} | {} | {} |\n",
                        e.name, e.registers, e.stack, e.smem
                    ));
                }
            }
            FileOutcome::Failed(why) => failed.push((file, why)),
        }
    }
    if !losses.is_empty() {
        s.push_str("\n## ptxas: potential performance loss\n\n");
        for (file, e) in &losses {
            for note in &e.performance_loss {
                s.push_str(&format!("- **{}** ({file}): {note}\n", e.name));
            }
        }
    }
    for (file, why) in &failed {
        s.push_str(&format!(
            "\n## {file}: FAILED\n\n```\n{}\n```\n",
            why.trim_end()
        ));
    }
    s.push_str(&format!(
        "\n{} files, {} compiled, {} failed; {entries} entry points, {spilling} with spills, {} with a potential performance loss\n",
        files.len(),
        files.len() - failed.len(),
        failed.len(),
        losses.len()
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOG: &str = "ptxas info    : (C7511) Potential Performance Loss: wgmma.mma_async instructions are serialized due to insufficient register resources for the wgmma pipeline in the function 'gemm_gemv_bf16_8'
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'gemm_mtc_fp16' for 'sm_90a'
ptxas info    : Function properties for gemm_mtc_fp16
ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 74 registers, used 1 barriers, 32772 bytes smem
ptxas info    : Compile time = 47.359 ms
ptxas info    : Compiling entry function 'gemm_gemv_bf16_8' for 'sm_90a'
ptxas info    : Function properties for gemm_gemv_bf16_8
ptxas         .     16 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 128 registers, used 1 barriers, 24596 bytes smem, 400 bytes cmem[0]
";

    #[test]
    fn parses_each_entry_from_nvrtcs_ptxas_report() {
        let es = parse_ptxas(LOG);
        assert_eq!(
            es,
            vec![
                EntryResources {
                    name: "gemm_mtc_fp16".into(),
                    registers: 74,
                    stack: 0,
                    spill_stores: 0,
                    spill_loads: 0,
                    smem: 32772,
                    performance_loss: vec![],
                },
                EntryResources {
                    name: "gemm_gemv_bf16_8".into(),
                    registers: 128,
                    stack: 16,
                    spill_stores: 12,
                    spill_loads: 16,
                    smem: 24596,
                    performance_loss: vec![
                        "(C7511) wgmma.mma_async instructions are serialized due to insufficient \
                         register resources for the wgmma pipeline"
                            .into()
                    ],
                },
            ]
        );
        assert!(parse_ptxas("").is_empty());
        assert!(parse_ptxas("ptxas info    : Used 3 registers").is_empty());
    }

    #[test]
    fn report_flags_spills_and_lists_failures() {
        let files = vec![
            (
                "some_kernels.cu".to_string(),
                FileOutcome::Ok(parse_ptxas(LOG)),
            ),
            (
                "broken.cu".to_string(),
                FileOutcome::Failed(
                    "broken.cu(3): error: identifier \"x\" is undefined\n".to_string(),
                ),
            ),
        ];
        insta::assert_snapshot!(render("sm_90a", "13.0", &files));
    }
}
