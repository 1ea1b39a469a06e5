//! `cleanup` (`POST /api/rooms/{room}/cleanup` `{userId?}`): clears the
//! room's history and destroys its sandbox; answers `CleanupResponse`
//! (207 with `errors` when a part failed).

use super::{Answer, Caller, Fields, Operation, Reply};
use crate::protocol::{CleanupResponse, Event, ServerFrame, WORKSPACE};
use crate::server::room::{CLEANED, RoomActor, draft, no_reply};
use axum::http::StatusCode;

/// Empty the room.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Cleanup;

impl Operation for Cleanup {
    fn parse(_: &mut Fields<'_>) -> Option<Self> {
        Some(Cleanup)
    }

    /// Cancels the turn, clears history and commands, destroys the
    /// sandbox; the emptied room holds one record saying who did it.
    async fn apply(self, room: &mut RoomActor, caller: Caller, answer: Answer) {
        let by = caller.name_or_anonymous();
        room.cancel(None, by.clone());
        if let Some(current) = &mut room.current {
            current.discarded = true;
        }
        for turn in room.turns.drain(..) {
            turn.answer(Ok(no_reply(CLEANED, Vec::new())));
        }
        room.end_terminal(None, None);
        room.kill_all_processes();
        room.broadcast(&ServerFrame::Cleanup { by: by.clone() });
        room.messages.clear();
        room.execs.clear();
        room.checkpoints.list.clear();
        room.generation += 1;
        room.state_cache = None;
        let mut errors = Vec::new();
        if let Err(e) = room.shared.store.clear_room(room.id.clone()).await {
            tracing::error!(room = %room.id, "clearing the history failed: {e}");
            errors.push(format!("history: {e}"));
        }
        // Awaited here so that no command queued after the cleanup is
        // caught by it; destroying kills and deletes, it runs nothing.
        if let Err(e) = room.sandbox.destroy().await {
            tracing::error!(room = %room.id, "destroying the sandbox failed: {e}");
            errors.push(format!("sandbox: {e}"));
        }
        room.shell.cwd = WORKSPACE.to_string();
        if let Err(e) = room.keep(draft(Event::Cleanup { by })).await {
            errors.push(format!("record: {}", e.body.error));
        }
        room.publish_whole();
        let status = if errors.is_empty() {
            StatusCode::OK
        } else {
            StatusCode::MULTI_STATUS
        };
        let mut reply = Reply::ok(CleanupResponse {
            cleaned: true,
            room_id: room.id.clone(),
            errors: (!errors.is_empty()).then_some(errors),
        });
        reply.status = status;
        let _ = answer.send(Ok(reply));
    }
}
