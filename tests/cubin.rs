//! One entry point's machine code inside a cubin ([`kernelgate::cubin::entry_code_hash`]): other
//! entries' sections and records do not count, module-wide ones do, symbol indices count by
//! name.

mod common;

use common::{elf, Sym};
use kernelgate::cubin::{entry_code_hash, entry_code_hash_legacy, entry_points};

/// A module-wide `.nv.info` record (EIFMT_SVAL) of attribute `attr` for symbol `sym`.
fn info(attr: u8, sym: u32, value: u32) -> Vec<u8> {
    let mut r = vec![4, attr, 8, 0];
    r.extend(sym.to_le_bytes());
    r.extend(value.to_le_bytes());
    r
}

/// A RELA record at `offset` against symbol `sym`.
fn rela(offset: u64, sym: u32) -> Vec<u8> {
    let mut r = offset.to_le_bytes().to_vec();
    r.extend(((sym as u64) << 32 | 0x2a).to_le_bytes());
    r.extend(0i64.to_le_bytes());
    r
}

const PROGBITS: u32 = 1;
const RELA: u32 = 4;

/// Two kernels a and b and a global g; a's text `ta`, b's `tb`, shared data `glob`, register
/// counts `ra` and `rb`; with `swap`, b's and a's symbols trade places (indices 1 and 2).
fn module(ta: &[u8], tb: &[u8], glob: &[u8], ra: u32, rb: u32, swap: bool) -> Vec<u8> {
    let (ia, ib) = if swap { (2, 1) } else { (1, 2) };
    let syms: Vec<Sym> = if swap {
        vec![("b", true), ("a", true), ("g", false)]
    } else {
        vec![("a", true), ("b", true), ("g", false)]
    };
    let mut nvinfo = info(0x2f, ia, ra);
    nvinfo.extend(info(0x2f, ib, rb));
    elf(
        &[
            (".nv.info", 0x7000_0000, nvinfo),
            (".nv.info.a", 0x7000_0000, vec![1, 2, 3, 4]),
            (".nv.info.b", 0x7000_0000, vec![5, 6, 7, 8]),
            (".rela.text.a", RELA, rela(16, 3)),
            (".nv.global.init", PROGBITS, glob.to_vec()),
            (".text.a", PROGBITS, ta.to_vec()),
            (".text.b", PROGBITS, tb.to_vec()),
            (
                ".debug_frame",
                PROGBITS,
                vec![ta.len() as u8, tb.len() as u8],
            ),
        ],
        &syms,
    )
}

fn hashes(m: &[u8]) -> (String, String) {
    (
        entry_code_hash(m, "a").unwrap(),
        entry_code_hash(m, "b").unwrap(),
    )
}

#[test]
fn another_entrys_code_or_registers_do_not_count() {
    let base = hashes(&module(b"AAAA", b"BBBB", b"G", 40, 56, false));
    assert_ne!(base.0, base.1);
    // b's text, length (and so the debug frame) and register count change: a's hash does not.
    let b_changed = hashes(&module(b"AAAA", b"BBBBBB", b"G", 40, 64, false));
    assert_eq!(b_changed.0, base.0);
    assert_ne!(b_changed.1, base.1);
    // a's text changes: a's hash does, b's does not.
    let a_changed = hashes(&module(b"AAAZ", b"BBBB", b"G", 40, 56, false));
    assert_ne!(a_changed.0, base.0);
    assert_eq!(a_changed.1, base.1);
    // a's register count alone changes: a's hash does.
    assert_ne!(
        hashes(&module(b"AAAA", b"BBBB", b"G", 48, 56, false)).0,
        base.0
    );
}

#[test]
fn module_wide_sections_count_for_every_entry() {
    let base = hashes(&module(b"AAAA", b"BBBB", b"G", 40, 56, false));
    let glob = hashes(&module(b"AAAA", b"BBBB", b"H", 40, 56, false));
    assert_ne!(glob.0, base.0);
    assert_ne!(glob.1, base.1);
}

#[test]
fn symbol_indices_count_by_name() {
    // The symbols trade places: the records and relocations name other indices, the same
    // symbols. (a's relocation names index 3, g, in both.)
    let base = hashes(&module(b"AAAA", b"BBBB", b"G", 40, 56, false));
    assert_eq!(hashes(&module(b"AAAA", b"BBBB", b"G", 40, 56, true)), base);
}

#[test]
fn entry_points_are_the_kernels() {
    let m = module(b"AAAA", b"BBBB", b"G", 40, 56, false);
    assert_eq!(entry_points(&m).unwrap(), ["a", "b"]);
}

#[test]
fn what_cannot_be_read_is_an_error() {
    let m = module(b"AAAA", b"BBBB", b"G", 40, 56, false);
    assert!(entry_code_hash(&m, "g")
        .unwrap_err()
        .contains("no entry point g"));
    assert!(entry_code_hash(b"not an elf", "a")
        .unwrap_err()
        .contains("not an ELF"));
    assert!(entry_code_hash(&m[..80], "a").is_err());
    let mut wide = m.clone();
    wide[4] = 1; // 32-bit
    assert!(entry_code_hash(&wide, "a").unwrap_err().contains("64-bit"));
}

/// Kernel a (and with `extra` a kernel c placed before it, in symbols and sections), a global
/// g and a's constant bank symbol. a's own `.nv.info.a` names its bank by symbol index
/// (EIATTR_PARAM_CBANK), which c's symbol shifts; the module-wide `.nv.info` grows by c's
/// record.
fn module_with(extra: bool) -> Vec<u8> {
    let mut syms: Vec<Sym> = Vec::new();
    if extra {
        syms.push(("c", true));
    }
    syms.extend([("a", true), ("g", false), (".nv.constant0.a", false)]);
    let idx = |n: &str| syms.iter().position(|s| s.0 == n).unwrap() as u32 + 1;
    let mut nvinfo = info(0x2f, idx("a"), 40);
    if extra {
        nvinfo.extend(info(0x2f, idx("c"), 64));
    }
    nvinfo.extend(info(0x12, idx("g"), 7));
    let mut own_a = info(0x0a, idx(".nv.constant0.a"), 0x001c_0210);
    own_a.extend([3, 0x1b, 0xff, 0]); // a plain record after it
    let mut sections: Vec<(&str, u32, Vec<u8>)> = vec![(".nv.info", 0x7000_0000, nvinfo)];
    if extra {
        sections.push((".nv.info.c", 0x7000_0000, info(0x0a, idx("g"), 1)));
        sections.push((".text.c", PROGBITS, b"CCCC".to_vec()));
    }
    sections.extend([
        (".nv.info.a", 0x7000_0000, own_a),
        (".nv.global.init", PROGBITS, b"G".to_vec()),
        (".text.a", PROGBITS, b"AAAA".to_vec()),
    ]);
    elf(&sections, &syms)
}

#[test]
fn adding_an_entry_point_leaves_the_others_hashes() {
    let (one, two) = (module_with(false), module_with(true));
    assert_eq!(entry_code_hash(&one, "a"), entry_code_hash(&two, "a"));
    // The legacy hash saw c's arrival in a's constant-bank record and the table's size.
    assert_ne!(
        entry_code_hash_legacy(&one, "a"),
        entry_code_hash_legacy(&two, "a")
    );
    // a's own record still counts: another bank offset is other code.
    let mut other = module_with(true);
    let at = other
        .windows(4)
        .position(|w| w == 0x001c_0210u32.to_le_bytes())
        .unwrap();
    other[at] = 0x14;
    assert_ne!(entry_code_hash(&two, "a"), entry_code_hash(&other, "a"));
}

#[test]
fn the_legacy_hash_is_the_one_stored_before_session_39() {
    // Pinned: the value the old code gave this module (baselines store such hashes until
    // `kernelgate rehash --code-hashes` maps them).
    let m = module(b"AAAA", b"BBBB", b"G", 40, 56, false);
    let (a, b) = (
        entry_code_hash_legacy(&m, "a").unwrap(),
        entry_code_hash_legacy(&m, "b").unwrap(),
    );
    assert_eq!((a.len(), b.len()), (24, 24));
    assert_ne!(a, b);
    assert_eq!(a, LEGACY_A);
}

/// [`entry_code_hash_legacy`] of `module(b"AAAA", b"BBBB", b"G", 40, 56, false)`'s `a`, as the
/// hash was computed before session 39 (checked against that code when this test was written).
const LEGACY_A: &str = "031f8211852c00de33dc10eb";

/// With NVRTC and the CUDA headers: a real cubin of two kernels in which only `b` changed.
/// `cargo test --test cubin -- --ignored` where NVRTC is installed (LD_LIBRARY_PATH, CUDA_HOME).
#[test]
#[ignore = "needs NVRTC 13.0 and the CUDA headers"]
fn with_nvrtc_only_the_changed_kernel_changes() {
    let t = tempfile::tempdir().unwrap();
    let src = |c: &str| {
        format!(
            "extern \"C\" __global__ void a(float* p) {{ p[threadIdx.x] = __expf(p[threadIdx.x]); }}\n\
             extern \"C\" __global__ void b(float* p) {{ p[threadIdx.x] *= {c}; }}\n"
        )
    };
    let cubin = |c: &str| {
        std::fs::write(t.path().join("k.cu"), src(c)).unwrap();
        kernelgate::gpu::compile_offline_cubin(t.path(), "k.cu", "sm_90a", &[])
            .unwrap()
            .0
    };
    let (one, two) = (cubin("2.f"), cubin("3.f"));
    assert_ne!(one, two, "the cubins differ");
    assert_eq!(entry_points(&one).unwrap().len(), 2);
    assert_eq!(entry_code_hash(&one, "a"), entry_code_hash(&two, "a"));
    assert_ne!(entry_code_hash(&one, "b"), entry_code_hash(&two, "b"));
}

#[test]
fn rehash_names_the_entry_points_whose_code_changed() {
    use kernelgate::machine_code::changed_entries;
    let base = module(b"AAAA", b"BBBB", b"G", 40, 56, false);
    let b_only = module(b"AAAA", b"BBBC", b"G", 40, 56, true);
    assert_eq!(
        changed_entries(&base, &b_only),
        Some((vec!["b".to_string()], 2))
    );
    // A module-wide change touches every entry point.
    let glob = module(b"AAAA", b"BBBB", b"H", 40, 56, false);
    assert_eq!(
        changed_entries(&base, &glob),
        Some((vec!["a".to_string(), "b".to_string()], 2))
    );
    // An entry point of one side only counts as changed (here a's sections differ too).
    let one = elf(&[(".text.a", 1, b"AAAA".to_vec())], &[("a", true)]);
    let (names, total) = changed_entries(&one, &base).unwrap();
    assert!(names.contains(&"b".to_string()), "{names:?}");
    assert_eq!(total, 2);
    // Not cubins: no answer.
    assert_eq!(changed_entries(b"x", &base), None);
}

/// With NVRTC and the CUDA headers: a kernel added to a real file leaves the other kernels'
/// hashes (before session 39 it changed all of them).
#[test]
#[ignore = "needs NVRTC 13.0 and the CUDA headers"]
fn with_nvrtc_an_added_kernel_changes_no_other_hash() {
    let t = tempfile::tempdir().unwrap();
    let a =
        "extern \"C\" __global__ void a(float* p) { p[threadIdx.x] = __expf(p[threadIdx.x]); }\n";
    let b = "extern \"C\" __global__ void b(float* p, int n) { if (threadIdx.x < n) p[threadIdx.x] *= 2.f; }\n";
    let c = "extern \"C\" __global__ void c(float* p) { p[threadIdx.x] += 1.f; }\n";
    let cubin = |src: String| {
        std::fs::write(t.path().join("k.cu"), src).unwrap();
        kernelgate::gpu::compile_offline_cubin(t.path(), "k.cu", "sm_90a", &[])
            .unwrap()
            .0
    };
    let (two, three) = (cubin(format!("{a}{b}")), cubin(format!("{a}{c}{b}")));
    for e in ["a", "b"] {
        assert_eq!(entry_code_hash(&two, e), entry_code_hash(&three, e), "{e}");
        // what the legacy hash got wrong
        assert_ne!(
            entry_code_hash_legacy(&two, e),
            entry_code_hash_legacy(&three, e),
            "{e}"
        );
    }
}
