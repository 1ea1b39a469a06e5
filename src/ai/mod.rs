//! The agent: a model that answers in the room and runs its commands in the
//! sandbox (agent.rs: the interface the room uses; the provider in
//! provider.rs and openai.rs, the prompt and the turn beside it), and
//! `duet ask`, the client's one question to it.

mod options;

pub use options::{
    DEFAULT_AGENT_STEPS, DEFAULT_AGENT_TURN_SECS, DEFAULT_AGENTS_MD_BYTES,
    DEFAULT_AI_CONTEXT_TOKENS, ToolMode,
};

// The backend's parts: the agent that answers in rooms.
#[cfg(feature = "server")]
mod agent;
#[cfg(feature = "server")]
pub mod context;
#[cfg(feature = "server")]
mod fit;
#[cfg(feature = "server")]
pub mod openai;
#[cfg(feature = "server")]
pub(crate) mod prompt;
#[cfg(feature = "server")]
pub mod provider;
#[cfg(feature = "server")]
pub(crate) mod sse;
#[cfg(feature = "server")]
pub mod tools;
#[cfg(feature = "server")]
mod turn;
#[cfg(feature = "server")]
pub mod usage;

#[cfg(feature = "server")]
pub use agent::*;
