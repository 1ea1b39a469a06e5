//! What the server and a sandbox's supervisor say to each other over the
//! helper's stdin and stdout.
//!
//! Server → supervisor: one JSON object per line (`Setup` first, then
//! `Request`s). Supervisor → server: binary frames `[kind u8][len u32 LE]
//! [payload]`, so command output needs no escaping.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io::{self, Write};
use std::path::PathBuf;

/// Everything the helper needs to build the sandbox (the first line).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Setup {
    pub room: String,
    pub workspace: PathBuf,
    /// Host uid (and gid) to run as; only honoured when the helper is root.
    pub uid: Option<u32>,
    /// Host gid to run as, when not the uid's number (a host folder's).
    #[serde(default)]
    pub gid: Option<u32>,
    /// Set when `workspace` is a host folder: the room's own place,
    /// beside which its container root is made (never beside the folder,
    /// whose owner and mode stay as they are).
    #[serde(default)]
    pub home: Option<PathBuf>,
    pub processes: u64,
    pub cpu_seconds: u64,
    pub file_size: u64,
    pub open_files: u64,
    pub memory_bytes: u64,
    /// Size of the sandbox's `/tmp`, in bytes.
    pub tmp_bytes: u64,
    /// What the network reaches.
    #[serde(default)]
    pub network: super::Network,
    /// Cgroup folders to join before dropping privileges (root only).
    #[serde(default)]
    pub cgroups: Vec<PathBuf>,
}

/// A request to the supervisor.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "camelCase")]
pub enum Request {
    /// Run a command in the persistent shell.
    #[serde(rename_all = "camelCase")]
    Run {
        cmd: String,
        cwd: Option<String>,
        env: BTreeMap<String, String>,
        timeout_ms: u64,
        output_cap: usize,
    },
    /// Stop the running command: SIGINT then SIGKILL 2 s later, or SIGKILL
    /// at once when `hard`.
    Interrupt { hard: bool },
    /// Open the shared terminal (when none runs).
    TermOpen { cols: u16, rows: u16 },
    /// Bytes for the terminal, base64.
    TermInput { data: String },
    /// The terminal's new size.
    TermResize { cols: u16, rows: u16 },
    /// End the terminal.
    TermClose,
    /// Start background process `id`: `bash -c cmd` in `/workspace`.
    ProcStart { id: String, cmd: String },
    /// Send `signal` to background process `id`'s group.
    ProcSignal { id: String, signal: i32 },
}

/// How a background process ended (the `PROC_EXIT` payload).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcExit {
    pub id: String,
    /// Its exit status (128 + N for signal N).
    pub exit_code: Option<i32>,
    /// Set when it could not start.
    #[serde(default)]
    pub error: Option<String>,
}

/// How the terminal ended (the `TERM_EXIT` payload).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TermExit {
    pub exit_code: Option<i32>,
    /// Set when it could not start.
    #[serde(default)]
    pub error: Option<String>,
}

/// How a command ended, as the supervisor saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Done {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub interrupted: bool,
    pub truncated: bool,
    pub error: Option<String>,
    /// Where the next command runs (absent when the command never ran).
    #[serde(default)]
    pub cwd: Option<String>,
    /// Set when the shell was replaced after the command.
    #[serde(default)]
    pub restart: Option<crate::sandbox::ShellRestart>,
}

/// Frame kinds from the supervisor.
pub const READY: u8 = 1;
pub const STDOUT: u8 = 2;
pub const STDERR: u8 = 3;
pub const DONE: u8 = 4;
/// The terminal's output bytes.
pub const TERM_DATA: u8 = 5;
/// The terminal ended (JSON `TermExit`).
pub const TERM_EXIT: u8 = 6;

/// A background process's output (`background::output_payload`).
pub const PROC_OUT: u8 = 7;
/// A background process ended (JSON `ProcExit`).
pub const PROC_EXIT: u8 = 8;
/// The ports listening in the sandbox changed (JSON array of numbers).
pub const PORTS: u8 = 9;
/// The terminal took a new size here, among its output (`term_size`).
pub const TERM_RESIZED: u8 = 10;

/// The `TERM_RESIZED` payload: columns and rows, big-endian.
pub fn term_size(size: crate::protocol::TermSize) -> [u8; 4] {
    let [c0, c1] = size.cols.to_be_bytes();
    let [r0, r1] = size.rows.to_be_bytes();
    [c0, c1, r0, r1]
}

/// A `TERM_RESIZED` payload read back (within a terminal's bounds: it
/// comes from inside the sandbox); `None` when it is not one.
pub fn parse_term_size(payload: &[u8]) -> Option<crate::protocol::TermSize> {
    let &[c0, c1, r0, r1] = payload else {
        return None;
    };
    Some(crate::protocol::TermSize::clamped(
        u16::from_be_bytes([c0, c1]).into(),
        u16::from_be_bytes([r0, r1]).into(),
    ))
}

/// Largest frame payload either side accepts.
pub const MAX_FRAME: usize = 4 * 1024 * 1024;

/// Writes one frame.
pub fn write_frame(out: &mut impl Write, kind: u8, payload: &[u8]) -> io::Result<()> {
    let len = u32::try_from(payload.len())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "frame too large"))?;
    let mut header = [0u8; 5];
    header[0] = kind;
    header[1..].copy_from_slice(&len.to_le_bytes());
    out.write_all(&header)?;
    out.write_all(payload)?;
    out.flush()
}

/// Reads one frame; `None` at a clean end of stream.
pub async fn read_frame(
    input: &mut (impl tokio::io::AsyncRead + Unpin),
) -> io::Result<Option<(u8, Vec<u8>)>> {
    use tokio::io::AsyncReadExt;
    let mut header = [0u8; 5];
    match input.read_exact(&mut header).await {
        Ok(_) => {}
        Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e),
    }
    let len = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if len > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "frame too large",
        ));
    }
    let mut payload = vec![0u8; len];
    input.read_exact(&mut payload).await?;
    Ok(Some((header[0], payload)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_round_trip() {
        let mut buf = Vec::new();
        write_frame(&mut buf, STDOUT, b"hello\0\xff").unwrap();
        write_frame(&mut buf, DONE, b"{}").unwrap();
        let mut r = &buf[..];
        assert_eq!(
            read_frame(&mut r).await.unwrap(),
            Some((STDOUT, b"hello\0\xff".to_vec()))
        );
        assert_eq!(
            read_frame(&mut r).await.unwrap(),
            Some((DONE, b"{}".to_vec()))
        );
        assert_eq!(read_frame(&mut r).await.unwrap(), None);
    }

    #[test]
    fn a_term_size_round_trips_and_a_bad_one_is_bounded_or_refused() {
        use crate::protocol::TermSize;
        let size = TermSize {
            cols: 120,
            rows: 40,
        };
        assert_eq!(parse_term_size(&term_size(size)), Some(size));
        let huge = [0xff, 0xff, 0xff, 0xff];
        let bounded = TermSize::clamped(i64::MAX, i64::MAX);
        assert_eq!(parse_term_size(&huge), Some(bounded));
        assert_eq!(parse_term_size(b"abc"), None);
    }
}
