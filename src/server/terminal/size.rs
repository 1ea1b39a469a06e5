//! The terminal's size under the "smallest" rule (docs/protocol.md "The
//! shared terminal"): as narrow and as short as the attached sockets that
//! gave a size; unchanged when none does.

use crate::protocol::TermSize;
use std::collections::BTreeMap;

/// The attached sockets, by connection, and the sizes they gave.
#[derive(Debug, Default)]
pub(super) struct Viewers {
    sizes: BTreeMap<u64, Option<TermSize>>,
}

impl Viewers {
    pub(super) fn attach(&mut self, conn: u64, size: Option<TermSize>) {
        // Re-attaching without a size keeps the size given before.
        let kept = self.sizes.get(&conn).copied().flatten();
        self.sizes.insert(conn, size.or(kept));
    }

    /// False when `conn` was not attached.
    pub(super) fn detach(&mut self, conn: u64) -> bool {
        self.sizes.remove(&conn).is_some()
    }

    /// False when `conn` is not attached.
    pub(super) fn resize(&mut self, conn: u64, size: TermSize) -> bool {
        match self.sizes.get_mut(&conn) {
            Some(slot) => {
                *slot = Some(size);
                true
            }
            None => false,
        }
    }

    /// `conn` watches on but its size no longer counts (it became a
    /// viewer); false when it was not attached or gave none.
    pub(super) fn forget_size(&mut self, conn: u64) -> bool {
        self.sizes
            .get_mut(&conn)
            .is_some_and(|slot| slot.take().is_some())
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// The terminal's size: the smallest of those given, else `current`.
    pub(super) fn size(&self, current: TermSize) -> TermSize {
        let given = self.sizes.values().flatten();
        let cols = given.clone().map(|s| s.cols).min();
        let rows = given.map(|s| s.rows).min();
        match (cols, rows) {
            (Some(cols), Some(rows)) => TermSize { cols, rows },
            _ => current,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(cols: u16, rows: u16) -> TermSize {
        TermSize { cols, rows }
    }

    #[test]
    fn the_smallest_window_in_each_direction_wins() {
        let mut v = Viewers::default();
        let start = size(80, 24);
        assert_eq!(v.size(start), start, "nobody attached: unchanged");
        v.attach(1, Some(size(120, 40)));
        assert_eq!(v.size(start), size(120, 40));
        v.attach(2, Some(size(100, 50)));
        assert_eq!(v.size(start), size(100, 40));
        v.attach(3, None);
        assert_eq!(v.size(start), size(100, 40), "no size: not counted");
        assert!(v.resize(1, size(90, 45)));
        assert_eq!(v.size(start), size(90, 45));
        assert!(v.detach(1));
        assert_eq!(v.size(start), size(100, 50));
        assert!(!v.detach(1));
        assert!(!v.resize(7, size(10, 10)));
        v.detach(2);
        assert_eq!(v.size(size(100, 50)), size(100, 50), "only sizeless left");
    }

    #[test]
    fn a_forgotten_size_stops_counting_and_stays_forgotten() {
        let mut v = Viewers::default();
        v.attach(1, Some(size(120, 40)));
        v.attach(2, Some(size(60, 20)));
        assert!(v.forget_size(2));
        assert_eq!(v.size(size(80, 24)), size(120, 40));
        assert!(!v.forget_size(2), "no size left to forget");
        assert!(!v.forget_size(9), "not attached");
        v.attach(2, None);
        assert_eq!(v.size(size(80, 24)), size(120, 40), "still forgotten");
    }

    #[test]
    fn attaching_again_without_a_size_keeps_the_one_given() {
        let mut v = Viewers::default();
        v.attach(1, Some(size(70, 20)));
        v.attach(1, None);
        assert_eq!(v.size(size(80, 24)), size(70, 20));
    }
}
