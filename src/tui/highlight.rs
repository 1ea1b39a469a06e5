//! Syntax colour for code blocks: syntect with bat's grammars (two-face:
//! TypeScript, TOML, Dockerfile, YAML, Rust… each with its own grammar;
//! pure-Rust regexes), loaded once, on first use or by `warm_up`. Each token is
//! classed by its scope into one of a few kinds (`Token`), which the theme
//! colours, so code follows the terminal's palette and NO_COLOR.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use syntect::parsing::{ParseState, Scope, ScopeStack, SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

/// What a piece of code is, as far as its colour goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Token {
    Plain,
    Comment,
    String,
    Number,
    Constant,
    Keyword,
    Type,
    Function,
}

/// Lines of code as runs of (kind, text), without line ends.
pub type Highlighted = Vec<Vec<(Token, String)>>;

/// Scope prefixes and their kind; the innermost scope that one matches
/// decides (the first match in this order).
const SCOPES: &[(&str, Token)] = &[
    ("comment", Token::Comment),
    ("string", Token::String),
    ("constant.numeric", Token::Number),
    ("constant", Token::Constant),
    ("keyword.operator", Token::Plain),
    ("keyword", Token::Keyword),
    ("storage.type.function", Token::Keyword),
    ("storage.type", Token::Type),
    ("storage", Token::Keyword),
    ("entity.name.function", Token::Function),
    ("support.function", Token::Function),
    ("entity.name.tag", Token::Keyword),
    ("entity.name", Token::Type),
    ("support.type", Token::Type),
    ("support.class", Token::Type),
    ("entity.other.attribute-name", Token::Function),
];

/// Fence names the grammars do not know, and the one that fits.
const ALIASES: &[(&str, &str)] = &[
    ("docker", "dockerfile"),
    ("containerfile", "dockerfile"),
    ("mjs", "js"),
    ("console", "bash"),
    ("shell", "bash"),
    ("shell-session", "bash"),
    ("zsh", "bash"),
    ("py3", "python"),
    ("golang", "go"),
    ("jsonc", "json"),
];

/// Lines longer than this (bytes) are not highlighted: the regexes would
/// be slow, and such a line is data rather than code.
const MAX_LINE: usize = 1_000;
/// A block longer than this (bytes) is shown plain.
const MAX_CODE: usize = 64 * 1024;
/// Highlighted blocks remembered (a resize or a streaming reply renders
/// the same blocks again).
const MEMO: usize = 128;

/// Highlighted blocks by (language, code).
type Memo = HashMap<(String, String), Arc<Highlighted>>;

struct Grammars {
    syntaxes: SyntaxSet,
    scopes: Vec<(Scope, Token)>,
}

fn grammars() -> &'static Grammars {
    static GRAMMARS: OnceLock<Grammars> = OnceLock::new();
    GRAMMARS.get_or_init(|| Grammars {
        syntaxes: two_face::syntax::extra_newlines(),
        scopes: SCOPES
            .iter()
            .filter_map(|(name, token)| Scope::new(name).ok().map(|s| (s, *token)))
            .collect(),
    })
}

/// Loads the grammars now (from a thread of its own), so the first code
/// block does not wait for them. A language's patterns are compiled when
/// its first block shows (tens of ms and some MB each: only for the
/// languages a room shows).
pub fn warm_up() {
    grammars();
}

/// The grammar of a fence's language (`rust`, `py`, `sh`, `ts`…), if any.
fn syntax<'a>(set: &'a SyntaxSet, lang: &str) -> Option<&'a SyntaxReference> {
    let lang = lang.trim().to_ascii_lowercase();
    if lang.is_empty() {
        return None;
    }
    let lang = ALIASES
        .iter()
        .find(|(alias, _)| *alias == lang)
        .map_or(lang.as_str(), |(_, to)| to);
    set.find_syntax_by_token(lang)
}

/// `code` in the grammar of `lang`, split in lines; plain runs where no
/// grammar knows the language or the code is too long to colour.
pub fn highlight(lang: &str, code: &str) -> Arc<Highlighted> {
    static SEEN: OnceLock<Mutex<Memo>> = OnceLock::new();
    let memo = SEEN.get_or_init(Default::default);
    let key = (lang.to_string(), code.to_string());
    if let Some(found) = memo.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return found.clone();
    }
    let lines = Arc::new(colour(lang, code));
    let mut memo = memo.lock().unwrap_or_else(|e| e.into_inner());
    if memo.len() >= MEMO {
        memo.clear();
    }
    memo.insert(key, lines.clone());
    lines
}

/// Where colouring a block stopped after its last whole line: a block
/// that grows (a reply streaming) goes on from there instead of parsing
/// all its lines again on every delta.
struct Resume {
    lang: String,
    /// The code up to and with its last whole line.
    parsed: String,
    state: ParseState,
    stack: ScopeStack,
    lines: Highlighted,
}

fn colour(lang: &str, code: &str) -> Highlighted {
    static LAST: Mutex<Option<Resume>> = Mutex::new(None);
    let plain = |line: &str| vec![(Token::Plain, line.to_string())];
    let grammars = grammars();
    let Some(syntax) = syntax(&grammars.syntaxes, lang) else {
        return code.lines().map(plain).collect();
    };
    let last = LAST.lock().unwrap_or_else(|e| e.into_inner()).take();
    let (mut state, mut stack, mut out, start) = match last {
        Some(r) if r.lang == lang && !r.parsed.is_empty() && code.starts_with(&r.parsed) => {
            let start = r.parsed.len();
            (r.state, r.stack, r.lines, start)
        }
        _ => (ParseState::new(syntax), ScopeStack::new(), Vec::new(), 0),
    };
    let mut resume = None;
    for line in LinesWithEndings::from(&code[start..]) {
        if !line.ends_with('\n') {
            // A last line still being written: colour it, but go on later
            // from before it.
            resume = Some((state.clone(), stack.clone(), out.clone()));
        }
        let text = line.trim_end_matches(['\n', '\r']);
        if line.len() > MAX_LINE || code.len() > MAX_CODE {
            out.push(plain(text));
            continue;
        }
        match state.parse_line(line, &grammars.syntaxes) {
            Ok(ops) => out.push(runs(text, &ops, &mut stack, &grammars.scopes)),
            Err(_) => out.push(plain(text)),
        }
    }
    let whole = code.rfind('\n').map_or(0, |at| at + 1);
    let (state, stack, lines) = resume.unwrap_or_else(|| (state, stack, out.clone()));
    *LAST.lock().unwrap_or_else(|e| e.into_inner()) = Some(Resume {
        lang: lang.to_string(),
        parsed: code[..whole].to_string(),
        state,
        stack,
        lines,
    });
    out
}

/// One line's runs from the scope changes the grammar found in it.
fn runs(
    text: &str,
    ops: &[(usize, syntect::parsing::ScopeStackOp)],
    stack: &mut ScopeStack,
    scopes: &[(Scope, Token)],
) -> Vec<(Token, String)> {
    let mut out: Vec<(Token, String)> = Vec::new();
    let mut push = |token: Token, piece: &str| {
        if piece.is_empty() {
            return;
        }
        match out.last_mut() {
            Some((last, run)) if *last == token => run.push_str(piece),
            _ => out.push((token, piece.to_string())),
        }
    };
    let mut at = 0;
    for (index, op) in ops {
        let index = (*index).min(text.len());
        if index > at && text.is_char_boundary(index) {
            push(kind(stack, scopes), &text[at..index]);
            at = index;
        }
        // A grammar whose stack goes wrong colours the rest plainly.
        if stack.apply(op).is_err() {
            *stack = ScopeStack::new();
        }
    }
    push(kind(stack, scopes), &text[at..]);
    out
}

/// The kind of the innermost scope the table knows.
fn kind(stack: &ScopeStack, scopes: &[(Scope, Token)]) -> Token {
    stack
        .as_slice()
        .iter()
        .rev()
        .find_map(|scope| {
            scopes
                .iter()
                .find(|(prefix, _)| prefix.is_prefix_of(*scope))
                .map(|(_, token)| *token)
        })
        .unwrap_or(Token::Plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds_of(lines: &Highlighted, word: &str) -> Vec<Token> {
        lines
            .iter()
            .flatten()
            .filter(|(_, text)| text.contains(word))
            .map(|(token, _)| *token)
            .collect()
    }

    #[test]
    fn known_languages_get_kinds_and_keep_their_text() {
        let code = "fn main() {\n    // say hi\n    println!(\"hi {}\", 42);\n}\n";
        let lines = highlight("rust", code);
        assert_eq!(lines.len(), 4);
        let text: Vec<String> = lines
            .iter()
            .map(|l| l.iter().map(|(_, t)| t.as_str()).collect())
            .collect();
        assert_eq!(text.join("\n") + "\n", code);
        assert_eq!(kinds_of(&lines, "fn"), [Token::Keyword]);
        assert_eq!(kinds_of(&lines, "say hi"), [Token::Comment]);
        assert_eq!(kinds_of(&lines, "42"), [Token::Number]);
        assert!(
            kinds_of(&lines, "\"hi").contains(&Token::String),
            "{lines:?}"
        );
        let py = highlight("py", "def f():\n    return 'x'\n");
        assert_eq!(kinds_of(&py, "def"), [Token::Keyword]);
        let ts = highlight("ts", "const x = 1;");
        assert_eq!(kinds_of(&ts, "1"), [Token::Number]);
    }

    #[test]
    fn typescript_is_read_as_typescript_not_javascript() {
        let code = "let n: number = f();\n";
        // The type annotation is a type in TypeScript's grammar; JavaScript's
        // knows no annotations.
        assert_eq!(kinds_of(&highlight("ts", code), "number"), [Token::Type]);
        assert_eq!(
            kinds_of(&highlight("typescript", code), "number"),
            [Token::Type]
        );
        assert_ne!(kinds_of(&highlight("js", code), "number"), [Token::Type]);
        let tsx = highlight("tsx", "const a: string = <b>hi</b>;\n");
        assert_eq!(kinds_of(&tsx, "string"), [Token::Type]);
    }

    #[test]
    fn config_and_build_files_have_their_grammars() {
        let toml = highlight("toml", "# mine\n[keys]\nsend = \"enter\"\nn = 42\n");
        assert_eq!(kinds_of(&toml, "mine"), [Token::Comment]);
        assert!(
            kinds_of(&toml, "\"enter").contains(&Token::String),
            "{toml:?}"
        );
        assert_eq!(kinds_of(&toml, "42"), [Token::Number]);
        let yaml = highlight("yaml", "# ci\non: push\nretries: 3\n");
        assert_eq!(kinds_of(&yaml, "ci"), [Token::Comment]);
        assert_eq!(kinds_of(&yaml, "3"), [Token::Number]);
        assert_eq!(*highlight("yml", "a: 1\n"), *highlight("yaml", "a: 1\n"));
        for lang in ["dockerfile", "Dockerfile", "docker"] {
            let docker = highlight(lang, "FROM rust:1\n# build\nRUN cargo build\n");
            assert_eq!(kinds_of(&docker, "FROM"), [Token::Keyword], "{lang}");
            assert_eq!(kinds_of(&docker, "# build"), [Token::Comment], "{lang}");
        }
    }

    #[test]
    fn a_growing_block_colours_as_a_whole_one_does() {
        let code = "fn main() {\n    /* a comment\n    still */ let s = \"str\";\n}";
        let whole = colour("rust", code);
        // Fed as it streams, a few characters at a time (each call goes on
        // from the last whole line of the one before).
        for end in (1..code.len()).step_by(3) {
            let part = colour("rust", &code[..end]);
            assert_eq!(part.len(), code[..end].split('\n').count(), "{end}");
        }
        assert_eq!(colour("rust", code), whole);
        assert_eq!(kinds_of(&whole, "still */"), [Token::Comment]);
        // Another block in between starts afresh.
        let other = colour("rust", "let n = 1;");
        assert_eq!(kinds_of(&other, "1"), [Token::Number]);
        assert_eq!(colour("rust", code), whole);
    }

    #[test]
    fn unknown_languages_and_huge_lines_stay_plain() {
        let lines = highlight("klingon", "qapla' 42\n");
        assert_eq!(*lines, vec![vec![(Token::Plain, "qapla' 42".to_string())]]);
        let long = format!("let x = \"{}\";", "a".repeat(MAX_LINE));
        let lines = highlight("rust", &long);
        assert_eq!(*lines, vec![vec![(Token::Plain, long.clone())]]);
        assert_eq!(*highlight("", "a\n\nb"), {
            let p = |s: &str| vec![(Token::Plain, s.to_string())];
            vec![p("a"), p(""), p("b")]
        });
    }
}
