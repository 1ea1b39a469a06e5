//! Commands that need a terminal: run one-shot (stdin from /dev/null, no
//! tty) they succeed silently (`python3` with no script), fail ("failed
//! tty get") or hang. One table says which; the TUI and `duet exec` name
//! the room's terminal instead of sending them.

/// How a program needs a terminal.
#[derive(Debug, Clone, Copy)]
enum Need {
    /// A full-screen or interactive program: always, unless one of these
    /// arguments makes it print and exit (`top -b`).
    Screen { unless: &'static [&'static str] },
    /// A REPL or shell: when it has nothing to run (no script, no
    /// argument beyond these interactive flags) and nothing fed to its
    /// stdin.
    Repl {
        interactive: &'static [&'static str],
    },
}

const REPL_FLAGS: &[&str] = &["-i", "-q", "-u", "-l", "--login", "--interactive", "-B"];

/// The programs, by name.
const PROGRAMS: &[(&str, Need)] = &[
    (
        "python3",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "python",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "python2",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "ipython",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "node",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "irb",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "ghci",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "lua",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "bash",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "sh",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "zsh",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "fish",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "dash",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    (
        "sqlite3",
        Need::Repl {
            interactive: REPL_FLAGS,
        },
    ),
    ("psql", Need::Repl { interactive: &[] }),
    ("mysql", Need::Repl { interactive: &[] }),
    (
        "top",
        Need::Screen {
            unless: &["-b", "-bn1", "-n1"],
        },
    ),
    ("htop", Need::Screen { unless: &[] }),
    ("btop", Need::Screen { unless: &[] }),
    (
        "vim",
        Need::Screen {
            unless: &["-es", "-Es", "--version"],
        },
    ),
    (
        "vi",
        Need::Screen {
            unless: &["-es", "-Es", "--version"],
        },
    ),
    (
        "nvim",
        Need::Screen {
            unless: &["--headless", "-es", "-Es", "--version"],
        },
    ),
    ("nano", Need::Screen { unless: &[] }),
    (
        "emacs",
        Need::Screen {
            unless: &["--batch", "--script", "--version"],
        },
    ),
    ("less", Need::Screen { unless: &[] }),
    ("more", Need::Screen { unless: &[] }),
    (
        "man",
        Need::Screen {
            unless: &["-P", "cat", "-k", "-f", "-w"],
        },
    ),
    ("watch", Need::Screen { unless: &[] }),
    ("ssh", Need::Screen { unless: &["-V"] }),
    (
        "tmux",
        Need::Screen {
            unless: &["-V", "ls", "list-sessions"],
        },
    ),
    (
        "screen",
        Need::Screen {
            unless: &["-ls", "-list", "-v"],
        },
    ),
];

/// Arguments that make any of them print and exit.
const ANSWERS_AND_EXITS: &[&str] = &["--help", "--version", "-h"];

/// Words run in front of a program that keep it a terminal's.
const WRAPPERS: &[&str] = &["sudo", "env", "time", "exec", "command", "nice", "nohup"];

/// The program of `line` that needs a terminal, if one does. Only
/// commands it can read are judged: a line it cannot split (an open
/// quote, `$(…)`) is sent as written.
pub fn needs_terminal(line: &str) -> Option<String> {
    if line.contains("$(") || line.contains('`') {
        return None;
    }
    let words = split_words(line)?;
    // Each simple command of a pipeline or list, and whether its stdin is
    // fed (it follows a `|`, or has a `<` of its own).
    let mut segment: Vec<String> = Vec::new();
    let mut piped = false;
    for word in words.into_iter().chain([";".to_string()]) {
        if !is_operator(&word) {
            segment.push(word);
            continue;
        }
        let fed = piped || segment.iter().any(|w| w.starts_with('<'));
        if let Some(program) = judge(&segment, fed) {
            return Some(program);
        }
        piped = word == "|";
        segment.clear();
    }
    None
}

fn is_operator(word: &str) -> bool {
    matches!(word, "|" | "||" | "&&" | ";" | "&")
}

/// Whether one simple command needs a terminal: its program's name.
fn judge(words: &[String], fed: bool) -> Option<String> {
    let mut rest = words
        .iter()
        .skip_while(|w| w.contains('=') && !w.starts_with('-') || WRAPPERS.contains(&w.as_str()));
    let program = rest.next()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    let args: Vec<&str> = rest
        .map(String::as_str)
        .take_while(|w| !w.starts_with('>') && !w.starts_with('<') && !w.starts_with("2>"))
        .collect();
    let (_, need) = PROGRAMS.iter().find(|(n, _)| *n == name)?;
    if args.iter().any(|a| ANSWERS_AND_EXITS.contains(a)) {
        return None;
    }
    let needs = match need {
        Need::Screen { unless } => !args.iter().any(|a| unless.contains(a)),
        Need::Repl { interactive } => !fed && args.iter().all(|a| interactive.contains(a)),
    };
    needs.then(|| name.to_string())
}

/// Shell words, quotes removed, with `|`, `||`, `&&`, `;` and `&` as
/// words of their own; `None` when a quote is left open.
fn split_words(line: &str) -> Option<Vec<String>> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let finish = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => word.push(c),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next()? {
                        '"' => break,
                        '\\' => word.push(chars.next()?),
                        c => word.push(c),
                    }
                }
            }
            '\\' => {
                in_word = true;
                word.push(chars.next()?);
            }
            '|' | '&' | ';' => {
                finish(&mut word, &mut in_word, &mut words);
                let mut op = c.to_string();
                if c != ';' && chars.peek() == Some(&c) {
                    chars.next();
                    op.push(c);
                }
                words.push(op);
            }
            c if c.is_whitespace() => finish(&mut word, &mut in_word, &mut words),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    finish(&mut word, &mut in_word, &mut words);
    Some(words)
}

/// What the TUI says instead of running it.
pub fn tui_hint(program: &str, key: &str) -> String {
    format!(
        "`{program}` needs a terminal: press {key} to open the room's terminal, or run `duet term`"
    )
}

/// What `duet exec` says instead of running it.
pub fn exec_hint(program: &str) -> String {
    format!(
        "`{program}` needs a terminal: run `duet term` (or press F3 in duet) to use the room's \
         terminal; --no-tty-check sends it anyway"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn needs(line: &str) -> Option<String> {
        needs_terminal(line)
    }

    #[test]
    fn interactive_programs_need_a_terminal() {
        for line in [
            "top",
            "htop",
            "vim notes.txt",
            "nano a",
            "less log",
            "man ls",
            "watch date",
            "ssh host",
            "tmux",
            "emacs",
            "nvim",
            "/usr/bin/top",
            "sudo top",
            "TERM=xterm top",
        ] {
            assert!(needs(line).is_some(), "{line}");
        }
        assert_eq!(needs("vim notes.txt").as_deref(), Some("vim"));
        assert_eq!(needs("/usr/bin/top").as_deref(), Some("top"));
    }

    #[test]
    fn a_repl_or_shell_needs_one_only_with_nothing_to_run() {
        for line in [
            "python3",
            "python",
            "node",
            "irb",
            "ghci",
            "bash",
            "sh",
            "python3 -i",
            "bash -l",
            "psql",
        ] {
            assert!(needs(line).is_some(), "{line}");
        }
        for line in [
            "python3 script.py",
            "python3 -c 'print(1)'",
            "python3 -m http.server",
            "node app.js",
            "node -e 1",
            "bash -c 'echo hi'",
            "sh run.sh",
            "echo 1+1 | python3",
            "python3 < input.py",
            "psql -c 'select 1'",
        ] {
            assert_eq!(needs(line), None, "{line}");
        }
    }

    #[test]
    fn commands_that_print_and_exit_are_sent() {
        for line in [
            "ls -la",
            "top -b -n 1",
            "vim --version",
            "python3 --version",
            "man -k printf",
            "emacs --batch -l x.el",
            "echo top",
            "git log",
            "cat vim.txt",
            "echo 'a | vim'",
            "echo $(vim)",
            "echo 'open",
        ] {
            assert_eq!(needs(line), None, "{line}");
        }
    }

    #[test]
    fn each_command_of_a_list_is_judged() {
        assert_eq!(needs("cd src && vim main.rs").as_deref(), Some("vim"));
        assert_eq!(needs("make; python3").as_deref(), Some("python3"));
        assert_eq!(needs("ls | less").as_deref(), Some("less"));
        assert_eq!(needs("ls | python3 -c 'import sys'"), None);
    }

    #[test]
    fn the_hints_name_the_key_and_duet_term() {
        let hint = tui_hint("top", "F3");
        assert_eq!(
            hint,
            "`top` needs a terminal: press F3 to open the room's terminal, or run `duet term`"
        );
        assert!(exec_hint("vim").contains("duet term"));
    }
}
