//! Wire types of the room's background processes and its listening ports
//! (docs/protocol.md "Background processes and ports").

use serde::{Deserialize, Serialize};

/// Processes that may run at once in a room unless the server says
/// otherwise (`--max-processes`).
pub const DEFAULT_MAX_PROCESSES: usize = 8;
/// Bytes of each stream a process's log keeps (its last ones).
pub const PROCESS_LOG_BYTES: usize = 64 * 1024;
/// Ended processes the room keeps listing (with their logs).
pub const ENDED_PROCESSES_KEPT: usize = 20;

/// A background process of the room's sandbox.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Process {
    pub id: String,
    pub name: String,
    pub cmd: String,
    /// Who started it.
    pub by: String,
    pub status: ProcessStatus,
    /// Its exit status once it ended (128 + N when signal N ended it);
    /// `null` while it runs, or when the sandbox went away under it.
    pub exit_code: Option<i32>,
    pub started_at: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ended_at: Option<u64>,
}

/// Where a process is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProcessStatus {
    Running,
    /// It ended by itself.
    Exited,
    /// Someone stopped it (or a cleanup did).
    Killed,
}

/// `duet_process`, by phase.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "phase", rename_all = "lowercase")]
pub enum ProcessFrame {
    /// To every socket: a process started.
    Start { process: Process },
    /// To sockets that follow it: output as it comes (coalesced).
    #[serde(rename_all = "camelCase")]
    Stdout { process_id: String, data: String },
    #[serde(rename_all = "camelCase")]
    Stderr { process_id: String, data: String },
    /// To every socket: it ended.
    #[serde(rename_all = "camelCase")]
    Exit {
        process_id: String,
        status: ProcessStatus,
        exit_code: Option<i32>,
    },
}

/// A port something listens on inside the sandbox (`ports` of the state).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortState {
    pub port: u16,
    /// The preview's path on this backend: `/api/rooms/{room}/ports/{port}/`.
    pub path: String,
    /// A public URL of the preview, where the backend has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl PortState {
    /// The port as the room lists it, with its preview path.
    pub fn new(room: &str, port: u16) -> Self {
        PortState {
            port,
            path: preview_path(room, port),
            url: None,
        }
    }
}

/// The path of a port's HTTP preview (with its final slash).
pub fn preview_path(room: &str, port: u16) -> String {
    format!("/api/rooms/{room}/ports/{port}/")
}

/// The answer of `GET …/processes/{id}/logs` and `process_follow`: the
/// last `PROCESS_LOG_BYTES` of each stream.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProcessLogs {
    pub stdout: String,
    pub stderr: String,
}

/// `{process}`: the answer of `process_start` and `GET …/processes/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessResponse {
    pub process: Process,
}

/// `{processes}`: the answer of `GET …/processes`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProcessesResponse {
    pub processes: Vec<Process>,
}

/// `{ports}`: the answer of `GET …/ports`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortsResponse {
    pub ports: Vec<PortState>,
}

/// `{killed}`: the answer of `process_kill`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KillResponse {
    pub killed: bool,
}

/// The answer of `process_follow`: the log so far (the output frames
/// follow).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FollowResponse {
    pub process_id: String,
    pub stdout: String,
    pub stderr: String,
}

/// A process's name when none was given: its program's name.
pub fn default_process_name(cmd: &str) -> String {
    let first = cmd.split_whitespace().next().unwrap_or("process");
    let base = first.rsplit('/').next().unwrap_or(first);
    let name: String = base
        .chars()
        .filter(|&c| !super::unprintable(c))
        .take(32)
        .collect();
    if name.is_empty() {
        "process".into()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_have_the_wire_shape() {
        let exit = ProcessFrame::Exit {
            process_id: "p1".into(),
            status: ProcessStatus::Killed,
            exit_code: Some(143),
        };
        assert_eq!(
            serde_json::to_value(&exit).unwrap(),
            serde_json::json!({"phase":"exit","processId":"p1","status":"killed","exitCode":143})
        );
        let port = PortState::new("r1", 8000);
        assert_eq!(
            serde_json::to_value(&port).unwrap(),
            serde_json::json!({"port":8000,"path":"/api/rooms/r1/ports/8000/"})
        );
    }

    #[test]
    fn names_default_to_the_program() {
        assert_eq!(
            default_process_name("python3 -m http.server 8000"),
            "python3"
        );
        assert_eq!(default_process_name("/usr/bin/env X=1 node"), "env");
        assert_eq!(default_process_name("   "), "process");
    }
}
