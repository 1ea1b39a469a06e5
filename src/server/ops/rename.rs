//! `rename` (rpc only, `[{name}]`): the socket goes by a new name from now
//! on (its later messages, commands, records and presence); answers
//! `{name}` and stores a `rename` record.

use super::{Answer, Caller, Fields, Operation};
use crate::server::room::RoomActor;

/// A socket's new name.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rename {
    pub(crate) name: String,
}

impl Operation for Rename {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        if f.get("name").is_none() {
            f.problem("name", "is required");
        }
        let name = f.name("name")?;
        Some(Rename { name })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.rename(self.name, caller, answer).await;
    }
}
