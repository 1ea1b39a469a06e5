//! One agent turn: stream the model's reply to the room, run its commands,
//! give their outputs back for up to `steps` rounds, and build the reply.

use super::provider::{ChatMessage, ChatRole, ModelError, Provider};
use super::{AgentReply, TurnError, TurnHost, prompt};
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

    /// Runs the turn with the provider `resolve` yields.
    pub(crate) async fn run(
        self,
        resolve: impl Future<Output = Result<Arc<dyn Provider>, TurnError>>,
        history: Vec<DuetMessage>,
    ) -> Result<AgentReply, TurnError> {
        self.emit(AiPhase::Start, None, None);
        let provider = tokio::select! {
            resolved = resolve => resolved.map_err(|err| self.fail(err))?,
            () = self.cancel.cancelled() => return Err(self.fail(TurnError::Cancelled)),
        };
        let mut conversation = prompt::conversation(&history);
        let mut text = String::new();
        let mut runs = Vec::new();
        for round in 0..self.steps.max(1) {
            if round > 0 {
                self.emit(AiPhase::Start, None, None);
            }
            // Later rounds' text streams after a blank line.
            let lead = if round > 0 { "\n\n" } else { "" };
            let raw = self
                .stream_round(provider.as_ref(), conversation.clone(), lead)
                .await
                .map_err(|err| self.fail(err))?;
            let (prose, cmds) = blocks::extract_commands(&raw);
            if round == 0 && prose.is_empty() && cmds.is_empty() {
                return Err(self.fail(TurnError::Model(
                    "Model error: the model answered with an empty reply".into(),
                )));
            }
            self.emit(AiPhase::End, None, None);
            let round_runs = self.run_commands(cmds).await?;
            let joined = match (text.is_empty(), prose.is_empty()) {
                (true, _) => prose,
                (false, true) => text,
                (false, false) => format!("{text}\n\n{prose}"),
            };
            text = blocks::render_reply(&joined, &round_runs);
            let more = !round_runs.is_empty();
            if more {
                conversation.push(ChatMessage::new(ChatRole::Assistant, raw));
                conversation.push(ChatMessage::new(
                    ChatRole::User,
                    prompt::results_note(&round_runs),
                ));
            }
            runs.extend(round_runs);
            if !more {
                break;
            }
        }
        Ok(AgentReply { text, runs })
    }

    /// Streams one answer of the model to the room, `lead` before its first
    /// piece; returns its whole text (without `lead`).
    async fn stream_round(
        &self,
        provider: &dyn Provider,
        conversation: Vec<ChatMessage>,
        lead: &str,
    ) -> Result<String, TurnError> {
        let work = async {
            let mut stream = provider.chat(conversation).await?;
            let mut text = String::new();
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
            Ok::<_, ModelError>(text)
        };
        tokio::select! {
            () = self.cancel.cancelled() => Err(TurnError::Cancelled),
            done = tokio::time::timeout(self.timeout, work) => match done {
                Ok(Ok(text)) => Ok(text),
                Ok(Err(err)) => Err(model_error(err)),
                Err(_) => Err(model_error(ModelError::Timeout(self.timeout.as_secs()))),
            },
        }
    }

    /// Runs the commands in order through the room; stops at cancel.
    async fn run_commands(&self, cmds: Vec<String>) -> Result<Vec<Run>, TurnError> {
        let mut runs = Vec::with_capacity(cmds.len());
        for cmd in cmds {
            let run = tokio::select! {
                run = self.host.run(cmd) => run,
                () = self.cancel.cancelled() => return Err(TurnError::Cancelled),
            };
            runs.push(capped(run));
        }
        Ok(runs)
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
