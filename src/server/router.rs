//! The routes of docs/protocol.md, the token check in front of
//! them, and the 404/405 answers.

use super::ops::Method;
use super::registry::Registry;
use super::{archive, auth, files, http, origin, ports, processes, rooms, web, ws};
use axum::Router;
use axum::routing::{any, get};
use std::sync::Arc;

/// What the handlers share.
pub(crate) struct App {
    pub(crate) registry: Registry,
    /// The bearer token every request but `/health` needs, if any.
    pub(crate) token: Option<String>,
    /// Which browsers and host names are answered.
    pub(crate) browsers: origin::BrowserPolicy,
    /// The open sockets, against the caps.
    pub(crate) sockets: Arc<super::limits::SocketCount>,
}

/// The server's router.
pub(crate) fn build(app: Arc<App>) -> Router {
    let mut router = Router::new()
        .route("/health", get(http::health))
        // The browser page: no token (it holds no secret).
        .route("/", get(web::index))
        .route("/r/{room}", get(web::index))
        .route("/web/{file}", get(web::file))
        .route(rooms::PATH, get(rooms::list));
    for method in Method::ALL {
        if let Some((verb, path)) = method.route() {
            let path = format!("/api/rooms/{{room}}{path}");
            router = router.route(&path, http::operation(*method, verb));
        }
    }
    router
        .route("/api/rooms/{room}/messages", get(http::messages))
        .route("/api/rooms/{room}/execs", get(http::execs))
        .route(
            "/api/rooms/{room}/files/",
            get(files::list_root).delete(files::delete_root),
        )
        .route(
            "/api/rooms/{room}/files/{*path}",
            get(files::get_file)
                .put(files::put_file)
                .delete(files::delete_file),
        )
        .route(
            "/api/rooms/{room}/archive/",
            get(archive::get_root).put(archive::put_root),
        )
        .route(
            "/api/rooms/{room}/archive/{*path}",
            get(archive::get_folder).put(archive::put_folder),
        )
        .route("/api/rooms/{room}/diff", get(archive::diff))
        .route("/api/rooms/{room}/checkpoints", get(processes::checkpoints))
        .route("/api/rooms/{room}/invites", get(processes::invites))
        .route("/api/rooms/{room}/processes", get(processes::list))
        .route("/api/rooms/{room}/processes/{id}", get(processes::one))
        .route(
            "/api/rooms/{room}/processes/{id}/logs",
            get(processes::logs),
        )
        .route("/api/rooms/{room}/ports", get(processes::ports))
        .route("/api/rooms/{room}/ports/{port}", any(ports::bare))
        .route("/api/rooms/{room}/ports/{port}/", any(ports::preview))
        .route(
            "/api/rooms/{room}/ports/{port}/{*path}",
            any(ports::preview),
        )
        .route("/api/rooms/{room}/tunnel/{port}", get(ports::tunnel))
        .route("/api/rooms/{room}/ws", get(ws::socket))
        .route("/agents/duet-agent/{room}", get(ws::socket))
        .fallback(http::not_found)
        .method_not_allowed_fallback(http::method_not_allowed)
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            auth::require_token,
        ))
        // A browser is refused before anything else is looked at.
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            origin::guard,
        ))
        // Outermost: a preview's own origin is the app's, never the API.
        .layer(axum::middleware::from_fn_with_state(
            app.clone(),
            ports::by_host,
        ))
        .with_state(app)
}
