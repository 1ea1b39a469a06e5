//! `duet serve`'s flags (and their environment variables and defaults),
//! turned into the backend's own options (`server::ServeOptions`).

use crate::server::{LimitOptions, ServeOptions};
use clap::Args;
use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone, Args)]
pub struct ServeArgs {
    /// Address to listen on; anything but loopback needs --token
    #[arg(
        long,
        default_value = "127.0.0.1:8787",
        env = "DUET_LISTEN",
        help_heading = "Network"
    )]
    pub listen: SocketAddr,
    /// Where rooms, messages and workspaces are kept
    /// (default: $XDG_DATA_HOME/duet)
    #[arg(long, env = "DUET_DATA_DIR", help_heading = "Storage")]
    pub data_dir: Option<PathBuf>,
    /// Require this bearer token on every request but /health
    #[arg(
        long,
        env = "DUET_TOKEN",
        hide_env_values = true,
        help_heading = "Network"
    )]
    pub token: Option<String>,
    /// An origin (`https://host[:port]`) whose web pages may call the API;
    /// every other request carrying `Origin` (a browser) is refused
    #[arg(
        long,
        env = "DUET_ALLOW_ORIGIN",
        value_delimiter = ',',
        help_heading = "Network"
    )]
    pub allow_origin: Vec<String>,
    /// A host name this server answers besides 127.0.0.1, localhost and
    /// [::1] when it listens on loopback (others get 421)
    #[arg(
        long,
        env = "DUET_PUBLIC_HOST",
        value_delimiter = ',',
        help_heading = "Network"
    )]
    pub public_host: Vec<String>,
    /// Where each port's preview gets an origin of its own:
    /// `[http[s]://]HOST[:PORT]`, a port's preview being
    /// `{port}-{room}.HOST` (default on loopback: localhost at the server's
    /// port; elsewhere none, and browsers cannot open previews)
    #[arg(long, env = "DUET_PREVIEW_HOST")]
    pub preview_host: Option<String>,
    /// Default wall-clock timeout of a command, in milliseconds
    #[arg(
        long,
        default_value_t = 60_000,
        env = "DUET_EXEC_TIMEOUT_MS",
        help_heading = "Sandbox"
    )]
    pub exec_timeout_ms: u64,
    /// Largest timeout a request may ask for, in milliseconds
    #[arg(
        long,
        default_value_t = 600_000,
        env = "DUET_MAX_EXEC_TIMEOUT_MS",
        help_heading = "Sandbox"
    )]
    pub max_exec_timeout_ms: u64,
    /// Output captured per stream of a command, in bytes
    #[arg(long, default_value_t = 1024 * 1024, env = "DUET_OUTPUT_CAP", help_heading = "Sandbox")]
    pub output_cap: usize,
    /// Unload a room after this many seconds without connections, commands
    /// or turns (its history and files stay; it loads again on use)
    #[arg(
        long,
        default_value_t = 300,
        env = "DUET_ROOM_IDLE_SECS",
        help_heading = "Storage"
    )]
    pub room_idle_secs: u64,
    /// Stop a room's sandbox after this many idle seconds (its files stay)
    #[arg(
        long,
        default_value_t = 600,
        env = "DUET_SANDBOX_IDLE_SECS",
        help_heading = "Sandbox"
    )]
    pub sandbox_idle_secs: u64,
    /// End a room's shared terminal after this many seconds with nobody
    /// attached and no output
    #[arg(
        long,
        default_value_t = 3600,
        env = "DUET_TERMINAL_IDLE_SECS",
        help_heading = "Sandbox"
    )]
    pub terminal_idle_secs: u64,
    /// Automatic checkpoints (one before each agent turn that runs
    /// commands) a room keeps; 0 takes none
    #[arg(long, default_value_t = crate::protocol::DEFAULT_AUTO_CHECKPOINTS, env = "DUET_AUTO_CHECKPOINTS", help_heading = "Storage")]
    pub auto_checkpoints: usize,
    /// Seconds an agent's command waits for approval (policy `ask`)
    /// before it is refused
    #[arg(long, default_value_t = crate::protocol::DEFAULT_APPROVAL_TIMEOUT_SECS, env = "DUET_APPROVAL_TIMEOUT_SECS", help_heading = "Agent")]
    pub approval_timeout_secs: u64,
    /// Commands that never ask under the policy `ask`, comma-separated
    /// ("ls,cat,git status"); a command matches by its first words and only
    /// when it holds none of ; & | < > $ ` ( ) or a newline
    #[arg(
        long,
        default_value = "",
        env = "DUET_APPROVAL_ALLOW",
        help_heading = "Agent"
    )]
    pub approval_allow: String,
    /// Seconds a socket ticket (`POST /api/rooms/{room}/ticket`, what a
    /// browser opens the room's socket with) may be used
    #[arg(
        long,
        default_value_t = 60,
        env = "DUET_TICKET_SECS",
        help_heading = "Network"
    )]
    pub ticket_secs: u64,
    /// Memory of a room, in MiB (a cgroup limit where the host allows one)
    #[arg(
        long,
        default_value_t = 512,
        env = "DUET_MEMORY_MB",
        help_heading = "Sandbox"
    )]
    pub memory_mb: u64,
    /// Processes of a room
    #[arg(
        long,
        default_value_t = 256,
        env = "DUET_PROCESSES",
        help_heading = "Sandbox"
    )]
    pub processes: u64,
    /// CPU seconds a process of a room may use
    #[arg(
        long,
        default_value_t = 600,
        env = "DUET_CPU_SECS",
        help_heading = "Sandbox"
    )]
    pub cpu_secs: u64,
    /// Disk of a room, in MiB: its workspace and checkpoints together (a
    /// quota as root, else the largest file, and checkpoints are counted)
    #[arg(
        long,
        default_value_t = 1024,
        env = "DUET_DISK_MB",
        help_heading = "Sandbox"
    )]
    pub disk_mb: u64,
    /// Open files per process of a room
    #[arg(
        long,
        default_value_t = 1024,
        env = "DUET_OPEN_FILES",
        help_heading = "Sandbox"
    )]
    pub open_files: u64,
    /// Size of a room's /tmp, in MiB
    #[arg(
        long,
        default_value_t = 256,
        env = "DUET_TMP_MB",
        help_heading = "Sandbox"
    )]
    pub tmp_mb: u64,
    /// Network of the sandboxes: `none` (only their own loopback) or `nat`
    /// (outside hosts through pasta, never the host's loopback services)
    #[arg(long, value_enum, default_value_t = crate::sandbox::Network::None, env = "DUET_SANDBOX_NETWORK", help_heading = "Sandbox")]
    pub sandbox_network: crate::sandbox::Network,
    /// Base URL of an OpenAI-compatible chat API (default: Ollama on loopback)
    #[arg(long, env = "DUET_AI_URL", help_heading = "Agent")]
    pub ai_url: Option<String>,
    /// Model name
    #[arg(long, env = "DUET_AI_MODEL", help_heading = "Agent")]
    pub ai_model: Option<String>,
    /// API key of the model's service
    #[arg(
        long,
        env = "DUET_AI_KEY",
        hide_env_values = true,
        help_heading = "Agent"
    )]
    pub ai_key: Option<String>,
    /// Rounds of commands the agent may run in one turn
    #[arg(
        long,
        default_value_t = 1,
        env = "DUET_AGENT_STEPS",
        help_heading = "Agent"
    )]
    pub agent_steps: u32,
    /// Seconds one answer of the model may take
    #[arg(
        long,
        default_value_t = 120,
        env = "DUET_AI_TIMEOUT_SECS",
        help_heading = "Agent"
    )]
    pub ai_timeout_secs: u64,
    /// Offer the model the `run` tool: auto (offered; tags if the model
    /// refuses tools), on, or off (tags only)
    #[arg(long, value_enum, default_value_t = crate::ai::ToolMode::Auto, env = "DUET_AI_TOOLS", help_heading = "Agent")]
    pub ai_tools: crate::ai::ToolMode,
    /// Bytes of /workspace/AGENTS.md the agent is sent each turn
    #[arg(long, default_value_t = crate::ai::DEFAULT_AGENTS_MD_BYTES, env = "DUET_AGENTS_MD_BYTES", help_heading = "Agent")]
    pub agents_md_bytes: usize,
    #[command(flatten)]
    pub limits: LimitArgs,
}

/// What one socket and one room may ask for (0: no limit); over a rate
/// the answer is 429 with Retry-After, over a cap 503.
#[derive(Debug, Clone, Args)]
#[command(next_help_heading = "Limits")]
pub struct LimitArgs {
    /// Frames one socket may send per second
    #[arg(long, default_value_t = 100, env = "DUET_SOCKET_FRAMES_PER_SEC")]
    pub socket_frames_per_sec: u64,
    /// Bytes one socket may send per second
    #[arg(long, default_value_t = 1 << 20, env = "DUET_SOCKET_BYTES_PER_SEC")]
    pub socket_bytes_per_sec: u64,
    /// Messages one socket may send per minute
    #[arg(long, default_value_t = 30, env = "DUET_SOCKET_MESSAGES_PER_MIN")]
    pub socket_messages_per_min: u64,
    /// Commands one socket may run per minute
    #[arg(long, default_value_t = 120, env = "DUET_SOCKET_COMMANDS_PER_MIN")]
    pub socket_commands_per_min: u64,
    /// Messages a room may store per minute (HTTP and sockets)
    #[arg(long, default_value_t = 120, env = "DUET_ROOM_MESSAGES_PER_MIN")]
    pub room_messages_per_min: u64,
    /// Commands people may run in a room per minute (not the agent's)
    #[arg(long, default_value_t = 600, env = "DUET_ROOM_COMMANDS_PER_MIN")]
    pub room_commands_per_min: u64,
    /// Sockets one room may have
    #[arg(long, default_value_t = 256, env = "DUET_MAX_ROOM_SOCKETS")]
    pub max_room_sockets: usize,
    /// Sockets the server may have
    #[arg(long, default_value_t = 4096, env = "DUET_MAX_SOCKETS")]
    pub max_sockets: usize,
    /// Background processes that may run at once in one room
    #[arg(long, default_value_t = crate::protocol::DEFAULT_MAX_PROCESSES, env = "DUET_MAX_PROCESSES")]
    pub max_processes: usize,
    /// Bytes a port tunnel's client may send per second (read more slowly beyond)
    #[arg(long, default_value_t = 64 * 1024 * 1024, env = "DUET_TUNNEL_BYTES_PER_SEC")]
    pub tunnel_bytes_per_sec: u64,
}

impl From<ServeArgs> for ServeOptions {
    fn from(a: ServeArgs) -> Self {
        ServeOptions {
            listen: a.listen,
            data_dir: a.data_dir,
            token: a.token,
            allow_origin: a.allow_origin,
            public_host: a.public_host,
            preview_host: a.preview_host,
            exec_timeout_ms: a.exec_timeout_ms,
            max_exec_timeout_ms: a.max_exec_timeout_ms,
            output_cap: a.output_cap,
            room_idle_secs: a.room_idle_secs,
            sandbox_idle_secs: a.sandbox_idle_secs,
            terminal_idle_secs: a.terminal_idle_secs,
            auto_checkpoints: a.auto_checkpoints,
            approval_timeout_secs: a.approval_timeout_secs,
            ticket_secs: a.ticket_secs,
            approval_allow: a.approval_allow,
            memory_mb: a.memory_mb,
            processes: a.processes,
            cpu_secs: a.cpu_secs,
            disk_mb: a.disk_mb,
            open_files: a.open_files,
            tmp_mb: a.tmp_mb,
            sandbox_network: a.sandbox_network,
            ai_url: a.ai_url,
            ai_model: a.ai_model,
            ai_key: a.ai_key,
            agent_steps: a.agent_steps,
            ai_timeout_secs: a.ai_timeout_secs,
            ai_tools: a.ai_tools,
            agents_md_bytes: a.agents_md_bytes,
            limits: LimitOptions::from(a.limits),
            embedded_config: None,
        }
    }
}

impl From<LimitArgs> for LimitOptions {
    fn from(a: LimitArgs) -> Self {
        LimitOptions {
            socket_frames_per_sec: a.socket_frames_per_sec,
            socket_bytes_per_sec: a.socket_bytes_per_sec,
            socket_messages_per_min: a.socket_messages_per_min,
            socket_commands_per_min: a.socket_commands_per_min,
            room_messages_per_min: a.room_messages_per_min,
            room_commands_per_min: a.room_commands_per_min,
            max_room_sockets: a.max_room_sockets,
            max_sockets: a.max_sockets,
            max_processes: a.max_processes,
            tunnel_bytes_per_sec: a.tunnel_bytes_per_sec,
        }
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Serve {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn the_no_model_advice_names_what_works_where() {
        let mut args = ServeOptions::from(Serve::try_parse_from(["duet-serve"]).unwrap().serve);
        let serve = args.ai_config().setup.no_model_text();
        assert!(
            serve.contains("--ai-url, --ai-model and --ai-key (or DUET_AI_URL"),
            "{serve}"
        );
        // Plain duet's embedded backend has no --ai-* flags.
        args.embedded_config = Some("/home/ada/.config/duet/duet.toml".into());
        let embedded = args.ai_config().setup.no_model_text();
        assert!(
            embedded.contains(
                "set DUET_AI_URL, DUET_AI_MODEL and DUET_AI_KEY before starting duet, \
                 or ai_url, ai_model and ai_key in /home/ada/.config/duet/duet.toml"
            ),
            "{embedded}"
        );
        assert!(!embedded.contains("--ai-"), "{embedded}");
    }
}
