//! The room's checkpoints from a client's side (docs/protocol.md
//! "Checkpoints, restore and fork"): the request bodies, how a checkpoint
//! is found by name or id, which one an undo restores, and how the list
//! reads (`duet checkpoints`, the TUI's `/checkpoints`). The answers are
//! `protocol::checkpoint`'s.

use crate::protocol::Checkpoint;
use serde::{Deserialize, Serialize};

/// `POST …/checkpoints` and rpc `checkpoint_create`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateCheckpoint {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// A body that only says who asks (a restore).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ByUser {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// `POST …/fork` and rpc `fork`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Fork {
    pub to: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
}

/// The checkpoint a person means by `wanted`: its name (names are unique
/// in a room), else its id. `Err` says why none is meant.
pub fn find<'a>(list: &'a [Checkpoint], wanted: &str) -> Result<&'a Checkpoint, String> {
    if wanted.is_empty() {
        return Err("name a checkpoint: its name or its id (c3)".into());
    }
    list.iter()
        .find(|c| c.name == wanted)
        .or_else(|| list.iter().find(|c| c.id == wanted))
        .ok_or_else(|| {
            format!("no checkpoint {wanted:?} in this room (the checkpoints list names them)")
        })
}

/// The automatic checkpoint an undo restores: the newest one, or, when
/// `after` is the one the last undo restored (and no agent turn ran
/// since), the one before it. `Err` says why there is none.
pub fn undo_target<'a>(
    list: &'a [Checkpoint],
    after: Option<&str>,
) -> Result<&'a Checkpoint, String> {
    let autos: Vec<&Checkpoint> = list.iter().filter(|c| c.auto).collect();
    let Some(newest) = autos.last() else {
        return Err(
            "nothing to undo: no automatic checkpoint (one is taken before each agent turn \
             that runs commands)"
                .into(),
        );
    };
    let Some(after) = after else {
        return Ok(newest);
    };
    match autos.iter().position(|c| c.id == after) {
        Some(0) => Err(format!(
            "nothing further to undo: {} is the oldest automatic checkpoint the room keeps",
            autos[0].name
        )),
        Some(i) => Ok(autos[i - 1]),
        // The one undone was deleted since: the newest is the next back.
        None => Ok(newest),
    }
}

/// When it was taken, as a table shows it: `2026-01-02 10:00` (local).
pub fn when(ts_ms: u64, tz: time::UtcOffset) -> String {
    let Ok(at) = time::OffsetDateTime::from_unix_timestamp_nanos(i128::from(ts_ms) * 1_000_000)
    else {
        return ts_ms.to_string();
    };
    let at = at.to_offset(tz);
    format!(
        "{:04}-{:02}-{:02} {:02}:{:02}",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute()
    )
}

/// The checkpoints as columns under a header line: name, id, when, by,
/// size, auto, and when it expires where the backend sets that.
pub fn table(list: &[Checkpoint], tz: time::UtcOffset) -> String {
    let expires = list.iter().any(|c| c.expires_at.is_some());
    let mut head = vec!["NAME", "ID", "WHEN", "BY", "SIZE", "AUTO"];
    if expires {
        head.push("EXPIRES");
    }
    let rows = list.iter().map(|c| {
        let mut row = vec![
            c.name.clone(),
            c.id.clone(),
            when(c.ts, tz),
            c.by.clone(),
            crate::text::human_size(c.size),
            if c.auto { "yes" } else { "no" }.to_string(),
        ];
        if expires {
            row.push(c.expires_at.map_or("never".into(), |at| when(at, tz)));
        }
        row
    });
    let head: Vec<String> = head.into_iter().map(String::from).collect();
    crate::client::ps::columns(std::iter::once(head).chain(rows))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn checkpoint(id: &str, name: &str, auto: bool) -> Checkpoint {
        Checkpoint {
            id: id.into(),
            name: name.into(),
            ts: 1_767_348_000_000,
            by: if auto { "duet" } else { "ada" }.into(),
            size: 2150,
            auto,
            turn_id: None,
            expires_at: None,
        }
    }

    #[test]
    fn a_checkpoint_is_found_by_name_or_id() {
        let list = vec![
            checkpoint("c1", "before", false),
            checkpoint("c2", "c1", false),
        ];
        assert_eq!(find(&list, "before").unwrap().id, "c1");
        // A name beats an id that looks the same.
        assert_eq!(find(&list, "c1").unwrap().id, "c2");
        assert_eq!(find(&list, "c2").unwrap().id, "c2");
        assert!(
            find(&list, "nope")
                .unwrap_err()
                .contains("no checkpoint \"nope\"")
        );
    }

    #[test]
    fn undo_goes_back_one_automatic_checkpoint_at_a_time() {
        let list = vec![
            checkpoint("c1", "auto-1", true),
            checkpoint("c2", "mine", false),
            checkpoint("c3", "auto-3", true),
        ];
        assert_eq!(undo_target(&list, None).unwrap().id, "c3");
        assert_eq!(undo_target(&list, Some("c3")).unwrap().id, "c1");
        assert!(
            undo_target(&list, Some("c1"))
                .unwrap_err()
                .starts_with("nothing further to undo")
        );
        assert_eq!(undo_target(&list, Some("c9")).unwrap().id, "c3");
        assert!(
            undo_target(&list[1..2], None)
                .unwrap_err()
                .starts_with("nothing to undo")
        );
    }

    #[test]
    fn the_table_shows_expiry_only_where_the_backend_sets_it() {
        let mut list = vec![
            checkpoint("c1", "auto-1", true),
            checkpoint("c2", "mine", false),
        ];
        let text = table(&list, time::UtcOffset::UTC);
        assert_eq!(
            text,
            "NAME    ID  WHEN              BY    SIZE    AUTO\n\
             auto-1  c1  2026-01-02 10:00  duet  2.1 KB  yes\n\
             mine    c2  2026-01-02 10:00  ada   2.1 KB  no\n"
        );
        list[0].expires_at = Some(1_767_348_000_000 + 86_400_000);
        let text = table(&list, time::UtcOffset::UTC);
        assert!(text.starts_with("NAME    ID  WHEN              BY    SIZE    AUTO  EXPIRES\n"));
        assert!(text.contains("yes   2026-01-03 10:00\n"), "{text}");
        assert!(text.contains("no    never\n"), "{text}");
    }
}
