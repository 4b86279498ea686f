//! Suites as data: every fixture loads, and every malformed suite is a clear error naming
//! the file and the group.

mod common;

use kernelgate::case::{CaseName, Dtype};
use kernelgate::config::Config;
use kernelgate::suite::Suite;
use kernelgate::Error;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn fixture(name: &str) -> Suite {
    Suite::load(&root().join("fixtures").join(format!("{name}.json")))
        .unwrap_or_else(|e| panic!("{e}"))
}

fn names(s: &Suite) -> Vec<String> {
    s.cases.iter().map(|c| c.name()).collect()
}

fn listing(s: &Suite) -> String {
    s.cases
        .iter()
        .map(|c| {
            format!(
                "{}  tolerance_pct={:?} flush_l2={}",
                c.name(),
                c.tolerance_pct,
                c.flush_l2
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn every_fixture_loads_sorted_and_unique() {
    let mut stems = BTreeSet::new();
    for entry in std::fs::read_dir(root().join("fixtures")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "json") {
            continue;
        }
        let s = Suite::load(&path).unwrap_or_else(|e| panic!("{e}"));
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        assert_eq!(s.name, stem);
        assert_eq!(s.path, path);
        assert!(!s.description.is_empty(), "{stem}: no description");
        assert!(!s.cases.is_empty(), "{stem}: no cases");
        let n = names(&s);
        let mut sorted = n.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(n, sorted, "{stem}: case names not sorted and unique");
        for c in &s.cases {
            // Every name parses back to its case.
            let p = CaseName::parse(&c.name()).unwrap();
            assert_eq!(
                (p.kernel.as_str(), p.backend.as_str(), p.dtype, &p.shape),
                (c.kernel.as_str(), c.backend.as_str(), c.dtype, &c.shape)
            );
            let fam = kernelgate::family::by_name(&c.kernel).unwrap();
            assert!(
                fam.backends().contains(&c.backend.as_str())
                    || kernelgate::backend::worker::is_external(&c.backend, &s.workers),
                "{}: backend neither native nor external",
                c.name()
            );
            assert!(fam.validate(&c.shape).is_ok());
        }
        stems.insert(stem);
    }
    for required in ["calibration", "default", "gemm", "smoke"] {
        assert!(stems.contains(required), "fixtures/{required}.json missing");
    }
}

#[test]
fn default_suite_cases() {
    let s = fixture("default");
    insta::assert_snapshot!("default_suite_cases", listing(&s));
}

#[test]
fn smoke_suite_cases() {
    let s = fixture("smoke");
    insta::assert_snapshot!("smoke_suite_cases", listing(&s));
}

#[test]
fn fixture_contents() {
    // smoke: one small case per family × backend.
    let smoke = fixture("smoke");
    assert_eq!(smoke.cases.len(), 8);
    for c in &smoke.cases {
        assert_eq!(c.tolerance_pct, None, "smoke sets no tolerance");
        assert_eq!(c.flush_l2, c.kernel != "spin");
    }
    // calibration: spins only, with L2 flushing off and the 5% tolerance.
    let cal = fixture("calibration");
    assert!(cal
        .cases
        .iter()
        .all(|c| c.kernel == "spin" && !c.flush_l2 && c.tolerance_pct == Some(5.0)));
    let us: BTreeSet<u64> = cal.cases.iter().map(|c| c.shape.get("us")).collect();
    assert_eq!(us, BTreeSet::from([10, 50, 200, 1000, 5000]));
    // default: the seed GEMM squares in bf16 on both backends, and the spins.
    let def = names(&fixture("default"));
    for sq in [1024, 2048, 4096, 8192] {
        for b in ["cublas", "cuda"] {
            let n = format!("gemm::{b}::m{sq}_n{sq}_k{sq}_bf16");
            assert!(def.contains(&n), "{n}");
        }
    }
    assert!(def.contains(&"spin::cuda::us100_fp32".to_string()));
    let gemm = fixture("gemm");
    assert_eq!(gemm.cases.len(), 23 * 2 * 2 + 8 * 2);
}

fn parse(text: &str) -> kernelgate::Result<Suite> {
    Suite::parse(Path::new("fixtures/bad.json"), text)
}

/// The (entry, message) of a suite error, after checking it names the file.
fn suite_err(text: &str) -> (String, String) {
    match parse(text) {
        Err(e @ Error::Suite { .. }) => {
            let shown = e.to_string();
            let Error::Suite {
                path,
                entry,
                message,
            } = e
            else {
                unreachable!()
            };
            assert_eq!(path, Path::new("fixtures/bad.json"));
            assert_eq!(
                shown,
                format!("suite fixtures/bad.json: {entry}: {message}")
            );
            (entry, message)
        }
        Err(e) => panic!("not a suite error: {e:?}"),
        Ok(s) => panic!("parsed: {:?}", names(&s)),
    }
}

const GEMM_OK: &str = r#"{ "kernel": "gemm", "backends": ["cublas"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;

/// A suite whose group 1 is `group` (group 0 is a valid gemm group).
fn with_group(group: &str) -> String {
    format!(r#"{{ "description": "t", "groups": [ {GEMM_OK}, {group} ] }}"#)
}

fn assert_err(text: &str, entry: &str, message: &str) {
    let (e, m) = suite_err(text);
    assert_eq!(e, entry, "entry; message was {m:?}");
    assert!(
        m.starts_with(message),
        "message {m:?} should start with {message:?}"
    );
}

const G1: &str = r#"group 1 (kernel "gemm")"#;

#[test]
fn error_unknown_field_top_level() {
    assert_err(
        r#"{ "description": "t", "groups": [], "tolerance": 5 }"#,
        "top level",
        "unknown field `tolerance`",
    );
    assert_err(
        r#"{ "groups": [] }"#,
        "top level",
        "missing field `description`",
    );
    assert_err("not json", "top level", "expected ident");
    assert_err(
        r#"{ "description": "t", "tolerance_pct": "5", "groups": [] }"#,
        "top level",
        "invalid type: string \"5\"",
    );
}

#[test]
fn error_unknown_field_in_group_names_the_group() {
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shape": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(&with_group(g), G1, "unknown field `shape`");
    let g = r#"{ "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(&with_group(g), "group 1", "missing field `kernel`");
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": -1, "n": 1, "k": 1}] }"#;
    assert_err(&with_group(g), G1, "invalid value: integer `-1`");
    let g = r#"{ "kernel": "gemm", "backends": "cuda", "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(
        &with_group(g),
        G1,
        "invalid type: string \"cuda\", expected a sequence",
    );
    assert_err(
        &with_group(r#""gemm""#),
        "group 1",
        "invalid type: string \"gemm\", expected struct GroupFile",
    );
}

#[test]
fn error_unknown_kernel() {
    let g =
        r#"{ "kernel": "nope", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 1}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "nope")"#,
        r#"unknown kernel "nope"; known: gemm, spin"#,
    );
}

#[test]
fn error_unknown_backend_and_backend_not_implementing_family() {
    let g = r#"{ "kernel": "gemm", "backends": ["cuda", "triton"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(
        &with_group(g),
        G1,
        r#"backend "triton" does not implement gemm; it has: cublas, cuda"#,
    );
    let g = r#"{ "kernel": "spin", "backends": ["cublas"], "dtypes": ["fp32"], "shapes": [{"us": 1}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "spin")"#,
        r#"backend "cublas" does not implement spin; it has: cuda"#,
    );
    let g = r#"{ "kernel": "gemm", "backends": ["CUDA"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(
        &with_group(g),
        G1,
        r#"backend "CUDA" does not implement gemm"#,
    );
}

#[test]
fn error_unknown_and_unsupported_dtype() {
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16", "fp64"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(
        &with_group(g),
        G1,
        r#"unknown dtype "fp64"; known: bf16, fp16, fp32"#,
    );
    let g =
        r#"{ "kernel": "spin", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"us": 1}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "spin")"#,
        "dtype bf16 is not supported by spin",
    );
}

#[test]
fn error_empty_backends_or_dtypes() {
    let g = r#"{ "kernel": "gemm", "backends": [], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(&with_group(g), G1, "backends and dtypes must not be empty");
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": [], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(&with_group(g), G1, "backends and dtypes must not be empty");
}

#[test]
fn error_missing_extra_and_zero_dimensions() {
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 2, "n": 2, "k": 2}, {"m": 1, "n": 2}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 1 {{"m": 1, "n": 2}}"#),
        r#"missing dimension "k" (needs m, n, k)"#,
    );
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 2, "k": 3, "batch": 4}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"batch": 4, "k": 3, "m": 1, "n": 2}}"#),
        r#"unknown dimension "batch" for gemm; its dimensions are m, n, k"#,
    );
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 0, "k": 3}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"k": 3, "m": 1, "n": 0}}"#),
        "dimension n is 0; every dimension must be at least 1",
    );
    let g = r#"{ "kernel": "spin", "backends": ["cuda"], "dtypes": ["fp32"], "shapes": [{"us": 20000000}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "spin") shape 0 {"us": 20000000}"#,
        "us=20000000: a calibration spin longer than 10 s is a mistake",
    );
}

#[test]
fn error_gemm_shape_beyond_32_bit() {
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 65536, "n": 65536, "k": 16}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"k": 16, "m": 65536, "n": 65536}}"#),
        "m·n, m·k or k·n exceeds 2^31 elements (m=65536, n=65536, k=16)",
    );
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 4294967296}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"k": 4294967296, "m": 1, "n": 1}}"#),
        "k=4294967296 exceeds the 32-bit index range of the kernels",
    );
}

#[test]
fn error_duplicate_cases() {
    // Within one group.
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 2, "n": 2, "k": 2}, {"k": 2, "n": 2, "m": 2}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 1 {{"k": 2, "m": 2, "n": 2}}"#),
        "duplicate case gemm::cuda::m2_n2_k2_bf16 (also in group 1)",
    );
    // Across groups: group 0 already has gemm::cublas::m1_n1_k1_bf16.
    let g = r#"{ "kernel": "gemm", "backends": ["cuda", "cublas"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"k": 1, "m": 1, "n": 1}}"#),
        "duplicate case gemm::cublas::m1_n1_k1_bf16 (also in group 0)",
    );
    // The same dtype twice.
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["fp16", "fp16"], "shapes": [{"m": 3, "n": 1, "k": 1}] }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"k": 1, "m": 3, "n": 1}}"#),
        "duplicate case gemm::cuda::m3_n1_k1_fp16 (also in group 1)",
    );
    // A shape listed and also produced by the grid.
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 4, "n": 4, "k": 4}], "grid": {"m": [2, 4], "n": [4], "k": [4]} }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 2 {{"k": 4, "m": 4, "n": 4}}"#),
        "duplicate case gemm::cuda::m4_n4_k4_bf16 (also in group 1)",
    );
}

#[test]
fn error_no_groups_and_no_shapes() {
    assert_err(
        r#"{ "description": "t", "groups": [] }"#,
        "top level",
        "no groups: a suite must define at least one case",
    );
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"] }"#;
    assert_err(&with_group(g), G1, "no shapes: give `shapes` or `grid`");
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [] }"#;
    assert_err(&with_group(g), G1, "no shapes: give `shapes` or `grid`");
}

#[test]
fn error_bad_tolerance() {
    for t in ["0", "-5", "1000", "1e9"] {
        let text =
            format!(r#"{{ "description": "t", "tolerance_pct": {t}, "groups": [ {GEMM_OK} ] }}"#);
        let (entry, msg) = suite_err(&text);
        assert_eq!(entry, "top level");
        assert!(
            msg.starts_with("tolerance_pct ") && msg.ends_with(" must be a positive percentage"),
            "{msg}"
        );
        let g = format!(
            r#"{{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{{"m": 1, "n": 1, "k": 1}}], "tolerance_pct": {t} }}"#
        );
        let (entry, msg) = suite_err(&with_group(&g));
        assert_eq!(entry, G1);
        assert!(msg.ends_with(" must be a positive percentage"), "{msg}");
    }
    let (_, msg) = suite_err(&format!(
        r#"{{ "description": "t", "tolerance_pct": -5, "groups": [ {GEMM_OK} ] }}"#
    ));
    assert_eq!(msg, "tolerance_pct -5 must be a positive percentage");
}

#[test]
fn error_empty_grid_dimension() {
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "grid": {"m": [1, 2], "n": [], "k": [4]} }"#;
    assert_err(
        &with_group(g),
        &format!("{G1} grid"),
        "dimension n has no values",
    );
    // A grid without a dimension is a missing dimension in every shape it makes.
    let g = r#"{ "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "grid": {"m": [1], "n": [2]} }"#;
    assert_err(
        &with_group(g),
        &format!(r#"{G1} shape 0 {{"m": 1, "n": 2}}"#),
        r#"missing dimension "k""#,
    );
}

#[test]
fn grid_expansion() {
    let text = r#"{ "description": "grid", "groups": [
        { "kernel": "gemm", "backends": ["cublas", "cuda"], "dtypes": ["fp16"],
          "grid": {"k": [64], "n": [8, 16], "m": [1, 2, 3]},
          "shapes": [{"m": 100, "n": 100, "k": 100}] } ] }"#;
    let s = Suite::parse(Path::new("x/grid.json"), text).unwrap();
    assert_eq!(s.name, "grid");
    assert_eq!(s.description, "grid");
    assert_eq!(s.cases.len(), 2 * (3 * 2 + 1));
    let got: BTreeSet<(String, u64, u64, u64)> = s
        .cases
        .iter()
        .map(|c| {
            (
                c.backend.clone(),
                c.shape.get("m"),
                c.shape.get("n"),
                c.shape.get("k"),
            )
        })
        .collect();
    let mut want = BTreeSet::new();
    for b in ["cublas", "cuda"] {
        for m in [1, 2, 3] {
            for n in [8, 16] {
                want.insert((b.to_string(), m, n, 64));
            }
        }
        want.insert((b.to_string(), 100, 100, 100));
    }
    assert_eq!(got, want);
    // Dimensions always in the family's order, whatever the grid's key order.
    assert!(s.cases.iter().all(|c| c
        .shape
        .dims()
        .iter()
        .map(|d| d.0.as_str())
        .collect::<Vec<_>>()
        == ["m", "n", "k"]));
    assert!(s
        .cases
        .iter()
        .all(|c| c.dtype == Dtype::Fp16 && c.kernel == "gemm"));
    assert_eq!(names(&s)[0], "gemm::cublas::m100_n100_k100_fp16");
}

#[test]
fn options_inherit() {
    let text = r#"{ "description": "t", "tolerance_pct": 5, "groups": [
        { "kernel": "gemm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 1, "n": 1, "k": 1}], "tolerance_pct": 7.5, "flush_l2": false, "note": "n" },
        { "kernel": "gemm", "backends": ["cuda"], "dtypes": ["fp16"], "shapes": [{"m": 1, "n": 1, "k": 1}], "flush_l2": true },
        { "kernel": "spin", "backends": ["cuda"], "dtypes": ["fp32"], "shapes": [{"us": 3}] } ] }"#;
    let s = Suite::parse(Path::new("t.json"), text).unwrap();
    let by = |n: &str| s.cases.iter().find(|c| c.name() == n).unwrap();
    let c = by("gemm::cuda::m1_n1_k1_bf16");
    assert_eq!((c.tolerance_pct, c.flush_l2), (Some(7.5), false));
    let c = by("gemm::cuda::m1_n1_k1_fp16");
    assert_eq!((c.tolerance_pct, c.flush_l2), (Some(5.0), true));
    let c = by("spin::cuda::us3_fp32");
    assert_eq!((c.tolerance_pct, c.flush_l2), (Some(5.0), true));
    let text = text.replace(r#""tolerance_pct": 5, "#, "");
    let s = Suite::parse(Path::new("t.json"), &text).unwrap();
    assert_eq!(
        s.cases.iter().map(|c| c.tolerance_pct).collect::<Vec<_>>(),
        [Some(7.5), None, None]
    );
}

#[test]
fn load_missing_file_is_an_io_error() {
    let e = Suite::load(Path::new("/nonexistent/kernelgate/suite.json")).unwrap_err();
    assert!(matches!(e, Error::Io { .. }), "{e:?}");
    assert!(
        e.to_string()
            .starts_with("reading suite /nonexistent/kernelgate/suite.json: "),
        "{e}"
    );
}

fn config(root: &Path, suite: &str) -> Config {
    let mut c = common::test_config(root, Path::new("/unused"));
    c.suite = suite.to_string();
    c
}

#[test]
fn suite_path_resolution() {
    let r = root();
    assert_eq!(
        config(&r, "default").suite_path(),
        r.join("fixtures/default.json")
    );
    assert_eq!(
        config(&r, "smoke").suite_path(),
        r.join("fixtures/smoke.json")
    );
    assert_eq!(
        config(Path::new("/elsewhere"), "nsa").suite_path(),
        Path::new("/elsewhere/fixtures/nsa.json")
    );
    // Anything ending in .json is a path, existing or not.
    assert_eq!(
        config(&r, "my/suite.json").suite_path(),
        Path::new("my/suite.json")
    );
    assert_eq!(
        config(&r, "/tmp/none.json").suite_path(),
        Path::new("/tmp/none.json")
    );
    // An existing file without the extension is a path too.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("suite");
    std::fs::write(&f, "{}").unwrap();
    assert_eq!(config(&r, f.to_str().unwrap()).suite_path(), f);
    // A name that resolves loads.
    let s = Suite::load(&config(&r, "calibration").suite_path()).unwrap();
    assert_eq!(s.name, "calibration");
    // A path that resolves loads and takes its name from the file.
    let p = dir.path().join("mine.json");
    std::fs::write(
        &p,
        format!(r#"{{ "description": "d", "groups": [ {GEMM_OK} ] }}"#),
    )
    .unwrap();
    let s = Suite::load(&config(&r, p.to_str().unwrap()).suite_path()).unwrap();
    assert_eq!(
        (s.name.as_str(), names(&s)),
        ("mine", vec!["gemm::cublas::m1_n1_k1_bf16".to_string()])
    );
}

#[test]
fn optional_dimensions_masked_logits() {
    // `lead` and `pad` are optional for softmax and cross-entropy: named after m and n when
    // given (0 allowed), absent otherwise (the case keeps its old name).
    let g = r#"{ "kernel": "cross_entropy", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 4, "n": 3072}, {"m": 4, "n": 3072, "pad": 2872}, {"m": 4, "n": 3072, "lead": 0, "pad": 8}, {"m": 4, "n": 3072, "lead": 256, "pad": 100}] }"#;
    let s = parse(&format!(r#"{{ "description": "t", "groups": [ {g} ] }}"#)).unwrap();
    assert_eq!(
        names(&s),
        [
            "cross_entropy::cuda::m4_n3072_bf16",
            "cross_entropy::cuda::m4_n3072_lead0_pad8_bf16",
            "cross_entropy::cuda::m4_n3072_lead256_pad100_bf16",
            "cross_entropy::cuda::m4_n3072_pad2872_bf16",
        ]
    );
    // The names parse back to the same dimensions.
    for c in &s.cases {
        let n = CaseName::parse(&c.name()).unwrap();
        assert_eq!(n.shape, c.shape, "{}", c.name());
    }
    // A mask over every column is refused, naming the dimensions.
    let g = r#"{ "kernel": "softmax", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 4, "n": 300, "lead": 100, "pad": 200}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "softmax") shape 0 {"lead": 100, "m": 4, "n": 300, "pad": 200}"#,
        "lead=100 + pad=200 masks every one of the n=300 columns",
    );
    // Families without optional dimensions still refuse them; those with them list them.
    let g = r#"{ "kernel": "rmsnorm", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 4, "n": 300, "w": 32, "pad": 2}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "rmsnorm") shape 0 {"m": 4, "n": 300, "pad": 2, "w": 32}"#,
        r#"unknown dimension "pad" for rmsnorm; its dimensions are m, n, w"#,
    );
    let g = r#"{ "kernel": "softmax", "backends": ["cuda"], "dtypes": ["bf16"], "shapes": [{"m": 4, "n": 300, "tail": 2}] }"#;
    assert_err(
        &with_group(g),
        r#"group 1 (kernel "softmax") shape 0 {"m": 4, "n": 300, "tail": 2}"#,
        r#"unknown dimension "tail" for softmax; its dimensions are m, n (optional: lead, pad)"#,
    );
}

#[test]
fn masked_suite_reaches_every_mask_and_family() {
    let s = fixture("masked");
    for fam in ["softmax", "cross_entropy", "cross_entropy_bwd"] {
        let of: Vec<_> = s.cases.iter().filter(|c| c.kernel == fam).collect();
        assert!(
            of.iter().any(|c| c.shape.try_get("lead").is_some()),
            "{fam}"
        );
        assert!(
            of.iter().any(|c| c.shape.try_get("lead").is_none()),
            "{fam}"
        );
        assert!(of.iter().all(|c| c.shape.try_get("pad").is_some()), "{fam}");
        for dt in [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32] {
            assert!(
                of.iter().any(|c| c.backend == "cuda" && c.dtype == dt),
                "{fam} {dt}"
            );
        }
        assert!(of.iter().any(|c| c.backend == "torch"), "{fam}");
    }
}
