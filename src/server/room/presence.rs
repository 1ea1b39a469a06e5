//! Who is in the room: one presence entry per connection, announced to
//! everyone on join, leave and rename. A joining connection subscribes to
//! the room's frames at the moment its state snapshot is taken.

use super::{Joined, RoomActor, frame_text, outgoing};
use crate::protocol::{PresenceUser, ServerFrame};
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

impl RoomActor {
    /// `duet_presence` with one entry per connection.
    pub(in crate::server) fn presence_frame(&self) -> ServerFrame {
        ServerFrame::Presence {
            users: self.presence.iter().map(|(_, u)| u.clone()).collect(),
        }
    }

    /// Counts the distinct names of the connections, for the room list.
    fn count_people(&self) {
        let names: HashSet<&str> = self.presence.iter().map(|(_, u)| u.name.as_str()).collect();
        self.people.store(names.len(), Ordering::Relaxed);
    }

    /// Presence changed: counted again, and everyone told.
    pub(crate) fn presence_changed(&self) {
        self.count_people();
        self.broadcast(&self.presence_frame());
    }

    /// Adds a connection: presence to everyone, then its first frames and feed.
    pub(super) fn join(&mut self, conn: u64, user: PresenceUser, reply: oneshot::Sender<Joined>) {
        self.presence.push((conn, user));
        self.count_people();
        let presence = frame_text(&self.presence_frame());
        let _ = self.frames.send(outgoing(presence.clone(), None));
        // Subscribed after the presence broadcast (sent to it as its third
        // frame instead) and with the state snapshot: nothing is missed or doubled.
        let joined = Joined {
            state: self.state_text(),
            presence,
            frames: self.frames.subscribe(),
        };
        if reply.send(joined).is_err() {
            self.presence.retain(|(c, _)| *c != conn);
            self.presence_changed();
        }
    }

    /// Removes a connection and tells the others.
    pub(super) fn leave(&mut self, conn: u64) {
        let before = self.presence.len();
        self.presence.retain(|(c, _)| *c != conn);
        if self.presence.len() != before {
            self.presence_changed();
        }
    }
}
