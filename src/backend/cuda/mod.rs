//! `cuda`: kernelgate's own kernels from `kernels/*.cu`, compiled by NVRTC for the device.

use super::{Backend, Bindings, Prepared};
use crate::case::Case;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gpu::Gpu;

mod ce_fwd;
mod gemm;
mod gemm_gemv;
mod gemm_mtc;
mod gemm_skinny;
mod gemm_wgmma;
mod mha;
mod mha_wgmma;
mod norms;
mod nsa;
mod nsa_wgmma;
mod spin;
mod tma;

/// Most dynamic shared memory one CTA may opt into on sm_90 (227 KiB), the limit every Hopper
/// kernel's shared-memory recipe is held to.
pub const MAX_DYNAMIC_SMEM: u64 = 232_448;

/// Parses the value of environment variable `var` as one of `choices` (name, value), trimmed:
/// `Ok(None)` when unset or empty, an error naming the variable and the choices otherwise.
fn parse_choice<T: Copy>(
    var: &str,
    value: Option<&str>,
    choices: &[(&str, T)],
) -> std::result::Result<Option<T>, String> {
    match value.map(str::trim) {
        None | Some("") => Ok(None),
        Some(v) => choices
            .iter()
            .find(|(name, _)| *name == v)
            .map(|&(_, t)| Some(t))
            .ok_or_else(|| {
                let names: Vec<String> = choices.iter().map(|(n, _)| format!("`{n}`")).collect();
                format!("{var}={v:?} is not a choice: use {}", names.join(", "))
            }),
    }
}

/// The major version of a `"major.minor"` compute capability (0 when it does not parse).
fn compute_major(compute_capability: &str) -> u32 {
    compute_capability
        .split('.')
        .next()
        .and_then(|v| v.parse::<u32>().ok())
        .unwrap_or(0)
}

/// Parses an on/off switch that is on by default: unset or empty, `1` (on) or `0` (off); any
/// other value is an error naming `var`.
fn parse_switch(var: &str, value: Option<&str>) -> std::result::Result<bool, String> {
    parse_choice(var, value, &[("1", true), ("0", false)]).map(|v| v.unwrap_or(true))
}

/// Reads environment variable `var` and parses it with `parse`, a bad value being an error of
/// `case`.
fn from_env<T>(
    case: &Case,
    var: &str,
    parse: impl FnOnce(Option<&str>) -> std::result::Result<T, String>,
) -> Result<T> {
    let value = std::env::var(var).ok();
    parse(value.as_deref()).map_err(|message| Error::Case {
        case: case.name(),
        message,
    })
}

/// One kernel launch of a sequence: entry point, launch shape, arguments.
type Step = (String, crate::gpu::Dims, Vec<crate::gpu::KernelArg>);

/// How the launches of a sequence follow each other.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chain {
    /// Each launch starts once the one before has finished (plain stream order).
    Ordinary,
    /// Every launch after the first is a programmatic dependent of the one before
    /// ([`Gpu::launch_dependent`]): each of those kernels must execute `griddepcontrol.wait`
    /// before touching memory the previous one reads or writes.
    Overlapped,
    /// Every launch, the first too, is a programmatic dependent of the stream's previous
    /// operation, so back-to-back launches of the case overlap one's set-up with the other's
    /// tail; every kernel must execute `griddepcontrol.wait` before touching memory.
    Dependent,
}

/// A launcher that runs `steps` (entry points of `file`) in order, chained as `chain` says;
/// `keep` (workspaces and padded copies the kernels write) lives as long as the launcher.
fn launch_sequence(
    gpu: &mut Gpu,
    file: &str,
    steps: Vec<Step>,
    keep: Vec<crate::gpu::DeviceBuffer>,
    variant: String,
    chain: Chain,
) -> Result<Prepared> {
    let module = gpu.module(file)?;
    let mut launches = Vec::new();
    for (name, dims, args) in steps {
        launches.push((module.function(&name)?, dims, args));
    }
    let (compile_s, source_hash) = (module.compile_s, module.source_hash.clone());
    Ok(Prepared {
        launch: Box::new(move |gpu: &Gpu| {
            let _keep = &keep;
            for (i, (f, dims, args)) in launches.iter().enumerate() {
                if chain == Chain::Dependent || (chain == Chain::Overlapped && i > 0) {
                    gpu.launch_dependent(*f, *dims, args)?;
                } else {
                    gpu.launch(*f, *dims, args)?;
                }
            }
            Ok(())
        }),
        compile_s,
        source_hash,
        code_hash: String::new(),
        variant,
    })
}

/// Our own kernels.
pub struct Cuda;

impl Backend for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }
    fn prepare(
        &self,
        gpu: &mut Gpu,
        case: &Case,
        bind: &Bindings,
        cfg: &Config,
    ) -> Result<Prepared> {
        // One module per family; a new family adds a module and an arm here.
        match case.kernel.as_str() {
            "gemm" => gemm::prepare(gpu, case, bind),
            "spin" => spin::prepare(gpu, case, bind, cfg),
            "mha" => mha::prepare(gpu, case, bind),
            "nsa" | "nsa_irregular" => nsa::prepare(gpu, case, bind),
            "rmsnorm" | "rmsnorm_bwd" | "fused_add_rmsnorm" | "layernorm" | "softmax"
            | "softmax_bwd" | "cross_entropy" | "cross_entropy_bwd" | "mse" | "gelu"
            | "gelu_tanh" | "silu" => norms::prepare(gpu, case, bind),
            other => Err(Error::Case {
                case: case.name(),
                message: format!("the cuda backend has no kernel for family {other}"),
            }),
        }
    }
}

/// The text of `kernels/<file>` in this checkout, for tests that hold the host's names and
/// constants against the kernel source.
#[cfg(test)]
pub(crate) fn kernel_source(file: &str) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("kernels")
        .join(file);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::{parse_choice, parse_switch};

    #[test]
    fn env_choices() {
        let c = [("a", 1), ("bb", 2)];
        assert_eq!(parse_choice("V", None, &c), Ok(None));
        assert_eq!(parse_choice("V", Some(" "), &c), Ok(None));
        assert_eq!(parse_choice("V", Some(" bb "), &c), Ok(Some(2)));
        let err = parse_choice("V", Some("c"), &c).unwrap_err();
        assert_eq!(err, "V=\"c\" is not a choice: use `a`, `bb`");
    }

    #[test]
    fn switches_are_on_unless_off() {
        assert_eq!(parse_switch("V", None), Ok(true));
        assert_eq!(parse_switch("V", Some("")), Ok(true));
        assert_eq!(parse_switch("V", Some("1")), Ok(true));
        assert_eq!(parse_switch("V", Some(" 0 ")), Ok(false));
        let err = parse_switch("V", Some("off")).unwrap_err();
        assert!(err.contains("V=\"off\"") && err.contains("`0`"), "{err}");
    }
}
