//! `cleanup` (`POST /api/rooms/{room}/cleanup` `{userId?}`): clears the
//! room's history and destroys its sandbox; answers `CleanupResponse`
//! (207 with `errors` when a part failed).

use super::{Answer, Caller, Fields, Operation};
use crate::server::room::RoomActor;

/// Empty the room.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cleanup;

impl Operation for Cleanup {
    fn parse(_: &mut Fields<'_>) -> Option<Self> {
        Some(Cleanup)
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.cleanup(caller.name_or_anonymous(), answer).await;
    }
}
