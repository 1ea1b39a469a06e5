//! One actor task per room. It owns the room's state (recent messages and
//! commands, presence, the turn queue) and its sandbox handle, and
//! broadcasts frames, serialized once, to the room's connections. It never
//! awaits a command or a model call: those run in spawned tasks that report
//! back to its inbox.

mod access;
mod checkpoints;
mod exec;
mod handle;
mod idle;
mod message;
mod presence;
mod process_pump;
mod processes;
mod records;
mod state;
mod terminal;
mod turn;

use super::errors::ApiError;
use super::ops::{Answer, Reply, Request};
use super::registry::Shared;
use super::store::RoomRow;
use crate::protocol::{
    Addressee, DuetMessage, Event, ExecRecord, PresenceUser, Role, STATE_MESSAGES, ShellState,
    TerminalState, WORKSPACE, now_ms,
};
use crate::sandbox::{Sandbox, SandboxId};
use crate::server::fanout;
use crate::server::first_use::OnFirstUse;
use crate::server::terminal::{TermHandle, TermNews};
use axum::extract::ws::Utf8Bytes;
use serde::Serialize;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use tokio::sync::mpsc;

pub(crate) use access::AccessNews;
pub(in crate::server) use checkpoints::{
    CheckpointNews, Push, Restored, Waiting, refused, unknown as unknown_checkpoint,
};
use exec::Launched;
pub(crate) use exec::{Origin, Then};
pub(crate) use handle::record_in;
pub(crate) use handle::{Command, Inbox, Joined, RoomHandle};
pub(in crate::server) use presence::Touched;
pub(in crate::server) use processes::{
    Entry as ProcessEntry, KILL_GRACE, unknown as unknown_process,
};
pub(crate) use processes::{ProcCommand, Query};
pub(in crate::server) use records::draft;
pub(in crate::server) use state::Change;
use turn::CurrentTurn;
pub(crate) use turn::{PendingTurn, no_reply};

/// Frames a connection may fall behind before it is dropped (slots are
/// allocated as frames come, and given back once every socket read them).
const BROADCAST_CAPACITY: usize = 1024;
/// Requests queued at a room before senders wait.
const INBOX_CAPACITY: usize = 256;

/// A frame for the room's connections, serialized once.
#[derive(Debug)]
pub(crate) struct OutFrame {
    pub(crate) text: Utf8Bytes,
    /// What sockets that asked for state deltas get instead of `text`
    /// (`None`: the same as everyone).
    pub(crate) deltas: Option<Vec<Utf8Bytes>>,
    /// The connection that must not receive it (its own typing).
    pub(crate) skip: Option<u64>,
    /// Set on a terminal's `exit`: sockets attached to it may have had it
    /// from the terminal already.
    pub(crate) term_exit: Option<String>,
    /// Set on a process's output: only sockets that follow it get it, and
    /// only past the output frame number they started following at.
    pub(crate) process_output: Option<(String, u64)>,
    /// Set on a process's `exit`: a socket waiting for its follow's answer
    /// holds it behind the output.
    pub(crate) process_exit: Option<String>,
    /// Set when an invite changed: its sockets act on it (`text`, if not
    /// empty, goes to every socket).
    pub(crate) access: Option<AccessNews>,
}

impl OutFrame {
    /// A frame for every connection, the same text for all.
    pub(crate) fn plain(text: Utf8Bytes) -> Self {
        OutFrame {
            text,
            deltas: None,
            skip: None,
            term_exit: None,
            process_output: None,
            process_exit: None,
            access: None,
        }
    }
}

impl OutFrame {
    /// The frames a connection gets; `deltas`: it asked for state deltas.
    pub(crate) fn texts(&self, deltas: bool) -> &[Utf8Bytes] {
        match &self.deltas {
            Some(frames) if deltas => frames,
            // Built for nobody: no socket without deltas was connected.
            Some(_) if self.text.is_empty() => &[],
            _ => std::slice::from_ref(&self.text),
        }
    }
}

/// What the room's broadcast carries: shared, so each of its slots is small.
pub(crate) type Outgoing = Arc<OutFrame>;

/// A frame for everyone but `skip`.
pub(crate) fn outgoing(text: Utf8Bytes, skip: Option<u64>) -> Outgoing {
    Arc::new(OutFrame {
        skip,
        ..OutFrame::plain(text)
    })
}

/// Serializes a frame for the wire.
pub(crate) fn frame_text(frame: &impl Serialize) -> Utf8Bytes {
    match serde_json::to_string(frame) {
        Ok(s) => Utf8Bytes::from(s),
        Err(e) => Utf8Bytes::from(format!(
            r#"{{"type":"duet_error","error":"frame could not be serialized: {e}"}}"#
        )),
    }
}

/// Sleeps until `at` (forever without one).
pub(crate) async fn sleep_until(at: Option<tokio::time::Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

/// Sends a frame to every connection of a room (but `skip`).
pub(crate) fn send_frame(
    frames: &fanout::Sender<Outgoing>,
    frame: &impl Serialize,
    skip: Option<u64>,
) {
    let _ = frames.send(outgoing(frame_text(frame), skip));
}

/// Text of the answer to turns dropped by a cleanup.
pub(in crate::server) const CLEANED: &str = "the room was cleaned up";
/// What a question cut off by a crash or restart is told (the note stored
/// in the room, and the answer to a repeat of its `clientId`).
pub(crate) const CUT_OFF: &str = "The server restarted before the agent answered; nothing was lost, \
                       but that question has no reply: ask again.";

/// How long a stopping server waits for a turn to hand back what it streamed.
const TURN_STOP: std::time::Duration = std::time::Duration::from_secs(3);

/// The room's actor and the state it owns.
pub(crate) struct RoomActor {
    pub(in crate::server) id: String,
    pub(in crate::server) shared: Arc<Shared>,
    pub(in crate::server) inbox: Inbox,
    frames: fanout::Sender<Outgoing>,
    pub(in crate::server) sandbox: Arc<dyn Sandbox>,
    pub(in crate::server) messages: VecDeque<DuetMessage>,
    pub(in crate::server) execs: VecDeque<ExecRecord>,
    next_message: u64,
    next_exec: u64,
    pub(in crate::server) presence: Vec<(u64, PresenceUser)>,
    /// The connections that did not ask for deltas (they get whole lists
    /// and states; none: those are not even serialized).
    pub(super) full_sockets: Vec<u64>,
    /// The distinct names of `presence`, counted for the room list.
    people: Arc<AtomicUsize>,
    pub(in crate::server) turns: VecDeque<PendingTurn>,
    pub(in crate::server) current: Option<CurrentTurn>,
    /// Bumped by cleanup: commands of an older generation are not recorded.
    pub(in crate::server) generation: u64,
    /// Commands launched and not yet done, by id (the oldest runs).
    pub(in crate::server) running: BTreeMap<String, Launched>,
    /// The state's `shell`: where the next command runs. A room loads with
    /// its sandbox stopped, so with a fresh shell to come.
    pub(in crate::server) shell: ShellState,
    /// The shared terminal, while one runs, and its part of the state.
    terminal: Option<TermHandle>,
    terminal_state: Option<TerminalState>,
    /// Where terminals tell the room how they are: made with the first
    /// terminal (most rooms never open one).
    term_news: OnFirstUse<mpsc::UnboundedSender<TermNews>, mpsc::UnboundedReceiver<TermNews>>,
    /// `term_close` requests waiting for the terminal to end.
    closing: terminal::Closing,
    /// The background processes, and the ports the sandbox listens on.
    pub(in crate::server) processes: processes::Processes,
    ports: Vec<crate::protocol::PortState>,
    /// The checkpoints of the workspace.
    pub(in crate::server) checkpoints: checkpoints::Checkpoints,
    /// Its invites, policy and the agent's commands waiting for a person.
    pub(in crate::server) access: access::RoomAccess,
    /// The model the room chose (used while the backend allows it).
    pub(in crate::server) model: Option<String>,
    /// The handles' count (see `RoomHandle::holders`).
    holders: std::sync::Weak<()>,
    pub(in crate::server) state_cache: Option<Utf8Bytes>,
    /// Messages and commands of the room per minute, HTTP and sockets.
    rates: super::limits::OpRates,
    /// Held while the actor runs (see `Shared::actors`).
    _running: Option<tokio::sync::OwnedSemaphorePermit>,
}

/// Starts the actor of room `id` from its stored row.
pub(crate) fn spawn(shared: Arc<Shared>, id: String, row: RoomRow) -> RoomHandle {
    let (inbox, rx) = Inbox::new(INBOX_CAPACITY);
    let frames = fanout::channel(BROADCAST_CAPACITY);
    let holders = Arc::new(());
    let people = Arc::new(AtomicUsize::new(0));
    let sandbox = shared.sandboxes.open(&SandboxId {
        room: id.clone(),
        opaque: row.opaque.clone(),
        slot: row.slot,
    });
    let shared_actors = shared.actors.clone();
    let rates = super::limits::OpRates::new(
        "in this room",
        shared.limits.room_messages_per_min,
        shared.limits.room_commands_per_min,
    );
    let actor = RoomActor {
        sandbox: sandbox.clone(),
        id,
        shared,
        inbox: inbox.clone(),
        frames: frames.clone(),
        messages: row.messages.into(),
        execs: row.execs.into(),
        next_message: row.next_message,
        next_exec: row.next_exec,
        presence: Vec::new(),
        full_sockets: Vec::new(),
        people: people.clone(),
        turns: VecDeque::new(),
        current: None,
        generation: 0,
        running: BTreeMap::new(),
        shell: ShellState {
            cwd: WORKSPACE.to_string(),
        },
        terminal: None,
        terminal_state: None,
        term_news: OnFirstUse::default(),
        closing: Vec::new(),
        processes: processes::Processes::restore(row.processes, row.last_process),
        ports: Vec::new(),
        checkpoints: checkpoints::Checkpoints::new(row.checkpoints, row.next_checkpoint),
        access: access::RoomAccess::new(row.invites, row.policy),
        model: row.model,
        holders: Arc::downgrade(&holders),
        state_cache: None,
        rates,
        _running: shared_actors.try_acquire_owned().ok(),
    };
    tokio::spawn(actor.run(rx));
    RoomHandle {
        inbox,
        frames,
        sandbox,
        holders,
        people,
    }
}

impl RoomActor {
    /// Serves the inbox, one command at a time, until the server stops
    /// or the room unloads after being idle.
    async fn run(mut self, mut rx: handle::Commands) {
        // Boxed, as the stop below: what runs once should not make every
        // loaded room's task larger while it idles.
        Box::pin(self.note_unfinished_turn()).await;
        let shutdown = self.shared.shutdown.clone();
        let idle_for = self.shared.room_idle;
        let mut idle_since = Some(tokio::time::Instant::now());
        let mut sandbox_stopped = self.sandbox.stopped();
        let mut ports = self.sandbox.ports();
        loop {
            let unload_at = idle_since.map(|t| t + idle_for);
            let command = tokio::select! {
                _ = shutdown.cancelled() => break,
                () = &mut sandbox_stopped => {
                    sandbox_stopped = self.sandbox.stopped();
                    self.set_cwd(WORKSPACE.to_string());
                    continue;
                }
                Ok(()) = ports.changed() => {
                    let listening = ports.borrow_and_update().clone();
                    self.set_ports(&listening);
                    continue;
                }
                Some(news) = self.term_news.recv() => {
                    self.terminal_news(news);
                    idle_since = self.idle().then(tokio::time::Instant::now);
                    continue;
                }
                c = rx.recv() => match c {
                    Some(c) => *c,
                    None => break,
                },
                () = sleep_until(unload_at), if unload_at.is_some() => {
                    if self.try_unload(&rx) {
                        return;
                    }
                    // Busy after all (a handle held, a command queued):
                    // counted again from now.
                    idle_since = Some(tokio::time::Instant::now());
                    continue;
                }
            };
            // Boxed: the operations' futures are large, and an idle room
            // should not carry room for them.
            Box::pin(self.handle(command)).await;
            idle_since = self.idle().then(tokio::time::Instant::now);
        }
        if let Some(current) = &self.current {
            current.cancel.cancel();
        }
        if shutdown.is_cancelled() {
            Box::pin(self.server_stopping(&mut rx)).await;
        }
        tracing::debug!(room = %self.id, "room stopped");
    }

    /// The server stops: commands that ended meanwhile are recorded, the
    /// cancelled turn keeps what it had streamed, and commands still
    /// running are stored as ended by the stop.
    async fn server_stopping(&mut self, rx: &mut handle::Commands) {
        let turn_id = self.current.as_ref().map(|c| c.id.clone());
        let waited = tokio::time::sleep(TURN_STOP);
        tokio::pin!(waited);
        while let Some(turn) = turn_id.as_deref() {
            let command = tokio::select! {
                c = rx.recv() => c.map(|c| *c),
                () = &mut waited => None,
            };
            match command {
                Some(Command::ExecDone(done)) => self.exec_done(*done).await,
                Some(Command::TurnDone { turn_id, result }) if turn_id == turn => {
                    self.turn_stopped(result).await;
                    break;
                }
                Some(_) => {}
                None => break,
            }
        }
        while let Ok(command) = rx.try_recv() {
            if let Command::ExecDone(done) = *command {
                self.exec_done(*done).await;
            }
        }
        self.stop_running().await;
        self.save_running_processes();
        // The server exits once the rooms stopped: what they sent is written first.
        if let Err(e) = self.shared.store.flushed().await {
            tracing::warn!(room = %self.id, "storing the room's last changes failed: {e}");
        }
    }

    /// A room is loaded with no turn running, so questions after the last
    /// answer were cut off by a crash or restart: the room is told, once
    /// (the note is itself the answer that ends the run of questions).
    async fn note_unfinished_turn(&mut self) {
        // What people said to each other and the records came after it.
        let last = self
            .messages
            .iter()
            .rev()
            .find(|m| m.event.is_none() && m.to != Some(Addressee::Room));
        let Some(last) = last else {
            return;
        };
        if last.role != Role::User {
            return;
        }
        let who = last.user_id.clone();
        let text = CUT_OFF.to_string();
        if let Err(e) = self.store_message(Role::System, who, text, None).await {
            tracing::warn!(room = %self.id, "noting an unfinished turn failed: {}", e.body.error);
        }
    }

    /// Dispatches one command.
    async fn handle(&mut self, command: Command) {
        match command {
            Command::Op { request, reply } => match self.rates.admit(request.op.method()) {
                Ok(()) => {
                    let Request { op, caller } = *request;
                    op.apply(self, caller, reply).await
                }
                Err(e) => {
                    let _ = reply.send(Err(e));
                }
            },
            Command::Join {
                conn,
                user,
                deltas,
                invite,
                reply,
            } => {
                self.access.joined(conn, invite);
                self.join(conn, user, deltas, reply);
            }
            Command::Leave { conn } => {
                self.access.left(conn);
                self.leave(conn);
            }
            Command::AskToRun {
                turn_id,
                cmd,
                verdict,
            } => self.ask_to_run(turn_id, cmd, verdict),
            Command::ApprovalTimeout { approval_id } => self.approval_timed_out(approval_id),
            Command::AgentRun {
                turn_id,
                cmd,
                reply,
            } => self.agent_run(turn_id, cmd, reply).await,
            Command::ExecDone(done) => self.exec_done(*done).await,
            Command::TurnDone { turn_id, result } => self.turn_done(turn_id, result).await,
            Command::Ready(reply) => {
                let _ = reply.send(());
            }
            Command::Checkpoint(news) => self.checkpoint_news(news).await,
            Command::Record { event, done } => {
                if self.is_news(&event) {
                    let of_turn = match &event {
                        Event::Interrupt { exec_id, .. } => self.turn_of(exec_id),
                        Event::Edit { turn_id, .. } => {
                            self.current.as_mut().filter(|c| &c.id == turn_id)
                        }
                        _ => None,
                    };
                    match of_turn {
                        Some(turn) => turn.after_reply.push(records::draft(event)),
                        None => self.record_or_log(event).await,
                    }
                }
                let _ = done.send(());
            }
            Command::TermOpen { by, size, reply } => {
                let _ = reply.send(self.open_terminal(by, size));
            }
            Command::TermClose { term_id, reply } => self.close_terminal(term_id, reply),
            Command::Process(command) => self.on_process(command),
        }
    }

    /// Sends a frame to every connection.
    pub(in crate::server) fn broadcast(&self, frame: &impl Serialize) {
        send_frame(&self.frames, frame, None);
    }

    /// Stores a message, keeps it in the state and broadcasts the state.
    async fn store_message(
        &mut self,
        role: Role,
        user_id: Option<String>,
        text: String,
        runs: Option<Vec<crate::protocol::Run>>,
    ) -> Result<DuetMessage, ApiError> {
        self.store(DuetMessage {
            role,
            user_id,
            text,
            runs,
            ..Default::default()
        })
        .await
    }

    /// Stores `draft` as the room's next message (its id and time set
    /// here), keeps it in the state and publishes it.
    pub(crate) async fn store(&mut self, draft: DuetMessage) -> Result<DuetMessage, ApiError> {
        let message = self.keep(draft).await?;
        // An automatic checkpoint taken during a turn goes out with the
        // next stored message: a turn's frames stay as they always were.
        match self.checkpoints.take_unpublished() {
            Some(list) => self.publish(&[
                state::Change::Message(&message),
                state::Change::Field("checkpoints", list),
            ]),
            None => self.publish(&[state::Change::Message(&message)]),
        }
        Ok(message)
    }

    /// Stores `draft` and keeps it in the state, unpublished.
    pub(in crate::server) async fn keep(
        &mut self,
        draft: DuetMessage,
    ) -> Result<DuetMessage, ApiError> {
        let n = self.next_message;
        let message = DuetMessage {
            id: format!("{n:012}"),
            ts: now_ms(),
            ..draft
        };
        self.shared
            .store
            .insert_message(self.id.clone(), message.clone(), n + 1)
            .await
            .map_err(|e| {
                tracing::error!(room = %self.id, "storing a message failed: {e}");
                ApiError::internal(format!("the message could not be stored: {e}"))
            })?;
        self.next_message = n + 1;
        self.messages.push_back(message.clone());
        while self.messages.len() > STATE_MESSAGES {
            self.messages.pop_front();
        }
        self.state_cache = None;
        Ok(message)
    }

    /// The shell's working directory is now `cwd`: the state says so.
    fn set_cwd(&mut self, cwd: String) {
        if self.shell.cwd != cwd {
            self.shell.cwd = cwd;
            let shell = serde_json::to_value(&self.shell).unwrap_or_default();
            self.publish(&[state::Change::Field("shell", shell)]);
        }
    }

    /// Ends the current turn (if `turn_id` names it, or none is named),
    /// for `by`.
    pub(crate) fn cancel(&mut self, turn_id: Option<&str>, by: String) -> bool {
        let Some(current) = &mut self.current else {
            return false;
        };
        if turn_id.is_some_and(|t| t != current.id) || current.cancel.is_cancelled() {
            return false;
        }
        current.cancel.cancel();
        current.cancelled_by = Some(by);
        if let Some(exec_id) = current.running.clone() {
            let sandbox = self.sandbox.clone();
            tokio::spawn(async move {
                sandbox.interrupt(Some(exec_id), true).await;
            });
        }
        let turn_id = current.id.clone();
        self.withdraw_approvals(&turn_id);
        true
    }
}
