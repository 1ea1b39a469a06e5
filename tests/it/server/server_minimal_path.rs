//! Started with cron's PATH (`/usr/bin:/bin`, no sbin), as root the server
//! still finds its host tools (mkfs.ext4, mount, pasta) and runs commands.

use crate::common::Server;
use serde_json::json;

#[tokio::test]
async fn a_minimal_path_still_starts_the_sandbox() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start_with_env(dir.path(), &[], &[("PATH", "/usr/bin:/bin")]).await;
    let (status, body) = server
        .post(
            "/api/rooms/cron/sandbox/exec",
            json!({"cmd":"echo started; df -P /workspace | tail -1"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let result = &body["result"];
    assert_eq!(result["exitCode"], 0, "{body}");
    assert!(
        result["stdout"].as_str().unwrap().starts_with("started\n"),
        "{body}"
    );
    if nix::unistd::geteuid().is_root() {
        // The quota image is mounted: the workspace is its own file system.
        assert!(
            result["stdout"].as_str().unwrap().contains("/dev/loop"),
            "{body}"
        );
    }
}
