//! A command cut by a server's stop: `tick 1..20`, one a second, started
//! over HTTP and watched on a socket until it printed enough.

use super::{Server, Ws, answer, http};
use serde_json::{Value, json};

/// The command: prints `tick 1` … `tick 20`, one a second.
pub const TICKS: &str = "for i in $(seq 1 20); do echo tick $i; sleep 1; done";

/// What a command the server's stop cut off is stored with.
pub const STOPPED: &str = "the server stopped while it ran";

/// Starts `TICKS` in `room` (its request left waiting) and returns once
/// the socket `ws` saw it print `tick {upto}`.
pub async fn ticking(server: &Server, ws: &mut Ws, room: &str, upto: u32) {
    let mut req = http()
        .post(server.url(&format!("/api/rooms/{room}/sandbox/exec")))
        .json(&json!({ "cmd": TICKS }));
    if let Some(t) = &server.token {
        req = req.bearer_auth(t);
    }
    // Answered (with an error) only when the server goes.
    tokio::spawn(answer(req));
    let mut printed = String::new();
    let want = format!("tick {upto}\n");
    while !printed.contains(&want) {
        let frame = ws
            .until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
            .await;
        printed.push_str(frame["data"].as_str().unwrap_or_default());
    }
}

/// The stored record of `TICKS` in `room`, from `GET /execs`.
pub async fn ticks_record(server: &Server, room: &str) -> Value {
    let (status, page) = server.get(&format!("/api/rooms/{room}/execs")).await;
    assert_eq!(status, 200, "{page}");
    page["execs"]
        .as_array()
        .and_then(|execs| execs.iter().find(|e| e["cmd"] == TICKS))
        .cloned()
        .unwrap_or_else(|| panic!("the cut command is not in /execs: {page}"))
}

/// Asserts `record` is `TICKS` ended by the server's stop after printing
/// at least ticks 1..=`upto`.
pub fn assert_cut_off(record: &Value, upto: u32) {
    let printed: String = (1..=upto).map(|i| format!("tick {i}\n")).collect();
    let stdout = record["stdout"].as_str().unwrap_or_default();
    assert!(stdout.starts_with(&printed), "{record}");
    assert!(!stdout.contains("tick 20"), "it ran to its end: {record}");
    assert_eq!(record["exitCode"], Value::Null, "{record}");
    assert_eq!(record["error"], STOPPED, "{record}");
}

/// Who joins `room` now sees the ticking command cut off after tick
/// `upto`, in the state's commands.
pub async fn assert_state_cut_off(server: &Server, room: &str, upto: u32) {
    let mut ws = server.ws(room, "user=bob").await;
    ws.next().await;
    let state = ws.next().await;
    let execs = state["state"]["execs"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let record = execs.iter().find(|e| e["cmd"] == TICKS);
    assert_cut_off(record.unwrap_or(&state), upto);
}
