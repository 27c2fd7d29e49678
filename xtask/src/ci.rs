//! `cargo xtask ci`: the one command that installs what the tests need on a fresh machine and
//! runs every check and test. `.ci/run` calls exactly this.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};

/// Python packages the tests and benchmarks import, as (module, package to install).
const PYTHON_PACKAGES: &[(&str, &str)] = &[
    ("pandas", "pandas"),
    ("matplotlib", "matplotlib"),
    ("tabulate", "tabulate"),
    ("ipykernel", "ipykernel"),
    ("jupyter_client", "jupyter_client"),
    // The Python bindings: maturin builds the wheel, pytest runs its tests, and the MCP SDK
    // is the client its `agent-tools serve` tests talk to, pinned: those tests use its
    // 2026-07-28 client (discover, input_required rounds, client extensions).
    ("maturin", "maturin>=1.9,<2"),
    ("pytest", "pytest"),
    ("mcp", "mcp==2.3.0"),
    // The clients and SDKs the wire-contract tests hold the results and definitions to:
    // pydantic-ai's MCP toolset (over FastMCP's client), the Agents SDK's strict-schema pass,
    // and mypy over a loop with the `openai` and `anthropic` SDKs' own parameter types.
    ("pydantic_ai", "pydantic-ai-slim[mcp]==2.78.0"),
    ("agents", "openai-agents==0.24.0"),
    ("openai", "openai==3.63.0"),
    ("anthropic", "anthropic==2.17.0"),
    ("mypy", "mypy==2.4.1"),
    // The Kubernetes manifests' schemas, offline (`cargo xtask container`): kubectl cannot
    // check them without an API server.
    ("kubernetes_validate", "kubernetes-validate==1.37.0"),
];

/// The umbrella's family features, read from its manifest (every feature but `default`);
/// each must build alone.
fn family_features(root: &Path) -> anyhow::Result<Vec<String>> {
    let path = root.join("crates/agent-tools/Cargo.toml");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let manifest: toml::Table =
        toml::from_str(&text).with_context(|| format!("{} is not valid", path.display()))?;
    let features = manifest
        .get("features")
        .and_then(|features| features.as_table())
        .with_context(|| format!("{} has no [features]", path.display()))?;
    Ok(features
        .keys()
        .filter(|name| *name != "default")
        .cloned()
        .collect())
}

/// The language servers the tests drive, pinned to the versions the tests were written
/// against (their messages are part of what the tests check).
pub(crate) const BASEDPYRIGHT: &str = "basedpyright==1.40.2";
pub(crate) const TYPESCRIPT_LANGUAGE_SERVER: &str = "typescript-language-server@5.3.0";
/// The MCP TypeScript SDK the client test drives `serve` with (issue 21).
const MCP_TYPESCRIPT_SDK: &str = "@modelcontextprotocol/sdk@1.32.2";
pub(crate) const TYPESCRIPT: &str = "typescript@5.9.3";
/// Node packages installed each in a folder of its own under `.tools`, as (folder, package,
/// version), because each brings a dependency tree of its own:
/// - the MCP Inspector, whose CLI the client test drives (strict schema check, calls): it
///   brings the SDK's next major version;
/// - the agent CLIs the agent CLI test drives headless against a scripted model (issue 39),
///   with Claude Code's and Codex's native binaries in their platform packages.
const PINNED_IN_OWN_FOLDER: &[(&str, &str, &str)] = &[
    ("inspector", "@modelcontextprotocol/inspector", "2.12.0"),
    ("claude-code", "@anthropic-ai/claude-code", "2.1.328"),
    ("codex", "@openai/codex", "0.169.0"),
    ("gemini-cli", "@google/gemini-cli", "0.61.0"),
];
/// The Python debug adapter the debugger tests drive.
pub(crate) const DEBUGPY: &str = "debugpy==1.8.22";

/// A Debian package the tests drive, by the binary that says it is installed.
pub(crate) struct DebianPackage {
    pub(crate) binary: &'static str,
    pub(crate) package: &'static str,
    /// Whether the container image carries it too (`cargo xtask image`): what a run drives
    /// does, what only the tests need does not.
    pub(crate) in_image: bool,
}

/// The Debian packages the tests drive, installed with `apt-get` when missing.
pub(crate) const DEBIAN_PACKAGES: &[DebianPackage] = &[
    // The C and C++ language server.
    DebianPackage {
        binary: "clangd",
        package: "clangd",
        in_image: true,
    },
    // The eval sandbox test (EVAL-9); in the image, the container is the run's sandbox.
    DebianPackage {
        binary: "bwrap",
        package: "bubblewrap",
        in_image: false,
    },
    // lldb-dap, as Debian's lldb-19 ships it.
    DebianPackage {
        binary: "lldb-dap-19",
        package: "lldb-19",
        in_image: true,
    },
    // delve, and the Go it builds what it debugs with.
    DebianPackage {
        binary: "dlv",
        package: "delve",
        in_image: true,
    },
    DebianPackage {
        binary: "go",
        package: "golang-go",
        in_image: true,
    },
    // The C compiler of the debugger tests' programs, and of Go's cgo.
    DebianPackage {
        binary: "gcc",
        package: "gcc",
        in_image: true,
    },
    // clangd's own compiler: the C checker of `cargo xtask truth`.
    DebianPackage {
        binary: "clang-14",
        package: "clang-14",
        in_image: false,
    },
    // The container test (`cargo xtask container`): the engine, the Debian rootfs the image's
    // base is built from where no registry is reachable, and kubectl to check the Kubernetes
    // manifests offline.
    DebianPackage {
        binary: "dockerd",
        package: "docker.io",
        in_image: false,
    },
    DebianPackage {
        binary: "debootstrap",
        package: "debootstrap",
        in_image: false,
    },
    DebianPackage {
        binary: "kubectl",
        package: "kubernetes-client",
        in_image: false,
    },
];

pub(crate) fn run() -> anyhow::Result<()> {
    let root = crate::project_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    setup()?;
    step(&cargo, &["fmt", "--all", "--", "--check"], &root)?;
    step(
        &cargo,
        &[
            "clippy",
            "--workspace",
            "--all-targets",
            "--",
            "-D",
            "warnings",
        ],
        &root,
    )?;
    // Each family feature must build on its own (STYLE: feature flags).
    step(
        &cargo,
        &["check", "-p", "agent-tools", "--no-default-features"],
        &root,
    )?;
    for feature in family_features(&root)? {
        step(
            &cargo,
            &[
                "check",
                "-p",
                "agent-tools",
                "--no-default-features",
                "--features",
                &feature,
            ],
            &root,
        )?;
    }
    if !which("cargo-deny") {
        step(&cargo, &["install", "cargo-deny", "--locked"], &root)?;
    }
    // Advisories need a database this machine cannot fetch; the other checks are offline.
    step(
        &cargo,
        &["deny", "check", "bans", "licenses", "sources"],
        &root,
    )?;
    // Tests that need a real server or interpreter fail rather than skip when CI is set; each
    // one that found something missing is written to the skip log, counted at the end.
    let skips = root.join("target/test-skips.log");
    let _ = std::fs::remove_file(&skips);
    let mut test = Command::new(&cargo);
    test.args(["test", "--workspace", "--no-fail-fast"])
        .current_dir(&root)
        .env("CI", "true")
        .env("INSTA_UPDATE", "no")
        .env(SKIP_LOG, &skips);
    let tested = run_command("cargo test --workspace", test);
    report_skips(&skips);
    tested?;
    python_bindings(&root)?;
    // Diagnostics on write against the checkers' own answers, on real projects (LSP-6).
    eprintln!("\n$ cargo xtask truth");
    crate::truth::run(&[])?;
    // The run in a real container (issue 38), with the dev binary the tests and the truth
    // suite have built already: the release profile's fat LTO would add minutes, and what is
    // tested here is the image around the binary.
    eprintln!("\n$ cargo xtask container --profile dev");
    crate::container::run(&["--profile", "dev"])?;
    Ok(())
}

/// The environment variable tools-test-support's `require` appends each skip to (its
/// `SKIP_LOG`; xtask does not depend on the test support crate).
const SKIP_LOG: &str = "AGENT_TOOLS_SKIP_LOG";

/// Prints how many tests found what they drive missing, and which: under `CI=true` each of
/// them failed, and a local run that set the log sees what it did not test.
fn report_skips(log: &Path) {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let skipped: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
    println!(
        "== skipped for a missing server, adapter or interpreter: {}",
        skipped.len()
    );
    for line in skipped {
        println!("   {line}");
    }
}

/// `cargo xtask setup`: installs what the tests need (toolchain components, language servers,
/// debug adapters, the Python and Node packages, the container engine), each only when
/// missing, and starts the container engine's daemon when none answers; `cargo xtask ci`
/// begins with it.
pub(crate) fn setup() -> anyhow::Result<()> {
    let root = crate::project_root();
    step(
        "rustup",
        &[
            "component",
            "add",
            "rustfmt",
            "clippy",
            "rust-analyzer",
            "rust-src",
        ],
        &root,
    )?;
    install_language_servers(&root)?;
    // The container test's engine: CI's machine starts no services of its own.
    crate::image::ensure_daemon(&root)
}

/// Builds the Python wheel (dev profile: the release profile's fat LTO takes minutes), installs
/// it into `.venv` as `pip install` would, and runs its pytest suite against it.
fn python_bindings(root: &Path) -> anyhow::Result<()> {
    let wheels = root.join("target/wheels-ci");
    // Only this build's wheel may be there when it is picked up below.
    if wheels.exists() {
        std::fs::remove_dir_all(&wheels)
            .with_context(|| format!("cannot empty {}", wheels.display()))?;
    }
    let venv = root.join(".venv/bin");
    let wheels_arg = wheels.display().to_string();
    step(
        &venv.join("maturin").display().to_string(),
        &[
            "build",
            "--profile",
            "dev",
            "--manifest-path",
            "crates/agent-tools-py/Cargo.toml",
            "--interpreter",
            &venv.join("python").display().to_string(),
            "--out",
            &wheels_arg,
        ],
        root,
    )?;
    let wheel = std::fs::read_dir(&wheels)
        .with_context(|| format!("cannot list {}", wheels.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.extension().is_some_and(|ext| ext == "whl"))
        .with_context(|| format!("maturin left no wheel in {}", wheels.display()))?;
    // The package was once built under the distribution name `agent-tools` (taken on PyPI by
    // an unrelated project); a venv that still has it would hold the module twice.
    step(
        &venv.join("pip").display().to_string(),
        &[
            "uninstall",
            "--quiet",
            "--yes",
            "--disable-pip-version-check",
            "agent-tools",
        ],
        root,
    )?;
    step(
        &venv.join("pip").display().to_string(),
        &[
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "--force-reinstall",
            "--no-deps",
            &wheel.display().to_string(),
        ],
        root,
    )?;
    let mut pytest = Command::new(venv.join("pytest"));
    pytest
        .args(["-q", "crates/agent-tools-py/tests"])
        .current_dir(root)
        .env("CI", "true");
    run_command("pytest crates/agent-tools-py/tests", pytest)?;
    sdist_installs(root)
}

/// The sdist builds with `pip install` where Rust is present (issue 21), and what it installs
/// works: a run in Python reads a file, and the console script answers. The dev profile and
/// the workspace's target folder keep it to compiling the workspace's own crates once more.
pub(crate) fn sdist_installs(root: &Path) -> anyhow::Result<()> {
    let out = root.join("target/sdist-ci");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot empty {}", out.display()))?;
    }
    let venv = root.join(".venv/bin");
    step(
        &venv.join("maturin").display().to_string(),
        &[
            "sdist",
            "--manifest-path",
            "crates/agent-tools-py/Cargo.toml",
            "--out",
            &out.display().to_string(),
        ],
        root,
    )?;
    let sdist = std::fs::read_dir(&out)
        .with_context(|| format!("cannot list {}", out.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.display().to_string().ends_with(".tar.gz"))
        .with_context(|| format!("maturin left no sdist in {}", out.display()))?;
    let installed = out.join("installed");
    let mut pip = Command::new(venv.join("pip"));
    pip.args([
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-build-isolation",
        "--no-cache-dir",
        "--no-deps",
        "--target",
    ])
    .arg(&installed)
    .arg(&sdist)
    .current_dir(root)
    // The build backend runs `maturin` from PATH.
    .env("PATH", prepend_path(&venv))
    .env("MATURIN_PEP517_ARGS", "--profile dev")
    .env("CARGO_TARGET_DIR", root.join("target"));
    run_command("pip install the sdist", pip)?;
    let workspace = out.join("workspace");
    std::fs::create_dir_all(&workspace)?;
    std::fs::write(workspace.join("hello.txt"), "hello from the sdist\n")?;
    let mut python = Command::new(venv.join("python"));
    python
        .args([
            "-c",
            "import sys, agent_tools\n\
             with agent_tools.Run(sys.argv[1]) as run:\n\
             \x20   read = run.call('read', {'path': 'hello.txt'})\n\
             assert 'hello from the sdist' in read.text, read.text\n\
             assert agent_tools.__file__.startswith(sys.argv[2]), agent_tools.__file__\n\
             print('the sdist installs and runs:', read.text.strip())",
        ])
        .arg(&workspace)
        .arg(&installed)
        .env("PYTHONPATH", &installed)
        .current_dir(root);
    run_command("python: a run from the installed sdist", python)?;
    step(
        &installed.join("bin/agent-tools").display().to_string(),
        &["--version"],
        root,
    )
}

/// Installs the language servers the tests use, each only when it is missing, so a second
/// run costs a few file checks: basedpyright into the project's `.venv`, clangd from the
/// distribution, typescript-language-server and typescript under `.tools/node`, and the MCP
/// Inspector and the agent CLIs each in a folder of its own under `.tools`. The tests look
/// for them in exactly these places (and on `PATH`).
fn install_language_servers(root: &Path) -> anyhow::Result<()> {
    if !root.join(".venv/bin/basedpyright-langserver").is_file() {
        if !root.join(".venv/bin/python").is_file() {
            step("python3", &["-m", "venv", ".venv"], root)?;
        }
        let pip = root.join(".venv/bin/pip");
        step(
            &pip.display().to_string(),
            &[
                "install",
                "--quiet",
                "--disable-pip-version-check",
                BASEDPYRIGHT,
            ],
            root,
        )?;
    }
    // The eval tests import these; the eval benchmark drives ipykernel with jupyter_client.
    let python = root.join(".venv/bin/python");
    let missing: Vec<&str> = PYTHON_PACKAGES
        .iter()
        .filter(|(module, _)| {
            !Command::new(&python)
                .args(["-c", &format!("import {module}")])
                .output()
                .is_ok_and(|out| out.status.success())
        })
        .map(|(_, package)| *package)
        .collect();
    if !missing.is_empty() {
        let pip = root.join(".venv/bin/pip").display().to_string();
        let mut args = vec!["install", "--quiet", "--disable-pip-version-check"];
        args.extend(&missing);
        step(&pip, &args, root)?;
    }
    let has_debugpy = Command::new(root.join(".venv/bin/python"))
        .args(["-c", "import debugpy"])
        .status()
        .is_ok_and(|status| status.success());
    if !has_debugpy {
        let pip = root.join(".venv/bin/pip");
        step(
            &pip.display().to_string(),
            &["install", "--quiet", "--disable-pip-version-check", DEBUGPY],
            root,
        )?;
    }
    install_debian(root, DEBIAN_PACKAGES.iter())?;
    let node_bin = root.join(".tools/node/node_modules/.bin");
    let sdk = root.join(".tools/node/node_modules/@modelcontextprotocol/sdk/package.json");
    let sdk_pinned = std::fs::read_to_string(&sdk).is_ok_and(|package| {
        package.contains(&format!(
            "\"version\": \"{}\"",
            MCP_TYPESCRIPT_SDK.rsplit('@').next().unwrap_or_default()
        ))
    });
    if !node_bin.join("typescript-language-server").is_file()
        || !node_bin.join("tsc").is_file()
        || !sdk_pinned
    {
        npm_install(
            root,
            ".tools/node",
            &[TYPESCRIPT_LANGUAGE_SERVER, TYPESCRIPT, MCP_TYPESCRIPT_SDK],
        )?;
    }
    // Each in a folder of its own: the Inspector brings the SDK's next major version, and
    // the agent CLIs theirs.
    for (folder, package, version) in PINNED_IN_OWN_FOLDER {
        let manifest = root
            .join(".tools")
            .join(folder)
            .join("node_modules")
            .join(package)
            .join("package.json");
        let pinned = std::fs::read_to_string(&manifest)
            .is_ok_and(|text| text.contains(&format!("\"version\": \"{version}\"")));
        if !pinned {
            npm_install(
                root,
                &format!(".tools/{folder}"),
                &[&format!("{package}@{version}")],
            )?;
        }
    }
    Ok(())
}

/// Installs those of `packages` whose binary is missing, with one `apt-get install`.
pub(crate) fn install_debian<'a>(
    root: &Path,
    packages: impl Iterator<Item = &'a DebianPackage>,
) -> anyhow::Result<()> {
    let missing: Vec<&str> = packages
        .filter(|package| !which(package.binary))
        .map(|package| package.package)
        .collect();
    if missing.is_empty() {
        return Ok(());
    }
    step("apt-get", &["update", "-qq"], root)?;
    let mut args = vec!["install", "-y", "-qq"];
    args.extend(&missing);
    step("apt-get", &args, root)
}

/// PATH with `dir` first.
fn prepend_path(dir: &Path) -> std::ffi::OsString {
    let mut paths = vec![dir.to_path_buf()];
    paths.extend(std::env::split_paths(
        &std::env::var_os("PATH").unwrap_or_default(),
    ));
    std::env::join_paths(paths).unwrap_or_default()
}

/// `npm install` of `packages` into the folder `prefix` (relative to `root`), quietly.
fn npm_install(root: &Path, prefix: &str, packages: &[&str]) -> anyhow::Result<()> {
    let mut args = vec![
        "install",
        "--silent",
        "--no-audit",
        "--no-fund",
        "--prefix",
        prefix,
    ];
    args.extend_from_slice(packages);
    step("npm", &args, root)
}

pub(crate) fn step(program: &str, args: &[&str], root: &Path) -> anyhow::Result<()> {
    let mut command = Command::new(program);
    command.args(args).current_dir(root);
    run_command(&format!("{program} {}", args.join(" ")), command)
}

pub(crate) fn run_command(label: &str, mut command: Command) -> anyhow::Result<()> {
    println!("== {label}");
    let status = command
        .status()
        .with_context(|| format!("cannot start `{label}`"))?;
    if !status.success() {
        bail!("`{label}` failed ({status})");
    }
    Ok(())
}

pub(crate) fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}
