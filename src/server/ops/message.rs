//! `message` (`POST /api/rooms/{room}/message` `{text, userId?}`): stores
//! the user message and queues the agent's turn; answers
//! `MessageResponse` when the turn ends.

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::MAX_TEXT_CHARS;
use crate::server::room::RoomActor;

/// A chat line for the room and its agent.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub(crate) text: String,
}

impl Operation for Message {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let text = f.required_text("text");
        if let Some(t) = &text
            && t.chars().count() > MAX_TEXT_CHARS
        {
            f.problem("text", "must be at most 8000 characters");
        }
        Some(Message { text: text? })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.message(self.text, caller.name, answer).await;
    }
}
