//! A restore brings the files back; what it stops first (the command, the processes, the
//! terminal, a turn), the fresh shell after it, and who sees it.

use super::*;

/// A room with files of every kind copied: a file with a mode and an mtime
/// of its own, a folder, a symlink, a FIFO (left out of a checkpoint).
const TREE: &str = "set -e; cd /workspace; printf hello > a.txt; mkdir -p d/e; \
    printf 'echo run' > d/run.sh; chmod 750 d/run.sh; touch -d @1500000000 d/run.sh; \
    printf 1234567 > d/e/b.txt; ln -s a.txt link; mkfifo pipe";

/// What the shell says of TREE's files: contents, modes, mtimes, the link.
const LOOK: &str = "cd /workspace; cat a.txt; echo; cat d/e/b.txt; echo; \
    stat -c '%a %Y' d/run.sh; readlink link; ls -A | tr '\\n' ' '";

#[tokio::test]
async fn a_checkpoint_a_change_and_a_restore_bring_the_files_back_and_the_later_ones_go() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-basic";
    let made = exec(&server, room, TREE).await;
    assert_eq!(made["exitCode"], 0, "{made}");
    let before = sh(&server, room, LOOK).await;
    assert_eq!(
        before,
        "hello\n1234567\n750 1500000000\na.txt\na.txt d link pipe "
    );
    let asked = now_ms();
    let c = create(&server, room, json!({"userId": "ada"})).await;
    check_shape(&c);
    assert_eq!(c["id"], "c1", "{c}");
    assert_eq!(c["name"], "checkpoint-1", "the default name: {c}");
    assert_eq!(c["by"], "ada");
    assert_eq!(c["auto"], false);
    assert!(c.get("turnId").is_none(), "a person's has no turn: {c}");
    // hello (5) + echo run (8) + 1234567 (7) + the link's target a.txt (5).
    assert_eq!(c["size"], 25, "{c}");
    let ts = c["ts"].as_u64().unwrap();
    assert!(ts + 60_000 >= asked && ts <= now_ms() + 60_000, "{c}");
    assert_eq!(list(&server, room).await, vec![c.clone()]);

    // Change everything: in place (the same inode), modes, the link, new files.
    exec(
        &server,
        room,
        "set -e; echo more >> a.txt; printf X > d/e/b.txt; chmod 600 d/run.sh; touch d/run.sh; \
         rm link; ln -s d/e/b.txt link; mkdir later; echo new > later/new.txt; echo top > top.txt; \
         rm pipe",
    )
    .await;
    restored(&server, room, "c1").await;
    assert_eq!(
        sh(&server, room, LOOK).await,
        "hello\n1234567\n750 1500000000\na.txt\na.txt d link ",
        "the files as they were; the later ones gone; no FIFO"
    );
    assert_eq!(read(&server, room, "top.txt").await, None);
    assert_eq!(read(&server, room, "later/new.txt").await, None);
    // The checkpoint stays, and can be restored again.
    assert_eq!(list(&server, room).await, vec![c.clone()]);

    // A later write in the room does not touch the checkpoint: the restored
    // files are copies too.
    exec(
        &server,
        room,
        "set -e; echo again >> a.txt; : > d/e/b.txt; rm -r d/e; echo 2 > top.txt",
    )
    .await;
    restored(&server, room, "c1").await;
    assert_eq!(
        sh(&server, room, LOOK).await,
        "hello\n1234567\n750 1500000000\na.txt\na.txt d link "
    );
    assert_eq!(read(&server, room, "top.txt").await, None);
    assert_eq!(list(&server, room).await, vec![c]);
}

#[tokio::test]
async fn a_restore_stops_the_command_the_processes_and_the_terminal_then_records_then_answers() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-order";
    put_file(&server, room, "f.txt", b"kept".to_vec()).await;
    let c = create(&server, room, json!({"name": "base"})).await;
    let mut ann = server.joined(room, "user=ann&deltas=1").await;
    let mut full = server.joined(room, "user=bob").await;
    // A terminal, a background process and a running command.
    let term = ann
        .rpc(1, "term_open", json!([{"cols": 80, "rows": 24}]))
        .await;
    assert_eq!(term["success"], true, "{term}");
    let term_id = term["result"]["termId"].clone();
    let process = start(&server, room, json!({"cmd": "sleep 300"})).await;
    let process_id = process["id"].clone();
    let running = tokio::spawn(answer(with_token(
        &server,
        http()
            .post(server.url(&room_path(room, "/sandbox/exec")))
            .json(&json!({"cmd": "sleep 600", "userId": "bob"})),
    )));
    let started = ann
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start" && f["cmd"] == "sleep 600")
        .await;
    let exec_id = started["execId"].clone();
    exec_later_write(&server, room).await;

    let (answer, frames) = ann
        .rpc_keeping(
            2,
            "checkpoint_restore",
            json!([{"checkpointId": id_of(&c)}]),
        )
        .await;
    assert_eq!(answer["success"], true, "{answer}");
    assert_eq!(answer["result"], json!({"restored": true}));
    let interrupted = position(&frames, "the command's end", |f| {
        f["type"] == "duet_exec" && f["phase"] == "complete" && f["execId"] == exec_id
    });
    assert_eq!(
        frames[interrupted]["interrupted"], true,
        "{}",
        frames[interrupted]
    );
    let process_exit = position(&frames, "the process's exit", |f| {
        f["type"] == "duet_process" && f["phase"] == "exit" && f["processId"] == process_id
    });
    assert_eq!(
        frames[process_exit]["status"], "killed",
        "{}",
        frames[process_exit]
    );
    let term_exit = position(&frames, "the terminal's exit", |f| {
        f["type"] == "duet_term" && f["phase"] == "exit" && f["termId"] == term_id
    });
    let record = position(&frames, "the restore record", record_frame("restore"));
    assert!(
        interrupted < record && process_exit < record && term_exit < record,
        "the command, the process and the terminal end before the record: {frames:#?}"
    );
    assert_eq!(
        frames[record]["message"]["event"],
        json!({"kind":"restore","by":"ann","checkpointId":id_of(&c),"name":"base"})
    );
    // The command's own answer says it was interrupted.
    let (status, body) = running.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["result"]["interrupted"], true, "{body}");
    assert_eq!(body["result"]["success"], false, "{body}");

    // Everyone's view: the full state ends with the record, nothing runs,
    // the next command runs in /workspace; the checkpoint is kept.
    let state = full
        .until(|f| {
            f["type"] == "cf_agent_state"
                && f["state"]["messages"]
                    .as_array()
                    .and_then(|m| m.last())
                    .is_some_and(|m| m["event"]["kind"] == "restore")
        })
        .await;
    let state = &state["state"];
    assert_eq!(state["shell"]["cwd"], "/workspace", "{state}");
    assert_eq!(state["checkpoints"], json!([c]));
    let mut late = server.ws(room, "user=cy").await;
    let now = late.until_type("cf_agent_state").await;
    let now = &now["state"];
    assert_eq!(now["terminal"], Value::Null, "{now}");
    assert_eq!(now["shell"]["cwd"], "/workspace");
    for p in now["processes"].as_array().unwrap() {
        assert_ne!(p["status"], "running", "{p}");
    }
    assert_eq!(read(&server, room, "f.txt").await.as_deref(), Some("kept"));
    assert_eq!(read(&server, room, "later.txt").await, None);
}

/// A file written after the checkpoint (while the command runs, through
/// the files route).
async fn exec_later_write(server: &Server, room: &str) {
    put_file(server, room, "later.txt", b"later".to_vec()).await;
    put_file(server, room, "f.txt", b"changed".to_vec()).await;
}

#[tokio::test]
async fn a_restore_during_a_turn_cancels_it_first() {
    let model =
        FakeModel::start(vec![Script::chunked("Let me wait.<run>sleep 600</run>", 4)]).await;
    let (server, _dir) = with_model(&model, &[]).await;
    let room = "cp-turn";
    put_file(&server, room, "f.txt", b"kept".to_vec()).await;
    let c = create(&server, room, json!({"name": "safe"})).await;
    let mut ann = server.joined(room, "user=ann&deltas=1").await;
    let asked = tokio::spawn(answer(with_token(
        &server,
        http()
            .post(server.url(&room_path(room, "/message")))
            .json(&json!({"text": "wait a bit", "userId": "ada"})),
    )));
    let started = ann
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "start" && f["source"] == "agent")
        .await;
    let exec_id = started["execId"].clone();
    let (answer, frames) = ann
        .rpc_keeping(
            1,
            "checkpoint_restore",
            json!([{"checkpointId": id_of(&c)}]),
        )
        .await;
    assert_eq!(answer["result"], json!({"restored": true}), "{answer}");
    let agent = position(&frames, "the cancelled agent message", |f| {
        f["type"] == "duet_message"
            && f["message"]["role"] == "agent"
            && f["message"]["cancelledBy"] == "ann"
    });
    let cancel = position(&frames, "the cancel record", record_frame("cancel"));
    let record = position(&frames, "the restore record", record_frame("restore"));
    let interrupted = position(&frames, "the command's end", |f| {
        f["type"] == "duet_exec" && f["phase"] == "complete" && f["execId"] == exec_id
    });
    assert!(
        agent < cancel && cancel < record && interrupted < record,
        "the turn's message, its cancel, then the restore: {frames:#?}"
    );
    assert_eq!(frames[interrupted]["interrupted"], true);
    assert_eq!(frames[cancel]["message"]["event"]["by"], "ann");
    // The turn's own request is answered as a cancelled one.
    let (status, body) = asked.await.unwrap();
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["reply"], Value::Null, "{body}");
    assert!(body["error"].is_string(), "{body}");
    // Stored in that order: the agent's message, the cancel, the restore last.
    let stored = messages(&server, room).await;
    let at = |ok: &dyn Fn(&Value) -> bool| stored.iter().position(ok).expect("stored");
    let agent = at(&|m| m["role"] == "agent" && m["cancelledBy"] == "ann");
    let cancel = at(&|m| m["event"]["kind"] == "cancel");
    let record = at(&|m| m["event"]["kind"] == "restore");
    assert!(agent < cancel && cancel < record, "{stored:?}");
    assert_eq!(record, stored.len() - 1, "{stored:?}");
    // The automatic checkpoint of the turn and the person's are both kept.
    let kept = list(&server, room).await;
    assert_eq!(kept.len(), 2, "{kept:?}");
    assert_eq!(kept[0], c);
    assert_eq!(kept[1]["auto"], true);
}

#[tokio::test]
async fn commands_after_a_restore_run_in_a_fresh_shell_in_the_workspace() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-cwd";
    exec(&server, room, "mkdir -p sub").await;
    let c = create(&server, room, json!({})).await;
    exec(&server, room, "cd sub && export DUET_VAR=set").await;
    assert_eq!(
        sh(&server, room, "pwd; echo \"[$DUET_VAR]\"").await,
        "/workspace/sub\n[set]\n"
    );
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    restored(&server, room, &id_of(&c)).await;
    let patch = deltas
        .until(|f| f["type"] == "duet_state" && f["patch"]["shell"]["cwd"] == "/workspace")
        .await;
    assert_eq!(patch["patch"]["shell"], json!({"cwd": "/workspace"}));
    assert_eq!(
        sh(&server, room, "pwd; echo \"[$DUET_VAR]\"").await,
        "/workspace\n[]\n"
    );
}

#[tokio::test]
async fn a_restore_is_seen_by_everyone_with_who_did_it() {
    let (server, _dir) = Server::fresh().await;
    let room = "cp-seen";
    put_file(&server, room, "f.txt", b"one".to_vec()).await;
    let c = create(&server, room, json!({"name": "one"})).await;
    put_file(&server, room, "f.txt", b"two".to_vec()).await;
    let mut full = server.joined(room, "user=bob").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let got = restore(&server, room, &id_of(&c), json!({"userId": "ann"})).await;
    assert_eq!(got, (200, json!({"restored": true})));
    let record = the_record(&server, room, "restore").await;
    assert_eq!(
        record["event"],
        json!({"kind":"restore","by":"ann","checkpointId":id_of(&c),"name":"one"})
    );
    full.until(|f| {
        f["type"] == "cf_agent_state"
            && f["state"]["messages"]
                .as_array()
                .is_some_and(|m| m.contains(&record))
    })
    .await;
    let seen = deltas.until(record_frame("restore")).await;
    assert_eq!(seen["message"], record);
    wait_for("the restored file", || async {
        (read(&server, room, "f.txt").await.as_deref() == Some("one")).then_some(())
    })
    .await;
}
