//! A process's output: the log it keeps, following and unfollowing, every
//! byte in frames of at most 64 KiB, characters kept whole.

use super::*;

#[tokio::test]
async fn a_log_keeps_the_last_64_kib_of_each_stream() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-tail";
    // 40000 numbered lines (228,894 bytes) on stdout, a short line on stderr.
    let p = start(&server, room, json!({"cmd": "seq 1 40000; echo done >&2"})).await;
    let id = id_of(&p);
    ended(&server, room, &id).await;
    let log = logs(&server, room, &id).await;
    let all: String = (1..=40000).map(|i| format!("{i}\n")).collect();
    let stdout = log["stdout"].as_str().unwrap();
    assert_eq!(stdout.len(), 64 * 1024, "exactly the last 64 KiB");
    assert_eq!(stdout, &all[all.len() - 64 * 1024..]);
    assert_eq!(log["stderr"], "done\n");
    // The same for stderr, on its own.
    let p = start(&server, room, json!({"cmd": "echo hi; seq 1 40000 >&2"})).await;
    let id = id_of(&p);
    ended(&server, room, &id).await;
    let log = logs(&server, room, &id).await;
    assert_eq!(log["stdout"], "hi\n");
    assert_eq!(
        log["stderr"].as_str().unwrap(),
        &all[all.len() - 64 * 1024..]
    );

    // Three-byte characters: the cut falls inside one, which is dropped.
    let euros = start(
        &server,
        room,
        json!({"cmd": "python3 -c 'import sys; sys.stdout.buffer.write(\"€\".encode() * 30000)'"}),
    )
    .await;
    let id = id_of(&euros);
    let done = ended(&server, room, &id).await;
    assert_eq!(done["exitCode"], 0, "{done}");
    let stdout = logs(&server, room, &id).await["stdout"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(stdout, "€".repeat(65536 / 3), "21845 whole characters");
}

#[tokio::test]
async fn following_sends_the_log_so_far_then_the_rest_once_and_only_to_followers() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-follow";
    let mut follower = server.joined(room, "user=ada").await;
    let mut bystander = server.joined(room, "user=bob").await;
    let n = 1500;
    let p = start(&server, room, json!({"cmd": counter(n, "0.002")})).await;
    let id = id_of(&p);
    // Follow while it counts: some lines are printed already.
    printed(&server, room, &id, "\n50\n").await;
    let (answer, before) = follower
        .rpc_keeping(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let result = &answer["result"];
    assert_eq!(result["processId"], id.as_str());
    assert_eq!(result["stderr"], "");
    let so_far = result["stdout"].as_str().unwrap().to_string();
    assert!(
        so_far.starts_with("0\n1\n") && so_far.contains("\n50\n"),
        "{so_far:?}"
    );
    let (exit, after) = until_exit(&mut follower, &id).await;
    assert_eq!(exit["status"], "exited");
    let mut seen = so_far.clone();
    let frames: Vec<Value> = before.into_iter().chain(after).collect();
    for (stream, data) in output_of(&frames, &id) {
        assert_eq!(stream, "stdout");
        seen.push_str(&data);
    }
    // No gap, no line twice, and everything before the exit frame.
    assert_eq!(seen, counted(n));
    assert!(
        output_of(&frames, &id).len() < n,
        "output is coalesced into fewer frames than lines"
    );
    // Someone who did not follow got the start and the exit, no output.
    let (_, seen_by_bob) = until_exit(&mut bystander, &id).await;
    assert!(seen_by_bob.iter().any(process_frame("start", &id)));
    assert_eq!(output_of(&seen_by_bob, &id), vec![]);
}

#[tokio::test]
async fn unfollowing_stops_the_output_frames() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-unfollow";
    let mut ws = server.joined(room, "user=ada").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "while :; do echo tick; echo tock >&2; sleep 0.05; done"}),
    )
    .await;
    let id = id_of(&p);
    let answer = ws
        .rpc(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    let out = ws
        .until(|f| f["type"] == "duet_process" && f["phase"] == "stdout")
        .await;
    assert!(out["data"].as_str().unwrap().contains("tick"), "{out}");
    let err = ws
        .until(|f| f["type"] == "duet_process" && f["phase"] == "stderr")
        .await;
    assert!(err["data"].as_str().unwrap().contains("tock"), "{err}");

    let answer = ws
        .rpc(2, "process_unfollow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"], json!({"unfollowed": true}));
    // It keeps printing; this socket gets none of it any more.
    let before = logs(&server, room, &id).await["stdout"]
        .as_str()
        .unwrap()
        .len();
    wait_for("more output", || async {
        let now = logs(&server, room, &id).await["stdout"]
            .as_str()
            .unwrap()
            .len();
        (now > before + 40).then_some(())
    })
    .await;
    let (status, body) = delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    assert_eq!((status, body), (200, json!({"killed": true})));
    let (_, frames) = until_exit(&mut ws, &id).await;
    assert_eq!(output_of(&frames, &id), vec![], "no output after unfollow");
    // Unfollowing what one does not follow is fine too.
    let again = ws
        .rpc(3, "process_unfollow", json!([{"processId": id}]))
        .await;
    assert_eq!(again["result"], json!({"unfollowed": true}), "{again}");
}

#[tokio::test]
async fn a_follower_gets_every_byte_of_a_fast_process_in_frames_of_at_most_64_kib() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-fast";
    put_file(
        &server,
        room,
        "big.txt",
        "abcdefghij\n".repeat(100_000).into_bytes(),
    )
    .await;
    let mut ws = server.joined(room, "user=ada").await;
    // It waits for the follower before it prints 1.1 MB at once.
    let p = start(
        &server,
        room,
        json!({"cmd": "while [ ! -e go ]; do sleep 0.05; done; cat big.txt; echo end >&2"}),
    )
    .await;
    let id = id_of(&p);
    let (answer, before) = ws
        .rpc_keeping(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(
        answer["result"],
        json!({"processId": id, "stdout": "", "stderr": ""})
    );
    exec(&server, room, "touch go").await;
    let (exit, after) = until_exit(&mut ws, &id).await;
    assert_eq!(exit["exitCode"], 0, "{exit}");
    let frames: Vec<Value> = before.into_iter().chain(after).collect();
    let (mut out, mut err) = (String::new(), String::new());
    for (stream, data) in output_of(&frames, &id) {
        assert!(data.len() <= 64 * 1024, "a frame of {} bytes", data.len());
        if stream == "stdout" {
            out.push_str(&data)
        } else {
            err.push_str(&data)
        }
    }
    assert!(
        out.len() == 1_100_000 && out == "abcdefghij\n".repeat(100_000),
        "{} bytes came",
        out.len()
    );
    assert_eq!(err, "end\n");
}

#[tokio::test]
async fn a_character_split_between_writes_arrives_whole() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-utf8";
    let mut ws = server.joined(room, "user=ada").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "while [ ! -e go ]; do sleep 0.05; done; printf '\\xe2'; sleep 0.3; printf '\\x82\\xac\\n'"}),
    )
    .await;
    let id = id_of(&p);
    let answer = ws
        .rpc(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    exec(&server, room, "touch go").await;
    let (_, frames) = until_exit(&mut ws, &id).await;
    let out: String = output_of(&frames, &id)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(out, "€\n", "the frames");
    assert_eq!(logs(&server, room, &id).await["stdout"], "€\n", "the log");
}

#[tokio::test]
async fn following_twice_still_sends_each_output_once_and_an_ended_process_can_be_followed() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-follow-twice";
    let mut ws = server.joined(room, "user=ada").await;
    let n = 300;
    let p = start(
        &server,
        room,
        json!({"cmd": format!("while [ ! -e go ]; do sleep 0.05; done; {}", counter(n, "0.005"))}),
    )
    .await;
    let id = id_of(&p);
    let (first, mut frames) = ws
        .rpc_keeping(1, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(first["success"], true, "{first}");
    let (second, before) = ws
        .rpc_keeping(2, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(second["success"], true, "{second}");
    frames.extend(before);
    exec(&server, room, "touch go").await;
    let (_, after) = until_exit(&mut ws, &id).await;
    frames.extend(after);
    let out: String = output_of(&frames, &id)
        .into_iter()
        .map(|(_, d)| d)
        .collect();
    assert_eq!(out, counted(n), "each line once");
    // Following one that ended answers its log; nothing follows.
    let late = ws
        .rpc(3, "process_follow", json!([{"processId": id}]))
        .await;
    assert_eq!(late["success"], true, "{late}");
    assert_eq!(
        late["result"],
        json!({"processId": id, "stdout": counted(n), "stderr": ""})
    );
}
