//! TMA descriptors shared by the Hopper kernels (`gemm_wgmma`, `mha_wgmma`).

use crate::case::{Case, Dtype};
use crate::error::{Error, Result};
use cudarc::driver::sys;

/// Byte strides of dimensions 1.. of a dense tensor of `elem`-byte elements with extents `dims`
/// (innermost first; dimension 0 is contiguous).
fn byte_strides(dims: &[u64], elem: u64) -> Vec<u64> {
    (1..dims.len())
        .map(|i| dims[..i].iter().product::<u64>() * elem)
        .collect()
}

/// A tiled tensor map over a dense row-major tensor of the case's 16-bit dtype: `dims` innermost
/// first (each dimension's stride the product of the ones before it), `boxes` the tile copied
/// per TMA load, 128-byte swizzle, 256-byte L2 promotion, zero fill out of bounds. `ptr` must be
/// a live device allocation of `dims`' product 2-byte elements. Rank 2 to 5.
pub fn tensor_map_16bit(
    case: &Case,
    ptr: u64,
    dims: &[u64],
    boxes: &[u32],
) -> Result<sys::CUtensorMap> {
    assert!(
        (2..=5).contains(&dims.len()) && boxes.len() == dims.len(),
        "TMA rank 2..5 with one box size per dimension"
    );
    encode(case, ptr, dims, &byte_strides(dims, 2), boxes)
}

/// A rank-2 tensor map like [`tensor_map_16bit`] over `dims = [cols, rows]` whose rows are
/// `ld` elements apart (`ld ≥ cols`, `ld · 2` a multiple of 16): a padded copy read as its
/// logical extent, so that columns past `cols` are out of bounds and read as zeros.
pub fn tensor_map_16bit_rows(
    case: &Case,
    ptr: u64,
    dims: [u64; 2],
    ld: u64,
    boxes: [u32; 2],
) -> Result<sys::CUtensorMap> {
    assert!(
        ld >= dims[0],
        "row stride {ld} below the row length {}",
        dims[0]
    );
    encode(case, ptr, &dims, &[ld * 2], &boxes)
}

/// `cuTensorMapEncodeTiled` with the settings of [`tensor_map_16bit`] and explicit byte
/// strides of dimensions 1.. .
fn encode(
    case: &Case,
    ptr: u64,
    dims: &[u64],
    strides: &[u64],
    boxes: &[u32],
) -> Result<sys::CUtensorMap> {
    let dt = match case.dtype {
        Dtype::Bf16 => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
        _ => sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
    };
    let elem = vec![1u32; dims.len()];
    let mut map = std::mem::MaybeUninit::<sys::CUtensorMap>::zeroed();
    // SAFETY: dims, boxes and elem have `rank` entries and strides `rank − 1`, as the call
    // requires (callers pass them so); ptr is a live device allocation covering the strides.
    let r = unsafe {
        sys::cuTensorMapEncodeTiled(
            map.as_mut_ptr(),
            dt,
            dims.len() as u32,
            ptr as *mut std::ffi::c_void,
            dims.as_ptr(),
            strides.as_ptr(),
            boxes.as_ptr(),
            elem.as_ptr(),
            sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_128B,
            sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
            sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
        )
    };
    r.result().map_err(|e| {
        Error::driver(
            format!(
                "{}: encoding a TMA descriptor (dims {dims:?}, byte strides {strides:?}, box {boxes:?})",
                case.name()
            ),
            e,
        )
    })?;
    // SAFETY: initialised by the successful call above.
    Ok(unsafe { map.assume_init() })
}

#[cfg(test)]
mod tests {
    use super::byte_strides;

    #[test]
    fn strides_of_dense_tensors() {
        // gemm A (M × K, K contiguous): rows of K elements.
        assert_eq!(byte_strides(&[4096, 1024], 2), vec![8192]);
        // mha Q as {d, seq, batch·heads}: rows of d elements, heads of seq·d.
        assert_eq!(byte_strides(&[128, 4097, 64], 2), vec![256, 4097 * 256]);
    }
}
