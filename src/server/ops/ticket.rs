//! `ticket` (`POST …/ticket`, any role): a socket ticket for the caller
//! (tickets.rs), answered `{ticket, expiresAt}`; it opens this room's
//! socket only, for `--ticket-secs`, with the caller's role.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::server::room::RoomActor;

/// A ticket for the caller's socket.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Ticket;

impl Operation for Ticket {
    fn parse(_f: &mut Fields<'_>) -> Option<Self> {
        Some(Ticket)
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let (ticket, expires_at) =
            crate::server::tickets::issue(&room.shared, &room.id, &caller.access);
        let body = serde_json::json!({ "ticket": ticket, "expiresAt": expires_at });
        let _ = answer.send(Ok(Reply::ok(body)));
    }
}
