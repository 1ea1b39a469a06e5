//! A room's disk comes with its first use of the sandbox: the looks a
//! chat-only room's agent takes (AGENTS.md, a path it names), and a pull
//! of its empty workspace, make none.

use duet::sandbox::local::{Limits, RoomSandbox, SandboxPlace};
use duet::sandbox::{ExecSpec, Sandbox, SandboxError};
use std::sync::Arc;
use std::time::Duration;

/// Entries of the data directory's `workspaces/` (none: not even the folder).
fn workspaces(dir: &std::path::Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir.join("workspaces")) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn looks_into_a_room_that_never_ran_make_no_disk() {
    crate::common::use_built_helper();
    let dir = tempfile::tempdir().unwrap();
    let room = "looks";
    let sb = RoomSandbox::new(
        SandboxPlace::own(
            room,
            duet::sandbox::local::workspace_dir(dir.path(), room),
            duet::sandbox::local::room_uid(dir.path(), 11),
        ),
        Arc::new(Limits::default()),
    );
    // What an agent's turn reads of a room that only chatted.
    assert!(matches!(
        sb.read_file("AGENTS.md".into()).await,
        Err(SandboxError::NoFile)
    ));
    assert!(matches!(
        sb.list_dir("AGENTS.md".into()).await,
        Err(SandboxError::NoFile)
    ));
    assert!(matches!(
        sb.list_dir("src/lib".into()).await,
        Err(SandboxError::NoFile)
    ));
    assert!(sb.list_dir(String::new()).await.unwrap().is_empty());
    // A bad path is still named as one.
    assert!(matches!(
        sb.list_dir("../outside".into()).await,
        Err(SandboxError::BadPath(_))
    ));
    assert!(!sb.interrupt(None, true).await, "nothing ran");
    // The whole workspace as an archive (`duet pull`): an empty tar.
    let mut body = sb.archive_get(String::new()).await.unwrap();
    let mut tar = Vec::new();
    while let Some(chunk) = futures_util::StreamExt::next(&mut body).await {
        tar.extend_from_slice(&chunk.unwrap());
    }
    assert_eq!(
        tar::Archive::new(tar.as_slice()).entries().unwrap().count(),
        0
    );
    assert!(matches!(
        sb.archive_get("src".into()).await,
        Err(SandboxError::NoFile)
    ));
    assert_eq!(workspaces(dir.path()), Vec::<String>::new());

    // The first command makes the workspace (and its disk, where the host
    // has quotas), and later looks see it.
    let spec = ExecSpec {
        cmd: "mkdir -p src/lib && echo hi > AGENTS.md".into(),
        timeout: Duration::from_secs(30),
        ..ExecSpec::default()
    };
    let out = sb.exec("x1".into(), spec, Box::new(|_| {})).await.unwrap();
    assert_eq!(out.exit_code, Some(0));
    assert!(workspaces(dir.path()).contains(&room.to_string()));
    assert_eq!(sb.read_file("AGENTS.md".into()).await.unwrap(), b"hi\n");
    assert!(sb.list_dir("src/lib".into()).await.unwrap().is_empty());
    sb.destroy().await.unwrap();
}
