//! `kernelgate rehash --since REV`: kernel files whose text changed but whose cubin did not keep
//! their baselines; files whose machine code changed restart ([`kernelgate::machine_code`]).

mod common;

use common::cubin_of;
use kernelgate::baseline::{recode_entries, rehash_entries, Store};
use kernelgate::machine_code::{compare_dirs, migration, render, FileVerdict, Verdict, COMPILES};
use std::path::{Path, PathBuf};

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A stand-in compiler: the "cubin" is the source without `//` comment lines and blank lines,
/// so a comment edit compiles to the same bytes and a code edit does not.
fn fake_cubin(dir: &Path, file: &str) -> kernelgate::Result<Vec<u8>> {
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    Ok(text
        .lines()
        .filter(|l| !l.trim_start().starts_with("//") && !l.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
        .into_bytes())
}

/// old/ and new/: same.cu unchanged; comment.cu and inc.cu (through its header) changed only in
/// comments; code.cu changed in code; gone.cu only in old, added.cu only in new.
fn trees() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let (old, new) = (t.path().join("old"), t.path().join("new"));
    for d in [&old, &new] {
        std::fs::create_dir_all(d).unwrap();
        write(d, "same.cu", "__global__ void same() {}\n");
        write(
            d,
            "inc.cu",
            "#include \"h.cuh\"\n__global__ void inc() { H; }\n",
        );
    }
    write(&old, "comment.cu", "__global__ void c() {}\n");
    write(
        &new,
        "comment.cu",
        "// why c is empty\n__global__ void c() {}\n",
    );
    write(&old, "h.cuh", "#define H 1\n");
    write(&new, "h.cuh", "// H is one\n#define H 1\n");
    write(&old, "code.cu", "__global__ void k(int* p) { *p = 1; }\n");
    write(&new, "code.cu", "__global__ void k(int* p) { *p = 2; }\n");
    write(&old, "gone.cu", "__global__ void g() {}\n");
    write(&new, "added.cu", "__global__ void a() {}\n");
    (t, old, new)
}

#[test]
fn only_files_whose_text_changed_are_compiled_and_judged_by_their_cubins() {
    let (_t, old, new) = trees();
    let mut compiled = Vec::new();
    let mut compile = |d: &Path, f: &str| {
        compiled.push((
            d.file_name().unwrap().to_string_lossy().to_string(),
            f.to_string(),
        ));
        fake_cubin(d, f)
    };
    let v = compare_dirs(&old, &new, "sm_90a", "13.0", &mut compile).unwrap();
    let got: Vec<(&str, Verdict)> = v.iter().map(|f| (f.file.as_str(), f.verdict)).collect();
    assert_eq!(
        got,
        [
            ("added.cu", Verdict::Added),
            ("code.cu", Verdict::CodeDiffers),
            ("comment.cu", Verdict::SameCode),
            ("gone.cu", Verdict::Removed),
            ("inc.cu", Verdict::SameCode),
            ("same.cu", Verdict::Unchanged),
        ]
    );
    // Old tree first, and nothing compiled for unchanged, added or removed files.
    let want: Vec<(String, String)> = ["code.cu", "comment.cu", "inc.cu"]
        .iter()
        .flat_map(|f| {
            [
                ("old".to_string(), f.to_string()),
                ("new".to_string(), f.to_string()),
            ]
        })
        .collect();
    assert_eq!(compiled, want);
    // The hashes are the harness's own (the header's edit moved inc.cu's).
    let inc = v.iter().find(|f| f.file == "inc.cu").unwrap();
    assert_ne!(inc.old_hash, inc.new_hash);
    let same = v.iter().find(|f| f.file == "same.cu").unwrap();
    assert_eq!(same.old_hash, same.new_hash);
    let src = std::fs::read_to_string(new.join("same.cu")).unwrap();
    assert_eq!(
        same.new_hash.as_deref(),
        Some(
            kernelgate::gpu::current_hash(&new, &src, "sm_90a", "13.0")
                .unwrap()
                .as_str()
        )
    );
}

#[test]
fn migration_moves_only_same_code_files() {
    let (_t, old, new) = trees();
    let v = compare_dirs(&old, &new, "sm_90a", "13.0", &mut fake_cubin).unwrap();
    let map = migration(&v);
    let files: Vec<&str> = map.values().map(|(_, f)| f.as_str()).collect();
    assert_eq!(files.len(), 2);
    assert!(files.contains(&"comment.cu") && files.contains(&"inc.cu"));
    for f in v.iter().filter(|f| f.verdict == Verdict::SameCode) {
        let old_hash = f.old_hash.clone().unwrap();
        assert_eq!(
            map[&old_hash],
            (f.new_hash.clone().unwrap(), f.file.clone())
        );
    }
}

#[test]
fn a_compile_error_is_returned_not_judged() {
    let (_t, old, new) = trees();
    let mut compile = |_: &Path, f: &str| -> kernelgate::Result<Vec<u8>> {
        Err(kernelgate::Error::Compile {
            file: f.to_string(),
            options: "--gpu-architecture=sm_90a".into(),
            log: "error: expected a ;".into(),
        })
    };
    let e = compare_dirs(&old, &new, "sm_90a", "13.0", &mut compile).unwrap_err();
    assert!(e.to_string().contains("code.cu"), "{e}");
}

#[test]
fn the_table_names_each_changed_file_and_its_verdict() {
    let (_t, old, new) = trees();
    let v = compare_dirs(&old, &new, "sm_90a", "13.0", &mut fake_cubin).unwrap();
    // Hashes depend on the text only: stable across machines.
    insta::assert_snapshot!(render(&v, "HEAD~1", "sm_90a", "13.0"));
    let unchanged = compare_dirs(&old, &old, "sm_90a", "13.0", &mut fake_cubin).unwrap();
    assert_eq!(
        render(&unchanged, "HEAD", "sm_90a", "13.0"),
        "# Kernel sources since HEAD: machine code compared (NVRTC 13.0, sm_90a)\n\nNo kernel file changed (5 compared).\n"
    );
}

#[test]
fn rehashing_keeps_the_rounds_of_same_code_entries_and_leaves_the_others() {
    let (_t, old, new) = trees();
    let v = compare_dirs(&old, &new, "sm_90a", "13.0", &mut fake_cubin).unwrap();
    let hash = |file: &str| {
        let f = v.iter().find(|f| f.file == file).unwrap();
        (f.old_hash.clone().unwrap(), f.new_hash.clone().unwrap())
    };
    let (comment_old, comment_new) = hash("comment.cu");
    let (code_old, _) = hash("code.cu");
    let base = tempfile::tempdir().unwrap();
    let store = Store::new(base.path());
    let gpu = "NVIDIA H100 80GB HBM3";
    store
        .update(
            gpu,
            "gemm",
            "gemm::cuda::comment",
            common::entry_of_code(&comment_old),
        )
        .unwrap();
    store
        .update(
            gpu,
            "gemm",
            "gemm::cuda::code",
            common::entry_of_code(&code_old),
        )
        .unwrap();
    let sum = rehash_entries(base.path(), &migration(&v)).unwrap();
    assert_eq!((sum.rewritten, sum.left), (1, 1));
    let got = |case: &str| store.entry(gpu, "gemm", case).unwrap().unwrap();
    assert_eq!(got("gemm::cuda::comment").env.source_hash, comment_new);
    assert_eq!(got("gemm::cuda::comment").rounds.len(), 1, "rounds kept");
    assert_eq!(got("gemm::cuda::code").env.source_hash, code_old);
}

#[test]
fn recoding_rewrites_the_mapped_code_hashes_only() {
    let base = tempfile::tempdir().unwrap();
    let store = Store::new(base.path());
    let gpu = "NVIDIA H100 80GB HBM3";
    for (case, code) in [("gemm::cuda::a", "legacy1"), ("gemm::cuda::b", "older")] {
        let mut e = common::entry_of_code("src1");
        e.env.code_hash = code.into();
        store.update(gpu, "gemm", case, e).unwrap();
    }
    let map = std::collections::BTreeMap::from([("legacy1".to_string(), "now1".to_string())]);
    let sum = recode_entries(base.path(), &map).unwrap();
    assert_eq!((sum.rewritten, sum.left, sum.files), (1, 1, 1));
    let got = |case: &str| store.entry(gpu, "gemm", case).unwrap().unwrap();
    assert_eq!(got("gemm::cuda::a").env.code_hash, "now1");
    assert_eq!(got("gemm::cuda::a").rounds.len(), 1, "rounds kept");
    assert_eq!(got("gemm::cuda::a").env.source_hash, "src1");
    assert_eq!(got("gemm::cuda::b").env.code_hash, "older");
    // Again: nothing left to map.
    let again = recode_entries(base.path(), &map).unwrap();
    assert_eq!((again.rewritten, again.files), (0, 0));
}

#[test]
fn combined_code_hashes_do_not_depend_on_order() {
    use kernelgate::machine_code::combine_code_hashes;
    let t = |f: &str, e: &str, h: &str| (f.to_string(), e.to_string(), h.to_string());
    let one = combine_code_hashes(&[t("k.cu", "a", "1"), t("k.cu", "b", "2")]);
    assert_eq!(
        one,
        combine_code_hashes(&[t("k.cu", "b", "2"), t("k.cu", "a", "1")])
    );
    assert_ne!(
        one,
        combine_code_hashes(&[t("k.cu", "a", "1"), t("k.cu", "b", "3")])
    );
    assert_eq!(one.len(), 24);
}

/// With NVRTC: the map of legacy code hashes covers every set of up to four entry points of a
/// file and every pair across files, each to the current form.
#[test]
#[ignore = "needs NVRTC 13.0 and the CUDA headers"]
fn with_nvrtc_legacy_code_hashes_map_to_the_current_ones() {
    use kernelgate::cubin::{entry_code_hash, entry_code_hash_legacy};
    use kernelgate::machine_code::{combine_code_hashes, legacy_code_hash_map};
    let t = tempfile::tempdir().unwrap();
    let k = |n: &str, op: &str| {
        format!("extern \"C\" __global__ void {n}(float* p) {{ p[threadIdx.x] {op}; }}\n")
    };
    write(
        t.path(),
        "one.cu",
        &format!("{}{}", k("a", "*= 2.f"), k("b", "+= 1.f")),
    );
    write(t.path(), "two.cu", &k("c", "-= 3.f"));
    let mut cubins = std::collections::BTreeMap::new();
    let mut compile = |d: &Path, f: &str| {
        let c = kernelgate::gpu::compile_offline_cubin(d, f, "sm_90a", &[])?.0;
        cubins.insert(f.to_string(), c.clone());
        Ok(c)
    };
    let found = legacy_code_hash_map(t.path(), &mut compile).unwrap();
    assert_eq!((found.files, found.entries), (2, 3));
    // one.cu: {a}, {b}, {a, b}; two.cu: {c}; across: {a, c}, {b, c}
    assert_eq!(found.map.len(), 6);
    let row = |f: &str, e: &str, legacy: bool| {
        let c = &cubins[f];
        let h = if legacy {
            entry_code_hash_legacy(c, e)
        } else {
            entry_code_hash(c, e)
        };
        (f.to_string(), e.to_string(), h.unwrap())
    };
    for set in [
        vec![("one.cu", "a")],
        vec![("one.cu", "a"), ("one.cu", "b")],
        vec![("one.cu", "b"), ("two.cu", "c")],
    ] {
        let old: Vec<_> = set.iter().map(|(f, e)| row(f, e, true)).collect();
        let new: Vec<_> = set.iter().map(|(f, e)| row(f, e, false)).collect();
        assert_eq!(
            found.map.get(&combine_code_hashes(&old)),
            Some(&combine_code_hashes(&new)),
            "{set:?}"
        );
    }
}

fn kernelgate_cli(args: &[&str], root: &Path) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .args(args)
        .env("KERNELGATE_ROOT", root)
        .env("KERNELGATE_BASELINE_DIR", root.join("baselines"))
        .output()
        .unwrap()
}

#[test]
fn dry_run_needs_since() {
    let t = tempfile::tempdir().unwrap();
    let out = kernelgate_cli(&["rehash", "--dry-run"], t.path());
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--since"));
}

#[test]
fn without_nvrtc_rehash_since_names_nvrtc() {
    if kernelgate::gpu::nvrtc_version().is_ok() {
        eprintln!("NVRTC is present: `rehash --since` compiles for real (see the ignored test)");
        return;
    }
    let (t, old, _new) = trees();
    let out = kernelgate_cli(&["rehash", "--since", old.to_str().unwrap()], t.path());
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("NVRTC"));
}

/// With NVRTC and the CUDA headers: a comment edit compiles to the same cubin and moves the
/// entry's hash, a code edit does not. `cargo test --test machine_code -- --ignored` where NVRTC is
/// installed (LD_LIBRARY_PATH, CUDA_HOME).
#[test]
#[ignore = "needs NVRTC 13.0 and the CUDA headers"]
fn with_nvrtc_a_comment_edit_keeps_the_baseline_and_a_code_edit_does_not() {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().join("repo");
    let (old, kernels) = (t.path().join("old"), root.join("kernels"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&kernels).unwrap();
    let k = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.f; }\n";
    let j = "extern \"C\" __global__ void j(float* p) { p[threadIdx.x] += 1.f; }\n";
    write(&old, "a.cu", k);
    write(&old, "b.cu", j);
    write(&kernels, "a.cu", &format!("// doubles p\n{k}"));
    write(&kernels, "b.cu", &j.replace("1.f", "3.f"));
    let hash = |dir: &Path, f: &str| {
        let s = std::fs::read_to_string(dir.join(f)).unwrap();
        kernelgate::gpu::current_hash(dir, &s, "sm_90a", "13.0").unwrap()
    };
    let store = Store::new(root.join("baselines"));
    let gpu = "NVIDIA H100 80GB HBM3";
    store
        .update(
            gpu,
            "gemm",
            "gemm::cuda::a",
            common::entry_of_code(&hash(&old, "a.cu")),
        )
        .unwrap();
    store
        .update(
            gpu,
            "gemm",
            "gemm::cuda::b",
            common::entry_of_code(&hash(&old, "b.cu")),
        )
        .unwrap();
    let out = kernelgate_cli(&["rehash", "--since", old.to_str().unwrap()], &root);
    let o = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{o}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        o.contains("| a.cu |") && o.contains("same machine code"),
        "{o}"
    );
    assert!(
        o.contains("| b.cu |") && o.contains("machine code differs"),
        "{o}"
    );
    assert!(o.contains("1 entries rehashed"), "{o}");
    let got = |case: &str| common::stored_hash(&store, gpu, "gemm", case);
    assert_eq!(got("gemm::cuda::a"), hash(&kernels, "a.cu"));
    assert_eq!(got("gemm::cuda::b"), hash(&old, "b.cu"));
}

/// With NVRTC: a file that only gains an entry point keeps its old entry points' machine code,
/// so its entries' hash moves (`EntriesAdded`); one whose existing entry point changed as well
/// does not.
#[test]
#[ignore = "needs NVRTC 13.0 and the CUDA headers"]
fn with_nvrtc_an_added_entry_point_keeps_the_others_baselines() {
    let t = tempfile::tempdir().unwrap();
    let (old, new) = (t.path().join("old"), t.path().join("new"));
    std::fs::create_dir_all(&old).unwrap();
    std::fs::create_dir_all(&new).unwrap();
    let k = "extern \"C\" __global__ void k(float* p) { p[threadIdx.x] *= 2.f; }\n";
    let added = "extern \"C\" __global__ void k2(float* p) { p[threadIdx.x] *= 3.f; }\n";
    write(&old, "a.cu", k);
    write(&new, "a.cu", &format!("{k}{added}"));
    write(&old, "b.cu", k);
    write(&new, "b.cu", &format!("{}{added}", k.replace("2.f", "4.f")));
    let mut compile = |d: &Path, f: &str| -> kernelgate::Result<Vec<u8>> {
        Ok(kernelgate::gpu::compile_offline_cubin(d, f, "sm_90a", &[])?.0)
    };
    let v = compare_dirs(&old, &new, "sm_90a", "13.0", &mut compile).unwrap();
    let got: Vec<(&str, Verdict)> = v.iter().map(|f| (f.file.as_str(), f.verdict)).collect();
    assert_eq!(
        got,
        [
            ("a.cu", Verdict::EntriesAdded),
            ("b.cu", Verdict::CodeDiffers)
        ]
    );
    assert_eq!(v[0].changed_entries, Some((vec!["k2".to_string()], 2)));
    let map = migration(&v);
    assert_eq!(map.len(), 1);
    assert_eq!(
        map[v[0].old_hash.as_ref().unwrap()],
        (v[0].new_hash.clone().unwrap(), "a.cu".to_string())
    );
    let table = render(&v, "old", "sm_90a", "13.0");
    for want in [
        "| a.cu |",
        "entry points added, the others' machine code unchanged",
        "a.cu: 1 of 2 entry points are new (the others' machine code is unchanged): k2",
        "0 same machine code, 1 with entry points added, 1 machine code differs",
    ] {
        assert!(table.contains(want), "{want}: {table}");
    }
}

/// old/k.cu and new/k.cu, their texts different (a comment).
fn one_file() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let (old, new) = (t.path().join("old"), t.path().join("new"));
    for d in [&old, &new] {
        std::fs::create_dir_all(d).unwrap();
    }
    write(&old, "k.cu", "__global__ void a() {}\n");
    write(&new, "k.cu", "// a comment\n__global__ void a() {}\n");
    (t, old, new)
}

/// A stand-in NVRTC whose output varies: the n-th compile of old/ returns `olds[n]`, of new/
/// `news[n]` (the last one again once they run out); counts the compiles of each side.
struct Varying {
    olds: Vec<Vec<u8>>,
    news: Vec<Vec<u8>>,
    calls: (usize, usize),
}

impl Varying {
    fn compile(&mut self, d: &Path) -> kernelgate::Result<Vec<u8>> {
        let old = d.file_name().unwrap() == "old";
        let (list, n) = if old {
            (&self.olds, &mut self.calls.0)
        } else {
            (&self.news, &mut self.calls.1)
        };
        let c = list[(*n).min(list.len() - 1)].clone();
        *n += 1;
        Ok(c)
    }
}

/// [`compare_dirs`] of [`one_file`] under a [`Varying`] compiler with these outputs: the
/// verdicts and how many times each side was compiled.
fn judge(olds: Vec<Vec<u8>>, news: Vec<Vec<u8>>) -> (Vec<FileVerdict>, (usize, usize)) {
    let (_t, old, new) = one_file();
    let mut nv = Varying {
        olds,
        news,
        calls: (0, 0),
    };
    let v = compare_dirs(&old, &new, "sm_90a", "13.0", &mut |d, _| nv.compile(d)).unwrap();
    (v, nv.calls)
}

/// A comment edit of a file whose compiles vary: the first two cubins differ in entry point a,
/// a second compile of the old source gives the new one's code. Same machine code, a listed as
/// NVRTC's variation; the entries' hash moves.
#[test]
fn nvrtc_variation_is_not_called_a_code_change() {
    let (v, calls) = judge(
        vec![
            cubin_of(&[("a", b"A1"), ("b", b"B")]),
            cubin_of(&[("a", b"A2"), ("b", b"B")]),
        ],
        vec![cubin_of(&[("a", b"A2"), ("b", b"B")])],
    );
    assert_eq!(v[0].verdict, Verdict::SameCode);
    assert_eq!(v[0].varied, ["a"]);
    assert_eq!(v[0].compiles, 2);
    assert_eq!(v[0].changed_entries, Some((vec![], 2)));
    assert_eq!(calls, (2, 2));
    assert_eq!(migration(&v).len(), 1);
    let table = render(&v, "old", "sm_90a", "13.0");
    for want in [
        "same machine code: entries keep their rounds",
        "k.cu: 1 entry points took other machine code in one compile and met in another (2 compiles of each side; NVRTC's own variation, not the edit's): a",
        "1 same machine code, 0 with entry points added, 0 machine code differs",
    ] {
        assert!(table.contains(want), "{want}: {table}");
    }
    assert!(!table.contains("entry points differ"), "{table}");
}

/// A real change stays one: the new code of a never meets the old in COMPILES compiles of each
/// side, and b, which did not change, is not compiled for.
#[test]
fn a_code_change_stays_one_after_every_compile() {
    let (v, calls) = judge(
        vec![cubin_of(&[("a", b"A"), ("b", b"B")])],
        vec![cubin_of(&[("a", b"Z"), ("b", b"B")])],
    );
    assert_eq!(v[0].verdict, Verdict::CodeDiffers);
    assert_eq!(v[0].changed_entries, Some((vec!["a".to_string()], 2)));
    assert!(v[0].varied.is_empty());
    assert_eq!(v[0].compiles, COMPILES);
    assert_eq!(calls, (COMPILES, COMPILES));
    assert!(migration(&v).is_empty());
}

/// Both at once: a varies (and meets), b really changed. The file's code differs, in b alone.
#[test]
fn a_varying_entry_is_told_apart_from_a_changed_one() {
    let (v, calls) = judge(
        vec![
            cubin_of(&[("a", b"A1"), ("b", b"B")]),
            cubin_of(&[("a", b"A2"), ("b", b"B")]),
        ],
        vec![cubin_of(&[("a", b"A2"), ("b", b"C")])],
    );
    assert_eq!(v[0].verdict, Verdict::CodeDiffers);
    assert_eq!(v[0].changed_entries, Some((vec!["b".to_string()], 2)));
    assert_eq!(v[0].varied, ["a"]);
    // b's change never meets: every compile is spent
    assert_eq!(calls, (COMPILES, COMPILES));
    let table = render(&v, "old", "sm_90a", "13.0");
    assert!(
        table.contains("k.cu: 1 of 2 entry points differ: b"),
        "{table}"
    );
}

/// Beside an entry point that varies, the file only gains an entry point once the variation
/// meets; an added entry point alone needs no second compile.
#[test]
fn an_added_entry_beside_a_varying_one_is_an_addition() {
    let (v, calls) = judge(
        vec![cubin_of(&[("a", b"A1")]), cubin_of(&[("a", b"A2")])],
        vec![cubin_of(&[("a", b"A2"), ("c", b"C")])],
    );
    assert_eq!(v[0].verdict, Verdict::EntriesAdded);
    assert_eq!(v[0].changed_entries, Some((vec!["c".to_string()], 2)));
    assert_eq!(v[0].varied, ["a"]);
    assert_eq!(calls, (2, 2));
    let (v, calls) = judge(
        vec![cubin_of(&[("a", b"A")])],
        vec![cubin_of(&[("a", b"A"), ("c", b"C")])],
    );
    assert_eq!(v[0].verdict, Verdict::EntriesAdded);
    assert_eq!((v[0].compiles, calls), (1, (1, 1)));
}

/// Identical first cubins: one compile each, nothing varied.
#[test]
fn identical_cubins_are_compiled_once() {
    let c = cubin_of(&[("a", b"A")]);
    let (v, calls) = judge(vec![c.clone()], vec![c]);
    assert_eq!(v[0].verdict, Verdict::SameCode);
    assert_eq!((v[0].compiles, calls), (1, (1, 1)));
    assert!(v[0].varied.is_empty());
}
