//! Project automation: `cargo xtask codegen [--check]`, `cargo xtask setup`, `cargo xtask ci`,
//! `cargo xtask tidy`, `cargo xtask truth`, `cargo xtask image`, `cargo xtask container` and
//! `cargo xtask bench ast|lsp|diagnostics|eval|debug|http|tokens`.

mod bench;
mod ci;
mod codegen;
mod container;
mod dist;
mod image;
mod tidy;
mod truth;

use std::path::PathBuf;
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let outcome = match args.as_slice() {
        ["codegen"] => codegen::run(codegen::Mode::Write),
        ["codegen", "--check"] => codegen::run(codegen::Mode::Check),
        ["ci"] => ci::run(),
        ["setup"] => ci::setup(),
        ["dist"] => dist::run(),
        ["tidy"] => tidy::run(),
        ["sdist-check"] => ci::sdist_installs(&project_root()),
        ["bench", what] => bench::run(what),
        ["truth", rest @ ..] => truth::run(rest),
        ["image", rest @ ..] => image::run(rest),
        ["container", rest @ ..] => container::run(rest),
        _ => {
            eprintln!(
                "usage:\n  cargo xtask codegen [--check]   write (or check) docs/tools and docs/schemas\n  \
                 cargo xtask setup               install what the tests need and start the container engine\n  \
                 cargo xtask ci                  install what the tests need, then run every check and test\n  \
                 cargo xtask tidy                every SPEC ID cited in code or a test name, each written out\n  \
                 cargo xtask dist                the release wheel and sdist of the Python package, measured\n  \
                 cargo xtask sdist-check         pip install the sdist (dev profile) and use it, as ci does\n  \
                 cargo xtask truth               diagnostics on write against the checkers, on real projects\n  \
                 cargo xtask image               the container image (Containerfile), built from a Debian rootfs\n  \
                 cargo xtask container           serve --http in a real container, driven from the host, then stopped\n  \
                 cargo xtask bench ast           ast_grep against the ast-grep CLI on a real corpus\n  \
                 cargo xtask bench lsp           time rust-analyzer through the lsp tool on this workspace\n  \
                 cargo xtask bench diagnostics   diagnostics on write against the servers' own publishes\n  \
                 cargo xtask bench eval          eval's kernels against ipykernel: start and round trip\n  \
                 cargo xtask bench debug         the debug tool against a direct DAP client (debugpy, lldb-dap)\n  \
                 cargo xtask bench http          serve --http against serve on stdio: a call's round trip\n  \
                 cargo xtask bench tokens        what tools/list costs a model, per tool, in o200k tokens"
            );
            return ExitCode::from(2);
        }
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root (xtask lives one level below it).
pub(crate) fn project_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}
