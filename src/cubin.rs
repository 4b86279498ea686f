//! The machine code of one kernel entry point inside a cubin (an ELF64 file), as a hash.
//!
//! A cubin holds every entry point of a kernel file. Editing one tile's template changes that
//! tile's machine code and leaves the others' byte for byte as they were. [`entry_code_hash`]
//! hashes what decides one entry's execution:
//!
//! - its own sections (`.text.E`, `.nv.info.E`, `.nv.constant0.E`, `.nv.shared.E`, its
//!   relocations, ...);
//! - every section that belongs to no entry: device functions that were not inlined, module
//!   globals and constants, the call graph;
//! - its records in the module-wide `.nv.info` (registers, stack, frame size).
//!
//! It leaves out other entries' sections and records, symbol and string tables, debug and note
//! sections. Symbol indices, which shift when an entry is added or removed, are replaced by
//! symbol names wherever a section refers to one.
//!
//! Any doubt errs towards "changed": a section it cannot attribute counts for every entry. A
//! file it cannot parse is an error, and the caller falls back to the whole cubin's hash.
//!
//! Adding or removing an entry point leaves the others' hashes as they were (since session 39):
//! the entry's own `EIATTR_PARAM_CBANK` record names its constant bank by symbol, not index, and
//! neither the sizes of the module-wide `.nv.info` and `.nv.callgraph` (every entry's records)
//! nor the debug frame's relocations count. [`entry_code_hash_legacy`] is the hash before that,
//! which changed for every entry of a file that gained one; `kernelgate rehash --code-hashes`
//! maps stored hashes of that kind to the current ones.

use sha2::{Digest, Sha256};

/// Section type: relocations with addends (24-byte records).
const SHT_RELA: u32 = 4;
/// Section type: no bytes in the file (shared memory sizes).
const SHT_NOBITS: u32 = 8;
/// Section type: relocations without addends (16-byte records).
const SHT_REL: u32 = 9;
/// Symbol type: a function.
const STT_FUNC: u8 = 2;
/// `st_other` bit of a CUDA kernel entry point.
const STO_CUDA_ENTRY: u8 = 0x10;
/// EIATTR record format whose value is `u16 size` then `size` bytes.
const EIFMT_SVAL: u8 = 4;

struct Section<'a> {
    name: String,
    kind: u32,
    flags: u64,
    align: u64,
    size: u64,
    data: &'a [u8],
}

/// One section header's fields that matter here.
struct Header {
    name: u32,
    kind: u32,
    flags: u64,
    off: u64,
    size: u64,
    link: u32,
    align: u64,
}

struct Symbol {
    name: String,
    entry: bool,
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}
fn cstr(b: &[u8], at: usize) -> Option<String> {
    let rest = b.get(at..)?;
    let end = rest.iter().position(|&c| c == 0)?;
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// The sections and symbols of an ELF64 little-endian file.
fn parse(elf: &[u8]) -> Result<(Vec<Section<'_>>, Vec<Symbol>), String> {
    if elf.get(..4) != Some(b"\x7fELF".as_slice()) {
        return Err("not an ELF file".into());
    }
    if elf.get(4) != Some(&2) || elf.get(5) != Some(&1) {
        return Err("not a 64-bit little-endian ELF file".into());
    }
    let bad = || "truncated ELF header".to_string();
    let shoff = u64_at(elf, 40).ok_or_else(bad)? as usize;
    let shentsize = u16_at(elf, 58).ok_or_else(bad)? as usize;
    let shnum = u16_at(elf, 60).ok_or_else(bad)? as usize;
    let shstrndx = u16_at(elf, 62).ok_or_else(bad)? as usize;
    if shentsize < 64 {
        return Err(format!("section header size {shentsize} < 64"));
    }
    let header = |i: usize| -> Result<Header, String> {
        let h = shoff + i * shentsize;
        let e = || format!("section header {i} out of the file");
        Ok(Header {
            name: u32_at(elf, h).ok_or_else(e)?,
            kind: u32_at(elf, h + 4).ok_or_else(e)?,
            flags: u64_at(elf, h + 8).ok_or_else(e)?,
            off: u64_at(elf, h + 24).ok_or_else(e)?,
            size: u64_at(elf, h + 32).ok_or_else(e)?,
            link: u32_at(elf, h + 40).ok_or_else(e)?,
            align: u64_at(elf, h + 48).ok_or_else(e)?,
        })
    };
    let body = |kind: u32, off: u64, size: u64, i: usize| -> Result<&[u8], String> {
        if kind == SHT_NOBITS {
            return Ok(&[]);
        }
        elf.get(off as usize..(off + size) as usize)
            .ok_or_else(|| format!("section {i}'s data out of the file"))
    };
    let sh = header(shstrndx)?;
    let shstr = body(sh.kind, sh.off, sh.size, shstrndx)?;
    let mut sections = Vec::with_capacity(shnum);
    let mut symtab = None;
    for i in 0..shnum {
        let h = header(i)?;
        let data = body(h.kind, h.off, h.size, i)?;
        let name = cstr(shstr, h.name as usize).ok_or_else(|| format!("section {i}'s name"))?;
        if name == ".symtab" {
            symtab = Some((data, h.link as usize));
        }
        sections.push(Section {
            name,
            kind: h.kind,
            flags: h.flags,
            align: h.align,
            size: h.size,
            data,
        });
    }
    let mut symbols = Vec::new();
    if let Some((data, strndx)) = symtab {
        let strtab = sections
            .get(strndx)
            .ok_or("the symbol table's string table is missing")?
            .data;
        for s in data.chunks_exact(24) {
            let name = cstr(strtab, u32_at(s, 0).unwrap_or(0) as usize).unwrap_or_default();
            symbols.push(Symbol {
                entry: s[4] & 0xf == STT_FUNC && s[5] & STO_CUDA_ENTRY != 0,
                name,
            });
        }
    }
    Ok((sections, symbols))
}

/// The entry whose own section `name` is (`.text.E`, `.nv.info.E`, ...), if any.
fn owner<'a>(name: &str, entries: &'a [&'a str]) -> Option<&'a str> {
    entries.iter().copied().find(|e| {
        name.len() > e.len() + 1
            && name.ends_with(e)
            && name.as_bytes()[name.len() - e.len() - 1] == b'.'
    })
}

/// The hash of what decides entry point `entry`'s execution in `cubin` (module doc), as the
/// first 12 bytes of SHA-256 in hex. An error when the cubin cannot be parsed or has no such
/// entry point.
pub fn entry_code_hash(cubin: &[u8], entry: &str) -> Result<String, String> {
    hash_entry(cubin, entry, false)
}

/// [`entry_code_hash`] as it was computed until session 39: the entry's own `.nv.info.E` hashed
/// as it is (its constant-bank record names a symbol by index), the sizes of the module-wide
/// `.nv.info` and `.nv.callgraph` and the debug frame's relocations counted, so adding or
/// removing an entry point changed every entry's hash. Kept to map stored hashes to the
/// current ones (`kernelgate rehash --code-hashes`).
pub fn entry_code_hash_legacy(cubin: &[u8], entry: &str) -> Result<String, String> {
    hash_entry(cubin, entry, true)
}

/// `.nv.info` attribute EIATTR_PARAM_CBANK: the symbol of the entry's parameter constant bank,
/// then its offset and size.
const EIATTR_PARAM_CBANK: u8 = 0x0a;

fn hash_entry(cubin: &[u8], entry: &str, legacy: bool) -> Result<String, String> {
    let (sections, symbols) = parse(cubin)?;
    let entries: Vec<&str> = symbols
        .iter()
        .filter(|s| s.entry)
        .map(|s| s.name.as_str())
        .collect();
    if !entries.contains(&entry) {
        return Err(format!("no entry point {entry} in the cubin"));
    }
    // A symbol index as the hash sees it: this entry, another entry (its record is left out),
    // or a name.
    let sym = |idx: u64| -> Option<String> {
        match symbols.get(idx as usize) {
            Some(s) if s.name == entry => Some("@".into()),
            Some(s) if s.entry => None,
            Some(s) => Some(format!("sym:{}", s.name)),
            None => Some(format!("raw:{idx}")),
        }
    };
    // Each section's canonical bytes. Legacy: hashed in file order, records in file order. Now:
    // sections sorted by canonical name and the module-wide tables' records sorted, since
    // adding an entry point moves other sections and records between this entry's.
    let mut parts: Vec<(String, Vec<u8>)> = Vec::new();
    for s in &sections {
        let n = s.name.as_str();
        if matches!(n, "" | ".shstrtab" | ".strtab" | ".symtab")
            || n.starts_with(".debug")
            || n.starts_with(".note")
            || (!legacy && (n.starts_with(".rel.debug") || n.starts_with(".rela.debug")))
        {
            continue;
        }
        let canonical = match owner(n, &entries) {
            Some(e) if e == entry => format!("{}.@", &n[..n.len() - e.len() - 1]),
            Some(_) => continue,
            None => n.to_string(),
        };
        let mut b: Vec<u8> = Vec::new();
        b.extend_from_slice(canonical.as_bytes());
        b.push(0);
        b.extend_from_slice(&s.kind.to_le_bytes());
        b.extend_from_slice(&s.flags.to_le_bytes());
        b.extend_from_slice(&s.align.to_le_bytes());
        // The module-wide tables hold every entry's records: their size is not this entry's.
        if legacy || !matches!(n, ".nv.info" | ".nv.callgraph") {
            b.extend_from_slice(&s.size.to_le_bytes());
        }
        if s.kind != SHT_NOBITS {
            let mut records = section_records(s, &canonical, legacy, &sym)?;
            if !legacy && matches!(n, ".nv.info" | ".nv.callgraph") {
                records.sort();
            }
            for r in records {
                b.extend_from_slice(&r);
            }
        }
        parts.push((canonical, b));
    }
    if !legacy {
        parts.sort();
    }
    let mut h = Sha256::new();
    for (_, b) in &parts {
        h.update(b);
    }
    Ok(crate::gpu::hex12(&h.finalize()))
}

/// One section's content as the hash sees it, as records (one record for plain data): symbol
/// indices replaced by `sym`'s names, other entries' records left out.
fn section_records(
    s: &Section<'_>,
    canonical: &str,
    legacy: bool,
    sym: &dyn Fn(u64) -> Option<String>,
) -> Result<Vec<Vec<u8>>, String> {
    let n = s.name.as_str();
    let mut out: Vec<Vec<u8>> = Vec::new();
    // `.nv.info` records: (format, attribute, value). In the module-wide table every SVAL value
    // starts with a function's symbol index, and other entries' records are left out; in this
    // entry's own table only the constant-bank record names a symbol.
    let info = |module_wide: bool, out: &mut Vec<Vec<u8>>| {
        let mut at = 0;
        while at + 4 <= s.data.len() {
            let (fmt, attr) = (s.data[at], s.data[at + 1]);
            let len = if fmt == EIFMT_SVAL {
                4 + u16_at(s.data, at + 2).unwrap_or(0) as usize
            } else {
                4
            };
            let rec = s
                .data
                .get(at..at + len)
                .ok_or_else(|| format!("{n} record at {at} runs past the section"))?;
            at += len;
            if fmt == EIFMT_SVAL && len >= 8 && (module_wide || attr == EIATTR_PARAM_CBANK) {
                let who = match sym(u32_at(rec, 4).unwrap_or(0) as u64) {
                    Some(w) => w,
                    None if module_wide => continue,
                    None => "entry".into(),
                };
                let mut r = vec![fmt, attr];
                r.extend_from_slice(who.as_bytes());
                r.extend_from_slice(&rec[8..]);
                out.push(r);
            } else {
                out.push(rec.to_vec());
            }
        }
        Ok::<(), String>(())
    };
    if n == ".nv.info" {
        info(true, &mut out)?;
    } else if !legacy && canonical == ".nv.info.@" {
        info(false, &mut out)?;
    } else if s.kind == SHT_REL || s.kind == SHT_RELA {
        let size = if s.kind == SHT_RELA { 24 } else { 16 };
        for r in s.data.chunks(size) {
            let info = u64_at(r, 8).unwrap_or(0);
            let mut b = r[..8.min(r.len())].to_vec();
            b.extend_from_slice(&(info & 0xffff_ffff).to_le_bytes());
            b.extend_from_slice(sym(info >> 32).unwrap_or_else(|| "entry".into()).as_bytes());
            b.extend_from_slice(r.get(16..).unwrap_or(&[]));
            out.push(b);
        }
    } else if n == ".nv.callgraph" {
        // Pairs of symbol indices: as names, the pairs with another entry left out.
        for p in s.data.chunks(8) {
            let (a, b) = (u32_at(p, 0).unwrap_or(0), u32_at(p, 4).unwrap_or(0));
            if let (Some(a), Some(b)) = (sym(a as u64), sym(b as u64)) {
                let mut r = a.into_bytes();
                r.push(0);
                r.extend_from_slice(b.as_bytes());
                r.push(0);
                out.push(r);
            }
        }
    } else {
        out.push(s.data.to_vec());
    }
    Ok(out)
}

/// The entry points of `cubin` (kernels), in symbol-table order.
pub fn entry_points(cubin: &[u8]) -> Result<Vec<String>, String> {
    let (_, symbols) = parse(cubin)?;
    Ok(symbols
        .into_iter()
        .filter(|s| s.entry)
        .map(|s| s.name)
        .collect())
}
