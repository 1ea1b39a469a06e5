//! One agent turn: stream the model's reply to the room, run its commands
//! and file tools, give their results back round after round until it
//! answers without any or a budget ends it (`steps` rounds, `turn_time`),
//! and build the reply.

use super::fit::Context;
use super::prompt::Outcome;
use super::provider::{ChatMessage, ChatRole, ModelError, Piece, Provider};
use super::tools::{self, Action};
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
    /// Rounds the turn may take.
    pub(crate) steps: u32,
    /// Time the turn may take: checked before each round.
    pub(crate) turn_time: Duration,
    /// Tokens a request to the model may hold.
    pub(crate) context_tokens: u64,
    /// Time one answer of the model may take.
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
    /// answers what the reply held by then; a model that fails after a
    /// round ended, what the ended rounds did.
    pub(crate) async fn run(
        self,
        resolve: impl Future<Output = Result<Arc<dyn Provider>, TurnError>>,
        history: Vec<DuetMessage>,
    ) -> Result<AgentReply, TurnError> {
        let mut progress = Progress::default();
        let ended = self.rounds(resolve, history, &mut progress).await;
        // The loop counts the rounds; the meter sums what their calls cost.
        let usage = self.meter.usage().map(|usage| crate::protocol::Usage {
            rounds: progress.rounds,
            ..usage
        });
        match ended {
            Err(TurnError::Model(error)) if progress.ended > 0 => Err(TurnError::ModelPartway {
                error,
                done: progress.failed(),
            }),
            Ok(()) => Ok(AgentReply {
                usage,
                ..progress.reply()
            }),
            Err(TurnError::Cancelled(_)) => Err(TurnError::Cancelled(AgentReply {
                usage,
                ..progress.reply()
            })),
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
        let deadline = Instant::now() + self.turn_time;
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
        let mut conversation = Context::new(prompt::conversation(&history));
        if let Some(note) = context::agents_md_message(agents_md, self.agents_md_bytes) {
            conversation
                .head
                .push(ChatMessage::new(ChatRole::System, note));
        }
        if let Some((size, screen)) = self.host.terminal_screen().await {
            let note = prompt::terminal_note(size, &screen);
            conversation
                .question
                .insert(0, ChatMessage::new(ChatRole::User, note));
        }
        let steps = self.steps.max(1);
        for round in 0..steps {
            if round > 0 {
                if Instant::now() >= deadline {
                    let secs = self.turn_time.as_secs();
                    self.say(progress, &budget_sentence(secs, "seconds"), "\n\n");
                    break;
                }
                self.emit(AiPhase::Start, None, None);
            }
            // Later rounds' text streams after a blank line.
            let lead = if round > 0 { "\n\n" } else { "" };
            let messages = conversation.messages(self.context_tokens);
            // A round counts once its model call begins (a cancelled one
            // cost tokens too).
            progress.rounds += 1;
            let calls = self
                .stream_round(provider.as_ref(), messages, lead, &mut progress.streamed)
                .await
                .map_err(|err| self.fail(err))?;
            progress.answered = self.meter.usage();
            let (prose, cmds) = blocks::extract_commands(&progress.streamed);
            if round == 0 && prose.is_empty() && cmds.is_empty() && calls.is_empty() {
                return Err(self.fail(TurnError::Model(
                    "Model error: the model answered with an empty reply".into(),
                )));
            }
            self.emit(AiPhase::End, None, None);
            let mut outcomes = Vec::new();
            for cmd in cmds {
                self.run_command(cmd, progress, &mut outcomes).await?;
            }
            for action in calls {
                self.act(action, progress, &mut outcomes).await?;
            }
            let more = !outcomes.is_empty();
            if more {
                conversation.rounds.push(ChatMessage::new(
                    ChatRole::Assistant,
                    progress.streamed.clone(),
                ));
                conversation.rounds.push(ChatMessage::new(
                    ChatRole::User,
                    prompt::results_note(&outcomes),
                ));
            }
            progress.end_round();
            progress.ended += 1;
            if !more {
                break;
            }
            // One round is the original's turn: it ends so, saying nothing.
            if round + 1 == steps && steps > 1 {
                self.say(progress, &budget_sentence(steps.into(), "rounds"), "\n\n");
            }
        }
        Ok(())
    }

    /// Adds `text` to the reply (after `sep` when it follows something) and
    /// streams it to the room as a round of its own.
    fn say(&self, progress: &mut Progress, text: &str, sep: &str) {
        let live = if progress.streamed.is_empty() && progress.text.is_empty() {
            text.to_string()
        } else {
            format!("{sep}{text}")
        };
        // A round's own text starts bare: end_round joins rounds with a
        // blank line, as the room was shown.
        if !progress.streamed.is_empty() {
            progress.streamed.push_str(sep);
        }
        progress.streamed.push_str(text);
        self.emit(AiPhase::Start, None, None);
        self.emit(AiPhase::Delta, Some(live), None);
        self.emit(AiPhase::End, None, None);
    }

    /// Runs one command through the room (its policy first).
    async fn run_command(
        &self,
        cmd: String,
        progress: &mut Progress,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), TurnError> {
        let run = tokio::select! {
            run = self.host.run(cmd) => capped(run),
            () = self.cancel.cancelled() => return Err(cancelled()),
        };
        progress.round_runs.push(run.clone());
        outcomes.push(Outcome::Run(run));
        Ok(())
    }

    /// Does one tool call that came after the answer's text: a command
    /// (its tag added to the reply first) or a file tool (its line after).
    async fn act(
        &self,
        action: Action,
        progress: &mut Progress,
        outcomes: &mut Vec<Outcome>,
    ) -> Result<(), TurnError> {
        match action {
            Action::Run(cmd) => {
                self.say(progress, &format!("<run>{cmd}</run>"), "\n\n");
                self.run_command(cmd, progress, outcomes).await
            }
            Action::File(call) => {
                let outcome = tokio::select! {
                    outcome = tools::run_file_call(self.host.as_ref(), call) => outcome,
                    () = self.cancel.cancelled() => return Err(cancelled()),
                };
                if let Some(line) = &outcome.line {
                    self.say(progress, line, "\n\n");
                }
                outcomes.push(Outcome::File(outcome));
                Ok(())
            }
        }
    }

    /// Streams one answer of the model to the room, `lead` before its first
    /// piece, into `text` (without `lead`), as it comes. The `run` calls
    /// that come before any other tool call count as their tags written at
    /// the end of the text; the calls from the first other one on are
    /// answered, in order, after the text's commands.
    async fn stream_round(
        &self,
        provider: &dyn Provider,
        conversation: Vec<ChatMessage>,
        lead: &str,
        text: &mut String,
    ) -> Result<Vec<Action>, TurnError> {
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
    ) -> Result<Vec<Action>, TurnError> {
        let work = async {
            let mut later = Vec::new();
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
                            let piece = match piece {
                                Piece::Text(piece) => piece,
                                Piece::Call(call) => match tools::action(&call) {
                                    Some(Action::Run(cmd)) if later.is_empty() => {
                                        format!("<run>{cmd}</run>")
                                    }
                                    Some(action) => {
                                        later.push(action);
                                        continue;
                                    }
                                    None => continue,
                                },
                            };
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
            Ok::<_, ModelError>(later)
        };
        tokio::select! {
            () = self.cancel.cancelled() => Err(cancelled()),
            done = tokio::time::timeout(self.timeout, work) => match done {
                Ok(Ok(later)) => Ok(later),
                Ok(Err(err)) => Err(model_error(err)),
                Err(_) => Err(model_error(ModelError::Timeout(self.timeout.as_secs()))),
            },
        }
    }
}

/// The sentence a reply ends with when a budget stopped the turn.
fn budget_sentence(amount: u64, unit: &str) -> String {
    format!(
        "The agent stopped after {amount} {unit}, the most a turn may take here; ask it to go on."
    )
}

/// The sentence a reply ends with when the model failed after `rounds`
/// rounds had ended (the room's `system` message says how it failed).
fn failed_sentence(rounds: u32) -> String {
    let unit = if rounds == 1 { "round" } else { "rounds" };
    format!("The agent stopped after {rounds} {unit}: the model failed; ask it to go on.")
}

/// A cancel found inside the turn: `Turn::run` fills in what it had done.
fn cancelled() -> TurnError {
    TurnError::Cancelled(AgentReply::default())
}

/// What a turn has done so far (all of it when it ends, a part of it when
/// it is cancelled or its model fails).
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
    /// The model's answers so far (the one under way counted).
    rounds: u32,
    /// The rounds that ended (their answers came whole and were acted on).
    ended: u32,
    /// What the answers that came whole cost.
    answered: Option<crate::protocol::Usage>,
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

    /// The reply of a turn whose model failed: the ended rounds (not what
    /// the failed answer had streamed), then a sentence saying so; what
    /// their answers cost.
    fn failed(self) -> AgentReply {
        let sentence = failed_sentence(self.ended);
        let text = if self.text.is_empty() {
            sentence
        } else {
            format!("{}\n\n{sentence}", self.text)
        };
        AgentReply {
            text,
            runs: self.runs,
            usage: self.answered,
        }
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
