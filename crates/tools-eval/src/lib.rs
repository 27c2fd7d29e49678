//! `eval`: persistent Python and JavaScript kernels (SPEC section 5, EVAL-1, EVAL-2, EVAL-3,
//! EVAL-4, EVAL-5, EVAL-6, EVAL-7, EVAL-8, EVAL-9).
//!
//! A kernel is a separate process (SPEC section 9: reset, killing a runaway cell, crash
//! isolation, the project's own interpreter, the sandbox), started through tools-process and
//! driven over its own stdin/stdout with JSON lines (EVAL-7). The kernel programs ship inside
//! this crate (`src/kernel/`) and are passed on the command line, written nowhere.
//!
//! **Architecture invariant:** tools-eval depends on tools-core and tools-process only; a
//! cell's `tool()` goes through the run's bridge (CORE-8), never to a tool directly.

mod eval;
mod family;
mod images;
mod kernel;
mod kernels;
mod transcript;

pub use crate::{
    eval::{Eval, EvalInput, EvalOutput, Language},
    images::ImageFile,
    kernels::Kernels,
};

pub use crate::family::EvalFamily;

use std::time::Duration;

use serde::Deserialize;
use tools_core::RegistryBuilder;

/// The bounds of a cell (EVAL-8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EvalOptions {
    /// How long a cell may print nothing before it is interrupted; time spent waiting for a
    /// `tool()` call does not count.
    pub idle_timeout: Duration,
    /// How long one cell may run in all.
    pub max_cell: Duration,
    /// How many bytes a cell may print before it is taken for a runaway loop and interrupted.
    pub max_output_bytes: u64,
}

/// The `[eval]` table of `agent-tools.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct EvalConfig {
    /// Seconds a cell may print nothing before it is interrupted (default 300).
    pub idle_timeout_seconds: u64,
    /// Seconds one cell may run in all (default 3600).
    pub max_cell_seconds: u64,
    /// Bytes a cell may print before it is interrupted (default 8 MiB).
    pub max_output_bytes: u64,
}

impl Default for EvalConfig {
    fn default() -> Self {
        let options = EvalOptions::default();
        EvalConfig {
            idle_timeout_seconds: options.idle_timeout.as_secs(),
            max_cell_seconds: options.max_cell.as_secs(),
            max_output_bytes: options.max_output_bytes,
        }
    }
}

impl EvalConfig {
    /// The options this table sets; zero values are raised to one.
    pub fn options(&self) -> EvalOptions {
        EvalOptions {
            idle_timeout: Duration::from_secs(self.idle_timeout_seconds.max(1)),
            max_cell: Duration::from_secs(self.max_cell_seconds.max(1)),
            max_output_bytes: self.max_output_bytes.max(1),
        }
    }
}

/// Binds a kernel factory to the builder's run and registers `eval` (CORE-1); the run's
/// shutdown stops every kernel.
pub fn register(builder: &mut RegistryBuilder, options: EvalOptions) {
    let kernels = Kernels::new(builder.run());
    builder
        .run()
        .on_shutdown("kernels", std::sync::Arc::clone(&kernels) as _);
    builder.register(Eval::new(kernels, options));
}
