//! `cargo xtask bench ast|lsp`: each family's benchmark against its peer, in one run.

mod ast;
mod lsp;

use anyhow::bail;

pub(crate) fn run(what: &str) -> anyhow::Result<()> {
    match what {
        "ast" => ast::run(),
        "lsp" => lsp::run(),
        _ => bail!("unknown benchmark `{what}`: the benchmarks are ast and lsp"),
    }
}
