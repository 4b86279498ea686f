//! `kernelgate plot` on the real H200 results: non-empty PNG and SVG charts per family.

#[path = "cli_support/mod.rs"]
mod common;

use common::{fixture, kernelgate, relabelled_copy, text};

fn png_size(bytes: &[u8]) -> (u32, u32) {
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "a PNG");
    let be = |i: usize| u32::from_be_bytes(bytes[i..i + 4].try_into().unwrap());
    (be(16), be(20))
}

#[test]
fn writes_png_and_svg_per_family() {
    let dir = tempfile::tempdir().unwrap();
    let out = kernelgate(
        dir.path(),
        &[
            "plot",
            fixture("h200-default.json").to_str().unwrap(),
            "-o",
            "charts",
        ],
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let c = dir.path().join("charts");
    for stem in [
        "nvidia-h200-gemm-latency",
        "nvidia-h200-gemm-throughput",
        "nvidia-h200-gemm-speedup",
        "nvidia-h200-spin-latency",
    ] {
        let png = std::fs::read(c.join(format!("{stem}.png"))).unwrap();
        assert_eq!(png_size(&png), (1280, 760));
        assert!(png.len() > 10_000, "{stem}.png has content");
        let svg = std::fs::read_to_string(c.join(format!("{stem}.svg"))).unwrap();
        assert!(svg.starts_with("<svg"), "{stem}.svg");
        assert!(svg.contains("<text"), "{stem}.svg has labels");
    }
    let svg = std::fs::read_to_string(c.join("nvidia-h200-gemm-throughput.svg")).unwrap();
    assert!(svg.contains("TFLOP/s"), "axis unit");
    assert!(svg.contains("m8192_n8192_k8192_bf16"), "problem labels");
    assert!(
        svg.contains("\ncublas\n") && svg.contains("\ncuda\n"),
        "legend"
    );
    assert!(
        !c.join("nvidia-h200-spin-throughput.png").exists(),
        "spin has no throughput metric"
    );
}

#[test]
fn cross_gpu_chart_when_input_spans_gpus() {
    // Second file: the real H200 run relabelled as an H100 (only the name differs) to test
    // the mechanism; not an H100 measurement.
    let dir = tempfile::tempdir().unwrap();
    relabelled_copy(
        &fixture("h200-smoke.json"),
        &dir.path().join("h100.json"),
        "NVIDIA H100 80GB HBM3",
    );
    let out = kernelgate(
        dir.path(),
        &[
            "plot",
            fixture("h200-smoke.json").to_str().unwrap(),
            "h100.json",
            "-o",
            "c",
            "--format",
            "png",
        ],
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let c = dir.path().join("c");
    assert!(
        std::fs::metadata(c.join("cross-gpu-gemm.png"))
            .unwrap()
            .len()
            > 10_000
    );
    for gpu in ["NVIDIA H200", "NVIDIA H100 80GB HBM3"] {
        let slug = kernelgate::baseline::gpu_slug(gpu);
        assert!(
            c.join(format!("{slug}-gemm-latency.png")).exists(),
            "{slug}"
        );
    }
    assert!(!c.join("cross-gpu-gemm.svg").exists(), "--format png only");
}
