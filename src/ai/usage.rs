//! What a turn costs: the tokens of each model call, as the service
//! reported them (`usage` of its answer, asked for with `stream_options`
//! when streaming) or estimated at about 4 bytes a token when it gave
//! none, summed over the turn's rounds.

use crate::protocol::Usage;
use std::sync::{Arc, Mutex};

/// Bytes counted as one token by an estimate.
pub const BYTES_PER_TOKEN: usize = 4;

/// The tokens a service reported for one answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tokens {
    pub prompt: u64,
    pub completion: u64,
}

/// Where a provider reports what the service said an answer cost; the
/// turn reads it once the answer ended. Cheap to clone.
#[derive(Debug, Clone, Default)]
pub struct UsageReport(Arc<Mutex<Option<Tokens>>>);

impl UsageReport {
    /// The service said the answer under way cost `tokens`.
    pub fn set(&self, tokens: Tokens) {
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(tokens);
        }
    }

    /// What was reported since the last take.
    pub fn take(&self) -> Option<Tokens> {
        self.0.lock().ok().and_then(|mut slot| slot.take())
    }
}

/// Tokens of `bytes` bytes, estimated (rounded up).
pub fn estimate(bytes: usize) -> u64 {
    bytes.div_ceil(BYTES_PER_TOKEN) as u64
}

/// A turn's usage as its rounds end.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    report: UsageReport,
    total: Mutex<Usage>,
}

impl Meter {
    /// Where the turn's provider reports the service's counts.
    pub(crate) fn report(&self) -> UsageReport {
        self.report.clone()
    }

    /// A model call begins: what an earlier one reported is not its.
    pub(crate) fn start(&self) {
        self.report.take();
    }

    /// A model call ended (or broke off) after `prompt_bytes` were sent and
    /// `answer` came back: one more round, with the service's counts, else
    /// estimated.
    pub(crate) fn end(&self, prompt_bytes: usize, answer: &str) {
        let round = match self.report.take() {
            Some(tokens) => Usage {
                prompt_tokens: tokens.prompt,
                completion_tokens: tokens.completion,
                rounds: 1,
                estimated: false,
            },
            None => Usage {
                prompt_tokens: estimate(prompt_bytes),
                completion_tokens: estimate(answer.len()),
                rounds: 1,
                estimated: true,
            },
        };
        if let Ok(mut total) = self.total.lock() {
            total.add(&round);
        }
    }

    /// The turn's usage so far; `None` before any model call.
    pub(crate) fn usage(&self) -> Option<Usage> {
        let total = self.total.lock().ok().map(|t| *t)?;
        (total.rounds > 0).then_some(total)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reported_rounds_sum_and_one_unreported_marks_the_sum_estimated() {
        let meter = Meter::default();
        assert_eq!(meter.usage(), None);
        meter.start();
        meter.report().set(Tokens {
            prompt: 100,
            completion: 7,
        });
        meter.end(9_999, "ignored: the service said");
        assert_eq!(
            meter.usage(),
            Some(Usage {
                prompt_tokens: 100,
                completion_tokens: 7,
                rounds: 1,
                estimated: false
            })
        );
        // A stale report of an earlier call does not count for the next.
        meter.report().set(Tokens {
            prompt: 1,
            completion: 1,
        });
        meter.start();
        meter.end(401, "12345");
        assert_eq!(
            meter.usage(),
            Some(Usage {
                prompt_tokens: 201,
                completion_tokens: 9,
                rounds: 2,
                estimated: true
            })
        );
    }
}
