//! A family of tools as the umbrella sees it: a name, a config table, a resource bound to a
//! run, and the tools registered over it. The umbrella lists its families once and derives
//! everything else (registration, config tables, the server's instructions) from this trait.

use std::fmt::Debug;
use std::path::Path;

use serde::Deserialize;
use serde::de::DeserializeOwned;

use tools_process::Sandbox;

use crate::{RegistryBuilder, Surface};

/// Why a family could not be bound from its configuration (a server table that does not
/// validate); the umbrella says which table it came from.
pub type BindError = Box<dyn std::error::Error + Send + Sync>;

/// What a family is told when the umbrella binds it for a run from its configuration.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The workspace root.
    pub root: &'a Path,
    /// The run's surface (workers get at most this).
    pub surface: Surface,
    /// The run's sandbox (EVAL-9), for a family that builds what starts processes before the
    /// run exists (the language servers' supervisor); the same as the run's own.
    pub sandbox: Option<&'a Sandbox>,
    /// The run is built only to list every tool it could have (the generated docs): a
    /// family that is off unless configured binds anyway, and nothing may be held or
    /// started.
    pub listing: bool,
}

/// A family of tools, implemented by one type in each family crate.
pub trait Family: 'static {
    /// Its name: the umbrella's cargo feature and its table in the config file (`[NAME]`).
    const NAME: &'static str;
    /// What it is, for the server's instructions ("language servers").
    const ABOUT: &'static str;
    /// Its config table, with every key defaulted; unknown keys are errors that name them.
    type Config: DeserializeOwned + Default + Clone + Debug + Send + Sync + 'static;
    /// What a run binds it to: a supervisor, the kernels' bounds, a roster's settings.
    type Resource: Send + 'static;

    /// Checks a config before any run starts; the error names the key and what to send.
    fn check(config: &Self::Config) -> Result<(), BindError> {
        let _ = config;
        Ok(())
    }

    /// The resource for a run configured by `config`, or `None` when the config leaves the
    /// family off (vibe mode not enabled). Starts nothing: resources start what they need
    /// at call time (CORE-2).
    fn bind(
        config: &Self::Config,
        binding: &Binding<'_>,
    ) -> Result<Option<Self::Resource>, BindError>;

    /// Registers the family's tools over `resource`, and what the run must stop at its end.
    fn register(builder: &mut RegistryBuilder, resource: Self::Resource);
}

/// The config of a family with no table of its own: any table under its name is accepted
/// and ignored (`[ask]` belongs to the cards every run has).
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub struct NoConfig {}
