//! What the agent is told of the project besides the chat (docs/protocol.md
//! "What the agent knows of the project"): `/workspace/AGENTS.md`, read
//! afresh each turn, and the workspace files a question names with `@path`.
//! The texts here are the contract's, the same on both backends.

use super::BoxFuture;

/// Bytes of one `@path` file inlined.
pub const MENTION_BYTES: usize = 32 * 1024;
/// Files inlined in one question.
pub const MENTIONS_MAX: usize = 4;
/// The workspace file of the project's instructions.
pub const AGENTS_MD: &str = "AGENTS.md";

/// What reading a workspace file gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRead {
    Bytes(Vec<u8>),
    Missing,
    /// Outside the workspace, or through a symlink.
    BadPath,
    Folder,
    Failed(String),
}

/// How a turn reads the room's workspace.
pub trait Workspace: Send + Sync {
    fn read(&self, path: String) -> BoxFuture<FileRead>;
}

/// At most `limit` bytes of `bytes` as text, cut back to a whole
/// character; `None` when they are not UTF-8 (a cut character excepted).
fn text_within(bytes: &[u8], limit: usize) -> Option<(String, bool)> {
    let cut = bytes.len() > limit;
    let mut end = bytes.len().min(limit);
    loop {
        match std::str::from_utf8(&bytes[..end]) {
            Ok(text) => return Some((text.to_string(), cut)),
            // Only a character cut by the limit may be incomplete.
            Err(e) if cut && e.error_len().is_none() => end = e.valid_up_to(),
            Err(_) => return None,
        }
    }
}

/// The `system` message of AGENTS.md, if the file has anything to say.
pub fn agents_md_message(read: FileRead, limit: usize) -> Option<String> {
    let FileRead::Bytes(bytes) = read else {
        return None;
    };
    if bytes.is_empty() {
        return None;
    }
    let size = bytes.len();
    let body = match text_within(&bytes, limit) {
        None => format!("[{AGENTS_MD} is {size} bytes and not text: not shown]"),
        Some((text, false)) => text,
        Some((text, true)) => {
            format!("{text}\n[{AGENTS_MD} is {size} bytes: only the first {limit} are shown]")
        }
    };
    Some(format!(
        "[the project's instructions: /workspace/{AGENTS_MD}]\n{body}"
    ))
}

/// Characters a mention does not end with.
const TRAILING: &[char] = &['.', ',', ';', ':', '!', '?', ')', ']', '}', '\'', '"'];

/// The paths a question names with `@`, each once, in the order first
/// named (`@agent` at the start of a line addresses the agent instead).
pub fn mentions(question: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for line in question.lines() {
        for (n, word) in line.split_whitespace().enumerate() {
            let at_start = n == 0;
            let Some(path) = word.strip_prefix('@') else {
                continue;
            };
            let path = path.trim_end_matches(TRAILING);
            if path.is_empty() || (at_start && path == "agent") {
                continue;
            }
            if !found.iter().any(|p| p == path) {
                found.push(path.to_string());
            }
        }
    }
    found
}

/// The text of one mention's file as appended to the question.
fn mention_text(path: &str, read: FileRead) -> String {
    match read {
        FileRead::Bytes(bytes) => {
            let size = bytes.len();
            match text_within(&bytes, MENTION_BYTES) {
                None => format!("[@{path}: {size} bytes and not text: not shown]"),
                Some((text, false)) => format!("[@{path}: {size} bytes]\n{text}"),
                Some((text, true)) => format!(
                    "[@{path}: {size} bytes]\n{text}\n[@{path} is {size} bytes: only the first {MENTION_BYTES} are shown]"
                ),
            }
        }
        FileRead::Missing => format!("[@{path}: no such file in /workspace]"),
        FileRead::BadPath => format!("[@{path}: not a path inside /workspace]"),
        FileRead::Folder => format!("[@{path}: a folder, not a file]"),
        FileRead::Failed(why) => format!("[@{path}: could not be read: {why}]"),
    }
}

/// The question as the model gets it: the files it names appended.
pub async fn with_mentions(question: &str, workspace: &dyn Workspace) -> String {
    let mut text = question.to_string();
    for (i, path) in mentions(question).into_iter().enumerate() {
        let note = if i < MENTIONS_MAX {
            mention_text(&path, workspace.read(path.clone()).await)
        } else {
            format!("[@{path}: not read: at most {MENTIONS_MAX} files are inlined in a question]")
        };
        text.push_str("\n\n");
        text.push_str(&note);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mentions_are_words_that_start_with_at() {
        assert_eq!(
            mentions("look at @src/main.rs, and @README.md.\n@agent why? @src/main.rs"),
            ["src/main.rs", "README.md"]
        );
        assert_eq!(mentions("@agent fix @agent"), ["agent"]);
        assert_eq!(mentions("mail bob@x.com or @ alone"), Vec::<String>::new());
        assert_eq!(mentions("see (@a.txt)"), Vec::<String>::new());
        assert_eq!(mentions("see @a.txt)"), ["a.txt"]);
    }

    #[test]
    fn agents_md_is_bounded_and_absent_files_say_nothing() {
        let long = "é".repeat(10);
        let message = agents_md_message(FileRead::Bytes(long.into_bytes()), 5).unwrap();
        assert_eq!(
            message,
            "[the project's instructions: /workspace/AGENTS.md]\né\u{e9}\n[AGENTS.md is 20 bytes: only the first 5 are shown]"
        );
        assert_eq!(agents_md_message(FileRead::Missing, 5), None);
        assert_eq!(agents_md_message(FileRead::Bytes(Vec::new()), 5), None);
        assert!(
            agents_md_message(FileRead::Bytes(vec![0xff, 0xfe]), 5)
                .unwrap()
                .ends_with("[AGENTS.md is 2 bytes and not text: not shown]")
        );
    }

    struct Files;
    impl Workspace for Files {
        fn read(&self, path: String) -> BoxFuture<FileRead> {
            Box::pin(async move {
                match path.as_str() {
                    "a.txt" => FileRead::Bytes(b"alpha".to_vec()),
                    "dir" => FileRead::Folder,
                    "../x" => FileRead::BadPath,
                    _ => FileRead::Missing,
                }
            })
        }
    }

    #[tokio::test]
    async fn a_question_gets_its_files_or_says_why_not() {
        let text = with_mentions("see @a.txt @dir @../x @gone @e", &Files).await;
        assert_eq!(
            text,
            "see @a.txt @dir @../x @gone @e\n\n[@a.txt: 5 bytes]\nalpha\n\n[@dir: a folder, not a file]\n\n\
             [@../x: not a path inside /workspace]\n\n[@gone: no such file in /workspace]\n\n\
             [@e: not read: at most 4 files are inlined in a question]"
        );
    }
}
