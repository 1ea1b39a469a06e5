//! `cancel` (`POST /api/rooms/{room}/cancel` `{turnId?}`): ends the agent's
//! current turn and kills its running command; answers `CancelResponse`.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::CancelResponse;
use crate::server::room::RoomActor;

/// End the agent's turn (the given one, else the current).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cancel {
    pub(crate) turn_id: Option<String>,
}

impl Operation for Cancel {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(Cancel {
            turn_id: f.string("turnId"),
        })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let cancelled = room.cancel(self.turn_id.as_deref(), caller.name_or_anonymous());
        let _ = answer.send(Ok(Reply::ok(CancelResponse { cancelled })));
    }
}
