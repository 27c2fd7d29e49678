//! `cargo xtask dist`: the Python package as it is released — a wheel built with the release
//! profile (optimised across crates, stripped) and an sdist that `pip install` builds where
//! Rust is present — into `target/dist`, with the wheel's size, its platform tag as
//! `auditwheel show` reads it (when auditwheel is installed), and how long installing it
//! into a fresh venv takes.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;

use crate::ci::step;

pub(crate) fn run() -> anyhow::Result<()> {
    let root = crate::project_root();
    let out = root.join("target/dist");
    if out.exists() {
        std::fs::remove_dir_all(&out).with_context(|| format!("cannot empty {}", out.display()))?;
    }
    let maturin = root.join(".venv/bin/maturin").display().to_string();
    let python = root.join(".venv/bin/python").display().to_string();
    let out_arg = out.display().to_string();
    let manifest = "crates/agent-tools-py/Cargo.toml";
    step(
        &maturin,
        &[
            "build",
            "--release",
            "--strip",
            "--manifest-path",
            manifest,
            "--interpreter",
            &python,
            "--out",
            &out_arg,
        ],
        &root,
    )?;
    step(
        &maturin,
        &["sdist", "--manifest-path", manifest, "--out", &out_arg],
        &root,
    )?;
    let wheel = find(&out, ".whl")?;
    let sdist = find(&out, ".tar.gz")?;
    let size = |path: &Path| std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    println!(
        "wheel: {} ({:.1} MB)\nsdist: {} ({:.1} MB)",
        wheel.display(),
        size(&wheel) as f64 / 1e6,
        sdist.display(),
        size(&sdist) as f64 / 1e6
    );
    let auditwheel = root.join(".venv/bin/auditwheel");
    match auditwheel.is_file() {
        true => step(
            &auditwheel.display().to_string(),
            &["show", &wheel.display().to_string()],
            &root,
        )?,
        false => println!(
            "auditwheel is not installed (.venv/bin/pip install auditwheel); tag not checked"
        ),
    }
    let venv = tempfile::tempdir()?;
    step(
        "python3",
        &["-m", "venv", &venv.path().display().to_string()],
        &root,
    )?;
    let pip = venv.path().join("bin/pip").display().to_string();
    let started = Instant::now();
    step(
        &pip,
        &[
            "install",
            "--quiet",
            "--disable-pip-version-check",
            &wheel.display().to_string(),
        ],
        &root,
    )?;
    println!(
        "installed the wheel into a fresh venv in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    step(
        &venv.path().join("bin/agent-tools").display().to_string(),
        &["--version"],
        &root,
    )?;
    Ok(())
}

fn find(dir: &Path, suffix: &str) -> anyhow::Result<std::path::PathBuf> {
    std::fs::read_dir(dir)
        .with_context(|| format!("cannot list {}", dir.display()))?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .find(|path| path.display().to_string().ends_with(suffix))
        .with_context(|| format!("maturin left no {suffix} in {}", dir.display()))
}
