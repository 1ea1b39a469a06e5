//! `message` (`POST /api/rooms/{room}/message` `{text, userId?,
//! clientId?}`): stores the user message and queues the agent's turn;
//! answers `MessageResponse` when the turn ends. A repeated `clientId`
//! stores nothing and answers as the first did.

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::MAX_TEXT_CHARS;
use crate::server::room::RoomActor;

/// A chat line for the room and its agent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub(crate) text: String,
    pub(crate) client_id: Option<String>,
}

impl Operation for Message {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let text = f.required_text("text");
        if let Some(t) = &text
            && t.chars().count() > MAX_TEXT_CHARS
        {
            f.problem("text", "must be at most 8000 characters");
        }
        let client_id = f.client_id("clientId");
        Some(Message {
            text: text?,
            client_id,
        })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.message(self.text, caller.name, self.client_id, answer)
            .await;
    }
}
