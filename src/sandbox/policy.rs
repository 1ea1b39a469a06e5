//! The per-command policy every backend applies: the timeout a command
//! gets and how much of its output is kept.

use super::ExecSpec;
use std::collections::BTreeMap;
use std::time::Duration;

/// Timeouts and the output cap of a server's commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Wall-clock timeout when a request names none.
    pub default_timeout: Duration,
    /// Largest timeout a request may ask for.
    pub max_timeout: Duration,
    /// Bytes captured per stream of one command.
    pub output_cap: usize,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            default_timeout: Duration::from_secs(60),
            max_timeout: Duration::from_secs(600),
            output_cap: 1024 * 1024,
        }
    }
}

impl Policy {
    /// The spec of a command, with the timeout asked for (capped) or the
    /// default, and the output cap.
    pub fn spec(
        &self,
        cmd: String,
        timeout_ms: Option<u64>,
        cwd: Option<String>,
        env: BTreeMap<String, String>,
    ) -> ExecSpec {
        let timeout = timeout_ms
            .map(Duration::from_millis)
            .unwrap_or(self.default_timeout)
            .min(self.max_timeout);
        ExecSpec {
            cmd,
            cwd,
            env,
            timeout,
            output_cap: self.output_cap,
            start: Default::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeouts_are_capped() {
        let policy = Policy::default();
        let spec = |ms| policy.spec("true".into(), ms, None, BTreeMap::new());
        assert_eq!(spec(None).timeout, Duration::from_secs(60));
        assert_eq!(spec(Some(5)).timeout, Duration::from_millis(5));
        assert_eq!(spec(Some(10_000_000)).timeout, Duration::from_secs(600));
        assert_eq!(spec(None).output_cap, 1024 * 1024);
    }
}
