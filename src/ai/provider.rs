//! What a turn needs of a model: a chat that streams its answer. One trait,
//! so that any service (or a test's fake) can stand behind the agent.

use super::BoxFuture;
use futures_util::stream::BoxStream;

/// Who says a message in the model's conversation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChatRole {
    System,
    User,
    Assistant,
}

impl ChatRole {
    /// The role's name in the OpenAI chat API.
    pub fn as_str(self) -> &'static str {
        match self {
            ChatRole::System => "system",
            ChatRole::User => "user",
            ChatRole::Assistant => "assistant",
        }
    }
}

/// One message of the conversation sent to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChatMessage {
    pub role: ChatRole,
    pub content: String,
}

impl ChatMessage {
    /// A message of `role` saying `content`.
    pub fn new(role: ChatRole, content: impl Into<String>) -> Self {
        ChatMessage {
            role,
            content: content.into(),
        }
    }
}

/// Why a model gave no (complete) answer; the text is shown in the room.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    /// Nothing answered at the model's address.
    #[error("cannot reach the model at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The service answered with an error status.
    #[error("the model's service at {url} answered {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
    },
    /// The answer broke off or could not be read.
    #[error("the model's answer broke off: {0}")]
    Stream(String),
    /// The model took longer than the turn may.
    #[error("the model did not finish within {0} seconds")]
    Timeout(u64),
}

/// A tool the model called: its name and its arguments' JSON text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    pub name: String,
    pub arguments: String,
}

/// One piece of a streamed answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Text the model wrote.
    Text(String),
    /// A tool it called (calls come after the answer's text, in order).
    Call(ToolCall),
}

/// The pieces of a streamed answer, in order; ends after the last piece.
pub type DeltaStream = BoxStream<'static, Result<Piece, ModelError>>;

/// A chat model that streams its answer.
pub trait Provider: Send + Sync + 'static {
    /// Sends the conversation; resolves once the model started answering.
    fn chat(&self, messages: Vec<ChatMessage>) -> BoxFuture<Result<DeltaStream, ModelError>>;
}
