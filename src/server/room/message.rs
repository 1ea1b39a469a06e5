//! A question for the agent: stored, queued for its turn, and made safe to
//! repeat by its `clientId` (a repeat stores nothing and gets the first's
//! answer: waited for, kept in the store, or "cut off" after a crash).

use super::turn::{self, PendingTurn};
use super::{CUT_OFF, RoomActor};
use crate::protocol::{DuetMessage, MessageResponse, Role};
use crate::server::errors::ApiError;
use crate::server::ops::{Answer, Reply};
use crate::server::store::ClientMessage;

impl RoomActor {
    /// Stores a user message and queues its turn. A `client_id` already
    /// used in the room stores nothing: the request waits for, or gets,
    /// the answer of the first.
    pub(crate) async fn message(
        &mut self,
        text: String,
        user: Option<String>,
        client_id: Option<String>,
        reply: Answer,
    ) {
        let Some(client_id) = client_id else {
            return self.ask(text, user, None, reply).await;
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
            .client_message(self.id.clone(), client_id.clone())
            .await;
        let messages = || self.messages.iter().cloned().collect::<Vec<_>>();
        let answer = match known {
            Ok(ClientMessage::Unknown) => {
                return self.ask(text, user, Some(client_id), reply).await;
            }
            Ok(ClientMessage::Answered { reply, error }) => Ok(Reply::ok(MessageResponse {
                reply,
                error,
                messages: messages(),
            })),
            Ok(ClientMessage::Unanswered) => Ok(turn::no_reply(CUT_OFF, messages())),
            Err(e) => Err(ApiError::internal(format!(
                "the message could not be looked up: {e}"
            ))),
        };
        let _ = reply.send(answer);
    }

    /// Stores a new question and queues its turn.
    async fn ask(
        &mut self,
        text: String,
        user: Option<String>,
        client_id: Option<String>,
        reply: Answer,
    ) {
        let draft = DuetMessage {
            role: Role::User,
            user_id: user.clone(),
            text,
            client_id: client_id.clone(),
            ..Default::default()
        };
        match self.store(draft).await {
            Ok(message) => {
                self.turns.push_back(PendingTurn {
                    user,
                    upto: message.id,
                    client_id,
                    replies: vec![reply],
                });
                self.next_turn();
            }
            Err(e) => {
                let _ = reply.send(Err(e));
            }
        }
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
