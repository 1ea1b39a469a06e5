//! `message` (`POST /api/rooms/{room}/message` `{text, userId?,
//! clientId?, to?}`): stores the user message; one for the agent queues
//! its turn and answers `MessageResponse` when the turn ends, one for the
//! room answers at once. A repeated `clientId` stores nothing and answers
//! as the first did.

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::{Addressee, MAX_TEXT_CHARS};
use crate::server::room::RoomActor;

/// A chat line for the room's agent, or for the people in it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Message {
    pub(crate) text: String,
    pub(crate) client_id: Option<String>,
    pub(crate) to: Addressee,
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
        let to = match f.get("to") {
            None => Addressee::Agent,
            Some(value) => match serde_json::from_value(value.clone()) {
                Ok(to) => to,
                Err(_) => {
                    f.problem("to", r#"must be "agent" or "room""#);
                    Addressee::Agent
                }
            },
        };
        Some(Message {
            text: text?,
            client_id,
            to,
        })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.message(self, caller, answer).await;
    }
}
