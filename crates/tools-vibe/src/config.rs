//! The `[vibe]` configuration and the worker tiers it names (VIBE-7).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Which kind of worker (VIBE-7).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum WorkerTier {
    /// Mechanical work with a clear spec.
    Fast,
    /// Design, judgment, or reviewing a fast worker's output.
    Good,
}

impl WorkerTier {
    /// Its name, as the config and the environment spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkerTier::Fast => "fast",
            WorkerTier::Good => "good",
        }
    }
}

/// The `[vibe]` configuration.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct VibeConfig {
    /// Vibe mode on (also `serve --vibe`).
    pub enabled: bool,
    /// The command line of a `fast` worker.
    pub fast: Vec<String>,
    /// The command line of a `good` worker.
    pub good: Vec<String>,
    /// How many workers run at once; further spawns queue.
    pub max_workers: usize,
    /// How many workers one run may spawn.
    pub max_spawns: usize,
    /// Wall-clock limit of one run of a `fast` worker, in seconds.
    pub fast_timeout_seconds: u64,
    /// Wall-clock limit of one run of a `good` worker, in seconds.
    pub good_timeout_seconds: u64,
    /// A worker that prints nothing for this long is stopped as stalled, in seconds.
    pub stall_seconds: u64,
    /// Where transcripts and results go (outside the workspace); default: the platform's state
    /// folder, `$XDG_STATE_HOME/agent-tools` or `~/.local/state/agent-tools`.
    pub state_dir: Option<PathBuf>,
}

impl Default for VibeConfig {
    fn default() -> Self {
        VibeConfig {
            enabled: false,
            fast: Vec::new(),
            good: Vec::new(),
            max_workers: 4,
            max_spawns: 64,
            fast_timeout_seconds: 30 * 60,
            good_timeout_seconds: 2 * 60 * 60,
            stall_seconds: 10 * 60,
            state_dir: None,
        }
    }
}

impl VibeConfig {
    pub(crate) fn command(&self, tier: WorkerTier) -> &[String] {
        match tier {
            WorkerTier::Fast => &self.fast,
            WorkerTier::Good => &self.good,
        }
    }

    pub(crate) fn timeout(&self, tier: WorkerTier) -> Duration {
        Duration::from_secs(match tier {
            WorkerTier::Fast => self.fast_timeout_seconds,
            WorkerTier::Good => self.good_timeout_seconds,
        })
    }

    /// The state folder to use when none is configured: the run's default
    /// ([`tools_core::default_state_dir`]).
    pub fn default_state_dir() -> PathBuf {
        tools_core::default_state_dir()
    }
}
