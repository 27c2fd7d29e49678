//! What the server tells every client up front (`instructions`), written for the model: some
//! clients make it the description the model reads on every turn (Codex), so it says only
//! what the tools are for, whether writes ask first and which calls may run long, in about
//! 400 characters. How cards and long calls travel in each protocol revision is for client
//! authors, in the README.

use std::sync::Arc;

use tools_core::{ApprovalPolicy, Surface};

use crate::server::{RunFactory, chain};

/// What the server tells every client up front: the families, the surface and approval
/// policy, and the calls that may run long.
pub(crate) fn instructions(runs: &dyn RunFactory, conversation: &str) -> String {
    // The families and long calls of the run this server builds, from each tool's spec:
    // a family the config leaves off (vibe) is not named. Built with a question port, as
    // for a client that takes cards, so `ask_user` is named when the build has it.
    let port = Arc::new(tools_core::NoHuman {
        reason: "listing the families only".to_owned(),
    });
    let (families, long) = match runs.dispatcher(Some(port), conversation) {
        Ok(dispatcher) => {
            let registry = dispatcher.registry();
            (
                registry.families().map(|family| family.about).collect(),
                registry
                    .specs()
                    .filter(|spec| spec.may_run_long)
                    .map(|spec| spec.name)
                    .collect::<Vec<_>>(),
            )
        }
        Err(error) => (vec!["none"], {
            tracing::warn!("no run to describe: {}", chain(&*error));
            Vec::new()
        }),
    };
    let options = runs.options();
    let surface = match options.surface {
        Surface::Full => "",
        Surface::Plan | Surface::Readonly => " Only read tools are listed.",
    };
    let approval = match (options.surface, options.approval) {
        (Surface::Plan | Surface::Readonly, _) => "",
        (Surface::Full, ApprovalPolicy::Ask) => " Write and exec calls first ask the person.",
        (Surface::Full, ApprovalPolicy::Allow) => " Write and exec calls run without asking.",
        (Surface::Full, ApprovalPolicy::Deny) => " Write and exec calls are refused.",
    };
    let long = match long.as_slice() {
        [] => String::new(),
        [one] => format!(" {one} may run long and reports progress."),
        [first @ .., last] => format!(
            " {} and {last} may run long and report progress.",
            first.join(", ")
        ),
    };
    format!(
        "Built-in tools for one workspace: paths are relative to its root, locations print \
         as path:LINE. For {}.{surface}{approval}{long}",
        families.join(", "),
    )
}
