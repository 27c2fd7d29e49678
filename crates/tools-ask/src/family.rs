//! The `ask` family as the umbrella binds it.

use tools_core::{BindError, Binding, Family, NoConfig, RegistryBuilder};

/// `ask_user`: questions to the person. Its resource is the run's question port, which the
/// approval gate shares, so there is nothing of its own to bind or configure (`[ask]`
/// belongs to the cards every run has).
pub struct AskFamily;

impl Family for AskFamily {
    const NAME: &'static str = "ask";
    const ABOUT: &'static str = "questions to the person";
    type Config = NoConfig;
    type Resource = ();

    fn bind(_: &NoConfig, _: &Binding<'_>) -> Result<Option<()>, BindError> {
        Ok(Some(()))
    }

    fn register(builder: &mut RegistryBuilder, (): ()) {
        crate::register(builder);
    }
}
