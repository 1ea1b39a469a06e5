//! What the rest of the server holds of a room: its handle, and the
//! requests (`Command`) the handle sends to the room's actor.

use super::exec::ExecDone;
use super::processes::{Followed, ProcCommand, Query};
use super::{Outgoing, access, checkpoints};
use crate::ai::{AgentReply, TurnError};
use crate::protocol::{Event, PresenceUser, TermSize};
use crate::sandbox::Sandbox;
use crate::server::errors::ApiError;
use crate::server::fanout;
use crate::server::ops::{Answer, OpResult, Request};
use crate::server::terminal::TermHandle;
use axum::extract::ws::Utf8Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};

/// What a joining connection receives: its first frames and its feed.
pub(crate) struct Joined {
    pub(crate) state: Utf8Bytes,
    pub(crate) presence: Utf8Bytes,
    pub(crate) frames: fanout::Receiver<Outgoing>,
}

/// A room's inbox. Commands travel boxed: the channel allocates its slots
/// a block at a time, each as large as the largest command, and an idle
/// room should not hold a block of those.
#[derive(Clone)]
pub(crate) struct Inbox(mpsc::Sender<Box<Command>>);

/// The actor's side of its inbox.
pub(crate) type Commands = mpsc::Receiver<Box<Command>>;

impl Inbox {
    /// An inbox for `capacity` commands, and its actor's side.
    pub(super) fn new(capacity: usize) -> (Inbox, Commands) {
        let (tx, rx) = mpsc::channel(capacity);
        (Inbox(tx), rx)
    }

    /// Queues `command`, waiting for room; fails when the actor ended.
    pub(crate) async fn send(&self, command: Command) -> Result<(), Gone> {
        self.0.send(Box::new(command)).await.map_err(|_| Gone)
    }
}

/// The room's actor has ended.
#[derive(Debug)]
pub(crate) struct Gone;

/// Requests to a room's actor.
pub(crate) enum Command {
    /// An HTTP or rpc operation (boxed: the inbox allocates its slots a
    /// block at a time, each as large as the largest command).
    Op {
        request: Box<Request>,
        reply: Answer,
    },
    /// A connection joins: it is added to presence and subscribed.
    Join {
        conn: u64,
        user: PresenceUser,
        /// It asked for state deltas.
        deltas: bool,
        /// The invite it came with (none: the server's token).
        invite: Option<String>,
        reply: oneshot::Sender<Joined>,
    },
    /// A connection left.
    Leave { conn: u64 },
    /// The agent's turn asks whether it may run a command (the policy,
    /// maybe a person's answer).
    AskToRun {
        turn_id: String,
        cmd: String,
        verdict: oneshot::Sender<access::Verdict>,
    },
    /// Nobody answered an approval in time.
    ApprovalTimeout { approval_id: String },
    /// The agent's turn runs a command.
    AgentRun {
        turn_id: String,
        cmd: String,
        reply: oneshot::Sender<crate::protocol::Run>,
    },
    /// A command ended.
    ExecDone(Box<ExecDone>),
    /// The agent's turn ended.
    TurnDone {
        turn_id: String,
        result: Result<AgentReply, TurnError>,
    },
    /// Answered once the room has loaded (what it notes on loading is stored).
    Ready(oneshot::Sender<()>),
    /// Something happened that the room keeps a record of (an upload, an
    /// interrupt); `done` is told once it is stored.
    Record {
        event: Event,
        done: oneshot::Sender<()>,
    },
    /// A socket attaches to the shared terminal: the running one, or a new
    /// one opened by `by` (none: only a running one, for a viewer).
    TermOpen {
        by: Option<String>,
        size: Option<TermSize>,
        reply: oneshot::Sender<Option<TermHandle>>,
    },
    /// `term_close`.
    TermClose {
        term_id: String,
        reply: oneshot::Sender<Result<(), ApiError>>,
    },
    /// The background processes: what they report, what is asked of them.
    Process(ProcCommand),
    /// Checkpoints: what their tasks report, and a turn about to run.
    Checkpoint(checkpoints::CheckpointNews),
}

/// Handle to a room's actor. Cheap to clone.
#[derive(Clone)]
pub(crate) struct RoomHandle {
    pub(super) inbox: Inbox,
    /// The room's broadcast, for frames that need no state (typing).
    pub(crate) frames: fanout::Sender<Outgoing>,
    /// The room's sandbox, for file transfers (which need no room state).
    pub(crate) sandbox: Arc<dyn Sandbox>,
    /// Counts the handles alive: the room unloads only when the server's
    /// own is the last.
    pub(super) holders: Arc<()>,
    /// How many distinct people are connected now (the actor counts).
    pub(super) people: Arc<AtomicUsize>,
}

impl RoomHandle {
    /// Resolves once the room's actor stopped (its inbox closed): after
    /// a server stop, its last frames were sent.
    pub(crate) async fn stopped(&self) {
        self.inbox.0.closed().await;
    }

    /// How many distinct people (socket `user` names) are connected now.
    pub(crate) fn people(&self) -> usize {
        self.people.load(Ordering::Relaxed)
    }

    /// Performs an operation and waits for its answer.
    pub(crate) async fn perform(&self, request: Request) -> OpResult {
        let (reply, answer) = oneshot::channel();
        if self
            .inbox
            .send(Command::Op {
                request: Box::new(request),
                reply,
            })
            .await
            .is_err()
        {
            return Err(ApiError::room_gone());
        }
        answer.await.unwrap_or_else(|_| Err(ApiError::room_gone()))
    }

    /// Adds a connection to the room; `None` when the room stopped.
    pub(crate) async fn join(
        &self,
        conn: u64,
        user: PresenceUser,
        deltas: bool,
        invite: Option<String>,
    ) -> Option<Joined> {
        let (reply, answer) = oneshot::channel();
        self.inbox
            .send(Command::Join {
                conn,
                user,
                deltas,
                invite,
                reply,
            })
            .await
            .ok()?;
        answer.await.ok()
    }

    /// Waits until the room has loaded; false when it stopped.
    pub(crate) async fn ready(&self) -> bool {
        let (reply, answer) = oneshot::channel();
        self.inbox.send(Command::Ready(reply)).await.is_ok() && answer.await.is_ok()
    }

    /// Removes a connection from the room.
    pub(crate) async fn leave(&self, conn: u64) {
        let _ = self.inbox.send(Command::Leave { conn }).await;
    }

    /// Stores a record of `event` and waits until it is stored (or the
    /// room stopped).
    pub(crate) async fn record(&self, event: Event) {
        record_in(&self.inbox, event).await;
    }

    /// The room's shared terminal, opened by `by` at `size` if none runs
    /// (`None` when none runs and `by` is none).
    pub(crate) async fn terminal(
        &self,
        by: Option<String>,
        size: Option<TermSize>,
    ) -> Result<Option<TermHandle>, ApiError> {
        let (reply, answer) = oneshot::channel();
        let command = Command::TermOpen { by, size, reply };
        if self.inbox.send(command).await.is_err() {
            return Err(ApiError::room_gone());
        }
        answer.await.map_err(|_| ApiError::room_gone())
    }

    /// Reads the processes' list, one of them, its logs, or the ports.
    pub(crate) async fn read_processes(&self, query: Query) -> OpResult {
        let (reply, answer) = oneshot::channel();
        let command = Command::Process(ProcCommand::Read { query, reply });
        if self.inbox.send(command).await.is_err() {
            return Err(ApiError::room_gone());
        }
        answer.await.unwrap_or_else(|_| Err(ApiError::room_gone()))
    }

    /// The log of process `id` so far, for a socket that follows it.
    pub(crate) async fn follow_process(&self, id: String) -> Result<Followed, ApiError> {
        let (reply, answer) = oneshot::channel();
        let command = Command::Process(ProcCommand::Follow { id, reply });
        if self.inbox.send(command).await.is_err() {
            return Err(ApiError::room_gone());
        }
        answer.await.unwrap_or_else(|_| Err(ApiError::room_gone()))
    }

    /// After a push's files are in place: takes its `push-N` checkpoint
    /// and stores its record; answers the checkpoint (`None`: it did not
    /// fit the disk).
    pub(crate) async fn pushed(
        &self,
        push: checkpoints::Push,
    ) -> Result<Option<crate::protocol::Checkpoint>, ApiError> {
        let (reply, answer) = oneshot::channel();
        let news = checkpoints::CheckpointNews::Pushed { push, reply };
        if self.inbox.send(Command::Checkpoint(news)).await.is_err() {
            return Err(ApiError::room_gone());
        }
        answer.await.map_err(|_| ApiError::room_gone())
    }

    /// The room's checkpoints now (the state's list).
    pub(crate) async fn checkpoint_list(
        &self,
    ) -> Result<Vec<crate::protocol::Checkpoint>, ApiError> {
        let reply = self.read_processes(Query::Checkpoints).await?;
        let parsed: crate::protocol::CheckpointsResponse = serde_json::from_str(&reply.body)
            .map_err(|e| ApiError::internal(format!("the checkpoints could not be read: {e}")))?;
        Ok(parsed.checkpoints)
    }

    /// Ends the shared terminal `term_id`; answers once it ended.
    pub(crate) async fn close_terminal(&self, term_id: String) -> Result<(), ApiError> {
        let (reply, answer) = oneshot::channel();
        let command = Command::TermClose { term_id, reply };
        if self.inbox.send(command).await.is_err() {
            return Err(ApiError::room_gone());
        }
        answer.await.unwrap_or_else(|_| Err(ApiError::room_gone()))
    }
}

/// Asks the actor behind `inbox` to store a record of `event`, and waits.
pub(crate) async fn record_in(inbox: &Inbox, event: Event) {
    let (done, stored) = oneshot::channel();
    if inbox.send(Command::Record { event, done }).await.is_ok() {
        let _ = stored.await;
    }
}
