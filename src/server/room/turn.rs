//! The agent's turn: one at a time per room, in the order messages came.
//! The turn runs in a spawned task with a `TurnHost` that reaches the room
//! through its inbox and broadcast; its end is stored as an agent (or
//! system) message before the message's answer.

use super::checkpoints::CheckpointNews;
use super::exec::Then;
use super::{Answer, CLEANED, Command, Outgoing, Reply, RoomActor, send_frame};
use crate::ai::{AgentReply, BoxFuture, CANCELLED, TurnError, TurnHost};
use crate::protocol::{AiPhase, DuetMessage, Event, MessageResponse, Role, Run, ServerFrame};
use crate::server::ops::OpResult;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

/// A stored user message waiting for its turn.
pub(crate) struct PendingTurn {
    /// Who sent it (and so caused a system message about it).
    pub(crate) user: Option<String>,
    /// The id of that message: the turn sees the history up to it.
    pub(crate) upto: String,
    /// The message's `clientId`: repeats of it wait for this turn's answer.
    pub(crate) client_id: Option<String>,
    /// The socket that sent it (`byConnection` of the turn's frames).
    pub(crate) by_connection: Option<String>,
    /// Who waits for the answer: the request, and any repeats of it.
    pub(crate) replies: Vec<Answer>,
}

impl PendingTurn {
    /// Sends `answer` to everyone waiting for this turn.
    pub(in crate::server) fn answer(self, answer: OpResult) {
        for reply in self.replies {
            let _ = reply.send(answer.clone());
        }
    }
}

/// The turn running now.
pub(crate) struct CurrentTurn {
    pub(super) id: String,
    pub(super) cancel: CancellationToken,
    pub(crate) pending: PendingTurn,
    /// The command the turn is running, if any.
    pub(super) running: Option<String>,
    /// Every command the turn ran: an interrupt of one that is read after
    /// it ended (the turn went on to its next round) is still the turn's.
    pub(super) ran: Vec<String>,
    /// Set by cleanup: the turn's end is answered but not stored.
    pub(in crate::server) discarded: bool,
    /// Who cancelled it, once someone did.
    pub(super) cancelled_by: Option<String>,
    /// Records of what happened to its commands (interrupts, shells
    /// replaced), stored after its reply: they read in the order things
    /// happened.
    pub(super) after_reply: Vec<DuetMessage>,
}

/// The note stored after a reply the server's stop cut off.
pub(super) const TURN_STOPPED: &str = "The server stopped while the agent was answering: its \
     reply ends where it was cut off; ask again.";

/// The answer of a turn that ended without a reply.
pub(crate) fn no_reply(error: &str, messages: Vec<DuetMessage>) -> Reply {
    Reply::ok(MessageResponse {
        reply: None,
        error: Some(error.to_string()),
        messages,
    })
}

/// The agent message of a turn's reply (`runs` absent when it ran none).
fn agent_message(reply: AgentReply) -> DuetMessage {
    DuetMessage {
        role: Role::Agent,
        text: reply.text,
        runs: (!reply.runs.is_empty()).then_some(reply.runs),
        usage: reply.usage,
        ..Default::default()
    }
}

/// What a turn may do in its room.
struct RoomHost {
    inbox: super::Inbox,
    frames: crate::server::fanout::Sender<Outgoing>,
    turn_id: String,
    /// The socket whose message began the turn.
    by_connection: Option<String>,
    /// The room's sandbox, whose workspace the turn reads.
    sandbox: Arc<dyn crate::sandbox::Sandbox>,
    /// Set once the turn ran a command (an automatic checkpoint came first).
    ran: Arc<std::sync::atomic::AtomicBool>,
    /// The room's model when the turn began.
    model: Option<String>,
    /// The room's shared terminal when the turn began, and its size.
    terminal: Option<(
        crate::server::terminal::TermHandle,
        crate::protocol::TermSize,
    )>,
}

impl RoomHost {
    /// Resolves once the turn may change the workspace: before its first
    /// command or write, the automatic checkpoint that undoes the turn.
    fn before_first_change(&self) -> BoxFuture<()> {
        let inbox = self.inbox.clone();
        let turn_id = self.turn_id.clone();
        let ran = self.ran.clone();
        Box::pin(async move {
            if ran.swap(true, std::sync::atomic::Ordering::SeqCst) {
                return;
            }
            let (reply, taken) = oneshot::channel();
            let news = CheckpointNews::BeforeTurnRuns { turn_id, reply };
            if inbox.send(Command::Checkpoint(news)).await.is_ok() {
                let _ = taken.await;
            }
        })
    }
}

impl TurnHost for RoomHost {
    fn emit(&self, mut frame: ServerFrame) {
        // The room says who caused the turn: the turn itself does not know.
        if let ServerFrame::Ai {
            phase: AiPhase::Start,
            by_connection,
            ..
        } = &mut frame
        {
            by_connection.clone_from(&self.by_connection);
        }
        send_frame(&self.frames, &frame, None);
    }

    fn run(&self, cmd: String) -> BoxFuture<Run> {
        let inbox = self.inbox.clone();
        let turn_id = self.turn_id.clone();
        let asked = self.ask(cmd.clone());
        let first = self.before_first_change();
        Box::pin(async move {
            // The room's policy first: maybe a person must approve it.
            if let Err(why) = asked.await {
                return Run::failed(cmd, why);
            }
            first.await;
            let (reply, answer) = oneshot::channel();
            let failed = |cmd: String| Run::failed(cmd, "the room stopped");
            let sent = inbox
                .send(Command::AgentRun {
                    turn_id,
                    cmd: cmd.clone(),
                    reply,
                })
                .await;
            if sent.is_err() {
                return failed(cmd);
            }
            answer.await.unwrap_or_else(|_| failed(cmd))
        })
    }

    fn ask(&self, what: String) -> BoxFuture<Result<(), String>> {
        let inbox = self.inbox.clone();
        let turn_id = self.turn_id.clone();
        Box::pin(async move {
            let (asked, verdict) = oneshot::channel();
            let ask = Command::AskToRun {
                turn_id,
                cmd: what,
                verdict: asked,
            };
            if inbox.send(ask).await.is_err() {
                return Err("the room stopped".into());
            }
            match verdict.await {
                Ok(verdict) => verdict,
                Err(_) => Err("the room stopped".into()),
            }
        })
    }

    fn write_file(&self, path: String, bytes: Vec<u8>) -> BoxFuture<Result<(), String>> {
        use crate::sandbox::SandboxError;
        let sandbox = self.sandbox.clone();
        let first = self.before_first_change();
        Box::pin(async move {
            if bytes.len() > crate::protocol::MAX_FILE_BODY {
                return Err(format!(
                    "too large: a file may be at most {} bytes",
                    crate::protocol::MAX_FILE_BODY
                ));
            }
            first.await;
            let body: crate::sandbox::files::FileBody =
                Box::pin(futures_util::stream::once(async move {
                    Ok(bytes::Bytes::from(bytes))
                }));
            match sandbox.write_file(path, body).await {
                Ok(_) => Ok(()),
                Err(SandboxError::BadPath(why)) => Err(why),
                Err(e) => Err(e.to_string()),
            }
        })
    }

    fn edited(&self, path: String, added: u64, removed: u64) -> BoxFuture<()> {
        let event = Event::Edit {
            by: "agent".into(),
            turn_id: self.turn_id.clone(),
            path,
            added,
            removed,
        };
        let inbox = self.inbox.clone();
        Box::pin(async move {
            // Kept for after the turn's reply, as its commands' records are.
            let (done, stored) = oneshot::channel();
            if inbox.send(Command::Record { event, done }).await.is_ok() {
                let _ = stored.await;
            }
        })
    }

    fn read_file(&self, path: String) -> BoxFuture<crate::ai::context::FileRead> {
        use crate::ai::context::FileRead;
        use crate::sandbox::SandboxError;
        let sandbox = self.sandbox.clone();
        Box::pin(async move {
            match sandbox.read_file(path.clone()).await {
                Ok(bytes) => FileRead::Bytes(bytes),
                // A folder is not read as a file: it lists.
                Err(_) if sandbox.list_dir(path.clone()).await.is_ok() => FileRead::Folder,
                Err(SandboxError::BadPath(_)) => FileRead::BadPath,
                Err(SandboxError::NoFile) => FileRead::Missing,
                Err(e) => FileRead::Failed(e.to_string()),
            }
        })
    }

    fn model(&self) -> Option<String> {
        self.model.clone()
    }

    fn terminal_screen(&self) -> BoxFuture<Option<(crate::protocol::TermSize, String)>> {
        let terminal = self.terminal.clone();
        Box::pin(async move {
            let (handle, size) = terminal?;
            Some((size, handle.screen().await?))
        })
    }
}

impl RoomActor {
    /// Starts the next queued turn when none runs.
    pub(crate) fn next_turn(&mut self) {
        if self.current.is_some() {
            return;
        }
        let Some(pending) = self.turns.pop_front() else {
            return;
        };
        let turn_id = format!("t{:016x}", rand::random::<u64>());
        let cancel = CancellationToken::new();
        // Everything said so far, replies to earlier turns included, but
        // not what people asked after this message (their own turns come
        // later); this turn's message last.
        let mut history = Vec::with_capacity(self.messages.len());
        let mut asked = None;
        for m in &self.messages {
            if m.id == pending.upto {
                asked = Some(m.clone());
            } else if !(m.role == Role::User && m.id > pending.upto) {
                history.push(m.clone());
            }
        }
        history.extend(asked);
        let host = Arc::new(RoomHost {
            inbox: self.inbox.clone(),
            frames: self.frames.clone(),
            turn_id: turn_id.clone(),
            by_connection: pending.by_connection.clone(),
            sandbox: self.sandbox.clone(),
            ran: Default::default(),
            model: self.agent_state().model,
            terminal: self.terminal_for_turn(),
        });
        let agent = self.shared.agent.clone();
        let inbox = self.inbox.clone();
        let (id, id2, token) = (turn_id.clone(), turn_id.clone(), cancel.clone());
        tokio::spawn(async move {
            // A turn that panics still ends, as a failed one: the queue
            // behind it must not wait forever.
            let turn = tokio::spawn(async move { agent.run_turn(host, history, id2, token).await });
            let result = turn.await.unwrap_or_else(|e| {
                tracing::error!("the agent's turn failed: {e}");
                Err(TurnError::Model(format!("the agent failed: {e}")))
            });
            let _ = inbox
                .send(Command::TurnDone {
                    turn_id: id,
                    result,
                })
                .await;
        });
        self.current = Some(CurrentTurn {
            id: turn_id,
            cancel,
            pending,
            running: None,
            ran: Vec::new(),
            discarded: false,
            cancelled_by: None,
            after_reply: Vec::new(),
        });
    }

    /// Runs a command for the current turn, like an exec by "agent".
    pub(super) async fn agent_run(
        &mut self,
        turn_id: String,
        cmd: String,
        reply: oneshot::Sender<Run>,
    ) {
        let live = self
            .current
            .as_ref()
            .filter(|c| c.id == turn_id && !c.cancel.is_cancelled());
        let Some(by_connection) = live.map(|c| c.pending.by_connection.clone()) else {
            let _ = reply.send(Run::failed(cmd, CANCELLED));
            return;
        };
        let spec = self
            .shared
            .policy
            .spec(cmd.clone(), None, None, BTreeMap::new());
        let then = Then::Agent(reply);
        let exec_id = self
            .launch(
                cmd,
                spec,
                super::Origin {
                    by: "agent".into(),
                    connection: by_connection,
                    client_id: None,
                },
                then,
            )
            .await;
        if let Some(current) = &mut self.current {
            current.ran.push(exec_id.clone());
            current.running = Some(exec_id);
        }
    }

    /// Stores the turn's result, answers its message and starts the next turn.
    pub(super) async fn turn_done(
        &mut self,
        turn_id: String,
        result: Result<AgentReply, TurnError>,
    ) {
        if self.current.as_ref().is_none_or(|c| c.id != turn_id) {
            return;
        }
        let Some(current) = self.current.take() else {
            return;
        };
        let pending = current.pending;
        if current.discarded {
            pending.answer(Ok(no_reply(CLEANED, self.messages())));
        } else {
            let after_reply = current.after_reply;
            let answer = match (result, current.cancelled_by) {
                (Err(TurnError::Cancelled(partial)), by) => {
                    let by = by.unwrap_or_else(|| "duet".into());
                    self.cancelled(current.id, partial, by, after_reply).await
                }
                // It ended as it was cancelled: cancelled all the same.
                (Ok(agent), Some(by)) => self.cancelled(current.id, agent, by, after_reply).await,
                (Ok(agent), None) => {
                    let text = agent.text.clone();
                    let stored = self.store(agent_message(agent)).await;
                    self.store_after_reply(after_reply).await;
                    stored.map(|_| {
                        Reply::ok(MessageResponse {
                            reply: Some(text),
                            error: None,
                            messages: self.messages(),
                        })
                    })
                }
                (Err(TurnError::ModelPartway { error, done }), _) => {
                    let user = pending.user.clone();
                    self.failed_partway(user, error, done, after_reply).await
                }
                (Err(e), _) => {
                    let text = e.to_string();
                    let stored = self
                        .store_message(Role::System, pending.user.clone(), text.clone(), None)
                        .await;
                    self.store_after_reply(after_reply).await;
                    stored.map(|_| no_reply(&text, self.messages()))
                }
            };
            if let (Some(client_id), Ok(reply)) = (&pending.client_id, &answer) {
                self.keep_client_reply(client_id, reply).await;
            }
            pending.answer(answer);
        }
        self.restores_after_turn().await;
        self.next_turn();
    }

    /// The server stops during the turn: what it had streamed is stored as
    /// the agent's reply, cut off by `duet`, then a note saying so; its
    /// request (and a resend of its `clientId`) is answered the same.
    pub(super) async fn turn_stopped(&mut self, result: Result<AgentReply, TurnError>) {
        let Some(current) = self.current.take() else {
            return;
        };
        let pending = current.pending;
        if current.discarded {
            pending.answer(Ok(no_reply(CLEANED, self.messages())));
            return;
        }
        let partial = match result {
            Ok(agent)
            | Err(TurnError::Cancelled(agent))
            | Err(TurnError::ModelPartway { done: agent, .. }) => Some(agent),
            Err(_) => None,
        };
        if let Some(partial) = partial.filter(|p| !p.text.is_empty() || !p.runs.is_empty()) {
            let draft = DuetMessage {
                cancelled_by: Some("duet".into()),
                ..agent_message(partial)
            };
            if let Err(e) = self.store(draft).await {
                tracing::warn!(room = %self.id, "storing a cut reply failed: {}", e.body.error);
            }
        }
        let note = self
            .store_message(
                Role::System,
                pending.user.clone(),
                TURN_STOPPED.into(),
                None,
            )
            .await;
        let answer = note.map(|_| no_reply(TURN_STOPPED, self.messages()));
        if let (Some(client_id), Ok(reply)) = (&pending.client_id, &answer) {
            self.keep_client_reply(client_id, reply).await;
        }
        pending.answer(answer);
    }

    /// Stores what a cancelled turn had replied (`cancelledBy`), then the
    /// `cancel` record; its request is answered that it was cancelled.
    async fn cancelled(
        &mut self,
        turn_id: String,
        partial: AgentReply,
        by: String,
        after_reply: Vec<DuetMessage>,
    ) -> OpResult {
        let draft = DuetMessage {
            cancelled_by: Some(by.clone()),
            ..agent_message(partial)
        };
        self.store(draft).await?;
        self.record_or_log(Event::Cancel { by, turn_id }).await;
        self.store_after_reply(after_reply).await;
        Ok(no_reply(CANCELLED, self.messages()))
    }

    /// Stores what the rounds before a model's failure did (its sentence
    /// last), then the `system` message of the model's error; its request
    /// is answered with that error.
    async fn failed_partway(
        &mut self,
        user: Option<String>,
        error: String,
        done: AgentReply,
        after_reply: Vec<DuetMessage>,
    ) -> OpResult {
        self.store(agent_message(done)).await?;
        let stored = self
            .store_message(Role::System, user, error.clone(), None)
            .await;
        self.store_after_reply(after_reply).await;
        stored.map(|_| no_reply(&error, self.messages()))
    }

    /// Stores the records kept for after a turn's reply.
    async fn store_after_reply(&mut self, drafts: Vec<DuetMessage>) {
        for draft in drafts {
            if let Err(e) = self.store(draft).await {
                tracing::warn!(room = %self.id, "storing a record failed: {}", e.body.error);
            }
        }
    }
}
