//! The copy key: what it copies (the chat's last code block, else the last
//! command's output) and how that reaches the clipboard: an OSC 52
//! sequence written to the terminal, which works over ssh and in tmux
//! (`set-clipboard on`) without a clipboard tool on this machine.

use crate::tui::app::{App, Effect};
use crate::tui::chat_render;
use base64::Engine;
use std::io::Write;

/// Most bytes of text one copy sends: terminals cap what OSC 52 may carry
/// (100 kB is a common limit), and a longer copy keeps its last lines.
pub const MAX_COPY: usize = 74_000;

/// The OSC 52 sequence that puts `text` on the clipboard.
pub fn osc52(text: &str) -> String {
    let payload = base64::engine::general_purpose::STANDARD.encode(text);
    format!("\x1b]52;c;{payload}\x07")
}

/// Writes the sequence for `text` to the terminal, at once.
pub fn write_osc52(out: &mut impl Write, text: &str) -> std::io::Result<()> {
    out.write_all(osc52(text).as_bytes())?;
    out.flush()
}

/// What the copy key takes, and what to call it.
struct Found {
    text: String,
    what: String,
    /// Lines of the output not kept in the client (folded away).
    folded: usize,
}

/// The chat's last code block, else the output of the last command that
/// printed something.
fn find(app: &App) -> Option<Found> {
    let code = app
        .chat
        .messages()
        .rev()
        .find_map(|msg| chat_render::code_blocks(msg).pop());
    if let Some(code) = code {
        return Some(Found {
            text: code,
            what: "the code block".into(),
            folded: 0,
        });
    }
    let run = app
        .execs
        .runs()
        .iter()
        .rev()
        .find(|r| !r.output.is_empty())?;
    Some(Found {
        text: run.output.plain_lines().join("\n"),
        what: format!(
            "the output of `{}`",
            crate::tui::text::truncate(&run.cmd, 40)
        ),
        folded: run.output.folded(),
    })
}

/// The last lines of `text` that fit in `max` bytes (the end of one huge
/// line if no whole line does).
fn last_lines(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let cut = (text.len() - max..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    let tail = &text[cut..];
    match tail.find('\n') {
        Some(newline) if newline + 1 < tail.len() => &tail[newline + 1..],
        _ => tail,
    }
}

fn lines(n: usize) -> String {
    if n == 1 {
        "1 line".into()
    } else {
        format!("{n} lines")
    }
}

impl App {
    /// The copy key: the text goes out as `Effect::Clipboard`, and a
    /// toast says what was copied.
    pub(crate) fn copy_last(&mut self, effects: &mut Vec<Effect>) {
        let Some(found) = find(self) else {
            self.toast(
                "nothing to copy yet: no code block in the chat, no command output",
                false,
            );
            return;
        };
        let total = found.text.lines().count().max(1);
        let text = last_lines(&found.text, MAX_COPY);
        let copied = text.lines().count().max(1);
        let mut said = if copied < total {
            format!(
                "copied the last {copied} of {total} lines of {} (a clipboard takes about 100 kB)",
                found.what
            )
        } else {
            format!("copied {} of {}", lines(copied), found.what)
        };
        if found.folded > 0 {
            said.push_str(&format!(
                "; {} in its middle were not kept",
                lines(found.folded)
            ));
        }
        effects.push(Effect::Clipboard(text.to_string()));
        self.toast(said, false);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_carries_the_text_in_base64() {
        assert_eq!(osc52("hi\n"), "\x1b]52;c;aGkK\x07");
        let mut out = Vec::new();
        write_osc52(&mut out, "fn main() {}").unwrap();
        assert_eq!(out, b"\x1b]52;c;Zm4gbWFpbigpIHt9\x07");
    }

    #[test]
    fn a_long_copy_keeps_its_last_whole_lines() {
        assert_eq!(last_lines("one\ntwo\nthree", 100), "one\ntwo\nthree");
        assert_eq!(last_lines("one\ntwo\nthree", 9), "three");
        assert_eq!(last_lines("漢字漢字", 4), "字");
    }
}
