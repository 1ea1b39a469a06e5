//! `interrupt` (`POST /api/rooms/{room}/sandbox/interrupt` `{execId?}`):
//! SIGINT to the running command, SIGKILL 2 s later; answers
//! `InterruptResponse`.

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::InterruptResponse;
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

    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        let sandbox = room.sandbox();
        // Awaited apart from the actor: the sandbox answers when it signalled.
        tokio::spawn(async move {
            let interrupted = sandbox.interrupt(self.exec_id, false).await;
            let _ = answer.send(Ok(super::Reply::ok(InterruptResponse { interrupted })));
        });
    }
}
