//! PID 1 of a sandbox: keeps the room's bash session, feeds it commands,
//! relays their output, enforces timeouts, interrupts and output caps, and
//! restarts the shell when it dies or wedges. Single-threaded and
//! poll-driven: it runs in a process forked from the helper. The command
//! being run, from its start to its end, is command.rs.

mod command;

use super::background::{self, Background};
use super::procs::{kill_command, list_processes};
use super::pty::{Pty, Pumped};
use super::session::{Shell, bring_up_loopback, set_nonblocking, start_shell};
use super::wire::{self, Done, ProcExit, Request, TermExit};
use crate::protocol::TermSize;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::collections::HashSet;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use command::Running;

/// Time a command gets after SIGINT before SIGKILL.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// How often orphans reparented to PID 1 are reaped.
const REAP_EVERY: Duration = Duration::from_millis(250);
/// How often the listening ports are looked at.
const PORTS_EVERY: Duration = Duration::from_secs(1);
/// Output read before a resize at most (a program that floods the
/// terminal refills it as it is read: the rest counts as after).
const RESIZE_DRAIN: usize = 1024 * 1024;

/// The exit code of an interrupted command (128 + SIGINT, as a shell's).
pub(super) const EXIT_INTERRUPTED: i32 = 130;

/// Entry point (the closure hakoniwa runs as PID 1).
pub fn run() -> i32 {
    use nix::sys::signal::{SigHandler, Signal, signal};
    // SAFETY: ignoring SIGPIPE only changes how a write to a closed pipe is
    // reported (EPIPE instead of death); children get the default back.
    let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
    bring_up_loopback();
    if let Err(e) = super::seccomp::load() {
        eprintln!("duet sandbox: no seccomp filter on this host: {e}");
    }
    let mut sup = match Supervisor::new() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("duet sandbox: cannot start the shell: {e}");
            return 1;
        }
    };
    match sup.serve() {
        Ok(()) => 0,
        Err(e) => {
            eprintln!("duet sandbox: {e}");
            1
        }
    }
}

struct Supervisor {
    shell: Shell,
    current: Option<Running>,
    /// Read ends of earlier commands' FIFOs, drained and discarded while
    /// background jobs still hold them.
    orphans: Vec<File>,
    requests: Vec<u8>,
    out: io::Stdout,
    /// When orphans were last reaped: a scan of /proc, kept off the path
    /// of every output wake-up.
    last_reap: Instant,
    /// The room's shared terminal, while it runs.
    terminal: Option<Pty>,
    /// The room's background processes that run.
    background: Vec<Background>,
    /// The listening ports last reported, and when they were looked at.
    ports: Vec<u16>,
    last_ports: Instant,
}

impl Supervisor {
    fn new() -> io::Result<Self> {
        let shell = start_shell()?;
        let mut out = io::stdout();
        wire::write_frame(&mut out, wire::READY, shell.session.as_bytes())?;
        Ok(Supervisor {
            shell,
            current: None,
            orphans: Vec::new(),
            requests: Vec::new(),
            out,
            last_reap: Instant::now(),
            terminal: None,
            background: Vec::new(),
            ports: Vec::new(),
            last_ports: Instant::now(),
        })
    }

    fn serve(&mut self) -> io::Result<()> {
        set_nonblocking(0)?;
        loop {
            let clock = self.current.is_some() || self.terminal.as_ref().is_some_and(Pty::timed);
            // A background process's end wakes nobody (no SIGCHLD here):
            // it is looked for every quarter second while one runs.
            let timeout = if clock {
                20u16
            } else if !self.background.is_empty() {
                250
            } else {
                1000
            };
            self.wait(PollTimeout::from(timeout))?;
            if !self.read_requests()? {
                return Ok(()); // the server is gone
            }
            self.pump()?;
            self.pump_terminal()?;
            self.pump_background()?;
            self.report_ports()?;
            self.reap();
        }
    }

    /// Sleeps until a request, output, room to write the command, or the
    /// timeout.
    fn wait(&self, timeout: PollTimeout) -> io::Result<()> {
        // SAFETY: fd 0 is the server's pipe, open for the process's life.
        let requests = unsafe { BorrowedFd::borrow_raw(0) };
        let mut fds = vec![
            PollFd::new(requests, PollFlags::POLLIN),
            PollFd::new(self.shell.ctl.as_fd(), PollFlags::POLLIN),
        ];
        if let Some(run) = &self.current {
            for pipe in run.pipes.iter().flatten() {
                fds.push(PollFd::new(pipe.as_fd(), PollFlags::POLLIN));
            }
            if !run.pending_input.is_empty() {
                fds.push(PollFd::new(self.shell.stdin.as_fd(), PollFlags::POLLOUT));
            }
        }
        for orphan in &self.orphans {
            fds.push(PollFd::new(orphan.as_fd(), PollFlags::POLLIN));
        }
        if let Some(term) = &self.terminal {
            let mut flags = PollFlags::POLLIN;
            if term.wants_write() {
                flags |= PollFlags::POLLOUT;
            }
            fds.push(PollFd::new(term.fd(), flags));
        }
        for process in &self.background {
            for fd in process.fds() {
                fds.push(PollFd::new(fd, PollFlags::POLLIN));
            }
        }
        match poll(&mut fds, timeout) {
            Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// Reads request lines from the server; false when it hung up.
    fn read_requests(&mut self) -> io::Result<bool> {
        let mut buf = [0u8; 64 * 1024];
        loop {
            let n = match nix::unistd::read(0, &mut buf) {
                Ok(0) => return Ok(false),
                Ok(n) => n,
                Err(nix::errno::Errno::EAGAIN) => return Ok(true),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            };
            self.requests.extend_from_slice(&buf[..n]);
            while let Some(pos) = self.requests.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.requests.drain(..=pos).collect();
                match serde_json::from_slice::<Request>(&line) {
                    Ok(req) => self.handle(req)?,
                    Err(e) => eprintln!("duet sandbox: bad request: {e}"),
                }
            }
        }
    }

    fn handle(&mut self, req: Request) -> io::Result<()> {
        match req {
            Request::Run {
                cmd,
                cwd,
                env,
                timeout_ms,
                output_cap,
            } => {
                if self.current.is_some() {
                    let done = Done {
                        error: Some("another command is running".into()),
                        ..Done::default()
                    };
                    return self.send_done(&done);
                }
                match self.start(&cmd, cwd.as_deref(), &env, timeout_ms, output_cap) {
                    Ok(run) => self.current = Some(run),
                    Err(e) => {
                        let done = Done {
                            error: Some(format!("cannot start the command: {e}")),
                            ..Done::default()
                        };
                        self.send_done(&done)?;
                    }
                }
            }
            Request::Interrupt { hard } => {
                let Some(run) = &mut self.current else {
                    return Ok(());
                };
                run.done.interrupted = true;
                // The shell is told first, so that its trap is pending when
                // the program ends and nothing after the program runs.
                if hard {
                    run.hard_kill_at = None;
                    run.stop_shell(Some(EXIT_INTERRUPTED));
                    kill_command(&run.snapshot, run.shell_pid, libc::SIGKILL);
                    return Ok(());
                }
                if !run.stopping {
                    // The program gets SIGINT like Ctrl+C, and SIGKILL if it
                    // outlives the grace.
                    run.stopping = true;
                    run.hard_kill_at = Some(Instant::now() + INTERRUPT_GRACE);
                    run.stop_shell(Some(EXIT_INTERRUPTED));
                    kill_command(&run.snapshot, run.shell_pid, libc::SIGINT);
                }
            }
            Request::TermOpen { cols, rows } => self.open_terminal(TermSize { cols, rows })?,
            Request::TermInput { data } => {
                use base64::Engine;
                match base64::engine::general_purpose::STANDARD.decode(data) {
                    Ok(bytes) => {
                        if let Some(term) = &mut self.terminal {
                            term.input(&bytes);
                        }
                    }
                    Err(e) => eprintln!("duet sandbox: bad terminal input: {e}"),
                }
            }
            Request::TermResize { cols, rows } => self.resize_terminal(TermSize { cols, rows })?,
            Request::TermClose => {
                if let Some(term) = &mut self.terminal {
                    term.close();
                }
            }
            Request::ProcStart { id, cmd } => self.start_background(id, &cmd)?,
            Request::ProcSignal { id, signal } => {
                if let Some(process) = self.background.iter().find(|p| p.id == id) {
                    process.signal(signal);
                }
            }
        }
        Ok(())
    }

    /// Starts a background process; a failure is its exit.
    fn start_background(&mut self, id: String, cmd: &str) -> io::Result<()> {
        match Background::start(id.clone(), cmd) {
            Ok(process) => {
                // A command running now must not take it with it when it
                // is killed: it counts as older than the command.
                if let Some(run) = &mut self.current {
                    run.snapshot.insert(process.pid());
                }
                self.background.push(process);
                Ok(())
            }
            Err(e) => self.send_proc_exit(&ProcExit {
                id,
                exit_code: None,
                error: Some(format!("the process could not start: {e}")),
            }),
        }
    }

    /// Relays the background processes' output and reports their ends.
    fn pump_background(&mut self) -> io::Result<()> {
        let mut ended = Vec::new();
        for (i, process) in self.background.iter_mut().enumerate() {
            match process.pump() {
                background::Pumped::Output(output) => {
                    background::send_output(&mut self.out, &process.id, &output)?;
                }
                background::Pumped::Exited(output, exit_code) => {
                    background::send_output(&mut self.out, &process.id, &output)?;
                    ended.push((i, exit_code));
                }
            }
        }
        for (i, exit_code) in ended.into_iter().rev() {
            let process = self.background.remove(i);
            let exit = ProcExit {
                id: process.id.clone(),
                exit_code,
                error: None,
            };
            drop(process);
            self.send_proc_exit(&exit)?;
        }
        Ok(())
    }

    fn send_proc_exit(&mut self, exit: &ProcExit) -> io::Result<()> {
        let bytes = serde_json::to_vec(exit).map_err(io::Error::other)?;
        wire::write_frame(&mut self.out, wire::PROC_EXIT, &bytes)
    }

    /// Tells the server which ports listen, when that changed.
    fn report_ports(&mut self) -> io::Result<()> {
        if self.last_ports.elapsed() < PORTS_EVERY {
            return Ok(());
        }
        self.last_ports = Instant::now();
        let ports = super::ports::listening();
        if ports == self.ports {
            return Ok(());
        }
        self.ports = ports;
        let bytes = serde_json::to_vec(&self.ports).map_err(io::Error::other)?;
        wire::write_frame(&mut self.out, wire::PORTS, &bytes)
    }

    /// Starts the shared terminal unless one runs; a failure is its exit.
    fn open_terminal(&mut self, size: TermSize) -> io::Result<()> {
        if self.terminal.is_some() {
            return Ok(());
        }
        match Pty::open(size) {
            Ok(term) => {
                // A command running now must not take the terminal with it
                // when it is killed: its shell counts as older than it.
                if let Some(run) = &mut self.current {
                    run.snapshot.insert(term.pid());
                }
                self.terminal = Some(term);
                Ok(())
            }
            Err(e) => self.send_term_exit(&TermExit {
                exit_code: None,
                error: Some(format!("the terminal could not start: {e}")),
            }),
        }
    }

    /// Resizes the terminal, and says where among its output: what the
    /// programs wrote until now (drawn for the old size) goes first, then
    /// `TERM_RESIZED`, then what they draw after their SIGWINCH. The
    /// server's screen changes size at that frame, so neither is read at
    /// the other's size.
    fn resize_terminal(&mut self, size: TermSize) -> io::Result<()> {
        let Some(term) = &mut self.terminal else {
            return Ok(());
        };
        let before = term.read_ready(RESIZE_DRAIN);
        term.resize(size);
        self.send_term_data(&before)?;
        wire::write_frame(&mut self.out, wire::TERM_RESIZED, &wire::term_size(size))
    }

    fn send_term_data(&mut self, bytes: &[u8]) -> io::Result<()> {
        for chunk in bytes.chunks(64 * 1024) {
            wire::write_frame(&mut self.out, wire::TERM_DATA, chunk)?;
        }
        Ok(())
    }

    /// Relays the terminal's output and reports its end.
    fn pump_terminal(&mut self) -> io::Result<()> {
        let Some(term) = &mut self.terminal else {
            return Ok(());
        };
        // One read per round (bounded), so a flood of output never starves
        // the commands.
        match term.pump() {
            Pumped::Output(bytes) => self.send_term_data(&bytes),
            Pumped::Exited(exit_code) => {
                self.terminal = None;
                self.send_term_exit(&TermExit {
                    exit_code,
                    error: None,
                })
            }
        }
    }

    fn send_term_exit(&mut self, exit: &TermExit) -> io::Result<()> {
        let bytes = serde_json::to_vec(exit).map_err(io::Error::other)?;
        wire::write_frame(&mut self.out, wire::TERM_EXIT, &bytes)
    }

    /// Reaps every exited child (PID 1 inherits orphans), except the shell,
    /// whose status its `Child` collects.
    fn reap(&mut self) {
        if self.last_reap.elapsed() < REAP_EVERY {
            return;
        }
        self.last_reap = Instant::now();
        let shell_pid = self.shell.child.id() as i32;
        // The terminal's shell is collected by its `Child` too.
        let term_pid = self.terminal.as_ref().map(Pty::pid);
        // So are the background processes.
        let background: HashSet<i32> = self.background.iter().map(Background::pid).collect();
        let procs = list_processes();
        for (pid, info) in procs {
            let ours = pid == shell_pid || Some(pid) == term_pid || background.contains(&pid);
            if info.zombie && !ours && info.ppid == 1 {
                let pid = nix::unistd::Pid::from_raw(pid);
                let _ = nix::sys::wait::waitpid(pid, Some(nix::sys::wait::WaitPidFlag::WNOHANG));
            }
        }
    }
}
