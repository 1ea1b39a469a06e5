//! The command line: which part of Duet runs, with which settings.

use clap::parser::ValueSource;
use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Debug, Parser)]
#[command(
    name = "duet",
    version,
    about = "Pair programming in the terminal: a shared room with an AI agent and a sandbox"
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Option<Command>,
    /// Where `duet` (no subcommand) joins: flags, then environment, then
    /// `duet.toml` in the XDG config directory.
    #[command(flatten)]
    pub client: ClientArgs,
    /// Data directory of the embedded backend started (or joined) when no
    /// --server is given (default: $XDG_DATA_HOME/duet)
    #[arg(long, env = "DUET_DATA_DIR", global = true)]
    pub data_dir: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Host rooms for a team over HTTP and WebSocket
    Serve(Box<ServeArgs>),
    /// Run a command in a room's sandbox; exits with its exit code
    /// (124 when it timed out, 130 when interrupted)
    Exec(ExecArgs),
    /// Clean a room up: clear its history and destroy its sandbox
    Cleanup(ClientArgs),
    /// Attach this terminal to the room's shared terminal (a shell in its
    /// sandbox that everyone in the room sees and types into), full
    /// screen; Ctrl+] detaches, the shell runs on
    Term(ClientArgs),
    /// Copy a file into or out of the room's workspace:
    /// `duet cp LOCAL :PATH` or `duet cp :PATH LOCAL` (`-` is stdin/stdout)
    Cp(CpArgs),
    /// Ask the room's agent; prints the reply as it streams, then the
    /// outputs of its commands; exits non-zero if the turn failed
    Ask(AskArgs),
    /// Join a room by its link, as the status bar of the room's `duet`
    /// shows it: `duet join [https://][TOKEN@]HOST[:PORT]/ROOM`
    Join(JoinArgs),
    /// List the room's background processes and the ports something
    /// listens on in its sandbox, with the URL to open each
    Ps(PsArgs),
    /// Start a background process in the room's sandbox (in /workspace;
    /// it outlives this command); prints its id
    Bg(BgArgs),
    /// Print a background process's log (its last 64 KiB of stdout and of
    /// stderr); with -f, follow it until it ends, then exit with its exit
    /// code (143 when it was killed, 1 when unknown)
    Logs(LogsArgs),
    /// Stop a background process (SIGTERM, then SIGKILL after 2 s)
    Kill(KillArgs),
    /// List a folder of the room's workspace (default: /workspace):
    /// type, size, modified, name (folders end with /)
    Ls(LsArgs),
    /// Delete files of the room's workspace (a folder only with -r)
    Rm(RmArgs),
    /// Write the room's whole history: markdown (who said and ran what),
    /// the protocol's JSON, or an asciicast v2 recording of its commands
    /// (`asciinema play FILE`)
    Export(ExportArgs),
    /// Take a checkpoint: a copy of the room's /workspace now, to restore
    /// later (`duet restore NAME`)
    Checkpoint(CheckpointArgs),
    /// List the room's checkpoints (people's and the automatic ones taken
    /// before each agent turn that runs commands)
    Checkpoints(CheckpointsArgs),
    /// Restore a checkpoint: /workspace becomes that copy again; running
    /// commands, background processes and the shared terminal stop first
    Restore(RestoreArgs),
    /// Undo the agent's last turn that ran commands: restores the newest
    /// automatic checkpoint (as `duet restore` does)
    Undo(ClientArgs),
    /// Start a new room from this room's /workspace (or a checkpoint of
    /// it), with an empty history
    Fork(ForkArgs),
    /// Invite someone into the room with a role (viewer, writer, owner):
    /// prints the command they join with; --list shows the room's
    /// invites, --revoke ID ends one (its people are disconnected)
    Invite(InviteArgs),
    /// Show the room's approval policy for the agent's commands (and
    /// those waiting), or set it: auto (they run), ask (each waits for a
    /// writer or owner), off (none runs)
    Policy(PolicyArgs),
    /// Approve an agent's command waiting for a person (its id: `duet
    /// policy` lists them)
    Approve(ApproveArgs),
    /// Deny an agent's command waiting for a person: it does not run
    Deny(ApproveArgs),
    /// Reach a port of the room's sandbox from this machine: listens on
    /// 127.0.0.1:LOCAL and carries each connection to PORT in the sandbox
    /// (any protocol) until Ctrl+C
    Port(PortArgs),
    /// Print the completion script of a shell: e.g. `duet completions
    /// bash > ~/.local/share/bash-completion/completions/duet`
    Completions {
        /// bash, zsh, fish, powershell or elvish
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff): `duet man | man -l -`, or save it as
    /// duet.1 in a man directory
    Man,
    /// Internal: builds one room's sandbox (started by the server)
    #[command(hide = true)]
    SandboxInit,
}

/// Where a client finds its room; flags beat the environment. The flags
/// are global: `duet --room R ps` and `duet ps --room R` are the same (the
/// one after the subcommand wins when both are given).
#[derive(Debug, Clone, Args)]
pub struct ClientArgs {
    /// Backend URL, e.g. http://127.0.0.1:8787
    #[arg(long, env = "DUET_SERVER", global = true)]
    pub server: Option<String>,
    /// Room id (1–63 of A-Z a-z 0-9 _ -)
    #[arg(long, env = "DUET_ROOM", global = true)]
    pub room: Option<String>,
    /// Bearer token, when the backend has one
    #[arg(long, env = "DUET_TOKEN", hide_env_values = true, global = true)]
    pub token: Option<String>,
    /// Your name in the room
    #[arg(long, env = "DUET_NAME", global = true)]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct JoinArgs {
    /// The room's link: [https://][TOKEN@]HOST[:PORT]/ROOM
    pub link: String,
    /// Your name in the room
    #[arg(long, env = "DUET_NAME")]
    pub name: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct ExecArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Wall-clock timeout in milliseconds (capped by the server)
    #[arg(long)]
    pub timeout_ms: Option<u64>,
    /// Working directory for this command only
    #[arg(long)]
    pub cwd: Option<String>,
    /// Send a command that needs a terminal (`top`, `vim`, `python3` with
    /// no script) anyway, instead of pointing to `duet term`
    #[arg(long)]
    pub no_tty_check: bool,
    /// The command and its arguments, after `--`
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct AskArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The question
    #[arg(required = true, trailing_var_arg = true)]
    pub question: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CpArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Where from: a local file, `-`, or `:PATH` in the workspace
    pub from: String,
    /// Where to: a local file or folder, `-`, or `:PATH` in the workspace
    pub to: String,
}

#[derive(Debug, Clone, Args)]
pub struct PsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print `{processes, ports}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct BgArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Its name in the room (default: the program's name); `--name` is
    /// yours, as for every client command
    #[arg(short = 'n', long = "process-name", value_name = "NAME")]
    pub process_name: Option<String>,
    /// The command and its arguments, after `--`
    #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
    pub cmd: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct LogsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The process: its id (`p1`), or its name when only one has it
    pub process: String,
    /// Follow its output live until it ends
    #[arg(short, long)]
    pub follow: bool,
}

#[derive(Debug, Clone, Args)]
pub struct KillArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The process: its id (`p1`), or its name when only one has it
    pub process: String,
}

#[derive(Debug, Clone, Args)]
pub struct LsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The folder, relative to /workspace (or inside it)
    pub dir: Option<String>,
    /// Print `{entries}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct ExportArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// md, json or cast (default: from the file's name, else md)
    #[arg(long, value_enum)]
    pub format: Option<crate::client::export::Format>,
    /// Write to this file instead of stdout
    #[arg(short, long)]
    pub output: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct RmArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Delete folders too, with everything in them
    #[arg(short, long)]
    pub recursive: bool,
    /// The files (or folders), relative to /workspace (or inside it)
    #[arg(required = true)]
    pub paths: Vec<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckpointArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Its name: 1–64 of A-Z a-z 0-9 . _ -, the first a letter or digit
    /// (default: checkpoint-N); `--name` is yours, as for every client
    /// command
    #[arg(value_name = "NAME")]
    pub checkpoint: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct CheckpointsArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// Print `{checkpoints}` as JSON instead
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Clone, Args)]
pub struct RestoreArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The checkpoint: its name, or its id (`c3`)
    pub checkpoint: String,
}

#[derive(Debug, Clone, Args)]
pub struct ForkArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The new room's id (it must not exist yet)
    #[arg(value_name = "ROOM")]
    pub to: String,
    /// Start it from this checkpoint (its name or id) instead of the
    /// workspace as it is now
    #[arg(long, value_name = "NAME|ID")]
    pub from: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct InviteArgs {
    /// Backend URL, e.g. http://127.0.0.1:8787
    #[arg(long, env = "DUET_SERVER")]
    pub server: Option<String>,
    /// Room id (1–63 of A-Z a-z 0-9 _ -)
    #[arg(long, env = "DUET_ROOM")]
    pub room: Option<String>,
    /// Bearer token: the server's (an owner's everywhere) or an owner's
    /// invite
    #[arg(long, env = "DUET_TOKEN", hide_env_values = true)]
    pub token: Option<String>,
    /// Your name in the room, as the invite's maker (`--name` after
    /// `invite` is the invited person's; `duet --name NAME invite` is yours)
    #[arg(long = "by", id = "name", env = "DUET_NAME", value_name = "NAME")]
    pub by: Option<String>,
    /// What they may do: viewer (watch and chat), writer (also ask the
    /// agent, run commands), owner (everything)
    #[arg(long, value_parser = parse_role, required_unless_present_any = ["list", "revoke"])]
    pub role: Option<crate::protocol::RoomRole>,
    /// How long it lasts: 90s, 30m, 24h, 7d, or seconds (default: 24h)
    #[arg(long, value_name = "TIME", value_parser = crate::client::access::parse_expires)]
    pub expires: Option<u64>,
    /// Fixes the name of whoever joins with it (records and approvals
    /// then name them truly)
    #[arg(long = "name", id = "invitee", value_name = "NAME")]
    pub name: Option<String>,
    /// List the room's invites (id, role, name, expiry) instead
    #[arg(long, conflicts_with_all = ["role", "expires", "invitee", "revoke"])]
    pub list: bool,
    /// With --list: print `{invites}` as JSON
    #[arg(long, requires = "list")]
    pub json: bool,
    /// Revoke invite ID: its token stops working, its people are
    /// disconnected
    #[arg(long, value_name = "ID", conflicts_with_all = ["role", "expires", "invitee"])]
    pub revoke: Option<String>,
}

impl InviteArgs {
    /// Where the client finds its room, and as whom.
    pub fn client(&self) -> ClientArgs {
        ClientArgs {
            server: self.server.clone(),
            room: self.room.clone(),
            token: self.token.clone(),
            name: self.by.clone(),
        }
    }
}

/// A role as written on the command line.
fn parse_role(text: &str) -> Result<crate::protocol::RoomRole, String> {
    crate::protocol::RoomRole::parse(text)
        .ok_or_else(|| format!("{text:?} is not a role: viewer, writer or owner"))
}

#[derive(Debug, Clone, Args)]
pub struct PolicyArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The new policy: auto, ask or off (absent: shows it)
    #[arg(value_parser = parse_policy)]
    pub policy: Option<crate::protocol::Policy>,
    /// The room's own commands that never ask, comma-separated
    /// ("ls,cat,git status"; "" empties it); needs a policy
    #[arg(long, value_name = "LIST", requires = "policy")]
    pub allow: Option<String>,
}

/// A policy as written on the command line.
fn parse_policy(text: &str) -> Result<crate::protocol::Policy, String> {
    crate::protocol::Policy::parse(text)
        .ok_or_else(|| format!("{text:?} is not a policy: auto, ask or off"))
}

#[derive(Debug, Clone, Args)]
pub struct ApproveArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The waiting command's id (`a1`; `duet policy` lists them)
    #[arg(value_name = "ID")]
    pub approval: String,
}

#[derive(Debug, Clone, Args)]
pub struct PortArgs {
    #[command(flatten)]
    pub client: ClientArgs,
    /// The port inside the sandbox (1–65535)
    #[arg(value_parser = clap::value_parser!(u16).range(1..))]
    pub port: u16,
    /// The port to listen on here, on 127.0.0.1 (default: PORT; 0 picks a
    /// free one and prints it)
    #[arg(long)]
    pub local: Option<u16>,
}

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
    /// Set by plain `duet` for its embedded backend, which has no --ai-*
    /// flags: the config file it reads the model from, which the room's
    /// advice names when no model is configured.
    #[arg(skip)]
    pub embedded_config: Option<String>,
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

impl ServeArgs {
    /// The per-command policy these flags ask for.
    pub fn policy(&self) -> crate::sandbox::Policy {
        use std::time::Duration;
        crate::sandbox::Policy {
            default_timeout: Duration::from_millis(self.exec_timeout_ms),
            max_timeout: Duration::from_millis(self.max_exec_timeout_ms.max(self.exec_timeout_ms)),
            output_cap: self.output_cap,
        }
    }

    /// The limits of the local sandboxes these flags ask for.
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

/// This machine's offset from UTC, read once while the process has one
/// thread (the time crate refuses later); UTC when it cannot be read.
static LOCAL_OFFSET: std::sync::OnceLock<time::UtcOffset> = std::sync::OnceLock::new();

/// The data directory the command line names (`--data-dir`, before or
/// after the subcommand, else `DUET_DATA_DIR`), set once after parsing.
static DATA_DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();

/// The data directory the command line names, if it was parsed and names
/// one (see [`DATA_DIR`]).
pub fn data_dir() -> Option<PathBuf> {
    DATA_DIR.get().cloned().flatten()
}

/// The local offset times are shown in (see [`LOCAL_OFFSET`]).
pub fn local_offset() -> time::UtcOffset {
    *LOCAL_OFFSET.get_or_init(|| time::UtcOffset::UTC)
}

/// Parses the command line and runs what it names.
pub fn main() -> ExitCode {
    LOCAL_OFFSET
        .get_or_init(|| time::UtcOffset::current_local_offset().unwrap_or(time::UtcOffset::UTC));
    let cli = parse();
    DATA_DIR.get_or_init(|| cli.data_dir.clone());
    match cli.command {
        Some(Command::SandboxInit) => crate::sandbox::helper_main(),
        Some(Command::Completions { shell }) => crate::manual::completions(shell),
        Some(Command::Man) => crate::manual::man(),
        Some(Command::Join(args)) => crate::tui::start::join(args, cli.data_dir),
        Some(command) => run_async(command),
        None => crate::tui::start::main(cli.client, cli.data_dir),
    }
}

/// The global flags a subcommand cannot use, and why: given on the command
/// line (before or after it), they are refused rather than ignored.
const NOT_FOR: &[(&str, &[&str], &str)] = &[
    (
        "completions",
        &["server", "room", "token", "name", "data_dir"],
        "it prints a script and joins no room",
    ),
    (
        "man",
        &["server", "room", "token", "name", "data_dir"],
        "it prints the manual and joins no room",
    ),
    (
        "serve",
        &["server", "room", "name"],
        "`duet serve` hosts rooms and joins none",
    ),
    (
        "join",
        &["server", "room", "token"],
        "the link names the server, the room and the token",
    ),
];

/// The whole command line as clap sees it (help, completions, the manual).
/// The flags of [`NOT_FOR`] are hidden placeholders in their subcommands,
/// so that the global ones are neither shown nor silently taken there.
pub fn command() -> clap::Command {
    let mut command = Cli::command();
    for (sub, ids, _) in NOT_FOR {
        command = command.mut_subcommand(sub, |mut sub| {
            for id in *ids {
                sub = sub.arg(clap::Arg::new(*id).long(flag(id)).hide(true));
            }
            sub
        });
    }
    command
}

/// The long flag of a global argument's id (`data_dir`: `data-dir`).
fn flag(id: &'static str) -> &'static str {
    match id {
        "data_dir" => "data-dir",
        other => other,
    }
}

/// Parses `args`: the global flags count before or after the subcommand;
/// one the subcommand cannot use is an error.
pub fn try_parse_from<I, T>(args: I) -> Result<Cli, clap::Error>
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let mut command = command();
    let matches = command.try_get_matches_from_mut(args)?;
    if let Some((name, sub)) = matches.subcommand()
        && let Some((_, ids, why)) = NOT_FOR.iter().find(|(n, _, _)| *n == name)
        && let Some(id) = ids
            .iter()
            .find(|id| sub.value_source(id) == Some(ValueSource::CommandLine))
    {
        let message = format!("--{} does not apply to `duet {name}`: {why}", flag(id));
        let kind = clap::error::ErrorKind::ArgumentConflict;
        return Err(match command.find_subcommand_mut(name) {
            Some(sub) => sub.error(kind, message),
            None => command.error(kind, message),
        });
    }
    Cli::from_arg_matches(&matches).map_err(|err| err.format(&mut command))
}

/// Parses this process's command line; exits with clap's message (and
/// code 2) when it is wrong.
fn parse() -> Cli {
    try_parse_from(std::env::args_os()).unwrap_or_else(|err| err.exit())
}

/// The multi-threaded runtime every async part of `duet` runs on; its
/// worker threads live as long as the process, which the sandboxes'
/// parent-death signal relies on.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime, ExitCode> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|err| {
            eprintln!("duet: cannot start the async runtime: {err}");
            ExitCode::FAILURE
        })
}

fn run_async(command: Command) -> ExitCode {
    let runtime = match runtime() {
        Ok(rt) => rt,
        Err(code) => return code,
    };
    let result = runtime.block_on(async move {
        match command {
            Command::Serve(args) => crate::server::serve(*args).await.map(|_| ExitCode::SUCCESS),
            Command::Exec(args) => crate::client::commands::exec(args).await,
            Command::Cleanup(args) => crate::client::commands::cleanup(args).await,
            Command::Term(args) => crate::client::term::attach::term(args).await,
            Command::Cp(args) => crate::client::cp::cp(args).await,
            Command::Ask(args) => crate::ai::ask::ask(args).await,
            Command::Ps(args) => crate::client::ps::ps(args).await,
            Command::Bg(args) => crate::client::ps::bg(args).await,
            Command::Logs(args) => crate::client::ps::logs(args).await,
            Command::Kill(args) => crate::client::ps::kill(args).await,
            Command::Port(args) => crate::client::tunnel::port(args).await,
            Command::Ls(args) => crate::client::ls::ls(args).await,
            Command::Export(args) => crate::client::export::run(args).await,
            Command::Rm(args) => crate::client::ls::rm(args).await,
            Command::Checkpoint(args) => crate::client::undo::checkpoint(args).await,
            Command::Checkpoints(args) => crate::client::undo::list(args).await,
            Command::Restore(args) => crate::client::undo::restore(args).await,
            Command::Undo(args) => crate::client::undo::undo(args).await,
            Command::Fork(args) => crate::client::undo::fork(args).await,
            Command::Invite(args) => crate::client::invite::invite(args).await,
            Command::Policy(args) => crate::client::invite::policy(args).await,
            Command::Approve(args) => crate::client::invite::decide(args, true).await,
            Command::Deny(args) => crate::client::invite::decide(args, false).await,
            Command::SandboxInit
            | Command::Join(_)
            | Command::Completions { .. }
            | Command::Man => Ok(ExitCode::FAILURE),
        }
    });
    match result {
        Ok(code) => code,
        Err(err) => {
            eprintln!("duet: {err:#}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(all(test, feature = "server"))]
mod tests {
    use super::*;

    #[derive(Debug, Parser)]
    struct Serve {
        #[command(flatten)]
        serve: ServeArgs,
    }

    #[test]
    fn the_command_line_is_well_formed() {
        command().debug_assert();
        let cli = try_parse_from([
            "duet",
            "bg",
            "--name",
            "ada",
            "-n",
            "web",
            "--",
            "python3",
            "-m",
            "http.server",
        ])
        .unwrap();
        let Some(Command::Bg(bg)) = cli.command else {
            panic!("bg parses")
        };
        assert_eq!(bg.client.name.as_deref(), Some("ada"));
        assert_eq!(bg.process_name.as_deref(), Some("web"));
        assert_eq!(bg.cmd, ["python3", "-m", "http.server"]);
        assert!(
            try_parse_from(["duet", "port", "0"]).is_err(),
            "ports are 1–65535"
        );
        let cli = try_parse_from(["duet", "checkpoint", "--name", "ada", "before"]).unwrap();
        let Some(Command::Checkpoint(checkpoint)) = cli.command else {
            panic!("checkpoint parses")
        };
        assert_eq!(checkpoint.client.name.as_deref(), Some("ada"));
        assert_eq!(checkpoint.checkpoint.as_deref(), Some("before"));
        let cli = try_parse_from([
            "duet",
            "invite",
            "--role",
            "viewer",
            "--expires",
            "30m",
            "--name",
            "bob",
        ])
        .unwrap();
        let Some(Command::Invite(invite)) = cli.command else {
            panic!("invite parses")
        };
        assert_eq!(invite.role, Some(crate::protocol::RoomRole::Viewer));
        assert_eq!(invite.expires, Some(1_800));
        assert_eq!(invite.name.as_deref(), Some("bob"));
        for bad in [
            &["duet", "invite"][..],
            &["duet", "invite", "--role", "boss"],
            &["duet", "invite", "--role", "viewer", "--expires", "1w"],
            &["duet", "invite", "--list", "--role", "viewer"],
            &["duet", "policy", "maybe"],
        ] {
            let err = try_parse_from(bad).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{bad:?}");
        }
        assert!(try_parse_from(["duet", "invite", "--list"]).is_ok());
        assert!(try_parse_from(["duet", "invite", "--revoke", "i1"]).is_ok());
        let cli = try_parse_from(["duet", "rm", "-r", "a", "b"]).unwrap();
        assert!(
            matches!(cli.command, Some(Command::Rm(rm)) if rm.recursive && rm.paths == ["a", "b"])
        );
    }

    #[test]
    fn the_no_model_advice_names_what_works_where() {
        let mut args = Serve::try_parse_from(["duet-serve"]).unwrap().serve;
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
