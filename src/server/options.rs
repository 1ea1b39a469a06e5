//! What `duet serve` (and plain `duet`'s embedded backend) starts with:
//! plain options, which the command line fills from its flags
//! (`cli::serve`), so that the backend owns its settings and the command
//! line sits above it.

use std::net::SocketAddr;
use std::path::PathBuf;

#[derive(Debug, Clone)]
pub struct ServeOptions {
    /// Address to listen on; anything but loopback needs --token
    pub listen: SocketAddr,
    /// Where rooms, messages and workspaces are kept
    /// (default: $XDG_DATA_HOME/duet)
    pub data_dir: Option<PathBuf>,
    /// Require this bearer token on every request but /health
    pub token: Option<String>,
    /// An origin (`https://host[:port]`) whose web pages may call the API;
    /// every other request carrying `Origin` (a browser) is refused
    pub allow_origin: Vec<String>,
    /// A host name this server answers besides 127.0.0.1, localhost and
    /// [::1] when it listens on loopback (others get 421)
    pub public_host: Vec<String>,
    /// Where each port's preview gets an origin of its own:
    /// `[http[s]://]HOST[:PORT]`, a port's preview being
    /// `{port}-{room}.HOST` (default on loopback: localhost at the server's
    /// port; elsewhere none, and browsers cannot open previews)
    pub preview_host: Option<String>,
    /// Default wall-clock timeout of a command, in milliseconds
    pub exec_timeout_ms: u64,
    /// Largest timeout a request may ask for, in milliseconds
    pub max_exec_timeout_ms: u64,
    /// Output captured per stream of a command, in bytes
    pub output_cap: usize,
    /// Unload a room after this many seconds without connections, commands
    /// or turns (its history and files stay; it loads again on use)
    pub room_idle_secs: u64,
    /// Stop a room's sandbox after this many idle seconds (its files stay)
    pub sandbox_idle_secs: u64,
    /// End a room's shared terminal after this many seconds with nobody
    /// attached and no output
    pub terminal_idle_secs: u64,
    /// Automatic checkpoints (one before each agent turn that runs
    /// commands) a room keeps; 0 takes none
    pub auto_checkpoints: usize,
    /// Seconds an agent's command waits for approval (policy `ask`)
    /// before it is refused
    pub approval_timeout_secs: u64,
    /// Commands that never ask under the policy `ask`, comma-separated
    /// ("ls,cat,git status"); a command matches by its first words and only
    /// when it holds none of ; & | < > $ ` ( ) or a newline
    pub approval_allow: String,
    /// Seconds a socket ticket (`POST …/ticket`, for browsers) may be used
    pub ticket_secs: u64,
    /// Memory of a room, in MiB (a cgroup limit where the host allows one)
    pub memory_mb: u64,
    /// Processes of a room
    pub processes: u64,
    /// CPU seconds a process of a room may use
    pub cpu_secs: u64,
    /// Disk of a room, in MiB: its workspace and checkpoints together (a
    /// quota as root, else the largest file, and checkpoints are counted)
    pub disk_mb: u64,
    /// Open files per process of a room
    pub open_files: u64,
    /// Size of a room's /tmp, in MiB
    pub tmp_mb: u64,
    /// Network of the sandboxes: `none` (only their own loopback) or `nat`
    /// (outside hosts through pasta, never the host's loopback services)
    pub sandbox_network: crate::sandbox::Network,
    /// Base URL of an OpenAI-compatible chat API (default: Ollama on loopback)
    pub ai_url: Option<String>,
    /// Model name
    pub ai_model: Option<String>,
    /// API key of the model's service
    pub ai_key: Option<String>,
    /// Rounds of commands the agent may run in one turn
    pub agent_steps: u32,
    /// Seconds one answer of the model may take
    pub ai_timeout_secs: u64,
    /// Offer the model the `run` tool: auto (offered; tags if the model
    /// refuses tools), on, or off (tags only)
    pub ai_tools: crate::ai::ToolMode,
    /// Bytes of /workspace/AGENTS.md the agent is sent each turn
    pub agents_md_bytes: usize,
    pub limits: LimitOptions,
    /// Set for plain `duet`'s embedded backend, which has no --ai-*
    /// flags: the config file it reads the model from, which the room's
    /// advice names when no model is configured.
    pub embedded_config: Option<String>,
}

/// What one socket and one room may ask for (0: no limit); over a rate
/// the answer is 429 with Retry-After, over a cap 503.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LimitOptions {
    /// Frames one socket may send per second
    pub socket_frames_per_sec: u64,
    /// Bytes one socket may send per second
    pub socket_bytes_per_sec: u64,
    /// Messages one socket may send per minute
    pub socket_messages_per_min: u64,
    /// Commands one socket may run per minute
    pub socket_commands_per_min: u64,
    /// Messages a room may store per minute (HTTP and sockets)
    pub room_messages_per_min: u64,
    /// Commands people may run in a room per minute (not the agent's)
    pub room_commands_per_min: u64,
    /// Sockets one room may have
    pub max_room_sockets: usize,
    /// Sockets the server may have
    pub max_sockets: usize,
    /// Background processes that may run at once in one room
    pub max_processes: usize,
    /// Bytes a port tunnel's client may send per second (read more slowly beyond)
    pub tunnel_bytes_per_sec: u64,
}

impl ServeOptions {
    /// The per-command policy these options ask for.
    pub fn policy(&self) -> crate::sandbox::Policy {
        use std::time::Duration;
        crate::sandbox::Policy {
            default_timeout: Duration::from_millis(self.exec_timeout_ms),
            max_timeout: Duration::from_millis(self.max_exec_timeout_ms.max(self.exec_timeout_ms)),
            output_cap: self.output_cap,
        }
    }

    /// The limits of the local sandboxes these options ask for.
    #[cfg(all(target_os = "linux", feature = "server"))]
    pub fn limits(&self) -> crate::sandbox::local::Limits {
        use std::time::Duration;
        crate::sandbox::local::Limits {
            idle_stop: Duration::from_secs(self.sandbox_idle_secs),
            memory_bytes: self.memory_mb << 20,
            processes: self.processes,
            cpu_seconds: self.cpu_secs,
            file_size: self.disk_mb << 20,
            open_files: self.open_files,
            tmp_bytes: self.tmp_mb << 20,
            disk_bytes: self.disk_mb << 20,
            network: self.sandbox_network,
        }
    }

    /// The agent's settings.
    #[cfg(feature = "server")]
    pub fn ai_config(&self) -> crate::ai::AiConfig {
        crate::ai::AiConfig {
            tools: self.ai_tools,
            agents_md_bytes: Some(self.agents_md_bytes),
            url: self.ai_url.clone(),
            model: self.ai_model.clone(),
            key: self.ai_key.clone(),
            steps: self.agent_steps.max(1),
            timeout: std::time::Duration::from_secs(self.ai_timeout_secs),
            setup: match &self.embedded_config {
                Some(file) => crate::ai::ModelSetup::embedded(file),
                None => crate::ai::ModelSetup::serve(),
            },
            ..Default::default()
        }
    }
}
