//! Stopping a backend leaves no process behind: `duet serve` with the
//! sandbox of a room that ran a background command, and (with
//! `DUET_TEST_BACKEND=worker`) the whole local Cloudflare stack of
//! worker/dev.sh, whose parts each lead their own process group.

use crate::common;
use crate::common::Server;
use crate::common::procs::descendants;
use serde_json::json;

/// Whether `pid` still runs (a zombie counts as gone).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|s| {
            !s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

#[tokio::test]
async fn sigterm_stops_every_process_of_the_backend() {
    let (server, _dir) = Server::fresh().await;
    let (status, body) = server
        .post(
            "/api/rooms/stop-room/sandbox/exec",
            json!({"cmd":"{ sleep 600 & } ; echo started"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["stdout"], "started\n");
    let parts = descendants(server.pid());
    assert!(
        !parts.is_empty(),
        "the backend runs its sandbox in child processes"
    );
    server.stop().await;
    // Parts killed as the backend exits may take a moment to go.
    let deadline = std::time::Instant::now() + common::WAIT;
    let mut left: Vec<(u32, String)> = Vec::new();
    while std::time::Instant::now() < deadline {
        left = parts
            .iter()
            .filter(|p| alive(**p))
            .map(|p| {
                (
                    *p,
                    std::fs::read_to_string(format!("/proc/{p}/cmdline")).unwrap_or_default(),
                )
            })
            .collect();
        if left.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(left.is_empty(), "still running after stop: {left:?}");
}
