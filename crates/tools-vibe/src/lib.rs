//! Background workers (SPEC section 7): `vibe_spawn`, `vibe_send`, `vibe_wait`, `vibe_kill`
//! and `vibe_list`, registered only while vibe mode is on (VIBE-1). All five are read tier:
//! the approval gate sits on the workers' own tools, where the editing happens.

mod config;
mod error;
mod family;
mod roster;
mod tools;
mod worker;

pub use crate::tools::{
    VibeKill, VibeKillInput, VibeList, VibeListInput, VibeListOutput, VibeSend, VibeSendInput,
    VibeSpawn, VibeSpawnInput, VibeWait, VibeWaitInput, WorkerView,
};
pub use crate::{
    config::{VibeConfig, WorkerTier},
    family::VibeFamily,
    roster::Roster,
    worker::Status,
};

use std::sync::Arc;

use tools_core::RegistryBuilder;

/// Registers the five tools over `roster`, and its shutdown with the run: when the run ends,
/// every worker's process group is stopped.
pub fn register(builder: &mut RegistryBuilder, roster: &Roster) {
    builder
        .register(VibeSpawn::new(roster.clone()))
        .register(VibeSend::new(roster.clone()))
        .register(VibeWait::new(roster.clone()))
        .register(VibeKill::new(roster.clone()))
        .register(VibeList::new(roster.clone()));
    builder
        .run()
        .on_shutdown("workers", Arc::new(roster.clone()));
}
