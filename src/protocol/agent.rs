//! Wire types of the room's agent: its settings as the room state shows
//! them, the model a room chose, and what a turn cost (docs/protocol.md
//! "The agent's model" and "Usage").

use serde::{Deserialize, Serialize};

/// What a turn cost, kept on its agent message: tokens summed over the
/// turn's model calls (`rounds`), as the service reported them, or
/// estimated (about 4 bytes a token) and marked so when it reported none.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub rounds: u32,
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub estimated: bool,
}

impl Usage {
    /// Adds `other`'s counts (estimated if either is).
    pub fn add(&mut self, other: &Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.rounds += other.rounds;
        self.estimated |= other.estimated;
    }
}

/// `agent` of the room state: the model its turns use and the ones it may
/// choose, and the bounds of a turn (a field a backend leaves out reads as
/// its default).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AgentState {
    /// The room's model (`None`: found by asking the service at each turn).
    pub model: Option<String>,
    /// The models an owner may choose from, the backend's default first.
    pub models: Vec<String>,
    /// Rounds a turn may take.
    pub steps: u32,
    /// Seconds a turn may take.
    pub turn_secs: u64,
    /// Tokens sent to the model at most.
    pub context_tokens: u64,
}

impl AgentState {
    /// A turn's bounds in words (`None` from a backend that does not say).
    pub fn bounds_text(&self) -> Option<String> {
        (self.steps > 0).then(|| {
            format!(
                "at most {} rounds and {} s, {} tokens of context",
                self.steps, self.turn_secs, self.context_tokens
            )
        })
    }
}

/// Body of `POST /model` (rpc `set_model`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModelRequest {
    pub model: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// Answer of `POST /model` (rpc `set_model`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelResponse {
    pub model: String,
}
