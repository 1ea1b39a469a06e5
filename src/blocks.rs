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
    let (prose, placed) = extract_placed(reply);
    (prose, placed.into_iter().map(|(cmd, _)| cmd).collect())
}

/// As `extract_commands`, each command with where its tag stood in the
/// prose: an offset in characters into the trimmed prose.
pub fn extract_placed(reply: &str) -> (String, Vec<(String, usize)>) {
    let mut prose = String::with_capacity(reply.len());
    let mut prose_chars = 0;
    let mut cmds = Vec::new();
    let mut rest = reply;
    while let Some(open) = rest.find(OPEN) {
        let inner = &rest[open + OPEN.len()..];
        let Some(close) = inner.find(CLOSE) else {
            break;
        };
        let before = &rest[..open];
        prose.push_str(before);
        prose_chars += before.chars().count();
        let cmd = inner[..close].trim();
        if !cmd.is_empty() {
            cmds.push((cmd.to_string(), prose_chars));
        }
        rest = &inner[close + CLOSE.len()..];
    }
    prose.push_str(rest);
    let trimmed = prose.trim();
    let lead = prose[..prose.len() - prose.trim_start().len()]
        .chars()
        .count();
    let len = trimmed.chars().count();
    let placed = cmds
        .into_iter()
        .map(|(cmd, at)| (cmd, at.saturating_sub(lead).min(len)))
        .collect();
    (trimmed.to_string(), placed)
}

/// The model's text while it streams, as the stored reply will show it:
/// its prose split where each command was asked, the command there as a
/// block (with no output yet), one still being written too.
pub fn parse_streaming(text: &str) -> Vec<Block> {
    let mut blocks = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find(OPEN) {
        push_prose(&mut blocks, &rest[..open]);
        let inner = &rest[open + OPEN.len()..];
        let (cmd, after) = match inner.find(CLOSE) {
            Some(close) => (&inner[..close], &inner[close + CLOSE.len()..]),
            None => (inner, ""),
        };
        let cmd = cmd.trim();
        if !cmd.is_empty() {
            blocks.push(Block::Output {
                cmd: cmd.to_string(),
                output: String::new(),
            });
        }
        rest = after;
    }
    push_prose(&mut blocks, rest);
    blocks
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
/// text (a multi-round reply has prose between rounds). A run that says
/// where it was asked (`at`) is shown there, splitting the prose; one that
/// does not, where its block is in the text.
fn parse_with_runs(text: &str, runs: &[Run]) -> Vec<Block> {
    let spans = block_spans(text, runs);
    let mut blocks = Vec::new();
    let mut cursor = 0;
    for (run, place) in runs.iter().zip(places(text, runs, &spans)) {
        push_prose_outside(&mut blocks, text, cursor, place, &spans);
        blocks.push(run_block(run));
        cursor = place;
    }
    push_prose_outside(&mut blocks, text, cursor, text.len(), &spans);
    blocks
}

/// Where each run's block lies in the text (from its separator to the end
/// of its body), when it is found there.
fn block_spans(text: &str, runs: &[Run]) -> Vec<Option<(usize, usize)>> {
    let mut spans = Vec::with_capacity(runs.len());
    let mut cursor = 0;
    for (i, run) in runs.iter().enumerate() {
        let (head, body) = block_parts(run);
        let header = format!("{head}{}{HEAD_END}", run.cmd);
        let Some((sep_start, body_start)) = find_header(text, cursor, &header) else {
            spans.push(None);
            continue;
        };
        let after = &text[body_start..];
        let end = if after.starts_with(body.as_str()) {
            body_start + body.len()
        } else if after.starts_with(body.trim_end()) {
            // Trailing white space was trimmed (the end of a round).
            body_start + body.trim_end().len()
        } else {
            // Not what this run printed: up to the next run's block.
            let next = runs.get(i + 1).map(|next| {
                let (head, _) = block_parts(next);
                format!("{head}{}{HEAD_END}", next.cmd)
            });
            next.and_then(|h| find_header(text, body_start, &h))
                .map_or(text.len(), |(sep_start, _)| sep_start)
        };
        spans.push(Some((sep_start, end)));
        cursor = end;
    }
    spans
}

/// The byte offset in the text where each run is shown, in order: its `at`
/// (moved past a block it would fall into), else its block's place, else
/// where the one before it is.
fn places(text: &str, runs: &[Run], spans: &[Option<(usize, usize)>]) -> Vec<usize> {
    let mut out = Vec::with_capacity(runs.len());
    let mut last = 0;
    for (run, span) in runs.iter().zip(spans) {
        let asked = run.at.and_then(|at| byte_offset(text, at)).map(|at| {
            spans
                .iter()
                .flatten()
                .find(|(start, end)| *start < at && at < *end)
                .map_or(at, |(_, end)| *end)
        });
        let place = asked.or(span.map(|(start, _)| start)).unwrap_or(last);
        last = place.max(last);
        out.push(last);
    }
    out
}

/// The byte offset of the `chars`-th character of the text (its end when
/// it has that many exactly); `None` beyond.
fn byte_offset(text: &str, chars: u64) -> Option<usize> {
    let chars = usize::try_from(chars).ok()?;
    text.char_indices()
        .map(|(at, _)| at)
        .chain(std::iter::once(text.len()))
        .nth(chars)
}

/// Pushes, as one piece of prose, the text from `from` to `to` that lies
/// outside every block, its parts trimmed and a blank line between them.
fn push_prose_outside(
    blocks: &mut Vec<Block>,
    text: &str,
    from: usize,
    to: usize,
    spans: &[Option<(usize, usize)>],
) {
    let mut parts = Vec::new();
    let mut at = from;
    for (start, end) in spans.iter().flatten() {
        if *end <= at || *start >= to {
            continue;
        }
        if *start > at {
            parts.push(&text[at..*start]);
        }
        at = (*end).max(at);
    }
    if at < to {
        parts.push(&text[at..to]);
    }
    let parts: Vec<&str> = parts
        .iter()
        .map(|part| part.trim())
        .filter(|part| !part.is_empty())
        .collect();
    push_prose(blocks, &parts.join("\n\n"));
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
