//! A person's message: stored, then for the agent queued for its turn, or
//! for the room answered at once; made safe to repeat by its `clientId` (a
//! repeat stores nothing and gets the first's answer: waited for, kept in
//! the store, or "cut off" after a crash).

use super::turn::{self, PendingTurn};
use super::{CUT_OFF, RoomActor};
use crate::protocol::{Addressee, DuetMessage, MessageResponse, Role};
use crate::server::auth::Caller;
use crate::server::errors::ApiError;
use crate::server::ops::{Answer, Message, Reply};
use crate::server::store::ClientMessage;

impl RoomActor {
    /// Stores a user message; one for the agent queues its turn. A
    /// `clientId` already used in the room stores nothing: the request
    /// waits for, or gets, the answer of the first.
    pub(crate) async fn message(&mut self, message: Message, caller: Caller, reply: Answer) {
        let Some(client_id) = message.client_id.clone() else {
            return self.post(message, caller, reply).await;
        };
        let pending = self
            .current
            .as_mut()
            .map(|c| &mut c.pending)
            .into_iter()
            .chain(self.turns.iter_mut())
            .find(|t| t.client_id.as_deref() == Some(client_id.as_str()));
        if let Some(turn) = pending {
            turn.replies.push(reply);
            return;
        }
        let known = self
            .shared
            .store
            .client_message(self.id.clone(), client_id)
            .await;
        let answer = match known {
            Ok(ClientMessage::Unknown) => {
                return self.post(message, caller, reply).await;
            }
            Ok(ClientMessage::Answered { reply, error }) => Ok(Reply::ok(MessageResponse {
                reply,
                error,
                messages: self.messages(),
            })),
            Ok(ClientMessage::Unanswered) => Ok(turn::no_reply(CUT_OFF, self.messages())),
            Err(e) => Err(ApiError::internal(format!(
                "the message could not be looked up: {e}"
            ))),
        };
        let _ = reply.send(answer);
    }

    /// Stores a new message: a question queues its turn, a message to the
    /// room is answered at once (also while a turn runs).
    async fn post(&mut self, message: Message, caller: Caller, reply: Answer) {
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
        let stored = match self.store(draft).await {
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
                    messages: self.messages(),
                })));
            }
            Addressee::Agent => {
                self.turns.push_back(PendingTurn {
                    by_connection: caller.connection(),
                    user: caller.name,
                    upto: stored.id,
                    client_id,
                    replies: vec![reply],
                });
                self.next_turn();
            }
        }
    }

    /// The messages of the room state, for an answer.
    pub(super) fn messages(&self) -> Vec<DuetMessage> {
        self.messages.iter().cloned().collect()
    }

    /// Keeps how the message `client_id` was answered, for its repeats
    /// (also after a restart).
    pub(super) async fn keep_client_reply(&self, client_id: &str, reply: &Reply) {
        let Ok(body) = serde_json::from_str::<MessageResponse>(&reply.body) else {
            return;
        };
        let kept = self
            .shared
            .store
            .set_client_reply(
                self.id.clone(),
                client_id.to_string(),
                body.reply,
                body.error,
            )
            .await;
        if let Err(e) = kept {
            tracing::warn!(room = %self.id, "keeping the answer of {client_id:?} failed: {e}");
        }
    }
}
