//! The GPU's slowdown counters and the degraded-machine rule: properties over any readings.

use kernelgate::baseline::{degraded_ceilings, DEGRADED_CEILING};
use kernelgate::gpu::Ceilings;
use kernelgate::gpu_state::{SlowdownTime, COUNTED_FRACTION, COUNTED_MIN_US, THROTTLED_FRACTION};
use proptest::prelude::*;
use std::time::Duration;

fn times(sw: f64, hw: f64, brake: f64) -> SlowdownTime {
    SlowdownTime {
        sw_thermal_us: sw,
        hw_thermal_us: hw,
        hw_power_brake_us: brake,
    }
}

fn ceilings(copy: f64, gemm: f64) -> Option<Ceilings> {
    Some(Ceilings {
        copy_gbps: copy,
        gemm_tflops: gemm,
        launch_us: 1.0,
        window_us: None,
    })
}

proptest! {
    /// A slowdown is named exactly when it grew by at least the larger of 1 ms and the fraction
    /// of the interval; a stricter fraction names a subset; unchanged counters name nothing.
    #[test]
    fn counted_slowdowns_follow_the_threshold(
        base in proptest::array::uniform3(0.0f64..1e12),
        grow in proptest::array::uniform3(0.0f64..5e7),
        elapsed_ms in 1u64..600_000,
    ) {
        let before = times(base[0], base[1], base[2]);
        let after = times(base[0] + grow[0], base[1] + grow[1], base[2] + grow[2]);
        let elapsed = Duration::from_millis(elapsed_ms);
        let named = after.since(&before, elapsed, COUNTED_FRACTION);
        let least = COUNTED_MIN_US.max(COUNTED_FRACTION * elapsed_ms as f64 * 1e3);
        let names = ["software thermal slowdown", "hardware thermal slowdown", "hardware power brake"];
        for (i, name) in names.iter().enumerate() {
            // `base + grow - base` may round (by far less than 1 µs here): stay clear of the edge.
            if (grow[i] - least).abs() > 1e-3 * least {
                prop_assert_eq!(named.contains(name), grow[i] >= least, "{} grew {} (least {})", name, grow[i], least);
            }
        }
        let strict = after.since(&before, elapsed, THROTTLED_FRACTION);
        prop_assert!(strict.iter().all(|r| named.contains(r)));
        prop_assert!(before.since(&before, elapsed, COUNTED_FRACTION).is_empty());
    }

    /// A run is degraded only when one of its ceilings falls more than DEGRADED_CEILING below
    /// the stored ones; a run at least as fast on both is never degraded, and the shortfall
    /// reported is the larger of the two.
    #[test]
    fn degraded_runs_are_those_far_below(
        copy in 100.0f64..10_000.0,
        gemm in 10.0f64..2_000.0,
        fc in 0.3f64..1.5,
        fg in 0.3f64..1.5,
    ) {
        let got = degraded_ceilings(ceilings(copy, gemm), ceilings(copy * fc, gemm * fg));
        let worst = (1.0 - fc).max(1.0 - fg);
        if (worst - DEGRADED_CEILING).abs() > 1e-9 {
            prop_assert_eq!(got.is_some(), worst > DEGRADED_CEILING);
        }
        if let Some(w) = got {
            prop_assert!((w - worst).abs() < 1e-9);
        }
        if fc >= 1.0 && fg >= 1.0 {
            prop_assert_eq!(got, None);
        }
    }
}
