//! Processes and their room: a cleanup, the ended ones kept, the sandbox
//! kept from idling, a group ending with its first process, a restart.

use super::*;

#[tokio::test]
async fn cleanup_kills_the_processes_first_and_empties_the_lists() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-cleanup";
    let mut full = server.joined(room, "user=bob").await;
    let mut deltas = server.joined(room, "user=dee&deltas=1").await;
    let a = id_of(&start(&server, room, json!({"cmd": "sleep 300"})).await);
    let b = id_of(&start(&server, room, json!({"cmd": "python3 -m http.server 8000"})).await);
    common::apps::listening(&server, room, 8000).await;
    let (status, body) = server
        .post(&room_path(room, "/cleanup"), json!({"userId": "ada"}))
        .await;
    assert_eq!(status, 200, "{body}");
    for ws in [&mut full, &mut deltas] {
        let mut exits = Vec::new();
        loop {
            let frame = ws.next().await;
            if frame["type"] == "duet_cleanup" {
                break;
            }
            if frame["type"] == "duet_process" && frame["phase"] == "exit" {
                assert_eq!(frame["status"], "killed", "{frame}");
                exits.push(frame["processId"].as_str().unwrap().to_string());
            }
        }
        exits.sort();
        let mut want = vec![a.clone(), b.clone()];
        want.sort();
        assert_eq!(exits, want, "both exit frames before duet_cleanup");
        let state = ws.until_type("cf_agent_state").await;
        assert_eq!(state["state"]["processes"], json!([]));
        assert_eq!(state["state"]["ports"], json!([]));
    }
    let (_, list) = server.get(&room_path(room, "/processes")).await;
    assert_eq!(list, json!({"processes": []}));
    assert_eq!(
        common::apps::ports(&server, room).await,
        Vec::<Value>::new()
    );
    // Ids are not used again after a cleanup.
    let next = id_of(&start(&server, room, json!({"cmd": "true"})).await);
    assert!(next != a && next != b, "{next} was used before the cleanup");
}

#[tokio::test]
async fn the_room_keeps_the_last_twenty_ended_processes_oldest_first() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-kept";
    let mut ids = Vec::new();
    for i in 0..22 {
        let p = start(&server, room, json!({"cmd": format!("echo {i}")})).await;
        ended(&server, room, &id_of(&p)).await;
        ids.push(id_of(&p));
    }
    let running = id_of(&start(&server, room, json!({"cmd": "sleep 300"})).await);
    let (_, list) = server.get(&room_path(room, "/processes")).await;
    let listed: Vec<String> = list["processes"]
        .as_array()
        .unwrap()
        .iter()
        .map(id_of)
        .collect();
    let mut want: Vec<String> = ids[2..].to_vec();
    want.push(running);
    assert_eq!(
        listed, want,
        "the last 20 ended and the one running, oldest first"
    );
    // The ones kept keep their logs; the ones dropped are unknown.
    assert_eq!(logs(&server, room, &ids[21]).await["stdout"], "21\n");
    let (status, _) = server
        .get(&room_path(room, &format!("/processes/{}", ids[0])))
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_running_process_keeps_the_sandbox_and_the_room_from_idling() {
    if common::only_duet_serve("--sandbox-idle-secs and --room-idle-secs, duet serve flags") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(
        dir.path(),
        &["--sandbox-idle-secs", "1", "--room-idle-secs", "1"],
    )
    .await;
    let room = "proc-idle";
    exec(&server, room, "cd /tmp").await;
    let p = start(
        &server,
        room,
        json!({"cmd": "while :; do echo tick; sleep 0.2; done"}),
    )
    .await;
    let id = id_of(&p);
    // Well past both idle times, with no command and no socket.
    tokio::time::sleep(Duration::from_secs(4)).await;
    let now = process(&server, room, &id).await;
    assert_eq!(now["status"], "running", "{now}");
    let shell = exec(&server, room, "pwd").await;
    assert_eq!(
        shell["stdout"], "/tmp\n",
        "the sandbox did not stop: the shell is where it was"
    );
    // Once it is stopped, the sandbox idles out as usual.
    delete(&server, &room_path(room, &format!("/processes/{id}"))).await;
    wait_for("the sandbox to stop", || async {
        // Each check is a command, which the idle time counts from.
        tokio::time::sleep(Duration::from_secs(3)).await;
        let shell = exec(&server, room, "pwd").await;
        (shell["stdout"] == "/workspace\n").then_some(())
    })
    .await;
}

#[tokio::test]
async fn the_rest_of_its_group_ends_when_its_first_process_does() {
    let (server, _dir) = Server::fresh().await;
    let room = "proc-group";
    // bash starts a child in the background and exits at once.
    let p = start(&server, room, json!({"cmd": "sleep 300 & echo started"})).await;
    let done = ended(&server, room, &id_of(&p)).await;
    assert_eq!(
        (done["status"].clone(), done["exitCode"].clone()),
        (json!("exited"), json!(0))
    );
    wait_for("the group's sleep to be gone", || async {
        let left = exec(&server, room, LIVING_SLEEPS).await;
        (left["stdout"] == "0\n").then_some(())
    })
    .await;
}

#[tokio::test]
async fn after_a_restart_the_processes_are_listed_ended_with_their_logs() {
    let dir = tempfile::tempdir().unwrap();
    let listen = format!("127.0.0.1:{}", common::free_port());
    let server = Server::start_at(&listen, dir.path(), &[]).await;
    let room = "proc-restart";
    let done = id_of(&start(&server, room, json!({"cmd": "echo kept; exit 3"})).await);
    assert_eq!(ended(&server, room, &done).await["exitCode"], 3);
    let running = start(&server, room, json!({"cmd": "echo before; sleep 300"})).await;
    let id = id_of(&running);
    printed(&server, room, &id, "before\n").await;
    server.stop().await;
    let server = Server::start_at(&listen, dir.path(), &[]).await;

    // The sandbox went away with the server: the process that ran is
    // listed as exited with no exit code; the one that ended is as it was.
    let (status, list) = server.get(&room_path(room, "/processes")).await;
    assert_eq!(status, 200, "{list}");
    let listed = list["processes"].as_array().unwrap();
    let ids: Vec<_> = listed.iter().map(|p| p["id"].clone()).collect();
    assert_eq!(ids, [json!(done), json!(id)], "{list}");
    assert_eq!(listed[0]["status"], "exited", "{list}");
    assert_eq!(listed[0]["exitCode"], 3, "{list}");
    assert_eq!(listed[1]["status"], "exited", "{list}");
    assert_eq!(listed[1]["exitCode"], Value::Null, "{list}");
    assert_eq!(listed[1]["cmd"], "echo before; sleep 300", "{list}");
    assert_eq!(listed[1]["startedAt"], running["startedAt"], "{list}");
    let ended_at = listed[1]["endedAt"].as_u64().expect("an endedAt");
    assert!(ended_at >= running["startedAt"].as_u64().unwrap(), "{list}");
    assert_eq!(logs(&server, room, &done).await["stdout"], "kept\n");
    if common::backend() == common::Backend::Serve {
        // A clean stop keeps what the running one printed.
        assert_eq!(logs(&server, room, &id).await["stdout"], "before\n");
    }

    let mut ws = server.ws(room, "user=ada").await;
    let state = ws.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["processes"], list["processes"]);
    assert_eq!(state["state"]["ports"], json!([]));
    let left = exec(&server, room, LIVING_SLEEPS).await;
    assert_eq!(left["stdout"], "0\n");
    // A new process has an id of its own.
    let next = id_of(&start(&server, room, json!({"cmd": "true"})).await);
    assert!(next != done && next != id, "{next} is used already");
}
