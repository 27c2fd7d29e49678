//! The built-in server table as data: `servers.toml`, embedded in the binary, read into
//! [`ServerSpec`]s once per process. The file's own header documents each field and its
//! default; this module is its schema.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use serde::Deserialize;
use serde_json::Value;

use super::{
    Candidate, Check, CheckerSpec, Pull, Reach, Readiness, RootRule, ServerSpec, VersionProbe,
};
use crate::config::CheckerFormat;
use crate::{Error, Result};

/// The table, as written.
const SERVERS_TOML: &str = include_str!("../../servers.toml");

/// The built-in table, in its order (the order is the priority of extensions).
pub fn builtin() -> Result<Vec<ServerSpec>> {
    static TABLE: OnceLock<Result<Vec<ServerSpec>>> = OnceLock::new();
    TABLE.get_or_init(|| parse(SERVERS_TOML)).clone()
}

fn parse(text: &str) -> Result<Vec<ServerSpec>> {
    let table: Table = toml::from_str(text).map_err(|source| Error::BuiltinTable { source })?;
    Ok(table.server.into_iter().map(ServerSpec::from).collect())
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Table {
    server: Vec<Entry>,
}

/// One `[[server]]`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    name: String,
    extensions: Vec<(String, String)>,
    markers: Vec<String>,
    #[serde(default)]
    weak_markers: Vec<String>,
    #[serde(default)]
    root_rule: RootRuleEntry,
    candidates: Vec<CandidateEntry>,
    checker: Option<CheckerEntry>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    initialization_options: Option<Value>,
    settings: Option<Value>,
    #[serde(default)]
    readiness: ReadinessEntry,
    #[serde(default)]
    watches_files: bool,
    #[serde(default)]
    pull: PullEntry,
    #[serde(default)]
    check: CheckEntry,
    #[serde(default)]
    reach: ReachEntry,
    install_hint: String,
}

/// tools-process's [`RootRule`], by name.
#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
enum RootRuleEntry {
    #[default]
    Nearest,
    Outermost,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CandidateEntry {
    program: String,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    versioned: bool,
    #[serde(default = "version_args")]
    version_args: Vec<String>,
    version_from: Option<String>,
}

fn version_args() -> Vec<String> {
    vec!["--version".to_owned()]
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct CheckerEntry {
    candidates: Vec<Vec<String>>,
    format: CheckerFormat,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
enum ReadinessEntry {
    ServerStatus,
    #[default]
    FirstIdle,
    Immediate,
    Logged(String),
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
enum PullEntry {
    #[default]
    None,
    Lsp,
    Analysis,
    TsServer,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
enum CheckEntry {
    #[default]
    None,
    OnSave(String),
    OnChange,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
enum ReachEntry {
    #[default]
    Publishes,
    Importers,
    Includers,
}

impl From<Entry> for ServerSpec {
    fn from(entry: Entry) -> Self {
        ServerSpec {
            name: entry.name,
            extensions: entry.extensions,
            markers: entry.markers,
            weak_markers: entry.weak_markers,
            root_rule: match entry.root_rule {
                RootRuleEntry::Nearest => RootRule::Nearest,
                RootRuleEntry::Outermost => RootRule::Outermost,
            },
            candidates: entry.candidates.into_iter().map(Candidate::from).collect(),
            checker: entry.checker.map(|checker| CheckerSpec {
                candidates: checker.candidates,
                format: checker.format,
            }),
            env: entry.env,
            initialization_options: entry.initialization_options,
            settings: entry.settings,
            readiness: match entry.readiness {
                ReadinessEntry::ServerStatus => Readiness::ServerStatus,
                ReadinessEntry::FirstIdle => Readiness::FirstIdle,
                ReadinessEntry::Immediate => Readiness::Immediate,
                ReadinessEntry::Logged(text) => Readiness::Logged(text),
            },
            watches_files: entry.watches_files,
            pull: match entry.pull {
                PullEntry::None => Pull::None,
                PullEntry::Lsp => Pull::Lsp,
                PullEntry::Analysis => Pull::Analysis,
                PullEntry::TsServer => Pull::TsServer,
            },
            check: match entry.check {
                CheckEntry::None => Check::None,
                CheckEntry::OnSave(token_prefix) => Check::OnSave { token_prefix },
                CheckEntry::OnChange => Check::OnChange,
            },
            reach: match entry.reach {
                ReachEntry::Publishes => Reach::Publishes,
                ReachEntry::Importers => Reach::Importers,
                ReachEntry::Includers => Reach::Includers,
            },
            install_hint: Some(entry.install_hint),
        }
    }
}

impl From<CandidateEntry> for Candidate {
    fn from(entry: CandidateEntry) -> Self {
        Candidate {
            program: entry.program,
            args: entry.args,
            versioned: entry.versioned,
            version: match entry.version_from {
                Some(program) => VersionProbe::Sibling {
                    program,
                    args: entry.version_args,
                },
                None => VersionProbe::Args(entry.version_args),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn lsp_2_every_builtin_entry_parses_and_has_what_the_code_relies_on() {
        let servers = builtin().unwrap();
        assert!(!servers.is_empty());
        let mut names = HashSet::new();
        let mut extensions = HashSet::new();
        for spec in &servers {
            let name = &spec.name;
            assert!(!name.is_empty());
            assert!(names.insert(name.clone()), "{name} twice");
            // Routing takes the first server with the extension, so one each.
            assert!(!spec.extensions.is_empty(), "{name} has no extensions");
            for (extension, language_id) in &spec.extensions {
                assert!(
                    !extension.is_empty() && !extension.starts_with('.'),
                    "{name}: extension {extension:?}"
                );
                assert!(
                    !language_id.is_empty(),
                    "{name}: {extension} has no language id"
                );
                assert!(extensions.insert(extension.clone()), "{extension} twice");
            }
            // No marker, no root, no server (LSP-2).
            assert!(!spec.markers.is_empty(), "{name} has no markers");
            for weak in &spec.weak_markers {
                assert!(
                    spec.markers.contains(weak),
                    "{name}: weak {weak} is no marker"
                );
            }
            assert!(!spec.candidates.is_empty(), "{name} has no command");
            for candidate in &spec.candidates {
                assert!(!candidate.program.is_empty(), "{name}: empty program");
                let (VersionProbe::Args(args) | VersionProbe::Sibling { args, .. }) =
                    &candidate.version;
                assert!(!args.is_empty(), "{name}: no version arguments");
            }
            if let Some(checker) = &spec.checker {
                assert!(
                    !checker.candidates.is_empty(),
                    "{name}: a checker without commands"
                );
                for command in &checker.candidates {
                    assert!(!command.is_empty(), "{name}: an empty checker command");
                }
            }
            if let Check::OnSave { token_prefix } = &spec.check {
                assert!(!token_prefix.is_empty(), "{name}: an empty check token");
            }
            if let Readiness::Logged(text) = &spec.readiness {
                assert!(!text.is_empty(), "{name}: an empty readiness line");
            }
            assert!(
                spec.install_hint
                    .as_ref()
                    .is_some_and(|hint| !hint.is_empty()),
                "{name} has no install hint"
            );
        }
    }

    #[test]
    fn a_broken_table_is_an_error_that_says_where() {
        let error = parse("[[server]]\nname = \"x\"\n").unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("the built-in server table (servers.toml) is invalid"),
            "{message}"
        );
        assert!(std::error::Error::source(&error).is_some());
    }
}
