//! `rename` (rpc only, `[{name}]`): the socket goes by a new name from now
//! on (its later messages, commands, records and presence); answers
//! `{name}` and stores a `rename` record.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::Event;
use crate::server::errors::ApiError;
use crate::server::room::{RoomActor, Touched};

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

    /// The caller's socket goes by the new name from now on: presence to
    /// everyone and a `rename` record (when the name changed).
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let name = self.name;
        if let Some(fixed) = caller.access.fixed_name() {
            let e = ApiError::forbidden(
                "name",
                format!("your invite fixes your name: you are {fixed:?} in this room"),
            );
            let _ = answer.send(Err(e));
            return;
        }
        let entry = caller
            .socket
            .and_then(|socket| room.presence.iter_mut().find(|(c, _)| *c == socket.number));
        let Some((conn, user)) = entry else {
            let e = ApiError::field("name", "only a socket of the room can change its name");
            let _ = answer.send(Err(e));
            return;
        };
        let conn = *conn;
        let from = std::mem::replace(&mut user.name, name.clone());
        if from != name {
            room.presence_changed(&[Touched::Changed(conn)]);
            let event = Event::Rename {
                by: from.clone(),
                from,
                to: name.clone(),
            };
            room.record_or_log(event).await;
        }
        let _ = answer.send(Ok(Reply::ok(serde_json::json!({ "name": name }))));
    }
}
