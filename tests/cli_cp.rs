//! `duet cp` against a real `duet serve`: files into and out of a room.

mod common;

use common::Server;
use std::process::Command;

fn duet_cp(server: &Server, from: &str, to: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_duet"))
        .args([
            "cp",
            "--server",
            &server.url(""),
            "--room",
            "copies",
            from,
            to,
        ])
        .env_remove("DUET_TOKEN")
        .output()
        .unwrap()
}

#[tokio::test]
async fn files_copy_in_and_out() {
    let (server, _dir) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let local = here.path().join("notes.txt");
    std::fs::write(&local, "line one\nline two\n").unwrap();

    let out = duet_cp(&server, local.to_str().unwrap(), ":docs/");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "18 bytes to :docs/notes.txt\n"
    );

    let (_, body) = server
        .post(
            "/api/rooms/copies/sandbox/exec",
            serde_json::json!({"cmd": "wc -l < docs/notes.txt; printf '\\x00\\xff' > bin.dat"}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "2\n");

    let back = here.path().join("back");
    std::fs::create_dir(&back).unwrap();
    let out = duet_cp(&server, ":bin.dat", back.to_str().unwrap());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read(back.join("bin.dat")).unwrap(),
        vec![0u8, 0xff]
    );

    let out = duet_cp(&server, ":nope.txt", "-");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("404"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = duet_cp(&server, ":../../etc/passwd", "-");
    assert_eq!(out.status.code(), Some(1));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).contains("inside /workspace"));
}
