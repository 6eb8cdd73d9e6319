//! A run's operations, one track per lane, and what draws them at a given zoom.
//!
//! The timeline stays responsive with hundreds of thousands of operations because each frame only
//! touches what it draws: a lane's operations are kept in start order with the running maximum of
//! their end times, so the visible ones are found by two binary searches ([`Track::visible`]), and
//! operations narrower than a pixel are merged per pixel column ([`blocks`]), found by one more
//! binary search per column and summed by kind from prefix sums. That bounds both the rectangles
//! drawn per lane (about twice the plot's width in pixels) and the work per frame, whatever the
//! zoom and however many operations the run has. Touching narrow blocks of one colour are painted
//! as one rectangle ([`runs`]).

use clustersim::exec::{Graph, OpKind, Timeline};
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};

/// One lane's operations in start order, in seconds, ready to draw.
#[derive(Clone, Debug, Default)]
pub struct Track {
    pub label: String,
    pub starts: Vec<f64>,
    pub ends: Vec<f64>,
    /// `ends[..=i]`'s maximum: never decreasing, so it can be binary searched even if a lane's
    /// operations overlapped (in-order lanes never do, but nothing here relies on it).
    reach: Vec<f64>,
    /// The graph's op id of each operation.
    pub ops: Vec<u32>,
    /// Seconds of each kind in `ops[..i]`, so a merged block's make-up costs O(1).
    busy_prefix: Vec<[f64; 3]>,
}

impl Track {
    /// A track from `(op id, start s, end s, kind)` in any order.
    pub fn new(label: impl Into<String>, mut ops: Vec<(u32, f64, f64, OpKind)>) -> Track {
        if !ops.is_sorted_by(|a, b| a.1 <= b.1) {
            ops.sort_by(|a, b| a.1.total_cmp(&b.1));
        }
        let mut reach = Vec::with_capacity(ops.len());
        let mut max = f64::NEG_INFINITY;
        for &(_, _, end, _) in &ops {
            max = max.max(end);
            reach.push(max);
        }
        let mut busy_prefix = Vec::with_capacity(ops.len() + 1);
        let mut acc = [0.0; 3];
        busy_prefix.push(acc);
        for &(_, start, end, kind) in &ops {
            acc[kind_index(kind)] += end - start;
            busy_prefix.push(acc);
        }
        Track {
            label: label.into(),
            busy_prefix,
            starts: ops.iter().map(|o| o.1).collect(),
            ends: ops.iter().map(|o| o.2).collect(),
            reach,
            ops: ops.iter().map(|o| o.0).collect(),
        }
    }

    /// Seconds of each kind (indexed by [`kind_index`]) in the operations `range`.
    pub fn busy(&self, range: Range<usize>) -> [f64; 3] {
        let (a, b) = (self.busy_prefix[range.start], self.busy_prefix[range.end]);
        [b[0] - a[0], b[1] - a[1], b[2] - a[2]]
    }

    /// Indices of the operations that may intersect `[t0, t1]`: every one that does, plus (only
    /// when operations overlap) some that end before `t0`.
    pub fn visible(&self, t0: f64, t1: f64) -> Range<usize> {
        let lo = self.reach.partition_point(|&r| r < t0);
        let hi = self.starts.partition_point(|&s| s <= t1);
        lo..hi.max(lo)
    }
}

/// Every lane of a run, and how long the run took.
#[derive(Clone, Debug, Default)]
pub struct Tracks {
    /// Unique per build, so drawings cached from one run are never shown for another.
    pub id: u64,
    pub tracks: Vec<Track>,
    /// End of the last operation, in seconds.
    pub makespan: f64,
    pub ops: usize,
}

impl Tracks {
    /// Sorts a run's operations into per-lane tracks (done on the worker thread).
    pub fn build(graph: &Graph, timeline: &Timeline) -> Tracks {
        let tracks = graph
            .lanes
            .iter()
            .zip(&graph.lane_ops)
            .map(|(lane, ops)| {
                let label = if lane.group.is_empty() {
                    lane.name.clone()
                } else {
                    format!("{} · {}", lane.group, lane.name)
                };
                let ops = ops
                    .iter()
                    .map(|&op| {
                        let i = op as usize;
                        (
                            op,
                            timeline.start[i].as_secs_f64(),
                            timeline.end[i].as_secs_f64(),
                            graph.ops[i].kind,
                        )
                    })
                    .collect();
                Track::new(label, ops)
            })
            .collect();
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        Tracks {
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            tracks,
            makespan: timeline.makespan().as_secs_f64(),
            ops: graph.len(),
        }
    }
}

/// What one rectangle on screen stands for: one operation, or several narrower than a pixel
/// that fall in the same pixel column.
#[derive(Clone, Debug, PartialEq)]
pub struct Block {
    /// Pixels from the plot's left edge (clamped to just outside it).
    pub x0: f32,
    pub x1: f32,
    /// The track indices `first..first + count`.
    pub first: usize,
    pub count: usize,
    /// Seconds of each kind inside, indexed by [`kind_index`].
    pub busy: [f64; 3],
}

impl Block {
    /// The kind that takes most of the block's time (the block's colour).
    pub fn kind(&self) -> OpKind {
        let mut best = 0;
        for k in 1..3 {
            if self.busy[k] > self.busy[best] {
                best = k;
            }
        }
        KINDS[best]
    }

    /// The drawn extent: at least one pixel wide.
    pub fn drawn(&self) -> (f32, f32) {
        (self.x0, self.x1.max(self.x0 + 1.0))
    }
}

pub const KINDS: [OpKind; 3] = [OpKind::Compute, OpKind::Communication, OpKind::Memory];

pub fn kind_index(kind: OpKind) -> usize {
    match kind {
        OpKind::Compute => 0,
        OpKind::Communication => 1,
        OpKind::Memory => 2,
    }
}

/// The rectangles that draw `track` when `[t0, t1]` fills `width` pixels: operations at least a
/// pixel wide each get their own, narrower ones are merged with the others starting in the same
/// pixel column. Blocks come out in drawing order, left to right, and the work is proportional to
/// the number of blocks (times a logarithm), not to the number of operations in view.
pub fn blocks(track: &Track, t0: f64, t1: f64, width: f32) -> Vec<Block> {
    let span = t1 - t0;
    if span.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) || width <= 0.0 {
        return Vec::new();
    }
    let px_per_s = f64::from(width) / span;
    let to_px = |t: f64| ((t - t0) * px_per_s).clamp(-2.0, f64::from(width) + 2.0) as f32;
    let visible = track.visible(t0, t1);
    let hi = visible.end;
    let mut out = Vec::new();
    let mut i = visible.start;
    while i < hi {
        let (s, e) = (track.starts[i], track.ends[i]);
        if e < t0 || s > t1 {
            i += 1;
            continue;
        }
        let (x0, x1) = (to_px(s), to_px(e));
        if x1 - x0 >= 1.0 {
            out.push(Block {
                x0,
                x1,
                first: i,
                count: 1,
                busy: track.busy(i..i + 1),
            });
            i += 1;
            continue;
        }
        // Narrow: take every operation that starts in the same pixel column at once (a binary
        // search, so a column costs the same whether it holds two operations or ten thousand),
        // except a last one that is itself wide, which gets its own block next.
        let column_end = t0 + f64::from(x0.floor() + 1.0) / px_per_s;
        let mut j = i + 1 + track.starts[i + 1..hi].partition_point(|&s| s < column_end);
        if j - 1 > i && to_px(track.ends[j - 1]) - to_px(track.starts[j - 1]) >= 1.0 {
            j -= 1;
        }
        out.push(Block {
            x0,
            x1: to_px(track.ends[j - 1].max(e)),
            first: i,
            count: j - i,
            busy: track.busy(i..j),
        });
        i = j;
    }
    out
}

/// A rectangle to paint: pixels from the plot's left edge and the kind that colours it.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Run {
    pub x0: f32,
    pub x1: f32,
    pub kind: OpKind,
}

/// Blocks narrower than [`RUN_MAX_PX`] that touch and share a colour, painted as one rectangle
/// (the second level of detail: a lane of thousands of sub-pixel operations of one kind becomes
/// a handful of rectangles instead of one per pixel column). Wider blocks keep their own, so the
/// gaps between operations one can read stay visible.
pub fn runs(blocks: &[Block]) -> Vec<Run> {
    let mut out: Vec<Run> = Vec::new();
    let mut last_narrow = false;
    for b in blocks {
        let (x0, x1) = b.drawn();
        let kind = b.kind();
        let narrow = x1 - x0 < RUN_MAX_PX;
        if narrow
            && last_narrow
            && let Some(r) = out.last_mut()
            && r.kind == kind
            && x0 <= r.x1 + 0.5
        {
            r.x1 = r.x1.max(x1);
            continue;
        }
        out.push(Run { x0, x1, kind });
        last_narrow = narrow;
    }
    out
}

/// Blocks at least this wide are painted on their own (see [`runs`]).
pub const RUN_MAX_PX: f32 = 3.0;

#[cfg(test)]
mod tests {
    use super::*;

    /// A lane of back-to-back operations of the given durations, kinds cycling.
    fn lane(durations: &[f64]) -> Track {
        let mut t = 0.0;
        let ops = durations
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let op = (i as u32, t, t + d, KINDS[i % 3]);
                t += d;
                op
            })
            .collect();
        Track::new("GPU 0 · compute", ops)
    }

    #[test]
    fn visible_range_finds_exactly_the_operations_that_intersect() {
        let track = lane(&[1.0; 10]); // ops i spans [i, i+1]
        assert_eq!(track.visible(2.5, 4.5), 2..5);
        assert_eq!(track.visible(-5.0, -1.0), 0..0);
        assert_eq!(track.visible(20.0, 30.0), 10..10);
        assert_eq!(track.visible(0.0, 10.0), 0..10);
        // An op ending exactly at t0 touches the range; one starting exactly at t1 does too.
        assert_eq!(track.visible(3.0, 3.0), 2..4);
    }

    #[test]
    fn visible_range_handles_overlapping_operations() {
        // A long op [0, 10] and short ones after it: all intersect [5, 6] only through the long one.
        let track = Track::new(
            "x",
            vec![
                (0, 0.0, 10.0, OpKind::Compute),
                (1, 1.0, 2.0, OpKind::Memory),
                (2, 7.0, 8.0, OpKind::Memory),
            ],
        );
        let r = track.visible(5.0, 6.0);
        assert!(r.contains(&0));
        let b = blocks(&track, 5.0, 6.0, 100.0);
        // Only the long op is drawn; the short op ending at 2 is skipped.
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].first, 0);
    }

    #[test]
    fn tracks_sort_out_of_order_input() {
        let track = Track::new(
            "x",
            vec![
                (7, 2.0, 3.0, OpKind::Compute),
                (3, 0.0, 1.0, OpKind::Memory),
            ],
        );
        assert_eq!(track.ops, [3, 7]);
        assert_eq!(track.starts, [0.0, 2.0]);
    }

    #[test]
    fn wide_operations_get_one_block_each() {
        let track = lane(&[1.0; 4]);
        let b = blocks(&track, 0.0, 4.0, 400.0);
        assert_eq!(b.len(), 4);
        assert_eq!((b[1].x0, b[1].x1, b[1].count), (100.0, 200.0, 1));
        assert_eq!(b[1].kind(), OpKind::Communication);
    }

    #[test]
    fn narrow_operations_merge_per_pixel_column() {
        // 1000 ops of 1 ms in 1 s over 100 px: 10 ops per pixel.
        let track = lane(&[1e-3; 1000]);
        let b = blocks(&track, 0.0, 1.0, 100.0);
        assert!((99..=102).contains(&b.len()), "{} blocks", b.len());
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 1000);
        // Blocks cover consecutive op ranges, in order.
        let mut next = 0;
        for block in &b {
            assert_eq!(block.first, next);
            next += block.count;
            // Merged blocks stay within about a pixel (one column plus the last op's width).
            assert!(block.x1 - block.x0 < 2.0);
        }
        // The merged block's colour is its dominant kind.
        let total: f64 = b[0].busy.iter().sum();
        assert!((total - b[0].count as f64 * 1e-3).abs() < 1e-12);
    }

    #[test]
    fn a_wide_operation_between_narrow_ones_stays_separate() {
        let track = lane(&[0.001, 0.001, 0.5, 0.001]);
        let b = blocks(&track, 0.0, 0.503, 503.0 / 10.0);
        let counts: Vec<_> = b.iter().map(|b| b.count).collect();
        assert_eq!(counts, [2, 1, 1]);
        assert_eq!(b[1].kind(), OpKind::Memory);
    }

    #[test]
    fn a_million_ops_cost_about_as_much_as_the_pixels() {
        // Mixed widths: mostly tiny, some long enough to be drawn on their own.
        let durations: Vec<f64> = (0..1_000_000)
            .map(|i| if i % 997 == 0 { 20e-3 } else { 5e-6 })
            .collect();
        let track = lane(&durations);
        let end = *track.ends.last().unwrap();
        let width = 1200.0;
        let started = std::time::Instant::now();
        let b = blocks(&track, 0.0, end, width);
        let elapsed = started.elapsed();
        assert!(b.len() <= 2 * width as usize + 4, "{} blocks", b.len());
        // Every operation is accounted for exactly once, with its time.
        assert_eq!(b.iter().map(|b| b.count).sum::<usize>(), 1_000_000);
        let busy: f64 = b.iter().flat_map(|b| b.busy).sum();
        assert!((busy - end).abs() < 1e-9 * end, "{busy} vs {end}");
        // Zoomed in, only the visible handful are visited.
        let b = blocks(&track, end / 2.0, end / 2.0 + 1e-4, width);
        assert!(b.len() < 30, "{} blocks", b.len());
        // Far under a frame even unoptimised: the work follows the blocks, not the million ops.
        assert!(elapsed.as_millis() < 20, "{elapsed:?}");
    }

    #[test]
    fn touching_narrow_blocks_of_one_kind_paint_as_one_run() {
        // 10,000 compute operations of 1 µs back to back over 10 ms on 100 px: one run.
        let ops = (0..10_000u32)
            .map(|i| {
                (
                    i,
                    f64::from(i) * 1e-6,
                    f64::from(i + 1) * 1e-6,
                    OpKind::Compute,
                )
            })
            .collect();
        let t = Track::new("GPU 0 · compute", ops);
        let b = blocks(&t, 0.0, 10e-3, 100.0);
        assert!(b.len() >= 99, "{}", b.len());
        let r = runs(&b);
        assert_eq!(r.len(), 1, "{r:?}");
        assert_eq!(r[0].kind, OpKind::Compute);
        assert!(r[0].x0 <= 0.0 && r[0].x1 >= 99.0, "{r:?}");
        // Wide operations keep their own rectangles.
        let t = lane(&[1.0, 1.0, 1.0]);
        assert_eq!(runs(&blocks(&t, 0.0, 3.0, 300.0)).len(), 3);
    }

    #[test]
    fn a_merged_block_knows_its_make_up() {
        // Ten 1 ms ops per pixel, kinds cycling compute, communication, memory.
        let track = lane(&[1e-3; 30]);
        let b = blocks(&track, 0.0, 0.03, 3.0);
        assert_eq!(b.len(), 3);
        // Ops 0..10: compute 0,3,6,9 (4 ms), communication 1,4,7 (3 ms), memory 2,5,8 (3 ms).
        let [c, n, m] = b[0].busy;
        assert!((c - 4e-3).abs() < 1e-12 && (n - 3e-3).abs() < 1e-12 && (m - 3e-3).abs() < 1e-12);
        assert_eq!(b[0].kind(), OpKind::Compute);
    }
}
