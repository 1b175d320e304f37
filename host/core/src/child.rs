//! Child processes the host starts (MCP servers, `dev`'s build commands): each dies with the
//! host on every exit path.
//!
//! - Each child leads a process group of its own, so that stopping it stops what it started
//!   too (a build's compiler, a server launched through `npx`): [`kill_group`].
//! - On Linux each child asks the kernel for `SIGKILL` when the host dies
//!   (`PR_SET_PDEATHSIG`), which covers the one exit path no code of the host runs on: the
//!   host being killed with `SIGKILL`. A server that ignores the end of its input would
//!   otherwise run on. The kernel sends it when the *thread* that started the child ends, so
//!   children are started only from threads that live as long as the host's runtime (its
//!   worker threads, or a thread of the caller's that runs the host's futures).

use std::process::Stdio;

/// Make `command` start a contained child (see the module docs), with no stdin unless the
/// caller sets one.
pub fn contain(command: &mut tokio::process::Command) {
    command.stdin(Stdio::null()).kill_on_drop(true);
    #[cfg(unix)]
    {
        command.process_group(0);
        #[cfg(target_os = "linux")]
        {
            // SAFETY: the closure runs in the child between fork and exec and calls only
            // async-signal-safe functions (prctl, getppid, _exit).
            let parent = std::process::id();
            unsafe {
                command.pre_exec(move || {
                    if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    // The host may have died before the request was made.
                    if libc::getppid() as u32 != parent {
                        libc::_exit(1);
                    }
                    Ok(())
                });
            }
        }
    }
}

/// Send `signal` to the process group a contained child leads (the child and everything it
/// started that stayed in its group).
#[cfg(unix)]
pub fn signal_group(child: &tokio::process::Child, signal: libc::c_int) {
    if let Some(pid) = child.id() {
        // SAFETY: killpg only sends a signal; the group id is the child's pid, which stays
        // reserved while the child is not reaped.
        unsafe {
            libc::killpg(pid as libc::pid_t, signal);
        }
    }
}

/// Kill a contained child's whole process group now.
pub fn kill_group(child: &mut tokio::process::Child) {
    #[cfg(unix)]
    signal_group(child, libc::SIGKILL);
    let _ = child.start_kill();
}

/// After a kill: reap the child once it is gone, waiting at most `limit` (a killed process
/// is gone within microseconds). A host that lives on inside a longer process (the Python
/// package's in-process host, an embedder's) would otherwise keep a zombie per server until
/// that process exits, since tokio's own reaper stops with the runtime. A child still there
/// after `limit` is left to that reaper.
pub fn reap_briefly(child: &mut tokio::process::Child, limit: std::time::Duration) {
    let deadline = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) if std::time::Instant::now() >= deadline => return,
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(1)),
        }
    }
}
