//! `message` (`POST /api/rooms/{room}/message` `{text, userId?,
//! clientId?, to?}`): stores the user message; one for the agent queues
//! its turn and answers `MessageResponse` when the turn ends, one for the
//! room answers at once. A repeated `clientId` stores nothing and answers
//! as the first did.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{Addressee, DuetMessage, MAX_TEXT_CHARS, MessageResponse, Role};
use crate::server::errors::ApiError;
use crate::server::room::{CUT_OFF, PendingTurn, RoomActor, no_reply};
use crate::server::store::ClientMessage;

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

    /// Stores a user message; one for the agent queues its turn. A
    /// `clientId` already used in the room stores nothing: the request
    /// waits for, or gets, the answer of the first.
    async fn apply(self, room: &mut RoomActor, caller: Caller, reply: Answer) {
        let message = self;
        let Some(client_id) = message.client_id.clone() else {
            return post(room, message, caller, reply).await;
        };
        let pending = room
            .current
            .as_mut()
            .map(|c| &mut c.pending)
            .into_iter()
            .chain(room.turns.iter_mut())
            .find(|t| t.client_id.as_deref() == Some(client_id.as_str()));
        if let Some(turn) = pending {
            turn.replies.push(reply);
            return;
        }
        let known = room
            .shared
            .store
            .client_message(room.id.clone(), client_id)
            .await;
        let answer = match known {
            Ok(ClientMessage::Unknown) => {
                return post(room, message, caller, reply).await;
            }
            Ok(ClientMessage::Answered { reply, error }) => Ok(Reply::ok(MessageResponse {
                reply,
                error,
                messages: room.messages(),
            })),
            Ok(ClientMessage::Unanswered) => Ok(no_reply(CUT_OFF, room.messages())),
            Err(e) => Err(ApiError::internal(format!(
                "the message could not be looked up: {e}"
            ))),
        };
        let _ = reply.send(answer);
    }
}

/// Stores a new message: a question queues its turn, a message to the
/// room is answered at once (also while a turn runs).
async fn post(room: &mut RoomActor, message: Message, caller: Caller, reply: Answer) {
    let Message {
        text,
        client_id,
        to,
    } = message;
    let draft = DuetMessage {
        role: Role::User,
        user_id: caller.name.clone(),
        text,
        client_id: client_id.clone(),
        to: Some(to),
        ..Default::default()
    };
    let stored = match room.store(draft).await {
        Ok(stored) => stored,
        Err(e) => {
            let _ = reply.send(Err(e));
            return;
        }
    };
    match to {
        Addressee::Room => {
            let _ = reply.send(Ok(Reply::ok(MessageResponse {
                reply: None,
                error: None,
                messages: room.messages(),
            })));
        }
        Addressee::Agent => {
            room.turns.push_back(PendingTurn {
                by_connection: caller.connection(),
                user: caller.name,
                upto: stored.id,
                client_id,
                replies: vec![reply],
            });
            room.next_turn();
        }
    }
}
