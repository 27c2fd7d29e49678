//! The run's sandbox (`[sandbox] command`; EVAL-9), checked once as the run begins. A prefix
//! that cannot start anything here, or that maps the workspace to another path, does not stop
//! the run: it is logged at start and refused, so every tool that would start a process
//! answers with the same message — what is wrong, what the operator does about it — and the
//! tools that start none keep working. A model can then say what is wrong and still read and
//! edit; a run that refused to start would leave it with no tools and no reason.

use std::path::Path;

use tools_process::{Sandbox, SandboxProblem};

/// `sandbox`, checked for the workspace `root`: as it was when it works here, refused (with
/// what to do) when it does not. Logs the outcome either way.
pub(crate) fn checked(sandbox: Sandbox, root: &Path) -> Sandbox {
    match tools_process::probe_sandbox_blocking(&sandbox, root) {
        Ok(()) => {
            tracing::info!(sandbox = %sandbox.shown(), "every child starts inside the sandbox");
            sandbox
        }
        Err(problem) => {
            let advice = advice(&problem);
            let refused = sandbox.refuse(problem, advice);
            if let Some(refusal) = refused.refusal() {
                tracing::error!("{refusal}");
            }
            refused
        }
    }
}

/// What the operator does about `problem`, and what the tools do until then: the half of the
/// message only the run can write, since it knows where the prefix came from.
fn advice(problem: &SandboxProblem) -> String {
    let fix = match problem {
        SandboxProblem::CannotRun { .. } => "install it, or correct `command` under [sandbox] \
             in agent-tools.toml, then restart the run"
            .to_owned(),
        SandboxProblem::Fails { .. } => "if this is isolation that cannot nest (bubblewrap \
             inside a container without user namespaces), remove [sandbox] from \
             agent-tools.toml when the container already isolates the run, or enable user \
             namespaces (sysctl user.max_user_namespaces, and kernel.unprivileged_userns_clone \
             where it exists); otherwise correct `command` under [sandbox]; then restart the run"
            .to_owned(),
        SandboxProblem::MapsPaths { root, .. } => format!(
            "every path the tools report must be the same inside and outside, so bind the \
             workspace at its own path in `command` under [sandbox] (for bubblewrap, `--bind \
             {root} {root}`), then restart the run",
            root = root.display()
        ),
    };
    format!(
        "{fix}; until then nothing starts through it or around it: every tool that starts a \
         process (language servers, checkers, kernels, debug adapters, workers) answers with \
         this message, and the file tools keep working — tell the person running agent-tools"
    )
}
