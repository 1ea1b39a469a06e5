//! The command the supervisor runs: started in the room's shell with its
//! output on two FIFOs, relayed up to its cap, stopped at its timeout or
//! interrupt, and finished (the shell replaced when it died or wedged).

use super::{EXIT_INTERRUPTED, Supervisor};
use crate::sandbox::local::procs::{kill_command, list_pids};
use crate::sandbox::local::session::{
    forget_state, next_cwd, random_hex, read_available, start_shell, wait_briefly,
};
use crate::sandbox::local::shell;
use crate::sandbox::local::wire::{self, Done};
use crate::sandbox::{RestartReason, ShellRestart};
use std::collections::HashSet;
use std::fs::File;
use std::io::{self, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::time::{Duration, Instant};

/// Time the shell gets to end its command once its output was cut and its
/// programs killed; then it is told to stop (a builtin loop).
const CUT_GRACE: Duration = Duration::from_millis(500);
/// Time the shell gets to come back to its prompt once told to stop; then
/// it is replaced: a command removed the stop signal's trap, or the shell
/// cannot run.
const SHELL_GRACE: Duration = Duration::from_secs(2);
const SHELL_RESET: &str = "the shell did not stop when told to and was replaced: the working \
     directory and exported variables are those of the last command that finished; functions, \
     aliases and other variables were reset";
const SHELL_EXITED: &str = "the shell exited and was restarted: the next command runs in a \
     fresh shell in /workspace, without the exported variables";

/// The exit code of a command stopped at its timeout (as coreutils' timeout).
const EXIT_TIMED_OUT: i32 = 124;
/// The command being run.
pub(super) struct Running {
    pub(super) nonce: String,
    pub(super) fifos: [String; 2],
    /// Read ends of the stdout and stderr FIFOs; `None` after an error.
    pub(super) pipes: [Option<File>; 2],
    /// Our own write ends, held so that the read ends never see a hang-up
    /// while the command runs (before bash opens them, or after a command
    /// closes its stdout).
    pub(super) keep_open: Vec<File>,
    pub(super) shell_pid: i32,
    pub(super) sent: [usize; 2],
    pub(super) cap: usize,
    pub(super) pending_input: Vec<u8>,
    pub(super) snapshot: HashSet<i32>,
    pub(super) deadline: Instant,
    /// When the command's processes that outlived SIGINT get SIGKILL.
    pub(super) hard_kill_at: Option<Instant>,
    /// When the shell is told to stop (after an output cap), or, told
    /// already, replaced.
    pub(super) give_up_at: Option<Instant>,
    /// Interrupted: the command's processes got SIGINT.
    pub(super) stopping: bool,
    /// The shell got the stop signal: the command ends when the shell is
    /// back at its prompt with the mark that its trap ran.
    pub(super) stop_sent: bool,
    /// A line break was written to a shell that was idle when told to
    /// stop, so that it reads, runs its trap and comes back to the prompt.
    pub(super) nudged: bool,
    /// The exit code of a command we ended (124, 130).
    pub(super) stop_code: Option<i32>,
    pub(super) done: Done,
}

impl Running {
    /// Tells the shell to stop what it runs: it goes on, if stopped, and
    /// its trap aborts the command line once the running program ended;
    /// `code` is the command's exit code. Nothing more of the command runs
    /// and the shell, with everything it holds, stays.
    pub(super) fn stop_shell(&mut self, code: Option<i32>) {
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

impl Supervisor {
    pub(super) fn start(
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
            snapshot: list_pids(),
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
    pub(super) fn pump(&mut self) -> io::Result<()> {
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
    pub(super) fn finish(&mut self, restart: Option<RestartReason>) -> io::Result<()> {
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

    pub(super) fn replace_shell(&mut self) -> io::Result<()> {
        let _ = self.shell.child.kill();
        let _ = self.shell.child.wait();
        self.shell = start_shell()?;
        Ok(())
    }

    pub(super) fn send_done(&mut self, done: &Done) -> io::Result<()> {
        let mut payload = serde_json::to_value(done).map_err(io::Error::other)?;
        payload["session"] = self.shell.session.clone().into();
        let bytes = serde_json::to_vec(&payload).map_err(io::Error::other)?;
        wire::write_frame(&mut self.out, wire::DONE, &bytes)
    }

    pub(super) fn drain_orphans(&mut self) {
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
