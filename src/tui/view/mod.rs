//! Drawing: a function of the App. Each part is its own module; only the
//! visible slice of the chat and output is rendered.

pub mod chat;
pub mod composer;
pub mod diff;
pub mod layout;
pub mod lists;
pub mod output;
pub mod overlay;
pub mod pane;
pub mod processes;
pub mod status;
pub mod terminal;

use crate::tui::app::{App, Modal};
use ratatui::Frame;

/// Draws one frame.
pub fn draw(frame: &mut Frame, app: &App) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let areas = layout::areas(app, area);
    let wide = area.width >= layout::WIDE;
    chat::draw(frame, app, areas.chat);
    output::draw(frame, app, areas.output, wide);
    status::draw_presence(frame, app, areas.presence);
    status::draw_hints(frame, app, areas.hints);
    composer::draw(frame, app, areas.composer);
    status::draw_status(frame, app, areas.status);
    overlay::draw_toasts(frame, app, area);
    for modal in &app.modals {
        match modal {
            Modal::Help => overlay::draw_help(frame, app, area),
            Modal::ConfirmCleanup => overlay::draw_confirm(frame, app, area),
            Modal::ConfirmStop(stop) => overlay::draw_stop(frame, app, stop, area),
            Modal::ConfirmOverwrite => overlay::draw_overwrite(frame, app, area),
            Modal::Processes => processes::draw(frame, app, area),
            Modal::Checkpoints => lists::draw_checkpoints(frame, app, area),
            Modal::Listing => lists::draw_listing(frame, app, area),
            Modal::ConfirmRestore(restore) => overlay::draw_restore(frame, app, restore, area),
            Modal::ConfirmSwitch(room) => overlay::draw_switch(frame, app, room, area),
            Modal::Approval(id) => overlay::draw_approval(frame, app, id, area),
            Modal::Link => overlay::draw_link(frame, app, area),
            Modal::Diff => diff::draw(frame, app, area),
        }
    }
}
