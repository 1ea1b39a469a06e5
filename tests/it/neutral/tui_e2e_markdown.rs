//! End to end, as people read it: the fake model answers in markdown (a
//! heading, a table, a code block, a command); the real binary in tmux
//! shows it drawn (no markdown marks, no `<run>` tags), Ctrl+Y puts the
//! code block on tmux's clipboard through OSC 52, and `duet ask` prints
//! the same reply drawn for a terminal (with escapes) and for a pipe
//! (plain text). Needs tmux.

use crate::common::Server;
use crate::common::agent_support::{FakeModel, Script};
use crate::common::tmux::{Tmux, client_env};

const CODE: &str = "fn main() {\n    println!(\"hello from duet\");\n}";

fn reply() -> String {
    format!(
        "# Build notes\n\nThe **release** build, step by step:\n\n| Step | Command | Time |\n|:--|:--|--:|\n| build | `cargo build` | 40 s |\n| test | `cargo test` | 3 min |\n\n```rust\n{CODE}\n```\n\n<run>echo from-agent</run>"
    )
}

/// Where the first four `│` of a line are (a table row's borders).
fn borders(line: &str) -> Vec<usize> {
    line.chars()
        .enumerate()
        .filter(|(_, c)| *c == '│')
        .map(|(i, _)| i)
        .take(4)
        .collect()
}

/// What every drawing of the reply shows: its heading and emphasis as
/// text, the table's rows with their columns lined up, the code whole.
fn drawn(screen: &str) -> bool {
    let rows: Vec<Vec<usize>> = screen
        .lines()
        .filter(|l| l.contains("│ Step") || l.contains("│ build") || l.contains("│ test "))
        .map(borders)
        .collect();
    screen.contains("Build notes")
        && screen.contains("The release build, step by step:")
        && screen.contains("╭─ rust")
        && screen.contains("│ fn main() {")
        && screen.contains("println!(\"hello from duet\");")
        && rows.len() == 3
        && rows.iter().all(|r| r.len() == 4 && *r == rows[0])
}

/// What no drawing shows: the markdown's own marks, the model's tags.
fn no_marks(screen: &str) -> bool {
    !screen.contains("```")
        && !screen.contains("<run>")
        && !screen.contains("# Build")
        && !screen.contains("**")
        && !screen.contains("|:--")
}

#[tokio::test]
async fn a_markdown_reply_reads_well_and_its_code_is_one_key_from_the_clipboard() {
    let model = FakeModel::start(vec![
        Script::chunked(&reply(), 24),
        Script::chunked(&reply(), 24),
        Script::chunked(&reply(), 24),
    ])
    .await;
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
    let url = server.url("");
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start(
        "ada",
        &client_env(dir.path(), "ada"),
        &format!("--server {url} --room md-room"),
    );
    tmux.wait("ada", "connected", |s| s.contains("● connected"))
        .await;
    // tmux takes what an application copies with OSC 52 as a buffer.
    tmux.run(&["set-option", "-s", "set-clipboard", "on"]);

    tmux.type_text("ada", "how do I build it?");
    tmux.keys("ada", &["Enter"]);
    let screen = tmux
        .wait("ada", "the reply drawn with its command", |s| {
            drawn(s) && s.contains("╭ $ echo from-agent") && s.contains("│ from-agent")
        })
        .await;
    assert!(no_marks(&screen), "{screen}");

    tmux.keys("ada", &["C-y"]);
    tmux.wait("ada", "the copy's toast", |s| {
        s.contains("copied 3 lines of the code block")
    })
    .await;
    assert_eq!(tmux.run(&["show-buffer"]), CODE);

    // `duet ask` in a terminal: the same drawing, with styles.
    let ask = format!("ask --server {url} --room md-room --name carol 'and again?'");
    tmux.start("ask", &client_env(dir.path(), "carol"), &ask);
    let screen = tmux
        .wait("ask", "the answer printed", |s| s.contains("EXITED"))
        .await;
    assert!(screen.contains("EXITED 0"), "{screen}");
    assert!(drawn(&screen) && no_marks(&screen), "{screen}");
    assert!(screen.contains("$ echo from-agent\nfrom-agent"), "{screen}");
    let styled = tmux.run(&["capture-pane", "-p", "-e", "-t", "ask"]);
    assert!(
        styled.contains("\x1b["),
        "a terminal gets styles: {styled:?}"
    );

    // In a pipe: plain text, no escapes, still drawn.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args([
            "ask", "--server", &url, "--room", "md-room", "--name", "dan",
        ])
        .arg("once more?")
        .env_remove("DUET_TOKEN")
        .env_remove("COLUMNS")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!stdout.contains('\x1b'), "{stdout:?}");
    assert!(drawn(&stdout) && no_marks(&stdout), "{stdout}");
    assert!(
        stdout.ends_with("\n\n$ echo from-agent\nfrom-agent\n"),
        "{stdout}"
    );
}

/// The lines of the reply as the chat shows them, in screen order: its
/// two parts of prose, its command and the command's output.
fn reading(screen: &str) -> Vec<&'static str> {
    const MARKS: [&str; 4] = [
        "Let me check.",
        "╭ $ echo placed-1",
        "│ placed-1",
        "That should print 1.",
    ];
    let mut seen = Vec::new();
    for line in screen.lines() {
        for mark in MARKS {
            if line.contains(mark) && !seen.contains(&mark) {
                seen.push(mark);
            }
        }
    }
    seen
}

#[tokio::test]
async fn a_command_reads_where_the_agent_asked_for_it_live_and_after_a_rejoin() {
    // The last piece comes late: the reply is on screen, streaming, a while.
    let model = FakeModel::start(vec![Script::Paced(
        vec![
            "Let me check.\n\n".into(),
            "<run>echo placed-1</run>".into(),
            "\n\nThat should print 1.".into(),
            " ".into(),
        ],
        std::time::Duration::from_secs(3),
    )])
    .await;
    model.push(Script::Stream(vec![
        "Let me check.\n\n".into(),
        "<run>echo placed-1</run>".into(),
        "\n\nThat should print 1.".into(),
    ]));
    let (server, _data) = Server::fresh_with(&model.one_round_args()).await;
    let url = server.url("");
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    let args = format!("--server {url} --room placed");
    tmux.start("ada", &client_env(dir.path(), "ada"), &args);
    tmux.wait("ada", "connected", |s| s.contains("● connected"))
        .await;
    tmux.type_text("ada", "print one");
    tmux.keys("ada", &["Enter"]);
    let live = tmux
        .wait("ada", "the whole reply streaming", |s| {
            s.contains("That should print 1.") && !s.contains("│ placed-1")
        })
        .await;
    assert_eq!(
        reading(&live),
        ["Let me check.", "╭ $ echo placed-1", "That should print 1."],
        "{live}"
    );
    let done = tmux
        .wait("ada", "the command's output", |s| s.contains("│ placed-1"))
        .await;
    let stored = [
        "Let me check.",
        "╭ $ echo placed-1",
        "│ placed-1",
        "That should print 1.",
    ];
    assert_eq!(reading(&done), stored, "{done}");
    // Someone who joins later reads it the same.
    tmux.start("bob", &client_env(dir.path(), "bob"), &args);
    let later = tmux
        .wait("bob", "the stored reply", |s| {
            s.contains("That should print 1.")
        })
        .await;
    assert_eq!(reading(&later), stored, "{later}");
    // `duet ask` prints it in the same order as it streams.
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_duet"))
        .args(["ask", "--server", &url, "--room", "placed", "--name", "dan"])
        .arg("again?")
        .env_remove("DUET_TOKEN")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}");
    let at = |s: &str| stdout.find(s).unwrap_or_else(|| panic!("{s} in {stdout}"));
    assert!(at("Let me check.") < at("$ echo placed-1"), "{stdout}");
    assert!(
        at("$ echo placed-1\nplaced-1") < at("That should print 1."),
        "{stdout}"
    );
}
