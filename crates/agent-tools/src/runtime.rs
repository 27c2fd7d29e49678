//! Building a run: the workspace, the resources bound to it, and the families they enable.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use tools_core::{
    ApprovalPolicy, Dispatcher, DispatcherOptions, NoHuman, QuestionPort, Questions, Registry,
    RegistryBuilder, Run, Surface, Workspace,
};

use crate::config::Config;

/// Binds resources to a run and registers the families they make possible (CORE-1).
pub struct RunBuilder {
    workspace: Workspace,
    questions: Option<Arc<Questions>>,
    conversation: Option<String>,
    sandbox: Option<Vec<String>>,
    #[cfg(feature = "ast")]
    ast: Option<(tools_ast::SearchOptions, Arc<tools_ast::SyntaxIndex>)>,
    #[cfg(feature = "lsp")]
    lsp: Option<tools_lsp::LspSupervisor>,
    #[cfg(feature = "vibe")]
    vibe: Option<(tools_vibe::VibeConfig, Surface)>,
    #[cfg(feature = "eval")]
    eval: Option<tools_eval::EvalOptions>,
    #[cfg(feature = "debug")]
    debug: Option<tools_debug::DebugSupervisor>,
}

impl RunBuilder {
    /// A run over `workspace` with nothing bound yet: only the host's file tools.
    pub fn new(workspace: Workspace) -> Self {
        RunBuilder {
            workspace,
            questions: None,
            conversation: None,
            sandbox: None,
            #[cfg(feature = "ast")]
            ast: None,
            #[cfg(feature = "lsp")]
            lsp: None,
            #[cfg(feature = "vibe")]
            vibe: None,
            #[cfg(feature = "eval")]
            eval: None,
            #[cfg(feature = "debug")]
            debug: None,
        }
    }

    /// Binds a kernel factory: `eval` is registered, and the run's shutdown stops its kernels.
    #[cfg(feature = "eval")]
    pub fn with_eval(mut self, options: tools_eval::EvalOptions) -> Self {
        self.eval = Some(options);
        self
    }

    /// Binds a language-server supervisor: `lsp` and `lsp_rename` are registered (LSP-1).
    /// Which servers can actually run is decided at call time (CORE-2).
    #[cfg(feature = "lsp")]
    pub fn with_lsp(mut self, supervisor: tools_lsp::LspSupervisor) -> Self {
        self.lsp = Some(supervisor);
        self
    }

    /// Binds a debug-session supervisor: `debug` is registered (DBG-1; the conversation id
    /// is always there). Which adapters can run is decided at call time (CORE-2).
    #[cfg(feature = "debug")]
    pub fn with_debug(mut self, supervisor: tools_debug::DebugSupervisor) -> Self {
        self.debug = Some(supervisor);
        self
    }

    /// Binds the tree-sitter grammars: `ast_grep`, `ast_edit` and `resolve` are registered,
    /// sharing a syntax index of at most `cache_mb` MiB for the run.
    #[cfg(feature = "ast")]
    pub fn with_ast(mut self, options: tools_ast::SearchOptions, cache_mb: usize) -> Self {
        self.ast = Some((options, tools_ast::SyntaxIndex::new(cache_mb)));
        self
    }

    /// Binds a question port: `ask_user` is registered, and the approval gate has an approver.
    pub fn with_ask(mut self, port: Arc<dyn QuestionPort>, expiry: Duration) -> Self {
        self.questions = Some(Arc::new(Questions::new(port, expiry)));
        self
    }

    /// Switches vibe mode on: the five `vibe_*` tools are registered (VIBE-1), and workers get
    /// at most `surface` (the surface of the run that spawns them).
    #[cfg(feature = "vibe")]
    pub fn with_vibe(mut self, config: tools_vibe::VibeConfig, surface: Surface) -> Self {
        self.vibe = Some((config, surface));
        self
    }

    /// Names the conversation the run serves (one per `serve` connection; DBG-1, DBG-4).
    pub fn with_conversation(mut self, id: impl Into<String>) -> Self {
        self.conversation = Some(id.into());
        self
    }

    /// Starts the run's processes through a sandbox command prefix (EVAL-9).
    pub fn with_sandbox(mut self, prefix: Option<Vec<String>>) -> Self {
        self.sandbox = prefix;
        self
    }

    /// The registry of every tool whose resource is bound.
    pub fn registry(self) -> Registry {
        let mut run = Run::new(self.workspace)
            .with_questions(self.questions)
            .with_sandbox(self.sandbox);
        if let Some(id) = self.conversation {
            run = run.with_conversation(id);
        }
        let mut builder = RegistryBuilder::new(run);
        crate::host::register(&mut builder);
        #[cfg(feature = "ask")]
        tools_ask::register(&mut builder);
        #[cfg(feature = "ast")]
        if let Some((options, index)) = self.ast {
            tools_ast::register(&mut builder, options, index);
        }
        #[cfg(feature = "lsp")]
        if let Some(supervisor) = &self.lsp {
            tools_lsp::register(&mut builder, supervisor);
        }
        #[cfg(feature = "vibe")]
        if let Some((config, surface)) = self.vibe {
            let run = builder.run();
            let roster = tools_vibe::Roster::new(
                config,
                run.workspace.root(),
                &run.conversation,
                surface,
                run.sandbox.clone(),
            );
            tools_vibe::register(&mut builder, &roster);
        }
        #[cfg(feature = "eval")]
        if let Some(options) = self.eval {
            tools_eval::register(&mut builder, options);
        }
        #[cfg(feature = "debug")]
        if let Some(supervisor) = &self.debug {
            tools_debug::register(&mut builder, supervisor);
        }
        builder.build()
    }
}

/// Every tool this build can serve, with every resource bound, for docs and `agent-tools tools`.
pub fn catalog() -> anyhow::Result<Registry> {
    // The workspace is never touched when listing; the temp folder is one that exists.
    let workspace = Workspace::new(std::env::temp_dir())?;
    let port = Arc::new(NoHuman {
        reason: "listing tools only".to_owned(),
    });
    let builder = with_every_factory(with_every_family(RunBuilder::new(workspace)), None)
        .with_ask(port, Duration::from_secs(1));
    // No server starts: a supervisor does nothing until a call needs it.
    #[cfg(feature = "lsp")]
    let builder = {
        let root = builder.workspace.root().to_path_buf();
        builder.with_lsp(tools_lsp::LspSupervisor::new(
            root,
            tools_lsp::LspConfig::default(),
        )?)
    };
    #[cfg(feature = "vibe")]
    let builder = builder.with_vibe(tools_vibe::VibeConfig::default(), Surface::Full);
    Ok(builder.registry())
}

/// Binds every family whose resource needs nothing from the caller.
fn with_every_family(builder: RunBuilder) -> RunBuilder {
    // No adapter starts: a supervisor does nothing until `launch`.
    #[cfg(feature = "debug")]
    let builder = builder.with_debug(tools_debug::DebugSupervisor::new(Default::default()));
    builder
}

/// [`with_every_family`] plus the families whose resource is configured (the kernels, the
/// grammars with their syntax index), which are bound to served runs and to the catalog
/// alike; the catalog's index holds nothing.
fn with_every_factory(builder: RunBuilder, settings: Option<&Settings>) -> RunBuilder {
    let _ = settings;
    #[cfg(feature = "ast")]
    let builder = builder.with_ast(
        tools_ast::SearchOptions::default(),
        settings.map_or(0, |s| s.ast.cache_mb),
    );
    #[cfg(feature = "eval")]
    let builder = builder.with_eval(settings.map(|s| s.eval).unwrap_or_default());
    builder
}

/// What a caller chooses about a run before the config file is read: the flags of `serve`
/// and `call`, and the arguments of the Python `Run(...)`, alike.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// The workspace root (made absolute when loaded).
    pub root: PathBuf,
    /// A config file instead of `agent-tools.toml` in the root.
    pub config: Option<PathBuf>,
    /// Which tools are listed and callable.
    pub surface: Surface,
    /// What happens to write and exec calls, over the config file's choice.
    pub approval: Option<ApprovalPolicy>,
    /// Vibe mode on, whatever the config file says.
    pub vibe: bool,
    /// Where workers' transcripts and results go.
    pub state_dir: Option<PathBuf>,
}

/// What the binary was told on the command line and in `agent-tools.toml`, resolved.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The workspace root.
    pub root: PathBuf,
    /// Which tiers are listed.
    pub surface: Surface,
    /// What happens to write and exec calls.
    pub approval: ApprovalPolicy,
    /// How long a card stays open.
    pub ask_expiry: Duration,
    /// The most bytes of text one result carries.
    pub max_output_bytes: usize,
    /// How long a cancelled call that stops by itself gets.
    pub cancel_grace: Duration,
    /// How long ending the run may take before what is left is killed.
    pub shutdown_bound: Duration,
    /// The sandbox prefix processes start through (EVAL-9), if any.
    pub sandbox: Option<Vec<String>>,
    /// How the operator allows write and exec calls, for refusals to say.
    pub how_to_allow: String,
    /// The language servers' configuration.
    #[cfg(feature = "lsp")]
    pub lsp: tools_lsp::LspConfig,
    /// Background workers; vibe mode is on when `enabled` (or `serve --vibe`).
    #[cfg(feature = "vibe")]
    pub vibe: tools_vibe::VibeConfig,
    /// The kernels' bounds.
    #[cfg(feature = "eval")]
    pub eval: tools_eval::EvalOptions,
    /// The syntax index's budget.
    #[cfg(feature = "ast")]
    pub ast: tools_ast::AstConfig,
    /// The debugger's configuration.
    #[cfg(feature = "debug")]
    pub debug: tools_debug::DebugConfig,
}

impl Settings {
    /// Settings from a config file, with command-line values taking precedence; fails on a
    /// value out of range, naming it.
    pub fn new(
        root: PathBuf,
        config: &Config,
        surface: Surface,
        approval: Option<ApprovalPolicy>,
    ) -> anyhow::Result<Self> {
        Ok(Settings {
            root,
            surface,
            approval: approval.or(config.approval).unwrap_or_default(),
            ask_expiry: config.ask.expiry(),
            max_output_bytes: config.output.max_bytes,
            cancel_grace: config.run.cancel_grace()?,
            shutdown_bound: config.run.shutdown()?,
            sandbox: Some(config.sandbox.command.clone()).filter(|argv| !argv.is_empty()),
            how_to_allow: tools_core::ALLOW_WITH_FLAG.to_owned(),
            #[cfg(feature = "lsp")]
            lsp: config.lsp.clone(),
            #[cfg(feature = "vibe")]
            vibe: config.vibe.clone(),
            #[cfg(feature = "eval")]
            eval: config.eval.options(),
            #[cfg(feature = "ast")]
            ast: config.ast.clone(),
            #[cfg(feature = "debug")]
            debug: config.debug.clone(),
        })
    }

    /// Settings for `options`: the root made absolute, the config file read, the choices of
    /// `options` over the file's, and the result checked. Every way of starting a run (`serve`,
    /// `call`, the Python bindings) comes through here, so they build the same run.
    pub fn load(options: &RunOptions) -> anyhow::Result<Self> {
        let root = options.root.canonicalize().with_context(|| {
            format!(
                "the workspace root {} does not exist",
                options.root.display()
            )
        })?;
        let (config, path) = Config::load(&root, options.config.as_deref())?;
        if let Some(path) = path {
            tracing::info!(config = %path.display(), "loaded the config file");
        }
        #[allow(unused_mut)]
        let mut settings = Settings::new(root, &config, options.surface, options.approval)?;
        #[cfg(feature = "vibe")]
        {
            settings.vibe.enabled |= options.vibe;
            if let Some(dir) = &options.state_dir {
                settings.vibe.state_dir = Some(dir.clone());
            }
        }
        #[cfg(not(feature = "vibe"))]
        if options.vibe {
            anyhow::bail!("this build has no vibe feature; rebuild with `--features vibe`");
        }
        settings.check()?;
        Ok(settings)
    }

    /// Checks what can be checked before a run starts (the language-server table).
    pub fn check(&self) -> anyhow::Result<()> {
        #[cfg(feature = "lsp")]
        self.lsp.validate()?;
        Ok(())
    }

    /// A dispatcher for these settings, with `port` as the question port if there is one.
    pub fn dispatcher(&self, port: Option<Arc<dyn QuestionPort>>) -> anyhow::Result<Dispatcher> {
        self.dispatcher_for(port, "default")
    }

    /// [`Settings::dispatcher`] for conversation `conversation` (one per `serve` connection).
    pub fn dispatcher_for(
        &self,
        port: Option<Arc<dyn QuestionPort>>,
        conversation: &str,
    ) -> anyhow::Result<Dispatcher> {
        let workspace = Workspace::new(&self.root)?;
        let mut builder =
            with_every_factory(with_every_family(RunBuilder::new(workspace)), Some(self))
                .with_conversation(conversation)
                .with_sandbox(self.sandbox.clone());
        if let Some(port) = port {
            builder = builder.with_ask(port, self.ask_expiry);
        }
        // The supervisor is always bound; servers are decided at call time (CORE-2), so a
        // workspace with no usable server still has `lsp status` to say why.
        #[cfg(feature = "lsp")]
        {
            let supervisor =
                tools_lsp::LspSupervisor::new(builder.workspace.root(), self.lsp.clone())?;
            builder = builder.with_lsp(supervisor);
        }
        #[cfg(feature = "vibe")]
        if self.vibe.enabled {
            builder = builder.with_vibe(self.vibe.clone(), self.surface);
        }
        // One supervisor per dispatcher, so per conversation (DBG-4).
        #[cfg(feature = "debug")]
        {
            builder = builder.with_debug(tools_debug::DebugSupervisor::new(self.debug.clone()));
        }
        let options = DispatcherOptions {
            surface: self.surface,
            approval: self.approval,
            max_output_bytes: self.max_output_bytes,
            cancel_grace: self.cancel_grace,
            how_to_allow: self.how_to_allow.clone(),
        };
        Ok(Dispatcher::new(builder.registry(), options))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(registry: &Registry) -> Vec<&'static str> {
        registry.specs().map(|spec| spec.name).collect()
    }

    #[test]
    fn core_1_ask_user_is_registered_only_with_a_question_port() {
        let dir = tempfile::tempdir().unwrap();
        let bare = RunBuilder::new(Workspace::new(dir.path()).unwrap()).registry();
        assert_eq!(names(&bare), ["apply_patch", "edit", "read", "write"]);
        let port = Arc::new(NoHuman {
            reason: "test".into(),
        });
        let bound = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .with_ask(port, Duration::from_secs(1))
            .registry();
        let expected: &[&str] = if cfg!(feature = "ask") {
            &["apply_patch", "ask_user", "edit", "read", "write"]
        } else {
            &["apply_patch", "edit", "read", "write"]
        };
        assert_eq!(names(&bound), expected);
    }

    #[test]
    fn core_3_every_tool_has_the_tier_of_the_spec() {
        let registry = catalog().unwrap();
        let tiers: Vec<(&str, &str)> = registry
            .specs()
            .map(|s| (s.name, s.tier.as_str()))
            .collect();
        let mut expected = vec![
            ("apply_patch", "write"),
            ("edit", "write"),
            ("read", "read"),
            ("write", "write"),
        ];
        if cfg!(feature = "ask") {
            expected.push(("ask_user", "read"));
        }
        if cfg!(feature = "ast") {
            expected.extend([
                ("ast_edit", "write"),
                ("ast_grep", "read"),
                ("resolve", "write"),
            ]);
        }
        if cfg!(feature = "eval") {
            expected.push(("eval", "exec"));
        }
        if cfg!(feature = "debug") {
            expected.push(("debug", "exec"));
        }
        if cfg!(feature = "lsp") {
            expected.extend([
                ("lsp", "read"),
                ("lsp_code_action", "write"),
                ("lsp_rename", "write"),
            ]);
        }
        // VIBE-1: all five are read tier.
        if cfg!(feature = "vibe") {
            expected.extend([
                ("vibe_kill", "read"),
                ("vibe_list", "read"),
                ("vibe_send", "read"),
                ("vibe_spawn", "read"),
                ("vibe_wait", "read"),
            ]);
        }
        expected.sort();
        assert_eq!(tiers, expected);
    }

    #[cfg(feature = "lsp")]
    #[test]
    fn core_1_lsp_tools_are_registered_only_with_a_supervisor() {
        let dir = tempfile::tempdir().unwrap();
        let bare = RunBuilder::new(Workspace::new(dir.path()).unwrap()).registry();
        assert!(bare.spec("lsp").is_none() && bare.spec("lsp_rename").is_none());
        let workspace = Workspace::new(dir.path()).unwrap();
        let supervisor =
            tools_lsp::LspSupervisor::new(workspace.root(), tools_lsp::LspConfig::default())
                .unwrap();
        let bound = RunBuilder::new(workspace).with_lsp(supervisor).registry();
        assert_eq!(
            names(&bound),
            [
                "apply_patch",
                "edit",
                "lsp",
                "lsp_code_action",
                "lsp_rename",
                "read",
                "write"
            ]
        );
    }

    #[cfg(feature = "debug")]
    #[test]
    fn dbg_1_debug_is_registered_only_with_a_supervisor_on_its_lane() {
        let dir = tempfile::tempdir().unwrap();
        let bare = RunBuilder::new(Workspace::new(dir.path()).unwrap()).registry();
        assert!(bare.spec("debug").is_none());
        let bound = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .with_conversation("c1")
            .with_debug(tools_debug::DebugSupervisor::new(Default::default()))
            .registry();
        assert_eq!(
            names(&bound),
            ["apply_patch", "debug", "edit", "read", "write"]
        );
        let spec = bound.spec("debug").unwrap();
        assert_eq!(spec.lane, Some(tools_core::Lane::DEBUG));
        assert_eq!(bound.run().conversation, "c1");
    }

    #[cfg(feature = "ast")]
    #[test]
    fn core_1_ast_tools_are_registered_only_with_the_grammars_bound() {
        let dir = tempfile::tempdir().unwrap();
        let bare = RunBuilder::new(Workspace::new(dir.path()).unwrap()).registry();
        assert!(bare.spec("ast_grep").is_none());
        let bound = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .with_ast(tools_ast::SearchOptions::default(), 0)
            .registry();
        assert_eq!(
            names(&bound),
            [
                "apply_patch",
                "ast_edit",
                "ast_grep",
                "edit",
                "read",
                "resolve",
                "write"
            ]
        );
    }
}
