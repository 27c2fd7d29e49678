//! The debugger family (SPEC section 4): one tool, `debug`, that drives a debug adapter over
//! the Debug Adapter Protocol — debugpy for Python, lldb-dap for native binaries, delve for Go
//! — with one session per conversation (DBG-4), kept by a [`DebugSupervisor`].
//!
//! **Architecture invariant:** tools-debug depends on tools-core and tools-process only, and
//! starts every adapter through `tools_process::Command`.

mod adapters;
mod dap;
mod debug;
mod error;
mod family;
mod session;
mod supervisor;
mod transport;

pub use crate::{
    adapters::{AdapterId, AdapterReport, Resolved},
    debug::{
        Debug, DebugInput, DebugOutput, MAX_CHILDREN, MAX_FRAMES, MAX_VALUE_CHARS, Operation,
        StopPlace,
    },
    error::{Error, Result},
    supervisor::{DebugConfig, DebugSupervisor},
};

pub use crate::family::DebugFamily;

use std::sync::Arc;

use tools_core::RegistryBuilder;

/// Registers `debug` (exec tier, `debug` lane) over `supervisor`, and the supervisor's
/// shutdown with the run. The umbrella calls it only when a supervisor is bound (DBG-1); which
/// adapters can run is decided at call time (CORE-2).
pub fn register(builder: &mut RegistryBuilder, supervisor: &DebugSupervisor) {
    builder.register(Debug::new(supervisor.clone()));
    builder
        .run()
        .on_shutdown("debug sessions", Arc::new(supervisor.clone()));
}
