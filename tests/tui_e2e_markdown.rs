//! End to end, as people read it: the fake model answers in markdown (a
//! heading, a table, a code block, a command); the real binary in tmux
//! shows it drawn (no markdown marks, no `<run>` tags), Ctrl+Y puts the
//! code block on tmux's clipboard through OSC 52, and `duet ask` prints
//! the same reply drawn for a terminal (with escapes) and for a pipe
//! (plain text). Needs tmux.

mod agent_support;
mod common;

use agent_support::{FakeModel, Script};
use common::Server;
use common::tmux::{Tmux, client_env};

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
    let (server, _data) = Server::fresh_with(&model.server_args()).await;
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
