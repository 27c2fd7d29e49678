//! The `eval` family as the umbrella binds it.

use tools_core::{BindError, Binding, Family, RegistryBuilder};

use crate::{EvalConfig, EvalOptions};

/// `eval`: persistent Python and JavaScript kernels, started at the first cell of each
/// language; a run binds the bounds of a cell (`[eval]`, EVAL-8).
pub struct EvalFamily;

impl Family for EvalFamily {
    const NAME: &'static str = "eval";
    const ABOUT: &'static str = "persistent Python and JavaScript kernels";
    type Config = EvalConfig;
    type Resource = EvalOptions;

    fn bind(config: &EvalConfig, _: &Binding<'_>) -> Result<Option<EvalOptions>, BindError> {
        Ok(Some(config.options()))
    }

    fn register(builder: &mut RegistryBuilder, options: EvalOptions) {
        crate::register(builder, options);
    }
}
