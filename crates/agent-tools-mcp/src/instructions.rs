//! What the server tells every client up front (`instructions`): the surface, the approval
//! policy, the families and how cards and long calls appear.

use std::sync::Arc;

use tools_core::{ApprovalPolicy, Surface};

use crate::flight;
use crate::server::{RunFactory, chain};

/// What the server tells every client up front: the surface, the approval policy and how
/// cards and long calls appear.
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
                registry
                    .families()
                    .map(|family| format!("{} ({})", family.tools.join(", "), family.about))
                    .collect(),
                registry
                    .specs()
                    .filter(|spec| spec.may_run_long)
                    .map(|spec| spec.name)
                    .collect(),
            )
        }
        Err(error) => (vec![format!("none: {}", chain(&*error))], Vec::new()),
    };
    let options = runs.options();
    let surface = match options.surface {
        Surface::Full => "full: read, write and exec tools are listed",
        Surface::Plan => "plan: only read tools are listed",
        Surface::Readonly => "readonly: only read tools are listed",
    };
    let approval = match options.approval {
        ApprovalPolicy::Ask => {
            "ask: each write or exec call first shows the person a permission card (an \
             elicitation form); a client that takes no elicitation has no approver, so \
             those calls are refused at once"
        }
        ApprovalPolicy::Allow => "allow: write and exec calls run without a card",
        ApprovalPolicy::Deny => "deny: every write and exec call is refused",
    };
    let long = match long.is_empty() {
        true => String::new(),
        false => format!(
            "\nCalls of {} may run long: they report progress to a call that sent a \
             progress token, at least every {} s, and become tasks (io.modelcontextprotocol/tasks) when a \
             2026-07-28 request declares that extension: after {} s, or at once when they \
             raise a card; a 2025-11-25 client gets them as tasks when it sends params.task \
             (tools with execution.taskSupport), else as results when they end.",
            long.join(", "),
            flight::HEARTBEAT.as_secs(),
            flight::TASK_GRACE.as_secs()
        ),
    };
    format!(
        "Built-in tools bound to one workspace; paths are relative to its root, and \
         locations print as path:LINE.\n\
         Surface {surface}.\nApproval {approval}.\n\
         Families: {}.\n\
         Cards: a 2025-11-25 client gets elicitation/create requests; a 2026-07-28 client \
         gets the call answered with resultType \"input_required\" and re-sends it with \
         inputResponses and the same requestState.{long}",
        families.join("; "),
    )
}
