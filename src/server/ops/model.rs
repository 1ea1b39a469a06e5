//! `set_model` (`POST …/model {model}`): an owner chooses the model of the
//! room's agent among the backend's (`--ai-models`); the choice is kept,
//! recorded and used by the turns that start after it.

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{Event, ModelResponse};
use crate::server::errors::ApiError;
use crate::server::room::{Change, RoomActor};

/// Choose the room's model.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SetModel {
    pub(crate) model: String,
}

/// What `details.model` says of a model the backend does not allow.
pub(crate) fn not_allowed(allowed: &[String]) -> String {
    if allowed.is_empty() {
        "cannot be chosen: this backend lists no models (--ai-models)".into()
    } else {
        format!("must be one of {}", allowed.join(", "))
    }
}

impl Operation for SetModel {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(SetModel {
            model: f.required_text("model")?,
        })
    }

    /// The model, kept; a new one is recorded as the caller's.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let allowed = room.shared.agent.config().allowed_models();
        if !allowed.contains(&self.model) {
            let _ = answer.send(Err(ApiError::field("model", not_allowed(&allowed))));
            return;
        }
        let before = room.agent_state().model;
        if room.model.as_deref() != Some(self.model.as_str()) {
            let stored = room
                .shared
                .store
                .set_model(room.id.clone(), self.model.clone())
                .await;
            if let Err(e) = stored {
                let _ = answer.send(Err(ApiError::internal(format!(
                    "the model could not be stored: {e}"
                ))));
                return;
            }
            room.model = Some(self.model.clone());
        }
        if before.as_deref() != Some(self.model.as_str()) {
            let agent = serde_json::to_value(room.agent_state()).unwrap_or_default();
            room.publish(&[Change::Field("agent", agent)]);
            let by = caller.name_or_anonymous();
            let model = self.model.clone();
            room.record_or_log(Event::Model { by, model }).await;
        }
        let _ = answer.send(Ok(Reply::ok(ModelResponse { model: self.model })));
    }
}
