//! `process_start` (`POST /api/rooms/{room}/processes` `{cmd, name?,
//! userId?}`) and `process_kill` (`DELETE …/processes/{id}`): a background
//! process of the room's sandbox starts, or is stopped.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{KillResponse, Process, ProcessStatus, default_process_name, now_ms};
use crate::sandbox::ProcSignal;
use crate::server::errors::ApiError;
use crate::server::room::{
    Command, KILL_GRACE, ProcCommand, ProcessEntry, RoomActor, unknown_process,
};

/// A background process to start.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessStart {
    pub(crate) cmd: String,
    pub(crate) name: Option<String>,
}

impl Operation for ProcessStart {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let cmd = f.required_text("cmd");
        if cmd.as_ref().is_some_and(|c| c.contains('\0')) {
            f.problem("cmd", "must not contain NUL characters");
        }
        let name = f.name("name");
        Some(ProcessStart { cmd: cmd?, name })
    }

    /// Reserves an id and asks the sandbox in a task of its own (it may
    /// have to start); the answer comes with `Started`.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let cap = room.shared.limits.max_processes;
        if room.processes.running() >= cap {
            let why = format!("at most {cap} processes run at once in a room");
            let _ = answer.send(Err(ApiError::conflict(
                "too many processes",
                "processes",
                why,
            )));
            return;
        }
        room.processes.next += 1;
        let id = format!("p{}", room.processes.next);
        let process = Process {
            id: id.clone(),
            name: self.name.unwrap_or_else(|| default_process_name(&self.cmd)),
            cmd: self.cmd.clone(),
            by: caller.name_or_anonymous(),
            status: ProcessStatus::Running,
            exit_code: None,
            started_at: now_ms() as u64,
            ended_at: None,
        };
        room.processes.entries.push(ProcessEntry {
            process,
            started: false,
            logs: Default::default(),
            seq: 0,
            killers: Vec::new(),
        });
        let (sandbox, inbox) = (room.sandbox.clone(), room.inbox.clone());
        tokio::spawn(async move {
            let result = sandbox.process_start(id.clone(), self.cmd).await;
            let started = ProcCommand::Started { id, result, answer };
            let _ = inbox.send(Command::Process(started)).await;
        });
    }
}

/// A background process to stop.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProcessKill {
    pub(crate) process_id: String,
}

impl Operation for ProcessKill {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let process_id = f.required_text("processId");
        Some(ProcessKill {
            process_id: process_id?,
        })
    }

    /// SIGTERM, SIGKILL 2 s later; answered at its end.
    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        let id = self.process_id;
        let Some(entry) = room.processes.get_mut(&id) else {
            let _ = answer.send(Err(unknown_process(&id)));
            return;
        };
        if entry.process.status != ProcessStatus::Running {
            let _ = answer.send(Ok(Reply::ok(KillResponse { killed: false })));
            return;
        }
        entry.killers.push(answer);
        if entry.killers.len() == 1 && entry.started {
            room.sandbox.process_signal(id.clone(), ProcSignal::Term);
            let inbox = room.inbox.clone();
            tokio::spawn(async move {
                tokio::time::sleep(KILL_GRACE).await;
                let _ = inbox
                    .send(Command::Process(ProcCommand::KillDeadline { id }))
                    .await;
            });
        }
    }
}
