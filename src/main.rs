//! `kernelgate`: the command-line side of the harness (see [`kernelgate::cli`] and `README.md`).

fn main() -> std::process::ExitCode {
    kernelgate::cli::main()
}
