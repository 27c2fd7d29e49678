//! The `vibe` family as the umbrella binds it.

use tools_core::{BindError, Binding, Family, RegistryBuilder, Surface};

use crate::{Roster, VibeConfig};

/// The five `vibe_*` tools over the run's roster of workers. Off unless `[vibe] enabled`
/// (or `serve --vibe`) says so (VIBE-1); workers get at most the surface of the run that
/// spawns them.
pub struct VibeFamily;

impl Family for VibeFamily {
    const NAME: &'static str = "vibe";
    const ABOUT: &'static str = "background workers";
    type Config = VibeConfig;
    type Resource = (VibeConfig, Surface);

    fn bind(
        config: &VibeConfig,
        binding: &Binding<'_>,
    ) -> Result<Option<Self::Resource>, BindError> {
        let on = config.enabled || binding.listing;
        Ok(on.then(|| (config.clone(), binding.surface)))
    }

    fn register(builder: &mut RegistryBuilder, (config, surface): Self::Resource) {
        let run = builder.run();
        let roster = Roster::new(
            config,
            run.workspace.root(),
            &run.conversation,
            surface,
            run.sandbox.clone(),
        );
        crate::register(builder, &roster);
    }
}
