//! End to end, as people use it: the real binary in tmux. Two clients in
//! one room on a real backend see each other's chat and commands; Ctrl+X
//! then `y` empties both screens; a second `duet` on the same data
//! directory joins the first one's embedded backend, and so does
//! `duet exec`; the agent's reply streams to both screens with its
//! command. Needs tmux (the CI script installs it).

mod agent_support;
mod common;

use common::Server;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

/// How long a screen may take to show what is expected.
const SCREEN_WAIT: Duration = Duration::from_secs(30);

/// A private tmux server, killed when dropped.
struct Tmux {
    socket: PathBuf,
}

impl Tmux {
    fn new(dir: &Path) -> Tmux {
        let version = Command::new("tmux").arg("-V").output();
        assert!(
            version.is_ok_and(|o| o.status.success()),
            "tmux is needed for this test: apt-get install tmux"
        );
        Tmux {
            socket: dir.join("tmux.sock"),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .args(args)
            .output()
            .expect("tmux runs");
        String::from_utf8_lossy(&out.stdout).to_string()
    }

    /// Starts `duet ARGS` in a new 120×40 session; the shell says how it
    /// ended and stays.
    fn start(&self, name: &str, env: &[(&str, String)], args: &str) {
        let env: Vec<String> = env.iter().map(|(k, v)| format!("{k}={v}")).collect();
        let line = format!(
            "env {} {} {args}; echo EXITED $?; sleep 600",
            env.join(" "),
            env!("CARGO_BIN_EXE_duet")
        );
        self.run(&[
            "new-session",
            "-d",
            "-s",
            name,
            "-x",
            "120",
            "-y",
            "40",
            &line,
        ]);
    }

    fn keys(&self, name: &str, keys: &[&str]) {
        let mut args = vec!["send-keys", "-t", name];
        args.extend_from_slice(keys);
        self.run(&args);
    }

    /// Types literal text.
    fn type_text(&self, name: &str, text: &str) {
        self.run(&["send-keys", "-t", name, "-l", text]);
    }

    fn screen(&self, name: &str) -> String {
        self.run(&["capture-pane", "-p", "-t", name])
    }

    /// Waits until the screen satisfies `ok`; answers it.
    async fn wait(&self, name: &str, what: &str, ok: impl Fn(&str) -> bool) -> String {
        let deadline = tokio::time::Instant::now() + SCREEN_WAIT;
        loop {
            let screen = self.screen(name);
            if ok(&screen) {
                return screen;
            }
            if tokio::time::Instant::now() > deadline {
                panic!("{name}: never showed {what}; the screen:\n{screen}");
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-S")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

fn client_env(dir: &Path, who: &str) -> Vec<(&'static str, String)> {
    vec![
        ("XDG_CONFIG_HOME", dir.join("config").display().to_string()),
        (
            "DUET_DATA_DIR",
            dir.join(format!("data-{who}")).display().to_string(),
        ),
        ("DUET_NAME", who.to_string()),
    ]
}

#[tokio::test]
async fn two_people_share_a_room_and_clean_it_up() {
    let (server, data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let url = server.url("");
    let args = format!("--server {url} --room e2e-room");
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.start("bob", &client_env(dir.path(), "bob"), &args);
    for who in ["ada", "bob"] {
        tmux.wait(who, "both people present", |s| s.contains("2 here"))
            .await;
    }
    let ada = tmux.screen("ada");
    assert!(ada.contains("e2e-room"), "{ada}");
    assert_eq!(
        tmux.run(&[
            "display",
            "-p",
            "-t",
            "bob",
            "#{alternate_on}#{mouse_any_flag}"
        ])
        .trim(),
        "11",
        "the UI uses the alternate screen and the mouse"
    );
    assert!(
        ada.contains(&format!("join: duet --server {url} --room e2e-room")),
        "{ada}"
    );

    // A bracketed paste inserts its lines without sending them.
    tmux.run(&["set-buffer", "pasted one\npasted two"]);
    tmux.run(&["paste-buffer", "-p", "-t", "ada"]);
    tmux.wait("ada", "the pasted lines in the input", |s| {
        s.contains("› pasted one") && s.contains("  pasted two")
    })
    .await;
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "an empty input", |s| !s.contains("pasted one"))
        .await;

    tmux.type_text("ada", "hello from ada");
    tmux.keys("ada", &["Enter"]);
    tmux.type_text("ada", "!echo hi");
    tmux.keys("ada", &["Enter"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the message and the command", |s| {
            s.contains("hello from ada")
                && s.contains("ada $ echo hi")
                && s.lines().any(|l| l.contains("│hi "))
                && s.contains("✓ 0")
        })
        .await;
    }

    assert!(
        !tmux.screen("bob").contains("pasted"),
        "a paste is never sent"
    );

    // Esc interrupts a running command, whoever started it.
    tmux.type_text("ada", "!sleep 30");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("bob", "the command running", |s| {
        s.contains("ada $ sleep 30")
    })
    .await;
    tmux.keys("bob", &["Escape"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "the command interrupted", |s| {
            s.contains("■ interrupted")
        })
        .await;
    }

    tmux.keys("ada", &["C-x"]);
    tmux.wait("ada", "the cleanup dialog", |s| {
        s.contains("Clean up room e2e-room?")
    })
    .await;
    tmux.keys("ada", &["y"]);
    for who in ["ada", "bob"] {
        tmux.wait(who, "an empty room", |s| {
            s.contains("No messages yet.")
                && s.contains("No commands yet")
                && !s.contains("hello from ada")
        })
        .await;
    }

    // /name rejoins under the new name.
    tmux.type_text("ada", "/name ada-two");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("bob", "ada's new name", |s| s.contains("● ada-two"))
        .await;

    // Ctrl+C twice leaves, and the terminal is given back.
    tmux.keys("bob", &["C-c"]);
    tmux.keys("bob", &["C-c"]);
    tmux.wait("bob", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
    assert_eq!(
        tmux.run(&["display", "-p", "-t", "bob", "#{alternate_on}"])
            .trim(),
        "0",
        "the alternate screen is left"
    );
    assert_eq!(
        tmux.run(&["display", "-p", "-t", "bob", "#{mouse_any_flag}"])
            .trim(),
        "0",
        "mouse capture is off"
    );
    drop(tmux);
    drop(server);
    drop(data);
}

#[tokio::test]
async fn a_second_duet_joins_the_embedded_backend_and_so_does_exec() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let mut env = client_env(dir.path(), "ada");
    env[1].1 = dir.path().join("shared").display().to_string();
    tmux.start("first", &env, "--room local-room");
    tmux.wait("first", "a connected client", |s| s.contains("1 here"))
        .await;
    let screen = tmux.screen("first");
    // A non-default data directory is part of the join command.
    let hint = format!(
        "join: duet --data-dir {} --room local-room",
        dir.path().join("shared").display()
    );
    assert!(screen.contains(&hint), "{screen}");
    env[2].1 = "bob".into();
    tmux.start("second", &env, "--room local-room");
    for who in ["first", "second"] {
        tmux.wait(who, "both clients", |s| s.contains("2 here"))
            .await;
    }
    let out = Command::new(env!("CARGO_BIN_EXE_duet"))
        .args([
            "exec",
            "--room",
            "local-room",
            "--",
            "echo",
            "via-port-file",
        ])
        .env("XDG_CONFIG_HOME", dir.path().join("config"))
        .env("DUET_DATA_DIR", dir.path().join("shared"))
        .env_remove("DUET_SERVER")
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "via-port-file\n",
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    tmux.wait("second", "the command run through exec", |s| {
        s.contains("echo via-port-file")
    })
    .await;
    // The backend logs to its file, never to the screen.
    let log = std::fs::read_to_string(dir.path().join("shared/duet.log")).unwrap();
    assert!(log.contains("embedded backend started"), "{log}");
    assert!(!tmux.screen("first").contains("INFO"));

    // The first duet leaves, taking its backend along: the second takes
    // over with the same data directory, and the room goes on.
    tmux.keys("first", &["C-c"]);
    tmux.keys("first", &["C-c"]);
    tmux.wait("first", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
    tmux.wait("second", "the backend taken over", |s| {
        s.contains("backend moved") && s.contains("1 here") && s.contains("● connected")
    })
    .await;
    tmux.type_text("second", "!echo still-here");
    tmux.keys("second", &["Enter"]);
    tmux.wait("second", "a command on the new backend", |s| {
        s.contains("bob $ echo still-here") && s.contains("echo via-port-file")
    })
    .await;
}

#[tokio::test]
async fn the_agent_reply_streams_to_everyone_with_its_command() {
    use agent_support::{FakeModel, Script};
    let pieces = [
        "Checking ",
        "the ",
        "room ",
        "for ",
        "you. ",
        "<run>echo from-agent</run>",
    ];
    let model = FakeModel::start(vec![Script::Paced(
        pieces.iter().map(|p| p.to_string()).collect(),
        Duration::from_millis(600),
    )])
    .await;
    let data = tempfile::tempdir().unwrap();
    let server = Server::start(
        data.path(),
        &["--ai-url", &model.url, "--ai-model", "fake-model"],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {} --room agent-room", server.url(""));
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.start("bob", &client_env(dir.path(), "bob"), &args);
    for who in ["ada", "bob"] {
        tmux.wait(who, "both people present", |s| s.contains("2 here"))
            .await;
    }
    tmux.type_text("ada", "please check the room");
    tmux.keys("ada", &["Enter"]);
    // While it streams: the spinner, the elapsed time and the text so far.
    tmux.wait("bob", "the reply streaming", |s| {
        s.contains("✦ agent ")
            && s.contains("Checking the")
            && duet::tui::cell::SPINNER
                .iter()
                .any(|f| s.contains(&format!("{f} ")))
            && !s.contains("╭ $ echo from-agent")
    })
    .await;
    for who in ["ada", "bob"] {
        tmux.wait(who, "the stored reply with its command block", |s| {
            s.contains("please check the room")
                && s.contains("Checking the room for you.")
                && s.contains("╭ $ echo from-agent")
                && s.contains("│ from-agent")
                && s.contains("✦ agent $ echo from-agent")
        })
        .await;
    }
}

#[tokio::test]
async fn page_up_at_the_top_loads_older_messages_from_the_backend() {
    let (server, _data) = Server::fresh().await;
    let url = server.url("");
    let client = duet::client::http::HttpClient::new(&url, "long-room", None, "carol").unwrap();
    // Each message gets a system answer (no model): 140 messages in all,
    // more than the 100 a state carries.
    for i in 0..70 {
        client.message(&format!("note number {i}")).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {url} --room long-room");
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.wait("ada", "the latest note", |s| s.contains("note number 69"))
        .await;
    let first_note = |s: &str| s.lines().any(|l| l.starts_with("  note number 0 "));
    assert!(!first_note(&tmux.screen("ada")), "older than the state");
    let deadline = tokio::time::Instant::now() + SCREEN_WAIT;
    loop {
        tmux.keys("ada", &["PageUp"]);
        tokio::time::sleep(Duration::from_millis(100)).await;
        if first_note(&tmux.screen("ada")) {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the first note never showed:\n{}",
            tmux.screen("ada")
        );
    }
    // End follows the latest again.
    tmux.keys("ada", &["C-End"]);
    tmux.wait("ada", "the latest note again", |s| {
        s.contains("note number 69")
    })
    .await;
}

/// `duet serve` on a given port (so that a restart keeps the address).
fn serve_on(port: u16, data: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_duet"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(data)
        .env_remove("DUET_TOKEN")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("duet serve starts")
}

async fn healthy(url: &str) {
    let client = duet::client::http::HttpClient::new(url, "r", None, "t").unwrap();
    let deadline = tokio::time::Instant::now() + SCREEN_WAIT;
    while client.health().await.is_err() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "{url} never answered"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn after_a_backend_restart_the_view_comes_back_without_duplicates() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let data = tempfile::tempdir().unwrap();
    let url = format!("http://127.0.0.1:{port}");
    let mut server = serve_on(port, data.path());
    healthy(&url).await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start(
        "ada",
        &client_env(dir.path(), "ada"),
        &format!("--server {url} --room again-room"),
    );
    tmux.wait("ada", "connected", |s| s.contains("● connected"))
        .await;
    tmux.type_text("ada", "said once");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the message", |s| s.contains("said once"))
        .await;
    // SAFETY: signalling our own child.
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    let _ = server.wait();
    tmux.wait("ada", "reconnecting", |s| s.contains("reconnecting in"))
        .await;
    tmux.type_text("ada", "typed while away");
    // Enter while offline: nothing is sent, the line stays, and it says why.
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the message refused while offline", |s| {
        s.contains("message not sent: not connected") && s.contains("› typed while away")
    })
    .await;
    let mut server = serve_on(port, data.path());
    let screen = tmux
        .wait("ada", "connected again", |s| {
            s.contains("● connected") && s.contains("1 here")
        })
        .await;
    assert_eq!(screen.matches("said once").count(), 1, "{screen}");
    assert!(
        screen.contains("› typed while away"),
        "nothing typed is lost"
    );
    tmux.keys("ada", &["Enter"]);
    let screen = tmux
        .wait("ada", "the new message after the old one", |s| {
            s.contains("  typed while away") && !s.contains("› typed")
        })
        .await;
    assert_eq!(screen.matches("said once").count(), 1, "{screen}");
    assert_eq!(screen.matches("typed while away").count(), 1, "{screen}");
    let _ = server.kill();
    let _ = server.wait();
}

#[tokio::test]
async fn put_and_get_move_files_between_here_and_the_workspace() {
    let (server, _data) = Server::fresh().await;
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let notes = dir.path().join("notes.txt");
    std::fs::write(&notes, "from my machine\n").unwrap();
    let back = dir.path().join("back");
    std::fs::create_dir(&back).unwrap();
    let args = format!("--server {} --room files-room", server.url(""));
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.wait("ada", "connected", |s| s.contains("connected"))
        .await;

    tmux.type_text("ada", &format!("/put {} docs/", notes.display()));
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the upload", |s| {
        s.contains("sent 16 bytes to docs/notes.txt")
    })
    .await;
    let (_, body) = server
        .post(
            "/api/rooms/files-room/sandbox/exec",
            serde_json::json!({"cmd": "cat docs/notes.txt; echo made here > result.txt"}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "from my machine\n");

    tmux.type_text("ada", &format!("/get result.txt {}", back.display()));
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the download", |s| s.contains("got 10 bytes"))
        .await;
    assert_eq!(
        std::fs::read_to_string(back.join("result.txt")).unwrap(),
        "made here\n"
    );

    tmux.type_text("ada", "/get missing.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the error", |s| s.contains("404")).await;
}
