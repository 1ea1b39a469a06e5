//! One terminal, many people: opening, typing, late viewers, detach, the
//! size of the smallest window, its end (exit, close, cleanup), bad
//! requests, and keystrokes counted in bytes.

use super::*;

#[tokio::test]
async fn opening_tells_everyone_then_answers_then_sends_the_screen() {
    let (server, _dir) = Server::fresh().await;
    let mut watcher = server.joined("term-open", "user=bob").await;
    let ada = Viewer::attach(&server, "term-open", "ada", Some((90, 30))).await;
    // ada saw `open` before her answer; so does everyone else.
    let open = ada
        .others
        .iter()
        .find(|f| f["type"] == "duet_term" && f["phase"] == "open")
        .cloned()
        .expect("open before the answer");
    assert_eq!(
        open,
        json!({"type":"duet_term","phase":"open","termId":ada.term_id,"by":"ada","cols":90,"rows":30})
    );
    let seen = watcher.until(|f| f["type"] == "duet_term").await;
    assert_eq!(seen, open);
    // The room state says a terminal runs.
    let state = watcher.until_type("cf_agent_state").await;
    assert_eq!(
        state["state"]["terminal"],
        json!({"termId": ada.term_id, "cols": 90, "rows": 30})
    );
    // A socket that asked for deltas gets it as a patch of the state.
    let mut deltas = server.joined("term-open", "user=dee&deltas=1").await;
    let term_id = ada.term_id.clone();
    let mut ada = ada;
    ada.ws
        .send(json!({"type":"duet_term_resize","termId":term_id,"cols":70,"rows":20}))
        .await;
    let patch = deltas.until_type("duet_state").await;
    assert_eq!(
        patch["patch"]["terminal"],
        json!({"termId": term_id, "cols": 70, "rows": 20})
    );
    // A socket that joins now reads it on connect too.
    let mut late = server.ws("term-open", "user=cy").await;
    let state = late.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["terminal"]["termId"], ada.term_id.as_str());
}

#[tokio::test]
async fn two_people_type_and_both_see_the_echo() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-two", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    let mut bob = Viewer::attach(&server, "term-two", "bob", Some((80, 24))).await;
    assert_eq!(bob.term_id, ada.term_id, "one terminal per room");
    ada.type_in("echo from-$((40+2))-ada\r").await;
    ada.until_screen("from-42-ada").await;
    bob.until_screen("from-42-ada").await;
    bob.type_in("echo bob-was-$((6*7))\r").await;
    bob.until_screen("bob-was-42").await;
    ada.until_screen("bob-was-42").await;
    // ada is told who types into the terminal.
    let typing = ada
        .until_frame(|f| f["type"] == "duet_typing" && f["name"] == "bob")
        .await;
    assert_eq!(typing["termId"], ada.term_id.as_str());
}

#[tokio::test]
async fn a_late_viewer_gets_the_current_screen() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-late", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    ada.type_in("echo done-before\r").await;
    ada.until_screen("\ndone-before").await;
    ada.until_prompt().await;
    // A half-typed line, not yet run.
    ada.type_in("echo half-typ").await;
    ada.until_screen("echo half-typ").await;
    let bob = Viewer::attach(&server, "term-late", "bob", Some((80, 24))).await;
    let text = bob.text();
    assert!(text.contains("done-before"), "{text}");
    assert!(text.contains("echo half-typ"), "{text}");
    assert_eq!(
        bob.screen.screen().cursor_position(),
        ada.screen.screen().cursor_position()
    );
}

#[tokio::test]
async fn a_late_viewer_sees_a_running_full_screen_program() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-top", "ada", Some((100, 30))).await;
    ada.until_prompt().await;
    ada.type_in("top -d 0.3\r").await;
    ada.until_screen("load average").await;
    let mut bob = Viewer::attach(&server, "term-top", "bob", Some((100, 30))).await;
    let text = bob.text();
    assert!(
        text.contains("load average") && text.contains("PID"),
        "{text}"
    );
    // top goes on redrawing for both; q ends it.
    ada.type_in("q").await;
    bob.until_frame(|_| true).await;
    ada.until_prompt().await;
}

#[tokio::test]
async fn vim_edits_a_file_of_the_room_and_a_late_viewer_sees_it() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-vim", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    ada.type_in("vim notes.txt\r").await;
    // vim's own screen (not the echoed command): its new-file message.
    ada.until_screen("[New]").await;
    ada.type_in("iwritten in vim").await;
    ada.until_screen("-- INSERT --").await;
    ada.until_screen("written in vim").await;
    let bob = Viewer::attach(&server, "term-vim", "bob", Some((80, 24))).await;
    assert!(
        bob.screen.screen().alternate_screen(),
        "vim is on the alternate screen"
    );
    assert!(bob.text().contains("written in vim"), "{}", bob.text());
    ada.type_in("\x1b:wq\r").await;
    ada.until_prompt().await;
    let saved = tokio::time::timeout(SCREEN_WAIT, async {
        loop {
            let (_, read) = server
                .post(
                    "/api/rooms/term-vim/sandbox/exec",
                    json!({"cmd": "cat notes.txt"}),
                )
                .await;
            if read["result"]["stdout"] == "written in vim\n" {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await;
    assert!(saved.is_ok(), "vim saved the file into /workspace");
}

#[tokio::test]
async fn detach_stops_the_feed_and_refuses_input() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-detach", "ada", Some((80, 24))).await;
    let term_id = ada.term_id.clone();
    let answer = ada
        .ws
        .rpc(2, "term_detach", json!([{"termId": term_id}]))
        .await;
    assert_eq!(answer["result"], json!({"detached": true}), "{answer}");
    // Input from a socket that is not attached is refused.
    ada.type_in("echo nope\r").await;
    let refused = ada.until_frame(|f| f["type"] == "duet_error").await;
    assert!(
        refused["error"].as_str().unwrap().contains("not attached"),
        "{refused}"
    );
    // Detaching again: 404 naming termId.
    let again = ada
        .ws
        .rpc(3, "term_detach", json!([{"termId": term_id}]))
        .await;
    assert_eq!(again["success"], false);
    assert_eq!(again["status"], 404, "{again}");
    assert_eq!(again["error"], "not attached to that terminal");
    assert!(again["details"]["termId"].is_array(), "{again}");
    // The terminal ran on: attaching again finds it, and `nope` never ran.
    let back = Viewer::attach_on(ada.ws, Some((80, 24))).await;
    assert_eq!(back.term_id, term_id);
    assert!(!back.text().contains("nope"), "{}", back.text());
}

#[tokio::test]
async fn the_size_is_the_smallest_attached_window() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-size", "ada", Some((100, 30))).await;
    let bob = Viewer::attach(&server, "term-size", "bob", Some((80, 40))).await;
    assert_eq!(
        bob.screen.screen().size(),
        (30, 80),
        "rows 30 (ada), cols 80 (bob)"
    );
    let resize = ada.until_frame(term_frame("resize", &bob.term_id)).await;
    assert_eq!(
        (resize["cols"].clone(), resize["rows"].clone()),
        (json!(80), json!(30))
    );
    // The programs see it.
    ada.type_in("stty size\r").await;
    ada.until_screen("30 80").await;
    // bob resizes his window; then leaves: ada's size again.
    let mut bob = bob;
    bob.ws
        .send(json!({"type":"duet_term_resize","termId":bob.term_id,"cols":70,"rows":35}))
        .await;
    let resize = ada.until_frame(term_frame("resize", &bob.term_id)).await;
    assert_eq!(
        (resize["cols"].clone(), resize["rows"].clone()),
        (json!(70), json!(30))
    );
    bob.ws.close().await;
    let term_id = ada.term_id.clone();
    let resize = ada.until_frame(term_frame("resize", &term_id)).await;
    assert_eq!(
        (resize["cols"].clone(), resize["rows"].clone()),
        (json!(100), json!(30))
    );
    ada.type_in("stty size\r").await;
    ada.until_screen("30 100").await;
}

#[tokio::test]
async fn exit_ends_the_terminal_for_everyone() {
    let (server, _dir) = Server::fresh().await;
    let mut watcher = server.joined("term-exit", "user=bob").await;
    let mut ada = Viewer::attach(&server, "term-exit", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    ada.type_in("exit 3\r").await;
    let exit = ada
        .until_frame(term_frame("exit", &ada.term_id.clone()))
        .await;
    assert_eq!(
        exit,
        json!({"type":"duet_term","phase":"exit","termId":ada.term_id,"exitCode":3})
    );
    let seen = watcher
        .until(|f| f["type"] == "duet_term" && f["phase"] == "exit")
        .await;
    assert_eq!(seen, exit);
    let state = watcher
        .until(|f| f["type"] == "cf_agent_state" && f["state"]["terminal"].is_null())
        .await;
    assert!(state["state"]["terminal"].is_null());
    // The next term_open starts a new one.
    let again = Viewer::attach_on(ada.ws, None).await;
    assert_ne!(again.term_id, ada.term_id);
}

#[tokio::test]
async fn term_close_ends_it_and_names_unknown_terminals() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-close", "ada", Some((80, 24))).await;
    let mut watcher = server.joined("term-close", "user=bob").await;
    let term_id = ada.term_id.clone();
    // bob, not attached, may close it.
    let closed = watcher
        .rpc(5, "term_close", json!([{"termId": term_id}]))
        .await;
    assert_eq!(closed["result"], json!({"closed": true}), "{closed}");
    let exit = ada.until_frame(term_frame("exit", &term_id)).await;
    assert_eq!(exit["exitCode"], Value::Null);
    let again = watcher
        .rpc(6, "term_close", json!([{"termId": term_id}]))
        .await;
    assert_eq!(again["status"], 404, "{again}");
    assert_eq!(again["error"], "no such terminal");
    assert!(again["details"]["termId"].is_array());
}

#[tokio::test]
async fn cleanup_ends_the_terminal_first() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-clean", "ada", Some((80, 24))).await;
    ada.until_prompt().await;
    let (status, body) = server
        .post("/api/rooms/term-clean/cleanup", json!({"userId": "bob"}))
        .await;
    assert_eq!(status, 200, "{body}");
    let exit = ada
        .until_frame(term_frame("exit", &ada.term_id.clone()))
        .await;
    assert_eq!(exit["exitCode"], Value::Null);
    let cleanup = ada.until_frame(|f| f["type"] == "duet_cleanup").await;
    assert_eq!(cleanup["by"], "bob");
    assert!(
        !ada.others.iter().any(|f| f["type"] == "duet_cleanup"),
        "exit came first"
    );
    ada.others.clear();
    let state = ada.until_frame(|f| f["type"] == "cf_agent_state").await;
    assert!(state["state"]["terminal"].is_null(), "{state}");
}

#[tokio::test]
async fn bad_requests_are_answered_in_the_protocol_s_shapes() {
    let (server, _dir) = Server::fresh().await;
    let mut ws = server.joined("term-bad", "user=ada").await;
    let bad = ws
        .rpc(1, "term_open", json!([{"cols": "wide", "rows": 10}]))
        .await;
    assert_eq!(bad["status"], 400, "{bad}");
    assert_eq!(bad["error"], "invalid request");
    assert!(bad["details"]["cols"].is_array() && bad["details"]["rows"].is_null());
    let half = ws.rpc(2, "term_open", json!([{"cols": 80}])).await;
    assert!(half["details"]["rows"].is_array(), "{half}");
    let no_id = ws.rpc(3, "term_detach", json!([{}])).await;
    assert_eq!(no_id["status"], 400);
    assert!(no_id["details"]["termId"].is_array(), "{no_id}");
    // Frames for a terminal this socket never attached to.
    for frame in [
        json!({"type":"duet_term_input","termId":"t1","data":"aGk="}),
        json!({"type":"duet_term_resize","termId":"t1","cols":80,"rows":24}),
    ] {
        ws.send(frame).await;
        let refused = ws.until_type("duet_error").await;
        assert!(refused["error"].is_string());
    }
    // Attached, bad data and sizes are refused too; the socket stays.
    let mut ada = Viewer::attach_on(ws, Some((80, 24))).await;
    let term_id = ada.term_id.clone();
    for frame in [
        json!({"type":"duet_term_input","termId":term_id,"data":"%%% not base64"}),
        json!({"type":"duet_term_resize","termId":term_id,"cols":"wide","rows":24}),
    ] {
        ada.ws.send(frame).await;
        ada.until_frame(|f| f["type"] == "duet_error").await;
    }
    ada.type_in("echo still-$((1+1))\r").await;
    ada.until_screen("still-2").await;
}

#[tokio::test]
async fn keystrokes_count_in_bytes_not_frames() {
    let (server, _dir) = Server::fresh().await;
    let mut ada = Viewer::attach(&server, "term-rate", "ada", Some((400, 24))).await;
    ada.until_prompt().await;
    // Three times the frames a socket may send in a second, one key each.
    ada.type_in("echo ").await;
    for _ in 0..300 {
        ada.type_in("k").await;
    }
    ada.type_in("-$((300))\r").await;
    ada.until_screen(&format!("\n{}-300", "k".repeat(300)))
        .await;
    assert!(
        !ada.others.iter().any(|f| f["type"] == "duet_error"),
        "no frame was refused: {:?}",
        ada.others
    );
}
