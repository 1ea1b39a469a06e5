//! The integration tests, one binary: `cargo test --test it [filter]`,
//! e.g. `cargo test --test it server_http` or `… neutral::`.
//!
//! `neutral` is the backend-neutral suite: scripts/test runs it again
//! against the worker (`DUET_TEST_BACKEND=worker cargo test --test it
//! neutral::`). The other folders pin something only `duet serve`, the
//! CLI or the TUI has; `direct` drives the library's sandbox and agent
//! without a server. Helpers live in `common` only.

mod common;

mod neutral {
    mod agent_e2e;
    mod agent_loop;
    mod agent_usage;
    mod backend_stop;
    mod cli_checkpoints;
    mod cli_client;
    mod cli_cp;
    mod cli_exec;
    mod cli_export;
    mod cli_invite;
    mod cli_port;
    mod cli_processes;
    mod server_agent_context;
    mod server_approvals;
    mod server_archive;
    mod server_checkpoints;
    mod server_exec;
    mod server_exec_stop;
    mod server_files_list;
    mod server_http;
    mod server_pairing;
    mod server_persist;
    mod server_ports;
    mod server_presence;
    mod server_processes;
    mod server_roles;
    mod server_rooms;
    mod server_terminal;
    mod server_turn;
    mod server_ws;
    mod tui_e2e_agent_loop;
    mod tui_e2e_approvals;
    mod tui_e2e_backend;
    mod tui_e2e_checkpoints;
    mod tui_e2e_diff;
    mod tui_e2e_markdown;
    mod tui_e2e_pairing;
    mod tui_e2e_processes;
    mod tui_e2e_room;
    mod tui_e2e_usage;
    mod web_access;
}

mod server {
    mod abuse;
    mod crash_recovery;
    mod hostile_input;
    mod server_browsers;
    mod server_client_id;
    mod server_disk_full;
    mod server_folder;
    mod server_limits;
    mod server_minimal_path;
    mod server_secrets;
    mod server_term_lag;
    mod server_ws_close;
}

mod cli {
    mod cli_install;
    mod cli_outbox;
    mod cli_push;
    mod cli_resend;
    mod cli_term;
}

mod tui {
    mod tui_app_checkpoints;
    mod tui_app_diff;
    mod tui_app_keys;
    mod tui_app_pairing;
    mod tui_app_processes;
    mod tui_app_roles;
    mod tui_app_room;
    mod tui_app_scroll;
    mod tui_app_term;
    mod tui_e2e_folder;
    mod tui_e2e_join;
    mod tui_e2e_paste;
    mod tui_e2e_session;
    mod tui_e2e_term;
    mod tui_files;
    mod tui_link;
    mod tui_markdown;
    mod tui_snapshots;
    mod tui_snapshots_timeline;
}

mod direct {
    mod agent_turn;
    mod sandbox;
    mod sandbox_disk;
    mod sandbox_processes;
}
