//! `cargo xtask bench ast|lsp|diagnostics`: each family's benchmark against its peer, in one run.

mod ast;
mod diagnostics;
pub(crate) mod lsp;

use anyhow::bail;

pub(crate) fn run(what: &str) -> anyhow::Result<()> {
    match what {
        "ast" => ast::run(),
        "lsp" => lsp::run(),
        "diagnostics" => diagnostics::run(),
        _ => bail!("unknown benchmark `{what}`: the benchmarks are ast, lsp and diagnostics"),
    }
}
