//! The families this build serves, listed once (the `families!` line in the crate root):
//! registration, the config tables, the server's instructions and the re-exports of the
//! family crates are derived from that list and each family's [`Family`] impl. The cargo
//! features are this crate's manifest's, which xtask and the Python crate read.

use std::any::Any;
use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use anyhow::Context;
use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, Visitor};
use tools_core::{Binding, Family, RegistryBuilder};

/// Lists the families: each entry is `"feature" => family_crate::FamilyType`. Generates
/// [`FAMILIES`], the re-export of each family crate built in, and the functions that parse
/// every family's table and bind every family for a run.
macro_rules! families {
    ($($feature:literal => $krate:ident :: $family:ident),* $(,)?) => {
        /// Every family's name, built in or not: a config file may hold any of their tables,
        /// and a build without the family accepts its table and ignores it.
        pub const FAMILIES: &[&str] = &[$($feature),*];

        $(
            #[cfg(feature = $feature)]
            pub use $krate;
        )*

        /// Each built-in family's table of the config file `text`, parsed and checked.
        fn parse_family_tables(text: &str) -> anyhow::Result<$crate::families::FamilyConfigs> {
            // A build without families has nothing to parse.
            #[allow(unused_mut)]
            let mut configs = $crate::families::FamilyConfigs::default();
            let _ = text;
            $(
                #[cfg(feature = $feature)]
                configs.parse::<$krate::$family>(text)?;
            )*
            Ok(configs)
        }

        /// Binds every built-in family that `configs` leaves on, in the list's order.
        fn bind_families(
            builder: $crate::RunBuilder,
            configs: &$crate::families::FamilyConfigs,
            binding: &tools_core::Binding<'_>,
        ) -> anyhow::Result<$crate::RunBuilder> {
            let _ = (configs, binding);
            #[allow(unused_mut)]
            let mut builder = builder;
            $(
                #[cfg(feature = $feature)]
                {
                    builder = configs.bind::<$krate::$family>(builder, binding)?;
                }
            )*
            Ok(builder)
        }
    };
}
pub(crate) use families;

/// Each built-in family's config, parsed from its table (defaults when the file has none).
#[derive(Clone, Default)]
pub struct FamilyConfigs {
    configs: BTreeMap<&'static str, Arc<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for FamilyConfigs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.configs.keys()).finish()
    }
}

impl FamilyConfigs {
    /// The config of family `F`: its table as the file set it, else the defaults.
    pub fn get<F: Family>(&self) -> F::Config {
        self.configs
            .get(F::NAME)
            .and_then(|config| config.downcast_ref::<F::Config>())
            .cloned()
            .unwrap_or_default()
    }

    /// Replaces the config of family `F` (a command-line flag over the file's choice).
    pub fn set<F: Family>(&mut self, config: F::Config) {
        self.configs.insert(F::NAME, Arc::new(config));
    }

    /// Parses `[F::NAME]` out of the whole file, so an error keeps the file's line and
    /// column, and checks it.
    pub fn parse<F: Family>(&mut self, text: &str) -> anyhow::Result<()> {
        let document = toml::Deserializer::parse(text)?;
        let config = Table::<F::Config>::new(F::NAME)
            .deserialize(document)?
            .unwrap_or_default();
        F::check(&config).map_err(anyhow::Error::from_boxed)?;
        self.set::<F>(config);
        Ok(())
    }

    /// Binds `F` to the run `builder` builds, if its config leaves it on.
    pub fn bind<F: Family>(
        &self,
        builder: crate::RunBuilder,
        binding: &Binding<'_>,
    ) -> anyhow::Result<crate::RunBuilder> {
        let resource = F::bind(&self.get::<F>(), binding)
            .map_err(anyhow::Error::from_boxed)
            .with_context(|| format!("cannot bind the {} family", F::NAME))?;
        Ok(match resource {
            Some(resource) => builder.bind::<F>(resource),
            None => builder,
        })
    }
}

/// Registers `F` over `resource`: the tools registered are the family's.
pub(crate) fn register<F: Family>(builder: &mut RegistryBuilder, resource: F::Resource) {
    builder.family(F::NAME, F::ABOUT);
    F::register(builder, resource);
}

/// Deserialises one top-level table of a document and skips every other key.
struct Table<C> {
    name: &'static str,
    config: PhantomData<C>,
}

impl<C> Table<C> {
    fn new(name: &'static str) -> Self {
        Table {
            name,
            config: PhantomData,
        }
    }
}

impl<'de, C: serde::Deserialize<'de>> DeserializeSeed<'de> for Table<C> {
    type Value = Option<C>;

    fn deserialize<D: serde::Deserializer<'de>>(
        self,
        deserializer: D,
    ) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de, C: serde::Deserialize<'de>> Visitor<'de> for Table<C> {
    type Value = Option<C>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            formatter,
            "a document that may hold a [{}] table",
            self.name
        )
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<String>()? {
            if key == self.name {
                found = Some(map.next_value::<C>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    /// The family list and the manifest's features are one list: a family added to one and
    /// not the other fails here. PROD-1: one feature per family, all on by default.
    #[test]
    fn prod_1_the_family_list_is_the_manifests_features_all_on_by_default() {
        let manifest: toml::Table = toml::from_str(include_str!("../Cargo.toml")).unwrap();
        let features = manifest["features"].as_table().unwrap();
        let mut declared: Vec<&str> = features
            .keys()
            .map(String::as_str)
            .filter(|name| *name != "default")
            .collect();
        declared.sort_unstable();
        let mut listed = crate::FAMILIES.to_vec();
        listed.sort_unstable();
        assert_eq!(declared, listed);
        let default: Vec<&str> = features["default"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|feature| feature.as_str())
            .collect();
        assert_eq!(default, listed, "a default build has every family");
    }

    /// With every family built in, the catalog binds each one, in the list's order.
    #[cfg(all(
        feature = "files",
        feature = "ask",
        feature = "ast",
        feature = "lsp",
        feature = "eval",
        feature = "debug",
        feature = "vibe"
    ))]
    #[test]
    fn core_1_the_catalog_binds_every_family_in_the_lists_order() {
        let registry = crate::catalog().unwrap();
        let families: Vec<&str> = registry.families().map(|family| family.name).collect();
        assert_eq!(families, crate::FAMILIES);
    }
}
