//! Containment: what a child starts lives in a PID namespace of its own, whose init is a
//! small process of ours, so that the kernel kills all of it — daemons that left their process
//! group, grandchildren whose parent died first — the moment that init dies.
//!
//! In the forked child (the *keeper*, the process std and tokio know by its pid), before exec:
//! 1. it unshares a new PID namespace and a mount namespace (with a user namespace of the same
//!    identity when we are not root, which is what lets an unprivileged user make them);
//! 2. it forks the namespace's init, which closes every descriptor, dies when the keeper dies
//!    (parent-death signal) and reaps the orphans that come to it;
//! 3. it forks the program's process, which mounts a `/proc` of the namespace (so the program
//!    and its debuggers read their own pids there), dies when the keeper dies, and returns to
//!    std, which execs the program in it: same pipes, same process group, same environment;
//! 4. the keeper closes its descriptors and stays, its signals blocked (ours go to the whole
//!    group, so the program gets its own; SIGKILL ends the keeper, and so the namespace); when
//!    the program ends, it kills the init (and with it whatever the program left behind) and
//!    ends the same way, exit code or signal.
//!
//! The keeper itself stays outside the namespace: a process that unshared a PID namespace
//! can no longer start threads (clone(2), `CLONE_THREAD`), so the program cannot be it.
//! When we are SIGKILLed, the keeper gets its parent-death signal, the init gets its own, and
//! the kernel SIGKILLs every process left in the namespace (pid_namespaces(7)).
//!
//! Where namespaces cannot be made (no user namespaces for unprivileged users, a sandbox that
//! forbids them), children run as before — group signals, parent-death signal, subreaper —
//! and [`containment`] says so, so the binary can report it at start-up.

use std::sync::OnceLock;

/// Whether what children start is contained, and if not, why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Containment {
    /// Each child's program runs in a PID namespace that dies with the child.
    PidNamespace {
        /// Whether a user namespace is made too (we are not root).
        user_namespace: bool,
    },
    /// Namespaces are not available; the reason, as the kernel gave it.
    Unavailable(String),
}

impl Containment {
    /// One line for a start-up report.
    pub fn describe(&self) -> String {
        match self {
            Containment::PidNamespace { user_namespace } => format!(
                "every child runs in a PID namespace of its own{}, so what it starts ends with \
                 it, even when this process is SIGKILLed",
                if *user_namespace {
                    " (inside a user namespace with the same identity)"
                } else {
                    ""
                }
            ),
            Containment::Unavailable(reason) => format!(
                "children cannot be put in PID namespaces here ({reason}): if this process is \
                 SIGKILLed, what a child started and moved out of its process group may \
                 outlive it"
            ),
        }
    }

    /// Whether children are contained.
    pub fn is_active(&self) -> bool {
        matches!(self, Containment::PidNamespace { .. })
    }
}

/// Set to any value to turn containment off (a debugging aid, and the fallback's test).
pub const NO_CONTAINMENT_ENV: &str = "AGENT_TOOLS_NO_PID_NAMESPACE";

static PROBED: OnceLock<Containment> = OnceLock::new();

/// Whether this process's children are contained; probed once, by a throwaway child.
pub fn containment() -> Containment {
    PROBED.get_or_init(probe).clone()
}

/// What the forked child needs, prepared before the fork: nothing may allocate after it.
pub(crate) struct Plan {
    flags: libc::c_int,
    user_namespace: bool,
    uid_map: Vec<u8>,
    gid_map: Vec<u8>,
}

impl Plan {
    /// The plan for the next child, if containment is on.
    pub(crate) fn current() -> Option<Plan> {
        let Containment::PidNamespace { user_namespace } = containment() else {
            return None;
        };
        let uid = rustix::process::getuid().as_raw();
        let gid = rustix::process::getgid().as_raw();
        Some(Plan {
            flags: namespace_flags(user_namespace),
            user_namespace,
            uid_map: format!("{uid} {uid} 1\n").into_bytes(),
            gid_map: format!("{gid} {gid} 1\n").into_bytes(),
        })
    }

    /// In the forked child before exec: returns in the program's process (std execs it
    /// there), never in the keeper. An error before anything was forked fails the spawn.
    ///
    /// # Safety
    ///
    /// Only between fork and exec: it makes only async-signal-safe system calls, allocates
    /// nothing, and the processes it forks that are not the program never return.
    #[allow(unsafe_code)]
    pub(crate) unsafe fn enter(&self) -> std::io::Result<()> {
        // SAFETY: every call below is a plain, async-signal-safe system call on buffers that
        // live on this stack or in `self`.
        unsafe {
            if libc::unshare(self.flags) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            if self.user_namespace {
                write_proc(c"/proc/self/setgroups", b"deny\n");
                write_proc(c"/proc/self/uid_map", &self.uid_map);
                write_proc(c"/proc/self/gid_map", &self.gid_map);
            }
            // Our mounts stay ours: the namespace's /proc must not appear outside it.
            if libc::mount(
                std::ptr::null(),
                c"/".as_ptr(),
                std::ptr::null(),
                libc::MS_REC | libc::MS_PRIVATE,
                std::ptr::null(),
            ) != 0
            {
                return Err(std::io::Error::last_os_error());
            }
            // Every signal waits in the keeper from here on; the program gets the mask back.
            let mut all: libc::sigset_t = std::mem::zeroed();
            let mut before: libc::sigset_t = std::mem::zeroed();
            libc::sigfillset(&mut all);
            libc::sigprocmask(libc::SIG_SETMASK, &all, &mut before);
            let init = libc::fork();
            if init == 0 {
                run_init();
            }
            if init < 0 {
                let error = std::io::Error::last_os_error();
                libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
                return Err(error);
            }
            let program = libc::fork();
            if program == 0 {
                libc::prctl(
                    libc::PR_SET_PDEATHSIG,
                    libc::SIGKILL as libc::c_ulong,
                    0,
                    0,
                    0,
                );
                libc::mount(
                    c"proc".as_ptr(),
                    c"/proc".as_ptr(),
                    c"proc".as_ptr(),
                    libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC,
                    std::ptr::null(),
                );
                libc::sigprocmask(libc::SIG_SETMASK, &before, std::ptr::null_mut());
                return Ok(());
            }
            if program < 0 {
                libc::kill(init, libc::SIGKILL);
                libc::_exit(127);
            }
            keep(init, program, &all)
        }
    }
}

fn namespace_flags(user_namespace: bool) -> libc::c_int {
    let mut flags = libc::CLONE_NEWPID | libc::CLONE_NEWNS;
    if user_namespace {
        flags |= libc::CLONE_NEWUSER;
    }
    flags
}

/// Writes `bytes` to the `/proc` file at `path`; a write that fails is left to show when the
/// program runs. It needs nothing of its caller, so it is safe; it makes only async-signal-safe
/// system calls and allocates nothing, so `enter` may call it between fork and exec.
fn write_proc(path: &std::ffi::CStr, bytes: &[u8]) {
    // SAFETY: plain system calls on a NUL-terminated path and a live buffer; the descriptor
    // is this function's own, opened and closed here.
    #[allow(unsafe_code)]
    unsafe {
        let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd >= 0 {
            libc::write(fd, bytes.as_ptr().cast(), bytes.len());
            libc::close(fd);
        }
    }
}

/// Closes every descriptor: the keeper and the init hold none of the program's pipes (their
/// readers see the end when the program ends) nor std's exec-status pipe (std learns that
/// the exec succeeded when the program's copy closes on exec).
///
/// # Safety
///
/// Every descriptor of the process is closed, those that a `File`, an `OwnedFd` or std's
/// spawn machinery own included: the caller must be a process that never again runs code
/// holding one — a child forked by `enter` that loops until it `_exit`s, as the keeper and
/// the init do — and, forked from a threaded parent, may make only async-signal-safe calls.
#[allow(unsafe_code)]
unsafe fn close_all() {
    // SAFETY: closing descriptors is async-signal-safe.
    unsafe {
        if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
            for fd in 0..65_536 {
                libc::close(fd);
            }
        }
    }
}

/// The namespace's init: dies with the keeper, holds no descriptor, and reaps the orphans
/// re-parented to it, waking on SIGCHLD and once a second, as tini does. Signals from outside
/// the namespace other than SIGKILL do not reach a namespace's init without a handler, so a
/// group's SIGTERM or SIGINT leaves it running.
///
/// # Safety
///
/// Only in the namespace's first child, forked by `enter` right after `unshare`, between
/// fork and exec: it closes every descriptor ([`close_all`]'s terms), makes only
/// async-signal-safe calls, and never returns into the code it was forked from.
#[allow(unsafe_code)]
unsafe fn run_init() -> ! {
    // SAFETY: async-signal-safe system calls only; every buffer is on this stack.
    unsafe {
        libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        );
        close_all();
        let mut chld: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut chld);
        libc::sigaddset(&mut chld, libc::SIGCHLD);
        let second = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        loop {
            while libc::waitpid(-1, std::ptr::null_mut(), libc::WNOHANG) > 0 {}
            libc::sigtimedwait(&chld, std::ptr::null_mut(), &second);
        }
    }
}

/// The keeper: takes the signals it gets (all are blocked here) without acting on them —
/// every signal of ours but SIGKILL goes to the whole group, so the program has its own copy —
/// and when the program ends, ends the namespace and itself the same way.
///
/// # Safety
///
/// Only in the keeper, the process `enter` runs in, after it forked `init` and `program`,
/// between fork and exec: both must be its own children (it waits for and kills them by pid),
/// `all` the signal mask it holds blocked, and nothing it was forked from may run again —
/// it closes every descriptor ([`close_all`]'s terms), makes only async-signal-safe calls,
/// and ends the process.
#[allow(unsafe_code)]
unsafe fn keep(init: libc::pid_t, program: libc::pid_t, all: &libc::sigset_t) -> ! {
    // SAFETY: async-signal-safe system calls only; every buffer is on this stack.
    unsafe {
        close_all();
        let second = libc::timespec {
            tv_sec: 1,
            tv_nsec: 0,
        };
        loop {
            let mut status = 0;
            if libc::waitpid(program, &mut status, libc::WNOHANG) == program {
                libc::kill(init, libc::SIGKILL);
                libc::waitpid(init, std::ptr::null_mut(), 0);
                if libc::WIFSIGNALED(status) {
                    let signal = libc::WTERMSIG(status);
                    libc::signal(signal, libc::SIG_DFL);
                    let mut only: libc::sigset_t = std::mem::zeroed();
                    libc::sigemptyset(&mut only);
                    libc::sigaddset(&mut only, signal);
                    libc::sigprocmask(libc::SIG_UNBLOCK, &only, std::ptr::null_mut());
                    libc::kill(libc::getpid(), signal);
                    libc::_exit(128 + signal);
                }
                libc::_exit(libc::WEXITSTATUS(status));
            }
            libc::sigtimedwait(all, std::ptr::null_mut(), &second);
        }
    }
}

/// Forks a throwaway child that tries to make the namespaces and reports by its exit status.
#[allow(unsafe_code)]
fn probe() -> Containment {
    if std::env::var_os(NO_CONTAINMENT_ENV).is_some() {
        return Containment::Unavailable(format!("{NO_CONTAINMENT_ENV} is set"));
    }
    let user_namespace = !rustix::process::geteuid().is_root();
    let flags = namespace_flags(user_namespace);
    // The probe stays in our process group, which the orphan reaper leaves alone, and is
    // waited for by its pid.
    let _spawning = crate::registry::spawning();
    // SAFETY: the child only calls unshare and _exit, both async-signal-safe.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: as above.
        unsafe {
            let private = |status| match status {
                0 => libc::mount(
                    std::ptr::null(),
                    c"/".as_ptr(),
                    std::ptr::null(),
                    libc::MS_REC | libc::MS_PRIVATE,
                    std::ptr::null(),
                ),
                other => other,
            };
            let status = match private(libc::unshare(flags)) {
                0 => 0,
                _ => *libc::__errno_location(),
            };
            libc::_exit(status.clamp(0, 255));
        }
    }
    if pid < 0 {
        return Containment::Unavailable(format!(
            "the probe could not fork: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked, by its pid.
    let waited = unsafe { libc::waitpid(pid, &mut status, 0) };
    if waited != pid || !libc::WIFEXITED(status) {
        return Containment::Unavailable("the probe did not exit normally".to_owned());
    }
    match libc::WEXITSTATUS(status) {
        0 => Containment::PidNamespace { user_namespace },
        errno => Containment::Unavailable(format!(
            "a {}PID and mount namespace of a child's own: {}",
            if user_namespace { "user, " } else { "" },
            std::io::Error::from_raw_os_error(errno)
        )),
    }
}
