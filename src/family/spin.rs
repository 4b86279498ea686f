//! `spin`: calibration. A one-thread kernel that busy-waits on the GPU's global timer for
//! the requested number of microseconds (`us`), then writes 1.0 to its output.
//!
//! It exists to test the regression gate itself: its true latency is known, and
//! `KERNELGATE_SPIN_SCALE` stretches it without changing the case, like a real slowdown.

use super::{Family, Init, TensorSpec};
use crate::case::{Dtype, Shape};
use crate::verify::{Expected, Tolerance};

/// The calibration family.
pub struct Spin;

impl Family for Spin {
    fn name(&self) -> &'static str {
        "spin"
    }
    fn about(&self) -> &'static str {
        "calibration: runs for a requested time"
    }
    fn dims(&self) -> &'static [&'static str] {
        &["us"]
    }
    fn dtypes(&self) -> &'static [Dtype] {
        &[Dtype::Fp32]
    }
    fn backends(&self) -> &'static [&'static str] {
        &["cuda"]
    }
    fn validate(&self, shape: &Shape) -> Result<(), String> {
        let us = shape.get("us");
        if us > 10_000_000 {
            return Err(format!(
                "us={us}: a calibration spin longer than 10 s is a mistake"
            ));
        }
        Ok(())
    }
    fn inputs(&self, _: &Shape, _: Dtype) -> Vec<TensorSpec> {
        vec![]
    }
    fn outputs(&self, _: &Shape, dtype: Dtype) -> Vec<TensorSpec> {
        vec![TensorSpec {
            name: "done",
            dtype,
            len: 1,
            init: Init::Output,
        }]
    }
    fn flops(&self, _: &Shape) -> f64 {
        0.0
    }
    fn bytes(&self, _: &Shape, _: Dtype) -> f64 {
        4.0
    }
    fn reference(&self, _: &Shape, _: Dtype, _: u64) -> Vec<Expected> {
        vec![Expected {
            output: 0,
            indices: vec![0],
            values: vec![1.0],
            slack: Vec::new(),
        }]
    }
    fn tolerance(&self, _: &Shape, _: Dtype) -> Tolerance {
        Tolerance {
            rel_l2: 0.0,
            atol: 0.0,
            rtol: 0.0,
        }
    }
}
