//! The real projects the truth suite edits: where each comes from (a pinned version from its
//! registry), what it needs beside its own files to be checked (a toolchain file, a
//! tsconfig, a compilation database), its checker, and the edits an agent would make.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

use super::oracle::Checker;

/// Where a project's pinned sources come from.
pub(crate) enum Source {
    /// A crate from crates.io.
    Crate {
        name: &'static str,
        version: &'static str,
    },
    /// A source distribution from PyPI.
    Sdist {
        name: &'static str,
        version: &'static str,
    },
    /// A package from the npm registry.
    Npm {
        name: &'static str,
        version: &'static str,
    },
}

/// One write an agent makes with `edit`.
#[derive(Clone, Copy)]
pub(crate) struct Step {
    /// What the edit does, for the table.
    pub(crate) label: &'static str,
    /// The file, relative to the project root.
    pub(crate) file: &'static str,
    pub(crate) old: &'static str,
    pub(crate) new: &'static str,
}

impl Step {
    /// The edit that undoes `step`.
    pub(crate) fn revert(label: &'static str, step: &Step) -> Step {
        Step {
            label,
            file: step.file,
            old: step.new,
            new: step.old,
        }
    }
}

/// A project, its checker and its edits.
pub(crate) struct Project {
    pub(crate) name: &'static str,
    /// The language server the writes are checked by.
    pub(crate) server: &'static str,
    pub(crate) source: Source,
    /// Files the suite adds beside the project's own (relative path, content), written after
    /// the `{python_include}` and `{root}` placeholders are filled in.
    pub(crate) extra: Vec<(&'static str, String)>,
    pub(crate) checker: Checker,
    /// The file an agent would look at first (the server starts on it).
    pub(crate) first_look: &'static str,
    pub(crate) steps: Vec<Step>,
}

/// The suite: a crate with tests and benches, a typed PyPI package whose stubs shadow its
/// modules and re-export them with `*`, an npm package whose TypeScript sources import with
/// ESM `.js` specifiers and through index barrels, and a PyPI package's C extension with a
/// compilation database.
pub(crate) fn all(repo: &Path) -> Vec<Project> {
    let toolchain = std::fs::read_to_string(repo.join("rust-toolchain.toml")).unwrap_or_default();

    let semver_util = Step {
        label: "add a parameter to a test helper used by two test files",
        file: "tests/util/mod.rs",
        old: "pub(super) fn version(text: &str) -> Version {",
        new: "pub(super) fn version(text: &str, strict: bool) -> Version {",
    };
    let semver_parse = Step {
        label: "change a public signature's parameter type",
        file: "src/lib.rs",
        old: "    pub fn parse(text: &str) -> Result<Self, Error> {\n        Version::from_str(text)",
        new: "    pub fn parse(text: &String) -> Result<Self, Error> {\n        Version::from_str(text)",
    };
    let semver_lib = Step {
        label: "break the library (its tests and benches are not compiled)",
        file: "src/lib.rs",
        old: "    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {",
        new: "    pub const fn new(major: u64, minor: u64, patch: u64) -> Self {\n        let _: u32 = \"not a number\";",
    };

    let chunked = Step {
        label: "add a required parameter to a stub's function",
        file: "more_itertools/more.pyi",
        old: "def chunked(\n    iterable: Iterable[_T], n: int | None, strict: bool = ...\n) -> Iterator[list[_T]]: ...",
        new: "def chunked(\n    iterable: Iterable[_T], n: int | None, width: int, strict: bool = ...\n) -> Iterator[list[_T]]: ...",
    };
    let take = Step {
        label: "change a stub parameter's type (its module imports it too)",
        file: "more_itertools/recipes.pyi",
        old: "def take(n: int, iterable: Iterable[_T]) -> list[_T]: ...",
        new: "def take(n: str, iterable: Iterable[_T]) -> list[_T]: ...",
    };

    let add_issue = Step {
        label: "add a parameter to a helper imported as `./helpers/parseUtil.js`",
        file: "src/v3/helpers/parseUtil.ts",
        old: "export function addIssueToContext(ctx: ParseContext, issueData: IssueData): void {",
        new: "export function addIssueToContext(ctx: ParseContext, issueData: IssueData, code: number): void {",
    };
    let normalize = Step {
        label: "add a parameter to a function re-exported by `core/index.js` as a namespace",
        file: "src/v4/core/util.ts",
        old: "export function normalizeParams<T>(_params: T): Normalize<T> {",
        new: "export function normalizeParams<T>(_params: T, strict: boolean): Normalize<T> {",
    };

    let decode = Step {
        label: "add a parameter to a header's prototype (a caller and the definition break)",
        file: "lib/ultrajson.h",
        old: "EXPORTFUNCTION JSOBJ JSON_DecodeObject(JSONObjectDecoder *dec, const char *buffer, size_t cbBuffer);",
        new: "EXPORTFUNCTION JSOBJ JSON_DecodeObject(JSONObjectDecoder *dec, const char *buffer, size_t cbBuffer, int depth);",
    };
    let decode_error = Step {
        label: "turn a header's variable into a function (a header that needs its includer)",
        file: "python/ujson.h",
        old: "extern PyObject* JSONDecodeError;",
        new: "extern PyObject* JSONDecodeError(void);",
    };

    vec![
        Project {
            name: "semver",
            server: "rust-analyzer",
            source: Source::Crate {
                name: "semver",
                version: "1.0.23",
            },
            extra: vec![("rust-toolchain.toml", toolchain)],
            checker: Checker::Cargo,
            first_look: "src/lib.rs",
            steps: vec![
                semver_util,
                Step::revert("revert the test helper", &semver_util),
                semver_parse,
                Step::revert("revert the signature", &semver_parse),
                semver_lib,
                Step::revert("revert the break (what it hid comes back)", &semver_lib),
            ],
        },
        Project {
            name: "more-itertools",
            server: "basedpyright",
            source: Source::Sdist {
                name: "more-itertools",
                version: "10.5.0",
            },
            extra: Vec::new(),
            checker: Checker::Basedpyright,
            first_look: "more_itertools/more.py",
            steps: vec![
                chunked,
                Step::revert("revert the stub", &chunked),
                take,
                Step::revert("revert the stub", &take),
            ],
        },
        Project {
            name: "zod",
            server: "typescript-language-server",
            source: Source::Npm {
                name: "zod",
                version: "3.25.76",
            },
            extra: vec![("tsconfig.json", ZOD_TSCONFIG.to_owned())],
            checker: Checker::Tsc,
            first_look: "src/v3/types.ts",
            steps: vec![
                add_issue,
                Step::revert("revert the helper", &add_issue),
                normalize,
                Step::revert("revert the function", &normalize),
            ],
        },
        Project {
            name: "ujson",
            server: "clangd",
            source: Source::Sdist {
                name: "ujson",
                version: "5.10.0",
            },
            extra: vec![("compile_commands.json", UJSON_DATABASE.to_owned())],
            checker: Checker::Clang,
            first_look: "python/JSONtoObj.c",
            steps: vec![
                decode,
                Step::revert("revert the prototype", &decode),
                decode_error,
                Step::revert("revert the header", &decode_error),
            ],
        },
    ]
}

/// zod ships its TypeScript sources but not its tsconfig: strict, ESM resolution (its
/// imports name `.js` files for `.ts` sources), its tests left out (they import vitest).
const ZOD_TSCONFIG: &str = r#"{
  "compilerOptions": {
    "strict": true,
    "noEmit": true,
    "target": "es2022",
    "lib": ["es2022", "dom"],
    "module": "nodenext",
    "moduleResolution": "nodenext",
    "skipLibCheck": true,
    "types": []
  },
  "include": ["src/**/*.ts"],
  "exclude": ["src/**/tests/**", "src/**/benchmarks/**", "src/**/*.test.ts"]
}
"#;

/// ujson's C sources as its setup.py compiles them (the C++ double-conversion part left
/// out), against this machine's Python headers.
const UJSON_DATABASE: &str = r#"[
  {"directory": "{root}", "file": "python/ujson.c", "arguments": ["gcc", "-D_GNU_SOURCE", "-I", "python", "-I", "lib", "-I", "{python_include}", "-c", "python/ujson.c"]},
  {"directory": "{root}", "file": "python/objToJSON.c", "arguments": ["gcc", "-D_GNU_SOURCE", "-I", "python", "-I", "lib", "-I", "{python_include}", "-c", "python/objToJSON.c"]},
  {"directory": "{root}", "file": "python/JSONtoObj.c", "arguments": ["gcc", "-D_GNU_SOURCE", "-I", "python", "-I", "lib", "-I", "{python_include}", "-c", "python/JSONtoObj.c"]},
  {"directory": "{root}", "file": "lib/ultrajsonenc.c", "arguments": ["gcc", "-D_GNU_SOURCE", "-I", "python", "-I", "lib", "-I", "{python_include}", "-c", "lib/ultrajsonenc.c"]},
  {"directory": "{root}", "file": "lib/ultrajsondec.c", "arguments": ["gcc", "-D_GNU_SOURCE", "-I", "python", "-I", "lib", "-I", "{python_include}", "-c", "lib/ultrajsondec.c"]}
]
"#;

impl Project {
    /// A fresh copy of the project's pristine sources in `work`, with the suite's extra
    /// files; the sources are downloaded once into `cache`.
    pub(crate) fn prepare(
        &self,
        repo: &Path,
        cache: &Path,
        work: &Path,
    ) -> anyhow::Result<PathBuf> {
        let pristine = self.fetch(repo, cache)?;
        let root = work.join(self.name);
        if root.exists() {
            std::fs::remove_dir_all(&root)
                .with_context(|| format!("cannot empty {}", root.display()))?;
        }
        std::fs::create_dir_all(work)?;
        sh(Command::new("cp").arg("-a").arg(&pristine).arg(&root))?;
        let python_include = python_include(repo)?;
        for (path, content) in &self.extra {
            let content = content
                .replace("{root}", &root.display().to_string())
                .replace("{python_include}", &python_include);
            std::fs::write(root.join(path), content)?;
        }
        if let Source::Crate { .. } = self.source {
            // Outside any workspace of ours, with a target folder of its own.
            let manifest = root.join("Cargo.toml");
            let mut text = std::fs::read_to_string(&manifest)?;
            text.push_str("\n[workspace]\n");
            std::fs::write(&manifest, text)?;
        }
        Ok(root)
    }

    fn fetch(&self, repo: &Path, cache: &Path) -> anyhow::Result<PathBuf> {
        std::fs::create_dir_all(cache)?;
        let (name, version) = match self.source {
            Source::Crate { name, version }
            | Source::Sdist { name, version }
            | Source::Npm { name, version } => (name, version),
        };
        let dir = cache.join(format!("{name}-{version}"));
        if dir.exists() {
            return Ok(dir);
        }
        let unpacked = cache.join(format!("{name}-{version}.unpacking"));
        if unpacked.exists() {
            std::fs::remove_dir_all(&unpacked)?;
        }
        std::fs::create_dir_all(&unpacked)?;
        match self.source {
            Source::Crate { .. } => {
                let archive = cache.join(format!("{name}-{version}.crate"));
                sh(Command::new("curl")
                    .args(["-sSfL", "-o"])
                    .arg(&archive)
                    .arg(format!(
                        "https://static.crates.io/crates/{name}/{name}-{version}.crate"
                    )))?;
                sh(Command::new("tar")
                    .arg("xzf")
                    .arg(&archive)
                    .arg("-C")
                    .arg(&unpacked))?;
                std::fs::rename(unpacked.join(format!("{name}-{version}")), &dir)?;
            }
            Source::Sdist { .. } => {
                sh(Command::new(repo.join(".venv/bin/pip"))
                    .args([
                        "download",
                        "--quiet",
                        "--disable-pip-version-check",
                        "--no-deps",
                        "--no-binary",
                        ":all:",
                        "-d",
                    ])
                    .arg(&unpacked)
                    .arg(format!("{name}=={version}")))?;
                let archive = std::fs::read_dir(&unpacked)?
                    .flatten()
                    .map(|entry| entry.path())
                    .find(|path| path.to_string_lossy().ends_with(".tar.gz"))
                    .with_context(|| format!("pip downloaded no sdist of {name}=={version}"))?;
                sh(Command::new("tar")
                    .arg("xzf")
                    .arg(&archive)
                    .arg("-C")
                    .arg(&unpacked))?;
                let top = std::fs::read_dir(&unpacked)?
                    .flatten()
                    .map(|entry| entry.path())
                    .find(|path| path.is_dir())
                    .with_context(|| format!("the sdist of {name}=={version} holds no folder"))?;
                std::fs::rename(top, &dir)?;
            }
            Source::Npm { .. } => {
                sh(Command::new("npm")
                    .args(["pack", "--silent", "--pack-destination"])
                    .arg(&unpacked)
                    .arg(format!("{name}@{version}"))
                    .current_dir(&unpacked))?;
                let archive = unpacked.join(format!("{name}-{version}.tgz"));
                sh(Command::new("tar")
                    .arg("xzf")
                    .arg(&archive)
                    .arg("-C")
                    .arg(&unpacked))?;
                std::fs::rename(unpacked.join("package"), &dir)?;
            }
        }
        std::fs::remove_dir_all(&unpacked)?;
        Ok(dir)
    }
}

/// This machine's Python headers, for the C project's compilation database.
fn python_include(repo: &Path) -> anyhow::Result<String> {
    let output = Command::new(repo.join(".venv/bin/python"))
        .args([
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['include'])",
        ])
        .output()
        .context("cannot ask Python where its headers are")?;
    if !output.status.success() {
        bail!("python could not say where its headers are");
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

pub(crate) fn sh(command: &mut Command) -> anyhow::Result<()> {
    let status = command
        .stdout(std::process::Stdio::null())
        .status()
        .with_context(|| format!("cannot start {command:?}"))?;
    if !status.success() {
        bail!("{command:?} failed ({status})");
    }
    Ok(())
}
