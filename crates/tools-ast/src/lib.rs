//! Structural search and staged rewrites (SPEC section 3): `ast_grep` finds code by shape,
//! `ast_edit` stages a rewrite without writing, and `resolve` writes a staged edit all or
//! nothing, or drops it.
//!
//! Patterns are compiled by parsing the fragment inside a ladder of contexts (`compile.rs`);
//! files are walked in parallel and parsed only when they contain the pattern's literals
//! (`search.rs`), through the run's syntax index, which keeps texts, trees and where each
//! node kind is for the next search (`index.rs`); a large Python file is parsed in pieces on
//! every core (`parse.rs`). A run may fill the index in the background as it starts
//! (`[ast] prewarm`, `prewarm.rs`).

mod ast_edit;
mod ast_grep;
mod compile;
mod family;
mod found;
mod index;
mod language;
mod parse;
mod prewarm;
mod resolve;
mod search;
mod staging;

pub use crate::family::AstFamily;

use std::sync::Arc;

pub use crate::{
    ast_edit::{AstEdit, AstEditInput, AstEditOutput, EditedFile},
    ast_grep::{AstGrep, AstGrepInput, AstGrepOutput, AstMatch},
    index::{AstConfig, DEFAULT_CACHE_MB, IndexStats, SyntaxIndex},
    prewarm::{Prewarm, PrewarmReport},
    resolve::{Resolve, ResolveAction, ResolveInput, ResolveOutput},
    search::{SearchOptions, Span, find_spans},
};

use tools_core::RegistryBuilder;

/// Registers `ast_grep`, `ast_edit` and `resolve`; the grammars are compiled in, so the
/// family's resource is always there once the feature is on (CORE-1). `index` is the run's
/// syntax index, which both searching tools share.
pub fn register(builder: &mut RegistryBuilder, options: SearchOptions, index: Arc<SyntaxIndex>) {
    let store = Arc::new(staging::EditStore::default());
    builder
        .register(ast_grep::AstGrep {
            options,
            index: Arc::clone(&index),
        })
        .register(ast_edit::AstEdit {
            store: Arc::clone(&store),
            options,
            index,
        })
        .register(resolve::Resolve { store });
}
