//! `interrupt` (`POST /api/rooms/{room}/sandbox/interrupt` `{execId?}`):
//! SIGINT to the running command, SIGKILL 2 s later; answers
//! `InterruptResponse`, after an `interrupt` record when it stopped one.

use super::{Answer, Caller, Fields, Operation};
use crate::server::room::RoomActor;

/// Stop a running command (the given one, else the current).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Interrupt {
    pub(crate) exec_id: Option<String>,
}

impl Operation for Interrupt {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(Interrupt {
            exec_id: f.string("execId"),
        })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.interrupt(self.exec_id, caller.name_or_anonymous(), answer);
    }
}
