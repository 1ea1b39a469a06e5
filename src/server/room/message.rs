//! The room's messages as an answer carries them, and how a message's
//! answer is kept for its repeats (the `message` operation: ops/message.rs).

use super::RoomActor;
use crate::protocol::{DuetMessage, MessageResponse};
use crate::server::ops::Reply;

impl RoomActor {
    /// The messages of the room state, for an answer.
    pub(crate) fn messages(&self) -> Vec<DuetMessage> {
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
