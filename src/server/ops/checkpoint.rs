//! The checkpoint operations (docs/protocol.md "Checkpoints, restore and
//! fork"): `checkpoint_create` (`POST …/checkpoints {name?}`),
//! `checkpoint_restore` (`POST …/checkpoints/{id}/restore`),
//! `checkpoint_delete` (`DELETE …/checkpoints/{id}`) and `fork`
//! (`POST …/fork {to, checkpointId?}`).

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{
    DeleteResponse, Event, ForkResponse, checkpoint_name_problem, valid_room_id,
};
use crate::sandbox::Sandbox;
use crate::server::errors::ApiError;
use crate::server::registry::{Registry, Shared};
use crate::server::room::{
    CheckpointNews, Command, Restored, RoomActor, RoomHandle, Waiting, record_in, refused,
    unknown_checkpoint,
};
use std::sync::Arc;

/// Take a checkpoint of the workspace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckpointCreate {
    pub(crate) name: Option<String>,
}

impl Operation for CheckpointCreate {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let name = f.string("name");
        if let Some(problem) = name.as_deref().and_then(checkpoint_name_problem) {
            f.problem("name", problem);
        }
        Some(CheckpointCreate { name })
    }

    /// A person's checkpoint, named `name` (else a numbered name).
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        if let Some(name) = &self.name
            && room.checkpoints.named(name)
        {
            let taken = format!("the room has a checkpoint named {name:?}");
            let _ = answer.send(Err(ApiError::conflict(
                "a checkpoint has that name",
                "name",
                taken,
            )));
            return;
        }
        let by = caller.name_or_anonymous();
        room.take(self.name, by, None, Waiting::Request(answer));
    }
}

/// Make the workspace a checkpoint's copy again.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckpointRestore {
    pub(crate) checkpoint_id: String,
}

impl Operation for CheckpointRestore {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(CheckpointRestore {
            checkpoint_id: f.required_text("checkpointId")?,
        })
    }

    /// In the contract's order: the turn is cancelled, the running
    /// command interrupted, the processes and the terminal end; the
    /// sandbox (behind the commands queued before) stops and takes the
    /// checkpoint's files; then the record and the answer (`Restored`).
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let Some(checkpoint) = room.checkpoints.find(&self.checkpoint_id).cloned() else {
            let _ = answer.send(Err(unknown_checkpoint(&self.checkpoint_id)));
            return;
        };
        let by = caller.name_or_anonymous();
        room.cancel(None, by.clone());
        if !room.running.is_empty() {
            let sandbox = room.sandbox.clone();
            tokio::spawn(async move { sandbox.interrupt(None, true).await });
        }
        room.end_terminal(None, None);
        room.stop_all_processes();
        let (sandbox, inbox) = (room.sandbox.clone(), room.inbox.clone());
        tokio::spawn(async move {
            let result = sandbox.checkpoint_restore(checkpoint.id.clone()).await;
            let restored = Restored {
                checkpoint,
                by,
                result,
                answer,
            };
            let _ = inbox
                .send(Command::Checkpoint(CheckpointNews::Restored(restored)))
                .await;
        });
    }
}

/// Delete a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckpointDelete {
    pub(crate) checkpoint_id: String,
}

impl Operation for CheckpointDelete {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        Some(CheckpointDelete {
            checkpoint_id: f.required_text("checkpointId")?,
        })
    }

    /// Unlisted at once; answered when its files and row are gone.
    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        let id = self.checkpoint_id;
        let Some(i) = room.checkpoints.list.iter().position(|c| c.id == id) else {
            let _ = answer.send(Err(unknown_checkpoint(&id)));
            return;
        };
        room.checkpoints.list.remove(i);
        room.publish_checkpoints();
        let deleting = room.forget_checkpoint(id);
        tokio::spawn(async move {
            let deleted = match deleting.await {
                Ok(Ok(())) => Ok(Reply::ok(DeleteResponse { deleted: true })),
                Ok(Err(e)) => Err(ApiError::internal(format!(
                    "deleting the checkpoint failed: {e}"
                ))),
                Err(e) => Err(ApiError::internal(e.to_string())),
            };
            let _ = answer.send(deleted);
        });
    }
}

/// Start room `to` from this one's workspace (or a checkpoint).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Fork {
    pub(crate) to: String,
    pub(crate) checkpoint_id: Option<String>,
}

impl Operation for Fork {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let to = f.required_text("to");
        if to.as_deref().is_some_and(|t| !valid_room_id(t)) {
            f.problem(
                "to",
                "must be a room id: 1-63 characters of A-Z a-z 0-9 _ -, first and last alphanumeric",
            );
        }
        let checkpoint_id = f.string("checkpointId");
        Some(Fork {
            to: to?,
            checkpoint_id,
        })
    }

    /// Room `to` starts from a copy of this room's workspace (or of a
    /// checkpoint), with only a `fork` record, which this room stores too.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let Fork { to, checkpoint_id } = self;
        if let Some(id) = &checkpoint_id
            && room.checkpoints.find(id).is_none()
        {
            let _ = answer.send(Err(unknown_checkpoint(id)));
            return;
        }
        let by = caller.name_or_anonymous();
        let (shared, sandbox, inbox, from) = (
            room.shared.clone(),
            room.sandbox.clone(),
            room.inbox.clone(),
            room.id.clone(),
        );
        tokio::spawn(async move {
            let forked = fork_into(shared, sandbox, &from, &to, checkpoint_id.clone()).await;
            let reply = match forked {
                Ok(target) => {
                    let event = Event::Fork {
                        by,
                        from,
                        to: to.clone(),
                        checkpoint_id,
                    };
                    target.record(event.clone()).await;
                    record_in(&inbox, event).await;
                    Ok(Reply::ok(ForkResponse { room_id: to }))
                }
                Err(e) => Err(e),
            };
            let _ = answer.send(reply);
        });
    }
}

/// Claims room `to` (it must be new) and fills its workspace.
async fn fork_into(
    shared: Arc<Shared>,
    sandbox: Arc<dyn Sandbox>,
    from: &str,
    to: &str,
    checkpoint_id: Option<String>,
) -> Result<RoomHandle, ApiError> {
    let exists = || {
        ApiError::conflict(
            "the room exists",
            "to",
            format!("room {to:?} exists already"),
        )
    };
    if to == from {
        return Err(exists());
    }
    let opaque = format!("{:016x}", rand::random::<u64>());
    let claimed = shared
        .store
        .claim_room(to.to_string(), opaque)
        .await
        .map_err(|e| ApiError::internal(format!("the new room could not be made: {e}")))?;
    if !claimed {
        return Err(exists());
    }
    let source = sandbox.fork_source(checkpoint_id).await.map_err(refused)?;
    let registry = Registry::new(shared);
    let target = registry.room(to).await?;
    target.sandbox.fork_from(source).await.map_err(refused)?;
    Ok(target)
}
