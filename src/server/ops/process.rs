//! `process_start` (`POST /api/rooms/{room}/processes` `{cmd, name?,
//! userId?}`) and `process_kill` (`DELETE …/processes/{id}`): a background
//! process of the room's sandbox starts, or is stopped.

use super::{Answer, Caller, Fields, Operation};
use crate::server::room::RoomActor;

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

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.start_process(self, caller, answer);
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

    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        room.kill_process(self.process_id, answer);
    }
}
