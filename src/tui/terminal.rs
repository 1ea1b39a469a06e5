//! The terminal guard: puts the terminal in the UI's modes (or, for `duet
//! term`, only raw mode and the alternate screen) and restores it exactly
//! once, whatever happens (normal exit, error, panic, SIGTERM or SIGHUP
//! through [`StopSignals`]); gives the terminal back for a while on Ctrl+Z;
//! names the room in the terminal's title and gives the old one back.

use crossterm::event::{
    DisableBracketedPaste, DisableFocusChange, DisableMouseCapture, EnableBracketedPaste,
    EnableFocusChange, EnableMouseCapture, KeyboardEnhancementFlags, PopKeyboardEnhancementFlags,
    PushKeyboardEnhancementFlags,
};
use crossterm::terminal::{
    EnterAlternateScreen, LeaveAlternateScreen, disable_raw_mode, enable_raw_mode,
};
use std::sync::Once;
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether the terminal is in the UI's modes (and must be restored).
static ACTIVE: AtomicBool = AtomicBool::new(false);
/// Whether keyboard enhancement flags were pushed.
static KEYBOARD_FLAGS: AtomicBool = AtomicBool::new(false);
/// The panic hook that restores the terminal is installed once.
static PANIC_HOOK: Once = Once::new();
/// Turns off the key and mouse modes a program in the shared terminal may
/// have had mirrored (`duet term`): application cursor keys and keypad,
/// X10 mouse, UTF-8 mouse coordinates.
const KEY_MODES_OFF: &str = "\x1b[?1l\x1b>\x1b[?9l\x1b[?1005l";
/// Whether the title was saved (XTWINOPS 22) and must be given back (23).
static TITLE_SAVED: AtomicBool = AtomicBool::new(false);
/// The title the UI shows, set again after a suspend.
static TITLE: std::sync::Mutex<String> = std::sync::Mutex::new(String::new());
/// The terminal's stderr, saved while stderr goes to the log file (-1: not
/// redirected).
static SAVED_STDERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Puts the terminal in the UI's modes; dropping it (or a panic) undoes
/// raw mode, the alternate screen, mouse capture, bracketed paste, focus
/// reporting and keyboard flags, exactly once.
#[derive(Debug)]
pub struct TerminalGuard {
    /// Where stderr goes while the modes last.
    stderr_log: Option<std::path::PathBuf>,
    /// The UI's modes (`enter`), not only raw mode (`enter_raw`).
    full: bool,
}

impl TerminalGuard {
    /// Enters the UI's modes; while they last, anything written to stderr
    /// (by this process or the sandboxes it starts) goes to `stderr_log`
    /// instead of over the UI.
    pub fn enter(stderr_log: Option<&std::path::Path>) -> std::io::Result<TerminalGuard> {
        let mut guard = TerminalGuard::enter_raw(stderr_log)?;
        guard.full = true;
        enter_ui_modes()?;
        Ok(guard)
    }

    /// Ctrl+Z: gives the terminal back as it was and stops this process
    /// group, as the shell's job control expects; after `fg`, enters the
    /// modes again (the caller redraws the whole screen).
    #[cfg(unix)]
    pub fn suspend(&self) -> std::io::Result<()> {
        restore();
        // SAFETY: kill(2) on this process's own group; SIGTSTP's default
        // action stops it until SIGCONT (the shell's `fg`).
        unsafe { libc::kill(0, libc::SIGTSTP) };
        let title = TITLE.lock().map(|t| t.clone()).unwrap_or_default();
        enter_raw_modes(self.stderr_log.as_deref())?;
        if self.full {
            enter_ui_modes()?;
        }
        if !title.is_empty() {
            set_title(&title);
        }
        Ok(())
    }

    /// Raw mode and the alternate screen only: `duet term` passes the
    /// person's keys on as bytes and turns on only the modes the program
    /// in the shared terminal asks for (which `restore` turns off).
    pub fn enter_raw(stderr_log: Option<&std::path::Path>) -> std::io::Result<TerminalGuard> {
        // The guard exists before the modes, so a failure half-way restores.
        let guard = TerminalGuard {
            stderr_log: stderr_log.map(std::path::Path::to_path_buf),
            full: false,
        };
        enter_raw_modes(stderr_log)?;
        Ok(guard)
    }
}

/// Mouse capture, bracketed paste, focus reporting and (where the terminal
/// has them) keyboard flags: what the UI adds to raw mode.
fn enter_ui_modes() -> std::io::Result<()> {
    let mut out = std::io::stdout();
    crossterm::execute!(
        out,
        EnableMouseCapture,
        EnableBracketedPaste,
        EnableFocusChange
    )?;
    if crossterm::terminal::supports_keyboard_enhancement().unwrap_or(false) {
        crossterm::execute!(
            out,
            PushKeyboardEnhancementFlags(KeyboardEnhancementFlags::DISAMBIGUATE_ESCAPE_CODES)
        )?;
        KEYBOARD_FLAGS.store(true, Ordering::SeqCst);
    }
    Ok(())
}

/// Raw mode, stderr to `stderr_log`, the alternate screen; `restore`
/// undoes them (and the panic hook calls it).
fn enter_raw_modes(stderr_log: Option<&std::path::Path>) -> std::io::Result<()> {
    PANIC_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            restore();
            previous(info);
        }));
    });
    enable_raw_mode()?;
    ACTIVE.store(true, Ordering::SeqCst);
    if let Some(path) = stderr_log {
        redirect_stderr(path);
    }
    crossterm::execute!(std::io::stdout(), EnterAlternateScreen)
}

/// Names the room in the terminal's title (`duet: pairing`), saving the
/// title it had first (XTWINOPS 22) for `restore` to give back (23).
pub fn set_title(title: &str) {
    use std::io::Write;
    // Control characters would end the sequence early.
    let title: String = title.chars().filter(|c| !c.is_control()).collect();
    let mut out = std::io::stdout();
    if !TITLE_SAVED.swap(true, Ordering::SeqCst) {
        let _ = out.write_all(b"\x1b[22;0t");
    }
    let _ = write!(out, "\x1b]0;{title}\x07");
    let _ = out.flush();
    if let Ok(mut kept) = TITLE.lock() {
        *kept = title;
    }
}

/// Whether a terminal event is Ctrl+Z, which suspends the UI.
pub fn is_suspend(event: &crossterm::event::Event) -> bool {
    use crossterm::event::{Event, KeyCode, KeyEventKind, KeyModifiers};
    matches!(
        event,
        Event::Key(key) if key.kind == KeyEventKind::Press
            && key.code == KeyCode::Char('z')
            && key.modifiers == KeyModifiers::CONTROL
    )
}

/// SIGTERM and SIGHUP, caught so that the UI ends through its guard (which
/// restores the terminal) instead of dying in the alternate screen.
pub struct StopSignals {
    #[cfg(unix)]
    term: tokio::signal::unix::Signal,
    #[cfg(unix)]
    hup: tokio::signal::unix::Signal,
}

impl StopSignals {
    /// Catches them from now on (in a tokio runtime).
    pub fn catch() -> std::io::Result<StopSignals> {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            Ok(StopSignals {
                term: signal(SignalKind::terminate())?,
                hup: signal(SignalKind::hangup())?,
            })
        }
        #[cfg(not(unix))]
        Ok(StopSignals {})
    }

    /// The name of the next one to arrive.
    pub async fn next(&mut self) -> &'static str {
        #[cfg(unix)]
        {
            tokio::select! {
                _ = self.term.recv() => "SIGTERM",
                _ = self.hup.recv() => "SIGHUP",
            }
        }
        #[cfg(not(unix))]
        std::future::pending().await
    }
}

impl Drop for TerminalGuard {
    fn drop(&mut self) {
        restore();
    }
}

/// Leaves the UI's modes if they are on; safe to call any number of times.
pub fn restore() {
    if !ACTIVE.swap(false, Ordering::SeqCst) {
        return;
    }
    let mut out = std::io::stdout();
    if KEYBOARD_FLAGS.swap(false, Ordering::SeqCst) {
        let _ = crossterm::execute!(out, PopKeyboardEnhancementFlags);
    }
    let _ = crossterm::execute!(
        out,
        DisableFocusChange,
        DisableBracketedPaste,
        DisableMouseCapture,
        crossterm::style::Print(KEY_MODES_OFF),
        LeaveAlternateScreen,
        crossterm::cursor::Show
    );
    if TITLE_SAVED.swap(false, Ordering::SeqCst) {
        let _ = crossterm::execute!(out, crossterm::style::Print("\x1b[23;0t"));
    }
    let _ = disable_raw_mode();
    restore_stderr();
}

/// Points fd 2 at `path`, keeping the terminal's for `restore_stderr`.
#[cfg(unix)]
fn redirect_stderr(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let Ok(file) = crate::client::log_file::open_private(path) else {
        return;
    };
    // SAFETY: dup/dup2 on descriptors this process owns; `file` stays open
    // until after dup2 made fd 2 its copy.
    unsafe {
        let saved = libc::dup(2);
        if saved < 0 {
            return;
        }
        if libc::dup2(file.as_raw_fd(), 2) < 0 {
            libc::close(saved);
            return;
        }
        SAVED_STDERR.store(saved, Ordering::SeqCst);
    }
}

#[cfg(not(unix))]
fn redirect_stderr(_path: &std::path::Path) {}

/// Gives fd 2 back to the terminal (once).
fn restore_stderr() {
    let saved = SAVED_STDERR.swap(-1, Ordering::SeqCst);
    #[cfg(unix)]
    if saved >= 0 {
        // SAFETY: `saved` is the descriptor dup'ed in redirect_stderr.
        unsafe {
            libc::dup2(saved, 2);
            libc::close(saved);
        }
    }
    #[cfg(not(unix))]
    let _ = saved;
}

/// Turns mouse capture on or off (off lets the terminal select text).
pub fn set_mouse(on: bool) {
    let mut out = std::io::stdout();
    let _ = if on {
        crossterm::execute!(out, EnableMouseCapture)
    } else {
        crossterm::execute!(out, DisableMouseCapture)
    };
}
