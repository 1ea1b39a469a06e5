//! `duet exec` and `duet cleanup` against a real `duet serve`: output on
//! the right streams, exit codes (the command's, 124, 130, 1), errors shown
//! whole, and settings taken from flags, then environment, then duet.toml.

use crate::common::{Server, WAIT};
use duet::client::http::HttpClient;
use std::path::Path;
use std::process::Output;
use tokio::process::Command;

/// `duet ARGS…` with a clean environment of Duet settings; `config_home`
/// is where a `duet/duet.toml` may be.
fn duet(config_home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_duet"));
    cmd.args(args)
        .env("XDG_CONFIG_HOME", config_home)
        .env("DUET_DATA_DIR", config_home.join("data"))
        .env_remove("DUET_SERVER")
        .env_remove("DUET_ROOM")
        .env_remove("DUET_TOKEN")
        .env_remove("DUET_NAME")
        .kill_on_drop(true);
    cmd
}

async fn run(mut cmd: Command) -> Output {
    tokio::time::timeout(WAIT, cmd.output())
        .await
        .expect("duet finishes")
        .expect("duet runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).to_string()
}

#[tokio::test]
async fn exec_prints_the_streams_apart_and_exits_with_the_code() {
    let (server, dir) = Server::fresh().await;
    let url = server.url("");
    let out = run(duet(
        dir.path(),
        &[
            "exec",
            "--server",
            &url,
            "--room",
            "cli-1",
            "--",
            "sh",
            "-c",
            "echo out; echo err >&2; exit 3",
        ],
    ))
    .await;
    assert_eq!(text(&out.stdout), "out\n");
    assert_eq!(text(&out.stderr), "err\n");
    assert_eq!(out.status.code(), Some(3));

    let out = run(duet(
        dir.path(),
        &[
            "exec",
            "--server",
            &url,
            "--room",
            "cli-1",
            "--",
            "echo hi | tr a-z A-Z",
        ],
    ))
    .await;
    assert_eq!(text(&out.stdout), "HI\n", "one argument is a shell line");
    assert_eq!(out.status.code(), Some(0));
}

#[tokio::test]
async fn a_command_that_times_out_exits_124() {
    let (server, dir) = Server::fresh().await;
    let out = run(duet(
        dir.path(),
        &[
            "exec",
            "--server",
            &server.url(""),
            "--room",
            "cli-2",
            "--timeout-ms",
            "300",
            "--",
            "sleep",
            "30",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(124), "{}", text(&out.stderr));
}

#[tokio::test]
async fn an_interrupted_command_exits_130() {
    let (server, dir) = Server::fresh().await;
    let url = server.url("");
    let child = duet(
        dir.path(),
        &[
            "exec", "--server", &url, "--room", "cli-3", "--", "sleep", "30",
        ],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap();
    let client = HttpClient::new(&url, "cli-3", None, "tester").unwrap();
    let deadline = tokio::time::Instant::now() + WAIT;
    // Interrupt once the command runs (the answer says whether one did).
    loop {
        if client.interrupt(None).await.unwrap() {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the command never ran"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
}

/// `duet exec -- CMD` in `room`, running, its output piped.
fn exec_in(server: &Server, config_home: &Path, room: &str, cmd: &str) -> tokio::process::Child {
    let url = server.url("");
    duet(
        config_home,
        &["exec", "--server", &url, "--room", room, "--", cmd],
    )
    .stdout(std::process::Stdio::piped())
    .stderr(std::process::Stdio::piped())
    .spawn()
    .unwrap()
}

/// Ctrl+C in the person's terminal: SIGINT to the process.
fn ctrl_c(child: &tokio::process::Child) {
    let pid = nix::unistd::Pid::from_raw(child.id().unwrap() as i32);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT).unwrap();
}

#[tokio::test]
async fn ctrl_c_interrupts_the_command_in_the_room() {
    let (server, dir) = Server::fresh().await;
    let mut ws = server.joined("cli-c", "user=watcher").await;
    let child = exec_in(
        &server,
        dir.path(),
        "cli-c",
        "echo started; sleep 30; echo never",
    );
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    ctrl_c(&child);
    let complete = ws
        .until(|f| f["type"] == "duet_exec" && f["phase"] == "complete")
        .await;
    assert_eq!(complete["interrupted"], true, "{complete}");
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "started\n");
    assert!(
        text(&out.stderr).contains("interrupting the command"),
        "{}",
        text(&out.stderr)
    );
    // The room's shell is free at once.
    let r = crate::common::apps::exec(&server, "cli-c", "echo free").await;
    assert_eq!(r["stdout"], "free\n");

    // A command still waiting behind another is withdrawn, and `duet exec`
    // ends at once: nothing of it will run.
    let first = {
        let url = server.url("/api/rooms/cli-c/sandbox/exec");
        tokio::spawn(crate::common::answer(
            crate::common::http()
                .post(url)
                .json(&serde_json::json!({"cmd": "echo first; sleep 30"})),
        ))
    };
    ws.until(|f| f["type"] == "duet_exec" && f["phase"] == "stdout")
        .await;
    let child = exec_in(&server, dir.path(), "cli-c", "touch never");
    ws.until(|f| f["type"] == "duet_exec" && f["cmd"] == "touch never")
        .await;
    ctrl_c(&child);
    let out = tokio::time::timeout(WAIT, child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(out.status.code(), Some(130), "{}", text(&out.stderr));
    assert!(
        text(&out.stderr).contains("withdrawn"),
        "{}",
        text(&out.stderr)
    );
    assert!(
        !first.is_finished(),
        "it ended before the first command did"
    );
    server
        .post("/api/rooms/cli-c/sandbox/interrupt", serde_json::json!({}))
        .await;
    first.await.unwrap();
    let r = crate::common::apps::exec(&server, "cli-c", "ls never || echo none").await;
    assert_eq!(r["stdout"], "none\n");
}

#[tokio::test]
async fn request_errors_are_shown_whole_and_exit_1() {
    let (server, dir) = Server::fresh().await;
    let out = run(duet(
        dir.path(),
        &[
            "exec",
            "--server",
            &server.url(""),
            "--room",
            "bad room",
            "--",
            "true",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("room"), "{}", text(&out.stderr));

    let data = tempfile::tempdir().unwrap();
    let guarded = Server::start(data.path(), &["--token", "s3cret"]).await;
    let out = run(duet(
        dir.path(),
        &[
            "exec",
            "--server",
            &guarded.url(""),
            "--room",
            "r",
            "--",
            "true",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("401 Unauthorized: unauthorized"),
        "{}",
        text(&out.stderr)
    );
    let mut with_token = duet(
        dir.path(),
        &[
            "exec",
            "--server",
            &guarded.url(""),
            "--room",
            "r",
            "--",
            "echo",
            "ok",
        ],
    );
    with_token.env("DUET_TOKEN", "s3cret");
    let out = run(with_token).await;
    assert_eq!(text(&out.stdout), "ok\n", "{}", text(&out.stderr));
}

#[tokio::test]
async fn without_a_server_it_says_how_to_start_one() {
    let dir = tempfile::tempdir().unwrap();
    let out = run(duet(dir.path(), &["exec", "--room", "r", "--", "true"])).await;
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("duet serve") && err.contains("--server"),
        "{err}"
    );
}

#[tokio::test]
async fn flags_beat_environment_which_beats_the_config_file() {
    let (server, dir) = Server::fresh().await;
    let url = server.url("");
    std::fs::create_dir_all(dir.path().join("duet")).unwrap();
    std::fs::write(
        dir.path().join("duet/duet.toml"),
        format!("server = \"{url}\"\nroom = \"from-file\"\nname = \"filer\"\n"),
    )
    .unwrap();
    // The file alone is enough.
    let out = run(duet(dir.path(), &["exec", "--", "echo", "via-file"])).await;
    assert_eq!(text(&out.stdout), "via-file\n", "{}", text(&out.stderr));
    // The environment beats the file; the flag beats the environment.
    let mut cmd = duet(dir.path(), &["exec", "--room", "from-flag", "--", "true"]);
    cmd.env("DUET_ROOM", "from-env");
    run(cmd).await;
    let mut cmd = duet(dir.path(), &["exec", "--", "true"]);
    cmd.env("DUET_ROOM", "from-env");
    run(cmd).await;
    // Each room holds the command that was meant for it.
    for (room, cmd) in [
        ("from-file", "echo via-file"),
        ("from-flag", "true"),
        ("from-env", "true"),
    ] {
        let mut ws = server.ws(room, "user=t").await;
        let state = ws.until_type("cf_agent_state").await;
        let execs = state["state"]["execs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(execs.len(), 1, "{room}: {state}");
        assert_eq!(execs[0]["cmd"], cmd, "{room}");
    }
    // A bad file is reported, not ignored.
    std::fs::write(dir.path().join("duet/duet.toml"), "sever = \"typo\"\n").unwrap();
    let out = run(duet(dir.path(), &["exec", "--", "true"])).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(text(&out.stderr).contains("sever"), "{}", text(&out.stderr));
}

#[tokio::test]
async fn cleanup_empties_the_room() {
    let (server, dir) = Server::fresh().await;
    let url = server.url("");
    let client = HttpClient::new(&url, "cli-9", None, "ada").unwrap();
    client.message("remember me").await.unwrap();
    assert!(
        !client
            .messages(None, None)
            .await
            .unwrap()
            .messages
            .is_empty()
    );
    let out = run(duet(
        dir.path(),
        &["cleanup", "--server", &url, "--room", "cli-9"],
    ))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "cleaned up room cli-9\n");
    // All that is left is the record of the cleanup.
    let left = client.messages(None, None).await.unwrap().messages;
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(matches!(
        left[0].event,
        Some(duet::protocol::Event::Cleanup { .. })
    ));
}

#[tokio::test]
async fn the_terminal_client_without_a_terminal_says_what_to_use() {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = duet(
        dir.path(),
        &["--server", "http://127.0.0.1:9", "--room", "r"],
    );
    cmd.stdin(std::process::Stdio::null());
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains("duet exec"),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn without_a_name_a_command_is_the_login_names() {
    let (server, dir) = Server::fresh().await;
    let url = server.url("");
    let login = nix::unistd::User::from_uid(nix::unistd::getuid())
        .ok()
        .flatten()
        .map(|u| u.name)
        .expect("this test's user has an account name");
    // No --name, no DUET_NAME, and not even USER or LOGNAME set (a
    // service, a `sudo -E`, a bare `env -i`): the account's name, not "guest".
    let mut cmd = duet(
        dir.path(),
        &["exec", "--server", &url, "--room", "login", "--", "true"],
    );
    cmd.env_remove("USER").env_remove("LOGNAME");
    if let Some(token) = &server.token {
        cmd.env("DUET_TOKEN", token);
    }
    let out = run(cmd).await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let mut ws = server.ws("login", "user=t").await;
    let state = ws.until_type("cf_agent_state").await;
    assert_eq!(state["state"]["execs"][0]["by"], login.as_str(), "{state}");
}

#[tokio::test]
async fn the_shared_flags_count_before_the_subcommand_too() {
    let (server, dir) = Server::fresh().await;
    let url = server.url("");
    let with_token = |mut cmd: Command| {
        if let Some(token) = &server.token {
            cmd.env("DUET_TOKEN", token);
        }
        cmd
    };
    // Before the subcommand, and beating the environment as after it does.
    let mut cmd = with_token(duet(
        dir.path(),
        &[
            "--server", &url, "--room", "first", "--name", "bo", "exec", "--", "echo", "hi",
        ],
    ));
    cmd.env("DUET_ROOM", "from-env");
    let out = run(cmd).await;
    assert_eq!(text(&out.stdout), "hi\n", "{}", text(&out.stderr));
    assert_eq!(out.status.code(), Some(0));
    // Both places: the one after the subcommand is nearer, and wins.
    let out = run(with_token(duet(
        dir.path(),
        &[
            "--server", &url, "--room", "ignored", "exec", "--room", "second", "--", "true",
        ],
    )))
    .await;
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    for (room, cmd, who) in [("first", "echo hi", Some("bo")), ("second", "true", None)] {
        let mut ws = server.ws(room, "user=t").await;
        let state = ws.until_type("cf_agent_state").await;
        let execs = state["state"]["execs"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert_eq!(execs.len(), 1, "{room}: {state}");
        assert_eq!(execs[0]["cmd"], cmd, "{room}");
        if let Some(who) = who {
            assert_eq!(execs[0]["by"], who, "{room}: {state}");
        }
    }
    for empty in ["from-env", "ignored"] {
        let mut ws = server.ws(empty, "user=t").await;
        let state = ws.until_type("cf_agent_state").await;
        let execs = state["state"]["execs"].as_array().cloned();
        assert!(execs.unwrap_or_default().is_empty(), "{empty}: {state}");
    }
    // --data-dir before the subcommand names the embedded backend looked for.
    let elsewhere = dir.path().join("elsewhere");
    let out = run(duet(
        dir.path(),
        &[
            "--data-dir",
            &elsewhere.to_string_lossy(),
            "exec",
            "--room",
            "r",
            "--",
            "true",
        ],
    ))
    .await;
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out.stderr).contains(&*elsewhere.to_string_lossy()),
        "{}",
        text(&out.stderr)
    );
}

#[tokio::test]
async fn a_shared_flag_a_subcommand_cannot_use_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["--room", "r", "serve"][..],
        &["serve", "--server", "http://127.0.0.1:9"],
        &["--name", "ada", "serve"],
        &["--token", "t", "join", "http://127.0.0.1:9/r"],
        &["join", "--room", "r", "http://127.0.0.1:9/r"],
    ] {
        let out = run(duet(dir.path(), args)).await;
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = text(&out.stderr);
        assert!(err.contains("does not apply to `duet "), "{args:?}: {err}");
    }
}
