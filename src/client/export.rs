//! `duet export` and the TUI's `/export`: a room's whole history (every
//! page of `/messages` and `/execs`) as markdown to read, as the
//! protocol's JSON, or as an asciicast v2 recording of its commands,
//! playable with `asciinema play`.

use crate::blocks::{self, Block};
use crate::client::http::{HttpClient, HttpError};
use crate::protocol::{DuetMessage, ExecRecord, ExecSource, PAGE_MAX, Role};
use serde_json::json;

/// The formats of an export.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// Markdown: who said and ran what, when.
    Md,
    /// The stored messages and commands as docs/protocol.md defines them.
    Json,
    /// An asciicast v2 recording of the commands and their output.
    Cast,
}

impl Format {
    /// The format a file's name asks for (`.json`, `.cast`; else markdown).
    pub fn of_path(path: &str) -> Format {
        let lower = path.to_ascii_lowercase();
        if lower.ends_with(".json") {
            Format::Json
        } else if lower.ends_with(".cast") {
            Format::Cast
        } else {
            Format::Md
        }
    }
}

/// A room's history, oldest first.
#[derive(Debug, Clone, PartialEq)]
pub struct History {
    pub room: String,
    pub messages: Vec<DuetMessage>,
    pub execs: Vec<ExecRecord>,
}

/// Reads every page of the room's messages and commands.
pub async fn fetch(client: &HttpClient) -> Result<History, HttpError> {
    let mut messages = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = client.messages(before.as_deref(), Some(PAGE_MAX)).await?;
        let first = page.messages.first().map(|m| m.id.clone());
        messages.splice(0..0, page.messages);
        match first {
            Some(id) if page.has_more => before = Some(id),
            _ => break,
        }
    }
    let mut execs = Vec::new();
    let mut before: Option<String> = None;
    loop {
        let page = client.execs(before.as_deref(), Some(PAGE_MAX)).await?;
        let first = page.execs.first().map(|e| e.exec_id.clone());
        execs.splice(0..0, page.execs);
        match first {
            Some(id) if page.has_more => before = Some(id),
            _ => break,
        }
    }
    Ok(History {
        room: client.room().to_string(),
        messages,
        execs,
    })
}

/// Writes `text` to `path` whole (beside it, then renamed), or says why not.
pub fn write_file(path: &str, text: &str) -> Result<(), String> {
    crate::client::cp::replace_file(std::path::Path::new(path), text.as_bytes())
        .map_err(|e| format!("{path} could not be written: {e}"))
}

/// The export of `history` in `format`; `now` (ms) is when it was made.
pub fn render(history: &History, format: Format, now: i64, tz: time::UtcOffset) -> String {
    match format {
        Format::Md => markdown(history, now, tz),
        Format::Json => json_text(history, now),
        Format::Cast => cast(history),
    }
}

/// `{room, exportedAt, messages, execs}`, pretty.
fn json_text(history: &History, now: i64) -> String {
    let value = json!({
        "room": history.room,
        "exportedAt": now,
        "messages": history.messages,
        "execs": history.execs,
    });
    serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
}

/// A time of day (and date) as the export shows it.
fn when(ts: i64, tz: time::UtcOffset) -> String {
    let at = time::OffsetDateTime::from_unix_timestamp_nanos(ts as i128 * 1_000_000)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
        .to_offset(tz);
    let format = time::macros::format_description!("[year]-[month]-[day] [hour]:[minute]:[second]");
    at.format(&format).unwrap_or_default()
}

/// A fenced block that no run of backquotes inside `body` can close.
fn fenced(info: &str, body: &str) -> String {
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    let body = body.strip_suffix('\n').unwrap_or(body);
    format!("{fence}{info}\n{body}\n{fence}")
}

/// One thing of the timeline: a message, or a person's command (the
/// agent's are in its replies).
enum Entry<'a> {
    Message(&'a DuetMessage),
    Command(&'a ExecRecord),
}

impl Entry<'_> {
    fn ts(&self) -> i64 {
        match self {
            Entry::Message(m) => m.ts,
            Entry::Command(e) => e.ts,
        }
    }
}

/// The transcript: messages, replies with their outputs, records and
/// people's commands, in time order.
fn markdown(history: &History, now: i64, tz: time::UtcOffset) -> String {
    let mut entries: Vec<Entry<'_>> = history.messages.iter().map(Entry::Message).collect();
    entries.extend(
        history
            .execs
            .iter()
            .filter(|e| e.source == ExecSource::User)
            .map(Entry::Command),
    );
    entries.sort_by_key(Entry::ts);
    let mut out = format!(
        "# Duet room `{}`\n\nExported {}: {} messages, {} commands.\n",
        history.room,
        when(now, tz),
        history.messages.len(),
        history.execs.len()
    );
    for entry in entries {
        out.push('\n');
        match entry {
            Entry::Message(m) => out.push_str(&message_md(m, tz)),
            Entry::Command(e) => out.push_str(&command_md(e, tz)),
        }
        out.push('\n');
    }
    out
}

fn message_md(m: &DuetMessage, tz: time::UtcOffset) -> String {
    let at = when(m.ts, tz);
    match m.role {
        Role::User => {
            let who = m.user_id.as_deref().unwrap_or("anonymous");
            let to = match m.to {
                Some(crate::protocol::Addressee::Room) => "to the room",
                _ => "to the agent",
            };
            let quoted: Vec<String> = m.text.lines().map(|l| format!("> {l}")).collect();
            format!("**{who}** {to} · {at}\n\n{}\n", quoted.join("\n"))
        }
        Role::Agent => {
            let mut out = format!("**agent** · {at}\n");
            for block in blocks::parse(&m.text, m.runs.as_deref()) {
                out.push('\n');
                match block {
                    Block::Prose(text) => out.push_str(text.trim()),
                    Block::Output { cmd, output } => {
                        let output = plain(&output);
                        out.push_str(&format!("Output (`{cmd}`):\n\n{}", fenced("text", &output)));
                    }
                    Block::Error { cmd, message } => {
                        out.push_str(&format!("Error (`{cmd}`): {message}"));
                    }
                }
                out.push('\n');
            }
            if let Some(by) = &m.cancelled_by {
                out.push_str(&format!("\n_cancelled by {by}_\n"));
            }
            if let Some(usage) = &m.usage {
                out.push_str(&format!("\n_{}_\n", crate::text::usage_line(usage)));
            }
            out
        }
        Role::System => match &m.event {
            Some(event) => format!("_{}_ · {at}\n", crate::text::record_text(event, &m.text)),
            None => format!("_duet: {}_ · {at}\n", m.text.trim()),
        },
    }
}

fn command_md(e: &ExecRecord, tz: time::UtcOffset) -> String {
    let status = match e.exit_code {
        Some(code) => format!("exit {code}"),
        None => match &e.error {
            Some(why) => format!("no exit code: {why}"),
            None => "no exit code".into(),
        },
    };
    let mut body = format!("$ {}\n", e.cmd);
    body.push_str(&plain(&e.stdout));
    if !e.stderr.is_empty() {
        if !body.ends_with('\n') {
            body.push('\n');
        }
        body.push_str(&plain(&e.stderr));
    }
    format!(
        "**{}** ran · {} · {status}, {} ms\n\n{}\n",
        e.by,
        when(e.ts, tz),
        e.duration,
        fenced("console", &body)
    )
}

/// A command's output as the text a reader sees: colours and other escape
/// codes gone, carriage-return rewrites (progress bars) settled, as the
/// TUI shows it.
fn plain(output: &str) -> String {
    use crate::text::termtext::{clean, strip_sgr};
    if output.is_empty() {
        return String::new();
    }
    let mut text: Vec<String> = clean(output).iter().map(|l| strip_sgr(l)).collect();
    if output.ends_with('\n') {
        text.push(String::new());
    }
    text.join("\n")
}

/// Terminal text from stored output: newlines as the terminal's CR LF.
fn crlf(text: &str) -> String {
    text.replace("\r\n", "\n").replace('\n', "\r\n")
}

/// The commands as an asciicast v2 recording: each command's line (with
/// who ran it) when it started, its output when it ended.
fn cast(history: &History) -> String {
    let start = history.execs.first().map_or(0, |e| e.ts);
    let header = json!({
        "version": 2,
        "width": 100,
        "height": 30,
        "timestamp": start / 1000,
        "title": format!("Duet room {}", history.room),
        "env": {"TERM": "xterm-256color", "SHELL": "/bin/bash"},
    });
    let mut lines = vec![header.to_string()];
    // Times never go back, even when commands overlapped.
    let mut last = 0.0_f64;
    let mut event = |at_ms: i64, text: String| {
        let t = ((at_ms - start).max(0) as f64 / 1000.0).max(last);
        last = t;
        lines.push(json!([t, "o", text]).to_string());
    };
    for e in &history.execs {
        let who = match e.source {
            ExecSource::Agent => "the agent".to_string(),
            ExecSource::User => e.by.clone(),
        };
        event(
            e.ts,
            format!(
                "\x1b[2m# {who}\x1b[0m\r\n\x1b[1m$ {}\x1b[0m\r\n",
                crlf(&e.cmd)
            ),
        );
        let end = e.ts + e.duration as i64;
        let mut output = crlf(&e.stdout);
        output.push_str(&crlf(&e.stderr));
        if !output.is_empty() && !output.ends_with("\r\n") {
            output.push_str("\r\n");
        }
        if let Some(code) = e.exit_code.filter(|c| *c != 0) {
            output.push_str(&format!("\x1b[31m[exit {code}]\x1b[0m\r\n"));
        }
        if !output.is_empty() {
            event(end, output);
        }
    }
    lines.join("\n") + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;

    fn exec(id: &str, by: &str, cmd: &str, stdout: &str, ts: i64) -> ExecRecord {
        ExecRecord {
            exec_id: id.into(),
            cmd: cmd.into(),
            by: by.into(),
            source: ExecSource::User,
            stdout: stdout.into(),
            stderr: String::new(),
            exit_code: Some(0),
            duration: 40,
            ts,
            truncated: false,
            error: None,
            timed_out: false,
            interrupted: false,
        }
    }

    #[test]
    fn a_cast_is_asciicast_v2_in_time_order() {
        let history = History {
            room: "r".into(),
            messages: Vec::new(),
            execs: vec![
                exec("x1", "ann", "echo a", "a\n", 10_000),
                exec("x2", "bob", "echo b", "b\n", 10_010),
            ],
        };
        let text = cast(&history);
        let mut lines = text.lines();
        let header: serde_json::Value = serde_json::from_str(lines.next().unwrap()).unwrap();
        assert_eq!(header["version"], 2);
        let events: Vec<serde_json::Value> =
            lines.map(|l| serde_json::from_str(l).unwrap()).collect();
        let times: Vec<f64> = events.iter().map(|e| e[0].as_f64().unwrap()).collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
        assert!(events.iter().all(|e| e[1] == "o"));
        let all: String = events.iter().map(|e| e[2].as_str().unwrap()).collect();
        assert!(all.contains("# ann") && all.contains("$ echo b") && all.contains("a\r\n"));
    }

    #[test]
    fn fences_outlast_the_backquotes_inside() {
        assert_eq!(fenced("text", "a ``` b\n"), "````text\na ``` b\n````");
        assert_eq!(fenced("", "plain"), "```\nplain\n```");
        assert_eq!(Format::of_path("x.CAST"), Format::Cast);
        assert_eq!(Format::of_path("notes"), Format::Md);
    }
}
