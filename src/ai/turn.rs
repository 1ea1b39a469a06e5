//! One agent turn: stream the model's reply to the room, run its commands,
//! give their outputs back for up to `steps` rounds, and build the reply.

use super::provider::{ChatMessage, ChatRole, ModelError, Provider};
use super::usage::Meter;
use super::{AgentReply, TurnError, TurnHost, context, prompt};
use crate::blocks;
use crate::protocol::{AiPhase, DuetMessage, Run, STORED_OUTPUT_CAP, ServerFrame, cap_text};
use futures_util::StreamExt;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// Shortest time between two `delta` frames of a turn.
const DELTA_INTERVAL: Duration = Duration::from_millis(25);

/// What a turn works with.
pub(crate) struct Turn {
    pub(crate) host: Arc<dyn TurnHost>,
    pub(crate) turn_id: String,
    pub(crate) cancel: CancellationToken,
    pub(crate) steps: u32,
    pub(crate) timeout: Duration,
    /// Bytes of AGENTS.md sent.
    pub(crate) agents_md_bytes: usize,
    /// What the turn's model calls cost (each call is a round).
    pub(crate) meter: Meter,
}

/// The turn's host as the workspace the context reads.
struct HostFiles<'a>(&'a dyn TurnHost);

impl context::Workspace for HostFiles<'_> {
    fn read(&self, path: String) -> super::BoxFuture<context::FileRead> {
        self.0.read_file(path)
    }
}

impl Turn {
    /// Tells the room where the model's reply stands.
    fn emit(&self, phase: AiPhase, text: Option<String>, error: Option<String>) {
        self.host.emit(ServerFrame::Ai {
            phase,
            turn_id: self.turn_id.clone(),
            text,
            error,
            by_connection: None,
        });
    }

    /// Sends the gathered pieces of the reply as one `delta`, if any.
    fn send_delta(&self, pending: &mut String) {
        if !pending.is_empty() {
            self.emit(AiPhase::Delta, Some(std::mem::take(pending)), None);
        }
    }

    /// Ends the streamed reply with an error frame and returns the error.
    fn fail(&self, error: TurnError) -> TurnError {
        self.emit(AiPhase::Error, None, Some(error.to_string()));
        error
    }

    /// Runs the turn with the provider `resolve` yields. Cancelled, it
    /// answers what the reply held by then.
    pub(crate) async fn run(
        self,
        resolve: impl Future<Output = Result<Arc<dyn Provider>, TurnError>>,
        history: Vec<DuetMessage>,
    ) -> Result<AgentReply, TurnError> {
        let mut progress = Progress::default();
        let ended = self.rounds(resolve, history, &mut progress).await;
        let usage = self.meter.usage();
        let reply = || AgentReply {
            usage,
            ..progress.reply()
        };
        match ended {
            Ok(()) => Ok(reply()),
            Err(TurnError::Cancelled(_)) => Err(TurnError::Cancelled(reply())),
            Err(err) => Err(err),
        }
    }

    /// The rounds of the turn; what they did goes to `progress` as it is done.
    async fn rounds(
        &self,
        resolve: impl Future<Output = Result<Arc<dyn Provider>, TurnError>>,
        mut history: Vec<DuetMessage>,
        progress: &mut Progress,
    ) -> Result<(), TurnError> {
        self.emit(AiPhase::Start, None, None);
        let provider = tokio::select! {
            resolved = resolve => resolved.map_err(|err| self.fail(err))?,
            () = self.cancel.cancelled() => return Err(self.fail(cancelled())),
        };
        // The question (last) with the files it names; AGENTS.md read now.
        let files = HostFiles(self.host.as_ref());
        if let Some(question) = history.last_mut() {
            question.text = context::with_mentions(&question.text, &files).await;
        }
        let agents_md = self.host.read_file(context::AGENTS_MD.into()).await;
        let mut conversation = prompt::conversation(&history);
        if let Some(note) = context::agents_md_message(agents_md, self.agents_md_bytes) {
            conversation.insert(1, ChatMessage::new(ChatRole::System, note));
        }
        if let Some((size, screen)) = self.host.terminal_screen().await {
            prompt::add_terminal(&mut conversation, size, &screen);
        }
        for round in 0..self.steps.max(1) {
            if round > 0 {
                self.emit(AiPhase::Start, None, None);
            }
            // Later rounds' text streams after a blank line.
            let lead = if round > 0 { "\n\n" } else { "" };
            self.stream_round(
                provider.as_ref(),
                conversation.clone(),
                lead,
                &mut progress.streamed,
            )
            .await
            .map_err(|err| self.fail(err))?;
            let (prose, cmds) = blocks::extract_commands(&progress.streamed);
            if round == 0 && prose.is_empty() && cmds.is_empty() {
                return Err(self.fail(TurnError::Model(
                    "Model error: the model answered with an empty reply".into(),
                )));
            }
            self.emit(AiPhase::End, None, None);
            self.run_commands(cmds, &mut progress.round_runs).await?;
            let more = !progress.round_runs.is_empty();
            if more {
                conversation.push(ChatMessage::new(
                    ChatRole::Assistant,
                    progress.streamed.clone(),
                ));
                conversation.push(ChatMessage::new(
                    ChatRole::User,
                    prompt::results_note(&progress.round_runs),
                ));
            }
            progress.end_round();
            if !more {
                break;
            }
        }
        Ok(())
    }

    /// Streams one answer of the model to the room, `lead` before its first
    /// piece, into `text` (without `lead`), as it comes.
    async fn stream_round(
        &self,
        provider: &dyn Provider,
        conversation: Vec<ChatMessage>,
        lead: &str,
        text: &mut String,
    ) -> Result<(), TurnError> {
        let prompt_bytes = conversation.iter().map(|m| m.content.len()).sum();
        let before = text.len();
        self.meter.start();
        let ended = self.stream_answer(provider, conversation, lead, text).await;
        self.meter
            .end(prompt_bytes, text.get(before..).unwrap_or_default());
        ended
    }

    /// `stream_round`'s work: the answer streamed into `text`.
    async fn stream_answer(
        &self,
        provider: &dyn Provider,
        conversation: Vec<ChatMessage>,
        lead: &str,
        text: &mut String,
    ) -> Result<(), TurnError> {
        let work = async {
            let mut stream = provider.chat(conversation).await?;
            // Pieces go out at most every DELTA_INTERVAL, gathered, so that a
            // fast model does not flood the room (the first goes at once).
            let mut pending = String::new();
            let mut last_sent: Option<Instant> = None;
            loop {
                let flush_at = last_sent.map_or_else(Instant::now, |t| t + DELTA_INTERVAL);
                tokio::select! {
                    piece = stream.next() => match piece {
                        Some(Ok(piece)) => {
                            if text.is_empty() {
                                pending.push_str(lead);
                            }
                            text.push_str(&piece);
                            pending.push_str(&piece);
                            if Instant::now() >= flush_at {
                                self.send_delta(&mut pending);
                                last_sent = Some(Instant::now());
                            }
                        }
                        Some(Err(err)) => {
                            self.send_delta(&mut pending);
                            return Err(err);
                        }
                        None => break,
                    },
                    () = tokio::time::sleep_until(flush_at), if !pending.is_empty() => {
                        self.send_delta(&mut pending);
                        last_sent = Some(Instant::now());
                    }
                }
            }
            self.send_delta(&mut pending);
            Ok::<_, ModelError>(())
        };
        tokio::select! {
            () = self.cancel.cancelled() => Err(cancelled()),
            done = tokio::time::timeout(self.timeout, work) => match done {
                Ok(Ok(())) => Ok(()),
                Ok(Err(err)) => Err(model_error(err)),
                Err(_) => Err(model_error(ModelError::Timeout(self.timeout.as_secs()))),
            },
        }
    }

    /// Runs the commands in order through the room, into `runs` as each
    /// ends; stops at cancel.
    async fn run_commands(&self, cmds: Vec<String>, runs: &mut Vec<Run>) -> Result<(), TurnError> {
        for cmd in cmds {
            let run = tokio::select! {
                run = self.host.run(cmd) => run,
                () = self.cancel.cancelled() => return Err(cancelled()),
            };
            runs.push(capped(run));
        }
        Ok(())
    }
}

/// A cancel found inside the turn: `Turn::run` fills in what it had done.
fn cancelled() -> TurnError {
    TurnError::Cancelled(AgentReply::default())
}

/// What a turn has done so far (all of it when it ends, a part of it when
/// it is cancelled).
#[derive(Default)]
struct Progress {
    /// The reply of the rounds that ended: prose and blocks.
    text: String,
    /// The commands of those rounds.
    runs: Vec<Run>,
    /// What the model streamed of the round under way.
    streamed: String,
    /// Its commands that ran.
    round_runs: Vec<Run>,
}

impl Progress {
    /// Adds the round under way to the reply, each of its runs saying where
    /// in the reply's text it was asked.
    fn end_round(&mut self) {
        let (prose, placed) = blocks::extract_placed(&std::mem::take(&mut self.streamed));
        // A command tag the model had not closed when cut off is not prose.
        let prose = prose
            .find("<run>")
            .map_or(prose.as_str(), |at| prose[..at].trim_end());
        let prose_chars = prose.chars().count();
        let (joined, base) = match (self.text.is_empty(), prose.is_empty()) {
            (true, _) => (prose.to_string(), 0),
            (false, true) => {
                let text = std::mem::take(&mut self.text);
                let base = text.chars().count();
                (text, base)
            }
            (false, false) => {
                let base = self.text.chars().count() + 2;
                (format!("{}\n\n{prose}", self.text), base)
            }
        };
        for (run, (_, at)) in self.round_runs.iter_mut().zip(&placed) {
            run.at = u64::try_from(base + (*at).min(prose_chars)).ok();
        }
        self.text = blocks::render_reply(&joined, &self.round_runs);
        self.runs.append(&mut self.round_runs);
    }

    /// The reply as it stands.
    fn reply(mut self) -> AgentReply {
        if !self.streamed.is_empty() || !self.round_runs.is_empty() {
            self.end_round();
        }
        AgentReply {
            text: self.text,
            runs: self.runs,
            usage: None,
        }
    }
}

/// The room's text for a model failure.
fn model_error(err: ModelError) -> TurnError {
    TurnError::Model(format!("Model error: {err}"))
}

/// A run with each stream cut to what a stored output keeps.
fn capped(mut run: Run) -> Run {
    let (stdout, cut_out) = cap_text(&run.stdout, STORED_OUTPUT_CAP);
    let (stderr, cut_err) = cap_text(&run.stderr, STORED_OUTPUT_CAP);
    run.stdout = stdout;
    run.stderr = stderr;
    run.truncated |= cut_out || cut_err;
    run
}
