//! A module's source hash covers the local files it includes (not every `kernels/*.cuh`), and
//! `kernelgate rehash` moves stored hashes of the old form to the new one.

mod common;

use kernelgate::baseline::{rehash_entries, Store};
use kernelgate::gpu::{current_hashes, hash_migration, local_includes, source_hash};
use std::path::Path;

fn write(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

const OPTS: [&str; 2] = ["--gpu-architecture=sm_90a", "-std=c++17"];

fn opts() -> Vec<String> {
    OPTS.iter().map(|s| s.to_string()).collect()
}

/// a.cu includes b.cuh (which includes c.cuh, itself and f.cuh in angle brackets) and a system
/// header two ways; d.cuh is unused.
fn kernel_dir() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(
        d,
        "a.cu",
        "#include <cuda_bf16.h>\n  #  include \"b.cuh\"\n#include \"cuda_fp16.h\"\n__global__ void a() {}\n",
    );
    write(
        d,
        "b.cuh",
        "#include \"c.cuh\"\n#include \"b.cuh\"\n#include <f.cuh>\n",
    );
    write(d, "c.cuh", "// c\n");
    write(d, "f.cuh", "// f, included with angle brackets\n");
    write(d, "d.cuh", "// d\n");
    write(d, "e.cu", "__global__ void e() {}\n");
    dir
}

#[test]
fn includes_are_followed_through_local_files_only() {
    let dir = kernel_dir();
    let src = std::fs::read_to_string(dir.path().join("a.cu")).unwrap();
    let inc = local_includes(dir.path(), &src).unwrap();
    let names: Vec<&str> = inc.iter().map(|(n, _)| n.as_str()).collect();
    // Sorted, each once (b.cuh includes itself), no system header, no unused header.
    assert_eq!(names, ["b.cuh", "c.cuh", "f.cuh"]);
    assert!(local_includes(dir.path(), "__global__ void e() {}")
        .unwrap()
        .is_empty());
}

#[test]
fn the_hash_follows_what_a_module_includes() {
    let dir = kernel_dir();
    let d = dir.path();
    let src = std::fs::read_to_string(d.join("a.cu")).unwrap();
    let hash = || source_hash(&src, &local_includes(d, &src).unwrap(), &opts(), "13.0");
    let before = hash();
    assert_eq!(before.len(), 24);
    assert_eq!(hash(), before, "deterministic");
    // An unused header changes nothing; one reached through another header does.
    write(d, "d.cuh", "// d, edited\n");
    assert_eq!(hash(), before);
    write(d, "c.cuh", "// c, edited\n");
    assert_ne!(hash(), before);
    // Options and the NVRTC version are part of it.
    let inc = local_includes(d, &src).unwrap();
    assert_ne!(
        source_hash(&src, &inc, &opts(), "13.0"),
        source_hash(&src, &inc, &opts(), "13.1")
    );
    assert_ne!(
        source_hash(&src, &inc, &opts(), "13.0"),
        source_hash(&src, &inc, &opts()[..1], "13.0")
    );
}

#[test]
fn current_hashes_are_each_kernel_files_hash_now() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    write(d, "a.cu", "#include \"h.cuh\"\n__global__ void a() {}\n");
    write(d, "b.cu", "__global__ void b() {}\n");
    write(d, "h.cuh", "// h\n");
    let expected = |file: &str| {
        let src = std::fs::read_to_string(d.join(file)).unwrap();
        source_hash(&src, &local_includes(d, &src).unwrap(), &opts(), "13.0")
    };
    let before = current_hashes(d, "sm_90a", "13.0").unwrap();
    let (a, b) = (expected("a.cu"), expected("b.cu"));
    assert_eq!(before.len(), 2);
    assert_eq!(before[&a], "a.cu");
    assert_eq!(before[&b], "b.cu");
    // Editing the header a.cu includes moves a.cu's hash only.
    write(d, "h.cuh", "// h, edited\n");
    let after = current_hashes(d, "sm_90a", "13.0").unwrap();
    assert!(!after.contains_key(&a));
    assert_eq!(after[&expected("a.cu")], "a.cu");
    assert_eq!(after[&b], "b.cu");
    // The architecture and NVRTC version are part of it.
    assert!(!current_hashes(d, "sm_90a", "13.1")
        .unwrap()
        .contains_key(&b));
    assert!(!current_hashes(d, "sm_100a", "13.0")
        .unwrap()
        .contains_key(&b));
}

#[test]
fn rehash_moves_old_hashes_of_current_files_and_leaves_the_rest() {
    let dir = kernel_dir();
    let d = dir.path();
    let map = hash_migration(d, "sm_90a", "13.0").unwrap();
    assert_eq!(map.len(), 2, "a.cu and e.cu");
    // The old form hashed every header of the directory.
    let src_a = std::fs::read_to_string(d.join("a.cu")).unwrap();
    let all: Vec<(String, String)> = ["b.cuh", "c.cuh", "d.cuh", "f.cuh"]
        .iter()
        .map(|n| (n.to_string(), std::fs::read_to_string(d.join(n)).unwrap()))
        .collect();
    let old_a = source_hash(&src_a, &all, &opts(), "13.0");
    let new_a = source_hash(&src_a, &local_includes(d, &src_a).unwrap(), &opts(), "13.0");
    assert_eq!(map[&old_a], (new_a.clone(), "a.cu".to_string()));

    // A store with an entry of a.cu's old hash, one of an unknown hash and one already new.
    let base = tempfile::tempdir().unwrap();
    let store = Store::new(base.path());
    let gpu = "NVIDIA H100 80GB HBM3";
    let mut e = common::entry_of_code(&old_a);
    store
        .update(gpu, "gemm", "gemm::cuda::old", e.clone())
        .unwrap();
    e.env.source_hash = "ffffffffffffffffffffffff".into();
    store
        .update(gpu, "gemm", "gemm::cuda::other", e.clone())
        .unwrap();
    e.env.source_hash = new_a.clone();
    store.update(gpu, "gemm", "gemm::cuda::new", e).unwrap();
    let sum = rehash_entries(base.path(), &map).unwrap();
    assert_eq!((sum.rewritten, sum.left, sum.files), (1, 2, 1));
    let hash_of = |case: &str| common::stored_hash(&store, gpu, "gemm", case);
    assert_eq!(hash_of("gemm::cuda::old"), new_a);
    assert_eq!(hash_of("gemm::cuda::other"), "ffffffffffffffffffffffff");
    assert_eq!(hash_of("gemm::cuda::new"), new_a);
    // A second pass finds nothing to do.
    let again = rehash_entries(base.path(), &map).unwrap();
    assert_eq!((again.rewritten, again.files), (0, 0));
}
