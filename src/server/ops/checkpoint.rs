//! The checkpoint operations (docs/protocol.md "Checkpoints, restore and
//! fork"): `checkpoint_create` (`POST …/checkpoints {name?}`),
//! `checkpoint_restore` (`POST …/checkpoints/{id}/restore`),
//! `checkpoint_delete` (`DELETE …/checkpoints/{id}`) and `fork`
//! (`POST …/fork {to, checkpointId?}`).

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{DeleteResponse, checkpoint_name_problem, valid_room_id};
use crate::server::errors::ApiError;
use crate::server::room::{RoomActor, Waiting, unknown_checkpoint};

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

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.restore_checkpoint(self.checkpoint_id, caller.name_or_anonymous(), answer);
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

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.fork(
            self.to,
            self.checkpoint_id,
            caller.name_or_anonymous(),
            answer,
        );
    }
}
