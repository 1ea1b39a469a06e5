//! The room's shared terminal inside the sandbox, as PID 1 runs it: an
//! interactive bash on a pseudo-terminal of the sandbox's own devpts,
//! whose master the supervisor polls beside the command shell. Output goes
//! to the server unchanged; input, resizes and the close come from it.

use super::session::set_nonblocking;
use super::shell;
use crate::protocol::{TermSize, WORKSPACE};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Time the terminal's shell gets after SIGHUP before SIGKILL.
const CLOSE_GRACE: Duration = Duration::from_millis(500);
/// How long after a resize the programs are told again (see `resize`).
const RESIZE_REMINDER: Duration = Duration::from_millis(200);
/// What the terminal's prompt shows: the directory.
const PROMPT: &str = r"\w \$ ";

/// What the terminal did in one pump.
pub(super) enum Pumped {
    /// Output bytes (maybe none).
    Output(Vec<u8>),
    /// The shell ended: its exit code (`None`: killed).
    Exited(Option<i32>),
}

/// The terminal: the master side and the shell on the slave side.
pub(super) struct Pty {
    master: File,
    child: Child,
    /// Input not yet written (the terminal's buffer was full).
    pending: Vec<u8>,
    /// Set by `close`: when the shell gets SIGKILL.
    kill_at: Option<Instant>,
    /// Set by `resize`: when the foreground programs get SIGWINCH again.
    remind_at: Option<Instant>,
    /// The master read EOF/EIO: the shell's side is gone.
    hung_up: bool,
}

/// Where the terminal's bash keeps its history: in the sandbox, not in
/// the project (HOME is /workspace), for the terminals to come.
const HISTORY: &str = "/tmp/.bash_history";

impl Pty {
    /// Opens a terminal of `size` running bash in `/workspace`.
    pub(super) fn open(size: TermSize) -> io::Result<Pty> {
        let winsize = winsize(size);
        let pair = nix::pty::openpty(Some(&winsize), None).map_err(io::Error::from)?;
        for fd in [&pair.master, &pair.slave] {
            cloexec(fd.as_fd())?;
        }
        let program = shell::program()?;
        let slave = File::from(pair.slave);
        let mut command = Command::new(program);
        command
            .args(["--noprofile", "--norc", "-i"])
            .env_clear()
            .envs(shell::SHELL_ENV)
            .env("TERM", "xterm-256color")
            .env("PS1", PROMPT)
            .env("HISTFILE", HISTORY)
            .current_dir(WORKSPACE)
            .stdin(Stdio::from(slave.try_clone()?))
            .stdout(Stdio::from(slave.try_clone()?))
            .stderr(Stdio::from(slave));
        // SAFETY: only async-signal-safe calls between fork and exec: a new
        // session whose controlling terminal is the slave (now fd 0).
        unsafe {
            command.pre_exec(|| {
                if libc::setsid() < 0 || libc::ioctl(0, libc::TIOCSCTTY as _, 0) < 0 {
                    return Err(io::Error::last_os_error());
                }
                shell::default_signals();
                Ok(())
            });
        }
        let child = command.spawn()?;
        let master = File::from(pair.master);
        set_nonblocking(master.as_raw_fd())?;
        Ok(Pty {
            master,
            child,
            pending: Vec::new(),
            kill_at: None,
            remind_at: None,
            hung_up: false,
        })
    }

    /// The shell's pid (spared when a command is killed, and by the reaper).
    pub(super) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The master, for poll; `wants_write`: input is waiting.
    pub(super) fn fd(&self) -> BorrowedFd<'_> {
        self.master.as_fd()
    }

    pub(super) fn wants_write(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Whether it waits on a deadline (a close in progress).
    pub(super) fn closing(&self) -> bool {
        self.kill_at.is_some()
    }

    /// Whether it waits on a clock (a close's grace, a resize's reminder).
    pub(super) fn timed(&self) -> bool {
        self.kill_at.is_some() || self.remind_at.is_some()
    }

    /// Queues input for the shell.
    pub(super) fn input(&mut self, bytes: &[u8]) {
        if self.kill_at.is_none() {
            self.pending.extend_from_slice(bytes);
        }
    }

    /// Sets the size; the kernel tells the foreground programs (SIGWINCH).
    /// They are told once more a moment later: vim drops a SIGWINCH that
    /// comes while it draws, and would go on drawing for the old size.
    pub(super) fn resize(&mut self, size: TermSize) {
        let winsize = winsize(size);
        // SAFETY: TIOCSWINSZ on our own master with a valid winsize.
        unsafe { libc::ioctl(self.master.as_raw_fd(), libc::TIOCSWINSZ as _, &winsize) };
        self.remind_at = Some(Instant::now() + RESIZE_REMINDER);
    }

    /// SIGWINCH to the terminal's foreground programs, when it is time.
    fn remind_of_size(&mut self) {
        if self.remind_at.is_none_or(|t| Instant::now() < t) {
            return;
        }
        self.remind_at = None;
        // SAFETY: asks our own master for its foreground process group,
        // then signals that group (a program that already redrew for the
        // size finds it unchanged and does nothing).
        unsafe {
            let group = libc::tcgetpgrp(self.master.as_raw_fd());
            if group > 0 {
                libc::kill(-group, libc::SIGWINCH);
            }
        }
    }

    /// Ends the terminal: SIGHUP to its session now, SIGKILL to the shell
    /// after a grace.
    pub(super) fn close(&mut self) {
        if self.kill_at.is_some() {
            return;
        }
        self.pending.clear();
        let pid = self.pid();
        // SAFETY: signalling the terminal's own session (its shell leads it).
        unsafe {
            libc::kill(-pid, libc::SIGHUP);
            libc::kill(pid, libc::SIGHUP);
            libc::kill(pid, libc::SIGCONT);
        }
        self.kill_at = Some(Instant::now() + CLOSE_GRACE);
    }

    /// The output that can be read now, up to about `limit` bytes.
    pub(super) fn read_ready(&mut self, limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        let mut buf = [0u8; 16 * 1024];
        while !self.hung_up && out.len() < limit {
            match self.master.read(&mut buf) {
                Ok(0) => self.hung_up = true,
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                // EIO: every slave side is closed (the shell and its jobs).
                Err(_) => self.hung_up = true,
            }
        }
        out
    }

    /// Writes pending input, reads output, and sees whether the shell ended.
    pub(super) fn pump(&mut self) -> Pumped {
        if !self.pending.is_empty() {
            match self.master.write(&self.pending) {
                Ok(n) => {
                    self.pending.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => self.pending.clear(),
            }
        }
        self.remind_of_size();
        let out = self.read_ready(256 * 1024);
        if !out.is_empty() {
            return Pumped::Output(out);
        }
        if self.kill_at.is_some_and(|t| Instant::now() >= t) {
            let _ = self.child.kill();
        }
        match self.child.try_wait() {
            Ok(Some(status)) => {
                if !self.hung_up {
                    // A job still holds the terminal: it ends with its
                    // shell, as a terminal window does.
                    // SAFETY: the terminal's session, whose leader exited.
                    unsafe { libc::kill(-self.pid(), libc::SIGHUP) };
                }
                Pumped::Exited(if self.closing() {
                    None
                } else {
                    exit_code(status)
                })
            }
            Ok(None) => Pumped::Output(Vec::new()),
            Err(_) => Pumped::Exited(None),
        }
    }
}

impl Drop for Pty {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn exit_code(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

fn winsize(size: TermSize) -> libc::winsize {
    libc::winsize {
        ws_row: size.rows,
        ws_col: size.cols,
        ws_xpixel: 0,
        ws_ypixel: 0,
    }
}

fn cloexec(fd: BorrowedFd<'_>) -> io::Result<()> {
    use nix::fcntl::{FcntlArg, FdFlag, fcntl};
    fcntl(fd.as_raw_fd(), FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC)).map_err(io::Error::from)?;
    Ok(())
}
