//! One-shot client subcommands: `duet exec`, `duet cleanup`.

use crate::cli::{ClientArgs, ExecArgs};
use std::process::ExitCode;

/// `duet exec -- CMD…`
pub async fn exec(args: ExecArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not built yet")
}

/// `duet cleanup`
pub async fn cleanup(args: ClientArgs) -> anyhow::Result<ExitCode> {
    let _ = args;
    anyhow::bail!("not built yet")
}
