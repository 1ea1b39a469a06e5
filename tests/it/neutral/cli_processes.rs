//! `duet bg`, `duet ps`, `duet logs [-f]` and `duet kill` against a real
//! `duet serve`: a background process started, listed, its log read and
//! followed (nothing missing, nothing twice, its exit code ours), stopped,
//! a listening port shown with the URL to open, and every refusal said
//! as a sentence.

use crate::common;
use crate::common::cli::{duet, stderr, stdout};
use crate::common::{Server, WAIT};
use std::process::Command;
use std::time::Instant;

/// `duet ps --json`, parsed.
fn listing(server: &Server, room: &str) -> serde_json::Value {
    let out = duet(server, room, &["ps", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_slice(&out.stdout).expect("ps --json prints JSON")
}

/// Runs `check` every 100 ms until it answers true, or fails after WAIT.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !check() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

#[tokio::test]
async fn a_process_is_started_listed_read_and_killed() {
    let (server, _dir) = Server::fresh().await;
    let out = duet(
        &server,
        "procs",
        &[
            "bg",
            "--process-name",
            "greeter",
            "echo hello; echo oops >&2; pwd; sleep 100",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "p1\n", "the id alone on stdout");
    assert!(
        stderr(&out).contains("started p1 (greeter)"),
        "{}",
        stderr(&out)
    );

    let out = duet(&server, "procs", &["ps"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    let header = table.lines().next().unwrap();
    assert_eq!(
        header.split_whitespace().collect::<Vec<_>>(),
        ["ID", "NAME", "STATUS", "EXIT", "BY", "TIME", "CMD"]
    );
    let row = table.lines().nth(1).unwrap();
    assert_eq!(
        row.split_whitespace().take(5).collect::<Vec<_>>(),
        ["p1", "greeter", "running", "-", "ada"],
        "{table}"
    );
    assert!(
        row.ends_with("echo hello; echo oops >&2; pwd; sleep 100"),
        "{table}"
    );

    // Its log by name: stdout to stdout, stderr to stderr; it runs in
    // /workspace.
    eventually("the log has the output", || {
        stdout(&duet(&server, "procs", &["logs", "greeter"])).contains("/workspace")
    });
    let out = duet(&server, "procs", &["logs", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "hello\n/workspace\n");
    assert_eq!(stderr(&out), "oops\n");

    let out = duet(&server, "procs", &["kill", "greeter"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out), "killed p1 (greeter)\n");
    let list = listing(&server, "procs");
    assert_eq!(list["processes"][0]["status"], "killed");
    assert_eq!(list["processes"][0]["exitCode"], 143);
    assert_eq!(list["ports"], serde_json::json!([]));

    // Again: it had ended, and says how.
    let out = duet(&server, "procs", &["kill", "p1"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "p1 (greeter) had already ended (killed 143)\n"
    );
}

#[tokio::test]
async fn logs_follow_prints_everything_once_and_exits_with_its_code() {
    let (server, _dir) = Server::fresh().await;
    let script = "for i in 1 2 3 4 5; do echo line$i; echo err$i >&2; sleep 0.3; done; exit 3";
    let out = duet(&server, "follow", &["bg", script]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = duet(&server, "follow", &["logs", "-f", "p1"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(stdout(&out), "line1\nline2\nline3\nline4\nline5\n");
    let err = stderr(&out);
    assert!(
        err.starts_with("err1\nerr2\nerr3\nerr4\nerr5\n"),
        "stderr whole, once: {err}"
    );
    assert!(err.ends_with("[p1 exited (code 3)]\n"), "{err}");

    // An ended one: its log, and its code, at once.
    let out = duet(&server, "follow", &["logs", "--follow", "p1"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    assert_eq!(stdout(&out), "line1\nline2\nline3\nline4\nline5\n");
}

#[tokio::test]
async fn a_followed_process_that_is_killed_ends_the_follow_with_143() {
    let (server, _dir) = Server::fresh().await;
    let out = duet(&server, "killed", &["bg", "echo up; sleep 100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let follower = std::thread::spawn({
        let url = server.url("");
        move || {
            Command::new(env!("CARGO_BIN_EXE_duet"))
                .args(["logs", "--server", &url, "--room", "killed", "-f", "p1"])
                .env_remove("DUET_TOKEN")
                .output()
                .unwrap()
        }
    });
    eventually("the process printed", || {
        stdout(&duet(&server, "killed", &["logs", "p1"])) == "up\n"
    });
    let out = duet(&server, "killed", &["kill", "p1"]);
    assert_eq!(stdout(&out), "killed p1 (echo)\n");
    let followed = follower.join().unwrap();
    assert_eq!(followed.status.code(), Some(143), "{}", stderr(&followed));
    assert_eq!(stdout(&followed), "up\n");
    assert!(
        stderr(&followed).ends_with("[p1 was killed (exit code 143)]\n"),
        "{}",
        stderr(&followed)
    );
}

#[tokio::test]
async fn a_listening_port_is_shown_with_the_url_to_open() {
    let (server, _dir) = Server::fresh().await;
    let out = duet(
        &server,
        "web",
        &["bg", "-n", "web", "python3 -m http.server 8000"],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    eventually("port 8000 is listed", || {
        listing(&server, "web")["ports"]
            .as_array()
            .is_some_and(|ports| ports.iter().any(|p| p["port"] == 8000))
    });
    let list = listing(&server, "web");
    assert_eq!(list["ports"][0]["path"], "/api/rooms/web/ports/8000/");
    let out = duet(&server, "web", &["ps"]);
    let table = stdout(&out);
    // The preview's own origin where the backend has one, else its path.
    let url = match list["ports"][0]["url"].as_str() {
        Some(url) => url.to_string(),
        None => format!("{}/api/rooms/web/ports/8000/", server.url("")),
    };
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["8000", &url]),
        "{table}"
    );
    // The URL answers: the preview serves the app.
    let (status, _) = common::answer(common::apps::client_for(&server, &url).get(&url)).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn refusals_read_as_sentences() {
    let dir = tempfile::tempdir().unwrap();
    let server = Server::start(dir.path(), &["--max-processes", "1"]).await;
    for args in [&["logs", "p9"][..], &["kill", "p9"], &["logs", "-f", "p9"]] {
        let out = duet(&server, "refuse", args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
        let err = stderr(&out);
        assert!(
            err.contains("no such process") && err.contains("no process \"p9\" in this room"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("Duet backend?"), "not a wrong server: {err}");
    }
    let out = duet(&server, "refuse", &["bg", "sleep 100"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = duet(&server, "refuse", &["bg", "sleep 200"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(
        err.starts_with("duet: The room cannot do that now (409 Conflict: too many processes; processes: at most"),
        "{err}"
    );
    // Two named alike: the running one is meant.
    let out = duet(&server, "refuse", &["kill", "p1"]);
    assert!(out.status.success());
    duet(&server, "refuse", &["bg", "-n", "sleep", "sleep 300"]);
    let out = duet(&server, "refuse", &["logs", "sleep"]);
    assert!(out.status.success(), "the running one: {}", stderr(&out));
    let out = duet(&server, "refuse", &["bg", "-n", "bad\u{7}name", "true"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(stderr(&out).contains("name"), "{}", stderr(&out));
}

/// A TCP proxy in front of `target` whose connections can be cut (a
/// network that drops), while it keeps accepting new ones.
struct Proxy {
    addr: std::net::SocketAddr,
    open: std::sync::Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
}

impl Proxy {
    async fn start(target: String) -> Proxy {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let open = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let tasks = open.clone();
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let target = target.clone();
                let task = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(&target).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                tasks.lock().unwrap().push(task);
            }
        });
        Proxy { addr, open }
    }

    /// Drops every connection open now.
    fn cut(&self) {
        for task in self.open.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test]
async fn logs_follow_goes_on_after_a_drop_without_a_gap_or_a_repeat() {
    use tokio::io::AsyncBufReadExt;
    let (server, _dir) = Server::fresh().await;
    let script = "for i in $(seq 1 15); do echo line$i; sleep 0.2; done";
    let out = duet(&server, "drops", &["bg", script]);
    assert!(out.status.success(), "{}", stderr(&out));
    let proxy = Proxy::start(server.addr.clone()).await;
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["logs", "-f", "p1", "--room", "drops", "--server"])
        .arg(format!("http://{}", proxy.addr))
        .env_remove("DUET_TOKEN")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    while let Some(line) = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .expect("the log goes on")
        .unwrap()
    {
        seen.push(line);
        if seen.len() == 3 {
            proxy.cut();
        }
    }
    let status = tokio::time::timeout(WAIT, child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut said = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut said)
        .await
        .unwrap();
    assert_eq!(status.code(), Some(0), "{said}");
    let expected: Vec<String> = (1..=15).map(|i| format!("line{i}")).collect();
    assert_eq!(seen, expected, "{said}");
    assert!(said.contains("following again"), "the drop is said: {said}");
}
