//! The `lsp` family as the umbrella binds it.

use tools_core::{BindError, Binding, Family, RegistryBuilder};

use crate::{LspConfig, LspSupervisor};

/// `lsp`, `lsp_rename`, `lsp_code_action` and diagnostics on write, over one supervisor per
/// run. The supervisor is always bound; which servers can run is decided at call time
/// (CORE-2), so a workspace with no usable server still has `lsp status` to say why.
pub struct LspFamily;

impl Family for LspFamily {
    const NAME: &'static str = "lsp";
    const ABOUT: &'static str = "language servers";
    type Config = LspConfig;
    type Resource = LspSupervisor;

    fn check(config: &LspConfig) -> Result<(), BindError> {
        Ok(config.validate()?)
    }

    fn bind(config: &LspConfig, binding: &Binding<'_>) -> Result<Option<LspSupervisor>, BindError> {
        // No server starts: a supervisor does nothing until a call needs it. What it starts,
        // it starts in the run's sandbox (EVAL-9).
        Ok(Some(LspSupervisor::new_in_sandbox(
            binding.root,
            config.clone(),
            binding.sandbox.cloned(),
        )?))
    }

    fn register(builder: &mut RegistryBuilder, supervisor: LspSupervisor) {
        crate::register(builder, &supervisor);
    }
}
