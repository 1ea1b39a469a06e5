//! Who is in the room: one presence entry per connection, announced to
//! everyone on join and leave. A joining connection subscribes to the
//! room's frames at the moment its state snapshot is taken.

use super::{Joined, Outgoing, RoomActor, frame_text};
use crate::protocol::{PresenceUser, ServerFrame};
use tokio::sync::oneshot;

impl RoomActor {
    /// `duet_presence` with one entry per connection.
    fn presence_frame(&self) -> ServerFrame {
        ServerFrame::Presence {
            users: self.presence.iter().map(|(_, u)| u.clone()).collect(),
        }
    }

    /// Adds a connection: presence to everyone, then its first frames and feed.
    pub(super) fn join(&mut self, conn: u64, user: PresenceUser, reply: oneshot::Sender<Joined>) {
        self.presence.push((conn, user));
        let presence = frame_text(&self.presence_frame());
        let _ = self.frames.send(Outgoing {
            text: presence.clone(),
            skip: None,
        });
        // Subscribed after the presence broadcast (sent to it as its third
        // frame instead) and with the state snapshot: nothing is missed or doubled.
        let joined = Joined {
            state: self.state_text(),
            presence,
            frames: self.frames.subscribe(),
        };
        if reply.send(joined).is_err() {
            self.presence.retain(|(c, _)| *c != conn);
            self.broadcast(&self.presence_frame());
        }
    }

    /// Removes a connection and tells the others.
    pub(super) fn leave(&mut self, conn: u64) {
        let before = self.presence.len();
        self.presence.retain(|(c, _)| *c != conn);
        if self.presence.len() != before {
            self.broadcast(&self.presence_frame());
        }
    }
}
