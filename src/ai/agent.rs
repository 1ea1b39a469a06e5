//! The agent of a server: its settings, what a turn needs of its room,
//! and the provider it reaches.

use super::provider::{ModelError, Provider};
use super::usage::{Meter, UsageReport};
use super::{ToolMode, openai, turn};
use crate::protocol::{AgentState, DuetMessage, Run, ServerFrame, Usage};
pub use crate::support::BoxFuture;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Where Ollama listens by default: tried when no model is configured.
pub const OLLAMA_URL: &str = "http://127.0.0.1:11434/v1";
/// Default time to connect to the model's service.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Default time one answer of the model may take.
pub const TURN_TIMEOUT: Duration = Duration::from_secs(120);
/// What the room is told when no model is configured and Ollama does not
/// answer; `{configure}` is how this backend is given one.
pub const NO_MODEL_TEXT: &str = "No model is configured, and nothing answers at Ollama's default address (http://127.0.0.1:11434). Start Ollama (`ollama serve`, then `ollama pull llama3.2`), or {configure}; see the README.";

/// How a person gives this backend its model, in the words that work for
/// it: what the room is told when it has none. `duet serve` takes flags;
/// the embedded backend of plain `duet` takes only variables and the
/// config file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ModelSetup {
    /// How to configure a model: its URL, name and key.
    pub configure: String,
    /// How to name the model alone.
    pub name_model: String,
}

impl Default for ModelSetup {
    fn default() -> Self {
        ModelSetup::serve()
    }
}

impl ModelSetup {
    /// `duet serve`: its flags, and the variables behind them.
    pub fn serve() -> ModelSetup {
        ModelSetup {
            configure: "start the server with --ai-url, --ai-model and --ai-key (or DUET_AI_URL, DUET_AI_MODEL, DUET_AI_KEY)".into(),
            name_model: "--ai-model (DUET_AI_MODEL)".into(),
        }
    }

    /// The embedded backend of plain `duet`, which has no --ai-* flags:
    /// the variables, or the keys of the config file at `config_file`.
    pub fn embedded(config_file: &str) -> ModelSetup {
        ModelSetup {
            configure: format!(
                "set DUET_AI_URL, DUET_AI_MODEL and DUET_AI_KEY before starting duet, or ai_url, ai_model and ai_key in {config_file}"
            ),
            name_model: format!("DUET_AI_MODEL (or ai_model in {config_file})"),
        }
    }

    /// What the room is told when no model can be reached.
    pub fn no_model_text(&self) -> String {
        NO_MODEL_TEXT.replace("{configure}", &self.configure)
    }
}

/// How the backend reaches a model: from flags, environment or config file.
#[derive(Debug, Clone, Default)]
pub struct AiConfig {
    /// Base URL of an OpenAI-compatible API (e.g. http://127.0.0.1:11434/v1).
    pub url: Option<String>,
    pub model: Option<String>,
    /// The models a room may choose (`--ai-models`), the default first;
    /// empty: only `model`.
    pub models: Vec<String>,
    pub key: Option<String>,
    /// Rounds the model may take in one turn (zero: `DEFAULT_AGENT_STEPS`).
    pub steps: u32,
    /// Time one turn may take, all its rounds (zero: `DEFAULT_AGENT_TURN_SECS`).
    pub turn_time: Duration,
    /// Tokens of context sent to the model at most (zero:
    /// `DEFAULT_AI_CONTEXT_TOKENS`).
    pub context_tokens: u64,
    /// Time to connect to the model's service (zero: `CONNECT_TIMEOUT`).
    pub connect_timeout: Duration,
    /// Time one answer of the model may take (zero: `TURN_TIMEOUT`).
    pub timeout: Duration,
    /// How a person configures a model on this backend (the advice of
    /// the room's message when there is none).
    pub setup: ModelSetup,
    /// Whether the model is offered the `run` tool.
    pub tools: ToolMode,
    /// Bytes of AGENTS.md sent each turn (none: the default).
    pub agents_md_bytes: Option<usize>,
}

impl AiConfig {
    /// The connect timeout in force.
    pub fn connect_timeout(&self) -> Duration {
        nonzero_or(self.connect_timeout, CONNECT_TIMEOUT)
    }

    /// The answer timeout in force.
    pub fn turn_timeout(&self) -> Duration {
        nonzero_or(self.timeout, TURN_TIMEOUT)
    }

    /// The rounds a turn may take.
    pub fn steps(&self) -> u32 {
        if self.steps == 0 {
            super::DEFAULT_AGENT_STEPS
        } else {
            self.steps
        }
    }

    /// The time a turn may take.
    pub fn turn_time(&self) -> Duration {
        nonzero_or(
            self.turn_time,
            Duration::from_secs(super::DEFAULT_AGENT_TURN_SECS),
        )
    }

    /// The tokens of context a request may hold.
    pub fn context_tokens(&self) -> u64 {
        if self.context_tokens == 0 {
            super::DEFAULT_AI_CONTEXT_TOKENS
        } else {
            self.context_tokens
        }
    }

    /// The models a room may choose, the default first: `--ai-models`,
    /// else the one model configured (none: the service is asked).
    pub fn allowed_models(&self) -> Vec<String> {
        if self.models.is_empty() {
            self.model.iter().cloned().collect()
        } else {
            self.models.clone()
        }
    }

    /// The room state's `agent` for a room that chose `chosen`.
    pub fn agent_state(&self, chosen: Option<&str>) -> AgentState {
        AgentState {
            model: self.room_model(chosen),
            models: self.allowed_models(),
            steps: self.steps(),
            turn_secs: self.turn_time().as_secs(),
            context_tokens: self.context_tokens(),
        }
    }

    /// The model a room that chose `chosen` uses: its choice while the
    /// backend allows it, else the default.
    pub fn room_model(&self, chosen: Option<&str>) -> Option<String> {
        let allowed = self.allowed_models();
        chosen
            .filter(|c| allowed.iter().any(|m| m == c))
            .map(str::to_string)
            .or_else(|| allowed.into_iter().next())
    }
}

fn nonzero_or(value: Duration, default: Duration) -> Duration {
    if value.is_zero() { default } else { value }
}

/// What the room gives a turn: a way to tell the room and a way to run
/// commands in its sandbox.
pub trait TurnHost: Send + Sync + 'static {
    /// Broadcast a frame (`duet_ai`) to everyone in the room.
    fn emit(&self, frame: ServerFrame);
    /// Run one command in the room's sandbox as the agent, streaming
    /// `duet_exec` frames with `source: "agent"`; resolves when it ended.
    fn run(&self, cmd: String) -> BoxFuture<Run>;
    /// The room's shared terminal as it looks now (its size and screen as
    /// text), when one runs.
    fn terminal_screen(&self) -> BoxFuture<Option<(crate::protocol::TermSize, String)>> {
        Box::pin(async { None })
    }
    /// Reads a file of the room's workspace (AGENTS.md, a question's
    /// `@path`, `read_file`).
    fn read_file(&self, _path: String) -> BoxFuture<super::context::FileRead> {
        Box::pin(async { super::context::FileRead::Missing })
    }
    /// Asks the room's approval policy whether the agent may do `what` (a
    /// write or an edit, `edit_file PATH`); `Err` says why not (`denied by
    /// ann`, the policy is off, the turn was cancelled).
    fn ask(&self, _what: String) -> BoxFuture<Result<(), String>> {
        Box::pin(async { Ok(()) })
    }
    /// Writes a file of the workspace as the agent, by the files API's
    /// path rules and the room's quota (its turn's checkpoint first);
    /// `Err` says why it could not.
    fn write_file(&self, _path: String, _bytes: Vec<u8>) -> BoxFuture<Result<(), String>> {
        Box::pin(async { Err("this room's files cannot be written".to_string()) })
    }
    /// The agent wrote or edited `path`: the room's timeline notes it.
    fn edited(&self, _path: String, _added: u64, _removed: u64) -> BoxFuture<()> {
        Box::pin(async {})
    }
    /// The model the room chose (`None`: the backend's).
    fn model(&self) -> Option<String> {
        None
    }
}

/// What a turn produced: the agent message's text and runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct AgentReply {
    pub text: String,
    pub runs: Vec<Run>,
    /// What its model calls cost (`None`: it made none).
    pub usage: Option<Usage>,
}

/// What a cancelled turn's request is answered (its `error`).
pub const CANCELLED: &str = "the agent's turn was cancelled";

/// Why a turn ended without a reply; the text is what the room's `system`
/// message says.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum TurnError {
    #[error("{0}")]
    NoModel(String),
    #[error("{0}")]
    Model(String),
    /// The model failed after one round or more had ended: `error` is the
    /// model's error (as `Model`'s), `done` what the ended rounds did (the
    /// reply ending with a sentence saying the model failed).
    #[error("{error}")]
    ModelPartway { error: String, done: AgentReply },
    /// Cancelled: what the reply held by then (the text streamed so far,
    /// the commands that ran).
    #[error("{}", CANCELLED)]
    Cancelled(AgentReply),
}

/// The agent of a server: holds the provider, shared by every room.
#[derive(Clone)]
pub struct Agent {
    config: Arc<AiConfig>,
    backend: Arc<Backend>,
}

/// Where the agent's model comes from.
enum Backend {
    /// A provider given by the caller (tests, embedders).
    Fixed(Arc<dyn Provider>),
    /// The OpenAI-compatible API of the configuration (or Ollama's default).
    Http {
        client: Result<reqwest::Client, String>,
        /// The model found by asking the service, once found.
        discovered: Mutex<Option<String>>,
        /// Set once the service refused the `run` tool (`auto`: tags
        /// from then on).
        tools_refused: Arc<std::sync::atomic::AtomicBool>,
        /// Set once the service refused `stream_options` (usage is not
        /// asked for from then on).
        usage_refused: Arc<std::sync::atomic::AtomicBool>,
    },
}

impl Agent {
    /// The agent of `config`: its model is reached over HTTP, found (and
    /// Ollama tried) at each turn until it answers.
    pub fn new(config: AiConfig) -> Self {
        let client = openai::http_client(config.connect_timeout());
        Agent {
            config: Arc::new(config),
            backend: Arc::new(Backend::Http {
                client,
                discovered: Mutex::new(None),
                tools_refused: Default::default(),
                usage_refused: Default::default(),
            }),
        }
    }

    /// Its configuration.
    pub fn config(&self) -> &AiConfig {
        &self.config
    }

    /// An agent whose model is `provider` (the configuration's URL, model
    /// and key are not used).
    pub fn with_provider(config: AiConfig, provider: Arc<dyn Provider>) -> Self {
        Agent {
            config: Arc::new(config),
            backend: Arc::new(Backend::Fixed(provider)),
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
        let meter = Meter::default();
        let provider = self.provider(host.model(), meter.report());
        let turn = turn::Turn {
            host,
            turn_id,
            cancel,
            steps: self.config.steps(),
            turn_time: self.config.turn_time(),
            context_tokens: self.config.context_tokens(),
            timeout: self.config.turn_timeout(),
            agents_md_bytes: self
                .config
                .agents_md_bytes
                .unwrap_or(super::DEFAULT_AGENTS_MD_BYTES),
            meter,
        };
        turn.run(provider, history).await
    }

    /// The provider for a turn: the room's model (`chosen`), else the
    /// configured one, else Ollama's default; it reports each answer's
    /// usage to `usage`.
    async fn provider(
        &self,
        chosen: Option<String>,
        usage: UsageReport,
    ) -> Result<Arc<dyn Provider>, TurnError> {
        let (client, discovered, tools_refused, usage_refused) = match self.backend.as_ref() {
            Backend::Fixed(provider) => return Ok(provider.clone()),
            Backend::Http {
                client,
                discovered,
                tools_refused,
                usage_refused,
            } => (client, discovered, tools_refused, usage_refused),
        };
        let client = client
            .as_ref()
            .map_err(|err| TurnError::Model(format!("Model error: no HTTP client: {err}")))?;
        let configured = self.config.url.is_some();
        let base = self.config.url.as_deref().unwrap_or(OLLAMA_URL);
        let key = self.config.key.clone();
        let known = chosen
            .or_else(|| self.config.model.clone())
            .or_else(|| discovered.lock().ok().and_then(|found| found.clone()));
        let model = match known {
            // Without a configured URL, first make sure Ollama answers.
            Some(model) if configured => model,
            known => match openai::discover_model(client, base, key.as_deref()).await {
                Ok(Some(found_model)) => {
                    if let Ok(mut found) = discovered.lock() {
                        *found = Some(found_model.clone());
                    }
                    known.unwrap_or(found_model)
                }
                Ok(None) if known.is_some() => known.unwrap_or_default(),
                Ok(None) if configured => {
                    return Err(TurnError::Model(format!(
                        "Model error: the service at {base} lists no model; set {}",
                        self.config.setup.name_model
                    )));
                }
                Ok(None) => {
                    return Err(TurnError::NoModel(format!(
                        "Ollama answers at {base} but has no model: run `ollama pull llama3.2`, or set {}.",
                        self.config.setup.name_model
                    )));
                }
                Err(ModelError::Unreachable { .. }) if !configured => {
                    return Err(TurnError::NoModel(self.config.setup.no_model_text()));
                }
                Err(err) => return Err(TurnError::Model(format!("Model error: {err}"))),
            },
        };
        let provider = openai::OpenAiProvider::new(client.clone(), base, &model, key)
            .with_tools(self.config.tools, tools_refused.clone())
            .with_usage(usage, usage_refused.clone());
        Ok(Arc::new(provider))
    }
}
