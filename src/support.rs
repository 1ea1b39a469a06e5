//! Small helpers the client and the backend share.

use std::future::Future;
use std::pin::Pin;

pub use crate::utf8::Utf8Stream;

/// A future that may be sent between tasks.
pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

/// Quotes `word` for a POSIX shell as one word: as it is when it is plain
/// (letters, digits and `-_./=:,+@%^`), else in single quotes (`'`
/// becomes `'\''`).
pub fn shell_quote(word: &str) -> String {
    let plain = !word.is_empty()
        && word
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
    if plain {
        word.to_string()
    } else {
        format!("'{}'", word.replace('\'', r"'\''"))
    }
}

/// An error with its causes, for a person to read: `error: cause: cause`,
/// each text once (a cause its parent already quotes is left out).
pub fn error_chain(err: &(dyn std::error::Error + 'static)) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Makes ring the process's TLS crypto provider (once; later calls do
/// nothing). Every HTTPS or WSS client of duet needs it first.
pub fn install_tls() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// Whether colours are wanted: not when `NO_COLOR` is set to anything but
/// the empty string (no-color.org).
pub fn colour_wanted() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty())
}

/// This machine's offset from UTC, read once while the process has one
/// thread (the time crate refuses later); UTC when it cannot be read.
static LOCAL_OFFSET: std::sync::OnceLock<time::UtcOffset> = std::sync::OnceLock::new();

/// Reads [`LOCAL_OFFSET`]: call while the process has one thread.
pub fn init_local_offset() {
    LOCAL_OFFSET
        .get_or_init(|| time::UtcOffset::current_local_offset().unwrap_or(time::UtcOffset::UTC));
}

/// The local offset times are shown in (see [`LOCAL_OFFSET`]).
pub fn local_offset() -> time::UtcOffset {
    *LOCAL_OFFSET.get_or_init(|| time::UtcOffset::UTC)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_are_quoted_only_when_needed() {
        assert_eq!(shell_quote("ls"), "ls");
        assert_eq!(shell_quote("/tmp/a.txt"), "/tmp/a.txt");
        assert_eq!(shell_quote(""), "''");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote("a b"), "'a b'");
    }

    #[test]
    fn error_chains_name_each_cause_once() {
        let inner = std::io::Error::other("refused");
        let outer = std::io::Error::other(inner);
        assert_eq!(error_chain(&outer), "refused");
        #[derive(Debug)]
        struct Wrap(std::io::Error);
        impl std::fmt::Display for Wrap {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("cannot connect")
            }
        }
        impl std::error::Error for Wrap {
            fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
                Some(&self.0)
            }
        }
        let wrapped = Wrap(std::io::Error::other("refused"));
        assert_eq!(error_chain(&wrapped), "cannot connect: refused");
    }
}
