//! The model's tools (docs/protocol.md "Tool calls"): `run`, and the file
//! tools `read_file`, `write_file` and `edit_file`, confined to /workspace
//! by the files API's path rules (the room's host checks them). Here: what
//! the request offers, what a call asks for, and what a file call does,
//! tells the model and adds to the reply. The texts are the contract's, the
//! same on both backends.

use super::TurnHost;
use super::context::FileRead;
use super::provider::ToolCall;
use serde_json::{Value, json};

/// Bytes of a file `read_file` gives the model.
pub const READ_BYTES: usize = 32 * 1024;

/// The tools the request offers.
pub(crate) fn definitions() -> Value {
    let string = |description: &str| json!({"type": "string", "description": description});
    let tool = |name: &str, description: &str, properties: Value, required: &[&str]| {
        json!({"type": "function", "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}
        }})
    };
    json!([
        tool(
            "run",
            "Run a shell command in the room's sandbox, as <run>CMD</run> does; its output comes back to you.",
            json!({"cmd": string("the command line, for bash")}),
            &["cmd"],
        ),
        tool(
            "read_file",
            "Read a file of the workspace (a path relative to /workspace).",
            json!({"path": string("the file, relative to /workspace")}),
            &["path"],
        ),
        tool(
            "write_file",
            "Write a whole file of the workspace, creating it (and its folders) or replacing it.",
            json!({"path": string("the file, relative to /workspace"), "content": string("its new text")}),
            &["path", "content"],
        ),
        tool(
            "edit_file",
            "Replace the one place in a file of the workspace where `old` occurs (exactly, once) with `new`.",
            json!({
                "path": string("the file, relative to /workspace"),
                "old": string("the exact text to replace: it must occur once in the file"),
                "new": string("the text to put in its place")
            }),
            &["path", "old", "new"],
        ),
    ])
}

/// A file tool's call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FileCall {
    Read {
        path: String,
    },
    Write {
        path: String,
        content: String,
    },
    Edit {
        path: String,
        old: String,
        new: String,
    },
    /// A call that cannot be done as asked: its label and why.
    Bad {
        label: String,
        why: String,
    },
}

/// What one call of a round asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Action {
    Run(String),
    File(FileCall),
}

/// The action of a call; a `run` whose arguments are not an object with a
/// string `cmd` is left out (as a tag it would not be one either).
pub(crate) fn action(call: &ToolCall) -> Option<Action> {
    let args: Value = serde_json::from_str(&call.arguments).unwrap_or(Value::Null);
    let field = |name: &str| args.get(name).and_then(Value::as_str).map(str::to_string);
    let needs = |fields: &str| FileCall::Bad {
        label: call.name.clone(),
        why: format!("{} needs {fields}", call.name),
    };
    let file = match call.name.as_str() {
        "run" => return field("cmd").map(Action::Run),
        "read_file" => match field("path") {
            Some(path) => FileCall::Read { path },
            None => needs("a string `path`"),
        },
        "write_file" => match (field("path"), field("content")) {
            (Some(path), Some(content)) => FileCall::Write { path, content },
            _ => needs("the strings `path` and `content`"),
        },
        "edit_file" => match (field("path"), field("old"), field("new")) {
            (Some(path), Some(old), Some(new)) => FileCall::Edit { path, old, new },
            _ => needs("the strings `path`, `old` and `new`"),
        },
        other => FileCall::Bad {
            label: other.to_string(),
            why: format!("there is no tool {other:?}: use run, read_file, write_file or edit_file"),
        },
    };
    Some(Action::File(file))
}

/// What a file call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FileOutcome {
    /// `edit_file src/a.py`: how the model's results name it.
    pub(crate) label: String,
    /// Whether it failed (the model is told `Error (…)`).
    pub(crate) failed: bool,
    /// What the model is told.
    pub(crate) result: String,
    /// The line the reply gets (a write or edit, done or refused).
    pub(crate) line: Option<String>,
}

impl FileOutcome {
    fn error(label: String, why: impl Into<String>) -> FileOutcome {
        FileOutcome {
            label,
            failed: true,
            result: why.into(),
            line: None,
        }
    }
}

/// Lines added and removed from `old` to `new`: the lines between their
/// common first and last lines.
pub fn changed_lines(old: &str, new: &str) -> (u64, u64) {
    let a: Vec<&str> = old.split_inclusive('\n').collect();
    let b: Vec<&str> = new.split_inclusive('\n').collect();
    let head = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let tail = a[head..]
        .iter()
        .rev()
        .zip(b[head..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
    (count(b.len() - head - tail), count(a.len() - head - tail))
}

/// A file's text as read for a write or an edit: `None` when absent.
async fn current(host: &dyn TurnHost, path: &str) -> Result<Option<String>, String> {
    match host.read_file(path.to_string()).await {
        FileRead::Bytes(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("{path} is not UTF-8 text")),
        FileRead::Missing => Ok(None),
        other => Err(read_problem(path, other)),
    }
}

/// Why a read found no file.
fn read_problem(path: &str, read: FileRead) -> String {
    match read {
        FileRead::Missing => format!("no such file in /workspace: {path}"),
        FileRead::BadPath => format!(
            "{path} is not a path inside /workspace (paths are relative, without `..`, and no symlinks)"
        ),
        FileRead::Folder => format!("{path} is a folder, not a file"),
        FileRead::Failed(why) => format!("{path} could not be read: {why}"),
        FileRead::Bytes(_) => format!("{path} could not be read"),
    }
}

/// The new text of an edit of `text`, or why there is none.
fn replaced(path: &str, text: &str, old: &str, new: &str) -> Result<String, String> {
    if old.is_empty() {
        return Err("`old` is empty: give the exact text to replace".into());
    }
    match text.matches(old).count() {
        0 => Err(format!(
            "`old` does not occur in {path}: read the file and copy the text exactly"
        )),
        1 => Ok(text.replacen(old, new, 1)),
        n => Err(format!(
            "`old` occurs {n} times in {path}: give more of the text around it so that it occurs once"
        )),
    }
}

/// Does a file call in the room through `host`: a write or an edit asks
/// the room's policy first, and is noted in the room's timeline.
pub(crate) async fn run_file_call(host: &dyn TurnHost, call: FileCall) -> FileOutcome {
    match call {
        FileCall::Bad { label, why } => FileOutcome::error(label, why),
        FileCall::Read { path } => {
            let label = format!("read_file {path}");
            match host.read_file(path.clone()).await {
                FileRead::Bytes(bytes) => FileOutcome {
                    label,
                    failed: false,
                    result: read_text(&bytes),
                    line: None,
                },
                other => FileOutcome::error(label, read_problem(&path, other)),
            }
        }
        FileCall::Write { path, content } => {
            let label = format!("write_file {path}");
            let old = match current(host, &path).await {
                Ok(old) => old.unwrap_or_default(),
                // A file that is not text is replaced whole all the same.
                Err(why) if why.ends_with("is not UTF-8 text") => String::new(),
                Err(why) => return FileOutcome::error(label, why),
            };
            write(host, label, "Wrote", &path, &old, content).await
        }
        FileCall::Edit { path, old, new } => {
            let label = format!("edit_file {path}");
            let before = match current(host, &path).await {
                Ok(Some(text)) => text,
                Ok(None) => {
                    return FileOutcome::error(label, read_problem(&path, FileRead::Missing));
                }
                Err(why) => return FileOutcome::error(label, why),
            };
            if let Err(why) = replaced(&path, &before, &old, &new) {
                return FileOutcome::error(label, why);
            }
            if let Err(why) = host.ask(label.clone()).await {
                return refused(label, "edit", &path, why);
            }
            // Read again: the file may have changed while a person decided.
            let after = match current(host, &path).await {
                Ok(Some(text)) => replaced(&path, &text, &old, &new).map(|t| (text, t)),
                Ok(None) => Err(read_problem(&path, FileRead::Missing)),
                Err(why) => Err(why),
            };
            match after {
                Ok((text, changed)) => store(host, label, "Edited", &path, &text, changed).await,
                Err(why) => FileOutcome::error(label, why),
            }
        }
    }
}

/// A write of `content` over `old`, once the room's policy allows it.
async fn write(
    host: &dyn TurnHost,
    label: String,
    verb: &str,
    path: &str,
    old: &str,
    content: String,
) -> FileOutcome {
    if let Err(why) = host.ask(label.clone()).await {
        return refused(label, "write", path, why);
    }
    store(host, label, verb, path, old, content).await
}

/// Writes the file and says what changed.
async fn store(
    host: &dyn TurnHost,
    label: String,
    verb: &str,
    path: &str,
    old: &str,
    content: String,
) -> FileOutcome {
    let (added, removed) = changed_lines(old, &content);
    let size = content.len();
    if let Err(why) = host
        .write_file(path.to_string(), content.into_bytes())
        .await
    {
        return FileOutcome::error(label, why);
    }
    host.edited(path.to_string(), added, removed).await;
    let change = format!("+{added} -{removed} lines");
    FileOutcome {
        label,
        failed: false,
        result: format!("{} {path} ({size} bytes): {change}", verb.to_lowercase()),
        line: Some(format!("{verb} {path} ({change})")),
    }
}

/// A write or edit the room's policy refused (a person denied it, the
/// policy is off, the turn was cancelled).
fn refused(label: String, what: &str, path: &str, why: String) -> FileOutcome {
    FileOutcome {
        label,
        failed: true,
        line: Some(format!("Did not {what} {path}: {why}")),
        result: why,
    }
}

/// A file's bytes as the model reads them.
fn read_text(bytes: &[u8]) -> String {
    let size = bytes.len();
    let mut end = size.min(READ_BYTES);
    loop {
        match std::str::from_utf8(&bytes[..end]) {
            Ok(text) if end < size => {
                return format!(
                    "{text}\n[the file is {size} bytes: only the first {end} are shown]"
                );
            }
            Ok(text) => return text.to_string(),
            Err(e) if end < size && e.error_len().is_none() => end = e.valid_up_to(),
            Err(_) => return format!("[{size} bytes and not text: not shown]"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_lines_count_what_lies_between_the_common_ends() {
        assert_eq!(changed_lines("a\nb\nc\n", "a\nB\nc\n"), (1, 1));
        assert_eq!(changed_lines("", "a\nb\n"), (2, 0));
        assert_eq!(changed_lines("a\nb\n", "a\nb\n"), (0, 0));
        assert_eq!(changed_lines("a\nc\n", "a\nb1\nb2\nc\n"), (2, 0));
        assert_eq!(changed_lines("x", "x\ny"), (2, 1));
    }

    #[test]
    fn an_edit_needs_one_exact_match() {
        assert_eq!(replaced("f", "a b a", "b", "c"), Ok("a c a".into()));
        assert!(
            replaced("f", "a b a", "a", "c")
                .unwrap_err()
                .contains("occurs 2 times")
        );
        assert!(
            replaced("f", "a", "z", "c")
                .unwrap_err()
                .contains("does not occur")
        );
        assert!(replaced("f", "a", "", "c").is_err());
    }

    #[test]
    fn calls_become_actions_or_say_what_they_lack() {
        let call = |name: &str, arguments: &str| ToolCall {
            name: name.into(),
            arguments: arguments.into(),
        };
        assert_eq!(
            action(&call("run", r#"{"cmd":"ls"}"#)),
            Some(Action::Run("ls".into()))
        );
        assert_eq!(action(&call("run", "{}")), None);
        assert_eq!(
            action(&call("edit_file", r#"{"path":"a","old":"x"}"#)),
            Some(Action::File(FileCall::Bad {
                label: "edit_file".into(),
                why: "edit_file needs the strings `path`, `old` and `new`".into()
            }))
        );
        assert!(matches!(
            action(&call("rm", "{}")),
            Some(Action::File(FileCall::Bad { .. }))
        ));
    }
}
