//! `agent-tools.toml` (PROD-6): optional, in the workspace root or named by `--config`.
//! Everything works without it; flags on the command line win over it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use tools_core::ApprovalPolicy;

use crate::FAMILIES;
use crate::families::FamilyConfigs;

/// The file name looked for in the workspace root.
pub const CONFIG_FILE: &str = "agent-tools.toml";

/// The whole configuration file: the tables every run has, and each family's table.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// What happens to write and exec calls: `ask` (default), `allow` or `deny`.
    pub approval: Option<ApprovalPolicy>,
    /// Question cards.
    pub ask: AskConfig,
    /// Results.
    pub output: OutputConfig,
    /// Calls and the run's lifetime.
    pub run: RunConfig,
    /// The sandbox processes of the run start in (EVAL-9).
    pub sandbox: SandboxConfig,
    /// Each built-in family's table (`[ast]`, `[eval]`, `[lsp]`, `[vibe]`, `[debug]`), parsed
    /// by the family; a build without a family accepts its table and ignores it, so one
    /// config file serves every build.
    pub families: FamilyConfigs,
}

/// The tables every run has; the family tables are read by each family.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(default)]
struct CoreConfig {
    approval: Option<ApprovalPolicy>,
    ask: AskConfig,
    output: OutputConfig,
    run: RunConfig,
    sandbox: SandboxConfig,
}

/// The top-level keys of [`CoreConfig`].
const CORE_KEYS: &[&str] = &["approval", "ask", "output", "run", "sandbox"];

/// The `[ask]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct AskConfig {
    /// How long a question or permission card stays open, in seconds.
    pub expiry_seconds: u64,
}

impl Default for AskConfig {
    fn default() -> Self {
        AskConfig {
            expiry_seconds: 600,
        }
    }
}

impl AskConfig {
    /// The expiry as a duration.
    pub fn expiry(&self) -> Duration {
        Duration::from_secs(self.expiry_seconds)
    }
}

/// The `[output]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OutputConfig {
    /// The most bytes of text one result carries before it is cut, with a note.
    pub max_bytes: usize,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            max_bytes: 100 * 1024,
        }
    }
}

/// The `[run]` table.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RunConfig {
    /// How long a cancelled call that stops by itself (a kernel interrupting a cell) gets
    /// before it is dropped, in seconds.
    pub cancel_grace_seconds: f64,
    /// How long ending the run may take — calls cancelled, servers and sessions stopped —
    /// before every process left is killed, in seconds.
    pub shutdown_seconds: f64,
}

impl Default for RunConfig {
    fn default() -> Self {
        RunConfig {
            cancel_grace_seconds: 5.0,
            shutdown_seconds: 5.0,
        }
    }
}

impl RunConfig {
    /// The cancel grace.
    pub fn cancel_grace(&self) -> anyhow::Result<Duration> {
        seconds("[run] cancel_grace_seconds", self.cancel_grace_seconds)
    }

    /// The shutdown bound.
    pub fn shutdown(&self) -> anyhow::Result<Duration> {
        seconds("[run] shutdown_seconds", self.shutdown_seconds)
    }
}

fn seconds(key: &str, value: f64) -> anyhow::Result<Duration> {
    Duration::try_from_secs_f64(value)
        .ok()
        .filter(|d| *d <= Duration::from_secs(3600))
        .ok_or_else(|| {
            anyhow::anyhow!(
                "{key} in the config: {value} is not a number of seconds from 0 to 3600; \
                 fix it or remove the line"
            )
        })
}

/// The `[sandbox]` table.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// A command line prefix that runs a program inside the sandbox, e.g.
    /// `["bwrap", "--ro-bind", "/", "/", "--"]`; the program and its arguments follow it.
    /// Empty: processes run on the host.
    pub command: Vec<String>,
}

impl Config {
    /// Loads `explicit` if given (it must exist), else `agent-tools.toml` in `root` if present,
    /// else the defaults.
    pub fn load(root: &Path, explicit: Option<&Path>) -> anyhow::Result<(Config, Option<PathBuf>)> {
        let path = match explicit {
            Some(path) => path.to_path_buf(),
            None => {
                let default = root.join(CONFIG_FILE);
                if !default.exists() {
                    return Ok((Config::default(), None));
                }
                default
            }
        };
        let text = std::fs::read_to_string(&path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?;
        let config = Config::parse(&text)
            .with_context(|| format!("the config file {} is not valid", path.display()))?;
        Ok((config, Some(path)))
    }

    /// Parses a config file's text: unknown top-level keys are errors that name them and
    /// what the file takes; each family's table is parsed and checked by the family.
    pub fn parse(text: &str) -> anyhow::Result<Config> {
        let top: toml::Table = toml::from_str(text)?;
        if let Some(unknown) = top
            .keys()
            .find(|key| !CORE_KEYS.contains(&key.as_str()) && !FAMILIES.contains(&key.as_str()))
        {
            anyhow::bail!(
                "unknown field `{unknown}`: the config file takes {} and the family tables {}",
                CORE_KEYS.join(", "),
                FAMILIES.join(", ")
            );
        }
        let core: CoreConfig = toml::from_str(text)?;
        Ok(Config {
            approval: core.approval,
            ask: core.ask,
            output: core.output,
            run: core.run,
            sandbox: core.sandbox,
            families: crate::parse_family_tables(text)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(feature = "eval")]
    #[test]
    fn prod_6_the_eval_table_sets_the_cell_bounds() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[eval]\nidle_timeout_seconds = 2\nmax_output_bytes = 1000\n",
        )
        .unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        let options = config.families.get::<tools_eval::EvalFamily>().options();
        assert_eq!(options.idle_timeout, Duration::from_secs(2));
        assert_eq!(options.max_cell, Duration::from_secs(3600));
        assert_eq!(options.max_output_bytes, 1000);
    }

    #[cfg(feature = "ast")]
    #[test]
    fn prod_6_the_ast_table_sets_the_index_budget_and_prewarm() {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        let ast = |config: &Config| config.families.get::<tools_ast::AstFamily>();
        assert_eq!(ast(&config).cache_mb, tools_ast::DEFAULT_CACHE_MB);
        assert!(ast(&config).prewarm);
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[ast]\ncache_mb = 0\nprewarm = false\n",
        )
        .unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        assert_eq!(ast(&config).cache_mb, 0);
        assert!(!ast(&config).prewarm);
        std::fs::write(dir.path().join(CONFIG_FILE), "[ast]\ncache = 5\n").unwrap();
        let error = Config::load(dir.path(), None).unwrap_err();
        assert!(format!("{error:#}").contains("cache"), "{error:#}");
    }

    #[test]
    fn prod_6_no_file_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let (config, path) = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.approval, None);
        assert_eq!(config.output, OutputConfig::default());
        assert_eq!(path, None);
        assert_eq!(config.ask.expiry(), Duration::from_secs(600));
    }

    #[test]
    fn prod_6_the_file_sets_policy_expiry_and_limits() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "approval = \"allow\"\n[ask]\nexpiry_seconds = 30\n[output]\nmax_bytes = 4096\n",
        )
        .unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.approval, Some(ApprovalPolicy::Allow));
        assert_eq!(config.ask.expiry_seconds, 30);
        assert_eq!(config.output.max_bytes, 4096);
    }

    #[test]
    fn prod_6_the_run_and_sandbox_tables_are_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[run]\ncancel_grace_seconds = 1.5\nshutdown_seconds = 3\n\
             [sandbox]\ncommand = [\"env\", \"IN_SANDBOX=1\"]\n",
        )
        .unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        assert_eq!(
            config.run.cancel_grace().unwrap(),
            Duration::from_millis(1500)
        );
        assert_eq!(config.run.shutdown().unwrap(), Duration::from_secs(3));
        assert_eq!(config.sandbox.command, ["env", "IN_SANDBOX=1"]);
        let bad = RunConfig {
            shutdown_seconds: -2.0,
            ..RunConfig::default()
        };
        assert_eq!(
            bad.shutdown().unwrap_err().to_string(),
            "[run] shutdown_seconds in the config: -2 is not a number of seconds from 0 to \
             3600; fix it or remove the line"
        );
    }

    #[cfg(feature = "debug")]
    #[test]
    fn dbg_4_the_debug_table_sets_the_session_ttl() {
        use tools_debug::DebugFamily;
        let config =
            Config::parse("[debug]\nsession_ttl_seconds = 60\nstop_timeout_seconds = 5\n").unwrap();
        assert_eq!(config.families.get::<DebugFamily>().session_ttl_seconds, 60);
        assert_eq!(config.families.get::<DebugFamily>().stop_timeout_seconds, 5);
        let defaults = Config::default().families.get::<DebugFamily>();
        assert_eq!(defaults.session_ttl_seconds, 30 * 60);
        let error = format!(
            "{:#}",
            Config::parse("[debug]\nsession_ttl = 1\n").unwrap_err()
        );
        assert!(error.contains("unknown field `session_ttl`"), "{error}");
        assert!(error.contains("line 2"), "the file's line is kept: {error}");
    }

    #[cfg(feature = "lsp")]
    #[test]
    fn prod_6_the_lsp_table_overrides_servers_and_timeouts() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[lsp]\nrequest_timeout_seconds = 5\npath = [\"tools/bin\"]\n\n\
             [lsp.servers.clangd]\ncommand = [\"clangd-17\", \"--background-index\"]\n\n\
             [lsp.servers.rust-analyzer.settings.rust-analyzer.cargo]\nfeatures = \"all\"\n",
        )
        .unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        let lsp = config.families.get::<tools_lsp::LspFamily>();
        assert_eq!(lsp.request_timeout_seconds, 5);
        assert_eq!(lsp.path, [PathBuf::from("tools/bin")]);
        assert_eq!(
            lsp.servers["clangd"].command,
            Some(vec![
                "clangd-17".to_owned(),
                "--background-index".to_owned()
            ])
        );
        assert_eq!(
            lsp.servers["rust-analyzer"].settings,
            Some(serde_json::json!({"rust-analyzer": {"cargo": {"features": "all"}}}))
        );
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[lsp.servers.clangd]\ncomand = [\"x\"]\n",
        )
        .unwrap();
        let error = format!("{:#}", Config::load(dir.path(), None).unwrap_err());
        assert!(error.contains("unknown field `comand`"), "{error}");
    }

    #[test]
    fn lsp_6_the_on_write_table_is_read_and_checked() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "[lsp.on_write]\ntimeout_seconds = 2.5\nwarnings = true\nper_file = 3\n",
        )
        .unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        let lsp = config.families.get::<tools_lsp::LspFamily>();
        assert!(lsp.on_write.enabled);
        assert_eq!(lsp.on_write.timeout_seconds, 2.5);
        assert!(lsp.on_write.warnings);
        assert_eq!(lsp.on_write.per_file, 3);
        let mut bad = lsp.clone();
        bad.on_write.timeout_seconds = -1.0;
        let error = bad.validate().unwrap_err().to_string();
        assert!(
            error.starts_with("[lsp.on_write] timeout_seconds in the config: -1 is not"),
            "{error}"
        );
    }

    #[test]
    fn prod_6_unknown_keys_are_errors_that_name_them() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(CONFIG_FILE), "aproval = \"allow\"\n").unwrap();
        let error = format!("{:#}", Config::load(dir.path(), None).unwrap_err());
        assert!(error.contains("unknown field `aproval`"), "{error}");
        assert!(
            error.contains("approval, ask"),
            "says what it takes: {error}"
        );
        // A family's table is taken by every build, with or without the family.
        Config::parse("[vibe]\nenabled = false\n[eval]\nmax_cell_seconds = 9\n").unwrap();
        Config::parse("[files]\n").unwrap();
    }

    /// The file tools have no settings: a key under `[files]` (say, a hoped-for
    /// `enabled = false`) is refused by name instead of being ignored.
    #[cfg(feature = "files")]
    #[test]
    fn prod_6_a_key_under_files_is_refused_by_name() {
        let error = format!(
            "{:#}",
            Config::parse("[files]\nenabled = false\n").unwrap_err()
        );
        assert!(error.contains("unknown field `enabled`"), "{error}");
    }
}
