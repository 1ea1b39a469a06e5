//! The read routes of background processes, ports, checkpoints and
//! invites: the list, one process, its logs, the listening ports, the
//! checkpoints, the invites (starting, killing, taking, restoring and
//! inviting are room operations, in `ops`).

use super::errors::{ApiError, Path};
use super::http::room_details;
use super::ops::Reply;
use super::room::Query;
use super::router::App;
use axum::extract::State;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Asks room `room` for `query`, after checking the room id.
async fn read(app: &App, room: &str, query: Query) -> Result<Reply, ApiError> {
    let details = room_details(room);
    if !details.is_empty() {
        return Err(ApiError::invalid(details));
    }
    app.registry.room(room).await?.read_processes(query).await
}

/// `GET /api/rooms/{room}/processes`
pub(crate) async fn list(
    State(app): State<Arc<App>>,
    Path(room): Path<String>,
) -> Result<Reply, ApiError> {
    read(&app, &room, Query::List).await
}

/// `GET /api/rooms/{room}/processes/{id}`
pub(crate) async fn one(
    State(app): State<Arc<App>>,
    Path(params): Path<BTreeMap<String, String>>,
) -> Result<Reply, ApiError> {
    let (room, id) = room_and_id(params);
    read(&app, &room, Query::One(id)).await
}

/// `GET /api/rooms/{room}/processes/{id}/logs`
pub(crate) async fn logs(
    State(app): State<Arc<App>>,
    Path(params): Path<BTreeMap<String, String>>,
) -> Result<Reply, ApiError> {
    let (room, id) = room_and_id(params);
    read(&app, &room, Query::Logs(id)).await
}

/// `GET /api/rooms/{room}/ports`
pub(crate) async fn ports(
    State(app): State<Arc<App>>,
    Path(room): Path<String>,
) -> Result<Reply, ApiError> {
    read(&app, &room, Query::Ports).await
}

/// `GET /api/rooms/{room}/checkpoints`
pub(crate) async fn checkpoints(
    State(app): State<Arc<App>>,
    Path(room): Path<String>,
) -> Result<Reply, ApiError> {
    read(&app, &room, Query::Checkpoints).await
}

/// `GET /api/rooms/{room}/invites`: those that can still be used (owners only).
pub(crate) async fn invites(
    State(app): State<Arc<App>>,
    axum::Extension(access): axum::Extension<super::auth::Access>,
    Path(room): Path<String>,
) -> Result<Reply, ApiError> {
    let details = room_details(&room);
    if !details.is_empty() {
        return Err(ApiError::invalid(details));
    }
    super::access::check(access.role(), super::access::Action::ManageInvites)?;
    let rows = app
        .registry
        .shared
        .store
        .invites(room)
        .await
        .map_err(|e| ApiError::internal(format!("the invites could not be read: {e}")))?;
    let invites = rows
        .into_iter()
        .filter(|row| row.usable())
        .map(|row| row.invite)
        .collect();
    Ok(Reply::ok(crate::protocol::InvitesResponse { invites }))
}

fn room_and_id(mut params: BTreeMap<String, String>) -> (String, String) {
    let room = params.remove("room").unwrap_or_default();
    let id = params.remove("id").unwrap_or_default();
    (room, id)
}
