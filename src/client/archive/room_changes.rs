//! What a push would undo in the room: files someone changed there since
//! the last push (`GET /diff`, docs/protocol.md "Archives") that the push
//! would replace with other content, or (a mirror) delete. `duet push`
//! asks before it does, as `duet pull` asks about local changes.

use super::diff::changed_paths;
use super::walk::{Entry, Kind};
use crate::client::http::{HttpClient, HttpError};
use std::collections::BTreeMap;
use std::path::Path;

/// Room files a push of `entries` (the folder at `root`, into the
/// workspace folder `remote`) would replace or delete although they
/// changed in the room since the last push; relative to /workspace.
/// None before the room's first push (nothing to compare with).
pub async fn in_the_way(
    client: &HttpClient,
    root: &Path,
    remote: &str,
    entries: &[Entry],
    mirror: bool,
) -> Result<Vec<String>, HttpError> {
    let filter: Vec<String> = if remote.is_empty() {
        Vec::new()
    } else {
        vec![remote.to_string()]
    };
    let diff = match client.diff(None, &filter).await {
        Ok(diff) => diff,
        // No push to compare with: nothing was synced that could be undone.
        Err(HttpError::Status(s)) if s.status == 404 => return Ok(Vec::new()),
        Err(err) => return Err(err),
    };
    let local: BTreeMap<&str, &Entry> = entries.iter().map(|e| (e.rel.as_str(), e)).collect();
    let prefix = if remote.is_empty() {
        String::new()
    } else {
        format!("{remote}/")
    };
    let mut found = Vec::new();
    for path in changed_paths(&diff) {
        let Some(rel) = path.strip_prefix(&prefix) else {
            continue;
        };
        let here = local.get(rel);
        if here.is_none() && !mirror {
            // Not pushed, not deleted: the room's change stays.
            continue;
        }
        let room = match client.get_file(&path).await {
            Ok(bytes) => Some(bytes),
            Err(HttpError::Status(s)) if s.status == 404 => None,
            Err(err) => return Err(err),
        };
        let replaced = match (here, &room) {
            // The push writes what is here: the room's change goes unless
            // it is this very content (pulled, or made alike).
            (Some(entry), Some(room)) => {
                entry.kind != Kind::File
                    || std::fs::read(root.join(rel)).map_or(true, |here| here != room.as_ref())
            }
            // Deleted in the room: the push would bring it back.
            (Some(_), None) => true,
            // Made in the room: a mirror deletes it.
            (None, Some(_)) => mirror,
            (None, None) => false,
        };
        if replaced {
            found.push(path);
        }
    }
    Ok(found)
}
