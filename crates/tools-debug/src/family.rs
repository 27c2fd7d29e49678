//! The `debug` family as the umbrella binds it.

use tools_core::{BindError, Binding, Family, RegistryBuilder};

use crate::{DebugConfig, DebugSupervisor};

/// `debug`, over one supervisor per dispatcher, so per conversation (DBG-4). No adapter
/// starts until `launch`; which adapters can run is decided at call time (CORE-2).
pub struct DebugFamily;

impl Family for DebugFamily {
    const NAME: &'static str = "debug";
    const ABOUT: &'static str = "a debugger over DAP";
    type Config = DebugConfig;
    type Resource = DebugSupervisor;

    fn bind(config: &DebugConfig, _: &Binding<'_>) -> Result<Option<DebugSupervisor>, BindError> {
        Ok(Some(DebugSupervisor::new(config.clone())))
    }

    fn register(builder: &mut RegistryBuilder, supervisor: DebugSupervisor) {
        crate::register(builder, &supervisor);
    }
}
