//! `diagnostics "*"`: the project checker of a server's root (`cargo check`, `basedpyright`,
//! `tsc --noEmit`, `go vet`, `dart analyze`), run to the end and its findings read from the
//! output format each one writes.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;
use std::sync::Arc;

use tools_process::{Command, RunLimits, Sandbox, SandboxRefusal, SearchPath, run_to_end};

use tools_lsp_client::CheckerFormat;
use tools_lsp_client::ServerSpec;

/// One finding of a checker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Finding {
    /// The file, absolute; `None` for findings about the whole project.
    pub(crate) path: Option<PathBuf>,
    /// 1-based line.
    pub(crate) line: Option<u32>,
    /// 1-based column, when the checker gives one: two findings with one message on one
    /// line (two broken calls) are two.
    pub(crate) column: Option<u32>,
    /// `error`, `warning`, `info` or `note`.
    pub(crate) severity: String,
    pub(crate) code: Option<String>,
    pub(crate) message: String,
}

/// What a checker run produced.
#[derive(Debug)]
pub(crate) struct CheckRun {
    /// The command line, as shown.
    pub(crate) command: String,
    /// What it checked, when the command line alone does not say it plainly (cargo's
    /// targets and features).
    pub(crate) scope: Option<String>,
    pub(crate) findings: Vec<Finding>,
    /// What the reader must know about the run (its output was cut).
    pub(crate) notes: Vec<String>,
}

/// How much of a checker's stdout (and of its stderr) is read: a large project's JSON report
/// is tens of MiB at most; past this the rest is counted and dropped.
const MAX_OUTPUT: usize = 64 << 20;

/// Why a project checker did not run. Each message is one of the reasons a project check
/// lists for the roots it skipped.
#[derive(Debug, thiserror::Error)]
pub(crate) enum CheckerError {
    #[error("{server} has no project checker; ask `diagnostics` for single files instead")]
    NoChecker { server: String },
    #[error(
        "the project checker of {server} was not found: looked for {} in the project's tool \
         folders and PATH; install it, or set `checker` under [lsp.servers.{server}]",
        programs.join(", ")
    )]
    NotFound {
        server: String,
        /// The programs looked for, each in backticks.
        programs: Vec<String>,
    },
    #[error(
        "`{command}` did not finish within {seconds}s and was stopped; raise \
         checker_timeout_seconds under [lsp] if the project needs longer"
    )]
    Timeout { command: String, seconds: u64 },
    /// The run's sandbox was refused as the run began (EVAL-9): its own words say why.
    #[error("{0}")]
    Sandbox(#[source] Arc<SandboxRefusal>),
    #[error("cannot run `{command}` in {}: {source}", root.display())]
    Run {
        command: String,
        root: PathBuf,
        #[source]
        source: tools_process::Error,
    },
}

/// Runs the checker of `spec` in `root`, inside the run's `sandbox` when there is one
/// (EVAL-9), and reads its findings.
pub(crate) async fn run(
    spec: &ServerSpec,
    root: &Path,
    search: &SearchPath,
    timeout: Duration,
    sandbox: Option<&Sandbox>,
) -> Result<CheckRun, CheckerError> {
    let Some(checker) = &spec.checker else {
        return Err(CheckerError::NoChecker {
            server: spec.name.clone(),
        });
    };
    let found = checker.candidates.iter().find_map(|argv| {
        let (program, args) = argv.split_first()?;
        search
            .find(program, root)
            .map(|path| (path, args.to_vec(), argv.join(" ")))
    });
    let Some((program, args, command_line)) = found else {
        return Err(CheckerError::NotFound {
            server: spec.name.clone(),
            programs: checker
                .candidates
                .iter()
                .filter_map(|argv| argv.first().map(|p| format!("`{p}`")))
                .collect(),
        });
    };
    // Compilers start children of their own (rustc under cargo, node workers): the run
    // owns the whole group, kills it at the timeout or when the call is dropped, and keeps a
    // bounded head of the output.
    let command = Command::new(&program, root)
        .args(&args)
        .envs(&spec.env)
        .sandbox(sandbox.cloned());
    let limits = RunLimits {
        timeout,
        max_output_bytes: MAX_OUTPUT,
    };
    let output = match run_to_end(&command, None, limits).await {
        Ok(output) => output,
        Err(tools_process::Error::SandboxRefused { refusal, .. }) => {
            return Err(CheckerError::Sandbox(refusal));
        }
        Err(tools_process::Error::Timeout { .. }) => {
            return Err(CheckerError::Timeout {
                command: command_line,
                seconds: timeout.as_secs(),
            });
        }
        Err(source) => {
            return Err(CheckerError::Run {
                command: command_line,
                root: root.to_path_buf(),
                source,
            });
        }
    };
    let mut notes = Vec::new();
    if output.stdout_cut > 0 || output.stderr_cut > 0 {
        notes.push(format!(
            "`{command_line}` printed more than {} MiB; only the findings in the first {} MiB \
             are counted, so there may be more — check parts of the project (a `path` prefix) \
             to see them",
            MAX_OUTPUT >> 20,
            MAX_OUTPUT >> 20
        ));
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let (mut findings, report_read) = read_report(checker.format, &stdout, &stderr, root);
    dedupe(&mut findings);
    let has_errors = findings.iter().any(|f| f.severity == "error");
    // A checker that writes a JSON report exits non-zero for warnings too (basedpyright
    // does): when its report was read, the report says what it found, not the exit status.
    if !output.status.success() && !has_errors && !report_read {
        // It failed without saying where: pass on what it printed.
        let tail: Vec<&str> = stderr
            .lines()
            .chain(stdout.lines().filter(|line| !line.starts_with('{')))
            .map(str::trim)
            .filter(|line| !line.is_empty())
            .collect();
        let tail = tail[tail.len().saturating_sub(6)..].join(" | ");
        findings.push(Finding {
            path: None,
            line: None,
            column: None,
            severity: "error".into(),
            code: None,
            message: format!("`{command_line}` failed ({}): {tail}", output.status),
        });
    }
    Ok(CheckRun {
        scope: scope(checker.format, &args),
        command: command_line,
        findings,
        notes,
    })
}

/// What a cargo run checks, from its arguments.
fn scope(format: CheckerFormat, args: &[String]) -> Option<String> {
    if format != CheckerFormat::CargoJson {
        return None;
    }
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let targets = match has("--all-targets") {
        true => "every target (lib, bins, tests, benches, examples)",
        false => "the lib and bins only (no tests, benches or examples)",
    };
    let features = match args.iter().position(|a| a == "--features" || a == "-F") {
        _ if has("--all-features") => "all features".to_owned(),
        Some(at) => format!(
            "the default features and {}",
            args.get(at + 1).map_or("", String::as_str)
        ),
        None if has("--no-default-features") => "no features".to_owned(),
        None => "the default features".to_owned(),
    };
    let members = match has("--workspace") {
        true => "every workspace member, ",
        false => "",
    };
    Some(format!("{members}{targets}, {features}"))
}

/// Drops repeats: cargo reports a library's diagnostic once per target that compiles it (the
/// library and its unit tests). Findings at different columns stay apart.
fn dedupe(findings: &mut Vec<Finding>) {
    let mut seen = HashSet::new();
    findings.retain(|finding| {
        seen.insert((
            finding.path.clone(),
            finding.line,
            finding.column,
            finding.severity.clone(),
            finding.message.clone(),
        ))
    });
}

/// Reads a checker's output; the flag says whether it wrote a whole report (pyright's JSON,
/// with its summary), which then is the answer whatever the exit status. cargo is not one:
/// it fails only on errors, and a failing build script reports none of its own.
pub(crate) fn read_report(
    format: CheckerFormat,
    stdout: &str,
    stderr: &str,
    root: &Path,
) -> (Vec<Finding>, bool) {
    let read = match format {
        CheckerFormat::PyrightJson => {
            let start = stdout.find('{').unwrap_or(0);
            serde_json::from_str::<Value>(&stdout[start..])
                .is_ok_and(|report| report.get("summary").is_some())
        }
        _ => false,
    };
    (parse(format, stdout, stderr, root), read)
}

/// Reads a checker's output in its format.
pub(crate) fn parse(
    format: CheckerFormat,
    stdout: &str,
    stderr: &str,
    root: &Path,
) -> Vec<Finding> {
    match format {
        CheckerFormat::CargoJson => parse_cargo(stdout, root),
        CheckerFormat::PyrightJson => parse_pyright(stdout, root),
        CheckerFormat::Tsc => stdout
            .lines()
            .chain(stderr.lines())
            .filter_map(|line| parse_tsc(line, root))
            .collect(),
        CheckerFormat::DartMachine => stdout
            .lines()
            .chain(stderr.lines())
            .filter_map(|line| parse_dart(line, root))
            .collect(),
        CheckerFormat::Lines => stdout
            .lines()
            .chain(stderr.lines())
            .filter_map(|line| parse_compiler_line(line, root))
            .collect(),
        CheckerFormat::GoVet => stdout
            .lines()
            .chain(stderr.lines())
            .filter_map(|line| parse_vet_line(line, root))
            .collect(),
    }
}

/// One line of `go vet`: a type-check failure (`vet: FILE:…`) is an error, an analyzer's
/// finding a warning, so that the project check and gopls's publishes (which carry the same
/// analyzers as warnings) agree on what counts as an error (issue 40).
fn parse_vet_line(line: &str, root: &Path) -> Option<Finding> {
    let type_error = line.trim_start().starts_with("vet: ");
    let mut finding = parse_compiler_line(line, root)?;
    if !type_error && finding.severity == "error" {
        finding.severity = severity("warning");
    }
    Some(finding)
}

fn severity(text: &str) -> String {
    match text.to_ascii_lowercase().as_str() {
        "error" | "fatal" | "error: internal compiler error" => "error",
        "warning" | "warn" => "warning",
        "information" | "info" => "info",
        _ => "note",
    }
    .to_owned()
}

fn parse_cargo(stdout: &str, root: &Path) -> Vec<Finding> {
    let mut findings = Vec::new();
    for line in stdout.lines() {
        let Ok(value) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        if value.get("reason").and_then(Value::as_str) != Some("compiler-message") {
            continue;
        }
        let Some(message) = value.get("message") else {
            continue;
        };
        let level = message.get("level").and_then(Value::as_str).unwrap_or("");
        if !matches!(level, "error" | "warning") {
            continue;
        }
        let text = message
            .get("message")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let spans = message
            .get("spans")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let primary = spans
            .iter()
            .find(|span| span.get("is_primary").and_then(Value::as_bool) == Some(true))
            .or(spans.first());
        // The summary lines ("aborting due to 2 previous errors") have no span and repeat
        // what the findings already say.
        if primary.is_none()
            && (text.starts_with("aborting due to")
                || text.contains("warning emitted")
                || text.contains("warnings emitted"))
        {
            continue;
        }
        let path = primary
            .and_then(|span| span.get("file_name"))
            .and_then(Value::as_str)
            .map(|name| root.join(name));
        let line = primary
            .and_then(|span| span.get("line_start"))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        let column = primary
            .and_then(|span| span.get("column_start"))
            .and_then(Value::as_u64)
            .and_then(|n| u32::try_from(n).ok());
        findings.push(Finding {
            path,
            line,
            column,
            severity: severity(level),
            code: message
                .get("code")
                .and_then(|code| code.get("code"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            message: text.to_owned(),
        });
    }
    findings
}

fn parse_pyright(stdout: &str, root: &Path) -> Vec<Finding> {
    // The JSON report is the whole of stdout (some versions print a line before it).
    let start = stdout.find('{').unwrap_or(0);
    let Ok(report) = serde_json::from_str::<Value>(&stdout[start..]) else {
        return Vec::new();
    };
    report
        .get("generalDiagnostics")
        .and_then(Value::as_array)
        .map(|items| {
            items
                .iter()
                .map(|item| Finding {
                    path: item
                        .get("file")
                        .and_then(Value::as_str)
                        .map(|file| root.join(file)),
                    // pyright's report counts lines from 0, as LSP does.
                    line: item
                        .pointer("/range/start/line")
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n).ok())
                        .map(|n| tools_core::Line::from_lsp(n).get()),
                    column: item
                        .pointer("/range/start/character")
                        .and_then(Value::as_u64)
                        .and_then(|n| u32::try_from(n + 1).ok()),
                    severity: severity(
                        item.get("severity")
                            .and_then(Value::as_str)
                            .unwrap_or("error"),
                    ),
                    code: item.get("rule").and_then(Value::as_str).map(str::to_owned),
                    message: item
                        .get("message")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// `src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.`
fn parse_tsc(line: &str, root: &Path) -> Option<Finding> {
    let open = line.find('(')?;
    let close = open + line[open..].find("):")?;
    let (path, position) = (&line[..open], &line[open + 1..close]);
    let mut numbers = position.split(',');
    let line_number: u32 = numbers.next()?.trim().parse().ok()?;
    let column: Option<u32> = numbers.next().and_then(|n| n.trim().parse().ok());
    let rest = line[close + 2..].trim();
    let (severity_text, rest) = rest.split_once(' ')?;
    let (code, message) = match rest.split_once(": ") {
        Some((code, message)) if code.starts_with("TS") => (Some(code.to_owned()), message),
        _ => (None, rest),
    };
    Some(Finding {
        path: Some(root.join(path.trim())),
        line: Some(line_number),
        column,
        severity: severity(severity_text),
        code,
        message: message.to_owned(),
    })
}

/// `ERROR|COMPILE_TIME_ERROR|UNDEFINED_IDENTIFIER|/abs/lib/main.dart|3|5|3|Undefined name 'x'.`
fn parse_dart(line: &str, root: &Path) -> Option<Finding> {
    let fields: Vec<&str> = line.splitn(8, '|').collect();
    if fields.len() != 8 {
        return None;
    }
    Some(Finding {
        path: Some(root.join(fields[3])),
        line: fields[4].parse().ok(),
        column: fields[5].parse().ok(),
        severity: severity(fields[0]),
        code: Some(fields[2].to_ascii_lowercase()),
        message: fields[7].to_owned(),
    })
}

/// `./main.go:5:2: message` or `file:5: message`; only when the file exists, so log lines
/// with colons are not taken for findings.
fn parse_compiler_line(line: &str, root: &Path) -> Option<Finding> {
    let line = line.trim_start_matches("vet: ").trim();
    let mut parts = line.splitn(4, ':');
    let path = parts.next()?.trim();
    let number: u32 = parts.next()?.trim().parse().ok()?;
    let third = parts.next()?;
    let column = third.trim().parse::<u32>().ok();
    let message = match column {
        Some(_) => parts.next()?.trim().to_owned(),
        None => match parts.next() {
            Some(rest) => format!("{third}:{rest}").trim().to_owned(),
            None => third.trim().to_owned(),
        },
    };
    let full = root.join(path);
    if path.is_empty() || !full.is_file() {
        return None;
    }
    let (severity_text, message) = match message.split_once(": ") {
        Some((label, rest)) if matches!(label, "error" | "warning" | "note") => {
            (label, rest.to_owned())
        }
        _ => ("error", message),
    };
    Some(Finding {
        path: Some(full),
        line: Some(number),
        column,
        severity: severity(severity_text),
        code: None,
        message,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> PathBuf {
        PathBuf::from("/project")
    }

    #[test]
    fn cargo_json_findings_use_the_primary_span_and_skip_summaries() {
        let stdout = r#"{"reason":"compiler-artifact","target":{}}
{"reason":"compiler-message","message":{"level":"error","message":"mismatched types","code":{"code":"E0308"},"spans":[{"file_name":"src/other.rs","line_start":9,"is_primary":false},{"file_name":"src/lib.rs","line_start":3,"is_primary":true}]}}
{"reason":"compiler-message","message":{"level":"warning","message":"unused variable: `x`","code":{"code":"unused_variables"},"spans":[{"file_name":"src/lib.rs","line_start":7,"is_primary":true}]}}
{"reason":"compiler-message","message":{"level":"error","message":"aborting due to 1 previous error","code":null,"spans":[]}}
{"reason":"compiler-message","message":{"level":"note","message":"a note","code":null,"spans":[]}}
{"reason":"build-finished","success":false}"#;
        let findings = parse(CheckerFormat::CargoJson, stdout, "", &root());
        assert_eq!(
            findings,
            vec![
                Finding {
                    path: Some(root().join("src/lib.rs")),
                    line: Some(3),
                    column: None,
                    severity: "error".into(),
                    code: Some("E0308".into()),
                    message: "mismatched types".into()
                },
                Finding {
                    path: Some(root().join("src/lib.rs")),
                    line: Some(7),
                    column: None,
                    severity: "warning".into(),
                    code: Some("unused_variables".into()),
                    message: "unused variable: `x`".into()
                }
            ]
        );
    }

    #[test]
    fn lsp_5_two_findings_on_one_line_stay_two_and_cargo_repeats_merge() {
        let finding = |column| {
            format!(
                r#"{{"file":"/project/a.py","severity":"error","message":"Argument missing for parameter \"unit\"","range":{{"start":{{"line":5,"character":{column}}},"end":{{"line":5,"character":20}}}},"rule":"reportCallIssue"}}"#
            )
        };
        let report = format!(
            r#"{{"generalDiagnostics":[{},{}],"summary":{{"errorCount":2}}}}"#,
            finding(11),
            finding(22)
        );
        let mut findings = parse(CheckerFormat::PyrightJson, &report, "", &root());
        dedupe(&mut findings);
        assert_eq!(findings.len(), 2, "{findings:?}");
        assert_eq!(findings[1].column, Some(23));
        // The library's warning, once for the lib and once for its unit tests: one finding.
        let warning = r#"{"reason":"compiler-message","message":{"level":"warning","message":"unused variable: `x`","code":{"code":"unused_variables"},"spans":[{"file_name":"src/lib.rs","line_start":7,"column_start":9,"is_primary":true}]}}"#;
        let mut findings = parse(
            CheckerFormat::CargoJson,
            &format!("{warning}\n{warning}\n"),
            "",
            &root(),
        );
        dedupe(&mut findings);
        assert_eq!(findings.len(), 1, "{findings:?}");
    }

    #[test]
    fn lsp_5_a_parsed_report_is_the_answer_whatever_the_exit_status() {
        let warnings_only = r#"{"version":"1","generalDiagnostics":[{"file":"/project/a.py","severity":"warning","message":"unused","range":{"start":{"line":0,"character":0},"end":{"line":0,"character":1}},"rule":"reportUnusedVariable"}],"summary":{"errorCount":0,"warningCount":1}}"#;
        let (findings, read) = read_report(CheckerFormat::PyrightJson, warnings_only, "", &root());
        assert!(read);
        assert_eq!(findings.len(), 1);
        let (_, read) = read_report(CheckerFormat::PyrightJson, "Traceback: boom", "", &root());
        assert!(!read);
    }

    #[test]
    fn pyright_json_lines_are_one_based() {
        let stdout = r#"{"version":"1","generalDiagnostics":[{"file":"/project/a.py","severity":"error","message":"\"x\" is not defined","range":{"start":{"line":4,"character":0},"end":{"line":4,"character":1}},"rule":"reportUndefinedVariable"}],"summary":{}}"#;
        let findings = parse(CheckerFormat::PyrightJson, stdout, "", &root());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, Some(root().join("a.py")));
        assert_eq!(findings[0].line, Some(5));
        assert_eq!(findings[0].code.as_deref(), Some("reportUndefinedVariable"));
    }

    #[test]
    fn tsc_and_dart_lines_are_read() {
        let tsc = parse(
            CheckerFormat::Tsc,
            "src/a.ts(3,7): error TS2322: Type 'string' is not assignable to type 'number'.\n  more detail\n",
            "",
            &root(),
        );
        assert_eq!(tsc.len(), 1);
        assert_eq!(tsc[0].line, Some(3));
        assert_eq!(tsc[0].code.as_deref(), Some("TS2322"));
        assert_eq!(
            tsc[0].message,
            "Type 'string' is not assignable to type 'number'."
        );
        let dart = parse(
            CheckerFormat::DartMachine,
            "",
            "ERROR|COMPILE_TIME_ERROR|UNDEFINED_IDENTIFIER|/project/lib/main.dart|3|5|3|Undefined name 'x'.\n",
            &root(),
        );
        assert_eq!(dart[0].path, Some(root().join("lib/main.dart")));
        assert_eq!(
            (dart[0].line, dart[0].severity.as_str()),
            (Some(3), "error")
        );
    }

    #[test]
    fn compiler_lines_need_an_existing_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("main.go"), "package main\n").unwrap();
        let findings = parse(
            CheckerFormat::Lines,
            "",
            "# example.com/m\n./main.go:5:2: fmt.Printf format %d has arg x of wrong type\nlog: 12:00: not a finding\n",
            dir.path(),
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].line, Some(5));
        assert_eq!(
            findings[0].message,
            "fmt.Printf format %d has arg x of wrong type"
        );
    }

    #[test]
    fn lsp_5_go_vet_findings_are_warnings_and_what_does_not_type_check_is_an_error() {
        // Read from the real `go vet` (issue 40): gopls publishes the same analyzers'
        // findings as warnings, so the project check must not call them errors.
        let dir = tempfile::tempdir().unwrap();
        let files = [
            ("go.mod", "module example.com/v\n\ngo 1.19\n"),
            (
                "main.go",
                "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Printf(\"%d\\n\", \"x\")\n}\n",
            ),
        ];
        for (name, text) in files {
            std::fs::write(dir.path().join(name), text).unwrap();
        }
        let vet = |dir: &Path| {
            let output = std::process::Command::new("go")
                .args(["vet", "./..."])
                .current_dir(dir)
                .env("GOFLAGS", "-mod=mod")
                .output();
            let Ok(output) = output else {
                return None;
            };
            let text = |bytes: Vec<u8>| String::from_utf8(bytes).unwrap();
            Some(parse(
                CheckerFormat::GoVet,
                &text(output.stdout),
                &text(output.stderr),
                dir,
            ))
        };
        let Some(findings) = vet(dir.path()) else {
            eprintln!("skipped: go is not installed");
            return;
        };
        let severities: Vec<(&str, Option<u32>)> = findings
            .iter()
            .map(|f| (f.severity.as_str(), f.line))
            .collect();
        assert_eq!(severities, [("warning", Some(6))], "{findings:?}");
        std::fs::write(
            dir.path().join("bad.go"),
            "package main\n\nfunc g() int { return undefinedThing }\n",
        )
        .unwrap();
        let findings = vet(dir.path()).unwrap();
        let severities: Vec<(&str, Option<u32>)> = findings
            .iter()
            .map(|f| (f.severity.as_str(), f.line))
            .collect();
        assert_eq!(severities, [("error", Some(3))], "{findings:?}");
    }
}
