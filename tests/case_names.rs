//! Case names: the format `kernel::backend::<dims>_<dtype>` and its parser.

use kernelgate::case::{is_dim_name, Case, CaseName, Dtype, Shape};
use kernelgate::Error;
use proptest::prelude::*;

fn gemm_case(backend: &str, m: u64, n: u64, k: u64, dtype: Dtype) -> Case {
    Case {
        kernel: "gemm".into(),
        backend: backend.into(),
        dtype,
        shape: Shape::new([("m", m), ("n", n), ("k", k)]),
        tolerance_pct: None,
        flush_l2: true,
    }
}

#[test]
fn name_format() {
    let c = gemm_case("cublas", 4096, 4096, 4096, Dtype::Bf16);
    assert_eq!(c.name(), "gemm::cublas::m4096_n4096_k4096_bf16");
    assert_eq!(c.problem(), "gemm::m4096_n4096_k4096_bf16");
    let c = gemm_case("cuda", 1, 1000, 136, Dtype::Fp32);
    assert_eq!(c.name(), "gemm::cuda::m1_n1000_k136_fp32");
    let spin = Case {
        kernel: "spin".into(),
        backend: "cuda".into(),
        dtype: Dtype::Fp32,
        shape: Shape::new([("us", 50)]),
        tolerance_pct: Some(7.0),
        flush_l2: false,
    };
    assert_eq!(spin.name(), "spin::cuda::us50_fp32");
}

#[test]
fn name_keeps_dimension_order_of_the_shape() {
    let c = Case {
        shape: Shape::new([("k", 3), ("m", 1), ("n", 2)]),
        ..gemm_case("cuda", 0, 0, 0, Dtype::Fp16)
    };
    assert_eq!(c.name(), "gemm::cuda::k3_m1_n2_fp16");
}

#[test]
fn dtype_names_sizes_and_parse() {
    assert_eq!(Dtype::ALL.map(Dtype::name), ["bf16", "fp16", "fp32"]);
    assert_eq!(Dtype::ALL.map(Dtype::size), [2, 2, 4]);
    for d in Dtype::ALL {
        assert_eq!(Dtype::parse(d.name()), Some(d));
        assert_eq!(d.to_string(), d.name());
    }
    for bad in ["", "BF16", "f32", "fp64", "bf16 ", "int8"] {
        assert_eq!(Dtype::parse(bad), None, "{bad:?}");
    }
    assert_eq!(serde_json::to_string(&Dtype::Bf16).unwrap(), "\"bf16\"");
}

#[test]
fn dtype_round_and_decode() {
    // 1 + 2^-9 is not a bf16 (8 significant bits): rounds to even (1.0); 1 + 3·2^-9 rounds up.
    assert_eq!(Dtype::Bf16.round(1.0 + 2f32.powi(-9)), 1.0);
    assert_eq!(
        Dtype::Bf16.round(1.0 + 3.0 * 2f32.powi(-9)),
        1.0 + 2f64.powi(-7)
    );
    assert_eq!(Dtype::Fp16.round(1.0 + 2f32.powi(-12)), 1.0);
    assert_eq!(Dtype::Fp16.round(65520.0), f64::INFINITY);
    assert_eq!(Dtype::Fp32.round(0.1), 0.1f32 as f64);
    let bytes: Vec<u8> = [1.5f32, -2.25]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(Dtype::Fp32.decode(&bytes, 1), -2.25);
    let bytes: Vec<u8> = [half::bf16::from_f32(3.0), half::bf16::from_f32(-0.5)]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(Dtype::Bf16.decode(&bytes, 0), 3.0);
    assert_eq!(Dtype::Bf16.decode(&bytes, 1), -0.5);
    let bytes: Vec<u8> = [half::f16::from_f32(0.25), half::f16::NAN]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(Dtype::Fp16.decode(&bytes, 0), 0.25);
    assert!(Dtype::Fp16.decode(&bytes, 1).is_nan());
}

#[test]
fn shape_accessors_and_json() {
    let s = Shape::new([("m", 2), ("n", 3), ("k", 4)]);
    assert_eq!(s.get("n"), 3);
    assert_eq!(s.us("k"), 4);
    assert_eq!(s.try_get("x"), None);
    assert_eq!(s.to_string(), "m2_n3_k4");
    assert_eq!(s.to_json(), serde_json::json!({"m": 2, "n": 3, "k": 4}));
    assert_eq!(s.dims()[0], ("m".to_string(), 2));
}

#[test]
#[should_panic(expected = "has no dimension")]
fn shape_get_missing_panics() {
    Shape::new([("m", 2)]).get("n");
}

#[test]
fn dim_names() {
    assert!(is_dim_name("m"));
    assert!(is_dim_name("us"));
    assert!(!is_dim_name(""));
    assert!(!is_dim_name("M"));
    assert!(!is_dim_name("m1"));
    assert!(!is_dim_name("m_n"));
}

#[test]
fn parse_known_name() {
    let p = CaseName::parse("gemm::cublas::m4096_n4096_k4096_bf16").unwrap();
    assert_eq!(p.kernel, "gemm");
    assert_eq!(p.backend, "cublas");
    assert_eq!(p.dtype, Dtype::Bf16);
    assert_eq!(p.shape, Shape::new([("m", 4096), ("n", 4096), ("k", 4096)]));
    let p =
        CaseName::parse("fused_add_rmsnorm::torch-compile::tokens8192_hidden4096_fp16").unwrap();
    assert_eq!(p.kernel, "fused_add_rmsnorm");
    assert_eq!(p.backend, "torch-compile");
    assert_eq!(p.shape.get("tokens"), 8192);
    assert_eq!(p.shape.get("hidden"), 4096);
}

fn parse_err(name: &str) -> String {
    match CaseName::parse(name) {
        Err(Error::Case { case, message }) => {
            assert_eq!(case, name, "the error names the text that failed");
            message
        }
        Err(e) => panic!("{name:?}: wrong error kind {e:?}"),
        Ok(p) => panic!("{name:?} parsed as {p:?}"),
    }
}

#[test]
fn parse_errors() {
    let cases: &[(&str, &str)] = &[
        ("", "expected kernel::backend::<dims>_<dtype>"),
        ("gemm", "expected kernel::backend::<dims>_<dtype>"),
        ("gemm::cublas", "expected kernel::backend::<dims>_<dtype>"),
        (
            "gemm::cublas::m1_bf16::x",
            "expected kernel::backend::<dims>_<dtype>",
        ),
        (
            "::cublas::m1_bf16",
            "kernel and backend are lowercase identifiers",
        ),
        (
            "gemm::::m1_bf16",
            "kernel and backend are lowercase identifiers",
        ),
        (
            "Gemm::cublas::m1_bf16",
            "kernel and backend are lowercase identifiers",
        ),
        (
            "gemm::cuBLAS::m1_bf16",
            "kernel and backend are lowercase identifiers",
        ),
        (
            "ge mm::cublas::m1_bf16",
            "kernel and backend are lowercase identifiers",
        ),
        ("gemm::cublas::m1", "missing _<dtype> suffix"),
        ("gemm::cublas::bf16", "missing _<dtype> suffix"),
        ("gemm::cublas::m1_fp64", "unknown dtype suffix"),
        ("gemm::cublas::m1_BF16", "unknown dtype suffix"),
        ("gemm::cublas::m1_", "unknown dtype suffix"),
        ("gemm::cublas::_bf16", "dimension without a value"),
        ("gemm::cublas::m_bf16", "dimension without a value"),
        ("gemm::cublas::m1__bf16", "dimension without a value"),
        ("gemm::cublas::m1_n_bf16", "dimension without a value"),
        (
            "gemm::cublas::4096_bf16",
            "dimension names are lowercase letters",
        ),
        (
            "gemm::cublas::M4096_bf16",
            "dimension names are lowercase letters",
        ),
        (
            "gemm::cublas::m-1_bf16",
            "dimension names are lowercase letters",
        ),
        (
            "gemm::cublas::m4096x_bf16",
            "dimension value is not an integer",
        ),
        (
            "gemm::cublas::m1n2_bf16",
            "dimension value is not an integer",
        ),
        (
            "gemm::cublas::m99999999999999999999_bf16",
            "dimension value is not an integer",
        ),
        (
            "gemm::cublas::m04096_bf16",
            "dimension value has a leading zero",
        ),
        (
            "gemm::cublas::m00_bf16",
            "dimension value has a leading zero",
        ),
    ];
    for (name, want) in cases {
        let msg = parse_err(name);
        assert!(
            msg.starts_with(want),
            "{name:?}: got {msg:?}, want {want:?}"
        );
    }
    // The error's text names the case and the problem.
    let e = CaseName::parse("gemm::cublas::m1_fp64")
        .unwrap_err()
        .to_string();
    assert_eq!(e, "case gemm::cublas::m1_fp64: unknown dtype suffix");
}

#[test]
fn parse_accepts_zero_and_u64_max() {
    let p = CaseName::parse("gemm::cublas::m0_n18446744073709551615_fp32").unwrap();
    assert_eq!(p.shape.get("m"), 0);
    assert_eq!(p.shape.get("n"), u64::MAX);
}

fn ident() -> impl Strategy<Value = String> {
    "[a-z][a-z0-9_-]{0,12}"
}

fn dtype() -> impl Strategy<Value = Dtype> {
    prop::sample::select(Dtype::ALL.to_vec())
}

proptest! {
    #[test]
    fn name_parse_round_trip(
        kernel in ident(),
        backend in ident(),
        dims in prop::collection::vec(("[a-z]{1,6}", any::<u64>()), 1..6),
        dtype in dtype(),
        tolerance in prop::option::of(0.1f64..50.0),
        flush in any::<bool>(),
    ) {
        let case = Case {
            kernel: kernel.clone(),
            backend: backend.clone(),
            dtype,
            shape: Shape::new(dims.clone()),
            tolerance_pct: tolerance,
            flush_l2: flush,
        };
        let name = case.name();
        let p = CaseName::parse(&name).unwrap();
        prop_assert_eq!(&p.kernel, &kernel);
        prop_assert_eq!(&p.backend, &backend);
        prop_assert_eq!(p.dtype, dtype);
        prop_assert_eq!(&p.shape, &case.shape);
        prop_assert_eq!(p.shape.dims().len(), dims.len());
        // And back again: the name is canonical.
        let again = Case { kernel: p.kernel, backend: p.backend, dtype: p.dtype, shape: p.shape, tolerance_pct: None, flush_l2: true };
        prop_assert_eq!(again.name(), name);
    }

    #[test]
    fn gemm_names_round_trip(m in 1u64..1 << 31, n in 1u64..1 << 31, k in 1u64..1 << 31, dtype in dtype(),
                             backend in prop::sample::select(vec!["cublas", "cuda"])) {
        let c = gemm_case(backend, m, n, k, dtype);
        prop_assert_eq!(c.name(), format!("gemm::{backend}::m{m}_n{n}_k{k}_{}", dtype.name()));
        let p = CaseName::parse(&c.name()).unwrap();
        prop_assert_eq!((p.shape.get("m"), p.shape.get("n"), p.shape.get("k")), (m, n, k));
        prop_assert_eq!(p.dtype, dtype);
    }

    /// Arbitrary text never panics the parser, and whatever parses is canonical.
    #[test]
    fn parse_never_panics(s in "[a-z0-9_:A-Z-]{0,40}") {
        if let Ok(p) = CaseName::parse(&s) {
            let c = Case { kernel: p.kernel, backend: p.backend, dtype: p.dtype, shape: p.shape, tolerance_pct: None, flush_l2: true };
            prop_assert_eq!(c.name(), s);
        }
    }
}
