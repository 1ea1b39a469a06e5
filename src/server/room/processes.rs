//! The room's background processes (docs/protocol.md "Background
//! processes and ports"): the actor keeps their list and logs, starts them
//! through the sandbox in a spawned task, and hears their output, coalesced
//! by a pump task per process, and their end through its inbox. Output
//! frames carry a sequence number, so a socket that starts following gets
//! the log up to one number and exactly the frames after it.

use super::state::Change;
use super::{Answer, OutFrame, Reply, RoomActor, frame_text};
use crate::protocol::{
    ENDED_PROCESSES_KEPT, Event, KillResponse, PROCESS_LOG_BYTES, PortState, PortsResponse,
    Process, ProcessFrame, ProcessLogs, ProcessResponse, ProcessStatus, ProcessesResponse,
    ServerFrame, now_ms,
};
use crate::sandbox::{ProcEvents, ProcSignal, SandboxError};
use crate::server::errors::ApiError;
use crate::server::store::StoredProcess;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::oneshot;

/// Time a process gets after SIGTERM before SIGKILL.
pub(in crate::server) const KILL_GRACE: Duration = Duration::from_secs(2);

/// What the room's processes tell its actor, and what is asked of them.
pub(crate) enum ProcCommand {
    /// The sandbox started process `id` (or could not).
    Started {
        id: String,
        result: Result<ProcEvents, SandboxError>,
        answer: Answer,
    },
    /// Output of process `id`, coalesced.
    Output {
        id: String,
        stderr: bool,
        text: String,
    },
    /// Process `id` ended.
    Exited { id: String, exit_code: Option<i32> },
    /// Process `id` had its time after SIGTERM.
    KillDeadline { id: String },
    /// A socket starts following process `id`.
    Follow {
        id: String,
        reply: oneshot::Sender<Result<Followed, ApiError>>,
    },
    /// A read of the list, one process, its logs, or the ports.
    Read { query: Query, reply: Answer },
}

/// What `ProcCommand::Read` asks for.
pub(crate) enum Query {
    List,
    One(String),
    Logs(String),
    Ports,
    /// The checkpoints (their route reads the room as these do).
    Checkpoints,
}

/// The answer to a follow: the log so far and the number of the last
/// output frame it holds.
pub(crate) struct Followed {
    pub(crate) logs: ProcessLogs,
    pub(crate) seq: u64,
}

/// The room's processes: the running ones and the last ended.
#[derive(Default)]
pub(in crate::server) struct Processes {
    pub(in crate::server) entries: Vec<Entry>,
    /// What the state lists (the started ones), kept for `StateRef`.
    pub(super) listed: Vec<Process>,
    pub(in crate::server) next: u64,
}

pub(in crate::server) struct Entry {
    pub(in crate::server) process: Process,
    /// The sandbox said it runs (until then it is not listed).
    pub(in crate::server) started: bool,
    pub(in crate::server) logs: [LogTail; 2],
    /// Output frames sent so far.
    pub(in crate::server) seq: u64,
    /// Kill requests waiting for its end.
    pub(in crate::server) killers: Vec<Answer>,
}

/// The last `PROCESS_LOG_BYTES` of a stream.
#[derive(Default)]
pub(in crate::server) struct LogTail(String);

impl LogTail {
    fn push(&mut self, text: &str) {
        self.0.push_str(text);
        if self.0.len() > PROCESS_LOG_BYTES {
            let mut cut = self.0.len() - PROCESS_LOG_BYTES;
            while !self.0.is_char_boundary(cut) {
                cut += 1;
            }
            self.0.drain(..cut);
        }
    }
}

impl Processes {
    /// The list a room loads with (what the store kept), and the last
    /// process number used.
    pub(super) fn restore(stored: Vec<StoredProcess>, last: u64) -> Processes {
        let entries = stored
            .into_iter()
            .map(|s| Entry {
                process: s.process,
                started: true,
                logs: [LogTail(s.stdout), LogTail(s.stderr)],
                seq: 0,
                killers: Vec::new(),
            })
            .collect();
        let mut processes = Processes {
            entries,
            listed: Vec::new(),
            next: last,
        };
        processes.relist();
        processes
    }

    fn get(&self, id: &str) -> Result<&Entry, ApiError> {
        self.entries
            .iter()
            .find(|e| e.process.id == id)
            .ok_or_else(|| unknown(id))
    }

    pub(in crate::server) fn get_mut(&mut self, id: &str) -> Option<&mut Entry> {
        self.entries.iter_mut().find(|e| e.process.id == id)
    }

    pub(in crate::server) fn running(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| e.process.status == ProcessStatus::Running)
            .count()
    }

    /// Keeps the last ended ones and lists the started ones; the ids of
    /// those it dropped.
    fn relist(&mut self) -> Vec<String> {
        let ended = self
            .entries
            .iter()
            .filter(|e| e.process.status != ProcessStatus::Running)
            .count();
        let mut drop = ended.saturating_sub(ENDED_PROCESSES_KEPT);
        let mut dropped = Vec::new();
        self.entries.retain(|e| {
            let old = drop > 0 && e.process.status != ProcessStatus::Running;
            if old {
                drop -= 1;
                dropped.push(e.process.id.clone());
            }
            !old
        });
        self.listed = self
            .entries
            .iter()
            .filter(|e| e.started)
            .map(|e| e.process.clone())
            .collect();
        dropped
    }
}

impl Entry {
    fn stored(&self) -> StoredProcess {
        StoredProcess {
            process: self.process.clone(),
            stdout: self.logs[0].0.clone(),
            stderr: self.logs[1].0.clone(),
        }
    }
}

/// The 404 of a process id the room does not have.
pub(in crate::server) fn unknown(id: &str) -> ApiError {
    ApiError::not_found(
        "no such process",
        "processId",
        format!("no process {id:?} in this room"),
    )
}

impl RoomActor {
    /// Handles what processes report and what is asked of them.
    pub(super) fn on_process(&mut self, command: ProcCommand) {
        match command {
            ProcCommand::Started { id, result, answer } => self.process_started(id, result, answer),
            ProcCommand::Output { id, stderr, text } => self.process_output(&id, stderr, &text),
            ProcCommand::Exited { id, exit_code } => self.process_exited(&id, exit_code),
            ProcCommand::KillDeadline { id } => {
                if self
                    .processes
                    .get(&id)
                    .is_ok_and(|e| e.process.status == ProcessStatus::Running)
                {
                    self.sandbox.process_signal(id, ProcSignal::Kill);
                }
            }
            ProcCommand::Follow { id, reply } => {
                let followed = self.processes.get(&id).map(|e| Followed {
                    logs: ProcessLogs {
                        stdout: e.logs[0].0.clone(),
                        stderr: e.logs[1].0.clone(),
                    },
                    seq: e.seq,
                });
                let _ = reply.send(followed);
            }
            ProcCommand::Read { query, reply } => {
                let _ = reply.send(self.read_processes(query));
            }
        }
    }

    fn read_processes(&self, query: Query) -> Result<Reply, ApiError> {
        Ok(match query {
            Query::List => Reply::ok(ProcessesResponse {
                processes: self.processes.listed.clone(),
            }),
            Query::One(id) => Reply::ok(ProcessResponse {
                process: self.listed_one(&id)?.clone(),
            }),
            Query::Logs(id) => {
                self.listed_one(&id)?;
                let entry = self.processes.get(&id)?;
                Reply::ok(ProcessLogs {
                    stdout: entry.logs[0].0.clone(),
                    stderr: entry.logs[1].0.clone(),
                })
            }
            Query::Ports => Reply::ok(PortsResponse {
                ports: self.ports.clone(),
            }),
            Query::Checkpoints => Reply::ok(crate::protocol::CheckpointsResponse {
                checkpoints: self.checkpoints.list.clone(),
            }),
        })
    }

    /// A listed process (one still starting is not there yet).
    fn listed_one(&self, id: &str) -> Result<&Process, ApiError> {
        self.processes
            .listed
            .iter()
            .find(|p| p.id == id)
            .ok_or_else(|| unknown(id))
    }

    fn process_started(
        &mut self,
        id: String,
        result: Result<ProcEvents, SandboxError>,
        answer: Answer,
    ) {
        let Some(entry) = self.processes.get_mut(&id) else {
            // The room was cleaned up meanwhile: nothing of it may run on.
            if result.is_ok() {
                self.sandbox.process_signal(id, ProcSignal::Kill);
            }
            let _ = answer.send(Err(ApiError::internal(
                "the room was cleaned up before the process started",
            )));
            return;
        };
        let events = match result {
            Ok(events) => events,
            Err(e) => {
                self.processes.entries.retain(|e| e.process.id != id);
                let why = format!("the process could not start: {e}");
                let _ = answer.send(Err(ApiError::internal(why)));
                return;
            }
        };
        entry.started = true;
        let process = entry.process.clone();
        let stored = entry.stored();
        self.shared.store.save_process(self.id.clone(), stored);
        if !entry.killers.is_empty() {
            self.sandbox.process_signal(id.clone(), ProcSignal::Term);
        }
        tokio::spawn(super::process_pump::pump(id, events, self.inbox.clone()));
        self.broadcast(&ServerFrame::Process(ProcessFrame::Start {
            process: process.clone(),
        }));
        self.publish_processes();
        // Answered once its record is stored (after this command).
        let inbox = self.inbox.clone();
        let event = Event::Process {
            by: process.by.clone(),
            process_id: process.id.clone(),
            name: process.name.clone(),
            cmd: process.cmd.clone(),
        };
        tokio::spawn(async move {
            super::record_in(&inbox, event).await;
            let _ = answer.send(Ok(Reply::ok(ProcessResponse { process })));
        });
    }

    fn process_output(&mut self, id: &str, stderr: bool, text: &str) {
        let Some(entry) = self.processes.get_mut(id) else {
            return;
        };
        entry.logs[usize::from(stderr)].push(text);
        entry.seq += 1;
        let process_id = id.to_string();
        let frame = if stderr {
            ProcessFrame::Stderr {
                process_id,
                data: text.into(),
            }
        } else {
            ProcessFrame::Stdout {
                process_id,
                data: text.into(),
            }
        };
        let _ = self.frames.send(Arc::new(OutFrame {
            process_output: Some((id.to_string(), entry.seq)),
            ..OutFrame::plain(frame_text(&ServerFrame::Process(frame)))
        }));
    }

    fn process_exited(&mut self, id: &str, exit_code: Option<i32>) {
        let Some(entry) = self.processes.get_mut(id) else {
            return;
        };
        let status = if entry.killers.is_empty() {
            ProcessStatus::Exited
        } else {
            ProcessStatus::Killed
        };
        let killers = self.end_process(id, status, exit_code);
        self.publish_processes();
        answer_killers(killers);
    }

    /// Marks process `id` ended and tells every socket; answers who waits
    /// for its end (once the state says so too: after the frames).
    #[must_use]
    fn end_process(
        &mut self,
        id: &str,
        status: ProcessStatus,
        exit_code: Option<i32>,
    ) -> Vec<Answer> {
        let Some(entry) = self.processes.get_mut(id) else {
            return Vec::new();
        };
        entry.process.status = status;
        entry.process.exit_code = exit_code;
        entry.process.ended_at = Some(now_ms() as u64);
        let killers = std::mem::take(&mut entry.killers);
        if entry.started {
            let stored = entry.stored();
            self.shared.store.save_process(self.id.clone(), stored);
            let frame = ServerFrame::Process(ProcessFrame::Exit {
                process_id: id.to_string(),
                status,
                exit_code,
            });
            let _ = self.frames.send(Arc::new(OutFrame {
                process_exit: Some(id.to_string()),
                ..OutFrame::plain(frame_text(&frame))
            }));
        }
        killers
    }

    /// A cleanup: every process is killed (its `exit` goes out now) and
    /// the list and ports are emptied.
    pub(in crate::server) fn kill_all_processes(&mut self) {
        self.stop_all_processes();
        self.processes.entries.clear();
        self.processes.listed.clear();
        self.ports.clear();
        self.state_cache = None;
    }

    /// Every running process is killed (its `exit` goes out now, and the
    /// list says `killed`).
    pub(in crate::server) fn stop_all_processes(&mut self) {
        let running: Vec<String> = self
            .processes
            .entries
            .iter()
            .filter(|e| e.process.status == ProcessStatus::Running)
            .map(|e| e.process.id.clone())
            .collect();
        let mut killers = Vec::new();
        for id in running {
            self.sandbox.process_signal(id.clone(), ProcSignal::Kill);
            killers.extend(self.end_process(&id, ProcessStatus::Killed, Some(128 + libc::SIGKILL)));
        }
        answer_killers(killers);
        self.publish_processes();
    }

    /// The server stops: what the running processes printed so far is
    /// kept (the room loads them as ended by the stop).
    pub(super) fn save_running_processes(&self) {
        for entry in &self.processes.entries {
            if entry.started && entry.process.status == ProcessStatus::Running {
                self.shared
                    .store
                    .save_process(self.id.clone(), entry.stored());
            }
        }
    }

    /// The state's `processes` changed.
    fn publish_processes(&mut self) {
        let dropped = self.processes.relist();
        if !dropped.is_empty() {
            self.shared.store.forget_processes(self.id.clone(), dropped);
        }
        let value = serde_json::to_value(&self.processes.listed).unwrap_or_default();
        self.publish(&[Change::Field("processes", value)]);
    }

    /// The sandbox's listening ports are now `ports`.
    pub(super) fn set_ports(&mut self, ports: &[u16]) {
        let previews = self.shared.previews.as_ref();
        let ports: Vec<PortState> = ports
            .iter()
            .map(|p| PortState {
                url: previews.map(|hosts| hosts.url(&self.id, *p)),
                ..PortState::new(&self.id, *p)
            })
            .collect();
        if ports != self.ports {
            self.ports = ports;
            let value = serde_json::to_value(&self.ports).unwrap_or_default();
            self.publish(&[Change::Field("ports", value)]);
        }
    }
}

/// Answers the kill requests of a process that ended.
fn answer_killers(killers: Vec<Answer>) {
    for killer in killers {
        let _ = killer.send(Ok(Reply::ok(KillResponse { killed: true })));
    }
}

#[cfg(test)]
mod tests {
    use super::LogTail;

    #[test]
    fn a_log_keeps_its_last_bytes_whole_characters() {
        let mut log = LogTail::default();
        log.push(&"é".repeat(40 * 1024));
        log.push("end");
        assert!(log.0.len() <= crate::protocol::PROCESS_LOG_BYTES);
        assert!(log.0.ends_with("éend"));
        assert!(log.0.starts_with('é'));
    }
}
