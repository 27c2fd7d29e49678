//! The language-server family (SPEC section 2): `lsp` asks the project's language server
//! about code, `lsp_rename` renames through it, `lsp_code_action` applies a fix it offers. Both sit on an [`LspSupervisor`], which
//! decides at call time which servers can run here (LSP-2), starts one per (server, root)
//! on first use, restarts crashed ones within a budget, and keeps their documents in sync
//! with the disk.

mod apply;
mod checker;
mod config;
mod edit;
mod error;
mod family;
mod leftovers;
mod lsp;
mod lsp_code_action;
mod lsp_rename;
mod on_write;
mod position;
mod render;
mod select;
mod stubs;
mod supervisor;

pub use crate::{
    config::{LspConfig, OnWriteConfig},
    error::{Error, Result},
    leftovers::{Leftover, LeftoverKind},
    lsp::{
        ActionItem, DiagnosticItem, Lsp, LspInput, LspOutput, Operation, ServerReport,
        SessionReport, SeverityFilter, SymbolItem,
    },
    lsp_code_action::{LspCodeAction, LspCodeActionInput, LspCodeActionOutput},
    lsp_rename::{LspRename, LspRenameInput, LspRenameOutput, RenamedFile},
    on_write::DiagnosticsOnWrite,
    supervisor::LspSupervisor,
};

pub use crate::family::LspFamily;

// The server table's configuration belongs to the client machinery; the umbrella and the
// config file name it through this crate.
pub use tools_lsp_client::{CheckerFormat, ServerOverride};

use std::sync::Arc;

use tools_core::RegistryBuilder;

/// Registers `lsp` (read tier), `lsp_rename` and `lsp_code_action` (write tier) over `supervisor`, and wraps
/// every writing tool with diagnostics on write (LSP-6) unless the config turns it off. The
/// umbrella calls it only when a supervisor is bound to the run (LSP-1, CORE-1); whether any
/// server can run is decided later, at call time (CORE-2).
pub fn register(builder: &mut RegistryBuilder, supervisor: &LspSupervisor) {
    builder
        .register(Lsp::new(supervisor.clone()))
        .register(LspRename::new(supervisor.clone()))
        .register(LspCodeAction::new(supervisor.clone()))
        .wrap(Arc::new(DiagnosticsOnWrite::new(supervisor.clone())));
    builder
        .run()
        .on_shutdown("language servers", Arc::new(supervisor.clone()));
}
