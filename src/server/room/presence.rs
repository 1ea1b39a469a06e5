//! Who is in the room: one presence entry per connection, announced to
//! everyone on join, leave, rename and a role's change: the whole list to
//! sockets without deltas, a `duet_presence_delta` to the others (a room
//! filling up costs each join one small frame per socket, not the list). A
//! joining connection subscribes to the room's frames at the moment its
//! state snapshot is taken.

use super::{Joined, OutFrame, RoomActor, frame_text};
use crate::protocol::{PresenceDelta, PresenceUser, ServerFrame};
use axum::extract::ws::Utf8Bytes;
use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use tokio::sync::oneshot;

/// A connection whose presence entry changed.
pub(in crate::server) enum Touched {
    Joined(u64),
    /// Its presence id: the connection is gone.
    Left(String),
    Changed(u64),
}

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

    /// The entries of presence id `id`.
    fn entries_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a PresenceUser> {
        self.presence
            .iter()
            .filter(move |(_, u)| u.id == id)
            .map(|(_, u)| u)
    }

    /// The delta of `touched`. An id on more than one connection is sent
    /// whole (left, then joined again) so that applying it stays exact.
    fn presence_delta(&self, touched: &[Touched]) -> PresenceDelta {
        let mut delta = PresenceDelta::default();
        let resend = |delta: &mut PresenceDelta, id: &str| {
            if !delta.left.iter().any(|l| l == id) {
                delta.left.push(id.to_string());
                delta.joined.extend(self.entries_of(id).cloned());
            }
        };
        for touch in touched {
            match touch {
                Touched::Left(id) => resend(&mut delta, id),
                Touched::Joined(conn) | Touched::Changed(conn) => {
                    let Some((_, user)) = self.presence.iter().find(|(c, _)| c == conn) else {
                        continue;
                    };
                    if self.entries_of(&user.id).count() > 1 {
                        resend(&mut delta, &user.id);
                    } else if matches!(touch, Touched::Joined(_)) {
                        delta.joined.push(user.clone());
                    } else {
                        delta.changed.push(user.clone());
                    }
                }
            }
        }
        delta
    }

    /// The frame telling everyone of `touched`: the whole list for sockets
    /// without deltas (serialized only when one is connected), the delta
    /// for the others.
    pub(in crate::server) fn presence_news(&self, touched: &[Touched]) -> OutFrame {
        let full = if self.full_sockets.is_empty() {
            Utf8Bytes::default()
        } else {
            frame_text(&self.presence_frame())
        };
        let delta = self.presence_delta(touched);
        let deltas = if delta.is_empty() {
            Vec::new()
        } else {
            vec![frame_text(&ServerFrame::PresenceDelta(delta))]
        };
        OutFrame {
            deltas: Some(deltas),
            ..OutFrame::plain(full)
        }
    }

    /// Presence changed: counted again, and everyone told.
    pub(crate) fn presence_changed(&self, touched: &[Touched]) {
        self.count_people();
        let _ = self.frames.send(Arc::new(self.presence_news(touched)));
    }

    /// Adds a connection (`deltas`: it asked for deltas): presence to
    /// everyone, then its first frames and feed.
    pub(super) fn join(
        &mut self,
        conn: u64,
        user: PresenceUser,
        deltas: bool,
        reply: oneshot::Sender<Joined>,
    ) {
        self.presence.push((conn, user));
        if !deltas {
            self.full_sockets.push(conn);
        }
        self.presence_changed(&[Touched::Joined(conn)]);
        // Subscribed after the presence broadcast (sent the whole list as
        // its third frame instead) and with the state snapshot: nothing is
        // missed or doubled.
        let joined = Joined {
            state: self.state_text(),
            presence: frame_text(&self.presence_frame()),
            frames: self.frames.subscribe(),
        };
        if reply.send(joined).is_err() {
            self.leave(conn);
        }
    }

    /// Removes a connection and tells the others.
    pub(super) fn leave(&mut self, conn: u64) {
        self.full_sockets.retain(|c| *c != conn);
        let Some(at) = self.presence.iter().position(|(c, _)| *c == conn) else {
            return;
        };
        let (_, user) = self.presence.remove(at);
        self.presence_changed(&[Touched::Left(user.id)]);
        if self.presence.is_empty() {
            self.presence = Vec::new();
            self.full_sockets = Vec::new();
        }
    }
}
