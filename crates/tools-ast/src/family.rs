//! The `ast` family as the umbrella binds it.

use std::sync::Arc;

use tools_core::{BindError, Binding, Family, RegistryBuilder};

use crate::{AstConfig, SearchOptions, SyntaxIndex};

/// `ast_grep`, `ast_edit` and `resolve`. The grammars are compiled in; what a run binds is
/// the syntax index its searches share, of at most `[ast] cache_mb` MiB, which with
/// `[ast] prewarm` (the default) starts filling in the background.
pub struct AstFamily;

impl Family for AstFamily {
    const NAME: &'static str = "ast";
    const ABOUT: &'static str = "structural search and staged rewrites";
    type Config = AstConfig;
    type Resource = (SearchOptions, Arc<SyntaxIndex>);

    fn bind(
        config: &AstConfig,
        binding: &Binding<'_>,
    ) -> Result<Option<Self::Resource>, BindError> {
        // A listing never searches, so its index holds nothing.
        let budget = if binding.listing { 0 } else { config.cache_mb };
        let index = SyntaxIndex::new(budget);
        if config.prewarm && index.enabled() {
            // It ends by itself, or once the run drops the index.
            drop(index.prewarm(binding.root));
        }
        Ok(Some((SearchOptions::default(), index)))
    }

    fn register(builder: &mut RegistryBuilder, (options, index): Self::Resource) {
        crate::register(builder, options, index);
    }
}
