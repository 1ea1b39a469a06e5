//! A folder in and out of the room, and what changed, as docs/protocol.md
//! "Archives" says, over HTTP to a real backend and sandbox: a push
//! (`PUT /archive/{path}`: tar or gzip, modes, mtimes, symlinks, unicode
//! names, thousands of files), a pull (`GET /archive/{path}`), each
//! refused member with nothing written, a push cut off midway, the disk
//! quota, `delete=1`, roles, the `push` record and its `push-N`
//! checkpoint; and `GET /diff`, which the real `git apply` takes.
//! Backend-neutral: only the protocol (and `--disk-mb`, which `duet
//! serve` and worker/dev.sh both take).

use crate::common::apps::{exec, room_path, with_token};
use crate::common::{Server, answer, http};
use serde_json::Value;
use std::collections::BTreeMap;

mod diff;
mod push;
mod refused;

/// One member of a test archive.
#[derive(Debug, Clone, PartialEq)]
pub enum Member {
    File {
        name: String,
        bytes: Vec<u8>,
        mode: u32,
        mtime: u64,
    },
    Dir {
        name: String,
        mode: u32,
    },
    Link {
        name: String,
        target: String,
    },
}

pub fn file(name: &str, bytes: &[u8], mode: u32) -> Member {
    Member::File {
        name: name.into(),
        bytes: bytes.to_vec(),
        mode,
        mtime: 1_600_000_000,
    }
}

pub fn dir(name: &str) -> Member {
    Member::Dir {
        name: name.into(),
        mode: 0o755,
    }
}

pub fn link(name: &str, target: &str) -> Member {
    Member::Link {
        name: name.into(),
        target: target.into(),
    }
}

/// A tar of `members`, in their order (names as given: the tar crate's
/// own checks would refuse the hostile ones, so they are written raw).
pub fn tar_of(members: &[Member]) -> Vec<u8> {
    let mut tar = tar::Builder::new(Vec::new());
    for m in members {
        match m {
            Member::File {
                name,
                bytes,
                mode,
                mtime,
            } => {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Regular);
                h.set_size(bytes.len() as u64);
                h.set_mode(*mode);
                h.set_mtime(*mtime);
                tar.append_data(&mut h, name, bytes.as_slice()).unwrap();
            }
            Member::Dir { name, mode } => {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Directory);
                h.set_size(0);
                h.set_mode(*mode);
                h.set_mtime(1_600_000_000);
                tar.append_data(&mut h, name, std::io::empty()).unwrap();
            }
            Member::Link { name, target } => {
                let mut h = tar::Header::new_gnu();
                h.set_entry_type(tar::EntryType::Symlink);
                h.set_size(0);
                h.set_mode(0o777);
                h.set_mtime(1_600_000_000);
                tar.append_link(&mut h, name, target).unwrap();
            }
        }
    }
    tar.into_inner().unwrap()
}

/// A tar of one raw member: `name` and `link` written as they are, of
/// `kind`, holding `bytes`.
pub fn raw_member(name: &str, kind: tar::EntryType, link: &str, bytes: &[u8]) -> Vec<u8> {
    let mut h = tar::Header::new_gnu();
    {
        let gnu = h.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
    }
    h.set_entry_type(kind);
    h.set_size(bytes.len() as u64);
    h.set_mode(0o644);
    h.set_mtime(1_600_000_000);
    h.set_cksum();
    let mut tar = tar::Builder::new(Vec::new());
    tar.append(&h, bytes).unwrap();
    tar.into_inner().unwrap()
}

/// Two archives as one (the first's end-of-archive blocks dropped).
pub fn joined(first: &[u8], second: &[u8]) -> Vec<u8> {
    let mut out = first[..first.len() - 1024].to_vec();
    out.extend_from_slice(second);
    out
}

/// `PUT …/archive/{path}{query}` with `body`: status and answer.
pub async fn push_raw(
    server: &Server,
    room: &str,
    path: &str,
    query: &str,
    body: Vec<u8>,
) -> (u16, Value) {
    let url = server.url(&room_path(room, &format!("/archive/{path}{query}")));
    let req = http()
        .put(url)
        .header("content-type", "application/x-tar")
        .body(body);
    answer(with_token(server, req)).await
}

/// A push that must succeed: its answer.
pub async fn push(server: &Server, room: &str, path: &str, query: &str, body: Vec<u8>) -> Value {
    let (status, answer) = push_raw(server, room, path, query, body).await;
    assert_eq!(status, 200, "PUT archive/{path}{query}: {answer}");
    answer
}

/// `GET …/archive/{path}`: status and the bytes.
pub async fn pull(server: &Server, room: &str, path: &str) -> (u16, Vec<u8>) {
    let url = server.url(&room_path(room, &format!("/archive/{path}")));
    let res = with_token(server, http().get(url)).send().await.unwrap();
    let status = res.status().as_u16();
    (status, res.bytes().await.unwrap().to_vec())
}

/// What a tar holds: name to (kind, mode, mtime, bytes or link target),
/// in its order.
pub fn members_of(tar_bytes: &[u8]) -> Vec<(String, char, u32, u64, Vec<u8>)> {
    let mut archive = tar::Archive::new(tar_bytes);
    let mut out = Vec::new();
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let name = String::from_utf8(entry.path_bytes().into_owned()).unwrap();
        let h = entry.header().clone();
        let (kind, body) = match h.entry_type() {
            tar::EntryType::Directory => ('d', Vec::new()),
            tar::EntryType::Symlink => ('l', entry.link_name_bytes().unwrap().into_owned()),
            tar::EntryType::Regular => {
                let mut b = Vec::new();
                std::io::Read::read_to_end(&mut entry, &mut b).unwrap();
                ('f', b)
            }
            other => panic!("{name}: unexpected kind {other:?}"),
        };
        let name = name.trim_end_matches('/').to_string();
        out.push((
            name,
            kind,
            h.mode().unwrap() & 0o7777,
            h.mtime().unwrap(),
            body,
        ));
    }
    out
}

/// The room's workspace, as its shell sees it: one line per path (type,
/// mode, and but for folders size and link target), sorted.
pub async fn listing(server: &Server, room: &str) -> String {
    let r = exec(
        server,
        room,
        "cd /workspace && { find . -mindepth 1 -type d -printf '%P d %m\\n'; \
         find . -mindepth 1 ! -type d -printf '%P %y %m %s %l\\n'; } | LC_ALL=C sort",
    )
    .await;
    assert_eq!(r["exitCode"], 0, "{r}");
    r["stdout"].as_str().unwrap().to_string()
}

/// The room's records of `kind` (`GET /messages`).
pub async fn records(server: &Server, room: &str, kind: &str) -> Vec<Value> {
    crate::common::apps::messages(server, room)
        .await
        .into_iter()
        .filter(|m| m["role"] == "system" && m["event"]["kind"] == kind)
        .collect()
}

/// The room's checkpoints (`GET /checkpoints`).
pub async fn checkpoints(server: &Server, room: &str) -> Vec<Value> {
    let (status, body) = server.get(&room_path(room, "/checkpoints")).await;
    assert_eq!(status, 200, "{body}");
    body["checkpoints"].as_array().unwrap().clone()
}
