//! kill -9 of `duet serve` in the middle of things: after a restart no
//! acknowledged message is lost, an upload is whole or absent, the room
//! answers, and nothing of the dead server's sandboxes is left behind.

use crate::common;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::{Server, answer, http};
use serde_json::json;
use std::path::Path;
use std::time::Duration;

/// Host mounts beneath `dir` (the quota images of its rooms).
fn mounts_under(dir: &Path) -> Vec<String> {
    let dir = std::fs::canonicalize(dir).unwrap();
    std::fs::read_to_string("/proc/self/mounts")
        .unwrap()
        .lines()
        .filter_map(|l| l.split_whitespace().nth(1).map(String::from))
        .filter(|m| Path::new(m).starts_with(&dir))
        .collect()
}

/// Processes of the sandboxes of data directory `dir`: as root, each room
/// runs as its own uid in a range picked from the data directory. Without
/// root the rooms share the server's uid and cannot be told apart.
fn sandbox_processes(dir: &Path) -> Option<Vec<u32>> {
    let base = duet::sandbox::local::room_uid(dir, 0)?;
    let range = base..base + 65_536;
    Some(
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let status =
                    std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
                status
                    .lines()
                    .find_map(|l| l.strip_prefix("Uid:"))
                    .and_then(|l| l.split_whitespace().next()?.parse::<u32>().ok())
                    .is_some_and(|uid| range.contains(&uid))
            })
            .collect(),
    )
}

/// Polls until `f` holds (the kernel reaps asynchronously), up to 10 s.
async fn eventually(f: impl Fn() -> bool) -> bool {
    for _ in 0..100 {
        if f() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test]
async fn a_crash_during_a_streaming_command_leaves_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let (status, _) = server
        .post(
            "/api/rooms/crash/sandbox/exec",
            json!({"cmd":"echo kept > kept.txt"}),
        )
        .await;
    assert_eq!(status, 200);
    let mut ws = server.joined("crash", "user=ada").await;
    let url = server.url("/api/rooms/crash/sandbox/exec");
    let streaming =
        tokio::spawn(answer(http().post(url).json(
            &json!({"cmd":"for i in $(seq 1 100); do echo line$i; sleep 0.1; done"}),
        )));
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    server.crash().await;
    let _ = streaming.await; // the request fails with the server
    match sandbox_processes(dir.path()) {
        Some(_) => assert!(
            eventually(|| sandbox_processes(dir.path()).is_some_and(|p| p.is_empty())).await,
            "sandbox processes outlived their server: {:?}",
            sandbox_processes(dir.path())
        ),
        None => eprintln!("not root: the rooms' processes cannot be told apart; not checked"),
    }

    let server = Server::start(dir.path(), &[]).await;
    assert_eq!(
        mounts_under(dir.path()),
        Vec::<String>::new(),
        "stale mounts after restart"
    );
    let (status, body) = server
        .post(
            "/api/rooms/crash/sandbox/exec",
            json!({"cmd":"cat kept.txt"}),
        )
        .await;
    assert_eq!(
        (status, body["result"]["stdout"].as_str()),
        (200, Some("kept\n")),
        "{body}"
    );
}

/// What `duet serve` has stored so far of the command `cmd` still running
/// in `dir`'s database.
fn stored_output(dir: &Path, cmd: &str) -> String {
    let Ok(db) = rusqlite::Connection::open_with_flags(
        dir.join("duet.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    ) else {
        return String::new();
    };
    db.query_row(
        "SELECT stdout FROM execs WHERE cmd = ?1 AND ended = 0",
        [cmd],
        |r| r.get(0),
    )
    .unwrap_or_default()
}

#[tokio::test]
async fn a_command_cut_by_a_crash_is_kept_with_what_it_printed() {
    use common::ticks::{TICKS, assert_cut_off, assert_state_cut_off, ticking, ticks_record};
    if common::only_duet_serve("kill -9 of the server and its database file") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let mut ws = server.joined("cut9", "user=ada").await;
    ticking(&server, &mut ws, "cut9", 3).await;
    // Output is written as it streams, in batches: wait until tick 3 is.
    assert!(
        eventually(|| stored_output(dir.path(), TICKS).contains("tick 3\n")).await,
        "the running command's output is not stored as it streams"
    );
    server.crash().await;

    let server = Server::start(dir.path(), &[]).await;
    assert_cut_off(&ticks_record(&server, "cut9").await, 3);
    assert_state_cut_off(&server, "cut9", 3).await;
}

#[tokio::test]
async fn a_crash_during_a_turn_keeps_the_question_and_says_so() {
    let model = FakeModel::start(vec![Script::Paced(
        (0..100).map(|i| format!("word{i} ")).collect(),
        Duration::from_millis(100),
    )])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let args = model.one_round_args();
    let server = Server::start(dir.path(), &args).await;
    let mut ws = server.joined("turn", "user=ada").await;
    let url = server.url("/api/rooms/turn/message");
    let asking = tokio::spawn(answer(
        http()
            .post(url)
            .json(&json!({"text":"explain everything","userId":"ada"})),
    ));
    ws.until(|f| f["type"] == "duet_ai" && f["phase"] == "delta")
        .await;
    server.crash().await;
    let _ = asking.await;

    let server = Server::start(dir.path(), &args).await;
    let (status, page) = server.get("/api/rooms/turn/messages").await;
    assert_eq!(status, 200);
    let messages = page["messages"].as_array().unwrap();
    let texts: Vec<_> = messages
        .iter()
        .map(|m| m["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts[0], "explain everything", "{page}");
    assert_eq!(messages.len(), 2, "{page}");
    assert_eq!(messages[1]["role"], "system");
    assert!(
        texts[1].contains("restarted before the agent answered"),
        "{page}"
    );
    // The room answers.
    let (status, _) = server
        .post("/api/rooms/turn/sandbox/exec", json!({"cmd":"true"}))
        .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_crash_during_an_upload_leaves_the_old_file_or_none() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let put = |server: &Server, body: reqwest::Body| {
        http()
            .put(server.url("/api/rooms/up/files/data.bin"))
            .body(body)
    };
    let (status, _) = answer(put(&server, "old".into())).await;
    assert_eq!(status, 200);
    // A 48 MiB upload that stalls half way.
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Vec<u8>, std::io::Error>>(4);
    let body = reqwest::Body::wrap_stream(tokio_stream_from(rx));
    let uploading = tokio::spawn(answer(put(&server, body)));
    for _ in 0..24 {
        tx.send(Ok(vec![b'x'; 1 << 20])).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.crash().await;
    drop(tx);
    let _ = uploading.await;

    let server = Server::start(dir.path(), &[]).await;
    let res = http()
        .get(server.url("/api/rooms/up/files/data.bin"))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status().as_u16(), 200);
    assert_eq!(&res.bytes().await.unwrap()[..], b"old", "a torn upload");
}

/// A stream of the channel's items (reqwest's body wants a `Stream`).
fn tokio_stream_from(
    mut rx: tokio::sync::mpsc::Receiver<Result<Vec<u8>, std::io::Error>>,
) -> impl futures_util::Stream<Item = Result<Vec<u8>, std::io::Error>> {
    futures_util::stream::poll_fn(move |cx| rx.poll_recv(cx))
}

#[tokio::test]
async fn a_second_server_on_the_same_data_directory_is_refused_and_ends_nothing() {
    use common::ticks::ticking;
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let mut ws = server.joined("twice", "user=ada").await;
    ticking(&server, &mut ws, "twice", 1).await;
    // Started by mistake on the same folder (any port): it says why and
    // stops before it touches anything.
    let second = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(dir.path())
        .output();
    let second = tokio::time::timeout(Duration::from_secs(20), second)
        .await
        .expect("the second server gives up in time")
        .unwrap();
    assert!(!second.status.success());
    let said = String::from_utf8_lossy(&second.stderr);
    assert!(
        said.contains("another duet uses this data directory"),
        "{said}"
    );
    // The first one's command still runs: no record of it ended yet.
    let (status, page) = server.get("/api/rooms/twice/execs").await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(page["execs"], json!([]), "{page}");
    drop(ws);
    server.stop().await;
}

#[tokio::test]
async fn a_process_cut_by_a_crash_is_listed_as_exited() {
    use common::apps::{ended, room_path, start};
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &[]).await;
    let first = start(&server, "crashp", json!({"cmd": "exit 4"})).await;
    let first = first["id"].as_str().unwrap().to_string();
    assert_eq!(ended(&server, "crashp", &first).await["exitCode"], 4);
    let running = start(&server, "crashp", json!({"cmd": "sleep 300"})).await;
    server.crash().await;

    let server = Server::start(dir.path(), &[]).await;
    let (status, list) = server.get(&room_path("crashp", "/processes")).await;
    assert_eq!(status, 200, "{list}");
    let listed = list["processes"].as_array().unwrap();
    assert_eq!(listed.len(), 2, "{list}");
    assert_eq!(
        (&listed[0]["id"], &listed[0]["exitCode"]),
        (&json!(first), &json!(4))
    );
    assert_eq!(listed[1]["id"], running["id"], "{list}");
    assert_eq!(listed[1]["status"], "exited", "{list}");
    assert_eq!(listed[1]["exitCode"], serde_json::Value::Null, "{list}");
    assert!(listed[1]["endedAt"].is_u64(), "{list}");
    // The next process does not take an id the list holds.
    let next = start(&server, "crashp", json!({"cmd": "true"})).await;
    assert!(
        !listed.iter().any(|p| p["id"] == next["id"]),
        "{next} {list}"
    );
}

#[tokio::test]
async fn a_stop_ends_a_running_command_with_its_complete_frame_before_the_socket_closes() {
    let (server, _dir) = Server::fresh().await;
    let mut ws = server.joined("st", "user=ada").await;
    let exec = {
        let url = server.url("/api/rooms/st/sandbox/exec");
        tokio::spawn(answer(
            http().post(url).json(&json!({"cmd": "echo up; sleep 30"})),
        ))
    };
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    server.stop().await;
    let complete = ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "complete")
        .await;
    assert_eq!(complete["error"], common::ticks::STOPPED, "{complete}");
    assert_eq!(complete["exitCode"], serde_json::Value::Null);
    // Whoever waited for the command is answered that the room stopped.
    let (status, _) = exec.await.unwrap();
    assert_eq!(status, 500);
}
