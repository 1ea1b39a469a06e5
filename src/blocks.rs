//! The Output/Error block format of agent replies (docs/protocol.md "Output
//! blocks"): one place that writes it (the server) and reads it (the
//! terminal client), so that both sides agree byte for byte.

use crate::protocol::Run;

/// The tags around a command in the model's reply.
const OPEN: &str = "<run>";
const CLOSE: &str = "</run>";
/// Characters of output a block shows.
pub const SUMMARY_CHARS: usize = 500;
/// What a block says when a command printed nothing.
pub const NO_OUTPUT: &str = "[no output]";
/// What goes between the parts of a reply.
const SEP: &str = "\n\n";
const OUTPUT_HEAD: &str = "Output (";
const ERROR_HEAD: &str = "Error (";
const HEAD_END: &str = "):";

/// Splits a model's reply into its prose (every `<run>…</run>` removed,
/// trimmed) and its commands (trimmed, empty ones skipped), in order.
pub fn extract_commands(reply: &str) -> (String, Vec<String>) {
    let mut prose = String::with_capacity(reply.len());
    let mut cmds = Vec::new();
    let mut rest = reply;
    while let Some(open) = rest.find(OPEN) {
        let inner = &rest[open + OPEN.len()..];
        let Some(close) = inner.find(CLOSE) else {
            break;
        };
        prose.push_str(&rest[..open]);
        let cmd = inner[..close].trim();
        if !cmd.is_empty() {
            cmds.push(cmd.to_string());
        }
        rest = &inner[close + CLOSE.len()..];
    }
    prose.push_str(rest);
    (prose.trim().to_string(), cmds)
}

/// The text a block shows of a command's output: the first 500 characters
/// of stdout, else of stderr, else `[no output]`.
pub fn summary(stdout: &str, stderr: &str) -> String {
    let source = if !stdout.is_empty() {
        stdout
    } else if !stderr.is_empty() {
        stderr
    } else {
        return NO_OUTPUT.to_string();
    };
    match source.char_indices().nth(SUMMARY_CHARS) {
        Some((end, _)) => source[..end].to_string(),
        None => source.to_string(),
    }
}

/// Whether a run is shown as an `Error (` block: the sandbox could not run
/// the command at all.
pub fn is_error_run(run: &Run) -> bool {
    run.error.is_some() && run.exit_code.is_none()
}

/// The block header and body of one run, as the reply's text holds them
/// (without the separator before it).
fn block_parts(run: &Run) -> (&'static str, String) {
    match (&run.error, is_error_run(run)) {
        (Some(message), true) => (ERROR_HEAD, message.clone()),
        _ => (OUTPUT_HEAD, summary(&run.stdout, &run.stderr)),
    }
}

/// The agent message's text: the prose, then one block per run, the whole
/// trimmed at both ends as the original worker does, so a reply with no
/// prose starts with `Output (` (docs/protocol.md "Output blocks", step 4).
pub fn render_reply(prose: &str, runs: &[Run]) -> String {
    let mut text = prose.to_string();
    for run in runs {
        let (head, body) = block_parts(run);
        text.push_str(SEP);
        text.push_str(head);
        text.push_str(&run.cmd);
        text.push_str(HEAD_END);
        text.push('\n');
        text.push_str(&body);
    }
    text.trim().to_string()
}

/// A piece of an agent reply, as a client shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// What the agent said.
    Prose(String),
    /// A command and what it printed.
    Output { cmd: String, output: String },
    /// A command the sandbox could not run, and why.
    Error { cmd: String, message: String },
}

/// Splits an agent reply into prose and blocks. From `runs` where present:
/// the blocks show the runs' stored outputs (stdout, then stderr), and the
/// prose is the trimmed text between their blocks. Else by parsing the text
/// (best effort; both the docs/protocol.md form and the original worker's form),
/// keeping every character but the block headers and the blank line before
/// each. Never panics.
pub fn parse(text: &str, runs: Option<&[Run]>) -> Vec<Block> {
    match runs {
        Some(runs) if !runs.is_empty() => parse_with_runs(text, runs),
        _ => parse_text(text),
    }
}

/// The output a client shows for a run: its stored stdout, then stderr.
fn run_output(run: &Run) -> String {
    match (run.stdout.is_empty(), run.stderr.is_empty()) {
        (true, true) => NO_OUTPUT.to_string(),
        (false, true) => run.stdout.clone(),
        (true, false) => run.stderr.clone(),
        (false, false) => {
            let mut out = run.stdout.clone();
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&run.stderr);
            out
        }
    }
}

/// The block a run is shown as.
fn run_block(run: &Run) -> Block {
    match (&run.error, is_error_run(run)) {
        (Some(message), true) => Block::Error {
            cmd: run.cmd.clone(),
            message: message.clone(),
        },
        _ => Block::Output {
            cmd: run.cmd.clone(),
            output: run_output(run),
        },
    }
}

/// Pushes prose, trimmed, unless it is only white space.
fn push_prose(blocks: &mut Vec<Block>, prose: &str) {
    let prose = prose.trim();
    if !prose.is_empty() {
        blocks.push(Block::Prose(prose.to_string()));
    }
}

/// Blocks from the runs; the prose is what lies between their blocks in the
/// text (a multi-round reply has prose between rounds).
fn parse_with_runs(text: &str, runs: &[Run]) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut cursor = 0;
    for (i, run) in runs.iter().enumerate() {
        let (head, body) = block_parts(run);
        let header = format!("{head}{}{HEAD_END}", run.cmd);
        let found = find_header(text, cursor, &header);
        let Some((sep_start, body_start)) = found else {
            blocks.push(run_block(run));
            continue;
        };
        push_prose(&mut blocks, &text[cursor..sep_start]);
        blocks.push(run_block(run));
        let after = &text[body_start..];
        cursor = if after.starts_with(body.as_str()) {
            body_start + body.len()
        } else if after.starts_with(body.trim_end()) {
            // Trailing white space was trimmed (the end of a round).
            body_start + body.trim_end().len()
        } else {
            // Not what this run printed: skip to the next run's block.
            let next = runs.get(i + 1).map(|next| {
                let (head, _) = block_parts(next);
                format!("{head}{}{HEAD_END}", next.cmd)
            });
            next.and_then(|h| find_header(text, body_start, &h))
                .map_or(text.len(), |(sep_start, _)| sep_start)
        };
    }
    push_prose(&mut blocks, &text[cursor.min(text.len())..]);
    blocks
}

/// Finds `header` (without its line end) at or after `from`, at the start
/// of the text or after a blank line, followed by a newline or the end.
/// Returns where its separator starts and where its body starts.
fn find_header(text: &str, from: usize, header: &str) -> Option<(usize, usize)> {
    let mut search = from;
    while let Some(rel) = text.get(search..)?.find(header) {
        let at = search + rel;
        let end = at + header.len();
        let line_end = if text[end..].starts_with('\n') {
            Some(end + 1)
        } else if end == text.len() {
            Some(end)
        } else {
            None
        };
        if let Some(body_start) = line_end {
            if at == 0 && from == 0 {
                return Some((0, body_start));
            }
            if at >= from + SEP.len() && text[..at].ends_with(SEP) {
                return Some((at - SEP.len(), body_start));
            }
        }
        search = at + 1;
        while !text.is_char_boundary(search) {
            search += 1;
        }
    }
    None
}

/// A block header found in the text.
struct Header {
    /// Where its separator (or, at the very start, the header) begins.
    sep_start: usize,
    /// Where its body begins.
    body_start: usize,
    is_error: bool,
    cmd: String,
}

/// Finds the next block header whose separator starts at or after `from`
/// (or, when `from` is 0, a header at the very start of the text).
fn next_header(text: &str, from: usize) -> Option<Header> {
    if from == 0
        && (text.starts_with(OUTPUT_HEAD) || text.starts_with(ERROR_HEAD))
        && let Some(header) = header_at(text, 0, 0)
    {
        return Some(header);
    }
    let mut at = from;
    loop {
        let rest = text.get(at..)?;
        let output = rest.find("\n\nOutput (");
        let error = rest.find("\n\nError (");
        let sep_start = at + output.into_iter().chain(error).min()?;
        if let Some(header) = header_at(text, sep_start, sep_start + SEP.len()) {
            return Some(header);
        }
        // The separator starts with a newline, so the next byte is a boundary.
        at = sep_start + 1;
    }
}

/// The header whose `Output (`/`Error (` starts at `start`, if its command
/// is closed by `):` and a line end.
fn header_at(text: &str, sep_start: usize, start: usize) -> Option<Header> {
    let is_error = text[start..].starts_with(ERROR_HEAD);
    let head_len = if is_error {
        ERROR_HEAD.len()
    } else {
        OUTPUT_HEAD.len()
    };
    let cmd_start = start + head_len;
    let (cmd_end, body_start) = find_head_end(text, cmd_start)?;
    Some(Header {
        sep_start,
        body_start,
        is_error,
        cmd: text[cmd_start..cmd_end].to_string(),
    })
}

/// The end of a header's command: the first `):` followed by a newline or
/// the end of the text. Returns where the command ends and the body starts.
fn find_head_end(text: &str, from: usize) -> Option<(usize, usize)> {
    let mut search = from;
    while let Some(rel) = text[search..].find(HEAD_END) {
        let at = search + rel;
        let end = at + HEAD_END.len();
        if end == text.len() {
            return Some((at, end));
        }
        if text[end..].starts_with('\n') {
            return Some((at, end + 1));
        }
        search = at + 1;
    }
    None
}

/// Blocks by reading the text alone.
fn parse_text(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut cursor = 0;
    let mut current: Option<Header> = None;
    loop {
        let next = next_header(text, cursor);
        let piece_end = next.as_ref().map_or(text.len(), |h| h.sep_start);
        let piece = &text[cursor..piece_end];
        match current.take() {
            None if !piece.is_empty() => blocks.push(Block::Prose(piece.to_string())),
            None => {}
            Some(h) if h.is_error => blocks.push(Block::Error {
                cmd: h.cmd,
                message: piece.to_string(),
            }),
            Some(h) => blocks.push(Block::Output {
                cmd: h.cmd,
                output: piece.to_string(),
            }),
        }
        let Some(header) = next else {
            return blocks;
        };
        cursor = header.body_start;
        current = Some(header);
    }
}

#[cfg(test)]
#[path = "blocks_tests.rs"]
mod tests;
