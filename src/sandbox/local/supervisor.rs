//! PID 1 of a sandbox: keeps the room's bash session, feeds it commands,
//! relays their output, enforces timeouts, interrupts and output caps, and
//! restarts the shell when it dies or wedges. Single-threaded and
//! poll-driven: it runs in a process forked from the helper.

use super::background::{self, Background};
use super::procs::{kill_command, list_processes};
use super::pty::{Pty, Pumped};
use super::session::{
    Shell, bring_up_loopback, forget_state, next_cwd, random_hex, read_available, set_nonblocking,
    start_shell, wait_briefly,
};
use super::shell;
use super::wire::{self, Done, ProcExit, Request, TermExit};
use crate::protocol::TermSize;
use crate::sandbox::{RestartReason, ShellRestart};
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

/// Time a command gets after SIGINT before SIGKILL.
const INTERRUPT_GRACE: Duration = Duration::from_secs(2);
/// Time the shell gets to end its command once its output was cut and its
/// programs killed; then it is told to stop (a builtin loop).
const CUT_GRACE: Duration = Duration::from_millis(500);
/// Time the shell gets to come back to its prompt once told to stop; then
/// it is replaced: a command removed the stop signal's trap, or the shell
/// cannot run.
const SHELL_GRACE: Duration = Duration::from_secs(2);
/// How often orphans reparented to PID 1 are reaped.
const REAP_EVERY: Duration = Duration::from_millis(250);
/// How often the listening ports are looked at.
const PORTS_EVERY: Duration = Duration::from_secs(1);

const SHELL_RESET: &str = "the shell did not stop when told to and was replaced: the working \
     directory and exported variables are those of the last command that finished; functions, \
     aliases and other variables were reset";
const SHELL_EXITED: &str = "the shell exited and was restarted: the next command runs in a \
     fresh shell in /workspace, without the exported variables";

/// The exit code of a command stopped at its timeout (as coreutils' timeout).
const EXIT_TIMED_OUT: i32 = 124;
/// The exit code of an interrupted command (128 + SIGINT, as a shell's).
const EXIT_INTERRUPTED: i32 = 130;

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

/// The command being run.
struct Running {
    nonce: String,
    fifos: [String; 2],
    /// Read ends of the stdout and stderr FIFOs; `None` after an error.
    pipes: [Option<File>; 2],
    /// Our own write ends, held so that the read ends never see a hang-up
    /// while the command runs (before bash opens them, or after a command
    /// closes its stdout).
    keep_open: Vec<File>,
    shell_pid: i32,
    sent: [usize; 2],
    cap: usize,
    pending_input: Vec<u8>,
    snapshot: HashSet<i32>,
    deadline: Instant,
    /// When the command's processes that outlived SIGINT get SIGKILL.
    hard_kill_at: Option<Instant>,
    /// When the shell is told to stop (after an output cap), or, told
    /// already, replaced.
    give_up_at: Option<Instant>,
    /// Interrupted: the command's processes got SIGINT.
    stopping: bool,
    /// The shell got the stop signal: the command ends when the shell is
    /// back at its prompt with the mark that its trap ran.
    stop_sent: bool,
    /// A line break was written to a shell that was idle when told to
    /// stop, so that it reads, runs its trap and comes back to the prompt.
    nudged: bool,
    /// The exit code of a command we ended (124, 130).
    stop_code: Option<i32>,
    done: Done,
}

impl Running {
    /// Tells the shell to stop what it runs: it goes on, if stopped, and
    /// its trap aborts the command line once the running program ended;
    /// `code` is the command's exit code. Nothing more of the command runs
    /// and the shell, with everything it holds, stays.
    fn stop_shell(&mut self, code: Option<i32>) {
        if self.stop_code.is_none() {
            self.stop_code = code;
        }
        if !self.stop_sent {
            self.stop_sent = true;
            // SAFETY: signalling our own child, the shell.
            unsafe {
                libc::kill(self.shell_pid, shell::STOP_SIGNAL);
                libc::kill(self.shell_pid, libc::SIGCONT);
            }
        }
        let start = self.hard_kill_at.unwrap_or_else(Instant::now);
        self.give_up_at = Some(start.max(Instant::now()) + SHELL_GRACE);
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
            let clock = self.current.is_some() || self.terminal.as_ref().is_some_and(Pty::closing);
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
            Request::TermResize { cols, rows } => {
                if let Some(term) = &mut self.terminal {
                    term.resize(TermSize { cols, rows });
                }
            }
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

    /// Relays the terminal's output and reports its end.
    fn pump_terminal(&mut self) -> io::Result<()> {
        let Some(term) = &mut self.terminal else {
            return Ok(());
        };
        // One read per round (bounded), so a flood of output never starves
        // the commands.
        match term.pump() {
            Pumped::Output(bytes) => {
                for chunk in bytes.chunks(64 * 1024) {
                    wire::write_frame(&mut self.out, wire::TERM_DATA, chunk)?;
                }
                Ok(())
            }
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

    fn start(
        &mut self,
        cmd: &str,
        cwd: Option<&str>,
        env: &std::collections::BTreeMap<String, String>,
        timeout_ms: u64,
        cap: usize,
    ) -> io::Result<Running> {
        let nonce = random_hex(16);
        std::fs::create_dir_all(shell::FIFO_DIR)?;
        let fifos = [
            format!("{}/{nonce}.out", shell::FIFO_DIR),
            format!("{}/{nonce}.err", shell::FIFO_DIR),
        ];
        let mut pipes = [None, None];
        let mut keep_open = Vec::new();
        for (slot, path) in pipes.iter_mut().zip(&fifos) {
            let _ = std::fs::remove_file(path);
            nix::unistd::mkfifo(
                path.as_str(),
                nix::sys::stat::Mode::from_bits_truncate(0o600),
            )
            .map_err(io::Error::from)?;
            let open = |write: bool| {
                std::fs::OpenOptions::new()
                    .read(!write)
                    .write(write)
                    .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
                    .open(path)
            };
            *slot = Some(open(false)?);
            keep_open.push(open(true)?);
        }
        let runs = match write_private(shell::COMMAND_FILE, shell::command_text(cmd).as_bytes()) {
            Ok(()) => shell::source_file(shell::COMMAND_FILE),
            Err(_) => shell::eval_text(cmd),
        };
        let script = shell::script(&nonce, &runs, cwd, env, &fifos[0], &fifos[1]);
        self.shell.ctl_buf.clear();
        Ok(Running {
            nonce,
            fifos,
            pipes,
            keep_open,
            shell_pid: self.shell.child.id() as i32,
            sent: [0, 0],
            cap,
            pending_input: script.into_bytes(),
            snapshot: list_processes().keys().copied().collect(),
            deadline: Instant::now() + Duration::from_millis(timeout_ms),
            hard_kill_at: None,
            give_up_at: None,
            stopping: false,
            stop_sent: false,
            nudged: false,
            stop_code: None,
            done: Done::default(),
        })
    }

    /// Moves bytes: command input to the shell, output to the server, and
    /// watches the clock.
    fn pump(&mut self) -> io::Result<()> {
        self.drain_orphans();
        let shell_pid = self.shell.child.id() as i32;
        let Some(run) = &mut self.current else {
            // Between commands the shell prints nothing; if it died, replace it.
            if read_available(&mut self.shell.ctl, &mut self.shell.ctl_buf)? {
                self.replace_shell()?;
            }
            return Ok(());
        };
        if !run.pending_input.is_empty() {
            match self.shell.stdin.write(&run.pending_input) {
                Ok(n) => {
                    run.pending_input.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(_) => run.pending_input.clear(), // the shell is gone: seen below
            }
        }
        for stream in 0..2 {
            relay(run, stream, &mut self.out)?;
        }
        let shell_gone = read_available(&mut self.shell.ctl, &mut self.shell.ctl_buf)?;
        let ctl = &self.shell.ctl_buf;
        let sentinel = shell::find_sentinel(ctl, &run.nonce);
        if run.stop_sent {
            if shell::stopped_at_prompt(ctl) {
                run.done.exit_code = run.stop_code.or(sentinel).or(Some(EXIT_INTERRUPTED));
                return self.finish(None);
            }
            if !run.nudged && (sentinel.is_some() || shell::at_prompt(ctl)) {
                // The command ended before the shell was told to stop:
                // the trap runs when the shell next reads a line.
                run.nudged = true;
                run.pending_input.push(b'\n');
            }
        } else if let Some(code) = sentinel {
            run.done.exit_code = Some(code);
            return self.finish(None);
        }
        if shell_gone {
            run.done.exit_code = wait_briefly(&mut self.shell.child);
            return self.finish(Some(RestartReason::Exit));
        }
        let now = Instant::now();
        if now >= run.deadline && run.stop_code.is_none() {
            run.done.timed_out = true;
            run.hard_kill_at = None;
            run.stop_shell(Some(EXIT_TIMED_OUT));
            kill_command(&run.snapshot, shell_pid, libc::SIGKILL);
        }
        if run.hard_kill_at.is_some_and(|t| now >= t) {
            run.hard_kill_at = None;
            kill_command(&run.snapshot, shell_pid, libc::SIGKILL);
        }
        if run.give_up_at.is_some_and(|t| now >= t) {
            if !run.stop_sent {
                // Its output was cut and its programs killed, but the
                // shell goes on (a builtin loop): it is told to stop.
                run.stop_shell(None);
                return Ok(());
            }
            // The shell did not come back to its prompt: it is replaced.
            let _ = self.shell.child.kill();
            let _ = self.shell.child.wait();
            kill_command(&run.snapshot, shell_pid, libc::SIGKILL);
            run.done.exit_code = run.stop_code;
            let reason = if run.done.timed_out {
                RestartReason::Timeout
            } else if run.done.interrupted {
                RestartReason::Interrupt
            } else {
                RestartReason::Stopped
            };
            return self.finish(Some(reason));
        }
        Ok(())
    }

    /// Ends the current command: drains its output, replaces the shell
    /// when it died or did not stop (`restart`: why), and reports where the
    /// next command runs. A shell that exited is replaced afresh; one that
    /// was killed keeps the last finished command's directory and exports.
    fn finish(&mut self, restart: Option<RestartReason>) -> io::Result<()> {
        let Some(mut run) = self.current.take() else {
            return Ok(());
        };
        for stream in 0..2 {
            relay(&mut run, stream, &mut self.out)?;
        }
        if run.stop_code.is_some() {
            // What the command left running (its background jobs) ends
            // with it.
            kill_command(&run.snapshot, run.shell_pid, libc::SIGKILL);
        }
        run.keep_open.clear();
        for path in &run.fifos {
            let _ = std::fs::remove_file(path);
        }
        self.orphans.extend(run.pipes.into_iter().flatten());
        if let Some(reason) = restart {
            let reset = reason == RestartReason::Exit;
            if reset {
                forget_state();
            }
            let error = if reset { SHELL_EXITED } else { SHELL_RESET };
            run.done.error = Some(error.to_string());
            run.done.restart = Some(ShellRestart { reason, reset });
            self.replace_shell()?;
        }
        run.done.cwd = Some(next_cwd());
        self.send_done(&run.done)
    }

    fn replace_shell(&mut self) -> io::Result<()> {
        let _ = self.shell.child.kill();
        let _ = self.shell.child.wait();
        self.shell = start_shell()?;
        Ok(())
    }

    fn send_done(&mut self, done: &Done) -> io::Result<()> {
        let mut payload = serde_json::to_value(done).map_err(io::Error::other)?;
        payload["session"] = self.shell.session.clone().into();
        let bytes = serde_json::to_vec(&payload).map_err(io::Error::other)?;
        wire::write_frame(&mut self.out, wire::DONE, &bytes)
    }

    fn drain_orphans(&mut self) {
        let mut buf = [0u8; 16 * 1024];
        self.orphans.retain_mut(|f| {
            loop {
                match f.read(&mut buf) {
                    Ok(0) => break false,
                    Ok(_) => continue,
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break true,
                    Err(_) => break false,
                }
            }
        });
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

/// Sends what the command wrote on `stream` to the server, up to the cap;
/// past it the command is cut and killed.
fn relay(run: &mut Running, stream: usize, out: &mut io::Stdout) -> io::Result<()> {
    let kind = if stream == 0 {
        wire::STDOUT
    } else {
        wire::STDERR
    };
    let mut buf = [0u8; 64 * 1024];
    while let Some(pipe) = run.pipes[stream].as_mut() {
        match pipe.read(&mut buf) {
            Ok(0) => break, // no writer right now; maybe later (the shell opens it)
            Ok(n) => {
                let room = run.cap.saturating_sub(run.sent[stream]);
                let keep = n.min(room);
                if keep > 0 {
                    wire::write_frame(out, kind, &buf[..keep])?;
                    run.sent[stream] += keep;
                }
                if keep < n && !run.done.truncated {
                    run.done.truncated = true;
                    run.give_up_at.get_or_insert(Instant::now() + CUT_GRACE);
                    kill_all_new(run);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => {
                run.pipes[stream] = None;
                break;
            }
        }
    }
    Ok(())
}

/// Writes a file only the sandbox's user can read, replacing any.
fn write_private(path: &str, bytes: &[u8]) -> io::Result<()> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .custom_flags(libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(bytes)
}

fn kill_all_new(run: &Running) {
    kill_command(&run.snapshot, run.shell_pid, libc::SIGKILL);
}
