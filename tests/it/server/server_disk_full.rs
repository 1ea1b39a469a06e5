//! The data directory's disk fills up: requests fail with a clear error,
//! nothing stored is lost or corrupted, and the room works again once
//! there is space. Needs root (a small tmpfs is the full disk).

use crate::common::Server;
use serde_json::json;
use std::process::Command;

/// A tmpfs of `size` mounted on a fresh folder; unmounted when dropped.
struct SmallDisk(tempfile::TempDir);

impl SmallDisk {
    fn mount(size: &str) -> Option<SmallDisk> {
        if !nix::unistd::geteuid().is_root() {
            eprintln!("not root: no small disk to fill; skipped");
            return None;
        }
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size},mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mounting a tmpfs");
        Some(SmallDisk(dir))
    }

    /// Writes a file until the disk is full.
    fn fill(&self) {
        let _ = Command::new("dd")
            .args(["if=/dev/zero", "bs=64k"])
            .arg(format!("of={}", self.0.path().join("filler").display()))
            .stderr(std::process::Stdio::null())
            .status();
    }

    fn free(&self) {
        std::fs::remove_file(self.0.path().join("filler")).unwrap();
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

#[tokio::test]
async fn a_full_data_disk_fails_clearly_and_loses_nothing() {
    let Some(disk) = SmallDisk::mount("24m") else {
        return;
    };
    let args = [
        "--disk-mb",
        "4",
        "--ai-url",
        "http://127.0.0.1:9/v1",
        "--ai-model",
        "m",
    ];
    let server = Server::start(disk.0.path(), &args).await;
    let (status, _) = server
        .post("/api/rooms/full/message", json!({"text":"before"}))
        .await;
    assert_eq!(status, 200);
    let (_, before) = server.get("/api/rooms/full/messages").await;

    disk.fill();
    let mut failures = 0;
    for i in 0..20 {
        let (status, body) = server
            .post(
                "/api/rooms/full/message",
                json!({"text": format!("while full {i} {}", "x".repeat(4000))}),
            )
            .await;
        if status != 200 {
            failures += 1;
            if failures == 1 {
                eprintln!("while full: {status} {body}");
            }
            assert!([500, 507].contains(&status), "{status} {body}");
            let error = body["error"].as_str().unwrap_or_default();
            assert!(
                error.contains("disk is full") || error.contains("full"),
                "{body}"
            );
        }
    }
    assert!(failures > 0, "the disk never filled up");
    // What was stored before is still there, whole.
    let (status, during) = server.get("/api/rooms/full/messages").await;
    assert_eq!(status, 200);
    assert_eq!(during["messages"][0], before["messages"][0]);

    disk.free();
    let (status, body) = server
        .post("/api/rooms/full/message", json!({"text":"after"}))
        .await;
    assert_eq!(status, 200, "{body}");
    server.stop().await;
    // And the database reopens intact.
    let server = Server::start(disk.0.path(), &args).await;
    let (_, after) = server.get("/api/rooms/full/messages").await;
    assert_eq!(after["messages"][0], before["messages"][0]);
    let texts: Vec<_> = after["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["text"].as_str().unwrap().to_string())
        .collect();
    assert!(texts.contains(&"after".to_string()), "{texts:?}");
    server.stop().await;
}
