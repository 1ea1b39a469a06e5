//! The room's checkpoints (docs/protocol.md "Checkpoints, restore and
//! fork"): the list in the state, taking one (a person's, or the
//! automatic one before an agent turn's first command), and finishing a
//! restore in the contract's order (the operations themselves are in
//! `ops/checkpoint.rs`). The copies are the sandbox's; the actor keeps the
//! list and never awaits a copy: tasks do, and report back through its
//! inbox.

use super::{Answer, Command, RoomActor, state::Change};
use crate::protocol::{Checkpoint, CheckpointResponse, Event, RestoreResponse, WORKSPACE, now_ms};
use crate::sandbox::SandboxError;
use crate::server::errors::ApiError;
use crate::server::ops::Reply;

use std::collections::HashSet;
use tokio::sync::oneshot;

/// The checkpoints of a room.
#[derive(Default)]
pub(in crate::server) struct Checkpoints {
    /// Oldest first: the state's `checkpoints`.
    pub(in crate::server) list: Vec<Checkpoint>,
    /// The next one's number (`c{next}`).
    next: u64,
    /// Names of those being taken (not yet listed).
    taking: HashSet<String>,
    /// Restores done while the turn they cancelled had not ended: they
    /// are recorded after its records.
    restored: Vec<Restored>,
    /// The list changed by an automatic checkpoint and was not sent yet.
    unpublished: bool,
}

impl Checkpoints {
    pub(super) fn new(list: Vec<Checkpoint>, next: u64) -> Self {
        Checkpoints {
            list,
            next: next.max(1),
            ..Default::default()
        }
    }

    pub(in crate::server) fn named(&self, name: &str) -> bool {
        self.taking.contains(name) || self.list.iter().any(|c| c.name == name)
    }

    /// The list, when a change of it waits to be sent.
    pub(super) fn take_unpublished(&mut self) -> Option<serde_json::Value> {
        std::mem::take(&mut self.unpublished)
            .then(|| serde_json::to_value(&self.list).unwrap_or_default())
    }

    pub(in crate::server) fn find(&self, id: &str) -> Option<&Checkpoint> {
        self.list.iter().find(|c| c.id == id)
    }
}

/// Who waits for a checkpoint being taken.
pub(crate) enum Waiting {
    /// A person's request.
    Request(Answer),
    /// The turn, before its first command (told whatever happened).
    Turn(oneshot::Sender<()>),
    /// A push, after its files are in place: its record is stored with
    /// the checkpoint (`None` when it did not fit), then it is told.
    Push {
        push: Push,
        reply: oneshot::Sender<Option<Checkpoint>>,
    },
}

/// What a push wrote, for its record.
pub(crate) struct Push {
    pub(crate) by: String,
    /// The folder (`""`: the workspace).
    pub(crate) path: String,
    pub(crate) pushed: crate::sandbox::Pushed,
}

/// A restore that ended in the sandbox.
pub(crate) struct Restored {
    pub(in crate::server) checkpoint: Checkpoint,
    pub(in crate::server) by: String,
    pub(in crate::server) result: Result<(), SandboxError>,
    pub(in crate::server) answer: Answer,
}

/// What the checkpoint tasks (and the turn) tell the room.
pub(crate) enum CheckpointNews {
    /// A checkpoint was taken (its `size` filled in), or could not be.
    Taken {
        checkpoint: Checkpoint,
        number: u64,
        result: Result<u64, SandboxError>,
        waiting: Waiting,
    },
    Restored(Restored),
    /// A push's files are in place: take its `push-N` checkpoint.
    Pushed {
        push: Push,
        reply: oneshot::Sender<Option<Checkpoint>>,
    },
    /// The turn is about to run its first command.
    BeforeTurnRuns {
        turn_id: String,
        reply: oneshot::Sender<()>,
    },
}

/// The 404 of a checkpoint id the room does not have.
pub(in crate::server) fn unknown(id: &str) -> ApiError {
    ApiError::not_found(
        "no such checkpoint",
        "checkpointId",
        format!("no checkpoint {id:?} in this room"),
    )
}

/// The answer of a checkpoint (or a fork) that could not be made.
pub(in crate::server) fn refused(e: SandboxError) -> ApiError {
    e.failing("the checkpoint").into()
}

impl RoomActor {
    /// Starts taking a checkpoint; `turn_id` makes it an automatic one.
    pub(in crate::server) fn take(
        &mut self,
        name: Option<String>,
        by: String,
        turn_id: Option<String>,
        waiting: Waiting,
    ) {
        let number = self.checkpoints.next;
        self.checkpoints.next += 1;
        let auto = turn_id.is_some();
        let name = name.unwrap_or_else(|| {
            let stem = match (&waiting, auto) {
                (Waiting::Push { .. }, _) => "push",
                (_, true) => "auto",
                (_, false) => "checkpoint",
            };
            let mut name = format!("{stem}-{number}");
            while self.checkpoints.named(&name) {
                name.push_str("-1");
            }
            name
        });
        self.checkpoints.taking.insert(name.clone());
        let checkpoint = Checkpoint {
            id: format!("c{number}"),
            name,
            ts: now_ms() as u64,
            by,
            size: 0,
            auto,
            turn_id,
            expires_at: None,
        };
        let (sandbox, store, room, inbox) = (
            self.sandbox.clone(),
            self.shared.store.clone(),
            self.id.clone(),
            self.inbox.clone(),
        );
        tokio::spawn(async move {
            // Counted before the copy: an id is never used twice, even
            // when the server stops midway.
            if let Err(e) = store.reserve_checkpoint(room, number).await {
                tracing::warn!("counting a checkpoint failed: {e}");
            }
            let result = sandbox.checkpoint_create(checkpoint.id.clone()).await;
            let news = CheckpointNews::Taken {
                checkpoint,
                number,
                result,
                waiting,
            };
            let _ = inbox.send(Command::Checkpoint(news)).await;
        });
    }

    /// Handles what a checkpoint task reports.
    pub(super) async fn checkpoint_news(&mut self, news: CheckpointNews) {
        match news {
            CheckpointNews::Taken {
                checkpoint,
                number,
                result,
                waiting,
            } => self.taken(checkpoint, number, result, waiting).await,
            CheckpointNews::Restored(restored) => {
                if self.current.is_some() {
                    // The cancelled turn has not ended: its records first.
                    self.checkpoints.restored.push(restored);
                } else {
                    self.finish_restore(restored).await;
                }
            }
            CheckpointNews::Pushed { push, reply } => {
                let by = push.by.clone();
                self.take(None, by, None, Waiting::Push { push, reply });
            }
            CheckpointNews::BeforeTurnRuns { turn_id, reply } => {
                let live = self.current.as_ref().is_some_and(|c| c.id == turn_id);
                if live && self.shared.auto_checkpoints > 0 {
                    self.take(None, "duet".into(), Some(turn_id), Waiting::Turn(reply));
                } else {
                    let _ = reply.send(());
                }
            }
        }
    }

    async fn taken(
        &mut self,
        mut checkpoint: Checkpoint,
        number: u64,
        result: Result<u64, SandboxError>,
        waiting: Waiting,
    ) {
        self.checkpoints.taking.remove(&checkpoint.name);
        if let Waiting::Push { push, reply } = waiting {
            let kept = match result {
                Ok(size) => {
                    checkpoint.size = size;
                    self.keep_checkpoint(checkpoint.clone(), number, false)
                        .await;
                    Some(checkpoint)
                }
                Err(e) => {
                    tracing::warn!(room = %self.id, checkpoint = %checkpoint.id, "no checkpoint after a push: {e}");
                    None
                }
            };
            let event = Event::Push {
                by: push.by,
                path: push.path,
                files: push.pushed.files,
                bytes: push.pushed.bytes,
                deleted: push.pushed.deleted,
                checkpoint_id: kept.as_ref().map(|c| c.id.clone()),
            };
            self.record_or_log(event).await;
            let _ = reply.send(kept);
            return;
        }
        let answer = match result {
            Ok(size) => {
                checkpoint.size = size;
                self.keep_checkpoint(checkpoint.clone(), number, true).await;
                Ok(Reply::ok(CheckpointResponse { checkpoint }))
            }
            Err(e) => {
                tracing::warn!(room = %self.id, checkpoint = %checkpoint.id, "no checkpoint: {e}");
                Err(refused(e))
            }
        };
        match waiting {
            Waiting::Request(reply) => {
                let _ = reply.send(answer);
            }
            Waiting::Turn(reply) => {
                let _ = reply.send(());
            }
            Waiting::Push { .. } => {}
        }
    }

    /// Lists and stores a new checkpoint (a person's with its record when
    /// `record`: a push's goes in the push's own), then lets go of the
    /// oldest automatic ones beyond the room's count.
    async fn keep_checkpoint(&mut self, checkpoint: Checkpoint, number: u64, record: bool) {
        let stored = self
            .shared
            .store
            .insert_checkpoint(self.id.clone(), number, checkpoint.clone())
            .await;
        if let Err(e) = stored {
            tracing::warn!(room = %self.id, "storing a checkpoint failed: {e}");
        }
        self.checkpoints.list.push(checkpoint.clone());
        let autos = self.checkpoints.list.iter().filter(|c| c.auto).count();
        let mut excess = autos.saturating_sub(self.shared.auto_checkpoints);
        while excess > 0 {
            let Some(i) = self.checkpoints.list.iter().position(|c| c.auto) else {
                break;
            };
            let old = self.checkpoints.list.remove(i);
            self.forget_checkpoint(old.id);
            excess -= 1;
        }
        if checkpoint.auto && self.current.is_some() {
            // In the state from now on; sent with the turn's next message.
            self.checkpoints.unpublished = true;
            self.state_cache = None;
        } else {
            self.publish_checkpoints();
        }
        if record && !checkpoint.auto {
            let event = Event::Checkpoint {
                by: checkpoint.by,
                checkpoint_id: checkpoint.id,
                name: checkpoint.name,
            };
            self.record_or_log(event).await;
        }
    }

    /// Deletes a checkpoint's files and row, in the background.
    pub(in crate::server) fn forget_checkpoint(
        &self,
        id: String,
    ) -> tokio::task::JoinHandle<Result<(), String>> {
        let (sandbox, store, room) = (
            self.sandbox.clone(),
            self.shared.store.clone(),
            self.id.clone(),
        );
        tokio::spawn(async move {
            store
                .delete_checkpoint(room, id.clone())
                .await
                .map_err(|e| e.to_string())?;
            sandbox
                .checkpoint_delete(id)
                .await
                .map_err(|e| e.to_string())
        })
    }

    pub(in crate::server) fn publish_checkpoints(&mut self) {
        self.checkpoints.unpublished = false;
        let value = serde_json::to_value(&self.checkpoints.list).unwrap_or_default();
        self.publish(&[Change::Field("checkpoints", value)]);
    }

    /// Records the restores that waited for their turn's end.
    pub(super) async fn restores_after_turn(&mut self) {
        for restored in std::mem::take(&mut self.checkpoints.restored) {
            self.finish_restore(restored).await;
        }
    }

    async fn finish_restore(&mut self, restored: Restored) {
        let Restored {
            checkpoint,
            by,
            result,
            answer,
        } = restored;
        let reply = match result {
            Ok(()) => {
                // The sandbox stopped: the next command runs in a fresh shell.
                self.set_cwd(WORKSPACE.to_string());
                let event = Event::Restore {
                    by,
                    checkpoint_id: checkpoint.id,
                    name: checkpoint.name,
                };
                self.record_or_log(event).await;
                Ok(Reply::ok(RestoreResponse { restored: true }))
            }
            Err(SandboxError::NoCheckpoint) => Err(unknown(&checkpoint.id)),
            Err(e) => {
                self.set_cwd(WORKSPACE.to_string());
                Err(e.failing("the restore").into())
            }
        };
        let _ = answer.send(reply);
    }
}
