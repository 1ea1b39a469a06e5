//! Interim stand-in for `crate::blocks` (the agent helper's parser, which
//! lands on main later): the same signature and block shape, so switching
//! is one `use` line in `chat.rs`. Best effort only.

use crate::protocol::Run;

/// A piece of an agent reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    Prose(String),
    Output { cmd: String, output: String },
    Error { cmd: String, message: String },
}

/// Splits a reply into prose and command blocks: from `runs` where
/// present, else from `Output (cmd):` / `Error (cmd):` header lines.
pub fn parse(text: &str, runs: Option<&[Run]>) -> Vec<Block> {
    if let Some(runs) = runs.filter(|r| !r.is_empty()) {
        let first = &runs[0];
        let cut = [
            format!("\n\nOutput ({}):\n", first.cmd),
            format!("\n\nError ({}):\n", first.cmd),
        ]
        .iter()
        .filter_map(|h| text.find(h.as_str()))
        .min()
        .unwrap_or(text.len());
        let mut blocks = vec![Block::Prose(text[..cut].trim_end().to_string())];
        blocks.retain(|b| !matches!(b, Block::Prose(p) if p.is_empty()));
        for run in runs {
            blocks.push(match &run.error {
                Some(message) => Block::Error {
                    cmd: run.cmd.clone(),
                    message: message.clone(),
                },
                None => Block::Output {
                    cmd: run.cmd.clone(),
                    output: if !run.stdout.is_empty() {
                        run.stdout.clone()
                    } else if !run.stderr.is_empty() {
                        run.stderr.clone()
                    } else {
                        "[no output]".to_string()
                    },
                },
            });
        }
        return blocks;
    }
    let mut blocks = Vec::new();
    let mut current: Option<Block> = None;
    let mut prose = String::new();
    for line in text.split('\n') {
        let header = line.strip_suffix("):").and_then(|l| {
            l.strip_prefix("Output (")
                .map(|c| (true, c))
                .or_else(|| l.strip_prefix("Error (").map(|c| (false, c)))
        });
        if let Some((is_output, cmd)) = header {
            flush(&mut blocks, &mut prose, current.take());
            current = Some(if is_output {
                Block::Output {
                    cmd: cmd.to_string(),
                    output: String::new(),
                }
            } else {
                Block::Error {
                    cmd: cmd.to_string(),
                    message: String::new(),
                }
            });
            continue;
        }
        match &mut current {
            Some(Block::Output { output: body, .. }) | Some(Block::Error { message: body, .. }) => {
                if !body.is_empty() {
                    body.push('\n');
                }
                body.push_str(line);
            }
            _ => {
                prose.push_str(line);
                prose.push('\n');
            }
        }
    }
    flush(&mut blocks, &mut prose, current);
    blocks
}

fn flush(blocks: &mut Vec<Block>, prose: &mut String, block: Option<Block>) {
    let text = prose.trim_end();
    if !text.is_empty() {
        blocks.push(Block::Prose(text.to_string()));
    }
    prose.clear();
    if let Some(mut block) = block {
        if let Block::Output { output: body, .. } | Block::Error { message: body, .. } = &mut block
        {
            *body = body.trim_end().to_string();
        }
        blocks.push(block);
    }
}
