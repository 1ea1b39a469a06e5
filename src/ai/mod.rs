//! The agent: a model that answers in the room and runs its commands in the
//! sandbox. This file holds the interface the room uses; the provider and
//! the turn live beside it.

use crate::protocol::{DuetMessage, Run, ServerFrame};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// A future that may be sent between tasks.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// How the backend reaches a model: from flags, environment or config file.
#[derive(Debug, Clone, Default)]
pub struct AiConfig {
    /// Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1).
    pub url: Option<String>,
    pub model: Option<String>,
    pub key: Option<String>,
    /// Rounds of commands the model may run in one turn (default 1).
    pub steps: u32,
}

/// What the room gives a turn: a way to tell the room and a way to run
/// commands in its sandbox.
pub trait TurnHost: Send + Sync + 'static {
    /// Broadcast a frame (`duet_ai`) to everyone in the room.
    fn emit(&self, frame: ServerFrame);
    /// Run one command in the room's sandbox as the agent, streaming
    /// `duet_exec` frames with `source: "agent"`; resolves when it ended.
    fn run(&self, cmd: String) -> BoxFuture<Run>;
}

/// What a turn produced: the agent message's text and runs.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentReply {
    pub text: String,
    pub runs: Vec<Run>,
}

/// Why a turn ended without a reply; the text is what the room's `system`
/// message says.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    #[error("{0}")]
    NoModel(String),
    #[error("{0}")]
    Model(String),
    #[error("the agent's turn was cancelled")]
    Cancelled,
}

/// The agent of a server: holds the provider, shared by every room.
#[derive(Clone)]
pub struct Agent {
    config: Arc<AiConfig>,
}

impl Agent {
    pub fn new(config: AiConfig) -> Self {
        Agent {
            config: Arc::new(config),
        }
    }

    /// Runs one turn: `history` is the room's messages, oldest first, the
    /// new user message last. Emits `duet_ai` frames with `turn_id`, runs
    /// the reply's commands through `host`, and returns the reply.
    pub async fn run_turn(
        &self,
        host: Arc<dyn TurnHost>,
        history: Vec<DuetMessage>,
        turn_id: String,
        cancel: CancellationToken,
    ) -> Result<AgentReply, TurnError> {
        let _ = (host, history, turn_id, cancel, &self.config);
        Err(TurnError::NoModel(
            "No model is configured. Start Ollama on this machine, or set DUET_AI_URL, DUET_AI_MODEL and DUET_AI_KEY (see the README).".into(),
        ))
    }
}
