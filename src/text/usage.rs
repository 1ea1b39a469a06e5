//! What a turn cost, in words: the line under an agent's reply (`3 rounds
//! · 4.1 k in · 380 out`), in the chat and in `duet export`.

use crate::protocol::Usage;

/// A count of tokens, short: `380`, `4.1 k`, `12 k`, `1.3 M`.
pub fn tokens(n: u64) -> String {
    match n {
        0..1_000 => n.to_string(),
        // Below 9.95 k one decimal; above, it would read 10.0 k.
        1_000..9_950 => format!("{:.1} k", n as f64 / 1e3),
        9_950..999_500 => format!("{} k", (n as f64 / 1e3).round()),
        _ => format!("{:.1} M", n as f64 / 1e6),
    }
}

/// `3 rounds · 4.1 k in · 380 out`, `(estimated)` after counts the
/// service did not give.
pub fn usage_line(usage: &Usage) -> String {
    let rounds = match usage.rounds {
        1 => "1 round".to_string(),
        n => format!("{n} rounds"),
    };
    let estimated = if usage.estimated { " (estimated)" } else { "" };
    format!(
        "{rounds} · {} in · {} out{estimated}",
        tokens(usage.prompt_tokens),
        tokens(usage.completion_tokens)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_short() {
        let said: Vec<String> = [0, 380, 999, 1_000, 4_149, 9_960, 12_345, 999_499, 1_250_000]
            .into_iter()
            .map(tokens)
            .collect();
        assert_eq!(
            said,
            [
                "0", "380", "999", "1.0 k", "4.1 k", "10 k", "12 k", "999 k", "1.2 M"
            ]
        );
        let usage = Usage {
            prompt_tokens: 4_100,
            completion_tokens: 380,
            rounds: 3,
            estimated: false,
        };
        assert_eq!(usage_line(&usage), "3 rounds · 4.1 k in · 380 out");
        let one = Usage {
            rounds: 1,
            estimated: true,
            ..usage
        };
        assert_eq!(usage_line(&one), "1 round · 4.1 k in · 380 out (estimated)");
    }
}
