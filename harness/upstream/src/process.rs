//! One child process: started in a process group of its own with `PR_SET_PDEATHSIG`, its output
//! in a log file, stopped by PID (SIGTERM to the group, SIGKILL after a bound) and reaped.
//!
//! Each child is spawned by a thread of its own that then waits for it. `PR_SET_PDEATHSIG` fires
//! when the *thread* that forked the child ends, not the process; a waiter thread lives exactly
//! as long as its child, so the signal fires only when the test process itself dies (killed,
//! aborted, panicking out of `main`), which is when it is wanted.

use crate::error::{Error, Result};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a process gets after SIGKILL before it is declared unkillable.
const KILL_BOUND: Duration = Duration::from_secs(10);

pub(crate) struct Process {
    pub name: &'static str,
    pub pid: u32,
    pub log: PathBuf,
    exit: mpsc::Receiver<io::Result<ExitStatus>>,
    status: Option<String>,
    waiter: Option<JoinHandle<()>>,
}

impl Process {
    pub fn spawn(name: &'static str, program: &Path, args: &[String], log: &Path) -> Result<Self> {
        let out = File::create(log).map_err(Error::io(format!("creating {}", log.display())))?;
        let err = out
            .try_clone()
            .map_err(Error::io(format!("opening {}", log.display())))?;
        let mut cmd = Command::new(program);
        cmd.args(args)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .process_group(0);
        let parent = std::process::id() as libc::pid_t;
        // SAFETY: the closure runs in the forked child before exec and only calls
        // async-signal-safe functions (prctl, getppid); it allocates nothing.
        unsafe {
            cmd.pre_exec(move || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong) != 0 {
                    return Err(io::Error::last_os_error());
                }
                // The parent died between fork and prctl: the signal will never come.
                if libc::getppid() != parent {
                    return Err(io::Error::other("parent exited during spawn"));
                }
                Ok(())
            });
        }
        let (pid_tx, pid_rx) = mpsc::channel();
        let (exit_tx, exit_rx) = mpsc::channel();
        let waiter = std::thread::Builder::new()
            .name(format!("faultline-upstream-{name}"))
            .spawn(move || match cmd.spawn() {
                Ok(mut child) => {
                    let _ = pid_tx.send(Ok(child.id()));
                    let _ = exit_tx.send(child.wait());
                }
                Err(e) => {
                    let _ = pid_tx.send(Err(e));
                }
            })
            .map_err(Error::io(format!("starting the waiter thread of {name}")))?;
        let spawned = pid_rx
            .recv()
            .unwrap_or_else(|_| Err(io::Error::other("the waiter thread died")));
        match spawned {
            Ok(pid) => Ok(Process {
                name,
                pid,
                log: log.to_path_buf(),
                exit: exit_rx,
                status: None,
                waiter: Some(waiter),
            }),
            Err(source) => {
                let _ = waiter.join();
                Err(Error::Spawn {
                    binary: name,
                    path: program.to_path_buf(),
                    source,
                })
            }
        }
    }

    /// `Some(status)` once the process has exited (and was reaped).
    pub fn exited(&mut self) -> Option<&str> {
        if self.status.is_none() {
            match self.exit.try_recv() {
                Ok(st) => self.status = Some(describe(st)),
                Err(mpsc::TryRecvError::Empty) => {}
                Err(mpsc::TryRecvError::Disconnected) => self.status = Some("unknown".into()),
            }
        }
        self.status.as_deref()
    }

    fn wait_for(&mut self, bound: Duration) -> bool {
        if self.status.is_some() {
            return true;
        }
        match self.exit.recv_timeout(bound) {
            Ok(st) => {
                self.status = Some(describe(st));
                true
            }
            Err(mpsc::RecvTimeoutError::Timeout) => false,
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                self.status = Some("unknown".into());
                true
            }
        }
    }

    /// SIGTERM to the process group, SIGKILL after `grace`, and the process reaped. Idempotent.
    pub fn stop(&mut self, grace: Duration) -> Result<()> {
        if self.exited().is_none() {
            signal_group(self.pid, libc::SIGTERM);
            if !self.wait_for(grace) {
                signal_group(self.pid, libc::SIGKILL);
                if !self.wait_for(KILL_BOUND) {
                    return Err(Error::Unkillable {
                        binary: self.name,
                        pid: self.pid,
                    });
                }
            }
        }
        // Anything the process left in its group (none of ours fork, but a group outlives its
        // leader only through such children).
        signal_group(self.pid, libc::SIGKILL);
        if let Some(w) = self.waiter.take() {
            let _ = w.join();
        }
        Ok(())
    }

    /// The last `n` lines of the log.
    pub fn tail(&self, n: usize) -> String {
        tail(&self.log, n)
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.stop(Duration::from_secs(5));
    }
}

fn signal_group(pid: u32, sig: libc::c_int) {
    // SAFETY: kill(2) with a negative pid signals a process group; no memory is touched.
    unsafe {
        libc::kill(-(pid as libc::pid_t), sig);
    }
}

fn describe(st: io::Result<ExitStatus>) -> String {
    match st {
        Ok(st) => match (st.code(), st.signal()) {
            (Some(code), _) => format!("exit code {code}"),
            (None, Some(sig)) => format!("killed by signal {sig}"),
            _ => st.to_string(),
        },
        Err(e) => format!("wait failed: {e}"),
    }
}

/// The last `n` lines of a file (its last 64 KiB at most are read).
pub(crate) fn tail(path: &Path, n: usize) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(path) {
        let len = f.metadata().map(|m| m.len()).unwrap_or(0);
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(64 * 1024)));
        let mut buf = Vec::new();
        let _ = f.read_to_end(&mut buf);
        text = String::from_utf8_lossy(&buf).into_owned();
    }
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}
