//! `agent-tools.toml` (PROD-6): optional, in the workspace root or named by `--config`.
//! Everything works without it; flags on the command line win over it.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde::Deserialize;
use tools_core::ApprovalPolicy;

/// The file name looked for in the workspace root.
pub const CONFIG_FILE: &str = "agent-tools.toml";

/// The whole configuration file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, default)]
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
    /// Structural search: the syntax index's budget (`cache_mb`).
    #[cfg(feature = "ast")]
    pub ast: tools_ast::AstConfig,
    /// A build without the `ast` feature accepts the table and ignores it.
    #[cfg(not(feature = "ast"))]
    pub ast: Option<toml::Table>,
    /// Kernels: the idle window, the cap on one cell, the output cap (EVAL-8).
    #[cfg(feature = "eval")]
    pub eval: tools_eval::EvalConfig,
    /// A build without the `eval` feature accepts the table and ignores it.
    #[cfg(not(feature = "eval"))]
    pub eval: Option<toml::Table>,
    /// Language servers: timeouts, the restart budget, extra folders for their binaries, and
    /// overrides of the server table (`[lsp.servers.NAME]`).
    #[cfg(feature = "lsp")]
    pub lsp: tools_lsp::LspConfig,
    /// A build without the `lsp` feature accepts the table and ignores it, so one config file
    /// serves every build.
    #[cfg(not(feature = "lsp"))]
    pub lsp: Option<toml::Table>,
    /// Background workers (`[vibe]`): the command per tier, limits, the state folder.
    #[cfg(feature = "vibe")]
    pub vibe: tools_vibe::VibeConfig,
    /// A build without the `vibe` feature accepts the table and ignores it.
    #[cfg(not(feature = "vibe"))]
    pub vibe: Option<toml::Table>,
    /// The debugger: the session TTL (`session_ttl_seconds`, DBG-4) and its timeouts.
    #[cfg(feature = "debug")]
    pub debug: tools_debug::DebugConfig,
    /// A build without the `debug` feature accepts the table and ignores it.
    #[cfg(not(feature = "debug"))]
    pub debug: Option<toml::Table>,
}

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
        let config = toml::from_str(&text)
            .with_context(|| format!("the config file {} is not valid", path.display()))?;
        Ok((config, Some(path)))
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
        let options = config.eval.options();
        assert_eq!(options.idle_timeout, Duration::from_secs(2));
        assert_eq!(options.max_cell, Duration::from_secs(3600));
        assert_eq!(options.max_output_bytes, 1000);
    }

    #[cfg(feature = "ast")]
    #[test]
    fn prod_6_the_ast_table_sets_the_index_budget() {
        let dir = tempfile::tempdir().unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.ast.cache_mb, tools_ast::DEFAULT_CACHE_MB);
        std::fs::write(dir.path().join(CONFIG_FILE), "[ast]\ncache_mb = 0\n").unwrap();
        let (config, _) = Config::load(dir.path(), None).unwrap();
        assert_eq!(config.ast.cache_mb, 0);
        std::fs::write(dir.path().join(CONFIG_FILE), "[ast]\ncache = 5\n").unwrap();
        let error = Config::load(dir.path(), None).unwrap_err();
        assert!(format!("{error:#}").contains("cache"), "{error:#}");
    }

    #[test]
    fn prod_6_no_file_means_defaults() {
        let dir = tempfile::tempdir().unwrap();
        let (config, path) = Config::load(dir.path(), None).unwrap();
        assert_eq!(config, Config::default());
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
        let config: Config =
            toml::from_str("[debug]\nsession_ttl_seconds = 60\nstop_timeout_seconds = 5\n")
                .unwrap();
        assert_eq!(config.debug.session_ttl_seconds, 60);
        assert_eq!(config.debug.stop_timeout_seconds, 5);
        assert_eq!(Config::default().debug.session_ttl_seconds, 30 * 60);
        assert!(toml::from_str::<Config>("[debug]\nsession_ttl = 1\n").is_err());
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
        assert_eq!(config.lsp.request_timeout_seconds, 5);
        assert_eq!(config.lsp.path, [PathBuf::from("tools/bin")]);
        assert_eq!(
            config.lsp.servers["clangd"].command,
            Some(vec![
                "clangd-17".to_owned(),
                "--background-index".to_owned()
            ])
        );
        assert_eq!(
            config.lsp.servers["rust-analyzer"].settings,
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
        assert!(config.lsp.on_write.enabled);
        assert_eq!(config.lsp.on_write.timeout_seconds, 2.5);
        assert!(config.lsp.on_write.warnings);
        assert_eq!(config.lsp.on_write.per_file, 3);
        let mut bad = config.lsp.clone();
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
    }
}
