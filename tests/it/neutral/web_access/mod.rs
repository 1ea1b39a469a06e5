//! Duet's page and a browser's way in (docs/protocol.md "The page"), on
//! both backends: the page's routes and their headers (routes.rs), the
//! Origin rule for the backend's own origin (routes.rs), socket tickets
//! (tickets.rs), and the page in a real browser (browser.rs).

mod browser;
mod routes;
mod tickets;
