//! The crate's one error type, and the one place where the client machinery's errors become
//! what the model reads. tools-lsp-client returns data (the server, the root and the file as
//! paths on disk, the request, the cause); here the paths become workspace-relative and each
//! error says what to do next: which `lsp` operation helps, or which setting of
//! `agent-tools.toml` to change.

use std::path::Path;

use tools_core::{ToolError, Workspace};
use tools_lsp_client::{Error as ClientError, LastError, MissingBinary};

/// A failure of the language-server family outside a tool's own answer.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// A setting outside the server table is unusable.
    #[error("{setting} in the config: {problem}")]
    Setting { setting: String, problem: String },
    /// The client machinery failed: the server table cannot be built from the config. No
    /// workspace is at hand here, so a path would show whole (these errors name none).
    #[error("{}", explain(.0, &|path: &Path| path.display().to_string()))]
    Client(#[from] ClientError),
}

/// The result type of tools-lsp's fallible machinery.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::failed(error.to_string())
    }
}

/// A result of the client machinery, turned into what the model reads.
pub(crate) trait ForModel<T> {
    /// The error as the model reads it, with paths shown relative to `workspace`.
    fn for_model(self, workspace: &Workspace) -> std::result::Result<T, ToolError>;
}

impl<T> ForModel<T> for std::result::Result<T, ClientError> {
    fn for_model(self, workspace: &Workspace) -> std::result::Result<T, ToolError> {
        self.map_err(|error| ToolError::failed(explain(&error, &|path| workspace.display(path))))
    }
}

/// A client error as the model reads it: the server, the root or file as `shown` writes a
/// path, and what to do next.
pub(crate) fn explain(error: &ClientError, shown: &dyn Fn(&Path) -> String) -> String {
    match error {
        ClientError::Config { server, problem } => {
            format!("[lsp.servers.{server}] in the config: {problem}")
        }
        ClientError::BuiltinTable { source } => format!(
            "the built-in server table (servers.toml) is invalid, which is a bug of agent-tools; \
             add the servers under [lsp.servers.NAME] in the config meanwhile: {source}"
        ),
        ClientError::NoServer { path, known } => {
            let known: Vec<String> = known
                .iter()
                .map(|spec| format!("{} ({})", spec.name, spec.extension_list()))
                .collect();
            format!(
                "no language server handles {}: the servers known here are {}; add one under \
                 [lsp.servers.NAME] in agent-tools.toml",
                shown(path),
                known.join(", ")
            )
        }
        ClientError::NoRoot {
            server,
            path,
            markers,
        } => format!(
            "{server} is not usable for {}: none of its root markers ({}) was found beside \
             the file or in a folder above it inside the workspace, so it has no project to \
             work in; call `lsp` with operation `status` to see every server",
            shown(path),
            markers.join(", ")
        ),
        ClientError::NoBinary {
            server,
            root,
            missing,
        } => format!(
            "{server} cannot start for root {}: {}",
            shown(root),
            missing_binary(server, missing)
        ),
        // The refusal says what is wrong and what to do, as the run wrote it; it names the
        // whole root, as the operator who fixes the sandbox sees it.
        ClientError::Sandbox { server, refusal } => format!("{server} cannot start: {refusal}"),
        ClientError::Reloaded { server } => {
            format!("{server} was reloaded while it was starting; call again")
        }
        ClientError::Spawn {
            server,
            command,
            root,
            message,
            ..
        } => format!(
            "cannot start {server} (`{command}`) in {}: {message}",
            shown(root)
        ),
        ClientError::Timeout {
            server,
            root,
            method,
            seconds,
        } => format!(
            "{server} (root {}) did not answer `{method}` within {seconds}s; the request was \
             cancelled. Try again, or call `lsp` with operation `reload` if it keeps happening",
            shown(root)
        ),
        ClientError::Stopped {
            server,
            root,
            method,
            ended,
        } => format!(
            "{server} (root {}) stopped while answering `{method}`{ended}",
            shown(root)
        ),
        ClientError::RestartBudget {
            server,
            root,
            crashes,
            last_error,
            stderr_tail,
        } => format!(
            "{server} (root {}) crashed {crashes} times, which uses up its restart budget; \
             call `lsp` with operation `reload` to start it again{}",
            shown(root),
            crash_details(last_error.as_deref(), stderr_tail, shown)
        ),
        ClientError::NotAbsolute { path } => format!("{} is not an absolute path", shown(path)),
        ClientError::NotUtf8 { path } => format!("{} is not UTF-8 text", shown(path)),
        ClientError::Read { path, source } => format!("cannot read {}: {source}", shown(path)),
        // Plain facts, with no path to show and nothing better to suggest.
        ClientError::Response { .. } | ClientError::SupervisorGone => error.to_string(),
    }
}

/// Why a server's binary does not run here, and how to install or configure it.
pub(crate) fn missing_binary(server: &str, missing: &MissingBinary) -> String {
    let install = match &missing.install_hint {
        Some(hint) => hint.clone(),
        None => format!("install it, or fix [lsp.servers.{server}] command in the config"),
    };
    format!(
        "{missing}; {install}, or set `command` under [lsp.servers.{server}] in agent-tools.toml"
    )
}

/// A session's last error as the model reads it.
pub(crate) fn last_error(error: &LastError, shown: &dyn Fn(&Path) -> String) -> String {
    match error {
        LastError::Crashed(reason) => format!("crashed: {reason}"),
        LastError::StartFailed(error) => format!("start failed: {}", explain(error, shown)),
        LastError::Unusable(error) => explain(error, shown),
        LastError::Reported(message) => message.clone(),
    }
}

/// `; the last error: …; its last stderr lines: …`, for a server that used up its budget.
fn crash_details(
    last: Option<&LastError>,
    stderr_tail: &[String],
    shown: &dyn Fn(&Path) -> String,
) -> String {
    let mut details = String::new();
    if let Some(error) = last {
        details.push_str(&format!("; the last error: {}", last_error(error, shown)));
    }
    // A start that failed because the server stopped already quotes the tail.
    let quoted = matches!(
        last,
        Some(LastError::StartFailed(ClientError::Stopped { ended, .. }))
            if !ended.stderr_tail.is_empty()
    );
    if !stderr_tail.is_empty() && !quoted {
        details.push_str(&format!(
            "; its last stderr lines: {}",
            stderr_tail.join(" | ")
        ));
    }
    details
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use tools_lsp_client::{ClientConfig, Ended};

    use super::*;

    fn shown(path: &Path) -> String {
        path.strip_prefix("/w")
            .map(|relative| match relative.as_os_str().is_empty() {
                true => ".".to_owned(),
                false => relative.display().to_string(),
            })
            .unwrap_or_else(|_| path.display().to_string())
    }

    #[test]
    fn prod_6_a_new_server_without_a_command_names_its_table_in_the_config() {
        let mut config = crate::LspConfig::default().client();
        config.servers.insert(
            "zls".into(),
            serde_json::from_value(
                serde_json::json!({ "extensions": ["zig"], "markers": ["build.zig"] }),
            )
            .unwrap(),
        );
        let error = Error::from(ClientConfig::validate(&config).unwrap_err());
        assert_eq!(
            error.to_string(),
            "[lsp.servers.zls] in the config: `zls` is not a built-in server, so it needs \
             `command` (a new server needs `command`, `extensions` and `markers`)"
        );
    }

    #[test]
    fn lsp_2_a_missing_binary_says_how_to_install_it_or_where_to_configure_it() {
        let missing = MissingBinary {
            programs: vec![("gopls".into(), false)],
            searched: ".venv/bin, venv/bin, node_modules/.bin and PATH".into(),
            proxies: Vec::new(),
            install_hint: Some(
                "install it with `go install golang.org/x/tools/gopls@latest`".into(),
            ),
        };
        let error = ClientError::NoBinary {
            server: "gopls".into(),
            root: PathBuf::from("/w/svc"),
            missing: Box::new(missing.clone()),
        };
        assert_eq!(
            explain(&error, &shown),
            "gopls cannot start for root svc: its binary was not found: looked for `gopls` in \
             .venv/bin, venv/bin, node_modules/.bin and PATH; install it with \
             `go install golang.org/x/tools/gopls@latest`, or set `command` under \
             [lsp.servers.gopls] in agent-tools.toml"
        );
        let added = MissingBinary {
            install_hint: None,
            ..missing
        };
        assert!(missing_binary("zls", &added).ends_with(
            "; install it, or fix [lsp.servers.zls] command in the config, or set `command` \
             under [lsp.servers.zls] in agent-tools.toml"
        ));
    }

    #[test]
    fn lsp_2_a_spent_restart_budget_says_how_to_start_it_again_and_quotes_the_tail_once() {
        let stopped = ClientError::Stopped {
            server: "clangd".into(),
            root: PathBuf::from("/w"),
            method: "initialize".into(),
            ended: Ended {
                reason: Some("the process ended (exit status: 1)".into()),
                stderr_tail: vec!["boom".into()],
            },
        };
        let budget = |last_error: LastError| ClientError::RestartBudget {
            server: "clangd".into(),
            root: PathBuf::from("/w"),
            crashes: 3,
            last_error: Some(Box::new(last_error)),
            stderr_tail: vec!["boom".into()],
        };
        insta::assert_snapshot!(explain(&budget(LastError::StartFailed(stopped)), &shown), @"clangd (root .) crashed 3 times, which uses up its restart budget; call `lsp` with operation `reload` to start it again; the last error: start failed: clangd (root .) stopped while answering `initialize`: the process ended (exit status: 1); its last stderr lines: boom");
        insta::assert_snapshot!(explain(&budget(LastError::Crashed("the process ended".into())), &shown), @"clangd (root .) crashed 3 times, which uses up its restart budget; call `lsp` with operation `reload` to start it again; the last error: crashed: the process ended; its last stderr lines: boom");
    }
}
