//! Rooms come and go: a room with no connection, no command or turn, and
//! nothing its sandbox runs, for the server's `--room-idle-secs`, unloads
//! its actor, broadcast channel and sandbox worker. Its history and
//! workspace stay in the store and on disk, and load again on next use.

use super::RoomActor;
use std::sync::Arc;

impl RoomActor {
    /// Whether nothing happens in the room (nor is about to).
    pub(super) fn idle(&self) -> bool {
        self.presence.is_empty()
            && self.current.is_none()
            && self.turns.is_empty()
            && self.running.is_empty()
            && self.terminal.is_none()
            && !self.sandbox.busy()
    }

    /// Removes the room from the server's rooms if nobody holds its handle
    /// and nothing waits in its inbox; `true`: the actor ends. Done under
    /// the rooms' lock, so no request can find the handle meanwhile.
    pub(super) fn try_unload(&self, rx: &super::handle::Commands) -> bool {
        let Ok(mut rooms) = self.shared.rooms.lock() else {
            return false;
        };
        let ours = rooms
            .get(&self.id)
            .is_some_and(|h| Arc::downgrade(&h.holders).ptr_eq(&self.holders));
        // The handle in the map is the only one left.
        if !ours || self.holders.strong_count() != 1 || !rx.is_empty() || !self.idle() {
            return false;
        }
        rooms.remove(&self.id);
        tracing::debug!(room = %self.id, "room unloaded (idle)");
        crate::server::memory::give_back_soon();
        true
    }
}
