//! End to end in tmux: a long paste from a terminal without bracketed
//! paste arrives as a burst of keystrokes, more than one read of the
//! terminal holds; all of it reaches the input at once, not the first
//! kilobyte until the next key. Needs tmux.

use crate::common::tmux::Tmux;

#[tokio::test]
async fn a_long_unbracketed_paste_arrives_whole_without_another_key() {
    let dir = tempfile::tempdir().unwrap();
    let tmux = Tmux::new(dir.path());
    tmux.start_embedded(dir.path(), "ada", "paste").await;
    // 4,000 characters on one line, its end marked.
    let text = format!("{}QEND", "abcdefghij".repeat(400));
    tmux.run(&["set-buffer", "-b", "long", &text]);
    // No -p: the bytes as a terminal without bracketed paste sends them.
    tmux.run(&["paste-buffer", "-b", "long", "-t", "ada"]);
    tmux.wait("ada", "the paste's end in the input", |s| {
        s.contains("QEND")
    })
    .await;
}
