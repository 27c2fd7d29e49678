//! `cargo xtask bench ast|lsp|diagnostics|eval|debug|http|tokens`: each family's benchmark against its peer, in one run.

mod ast;
mod debug;
mod diagnostics;
mod eval;
mod http;
pub(crate) mod lsp;
mod tokens;

use std::process::Command;

use anyhow::{Context, bail};

pub(crate) fn run(what: &str) -> anyhow::Result<()> {
    match what {
        "ast" => ast::run(),
        "lsp" => lsp::run(),
        "diagnostics" => diagnostics::run(),
        "eval" => eval::run(),
        "debug" => debug::run(),
        "http" => http::run(),
        "tokens" => tokens::run(),
        _ => bail!(
            "unknown benchmark `{what}`: the benchmarks are ast, lsp, diagnostics, eval, debug, http and tokens"
        ),
    }
}

/// In a debug build, runs `cargo xtask bench WHAT` again as a release build and returns its
/// outcome; in a release build, `None` (go ahead and measure). `XTASK_BENCH_DEBUG=1` measures
/// the debug build as it is, for a quick look while the release build would take too long.
pub(crate) fn in_release(what: &str) -> Option<anyhow::Result<()>> {
    if !cfg!(debug_assertions) || std::env::var("XTASK_BENCH_DEBUG").is_ok_and(|v| v == "1") {
        return None;
    }
    let status = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()))
        .args([
            "run",
            "--release",
            "--quiet",
            "-p",
            "xtask",
            "--",
            "bench",
            what,
        ])
        .current_dir(crate::project_root())
        .status()
        .context("cannot start the release build of xtask");
    Some(match status {
        Ok(status) if status.success() => Ok(()),
        Ok(status) => Err(anyhow::anyhow!("the release benchmark failed ({status})")),
        Err(error) => Err(error),
    })
}
