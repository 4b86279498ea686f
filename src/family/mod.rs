//! Kernel families: what a problem is (dimensions, tensors, inputs), its float64 CPU
//! reference, and its FLOP and byte counts. One module per family.

use crate::case::{Dtype, Shape};
use crate::inputs::{ColMask, Uniform};
use crate::verify::{Expected, Tolerance};

pub mod gemm;
pub mod mha;
pub mod norms;
pub mod norms_ref;
pub mod nsa;
pub mod spin;

/// How a tensor is initialised.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Init {
    /// An input of counter-based uniform values in the tensor's dtype (device-generated,
    /// CPU-reproducible through [`crate::inputs::value`]).
    Uniform(Uniform),
    /// As [`Init::Uniform`], then the columns [`ColMask`] names set to −inf in every row
    /// (vocabulary padding, masked logits): CPU-reproducible through
    /// [`crate::inputs::masked_value`].
    Masked(Uniform, ColMask),
    /// An input of 32-bit integers (indices, targets) made on the host by
    /// [`Family::host_i32`] and uploaded; the tensor's `dtype` is ignored (4 bytes each).
    HostI32,
    /// An output: poisoned with NaN before each checked run, so unwritten elements fail.
    Output,
    /// An output computed in place into input number `k` (no separate buffer, not poisoned).
    Alias(usize),
}

/// One tensor of a problem.
#[derive(Debug, Clone, PartialEq)]
pub struct TensorSpec {
    /// Name, used in messages.
    pub name: &'static str,
    /// Storage dtype.
    pub dtype: Dtype,
    /// Element count.
    pub len: usize,
    /// How inputs are initialised (outputs are poisoned with NaN instead).
    pub init: Init,
}

impl TensorSpec {
    /// Bytes of storage.
    pub fn bytes(&self) -> usize {
        match self.init {
            Init::HostI32 => self.len * 4,
            Init::Alias(_) => 0,
            _ => self.len * self.dtype.size(),
        }
    }
}

/// A kernel family.
pub trait Family: Send + Sync {
    /// Name: the first part of every case name (`cargo test -- <name>`).
    fn name(&self) -> &'static str;
    /// One-line description.
    fn about(&self) -> &'static str;
    /// Dimension names, in case-name order.
    fn dims(&self) -> &'static [&'static str];
    /// Dimensions a case may leave out (its name then does not carry them); present ones
    /// follow [`Family::dims`] in the name, may be 0, and the family validates them.
    fn optional_dims(&self) -> &'static [&'static str] {
        &[]
    }
    /// Dimensions that are 0/1 flags (e.g. `causal`): these may be 0, all others must be ≥ 1.
    fn flag_dims(&self) -> &'static [&'static str] {
        &[]
    }
    /// Supported dtypes.
    fn dtypes(&self) -> &'static [Dtype];
    /// Backends that implement this family.
    fn backends(&self) -> &'static [&'static str];
    /// Dimensions that may be 0 (a switch or an optional size, e.g. a window that is off);
    /// every other dimension must be at least 1.
    fn zero_dims(&self) -> &'static [&'static str] {
        &[]
    }
    /// Family-specific shape checks beyond "every dimension present and ≥ 1".
    fn validate(&self, shape: &Shape) -> Result<(), String> {
        let _ = shape;
        Ok(())
    }
    /// Input tensors; their position is the tensor id in the input hash.
    fn inputs(&self, shape: &Shape, dtype: Dtype) -> Vec<TensorSpec>;
    /// The values of integer input `tensor` (an input whose init is [`Init::HostI32`]).
    fn host_i32(&self, shape: &Shape, seed: u64, tensor: usize) -> Vec<i32> {
        let _ = (shape, seed, tensor);
        Vec::new()
    }
    /// Output tensors (poisoned before each checked run).
    fn outputs(&self, shape: &Shape, dtype: Dtype) -> Vec<TensorSpec>;
    /// Floating-point operations of one run.
    fn flops(&self, shape: &Shape) -> f64;
    /// Fewest bytes one run must move through device memory.
    fn bytes(&self, shape: &Shape, dtype: Dtype) -> f64;
    /// Reference values (float64) for a deterministic sample of output elements.
    fn reference(&self, shape: &Shape, dtype: Dtype, seed: u64) -> Vec<Expected>;
    /// Correctness bounds for this family at this shape and dtype.
    fn tolerance(&self, shape: &Shape, dtype: Dtype) -> Tolerance {
        let _ = shape;
        Tolerance::for_dtype(dtype)
    }
    /// Whether throughput is judged in GB/s (memory-bound) rather than TFLOP/s.
    fn memory_bound(&self) -> bool {
        false
    }
}

/// Every family kernelgate knows, by name.
pub fn all() -> Vec<&'static dyn Family> {
    vec![
        &gemm::Gemm,
        &spin::Spin,
        &mha::Mha,
        &nsa::Nsa,
        &nsa::NsaIrregular,
        &norms::RMSNORM,
        &norms::RMSNORM_BWD,
        &norms::FUSED_ADD_RMSNORM,
        &norms::LAYERNORM,
        &norms::SOFTMAX,
        &norms::SOFTMAX_BWD,
        &norms::CROSS_ENTROPY,
        &norms::CROSS_ENTROPY_BWD,
        &norms::MSE,
        &norms::GELU,
        &norms::GELU_TANH,
        &norms::SILU,
    ]
}

/// The family called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Family> {
    all().into_iter().find(|f| f.name() == name)
}

/// Device bytes a case needs: all inputs and outputs.
pub fn device_bytes(f: &dyn Family, shape: &Shape, dtype: Dtype) -> usize {
    f.inputs(shape, dtype)
        .iter()
        .chain(f.outputs(shape, dtype).iter())
        .map(TensorSpec::bytes)
        .sum()
}
