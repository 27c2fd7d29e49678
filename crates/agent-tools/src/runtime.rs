//! Building a run: the workspace, the resources bound to it, and the families they enable.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tools_process::Sandbox;

use tools_core::{
    ApprovalPolicy, Binding, Dispatcher, DispatcherOptions, Family, NoHuman, QuestionPort,
    Questions, Registry, RegistryBuilder, Run, Surface, Workspace,
};

use crate::config::Config;
use crate::families::FamilyConfigs;

/// Binds resources to a run and registers each family only when its resource is bound
/// (CORE-1).
pub struct RunBuilder {
    workspace: Workspace,
    questions: Option<Arc<Questions>>,
    conversation: Option<String>,
    sandbox: Option<Sandbox>,
    state_base: Option<PathBuf>,
    /// The families bound so far, by name, each ready to register its tools over its
    /// resource.
    families: BTreeMap<&'static str, BoundFamily>,
}

/// A bound family: registers its tools over its resource.
type BoundFamily = Box<dyn FnOnce(&mut RegistryBuilder) + Send>;

impl RunBuilder {
    /// A run over `workspace` with nothing bound yet: no tools until a family is bound (the
    /// file tools are the `files` family).
    pub fn new(workspace: Workspace) -> Self {
        RunBuilder {
            workspace,
            questions: None,
            conversation: None,
            sandbox: None,
            state_base: None,
            families: BTreeMap::new(),
        }
    }

    /// Binds family `F` to `resource` (a language-server supervisor, the kernels' bounds):
    /// its tools are registered over it. Binding a family again replaces the first.
    pub fn bind<F: Family>(mut self, resource: F::Resource) -> Self {
        self.families.insert(
            F::NAME,
            Box::new(move |builder: &mut RegistryBuilder| {
                crate::families::register::<F>(builder, resource)
            }),
        );
        self
    }

    /// Binds a question port: `ask_user` can be registered (its family bound), and the
    /// approval gate has an approver.
    pub fn with_ask(mut self, port: Arc<dyn QuestionPort>, expiry: Duration) -> Self {
        self.questions = Some(Arc::new(Questions::new(port, expiry)));
        self
    }

    /// Names the conversation the run serves (one per `serve` connection; DBG-1, DBG-4).
    pub fn with_conversation(mut self, id: impl Into<String>) -> Self {
        self.conversation = Some(id.into());
        self
    }

    /// Starts the run's processes through a sandbox command prefix (EVAL-9).
    pub fn with_sandbox(mut self, sandbox: Option<Sandbox>) -> Self {
        self.sandbox = sandbox;
        self
    }

    /// Keeps the run's state under `base` (`--state-dir`, `[vibe] state_dir`) rather than
    /// the default state folder.
    pub fn with_state_base(mut self, base: Option<PathBuf>) -> Self {
        self.state_base = base;
        self
    }

    /// The registry of every tool whose resource is bound: each bound family in the order of
    /// the family list.
    pub fn registry(self) -> Registry {
        let mut run = Run::new(self.workspace)
            .with_questions(self.questions)
            .with_sandbox(self.sandbox)
            .with_state_base(self.state_base);
        if let Some(id) = self.conversation {
            run = run.with_conversation(id);
        }
        let mut builder = RegistryBuilder::new(run);
        let mut families: Vec<_> = self.families.into_iter().collect();
        families.sort_by_key(|(name, _)| crate::FAMILIES.iter().position(|f| f == name));
        for (_, register) in families {
            register(&mut builder);
        }
        builder.build()
    }
}

/// Every tool this build can serve, with every family bound from its defaults, for docs and
/// `agent-tools tools`. Nothing starts and the syntax index holds nothing.
pub fn catalog() -> anyhow::Result<Registry> {
    // The workspace is never touched when listing; the temp folder is one that exists.
    let workspace = Workspace::new(std::env::temp_dir())?;
    let root = workspace.root().to_path_buf();
    let port = Arc::new(NoHuman {
        reason: "listing tools only".to_owned(),
    });
    let builder = RunBuilder::new(workspace).with_ask(port, Duration::from_secs(1));
    let binding = Binding {
        root: &root,
        surface: Surface::Full,
        sandbox: None,
        listing: true,
    };
    Ok(crate::bind_families(builder, &FamilyConfigs::default(), &binding)?.registry())
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
    /// The sandbox prefix processes start through (EVAL-9), if any; refused when the check
    /// as the run began found it unusable ([`Settings::load`]).
    pub sandbox: Option<Sandbox>,
    /// How the operator allows write and exec calls, for refusals to say.
    pub how_to_allow: String,
    /// Each built-in family's config table (`[lsp]`, `[eval]`, …), parsed and checked.
    pub families: FamilyConfigs,
    /// Where the run's state folder goes (`--state-dir`, else `[vibe] state_dir`), when
    /// chosen; the default state folder otherwise.
    pub state_base: Option<PathBuf>,
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
            sandbox: Some(config.sandbox.command.clone())
                .filter(|argv| !argv.is_empty())
                .map(Sandbox::new),
            how_to_allow: tools_core::ALLOW_WITH_FLAG.to_owned(),
            families: config.families.clone(),
            state_base: None,
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
        // `--vibe` and `--state-dir` are flags of the command line over the `[vibe]` table.
        #[cfg(feature = "vibe")]
        {
            use tools_vibe::VibeFamily;
            let mut vibe = settings.families.get::<VibeFamily>();
            vibe.enabled |= options.vibe;
            if let Some(dir) = &options.state_dir {
                vibe.state_dir = Some(dir.clone());
            }
            settings.state_base = vibe.state_dir.clone();
            settings.families.set::<VibeFamily>(vibe);
        }
        // One state folder for the whole run, whichever family writes there.
        if let Some(dir) = &options.state_dir {
            settings.state_base = Some(dir.clone());
        }
        #[cfg(not(feature = "vibe"))]
        if options.vibe {
            anyhow::bail!("this build has no vibe feature; rebuild with `--features vibe`");
        }
        // Once per run, before any registry is built: a refused prefix is logged here and
        // answered by every tool that would start a process (EVAL-9).
        settings.sandbox = settings
            .sandbox
            .take()
            .map(|sandbox| crate::sandbox::checked(sandbox, &settings.root));
        Ok(settings)
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
        let registry = self.registry(port, conversation)?;
        Ok(Dispatcher::new(registry, self.dispatcher_options()))
    }

    /// The options of every dispatcher these settings build.
    pub fn dispatcher_options(&self) -> DispatcherOptions {
        DispatcherOptions {
            surface: self.surface,
            approval: self.approval,
            max_output_bytes: self.max_output_bytes,
            cancel_grace: self.cancel_grace,
            how_to_allow: self.how_to_allow.clone(),
        }
    }

    /// The registry of a run with these settings: every built-in family its config leaves
    /// on, over the question port `port` if there is one, for conversation `conversation`.
    /// Nothing starts until a call needs it (CORE-2).
    pub fn registry(
        &self,
        port: Option<Arc<dyn QuestionPort>>,
        conversation: &str,
    ) -> anyhow::Result<Registry> {
        let workspace = Workspace::new(&self.root)?;
        let root = workspace.root().to_path_buf();
        let mut builder = RunBuilder::new(workspace)
            .with_conversation(conversation)
            .with_sandbox(self.sandbox.clone())
            .with_state_base(self.state_base.clone());
        if let Some(port) = port {
            builder = builder.with_ask(port, self.ask_expiry);
        }
        let binding = Binding {
            root: &root,
            surface: self.surface,
            sandbox: self.sandbox.as_ref(),
            listing: false,
        };
        Ok(crate::bind_families(builder, &self.families, &binding)?.registry())
    }
}

impl agent_tools_mcp::RunFactory for Settings {
    fn dispatcher(
        &self,
        port: Option<Arc<dyn QuestionPort>>,
        conversation: &str,
    ) -> Result<Dispatcher, agent_tools_mcp::BuildError> {
        Ok(self.dispatcher_for(port, conversation)?)
    }

    fn options(&self) -> DispatcherOptions {
        self.dispatcher_options()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(registry: &Registry) -> Vec<&'static str> {
        registry.specs().map(|spec| spec.name).collect()
    }

    #[cfg(feature = "ask")]
    #[test]
    fn core_1_ask_user_is_registered_only_with_a_question_port() {
        use tools_ask::AskFamily;
        let dir = tempfile::tempdir().unwrap();
        let bare = RunBuilder::new(Workspace::new(dir.path()).unwrap()).registry();
        assert_eq!(names(&bare), [] as [&str; 0]);
        let no_port = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .bind::<AskFamily>(())
            .registry();
        assert_eq!(names(&no_port), [] as [&str; 0]);
        assert_eq!(
            no_port.families().count(),
            0,
            "a family that registered nothing is not listed"
        );
        let port = Arc::new(NoHuman {
            reason: "test".into(),
        });
        let bound = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .with_ask(port, Duration::from_secs(1))
            .bind::<AskFamily>(())
            .registry();
        assert_eq!(names(&bound), ["ask_user"]);
    }

    #[test]
    fn core_3_every_tool_has_the_tier_of_the_spec() {
        let registry = catalog().unwrap();
        let tiers: Vec<(&str, &str)> = registry
            .specs()
            .map(|s| (s.name, s.tier.as_str()))
            .collect();
        let mut expected = Vec::new();
        if cfg!(feature = "files") {
            expected.extend([
                ("apply_patch", "write"),
                ("edit", "write"),
                ("read", "read"),
                ("write", "write"),
            ]);
        }
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

    #[cfg(feature = "files")]
    #[test]
    fn core_1_the_file_tools_are_a_family_bound_like_the_others() {
        let dir = tempfile::tempdir().unwrap();
        let bound = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .bind::<tools_files::FilesFamily>(())
            .registry();
        assert_eq!(names(&bound), ["apply_patch", "edit", "read", "write"]);
        assert_eq!(
            bound
                .families()
                .map(|f| (f.name, f.about))
                .collect::<Vec<_>>(),
            [("files", "files")]
        );
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
        let bound = RunBuilder::new(workspace)
            .bind::<tools_lsp::LspFamily>(supervisor)
            .registry();
        assert_eq!(names(&bound), ["lsp", "lsp_code_action", "lsp_rename"]);
    }

    #[cfg(feature = "debug")]
    #[test]
    fn dbg_1_debug_is_registered_only_with_a_supervisor_on_its_lane() {
        let dir = tempfile::tempdir().unwrap();
        let bare = RunBuilder::new(Workspace::new(dir.path()).unwrap()).registry();
        assert!(bare.spec("debug").is_none());
        let bound = RunBuilder::new(Workspace::new(dir.path()).unwrap())
            .with_conversation("c1")
            .bind::<tools_debug::DebugFamily>(tools_debug::DebugSupervisor::new(Default::default()))
            .registry();
        assert_eq!(names(&bound), ["debug"]);
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
            .bind::<tools_ast::AstFamily>((
                tools_ast::SearchOptions::default(),
                tools_ast::SyntaxIndex::new(0),
            ))
            .registry();
        assert_eq!(names(&bound), ["ast_edit", "ast_grep", "resolve"]);
    }
}
