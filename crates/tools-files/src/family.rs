//! The `files` family as the umbrella binds it.

use serde::Deserialize;
use tools_core::{BindError, Binding, Family, RegistryBuilder};

/// `read`, `write`, `edit`, `apply_patch`: the workspace's files. They need nothing but the
/// workspace every run has, so there is nothing to bind.
pub struct FilesFamily;

/// `[files]`: nothing to set yet. Unlike `NoConfig` (which takes any table, since `[ask]`
/// belongs to the cards every run has), a key here is refused with its name, so a setting
/// such as `enabled = false` is not silently ignored: a build without the `files` feature is
/// how a run goes without the file tools.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesConfig {}

impl Family for FilesFamily {
    const NAME: &'static str = "files";
    const ABOUT: &'static str = "files";
    type Config = FilesConfig;
    type Resource = ();

    fn bind(_: &FilesConfig, _: &Binding<'_>) -> Result<Option<()>, BindError> {
        Ok(Some(()))
    }

    fn register(builder: &mut RegistryBuilder, (): ()) {
        crate::register(builder);
    }
}
