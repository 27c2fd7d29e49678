//! The calling thread's CPU priority, for work done in the background of a run (the syntax
//! index's prewarm): it should take a core only when nothing else wants it.

/// The priority [`idle_priority`] could set.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Priority {
    /// `SCHED_IDLE`: the thread runs only when no other thread wants the core.
    Idle,
    /// `SCHED_IDLE` was refused; the thread runs at nice 19, the lowest.
    Nice,
    /// Neither was allowed (a sandbox's seccomp filter, say): the thread runs as it was.
    Unchanged,
}

/// Lowers the calling thread — and the threads it starts afterwards, which inherit it — to
/// idle CPU priority (`SCHED_IDLE`), or failing that to the lowest nice value; where neither
/// is allowed it runs as it is. Other threads of the process keep theirs.
pub fn idle_priority() -> Priority {
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: a plain system call on values and a pointer to a `sched_param` that lives
    // through the call; on Linux, pid 0 names the calling thread only.
    #[allow(unsafe_code)]
    let idle = unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &param) } == 0;
    if idle {
        return Priority::Idle;
    }
    // On Linux, `setpriority` of the calling process's own pid (None) sets the calling thread's
    // nice value only, as `sched_setscheduler` did.
    match rustix::process::setpriority_process(None, 19) {
        Ok(()) => Priority::Nice,
        Err(_) => Priority::Unchanged,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The calling thread's scheduling policy and nice value, from `/proc/thread-self/stat`.
    fn policy_and_nice() -> (u32, i32) {
        let stat =
            std::fs::read_to_string("/proc/thread-self/stat").unwrap_or_else(|e| panic!("{e}"));
        // The fields after the command name, which may hold spaces, from field 3 (`state`).
        let (_, rest) = stat.rsplit_once(") ").unwrap_or_else(|| panic!("{stat}"));
        let fields: Vec<&str> = rest.split_whitespace().collect();
        let field = |number: usize| fields[number - 3];
        let nice = field(19).parse().unwrap_or_else(|e| panic!("{e}"));
        let policy = field(41).parse().unwrap_or_else(|e| panic!("{e}"));
        (policy, nice)
    }

    #[test]
    fn idle_priority_lowers_the_calling_thread_and_the_threads_it_starts() {
        let (main_policy, main_nice) = policy_and_nice();
        let (set, own, inherited) = std::thread::spawn(|| {
            let set = idle_priority();
            let own = policy_and_nice();
            let inherited = std::thread::spawn(policy_and_nice)
                .join()
                .unwrap_or_else(|_| panic!("the inner thread panicked"));
            (set, own, inherited)
        })
        .join()
        .unwrap_or_else(|_| panic!("the thread panicked"));
        let expected = match set {
            Priority::Idle => (libc::SCHED_IDLE as u32, main_nice),
            Priority::Nice => (main_policy, 19),
            Priority::Unchanged => (main_policy, main_nice),
        };
        assert_eq!(own, expected, "{set:?}");
        assert_eq!(inherited, expected, "{set:?}");
        // The thread that asked was the only one lowered.
        assert_eq!(policy_and_nice(), (main_policy, main_nice));
    }
}
