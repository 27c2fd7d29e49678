//! `cargo xtask ci`: the one command that installs what the tests need on a fresh machine and
//! runs every check and test. `.ci/run` calls exactly this.

use std::process::Command;

use anyhow::{Context, bail};

/// The umbrella's family features; each must build alone.
const FAMILY_FEATURES: &[&str] = &["ask", "ast"];

pub(crate) fn run() -> anyhow::Result<()> {
    let root = crate::project_root();
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());

    step("rustup", &["component", "add", "rustfmt", "clippy"], &root)?;
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
    for feature in FAMILY_FEATURES {
        step(
            &cargo,
            &[
                "check",
                "-p",
                "agent-tools",
                "--no-default-features",
                "--features",
                feature,
            ],
            &root,
        )?;
    }
    if which("cargo-deny") {
        step(
            &cargo,
            &["deny", "check", "bans", "licenses", "sources"],
            &root,
        )?;
    } else {
        println!(
            "== cargo-deny is not installed: `cargo install cargo-deny --locked` to check licenses and bans"
        );
    }
    // Tests that need a real server or interpreter fail rather than skip when CI is set.
    let mut test = Command::new(&cargo);
    test.args(["test", "--workspace", "--no-fail-fast"])
        .current_dir(&root)
        .env("CI", "true")
        .env("INSTA_UPDATE", "no");
    run_command("cargo test --workspace", test)?;
    Ok(())
}

fn step(program: &str, args: &[&str], root: &std::path::Path) -> anyhow::Result<()> {
    let mut command = Command::new(program);
    command.args(args).current_dir(root);
    run_command(&format!("{program} {}", args.join(" ")), command)
}

fn run_command(label: &str, mut command: Command) -> anyhow::Result<()> {
    println!("== {label}");
    let status = command
        .status()
        .with_context(|| format!("cannot start `{label}`"))?;
    if !status.success() {
        bail!("`{label}` failed ({status})");
    }
    Ok(())
}

fn which(program: &str) -> bool {
    std::env::var_os("PATH")
        .map(|paths| std::env::split_paths(&paths).any(|dir| dir.join(program).is_file()))
        .unwrap_or(false)
}
