//! The rooms of a backend, as its owner lists them (`GET /api/rooms`,
//! docs/protocol.md): a lobby's view.

use serde::{Deserialize, Serialize};

/// What `GET /api/rooms` says of one room.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RoomSummary {
    pub room_id: String,
    /// How many distinct people (socket `user` names) are connected now.
    pub people: usize,
    /// ms since the epoch: the room's newest stored record (message,
    /// command or timeline record), or its first use when it has none.
    pub updated_at: i64,
}

/// `GET /api/rooms`' answer: newest `updatedAt` first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RoomsResponse {
    pub rooms: Vec<RoomSummary>,
}

/// The words of the 403 an invite's token gets for `GET /api/rooms`.
pub const ONLY_THE_SERVER_LISTS_ROOMS: &str = "only the server's token may list rooms";
