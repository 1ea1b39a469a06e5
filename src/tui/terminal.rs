//! The terminal guard: puts the terminal in the UI's modes (or, for `duet
//! term`, only raw mode and the alternate screen) and restores it exactly
//! once, whatever happens (normal exit, error, panic).

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
/// The terminal's stderr, saved while stderr goes to the log file (-1: not
/// redirected).
static SAVED_STDERR: std::sync::atomic::AtomicI32 = std::sync::atomic::AtomicI32::new(-1);

/// Puts the terminal in the UI's modes; dropping it (or a panic) undoes
/// raw mode, the alternate screen, mouse capture, bracketed paste, focus
/// reporting and keyboard flags, exactly once.
#[derive(Debug)]
pub struct TerminalGuard(());

impl TerminalGuard {
    /// Enters the UI's modes; while they last, anything written to stderr
    /// (by this process or the sandboxes it starts) goes to `stderr_log`
    /// instead of over the UI.
    pub fn enter(stderr_log: Option<&std::path::Path>) -> std::io::Result<TerminalGuard> {
        let guard = TerminalGuard::enter_raw(stderr_log)?;
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
        Ok(guard)
    }

    /// Raw mode and the alternate screen only: `duet term` passes the
    /// person's keys on as bytes and turns on only the modes the program
    /// in the shared terminal asks for (which `restore` turns off).
    pub fn enter_raw(stderr_log: Option<&std::path::Path>) -> std::io::Result<TerminalGuard> {
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
        let guard = TerminalGuard(());
        crossterm::execute!(std::io::stdout(), EnterAlternateScreen)?;
        Ok(guard)
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
    let _ = disable_raw_mode();
    restore_stderr();
}

/// Points fd 2 at `path`, keeping the terminal's for `restore_stderr`.
#[cfg(unix)]
fn redirect_stderr(path: &std::path::Path) {
    use std::os::fd::AsRawFd;
    let Ok(file) = std::fs::File::options()
        .create(true)
        .append(true)
        .open(path)
    else {
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
