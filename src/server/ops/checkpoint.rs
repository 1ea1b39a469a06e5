//! The checkpoint operations (docs/protocol.md "Checkpoints, restore and
//! fork"): `checkpoint_create` (`POST …/checkpoints {name?}`),
//! `checkpoint_restore` (`POST …/checkpoints/{id}/restore`),
//! `checkpoint_delete` (`DELETE …/checkpoints/{id}`) and `fork`
//! (`POST …/fork {to, checkpointId?}`).

use super::{Answer, Caller, Fields, Operation};
use crate::protocol::{checkpoint_name_problem, valid_room_id};
use crate::server::room::RoomActor;

/// Take a checkpoint of the workspace.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct CheckpointCreate {
    pub(crate) name: Option<String>,
}

impl Operation for CheckpointCreate {
    fn parse(f: &mut Fields<'_>) -> Option<Self> {
        let name = f.string("name").map(|n| n.trim().to_string());
        if let Some(problem) = name.as_deref().and_then(checkpoint_name_problem) {
            f.problem("name", problem);
        }
        Some(CheckpointCreate { name })
    }

    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        room.take_checkpoint(self.name, caller.name_or_anonymous(), answer);
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

    async fn apply(self, room: &mut RoomActor, _caller: Caller, answer: Answer) {
        room.delete_checkpoint(self.checkpoint_id, answer);
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
