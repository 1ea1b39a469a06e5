//! The room's background processes inside the sandbox, as PID 1 runs
//! them: `bash -c CMD` in `/workspace`, each in a process group of its
//! own, whose stdout and stderr pipes the supervisor polls beside the
//! command shell. A process ends when its first process (the group's
//! leader) ends: the rest of its group goes with it.

use super::session::set_nonblocking;
use super::shell;
use super::wire;
use crate::protocol::WORKSPACE;
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};

/// Most bytes read from one process per round, so a flood never starves
/// the rest.
const READ_PER_ROUND: usize = 256 * 1024;

/// One background process.
pub(super) struct Background {
    pub(super) id: String,
    child: Child,
    /// stdout and stderr; `None` once closed.
    pipes: [Option<File>; 2],
}

/// What a process did in one pump.
pub(super) enum Pumped {
    /// Output (maybe none) on stdout (0) or stderr (1).
    Output(Vec<(usize, Vec<u8>)>),
    /// It ended: its exit status, 128 + N for signal N.
    Exited(Vec<(usize, Vec<u8>)>, Option<i32>),
}

impl Background {
    /// Starts `cmd` as process `id`.
    pub(super) fn start(id: String, cmd: &str) -> io::Result<Background> {
        let program = shell::program()?;
        let mut command = Command::new(program);
        command
            .arg("-c")
            .arg(cmd)
            .env_clear()
            .envs(shell::SHELL_ENV)
            .current_dir(WORKSPACE)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                shell::default_signals();
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        let (Some(out), Some(err)) = (child.stdout.take(), child.stderr.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(io::Error::other("the process has no pipes"));
        };
        let pipes = [
            File::from(std::os::fd::OwnedFd::from(out)),
            File::from(std::os::fd::OwnedFd::from(err)),
        ];
        for pipe in &pipes {
            set_nonblocking(pipe.as_raw_fd())?;
        }
        Ok(Background {
            id,
            child,
            pipes: pipes.map(Some),
        })
    }

    /// Its pid (the group's): spared when a command is killed, and by the
    /// reaper.
    pub(super) fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    /// The pipes to poll.
    pub(super) fn fds(&self) -> impl Iterator<Item = BorrowedFd<'_>> {
        self.pipes.iter().flatten().map(|p| p.as_fd())
    }

    /// Sends `signal` to its whole group.
    pub(super) fn signal(&self, signal: i32) {
        // SAFETY: signalling the process group this process leads.
        unsafe { libc::kill(-self.pid(), signal) };
    }

    /// Reads what it wrote and sees whether it ended.
    pub(super) fn pump(&mut self) -> Pumped {
        let output = self.read();
        match self.child.try_wait() {
            Ok(None) => Pumped::Output(output),
            ended => {
                // Its group goes with it; what they wrote last still counts.
                self.signal(libc::SIGKILL);
                let mut output = output;
                output.extend(self.read());
                let code = match ended {
                    Ok(Some(status)) => exit_code(status),
                    _ => None,
                };
                Pumped::Exited(output, code)
            }
        }
    }

    fn read(&mut self) -> Vec<(usize, Vec<u8>)> {
        let mut output = Vec::new();
        let mut buf = [0u8; 64 * 1024];
        let mut total = 0;
        for (stream, slot) in self.pipes.iter_mut().enumerate() {
            while let Some(pipe) = slot.as_mut() {
                if total >= READ_PER_ROUND {
                    break;
                }
                match pipe.read(&mut buf) {
                    Ok(0) => *slot = None,
                    Ok(n) => {
                        total += n;
                        output.push((stream, buf[..n].to_vec()));
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(_) => *slot = None,
                }
            }
        }
        output
    }
}

impl Drop for Background {
    fn drop(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn exit_code(status: std::process::ExitStatus) -> Option<i32> {
    use std::os::unix::process::ExitStatusExt;
    status.code().or_else(|| status.signal().map(|s| 128 + s))
}

/// The `PROC_OUT` payload: `[stream u8][id length u8][id][bytes]`.
pub(crate) fn output_payload(id: &str, stream: usize, bytes: &[u8]) -> Vec<u8> {
    let id = &id.as_bytes()[..id.len().min(255)];
    let mut payload = Vec::with_capacity(2 + id.len() + bytes.len());
    payload.push(stream as u8);
    payload.push(id.len() as u8);
    payload.extend_from_slice(id);
    payload.extend_from_slice(bytes);
    payload
}

/// Reads a `PROC_OUT` payload: the process id, the stream (0 stdout, 1
/// stderr) and the bytes.
pub(crate) fn parse_output(payload: &[u8]) -> Option<(String, usize, &[u8])> {
    let (&stream, rest) = payload.split_first()?;
    let (&len, rest) = rest.split_first()?;
    let len = usize::from(len);
    if rest.len() < len || stream > 1 {
        return None;
    }
    let id = std::str::from_utf8(&rest[..len]).ok()?.to_string();
    Some((id, usize::from(stream), &rest[len..]))
}

/// Sends a process's output to the server in frames of at most 64 KiB.
pub(super) fn send_output(
    out: &mut impl io::Write,
    id: &str,
    output: &[(usize, Vec<u8>)],
) -> io::Result<()> {
    for (stream, bytes) in output {
        for chunk in bytes.chunks(64 * 1024) {
            wire::write_frame(out, wire::PROC_OUT, &output_payload(id, *stream, chunk))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn output_payloads_round_trip() {
        let payload = output_payload("p12", 1, b"a\0b");
        assert_eq!(
            parse_output(&payload),
            Some(("p12".into(), 1, &b"a\0b"[..]))
        );
        assert_eq!(parse_output(&[0, 5, b'p']), None);
        assert_eq!(parse_output(&[]), None);
    }
}
