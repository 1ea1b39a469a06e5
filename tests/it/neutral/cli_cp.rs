//! `duet cp` against a real `duet serve`: files into and out of a room.

use crate::common::Server;
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

/// `duet cp` in room `room` of `server` (a URL) as `name`.
fn cp_as(server: &str, room: &str, name: &str, from: &str, to: &str) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_duet"))
        .args([
            "cp", "--server", server, "--room", room, "--name", name, from, to,
        ])
        .env_remove("DUET_TOKEN")
        .output()
        .unwrap()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[tokio::test]
async fn an_absolute_path_inside_the_workspace_means_that_path() {
    let (server, _dir) = Server::fresh().await;
    let here = tempfile::tempdir().unwrap();
    let local = here.path().join("ok.txt");
    std::fs::write(&local, "fine\n").unwrap();
    let url = server.url("");
    let out = cp_as(
        &url,
        "abs",
        "ada",
        local.to_str().unwrap(),
        ":/workspace/ok.txt",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stderr(&out), "5 bytes to :ok.txt\n");
    let out = cp_as(
        &url,
        "abs",
        "ada",
        local.to_str().unwrap(),
        ":/workspace/in/",
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let (_, body) = server
        .post(
            "/api/rooms/abs/sandbox/exec",
            serde_json::json!({"cmd": "cat /workspace/ok.txt /workspace/in/ok.txt; ls /workspace"}),
        )
        .await;
    assert_eq!(
        body["result"]["stdout"], "fine\nfine\nin\nok.txt\n",
        "{body}"
    );
    let back = here.path().join("back.txt");
    let out = cp_as(
        &url,
        "abs",
        "ada",
        ":/workspace/in/ok.txt",
        back.to_str().unwrap(),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(std::fs::read_to_string(&back).unwrap(), "fine\n");
}

#[tokio::test]
async fn a_path_outside_the_workspace_is_refused_before_sending() {
    let here = tempfile::tempdir().unwrap();
    let local = here.path().join("x");
    std::fs::write(&local, "x").unwrap();
    // Nothing listens there: a request would say it cannot reach it.
    let nowhere = "http://127.0.0.1:9";
    let out = cp_as(nowhere, "r", "ada", local.to_str().unwrap(), ":/tmp/x");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stderr(&out),
        "duet: /tmp/x is outside /workspace: only files in the room's /workspace can be copied\n"
    );
    let out = cp_as(nowhere, "r", "ada", ":/etc/passwd", "-");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("/etc/passwd is outside /workspace"),
        "{}",
        stderr(&out)
    );
    assert!(out.stdout.is_empty());
    let out = cp_as(nowhere, "r", "ada", local.to_str().unwrap(), ":/workspace");
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("folder, not a file"),
        "{}",
        stderr(&out)
    );
    let out = cp_as(nowhere, "r", "ada", ":docs/", here.path().to_str().unwrap());
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("is a folder"), "{}", stderr(&out));
}

#[tokio::test]
async fn a_path_the_server_refuses_is_explained_never_as_a_404() {
    let (server, _dir) = Server::fresh().await;
    let (_, body) = server
        .post(
            "/api/rooms/links/sandbox/exec",
            serde_json::json!({"cmd": "mkdir -p real && echo hi > real/f.txt && ln -s real link"}),
        )
        .await;
    assert_eq!(body["result"]["exitCode"], 0, "{body}");
    let out = cp_as(&server.url(""), "links", "ada", ":link/f.txt", "-");
    assert_eq!(out.status.code(), Some(1));
    let said = stderr(&out);
    assert!(
        said.starts_with("duet: /workspace/link/f.txt cannot be copied: ")
            && said.contains("(the server refused the path)"),
        "{said}"
    );
    assert!(!said.contains("404"), "{said}");
    let out = cp_as(&server.url(""), "links", "ada", ":real/nope.txt", "-");
    assert_eq!(
        stderr(&out),
        "duet: /workspace/real/nope.txt: no such file in the room's workspace (404)\n"
    );
}

/// Serves `PUT /api/rooms/{room}/files/{*path}`, answering as a backend
/// does and keeping each request's query; answers its base URL.
async fn recording_files() -> (String, std::sync::Arc<std::sync::Mutex<Vec<String>>>) {
    use axum::extract::{Path, RawQuery};
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = seen.clone();
    let app = axum::Router::new().route(
        "/api/rooms/{room}/files/{*path}",
        axum::routing::put(
            move |Path((_room, path)): Path<(String, String)>,
                  RawQuery(query): RawQuery,
                  body: axum::body::Bytes| {
                let keep = keep.clone();
                async move {
                    keep.lock().unwrap().push(query.unwrap_or_default());
                    axum::Json(serde_json::json!({"path": path, "size": body.len()}))
                }
            },
        ),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://{addr}"), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upload_says_who_uploaded_it() {
    // What the client sends on the wire (docs/protocol.md: `?userId=NAME`,
    // which the room's `upload` record names).
    let (url, seen) = recording_files().await;
    let here = tempfile::tempdir().unwrap();
    let local = here.path().join("notes.txt");
    std::fs::write(&local, "n").unwrap();
    let out = cp_as(&url, "r", "ada lovelace", local.to_str().unwrap(), ":docs/");
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(*seen.lock().unwrap(), ["userId=ada+lovelace"]);
}
