//! How the agent is set up by `duet serve`'s flags: here rather than beside
//! the agent because the command line names them in every build, the
//! client-only one too.

/// Bytes of AGENTS.md sent unless the server says otherwise.
pub const DEFAULT_AGENTS_MD_BYTES: usize = 16 * 1024;

/// Rounds a turn may take unless the server says otherwise.
pub const DEFAULT_AGENT_STEPS: u32 = 10;
/// Seconds a turn may take unless the server says otherwise.
pub const DEFAULT_AGENT_TURN_SECS: u64 = 600;
/// Tokens of context the model is sent at most, unless the server says
/// otherwise.
pub const DEFAULT_AI_CONTEXT_TOKENS: u64 = 32_000;

/// Whether the model is offered its tools (`run` and the file tools;
/// `--ai-tools`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum ToolMode {
    /// Offered; a service that refuses them gets tags from then on.
    #[default]
    Auto,
    /// Always offered; a refusal is a model error.
    On,
    /// Never offered: tags only.
    Off,
}
