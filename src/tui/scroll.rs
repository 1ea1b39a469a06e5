//! A pane's scroll state and the two things every pane does with its
//! cells: find the lines in view, and move the view.

use crate::tui::cell::{Cell, RenderCtx};
use ratatui::text::Line;

/// A pane's scroll position: lines up from the bottom (0 follows the
/// latest), and whether new lines arrived below while scrolled up.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Scroll {
    pub offset: usize,
    pub new_below: bool,
}

/// The total height of `cells` at `width`.
pub fn total_height<'a>(
    cells: impl Iterator<Item = &'a dyn Cell>,
    width: u16,
    ctx: &RenderCtx,
) -> usize {
    cells.map(|c| c.height(width, ctx)).sum()
}

impl Scroll {
    /// Whether the view follows the latest line.
    pub fn following(&self) -> bool {
        self.offset == 0
    }

    /// Follows the latest again.
    pub fn follow(&mut self) {
        *self = Scroll::default();
    }

    /// The `height` lines in view, from `cells` newest first, rendering
    /// only the cells they come from.
    pub fn visible_lines<'a>(
        &self,
        cells: impl Iterator<Item = &'a dyn Cell>,
        width: u16,
        height: usize,
        ctx: &RenderCtx,
    ) -> Vec<Line<'static>> {
        let mut skip = self.offset;
        let mut out: Vec<Line<'static>> = Vec::with_capacity(height);
        'cells: for cell in cells {
            let h = cell.height(width, ctx);
            if skip >= h {
                skip -= h;
                continue;
            }
            for line in cell.lines(width, ctx).iter().rev() {
                if skip > 0 {
                    skip -= 1;
                    continue;
                }
                out.push(line.clone());
                if out.len() >= height {
                    break 'cells;
                }
            }
        }
        out.reverse();
        out
    }

    /// Moves the view by `delta` lines (positive: up, towards older),
    /// never past the oldest line of `cells` (newest first). Answers
    /// whether the view wanted to go past it.
    pub fn scroll_by<'a>(
        &mut self,
        delta: isize,
        cells: impl Iterator<Item = &'a dyn Cell>,
        width: u16,
        height: usize,
        ctx: &RenderCtx,
    ) -> bool {
        let want = self.offset.saturating_add_signed(delta);
        // Sum heights from the bottom until the wanted view is covered.
        let mut sum = 0;
        let mut reached = false;
        for cell in cells {
            sum += cell.height(width, ctx);
            if sum >= want + height {
                reached = true;
                break;
            }
        }
        self.offset = if reached {
            want
        } else {
            sum.saturating_sub(height)
        };
        if self.offset == 0 {
            self.new_below = false;
        }
        !reached && delta > 0
    }

    /// The content grew or shrank from `before` to `after` lines while
    /// scrolled up: keep the same lines in view, and note what is new.
    pub fn keep_anchor(&mut self, before: usize, after: usize) {
        if self.following() {
            return;
        }
        if after > before {
            self.offset += after - before;
            self.new_below = true;
        } else {
            self.offset = self.offset.saturating_sub(before - after);
        }
        if self.offset == 0 {
            self.new_below = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tui::cell::Lines;
    use std::rc::Rc;

    /// A cell of `n` lines named `label0…`.
    struct Fixed(&'static str, usize);

    impl Cell for Fixed {
        fn lines(&self, _width: u16, _ctx: &RenderCtx) -> Lines {
            Rc::new(
                (0..self.1)
                    .map(|i| Line::raw(format!("{}{i}", self.0)))
                    .collect(),
            )
        }
    }

    fn ctx() -> RenderCtx {
        RenderCtx {
            theme: crate::tui::theme::Theme::PLAIN,
            tz: time::UtcOffset::UTC,
            now_ms: 0,
        }
    }

    fn cells() -> Vec<Fixed> {
        // Oldest first: a (3 lines), b (2), c (4).
        vec![Fixed("a", 3), Fixed("b", 2), Fixed("c", 4)]
    }

    fn newest_first(cells: &[Fixed]) -> impl Iterator<Item = &dyn Cell> {
        cells.iter().rev().map(|c| c as &dyn Cell)
    }

    fn text(lines: Vec<Line<'static>>) -> Vec<String> {
        lines.into_iter().map(|l| l.to_string()).collect()
    }

    #[test]
    fn the_view_ends_offset_lines_above_the_bottom() {
        let cells = cells();
        let mut scroll = Scroll::default();
        let view = scroll.visible_lines(newest_first(&cells), 10, 3, &ctx());
        assert_eq!(text(view), ["c1", "c2", "c3"]);
        scroll.offset = 4;
        let view = scroll.visible_lines(newest_first(&cells), 10, 3, &ctx());
        assert_eq!(text(view), ["a2", "b0", "b1"]);
    }

    #[test]
    fn scrolling_stops_at_the_top_and_says_it_wanted_more() {
        let cells = cells();
        let mut scroll = Scroll::default();
        assert!(!scroll.scroll_by(2, newest_first(&cells), 10, 3, &ctx()));
        assert_eq!(scroll.offset, 2);
        assert!(scroll.scroll_by(100, newest_first(&cells), 10, 3, &ctx()));
        assert_eq!(scroll.offset, 9 - 3, "the oldest line at the top");
        assert!(!scroll.scroll_by(-100, newest_first(&cells), 10, 3, &ctx()));
        assert!(scroll.following());
    }

    #[test]
    fn a_scrolled_view_keeps_its_lines_when_content_grows() {
        let mut scroll = Scroll {
            offset: 2,
            new_below: false,
        };
        scroll.keep_anchor(9, 12);
        assert_eq!(
            scroll,
            Scroll {
                offset: 5,
                new_below: true
            }
        );
        scroll.keep_anchor(12, 4);
        assert!(scroll.following() && !scroll.new_below);
        let mut following = Scroll::default();
        following.keep_anchor(9, 12);
        assert!(following.following(), "a following view follows");
    }
}
