//! `kernelgate compile --repeat N`: per entry point, the machine codes several compiles of one
//! file gave ([`kernelgate::compile_variation`]), on hand-made cubins.

mod common;

use common::cubin_of;
use kernelgate::compile_variation::{entry_codes, render, varying};

#[test]
fn each_entry_point_counts_its_machine_codes() {
    let cubins = vec![
        cubin_of(&[("a", b"A1"), ("b", b"B")]),
        cubin_of(&[("a", b"A2"), ("b", b"B")]),
        cubin_of(&[("a", b"A1"), ("b", b"B")]),
    ];
    let codes = entry_codes(&cubins).unwrap();
    assert_eq!(codes.len(), 2);
    let mut a: Vec<usize> = codes["a"].values().copied().collect();
    a.sort_unstable();
    assert_eq!(a, [1, 2]);
    assert_eq!(codes["b"].values().copied().collect::<Vec<_>>(), [3]);
    assert_eq!(varying(&codes), ["a"]);
    let s = render(3, &[("k.cu".into(), codes)]);
    for want in [
        "## NVRTC's variation: 3 compiles of each file in this process",
        "| k.cu | a | 2 | 2, 1 |",
        "1 entry points varied.",
    ] {
        assert!(s.contains(want), "{want}: {s}");
    }
    assert!(!s.contains("| k.cu | b |"), "{s}");
}

#[test]
fn steady_files_are_named_and_a_missing_entry_point_counts_as_absent() {
    let steady = entry_codes(&[cubin_of(&[("a", b"A")]), cubin_of(&[("a", b"A")])]).unwrap();
    assert!(varying(&steady).is_empty());
    let s = render(2, &[("s.cu".into(), steady)]);
    assert!(
        s.contains("Every entry point compiled to one machine code."),
        "{s}"
    );
    assert!(
        s.contains("One machine code for every entry point: s.cu (1 entry points)."),
        "{s}"
    );
    let gone = entry_codes(&[
        cubin_of(&[("a", b"A"), ("b", b"B")]),
        cubin_of(&[("a", b"A")]),
    ])
    .unwrap();
    assert_eq!(gone["b"].get("absent"), Some(&1));
    assert_eq!(varying(&gone), ["b"]);
}

#[test]
fn a_cubin_that_cannot_be_read_names_its_compile() {
    let e = entry_codes(&[cubin_of(&[("a", b"A")]), b"not an elf".to_vec()]).unwrap_err();
    assert!(e.starts_with("compile 2: "), "{e}");
}
