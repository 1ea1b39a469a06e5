//! How the client's WebSockets trust a `wss://` server: as its HTTPS calls
//! do. reqwest (rustls with ring) verifies through rustls-platform-verifier:
//! the system's roots on Linux, the OS's verifier on macOS and Windows.
//! tungstenite gets a rustls config with that same verifier, so one set of
//! roots and one rustls serve both, and a server that one accepts the other
//! accepts too.

use std::sync::{Arc, OnceLock};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::error::TlsError;
use tokio_tungstenite::tungstenite::{self, handshake::client::Response};
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

/// A client WebSocket, plain or TLS.
pub type Ws = WebSocketStream<MaybeTlsStream<tokio::net::TcpStream>>;

/// Opens a WebSocket (`ws://` or `wss://`) as `connect_async` does, a
/// `wss://` one verified by the platform verifier.
pub async fn connect_ws(
    request: impl IntoClientRequest + Unpin,
) -> Result<(Ws, Response), tungstenite::Error> {
    let request = request.into_client_request()?;
    let connector = match request.uri().scheme_str() {
        Some("wss") => Some(Connector::Rustls(platform_config()?)),
        _ => None,
    };
    tokio_tungstenite::connect_async_tls_with_config(request, None, false, connector).await
}

/// The rustls config of every `wss://` socket, built once: reading the
/// system's roots takes a few milliseconds and reconnects are frequent.
/// A failure (no roots on the system) is not kept, so a later call retries.
fn platform_config() -> Result<Arc<rustls::ClientConfig>, tungstenite::Error> {
    use rustls_platform_verifier::ConfigVerifierExt;
    static CONFIG: OnceLock<Arc<rustls::ClientConfig>> = OnceLock::new();
    if let Some(config) = CONFIG.get() {
        return Ok(config.clone());
    }
    crate::support::install_tls();
    let config = rustls::ClientConfig::with_platform_verifier()
        .map_err(|err| tungstenite::Error::Tls(TlsError::from(err)))?;
    Ok(CONFIG.get_or_init(|| Arc::new(config)).clone())
}
