//! `GET /api/rooms` from the client's side: the rooms of a backend, for
//! its owner (docs/protocol.md). Not one room's call: the `Backend`'s.

use crate::client::http::{Backend, HttpError};
use crate::protocol::RoomSummary;

/// The rooms of the backend at `url` (e.g. `http://h:8787`), newest
/// change first; `token` is the server's (an invite's gets a 403).
pub async fn list(url: &str, token: Option<&str>) -> Result<Vec<RoomSummary>, HttpError> {
    Backend::new(url, token.map(str::to_string))?.rooms().await
}

/// The rooms as columns under a header line: room, people, last change
/// (local time).
pub fn table(rooms: &[RoomSummary], tz: time::UtcOffset) -> String {
    let head = ["ROOM", "PEOPLE", "UPDATED"].map(String::from).to_vec();
    let rows = rooms.iter().map(|room| {
        vec![
            room.room_id.clone(),
            room.people.to_string(),
            crate::client::checkpoints::when(u64::try_from(room.updated_at).unwrap_or(0), tz),
        ]
    });
    crate::client::ps::columns(std::iter::once(head).chain(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_names_each_room_its_people_and_last_change() {
        let rooms = [
            RoomSummary {
                room_id: "pairing".into(),
                people: 2,
                updated_at: 1_767_348_000_000,
            },
            RoomSummary {
                room_id: "old".into(),
                people: 0,
                updated_at: -1,
            },
        ];
        let text = table(&rooms, time::UtcOffset::UTC);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("ROOM"), "{text}");
        assert!(lines[0].contains("PEOPLE") && lines[0].contains("UPDATED"));
        assert!(lines[1].starts_with("pairing") && lines[1].contains("2026-01-02 10:00"));
        assert!(lines[2].starts_with("old"), "{text}");
    }
}
