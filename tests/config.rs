//! Run configuration from the environment.
//!
//! Environment variables are process-global and libtest runs tests on threads, so every
//! test that touches the environment lives in the ONE test function below; the other
//! tests of this file never read it.

use kernelgate::config::Config;
use kernelgate::timing::Policy;
use kernelgate::Error;
use std::path::Path;

const VARS: &[&str] = &[
    "KERNELGATE_SUITE",
    "UPDATE_BASELINES",
    "KERNELGATE_STRICT",
    "KERNELGATE_TOLERANCE_PCT",
    "KERNELGATE_BASELINE_DIR",
    "KERNELGATE_RESULTS_DIR",
    "KERNELGATE_CACHE_DIR",
    "KERNELGATE_ROOT",
    "KERNELGATE_SEED",
    "KERNELGATE_DEVICE",
    "KERNELGATE_DEVICES",
    "KERNELGATE_EXCLUSIVE_TIMING",
    "KERNELGATE_WARMUP_MS",
    "KERNELGATE_MIN_SAMPLES",
    "KERNELGATE_MAX_SAMPLES",
    "KERNELGATE_MAX_TIME_MS",
    "KERNELGATE_TARGET_NOISE",
    "KERNELGATE_HOLD_US",
    "KERNELGATE_DEVICE_CHECK_MB",
    "KERNELGATE_SPIN_SCALE",
    "KERNELGATE_SPIN_FAULT",
    "KERNELGATE_SKIP_VERIFY",
    "KERNELGATE_HANG_S",
    "KERNELGATE_BASE",
    "KERNELGATE_FLOOR_US",
    "KERNELGATE_MACHINE_FACTOR",
    "KERNELGATE_SOAK_MS",
    "KERNELGATE_ADAPTIVE_BATCH",
    "KERNELGATE_BATCH",
    "CUDA_INJECTION64_PATH",
    "NVTX_INJECTION64_PATH",
    "NV_COMPUTE_PROFILER_PERFWORKS_DIR",
    "NV_NSIGHT_INJECTION_TRANSPORT_TYPE",
];

fn clear() {
    for v in VARS {
        std::env::remove_var(v);
    }
}

/// Sets `var=value` alone (everything else cleared) and reads the configuration.
fn with(var: &str, value: &str) -> kernelgate::Result<Config> {
    clear();
    std::env::set_var(var, value);
    let r = Config::from_env_with_root(Path::new("/proj"));
    std::env::remove_var(var);
    r
}

fn env_err(var: &'static str, value: &str, message: &str) {
    match with(var, value) {
        Err(e @ Error::Env { .. }) => {
            let shown = e.to_string();
            let Error::Env {
                var: v,
                value: val,
                message: m,
            } = e
            else {
                unreachable!()
            };
            assert_eq!(v, var);
            assert_eq!(m, message, "{var}={value}");
            assert_eq!(shown, format!("environment variable {var}={val:?}: {m}"));
            assert!(
                val.eq_ignore_ascii_case(value) || value.parse::<f64>().is_ok(),
                "{val} vs {value}"
            );
        }
        Err(e) => panic!("{var}={value}: wrong error {e:?}"),
        Ok(_) => panic!("{var}={value} accepted"),
    }
}

#[test]
fn environment() {
    // Defaults.
    clear();
    let c = Config::from_env_with_root(Path::new("/proj")).unwrap();
    assert_eq!(c.root, Path::new("/proj"));
    assert_eq!(c.suite, "default");
    assert!(!c.update_baselines && !c.append_baselines && !c.strict);
    assert_eq!(c.tolerance_pct, None);
    assert_eq!(c.baseline_dir, Path::new("/proj/baselines"));
    assert_eq!(c.results_dir, Path::new("/proj/target/kernelgate/results"));
    assert_eq!(c.cache_dir, Path::new("/proj/target/kernelgate/cache"));
    assert_eq!((c.seed, c.device, c.spin_scale), (None, 0, 1.0));
    assert_eq!(c.devices, None, "one device unless told otherwise");
    assert!(!c.exclusive_timing);
    // The run's policy: the library's, plus the soak of compute-bound cases.
    assert_eq!(
        c.timing,
        Policy {
            soak_ms: kernelgate::config::DEFAULT_SOAK_MS,
            ..Policy::default()
        }
    );
    assert_eq!(Policy::default().soak_ms, 0.0, "no soak outside a run");
    assert_eq!(
        c.timing.batch, None,
        "batches are pinned per case, not per run"
    );
    assert!(!c.adaptive_batch);
    assert_eq!(c.suite_path(), Path::new("/proj/fixtures/default.json"));
    // The gate across machines: the default floor, no machine factor, no A/B base.
    assert_eq!(c.floor_us, kernelgate::config::DEFAULT_FLOOR_US);
    assert_eq!(kernelgate::config::DEFAULT_FLOOR_US, 0.30);
    assert!(!c.machine_factor);
    assert_eq!((c.base.as_deref(), c.base_kernels.as_deref()), (None, None));
    assert_eq!(c.inject_ns, None, "only the self-test injects");

    // Overrides.
    let ok =
        |var: &str, value: &str| with(var, value).unwrap_or_else(|e| panic!("{var}={value}: {e}"));
    assert_eq!(ok("KERNELGATE_SUITE", "smoke").suite, "smoke");
    assert_eq!(
        ok("KERNELGATE_TOLERANCE_PCT", "7.5").tolerance_pct,
        Some(7.5)
    );
    assert_eq!(
        ok("KERNELGATE_BASELINE_DIR", "/b").baseline_dir,
        Path::new("/b")
    );
    assert_eq!(
        ok("KERNELGATE_RESULTS_DIR", "/r").results_dir,
        Path::new("/r")
    );
    assert_eq!(ok("KERNELGATE_CACHE_DIR", "/c").cache_dir, Path::new("/c"));
    assert_eq!(
        ok("KERNELGATE_SEED", "18446744073709551615").seed,
        Some(u64::MAX)
    );
    assert_eq!(ok("KERNELGATE_DEVICE", "3").device, 3);
    assert_eq!(ok("KERNELGATE_DEVICE", "3").devices, None);
    // Several devices.
    use kernelgate::devices::DeviceSpec;
    let c = ok("KERNELGATE_DEVICES", "all");
    assert_eq!((c.devices, c.device), (Some(DeviceSpec::All), 0));
    assert_eq!(c.devices_origin, "KERNELGATE_DEVICES");
    let c = ok("KERNELGATE_DEVICES", "2,1");
    assert_eq!(
        (c.devices, c.device),
        (Some(DeviceSpec::List(vec![2, 1])), 2)
    );
    assert_eq!(ok("KERNELGATE_DEVICES", "").devices, None);
    // KERNELGATE_DEVICES wins over KERNELGATE_DEVICE; the command line over both.
    clear();
    std::env::set_var("KERNELGATE_DEVICE", "3");
    std::env::set_var("KERNELGATE_DEVICES", "0,1");
    let mut c = Config::from_env_with_root(Path::new("/proj")).unwrap();
    assert_eq!(
        (c.devices.clone(), c.device),
        (Some(DeviceSpec::List(vec![0, 1])), 0)
    );
    c.set_devices(DeviceSpec::List(vec![1]), "--devices");
    assert_eq!(
        (c.devices.clone(), c.device, c.devices_origin),
        (Some(DeviceSpec::List(vec![1])), 1, "--devices")
    );
    clear();
    for v in ["1", "true", "yes"] {
        assert!(ok("KERNELGATE_EXCLUSIVE_TIMING", v).exclusive_timing, "{v}");
    }
    for v in ["0", "false", "no", ""] {
        assert!(
            !ok("KERNELGATE_EXCLUSIVE_TIMING", v).exclusive_timing,
            "{v:?}"
        );
    }
    assert_eq!(ok("KERNELGATE_WARMUP_MS", "0").timing.warmup_ms, 0.0);
    assert_eq!(ok("KERNELGATE_MIN_SAMPLES", "5").timing.min_samples, 5);
    assert_eq!(ok("KERNELGATE_MAX_SAMPLES", "50").timing.max_samples, 50);
    assert_eq!(
        ok("KERNELGATE_MAX_TIME_MS", "250.5").timing.max_time_ms,
        250.5
    );
    assert_eq!(
        ok("KERNELGATE_TARGET_NOISE", "0.01").timing.target_noise,
        0.01
    );
    assert_eq!(ok("KERNELGATE_HOLD_US", "50").timing.hold_us, 50.0);
    assert_eq!(ok("KERNELGATE_SOAK_MS", "0").timing.soak_ms, 0.0);
    assert_eq!(ok("KERNELGATE_SOAK_MS", "1500").timing.soak_ms, 1500.0);
    for v in ["1", "true", "yes"] {
        assert!(ok("KERNELGATE_ADAPTIVE_BATCH", v).adaptive_batch, "{v}");
    }
    assert!(!ok("KERNELGATE_ADAPTIVE_BATCH", "0").adaptive_batch);
    assert_eq!(ok("KERNELGATE_BATCH", "1").timing.batch, Some(1));
    assert_eq!(ok("KERNELGATE_BATCH", "256").timing.batch, Some(256));
    assert_eq!(ok("KERNELGATE_DEVICE_CHECK_MB", "0").device_check_bytes, 0);
    assert_eq!(
        ok("KERNELGATE_DEVICE_CHECK_MB", "3").device_check_bytes,
        3 << 20
    );
    assert_eq!(ok("KERNELGATE_SPIN_SCALE", "1.10").spin_scale, 1.1);
    assert_eq!(ok("KERNELGATE_FLOOR_US", "0").floor_us, 0.0);
    assert_eq!(ok("KERNELGATE_FLOOR_US", "2.5").floor_us, 2.5);
    assert_eq!(
        ok("KERNELGATE_FLOOR_US", "").floor_us,
        kernelgate::config::DEFAULT_FLOOR_US
    );
    for v in ["1", "true", "yes"] {
        assert!(ok("KERNELGATE_MACHINE_FACTOR", v).machine_factor, "{v}");
    }
    for v in ["0", "false", "no", ""] {
        assert!(!ok("KERNELGATE_MACHINE_FACTOR", v).machine_factor, "{v:?}");
    }
    let c = ok("KERNELGATE_BASE", "HEAD~1");
    assert_eq!(c.base.as_deref(), Some("HEAD~1"));
    assert_eq!(c.base_kernels, None, "materialised later, by resolve_base");
    assert_eq!(ok("KERNELGATE_BASE", "").base, None);
    for v in ["1", "true", "yes"] {
        assert!(ok("UPDATE_BASELINES", v).update_baselines, "{v}");
        assert!(ok("KERNELGATE_STRICT", v).strict, "{v}");
    }
    assert!(!ok("UPDATE_BASELINES", "1").append_baselines);
    // UPDATE_BASELINES=append updates too, merging rounds into the stored entries.
    let c = ok("UPDATE_BASELINES", "append");
    assert!(c.update_baselines && c.append_baselines);
    env_err("KERNELGATE_STRICT", "append", "expected 1 or 0");
    for v in ["0", "false", "no", ""] {
        assert!(!ok("UPDATE_BASELINES", v).update_baselines, "{v:?}");
        assert!(!ok("UPDATE_BASELINES", v).append_baselines, "{v:?}");
        assert!(!ok("KERNELGATE_STRICT", v).strict, "{v:?}");
    }
    // An empty value is the same as unset.
    assert_eq!(ok("KERNELGATE_TOLERANCE_PCT", "").tolerance_pct, None);
    assert_eq!(ok("KERNELGATE_SUITE", "").suite, "default");
    assert_eq!(
        ok("KERNELGATE_BASELINE_DIR", "").baseline_dir,
        Path::new("/proj/baselines")
    );

    // Errors: each names the variable, its value and what is wrong.
    for v in ["abc", "5%", "0x10"] {
        env_err("KERNELGATE_TOLERANCE_PCT", v, "not a number");
    }
    for v in ["0", "-5", "1000", "NaN", "inf"] {
        env_err(
            "KERNELGATE_TOLERANCE_PCT",
            v,
            "must be a positive percentage",
        );
    }
    for v in ["maybe", "on", "2", "TRUE"] {
        env_err("UPDATE_BASELINES", v, "expected 1 or 0");
        env_err("KERNELGATE_STRICT", v, "expected 1 or 0");
    }
    env_err("KERNELGATE_SEED", "abc", "not a number");
    env_err("KERNELGATE_SEED", "-1", "not a number");
    env_err("KERNELGATE_DEVICE", "-1", "not a number");
    env_err("KERNELGATE_DEVICE", "gpu0", "not a number");
    env_err(
        "KERNELGATE_DEVICES",
        "0,x",
        "\"x\" is not a device ordinal (expected `all` or a comma list of device ordinals such as 0,1)",
    );
    env_err("KERNELGATE_DEVICES", "0,0", "device 0 is listed twice");
    env_err(
        "KERNELGATE_DEVICES",
        "0,,1",
        "empty entry in the device list (expected `all` or a comma list of device ordinals such as 0,1)",
    );
    let e = with("KERNELGATE_DEVICES", "0,x").unwrap_err().to_string();
    assert!(
        e.starts_with("environment variable KERNELGATE_DEVICES=\"0,x\": "),
        "{e}"
    );
    env_err("KERNELGATE_EXCLUSIVE_TIMING", "maybe", "expected 1 or 0");
    env_err("KERNELGATE_MIN_SAMPLES", "1.5", "not a number");
    env_err("KERNELGATE_MAX_SAMPLES", "lots", "not a number");
    env_err("KERNELGATE_WARMUP_MS", "fast", "not a number");
    for var in [
        "KERNELGATE_WARMUP_MS",
        "KERNELGATE_MAX_TIME_MS",
        "KERNELGATE_TARGET_NOISE",
        "KERNELGATE_SOAK_MS",
    ] {
        for v in ["-1", "NaN", "inf", "1e300"] {
            env_err(var, v, "must be a finite number ≥ 0");
        }
    }
    for v in ["0", "-1", "inf", "NaN"] {
        env_err("KERNELGATE_SPIN_SCALE", v, "must be a positive factor");
    }
    for v in ["-1", "NaN", "20000"] {
        env_err("KERNELGATE_HOLD_US", v, "must be between 0 and 10000 µs");
    }
    env_err("KERNELGATE_DEVICE_CHECK_MB", "big", "not a number");
    env_err("KERNELGATE_SOAK_MS", "long", "not a number");
    env_err("KERNELGATE_ADAPTIVE_BATCH", "maybe", "expected 1 or 0");
    for v in ["0", "257"] {
        env_err(
            "KERNELGATE_BATCH",
            v,
            "must be between 1 (every launch timed alone) and 256 launches per sample",
        );
    }
    env_err("KERNELGATE_BATCH", "-1", "not a number");
    env_err("KERNELGATE_BATCH", "two", "not a number");
    env_err("KERNELGATE_SPIN_SCALE", "x", "not a number");
    for v in ["-1", "-0.001", "NaN", "inf", "-inf"] {
        env_err(
            "KERNELGATE_FLOOR_US",
            v,
            "must be a finite number of µs ≥ 0",
        );
    }
    env_err("KERNELGATE_FLOOR_US", "0.5us", "not a number");
    for v in ["maybe", "on", "2"] {
        env_err("KERNELGATE_MACHINE_FACTOR", v, "expected 1 or 0");
    }
    // The error names the variable.
    let e = with("KERNELGATE_FLOOR_US", "-1").unwrap_err().to_string();
    assert_eq!(
        e,
        "environment variable KERNELGATE_FLOOR_US=\"-1\": must be a finite number of µs ≥ 0"
    );

    // A profiler attached (Nsight Compute / Systems set CUDA_INJECTION64_PATH): recorded, and
    // no baselines are written under it.
    let c = with("KERNELGATE_SUITE", "x").unwrap();
    assert_eq!((c.profiler_notice(), c.profiler), (None, None));
    let c = with("CUDA_INJECTION64_PATH", "/opt/ncu/libInjection.so").unwrap();
    assert_eq!(
        c.profiler.as_deref(),
        Some("CUDA_INJECTION64_PATH=/opt/ncu/libInjection.so")
    );
    // Nsight Compute 2025.3 sets these instead (seen on the device).
    let c = with(
        "NV_COMPUTE_PROFILER_PERFWORKS_DIR",
        "/opt/nvidia/nsight-compute/x",
    )
    .unwrap();
    assert_eq!(
        c.profiler.as_deref(),
        Some("NV_COMPUTE_PROFILER_PERFWORKS_DIR=/opt/nvidia/nsight-compute/x")
    );
    assert_eq!(
        c.profiler_notice().as_deref(),
        Some(
            "a profiler is attached (NV_COMPUTE_PROFILER_PERFWORKS_DIR=/opt/nvidia/nsight-compute/x): \
             latencies are measured but not gated against baselines (verdict `ungated`)"
        )
    );
    assert!(with("NV_NSIGHT_INJECTION_TRANSPORT_TYPE", "uds")
        .unwrap()
        .profiler
        .is_some());
    for update in ["1", "append"] {
        clear();
        std::env::set_var("CUDA_INJECTION64_PATH", "/opt/ncu/libInjection.so");
        std::env::set_var("UPDATE_BASELINES", update);
        let e = Config::from_env_with_root(Path::new("/proj")).unwrap_err();
        let shown = e.to_string();
        assert!(
            shown.starts_with(&format!(
                "environment variable UPDATE_BASELINES=\"{update}\""
            )) && shown.contains("CUDA_INJECTION64_PATH=/opt/ncu/libInjection.so")
                && shown.contains("never written as baselines"),
            "{shown}"
        );
    }
    clear();

    // The root: KERNELGATE_ROOT, else the current directory when it has fixtures/.
    clear();
    std::env::set_var("KERNELGATE_ROOT", "/somewhere/else");
    assert_eq!(
        kernelgate::config::find_root(),
        Path::new("/somewhere/else")
    );
    let c = Config::from_env().unwrap();
    assert_eq!(c.root, Path::new("/somewhere/else"));
    assert_eq!(c.baseline_dir, Path::new("/somewhere/else/baselines"));
    clear();
    // cargo runs integration tests in the package root, which has fixtures/.
    assert_eq!(
        kernelgate::config::find_root(),
        std::env::current_dir().unwrap()
    );
    assert!(Config::from_env().unwrap().suite_path().is_file());
    clear();
}

#[test]
fn timing_policy_defaults() {
    let p = Policy::default();
    assert_eq!(
        (p.warmup_ms, p.min_samples, p.max_samples, p.max_time_ms),
        (50.0, 20, 2000, 2000.0)
    );
    assert_eq!(p.target_noise, 0.005);
    assert!(p.min_samples <= p.max_samples);
    assert!(p.hang_limit_s > 0.0 && p.min_sample_us > 0.0 && p.max_batch >= 2);
}
