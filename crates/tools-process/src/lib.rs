//! Every child process of an agent-tools run — language servers, project checkers, version
//! probes, and later kernels, debug adapters and workers — is spawned through this crate.
//!
//! A spawned child leads its own process group, gets a parent-death signal, and is killed with
//! its whole group when its owner drops it; [`shutdown_all`] ends every group still alive when
//! the binary exits, and a child subreaper ([`become_subreaper`], [`spawn_orphan_reaper`])
//! reaps the grandchildren that outlive their parents. Around that: a stderr tail kept for
//! messages, a run-to-end helper with a timeout and an output cap, binary resolution over a
//! search path, root-marker discovery, idle CPU priority for a run's background threads, and
//! the sandbox prefix every child runs under, checked once as a run begins ([`probe_sandbox`]).
//! Beside them, one piece every crate needs that is not about processes: reading a file that
//! must be a regular one without blocking on a named pipe ([`read_regular`]), kept here so
//! that a leaf below tools-core can use it.
//!
//! **Architecture invariant:** this crate is a leaf — it depends on no crate of ours — and
//! nothing else in the workspace spawns a process by itself.

mod child;
mod command;
mod contain;
mod error;
mod files;
mod priority;
mod procfs;
mod reaper;
mod registry;
mod roots;
mod run;
mod sandbox;
mod search;
mod spawner;
mod tail;

pub use crate::{
    child::{Child, ChildParts, Leader, ProcessGroup, Termination},
    command::{Command, DEFAULT_GRACE, Input, Output, TOKEN_ENV},
    contain::{Containment, NO_CONTAINMENT_ENV, containment},
    error::{Error, Result},
    files::{read_regular, read_regular_with_metadata, special_kind},
    priority::{Priority, idle_priority},
    procfs::{ProcessInfo, list_processes, process_env_var, process_info},
    reaper::{OrphanReaper, become_subreaper, reap_orphans, spawn_orphan_reaper},
    registry::{LiveGroup, ShutdownReport, kill_reported, live_groups, shutdown_all},
    roots::{RootRule, SCAN_BUDGET, SCAN_DEPTH, SKIPPED_DIRS, marker_in, root_for, scan_roots},
    run::{RunLimits, RunOutput, run_to_end},
    sandbox::{Sandbox, SandboxProblem, SandboxRefusal, probe_sandbox, probe_sandbox_blocking},
    search::{PROJECT_TOOL_DIRS, SearchPath, Versioned, is_executable},
    tail::{StderrTail, TAIL_LINE_CHARS, TAIL_LINES},
};
