//! The supervisor's bash session and the descriptor plumbing around it:
//! starting the shell with its pipes non-blocking, reading what is
//! available, and the sandbox's loopback.

use super::shell;
use crate::protocol::WORKSPACE;
use nix::fcntl::{FcntlArg, OFlag, fcntl};
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsRawFd, FromRawFd, RawFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Duration;

/// The bash session.
pub(super) struct Shell {
    pub(super) child: Child,
    pub(super) stdin: ChildStdin,
    pub(super) ctl: ChildStdout,
    pub(super) ctl_buf: Vec<u8>,
    pub(super) session: String,
}

/// The exit code of a shell that closed its stdout: it is exiting, but a
/// shell that only closed the pipe is killed rather than waited for.
pub(super) fn wait_briefly(child: &mut Child) -> Option<i32> {
    for _ in 0..40 {
        if let Ok(Some(status)) = child.try_wait() {
            return status.code();
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

pub(super) fn start_shell() -> io::Result<Shell> {
    let program = shell::program()?;
    let mut command = Command::new(program);
    command
        .args(shell::SHELL_ARGS)
        .env_clear()
        .envs(shell::SHELL_ENV)
        .current_dir(WORKSPACE)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        // An interactive bash without a terminal says so at its start, and
        // prints its (empty) prompts there: nothing anyone needs.
        .stderr(Stdio::null());
    // SAFETY: setsid is async-signal-safe. The shell is interactive, so
    // without a session of its own it would take the controlling terminal
    // it inherited (an embedded backend's is the person's, under the TUI)
    // for its job control and stop the TUI from reading its keys.
    unsafe {
        command.pre_exec(|| {
            libc::setsid();
            shell::default_signals();
            Ok(())
        });
    }
    let mut child = command.spawn()?;
    let (Some(stdin), Some(ctl)) = (child.stdin.take(), child.stdout.take()) else {
        return Err(io::Error::other("the shell has no pipes"));
    };
    let mut stdin = stdin;
    stdin.write_all(shell::setup_line().as_bytes())?;
    // A replacement shell goes back to the last finished command's
    // directory and exports (the first shell finds no state yet).
    if std::path::Path::new(shell::STATE_FILE).exists() {
        stdin.write_all(shell::restore_line().as_bytes())?;
    }
    set_nonblocking(stdin.as_raw_fd())?;
    set_nonblocking(ctl.as_raw_fd())?;
    Ok(Shell {
        child,
        stdin,
        ctl,
        ctl_buf: Vec::new(),
        session: random_hex(12),
    })
}

/// Where the next command runs: the directory the last finished command
/// left, which a replacement shell goes back to; `/workspace` (where a
/// shell starts) without one, or when it is gone.
pub(super) fn next_cwd() -> String {
    let mut saved = Vec::new();
    let read = File::open(shell::CWD_FILE).and_then(|f| f.take(4096).read_to_end(&mut saved));
    let cwd = String::from_utf8_lossy(&saved).into_owned();
    if read.is_ok() && cwd.starts_with('/') && std::path::Path::new(&cwd).is_dir() {
        cwd
    } else {
        WORKSPACE.to_string()
    }
}

/// Forgets the last finished command's directory and exports: the next
/// shell starts afresh (after an `exit`).
pub(super) fn forget_state() {
    for file in [shell::STATE_FILE, shell::CWD_FILE] {
        let _ = std::fs::remove_file(file);
    }
}

/// Reads what is available; true when the other end hung up.
pub(super) fn read_available(f: &mut impl Read, into: &mut Vec<u8>) -> io::Result<bool> {
    let mut buf = [0u8; 4096];
    loop {
        match f.read(&mut buf) {
            Ok(0) => return Ok(true),
            Ok(n) => into.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Ok(true),
        }
    }
}

pub(super) fn set_nonblocking(fd: RawFd) -> io::Result<()> {
    let flags = OFlag::from_bits_truncate(fcntl(fd, FcntlArg::F_GETFL)?);
    fcntl(fd, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
    Ok(())
}

pub(super) fn random_hex(bytes: usize) -> String {
    use rand::Rng;
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Brings up `lo` in the sandbox's network namespace, so that servers a
/// command starts are reachable from the next one. Nothing else is there.
pub(super) fn bring_up_loopback() {
    // SAFETY: a plain socket and two interface ioctls on a zeroed ifreq.
    unsafe {
        let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        if sock < 0 {
            return;
        }
        let sock = File::from_raw_fd(sock);
        let mut req: libc::ifreq = std::mem::zeroed();
        for (dst, src) in req.ifr_name.iter_mut().zip(b"lo\0") {
            *dst = *src as libc::c_char;
        }
        if libc::ioctl(sock.as_raw_fd(), libc::SIOCGIFFLAGS, &mut req) == 0 {
            req.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
            libc::ioctl(sock.as_raw_fd(), libc::SIOCSIFFLAGS, &req);
        }
    }
}
