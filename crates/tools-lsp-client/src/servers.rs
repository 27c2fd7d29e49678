//! The table of known language servers (languages, root markers, command, project checker)
//! and how the configuration's server overrides change it.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

pub use builtin::builtin;

mod builtin;

use crate::config::{CheckerFormat, ClientConfig, ServerOverride};
use crate::{Error, Result};

/// One language server as the supervisor uses it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    /// The name used in status, errors and the config, e.g. `rust-analyzer`.
    pub name: String,
    /// Extensions (no dot) and the LSP language id sent for each.
    pub extensions: Vec<(String, String)>,
    /// Files or folders that mark a project root.
    pub markers: Vec<String>,
    /// Those of `markers` that make a root only where no folder above holds a marker too:
    /// `docs/requirements.txt` or a subfolder's `CMakeLists.txt` is part of the project
    /// above it, not a project of its own (a file belongs to its innermost real root).
    pub weak_markers: Vec<String>,
    /// Which marker-holding ancestor is the root.
    pub root_rule: RootRule,
    /// The commands to try, in order; the first whose binary resolves is used.
    pub candidates: Vec<Candidate>,
    /// The project's own checker, run over a whole root (the client never runs it).
    pub checker: Option<CheckerSpec>,
    /// Extra environment for the server and its checker.
    pub env: BTreeMap<String, String>,
    /// `initializationOptions`.
    pub initialization_options: Option<Value>,
    /// Answers to `workspace/configuration`, keyed by section.
    pub settings: Option<Value>,
    /// When a freshly started server counts as ready for requests.
    pub readiness: Readiness,
    /// Whether the server notices files changed on disk by itself (rust-analyzer runs its
    /// own watcher when the client offers none); for the others the session scans the root
    /// before each request and reports what changed.
    pub watches_files: bool,
    /// Whether a file's diagnostics are asked for rather than taken from the last publish:
    /// an answer is about the text just sent, with no guessing about publish timing.
    pub pull: Pull,
    /// The project-wide check the server runs by itself after a change, which diagnostics on
    /// write waits for: until it ends, the server's publishes carry the previous check's
    /// findings (LSP-6).
    pub check: Check,
    /// How the files a write did not touch but may have broken are found (SPEC section 11).
    pub reach: Reach,
    /// What to tell someone whose machine lacks the binary (`None` for a server the
    /// configuration adds: whoever added it knows).
    pub install_hint: Option<String>,
}

/// How a file's diagnostics can be asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pull {
    /// They cannot: the server publishes them when it likes.
    None,
    /// `textDocument/diagnostic` (basedpyright answers it without advertising it).
    Lsp,
    /// `textDocument/diagnostic` for the server's own analysis, while what its on-save check
    /// finds still comes as publishes: rust-analyzer, told that the client pulls, answers the
    /// pull with its native diagnostics for the current text and publishes only `cargo
    /// check`'s. A file's diagnostics are the two together.
    Analysis,
    /// typescript-language-server's `typescript.tsserverRequest` command, with tsserver's
    /// own `syntacticDiagnosticsSync` and `semanticDiagnosticsSync`: its publishes come in
    /// passes (syntax first, types later, nothing when a pass finds what it found before),
    /// so no publish says it is the last.
    TsServer,
}

/// A project-wide check a server runs by itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// None: a file's diagnostics come when it is synced.
    None,
    /// A check that starts when a file is saved (rust-analyzer's `cargo check`, its
    /// "flycheck"), known by the prefix of its work-done progress token.
    OnSave { token_prefix: String },
    /// Analysis that runs whenever a file changes, saved or not, until no file it depends on
    /// is left unchecked (basedpyright in workspace mode); every work-done progress the
    /// server reports is that analysis.
    OnChange,
}

impl Check {
    /// Whether two publishes of one file can arrive swapped: rust-analyzer serializes each
    /// publish on its worker pool, so while its check streams findings in, a publish of an
    /// earlier, smaller state of a file can land after the later one (seen: a file's 6
    /// findings, then its 3). Such a late publish is a strict subset of the kept one within
    /// the same check, and is ignored.
    pub fn publishes_reorder(&self) -> bool {
        matches!(self, Check::OnSave { .. })
    }

    /// Whether a progress token is this check's.
    pub fn is_check_token(&self, token: &str) -> bool {
        match self {
            Check::None => false,
            Check::OnSave { token_prefix } => token.starts_with(token_prefix.as_str()),
            Check::OnChange => true,
        }
    }
}

/// How the files a write did not touch are reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// The server's own check covers the project and publishes every file it checked
    /// (rust-analyzer's `cargo check`, basedpyright in workspace mode): the files it
    /// published about while checking the write are the ones.
    Publishes,
    /// The files that import a written one, transitively, as the server resolves imports
    /// (tsserver's `fileReferences`), each asked for its diagnostics.
    Importers,
    /// The translation units that include a written header, directly or through other
    /// headers, from the compilation database: each is rebuilt against the header.
    Includers,
}

pub(crate) use tools_process::RootRule;

/// When a server counts as ready.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Readiness {
    /// rust-analyzer's `experimental/serverStatus` says `quiescent`.
    ServerStatus,
    /// Once after start, no `$/progress` is running (servers that answer before they finish
    /// loading the project, with empty results).
    FirstIdle,
    /// At once after `initialize`: the server blocks requests until it can answer them.
    Immediate,
    /// Once the server logged a line containing this text (pyright's "Found 8 source
    /// files", after which its workspace-wide answers cover the project; before it, a
    /// workspace symbol search sees only the open files and answers "none"), or, for a
    /// server that never says it, once nothing has been in progress for a while.
    Logged(String),
}

/// One way to start a server.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// The program name (looked up) or a path (relative to the workspace root).
    pub program: String,
    /// Its arguments.
    pub args: Vec<String>,
    /// Whether versioned names (`clangd-17`) count when the plain name is missing.
    pub versioned: bool,
    /// How to ask the binary its version without starting a server.
    pub version: VersionProbe,
}

/// How to learn a binary's version.
#[derive(Debug, Clone, PartialEq)]
pub enum VersionProbe {
    /// Run the binary itself with these arguments.
    Args(Vec<String>),
    /// Run a program in the same folder (the CLI beside a `-langserver` script).
    Sibling { program: String, args: Vec<String> },
}

/// A project checker: the commands to try and how to read them.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckerSpec {
    pub candidates: Vec<Vec<String>>,
    pub format: CheckerFormat,
}

impl ServerSpec {
    /// The language id for `path`, when this server handles it.
    pub fn language_id(&self, path: &Path) -> Option<&str> {
        let extension = path.extension()?.to_str()?;
        self.extensions
            .iter()
            .find(|(known, _)| known.eq_ignore_ascii_case(extension))
            .map(|(_, id)| id.as_str())
    }

    /// `.rs` or `.c, .h, .cc, …` for messages.
    pub fn extension_list(&self) -> String {
        let list: Vec<String> = self
            .extensions
            .iter()
            .map(|(extension, _)| format!(".{extension}"))
            .collect();
        list.join(", ")
    }
}

/// The built-in table with the config's overrides applied.
pub(crate) fn table(config: &ClientConfig) -> Result<Vec<ServerSpec>> {
    let mut servers = builtin()?;
    if config.all_features
        && let Some(rust) = servers.iter_mut().find(|s| s.name == "rust-analyzer")
    {
        if let Some(checker) = &mut rust.checker {
            for candidate in &mut checker.candidates {
                candidate.push("--all-features".into());
            }
        }
        if let Some(Value::Object(settings)) = &mut rust.settings
            && let Some(Value::Object(section)) = settings.get_mut("rust-analyzer")
        {
            section.insert("cargo".into(), json!({ "features": "all" }));
        }
    }
    for (name, change) in &config.servers {
        match servers.iter().position(|spec| &spec.name == name) {
            Some(index) => {
                if change.enabled == Some(false) {
                    servers.remove(index);
                } else {
                    apply(&mut servers[index], change)?;
                }
            }
            None if change.enabled == Some(false) => {}
            None => servers.push(new_server(name, change)?),
        }
    }
    Ok(servers)
}

fn apply(spec: &mut ServerSpec, change: &ServerOverride) -> Result<()> {
    let problem = |problem: &str| Error::Config {
        server: spec.name.clone(),
        problem: problem.to_owned(),
    };
    if let Some(command) = &change.command {
        let (program, args) = command
            .split_first()
            .ok_or_else(|| problem("`command` is empty: give the program and its arguments"))?;
        spec.candidates = vec![Candidate {
            program: program.clone(),
            args: args.to_vec(),
            versioned: false,
            version: VersionProbe::Args(vec!["--version".into()]),
        }];
    }
    if let Some(list) = &change.extensions {
        let id = change.language_id.clone();
        spec.extensions = list
            .iter()
            .map(|extension| {
                let extension = extension.trim_start_matches('.').to_owned();
                let id = id.clone().unwrap_or_else(|| extension.clone());
                (extension, id)
            })
            .collect();
    } else if let Some(id) = &change.language_id {
        for (_, language) in spec.extensions.iter_mut() {
            *language = id.clone();
        }
    }
    if let Some(markers) = &change.markers {
        spec.markers = markers.clone();
        spec.weak_markers.retain(|weak| markers.contains(weak));
    }
    if let Some(checker) = &change.checker {
        spec.checker = match checker.is_empty() {
            true => None,
            false => Some(CheckerSpec {
                candidates: vec![checker.clone()],
                format: change
                    .checker_format
                    .or(spec.checker.as_ref().map(|c| c.format))
                    .unwrap_or(CheckerFormat::Lines),
            }),
        };
    } else if let (Some(format), Some(checker)) = (change.checker_format, spec.checker.as_mut()) {
        checker.format = format;
    }
    spec.env.extend(change.env.clone());
    if change.initialization_options.is_some() {
        spec.initialization_options = change.initialization_options.clone();
    }
    if change.settings.is_some() {
        spec.settings = change.settings.clone();
    }
    // rust-analyzer told not to check on save runs no check to wait for.
    let check_on_save = |options: &Option<Value>, path: &[&str]| {
        path.iter()
            .try_fold(options.as_ref()?, |value, key| value.get(key))
            .and_then(Value::as_bool)
    };
    if check_on_save(&spec.settings, &["rust-analyzer", "checkOnSave"]) == Some(false)
        || check_on_save(&spec.initialization_options, &["checkOnSave"]) == Some(false)
    {
        spec.check = Check::None;
    }
    Ok(())
}

fn new_server(name: &str, change: &ServerOverride) -> Result<ServerSpec> {
    let missing = |field: &str| Error::Config {
        server: name.to_owned(),
        problem: format!(
            "`{name}` is not a built-in server, so it needs `{field}` (a new server needs \
             `command`, `extensions` and `markers`)"
        ),
    };
    if change.command.is_none() {
        return Err(missing("command"));
    }
    if change.extensions.is_none() {
        return Err(missing("extensions"));
    }
    if change.markers.is_none() {
        return Err(missing("markers"));
    }
    let mut spec = ServerSpec {
        name: name.to_owned(),
        extensions: Vec::new(),
        markers: Vec::new(),
        weak_markers: Vec::new(),
        root_rule: RootRule::Nearest,
        candidates: Vec::new(),
        checker: None,
        env: BTreeMap::new(),
        initialization_options: None,
        settings: None,
        readiness: Readiness::FirstIdle,
        watches_files: false,
        pull: Pull::None,
        check: Check::None,
        reach: Reach::Publishes,
        install_hint: None,
    };
    apply(&mut spec, change)?;
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A configuration with these server overrides, written as JSON.
    fn with_servers(servers: Value) -> ClientConfig {
        ClientConfig {
            request_timeout: std::time::Duration::from_secs(30),
            start_timeout: std::time::Duration::from_secs(60),
            index_timeout: std::time::Duration::from_secs(120),
            restart_budget: 3,
            path: Vec::new(),
            all_features: false,
            servers: serde_json::from_value(servers).unwrap(),
        }
    }

    #[test]
    fn the_builtin_table_has_the_issues_servers_in_order() {
        let names: Vec<String> = builtin().unwrap().into_iter().map(|s| s.name).collect();
        assert_eq!(
            names,
            [
                "rust-analyzer",
                "basedpyright",
                "typescript-language-server",
                "clangd",
                "gopls",
                "dart"
            ]
        );
    }

    #[test]
    fn every_extension_belongs_to_one_server() {
        let mut seen = std::collections::HashSet::new();
        for spec in builtin().unwrap() {
            for (extension, _) in &spec.extensions {
                assert!(seen.insert(extension.clone()), "{extension} twice");
            }
        }
    }

    #[test]
    fn prod_6_overrides_replace_fields_and_add_servers() {
        let config = with_servers(json!({
            "clangd": { "command": ["clangd-17", "--background-index"] },
            "gopls": { "enabled": false },
            "zls": { "command": ["zls"], "extensions": ["zig"], "markers": ["build.zig"] },
            "rust-analyzer": { "env": { "CARGO_TARGET_DIR": "target/ra" }, "checker": [] }
        }));
        let servers = table(&config).unwrap();
        let names: Vec<&str> = servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "rust-analyzer",
                "basedpyright",
                "typescript-language-server",
                "clangd",
                "dart",
                "zls"
            ]
        );
        let clangd = &servers[3];
        assert_eq!(clangd.candidates.len(), 1);
        assert_eq!(clangd.candidates[0].program, "clangd-17");
        assert_eq!(clangd.candidates[0].args, ["--background-index"]);
        let rust = &servers[0];
        assert_eq!(rust.env["CARGO_TARGET_DIR"], "target/ra");
        assert_eq!(rust.checker, None);
        let zls = &servers[5];
        assert_eq!(zls.extensions, [("zig".to_owned(), "zig".to_owned())]);
        assert_eq!(zls.language_id(Path::new("a/b.zig")), Some("zig"));
    }

    #[test]
    fn prod_6_a_new_server_without_a_command_is_a_config_error() {
        let config = with_servers(json!({
            "zls": { "extensions": ["zig"], "markers": ["build.zig"] }
        }));
        assert_eq!(
            table(&config).unwrap_err().to_string(),
            "the override of server zls: `zls` is not a built-in server, so it needs \
             `command` (a new server needs `command`, `extensions` and `markers`)"
        );
    }
}
