//! The crate's one error type: why the roster could not do what a tool asked. Each message is
//! written for the model — it names the worker, the file or the setting, and says what to do
//! instead — and a failed write keeps its cause until the tool turns the error into its
//! answer.

use std::path::PathBuf;

use tools_core::ToolError;

use crate::config::WorkerTier;

/// A request the roster could not carry out.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Error {
    /// `[vibe]` names no command for workers of this tier.
    #[error(
        "no command is configured for `{tier}` workers; add one to agent-tools.toml, e.g.\n\
         [vibe]\n{tier} = [\"claude\", \"-p\", \"--model\", \"haiku\"]\n\
         (any command that reads the brief on stdin and prints its result; see the \
         README's worker profiles)",
        tier = tier.as_str()
    )]
    NoCommand { tier: WorkerTier },
    /// The run's sandbox was refused as the run began (EVAL-9): no worker starts through it
    /// or around it, and its own words say why.
    #[error("no worker can start: {0}")]
    Sandbox(#[source] std::sync::Arc<tools_process::SandboxRefusal>),
    /// The run spawned as many workers as `[vibe] max_spawns` allows.
    #[error(
        "this run has spawned {max_spawns} workers, its limit ([vibe] max_spawns); reuse one \
         with vibe_send, or raise the limit"
    )]
    SpawnLimit { max_spawns: usize },
    /// The worker's folder under the state directory could not be made.
    #[error(
        "cannot create the worker's folder {}: {source}; set [vibe] state_dir to a writable \
         folder",
        dir.display()
    )]
    CreateFolder {
        dir: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The brief of a new worker could not be written.
    #[error(
        "cannot write the worker's brief to {}: {source}; set [vibe] state_dir to a writable \
         folder",
        path.display()
    )]
    WriteBrief {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The longer brief of `vibe_send` could not be written; the worker goes on as it was.
    #[error(
        "cannot write the longer brief to {}: {source}; the message was not sent and the \
         worker goes on as it was",
        path.display()
    )]
    WriteMessage {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The worker was removed while it was being spawned.
    #[error("the worker vanished while it was spawned")]
    Vanished,
    /// No worker has this id; `known` are the ids there are (`w1`, `w2`).
    #[error("there is no worker w{id}: {}", known_workers(known))]
    UnknownWorker { id: u64, known: Vec<String> },
}

/// The crate's result type.
pub(crate) type Result<T, E = Error> = std::result::Result<T, E>;

/// The answer the tool gives: the model reads the message, cause included.
impl From<Error> for ToolError {
    fn from(error: Error) -> Self {
        ToolError::Failed(error.to_string())
    }
}

fn known_workers(known: &[String]) -> String {
    match known.is_empty() {
        true => "none was spawned in this run".to_owned(),
        false => format!("the workers are {}", known.join(", ")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_say_what_to_do_instead() {
        assert_eq!(
            Error::UnknownWorker {
                id: 3,
                known: Vec::new()
            }
            .to_string(),
            "there is no worker w3: none was spawned in this run"
        );
        assert_eq!(
            Error::UnknownWorker {
                id: 3,
                known: vec!["w1".to_owned(), "w2".to_owned()]
            }
            .to_string(),
            "there is no worker w3: the workers are w1, w2"
        );
        assert_eq!(
            Error::NoCommand {
                tier: WorkerTier::Fast
            }
            .to_string(),
            "no command is configured for `fast` workers; add one to agent-tools.toml, e.g.\n\
             [vibe]\nfast = [\"claude\", \"-p\", \"--model\", \"haiku\"]\n\
             (any command that reads the brief on stdin and prints its result; see the \
             README's worker profiles)"
        );
        let denied = std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let error = Error::WriteMessage {
            path: PathBuf::from("w1/brief.txt"),
            source: denied,
        };
        assert!(std::error::Error::source(&error).is_some());
        assert_eq!(
            ToolError::from(error).to_string(),
            "cannot write the longer brief to w1/brief.txt: permission denied; the message was \
             not sent and the worker goes on as it was"
        );
    }
}
