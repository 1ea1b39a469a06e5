//! Wire types of checkpoints, forks and the workspace's listing
//! (docs/protocol.md "Checkpoints, restore and fork" and "Files").

use serde::{Deserialize, Serialize};

/// Automatic checkpoints a room keeps unless the server says otherwise
/// (`--auto-checkpoints`).
pub const DEFAULT_AUTO_CHECKPOINTS: usize = 10;
/// Longest checkpoint name, in characters.
pub const CHECKPOINT_NAME_MAX: usize = 64;

/// A copy of the room's `/workspace` kept by the backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checkpoint {
    pub id: String,
    pub name: String,
    pub ts: u64,
    /// Who took it (`duet` for an automatic one).
    pub by: String,
    /// Bytes of its files.
    pub size: u64,
    pub auto: bool,
    /// An automatic one: the turn it was taken before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
    /// When the backend deletes it (Cloudflare only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
}

/// Why a checkpoint name is not acceptable, or `None`: 1–64 characters of
/// `A-Z a-z 0-9 . _ -`, the first alphanumeric.
pub fn checkpoint_name_problem(name: &str) -> Option<&'static str> {
    let mut chars = name.chars();
    match chars.next() {
        None => Some("must not be empty"),
        Some(first) if !first.is_ascii_alphanumeric() => {
            Some("must start with a letter or a digit")
        }
        _ if name.chars().count() > CHECKPOINT_NAME_MAX => Some("must be at most 64 characters"),
        _ if !chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')) => {
            Some("may hold only letters, digits, '.', '_' and '-'")
        }
        _ => None,
    }
}

/// `POST /checkpoints`' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointResponse {
    pub checkpoint: Checkpoint,
}

/// `GET /checkpoints`' answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CheckpointsResponse {
    pub checkpoints: Vec<Checkpoint>,
}

/// A restore's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RestoreResponse {
    pub restored: bool,
}

/// A checkpoint's or a file's deletion answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DeleteResponse {
    pub deleted: bool,
}

/// `POST /fork`'s answer: the new room.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ForkResponse {
    pub room_id: String,
}

/// What a folder entry is (symlinks are not followed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryType {
    File,
    Dir,
    Symlink,
    Other,
}

/// One entry of a folder's listing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirEntry {
    pub name: String,
    #[serde(rename = "type")]
    pub kind: EntryType,
    /// A file's bytes, a symlink's target length, 0 otherwise.
    pub size: u64,
    /// Last modified, ms since the epoch.
    pub mtime: u64,
}

/// A folder listing's answer (`GET /files/{dir}/`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ListingResponse {
    pub entries: Vec<DirEntry>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checkpoint_names_follow_the_rules() {
        for good in ["a", "before-refactor", "v1.2_final", &"x".repeat(64)] {
            assert_eq!(checkpoint_name_problem(good), None, "{good}");
        }
        for bad in ["", "-a", ".hidden", "a b", "a/b", &"x".repeat(65), "é"] {
            assert!(checkpoint_name_problem(bad).is_some(), "{bad}");
        }
    }

    #[test]
    fn a_checkpoint_reads_as_the_contract_writes_it() {
        let c: Checkpoint = serde_json::from_str(
            r#"{"id":"c1","name":"auto-1","ts":5,"by":"duet","size":10,"auto":true,"turnId":"t1"}"#,
        )
        .unwrap();
        assert_eq!(c.turn_id.as_deref(), Some("t1"));
        let e: DirEntry =
            serde_json::from_str(r#"{"name":"a","type":"symlink","size":3,"mtime":1}"#).unwrap();
        assert_eq!(e.kind, EntryType::Symlink);
    }
}
