//! One long-lived thread forks every child.
//!
//! Linux sends the parent-death signal when the *thread* that forked the child ends, not the
//! process ("the parent in this case is considered to be the thread that created this
//! process", prctl(2)). A child forked from a tokio blocking-pool thread would be killed when
//! that thread retires after a few idle seconds. So every spawn is handed to this thread, which
//! lives as long as the process; it enters the caller's runtime so the child is driven by it.

use std::sync::OnceLock;
use std::sync::mpsc;

use tokio::runtime::Handle;

use crate::registry::{self, TrackedPid};

type Spawned = std::io::Result<(tokio::process::Child, TrackedPid)>;

struct Request {
    command: tokio::process::Command,
    runtime: Handle,
    reply: mpsc::SyncSender<Spawned>,
}

static SPAWNER: OnceLock<Option<mpsc::Sender<Request>>> = OnceLock::new();

fn spawner() -> Option<&'static mpsc::Sender<Request>> {
    SPAWNER
        .get_or_init(|| {
            let (sender, requests) = mpsc::channel::<Request>();
            let started = std::thread::Builder::new()
                .name("tools-process-spawner".into())
                .spawn(move || {
                    for request in requests {
                        let _runtime = request.runtime.enter();
                        let mut command = request.command;
                        let _ = request.reply.send(fork_and_track(&mut command));
                    }
                });
            match started {
                Ok(_) => Some(sender),
                Err(error) => {
                    tracing::warn!(
                        "cannot start the spawner thread ({error}); children are forked by \
                         the calling thread and die with it"
                    );
                    None
                }
            }
        })
        .as_ref()
}

fn fork_and_track(command: &mut tokio::process::Command) -> Spawned {
    let _spawning = registry::spawning();
    let child = command.spawn()?;
    let pid = child
        .id()
        .ok_or_else(|| std::io::Error::other("the child ended before its pid was read"))?;
    Ok((child, TrackedPid::new(pid)))
}

/// Spawns `command` from the spawner thread, driven by `runtime`.
pub(crate) fn spawn(mut command: tokio::process::Command, runtime: Handle) -> Spawned {
    let Some(spawner) = spawner() else {
        let _runtime = runtime.enter();
        return fork_and_track(&mut command);
    };
    let (reply, answer) = mpsc::sync_channel(1);
    spawner
        .send(Request {
            command,
            runtime,
            reply,
        })
        .map_err(|_| std::io::Error::other("the spawner thread has stopped"))?;
    answer
        .recv()
        .map_err(|_| std::io::Error::other("the spawner thread has stopped"))?
}
