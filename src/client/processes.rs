//! The room's background processes and listening ports from a client's
//! side (docs/protocol.md "Background processes and ports"): what a start
//! sends, what `duet ps --json` prints, how a process is found by id or
//! name, and how one reads in a line. The answers are `protocol::process`'s.

use crate::protocol::{PortState, Process, ProcessStatus};
use serde::{Deserialize, Serialize};

/// `POST …/processes` and rpc `process_start`: what to start.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StartProcess {
    pub cmd: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// What `duet ps --json` prints: the room's processes and ports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Listing {
    pub processes: Vec<Process>,
    pub ports: Vec<PortState>,
}

/// The process a person means by `wanted`: its id, else its name when
/// exactly one listed process has it (a running one beats ended ones of
/// the same name). `Err` says why none is meant.
pub fn find<'a>(processes: &'a [Process], wanted: &str) -> Result<&'a Process, String> {
    if let Some(process) = processes.iter().find(|p| p.id == wanted) {
        return Ok(process);
    }
    let named: Vec<&Process> = processes.iter().filter(|p| p.name == wanted).collect();
    let running: Vec<&Process> = named
        .iter()
        .copied()
        .filter(|p| p.status == ProcessStatus::Running)
        .collect();
    match (named.as_slice(), running.as_slice()) {
        ([], _) => Err(format!(
            "no process {wanted:?} in this room (`duet ps` lists them)"
        )),
        ([one], _) | (_, [one]) => Ok(one),
        (_, _) => {
            let ids: Vec<&str> = named.iter().map(|p| p.id.as_str()).collect();
            Err(format!(
                "{} processes are named {wanted:?} ({}): give the id",
                named.len(),
                ids.join(", ")
            ))
        }
    }
}

/// `running`, `exited 1`, `killed 143`: the status with its exit code.
pub fn status_word(process: &Process) -> String {
    let word = match process.status {
        ProcessStatus::Running => return "running".into(),
        ProcessStatus::Exited => "exited",
        ProcessStatus::Killed => "killed",
    };
    match process.exit_code {
        Some(code) => format!("{word} {code}"),
        None => word.to_string(),
    }
}

/// How long it ran (ended) or has run (now `now_ms`): `4s`, `3m12s`, `2h05m`.
pub fn ran_for(process: &Process, now_ms: i64) -> String {
    let end = process
        .ended_at
        .map_or(now_ms, |t| i64::try_from(t).unwrap_or(i64::MAX));
    let start = i64::try_from(process.started_at).unwrap_or(i64::MAX);
    duration((end - start).max(0) / 1000)
}

/// Seconds as a person reads them: `4s`, `3m12s`, `2h05m`, `3d04h`.
pub fn duration(secs: i64) -> String {
    match secs {
        s if s < 60 => format!("{s}s"),
        s if s < 3600 => format!("{}m{:02}s", s / 60, s % 60),
        s if s < 86_400 => format!("{}h{:02}m", s / 3600, s % 3600 / 60),
        s => format!("{}d{:02}h", s / 86_400, s % 86_400 / 3600),
    }
}

/// The URL to open a port's preview at: the backend's own `url` when it
/// has one, else the server's base and the port's `path`.
pub fn port_url(base: &str, port: &PortState) -> String {
    match &port.url {
        Some(url) => url.clone(),
        None => format!("{}{}", base.trim_end_matches('/'), port.path),
    }
}

/// Processes that run.
pub fn running(processes: &[Process]) -> usize {
    processes
        .iter()
        .filter(|p| p.status == ProcessStatus::Running)
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn process(id: &str, name: &str, status: ProcessStatus) -> Process {
        Process {
            id: id.into(),
            name: name.into(),
            cmd: format!("{name} --serve"),
            by: "ada".into(),
            status,
            exit_code: (status != ProcessStatus::Running).then_some(0),
            started_at: 1_000,
            ended_at: (status != ProcessStatus::Running).then_some(5_000),
        }
    }

    #[test]
    fn a_process_is_found_by_id_or_by_a_name_only_it_has() {
        let list = vec![
            process("p1", "web", ProcessStatus::Exited),
            process("p2", "web", ProcessStatus::Running),
            process("p3", "db", ProcessStatus::Running),
            process("p4", "job", ProcessStatus::Exited),
            process("p5", "job", ProcessStatus::Exited),
        ];
        assert_eq!(find(&list, "p1").unwrap().id, "p1");
        assert_eq!(find(&list, "db").unwrap().id, "p3");
        // The running one of two named alike.
        assert_eq!(find(&list, "web").unwrap().id, "p2");
        assert_eq!(
            find(&list, "job").unwrap_err(),
            "2 processes are named \"job\" (p4, p5): give the id"
        );
        assert!(find(&list, "p9").unwrap_err().contains("no process \"p9\""));
    }

    #[test]
    fn statuses_durations_and_urls_read_as_words() {
        let mut p = process("p1", "web", ProcessStatus::Killed);
        p.exit_code = Some(143);
        assert_eq!(status_word(&p), "killed 143");
        assert_eq!(ran_for(&p, 0), "4s");
        let live = process("p2", "web", ProcessStatus::Running);
        assert_eq!(status_word(&live), "running");
        assert_eq!(ran_for(&live, 1_000 + 192_000), "3m12s");
        assert_eq!(duration(2 * 3600 + 5 * 60), "2h05m");
        assert_eq!(duration(3 * 86_400 + 4 * 3600), "3d04h");
        let port = PortState::new("r1", 8000);
        assert_eq!(
            port_url("http://127.0.0.1:8787/", &port),
            "http://127.0.0.1:8787/api/rooms/r1/ports/8000/"
        );
        let public = PortState {
            url: Some("https://8000-r1.example.dev/".into()),
            ..port
        };
        assert_eq!(
            port_url("http://x", &public),
            "https://8000-r1.example.dev/"
        );
    }
}
