//! What a person builds up in a room's shell, and the one command that
//! checks all of it is still there (after an interrupt, a timeout, a cancel).

/// Defines a function, an alias, a plain and an exported variable, sets
/// options and the umask, and moves to `/workspace/sub`.
pub const SHELL_STATE: &str = "mkdir -p sub && cd sub && myfn() { echo fn-ok; }; \
    alias hi='echo alias-ok'; plain=kept; export EXPORTED=also; \
    set -o pipefail -o noclobber; shopt -s extglob; umask 027";

/// Prints what `SHELL_STATE` made.
pub const CHECK_STATE: &str = "myfn; hi; echo \"$plain $EXPORTED\"; \
    [[ -o pipefail && -o noclobber ]] && echo pipefail; shopt -q extglob && echo extglob; umask; pwd";

/// What `CHECK_STATE` prints while the state is all there.
pub const STATE_KEPT: &str =
    "fn-ok\nalias-ok\nkept also\npipefail\nextglob\n0027\n/workspace/sub\n";
