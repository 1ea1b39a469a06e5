//! End to end in tmux, as two new people would: plain `duet` in a fresh
//! HOME shows the room's address (never its token) in an 80-column status
//! bar; F6 shows a writer invite's link, which, typed in another terminal
//! with ANOTHER HOME, joins the same room;
//! the room's advice without a model names what works for plain `duet`;
//! quitting prints how to come back; the config file gives plain `duet` a
//! model. And `/get` never replaces a file here without asking. Needs
//! tmux (the CI script installs it).

use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::{Tmux, client_env};
use std::path::Path;

/// A person's terminal with a HOME of its own: the config and data
/// directories are the defaults under it (named, in case the test's own
/// environment points them elsewhere).
fn fresh_home(home: &Path, who: &str) -> Vec<(&'static str, String)> {
    std::fs::create_dir_all(home).unwrap();
    vec![
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        ),
        (
            "XDG_DATA_HOME",
            home.join(".local/share").display().to_string(),
        ),
        ("DUET_NAME", who.to_string()),
    ]
}

/// Whether a shell prompt (`$`) shows.
fn prompt(screen: &str) -> bool {
    screen.lines().any(|l| l.trim_end() == "$")
}

/// The screen's last line with something on it: the status bar.
fn status_bar(screen: &str) -> String {
    screen
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or_default()
        .to_string()
}

/// The screen's words in order, lines joined (wrapped text reads whole).
fn words(screen: &str) -> String {
    screen.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The word of `screen` that holds an invite's link (`duet_inv_…@HOST/ROOM`).
fn invite_link(screen: &str) -> Option<String> {
    screen
        .split(|c: char| c.is_whitespace() || c == '│')
        .find(|w| w.contains("duet_inv_") && w.contains('@') && w.contains('/'))
        .map(str::to_string)
}

#[tokio::test]
async fn the_link_key_lets_another_home_in_and_no_token_is_ever_drawn() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let home_a = dir.path().join("home-a");
    tmux.start_sized("host", &fresh_home(&home_a, "ada"), "", (80, 24));
    let screen = tmux
        .wait("host", "the room's address", |s| {
            status_bar(s).contains("127.0.0.1:") && s.contains('●')
        })
        .await;
    // The embedded backend's token is owner of every room: never drawn.
    let token_file = home_a.join(".local/share/duet/duet.token");
    let token = std::fs::read_to_string(&token_file).unwrap();
    let token = token.trim();
    assert!(token.len() > 8, "{token}");
    assert!(!screen.contains(token), "the token is on screen:\n{screen}");
    let bar = status_bar(&screen);
    assert!(!bar.contains('…'), "the address is whole: {bar}");
    let address = bar[bar.find("127.0.0.1:").unwrap()..]
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let link = duet::client::join::parse_link(&address).unwrap_or_else(|e| panic!("{bar}: {e}"));
    assert_eq!(link.token, None, "{bar}");
    let room = link.room.clone();
    assert!(bar.starts_with(&format!(" {room} ")), "{bar}");

    // F6: a fresh writer invite, on one line until Esc; under tmux
    // without set-clipboard on, the dialog says the copy cannot work.
    tmux.keys("host", &["F6"]);
    let screen = tmux
        .wait("host", "an invite's link", |s| invite_link(s).is_some())
        .await;
    let invite = invite_link(&screen).unwrap();
    assert!(invite.ends_with(&format!("/{room}")), "{screen}");
    assert!(!screen.contains(token), "{screen}");
    assert!(words(&screen).contains("for a writer"), "{screen}");
    assert!(words(&screen).contains("tmux drops OSC 52"), "{screen}");

    // Another person, another HOME: types the link the dialog shows.
    let home_b = dir.path().join("home-b");
    tmux.shell("guest", &fresh_home(&home_b, "bob"), (120, 30));
    tmux.wait("guest", "a shell prompt", prompt).await;
    tmux.type_text("guest", &format!("duet join {invite}"));
    tmux.keys("guest", &["Enter"]);
    tmux.wait("guest", "the same room", |s| {
        let bar = status_bar(s);
        bar.starts_with(&format!(" {room} "))
            && bar.contains("● connected")
            && bar.contains("2 here")
    })
    .await;
    // The dialog stays until dismissed.
    assert!(invite_link(&tmux.screen("host")).is_some());
    tmux.keys("host", &["Escape"]);
    tmux.wait("host", "the dialog gone", |s| invite_link(s).is_none())
        .await;
    tmux.type_text("guest", "hello from another home");
    tmux.keys("guest", &["Enter"]);
    let screen = tmux
        .wait("host", "bob's message", |s| {
            s.contains("hello from another home") && s.contains("system")
        })
        .await;
    // No model here: the advice names what plain duet takes.
    if std::net::TcpStream::connect("127.0.0.1:11434").is_err() {
        let said = words(&screen);
        let file = home_a.join(".config/duet/duet.toml");
        assert!(
            said.contains(&format!(
                "set DUET_AI_URL, DUET_AI_MODEL and DUET_AI_KEY before starting duet, or ai_url, ai_model and ai_key in {}",
                file.display()
            )),
            "{screen}"
        );
        assert!(!said.contains("--ai-url"), "{screen}");
    }

    // Leaving prints how to come back, as the same person on the same
    // backend, and no token.
    tmux.keys("guest", &["C-c"]);
    tmux.keys("guest", &["C-c"]);
    let screen = tmux
        .wait("guest", "how to come back", |s| s.contains("Back in:"))
        .await;
    let said = words(&screen);
    assert!(
        said.contains(&format!(
            "Left room {room}. Back in: duet --server {} --room {room} --name bob",
            link.server
        )),
        "{screen}"
    );
    let goodbye = &screen[screen.find("Left room").unwrap()..];
    assert!(!goodbye.contains("duet_inv_"), "{screen}");
    // A writer cannot make invites: not told to.
    assert!(
        words(goodbye).contains("with an invite from an owner of the room"),
        "{screen}"
    );
    assert!(!goodbye.contains("duet invite"), "{screen}");
    tmux.keys("host", &["C-c"]);
    tmux.keys("host", &["C-c"]);
    let screen = tmux
        .wait("host", "how to come back", |s| {
            s.contains(&format!(
                "Left room {room}. Back in: duet --room {room} --name ada"
            )) && s.contains("EXITED 0")
        })
        .await;
    assert!(!screen.contains(token), "{screen}");
    assert_eq!(tmux.display("host", "#{alternate_on}"), "0");
}

#[tokio::test]
async fn get_never_replaces_a_file_here_without_asking() {
    let (server, _data) = Server::fresh().await;
    let (_, body) = server
        .post(
            "/api/rooms/files-e2e/sandbox/exec",
            serde_json::json!({"cmd": "printf 'new\\n' > report.txt"}),
        )
        .await;
    assert_eq!(body["result"]["exitCode"], 0, "{body}");
    let dir = tempfile::tempdir().unwrap();
    let here = dir.path().join("here");
    std::fs::create_dir(&here).unwrap();
    let report = here.join("report.txt");
    std::fs::write(&report, "mine\n").unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.shell("ada", &client_env(dir.path(), "ada"), (100, 30));
    tmux.wait("ada", "a shell prompt", prompt).await;
    tmux.type_text(
        "ada",
        &format!(
            "cd {} && duet --server {} --room files-e2e",
            here.display(),
            server.url("")
        ),
    );
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "connected", |s| s.contains("● connected"))
        .await;

    tmux.type_text("ada", "/get report.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the question", |s| {
        s.contains("report.txt exists here (5 B). Overwrite?")
    })
    .await;
    tmux.keys("ada", &["n"]);
    tmux.wait("ada", "the file kept", |s| s.contains("kept report.txt"))
        .await;
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "mine\n");

    tmux.type_text("ada", "/get /workspace/report.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the question again", |s| s.contains("Overwrite?"))
        .await;
    tmux.keys("ada", &["y"]);
    tmux.wait("ada", "the file replaced", |s| s.contains("got 4 bytes"))
        .await;
    assert_eq!(std::fs::read_to_string(&report).unwrap(), "new\n");

    // Outside the workspace: refused here, the line kept to fix.
    tmux.type_text("ada", "/put report.txt /tmp/x");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the refusal", |s| {
        s.contains("/tmp/x is outside /workspace") && s.contains("› /put report.txt /tmp/x")
    })
    .await;
    tmux.keys("ada", &["C-u"]);
    tmux.type_text("ada", "/put report.txt /workspace/back.txt");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the upload", |s| {
        s.contains("sent 4 bytes to back.txt")
    })
    .await;
    let (_, body) = server
        .post(
            "/api/rooms/files-e2e/sandbox/exec",
            serde_json::json!({"cmd": "cat back.txt"}),
        )
        .await;
    assert_eq!(body["result"]["stdout"], "new\n", "{body}");
}

#[tokio::test]
async fn plain_duet_takes_its_model_from_the_config_file() {
    let model = FakeModel::start(vec![Script::Stream(vec![
        "Hello from ".into(),
        "the configured model.".into(),
    ])])
    .await;
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    let env = fresh_home(&home, "ada");
    std::fs::create_dir_all(home.join(".config/duet")).unwrap();
    std::fs::write(
        home.join(".config/duet/duet.toml"),
        format!(
            "ai_url = \"{}\"\nai_model = \"scripted\"\nai_key = \"sk-from-file\"\n",
            model.url
        ),
    )
    .unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start("ada", &env, "--room modelled");
    tmux.wait("ada", "connected", |s| s.contains("● connected"))
        .await;
    tmux.type_text("ada", "say hello");
    tmux.keys("ada", &["Enter"]);
    tmux.wait("ada", "the model's reply", |s| {
        s.contains("Hello from the configured model.")
    })
    .await;
    let (headers, body) = model.requests().pop().expect("the model was asked");
    assert_eq!(body["model"], "scripted");
    assert_eq!(headers["authorization"], "Bearer sk-from-file");
    // Quit, so that the backend stops as it should.
    tmux.keys("ada", &["C-c"]);
    tmux.keys("ada", &["C-c"]);
    tmux.wait("ada", "a clean exit", |s| s.contains("EXITED 0"))
        .await;
}
