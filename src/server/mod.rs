//! The backend: `duet serve` and the embedded server of the terminal client.

use crate::cli::ServeArgs;

/// Runs the backend until Ctrl+C or SIGTERM.
pub async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let _ = args;
    anyhow::bail!("the backend is not built yet")
}
