//! The `files` family as the umbrella binds it.

use tools_core::{BindError, Binding, Family, NoConfig, RegistryBuilder};

/// `read`, `write`, `edit`, `apply_patch`: the workspace's files. They need nothing but the
/// workspace every run has, so there is nothing to bind or configure.
pub struct FilesFamily;

impl Family for FilesFamily {
    const NAME: &'static str = "files";
    const ABOUT: &'static str = "file tools";
    type Config = NoConfig;
    type Resource = ();

    fn bind(_: &NoConfig, _: &Binding<'_>) -> Result<Option<()>, BindError> {
        Ok(Some(()))
    }

    fn register(builder: &mut RegistryBuilder, (): ()) {
        crate::register(builder);
    }
}
