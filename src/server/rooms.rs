//! `GET /api/rooms`: the rooms this server keeps, for its owner (a
//! lobby). Every room ever used is listed, cleaned-up ones too, newest
//! change first, with how many people are connected now.

use super::auth::Access;
use super::errors::ApiError;
use super::router::App;
use crate::protocol::{ONLY_THE_SERVER_LISTS_ROOMS, RoomSummary, RoomsResponse};
use axum::Json;
use axum::extract::{Extension, State};
use std::sync::Arc;

/// The route.
pub(crate) const PATH: &str = "/api/rooms";

/// The list; only the server's token (or anyone, without one) may see it.
pub(crate) async fn list(
    State(app): State<Arc<App>>,
    Extension(access): Extension<Access>,
) -> Result<Json<RoomsResponse>, ApiError> {
    if access != Access::Server {
        return Err(ApiError::forbidden("role", ONLY_THE_SERVER_LISTS_ROOMS));
    }
    let shared = &app.registry.shared;
    let listed = shared.store.list_rooms().await.map_err(|e| {
        tracing::error!("listing the rooms failed: {e}");
        ApiError::internal(format!("the rooms could not be listed: {e}"))
    })?;
    let loaded = shared
        .rooms
        .lock()
        .map_err(|_| ApiError::internal("the room registry is unusable"))?;
    let rooms = listed
        .into_iter()
        .map(|room| RoomSummary {
            people: loaded.get(&room.id).map_or(0, |handle| handle.people()),
            room_id: room.id,
            updated_at: room.updated_at,
        })
        .collect();
    Ok(Json(RoomsResponse { rooms }))
}
