//! The handshake that works with every adapter: initialize → launch/attach sent without
//! waiting → `initialized` (or a failed launch or the adapter's exit, bounded) → breakpoints →
//! exception breakpoints where offered → configurationDone → the launch's answer. debugpy
//! answers `launch` only after `configurationDone`, so its answer is read last; a launch that
//! failed is answered at once, and ends the wait for `initialized`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use tokio::time::Instant;

use super::{FileBreakpoints, Session, Start, flatten};
use crate::adapters::AdapterId;
use crate::dap::requests::{
    AdapterLaunch, Attach, AttachArguments, ConfigurationDone, Connect, DebugpyLaunch, DelveLaunch,
    Initialize, InitializeArguments, Launch, LaunchArguments, NoArguments, SetExceptionBreakpoints,
    SetExceptionBreakpointsArguments,
};
use crate::transport::InFlight;
use crate::{Error, Result};

impl Session {
    pub(super) async fn handshake(
        &mut self,
        start: &Start,
        breakpoints: &BTreeMap<PathBuf, Vec<u32>>,
    ) -> Result<Vec<FileBreakpoints>> {
        let adapter_id = match self.adapter {
            AdapterId::Debugpy => "debugpy",
            AdapterId::Lldb => "lldb-dap",
            AdapterId::Delve => "go",
            AdapterId::Dart => "dart",
        };
        self.capabilities = self
            .transport
            .request::<Initialize>(
                InitializeArguments {
                    client_id: "agent-tools".to_owned(),
                    client_name: "agent-tools".to_owned(),
                    adapter_id: adapter_id.to_owned(),
                    locale: "en".to_owned(),
                    lines_start_at1: true,
                    columns_start_at1: true,
                    path_format: "path".to_owned(),
                    supports_variable_type: true,
                    supports_run_in_terminal_request: false,
                    supports_start_debugging_request: false,
                },
                self.timeouts.startup,
            )
            .await?;
        match start {
            Start::AttachPort { port } => {
                let in_flight = self
                    .transport
                    .send::<Attach>(attach_arguments(*port))
                    .await?;
                self.configure(in_flight, breakpoints).await
            }
            Start::Launch {
                found,
                program,
                args,
            } => {
                let arguments = launch_arguments(
                    found.adapter,
                    &found.binary,
                    program,
                    args.clone(),
                    &self.root,
                );
                let in_flight = self.transport.send::<Launch>(arguments).await?;
                self.configure(in_flight, breakpoints).await
            }
        }
    }

    /// With `launch` or `attach` in flight: waits for `initialized`, configures, and reads the
    /// start's answer.
    async fn configure<R>(
        &self,
        in_flight: InFlight<R>,
        breakpoints: &BTreeMap<PathBuf, Vec<u32>>,
    ) -> Result<Vec<FileBreakpoints>>
    where
        R: crate::dap::requests::Request + 'static,
    {
        let command = R::COMMAND;
        let startup = self.timeouts.startup;
        let mut answer = tokio::spawn(in_flight.answer(startup));
        let deadline = Instant::now() + startup;
        let mut answered = false;
        let mut changes = self.changes.clone();
        loop {
            let (initialized, live) = {
                let state = self.lock();
                (state.initialized, state.run.is_live())
            };
            if initialized {
                break;
            }
            if !live {
                return Err(Error::Gone {
                    adapter: self.adapter.name().to_owned(),
                    command: command.to_owned(),
                    details: String::new(),
                });
            }
            tokio::select! {
                result = &mut answer, if !answered => {
                    flatten(result, self.adapter, command)?;
                    answered = true;
                }
                changed = changes.changed() => {
                    if changed.is_err() {
                        break;
                    }
                }
                () = tokio::time::sleep_until(deadline) => {
                    return Err(Error::Timeout {
                        adapter: self.adapter.name().to_owned(),
                        command: format!("{command} (waiting for `initialized`)"),
                        seconds: startup.as_secs(),
                    });
                }
            }
        }
        let mut set = Vec::new();
        for (file, lines) in breakpoints {
            set.push(self.set_breakpoints(file, lines).await?);
        }
        if self.capabilities.exception_breakpoint_filters.is_some() {
            // No filter: only breakpoints stop the program, never a caught exception.
            self.transport
                .request::<SetExceptionBreakpoints>(
                    SetExceptionBreakpointsArguments {
                        filters: Vec::new(),
                    },
                    self.timeouts.request,
                )
                .await?;
        }
        if self.capabilities.supports_configuration_done_request {
            self.transport
                .request::<ConfigurationDone>(NoArguments {}, self.timeouts.request)
                .await?;
        }
        if !answered {
            flatten(answer.await, self.adapter, command)?;
        }
        Ok(set)
    }
}

fn attach_arguments(port: u16) -> AttachArguments {
    AttachArguments {
        request: "attach",
        connect: Connect {
            host: "127.0.0.1".to_owned(),
            port,
        },
        just_my_code: true,
    }
}

/// `launch` for `adapter`: the common part, and the adapter's own.
fn launch_arguments(
    adapter: AdapterId,
    binary: &Path,
    program: &Path,
    args: Vec<String>,
    root: &Path,
) -> LaunchArguments {
    let program = program.display().to_string();
    let adapter = match adapter {
        AdapterId::Debugpy => AdapterLaunch::Debugpy(DebugpyLaunch {
            kind: "python",
            console: "internalConsole",
            just_my_code: true,
            // Child processes are not debugged (we run one session, and refuse
            // `startDebugging`): without this they would wait for a debugger.
            sub_process: false,
            python: vec![binary.display().to_string()],
        }),
        AdapterId::Delve => AdapterLaunch::Delve(DelveLaunch {
            // A package folder or a `.go` file is built by delve; anything else is taken for a
            // binary built already.
            mode: if Path::new(&program).is_dir() || program.ends_with(".go") {
                "debug"
            } else {
                "exec"
            },
        }),
        AdapterId::Lldb | AdapterId::Dart => AdapterLaunch::Plain,
    };
    LaunchArguments {
        request: "launch",
        program,
        args,
        cwd: root.display().to_string(),
        stop_on_entry: false,
        adapter,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dbg_6_delve_builds_a_package_or_a_go_file_and_runs_anything_else_as_built() {
        let dir = tempfile::tempdir().unwrap();
        let mode = |program: &Path| match launch_arguments(
            AdapterId::Delve,
            Path::new("/usr/bin/dlv"),
            program,
            Vec::new(),
            dir.path(),
        )
        .adapter
        {
            AdapterLaunch::Delve(delve) => delve.mode,
            other => panic!("not delve's options: {other:?}"),
        };
        assert_eq!(mode(dir.path()), "debug");
        assert_eq!(mode(&dir.path().join("main.go")), "debug");
        assert_eq!(mode(&dir.path().join("app")), "exec");
    }

    #[test]
    fn dbg_7_debugpy_launches_under_the_interpreter_found() {
        let arguments = launch_arguments(
            AdapterId::Debugpy,
            Path::new("/w/.venv/bin/python"),
            Path::new("/w/app.py"),
            vec!["-v".to_owned()],
            Path::new("/w"),
        );
        let AdapterLaunch::Debugpy(debugpy) = &arguments.adapter else {
            panic!("not debugpy's options: {:?}", arguments.adapter)
        };
        assert_eq!(debugpy.python, ["/w/.venv/bin/python"]);
        assert_eq!(
            (arguments.program.as_str(), arguments.cwd.as_str()),
            ("/w/app.py", "/w")
        );
        assert_eq!(
            launch_arguments(
                AdapterId::Lldb,
                Path::new("/usr/bin/lldb-dap"),
                Path::new("/w/a.out"),
                Vec::new(),
                Path::new("/w"),
            )
            .adapter,
            AdapterLaunch::Plain
        );
    }
}
