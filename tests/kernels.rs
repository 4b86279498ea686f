//! The generated test target: one test per case of the configured suite
//! (`KERNELGATE_SUITE`, default `default`). Run `cargo test --test kernels -- --list`.

fn main() -> std::process::ExitCode {
    kernelgate::harness::main()
}
